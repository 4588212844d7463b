#===- _op.py - paged_attention_v2 as a torch custom op ----------------------===#
#
# torch.ops.paged_attn.paged_attention_v2: the decode registered with
# torch.library, so that torch.compile sees one opaque node (fullgraph=True,
# no graph break) and Inductor's CUDA graphs keep it. The schema declares
# what the kernels write (output and the workspace) as mutated. The op's
# arguments are the Python API's, except that k_scale / v_scale (a float or
# a device tensor there) are each split into a float and an optional tensor,
# and vLLM's block-sparse keywords stay in the Python API.
#
# paged_attn.paged_attention_v2 first runs the argument-type rules
# (_checks.check_arg_types: plain Python that torch.compile traces), so a
# wrong type gets this package's message rather than the schema parser's;
# then the op's implementations run every rule (_checks.check_call): the fake
# one on the fake tensors of a trace, the real one before each launch.
#
# In plain eager mode on plain CUDA tensors (`call`, `dispatch_free`) the
# call does what the real implementation does, without the dispatcher: the
# rules after the argument types, which the wrapper has just checked
# (_checks.check_typed), and the launch. Boxing 25 arguments through the
# dispatcher into a Python kernel cost 5.3 us of a 21 us call on the build
# machine (docs/performance.md), and in that mode the dispatcher only routes
# to that kernel (it bumps no version counter for a Python kernel and has
# no autograd formula to attach). Whatever else is active (torch.compile,
# a torch function or dispatch mode such as FakeTensorMode or make_fx, a
# functorch transform, the profiler, torch.jit.trace, a tensor subclass)
# gets the dispatcher.
#
#===------------------------------------------------------------------------===#

import torch

from . import _checks

NAMESPACE = "paged_attn"
NAME = "paged_attention_v2"
QUALNAME = NAMESPACE + "::" + NAME

SCHEMA = (
    NAME + "(Tensor(a!) output, Tensor(b!) exp_sums, Tensor(c!) max_logits, "
    "Tensor(d!) tmp_output, Tensor query, Tensor key_cache, Tensor value_cache, "
    "int num_kv_heads, float scale, Tensor block_tables, Tensor seq_lens, int block_size, "
    "SymInt? max_seq_len, Tensor? alibi_slopes, str kv_cache_dtype, float k_scale, float v_scale, "
    "Tensor? k_scale_tensor, Tensor? v_scale_tensor, int? sliding_window, "
    "float? logits_soft_cap, bool fixed_grid, Tensor? sinks=None, "
    "Tensor? query_start_loc=None, int? max_query_len=None) -> ()")

_lib = None  # the torch.library.Library holding the registration (kept alive)
_launch_checked = None  # the implementation's launch of a checked call (register)


def _mode_probes():
    """The tests of `dispatch_free` that something else is active, or None
    where this torch lacks one of them (then every call is dispatched)."""
    try:
        return (torch.compiler.is_compiling, torch._C._is_torch_function_mode_enabled,
                torch._C._len_torch_dispatch_stack, torch._C._are_functorch_transforms_active,
                torch.autograd._profiler_enabled, torch._C._get_tracing_state)
    except AttributeError:
        return None


def _tensor_positions():
    """SCHEMA's positions of the tensors: (always present, optional)."""
    types = [a.split()[0] for a in SCHEMA[SCHEMA.index("(") + 1:SCHEMA.rindex(") ->")].split(",")]
    return (tuple(i for i, t in enumerate(types) if t.startswith("Tensor") and t[-1] != "?"),
            tuple(i for i, t in enumerate(types) if t == "Tensor?"))


def _plain_types():
    """The tensor types a direct call takes: torch.Tensor, and nn.Parameter
    (learned sinks or ALiBi slopes), which overrides nothing torch runs."""
    nn = getattr(torch, "nn", None)
    return (torch.Tensor,) + ((nn.Parameter,) if nn is not None else ())


_PROBES = _mode_probes()
_TENSORS, _OPTIONAL_TENSORS = _tensor_positions()
_PLAIN = _plain_types()


def register(impl, fake, launch_checked):
    """Defines the op; impl (for every device: it refuses all but CUDA with
    the package's message) and fake (for torch.compile's tracing) take the
    schema's arguments; launch_checked (what impl does after the rules)
    takes a _checks.Call, for `call`. A backend-specific kernel (say a CPU
    reference in a test) registered later for the same op takes precedence
    over impl."""
    global _lib, _launch_checked
    _launch_checked = launch_checked
    _lib = torch.library.Library(NAMESPACE, "DEF")
    _lib.define(SCHEMA)
    _lib.impl(NAME, impl, "CompositeExplicitAutograd")
    torch.library.register_fake(QUALNAME, fake, lib=_lib)


def dispatch_free(args):
    """Whether the op's arguments (SCHEMA order) may skip the dispatcher:
    plain eager mode (module comment) and plain CUDA tensors (_PLAIN)."""
    return plain_eager(args) and args[4].is_cuda


def plain_eager(args):
    """dispatch_free's test of everything but the device."""
    if _PROBES is None:
        return False
    compiling, function_mode, dispatch_modes, functorch, profiling, jit_tracing = _PROBES
    if (compiling() or function_mode() or dispatch_modes() or functorch() or profiling()
            or jit_tracing() is not None):
        return False
    for i in _TENSORS:
        if type(args[i]) not in _PLAIN:
            return False
    for i in _OPTIONAL_TENSORS:
        if args[i] is not None and type(args[i]) not in _PLAIN:
            return False
    return True


def call(a, kv_cache_dtype, no_max_seq_len):
    """The op on the Args of check_arg_types (schema_args' arguments): where
    dispatch_free allows, the rest of the rules (_checks.check_typed) and
    the launch of the implementation registered with `launch_checked`; else
    torch.ops.paged_attn's op, whose implementation runs every rule. A CUDA
    kernel registered later for the op is reached only through
    torch.ops.paged_attn.paged_attention_v2 itself."""
    args = schema_args(a, kv_cache_dtype, no_max_seq_len)
    if dispatch_free(args):
        _launch_checked(_checks.check_typed(a, kv_cache_dtype))
    else:
        torch.ops.paged_attn.paged_attention_v2(*args)


def op_args(output, exp_sums, max_logits, tmp_output, query, key_cache, value_cache,
            num_kv_heads, scale, block_tables, seq_lens, block_size, max_seq_len, alibi_slopes,
            kv_cache_dtype, k_scale, v_scale, kwargs, fixed_grid, sliding_window,
            logits_soft_cap, sinks=None, query_start_loc=None, max_query_len=None):
    """The Python API's arguments, checked for type, as the op's (SCHEMA order)."""
    a = _checks.check_arg_types(output, exp_sums, max_logits, tmp_output, query, key_cache,
                                value_cache, num_kv_heads, scale, block_tables, seq_lens,
                                block_size, max_seq_len, alibi_slopes, kv_cache_dtype, k_scale,
                                v_scale, kwargs, fixed_grid, sliding_window, logits_soft_cap,
                                sinks, query_start_loc, max_query_len)
    return schema_args(a, kv_cache_dtype, fixed_grid and max_seq_len is None)


def schema_args(a, kv_cache_dtype, no_max_seq_len):
    """The op's arguments (SCHEMA order) of check_arg_types' Args: the
    tensors as given, the scalars as checked; max_seq_len None where the
    call gave none (no_max_seq_len: a fixed grid without it)."""
    query, output, key_cache, value_cache, block_tables, seq_lens, exp_sums, max_logits, \
        tmp_output = a.tensors
    return (output, exp_sums, max_logits, tmp_output, query, key_cache, value_cache,
            a.num_kv_heads, a.scale, block_tables, seq_lens, a.block_size,
            None if no_max_seq_len else a.max_seq_len, a.alibi, kv_cache_dtype, a.k_scale,
            a.v_scale, a.k_scale_t, a.v_scale_t, a.window or None, a.soft_cap, a.fixed_grid,
            a.sinks, a.query_start_loc, a.max_query_len or None)


def check(output, exp_sums, max_logits, tmp_output, query, key_cache, value_cache, num_kv_heads,
          scale, block_tables, seq_lens, block_size, max_seq_len, alibi_slopes, kv_cache_dtype,
          k_scale, v_scale, k_scale_tensor, v_scale_tensor, sliding_window, logits_soft_cap,
          fixed_grid, sinks=None, query_start_loc=None, max_query_len=None, fake=False):
    """_checks.check_call on the op's arguments (SCHEMA order)."""
    return _checks.check_call(
        output, exp_sums, max_logits, tmp_output, query, key_cache, value_cache, num_kv_heads,
        scale, block_tables, seq_lens, block_size, max_seq_len, alibi_slopes, kv_cache_dtype,
        k_scale if k_scale_tensor is None else k_scale_tensor,
        v_scale if v_scale_tensor is None else v_scale_tensor, None, fixed_grid,
        sliding_window, logits_soft_cap, sinks, query_start_loc, max_query_len, fake=fake)

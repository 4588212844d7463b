#===- _capi.py - ctypes mirror of pa_runtime.h ------------------------------===#
#
# The C ABI of libpa_runtime.so (runtime/include/pa_runtime/pa_runtime.h),
# mirrored field for field with ctypes, plus the one place that finds and
# loads the library. Nothing here knows torch: the rest of the package turns
# tensors into a DecodeArgs and calls these functions. Keep every struct in
# the header's field order: ctypes then lays it out as the C compiler does.
#
#===------------------------------------------------------------------------===#

import ctypes
import os
import struct
import threading

# pa_status_code
PA_OK = 0
PA_ERROR_INVALID_ARGUMENT = 1
PA_ERROR_UNSUPPORTED = 2
PA_ERROR_CUDA = 3
PA_ERROR_BUNDLE = 4
PA_ERROR_IO = 5
PA_ERROR_CAPTURE = 6
PA_ERROR_BAD_INPUT = 7  # a kernel found a block-table entry or seq_len out of range

STATUS_NAMES = {
    PA_OK: "PA_OK",
    PA_ERROR_INVALID_ARGUMENT: "PA_ERROR_INVALID_ARGUMENT",
    PA_ERROR_UNSUPPORTED: "PA_ERROR_UNSUPPORTED",
    PA_ERROR_CUDA: "PA_ERROR_CUDA",
    PA_ERROR_BUNDLE: "PA_ERROR_BUNDLE",
    PA_ERROR_IO: "PA_ERROR_IO",
    PA_ERROR_CAPTURE: "PA_ERROR_CAPTURE",
    PA_ERROR_BAD_INPUT: "PA_ERROR_BAD_INPUT",
}

# pa_dtype
PA_F16 = 0
PA_BF16 = 1
PA_F32 = 2

DTYPE_NAMES = {PA_F16: "f16", PA_BF16: "bf16", PA_F32: "f32"}

# pa_kv_cache_dtype: the caches' element type. AUTO: the query's dtype; the
# fp8 types hold one byte per element, value = stored * scale.
PA_KV_CACHE_AUTO = 0
PA_KV_CACHE_FP8_E4M3 = 1  # OCP FP8 E4M3FN (vLLM's "fp8", "fp8_e4m3")
PA_KV_CACHE_FP8_E5M2 = 2

KV_CACHE_DTYPE_NAMES = {PA_KV_CACHE_AUTO: "auto", PA_KV_CACHE_FP8_E4M3: "fp8_e4m3",
                        PA_KV_CACHE_FP8_E5M2: "fp8_e5m2"}

CUdeviceptr = ctypes.c_uint64  # unsigned long long on every 64-bit target
CUstream = ctypes.c_void_p
_enum = ctypes.c_int  # C enums with small values are int-sized


class Status(ctypes.Structure):
    """pa_status, returned by value from every entry."""
    _fields_ = [
        ("code", _enum),
        ("driver_error", ctypes.c_char * 64),
        ("message", ctypes.c_char * 1024),
    ]


class DecodeArgs(ctypes.Structure):
    """pa_decode_args: one decode_v2 call."""
    _fields_ = [
        ("dtype", _enum),
        ("tmp_dtype", _enum),
        ("num_seqs", ctypes.c_int32),
        ("num_heads", ctypes.c_int32),
        ("num_kv_heads", ctypes.c_int32),
        ("head_size", ctypes.c_int32),
        ("block_size", ctypes.c_int32),
        ("num_blocks", ctypes.c_int32),
        ("max_blocks_per_seq", ctypes.c_int32),
        ("max_num_partitions", ctypes.c_int32),
        ("partition_size", ctypes.c_int32),
        ("max_seq_len", ctypes.c_int32),
        ("scale", ctypes.c_float),
        ("query", CUdeviceptr),
        ("key_cache", CUdeviceptr),
        ("value_cache", CUdeviceptr),
        ("block_tables", CUdeviceptr),
        ("seq_lens", CUdeviceptr),
        ("output", CUdeviceptr),
        ("exp_sums", CUdeviceptr),
        ("max_logits", CUdeviceptr),
        ("tmp_output", CUdeviceptr),
        ("alibi_slopes", CUdeviceptr),
        ("sliding_window", ctypes.c_int32),
        ("logits_soft_cap", ctypes.c_float),
        # fp8 KV caches: the element type (AUTO: the caches hold dtype), the
        # scales (value = stored * scale) used when their pointer is 0, and
        # the pointers to one f32 on the device read by the kernel at run time.
        ("kv_cache_dtype", _enum),
        ("k_scale", ctypes.c_float),
        ("v_scale", ctypes.c_float),
        ("k_scale_ptr", CUdeviceptr),
        ("v_scale_ptr", CUdeviceptr),
        # Attention sinks: float32 [num_heads] on the device, 0 for none.
        ("sinks", CUdeviceptr),
        # Several query tokens per sequence: int32 [num_seqs + 1] row offsets on
        # the device (0: one token per sequence) and their largest count.
        ("query_start_loc", CUdeviceptr),
        ("max_query_len", ctypes.c_int32),
    ]


def _packer(cls):
    """A struct.Struct that writes cls's fields, in _fields_ order, at the
    offsets ctypes gives them (pad bytes in between): one pack gives the bytes of a
    cls buffer, where setting the fields one by one costs a Python call each."""
    fmt, pos = "=", 0
    for name, ctype in cls._fields_:
        offset, size = getattr(cls, name).offset, ctypes.sizeof(ctype)
        if offset > pos:
            fmt += "%dx" % (offset - pos)
        code = ctype._type_
        if code in "fd":
            fmt += {4: "f", 8: "d"}[size]
        else:
            fmt += {4: "i", 8: "q"}[size] if code.islower() else {4: "I", 8: "Q"}[size]
        pos = offset + size
    if ctypes.sizeof(cls) > pos:
        fmt += "%dx" % (ctypes.sizeof(cls) - pos)
    packer = struct.Struct(fmt)
    assert packer.size == ctypes.sizeof(cls), (fmt, ctypes.sizeof(cls))
    return packer


_DECODE_ARGS = _packer(DecodeArgs)


def pack_decode_args(*fields):
    """A DecodeArgs with `fields` in _fields_ order, packed in one call.
    Integers must fit their fields and floats must fit a float32 (the caller's
    checks make sure); struct raises where ctypes would wrap or round to inf."""
    return DecodeArgs.from_buffer_copy(_DECODE_ARGS.pack(*fields))


class Plan(ctypes.Structure):
    """pa_plan: the variant and grid a call would use."""
    _fields_ = [
        ("variant", ctypes.c_char * 128),
        ("one_pass", ctypes.c_int),
        ("partition_tokens", ctypes.c_int32),
        ("num_partitions", ctypes.c_int32),
        ("grid", ctypes.c_uint * 3),
        ("block", ctypes.c_uint * 3),
        ("reduce_grid", ctypes.c_uint * 3),
        ("reduce_block", ctypes.c_uint * 3),
        ("resident_programs", ctypes.c_int32),
        ("partition_split", ctypes.c_int32),
        ("cluster_size", ctypes.c_int32),
    ]

    def to_dict(self):
        return {
            "variant": self.variant.decode("utf-8", "replace"),
            "one_pass": bool(self.one_pass),
            "partition_tokens": int(self.partition_tokens),
            "num_partitions": int(self.num_partitions),
            "grid": tuple(self.grid),
            "block": tuple(self.block),
            "reduce_grid": tuple(self.reduce_grid),
            "reduce_block": tuple(self.reduce_block),
            "resident_programs": int(self.resident_programs),
            "partition_split": int(self.partition_split),
            "cluster_size": int(self.cluster_size),
        }


class KernelError(ctypes.Structure):
    """pa_kernel_error: the first bad block-table entry (index >= 0) or
    seq_len (index -1) the kernels recorded, and how many programs found one."""
    _fields_ = [("count", ctypes.c_int32), ("seq", ctypes.c_int32),
                ("index", ctypes.c_int32), ("value", ctypes.c_int32)]


#===----------------------------------------------------------------------===#
# Errors
#===----------------------------------------------------------------------===#


class PagedAttnError(RuntimeError):
    """A pa_status other than PA_OK. `code`, `code_name`, `driver_error` (the
    CUresult name for PA_ERROR_CUDA, else "") and `message` mirror it."""

    def __init__(self, where, code, driver_error, message):
        self.where = where
        self.code = code
        self.code_name = STATUS_NAMES.get(code, "pa_status %d" % code)
        self.driver_error = driver_error
        self.message = message
        text = "%s failed: %s" % (where, self.code_name)
        if driver_error:
            text += " (%s)" % driver_error
        if message:
            text += ": " + message
        super().__init__(text)


class PagedAttnUnsupportedError(PagedAttnError, NotImplementedError):
    """PA_ERROR_UNSUPPORTED: no loaded kernel variant serves the call. Both a
    RuntimeError (like every runtime failure) and a NotImplementedError."""


class PagedAttnBadInputError(PagedAttnError):
    """PA_ERROR_BAD_INPUT (paged_attn.check_errors): a kernel found a
    block-table entry outside [0, num_blocks) or a seq_len outside [0,
    max_blocks_per_seq * block_size]. `seq`, `index` (-1: seq_lens[seq]),
    `value` and `count` (programs that found one) come from the error word."""

    def __init__(self, where, code, driver_error, message, error=None):
        super().__init__(where, code, driver_error, message)
        e = error if error is not None else KernelError()
        self.count, self.seq, self.index, self.value = (
            int(e.count), int(e.seq), int(e.index), int(e.value))


def check(status, where):
    """Raises the PagedAttnError that `status` describes, if any."""
    if status.code == PA_OK:
        return
    cls = PagedAttnUnsupportedError if status.code == PA_ERROR_UNSUPPORTED else PagedAttnError
    raise cls(where, int(status.code),
              status.driver_error.decode("utf-8", "replace"),
              status.message.decode("utf-8", "replace"))


#===----------------------------------------------------------------------===#
# Finding and loading libpa_runtime.so
#===----------------------------------------------------------------------===#

LIBRARY_NAME = "libpa_runtime.so"
_PKG_DIR = os.path.dirname(os.path.abspath(__file__))
# runtime/python/paged_attn -> the repository root, when run from a checkout.
_REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(_PKG_DIR)))


def library_candidates():
    """Where libpa_runtime.so is looked for, in order: $PA_RUNTIME_LIB (a file,
    or a folder holding it), paged_attn/lib/, then the build folders of a
    checkout: <repo>/build and <repo>/build-rt, each in lib/ (where CMake puts
    it) and runtime/."""
    env = os.environ.get("PA_RUNTIME_LIB")
    if env:
        return [os.path.join(env, LIBRARY_NAME) if os.path.isdir(env) else env]
    found = [os.path.join(_PKG_DIR, "lib", LIBRARY_NAME)]
    for build in ("build", "build-rt"):
        for sub in ("lib", "runtime"):
            found.append(os.path.join(_REPO_ROOT, build, sub, LIBRARY_NAME))
    return found


class LibraryStats(ctypes.Structure):
    """pa_library_stats."""
    _fields_ = [("bundles", ctypes.c_size_t), ("modules_loaded", ctypes.c_size_t),
                ("loaded_sass", ctypes.c_size_t), ("loaded_ptx", ctypes.c_size_t),
                ("sass_fallbacks", ctypes.c_size_t)]


def _declare(lib):
    c = ctypes
    ctx_p = c.c_void_p
    lib.pa_context_create.argtypes = [c.c_int, c.POINTER(c.c_void_p)]
    lib.pa_context_create.restype = Status
    lib.pa_context_destroy.argtypes = [ctx_p]
    lib.pa_context_destroy.restype = None
    lib.pa_context_load_bundle.argtypes = [ctx_p, c.c_char_p]
    lib.pa_context_load_bundle.restype = Status
    lib.pa_context_load_library.argtypes = [ctx_p, c.c_char_p]
    lib.pa_context_load_library.restype = Status
    lib.pa_context_num_variants.argtypes = [ctx_p]
    lib.pa_context_num_variants.restype = c.c_size_t
    lib.pa_decode_v2.argtypes = [ctx_p, c.POINTER(DecodeArgs), CUstream]
    lib.pa_decode_v2.restype = Status
    lib.pa_plan_decode_v2.argtypes = [ctx_p, c.POINTER(DecodeArgs), c.POINTER(Plan)]
    lib.pa_plan_decode_v2.restype = Status
    lib.pa_workspace_bytes.argtypes = [c.c_int32, c.c_int32, c.c_int32, c.c_int32,
                                       c.c_int32, _enum]
    lib.pa_workspace_bytes.restype = c.c_size_t
    lib.pa_context_preload.argtypes = [ctx_p, c.POINTER(DecodeArgs), c.c_size_t]
    lib.pa_context_preload.restype = Status
    lib.pa_context_preload_all.argtypes = [ctx_p]
    lib.pa_context_preload_all.restype = Status
    lib.pa_context_library_stats.argtypes = [ctx_p, c.POINTER(LibraryStats)]
    lib.pa_context_library_stats.restype = Status
    lib.pa_context_last_error.argtypes = [ctx_p, CUstream, c.POINTER(KernelError)]
    lib.pa_context_last_error.restype = Status
    return lib


_lib = None
_lib_lock = threading.Lock()


def library():
    """The loaded libpa_runtime.so (loaded once, on first use)."""
    global _lib
    if _lib is not None:
        return _lib
    with _lib_lock:
        if _lib is None:
            candidates = library_candidates()
            path = next((p for p in candidates if os.path.isfile(p)), None)
            if path is None:
                raise FileNotFoundError(
                    "paged_attn: %s not found; looked at %s. Build the runtime "
                    "(cmake --build build --target pa_runtime) or set PA_RUNTIME_LIB "
                    "to the library's path" % (LIBRARY_NAME, ", ".join(candidates)))
            try:
                lib = ctypes.CDLL(path)
            except OSError as e:
                raise OSError("paged_attn: cannot load %s: %s" % (path, e)) from e
            _lib = _declare(lib)
            _lib.pa_runtime_path = path
    return _lib


#===----------------------------------------------------------------------===#
# Context
#===----------------------------------------------------------------------===#


class Context:
    """Owns one pa_context (one CUDA device) with a kernel library loaded."""

    def __init__(self, device_ordinal, kernel_dir):
        lib = library()
        self._lib = lib
        self.device = device_ordinal
        self.kernel_dir = kernel_dir
        handle = ctypes.c_void_p()
        check(lib.pa_context_create(device_ordinal, ctypes.byref(handle)),
              "pa_context_create(device %d)" % device_ordinal)
        self.handle = handle
        try:
            check(lib.pa_context_load_library(handle, os.fsencode(kernel_dir)),
                  "pa_context_load_library(%r)" % kernel_dir)
            self.num_variants = int(lib.pa_context_num_variants(handle))
            if self.num_variants == 0:
                raise PagedAttnError(
                    "pa_context_load_library(%r)" % kernel_dir, PA_ERROR_BUNDLE, "",
                    "the folder holds no kernel bundle (*.manifest); point "
                    "PA_KERNEL_LIBRARY at the folder pa-opt exported the bundles to")
        except BaseException:
            self.close()
            raise

    def decode(self, args, stream):
        check(self._lib.pa_decode_v2(self.handle, ctypes.byref(args), stream), "pa_decode_v2")

    def plan(self, args):
        p = Plan()
        check(self._lib.pa_plan_decode_v2(self.handle, ctypes.byref(args), ctypes.byref(p)),
              "pa_plan_decode_v2")
        return p.to_dict()

    def preload(self, args_list):
        """pa_context_preload: loads the modules calls like these use."""
        keys = (DecodeArgs * len(args_list))(*args_list)
        check(self._lib.pa_context_preload(self.handle, keys, len(args_list)),
              "pa_context_preload")

    def preload_all(self):
        check(self._lib.pa_context_preload_all(self.handle), "pa_context_preload_all")

    def stats(self):
        """pa_context_library_stats as a dict."""
        st = LibraryStats()
        check(self._lib.pa_context_library_stats(self.handle, ctypes.byref(st)),
              "pa_context_library_stats")
        return {name: int(getattr(st, name)) for name, _ in LibraryStats._fields_}

    def last_error(self, stream):
        """pa_context_last_error: raises PagedAttnBadInputError (and clears the
        record) when a kernel found a bad block-table entry or seq_len;
        synchronises `stream`."""
        e = KernelError()
        st = self._lib.pa_context_last_error(self.handle, stream, ctypes.byref(e))
        if st.code == PA_ERROR_BAD_INPUT:
            raise PagedAttnBadInputError(
                "pa_context_last_error(device %d)" % self.device, int(st.code),
                st.driver_error.decode("utf-8", "replace"),
                st.message.decode("utf-8", "replace"), e)
        check(st, "pa_context_last_error(device %d)" % self.device)

    def close(self):
        if self.handle:
            self._lib.pa_context_destroy(self.handle)
            self.handle = ctypes.c_void_p()


def workspace_bytes(num_seqs, num_heads, head_size, max_seq_len, partition_size, tmp_dtype):
    """pa_workspace_bytes."""
    return int(library().pa_workspace_bytes(num_seqs, num_heads, head_size, max_seq_len,
                                            partition_size, tmp_dtype))

#===- paged_attn/__init__.py - torch drop-in for PagedAttention V2 ----------===#
#
# `from paged_attn import paged_attention_v2` gives the seed's
# paged_attention_v2_triton signature on torch CUDA tensors, running the
# kernels pa-opt compiled through the C runtime (libpa_runtime.so, via ctypes).
# See docs/python.md.
#
#===------------------------------------------------------------------------===#

from ._capi import PagedAttnBadInputError, PagedAttnError, PagedAttnUnsupportedError
from ._checks import PARTITION_SIZE, SUPPORTED_BLOCK_SIZES, SUPPORTED_HEAD_SIZES
from .ops import (check_errors, init, kernel_library_dir, max_num_partitions, paged_attention_v2, plan,
                  release_contexts)

__version__: str = "0.1.0"

__all__ = [
    "paged_attention_v2", "plan", "init", "release_contexts", "max_num_partitions",
    "kernel_library_dir", "check_errors", "PagedAttnError", "PagedAttnUnsupportedError",
    "PagedAttnBadInputError", "PARTITION_SIZE",
    "SUPPORTED_HEAD_SIZES", "SUPPORTED_BLOCK_SIZES", "__version__",
]

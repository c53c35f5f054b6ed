"""DLPack exchange, as ``jax.dlpack``: arrays from other libraries' buffers."""

import numpy as np

from xform import dtypes
from xform.numpy import from_dlpack  # noqa: F401

__all__ = ["from_dlpack", "is_supported_dtype"]

_SUPPORTED = frozenset(
    np.dtype(d)
    for d in (
        "int8",
        "int16",
        "int32",
        "int64",
        "uint8",
        "uint16",
        "uint32",
        "uint64",
        "float16",
        "float32",
        "float64",
        "complex64",
        "complex128",
        "bool",
    )
) | {dtypes.bfloat16_dtype}


def is_supported_dtype(dtype):
    """Whether arrays of ``dtype`` can cross DLPack (JAX's list)."""
    return np.dtype(dtype) in _SUPPORTED

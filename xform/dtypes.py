"""Dtypes as jax.numpy has them: canonical dtypes, weak Python scalars, the promotion lattice."""

import functools

import ml_dtypes
import numpy as np

from xform import config

bool_ = np.dtype(np.bool_)
int8, int16, int32, int64 = (np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64))
uint8, uint16, uint32, uint64 = (np.dtype(t) for t in (np.uint8, np.uint16, np.uint32, np.uint64))
float16, float32, float64 = (np.dtype(t) for t in (np.float16, np.float32, np.float64))
bfloat16 = np.dtype(ml_dtypes.bfloat16)
complex64, complex128 = np.dtype(np.complex64), np.dtype(np.complex128)
float0 = np.dtype([("float0", np.void, 0)])

SUPPORTED = frozenset([bool_, int8, int16, int32, int64, uint8, uint16, uint32, uint64,
                       float16, bfloat16, float32, float64, complex64, complex128])

_TO_32 = {int64: int32, uint64: uint32, float64: float32, complex128: complex64}

_SHORT = {bool_: "bool", int8: "i8", int16: "i16", int32: "i32", int64: "i64", uint8: "u8",
          uint16: "u16", uint32: "u32", uint64: "u64", float16: "f16", bfloat16: "bf16",
          float32: "f32", float64: "f64", complex64: "c64", complex128: "c128", float0: "float0"}


def short_name(dtype):
    """``f32`` for float32, as the jaxpr printer spells dtypes."""
    return _SHORT.get(dtype, str(dtype))


@functools.cache
def _canonical(dtype, x64):
    if dtype not in SUPPORTED:
        raise TypeError(f"xform does not support the dtype {dtype}; supported: "
                        f"{sorted(str(d) for d in SUPPORTED)}")
    return dtype if x64 else _TO_32.get(dtype, dtype)


def canonicalize(dtype):
    """The dtype xform stores for ``dtype``: 64-bit types narrow to 32 bits unless x64 is on."""
    try:
        dt = np.dtype(dtype)
    except TypeError as e:
        raise TypeError(f"{dtype!r} is not a valid dtype") from e
    return _canonical(dt, config.x64_enabled())


def default_int():
    return int64 if config.x64_enabled() else int32


def default_float():
    return float64 if config.x64_enabled() else float32


def default_complex():
    return complex128 if config.x64_enabled() else complex64


def is_float(dtype):
    return np.issubdtype(dtype, np.floating) or dtype == bfloat16


def is_complex(dtype):
    return np.issubdtype(dtype, np.complexfloating)


def is_inexact(dtype):
    return is_float(dtype) or is_complex(dtype)


def is_int(dtype):
    return np.issubdtype(dtype, np.integer)


def is_signed_int(dtype):
    return np.issubdtype(dtype, np.signedinteger)


def is_unsigned_int(dtype):
    return np.issubdtype(dtype, np.unsignedinteger)


def finfo(dtype):
    return ml_dtypes.finfo(dtype)


def iinfo(dtype):
    return np.iinfo(dtype)


# The promotion lattice of jax.numpy. "i*", "f*", "c*" are the weak Python-scalar types.
# Node names must never equal a dtype: np.dtype("b") == "b" is int8, hence "bool*".
_LATTICE = {
    "bool*": ["i*"],
    "i*": [uint8, int8],
    uint8: [int16, uint16], uint16: [int32, uint32], uint32: [int64, uint64], uint64: ["f*"],
    int8: [int16], int16: [int32], int32: [int64], int64: ["f*"],
    "f*": [float16, bfloat16, "c*"],
    float16: [float32], bfloat16: [float32], float32: [float64, complex64],
    float64: [complex128],
    "c*": [complex64], complex64: [complex128], complex128: [],
}


def _upper_bounds(node):
    seen, todo = set(), [node]
    while todo:
        n = todo.pop()
        if n not in seen:
            seen.add(n)
            todo.extend(_LATTICE[n])
    return frozenset(seen)


_UB = {n: _upper_bounds(n) for n in _LATTICE}


def _node(dtype, weak):
    if dtype == bool_:
        return "bool*"
    if weak:
        if is_int(dtype):
            return "i*"
        return "f*" if is_float(dtype) else "c*"
    return dtype


@functools.lru_cache(maxsize=4096)
def _join(nodes, x64):
    common = frozenset.intersection(*(_UB[n] for n in nodes))
    best = next(n for n in common if _UB[n] >= common)
    if not isinstance(best, str):
        return _canonical(best, x64), False
    if best == "bool*":
        return bool_, False
    if best == "i*":
        return (int64 if x64 else int32), True
    if best == "f*":
        return (float64 if x64 else float32), True
    return (complex128 if x64 else complex64), True


def promote(*dtype_weak_pairs):
    """The (dtype, weak_type) jax.numpy gives a binary/n-ary op on these operand types."""
    nodes = frozenset(_node(d, w) for d, w in dtype_weak_pairs)
    return _join(nodes, config.x64_enabled())


def python_scalar_dtype(x):
    """The canonical dtype of a weakly typed Python scalar."""
    if isinstance(x, bool):
        return bool_
    if isinstance(x, int):
        return default_int()
    if isinstance(x, float):
        return default_float()
    return default_complex()


def check_int_range(x, dtype, what):
    """Python ints that do not fit ``dtype`` raise ``OverflowError`` as in JAX."""
    info = np.iinfo(dtype)
    if not info.min <= x <= info.max:
        raise OverflowError(f"{what}: Python int {x} too large to convert to {dtype}")

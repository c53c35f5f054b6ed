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

# The narrow ml_dtypes types. JAX lets them meet only themselves, bool and weak Python
# scalars (and, for the floats, the standard integer types): anything else is an error.
(float8_e3m4, float8_e4m3, float8_e4m3b11fnuz, float8_e4m3fn, float8_e4m3fnuz, float8_e5m2,
 float8_e5m2fnuz, float8_e8m0fnu, float4_e2m1fn, float6_e2m3fn, float6_e3m2fn) = (
    np.dtype(getattr(ml_dtypes, n)) for n in (
        "float8_e3m4", "float8_e4m3", "float8_e4m3b11fnuz", "float8_e4m3fn", "float8_e4m3fnuz",
        "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu", "float4_e2m1fn", "float6_e2m3fn",
        "float6_e3m2fn"))
int1, int2, int4 = np.dtype(ml_dtypes.int1), np.dtype(ml_dtypes.int2), np.dtype(ml_dtypes.int4)
uint1, uint2, uint4 = (np.dtype(ml_dtypes.uint1), np.dtype(ml_dtypes.uint2),
                       np.dtype(ml_dtypes.uint4))

FLOAT8 = (float8_e3m4, float8_e4m3, float8_e4m3b11fnuz, float8_e4m3fn, float8_e4m3fnuz,
          float8_e5m2, float8_e5m2fnuz, float8_e8m0fnu)
NARROW_FLOATS = (*FLOAT8, float4_e2m1fn, float6_e2m3fn, float6_e3m2fn)
NARROW_SIGNED, NARROW_UNSIGNED = (int1, int2, int4), (uint1, uint2, uint4)
NARROW_INTS = NARROW_SIGNED + NARROW_UNSIGNED
# Their bit widths: each is stored in one byte on the host.
BITS = {**{d: 8 for d in FLOAT8}, float4_e2m1fn: 4, float6_e2m3fn: 6, float6_e3m2fn: 6,
        int1: 1, uint1: 1, int2: 2, uint2: 2, int4: 4, uint4: 4}

SUPPORTED = frozenset([bool_, int8, int16, int32, int64, uint8, uint16, uint32, uint64,
                       float16, bfloat16, float32, float64, complex64, complex128,
                       *NARROW_FLOATS, *NARROW_INTS])

_TO_32 = {int64: int32, uint64: uint32, float64: float32, complex128: complex64}

_SHORT = {bool_: "bool", int8: "i8", int16: "i16", int32: "i32", int64: "i64", uint8: "u8",
          uint16: "u16", uint32: "u32", uint64: "u64", float16: "f16", bfloat16: "bf16",
          float32: "f32", float64: "f64", complex64: "c64", complex128: "c128", float0: "float0",
          **{d: d.name.replace("uint", "u").replace("int", "i").replace("float", "f")
             for d in NARROW_FLOATS + NARROW_INTS}}


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


_CUSTOM_FLOATS = frozenset([bfloat16, *NARROW_FLOATS])
_NARROW_SIGNED, _NARROW_UNSIGNED = frozenset(NARROW_SIGNED), frozenset(NARROW_UNSIGNED)


def is_float(dtype):
    return dtype in _CUSTOM_FLOATS or np.issubdtype(dtype, np.floating)


def is_complex(dtype):
    return np.issubdtype(dtype, np.complexfloating)


def is_inexact(dtype):
    return is_float(dtype) or is_complex(dtype)


# Float types with no infinity: their overflow saturates or is NaN, so a max/min reduction
# must start from the finite extremes (finfo.min / finfo.max) instead of -inf/+inf.
_NO_INF = frozenset(d for d in NARROW_FLOATS if not np.isinf(np.array(np.inf, d).astype(float)))


def supports_inf(dtype):
    """Whether ``dtype`` can hold infinities (False for integers and, e.g., float8_e4m3fn)."""
    return is_inexact(dtype) and dtype not in _NO_INF


def is_int(dtype):
    return is_signed_int(dtype) or is_unsigned_int(dtype)


def is_signed_int(dtype):
    return dtype in _NARROW_SIGNED or np.issubdtype(dtype, np.signedinteger)


def is_unsigned_int(dtype):
    return dtype in _NARROW_UNSIGNED or np.issubdtype(dtype, np.unsignedinteger)


def finfo(dtype):
    """Machine limits of a float type (ml_dtypes' ``finfo``, which knows the narrow ones)."""
    return ml_dtypes.finfo(dtype)


def iinfo(dtype):
    """Machine limits of an integer type (ml_dtypes' ``iinfo``, which knows int4 and kin)."""
    return ml_dtypes.iinfo(dtype)


# The promotion lattice of jax.numpy. "i*", "f*", "c*" are the weak Python-scalar types.
# Node names must never equal a dtype: np.dtype("b") == "b" is int8, hence "bool*".
# The narrow types are dead ends: above a weak scalar (and the narrow floats above every
# standard integer, through "f*"), below nothing, so mixing them with others has no join.
_LATTICE = {
    "bool*": ["i*"],
    "i*": [uint8, int8, *NARROW_INTS],
    uint8: [int16, uint16], uint16: [int32, uint32], uint32: [int64, uint64], uint64: ["f*"],
    int8: [int16], int16: [int32], int32: [int64], int64: ["f*"],
    "f*": [*NARROW_FLOATS, float16, bfloat16, "c*"],
    float16: [float32], bfloat16: [float32], float32: [float64, complex64],
    float64: [complex128],
    "c*": [complex64], complex64: [complex128], complex128: [],
    **{d: [] for d in NARROW_FLOATS + NARROW_INTS},
}


class TypePromotionError(ValueError):
    """Operand dtypes with no implicit promotion (a narrow type mixed with another): JAX's
    ``jax.dtypes.TypePromotionError``, a ``ValueError``."""


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
    best = next((n for n in common if _UB[n] >= common), None)
    if best is None:
        return None
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
    nodes = [_node(d, w) for d, w in dtype_weak_pairs]
    out = _join(frozenset(nodes), config.x64_enabled())
    if out is None:
        _no_promotion(nodes)
    return out


_WEAK_NAMES = {"i*": "<class 'int'>", "f*": "<class 'float'>", "c*": "<class 'complex'>",
               "bool*": "bool"}


def _no_promotion(nodes):
    names = tuple(dict.fromkeys(_WEAK_NAMES.get(n, str(n)) for n in nodes))
    # JAX names the widest narrow float present, else the narrow integers.
    narrow = max((n for n in nodes if n in BITS), key=lambda n: (n in NARROW_FLOATS, BITS[n]),
                 default=None)
    if narrow is None:
        raise TypePromotionError(f"Input dtypes {names} have no available implicit dtype "
                                 "promotion path. Try explicitly casting inputs to the "
                                 "desired output type.")
    if narrow in NARROW_INTS:
        what, example = "1-bit, 2-bit and 4-bit integers", "int32"
    else:
        what, example = f"{BITS[narrow]}-bit floats", "float32"
    raise TypePromotionError(
        f"Input dtypes {names} have no available implicit dtype promotion path. To avoid "
        f"unintended promotion, {what} do not support implicit promotion. If you'd like your "
        f"inputs to be promoted to another type, you can do so explicitly using e.g. "
        f"x.astype('{example}')")


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
    """Python ints that do not fit ``dtype`` raise ``OverflowError`` as in JAX (which lets
    them wrap around in the narrow types: ``int4(30)`` is -2)."""
    if dtype in BITS:
        return
    info = iinfo(dtype)
    if not info.min <= x <= info.max:
        raise OverflowError(f"{what}: Python int {x} too large to convert to {dtype}")

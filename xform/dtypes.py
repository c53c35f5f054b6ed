"""Dtypes as jax.numpy has them: canonical dtypes, weak Python scalars, the promotion lattice."""

import functools
import importlib
import sys
import warnings

import ml_dtypes
import numpy as np

from xform import config

bool_ = np.dtype(np.bool_)
int8, int16, int32, int64 = (np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64))
uint8, uint16, uint32, uint64 = (np.dtype(t) for t in (np.uint8, np.uint16, np.uint32, np.uint64))
float16, float32, float64 = (np.dtype(t) for t in (np.float16, np.float32, np.float64))
# jax.dtypes.bfloat16 is ml_dtypes' scalar type (``bfloat16(1)`` makes a scalar). xform's
# tables are keyed by dtype instances, which do not hash like their scalar types: the code
# uses ``bfloat16_dtype``.
bfloat16 = ml_dtypes.bfloat16
bfloat16_dtype = np.dtype(bfloat16)
complex64, complex128 = np.dtype(np.complex64), np.dtype(np.complex128)
float0 = np.dtype([("float0", np.void, 0)])

# The narrow ml_dtypes types. JAX lets them meet only themselves, bool and weak Python
# scalars (and, for the floats, the standard integer types): anything else is an error.
(
    float8_e3m4,
    float8_e4m3,
    float8_e4m3b11fnuz,
    float8_e4m3fn,
    float8_e4m3fnuz,
    float8_e5m2,
    float8_e5m2fnuz,
    float8_e8m0fnu,
    float4_e2m1fn,
    float6_e2m3fn,
    float6_e3m2fn,
) = (
    np.dtype(getattr(ml_dtypes, n))
    for n in (
        "float8_e3m4",
        "float8_e4m3",
        "float8_e4m3b11fnuz",
        "float8_e4m3fn",
        "float8_e4m3fnuz",
        "float8_e5m2",
        "float8_e5m2fnuz",
        "float8_e8m0fnu",
        "float4_e2m1fn",
        "float6_e2m3fn",
        "float6_e3m2fn",
    )
)
int1, int2, int4 = np.dtype(ml_dtypes.int1), np.dtype(ml_dtypes.int2), np.dtype(ml_dtypes.int4)
uint1, uint2, uint4 = (
    np.dtype(ml_dtypes.uint1),
    np.dtype(ml_dtypes.uint2),
    np.dtype(ml_dtypes.uint4),
)

FLOAT8 = (
    float8_e3m4,
    float8_e4m3,
    float8_e4m3b11fnuz,
    float8_e4m3fn,
    float8_e4m3fnuz,
    float8_e5m2,
    float8_e5m2fnuz,
    float8_e8m0fnu,
)
NARROW_FLOATS = (*FLOAT8, float4_e2m1fn, float6_e2m3fn, float6_e3m2fn)
NARROW_SIGNED, NARROW_UNSIGNED = (int1, int2, int4), (uint1, uint2, uint4)
NARROW_INTS = NARROW_SIGNED + NARROW_UNSIGNED
# Their bit widths: each is stored in one byte on the host.
BITS = {
    **{d: 8 for d in FLOAT8},
    float4_e2m1fn: 4,
    float6_e2m3fn: 6,
    float6_e3m2fn: 6,
    int1: 1,
    uint1: 1,
    int2: 2,
    uint2: 2,
    int4: 4,
    uint4: 4,
}

SUPPORTED = frozenset(
    [
        bool_,
        int8,
        int16,
        int32,
        int64,
        uint8,
        uint16,
        uint32,
        uint64,
        float16,
        bfloat16_dtype,
        float32,
        float64,
        complex64,
        complex128,
        *NARROW_FLOATS,
        *NARROW_INTS,
    ]
)

_TO_32 = {int64: int32, uint64: uint32, float64: float32, complex128: complex64}

_SHORT = {
    bool_: "bool",
    int8: "i8",
    int16: "i16",
    int32: "i32",
    int64: "i64",
    uint8: "u8",
    uint16: "u16",
    uint32: "u32",
    uint64: "u64",
    float16: "f16",
    bfloat16_dtype: "bf16",
    float32: "f32",
    float64: "f64",
    complex64: "c64",
    complex128: "c128",
    float0: "float0",
    **{
        d: d.name.replace("uint", "u").replace("int", "i").replace("float", "f")
        for d in NARROW_FLOATS + NARROW_INTS
    },
}


def short_name(dtype):
    """``f32`` for float32, as the jaxpr printer spells dtypes."""
    return _SHORT.get(dtype, str(dtype))


@functools.cache
def _canonical(dtype, x64):
    if dtype not in SUPPORTED:
        raise TypeError(
            f"xform does not support the dtype {dtype}; supported: "
            f"{sorted(str(d) for d in SUPPORTED)}"
        )
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


_CUSTOM_FLOATS = frozenset([bfloat16_dtype, *NARROW_FLOATS])
_NARROW_SIGNED, _NARROW_UNSIGNED = frozenset(NARROW_SIGNED), frozenset(NARROW_UNSIGNED)


@functools.cache  # the kind tests run on every eager op: np.issubdtype is slow
def is_float(dtype):
    return dtype in _CUSTOM_FLOATS or np.issubdtype(dtype, np.floating)


@functools.cache
def is_complex(dtype):
    return np.issubdtype(dtype, np.complexfloating)


@functools.cache
def is_inexact(dtype):
    return is_float(dtype) or is_complex(dtype)


# Float types with no infinity: their overflow saturates or is NaN, so a max/min reduction
# must start from the finite extremes (finfo.min / finfo.max) instead of -inf/+inf.
_NO_INF = frozenset(d for d in NARROW_FLOATS if not np.isinf(np.array(np.inf, d).astype(float)))


def supports_inf(dtype):
    """Whether ``dtype`` can hold infinities (False for integers and, e.g., float8_e4m3fn)."""
    return is_inexact(dtype) and dtype not in _NO_INF


@functools.cache
def is_int(dtype):
    return is_signed_int(dtype) or is_unsigned_int(dtype)


@functools.cache
def is_signed_int(dtype):
    return dtype in _NARROW_SIGNED or np.issubdtype(dtype, np.signedinteger)


@functools.cache
def is_unsigned_int(dtype):
    return dtype in _NARROW_UNSIGNED or np.issubdtype(dtype, np.unsignedinteger)


# Machine limits: ml_dtypes' classes (which know the narrow types), as JAX's are.
finfo = ml_dtypes.finfo
iinfo = ml_dtypes.iinfo


# The promotion lattice of jax.numpy. "i*", "f*", "c*" are the weak Python-scalar types.
# Node names must never equal a dtype: np.dtype("b") == "b" is int8, hence "bool*".
# The narrow types are dead ends: above a weak scalar (and the narrow floats above every
# standard integer, through "f*"), below nothing, so mixing them with others has no join.
_LATTICE = {
    "bool*": ["i*"],
    "i*": [uint8, int8, *NARROW_INTS],
    uint8: [int16, uint16],
    uint16: [int32, uint32],
    uint32: [int64, uint64],
    uint64: ["f*"],
    int8: [int16],
    int16: [int32],
    int32: [int64],
    int64: ["f*"],
    "f*": [*NARROW_FLOATS, float16, bfloat16_dtype, "c*"],
    float16: [float32],
    bfloat16_dtype: [float32],
    float32: [float64, complex64],
    float64: [complex128],
    "c*": [complex64],
    complex64: [complex128],
    complex128: [],
    **{d: [] for d in NARROW_FLOATS + NARROW_INTS},
}


def _type_promotion_error(message):
    """``TypePromotionError(message)`` (made on first use: see ``__getattr__``)."""
    return sys.modules[__name__].TypePromotionError(message)


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


_WEAK_NAMES = {
    "i*": "<class 'int'>",
    "f*": "<class 'float'>",
    "c*": "<class 'complex'>",
    "bool*": "bool",
}


def _no_promotion(nodes):
    names = tuple(dict.fromkeys(_WEAK_NAMES.get(n, str(n)) for n in nodes))
    # JAX names the widest narrow float present, else the narrow integers.
    narrow = max(
        (n for n in nodes if n in BITS), key=lambda n: (n in NARROW_FLOATS, BITS[n]), default=None
    )
    if narrow is None:
        raise _type_promotion_error(
            f"Input dtypes {names} have no available implicit dtype "
            "promotion path. Try explicitly casting inputs to the "
            "desired output type."
        )
    if narrow in NARROW_INTS:
        what, example = "1-bit, 2-bit and 4-bit integers", "int32"
    else:
        what, example = f"{BITS[narrow]}-bit floats", "float32"
    raise _type_promotion_error(
        f"Input dtypes {names} have no available implicit dtype promotion path. To avoid "
        f"unintended promotion, {what} do not support implicit promotion. If you'd like your "
        f"inputs to be promoted to another type, you can do so explicitly using e.g. "
        f"x.astype('{example}')"
    )


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


# --------------------------------------------------------------------------- jax.dtypes' names


# The abstract scalar classes of the extended dtypes (the key dtypes ``key<impl>``) are JAX's:
# xform's key dtypes have JAX's ``prng_key`` as their scalar type, so that JAX's own checks
# (and flax's, equinox's) accept xform keys, and ``issubdtype(key.dtype, prng_key)`` holds in
# both libraries. JAX's classes live in ``jax``, whose import loads jaxlib, and this module
# belongs to the IR, which imports without it: ``extended``, ``prng_key`` and
# ``TypePromotionError`` (a subclass of JAX's, a ``ValueError``, so that ``except`` clauses
# written for JAX catch it) are read from JAX when first asked for.
def __getattr__(name):
    if name not in ("extended", "prng_key", "TypePromotionError"):  # (__path__, ...: no JAX)
        raise AttributeError(f"module 'xform.dtypes' has no attribute '{name}'")
    jax_dtypes = importlib.import_module("jax.dtypes")
    if name in ("extended", "prng_key"):
        value = getattr(jax_dtypes, name)
    else:
        value = type(
            name,
            (jax_dtypes.TypePromotionError,),
            {
                "__doc__": "Operand dtypes with no implicit promotion (a narrow type mixed "
                "with another).",
                "__module__": __name__,
            },
        )
    globals()[name] = value
    return value


def __dir__():
    return sorted({*globals(), "extended", "prng_key", "TypePromotionError"})


def _extended_class():
    """JAX's ``extended``, or None while JAX is not loaded: then no class derives from it
    (key dtypes are made by xform.random, which loads JAX)."""
    jax_dtypes = sys.modules.get("jax.dtypes")
    return None if jax_dtypes is None else jax_dtypes.extended


def _is_extended(dtype):
    """An extended dtype (a typed key's ``key<impl>``): not a NumPy dtype, its ``type`` a
    subclass of ``extended``."""
    if isinstance(dtype, (np.dtype, type, str)):
        return False
    t, extended = getattr(dtype, "type", None), _extended_class()
    return extended is not None and isinstance(t, type) and issubclass(t, extended)


def canonicalize_dtype(dtype, allow_extended_dtype=False):
    """``dtype`` as xform stores it: 64-bit types narrow to 32 bits unless x64 is on.

    Any NumPy dtype passes (as in JAX); an extended dtype (a key dtype) only with
    ``allow_extended_dtype=True``.
    """
    if _is_extended(dtype):
        if not allow_extended_dtype:
            raise ValueError(
                f"canonicalize_dtype called on extended dtype {dtype} with "
                "allow_extended_dtype=False"
            )
        return dtype
    try:
        dt = np.dtype(dtype)
    except TypeError as e:
        raise TypeError(f"canonicalize_dtype: data type {dtype!r} not understood") from e
    return dt if config.x64_enabled() else _TO_32.get(dt, dt)


# ml_dtypes' scalar types subclass only np.generic: their place in NumPy's abstract hierarchy.
_CUSTOM_PARENTS = {
    **{d.type: (np.floating, np.inexact) for d in (bfloat16_dtype, *NARROW_FLOATS)},
    **{d.type: (np.signedinteger, np.integer) for d in NARROW_SIGNED},
    **{d.type: (np.unsignedinteger, np.integer) for d in NARROW_UNSIGNED},
}


def _scalar_type(x):
    if isinstance(x, type) and issubclass(x, np.generic):
        return x
    return np.dtype(x).type


def issubdtype(a, b):
    """``np.issubdtype`` that also places bfloat16, the float8s, int4 and kin in NumPy's
    hierarchy and knows the extended (key) dtypes: ``issubdtype(key.dtype, prng_key)``."""
    if _is_extended(b):
        return a == b
    if _is_extended(a):
        a = a.type
    ta, tb = _scalar_type(a), _scalar_type(b)
    extended = _extended_class()
    if extended is not None and (issubclass(ta, extended) or issubclass(tb, extended)):
        return issubclass(ta, tb)
    if ta in _CUSTOM_PARENTS:
        return tb in (ta, *_CUSTOM_PARENTS[ta], np.number, np.generic)
    return bool(np.issubdtype(ta, tb))


def itemsize_bits(dtype):
    """Bits per element of ``dtype`` (4 for int4; 8 for bool, as it is stored)."""
    if dtype is None:
        raise ValueError("itemsize_bits: dtype cannot be None.")
    if _is_extended(dtype):
        raise ValueError(f"itemsize_bits: unexpected input: dtype={dtype}")
    dt = np.dtype(dtype)
    if dt == bool_:
        return 8
    if is_int(dt):
        return iinfo(dt).bits
    if is_float(dt):
        return finfo(dt).bits
    if is_complex(dt):
        return 2 * finfo(dt).bits
    raise ValueError(f"itemsize_bits: unexpected input: dtype={dt}")


_PY_SCALAR_DTYPES = {bool: bool_, int: int64, float: float64, complex: complex128}


def _dtype_and_weak(x):
    """(canonical dtype, weak_type) of a value or a dtype specifier, as the lattice sees it:
    Python scalars and the types ``int``/``float``/``complex`` are weak."""
    if x is None:
        raise ValueError("Invalid argument to dtype: None.")
    aval = getattr(x, "aval", None)  # xform's Arrays and tracers
    if aval is not None and hasattr(aval, "weak_type"):
        return aval.dtype, aval.weak_type
    py_type = x if isinstance(x, type) else type(x)
    for t in (bool, int, float, complex):  # also subclasses (IntEnum, np.float64)
        if issubclass(py_type, t) and not issubclass(py_type, np.generic):
            return canonicalize(_PY_SCALAR_DTYPES[t]), t is not bool
    if isinstance(x, (str, np.dtype, type)):
        dt = x
    else:
        dt = getattr(x, "dtype", None)
        if dt is None:
            try:
                dt = np.result_type(x)
            except TypeError as e:
                raise TypeError(f"Cannot determine dtype of {x!r}") from e
    try:
        with warnings.catch_warnings():  # NumPy's deprecated aliases ('a') are no dtypes here
            warnings.simplefilter("error", DeprecationWarning)
            dt = np.dtype(dt)
    except (TypeError, DeprecationWarning) as e:
        raise TypeError(f"data type {x!r} not understood") from e
    if dt not in SUPPORTED:
        raise TypeError(
            f"Value {x!r} with dtype {dt} is not a valid xform array type. Only "
            "arrays of numeric types are supported."
        )
    return canonicalize(dt), bool(getattr(x, "weak_type", False))


def lattice_join(pairs):
    """``(dtype, weak_type)`` of an operation on operands of these ``(dtype, weak_type)``
    pairs, as JAX's ``lattice_result_type``: equal dtypes stay, weak operands join as their
    strong counterparts and the result stays weak only if every operand was."""
    if len(pairs) == 1:
        dtype, weak = pairs[0]
    elif len({d for d, _ in pairs}) == 1 and not all(w for _, w in pairs):
        dtype, weak = pairs[0][0], False
    elif all(w for _, w in pairs):
        # All weak: join the strong counterparts and keep the result weak, so two weak
        # non-default types (a weak float16) do not jump to the default width.
        dtype, _ = promote(*[(d, False) for d, _ in pairs])
        weak = True
    else:
        dtype, weak = promote(*pairs)
    return dtype, weak and dtype != bool_


def weak_default(dtype):
    """The type a weakly typed result of ``dtype``'s kind has: the default int, float or
    complex (bool stays bool)."""
    if is_complex(dtype):
        return default_complex()
    if is_float(dtype):
        return default_float()
    if is_int(dtype):
        return default_int()
    return dtype


def result_type(*args, return_weak_type_flag=False):
    """The dtype jax.numpy's promotion gives an operation on ``args`` (arrays, scalars or
    dtypes; ``None`` means the default float); with ``return_weak_type_flag=True`` the pair
    ``(dtype, weak_type)``.

    Example:
      >>> xform.dtypes.result_type(xform.numpy.int8(1), 2.0)
      dtype('float32')
    """
    if not args:
        raise ValueError("result_type: at least one array or dtype is required")
    dtype, weak = lattice_join([_dtype_and_weak(default_float() if a is None else a) for a in args])
    if weak:
        dtype = weak_default(dtype)
    return (dtype, weak) if return_weak_type_flag else dtype


def scalar_type_of(x):
    """The Python scalar type (``bool``, ``int``, ``float``, ``complex``) of a value's dtype."""
    try:
        dtype, _ = _dtype_and_weak(x)
    except TypeError as e:
        raise TypeError(f"scalar_type_of: invalid scalar value {x!r} ({e})") from None
    if dtype == bool_:
        return bool
    if is_int(dtype):
        return int
    if is_float(dtype):
        return float
    return complex

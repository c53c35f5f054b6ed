"""``xform.numpy``: NumPy's API on xform arrays, with jax.numpy's semantics.

Every function is a composition of ``xform.lax`` primitives, so it works eagerly, under
``jit`` and under every transformation. Dtypes follow jax.numpy: float32 by default, 64-bit
types with ``xform.enable_x64()``, weakly typed Python scalars, bfloat16.
"""

import ml_dtypes
import numpy as np

from xform import dtypes as _dtypes
from xform.numpy import (
    _array_methods,  # noqa: F401  (attaches operators and methods)
    _keys,
    fft,  # noqa: F401  (the submodule, as jax.numpy.fft)
    linalg,  # noqa: F401  (the submodule, as jax.numpy.linalg)
)
from xform.numpy._contractions import *  # noqa: F403
from xform.numpy._creation import *  # noqa: F403
from xform.numpy._index_tricks import *  # noqa: F403
from xform.numpy._io import *  # noqa: F403
from xform.numpy._manipulation import *  # noqa: F403
from xform.numpy._math import *  # noqa: F403
from xform.numpy._polynomial import *  # noqa: F403
from xform.numpy._promote import array, asarray, promote_types, result_type  # noqa: F401
from xform.numpy._reductions import *  # noqa: F403
from xform.numpy._selecting import *  # noqa: F403
from xform.numpy._setops import *  # noqa: F403
from xform.numpy._shape import *  # noqa: F403
from xform.numpy._sorting import *  # noqa: F403
from xform.numpy._statistics import *  # noqa: F403
from xform.numpy._ufuncs import *  # noqa: F403
from xform.numpy._vectorize import vectorize  # noqa: F401
from xform.runtime.array import Array as ndarray

globals().update(_keys.wrap(globals()))  # these functions also take typed key arrays

Array = ndarray

# --------------------------------------------------------------------------- scalar types


class _ScalarMeta(type):
    """``xform.numpy.float32`` and friends: usable as dtypes, and callable to make arrays."""

    def __hash__(cls):
        return hash(cls.dtype.type)

    def __eq__(cls, other):
        return cls is other or cls.dtype.type == other

    def __ne__(cls, other):
        return not cls == other

    def __call__(cls, x):
        return asarray(x, dtype=cls.dtype)

    def __instancecheck__(cls, instance):
        return isinstance(instance, cls.dtype.type)


def _scalar_type(np_type, name=None):
    t = _ScalarMeta(name or np.dtype(np_type).name, (object,), {"dtype": np.dtype(np_type)})
    t.__module__ = "xform.numpy"
    t.__doc__ = f"The {np.dtype(np_type).name} scalar type; calling it makes an array."
    return t


bool_ = _scalar_type(np.bool_, "bool")
int8, int16, int32, int64 = map(_scalar_type, (np.int8, np.int16, np.int32, np.int64))
uint8, uint16, uint32, uint64 = map(_scalar_type, (np.uint8, np.uint16, np.uint32, np.uint64))
float16, float32, float64 = map(_scalar_type, (np.float16, np.float32, np.float64))
bfloat16 = _scalar_type(ml_dtypes.bfloat16, "bfloat16")
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
) = map(_scalar_type, _dtypes.NARROW_FLOATS)
int1, int2, int4 = map(_scalar_type, _dtypes.NARROW_SIGNED)
uint1, uint2, uint4 = map(_scalar_type, _dtypes.NARROW_UNSIGNED)
complex64, complex128 = map(_scalar_type, (np.complex64, np.complex128))
int_, uint, float_, complex_ = int64, uint64, float64, complex128
double, single, half, cfloat, cdouble, csingle = (
    float64,
    float32,
    float16,
    complex128,
    complex128,
    complex64,
)

# The abstract scalar hierarchy, for issubdtype.
generic, number, inexact, floating = np.generic, np.number, np.inexact, np.floating
complexfloating, integer, signedinteger = np.complexfloating, np.integer, np.signedinteger
unsignedinteger = np.unsignedinteger

dtype = np.dtype
iinfo = _dtypes.iinfo
finfo = _dtypes.finfo

pi, e, inf, nan, euler_gamma = np.pi, np.e, np.inf, np.nan, np.euler_gamma
newaxis = None


def _scalar_class(x):
    if isinstance(x, type) and issubclass(x, np.generic):
        return x
    t = getattr(x, "type", None)  # a dtype-like object NumPy cannot read (a key dtype)
    if not isinstance(x, (np.dtype, str)) and isinstance(t, type) and issubclass(t, np.generic):
        return t
    return np.dtype(x).type


def issubdtype(arg1, arg2):
    """``np.issubdtype`` that also places bfloat16, the float8s and int4 and kin in NumPy's
    abstract hierarchy (``issubdtype(int4, np.signedinteger)`` is True) and knows the key
    dtypes (``xform.dtypes.issubdtype``)."""
    return _dtypes.issubdtype(_scalar_class(arg1), _scalar_class(arg2))


def isdtype(dtype, kind):
    """Array-API ``isdtype``: ``kind`` is a dtype, a kind name, or a tuple of them."""
    dt = np.dtype(dtype)
    kinds = kind if isinstance(kind, tuple) else (kind,)
    tests = {
        "bool": lambda d: d == _dtypes.bool_,
        "signed integer": _dtypes.is_signed_int,
        "unsigned integer": _dtypes.is_unsigned_int,
        "integral": _dtypes.is_int,
        "real floating": _dtypes.is_float,
        "complex floating": _dtypes.is_complex,
        "numeric": lambda d: d != _dtypes.bool_,
    }
    for k in kinds:
        if isinstance(k, str):
            if k not in tests:
                raise ValueError(f"isdtype: unknown kind {k!r}; expected one of {sorted(tests)}")
            if tests[k](dt):
                return True
        elif np.dtype(k) == dt:
            return True
    return False


def can_cast(from_, to, casting="safe"):
    """NumPy's ``can_cast`` on dtypes."""
    return np.can_cast(np.dtype(from_), np.dtype(to), casting)


def iscomplexobj(x):
    """True if ``x`` has a complex dtype."""
    return (
        _dtypes.is_complex(result_type(x))
        if not isinstance(x, (list, tuple))
        else _dtypes.is_complex(asarray(x).dtype)
    )


def isrealobj(x):
    """True if ``x`` does not have a complex dtype."""
    return not iscomplexobj(x)


def isscalar(element):
    """True for Python scalars, NumPy scalars and rank-0 arrays."""
    if isinstance(element, (bool, int, float, complex, np.generic)):
        return True
    return hasattr(element, "shape") and element.shape == () and hasattr(element, "dtype")


ComplexWarning = np.exceptions.ComplexWarning
bool = bool_  # noqa: A001  (jax.numpy.bool is the bool scalar type)
# NumPy's abstract scalar types for non-numeric data, as jax.numpy exposes them.
object_, character, flexible = np.object_, np.character, np.flexible

"""Elementwise primitives: arithmetic (unary and binary), bitwise ops, clamp and dtype
conversions, with every rule; comparisons and select_n are in comparisons.py, below these,
and the transcendental functions in transcendental.py, above them.

Operands of an n-ary op share one dtype and one shape, except that rank-0 operands broadcast
(as in ``lax``; ``xform.numpy`` promotes dtypes and broadcasts shapes before binding).
Each primitive is a row: its name, the dtypes it accepts, and its NumPy host function.
"""

import builtins
import enum
import operator

import numpy as np

from xform import core, dtypes, errors
from xform.core import ShapedArray, Tracer, eval_trace, get_aval, set_current_trace
from xform.interpret import ad, batching, staging, transpose
from xform.interpret.batching import not_mapped
from xform.primitives.base import (
    ANY,
    BOOL,
    COMPLEX,
    FLOAT,
    FLOAT_OR_INT,
    INT,
    INT_OR_BOOL,
    NUMBER,
    SIGNED,
    broadcast_elementwise_shapes,
    check_dtype,
    elementwise,
    elementwise_abstract_eval,
    elementwise_host,
    standard_primitive,
    user_dtype,
)
from xform.primitives.comparisons import (
    _full_shape_operands,
    _zeros,
    eq,
    ge,
    gt,
    lt,
    select,
)

__all__ = [
    "neg",
    "sign",
    "floor",
    "ceil",
    "round",
    "abs",
    "bitwise_not",
    "population_count",
    "real",
    "imag",
    "conj",
    "add",
    "sub",
    "mul",
    "div",
    "rem",
    "max",
    "min",
    "nextafter",
    "bitwise_and",
    "bitwise_or",
    "bitwise_xor",
    "shift_left",
    "shift_right_logical",
    "shift_right_arithmetic",
    "integer_pow",
    "clamp",
    "convert_element_type",
    "bitcast_convert_type",
    "clz",
    "mulhi",
    "square",
    "reciprocal",
    "complex",
    "reduce_precision",
    "stage",
    "dtype",
]


def _real_dtype(dtype):
    return np.finfo(dtype).dtype if dtypes.is_complex(dtype) else dtype


def _complex_dtype(dtype):
    if dtypes.is_complex(dtype):
        return dtype
    return dtypes.complex128 if dtype == dtypes.float64 else dtypes.complex64


# conj takes real operands of these two dtypes only (as JAX), turning them complex.
_F32_F64 = ((lambda d: d in (dtypes.float32, dtypes.float64)), "float32, float64")


class RoundingMethod(enum.IntEnum):
    AWAY_FROM_ZERO = 0
    TO_NEAREST_EVEN = 1


# --------------------------------------------------------------------------- unary


def _round_host(x, rounding_method):
    if rounding_method == RoundingMethod.TO_NEAREST_EVEN:
        return np.round(x)
    t = np.trunc(x)
    return np.where(np.abs(x - t) >= 0.5, t + np.sign(x), t)


def _sign_host(x):
    # NumPy's sign(-0.0) is +0.0; XLA's keeps the sign of a zero.
    s = np.sign(x)
    return np.copysign(s, x) if x.dtype.kind == "f" else s


def _population_count_host(x):
    # NumPy counts the bits of |x| for signed integers; XLA those of the two's complement.
    return np.bitwise_count(x.view(f"u{x.dtype.itemsize}")).astype(x.dtype)


neg_p = elementwise("neg", NUMBER, np.negative)
sign_p = elementwise("sign", NUMBER, _sign_host)
floor_p = elementwise("floor", (FLOAT,), np.floor)
ceil_p = elementwise("ceil", (FLOAT,), np.ceil)
round_p = elementwise("round", (FLOAT,), _round_host)


abs_p = elementwise("abs", (FLOAT, COMPLEX, SIGNED), np.abs, out_dtype=_real_dtype)


not_p = elementwise("not", INT_OR_BOOL, np.invert)
population_count_p = elementwise("population_count", INT, _population_count_host)
real_p = elementwise("real", (COMPLEX,), np.real, out_dtype=_real_dtype)
imag_p = elementwise("imag", (COMPLEX,), np.imag, out_dtype=_real_dtype)
conj_p = elementwise("conj", (_F32_F64, COMPLEX), np.conj, out_dtype=_complex_dtype)


def neg(x):
    """Elementwise negation, ``-x``."""
    return neg_p.bind(x)


def sign(x):
    return sign_p.bind(x)


def floor(x):
    return floor_p.bind(x)


def ceil(x):
    return ceil_p.bind(x)


def round(x, rounding_method=RoundingMethod.AWAY_FROM_ZERO):  # noqa: A001  (lax's name)
    """Round to the nearest integer, halves away from zero or to even."""
    return round_p.bind(x, rounding_method=int(rounding_method))


def abs(x):  # noqa: A001  (lax's name)
    return abs_p.bind(x)


def bitwise_not(x):
    return not_p.bind(x)


def population_count(x):
    return population_count_p.bind(x)


def real(x):
    return real_p.bind(x)


def imag(x):
    return imag_p.bind(x)


def conj(x):
    return conj_p.bind(x)


# --------------------------------------------------------------------------- binary


def _safe_divisor(x, y):
    """``y`` with the divisors XLA defines specially (0, and -1 under INT_MIN) replaced by 1."""
    bad = y == 0
    if dtypes.is_signed_int(x.dtype):
        bad = bad | ((x == dtypes.iinfo(x.dtype).min) & (y == -1))
    return np.where(bad, np.ones_like(y), y)


def _div_host(x, y):
    if not dtypes.is_int(x.dtype):
        if x.dtype.kind == "f" and y.size == 1 < x.size:
            # XLA divides by one value broadcast over an array as a product with its
            # reciprocal (an ulp from the quotient at times): so must the host. bfloat16,
            # computed here in float32, gives XLA's quotient either way.
            scalar = (y if y.ndim == 0 else y.reshape(()))[()]  # (scalar arithmetic: fast)
            return x * (y.dtype.type(1) / scalar)
        return np.true_divide(x, y)
    # lax.div on integers rounds toward zero (C semantics), NumPy's // rounds down. As in
    # XLA, x / 0 has every bit set (-1, or the unsigned maximum) and INT_MIN / -1 is INT_MIN.
    d = _safe_divisor(x, y)
    q = np.floor_divide(x, d)
    fix = (np.remainder(x, d) != 0) & ((x < 0) != (d < 0))
    q = q + fix.astype(q.dtype)
    return np.where(y == 0, np.array(-1).astype(x.dtype), q)


def _rem_host(x, y):
    if not dtypes.is_int(x.dtype):
        return np.fmod(x, y)
    # As in XLA: x % 0 is x, and INT_MIN % -1 is 0.
    return np.where(y == 0, x, np.fmod(x, _safe_divisor(x, y)))


def _shift_count(y, bits):
    return np.clip(y, 0, bits - 1).astype(y.dtype), (y < 0) | (y >= bits)


def _shift_left(x, y):
    bits = x.dtype.itemsize * 8
    count, out_of_range = _shift_count(y, bits)
    return np.where(out_of_range, np.zeros_like(x), np.left_shift(x, count))


def _unsigned(dtype):
    return np.dtype(f"u{dtype.itemsize}")


def _signed(dtype):
    return np.dtype(f"i{dtype.itemsize}")


def _shift_right_logical(x, y):
    bits = x.dtype.itemsize * 8
    count, out_of_range = _shift_count(y, bits)
    u = np.right_shift(x.view(_unsigned(x.dtype)), count.astype(_unsigned(x.dtype)))
    return np.where(out_of_range, np.zeros_like(x), u.view(x.dtype))


def _shift_right_arithmetic(x, y):
    bits = x.dtype.itemsize * 8
    # Counts out of range (negative ones read as huge unsigned) fill with the sign bit.
    count, out_of_range = _shift_count(y, bits)
    count = np.where(out_of_range, np.array(bits - 1, count.dtype), count)
    s = np.right_shift(x.view(_signed(x.dtype)), count.astype(_signed(x.dtype)))
    return s.view(x.dtype)


add_p = elementwise("add", NUMBER, np.add)
sub_p = elementwise("sub", NUMBER, np.subtract)
mul_p = elementwise("mul", NUMBER, np.multiply)


def _div_impl(x, y):
    # float16 computes in float32 (``elementwise_host``), but XLA rounds the reciprocal of a
    # scalar divisor to float16 before the product (see _div_host).
    if x.dtype == dtypes.float16 and y.size == 1 < x.size:
        reciprocal = (np.float32(1) / y.astype(np.float32)).astype(dtypes.float16)
        return [(x.astype(np.float32) * reciprocal.astype(np.float32)).astype(dtypes.float16)]
    return _div_elementwise(x, y)


_div_elementwise = elementwise_host(_div_host)
_div_impl.numpy_fn = _div_host  # (the fast path's direct call, for other dtypes)
div_p = standard_primitive("div", elementwise_abstract_eval("div", NUMBER, None), _div_impl)
rem_p = elementwise("rem", FLOAT_OR_INT, _rem_host)
max_p = elementwise("max", ANY, np.maximum)
min_p = elementwise("min", ANY, np.minimum)


def _nextafter_host(x, y):
    if x.dtype != dtypes.bfloat16:  # NumPy steps float16/32/64 in their own precision
        return [np.asarray(np.nextafter(x, y))]
    # bfloat16 has no NumPy nextafter (computing in float32 would step by a float32 ulp):
    # step the bit pattern, as XLA does.
    xf, yf = x.astype(np.float32), y.astype(np.float32)
    bits = x.view(np.uint16).astype(np.int32)
    toward_zero = (xf > yf) == (xf > 0)
    stepped = np.where(toward_zero, bits - 1, bits + 1)
    # From zero, the smallest subnormal with the sign of y.
    smallest = np.where(np.signbit(yf), 0x8001, 0x0001)
    out = np.where(xf == 0, smallest, stepped).astype(np.uint16).view(dtypes.bfloat16)
    out = np.where(xf == yf, y, out)
    return [np.where(np.isnan(xf) | np.isnan(yf), np.array(np.nan, x.dtype), out)]


nextafter_p = standard_primitive(
    "nextafter", elementwise_abstract_eval("nextafter", (FLOAT,)), _nextafter_host
)
and_p = elementwise("and", INT_OR_BOOL, np.bitwise_and)
or_p = elementwise("or", INT_OR_BOOL, np.bitwise_or)
xor_p = elementwise("xor", INT_OR_BOOL, np.bitwise_xor)
shift_left_p = elementwise("shift_left", INT, _shift_left)
shift_right_logical_p = elementwise("shift_right_logical", INT, _shift_right_logical)
shift_right_arithmetic_p = elementwise("shift_right_arithmetic", INT, _shift_right_arithmetic)


def add(x, y):
    """Elementwise ``x + y``; operands must share a dtype (see ``xform.numpy.add``)."""
    return add_p.bind(x, y)


def sub(x, y):
    return sub_p.bind(x, y)


def mul(x, y, *, out_dtype=None):
    """``x * y``. With ``out_dtype``, both operands are converted to it first (so they need
    not share a dtype), as JAX's ``lax.mul(..., out_dtype=)``; weak only if both are."""
    if out_dtype is not None:
        dtype = user_dtype(out_dtype, "mul")
        x, y = (
            convert_element_type_p.bind(v, new_dtype=dtype, weak_type=get_aval(v).weak_type)
            if get_aval(v).dtype != dtype
            else v
            for v in (x, y)
        )
    return mul_p.bind(x, y)


def div(x, y):
    """``x / y``; integers round toward zero."""
    return div_p.bind(x, y)


def rem(x, y):
    """Remainder with the sign of ``x`` (C's fmod)."""
    return rem_p.bind(x, y)


def max(x, y):  # noqa: A001  (lax's name)
    return max_p.bind(x, y)


def min(x, y):  # noqa: A001  (lax's name)
    return min_p.bind(x, y)


def nextafter(x1, x2):
    return nextafter_p.bind(x1, x2)


def bitwise_and(x, y):
    return and_p.bind(x, y)


def bitwise_or(x, y):
    return or_p.bind(x, y)


def bitwise_xor(x, y):
    return xor_p.bind(x, y)


def shift_left(x, y):
    return shift_left_p.bind(x, y)


def shift_right_logical(x, y):
    return shift_right_logical_p.bind(x, y)


def shift_right_arithmetic(x, y):
    return shift_right_arithmetic_p.bind(x, y)


# --------------------------------------------------------------------------- integer_pow


def _integer_pow_abstract_eval(x, *, y):
    check_dtype("integer_pow", x.dtype, NUMBER)
    if not isinstance(y, int):
        raise TypeError(f"integer_pow: the exponent y must be a Python int, got {y!r}")
    if y < 0 and dtypes.is_int(x.dtype):
        raise TypeError(f"integer_pow: integers cannot be raised to the negative power {y}")
    return [x]


def _integer_pow_host(x, *, y):
    if y < 0:
        return [np.asarray(1 / np.power(x, -y)).astype(x.dtype)]
    return [np.asarray(np.power(x, y)).astype(x.dtype)]


integer_pow_p = standard_primitive("integer_pow", _integer_pow_abstract_eval, _integer_pow_host)
staging.memoize_abstract_eval(integer_pow_p)


def integer_pow(x, y):
    """``x ** y`` for a Python int ``y``, by repeated multiplication."""
    return integer_pow_p.bind(x, y=int(y))


# --------------------------------------------------------------------------- clamp


def _clamp_abstract_eval(lo, x, hi):
    for name, b in (("min", lo), ("max", hi)):
        if b.dtype != x.dtype:
            raise TypeError(f"clamp: {name} must have the operand's dtype {x.dtype}, got {b.dtype}")
        if b.shape and b.shape != x.shape:
            raise TypeError(
                f"clamp: {name} must be scalar or have the operand's shape {x.shape}, got {b.shape}"
            )
    check_dtype("clamp", x.dtype, (FLOAT, BOOL) + INT)
    return [x.update(weak_type=lo.weak_type and x.weak_type and hi.weak_type)]


clamp_p = standard_primitive(
    "clamp", _clamp_abstract_eval, lambda lo, x, hi: [np.minimum(np.maximum(x, lo), hi)]
)


def clamp(min, x, max):  # noqa: A002  (lax's names)
    """``x`` clipped to ``[min, max]``."""
    return clamp_p.bind(min, x, max)


# --------------------------------------------------------------------------- conversions


def _convert_abstract_eval(x, *, new_dtype, weak_type):
    if new_dtype not in dtypes.SUPPORTED:
        raise TypeError(f"convert_element_type: unsupported dtype {new_dtype}")
    return [ShapedArray(x.shape, new_dtype, weak_type)]


def _convert_host(x, *, new_dtype, weak_type):
    if dtypes.is_complex(x.dtype) and not dtypes.is_complex(new_dtype):
        x = np.real(x)
    if new_dtype == np.bool_:
        return [x != 0]
    if dtypes.is_int(new_dtype) and dtypes.is_float(x.dtype):
        # XLA saturates out-of-range floats and maps NaN to 0.
        info = dtypes.iinfo(new_dtype)
        wide = np.nan_to_num(x.astype(np.float64), nan=0.0)
        out = np.clip(wide, info.min, info.max).astype(new_dtype)
        return [np.where(wide >= float(info.max), info.max, out).astype(new_dtype)]
    out = np.asarray(x).astype(new_dtype)
    if x.dtype in _FNUZ_FLOATS and dtypes.is_inexact(new_dtype):
        out = np.where(np.isnan(out), np.abs(out), out)  # XLA's NaN from these is positive
    return [out]


# float8 types whose single NaN is the bit pattern of -0 (ml_dtypes reads it as a negative NaN)
_FNUZ_FLOATS = frozenset(d for d in dtypes.SUPPORTED if d.name.endswith("fnuz"))

convert_element_type_p = standard_primitive(
    "convert_element_type", _convert_abstract_eval, _convert_host
)
staging.memoize_abstract_eval(convert_element_type_p)


def _python_int_as(x, dtype):
    """A Python int converted to ``dtype`` as JAX does it, on the host: NumPy reads it (int64,
    or uint64 when larger) and it wraps around to ``dtype``. Converting it to the default
    integer type first would raise for ``2**40`` without x64, where JAX gives a value."""
    with np.errstate(all="ignore"):
        return np.asarray(x).astype(dtype)


def convert_element_type(operand, new_dtype):
    """``operand`` converted to ``new_dtype`` (canonicalized; 64-bit types need x64)."""
    new_dtype = user_dtype(new_dtype, "convert_element_type")
    if type(operand) is int:
        operand = _python_int_as(operand, new_dtype)
    aval = get_aval(operand)
    # A no-op on xform values; NumPy and Python inputs always become xform arrays (as JAX).
    if (
        aval.dtype == new_dtype
        and not aval.weak_type
        and not isinstance(operand, (int, float, builtins.complex, np.generic, np.ndarray))
    ):
        return operand
    return convert_element_type_p.bind(operand, new_dtype=new_dtype, weak_type=False)


def convert_folding_constants(x, dtype, weak_type=False):
    """``x`` as ``dtype`` (and ``weak_type``); concrete values convert right away, as JAX folds
    them, so a jaxpr shows a constant rather than a conversion."""
    if type(x) is int:
        x = _python_int_as(x, dtype)
    aval = get_aval(x)
    if aval.dtype == dtype and aval.weak_type == weak_type:
        return x
    if isinstance(x, Tracer):
        return convert_element_type_p.bind(x, new_dtype=dtype, weak_type=weak_type)
    with set_current_trace(eval_trace):
        return convert_element_type_p.bind(x, new_dtype=dtype, weak_type=weak_type)


def _bitcast_abstract_eval(x, *, new_dtype):
    a, b = x.dtype.itemsize, new_dtype.itemsize
    if dtypes.bool_ in (x.dtype, new_dtype):
        raise TypeError("bitcast_convert_type does not accept bool")
    if a == b:
        return [ShapedArray(x.shape, new_dtype)]
    if a > b:
        return [ShapedArray(x.shape + (a // b,), new_dtype)]
    if not x.shape or x.shape[-1] != b // a:
        raise ValueError(
            f"bitcast_convert_type from {x.dtype} to {new_dtype}: the last "
            f"dimension must be {b // a}, got shape {x.shape}"
        )
    return [ShapedArray(x.shape[:-1], new_dtype)]


def _bitcast_host(x, *, new_dtype):
    a, b = x.dtype.itemsize, new_dtype.itemsize
    # ascontiguousarray makes a 0-d array 1-d: every result is reshaped to its aval's shape.
    out = np.ascontiguousarray(x).view(new_dtype)
    if a > b:
        return [out.reshape(x.shape + (a // b,))]
    if a < b:
        return [out.reshape(x.shape[:-1])]
    return [out.reshape(x.shape)]


bitcast_convert_type_p = standard_primitive(
    "bitcast_convert_type", _bitcast_abstract_eval, _bitcast_host
)


def bitcast_convert_type(operand, new_dtype):
    """Reinterpret the bits of ``operand`` as ``new_dtype``."""
    return bitcast_convert_type_p.bind(operand, new_dtype=dtypes.canonicalize(new_dtype))


# --------------------------------------------------------------------------- more of lax
# clz, mulhi, square, complex, reduce_precision, copy and stage (the total-order comparisons
# are in comparisons.py); reciprocal and dtype are plain functions.


def _clz_host(x):
    # Binary search for the highest set bit of the two's complement pattern.
    bits = 8 * x.dtype.itemsize
    y = x.view(f"u{x.dtype.itemsize}")
    n = np.full(x.shape, bits, np.int64)
    shift = bits // 2
    while shift:
        t = y >> np.array(shift, y.dtype)
        hit = t != 0
        n = np.where(hit, n - shift, n)
        y = np.where(hit, t, y)
        shift //= 2
    return (n - (y != 0)).astype(x.dtype)


def _mulhi_host(x, y):
    # Python ints hold the full 2N-bit product; >> on them is arithmetic, as signed mulhi is.
    bits = 8 * x.dtype.itemsize
    prod = np.asarray(x, object) * np.asarray(y, object)
    high = np.vectorize(lambda p: p >> bits, otypes=[object])(prod)
    return np.asarray(high).astype(x.dtype)


def _square_host(x):
    with np.errstate(all="ignore"):
        return np.multiply(x, x)


def _complex_host(x, y):
    x, y = np.broadcast_arrays(x, y)
    out = np.empty(x.shape, _complex_dtype(x.dtype))
    out.real, out.imag = x, y  # not x + 1j * y: 1j * inf has a NaN real part
    return out


clz_p = elementwise("clz", INT, _clz_host)
mulhi_p = elementwise("mulhi", INT, _mulhi_host)
square_p = elementwise("square", NUMBER, _square_host)
complex_p = elementwise("complex", (_F32_F64,), _complex_host, out_dtype=_complex_dtype)


def clz(x):
    """The number of leading zero bits of each element of the integer array ``x``."""
    return clz_p.bind(x)


def mulhi(x, y, /):
    """The high N bits of the 2N-bit product ``x * y`` of N-bit integers (signed integers
    give the high half of the signed product)."""
    return mulhi_p.bind(x, y)


def square(x):
    """Elementwise ``x * x``."""
    return square_p.bind(x)


def reciprocal(x):
    """Elementwise ``1 / x``, as ``integer_pow(x, -1)`` (JAX's definition)."""
    return integer_pow(x, -1)


def complex(x, y):  # noqa: A001  (lax's name)
    """The complex number ``x + 1j * y`` from float32 or float64 ``x`` and ``y`` (complex64
    or complex128)."""
    return complex_p.bind(x, y)


def _reduce_precision_abstract_eval(x, *, exponent_bits, mantissa_bits):
    check_dtype("reduce_precision", x.dtype, (FLOAT,))
    if exponent_bits < 1:
        raise ValueError(f"reduce_precision: exponent_bits must be positive; got {exponent_bits}")
    if mantissa_bits < 0:
        raise ValueError(
            f"reduce_precision: mantissa_bits must be non-negative; got {mantissa_bits}"
        )
    return [x]


def _reduce_precision_host(x, *, exponent_bits, mantissa_bits):
    """XLA's ReducePrecision on the bits: the mantissa rounded to nearest even, then
    exponents beyond the reduced range made infinities and below it (subnormals included)
    signed zeros; NaNs pass through. XLA's CPU backend computes bfloat16 in float32."""
    dtype = x.dtype
    if dtype == dtypes.bfloat16:
        if exponent_bits >= 8 and mantissa_bits >= 23:  # a no-op XLA drops, NaN bits and all
            return [x]
        out = _reduce_precision_host(
            x.astype(np.float32), exponent_bits=exponent_bits, mantissa_bits=mantissa_bits
        )[0]
        return [out.astype(dtype)]
    nbits, src_mant = 8 * dtype.itemsize, np.finfo(dtype).nmant
    src_exp = nbits - 1 - src_mant
    if exponent_bits >= src_exp and mantissa_bits >= src_mant:
        return [x]
    unsigned = np.dtype(f"u{dtype.itemsize}")
    b, one = x.view(unsigned).astype(np.uint64), np.uint64(1)
    if mantissa_bits < src_mant:
        shift = np.uint64(src_mant - mantissa_bits)
        last = one << shift  # the lowest mantissa bit kept
        bias = ((b & last) >> shift) + (last >> one) - one  # ties go to the even neighbour
        b = ((b + bias) & ~(last - one)) & np.uint64((1 << nbits) - 1)
    if exponent_bits < src_exp:
        exp_mask = np.uint64(((1 << src_exp) - 1) << src_mant)
        src_bias, bias = (1 << (src_exp - 1)) - 1, (1 << (exponent_bits - 1)) - 1
        exponent, signed_zero = b & exp_mask, b & np.uint64(1 << (nbits - 1))
        b = np.where(
            exponent > np.uint64((src_bias + bias) << src_mant),
            signed_zero | exp_mask,
            np.where(exponent <= np.uint64((src_bias - bias) << src_mant), signed_zero, b),
        )
    return [np.where(np.isnan(x), x, b.astype(unsigned).view(dtype))]


reduce_precision_p = standard_primitive(
    "reduce_precision", _reduce_precision_abstract_eval, _reduce_precision_host
)


def _static_int(value, what):
    if isinstance(value, Tracer):
        raise errors.ConcretizationTypeError(
            f"{what} must be a concrete int, got a traced value {value.aval.str_short()}"
        )
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{what} must be an int, got {value!r}") from None


def reduce_precision(operand, exponent_bits, mantissa_bits):
    """``operand`` rounded to a float format with ``exponent_bits`` exponent and
    ``mantissa_bits`` mantissa bits (XLA's ReducePrecision), keeping its dtype.

    Example:
      >>> reduce_precision(np.float32(1 / 3), 8, 7)  # bfloat16's precision: 0.333984375
    """
    exponent_bits = _static_int(exponent_bits, "exponent_bits argument of lax.reduce_precision")
    mantissa_bits = _static_int(mantissa_bits, "mantissa_bits argument of lax.reduce_precision")
    return reduce_precision_p.bind(
        operand, exponent_bits=exponent_bits, mantissa_bits=mantissa_bits
    )


# copy: an explicit copy of a runtime array (jnp.array(x, copy=True)); never simplified away.
copy_p = standard_primitive("copy", lambda x: [x], lambda x: [np.array(x, copy=True)])

# stage: the identity that lifts a value (a Python scalar, a NumPy array) into the current
# trace. Eagerly it makes an xform array; a jaxpr shows no equation for it (see the staging
# rule below), as in JAX.
stage_p = standard_primitive("stage", lambda x: [x], lambda x: [np.asarray(x)])


def stage(x, /):
    """``x`` lifted into the current trace: an xform array eagerly, a traced value under
    ``jit``; logically the identity."""
    return stage_p.bind(x)


def _stage_staging_rule(trace, args, params):
    (x,) = args
    if isinstance(x, Tracer) and x._trace is trace:
        return [x]
    atom = trace.to_atom(x)  # a captured constant, or a literal that stays one (as in JAX)
    return [x if isinstance(atom, core.Literal) else staging.JaxprTracer(trace, atom, None)]


staging.staging_rules[stage_p] = _stage_staging_rule


def dtype(x):
    """The canonical dtype of ``x`` (an array, a scalar, a dtype or its name): JAX's
    ``dtypes.dtype``. Without x64, 64-bit types narrow; a dtype asked for by name or type
    (not a value's) warns as it does so."""
    if isinstance(x, (bool, int, float, builtins.complex)) and not isinstance(x, np.generic):
        return get_aval(x).dtype
    if hasattr(x, "dtype") and not isinstance(x, type):
        return dtypes.canonicalize(np.dtype(x.dtype))  # a value's dtype narrows silently
    try:
        np.dtype(x)
    except TypeError:
        raise TypeError(f"lax.dtype: cannot determine the dtype of {x!r}") from None
    return user_dtype(x, "dtype")  # Python's int/float/complex: the default types


# --------------------------------------------------------------------------- jvp rules

# Derivatives follow JAX's rules in jax/_src/lax/{lax,special}.py formula for formula (the
# conventions at kinks included: abs'(0) = 1, ties of max/min split the tangent half and half),
# so tangents agree with JAX's to the rounding of the kernels. Rules that need the result
# (exp, sqrt, tanh, ...) use it rather than recompute it: ``ad.defjvp_with_ans``.


def _const(x, value):
    """``value`` as a scalar of ``x``'s dtype (it broadcasts against any operand)."""
    return np.array(value, get_aval(x).dtype)


def _broadcast_to(t, shape):
    """A tangent of a rank-0 operand, broadcast to the output's shape."""
    return t if get_aval(t).shape == shape else add(t, _zeros(t, shape))


def _out_shape(*xs):
    return broadcast_elementwise_shapes("jvp", [get_aval(x) for x in xs])


def _abs_jvp(t, ans, x):
    if dtypes.is_complex(get_aval(x).dtype):
        r = _replace_zero(convert_element_type(ans, get_aval(x).dtype))
        return real(mul(t, div(conj(x), r)))
    return select(ge(x, _const(x, 0)), t, neg(t))


def _rem_jvp_rhs(t, x, y):
    q = div(x, y)
    return mul(neg(t), mul(sign(q), floor(abs(q))))


def _replace_zero(x):
    """``x`` with its zeros replaced by ones (``x``'s shape)."""
    return select(eq(x, _const(x, 0)), add(_zeros(x, get_aval(x).shape), _const(x, 1)), x)


def _integer_pow_jvp(t, x, *, y):
    if y == 0:
        return ad.Zero(get_aval(t))
    if y == 1:
        return t
    if y == 2:
        return mul(t, mul(_const(x, 2), x))
    return mul(t, mul(_const(x, y), integer_pow(x, y - 1)))


def _balanced_eq(x, z, y):
    """1 where ``x`` attains the max/min ``z`` alone, 1/2 where it ties with ``y``, else 0."""
    dtype = get_aval(z).dtype
    hit, tie = convert_element_type(eq(x, z), dtype), convert_element_type(eq(y, z), dtype)
    return div(hit, add(tie, _const(z, 1)))


def _pass_where(pred, t, x):
    """``t`` (broadcast to ``x``'s shape) where ``pred`` holds, zero elsewhere."""
    shape = get_aval(x).shape
    return select(pred, _broadcast_to(t, shape), _zeros(t, shape))


def _passed_tangent(t, out, negate):
    """The tangent of ``out = x ± y`` when only ``t`` (that of one operand) is nonzero.

    ``t`` itself (negated for the subtrahend) when it already has the output's tangent type:
    no zeros to build and add. Otherwise (a rank-0 operand broadcast, a weakly typed or Python
    scalar tangent) the other tangent becomes real zeros, as the op applied to both tangents
    gives exactly the type a linear op's tangent has."""
    t_aval = ad.aval_of(t)
    if not t_aval.weak_type and t_aval.shape == ad.aval_of(out).shape:
        return neg(t) if negate else t
    zeros = ad.instantiate(ad.Zero(ad.tangent_aval(ad.aval_of(out))))
    return sub(zeros, t) if negate else add(t, zeros)


def _additive_jvp(op, negate_y):
    """The JVP of ``add`` (``sub``: ``negate_y``): a lone nonzero tangent passes through."""

    def rule(primals, tangents):
        tx, ty = tangents
        out = op(*primals)
        if type(tx) is ad.Zero:
            if type(ty) is ad.Zero:
                return [out], [ad.Zero(ad.tangent_aval(ad.aval_of(out)))]
            return [out], [_passed_tangent(ty, out, negate_y)]
        if type(ty) is ad.Zero:
            return [out], [_passed_tangent(tx, out, False)]
        return [out], [op(tx, ty)]

    return rule


def _mul_jvp(primals, tangents):
    # ``ad.defjvp(mul_p, ...)`` spelled out: mul is the most frequent differentiated op.
    x, y = primals
    tx, ty = tangents
    out = mul(x, y)
    if type(tx) is ad.Zero:
        if type(ty) is ad.Zero:
            return [out], [ad.Zero(ad.tangent_aval(ad.aval_of(out)))]
        return [out], [mul(x, ty)]
    if type(ty) is ad.Zero:
        return [out], [mul(tx, y)]
    return [out], [ad.add_tangents(mul(tx, y), mul(x, ty))]


def _convert_element_type_jvp(primals, tangents, *, new_dtype, weak_type):
    (x,), (t,) = primals, tangents
    out = convert_element_type_p.bind(x, new_dtype=new_dtype, weak_type=weak_type)
    out_t_aval = ad.tangent_aval(get_aval(out))
    if out_t_aval.dtype == dtypes.float0 or type(t) is ad.Zero:
        return [out], [ad.Zero(out_t_aval)]
    return [out], [convert_element_type_p.bind(t, new_dtype=new_dtype, weak_type=weak_type)]


for _prim in (neg_p, real_p, imag_p, conj_p):
    ad.defjvp_linear(_prim)
ad.jvp_rules[add_p] = _additive_jvp(add, False)
ad.jvp_rules[sub_p] = _additive_jvp(sub, True)
for _prim in (
    sign_p,
    floor_p,
    ceil_p,
    round_p,
    not_p,
    population_count_p,
    nextafter_p,
    and_p,
    or_p,
    xor_p,
    shift_left_p,
    shift_right_logical_p,
    shift_right_arithmetic_p,
    bitcast_convert_type_p,
):
    ad.defjvp_zero(_prim)
ad.defjvp_with_ans(abs_p, _abs_jvp)


ad.jvp_rules[mul_p] = _mul_jvp
ad.defjvp(div_p, lambda t, x, y: div(t, y), lambda t, x, y: mul(mul(neg(t), x), integer_pow(y, -2)))
ad.defjvp(rem_p, lambda t, x, y: _broadcast_to(t, _out_shape(x, y)), _rem_jvp_rhs)


ad.defjvp(integer_pow_p, _integer_pow_jvp)
for _prim in (max_p, min_p):
    ad.defjvp_with_ans(
        _prim,
        lambda t, ans, x, y: mul(t, _balanced_eq(x, ans, y)),
        lambda t, ans, x, y: mul(t, _balanced_eq(y, ans, x)),
    )


ad.defjvp(
    clamp_p,
    lambda t, lo, x, hi: _pass_where(bitwise_and(gt(lo, x), lt(lo, hi)), t, x),
    lambda t, lo, x, hi: _pass_where(bitwise_and(gt(x, lo), lt(x, hi)), t, x),
    lambda t, lo, x, hi: _pass_where(lt(hi, x), t, x),
)
ad.jvp_rules[convert_element_type_p] = _convert_element_type_jvp
for _prim in (
    clz_p,
    mulhi_p,
):
    ad.defjvp_zero(_prim)
ad.defjvp(square_p, lambda t, x: mul(t, mul(_const(x, 2), x)))
for _prim in (complex_p, reduce_precision_p, copy_p, stage_p):
    ad.defjvp_linear(_prim)

# --------------------------------------------------------------------------- transpose rules

# The linear primitives of the family, as the JVP rules above apply them to tangents: add,
# sub, neg, real, imag, conj (defjvp_linear); mul in either operand and div in its numerator (the
# other operand a residual); select_n in its cases; convert_element_type between inexact
# dtypes. Cotangents of complex values are transposes, not adjoints (as in JAX): the
# transpose of ``t -> c * t`` is ``ct -> c * ct``.

_unbroadcast = ad.unbroadcast
_Undefined = transpose.UndefinedPrimal


def _known(prim, y):
    """``y``, the operand that must be a known value for ``prim`` to be linear in the other."""
    if transpose.is_undefined(y):
        raise ValueError(
            f"{prim.name} of two linear operands is not linear, so it cannot be transposed"
        )
    return y


# add, sub, neg and mul are most of the equations a backward pass transposes, so their rules
# are written out rather than made by ``transpose.deftranspose``: no closure, loop or call
# per operand.


def _add_transpose(ct, x, y):
    if type(ct) is ad.Zero:
        return [
            ad.Zero(x.aval) if type(x) is _Undefined else None,
            ad.Zero(y.aval) if type(y) is _Undefined else None,
        ]
    return [
        _unbroadcast(x.aval, ct) if type(x) is _Undefined else None,
        _unbroadcast(y.aval, ct) if type(y) is _Undefined else None,
    ]


def _sub_transpose(ct, x, y):
    if type(ct) is ad.Zero:
        return [
            ad.Zero(x.aval) if type(x) is _Undefined else None,
            ad.Zero(y.aval) if type(y) is _Undefined else None,
        ]
    return [
        _unbroadcast(x.aval, ct) if type(x) is _Undefined else None,
        _unbroadcast(y.aval, neg(ct)) if type(y) is _Undefined else None,
    ]


def _neg_transpose(ct, x):
    if type(x) is not _Undefined:
        return [None]
    return [ad.Zero(x.aval) if type(ct) is ad.Zero else neg(ct)]


def _mul_transpose(ct, x, y):
    if type(x) is _Undefined:
        if type(ct) is ad.Zero:
            return [ad.Zero(x.aval), ad.Zero(y.aval) if type(y) is _Undefined else None]
        if type(y) is _Undefined:
            _known(mul_p, y)  # raises: mul of two linear operands is not linear
        return [_unbroadcast(x.aval, mul(ct, y)), None]
    if type(y) is _Undefined:
        return [None, ad.Zero(y.aval) if type(ct) is ad.Zero else _unbroadcast(y.aval, mul(x, ct))]
    return [None, None]


def _imag_transpose(ct, x):
    # The cotangent of z for imag(z) is -1j * ct = complex(0, -ct).
    dtype = x.aval.dtype
    return mul(convert_element_type(neg(ct), dtype), np.array(1j, dtype))


def _conj_transpose(ct, x):
    # conj also takes real operands (turning them complex): their cotangent is the real part.
    return conj(ct) if dtypes.is_complex(x.aval.dtype) else real(ct)


def _convert_element_type_transpose(ct, x, *, new_dtype, weak_type):
    # The JVP makes a linear conversion only between inexact dtypes (the others have float0
    # or zero tangents); complex -> real cotangents keep the real part.
    aval = x.aval
    if get_aval(ct).dtype == aval.dtype and not aval.weak_type:
        return ct
    return convert_element_type_p.bind(ct, new_dtype=aval.dtype, weak_type=aval.weak_type)


transpose.transpose_rules[add_p] = _add_transpose
transpose.transpose_rules[sub_p] = _sub_transpose
transpose.transpose_rules[neg_p] = _neg_transpose
transpose.transpose_rules[mul_p] = _mul_transpose
transpose.deftranspose(
    div_p, lambda ct, x, y: _unbroadcast(x.aval, div(ct, _known(div_p, y))), None
)
transpose.deftranspose(real_p, lambda ct, x: convert_element_type(ct, x.aval.dtype))
transpose.deftranspose(imag_p, _imag_transpose)
transpose.deftranspose(conj_p, _conj_transpose)
transpose.deftranspose(convert_element_type_p, _convert_element_type_transpose)


# complex(x, y) = x + 1j * y: x gets the real part of ct, y minus its imaginary part.
transpose.deftranspose(
    complex_p,
    lambda ct, x, y: _unbroadcast(x.aval, real(ct)),
    lambda ct, x, y: _unbroadcast(y.aval, neg(imag(ct))),
)
transpose.deftranspose(
    reduce_precision_p, lambda ct, x, **params: reduce_precision_p.bind(ct, **params)
)
transpose.deftranspose(copy_p, lambda ct, x: copy_p.bind(ct))
transpose.deftranspose(stage_p, lambda ct, x: ct)

# --------------------------------------------------------------------------- batching rules

# Unary ops act on each element wherever the batch dimension sits; n-ary ops broadcast their
# operands against each other (``defbroadcasting`` lines up the batch dimensions).
for _prim in (
    neg_p,
    sign_p,
    floor_p,
    ceil_p,
    round_p,
    abs_p,
    not_p,
    population_count_p,
    real_p,
    imag_p,
    conj_p,
    integer_pow_p,
    convert_element_type_p,
    clz_p,
    square_p,
    reduce_precision_p,
    copy_p,
    stage_p,
):
    batching.defvectorized(_prim)
for _prim in (
    add_p,
    sub_p,
    mul_p,
    div_p,
    rem_p,
    max_p,
    min_p,
    nextafter_p,
    and_p,
    or_p,
    xor_p,
    shift_left_p,
    shift_right_logical_p,
    shift_right_arithmetic_p,
    mulhi_p,
    complex_p,
):
    batching.defbroadcasting(_prim)


def _clamp_batch(axis, args, dims):
    args, bdim = _full_shape_operands(axis, args, dims, scalar_ok=(0, 2))
    return [clamp_p.bind(*args)], [bdim]


def _bitcast_convert_type_batch(axis, args, dims, *, new_dtype):
    (x,), (d,) = args, dims
    aval = get_aval(x)
    if aval.dtype.itemsize < new_dtype.itemsize:
        # Bitcasting to a wider type consumes the last dimension: it must not be the batch
        # dimension, and a scalar example has none to give (the unbatched error).
        if aval.ndim == 1:
            _bitcast_abstract_eval(ShapedArray((), aval.dtype), new_dtype=new_dtype)
        if d == aval.ndim - 1:
            x, d = batching.moveaxis(x, d, 0), 0
    return [bitcast_convert_type_p.bind(x, new_dtype=new_dtype)], [d]


batching.batch_rules[clamp_p] = _clamp_batch
batching.batch_rules[bitcast_convert_type_p] = _bitcast_convert_type_batch

# --------------------------------------------------------------------------- add_any

# add_any sums two tangents or two cotangents of one value (JAX's ``add_jaxvals_p``, printed
# ``add_any``): ``ad.add_tangents`` binds it, so JVP rules, the backward pass and the tape
# accumulate with it, and jaxprs of derivatives print as JAX's. Unlike ``add`` it takes
# operands of exactly one shape and dtype (no rank-0 broadcasting). Its values are
# ``add``'s, bit for bit, and so is its weak type: weak when both operands are. (JAX gives
# the first operand's, but JAX types a loop's carry cotangents by the cotangents it gets,
# xform by the carry: a weakly typed carry's would turn gradients weak.)


def add_any(x, y):
    """The sum of two tangents (or cotangents) of one type."""
    return add_any_p.bind(x, y)


def _add_any_abstract_eval(x, y):
    if x.shape != y.shape or x.dtype != y.dtype:
        raise TypeError(
            "add_any requires operands of one shape and dtype, got "
            f"{x.str_short()} and {y.str_short()}"
        )
    return [x if x.weak_type <= y.weak_type else y]


# The host impl is add's own: the same NumPy call, half floats computed alike.
add_any_p = standard_primitive("add_any", _add_any_abstract_eval, core.host_impls[add_p])
ad.defjvp_linear(add_any_p)


def _add_any_transpose(ct, x, y):
    # The cotangent goes to both operands as it is: they have the result's type.
    return [
        (ad.Zero(a.aval) if type(ct) is ad.Zero else ct) if type(a) is _Undefined else None
        for a in (x, y)
    ]


transpose.transpose_rules[add_any_p] = _add_any_transpose


def _add_any_batch(axis, args, dims):
    # Both operands batched at one dimension: the second's, or the first's if it has none.
    (x, y), (dx, dy) = args, dims
    d = dx if dy is not_mapped else dy
    x = batching.move_or_broadcast(x, dx, d, axis.size)
    y = batching.move_or_broadcast(y, dy, d, axis.size)
    return [add_any_p.bind(x, y)], [d]


batching.batch_rules[add_any_p] = _add_any_batch
ad.tangent_ops["add"] = add_any

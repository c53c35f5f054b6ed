"""Elementwise primitives: unary and binary math, comparisons, bitwise ops, select, clamp,
and dtype conversions.

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
    INEXACT,
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
from xform.pytree import ArrayNode

__all__ = [
    "neg",
    "sign",
    "floor",
    "ceil",
    "round",
    "is_finite",
    "abs",
    "exp",
    "exp2",
    "log",
    "log1p",
    "expm1",
    "sqrt",
    "rsqrt",
    "cbrt",
    "sin",
    "cos",
    "tan",
    "asin",
    "acos",
    "atan",
    "sinh",
    "cosh",
    "tanh",
    "asinh",
    "acosh",
    "atanh",
    "logistic",
    "erf",
    "erfc",
    "erf_inv",
    "lgamma",
    "digamma",
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
    "pow",
    "max",
    "min",
    "atan2",
    "nextafter",
    "bitwise_and",
    "bitwise_or",
    "bitwise_xor",
    "shift_left",
    "shift_right_logical",
    "shift_right_arithmetic",
    "eq",
    "ne",
    "lt",
    "le",
    "gt",
    "ge",
    "integer_pow",
    "select_n",
    "select",
    "clamp",
    "convert_element_type",
    "bitcast_convert_type",
    "clz",
    "mulhi",
    "square",
    "reciprocal",
    "complex",
    "reduce_precision",
    "AccuracyMode",
    "Tolerance",
    "stage",
    "dtype",
]

# Host functions need no np.errstate: dispatch runs every host impl in a context where NumPy
# does not warn (XLA silently gives inf/nan for log(0), 1/0, ...).


def _bool(dtype):
    return dtypes.bool_


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


class Tolerance:
    """The tolerances a unary op's implementation must meet (the ``accuracy=`` argument of
    ``exp``, ``log``, ``sin``, ...): at most two of ``atol``, ``rtol`` and ``ulps``."""

    def __init__(self, atol=0.0, rtol=0.0, ulps=0):
        if atol < 0.0 or rtol < 0.0 or ulps < 0:
            raise ValueError(
                "lax.Tolerance: tolerances must be non-negative, got "
                f"atol={atol}, rtol={rtol}, ulps={ulps}"
            )
        if atol == 0.0 and rtol == 0.0 and ulps == 0:
            raise ValueError("lax.Tolerance: at least one of atol, rtol or ulps must be set")
        self.atol = atol
        self.rtol = rtol
        self.ulps = ulps


class AccuracyMode(enum.Enum):
    """The implementation a unary op should use (the ``accuracy=`` argument of ``exp``, ...)."""

    HIGHEST = 1
    DEFAULT = 2


def _check_accuracy(name, accuracy):
    """Accept an ``accuracy=`` argument as JAX does. XLA's CPU backend has one implementation
    of each of these ops and JAX's results there do not depend on it, so it is checked, not
    passed on (the op's jaxpr shows no ``accuracy`` parameter)."""
    if not isinstance(accuracy, (Tolerance, AccuracyMode)):
        raise NotImplementedError(
            f"lax.{name}: accuracy {accuracy!r} not supported; expected "
            "a lax.Tolerance, a lax.AccuracyMode or None"
        )


# --------------------------------------------------------------------------- unary


def _round_host(x, rounding_method):
    if rounding_method == RoundingMethod.TO_NEAREST_EVEN:
        return np.round(x)
    t = np.trunc(x)
    return np.where(np.abs(x - t) >= 0.5, t + np.sign(x), t)


def _exp2_host(x):
    # XLA computes exp2(x) as exp(log(2) * x) with the product rounded to x's dtype (JAX's
    # lowering, which ours follows); rounding it here too keeps half floats in agreement.
    log2 = np.asarray(np.log(2), x.dtype)
    if x.dtype in (dtypes.float16, dtypes.bfloat16):
        prod = (x.astype(np.float32) * log2.astype(np.float32)).astype(x.dtype)
        return [np.exp(prod.astype(np.float32)).astype(x.dtype)]
    return [np.asarray(np.exp(log2 * x))]


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
is_finite_p = elementwise("is_finite", (FLOAT,), np.isfinite, out_dtype=_bool)
abs_p = elementwise("abs", (FLOAT, COMPLEX, SIGNED), np.abs, out_dtype=_real_dtype)
exp_p = elementwise("exp", INEXACT, np.exp)
exp2_p = standard_primitive("exp2", elementwise_abstract_eval("exp2", INEXACT), _exp2_host)
log_p = elementwise("log", INEXACT, np.log)
log1p_p = elementwise("log1p", INEXACT, np.log1p)
expm1_p = elementwise("expm1", INEXACT, np.expm1)
sqrt_p = elementwise("sqrt", INEXACT, np.sqrt)
rsqrt_p = elementwise("rsqrt", INEXACT, lambda x: 1 / np.sqrt(x))
cbrt_p = elementwise("cbrt", (FLOAT,), np.cbrt)
sin_p = elementwise("sin", INEXACT, np.sin)
cos_p = elementwise("cos", INEXACT, np.cos)
tan_p = elementwise("tan", INEXACT, np.tan)
asin_p = elementwise("asin", INEXACT, np.arcsin)
acos_p = elementwise("acos", INEXACT, np.arccos)
atan_p = elementwise("atan", INEXACT, np.arctan)
sinh_p = elementwise("sinh", INEXACT, np.sinh)
cosh_p = elementwise("cosh", INEXACT, np.cosh)
tanh_p = elementwise("tanh", INEXACT, np.tanh)
asinh_p = elementwise("asinh", INEXACT, np.arcsinh)
acosh_p = elementwise("acosh", INEXACT, np.arccosh)
atanh_p = elementwise("atanh", INEXACT, np.arctanh)
logistic_p = elementwise("logistic", INEXACT, lambda x: 1 / (1 + np.exp(-x)))
# No NumPy version of these special functions: eager calls run the XLA kernel, as JAX does.
erf_p = elementwise("erf", (FLOAT,))
erfc_p = elementwise("erfc", (FLOAT,))
erf_inv_p = elementwise("erf_inv", (FLOAT,))
lgamma_p = elementwise("lgamma", (FLOAT,))
digamma_p = elementwise("digamma", (FLOAT,))
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


def is_finite(x):
    return is_finite_p.bind(x)


def abs(x):  # noqa: A001  (lax's name)
    return abs_p.bind(x)


def exp(x, *, accuracy=None):
    if accuracy is not None:  # checked only when given: these ops are on the hot path
        _check_accuracy("exp", accuracy)
    return exp_p.bind(x)


def exp2(x, *, accuracy=None):
    if accuracy is not None:
        _check_accuracy("exp2", accuracy)
    return exp2_p.bind(x)


def log(x, *, accuracy=None):
    if accuracy is not None:
        _check_accuracy("log", accuracy)
    return log_p.bind(x)


def log1p(x, *, accuracy=None):
    if accuracy is not None:
        _check_accuracy("log1p", accuracy)
    return log1p_p.bind(x)


def expm1(x, *, accuracy=None):
    if accuracy is not None:
        _check_accuracy("expm1", accuracy)
    return expm1_p.bind(x)


def sqrt(x, *, accuracy=None):
    if accuracy is not None:
        _check_accuracy("sqrt", accuracy)
    return sqrt_p.bind(x)


def rsqrt(x, *, accuracy=None):
    if accuracy is not None:
        _check_accuracy("rsqrt", accuracy)
    return rsqrt_p.bind(x)


def cbrt(x, *, accuracy=None):
    if accuracy is not None:
        _check_accuracy("cbrt", accuracy)
    return cbrt_p.bind(x)


def sin(x, *, accuracy=None):
    if accuracy is not None:
        _check_accuracy("sin", accuracy)
    return sin_p.bind(x)


def cos(x, *, accuracy=None):
    if accuracy is not None:
        _check_accuracy("cos", accuracy)
    return cos_p.bind(x)


def tan(x, *, accuracy=None):
    if accuracy is not None:
        _check_accuracy("tan", accuracy)
    return tan_p.bind(x)


def asin(x):
    return asin_p.bind(x)


def acos(x):
    return acos_p.bind(x)


def atan(x):
    return atan_p.bind(x)


def sinh(x):
    return sinh_p.bind(x)


def cosh(x):
    return cosh_p.bind(x)


def tanh(x, *, accuracy=None):
    if accuracy is not None:
        _check_accuracy("tanh", accuracy)
    return tanh_p.bind(x)


def asinh(x):
    return asinh_p.bind(x)


def acosh(x):
    return acosh_p.bind(x)


def atanh(x):
    return atanh_p.bind(x)


def logistic(x, *, accuracy=None):
    if accuracy is not None:
        _check_accuracy("logistic", accuracy)
    return logistic_p.bind(x)


def erf(x):
    return erf_p.bind(x)


def erfc(x):
    return erfc_p.bind(x)


def erf_inv(x):
    return erf_inv_p.bind(x)


def lgamma(x):
    return lgamma_p.bind(x)


def digamma(x):
    return digamma_p.bind(x)


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


def _pow_host(x, y):
    return np.power(x, y.astype(x.dtype) if y.dtype != x.dtype else y)


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


def _atan2_host(x, y):
    if x.dtype.kind != "c":
        return np.arctan2(x, y)
    # NumPy has no complex arctan2: XLA's definition, -i log((y + i x) / sqrt(y^2 + x^2)).
    dtype = x.dtype
    x, y = x.astype(np.complex128), y.astype(np.complex128)  # then rounded once
    return np.asarray(-1j * np.log((y + 1j * x) / np.sqrt(y * y + x * x))).astype(dtype)


atan2_p = elementwise("atan2", INEXACT, _atan2_host)


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
eq_p = elementwise("eq", ANY, np.equal, out_dtype=_bool)
ne_p = elementwise("ne", ANY, np.not_equal, out_dtype=_bool)
_ORDERED = (FLOAT, INT[0], INT[1], BOOL)
lt_p = elementwise("lt", _ORDERED, np.less, out_dtype=_bool)
le_p = elementwise("le", _ORDERED, np.less_equal, out_dtype=_bool)
gt_p = elementwise("gt", _ORDERED, np.greater, out_dtype=_bool)
ge_p = elementwise("ge", _ORDERED, np.greater_equal, out_dtype=_bool)


def _pow_abstract_eval(x, y):
    check_dtype("pow", x.dtype, INEXACT)
    if y.dtype != x.dtype and not dtypes.is_int(y.dtype):
        raise TypeError(
            f"pow: the exponent must have the base's dtype ({x.dtype}) or an "
            f"integer dtype, got {y.dtype}"
        )
    shape = broadcast_elementwise_shapes("pow", (x, y))
    return [ShapedArray(shape, x.dtype, x.weak_type and y.weak_type)]


pow_p = standard_primitive("pow", _pow_abstract_eval, lambda x, y: [np.asarray(_pow_host(x, y))])


def add(x, y):
    """Elementwise ``x + y``; operands must share a dtype (see ``xform.numpy.add``)."""
    return add_p.bind(x, y)


def sub(x, y):
    return sub_p.bind(x, y)


def mul(x, y):
    return mul_p.bind(x, y)


def div(x, y):
    """``x / y``; integers round toward zero."""
    return div_p.bind(x, y)


def rem(x, y):
    """Remainder with the sign of ``x`` (C's fmod)."""
    return rem_p.bind(x, y)


def pow(x, y):  # noqa: A001  (lax's name)
    return pow_p.bind(x, y)


def max(x, y):  # noqa: A001  (lax's name)
    return max_p.bind(x, y)


def min(x, y):  # noqa: A001  (lax's name)
    return min_p.bind(x, y)


def atan2(x, y):
    return atan2_p.bind(x, y)


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


def eq(x, y):
    return eq_p.bind(x, y)


def ne(x, y):
    return ne_p.bind(x, y)


def lt(x, y):
    return lt_p.bind(x, y)


def le(x, y):
    return le_p.bind(x, y)


def gt(x, y):
    return gt_p.bind(x, y)


def ge(x, y):
    return ge_p.bind(x, y)


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


# --------------------------------------------------------------------------- select_n, clamp


def _select_n_abstract_eval(which, *cases):
    if not cases:
        raise ValueError("select_n needs at least one case")
    if which.dtype != dtypes.bool_ and not dtypes.is_int(which.dtype):
        raise TypeError(f"select_n: `which` must be boolean or integer, got {which.dtype}")
    if which.dtype == dtypes.bool_ and len(cases) > 2:
        raise TypeError(
            f"select_n: a boolean `which` selects between at most 2 cases, got {len(cases)}"
        )
    first = cases[0]
    for c in cases[1:]:
        if c.shape != first.shape or c.dtype != first.dtype:
            raise TypeError(
                f"select_n: cases must have the same shape and dtype, got "
                f"{', '.join(a.str_short() for a in cases)}"
            )
    if which.shape and which.shape != first.shape:
        raise TypeError(
            f"select_n: `which` must be scalar or have the cases' shape "
            f"{first.shape}, got {which.shape}"
        )
    return [ShapedArray(first.shape, first.dtype, all(c.weak_type for c in cases))]


def _select_n_host(which, *cases):
    if which.dtype == np.bool_:
        return [np.where(which, cases[-1], cases[0])]
    return [np.choose(which, cases, mode="clip")]


select_n_p = standard_primitive("select_n", _select_n_abstract_eval, _select_n_host)


def select_n(which, *cases):
    """``cases[which]`` elementwise; ``which`` is bool (at most 2 cases) or an integer."""
    if cases and isinstance(cases[0], ArrayNode):
        return _select_elements(which, cases)
    return select_n_p.bind(which, *cases)


def select(pred, on_true, on_false):
    """``on_true`` where ``pred`` else ``on_false``."""
    return select_n(pred, on_false, on_true)


def _select_elements(which, cases):
    # Arrays whose elements are words of engine data (typed PRNG keys: ``_data`` holds each
    # key's words in a trailing axis) select whole elements, as JAX's select_n on extended
    # dtypes: ``which`` is broadcast over the words.
    datas = [c._data for c in cases]
    shape = get_aval(datas[0]).shape
    rank = get_aval(which).ndim
    if rank:
        which = batching.batch_ops["broadcast_in_dim"](which, shape, tuple(range(rank)))
    return cases[0]._with_data(select_n_p.bind(which, *datas))


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
# clz, mulhi, square, complex, reduce_precision, the total-order comparisons (JAX's sort
# comparator uses them), copy and stage; reciprocal and dtype are plain functions.


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


def _total_order_key(x):
    """Integers ordered as XLA's TOTALORDER orders floats: -NaN < -inf < ... < -0 < +0 < ...
    < inf < NaN. The bits of a negative float have their magnitude bits flipped."""
    if x.dtype.kind != "f" and x.dtype.name != "bfloat16":
        return x
    bits = x.view(f"i{x.dtype.itemsize}")
    magnitude = np.array(np.iinfo(bits.dtype).max, bits.dtype)
    return bits ^ ((bits >> np.array(8 * x.dtype.itemsize - 1, bits.dtype)) & magnitude)


def _eq_to_host(x, y):
    if dtypes.is_complex(x.dtype):
        return _eq_to_host(np.real(x), np.real(y)) & _eq_to_host(np.imag(x), np.imag(y))
    return _total_order_key(x) == _total_order_key(y)


clz_p = elementwise("clz", INT, _clz_host)
mulhi_p = elementwise("mulhi", INT, _mulhi_host)
square_p = elementwise("square", NUMBER, _square_host)
complex_p = elementwise("complex", (_F32_F64,), _complex_host, out_dtype=_complex_dtype)
eq_to_p = standard_primitive(
    "eq_to", elementwise_abstract_eval("eq_to", ANY, _bool), lambda x, y: [_eq_to_host(x, y)]
)
le_to_p = standard_primitive(
    "le_to",
    elementwise_abstract_eval("le_to", _ORDERED, _bool),
    lambda x, y: [_total_order_key(x) <= _total_order_key(y)],
)
lt_to_p = standard_primitive(
    "lt_to",
    elementwise_abstract_eval("lt_to", _ORDERED, _bool),
    lambda x, y: [_total_order_key(x) < _total_order_key(y)],
)


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


def _square(x):
    return mul(x, x)


def _zeros(x, shape):
    """Zeros of ``x``'s dtype and the given shape."""
    return ad.instantiate(ad.Zero(ShapedArray(shape, get_aval(x).dtype)))


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


def _pow_jvp_lhs(t, ans, x, y):
    dtype, shape = get_aval(x).dtype, get_aval(ans).shape
    if dtypes.is_int(get_aval(y).dtype):
        yf = convert_element_type(y, dtype)
        jac = select(
            eq(yf, _const(yf, 0)),
            _zeros(x, shape),
            mul(_replace_zero(yf), pow(x, sub(yf, _const(yf, 1)))),
        )
    else:
        jac = mul(y, pow(x, sub(y, _const(y, 1))))
    return mul(t, jac)


def _pow_jvp_rhs(t, ans, x, y):
    return mul(t, mul(log(_replace_zero(x)), ans))


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


def _select_n_jvp(primals, tangents):
    which, *cases = primals
    out = select_n(which, *cases)
    case_tangents = tangents[1:]
    if all(type(t) is ad.Zero for t in case_tangents):
        return [out], [ad.Zero(ad.tangent_aval(get_aval(out)))]
    case_tangents = [ad.instantiate(t) for t in case_tangents]
    return [out], [select_n(which, *case_tangents)]


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
    is_finite_p,
    not_p,
    population_count_p,
    nextafter_p,
    and_p,
    or_p,
    xor_p,
    shift_left_p,
    shift_right_logical_p,
    shift_right_arithmetic_p,
    eq_p,
    ne_p,
    lt_p,
    le_p,
    gt_p,
    ge_p,
    bitcast_convert_type_p,
):
    ad.defjvp_zero(_prim)
ad.defjvp_with_ans(abs_p, _abs_jvp)
ad.defjvp_with_ans(exp_p, lambda t, ans, x: mul(t, ans))
ad.defjvp_with_ans(exp2_p, lambda t, ans, x: mul(_const(x, np.log(2)), mul(t, ans)))
ad.defjvp(log_p, div)  # t / x
ad.defjvp(log1p_p, lambda t, x: div(t, add(x, _const(x, 1))))
ad.defjvp_with_ans(expm1_p, lambda t, ans, x: mul(t, add(ans, _const(ans, 1))))
ad.defjvp_with_ans(sqrt_p, lambda t, ans, x: mul(t, div(_const(x, 0.5), ans)))
ad.defjvp_with_ans(rsqrt_p, lambda t, ans, x: mul(t, mul(_const(x, -0.5), div(ans, x))))
ad.defjvp_with_ans(cbrt_p, lambda t, ans, x: mul(t, mul(_const(x, 1 / 3), integer_pow(ans, -2))))
ad.defjvp(sin_p, lambda t, x: mul(t, cos(x)))
ad.defjvp(cos_p, lambda t, x: neg(mul(t, sin(x))))
ad.defjvp_with_ans(tan_p, lambda t, ans, x: mul(t, add(_const(x, 1), _square(ans))))
ad.defjvp(asin_p, lambda t, x: mul(t, rsqrt(sub(_const(x, 1), _square(x)))))
ad.defjvp(acos_p, lambda t, x: mul(t, neg(rsqrt(sub(_const(x, 1), _square(x))))))
ad.defjvp(atan_p, lambda t, x: div(t, add(_const(x, 1), _square(x))))
ad.defjvp(sinh_p, lambda t, x: mul(t, cosh(x)))
ad.defjvp(cosh_p, lambda t, x: mul(t, sinh(x)))
ad.defjvp_with_ans(tanh_p, lambda t, ans, x: mul(add(t, mul(t, ans)), sub(_const(x, 1), ans)))
ad.defjvp(asinh_p, lambda t, x: mul(t, rsqrt(add(_square(x), _const(x, 1)))))
ad.defjvp(acosh_p, lambda t, x: mul(t, rsqrt(sub(_square(x), _const(x, 1)))))
ad.defjvp(
    atanh_p, lambda t, x: mul(integer_pow(add(_const(x, 1), x), -1), div(t, sub(_const(x, 1), x)))
)
ad.defjvp_with_ans(logistic_p, lambda t, ans, x: mul(t, mul(ans, sub(_const(ans, 1), ans))))
ad.defjvp(erf_p, lambda t, x: mul(_const(x, 2 / np.sqrt(np.pi)), mul(t, exp(neg(_square(x))))))
ad.defjvp(erfc_p, lambda t, x: mul(_const(x, -2 / np.sqrt(np.pi)), mul(t, exp(neg(_square(x))))))
ad.defjvp_with_ans(
    erf_inv_p, lambda t, ans, x: mul(_const(x, np.sqrt(np.pi) / 2), mul(t, exp(_square(ans))))
)
ad.defjvp(lgamma_p, lambda t, x: mul(t, digamma(x)))
# digamma's JVP, polygamma(1, x), is registered in special.py, where polygamma lives.
ad.jvp_rules[mul_p] = _mul_jvp
ad.defjvp(div_p, lambda t, x, y: div(t, y), lambda t, x, y: mul(mul(neg(t), x), integer_pow(y, -2)))
ad.defjvp(rem_p, lambda t, x, y: _broadcast_to(t, _out_shape(x, y)), _rem_jvp_rhs)
ad.defjvp_with_ans(pow_p, _pow_jvp_lhs, _pow_jvp_rhs)
ad.defjvp(integer_pow_p, _integer_pow_jvp)
for _prim in (max_p, min_p):
    ad.defjvp_with_ans(
        _prim,
        lambda t, ans, x, y: mul(t, _balanced_eq(x, ans, y)),
        lambda t, ans, x, y: mul(t, _balanced_eq(y, ans, x)),
    )
ad.defjvp(
    atan2_p,
    lambda t, x, y: mul(t, div(y, add(_square(x), _square(y)))),
    lambda t, x, y: mul(t, div(neg(x), add(_square(x), _square(y)))),
)
ad.jvp_rules[select_n_p] = _select_n_jvp
ad.defjvp(
    clamp_p,
    lambda t, lo, x, hi: _pass_where(bitwise_and(gt(lo, x), lt(lo, hi)), t, x),
    lambda t, lo, x, hi: _pass_where(bitwise_and(gt(x, lo), lt(x, hi)), t, x),
    lambda t, lo, x, hi: _pass_where(lt(hi, x), t, x),
)
ad.jvp_rules[convert_element_type_p] = _convert_element_type_jvp
for _prim in (clz_p, mulhi_p, eq_to_p, le_to_p, lt_to_p):
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


def _select_n_transpose(ct, which, *cases):
    if transpose.is_undefined(which):
        raise ValueError(
            "select_n is not linear in `which`, so it cannot be transposed with respect to it"
        )
    if type(ct) is ad.Zero:
        return [None] + [ad.Zero(c.aval) if transpose.is_undefined(c) else None for c in cases]
    zeros = _zeros(ct, get_aval(ct).shape)
    # select_n again, not a comparison per case: the cotangent of each case is ct exactly
    # where the forward select_n took that case, whatever it does with `which` out of range.
    return [None] + [
        select_n(which, *[ct if j == i else zeros for j in range(len(cases))])
        if transpose.is_undefined(c)
        else None
        for i, c in enumerate(cases)
    ]


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
transpose.transpose_rules[select_n_p] = _select_n_transpose
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
    is_finite_p,
    abs_p,
    exp_p,
    exp2_p,
    log_p,
    log1p_p,
    expm1_p,
    sqrt_p,
    rsqrt_p,
    cbrt_p,
    sin_p,
    cos_p,
    tan_p,
    asin_p,
    acos_p,
    atan_p,
    sinh_p,
    cosh_p,
    tanh_p,
    asinh_p,
    acosh_p,
    atanh_p,
    logistic_p,
    erf_p,
    erfc_p,
    erf_inv_p,
    lgamma_p,
    digamma_p,
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
    pow_p,
    max_p,
    min_p,
    atan2_p,
    nextafter_p,
    and_p,
    or_p,
    xor_p,
    shift_left_p,
    shift_right_logical_p,
    shift_right_arithmetic_p,
    eq_p,
    ne_p,
    lt_p,
    le_p,
    gt_p,
    ge_p,
    mulhi_p,
    complex_p,
    eq_to_p,
    le_to_p,
    lt_to_p,
):
    batching.defbroadcasting(_prim)


def _full_shape_operands(axis, args, dims, scalar_ok):
    """Operands for ``select_n`` and ``clamp``, which take one shape, that of operand 1 (the
    first case; clamp's ``x``), except those in ``scalar_ok`` (the predicate; the bounds),
    which may also be rank 0. There is no size-1 broadcasting as in ``add``: every operand
    is batched at one dimension ``bdim`` at the full shape, except unmapped rank-0 ones in
    ``scalar_ok``, which broadcast as they are. Returns ``(operands, bdim)``."""
    ranks = [get_aval(x).ndim - (d is not not_mapped) for x, d in zip(args, dims, strict=True)]
    rank = ranks[1]
    # The batch dimension of a mapped full-shape operand, so that it need not move.
    bdim = next(
        (d for d, r in zip(dims, ranks, strict=True) if d is not not_mapped and r == rank), 0
    )
    full = get_aval(args[1]).shape
    if dims[1] is not not_mapped:
        full = full[: dims[1]] + full[dims[1] + 1 :]
    batched_shape = full[:bdim] + (axis.size,) + full[bdim:]
    out = []
    for i, (x, d, r) in enumerate(zip(args, dims, ranks, strict=True)):
        if d is not_mapped and r == 0 and i in scalar_ok:
            out.append(x)
        elif d is not_mapped:
            out.append(batching.broadcast_batch(x, axis.size, bdim))
        elif r == rank:
            out.append(batching.moveaxis(x, d, bdim))
        elif r == 0 and i in scalar_ok:  # a mapped scalar: one value per example
            out.append(batching.batch_ops["broadcast_in_dim"](x, batched_shape, (bdim,)))
        else:
            out.append(x)  # a wrong rank: the abstract eval says so
    return out, bdim


def _select_n_batch(axis, args, dims):
    args, bdim = _full_shape_operands(axis, args, dims, scalar_ok=(0,))
    return [select_n_p.bind(*args)], [bdim]


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


batching.batch_rules[select_n_p] = _select_n_batch
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

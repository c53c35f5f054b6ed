"""Elementwise functions (NumPy's ufuncs), each a composition of lax primitives.

Operands are checked, promoted and broadcast by ``_promote``; integer inputs to float
functions become the default float, as in jax.numpy. Algorithms that must agree with
jax.numpy bit for bit (floor_divide, remainder, integer power, hypot, logaddexp) follow it.
"""

import math
import operator

import numpy as np

from xform import dtypes
from xform.api.batching import vmap
from xform.api.jit import eval_shape
from xform.core import Primitive, ShapedArray, Tracer, eval_trace, trace_state
from xform.custom_derivatives import custom_jvp
from xform.lax import _names as lax
from xform.numpy._promote import (
    ACCEPTED_DTYPES,
    asarray,
    aval_of,
    broadcast_shapes,
    broadcast_to_shape,
    check_arraylike,
    promote_args,
    promote_args_inexact,
    promote_args_numeric,
    promote_dtypes_inexact,
    promote_dtypes_numeric,
    promote_shapes,
    result_type,
)
from xform.numpy._staged import staged
from xform.numpy._vectorize import vectorize
from xform.runtime.array import Array

__all__ = [
    "add",
    "subtract",
    "multiply",
    "divide",
    "true_divide",
    "floor_divide",
    "remainder",
    "mod",
    "fmod",
    "divmod",
    "power",
    "pow",
    "float_power",
    "negative",
    "positive",
    "abs",
    "absolute",
    "fabs",
    "sign",
    "sqrt",
    "rsqrt",
    "cbrt",
    "exp",
    "exp2",
    "expm1",
    "log",
    "log2",
    "log10",
    "log1p",
    "sin",
    "cos",
    "tan",
    "arcsin",
    "asin",
    "arccos",
    "acos",
    "arctan",
    "atan",
    "arctan2",
    "atan2",
    "sinh",
    "cosh",
    "tanh",
    "arcsinh",
    "asinh",
    "arccosh",
    "acosh",
    "arctanh",
    "atanh",
    "floor",
    "ceil",
    "round",
    "around",
    "trunc",
    "rint",
    "isfinite",
    "isnan",
    "isinf",
    "isposinf",
    "isneginf",
    "signbit",
    "maximum",
    "minimum",
    "fmax",
    "fmin",
    "logical_and",
    "logical_or",
    "logical_xor",
    "logical_not",
    "bitwise_and",
    "bitwise_or",
    "bitwise_xor",
    "bitwise_not",
    "bitwise_invert",
    "invert",
    "left_shift",
    "right_shift",
    "bitwise_left_shift",
    "bitwise_right_shift",
    "equal",
    "not_equal",
    "less",
    "less_equal",
    "greater",
    "greater_equal",
    "real",
    "imag",
    "conj",
    "conjugate",
    "square",
    "reciprocal",
    "hypot",
    "deg2rad",
    "rad2deg",
    "degrees",
    "radians",
    "nextafter",
    "logaddexp",
    "logaddexp2",
    "heaviside",
    "sinc",
    "copysign",
    "isclose",
    "ufunc",
    "frompyfunc",
]


# --------------------------------------------------------------------------- helpers


def const(x, value):
    """``value`` as a rank-0 array of ``x``'s dtype, as ``lax._const``: weakly typed only
    when ``x`` is a weakly typed scalar (so ``deg2rad(2.0)`` stays weak, arrays stay strong)."""
    aval = aval_of(x)
    with np.errstate(all="ignore"):
        host = np.array(value, aval.dtype)
    host.flags.writeable = False
    return Array(ShapedArray((), aval.dtype, aval.weak_type and not aval.shape), host)


def strong_const(x, value):
    """``value`` as a strongly typed rank-0 array of ``x``'s dtype (``_constant_like``)."""
    dtype = aval_of(x).dtype
    with np.errstate(all="ignore"):
        host = np.array(value, dtype)
    host.flags.writeable = False
    return Array(ShapedArray((), dtype, False), host)


def weak_const(x, value):
    """``value`` as a weakly typed rank-0 array of ``x``'s dtype (a Python scalar operand)."""
    dtype = aval_of(x).dtype
    host = np.array(value, dtype)
    host.flags.writeable = False
    return Array(ShapedArray((), dtype, True), host)


def to_bool(x):
    return x if aval_of(x).dtype == dtypes.bool_ else lax.ne(x, const(x, 0))


def full_like_aval(x, value, dtype=None):
    """An array of ``x``'s shape filled with ``value`` (of ``dtype``, else ``x``'s)."""
    aval = aval_of(x)
    if dtype is None:
        dtype, weak = aval.dtype, aval.weak_type
    else:
        weak = False
    host = np.array(value, dtype)
    host.flags.writeable = False
    scalar = Array(ShapedArray((), dtype, weak), host)
    return lax.broadcast_in_dim(scalar, aval.shape, ()) if aval.shape else scalar


@staged("_where")
def where_(condition, x, y):
    """``select`` with NumPy broadcasting and promotion (the 3-argument ``where``)."""
    check_arraylike("where", condition, x, y)
    x, y = promote_args("where", x, y)
    condition = asarray(condition)
    condition = to_bool(condition)
    condition, x, y = promote_shapes("where", condition, x, y)
    # select_n needs cases of one shape; only the predicate may stay rank-0.
    shape = next((aval_of(a).shape for a in (condition, x, y) if aval_of(a).shape), ())
    if shape:
        x = lax.broadcast_in_dim(x, shape, ()) if not aval_of(x).shape else x
        y = lax.broadcast_in_dim(y, shape, ()) if not aval_of(y).shape else y
    return lax.select(condition, x, y)


def _is_int_or_bool(dtype):
    return dtypes.is_int(dtype) or dtype == dtypes.bool_


# The ufuncs below that are one primitive get it rather than its lax function: given an
# Array with nothing to promote and no trace active, they apply it eagerly as ``bind``
# would (``eval_trace.apply``), without bind's Python call.


def _one_arg(op, promote, name):
    """A unary ufunc: ``op`` is a primitive or a lax function."""
    accepted = ACCEPTED_DTYPES[promote]
    prim = op if isinstance(op, Primitive) else None
    lax_fn = op.bind if prim is not None else op

    def fn(x, /):
        if type(x) is Array and x.aval.dtype in accepted:  # eager fast path: nothing to promote
            if prim is not None and trace_state.trace is eval_trace:
                return eval_trace.apply(prim, (x,), {})[0]
            return lax_fn(x)
        return lax_fn(*promote(name, x))

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Elementwise ``{name}`` (jax.numpy semantics)."
    return fn


def _two_args(op, promote, name, bool_fn=None):
    """A binary ufunc: ``op`` is a primitive or a lax function; ``bool_fn`` replaces it for
    bool operands (add is or)."""
    accepted = ACCEPTED_DTYPES[promote]
    if bool_fn is not None:
        accepted = accepted - {dtypes.bool_}
    prim = op if isinstance(op, Primitive) else None
    lax_fn = op.bind if prim is not None else op

    def fn(x1, x2, /):
        if type(x1) is Array and type(x2) is Array:  # eager fast path: nothing to promote
            aval = x1.aval
            if (aval is x2.aval or aval == x2.aval) and aval.dtype in accepted:
                if prim is not None and trace_state.trace is eval_trace:
                    return eval_trace.apply(prim, (x1, x2), {})[0]
                return lax_fn(x1, x2)
        x1, x2 = promote(name, x1, x2, full=False)  # the primitive broadcasts size-1 dims
        if bool_fn is not None and x1.aval.dtype.kind == "b":
            return bool_fn(x1, x2)
        return lax_fn(x1, x2)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Elementwise ``{name}`` with NumPy broadcasting and jax.numpy promotion."
    return fn


# --------------------------------------------------------------------------- arithmetic

# Bool add/multiply are or/and.
add = _two_args(lax.add_p, promote_args, "add", lax.bitwise_or)
multiply = _two_args(lax.mul_p, promote_args, "multiply", lax.bitwise_and)
subtract = _two_args(lax.sub_p, promote_args, "subtract")
true_divide = _two_args(lax.div_p, promote_args_inexact, "true_divide")
divide = true_divide
maximum = _two_args(lax.max_p, promote_args, "maximum")
minimum = _two_args(lax.min_p, promote_args, "minimum")
arctan2 = _two_args(lax.atan2_p, promote_args_inexact, "arctan2")
atan2 = arctan2
nextafter = _two_args(lax.nextafter_p, promote_args_inexact, "nextafter")
negative = _one_arg(lax.neg_p, promote_args, "negative")
sign = _one_arg(lax.sign_p, promote_args, "sign")


def positive(x, /):
    """``+x``: ``x`` itself."""
    return promote_args("positive", x)[0]


@staged("floor_divide")
def floor_divide(x1, x2, /):
    """``x1 // x2``, rounding toward minus infinity (Python semantics)."""
    x1, x2 = promote_args_numeric("floor_divide", x1, x2, full=False)
    dtype = aval_of(x1).dtype
    if dtypes.is_unsigned_int(dtype):
        return lax.div(x1, x2)
    if dtypes.is_int(dtype):
        quotient = lax.div(x1, x2)
        select = lax.bitwise_and(
            lax.ne(lax.sign(x1), lax.sign(x2)), lax.ne(lax.rem(x1, x2), const(x1, 0))
        )
        return where_(select, lax.sub(quotient, weak_const(quotient, 1)), quotient)
    if dtypes.is_complex(dtype):
        raise TypeError("floor_divide does not support complex inputs")
    return _float_divmod(x1, x2)[0]


def _float_divmod(x1, x2):
    # As CPython's float_divmod (floatobject.c).
    mod = lax.rem(x1, x2)
    x1_corrected = where_(lax.eq(x2, const(x2, 0)), x1, lax.sub(x1, mod))
    div = lax.div(x1_corrected, x2)
    ind = lax.bitwise_and(lax.ne(mod, const(mod, 0)), lax.ne(lax.sign(x2), lax.sign(mod)))
    mod = lax.select(ind, lax.add(mod, x2), mod)
    div = lax.select(ind, lax.sub(div, weak_const(div, 1)), div)
    return lax.round(div, lax.RoundingMethod.TO_NEAREST_EVEN), mod


@staged("remainder")
def remainder(x1, x2, /):
    """``x1 % x2`` with the sign of the divisor (Python semantics)."""
    x1, x2 = promote_args_numeric("remainder", x1, x2, full=False)
    zero = const(x1, 0)
    if dtypes.is_int(aval_of(x2).dtype):  # x2's ones keep its weak type (JAX's lax._ones)
        one = weak_const(x2, 1) if aval_of(x2).weak_type else const(x2, 1)
        x2 = where_(lax.eq(x2, const(x2, 0)), one, x2)
    trunc_mod = lax.rem(x1, x2)
    trunc_mod_not_zero = lax.ne(trunc_mod, zero)
    do_plus = lax.bitwise_and(
        lax.ne(lax.lt(trunc_mod, zero), lax.lt(x2, const(x2, 0))), trunc_mod_not_zero
    )
    return lax.select(do_plus, lax.add(trunc_mod, x2), trunc_mod)


mod = remainder


@staged("divmod")
def divmod(x1, x2, /):  # noqa: A001  (NumPy's name)
    """``(floor_divide(x1, x2), remainder(x1, x2))``."""
    x1, x2 = promote_args_numeric("divmod", x1, x2, full=False)
    if dtypes.is_int(aval_of(x1).dtype):
        return floor_divide(x1, x2), remainder(x1, x2)
    return _float_divmod(x1, x2)


@staged("fmod")
def fmod(x1, x2, /):
    """Remainder with the sign of the dividend (C's fmod)."""
    check_arraylike("fmod", x1, x2)
    if dtypes.is_int(result_type(x1, x2)):  # as jnp: bools are not guarded
        x2 = asarray(x2)
        x2 = where_(lax.eq(x2, const(x2, 0)), const(x2, 1), x2)
    return lax.rem(*promote_args_numeric("fmod", x1, x2, full=False))


def power(x1, x2, /):
    """``x1 ** x2``; integer powers are exact, a concrete integer exponent uses
    ``integer_pow``."""
    check_arraylike("power", x1, x2)
    if type(x2) is int:  # the common ``x ** 2``, without NumPy calls to classify the exponent
        (x1,) = promote_dtypes_numeric(x1)
        return lax.integer_pow(x1, x2)
    if (
        not isinstance(x2, Tracer)
        and not isinstance(x2, (float, complex))
        and (
            np.ndim(x2) == 0
            and _is_int_or_bool(np.result_type(np.asarray(x2)))
            and not isinstance(x2, bool)
        )
    ):
        (x1,) = promote_dtypes_numeric(x1)
        return lax.integer_pow(x1, int(x2))
    x1, x2 = promote_shapes("power", asarray(x1), asarray(x2), full=False)
    x1_, x2_ = promote_args_numeric("power", x1, x2, full=False)
    if _is_int_or_bool(aval_of(x1_).dtype):
        return _pow_int_int(x1_, x2_)
    d1, d2 = aval_of(x1).dtype, aval_of(x2).dtype
    if dtypes.is_inexact(d1) and dtypes.is_int(d2):
        return lax.pow(x1, x2)
    return lax.pow(x1_, x2_)


pow = power  # noqa: A001  (NumPy's name)


def _pow_int_int(x1, x2):
    # Binary exponentiation over 6 bits, as jax.numpy: more would overflow for any x1 > 1.
    zero, one = const(x2, 0), const(x2, 1)
    acc = where_(
        lax.bitwise_and(lax.eq(x1, const(x1, 0)), lax.ne(x2, zero)), const(x1, 0), const(x1, 1)
    )
    if aval_of(x1).shape and not aval_of(acc).shape:
        acc = lax.broadcast_in_dim(acc, aval_of(x1).shape, ())
    for _ in range(6):
        acc = where_(lax.bitwise_and(x2, one), lax.mul(acc, x1), acc)
        x1 = lax.mul(x1, x1)
        x2 = lax.shift_right_logical(x2, one)
    return acc


def float_power(x1, x2, /):
    """``x1 ** x2`` computed in floating point."""
    return lax.pow(*promote_args_inexact("float_power", x1, x2, full=False))


def absolute(x, /):
    """``|x|``; the magnitude of complex numbers is real."""
    check_arraylike("absolute", x)
    x = asarray(x)
    dtype = aval_of(x).dtype
    if dtype == dtypes.bool_ or dtypes.is_unsigned_int(dtype):
        return x
    return lax.abs(x)


abs = absolute  # noqa: A001  (NumPy's name)


def fabs(x, /):
    """``|x|`` for real inputs, as a float."""
    (x,) = promote_args_inexact("fabs", x)
    if dtypes.is_complex(aval_of(x).dtype):
        raise TypeError("ufunc 'fabs' does not support complex dtypes")
    return lax.abs(x)


def square(x, /):
    """``x * x``."""
    check_arraylike("square", x)
    (x,) = promote_dtypes_numeric(x)
    return lax.integer_pow(x, 2)


def reciprocal(x, /):
    """``1 / x`` as a float."""
    check_arraylike("reciprocal", x)
    (x,) = promote_dtypes_inexact(x)
    return lax.integer_pow(x, -1)


# --------------------------------------------------------------------------- transcendental

sqrt = _one_arg(lax.sqrt_p, promote_args_inexact, "sqrt")
rsqrt = _one_arg(lax.rsqrt_p, promote_args_inexact, "rsqrt")
cbrt = _one_arg(lax.cbrt_p, promote_args_inexact, "cbrt")
exp = _one_arg(lax.exp_p, promote_args_inexact, "exp")
exp2 = _one_arg(lax.exp2_p, promote_args_inexact, "exp2")
expm1 = _one_arg(lax.expm1_p, promote_args_inexact, "expm1")
log = _one_arg(lax.log_p, promote_args_inexact, "log")
log1p = _one_arg(lax.log1p_p, promote_args_inexact, "log1p")
sin = _one_arg(lax.sin_p, promote_args_inexact, "sin")
cos = _one_arg(lax.cos_p, promote_args_inexact, "cos")
tan = _one_arg(lax.tan_p, promote_args_inexact, "tan")
arcsin = asin = _one_arg(lax.asin_p, promote_args_inexact, "arcsin")
arccos = acos = _one_arg(lax.acos_p, promote_args_inexact, "arccos")
arctan = atan = _one_arg(lax.atan_p, promote_args_inexact, "arctan")
sinh = _one_arg(lax.sinh_p, promote_args_inexact, "sinh")
cosh = _one_arg(lax.cosh_p, promote_args_inexact, "cosh")
tanh = _one_arg(lax.tanh_p, promote_args_inexact, "tanh")
arcsinh = asinh = _one_arg(lax.asinh_p, promote_args_inexact, "arcsinh")
arctanh = atanh = _one_arg(lax.atanh_p, promote_args_inexact, "arctanh")


@staged("arccosh")
def arccosh(x, /):
    """Inverse hyperbolic cosine."""
    result = lax.acosh(*promote_args_inexact("arccosh", x))
    if dtypes.is_complex(aval_of(result).dtype):
        re = lax.real(result)
        result = where_(lax.lt(re, const(re, 0)), lax.neg(result), result)
    return result


acosh = arccosh


def log2(x, /):
    """Base-2 logarithm."""
    (x,) = promote_args_inexact("log2", x)
    return lax.div(lax.log(x), lax.log(strong_const(x, 2)))


def log10(x, /):
    """Base-10 logarithm."""
    (x,) = promote_args_inexact("log10", x)
    if dtypes.is_complex(aval_of(x).dtype):  # as JAX: a complex division by log(10)
        return lax.div(lax.log(x), lax.log(strong_const(x, 10)))
    return lax.mul(lax.log(x), strong_const(x, 0.4342944819032518))


def deg2rad(x, /):
    """Degrees to radians."""
    (x,) = promote_args_inexact("deg2rad", x)
    return lax.mul(x, const(x, np.pi / 180))


def rad2deg(x, /):
    """Radians to degrees."""
    (x,) = promote_args_inexact("rad2deg", x)
    return lax.mul(x, const(x, 180 / np.pi))


radians, degrees = deg2rad, rad2deg


@staged("hypot")
def hypot(x1, x2, /):
    """``sqrt(x1**2 + x2**2)`` without overflow."""
    x1, x2 = promote_args_inexact("hypot", x1, x2, full=False)
    if dtypes.is_complex(aval_of(x1).dtype):
        raise ValueError(
            "hypot is not well defined for complex-valued inputs; convert to "
            "real values first, e.g. with abs(x)"
        )
    x1, x2 = lax.abs(x1), lax.abs(x2)
    idx_inf = lax.bitwise_or(isposinf(x1), isposinf(x2))
    x1, x2 = maximum(x1, x2), minimum(x1, x2)
    safe = where_(lax.eq(x1, const(x1, 0)), const(x1, 1), x1)
    ratio = lax.div(x2, safe)
    x = where_(
        lax.eq(x1, const(x1, 0)),
        x1,
        lax.mul(x1, lax.sqrt(lax.add(const(x1, 1), lax.integer_pow(ratio, 2)))),
    )
    return where_(idx_inf, const(x, np.inf), x)


def logaddexp(x1, x2, /):
    """``log(exp(x1) + exp(x2))`` without overflow; its derivative is JAX's (each input's
    share ``exp(x - out)``, half each where they are equal)."""
    x1, x2 = promote_args_inexact("logaddexp", x1, x2, full=False)
    return _logaddexp(x1, x2)


def logaddexp2(x1, x2, /):
    """``log2(exp2(x1) + exp2(x2))`` without overflow; derivative as ``logaddexp``'s."""
    x1, x2 = promote_args_inexact("logaddexp2", x1, x2, full=False)
    return _logaddexp2(x1, x2)


def _log_add(x1, x2, exp, log_scale):
    # max + log1p(exp(-|x1 - x2|)) (scaled for base 2); x1 + x2 where the difference is NaN
    # (both infinite, or a NaN).
    amax = lax.max(x1, x2)
    if dtypes.is_complex(aval_of(amax).dtype):
        return _complex_log_add(x1, x2, amax, exp, log_scale)
    delta = lax.sub(x1, x2)
    tail = lax.log1p(exp(lax.neg(lax.abs(delta))))
    if log_scale is not None:
        tail = lax.mul(const(amax, log_scale), tail)
    return lax.select(lax.ne(delta, delta), lax.add(x1, x2), lax.add(amax, tail))


def _complex_log_add(x1, x2, amax, exp, log_scale):
    # JAX's complex form: max + log1p(exp(x1 + x2 - 2 max)), the imaginary part wrapped into
    # one period of the log ([-pi, pi), scaled for base 2).
    tail = lax.log1p(exp(lax.sub(lax.add(x1, x2), lax.mul(amax, const(amax, 2)))))
    if log_scale is not None:
        tail = lax.mul(const(amax, log_scale), tail)
    out = lax.add(amax, tail)
    half = np.pi * (1 if log_scale is None else log_scale)
    imag = lax.imag(out)
    wrapped = lax.rem(lax.add(imag, const(imag, half)), const(imag, 2 * half))
    wrapped = lax.select(
        lax.lt(wrapped, const(imag, 0)), lax.add(wrapped, const(imag, 2 * half)), wrapped
    )
    return lax.complex(lax.real(out), lax.sub(wrapped, const(imag, half)))


@custom_jvp
def _logaddexp(x1, x2):
    return _log_add(x1, x2, lax.exp, None)


@custom_jvp
def _logaddexp2(x1, x2):
    return _log_add(x1, x2, lax.exp2, 1 / np.log(2))


def _log_add_jvp(fn, exp):
    # A plain derivative of the max/abs formula gives 0 to one side at a tie; this is
    # JAX's rule, with +inf replaced by 0 so that exp(inf - inf) is not NaN.
    def jvp(primals, tangents):
        (x1, x2), (t1, t2) = primals, tangents
        out = fn(x1, x2)
        finite_out = _posinf_to_zero(out)
        share1 = exp(lax.sub(_posinf_to_zero(x1), finite_out))
        share2 = exp(lax.sub(_posinf_to_zero(x2), finite_out))
        return out, lax.add(lax.mul(t1, share1), lax.mul(t2, share2))

    return jvp


def _posinf_to_zero(x):
    return lax.select(lax.eq(x, const(x, np.inf)), lax.full_like(x, 0), x)


_logaddexp.defjvp(_log_add_jvp(_logaddexp, lax.exp))
_logaddexp2.defjvp(_log_add_jvp(_logaddexp2, lax.exp2))


@staged("heaviside")
def heaviside(x1, x2, /):
    """0 where ``x1 < 0``, ``x2`` where ``x1 == 0``, 1 where ``x1 > 0``."""
    check_arraylike("heaviside", x1, x2)
    x1, x2 = promote_shapes("heaviside", *promote_dtypes_inexact(x1, x2), full=False)
    zero = const(x1, 0)
    return where_(
        lax.lt(x1, zero),
        zero,
        where_(lax.gt(x1, zero), const(x1, 1), where_(lax.ne(x1, x1), x1, x2)),
    )


@staged("sinc")
def sinc(x, /):
    """``sin(pi x) / (pi x)``, 1 at 0."""
    check_arraylike("sinc", x)
    (x,) = promote_dtypes_inexact(x)
    eq_zero = lax.eq(x, const(x, 0))
    pi_x = lax.mul(const(x, np.pi), x)
    safe_pi_x = where_(eq_zero, const(x, 1), pi_x)
    return where_(eq_zero, const(x, 1), lax.div(lax.sin(safe_pi_x), safe_pi_x))


@staged("copysign")
def copysign(x1, x2, /):
    """``|x1|`` with the sign of ``x2``."""
    x1, x2 = promote_args_inexact("copysign", x1, x2, full=False)
    if dtypes.is_complex(aval_of(x1).dtype):
        raise TypeError("copysign does not support complex-valued inputs")
    return where_(signbit(x2), lax.neg(lax.abs(x1)), lax.abs(x1))


# --------------------------------------------------------------------------- rounding


def _integers_pass_through(name, rounding):
    """A rounding function: integers and bools are returned as they are."""

    def fn(x, /):
        check_arraylike(name, x)
        x = asarray(x)
        if _is_int_or_bool(aval_of(x).dtype):
            return x
        return rounding(*promote_args_inexact(name, x))

    fn.__name__ = fn.__qualname__ = name
    return fn


floor = _integers_pass_through("floor", lax.floor)
floor.__doc__ = "Round down; integers pass through."
ceil = _integers_pass_through("ceil", lax.ceil)
ceil.__doc__ = "Round up; integers pass through."
trunc = staged("trunc")(
    _integers_pass_through(
        "trunc", lambda x: where_(lax.lt(x, const(x, 0)), lax.ceil(x), lax.floor(x))
    )
)
trunc.__doc__ = "Round toward zero; integers pass through."


@staged("round", static_argnames=("decimals",))
def round(a, decimals=0, out=None):  # noqa: A001  (NumPy's name)
    """Round half to even, to ``decimals`` decimal places."""
    check_arraylike("round", a)
    if out is not None:
        raise NotImplementedError("The 'out' argument to xform.numpy.round is not supported.")
    decimals = operator.index(decimals)  # TypeError for a float, as JAX
    a = asarray(a)
    dtype = aval_of(a).dtype
    if _is_int_or_bool(dtype):
        if decimals < 0:
            raise NotImplementedError("integer round is not implemented for decimals < 0")
        return a
    if dtypes.is_complex(dtype):  # each part, as JAX
        return lax.complex(round(lax.real(a), decimals), round(lax.imag(a), decimals))
    if decimals == 0:
        return lax.round(a, lax.RoundingMethod.TO_NEAREST_EVEN)
    if decimals > np.log10(float(dtypes.finfo(dtype).max)):
        return a
    x = lax.convert_element_type(a, dtypes.float32) if dtype == dtypes.float16 else a
    factor = const(x, 10**decimals)
    out = lax.div(lax.round(lax.mul(x, factor), lax.RoundingMethod.TO_NEAREST_EVEN), factor)
    return lax.convert_element_type(out, dtype) if dtype == dtypes.float16 else out


@staged("around", static_argnames=("decimals",))
def around(a, decimals=0, out=None):
    """``round``, NumPy's other name for it."""
    return round(a, decimals, out)


@staged("rint")
def rint(x, /):
    """Round half to even; integers become the default float."""
    check_arraylike("rint", x)
    x = asarray(x)
    dtype = aval_of(x).dtype
    if _is_int_or_bool(dtype):
        return lax.convert_element_type(x, dtypes.default_float())
    if dtypes.is_complex(dtype):  # each part, as JAX
        return lax.complex(rint(lax.real(x)), rint(lax.imag(x)))
    return lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN)


# --------------------------------------------------------------------------- predicates


def isfinite(x, /):
    """True where ``x`` is neither infinite nor NaN."""
    check_arraylike("isfinite", x)
    x = asarray(x)
    dtype = aval_of(x).dtype
    if dtypes.is_float(dtype):
        return lax.is_finite(x)
    if dtypes.is_complex(dtype):
        return lax.bitwise_and(lax.is_finite(lax.real(x)), lax.is_finite(lax.imag(x)))
    return full_like_aval(x, True, dtypes.bool_)


@staged("isinf")
def isinf(x, /):
    """True where ``x`` is plus or minus infinity."""
    check_arraylike("isinf", x)
    x = asarray(x)
    dtype = aval_of(x).dtype
    if dtypes.is_float(dtype):
        return lax.eq(lax.abs(x), strong_const(x, np.inf))
    if dtypes.is_complex(dtype):
        re, im = lax.real(x), lax.imag(x)
        return lax.bitwise_or(
            lax.eq(lax.abs(re), strong_const(re, np.inf)),
            lax.eq(lax.abs(im), strong_const(im, np.inf)),
        )
    return full_like_aval(x, False, dtypes.bool_)


def _isposneginf(infinity, x):
    check_arraylike("isposinf", x)
    x = asarray(x)
    dtype = aval_of(x).dtype
    if dtypes.is_complex(dtype):
        raise ValueError("isposinf/isneginf are not well defined for complex-valued inputs")
    if dtypes.is_float(dtype):
        return lax.eq(x, strong_const(x, infinity))
    return full_like_aval(x, False, dtypes.bool_)


def isposinf(x, /):
    """True where ``x`` is plus infinity."""
    return _isposneginf(np.inf, x)


def isneginf(x, /):
    """True where ``x`` is minus infinity."""
    return _isposneginf(-np.inf, x)


def isnan(x, /):
    """True where ``x`` is NaN."""
    check_arraylike("isnan", x)
    x = asarray(x)
    return lax.ne(x, x)


@staged("signbit")
def signbit(x, /):
    """True where the sign bit of ``x`` is set (also for -0.0)."""
    (x,) = promote_args("signbit", x)
    dtype = aval_of(x).dtype
    if dtypes.is_int(dtype):
        return lax.lt(x, strong_const(x, 0))
    if dtype == dtypes.bool_:
        return full_like_aval(x, False, dtypes.bool_)
    if not dtypes.is_float(dtype):
        raise ValueError(f"signbit: expected a real input, got {dtype}")
    bits = dtype.itemsize * 8
    int_type = np.dtype(f"int{bits}")
    x = lax.bitcast_convert_type(x, int_type)
    return lax.convert_element_type(lax.shift_right_logical(x, const(x, bits - 1)), dtypes.bool_)


def _broadcast_pair(name, x1, x2):
    """``x1, x2`` as arrays broadcast to one shape; a rank-0 one is left for lax."""
    check_arraylike(name, x1, x2)
    s1, s2 = np.shape(x1), np.shape(x2)
    if s1 == s2 or not s1 or not s2:
        return x1, x2
    shape = broadcast_shapes(s1, s2, name=name)
    return broadcast_to_shape(asarray(x1), shape), broadcast_to_shape(asarray(x2), shape)


@staged("fmax")
def fmax(x1, x2):
    """Elementwise maximum, ignoring NaNs."""
    x1, x2 = _broadcast_pair("fmax", x1, x2)
    mask = lax.bitwise_or(greater(x1, x2), isnan(x2))
    return where_(mask, x1, x2)


@staged("fmin")
def fmin(x1, x2):
    """Elementwise minimum, ignoring NaNs."""
    x1, x2 = _broadcast_pair("fmin", x1, x2)
    mask = lax.bitwise_or(less(x1, x2), isnan(x2))
    return where_(mask, x1, x2)


# --------------------------------------------------------------------------- logical, bitwise


def _logical(lax_fn, name):
    def fn(x1, x2, /):
        return lax_fn(*map(to_bool, promote_args(name, x1, x2, full=False)))

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Elementwise ``{name}`` of the truth values."
    return fn


logical_and = _logical(lax.bitwise_and, "logical_and")
logical_or = _logical(lax.bitwise_or, "logical_or")
logical_xor = _logical(lax.bitwise_xor, "logical_xor")


def logical_not(x, /):
    """Elementwise ``not``."""
    return lax.bitwise_not(*map(to_bool, promote_args("logical_not", x)))


bitwise_and = _two_args(lax.bitwise_and, promote_args, "bitwise_and")
bitwise_or = _two_args(lax.bitwise_or, promote_args, "bitwise_or")
bitwise_xor = _two_args(lax.bitwise_xor, promote_args, "bitwise_xor")
bitwise_not = invert = bitwise_invert = _one_arg(lax.bitwise_not, promote_args, "invert")
left_shift = bitwise_left_shift = _two_args(lax.shift_left, promote_args_numeric, "left_shift")


def right_shift(x1, x2, /):
    """``x1 >> x2``: arithmetic for signed integers, logical for unsigned."""
    x1, x2 = promote_args_numeric("right_shift", x1, x2, full=False)
    if dtypes.is_unsigned_int(aval_of(x1).dtype):
        return lax.shift_right_logical(x1, x2)
    return lax.shift_right_arithmetic(x1, x2)


bitwise_right_shift = right_shift


# --------------------------------------------------------------------------- comparisons

equal = _two_args(lax.eq, promote_args, "equal")
not_equal = _two_args(lax.ne, promote_args, "not_equal")


def _ordering(lax_fn):
    """``lax_fn`` extended to complex operands as jax.numpy orders them: by real part, then
    by imaginary part."""

    def compare(x, y):
        if not dtypes.is_complex(x.aval.dtype):
            return lax_fn(x, y)
        x_re, y_re = lax.real(x), lax.real(y)
        return lax.select(lax.eq(x_re, y_re), lax_fn(lax.imag(x), lax.imag(y)), lax_fn(x_re, y_re))

    return compare


less = _two_args(_ordering(lax.lt), promote_args, "less")
less_equal = _two_args(_ordering(lax.le), promote_args, "less_equal")
greater = _two_args(_ordering(lax.gt), promote_args, "greater")
greater_equal = _two_args(_ordering(lax.ge), promote_args, "greater_equal")


@staged("isclose", static_argnames=("equal_nan",))
def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """True where ``|a - b| <= atol + rtol * |b|``."""
    a, b = promote_args("isclose", a, b, full=False)
    a, b = promote_args_inexact("isclose", a, b, full=False)
    dtype = aval_of(a).dtype
    if dtypes.is_complex(dtype):
        dtype = np.finfo(dtype).dtype
    rtol = asarray(rtol, dtype)
    atol = asarray(atol, dtype)
    both_nan = logical_and(isnan(a), isnan(b))
    check_fin = isfinite(b)
    in_range = lax.le(lax.abs(lax.sub(a, b)), lax.add(atol, lax.mul(rtol, lax.abs(b))))
    out = logical_or(lax.eq(a, b), logical_and(check_fin, in_range))
    return logical_or(out, both_nan) if equal_nan else out


# --------------------------------------------------------------------------- complex parts


def real(val, /):
    """The real part (``val`` itself for real inputs)."""
    check_arraylike("real", val)
    val = asarray(val)
    return lax.real(val) if dtypes.is_complex(aval_of(val).dtype) else val


def imag(val, /):
    """The imaginary part (zeros for real inputs)."""
    check_arraylike("imag", val)
    val = asarray(val)
    if dtypes.is_complex(aval_of(val).dtype):
        return lax.imag(val)
    return full_like_aval(val, 0)


def conjugate(x, /):
    """The complex conjugate (``x`` itself for real inputs)."""
    check_arraylike("conjugate", x)
    x = asarray(x)
    return lax.conj(x) if dtypes.is_complex(aval_of(x).dtype) else x


conj = conjugate


# --------------------------------------------------------------------------- ufunc objects


class ufunc:  # noqa: N801  (NumPy's name)
    """A universal function, as ``jax.numpy.ufunc``: callable elementwise, with ``nin``,
    ``nout``, ``nargs``, ``identity`` and the methods ``reduce``, ``accumulate``, ``at``,
    ``reduceat`` and ``outer``.

    A call goes straight to the wrapped function. The methods use a dedicated implementation
    where one is registered (``add.reduce`` is ``sum``; ``_reductions`` registers those) and
    otherwise a generic loop over the binary function, as JAX does.

    Example:
      >>> xform.numpy.add.reduce(xform.numpy.arange(4))
      Array(6, dtype=int32)
    """

    def __init__(
        self,
        func,
        /,
        nin,
        nout,
        *,
        name=None,
        nargs=None,
        identity=None,
        call=None,
        reduce=None,
        accumulate=None,
        at=None,
        reduceat=None,
    ):
        self.__doc__ = func.__doc__
        self.__name__ = self.__qualname__ = name or func.__name__
        self._func = func
        self.nin, self.nout = operator.index(nin), operator.index(nout)
        self.nargs = operator.index(nargs or nin)
        self.identity = identity
        self._call = call or self._call_vectorized
        self._vectorized = None if call else vectorize(func)
        self._reduce, self._accumulate = reduce, accumulate
        self._at, self._reduceat = at, reduceat

    def __repr__(self):
        return f"<jnp.ufunc '{self.__name__}'>"

    def __call__(self, *args, out=None, where=None):
        if out is not None or where is not None:
            what = "out" if out is not None else "where"
            raise NotImplementedError(f"The {what!r} argument of {self!r} is not supported")
        return self._call(*args)

    def _call_vectorized(self, *args):
        check_arraylike(self.__name__, *args)
        return self._vectorized(*args)

    def _register(self, *, reduce=None, accumulate=None):
        """Sets the dedicated ``reduce``/``accumulate`` (from modules built on this one)."""
        self._reduce, self._accumulate = reduce, accumulate

    def _require_binary(self, method):
        if self.nin != 2:
            raise ValueError(
                f"{self.__name__}.{method}: {method} is only supported for "
                f"binary ufuncs, and {self.__name__} takes {self.nin} inputs"
            )
        if self.nout != 1:
            raise ValueError(
                f"{self.__name__}.{method}: {method} is only supported for "
                "functions returning a single value"
            )

    def _result_dtype(self, *args):
        ones = [strong_const(a, 1) for a in args]
        return eval_shape(self._func, *ones).dtype

    # ------------------------------------------------------------------ reduce
    def reduce(self, a, axis=0, dtype=None, out=None, keepdims=False, initial=None, where=None):
        """Reduces ``a`` along ``axis`` with this binary ufunc (``add.reduce`` is ``sum``).

        Args:
          a: the array to reduce.
          axis: an int or None (all axes); default 0.
          dtype: the result dtype (default: the ufunc's result type).
          out: unsupported, must be None.
          keepdims: keep the reduced axes with size 1.
          initial: the starting value (required with ``where`` when there is no identity).
          where: a boolean mask of the elements to include.

        Returns:
          The reduced array.
        """
        name = f"{self.__name__}.reduce"
        check_arraylike(name, a)
        self._require_binary("reduce")
        if out is not None:
            raise NotImplementedError(f"The 'out' argument of {name} is not supported")
        if initial is not None:
            check_arraylike(name, initial)
        if where is not None:
            check_arraylike(name, where)
            if self.identity is None and initial is None:
                raise ValueError(
                    f"reduction operation {self.__name__!r} does not have an "
                    "identity, so to use a where mask one has to specify "
                    "'initial'."
                )
            where_dtype = aval_of(asarray(where)).dtype
            if where_dtype != dtypes.bool_:
                raise ValueError(
                    f"{name}: where argument must have dtype=bool; got dtype={where_dtype}"
                )
        reduce = self._reduce or self._reduce_via_loop
        return reduce(a, axis=axis, dtype=dtype, keepdims=keepdims, initial=initial, where=where)

    def _reduce_via_loop(self, a, *, axis, dtype, keepdims, initial, where):
        a = asarray(a)
        if initial is None:
            initial = self.identity
        if dtype is None:
            dtype = self._result_dtype(a, a)
        shape = aval_of(a).shape
        if where is not None:
            where = broadcast_to_shape(asarray(where), shape)
        if isinstance(axis, tuple):
            raise NotImplementedError(
                f"{self.__name__}.reduce over a tuple of axes is not supported"
            )
        if axis is None:
            final_shape = (1,) * len(shape) if keepdims else ()
            a = lax.reshape(a, (math.prod(shape),))
            where = None if where is None else lax.reshape(where, (math.prod(shape),))
            axis = 0
        else:
            axis = _canonicalize_axis(axis, len(shape), f"{self.__name__}.reduce")
            final_shape = shape[:axis] + ((1,) if keepdims else ()) + shape[axis + 1 :]
            a = _axis_to_front(a, axis)
            where = None if where is None else _axis_to_front(where, axis)
        n, rest = aval_of(a).shape[0], aval_of(a).shape[1:]
        if n == 0:
            if initial is None:
                raise ValueError(
                    f"zero-size array to reduction operation {self.__name__} which has no identity"
                )
            return asarray(np.full(final_shape, initial, dtype))

        def body(i, acc):
            new = self(
                acc,
                lax.convert_element_type(lax.dynamic_index_in_dim(a, i, 0, keepdims=False), dtype),
            )
            if where is not None:
                new = where_(lax.dynamic_index_in_dim(where, i, 0, keepdims=False), new, acc)
            return new

        if initial is None:
            start, acc = 1, lax.index_in_dim(a, 0, 0, keepdims=False)
        else:
            start, acc = 0, asarray(initial)
        acc = broadcast_to_shape(lax.convert_element_type(acc, dtype), rest)
        result = lax.fori_loop(start, n, body, acc)
        return lax.reshape(result, final_shape) if keepdims else result

    # ------------------------------------------------------------------ accumulate
    def accumulate(self, a, axis=0, dtype=None, out=None):
        """The running reduction of ``a`` along ``axis`` (``add.accumulate`` is ``cumsum``).

        Args:
          a: the array to accumulate.
          axis: an int; default 0.
          dtype: the result dtype (default: the ufunc's result type).
          out: unsupported, must be None.

        Returns:
          An array of ``a``'s shape.
        """
        name = f"{self.__name__}.accumulate"
        self._require_binary("accumulate")
        if out is not None:
            raise NotImplementedError(f"The 'out' argument of {name} is not supported")
        accumulate = self._accumulate or self._accumulate_via_scan
        return accumulate(a, axis=axis, dtype=dtype)

    def _accumulate_via_scan(self, a, *, axis, dtype):
        name = f"{self.__name__}.accumulate"
        check_arraylike(name, a)
        a = asarray(a)
        if dtype is None:
            dtype = self._result_dtype(a, a)
        if axis is None or isinstance(axis, tuple):
            raise ValueError(f"{name}: accumulate does not allow multiple axes, got axis={axis!r}")
        shape = aval_of(a).shape
        axis = _canonicalize_axis(axis, len(shape), name)
        a = lax.convert_element_type(a, dtype)
        if math.prod(shape) == 0:
            return a
        a = _axis_to_front(a, axis)
        first = lax.index_in_dim(a, 0, 0, keepdims=False)

        def step(acc, x):
            acc = self(acc, x)
            return acc, acc

        _, rest = lax.scan(step, first, lax.slice_in_dim(a, 1, aval_of(a).shape[0], axis=0))
        result = lax.concatenate([lax.expand_dims(first, (0,)), rest], 0)
        return _axis_from_front(result, axis)

    # ------------------------------------------------------------------ at
    def at(self, a, indices, b=None, /, *, inplace=True):
        """``a`` with this ufunc applied at ``indices`` (with ``b`` for binary ufuncs): the
        updated copy, since arrays are immutable; ``inplace=False`` is required.

        Args:
          a: the array to update.
          indices: an index, slice, or tuple of them (as ``a[indices]``); repeated indices
            apply the ufunc repeatedly.
          b: the second operand for binary ufuncs.
          inplace: must be False.

        Returns:
          The updated copy of ``a``.
        """
        if inplace:
            raise NotImplementedError(
                "xform arrays are immutable, so ufunc.at() cannot operate in place as "
                "np.ufunc.at() does; pass inplace=False and use the result, e.g. "
                f"arr = xnp.{self.__name__}.at(arr, ind, val, inplace=False)"
            )
        at = self._at or self._at_via_scan
        return at(a, indices) if b is None else at(a, indices, b)

    def _at_via_scan(self, a, indices, *args):
        check_arraylike(f"{self.__name__}.at", a, *args)
        a = asarray(a)
        dtype = self._result_dtype(a, *(asarray(x) for x in args))
        a = lax.convert_element_type(a, dtype)
        args = [lax.convert_element_type(asarray(x), dtype) for x in args]
        indices = indices if isinstance(indices, tuple) else (indices,)
        if not indices:
            return a
        shapes = [
            np.shape(i)
            for i in indices
            if not isinstance(i, slice) and i is not None and i is not Ellipsis
        ]
        shape = broadcast_shapes(*shapes) if shapes else ()
        if not shape:
            return a.at[indices].set(self(a.at[indices].get(), *args))
        size = math.prod(shape)
        if args:
            arg_shape = aval_of(args[0]).shape
            tail = arg_shape[len(shape) :]
            args = [lax.reshape(broadcast_to_shape(args[0], shape + tail), (size, *tail))]
        flat = [
            i
            if isinstance(i, slice) or i is None or i is Ellipsis
            else lax.reshape(broadcast_to_shape(asarray(i), shape), (size,))
            for i in indices
        ]

        def step(carry, xs):
            k, arr = carry
            idx = tuple(
                i
                if isinstance(i, slice) or i is None or i is Ellipsis
                else lax.dynamic_index_in_dim(i, k, 0, keepdims=False)
                for i in flat
            )
            extra = [lax.dynamic_index_in_dim(x, k, 0, keepdims=False) for x in args]
            arr = arr.at[idx].set(self(arr.at[idx].get(), *extra))
            return (lax.add(k, weak_const(k, 1)), arr), None

        counter = Array(ShapedArray((), dtypes.int32, False), np.array(0, np.int32))
        (_, result), _ = lax.scan(step, (counter, a), None, length=size)
        return result

    # ------------------------------------------------------------------ reduceat
    def reduceat(self, a, indices, axis=0, dtype=None, out=None):
        """Reductions of ``a`` over the segments that start at ``indices`` along ``axis``
        (``add.reduceat`` sums ``a[indices[i]:indices[i+1]]``).

        Args:
          a: the array to reduce.
          indices: a 1-D array of segment starts.
          axis: an int; default 0.
          dtype: the result dtype (default: ``a``'s).
          out: unsupported, must be None.

        Returns:
          The segment reductions, with ``len(indices)`` along ``axis``.
        """
        name = f"{self.__name__}.reduceat"
        self._require_binary("reduceat")
        if out is not None:
            raise NotImplementedError(f"The 'out' argument of {name} is not supported")
        reduceat = self._reduceat or self._reduceat_via_loop
        return reduceat(a, indices, axis=axis, dtype=dtype)

    def _reduceat_via_loop(self, a, indices, *, axis, dtype):
        name = f"{self.__name__}.reduceat"
        check_arraylike(name, a, indices)
        a, indices = asarray(a), asarray(indices)
        shape = aval_of(a).shape
        if not shape:
            raise ValueError(f"{name}: a must have 1 or more dimension, got a.shape={shape}")
        if aval_of(indices).ndim != 1:
            raise ValueError(
                f"{name}: indices must be one-dimensional, got "
                f"indices.shape={aval_of(indices).shape}"
            )
        if axis is None or isinstance(axis, (tuple, list)):
            raise ValueError(f"{name}: reduceat requires a single integer axis, got axis={axis!r}")
        axis = _canonicalize_axis(axis, len(shape), name)
        if dtype is not None:
            a = lax.convert_element_type(a, dtype)
        a = _axis_to_front(a, axis)
        n = aval_of(a).shape[0]
        out = a[indices]
        bounds = lax.concatenate([indices, lax.reshape(strong_const(indices, n), (1,))], 0)
        starts = lax.slice_in_dim(bounds, 0, aval_of(indices).shape[0], axis=0)
        ends = lax.slice_in_dim(bounds, 1, aval_of(indices).shape[0] + 1, axis=0)
        trailing = (1,) * (aval_of(a).ndim - 1)

        def body(i, acc):
            i = lax.convert_element_type(i, aval_of(starts).dtype)
            inside = lax.reshape(
                lax.bitwise_and(lax.gt(i, starts), lax.lt(i, ends)),
                (aval_of(starts).shape[0], *trailing),
            )
            row = lax.dynamic_slice_in_dim(a, i, 1, axis=0)
            return where_(inside, self(acc, row), acc)

        out = lax.fori_loop(0, n, body, out)
        return _axis_from_front(out, axis)

    # ------------------------------------------------------------------ outer
    def outer(self, A, B, /):
        """This binary ufunc on every pair of elements: shape ``A.shape + B.shape``.

        Args:
          A, B: arrays.

        Returns:
          ``result[i..., j...] = ufunc(A[i...], B[j...])``.
        """
        self._require_binary("outer")
        check_arraylike(f"{self.__name__}.outer", A, B)
        A, B = asarray(A), asarray(B)
        sa, sb = aval_of(A).shape, aval_of(B).shape
        flat_a, flat_b = lax.reshape(A, (math.prod(sa),)), lax.reshape(B, (math.prod(sb),))
        result = vmap(vmap(self, (None, 0)), (0, None))(flat_a, flat_b)
        return lax.reshape(result, (*sa, *sb))


def _canonicalize_axis(axis, ndim, name):
    axis = operator.index(axis)
    if not -ndim <= axis < ndim:
        raise np.exceptions.AxisError(
            f"{name}: axis {axis} is out of bounds for array of dimension {ndim}"
        )
    return axis % ndim if ndim else axis


def _axis_to_front(x, axis):
    if axis == 0:
        return x
    ndim = aval_of(x).ndim
    return lax.transpose(x, (axis, *(d for d in range(ndim) if d != axis)))


def _axis_from_front(x, axis):
    if axis == 0:
        return x
    ndim = aval_of(x).ndim
    perm = list(range(1, ndim))
    perm.insert(axis, 0)
    return lax.transpose(x, tuple(perm))


def frompyfunc(func, /, nin, nout, *, identity=None):
    """A ``ufunc`` from a scalar function of ``nin`` arguments returning ``nout`` values,
    vectorized with ``vectorize`` (``vmap``), as ``jax.numpy.frompyfunc``.

    Example:
      >>> add = frompyfunc(operator.add, nin=2, nout=1, identity=0)
      >>> add.reduce(xform.numpy.arange(4))
      Array(6, dtype=int32)
    """
    return ufunc(func, nin, nout, identity=identity)


def _bool_as_int_at(method):
    """``ufunc.at`` through ``x.at[...].<method>``; bools go through int32, as JAX's."""

    def at(a, indices, b):
        a = asarray(a)
        if aval_of(a).dtype == dtypes.bool_:
            b = lax.convert_element_type(to_bool(asarray(b)), dtypes.int32)
            a = lax.convert_element_type(a, dtypes.int32)
            return lax.convert_element_type(getattr(a.at[indices], method)(b), dtypes.bool_)
        return getattr(a.at[indices], method)(b)

    return at


def _subtract_at(a, indices, b):
    return asarray(a).at[indices].subtract(b)


def _binary(func, identity, at=None):
    return ufunc(func, 2, 1, call=func, identity=identity, at=at)


add = _binary(add, 0, _bool_as_int_at("add"))
multiply = _binary(multiply, 1, _bool_as_int_at("multiply"))
subtract = _binary(subtract, None, _subtract_at)
bitwise_and = _binary(bitwise_and, -1)
bitwise_or = _binary(bitwise_or, 0)
bitwise_xor = _binary(bitwise_xor, 0)
logaddexp = _binary(logaddexp, -np.inf)
logaddexp2 = _binary(logaddexp2, -np.inf)
logical_and = _binary(logical_and, True)
logical_or = _binary(logical_or, False)
logical_xor = _binary(logical_xor, False)
maximum = _binary(maximum, None)
minimum = _binary(minimum, None)
negative = ufunc(negative, 1, 1, call=negative)

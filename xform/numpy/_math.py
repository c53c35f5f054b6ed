"""Mathematical helpers of jax.numpy built from lax primitives: integer gcd/lcm, float
decomposition (frexp, ldexp, modf, spacing), complex tests, log/geometric ranges, window
functions, 1-D convolution (through ``lax.conv_general_dilated``, as JAX), trapezoid
integration, phase unwrapping and a few array-API contractions.

Public signatures are jax.numpy's, positional parameters included.
"""

import operator

import numpy as np

from xform import dtypes
from xform.custom_derivatives import custom_jvp
from xform.errors import ConcretizationTypeError
from xform.lax import _names as lax
from xform.numpy._contractions import matmul
from xform.numpy._creation import arange, linspace
from xform.numpy._promote import (
    _canonical_dtype,
    _to_inexact,
    asarray,
    aval_of,
    broadcast_to_shape,
    check_arraylike,
    convert,
    promote_dtypes,
    promote_dtypes_inexact,
    promote_shapes,
    result_type,
)
from xform.numpy._reductions import _cumulative, canonicalize_axis, cumsum
from xform.numpy._reductions import any as any_
from xform.numpy._reductions import sum as sum_
from xform.numpy._shape import moveaxis
from xform.numpy._staged import staged
from xform.numpy._ufuncs import (
    absolute,
    const,
    copysign,
    cos,
    degrees,
    floor_divide,
    imag,
    less,
    log10,
    multiply,
    power,
    real,
    remainder,
    sign,
    true_divide,
    where_,
)

__all__ = [
    "gcd",
    "lcm",
    "frexp",
    "ldexp",
    "modf",
    "spacing",
    "angle",
    "iscomplex",
    "isreal",
    "logspace",
    "geomspace",
    "bartlett",
    "blackman",
    "hamming",
    "hanning",
    "convolve",
    "correlate",
    "trapezoid",
    "unwrap",
    "cumulative_prod",
    "matvec",
    "vecmat",
    "bitwise_count",
    "gradient",
    "i0",
    "kaiser",
    "cross",
]


def _static_int(name, what, value):
    try:
        return operator.index(value)
    except TypeError as e:  # a traced value's ConcretizationTypeError too
        raise ConcretizationTypeError(
            f"{name}: argument '{what}' must be a static integer "
            f"(a Python int, or static under jit): {e}"
        ) from e


# --------------------------------------------------------------------------- integers


@staged("gcd")
def gcd(x1, x2):
    """Greatest common divisor of integers, elementwise (non-negative; gcd(0, 0) = 0)."""
    check_arraylike("gcd", x1, x2)
    x1, x2 = promote_dtypes(asarray(x1), asarray(x2))
    if not dtypes.is_int(aval_of(x1).dtype):
        raise ValueError("Arguments to xform.numpy.gcd must be integers.")
    x1, x2 = promote_shapes("gcd", x1, x2)
    shape = np.broadcast_shapes(aval_of(x1).shape, aval_of(x2).shape)
    x1, x2 = broadcast_to_shape(x1, shape), broadcast_to_shape(x2, shape)

    def not_done(state):
        return any_(lax.ne(state[1], const(state[1], 0)))

    def euclid_step(state):
        a, b = state
        nonzero = lax.ne(b, const(b, 0))
        safe_b = where_(nonzero, b, const(b, 1))
        a, b = where_(nonzero, b, a), where_(nonzero, lax.rem(a, safe_b), const(b, 0))
        return where_(lax.lt(a, b), b, a), where_(lax.lt(a, b), a, b)

    result, _ = lax.while_loop(not_done, euclid_step, (absolute(x1), absolute(x2)))
    return result


@staged("lcm")
def lcm(x1, x2):
    """Least common multiple of integers, elementwise (non-negative; 0 if either is 0)."""
    check_arraylike("lcm", x1, x2)
    x1, x2 = promote_dtypes(asarray(x1), asarray(x2))
    if not dtypes.is_int(aval_of(x1).dtype):
        raise ValueError("Arguments to xform.numpy.lcm must be integers.")
    x1, x2 = absolute(x1), absolute(x2)
    d = gcd(x1, x2)
    zero = lax.eq(d, const(d, 0))
    return where_(zero, const(d, 0), multiply(x1, floor_divide(x2, where_(zero, const(d, 1), d))))


@staged("bitwise_count")
def bitwise_count(x, /):
    """The number of one bits in ``|x|``, as uint8 (NumPy's rule)."""
    check_arraylike("bitwise_count", x)
    x = asarray(x)
    if dtypes.is_inexact(aval_of(x).dtype):
        raise TypeError(
            f"bitwise_count requires an integer or boolean input; got {aval_of(x).dtype}"
        )
    if aval_of(x).dtype == dtypes.bool_:
        return convert(x, dtypes.uint8, False)
    return convert(lax.population_count(absolute(x)), dtypes.uint8, False)


# --------------------------------------------------------------------------- floats

_INT_OF_BITS = {16: np.dtype(np.int16), 32: np.dtype(np.int32), 64: np.dtype(np.int64)}


def _split_bits(x):
    """frexp of finite non-zero ``x`` from its bits: the mantissa (same dtype) and the
    exponent (the float's integer type)."""
    info = dtypes.finfo(aval_of(x).dtype)
    int_type = _INT_OF_BITS[info.bits]
    # Subnormals are scaled into the normal range first.
    small = lax.lt(lax.abs(x), const(x, info.tiny))
    scaled = where_(small, lax.mul(x, const(x, 2.0**info.nmant)), x)
    shift = where_(small, asarray(-info.nmant, int_type), asarray(0, int_type))
    bits = lax.bitcast_convert_type(scaled, int_type)
    mask = (1 << info.nexp) - 1
    bias = 1 - info.minexp
    biased = lax.bitwise_and(
        lax.shift_right_logical(bits, const(bits, info.nmant)), const(bits, mask)
    )
    exponent = lax.add(lax.sub(biased, const(bits, bias - 1)), shift)
    mantissa_bits = lax.bitwise_or(
        lax.bitwise_and(bits, const(bits, ~(mask << info.nmant))),
        const(bits, (bias - 1) << info.nmant),
    )
    return lax.bitcast_convert_type(mantissa_bits, aval_of(x).dtype), exponent


def _special(x):
    return lax.bitwise_or(lax.bitwise_not(lax.is_finite(x)), lax.eq(x, const(x, 0)))


@custom_jvp
def _mantissa(x):
    return where_(_special(x), x, _split_bits(x)[0])


def _mantissa_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    e = where_(_special(x), const(x, 0), convert(_split_bits(x)[1], aval_of(x).dtype, False))
    return _mantissa(x), lax.mul(t, lax.exp2(lax.neg(e)))


_mantissa.defjvp(_mantissa_jvp)


@staged("frexp")
def frexp(x, /):
    """Mantissa in [0.5, 1) (signed) and int32 exponent with ``x = m * 2**e``; zeros,
    infinities and NaNs give ``(x, 0)``."""
    check_arraylike("frexp", x)
    x = promote_dtypes_inexact(asarray(x))[0]
    if dtypes.is_complex(aval_of(x).dtype):
        raise TypeError("frexp does not support complex-valued inputs")
    e = convert(_split_bits(lax.stop_gradient(x))[1], dtypes.int32, False)
    e = where_(_special(x), asarray(0, dtypes.int32), e)
    return _mantissa(x), e


@staged("ldexp")
def ldexp(x1, x2, /):
    """``x1 * 2**x2`` for integer ``x2``, without overflow in the intermediate."""
    check_arraylike("ldexp", x1, x2)
    x1, x2 = asarray(x1), asarray(x2)
    if dtypes.is_complex(aval_of(x1).dtype) or dtypes.is_inexact(aval_of(x2).dtype):
        raise ValueError(
            f"ldexp not supported for input types {(aval_of(x1).dtype, aval_of(x2).dtype)}"
        )
    x1 = promote_dtypes_inexact(x1)[0]
    x2 = convert(x2, aval_of(x1).dtype, aval_of(x2).weak_type)
    m, e = frexp(x1)
    e = convert(
        lax.add(*promote_shapes("ldexp", convert(e, aval_of(x2).dtype, False), x2)),
        aval_of(x1).dtype,
        False,
    )
    positive = lax.gt(e, const(e, 0))  # the exponent may overshoot by one for finite results
    m = where_(positive, lax.mul(m, const(m, 2)), m)
    e = where_(positive, lax.sub(e, const(e, 1)), e)
    x = multiply(m, power(const(m, 2), e))
    keep = lax.bitwise_or(lax.bitwise_not(lax.is_finite(x1)), lax.eq(x1, const(x1, 0)))
    keep = lax.bitwise_and(keep, lax.bitwise_not(lax.ne(x1, x1)))
    return where_(keep, x1, x)


@staged("modf")
def modf(x, /, out=None):
    """Fractional and integral parts of ``x``, both with ``x``'s sign."""
    check_arraylike("modf", x)
    if out is not None:
        raise NotImplementedError("The 'out' argument to xform.numpy.modf is not supported.")
    x = promote_dtypes_inexact(asarray(x))[0]
    whole = where_(lax.ge(x, const(x, 0)), lax.floor(x), lax.ceil(x))
    return lax.sub(x, whole), whole


def spacing(x, /):
    """The distance from ``x`` to the next representable value away from zero."""
    check_arraylike("spacing", x)
    x = promote_dtypes_inexact(asarray(x))[0]
    dtype = aval_of(x).dtype
    if dtypes.is_complex(dtype):
        raise ValueError("xform.numpy.spacing is not defined for complex inputs.")
    inf = const(x, np.inf)
    if dtype == dtypes.float16:  # NumPy's float16 spacing always steps up
        return lax.sub(lax.nextafter(x, inf), x)
    away = copysign(inf, x)
    result = lax.sub(lax.nextafter(x, away), x)
    tiny = copysign(const(x, dtypes.finfo(dtype).smallest_subnormal), x)
    return convert(where_(lax.eq(result, const(result, 0)), tiny, result), dtype, False)


# --------------------------------------------------------------------------- complex tests


@staged("angle", static_argnames=("deg",))
def angle(z, deg=False):
    """The argument of complex ``z`` (radians, or degrees with ``deg``)."""
    check_arraylike("angle", z)
    z = asarray(z)
    re, im = real(z), imag(z)
    dtype = aval_of(re).dtype
    if not dtypes.is_inexact(dtype) or (dtypes.is_float(aval_of(z).dtype) and aval_of(z).ndim == 0):
        dtype = dtypes.default_float()
        re, im = convert(re, dtype, False), convert(im, dtype, False)
    result = lax.atan2(im, re)
    return degrees(result) if deg else result


@staged("iscomplex")
def iscomplex(x):
    """True where ``x`` has a non-zero imaginary part."""
    i = imag(x)
    return lax.ne(i, const(i, 0))


@staged("isreal")
def isreal(x):
    """True where ``x`` has a zero imaginary part."""
    i = imag(x)
    return lax.eq(i, const(i, 0))


# --------------------------------------------------------------------------- ranges


def _space_dtypes(name, start, stop, dtype):
    if dtype is None:
        dtype = _to_inexact(result_type(start, stop))
    else:
        dtype = _canonical_dtype(dtype, name)
    return dtype, _to_inexact(dtype)


def logspace(start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0):
    """``base ** linspace(start, stop, num)``."""
    num = _static_int("logspace", "num", num)  # (before the jit, whose static argument it is)
    axis = _static_int("logspace", "axis", axis)
    return _logspace(start, stop, num, endpoint, base, dtype, axis)


@staged("_logspace", static_argnames=("num", "endpoint", "dtype", "axis"))
def _logspace(start, stop, num, endpoint, base, dtype, axis):
    check_arraylike("logspace", start, stop)
    dtype, computation = _space_dtypes("logspace", start, stop, dtype)
    start = convert(asarray(start), computation, False)
    stop = convert(asarray(stop), computation, False)
    exponents = linspace(start, stop, num, endpoint=endpoint, axis=axis)
    return convert(power(base, exponents), dtype, False)


def geomspace(start, stop, num=50, endpoint=True, dtype=None, axis=0):
    """``num`` values from ``start`` to ``stop`` spaced evenly on a log scale."""
    num = _static_int("geomspace", "num", num)  # (before the jit, as in logspace)
    axis = _static_int("geomspace", "axis", axis)
    return _geomspace(start, stop, num, endpoint, dtype, axis)


@staged("_geomspace", static_argnames=("num", "endpoint", "dtype", "axis"))
def _geomspace(start, stop, num, endpoint, dtype, axis):
    check_arraylike("geomspace", start, stop)
    dtype, computation = _space_dtypes("geomspace", start, stop, dtype)
    start = convert(asarray(start), computation, False)
    stop = convert(asarray(stop), computation, False)
    s = sign(start)
    res = multiply(
        s,
        _logspace(
            log10(lax.div(*_same(start, s))),
            log10(lax.div(*_same(stop, s))),
            num,
            endpoint=endpoint,
            base=10.0,
            dtype=computation,
            axis=0,
        ),
    )
    return convert(
        moveaxis(res, 0, canonicalize_axis(axis, aval_of(res).ndim, "geomspace")), dtype, False
    )


def _same(x, y):
    return promote_shapes("geomspace", x, y)


# --------------------------------------------------------------------------- windows


def _window(name, m):
    m = _static_int(name, "M", m)
    dtype = dtypes.default_float()
    return m, dtype


def bartlett(M):  # noqa: N803  (NumPy's name)
    """The Bartlett (triangular) window of ``M`` points."""
    m, dtype = _window("bartlett", M)
    if m <= 1:
        return lax.broadcast_in_dim(asarray(1, dtype), (max(m, 0),), ())
    n = arange(1 - m, m, 2, dtype=dtype)
    return where_(
        lax.le(n, const(n, 0)),
        lax.add(const(n, 1), lax.div(n, const(n, m - 1))),
        lax.sub(const(n, 1), lax.div(n, const(n, m - 1))),
    )


def _cosine_window(name, m, coefficients):
    m, dtype = _window(name, m)
    if m <= 1:
        return lax.broadcast_in_dim(asarray(1, dtype), (max(m, 0),), ())
    n = arange(1 - m, m, 2, dtype=dtype)
    out = lax.broadcast_in_dim(asarray(coefficients[0], dtype), (m,), ())
    for k, c in enumerate(coefficients[1:], 1):
        out = lax.add(out, lax.mul(const(n, c), cos(lax.mul(n, const(n, np.pi * k / (m - 1))))))
    return out


def blackman(M):  # noqa: N803
    """The Blackman window of ``M`` points."""
    return _cosine_window("blackman", M, (0.42, 0.5, 0.08))


def hamming(M):  # noqa: N803
    """The Hamming window of ``M`` points."""
    return _cosine_window("hamming", M, (0.54, 0.46))


def hanning(M):  # noqa: N803
    """The Hann window of ``M`` points."""
    return _cosine_window("hanning", M, (0.5, 0.5))


# --------------------------------------------------------------------------- convolution


@staged("_conv", static_argnums=(0, 3, 4, 5))
def _conv1d(name, a, v, mode, precision, preferred_element_type):
    check_arraylike(name, a, v)
    a, v = asarray(a), asarray(v)
    if aval_of(a).ndim != 1 or aval_of(v).ndim != 1:
        raise ValueError(f"{name}() only support 1-dimensional inputs.")
    if preferred_element_type is None:
        a, v = promote_dtypes_inexact(a, v)
    else:
        a, v = promote_dtypes(a, v)
        preferred_element_type = _canonical_dtype(preferred_element_type, name)
    if aval_of(a).size == 0 or aval_of(v).size == 0:
        raise ValueError(
            f"{name}: inputs cannot be empty, got shapes {aval_of(a).shape} and {aval_of(v).shape}."
        )
    reverse = False
    if name == "correlate":
        if dtypes.is_complex(aval_of(v).dtype):
            v = lax.conj(v)
        if aval_of(a).size < aval_of(v).size:
            a, v, reverse = v, a, True
    else:
        if aval_of(a).size < aval_of(v).size:
            a, v = v, a
        v = lax.rev(v, (0,))
    k = aval_of(v).size
    pads = {"valid": (0, 0), "same": (k // 2, k - k // 2 - 1), "full": (k - 1, k - 1)}
    if mode not in pads:
        raise ValueError("mode must be one of ['full', 'same', 'valid']")
    out = lax.conv_general_dilated(
        lax.reshape(a, (1, 1, aval_of(a).size)),
        lax.reshape(v, (1, 1, k)),
        (1,),
        [pads[mode]],
        precision=precision,
        preferred_element_type=preferred_element_type,
    )
    out = lax.reshape(out, (aval_of(out).shape[-1],))
    return lax.rev(out, (0,)) if reverse else out


@staged("convolve", static_argnames=("mode", "precision", "preferred_element_type"))
def convolve(a, v, mode="full", *, precision=None, preferred_element_type=None):
    """Discrete linear convolution of 1-D ``a`` and ``v`` (``mode``: full, same, valid)."""
    return _conv1d("convolve", a, v, mode, precision, preferred_element_type)


@staged("correlate", static_argnames=("mode", "precision", "preferred_element_type"))
def correlate(a, v, mode="valid", *, precision=None, preferred_element_type=None):
    """Cross-correlation of 1-D ``a`` and ``v`` (``v`` conjugated)."""
    return _conv1d("correlate", a, v, mode, precision, preferred_element_type)


# --------------------------------------------------------------------------- calculus


def _diff_last(x):
    return lax.sub(x[..., 1:], x[..., :-1])


def trapezoid(y, x=None, dx=1.0, axis=-1):
    """Integral of ``y`` along ``axis`` by the trapezoid rule, at sample points ``x`` (or
    spacing ``dx``)."""
    if x is None:
        check_arraylike("trapezoid", y)
        y = promote_dtypes_inexact(asarray(y))[0]
        dx = asarray(dx)
        if aval_of(dx).ndim > 0:
            dx = lax.expand_dims(dx, tuple(range(aval_of(y).ndim - aval_of(dx).ndim)))
            dx = moveaxis(dx, axis, -1)
    else:
        check_arraylike("trapezoid", y, x)
        y, x = promote_dtypes_inexact(asarray(y), asarray(x))
        dx = _diff_last(x) if aval_of(x).ndim == 1 else _diff_last(moveaxis(x, axis, -1))
    y = moveaxis(y, axis, -1)
    if aval_of(dx).ndim == 0 or aval_of(dx).shape[-1] == 1:
        step = dx if aval_of(dx).ndim == 0 else dx[..., 0]
        ends = lax.mul(const(y, 0.5), lax.add(y[..., 0], y[..., -1]))
        return multiply(step, lax.sub(sum_(y, -1), ends))
    return multiply(0.5, sum_(multiply(dx, lax.add(y[..., 1:], y[..., :-1])), -1))


def unwrap(p, discont=None, axis=-1, period=2 * np.pi):
    """``p`` with jumps larger than ``discont`` along ``axis`` replaced by their
    ``period``-complement."""
    check_arraylike("unwrap", p)
    p, period = promote_dtypes(asarray(p), asarray(period))
    if dtypes.is_complex(aval_of(p).dtype):
        raise ValueError("xform.numpy.unwrap does not support complex inputs.")
    axis = canonicalize_axis(axis, aval_of(p).ndim, "unwrap")
    if aval_of(p).shape[axis] == 0:
        return p
    integer = dtypes.is_int(aval_of(p).dtype)
    interval = floor_divide(period, 2) if integer else lax.div(period, const(period, 2))
    if discont is None:
        discont = true_divide(period, 2)
    moved = moveaxis(p, axis, -1)
    dd = _diff_last(moved)
    ddmod = lax.sub(remainder(lax.add(dd, interval), period), interval)
    at_edge = lax.bitwise_and(lax.eq(ddmod, lax.neg(interval)), lax.gt(dd, const(dd, 0)))
    ddmod = where_(at_edge, interval, ddmod)
    correction = where_(less(absolute(dd), discont), const(dd, 0), lax.sub(ddmod, dd))
    rest = lax.add(moved[..., 1:], cumsum(correction, axis=-1))
    return moveaxis(lax.concatenate([moved[..., :1], rest], aval_of(moved).ndim - 1), -1, axis)


def cumulative_prod(x, /, *, axis=None, dtype=None, include_initial=False):
    """Array-API cumulative product (``axis`` may be omitted only for 1-D input)."""
    check_arraylike("cumulative_prod", x)
    x = asarray(x)
    if aval_of(x).ndim == 0:
        raise ValueError(
            "The input must be non-scalar to take a cumulative product, however "
            "a scalar value or scalar array was given."
        )
    if axis is None:
        if aval_of(x).ndim > 1:
            raise ValueError(
                f"The input array has rank {aval_of(x).ndim}, however axis was "
                "not set to an explicit value. The axis argument is only optional "
                "for one-dimensional arrays."
            )
        axis = 0
    axis = canonicalize_axis(axis, aval_of(x).ndim, "cumulative_prod")
    out = _cumulative("cumulative_prod", lax.cumprod, x, axis=axis, dtype=dtype, out=None)
    if include_initial:
        shape = list(aval_of(out).shape)
        shape[axis] = 1
        one = lax.broadcast_in_dim(const(out, 1), tuple(shape), ())
        out = lax.concatenate([one, out], axis)
    return out


# --------------------------------------------------------------------------- contractions


def matvec(x1, x2, /):
    """Matrix-vector products over broadcast batch dimensions: ``(..., n, m), (..., m)``."""
    check_arraylike("matvec", x1, x2)
    x1, x2 = asarray(x1), asarray(x2)
    if aval_of(x1).ndim < 2 or aval_of(x2).ndim < 1:
        raise ValueError(
            f"matvec: expected a matrix and a vector, got shapes "
            f"{aval_of(x1).shape} and {aval_of(x2).shape}"
        )
    if aval_of(x1).shape[-1] != aval_of(x2).shape[-1]:
        raise ValueError(
            f"matvec: inconsistent size for core dimension 'm': "
            f"{aval_of(x1).shape[-1]} vs {aval_of(x2).shape[-1]} (shapes "
            f"{aval_of(x1).shape} and {aval_of(x2).shape})"
        )
    return matmul(x1, lax.expand_dims(x2, (aval_of(x2).ndim,)))[..., 0]


def vecmat(x1, x2, /):
    """Conjugated-vector-matrix products over batch dimensions: ``(..., n), (..., n, m)``."""
    check_arraylike("vecmat", x1, x2)
    x1, x2 = asarray(x1), asarray(x2)
    if aval_of(x1).ndim < 1 or aval_of(x2).ndim < 2:
        raise ValueError(
            f"vecmat: expected a vector and a matrix, got shapes "
            f"{aval_of(x1).shape} and {aval_of(x2).shape}"
        )
    if aval_of(x1).shape[-1] != aval_of(x2).shape[-2]:
        raise ValueError(
            f"vecmat: inconsistent size for core dimension 'n': "
            f"{aval_of(x1).shape[-1]} vs {aval_of(x2).shape[-2]} (shapes "
            f"{aval_of(x1).shape} and {aval_of(x2).shape})"
        )
    if dtypes.is_complex(aval_of(x1).dtype):
        x1 = lax.conj(x1)
    return matmul(lax.expand_dims(x1, (aval_of(x1).ndim - 1,)), x2)[..., 0, :]


def _slice(a, start, stop, axis):
    index = [slice(None)] * aval_of(a).ndim
    index[axis] = slice(start, stop)
    return a[tuple(index)]


def _gradient_along(a, h, axis):
    upper = _slice(a, 1, 2, axis) - _slice(a, 0, 1, axis)
    lower = _slice(a, -1, None, axis) - _slice(a, -2, -1, axis)
    if aval_of(h).ndim == 0:
        inner = (_slice(a, 2, None, axis) - _slice(a, None, -2, axis)) * 0.5 / h
        return lax.concatenate([upper / h, inner, lower / h], axis)
    if aval_of(h).ndim != 1:
        raise ValueError("Spacing arrays must be 1D arrays or scalars.")
    if aval_of(h).shape[0] != aval_of(a).shape[axis]:
        raise ValueError(
            "Spacing arrays must have the same length as the dimension along "
            "which the gradient is calculated."
        )
    shape = [1] * aval_of(a).ndim
    shape[axis] = aval_of(h).shape[0]
    h = lax.reshape(h, tuple(shape))
    upper = upper / (_slice(h, 1, 2, axis) - _slice(h, 0, 1, axis))
    lower = lower / (_slice(h, -1, None, axis) - _slice(h, -2, -1, axis))
    # Second-order differences on the uneven grid (NumPy's formula).
    dx1 = _slice(h, 1, -1, axis) - _slice(h, 0, -2, axis)
    dx2 = _slice(h, 2, None, axis) - _slice(h, 1, -1, axis)
    inner = (
        -dx2 / (dx1 * (dx1 + dx2)) * _slice(a, 0, -2, axis)
        + (dx2 - dx1) / (dx1 * dx2) * _slice(a, 1, -1, axis)
        + dx1 / (dx2 * (dx1 + dx2)) * _slice(a, 2, None, axis)
    )
    return lax.concatenate([upper, inner, lower], axis)


def gradient(f, *varargs, axis=None, edge_order=None):
    """Central differences of ``f`` along each axis (one-sided at the edges), with
    scalar spacings or 1-D coordinates in ``varargs``; a list for several axes."""
    if edge_order is not None:
        raise NotImplementedError(
            "The 'edge_order' argument to xform.numpy.gradient is not supported."
        )
    check_arraylike("gradient", f, *varargs)
    a, *spacing = promote_dtypes_inexact(*(asarray(v) for v in (f, *varargs)))
    ndim = aval_of(a).ndim
    if axis is None:
        axes = tuple(range(ndim))
    else:
        axes = tuple(
            canonicalize_axis(i, ndim, "gradient")
            for i in (axis if isinstance(axis, (tuple, list)) else (axis,))
        )
    if not axes:
        return []
    if min(aval_of(a).shape[i] for i in axes) < 2:
        raise ValueError(
            "Shape of array too small to calculate a numerical gradient, at "
            "least 2 elements are required."
        )
    if not spacing:
        spacing = [const(a, 1.0)] * len(axes)
    elif len(spacing) == 1:
        spacing = spacing * len(axes)
    elif len(spacing) != len(axes):
        raise TypeError(f"Invalid number of spacing arguments {len(spacing)} for {axis=}")
    grads = [_gradient_along(a, h, ax) for ax, h in zip(axes, spacing, strict=True)]
    return grads[0] if len(axes) == 1 else grads


# --------------------------------------------------------------------------- Bessel I0

_I0_SERIES_TERMS = 64  # enough for the power series to converge for |x| <= _I0_SWITCH
_I0_SWITCH = 30.0


def _i0_series(x):
    """``sum_k (x^2 / 4)^k / (k!)^2``, accumulated term by term in a scan."""
    quarter_sq = lax.mul(lax.mul(x, x), const(x, 0.25))
    ks = arange(1, _I0_SERIES_TERMS + 1, dtype=aval_of(x).dtype)

    def add_term(carry, k):
        term, total = carry
        term = lax.div(lax.mul(term, quarter_sq), lax.mul(k, k))
        return (term, lax.add(total, term)), None

    one = lax.broadcast_in_dim(const(x, 1), aval_of(x).shape, ())
    (_, total), _ = lax.scan(add_term, (one, one), ks)
    return total


def _i0_asymptotic(x):
    """``e^x / sqrt(2 pi x) * (1 + 1/(8x) + 9/(2 (8x)^2) + ...)`` for large ``x > 0``."""
    inv = lax.div(const(x, 1), lax.mul(const(x, 8), x))
    total, term = const(x, 1), const(x, 1)
    for k in range(1, 6):
        term = lax.mul(term, lax.mul(inv, const(x, (2 * k - 1) ** 2 / k)))
        total = lax.add(total, term)
    scale = lax.div(lax.exp(x), lax.sqrt(lax.mul(const(x, 2 * np.pi), x)))
    return lax.mul(scale, total)


@staged("i0")
def i0(x):
    """The modified Bessel function of the first kind, order 0."""
    check_arraylike("i0", x)
    x = promote_dtypes_inexact(asarray(x))[0]
    dtype = aval_of(x).dtype
    if not dtypes.is_float(dtype):
        raise ValueError(f"Unsupported input type to xform.numpy.i0: {dtype}")
    wide = dtypes.float32 if dtype in (dtypes.float16, dtypes.bfloat16) else dtype
    ax = lax.abs(convert(x, wide, False))
    big = lax.gt(ax, const(ax, _I0_SWITCH))
    # Each branch gets inputs where it is accurate and finite, so neither puts a NaN into
    # the other's gradient.
    small_x = where_(big, const(ax, 0), ax)
    big_x = where_(big, ax, const(ax, 2 * _I0_SWITCH))
    out = where_(big, _i0_asymptotic(big_x), _i0_series(small_x))
    if wide != dtype:
        # As JAX's exp(|x|) * i0e(|x|), with both factors rounded to the half type.
        scaled = convert(lax.mul(out, lax.exp(lax.neg(ax))), dtype, False)
        return lax.mul(lax.exp(convert(ax, dtype, False)), scaled)
    return convert(out, dtype, aval_of(x).weak_type)


def kaiser(M, beta):  # noqa: N803
    """The Kaiser window of ``M`` points with shape parameter ``beta``."""
    m, dtype = _window("kaiser", M)
    if m <= 1:
        return lax.broadcast_in_dim(asarray(1, dtype), (max(m, 0),), ())
    n = arange(m, dtype=dtype)
    alpha = 0.5 * (m - 1)
    ratio = lax.div(lax.sub(n, const(n, alpha)), const(n, alpha))
    return true_divide(
        i0(multiply(beta, lax.sqrt(lax.sub(const(n, 1), lax.mul(ratio, ratio))))), i0(beta)
    )


# --------------------------------------------------------------------------- cross product


@staged("cross", static_argnames=("axisa", "axisb", "axisc", "axis"))
def cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """NumPy's cross product of 2- or 3-vectors along ``axisa``/``axisb`` (``axis`` sets all
    three); two 2-vectors give the scalar z-component. (``linalg.cross`` is the array-API
    version, for 3-vectors only.)"""
    check_arraylike("cross", a, b)
    if axis is not None:
        axisa = axisb = axisc = axis
    a, b = promote_dtypes(asarray(a), asarray(b))
    a, b = moveaxis(a, axisa, -1), moveaxis(b, axisb, -1)
    na, nb = aval_of(a).shape[-1], aval_of(b).shape[-1]
    if na not in (2, 3) or nb not in (2, 3):
        raise ValueError("Dimension must be either 2 or 3 for cross product")
    if na == 2 and nb == 2:
        return multiply(a[..., 0], b[..., 1]) - multiply(a[..., 1], b[..., 0])
    a0, a1, b0, b1 = a[..., 0], a[..., 1], b[..., 0], b[..., 1]
    a2 = a[..., 2] if na == 3 else lax.broadcast_in_dim(const(a0, 0), aval_of(a0).shape, ())
    b2 = b[..., 2] if nb == 3 else lax.broadcast_in_dim(const(b0, 0), aval_of(b0).shape, ())
    parts = [
        multiply(a1, b2) - multiply(a2, b1),
        multiply(a2, b0) - multiply(a0, b2),
        multiply(a0, b1) - multiply(a1, b0),
    ]
    shape = aval_of(parts[0]).shape
    c = lax.concatenate(
        [lax.broadcast_in_dim(p, (1, *shape), tuple(range(1, len(shape) + 1))) for p in parts], 0
    )
    return moveaxis(c, 0, axisc)

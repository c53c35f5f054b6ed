"""``xform.scipy.special``: special functions as compositions of ``xform.lax``, as in JAX.

Where a naive formula has a bad derivative (``xlogy`` at ``x == 0``, ``log_ndtr`` far in the
tail, ``logit`` near the ends) the function carries a ``custom_jvp`` with JAX's rule, so
gradients are finite wherever JAX's are. ``gammaln`` and ``digamma`` carry rules too, because
``lax.digamma`` has no derivative of its own here: their derivatives go through a trigamma
written below (``polygamma(1, x)`` to about 1e-14).
"""

import math

import numpy as np

from xform import lax
from xform import numpy as xnp
from xform.custom_derivatives import custom_jvp
from xform.numpy._promote import aval_of, promote_args_inexact
from xform.numpy._reductions import reduction_axes

__all__ = [
    "logsumexp", "erf", "erfc", "erfinv", "expit", "logit", "gammaln", "digamma", "xlogy",
    "xlog1py", "entr", "log_ndtr", "ndtr", "ndtri",
]


def _const(x, value):
    """``value`` as a rank-0 array of ``x``'s dtype (strongly typed, as JAX's NumPy scalars)."""
    return xnp.asarray(np.asarray(value, aval_of(x).dtype))


def _polyval(coeffs, x):
    """``coeffs[0] * x**(n-1) + ... + coeffs[-1]`` by Horner's rule, coefficients in x's dtype."""
    coeffs = np.asarray(coeffs, aval_of(x).dtype)
    out = xnp.zeros_like(x)
    for c in coeffs:
        out = out * x + _const(x, c)
    return out


# --------------------------------------------------------------------------- logsumexp


def logsumexp(a, axis=None, b=None, keepdims=False, return_sign=False, where=None):
    """``log(sum(b * exp(a), axis))``, computed without overflow.

    The maximum is subtracted under ``stop_gradient``, so the gradient is the softmax of ``a``
    and stays finite for large inputs.

    Args:
      a: the input array.
      axis: an int, a tuple of ints or ``None`` (all axes) to reduce over.
      b: scaling factors for ``exp(a)``, broadcastable against ``a``; may be negative.
      keepdims: keep the reduced axes as size-1 dimensions.
      return_sign: return ``(log(abs(s)), sign(s))`` instead of ``log(s)``.
      where: elements to include in the sum.

    Returns:
      An array, or a pair of arrays if ``return_sign``. Without ``return_sign``, a negative
      sum gives NaN.

    Example:
      >>> logsumexp(xform.numpy.array([1000.0, 1000.0]))  # 1000 + log(2)
    """
    if where is not None:
        a = xnp.where(where, a, 0)
    if b is not None:
        a, b = promote_args_inexact("logsumexp", a, b)
        a = xnp.where(b != 0, a, -np.inf)
    else:
        a, = promote_args_inexact("logsumexp", a)
    ndim = aval_of(a).ndim
    dims = reduction_axes("logsumexp", ndim, axis)
    is_complex = xnp.iscomplexobj(a)
    amax = xnp.max(xnp.real(a) if is_complex else a, axis=dims, keepdims=keepdims,
                   where=where, initial=-np.inf)
    amax = lax.stop_gradient(xnp.where(xnp.isfinite(amax), amax, xnp.zeros_like(amax)))
    amax_with_dims = amax if keepdims else xnp.expand_dims(amax, dims)
    exp_a = xnp.exp(a - amax_with_dims.astype(aval_of(a).dtype))
    if b is not None:
        exp_a = exp_a * b
    sumexp = xnp.sum(exp_a, axis=dims, keepdims=keepdims, where=where)
    sign = xnp.sign(sumexp)
    if return_sign or not is_complex:
        sumexp = xnp.abs(sumexp)
    out = xnp.log(sumexp) + amax.astype(aval_of(sumexp).dtype)
    if return_sign:
        return out, sign
    if b is not None and not is_complex:
        out = xnp.where(sign < 0, _const(out, np.nan), out)
    return out


# --------------------------------------------------------------------------- simple wrappers


def erf(x):
    """The error function."""
    x, = promote_args_inexact("erf", x)
    return lax.erf(x)


def erfc(x):
    """The complementary error function ``1 - erf(x)``."""
    x, = promote_args_inexact("erfc", x)
    return lax.erfc(x)


def erfinv(x):
    """The inverse of ``erf`` on ``(-1, 1)``."""
    x, = promote_args_inexact("erfinv", x)
    return lax.erf_inv(x)


def expit(x):
    """The logistic sigmoid ``1 / (1 + exp(-x))``."""
    x, = promote_args_inexact("expit", x)
    return lax.logistic(x)


@custom_jvp
def logit(x):
    """The inverse of ``expit``: ``log(x / (1 - x))``."""
    x, = promote_args_inexact("logit", x)
    return xnp.log(x / (_const(x, 1) - x))


logit.defjvps(lambda g, ans, x: g / (x * (_const(x, 1) - x)))


def gammaln(x):
    """``log(abs(gamma(x)))``; its derivative is ``digamma`` (differentiable again)."""
    x, = promote_args_inexact("gammaln", x)
    return _gammaln(x)


def digamma(x):
    """The logarithmic derivative of the gamma function; its derivative is the trigamma
    function ``polygamma(1, x)``."""
    x, = promote_args_inexact("digamma", x)
    return _digamma(x)


# lax.digamma has no derivative rule (xform has no polygamma primitive yet), so lgamma's
# second derivative and digamma's first go through these rules and ``_trigamma`` instead.
@custom_jvp
def _gammaln(x):
    return lax.lgamma(x)


@custom_jvp
def _digamma(x):
    return lax.digamma(x)


_gammaln.defjvps(lambda g, ans, x: g * _digamma(x))
_digamma.defjvps(lambda g, ans, x: g * _trigamma(x))

_TRIGAMMA_SHIFT = 10


def _trigamma_positive(x):
    """``polygamma(1, x)`` for ``x > 0``: the recurrence ``psi1(x) = psi1(x + 1) + 1 / x^2``
    shifts ``x`` by 10, then the asymptotic series (Bernoulli numbers) to ``x^-11``."""
    head = xnp.zeros_like(x)
    for k in range(_TRIGAMMA_SHIFT):
        head = head + 1 / ((x + k) * (x + k))
    z = x + _TRIGAMMA_SHIFT
    inv = 1 / z
    inv2 = inv * inv
    # 1/z + 1/(2z^2) + 1/(6z^3) - 1/(30z^5) + 1/(42z^7) - 1/(30z^9) + 5/(66z^11)
    tail = inv2 * _polyval([5 / 66, -1 / 30, 1 / 42, -1 / 30, 1 / 6], inv2)
    return head + inv + inv2 / 2 + inv * tail


def _trigamma(x):
    """``polygamma(1, x)``, by reflection ``psi1(1 - x) + psi1(x) = pi^2 / sin^2(pi x)`` for
    ``x <= 0`` (infinite at the non-positive integers)."""
    negative = x <= 0
    reflected = _trigamma_positive(xnp.where(negative, 1 - x, x))
    sin_pi_x = xnp.sin(_const(x, np.pi) * x)
    reflection = _const(x, np.pi**2) / (sin_pi_x * sin_pi_x) - reflected
    return xnp.where(negative, reflection, reflected)


# --------------------------------------------------------------------------- x log y


def _xlogy(x, y):
    x, y = promote_args_inexact("xlogy", x, y)
    keep = (x != 0) | xnp.isnan(y)
    return xnp.where(keep, x * xnp.log(y), xnp.zeros_like(x))


@custom_jvp
def xlogy(x, y):
    """``x * log(y)``, 0 where ``x == 0`` (unless ``y`` is NaN); the derivative at ``x == 0``
    is JAX's: ``log(y) dx + x / y dy``."""
    return _xlogy(x, y)


def _xlogy_jvp(primals, tangents):
    (x, y), (x_dot, y_dot) = primals, tangents
    ans = xlogy(x, y)
    return ans, (x_dot * xnp.log(y) + y_dot * x / y).astype(aval_of(ans).dtype)


xlogy.defjvp(_xlogy_jvp)


@custom_jvp
def xlog1py(x, y):
    """``x * log1p(y)``, 0 where ``x == 0`` (unless ``y`` is NaN)."""
    x, y = promote_args_inexact("xlog1py", x, y)
    keep = (x != 0) | xnp.isnan(y)
    return xnp.where(keep, x * xnp.log1p(y), xnp.zeros_like(x))


def _xlog1py_jvp(primals, tangents):
    (x, y), (x_dot, y_dot) = primals, tangents
    ans = xlog1py(x, y)
    return ans, (x_dot * xnp.log1p(y) + y_dot * x / (1 + y)).astype(aval_of(ans).dtype)


xlog1py.defjvp(_xlog1py_jvp)


@custom_jvp
def _xlogx(x):
    return _xlogy(x, x)


_xlogx.defjvp(lambda primals, tangents: (
    _xlogx(primals[0]), tangents[0] * (xnp.log(primals[0]) + 1)))


def entr(x):
    """The elementwise entropy ``-x log(x)`` for ``x > 0``, 0 at 0, ``-inf`` for ``x < 0``."""
    x, = promote_args_inexact("entr", x)
    if xnp.iscomplexobj(x):
        raise ValueError("entr does not support complex-valued inputs.")
    return xnp.where(x < 0, xnp.full_like(x, -np.inf), -_xlogx(x))


# --------------------------------------------------------------------------- normal cdf


def _check_float(name, x):
    x = xnp.asarray(x)
    dtype = aval_of(x).dtype
    if dtype not in (np.float32, np.float64):
        raise TypeError(f"{name}: x.dtype={dtype} is not supported; use float32 or float64")
    return x


def ndtr(x):
    """The standard normal CDF, ``(1 + erf(x / sqrt(2))) / 2``, accurate in both tails."""
    return _ndtr(_check_float("ndtr", x))


def _ndtr(x):
    half_sqrt_2 = _const(x, 0.5 * np.sqrt(2.0))
    w = x * half_sqrt_2
    z = xnp.abs(w)
    y = xnp.where(z < half_sqrt_2, _const(x, 1) + lax.erf(w),
                  xnp.where(w > 0, _const(x, 2) - lax.erfc(z), lax.erfc(z)))
    return _const(x, 0.5) * y


# Cephes' piecewise rational approximations of ndtri (numerators p*, denominators q*).
_NDTRI_P0 = (-5.99633501014107895267E1, 9.80010754185999661536E1, -5.66762857469070293439E1,
             1.39312609387279679503E1, -1.23916583867381258016E0)
_NDTRI_Q0 = (1.0, 1.95448858338141759834E0, 4.67627912898881538453E0, 8.63602421390890590575E1,
             -2.25462687854119370527E2, 2.00260212380060660359E2, -8.20372256168333339912E1,
             1.59056225126211695515E1, -1.18331621121330003142E0)
_NDTRI_P1 = (4.05544892305962419923E0, 3.15251094599893866154E1, 5.71628192246421288162E1,
             4.40805073893200834700E1, 1.46849561928858024014E1, 2.18663306850790267539E0,
             -1.40256079171354495875E-1, -3.50424626827848203418E-2, -8.57456785154685413611E-4)
_NDTRI_Q1 = (1.0, 1.57799883256466749731E1, 4.53907635128879210584E1, 4.13172038254672030440E1,
             1.50425385692907503408E1, 2.50464946208309415979E0, -1.42182922854787788574E-1,
             -3.80806407691578277194E-2, -9.33259480895457427372E-4)
_NDTRI_P2 = (3.23774891776946035970E0, 6.91522889068984211695E0, 3.93881025292474443415E0,
             1.33303460815807542389E0, 2.01485389549179081538E-1, 1.23716634817820021358E-2,
             3.01581553508235416007E-4, 2.65806974686737550832E-6, 6.23974539184983293730E-9)
_NDTRI_Q2 = (1.0, 6.02427039364742014255E0, 3.67983563856160859403E0, 1.37702099489081330271E0,
             2.16236993594496635890E-1, 1.34204006088543189037E-2, 3.28014464682127739104E-4,
             2.89247864745380683936E-6, 6.79019408009981274425E-9)


def ndtri(p):
    """The inverse of ``ndtr``: ``x`` such that ``ndtr(x) == p``; ``-inf``/``inf`` at 0/1."""
    p = _check_float("ndtri", p)
    # Work with the smaller tail, sanitised away from 0 (unused there, but must not make NaNs).
    complement = xnp.where(p > _const(p, -np.expm1(-2.0)), _const(p, 1) - p, p)
    q = xnp.where(complement == 0, xnp.full_like(p, 0.5), complement)
    # Centre, q > exp(-2): x / sqrt(2 pi) = w + w^3 P0(w^2) / Q0(w^2).
    w = q - _const(p, 0.5)
    ww = w * w
    x_centre = w + w * ww * (_polyval(_NDTRI_P0, ww) / _polyval(_NDTRI_Q0, ww))
    x_centre = x_centre * -_const(p, np.sqrt(2.0 * np.pi))
    # Tail: x = z - log(z) / z - P(1/z) / Q(1/z) / z, z = sqrt(-2 log q).
    z = xnp.sqrt(_const(p, -2.0) * xnp.log(q))
    first = z - xnp.log(z) / z
    inv_z = 1 / z
    far = first - _polyval(_NDTRI_P2, inv_z) / _polyval(_NDTRI_Q2, inv_z) / z
    near = first - _polyval(_NDTRI_P1, inv_z) / _polyval(_NDTRI_Q1, inv_z) / z
    x = xnp.where(q > _const(p, np.exp(-2.0)), x_centre, xnp.where(z >= 8, far, near))
    x = xnp.where(p > _const(p, 1.0 - np.exp(-2.0)), x, -x)
    inf = xnp.full_like(p, np.inf)
    return xnp.where(p == 0, -inf, xnp.where(p == 1, inf, x))


# Where log_ndtr switches formulas: below ``lower`` the asymptotic series; above ``upper``
# ``log(1 - ndtr(-x)) ~ -ndtr(-x)``; ``log(ndtr(x))`` between (bounds chosen by JAX).
_LOG_NDTR_BOUNDS = {np.dtype(np.float32): (-10.0, 5.0), np.dtype(np.float64): (-20.0, 8.0)}


def _log_ndtr_impl(x, series_order):
    if not isinstance(series_order, int) or isinstance(series_order, bool):
        raise TypeError(f"log_ndtr: series_order must be a Python integer, got {series_order!r}")
    if series_order < 0:
        raise ValueError(f"log_ndtr: series_order must be non-negative, got {series_order}")
    if series_order > 30:
        raise ValueError(f"log_ndtr: series_order must be <= 30, got {series_order}")
    x = xnp.asarray(x)
    dtype = aval_of(x).dtype
    if dtype not in _LOG_NDTR_BOUNDS:
        raise TypeError(f"log_ndtr: x.dtype={dtype} is not supported; use float32 or float64")
    lower, upper = (_const(x, b) for b in _LOG_NDTR_BOUNDS[dtype])
    above = x > upper
    # One ndtr for both outer branches; the max keeps the unused one finite (NaN-free grads).
    ndtr_res = _ndtr(xnp.where(above, -x, xnp.maximum(x, lower)))
    return xnp.where(above, -ndtr_res,
                     xnp.where(x > lower, xnp.log(ndtr_res),
                               _log_ndtr_lower(xnp.minimum(x, lower), series_order)))


def _log_ndtr_lower(x, series_order):
    """``log(ndtr(x))`` for very negative ``x``: the asymptotic series of the Mills ratio."""
    x_2 = x * x
    log_scale = _const(x, -0.5) * x_2 - xnp.log(-x) - _const(x, 0.5 * np.log(2.0 * np.pi))
    return log_scale + xnp.log(_log_ndtr_series(x, series_order))


def _log_ndtr_series(x, series_order):
    """``1 + sum_n (-1)^n (2n-1)!! / x^(2n)`` for ``n = 1..series_order``."""
    if series_order <= 0:
        return _const(x, 1)
    x_2 = x * x
    even_sum = xnp.zeros_like(x)
    odd_sum = xnp.zeros_like(x)
    x_2n = x_2
    for n in range(1, series_order + 1):
        y = _const(x, float(math.prod(range(2 * n - 1, 1, -2)))) / x_2n
        if n % 2:
            odd_sum = odd_sum + y
        else:
            even_sum = even_sum + y
        x_2n = x_2n * x_2
    return _const(x, 1) + even_sum - odd_sum


_log_ndtr = custom_jvp(_log_ndtr_impl, nondiff_argnums=(1,))


def _norm_logpdf(x):
    return _const(x, -0.5) * (x * x) - _const(x, np.log(np.sqrt(2 * np.pi)))


def _log_ndtr_jvp(series_order, primals, tangents):
    (x,), (t,) = primals, tangents
    ans = _log_ndtr(x, series_order)
    return ans, t * xnp.exp(_norm_logpdf(x) - ans)


_log_ndtr.defjvp(_log_ndtr_jvp)


def log_ndtr(x, series_order=3):
    """``log(ndtr(x))``, accurate far into both tails (JAX's asymptotic series below -20 in
    float64, -10 in float32), with the derivative ``exp(logpdf(x) - log_ndtr(x))``.

    Args:
      x: a float32 or float64 array.
      series_order: terms of the asymptotic series, an int in ``[0, 30]``.
    """
    return _log_ndtr(x, series_order)

"""The elementary special functions: logsumexp, the error-function and normal-cdf family,
the gamma family on ``xform.lax``'s primitives, Bessel ``i0``/``i1``, entropies, Box-Cox and
softmax."""

import math
import operator

import numpy as np

from xform import dtypes, lax
from xform import numpy as xnp
from xform.api.autodiff import jvp
from xform.custom_derivatives import custom_jvp
from xform.numpy._promote import aval_of, check_arraylike, promote_args_inexact
from xform.numpy._reductions import reduction_axes
from xform.numpy._staged import staged

__all__ = [
    "bernoulli",
    "beta",
    "betainc",
    "betaln",
    "boxcox",
    "boxcox1p",
    "comb",
    "digamma",
    "entr",
    "erf",
    "erfc",
    "erfinv",
    "expit",
    "factorial",
    "gamma",
    "gammainc",
    "gammaincc",
    "gammaln",
    "gammasgn",
    "i0",
    "i0e",
    "i1",
    "i1e",
    "kl_div",
    "log_ndtr",
    "log_softmax",
    "loggamma",
    "logit",
    "logsumexp",
    "multigammaln",
    "ndtr",
    "ndtri",
    "poch",
    "polygamma",
    "rel_entr",
    "softmax",
    "xlog1py",
    "xlogy",
    "zeta",
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


def _while_active(active, body, state):
    """Iterate ``state = body(state)`` elementwise while ``active(state)`` holds anywhere;
    finished elements keep their values (as a loop per element would)."""

    def cond(carry):
        return xnp.any(active(carry))

    def step(carry):
        keep = active(carry)
        new = body(carry)
        return tuple(xnp.where(keep, n, o) for n, o in zip(new, carry, strict=True))

    return lax.while_loop(cond, step, state)


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
        (a,) = promote_args_inexact("logsumexp", a)
    ndim = aval_of(a).ndim
    dims = reduction_axes("logsumexp", ndim, axis)
    is_complex = xnp.iscomplexobj(a)
    amax = xnp.max(
        xnp.real(a) if is_complex else a, axis=dims, keepdims=keepdims, where=where, initial=-np.inf
    )
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
    (x,) = promote_args_inexact("erf", x)
    return lax.erf(x)


def erfc(x):
    """The complementary error function ``1 - erf(x)``."""
    (x,) = promote_args_inexact("erfc", x)
    return lax.erfc(x)


def erfinv(x):
    """The inverse of ``erf`` on ``(-1, 1)``."""
    (x,) = promote_args_inexact("erfinv", x)
    return lax.erf_inv(x)


def expit(x):
    """The logistic sigmoid ``1 / (1 + exp(-x))``."""
    (x,) = promote_args_inexact("expit", x)
    return lax.logistic(x)


@custom_jvp
def logit(x):
    """The inverse of ``expit``: ``log(x / (1 - x))``."""
    (x,) = promote_args_inexact("logit", x)
    return xnp.log(x / (1 - x))  # a Python 1 keeps a weakly typed x weak, as in JAX


logit.defjvps(lambda g, ans, x: g / (x * (1 - x)))


def gammaln(x):
    """``log(abs(gamma(x)))``; its derivative is ``digamma`` (differentiable again)."""
    (x,) = promote_args_inexact("gammaln", x)
    return lax.lgamma(x)


def digamma(x):
    """The logarithmic derivative of the gamma function; its derivative is the trigamma
    function ``polygamma(1, x)``."""
    (x,) = promote_args_inexact("digamma", x)
    return lax.digamma(x)


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


_xlogx.defjvp(
    lambda primals, tangents: (_xlogx(primals[0]), tangents[0] * (xnp.log(primals[0]) + 1))
)


def entr(x):
    """The elementwise entropy ``-x log(x)`` for ``x > 0``, 0 at 0, ``-inf`` for ``x < 0``."""
    (x,) = promote_args_inexact("entr", x)
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
    y = xnp.where(
        z < half_sqrt_2,
        _const(x, 1) + lax.erf(w),
        xnp.where(w > 0, _const(x, 2) - lax.erfc(z), lax.erfc(z)),
    )
    return _const(x, 0.5) * y


# Cephes' piecewise rational approximations of ndtri (numerators p*, denominators q*).
_NDTRI_P0 = (
    -5.99633501014107895267e1,
    9.80010754185999661536e1,
    -5.66762857469070293439e1,
    1.39312609387279679503e1,
    -1.23916583867381258016e0,
)
_NDTRI_Q0 = (
    1.0,
    1.95448858338141759834e0,
    4.67627912898881538453e0,
    8.63602421390890590575e1,
    -2.25462687854119370527e2,
    2.00260212380060660359e2,
    -8.20372256168333339912e1,
    1.59056225126211695515e1,
    -1.18331621121330003142e0,
)
_NDTRI_P1 = (
    4.05544892305962419923e0,
    3.15251094599893866154e1,
    5.71628192246421288162e1,
    4.40805073893200834700e1,
    1.46849561928858024014e1,
    2.18663306850790267539e0,
    -1.40256079171354495875e-1,
    -3.50424626827848203418e-2,
    -8.57456785154685413611e-4,
)
_NDTRI_Q1 = (
    1.0,
    1.57799883256466749731e1,
    4.53907635128879210584e1,
    4.13172038254672030440e1,
    1.50425385692907503408e1,
    2.50464946208309415979e0,
    -1.42182922854787788574e-1,
    -3.80806407691578277194e-2,
    -9.33259480895457427372e-4,
)
_NDTRI_P2 = (
    3.23774891776946035970e0,
    6.91522889068984211695e0,
    3.93881025292474443415e0,
    1.33303460815807542389e0,
    2.01485389549179081538e-1,
    1.23716634817820021358e-2,
    3.01581553508235416007e-4,
    2.65806974686737550832e-6,
    6.23974539184983293730e-9,
)
_NDTRI_Q2 = (
    1.0,
    6.02427039364742014255e0,
    3.67983563856160859403e0,
    1.37702099489081330271e0,
    2.16236993594496635890e-1,
    1.34204006088543189037e-2,
    3.28014464682127739104e-4,
    2.89247864745380683936e-6,
    6.79019408009981274425e-9,
)


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
    return xnp.where(
        above,
        -ndtr_res,
        xnp.where(
            x > lower, xnp.log(ndtr_res), _log_ndtr_lower(xnp.minimum(x, lower), series_order)
        ),
    )


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


# --------------------------------------------------------------------------- gamma family


def _check_real(name, *args):
    if any(xnp.iscomplexobj(a) for a in args):
        raise ValueError(f"{name} does not support complex-valued inputs.")


@staged("gammasgn")
def gammasgn(x):
    """The sign of the gamma function: NaN at the poles (non-positive integers), ``-inf``
    and NaN; ``-1`` at ``-0.0``."""
    (x,) = promote_args_inexact("gammasgn", x)
    _check_real("gammasgn", x)
    floor_x = xnp.floor(x)
    negative = x < 0
    nan = (negative & (x == floor_x)) | xnp.isnan(x)
    minus = (negative & (xnp.fmod(floor_x, _const(x, 2)) != 0)) | ((x == 0) & xnp.signbit(x))
    one = _const(x, 1)
    return xnp.where(nan, _const(x, np.nan), xnp.where(minus, -one, one))


# Lanczos' approximation with g = 7 and 9 terms (coefficients from GSL's gamma.c).
_LANCZOS_G = 7.0
_LANCZOS_COEFFS = (
    0.99999999999980993,
    676.5203681218851,
    -1259.1392167224028,
    771.32342877765313,
    -176.61502916214059,
    12.507343278686905,
    -0.13857109526572012,
    9.9843695780195716e-6,
    1.5056327351493116e-7,
)


def _complex_loggamma_lanczos(z):
    """A logarithm of ``gamma(z)`` for complex ``z``: Lanczos' approximation, with the
    reflection ``gamma(z) gamma(1 - z) = pi / sin(pi z)`` for ``Re(z) < 1/2``."""
    reflect = xnp.real(z) < 0.5
    zz = xnp.where(reflect, 1 - z, z) - 1
    series = _const(z, _LANCZOS_COEFFS[0])
    for k, c in enumerate(_LANCZOS_COEFFS[1:], start=1):
        series = series + _const(z, c) / (zz + _const(z, k))
    t = zz + _const(z, _LANCZOS_G + 0.5)
    log_lanczos = (
        _const(z, 0.5 * np.log(2 * np.pi))
        + (zz + _const(z, 0.5)) * xnp.log(t)
        - t
        + xnp.log(series)
    )
    z_reflect = xnp.where(reflect, z, _const(z, 0.5))  # keeps the unused branch NaN-free
    reflected = (
        _const(z, np.log(np.pi)) - xnp.log(xnp.sin(_const(z, np.pi) * z_reflect)) - log_lanczos
    )
    return xnp.where(reflect, reflected, log_lanczos)


def _complex_poles(z):
    """Where complex ``gamma`` is undefined: NaN and the non-positive integers; and ``z``
    made safe there (1)."""
    re = xnp.real(z)
    bad = xnp.isnan(z) | ((xnp.imag(z) == 0) & (re == xnp.floor(re)) & (re <= 0))
    return bad, xnp.where(bad, xnp.ones_like(z), z)


def gamma(x):
    """The gamma function: ``gammasgn(x) * exp(gammaln(x))`` for real ``x``; for complex
    ``x`` ``exp`` of Lanczos' ``log(gamma)``, NaN at the poles."""
    (x,) = promote_args_inexact("gamma", x)
    if xnp.iscomplexobj(x):
        bad, safe = _complex_poles(x)
        return xnp.where(
            bad, _const(x, complex(np.nan, np.nan)), xnp.exp(_complex_loggamma_lanczos(safe))
        )
    return gammasgn(x) * xnp.exp(lax.lgamma(x))


def loggamma(x):
    """The principal branch of ``log(gamma(x))``: for real ``x``, ``gammaln(x)`` where
    ``x > 0`` and NaN elsewhere; for complex ``x`` the branch with SciPy's single cut along
    the negative real axis (``loggamma(z + n) - sum_k log(z + k)`` shifts into
    ``Re(z) >= 1/2``); NaN at the poles."""
    (x,) = promote_args_inexact("loggamma", x)
    if not xnp.iscomplexobj(x):
        return xnp.where(x > 0, lax.lgamma(x), _const(x, np.nan))
    bad, z = _complex_poles(x)
    shift = xnp.maximum(xnp.ceil(0.5 - xnp.real(z)), _const(xnp.real(z), 0))
    shift_c = lax.complex(shift, xnp.zeros_like(shift))

    def body(state):
        k, total = state
        return k + 1, total + xnp.log(z + lax.complex(k, xnp.zeros_like(k)))

    _, logs = _while_active(
        lambda s: s[0] < shift, body, (xnp.zeros_like(shift), xnp.zeros_like(z))
    )
    out = _complex_loggamma_lanczos(z + shift_c) - logs
    return xnp.where(bad, _const(x, complex(np.nan, np.nan)), out)


def factorial(n, exact=False):
    """``n!`` as a float, ``gamma(n + 1)``; 0 for ``n < 0``. ``exact=True`` is not
    supported (as in JAX)."""
    if exact:
        raise NotImplementedError("factorial with exact=True")
    (n,) = promote_args_inexact("factorial", n)
    return xnp.where(n < 0, _const(n, 0), xnp.exp(lax.lgamma(n + _const(n, 1))))


def comb(N, k, *, repetition=False):  # noqa: N803  (SciPy's name)
    """The binomial coefficient "N choose k" as a float; 0 where ``k < 0``, ``N < 0`` or
    ``k > N``. With ``repetition``, ``comb(N + k - 1, k)``."""
    N, k = promote_args_inexact("comb", N, k)  # noqa: N806
    if repetition:
        result = comb(N + k - _const(N, 1), k)
        return xnp.where((k == 0) & (N >= 0), _const(result, 1), result)
    valid = (k <= N) & (N >= 0) & (k >= 0)
    safe_n = xnp.where(valid, N, _const(N, 0))
    safe_k = xnp.where(valid, k, _const(k, 0))
    one = _const(N, 1)
    log_result = (
        lax.lgamma(safe_n + one) - lax.lgamma(safe_k + one) - lax.lgamma(safe_n + one - safe_k)
    )
    return xnp.where(valid, xnp.exp(log_result), _const(N, 0))


# Coefficients of the Stirling-type series of ``del(b) - del(a + b)`` (SciPy's cdflib algdiv).
_ALGDIV_C = (
    -0.165322962780713e-02,
    0.837308034031215e-03,
    -0.595202931351870e-03,
    0.793650666825390e-03,
    -0.277777777760991e-02,
    0.833333333333333e-01,
)


def _algdiv(a, b):
    """``gammaln(b) - gammaln(a + b)`` for ``b >= 8`` and ``a <= b``, without cancellation."""
    h = a / b
    x = h / (1 + h)
    x2 = x * x
    s = [_const(a, 1)]  # s_n = (1 - x^n) / (1 - x) for n = 1, 3, 5, ..., 11
    for _ in range(5):
        s.append(1 + (x + x2 * s[-1]))
    t = (1 / b) ** 2
    w = _const(a, _ALGDIV_C[0]) * s[5]
    for c, s_n in zip(_ALGDIV_C[1:], reversed(s[:5]), strict=True):
        w = w * t + _const(a, c) * s_n
    w = w * (x / b)
    u = (b + (a - _const(a, 0.5))) * xnp.log1p(a / b)
    v = a * (xnp.log(b) - 1)
    return xnp.where(u <= v, (w - v) - u, (w - u) - v)


def betaln(a, b):
    """``log(abs(beta(a, b)))``, accurate for large arguments (SciPy's ``algdiv`` when the
    larger argument is at least 8, as JAX: about 1e-7 relative to SciPy there)."""
    a, b = promote_args_inexact("betaln", a, b)
    a, b = xnp.minimum(a, b), xnp.maximum(a, b)
    small_b = lax.lgamma(a) + (lax.lgamma(b) - lax.lgamma(a + b))
    large_b = lax.lgamma(a) + _algdiv(a, b)
    return xnp.where(b < 8, small_b, large_b)


def beta(a, b):
    """The beta function ``gamma(a) gamma(b) / gamma(a + b)`` (real inputs only)."""
    a, b = promote_args_inexact("beta", a, b)
    _check_real("beta", a, b)
    sign = gammasgn(a) * gammasgn(b) * gammasgn(a + b)
    return sign * xnp.exp(betaln(a, b))


def betainc(a, b, x):
    """The regularized incomplete beta function ``I_x(a, b)``; differentiable in ``x``."""
    a, b, x = promote_args_inexact("betainc", a, b, x)
    _check_real("betainc", a, b, x)
    return lax.betainc(a, b, x)


def gammainc(a, x):
    """The regularized lower incomplete gamma function ``P(a, x)``; differentiable in both
    arguments (in ``a`` through ``lax.igamma_grad_a``)."""
    a, x = promote_args_inexact("gammainc", a, x)
    return lax.igamma(a, x)


def gammaincc(a, x):
    """The regularized upper incomplete gamma function ``Q(a, x) = 1 - P(a, x)``."""
    a, x = promote_args_inexact("gammaincc", a, x)
    return lax.igammac(a, x)


def multigammaln(a, d):
    """The log of the multivariate gamma function of dimension ``d`` (a concrete int):
    ``d (d - 1) / 4 log(pi) + sum_i gammaln(a - i / 2)`` for ``i < d``."""
    d = operator.index(d)
    a, d_arr = promote_args_inexact("multigammaln", a, d)
    constant = _const(a, 0.25) * d_arr * (d_arr - 1) * _const(a, np.log(np.pi))
    offsets = _const(a, np.arange(d) / 2)
    a_ = xnp.expand_dims(a, -1)
    return xnp.sum(lax.lgamma(a_ - offsets), axis=-1) + constant


@custom_jvp
def poch(z, m):
    """The Pochhammer symbol ``gamma(z + m) / gamma(z)`` (1 where ``m == 0``)."""
    z, m = promote_args_inexact("poch", z, m)
    if xnp.iscomplexobj(z):
        raise ValueError("poch does not support complex-valued inputs.")
    return xnp.where(m == 0, _const(z, 1), gamma(z + m) / gamma(z))


poch.defjvps(
    lambda z_dot, ans, z, m: (lax.digamma(z + m) - lax.digamma(z)) * ans * z_dot,
    lambda m_dot, ans, z, m: lax.digamma(z + m) * ans * m_dot,
)


def polygamma(n, x):
    """The ``n``-th derivative of ``digamma``; ``n`` must have an integer dtype.
    Differentiable in ``x``."""
    n_dtype = aval_of(xnp.asarray(n)).dtype
    if not np.issubdtype(n_dtype, np.integer):
        raise ValueError(f"Argument `n` to polygamma must be of integer type. Got dtype {n_dtype}.")
    n, x = promote_args_inexact("polygamma", n, x)
    _check_real("polygamma", x)
    return lax.polygamma(n, x)


# --------------------------------------------------------------------------- Bernoulli numbers


def _bernoulli_host(n):
    """``B_0 .. B_n`` in float64 on the host: ``B_2k = (-1)^(k+1) 2 (2k)! zeta(2k) / (2 pi)^2k``
    (the odd ones past ``B_1`` vanish); ``inf`` once they overflow."""
    values = np.zeros(n + 1)
    values[:3] = [1.0, -0.5, 1 / 6][: n + 1]
    m = np.arange(4, n + 1, 2, dtype=np.float64)
    log_abs = np.array([math.lgamma(v + 1) for v in m]) - m * np.log(2 * np.pi)
    # zeta(m): 1000 terms and the Euler-Maclaurin tail (relative error far below 1e-16).
    big_n = 1000.0
    zeta_m = (
        np.sum(np.arange(1.0, big_n)[:, None] ** -m, axis=0)
        + big_n ** (1 - m) / (m - 1)
        + big_n**-m / 2
        + m * big_n ** (-m - 1) / 12
    )
    with np.errstate(over="ignore"):
        values[4::2] = np.where(m % 4 == 0, -2.0, 2.0) * np.exp(log_abs) * zeta_m
    return values


def bernoulli(n):
    """The first ``n + 1`` Bernoulli numbers ``B_0 .. B_n`` (convention ``B_1 = -1/2``), in
    the default float dtype. ``n`` must be a concrete non-negative int."""
    n = operator.index(n)
    if n < 0:
        raise ValueError(f"bernoulli: n must be a non-negative integer, got {n}")
    return xnp.asarray(_bernoulli_host(n).astype(dtypes.default_float()))


@custom_jvp
def zeta(x, q=None):
    """The Hurwitz zeta function ``sum_n (n + q)^-x``; ``q=None`` (Riemann) is not
    supported, as in JAX. Differentiable in ``q`` (``-x zeta(x + 1, q)``)."""
    if q is None:
        raise NotImplementedError(
            "Riemann zeta function not implemented; pass q != None to "
            "compute the Hurwitz Zeta function."
        )
    x, q = promote_args_inexact("zeta", x, q)
    return lax.zeta(x, q)


# B_2j / (2j)! for j = 1..16: the Euler-Maclaurin coefficients of the zeta series below.
_ZETA_COEFFS = _bernoulli_host(32)[2::2] / np.array([math.factorial(m) for m in range(2, 33, 2)])


def _zeta_series(s, a):
    """The Euler-Maclaurin form of ``zeta(s, a)`` (Johansson 2015, eq. 5): ``N`` terms of the
    sum, the integral of the tail and ``M`` correction terms; written in differentiable
    operations, so its JVP gives the derivative in ``s`` that ``lax.zeta`` lacks."""
    terms = 8 if aval_of(a).dtype == np.float32 else 16
    n = _const(a, terms)
    k = _const(a, np.arange(terms))
    head = xnp.sum((xnp.expand_dims(a, -1) + k) ** -xnp.expand_dims(s, -1), axis=-1)
    a_n = a + n
    one = _const(s, 1)
    integral = a_n ** (one - s) / (s - one)
    t0 = a_n**-s
    # (s)_(2j-1) / a_n^(2j-1) for j = 1..M, as a running product.
    ratio = s / a_n
    correction = xnp.zeros_like(ratio)
    for j, coeff in enumerate(_ZETA_COEFFS[:terms]):
        if j:
            ratio = ratio * (s + (2 * j - 1)) * (s + 2 * j) / (a_n * a_n)
        correction = correction + _const(s, coeff) * ratio
    return head + integral + t0 * (_const(s, 0.5) + correction)


def _zeta_jvp(primals, tangents):
    (x, q), (x_dot, q_dot) = primals, tangents
    x, q = promote_args_inexact("zeta", x, q)
    x_dot, q_dot = (xnp.asarray(t, aval_of(x).dtype) for t in (x_dot, q_dot))
    _, ans_dot = jvp(_zeta_series, (x, q), (x_dot, q_dot))
    return zeta(x, q), ans_dot


zeta.defjvp(_zeta_jvp)


# --------------------------------------------------------------------------- Bessel functions


def i0e(x):
    """The exponentially scaled modified Bessel function ``exp(-|x|) I0(x)``."""
    (x,) = promote_args_inexact("i0e", x)
    return lax.bessel_i0e(x)


def i0(x):
    """The modified Bessel function of the first kind of order 0."""
    (x,) = promote_args_inexact("i0", x)
    return xnp.exp(xnp.abs(x)) * lax.bessel_i0e(x)


def i1e(x):
    """The exponentially scaled modified Bessel function ``exp(-|x|) I1(x)``."""
    (x,) = promote_args_inexact("i1e", x)
    return lax.bessel_i1e(x)


def i1(x):
    """The modified Bessel function of the first kind of order 1."""
    (x,) = promote_args_inexact("i1", x)
    return xnp.exp(xnp.abs(x)) * lax.bessel_i1e(x)


# --------------------------------------------------------------------------- entropies


def rel_entr(p, q):
    """The relative entropy ``p log(p / q)`` for ``p, q > 0``; 0 where ``p == 0 <= q``;
    ``inf`` elsewhere."""
    p, q = promote_args_inexact("rel_entr", p, q)
    _check_real("rel_entr", p, q)
    zero = _const(p, 0)
    both_positive = (p > zero) & (q > zero)
    safe_p = xnp.where(both_positive, p, _const(p, 1))
    safe_q = xnp.where(both_positive, q, _const(q, 1))
    value = _xlogx(safe_p) - xlogy(safe_p, safe_q)
    return xnp.where(
        both_positive, value, xnp.where((p == zero) & (q >= zero), zero, _const(p, np.inf))
    )


def kl_div(p, q):
    """The Kullback-Leibler divergence term ``rel_entr(p, q) - p + q``."""
    p, q = promote_args_inexact("kl_div", p, q)
    _check_real("kl_div", p, q)
    return rel_entr(p, q) - p + q


# --------------------------------------------------------------------------- Box-Cox


def _boxcox(name, x, lmbda, log_fn):
    x, lmbda = promote_args_inexact(name, x, lmbda)
    lmbda_is_zero = lmbda == 0
    safe_lmbda = xnp.where(lmbda_is_zero, xnp.ones_like(lmbda), lmbda)
    log_x = log_fn(x)
    return xnp.where(lmbda_is_zero, log_x, xnp.expm1(safe_lmbda * log_x) / safe_lmbda)


def boxcox(x, lmbda):
    """The Box-Cox transform ``(x^lmbda - 1) / lmbda``, ``log(x)`` where ``lmbda == 0``."""
    return _boxcox("boxcox", x, lmbda, xnp.log)


def boxcox1p(x, lmbda):
    """The Box-Cox transform of ``1 + x``, accurate for small ``x``."""
    return _boxcox("boxcox1p", x, lmbda, xnp.log1p)


# --------------------------------------------------------------------------- softmax


def softmax_over(x, axis, where=None):
    """``exp(x) / sum(exp(x), axis)``, stable for large inputs, 0 outside ``where``: the one
    implementation behind ``jax.scipy.special.softmax`` and ``jax.nn.softmax``."""
    check_arraylike("softmax", x)
    x = xnp.asarray(x)
    x_max = xnp.max(x, axis, where=where, initial=-np.inf, keepdims=True)
    x_safe = x if where is None else xnp.where(where, x, -np.inf)
    unnormalized = xnp.exp(x_safe - lax.stop_gradient(x_max))
    result = unnormalized / xnp.sum(unnormalized, axis, where=where, keepdims=True)
    return result if where is None else xnp.where(where, result, 0)


def log_softmax_over(x, axis, where=None):
    """``x - logsumexp(x, axis)``, stable for large inputs, ``-inf`` outside ``where``: the
    one implementation behind both ``log_softmax``s."""
    check_arraylike("log_softmax", x)
    x = xnp.asarray(x)
    x_max = xnp.max(x, axis, where=where, initial=-np.inf, keepdims=True)
    x_safe = x if where is None else xnp.where(where, x, -np.inf)
    shifted = x_safe - lax.stop_gradient(x_max)
    result = shifted - xnp.log(xnp.sum(xnp.exp(shifted), axis, where=where, keepdims=True))
    return result if where is None else xnp.where(where, result, -np.inf)


def softmax(x, /, *, axis=None):
    """``exp(x) / sum(exp(x), axis)`` over ``axis`` (all axes by default, as SciPy's)."""
    return softmax_over(x, axis)


def log_softmax(x, /, *, axis=None):
    """``x - logsumexp(x, axis)`` over ``axis`` (all axes by default, as SciPy's)."""
    return log_softmax_over(x, axis)

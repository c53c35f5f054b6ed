"""Helpers shared by the distributions: clamping and the special functions
(regularized incomplete gamma and beta, ``log B``, ``log(1 - exp(-x))``) written straight on
``xform.lax``, so this package does not wait on ``xform.scipy.special`` for them."""

import math

from xform import lax
from xform import numpy as xnp
from xform.numpy._promote import promote_args_inexact


def clamp(x, low, high):
    """``x`` clamped to ``[low, high]`` (Python floats, so ``x``'s dtype and weak type stay;
    NaN stays NaN), as ``lax.clamp`` with JAX's ``_const`` bounds."""
    return xnp.minimum(xnp.maximum(x, low), high)


def gammainc(a, x):
    """The regularized lower incomplete gamma function ``P(a, x)``."""
    a, x = promote_args_inexact("gammainc", a, x)
    return lax.igamma(a, x)


def gammaincc(a, x):
    """The regularized upper incomplete gamma function ``Q(a, x) = 1 - P(a, x)``."""
    a, x = promote_args_inexact("gammaincc", a, x)
    return lax.igammac(a, x)


def betainc(a, b, x):
    """The regularized incomplete beta function ``I_x(a, b)``."""
    a, b, x = promote_args_inexact("betainc", a, b, x)
    return lax.betainc(a, b, x)


# Series for log(gamma(b) / gamma(a + b)) when b >= 8 (scipy's cdflib ``algdiv``), highest
# power of 1/b**2 first.
_ALGDIV = (
    -0.165322962780713e-02,
    0.837308034031215e-03,
    -0.595202931351870e-03,
    0.793650666825390e-03,
    -0.277777777760991e-02,
)


def _log_gamma_ratio(a, b):
    """``log(gamma(b) / gamma(a + b))`` for ``a <= b``, ``b >= 8``, without cancellation."""
    h = a / b
    c = h / (1 + h)
    c2 = c * c
    # s_k = 1 + c + ... + c**(k-1), odd k: the factors of the series terms.
    s = [1 + (c + c2)]
    for _ in range(4):
        s.append(1 + (c + c2 * s[-1]))
    t = (1 / b) ** 2
    w = _ALGDIV[0] * s[4] * t
    for coeff, s_k in zip(_ALGDIV[1:], s[3::-1], strict=True):
        w = (w + coeff * s_k) * t
    w = (w + 0.833333333333333e-01) * (c / b)
    u = (b + (a - 0.5)) * xnp.log1p(a / b)
    v = a * (xnp.log(b) - 1)
    return xnp.where(u <= v, (w - v) - u, (w - u) - v)


def betaln(a, b):
    """``log B(a, b)``, accurate for large arguments as JAX's ``betaln``."""
    a, b = promote_args_inexact("betaln", a, b)
    a, b = xnp.minimum(a, b), xnp.maximum(a, b)
    small_b = lax.lgamma(a) + (lax.lgamma(b) - lax.lgamma(a + b))
    large_b = lax.lgamma(a) + _log_gamma_ratio(a, b)
    return xnp.where(b < 8, small_b, large_b)


def log1mexp(x):
    """``log(1 - exp(-x))`` for ``x > 0``, accurate near 0 and for large ``x``."""
    return xnp.where(x < math.log(2.0), xnp.log(-xnp.expm1(-x)), xnp.log1p(-xnp.exp(-x)))

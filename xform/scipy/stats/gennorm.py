"""``xform.scipy.stats.gennorm``: the generalized normal distribution with shape ``beta``."""

from xform import lax
from xform import numpy as xnp
from xform.numpy._promote import promote_args_inexact

__all__ = ["logpdf", "pdf", "cdf"]


def logpdf(x, beta):
    """The log density ``log(beta / 2) - lgamma(1 / beta) - |x|**beta``."""
    x, beta = promote_args_inexact("gennorm.logpdf", x, beta)
    return xnp.log(0.5 * beta) - lax.lgamma(1 / beta) - xnp.abs(x) ** beta


def pdf(x, beta):
    """The generalized normal density at ``x``."""
    return xnp.exp(logpdf(x, beta))


def cdf(x, beta):
    """The generalized normal CDF, ``(1 + sign(x) P(1/beta, |x|**beta)) / 2``."""
    x, beta = promote_args_inexact("gennorm.cdf", x, beta)
    return 0.5 * (1 + xnp.sign(x) * lax.igamma(1 / beta, xnp.abs(x) ** beta))

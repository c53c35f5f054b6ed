"""``xform.scipy.stats.expon``: the exponential distribution with ``loc`` and ``scale``."""

import numpy as np

from xform import numpy as xnp
from xform.numpy._promote import promote_args_inexact

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf"]


def logpdf(x, loc=0, scale=1):
    """The log density ``-(x - loc) / scale - log scale``; ``-inf`` below ``loc``."""
    x, loc, scale = promote_args_inexact("expon.logpdf", x, loc, scale)
    log_probs = -((x - loc) / scale + xnp.log(scale))
    return xnp.where(x < loc, -np.inf, log_probs)


def pdf(x, loc=0, scale=1):
    """The exponential density at ``x``."""
    return xnp.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    """The exponential CDF, ``-expm1(-(x - loc) / scale)``; 0 below ``loc``."""
    x, loc, scale = promote_args_inexact("expon.cdf", x, loc, scale)
    neg_z = (loc - x) / scale
    return xnp.where(x < loc, xnp.zeros_like(neg_z), -xnp.expm1(neg_z))


def logcdf(x, loc=0, scale=1):
    """The log of the exponential CDF, ``log1p(-sf(x))``."""
    return xnp.log1p(-sf(x, loc, scale))


def logsf(x, loc=0, scale=1):
    """The log survival function, ``-(x - loc) / scale``; 0 below ``loc``."""
    x, loc, scale = promote_args_inexact("expon.logsf", x, loc, scale)
    neg_z = (loc - x) / scale
    return xnp.where(x < loc, xnp.zeros_like(neg_z), neg_z)


def sf(x, loc=0, scale=1):
    """The exponential survival function."""
    return xnp.exp(logsf(x, loc, scale))


def ppf(q, loc=0, scale=1):
    """The quantile function, ``loc - scale log1p(-q)``; NaN for ``q`` outside ``[0, 1]``."""
    q, loc, scale = promote_args_inexact("expon.ppf", q, loc, scale)
    quantile = loc - scale * xnp.log1p(-q)
    return xnp.where(xnp.isnan(q) | (q < 0) | (q > 1), np.nan, quantile)

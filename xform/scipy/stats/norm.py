"""``xform.scipy.stats.norm``: the normal distribution with ``loc`` and ``scale``."""

import numpy as np

from xform import numpy as xnp
from xform.numpy._promote import promote_args_inexact
from xform.scipy import special

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf", "isf"]


def logpdf(x, loc=0, scale=1):
    """The log of the normal density at ``x``: ``-((x - loc) / scale)**2 / 2 - log(scale
    sqrt(2 pi))``."""
    x, loc, scale = promote_args_inexact("norm.logpdf", x, loc, scale)
    scale_sqrd = scale * scale
    log_normalizer = xnp.log(2 * np.pi * scale_sqrd)
    quadratic = (x - loc) * (x - loc) / scale_sqrd
    return (log_normalizer + quadratic) / -2


def pdf(x, loc=0, scale=1):
    """The normal density at ``x``."""
    return xnp.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    """The normal cumulative distribution function at ``x``."""
    x, loc, scale = promote_args_inexact("norm.cdf", x, loc, scale)
    return special.ndtr((x - loc) / scale)


def logcdf(x, loc=0, scale=1):
    """The log of the normal CDF at ``x``, accurate in the lower tail."""
    x, loc, scale = promote_args_inexact("norm.logcdf", x, loc, scale)
    return special.log_ndtr((x - loc) / scale)


def sf(x, loc=0, scale=1):
    """The survival function ``1 - cdf(x)``, accurate in the upper tail."""
    x, loc, scale = promote_args_inexact("norm.sf", x, loc, scale)
    return cdf(-x, -loc, scale)


def logsf(x, loc=0, scale=1):
    """The log of the survival function, accurate in the upper tail."""
    x, loc, scale = promote_args_inexact("norm.logsf", x, loc, scale)
    return logcdf(-x, -loc, scale)


def ppf(q, loc=0, scale=1):
    """The quantile function, the inverse of ``cdf``."""
    q, loc, scale = promote_args_inexact("norm.ppf", q, loc, scale)
    return special.ndtri(q) * scale + loc


def isf(q, loc=0, scale=1):
    """The inverse survival function, ``ppf(1 - q)``."""
    q, loc, scale = promote_args_inexact("norm.isf", q, loc, scale)
    return ppf(1 - q, loc, scale)

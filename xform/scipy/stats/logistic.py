"""``xform.scipy.stats.logistic``: the logistic distribution with ``loc`` and ``scale``."""

from xform import numpy as xnp
from xform.numpy._promote import promote_args_inexact
from xform.scipy.special import expit, logit

__all__ = ["logpdf", "pdf", "ppf", "sf", "isf", "cdf"]


def logpdf(x, loc=0, scale=1):
    """The log density ``-2 logaddexp(z/2, -z/2) - log scale`` at ``z = (x - loc) / scale``."""
    x, loc, scale = promote_args_inexact("logistic.logpdf", x, loc, scale)
    half_z = (x - loc) / scale / 2
    return -2 * xnp.logaddexp(half_z, -half_z) - xnp.log(scale)


def pdf(x, loc=0, scale=1):
    """The logistic density at ``x``."""
    return xnp.exp(logpdf(x, loc, scale))


def ppf(x, loc=0, scale=1):
    """The quantile function, ``loc + scale logit(q)``."""
    x, loc, scale = promote_args_inexact("logistic.ppf", x, loc, scale)
    return logit(x) * scale + loc


def sf(x, loc=0, scale=1):
    """The survival function, ``expit(-(x - loc) / scale)``."""
    x, loc, scale = promote_args_inexact("logistic.sf", x, loc, scale)
    return expit(-((x - loc) / scale))


def isf(x, loc=0, scale=1):
    """The inverse survival function, ``loc - scale logit(q)``."""
    x, loc, scale = promote_args_inexact("logistic.isf", x, loc, scale)
    return -logit(x) * scale + loc


def cdf(x, loc=0, scale=1):
    """The logistic CDF, ``expit((x - loc) / scale)``."""
    x, loc, scale = promote_args_inexact("logistic.cdf", x, loc, scale)
    return expit((x - loc) / scale)

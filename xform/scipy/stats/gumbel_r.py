"""``xform.scipy.stats.gumbel_r``: the right-skewed Gumbel (maximum extreme value)
distribution with ``loc`` and ``scale``; every function is NaN unless ``scale > 0``."""

import numpy as np

from xform import numpy as xnp
from xform.numpy._promote import promote_args_inexact
from xform.scipy.stats._util import log1mexp

__all__ = ["logpdf", "pdf", "logcdf", "cdf", "ppf", "sf", "logsf"]


def logpdf(x, loc=0, scale=1):
    """The log density ``-(z + exp(-z)) - log scale`` at ``z = (x - loc) / scale``."""
    x, loc, scale = promote_args_inexact("gumbel_r.logpdf", x, loc, scale)
    z = (x - loc) / scale
    return xnp.where(scale > 0, -(z + xnp.exp(-z)) - xnp.log(scale), np.nan)


def pdf(x, loc=0, scale=1):
    """The right Gumbel density at ``x``."""
    return xnp.exp(logpdf(x, loc, scale))


def logcdf(x, loc=0, scale=1):
    """The log CDF, ``-exp(-z)``."""
    x, loc, scale = promote_args_inexact("gumbel_r.logcdf", x, loc, scale)
    z = (x - loc) / scale
    return xnp.where(scale > 0, -xnp.exp(-z), np.nan)


def cdf(x, loc=0, scale=1):
    """The right Gumbel CDF, ``exp(-exp(-z))``."""
    return xnp.exp(logcdf(x, loc, scale))


def ppf(p, loc=0, scale=1):
    """The quantile function, ``loc - scale log(-log p)``; NaN outside ``(0, 1)``."""
    p, loc, scale = promote_args_inexact("gumbel_r.ppf", p, loc, scale)
    quantile = loc - scale * xnp.log(-xnp.log(p))
    return xnp.where((p > 0) & (p < 1), quantile, np.nan)


def sf(x, loc=0, scale=1):
    """The survival function, ``1 - exp(-exp(-z))``."""
    x, loc, scale = promote_args_inexact("gumbel_r.sf", x, loc, scale)
    neg_z = (loc - x) / scale
    return xnp.where(scale > 0, 1 - xnp.exp(-xnp.exp(neg_z)), np.nan)


def logsf(x, loc=0, scale=1):
    """The log survival function, ``log(1 - exp(-exp(-z)))``, accurate in both tails."""
    x, loc, scale = promote_args_inexact("gumbel_r.logsf", x, loc, scale)
    neg_z = (loc - x) / scale
    return xnp.where(scale > 0, log1mexp(xnp.exp(neg_z)), np.nan)

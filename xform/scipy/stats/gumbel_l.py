"""``xform.scipy.stats.gumbel_l``: the left-skewed Gumbel (minimum extreme value)
distribution with ``loc`` and ``scale``; every function is NaN unless ``scale > 0``."""

import numpy as np

from xform import numpy as xnp
from xform.numpy._promote import promote_args_inexact

__all__ = ["logpdf", "pdf", "logcdf", "cdf", "ppf", "sf", "logsf"]


def logpdf(x, loc=0, scale=1):
    """The log density ``z - exp(z) - log scale`` at ``z = (x - loc) / scale``."""
    x, loc, scale = promote_args_inexact("gumbel_l.logpdf", x, loc, scale)
    z = (x - loc) / scale
    return xnp.where(scale > 0, z - xnp.exp(z) - xnp.log(scale), np.nan)


def pdf(x, loc=0, scale=1):
    """The left Gumbel density at ``x``."""
    return xnp.exp(logpdf(x, loc, scale))


def logcdf(x, loc=0, scale=1):
    """The log CDF, ``log(1 - exp(-exp(z)))``."""
    x, loc, scale = promote_args_inexact("gumbel_l.logcdf", x, loc, scale)
    z = (x - loc) / scale
    return xnp.where(scale > 0, xnp.log(-xnp.expm1(-xnp.exp(z))), np.nan)


def cdf(x, loc=0, scale=1):
    """The left Gumbel CDF."""
    return xnp.exp(logcdf(x, loc, scale))


def ppf(p, loc=0, scale=1):
    """The quantile function, ``loc + scale log(-log1p(-p))``; NaN outside ``(0, 1)``."""
    p, loc, scale = promote_args_inexact("gumbel_l.ppf", p, loc, scale)
    quantile = loc + scale * xnp.log(-xnp.log1p(-p))
    return xnp.where((p > 0) & (p < 1), quantile, np.nan)


def sf(x, loc=0, scale=1):
    """The left Gumbel survival function, ``exp(-exp(z))``."""
    return xnp.exp(logsf(x, loc, scale))


def logsf(x, loc=0, scale=1):
    """The log survival function, ``-exp(z)``."""
    x, loc, scale = promote_args_inexact("gumbel_l.logsf", x, loc, scale)
    z = (x - loc) / scale
    return xnp.where(scale > 0, -xnp.exp(z), np.nan)

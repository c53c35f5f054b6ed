"""``xform.scipy.stats.pareto``: the Pareto distribution with shape ``b``, ``loc`` and
``scale``, supported from ``loc + scale``."""

import numpy as np

from xform import numpy as xnp
from xform.numpy._promote import promote_args_inexact

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "logsf", "sf", "ppf"]


def logpdf(x, b, loc=0, scale=1):
    """The log density ``log b - log scale - (b + 1) log y`` at ``y = (x - loc) / scale``;
    ``-inf`` below ``loc + scale``."""
    x, b, loc, scale = promote_args_inexact("pareto.logpdf", x, b, loc, scale)
    y = (x - loc) / scale
    log_probs = -(xnp.log(scale / b) + (b + 1) * xnp.log(y))
    return xnp.where(x < loc + scale, -np.inf, log_probs)


def pdf(x, b, loc=0, scale=1):
    """The Pareto density at ``x``."""
    return xnp.exp(logpdf(x, b, loc, scale))


def cdf(x, b, loc=0, scale=1):
    """The Pareto CDF, ``1 - y**-b``; 0 below the support."""
    x, b, loc, scale = promote_args_inexact("pareto.cdf", x, b, loc, scale)
    y = (x - loc) / scale
    return xnp.where(x < loc + scale, xnp.zeros_like(y), 1 - y**-b)


def logcdf(x, b, loc=0, scale=1):
    """The log CDF, ``log1p(-y**-b)``; ``-inf`` below the support."""
    x, b, loc, scale = promote_args_inexact("pareto.logcdf", x, b, loc, scale)
    y = (x - loc) / scale
    return xnp.where(x < loc + scale, -np.inf, xnp.log1p(-(y**-b)))


def logsf(x, b, loc=0, scale=1):
    """The log survival function, ``-b log y``; 0 below the support."""
    x, b, loc, scale = promote_args_inexact("pareto.logsf", x, b, loc, scale)
    y = (x - loc) / scale
    return xnp.where(x < loc + scale, xnp.zeros_like(y), -(b * xnp.log(y)))


def sf(x, b, loc=0, scale=1):
    """The Pareto survival function, ``y**-b``."""
    return xnp.exp(logsf(x, b, loc, scale))


def ppf(q, b, loc=0, scale=1):
    """The quantile function, ``loc + scale (1 - q)**(-1/b)``; NaN outside ``[0, 1]``."""
    q, b, loc, scale = promote_args_inexact("pareto.ppf", q, b, loc, scale)
    quantile = loc + scale * (1 - q) ** -(1 / b)
    return xnp.where(xnp.isnan(q) | (q < 0) | (q > 1), np.nan, quantile)

"""``xform.scipy.stats.cauchy``: the Cauchy distribution with ``loc`` and ``scale``."""

import numpy as np

from xform import numpy as xnp
from xform.numpy._promote import promote_args_inexact

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "isf", "ppf"]


def logpdf(x, loc=0, scale=1):
    """The log density ``-log(pi scale (1 + z**2))`` at ``z = (x - loc) / scale``."""
    x, loc, scale = promote_args_inexact("cauchy.logpdf", x, loc, scale)
    z = (x - loc) / scale
    return -(xnp.log(np.pi * scale) + xnp.log1p(z * z))


def pdf(x, loc=0, scale=1):
    """The Cauchy density at ``x``."""
    return xnp.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    """The Cauchy CDF, ``1/2 + arctan(z) / pi``."""
    x, loc, scale = promote_args_inexact("cauchy.cdf", x, loc, scale)
    return 0.5 + xnp.arctan((x - loc) / scale) / np.pi


def logcdf(x, loc=0, scale=1):
    """The log of the Cauchy CDF."""
    return xnp.log(cdf(x, loc, scale))


def sf(x, loc=0, scale=1):
    """The Cauchy survival function, the CDF reflected about ``loc``."""
    x, loc, scale = promote_args_inexact("cauchy.sf", x, loc, scale)
    return cdf(-x, -loc, scale)


def logsf(x, loc=0, scale=1):
    """The log of the Cauchy survival function."""
    x, loc, scale = promote_args_inexact("cauchy.logsf", x, loc, scale)
    return logcdf(-x, -loc, scale)


def isf(q, loc=0, scale=1):
    """The inverse survival function, ``loc + scale tan(pi/2 - pi q)``."""
    q, loc, scale = promote_args_inexact("cauchy.isf", q, loc, scale)
    return xnp.tan(np.pi / 2 - np.pi * q) * scale + loc


def ppf(q, loc=0, scale=1):
    """The quantile function, ``loc + scale tan(pi q - pi/2)``."""
    q, loc, scale = promote_args_inexact("cauchy.ppf", q, loc, scale)
    return xnp.tan(np.pi * q - np.pi / 2) * scale + loc

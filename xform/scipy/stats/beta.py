"""``xform.scipy.stats.beta``: the beta distribution with shapes ``a``, ``b`` on
``[loc, loc + scale]``."""

import numpy as np

from xform import numpy as xnp
from xform.numpy._promote import promote_args_inexact
from xform.scipy.special import xlog1py, xlogy
from xform.scipy.stats._util import betainc, betaln, clamp

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"]


def logpdf(x, a, b, loc=0, scale=1):
    """The log density ``(a-1) log y + (b-1) log(1-y) - log B(a, b) - log scale`` at
    ``y = (x - loc) / scale``; ``-inf`` outside the support, NaN unless ``a, b, scale > 0``."""
    x, a, b, loc, scale = promote_args_inexact("beta.logpdf", x, a, b, loc, scale)
    y = (x - loc) / scale
    log_linear = xlogy(a - 1, y) + xlog1py(b - 1, -y)
    log_probs = log_linear - betaln(a, b) - xnp.log(scale)
    log_probs = xnp.where((x > loc + scale) | (x < loc), -np.inf, log_probs)
    return xnp.where((a <= 0) | (b <= 0) | (scale <= 0), np.nan, log_probs)


def pdf(x, a, b, loc=0, scale=1):
    """The beta density at ``x``."""
    return xnp.exp(logpdf(x, a, b, loc, scale))


def cdf(x, a, b, loc=0, scale=1):
    """The beta CDF, the regularized incomplete beta function at ``(x - loc) / scale``."""
    x, a, b, loc, scale = promote_args_inexact("beta.cdf", x, a, b, loc, scale)
    return betainc(a, b, clamp((x - loc) / scale, 0, 1))


def logcdf(x, a, b, loc=0, scale=1):
    """The log of the beta CDF."""
    return xnp.log(cdf(x, a, b, loc, scale))


def sf(x, a, b, loc=0, scale=1):
    """The beta survival function, ``I_{1-y}(b, a)``."""
    x, a, b, loc, scale = promote_args_inexact("beta.sf", x, a, b, loc, scale)
    return betainc(b, a, 1 - clamp((x - loc) / scale, 0, 1))


def logsf(x, a, b, loc=0, scale=1):
    """The log of the beta survival function."""
    return xnp.log(sf(x, a, b, loc, scale))

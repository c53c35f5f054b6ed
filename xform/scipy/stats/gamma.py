"""``xform.scipy.stats.gamma``: the gamma distribution with shape ``a``, ``loc`` and
``scale``."""

import numpy as np

from xform import numpy as xnp
from xform.numpy._promote import promote_args_inexact
from xform.scipy.special import gammaln, xlogy
from xform.scipy.stats._util import clamp, gammainc, gammaincc

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"]


def logpdf(x, a, loc=0, scale=1):
    """The log density ``(a - 1) log y - y - lgamma(a) - log scale`` at ``y = (x - loc) /
    scale``; ``-inf`` below ``loc``."""
    x, a, loc, scale = promote_args_inexact("gamma.logpdf", x, a, loc, scale)
    inside = x >= loc
    # y = 1 off the support keeps the unused branch (and its gradient) finite.
    y = xnp.where(inside, (x - loc) / scale, xnp.ones_like(x))
    log_probs = xlogy(a - 1, y) - y - (gammaln(a) + xnp.log(scale))
    return xnp.where(inside, log_probs, -np.inf)


def pdf(x, a, loc=0, scale=1):
    """The gamma density at ``x``."""
    return xnp.exp(logpdf(x, a, loc, scale))


def cdf(x, a, loc=0, scale=1):
    """The gamma CDF, the regularized lower incomplete gamma function ``P(a, y)``."""
    x, a, loc, scale = promote_args_inexact("gamma.cdf", x, a, loc, scale)
    return gammainc(a, clamp((x - loc) / scale, 0, np.inf))


def logcdf(x, a, loc=0, scale=1):
    """The log of the gamma CDF."""
    return xnp.log(cdf(x, a, loc, scale))


def sf(x, a, loc=0, scale=1):
    """The gamma survival function ``Q(a, y)``; 1 below ``loc``."""
    x, a, loc, scale = promote_args_inexact("gamma.sf", x, a, loc, scale)
    y = (x - loc) / scale
    return xnp.where(y < 0, 1, gammaincc(a, y))


def logsf(x, a, loc=0, scale=1):
    """The log of the gamma survival function."""
    return xnp.log(sf(x, a, loc, scale))

"""``xform.scipy.stats.uniform``: the uniform distribution on ``[loc, loc + scale]``."""

import numpy as np

from xform import numpy as xnp
from xform.numpy._promote import promote_args_inexact

__all__ = ["logpdf", "pdf", "cdf", "ppf"]


def logpdf(x, loc=0, scale=1):
    """The log density ``-log scale`` on ``[loc, loc + scale]``, ``-inf`` outside."""
    x, loc, scale = promote_args_inexact("uniform.logpdf", x, loc, scale)
    log_probs = -xnp.log(scale)
    return xnp.where((x > loc + scale) | (x < loc), -np.inf, log_probs)


def pdf(x, loc=0, scale=1):
    """The uniform density at ``x``."""
    return xnp.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    """The uniform CDF: 0 below ``loc``, 1 above ``loc + scale``, linear between."""
    x, loc, scale = promote_args_inexact("uniform.cdf", x, loc, scale)
    zero, one = xnp.zeros((), x.dtype), xnp.ones((), x.dtype)
    high = loc + scale
    conditions = [x < loc, x > high, (x >= loc) & (x <= high)]
    return xnp.select(conditions, [zero, one, (x - loc) / scale])


def ppf(q, loc=0, scale=1):
    """The quantile function, ``loc + scale q``; NaN outside ``[0, 1]``."""
    q, loc, scale = promote_args_inexact("uniform.ppf", q, loc, scale)
    return xnp.where(xnp.isnan(q) | (q < 0) | (q > 1), np.nan, loc + scale * q)

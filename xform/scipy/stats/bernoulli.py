"""``xform.scipy.stats.bernoulli``: the Bernoulli distribution with success probability ``p``."""

import numpy as np

from xform import numpy as xnp
from xform.numpy._promote import promote_args_inexact
from xform.scipy.special import xlog1py, xlogy

__all__ = ["logpmf", "pmf", "cdf", "ppf"]


def logpmf(k, p, loc=0):
    """The log of the probability mass ``p**x (1 - p)**(1 - x)`` at ``x = k - loc``; ``-inf``
    outside ``[0, 1]``."""
    k, p, loc = promote_args_inexact("bernoulli.logpmf", k, p, loc)
    x = k - loc
    log_probs = xlogy(x, p) + xlog1py(1 - x, -p)
    return xnp.where((x < 0) | (x > 1), -np.inf, log_probs)


def pmf(k, p, loc=0):
    """The Bernoulli probability mass at ``k``."""
    return xnp.exp(logpmf(k, p, loc))


def cdf(k, p):
    """``P(X <= k)``: 0 below 0, ``1 - p`` on ``[0, 1)``, 1 from 1; NaN for ``p`` outside
    ``[0, 1]``."""
    k, p = promote_args_inexact("bernoulli.cdf", k, p)
    invalid = xnp.isnan(k) | xnp.isnan(p) | (p < 0) | (p > 1)
    conditions = [invalid, k < 0, (k >= 0) & (k < 1), k >= 1]
    zero, one = xnp.zeros_like(k), xnp.ones_like(k)
    return xnp.select(conditions, [xnp.full_like(k, np.nan), zero, one - p, one])


def ppf(q, p):
    """The quantile function: 0 for ``q <= 1 - p``, else 1; NaN for ``q`` or ``p`` outside
    ``[0, 1]``."""
    q, p = promote_args_inexact("bernoulli.ppf", q, p)
    invalid = xnp.isnan(q) | xnp.isnan(p) | (p < 0) | (p > 1) | (q < 0) | (q > 1)
    quantile = xnp.where(q <= 1 - p, xnp.zeros_like(q), xnp.ones_like(q))
    return xnp.where(invalid, np.nan, quantile)

"""``xform.scipy.stats.betabinom``: the beta-binomial distribution with ``n`` trials and beta
shapes ``a``, ``b``."""

import numpy as np

from xform import numpy as xnp
from xform.numpy._promote import promote_args_inexact
from xform.scipy.stats._util import betaln

__all__ = ["logpmf", "pmf"]


def logpmf(k, n, a, b, loc=0):
    """The log probability mass at ``y = floor(k) - loc``: ``log C(n, y) + log B(y + a, n - y +
    b) - log B(a, b)``; ``-inf`` outside ``[0, n]``, NaN unless ``n >= 0`` and ``a, b > 0``."""
    k, n, a, b, loc = promote_args_inexact("betabinom.logpmf", k, n, a, b, loc)
    y = xnp.floor(k) - loc
    log_choose = -(xnp.log1p(n) + betaln(n - y + 1, y + 1))
    log_probs = log_choose + betaln(y + a, n - y + b) - betaln(a, b)
    log_probs = xnp.where((y == 0) & (n == 0), 0.0, log_probs)
    outside = (y < -loc) | (y > n) | (y + a <= 0)
    log_probs = xnp.where(outside, -np.inf, log_probs)
    return xnp.where((n < 0) | (a <= 0) | (b <= 0), np.nan, log_probs)


def pmf(k, n, a, b, loc=0):
    """The beta-binomial probability mass at ``k``."""
    return xnp.exp(logpmf(k, n, a, b, loc))

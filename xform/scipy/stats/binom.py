"""``xform.scipy.stats.binom``: the binomial distribution with ``n`` trials of probability
``p``."""

import numpy as np

from xform import numpy as xnp
from xform.numpy._promote import promote_args_inexact
from xform.scipy.special import gammaln, xlog1py, xlogy

__all__ = ["logpmf", "pmf"]


def logpmf(k, n, p, loc=0):
    """The log of ``C(n, y) p**y (1 - p)**(n - y)`` at ``y = k - loc``; ``-inf`` outside
    ``[loc, loc + n]``."""
    k, n, p, loc = promote_args_inexact("binom.logpmf", k, n, p, loc)
    y = k - loc
    log_choose = gammaln(n + 1) - (gammaln(y + 1) + gammaln(n - y + 1))
    log_linear = xlogy(y, p) + xlog1py(n - y, -p)
    log_probs = xnp.where(((y == 0) & (n == 0)) | (log_linear == 0), 0.0, log_choose + log_linear)
    return xnp.where((k >= loc) & (k < loc + n + 1), log_probs, -np.inf)


def pmf(k, n, p, loc=0):
    """The binomial probability mass at ``k``."""
    return xnp.exp(logpmf(k, n, p, loc))

"""``xform.scipy.stats.nbinom``: the negative binomial distribution, failures before the
``n``-th success of probability ``p``."""

import numpy as np

from xform import numpy as xnp
from xform.numpy._promote import promote_args_inexact
from xform.scipy.special import gammaln, xlogy

__all__ = ["logpmf", "pmf"]


def logpmf(k, n, p, loc=0):
    """The log of ``C(y + n - 1, y) p**n (1 - p)**y`` at ``y = k - loc``; ``-inf`` below
    ``loc``."""
    k, n, p, loc = promote_args_inexact("nbinom.logpmf", k, n, p, loc)
    y = k - loc
    log_choose = gammaln(y + n) - gammaln(n) - gammaln(y + 1)
    log_linear = xlogy(n, p) + xlogy(y, 1 - p)
    return xnp.where(k < loc, -np.inf, log_choose + log_linear)


def pmf(k, n, p, loc=0):
    """The negative binomial probability mass at ``k``."""
    return xnp.exp(logpmf(k, n, p, loc))

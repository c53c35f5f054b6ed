"""``xform.scipy.stats.geom``: the geometric distribution, trials up to the first success."""

import numpy as np

from xform import numpy as xnp
from xform.numpy._promote import promote_args_inexact
from xform.scipy.special import xlog1py

__all__ = ["logpmf", "pmf"]


def logpmf(k, p, loc=0):
    """The log of ``(1 - p)**(x - 1) p`` at ``x = k - loc``; ``-inf`` for ``x <= 0``."""
    k, p, loc = promote_args_inexact("geom.logpmf", k, p, loc)
    x = k - loc
    log_probs = xlog1py(x - 1, -p) + xnp.log(p)
    return xnp.where(x <= 0, -np.inf, log_probs)


def pmf(k, p, loc=0):
    """The geometric probability mass at ``k``."""
    return xnp.exp(logpmf(k, p, loc))

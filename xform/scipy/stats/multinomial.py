"""``xform.scipy.stats.multinomial``: the multinomial distribution of ``n`` draws over the
categories of ``p`` (the last axis)."""

import numpy as np

from xform import numpy as xnp
from xform.numpy._promote import promote_args_inexact, promote_args_numeric
from xform.scipy.special import gammaln, xlogy

__all__ = ["logpmf", "pmf"]


def logpmf(x, n, p):
    """The log of ``n! prod(p**x / x!)`` for integer counts ``x`` (last axis); ``-inf`` unless
    the counts sum to ``n``.

    Raises ValueError if ``x`` and ``n`` are not integers."""
    (p,) = promote_args_inexact("multinomial.logpmf", p)
    x, n = promote_args_numeric("multinomial.logpmf", x, n)
    if not xnp.issubdtype(x.dtype, np.integer):
        raise ValueError(
            "multinomial.logpmf: x and n must be of integer type; got "
            f"x.dtype={x.dtype}, n.dtype={n.dtype}"
        )
    x, n = x.astype(p.dtype), n.astype(p.dtype)
    log_probs = gammaln(n + 1) + xnp.sum(xlogy(x, p) - gammaln(x + 1), axis=-1)
    return xnp.where(xnp.sum(x) == n, log_probs, -np.inf)


def pmf(x, n, p):
    """The multinomial probability mass at counts ``x``."""
    return xnp.exp(logpmf(x, n, p))

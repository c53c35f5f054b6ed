"""``xform.scipy.stats.laplace``: the Laplace (double exponential) distribution."""

from xform import numpy as xnp
from xform.numpy._promote import promote_args_inexact

__all__ = ["logpdf", "pdf", "cdf"]


def logpdf(x, loc=0, scale=1):
    """The log density ``-|x - loc| / scale - log(2 scale)``."""
    x, loc, scale = promote_args_inexact("laplace.logpdf", x, loc, scale)
    return -(xnp.abs(x - loc) / scale + xnp.log(2 * scale))


def pdf(x, loc=0, scale=1):
    """The Laplace density at ``x``."""
    return xnp.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    """The Laplace CDF: ``exp(z) / 2`` for ``z <= 0``, else ``1 - exp(-z) / 2``."""
    x, loc, scale = promote_args_inexact("laplace.cdf", x, loc, scale)
    z = (x - loc) / scale
    return xnp.where(z <= 0, 0.5 * xnp.exp(z), 1 - 0.5 * xnp.exp(-z))

"""``xform.scipy.stats.truncnorm``: the normal distribution truncated to standardized bounds
``[a, b]``, with ``loc`` and ``scale``; every function is NaN unless ``a < b``."""

import numpy as np

from xform import numpy as xnp
from xform.numpy._promote import promote_args_inexact
from xform.scipy.special import log_ndtr, logsumexp, ndtr
from xform.scipy.stats import norm

__all__ = ["logpdf", "pdf", "logsf", "sf", "logcdf", "cdf"]


def _log_diff(x, y):
    """``log(exp(x) - exp(y))`` without overflow."""
    return logsumexp(xnp.stack([x, y]), b=xnp.stack([xnp.ones_like(x), -xnp.ones_like(y)]), axis=0)


def _log_gauss_mass(a, b):
    """``log(ndtr(b) - ndtr(a))``, from whichever tail keeps the difference accurate."""
    a, b = xnp.broadcast_arrays(xnp.asarray(a), xnp.asarray(b))
    left, right = b <= 0, a > 0
    central = ~(left | right)
    # In the right tail, reflect: ndtr(b) - ndtr(a) == ndtr(-a) - ndtr(-b).
    a_tail = xnp.where(right, -b, a)
    b_tail = xnp.where(right, -a, b)
    mass_tail = _log_diff(log_ndtr(b_tail), log_ndtr(a_tail))
    mass_central = xnp.log1p(-ndtr(a) - ndtr(-b))
    return xnp.where(central, mass_central, mass_tail)


def logpdf(x, a, b, loc=0, scale=1):
    """The log density: the normal log density less the log mass of ``[a, b]``; ``-inf``
    outside the bounds."""
    x, a, b, loc, scale = promote_args_inexact("truncnorm.logpdf", x, a, b, loc, scale)
    val = norm.logpdf(x, loc, scale) - _log_gauss_mass(a, b)
    z = (x - loc) / scale
    val = xnp.where((z < a) | (z > b), -np.inf, val)
    return xnp.where(a >= b, np.nan, val)


def pdf(x, a, b, loc=0, scale=1):
    """The truncated normal density at ``x``."""
    return xnp.exp(logpdf(x, a, b, loc, scale))


def logsf(x, a, b, loc=0, scale=1):
    """The log survival function: the log CDF of the reflected distribution."""
    x, a, b, loc, scale = promote_args_inexact("truncnorm.logsf", x, a, b, loc, scale)
    return logcdf(-x, -b, -a, -loc, scale)


def sf(x, a, b, loc=0, scale=1):
    """The truncated normal survival function."""
    return xnp.exp(logsf(x, a, b, loc, scale))


def logcdf(x, a, b, loc=0, scale=1):
    """The log CDF, from the mass below ``x`` or, near 1, from the mass above it."""
    x, a, b, loc, scale = promote_args_inexact("truncnorm.logcdf", x, a, b, loc, scale)
    x, a, b = xnp.broadcast_arrays(x, a, b)
    z = (x - loc) / scale
    log_total = _log_gauss_mass(a, b)
    log_below = _log_gauss_mass(a, z) - log_total
    log_above = _log_gauss_mass(z, b) - log_total
    out = xnp.select(
        [z >= b, z <= a, log_below > -0.1, z > a],
        [0, -np.inf, xnp.log1p(-xnp.exp(log_above)), log_below],
    )
    return xnp.where(a >= b, np.nan, out)


def cdf(x, a, b, loc=0, scale=1):
    """The truncated normal CDF."""
    return xnp.exp(logcdf(x, a, b, loc, scale))

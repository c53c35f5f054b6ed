"""``xform.scipy.stats.chi2``: the chi-squared distribution with ``df`` degrees of freedom."""

import math

import numpy as np

from xform import lax
from xform import numpy as xnp
from xform.numpy._promote import promote_args_inexact
from xform.scipy.stats._util import clamp, gammainc, gammaincc

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"]


def logpdf(x, df, loc=0, scale=1):
    """The log density at ``y = (x - loc) / scale``: ``(df/2 - 1) log y - y/2 - lgamma(df/2)
    - df/2 log 2 - log scale``; ``-inf`` below ``loc``."""
    x, df, loc, scale = promote_args_inexact("chi2.logpdf", x, df, loc, scale)
    y = (x - loc) / scale
    half_df = df / 2
    kernel = (half_df - 1) * xnp.log(y) - y / 2
    log_normalizer = -(lax.lgamma(half_df) + math.log(2.0) * df / 2)
    log_probs = log_normalizer - xnp.log(scale) + kernel
    return xnp.where(x < loc, -np.inf, log_probs)


def pdf(x, df, loc=0, scale=1):
    """The chi-squared density at ``x``."""
    return xnp.exp(logpdf(x, df, loc, scale))


def _half_y(x, loc, scale):
    return clamp((x - loc) / (scale * 2), 0, np.inf)


def cdf(x, df, loc=0, scale=1):
    """The chi-squared CDF, ``P(df/2, y/2)``."""
    x, df, loc, scale = promote_args_inexact("chi2.cdf", x, df, loc, scale)
    return gammainc(df / 2, _half_y(x, loc, scale))


def logcdf(x, df, loc=0, scale=1):
    """The log of the chi-squared CDF."""
    return xnp.log(cdf(x, df, loc, scale))


def sf(x, df, loc=0, scale=1):
    """The chi-squared survival function, ``Q(df/2, y/2)``."""
    x, df, loc, scale = promote_args_inexact("chi2.sf", x, df, loc, scale)
    return gammaincc(df / 2, _half_y(x, loc, scale))


def logsf(x, df, loc=0, scale=1):
    """The log of the chi-squared survival function."""
    return xnp.log(sf(x, df, loc, scale))

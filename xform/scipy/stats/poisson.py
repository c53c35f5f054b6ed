"""``xform.scipy.stats.poisson``: the Poisson distribution with mean ``mu``."""

import math

import numpy as np

from xform import numpy as xnp
from xform.numpy._promote import check_arraylike, promote_args_inexact, promote_dtypes_inexact
from xform.scipy.special import entr, gammaln, xlogy
from xform.scipy.stats._util import gammaincc

__all__ = ["logpmf", "pmf", "cdf", "entropy"]


def logpmf(k, mu, loc=0):
    """The log of ``mu**x exp(-mu) / x!`` at ``x = k - loc``; ``-inf`` below ``loc`` or at a
    non-integer ``k``."""
    k, mu, loc = promote_args_inexact("poisson.logpmf", k, mu, loc)
    x = k - loc
    log_probs = xlogy(x, mu) - gammaln(x + 1) - mu
    return xnp.where((x < 0) | (xnp.round(k) != k), -np.inf, log_probs)


def pmf(k, mu, loc=0):
    """The Poisson probability mass at ``k``."""
    return xnp.exp(logpmf(k, mu, loc))


def cdf(k, mu, loc=0):
    """The Poisson CDF, ``Q(floor(x) + 1, mu)``; 0 below ``loc``."""
    k, mu, loc = promote_args_inexact("poisson.cdf", k, mu, loc)
    x = k - loc
    p = gammaincc(xnp.floor(1 + x), mu)
    return xnp.where(x < 0, xnp.zeros_like(k), p)


def _entropy_by_sum(mu, max_k, upper_bound):
    """``sum(entr(pmf(k)))`` over ``0 <= k < min(max_k, upper_bound)`` for each ``mu``."""
    k = xnp.arange(max_k, dtype=mu.dtype)[:, None]
    probs = pmf(k, mu, 0)
    probs = xnp.where(k < xnp.ceil(upper_bound)[None, :], probs, 0.0)
    return xnp.sum(entr(probs), axis=0)


def entropy(mu, loc=0):
    """The entropy of the Poisson distribution: a direct sum for ``mu < 100`` (35 or 250
    terms), the asymptotic ``log(2 pi e mu) / 2 - 1 / (12 mu)`` above; 0 at ``mu == 0``."""
    check_arraylike("poisson.entropy", mu, loc)
    mu, loc = promote_dtypes_inexact(mu, loc)
    out_shape = xnp.broadcast_shapes(mu.shape, loc.shape)
    flat = xnp.ravel(mu)
    small = _entropy_by_sum(flat, 35, flat + 20)
    medium = _entropy_by_sum(flat, 250, flat + 10 * xnp.sqrt(flat) + 20)
    large = 0.5 * xnp.log(2 * math.pi * math.e * flat) - 1.0 / (12 * flat)
    result = xnp.where(flat < 10, small, xnp.where(flat < 100, medium, large))
    result = xnp.where(flat == 0, xnp.zeros_like(flat), result)
    return xnp.broadcast_to(xnp.reshape(result, mu.shape), out_shape)

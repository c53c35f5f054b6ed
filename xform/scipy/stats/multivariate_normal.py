"""``xform.scipy.stats.multivariate_normal``: the multivariate normal distribution with
``mean`` (last axis) and covariance ``cov`` (a scalar or a ``(..., n, n)`` matrix)."""

import math

from xform import numpy as xnp
from xform.lax import linalg as lax_linalg
from xform.numpy._promote import promote_dtypes_inexact

__all__ = ["logpdf", "pdf"]


def _solve_lower_vector(chol, y):
    """``z`` with ``chol @ z == y``: ``y`` as a row ``z^T chol^T = y^T`` (lax's solve takes
    matrices only)."""
    row = lax_linalg.triangular_solve(chol, y[None, :], lower=True, transpose_a=True)
    return row[0]


# Broadcasts the solve over the leading axes of the factor and the points.
_solve_lower = xnp.vectorize(_solve_lower_vector, signature="(n,n),(n)->(n)")


def logpdf(x, mean, cov, allow_singular=None):
    """The log density at ``x``: ``-|L^-1 (x - mean)|**2 / 2 - n/2 log(2 pi) - log det L`` with
    ``L`` the Cholesky factor of ``cov``.

    Raises NotImplementedError for ``allow_singular``, ValueError if ``cov`` is not
    ``(..., n, n)`` for ``n = mean.shape[-1]``."""
    if allow_singular is not None:
        raise NotImplementedError("allow_singular argument of multivariate_normal.logpdf")
    x, mean, cov = promote_dtypes_inexact(x, mean, cov)
    log_two_pi = xnp.log(2 * math.pi)
    if not mean.shape:
        return -1 / 2 * xnp.square(x - mean) / cov - 1 / 2 * (log_two_pi + xnp.log(cov))
    n = mean.shape[-1]
    if not cov.shape:
        y = x - mean
        return -1 / 2 * xnp.einsum("...i,...i->...", y, y) / cov - n / 2 * (
            log_two_pi + xnp.log(cov)
        )
    if cov.ndim < 2 or cov.shape[-2:] != (n, n):
        raise ValueError(
            "multivariate_normal.logpdf got incompatible shapes: "
            f"mean.shape={mean.shape}, cov.shape={cov.shape}"
        )
    chol = lax_linalg.cholesky(cov)
    y = _solve_lower(chol, x - mean)
    log_det = xnp.sum(xnp.log(xnp.diagonal(chol, axis1=-1, axis2=-2)), axis=-1)
    return -1 / 2 * xnp.einsum("...i,...i->...", y, y) - n / 2 * log_two_pi - log_det


def pdf(x, mean, cov):
    """The multivariate normal density at ``x``."""
    return xnp.exp(logpdf(x, mean, cov))

"""``xform.scipy.stats.dirichlet``: the Dirichlet distribution with concentrations ``alpha``."""

import numpy as np

from xform import numpy as xnp
from xform.numpy._promote import promote_dtypes_inexact
from xform.scipy.special import gammaln, xlogy

__all__ = ["logpdf", "pdf"]


def _is_simplex(x):
    """Columns of ``x`` (axis 0) that are positive and sum to 1 within 1e-6."""
    return xnp.all(x > 0, axis=0) & (abs(xnp.sum(x, axis=0) - 1) < 1e-6)


def logpdf(x, alpha):
    """The log density ``sum((alpha - 1) log x) - log B(alpha)`` at points ``x`` laid out along
    axis 0 (``x`` may omit the last coordinate); ``-inf`` off the simplex.

    Raises ValueError unless ``alpha`` is 1-D and ``x.shape[0]`` is ``len(alpha)`` or one
    fewer."""
    x, alpha = promote_dtypes_inexact(x, alpha)
    if alpha.ndim != 1:
        raise ValueError(
            f"dirichlet.logpdf: `alpha` must be one-dimensional; got alpha.shape={alpha.shape}"
        )
    if x.ndim == 0 or x.shape[0] not in (alpha.shape[0], alpha.shape[0] - 1):
        raise ValueError(
            "dirichlet.logpdf: `x` must have either the same number of entries as `alpha` or "
            f"one entry fewer; got x.shape={x.shape}, alpha.shape={alpha.shape}"
        )
    if x.shape[0] != alpha.shape[0]:
        x = xnp.concatenate([x, 1 - xnp.sum(x, axis=0, keepdims=True)], axis=0)
    log_normalizer = xnp.sum(gammaln(alpha)) - gammaln(xnp.sum(alpha))
    alpha = xnp.reshape(alpha, alpha.shape + (1,) * (x.ndim - 1))
    log_probs = xnp.sum(xlogy(alpha - 1, x), axis=0) - log_normalizer
    return xnp.where(_is_simplex(x), log_probs, -np.inf)


def pdf(x, alpha):
    """The Dirichlet density at ``x``."""
    return xnp.exp(logpdf(x, alpha))

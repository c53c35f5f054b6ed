"""``xform.scipy.stats.wrapcauchy``: the wrapped Cauchy distribution on ``[0, 2 pi]`` with
shape ``c``."""

import math

import numpy as np

from xform import numpy as xnp
from xform.numpy._promote import promote_args_inexact

__all__ = ["logpdf", "pdf"]


def logpdf(x, c):
    """The log density ``log(1 - c**2) - log(2 pi) - log(1 + c**2 - 2 c cos x)``; ``-inf``
    outside ``[0, 2 pi]``, NaN unless ``0 < c < 1``."""
    x, c = promote_args_inexact("wrapcauchy.logpdf", x, c)
    log_probs = xnp.log(1 - c * c) - xnp.log(2 * math.pi) - xnp.log(1 + c * c - 2 * c * xnp.cos(x))
    log_probs = xnp.where((x >= 0) & (x <= 2 * math.pi), log_probs, -np.inf)
    return xnp.where((c > 0) & (c < 1), log_probs, np.nan)


def pdf(x, c):
    """The wrapped Cauchy density at ``x``."""
    return xnp.exp(logpdf(x, c))

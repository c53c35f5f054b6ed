"""``xform.scipy.stats.vonmises``: the von Mises (circular normal) distribution with
concentration ``kappa``."""

import math

import numpy as np

from xform import lax
from xform import numpy as xnp
from xform.numpy._promote import promote_args_inexact

__all__ = ["logpdf", "pdf"]


def logpdf(x, kappa):
    """The log density ``kappa (cos x - 1) - log(2 pi i0e(kappa))``; NaN unless
    ``kappa > 0``."""
    x, kappa = promote_args_inexact("vonmises.logpdf", x, kappa)
    log_probs = kappa * (xnp.cos(x) - 1) - xnp.log(2 * math.pi * lax.bessel_i0e(kappa))
    return xnp.where(kappa > 0, log_probs, np.nan)


def pdf(x, kappa):
    """The von Mises density at ``x``."""
    return xnp.exp(logpdf(x, kappa))

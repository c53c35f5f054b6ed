"""``xform.scipy.stats.t``: Student's t distribution with ``df`` degrees of freedom."""

import math

from xform import lax
from xform import numpy as xnp
from xform.numpy._promote import promote_args_inexact

__all__ = ["logpdf", "pdf"]


def logpdf(x, df, loc=0, scale=1):
    """The log density ``lgamma((df+1)/2) - lgamma(df/2) - log(pi df scale**2)/2 - (df+1)/2
    log1p(z**2 / df)`` at ``z = (x - loc) / scale``."""
    x, df, loc, scale = promote_args_inexact("t.logpdf", x, df, loc, scale)
    z = (x - loc) / scale
    half_df = df / 2
    half_df_plus_half = half_df + 0.5
    log_normalizer = (
        lax.lgamma(half_df)
        + xnp.log(scale * scale * math.pi * df) / 2
        - lax.lgamma(half_df_plus_half)
    )
    return -(log_normalizer + half_df_plus_half * xnp.log1p(z * z / df))


def pdf(x, df, loc=0, scale=1):
    """The Student's t density at ``x``."""
    return xnp.exp(logpdf(x, df, loc, scale))

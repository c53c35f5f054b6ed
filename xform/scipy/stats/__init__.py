"""``xform.scipy.stats``: probability distributions, as ``jax.scipy.stats``."""

from xform.scipy.stats import norm  # noqa: F401

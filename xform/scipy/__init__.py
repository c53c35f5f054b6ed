"""``xform.scipy``: the parts of SciPy that JAX mirrors in ``jax.scipy``."""

from xform.scipy import linalg, special, stats  # noqa: F401

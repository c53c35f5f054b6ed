"""``xform.scipy.spatial``, as ``jax.scipy.spatial``."""

from xform.scipy.spatial import transform  # noqa: F401

"""``xform.scipy.cluster``, as ``jax.scipy.cluster``."""

from xform.scipy.cluster import vq  # noqa: F401

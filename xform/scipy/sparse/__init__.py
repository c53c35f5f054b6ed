"""``xform.scipy.sparse``, as ``jax.scipy.sparse``."""

from xform.scipy.sparse import linalg  # noqa: F401

"""``jax.version`` under ``xform.compat``: the JAX version whose API xform follows.

Libraries branch on ``jax.__version_info__``; xform mirrors JAX 0.10.2's API, so that is the
version they must see (``xform.version`` keeps xform's own).
"""

__version__ = "0.10.2"
__version_info__ = (0, 10, 2)
_minimum_jaxlib_version = "0.10.2"
_minimum_jaxlib_version_info = (0, 10, 2)

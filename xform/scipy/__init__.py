"""``xform.scipy``: the parts of SciPy that JAX mirrors in ``jax.scipy``."""

from xform.scipy import (  # noqa: F401
    cluster,
    fft,
    integrate,
    interpolate,
    linalg,
    ndimage,
    optimize,
    signal,
    sparse,
    spatial,
    special,
    stats,
)

"""``xform.lax.linalg``: JAX's ``jax.lax.linalg``, the linear-algebra primitives (decompositions
and solves on LAPACK kernels), with their names and signatures, and their ``*_p`` objects."""

from xform.primitives import eigen as _eigen
from xform.primitives import linalg as _linalg
from xform.primitives import qr as _qr
from xform.primitives import svd as _svd
from xform.primitives.eigen import *  # noqa: F403
from xform.primitives.linalg import *  # noqa: F403
from xform.primitives.qr import *  # noqa: F403
from xform.primitives.svd import *  # noqa: F403

for _family in (_eigen, _linalg, _qr, _svd):
    globals().update({k: v for k, v in vars(_family).items() if k.endswith("_p")})
del _family

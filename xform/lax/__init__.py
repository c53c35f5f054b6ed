"""``xform.lax``: the primitives under JAX's ``lax`` names and signatures.

Each family module lists its wrappers in ``__all__``; its ``*_p`` primitive objects are
exported too, as JAX's ``lax`` does.
"""

from xform.api.sharding import with_sharding_constraint  # noqa: F401
from xform.lax import linalg  # noqa: F401  (xform.lax.linalg, as jax.lax.linalg)
from xform.primitives import (
    autodiff,
    compiler,
    contractions,
    elementwise,
    indexing,
    loops,
    reductions,
    rng,
    solves,
    sorting,
    special,
    structural,
    windowed,
)
from xform.primitives import (
    fft as _fft,
)
from xform.primitives import (
    linalg as _linalg,
)
from xform.primitives.autodiff import *  # noqa: F403
from xform.primitives.collectives import *  # noqa: F403
from xform.primitives.compiler import *  # noqa: F403
from xform.primitives.cond import *  # noqa: F403
from xform.primitives.contractions import *  # noqa: F403
from xform.primitives.elementwise import *  # noqa: F403
from xform.primitives.elementwise import RoundingMethod  # noqa: F401
from xform.primitives.fft import *  # noqa: F403
from xform.primitives.indexing import *  # noqa: F403
from xform.primitives.loops import *  # noqa: F403
from xform.primitives.reductions import *  # noqa: F403
from xform.primitives.remat import remat_p  # noqa: F401
from xform.primitives.rng import *  # noqa: F403
from xform.primitives.sharding import *  # noqa: F403
from xform.primitives.solves import *  # noqa: F403
from xform.primitives.sorting import *  # noqa: F403
from xform.primitives.special import *  # noqa: F403
from xform.primitives.structural import *  # noqa: F403
from xform.primitives.windowed import *  # noqa: F403

for _family in (
    autodiff,
    compiler,
    contractions,
    elementwise,
    _fft,
    indexing,
    _linalg,
    loops,
    reductions,
    rng,
    solves,
    sorting,
    special,
    structural,
    windowed,
):
    globals().update({k: v for k, v in vars(_family).items() if k.endswith("_p")})
del _family

"""``xform.lax``'s names: the primitives under JAX's ``lax`` names and signatures.

Each family module lists its wrappers in ``__all__``; its ``*_p`` primitive objects are
exported too, as JAX's ``lax`` does. ``xform.numpy`` reads lax through this module (not the
package, which also loads xform.numpy: see its docstring).
"""

from xform.api.sharding import with_sharding_constraint  # noqa: F401
from xform.lax import linalg  # noqa: F401  (xform.lax.linalg, as jax.lax.linalg)
from xform.lax._contractions import *  # noqa: F403
from xform.lax._indexing import *  # noqa: F403
from xform.lax._loops import *  # noqa: F403
from xform.primitives import (
    autodiff,
    compiler,
    elementwise,
    gather_scatter,
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
    comparisons as _comparisons,
)
from xform.primitives import (
    convolution as _convolution,
)
from xform.primitives import (
    dot as _dot,
)
from xform.primitives import (
    fft as _fft,
)
from xform.primitives import (
    linalg as _linalg,
)
from xform.primitives import (
    scan as _scan,
)
from xform.primitives import (
    transcendental as _transcendental,
)
from xform.primitives import (
    while_loop as _while_loop,
)
from xform.primitives.autodiff import *  # noqa: F403
from xform.primitives.collectives import *  # noqa: F403
from xform.primitives.comparisons import *  # noqa: F403
from xform.primitives.compiler import *  # noqa: F403
from xform.primitives.cond import *  # noqa: F403
from xform.primitives.convolution import *  # noqa: F403
from xform.primitives.dot import *  # noqa: F403
from xform.primitives.elementwise import *  # noqa: F403
from xform.primitives.elementwise import RoundingMethod  # noqa: F401
from xform.primitives.fft import *  # noqa: F403
from xform.primitives.gather_scatter import *  # noqa: F403
from xform.primitives.indexing import *  # noqa: F403
from xform.primitives.loops import *  # noqa: F403
from xform.primitives.reductions import *  # noqa: F403
from xform.primitives.remat import remat_p  # noqa: F401
from xform.primitives.rng import *  # noqa: F403
from xform.primitives.scan import *  # noqa: F403
from xform.primitives.sharding import *  # noqa: F403
from xform.primitives.solves import *  # noqa: F403
from xform.primitives.sorting import *  # noqa: F403
from xform.primitives.special import *  # noqa: F403
from xform.primitives.structural import *  # noqa: F403
from xform.primitives.transcendental import *  # noqa: F403
from xform.primitives.while_loop import *  # noqa: F403
from xform.primitives.windowed import *  # noqa: F403

for _family in (
    autodiff,
    compiler,
    _comparisons,
    _convolution,
    _dot,
    elementwise,
    _fft,
    gather_scatter,
    indexing,
    _linalg,
    loops,
    _scan,
    reductions,
    rng,
    solves,
    sorting,
    special,
    structural,
    _transcendental,
    _while_loop,
    windowed,
):
    globals().update({k: v for k, v in vars(_family).items() if k.endswith("_p")})
del _family

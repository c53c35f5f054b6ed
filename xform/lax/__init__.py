"""``xform.lax``: the primitives under JAX's ``lax`` names and signatures."""

from xform.primitives.elementwise import *  # noqa: F403
from xform.primitives.elementwise import RoundingMethod  # noqa: F401
from xform.primitives.indexing import *  # noqa: F403
from xform.primitives.linalg import *  # noqa: F403
from xform.primitives.reductions import *  # noqa: F403
from xform.primitives.sorting import *  # noqa: F403
from xform.primitives.structural import *  # noqa: F403

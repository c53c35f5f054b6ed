"""``xform.lax``: the primitives under JAX's ``lax`` names and signatures (``_names.py``).

Importing it also gives arrays and tracers their operators (``x + 1``, ``x.astype``), which
are ``xform.numpy``'s functions set on those classes, as ``import jax.lax`` does in JAX.
"""

import xform.numpy as _numpy  # noqa: F401  (the array operators)
from xform.lax._names import *  # noqa: F403
from xform.lax._names import linalg  # noqa: F401

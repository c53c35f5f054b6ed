"""``xform.tree``: JAX's ``jax.tree`` namespace, the short names of the pytree utilities.

Pytrees are JAX's own: these are ``xform.tree_util``'s functions over JAX's registry, so a
container registered with ``jax.tree_util`` (or ``xform.tree_util``) works in both libraries, and
typed key arrays are leaves.
"""

# ruff: noqa: A004  (jax.tree's own names `all` and `map` shadow builtins, as they do there)

from jax.tree import static, unflatten  # noqa: F401

from xform.tree_util import (  # noqa: F401
    tree_all as all,
)
from xform.tree_util import (
    tree_broadcast as broadcast,
)
from xform.tree_util import (
    tree_flatten as flatten,
)
from xform.tree_util import (
    tree_flatten_with_path as flatten_with_path,
)
from xform.tree_util import (
    tree_leaves as leaves,
)
from xform.tree_util import (
    tree_leaves_with_path as leaves_with_path,
)
from xform.tree_util import (
    tree_map as map,
)
from xform.tree_util import (
    tree_map_with_path as map_with_path,
)
from xform.tree_util import (
    tree_reduce as reduce,
)
from xform.tree_util import (
    tree_reduce_associative as reduce_associative,
)
from xform.tree_util import (
    tree_structure as structure,
)
from xform.tree_util import (
    tree_transpose as transpose,
)

__all__ = [
    "all",
    "broadcast",
    "flatten",
    "flatten_with_path",
    "leaves",
    "leaves_with_path",
    "map",
    "map_with_path",
    "reduce",
    "reduce_associative",
    "static",
    "structure",
    "transpose",
    "unflatten",
]

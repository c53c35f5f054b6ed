"""``xform.tree``: JAX's ``jax.tree`` namespace, the short names of the pytree utilities.

Pytrees are JAX's own: these are JAX's pure-Python tree utilities over JAX's registry, so a
container registered with ``jax.tree_util`` (or ``xform.tree_util``) works in both libraries.
"""

# ruff: noqa: A004  (jax.tree's own names `all` and `map` shadow builtins, as they do there)

from jax.tree import (  # noqa: F401
    all,
    broadcast,
    flatten,
    flatten_with_path,
    leaves,
    leaves_with_path,
    map,
    map_with_path,
    reduce,
    reduce_associative,
    static,
    structure,
    transpose,
    unflatten,
)

__all__ = ["all", "broadcast", "flatten", "flatten_with_path", "leaves", "leaves_with_path",
           "map", "map_with_path", "reduce", "reduce_associative", "static", "structure",
           "transpose", "unflatten"]

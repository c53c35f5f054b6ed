"""Pytrees as xform's transformations see them: JAX's registry and tree functions, in which
an ``ArrayNode`` is a node over the arrays it is made of.

A typed key array (``xform.random.key``) is one: to users it is one array, a leaf of their
pytrees as JAX's key arrays are; to the engine it is its ``uint32`` key data, which is what
jit, vmap, grad, scan and the rest trace, batch and lower. So the class is registered in JAX's
registry as a node (what the functions below see), and the public ``xform.tree_util`` and
``xform.tree`` stop at it (``is_array_node``). Code outside transformations that flattens a
user's pytree for the user's sake uses the public functions; the engine uses these.
"""

import functools

from jax.tree_util import (  # noqa: F401
    Partial,
    PyTreeDef,
    default_registry,
    keystr,
    register_pytree_node,
    tree_flatten,
    tree_flatten_with_path,
    tree_leaves,
    tree_map,
    tree_reduce,
    tree_structure,
    tree_unflatten,
    treedef_is_leaf,
    treedef_tuple,
)


class ArrayNode:
    """A user-level array made of engine arrays: a leaf of users' pytrees, a node of the
    engine's (subclasses register their flattening with ``register_pytree_node``)."""

    __slots__ = ()


# A C-level predicate (no Python frame per pytree node): flattening with it costs ~50 ns a node.
is_array_node = functools.partial(type.__instancecheck__, ArrayNode)


def result_info(out_tree):
    """JAX's names of a function's results in a lowered module, one per leaf of ``out_tree``:
    ``result`` for a lone array, else ``result`` and the leaf's key path (``result[0]``,
    ``result['w']``)."""
    paths = tree_flatten_with_path(tree_unflatten(out_tree, range(out_tree.num_leaves)))[0]
    return [f"result{keystr(p)}" for p, _ in paths]

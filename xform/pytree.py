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


class _LeafType(type):
    def __repr__(cls):
        return "pytree leaf"  # how a leaf is named where two structures differ


class _Leaf(metaclass=_LeafType):
    __slots__ = ()


def equality_errors(tree1, tree2):
    """Where two PyTreeDefs differ, as JAX's errors describe it: ``(key path, what tree1 has,
    what tree2 has, why they differ)`` for each place (none if they are equal)."""
    leaf = _Leaf()
    yield from _differences(
        (),
        tree_unflatten(tree1, [leaf] * tree1.num_leaves),
        tree_unflatten(tree2, [leaf] * tree2.num_leaves),
    )


def _differences(path, t1, t2):
    if type(t1) is _Leaf and type(t2) is _Leaf:
        return
    if type(t1) is not type(t2):
        yield path, str(type(t1)), str(type(t2)), "their Python types differ"
        return
    if isinstance(t1, (list, tuple)) and len(t1) != len(t2):
        name = type(t1).__name__
        yield (
            path,
            f"{name} of length {len(t1)}",
            f"{name} of length {len(t2)}",
            "the lengths do not match",
        )
        return
    (keyed1, meta1), (keyed2, meta2) = (
        default_registry.flatten_one_level_with_keys(t) for t in (t1, t2)
    )
    if len(keyed1) != len(keyed2):
        try:  # the keys that differ, where the children have keys (a dict's)
            diff = " ".join(repr(k.key) for k in {k for k, _ in keyed1} ^ {k for k, _ in keyed2})
        except AttributeError:
            diff = ""

        def children(n):
            return f"{type(t1)} with {n} child{'ren' if n > 1 else ''}"

        yield (
            path,
            children(len(keyed1)),
            children(len(keyed2)),
            "the numbers of children do not match"
            + (diff and f", with the symmetric difference of key sets: {{{diff}}}"),
        )
        return
    if meta1 != meta2:
        yield (
            path,
            f"{type(t1)} with pytree metadata {meta1}",
            f"{type(t2)} with pytree metadata {meta2}",
            "the pytree node metadata does not match",
        )
        return
    for (key, c1), (_, c2) in zip(keyed1, keyed2, strict=True):
        yield from _differences((*path, key), c1, c2)

"""Pytrees: JAX's registry, so containers registered with JAX work in xform and back.

Every public name of ``jax.tree_util``. The tree utilities are JAX's pure-Python ones over
JAX's registry (one registration serves both libraries), but what flattens stops at xform's
typed key arrays: they are leaves here, as JAX's key arrays are in JAX, though the engine's
view of pytrees (``xform.pytree``) flattens them into their key data.
"""

import functools

from jax import tree_util as _jax
from jax.tree_util import (  # noqa: F401, I001
    DictKey,
    FlattenedIndexKey,
    GetAttrKey,
    KeyEntry,
    KeyPath,
    Partial,
    PyTreeDef,
    SequenceKey,
    default_registry,
    keystr,
    register_dataclass,
    register_pytree_node,
    register_pytree_node_class,
    register_pytree_with_keys,
    register_pytree_with_keys_class,
    register_static,
    tree_unflatten,
    treedef_children,
    treedef_is_leaf,
    treedef_tuple,
)

from xform.pytree import ArrayNode, is_array_node


def _stop_at_arrays(is_leaf, takes_path=False):
    """``is_leaf`` that also stops at key arrays (the plain predicate where none is given)."""
    if is_leaf is None:
        return (lambda path, x: is_array_node(x)) if takes_path else is_array_node
    if takes_path:
        return lambda path, x: is_array_node(x) or is_leaf(path, x)
    return lambda x: is_array_node(x) or is_leaf(x)


def _with_array_leaves(jax_fn):
    """JAX's ``jax_fn`` (which takes ``is_leaf``) with key arrays as leaves."""

    @functools.wraps(jax_fn)
    def fn(*args, is_leaf=None, **kwargs):
        return jax_fn(*args, is_leaf=_stop_at_arrays(is_leaf), **kwargs)

    return fn


def _with_array_leaves_and_paths(jax_fn):
    """As ``_with_array_leaves``, for the functions whose ``is_leaf`` may take key paths."""

    @functools.wraps(jax_fn)
    def fn(*args, is_leaf=None, is_leaf_takes_path=False, **kwargs):
        stop = _stop_at_arrays(is_leaf, is_leaf is not None and is_leaf_takes_path)
        return jax_fn(
            *args,
            is_leaf=stop,
            is_leaf_takes_path=is_leaf is not None and is_leaf_takes_path,
            **kwargs,
        )

    return fn


def _positional_is_leaf(jax_fn, at, wrap=_with_array_leaves, names=("is_leaf",)):
    """``wrap(jax_fn)`` whose ``names`` may also be given as positional parameters ``at``,
    ``at + 1``, ..."""
    wrapped = wrap(jax_fn)

    @functools.wraps(jax_fn)
    def fn(*args, **kwargs):
        if len(args) > at:
            args, kwargs = args[:at], {**kwargs, **dict(zip(names, args[at:], strict=False))}
        return wrapped(*args, **kwargs)

    return fn


tree_flatten = _positional_is_leaf(_jax.tree_flatten, 1)
tree_leaves = _positional_is_leaf(_jax.tree_leaves, 1)
tree_structure = _positional_is_leaf(_jax.tree_structure, 1)
tree_map = _with_array_leaves(_jax.tree_map)
tree_all = _with_array_leaves(_jax.tree_all)
tree_reduce = _positional_is_leaf(_jax.tree_reduce, 3)
tree_reduce_associative = _with_array_leaves(_jax.tree_reduce_associative)
all_leaves = _positional_is_leaf(_jax.all_leaves, 1)
tree_flatten_with_path = _positional_is_leaf(
    _jax.tree_flatten_with_path, 1, _with_array_leaves_and_paths, ("is_leaf", "is_leaf_takes_path")
)
tree_leaves_with_path = _positional_is_leaf(
    _jax.tree_leaves_with_path, 1, _with_array_leaves_and_paths, ("is_leaf", "is_leaf_takes_path")
)
tree_map_with_path = _with_array_leaves_and_paths(_jax.tree_map_with_path)


def tree_broadcast(prefix_tree, full_tree, is_leaf=None):
    """``prefix_tree`` broadcast to the structure of ``full_tree`` (as ``jax.tree.broadcast``):
    each of its leaves repeated over the leaves of the subtree of ``full_tree`` it stands at."""
    stop = _stop_at_arrays(is_leaf)
    prefix, prefix_def = _jax.tree_flatten(prefix_tree, stop)
    subtrees = prefix_def.flatten_up_to(full_tree)
    full_def = _jax.tree_structure(full_tree, stop)
    return full_def.unflatten(
        leaf
        for leaf, sub in zip(prefix, subtrees, strict=True)
        for _ in range(_jax.tree_structure(sub, stop).num_leaves)
    )


def tree_transpose(outer_treedef, inner_treedef, pytree_to_transpose):
    """A pytree of structure ``outer(inner)`` as one of ``inner(outer)`` (as
    ``jax.tree.transpose``; ``inner_treedef=None`` reads it off the first outer leaf)."""
    flat, treedef = tree_flatten(pytree_to_transpose)
    if inner_treedef is None:
        inner_treedef = tree_structure(outer_treedef.flatten_up_to(pytree_to_transpose)[0])
    inner, outer = inner_treedef.num_leaves, outer_treedef.num_leaves
    if treedef.num_leaves != inner * outer:
        raise TypeError(f"Mismatch\n{treedef}\n != \n{outer_treedef.compose(inner_treedef)}")
    rows = [flat[i * inner : (i + 1) * inner] for i in range(outer)]
    return inner_treedef.unflatten(outer_treedef.unflatten(col) for col in zip(*rows, strict=True))


def is_tree_node(typ):
    """Whether ``typ`` is a registered pytree node type (key arrays are leaves)."""
    return not (isinstance(typ, type) and issubclass(typ, ArrayNode)) and _jax.is_tree_node(typ)


def flatten_one_level(tree):
    """A pytree node's children and metadata (``ValueError`` for a leaf)."""
    if is_array_node(tree):
        raise ValueError(f"can't tree-flatten type: {type(tree)}")
    return _jax.flatten_one_level(tree)


def flatten_one_level_with_keys(tree):
    """A pytree node's (key, child) pairs and metadata (``ValueError`` for a leaf)."""
    if is_array_node(tree):
        raise ValueError(f"can't tree-flatten type: {type(tree)}")
    return _jax.flatten_one_level_with_keys(tree)

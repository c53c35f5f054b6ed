"""Helpers for writing transformations over pytree functions, as ``jax.api_util`` names them.

``flatten_fun`` turns a ``WrappedFun`` (``xform.extend.linear_util``) of pytrees into one of
flat leaves, with a thunk giving the output tree once it has run; ``argnums_partial`` fixes the
arguments not being transformed; ``debug_info`` describes a traced function for messages;
``shaped_abstractify`` gives a value's abstract type. They are the pieces libraries combine
with ``make_jaxpr`` or their own interpreters; xform's API uses its own equivalents inside.
"""

import inspect
import operator

from xform import core, pytree, tree_util
from xform.extend import linear_util as lu
from xform.extend.linear_util import DebugInfo

__all__ = [
    "DebugInfo",
    "argnums_partial",
    "debug_info",
    "donation_vector",
    "flatten_axes",
    "flatten_fun",
    "flatten_fun_nokwargs",
    "rebase_donate_argnums",
    "safe_map",
    "shaped_abstractify",
]


def _src_info(fun):
    name = getattr(fun, "__name__", type(fun).__name__)
    try:
        code = inspect.unwrap(fun).__code__
    except (AttributeError, ValueError):
        return name
    return f"{name} at {code.co_filename}:{code.co_firstlineno}"


def debug_info(
    traced_for,
    fun,
    args,
    kwargs,
    *,
    static_argnums=(),
    static_argnames=(),
    result_paths_thunk=None,
    sourceinfo=None,
    signature=None,
):
    """A ``DebugInfo`` for tracing ``fun`` on ``args``/``kwargs`` (the names of the
    arguments that are not static, leaf by leaf where they are pytrees)."""
    del signature
    try:
        bound = inspect.signature(fun).bind(*args, **kwargs)
        named = list(bound.arguments.items())
    except (TypeError, ValueError):
        named = [(f"args[{i}]", a) for i, a in enumerate(args)] + list(kwargs.items())
    arg_names = []
    for position, (name, value) in enumerate(named):
        if position in static_argnums or name in static_argnames:
            continue
        paths = pytree.tree_flatten_with_path(value)[0]
        arg_names += [name + pytree.keystr(path) for path, _ in paths]
    paths = result_paths_thunk() if result_paths_thunk is not None else None
    return DebugInfo(traced_for, sourceinfo or _src_info(fun), arg_names, paths)


@lu.transformation_with_aux
def _flatten_fun(in_tree, *leaves):
    args, kwargs = pytree.tree_unflatten(in_tree, leaves)
    out = yield args, kwargs
    yield pytree.tree_flatten(out)


def flatten_fun(fun, in_tree):
    """``fun`` (a ``WrappedFun`` of ``(args, kwargs)`` pytrees of ``in_tree``) as a function
    of the flat leaves returning flat leaves, and a thunk giving the output tree."""
    return _flatten_fun(fun, in_tree)


@lu.transformation_with_aux
def _flatten_fun_nokwargs(in_tree, *leaves):
    args = pytree.tree_unflatten(in_tree, leaves)
    out = yield args, {}
    yield pytree.tree_flatten(out)


def flatten_fun_nokwargs(fun, in_tree):
    """``flatten_fun`` for a function of positional arguments only (``in_tree`` their
    tuple's structure)."""
    return _flatten_fun_nokwargs(fun, in_tree)


@lu.transformation2
def _with_fixed_args(inner, dyn_argnums, fixed, *dyn_args, **kwargs):
    args = list(fixed)
    for i, x in zip(dyn_argnums, dyn_args, strict=True):
        args[i] = x
    return inner(*args, **kwargs)


def argnums_partial(f, dyn_argnums, args, require_static_args_hashable=True):
    """``f`` with the arguments not in ``dyn_argnums`` fixed to their values in ``args``;
    returns it and the dynamic arguments."""
    dyn_argnums = (dyn_argnums,) if isinstance(dyn_argnums, int) else tuple(dyn_argnums)
    dyn_argnums = tuple(operator.index(i) % len(args) for i in dyn_argnums)
    if require_static_args_hashable:
        for i, x in enumerate(args):
            if i not in dyn_argnums:
                try:
                    hash(x)
                except TypeError:
                    raise ValueError(
                        f"Non-hashable static arguments are not supported: "
                        f"argument {i} of type {type(x).__name__}"
                    ) from None
    dyn_args = tuple(args[i] for i in dyn_argnums)
    return _with_fixed_args(f, dyn_argnums, tuple(args)), dyn_args


def flatten_axes(name, treedef, axis_tree, *, kws=False, tupled_args=False):
    """``axis_tree`` (a tree prefix of ``treedef``'s tree, with ``None`` leaves, as vmap's
    ``in_axes``) broadcast to one axis per leaf of ``treedef``."""
    del kws, tupled_args  # (JAX words its error with them; the result does not depend on them)
    full = pytree.tree_unflatten(treedef, [object()] * treedef.num_leaves)
    try:
        axes = tree_util.tree_broadcast(axis_tree, full, is_leaf=lambda x: x is None)
    except ValueError as e:
        raise ValueError(
            f"{name} specification must be a tree prefix of the corresponding "
            f"value; got {axis_tree} for a value of structure {treedef}"
        ) from e
    return pytree.tree_leaves(axes, is_leaf=lambda x: x is None)


def donation_vector(donate_argnums, donate_argnames, in_tree, kws=True):
    """One bool per leaf of ``in_tree`` (``(args, kwargs)`` when ``kws``): is it donated?"""
    tree = pytree.tree_unflatten(in_tree, [0] * in_tree.num_leaves)
    args, kwargs = tree if kws else (tree, {})
    out = []
    for i, arg in enumerate(args):
        out += [i in donate_argnums] * pytree.tree_structure(arg).num_leaves
    for name, arg in kwargs.items():
        out += [name in donate_argnames] * pytree.tree_structure(arg).num_leaves
    return tuple(out)


def rebase_donate_argnums(donate_argnums, static_argnums):
    """``donate_argnums`` counted among the arguments that remain once ``static_argnums``
    are removed."""
    static = sorted(static_argnums)
    return tuple(sorted(i - sum(s < i for s in static) for i in donate_argnums if i not in static))


def safe_map(f, *args):
    """``map`` that requires its sequences to have one length; returns a list."""
    args = list(map(list, args))
    n = len(args[0])
    for arg in args[1:]:
        if len(arg) != n:
            raise ValueError(f"length mismatch: {list(map(len, args))}")
    return list(map(f, *args))


def shaped_abstractify(x):
    """The abstract type (``ShapedArray``) of a value or tracer."""
    return core.get_aval(x)

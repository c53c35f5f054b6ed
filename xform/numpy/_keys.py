"""Typed PRNG key arrays (``xform.random.key``) in the xform.numpy functions that move
elements (``reshape``, ``stack``, ``concatenate``, ``where``, ``take``, ...), as in jax.numpy.

A key array holds ``uint32`` key data whose last dimension is the key's words. One of these
functions applied to key arrays is the same function applied to their data under ``vmap`` over
that last dimension: the function sees arrays shaped as the keys, so its axes are the keys'
axes, and every word moves with its key. Other arguments (a condition, indices, a shape) are
closed over. The results are key arrays again, of the same implementation (a result of
another dtype, or keys of two implementations, is a ``ValueError``, as in JAX).

The functions are wrapped in ``xform.numpy``'s namespace only. A call without keys costs a
``try``: a key array fails the function's argument check with a ``TypeError``, and only then
are the arguments searched for keys.
"""

import functools

from xform import core, pytree
from xform.api.batching import vmap
from xform.pytree import ArrayNode

# The functions of xform.numpy that take key arrays (element moves and fills, no arithmetic).
KEY_FUNCTIONS = (
    "array",
    "asarray",
    "atleast_1d",
    "atleast_2d",
    "atleast_3d",
    "broadcast_arrays",
    "broadcast_to",
    "concatenate",
    "copy",
    "dstack",
    "empty_like",
    "expand_dims",
    "flip",
    "fliplr",
    "flipud",
    "full_like",
    "hstack",
    "moveaxis",
    "ones_like",
    "ravel",
    "repeat",
    "reshape",
    "roll",
    "rot90",
    "split",
    "array_split",
    "squeeze",
    "stack",
    "swapaxes",
    "take",
    "take_along_axis",
    "tile",
    "transpose",
    "vstack",
    "where",
    "zeros_like",
)

# Whole-array comparisons: of the keys' data, words and all.
KEY_COMPARISONS = ("array_equal", "array_equiv")


class KeyArrayBase(ArrayNode):
    """The base of ``xform.random``'s ``KeyArray``: what this module recognizes as keys. A key
    array has ``_data`` (uint32, the key words last), ``_impl`` and ``_with_data(data)``."""

    __slots__ = ()


def _is_key(x):
    return isinstance(x, KeyArrayBase)


def on_keys(fn):
    """``fn`` that also takes key arrays (see the module docstring)."""

    @functools.wraps(fn)
    def with_keys(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except TypeError:
            flat, tree = pytree.tree_flatten((args, kwargs), is_leaf=_is_key)
            if not any(_is_key(x) for x in flat):
                raise
        return _on_key_data(fn, flat, tree)

    return with_keys


def apply_to_keys(fn, *args, **kwargs):
    """``fn`` applied to the key arrays among ``args``/``kwargs`` through their data, each
    word on its own; the results as key arrays."""
    flat, tree = pytree.tree_flatten((args, kwargs), is_leaf=_is_key)
    return _on_key_data(fn, flat, tree)


def _on_key_data(fn, flat, tree):
    at = [i for i, x in enumerate(flat) if _is_key(x)]
    keys = [flat[i] for i in at]
    impls = {k._impl.name for k in keys}
    if len(impls) > 1:
        raise ValueError(
            f"{fn.__name__}: key arrays of different PRNG implementations "
            f"({', '.join(sorted(impls))}) cannot be combined"
        )

    def on_data(*datas):
        full = list(flat)
        for i, data in zip(at, datas, strict=True):
            full[i] = data
        args, kwargs = pytree.tree_unflatten(tree, full)
        return fn(*args, **kwargs)

    datas = [k._data for k in keys]
    in_axes = tuple(core.get_aval(d).ndim - 1 for d in datas)
    out = vmap(on_data, in_axes=in_axes, out_axes=-1)(*datas)
    for leaf in pytree.tree_leaves(out):
        dtype = core.get_aval(leaf).dtype
        if dtype != core.get_aval(datas[0]).dtype:
            raise ValueError(
                f"{fn.__name__}: key arrays cannot become {dtype} arrays; "
                "use xform.random.key_data for their uint32 data"
            )
    return pytree.tree_map(keys[0]._with_data, out)


def _compares_keys(fn):
    """``fn`` (a whole-array comparison) that also compares key arrays, by their data."""

    @functools.wraps(fn)
    def with_keys(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except TypeError:
            keys = [x for x in args if _is_key(x)]
            if not keys:
                raise
        impls = {k._impl.name for k in keys}
        if len(impls) > 1:  # a TypeError here, as JAX's
            raise TypeError(
                f"{fn.__name__}: key arrays of different PRNG implementations "
                f"({', '.join(sorted(impls))}) cannot be compared"
            )
        return fn(*(x._data if _is_key(x) else x for x in args), **kwargs)

    return with_keys


def wrap(namespace):
    """``KEY_FUNCTIONS`` and ``KEY_COMPARISONS`` of ``namespace`` (a module's globals), wrapped
    to take key arrays."""
    wrapped = {name: on_keys(namespace[name]) for name in KEY_FUNCTIONS if name in namespace}
    wrapped.update(
        {name: _compares_keys(namespace[name]) for name in KEY_COMPARISONS if name in namespace}
    )
    return wrapped

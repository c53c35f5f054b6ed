"""Host callbacks: Python functions called from inside programs, as JAX's.

Three primitives, each carrying the user's function as a ``FlatCallback`` param:

- ``debug_callback`` (``debug.callback``, ``debug.print``, ``debug.breakpoint``): no results,
  an effect. Dead-code elimination keeps it (``dce.effectful``); under ``grad`` it runs on the
  primal values and is dropped from the transpose; under ``vmap`` it runs once per lane, in
  order (the lanes are unrolled, as in JAX).
- ``pure_callback``: results of declared types, no effect (unused, it may be dropped); it
  cannot be differentiated; ``vmap_method`` says how it is batched.
- ``io_callback``: results of declared types and an effect, optionally ``ordered``.

Eagerly the function is simply called (``core.eager_rules``), with ``xform.Array``
arguments; inside a compiled program it runs as an XLA host callback (lowering/callback.py).
Results are checked against their declared shapes and dtypes either way.
"""

import weakref

import numpy as np

from xform import core, dtypes, pytree
from xform.core import eval_trace, get_aval, set_current_trace, subjaxprs
from xform.interpret import ad, batching, dce, transpose
from xform.interpret.batching import moveaxis, not_mapped
from xform.primitives.base import standard_primitive
from xform.primitives.elementwise import convert_element_type_p
from xform.primitives.indexing import index_in_dim
from xform.primitives.scan import scan
from xform.primitives.structural import broadcast

__all__ = [
    "FlatCallback",
    "split_callback_args",
    "check_results",
    "has_ordered_effects",
    "debug_callback",
    "pure_callback",
    "io_callback",
    "VMAP_METHODS",
]

VMAP_METHODS = (
    "sequential",
    "sequential_unrolled",
    "expand_dims",
    "broadcast_all",
    "legacy_vectorized",
    None,
)


class FlatCallback:
    """The user's function as a function of the flat array leaves of its ``(args, kwargs)``.

    ``static`` holds the leaves that are not arrays (strings, ``None``, ...) as
    ``(position, value)`` pairs; they are passed as they are. Two of these compare equal when
    they call the same function with the same argument structure, so retracing is cached.
    """

    __slots__ = ("fn", "in_tree", "static")

    def __init__(self, fn, in_tree, static=()):
        self.fn = fn
        self.in_tree = in_tree
        self.static = static

    def __call__(self, *flat_args):
        if self.static:
            leaves = list(flat_args)
            for i, value in self.static:
                leaves.insert(i, value)
        else:
            leaves = flat_args
        args, kwargs = pytree.tree_unflatten(self.in_tree, leaves)
        return self.fn(*args, **kwargs)

    def __eq__(self, other):
        return (
            type(other) is FlatCallback
            and self.fn == other.fn
            and self.in_tree == other.in_tree
            and self.static == other.static
        )

    def __hash__(self):
        try:
            return hash((self.fn, self.in_tree, self.static))
        except TypeError:  # an unhashable static leaf
            return hash((self.fn, self.in_tree))

    def __repr__(self):
        return f"FlatCallback({getattr(self.fn, '__qualname__', self.fn)!r})"


def split_callback_args(args, kwargs):
    """``(in_tree, array leaves, static leaves)`` of ``(args, kwargs)``: leaves that are not
    arrays (no abstract value) stay Python values, passed to the callback as they are."""
    leaves, in_tree = pytree.tree_flatten((args, kwargs))
    dynamic, static = [], []
    for i, leaf in enumerate(leaves):
        try:
            get_aval(leaf)
        except TypeError:
            static.append((i, leaf))
        else:
            dynamic.append(leaf)
    return in_tree, dynamic, tuple(static)


def check_results(name, outs, result_avals):
    """The flat results of a callback as NumPy arrays of the declared types; a
    ``RuntimeError`` naming both when one does not match (JAX's words)."""
    leaves = pytree.tree_leaves(outs)
    if len(leaves) != len(result_avals):
        raise RuntimeError(
            f"{name}: Mismatched number of outputs from callback. Expected: "
            f"{len(result_avals)}, Actual: {len(leaves)}"
        )
    values = []
    for i, (leaf, aval) in enumerate(zip(leaves, result_avals, strict=True)):
        value = np.asarray(leaf)
        canonical = dtypes.canonicalize(value.dtype)
        if canonical != value.dtype:
            value = value.astype(canonical)
        if value.shape != aval.shape:
            raise RuntimeError(
                f"{name}: Incorrect output shape for return value #{i}: "
                f"Expected: {aval.shape}, Actual: {value.shape}"
            )
        if value.dtype != aval.dtype:
            raise RuntimeError(
                f"{name}: Incorrect output dtype for return value #{i}: "
                f"Expected: {aval.dtype}, Actual: {value.dtype}"
            )
        values.append(value)
    return values


_ordered_jaxprs = weakref.WeakKeyDictionary()  # jaxpr -> whether it holds ordered callbacks


def has_ordered_effects(jaxpr):
    """Whether ``jaxpr`` (at any depth) calls an ordered ``debug_callback``/``io_callback``."""
    known = _ordered_jaxprs.get(jaxpr)
    if known is None:
        known = _ordered_jaxprs[jaxpr] = any(
            (e.primitive in _ORDERABLE and e.params["ordered"])
            or any(has_ordered_effects(j) for j in subjaxprs(e.params))
            for e in jaxpr.eqns
        )
    return known


def as_callback_argument(x):
    """A concrete eager operand as an ``xform.Array`` (what a callback receives)."""
    if isinstance(x, (bool, int, float, complex, np.ndarray, np.generic)):
        aval = get_aval(x)
        with set_current_trace(eval_trace):
            return convert_element_type_p.bind(x, new_dtype=aval.dtype, weak_type=aval.weak_type)
    return x


def _to_arrays(values, result_avals):
    with set_current_trace(eval_trace):
        return [
            convert_element_type_p.bind(v, new_dtype=a.dtype, weak_type=False)
            for v, a in zip(values, result_avals, strict=True)
        ]


def _result_avals(name, result_shape_dtypes):
    """The flat declared result types and their tree; 64-bit types need x64, as in JAX."""
    leaves, out_tree = pytree.tree_flatten(result_shape_dtypes)
    avals = []
    for leaf in leaves:
        if not (hasattr(leaf, "shape") and hasattr(leaf, "dtype")):
            raise TypeError(
                f"{name}: result_shape_dtypes leaves must have shape and dtype "
                f"attributes (a ShapeDtypeStruct), got {leaf!r}"
            )
        dtype = np.dtype(leaf.dtype)
        if dtypes.canonicalize(dtype) != dtype:
            raise ValueError(
                f"{name}: result_shape_dtypes cannot specify 64-bit types when "
                f"`jax_enable_x64` is disabled (got {dtype})"
            )
        avals.append(core.ShapedArray(tuple(leaf.shape), dtype))
    return tuple(avals), out_tree


def _sequential(prim, args, dims, params, unrolled):
    """A batched callback as a loop over the lanes (a scan, or unrolled), results stacked."""
    is_batched = [d is not not_mapped for d in dims]
    moved = [moveaxis(x, d, 0) if b else x for x, d, b in zip(args, dims, is_batched, strict=True)]
    batched = [x for x, b in zip(moved, is_batched, strict=True) if b]

    def lane(xs):
        it = iter(xs)
        return prim.bind(
            *[next(it) if b else x for x, b in zip(moved, is_batched, strict=True)], **params
        )

    _, outs = scan(lambda carry, xs: (carry, lane(xs)), (), batched, unroll=True if unrolled else 1)
    return list(outs), [0] * len(outs)


# --------------------------------------------------------------------------- debug_callback


def debug_callback(callback, *args, ordered=False, partitioned=False):
    """Stage ``callback(*args)`` (a ``FlatCallback`` of the array leaves ``args``)."""
    debug_callback_p.bind(*args, callback=callback, ordered=ordered, partitioned=partitioned)


def _debug_callback_abstract_eval(*avals, callback, ordered, partitioned):
    return []


debug_callback_p = standard_primitive(
    "debug_callback", _debug_callback_abstract_eval, multiple_results=True
)
dce.effectful.add(debug_callback_p)


def _debug_callback_impl(*args, callback, ordered, partitioned):
    callback(*[as_callback_argument(x) for x in args])
    return []


core.eager_rules[debug_callback_p] = _debug_callback_impl


def _debug_callback_jvp(primals, tangents, **params):
    # Called on the primal values only; there is nothing to differentiate.
    return debug_callback_p.bind(*primals, **params), []


ad.jvp_rules[debug_callback_p] = _debug_callback_jvp
transpose.transpose_rules[debug_callback_p] = lambda ct, *args, **params: [None] * len(args)


def _debug_callback_batch(axis, args, dims, **params):
    # One call per lane, in lane order: a print shows each lane's values on its own line.
    for i in range(axis.size):
        debug_callback_p.bind(
            *[
                x if d is not_mapped else index_in_dim(x, i, d, False)
                for x, d in zip(args, dims, strict=True)
            ],
            **params,
        )
    return [], []


batching.batch_rules[debug_callback_p] = _debug_callback_batch


# --------------------------------------------------------------------------- pure_callback


def pure_callback(callback, result_shape_dtypes, *args, sharding=None, vmap_method=None, **kwargs):
    """Call the pure Python function ``callback(*args, **kwargs)`` from inside a program.

    Args:
      callback: a function of arrays returning arrays (NumPy, or anything ``np.asarray``
        takes) matching ``result_shape_dtypes``. It must be pure: xform may call it fewer
        or more times than the program says, or not at all if its results are unused.
      result_shape_dtypes: a pytree of ``ShapeDtypeStruct``s (anything with ``shape`` and
        ``dtype``): the types of the results.
      *args, **kwargs: pytrees of arrays passed to ``callback``.
      sharding: accepted for JAX's signature; the callback runs on the host.
      vmap_method: how ``vmap`` batches the call: ``"sequential"`` (a loop over the lanes),
        ``"sequential_unrolled"``, ``"expand_dims"`` (unbatched arguments get a leading
        axis of size 1), ``"broadcast_all"`` (every argument gets the full batch axis),
        ``"legacy_vectorized"`` (unbatched arguments are left alone); None: ``vmap`` raises.

    Returns:
      Arrays shaped as ``result_shape_dtypes``.

    Example:
      >>> pure_callback(np.sin, ShapeDtypeStruct((3,), np.float32), x)
    """
    if vmap_method not in VMAP_METHODS:
        raise ValueError(
            f"vmap_method must be on of the allowed methods {list(VMAP_METHODS)}, "
            f"but got: {vmap_method}"
        )
    flat_args, in_tree = pytree.tree_flatten((args, kwargs))
    result_avals, out_tree = _result_avals("pure_callback", result_shape_dtypes)
    outs = pure_callback_p.bind(
        *flat_args,
        callback=FlatCallback(callback, in_tree),
        result_avals=result_avals,
        sharding=sharding,
        vmap_method=vmap_method,
    )
    return pytree.tree_unflatten(out_tree, outs)


def _callback_abstract_eval(*avals, callback, result_avals, **params):
    return list(result_avals)


pure_callback_p = standard_primitive(
    "pure_callback", _callback_abstract_eval, multiple_results=True
)


def _pure_callback_impl(*args, callback, result_avals, sharding, vmap_method):
    outs = callback(*[as_callback_argument(x) for x in args])
    return _to_arrays(check_results("pure_callback", outs, result_avals), result_avals)


core.eager_rules[pure_callback_p] = _pure_callback_impl


def _pure_callback_jvp(primals, tangents, **params):
    raise ValueError(
        "Pure callbacks do not support JVP. Please use `jax.custom_jvp` to use "
        "callbacks while taking gradients."
    )


def _pure_callback_transpose(ct, *args, **params):
    raise ValueError(
        "Pure callbacks do not support transpose. Please use `jax.custom_vjp` to "
        "use callbacks while taking gradients."
    )


ad.jvp_rules[pure_callback_p] = _pure_callback_jvp
transpose.transpose_rules[pure_callback_p] = _pure_callback_transpose


def _pure_callback_batch(axis, args, dims, *, vmap_method, result_avals, **params):
    size = axis.size
    if vmap_method in ("sequential", "sequential_unrolled"):
        return _sequential(
            pure_callback_p,
            args,
            dims,
            {**params, "vmap_method": vmap_method, "result_avals": result_avals},
            vmap_method == "sequential_unrolled",
        )
    batched_avals = tuple(batching.batched_aval(a, 0, size) for a in result_avals)
    moved = [x if d is not_mapped else moveaxis(x, d, 0) for x, d in zip(args, dims, strict=True)]
    if vmap_method in ("expand_dims", "broadcast_all"):
        n = size if vmap_method == "broadcast_all" else 1
        moved = [
            broadcast(x, (n,)) if d is not_mapped else x for x, d in zip(moved, dims, strict=True)
        ]
    elif vmap_method != "legacy_vectorized":
        raise NotImplementedError(
            "vmap is only supported for the pure_callback primitive when vmap_method is one "
            "of 'sequential', 'sequential_unrolled', 'expand_dims', 'broadcast_all', or "
            f"'legacy_vectorized'. Got vmap_method={vmap_method}."
        )
    outs = pure_callback_p.bind(
        *moved, vmap_method=vmap_method, result_avals=batched_avals, **params
    )
    return outs, [0] * len(outs)


batching.batch_rules[pure_callback_p] = _pure_callback_batch


# --------------------------------------------------------------------------- io_callback


def io_callback(callback, result_shape_dtypes, *args, sharding=None, ordered=False, **kwargs):
    """Call the impure Python function ``callback(*args, **kwargs)`` from inside a program.

    Unlike ``pure_callback`` the call is never dropped, even when its results are unused.

    Args:
      callback: a function of arrays returning arrays matching ``result_shape_dtypes``.
      result_shape_dtypes: a pytree of ``ShapeDtypeStruct``s: the types of the results.
      *args, **kwargs: pytrees of arrays passed to ``callback``.
      sharding: accepted for JAX's signature; the callback runs on the host.
      ordered: run in program order relative to the other ordered callbacks (such a
        call cannot be batched with ``vmap``).

    Returns:
      Arrays shaped as ``result_shape_dtypes``.

    Example:
      >>> io_callback(log.append, None, x)
    """
    flat_args, in_tree = pytree.tree_flatten((args, kwargs))
    result_avals, out_tree = _result_avals("io_callback", result_shape_dtypes)
    outs = io_callback_p.bind(
        *flat_args,
        callback=FlatCallback(callback, in_tree),
        result_avals=result_avals,
        sharding=sharding,
        ordered=ordered,
    )
    return pytree.tree_unflatten(out_tree, outs)


io_callback_p = standard_primitive("io_callback", _callback_abstract_eval, multiple_results=True)
dce.effectful.add(io_callback_p)


def _io_callback_impl(*args, callback, result_avals, sharding, ordered):
    outs = callback(*[as_callback_argument(x) for x in args])
    return _to_arrays(check_results("io_callback", outs, result_avals), result_avals)


core.eager_rules[io_callback_p] = _io_callback_impl


def _io_callback_jvp(primals, tangents, **params):
    raise ValueError("IO callbacks do not support JVP.")


def _io_callback_transpose(ct, *args, **params):
    raise ValueError("IO callbacks do not support transpose.")


ad.jvp_rules[io_callback_p] = _io_callback_jvp
transpose.transpose_rules[io_callback_p] = _io_callback_transpose


def _io_callback_batch(axis, args, dims, *, ordered, **params):
    if ordered:
        raise ValueError("Cannot `vmap` ordered IO callback.")
    return _sequential(io_callback_p, args, dims, {**params, "ordered": False}, False)


batching.batch_rules[io_callback_p] = _io_callback_batch

_ORDERABLE = (debug_callback_p, io_callback_p)

"""Windowed reductions: ``reduce_window`` and the pooling primitives, JAX's
``lax/windowed_reductions.py``.

Every primitive here reduces windows of ``window_dimensions`` elements sliding over its operand
by ``window_strides``, after ``padding`` (one ``(low, high)`` pair per dimension) and
``base_dilation`` (holes between the operand's elements), the window itself spread out by
``window_dilation``. ``reduce_window_shape_tuple`` is the shape arithmetic.

- ``reduce_window_sum``, ``reduce_window_max``, ``reduce_window_min`` (one operand): what
  ``reduce_window`` binds when the reducer is ``lax.add``/``max``/``min`` and the init value a
  concrete scalar equal to its identity, as JAX does. They have NumPy host impls.
- ``reduce_window[jaxpr, ...] *operands *init_values``: any other reducer, traced once to a
  scalar ClosedJaxpr (as ``lax.reduce``'s ``reduce``). Its JVP reduces (primal, tangent) pairs
  with the reducer's JVP, as JAX 0.10 does.
- ``select_and_gather_add[select_prim, ...] tangents operand``: per window, the tangent at the
  operand's maximum (``select_prim`` is ``ge_p``) or minimum (``le_p``): the JVP of
  ``reduce_window_max``/``min``.
- ``select_and_scatter_add[select_prim, ...] source operand``: its transpose, each ``source``
  element added at its window's maximum (minimum): the max-pool gradient.
- ``select_and_scatter[select_jaxpr, scatter_jaxpr, ...] operand source init_value``: the
  general XLA op behind it, with traced select and scatter computations.

The primitives without a host impl are compiled with XLA for their one equation when run
eagerly. Transposes and batching rules are JAX's: the batch dimension becomes a window
dimension of size 1.
"""

import weakref

import numpy as np

from xform import dtypes, pytree
from xform.core import ShapedArray, eval_jaxpr, get_aval
from xform.interpret import ad, batching, transpose
from xform.interpret.staging import trace_to_jaxpr
from xform.primitives.base import NUMBER, accepted_dtypes, standard_primitive
from xform.primitives.comparisons import ge_p, le_p
from xform.primitives.convolution import padtype_to_pads
from xform.primitives.indexing import slice as slice_
from xform.primitives.reductions import (
    flatten_operands_and_inits,
    identity,
    monoid_of,
    reduction_jaxpr,
)
from xform.primitives.structural import pad

__all__ = ["reduce_window", "reduce_window_shape_tuple"]

_WINDOW_PARAMS = (
    "window_dimensions",
    "window_strides",
    "padding",
    "base_dilation",
    "window_dilation",
)


# --------------------------------------------------------------------------- shapes


def _dilate_shape(shape, dilation):
    if any(d <= 0 for d in dilation):
        raise TypeError(f"All dilations must be positive, got {tuple(dilation)}.")
    return tuple(0 if n == 0 else 1 + d * (n - 1) for n, d in zip(shape, dilation, strict=True))


def reduce_window_shape_tuple(
    operand_shape,
    window_dimensions,
    window_strides,
    padding,
    base_dilation=None,
    window_dilation=None,
):
    """The shape ``reduce_window`` produces for an operand of ``operand_shape``.

    Example:
      >>> reduce_window_shape_tuple((4, 4), (2, 2), (2, 2), ((0, 0), (0, 0)))  # (2, 2)
    """
    if base_dilation is not None:
        operand_shape = _dilate_shape(operand_shape, base_dilation)
    if window_dilation is not None:
        window_dimensions = _dilate_shape(window_dimensions, window_dilation)
    out = []
    for d, (lo, hi), w, s in zip(
        operand_shape, padding, window_dimensions, window_strides, strict=True
    ):
        padded = d + lo + hi
        out.append(0 if padded < w else (padded - w) // s + 1)
    return tuple(out)


def _check_shapelike(name, what, xs, positive):
    if not all(isinstance(x, (int, np.integer)) for x in xs):
        raise TypeError(
            f"{name} {what} must have every element be an integer type, got {tuple(xs)}."
        )
    bad = [x for x in xs if x < (1 if positive else 0)]
    if bad:
        kind = "positive" if positive else "nonnegative"
        raise TypeError(f"{name} {what} must have every element be {kind}, got {tuple(xs)}.")


def _window_shape(
    name, operand, window_dimensions, window_strides, padding, base_dilation, window_dilation
):
    """The output shape, with JAX's checks (``TypeError`` for inconsistent parameters)."""
    _check_shapelike(name, "window_dimensions", window_dimensions, True)
    _check_shapelike(name, "window_strides", window_strides, True)
    _check_shapelike(name, "base_dilation", base_dilation, False)
    _check_shapelike(name, "window_dilation", window_dilation, False)
    if operand.ndim != len(window_dimensions):
        raise TypeError(
            f"{name} got the wrong number of window_dimensions for operand: got "
            f"operand shape {operand.shape} with window_dimensions "
            f"{tuple(window_dimensions)}."
        )
    for what, xs in (
        ("window_strides", window_strides),
        ("padding", padding),
        ("base_dilation", base_dilation),
        ("window_dilation", window_dilation),
    ):
        if len(xs) != len(window_dimensions):
            raise TypeError(
                f"{name} got inconsistent {what} and window_dimensions: got "
                f"{what} {tuple(xs)} and window_dimensions "
                f"{tuple(window_dimensions)}."
            )
    return reduce_window_shape_tuple(
        operand.shape, window_dimensions, window_strides, padding, base_dilation, window_dilation
    )


def _windows(
    x, init, *, window_dimensions, window_strides, padding, base_dilation, window_dilation
):
    """A view of ``x``'s windows (dilated, padded with ``init``), of shape ``out + window``,
    or None when the output is empty."""
    out_shape = reduce_window_shape_tuple(
        x.shape, window_dimensions, window_strides, padding, base_dilation, window_dilation
    )
    if 0 in out_shape:
        return None
    if any(d != 1 for d in base_dilation):
        dilated = np.full(_dilate_shape(x.shape, base_dilation), init, x.dtype)
        dilated[tuple(slice(None, None, d) for d in base_dilation)] = x
        x = dilated
    # negative padding removes elements, positive padding adds init values
    x = x[
        tuple(
            slice(max(-lo, 0), n - max(-hi, 0))
            for (lo, hi), n in zip(padding, x.shape, strict=True)
        )
    ]
    x = np.pad(x, [(max(lo, 0), max(hi, 0)) for lo, hi in padding], constant_values=init)
    extents = _dilate_shape(window_dimensions, window_dilation)
    view = np.lib.stride_tricks.sliding_window_view(x, extents)
    return view[
        tuple(slice(None, None, s) for s in window_strides)
        + tuple(slice(None, None, d) for d in window_dilation)
    ]


def _window_params(window_dimensions, window_strides, padding, base_dilation, window_dilation):
    return dict(
        window_dimensions=window_dimensions,
        window_strides=window_strides,
        padding=padding,
        base_dilation=base_dilation,
        window_dilation=window_dilation,
    )


# --------------------------------------------------------------------------- reduce_window


def _int_tuple(xs, what):
    try:
        return tuple(int(x.__index__()) for x in xs)
    except (TypeError, AttributeError):
        raise TypeError(
            f"reduce_window {what} must be a sequence of integers, got {xs!r}"
        ) from None


_MONOID_PRIMITIVES = {}  # monoid name -> primitive, filled below


def reduce_window(
    operand,
    init_value,
    computation,
    window_dimensions,
    window_strides=None,
    padding="VALID",
    base_dilation=None,
    window_dilation=None,
):
    """Reduce each window of ``operand`` with ``computation``: XLA's ReduceWindow.

    Args:
      operand: an array or a pytree of arrays of one shape.
      init_value: scalars, a pytree like ``operand``: the identity of ``computation``, and
        the value of the padding.
      computation: ``(xs, ys) -> zs`` on pytrees like ``operand``. ``lax.add``, ``lax.max``
        or ``lax.min`` with its identity as the one init value binds the specialised
        ``reduce_window_sum``/``max``/``min`` primitive.
      window_dimensions: the window's size along each dimension.
      window_strides: the step between windows (default 1 everywhere).
      padding: ``"VALID"``, ``"SAME"``, ``"SAME_LOWER"`` or ``(low, high)`` pairs.
      base_dilation: holes between the operand's elements (default 1: none).
      window_dilation: holes between the window's elements (default 1: none).

    Returns:
      A pytree like ``operand`` of the reduced windows.

    Example:
      >>> reduce_window(np.arange(10.), 1., xform.lax.mul, (2,))  # [0., 2., 6., ..., 72.]
    """
    flat_operands, flat_inits, operand_tree = flatten_operands_and_inits(
        "reduce_window", operand, init_value
    )
    if not flat_operands:
        raise ValueError("reduce_window must have at least one operand.")
    window_dimensions = _int_tuple(window_dimensions, "window_dimensions")
    n = len(window_dimensions)
    window_strides = (
        (1,) * n if window_strides is None else _int_tuple(window_strides, "window_strides")
    )
    base_dilation = (
        (1,) * n if base_dilation is None else _int_tuple(base_dilation, "base_dilation")
    )
    window_dilation = (
        (1,) * n if window_dilation is None else _int_tuple(window_dilation, "window_dilation")
    )
    shape = get_aval(flat_operands[0]).shape
    if isinstance(padding, str):
        if len(shape) != n or len(window_strides) != n or len(window_dilation) != n:
            _window_shape(
                "reduce_window",
                get_aval(flat_operands[0]),
                window_dimensions,
                window_strides,
                ((0, 0),) * n,
                base_dilation,
                window_dilation,
            )
        padding = padtype_to_pads(
            shape, _dilate_shape(window_dimensions, window_dilation), window_strides, padding
        )
    try:
        padding = tuple((int(lo), int(hi)) for lo, hi in padding)
    except (TypeError, ValueError):
        raise TypeError(
            "reduce_window padding must be a string or a sequence of (low, high) "
            f"integer pairs, got {padding!r}"
        ) from None
    params = _window_params(
        window_dimensions, window_strides, padding, base_dilation, window_dilation
    )
    monoid = monoid_of(computation, flat_inits, ("add", "max", "min"))
    if monoid is not None:
        out = _MONOID_PRIMITIVES[monoid].bind(flat_operands[0], **params)
        return pytree.tree_unflatten(operand_tree, [out])
    init_avals = [get_aval(x) for x in flat_inits]
    jaxpr, out_tree = reduction_jaxpr(
        computation, init_avals, operand_tree, "reduction computation of reduce_window"
    )
    if out_tree != operand_tree:
        raise ValueError(
            "reduce_window output must have the same tree structure as the "
            f"operands {operand_tree} vs. {out_tree}"
        )
    outs = reduce_window_p.bind(*flat_operands, *flat_inits, jaxpr=jaxpr, **params)
    return pytree.tree_unflatten(out_tree, outs)


def _reduce_window_abstract_eval(*avals, jaxpr, **params):
    n = len(avals) // 2
    operands, inits = avals[:n], avals[n:]
    if any(o.dtype != i.dtype for o, i in zip(operands, inits, strict=True)):
        raise TypeError(
            "reduce_window got inconsistent dtypes for operands and init_values: "
            f"got operand dtypes {[str(o.dtype) for o in operands]} and "
            f"init_value dtypes {[str(i.dtype) for i in inits]}."
        )
    if any(i.shape for i in inits):
        raise TypeError(
            "reduce_window expected init_values to be scalars but init_values "
            f"have shapes {[i.shape for i in inits]}."
        )
    if any(o.shape != operands[0].shape for o in operands):
        raise TypeError(
            f"reduce_window expected operands of one shape, got {[o.shape for o in operands]}."
        )
    outs = jaxpr.out_avals
    if len(outs) != n or any(
        o.shape or o.dtype != i.dtype for o, i in zip(outs, inits, strict=True)
    ):
        raise TypeError(
            "reduce_window: the reduction computation must return scalars of the "
            f"init_values' types ({', '.join(a.str_short() for a in inits)}), "
            f"got ({', '.join(a.str_short() for a in outs)})"
        )
    shape = _window_shape("reduce_window", operands[0], **params)
    return [ShapedArray(shape, o.dtype) for o in operands]


reduce_window_p = standard_primitive(
    "reduce_window", _reduce_window_abstract_eval, multiple_results=True
)


# --------------------------------------------------------------------------- monoid windows


def _monoid_abstract_eval(name, kinds):
    def rule(x, **params):
        if kinds is not None and x.dtype not in accepted_dtypes(kinds):
            raise TypeError(f"operand to {name} must have a number dtype, got {x.dtype}")
        shape = _window_shape(name, x, **params)
        return [ShapedArray(shape, x.dtype, x.weak_type)]

    return rule


def _monoid_host(monoid, np_reduce):
    def impl(x, **params):
        if x.ndim == 0:  # one window: the element itself
            return [x.copy()]
        init = identity(monoid, x.dtype)
        view = _windows(x, init, **params)
        shape = reduce_window_shape_tuple(
            x.shape,
            params["window_dimensions"],
            params["window_strides"],
            params["padding"],
            params["base_dilation"],
            params["window_dilation"],
        )
        if view is None:
            return [np.full(shape, init, x.dtype)]
        axes = tuple(range(x.ndim, 2 * x.ndim))
        compute = np.float32 if x.dtype in (dtypes.float16, dtypes.bfloat16) else x.dtype
        out = np_reduce(view.astype(compute, copy=False), axis=axes)
        return [np.ascontiguousarray(out).astype(x.dtype, copy=False)]

    return impl


def _sum_host(x, axis):
    return np.sum(x, axis=axis, dtype=x.dtype)


reduce_window_sum_p = standard_primitive(
    "reduce_window_sum",
    _monoid_abstract_eval("reduce_window_sum", NUMBER),
    _monoid_host("add", _sum_host),
)
reduce_window_max_p = standard_primitive(
    "reduce_window_max",
    _monoid_abstract_eval("reduce_window_max", None),
    _monoid_host("max", np.max),
)
reduce_window_min_p = standard_primitive(
    "reduce_window_min",
    _monoid_abstract_eval("reduce_window_min", None),
    _monoid_host("min", np.min),
)
_MONOID_PRIMITIVES.update(add=reduce_window_sum_p, max=reduce_window_max_p, min=reduce_window_min_p)

# primitive -> monoid name, for the lowering
WINDOW_MONOIDS = {
    reduce_window_sum_p: "add",
    reduce_window_max_p: "max",
    reduce_window_min_p: "min",
}


# --------------------------------------------------------------------------- select_and_*


def _select_and_gather_add_abstract_eval(tangents, operand, *, select_prim, **params):
    if tangents.shape != operand.shape:
        raise TypeError(
            "select_and_gather_add tangents and operand shapes must match, got "
            f"{tangents.shape} and {operand.shape}."
        )
    shape = _window_shape("select_and_gather_add", operand, **params)
    return [ShapedArray(shape, tangents.dtype)]


select_and_gather_add_p = standard_primitive(
    "select_and_gather_add", _select_and_gather_add_abstract_eval
)


def _select_and_gather_add(
    tangents,
    operand,
    select_prim,
    window_dimensions,
    window_strides,
    padding,
    base_dilation,
    window_dilation,
):
    return select_and_gather_add_p.bind(
        tangents,
        operand,
        select_prim=select_prim,
        **_window_params(
            window_dimensions, window_strides, padding, base_dilation, window_dilation
        ),
    )


def _check_select_scatter(name, operand, window_dimensions, window_strides, padding):
    _check_shapelike(name, "window_dimensions", window_dimensions, True)
    _check_shapelike(name, "window_strides", window_strides, True)
    if not (operand.ndim == len(window_dimensions) == len(window_strides) == len(padding)):
        raise TypeError(
            f"{name} got inconsistent window_dimensions {window_dimensions}, "
            f"window_strides {window_strides} and padding {padding} for an "
            f"operand of shape {operand.shape}."
        )


def _select_and_scatter_add_abstract_eval(
    source, operand, *, select_prim, window_dimensions, window_strides, padding
):
    _check_select_scatter(
        "select_and_scatter_add", operand, window_dimensions, window_strides, padding
    )
    expected = reduce_window_shape_tuple(operand.shape, window_dimensions, window_strides, padding)
    if source.shape != expected:
        raise TypeError(
            f"select_and_scatter_add source shape {source.shape} must be the "
            f"windowed shape {expected} of operand shape {operand.shape}."
        )
    if source.dtype != operand.dtype:
        raise TypeError(
            "select_and_scatter_add source and operand dtypes must match, got "
            f"{source.dtype} and {operand.dtype}."
        )
    return [ShapedArray(operand.shape, source.dtype)]


def _select_and_scatter_add_host(
    source, operand, *, select_prim, window_dimensions, window_strides, padding
):
    # XLA's select_and_scatter keeps the first element the comparison prefers (``ge``: the
    # first maximum), as np.argmax/argmin pick it; padding (the identity) is never preferred.
    ndim = operand.ndim
    out = np.zeros(operand.shape, source.dtype)
    ones = (1,) * ndim
    view = _windows(
        operand,
        identity("max" if select_prim is ge_p else "min", operand.dtype),
        window_dimensions=window_dimensions,
        window_strides=window_strides,
        padding=padding,
        base_dilation=ones,
        window_dilation=ones,
    )
    if view is None or ndim == 0:
        return [source.reshape(operand.shape).copy() if ndim == 0 else out]
    out_shape = view.shape[:ndim]
    flat = view.reshape(out_shape + (-1,))
    pick = (np.argmax if select_prim is ge_p else np.argmin)(flat, axis=-1)
    offsets = np.unravel_index(pick, window_dimensions)
    grid = np.indices(out_shape)
    positions = [grid[i] * window_strides[i] + offsets[i] - padding[i][0] for i in range(ndim)]
    inside = np.all(
        [(p >= 0) & (p < n) for p, n in zip(positions, operand.shape, strict=True)], axis=0
    )
    np.add.at(out, tuple(p[inside] for p in positions), source[inside])
    return [out]


select_and_scatter_add_p = standard_primitive(
    "select_and_scatter_add", _select_and_scatter_add_abstract_eval, _select_and_scatter_add_host
)


def _select_and_scatter_add(
    source, operand, select_prim, window_dimensions, window_strides, padding
):
    return select_and_scatter_add_p.bind(
        source,
        operand,
        select_prim=select_prim,
        window_dimensions=tuple(window_dimensions),
        window_strides=tuple(window_strides),
        padding=tuple(padding),
    )


def _select_and_scatter_abstract_eval(
    operand,
    source,
    init_value,
    *,
    select_jaxpr,
    scatter_jaxpr,
    window_dimensions,
    window_strides,
    padding,
):
    _check_select_scatter("select_and_scatter", operand, window_dimensions, window_strides, padding)
    if init_value.shape or init_value.dtype != operand.dtype or source.dtype != operand.dtype:
        raise TypeError(
            "select_and_scatter expects a scalar init_value and a source of the "
            f"operand's dtype, got operand {operand.str_short()}, source "
            f"{source.str_short()} and init_value {init_value.str_short()}."
        )
    return [ShapedArray(operand.shape, operand.dtype)]


select_and_scatter_p = standard_primitive("select_and_scatter", _select_and_scatter_abstract_eval)


def _select_and_scatter(
    operand, select, window_dimensions, window_strides, padding, source, init_value, scatter
):
    """XLA's SelectAndScatter: in each window of ``operand`` the element that ``select``
    (a comparison, ``(a, b) -> bool``) prefers receives, combined by ``scatter``, the
    window's ``source`` element; the others get ``init_value``. (Not public in JAX either.)"""
    aval = get_aval(init_value)
    tree = pytree.tree_structure(0)
    select_jaxpr, _ = reduction_jaxpr(select, [aval], tree, "select of select_and_scatter")
    scatter_jaxpr, _ = reduction_jaxpr(scatter, [aval], tree, "scatter of select_and_scatter")
    return select_and_scatter_p.bind(
        operand,
        source,
        init_value,
        select_jaxpr=select_jaxpr,
        scatter_jaxpr=scatter_jaxpr,
        window_dimensions=tuple(window_dimensions),
        window_strides=tuple(window_strides),
        padding=tuple(padding),
    )


# --------------------------------------------------------------------------- jvp rules

ad.defjvp_linear(reduce_window_sum_p)


def _chooser_jvp(select_prim):
    def tangent(g, operand, **params):
        return select_and_gather_add_p.bind(
            ad.instantiate(g), operand, select_prim=select_prim, **params
        )

    return tangent


ad.defjvp(reduce_window_max_p, _chooser_jvp(ge_p))
ad.defjvp(reduce_window_min_p, _chooser_jvp(le_p))


def _linear_in_first(prim):
    """Rule for an op linear in its first operand and piecewise constant in the second."""

    def rule(primals, tangents, **params):
        out = prim.bind(*primals, **params)
        if type(tangents[0]) is ad.Zero:
            return [out], [ad.Zero(ad.tangent_aval(get_aval(out)))]
        return [out], [prim.bind(tangents[0], primals[1], **params)]

    ad.jvp_rules[prim] = rule


_linear_in_first(select_and_gather_add_p)
_linear_in_first(select_and_scatter_add_p)


def _select_and_scatter_jvp(primals, tangents, **params):
    raise NotImplementedError(
        "Differentiation rule for 'select_and_scatter' not "
        "implemented (as in JAX): differentiate "
        "select_and_scatter_add, or reduce_window, instead."
    )


ad.jvp_rules[select_and_scatter_p] = _select_and_scatter_jvp

# reduce_window (generic): the reducer differentiated, applied to (primal, tangent) pairs, as
# in JAX. Integer and boolean operands (an argmax's indices) carry no tangent at all, so they
# can ride along with differentiated ones (where JAX fails).
_jvp_reducers = weakref.WeakKeyDictionary()  # reducer jaxpr -> {mask: jvp reducer}


def _jvp_reducer(jaxpr, mask):
    """The reducer on (primals, tangents of the ``mask``ed ones) pairs, left then right."""
    cache = _jvp_reducers.setdefault(jaxpr.jaxpr, {})
    hit = cache.get(mask)
    if hit is not None:
        return hit
    avals = jaxpr.out_avals
    n, k = len(avals), sum(mask)
    tangent_avals = [ad.tangent_aval(a) for a, m in zip(avals, mask, strict=True) if m]

    def tangents_of(ts):
        it = iter(ts)
        return [
            next(it) if m else ad.Zero(ad.tangent_aval(a)) for a, m in zip(avals, mask, strict=True)
        ]

    def reducer(*args):
        pl, tl = list(args[:n]), list(args[n : n + k])
        pr, tr = list(args[n + k : 2 * n + k]), list(args[2 * n + k :])
        outs, touts = ad.jvp_flat(
            lambda *a: eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, *a),
            pl + pr,
            tangents_of(tl) + tangents_of(tr),
        )
        return outs + [ad.instantiate(t) for t, m in zip(touts, mask, strict=True) if m]

    in_avals = (list(avals) + tangent_avals) * 2
    hit = cache[mask] = trace_to_jaxpr(reducer, in_avals, "differentiating reduce_window")
    return hit


def _reduce_window_jvp(primals, tangents, *, jaxpr, **params):
    n = len(primals) // 2
    operands, inits = primals[:n], primals[n:]
    if any(type(t) is not ad.Zero for t in tangents[n:]):
        raise TypeError("reduce_window jvp does not support non-zero init_value_tangent.")
    if all(type(t) is ad.Zero for t in tangents[:n]):
        outs = reduce_window_p.bind(*primals, jaxpr=jaxpr, **params)
        return outs, [ad.Zero(ad.tangent_aval(get_aval(o))) for o in outs]
    mask = tuple(ad.is_differentiable(get_aval(x)) for x in operands)
    op_tangents = [ad.instantiate(t) for t, m in zip(tangents[:n], mask, strict=True) if m]
    init_tangents = [
        ad.instantiate(ad.Zero(ad.tangent_aval(get_aval(i))))
        for i, m in zip(inits, mask, strict=True)
        if m
    ]
    outs = reduce_window_p.bind(
        *operands, *op_tangents, *inits, *init_tangents, jaxpr=_jvp_reducer(jaxpr, mask), **params
    )
    touts = iter(outs[n:])
    return outs[:n], [
        next(touts) if m else ad.Zero(ad.tangent_aval(get_aval(o)))
        for o, m in zip(outs[:n], mask, strict=True)
    ]


ad.jvp_rules[reduce_window_p] = _reduce_window_jvp


# --------------------------------------------------------------------------- transpose rules


def _lhs_vjp_padding(
    in_shape, window_dimensions, window_strides, out_shape, padding, base_dilation, window_dilation
):
    """The padding that turns a windowed reduction's transpose into a windowed reduction
    (the one of a convolution's input gradient)."""
    in_dilated = _dilate_shape(in_shape, base_dilation)
    window = _dilate_shape(window_dimensions, window_dilation)
    out_dilated = _dilate_shape(out_shape, window_strides)
    before = [w - lo - 1 for w, (lo, _) in zip(window, padding, strict=True)]
    after = [
        i + w - 1 - o - b
        for i, w, o, b in zip(in_dilated, window, out_dilated, before, strict=True)
    ]
    return list(zip(before, after, strict=True))


def _reduce_window_sum_transpose(
    ct, operand, *, window_dimensions, window_strides, padding, base_dilation, window_dilation
):
    aval = operand.aval
    if type(ct) is ad.Zero:
        return [ad.Zero(aval)]
    ct_shape = get_aval(ct).shape
    pads = _lhs_vjp_padding(
        aval.shape,
        window_dimensions,
        window_strides,
        ct_shape,
        padding,
        base_dilation,
        window_dilation,
    )
    config = [(lo, hi, s - 1) for (lo, hi), s in zip(pads, window_strides, strict=True)]
    padded = pad(ct, np.zeros((), get_aval(ct).dtype), config)
    ones = (1,) * aval.ndim
    out = reduce_window_sum_p.bind(
        padded,
        window_dimensions=window_dimensions,
        window_strides=base_dilation,
        padding=((0, 0),) * aval.ndim,
        base_dilation=ones,
        window_dilation=window_dilation,
    )
    return [out]


def _select_and_scatter_add_transpose(
    ct, source, operand, *, select_prim, window_dimensions, window_strides, padding
):
    if type(ct) is ad.Zero:
        return [ad.Zero(source.aval), None]
    ones = (1,) * len(window_dimensions)
    return [
        _select_and_gather_add(
            ct, operand, select_prim, window_dimensions, window_strides, padding, ones, ones
        ),
        None,
    ]


def _select_and_gather_add_transpose(
    ct,
    tangents,
    operand,
    *,
    select_prim,
    window_dimensions,
    window_strides,
    padding,
    base_dilation,
    window_dilation,
):
    if any(d != 1 for d in window_dilation):
        raise NotImplementedError(
            "VJP not implemented for select_and_gather (MaxPool) with "
            f"window dilation, got window_dilation={window_dilation}."
        )
    if type(ct) is ad.Zero:
        return [ad.Zero(tangents.aval), None]
    dilated = any(d != 1 for d in base_dilation)
    if dilated:
        monoid = "max" if select_prim is ge_p else "min"
        dtype = get_aval(operand).dtype
        operand = pad(operand, identity(monoid, dtype), [(0, 0, d - 1) for d in base_dilation])
    out = _select_and_scatter_add(
        ct, operand, select_prim, window_dimensions, window_strides, padding
    )
    if dilated:
        shape = get_aval(out).shape
        out = slice_(out, (0,) * len(shape), shape, base_dilation)
    return [out, None]


transpose.transpose_rules[reduce_window_sum_p] = _reduce_window_sum_transpose
transpose.transpose_rules[select_and_scatter_add_p] = _select_and_scatter_add_transpose
transpose.transpose_rules[select_and_gather_add_p] = _select_and_gather_add_transpose


# --------------------------------------------------------------------------- batching rules
# The batch dimension becomes a window dimension of size 1 (stride 1, no padding or dilation).


def _with_unit_dim(params, d):
    out = dict(params)
    for name, unit in (
        ("window_dimensions", 1),
        ("window_strides", 1),
        ("padding", (0, 0)),
        ("base_dilation", 1),
        ("window_dilation", 1),
    ):
        if name in out:
            out[name] = out[name][:d] + (unit,) + out[name][d:]
    return out


def _monoid_batch(prim):
    def rule(axis, args, dims, **params):
        (x,), (d,) = args, dims
        return [prim.bind(x, **_with_unit_dim(params, d))], [d]

    batching.batch_rules[prim] = rule


for _prim in WINDOW_MONOIDS:
    _monoid_batch(_prim)


def _front_batch(prim, num_windowed):
    """Rule for an op whose first ``num_windowed`` operands are windowed together (the rest,
    scalar init values, must be unmapped): those go batch-first, as JAX's rules do."""

    def rule(axis, args, dims, **params):
        if any(d is not batching.not_mapped for d in dims[num_windowed:]):
            raise NotImplementedError(f"{prim.name} batching is not implemented for initial values")
        front = [
            batching.batch_at_front(x, d, axis.size)
            for x, d in zip(args[:num_windowed], dims[:num_windowed], strict=True)
        ]
        outs = prim.bind(*front, *args[num_windowed:], **_with_unit_dim(params, 0))
        outs = outs if prim.multiple_results else [outs]
        return outs, [0] * len(outs)

    batching.batch_rules[prim] = rule


_front_batch(select_and_gather_add_p, 2)
_front_batch(select_and_scatter_add_p, 2)
_front_batch(select_and_scatter_p, 2)


def _reduce_window_batch_rule(axis, args, dims, **params):
    n = len(args) // 2
    if any(d is not batching.not_mapped for d in dims[n:]):
        raise NotImplementedError("reduce_window batching is not implemented for initial values")
    front = [
        batching.batch_at_front(x, d, axis.size) for x, d in zip(args[:n], dims[:n], strict=True)
    ]
    outs = reduce_window_p.bind(*front, *args[n:], **_with_unit_dim(params, 0))
    return outs, [0] * n


batching.batch_rules[reduce_window_p] = _reduce_window_batch_rule

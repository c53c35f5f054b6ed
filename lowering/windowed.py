"""Lowering of the windowed reductions: ``stablehlo.reduce_window`` and
``stablehlo.select_and_scatter``, as JAX emits them on CPU.

``reduce_window_sum``/``max``/``min`` reduce with the monoid's combiner and identity (the
combiners of ``lowering/reductions.py``); the generic ``reduce_window`` and
``select_and_scatter`` get their regions from their traced jaxprs. ``select_and_gather_add``
is a variadic reduce_window over (operand, tangent) pairs keeping the pair whose operand the
comparison prefers. ``select_and_scatter_add`` pads its operand with the comparison's identity
and scatters into the padded array, then takes the padding off (JAX's CPU and GPU rule:
XLA's select_and_scatter with padding has crashed there).
"""

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo as hlo

from lowering.mlir import aval_to_ir, constant, lowering_rules
from lowering.reductions import (
    COMBINERS,
    build_jaxpr_region,
    build_region,
    compare,
    compare_type,
    scalar_type,
)
from xform import dtypes
from xform.primitives import reductions as red
from xform.primitives import windowed as win
from xform.primitives.comparisons import ge_p


def _i64s(xs):
    return ir.DenseI64ArrayAttr.get(list(xs))


def _padding_attr(padding):
    return ir.DenseIntElementsAttr.get(np.asarray(padding, np.int64).reshape(len(padding), 2))


def _reduce_window_op(
    out_avals,
    operands,
    inits,
    window_dimensions,
    window_strides,
    padding,
    base_dilation,
    window_dilation,
):
    return hlo.ReduceWindowOp(
        [aval_to_ir(a) for a in out_avals],
        list(operands),
        list(inits),
        _i64s(window_dimensions),
        window_strides=_i64s(window_strides),
        base_dilations=_i64s(base_dilation),
        window_dilations=_i64s(window_dilation),
        padding=_padding_attr(padding),
    )


# --------------------------------------------------------------------------- reduce_window


def _reduce_window_lower(ctx, *args, jaxpr, **params):
    n = len(args) // 2
    op = _reduce_window_op(ctx.avals_out, args[:n], args[n:], **params)
    arg_dtypes = [a.dtype for a in ctx.avals_in[n:]]
    build_jaxpr_region(ctx, op.regions[0], jaxpr, arg_dtypes + arg_dtypes)
    return list(op.results)


lowering_rules[win.reduce_window_p] = _reduce_window_lower


def _monoid_rule(monoid):
    combine = COMBINERS[monoid]

    def rule(ctx, x, **params):
        dtype = ctx.avals_in[0].dtype
        init = constant(red.identity(monoid, dtype), dtype)
        op = _reduce_window_op(ctx.avals_out, [x], [init], **params)
        build_region(op, [dtype, dtype], lambda a, b: [combine(a, b, dtype)])
        return [op.result]

    return rule


for _prim, _monoid in win.WINDOW_MONOIDS.items():
    lowering_rules[_prim] = _monoid_rule(_monoid)


# --------------------------------------------------------------------------- select_and_*


def build_region_at(region, arg_dtypes, body):
    """``build_region`` for an op with several named regions (select_and_scatter)."""
    block = region.blocks.append(*[scalar_type(d) for d in arg_dtypes])
    with ir.InsertionPoint(block):
        hlo.return_(body(*block.arguments))


def _direction(select_prim):
    return "GE" if select_prim is ge_p else "LE"


def _select_and_gather_add_lower(ctx, tangents, operand, *, select_prim, **params):
    dtype = ctx.avals_in[1].dtype
    t_dtype = ctx.avals_in[0].dtype
    monoid = "max" if select_prim is ge_p else "min"
    inits = [constant(red.identity(monoid, dtype), dtype), constant(0, t_dtype)]
    out_aval = ctx.avals_out[0]
    op = _reduce_window_op(
        [out_aval.update(dtype=dtype), out_aval], [operand, tangents], inits, **params
    )
    direction, ctype = _direction(select_prim), compare_type(dtype)

    def body(kx, vx, ky, vy):
        which = compare(kx, ky, direction, ctype)
        return [hlo.select(which, kx, ky), hlo.select(which, vx, vy)]

    build_region(op, [dtype, t_dtype, dtype, t_dtype], body)
    return [op.results[1]]


lowering_rules[win.select_and_gather_add_p] = _select_and_gather_add_lower


def _select_and_scatter_add_lower(
    ctx, source, operand, *, select_prim, window_dimensions, window_strides, padding
):
    aval = ctx.avals_in[1]
    dtype = aval.dtype
    monoid = "max" if select_prim is ge_p else "min"
    lows, highs = [lo for lo, _ in padding], [hi for _, hi in padding]
    padded_shape = tuple(d + lo + hi for d, (lo, hi) in zip(aval.shape, padding, strict=True))
    padded_type = aval_to_ir(aval.update(shape=padded_shape))
    padded = hlo.pad(
        operand,
        constant(red.identity(monoid, dtype), dtype),
        _i64s(lows),
        _i64s(highs),
        _i64s([0] * aval.ndim),
        results=[padded_type],
    )
    op = hlo.SelectAndScatterOp(
        padded_type,
        padded,
        source,
        constant(0, dtype),
        window_dimensions=_i64s(window_dimensions),
        window_strides=_i64s(window_strides),
        padding=_padding_attr([(0, 0)] * aval.ndim),
    )
    direction, ctype = _direction(select_prim), compare_type(dtype)
    build_region_at(op.select, [dtype, dtype], lambda a, b: [compare(a, b, direction, ctype)])
    scatter = hlo.or_ if dtype == dtypes.bool_ else hlo.add
    build_region_at(op.scatter, [dtype, dtype], lambda a, b: [scatter(a, b)])
    # Padding with the negated amounts takes the padding off (and gives the elements that a
    # negative padding cut off a zero cotangent).
    return [
        hlo.pad(
            op.result,
            constant(0, dtype),
            _i64s([-lo for lo in lows]),
            _i64s([-hi for hi in highs]),
            _i64s([0] * aval.ndim),
            results=[aval_to_ir(ctx.avals_out[0])],
        )
    ]


lowering_rules[win.select_and_scatter_add_p] = _select_and_scatter_add_lower


def _select_and_scatter_lower(
    ctx,
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
    dtype = ctx.avals_in[0].dtype
    op = hlo.SelectAndScatterOp(
        aval_to_ir(ctx.avals_out[0]),
        operand,
        source,
        init_value,
        window_dimensions=_i64s(window_dimensions),
        window_strides=_i64s(window_strides),
        padding=_padding_attr(padding),
    )
    build_jaxpr_region(ctx, op.select, select_jaxpr, [dtype, dtype])
    build_jaxpr_region(ctx, op.scatter, scatter_jaxpr, [dtype, dtype])
    return [op.result]


lowering_rules[win.select_and_scatter_p] = _select_and_scatter_lower

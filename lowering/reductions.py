"""Lowering of the reductions family: ``stablehlo.reduce`` and ``stablehlo.reduce_window``
with a combiner region, as JAX emits them on CPU. The generic ``reduce`` gets its region from
the reducer's jaxpr (``build_jaxpr_region``, shared with the windowed family)."""

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo as hlo

from lowering import mlir
from lowering.mlir import aval_to_ir, constant, dtype_to_ir, lower_jaxpr, lowering_rules
from xform import dtypes
from xform.primitives import reductions as red


def scalar_type(dtype):
    return ir.RankedTensorType.get([], dtype_to_ir(dtype))


def compare_type(dtype):
    """The ``compare_type`` JAX gives a comparison of ``dtype`` values."""
    if dtypes.is_inexact(dtype):
        return "FLOAT"
    return "SIGNED" if dtypes.is_signed_int(dtype) else "UNSIGNED"  # bool compares unsigned


def compare(x, y, direction, ctype):
    return hlo.compare(
        x,
        y,
        hlo.ComparisonDirectionAttr.get(direction),
        compare_type=hlo.ComparisonTypeAttr.get(ctype),
    )


def build_region(op, arg_dtypes, body):
    """Give ``op`` (a reduce, reduce_window or sort) its region: a block whose arguments are
    scalars of ``arg_dtypes`` and which returns ``body(*arguments)`` (a list of values)."""
    block = op.regions[0].blocks.append(*[scalar_type(d) for d in arg_dtypes])
    with ir.InsertionPoint(block):
        hlo.return_(body(*block.arguments))


def build_jaxpr_region(ctx, region, closed, arg_dtypes):
    """Give ``region`` one block with scalar arguments of ``arg_dtypes`` that computes the
    ClosedJaxpr ``closed`` on them (its constants emitted inside the region)."""
    block = region.blocks.append(*[scalar_type(d) for d in arg_dtypes])
    with ir.InsertionPoint(block):
        jaxpr = closed.jaxpr
        consts = [
            constant(c, v.aval.dtype) for v, c in zip(jaxpr.constvars, closed.consts, strict=True)
        ]
        hlo.return_(lower_jaxpr(ctx.module, jaxpr, consts, list(block.arguments)))


# --------------------------------------------------------------------------- combiners


def _complex_select(direction):
    # stablehlo.maximum/minimum do not order complex numbers: compare lexicographically,
    # real part first, as JAX does.
    def combine(a, b, dtype):
        re_a, re_b = hlo.real(a), hlo.real(b)
        eq = compare(re_a, re_b, "EQ", "FLOAT")
        re_cmp = compare(re_a, re_b, direction, "FLOAT")
        im_cmp = compare(hlo.imag(a), hlo.imag(b), direction, "FLOAT")
        return hlo.select(hlo.select(eq, im_cmp, re_cmp), a, b)

    return combine


def _logaddexp(a, b, dtype):
    # max(a, b) + log1p(exp(-|a - b|)); a + b where a - b is NaN (both infinite, or a NaN).
    amax = hlo.maximum(a, b)
    delta = hlo.subtract(a, b)
    isnan = compare(delta, delta, "NE", "FLOAT")
    stable = hlo.add(amax, hlo.log_plus_one(hlo.exponential(hlo.negate(hlo.abs(delta)))))
    return hlo.select(isnan, hlo.add(a, b), stable)


def _elementwise(op, complex_op=None):
    def combine(a, b, dtype):
        if complex_op is not None and dtypes.is_complex(dtype):
            return complex_op(a, b, dtype)
        return op(a, b)

    return combine


# monoid name (see xform.primitives.reductions.MONOIDS) -> combine(a, b, dtype)
COMBINERS = {
    "add": _elementwise(hlo.add),
    "mul": _elementwise(hlo.multiply),
    "max": _elementwise(hlo.maximum, _complex_select("GT")),
    "min": _elementwise(hlo.minimum, _complex_select("LT")),
    "and": _elementwise(hlo.and_),
    "or": _elementwise(hlo.or_),
    "xor": _elementwise(hlo.xor),
    "logaddexp": _logaddexp,
}

# The init of a reduce_window computing logaddexp: its identity, -inf.
_INIT_MONOID = {"logaddexp": "max"}


def _init_value(monoid, dtype):
    return constant(red.identity(_INIT_MONOID.get(monoid, monoid), dtype), dtype)


# --------------------------------------------------------------------------- reduce_<op>


def _reduce_rule(monoid):
    combine = COMBINERS[monoid]

    def rule(ctx, x, *, axes):
        dtype = ctx.avals_in[0].dtype
        op = hlo.ReduceOp(
            [aval_to_ir(ctx.avals_out[0])],
            [x],
            [_init_value(monoid, dtype)],
            ir.DenseI64ArrayAttr.get(list(axes)),
        )
        build_region(op, [dtype, dtype], lambda a, b: [combine(a, b, dtype)])
        return [op.result]

    return rule


for _prim, _monoid in red.REDUCTION_MONOIDS.items():
    lowering_rules[_prim] = _reduce_rule(_monoid)


# --------------------------------------------------------------------------- argmax, argmin


def _argminmax_rule(direction, monoid):
    # A variadic reduce over (value, index) pairs. The operand side wins when its value is
    # strictly better or NaN; on equal values the smaller index wins.
    def rule(ctx, x, *, axes, index_dtype):
        aval = ctx.avals_in[0]
        dtype, ctype = aval.dtype, compare_type(aval.dtype)
        iota = mlir.iota(aval.update(dtype=index_dtype), axes[0])
        out_values = aval_to_ir(ctx.avals_out[0].update(dtype=dtype))
        op = hlo.ReduceOp(
            [out_values, aval_to_ir(ctx.avals_out[0])],
            [x, iota],
            [_init_value(monoid, dtype), constant(0, index_dtype)],
            ir.DenseI64ArrayAttr.get(list(axes)),
        )

        def body(x_val, x_idx, acc_val, acc_idx):
            pick_x = hlo.or_(
                compare(x_val, acc_val, direction, ctype), compare(x_val, x_val, "NE", ctype)
            )
            tie = hlo.and_(
                compare(x_val, acc_val, "EQ", ctype),
                compare(x_idx, acc_idx, "LT", compare_type(index_dtype)),
            )
            pick_x_idx = hlo.or_(pick_x, tie)
            return [hlo.select(pick_x, x_val, acc_val), hlo.select(pick_x_idx, x_idx, acc_idx)]

        build_region(op, [dtype, index_dtype, dtype, index_dtype], body)
        return [op.results[1]]

    return rule


lowering_rules[red.argmax_p] = _argminmax_rule("GT", "max")
lowering_rules[red.argmin_p] = _argminmax_rule("LT", "min")


# --------------------------------------------------------------------------- cumulative


def _cumulative_rule(monoid):
    combine = COMBINERS[monoid]

    def rule(ctx, x, *, axis, reverse):
        aval = ctx.avals_in[0]
        n = aval.shape[axis]
        if n == 0:
            return [x]
        # Output i reduces a window of n elements ending (or, reversed, starting) at i,
        # padded with the identity: O(n^2) work, but what XLA's CPU backend does best.
        window = [1] * aval.ndim
        window[axis] = n
        padding = np.zeros((aval.ndim, 2), np.int64)
        padding[axis] = (0, n - 1) if reverse else (n - 1, 0)
        ones = [1] * aval.ndim
        op = hlo.ReduceWindowOp(
            [aval_to_ir(ctx.avals_out[0])],
            [x],
            [_init_value(monoid, aval.dtype)],
            ir.DenseI64ArrayAttr.get(window),
            window_strides=ir.DenseI64ArrayAttr.get(ones),
            base_dilations=ir.DenseI64ArrayAttr.get(ones),
            window_dilations=ir.DenseI64ArrayAttr.get(ones),
            padding=ir.DenseIntElementsAttr.get(padding),
        )
        build_region(op, [aval.dtype, aval.dtype], lambda a, b: [combine(a, b, aval.dtype)])
        return [op.result]

    return rule


for _prim, _monoid in red.CUMULATIVE_MONOIDS.items():
    lowering_rules[_prim] = _cumulative_rule(_monoid)


# --------------------------------------------------------------------------- reduce (generic)


def _reduce_lower(ctx, *args, jaxpr, dimensions):
    n = len(args) // 2
    op = hlo.ReduceOp(
        [aval_to_ir(a) for a in ctx.avals_out],
        list(args[:n]),
        list(args[n:]),
        ir.DenseI64ArrayAttr.get(list(dimensions)),
    )
    dtypes_ = [a.dtype for a in ctx.avals_in[n:]]
    build_jaxpr_region(ctx, op.regions[0], jaxpr, dtypes_ + dtypes_)
    return list(op.results)


lowering_rules[red.reduce_p] = _reduce_lower

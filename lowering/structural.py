"""Lowering of the structural family: the StableHLO ops JAX emits for each primitive."""

from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo as hlo

from lowering import mlir
from lowering.mlir import aval_to_ir, lowering_rules
from xform.primitives import structural as st


def _i64_array(values):
    return ir.DenseI64ArrayAttr.get([int(v) for v in values])


def _broadcast_in_dim_lower(ctx, x, *, shape, broadcast_dimensions, sharding=None):
    if mlir.is_dynamic(shape):  # a symbolic dimension (export)
        return [
            mlir.broadcast_dynamic(aval_to_ir(ctx.avals_out[0]), x, shape, broadcast_dimensions)
        ]
    return [hlo.broadcast_in_dim(aval_to_ir(ctx.avals_out[0]), x, _i64_array(broadcast_dimensions))]


def _reshape_lower(ctx, x, **params):
    # Also squeeze's rule: the output type says everything.
    shape = ctx.avals_out[0].shape
    if mlir.is_dynamic(shape):  # a symbolic dimension (export)
        return [
            hlo.dynamic_reshape(aval_to_ir(ctx.avals_out[0]), x, mlir.symbolic_shape_tensor(shape))
        ]
    return [hlo.reshape(aval_to_ir(ctx.avals_out[0]), x)]


def _transpose_lower(ctx, x, *, permutation):
    return [hlo.transpose(x, _i64_array(permutation), results=[aval_to_ir(ctx.avals_out[0])])]


def _rev_lower(ctx, x, *, dimensions):
    return [hlo.reverse(x, _i64_array(dimensions), results=[aval_to_ir(ctx.avals_out[0])])]


def _pad_lower(ctx, x, padding_value, *, padding_config):
    lo, hi, interior = zip(*padding_config, strict=True) if padding_config else ((), (), ())
    return [
        hlo.pad(
            x,
            padding_value,
            _i64_array(lo),
            _i64_array(hi),
            _i64_array(interior),
            results=[aval_to_ir(ctx.avals_out[0])],
        )
    ]


# Wide concatenations are slow for XLA to compile; JAX joins at most this many per op.
_CONCAT_FANIN = 16


def _concatenate_lower(ctx, *xs, dimension):
    dim = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), dimension)
    xs = list(xs)
    while len(xs) > 1:
        xs = [
            hlo.concatenate(xs[i : i + _CONCAT_FANIN], dim)
            for i in range(0, len(xs), _CONCAT_FANIN)
        ]
    return xs


def _iota_lower(ctx, *, dtype, shape, dimension):
    return [mlir.iota(ctx.avals_out[0], dimension)]


def _tile_lower(ctx, x, *, reps):
    # As JAX: reshape to (1, d0, 1, d1, ...), broadcast to (r0, d0, r1, d1, ...), merge pairs.
    aval = ctx.avals_in[0]
    pairs = aval.update(shape=tuple(n for d in aval.shape for n in (1, d)))
    x = hlo.reshape(aval_to_ir(pairs), x)
    tiled = aval.update(shape=tuple(n for pair in zip(reps, aval.shape, strict=True) for n in pair))
    x = hlo.broadcast_in_dim(aval_to_ir(tiled), x, _i64_array(range(2 * aval.ndim)))
    return [hlo.reshape(aval_to_ir(ctx.avals_out[0]), x)]


def _slices_along(x, aval, axis, sizes):
    """The consecutive slices of ``x`` (of type ``aval``) of the given sizes along ``axis``."""
    start, limit = [0] * aval.ndim, list(aval.shape)
    outs = []
    for n in sizes:
        limit[axis] = start[axis] + n
        outs.append(hlo.slice(x, _i64_array(start), _i64_array(limit), _i64_array([1] * aval.ndim)))
        start[axis] = limit[axis]
    return outs


def _split_lower(ctx, x, *, sizes, axis):
    return _slices_along(x, ctx.avals_in[0], axis, sizes)


def _stack_lower(ctx, *xs, axis):
    aval = ctx.avals_in[0]
    one = aval.update(shape=aval.shape[:axis] + (1,) + aval.shape[axis:])
    dims = [i for i in range(aval.ndim + 1) if i != axis]
    expanded = [hlo.broadcast_in_dim(aval_to_ir(one), x, _i64_array(dims)) for x in xs]
    return _concatenate_lower(ctx, *expanded, dimension=axis)


def _unstack_lower(ctx, x, *, axis):
    aval = ctx.avals_in[0]
    return [
        hlo.reshape(aval_to_ir(out), piece)
        for out, piece in zip(
            ctx.avals_out, _slices_along(x, aval, axis, [1] * aval.shape[axis]), strict=True
        )
    ]


lowering_rules[st.tile_p] = _tile_lower
lowering_rules[st.split_p] = _split_lower
lowering_rules[st.stack_p] = _stack_lower
lowering_rules[st.unstack_p] = _unstack_lower
lowering_rules[st.broadcast_in_dim_p] = _broadcast_in_dim_lower
lowering_rules[st.reshape_p] = _reshape_lower
lowering_rules[st.squeeze_p] = _reshape_lower
lowering_rules[st.transpose_p] = _transpose_lower
lowering_rules[st.rev_p] = _rev_lower
lowering_rules[st.pad_p] = _pad_lower
lowering_rules[st.concatenate_p] = _concatenate_lower
lowering_rules[st.iota_p] = _iota_lower

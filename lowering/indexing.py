"""Lowering of the indexing family: slices, dynamic slices and updates, gather, scatter.

The ops are the ones JAX emits: ``stablehlo.slice``, ``dynamic_slice``,
``dynamic_update_slice``, ``gather`` (plus a bounds mask and a ``select`` in
``FILL_OR_DROP`` mode) and ``scatter`` with a region computing the combiner (its indices
clamped first in ``CLIP`` mode).
"""

from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo as hlo

from lowering import mlir
from lowering.elementwise import compare
from lowering.mlir import aval_to_ir, constant, dtype_to_ir, full_like_aval, lowering_rules
from xform import dtypes
from xform.core import ShapedArray
from xform.primitives import gather_scatter as gs
from xform.primitives import indexing as ix
from xform.primitives.gather_scatter import GatherScatterMode


def _i64s(values):
    return ir.DenseI64ArrayAttr.get([int(v) for v in values])


def _slice_lower(ctx, x, *, start_indices, limit_indices, strides):
    strides = strides or (1,) * len(start_indices)
    if mlir.is_dynamic(limit_indices):  # a whole symbolic dimension kept (export)
        tensor = mlir.symbolic_shape_tensor
        return [
            hlo.real_dynamic_slice(
                aval_to_ir(ctx.avals_out[0]),
                x,
                tensor(start_indices),
                tensor(limit_indices),
                tensor(strides),
            )
        ]
    return [hlo.slice(x, _i64s(start_indices), _i64s(limit_indices), _i64s(strides))]


def _dynamic_slice_lower(ctx, x, *indices, slice_sizes):
    return [hlo.dynamic_slice(x, list(indices), _i64s(slice_sizes))]


def _dynamic_update_slice_lower(ctx, x, update, *indices):
    return [hlo.dynamic_update_slice(x, update, list(indices))]


lowering_rules[ix.slice_p] = _slice_lower
lowering_rules[ix.dynamic_slice_p] = _dynamic_slice_lower
lowering_rules[ix.dynamic_update_slice_p] = _dynamic_update_slice_lower


# --------------------------------------------------------------------------- gather


def _broadcast(x, aval_out, dims):
    return hlo.broadcast_in_dim(aval_to_ir(aval_out), x, _i64s(dims))


def _reduce_and(x, aval_in, dim):
    """``x`` (bool) reduced with ``and`` over ``dim``."""
    out_aval = ShapedArray(tuple(s for i, s in enumerate(aval_in.shape) if i != dim), dtypes.bool_)
    scalar = ir.RankedTensorType.get([], dtype_to_ir(dtypes.bool_))
    op = hlo.ReduceOp([aval_to_ir(out_aval)], [x], [constant(True)], _i64s([dim]))
    block = op.regions[0].blocks.append(scalar, scalar)
    with ir.InsertionPoint(block):
        hlo.return_([hlo.and_(*block.arguments)])
    return op.result


def _gather_op(operand, indices, indices_aval, dn, *, slice_sizes, indices_are_sorted):
    dnums = hlo.GatherDimensionNumbers.get(
        offset_dims=list(dn.offset_dims),
        collapsed_slice_dims=list(dn.collapsed_slice_dims),
        operand_batching_dims=list(dn.operand_batching_dims),
        start_indices_batching_dims=list(dn.start_indices_batching_dims),
        start_index_map=list(dn.start_index_map),
        index_vector_dim=indices_aval.ndim - 1,
    )
    return hlo.gather(
        operand,
        indices,
        dnums,
        _i64s(slice_sizes),
        indices_are_sorted=ir.BoolAttr.get(indices_are_sorted),
    )


def _gather_lower(
    ctx,
    operand,
    indices,
    *,
    dimension_numbers,
    slice_sizes,
    indices_are_sorted,
    unique_indices,
    mode,
    fill_value,
):
    operand_aval, indices_aval = ctx.avals_in
    aval_out = ctx.avals_out[0]
    dn = dimension_numbers
    if aval_out.size == 0:
        return [full_like_aval(0, aval_out)]
    if mode != GatherScatterMode.FILL_OR_DROP:
        # CLIP and PROMISE_IN_BOUNDS: XLA's gather clamps every window into bounds.
        return [
            _gather_op(
                operand,
                indices,
                indices_aval,
                dn,
                slice_sizes=slice_sizes,
                indices_are_sorted=indices_are_sorted,
            )
        ]
    # FILL_OR_DROP, as JAX lowers it: an in-bounds mask per index vector, then a select.
    index_dtype = gs._index_dtype(operand_aval.shape)
    if indices_aval.dtype != index_dtype:
        indices_aval = indices_aval.update(dtype=index_dtype)
        indices = hlo.convert(aval_to_ir(indices_aval), indices)
    nb = indices_aval.ndim - 1
    upper = [operand_aval.shape[d] - slice_sizes[d] for d in dn.start_index_map]
    bool_aval = indices_aval.update(dtype=dtypes.bool_)
    lo_ok = compare(indices, full_like_aval(0, indices_aval), "GE", index_dtype)
    hi_ok = compare(
        indices, _broadcast(constant(upper, index_dtype), indices_aval, [nb]), "LE", index_dtype
    )
    mask = _reduce_and(hlo.and_(lo_ok, hi_ok), bool_aval, nb)
    out = _gather_op(
        operand,
        indices,
        indices_aval,
        dn,
        slice_sizes=slice_sizes,
        indices_are_sorted=indices_are_sorted,
    )
    batch_dims = [i for i in range(aval_out.ndim) if i not in dn.offset_dims]
    mask = _broadcast(mask, aval_out.update(dtype=dtypes.bool_), batch_dims)
    return [hlo.select(mask, out, full_like_aval(fill_value, aval_out))]


lowering_rules[gs.gather_p] = _gather_lower


# --------------------------------------------------------------------------- scatter


def _clamp_scatter_indices(operand_aval, indices, indices_aval, updates_aval, dn):
    """Clamp each index vector so its window fits in the operand (``CLIP`` mode)."""
    window = gs._scatter_window(operand_aval, updates_aval, dn)
    top = dtypes.iinfo(indices_aval.dtype).max
    upper = [min(operand_aval.shape[d] - window[d], top) for d in dn.scatter_dims_to_operand_dims]
    upper = _broadcast(constant(upper, indices_aval.dtype), indices_aval, [indices_aval.ndim - 1])
    return hlo.clamp(full_like_aval(0, indices_aval), indices, upper)


def _scatter_lower(combiner):
    """The rule for a scatter whose region applies ``combiner`` (None: take the update)."""

    def rule(
        ctx,
        operand,
        indices,
        updates,
        *,
        dimension_numbers,
        indices_are_sorted,
        unique_indices,
        mode,
    ):
        operand_aval, indices_aval, updates_aval = ctx.avals_in
        dn = dimension_numbers
        if mode == GatherScatterMode.CLIP:
            indices = _clamp_scatter_indices(operand_aval, indices, indices_aval, updates_aval, dn)
        dnums = hlo.ScatterDimensionNumbers.get(
            update_window_dims=list(dn.update_window_dims),
            inserted_window_dims=list(dn.inserted_window_dims),
            input_batching_dims=list(dn.operand_batching_dims),
            scatter_indices_batching_dims=list(dn.scatter_indices_batching_dims),
            scattered_dims_to_operand_dims=list(dn.scatter_dims_to_operand_dims),
            index_vector_dim=indices_aval.ndim - 1,
        )
        op = hlo.ScatterOp(
            [aval_to_ir(ctx.avals_out[0])],
            [operand],
            indices,
            [updates],
            dnums,
            indices_are_sorted=ir.BoolAttr.get(indices_are_sorted),
            unique_indices=ir.BoolAttr.get(unique_indices),
        )
        scalar = ir.RankedTensorType.get([], dtype_to_ir(operand_aval.dtype))
        block = op.update_computation.blocks.append(scalar, scalar)
        with ir.InsertionPoint(block):
            old, new = block.arguments
            hlo.return_([new if combiner is None else combiner(old, new)])
        return [op.result]

    return rule


lowering_rules[gs.scatter_p] = _scatter_lower(None)
lowering_rules[gs.scatter_add_p] = _scatter_lower(hlo.add)
lowering_rules[gs.scatter_mul_p] = _scatter_lower(hlo.multiply)
lowering_rules[gs.scatter_min_p] = _scatter_lower(hlo.minimum)
lowering_rules[gs.scatter_max_p] = _scatter_lower(hlo.maximum)
lowering_rules[gs.scatter_sub_p] = _scatter_lower(hlo.subtract)

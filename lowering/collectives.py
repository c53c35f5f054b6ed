"""Lowering of the collectives to StableHLO cross-replica ops.

A pmap program runs as ``num_replicas`` replicas. The pmap axes being lowered (the module
context's ``axis_env``, outermost first) split the replica id the way nested loops would:
axis ``k`` of size ``s_k`` has stride ``num_replicas / (s_0 * ... * s_k)``, and replica ``r``
sits at index ``(r // stride_k) % s_k`` along it. A collective over some of the axes works
within groups of replicas that agree on every other index (and on what lies below the
innermost stride, replicas a smaller pmap inside a bigger jit leaves over).
"""

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo as hlo

from lowering import runtime
from lowering.linalg import lower_composition
from lowering.mlir import aval_to_ir, constant, dtype_to_ir, full_like_aval, lowering_rules
from lowering.reductions import COMBINERS, scalar_type
from xform import dtypes
from xform.primitives import collectives as coll


def _strides(mctx):
    """``{name: (stride, size)}`` for the pmap axes around the current point."""
    out, span = {}, mctx.num_replicas
    for name, size in mctx.axis_env:
        if span % size:
            raise NotImplementedError(
                f"pmap axes {mctx.axis_env} do not divide the {mctx.num_replicas} replicas of "
                "this program: nest or sequence pmaps whose sizes divide each other"
            )
        span //= size
        out[name] = (span, size)
    return out


def _coordinate(r, stride, size):
    return (r // stride) % size


def replica_groups(mctx, axes):
    """The replica groups of a collective over ``axes``, each ordered by the index along
    them (row-major, in the order the axes are named)."""
    strides = _strides(mctx)
    for name in axes:
        if name not in strides:
            raise NameError(
                f"unbound axis name: {name!r}: no pmap around this collective binds "
                f"it (pmap axes here: {[n for n, _ in mctx.axis_env]})"
            )
    others = [strides[n] for n in strides if n not in axes]
    groups = {}
    for r in range(mctx.num_replicas):
        key = tuple(_coordinate(r, *s) for s in others) + (
            r % min([s for s, _ in strides.values()], default=mctx.num_replicas),
        )
        index = tuple(_coordinate(r, *strides[n]) for n in axes)
        groups.setdefault(key, []).append((index, r))
    return [[r for _, r in sorted(g)] for g in groups.values()]


def groups_attr(groups):
    array = np.asarray(groups, np.int64)
    return ir.DenseIntElementsAttr.get(array, type=ir.IntegerType.get_signless(64))


def in_partitions(op, mctx, global_ids=True):
    """Inside a shard_map (lowering/shard_map.py: a partitioned program) a collective
    addresses devices by their position in the mesh, over a channel, as JAX lowers it."""
    if mctx is not None and mctx.spmd:
        op.attributes["channel_handle"] = ir.Attribute.parse(
            "#stablehlo.channel_handle<handle = 1, type = 1>"
        )
        if global_ids:
            op.attributes["use_global_device_ids"] = ir.UnitAttr.get()
    return op


def _all_reduce(x, aval, groups, monoid, mctx=None):
    op = in_partitions(hlo.AllReduceOp([aval_to_ir(aval)], [x], groups_attr(groups)), mctx)
    combine = COMBINERS[monoid]
    block = op.regions[0].blocks.append(scalar_type(aval.dtype), scalar_type(aval.dtype))
    with ir.InsertionPoint(block):
        hlo.return_([combine(*block.arguments, aval.dtype)])
    return op.results[0]


def _reducing(monoid, bool_monoid=None):
    def rule(ctx, x, *, axes):
        aval = ctx.avals_out[0]
        m = bool_monoid if aval.dtype == dtypes.bool_ and bool_monoid else monoid
        return [_all_reduce(x, aval, replica_groups(ctx.module, axes), m, ctx.module)]

    return rule


lowering_rules[coll.psum_p] = _reducing("add")
lowering_rules[coll.pmax_p] = _reducing("max", "or")
lowering_rules[coll.pmin_p] = _reducing("min", "and")


def _with_unit_dim(x, aval, d):
    shape = aval.shape[:d] + (1,) + aval.shape[d:]
    return hlo.reshape(ir.RankedTensorType.get(shape, dtype_to_ir(aval.dtype)), x)


def _all_gather(ctx, x, *, axes, axis_size, all_gather_dimension, tiled):
    (aval,), (out,) = ctx.avals_in, ctx.avals_out
    if not tiled:
        x = _with_unit_dim(x, aval, all_gather_dimension)
    op = hlo.AllGatherOp(
        [aval_to_ir(out)], [x], all_gather_dimension, groups_attr(replica_groups(ctx.module, axes))
    )
    return [in_partitions(op, ctx.module).results[0]]


lowering_rules[coll.all_gather_p] = _all_gather


def _psum_scatter(ctx, x, *, axes, axis_size, scatter_dimension, tiled):
    (aval,), (out,) = ctx.avals_in, ctx.avals_out
    d = scatter_dimension
    shape = list(aval.shape)
    shape[d] //= axis_size
    typ = ir.RankedTensorType.get(shape, dtype_to_ir(aval.dtype))
    op = in_partitions(
        hlo.ReduceScatterOp(typ, x, d, groups_attr(replica_groups(ctx.module, axes))), ctx.module
    )
    block = op.regions[0].blocks.append(scalar_type(aval.dtype), scalar_type(aval.dtype))
    with ir.InsertionPoint(block):
        hlo.return_([COMBINERS["add"](*block.arguments, aval.dtype)])
    result = op.results[0]
    return [result if tiled else hlo.reshape(aval_to_ir(out), result)]


lowering_rules[coll.psum_scatter_p] = _psum_scatter


def _ppermute(ctx, x, *, axes, perm):
    pairs = []
    for group in replica_groups(ctx.module, axes):
        pairs.extend([group[s], group[d]] for s, d in perm)
    attr = ir.DenseIntElementsAttr.get(
        np.asarray(pairs, np.int64).reshape(-1, 2), type=ir.IntegerType.get_signless(64)
    )
    return [in_partitions(hlo.CollectivePermuteOp(x, attr), ctx.module, False).result]


lowering_rules[coll.ppermute_p] = _ppermute


def _all_to_all(ctx, x, *, axes, axis_size, split_axis, concat_axis, tiled):
    (aval,), (out,) = ctx.avals_in, ctx.avals_out
    groups = groups_attr(replica_groups(ctx.module, axes))
    if tiled:
        op = hlo.AllToAllOp(
            [x], split_axis, concat_axis, axis_size, groups, results=[aval_to_ir(out)]
        )
        return [in_partitions(op, ctx.module, False).results[0]]
    # The chunk from device j lands at index j of the split axis; that axis then moves to
    # where the result wants the new one.
    op = in_partitions(
        hlo.AllToAllOp([x], split_axis, split_axis, axis_size, groups, results=[aval_to_ir(aval)]),
        ctx.module,
        False,
    )
    perm = [d for d in range(aval.ndim) if d != split_axis]
    perm.insert(concat_axis, split_axis)
    return [hlo.transpose(op.results[0], ir.DenseI64ArrayAttr.get(perm))]


lowering_rules[coll.all_to_all_p] = _all_to_all


def axis_index(mctx, axes):
    """This replica's index along ``axes`` (row-major), an int32 scalar value."""
    strides = _strides(mctx)
    # in a shard_map's region (lowering/shard_map.py) the devices are partitions
    device = hlo.PartitionIdOp() if mctx.spmd else hlo.ReplicaIdOp()
    rid = hlo.convert(scalar_type(np.dtype(np.int32)), device.result)
    index = None
    for name in axes:
        if name not in strides:
            raise NameError(
                f"unbound axis name: {name!r} (pmap axes here: {[n for n, _ in mctx.axis_env]})"
            )
        stride, size = strides[name]
        i = hlo.remainder(hlo.divide(rid, constant(stride, np.int32)), constant(size, np.int32))
        index = i if index is None else hlo.add(hlo.multiply(index, constant(size, np.int32)), i)
    return index


def _axis_index(ctx, *, axes, sizes):
    return [axis_index(ctx.module, axes)]


lowering_rules[coll.axis_index_p] = _axis_index


def _pbroadcast(ctx, x, *, axes, source):
    # The source's value, zeros elsewhere, summed over each group: JAX's definition, and an
    # all-reduce XLA:CPU runs (it has no collective-broadcast).
    (aval,) = ctx.avals_in
    is_source = hlo.compare(
        axis_index(ctx.module, axes),
        constant(source, np.int32),
        hlo.ComparisonDirectionAttr.get("EQ"),
    )
    pred = hlo.broadcast_in_dim(
        ir.RankedTensorType.get(aval.shape, dtype_to_ir(dtypes.bool_)),
        is_source,
        ir.DenseI64ArrayAttr.get([]),
    )
    masked = hlo.select(pred, x, full_like_aval(0, aval))
    monoid = "or" if aval.dtype == dtypes.bool_ else "add"
    return [_all_reduce(masked, aval, replica_groups(ctx.module, axes), monoid, ctx.module)]


lowering_rules[coll.pbroadcast_p] = _pbroadcast
lowering_rules[coll.pvary_p] = lambda ctx, x, *, axes: [x]  # only a type change in JAX


def _ragged_all_to_all(ctx, *args, axes):
    groups = replica_groups(ctx.module, axes)
    if runtime.platform() == "gpu":  # as JAX lowers it: XLA's op (not in XLA:CPU)
        op = hlo.CustomCallOp.build_generic(
            results=[aval_to_ir(ctx.avals_out[0])],
            operands=list(args),
            attributes={
                "call_target_name": ir.StringAttr.get("ragged_all_to_all"),
                "api_version": ir.IntegerAttr.get(ir.IntegerType.get_signless(32), 4),
                "backend_config": ir.DictAttr.get({"replica_groups": groups_attr(groups)}),
            },
        )
        return list(op.results)
    # On CPU: every device's operand and offsets gathered, each receiver takes its slices.
    n = len(groups[0])
    sizes = tuple(dict(ctx.module.axis_env)[name] for name in axes)

    def exchange(operand, output, input_offsets, send_sizes, output_offsets, recv_sizes):
        def everyone(x):
            return coll.all_gather_p.bind(
                x, axes=axes, axis_size=n, all_gather_dimension=0, tiled=False
            )

        me = coll.axis_index_p.bind(axes=axes, sizes=sizes)
        return [
            coll.ragged_receive(
                me,
                output,
                everyone(operand),
                everyone(input_offsets),
                everyone(send_sizes),
                everyone(output_offsets),
            )
        ]

    return lower_composition(ctx, exchange, ctx.avals_in, args, "lowering ragged_all_to_all")


lowering_rules[coll.ragged_all_to_all_p] = _ragged_all_to_all

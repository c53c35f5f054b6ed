"""Lowering of ``pmap``: the SPMD module of a top-level pmap call, and a pmap inside a jit
or inside another pmap.

Replicas rather than partitions: a pmap body is already the per-device program, so XLA need
not partition anything; every replica runs the same module on its own slice, and collectives
name their replica groups explicitly. Nested pmaps multiply the replica count.

A top-level call feeds each replica its own slice (main takes the slice with the mapped
axis kept at size 1, as the shards of the sharded input arrays have it) and leaves each
result on its device. A pmap met inside a bigger program gets whole (replicated) operands:
each replica takes its slice with a dynamic_slice at its index along the new axis, and the
results are put back together with an all_gather.
"""

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import func
from jaxlib.mlir.dialects import stablehlo as hlo

from lowering import mlir
from lowering.collectives import axis_index, groups_attr, replica_groups
from lowering.mlir import aval_to_ir, constant, lower_jaxpr, lowering_rules
from xform.core import ShapedArray
from xform.primitives.pmap import pmap_p, unmapped_aval


def _shard_aval(aval, axis):
    """A per-device value as its shard of the whole array: the mapped axis kept, of size 1."""
    if axis is None:
        return aval
    return ShapedArray(aval.shape[:axis] + (1,) + aval.shape[axis:], aval.dtype)


def lower_pmap_module(
    jaxpr, name, axis_name, axis_size, in_axes, out_axes, num_replicas, donated=None
):
    """The module run by each of ``num_replicas`` replicas of a top-level pmap: its main maps
    one shard per mapped operand (whole unmapped ones) to one shard per mapped result."""
    in_avals = [_shard_aval(a, ax) for a, ax in zip(jaxpr.in_avals, in_axes, strict=True)]
    out_avals = [_shard_aval(a, ax) for a, ax in zip(jaxpr.out_avals, out_axes, strict=True)]

    def emit_main(mctx):
        with ir.InsertionPoint(mctx.module.body):
            fn = func.FuncOp(
                "main",
                ir.FunctionType.get(
                    [aval_to_ir(a) for a in in_avals], [aval_to_ir(a) for a in out_avals]
                ),
            )
        fn.attributes["sym_visibility"] = ir.StringAttr.get("public")
        block = fn.add_entry_block()
        with ir.InsertionPoint(block):
            args = [
                hlo.reshape(aval_to_ir(a), x)
                for a, x in zip(jaxpr.in_avals, block.arguments, strict=True)
            ]
            outs = lower_jaxpr(mctx, jaxpr.jaxpr, [], args)
            func.ReturnOp(
                [hlo.reshape(aval_to_ir(a), x) for a, x in zip(out_avals, outs, strict=True)]
            )
        return fn

    return mlir.build_module(
        f"pmap_{mlir.sanitize(name)}",
        num_replicas,
        emit_main,
        (in_avals, out_avals, donated),
        ((axis_name, axis_size),),
        scope=f"pmap({name})",
    )


def _pmap_lower(ctx, *args, jaxpr, name, axis_name, axis_size, in_axes, out_axes, devices, donated):
    mctx = ctx.module
    outer = mctx.axis_env
    mctx.axis_env = outer + ((axis_name, axis_size),)
    try:
        index = axis_index(mctx, (axis_name,))
        zero = constant(0, np.int32)
        per_device = []
        for x, aval, ax in zip(args, ctx.avals_in, in_axes, strict=True):
            if ax is None:
                per_device.append(x)
                continue
            starts = [index if d == ax else zero for d in range(aval.ndim)]
            sizes = [1 if d == ax else n for d, n in enumerate(aval.shape)]
            piece = hlo.dynamic_slice(x, starts, ir.DenseI64ArrayAttr.get(sizes))
            per_device.append(hlo.reshape(aval_to_ir(unmapped_aval(aval, ax)), piece))
        outs = lower_jaxpr(mctx, jaxpr.jaxpr, [], per_device)
        groups = groups_attr(replica_groups(mctx, (axis_name,)))
        results = []
        for x, aval, ax in zip(outs, ctx.avals_out, out_axes, strict=True):
            if ax is None:
                results.append(x)
                continue
            shard = hlo.reshape(aval_to_ir(_shard_aval(unmapped_aval(aval, ax), ax)), x)
            results.append(hlo.AllGatherOp([aval_to_ir(aval)], [shard], ax, groups).results[0])
        return results
    finally:
        mctx.axis_env = outer


lowering_rules[pmap_p] = _pmap_lower

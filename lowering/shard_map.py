"""Lowering of ``shard_map``: an ``sdy.manual_computation`` in a partitioned program.

As JAX 0.10.2 lowers it: the region takes each device's blocks, its collectives address
devices by their position in the mesh (``use_global_device_ids``, with a channel), and its
``axis_index`` reads ``stablehlo.partition_id``. The module context's replica model
(lowering/collectives.py) describes the mesh while the region is emitted: one "replica" per
device, the mesh axes as the axis environment, outermost first.
"""

from jaxlib.mlir import ir
from jaxlib.mlir.dialects import sdy

from lowering.mlir import aval_to_ir, lower_jaxpr, lowering_rules
from lowering.sharding import spec_text
from xform.primitives.shard_map import shard_map_p


def _per_value(specs, avals, open_dims):
    texts = [
        spec_text(s, a.ndim, open_dims=open_dims).removeprefix("#sdy.sharding")
        for s, a in zip(specs, avals, strict=True)
    ]
    return ir.Attribute.parse(f"#sdy.sharding_per_value<[{', '.join(texts)}]>")


def _shard_map_lower(ctx, *args, jaxpr, mesh, in_specs, out_specs, manual_axes, check_vma):
    mctx = ctx.module
    if mctx.mesh is None:
        raise NotImplementedError(
            "shard_map must be compiled in a partitioned program: "
            "call it outside jit, or give the jit its mesh"
        )
    if mctx.mesh != mesh:
        raise ValueError(
            f"shard_map over mesh {dict(mesh.shape)} inside a jit partitioned "
            f"over mesh {dict(mctx.mesh.shape)}; use one mesh"
        )
    names = ", ".join(f'"{n}"' for n in mesh.axis_names if n in manual_axes)
    # As JAX: over some of the mesh axes, the others are left open to the partitioner.
    partial = any(n not in manual_axes for n in mesh.axis_names)
    op = sdy.ManualComputationOp(
        [aval_to_ir(a) for a in ctx.avals_out],
        list(args),
        _per_value(in_specs, ctx.avals_in, partial),
        _per_value(out_specs, ctx.avals_out, partial),
        ir.Attribute.parse(f"#sdy<manual_axes{{{names}}}>"),
    )
    block = op.body.blocks.append(*[aval_to_ir(a) for a in jaxpr.in_avals])
    saved = mctx.num_replicas, mctx.axis_env, mctx.spmd
    mctx.num_replicas = mesh.size
    mctx.axis_env = tuple((n, mesh.shape[n]) for n in mesh.axis_names)
    mctx.spmd = True  # collectives address partitions (lowering/collectives.py)
    try:
        with ir.InsertionPoint(block):
            outs = lower_jaxpr(mctx, jaxpr.jaxpr, [], list(block.arguments))
            sdy.ReturnOp(outs)
    finally:
        mctx.num_replicas, mctx.axis_env, mctx.spmd = saved
    return list(op.results)


lowering_rules[shard_map_p] = _shard_map_lower

"""One process of a two-process sharded run, started by ``tests/test_sharding.py``.

    python -m tests.sharding_worker PROCESS_ID PORT OUT_DIR

Joins XLA's distributed runtime as ``tests/multiprocess_worker.py`` does (4 CPU devices per
process, gloo collectives), then over a mesh of all 8 devices: builds the global batch from
this process's rows (``make_array_from_process_local_data``), runs one data-parallel SGD step
with a sharded ``jit`` and a ``shard_map`` psum, and writes what its own devices hold as
``.npy`` files in OUT_DIR.
"""

import os
import sys

import numpy as np

from tests.multiprocess_worker import mlp_loss, start


def main():
    process_id, port, out_dir = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    start(process_id, port)
    import xform  # noqa: PLC0415  (after jax.distributed.initialize)
    import xform.numpy as xnp  # noqa: PLC0415
    from xform.sharding import NamedSharding  # noqa: PLC0415
    from xform.sharding import PartitionSpec as P  # noqa: PLC0415

    inputs = np.load(os.path.join(out_dir, "inputs.npz"))
    mesh = xform.make_mesh((8,), ("batch",))
    rows = inputs["x"].shape[0] // 2
    local = slice(process_id * rows, (process_id + 1) * rows)
    split = NamedSharding(mesh, P("batch"))
    x = xform.make_array_from_process_local_data(split, inputs["x"][local])
    y = xform.make_array_from_process_local_data(split, inputs["y"][local])
    replicated = NamedSharding(mesh, P())
    # laid out first: on an Explicit mesh a host array's type has no sharding, and the
    # weight gradients' contraction over the split batch would be ambiguous (JAX's error)
    params = tuple(xform.device_put(inputs[f"param{k}"], replicated) for k in range(4))

    def step(params, x, y):
        loss, grads = xform.value_and_grad(lambda p: mlp_loss(p, x, y, xnp))(params)
        return tuple(p - 0.1 * g for p, g in zip(params, grads, strict=True)), loss

    new, loss = xform.jit(
        step, in_shardings=(replicated, split, split), out_shardings=(replicated, replicated)
    )(params, x, y)
    for k, p in enumerate(new):
        np.save(
            os.path.join(out_dir, f"param{k}_{process_id}.npy"), np.asarray(p.addressable_data(0))
        )
    np.save(os.path.join(out_dir, f"loss_{process_id}.npy"), np.asarray(loss.addressable_data(0)))
    total = xform.shard_map(
        lambda a: xform.lax.psum(a, "batch"), mesh=mesh, in_specs=P("batch"), out_specs=P("batch")
    )(x)
    np.save(
        os.path.join(out_dir, f"psum_{process_id}.npy"),
        np.stack([np.asarray(s.data) for s in total.addressable_shards]),
    )

    from xform.experimental import multihost_utils  # noqa: PLC0415

    multihost_utils.sync_global_devices("after the step")
    mine = np.array([process_id, 10 + process_id], np.int32)
    np.save(
        os.path.join(out_dir, f"allgather_{process_id}.npy"),
        multihost_utils.process_allgather(mine),
    )
    np.save(
        os.path.join(out_dir, f"tiled_{process_id}.npy"),
        multihost_utils.process_allgather(mine, tiled=True),
    )
    np.save(
        os.path.join(out_dir, f"broadcast_{process_id}.npy"),
        multihost_utils.broadcast_one_to_all(np.arange(3, dtype=np.float32) + process_id),
    )
    multihost_utils.assert_equal(np.arange(4), "the same on both")
    rows = inputs["x"][local]
    glob = multihost_utils.host_local_array_to_global_array(rows, mesh, P("batch"))
    back = multihost_utils.global_array_to_host_local_array(glob, mesh, P("batch"))
    np.save(
        os.path.join(out_dir, f"roundtrip_{process_id}.npy"),
        np.concatenate(
            [
                np.asarray(s.data)
                for s in sorted(back.addressable_shards, key=lambda s: s.index[0].start or 0)
            ]
        ),
    )
    np.save(
        os.path.join(out_dir, f"global_{process_id}.npy"),
        multihost_utils.process_allgather(glob, tiled=True),
    )


if __name__ == "__main__":
    main()

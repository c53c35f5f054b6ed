"""``xform.experimental.multihost_utils``: moving host data between the processes of a
multi-process run (``xform.distributed``), as JAX's module does.

Each is a small partitioned program over a mesh of every device, one row of it per process
(``processes`` x ``local_devices``): a process's data enters as its row of a global array,
and a jit with a replicated output gathers or sums the rows. In one process they are NumPy
operations.
"""

import zlib

import numpy as np

from xform import pytree
from xform.api.jit import devices, jit, local_devices, process_count, process_index
from xform.api.sharding import (
    broadcast_prefix,
    make_array_from_process_local_data,
    make_array_from_single_device_arrays,
)
from xform.runtime.array import ShardedArray
from xform.sharding import Mesh, NamedSharding, PartitionSpec

__all__ = [
    "assert_equal",
    "broadcast_one_to_all",
    "global_array_to_host_local_array",
    "host_local_array_to_global_array",
    "process_allgather",
    "reached_preemption_sync_point",
    "sync_global_devices",
]


def _process_mesh():
    grid = np.array(devices()).reshape(process_count(), len(local_devices()))
    return Mesh(grid, ("processes", "local_devices"))


def _rows(x, mesh):
    """The global array whose row ``k`` (along a new leading axis) is process ``k``'s ``x``."""
    row = np.expand_dims(np.asarray(x), 0)
    return make_array_from_process_local_data(NamedSharding(mesh, PartitionSpec("processes")), row)


def _sum_rows(x):
    return x.sum(0, dtype=x.dtype)


def _same(x):
    return x


def broadcast_one_to_all(in_tree, is_source=None):
    """Process 0's values of ``in_tree`` (a pytree of arrays of the same shapes on every
    process), or those of the process whose ``is_source`` is True, on every process, as
    NumPy arrays."""
    if process_count() == 1:
        return pytree.tree_map(np.asarray, in_tree)
    is_source = process_index() == 0 if is_source is None else is_source
    mesh = _process_mesh()
    replicated = NamedSharding(mesh, PartitionSpec())

    def broadcast(x):
        x = np.asarray(x)
        rows = _rows(x if is_source else np.zeros_like(x), mesh)
        out = jit(_sum_rows, out_shardings=replicated)(rows)
        return np.asarray(out.addressable_data(0))

    return pytree.tree_map(broadcast, in_tree)


def process_allgather(in_tree, tiled=False):
    """Every process's values of ``in_tree`` (a pytree of arrays), as NumPy arrays
    stacked along a new leading axis in process order (``tiled``: concatenated; scalars
    are stacked). A global array that is not fully addressable comes back whole
    (``tiled=True`` only)."""

    def gather(x):
        if isinstance(x, ShardedArray) and not x.is_fully_addressable:
            if not tiled:
                raise ValueError(
                    "Gathering global non-fully-addressable arrays only supports tiled=True"
                )
            whole = NamedSharding(x.sharding.mesh, PartitionSpec())
            return np.asarray(jit(_same, out_shardings=whole)(x).addressable_data(0))
        host = np.asarray(x)
        if process_count() == 1:
            return host if tiled else np.expand_dims(host, 0)
        mesh = _process_mesh()
        rows = _rows(host, mesh)
        out = jit(_same, out_shardings=NamedSharding(mesh, PartitionSpec()))(rows)
        out = np.asarray(out.addressable_data(0))
        return out.reshape((-1, *host.shape[1:])) if tiled and host.ndim else out

    return pytree.tree_map(gather, in_tree)


def assert_equal(in_tree, fail_message=""):
    """Check that every process holds the same values of ``in_tree``
    (``AssertionError`` with ``fail_message`` if not)."""
    gathered = process_allgather(in_tree)
    same = pytree.tree_map(
        lambda x, g: bool(np.all(np.asarray(g) == np.asarray(x))), in_tree, gathered
    )
    if not all(pytree.tree_leaves(same)):
        raise AssertionError(f"{fail_message}. Expected: {gathered}; got: {in_tree}.")


def sync_global_devices(name):
    """A barrier across every process (all of them must call it with the same ``name``)."""
    assert_equal(
        np.uint32(zlib.crc32(name.encode())), f"sync_global_devices name mismatch ('{name}')"
    )


def host_local_array_to_global_array(local_inputs, global_mesh, pspecs):
    """Global arrays over ``global_mesh`` laid out as ``pspecs`` (a pytree prefix of
    ``local_inputs``) from each process's local part (``local_inputs``)."""
    return _per_leaf(
        local_inputs,
        pspecs,
        lambda x, spec: make_array_from_process_local_data(
            NamedSharding(global_mesh, spec), np.asarray(x)
        ),
    )


def global_array_to_host_local_array(global_inputs, global_mesh, pspecs):
    """Each global array's part on this process's devices, as an array over them laid out
    as ``pspecs`` (the inverse of ``host_local_array_to_global_array``)."""
    local_mesh = global_mesh.local_mesh

    def local(x, spec):
        shards = x.addressable_shards
        # along each dimension, this process holds as many blocks as distinct starts
        shape = tuple(
            len({s.index[d].start or 0 for s in shards}) * shards[0].data.shape[d]
            for d in range(x.ndim)
        )
        by_device = {s.device: s.data for s in shards}
        return make_array_from_single_device_arrays(
            shape, NamedSharding(local_mesh, spec), [by_device[d] for d in local_mesh.devices.flat]
        )

    return _per_leaf(global_inputs, pspecs, local)


def _per_leaf(tree, pspecs, fn):
    leaves, structure = pytree.tree_flatten(tree)
    specs = broadcast_prefix(
        pspecs,
        tree,
        "pspecs",
        expected="a PartitionSpec",
        is_leaf=lambda s: s is None or isinstance(s, PartitionSpec),
    )
    if any(s is None for s in specs):
        raise ValueError(
            "`None` is not a valid input to the pspecs argument. Please use "
            "xform.sharding.PartitionSpec() if you wanted to replicate your input."
        )
    return pytree.tree_unflatten(structure, [fn(x, s) for x, s in zip(leaves, specs, strict=True)])


def reached_preemption_sync_point(step_id):
    """JAX's preemption sync point needs its distributed preemption service, which xform's
    distributed runtime does not start: a clear error, not a silent False."""
    raise RuntimeError(
        "reached_preemption_sync_point needs JAX's preemption sync manager, "
        "which xform.distributed does not start (xform lacks it)."
    )

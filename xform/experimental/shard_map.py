"""``xform.experimental.shard_map``: JAX's older spelling of ``xform.shard_map``."""

from xform.api.shard_map import shard_map as _shard_map

__all__ = ["shard_map"]


def shard_map(f, mesh, in_specs, out_specs, check_rep=True, auto=frozenset()):
    """``xform.shard_map`` with JAX's ``jax.experimental.shard_map`` signature: ``check_rep``
    is ``check_vma``; ``auto`` names the mesh axes left to the partitioner."""
    manual = frozenset(n for n in mesh.axis_names if n not in auto) if auto else frozenset()
    return _shard_map(
        f, mesh=mesh, in_specs=in_specs, out_specs=out_specs, axis_names=manual, check_vma=check_rep
    )

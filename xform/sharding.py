"""``xform.sharding``: JAX 0.10.2's ``jax.sharding`` names.

Meshes and shardings are the runtime's own objects (jaxlib's arrays carry them), so they are
JAX's classes; what xform adds is what runs on them: partitioned ``jit``, ``reshard``,
``shard_map`` (xform/api/sharding.py, xform/api/shard_map.py).
"""

from lowering.sharding import (  # noqa: F401
    AbstractDevice,
    AbstractMesh,
    AxisType,
    ManualAxisType,
    Mesh,
    NamedSharding,
    PartitionSpec,
    Sharding,
    SingleDeviceSharding,
    get_abstract_mesh,
    get_mesh,
    make_single_device_sharding,
    set_mesh,
    use_abstract_mesh,
)
from xform.api.sharding import auto_axes, explicit_axes, reshard  # noqa: F401

__all__ = [
    "AbstractDevice",
    "AbstractMesh",
    "AxisType",
    "ManualAxisType",
    "Mesh",
    "auto_axes",
    "explicit_axes",
    "NamedSharding",
    "PartitionSpec",
    "Sharding",
    "SingleDeviceSharding",
    "get_abstract_mesh",
    "get_mesh",
    "make_single_device_sharding",
    "reshard",
    "set_mesh",
    "use_abstract_mesh",
]

"""``xform.experimental.mesh_utils``: arrays of devices shaped for a ``Mesh``, as JAX's.

On CPU (and any platform without a topology of its own) a mesh is the devices in their
order, reshaped; on GPU, sorted by id first. A TPU's devices sit on a physical torus whose
layout only its runtime knows: there the order comes from jaxlib's JAX (the runtime under
xform), as device facts do.
"""

import collections
import math

import numpy as np

from xform.api.jit import devices as _all_devices

__all__ = ["create_device_mesh", "create_hybrid_device_mesh", "device_kind_handler_dict"]

# device_kind -> handler(mesh_shape, devices, *, contiguous_submeshes) giving a mesh or None
# (the default layout): how users teach it a kind of device, as in JAX.
device_kind_handler_dict = {}


def _axis_sizes(mesh_shape):
    try:
        return tuple(int(s) for s in mesh_shape)
    except (TypeError, ValueError):
        return None


def create_device_mesh(
    mesh_shape, devices=None, *, contiguous_submeshes=False, allow_split_physical_axes=False
):
    """The devices (default: all of them) as an array of shape ``mesh_shape``, for
    ``xform.sharding.Mesh``; their number must be the product of ``mesh_shape``.

    Example:
      >>> mesh = xform.sharding.Mesh(create_device_mesh((4, 2)), ("data", "model"))
    """
    devices = list(_all_devices() if devices is None else devices)
    shape = _axis_sizes(mesh_shape)
    if shape is None:
        raise ValueError(
            "`mesh_shape` passed to `create_device_mesh` should be a sequence of "
            f"ints. Got {mesh_shape}"
        )
    if math.prod(shape) != len(devices):
        raise ValueError(
            f"Number of devices {len(devices)} must equal the product of mesh_shape {shape}"
        )
    last = devices[-1]
    handler = device_kind_handler_dict.get(last.device_kind)
    if handler is not None:
        mesh = handler(shape, devices, contiguous_submeshes=contiguous_submeshes)
        if mesh is not None:
            return mesh
    if last.platform == "tpu":  # the torus layout: the runtime's knowledge
        from jax.experimental import mesh_utils as runtime_mesh_utils  # noqa: PLC0415

        return runtime_mesh_utils.create_device_mesh(
            shape,
            devices,
            contiguous_submeshes=contiguous_submeshes,
            allow_split_physical_axes=allow_split_physical_axes,
        )
    if last.platform == "gpu":  # XLA's topology-aware numbering, not the process order
        devices = sorted(devices, key=lambda d: d.id)
    return np.asarray(devices).reshape(shape)


def create_hybrid_device_mesh(
    mesh_shape,
    dcn_mesh_shape,
    devices=None,
    *,
    process_is_granule=False,
    should_sort_granules_by_key=True,
    allow_split_physical_axes=False,
):
    """A mesh of ``mesh_shape`` meshes (one per slice, or per process with
    ``process_is_granule``) laid out as ``dcn_mesh_shape``: shape their product."""
    devices = list(_all_devices() if devices is None else devices)
    attr = "process_index" if process_is_granule else "slice_index"
    if not hasattr(devices[0], attr):
        raise ValueError(
            f"Device {devices[0]} does not have attribute {attr}. See `process_is_granule` option."
        )
    groups = collections.defaultdict(list)
    for d in devices:
        groups[getattr(d, attr)].append(d)
    granules = (
        [groups[k] for k in sorted(groups)]
        if should_sort_granules_by_key
        else list(groups.values())
    )
    if math.prod(dcn_mesh_shape) != len(granules):
        raise ValueError(
            f"Number of slices {len(granules)} must equal the product of "
            f"dcn_mesh_shape {dcn_mesh_shape}"
        )
    meshes = [
        create_device_mesh(mesh_shape, g, allow_split_physical_axes=allow_split_physical_axes)
        for g in granules
    ]
    order = np.arange(len(granules)).reshape(dcn_mesh_shape)
    return np.block(np.vectorize(lambda i: meshes[i], otypes=[object])(order).tolist())

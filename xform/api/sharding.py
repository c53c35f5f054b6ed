"""Sharded arrays: the API edge of ``xform.sharding``.

``device_put`` with shardings (device to device on one mesh, through a compiled identity
program that changes the layout), ``reshard``, ``with_sharding_constraint``,
``auto_axes``/``explicit_axes``, building global arrays from shards (``make_array_from_*``),
and ``jax.debug``'s sharding pictures. Partitioned ``jit`` runs in xform/runtime/partitioned.py.
"""

import functools

import numpy as np

from lowering import runtime
from lowering import sharding as impl
from xform import core, dtypes, pytree
from xform.core import ShapedArray, Tracer
from xform.primitives import sharding_rules  # noqa: F401  (registers the sharding rules)
from xform.primitives.compiler import device_put_traced
from xform.primitives.sharding import (
    reshard_p,
    sharding_constraint_p,
    spec_names,
)
from xform.primitives.sharding import with_sharding_constraint as _constrain
from xform.runtime import dispatch
from xform.runtime.array import Array, CommittedArray, ShardedArray
from xform.runtime.partitioned import (
    as_named,
    broadcast_prefix,
    is_sharding_leaf,
    leaf_buffer,
    put_leaf,
    wrap,
)

__all__ = [
    "auto_axes",
    "device_put",
    "explicit_axes",
    "reshard",
    "make_array_from_callback",
    "make_array_from_single_device_arrays",
    "make_array_from_process_local_data",
    "with_sharding_constraint",
]


def with_sharding_constraint(x, shardings):
    """Constrain the layout of each array of pytree ``x`` to the matching sharding of
    ``shardings`` (a NamedSharding or a PartitionSpec of the current mesh, or a pytree prefix
    of ``x`` of them), as JAX's."""

    def named(s):
        if not isinstance(s, impl.PartitionSpec):
            return s
        mesh = impl.get_mesh()
        if mesh is None or not mesh.shape:
            raise RuntimeError(
                "with_sharding_constraint requires a non-empty mesh in context if you are "
                "passing `PartitionSpec`s to shardings. You can define a context mesh via "
                "`xform.set_mesh(mesh)`. Alternatively, provide `Sharding`s to shardings and "
                "then the mesh context manager is not required."
            )
        return impl.NamedSharding(mesh, s)

    return _constrain(x, pytree.tree_map(named, shardings, is_leaf=is_sharding_leaf))


def device_put(x, device=None):
    """Copy pytree ``x`` to ``device`` or lay it out as a sharding (or a pytree prefix of
    shardings): the arrays of a mesh's devices move device to device."""
    if device is None or runtime.is_device(device):
        per_leaf = None
    else:
        per_leaf = broadcast_prefix(device, x, "device_put's device")
    leaves, tree = pytree.tree_flatten(x)
    outs = []
    for k, leaf in enumerate(leaves):
        target = device if per_leaf is None else per_leaf[k]
        if isinstance(target, impl.PartitionSpec):  # over the mesh of ``set_mesh``, as JAX's
            target = as_named(target, "device_put")
        if target is not None and not (runtime.is_device(target) or runtime.is_sharding(target)):
            raise ValueError(
                "`device_put` only accepts `None`, a `Sharding` or a `Device` "
                f"(e.g. `xform.devices()[0]`); received invalid value: {target!r}"
            )
        if isinstance(leaf, Tracer):
            outs.append(
                device_put_traced(leaf, target)
                if not runtime.is_sharding(target)
                else sharding_constraint_p.bind(leaf, sharding=target, origin="device_put")
                if hasattr(target, "spec")
                else leaf
            )
            continue
        aval = core.get_aval(leaf)
        if target is None and (type(leaf) is ShardedArray or type(leaf) is CommittedArray):
            outs.append(leaf)  # already committed to its devices: stays there, as in JAX
        elif runtime.is_sharding(target):
            outs.append(wrap(put_leaf(leaf, target, aval), aval))
        else:  # to a device: committed there, as in JAX; to none: the default, uncommitted
            buf = dispatch.device_buffer(leaf, aval, target)
            outs.append(
                Array(aval, None, buf) if target is None else CommittedArray(aval, None, buf)
            )
    return pytree.tree_unflatten(tree, outs)


def reshard(xs, out_shardings):
    """Lay out pytree ``xs`` as ``out_shardings`` (NamedShardings or PartitionSpecs of the
    current mesh): a device-to-device copy outside ``jit``, a constraint inside. Their specs
    may name only Explicit axes (a ``ValueError`` otherwise, as JAX's)."""
    shardings = pytree.tree_map(
        lambda s: as_named(s, "reshard"),
        out_shardings,
        is_leaf=lambda s: isinstance(s, impl.PartitionSpec),
    )
    leaves, tree = pytree.tree_flatten(xs)
    per_leaf = broadcast_prefix(shardings, xs, "reshard's out_shardings")
    for s in per_leaf:
        _check_explicit_axes(s, "reshard")
    return pytree.tree_unflatten(
        tree,
        [
            reshard_p.bind(x, sharding=s)
            if isinstance(x, Tracer) and s is not None
            else _resharded(x, s)
            for x, s in zip(leaves, per_leaf, strict=True)
        ],
    )


def _check_explicit_axes(sharding, what):
    spec = getattr(sharding, "spec", None)
    if spec is None:
        return
    mesh = impl.get_abstract_mesh()  # inside auto_axes/explicit_axes: the retyped mesh
    mesh = sharding.mesh if mesh.empty else mesh
    types = dict(zip(mesh.axis_names, mesh.axis_types, strict=True))
    for entry in spec:
        for name in spec_names(entry):
            if types.get(name, impl.AxisType.Explicit) != impl.AxisType.Explicit:
                raise ValueError(
                    f"PartitionSpec passed to {what} cannot contain axis names "
                    f"that are of type Auto or Manual. Got PartitionSpec: {spec} "
                    f"with axis name: {name} of type: {types[name]}. Reshard "
                    "over Explicit axes only (or use with_sharding_constraint "
                    "for Auto ones)."
                )


def _resharded(x, s):
    """Concrete ``x`` laid out as ``s``. Over a mesh with axes that are not Explicit, those
    axes are the partitioner's: as JAX's, each dimension keeps the ones that split it after
    the Explicit axes ``s`` gives it (the shards stay where they can)."""
    kept = _kept_layout(x, s)
    if kept is None:
        return device_put(x, s)
    return wrap(put_leaf(x, kept), core.get_aval(x))


def _kept_layout(x, s):
    """The layout of ``x`` resharded to ``s`` where ``s``'s mesh has non-Explicit axes and
    ``x`` is laid out over its devices; None otherwise (then just ``s``)."""
    buf = x._buf if type(x) is ShardedArray else None
    if s is None or buf is None or not isinstance(buf.sharding, impl.NamedSharding):
        return None
    mesh, src = s.mesh, buf.sharding
    explicit = {
        n
        for n, t in zip(mesh.axis_names, mesh.axis_types, strict=True)
        if t == impl.AxisType.Explicit
    }
    if (
        len(explicit) == len(mesh.axis_names)
        or src.mesh.axis_names != mesh.axis_names
        or src.mesh.devices.shape != mesh.devices.shape
        or (src.mesh.devices != mesh.devices).any()
    ):
        return None
    out = []
    for d in range(x.ndim):
        want, have = _axes_at(s.spec, d), _axes_at(src.spec, d)
        axes, matched = list(want), 0
        for name in have:  # the Explicit ones s asks for, then the others that followed them
            if name in explicit:
                if matched == len(want) or want[matched] != name:
                    break
                matched += 1
            elif matched == len(want):
                axes.append(name)
            else:
                break
        out.append(_entry(axes))
    if out == [_entry(_axes_at(s.spec, d)) for d in range(x.ndim)]:
        return s  # as asked: reported as asked
    while out and out[-1] is None:  # as the partitioner reports a layout it chose
        out.pop()
    return impl.NamedSharding(mesh, impl.PartitionSpec(*out))


def _axes_at(spec, d):
    return spec_names(spec[d]) if d < len(spec) else ()


def _entry(axes):
    return None if not axes else axes[0] if len(axes) == 1 else tuple(axes)


# --------------------------------------------------------------------------- auto/explicit axes


def auto_axes(f=None, /, *, axes=None, out_sharding=None):
    """``f`` run with mesh ``axes`` (all by default) of type Auto: its arguments' types drop
    those axes and the partitioner lays them out inside; its results are resharded to
    ``out_sharding`` (given here or as a keyword of each call), as JAX's ``auto_axes``.

    Example:
      >>> f = auto_axes(lambda x: x.reshape(16, 4), out_sharding=P("x", None))
    """
    if f is None:
        return lambda g: auto_axes(g, axes=axes, out_sharding=out_sharding)

    @functools.wraps(f)
    def wrapped(*args, **kwargs):
        out_s = _sharding_argument(out_sharding, kwargs, "out_sharding")
        retyped = _retyped_mesh(axes, impl.AxisType.Auto, "auto_axes", out_s)
        if retyped is None or retyped[0] == retyped[1]:
            return f(*args, **kwargs)
        old, new = retyped
        with impl.use_abstract_mesh(new.abstract_mesh):
            args = pytree.tree_map(
                lambda x: reshard(x, impl.NamedSharding(new, _explicit_spec(_spec_of(x), new))),
                args,
            )
            out = f(*args, **kwargs)
        return reshard(out, out_s)

    return wrapped


def explicit_axes(f=None, /, *, axes=None, in_sharding=None):
    """``f`` run with mesh ``axes`` (all by default) of type Explicit: its arguments are
    resharded to ``in_sharding`` (given here or as a keyword of each call) and their types
    carry it inside; its results leave with the specs of the outer mesh's Explicit axes, as
    JAX's ``explicit_axes``."""
    if f is None:
        return lambda g: explicit_axes(g, axes=axes, in_sharding=in_sharding)

    @functools.wraps(f)
    def wrapped(*args, **kwargs):
        in_s = _sharding_argument(in_sharding, kwargs, "in_sharding")
        retyped = _retyped_mesh(axes, impl.AxisType.Explicit, "explicit_axes")
        if retyped is None:
            raise ValueError(
                "Context mesh cannot be empty. Please use `jax.set_mesh` API to "
                "enter into a mesh context when using `explicit_axes` API."
            )
        old, new = retyped
        with impl.use_abstract_mesh(new.abstract_mesh):
            given = pytree.tree_map(
                lambda s: impl.NamedSharding(new, s) if isinstance(s, impl.PartitionSpec) else s,
                in_s,
                is_leaf=lambda s: isinstance(s, impl.PartitionSpec),
            )
            args = reshard(args, given)
            out = f(*args, **kwargs)
        return pytree.tree_map(
            lambda o: reshard(o, impl.NamedSharding(old, _explicit_spec(_spec_of(o), old))), out
        )

    return wrapped


def _sharding_argument(given, kwargs, name):
    """``auto_axes``' out_sharding or ``explicit_axes``' in_sharding: the one given when the
    function was wrapped, else the keyword of this call (taken out of ``kwargs``)."""
    if given is not None:
        return given
    if name not in kwargs:
        raise TypeError(f"Missing required keyword argument: '{name}'")
    return kwargs.pop(name)


def _spec_of(x):
    s = core.get_aval(x).sharding
    return impl.PartitionSpec() if s is None else s.spec


def _explicit_spec(spec, mesh):
    """``spec`` naming only ``mesh``'s Explicit axes (the others are the partitioner's)."""
    types = dict(zip(mesh.axis_names, mesh.axis_types, strict=True))

    def keep(entry):
        names = tuple(n for n in spec_names(entry) if types[n] == impl.AxisType.Explicit)
        return None if not names else names[0] if len(names) == 1 else names

    return impl.PartitionSpec(*(keep(e) for e in spec))


def _retyped_mesh(axes, axis_type, name, shardings=None):
    """``(mesh, mesh with axes of type axis_type)`` for ``auto_axes``/``explicit_axes``: the
    current mesh, else that of ``shardings``; None when there is neither."""
    current = impl.get_mesh()
    current = None if current is None or not current.shape else current
    theirs = None
    for s in pytree.tree_leaves(shardings, is_leaf=lambda s: isinstance(s, impl.PartitionSpec)):
        if isinstance(s, impl.NamedSharding):
            if theirs is not None and theirs.abstract_mesh != s.mesh.abstract_mesh:
                raise ValueError(
                    f"Shardings passed to {name} should have the same mesh. Got "
                    f"one mesh {theirs} and another {s.mesh}"
                )
            theirs = s.mesh
    if current is not None and theirs is not None and current.abstract_mesh != theirs.abstract_mesh:
        raise ValueError(
            f"Context mesh {current.abstract_mesh} must match the mesh passed to "
            f"shardings {theirs.abstract_mesh}. Recommended approach is to use "
            "`jax.set_mesh` context manager."
        )
    mesh = current if current is not None else theirs
    if mesh is None:
        return None
    names = mesh.axis_names if axes is None else (axes,) if isinstance(axes, str) else axes
    types = tuple(
        axis_type if n in names else t
        for n, t in zip(mesh.axis_names, mesh.axis_types, strict=True)
    )
    return mesh, impl.Mesh(mesh.devices, mesh.axis_names, axis_types=types)


def _concrete(sharding, x):
    """``sharding`` over a concrete mesh: one over an abstract mesh (a library's, from
    ``get_abstract_mesh``) lays out over the context mesh of ``set_mesh``, or the mesh ``x``
    is laid out over, as JAX's eager constraints do."""
    mesh = getattr(sharding, "mesh", None)
    if not isinstance(mesh, impl.AbstractMesh):
        return sharding
    own = getattr(leaf_buffer(x), "sharding", None)
    for concrete in (impl.get_mesh(), getattr(own, "mesh", None)):
        if (
            isinstance(concrete, impl.Mesh)
            and not concrete.empty
            and concrete.abstract_mesh == mesh
        ):
            return impl.NamedSharding(concrete, sharding.spec, memory_kind=sharding.memory_kind)
    raise ValueError(
        "Target sharding contains a `jax.sharding.AbstractMesh` which requires "
        f"the input passed should be a `jax.Array`. Got {type(x)} with shape "
        f"{core.get_aval(x).str_short(short_dtypes=False)}"
    )


def _lay_out_eagerly(x, *, sharding, **_):
    # A dimension left to the partitioner (P.UNCONSTRAINED) is not split: there is no program
    # around to choose.
    spec = sharding.spec
    if spec.UNCONSTRAINED in tuple(spec):
        sharding = sharding.update(
            spec=type(spec)(*(None if e is spec.UNCONSTRAINED else e for e in spec))
        )
    return [wrap(put_leaf(x, _concrete(sharding, x)), core.get_aval(x))]


core.eager_rules[sharding_constraint_p] = core.eager_rules[reshard_p] = _lay_out_eagerly


# --------------------------------------------------------------------------- building arrays


def make_array_from_callback(shape, sharding, data_callback, dtype=None):
    """A global array of ``shape`` laid out as ``sharding``, each device's shard being
    ``data_callback(index)`` (``index``: a tuple of slices into the global array)."""
    shape = tuple(shape)
    indices = sharding.addressable_devices_indices_map(shape)
    devices = list(indices)
    pieces = [np.asarray(data_callback(indices[d])) for d in devices]
    dtype = np.dtype(dtype or (pieces[0].dtype if pieces else np.float32))
    dtype = dtypes.canonicalize(dtype)
    expected = sharding.shard_shape(shape)
    for d, p in zip(devices, pieces, strict=True):
        if p.shape != expected:
            raise ValueError(
                f"make_array_from_callback: the callback returned a shard of "
                f"shape {p.shape} for device {d.id}, but sharding {sharding} of "
                f"global shape {shape} expects {expected}"
            )
    buf = runtime._jax.batched_device_put(
        runtime._jax_aval(shape, dtype),
        sharding,
        # (not ascontiguousarray: it makes a scalar's shards 1-d)
        [np.asarray(p, dtype, order="C") for p in pieces],
        devices,
        True,
        False,
        enable_x64=True,
    )
    return wrap(buf, ShapedArray(shape, dtype))


def make_array_from_single_device_arrays(shape, sharding, arrays, *, dtype=None):
    """A global array of ``shape`` laid out as ``sharding`` from one array per addressable
    device (each already on its device), without copying them."""
    shape = tuple(shape)
    bufs = []
    for a in arrays:
        buf = leaf_buffer(a)
        if buf is None or len(buf.sharding.device_set) != 1:
            raise ValueError(
                "make_array_from_single_device_arrays: every array must live on "
                f"one device; got {type(a).__name__}"
            )
        bufs.append(buf)
    expected = sharding.shard_shape(shape)
    for b in bufs:
        if tuple(b.shape) != expected:
            raise ValueError(
                f"make_array_from_single_device_arrays: an array of shape "
                f"{tuple(b.shape)} was given for shards of shape {expected} "
                f"(global shape {shape}, sharding {sharding})"
            )
    dtype = np.dtype(dtype or bufs[0].dtype)
    global_buf = runtime.BufferType(
        runtime._jax_aval(shape, dtype), sharding, bufs, committed=True, _skip_checks=False
    )
    return wrap(global_buf, ShapedArray(shape, dtype))


def make_array_from_process_local_data(sharding, local_data, global_shape=None):
    """A global array laid out as ``sharding`` from this process's part of it
    (``local_data``); with one process the local data is the whole array."""
    local = np.asarray(local_data)
    if global_shape is None:
        global_shape = local.shape
        if runtime.process_count() > 1:
            # this process holds a contiguous block along the split dimensions
            n_local = len(sharding.addressable_devices)
            n_all = len(sharding.device_set)
            spec = getattr(sharding, "spec", ())
            dim = next((k for k, e in enumerate(spec) if e is not None), 0)
            global_shape = list(local.shape)
            global_shape[dim] = local.shape[dim] * n_all // n_local
            global_shape = tuple(global_shape)
    global_shape = tuple(global_shape)
    indices = sharding.addressable_devices_indices_map(global_shape)
    starts = [min((ix[k].start or 0) for ix in indices.values()) for k in range(local.ndim)]

    def local_piece(index):
        return local[
            tuple(
                slice((s.start or 0) - st, (s.stop if s.stop is not None else n) - st)
                for s, st, n in zip(index, starts, global_shape, strict=True)
            )
        ]

    return make_array_from_callback(global_shape, sharding, local_piece, local.dtype)


# --------------------------------------------------------------------------- pictures


def _blocks(shape, sharding):
    """``{(row block, column block): [device labels]}`` of a rank-1 or rank-2 array."""
    if len(shape) > 2:
        raise ValueError(
            f"visualize_sharding: only rank-1 and rank-2 arrays can be drawn; "
            f"got shape {tuple(shape)}"
        )
    shape2 = (1, shape[0]) if len(shape) == 1 else tuple(shape) if shape else (1, 1)
    cells = {}
    for device, index in sharding.devices_indices_map(tuple(shape)).items():
        index2 = (
            (slice(None),) + tuple(index)
            if len(shape) == 1
            else tuple(index)
            if shape
            else (slice(None), slice(None))
        )
        key = tuple(
            (s.start or 0, s.stop if s.stop is not None else n)
            for s, n in zip(index2, shape2, strict=True)
        )
        cells.setdefault(key, []).append(device)
    return cells


def visualize_sharding(
    shape, sharding, *, use_color=False, scale=1.0, min_width=9, max_width=80, color_map=None
):
    """Print which devices hold which block of an array of ``shape`` laid out as
    ``sharding``: a grid of blocks, each labelled with its devices and sized as JAX draws it
    (JAX's picture without colours: a block's width and height follow its share of the
    array's, within ``min_width`` and ``max_width`` characters)."""
    cells = _blocks(shape, sharding)
    rows = sorted({k[0] for k in cells})
    cols = sorted({k[1] for k in cells})
    # JAX's sizes: a block's share of ``base_height`` rows and of 2.5 characters a column
    base_height = int(10 * scale)
    across = shape[1] if len(shape) == 2 else 1
    base_width = int(base_height * across / (shape[0] if shape else 1)) * 2.5
    total_cols = shape[-1] if shape else 1
    boxes = {}  # (row, col) -> (label, left, right, top, bottom) padding, as JAX's
    for (row, col), devices in cells.items():
        ids = ",".join(str(d.id) for d in sorted(devices, key=lambda d: d.id))
        label = f"{devices[0].platform.upper()} {ids}"
        width = min(max(int((col[1] - col[0]) / total_cols * base_width), min_width), max_width)
        height = int((row[1] - row[0]) / shape[0] * base_height) if len(shape) == 2 else 1
        left, extra = divmod(width - len(label) - 2, 2)
        top, below = divmod(height - 2, 2)
        boxes[row, col] = (
            label,
            max(left, 0),
            max(left + extra, 0),
            max(top, 0),
            max(top + below, 0),
        )
    widths = [
        max(
            left + len(label) + right
            for (_, c), (label, left, right, _, _) in boxes.items()
            if c == col
        )
        for col in cols
    ]
    out = ["┌" + "┬".join("─" * w for w in widths) + "┐"]
    for i, row in enumerate(rows):
        height = max(b[3] + 1 + b[4] for (r, _), b in boxes.items() if r == row)
        for line in range(height):
            parts = []
            for col, w in zip(cols, widths, strict=True):
                label, left, right, top, _ = boxes.get((row, col), ("", 0, 0, 0, 0))
                if line != top:
                    parts.append(" " * w)
                    continue
                inner = w - left - right
                pad = (inner - len(label)) // 2
                parts.append(" " * (left + pad) + label + " " * (w - left - pad - len(label)))
            out.append("│" + "│".join(parts) + "│")
        out.append(
            "├" + "┼".join("─" * w for w in widths) + "┤"
            if i < len(rows) - 1
            else "└" + "┴".join("─" * w for w in widths) + "┘"
        )
    print("\n".join(out))


def visualize_array_sharding(arr, **kwargs):
    """Print how array ``arr`` is laid out over its devices (see ``visualize_sharding``)."""
    if isinstance(arr, Tracer):
        raise TypeError(
            "visualize_array_sharding: needs a concrete array; inside jit use "
            "xform.debug.inspect_array_sharding"
        )
    return visualize_sharding(arr.shape, arr.sharding, **kwargs)


def inspect_array_sharding(value, *, callback):
    """Call ``callback(sharding)`` with the sharding of each array of pytree ``value``
    (concrete arrays only in xform)."""
    for leaf in pytree.tree_leaves(value):
        if isinstance(leaf, Tracer):
            raise NotImplementedError(
                "inspect_array_sharding: xform reports the sharding of concrete arrays only; "
                "call it outside jit, or read .sharding of the jit's results"
            )
        callback(leaf.sharding)

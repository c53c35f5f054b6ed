"""Sharded arrays and partitioned ``jit``: the API edge of ``xform.sharding``.

A ``jit`` given ``in_shardings``/``out_shardings``, or called with arrays spread over several
devices, runs as one SPMD program over a mesh, partitioned by XLA's Shardy partitioner
(lowering/sharding.py): arguments without a sharding take their own (an array on one device
is replicated), results without one get the sharding the partitioner chose. So does a jit
whose body holds a ``shard_map`` or a sharding constraint, and the eager evaluation of a jit
equation (what ``grad`` and ``vmap`` of a jitted function leave) on sharded arguments.

Also here: ``device_put`` with shardings (device to device on one mesh, through a compiled
identity program that changes the layout), building global arrays from shards
(``make_array_from_*``), the partitioned AOT stages, and ``jax.debug``'s sharding pictures.
"""

import functools
import weakref

import numpy as np

from lowering import runtime
from lowering import sharding as impl
from xform import core, dtypes, pytree, stages
from xform.core import ClosedJaxpr, Jaxpr, JaxprEqn, ShapedArray, Tracer, Var
from xform.interpret.staging import convert_constvars, out_avals_of, trace_to_jaxpr
from xform.primitives import sharding as primitives_sharding
from xform.primitives.call import jit_p
from xform.primitives.compiler import device_put_traced
from xform.primitives.sharding import (
    check_spec_fits,
    reshard_p,
    sharding_constraint_p,
    spec_names,
    type_sharding,
)
from xform.primitives.sharding import with_sharding_constraint as _constrain
from xform.runtime import dispatch
from xform.runtime.array import Array, CommittedArray, ShardedArray
from xform.sharding_rules import with_shardings  # noqa: F401  (installs the rules)

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


def _is_sharding_leaf(s):
    return s is None or runtime.is_sharding(s) or isinstance(s, impl.PartitionSpec)


def as_named(s, what):
    """A sharding: a PartitionSpec is one over the mesh of ``xform.sharding.set_mesh``."""
    if not isinstance(s, impl.PartitionSpec):
        return s
    mesh = impl.get_mesh()
    if mesh is None or not mesh.shape:
        raise ValueError(
            f"{what}: PartitionSpec {s} needs a mesh; use "
            "xform.sharding.set_mesh or pass a NamedSharding"
        )
    return impl.NamedSharding(mesh, s)


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

    return _constrain(x, pytree.tree_map(named, shardings, is_leaf=_is_sharding_leaf))


def check_constrained(shardings, what):
    """``ValueError`` if a sharding of pytree ``shardings`` (jit's ``in_shardings`` or
    ``out_shardings``) leaves a dimension to the partitioner: as JAX's, only
    ``with_sharding_constraint`` takes ``P.UNCONSTRAINED``."""
    for s in pytree.tree_leaves(shardings, is_leaf=_is_sharding_leaf):
        spec = s if isinstance(s, impl.PartitionSpec) else getattr(s, "spec", ())
        if impl.PartitionSpec.UNCONSTRAINED in tuple(spec):
            raise ValueError(
                f"Unconstrained dims are not allowed when passed to {what}: {s}; "
                "name the mesh axes of each dimension (None: not split), or "
                "constrain inside the function with with_sharding_constraint"
            )


def broadcast_prefix(prefix, tree, what, is_leaf=None, expected="a sharding", of="the arguments"):
    """One entry of pytree-prefix ``prefix`` per leaf of ``tree``; its entries are what
    ``is_leaf`` accepts (shardings or None by default, ``expected`` in the error)."""
    is_leaf = is_leaf or _is_sharding_leaf
    if is_leaf(prefix):
        return [prefix] * len(pytree.tree_leaves(tree))
    try:
        groups = pytree.tree_map(
            lambda s, sub: Group(s, len(pytree.tree_leaves(sub))), prefix, tree, is_leaf=is_leaf
        )
    except ValueError as e:
        raise ValueError(f"{what} must be {expected} or a pytree prefix of {of}; {e}") from None
    return [
        s
        for g in pytree.tree_leaves(groups, is_leaf=lambda g: type(g) is Group)
        for s in [g.value] * g.count
    ]


class Group:
    """One entry of a prefix tree and how many leaves of the full tree it covers."""

    __slots__ = ("value", "count")

    def __init__(self, value, count):
        self.value = value
        self.count = count


def wrap(buf, aval):
    """The Array of global device array ``buf``; on a mesh of Explicit axes its type
    carries its sharding (xform/sharding_rules.py)."""
    if len(buf.sharding.device_set) > 1 or isinstance(buf.sharding, impl.NamedSharding):
        return ShardedArray(typed_aval(buf.sharding, aval), None, buf)  # (a mesh of one, maybe)
    return Array(aval, None, buf)


def _leaf_buffer(x):
    if isinstance(x, Array) and not isinstance(x, Tracer):
        return x._buf
    if type(x) is runtime.BufferType:
        return x
    return None


def put_leaf(x, sharding, aval=None):
    """Concrete ``x`` as a global device array laid out as ``sharding``: device to device
    when it is already on the mesh's devices, else through the host."""
    buf = _leaf_buffer(x)
    if buf is not None and buf.sharding == sharding:  # laid out so already: the fast path
        return buf
    aval = aval or core.get_aval(x)
    _check_divisible(sharding, aval, "device_put")
    if buf is not None and buf.dtype == aval.dtype:
        moved = impl.reshard(buf, sharding)
        if moved is not None:  # (laid out so already, over a mesh whose axes have other
            # types: the same shards, relabelled, as ``auto_axes``/``explicit_axes`` need)
            return moved if moved.sharding == sharding else _relabelled(moved, sharding)
    return impl.put(dispatch.host_value(x, aval), sharding)


def _check_divisible(sharding, aval, what):
    spec = getattr(sharding, "spec", None)
    if spec is not None:
        check_spec_fits(what, sharding.mesh, spec, aval)


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


def _relabelled(buf, sharding):
    """Global array ``buf``'s shards as they are, as an array laid out as ``sharding`` (an
    equivalent one, over a mesh whose axes have other types)."""
    shards = [shard.data for shard in buf.addressable_shards]
    return runtime.BufferType(
        runtime._jax_aval(buf.shape, buf.dtype),
        sharding,
        shards,
        committed=True,
        _skip_checks=False,
    )


def _resolve_sharding(sharding, what):
    """``out_sharding=`` of ``what`` as the sharding a type carries, as JAX's
    ``canonicalize_sharding``: over the abstract mesh; a PartitionSpec over the current one."""
    if isinstance(sharding, impl.PartitionSpec):
        mesh = impl.get_abstract_mesh()
        if mesh.empty:
            raise ValueError(
                "Using PartitionSpec when you are not under a mesh context is not "
                "allowed. Please pass a NamedSharding instance or enter into a "
                f"mesh context via `jax.set_mesh`. Got {sharding}"
            )
        return impl.NamedSharding(mesh, sharding)
    if not isinstance(sharding, impl.NamedSharding):
        raise TypeError(
            f"`out_sharding` argument of {what} only supports instances of "
            f"`NamedSharding` or `PartitionSpec`. Got {sharding} of type: "
            f"{type(sharding)}"
        )
    return impl.NamedSharding(sharding.mesh.abstract_mesh, sharding.spec)


def _lay_out(x, sharding):
    """Concrete ``x`` laid out as ``sharding`` (a param's, over an abstract mesh): over the
    current mesh where that is its mesh; else left as it is (no devices to put it on)."""
    mesh = impl.get_mesh()
    if mesh is None or not mesh.shape or mesh.abstract_mesh != sharding.mesh:
        return x
    return device_put(x, impl.NamedSharding(mesh, sharding.spec))


primitives_sharding.resolve_sharding = _resolve_sharding
primitives_sharding.lay_out = _lay_out


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
    own = getattr(_leaf_buffer(x), "sharding", None)
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
        buf = _leaf_buffer(a)
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


# --------------------------------------------------------------------------- partitioned jit


class _Partitioned:
    """The partitioned program of one traced signature and one set of shardings."""

    __slots__ = ("exe", "module", "mesh", "in_shardings", "out_shardings", "out_avals")

    def __init__(
        self,
        jaxpr,
        name,
        mesh,
        in_shardings,
        out_shardings,
        donated,
        result_info,
        consts=(),
        keep_unused=False,
        open_outputs=None,
    ):
        # Constants inlined, and without the arguments nothing reads (JAX's
        # keep_unused=False): their shardings are None, as JAX reports unread ones, and the
        # call passes them no buffer. Sharded constants stay arguments (laid out, not gathered).
        if any(type(c) is ShardedArray for c in consts):
            consts = ()
        lowered, kept, donated = dispatch.lowered_form(jaxpr, donated, consts, keep_unused)
        taken = in_shardings if kept is None else [in_shardings[i] for i in kept]
        self.module = module = impl.lower_partitioned(
            lowered, name, mesh, taken, out_shardings, donated, result_info
        )
        self.exe = exe = impl.compile_partitioned(
            module,
            mesh,
            lowered.in_avals,
            taken,
            jaxpr.out_avals,
            out_shardings,
            open_outputs=open_outputs,
        )
        self.mesh = mesh
        self.in_shardings = exe.in_shardings  # the partitioner's choice where None
        if kept is not None:
            exe.kept = kept
            self.in_shardings = [None] * len(in_shardings)
            for i, s in zip(kept, exe.in_shardings, strict=True):
                self.in_shardings[i] = s
        self.out_shardings = self.exe.out_shardings
        self.out_avals = jaxpr.out_avals


_programs = weakref.WeakKeyDictionary()  # jaxpr -> {(shardings, donated): _Partitioned}


_meshes = weakref.WeakKeyDictionary()  # jaxpr -> the mesh its shard_maps/constraints name


def jaxpr_mesh(jaxpr):
    """The mesh a jaxpr's ``shard_map``s or sharding constraints run over (None if none):
    a jit holding one runs partitioned even on arrays on one device."""
    try:
        return _meshes[jaxpr]
    except KeyError:
        pass
    mesh = None
    for eqn in jaxpr.eqns:
        params = eqn.params
        if "mesh" in params and isinstance(params["mesh"], impl.Mesh):
            mesh = params["mesh"]
        elif eqn.primitive is sharding_constraint_p or eqn.primitive is reshard_p:
            mesh = params["sharding"].mesh
        else:
            for v in params.values():
                for sub in v if isinstance(v, tuple) else (v,):
                    inner = getattr(sub, "jaxpr", sub)
                    if isinstance(inner, core.Jaxpr):
                        mesh = jaxpr_mesh(inner)
                        if mesh is not None:
                            break
                if mesh is not None:
                    break
        if mesh is not None:
            break
    _meshes[jaxpr] = mesh
    return mesh


def needs_partitioning(entry, leaves):
    """Must a jit call with these concrete arguments run as a partitioned program?"""
    return is_sharded(leaves) or jaxpr_mesh(entry.jaxpr.jaxpr) is not None


def is_sharded(leaves):
    """Does any concrete argument live on several devices?"""
    return any(
        type(x) is ShardedArray or type(x) is runtime.BufferType and len(x.sharding.device_set) > 1
        for x in leaves
    )


def _leaf_sharding(x):
    if type(x).__name__ == "ShapeDtypeStruct":
        return getattr(x, "sharding", None)
    buf = _leaf_buffer(x)
    if buf is not None and (
        type(x) is ShardedArray or type(x) is CommittedArray or len(buf.sharding.device_set) > 1
    ):
        return buf.sharding  # committed to one device too: JAX's jit does not move it
    return None  # on one device, uncommitted: follows the others


def _check_committed_layout(given, own, aval):
    """JAX's refusal of a committed argument laid out otherwise than in_shardings says
    (jit does not move it; device_put or reshard does)."""
    a, b = given._to_xla_hlo_sharding(aval.ndim), own._to_xla_hlo_sharding(aval.ndim)
    if (a.is_replicated() and b.is_replicated()) or a == b:
        return
    raise ValueError(
        f"Sharding passed to jit does not match the sharding on the respective "
        f"arg. Got jit sharding: {given},\narg sharding: {own} for arg type: "
        f"{aval}"
    )


def _mesh_for(name, shardings, avals):
    """The mesh a partitioned call runs over, from the shardings given and the arguments'
    (``shardings`` and ``avals``: the arguments', then the results')."""
    mesh, first = None, None
    for k, s in enumerate(shardings):
        if s is None:
            continue
        m = getattr(s, "mesh", None)
        if m is None:
            m = impl.Mesh(np.array(sorted(s.device_set, key=lambda d: d.id)), ("_devices",))
        if mesh is None:
            mesh, first = m, k
        elif set(m.devices.flat) != set(mesh.devices.flat):
            raise dispatch.incompatible_devices(
                name, *[(j, avals[j], shardings[j].device_set) for j in (first, k)]
            )
        elif all(n.startswith("_") for n in mesh.axis_names) and not all(
            n.startswith("_") for n in m.axis_names
        ):
            mesh = m  # a user's mesh over the devices of a pmap's result
    return mesh


def _typed_result(mesh, aval):
    """How a jit over ``mesh`` lays out a result of type ``aval`` left to it, as JAX's: as
    its type says (one without a sharding, a constant's, typed replicated when the context
    mesh is ``mesh`` with Explicit axes only). Over a mesh with Auto axes too, an unsplit
    dimension is open to them, and then the whole layout is left to the partitioner (None)."""
    typed = aval.sharding
    if typed is None:
        context = impl.get_abstract_mesh()
        if context.empty or context != mesh.abstract_mesh or not impl.all_explicit(context):
            return None
        return impl.NamedSharding(mesh, impl.PartitionSpec(*(None,) * aval.ndim))
    if not impl.all_explicit(typed.mesh) and None in typed.spec:
        return None
    return impl.NamedSharding(mesh, typed.spec)


def prepare(entry, leaves, avals, args, in_shardings, out_shardings, name):
    """The partitioned program of jit cache ``entry`` for these arguments and shardings, and
    the sharding of each of its inputs; None when nothing is sharded after all."""
    n_consts = len(entry.consts)
    given = (
        [None] * len(leaves)
        if in_shardings is None
        else [
            as_named(g, f"jit of {name}")
            for g in broadcast_prefix(in_shardings, args, "in_shardings")
        ]
    )
    given = given + [None] * (len(leaves) - len(given))  # keyword arguments: their own
    own = [_leaf_sharding(x) for x in leaves]
    for x, g, a in zip(leaves, given, avals, strict=True):
        if (
            g is not None
            and (type(x) is ShardedArray or type(x) is CommittedArray)
            and x._buf.sharding != g
        ):
            _check_committed_layout(g, x._buf.sharding, a)
    chosen = [g if g is not None else o for g, o in zip(given, own, strict=True)]
    outs_tree = pytree.tree_unflatten(entry.out_tree, [0] * len(entry.jaxpr.out_avals))
    outs_given = (
        [None] * len(entry.jaxpr.out_avals)
        if out_shardings is None
        else [
            as_named(g, f"jit of {name}")
            for g in broadcast_prefix(out_shardings, outs_tree, "out_shardings")
        ]
    )
    mesh = _mesh_for(
        name, chosen + outs_given, list(avals) + list(entry.jaxpr.out_avals)
    ) or jaxpr_mesh(entry.jaxpr.jaxpr)
    if mesh is None:
        return None, None
    replicated = impl.NamedSharding(mesh, impl.PartitionSpec())

    def on_mesh(s, aval):
        if s is None:
            return replicated
        if getattr(s, "mesh", None) == mesh:
            return s
        # the same devices seen as another mesh (a pmap's, say): as ``mesh`` if it can be
        try:
            return impl.named_from_hlo(
                mesh, str(s._to_xla_hlo_sharding(aval.ndim)), aval.ndim, impl.all_explicit(mesh)
            )
        except NotImplementedError:
            return replicated

    # An argument with no layout of its own and none given is open: the partitioner lays
    # it out as the program reads it best (JAX's UNSPECIFIED in_sharding).
    in_s = [replicated] * n_consts + [
        None if s is None else on_mesh(s, a) for s, a in zip(chosen, avals, strict=True)
    ]
    out_s = [
        on_mesh(s, a) if s is not None else _typed_result(mesh, a)
        for s, a in zip(outs_given, entry.jaxpr.out_avals, strict=True)
    ]
    # As JAX's, the partitioner may change the layout of results no out_shardings names.
    open_outs = tuple(s is None for s in outs_given)
    per_jaxpr = _programs.setdefault(entry.jaxpr.jaxpr, {})
    key = (tuple(in_s), tuple(out_s), entry.donated, open_outs)
    program = per_jaxpr.get(key)
    if program is None:  # checked once per signature and shardings
        for s, a in zip(in_s[n_consts:], avals, strict=True):
            if s is not None:
                _check_divisible(s, a, f"jit of {name}")
        for s, a in zip(out_s, entry.jaxpr.out_avals, strict=True):
            if s is not None:
                _check_divisible(s, a, f"jit of {name} (out_shardings)")
        program = per_jaxpr[key] = _Partitioned(
            entry.jaxpr,
            name,
            mesh,
            in_s,
            out_s,
            entry.donated,
            pytree.result_info(entry.out_tree),
            entry.consts,
            entry.keep_unused,
            open_outs,
        )
    return program, program.in_shardings


def direct_call(entry, leaves, avals, args, in_shardings, out_shardings, name):
    """A function of the argument buffers running jit cache ``entry``'s partitioned program,
    for a later call with sharded Arrays of the same types and layouts as ``leaves`` (jit's
    fastest path for sharded arguments); None when the call needs more than that (consts,
    donation, float0 outputs, an argument to lay out first)."""
    if entry.consts or entry.donated is not None or entry.float0s:
        return None
    program, in_s = prepare(entry, leaves, avals, args, in_shardings, out_shardings, name)
    if program is None or any(
        s is not None and (type(x) is not ShardedArray or x._buf.sharding != s)
        for x, s in zip(leaves, in_s, strict=True)
    ):
        return None
    call_program = program.exe.call
    # What ``wrap`` makes of each result, decided once: its layout is the program's.
    outs = [
        (ShardedArray, typed_aval(s, a))
        if len(s.device_set) > 1 or isinstance(s, impl.NamedSharding)
        else (Array, a)
        for s, a in zip(program.exe.out_shardings, program.out_avals, strict=True)
    ]
    out_tree = entry.out_tree

    def call(bufs):
        return out_tree.unflatten(
            [cls(a, None, b) for (cls, a), b in zip(outs, call_program(bufs), strict=True)]
        )

    return call


def typed_aval(sharding, aval):
    """``aval`` as the type of an array laid out as ``sharding`` (what ``wrap`` gives)."""
    typed = type_sharding(sharding, aval.ndim)
    if typed == aval.sharding:
        return aval
    return core.intern_aval(ShapedArray(aval.shape, aval.dtype, aval.weak_type, typed))


def run_partitioned(entry, leaves, avals, args, in_shardings, out_shardings, name):
    """Run jit cache ``entry`` on concrete ``leaves`` as one partitioned program (the
    one-device program when nothing is sharded after all)."""
    program, in_s = prepare(entry, leaves, avals, args, in_shardings, out_shardings, name)
    if program is None:
        return entry.run(leaves, avals, None)
    return _run(entry, program, in_s, leaves, avals)


def _run(entry, program, in_s, leaves, avals):
    n_consts = len(entry.consts)
    all_args = list(entry.consts) + list(leaves)
    all_avals = entry.const_avals + list(avals)
    bufs = [
        None if s is None else put_leaf(x, s, a)  # (None: an argument not read)
        for x, s, a in zip(all_args, in_s, all_avals, strict=True)
    ]
    outs = program.exe.call(bufs)
    if entry.donated is not None:
        for x, flag in zip(leaves, entry.donated[n_consts:], strict=True):
            if flag and isinstance(x, Array):
                x._donated()
    return entry.restore_float0s([wrap(b, a) for b, a in zip(outs, program.out_avals, strict=True)])


# --------------------------------------------------------------------------- jit_p, eagerly
# A jit equation evaluated on concrete arguments (what grad and vmap of a jitted function
# leave: the known half of a linearized call, a batched call) keeps the arguments' layout:
# with a sharded argument it runs partitioned by the arguments' shardings.


class _CallEntry:
    """A jit equation's body in the shape of a jit cache entry (consts as leading inputs)."""

    __slots__ = (
        "jaxpr",
        "consts",
        "const_avals",
        "out_tree",
        "donated",
        "keep_unused",
        "__weakref__",
    )

    def __init__(self, closed):
        self.jaxpr, self.consts = convert_constvars(closed)
        self.const_avals = [core.get_aval(c) for c in self.consts]
        self.out_tree = pytree.tree_structure([0] * len(closed.out_avals))
        self.donated = None
        self.keep_unused = False

    def restore_float0s(self, outs):
        return outs


_call_entries = weakref.WeakKeyDictionary()  # jaxpr -> _CallEntry


def _jit_eager(*args, jaxpr, name):
    if is_sharded(args) or jaxpr_mesh(jaxpr.jaxpr) is not None:
        entry = _call_entries.get(jaxpr.jaxpr)
        if entry is None:
            entry = _call_entries[jaxpr.jaxpr] = _CallEntry(jaxpr)
        program, in_s = prepare(
            entry, list(args), [core.get_aval(x) for x in args], args, None, None, name
        )
        return _run(entry, program, in_s, list(args), [core.get_aval(x) for x in args])
    return _one_device(args, {"jaxpr": jaxpr, "name": name})


def _one_device(args, params):
    """What eager evaluation does with a jit equation without an eager rule: compile the one
    equation (dispatch.device_apply's path), cached with eager's single-equation programs."""
    avals = tuple(dispatch.concrete_aval(x, jit_p) for x in args)
    key = (jit_p, tuple(params.items()), avals)
    compiled = dispatch._single_eqn.get(key)
    if compiled is None:
        invars = [Var(a) for a in avals]
        outvars = [Var(a) for a in core.abstract_eval(jit_p, *avals, **params)]
        body = Jaxpr([], invars, outvars, [JaxprEqn(jit_p, invars, outvars, params)])
        min_secs = 0.01 if runtime.platform() == "cpu" else 0.0
        compiled = dispatch.compile_jaxpr(
            ClosedJaxpr(body, []), jit_p.name, min_cache_secs=min_secs
        )
        dispatch._single_eqn[key] = compiled
    return compiled.run(args, avals)


core.eager_rules[jit_p] = _jit_eager


# --------------------------------------------------------------------------- stages


class PartitionedLowered(stages.Lowered):
    """``jit(f, in_shardings=...).lower(*args)``: the partitioned module (Shardy
    annotations, ``mhlo.num_partitions``), as JAX's ``Lowered``."""

    def __init__(self, jitted, entry, in_tree, avals, leaves, positional, shardings):
        stages._Stage.__init__(self, jitted, entry, in_tree, avals)
        program, _ = prepare(entry, leaves, avals, positional, *shardings, jitted._name)
        if program is None:
            raise ValueError(f"jit of {jitted._name}: nothing to partition")
        self._program = program
        self._module = program.module

    def compile(self, compiler_options=None):
        return PartitionedCompiled(self._program, self.in_tree, self._entry.out_tree)


class PartitionedCompiled:
    """The compiled partitioned program: ``as_text()`` is XLA's partitioned HLO."""

    def __init__(self, program, in_tree, out_tree):
        self._program = program
        self._in_tree, self._out_tree = in_tree, out_tree

    def as_text(self):
        return self._program.exe.loaded.hlo_modules()[0].to_string()

    @property
    def output_shardings(self):
        """The results' shardings, in the results' pytree (as JAX's)."""
        return pytree.tree_unflatten(self._out_tree, list(self._program.out_shardings))

    @property
    def input_shardings(self):
        """The arguments' shardings as ``(args, kwargs)`` (as JAX's)."""
        flat = (
            list(self._program.in_shardings)[-self._in_tree.num_leaves :]
            if self._in_tree.num_leaves
            else []
        )
        return pytree.tree_unflatten(self._in_tree, flat)


def lower(jitted, traced, args, kwargs):
    """The Lowered stage of a jit call that runs partitioned, else None."""
    state = jitted._state
    leaves = pytree.tree_leaves((args, kwargs))
    if (
        state.shardings is None
        and not any(
            _leaf_sharding(x) is not None and len(_leaf_sharding(x).device_set) > 1 for x in leaves
        )
        and jaxpr_mesh(traced._entry.jaxpr.jaxpr) is None
    ):
        return None
    return PartitionedLowered(
        jitted,
        traced._entry,
        traced.in_tree,
        traced._avals,
        leaves,
        jitted._positional(args, kwargs),
        state.shardings or (None, None),
    )


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


# --------------------------------------------------------------------------- eager ops


_single = {}  # (primitive, params, avals) -> _CallEntry of the one equation


def apply_partitioned(prim, args, params):
    """An eager primitive on arguments of which some are sharded, as JAX runs it: one
    partitioned program of the single equation, laid out by the arguments' shardings.
    (For the eager path of xform/runtime/dispatch.py to call when ``is_sharded(args)``.)"""
    for x in args:
        if isinstance(x, Array) and x.is_deleted():  # (donated): never hand XLA a dead buffer
            raise RuntimeError(
                f"Array has been deleted with shape={x.aval.str_short()}: "
                f"{prim.name} cannot read it (it was donated or deleted)"
            )
    avals = tuple(dispatch.concrete_aval(x, prim) for x in args)
    key = (prim, tuple(params.items()), avals)
    entry = _single.get(key)
    if entry is None:
        invars = [Var(a) for a in avals]
        outvars = [Var(a) for a in out_avals_of(prim, list(avals), params)]
        body = Jaxpr([], invars, outvars, [JaxprEqn(prim, invars, outvars, params)])
        entry = _single[key] = _CallEntry(ClosedJaxpr(body, []))
    program, in_s = prepare(entry, list(args), list(avals), args, None, None, prim.name)
    return _run(entry, program, in_s, list(args), list(avals))  # a list, as eager rules


# --------------------------------------------------------------------------- traced calls
# A jit with in_shardings/out_shardings called under a transformation (grad, vmap, an outer
# jit) binds a body whose inputs and outputs carry those shardings as constraints, so the
# layout survives: the transformed calls run partitioned as the shardings say.

_constrained = weakref.WeakKeyDictionary()  # jaxpr -> {shardings: constrained jaxpr}


def constrained_jaxpr(entry, args, in_shardings, out_shardings, name):
    """``entry.jaxpr`` with sharding constraints on its arguments and results."""
    n_consts = len(entry.consts)
    n_args = len(entry.jaxpr.in_avals) - n_consts
    given = (
        [None] * n_args
        if in_shardings is None
        else [
            as_named(g, f"jit of {name}")
            for g in broadcast_prefix(in_shardings, args, "in_shardings")
        ]
    )
    given = given + [None] * (n_args - len(given))
    outs_tree = pytree.tree_unflatten(entry.out_tree, [0] * len(entry.jaxpr.out_avals))
    outs_given = (
        [None] * len(entry.jaxpr.out_avals)
        if out_shardings is None
        else [
            as_named(g, f"jit of {name}")
            for g in broadcast_prefix(out_shardings, outs_tree, "out_shardings")
        ]
    )
    key = (tuple(given), tuple(outs_given))
    per_jaxpr = _constrained.setdefault(entry.jaxpr.jaxpr, {})
    hit = per_jaxpr.get(key)
    if hit is not None:
        return hit
    closed = entry.jaxpr

    def constrain(x, s):
        return x if s is None else sharding_constraint_p.bind(x, sharding=s, origin="jit")

    def body(*xs):
        consts, rest = xs[:n_consts], xs[n_consts:]
        rest = [constrain(x, s) for x, s in zip(rest, given, strict=True)]
        outs = core.eval_jaxpr(closed.jaxpr, closed.consts, *consts, *rest)
        return [constrain(o, s) for o, s in zip(outs, outs_given, strict=True)]

    hit = per_jaxpr[key] = trace_to_jaxpr(
        body, closed.in_avals, f"constraining the shardings of {name}"
    )
    return hit


dispatch.sharded_apply = apply_partitioned  # eager primitives on sharded arrays run partitioned

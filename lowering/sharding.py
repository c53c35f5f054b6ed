"""Partitioned programs: one SPMD program over a mesh, split by XLA's Shardy partitioner.

A jit with shardings lowers as JAX 0.10.2 lowers it: an ``sdy.mesh`` at module level,
``sdy.sharding`` on the arguments and (when given) the results, ``mhlo.num_partitions``; the
compiler partitions it (``use_spmd_partitioning`` with ``use_shardy_partitioner``) and picks
the shardings left open. The mesh and sharding classes are JAX's runtime objects: the arrays
jaxlib hands back carry them.
"""

import functools

import jax
import numpy as np
from jax import sharding as jax_sharding
from jaxlib import _hlo, _jax
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import sdy

from lowering import compile_cache, mlir, runtime
from xform.core import ShapedArray
from xform.primitives.sharding import reshard_p, sharding_constraint_p, spec_names
from xform.primitives.sharding_rules import ELEMENTWISE, sharding_rules

Mesh = jax_sharding.Mesh
AbstractMesh = jax_sharding.AbstractMesh
AbstractDevice = jax_sharding.AbstractDevice
AxisType = jax_sharding.AxisType
ManualAxisType = jax_sharding.ManualAxisType
NamedSharding = jax_sharding.NamedSharding
PartitionSpec = jax_sharding.PartitionSpec
Sharding = jax_sharding.Sharding
SingleDeviceSharding = jax_sharding.SingleDeviceSharding
get_abstract_mesh = jax_sharding.get_abstract_mesh
get_mesh = jax_sharding.get_mesh
set_mesh = jax_sharding.set_mesh
use_abstract_mesh = jax_sharding.use_abstract_mesh
make_single_device_sharding = jax_sharding.make_single_device_sharding
make_mesh = jax.make_mesh


def mesh_text(mesh):
    axes = ", ".join(f'"{name}"={size}' for name, size in mesh.shape.items())
    return f"<[{axes}]>"


def spec_text(spec, ndim, mesh_symbol="mesh", open_dims=False, replicated=()):
    """The Shardy sharding of an array of rank ``ndim`` split as PartitionSpec ``spec``;
    ``open_dims``: each dimension may be split further by the partitioner (``?``), except
    by the mesh axes ``replicated``. A ``P.UNCONSTRAINED`` entry is open alone."""
    dims = []
    for k in range(ndim):
        entry = spec[k] if k < len(spec) else None
        names = [f'"{n}"' for n in spec_names(entry)]
        is_open = open_dims or entry is PartitionSpec.UNCONSTRAINED
        dims.append("{" + ", ".join(names + ["?"] * is_open) + "}")
    tail = ""
    if replicated:
        tail = ", replicated={" + ", ".join(f'"{n}"' for n in replicated) + "}"
    return f"#sdy.sharding<@{mesh_symbol}, [{', '.join(dims)}]{tail}>"


def sharding_attr(sharding, ndim):
    return ir.Attribute.parse(spec_text(sharding.spec, ndim))


def add_mesh(module, mesh):
    """Declare ``sdy.mesh @mesh`` at the top of ``module`` (inside its context), with the
    ``stablehlo.mesh`` description of its axes that JAX's modules carry too."""
    with ir.InsertionPoint.at_block_begin(module.body):
        op = sdy.MeshOp("mesh", ir.Attribute.parse(f"#sdy.mesh{mesh_text(mesh)}"))
    axes = ", ".join(f'{{name = "{n}", size = {k} : i64}}' for n, k in mesh.shape.items())
    op.attributes["stablehlo.mesh"] = ir.Attribute.parse(f"{{axes = [{axes}]}}")


def annotate_main(
    main, in_shardings, in_avals, out_shardings, out_avals, donated, result_info=None
):
    """Set ``sdy.sharding`` on main's arguments and results (None: left to the compiler),
    the aliasing of donated arguments to results of the same type, and the results' names
    (``result_info``, as ``mlir.lower_to_module``)."""
    free = list(enumerate(out_avals))
    i32 = ir.IntegerType.get_signless(32)
    arg_attrs = []
    for k, (s, aval) in enumerate(zip(in_shardings, in_avals, strict=True)):
        entries = {} if s is None else {"sdy.sharding": sharding_attr(s, aval.ndim)}
        if donated is not None and donated[k]:
            match = next(
                (
                    j
                    for j, (_, a) in enumerate(free)
                    if a.shape == aval.shape and a.dtype == aval.dtype
                ),
                None,
            )
            if match is not None:
                out_index, _ = free.pop(match)
                entries["tf.aliasing_output"] = ir.IntegerAttr.get(i32, out_index)
        arg_attrs.append(ir.DictAttr.get(entries))
    main.attributes["arg_attrs"] = ir.ArrayAttr.get(arg_attrs)
    infos = [None] * len(out_avals) if result_info is None else result_info
    res_attrs = [
        ir.DictAttr.get(
            {
                **mlir.result_attrs(info),
                **({} if s is None else {"sdy.sharding": sharding_attr(s, a.ndim)}),
            }
        )
        for s, a, info in zip(out_shardings, out_avals, infos, strict=True)
    ]
    main.attributes["res_attrs"] = ir.ArrayAttr.get(res_attrs)


def lower_partitioned(
    closed, name, mesh, in_shardings, out_shardings, donated=None, result_info=None
):
    """A verified module computing ``closed`` as one program over ``mesh``'s devices."""

    def emit_main(mctx):
        i32 = ir.IntegerType.get_signless(32)
        mctx.module.operation.attributes["mhlo.num_partitions"] = ir.IntegerAttr.get(i32, mesh.size)
        add_mesh(mctx.module, mesh)
        mctx.mesh = mesh  # read by the rules of sharding constraints and shard_map
        mctx.lower_equation = _lower_typed  # results laid out as their types say
        main = mlir.emit_function(mctx, closed, "main", public=True)
        annotate_main(
            main,
            in_shardings,
            closed.in_avals,
            out_shardings,
            closed.out_avals,
            donated,
            result_info,
        )
        return main

    return mlir.build_module(mlir.module_symbol(name), 1, emit_main, scope=f"jit({name})")


def partition_options(devices, num_outputs, xla_options=(), open_inputs=(), open_outputs=None):
    """XLA's options for one SPMD program over ``devices``; ``open_inputs``, ``open_outputs``:
    a flag per input and result, true where the partitioner may choose its layout (JAX's:
    an argument without a sharding, a result no out_shardings names; default: every
    result)."""
    options = runtime.compile_options(xla_options)
    options.num_replicas = 1
    options.num_partitions = len(devices)
    options.device_assignment = _jax.DeviceAssignment.create(
        np.array([d.id for d in devices]).reshape(1, len(devices))
    )
    build = options.executable_build_options
    build.use_spmd_partitioning = True
    build.use_shardy_partitioner = True
    build.allow_spmd_sharding_propagation_to_output = (
        [True] * max(num_outputs, 1) if open_outputs is None else list(open_outputs)
    )
    build.allow_spmd_sharding_propagation_to_parameters = list(open_inputs)
    return options


def all_explicit(mesh):
    return all(t == AxisType.Explicit for t in mesh.axis_types)


@functools.lru_cache(maxsize=4096)
def named_from_hlo(mesh, hlo_text, ndim, full=False):
    """The NamedSharding over ``mesh`` equal to the compiler's sharding ``hlo_text`` for an
    array of rank ``ndim`` (each mesh axis on at most one dimension, in mesh order); its spec
    names every dimension if ``full`` (as JAX's of a result typed on a mesh of Explicit axes),
    else leaves trailing unsplit ones out (as JAX's of any other)."""
    hlo = _hlo.HloSharding.from_string(hlo_text)
    names = mesh.axis_names
    for choice in np.ndindex(*([ndim + 1] * len(names))):
        dims = [[] for _ in range(ndim)]
        for name, d in zip(names, choice, strict=True):
            if d < ndim:
                dims[d].append(name)
        spec = PartitionSpec(*[None if not d else d[0] if len(d) == 1 else tuple(d) for d in dims])
        while len(spec) and spec[-1] is None and not full:
            spec = PartitionSpec(*spec[:-1])
        candidate = NamedSharding(mesh, spec)
        if candidate._to_xla_hlo_sharding(ndim) == hlo:
            return candidate
    raise NotImplementedError(
        f"the compiler chose sharding {hlo_text} for a rank-{ndim} "
        f"result, which no PartitionSpec over mesh {mesh.shape} gives; "
        "pass out_shardings"
    )


class PartitionedExecutable:
    """One program over the devices of a mesh: ``call(global arrays) -> global arrays``."""

    __slots__ = (
        "loaded",
        "text",
        "devices",
        "in_shardings",
        "out_shardings",
        "handlers",
        "one_at_a_time",
        "kept",
    )

    def __init__(self, loaded, text, devices, out_avals, out_shardings, in_shardings=None):
        self.loaded = loaded
        self.text = text
        self.devices = devices
        self.in_shardings = in_shardings
        self.out_shardings = out_shardings
        self.kept = None  # the positions of the arguments the program takes (None: all)
        self.handlers = [
            _jax.array_result_handler(
                runtime._jax_aval(a.shape, a.dtype), s, True, _skip_checks=True
            )
            for a, s in zip(out_avals, out_shardings, strict=True)
        ]
        # XLA's CPU collectives deadlock (then abort the process) when programs over several
        # devices are queued while earlier ones still run (seen here: a loop of jit(shard_map
        # (psum)) calls not waiting for their results); one at a time on CPU, shared with
        # pmap's programs (lowering/runtime.py, SpmdExecutable).
        self.one_at_a_time = len(devices) > 1 and devices[0].platform == "cpu"

    def call(self, arrays):
        if self.kept is not None:
            arrays = [arrays[i] for i in self.kept]
        if self.one_at_a_time and runtime._in_flight is not None:
            for out in runtime._in_flight:
                if not out.is_deleted():
                    out.block_until_ready()
        outs = self.loaded.execute_sharded(arrays).consume_with_handlers(self.handlers)
        if self.one_at_a_time:
            runtime._in_flight = outs
        runtime.collect_garbage()
        return outs


def compile_partitioned(
    module,
    mesh,
    in_avals,
    in_shardings,
    out_avals,
    out_shardings,
    xla_options=(),
    open_outputs=None,
):
    """Compile a module of ``lower_partitioned``. Inputs and results without a sharding
    (None) get the one the partitioner chose, as a NamedSharding over ``mesh``: as in JAX,
    an argument with no layout of its own (a NumPy array, say) is laid out as the program
    reads it best."""
    devices = tuple(mesh.devices.flat)
    text = mlir.module_text(module, debug_info=True)  # locations: XLA's op metadata
    options = partition_options(
        devices, len(out_avals), xla_options, [s is None for s in in_shardings], open_outputs
    )
    loaded = runtime._compile(devices[0].client, module, text, devices, options)
    in_shardings = _resolve(mesh, in_shardings, in_avals, loaded.get_parameter_shardings, True)
    out_shardings = _resolve(mesh, out_shardings, out_avals, loaded.get_output_shardings, False)
    return PartitionedExecutable(loaded, text, devices, out_avals, out_shardings, in_shardings)


def _resolve(mesh, shardings, avals, compiled_shardings, are_inputs):
    """``shardings`` with each None replaced by the compiled program's choice."""
    if all(s is not None for s in shardings):
        return list(shardings)
    chosen = compiled_shardings()
    if chosen is None:  # one partition: every layout is the whole array on the device
        chosen = [_hlo.HloSharding.replicate().to_proto()] * len(avals)
    resolved = list(shardings)
    for k, (s, c, a) in enumerate(zip(shardings, chosen, avals, strict=True)):
        if s is None:
            hlo = _hlo.HloSharding.from_proto(c)
            resolved[k] = (
                named_from_hlo(mesh, str(hlo), a.ndim) if are_inputs else _chosen(mesh, hlo, a)
            )
    return resolved


def _chosen(mesh, hlo, aval):
    """The NamedSharding over ``mesh`` of a result the partitioner laid out as ``hlo``: its
    type's where that is the same layout (as JAX reports it), else one read off ``hlo``."""
    typed = getattr(aval, "sharding", None)
    if typed is not None and typed.mesh == mesh.abstract_mesh:
        candidate = NamedSharding(mesh, typed.spec)
        if candidate._to_xla_hlo_sharding(aval.ndim) == hlo:
            return candidate
    return named_from_hlo(mesh, str(hlo), aval.ndim, typed is not None and all_explicit(mesh))


def put(x, sharding):
    """A NumPy array laid out as ``sharding`` (a global array)."""
    return runtime.put_with_sharding(np.asarray(x), sharding)


@functools.lru_cache(maxsize=1024)
def _reshard_executable(shape, dtype, src, dst):
    mesh = src.mesh
    typ = f"tensor<{'x'.join(map(str, shape)) + 'x' if shape else ''}{_elt_text(dtype)}>"
    text = (
        f"module @reshard attributes {{mhlo.num_partitions = {mesh.size} : i32, "
        f"mhlo.num_replicas = 1 : i32}} {{\n  sdy.mesh @mesh = {mesh_text(mesh)}\n"
        f"  func.func public @main(%arg0: {typ} {{sdy.sharding = "
        f"{spec_text(src.spec, len(shape))}}}) -> ({typ} {{sdy.sharding = "
        f"{spec_text(dst.spec, len(shape))}}}) {{\n    return %arg0 : {typ}\n  }}\n}}"
    )
    devices = tuple(mesh.devices.flat)
    loaded = compile_cache.compile_and_load(
        devices[0].client, text, devices, partition_options(devices, 1, (), [False], [False])
    )
    aval = runtime._jax_aval(shape, dtype)
    return PartitionedExecutable(loaded, text, devices, [aval], [dst])


def _elt_text(dtype):
    with mlir._lock, mlir.context():
        return str(mlir.dtype_to_ir(dtype))


def reshard(buf, sharding):
    """Device array ``buf`` laid out as ``sharding``, device to device, when both are
    NamedShardings over the same mesh (None otherwise: then it goes through the host)."""
    src = buf.sharding
    if src == sharding or src.is_equivalent_to(sharding, buf.ndim):
        return buf
    if not (
        isinstance(src, NamedSharding)
        and isinstance(sharding, NamedSharding)
        and src.mesh == sharding.mesh
        and sharding.is_fully_addressable
    ):
        return None
    exe = _reshard_executable(buf.shape, np.dtype(buf.dtype), src, sharding)
    return exe.call([buf])[0]


def _sharding_constraint_lower(ctx, x, *, sharding, origin=None):
    mesh = ctx.module.mesh
    if mesh is None:  # a program on one device: nothing to constrain
        return [x]
    if sharding.mesh not in (mesh, mesh.abstract_mesh) and not _retyped(sharding.mesh, mesh):
        raise ValueError(
            f"with_sharding_constraint: its mesh {sharding.mesh.shape} is not the "
            f"mesh {mesh.shape} of the jit it is in"
        )
    attr = sharding_attr(sharding, ctx.avals_in[0].ndim)
    return [sdy.ShardingConstraintOp(x, attr).result]


def _retyped(a, b):
    """Are meshes ``a`` and ``b`` one mesh whose axes have other types (``auto_axes``)?"""
    return (
        a.axis_names == b.axis_names
        and dict(a.shape) == dict(b.shape)
        and tuple(a.axis_types) != tuple(b.axis_types)
    )


def _reshard_lower(ctx, x, *, sharding):
    # To a type over a mesh with Auto axes (into an ``auto_axes`` region, out of an
    # ``explicit_axes`` one, or on a jit's own mesh of both kinds): the partitioner lays out
    # the Auto axes, as JAX's lowering (no constraint when no axis is Explicit, open
    # dimensions when some are).
    mesh = ctx.module.mesh
    if mesh is not None:
        explicit = [t == AxisType.Explicit for t in sharding.mesh.axis_types]
        if ctx.avals_in[0].sharding is not None and not any(explicit):
            return [x]
        if any(explicit) and not all(explicit) and ctx.avals_out[0].sharding is not None:
            return [_constrain(x, ctx.avals_out[0])]
    return _sharding_constraint_lower(ctx, x, sharding=sharding)


mlir.lowering_rules[sharding_constraint_p] = _sharding_constraint_lower
mlir.lowering_rules[reshard_p] = _reshard_lower


# --------------------------------------------------------------------------- typed shardings
# In a partitioned program, a result whose type carries a sharding (explicit mode,
# xform/primitives/sharding_rules.py) is constrained to it, as JAX's lowering does; so is
# each operand an elementwise operation broadcasts to its result's shape, broadcast first.


def _lower_typed(rule, ctx, args, params, prim):
    name = prim.name
    if (
        ctx.module.spmd
        or name not in sharding_rules
        or not any(getattr(a, "sharding", None) is not None for a in ctx.avals_out)
    ):
        return rule(ctx, *args, **params)
    if name in ELEMENTWISE and len(args) > 1:
        out = ctx.avals_out[0]
        avals_in = []
        for k, a in enumerate(ctx.avals_in):
            wide = a
            if a.shape != out.shape:
                wide = ShapedArray(out.shape, a.dtype, a.weak_type, out.sharding)
                args[k] = _constrain(mlir.broadcast_to(args[k], a, wide), wide)
            avals_in.append(wide)
        ctx = mlir.RuleContext(ctx.module, avals_in, ctx.avals_out)
    outs = rule(ctx, *args, **params)
    return [_constrain(x, a) for x, a in zip(outs, ctx.avals_out, strict=True)]


def _constrain(x, aval):
    s = getattr(aval, "sharding", None)
    if s is None:
        return x
    # On a mesh with Auto axes each dimension stays open to them, as JAX's; the Explicit axes
    # the type does not name are kept out (replicated).
    open_dims = any(t != AxisType.Explicit for t in s.mesh.axis_types)
    replicated = ()
    if open_dims:
        named = {n for e in s.spec for n in spec_names(e)}
        replicated = [
            n
            for n, t in zip(s.mesh.axis_names, s.mesh.axis_types, strict=True)
            if t == AxisType.Explicit and n not in named
        ]
    attr = ir.Attribute.parse(
        spec_text(s.spec, aval.ndim, open_dims=open_dims, replicated=replicated)
    )
    return sdy.ShardingConstraintOp(x, attr).result

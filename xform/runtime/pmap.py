"""Running ``pmap``: one SPMD program, compiled once per signature, run by a replica on each
device; its results stay on their devices as ``ShardedArray``s.

This is the eager rule of the ``pmap`` primitive: a top-level ``xform.pmap`` call ends
here, and so does the known half of a differentiated pmap.

Several processes (``jax.distributed.initialize``): the devices are all processes'
devices; each process passes and gets back only the slices of its own devices, as in JAX.

Why pmap keeps its replica program rather than running as ``jit(shard_map)`` as JAX 0.10.2
does: the replica program is already one SPMD program per signature with the same
collectives, it carries nested pmaps and pmaps inside jit (the module context's replica
model, lowering/collectives.py), and its results are ordinary arrays on a ``NamedSharding``
over the devices (a mesh with the pmap axis), which a partitioned jit or a shard_map reads
where they are (xform/runtime/partitioned.py), so the two interoperate without host copies.
Re-basing would trade that for a partitioner pass per pmap and nothing a user can see.
"""

import weakref

from lowering import runtime
from lowering.pmap import lower_pmap_module
from xform import core, dtypes
from xform.interpret.batching import batched_aval
from xform.interpret.dce import dce_closed_jaxpr, has_dead_code
from xform.primitives.pmap import pmap_p, replicas_needed
from xform.runtime.array import Array, ShardedArray
from xform.runtime.dispatch import concrete_aval, host_value


def mesh_axis_name(axis_name):
    return axis_name if isinstance(axis_name, str) else "_pmap"


def pmap_devices(name, axis_name, size, jaxpr, devices):
    """The devices a pmap of ``size`` runs on: one per replica (nested pmaps multiply)."""
    replicas = size * replicas_needed(jaxpr.jaxpr)
    available = list(devices) if devices is not None else list(runtime.devices())
    if replicas > len(available):
        inner = (
            ""
            if replicas == size
            else (f" ({size} along {axis_name!r} times {replicas // size} for the pmaps inside it)")
        )
        raise ValueError(
            f"pmap of {name}: compiling a computation that requires {replicas} "
            f"logical devices{inner}, but only {len(available)} XLA devices are "
            "available; map over an axis of at most that size, or start with more "
            "host devices (XLA_FLAGS=--xla_force_host_platform_device_count=N)"
        )
    if devices is None and runtime.process_count() > 1:
        # every process's devices, each process's together, so that its slices are contiguous
        available.sort(key=lambda d: (d.process_index, d.id))
    return tuple(available[:replicas])


def lower_pmap(params):
    """The module of a pmap's SPMD program (``params``: the pmap primitive's)."""
    jaxpr, size = params["jaxpr"], params["axis_size"]
    devices = pmap_devices(params["name"], params["axis_name"], size, jaxpr, params["devices"])
    if has_dead_code(jaxpr.jaxpr):
        jaxpr = dce_closed_jaxpr(jaxpr, [True] * len(jaxpr.jaxpr.outvars))[0]
    return lower_pmap_module(
        jaxpr,
        params["name"],
        params["axis_name"],
        size,
        params["in_axes"],
        params["out_axes"],
        len(devices),
        params["donated"],
    ), devices


class _Program:
    """A compiled pmap for one body, axes and device set."""

    __slots__ = ("exe", "in_shardings", "in_axes", "out_avals", "out_axes", "size")

    def __init__(self, params):
        jaxpr, size = params["jaxpr"], params["axis_size"]
        module, devices = lower_pmap(params)
        # In a run of several processes, this one passes and gets back the slices of its own
        # devices only: its arrays live on a mesh of those.
        local = runtime.local_devices_of(devices)
        self.size = size * len(local) // len(devices)
        mesh_name = mesh_axis_name(params["axis_name"])
        self.in_axes = params["in_axes"]
        self.out_axes = params["out_axes"]
        self.in_shardings = [
            runtime.mapped_sharding(local, mesh_name, self.size, a) for a in self.in_axes
        ]
        out_shardings = [
            runtime.mapped_sharding(local, mesh_name, self.size, a) for a in self.out_axes
        ]
        self.out_avals = [
            batched_aval(a, ax, self.size)
            for a, ax in zip(jaxpr.out_avals, self.out_axes, strict=True)
        ]
        self.exe = runtime.compile_spmd(
            module, devices, list(zip(self.out_avals, out_shardings, strict=True))
        )

    def buffer(self, x, i):
        """Argument ``i`` as a global array split as the program wants it."""
        sharding = self.in_shardings[i]
        if isinstance(x, Array):
            buf = x._buf
        elif type(x) is runtime.BufferType and x.dtype == dtypes.canonicalize(x.dtype):
            buf = x  # a JAX array (of a dtype xform keeps as it is)
        else:
            buf = None
        if buf is not None and (
            buf.sharding is sharding
            or buf.sharding == sharding
            or (
                len(buf.sharding.device_set) == len(sharding.device_set)
                and buf.sharding.is_equivalent_to(sharding, buf.ndim)
            )
        ):
            return buf  # already split this way, whatever the pmap that made it named its axis
        aval = concrete_aval(x, pmap_p)
        return runtime.put_sharded(host_value(x, aval), sharding, self.in_axes[i], self.size)

    def run(self, args):
        outs = self.exe.call([self.buffer(x, i) for i, x in enumerate(args)])
        # An unmapped result stays replicated on the devices, ready for the next pmap.
        return [
            ShardedArray(aval, None, buf) for buf, aval in zip(outs, self.out_avals, strict=True)
        ]


_programs = weakref.WeakKeyDictionary()  # jaxpr -> {(in_axes, out_axes, ...): _Program}


def program_for(params):
    """The compiled program of a pmap (``params``: the pmap primitive's), once per body,
    axes and devices."""
    per_jaxpr = _programs.setdefault(params["jaxpr"].jaxpr, {})
    key = (
        params["in_axes"],
        params["out_axes"],
        params["axis_size"],
        params["axis_name"],
        params["devices"],
        params["donated"],
    )
    program = per_jaxpr.get(key)
    if program is None:
        program = per_jaxpr[key] = _Program(params)
    return program


def run_program(program, args, donated):
    outs = program.run(args)
    if donated is not None:
        for x, flag in zip(args, donated, strict=True):
            if flag and isinstance(x, Array):
                x._donated()
    return outs


def run_pmap(*args, **params):
    """Run a pmap on concrete arguments: the eager rule of the pmap primitive."""
    return run_program(program_for(params), args, params["donated"])


core.eager_rules[pmap_p] = run_pmap

"""``shard_map`` called outside any transformation: its body runs in Python, once, on values
that hold one block per device, as JAX 0.10.2's eager shard_map does.

A value in the body is a ``ShardMapTracer``: its type is a device's block type (with the axes
it varies over, when ``check_vma``) and it holds every device's block, in the mesh's device
order; printing it shows each device's block, as JAX's does. An operation on blocks alone
(arithmetic, reshapes, ...) is applied to each device's block by eager evaluation; a
collective, or an operation carrying a program (a nested ``jit``, ``cond``, ``scan``, a custom
rule), runs as a compiled one-operation ``shard_map`` (JAX compiles every operation that way;
this keeps compiles to those that need the devices together), cached per operation.
"""

import numpy as np

from lowering import sharding as impl
from xform import core, pytree
from xform.api.jit import jit
from xform.api.sharding import device_put
from xform.core import ClosedJaxpr, Jaxpr, ShapedArray, Tracer
from xform.interpret.staging import convert_constvars, out_avals_of, trace_to_jaxpr
from xform.primitives import collectives as coll
from xform.primitives.shard_map import axis_env, shard_map_p, spec_names, spec_vma
from xform.primitives.structural import reshape_p
from xform.runtime.array import from_host

_COLLECTIVES = frozenset(
    p for p in vars(coll).values() if isinstance(p, core.Primitive) and p is not coll.pvary_p
)


class ShardMapTracer(Tracer):
    """A value in an eagerly run shard_map body: one block per device of the mesh."""

    __slots__ = ("blocks", "_aval")

    def __init__(self, trace, blocks, aval):
        self._trace = trace
        self.blocks = blocks
        self._aval = aval

    @property
    def aval(self):
        return self._aval

    def concrete_value(self):
        # As JAX's: a value typed as the same on every device (check_vma) is known.
        if self._trace.check_vma and not self._aval.vma:
            return self.blocks[0]
        return None

    def __repr__(self):
        mesh = self._trace.mesh
        names = f"({', '.join(map(str, mesh.axis_names))},)"
        return "\n".join(
            f"On {device} at mesh coordinates {names} = {idx}:\n{block}\n"
            for (idx, device), block in zip(np.ndenumerate(mesh.devices), self.blocks, strict=True)
        )

    __str__ = __repr__


class ShardMapTrace(core.Trace):
    """Applies each primitive to every device's blocks (see the module docstring)."""

    __slots__ = ("mesh", "manual", "check_vma", "alive")
    name = "running shard_map eagerly"

    def __init__(self, mesh, manual, check_vma):
        self.mesh = mesh
        self.manual = manual
        self.check_vma = check_vma
        self.alive = True

    def lift(self, x):
        """``x`` as this trace's value (a constant: the same block on every device)."""
        if isinstance(x, ShardMapTracer) and x._trace is self:
            return x
        if isinstance(x, Tracer):
            raise core.escaped_tracer_error(x, "an eagerly run shard_map body")
        return ShardMapTracer(self, [x] * self.mesh.devices.size, core.get_aval(x))

    def process_primitive(self, prim, args, params):
        xs = [self.lift(x) for x in args]
        out_avals = out_avals_of(prim, [x._aval for x in xs], params)
        if prim is coll.pvary_p:  # a type change only: each device keeps its block
            blocks = [x.blocks for x in xs]
        elif prim in _COLLECTIVES or prim in core.eager_rules or _carries_program(params):
            blocks = self._compiled(prim, params, xs, out_avals)
        else:
            per_device = [
                core.eval_trace.process_primitive(prim, list(bs), params)
                for bs in zip(*(x.blocks for x in xs), strict=True)
            ]
            blocks = [list(b) for b in zip(*per_device, strict=True)]
        return [ShardMapTracer(self, b, a) for b, a in zip(blocks, out_avals, strict=True)]

    def _compiled(self, prim, params, xs, out_avals):
        """Every device's output blocks of ``prim`` run as a one-operation shard_map."""
        shape = self.mesh.devices.shape
        stacked = [
            np.stack([np.asarray(b) for b in x.blocks]).reshape(shape + x._aval.shape) for x in xs
        ]
        program = _one_operation(self.mesh, prim, params, [x._aval for x in xs])
        with core.set_current_trace(core.eval_trace):
            outs = program(*stacked)
        return [
            [from_host(h, a.weak_type) for h in np.asarray(o).reshape((-1,) + a.shape)]
            for o, a in zip(outs, out_avals, strict=True)
        ]


def _carries_program(params):
    return any(
        isinstance(v, (Jaxpr, ClosedJaxpr))
        or (isinstance(v, tuple) and v and isinstance(v[0], (Jaxpr, ClosedJaxpr)))
        or (callable(v) and not isinstance(v, type))
        for v in params.values()
    )


_one_op_cache = {}  # (mesh, prim, params, operand types) -> jitted one-operation shard_map


def _one_operation(mesh, prim, params, avals):
    """``jit`` of a ``shard_map`` of ``prim`` alone over operands stacked with one leading
    dimension per mesh axis (each device's block one entry), unchecked: the values' types
    are this module's."""
    try:
        key = (mesh, prim, tuple(params.items()), tuple(avals))
        hit = _one_op_cache.get(key)
    except TypeError:  # an unhashable param: compiled per call
        key = hit = None
    if hit is not None:
        return hit
    k = mesh.devices.ndim

    def one(*stacked):
        blocks = [reshape_p.bind(x, new_sizes=x.shape[k:], dimensions=None) for x in stacked]
        outs = prim.bind(*blocks, **params)
        outs = outs if prim.multiple_results else [outs]
        return [reshape_p.bind(o, new_sizes=(1,) * k + o.shape, dimensions=None) for o in outs]

    ones = (1,) * k
    stacked = [ShapedArray(ones + a.shape, a.dtype, a.weak_type) for a in avals]
    with axis_env(mesh, mesh.axis_names):
        closed = trace_to_jaxpr(one, stacked, f"{prim.name} for an eager shard_map")
    jaxpr, consts = convert_constvars(closed)
    spec = impl.PartitionSpec(*mesh.axis_names)
    replicated = impl.PartitionSpec()

    def program(*xs):
        return shard_map_p.bind(
            *consts,
            *xs,
            jaxpr=jaxpr,
            mesh=mesh,
            in_specs=(replicated,) * len(consts) + (spec,) * len(xs),
            out_specs=(spec,) * len(jaxpr.out_avals),
            manual_axes=frozenset(mesh.axis_names),
            check_vma=False,
        )

    program.__name__ = f"shard_map_{prim.name}"
    laid_out = tuple(impl.NamedSharding(mesh, spec) for _ in avals)
    hit = jit(program, in_shardings=laid_out)
    if key is not None:
        _one_op_cache[key] = hit
    return hit


def run(f, mesh, leaves, in_tree, specs_in, check_vma):
    """``f`` on each device's blocks of ``leaves`` (split as ``specs_in``), over all the
    mesh's axes: ``(out, results)``, its pytree result and that as a list of ``ShardMapTracer``
    (``assemble`` puts one together as its out_spec says)."""
    manual = tuple(mesh.axis_names)
    trace = ShardMapTrace(mesh, manual, check_vma)
    tracers = []
    for x, spec in zip(leaves, specs_in, strict=True):
        aval = core.get_aval(x)
        host = np.asarray(x)
        vma = spec_vma(spec, manual) if check_vma else frozenset()
        blocks = [from_host(host[i], aval.weak_type) for i in _indices(mesh, spec, aval.shape)]
        block = ShapedArray(blocks[0].shape, aval.dtype, aval.weak_type, vma=vma)
        tracers.append(ShardMapTracer(trace, blocks, block))
    try:
        with axis_env(mesh, manual, check_vma), core.set_current_trace(trace):
            out = f(*pytree.tree_unflatten(in_tree, tracers))
            results = [trace.lift(y) for y in pytree.tree_leaves(out)]
    finally:
        trace.alive = False
    return out, results


def _indices(mesh, spec, shape):
    """Per device (the mesh's order), the index of its block of a ``shape`` array."""
    per_device = impl.NamedSharding(mesh, spec).devices_indices_map(tuple(shape))
    return [per_device[d] for d in mesh.devices.flat]


def assemble(mesh, spec, y):
    """The global array whose blocks, split as ``spec``, are ``y``'s (for an axis ``spec``
    leaves out, the block of the device at coordinate 0 on it, as JAX's)."""
    sizes = [1] * y._aval.ndim
    for d, entry in enumerate(spec):
        for name in spec_names(entry):
            sizes[d] *= mesh.shape[name]
    shape = tuple(n * s for n, s in zip(y._aval.shape, sizes, strict=True))
    out = np.empty(shape, y._aval.dtype)
    indices = _indices(mesh, spec, shape)
    for index, block in reversed(list(zip(indices, y.blocks, strict=True))):
        out[index] = np.asarray(block)
    value = from_host(out, y._aval.weak_type)
    return device_put(value, impl.NamedSharding(mesh, spec))

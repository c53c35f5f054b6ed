"""The partitioned runner: ``jit`` run as one SPMD program over a mesh.

A ``jit`` given ``in_shardings``/``out_shardings``, or called with arrays spread over several
devices, runs as one program partitioned by XLA's Shardy partitioner (lowering/sharding.py):
arguments without a sharding take their own (an array on one device is replicated), results
without one get the sharding the partitioner chose. So does a jit whose body holds a
``shard_map`` or a sharding constraint, the eager evaluation of a jit equation (what ``grad``
and ``vmap`` of a jitted function leave) on sharded arguments, and an eager primitive with a
sharded operand. A jit cache entry keeps its partitioned programs (``entry.partitioned``).

Also here: the layout helpers the public sharding API (xform/api/sharding.py) is built on,
and the partitioned AOT stages.
"""

import weakref

import numpy as np

from lowering import runtime
from lowering import sharding as impl
from xform import core, pytree
from xform.core import ClosedJaxpr, Jaxpr, JaxprEqn, ShapedArray, Tracer, Var
from xform.interpret.staging import convert_constvars, out_avals_of, trace_to_jaxpr
from xform.primitives.call import jit_p
from xform.primitives.sharding import (
    check_spec_fits,
    reshard_p,
    sharding_constraint_p,
    type_sharding,
)
from xform.runtime import dispatch, stages
from xform.runtime.array import Array, CommittedArray, ShardedArray

# --------------------------------------------------------------------------- layouts


def is_sharding_leaf(s):
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


def check_constrained(shardings, what):
    """``ValueError`` if a sharding of pytree ``shardings`` (jit's ``in_shardings`` or
    ``out_shardings``) leaves a dimension to the partitioner: as JAX's, only
    ``with_sharding_constraint`` takes ``P.UNCONSTRAINED``."""
    for s in pytree.tree_leaves(shardings, is_leaf=is_sharding_leaf):
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
    is_leaf = is_leaf or is_sharding_leaf
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
    carries its sharding (xform/primitives/sharding_rules.py)."""
    if len(buf.sharding.device_set) > 1 or isinstance(buf.sharding, impl.NamedSharding):
        return ShardedArray(typed_aval(buf.sharding, aval), None, buf)  # (a mesh of one, maybe)
    return Array(aval, None, buf)


def leaf_buffer(x):
    if isinstance(x, Array) and not isinstance(x, Tracer):
        return x._buf
    if type(x) is runtime.BufferType:
        return x
    return None


def put_leaf(x, sharding, aval=None):
    """Concrete ``x`` as a global device array laid out as ``sharding``: device to device
    when it is already on the mesh's devices, else through the host."""
    buf = leaf_buffer(x)
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
    buf = leaf_buffer(x)
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
    key = (tuple(in_s), tuple(out_s), open_outs)
    program = entry.partitioned.get(key)
    if program is None:  # checked once per signature and shardings
        for s, a in zip(in_s[n_consts:], avals, strict=True):
            if s is not None:
                _check_divisible(s, a, f"jit of {name}")
        for s, a in zip(out_s, entry.jaxpr.out_avals, strict=True):
            if s is not None:
                _check_divisible(s, a, f"jit of {name} (out_shardings)")
        program = entry.partitioned[key] = _Partitioned(
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
        "partitioned",
        "__weakref__",
    )

    def __init__(self, closed):
        self.jaxpr, self.consts = convert_constvars(closed)
        self.const_avals = [core.get_aval(c) for c in self.consts]
        self.out_tree = pytree.tree_structure([0] * len(closed.out_avals))
        self.donated = None
        self.keep_unused = False
        self.partitioned = {}  # as a jit cache entry's: its partitioned programs

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


dispatch.array_rules[ShardedArray] = apply_partitioned  # run partitioned, never gathered

"""Vectorization: the batching interpreter behind ``vmap``.

A ``BatchTracer`` carries ``val``, an array with one extra dimension, and ``batch_dim``, the
position of that dimension in ``val``. A value that does not vary along the mapped axis is
never wrapped (its dimension is ``not_mapped``), so unbatched results stay unbatched: an
operation whose operands are all unmapped is handed to the parent trace as it is.

Rule signature: ``batch_rules[prim](axis, args, dims, **params) -> (outs, out_dims)``,
lists; ``axis`` is the ``AxisData`` (name and size) of the vmap, ``dims[i]`` is the batch
dimension of ``args[i]`` or ``not_mapped``, and at least one operand is mapped. Rules run with
the parent trace current, so the (batched) operations they bind go to the enclosing
interpreter. A rule may return outputs batched at any dimension; most put it at 0.

The axis name is recorded so that collectives (``psum`` over the vmapped axis) can be
batched: a primitive in ``axis_rules`` is handed to its rule even when nothing it receives is
mapped (``axis_index`` has no operands at all; a custom-derivative call's function may close
over mapped values).

Registrars: ``defvectorized`` (the op acts on each element or row independently, wherever
the batch dimension sits), ``defbroadcasting`` (n-ary elementwise ops, mixing mapped and
unmapped operands), ``defaxes`` (one-operand ops whose ``axes``/``axis`` param names the
dimensions they work along: reductions, cumulative ops). They are the public ones:
``xform.extend.batching`` hands them on unchanged, and the built-in primitives use them.
"""

import weakref

from xform import core
from xform.core import ShapedArray, Tracer, eval_jaxpr, get_aval
from xform.errors import MissingRuleError
from xform.interpret.staging import convert_constvars, trace_to_jaxpr

not_mapped = None
batch_rules = {}
axis_rules = {}  # rule(axis, args, dims, **params), called even with no mapped arg

# Filled by the structural family ("transpose", "broadcast_in_dim", "reshape"), which imports
# this module: the helpers below need them and cannot import the family.
batch_ops = {}


class AxisData:
    """What a vmap maps over: its size, (optional) name, and ``spmd_name``: the mesh axes
    (a tuple) its dimension is split over in a partitioned program (vmap's
    ``spmd_axis_name``), or None."""

    __slots__ = ("name", "size", "spmd_name")

    def __init__(self, name, size, spmd_name=None):
        self.name = name
        self.size = size
        self.spmd_name = spmd_name

    def __repr__(self):
        return f"AxisData(name={self.name!r}, size={self.size}, spmd_name={self.spmd_name!r})"


class BatchTracer(Tracer):
    __slots__ = ("val", "batch_dim", "_aval")

    def __init__(self, trace, val, batch_dim):
        self._trace = trace
        self.val = val
        self.batch_dim = batch_dim
        self._aval = None

    @property
    def aval(self):
        aval = self._aval
        if aval is None:
            aval = self._aval = _unbatched_aval(self.val, self.batch_dim)
        return aval

    def __repr__(self):  # as JAX's: the example's type and the batch's
        return f"VmapTracer(aval={self.aval}, batched={get_aval(self.val)})"


class BatchTrace(core.Trace):
    __slots__ = ("parent", "axis", "alive")
    name = "vectorizing with vmap"

    def __init__(self, parent, axis):
        self.parent = parent
        self.axis = axis
        self.alive = True

    # A tracer is this trace's if it is of this vmap (its axis): a rule that runs a function
    # in a vmap of its own (a custom rule closing over the vmap's values) sees them as mapped.
    def to_val_dim(self, x):
        if isinstance(x, BatchTracer) and x._trace.axis is self.axis:
            return x.val, x.batch_dim
        return x, not_mapped

    def process_primitive(self, prim, args, params):
        vals, dims, mapped = [], [], False
        for x in args:
            if isinstance(x, BatchTracer) and x._trace.axis is self.axis:
                vals.append(x.val)
                dims.append(x.batch_dim)
                mapped = True
            else:
                vals.append(x)
                dims.append(not_mapped)
        rule = axis_rules.get(prim)
        if rule is None:
            # Nothing here varies along the axis (unless a sub-program's collective names it).
            if not mapped and (self.axis.name is None or not _names_axis(params, self.axis.name)):
                return self.parent.process_primitive(prim, vals, params)
            rule = batch_rules.get(prim)
            if rule is None:
                raise MissingRuleError(
                    f"primitive '{prim.name}' has no batching rule, so it "
                    "cannot be vectorized with vmap"
                )
        try:
            with core.set_current_trace(self.parent):
                outs, out_dims = rule(self.axis, vals, dims, **params)
        except (TypeError, ValueError):
            # Bad input: let the user see the error for the shapes they wrote, not batched ones.
            core.abstract_eval(
                prim, *[x.aval if isinstance(x, Tracer) else get_aval(x) for x in args], **params
            )
            raise
        return [
            o if d is not_mapped else BatchTracer(self, o, d)
            for o, d in zip(outs, out_dims, strict=True)
        ]


_axis_names = weakref.WeakKeyDictionary()  # jaxpr -> the axis names its collectives use


def axis_names(jaxpr):
    """The axis names the collectives of ``jaxpr`` (and its sub-jaxprs) work across, less
    those a nested pmap binds itself."""
    names = _axis_names.get(jaxpr)
    if names is None:
        names = set()
        for eqn in jaxpr.eqns:
            if eqn.primitive in axis_rules:
                names.update(eqn.params.get("axes", ()))
            inner = set().union(*map(axis_names, core.subjaxprs(eqn.params)))
            names.update(inner - {eqn.params.get("axis_name")})
        names = _axis_names[jaxpr] = frozenset(names)
    return names


def _names_axis(params, name):
    return any(name in axis_names(j) for j in core.subjaxprs(params))


def batch_flat(fun, axis, args, in_dims):
    """Run ``fun`` (flat lists in and out) on ``args`` mapped along ``in_dims`` over ``axis``;
    the outputs as ``(vals, dims)``, each dim where that output's batch dimension is, or
    ``not_mapped``. Leaves the parent trace current, to bind what follows on the values."""
    trace = BatchTrace(core.trace_state.trace, axis)
    tracers = [
        x if d is not_mapped else BatchTracer(trace, x, d)
        for x, d in zip(args, in_dims, strict=True)
    ]
    try:
        with core.set_current_trace(trace), core.extend_axis_env(axis.name, axis.size):
            outs = fun(*tracers)
        pairs = [trace.to_val_dim(x) for x in outs]
    finally:
        trace.alive = False
    return [v for v, _ in pairs], [d for _, d in pairs]


def vmap_flat(fun, axis, args, in_dims, out_dims):
    """``fun`` (flat lists in and out) mapped over ``axis``: ``args[i]`` is mapped along
    ``in_dims[i]`` (or not at all), output ``j`` is returned mapped along ``out_dims[j]``
    (``not_mapped``: it must not vary along the axis). ``out_dims`` may be a function of the
    number of outputs, for callers that learn it only after tracing."""
    vals, dims = batch_flat(fun, axis, args, in_dims)
    if callable(out_dims):
        out_dims = out_dims(len(vals))
    results = []
    for i, (val, dim, want) in enumerate(zip(vals, dims, out_dims, strict=True)):
        if want is not_mapped:
            if dim is not not_mapped:
                raise ValueError(
                    f"vmap has mapped output (output {i}, of type "
                    f"{_unbatched_aval(val, dim).str_short()}) but out_axes is None for "
                    "it: an output that varies along the mapped axis needs an out axis"
                )
            results.append(val)
        else:
            results.append(move_or_broadcast(val, dim, want, axis.size))
    return results


_batched_jaxprs = weakref.WeakKeyDictionary()  # jaxpr -> {(dims, force, size, name): batched}


def batch_jaxpr(closed, axis, dims, force=None, vary=frozenset()):
    """A sub-jaxpr (a jit body, a branch, a loop body) batched along ``dims``, once per
    body, dims and axis (cached). Returns ``(jaxpr, consts, out_batched)``: a const-free
    jaxpr taking ``consts`` then the batched inputs, and per output whether it is batched (at
    0) or left unbatched; outputs marked in ``force`` are batched even when they do not vary
    (broadcast), for rules whose outputs must agree (loop carries, branches). The batched
    inputs also vary over manual axes ``vary`` (a typed shard_map body whose batch dimension
    is split over them)."""
    force = (False,) * len(closed.out_avals) if force is None else tuple(force)
    cache = _batched_jaxprs.setdefault(closed.jaxpr, {})
    key = (tuple(dims), force, axis.size, axis.name, vary)
    hit = cache.get(key)
    if hit is not None:
        return hit
    in_avals = [batched_aval(a, d, axis.size) for a, d in zip(closed.in_avals, dims, strict=True)]
    if vary:
        in_avals = [
            a if d is not_mapped else a.update(vma=a.vma | vary)
            for a, d in zip(in_avals, dims, strict=True)
        ]
    out_batched = []

    def batched_fun(*args):
        vals, out_dims = batch_flat(
            lambda *xs: eval_jaxpr(closed.jaxpr, closed.consts, *xs), axis, args, dims
        )
        out_batched[:] = [d is not not_mapped or f for d, f in zip(out_dims, force, strict=True)]
        return [
            move_or_broadcast(v, d, 0, axis.size) if b else v
            for v, d, b in zip(vals, out_dims, out_batched, strict=True)
        ]

    jaxpr, consts = convert_constvars(
        trace_to_jaxpr(batched_fun, in_avals, "vectorizing a sub-program")
    )
    hit = cache[key] = (jaxpr, consts, tuple(out_batched))
    return hit


def _unbatched_aval(val, dim):
    """An example's type: ``val``'s without dimension ``dim`` (and its sharding entry, in
    explicit sharding mode, as JAX's)."""
    full = get_aval(val)
    s = full.sharding
    if s is not None:
        s = type(s)(s.mesh, type(s.spec)(*s.spec[:dim], *s.spec[dim + 1 :]))
    return ShapedArray(
        full.shape[:dim] + full.shape[dim + 1 :], full.dtype, full.weak_type, s, full.vma
    )


# --------------------------------------------------------------------------- helpers for rules


def moveaxis(x, src, dst):
    """``x`` with its dimension ``src`` moved to position ``dst``."""
    if src == dst:
        return x
    ndim = get_aval(x).ndim
    perm = [d for d in range(ndim) if d != src]
    perm.insert(dst, src)
    return batch_ops["transpose"](x, tuple(perm))


def broadcast_batch(x, size, dim):
    """``x``, unmapped, given a batch dimension of ``size`` at ``dim`` (every entry ``x``)."""
    aval = get_aval(x)
    shape = aval.shape[:dim] + (size,) + aval.shape[dim:]
    kept = tuple(d for d in range(len(shape)) if d != dim)
    return batch_ops["broadcast_in_dim"](x, shape, kept)


def move_or_broadcast(x, dim, want, size):
    """``x`` (batched at ``dim`` or ``not_mapped``) batched at ``want``."""
    if dim is not_mapped:
        return broadcast_batch(x, size, want)
    return moveaxis(x, dim, want)


def batch_at_front(x, dim, size):
    """``x`` with its batch dimension first, broadcast there if ``x`` is unmapped."""
    return move_or_broadcast(x, dim, 0, size)


def batched_aval(aval, dim, size):
    """The type of a value of type ``aval`` batched along ``dim`` with ``size`` entries."""
    if dim is not_mapped:
        return aval
    s = aval.sharding
    if s is not None:  # the batch dimension is not sharded (JAX's, with no spmd_axis_name)
        s = type(s)(s.mesh, type(s.spec)(*s.spec[:dim], None, *s.spec[dim:]))
    return ShapedArray(
        aval.shape[:dim] + (size,) + aval.shape[dim:], aval.dtype, aval.weak_type, s, aval.vma
    )


# --------------------------------------------------------------------------- registrars


def defvectorized(prim):
    """Rule for an op that works on each element (or along dims a param names, none of them
    the batch dimension) independently, with a single operand: apply it as is."""

    def rule(axis, args, dims, **params):
        outs = prim.bind(*args, **params)
        outs = outs if prim.multiple_results else [outs]
        return outs, [dims[0]] * len(outs)

    batch_rules[prim] = rule


def defbroadcasting(prim):
    """Rule for an n-ary elementwise op. Mapped operands get their batch dimension first;
    ``lax`` broadcasts rank-0 operands and same-rank size-1 dimensions, so an unmapped
    operand gains a leading 1 and a mapped operand of lower rank gains trailing 1s."""

    def rule(axis, args, dims, **params):
        avals = [get_aval(x) for x in args]
        shape, d = next(
            (a.shape, d) for a, d in zip(avals, dims, strict=True) if d is not not_mapped
        )
        if all(d2 == d and a.shape == shape for a, d2 in zip(avals, dims, strict=True) if a.shape):
            # the common case, as JAX's: operands of one shape and batch dimension, and
            # rank-0 ones (which lax broadcasts); the batch dimension stays where it is
            outs = prim.bind(*args, **params)
        else:
            rank = max(
                get_aval(x).ndim - (d is not not_mapped) for x, d in zip(args, dims, strict=True)
            )
            args = [_broadcastable(x, d, rank) for x, d in zip(args, dims, strict=True)]
            outs, d = prim.bind(*args, **params), 0
        outs = outs if prim.multiple_results else [outs]
        return outs, [d] * len(outs)

    batch_rules[prim] = rule


def defaxes(prim):
    """Rule for a one-operand op whose ``axes`` param (dims reduced away) or ``axis`` param
    (one dim, kept) names dims of its operand: the op runs on the batched operand with those
    dims shifted past the batch dim, which passes through (less the reduced dims before it)."""

    def rule(axis_data, args, dims, **params):
        (x,), (d,) = args, dims
        if "axes" in params:
            axes = params["axes"]
            params["axes"] = tuple(a + (a >= d) for a in axes)
            out_d = d - sum(a < d for a in axes)
        else:
            params["axis"] += params["axis"] >= d
            out_d = d
        outs = prim.bind(x, **params)
        outs = outs if prim.multiple_results else [outs]
        return outs, [out_d] * len(outs)

    batch_rules[prim] = rule


def _broadcastable(x, dim, rank):
    aval = get_aval(x)
    if dim is not_mapped:
        if not aval.shape:
            return x  # rank 0 broadcasts against anything
        return batch_ops["reshape"](x, (1,) * (rank + 1 - aval.ndim) + aval.shape)
    x = moveaxis(x, dim, 0)
    if aval.ndim - 1 < rank:
        shape = get_aval(x).shape
        x = batch_ops["reshape"](x, shape[:1] + (1,) * (rank + 1 - aval.ndim) + shape[1:])
    return x

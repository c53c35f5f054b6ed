"""``shard_map_p``: a body run once per device of a mesh on that device's blocks.

``shard_map[jaxpr, mesh, in_specs, out_specs, manual_axes, check_vma] *args``: operand ``i``
(a global array) is split into blocks as ``in_specs[i]`` says (rank kept, unlike pmap); the
body (a const-free closed jaxpr on block types) runs with the mesh's manual axes bound as
named axes, so the collectives (psum, all_gather, ppermute, ...) work over them; result
``j``'s blocks are put together as ``out_specs[j]`` says. Lowered as JAX lowers it, an
``sdy.manual_computation`` in a partitioned program (lowering/shard_map.py).

Differentiation follows JAX's rules: with ``check_vma`` the body is linearized and
transposed typed (the varying manual axes decide where sums go); without, a result
replicated over mesh axes its spec does not name has its cotangent divided by their size,
and an argument's cotangent is summed over the axes its spec does not name.
"""

import contextlib
import math
import weakref

from xform import core
from xform.core import Primitive, ShapedArray, abstract_eval_rules, eval_jaxpr
from xform.interpret import ad, batching, partial_eval, transpose, typed
from xform.interpret.batching import not_mapped
from xform.interpret.staging import convert_constvars, trace_to_jaxpr
from xform.primitives import collectives as coll
from xform.primitives.call import backward, jvp_jaxpr, split_jaxpr
from xform.primitives.collectives import psum_p, pvary_p
from xform.primitives.cond import cond_p
from xform.primitives.sharding import spec_names, typed_sharding_of
from xform.primitives.structural import broadcast, squeeze
from xform.primitives.while_loop import while_p

shard_map_p = Primitive("shard_map", multiple_results=True)


# --------------------------------------------------------------------------- blocks


def dim_sizes(mesh, spec, ndim):
    """How many blocks each dimension of a rank-``ndim`` array is split into."""
    return [
        math.prod(mesh.shape[n] for n in spec_names(spec[d])) if d < len(spec) else 1
        for d in range(ndim)
    ]


def block_aval(aval, mesh, spec, vma=frozenset()):
    """The type of a device's block of ``aval`` split as ``spec``, varying over ``vma``."""
    sizes = dim_sizes(mesh, spec, aval.ndim)
    return ShapedArray(
        tuple(n // k for n, k in zip(aval.shape, sizes, strict=True)),
        aval.dtype,
        aval.weak_type,
        vma=vma,
    )


def spec_vma(spec, manual_axes):
    """The manual axes a block split as ``spec`` varies over (JAX's in_specs typing)."""
    return frozenset(n for entry in spec for n in spec_names(entry) if n in manual_axes)


def global_aval(aval, mesh, spec):
    """The type of the result whose blocks (of type ``aval``) are put together as ``spec``:
    on a mesh with Explicit axes it carries that sharding, as JAX's."""
    sizes = dim_sizes(mesh, spec, aval.ndim)
    return ShapedArray(
        tuple(n * k for n, k in zip(aval.shape, sizes, strict=True)),
        aval.dtype,
        aval.weak_type,
        typed_sharding_of(mesh, spec, aval.ndim),
    )


def unmentioned(mesh, spec, manual_axes):
    """The manual axes ``spec`` does not name: those a value is replicated over."""
    named = {n for entry in spec for n in spec_names(entry)}
    return tuple(n for n in mesh.axis_names if n in manual_axes and n not in named)


@contextlib.contextmanager
def axis_env(mesh, manual_axes, check_vma=False):
    """The mesh's manual axes bound as named axes, for tracing a body; with ``check_vma``,
    typed as JAX's (the collectives give their results the axes they vary over)."""
    saved = coll.typed_axes.axes
    coll.typed_axes.axes = frozenset(manual_axes) if check_vma else frozenset()
    try:
        with contextlib.ExitStack() as stack:
            stack.enter_context(core.mesh_axis_order(mesh.axis_names))
            for name in mesh.axis_names:
                if name in manual_axes:
                    stack.enter_context(core.extend_axis_env(name, mesh.shape[name]))
            yield
    finally:
        coll.typed_axes.axes = saved


def _replicated_spec(spec):
    return type(spec)()


# --------------------------------------------------------------------------- vma types
# Staging types a body's equations (xform/interpret/staging.py calls these when an operand
# varies): results vary over the union of the operands' axes, the operands that vary over
# fewer get a ``pvary`` first (JAX's wrappers insert it: make_jaxpr shows it); collectives
# type their results themselves; a call, scan, while or cond takes its body's types.

typed.vma_typed_by_rule.update(
    {
        coll.psum_p,
        coll.pmax_p,
        coll.pmin_p,
        coll.ppermute_p,
        coll.all_gather_p,
        coll.psum_scatter_p,
        coll.all_to_all_p,
        coll.axis_index_p,
        coll.pbroadcast_p,
        pvary_p,
        coll.ragged_all_to_all_p,
    }
)
typed.vary = pvary_p


def _open(j):
    return j.jaxpr if isinstance(j, core.ClosedJaxpr) else j


def _cond_vma(avals, out_avals, params):
    # As JAX's: the branches' types, whatever the index's.
    vmas = [
        frozenset().union(*vs)
        for vs in zip(*([a.vma for a in b.out_avals] for b in params["branches"]), strict=True)
    ]
    return [a.update(vma=v) for a, v in zip(out_avals, vmas, strict=True)]


def _while_vma(avals, out_avals, params):
    vmas = [a.vma for a in _open(params["body_jaxpr"]).out_avals]
    return [a.update(vma=v) for a, v in zip(out_avals, vmas, strict=True)]


typed.vma_rules[cond_p] = _cond_vma
typed.vma_rules[while_p] = _while_vma


# --------------------------------------------------------------------------- abstract eval


def _shard_map_abstract_eval(*avals, jaxpr, mesh, in_specs, out_specs, manual_axes, check_vma):
    for k, (a, s, want) in enumerate(zip(avals, in_specs, jaxpr.in_avals, strict=True)):
        got = block_aval(a, mesh, s)
        if got.shape != want.shape or got.dtype != want.dtype:
            raise TypeError(
                f"shard_map: argument {k} of type {a.str_short()} split as {s} "
                f"gives blocks {got.str_short()}, but the body takes "
                f"{want.str_short()}"
            )
    return [global_aval(a, mesh, s) for a, s in zip(jaxpr.out_avals, out_specs, strict=True)]


abstract_eval_rules[shard_map_p] = _shard_map_abstract_eval


# --------------------------------------------------------------------------- jvp


def _shard_map_jvp(primals, tangents, *, jaxpr, mesh, in_specs, out_specs, manual_axes, check_vma):
    nonzeros = tuple(type(t) is not ad.Zero for t in tangents)
    with axis_env(mesh, manual_axes, check_vma):  # tangents vary as their primals
        body, consts, out_nonzeros = jvp_jaxpr(jaxpr, nonzeros)
    replicated = _replicated_spec(in_specs[0] if in_specs else out_specs[0])
    specs_in = (
        (replicated,) * len(consts)
        + tuple(in_specs)
        + tuple(s for s, nz in zip(in_specs, nonzeros, strict=True) if nz)
    )
    specs_out = tuple(out_specs) + tuple(
        s for s, nz in zip(out_specs, out_nonzeros, strict=True) if nz
    )
    outs = shard_map_p.bind(
        *consts,
        *primals,
        *[t for t in tangents if type(t) is not ad.Zero],
        jaxpr=body,
        mesh=mesh,
        in_specs=specs_in,
        out_specs=specs_out,
        manual_axes=manual_axes,
        check_vma=check_vma,
    )
    n = len(out_specs)
    primals_out, nz_tangents = outs[:n], iter(outs[n:])
    tangents_out = [
        next(nz_tangents) if nz else ad.Zero(ad.tangent_aval(ad.aval_of(p)))
        for p, nz in zip(primals_out, out_nonzeros, strict=True)
    ]
    return primals_out, tangents_out


ad.jvp_rules[shard_map_p] = _shard_map_jvp


# --------------------------------------------------------------------------- partial eval
# The known part runs as its own shard_map, as JAX's linearization: its residuals come out
# first, each device's block put together along dimension 0 over the manual axes it varies
# over (with check_vma; over all of them without), rank-0 ones as (1,); a residual that is a
# known input or a known result is not returned again, the staged part reads that instead.

_split = weakref.WeakKeyDictionary()  # jaxpr -> {(unknowns, axes): (known, unknown, ...)}


def _split_body(jaxpr, unknowns, mesh, manual_axes, check_vma):
    cache = _split.setdefault(jaxpr.jaxpr, {})
    key = (unknowns, manual_axes, check_vma)
    hit = cache.get(key)
    if hit is not None:
        return hit
    with axis_env(mesh, manual_axes, check_vma):  # each part keeps its types
        known, known_consts, unknown, out_unknowns, num_res = split_jaxpr(
            jaxpr, unknowns, "partially evaluating a shard_map body"
        )
        n_known_out = len(known.out_avals) - num_res
        res_avals = known.out_avals[n_known_out:]
        outvars, invars = known.jaxpr.outvars, known.jaxpr.invars
        # Where each residual comes from: ("in", i) a known input, ("out", j) a known result,
        # None computed (returned by the known part).
        forwarded = [
            next((("in", i) for i, w in enumerate(invars) if w is v), None)
            or next((("out", j) for j, w in enumerate(outvars[:n_known_out]) if w is v), None)
            for v in outvars[n_known_out:]
        ]

        def known_fun(*args):
            outs = eval_jaxpr(known.jaxpr, known.consts, *args)
            res = [
                r if r.aval.ndim else broadcast(r, (1,))
                for r, f in zip(outs[n_known_out:], forwarded, strict=True)
                if f is None
            ]
            return res + outs[:n_known_out]

        def unknown_fun(*args):
            res = [
                squeeze(r, (0,)) if f is None and not a.ndim else r
                for r, a, f in zip(args[:num_res], res_avals, forwarded, strict=True)
            ]
            return eval_jaxpr(unknown.jaxpr, unknown.consts, *res, *args[num_res:])

        res_in = [
            a if f is not None or a.ndim else ShapedArray((1,), a.dtype, a.weak_type, vma=a.vma)
            for a, f in zip(res_avals, forwarded, strict=True)
        ]
        known_body = convert_constvars(
            trace_to_jaxpr(known_fun, known.in_avals, "splitting a shard_map body")
        )
        unknown_body = convert_constvars(
            trace_to_jaxpr(
                unknown_fun, res_in + unknown.in_avals[num_res:], "splitting a shard_map body"
            )
        )
    hit = cache[key] = (known_body, known_consts, unknown_body, out_unknowns, res_in, forwarded)
    return hit


def _residual_spec(aval, mesh, manual_axes, check_vma, spec_type):
    """JAX's spec of a computed residual: dimension 0 over the axes it varies over."""
    over = aval.vma if check_vma else manual_axes
    names = tuple(n for n in mesh.axis_names if n in over)
    return spec_type(names) if names else spec_type()


def _shard_map_partial_eval(trace, args, params):
    jaxpr, mesh, manual_axes = params["jaxpr"], params["mesh"], params["manual_axes"]
    in_specs, out_specs, check_vma = params["in_specs"], params["out_specs"], params["check_vma"]
    unknowns = tuple(trace.is_unknown(x) for x in args)
    known_body, known_consts, unknown_body, out_unknowns, res_avals, forwarded = _split_body(
        jaxpr, unknowns, mesh, manual_axes, check_vma
    )
    replicated = _replicated_spec(in_specs[0])
    (kbody, kconsts), (ubody, uconsts) = known_body, unknown_body
    known_args = [x for x, u in zip(args, unknowns, strict=True) if not u]
    known_in = tuple(s for s, u in zip(in_specs, unknowns, strict=True) if not u)
    known_out = tuple(s for s, u in zip(out_specs, out_unknowns, strict=True) if not u)
    computed = [
        _residual_spec(a, mesh, manual_axes, check_vma, type(replicated))
        for a, f in zip(res_avals, forwarded, strict=True)
        if f is None
    ]
    body_in = [*known_consts, *known_args]
    body_in_specs = (replicated,) * len(known_consts) + known_in
    with core.set_current_trace(trace.parent):
        known_outs = shard_map_p.bind(
            *kconsts,
            *body_in,
            jaxpr=kbody,
            mesh=mesh,
            in_specs=(replicated,) * len(kconsts) + body_in_specs,
            out_specs=tuple(computed) + known_out,
            manual_axes=manual_axes,
            check_vma=check_vma,
        )
    computed_res, primal_outs = iter(known_outs[: len(computed)]), known_outs[len(computed) :]
    computed_specs = iter(computed)
    residuals, res_specs = [], []
    for f in forwarded:
        if f is None:
            residuals.append(next(computed_res))
            res_specs.append(next(computed_specs))
        elif f[0] == "in":
            residuals.append(body_in[f[1]])
            res_specs.append(body_in_specs[f[1]])
        else:
            residuals.append(primal_outs[f[1]])
            res_specs.append(known_out[f[1]])
    unknown_args = [x for x, u in zip(args, unknowns, strict=True) if u]
    unknown_in = tuple(s for s, u in zip(in_specs, unknowns, strict=True) if u)
    unknown_out = tuple(s for s, u in zip(out_specs, out_unknowns, strict=True) if u)
    staged_params = dict(
        jaxpr=ubody,
        mesh=mesh,
        in_specs=(replicated,) * len(uconsts) + tuple(res_specs) + unknown_in,
        out_specs=unknown_out,
        manual_axes=manual_axes,
        check_vma=check_vma,
    )
    out_avals = [global_aval(a, mesh, s) for a, s in zip(ubody.out_avals, unknown_out, strict=True)]
    unknown_outs = iter(
        trace.stage(shard_map_p, [*uconsts, *residuals, *unknown_args], staged_params, out_avals)
    )
    known_outs = iter(primal_outs)
    return [next(unknown_outs) if u else next(known_outs) for u in out_unknowns]


partial_eval.partial_eval_rules[shard_map_p] = _shard_map_partial_eval


# --------------------------------------------------------------------------- transpose
# With check_vma the body is transposed typed, as JAX's: a sum of a varying value
# (psum_invariant) transposes to pvary and pvary to the sum, so cotangents cross the
# boundary as they are. Without it (and for pmap-style bodies), a result replicated over
# axes its spec does not name has its cotangent divided by their size, and an argument's
# cotangent is summed over the axes its spec does not name.

_transposed = weakref.WeakKeyDictionary()  # jaxpr -> {(linear, specs): (jaxpr, consts)}


def _transposed_body(jaxpr, linear, mesh, in_specs, manual_axes, check_vma):
    cache = _transposed.setdefault(jaxpr.jaxpr, {})
    key = (linear, in_specs, manual_axes, check_vma)
    hit = cache.get(key)
    if hit is not None:
        return hit
    in_avals = jaxpr.in_avals
    value_avals = [a for a, lin in zip(in_avals, linear, strict=True) if not lin]
    n_cts = len(jaxpr.out_avals)

    def transposed(*args):  # the results' cotangents, then the values
        cts_in = backward(jaxpr, linear, args[n_cts:] + args[:n_cts])
        outs = []
        for ct, lin, spec, aval in zip(cts_in, linear, in_specs, in_avals, strict=True):
            if not lin:
                continue
            dense = ad.instantiate(ct if ct is not None else ad.Zero(ad.tangent_aval(aval)))
            axes = () if check_vma else unmentioned(mesh, spec, manual_axes)
            outs.append(psum_p.bind(dense, axes=axes) if axes else dense)
        return outs

    with axis_env(mesh, manual_axes, check_vma):
        closed = trace_to_jaxpr(
            transposed, list(jaxpr.out_avals) + value_avals, "transposing a shard_map body"
        )
    hit = cache[key] = convert_constvars(closed)
    return hit


def _shard_map_transpose(cts, *invals, jaxpr, mesh, in_specs, out_specs, manual_axes, check_vma):
    linear = tuple(transpose.is_undefined(x) for x in invals)
    cts_in = []
    for ct, spec, aval in zip(cts, out_specs, jaxpr.out_avals, strict=True):
        dense = ad.instantiate(
            ct if ct is not None else ad.Zero(ad.tangent_aval(global_aval(aval, mesh, spec)))
        )
        size = (
            1
            if check_vma
            else math.prod(mesh.shape[n] for n in unmentioned(mesh, spec, manual_axes))
        )
        cts_in.append(dense / size if size != 1 else dense)
    body, consts = _transposed_body(jaxpr, linear, mesh, tuple(in_specs), manual_axes, check_vma)
    values = [x for x in invals if not transpose.is_undefined(x)]
    value_specs = tuple(s for s, lin in zip(in_specs, linear, strict=True) if not lin)
    replicated = _replicated_spec(in_specs[0])
    outs = iter(
        shard_map_p.bind(
            *consts,
            *cts_in,
            *values,
            jaxpr=body,
            mesh=mesh,
            in_specs=(replicated,) * len(consts) + tuple(out_specs) + value_specs,
            out_specs=tuple(s for s, lin in zip(in_specs, linear, strict=True) if lin),
            manual_axes=manual_axes,
            check_vma=check_vma,
        )
    )
    return [next(outs) if lin else None for lin in linear]


transpose.transpose_rules[shard_map_p] = _shard_map_transpose


# --------------------------------------------------------------------------- batching


def _insert(spec, d, entry):
    """``spec`` of a block batched at dimension ``d`` split as ``entry`` (JAX's batch_spec)."""
    entries = list(spec) + [None] * max(0, d - len(spec))
    entries.insert(d, entry)
    return type(spec)(*entries)


def _shard_map_batch(axis, args, dims, *, jaxpr, mesh, in_specs, out_specs, manual_axes, check_vma):
    # With vmap's spmd_axis_name the batch dimension is split over those mesh axes: each
    # device's body maps over its share of the batch.
    spmd = axis.spmd_name
    entry = None if spmd is None else spmd[0] if len(spmd) == 1 else spmd
    if spmd is not None:
        for what, specs in (("in_specs", in_specs), ("out_specs", out_specs)):
            if set(spmd) & {n for s in specs for e in s for n in spec_names(e)}:
                raise ValueError(f"vmap spmd_axis_name cannot appear in shard_map {what}")
        axis = batching.AxisData(
            axis.name, axis.size // math.prod(mesh.shape[n] for n in spmd), spmd
        )
    vary = frozenset(spmd) if spmd is not None and check_vma else frozenset()
    with axis_env(mesh, manual_axes, check_vma):  # batching keeps what varies
        body, consts, out_batched = batching.batch_jaxpr(jaxpr, axis, dims, vary=vary)
    replicated = _replicated_spec(in_specs[0] if in_specs else out_specs[0])
    specs_in = (replicated,) * len(consts) + tuple(
        s if d is not_mapped else _insert(s, d, entry) for s, d in zip(in_specs, dims, strict=True)
    )
    specs_out = tuple(
        _insert(s, 0, entry) if b else s for s, b in zip(out_specs, out_batched, strict=True)
    )
    outs = shard_map_p.bind(
        *consts,
        *args,
        jaxpr=body,
        mesh=mesh,
        in_specs=specs_in,
        out_specs=specs_out,
        manual_axes=manual_axes,
        check_vma=check_vma,
    )
    return outs, [0 if b else not_mapped for b in out_batched]


batching.batch_rules[shard_map_p] = _shard_map_batch

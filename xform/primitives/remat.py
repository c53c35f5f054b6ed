"""Rematerialization: the ``checkpoint`` call primitive behind ``xform.checkpoint``.

``remat2[jaxpr, prevent_cse, differentiated, policy] *args`` (JAX's name) runs a const-free closed
jaxpr, like ``jit``; values the function closed over are its leading operands. What makes it
differ from a plain call is its partial evaluation: when it is linearized, the known (primal)
part runs now, but the unknown (tangent) part is staged as another ``checkpoint`` that
*recomputes* the primal values it needs from the call's inputs instead of taking them as
residuals. Only values the ``policy`` marks saveable are kept: ``policy(prim, *avals_in,
**params) -> bool`` (or ``Saveable``/``Recompute``/``Offloadable``) is asked per primal
equation (``None`` saves nothing), inside the body's scans and jits too.

``name[name] x`` (``checkpoint_name``) is the identity; it marks values for the policies that
save by name.

``differentiated`` is True on the checkpoints made by differentiation (the JVP'd, staged and
transposed ones). Lowering puts their inputs behind a ``stablehlo.optimization_barrier`` when
``prevent_cse`` is set, so XLA cannot merge the recomputation with the forward pass it
repeats; an undifferentiated checkpoint lowers to its body alone, as in JAX.

The public function (``checkpoint``/``remat``) and the policies are in ``xform/api/remat.py``.
"""

import typing
import weakref

import numpy as np

from xform import dtypes, pytree
from xform.core import (
    ClosedJaxpr,
    Jaxpr,
    JaxprEqn,
    Primitive,
    Var,
    abstract_eval_rules,
    eager_rules,
    eval_jaxpr,
    eval_trace,
    set_current_trace,
)
from xform.interpret import ad, batching, dce, partial_eval, transpose
from xform.interpret.staging import convert_constvars, trace_to_jaxpr
from xform.primitives.base import standard_primitive

# The JVP and transpose rules rewrite the body exactly as ``jit``'s do (and share their
# caches): only the primitive they bind and its params differ.
from xform.primitives.call import call_abstract_eval, call_jvp, transposed_jaxpr
from xform.primitives.elementwise import reduce_precision_p

__all__ = ["checkpoint_name", "Offloadable", "Recompute", "Saveable"]

remat_p = Primitive("remat2", multiple_results=True)  # (JAX's checkpoint primitive)


def _remat_abstract_eval(*avals, jaxpr, prevent_cse, differentiated, policy):
    return call_abstract_eval("checkpoint", avals, jaxpr)


abstract_eval_rules[remat_p] = _remat_abstract_eval


# --------------------------------------------------------------------------- eager


def _remat_eager(*args, jaxpr, prevent_cse, differentiated, policy):
    # Eagerly there is nothing to save or recompute: the body's equations run one by one
    # (each on the eager path), which also keeps an eager call free of XLA compiles.
    with set_current_trace(eval_trace):
        return eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, *args)


eager_rules[remat_p] = _remat_eager


# --------------------------------------------------------------------------- jvp


def _remat_jvp(primals, tangents, *, jaxpr, prevent_cse, differentiated, policy):
    return call_jvp(
        jaxpr,
        primals,
        tangents,
        lambda body, operands, *_: remat_p.bind(
            *operands, jaxpr=body, prevent_cse=prevent_cse, differentiated=True, policy=policy
        ),
    )


ad.jvp_rules[remat_p] = _remat_jvp


# --------------------------------------------------------------------------- partial eval
# The body is split as for ``jit`` (partial_eval_jaxpr), giving a known jaxpr K (known
# inputs -> known outputs, residuals) and an unknown one U (residuals, unknown inputs ->
# unknown outputs). Then the residuals are not taken from K: the staged checkpoint reruns
# K's equations on the known inputs to remake them, except the outputs of the equations the
# policy saves, which K hands over. Dead-code elimination trims both sides: K computes only
# the known outputs and the saved values, the rerun only what U reads.

# body jaxpr -> {(unknowns, policy): split}
_splits = weakref.WeakKeyDictionary()


class _Split:
    """How a checkpoint splits for one pattern of unknown inputs (see ``_remat_split``)."""

    __slots__ = (
        "known",
        "known_consts",
        "staged",
        "staged_consts",
        "out_unknowns",
        "num_known_out",
        "staged_known",
    )

    def __init__(
        self, known, known_consts, staged, staged_consts, out_unknowns, num_known_out, staged_known
    ):
        self.known = known  # Jaxpr: known consts, known inputs -> known outputs, saved values
        self.known_consts = known_consts
        self.staged = staged  # ClosedJaxpr: consts, saved, known inputs read, unknowns -> outs
        self.staged_consts = staged_consts
        self.out_unknowns = out_unknowns
        self.num_known_out = num_known_out
        self.staged_known = staged_known  # a bool per known const and known input: read?


class RecomputeType:
    """What a policy returns to recompute an equation's outputs (as ``False`` does)."""

    def __repr__(self):
        return "Recompute"


class SaveableType:
    """What a policy returns to save an equation's outputs (as ``True`` does)."""

    def __repr__(self):
        return "Saveable"


Recompute = RecomputeType()
Saveable = SaveableType()


class Offloadable(typing.NamedTuple):
    """What a policy returns to save an equation's outputs in another memory (``src`` to
    ``dst``, e.g. ``"device"`` to ``"pinned_host"``). xform has no memory kinds yet: such
    values are saved where they are, as ``Saveable`` ones."""

    src: str
    dst: str


def _saveable(policy, eqn):
    if policy is None:
        return False
    choice = policy(eqn.primitive, *[x.aval for x in eqn.invars], **eqn.params)
    if isinstance(choice, (bool, np.bool_)):
        return bool(choice)
    if isinstance(choice, (SaveableType, Offloadable)):
        return True
    if isinstance(choice, RecomputeType):
        return False
    raise TypeError(
        f"checkpoint policy {policy!r} returned {choice!r} for the primitive "
        f"'{eqn.primitive.name}': a policy must return a bool, Saveable, "
        "Recompute or an Offloadable"
    )


# A policy also chooses what is saved inside the loops and jitted calls of the body, as in
# JAX: their bodies become checkpoints with the same policy, so splitting them (their own
# partial-evaluation rules) keeps only what the policy saves as their residuals, and those
# residuals are saved rather than recomputed by rerunning the loop or call.
_POLICY_INSIDE = frozenset({"scan", "jit"})


def _policy_inside(closed, policy):
    """``closed`` with the bodies of its scans and jits made checkpoints under ``policy``."""
    if policy is None or not any(e.primitive.name in _POLICY_INSIDE for e in closed.jaxpr.eqns):
        return closed
    jaxpr = closed.jaxpr
    eqns = []
    for eqn in jaxpr.eqns:
        body = eqn.params.get("jaxpr")
        if eqn.primitive.name in _POLICY_INSIDE and isinstance(body, ClosedJaxpr):
            params = {**eqn.params, "jaxpr": _as_checkpoint(body, policy)}
            eqns.append(JaxprEqn(eqn.primitive, eqn.invars, eqn.outvars, params, eqn.source_info))
        else:
            eqns.append(eqn)
    return ClosedJaxpr(Jaxpr(jaxpr.constvars, jaxpr.invars, jaxpr.outvars, eqns), closed.consts)


def _as_checkpoint(body, policy):
    """A const-free body that runs ``body`` as a checkpoint under ``policy``."""

    def run(*args):
        return remat_p.bind(
            *args, jaxpr=body, prevent_cse=False, differentiated=False, policy=policy
        )

    wrapped, consts = convert_constvars(
        trace_to_jaxpr(run, body.in_avals, "checkpointing a loop body")
    )
    assert not consts
    return wrapped


def _remat_split(jaxpr, unknowns, policy):
    name = "partially evaluating a checkpointed function"
    known, known_consts, unknown, out_unknowns, num_res = partial_eval.partial_eval_jaxpr(
        _policy_inside(jaxpr, policy), unknowns, name
    )
    k = known.jaxpr
    num_known_out = len(k.outvars) - num_res
    # U reads the residuals (only those it uses: partial_eval_jaxpr keeps no others) and
    # every unknown input: the staged checkpoint's operands.
    u = unknown.jaxpr
    # The rerun of K: its equations less the saved ones, whose outputs become inputs.
    saved_vars, rerun_eqns = [], []
    for eqn in k.eqns:
        if _saveable(policy, eqn) or (policy is not None and eqn.primitive.name in _POLICY_INSIDE):
            saved_vars.extend(eqn.outvars)
        else:
            rerun_eqns.append(eqn)
    res_outvars = k.outvars[num_known_out:]
    rerun = Jaxpr([], saved_vars + k.invars, res_outvars, rerun_eqns)
    rerun, used = dce.dce_jaxpr(rerun, [True] * len(res_outvars), prune_inputs=True)
    saved = [v for v, r in zip(saved_vars, used[: len(saved_vars)], strict=True) if r]
    staged_known = tuple(used[len(saved_vars) :])
    # K itself, returning the known outputs and the saved values, no longer the residuals.
    known_out = Jaxpr([], k.invars, k.outvars[:num_known_out] + saved, k.eqns)
    known_out, _ = dce.dce_jaxpr(known_out, [True] * len(known_out.outvars))
    known_out = _round_saved(known_out, saved)

    num_in = len(rerun.invars)

    def staged_fun(*args):
        residuals = eval_jaxpr(rerun, [], *args[:num_in])
        return eval_jaxpr(u, [], *residuals, *args[num_in:])

    in_avals = [v.aval for v in rerun.invars] + unknown.in_avals[num_res:]
    staged, staged_consts = convert_constvars(trace_to_jaxpr(staged_fun, in_avals, name))
    return _Split(
        known_out, known_consts, staged, staged_consts, out_unknowns, num_known_out, staged_known
    )


def _round_saved(jaxpr, saved):
    """``jaxpr`` with each saved float value that its own equations also read passed through
    ``reduce_precision`` to its dtype, as JAX does (its PR 22244): XLA may keep more precision
    inside a fusion than a stored value has, and the forward pass and the backward pass
    (which reads the stored value) must see the same number."""
    read = {x for e in jaxpr.eqns for x in e.invars if isinstance(x, Var)}
    targets = {v for v in saved if v in read and dtypes.is_inexact(v.aval.dtype)}
    if not targets:
        return jaxpr
    eqns = []
    for eqn in jaxpr.eqns:
        hits = [v for v in eqn.outvars if v in targets]
        if not hits or (
            eqn.primitive is reduce_precision_p
            and eqn.params == _finfo_bits(eqn.outvars[0].aval.dtype)
        ):
            eqns.append(eqn)
            continue
        fresh = {v: Var(v.aval) for v in hits}
        eqns.append(
            JaxprEqn(
                eqn.primitive,
                eqn.invars,
                [fresh.get(v, v) for v in eqn.outvars],
                eqn.params,
                eqn.source_info,
            )
        )
        eqns += [
            JaxprEqn(
                reduce_precision_p, [fresh[v]], [v], _finfo_bits(v.aval.dtype), eqn.source_info
            )
            for v in hits
        ]
    return Jaxpr(jaxpr.constvars, jaxpr.invars, jaxpr.outvars, eqns)


def _finfo_bits(dtype):
    info = dtypes.finfo(dtype)
    return {"exponent_bits": int(info.nexp), "mantissa_bits": int(info.nmant)}


def _remat_partial_eval(trace, args, params):
    jaxpr, policy = params["jaxpr"], params["policy"]
    unknowns = tuple(trace.is_unknown(x) for x in args)
    cache = _splits.setdefault(jaxpr.jaxpr, {})
    split = cache.get((unknowns, policy))
    if split is None:
        split = cache[(unknowns, policy)] = _remat_split(jaxpr, unknowns, policy)
    known_in = split.known_consts + [x for x, u in zip(args, unknowns, strict=True) if not u]
    # The known part runs now, inlined into the enclosing computation, as JAX does.
    with set_current_trace(trace.parent):
        outs = eval_jaxpr(split.known, [], *known_in)
    known_outs, saved = outs[: split.num_known_out], outs[split.num_known_out :]
    unknown_outs = iter([])
    if any(split.out_unknowns):
        operands = [
            *split.staged_consts,
            *saved,
            *[x for x, r in zip(known_in, split.staged_known, strict=True) if r],
            *[x for x, u in zip(args, unknowns, strict=True) if u],
        ]
        staged_params = {**params, "jaxpr": split.staged, "differentiated": True}
        unknown_outs = iter(trace.stage(remat_p, operands, staged_params, split.staged.out_avals))
    known_outs = iter(known_outs)
    return [next(unknown_outs) if u else next(known_outs) for u in split.out_unknowns]


partial_eval.partial_eval_rules[remat_p] = _remat_partial_eval


# --------------------------------------------------------------------------- transpose
# The transposed body runs the non-linear part (the recomputation) forward, then the
# backward pass of the linear part: it stays a checkpoint, so its recomputation keeps its
# optimization barrier.


def _remat_transpose(cts, *invals, jaxpr, prevent_cse, differentiated, policy):
    linear = tuple(transpose.is_undefined(x) for x in invals)
    nonzero = tuple(type(ct) is not ad.Zero for ct in cts)
    body, consts = transposed_jaxpr(jaxpr, linear, nonzero)
    values = [x for x in invals if not transpose.is_undefined(x)]
    given = [ct for ct in cts if type(ct) is not ad.Zero]
    cts_in = iter(
        remat_p.bind(
            *consts,
            *values,
            *given,
            jaxpr=body,
            prevent_cse=prevent_cse,
            differentiated=True,
            policy=policy,
        )
    )
    return [next(cts_in) if lin else None for lin in linear]


transpose.transpose_rules[remat_p] = _remat_transpose


# --------------------------------------------------------------------------- batching


def _remat_batch(axis, args, dims, *, jaxpr, prevent_cse, differentiated, policy):
    body, consts, out_batched = batching.batch_jaxpr(jaxpr, axis, dims)
    outs = remat_p.bind(
        *consts,
        *args,
        jaxpr=body,
        prevent_cse=prevent_cse,
        differentiated=differentiated,
        policy=policy,
    )
    return outs, [0 if b else batching.not_mapped for b in out_batched]


batching.batch_rules[remat_p] = _remat_batch


# --------------------------------------------------------------------------- dead code
dce.dce_rules[remat_p] = dce.dce_call


# --------------------------------------------------------------------------- name
# ``name[name] x`` is the identity; it marks ``x`` for the name-based checkpoint policies
# (``save_only_these_names`` & co), which see the equation in a checkpoint's primal part.
# As in JAX the tangent is not named: only primal values are ever saved by name.


def checkpoint_name(x, name):
    """``x`` unchanged, its arrays named ``name`` for the checkpoint policies that save by
    name (``xform.checkpoint_policies.save_only_these_names`` and the like).

    Outside ``checkpoint`` this is the identity. ``x`` may be a pytree; ``name`` is usually a
    string (any hashable value is accepted, as in JAX).
    """
    leaves, tree = pytree.tree_flatten(x)
    return pytree.tree_unflatten(tree, [name_p.bind(leaf, name=name) for leaf in leaves])


def _name_abstract_eval(aval, *, name):
    return [aval]


name_p = standard_primitive("name", _name_abstract_eval, host_impl=lambda x, *, name: [x])


def _name_jvp(primals, tangents, *, name):
    return [name_p.bind(primals[0], name=name)], [tangents[0]]


ad.jvp_rules[name_p] = _name_jvp


def _name_transpose(ct, x, *, name):
    return [ct]


transpose.transpose_rules[name_p] = _name_transpose
batching.defvectorized(name_p)

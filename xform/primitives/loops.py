"""Loops: ``while_loop``, ``fori_loop``, ``scan`` and ``map``, as two primitives.

``while[cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts] *cond_consts *body_consts *carry``
runs ``carry = body(*body_consts, *carry)`` while ``cond(*cond_consts, *carry)`` holds.

``scan[jaxpr, num_consts, num_carry, length, reverse, unroll, linear] *consts *init *xs`` runs
``carry, ys[i] = jaxpr(*consts, *carry, *xs[i])`` for ``i`` in ``range(length)`` (backwards
with ``reverse``) and returns the last carry and the stacked ``ys``. ``linear`` marks the
operands the body is linear in (the tangent operands of a differentiated scan).

The sub-jaxprs are const-free ClosedJaxprs: what the Python bodies close over (constants,
tracers of enclosing transformations) are the leading operands, so every interpreter sees
them. Each Python body is traced once per call; every rule transforms the traced body once
and caches the result per body jaxpr, as the ``jit`` call primitive does (``call.py``).

Reverse mode: a differentiated ``scan`` splits (partial evaluation) into a known scan that
also emits the residuals its tangent part needs, stacked per iteration, and a linear scan;
the linear scan transposes to a scan running the other way. ``while_loop`` has no transpose
(its trip count is unknown when the program is built), as in JAX.
"""

import operator
import weakref

import numpy as np

from xform import config, core, dtypes, pytree
from xform.core import (
    ClosedJaxpr,
    Jaxpr,
    Literal,
    ShapedArray,
    Tracer,
    Var,
    eager_rules,
    eval_jaxpr,
    eval_trace,
    get_aval,
    is_concrete_array,
    set_current_trace,
)
from xform.errors import ConcretizationTypeError
from xform.interpret import ad, batching, dce, partial_eval, transpose
from xform.interpret.batching import not_mapped
from xform.interpret.staging import convert_constvars, trace_to_jaxpr
from xform.primitives.base import canonicalize_axis, standard_primitive
from xform.primitives.elementwise import (
    add,
    convert_element_type,
    convert_element_type_p,
    convert_folding_constants,
    lt,
    select_n,
)
from xform.primitives.indexing import index_in_dim, slice_in_dim
from xform.primitives.reductions import reduce_or
from xform.primitives.structural import (
    broadcast_in_dim,
    concatenate,
    expand_dims,
    reshape,
    rev,
)

__all__ = ["associative_scan", "fori_loop", "map", "scan", "while_loop"]


# --------------------------------------------------------------------------- tracing bodies


def _same_type(a, b):
    """Types match up to weak typing (what a loop carry must keep)."""
    return a.shape == b.shape and a.dtype == b.dtype


def _same_types(xs, ys):
    return [_same_type(a, b) for a, b in zip(xs, ys, strict=True)]


def _trace_body(flat_fun, in_avals, name):
    """``flat_fun`` traced to a const-free jaxpr; returns ``(jaxpr, consts)``."""
    return convert_constvars(trace_to_jaxpr(flat_fun, in_avals, name))


def _promote_weak_carry(init, in_avals, out_avals):
    """A weakly typed initial carry whose body turns it into another dtype starts in that
    dtype instead (``fori_loop(0, n, lambda i, x: x + 0.5, 0)`` carries a float), as in JAX.
    Returns whether anything changed (the body is then traced again)."""
    changed = False
    for i, (a, b) in enumerate(zip(in_avals, out_avals, strict=True)):
        if a.weak_type and a.dtype != b.dtype:
            dtype, _ = dtypes.promote((a.dtype, True), (b.dtype, b.weak_type))
            init[i] = convert_element_type(init[i], dtype)
            changed = True
    return changed


def _same_carry(a, b):
    """A loop carry keeps its type, varying manual axes included (shard_map's check_vma)."""
    return _same_type(a, b) and a.vma == b.vma


def _carry_type_error(what, paths, in_avals, out_avals):
    diffs, fixes = [], []
    for p, a, b in zip(paths, in_avals, out_avals, strict=True):
        if _same_carry(a, b):
            continue
        vma_only = _same_type(a, b)
        short = not vma_only  # JAX's long dtypes where only the manual axes differ
        diffs.append(
            f"the input carry{p} has type {a.str_short(short)} but the "
            f"corresponding output carry component has type {b.str_short(short)}"
            + (", so the manual axis types do not match" if vma_only else "")
        )
        if vma_only and b.vma - a.vma:
            fixes.append(
                f"applying `xform.lax.pcast(..., {core.vma_order(b.vma - a.vma)}, "
                f"to='varying')` to the initial carry value corresponding to the "
                f"input carry{p}"
            )
    hint = f" This might be fixed by {'; '.join(fixes)}." if fixes else ""
    return TypeError(
        f"{what}, but they differ: "
        + "; ".join(diffs)
        + "."
        + hint
        + " Revise the function so that all output types match the "
        "corresponding input types."
    )


def _trace_carry_body(flat_fun, init, paths, extra_avals, name, what):
    """Trace a loop body whose first inputs and outputs are the carry (``init``, its leaves
    at ``paths``); weakly typed initial carries are promoted as the body's output dictates.
    Returns ``(jaxpr, consts, init)``; a carry whose type the body changes is a
    ``TypeError`` naming both types."""
    init = list(init)
    while True:  # at most once more per weakly typed carry: promotion makes it strong
        in_avals = [get_aval(x) for x in init]
        jaxpr, consts = _trace_body(flat_fun, in_avals + list(extra_avals), name)
        out_avals = jaxpr.out_avals[: len(init)]
        if not _promote_weak_carry(init, in_avals, out_avals):
            break
    if not all(_same_carry(a, b) for a, b in zip(in_avals, out_avals, strict=True)):
        raise _carry_type_error(what, paths, in_avals, out_avals)
    return jaxpr, consts, init


def _leaf_paths(tree):
    return [pytree.keystr(p) for p, _ in pytree.tree_flatten_with_path(tree)[0]]


def _check_tree(what, in_tree, out_tree):
    if in_tree != out_tree:
        raise TypeError(
            f"{what} must have the same pytree structure, but they differ: the "
            f"input carry is {in_tree} and the output carry is {out_tree}. Revise "
            "the function so that the carry output has the structure of the "
            "carry input."
        )


# --------------------------------------------------------------------------- while_loop


def while_loop(cond_fun, body_fun, init_val):
    """Run ``val = body_fun(val)`` while ``cond_fun(val)`` holds; the final ``val``.

    Args:
      cond_fun: ``val -> bool scalar``.
      body_fun: ``val -> val``, returning a value of the same pytree structure and types.
      init_val: the initial value, a pytree of arrays.

    Returns:
      The value after the last iteration. Not reverse-differentiable (use ``scan``, or
      ``fori_loop`` with static bounds).

    Example:
      >>> xform.lax.while_loop(lambda x: x < 10, lambda x: x * 2, 1)  # 16
    """
    if not callable(cond_fun) or not callable(body_fun):
        raise TypeError("lax.while_loop: cond_fun and body_fun arguments should be callable.")
    if config.values.disable_jit:
        try:  # a Python loop, as JAX runs it under disable_jit
            val = pytree.tree_map(asarray, init_val)
            while cond_fun(val):
                val = pytree.tree_map(asarray, body_fun(val))
            return val
        except ConcretizationTypeError:
            pass  # a traced predicate (under vmap, say): the primitive below, as JAX
    init, in_tree = pytree.tree_flatten(init_val)

    def flat_body(*carry):
        out, out_tree = pytree.tree_flatten(body_fun(pytree.tree_unflatten(in_tree, carry)))
        _check_tree("while_loop body_fun carry input and carry output", in_tree, out_tree)
        return out

    def flat_cond(*carry):
        return pytree.tree_leaves(cond_fun(pytree.tree_unflatten(in_tree, carry)))

    body_jaxpr, body_consts, init = _trace_carry_body(
        flat_body,
        init,
        _leaf_paths(init_val),
        [],
        "tracing the body_fun of while_loop",
        "while_loop body_fun must have the same output type as its input",
    )
    carry_avals = [get_aval(x) for x in init]
    cond_jaxpr, cond_consts = _trace_body(
        flat_cond, carry_avals, "tracing the cond_fun of while_loop"
    )
    outs = cond_jaxpr.out_avals
    if len(outs) != 1 or outs[0].shape or outs[0].dtype != dtypes.bool_:
        got = ", ".join(a.str_short() for a in outs)
        raise TypeError(
            f"while_loop: cond_fun must return a boolean scalar, but got output type(s) [{got}]."
        )
    outs = while_p.bind(
        *cond_consts,
        *body_consts,
        *init,
        cond_jaxpr=cond_jaxpr,
        body_jaxpr=body_jaxpr,
        cond_nconsts=len(cond_consts),
        body_nconsts=len(body_consts),
    )
    return pytree.tree_unflatten(in_tree, outs)


def _while_abstract_eval(*avals, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    cond_consts, body_consts = (
        avals[:cond_nconsts],
        avals[cond_nconsts : cond_nconsts + body_nconsts],
    )
    carry = avals[cond_nconsts + body_nconsts :]
    _check_operands("while_loop cond_fun", cond_jaxpr.in_avals, cond_consts + carry)
    _check_operands("while_loop body_fun", body_jaxpr.in_avals, body_consts + carry)
    pred = cond_jaxpr.out_avals
    if len(pred) != 1 or pred[0].shape or pred[0].dtype != dtypes.bool_:
        got = ", ".join(a.str_short() for a in pred)
        raise TypeError(f"while_loop: cond_fun must return a boolean scalar, got [{got}]")
    out = body_jaxpr.out_avals
    if len(out) != len(carry) or not all(_same_types(carry, out)):
        raise TypeError(
            "while_loop body_fun must have the same output type as its input: "
            f"input ({_types(carry)}), output ({_types(out)})"
        )
    return out


def _types(avals):
    return ", ".join(a.str_short() for a in avals)


def _check_operands(what, expected, got):
    if len(expected) != len(got) or not all(_same_types(expected, got)):
        raise TypeError(
            f"{what} takes operands of types ({_types(expected)}) but got ({_types(got)})"
        )


while_p = standard_primitive("while", _while_abstract_eval, multiple_results=True)


# --------------------------------------------------------------------------- eager evaluation
# Loops run eagerly as Python loops over their sub-jaxprs, each equation evaluated as usual
# (NumPy kernels on a CPU). Compiling the loop with XLA instead would cost tens of
# milliseconds per call: a Python body is traced afresh on every eager call, so the compile
# cache (keyed by jaxpr) would never hit. Eager loops are for small loops and debugging;
# ``jit`` compiles them to one ``stablehlo.while``.


def _as_array(x, aval):
    """A concrete loop value as an xform array of exactly ``aval``'s type."""
    if isinstance(x, (bool, int, float, complex, np.ndarray, np.generic)):
        return convert_element_type_p.bind(x, new_dtype=aval.dtype, weak_type=aval.weak_type)
    return convert_folding_constants(x, aval.dtype, aval.weak_type)


def _while_impl(*args, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    cond_consts = args[:cond_nconsts]
    body_consts = args[cond_nconsts : cond_nconsts + body_nconsts]
    carry = args[cond_nconsts + body_nconsts :]
    out_avals = body_jaxpr.out_avals
    with set_current_trace(eval_trace):
        carry = [_as_array(x, a) for x, a in zip(carry, out_avals, strict=True)]
        while bool(np.asarray(eval_jaxpr(cond_jaxpr.jaxpr, (), *cond_consts, *carry)[0])):
            carry = eval_jaxpr(body_jaxpr.jaxpr, (), *body_consts, *carry)
        return [_as_array(x, a) for x, a in zip(carry, out_avals, strict=True)]


eager_rules[while_p] = _while_impl


# --------------------------------------------------------------------------- jvp

# jaxpr -> {(nonzeros, instantiate): (jvp jaxpr, consts, out nonzeros)}
_jvp_jaxprs = weakref.WeakKeyDictionary()


def _jvp_jaxpr(closed, nonzeros, instantiate):
    """``closed`` differentiated once: a const-free jaxpr from (consts, primals, nonzero
    tangents) to (primals out, tangents out that are nonzero or instantiated), its consts,
    and which output tangents it returns."""
    cache = _jvp_jaxprs.setdefault(closed.jaxpr, {})
    key = (nonzeros, instantiate)
    hit = cache.get(key)
    if hit is not None:
        return hit
    n = len(nonzeros)
    in_avals = closed.in_avals
    tangent_avals = [ad.tangent_aval(a) for a, nz in zip(in_avals, nonzeros, strict=True) if nz]
    out_nonzeros = []

    def jvp_fun(*args):
        primals, nonzero_tangents = args[:n], iter(args[n:])
        tangents = [
            next(nonzero_tangents) if nz else ad.Zero(ad.tangent_aval(a))
            for a, nz in zip(in_avals, nonzeros, strict=True)
        ]
        primals_out, tangents_out = ad.jvp_flat(
            lambda *xs: eval_jaxpr(closed.jaxpr, closed.consts, *xs), primals, tangents
        )
        out_nonzeros[:] = [
            type(t) is not ad.Zero or inst
            for t, inst in zip(tangents_out, instantiate, strict=True)
        ]
        return primals_out + [
            ad.instantiate(t) for t, nz in zip(tangents_out, out_nonzeros, strict=True) if nz
        ]

    jaxpr, consts = _trace_body(jvp_fun, in_avals + tangent_avals, "differentiating a loop body")
    hit = cache[key] = (jaxpr, consts, tuple(out_nonzeros))
    return hit


def _nonzero(t):
    return type(t) is not ad.Zero


def _permuted(jaxpr, invars=None, outvars=None):
    """``jaxpr`` taking (or returning) its variables in another order."""
    j = jaxpr.jaxpr
    return ClosedJaxpr(
        Jaxpr(
            [],
            j.invars if invars is None else invars,
            j.outvars if outvars is None else outvars,
            j.eqns,
        ),
        [],
    )


def _split(xs, *sizes):
    out, start = [], 0
    for s in sizes:
        out.append(list(xs[start : start + s]))
        start += s
    out.append(list(xs[start:]))
    return out


def _pick(xs, mask, keep=True):
    return [x for x, m in zip(xs, mask, strict=True) if bool(m) == keep]


def _or(a, b):
    return [x or y for x, y in zip(a, b, strict=True)]


_while_jvp_jaxprs = weakref.WeakKeyDictionary()  # body -> {(key): (cond, body, consts, nz)}


def _while_jvp(primals, tangents, *, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    cond_consts, body_consts, carry = _split(primals, cond_nconsts, body_nconsts)
    _, body_consts_t, carry_t = _split(tangents, cond_nconsts, body_nconsts)
    consts_nz = [_nonzero(t) for t in body_consts_t]
    carry_nz = [_nonzero(t) for t in carry_t]
    # Fixpoint: a carry has a tangent if its initial value has one or the body gives it one.
    while True:
        jaxpr, consts, out_nz = _jvp_jaxpr(body_jaxpr, tuple(consts_nz + carry_nz), tuple(carry_nz))
        if list(out_nz) == carry_nz:
            break
        carry_nz = _or(carry_nz, out_nz)
    cond, body = _while_jvp_jaxprs_for(
        cond_jaxpr, body_jaxpr, jaxpr, len(consts), tuple(consts_nz), tuple(carry_nz)
    )
    nb = len(body_consts)
    carry_tangents = [ad.instantiate(t) for t, nz in zip(carry_t, carry_nz, strict=True) if nz]
    consts_tangents = _pick(body_consts_t, consts_nz)
    outs = while_p.bind(
        *cond_consts,
        *consts,
        *body_consts,
        *consts_tangents,
        *carry,
        *carry_tangents,
        cond_jaxpr=cond,
        body_jaxpr=body,
        cond_nconsts=cond_nconsts,
        body_nconsts=len(consts) + nb + len(consts_tangents),
    )
    primals_out, nonzero_out = outs[: len(carry)], iter(outs[len(carry) :])
    tangents_out = [
        next(nonzero_out) if nz else ad.Zero(ad.tangent_aval(a))
        for a, nz in zip(body_jaxpr.out_avals, carry_nz, strict=True)
    ]
    return primals_out, tangents_out


def _while_jvp_jaxprs_for(cond_jaxpr, body_jaxpr, jvp_body, num_extra, consts_nz, carry_nz):
    """The jvp'd loop's cond (which ignores the tangents) and body (its operands reordered
    to consts first, then primal and tangent carries), built once per body and masks."""
    cache = _while_jvp_jaxprs.setdefault(jvp_body.jaxpr, {})
    key = (id(cond_jaxpr.jaxpr), consts_nz, carry_nz)
    hit = cache.get(key)
    if hit is not None and hit[0] is cond_jaxpr.jaxpr:
        return hit[1], hit[2]
    invars = jvp_body.jaxpr.invars
    nb, nc = len(consts_nz), len(carry_nz)
    extra, consts, carry, consts_t, carry_t = _split(invars, num_extra, nb, nc, sum(consts_nz))
    body = _permuted(jvp_body, invars=extra + consts + consts_t + carry + carry_t)
    tangent_vars = [Var(ad.tangent_aval(v.aval)) for v in carry_t]
    cond = _permuted(cond_jaxpr, invars=cond_jaxpr.jaxpr.invars + tangent_vars)
    cache[key] = (cond_jaxpr.jaxpr, cond, body)
    return cond, body


ad.jvp_rules[while_p] = _while_jvp


# --------------------------------------------------------------------------- partial eval
# Under ``linearize``, a while loop whose carries are partly unknown (tangents) runs its known
# carries now, as a loop of their own, and is staged whole for the unknown ones, as in JAX:
# ``linearize`` and forward mode work, and transposing it is the error JAX gives.


def _unknown_outputs(jaxpr, unknowns):
    """Which outputs of ``jaxpr`` depend on the inputs marked unknown (per equation)."""
    unknown = {v for v, u in zip(jaxpr.invars, unknowns, strict=True) if u}
    for eqn in jaxpr.eqns:
        if any(type(x) is not Literal and x in unknown for x in eqn.invars):
            unknown.update(eqn.outvars)
    return [type(v) is not Literal and v in unknown for v in jaxpr.outvars]


def _drop_invars(closed, unknowns, used_outputs):
    """``closed`` computing only ``used_outputs``, without the invars marked in
    ``unknowns`` (which those outputs must not read)."""
    jaxpr, _ = dce.dce_jaxpr(closed.jaxpr, used_outputs)
    return ClosedJaxpr(
        Jaxpr([], _pick(jaxpr.invars, unknowns, False), jaxpr.outvars, jaxpr.eqns), []
    )


def _while_partial_eval(trace, args, params):
    cond_jaxpr, body_jaxpr = params["cond_jaxpr"], params["body_jaxpr"]
    nc, nb = params["cond_nconsts"], params["body_nconsts"]
    unknowns = [trace.is_unknown(x) for x in args]
    cond_uk, body_uk, carry_uk = _split(unknowns, nc, nb)
    while True:
        out_uk = _or(carry_uk, _unknown_outputs(body_jaxpr.jaxpr, body_uk + carry_uk))
        if out_uk == carry_uk:
            break
        carry_uk = out_uk
    out_avals = body_jaxpr.out_avals
    staged = trace.stage(while_p, args, params, out_avals)
    if all(carry_uk) or any(cond_uk) or _unknown_outputs(cond_jaxpr.jaxpr, cond_uk + carry_uk)[0]:
        return staged
    known = [not u for u in carry_uk]
    cond = _drop_invars(cond_jaxpr, cond_uk + carry_uk, [True])
    body = _drop_invars(body_jaxpr, body_uk + carry_uk, known)
    cond_consts, body_consts, carry = _split(args, nc, nb)
    body_consts = _pick(body_consts, body_uk, False)
    with set_current_trace(trace.parent):
        known_outs = iter(
            while_p.bind(
                *cond_consts,
                *body_consts,
                *_pick(carry, known),
                cond_jaxpr=cond,
                body_jaxpr=body,
                cond_nconsts=nc,
                body_nconsts=len(body_consts),
            )
        )
    return [s if u else next(known_outs) for s, u in zip(staged, carry_uk, strict=True)]


partial_eval.partial_eval_rules[while_p] = _while_partial_eval


# --------------------------------------------------------------------------- transpose


def _while_transpose(cts, *args, **params):
    raise ValueError(
        "Reverse-mode differentiation does not work for lax.while_loop or "
        "lax.fori_loop with dynamic start/stop values. Try using lax.scan, or "
        "using fori_loop with static start/stop."
    )


transpose.transpose_rules[while_p] = _while_transpose


# --------------------------------------------------------------------------- batching


def _at_front(x, d, batched, size):
    """``x`` batched at 0 if ``batched`` (moved or broadcast there), else as it is."""
    return batching.move_or_broadcast(x, d, 0, size) if batched else x


def _while_batch(axis, args, dims, *, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    nc, nb = cond_nconsts, body_nconsts
    cond_consts, body_consts, carry = _split(args, nc, nb)
    cond_dims, body_dims, carry_dims = _split(dims, nc, nb)
    carry_b = [d is not not_mapped for d in carry_dims]
    while True:  # fixpoint: a carry the body makes batched is batched from the start
        in_dims = tuple(body_dims + [0 if b else not_mapped for b in carry_b])
        _, _, out_b = batching.batch_jaxpr(body_jaxpr, axis, in_dims, tuple(carry_b))
        if list(out_b) == carry_b:
            break
        carry_b = _or(carry_b, out_b)
    cond_in = tuple(cond_dims + [0 if b else not_mapped for b in carry_b])
    _, _, (pred_b,) = batching.batch_jaxpr(cond_jaxpr, axis, cond_in, (False,))
    if pred_b:  # lanes stop at different times: every carry varies along the axis
        carry_b = [True] * len(carry)
        cond_in = tuple(cond_dims + [0] * len(carry))
    body_in = tuple(body_dims + [0 if b else not_mapped for b in carry_b])
    body, body_extra, _ = batching.batch_jaxpr(body_jaxpr, axis, body_in, tuple(carry_b))
    cond, cond_extra, _ = batching.batch_jaxpr(cond_jaxpr, axis, cond_in, (pred_b,))
    carry = [
        _at_front(x, d, b, axis.size) for x, d, b in zip(carry, carry_dims, carry_b, strict=True)
    ]
    out_dims = [0 if b else not_mapped for b in carry_b]
    if not pred_b:
        outs = while_p.bind(
            *cond_extra,
            *cond_consts,
            *body_extra,
            *body_consts,
            *carry,
            cond_jaxpr=cond,
            body_jaxpr=body,
            cond_nconsts=len(cond_extra) + nc,
            body_nconsts=len(body_extra) + nb,
        )
        return outs, out_dims
    cond, body, cond_extra, body_extra = _any_lane_loop(cond, cond_extra, body, body_extra, nc, nb)
    outs = while_p.bind(
        *cond_extra,
        *cond_consts,
        *body_extra,
        *cond_consts,
        *body_consts,
        *carry,
        cond_jaxpr=cond,
        body_jaxpr=body,
        cond_nconsts=len(cond_extra) + nc,
        body_nconsts=len(body_extra) + nc + nb,
    )
    return outs, out_dims


_any_lane_jaxprs = weakref.WeakKeyDictionary()  # batched body -> {cond: (cond, body, ...)}


def _any_lane_loop(cond_b, cond_extra, body_b, body_extra, nc, nb):
    """A batched predicate: loop while any lane's holds; lanes whose predicate is false keep
    their carry (``select_n``) while the others run. Returns the new cond (taking the cond
    consts and carry), body (taking the cond consts, body consts and carry) and their consts.
    """
    cache = _any_lane_jaxprs.setdefault(body_b.jaxpr, {})
    hit = cache.get(id(cond_b.jaxpr))
    if hit is not None and hit[0] is cond_b.jaxpr:
        return hit[1:]
    ncx, nbx = len(cond_extra), len(body_extra)
    cond_avals = cond_b.in_avals[ncx:]
    body_avals = body_b.in_avals[nbx:]
    carry_avals = body_avals[nb:]

    def pred_of(cond_consts, carry):
        return eval_jaxpr(cond_b.jaxpr, (), *cond_extra, *cond_consts, *carry)[0]

    def new_cond(*args):
        return [reduce_or(pred_of(args[:nc], args[nc:]), (0,))]

    def new_body(*args):
        cond_consts, body_consts, carry = _split(args, nc, nb)
        pred = pred_of(cond_consts, carry)
        new = eval_jaxpr(body_b.jaxpr, (), *body_extra, *body_consts, *carry)
        outs = []
        for old, x in zip(carry, new, strict=True):
            shape = get_aval(x).shape
            which = pred if len(shape) == 1 else broadcast_in_dim(pred, shape, (0,))
            outs.append(select_n(which, old, x))
        return outs

    cond, cond_consts = _trace_body(
        new_cond, cond_avals, "vectorizing a while_loop with a batched predicate"
    )
    body, body_consts = _trace_body(
        new_body,
        cond_avals[:nc] + body_avals[:nb] + carry_avals,
        "vectorizing a while_loop with a batched predicate",
    )
    hit = cache[id(cond_b.jaxpr)] = (cond_b.jaxpr, cond, body, cond_consts, body_consts)
    return hit[1:]


batching.batch_rules[while_p] = _while_batch


# --------------------------------------------------------------------------- fori_loop


def _concrete_int(x):
    """``x`` as a Python int if its value is known now, else None."""
    if isinstance(x, Tracer):
        x = x.concrete_value()
        if x is None:
            return None
    return int(np.asarray(x))


def fori_loop(lower, upper, body_fun, init_val, *, unroll=None):
    """``val = body_fun(i, val)`` for ``i`` in ``range(lower, upper)``; the final ``val``.

    With bounds known when tracing (Python ints, concrete arrays) the loop is a ``scan``
    and can be reverse-differentiated; with traced bounds it is a ``while_loop``.

    Args:
      lower, upper: the bounds (``upper <= lower`` runs no iteration); integers, or floats,
        which are truncated when known and counted in their dtype when traced, as in JAX.
      body_fun: ``(i, val) -> val``.
      init_val: the initial value, a pytree of arrays.
      unroll: how many iterations one step of the compiled loop runs (static bounds only).

    Example:
      >>> xform.lax.fori_loop(0, 5, lambda i, x: x + i, 0.0)  # 10.0
    """
    if not callable(body_fun):
        raise TypeError("lax.fori_loop: body_fun argument should be callable.")
    lo_aval, hi_aval = get_aval(lower), get_aval(upper)
    # As JAX: bounds of any one dtype (known float bounds are truncated to ints below, traced
    # ones count in their dtype); of two dtypes only if both are signed integers and one is
    # weakly typed (a Python int), which takes the other's dtype.
    dtype = lo_aval.dtype
    if lo_aval.dtype != hi_aval.dtype:
        signed = dtypes.is_signed_int(lo_aval.dtype) and dtypes.is_signed_int(hi_aval.dtype)
        if signed and lo_aval.weak_type and not hi_aval.weak_type:
            dtype = hi_aval.dtype
        elif signed and hi_aval.weak_type and not lo_aval.weak_type:
            dtype = lo_aval.dtype
        else:
            raise TypeError(
                f"fori_loop: lower and upper arguments must have equal types, got "
                f"{lo_aval.str_short()} and {hi_aval.str_short()}"
            )
    lo, hi = _concrete_int(lower), _concrete_int(upper)
    if lo is not None and hi is not None:

        def scan_body(carry, _):
            i, x = carry
            return (add(i, 1), body_fun(i, x)), None

        unroll = 1 if unroll is None else unroll
        if config.values.disable_jit and hi <= lo:
            return init_val  # the Python scan of disable_jit cannot run zero iterations
        (_, result), _ = scan(
            scan_body, (lo, init_val), None, length=max(hi - lo, 0), unroll=unroll
        )
        return result
    if unroll is not None and unroll is not False and unroll != 1:
        raise ValueError(
            "fori_loop: `unroll` can only be used when the loop bounds are statically known."
        )
    lower = convert_folding_constants(lower, dtype, lo_aval.weak_type and dtype == lo_aval.dtype)
    upper = convert_folding_constants(upper, dtype, hi_aval.weak_type and dtype == hi_aval.dtype)

    def while_cond(carry):
        i, hi_, _ = carry
        return lt(i, hi_)

    one = np.ones((), dtype)  # of the counter's dtype (int16, float32, ...), not a weak int

    def while_body(carry):
        i, hi_, x = carry
        return add(i, one), hi_, body_fun(i, x)

    _, _, result = while_loop(while_cond, while_body, (lower, upper, init_val))
    return result


# --------------------------------------------------------------------------- scan


def _type_name(x):
    """``f32[3]`` for an array or a tracer; the repr of anything else (for error messages)."""
    if isinstance(x, Tracer) or is_concrete_array(x):
        return get_aval(x).str_short()
    return repr(x)


def _scan_length(xs, length):
    lengths = set()
    for x in xs:
        shape = get_aval(x).shape
        if not shape:
            raise ValueError(
                f"scan got value with no leading axis to scan over: {get_aval(x).str_short()}"
            )
        lengths.add(shape[0])
    if length is not None:
        length = operator.index(length)
        if lengths and lengths != {length}:
            raise ValueError(
                f"scan got `length` argument of {length} which disagrees with "
                f"leading axis sizes {sorted(lengths)}."
            )
        return length
    if len(lengths) > 1:
        raise ValueError(
            f"scan got values with different leading axis sizes: "
            f"{', '.join(str(n) for n in sorted(lengths))}."
        )
    if not lengths:
        raise ValueError("scan got no values to scan over and `length` not provided.")
    return lengths.pop()


def scan(f, init, xs=None, length=None, reverse=False, unroll=1, _split_transpose=False):
    """Scan ``f`` over the leading axis of ``xs`` while carrying state.

    The semantics, in Python::

        def scan(f, init, xs, length=None):
            carry, ys = init, []
            for x in xs:
                carry, y = f(carry, x)
                ys.append(y)
            return carry, np.stack(ys)

    Args:
      f: ``(carry, x) -> (carry, y)``; the carry keeps its structure and types.
      init: the initial carry, a pytree of arrays.
      xs: a pytree of arrays scanned along their leading axis, or None (then ``length``).
      length: the number of iterations, when ``xs`` is None (or to check it).
      reverse: scan from the end of ``xs`` to its start (``ys`` stays in ``xs``'s order).
      unroll: how many iterations one step of the compiled loop runs (True: all).
      _split_transpose: JAX's private hint to split the transposed loop (libraries such
        as flax pass it); the values are the same without it, and xform ignores it.

    Returns:
      ``(final carry, stacked ys)``.

    Example:
      >>> xform.lax.scan(lambda c, x: (c + x, c), 0.0, xform.numpy.arange(3.0))
    """
    if not callable(f):
        raise TypeError("lax.scan: f argument should be callable.")
    xs_flat, xs_tree = pytree.tree_flatten(xs)
    length = _scan_length(xs_flat, length)
    if isinstance(unroll, bool):
        unroll = max(length, 1) if unroll else 1
    unroll = int(unroll)
    if unroll < 1:
        raise ValueError("`unroll` must be a `bool` or a positive `int`.")
    if config.values.disable_jit:
        return _python_scan(f, init, xs_flat, xs_tree, length, reverse)
    init_flat, in_tree = pytree.tree_flatten(init)
    n = len(init_flat)
    x_avals = []
    for x in xs_flat:
        a = get_aval(x)
        x_avals.append(ShapedArray(a.shape[1:], a.dtype, a.weak_type, vma=a.vma))
    y_tree = {}

    def flat_f(*args):
        carry = pytree.tree_unflatten(in_tree, args[:n])
        x = pytree.tree_unflatten(xs_tree, args[n:])
        out = f(carry, x)
        if not isinstance(out, (tuple, list)) or len(out) != 2:
            got = pytree.tree_map(_type_name, out)
            if isinstance(out, (tuple, list)):
                got = f"a {type(out).__name__} of length {len(out)}: {got}"
            raise TypeError(f"scan body output must be a pair (carry, y), got {got}.")
        carry_out, out_tree = pytree.tree_flatten(out[0])
        _check_tree("scan body function carry input and carry output", in_tree, out_tree)
        ys, y_tree["tree"] = pytree.tree_flatten(out[1])
        return carry_out + ys

    jaxpr, consts, init_flat = _trace_carry_body(
        flat_f,
        init_flat,
        _leaf_paths(init),
        x_avals,
        "tracing the body of scan",
        "scan body function carry input and carry output must have equal types",
    )
    operands = consts + init_flat + xs_flat
    outs = scan_p.bind(
        *operands,
        jaxpr=jaxpr,
        num_consts=len(consts),
        num_carry=n,
        length=length,
        reverse=bool(reverse),
        unroll=unroll,
        linear=(False,) * len(operands),
    )
    return (
        pytree.tree_unflatten(in_tree, outs[:n]),
        pytree.tree_unflatten(y_tree["tree"], outs[n:]),
    )


def asarray(x):
    """``x`` as an xform value: Python and NumPy values become arrays of their type (a Python
    scalar's weak type kept); traced values and arrays are returned as they are."""
    if isinstance(x, Tracer) or not isinstance(
        x, (bool, int, float, complex, np.generic, np.ndarray)
    ):
        return x
    aval = get_aval(x)
    return convert_element_type_p.bind(x, new_dtype=aval.dtype, weak_type=aval.weak_type)


def _python_scan(f, init, xs_flat, xs_tree, length, reverse):
    """``scan`` as a Python loop over the slices (JAX's ``disable_jit`` mode)."""
    if length == 0:
        raise ValueError(
            "zero-length scan is not supported in disable_jit() mode because "
            "the output type is unknown."
        )
    carry, ys = init, []
    steps = range(length - 1, -1, -1) if reverse else range(length)
    for i in steps:
        x = pytree.tree_unflatten(xs_tree, [index_in_dim(v, i, keepdims=False) for v in xs_flat])
        carry, y = f(carry, x)
        ys.append(y)
    if reverse:
        ys.reverse()
    stacked = pytree.tree_map(
        lambda *ys: concatenate([expand_dims(asarray(y), (0,)) for y in ys], 0), *ys
    )
    return carry, stacked


def map(f, xs, *, batch_size=None):  # noqa: A001  (lax's name)
    """``f`` applied to each slice of ``xs`` along its leading axis, results stacked.

    With ``batch_size``, ``f`` is vectorized (vmapped) over ``batch_size`` slices at a time
    and the batches are scanned over; the slices left over run as one last vmapped batch.

    Example:
      >>> xform.lax.map(lambda x: x * 2, xform.numpy.arange(3.0))  # [0., 2., 4.]
    """
    if batch_size is None:
        _, ys = scan(lambda _, x: ((), f(x)), (), xs)
        return ys
    if (
        isinstance(batch_size, bool)
        or not isinstance(batch_size, (int, np.integer))
        or batch_size < 0
    ):
        raise TypeError(f"lax.map: batch_size must be a non-negative int, got {batch_size!r}")
    leaves, tree = pytree.tree_flatten(xs)
    if not leaves:
        _, ys = scan(lambda _, x: ((), f(x)), (), xs)
        return ys
    length = get_aval(leaves[0]).shape[0] if get_aval(leaves[0]).shape else 0
    num_batches = length // batch_size if batch_size else 0
    batched = num_batches * batch_size
    ys = None
    if num_batches:
        scan_xs = [
            reshape(
                slice_in_dim(x, 0, batched, axis=0),
                (num_batches, batch_size) + get_aval(x).shape[1:],
            )
            for x in leaves
        ]
        _, ys = scan(
            lambda _, x: ((), _vmap_leading(f, x)), (), pytree.tree_unflatten(tree, scan_xs)
        )
        ys = pytree.tree_map(lambda y: reshape(y, (batched,) + get_aval(y).shape[2:]), ys)
    if batched < length:
        rest = _vmap_leading(
            f,
            pytree.tree_unflatten(tree, [slice_in_dim(x, batched, length, axis=0) for x in leaves]),
        )
        ys = rest if ys is None else pytree.tree_map(lambda y, r: concatenate([y, r], 0), ys, rest)
    return ys


def _vmap_leading(f, xs):
    """``f`` vectorized over the leading axis of every leaf of ``xs`` (vmap, at this level)."""
    leaves, tree = pytree.tree_flatten(xs)
    store = {}

    def flat_f(*flat):
        out, store["tree"] = pytree.tree_flatten(f(pytree.tree_unflatten(tree, flat)))
        return out

    axis = batching.AxisData(None, get_aval(leaves[0]).shape[0])
    outs = batching.vmap_flat(flat_f, axis, leaves, [0] * len(leaves), lambda n: [0] * n)
    return pytree.tree_unflatten(store["tree"], outs)


def _scan_abstract_eval(*avals, jaxpr, num_consts, num_carry, length, reverse, unroll, linear):
    consts, carry, xs = _split(avals, num_consts, num_carry)
    if any(not x.shape or x.shape[0] != length for x in xs):
        raise TypeError(f"scan of length {length} got xs of types ({_types(xs)})")
    slices = [ShapedArray(x.shape[1:], x.dtype, x.weak_type, vma=x.vma) for x in xs]
    _check_operands("scan body", jaxpr.in_avals, consts + carry + slices)
    carry_out, ys = _split(jaxpr.out_avals, num_carry)
    if not all(_same_types(carry, carry_out)):
        raise TypeError(
            "scan body function carry input and carry output must have equal "
            f"types: input ({_types(carry)}), output ({_types(carry_out)})"
        )
    if len(linear) != len(avals):
        raise TypeError(f"scan: `linear` has {len(linear)} entries for {len(avals)} operands")
    return carry_out + [
        ShapedArray((length,) + y.shape, y.dtype, y.weak_type, vma=y.vma) for y in ys
    ]


scan_p = standard_primitive("scan", _scan_abstract_eval, multiple_results=True)


def _stack(ys, aval, length):
    if not ys:
        return broadcast_in_dim(np.zeros((), aval.dtype), (length,) + aval.shape, ())
    return concatenate([reshape(y, (1,) + aval.shape) for y in ys], 0)


def _scan_impl(*args, jaxpr, num_consts, num_carry, length, reverse, unroll, linear):
    consts, carry, xs = _split(args, num_consts, num_carry)
    out_avals = jaxpr.out_avals
    carry_avals, y_avals = out_avals[:num_carry], out_avals[num_carry:]
    with set_current_trace(eval_trace):
        ys = [[] for _ in y_avals]
        for k in range(length):
            i = length - 1 - k if reverse else k
            slices = [index_in_dim(x, i, 0, keepdims=False) for x in xs]
            outs = eval_jaxpr(jaxpr.jaxpr, (), *consts, *carry, *slices)
            carry = outs[:num_carry]
            for acc, y in zip(ys, outs[num_carry:], strict=True):
                acc.append(y)
        if reverse:
            for acc in ys:
                acc.reverse()
        carry = [_as_array(x, a) for x, a in zip(carry, carry_avals, strict=True)]
        stacked = [_stack(acc, a, length) for acc, a in zip(ys, y_avals, strict=True)]
        stacked = [
            _as_array(y, a.update(shape=(length,) + a.shape))
            for y, a in zip(stacked, y_avals, strict=True)
        ]
    return carry + stacked


eager_rules[scan_p] = _scan_impl


# --------------------------------------------------------------------------- scan: jvp


def _scan_jvp(primals, tangents, *, jaxpr, num_consts, num_carry, length, reverse, unroll, linear):
    num_xs = len(primals) - num_consts - num_carry
    num_ys = len(jaxpr.out_avals) - num_carry
    consts, init, xs = _split(primals, num_consts, num_carry)
    consts_t, init_t, xs_t = _split(tangents, num_consts, num_carry)
    consts_nz = [_nonzero(t) for t in consts_t]
    carry_nz = [_nonzero(t) for t in init_t]
    xs_nz = [_nonzero(t) for t in xs_t]
    while True:  # fixpoint: which carries have tangents
        body, extra, out_nz = _jvp_jaxpr(
            jaxpr, tuple(consts_nz + carry_nz + xs_nz), tuple(carry_nz) + (False,) * num_ys
        )
        if list(out_nz[:num_carry]) == carry_nz:
            break
        carry_nz = _or(carry_nz, out_nz[:num_carry])
    ys_nz = list(out_nz[num_carry:])
    body = _scan_jvp_body(
        body,
        len(extra),
        num_consts,
        num_carry,
        num_xs,
        tuple(consts_nz),
        tuple(carry_nz),
        tuple(xs_nz),
        tuple(ys_nz),
    )
    lin_consts, lin_init, lin_xs = _split(linear, num_consts, num_carry)
    new_consts = extra + consts + _pick(consts_t, consts_nz)
    new_carry = init + [ad.instantiate(t) for t, nz in zip(init_t, carry_nz, strict=True) if nz]
    new_xs = xs + _pick(xs_t, xs_nz)
    new_linear = (
        (False,) * len(extra)
        + tuple(lin_consts)
        + (True,) * sum(consts_nz)
        + tuple(lin_init)
        + (True,) * sum(carry_nz)
        + tuple(lin_xs)
        + (True,) * sum(xs_nz)
    )
    outs = scan_p.bind(
        *new_consts,
        *new_carry,
        *new_xs,
        jaxpr=body,
        num_consts=len(new_consts),
        num_carry=len(new_carry),
        length=length,
        reverse=reverse,
        unroll=unroll,
        linear=new_linear,
    )
    carry_out, carry_t_out, ys, ys_t = _split(outs, num_carry, sum(carry_nz), num_ys)
    carry_t_out, ys_t = iter(carry_t_out), iter(ys_t)
    out_avals = _scan_abstract_eval(
        *[get_aval(x) for x in primals],
        jaxpr=jaxpr,
        num_consts=num_consts,
        num_carry=num_carry,
        length=length,
        reverse=reverse,
        unroll=unroll,
        linear=linear,
    )
    tangents_out = [
        next(carry_t_out) if nz else ad.Zero(ad.tangent_aval(a))
        for a, nz in zip(out_avals[:num_carry], carry_nz, strict=True)
    ]
    tangents_out += [
        next(ys_t) if nz else ad.Zero(ad.tangent_aval(a))
        for a, nz in zip(out_avals[num_carry:], ys_nz, strict=True)
    ]
    return carry_out + ys, tangents_out


_scan_jvp_bodies = weakref.WeakKeyDictionary()


def _scan_jvp_body(
    body, num_extra, num_consts, num_carry, num_xs, consts_nz, carry_nz, xs_nz, ys_nz
):
    """The jvp jaxpr's operands and results reordered to a scan body's layout: consts (with
    their tangents), then carries, then xs; results carries then ys."""
    cache = _scan_jvp_bodies.setdefault(body.jaxpr, {})
    hit = cache.get(None)
    if hit is not None:
        return hit
    extra, consts, carry, xs, consts_t, carry_t, xs_t = _split(
        body.jaxpr.invars, num_extra, num_consts, num_carry, num_xs, sum(consts_nz), sum(carry_nz)
    )
    num_ys = len(ys_nz)
    carry_out, ys, carry_t_out, ys_t = _split(body.jaxpr.outvars, num_carry, num_ys, sum(carry_nz))
    hit = cache[None] = _permuted(
        body,
        extra + consts + consts_t + carry + carry_t + xs + xs_t,
        carry_out + carry_t_out + ys + ys_t,
    )
    return hit


ad.jvp_rules[scan_p] = _scan_jvp


# --------------------------------------------------------------------------- scan: partial eval

_split_jaxprs = weakref.WeakKeyDictionary()  # jaxpr -> {(unknowns, instantiate): split}


def _split_jaxpr(closed, unknowns, instantiate):
    """``partial_eval.partial_eval_jaxpr`` with outputs forced unknown (``instantiate``),
    once per body, mask and forcing."""
    cache = _split_jaxprs.setdefault(closed.jaxpr, {})
    key = (unknowns, instantiate)
    hit = cache.get(key)
    if hit is None:
        hit = cache[key] = partial_eval.partial_eval_jaxpr(
            closed, unknowns, "partially evaluating a scan body", instantiate
        )
    return hit


def _scan_partial_eval(trace, args, params):
    jaxpr, num_consts, num_carry = params["jaxpr"], params["num_consts"], params["num_carry"]
    length, linear = params["length"], params["linear"]
    num_ys = len(jaxpr.out_avals) - num_carry
    unknowns = [trace.is_unknown(x) for x in args]
    const_uk, carry_uk, xs_uk = _split(unknowns, num_consts, num_carry)
    while True:  # fixpoint: a carry is unknown if its init or its update is
        split = _split_jaxpr(
            jaxpr, tuple(const_uk + carry_uk + xs_uk), tuple(carry_uk) + (False,) * num_ys
        )
        out_uk = list(split[3])
        if out_uk[:num_carry] == carry_uk:
            break
        carry_uk = _or(carry_uk, out_uk[:num_carry])
    known_jaxpr, known_consts, unknown_jaxpr, out_uk, num_res = split
    consts, carry, xs = _split(args, num_consts, num_carry)
    lin_consts, lin_carry, lin_xs = _split(linear, num_consts, num_carry)
    known_consts_in = known_consts + _pick(consts, const_uk, False)
    num_known_carry = num_carry - sum(carry_uk)

    # Residuals that do not change from one iteration to the next (constants, known consts
    # passed through) become consts of the unknown scan; the others are stacked, as ys.
    kj = known_jaxpr.jaxpr
    const_vars = {v: x for v, x in zip(kj.invars, known_consts_in, strict=False)}
    num_known_outs = len(kj.outvars) - num_res
    res_vars = kj.outvars[num_known_outs:]
    invariant = [type(v) is Literal or v in const_vars for v in res_vars]
    # Residuals that are slices of known xs are those xs, not stacked again (as JAX).
    known_xs = _pick(xs, xs_uk, False)
    xs_vars = dict(zip(kj.invars[len(kj.invars) - len(known_xs) :], known_xs, strict=True))
    forwarded = [not inv and v in xs_vars for v, inv in zip(res_vars, invariant, strict=True)]
    body = _permuted(
        known_jaxpr,
        outvars=kj.outvars[:num_known_outs]
        + [
            v
            for v, inv, fw in zip(res_vars, invariant, forwarded, strict=True)
            if not inv and not fw
        ],
    )
    known_args = known_consts_in + _pick(carry, carry_uk, False) + known_xs
    with set_current_trace(trace.parent):
        known_outs = scan_p.bind(
            *known_args,
            jaxpr=body,
            num_consts=len(known_consts_in),
            num_carry=num_known_carry,
            length=length,
            reverse=params["reverse"],
            unroll=params["unroll"],
            linear=(False,) * len(known_args),
        )
    known_outs, stacked = known_outs[:num_known_outs], iter(known_outs[num_known_outs:])
    stacked = [
        xs_vars[v] if fw else next(stacked)
        for v, inv, fw in zip(res_vars, invariant, forwarded, strict=True)
        if not inv
    ]
    invariant_vals = [
        np.asarray(v.val, v.aval.dtype) if type(v) is Literal else const_vars[v]
        for v, inv in zip(res_vars, invariant, strict=True)
        if inv
    ]

    uj = unknown_jaxpr.jaxpr
    res_in, uk_in = uj.invars[:num_res], uj.invars[num_res:]
    consts_in, carry_in, xs_in = _split(uk_in, sum(const_uk), sum(carry_uk))
    unknown_body = _permuted(
        unknown_jaxpr,
        invars=(
            _pick(res_in, invariant)
            + consts_in
            + carry_in
            + _pick(res_in, invariant, False)
            + xs_in
        ),
    )
    unknown_args = (
        invariant_vals
        + _pick(consts, const_uk)
        + _pick(carry, carry_uk)
        + stacked
        + _pick(xs, xs_uk)
    )
    unknown_linear = (
        (False,) * len(invariant_vals)
        + tuple(_pick(lin_consts, const_uk))
        + tuple(_pick(lin_carry, carry_uk))
        + (False,) * len(stacked)
        + tuple(_pick(lin_xs, xs_uk))
    )
    unknown_params = dict(
        params,
        jaxpr=unknown_body,
        num_consts=len(invariant_vals) + sum(const_uk),
        num_carry=sum(carry_uk),
        linear=unknown_linear,
    )
    out_avals = _scan_abstract_eval(*[get_aval(x) for x in unknown_args], **unknown_params)
    unknown_outs = iter(trace.stage(scan_p, unknown_args, unknown_params, out_avals))
    known_outs = iter(known_outs)
    return [next(unknown_outs) if u else next(known_outs) for u in out_uk]


partial_eval.partial_eval_rules[scan_p] = _scan_partial_eval


# --------------------------------------------------------------------------- scan: transpose

_transposed_jaxprs = weakref.WeakKeyDictionary()


def _transposed_body(jaxpr, num_consts, num_carry, consts_lin, xs_lin, ys_zero):
    """The body of the transposed scan: (residual consts; accumulated cotangents of the
    linear consts, carry cotangents; residual xs, ys cotangents) -> (accumulators, carry
    cotangents, cotangents of the linear xs). Returns ``(jaxpr, consts)``."""
    cache = _transposed_jaxprs.setdefault(jaxpr.jaxpr, {})
    key = (consts_lin, xs_lin, ys_zero)
    hit = cache.get(key)
    if hit is not None:
        return hit
    consts_avals, carry_avals, x_avals = _split(jaxpr.in_avals, num_consts, num_carry)
    y_avals = jaxpr.out_avals[num_carry:]
    res_avals = _pick(consts_avals, consts_lin, False)
    acc_avals = [ad.tangent_aval(a) for a in _pick(consts_avals, consts_lin)]
    ct_carry_avals = [ad.tangent_aval(a) for a in carry_avals]
    res_x_avals = _pick(x_avals, xs_lin, False)
    ct_y_avals = [ad.tangent_aval(a) for a in _pick(y_avals, ys_zero, False)]
    sizes = (len(res_avals), len(acc_avals), len(ct_carry_avals), len(res_x_avals))

    def transposed(*args):
        res, acc, ct_carry, res_xs, ct_ys = _split(args, *sizes)
        res, res_xs, ct_ys = iter(res), iter(res_xs), iter(ct_ys)
        invals = [
            transpose.UndefinedPrimal(a) if lin else next(res)
            for a, lin in zip(consts_avals, consts_lin, strict=True)
        ]
        invals += [transpose.UndefinedPrimal(a) for a in carry_avals]
        invals += [
            transpose.UndefinedPrimal(a) if lin else next(res_xs)
            for a, lin in zip(x_avals, xs_lin, strict=True)
        ]
        cts_out = list(ct_carry) + [
            ad.Zero(ad.tangent_aval(a)) if z else next(ct_ys)
            for a, z in zip(y_avals, ys_zero, strict=True)
        ]
        cts_in = transpose.backward_pass(jaxpr.jaxpr, (), invals, cts_out)
        ct_consts, ct_init, ct_xs = _split(cts_in, num_consts, num_carry)
        acc_out = [
            ad.instantiate(ad.add_tangents(a, ct))
            for a, ct in zip(acc, _pick(ct_consts, consts_lin), strict=True)
        ]
        return (
            acc_out
            + [ad.instantiate(ct) for ct in ct_init]
            + [ad.instantiate(ct) for ct in _pick(ct_xs, xs_lin)]
        )

    hit = cache[key] = _trace_body(
        transposed,
        res_avals + acc_avals + ct_carry_avals + res_x_avals + ct_y_avals,
        "transposing a scan body",
    )
    return hit


def _scan_transpose(cts, *args, jaxpr, num_consts, num_carry, length, reverse, unroll, linear):
    consts, carry, xs = _split(args, num_consts, num_carry)
    ct_carry, ct_ys = cts[:num_carry], cts[num_carry:]
    consts_lin = tuple(transpose.is_undefined(x) for x in consts)
    xs_lin = tuple(transpose.is_undefined(x) for x in xs)
    ys_zero = tuple(type(ct) is ad.Zero for ct in ct_ys)
    body, extra = _transposed_body(jaxpr, num_consts, num_carry, consts_lin, xs_lin, ys_zero)
    res = _pick(consts, consts_lin, False)
    acc = [ad.instantiate(ad.Zero(ad.tangent_aval(x.aval))) for x in _pick(consts, consts_lin)]
    carry_avals = jaxpr.in_avals[num_consts : num_consts + num_carry]
    ct_init = [
        ad.instantiate(ad.Zero(ad.tangent_aval(a)) if ct is None else ct)
        for ct, a in zip(ct_carry, carry_avals, strict=True)
    ]
    res_xs = _pick(xs, xs_lin, False)
    ct_ys = [ct for ct in ct_ys if type(ct) is not ad.Zero]
    operands = extra + res + acc + ct_init + res_xs + ct_ys
    num_t_consts = len(extra) + len(res)
    linear_t = (
        (False,) * num_t_consts
        + (True,) * (len(acc) + num_carry)
        + (False,) * len(res_xs)
        + (True,) * len(ct_ys)
    )
    outs = scan_p.bind(
        *operands,
        jaxpr=body,
        num_consts=num_t_consts,
        num_carry=len(acc) + num_carry,
        length=length,
        reverse=not reverse,
        unroll=unroll,
        linear=linear_t,
    )
    ct_consts, ct_init, ct_xs = _split(outs, len(acc), num_carry)
    ct_consts, ct_xs = iter(ct_consts), iter(ct_xs)
    return (
        [next(ct_consts) if lin else None for lin in consts_lin]
        + [ct if transpose.is_undefined(x) else None for ct, x in zip(ct_init, carry, strict=True)]
        + [next(ct_xs) if lin else None for lin in xs_lin]
    )


transpose.transpose_rules[scan_p] = _scan_transpose


# --------------------------------------------------------------------------- scan: batching


def _scan_batch(axis, args, dims, *, jaxpr, num_consts, num_carry, length, reverse, unroll, linear):
    num_ys = len(jaxpr.out_avals) - num_carry
    consts, init, xs = _split(args, num_consts, num_carry)
    consts_dims, init_dims, xs_dims = _split(dims, num_consts, num_carry)
    # Batched xs carry the batch at 1, so each slice has it at 0.
    xs = [
        x if d is not_mapped else batching.moveaxis(x, d, 1)
        for x, d in zip(xs, xs_dims, strict=True)
    ]
    slice_dims = [not_mapped if d is not_mapped else 0 for d in xs_dims]
    carry_b = [d is not not_mapped for d in init_dims]
    while True:  # fixpoint: a carry the body makes batched is batched from the start
        in_dims = tuple(consts_dims + [0 if b else not_mapped for b in carry_b] + slice_dims)
        body, extra, out_b = batching.batch_jaxpr(
            jaxpr, axis, in_dims, tuple(carry_b) + (False,) * num_ys
        )
        if list(out_b[:num_carry]) == carry_b:
            break
        carry_b = _or(carry_b, out_b[:num_carry])
    init = [_at_front(x, d, b, axis.size) for x, d, b in zip(init, init_dims, carry_b, strict=True)]
    outs = scan_p.bind(
        *extra,
        *consts,
        *init,
        *xs,
        jaxpr=body,
        num_consts=len(extra) + num_consts,
        num_carry=num_carry,
        length=length,
        reverse=reverse,
        unroll=unroll,
        linear=(False,) * len(extra) + linear,
    )
    out_dims = [0 if b else not_mapped for b in carry_b]
    out_dims += [1 if b else not_mapped for b in out_b[num_carry:]]
    return outs, out_dims


batching.batch_rules[scan_p] = _scan_batch


# --------------------------------------------------------------------------- dead code
# As JAX's rule: the ys nothing reads go, and so do the carries nothing needs (read after the
# loop, or by a kept part of the body, found to a fixpoint: `fori_loop`'s counter, say), then
# the operands the slimmed body does not read.

_scan_slimmed = weakref.WeakKeyDictionary()  # body jaxpr -> {used outputs: slimming}


def _slim_scan_body(body, nc, nk, used_outputs):
    """``(used_inputs, kept_outputs, body)`` of a scan whose outputs ``used_outputs`` are
    read (``body`` None: the scan stays as it is); cached per body."""
    cache = _scan_slimmed.setdefault(body.jaxpr, {})
    hit = cache.get(used_outputs)
    if hit is not None:
        return hit
    used_carry, used_ys = list(used_outputs[:nk]), list(used_outputs[nk:])
    while True:
        _, used_in = dce.dce_jaxpr(body.jaxpr, used_carry + used_ys)
        needed = [u or v for u, v in zip(used_carry, used_in[nc : nc + nk], strict=True)]
        if needed == used_carry:
            break
        used_carry = needed
    used_inputs = used_in[:nc] + used_carry + used_in[nc + nk :]
    kept_outputs = used_carry + used_ys
    new_body = None
    if not (all(used_inputs) and all(kept_outputs) and not dce.has_dead_code(body.jaxpr)):
        slim, _ = dce.dce_jaxpr(body.jaxpr, kept_outputs)
        new_body = ClosedJaxpr(
            Jaxpr(
                slim.constvars,
                [v for v, u in zip(slim.invars, used_inputs, strict=True) if u],
                slim.outvars,
                slim.eqns,
            ),
            body.consts,
        )
    hit = cache[used_outputs] = (used_inputs, kept_outputs, new_body)
    return hit


def _scan_dce(used_outputs, eqn):
    if not any(used_outputs):
        return [False] * len(eqn.invars), None
    params = eqn.params
    nc, nk = params["num_consts"], params["num_carry"]
    used_inputs, kept_outputs, new_body = _slim_scan_body(
        params["jaxpr"], nc, nk, tuple(used_outputs)
    )
    if new_body is None:
        return used_inputs, eqn
    new_params = {
        **params,
        "jaxpr": new_body,
        "num_consts": sum(used_inputs[:nc]),
        "num_carry": sum(kept_outputs[:nk]),
        "linear": tuple(lin for lin, u in zip(params["linear"], used_inputs, strict=True) if u),
    }
    new_eqn = type(eqn)(
        eqn.primitive,
        [x for x, u in zip(eqn.invars, used_inputs, strict=True) if u],
        [v for v, u in zip(eqn.outvars, kept_outputs, strict=True) if u],
        new_params,
        eqn.source_info,
    )
    return used_inputs, new_eqn


dce.dce_rules[scan_p] = _scan_dce


# --------------------------------------------------------------------------- associative_scan


def associative_scan(fn, elems, reverse=False, axis=0):
    """Inclusive prefix scan of ``elems`` along ``axis`` under the associative ``fn``:
    ``[a, fn(a, b), fn(fn(a, b), c), ...]`` (with ``reverse``, the suffixes instead).

    ``elems`` is a pytree of arrays sharing the length of ``axis``; ``fn(a, b)`` takes and
    returns pytrees like ``elems`` and must work elementwise over whole arrays (its
    arguments are slices of ``elems`` along ``axis``). This is no primitive: it is the
    parallel (Blelloch) prefix scan written with ``slice``, ``concatenate``, ``reshape`` and
    ``fn``, so ``jit``, ``grad`` and ``vmap`` see ordinary operations. Depth ``O(log n)``,
    ``O(n)`` applications of ``fn`` (on shrinking arrays), as in JAX.
    """
    if not callable(fn):
        raise TypeError("lax.associative_scan: fn argument should be callable.")
    leaves, tree = pytree.tree_flatten(elems)
    if not leaves:
        return elems
    avals = [get_aval(x) for x in leaves]
    axis = canonicalize_axis(axis, avals[0].ndim, "lax.associative_scan")
    n = avals[0].shape[axis]
    if any(a.ndim <= axis or a.shape[axis] != n for a in avals[1:]):
        raise ValueError(
            "Array inputs to associative_scan must have the same first "
            f"dimension. (saw: {[a.shape for a in avals]})"
        )

    def combine(a, b):
        out = pytree.tree_leaves(fn(pytree.tree_unflatten(tree, a), pytree.tree_unflatten(tree, b)))
        if len(out) != len(a):
            raise TypeError(
                f"lax.associative_scan: fn must return {len(a)} arrays, like its "
                f"inputs; it returned {len(out)}"
            )
        return out

    def part(xs, start, stop=None, stride=1):
        return [slice_in_dim(x, start, stop, stride, axis) for x in xs]

    def interleave(evens, odds):
        # [e0, o0, e1, o1, ...]: the two stacked along a new axis after ``axis``, merged.
        # (A reshape rather than JAX's sum of two interior-padded arrays, which turns -0.0
        # into 0.0.) ``evens`` may be one longer; its last element goes on the end.
        m = get_aval(odds).shape[axis]
        head = evens if get_aval(evens).shape[axis] == m else slice_in_dim(evens, 0, m, 1, axis)
        pairs = concatenate(
            [expand_dims(head, (axis + 1,)), expand_dims(odds, (axis + 1,))], axis + 1
        )
        shape = get_aval(odds).shape
        out = reshape(pairs, shape[:axis] + (2 * m,) + shape[axis + 1 :])
        if head is evens:
            return out
        return concatenate([out, slice_in_dim(evens, m, m + 1, 1, axis)], axis)

    def prefix(xs):
        # Results at odd positions: the scan of the pairwise combined elements (recursion);
        # at even positions > 0: the preceding odd result combined with the element there.
        size = get_aval(xs[0]).shape[axis]
        if size < 2:
            return xs
        odd = prefix(combine(part(xs, 0, size - 1, 2), part(xs, 1, None, 2)))
        first = part(xs, 0, 1)
        if size < 3:
            even = first
        else:
            num_odd = size // 2
            prev = odd if size % 2 else part(odd, 0, num_odd - 1)
            later = combine(prev, part(xs, 2, None, 2))
            even = [concatenate([f, e], axis) for f, e in zip(first, later, strict=True)]
        return [interleave(e, o) for e, o in zip(even, odd, strict=True)]

    if reverse:
        leaves = [rev(x, (axis,)) for x in leaves]
    out = prefix(leaves)
    if reverse:
        out = [rev(x, (axis,)) for x in out]
    return pytree.tree_unflatten(tree, out)

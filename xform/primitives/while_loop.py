"""``while_loop`` as the ``while`` primitive, with every rule, and the helpers both loop
primitives use to trace and transform their bodies (``scan`` is in scan.py).

``while[cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts] *cond_consts *body_consts *carry``
runs ``carry = body(*body_consts, *carry)`` while ``cond(*cond_consts, *carry)`` holds.

The sub-jaxprs are const-free ClosedJaxprs: what the Python bodies close over (constants,
tracers of enclosing transformations) are the leading operands, so every interpreter sees
them. Each Python body is traced once per call; every rule transforms the traced body once
and caches the result per body jaxpr, as the ``jit`` call primitive does (``call.py``).
``while_loop`` has no transpose (its trip count is unknown when the program is built), as in
JAX.
"""

import weakref

import numpy as np

from xform import config, core, dtypes, pytree
from xform.core import (
    ClosedJaxpr,
    Jaxpr,
    Literal,
    Tracer,
    Var,
    eager_rules,
    eval_jaxpr,
    eval_trace,
    get_aval,
    set_current_trace,
)
from xform.errors import ConcretizationTypeError
from xform.interpret import ad, batching, dce, partial_eval, transpose
from xform.interpret.batching import not_mapped
from xform.interpret.staging import convert_constvars, trace_to_jaxpr
from xform.primitives import refs
from xform.primitives.base import standard_primitive
from xform.primitives.comparisons import select_n
from xform.primitives.elementwise import (
    convert_element_type,
    convert_element_type_p,
    convert_folding_constants,
)
from xform.primitives.reductions import reduce_or
from xform.primitives.structural import (
    broadcast_in_dim,
)
from xform.traceback_util import api_boundary

__all__ = ["while_loop"]


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


def asarray(x):
    """``x`` as an xform value: Python and NumPy values become arrays of their type (a Python
    scalar's weak type kept); traced values and arrays are returned as they are."""
    if isinstance(x, Tracer) or not isinstance(
        x, (bool, int, float, complex, np.generic, np.ndarray)
    ):
        return x
    aval = get_aval(x)
    return convert_element_type_p.bind(x, new_dtype=aval.dtype, weak_type=aval.weak_type)


# --------------------------------------------------------------------------- while_loop


@api_boundary
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
    if refs.has_refs(body_jaxpr.jaxpr) or refs.has_refs(cond_jaxpr.jaxpr):
        funs, jaxprs = (cond_fun, body_fun, init_val), (cond_jaxpr, body_jaxpr)
        return _while_with_refs(*funs, *jaxprs, cond_consts, body_consts, init, in_tree)
    moved = _read_only_carries(cond_jaxpr, body_jaxpr, len(cond_consts), len(body_consts))
    if any(moved):
        cond_jaxpr, body_jaxpr = _carries_to_consts(
            cond_jaxpr, body_jaxpr, len(cond_consts), len(body_consts), moved
        )
        body_consts = [*_pick(init, moved), *body_consts]
    outs = iter(
        while_p.bind(
            *cond_consts,
            *body_consts,
            *_pick(init, moved, False),
            cond_jaxpr=cond_jaxpr,
            body_jaxpr=body_jaxpr,
            cond_nconsts=len(cond_consts),
            body_nconsts=len(body_consts),
        )
    )
    outs = [x if m else next(outs) for x, m in zip(init, moved, strict=True)]
    return pytree.tree_unflatten(in_tree, outs)


def _while_with_refs(cond_fun, body_fun, init_val, cond_jaxpr, body_jaxpr, cc, bc, init, tree):
    """``while_loop`` of functions that use references, as a loop of their values: each
    reference either function closes over is an extra carry, the functions are the traced
    ones run with their references discharged (refs.py); the final values are written
    back. ``cc``, ``bc``: the functions' consts; ``init``: the flat carry."""
    names = lambda: refs.arg_names(body_fun, (init_val,))  # noqa: E731
    paths = lambda: refs.out_paths(tree)  # noqa: E731
    refs.check_returned(body_jaxpr.jaxpr, body_fun, "while_body", len(bc), names, paths)
    if any(refs.is_ref(x) for x in init):
        raise ValueError(
            f"while_loop of {refs.fun_location(body_fun)}: a mutable array reference cannot "
            "be part of the carry. Close over it in body_fun instead."
        )
    closed = list({id(c): c for c in cc + bc if refs.is_ref(c)}.values())
    slot = {id(c): i for i, c in enumerate(closed)}

    def run(jaxpr, consts, values, carry):
        args = [values[slot[id(c)]] if refs.is_ref(c) else c for c in consts]
        outs = refs.run_discharged(jaxpr.jaxpr, [*args, *carry])
        return outs[: len(outs) - sum(map(refs.is_ref, consts))], outs[len(jaxpr.out_avals) :]

    def new_cond(state):
        values, carry = state
        (pred,), finals = run(cond_jaxpr, cc, values, carry)
        read = [values[slot[id(c)]] for c in cc if refs.is_ref(c)]
        if any(f is not v for f, v in zip(finals, read, strict=True)):
            raise ValueError(
                f"while_loop: cond_fun {refs.fun_location(cond_fun)} writes to a mutable array "
                "reference; a loop's condition may only read them. Write in body_fun instead."
            )
        return pred

    def new_body(state):
        values, carry = state
        carry, finals = run(body_jaxpr, bc, values, carry)
        values = list(values)
        for c, v in zip(filter(refs.is_ref, bc), finals, strict=True):
            values[slot[id(c)]] = v
        return values, carry

    values, carry = while_loop(new_cond, new_body, (refs.read_refs(closed), list(init)))
    refs.write_refs(closed, values)
    return pytree.tree_unflatten(tree, carry)


def _read_only_carries(cond_jaxpr, body_jaxpr, nc, nb):
    """Per carry, whether the body hands it on unchanged and the predicate never reads it.
    As in JAX, such a carry becomes a body const: ``vmap`` with a batched predicate then
    leaves it unbatched (so ``out_axes=None`` holds for it), and the loop carries less."""
    read = {id(v) for e in cond_jaxpr.jaxpr.eqns for v in e.invars}
    read.update(id(v) for v in cond_jaxpr.jaxpr.outvars)
    body = body_jaxpr.jaxpr
    return [
        out is v and id(c) not in read
        for v, out, c in zip(
            body.invars[nb:], body.outvars, cond_jaxpr.jaxpr.invars[nc:], strict=True
        )
    ]


def _carries_to_consts(cond_jaxpr, body_jaxpr, nc, nb, moved):
    """The loop's jaxprs with the ``moved`` carries taken as the first body consts."""
    c, b = cond_jaxpr.jaxpr, body_jaxpr.jaxpr
    cond = _permuted(cond_jaxpr, invars=c.invars[:nc] + _pick(c.invars[nc:], moved, False))
    body_consts, body_carry = b.invars[:nb], b.invars[nb:]
    body = _permuted(
        body_jaxpr,
        invars=_pick(body_carry, moved) + body_consts + _pick(body_carry, moved, False),
        outvars=_pick(b.outvars, moved, False),
    )
    return cond, body


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
    """Which outputs of ``jaxpr`` depend on the inputs marked unknown: per equation, and per
    output through a call (``jit``, ``remat``), whose body says which of its outputs read
    which inputs (a JVP'd body calls a jitted function on primals and tangents at once: its
    primal outputs stay known)."""
    unknown = {v for v, u in zip(jaxpr.invars, unknowns, strict=True) if u}
    for eqn in jaxpr.eqns:
        ins = [type(x) is not Literal and x in unknown for x in eqn.invars]
        if not any(ins):
            continue
        outs = _unknown_outputs_of(eqn, ins)
        unknown.update(v for v, u in zip(eqn.outvars, outs, strict=True) if u)
    return [type(v) is not Literal and v in unknown for v in jaxpr.outvars]


def _unknown_outputs_of(eqn, ins):
    """Per output of ``eqn``, whether it depends on its inputs marked in ``ins``: through
    the bodies of calls, cond and scan (whose dead-code rules can then drop what the known
    outputs do not read); every output for other primitives."""
    name, params = eqn.primitive.name, eqn.params
    if dce.dce_rules.get(eqn.primitive) is dce.dce_call:
        return _unknown_outputs(params["jaxpr"].jaxpr, ins)
    if name == "cond" and not ins[0]:
        per_branch = [_unknown_outputs(b.jaxpr, ins[1:]) for b in params["branches"]]
        return [any(us) for us in zip(*per_branch, strict=True)]
    if name == "scan":
        nc, nk = params["num_consts"], params["num_carry"]
        carry = ins[nc : nc + nk]
        while True:  # the carries' unknowns grow to a fixed point
            outs = _unknown_outputs(params["jaxpr"].jaxpr, ins[:nc] + carry + ins[nc + nk :])
            grown = _or(carry, outs[:nk])
            if grown == carry:
                return grown + outs[nk:]
            carry = grown
    return [True] * len(eqn.outvars)


def _drop_invars(closed, unknowns, used_outputs):
    """``closed`` computing only ``used_outputs``, without the invars marked in
    ``unknowns`` (which those outputs must not read)."""
    jaxpr, _ = dce.dce_jaxpr(closed.jaxpr, used_outputs)
    return ClosedJaxpr(
        Jaxpr([], _pick(jaxpr.invars, unknowns, False), jaxpr.outvars, jaxpr.eqns), []
    )


def _reads_dropped(closed):
    """Whether an equation of ``closed`` reads a variable no invar or equation defines."""
    defined = set(closed.jaxpr.invars) | set(closed.jaxpr.constvars)
    for eqn in closed.jaxpr.eqns:
        if any(type(x) is not Literal and x not in defined for x in eqn.invars):
            return True
        defined.update(eqn.outvars)
    return any(type(v) is not Literal and v not in defined for v in closed.jaxpr.outvars)


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
    if _reads_dropped(body) or _reads_dropped(cond):  # (dead code not prunable: stage all)
        return staged
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

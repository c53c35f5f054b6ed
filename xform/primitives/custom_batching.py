"""The call behind ``custom_vmap``: ``custom_vmap_call[call=..., rule=..., in_tree=...,
out_tree=...] *consts *args`` runs the function's closed jaxpr, except under ``vmap``, where
the user's rule gives the batched outputs.

As in JAX, the function is traced when it is called (xform/custom_batching.py) and its
closed-over values are the leading operands; ``in_tree`` is the structure of ``(consts,
args)``, ``out_tree`` that of the output. The ``rule`` param is called as
``rule(axis_size, in_batched, *tree)``, where ``tree`` is the operands unflattened with
``in_tree`` (``(consts, args)``) and ``in_batched`` a list of the same structure of bools;
it returns ``(out, out_batched)`` of structure ``out_tree``. Differentiation goes through:
the JVP of a call is another call, of the function's JVP, whose rule is the JVP of the
user's rule, vmapped over what only the primals or only the tangents map (JAX's). It has no
transpose rule (reverse mode stops at it, as in JAX).
"""

from xform import core, dtypes, pytree
from xform.core import eager_rules, eval_jaxpr, set_current_trace
from xform.interpret import ad, batching, partial_eval
from xform.interpret.staging import trace_to_jaxpr
from xform.primitives.base import standard_primitive


def _custom_vmap_abstract_eval(*avals, call, rule, in_tree, out_tree):
    return call.out_avals


custom_vmap_p = standard_primitive(
    "custom_vmap_call", _custom_vmap_abstract_eval, multiple_results=True
)


def _custom_vmap_eager(*args, call, rule, in_tree, out_tree):
    with set_current_trace(core.eval_trace):
        return list(eval_jaxpr(call.jaxpr, call.consts, *args))


eager_rules[custom_vmap_p] = _custom_vmap_eager


# --------------------------------------------------------------------------- the rule


def rule_name(rule):
    return getattr(rule, "__name__", "<unnamed rule>")


def call_rule(rule, axis_size, in_batched, args):
    """The user's rule on pytree ``args`` (a tuple, one entry per argument)."""
    return rule(axis_size, list(in_batched), *args)


def check_rule_trees(rule, original_out_tree, out_tree, out_batched_tree):
    """ValueError (JAX's) when the rule's output and ``out_batched`` structures disagree
    with each other or with the function's output."""
    if out_tree != out_batched_tree:
        raise ValueError(
            "structure of output value and output batching specification returned by "
            f"custom vmap rule ({rule_name(rule)}) do not match.\n"
            f"Output values: {out_tree}\nBatching spec: {out_batched_tree}"
        )
    if out_tree != original_out_tree:
        raise ValueError(
            f"structure of output returned by custom vmap rule ({rule_name(rule)}) does not "
            "match that of original custom-vmapped function.\n"
            f"Original output: {original_out_tree}\nRule output: {out_tree}"
        )


def _rule_outputs(rule, out_tree, result):
    """The flat outputs and flat out_batched flags of a rule's result, checked."""
    if not isinstance(result, (tuple, list)) or len(result) != 2:
        raise TypeError(
            f"custom vmap rule ({rule_name(rule)}) must return a pair (out, out_batched), "
            f"got {type(result).__name__}"
        )
    out, out_batched = result
    flat_outs, tree = pytree.tree_flatten(out)
    flat_batched, batched_tree = pytree.tree_flatten(out_batched)
    check_rule_trees(rule, out_tree, tree, batched_tree)
    return flat_outs, [bool(b) for b in flat_batched]


# --------------------------------------------------------------------------- jvp


def _has_float0_tangent(aval):
    return ad.tangent_aval(aval).dtype == dtypes.float0


def _tangent_tree(tree, float0):
    """The structure of ``tree``'s tangents: without the (float0) integer ones, which are
    no operands (JAX binds them as float0 arrays, which xform's traces do not hold)."""
    return pytree.tree_structure(pytree.tree_unflatten(tree, [None if z else 0 for z in float0]))


def _with_zeros(tangents, avals, float0):
    """The full tangent list: a symbolic zero where ``float0`` marks one."""
    tangents = iter(tangents)
    return [
        ad.Zero(ad.tangent_aval(a)) if z else next(tangents)
        for a, z in zip(avals, float0, strict=True)
    ]


def _nonzero_outs(outs, tangents_out, float0_out):
    return list(outs) + [
        ad.instantiate(t) for t, z in zip(tangents_out, float0_out, strict=True) if not z
    ]


def _jvp_call(call, float0, float0_out):
    """The JVP of ``call`` as a closed jaxpr of (primals, tangents) -> (primals_out,
    tangents_out), every tangent instantiated but the float0 ones, which are left out."""
    n = len(call.in_avals)
    avals = list(call.in_avals) + [
        ad.tangent_aval(a) for a, z in zip(call.in_avals, float0, strict=True) if not z
    ]

    def jvp_fun(*args):
        outs, tangents_out = ad.jvp_flat(
            lambda *xs: eval_jaxpr(call.jaxpr, call.consts, *xs),
            list(args[:n]),
            _with_zeros(args[n:], call.in_avals, float0),
        )
        return _nonzero_outs(outs, tangents_out, float0_out)

    return trace_to_jaxpr(jvp_fun, avals, "differentiating a custom_vmap function")


def _jvp_of_rule(rule, out_tree, float0, float0_out):
    """The rule of a differentiated call: the user's rule differentiated, vmapped over the
    primals and tangents that only one of the two maps (JAX's ``jvp_of_rule_rule``)."""

    def jvp_of_rule(axis_size, in_batched, primals, tangents):
        batched_ps, batched_ts = in_batched
        flat_ps, ps_tree = pytree.tree_flatten(primals)
        flat_bps = pytree.tree_leaves(batched_ps)
        nonzero_bts = iter(pytree.tree_leaves(batched_ts))
        flat_bts = [False if z else bool(next(nonzero_bts)) for z in float0]
        mutually_batched = pytree.tree_unflatten(
            ps_tree, [p and t for p, t in zip(flat_bps, flat_bts, strict=True)]
        )
        flat_ts = pytree.tree_leaves(tangents)
        extra_dims = [0 if p and not t else None for p, t in zip(flat_bps, flat_bts, strict=True)]
        extra_dims += [
            0 if t and not p else None
            for p, t, z in zip(flat_bps, flat_bts, float0, strict=True)
            if not z
        ]
        n = len(flat_ps)
        store = {}

        def to_jvp(*xs):
            result = call_rule(
                rule, axis_size, mutually_batched, pytree.tree_unflatten(ps_tree, xs)
            )
            outs, store["batched"] = _rule_outputs(rule, out_tree, result)
            return outs

        def jvp_flat(*xs):
            avals = [core.get_aval(x) for x in xs[:n]]
            outs, tangents_out = ad.jvp_flat(
                to_jvp, list(xs[:n]), _with_zeros(xs[n:], avals, float0)
            )
            return _nonzero_outs(outs, tangents_out, float0_out)

        vals, dims = batching.batch_flat(
            jvp_flat, batching.AxisData(None, axis_size), flat_ps + flat_ts, extra_dims
        )
        vals = [
            v if d is None else batching.moveaxis(v, d, 0) for v, d in zip(vals, dims, strict=True)
        ]
        mutual = store["batched"]
        n_out = len(mutual)
        nonzero_mutual = [m for m, z in zip(mutual, float0_out, strict=True) if not z]
        out_batched = [
            m or d is not None for m, d in zip(mutual + nonzero_mutual, dims, strict=True)
        ]
        t_tree = _tangent_tree(out_tree, float0_out)
        out = (
            pytree.tree_unflatten(out_tree, vals[:n_out]),
            pytree.tree_unflatten(t_tree, vals[n_out:]),
        )
        batched = (
            pytree.tree_unflatten(out_tree, out_batched[:n_out]),
            pytree.tree_unflatten(t_tree, out_batched[n_out:]),
        )
        return out, batched

    jvp_of_rule.__name__ = f"jvp_of_{rule_name(rule)}"
    return jvp_of_rule


def _custom_vmap_jvp(primals, tangents, *, call, rule, in_tree, out_tree):
    float0 = tuple(_has_float0_tangent(a) for a in call.in_avals)
    float0_out = tuple(_has_float0_tangent(a) for a in call.out_avals)
    tangents = [ad.instantiate(t) for t, z in zip(tangents, float0, strict=True) if not z]
    outs = custom_vmap_p.bind(
        *primals,
        *tangents,
        call=_jvp_call(call, float0, float0_out),
        rule=_jvp_of_rule(rule, out_tree, float0, float0_out),
        in_tree=pytree.treedef_tuple((in_tree, _tangent_tree(in_tree, float0))),
        out_tree=pytree.treedef_tuple((out_tree, _tangent_tree(out_tree, float0_out))),
    )
    n = len(call.out_avals)
    return outs[:n], _with_zeros(outs[n:], call.out_avals, float0_out)


ad.jvp_rules[custom_vmap_p] = _custom_vmap_jvp


# --------------------------------------------------------------------------- batching


def _custom_vmap_batch(axis, args, dims, *, call, rule, in_tree, out_tree):
    args = [x if d is None else batching.moveaxis(x, d, 0) for x, d in zip(args, dims, strict=True)]
    in_batched = pytree.tree_unflatten(in_tree, [d is not None for d in dims])
    result = call_rule(rule, axis.size, in_batched, pytree.tree_unflatten(in_tree, args))
    outs, out_batched = _rule_outputs(rule, out_tree, result)
    for i, (x, b, aval) in enumerate(zip(outs, out_batched, call.out_avals, strict=True)):
        want = batching.batched_aval(aval, 0, axis.size) if b else aval
        if core.get_aval(x).shape != want.shape:
            raise ValueError(
                f"custom vmap rule ({rule_name(rule)}): output {i} has shape "
                f"{core.get_aval(x).shape}, expected {want.shape} (batched: {b})"
            )
    return outs, [0 if b else batching.not_mapped for b in out_batched]


batching.batch_rules[custom_vmap_p] = _custom_vmap_batch


# --------------------------------------------------------------------------- reverse mode
# ``custom_vmap_call`` has no transpose rule, as in JAX: its JVP is one call computing the
# primal and tangent outputs together, so linearizing it leaves the primal outputs unknown,
# which JAX reports as a ValueError (wrap the function in ``custom_vjp`` to differentiate it
# in reverse mode).


def _custom_vmap_partial_eval(trace, args, params):
    raise ValueError(
        "Linearization failed to produce known values for all output primals. This is "
        "typically caused by attempting to differentiate a function uses an operation that "
        "does not support reverse-mode autodiff (here custom_vmap_call, whose rule is "
        f"{rule_name(params['rule'])}: wrap the function in custom_vjp to give it one)."
    )


partial_eval.partial_eval_rules[custom_vmap_p] = _custom_vmap_partial_eval

"""Primitives that exist for differentiation: ``stop_gradient`` (the identity whose
derivative is zero) and the calls behind ``custom_jvp`` and ``custom_vjp``."""

from xform import dtypes, pytree
from xform.core import (
    ShapedArray,
    eager_rules,
    eval_jaxpr,
    eval_trace,
    get_aval,
    set_current_trace,
)
from xform.interpret import ad, batching, transpose
from xform.interpret.ad import aval_of
from xform.interpret.staging import convert_constvars, staging_rules, trace_to_jaxpr
from xform.primitives.base import standard_primitive

__all__ = ["stop_gradient"]


def stop_gradient(x):
    """``x``, with a zero derivative: gradients do not flow through it (pytrees too)."""

    def stop(leaf):
        return stop_gradient_p.bind(leaf) if get_aval(leaf).dtype.kind in "fc" else leaf

    return pytree.tree_map(stop, x)


stop_gradient_p = standard_primitive("stop_gradient", lambda x: [x], lambda x: [x])
ad.defjvp_zero(stop_gradient_p)


# --------------------------------------------------------------------------- custom rules
# ``custom_jvp_call`` and ``custom_vjp_call`` run a function and carry the user's rules as
# params. As in JAX, the function is traced only by the interpreters that need its jaxpr: the
# API binds it as a Python function (param ``fun``), which eager evaluation calls, JVP never
# calls (the rule gives the primal outputs too) and vmap wraps for whichever runs it; staging
# traces it and records the equation with its jaxpr (param ``call_jaxpr``, its closed-over
# values as the first ``num_consts`` operands), so a staged program keeps the rules:
# differentiating it later still uses them. A replayed equation binds that jaxpr again.
# The API (xform/custom_derivatives.py) wraps the function and rules to work on flat lists.


def _call_fun(params):
    """The function a custom call runs: ``fun``, or its staged ``call_jaxpr`` replayed."""
    fun = params.get("fun")
    if fun is not None:
        return fun
    jaxpr = params["call_jaxpr"]
    return lambda *args: eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, *args)


def _trace_call(fun, avals):
    """``fun`` traced for ``avals``: a const-free ClosedJaxpr and the closed-over values."""
    what = f"tracing custom-derivative `{getattr(fun, '__name__', 'function')}`"
    return convert_constvars(trace_to_jaxpr(fun, avals, what))


def _call_abstract_eval(*avals, call_jaxpr=None, fun=None, **params):
    if call_jaxpr is None:
        call_jaxpr, _ = _trace_call(fun, list(avals))
    return call_jaxpr.out_avals


def _call_eager(*args, **params):
    # Evaluated by the eager interpreter, whichever trace handed the call down to it.
    with set_current_trace(eval_trace):
        return list(_call_fun(params)(*args))


def _staged_call(prim):
    """Staging rule: trace the function (once) and record the call with its jaxpr."""

    def stage(trace, args, params):
        fun = params.get("fun")
        if fun is None:  # a staged equation replayed: its jaxpr is already there
            return trace.stage(prim, args, params, params["call_jaxpr"].out_avals)
        body, consts = _trace_call(fun, [aval_of(x) for x in args])
        staged = {"call_jaxpr": body}
        staged.update((k, v) for k, v in params.items() if k != "fun")
        staged["num_consts"] += len(consts)
        return trace.stage(prim, [*consts, *args], staged, body.out_avals)

    return stage


custom_jvp_call_p = standard_primitive(
    "custom_jvp_call", _call_abstract_eval, multiple_results=True
)
custom_vjp_call_p = standard_primitive(
    "custom_vjp_call", _call_abstract_eval, multiple_results=True
)
eager_rules[custom_jvp_call_p] = _call_eager
eager_rules[custom_vjp_call_p] = _call_eager
staging_rules[custom_jvp_call_p] = _staged_call(custom_jvp_call_p)
staging_rules[custom_vjp_call_p] = _staged_call(custom_vjp_call_p)


# A rule defined with ``symbolic_zeros=True`` (xform/custom_derivatives.py marks its flat
# wrapper so) is handed the internal ``ad.Zero``s, which that wrapper turns into JAX's
# ``SymbolicZero``s; any other rule gets zeros as arrays.


def _symbolic(rule):
    return getattr(rule, "symbolic_zeros", False)


def _custom_jvp_call_jvp(primals, tangents, *, jvp, num_consts, **call):
    # Closed-over values are not differentiated through: the rule sees the arguments only.
    args, arg_tangents = list(primals[num_consts:]), list(tangents[num_consts:])
    if not _symbolic(jvp):
        arg_tangents = [ad.instantiate(t) for t in arg_tangents]
    return jvp(args, arg_tangents)


def _custom_vjp_call_jvp(primals, tangents, *, fwd, bwd, num_consts, **call):
    args, arg_tangents = primals[num_consts:], tangents[num_consts:]
    if _symbolic(fwd):  # fwd is told which arguments are perturbed
        primals_out, residuals = fwd(list(args), [type(t) is not ad.Zero for t in arg_tangents])
    else:
        primals_out, residuals = fwd(args)
    # As JAX's: an argument with a zero tangent (an integer or boolean one's is float0, which
    # traces do not hold) is no operand of custom_lin, and bwd's cotangent for it is dropped.
    in_zeros = tuple(
        type(t) is ad.Zero or ad.tangent_aval(get_aval(x)).dtype == dtypes.float0
        for x, t in zip(args, arg_tangents, strict=True)
    )
    arg_tangents = [t for t, z in zip(arg_tangents, in_zeros, strict=True) if not z]
    # Likewise an integer or boolean output's tangent is a zero, not an output of custom_lin.
    all_avals = [ad.tangent_aval(get_aval(p)) for p in primals_out]
    out_avals = tuple(a for a in all_avals if a.dtype != dtypes.float0)
    if len(out_avals) < len(all_avals):
        bwd = _float0_cotangents(bwd, all_avals)
    tangents_out = iter(
        custom_lin_p.bind(
            *residuals,
            *arg_tangents,
            num_res=len(residuals),
            bwd=bwd,
            out_avals=out_avals,
            symbolic_zeros=_symbolic(bwd),
            in_zeros=in_zeros,
        )
    )
    return primals_out, [
        ad.Zero(a) if a.dtype == dtypes.float0 else next(tangents_out) for a in all_avals
    ]


def _float0_cotangents(bwd, out_avals):
    """``bwd`` taking the cotangents of the outputs whose tangent type is not float0: the
    others get zeros (symbolic ones, for a symbolic-zeros rule)."""

    def float0_bwd(residuals, cts):
        cts = iter(cts)
        zero = ad.Zero if _symbolic(bwd) else (lambda a: ad.instantiate(ad.Zero(a)))
        return bwd(
            residuals, [zero(a) if a.dtype == dtypes.float0 else next(cts) for a in out_avals]
        )

    float0_bwd.__name__ = getattr(bwd, "__name__", "bwd")  # printed as the bwd= param
    float0_bwd.symbolic_zeros = _symbolic(bwd)
    return float0_bwd


ad.jvp_rules[custom_jvp_call_p] = _custom_jvp_call_jvp
ad.jvp_rules[custom_vjp_call_p] = _custom_vjp_call_jvp


def _custom_jvp_call_transpose(cts, *invals, jvp, num_consts, **call):
    # A custom_jvp function applied to linear values (a rule that applies the function to its
    # tangents, or linear_transpose of it) is linear there, and JAX transposes it through
    # the function itself: the custom rule defines its derivative, not its transpose.
    body, consts = call.get("call_jaxpr"), []
    if body is None:  # not staged: trace the function for the operands' types
        body, consts = _trace_call(
            call["fun"], [x.aval if transpose.is_undefined(x) else aval_of(x) for x in invals]
        )
    cts_in = transpose.backward_pass(body.jaxpr, body.consts, [*consts, *invals], cts)
    return cts_in[len(consts) :]


# custom_vjp_call has no transpose rule, as in JAX: its bwd rule is a VJP of the function's
# primal, not a transpose of the function applied to linear values.
transpose.transpose_rules[custom_jvp_call_p] = _custom_jvp_call_transpose


# ``custom_lin`` stands for the derivative of a custom_vjp function: linear in its tangent
# operands, known only through its transpose, which is the user's bwd rule.


def _custom_lin_abstract_eval(*avals, num_res, bwd, out_avals, symbolic_zeros, in_zeros):
    return list(out_avals)


def _custom_lin_forward(*args, **params):
    raise TypeError(
        "can't apply forward-mode autodiff (jvp) to a custom_vjp function: "
        "differentiate it in reverse mode (grad, vjp), or define it with "
        "custom_jvp instead"
    )


custom_lin_p = standard_primitive("custom_lin", _custom_lin_abstract_eval, multiple_results=True)
eager_rules[custom_lin_p] = _custom_lin_forward


def _custom_lin_transpose(cts, *invals, num_res, bwd, out_avals, symbolic_zeros, in_zeros):
    residuals = invals[:num_res]
    cts = [ad.Zero(a) if ct is None else ct for ct, a in zip(cts, out_avals, strict=True)]
    if not _symbolic(bwd):
        cts = [ad.instantiate(ct) for ct in cts]
    cts_in = bwd(list(residuals), cts)
    return [None] * num_res + [ct for ct, z in zip(cts_in, in_zeros, strict=True) if not z]


transpose.transpose_rules[custom_lin_p] = _custom_lin_transpose


# --------------------------------------------------------------------------- batching
# The custom-derivative calls are batched lazily, as they are differentiated: the function
# and the rules are wrapped in a vmap of their own and bound on the parent trace, which runs
# the one it needs; a rule always sees the per-example values it was written for. The
# function may close over values mapped by this vmap, so the call is batched even when none
# of its operands is (it is in ``axis_rules``): traced per example first, it finds them among
# its closed-over values. What nothing maps stays unmapped; otherwise every output (and
# residual) is batched at 0, so the wrapped function and rules agree on where the batch is.

batching.defvectorized(stop_gradient_p)


def _all_at_front(n):
    return [0] * n


def _mapped_here(x, axis):
    """Whether ``x`` is a tracer of a vmap over ``axis`` (the one whose rule is running)."""
    return isinstance(x, batching.BatchTracer) and x._trace.axis is axis


def _unbatched_aval(aval, dim):
    if dim is batching.not_mapped:
        return aval
    return ShapedArray(aval.shape[:dim] + aval.shape[dim + 1 :], aval.dtype, aval.weak_type)


def _vmap_with_zeros(fun, axis, args, dims, out_dims):
    """``batching.vmap_flat`` of a rule whose operands and results may be symbolic zeros
    (``ad.Zero``): a zero operand reaches ``fun`` as the zero of its per-example type and
    is no operand of the vmap; a zero result comes back as the zero of its type batched
    along its out dim (``out_dims``: a list, or a function of the number of results)."""
    inner = [
        ad.Zero(_unbatched_aval(x.aval, d)) if type(x) is ad.Zero else None
        for x, d in zip(args, dims, strict=True)
    ]
    live = [(x, d) for x, d, z in zip(args, dims, inner, strict=True) if z is None]
    zero_avals = []  # per result of ``fun``: its zero's aval, or None

    def live_fun(*xs):
        xs = iter(xs)
        outs = fun(*[next(xs) if z is None else z for z in inner])
        zero_avals[:] = [o.aval if type(o) is ad.Zero else None for o in outs]
        return [o for o in outs if type(o) is not ad.Zero]

    def all_dims():
        return out_dims(len(zero_avals)) if callable(out_dims) else out_dims

    outs = iter(
        batching.vmap_flat(
            live_fun,
            axis,
            [x for x, _ in live],
            [d for _, d in live],
            lambda n: [d for d, a in zip(all_dims(), zero_avals, strict=True) if a is None],
        )
    )
    return [
        next(outs) if a is None else ad.Zero(batching.batched_aval(a, d, axis.size))
        for a, d in zip(zero_avals, all_dims(), strict=True)
    ]


def _batched_fun(fun, axis, dims, out_dims):
    """``fun`` on operands batched along ``dims``; sets ``out_dims`` when it runs."""

    def batched(*vals):
        avals = [_unbatched_aval(get_aval(v), d) for v, d in zip(vals, dims, strict=True)]
        body, consts = _trace_call(fun, avals)
        const_vals = [c.val if _mapped_here(c, axis) else c for c in consts]
        const_dims = [c.batch_dim if _mapped_here(c, axis) else batching.not_mapped for c in consts]
        all_dims = const_dims + list(dims)
        if all(d is batching.not_mapped for d in all_dims) and (
            axis.name is None or axis.name not in batching.axis_names(body.jaxpr)
        ):
            out_dims[:] = [batching.not_mapped] * len(body.out_avals)
            return eval_jaxpr(body.jaxpr, body.consts, *const_vals, *vals)
        out_dims[:] = [0] * len(body.out_avals)
        return batching.vmap_flat(
            lambda *xs: eval_jaxpr(body.jaxpr, body.consts, *xs),
            axis,
            const_vals + list(vals),
            all_dims,
            _all_at_front,
        )

    batched.__name__ = getattr(fun, "__name__", "function")
    return batched


def _batched_bwd(bwd, axis, res_dims, ct_dims, arg_dims):
    """``bwd`` on batched residuals and cotangents; an unmapped argument's cotangent is the
    sum of the per-example ones."""
    num_res = len(res_dims)

    def batched_bwd(residuals, cts):
        cts_in = _vmap_with_zeros(
            lambda *xs: bwd(list(xs[:num_res]), list(xs[num_res:])),
            axis,
            list(residuals) + list(cts),
            res_dims + ct_dims,
            [0 if d is None else d for d in arg_dims],
        )
        return [
            ct if d is not None else _sum_examples(ct)
            for ct, d in zip(cts_in, arg_dims, strict=True)
        ]

    batched_bwd.__name__ = getattr(bwd, "__name__", "bwd")  # printed as the bwd= param
    batched_bwd.symbolic_zeros = _symbolic(bwd)
    return batched_bwd


def _sum_examples(ct):
    """The cotangent of an unmapped operand from its per-example ones (batched at 0)."""
    if type(ct) is ad.Zero:
        return ad.Zero(_unbatched_aval(ct.aval, 0))
    return ad.tangent_ops["reduce_sum"](ct, (0,))


def _custom_jvp_call_batch(axis, args, dims, *, jvp, num_consts, **call):
    out_dims = []  # set by whichever of the function and the rule the parent runs
    fun = _batched_fun(_call_fun(call), axis, dims, out_dims)
    arg_dims = list(dims[num_consts:])
    n_out = []

    def jvp_counting(primals, tangents):
        primals_out, tangents_out = jvp(primals, tangents)
        n_out[:] = [len(primals_out)]
        return primals_out, tangents_out

    def batched_jvp(primals, tangents):
        # (Even with no operand mapped: the rule may close over values this vmap maps.)
        outs = _vmap_with_zeros(
            lambda *xs: _concat(jvp_counting(list(xs[: len(primals)]), list(xs[len(primals) :]))),
            axis,
            list(primals) + list(tangents),
            arg_dims + arg_dims,
            _all_at_front,
        )
        out_dims[:] = [0] * n_out[0]
        return outs[: n_out[0]], outs[n_out[0] :]

    batched_jvp.__name__ = getattr(jvp, "__name__", "jvp")  # printed as the jvp= param
    batched_jvp.symbolic_zeros = _symbolic(jvp)
    outs = custom_jvp_call_p.bind(
        *args,
        fun=fun,
        jvp=batched_jvp,
        num_consts=num_consts,
        name=call["name"],
        symbolic_zeros=call["symbolic_zeros"],
    )
    return outs, list(out_dims)


def _concat(pair):
    return list(pair[0]) + list(pair[1])


def _custom_vjp_call_batch(axis, args, dims, *, fwd, bwd, num_consts, **call):
    out_dims = []
    fun = _batched_fun(_call_fun(call), axis, dims, out_dims)
    arg_dims = list(dims[num_consts:])
    n_out, num_res = [], []

    def batched_fwd(primals, *perturbed):  # (perturbed: for a symbolic-zeros fwd)
        # (Even with no operand mapped: fwd may close over values this vmap maps.)
        def flat_fwd(*xs):
            outs, residuals = fwd(list(xs), *perturbed)
            n_out[:], num_res[:] = [len(outs)], [len(residuals)]
            return list(outs) + list(residuals)

        outs = batching.vmap_flat(flat_fwd, axis, list(primals), arg_dims, _all_at_front)
        out_dims[:] = [0] * n_out[0]
        return outs[: n_out[0]], outs[n_out[0] :]

    def batched_bwd(residuals, cts):
        inner = _batched_bwd(bwd, axis, [0] * num_res[0], [0] * n_out[0], arg_dims)
        return inner(residuals, cts)

    batched_fwd.__name__ = getattr(fwd, "__name__", "fwd")  # printed as fwd= and bwd=
    batched_bwd.__name__ = getattr(bwd, "__name__", "bwd")
    batched_fwd.symbolic_zeros = batched_bwd.symbolic_zeros = _symbolic(fwd)
    outs = custom_vjp_call_p.bind(
        *args,
        fun=fun,
        fwd=batched_fwd,
        bwd=batched_bwd,
        num_consts=num_consts,
        name=call["name"],
        symbolic_zeros=call["symbolic_zeros"],
    )
    return outs, list(out_dims)


def _nonzero_cotangents(bwd, in_zeros):
    """``bwd`` returning only the cotangents of the arguments with nonzero tangents."""
    if not any(in_zeros):
        return bwd

    def nonzero_bwd(residuals, cts):
        return [ct for ct, z in zip(bwd(residuals, cts), in_zeros, strict=True) if not z]

    nonzero_bwd.__name__ = getattr(bwd, "__name__", "bwd")
    nonzero_bwd.symbolic_zeros = _symbolic(bwd)
    return nonzero_bwd


def _custom_lin_batch(axis, args, dims, *, num_res, bwd, out_avals, symbolic_zeros, in_zeros):
    res_dims, arg_dims = list(dims[:num_res]), list(dims[num_res:])
    # Only the operands' cotangents are batched (a float0 one could not be).
    batched_bwd = _batched_bwd(
        _nonzero_cotangents(bwd, in_zeros), axis, res_dims, [0] * len(out_avals), arg_dims
    )
    out_avals = tuple(batching.batched_aval(a, 0, axis.size) for a in out_avals)
    outs = custom_lin_p.bind(
        *args,
        num_res=num_res,
        bwd=batched_bwd,
        out_avals=out_avals,
        symbolic_zeros=symbolic_zeros,
        in_zeros=(False,) * len(arg_dims),
    )
    return outs, [0] * len(outs)


batching.axis_rules[custom_jvp_call_p] = _custom_jvp_call_batch
batching.axis_rules[custom_vjp_call_p] = _custom_vjp_call_batch
batching.batch_rules[custom_lin_p] = _custom_lin_batch

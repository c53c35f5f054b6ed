"""Primitives that exist for differentiation: ``stop_gradient`` (the identity whose
derivative is zero) and the calls behind ``custom_jvp`` and ``custom_vjp``."""


from xform import tree_util
from xform.core import eager_rules, eval_jaxpr, eval_trace, get_aval, set_current_trace
from xform.interpreters import ad, batching, transpose
from xform.interpreters.staging import convert_constvars, trace_to_jaxpr
from xform.primitives.base import standard_primitive

__all__ = ["stop_gradient"]


def stop_gradient(x):
    """``x``, with a zero derivative: gradients do not flow through it (pytrees too)."""

    def stop(leaf):
        return stop_gradient_p.bind(leaf) if get_aval(leaf).dtype.kind in "fc" else leaf

    return tree_util.tree_map(stop, x)


stop_gradient_p = standard_primitive("stop_gradient", lambda x: [x], lambda x: [x])
ad.defjvp_zero(stop_gradient_p)


# --------------------------------------------------------------------------- custom rules
# ``custom_jvp_call`` and ``custom_vjp_call`` run a traced function (``call_jaxpr``, its
# closed-over values as the first ``num_consts`` operands) and carry the user's rules as
# params, so a staged program keeps them: differentiating it later still uses the rules.
# The API (xform/custom_derivatives.py) wraps the rules to work on flat lists.


def _call_abstract_eval(*avals, call_jaxpr, **params):
    return call_jaxpr.out_avals


def _call_eager(*args, call_jaxpr, **params):
    # Evaluated by the eager interpreter, whichever trace handed the call down to it.
    with set_current_trace(eval_trace):
        return eval_jaxpr(call_jaxpr.jaxpr, call_jaxpr.consts, *args)


custom_jvp_call_p = standard_primitive("custom_jvp_call", _call_abstract_eval,
                                       multiple_results=True)
custom_vjp_call_p = standard_primitive("custom_vjp_call", _call_abstract_eval,
                                       multiple_results=True)
eager_rules[custom_jvp_call_p] = _call_eager
eager_rules[custom_vjp_call_p] = _call_eager


def _custom_jvp_call_jvp(primals, tangents, *, call_jaxpr, jvp, num_consts):
    # Closed-over values are not differentiated through: the rule sees the arguments only.
    args = primals[num_consts:]
    arg_tangents = [ad.instantiate(t) for t in tangents[num_consts:]]
    return jvp(args, arg_tangents)


def _custom_vjp_call_jvp(primals, tangents, *, call_jaxpr, fwd, bwd, num_consts):
    primals_out, residuals = fwd(primals[num_consts:])
    arg_tangents = [ad.instantiate(t) for t in tangents[num_consts:]]
    out_avals = tuple(ad.tangent_aval(get_aval(p)) for p in primals_out)
    tangents_out = custom_lin_p.bind(*residuals, *arg_tangents, num_res=len(residuals),
                                     bwd=bwd, out_avals=out_avals)
    return primals_out, tangents_out


ad.jvp_rules[custom_jvp_call_p] = _custom_jvp_call_jvp
ad.jvp_rules[custom_vjp_call_p] = _custom_vjp_call_jvp


# ``custom_lin`` stands for the derivative of a custom_vjp function: linear in its tangent
# operands, known only through its transpose, which is the user's bwd rule.

def _custom_lin_abstract_eval(*avals, num_res, bwd, out_avals):
    return list(out_avals)


def _custom_lin_forward(*args, **params):
    raise TypeError("can't apply forward-mode autodiff (jvp) to a custom_vjp function: "
                    "differentiate it in reverse mode (grad, vjp), or define it with "
                    "custom_jvp instead")


custom_lin_p = standard_primitive("custom_lin", _custom_lin_abstract_eval,
                                  multiple_results=True)
eager_rules[custom_lin_p] = _custom_lin_forward


def _custom_lin_transpose(cts, *invals, num_res, bwd, out_avals):
    residuals = invals[:num_res]
    cts_in = bwd(list(residuals), [ad.instantiate(ct) for ct in cts])
    return [None] * num_res + list(cts_in)


transpose.transpose_rules[custom_lin_p] = _custom_lin_transpose


# --------------------------------------------------------------------------- batching
# The custom-derivative calls are batched by batching their jaxpr and wrapping the user's
# rules in a vmap of their own: a rule always sees the per-example values it was written for.
# Every output (and residual) is batched at 0, so the wrapped rules agree on where the batch is.

batching.defvectorized(stop_gradient_p)


def _all_at_front(n):
    return [0] * n


def _batched_call_jaxpr(call_jaxpr, axis, dims):
    in_avals = [batching.batched_aval(a, d, axis.size)
                for a, d in zip(call_jaxpr.in_avals, dims, strict=True)]

    def batched(*args):
        return batching.vmap_flat(lambda *xs: eval_jaxpr(call_jaxpr.jaxpr, call_jaxpr.consts,
                                                         *xs),
                                  axis, args, dims, _all_at_front)

    return convert_constvars(trace_to_jaxpr(batched, in_avals, "vectorizing a custom rule"))


def _batched_bwd(bwd, axis, res_dims, ct_dims, arg_dims):
    """``bwd`` on batched residuals and cotangents; an unmapped argument's cotangent is the
    sum of the per-example ones."""
    num_res = len(res_dims)

    def batched_bwd(residuals, cts):
        cts_in = batching.vmap_flat(lambda *xs: bwd(list(xs[:num_res]), list(xs[num_res:])),
                                    axis, list(residuals) + list(cts), res_dims + ct_dims,
                                    [0 if d is None else d for d in arg_dims])
        return [ct if d is not None else ad.tangent_ops["reduce_sum"](ct, (0,))
                for ct, d in zip(cts_in, arg_dims, strict=True)]

    return batched_bwd


def _custom_jvp_call_batch(axis, args, dims, *, call_jaxpr, jvp, num_consts):
    body, consts = _batched_call_jaxpr(call_jaxpr, axis, dims)
    arg_dims = list(dims[num_consts:])
    n_out = len(call_jaxpr.out_avals)

    def batched_jvp(primals, tangents):
        outs = batching.vmap_flat(lambda *xs: _concat(jvp(list(xs[:len(primals)]),
                                                          list(xs[len(primals):]))),
                                  axis, list(primals) + list(tangents), arg_dims + arg_dims,
                                  _all_at_front)
        return outs[:n_out], outs[n_out:]

    outs = custom_jvp_call_p.bind(*consts, *args, call_jaxpr=body, jvp=batched_jvp,
                                  num_consts=len(consts) + num_consts)
    return outs, [0] * len(outs)


def _concat(pair):
    return list(pair[0]) + list(pair[1])


def _custom_vjp_call_batch(axis, args, dims, *, call_jaxpr, fwd, bwd, num_consts):
    body, consts = _batched_call_jaxpr(call_jaxpr, axis, dims)
    arg_dims = list(dims[num_consts:])
    n_out = len(call_jaxpr.out_avals)
    num_res = []

    def batched_fwd(primals):
        def flat_fwd(*xs):
            outs, residuals = fwd(list(xs))
            num_res[:] = [len(residuals)]
            return list(outs) + list(residuals)

        outs = batching.vmap_flat(flat_fwd, axis, list(primals), arg_dims, _all_at_front)
        return outs[:n_out], outs[n_out:]

    def batched_bwd(residuals, cts):
        inner = _batched_bwd(bwd, axis, [0] * num_res[0], [0] * n_out, arg_dims)
        return inner(residuals, cts)

    outs = custom_vjp_call_p.bind(*consts, *args, call_jaxpr=body, fwd=batched_fwd,
                                  bwd=batched_bwd, num_consts=len(consts) + num_consts)
    return outs, [0] * len(outs)


def _custom_lin_batch(axis, args, dims, *, num_res, bwd, out_avals):
    res_dims, arg_dims = list(dims[:num_res]), list(dims[num_res:])
    batched_bwd = _batched_bwd(bwd, axis, res_dims, [0] * len(out_avals), arg_dims)
    out_avals = tuple(batching.batched_aval(a, 0, axis.size) for a in out_avals)
    outs = custom_lin_p.bind(*args, num_res=num_res, bwd=batched_bwd, out_avals=out_avals)
    return outs, [0] * len(outs)


batching.batch_rules[custom_jvp_call_p] = _custom_jvp_call_batch
batching.batch_rules[custom_vjp_call_p] = _custom_vjp_call_batch
batching.batch_rules[custom_lin_p] = _custom_lin_batch

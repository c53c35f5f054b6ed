"""Primitives that exist for differentiation: ``stop_gradient`` (the identity whose
derivative is zero) and the calls behind ``custom_jvp`` and ``custom_vjp``."""


from xform import tree_util
from xform.core import eager_rules, eval_jaxpr, eval_trace, get_aval, set_current_trace
from xform.interpreters import ad, transpose
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

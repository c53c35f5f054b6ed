"""Lowering of the autodiff family: ``stop_gradient`` is the identity; custom-derivative
calls are calls of their traced function (the rules matter only to differentiation)."""

from lowering.call import emit_call
from lowering.mlir import lowering_rules
from xform.primitives import autodiff


def _call_lower(ctx, *args, call_jaxpr, **params):
    return emit_call(ctx, args, call_jaxpr, "custom_call")


def _custom_lin_lower(ctx, *args, **params):
    autodiff._custom_lin_forward()


lowering_rules[autodiff.stop_gradient_p] = lambda ctx, x: [x]
lowering_rules[autodiff.custom_jvp_call_p] = _call_lower
lowering_rules[autodiff.custom_vjp_call_p] = _call_lower
lowering_rules[autodiff.custom_lin_p] = _custom_lin_lower

"""Lowering of the autodiff family: ``stop_gradient`` is the identity; custom-derivative
calls are their traced function, inline as JAX emits it (the rules matter only to
differentiation)."""

from lowering.mlir import lower_inline, lowering_rules
from xform.primitives import autodiff


def _call_lower(ctx, *args, call_jaxpr, **params):
    return lower_inline(ctx.module, call_jaxpr, args)


def _custom_lin_lower(ctx, *args, **params):
    autodiff._custom_lin_forward()


lowering_rules[autodiff.stop_gradient_p] = lambda ctx, x: [x]
lowering_rules[autodiff.custom_jvp_call_p] = _call_lower
lowering_rules[autodiff.custom_vjp_call_p] = _call_lower
lowering_rules[autodiff.custom_lin_p] = _custom_lin_lower

"""Lowering of the special functions, as JAX 0.10.2 lowers them: ``bessel_i1e``, ``zeta`` and
``polygamma`` to CHLO ops; ``igamma``, ``igammac``, ``igamma_grad_a``, ``betainc`` and
``bessel_i0e`` to their series and continued fractions (the compositions of
``xform/primitives/special.py``), emitted inline, half floats computed in float32."""

from jaxlib.mlir.dialects import chlo

from lowering.linalg import lower_composition
from lowering.mlir import broadcast_to, elementwise_rule, lowering_rules
from xform.primitives import special as sp


def _composition(impl):
    """Rule emitting ``impl`` (a composition on same-shaped operands) inline."""
    impl = sp.in_float32(impl)

    def rule(ctx, *args):
        out = ctx.avals_out[0]
        args = [broadcast_to(x, a, out) for x, a in zip(args, ctx.avals_in, strict=True)]
        aval = out.update(weak_type=False)
        return lower_composition(
            ctx, lambda *xs: [impl(*xs)], [aval] * len(args), args, impl.__name__
        )

    return rule


lowering_rules[sp.igamma_p] = _composition(sp.igamma_impl)
lowering_rules[sp.igammac_p] = _composition(sp.igammac_impl)
lowering_rules[sp.igamma_grad_a_p] = _composition(sp.igamma_grad_a_impl)
lowering_rules[sp.regularized_incomplete_beta_p] = _composition(sp.betainc_impl)
lowering_rules[sp.bessel_i0e_p] = _composition(sp.bessel_i0e_impl)
lowering_rules[sp.bessel_i1e_p] = elementwise_rule(chlo.bessel_i1e)
lowering_rules[sp.zeta_p] = elementwise_rule(chlo.zeta)
lowering_rules[sp.polygamma_p] = elementwise_rule(chlo.polygamma)

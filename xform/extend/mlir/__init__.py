"""Lowering new primitives to StableHLO, as ``jax.extend.mlir`` and ``jax.interpreters.mlir``
name it.

A lowering rule is ``rule(ctx, *operands, **params) -> [ir.Value, ...]``: ``ctx.avals_in`` and
``ctx.avals_out`` hold the equation's types, the operands are MLIR values, and the rule builds
ops with jaxlib's MLIR bindings (``dialects.stablehlo``, ``ir``) at the current insertion
point. ``lower_fun`` makes such a rule from a Python function of xform ops.

Helpers, the ones xform's own lowering rules use (``lowering/mlir.py``, handed on
unchanged): ``ir_constant(value, dtype=None)`` (a ``stablehlo.constant``),
``full_like_aval(value, aval)`` (a constant broadcast to ``aval``'s shape),
``broadcast_to(x, aval_in, aval_out)`` (an elementwise op's operand broadcast to its result
shape: a rank-0 one, or one with size-1 dimensions) and ``elementwise_rule(op)`` (the whole
rule of an elementwise primitive whose StableHLO op takes same-shaped operands).
``lowering_rules`` is the table ``register_lowering`` fills, the one the built-ins fill.

Example:
  >>> def _lower(ctx, x, y):
  ...     return [dialects.stablehlo.add(x, y)]
  >>> register_lowering(my_add_p, _lower)
  >>> register_lowering(my_add_p, elementwise_rule(dialects.stablehlo.add))  # broadcasting
"""

from lowering import runtime
from lowering.mlir import RuleContext as LoweringRuleContext
from lowering.mlir import (
    _jax,
    broadcast_to,
    elementwise_rule,
    full_like_aval,
    ir,
    lower_jaxpr,
    lowering_rules,
    module_text,
)
from lowering.mlir import aval_to_ir as aval_to_ir_type
from lowering.mlir import constant as ir_constant
from lowering.mlir import dtype_to_ir as dtype_to_ir_type
from lowering.mlir import make_context as make_ir_context
from xform.extend.mlir import dialects
from xform.interpret.staging import trace_to_jaxpr

__all__ = [
    "LoweringRuleContext",
    "aval_to_ir_type",
    "broadcast_to",
    "deserialize_portable_artifact",
    "dialects",
    "dtype_to_ir_type",
    "elementwise_rule",
    "full_like_aval",
    "hlo_to_stablehlo",
    "ir",
    "ir_constant",
    "lower_fun",
    "lowering_rules",
    "make_ir_context",
    "module_to_string",
    "refine_polymorphic_shapes",
    "register_lowering",
    "serialize_portable_artifact",
]

deserialize_portable_artifact = _jax.mlir.deserialize_portable_artifact
serialize_portable_artifact = _jax.mlir.serialize_portable_artifact
refine_polymorphic_shapes = _jax.mlir.refine_polymorphic_shapes
hlo_to_stablehlo = _jax.mlir.hlo_to_stablehlo
module_to_string = module_text

# JAX's platform names for the backends xform may run on.
_PLATFORM_ALIASES = {
    "gpu": ("cuda", "rocm", "gpu"),
    "cuda": ("cuda", "gpu"),
    "rocm": ("rocm", "gpu"),
    "cpu": ("cpu",),
    "tpu": ("tpu",),
}


def register_lowering(prim, rule, platform=None):
    """Make ``rule(ctx, *operands, **params) -> [ir.Value, ...]`` lower ``prim`` under ``jit``.

    Args:
      prim: the primitive.
      rule: the lowering rule (see the module's docstring).
      platform: None for every backend; else a platform name ("cpu", "cuda", "rocm", "gpu",
        "tpu"): the rule is used only when xform runs on that platform (xform has one backend
        per process, so a rule for another platform is not kept).

    Returns:
      ``rule``.
    """
    if platform is not None:
        if platform not in _PLATFORM_ALIASES:
            raise ValueError(
                f"register_lowering: unknown platform {platform!r} for primitive "
                f"'{prim.name}'; expected one of {sorted(_PLATFORM_ALIASES)}"
            )
        if runtime.platform() not in _PLATFORM_ALIASES[platform]:
            return rule
    lowering_rules[prim] = rule
    return rule


def lower_fun(fun, multiple_results=True):
    """A lowering rule that emits ``fun(*operands, **params)``, a Python function of xform
    operations, traced at the equation's input types and lowered inline.

    ``fun`` returns a sequence of results, or one result when ``multiple_results`` is False.
    """

    def rule(ctx, *args, **params):
        def flat(*xs):
            outs = fun(*xs, **params)
            return list(outs) if multiple_results else [outs]

        name = f"lowering {getattr(fun, '__name__', 'a function')} with lower_fun"
        closed = trace_to_jaxpr(flat, list(ctx.avals_in), name)
        consts = [
            ir_constant(c, v.aval.dtype)
            for v, c in zip(closed.jaxpr.constvars, closed.consts, strict=True)
        ]
        return lower_jaxpr(ctx.module, closed.jaxpr, consts, list(args))

    return rule

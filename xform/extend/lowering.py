"""What a lowering rule receives, as ``jax.extend.lowering`` names it."""

from lowering.mlir import RuleContext as LoweringRuleContext  # noqa: F401

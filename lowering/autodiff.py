"""Lowering of the autodiff family: ``stop_gradient`` is the identity."""

from lowering.mlir import lowering_rules
from xform.primitives import autodiff

lowering_rules[autodiff.stop_gradient_p] = lambda ctx, x: [x]

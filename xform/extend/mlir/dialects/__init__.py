"""The MLIR dialects a lowering rule builds ops with (jaxlib's bindings):
``from xform.extend.mlir.dialects import stablehlo``."""

from lowering.mlir import chlo, func  # noqa: F401
from lowering.mlir import hlo as stablehlo  # noqa: F401

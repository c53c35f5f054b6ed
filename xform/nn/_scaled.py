"""Block-scaled matmuls: ``scaled_matmul``, ``scaled_dot_general`` and their configs.

JAX runs these through cuDNN only (on CPU they raise ``NotImplementedError``); here
``scaled_matmul`` computes its documented meaning in float32 on any backend, and
``scaled_dot_general`` is ``lax.dot_general`` without quantization configs.
"""

import dataclasses
import warnings

import ml_dtypes
import numpy as np

from xform import lax
from xform import numpy as xnp
from xform.numpy._promote import aval_of, check_arraylike

__all__ = [
    "BlockScaleConfig",
    "get_scaled_dot_general_config",
    "scaled_dot_general",
    "scaled_matmul",
]


@dataclasses.dataclass
class BlockScaleConfig:
    """How one operand of ``scaled_dot_general`` is block-quantized."""

    mode: str
    block_size: int
    data_type: object
    scale_type: object
    global_scale: object
    infer_only: bool


def scaled_matmul(lhs, rhs, lhs_scales, rhs_scales, preferred_element_type=np.float32):
    """Block-scaled batched matmul ``einsum('BMK,BNK->BMN', lhs * ls, rhs * rs)``, each scale
    repeated over blocks of ``K // K_scales`` along the last axis, computed in float32.

    Args:
      lhs: ``(B, M, K)``.
      rhs: ``(B, N, K)``.
      lhs_scales: ``(B, M, K_a)`` with ``K % K_a == 0``.
      rhs_scales: ``(B, N, K_b)`` with ``K % K_b == 0``.
      preferred_element_type: the output dtype.

    Example:
      >>> a = xform.numpy.array([1., 2., 3.]).reshape(1, 1, 3)
      >>> s = xform.numpy.full((1, 1, 1), 0.5)
      >>> scaled_matmul(a, a + 3, s, s)  # [[[8.]]]
    """
    check_arraylike("scaled_matmul", lhs, rhs, lhs_scales, rhs_scales)
    a, b, sa, sb = (xnp.asarray(t) for t in (lhs, rhs, lhs_scales, rhs_scales))
    shapes = [aval_of(t).shape for t in (a, b, sa, sb)]
    if any(len(s) != 3 for s in shapes):
        raise ValueError(
            f"scaled_matmul requires all inputs to be 3-dimensional arrays, got shapes {shapes}"
        )
    (ba, m, ka), (bb, n, kb), (bsa, msa, ksa), (bsb, nsb, ksb) = shapes
    if ka != kb or ba != bb:
        raise ValueError(
            f"scaled_matmul requires inputs a and b to have matching batch (B) and "
            f"contract (K) dimensions, but got shapes {shapes[0]} and {shapes[1]}"
        )
    if ksa != ksb or bsa != bsb:
        raise ValueError(
            f"scaled_matmul requires scales to have matching batch (B) and "
            f"contract (K) dimensions, but got shapes {shapes[2]} and {shapes[3]}"
        )
    if msa != m or nsb != n:
        raise ValueError(
            f"scaled_matmul requires scales to match non-contract dimensions of "
            f"inputs, but got shapes a: {shapes[0]}, b: {shapes[1]}, a_scales: "
            f"{shapes[2]}, b_scales: {shapes[3]}"
        )
    if ksa == 0 or ka % ksa != 0:
        raise ValueError(
            f"scaled_matmul: the contract dimension {ka} must be a multiple of the scales' {ksa}"
        )

    def scaled(x, s):
        x, s = x.astype(np.float32), s.astype(np.float32)
        return x * xnp.repeat(s, ka // ksa, axis=-1)

    out = lax.dot_general(
        scaled(a, sa),
        scaled(b, sb),
        (((2,), (2,)), ((0,), (0,))),
        preferred_element_type=np.float32,
    )
    return out.astype(preferred_element_type)


def get_scaled_dot_general_config(mode, global_scale=None):
    """The ``BlockScaleConfig`` of ``"nvfp4"`` (block 16, float4_e2m1fn data, float8_e4m3fn
    scales) or ``"mxfp8"`` (block 32, float8_e4m3fn data, float8_e8m0fnu scales)."""
    if mode == "nvfp4":
        scale = xnp.ones((1,), np.float32) if global_scale is None else global_scale
        return BlockScaleConfig(
            "nvfp4", 16, ml_dtypes.float4_e2m1fn, ml_dtypes.float8_e4m3fn, scale, False
        )
    if mode == "mxfp8":
        return BlockScaleConfig(
            "mxfp8", 32, ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e8m0fnu, None, False
        )
    raise ValueError(
        f"get_scaled_dot_general_config: unsupported mode: {mode!r}; expected 'nvfp4' or 'mxfp8'"
    )


def scaled_dot_general(
    lhs,
    rhs,
    dimension_numbers,
    preferred_element_type=np.float32,
    configs=None,
    implementation=None,
):
    """``lax.dot_general`` with optional block-scaled quantization of both operands.

    Args:
      lhs, rhs: the operands.
      dimension_numbers: as ``lax.dot_general``.
      preferred_element_type: the output dtype.
      configs: three ``BlockScaleConfig`` (lhs, rhs, gradient) or ``None`` for a plain
        ``dot_general``. Quantized execution needs cuDNN, as JAX's.
      implementation: ignored (deprecated).
    """
    if implementation is not None:
        warnings.warn(
            "Backend selector, now ignored. The system chooses the backend automatically.",
            DeprecationWarning,
            stacklevel=2,
        )
    if configs is None:
        return lax.dot_general(
            lhs, rhs, dimension_numbers, preferred_element_type=preferred_element_type
        )
    raise NotImplementedError(
        "scaled_dot_general: quantized configs need the cuDNN "
        "'scaled_matmul' kernel, which has no lowering for this "
        "platform (as JAX on CPU)"
    )

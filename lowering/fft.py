"""Lowering of the fft family: ``stablehlo.fft`` with JAX's ``fft_type`` and ``fft_length``
attributes (on CPU, XLA runs it with its DUCC kernel).

On GPUs a multi-dimensional IRFFT is split, as JAX splits it: cuFFT's complex-to-real
transform assumes Hermitian symmetry along every axis, NumPy (and XLA on CPU) only along the
last, so the outer axes get a complex IFFT and the last one a 1-D IRFFT.
"""

from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo as hlo

from lowering import runtime
from lowering.mlir import aval_to_ir, lowering_rules
from xform.primitives import fft as fft_family


def _fft(x, fft_type, fft_lengths, aval_out):
    return hlo.fft(
        x,
        hlo.FftTypeAttr.get(fft_type.name),
        ir.DenseI64ArrayAttr.get(list(fft_lengths)),
        results=[aval_to_ir(aval_out)],
    )


def _fft_lower(ctx, x, *, fft_type, fft_lengths):
    if runtime.platform() == "gpu":
        return fft_lower_gpu(ctx, x, fft_type=fft_type, fft_lengths=fft_lengths)
    return [_fft(x, fft_type, fft_lengths, ctx.avals_out[0])]


def fft_lower_gpu(ctx, x, *, fft_type, fft_lengths):
    """The GPU rule: a multi-dimensional IRFFT as an IFFT over the outer axes, then a 1-D
    IRFFT over the last; every other transform as on CPU."""
    if fft_type != fft_family.FftType.IRFFT or len(fft_lengths) == 1:
        return [_fft(x, fft_type, fft_lengths, ctx.avals_out[0])]
    aval_in = ctx.avals_in[0]
    rank = aval_in.ndim
    first = rank - len(fft_lengths)  # the first transformed axis
    # Move the last (half-spectrum) axis in front of the other transformed ones.
    perm = [*range(first), rank - 1, *range(first, rank - 1)]
    moved = aval_in.update(shape=tuple(aval_in.shape[p] for p in perm))
    x = hlo.transpose(x, ir.DenseI64ArrayAttr.get(perm))
    x = _fft(x, fft_family.FftType.IFFT, fft_lengths[:-1], moved)
    inverse = [*range(first), *range(first + 1, rank), first]
    x = hlo.transpose(x, ir.DenseI64ArrayAttr.get(inverse))
    return [_fft(x, fft_family.FftType.IRFFT, fft_lengths[-1:], ctx.avals_out[0])]


lowering_rules[fft_family.fft_p] = _fft_lower

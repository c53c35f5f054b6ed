"""The fast Fourier transform: ``fft``, JAX's ``lax.fft``, over the trailing dimensions.

One primitive does four transforms (``FftType``): complex-to-complex forward and inverse
(``FFT``, ``IFFT``), real-to-complex (``RFFT``, keeping the ``n // 2 + 1`` non-redundant
frequencies of the last dimension) and its inverse (``IRFFT``). There is no NumPy host
implementation: eagerly, the one equation is compiled with XLA and runs the same kernel as
under ``jit``, so eager results equal compiled ones bit for bit.

Every transform is linear (``RFFT`` and ``IRFFT`` over the reals), so the JVP applies the op
to the tangent; the transposes are JAX's: the DFT matrix is symmetric, so ``FFT`` and
``IFFT`` transpose to themselves, while ``RFFT`` and ``IRFFT`` transpose to each other with a
mask that counts the Hermitian-redundant frequencies twice.
"""

import enum
import math
import operator

import numpy as np

from xform import dtypes
from xform.core import ShapedArray, get_aval
from xform.interpret import ad, transpose
from xform.primitives.base import standard_primitive
from xform.primitives.elementwise import conj, convert_element_type, div, mul
from xform.primitives.linalg import batch_at_front
from xform.primitives.structural import broadcast_in_dim

__all__ = ["FftType", "fft"]


class FftType(enum.IntEnum):
    """Which transform ``fft`` performs."""

    FFT = 0  # forward, complex to complex
    IFFT = 1  # inverse, complex to complex
    RFFT = 2  # forward, real to complex
    IRFFT = 3  # inverse, complex to real


_FFT_TYPE_NAMES = {
    "fft": FftType.FFT,
    "FFT": FftType.FFT,
    "ifft": FftType.IFFT,
    "IFFT": FftType.IFFT,
    "rfft": FftType.RFFT,
    "RFFT": FftType.RFFT,
    "irfft": FftType.IRFFT,
    "IRFFT": FftType.IRFFT,
}


def _fft_type(fft_type):
    if isinstance(fft_type, FftType):
        return fft_type
    if isinstance(fft_type, str):
        if fft_type not in _FFT_TYPE_NAMES:
            raise ValueError(
                f"Unknown FFT type '{fft_type}'; expected one of 'fft', 'ifft', "
                "'rfft', 'irfft' (or upper case), or a lax.FftType"
            )
        return _FFT_TYPE_NAMES[fft_type]
    raise TypeError(f"Unknown FFT type value '{fft_type}'; expected a lax.FftType or a string")


# ints and bools become these floats (whatever the x64 mode), as in JAX's to_inexact_dtype
_INT_TO_FLOAT = {
    np.dtype(k): np.dtype(v)
    for k, v in [
        ("bool", "float32"),
        ("uint8", "float32"),
        ("int8", "float32"),
        ("uint16", "float32"),
        ("int16", "float32"),
        ("uint32", "float32"),
        ("int32", "float32"),
        ("uint64", "float64"),
        ("int64", "float64"),
    ]
}


def _to_inexact(dtype):
    return _INT_TO_FLOAT.get(dtype, dtype)


def _to_complex(dtype):
    inexact = _to_inexact(dtype)
    if inexact in (dtypes.float64, dtypes.complex128):
        return dtypes.complex128
    return dtypes.complex64


def _complex_dtype(dtype):
    return dtypes.complex128 if dtype == dtypes.float64 else dtypes.complex64


def _real_dtype(dtype):
    return np.finfo(dtype).dtype


# --------------------------------------------------------------------------- fft


def fft(x, fft_type, fft_lengths):
    """The FFT of ``x`` over its last ``len(fft_lengths)`` dimensions.

    Args:
      x: an array; ints and bools are converted to floats, and for every type but ``RFFT``
        to complex numbers (complex64, or complex128 for 64-bit inputs).
      fft_type: a ``FftType`` or one of the strings ``"fft"``, ``"ifft"``, ``"rfft"``,
        ``"irfft"`` (or upper case).
      fft_lengths: the lengths of the transformed dimensions. They equal ``x``'s trailing
        dimensions, except that for ``IRFFT`` the last is the length of the real output
        (``x``'s last dimension is ``fft_lengths[-1] // 2 + 1``).

    Returns:
      The transform: complex for ``FFT``, ``IFFT`` and ``RFFT`` (whose last dimension is
      ``fft_lengths[-1] // 2 + 1``), real for ``IRFFT``. ``IFFT`` and ``IRFFT`` divide by
      the product of ``fft_lengths``.

    Example:
      >>> fft(np.array([1., 2., 3., 4.]), "rfft", (4,))  # [10+0j, -2+2j, -2+0j]
    """
    typ = _fft_type(fft_type)
    dtype = get_aval(x).dtype
    if typ == FftType.RFFT:
        if dtypes.is_complex(dtype):
            raise ValueError(
                f"lax.fft: only real valued inputs supported for rfft, got an "
                f"input of dtype {dtype}"
            )
        new_dtype = _to_inexact(dtype)
    else:
        new_dtype = _to_complex(dtype)
    x = convert_element_type(x, new_dtype)  # a no-op unless the dtype or weak type changes
    fft_lengths = tuple(operator.index(n) for n in fft_lengths)
    if not fft_lengths:  # XLA has no 0-dimensional FFT
        return x
    return fft_p.bind(x, fft_type=typ, fft_lengths=fft_lengths)


def _fft_abstract_eval(x, *, fft_type, fft_lengths):
    k = len(fft_lengths)
    name = f"lax.fft ({fft_type.name})"
    if k > x.ndim:
        raise ValueError(
            f"{name}: FFT input shape {x.shape} must have at least as many "
            f"input dimensions as fft_lengths {fft_lengths}."
        )
    minor = x.shape[x.ndim - k :]
    if fft_type == FftType.RFFT:
        if x.dtype not in (dtypes.float32, dtypes.float64):
            raise ValueError(f"{name}: RFFT input must be float32 or float64, got {x.dtype}")
        if minor != fft_lengths:
            raise ValueError(
                f"{name}: RFFT input shape {x.shape} minor dimensions must be "
                f"equal to fft_lengths {fft_lengths}"
            )
        shape = x.shape[: x.ndim - k] + fft_lengths[:-1] + (fft_lengths[-1] // 2 + 1,)
        return [ShapedArray(shape, _complex_dtype(x.dtype), x.weak_type)]
    if not dtypes.is_complex(x.dtype):
        raise ValueError(
            f"{name}: {fft_type.name} input must be complex64 or complex128, got {x.dtype}"
        )
    if fft_type == FftType.IRFFT:
        if minor[:-1] != fft_lengths[:-1]:
            raise ValueError(
                f"{name}: IRFFT input shape {x.shape} minor dimensions must be "
                f"equal to all except the last fft_length, got fft_lengths="
                f"{fft_lengths}"
            )
        shape = x.shape[: x.ndim - k] + fft_lengths
        return [ShapedArray(shape, _real_dtype(x.dtype), x.weak_type)]
    if minor != fft_lengths:
        raise ValueError(
            f"{name}: {fft_type.name} input shape {x.shape} minor dimensions must "
            f"be equal to fft_lengths {fft_lengths}"
        )
    return [ShapedArray(x.shape, x.dtype, x.weak_type)]


fft_p = standard_primitive("fft", _fft_abstract_eval)


# --------------------------------------------------------------------------- jvp rule
# Linear (RFFT and IRFFT over the reals): the op applied to the tangent.

ad.defjvp_linear(fft_p)


# --------------------------------------------------------------------------- transpose rule


def _hermitian_mask(fft_lengths, dtype):
    """Along the last (half-spectrum) dimension: 1 for the DC term and, for an even length,
    the Nyquist term; 2 for the others, each of which stands for itself and its mirror."""
    n = fft_lengths[-1]
    mask = np.full(n // 2 + 1, 2, dtype)
    mask[0] = 1
    if n % 2 == 0:
        mask[-1] = 1
    return mask


def _broadcast_last(c, shape):
    """A constant vector ``c`` broadcast along the last dimension of ``shape``."""
    return broadcast_in_dim(c, shape, (len(shape) - 1,))


def _fft_transpose(ct, x, *, fft_type, fft_lengths):
    if type(ct) is ad.Zero:
        return [ad.Zero(x.aval)]
    ct_aval = get_aval(ct)
    if fft_type == FftType.RFFT:
        # ct is a half spectrum: conj(ct) / mask, inverted and scaled back by N.
        mask = _broadcast_last(_hermitian_mask(fft_lengths, ct_aval.dtype), ct_aval.shape)
        out = fft_p.bind(div(conj(ct), mask), fft_type=FftType.IRFFT, fft_lengths=fft_lengths)
        n = np.array(math.prod(fft_lengths), _real_dtype(ct_aval.dtype))
        return [mul(n, out)]
    if fft_type == FftType.IRFFT:
        # The RFFT of the real ct, the redundant frequencies counted twice, scaled by 1/N and
        # conjugated (JAX's convention for complex cotangents).
        spectrum = fft_p.bind(ct, fft_type=FftType.RFFT, fft_lengths=fft_lengths)
        out_dtype = _complex_dtype(ct_aval.dtype)
        scale = out_dtype.type(1 / math.prod(fft_lengths))
        mask = _hermitian_mask(fft_lengths, out_dtype) * scale
        return [conj(mul(_broadcast_last(mask, get_aval(spectrum).shape), spectrum))]
    # The DFT matrix (and its inverse) is symmetric: FFT and IFFT are their own transposes.
    return [fft_p.bind(ct, fft_type=fft_type, fft_lengths=fft_lengths)]


transpose.transpose_rules[fft_p] = _fft_transpose


# --------------------------------------------------------------------------- batching rule
# The transform works on the trailing dimensions: a leading batch dimension is left alone.

batch_at_front(fft_p)

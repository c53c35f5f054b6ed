"""``xform.numpy.fft``: jax.numpy.fft's functions, as compositions of the ``lax.fft``
primitive and of ``xform.numpy``.

As in JAX, the transforms take arrays, not lists; ints and bools are transformed as floats
(complex64 results, or complex128 from 64-bit integers under x64), and ``rfft`` rejects
complex and half-precision inputs. ``n``/``s`` crop or zero-pad the transformed axes before
the transform; ``norm`` is ``"backward"`` (the default: the inverse divides by ``n``),
``"ortho"`` (both divide by ``sqrt(n)``) or ``"forward"`` (the forward transform divides by
``n``). XLA transforms at most three dimensions at once; more are done in groups of three.
"""

import operator

import numpy as np

from xform import dtypes
from xform.lax import _names as lax
from xform.lax._names import FftType
from xform.numpy._creation import arange
from xform.numpy._manipulation import roll
from xform.numpy._promote import array, asarray, aval_of, check_arraylike, convert
from xform.numpy._reductions import canonicalize_axis, prod
from xform.numpy._shape import moveaxis
from xform.numpy._ufuncs import conj, multiply, sqrt, true_divide

__all__ = [
    "fft",
    "fft2",
    "fftfreq",
    "fftn",
    "fftshift",
    "hfft",
    "ifft",
    "ifft2",
    "ifftn",
    "ifftshift",
    "ihfft",
    "irfft",
    "irfft2",
    "irfftn",
    "rfft",
    "rfft2",
    "rfftfreq",
    "rfftn",
]


# --------------------------------------------------------------------------- the core


def _fft_norm(s, func_name, norm):
    """The factor a ``norm`` puts on a transform over lengths ``s`` (an array)."""
    if norm == "backward":
        return array(1)
    if norm == "ortho":
        root = sqrt(prod(s))
        return root if func_name.startswith("i") else true_divide(1, root)
    if norm == "forward":
        return prod(s) if func_name.startswith("i") else true_divide(1, prod(s))
    raise ValueError(
        f"jax.numpy.fft.{func_name}: invalid norm value {norm}; should be "
        '"backward", "ortho" or "forward".'
    )


def _resize(arr, shape):
    """``arr`` cropped or zero-padded at the end of each dimension to ``shape``."""
    cur = aval_of(arr).shape
    if any(n < c for n, c in zip(shape, cur, strict=True)):
        arr = lax.slice(
            arr, (0,) * len(shape), tuple(min(n, c) for n, c in zip(shape, cur, strict=True))
        )
        cur = aval_of(arr).shape
    if any(n > c for n, c in zip(shape, cur, strict=True)):
        zero = np.zeros((), aval_of(arr).dtype)
        arr = lax.pad(arr, zero, [(0, n - c, 0) for n, c in zip(shape, cur, strict=True)])
    return arr


def _fft_core(func_name, fft_type, a, s, axes, norm):
    full_name = f"jax.numpy.fft.{func_name}"
    check_arraylike(full_name, a)
    arr = asarray(a)
    if s is not None:
        s = tuple(map(operator.index, s))
        if any(n <= 0 for n in s):
            raise ValueError(f"{full_name}: shape should be positive, got s={s}.")
    if s is not None and axes is not None and len(s) != len(axes):
        raise ValueError(
            f"{full_name}: shape and axes have different lengths, got s={s} and axes={tuple(axes)}."
        )
    ndim = aval_of(arr).ndim
    orig_axes = axes
    if axes is None:
        axes = range(ndim) if s is None else range(ndim - len(s), ndim)
    if len(axes) != len(set(axes)):
        raise ValueError(f"{full_name} does not support repeated axes. Got axes {axes}.")
    if orig_axes is not None:
        # The transformed axes go last, in the order given.
        axes = tuple(range(ndim - len(axes), ndim))
        arr = moveaxis(arr, orig_axes, axes)
    shape = aval_of(arr).shape
    if s is not None:
        in_s = list(shape)
        for axis, n in zip(axes, s, strict=True):
            in_s[axis] = n
        if fft_type == FftType.IRFFT:
            in_s[-1] = in_s[-1] // 2 + 1
        arr = _resize(arr, tuple(in_s))
    elif fft_type == FftType.IRFFT:
        s = [shape[axis] for axis in axes[:-1]]
        if axes:
            s += [max(0, 2 * (shape[axes[-1]] - 1))]
    else:
        s = [shape[axis] for axis in axes]
    transformed = _fft_core_nd(arr, fft_type, tuple(s))
    if norm is not None:
        factor = _fft_norm(array(s, dtype=aval_of(transformed).dtype), func_name, norm)
        transformed = multiply(transformed, factor)
    if orig_axes is not None:
        transformed = moveaxis(transformed, axes, orig_axes)
    return transformed


def _fft_core_nd(arr, fft_type, s):
    """The transform over the last ``len(s)`` axes; XLA's FFT takes at most three."""
    if len(s) <= 3:
        return lax.fft(arr, fft_type, s)
    n = 2 if len(s) == 4 else 3
    ndim = aval_of(arr).ndim
    src = tuple(range(ndim - len(s), ndim - n))
    dst = tuple(range(ndim - len(s) + n, ndim))
    if fft_type in (FftType.RFFT, FftType.FFT):
        arr = lax.fft(arr, fft_type, s[-n:])
        arr = moveaxis(arr, src, dst)
        arr = _fft_core_nd(arr, FftType.FFT, s[:-n])
        return moveaxis(arr, dst, src)
    arr = moveaxis(arr, src, dst)
    arr = _fft_core_nd(arr, FftType.IFFT, s[:-n])
    arr = moveaxis(arr, dst, src)
    return lax.fft(arr, fft_type, s[-n:])


def _axis_check_1d(func_name, axis):
    if isinstance(axis, (list, tuple)):
        full_name = f"jax.numpy.fft.{func_name}"
        raise ValueError(
            f"{full_name} does not support multiple axes. Please use "
            f"{full_name}n. Got axis = {axis!r}."
        )


def _fft_core_1d(func_name, fft_type, a, n, axis, norm):
    _axis_check_1d(func_name, axis)
    axes = None if axis is None else [axis]
    s = None if n is None else [n]
    return _fft_core(func_name, fft_type, a, s, axes, norm)


def _fft_core_2d(func_name, fft_type, a, s, axes, norm):
    if len(axes) != 2:
        raise ValueError(f"jax.numpy.fft.{func_name} only supports 2 axes. Got axes = {axes!r}.")
    return _fft_core(func_name, fft_type, a, s, axes, norm)


# --------------------------------------------------------------------------- n-dimensional


def fftn(a, s=None, axes=None, norm=None):
    """The N-dimensional discrete Fourier transform over ``axes`` (default: all, or the last
    ``len(s)``), each cropped or zero-padded to ``s``.

    Example:
      >>> fftn(np.ones((2, 2)))  # [[4+0j, 0j], [0j, 0j]]
    """
    return _fft_core("fftn", FftType.FFT, a, s, axes, norm)


def ifftn(a, s=None, axes=None, norm=None):
    """The inverse of ``fftn``."""
    return _fft_core("ifftn", FftType.IFFT, a, s, axes, norm)


def rfftn(a, s=None, axes=None, norm=None):
    """``fftn`` of a real array, keeping the ``s[-1] // 2 + 1`` non-negative frequencies of
    the last axis."""
    return _fft_core("rfftn", FftType.RFFT, a, s, axes, norm)


def irfftn(a, s=None, axes=None, norm=None):
    """The inverse of ``rfftn``: a real array whose last transformed axis has length
    ``s[-1]`` (default ``2 * (m - 1)`` for an input of length ``m`` there)."""
    return _fft_core("irfftn", FftType.IRFFT, a, s, axes, norm)


# --------------------------------------------------------------------------- one-dimensional


def fft(a, n=None, axis=-1, norm=None):
    """The one-dimensional discrete Fourier transform along ``axis``, cropped or zero-padded
    to length ``n``.

    Example:
      >>> fft(np.array([1., 2., 3., 4.]))  # [10+0j, -2+2j, -2+0j, -2-2j]
    """
    return _fft_core_1d("fft", FftType.FFT, a, n, axis, norm)


def ifft(a, n=None, axis=-1, norm=None):
    """The inverse of ``fft``."""
    return _fft_core_1d("ifft", FftType.IFFT, a, n, axis, norm)


def rfft(a, n=None, axis=-1, norm=None):
    """``fft`` of a real array, keeping the ``n // 2 + 1`` non-negative frequencies."""
    return _fft_core_1d("rfft", FftType.RFFT, a, n, axis, norm)


def irfft(a, n=None, axis=-1, norm=None):
    """The inverse of ``rfft``: a real array of length ``n`` (default ``2 * (m - 1)``)."""
    return _fft_core_1d("irfft", FftType.IRFFT, a, n, axis, norm)


def hfft(a, n=None, axis=-1, norm=None):
    """The FFT of a signal with Hermitian symmetry, given by its first half: a real array of
    length ``n`` (default ``2 * (m - 1)``)."""
    conj_a = conj(a)
    _axis_check_1d("hfft", axis)
    nn = (aval_of(conj_a).shape[axis] - 1) * 2 if n is None else n
    return multiply(_fft_core_1d("hfft", FftType.IRFFT, conj_a, n, axis, norm), nn)


def ihfft(a, n=None, axis=-1, norm=None):
    """The inverse of ``hfft``: the first ``n // 2 + 1`` terms of the inverse FFT of a real
    signal."""
    _axis_check_1d("ihfft", axis)
    arr = asarray(a)
    nn = aval_of(arr).shape[axis] if n is None else n
    output = _fft_core_1d("ihfft", FftType.RFFT, arr, n, axis, norm)
    return multiply(conj(output), 1 / nn)


# --------------------------------------------------------------------------- two-dimensional


def fft2(a, s=None, axes=(-2, -1), norm=None):
    """``fftn`` over two axes (default: the last two)."""
    return _fft_core_2d("fft2", FftType.FFT, a, s, axes, norm)


def ifft2(a, s=None, axes=(-2, -1), norm=None):
    """``ifftn`` over two axes (default: the last two)."""
    return _fft_core_2d("ifft2", FftType.IFFT, a, s, axes, norm)


def rfft2(a, s=None, axes=(-2, -1), norm=None):
    """``rfftn`` over two axes (default: the last two)."""
    return _fft_core_2d("rfft2", FftType.RFFT, a, s, axes, norm)


def irfft2(a, s=None, axes=(-2, -1), norm=None):
    """``irfftn`` over two axes (default: the last two)."""
    return _fft_core_2d("irfft2", FftType.IRFFT, a, s, axes, norm)


# --------------------------------------------------------------------------- frequencies


def _check_freq_args(func_name, n, d):
    if isinstance(n, (list, tuple)):
        raise ValueError(
            f"The n argument of jax.numpy.fft.{func_name} only takes an int. Got n = {list(n)}."
        )
    if isinstance(d, (list, tuple)):
        raise ValueError(
            f"The d argument of jax.numpy.fft.{func_name} only takes a single "
            f"value. Got d = {list(d)}."
        )


def fftfreq(n, d=1.0, *, dtype=None, device=None):
    """The sample frequencies of ``fft`` for a signal of length ``n`` and sample spacing
    ``d``: ``[0, 1, ..., n//2 - 1 (or (n-1)//2), -(n//2), ..., -1] / (d * n)``.

    Example:
      >>> fftfreq(4)  # [0., 0.25, -0.5, -0.25]
    """
    del device
    dtype = dtype or dtypes.default_float()
    _check_freq_args("fftfreq", n, d)
    out_dtype = np.dtype(dtype)
    dtype = np.finfo(_to_inexact(np.dtype(dtype))).dtype
    i = arange(n, dtype=dtype)
    k = (i + n // 2) % n - n // 2
    result = true_divide(k, array(d * n, dtype=dtype))
    return convert(result, dtypes.canonicalize(out_dtype))


def rfftfreq(n, d=1.0, *, dtype=None, device=None):
    """The sample frequencies of ``rfft``: ``[0, 1, ..., n // 2] / (d * n)``.

    Example:
      >>> rfftfreq(4)  # [0., 0.25, 0.5]
    """
    del device
    dtype = dtype or dtypes.default_float()
    _check_freq_args("rfftfreq", n, d)
    k = arange(0, n // 2 + 1, dtype=dtype)
    return true_divide(k, array(d * n, dtype=dtype))


def _to_inexact(dtype):
    if dtypes.is_inexact(dtype):
        return dtype
    return dtypes.float64 if dtype.itemsize == 8 else dtypes.float32


# --------------------------------------------------------------------------- shifts


def _shift(func_name, x, axes, sign):
    check_arraylike(func_name, x)
    x = asarray(x)
    shape = aval_of(x).shape
    if axes is None:
        axes = tuple(range(len(shape)))
    elif not isinstance(axes, (list, tuple)):
        axes = (axes,)
    for ax in axes:
        axis = canonicalize_axis(ax, len(shape), func_name)
        x = roll(x, sign * (shape[axis] // 2), axis)
    return x


def fftshift(x, axes=None):
    """``x`` with the zero frequency moved to the centre of ``axes`` (default: all).

    Example:
      >>> fftshift(np.array([0., 1., 2., -2., -1.]))  # [-2., -1., 0., 1., 2.]
    """
    return _shift("fftshift", x, axes, 1)


def ifftshift(x, axes=None):
    """The inverse of ``fftshift``."""
    return _shift("ifftshift", x, axes, -1)

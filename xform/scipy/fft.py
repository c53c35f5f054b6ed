"""``xform.scipy.fft``: JAX's ``jax.scipy.fft``, the type-II discrete cosine transforms.

Each transform is one complex FFT of a reordered signal (Makhoul's algorithm): the even
samples in order followed by the odd samples reversed, transformed, then rotated by a
quarter-sample phase ``exp(-i pi k / 2N)``; the inverse runs the same steps backwards. Only
type 2 exists, as in JAX. Complex inputs transform their real and imaginary parts apart.
"""

import operator

import numpy as np

from xform import dtypes, lax
from xform import numpy as xnp
from xform.numpy._promote import check_arraylike, promote_dtypes_inexact
from xform.primitives.base import canonicalize_axis

__all__ = ["dct", "dctn", "idct", "idctn"]


def _check(name, x, type, norm):  # noqa: A002  (SciPy's argument name)
    check_arraylike(f"xform.scipy.fft.{name}", x)
    if type != 2:
        raise NotImplementedError(
            f"xform.scipy.fft.{name}: only DCT type 2 is implemented, got type={type!r}"
        )
    if norm not in (None, "backward", "ortho"):
        raise ValueError(
            f"xform.scipy.fft.{name}: norm={norm!r} is not implemented; use "
            "None, 'backward' or 'ortho'"
        )
    return xnp.asarray(x)


def _resize(x, n, axis):
    """``x`` zero-padded or truncated to length ``n`` along ``axis`` (``n=None``: as is)."""
    if n is None:
        return x
    n = operator.index(n)
    if n < 1:
        raise ValueError(f"xform.scipy.fft: invalid number of data points ({n}) specified")
    size = x.shape[axis]
    if n < size:
        return lax.slice_in_dim(x, 0, n, axis=axis)
    widths = [(0, 0)] * x.ndim
    widths[axis] = (0, n - size)
    return xnp.pad(x, widths)


def _along(v, axis, ndim):
    """The 1-D ``v`` shaped to broadcast along ``axis`` of a rank-``ndim`` array."""
    return xnp.reshape(v, [-1 if a == axis else 1 for a in range(ndim)])


def _phase(n, dtype):
    """``exp(-i pi k / 2n)`` for ``k < n``: the quarter-sample rotation, as constants."""
    k = np.arange(n)
    return np.exp(-0.5j * np.pi * k / n).astype(dtype)


def _ortho_scale(n, dtype):
    """The per-frequency factors that make the type-II DCT orthonormal."""
    f = np.full(n, 1.0 / np.sqrt(2.0 * n))
    f[0] = 1.0 / np.sqrt(4.0 * n)
    return f.astype(dtype)


def _split_complex(fn, x, **kw):
    if dtypes.is_complex(x.dtype):
        return lax.complex(fn(xnp.real(x), **kw), fn(xnp.imag(x), **kw))
    return None


def dct(x, type=2, n=None, axis=-1, norm=None):  # noqa: A002  (SciPy's argument name)
    """The type-II discrete cosine transform of ``x`` along ``axis``.

    Args:
      x: input array; complex inputs transform real and imaginary parts separately.
      type: only 2 is supported.
      n: length to zero-pad or truncate ``x`` to along ``axis`` first.
      axis: the axis to transform.
      norm: ``None``/``"backward"`` (unscaled) or ``"ortho"``.

    Returns:
      The transform, of ``x``'s inexact dtype.

    Example:
      >>> xform.scipy.fft.dct(xform.numpy.array([1.0, 2.0, 3.0]))  # [12, -3.46, 0]
    """
    x = _check("dct", x, type, norm)
    split = _split_complex(dct, x, n=n, axis=axis, norm=norm)
    if split is not None:
        return split
    axis = canonicalize_axis(axis, x.ndim, "xform.scipy.fft.dct")
    x = _resize(x, n, axis)
    size = x.shape[axis]
    order = np.concatenate([np.arange(0, size, 2), np.arange(1, size, 2)[::-1]])
    spectrum = xnp.fft.fft(xnp.take(x, order, axis=axis), axis=axis)
    out = 2 * xnp.real(spectrum * _along(_phase(size, spectrum.dtype), axis, x.ndim))
    if norm == "ortho":
        out = out * _along(_ortho_scale(size, out.dtype), axis, x.ndim)
    return out


def idct(x, type=2, n=None, axis=-1, norm=None):  # noqa: A002  (SciPy's argument name)
    """The inverse of the type-II DCT (a scaled type-III DCT) of ``x`` along ``axis``.

    Args:
      x: input array; complex inputs transform real and imaginary parts separately.
      type: only 2 is supported.
      n: length to zero-pad or truncate ``x`` to along ``axis`` first.
      axis: the axis to transform.
      norm: ``None``/``"backward"`` (divides by ``2n``) or ``"ortho"``.

    Returns:
      The inverse transform, of ``x``'s inexact dtype.

    Example:
      >>> xform.scipy.fft.idct(xform.scipy.fft.dct(x))  # x again
    """
    x = _check("idct", x, type, norm)
    split = _split_complex(idct, x, n=n, axis=axis, norm=norm)
    if split is not None:
        return split
    axis = canonicalize_axis(axis, x.ndim, "xform.scipy.fft.idct")
    x = _resize(x, n, axis)
    (x,) = promote_dtypes_inexact(x)
    size = x.shape[axis]
    # Undo the rotation and the scaling: the orthonormal factors once for "ortho", twice
    # for the unscaled transform, times 2n for the inverse FFT's 1/n and the forward's 2.
    scale = _ortho_scale(size, np.float64)
    factor = (2 * size) * (scale if norm == "ortho" else scale * scale)
    cdtype = dtypes.complex128 if x.dtype == dtypes.float64 else dtypes.complex64
    rotated = x.astype(cdtype) * _along(
        (factor / _phase(size, np.complex128)).astype(cdtype), axis, x.ndim
    )
    signal = xnp.real(xnp.fft.ifft(rotated, axis=axis))
    # Undo the reordering: sample 2j came from position j, sample 2j+1 from position n-1-j.
    positions = np.empty(size, dtype=np.int64)
    positions[0::2] = np.arange((size + 1) // 2)
    positions[1::2] = size - 1 - np.arange(size // 2)
    return xnp.take(signal, positions, axis=axis)


def _axes_and_sizes(name, x, s, axes):
    if s is not None:
        s = [operator.index(s)] if np.ndim(s) == 0 else [operator.index(d) for d in s]
        if len(s) > x.ndim:
            raise ValueError(
                f"xform.scipy.fft.{name}: s must have at most x.ndim ({x.ndim}) "
                f"elements, got {len(s)}"
            )
    if axes is None:
        axes = tuple(range(x.ndim - len(s), x.ndim)) if s is not None else tuple(range(x.ndim))
    else:
        axes = (axes,) if np.ndim(axes) == 0 else tuple(axes)
        axes = tuple(canonicalize_axis(a, x.ndim, f"xform.scipy.fft.{name}") for a in axes)
        if len(set(axes)) != len(axes):
            raise ValueError(f"xform.scipy.fft.{name}: repeated axis in axes={axes}")
    sizes = [None] * len(axes) if s is None else list(s)
    if len(sizes) != len(axes):
        raise ValueError(f"xform.scipy.fft.{name}: s={s} and axes={axes} differ in length")
    return axes, sizes


def dctn(x, type=2, s=None, axes=None, norm=None):  # noqa: A002  (SciPy's argument name)
    """The multidimensional type-II DCT: ``dct`` along each of ``axes`` in turn.

    Args:
      x: input array.
      type: only 2 is supported.
      s: lengths to zero-pad or truncate to along ``axes``.
      axes: axes to transform (default: the last ``len(s)`` axes, or all of them).
      norm: ``None``/``"backward"`` or ``"ortho"``.

    Returns:
      The transform, of ``x``'s inexact dtype.

    Example:
      >>> xform.scipy.fft.dctn(xform.numpy.ones((2, 2)))  # [[8, 0], [0, 0]]
    """
    x = _check("dctn", x, type, norm)
    axes, sizes = _axes_and_sizes("dctn", x, s, axes)
    for axis, n in zip(axes, sizes, strict=True):
        x = dct(x, n=n, axis=axis, norm=norm)
    return x


def idctn(x, type=2, s=None, axes=None, norm=None):  # noqa: A002  (SciPy's argument name)
    """The multidimensional inverse type-II DCT: ``idct`` along each of ``axes`` in turn.

    Args:
      x: input array.
      type: only 2 is supported.
      s: lengths to zero-pad or truncate to along ``axes``.
      axes: axes to transform (default: the last ``len(s)`` axes, or all of them).
      norm: ``None``/``"backward"`` or ``"ortho"``.

    Returns:
      The inverse transform, of ``x``'s inexact dtype.

    Example:
      >>> xform.scipy.fft.idctn(xform.scipy.fft.dctn(x))  # x again
    """
    x = _check("idctn", x, type, norm)
    axes, sizes = _axes_and_sizes("idctn", x, s, axes)
    for axis, n in zip(axes, sizes, strict=True):
        x = idct(x, n=n, axis=axis, norm=norm)
    return x

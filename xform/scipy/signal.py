"""``xform.scipy.signal``: JAX's ``jax.scipy.signal`` on xform arrays.

Direct convolutions are one ``lax.conv_general_dilated`` with a single batch and feature
dimension; ``fftconvolve`` multiplies spectra (``vmap`` over the axes it does not convolve).
The spectral estimators share one helper, as SciPy's ``_spectral_helper``: extend the
signal at its ends, cut it into overlapping windowed segments (a static gather), detrend and
transform each segment, then scale. ``istft`` inverts by windowed overlap-add.
"""

import importlib
import operator
import warnings

import numpy as np

from xform import dtypes, lax
from xform import numpy as xnp
from xform.api.batching import vmap
from xform.numpy._promote import check_arraylike, promote_dtypes_inexact
from xform.primitives.base import canonicalize_axis

__all__ = [
    "convolve",
    "convolve2d",
    "correlate",
    "correlate2d",
    "csd",
    "detrend",
    "fftconvolve",
    "istft",
    "stft",
    "welch",
]

_MODES = ("full", "same", "valid")


def _complex_dtype(dtype):
    """JAX's ``to_complex_dtype``: complex of at least ``dtype``'s precision."""
    if dtypes.is_complex(dtype):
        return np.dtype(dtype)
    return dtypes.complex128 if np.dtype(dtype) == dtypes.float64 else dtypes.complex64


# --------------------------------------------------------------------------- convolutions


def _convolve_nd(name, in1, in2, mode, precision):
    if mode not in _MODES:
        raise ValueError(f"{name}: mode must be one of {list(_MODES)}, got {mode!r}")
    if in1.ndim != in2.ndim:
        raise ValueError(
            f"{name}: in1 and in2 must have the same number of dimensions, got "
            f"in1.shape={in1.shape} and in2.shape={in2.shape}"
        )
    if in1.size == 0 or in2.size == 0:
        raise ValueError(
            f"{name}: zero-size arrays not supported in convolutions, got shapes "
            f"{in1.shape} and {in2.shape}"
        )
    in1, in2 = promote_dtypes_inexact(in1, in2)
    smaller = all(a <= b for a, b in zip(in1.shape, in2.shape, strict=True))
    larger = all(a >= b for a, b in zip(in1.shape, in2.shape, strict=True))
    if not (smaller or larger):
        raise ValueError(
            f"{name}: one input must be smaller than the other in every "
            f"dimension, got shapes {in1.shape} and {in2.shape}"
        )
    target = in2.shape  # "same" centres on in1's shape, before any swap
    if smaller:
        in1, in2 = in2, in1
    kernel_shape = in2.shape
    kernel = xnp.flip(in2)  # XLA's Conv is a correlation
    if mode == "valid":
        padding = [(0, 0)] * in1.ndim
    elif mode == "full":
        padding = [(k - 1, k - 1) for k in kernel_shape]
    else:
        # Centre the window of in1's original shape inside the full convolution.
        padding = [
            (k - 1 - (t - 1) // 2, k - t + (t - 1) // 2)
            for k, t in zip(kernel_shape, target, strict=True)
        ]
    out = lax.conv_general_dilated(
        in1[None, None], kernel[None, None], (1,) * in1.ndim, padding, precision=precision
    )
    return out[0, 0]


def convolve(in1, in2, mode="full", method="auto", precision=None):
    """The N-dimensional convolution of ``in1`` and ``in2``.

    Args:
      in1, in2: arrays of the same rank.
      mode: ``"full"`` (default), ``"same"`` (centred, ``in1``'s shape) or ``"valid"``
        (only where the inputs overlap fully).
      method: ``"auto"``/``"direct"`` (one XLA convolution) or ``"fft"``.
      precision: a ``lax.Precision`` for the convolution.

    Returns:
      The convolution, of the inputs' common inexact dtype.

    Example:
      >>> xform.scipy.signal.convolve(xform.numpy.array([1., 2., 3.]),
      ...                             xform.numpy.array([1., 1.]))  # [1, 3, 5, 3]
    """
    if method == "fft":
        return fftconvolve(in1, in2, mode=mode)
    if method not in ("auto", "direct"):
        raise ValueError(
            f"xform.scipy.signal.convolve: got method={method!r}; expected "
            "'auto', 'fft', or 'direct'."
        )
    check_arraylike("xform.scipy.signal.convolve", in1, in2)
    return _convolve_nd(
        "xform.scipy.signal.convolve", xnp.asarray(in1), xnp.asarray(in2), mode, precision
    )


def correlate(in1, in2, mode="full", method="auto", precision=None):
    """The N-dimensional cross-correlation of ``in1`` and ``in2``: ``convolve`` with
    ``in2`` flipped and conjugated.

    Args:
      in1, in2: arrays of the same rank.
      mode: ``"full"``, ``"same"`` or ``"valid"``, as ``convolve``.
      method: ``"auto"``/``"direct"`` or ``"fft"``.
      precision: a ``lax.Precision`` for the convolution.

    Returns:
      The cross-correlation.

    Example:
      >>> xform.scipy.signal.correlate(xform.numpy.array([1., 2., 3.]),
      ...                              xform.numpy.array([0., 1.]))  # [0, 1, 2, 3]
    """
    check_arraylike("xform.scipy.signal.correlate", in1, in2)
    in2 = xnp.asarray(in2)
    return convolve(in1, xnp.flip(xnp.conj(in2)), mode, precision=precision, method=method)


def _check_2d(name, in1, in2, boundary, fillvalue):
    if boundary != "fill" or fillvalue != 0:
        raise NotImplementedError(
            f"{name}() only supports boundary='fill', fillvalue=0, got "
            f"boundary={boundary!r}, fillvalue={fillvalue!r}"
        )
    if np.ndim(in1) != 2 or np.ndim(in2) != 2:
        raise ValueError(
            f"{name}() only supports 2-dimensional inputs, got shapes "
            f"{np.shape(in1)} and {np.shape(in2)}"
        )
    check_arraylike(name, in1, in2)
    return xnp.asarray(in1), xnp.asarray(in2)


def convolve2d(in1, in2, mode="full", boundary="fill", fillvalue=0, precision=None):
    """The 2-D convolution of ``in1`` and ``in2``.

    Args:
      in1, in2: 2-D arrays.
      mode: ``"full"``, ``"same"`` or ``"valid"``, as ``convolve``.
      boundary: only ``"fill"``. fillvalue: only 0.
      precision: a ``lax.Precision`` for the convolution.

    Returns:
      The 2-D convolution.

    Example:
      >>> xform.scipy.signal.convolve2d(xform.numpy.ones((2, 2)), xform.numpy.ones((2, 2)))
    """
    in1, in2 = _check_2d("convolve2d", in1, in2, boundary, fillvalue)
    return _convolve_nd("xform.scipy.signal.convolve2d", in1, in2, mode, precision)


def correlate2d(in1, in2, mode="full", boundary="fill", fillvalue=0, precision=None):
    """The 2-D cross-correlation of ``in1`` and ``in2``.

    Args:
      in1, in2: 2-D arrays.
      mode: ``"full"``, ``"same"`` or ``"valid"``, as ``convolve``.
      boundary: only ``"fill"``. fillvalue: only 0.
      precision: a ``lax.Precision`` for the convolution.

    Returns:
      The 2-D cross-correlation (SciPy's orientation when ``in2`` is the larger input).

    Example:
      >>> xform.scipy.signal.correlate2d(xform.numpy.ones((3, 3)), xform.numpy.ones((2, 2)))
    """
    name = "xform.scipy.signal.correlate2d"
    in1, in2 = _check_2d("correlate2d", in1, in2, boundary, fillvalue)
    smaller = all(a <= b for a, b in zip(in1.shape, in2.shape, strict=True))
    same_shape = in1.shape == in2.shape
    # SciPy swaps the inputs when in1 is the smaller one; correlating the other way round
    # reverses (and conjugates) the result, which each branch undoes.
    if smaller and not same_shape and mode != "same":
        out = _convolve_nd(name, xnp.flip(in2), xnp.conj(in1), mode, precision)
        return out if mode == "valid" else xnp.conj(out)
    return xnp.flip(_convolve_nd(name, xnp.flip(in1), xnp.conj(in2), mode, precision))


def _fftconvolve_core(in1, in2, mode):
    full = tuple(a + b - 1 for a, b in zip(in1.shape, in2.shape, strict=True))
    if mode == "valid":
        larger = all(a >= b for a, b in zip(in1.shape, in2.shape, strict=True))
        smaller = all(a <= b for a, b in zip(in1.shape, in2.shape, strict=True))
        if not (larger or smaller):
            raise ValueError(
                "xform.scipy.signal.fftconvolve: for 'valid' mode, one input "
                "must be at least as large as the other in every dimension, "
                f"got shapes {in1.shape} and {in2.shape}"
            )
        if smaller:
            in1, in2 = in2, in1
    if all(a == 1 or b == 1 for a, b in zip(in1.shape, in2.shape, strict=True)):
        product = in1 * in2
    elif xnp.iscomplexobj(in1):
        product = xnp.fft.ifftn(xnp.fft.fftn(in1, full) * xnp.fft.fftn(in2, full), full)
    else:
        product = xnp.fft.irfftn(xnp.fft.rfftn(in1, full) * xnp.fft.rfftn(in2, full), full)
    if mode == "full":
        shape = full
    elif mode == "same":
        shape = in1.shape
    else:
        shape = tuple(a - b + 1 for a, b in zip(in1.shape, in2.shape, strict=True))
    starts = [(f - s) // 2 for f, s in zip(full, shape, strict=True)]
    return lax.slice(product, starts, [st + s for st, s in zip(starts, shape, strict=True)])


def fftconvolve(in1, in2, mode="full", axes=None):
    """The N-dimensional convolution of ``in1`` and ``in2`` computed with FFTs.

    Args:
      in1, in2: arrays of the same rank.
      mode: ``"full"``, ``"same"`` or ``"valid"``, as ``convolve``.
      axes: the axes to convolve over (default all); the others must match in size and
        are treated as batch axes.

    Returns:
      The convolution, of the inputs' common inexact dtype.

    Example:
      >>> xform.scipy.signal.fftconvolve(xform.numpy.array([1., 2., 3.]),
      ...                                xform.numpy.array([1., 1.]))  # [1, 3, 5, 3]
    """
    name = "xform.scipy.signal.fftconvolve"
    check_arraylike(name, in1, in2)
    in1, in2 = promote_dtypes_inexact(xnp.asarray(in1), xnp.asarray(in2))
    if in1.ndim != in2.ndim:
        raise ValueError(
            f"{name}: in1 and in2 should have the same dimensionality, got "
            f"in1.shape={in1.shape} and in2.shape={in2.shape}"
        )
    if mode not in _MODES:
        raise ValueError(f"{name}: mode must be one of {list(_MODES)}, got {mode!r}")

    def conv(a, b):
        return _fftconvolve_core(a, b, mode)

    if axes is None:
        return conv(in1, in2)
    axes = (axes,) if np.ndim(axes) == 0 else tuple(axes)
    axes = {canonicalize_axis(a, in1.ndim, name) for a in axes}
    mapped = [a for a in range(in1.ndim) if a not in axes]
    if any(in1.shape[a] != in2.shape[a] for a in mapped):
        raise ValueError(
            f"{name}: mapped axes must have same shape; got in1.shape={in1.shape} "
            f"in2.shape={in2.shape} axes={tuple(sorted(axes))}"
        )
    for a in mapped:
        conv = vmap(conv, in_axes=a, out_axes=a)
    return conv(in1, in2)


# --------------------------------------------------------------------------- detrending


def detrend(data, axis=-1, type="linear", bp=0, overwrite_data=None):  # noqa: A002
    """``data`` less its mean (``type="constant"``) or its least-squares line
    (``type="linear"``, piecewise between the breakpoints ``bp``) along ``axis``.

    Args:
      data: input array.
      axis: the axis to detrend along.
      type: ``"linear"`` (default) or ``"constant"``.
      bp: breakpoints (sample indices) for a piecewise linear trend.
      overwrite_data: not supported; must be None.

    Returns:
      The detrended data, of ``data``'s inexact dtype.

    Example:
      >>> xform.scipy.signal.detrend(xform.numpy.array([1., 2., 3.]))  # [0, 0, 0]
    """
    name = "xform.scipy.signal.detrend"
    if overwrite_data is not None:
        raise NotImplementedError(f"{name}: overwrite_data argument not implemented.")
    if type not in ("constant", "linear"):
        raise ValueError(f"{name}: Trend type must be 'linear' or 'constant', got {type!r}.")
    check_arraylike(name, data)
    (data,) = promote_dtypes_inexact(xnp.asarray(data))
    if type == "constant":
        return data - data.mean(axis, keepdims=True)
    axis = canonicalize_axis(axis, data.ndim, name)
    n = data.shape[axis]
    edges = np.unique(np.concatenate([[0], np.ravel(np.asarray(bp)), [n]]))
    if edges[0] < 0 or edges[-1] > n:
        raise ValueError(
            f"{name}: Breakpoints must be non-negative and less than length of "
            f"data along given axis (length {n}), got bp={bp!r}."
        )
    data = xnp.moveaxis(data, axis, 0)
    pieces = []
    for lo, hi in zip(edges[:-1], edges[1:], strict=True):
        segment = data[lo:hi]
        count = int(hi - lo)
        # The least-squares line through the samples, about the centre of the segment (SciPy
        # regresses on 1..count, over count; the fitted values do not depend on that scale).
        t = np.arange(1, count + 1) / count
        t = (t - t.mean()).reshape((count,) + (1,) * (data.ndim - 1)).astype(data.dtype)
        mean = segment.mean(0, keepdims=True)
        fit = mean
        if count > 1:
            slope = xnp.sum(t * segment, axis=0, keepdims=True) / np.sum(t * t).astype(
                np.finfo(data.dtype).dtype
            )
            fit = mean + t * slope
        pieces.append(segment - fit)
    return xnp.moveaxis(xnp.concatenate(pieces, axis=0), 0, axis)


# --------------------------------------------------------------------------- spectra


def _hann(n):
    """The periodic Hann window of length ``n`` (float64 constants)."""
    if n == 1:
        return np.ones(1)
    return np.sin(np.linspace(0, np.pi, n, endpoint=False)) ** 2


def _named_window(window, n):
    if isinstance(window, str) and window == "hann":
        return _hann(n)
    try:  # SciPy is an optional dependency, as in JAX, imported on first use
        scipy_signal = importlib.import_module("scipy.signal")
    except ImportError as err:
        raise ImportError(f"scipy must be available to use window={window!r}") from err
    return scipy_signal.get_window(window, n)


def _window(name, window, nperseg, length, dtype):
    """The window array and segment length (SciPy's ``_triage_segments``)."""
    if isinstance(window, (str, tuple)):
        n = length if nperseg is None else int(nperseg)
        if n > length:
            warnings.warn(
                f"nperseg={n} is greater than input_length={length}, using nperseg={length}",
                stacklevel=3,
            )
            n = length
        return xnp.asarray(_named_window(window, n), dtype=dtype), n
    check_arraylike(name, window)
    win = xnp.asarray(window, dtype=dtype)
    n = win.size if nperseg is None else int(nperseg)
    if win.ndim != 1:
        raise ValueError(f"{name}: window must be 1-D, got shape {win.shape}")
    if length < win.size:
        raise ValueError(f"{name}: window is longer than input signal ({win.size} > {length})")
    if n != win.size:
        raise ValueError(
            f"{name}: value specified for nperseg ({n}) is different from length "
            f"of window ({win.size})"
        )
    return win, n


def _odd_extend(x, n):
    if n < 1:
        return x
    if n > x.shape[-1] - 1:
        raise ValueError(
            f"The extension length n ({n}) is too big. It must not exceed "
            f"x.shape[axis]-1, which is {x.shape[-1] - 1}."
        )
    left = 2 * x[..., :1] - xnp.flip(x[..., 1 : n + 1], axis=-1)
    right = 2 * x[..., -1:] - xnp.flip(x[..., -(n + 1) : -1], axis=-1)
    return xnp.concatenate([left, x, right], axis=-1)


def _pad_both(mode, **kw):
    def extend(x, n):
        return xnp.pad(x, [(0, 0)] * (x.ndim - 1) + [(n, n)], mode, **kw)

    return extend


_BOUNDARIES = {
    "even": _pad_both("reflect"),
    "odd": _odd_extend,
    "constant": _pad_both("edge"),
    "zeros": _pad_both("constant", constant_values=0.0),
    None: lambda x, n: x,
}


def _segments(x, win, detrend_fn, nperseg, noverlap, nfft, twosided):
    """Windowed, detrended FFTs of the overlapping segments of ``x``'s last axis:
    shape ``x.shape[:-1] + (segments, frequencies)``."""
    length = x.shape[-1]
    step = nperseg - noverlap
    starts = np.arange(0, length - nperseg + 1, step)
    frames = x[..., starts[:, None] + np.arange(nperseg)[None, :]]
    frames = detrend_fn(frames)
    if dtypes.is_complex(win.dtype) and not dtypes.is_complex(frames.dtype):
        frames = frames.astype(_complex_dtype(frames.dtype))
    frames = win * frames
    if twosided:
        return xnp.fft.fft(frames, n=nfft)
    return xnp.fft.rfft(xnp.real(frames), n=nfft)


def _detrend_fn(name, detrend_type, axis):
    if isinstance(detrend_type, str):
        return lambda d: detrend(d, type=detrend_type, axis=-1)
    if callable(detrend_type):
        # As JAX (whose ``axis`` is non-negative here): the callable sees the segments with
        # ``axis`` of the (segments, samples) stack moved last.
        return lambda d: xnp.moveaxis(detrend_type(xnp.moveaxis(d, axis, -1)), -1, axis)
    if not detrend_type:
        return lambda d: d
    raise ValueError(f"{name}: Unsupported detrend type: {detrend_type!r}")


def _scale(name, fs, win, scaling):
    if scaling == "density":
        return 1.0 / (fs * (win * win).sum())
    if scaling == "spectrum":
        return 1.0 / win.sum() ** 2
    raise ValueError(f"{name}: Unknown scaling: {scaling!r}; use 'density' or 'spectrum'")


def _pad_end(x, size):
    """``x`` zero-padded at the end of its last axis to length ``size``."""
    return xnp.pad(x, [(0, 0)] * (x.ndim - 1) + [(0, size - x.shape[-1])])


def _spectral_inputs(name, x, y, axis):
    """The signals promoted to one inexact dtype, the canonical axis and the shape of the
    non-time axes."""
    axis = operator.index(axis)
    if y is None:
        check_arraylike(name, x)
        (x,) = promote_dtypes_inexact(xnp.asarray(x))
        axis = canonicalize_axis(axis, x.ndim, name)
        return x, y, axis, x.shape[:axis] + x.shape[axis + 1 :]
    check_arraylike(name, x, y)
    x, y = promote_dtypes_inexact(xnp.asarray(x), xnp.asarray(y))
    if x.ndim != y.ndim:
        raise ValueError(f"{name}: two-arguments must have the same rank ({x.ndim} vs {y.ndim}).")
    axis = canonicalize_axis(axis, x.ndim, name)
    try:
        outer = np.broadcast_shapes(
            x.shape[:axis] + x.shape[axis + 1 :], y.shape[:axis] + y.shape[axis + 1 :]
        )
    except ValueError as err:
        raise ValueError(
            f"{name}: x and y cannot be broadcast together (shapes {x.shape} and {y.shape})."
        ) from err
    return x, y, axis, outer


def _segment_params(name, window, nperseg, noverlap, nfft, length, dtype):
    """The window and the static segment length, overlap and FFT length, checked."""
    if nperseg is not None:
        nperseg = operator.index(nperseg)
        if nperseg < 1:
            raise ValueError(f"{name}: nperseg must be a positive integer, got {nperseg}")
    win, nperseg = _window(name, window, nperseg, length, dtype)
    noverlap = nperseg // 2 if noverlap is None else operator.index(noverlap)
    nfft = nperseg if nfft is None else operator.index(nfft)
    if nfft < nperseg:
        raise ValueError(
            f"{name}: nfft must be greater than or equal to nperseg, got "
            f"nfft={nfft}, nperseg={nperseg}."
        )
    if noverlap >= nperseg:
        raise ValueError(
            f"{name}: noverlap must be less than nperseg, got "
            f"noverlap={noverlap}, nperseg={nperseg}."
        )
    return win, nperseg, noverlap, nfft


def _spectral(
    name,
    x,
    y,
    fs,
    window,
    nperseg,
    noverlap,
    nfft,
    detrend_type,
    return_onesided,
    scaling,
    axis,
    mode,
    boundary=None,
    padded=False,
):
    """SciPy's ``_spectral_helper``: ``(freqs, times, result)`` with the frequency axis at
    ``axis`` and the segment axis last."""
    if boundary not in _BOUNDARIES:
        raise ValueError(
            f"{name}: Unknown boundary option '{boundary}', must be one of: {list(_BOUNDARIES)}"
        )
    x, y, axis, outer = _spectral_inputs(name, x, y, axis)
    result_dtype = _complex_dtype(x.dtype)
    freq_dtype = np.finfo(result_dtype).dtype
    win, nperseg, noverlap, nfft = _segment_params(
        name, window, nperseg, noverlap, nfft, x.shape[axis], x.dtype
    )
    if y is None and x.size == 0:
        return (
            xnp.zeros(x.shape, freq_dtype),
            xnp.zeros(x.shape, freq_dtype),
            xnp.zeros(x.shape, result_dtype),
        )
    if y is not None and (x.size == 0 or y.size == 0):
        shape = outer[:axis] + (min(x.shape[axis], y.shape[axis]),) + outer[axis:]
        return (
            xnp.zeros(shape, freq_dtype),
            xnp.zeros(shape, freq_dtype),
            xnp.zeros(shape, result_dtype),
        )
    x = xnp.moveaxis(x, axis, -1)
    if y is not None:
        y = xnp.moveaxis(y, axis, -1) if y.ndim > 1 else y
        longest = max(x.shape[-1], y.shape[-1])
        x, y = _pad_end(x, longest), _pad_end(y, longest)
    step = nperseg - noverlap
    if boundary is not None:
        x = _BOUNDARIES[boundary](x, nperseg // 2)
        y = None if y is None else _BOUNDARIES[boundary](y, nperseg // 2)
    if padded:
        size = x.shape[-1] + -(x.shape[-1] - nperseg) % step % nperseg
        x = _pad_end(x, size)
        y = None if y is None else _pad_end(y, size)
    detrend_fn = _detrend_fn(name, detrend_type, axis)
    scale = _scale(name, fs, win, scaling)
    if mode == "stft":
        scale = xnp.sqrt(scale)
    scale = xnp.asarray(scale).astype(_complex_dtype(xnp.asarray(scale).dtype))
    twosided = not return_onesided
    if return_onesided and (xnp.iscomplexobj(x) or (y is not None and xnp.iscomplexobj(y))):
        twosided = True
        warnings.warn("Input data is complex, switching to return_onesided=False", stacklevel=3)
    freqs = (xnp.fft.fftfreq if twosided else xnp.fft.rfftfreq)(nfft, 1 / fs, dtype=freq_dtype)
    result = _segments(x, win, detrend_fn, nperseg, noverlap, nfft, twosided)
    if y is not None:
        result = xnp.conj(result) * _segments(y, win, detrend_fn, nperseg, noverlap, nfft, twosided)
    elif mode == "psd":
        result = xnp.conj(result) * result
    result = result * scale
    if not twosided and mode == "psd":
        # One-sided densities fold in the negative frequencies (not DC, nor Nyquist).
        doubled = np.ones(result.shape[-1])
        doubled[1 : None if nfft % 2 else -1] = 2
        result = result * doubled.astype(np.finfo(result.dtype).dtype)
    times = xnp.arange(nperseg / 2, x.shape[-1] - nperseg / 2 + 1, step, dtype=freq_dtype) / fs
    if boundary is not None:
        times = times - nperseg / 2 / fs
    result = result.astype(result_dtype)
    if y is None and mode != "stft":
        result = xnp.real(result)
    return freqs, times, xnp.moveaxis(result, -1, axis)


def stft(
    x,
    fs=1.0,
    window="hann",
    nperseg=256,
    noverlap=None,
    nfft=None,
    detrend=False,
    return_onesided=True,
    boundary="zeros",
    padded=True,
    axis=-1,
):
    """The short-time Fourier transform of ``x`` along ``axis``.

    Args:
      x: the time series.
      fs: sampling frequency.
      window: ``"hann"``, another SciPy window name or tuple (needs SciPy), or a 1-D array.
      nperseg: segment length. noverlap: overlap (default ``nperseg // 2``).
      nfft: FFT length (default ``nperseg``).
      detrend: False, ``"constant"``, ``"linear"`` or a callable on segments.
      return_onesided: one-sided spectrum for real input.
      boundary: end extension: ``"zeros"`` (default), ``"even"``, ``"odd"``,
        ``"constant"`` or None.
      padded: zero-pad the end to a whole number of segments.
      axis: the time axis.

    Returns:
      ``(f, t, Zxx)``: frequencies, segment times and the STFT (frequencies at ``axis``,
      segments last).

    Example:
      >>> f, t, Z = xform.scipy.signal.stft(x, nperseg=4)
    """
    return _spectral(
        "xform.scipy.signal.stft",
        x,
        None,
        fs,
        window,
        nperseg,
        noverlap,
        nfft,
        detrend,
        return_onesided,
        "spectrum",
        axis,
        "stft",
        boundary,
        padded,
    )


def _median_bias(n):
    k = np.arange(2.0, n, 2)
    return 1 + np.sum(1.0 / (k + 1) - 1.0 / k)


def csd(
    x,
    y,
    fs=1.0,
    window="hann",
    nperseg=None,
    noverlap=None,
    nfft=None,
    detrend="constant",
    return_onesided=True,
    scaling="density",
    axis=-1,
    average="mean",
):
    """The cross power spectral density of ``x`` and ``y`` by Welch's method.

    Args:
      x, y: the time series (``y=None``: the power spectral density of ``x``).
      fs: sampling frequency. window, nperseg, noverlap, nfft, detrend, return_onesided:
        as ``stft`` (``nperseg`` defaults to the whole signal for named windows).
      scaling: ``"density"`` (V**2/Hz) or ``"spectrum"`` (V**2).
      axis: the time axis.
      average: ``"mean"`` or ``"median"`` over the segments.

    Returns:
      ``(f, Pxy)``: frequencies and the (complex, unless ``y`` is None) spectral density.

    Example:
      >>> f, Pxy = xform.scipy.signal.csd(x, y, nperseg=8)
    """
    name = "xform.scipy.signal.csd"
    if average not in ("mean", "median"):
        raise ValueError(f'{name}: average must be "median" or "mean", got {average!r}')
    freqs, _, pxy = _spectral(
        name,
        x,
        y,
        fs,
        window,
        nperseg,
        noverlap,
        nfft,
        detrend,
        return_onesided,
        scaling,
        axis,
        "psd",
    )
    if y is not None:
        pxy = pxy + 0j
    if pxy.ndim >= 2 and pxy.size > 0:
        if pxy.shape[-1] > 1:
            if average == "median":
                bias = _median_bias(pxy.shape[-1])
                if xnp.iscomplexobj(pxy):
                    pxy = lax.complex(
                        xnp.median(xnp.real(pxy), axis=-1), xnp.median(xnp.imag(pxy), axis=-1)
                    )
                else:
                    pxy = xnp.median(pxy, axis=-1)
                pxy = pxy / xnp.asarray(bias, pxy.dtype)
            else:
                pxy = pxy.mean(axis=-1)
        else:
            pxy = pxy.reshape(pxy.shape[:-1])
    return freqs, pxy


def welch(
    x,
    fs=1.0,
    window="hann",
    nperseg=None,
    noverlap=None,
    nfft=None,
    detrend="constant",
    return_onesided=True,
    scaling="density",
    axis=-1,
    average="mean",
):
    """The power spectral density of ``x`` by Welch's method (averaged periodograms).

    Args:
      x: the time series. Other arguments as ``csd``.

    Returns:
      ``(f, Pxx)``: frequencies and the (real) power spectral density.

    Example:
      >>> f, Pxx = xform.scipy.signal.welch(x, nperseg=8)
    """
    freqs, pxx = csd(
        x,
        None,
        fs=fs,
        window=window,
        nperseg=nperseg,
        noverlap=noverlap,
        nfft=nfft,
        detrend=detrend,
        return_onesided=return_onesided,
        scaling=scaling,
        axis=axis,
        average=average,
    )
    return freqs, xnp.real(pxx)


def _overlap_add(frames, step):
    """Frames ``(..., count, length)`` summed at offsets ``step`` apart: ``(..., size)``."""
    *batch, count, length = frames.shape
    size = step * (count - 1) + length
    positions = (np.arange(count)[:, None] * step + np.arange(length)[None, :]).ravel()
    out = xnp.zeros((*batch, size), frames.dtype)
    return out.at[..., positions].add(frames.reshape(*batch, count * length))


def _istft_window(name, window, nperseg, dtype):
    if isinstance(window, (str, tuple)):
        return xnp.asarray(_named_window(window, nperseg), dtype=dtype)
    check_arraylike(name, window)
    win = xnp.asarray(window)
    if win.ndim != 1:
        raise ValueError(f"{name}: window must be 1-D, got shape {win.shape}")
    if win.shape[0] != nperseg:
        raise ValueError(f"{name}: window must have length of {nperseg}, got {win.shape[0]}")
    return win


def istft(
    Zxx,
    fs=1.0,
    window="hann",
    nperseg=None,
    noverlap=None,
    nfft=None,  # noqa: N803
    input_onesided=True,
    boundary=True,
    time_axis=-1,
    freq_axis=-2,
):
    """The inverse short-time Fourier transform: the signal whose ``stft`` is ``Zxx``.

    Args:
      Zxx: the STFT (at least 2-D).
      fs: sampling frequency. window: as ``stft``.
      nperseg: segment length (default from ``Zxx``'s frequency axis).
      noverlap: overlap (default ``nperseg // 2``). nfft: FFT length.
      input_onesided: whether ``Zxx`` is a one-sided spectrum.
      boundary: whether ``stft`` extended the signal at its ends (then it is trimmed).
      time_axis, freq_axis: the segment and frequency axes of ``Zxx``.

    Returns:
      ``(t, x)``: sample times and the reconstructed signal.

    Example:
      >>> t, x = xform.scipy.signal.istft(xform.scipy.signal.stft(x, nperseg=4)[2])
    """
    name = "xform.scipy.signal.istft"
    check_arraylike(name, Zxx)
    Zxx = xnp.asarray(Zxx)
    if Zxx.ndim < 2:
        raise ValueError(f"{name}: Input stft must be at least 2d!, got shape {Zxx.shape}")
    freq_axis = canonicalize_axis(freq_axis, Zxx.ndim, name)
    time_axis = canonicalize_axis(time_axis, Zxx.ndim, name)
    if freq_axis == time_axis:
        raise ValueError(f"{name}: Must specify differing time and frequency axes!")
    Zxx = Zxx.astype(_complex_dtype(Zxx.dtype))
    n_default = 2 * (Zxx.shape[freq_axis] - 1) if input_onesided else Zxx.shape[freq_axis]
    nperseg = operator.index(nperseg or n_default)
    if nperseg < 1:
        raise ValueError(f"{name}: nperseg must be a positive integer, got {nperseg}")
    if nfft is None:
        nfft = n_default + (1 if input_onesided and nperseg == n_default + 1 else 0)
    else:
        nfft = operator.index(nfft)
    if nfft < nperseg:
        raise ValueError(f"{name}: FFT length ({nfft}) must be longer than nperseg ({nperseg}).")
    noverlap = operator.index(noverlap or nperseg // 2)
    if noverlap >= nperseg:
        raise ValueError(
            f"{name}: noverlap must be less than nperseg, got "
            f"noverlap={noverlap}, nperseg={nperseg}."
        )
    step = nperseg - noverlap
    if (freq_axis, time_axis) != (Zxx.ndim - 2, Zxx.ndim - 1):
        outer = tuple(a for a in range(Zxx.ndim) if a not in (time_axis, freq_axis))
        Zxx = xnp.transpose(Zxx, outer + (freq_axis, time_axis))
    inverse = xnp.fft.irfft if input_onesided else xnp.fft.ifft
    frames = inverse(Zxx, axis=-2, n=nfft)[..., :nperseg, :]
    win = _istft_window(name, window, nperseg, frames.dtype)
    frames = frames * win.sum()  # undoes stft's "spectrum" scaling
    win_col = win.reshape((1,) * (frames.ndim - 2) + (nperseg, 1))
    x = _overlap_add(xnp.swapaxes(frames * win_col, -2, -1), step)
    norm = _overlap_add(
        xnp.broadcast_to(
            xnp.swapaxes(win_col * win_col, -2, -1),
            (1,) * (frames.ndim - 2) + (frames.shape[-1], nperseg),
        ),
        step,
    )
    if boundary:
        half = nperseg // 2
        x = x[..., half:-half]
        norm = norm[..., half:-half]
    x = x / xnp.where(norm > 1e-10, norm, 1.0)
    if x.ndim > 1 and time_axis != Zxx.ndim - 1:
        if freq_axis < time_axis:
            time_axis -= 1
        x = xnp.moveaxis(x, -1, time_axis)
    times = xnp.arange(x.shape[0], dtype=np.finfo(x.dtype).dtype) / fs
    return times, x

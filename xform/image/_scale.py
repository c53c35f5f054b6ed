"""Image resampling: ``resize`` and ``scale_and_translate``, as ``jax.image``.

Each spatial axis is resampled by a dense ``(input, output)`` weight matrix built from the
kernel of the method, all contracted with the image in one einsum; so the result is
differentiable in the image and in ``scale``/``translation``. Nearest-neighbour resizing
is a gather instead.
"""

import enum

import numpy as np

from xform import lax
from xform import numpy as xnp
from xform.numpy._promote import aval_of, check_arraylike, promote_args_inexact
from xform.numpy._reductions import canonicalize_axis

__all__ = ["ResizeMethod", "resize", "scale_and_translate"]


class ResizeMethod(enum.Enum):
    """Image resize method: NEAREST, LINEAR, LANCZOS3, LANCZOS5, CUBIC (Keys), CUBIC_PYTORCH
    (OpenCV/PyTorch's cubic, with edge padding when not antialiased) or AREA."""

    NEAREST = 0
    LINEAR = 1
    LANCZOS3 = 2
    LANCZOS5 = 3
    CUBIC = 4
    CUBIC_PYTORCH = 5
    AREA = 6

    @staticmethod
    def from_string(s):
        """The method a string names (``"bilinear"``, ``"tricubic"``, ``"lanczos3"``, ...)."""
        method = _METHOD_NAMES.get(s)
        if method is None:
            raise ValueError(
                f'Unknown resize method "{s}"; expected one of {sorted(_METHOD_NAMES)}'
            )
        return method


_METHOD_NAMES = {
    "nearest": ResizeMethod.NEAREST,
    "linear": ResizeMethod.LINEAR,
    "bilinear": ResizeMethod.LINEAR,
    "trilinear": ResizeMethod.LINEAR,
    "triangle": ResizeMethod.LINEAR,
    "lanczos3": ResizeMethod.LANCZOS3,
    "lanczos5": ResizeMethod.LANCZOS5,
    "cubic": ResizeMethod.CUBIC,
    "bicubic": ResizeMethod.CUBIC,
    "tricubic": ResizeMethod.CUBIC,
    "cubic-pytorch": ResizeMethod.CUBIC_PYTORCH,
    "bicubic-pytorch": ResizeMethod.CUBIC_PYTORCH,
    "area": ResizeMethod.AREA,
}


# --------------------------------------------------------------------------- kernels
# Each takes the non-negative distance |sample - pixel| (in kernel units).


def _lanczos(radius):
    def kernel(x):
        y = radius * xnp.sin(np.pi * x) * xnp.sin(np.pi * x / radius)
        # Near 0 the ratio is 0/0; its limit is 1.
        out = xnp.where(x > 1e-3, y / xnp.where(x != 0, np.pi**2 * x**2, 1), 1)
        return xnp.where(x > radius, 0.0, out)

    return kernel


def _keys_cubic(x):
    out = ((1.5 * x - 2.5) * x) * x + 1.0
    out = xnp.where(x >= 1.0, ((-0.5 * x + 2.5) * x - 4.0) * x + 2.0, out)
    return xnp.where(x >= 2.0, 0.0, out)


def _opencv_cubic(x):
    a = -0.75
    out = ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0
    out = xnp.where(x >= 1.0, ((a * x - 5.0 * a) * x + 8.0 * a) * x - 4.0 * a, out)
    return xnp.where(x >= 2.0, 0.0, out)


def _triangle(x):
    return xnp.maximum(0, 1 - xnp.abs(x))


_AREA = object()  # area weights are overlaps of intervals, not a kernel of the distance

_KERNELS = {  # method: (radius, kernel)
    ResizeMethod.LINEAR: (1, _triangle),
    ResizeMethod.LANCZOS3: (3, _lanczos(3.0)),
    ResizeMethod.LANCZOS5: (5, _lanczos(5.0)),
    ResizeMethod.CUBIC: (2, _keys_cubic),
    ResizeMethod.CUBIC_PYTORCH: (2, _opencv_cubic),
    ResizeMethod.AREA: (1, _AREA),
}


def _normalized(weights, total):
    """``weights / total`` per output column, 0 where the total is (nearly) 0."""
    eps = 1000.0 * float(np.finfo(np.float32).eps)
    return xnp.where(xnp.abs(total) > eps, weights / xnp.where(total != 0, total, 1), 0)


def _weight_matrix(in_size, out_size, scale, translation, kernel, antialias, radius, edge_padding):
    """The ``(in_size, out_size)`` resampling weights of one axis."""
    dtype = xnp.result_type(scale, translation)
    inv_scale = 1.0 / scale
    kernel_scale = xnp.maximum(inv_scale, 1.0) if antialias else 1.0
    out_pos = xnp.arange(out_size, dtype=dtype)
    sample = (out_pos + 0.5) * inv_scale - translation * inv_scale - 0.5
    # Only non-antialiased cubic-pytorch pads (antialiased, it is plain cubic), so the
    # padding is the kernel radius.
    pad = radius if edge_padding else 0
    taps = xnp.arange(-pad, in_size + pad, dtype=dtype)
    if kernel is _AREA:
        left = out_pos * inv_scale - translation * inv_scale
        right = left + inv_scale
        pixel = xnp.arange(in_size, dtype=dtype)
        weights = xnp.maximum(
            0.0,
            xnp.minimum(right[None, :], pixel[:, None] + 1.0)
            - xnp.maximum(left[None, :], pixel[:, None]),
        )
    else:
        weights = kernel(xnp.abs(sample[None, :] - taps[:, None]) / kernel_scale)
    if edge_padding:
        # Fold the padded taps onto the edge pixels they repeat.
        clamped = xnp.clip(taps.astype(np.int32), 0, in_size - 1)
        fold = (clamped[None, :] == xnp.arange(in_size)[:, None]).astype(dtype)
        weights = xnp.matmul(fold, weights, precision=lax.Precision.HIGHEST)
        return _normalized(weights, xnp.sum(weights, axis=0, keepdims=True))
    weights = _normalized(weights, xnp.sum(weights, axis=0, keepdims=True))
    inside = (sample >= -0.5) & (sample <= in_size - 0.5)
    return xnp.where(inside[None, :], weights, 0)


def _resample(x, shape, spatial_dims, scale, translation, method, antialias, precision):
    if method == ResizeMethod.CUBIC_PYTORCH and antialias:
        method = ResizeMethod.CUBIC
    radius, kernel = _KERNELS[method]
    edge_padding = method == ResizeMethod.CUBIC_PYTORCH and not antialias
    if not spatial_dims:
        return x
    in_shape = aval_of(x).shape
    letters = "abcdefghijklmnopqrstuvwxyz"
    ndim = len(in_shape)
    in_spec, out_spec = list(letters[:ndim]), list(letters[:ndim])
    operands, specs = [x], []
    for i, dim in enumerate(spatial_dims):
        d = canonicalize_axis(dim, ndim, "scale_and_translate")
        w = _weight_matrix(
            in_shape[d], shape[d], scale[i], translation[i], kernel, antialias, radius, edge_padding
        )
        operands.append(w.astype(aval_of(x).dtype))
        specs.append(in_spec[d] + letters[ndim + i].upper())
        out_spec[d] = letters[ndim + i].upper()
    subscripts = "".join(in_spec) + "," + ",".join(specs) + "->" + "".join(out_spec)
    return xnp.einsum(subscripts, *operands, precision=precision)


def _method(method):
    if isinstance(method, str):
        return ResizeMethod.from_string(method)
    if not isinstance(method, ResizeMethod):
        raise TypeError(
            f"image resize: argument `method` must be a string or a ResizeMethod, got {method!r}"
        )
    return method


def _shape(shape, image, name):
    shape = tuple(int(d) for d in shape)
    if len(shape) != aval_of(image).ndim:
        raise ValueError(
            f"{name}: shape must have length equal to the number of dimensions of "
            f"x; {shape} vs {aval_of(image).shape}"
        )
    return shape


def scale_and_translate(
    image,
    shape,
    spatial_dims,
    scale,
    translation,
    method,
    antialias=True,
    precision=lax.Precision.HIGHEST,
):
    """Resample ``image`` to ``shape`` under the map ``x -> x * scale + translation`` of the
    ``spatial_dims`` (half-pixel centres; output samples outside the input are 0).

    Args:
      image: the input array.
      shape: the output shape, one entry per dimension of ``image``.
      spatial_dims: the K dimensions that are scaled and translated.
      scale, translation: K values each (arrays or sequences; may be traced).
      method: a ``ResizeMethod`` or its name, other than nearest.
      antialias: low-pass filter when downsampling.
      precision: the einsum precision.

    Example:
      >>> scale_and_translate(img, (4, 4), (0, 1), xform.numpy.array([2., 2.]),
      ...                     xform.numpy.zeros(2), "linear")
    """
    check_arraylike("scale_and_translate", image)
    shape = _shape(shape, image, "scale_and_translate")
    method = _method(method)
    if method == ResizeMethod.NEAREST:
        raise ValueError(
            "scale_and_translate: nearest neighbor resampling is not currently "
            "supported; use resize or another method"
        )
    spatial_dims = tuple(spatial_dims)
    (image,) = promote_args_inexact("scale_and_translate", image)
    for name, v in (("scale", scale), ("translation", translation)):
        check_arraylike("scale_and_translate", v)
        if aval_of(xnp.asarray(v)).shape != (len(spatial_dims),):
            raise ValueError(
                f"scale_and_translate: argument `{name}` must have shape "
                f"({len(spatial_dims)},) to match spatial_dims {spatial_dims}, got "
                f"{aval_of(v).shape}"
            )
    scale, translation = promote_args_inexact("scale_and_translate", scale, translation)
    return _resample(image, shape, spatial_dims, scale, translation, method, antialias, precision)


def _resize_nearest(x, shape):
    for d, (m, n) in enumerate(zip(aval_of(x).shape, shape, strict=True)):
        if m == n:
            continue
        # The same float32 arithmetic as JAX, so ties round identically.
        offsets = (np.arange(n, dtype=np.float32) + 0.5) * np.float32(m) / np.float32(n)
        x = xnp.take(x, np.floor(offsets).astype(np.int32), axis=d)
    return x


def resize(image, shape, method, antialias=True, precision=lax.Precision.HIGHEST):
    """Resize ``image`` to ``shape`` with an interpolation ``method``.

    Args:
      image: the input array.
      shape: the output shape, one entry per dimension of ``image`` (the dimensions that
        change size are resampled).
      method: a ``ResizeMethod`` or one of ``"nearest"``, ``"linear"``/``"bilinear"``/
        ``"trilinear"``/``"triangle"``, ``"cubic"``/``"bicubic"``/``"tricubic"``,
        ``"lanczos3"``, ``"lanczos5"``, ``"cubic-pytorch"``, ``"area"``.
      antialias: low-pass filter when downsampling (not for ``"nearest"``).
      precision: the einsum precision.

    Example:
      >>> resize(xform.numpy.ones((2, 2, 3)), (4, 4, 3), "bilinear").shape  # (4, 4, 3)
    """
    check_arraylike("resize", image)
    image = xnp.asarray(image)
    shape = _shape(shape, image, "resize")
    method = _method(method)
    if method == ResizeMethod.NEAREST:
        return _resize_nearest(image, shape)
    (image,) = promote_args_inexact("resize", image)
    in_shape = aval_of(image).shape
    spatial_dims = tuple(d for d in range(len(shape)) if in_shape[d] != shape[d])
    scale = [1.0 if shape[d] == 0 else shape[d] / in_shape[d] for d in spatial_dims]
    return _resample(
        image, shape, spatial_dims, scale, [0.0] * len(spatial_dims), method, antialias, precision
    )

"""``conv_general_dilated`` (and its ``conv`` wrappers): dimension numbers, padding and
every rule.

It takes a ``precision`` and a ``preferred_element_type`` as ``dot_general`` does
(xform/primitives/dot.py, whose precision handling and bilinear transpose it shares). Its
NumPy host implementation dilates and pads the input and contracts the windows.
"""

from typing import NamedTuple

import numpy as np

from xform import dtypes
from xform.core import ShapedArray, get_aval
from xform.interpret import ad, batching
from xform.interpret.batching import not_mapped
from xform.primitives.base import standard_primitive
from xform.primitives.dot import (
    _as_dtype,
    _bilinear_transpose,
    _compute_dtype,
    _preferred_dtype,
    canonicalize_precision,
)
from xform.primitives.structural import (
    reshape,
    rev,
)

__all__ = [
    "ConvDimensionNumbers",
    "conv_dimension_numbers",
    "conv_general_permutations",
    "padtype_to_pads",
    "conv_general_dilated",
    "conv",
    "conv_with_general_padding",
]


class ConvDimensionNumbers(NamedTuple):
    """Where the batch, feature and spatial dimensions of a convolution's operands are.

    ``lhs_spec``: (batch dim, feature dim, spatial dims...); ``rhs_spec``: (out feature dim,
    in feature dim, spatial dims...); ``out_spec``: (batch dim, feature dim, spatial dims...).
    """

    lhs_spec: tuple
    rhs_spec: tuple
    out_spec: tuple


def conv_general_permutations(dimension_numbers):
    """The ``(lhs, rhs, out)`` permutations for specs such as ``('NCHW', 'OIHW', 'NCHW')``."""
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    charpairs = (("N", "C"), ("O", "I"), ("N", "C"))
    for i, (a, b) in enumerate(charpairs):
        spec = dimension_numbers[i]
        if not spec.count(a) == spec.count(b) == 1:
            raise TypeError(
                f"convolution dimension_numbers[{i}] must contain the characters "
                f"'{a}' and '{b}' exactly once, got {spec}."
            )
        if len(spec) != len(set(spec)):
            raise TypeError(
                f"convolution dimension_numbers[{i}] cannot have duplicate characters, got {spec}."
            )
    if not (set(lhs_spec) - {"N", "C"} == set(rhs_spec) - {"O", "I"} == set(out_spec) - {"N", "C"}):
        raise TypeError(
            "convolution dimension_numbers elements must each have the same set "
            f"of spatial characters, got {tuple(dimension_numbers)}."
        )

    def getperm(spec, charpair):
        spatial = [i for i, c in enumerate(spec) if c not in charpair]
        if spec is not rhs_spec:  # spatial dims are ordered as in the kernel spec
            spatial = sorted(spatial, key=lambda i: rhs_spec.index(spec[i]))
        return (spec.index(charpair[0]), spec.index(charpair[1])) + tuple(spatial)

    return tuple(getperm(s, c) for s, c in zip(dimension_numbers, charpairs, strict=True))


def conv_dimension_numbers(lhs_shape, rhs_shape, dimension_numbers):
    """``dimension_numbers`` (None, three spec strings, or ConvDimensionNumbers) as a
    ``ConvDimensionNumbers``."""
    if isinstance(dimension_numbers, ConvDimensionNumbers):
        return ConvDimensionNumbers(*(tuple(int(d) for d in s) for s in dimension_numbers))
    if len(lhs_shape) != len(rhs_shape):
        raise TypeError(
            f"convolution requires lhs and rhs ndim to be equal, got "
            f"{len(lhs_shape)} and {len(rhs_shape)}."
        )
    if dimension_numbers is None:
        iota = tuple(range(len(lhs_shape)))
        return ConvDimensionNumbers(iota, iota, iota)
    if not isinstance(dimension_numbers, (list, tuple)):
        raise TypeError(
            "convolution dimension_numbers must be tuple/list or None, got "
            f"{type(dimension_numbers)}."
        )
    if len(dimension_numbers) != 3:
        raise TypeError(
            "convolution dimension_numbers list/tuple must be length 3, got "
            f"{len(dimension_numbers)}."
        )
    if not all(isinstance(s, str) for s in dimension_numbers):
        raise TypeError(
            "convolution dimension_numbers elements must be strings, got "
            f"{tuple(type(s).__name__ for s in dimension_numbers)}."
        )
    for i, s in enumerate(dimension_numbers):
        if len(s) != len(lhs_shape):
            raise TypeError(
                f"convolution dimension_numbers[{i}] must have len equal to the "
                f"ndim of lhs and rhs, got {len(s)} for lhs and rhs shapes "
                f"{tuple(lhs_shape)} and {tuple(rhs_shape)}."
            )
    return ConvDimensionNumbers(*conv_general_permutations(dimension_numbers))


def _dilate_dim(d, dilation):
    return 0 if d == 0 else 1 + dilation * (d - 1)


def padtype_to_pads(in_shape, window_shape, window_strides, padding):
    """``'SAME'``, ``'SAME_LOWER'`` or ``'VALID'`` as a list of ``(low, high)`` pairs."""
    kind = padding.upper()
    if kind == "VALID":
        return [(0, 0)] * len(in_shape)
    if kind not in ("SAME", "SAME_LOWER"):
        raise RuntimeError(
            f"Unrecognized padding type: expected 'VALID', 'SAME', or 'SAME_LOWER', got {padding}."
        )  # RuntimeError, as JAX's
    pads = []
    for d, k, s in zip(in_shape, window_shape, window_strides, strict=True):
        out = -(-d // s)
        total = max((out - 1) * s + k - d, 0)
        lo = total // 2 if kind == "SAME" else total - total // 2
        pads.append((lo, total - lo))
    return pads


def _int_tuple(xs, n, what, name):
    try:
        out = tuple(int(x.__index__()) for x in xs)
    except (TypeError, AttributeError):
        raise TypeError(f"{name}: {what} must be a sequence of integers, got {xs!r}") from None
    if len(out) != n:
        raise ValueError(
            f"{name}: {what} must have one entry per spatial dimension ({n}), got {out}"
        )
    return out


def conv_general_dilated(
    lhs,
    rhs,
    window_strides,
    padding,
    lhs_dilation=None,
    rhs_dilation=None,
    dimension_numbers=None,
    feature_group_count=1,
    batch_group_count=1,
    precision=None,
    preferred_element_type=None,
    out_sharding=None,
):
    """General n-dimensional convolution (a cross-correlation, as XLA's Conv).

    Args:
      lhs: the input, rank ``n + 2``; rhs: the kernel, rank ``n + 2``.
      window_strides: ``n`` strides. padding: ``'SAME'``, ``'SAME_LOWER'``, ``'VALID'`` or
        ``n`` ``(low, high)`` pairs (negative values crop).
      lhs_dilation / rhs_dilation: ``n`` dilation factors (transposed / atrous conv).
      dimension_numbers: ``None`` (``NCHW``/``OIHW``/``NCHW``), a ``ConvDimensionNumbers`` or
        three spec strings such as ``('NHWC', 'HWIO', 'NHWC')``.
      feature_group_count / batch_group_count: grouped convolutions.

      out_sharding: the result's layout; only None (the operands' own) yet.

    Example: ``conv_general_dilated(x, w, (1, 1), 'SAME')``.
    """
    name = "lax.conv_general_dilated"
    if out_sharding is not None:
        raise NotImplementedError(
            f"{name}: out_sharding={out_sharding!r} is not supported "
            "yet; lay the result out with lax.with_sharding_constraint"
        )
    lhs_shape, rhs_shape = get_aval(lhs).shape, get_aval(rhs).shape
    dnums = conv_dimension_numbers(lhs_shape, rhs_shape, dimension_numbers)
    n = len(rhs_shape) - 2
    if n < 0:
        raise TypeError(
            f"{name}: operands must have rank at least 2, got lhs shape "
            f"{lhs_shape} and rhs shape {rhs_shape}"
        )
    window_strides = _int_tuple(window_strides, n, "window_strides", name)
    lhs_dilation = (
        (1,) * n if lhs_dilation is None else _int_tuple(lhs_dilation, n, "lhs_dilation", name)
    )
    rhs_dilation = (
        (1,) * n if rhs_dilation is None else _int_tuple(rhs_dilation, n, "rhs_dilation", name)
    )
    if isinstance(padding, str):
        if any(d != 1 for d in lhs_dilation):
            raise ValueError(
                f"{name}: string padding is not implemented for transposed "
                "convolution (lhs_dilation > 1); give explicit (low, high) pairs"
            )
        in_spatial = [lhs_shape[d] for d in dnums.lhs_spec[2:]]
        window = [
            _dilate_dim(rhs_shape[d], r)
            for d, r in zip(dnums.rhs_spec[2:], rhs_dilation, strict=True)
        ]
        padding = padtype_to_pads(in_spatial, window, window_strides, padding)
    try:
        padding = tuple((int(lo.__index__()), int(hi.__index__())) for lo, hi in padding)
    except (TypeError, ValueError, AttributeError):
        raise ValueError(
            f"{name}: padding should be a string or a sequence of (low, high) "
            f"pairs, got {padding!r}"
        ) from None
    return conv_general_dilated_p.bind(
        lhs,
        rhs,
        window_strides=window_strides,
        padding=padding,
        lhs_dilation=lhs_dilation,
        rhs_dilation=rhs_dilation,
        dimension_numbers=dnums,
        feature_group_count=int(feature_group_count),
        batch_group_count=int(batch_group_count),
        precision=canonicalize_precision(precision, name),
        preferred_element_type=_preferred_dtype(preferred_element_type),
    )


def conv(lhs, rhs, window_strides, padding, precision=None, preferred_element_type=None):
    """``conv_general_dilated`` with ``NCHW``/``OIHW`` layouts and no dilation."""
    return conv_general_dilated(
        lhs,
        rhs,
        window_strides,
        padding,
        precision=precision,
        preferred_element_type=preferred_element_type,
    )


def conv_with_general_padding(
    lhs,
    rhs,
    window_strides,
    padding,
    lhs_dilation,
    rhs_dilation,
    precision=None,
    preferred_element_type=None,
):
    """``conv_general_dilated`` with ``NCHW``/``OIHW`` layouts."""
    return conv_general_dilated(
        lhs,
        rhs,
        window_strides,
        padding,
        lhs_dilation=lhs_dilation,
        rhs_dilation=rhs_dilation,
        precision=precision,
        preferred_element_type=preferred_element_type,
    )


def _conv_result_dtype(name, lhs, rhs, preferred):
    if lhs.dtype != rhs.dtype:
        raise TypeError(
            f"{name} requires arguments to have the same dtypes, got {lhs.dtype}, "
            f"{rhs.dtype}. (Tip: convert one with lax.convert_element_type.)"
        )
    dtype = lhs.dtype
    if preferred is None:
        return dtype
    if preferred not in dtypes.SUPPORTED:
        raise TypeError(f"{name}: unsupported preferred_element_type {preferred}")
    if not (dtypes.is_int(dtype) and dtypes.is_float(preferred)):
        for kind in (dtypes.is_int, dtypes.is_float, dtypes.is_complex):
            if kind(dtype) and not kind(preferred):
                raise TypeError(
                    f"{name}: input type {dtype} is incompatible with "
                    f"preferred_element_type {preferred}. The compatible "
                    "combinations are (integral, integral), (integral, floating), "
                    "(floating, floating), (complex, complex)."
                )
        if dtypes.is_signed_int(dtype) and not dtypes.is_signed_int(preferred):
            raise TypeError(
                f"{name}: preferred_element_type {preferred} must have the same "
                f"signedness as the input type {dtype}."
            )
    if preferred.itemsize < dtype.itemsize:
        raise TypeError(
            f"{name}: preferred_element_type {preferred} must not be narrower "
            f"than the input type {dtype}."
        )
    return preferred


def _conv_general_dilated_abstract_eval(
    lhs,
    rhs,
    *,
    window_strides,
    padding,
    lhs_dilation,
    rhs_dilation,
    dimension_numbers,
    feature_group_count,
    batch_group_count,
    precision,
    preferred_element_type,
):
    name = "lax.conv_general_dilated"
    if lhs.ndim != rhs.ndim:
        raise ValueError(
            f"{name}: lhs and rhs must have the same number of dimensions, but "
            f"got shapes {lhs.shape} and {rhs.shape}."
        )
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    for what, spec in (("lhs_spec", lhs_spec), ("rhs_spec", rhs_spec), ("out_spec", out_spec)):
        if sorted(spec) != list(range(lhs.ndim)):
            raise ValueError(
                f"{name}: dimension_numbers.{what} {spec} must be a permutation "
                f"of range({lhs.ndim})"
            )
    n = lhs.ndim - 2
    for what, v in (
        ("window_strides", window_strides),
        ("lhs_dilation", lhs_dilation),
        ("rhs_dilation", rhs_dilation),
        ("padding", padding),
    ):
        if len(v) != n:
            raise ValueError(
                f"{name}: {what} {v} must have one entry per spatial dimension "
                f"({n}) for operands of shapes {lhs.shape} and {rhs.shape}"
            )
    for what, v in (
        ("window_strides", window_strides),
        ("lhs_dilation", lhs_dilation),
        ("rhs_dilation", rhs_dilation),
    ):
        if any(s < 1 for s in v):
            raise ValueError(f"{name}: {what} must be positive, got {v}")
    fg, bg = feature_group_count, batch_group_count
    if fg < 1 or bg < 1:
        raise ValueError(
            f"{name}: feature_group_count and batch_group_count must be positive "
            f"integers, got {fg} and {bg}."
        )
    if fg > 1 and bg > 1:
        raise ValueError(
            f"{name}: at most one of batch_group_count and feature_group_count "
            f"may be > 1, got batch_group_count={bg} and feature_group_count={fg}"
        )
    in_features, out_features = lhs.shape[lhs_spec[1]], rhs.shape[rhs_spec[0]]
    if in_features % fg:
        raise ValueError(
            f"{name}: feature_group_count must divide the lhs feature dimension "
            f"size, but {fg} does not divide {in_features} (lhs shape {lhs.shape})"
        )
    if in_features // fg != rhs.shape[rhs_spec[1]]:
        raise ValueError(
            f"{name}: the lhs feature dimension size divided by "
            "feature_group_count must equal the rhs input feature dimension "
            f"size, but {in_features} // {fg} != {rhs.shape[rhs_spec[1]]} (lhs "
            f"shape {lhs.shape}, rhs shape {rhs.shape})"
        )
    for what, g in (("feature_group_count", fg), ("batch_group_count", bg)):
        if out_features % g:
            raise ValueError(
                f"{name}: the rhs output feature dimension size must be a "
                f"multiple of {what}, but {out_features} is not a multiple of "
                f"{g} (rhs shape {rhs.shape})"
            )
    batch = lhs.shape[lhs_spec[0]]
    if batch % bg:
        raise ValueError(
            f"{name}: batch_group_count must divide the lhs batch dimension "
            f"size, but {bg} does not divide {batch} (lhs shape {lhs.shape})"
        )
    spatial = []
    for i in range(n):
        d = _dilate_dim(lhs.shape[lhs_spec[2 + i]], lhs_dilation[i])
        k = _dilate_dim(rhs.shape[rhs_spec[2 + i]], rhs_dilation[i])
        padded = d + padding[i][0] + padding[i][1]
        if padded < 0:
            raise ValueError(
                f"{name}: negative padding {padding} is larger than the size of "
                f"the corresponding dimension of the lhs, shape {lhs.shape}"
            )
        spatial.append(max((padded - k) // window_strides[i] + 1, 0))
    canonical = (batch // bg, out_features) + tuple(spatial)
    shape = [0] * lhs.ndim
    for i, d in enumerate(out_spec):
        shape[d] = canonical[i]
    dtype = _conv_result_dtype(name, lhs, rhs, preferred_element_type)
    return [ShapedArray(tuple(shape), dtype, lhs.weak_type and rhs.weak_type)]


def _dilate(x, dilation, axes):
    if all(d == 1 for d in dilation):
        return x
    shape = list(x.shape)
    index = [slice(None)] * x.ndim
    for ax, d in zip(axes, dilation, strict=True):
        shape[ax] = _dilate_dim(x.shape[ax], d)
        index[ax] = slice(None, None, d)
    out = np.zeros(shape, x.dtype)
    out[tuple(index)] = x
    return out


def _pad(x, padding, axes):
    """Pad with zeros; negative padding crops."""
    widths = [(0, 0)] * x.ndim
    index = [slice(None)] * x.ndim
    for ax, (lo, hi) in zip(axes, padding, strict=True):
        widths[ax] = (max(lo, 0), max(hi, 0))
        size = x.shape[ax] + widths[ax][0] + widths[ax][1]
        index[ax] = slice(-lo if lo < 0 else 0, size + hi if hi < 0 else size)
    if any(w != (0, 0) for w in widths):
        x = np.pad(x, widths)
    return x[tuple(index)]


_LETTERS = "abcdefghijklmnopqrstuvwxyz"


def _conv_general_dilated_host(
    lhs,
    rhs,
    *,
    window_strides,
    padding,
    lhs_dilation,
    rhs_dilation,
    dimension_numbers,
    feature_group_count,
    batch_group_count,
    precision,
    preferred_element_type,
):
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    out_dtype = _conv_result_dtype("lax.conv_general_dilated", lhs, rhs, preferred_element_type)
    compute = _compute_dtype(out_dtype)
    n = lhs.ndim - 2
    spatial_axes = tuple(range(2, n + 2))
    # Canonical layouts: x is (N, C, spatial...), w is (O, I, window...).
    x = np.transpose(lhs, lhs_spec).astype(compute, copy=False)
    w = np.transpose(rhs, rhs_spec).astype(compute, copy=False)
    x = _pad(_dilate(x, lhs_dilation, spatial_axes), padding, spatial_axes)
    w = _dilate(w, rhs_dilation, spatial_axes)
    window = w.shape[2:]
    batch, channels = x.shape[:2]
    out_features = w.shape[0]
    out_spatial = tuple(
        max((d - k) // s + 1, 0)
        for d, k, s in zip(x.shape[2:], window, window_strides, strict=True)
    )
    fg, bg = feature_group_count, batch_group_count
    if 0 in out_spatial or x.size == 0 or w.size == 0:
        out = np.zeros((batch // bg, out_features) + out_spatial, compute)
    else:
        # Windows: (N, C, out spatial..., window...), strided by the window strides.
        windows = np.lib.stride_tricks.sliding_window_view(x, window, axis=spatial_axes)
        windows = windows[
            (slice(None), slice(None)) + tuple(slice(None, None, s) for s in window_strides)
        ]
        windows = windows[(slice(None), slice(None)) + tuple(slice(0, o) for o in out_spatial)]
        # Groups: the lhs features split into fg groups, its batch into bg groups
        # (group-major, as XLA); the output features split into fg * bg groups.
        g = fg * bg
        windows = windows.reshape((bg, batch // bg, fg, channels // fg) + windows.shape[2:])
        w = w.reshape((bg, fg, out_features // g) + w.shape[1:])
        sp, win = _LETTERS[:n], _LETTERS[n : 2 * n]
        out = np.einsum(f"BNFC{sp}{win},BFOC{win}->NBFO{sp}", windows, w, optimize=True)
        out = out.reshape((batch // bg, out_features) + out_spatial)
    out = np.transpose(out, np.argsort(out_spec))
    return [np.ascontiguousarray(out).astype(out_dtype, copy=False)]


conv_general_dilated_p = standard_primitive(
    "conv_general_dilated", _conv_general_dilated_abstract_eval, _conv_general_dilated_host
)


# --------------------------------------------------------------------------- jvp rules


# Bilinear, as dot_general (xform/primitives/dot.py).
ad.defjvp(
    conv_general_dilated_p,
    lambda t, x, y, **params: conv_general_dilated_p.bind(t, y, **params),
    lambda t, x, y, **params: conv_general_dilated_p.bind(x, t, **params),
)


# --------------------------------------------------------------------------- transpose rules
# The math is JAX's (convolution.py).


def _conv_spec_transpose(spec):
    """Swap the first two entries: batch <-> feature, or out feature <-> in feature."""
    return (spec[1], spec[0]) + tuple(spec[2:])


def _reshape_axis_out_of(src, size1, x):
    """Split dimension ``src`` of ``x`` into (size1, rest)."""
    shape = list(get_aval(x).shape)
    shape[src : src + 1] = [size1, shape[src] // size1]
    return reshape(x, tuple(shape))


def _reshape_axis_into(src, dst, x):
    """Merge dimension ``src`` of ``x`` into dimension ``dst`` (numbered once ``src`` is
    removed), as its major part."""
    shape = get_aval(x).shape
    perm = [i for i in range(len(shape)) if i != src]
    perm.insert(dst, src)
    new_shape = [shape[i] for i in range(len(shape)) if i != src]
    new_shape[dst] *= shape[src]
    return reshape(x, tuple(new_shape), tuple(perm))


def _conv_vjp_lhs_padding(
    in_shape, window, strides, out_shape, padding, lhs_dilation, rhs_dilation
):
    pads = []
    for d, k, s, o, (lo, _), ld, rd in zip(
        in_shape, window, strides, out_shape, padding, lhs_dilation, rhs_dilation, strict=True
    ):
        in_d, k_d, out_d = _dilate_dim(d, ld), _dilate_dim(k, rd), _dilate_dim(o, s)
        before = k_d - lo - 1
        pads.append((before, in_d + k_d - 1 - out_d - before))
    return tuple(pads)


def _conv_vjp_rhs_padding(
    in_shape, window, strides, out_shape, padding, lhs_dilation, rhs_dilation
):
    pads = []
    for d, k, s, o, (lo, _), ld, rd in zip(
        in_shape, window, strides, out_shape, padding, lhs_dilation, rhs_dilation, strict=True
    ):
        in_d, k_d, out_d = _dilate_dim(d, ld), _dilate_dim(k, rd), _dilate_dim(o, s)
        pads.append((lo, (out_d - in_d) + (k_d - lo - 1)))
    return tuple(pads)


def _conv_general_dilated_transpose_lhs(
    ct,
    lhs_aval,
    rhs,
    *,
    window_strides,
    padding,
    lhs_dilation,
    rhs_dilation,
    dimension_numbers,
    feature_group_count,
    batch_group_count,
    precision,
    preferred_element_type,
):
    # The lhs cotangent is a convolution of ct with the flipped kernel, its in and out
    # features swapped; the forward strides become lhs dilation.
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    rhs_shape, ct_shape = get_aval(rhs).shape, get_aval(ct).shape
    fg, bg = feature_group_count, batch_group_count
    if fg > 1 or bg > 1:  # move the group axis of the out features into the in features
        rhs = _reshape_axis_out_of(rhs_spec[0], max(fg, bg), rhs)
        rhs = _reshape_axis_into(rhs_spec[0], rhs_spec[1], rhs)
    pads = _conv_vjp_lhs_padding(
        [lhs_aval.shape[d] for d in lhs_spec[2:]],
        [rhs_shape[d] for d in rhs_spec[2:]],
        window_strides,
        [ct_shape[d] for d in out_spec[2:]],
        padding,
        lhs_dilation,
        rhs_dilation,
    )
    kernel = _as_dtype(rev(rhs, tuple(rhs_spec[2:])), get_aval(ct).dtype)
    dnums = ConvDimensionNumbers(out_spec, _conv_spec_transpose(rhs_spec), lhs_spec)
    out = conv_general_dilated_p.bind(
        ct,
        kernel,
        window_strides=tuple(lhs_dilation),
        padding=pads,
        lhs_dilation=tuple(window_strides),
        rhs_dilation=tuple(rhs_dilation),
        dimension_numbers=dnums,
        feature_group_count=max(fg, bg),
        batch_group_count=1,
        precision=precision,
        preferred_element_type=preferred_element_type,
    )
    out = _as_dtype(out, lhs_aval.dtype)
    if bg > 1:  # the batch groups came out as feature groups: move them back
        out = _reshape_axis_out_of(lhs_spec[1], bg, out)
        out = _reshape_axis_into(lhs_spec[1], lhs_spec[0], out)
    return out


def _conv_general_dilated_transpose_rhs(
    ct,
    lhs,
    rhs_aval,
    *,
    window_strides,
    padding,
    lhs_dilation,
    rhs_dilation,
    dimension_numbers,
    feature_group_count,
    batch_group_count,
    precision,
    preferred_element_type,
):
    # The kernel cotangent convolves lhs with ct, batch and feature roles swapped: feature
    # groups become batch groups and the other way round.
    ct_shape = get_aval(ct).shape
    if 0 in ct_shape:  # avoid a degenerate convolution with a spatially empty kernel
        return ad.Zero(rhs_aval)
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    lhs_shape = get_aval(lhs).shape
    pads = _conv_vjp_rhs_padding(
        [lhs_shape[d] for d in lhs_spec[2:]],
        [rhs_aval.shape[d] for d in rhs_spec[2:]],
        window_strides,
        [ct_shape[d] for d in out_spec[2:]],
        padding,
        lhs_dilation,
        rhs_dilation,
    )
    dnums = ConvDimensionNumbers(
        _conv_spec_transpose(lhs_spec),
        _conv_spec_transpose(out_spec),
        _conv_spec_transpose(rhs_spec),
    )
    out = conv_general_dilated_p.bind(
        _as_dtype(lhs, get_aval(ct).dtype),
        ct,
        window_strides=tuple(rhs_dilation),
        padding=pads,
        lhs_dilation=tuple(lhs_dilation),
        rhs_dilation=tuple(window_strides),
        dimension_numbers=dnums,
        feature_group_count=batch_group_count,
        batch_group_count=feature_group_count,
        precision=precision,
        preferred_element_type=preferred_element_type,
    )
    return _as_dtype(out, rhs_aval.dtype)


_bilinear_transpose(
    conv_general_dilated_p, _conv_general_dilated_transpose_lhs, _conv_general_dilated_transpose_rhs
)


# --------------------------------------------------------------------------- batching rules


def _fold_batch_into(x, bdim, dim, groups=1):
    """Fold ``x``'s batch dimension ``bdim`` into its dimension ``dim`` (numbered without the
    batch dimension). That dimension is ``groups`` groups, group-major, as convolutions
    split features and batches: the batch goes inside each group, (groups, B * rest)."""
    if groups == 1:
        return _reshape_axis_into(bdim, dim, x)
    at = dim + (bdim <= dim)  # where ``dim`` is in x
    x = _reshape_axis_out_of(at, groups, x)  # (groups, rest) at at, at + 1
    x = _reshape_axis_into(bdim + (bdim > at), dim + 1, x)  # (groups, B * rest) at dim
    return _reshape_axis_into(dim, dim, x)


def _unfold_batch(x, dim, size, groups=1):
    """The inverse: ``x``'s dimension ``dim``, (groups, B * rest), as a batch dimension at
    ``dim`` followed by (groups * rest)."""
    if groups == 1:
        return _reshape_axis_out_of(dim, size, x)
    x = _reshape_axis_out_of(dim, groups, x)
    x = _reshape_axis_out_of(dim + 1, size, x)  # (groups, B, rest) at dim
    return _reshape_axis_into(dim, dim + 1, x)


def _conv_general_dilated_batch(
    axis, args, dims, *, dimension_numbers, feature_group_count, batch_group_count, **params
):
    # One convolution: a mapped lhs joins the convolution's batch, a mapped kernel its output
    # features; both mapped, each example is a group of its own (the lhs features, or with
    # batch groups the lhs batch, split into B more groups, each with its own kernel).
    (lhs, rhs), (ld, rd) = args, dims
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    fg, bg = feature_group_count, batch_group_count
    size = axis.size
    if ld is not not_mapped and rd is not not_mapped:
        if bg > 1:
            lhs, bg = _fold_batch_into(lhs, ld, lhs_spec[0]), bg * size
        else:
            lhs, fg = _fold_batch_into(lhs, ld, lhs_spec[1]), fg * size
        rhs = _fold_batch_into(rhs, rd, rhs_spec[0])
        out_dim, groups = out_spec[1], 1
    elif ld is not not_mapped:
        lhs = _fold_batch_into(lhs, ld, lhs_spec[0], bg)
        out_dim, groups = out_spec[0], 1  # the output batch has no groups
    else:
        groups = fg * bg  # one of them is 1
        rhs = _fold_batch_into(rhs, rd, rhs_spec[0], groups)
        out_dim = out_spec[1]
    out = conv_general_dilated_p.bind(
        lhs,
        rhs,
        dimension_numbers=dimension_numbers,
        feature_group_count=fg,
        batch_group_count=bg,
        **params,
    )
    return [_unfold_batch(out, out_dim, size, groups)], [out_dim]


batching.batch_rules[conv_general_dilated_p] = _conv_general_dilated_batch

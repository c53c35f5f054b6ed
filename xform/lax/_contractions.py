"""``lax``'s compositions of ``dot_general`` and ``conv_general_dilated``.

JAX's wrappers around the two primitives: transposed convolutions, patch extraction,
unshared (local) convolutions, batched matmuls, ragged and scaled dots. Each is a
composition of existing primitives, so its derivatives and batching come from theirs.
"""

import dataclasses
from collections.abc import Sequence

import numpy as np

from xform import dtypes
from xform.core import get_aval
from xform.interpret import staging
from xform.primitives.comparisons import eq, le, lt, select
from xform.primitives.convolution import (
    ConvDimensionNumbers,
    _dilate_dim,
    _int_tuple,
    conv_dimension_numbers,
    conv_general_dilated,
    conv_general_permutations,
    padtype_to_pads,
)
from xform.primitives.dot import (
    DotAlgorithm,
    DotAlgorithmPreset,
    DotDimensionNumbers,
    Precision,
    _preferred_dtype,
    canonicalize_precision,
    dot_general,
    dot_general_p,
)
from xform.primitives.elementwise import bitwise_and, convert_element_type, mul, sub
from xform.primitives.reductions import cumsum
from xform.primitives.structural import (
    broadcast_in_dim,
    broadcasted_iota,
    full_like,
    reshape,
    rev,
)
from xform.primitives.structural import transpose as transpose_dims

__all__ = [
    "ConvGeneralDilatedDimensionNumbers",
    "conv_shape_tuple",
    "conv_general_shape_tuple",
    "conv_transpose_shape_tuple",
    "conv_transpose",
    "conv_general_dilated_patches",
    "conv_general_dilated_local",
    "batch_matmul",
    "RaggedDotDimensionNumbers",
    "ragged_dot_general",
    "ragged_dot",
    "scaled_dot",
]


# Where the spec strings are, as JAX's type alias: three strings, a ConvDimensionNumbers or
# None.
ConvGeneralDilatedDimensionNumbers = tuple[str, str, str] | ConvDimensionNumbers | None


def conv_shape_tuple(lhs_shape, rhs_shape, strides, pads, batch_group_count=1):
    """The output shape of a convolution of operands in the canonical layout
    (``NC...``, ``OI...``); ``pads`` is a padding string or ``(low, high)`` pairs."""
    if isinstance(pads, str):
        pads = padtype_to_pads(lhs_shape[2:], rhs_shape[2:], strides, pads)
    if len(pads) != len(lhs_shape) - 2:
        raise TypeError(
            f"Wrong number of explicit pads for convolution: expected "
            f"{len(lhs_shape) - 2}, got {len(pads)}."
        )
    padded = [d + lo + hi for d, (lo, hi) in zip(lhs_shape[2:], pads, strict=True)]
    if any(p < 0 for p in padded):
        raise ValueError(
            "Negative padding is larger than the size of the corresponding "
            f"dimension: got padding={pads} for lhs_shape[2:]={lhs_shape[2:]}"
        )
    space = tuple(
        max((p - k) // s + 1, 0) for p, k, s in zip(padded, rhs_shape[2:], strides, strict=True)
    )
    batch = lhs_shape[0] // batch_group_count if batch_group_count > 1 else lhs_shape[0]
    return (batch, rhs_shape[0]) + space


def _take(shape, perm):
    return tuple(int(shape[i]) for i in perm)


def _untake(shape, perm):
    return tuple(shape[i] for i in np.argsort(perm))


def conv_general_shape_tuple(lhs_shape, rhs_shape, window_strides, padding, dimension_numbers):
    """The output shape of ``conv_general_dilated`` for spec strings ``dimension_numbers``."""
    lhs_perm, rhs_perm, out_perm = conv_general_permutations(dimension_numbers)
    out = conv_shape_tuple(
        _take(lhs_shape, lhs_perm), _take(rhs_shape, rhs_perm), window_strides, padding
    )
    return _untake(out, out_perm)


def _conv_transpose_padding(k, s, padding):
    """The (low, high) padding of one dimension of a transposed convolution whose forward
    convolution had kernel size ``k``, stride ``s`` and ``padding``."""
    if padding == "SAME":
        total = k + s - 2
        lo = k - 1 if s > k - 1 else -(-total // 2)
    elif padding == "VALID":
        total = k + s - 2 + max(k - s, 0)
        lo = k - 1
    elif isinstance(padding, (tuple, list)) and len(padding) == 2:
        lo, hi = (k - p - 1 for p in padding)
        total = lo + hi
    else:
        raise ValueError(f"Invalid padding mode: {padding}")
    return lo, total - lo


def conv_transpose_shape_tuple(lhs_shape, rhs_shape, window_strides, padding, dimension_numbers):
    """The output shape of ``conv_transpose`` for spec strings ``dimension_numbers``."""
    lhs_perm, rhs_perm, out_perm = conv_general_permutations(dimension_numbers)
    lhs_t, rhs_t = _take(lhs_shape, lhs_perm), _take(rhs_shape, rhs_perm)
    if isinstance(padding, str):
        padding = [
            _conv_transpose_padding(k, s, padding)
            for k, s in zip(rhs_t[2:], window_strides, strict=False)
        ]
    space = tuple(
        (i - 1) * s - k + 2 + sum(p)
        for i, k, s, p in zip(lhs_t[2:], rhs_t[2:], window_strides, padding, strict=False)
    )
    return _untake((lhs_t[0], rhs_t[0]) + space, out_perm)


_CONV_TRANSPOSE_DEFAULT_SPECS = {
    2: ("NC", "IO", "NC"),
    3: ("NHC", "HIO", "NHC"),
    4: ("NHWC", "HWIO", "NHWC"),
    5: ("NHWDC", "HWDIO", "NHWDC"),
}


def conv_transpose(
    lhs,
    rhs,
    strides,
    padding,
    rhs_dilation=None,
    dimension_numbers=None,
    transpose_kernel=False,
    precision=None,
    preferred_element_type=None,
    use_consistent_padding=False,
):
    """A transposed ("fractionally strided") convolution: ``conv_general_dilated`` with the
    ``strides`` as lhs dilation.

    Args:
      lhs: the input, rank ``n + 2``; rhs: the kernel, rank ``n + 2``.
      strides: ``n`` fractional strides.
      padding: ``'SAME'`` or ``'VALID'`` (the padding of the forward convolution this one
        transposes) or ``n`` ``(low, high)`` pairs, the transposed convolution's own padding
        (with ``use_consistent_padding=True`` pairs are the forward convolution's too).
      rhs_dilation: ``n`` kernel dilation factors.
      dimension_numbers: as ``conv_general_dilated``; ``None`` is TensorFlow's layout
        (``NHWC``, ``HWIO``, ``NHWC`` and its 1-D/3-D forms).
      transpose_kernel: flip the kernel's spatial dimensions and swap its in and out
        features, which makes this the gradient of the forward convolution (Keras's
        Conv2DTranspose).

    Example: ``conv_transpose(x, w, (2, 2), 'SAME')`` doubles the spatial size of ``x``.
    """
    name = "lax.conv_transpose"
    lhs_shape, rhs_shape = get_aval(lhs).shape, get_aval(rhs).shape
    ndim = len(lhs_shape)
    if ndim != len(rhs_shape) or ndim < 2:
        raise TypeError(
            f"{name}: lhs and rhs must have the same rank, at least 2, got shapes "
            f"{lhs_shape} and {rhs_shape}"
        )
    if dimension_numbers is None:
        if ndim not in _CONV_TRANSPOSE_DEFAULT_SPECS:
            raise ValueError("No 4+ dimensional dimension_number defaults.")
        dimension_numbers = _CONV_TRANSPOSE_DEFAULT_SPECS[ndim]
    dn = conv_dimension_numbers(lhs_shape, rhs_shape, dimension_numbers)
    n = ndim - 2
    strides = _int_tuple(strides, n, "strides", name)
    rhs_dilation = (
        (1,) * n if rhs_dilation is None else _int_tuple(rhs_dilation, n, "rhs_dilation", name)
    )
    if use_consistent_padding or padding in ("SAME", "VALID"):
        kernel = [
            _dilate_dim(rhs_shape[d], r) for d, r in zip(dn.rhs_spec[2:], rhs_dilation, strict=True)
        ]
        per_dim = [padding] * n if isinstance(padding, str) else list(padding)
        pads = tuple(
            _conv_transpose_padding(k, s, p)
            for k, s, p in zip(kernel, strides, per_dim, strict=True)
        )
    else:
        pads = padding
    if transpose_kernel:
        rhs = rev(rhs, tuple(dn.rhs_spec[2:]))
        perm = list(range(ndim))
        perm[dn.rhs_spec[0]], perm[dn.rhs_spec[1]] = dn.rhs_spec[1], dn.rhs_spec[0]
        rhs = transpose_dims(rhs, tuple(perm))
    return conv_general_dilated(
        lhs,
        rhs,
        (1,) * n,
        pads,
        strides,
        rhs_dilation,
        dn,
        precision=precision,
        preferred_element_type=preferred_element_type,
    )


def _moveaxis(x, src, dst):
    """Move dimensions ``src`` of ``x`` to positions ``dst`` (the others keep their order)."""
    ndim = get_aval(x).ndim
    src = [s % ndim for s in src]
    dst = [d % ndim for d in dst]
    rest = [i for i in range(ndim) if i not in src]
    perm = [None] * ndim
    for s, d in sorted(zip(src, dst, strict=True), key=lambda p: p[1]):
        perm[d] = s
    it = iter(rest)
    perm = tuple(next(it) if p is None else p for p in perm)
    return x if perm == tuple(range(ndim)) else transpose_dims(x, perm)


def conv_general_dilated_patches(
    lhs,
    filter_shape,
    window_strides,
    padding,
    lhs_dilation=None,
    rhs_dilation=None,
    dimension_numbers=None,
    precision=None,
    preferred_element_type=None,
):
    """The patches ``conv_general_dilated`` would multiply with a kernel of spatial shape
    ``filter_shape``, flattened into the output feature dimension (features major, then the
    window positions in the kernel spec's order): a convolution with a one-hot kernel, one
    feature group per input feature.

    ``precision`` is one ``Precision`` (the lhs's), as JAX's.
    """
    filter_shape = tuple(int(k) for k in filter_shape)
    lhs_aval = get_aval(lhs)
    dn = conv_dimension_numbers(lhs_aval.shape, (1, 1) + filter_shape, dimension_numbers)
    size = int(np.prod(filter_shape, dtype=np.int64))
    channels = lhs_aval.shape[dn.lhs_spec[1]]
    eye = convert_element_type(
        eq(
            broadcasted_iota(dtypes.int32, (size, size), 0),
            broadcasted_iota(dtypes.int32, (size, size), 1),
        ),
        lhs_aval.dtype,
    )
    rhs = broadcast_in_dim(eye, (channels, size, size), (1, 2))
    rhs = reshape(rhs, (channels * size, 1) + filter_shape)
    rhs = _moveaxis(rhs, (0, 1), (dn.rhs_spec[0], dn.rhs_spec[1]))
    return conv_general_dilated(
        lhs,
        rhs,
        window_strides,
        padding,
        lhs_dilation,
        rhs_dilation,
        dn,
        feature_group_count=channels,
        precision=None if precision is None else (precision, Precision.DEFAULT),
        preferred_element_type=preferred_element_type,
    )


def conv_general_dilated_local(
    lhs,
    rhs,
    window_strides,
    padding,
    filter_shape,
    lhs_dilation=None,
    rhs_dilation=None,
    dimension_numbers=None,
    precision=None,
):
    """An unshared ("locally connected") convolution: a separate kernel at each output
    position. ``rhs``'s spatial dimensions are the output positions and its ``I`` dimension
    holds the input features times the receptive window (``filter_shape``), flattened as
    ``conv_general_dilated_patches`` flattens them."""
    name = "lax.conv_general_dilated_local"
    c_precision = canonicalize_precision(precision, name)
    if isinstance(c_precision, (DotAlgorithm, DotAlgorithmPreset)):  # a pair is needed
        raise ValueError(f"Unsupported precision for conv_general_dilated_local: {precision}")
    lhs_precision = None if c_precision is None else c_precision[0]
    patches = conv_general_dilated_patches(
        lhs,
        filter_shape,
        window_strides,
        padding,
        lhs_dilation,
        rhs_dilation,
        dimension_numbers,
        precision=lhs_precision,
    )
    _, rhs_spec, out_spec = conv_dimension_numbers(
        get_aval(lhs).shape, (1, 1) + tuple(filter_shape), dimension_numbers
    )
    lhs_b = list(out_spec[2:])
    rhs_b = list(rhs_spec[2:])
    rhs_b = [rhs_b[i] for i in sorted(range(len(rhs_b)), key=lambda k: lhs_b[k])]
    lhs_b = sorted(lhs_b)
    dn = (((out_spec[1],), (rhs_spec[1],)), (tuple(lhs_b), tuple(rhs_b)))
    out = dot_general(patches, rhs, dn, precision=precision)
    return _moveaxis(out, (-2, -1), (out_spec[0], out_spec[1]))


def batch_matmul(lhs, rhs, precision=None):
    """Batched matrix product: ``lhs`` ``(..., m, k)`` times ``rhs`` ``(..., k, n)``, the
    leading dimensions batch dimensions of equal sizes."""
    ln, rn = get_aval(lhs).ndim, get_aval(rhs).ndim
    if min(ln, rn) < 2:
        raise ValueError(f"Arguments to batch_matmul must be at least 2D, got {ln}, {rn}")
    if ln != rn:
        raise ValueError(f"Arguments to batch_matmul must have same ndim, got {ln}, {rn}")
    batch = tuple(range(ln - 2))
    return dot_general(lhs, rhs, (((ln - 1,), (rn - 2,)), (batch, batch)), precision=precision)


@dataclasses.dataclass(frozen=True)
class RaggedDotDimensionNumbers:
    """The dimensions of a ragged dot: ``dot_dimension_numbers`` as ``dot_general``'s, the
    lhs's one ragged dimension (``lhs_ragged_dimensions``) and the rhs's group dimension
    (``rhs_group_dimensions``: one when the ragged dimension is a free one, else none)."""

    dot_dimension_numbers: DotDimensionNumbers
    lhs_ragged_dimensions: Sequence[int]
    rhs_group_dimensions: Sequence[int]

    def __init__(self, dot_dimension_numbers, lhs_ragged_dimensions, rhs_group_dimensions):
        dims = tuple(
            tuple(tuple(int(d) for d in side) for side in pair) for pair in dot_dimension_numbers
        )
        object.__setattr__(self, "dot_dimension_numbers", dims)
        object.__setattr__(
            self, "lhs_ragged_dimensions", tuple(int(d) for d in lhs_ragged_dimensions)
        )
        object.__setattr__(
            self, "rhs_group_dimensions", tuple(int(d) for d in rhs_group_dimensions)
        )


_BASIC_RAGGED_DOT_DIMENSION_NUMBERS = RaggedDotDimensionNumbers(
    dot_dimension_numbers=(((1,), (1,)), ((), ())),
    lhs_ragged_dimensions=(0,),
    rhs_group_dimensions=(0,),
)


def _ragged_groups_mask(x, dim, group_sizes, prefix):
    """``x`` spread over the groups: ``[g, *x.shape]``, group ``i`` keeping only its rows of
    ``x``'s ragged dimension ``dim`` (rows ``[sum(gs[:i]), sum(gs[:i + 1]))``). The leading
    dimensions of a rank > 1 ``group_sizes`` are ``x``'s dimensions ``prefix``."""
    shape = get_aval(x).shape
    gs_aval = get_aval(group_sizes)
    out_shape = (gs_aval.shape[-1],) + tuple(shape)
    ends = cumsum(group_sizes, axis=gs_aval.ndim - 1)
    starts = sub(ends, group_sizes)
    gs_dims = tuple(1 + d for d in prefix[len(prefix) - (gs_aval.ndim - 1) :]) + (0,)
    ends = broadcast_in_dim(ends, out_shape, gs_dims)
    starts = broadcast_in_dim(starts, out_shape, gs_dims)
    rows = broadcasted_iota(gs_aval.dtype, out_shape, dim + 1)
    mask = bitwise_and(le(starts, rows), lt(rows, ends))
    spread = broadcast_in_dim(x, out_shape, tuple(range(1, len(out_shape))))
    return select(mask, spread, full_like(spread, 0))


def _ragged_prefix(kind, rank, ragged, batch, contract):
    """The operand dimensions that a rank > 1 ``group_sizes``'s leading dimensions match."""
    free = [d for d in range(rank) if d not in batch and d not in contract]
    if kind == "free":
        return list(batch) + free[: free.index(ragged)]
    if kind == "contracting":
        return list(batch) + list(contract[: contract.index(ragged)])
    return list(batch[: batch.index(ragged)])


def ragged_dot_general(
    lhs,
    rhs,
    group_sizes,
    ragged_dot_dimension_numbers,
    precision=None,
    preferred_element_type=None,
    group_offset=None,
):
    """A dot of ``lhs``, whose one ragged dimension is split into ``len(group_sizes)``
    consecutive groups, with ``rhs``. Three modes, by the kind of the ragged dimension:

    - a free dimension ``m``: ``rhs`` has a group dimension; each group of rows of ``lhs``
      multiplies its own slice of ``rhs``; ``[m, k], [g, k, n] -> [m, n]``.
    - a contracting dimension ``k``: each group contracts separately;
      ``[m, k], [k, n] -> [g, m, n]``.
    - a batch dimension: a plain ``dot_general``.

    Rows past ``sum(group_sizes)`` give zeros, as JAX's. ``group_offset`` is not supported
    (``NotImplementedError``, as JAX's CPU backend).
    """
    name = "lax.ragged_dot_general"
    if group_offset is not None:
        raise NotImplementedError("Unimplemented group_offset support.")
    dnums = ragged_dot_dimension_numbers
    if not isinstance(dnums, RaggedDotDimensionNumbers):
        raise TypeError(
            f"{name}: ragged_dot_dimension_numbers must be a "
            f"RaggedDotDimensionNumbers, got {dnums!r}"
        )
    lhs_aval, rhs_aval, gs_aval = get_aval(lhs), get_aval(rhs), get_aval(group_sizes)
    if not dtypes.is_int(gs_aval.dtype):
        raise TypeError(
            f"{name} requires that group_sizes.dtype is subtype of np.integer, got {gs_aval.dtype}."
        )
    if len(dnums.lhs_ragged_dimensions) != 1:
        raise TypeError(
            f"{name} expects exactly one lhs ragged dimension, got {dnums.lhs_ragged_dimensions}."
        )
    if gs_aval.ndim == 0:
        raise TypeError(f"{name}: expected rank of group_sizes to be >=1.")
    ragged = dnums.lhs_ragged_dimensions[0]
    if not 0 <= ragged < lhs_aval.ndim:
        raise TypeError(
            f"{name} requires lhs ragged dimension numbers to be nonnegative and "
            f"less than the number of axes of the lhs value, got {ragged} for "
            f"lhs of rank {lhs_aval.ndim}."
        )
    (lc, rc), (lb, rb) = dnums.dot_dimension_numbers
    kind = "contracting" if ragged in lc else "batch" if ragged in lb else "free"
    prefix = _ragged_prefix(kind, lhs_aval.ndim, ragged, lb, lc)
    if gs_aval.ndim != 1:
        expected = tuple(lhs_aval.shape[d] for d in prefix) + (gs_aval.shape[-1],)
        if gs_aval.shape != expected:
            raise TypeError(
                f"{name}: expected group_sizes to have shape {expected}, got {gs_aval.shape}."
            )
    groups = gs_aval.shape[-1]
    group_dims = dnums.rhs_group_dimensions
    if kind != "free" and group_dims:
        raise TypeError(
            f"{name} requires zero group dimensions in the rhs when lhs ragged "
            "dimension is contracting or batch."
        )
    if kind == "free":
        if len(group_dims) != 1:
            raise TypeError(
                f"{name} requires exactly one rhs group dimension when lhs ragged "
                "dimension is noncontracting."
            )
        g = group_dims[0]
        if not 0 <= g < rhs_aval.ndim:
            raise TypeError(
                f"{name} requires rhs group dimension numbers to be nonnegative "
                "and less than the number of axes of the rhs value, got "
                f"{g} for rhs of rank {rhs_aval.ndim}."
            )
        if g in rb or g in rc:
            raise TypeError(
                f"{name} requires rhs group dimension numbers to be distinct "
                "from contracting and batch dimensions."
            )
        if rhs_aval.shape[g] != groups:
            raise TypeError(
                f"{name}: expected rhs group dimension size to be {groups}, got "
                f"{rhs_aval.shape[g]}."
            )
    up = lambda dims: tuple(d + 1 for d in dims)  # noqa: E731
    if kind == "batch":
        return dot_general(lhs, rhs, dnums.dot_dimension_numbers, precision, preferred_element_type)
    spread_lhs = _ragged_groups_mask(lhs, ragged, group_sizes, prefix)
    if kind == "free":  # the group dimension contracts with the rhs's group dimension
        dims = ((up(lc) + (0,), tuple(rc) + (group_dims[0],)), (up(lb), tuple(rb)))
        return dot_general(spread_lhs, rhs, dims, precision, preferred_element_type)
    rhs_ragged = rc[lc.index(ragged)]
    rhs_prefix = _ragged_prefix(kind, rhs_aval.ndim, rhs_ragged, rb, rc)
    spread_rhs = _ragged_groups_mask(rhs, rhs_ragged, group_sizes, rhs_prefix)
    dims = ((up(lc), up(rc)), ((0,) + up(lb), (0,) + up(rb)))
    return dot_general(spread_lhs, spread_rhs, dims, precision, preferred_element_type)


def ragged_dot(
    lhs, rhs, group_sizes, precision=None, preferred_element_type=None, group_offset=None
):
    """Ragged matrix product: ``lhs`` ``(m, k)``, its rows in ``g`` consecutive groups of
    sizes ``group_sizes`` ``(g,)``, each multiplied by its own ``rhs[i]`` ``(k, n)``; rows
    past ``sum(group_sizes)`` give zeros. Returns ``(m, n)``."""
    return ragged_dot_general(
        lhs,
        rhs,
        group_sizes,
        _BASIC_RAGGED_DOT_DIMENSION_NUMBERS,
        precision,
        preferred_element_type,
        group_offset,
    )


def _scale_operand(name, side, x, scale, contract, out_type):
    """``x * scale`` of their bfloat16 roundings, each scale entry repeated over its block of
    the contracting dimensions (as JAX's CPU decomposition)."""
    x_shape, s_shape = get_aval(x).shape, get_aval(scale).shape
    for i, size in enumerate(x_shape):
        if i in contract:
            if s_shape[i] == 0 or size % s_shape[i]:
                raise TypeError(
                    f"{name}: {side} contracting dim {i} of size {size} must be "
                    f"divisible by its scale's dim size {s_shape[i]}."
                )
            if size // s_shape[i] < 2:
                raise TypeError(
                    f"{name}: the ratio of {side} contracting dim {i} to its "
                    f"scale's dim size ({size // s_shape[i]}) must be at least 2."
                )
        elif s_shape[i] != size:
            raise TypeError(
                f"{name}: {side} dim {i} of size {size} does not match scale dim size {s_shape[i]}."
            )
    for i in sorted(contract):
        shape = get_aval(scale).shape
        reps = x_shape[i] // shape[i]
        if reps != 1:
            wide = shape[: i + 1] + (reps,) + shape[i + 1 :]
            dims = tuple(d if d <= i else d + 1 for d in range(len(shape)))
            scale = reshape(
                broadcast_in_dim(scale, wide, dims), shape[:i] + (shape[i] * reps,) + shape[i + 1 :]
            )
    x, scale = (convert_element_type(v, dtypes.bfloat16) for v in (x, scale))
    if out_type == dtypes.bfloat16:
        return mul(x, scale)
    # The product of two bfloat16 values is exact in float32: XLA's CPU backend leaves it
    # unrounded when the dot accumulates into a wider type.
    return mul(convert_element_type(x, dtypes.float32), convert_element_type(scale, dtypes.float32))


def scaled_dot(
    lhs, rhs, *, lhs_scale=None, rhs_scale=None, dimension_numbers=None, preferred_element_type=None
):
    """``dot_general(lhs * lhs_scale, rhs * rhs_scale)``, each scale repeated over blocks of
    the contracting dimensions (block-scaled, e.g. microscaling formats). The products are
    formed in bfloat16 and accumulated in ``preferred_element_type`` (default bfloat16), as
    JAX's CPU decomposition. Scales default to ones.

    ``dimension_numbers`` defaults to a (batched) matmul: the last dimension of ``lhs``
    with the second-to-last of ``rhs``, the leading ones batch dimensions.
    """
    name = "lax.scaled_dot"
    lhs_aval, rhs_aval = get_aval(lhs), get_aval(rhs)
    if dimension_numbers is None:
        n = lhs_aval.ndim
        if n < 2:
            raise TypeError("scaled_dot does not support 0-rank and 1-rank operands.")
        dimension_numbers = (((n - 1,), (n - 2,)), (tuple(range(n - 2)), tuple(range(n - 2))))
    (lc, rc), (lb, rb) = dimension_numbers
    ranks = {lhs_aval.ndim, rhs_aval.ndim} | {
        get_aval(s).ndim for s in (lhs_scale, rhs_scale) if s is not None
    }
    if len(ranks) != 1:
        raise TypeError(
            f"{name}: all input tensors must have the same rank, got lhs rank "
            f"{lhs_aval.ndim} and rhs rank {rhs_aval.ndim} (and their scales')."
        )
    if len(lb) != len(rb) or len(lc) != len(rc):
        raise TypeError(
            f"{name}: LHS and RHS must have the same numbers of batch and "
            f"contracting dimensions, got {dimension_numbers}."
        )
    for i, j in zip(lc, rc, strict=True):
        if lhs_aval.shape[i] != rhs_aval.shape[j]:
            raise TypeError(
                f"{name}: LHS contracting dim {i} of size {lhs_aval.shape[i]} "
                f"does not match RHS contracting dim {j} of size "
                f"{rhs_aval.shape[j]}."
            )
    out_type = (
        dtypes.bfloat16_dtype
        if preferred_element_type is None
        else _preferred_dtype(preferred_element_type)
    )
    scaled = [
        convert_element_type(x, dtypes.bfloat16)
        if scale is None
        else _scale_operand(name, side, x, scale, contract, out_type)
        for side, x, scale, contract in (("LHS", lhs, lhs_scale, lc), ("RHS", rhs, rhs_scale, rc))
    ]
    return dot_general(*scaled, dimension_numbers, preferred_element_type=out_type)


staging.memoize_abstract_eval(dot_general_p)

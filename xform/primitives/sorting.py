"""Sorting primitives: multi-operand ``sort``, ``top_k`` and ``approx_top_k``.

``sort`` orders floats by a total order in which -0.0 equals 0.0 and every NaN equals every
other NaN and comes after +inf (JAX's order). ``top_k`` uses XLA's order instead: the IEEE
total order of the bits, so -0.0 < 0.0, a positive NaN is the largest value and a negative
NaN the smallest. Host implementations sort integer keys that encode these orders.

``approx_top_k`` (``approx_max_k``, ``approx_min_k``) is XLA's ``ApproxTopK``, approximate on
TPUs only: elsewhere XLA runs its exact fallback, and its recall knobs only change the output
size when ``aggregate_to_topk=False``. It has no host implementation: eagerly, the one
equation is compiled, so values and indices are XLA's, as JAX's are.
"""

import math
import operator

import numpy as np

from xform import dtypes
from xform.core import ShapedArray, get_aval
from xform.errors import ConcretizationTypeError
from xform.interpret import ad, batching, transpose
from xform.primitives.base import (
    ANY,
    BOOL,
    FLOAT,
    INT,
    canonicalize_axis,
    check_dtype,
    standard_primitive,
)
from xform.primitives.gather_scatter import GatherDimensionNumbers, gather
from xform.primitives.structural import broadcasted_iota, expand_dims

__all__ = ["sort", "sort_key_val", "top_k", "approx_max_k", "approx_min_k"]


# --------------------------------------------------------------------------- order keys

_BITS = {1: np.int8, 2: np.int16, 4: np.int32, 8: np.int64}


def _float_order_key(x):
    """Signed integers ordered as the floats ``x`` in the IEEE total order."""
    bits = np.ascontiguousarray(x).view(_BITS[x.dtype.itemsize])
    # Negative floats: flip the magnitude bits so larger magnitudes sort lower.
    return bits ^ ((bits >> (8 * x.dtype.itemsize - 1)) & np.iinfo(bits.dtype).max)


# XLA's CPU compares float32, float64 and bfloat16 with subnormals read as zero (it computes
# float16 and narrower floats in float32, where their subnormals are normal numbers).
_TINY = {
    np.dtype(d): np.finfo(np.float32 if d == "bfloat16" else d).tiny
    for d in ("float32", "float64", "bfloat16")
}


def _canonicalize_float(x):
    """-0.0, subnormals (where XLA reads them as zero) -> 0.0 and every NaN -> the positive
    quiet NaN, so they compare equal."""
    wide = x.astype(np.float32) if x.dtype.itemsize < 4 else x  # exact; ml_dtypes-safe
    zero, nan = np.zeros((), x.dtype), np.array(np.nan, x.dtype)
    tiny = _TINY.get(x.dtype)
    is_zero = wide == 0 if tiny is None else np.abs(wide) < tiny
    return np.where(np.isnan(wide), nan, np.where(is_zero, zero, x))


def _sort_keys(x):
    """The integer keys, most significant first, that ``sort`` orders ``x`` by."""
    if dtypes.is_complex(x.dtype):  # lexicographic: real part, then imaginary part
        return [
            _float_order_key(_canonicalize_float(x.real)),
            _float_order_key(_canonicalize_float(x.imag)),
        ]
    if dtypes.is_float(x.dtype):
        return [_float_order_key(_canonicalize_float(x))]
    if x.dtype == dtypes.bool_:
        return [x.astype(np.uint8)]
    return [x]


# --------------------------------------------------------------------------- sort


def _sort_abstract_eval(*avals, dimension, is_stable, num_keys):
    if not avals:
        raise TypeError("lax.sort needs at least one operand")
    shapes = [a.shape for a in avals]
    if any(s != shapes[0] for s in shapes):
        raise TypeError(
            f"lax.sort: operands must have equal shapes, got {', '.join(map(str, shapes))}"
        )
    for a in avals:
        check_dtype("lax.sort", a.dtype, ANY)
    ndim = len(shapes[0])
    if not 0 <= dimension < ndim:
        raise ValueError(
            f"lax.sort: dimension {dimension} is out of bounds for operands of "
            f"shape {shapes[0]} (rank {ndim}); a 0-d array cannot be sorted"
        )
    if not 1 <= num_keys <= len(avals):
        raise ValueError(
            f"lax.sort: num_keys={num_keys} must be between 1 and the number of "
            f"operands, {len(avals)}"
        )
    return [ShapedArray(a.shape, a.dtype, a.weak_type) for a in avals]


def _sort_host(*operands, dimension, is_stable, num_keys):
    keys = [k for x in operands[:num_keys] for k in _sort_keys(x)]
    # np.lexsort is stable and takes its primary key last.
    perm = np.lexsort(keys[::-1], axis=dimension)
    return [np.take_along_axis(x, perm, axis=dimension) for x in operands]


sort_p = standard_primitive("sort", _sort_abstract_eval, _sort_host, multiple_results=True)


def sort(operand, dimension=-1, is_stable=True, num_keys=1):
    """Sort along ``dimension``; ``operand`` is an array or a sequence of same-shaped arrays.

    With a sequence, all arrays are permuted by the lexicographic order of the first
    ``num_keys`` of them and a tuple is returned. NaNs sort last; -0.0 equals 0.0.

    Example:
      >>> keys, vals = sort((np.array([3, 1, 2]), np.array([0, 1, 2])), num_keys=1)
      >>> # keys = [1, 2, 3], vals = [1, 2, 0]
    """
    if isinstance(operand, (list, tuple)):
        operands = tuple(operand)
        if not operands:
            raise TypeError("lax.sort needs at least one operand, got an empty sequence")
    else:
        operands = (operand,)
    dimension = canonicalize_axis(dimension, get_aval(operands[0]).ndim, "lax.sort")
    outs = sort_p.bind(
        *operands, dimension=dimension, is_stable=bool(is_stable), num_keys=int(num_keys)
    )
    return tuple(outs) if isinstance(operand, (list, tuple)) else outs[0]


def sort_key_val(keys, values, dimension=-1, is_stable=True):
    """Sort ``keys`` along ``dimension`` and permute ``values`` alike; returns both."""
    return sort((keys, values), dimension=dimension, is_stable=is_stable, num_keys=1)


# --------------------------------------------------------------------------- top_k

_TOP_K_KINDS = (FLOAT, *INT, BOOL)


def _top_k_abstract_eval(x, *, k, axis):
    check_dtype("lax.top_k", x.dtype, _TOP_K_KINDS)
    if not 0 <= axis < x.ndim:
        raise ValueError(
            f"lax.top_k: axis {axis} is out of bounds for an operand of shape "
            f"{x.shape} (rank {x.ndim}); the operand must have rank >= 1"
        )
    if not 0 <= k <= x.shape[axis]:
        raise ValueError(
            f"lax.top_k: k={k} must be non-negative and at most the size "
            f"{x.shape[axis]} of axis {axis} of the operand of shape {x.shape}"
        )
    size = x.shape[axis]
    if isinstance(size, int) and size > 2**31:  # (a symbolic size is not checked, as JAX)
        raise ValueError(
            "top_k returns int32 indices, which will overflow for array dimensions larger "
            f"than the maximum int32 (2147483647). Got operand.shape={x.shape}"
        )
    shape = x.shape[:axis] + (k,) + x.shape[axis + 1 :]
    # The indices inherit the operand's weak type, as in JAX.
    return [ShapedArray(shape, x.dtype, x.weak_type), ShapedArray(shape, dtypes.int32, x.weak_type)]


def _top_k_host(x, *, k, axis):
    if dtypes.is_float(x.dtype):
        key = _float_order_key(x)
    else:
        key = x.astype(np.uint8) if x.dtype == dtypes.bool_ else x
    # ~key reverses the order without overflow; a stable sort keeps ties in index order.
    perm = np.argsort(~key, axis=axis, kind="stable")
    idx = np.take(perm, np.arange(k), axis=axis)
    return [np.take_along_axis(x, idx, axis=axis), idx.astype(np.int32)]


top_k_p = standard_primitive("top_k", _top_k_abstract_eval, _top_k_host, multiple_results=True)


def top_k(operand, k, *, axis=-1):
    """The ``k`` largest entries along ``axis`` (default: the last), largest first, and their
    int32 indices; ties go to the lower index.

    Example:
      >>> values, indices = top_k(np.array([1., 3., 2.]), 2)  # [3., 2.], [1, 2]
    """
    axis = canonicalize_axis(axis, get_aval(operand).ndim, "lax.top_k")
    try:
        k = operator.index(k)  # an int, or a concrete integer array (a traced one raises)
    except TypeError as e:
        if isinstance(e, ConcretizationTypeError):
            raise
        raise TypeError(f"lax.top_k: k must be an integer, got {k!r}") from None
    return top_k_p.bind(operand, k=k, axis=axis)  # a list, as JAX returns


# --------------------------------------------------------------------------- approx_top_k


def approx_max_k(
    operand,
    k,
    reduction_dimension=-1,
    recall_target=0.95,
    reduction_input_size_override=-1,
    aggregate_to_topk=True,
):
    """The (approximately, on TPUs) ``k`` largest values along ``reduction_dimension`` and
    their int32 indices. Off TPU the result is exact (XLA's fallback).

    Args:
      operand: a floating-point array of rank >= 1.
      k: how many values to keep (positive, at most the reduced dimension's size).
      reduction_dimension: the dimension to reduce.
      recall_target: the recall the approximation aims for, in (0, 1].
      reduction_input_size_override: if positive, the logical size of the reduced
        dimension (for a dimension sharded elsewhere), at least its size here.
      aggregate_to_topk: keep the ``k`` best (True), or the approximate candidates, sorted.

    Returns:
      ``(values, indices)``.

    Example:
      >>> values, indices = approx_max_k(np.array([1., 3., 2.]), 2)  # [3., 2.], [1, 2]
    """
    return _approx_top_k(
        operand,
        k,
        reduction_dimension,
        recall_target,
        reduction_input_size_override,
        aggregate_to_topk,
        True,
    )


def approx_min_k(
    operand,
    k,
    reduction_dimension=-1,
    recall_target=0.95,
    reduction_input_size_override=-1,
    aggregate_to_topk=True,
):
    """The (approximately, on TPUs) ``k`` smallest values along ``reduction_dimension`` and
    their int32 indices; the arguments are ``approx_max_k``'s.

    Example:
      >>> values, indices = approx_min_k(np.array([1., 3., 2.]), 2)  # [1., 2.], [0, 2]
    """
    return _approx_top_k(
        operand,
        k,
        reduction_dimension,
        recall_target,
        reduction_input_size_override,
        aggregate_to_topk,
        False,
    )


def _approx_top_k(
    operand,
    k,
    reduction_dimension,
    recall_target,
    reduction_input_size_override,
    aggregate_to_topk,
    is_max_k,
):
    ndim = get_aval(operand).ndim
    if ndim == 0:
        raise TypeError(
            f"approx_top_k operand must have >= 1 dimension, got {get_aval(operand).shape}"
        )
    dim = canonicalize_axis(reduction_dimension, ndim, "approx_top_k")
    return approx_top_k_p.bind(
        operand,
        k=operator.index(k),
        reduction_dimension=dim,
        recall_target=float(recall_target),
        is_max_k=is_max_k,
        reduction_input_size_override=int(reduction_input_size_override),
        aggregate_to_topk=bool(aggregate_to_topk),
    )


def _log2_floor(n):
    return n.bit_length() - 1 if n else 0


def _log2_ceil(n):
    return (n - 1).bit_length() if n else 0


def approx_top_k_output_size(
    input_size, rank, k, recall_target, aggregate_to_topk, input_size_override
):
    """The size of the reduced dimension of ``approx_top_k``'s results: XLA's rule (which
    ``ApproxTopK`` checks), from the expected recall of ``k`` values spread over windows."""
    if aggregate_to_topk:
        return k
    tiling = 1024 if rank == 1 else 128  # the TPU's tile along the reduced dimension
    if input_size <= tiling:
        return input_size
    if input_size_override >= 0 and input_size > input_size_override:
        raise ValueError(
            f"approx_top_k: reduction_input_size_override "
            f"{input_size_override} should be at least the size {input_size} "
            "of the reduced dimension"
        )
    logical = input_size_override if input_size_override >= 0 else input_size
    if k == 1:
        return tiling
    recall = float(np.float32(recall_target))  # XLA takes it as a float32
    if recall == 1.0:
        return input_size
    if not 0.0 < recall < 1.0:
        raise ValueError(f"approx_top_k: recall_target should range in (0, 1], got {recall_target}")
    # With M windows, a top-k value is alone in its window with probability about
    # exp((1 - k) / M): M = (1 - k) / log(recall) windows reach the recall.
    windows = min(max(int((1.0 - k) / math.log(recall)), tiling), logical)
    reduction = _log2_floor(logical // windows)
    if reduction == 0:
        return input_size
    # Not too much reduction when the logical size is much larger than the real one.
    reduction = min(reduction, _log2_ceil(input_size // tiling))
    tiles = -(-input_size // tiling)
    return -(-tiles // (1 << reduction)) * tiling


def _approx_top_k_abstract_eval(
    x,
    *,
    k,
    reduction_dimension,
    recall_target,
    is_max_k,
    reduction_input_size_override,
    aggregate_to_topk,
):
    if k <= 0:
        raise ValueError(f"approx_top_k: k must be positive, got {k}")
    if x.ndim == 0:
        raise TypeError(f"approx_top_k operand must have >= 1 dimension, got {x.shape}")
    size = x.shape[reduction_dimension]
    if size < k:
        raise ValueError(
            f"approx_top_k: k must be smaller than the size of reduction_dim "
            f"{size}, got {k} (operand shape {x.shape})"
        )
    if not dtypes.is_float(x.dtype):
        raise ValueError(f"approx_top_k: operand must be a floating type, got {x.dtype}")
    out = approx_top_k_output_size(
        size, x.ndim, k, recall_target, aggregate_to_topk, reduction_input_size_override
    )
    shape = x.shape[:reduction_dimension] + (out,) + x.shape[reduction_dimension + 1 :]
    # The indices inherit the operand's weak type, as in JAX.
    return [ShapedArray(shape, x.dtype, x.weak_type), ShapedArray(shape, dtypes.int32, x.weak_type)]


approx_top_k_p = standard_primitive(
    "approx_top_k", _approx_top_k_abstract_eval, multiple_results=True
)


# --------------------------------------------------------------------------- jvp rules
# The rules build tangents with the indexing and structural wrappers.


def _sort_jvp(primals, tangents, *, dimension, is_stable, num_keys):
    # The nonzero tangents are sorted by the primal keys, as extra (non-key) operands, so
    # they are permuted as their primals: what JAX gets by sorting an iota with the keys and
    # gathering with it. A sort of its own, apart from the primal one, so that under
    # linearize the primal outputs stay known and only this sort is staged.
    outs = sort_p.bind(*primals, dimension=dimension, is_stable=is_stable, num_keys=num_keys)
    tangents_out = [ad.Zero(ad.tangent_aval(get_aval(o))) for o in outs]
    nonzero = [i for i, t in enumerate(tangents) if type(t) is not ad.Zero]
    if nonzero:
        sorted_tangents = sort_p.bind(
            *primals[:num_keys],
            *[tangents[i] for i in nonzero],
            dimension=dimension,
            is_stable=is_stable,
            num_keys=num_keys,
        )
        for i, t in zip(nonzero, sorted_tangents[num_keys:], strict=True):
            tangents_out[i] = t
    return outs, tangents_out


ad.jvp_rules[sort_p] = _sort_jvp


def take_along_axis(x, idx, axis):
    """``x`` at ``idx`` along ``axis`` (``idx`` has ``x``'s shape elsewhere): a gather."""
    ndim = get_aval(x).ndim
    batch = tuple(d for d in range(ndim) if d != axis)
    dn = GatherDimensionNumbers(
        offset_dims=(),
        collapsed_slice_dims=(axis,),
        start_index_map=(axis,),
        operand_batching_dims=batch,
        start_indices_batching_dims=batch,
    )
    return gather(
        x,
        expand_dims(idx, (ndim,)),
        dn,
        (1,) * ndim,
        indices_are_sorted=False,
        unique_indices=False,
        mode="promise_in_bounds",
    )


def _top_k_jvp(primals, tangents, *, k, axis):
    values, indices = top_k_p.bind(primals[0], k=k, axis=axis)
    t = take_along_axis(tangents[0], indices, axis)
    return [values, indices], [t, ad.Zero(ad.tangent_aval(get_aval(indices)))]


ad.jvp_rules[top_k_p] = _top_k_jvp


def _approx_top_k_jvp(primals, tangents, **params):
    values, indices = approx_top_k_p.bind(primals[0], **params)
    if type(tangents[0]) is ad.Zero:
        t = ad.Zero(ad.tangent_aval(get_aval(values)))
    else:
        t = take_along_axis(tangents[0], indices, params["reduction_dimension"])
    return [values, indices], [t, ad.Zero(ad.tangent_aval(get_aval(indices)))]


ad.jvp_rules[approx_top_k_p] = _approx_top_k_jvp


# --------------------------------------------------------------------------- transpose rules
# The JVP sorts the tangents as extra non-key operands: sort is linear in its non-key
# operands once the keys are known, and never in its keys.


def _sort_transpose(cts, *operands, dimension, is_stable, num_keys):
    for i, x in enumerate(operands[:num_keys]):
        if transpose.is_undefined(x):
            raise ValueError(
                f"sort is not linear in its key operand {i} (num_keys="
                f"{num_keys}), so it cannot be transposed with respect to it"
            )
    linear = [
        i
        for i, x in enumerate(operands)
        if transpose.is_undefined(x) and type(cts[i]) is not ad.Zero
    ]
    out = [ad.Zero(x.aval) if transpose.is_undefined(x) else None for x in operands]
    if not linear:
        return out
    keys = list(operands[:num_keys])
    shape = get_aval(keys[0]).shape
    index_dtype = dtypes.int32 if shape[dimension] <= np.iinfo(np.int32).max else dtypes.int64
    iota = broadcasted_iota(index_dtype, shape, dimension)
    perm = sort_p.bind(*keys, iota, dimension=dimension, is_stable=is_stable, num_keys=num_keys)[-1]
    # Output j came from input perm[j]: sorting by perm sends each cotangent back there.
    unsorted = sort_p.bind(
        perm, *[cts[i] for i in linear], dimension=dimension, is_stable=False, num_keys=1
    )
    for i, ct in zip(linear, unsorted[1:], strict=True):
        out[i] = ct
    return out


transpose.transpose_rules[sort_p] = _sort_transpose


# --------------------------------------------------------------------------- batching rules


def _sort_batch(axis_data, args, dims, *, dimension, is_stable, num_keys):
    # The operands of one sort share a shape: each gets the batch dim where the first mapped
    # operand has it (unmapped ones are broadcast there), and `dimension` shifts past it.
    d = next(d for d in dims if d is not batching.not_mapped)
    args = [
        batching.move_or_broadcast(x, xd, d, axis_data.size)
        for x, xd in zip(args, dims, strict=True)
    ]
    outs = sort_p.bind(
        *args, dimension=dimension + (dimension >= d), is_stable=is_stable, num_keys=num_keys
    )
    return outs, [d] * len(outs)


def _top_k_batch(axis_data, args, dims, *, k, axis):
    (x,), (d,) = args, dims
    ndim = get_aval(x).ndim
    if d == ndim - 1 and axis == ndim - 2:
        # top_k is lowered on the last axis (transposing any other there and back): with the
        # batch dim last, one move to the front is cheaper.
        x, d = batching.moveaxis(x, d, 0), 0
    outs = top_k_p.bind(x, k=k, axis=axis + (axis >= d))
    return outs, [d, d]


batching.batch_rules[sort_p] = _sort_batch
batching.batch_rules[top_k_p] = _top_k_batch


def _approx_top_k_batch(axis_data, args, dims, *, reduction_dimension, **params):
    (x,), (d,) = args, dims
    dim = reduction_dimension + (reduction_dimension >= d)
    outs = approx_top_k_p.bind(x, reduction_dimension=dim, **params)
    return outs, [d, d]


batching.batch_rules[approx_top_k_p] = _approx_top_k_batch

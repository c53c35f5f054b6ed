"""Segment reductions, as ``jax.ops``: ``segment_sum``, ``segment_prod``, ``segment_max`` and
``segment_min``.

Each is one scatter (``lax.scatter_add``/``mul``/``max``/``min``) of ``data`` into an array of
``num_segments`` rows filled with the reduction's identity, so ``grad``, ``vmap`` and ``jit``
go through the scatters' own rules. With ``bucket_size`` the scatter goes into one row of
segments per bucket of ``bucket_size`` consecutive entries, and the buckets are reduced
afterwards (for the numerical stability of long sums and products), as JAX does.
"""

import operator

import numpy as np

from xform import dtypes, lax
from xform import numpy as xnp
from xform.errors import ConcretizationTypeError
from xform.numpy._promote import aval_of, check_arraylike

__all__ = ["segment_sum", "segment_prod", "segment_max", "segment_min"]


def _identity(op, dtype):
    """The value an empty segment holds: the identity of ``op`` in ``dtype``."""
    if op is lax.scatter_add:
        return 0
    if op is lax.scatter_mul:
        return 1
    if dtype == np.bool_:
        return op is lax.scatter_min
    if dtypes.is_int(dtype):
        info = np.iinfo(dtype)
        return info.max if op is lax.scatter_min else info.min
    return np.inf if op is lax.scatter_min else -np.inf


def _num_segments(name, num_segments, segment_ids):
    """``num_segments`` as a Python int: given, or ``max(segment_ids) + 1``; either must be
    known when tracing, since it is the length of the result."""
    if num_segments is None:
        try:
            ids = np.asarray(segment_ids)
        except ConcretizationTypeError as e:
            raise ConcretizationTypeError(
                f"{name}: `num_segments` is None, so the number of segments would be "
                f"max(segment_ids) + 1, but segment_ids is traced and its value is not known "
                f"while tracing. Pass a static `num_segments` (under jit, a Python int or "
                f"`static_argnums`): {e}"
            ) from e
        return int(np.max(ids)) + 1  # ValueError for empty segment_ids, as JAX's
    try:
        n = operator.index(num_segments)
    except ConcretizationTypeError as e:
        raise ConcretizationTypeError(
            f"{name}: argument `num_segments` must be concrete (a Python int, or static "
            f"under jit via `static_argnums`), since it is the length of the result: {e}"
        ) from e
    if n < 0:
        raise ValueError(f"{name}: num_segments must be non-negative, got {n}.")
    return n


def _segment_update(
    name,
    data,
    segment_ids,
    op,
    reducer,
    num_segments,
    indices_are_sorted,
    unique_indices,
    bucket_size,
    mode,
    out_sharding,
):
    check_arraylike(name, data, segment_ids)
    if out_sharding is not None:
        raise NotImplementedError(
            f"{name}: `out_sharding` is not supported by xform yet; pass out_sharding=None"
        )
    mode = lax.GatherScatterMode.from_any(mode)
    data = xnp.asarray(data)
    segment_ids = xnp.asarray(segment_ids)
    data_aval, ids_aval = aval_of(data), aval_of(segment_ids)
    dtype = data_aval.dtype
    if not dtypes.is_int(ids_aval.dtype):
        raise TypeError(
            f"{name}: segment_ids must have an integer dtype, got {ids_aval.str_short()}"
        )
    n = _num_segments(name, num_segments, segment_ids)
    row_shape = data_aval.shape[1:]
    index_dtype = np.int64 if n > np.iinfo(np.int32).max else np.int32
    ids = lax.convert_element_type(segment_ids, index_dtype)
    if bucket_size is None:
        out_shape, batch_shape = (n, *row_shape), ids_aval.shape
        indices = lax.expand_dims(ids, (ids_aval.ndim,))
        inserted = (0,)
    else:
        bucket_size = operator.index(bucket_size)
        if bucket_size < 1:
            raise ValueError(f"{name}: bucket_size must be a positive integer, got {bucket_size}")
        if ids_aval.ndim != 1:
            raise ValueError(
                f"{name}: bucket_size needs 1-D segment_ids, got shape {ids_aval.shape}"
            )
        count = ids_aval.shape[0]
        num_buckets = -(-count // bucket_size)
        out_shape, batch_shape = (num_buckets, n, *row_shape), ids_aval.shape
        buckets = np.arange(count, dtype=index_dtype) // index_dtype(bucket_size)
        indices = lax.concatenate([buckets[:, None], lax.expand_dims(ids, (1,))], 1)
        inserted = (0, 1)
    updates_shape = (*batch_shape, *row_shape)
    try:
        updates = xnp.broadcast_to(data, updates_shape)
    except ValueError as e:
        raise ValueError(
            f"{name}: data of shape {data_aval.shape} does not match "
            f"segment_ids of shape {ids_aval.shape}: the data must broadcast to "
            f"{updates_shape} (segment_ids' shape followed by the rows)"
        ) from e
    dnums = lax.ScatterDimensionNumbers(
        update_window_dims=tuple(range(len(batch_shape), len(updates_shape))),
        inserted_window_dims=inserted,
        scatter_dims_to_operand_dims=inserted,
    )
    out = lax.full(out_shape, _identity(op, dtype), dtype)
    out = op(
        out,
        indices,
        updates,
        dnums,
        indices_are_sorted=indices_are_sorted,
        unique_indices=unique_indices,
        mode=mode,
    )
    if bucket_size is None:
        return out
    return reducer(out, axis=0).astype(dtype)


def _segment_op(name, op, reducer, what, identity, example):
    def segment(
        data,
        segment_ids,
        num_segments=None,
        indices_are_sorted=False,
        unique_indices=False,
        bucket_size=None,
        mode=None,
        out_sharding=None,
    ):
        return _segment_update(
            name,
            data,
            segment_ids,
            op,
            reducer,
            num_segments,
            indices_are_sorted,
            unique_indices,
            bucket_size,
            mode,
            out_sharding,
        )

    segment.__name__ = segment.__qualname__ = name
    segment.__module__ = __name__
    segment.__doc__ = f"""The {what} within segments of an array (``jax.ops.{name}``).

    Args:
      data: the values; entry ``i`` (along the leading axes that ``segment_ids`` spans)
        belongs to segment ``segment_ids[i]``.
      segment_ids: integer segment of each entry; repeats allowed, any order.
      num_segments: the number of segments, a non-negative int; default
        ``max(segment_ids) + 1``. It is the result's length, so under ``jit`` it must be
        static.
      indices_are_sorted: whether ``segment_ids`` is known to be sorted.
      unique_indices: whether ``segment_ids`` is known to hold no duplicates.
      bucket_size: reduce each run of ``bucket_size`` entries separately, then the buckets
        (for numerical stability); default None, no bucketing.
      mode: how ids outside ``[0, num_segments)`` behave: None (default) drops them;
        ``'clip'`` clamps them into range.
      out_sharding: must be None (xform does not shard this result yet).

    Returns:
      An array of shape ``(num_segments,) + data.shape[1:]`` and ``data``'s dtype; an
      empty segment holds the identity ({identity}).

    Example:
      >>> {name}(xform.numpy.arange(5.), xform.numpy.array([0, 0, 1, 1, 2]))
      Array({example}, dtype=float32)
    """
    return segment


segment_sum = _segment_op("segment_sum", lax.scatter_add, xnp.sum, "sum", "0", "[1., 5., 4.]")
segment_prod = _segment_op(
    "segment_prod", lax.scatter_mul, xnp.prod, "product", "1", "[0., 6., 4.]"
)
segment_max = _segment_op(
    "segment_max",
    lax.scatter_max,
    xnp.max,
    "maximum",
    "-inf; the dtype's minimum for integers; False for bool",
    "[1., 3., 4.]",
)
segment_min = _segment_op(
    "segment_min",
    lax.scatter_min,
    xnp.min,
    "minimum",
    "+inf; the dtype's maximum for integers; True for bool",
    "[0., 2., 4.]",
)

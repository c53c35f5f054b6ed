"""Sorting: sort and argsort (a two-operand ``lax.sort`` of the keys and an iota), lexsort,
sort_complex, partition and argpartition (``lax.top_k``), and searchsorted (a binary search,
a comparison count or a co-sort, in NumPy's total order: NaNs last)."""

import numpy as np

from xform import dtypes
from xform.lax import _names as lax
from xform.numpy._indexing import IndexUpdateHelper, getitem
from xform.numpy._promote import (
    _canonical_dtype,
    asarray,
    aval_of,
    check_arraylike,
    convert,
    promote_dtypes,
)
from xform.numpy._reductions import canonicalize_axis
from xform.numpy._shape import ravel, reshape, swapaxes
from xform.numpy._staged import staged
from xform.numpy._ufuncs import const, isnan

__all__ = [
    "sort",
    "argsort",
    "lexsort",
    "sort_complex",
    "partition",
    "argpartition",
    "searchsorted",
]


def _prepare(name, a, axis, kind, order):
    check_arraylike(name, a)
    if kind is not None:
        raise TypeError(
            f"'kind' argument to {name} is not supported. Use stable=True or "
            "stable=False to specify sort stability."
        )
    if order is not None:
        raise TypeError(f"'order' argument to {name} is not supported.")
    a = asarray(a)
    if axis is None:
        a, axis = ravel(a), 0
    return a, canonicalize_axis(axis, aval_of(a).ndim, name)


@staged("sort", static_argnames=("axis", "kind", "order", "stable", "descending"))
def sort(a, axis=-1, *, kind=None, order=None, stable=True, descending=False):
    """``a`` sorted along ``axis`` (None: flattened); NaNs last."""
    a, dim = _prepare("sort", a, axis, kind, order)
    result = lax.sort(a, dimension=dim, is_stable=stable)
    return lax.rev(result, (dim,)) if descending else result


@staged("argsort", static_argnames=("axis", "kind", "order", "stable", "descending", "dtype"))
def argsort(a, axis=-1, *, kind=None, order=None, stable=True, descending=False, dtype=None):
    """Indices that sort ``a`` along ``axis``."""
    a, dim = _prepare("argsort", a, axis, kind, order)
    idx_dtype = dtypes.default_int() if dtype is None else _canonical_dtype(dtype, "argsort")
    iota = lax.broadcasted_iota(idx_dtype, aval_of(a).shape, dim)
    # Reversing keys and indices first keeps ties in their original order when the result
    # is reversed for a stable descending sort.
    if descending and stable:
        a = lax.rev(a, (dim,))
        iota = lax.rev(iota, (dim,))
    _, indices = lax.sort((a, iota), dimension=dim, is_stable=stable, num_keys=1)
    return lax.rev(indices, (dim,)) if descending else indices


@staged("lexsort", static_argnames=("axis",))
def lexsort(keys, axis=-1):
    """Indices that sort by the last of ``keys``, then the one before it, and so on."""
    keys = tuple(keys)
    check_arraylike("lexsort", *keys)
    keys = tuple(asarray(k) for k in keys)
    if not keys:
        raise TypeError("need sequence of keys with len > 0 in lexsort")
    if len({aval_of(k).shape for k in keys}) > 1:
        raise ValueError("all keys need to be the same shape")
    shape = aval_of(keys[0]).shape
    if not shape:
        return lax.full((), 0, dtypes.default_int())
    axis = canonicalize_axis(axis, len(shape), "lexsort")
    iota = lax.broadcasted_iota(dtypes.default_int(), shape, axis)
    return lax.sort((*keys[::-1], iota), dimension=axis, num_keys=len(keys))[-1]


@staged("sort_complex")
def sort_complex(a):
    """``a`` sorted along its last axis (by real, then imaginary part), as a complex array."""
    check_arraylike("sort_complex", a)
    a = lax.sort(asarray(a), dimension=-1)
    dtype = aval_of(a).dtype
    if not dtypes.is_complex(dtype):
        real = dtype if dtypes.is_inexact(dtype) else dtypes.default_float()
        dtype = dtypes.canonicalize(np.complex64 if np.dtype(real).itemsize <= 4 else np.complex128)
    return lax.convert_element_type(a, dtype)


def _partition_prepare(name, a, kth, axis):
    check_arraylike(name, a)
    a = asarray(a)
    if dtypes.is_complex(aval_of(a).dtype):
        raise NotImplementedError(f"jnp.{name} for complex dtype is not implemented.")
    axis = canonicalize_axis(axis, aval_of(a).ndim, name)
    kth = canonicalize_axis(kth, aval_of(a).shape[axis], name)
    return swapaxes(a, axis, -1), kth, axis


def _negated_for_top_k(a):
    """A key whose largest entries are ``a``'s smallest (unsigned: shifted so 0 survives)."""
    if dtypes.is_unsigned_int(aval_of(a).dtype):
        return lax.neg(lax.add(a, const(a, 1)))
    return lax.neg(a)


@staged("partition", static_argnames=("kth", "axis"))
def partition(a, kth, axis=-1):
    """``a`` with its ``kth`` smallest element along ``axis`` in sorted position, the smaller
    ones (sorted) before it and the others after it."""
    a, kth, axis = _partition_prepare("partition", a, kth, axis)
    n = aval_of(a).shape[-1]
    bottom = _negated_for_top_k(lax.top_k(_negated_for_top_k(a), kth + 1)[0])
    top = lax.top_k(a, n - kth - 1)[0]
    return swapaxes(lax.concatenate([bottom, top], aval_of(a).ndim - 1), -1, axis)


@staged("argpartition", static_argnames=("kth", "axis"))
def argpartition(a, kth, axis=-1):
    """Indices that ``partition`` ``a`` around its ``kth`` smallest element along ``axis``."""
    a, kth, axis = _partition_prepare("partition", a, kth, axis)
    shape = aval_of(a).shape
    bottom = lax.top_k(_negated_for_top_k(a), kth + 1)[1]
    # Mark the bottom entries 0 and the rest 1; top_k of that picks the rest in order.
    index = tuple(
        bottom if d == len(shape) - 1 else lax.broadcasted_iota(dtypes.int32, shape[:-1] + (1,), d)
        for d in range(len(shape))
    )
    proxy = IndexUpdateHelper(lax.full(shape, 1.0, dtypes.float32))[index].set(0.0)
    top = lax.top_k(proxy, shape[-1] - kth - 1)[1]
    out = lax.concatenate([bottom, top], len(shape) - 1)
    return swapaxes(out, -1, axis)


def _total_lt(x, y):
    """``x < y`` in sort order: NaNs after everything, complex by (real, imaginary)."""
    if dtypes.is_complex(aval_of(x).dtype):
        xr, yr, xi, yi = lax.real(x), lax.real(y), lax.imag(x), lax.imag(y)
        return lax.bitwise_or(
            _total_lt(xr, yr),
            lax.bitwise_and(
                lax.bitwise_not(lax.bitwise_or(_total_lt(xr, yr), _total_lt(yr, xr))),
                _total_lt(xi, yi),
            ),
        )
    if dtypes.is_inexact(aval_of(x).dtype):
        return lax.bitwise_or(lax.lt(x, y), lax.bitwise_and(isnan(y), lax.bitwise_not(isnan(x))))
    if aval_of(x).dtype == dtypes.bool_:
        return lax.bitwise_and(lax.bitwise_not(x), y)
    return lax.lt(x, y)


def _goes_before(side, a_elem, q):
    """Whether the sorted element ``a_elem`` lies before the insertion point of ``q``."""
    if side == "left":
        return _total_lt(a_elem, q)
    return lax.bitwise_not(_total_lt(q, a_elem))


_UNSIGNED = {dtypes.int32: dtypes.uint32, dtypes.int64: dtypes.uint64}


def _search_scan(a, v, side, dtype, unrolled):
    n = aval_of(a).shape[0]
    low = lax.full(aval_of(v).shape, 0, dtype)
    high = lax.full(aval_of(v).shape, n, dtype)

    def step(_, state):
        # The insertion point lies in [low, high]; each step halves the range, and once it
        # is a single point the step leaves it there, so no "still searching" mask is needed.
        low, high = state
        # (low + high) // 2 in the unsigned type, where the sum cannot overflow: a shift,
        # not a division (whose lowering guards against a zero divisor), as JAX's.
        wide = _UNSIGNED[dtype]
        total = lax.add(lax.convert_element_type(low, wide), lax.convert_element_type(high, wide))
        mid = lax.convert_element_type(lax.shift_right_logical(total, convert(1, wide)), dtype)
        right_half = _goes_before(side, getitem(a, mid), v)
        return lax.select(right_half, mid, low), lax.select(right_half, high, mid)

    levels = int(np.ceil(np.log2(n + 1)))
    if unrolled:
        state = (low, high)
        for i in range(levels):
            state = step(i, state)
        return state[1]
    return lax.fori_loop(0, levels, step, (low, high))[1]


def _search_compare_all(a, v, side, dtype):
    n = aval_of(a).shape[0]
    a_b = lax.broadcast_in_dim(a, (n, *aval_of(v).shape), (0,))
    v_b = lax.broadcast_in_dim(v, (n, *aval_of(v).shape), tuple(range(1, aval_of(v).ndim + 1)))
    return lax.reduce_sum(lax.convert_element_type(_goes_before(side, a_b, v_b), dtype), (0,))


def _rank(x):
    """The position of each element of the 1-D ``x`` in its stable sort."""
    iota = lax.iota(dtypes.int32, aval_of(x).shape[0])
    order = lax.sort((x, iota), dimension=0, num_keys=1)[1]
    return IndexUpdateHelper(lax.full(aval_of(iota).shape, 0, dtypes.int32))[order].set(iota)


def _search_sort(a, v, side, dtype):
    n, m = aval_of(a).shape[0], int(np.prod(aval_of(v).shape))
    flat_v = reshape(v, (m,))
    # A query's rank among queries and sorted values (queries first for 'left', so equal
    # values come after them), less its rank among the queries alone.
    if side == "left":
        pos = lax.slice(_rank(lax.concatenate([flat_v, a], 0)), (0,), (m,))
    else:
        pos = lax.slice(_rank(lax.concatenate([a, flat_v], 0)), (n,), (n + m,))
    index = lax.sub(pos, _rank(flat_v))
    return reshape(lax.convert_element_type(index, dtype), aval_of(v).shape)


_SEARCH_METHODS = ("scan", "scan_unrolled", "compare_all", "sort")


@staged("searchsorted", static_argnames=("side", "method"))
def searchsorted(a, v, side="left", sorter=None, *, method="scan"):
    """Where to insert the values ``v`` into the sorted 1-D ``a`` to keep it sorted
    (``side='left'``: before equal entries; ``'right'``: after them).

    ``method`` picks the algorithm (same results): ``'scan'`` (a binary search),
    ``'scan_unrolled'``, ``'compare_all'`` (fast for small ``a``) or ``'sort'``.

    Example: ``searchsorted(jnp.array([1, 3, 5]), 4)`` is ``2``.
    """
    if sorter is None:
        check_arraylike("searchsorted", a, v)
    else:
        check_arraylike("searchsorted", a, v, sorter)
    a, v = asarray(a), asarray(v)
    if aval_of(a).ndim != 1:
        raise ValueError("a should be 1-dimensional")
    if side not in ("left", "right"):
        raise ValueError(
            f"{side!r} is an invalid value for keyword 'side'. Expected one of ['left', 'right']."
        )
    if method not in _SEARCH_METHODS:
        raise ValueError(f"Unsupported method: {method}")
    a, v = promote_dtypes(a, v)
    if sorter is not None:
        a = getitem(a, asarray(sorter))
    n = aval_of(a).shape[0]
    dtype = dtypes.int32 if n <= np.iinfo(np.int32).max else dtypes.canonicalize(np.int64)
    if n == 0:
        return lax.full(aval_of(v).shape, 0, dtype)
    if method == "compare_all":
        return _search_compare_all(a, v, side, dtype)
    if method == "sort":
        return _search_sort(a, v, side, dtype)
    return _search_scan(a, v, side, dtype, method == "scan_unrolled")

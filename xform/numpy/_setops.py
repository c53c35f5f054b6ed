"""Set operations: unique (and the array-API unique_all/counts/inverse/values), union1d,
intersect1d, setdiff1d, setxor1d and isin.

Results whose length depends on the values need concrete input, or a static ``size=``
under ``jit``: the sorted results are then cut to ``size`` or padded with ``fill_value``
(by default the smallest result). Everything is built on a (lexicographic) ``lax.sort`` and a
mask of where sorted neighbours differ.
"""

import math
import operator
from typing import NamedTuple

import numpy as np

from xform import dtypes
from xform.core import Tracer
from xform.lax import _names as lax
from xform.numpy._creation import arange, full, full_like, ones, zeros
from xform.numpy._indexing import IndexUpdateHelper, getitem
from xform.numpy._promote import asarray, aval_of, check_arraylike, convert, promote_dtypes
from xform.numpy._reductions import any as any_
from xform.numpy._reductions import canonicalize_axis, cumsum
from xform.numpy._reductions import sum as sum_
from xform.numpy._shape import (
    _concrete,
    concatenate,
    moveaxis,
    nonzero,
    ravel,
    reshape,
    transpose,
    where,
)
from xform.numpy._sorting import lexsort, searchsorted, sort
from xform.numpy._ufuncs import isnan

__all__ = [
    "unique",
    "unique_all",
    "unique_counts",
    "unique_inverse",
    "unique_values",
    "union1d",
    "intersect1d",
    "setdiff1d",
    "setxor1d",
    "isin",
]

_SIZE_HINT = (
    "To use it under jit (or another transformation), pass a concrete `size` "
    "argument: the result is then cut to `size` or padded with `fill_value`."
)


def _require_concrete(x, where_):
    if isinstance(x, Tracer):
        x._concretize(f"{where_}. {_SIZE_HINT}")


def _static_size(size, where_):
    if isinstance(size, Tracer):
        size = size._concretize(f"the size argument of {where_}")
    return operator.index(size)


# --------------------------------------------------------------------------- unique


def _sorted_mask(ar, axis, equal_nan):
    """``ar`` with ``axis`` first and its slices sorted lexicographically, a mask of the
    slices that differ from the one before, and the sorting permutation."""
    aux = moveaxis(ar, axis, 0)
    if dtypes.is_complex(aval_of(aux).dtype):
        aux = where(isnan(aux), convert(np.nan, aval_of(aux).dtype), aux)
    n, *rest = aval_of(aux).shape
    if math.prod(rest) == 0:
        n, perm = 1, zeros(1, dtype=dtypes.default_int())
    else:
        flat = reshape(aux, (n, math.prod(rest)))
        perm = lexsort(tuple(transpose(flat)[::-1]))
    aux = getitem(aux, perm)
    if math.prod(aval_of(aux).shape):
        later, earlier = aux[1:], aux[:-1]
        differ = lax.ne(later, earlier)
        if dtypes.is_inexact(aval_of(aux).dtype) and equal_nan:
            both_nan = lax.bitwise_and(isnan(later), isnan(earlier))
            differ = lax.bitwise_and(differ, lax.bitwise_not(both_nan))
        differ = any_(differ, tuple(range(1, aval_of(aux).ndim)))
        mask = concatenate([ones(1, dtype=dtypes.bool_), differ])
    else:
        mask = zeros(n, dtype=dtypes.bool_)
    return aux, mask, perm


def _unique(
    ar,
    axis,
    return_index=False,
    return_inverse=False,
    return_counts=False,
    equal_nan=True,
    size=None,
    fill_value=None,
    return_true_size=False,
):
    axis = canonicalize_axis(axis, aval_of(ar).ndim, "unique")
    n_axis = aval_of(ar).shape[axis]
    if n_axis == 0 and size and fill_value is None:
        raise ValueError(
            "jnp.unique: for zero-sized input with nonzero size argument, "
            "fill_value must be specified"
        )
    aux, mask, perm = _sorted_mask(ar, axis, equal_nan)
    aux_size = math.prod(aval_of(aux).shape)
    if size is None:
        ind = asarray(np.nonzero(_concrete(mask, "jnp.unique"))[0].astype(dtypes.default_int()))
    else:
        ind = nonzero(mask, size=size)[0]
    result = getitem(aux, ind) if aux_size else aux
    if size is not None and fill_value is not None:
        fill = convert(asarray(fill_value), aval_of(result).dtype)
        rshape = aval_of(result).shape
        if rshape[0]:
            valid = lax.lt(arange(size), sum_(mask))
            valid = lax.broadcast_in_dim(valid, rshape, (0,))
            result = where(valid, result, fill)
        else:
            result = full_like(result, fill, shape=(size, *rshape[1:]))
    out = (moveaxis(result, 0, axis),)
    int_ = dtypes.default_int()
    if return_index:
        out += (getitem(perm, ind) if aux_size else perm,)
    if return_inverse:
        if aux_size:
            slot = cumsum(mask) - 1
            inverse = IndexUpdateHelper(zeros(aval_of(mask).shape, dtype=int_))[perm].set(slot)
        else:
            inverse = zeros(n_axis, dtype=int_)
        out += (inverse,)
    if return_counts:
        if aux_size:
            n_mask = aval_of(mask).shape[0]
            if size is None:
                starts = concatenate([ind, full(1, n_mask, dtype=aval_of(ind).dtype)])
            else:
                starts = nonzero(mask, size=size + 1)[0]
                tail = starts[1:]
                starts = IndexUpdateHelper(starts)[1:].set(
                    where(tail != 0, tail, convert(n_mask, aval_of(tail).dtype))
                )
            out += (starts[1:] - starts[:-1],)
        elif n_axis:
            out += (full((1,), n_axis, dtype=int_),)
        else:
            out += (zeros(0, dtype=int_),)
    if return_true_size:
        out += (sum_(mask),)
    return out[0] if len(out) == 1 else out


def unique(
    ar,
    return_index=False,
    return_inverse=False,
    return_counts=False,
    axis=None,
    *,
    equal_nan=True,
    size=None,
    fill_value=None,
    sorted=True,  # noqa: A002
):
    """The sorted unique elements of ``ar`` (flattened, or the unique slices along
    ``axis``), optionally with the index of each one's first occurrence, the inverse
    indices that rebuild ``ar`` and the counts.

    Under ``jit`` pass a static ``size``: the result is cut to it or padded with
    ``fill_value`` (default: the smallest unique value).

    Example: ``unique(jnp.array([3, 1, 3]))`` is ``[1, 3]``.
    """
    del sorted
    check_arraylike("unique", ar)
    arr = asarray(ar)
    if size is None:
        _require_concrete(
            arr, "jnp.unique's result size depends on the values of its first argument"
        )
    else:
        size = _static_size(size, "jnp.unique")
    shape = aval_of(arr).shape
    if axis is None:
        arr, axis_int = ravel(arr), 0
    else:
        axis_int = canonicalize_axis(axis, len(shape), "unique")
    result = _unique(
        arr,
        axis_int,
        return_index,
        return_inverse,
        return_counts,
        equal_nan=equal_nan,
        size=size,
        fill_value=fill_value,
    )
    if return_inverse and axis is None:
        k = 2 if return_index else 1
        result = (*result[:k], reshape(result[k], shape), *result[k + 1 :])
    return result


class _UniqueAllResult(NamedTuple):
    values: object
    indices: object
    inverse_indices: object
    counts: object


class _UniqueCountsResult(NamedTuple):
    values: object
    counts: object


class _UniqueInverseResult(NamedTuple):
    values: object
    inverse_indices: object


def unique_all(x, /, *, size=None, fill_value=None):
    """``unique`` with indices, inverse indices and counts, as a named tuple (NaNs are
    all distinct)."""
    check_arraylike("unique_all", x)
    return _UniqueAllResult(
        *unique(
            x,
            return_index=True,
            return_inverse=True,
            return_counts=True,
            equal_nan=False,
            size=size,
            fill_value=fill_value,
        )
    )


def unique_counts(x, /, *, size=None, fill_value=None):
    """The unique values of ``x`` and their counts, as a named tuple."""
    check_arraylike("unique_counts", x)
    return _UniqueCountsResult(
        *unique(x, return_counts=True, equal_nan=False, size=size, fill_value=fill_value)
    )


def unique_inverse(x, /, *, size=None, fill_value=None):
    """The unique values of ``x`` and the inverse indices, as a named tuple."""
    check_arraylike("unique_inverse", x)
    return _UniqueInverseResult(
        *unique(x, return_inverse=True, equal_nan=False, size=size, fill_value=fill_value)
    )


def unique_values(x, /, *, size=None, fill_value=None):
    """The sorted unique values of ``x`` (NaNs are all distinct)."""
    check_arraylike("unique_values", x)
    return unique(x, equal_nan=False, size=size, fill_value=fill_value)


# --------------------------------------------------------------------------- isin


_ISIN_METHODS = ("auto", "compare_all", "binary_search", "sort")


def _in1d(ar1, ar2, invert, method="auto"):
    a1, a2 = promote_dtypes(asarray(ar1), asarray(ar2))
    a1, a2 = ravel(a1), ravel(a2)
    if method not in _ISIN_METHODS:
        raise ValueError(
            f"method={method!r} is not implemented; options are 'compare_all', "
            "'binary_search', 'sort', and 'auto'"
        )
    n1 = aval_of(a1).shape[0]
    if n1 == 0 or aval_of(a2).shape[0] == 0:
        return (ones if invert else zeros)((n1,), dtype=dtypes.bool_)
    if method in ("auto", "compare_all"):
        eq = lax.eq(a1[:, None], a2[None, :])
        found = lax.reduce_or(eq, (1,))
    else:
        a2 = lax.sort(a2, dimension=0)
        pos = searchsorted(a2, a1, method="scan" if method == "binary_search" else "sort")
        found = lax.eq(a1, getitem(a2, pos))
    return lax.bitwise_not(found) if invert else found


def isin(element, test_elements, assume_unique=False, invert=False, *, method="auto"):
    """Whether each element of ``element`` is in ``test_elements`` (an array of ``element``'s
    shape); ``method`` picks the algorithm: ``'compare_all'`` (``'auto'``),
    ``'binary_search'`` or ``'sort'``."""
    del assume_unique
    check_arraylike("isin", element, test_elements)
    result = _in1d(element, test_elements, invert, method)
    return reshape(result, aval_of(asarray(element)).shape)


# --------------------------------------------------------------------------- set operations


def _take_masked(values, mask, size, fill_value):
    """The entries of 1-D ``values`` where ``mask``, cut or padded to ``size`` with
    ``fill_value`` (default: the smallest of them, or 0 if there is none)."""
    n = aval_of(values).shape[0]
    if n:
        at = nonzero(mask, size=size, fill_value=n)[0]
        picked = IndexUpdateHelper(values)[at].get(mode="fill", fill_value=0)
    else:
        picked = zeros(size, aval_of(values).dtype)
    in_result = lax.lt(arange(size), sum_(mask))
    if fill_value is not None:
        return where(in_result, picked, fill_value)
    # The padding (zeros) becomes the largest value, then the smallest: min of the results.
    picked = where(in_result, picked, _reduce_all(lax.reduce_max, picked))
    return where(in_result, picked, _reduce_all(lax.reduce_min, picked))


def _reduce_all(reduce, x):
    return reduce(x, tuple(range(aval_of(x).ndim)))


def union1d(ar1, ar2, *, size=None, fill_value=None):
    """The sorted unique values found in either array (both flattened)."""
    check_arraylike("union1d", ar1, ar2)
    if size is None:
        _require_concrete(
            asarray(ar1), "jnp.union1d's result size depends on the values of its arguments"
        )
        _require_concrete(
            asarray(ar2), "jnp.union1d's result size depends on the values of its arguments"
        )
    else:
        size = _static_size(size, "jnp.union1d")
    return unique(concatenate((ar1, ar2), axis=None), size=size, fill_value=fill_value)


def setdiff1d(ar1, ar2, assume_unique=False, *, size=None, fill_value=None):
    """The sorted unique values of ``ar1`` that are not in ``ar2``."""
    check_arraylike("setdiff1d", ar1, ar2)
    a1, a2 = ravel(asarray(ar1)), ravel(asarray(ar2))
    if size is None:
        _require_concrete(a1, "jnp.setdiff1d's result size depends on the values of its arguments")
    else:
        size = _static_size(size, "jnp.setdiff1d")
    fill = full_like(a1, 0 if fill_value is None else fill_value, shape=())
    n1 = aval_of(a1).shape[0]
    if n1 == 0:
        return full_like(a1, fill, shape=size or 0)
    if not assume_unique:
        a1 = unique(a1, size=size and n1)
    mask = _in1d(a1, a2, invert=True)
    if size is None:
        return getitem(a1, _concrete(mask, "setdiff1d"))
    if not assume_unique:
        # unique() padded a1 with copies of its smallest value: drop the padding.
        n_unique = n1 + 1 - sum_(lax.eq(a1, a1[0]))
        mask = where(lax.lt(arange(n1), n_unique), mask, False)
    picked = getitem(a1, nonzero(mask, size=size)[0])
    return where(lax.lt(arange(size), sum_(mask)), picked, fill)


def setxor1d(ar1, ar2, assume_unique=False, *, size=None, fill_value=None):
    """The sorted values found in exactly one of the arrays (both flattened)."""
    check_arraylike("setxor1d", ar1, ar2)
    a1, a2 = promote_dtypes(ravel(asarray(ar1)), ravel(asarray(ar2)))
    if size is not None:
        return _setxor1d_size(a1, a2, assume_unique, _static_size(size, "jnp.setxor1d"), fill_value)
    _require_concrete(a1, "jnp.setxor1d's result size depends on the values of its arguments")
    _require_concrete(a2, "jnp.setxor1d's result size depends on the values of its arguments")
    if not assume_unique:
        a1, a2 = unique(a1), unique(a2)
    aux = concatenate((a1, a2))
    if aval_of(aux).shape[0] == 0:
        return aux
    aux = sort(aux)
    keep = _alone(aux, ones(aval_of(aux).shape, dtype=dtypes.bool_))
    return getitem(aux, _concrete(keep, "setxor1d"))


def _alone(aux, valid):
    """Where the sorted ``aux`` differs from both neighbours (and is ``valid``)."""
    differ = lax.ne(aux[1:], aux[:-1])
    true = ones(1, dtype=dtypes.bool_)
    flag = concatenate([true, differ, true])
    return lax.bitwise_and(lax.bitwise_and(flag[1:], flag[:-1]), valid)


def _setxor1d_size(a1, a2, assume_unique, size, fill_value):
    parts, valid = [], []
    for a in (a1, a2):
        n = aval_of(a).shape[0]
        if assume_unique or n == 0:
            parts.append(a)
            valid.append(ones(n, dtype=dtypes.bool_))
        else:
            u, count = _unique(a, 0, size=n, fill_value=None, return_true_size=True)
            parts.append(u)
            valid.append(lax.lt(arange(n), count))
    arr, ok = concatenate(parts), concatenate(valid)
    if aval_of(arr).shape[0] == 0:
        return full(size, 0 if fill_value is None else fill_value, aval_of(arr).dtype)
    # Sort the invalid padding last, then keep the values that differ from both neighbours.
    _, aux = lax.sort((lax.bitwise_not(ok), arr), dimension=0, num_keys=2)
    ok_sorted = lax.sort(lax.bitwise_not(ok), dimension=0)
    keep = _alone(aux, lax.bitwise_not(ok_sorted))
    return _take_masked(aux, keep, size, fill_value)


def intersect1d(ar1, ar2, assume_unique=False, return_indices=False, *, size=None, fill_value=None):
    """The sorted unique values found in both arrays (flattened), optionally with the index
    of each one's first occurrence in each array."""
    check_arraylike("intersect1d", ar1, ar2)
    a1, a2 = promote_dtypes(ravel(asarray(ar1)), ravel(asarray(ar2)))
    if size is not None:
        return _intersect1d_size(
            a1, a2, assume_unique, return_indices, _static_size(size, "jnp.intersect1d"), fill_value
        )
    _require_concrete(a1, "jnp.intersect1d's result size depends on the values of its arguments")
    _require_concrete(a2, "jnp.intersect1d's result size depends on the values of its arguments")
    ind1 = ind2 = None
    if not assume_unique:
        if return_indices:
            a1, ind1 = unique(a1, return_index=True)
            a2, ind2 = unique(a2, return_index=True)
        else:
            a1, a2 = unique(a1), unique(a2)
    n1 = aval_of(a1).shape[0]
    arr = concatenate((a1, a2))
    iota = lax.iota(dtypes.int32, aval_of(arr).shape[0])
    aux, order = lax.sort((arr, iota), dimension=0, num_keys=1)
    mask = _concrete(lax.eq(aux[1:], aux[:-1]), "intersect1d")
    values = getitem(aux[:-1], mask)
    if not return_indices:
        return values
    idx1 = getitem(order[:-1], mask)
    idx2 = getitem(order[1:], mask) - n1
    if not assume_unique:
        idx1, idx2 = getitem(ind1, idx1), getitem(ind2, idx2)
    return values, idx1, idx2


def _intersect1d_size(a1, a2, assume_unique, return_indices, size, fill_value):
    n1, n2 = aval_of(a1).shape[0], aval_of(a2).shape[0]
    if assume_unique:
        ind1, count1 = arange(n1), n1
        ind2 = arange(n2)
        arr = concatenate([a1, a2])
        iota = lax.iota(dtypes.int32, n1 + n2)
        aux, order = lax.sort((arr, iota), dimension=0, num_keys=1)
        valid = ones(n1 + n2, dtype=dtypes.bool_)
    else:
        a1, ind1, count1 = _unique(
            a1, 0, size=n1, return_index=True, return_true_size=True, fill_value=0
        )
        a2, ind2, count2 = _unique(
            a2, 0, size=n2, return_index=True, return_true_size=True, fill_value=0
        )
        arr = zeros(n1 + n2, dtype=aval_of(a1).dtype)
        arr = lax.dynamic_update_slice(arr, a1, (convert(0, dtypes.int32),))
        arr = lax.dynamic_update_slice(arr, a2, (count1,))
        valid = lax.lt(arange(n1 + n2), count1 + count2)
        iota = lax.iota(dtypes.int32, n1 + n2)
        _, aux, order = lax.sort((lax.bitwise_not(valid), arr, iota), dimension=0, num_keys=2)
    n = n1 + n2
    dup = lax.bitwise_and(lax.eq(aux[1:], aux[:-1]), valid[1:])
    vals = _take_masked(aux, dup, size, fill_value)
    in_result = lax.lt(arange(size), sum_(dup))
    at = nonzero(dup, size=size, fill_value=n)[0] if n else arange(0)
    if not return_indices:
        return vals
    idx1 = IndexUpdateHelper(order)[at].get(mode="fill", fill_value=n1)
    idx1 = where(in_result, idx1, n1)
    idx2 = IndexUpdateHelper(order)[at + 1].get(mode="fill", fill_value=n2) - count1
    idx2 = where(in_result, idx2, n2)
    if not assume_unique:
        idx1 = IndexUpdateHelper(ind1)[idx1].get(mode="fill", fill_value=n1)
        idx2 = IndexUpdateHelper(ind2)[idx2].get(mode="fill", fill_value=n2)
    return vals, idx1, idx2

"""Choosing and placing elements: select, piecewise, choose, compress, extract, place, put,
ravel_multi_index, unravel_index, diag, diagflat and fill_diagonal.

Functions that would update in place in NumPy (place, put, fill_diagonal) need
``inplace=False`` and return the updated array; data-dependent result sizes (compress,
extract) need concrete input or a static ``size``.
"""

import math
import operator

import numpy as np

from xform import dtypes
from xform.core import Tracer
from xform.lax import _names as lax
from xform.numpy._contractions import diagonal
from xform.numpy._creation import arange, eye, zeros
from xform.numpy._index_tricks import diag_indices, indices
from xform.numpy._indexing import IndexUpdateHelper, getitem
from xform.numpy._promote import (
    _canonical_dtype,
    array,
    asarray,
    aval_of,
    check_arraylike,
    convert,
    promote_dtypes,
    result_type,
)
from xform.numpy._reductions import argmax, cumsum
from xform.numpy._shape import (
    _concrete,
    broadcast_arrays,
    clip,
    concatenate,
    expand_dims,
    moveaxis,
    ravel,
    reshape,
    stack,
    where,
)
from xform.numpy._sorting import argsort
from xform.numpy._staged import staged
from xform.numpy._ufuncs import divmod as divmod_
from xform.numpy._ufuncs import remainder

__all__ = [
    "select",
    "piecewise",
    "choose",
    "compress",
    "extract",
    "place",
    "put",
    "ravel_multi_index",
    "unravel_index",
    "diag",
    "diagflat",
    "fill_diagonal",
]


def _static_int(x, what):
    if isinstance(x, Tracer):
        x = x._concretize(what)
    return operator.index(x)


def _tile_to_size(v, n):
    """The 1-D ``v`` repeated (and cut) to length ``n``."""
    m = aval_of(v).shape[0]
    return concatenate([v] * -(-n // m))[:n] if m != n else v


def select(condlist, choicelist, default=0):
    """Per element, the entry of the first ``choicelist`` array whose condition holds, else
    ``default``."""
    if len(condlist) != len(choicelist):
        raise ValueError(
            f"condlist must have length equal to choicelist ({len(condlist)} vs {len(choicelist)})"
        )
    if len(condlist) == 0:
        raise ValueError("condlist must be non-empty")
    check_arraylike("select", *condlist, *choicelist, default)
    choices = promote_dtypes(asarray(default), *(asarray(c) for c in choicelist))
    conds = stack(broadcast_arrays(False, *(asarray(c) for c in condlist)))
    # argmax finds the first true condition (index 1 + i), or 0 (the default) if none is.
    idx = argmax(lax.convert_element_type(conds, dtypes.bool_), axis=0)
    return lax.select_n(*broadcast_arrays(idx, *choices))


def piecewise(x, condlist, funclist, *args, **kw):
    """``funclist[i](x)`` (or the constant ``funclist[i]``) where ``condlist[i]`` holds (the
    last true one wins), else the extra last function (or 0); results in ``x``'s dtype."""
    check_arraylike("piecewise", x)
    x = asarray(x)
    nc, nf = len(condlist), len(funclist)
    if nf == nc + 1:
        funclist = list(funclist[-1:]) + list(funclist[:-1])
    elif nf == nc:
        funclist = [0, *funclist]
    else:
        raise ValueError(
            f"with {nc} condition(s), either {nc} or {nc + 1} functions are expected; got {nf}"
        )
    conds = asarray(condlist, dtype=dtypes.bool_)
    conds = lax.convert_element_type(conds, dtypes.int32)
    counts = cumsum(concatenate([zeros(aval_of(conds[:1]).shape, dtypes.int32), conds], 0), 0)
    idx = argmax(counts, 0)
    dtype = aval_of(x).dtype
    branches = []
    for f in funclist:
        value = f(x, *args, **kw) if callable(f) else array(f, dtype=dtype)
        branches.append(convert(asarray(value), dtype))
    return lax.select_n(*broadcast_arrays(idx, *branches))


def choose(a, choices, out=None, mode="raise"):
    """Per element, ``choices[a](element)``: ``a`` picks one of the (broadcast) choices;
    ``mode`` is ``'raise'`` (concrete ``a`` only), ``'wrap'`` or ``'clip'``."""
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.choose is not supported.")
    check_arraylike("choose", a, *choices)
    a = asarray(a)
    choices = [asarray(c) for c in choices]
    if not dtypes.is_int(aval_of(a).dtype):
        raise ValueError("`a` array must be integer typed")
    n = len(choices)
    if mode == "raise":
        host = _concrete(
            a, "jnp.choose with mode='raise' (use mode='wrap' or mode='clip' under jit)"
        )
        if np.any((host < 0) | (host >= n)):
            raise ValueError("invalid entry in choice array")
    elif mode == "wrap":
        a = remainder(a, convert(n, aval_of(a).dtype))
    elif mode == "clip":
        a = clip(a, 0, n - 1)
    else:
        raise ValueError(f"mode={mode!r} not understood. Must be 'raise', 'wrap', or 'clip'")
    a, *choices = broadcast_arrays(a, *choices)
    stacked = stack(promote_dtypes(*choices))
    return getitem(stacked, (a, *indices(aval_of(a).shape, sparse=True)))


def compress(condition, a, axis=None, *, size=None, fill_value=0, out=None):
    """The slices of ``a`` along ``axis`` (None: of the flattened ``a``) where the 1-D
    ``condition`` is true; with a static ``size``, the first ``size`` of them, padded with
    ``fill_value``."""
    check_arraylike("compress", condition, a, fill_value)
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.compress is not supported.")
    cond = (
        lax.ne(asarray(condition), convert(0, aval_of(asarray(condition)).dtype))
        if aval_of(asarray(condition)).dtype != dtypes.bool_
        else asarray(condition)
    )
    if aval_of(cond).ndim != 1:
        raise ValueError("condition must be a 1D array")
    arr = asarray(a)
    if axis is None:
        axis, arr = 0, ravel(arr)
    else:
        arr = moveaxis(arr, axis, 0)
    n = aval_of(arr).shape[0]
    cond, extra = cond[:n], cond[n:]
    arr = arr[: aval_of(cond).shape[0]]
    if size is None:
        if np.any(_concrete(extra, "jnp.compress")):
            raise ValueError("condition contains entries that are out of bounds")
        result = getitem(arr, _concrete(cond, "jnp.compress (pass `size` to use it under jit)"))
    elif not 0 <= size <= aval_of(arr).shape[0]:
        raise ValueError(
            "size must be positive and not greater than the size of the array "
            f"axis; got size={size} for a.shape[axis]={aval_of(arr).shape[0]}"
        )
    else:
        mask = expand_dims(cond, tuple(range(1, aval_of(arr).ndim)))
        arr = where(mask, arr, array(fill_value, dtype=aval_of(arr).dtype))
        result = getitem(arr, argsort(cond, stable=True, descending=True))[:size]
    return moveaxis(result, 0, axis)


def extract(condition, arr, *, size=None, fill_value=0):
    """The elements of ``arr`` where ``condition`` is true (both flattened)."""
    check_arraylike("extract", condition, arr, fill_value)
    return compress(ravel(condition), ravel(arr), size=size, fill_value=fill_value)


def _inplace_error(name):
    return ValueError(
        f"jax.numpy.{name} cannot modify arrays in-place, because JAX arrays "
        "are immutable. Pass inplace=False to instead return an updated array."
    )


def place(arr, mask, vals, *, inplace=True):
    """``arr`` with the elements where ``mask`` is true replaced, in order, by ``vals``
    (repeated as needed)."""
    check_arraylike("place", arr, mask, vals)
    data, mask_arr, vals_arr = asarray(arr), asarray(mask), ravel(vals)
    if inplace:
        raise _inplace_error("place")
    size = math.prod(aval_of(data).shape)
    if size != math.prod(aval_of(mask_arr).shape):
        raise ValueError("place: arr and mask must be the same size")
    if not aval_of(vals_arr).shape[0]:
        raise ValueError("Cannot place values from an empty array")
    if not size:
        return data
    at = where(ravel(mask_arr), size=size, fill_value=size)[0]
    vals_arr = _tile_to_size(vals_arr, size)
    flat = IndexUpdateHelper(ravel(data))[at].set(vals_arr, mode="drop")
    return reshape(flat, aval_of(data).shape)


def put(a, ind, v, mode=None, *, inplace=True):
    """``a`` with the values ``v`` (repeated as needed) at the flat indices ``ind``;
    out-of-bounds indices are dropped, or clipped or wrapped by ``mode``."""
    if inplace:
        raise _inplace_error("put")
    check_arraylike("put", a, ind, v)
    arr, ind_arr, v_arr = asarray(a), ravel(ind), ravel(v)
    size = math.prod(aval_of(arr).shape)
    n = aval_of(ind_arr).shape[0]
    if not size or not n or not aval_of(v_arr).shape[0]:
        return arr
    v_arr = _tile_to_size(v_arr, n)
    if mode is None:
        scatter_mode = "drop"
    elif mode == "clip":
        ind_arr, scatter_mode = clip(ind_arr, 0, size - 1), "promise_in_bounds"
    elif mode == "wrap":
        ind_arr = remainder(ind_arr, convert(size, aval_of(ind_arr).dtype))
        scatter_mode = "promise_in_bounds"
    elif mode == "raise":
        raise NotImplementedError("The 'raise' mode to jnp.put is not supported.")
    else:
        raise ValueError(f"mode should be one of 'wrap' or 'clip'; got mode={mode!r}")
    return IndexUpdateHelper(arr)[unravel_index(ind_arr, aval_of(arr).shape)].set(
        v_arr, mode=scatter_mode
    )


# --------------------------------------------------------------------------- flat indices


def ravel_multi_index(multi_index, dims, mode="raise", order="C", *, dtype=None):
    """The flat indices of the coordinate arrays ``multi_index`` in an array of shape
    ``dims``; ``mode``: ``'raise'`` (concrete only), ``'wrap'``, ``'clip'`` or
    ``'ignore'``."""
    if len(multi_index) != len(dims):
        raise ValueError(f"len(multi_index)={len(multi_index)} != len(dims)={len(dims)}")
    dims = tuple(_static_int(d, "the dims argument of ravel_multi_index") for d in dims)
    check_arraylike("ravel_multi_index", *multi_index)
    idx = [asarray(i) for i in multi_index]
    if dtype is None:
        dtype = result_type(int, *idx)
    else:
        dtype = _canonical_dtype(dtype, "ravel_multi_index")
    if not dtypes.is_int(dtype):
        raise ValueError(f"dtype={dtype!r} is not an integer type.")
    if math.prod(dims) - 1 > np.iinfo(dtype).max:
        raise ValueError(
            f"jnp.ravel_multi_index: dtype={dtype!r} not large enough to hold "
            f"flattened index for dims={dims!r}. Use the dtype argument to pass "
            "a suitable dtype."
        )
    for i in idx:
        if mode == "raise":
            _concrete(
                i, "ravel_multi_index with mode='raise' (use mode='wrap' or mode='clip' under jit)"
            )
        if not dtypes.is_int(aval_of(i).dtype):
            raise TypeError("only int indices permitted")
    if mode == "raise":
        if any(
            np.any((np.asarray(i) < 0) | (np.asarray(i) >= d))
            for i, d in zip(idx, dims, strict=True)
        ):
            raise ValueError("invalid entry in coordinates array")
    elif mode == "clip":
        idx = [clip(i, 0, d - 1) for i, d in zip(idx, dims, strict=True)]
    elif mode == "wrap":
        idx = [remainder(i, convert(d, aval_of(i).dtype)) for i, d in zip(idx, dims, strict=True)]
    elif mode != "ignore":
        raise ValueError(f"invalid mode={mode!r}. Expected 'raise', 'wrap', 'clip', or 'ignore'.")
    if order == "F":
        strides = np.cumprod((1, *dims[:-1]))
    elif order == "C":
        strides = np.cumprod((1, *dims[1:][::-1]))[::-1]
    else:
        raise ValueError(f"invalid order={order!r}. Expected 'C' or 'F'")
    result = array(0, dtype=dtype)
    for i, s in zip(idx, strides, strict=True):
        result = result + convert(i, dtype) * int(s)
    return result


def unravel_index(indices, shape):
    """The coordinate arrays of the flat ``indices`` in an array of ``shape``; out-of-bounds
    indices are clamped to the first or last position."""
    check_arraylike("unravel_index", indices)
    rest = asarray(indices)
    try:
        shape = list(shape)
    except TypeError:
        shape = [shape]
    if any(np.ndim(s) != 0 for s in shape):
        raise ValueError("unravel_index: shape should be a scalar or 1D sequence.")
    out = [None] * len(shape)
    for i in reversed(range(len(shape))):
        rest, out[i] = divmod_(rest, shape[i])
    oob_pos = rest > 0
    oob_neg = asarray(False) if dtypes.is_unsigned_int(aval_of(rest).dtype) else rest < -1
    return tuple(
        where(oob_pos, s - 1, where(oob_neg, 0, i)) for s, i in zip(shape, out, strict=True)
    )


# --------------------------------------------------------------------------- diagonals


@staged("_diag", static_argnames=("k",))
def diag(v, k=0):
    """The ``k``-th diagonal of the 2-D ``v``, or a 2-D array with the 1-D ``v`` on its
    ``k``-th diagonal."""
    check_arraylike("diag", v)
    v, k = asarray(v), operator.index(k)
    shape = aval_of(v).shape
    if len(shape) == 1:
        zero = convert(0, aval_of(v).dtype, aval_of(v).weak_type)
        n = shape[0] + abs(k)
        v = lax.pad(v, zero, ((max(0, -k), max(0, k), 0),))
        return where(eye(n, k=k, dtype=dtypes.bool_), v[:, None], zero)
    if len(shape) == 2:
        return diagonal(v, offset=k)
    raise ValueError("diag input must be 1d or 2d")


def diagflat(v, k=0):
    """A 2-D array with the flattened ``v`` on its ``k``-th diagonal."""
    check_arraylike("diagflat", v)
    flat = ravel(v)
    n = aval_of(flat).shape[0]
    side = n + abs(k)
    i = arange(0, n)
    at = i + k + i * side if k >= 0 else i + (i - k) * side
    res = IndexUpdateHelper(zeros(side * side, dtype=aval_of(flat).dtype))[at].set(flat)
    return reshape(res, (side, side))


def fill_diagonal(a, val, wrap=False, *, inplace=True):
    """``a`` with its main diagonal set to ``val`` (repeated as needed); needs
    ``inplace=False``."""
    if inplace:
        raise NotImplementedError("JAX arrays are immutable, must use inplace=False")
    if wrap:
        raise NotImplementedError("wrap=True is not implemented, must use wrap=False")
    check_arraylike("fill_diagonal", a, val)
    a, val = asarray(a), asarray(val)
    shape = aval_of(a).shape
    if len(shape) < 2:
        raise ValueError("array must be at least 2-d")
    if len(shape) > 2 and not all(n == shape[0] for n in shape[1:]):
        raise ValueError("All dimensions of input must be of equal length")
    n = min(shape)
    values = val if aval_of(val).ndim == 0 else _tile_to_size(ravel(val), n)
    return IndexUpdateHelper(a)[diag_indices(n, len(shape))].set(values)

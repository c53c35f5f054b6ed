"""Statistics: quantiles (median, quantile, percentile and their NaN-ignoring versions) and
the NaN-aware reductions (nanmean, nanvar, nanstd, nanprod, nancumsum, nancumprod,
nanargmax, nanargmin), with jax.numpy's dtype rules and methods.

A quantile sorts the reduced axes (moved last and flattened into one) and reads the two
neighbouring order statistics with integer indexing, so it is differentiable through the
values it picks. Public signatures are jax.numpy's, positional parameters included.
"""

import builtins
import math
import operator

import numpy as np

from xform import dtypes
from xform.errors import ConcretizationTypeError
from xform.lax import _names as lax
from xform.numpy._contractions import diagonal, dot
from xform.numpy._creation import linspace
from xform.numpy._keys import KeyArrayBase
from xform.numpy._promote import (
    _canonical_dtype,
    _to_inexact,
    asarray,
    aval_of,
    check_arraylike,
    convert,
    promote_dtypes,
    promote_dtypes_inexact,
)
from xform.numpy._reductions import (
    _var_promote_types,
    all,  # noqa: A004  (numpy's name)
    amax,
    amin,
    any,  # noqa: A004
    argmax,
    argmin,
    average,
    cumprod,
    cumsum,
    mean,
    nansum,
    prod,
    reduction_axes,
    sum,  # noqa: A004
)
from xform.numpy._shape import atleast_2d, clip, squeeze
from xform.numpy._shape import stack as stack_
from xform.numpy._sorting import searchsorted
from xform.numpy._staged import staged
from xform.numpy._ufuncs import (
    add,
    const,
    multiply,
    remainder,
    subtract,
    true_divide,
    where_,
)

__all__ = [
    "quantile",
    "nanquantile",
    "percentile",
    "nanpercentile",
    "median",
    "nanmedian",
    "nanmean",
    "nanvar",
    "nanstd",
    "nanprod",
    "nancumsum",
    "nancumprod",
    "nanargmax",
    "nanargmin",
    "nan_to_num",
    "bincount",
    "digitize",
    "histogram_bin_edges",
    "histogram",
    "interp",
    "cov",
    "corrcoef",
    "histogramdd",
    "histogram2d",
]

_METHODS = ("linear", "lower", "higher", "midpoint", "nearest", "inverted_cdf")


# --------------------------------------------------------------------------- quantiles


def _isnan(x):
    return lax.ne(x, x)


def _reduced_last(a, axes):
    """``a`` with the kept axes first and the reduced ``axes`` flattened into a last one."""
    ndim = aval_of(a).ndim
    kept = tuple(d for d in range(ndim) if d not in axes)
    shape = aval_of(a).shape
    a = lax.transpose(a, kept + axes)
    n = math.prod(shape[d] for d in axes)
    return lax.reshape(a, tuple(shape[d] for d in kept) + (n,))


def _take_last(a, index):
    """``a[..., index]`` row by row: ``a`` of shape ``R + (n,)``, ``index`` of shape
    ``Q + R``; the result has shape ``Q + R``."""
    rest = aval_of(a).shape[:-1]
    full = aval_of(index).shape
    q_ndim = len(full) - len(rest)
    rows = tuple(
        lax.broadcasted_iota(dtypes.default_int(), full, q_ndim + d) for d in range(len(rest))
    )
    return a[(*rows, index)]


def _quantile(name, a, q, axis, method, keepdims, squash_nans, weights):
    if method not in _METHODS:
        raise ValueError(
            f"{name}: method can only be 'linear', 'lower', 'higher', "
            f"'midpoint', 'nearest' or 'inverted_cdf'; got {method!r}"
        )
    if weights is None:
        a = promote_dtypes_inexact(asarray(a))[0]
    else:
        check_arraylike(name, weights)
        if dtypes.is_complex(aval_of(asarray(weights)).dtype):
            raise ValueError("Weights cannot be complex types.")
        a, weights = promote_dtypes_inexact(asarray(a), asarray(weights))
    a_dtype = aval_of(a).dtype
    if dtypes.is_complex(a_dtype):
        raise ValueError(
            f"{name} does not support complex input, as the operation is poorly defined."
        )
    q = asarray(q)
    q_shape = aval_of(q).shape
    if len(q_shape) > 1:
        raise ValueError(f"{name}: q must have rank <= 1, got shape {q_shape}")
    shape = aval_of(a).shape
    axes = reduction_axes(name, len(shape), axis)
    if weights is not None:
        weights = _quantile_weights(name, a, weights, axis, axes, method)
        weights = _reduced_last(weights, axes)
    a = _reduced_last(a, axes)
    rest = aval_of(a).shape[:-1]
    n = aval_of(a).shape[-1]
    q_dtype = aval_of(q).dtype
    nan_row = _isnan(a)
    if squash_nans:
        a = where_(nan_row, const(a, np.nan), a)  # NaNs of either sign sort last
        valid = sum(lax.bitwise_not(nan_row), -1, dtype=q_dtype)
    else:
        a = where_(any(nan_row, -1, keepdims=True), const(a, np.nan), a)
        valid = asarray(n, q_dtype)
    if weights is not None:
        a, weights = lax.sort((a, weights), dimension=aval_of(a).ndim - 1, num_keys=1)
    else:
        a = lax.sort(a, dimension=aval_of(a).ndim - 1)
    # Quantiles lead the result: q and the per-row counts broadcast to Q + R.
    out_shape = q_shape + rest
    q_b = lax.broadcast_in_dim(q, out_shape, tuple(range(len(q_shape))))
    valid = lax.broadcast_in_dim(
        valid, out_shape, tuple(range(len(out_shape) - aval_of(valid).ndim, len(out_shape)))
    )
    last = lax.sub(valid, const(valid, 1))
    if method == "inverted_cdf":
        result = _inverted_cdf(a, weights, q_b, valid, last, nan_row, squash_nans)
    else:
        result = _interpolate(a, q_b, last, method)
    if keepdims:
        kept_shape = tuple(1 if d in axes else s for d, s in enumerate(shape))
        result = lax.reshape(result, q_shape + kept_shape)
    return convert(result, a_dtype, False)


def _interpolate(a, q, last, method):
    """The ``q``-th quantile of each sorted row of ``a`` from its two neighbouring order
    statistics (``last``: the index of each row's last valid entry, in ``q``'s dtype)."""
    pos = lax.mul(q, last)
    low, high = lax.floor(pos), lax.ceil(pos)
    high_weight = lax.sub(pos, low)
    low_weight = lax.sub(const(high_weight, 1), high_weight)
    zero = const(low, 0)
    low = lax.max(zero, lax.min(low, last))
    high = lax.max(zero, lax.min(high, last))
    low_value = _take_last(a, lax.convert_element_type(low, dtypes.default_int()))
    high_value = _take_last(a, lax.convert_element_type(high, dtypes.default_int()))
    if method == "linear":
        q_dtype = aval_of(q).dtype
        return lax.add(
            lax.mul(convert(low_value, q_dtype), low_weight),
            lax.mul(convert(high_value, q_dtype), high_weight),
        )
    if method == "lower":
        return low_value
    if method == "higher":
        return high_value
    if method == "nearest":
        return lax.select(lax.le(high_weight, const(high_weight, 0.5)), low_value, high_value)
    return lax.mul(lax.add(low_value, high_value), const(low_value, 0.5))  # midpoint


def _quantile_weights(name, a, weights, axis, axes, method):
    if method != "inverted_cdf":
        raise NotImplementedError(
            f"{method} doesn't support weights. Only method 'inverted_cdf' supports weights."
        )
    shape = aval_of(a).shape
    w_shape = aval_of(weights).shape
    if w_shape != shape:
        if axis is None:
            raise ValueError("Weights shape must match 'a' shape when axis is None.")
        expected = tuple(shape[d] for d in axes)
        if w_shape != expected:
            raise ValueError(f"Weights shape {w_shape} must match reduction axes {expected}")
        weights = lax.broadcast_in_dim(weights, shape, axes)
    return weights


def _inverted_cdf(a, weights, q, valid, last, nan_row, squash_nans):
    """The first order statistic whose cumulative weight reaches ``q`` of the total."""
    if weights is None:
        weights = lax.broadcast_in_dim(const(a, 1), aval_of(a).shape, ())
    zero = const(weights, 0)
    bad = lax.bitwise_or(lax.lt(weights, zero), _isnan(weights))
    # The sort moved NaNs last; their weights were sorted with them.
    clean = where_(lax.bitwise_or(bad, _isnan(a)), zero, weights)
    cum = cumsum(clean, axis=-1)
    total = cum[..., -1]
    q_ndim = aval_of(q).ndim - aval_of(total).ndim
    out_shape = aval_of(q).shape
    target = lax.mul(
        convert(q, aval_of(total).dtype),
        lax.broadcast_in_dim(total, out_shape, tuple(range(q_ndim, len(out_shape)))),
    )
    cum_b = lax.broadcast_in_dim(
        cum, out_shape + aval_of(cum).shape[-1:], tuple(range(q_ndim, len(out_shape) + 1))
    )
    below = lax.lt(cum_b, lax.expand_dims(target, (len(out_shape),)))
    idx = sum(below, -1, dtype=dtypes.default_int())
    limit = convert(last, dtypes.default_int())
    idx = lax.max(const(idx, 0), lax.min(idx, limit))
    result = _take_last(a, idx)
    any_bad = any(bad, -1)
    if squash_nans:
        force_nan = lax.bitwise_or(any_bad, lax.eq(valid[(0,) * q_ndim], const(valid, 0)))
    else:
        force_nan = lax.bitwise_or(any_bad, any(nan_row, -1))
    force_nan = lax.broadcast_in_dim(force_nan, out_shape, tuple(range(q_ndim, len(out_shape))))
    return where_(force_nan, const(result, np.nan), result)


def _check_no_out(name, out, overwrite_input):
    if overwrite_input or out is not None:
        raise ValueError(f"xform.numpy.{name} does not support overwrite_input=True or out != None")


@staged("quantile", static_argnames=("axis", "overwrite_input", "keepdims", "method"))
def quantile(
    a,
    q,
    axis=None,
    out=None,
    overwrite_input=False,
    method="linear",
    keepdims=False,
    *,
    weights=None,
):
    """The ``q``-th quantiles (``q`` in [0, 1], rank 0 or 1) of ``a`` along ``axis``; NaN
    where a slice holds a NaN.

    Args:
      a: the data.
      q: the quantiles to compute, a scalar or a 1-D array; they lead the result's shape.
      axis: None (all axes), an int or a tuple of ints.
      method: ``"linear"``, ``"lower"``, ``"higher"``, ``"midpoint"``, ``"nearest"`` or
        ``"inverted_cdf"`` (the only one that takes ``weights``).
      keepdims: keep the reduced axes with size 1.
      weights: per-element weights, of ``a``'s shape or of the reduced axes' shape.

    Returns:
      An array of ``a``'s inexact dtype.

    Example:
      >>> quantile(asarray([1.0, 2.0, 3.0, 4.0]), 0.5)  # 2.5
    """
    check_arraylike("quantile", a, q)
    _check_no_out("quantile", out, overwrite_input)
    return _quantile("quantile", a, q, axis, method, keepdims, False, weights)


@staged("nanquantile", static_argnames=("axis", "overwrite_input", "keepdims", "method"))
def nanquantile(
    a,
    q,
    axis=None,
    out=None,
    overwrite_input=False,
    method="linear",
    keepdims=False,
    *,
    weights=None,
):
    """:func:`quantile` ignoring NaNs (NaN where a slice is all NaN)."""
    check_arraylike("nanquantile", a, q)
    _check_no_out("nanquantile", out, overwrite_input)
    return _quantile("nanquantile", a, q, axis, method, keepdims, True, weights)


def _percent(name, q):
    q = promote_dtypes_inexact(asarray(q))[0]
    return lax.div(q, const(q, 100))


@staged(
    "percentile", static_argnames=("axis", "overwrite_input", "keepdims", "method", "out_sharding")
)
def percentile(
    a,
    q,
    axis=None,
    out=None,
    overwrite_input=False,
    method="linear",
    keepdims=False,
    *,
    weights=None,
    out_sharding=None,
):
    """:func:`quantile` with ``q`` in percent ([0, 100])."""
    check_arraylike("percentile", a, q)
    if out_sharding is not None:
        raise NotImplementedError("percentile: out_sharding is not supported by xform")
    return quantile(
        a, _percent("percentile", q), axis, out, overwrite_input, method, keepdims, weights=weights
    )


@staged("nanpercentile", static_argnames=("axis", "overwrite_input", "keepdims", "method"))
def nanpercentile(
    a,
    q,
    axis=None,
    out=None,
    overwrite_input=False,
    method="linear",
    keepdims=False,
    *,
    weights=None,
):
    """:func:`nanquantile` with ``q`` in percent ([0, 100])."""
    check_arraylike("nanpercentile", a, q)
    return nanquantile(
        a,
        _percent("nanpercentile", q),
        axis,
        out,
        overwrite_input,
        method,
        keepdims,
        weights=weights,
    )


@staged("median", static_argnames=("axis", "overwrite_input", "keepdims"))
def median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """The median along ``axis`` (the midpoint of the two middle values for even counts)."""
    check_arraylike("median", a)
    return quantile(a, 0.5, axis, out, overwrite_input, "midpoint", keepdims)


@staged("nanmedian", static_argnames=("axis", "overwrite_input", "keepdims"))
def nanmedian(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """:func:`median` ignoring NaNs."""
    check_arraylike("nanmedian", a)
    return nanquantile(a, 0.5, axis, out, overwrite_input, "midpoint", keepdims)


# --------------------------------------------------------------------------- NaN reductions


def _inexact_input(name, a):
    check_arraylike(name, a)
    a = asarray(a)
    return a, dtypes.is_inexact(aval_of(a).dtype)


@staged("nanmean", static_argnames=("axis", "dtype", "keepdims"))
def nanmean(a, axis=None, dtype=None, out=None, keepdims=False, where=None):
    """Mean ignoring NaNs (NaN where a slice is all NaN)."""
    a, inexact = _inexact_input("nanmean", a)
    if not inexact:
        return mean(a, axis, dtype, out, keepdims, where=where)
    _no_out("nanmean", out)
    dtype = _to_inexact_or(aval_of(a).dtype, dtype, "nanmean")
    count = sum(lax.bitwise_not(_isnan(a)), axis, dtype=dtype, keepdims=keepdims, where=where)
    return lax.div(nansum(a, axis, dtype=dtype, keepdims=keepdims, where=where), count)


def _to_inexact_or(a_dtype, dtype, name):
    if dtype is None:
        return a_dtype
    return _canonical_dtype(dtype, name)


def _no_out(name, out):
    if out is not None:
        raise NotImplementedError(f"The 'out' argument to xform.numpy.{name} is not supported.")


@staged("nanvar", static_argnames=("axis", "dtype", "keepdims"))
def nanvar(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, where=None, mean=None):
    """Variance ignoring NaNs, dividing by the count of non-NaNs minus ``ddof``."""
    check_arraylike("nanvar", a)
    _no_out("nanvar", out)
    if dtype is not None:
        dtype = _canonical_dtype(dtype, "nanvar")
    a = asarray(a)
    computation_dtype, dtype = _var_promote_types(aval_of(a).dtype, dtype)
    a = convert(a, computation_dtype, False)
    if mean is None:
        a_mean = nanmean(a, axis, dtype=computation_dtype, keepdims=True, where=where)
    else:
        check_arraylike("nanvar", mean)
        a_mean = convert(asarray(mean), computation_dtype, False)
    nan_mask = _isnan(a)
    # The inner where keeps NaN out of the gradient of the masked entries.
    centered = where_(nan_mask, const(a, 0), lax.sub(*_broadcast_pair(a, a_mean)))
    if dtypes.is_complex(computation_dtype):
        centered = lax.real(lax.mul(centered, lax.conj(centered)))
    else:
        centered = lax.mul(centered, centered)
    count = sum(lax.bitwise_not(nan_mask), axis, keepdims=keepdims, where=where)
    count = lax.sub(count, convert(asarray(ddof), aval_of(count).dtype, False))
    empty = lax.le(count, const(count, 0))
    total = sum(centered, axis, keepdims=keepdims, where=where)
    total = where_(empty, const(total, np.nan), total)
    divisor = convert(where_(empty, const(count, 1), count), aval_of(total).dtype, False)
    return convert(lax.div(total, divisor), dtype, False)


def _broadcast_pair(x, y):
    shape = np.broadcast_shapes(aval_of(x).shape, aval_of(y).shape)
    x = (
        x
        if aval_of(x).shape == shape
        else lax.broadcast_in_dim(x, shape, tuple(range(len(shape) - aval_of(x).ndim, len(shape))))
    )
    y = (
        y
        if aval_of(y).shape == shape
        else lax.broadcast_in_dim(y, shape, tuple(range(len(shape) - aval_of(y).ndim, len(shape))))
    )
    return x, y


@staged("nanstd", static_argnames=("axis", "dtype", "keepdims"))
def nanstd(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, where=None, mean=None):
    """Standard deviation ignoring NaNs."""
    check_arraylike("nanstd", a)
    _no_out("nanstd", out)
    return lax.sqrt(nanvar(a, axis, dtype, None, ddof, keepdims, where, mean))


@staged("nanprod", static_argnames=("axis", "dtype", "keepdims"))
def nanprod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    """Product treating NaNs as one."""
    a, inexact = _inexact_input("nanprod", a)
    if inexact:
        a = where_(_isnan(a), const(a, 1), a)
    return prod(a, axis, dtype, out, keepdims, initial, where)


def _nan_cumulative(name, fn, fill, a, axis, dtype, out):
    a, inexact = _inexact_input(name, a)
    if inexact:
        a = where_(_isnan(a), const(a, fill), a)
    return fn(a, axis, dtype, out)


@staged("nancumsum", static_argnames=("axis", "dtype"))
def nancumsum(a, axis=None, dtype=None, out=None):
    """Cumulative sum treating NaNs as zero."""
    return _nan_cumulative("nancumsum", cumsum, 0, a, axis, dtype, out)


@staged("nancumprod", static_argnames=("axis", "dtype"))
def nancumprod(a, axis=None, dtype=None, out=None):
    """Cumulative product treating NaNs as one."""
    return _nan_cumulative("nancumprod", cumprod, 1, a, axis, dtype, out)


def _nan_arg(name, fn, fill, a, axis, out, keepdims):
    a, inexact = _inexact_input(name, a)
    if not inexact:
        return fn(a, axis, out, keepdims)
    nan_mask = _isnan(a)
    index = fn(where_(nan_mask, const(a, fill), a), axis, out, keepdims)
    return where_(all(nan_mask, axis, keepdims=bool(keepdims)), const(index, -1), index)


@staged("_nanargmax", static_argnames=("axis", "keepdims"))
def nanargmax(a, axis=None, out=None, keepdims=None):
    """Index of the maximum ignoring NaNs (-1 where a slice is all NaN)."""
    return _nan_arg("nanargmax", argmax, -np.inf, a, axis, out, keepdims)


@staged("_nanargmin", static_argnames=("axis", "keepdims"))
def nanargmin(a, axis=None, out=None, keepdims=None):
    """Index of the minimum ignoring NaNs (-1 where a slice is all NaN)."""
    return _nan_arg("nanargmin", argmin, np.inf, a, axis, out, keepdims)


# --------------------------------------------------------------------------- cleaning


@staged("nan_to_num")
def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    """``x`` with NaN replaced by ``nan`` and infinities by ``posinf``/``neginf`` (default:
    the largest finite values of the dtype); complex parts are cleaned separately."""
    del copy
    if isinstance(x, KeyArrayBase):  # a key array: no float elements to clean, as in JAX
        return x
    check_arraylike("nan_to_num", x)
    x = asarray(x)
    dtype = aval_of(x).dtype
    if not dtypes.is_inexact(dtype):
        return x
    if dtypes.is_complex(dtype):
        re = nan_to_num(lax.real(x), nan=nan, posinf=posinf, neginf=neginf)
        im = nan_to_num(lax.imag(x), nan=nan, posinf=posinf, neginf=neginf)
        # No complex primitive: re + i * im is exact here, as both parts are finite.
        return lax.add(convert(re, dtype, False), lax.mul(convert(im, dtype, False), const(x, 1j)))
    info = dtypes.finfo(dtype)
    posinf = info.max if posinf is None else posinf
    neginf = info.min if neginf is None else neginf
    out = where_(_isnan(x), asarray(nan, dtype), x)
    out = where_(lax.eq(out, const(out, np.inf)), asarray(posinf, dtype), out)
    return where_(lax.eq(out, const(out, -np.inf)), asarray(neginf, dtype), out)


# --------------------------------------------------------------------------- binning


def _searchsorted_right(edges, x):
    """The number of sorted 1-D ``edges`` <= each ``x``, by comparing with every edge."""
    return searchsorted(edges, x, side="right", method="compare_all")


def _searchsorted_left(edges, x):
    """The number of edges < each ``x``."""
    return searchsorted(edges, x, side="left", method="compare_all")


def bincount(x, weights=None, minlength=0, *, length=None, out_sharding=None):
    """Counts (or summed ``weights``) of each non-negative integer in 1-D ``x``; the result
    has ``length`` entries, which must be given when ``x`` is traced (under ``jit``).
    Negative values count as 0 and values >= ``length`` are dropped, as in JAX."""
    check_arraylike("bincount", x)
    if out_sharding is not None:
        raise NotImplementedError("bincount: out_sharding is not supported by xform")
    x = asarray(x)
    if aval_of(x).dtype == dtypes.bool_:
        x = convert(x, dtypes.int32, False)
    if not dtypes.is_int(aval_of(x).dtype):
        raise TypeError(f"x argument to bincount must have an integer type; got {aval_of(x).dtype}")
    if aval_of(x).ndim != 1:
        raise ValueError("only 1-dimensional input supported.")
    minlength = _static_int("bincount", "minlength", minlength)
    if length is None:
        try:
            host = np.asarray(x)
        except ConcretizationTypeError as e:
            raise ConcretizationTypeError(
                "bincount: the length of the result is max(x) + 1, which is unknown while "
                "x is traced; pass a static `length` argument."
            ) from e
        length = builtins.max(minlength, host.size and int(builtins.max(0, host.max())) + 1)
    else:
        length = _static_int("bincount", "length", length)
    if weights is None:
        weights = asarray(1, dtypes.default_int())
    else:
        check_arraylike("bincount", weights)
        weights = asarray(weights)
        if aval_of(weights).shape != aval_of(x).shape:
            raise ValueError(
                f"bincount: weights of shape {aval_of(weights).shape} must have "
                f"the shape of x, {aval_of(x).shape}"
            )
    index = lax.max(x, const(x, 0))
    out = lax.broadcast_in_dim(const(weights, 0), (length,), ())
    out = convert(out, aval_of(weights).dtype, False)
    return out.at[index].add(weights, mode="drop")


def _static_int(name, what, value):
    try:
        return operator.index(value)
    except ConcretizationTypeError as e:
        raise ConcretizationTypeError(
            f"{name}: argument '{what}' must be a static integer "
            f"(a Python int, or static under jit): {e}"
        ) from e


@staged("digitize", static_argnames=("right", "method"))
def digitize(x, bins, right=False, *, method=None):
    """The index of the bin of ``bins`` (1-D, increasing or decreasing) holding each ``x``."""
    del method  # every method gives the same indices
    check_arraylike("digitize", x, bins)
    x, bins = asarray(x), asarray(bins)
    right = bool(right)
    if aval_of(bins).ndim != 1:
        raise ValueError(
            f"digitize: bins must be a 1-dimensional array; got bins of shape {aval_of(bins).shape}"
        )
    n = aval_of(bins).shape[0]
    if n == 0:
        return lax.broadcast_in_dim(asarray(0, dtypes.int32), aval_of(x).shape, ())
    x, bins = promote_dtypes(x, bins)
    search = _searchsorted_left if right else _searchsorted_right
    increasing = search(bins, x)
    decreasing = lax.sub(asarray(n, dtypes.int32), search(lax.rev(bins, (0,)), x))
    return where_(lax.ge(bins[-1], bins[0]), increasing, decreasing)


def histogram_bin_edges(a, bins=10, range=None, weights=None):  # noqa: A002  (numpy's name)
    """The edges of a histogram's bins: ``bins`` itself if 1-D, else ``bins + 1`` evenly
    spaced edges over ``range`` (default: the data's min and max)."""
    del weights
    if isinstance(bins, str):
        raise NotImplementedError("string values for `bins` not implemented.")
    check_arraylike("histogram_bin_edges", a, bins)
    a = asarray(a)
    dtype = _to_inexact(aval_of(a).dtype)
    if np.ndim(bins) == 1:
        return asarray(bins, dtype)
    bins = _static_int("histogram_bin_edges", "bins", bins)
    if range is None:
        range = (amin(a), amax(a))  # noqa: A001
    lo_hi = asarray(
        stack_([asarray(r) for r in range]) if isinstance(range, (tuple, list)) else range, dtype
    )
    if aval_of(lo_hi).shape != (2,):
        raise ValueError(f"`range` must be either None or a sequence of scalars, got {range}")
    lo, hi = lo_hi[0], lo_hi[1]
    flat = lax.eq(lo, hi)
    lo = where_(flat, lax.sub(lo, const(lo, 0.5)), lo)
    hi = where_(flat, lax.add(hi, const(hi, 0.5)), hi)
    return linspace(lo, hi, bins + 1, dtype=dtype)


def histogram(a, bins=10, range=None, weights=None, density=None):  # noqa: A002
    """Counts (or summed ``weights``) of ``a`` in each bin, and the bin edges; the last bin
    includes its right edge."""
    check_arraylike("histogram", a, bins)
    if weights is None:
        a = promote_dtypes_inexact(asarray(a))[0]
        weights = lax.broadcast_in_dim(const(a, 1), aval_of(a).shape, ())
    else:
        check_arraylike("histogram", weights)
        if np.shape(a) != np.shape(weights):
            raise ValueError("weights should have the same shape as a.")
        a, weights = promote_dtypes_inexact(asarray(a), asarray(weights))
    edges = histogram_bin_edges(a, bins, range, weights)
    n = aval_of(edges).shape[0]
    index = _searchsorted_right(edges, a)
    index = where_(lax.eq(a, edges[-1]), asarray(n - 1, dtypes.int32), index)
    counts = lax.broadcast_in_dim(const(weights, 0), (n,), ())
    counts = counts.at[index].add(weights)[1:]
    if density:
        widths = lax.sub(edges[1:], edges[:-1])
        counts = lax.div(lax.div(counts, widths), sum(counts))
    return counts, edges


# --------------------------------------------------------------------------- interpolation


def interp(x, xp, fp, left=None, right=None, period=None):
    """Piecewise-linear interpolation of the points ``(xp, fp)`` (``xp`` increasing) at
    ``x``; ``left``/``right`` give the values outside (``'extrapolate'`` extends the end
    segments), ``period`` makes ``xp`` periodic."""
    check_arraylike("interp", x, xp, fp)
    if np.shape(xp) != np.shape(fp) or np.ndim(xp) != 1:
        raise ValueError("xp and fp must be one-dimensional arrays of equal size")
    x, xp = promote_dtypes_inexact(asarray(x), asarray(xp))
    fp = promote_dtypes_inexact(asarray(fp))[0]
    extrapolate = []
    for what, value in (("left", left), ("right", right)):
        if isinstance(value, str) and value != "extrapolate":
            raise ValueError(
                f"the only valid string value of `{what}` is 'extrapolate', but got: {value!r}"
            )
        extrapolate.append(isinstance(value, str))
    if dtypes.is_complex(aval_of(x).dtype):
        raise ValueError("xform.numpy.interp: complex x values not supported.")
    if period is not None:
        if np.ndim(period) != 0:
            raise ValueError(f"period must be a scalar; got {period}")
        period = lax.abs(convert(asarray(period), aval_of(x).dtype, False))
        x, xp = remainder(x, period), remainder(xp, period)
        xp, fp = lax.sort((xp, fp), dimension=0, num_keys=1)
        xp = lax.concatenate([lax.sub(xp[-1:], period), xp, lax.add(xp[:1], period)], 0)
        fp = lax.concatenate([fp[-1:], fp, fp[:1]], 0)
    n = aval_of(xp).shape[0]
    i = lax.clamp(
        asarray(1, dtypes.int32), _searchsorted_right(xp, x), asarray(n - 1, dtypes.int32)
    )
    i0 = lax.sub(i, const(i, 1))
    df = lax.sub(fp[i], fp[i0])
    dx = lax.sub(xp[i], xp[i0])
    delta = lax.sub(x, xp[i0])
    # Segments of (near) zero width give their left value, without a NaN in the gradient.
    tiny = np.spacing(dtypes.finfo(aval_of(xp).dtype).eps)
    dx0 = lax.le(lax.abs(dx), const(dx, tiny))
    slope = lax.div(delta, where_(dx0, const(dx, 1), dx))
    f = where_(dx0, fp[i0], add(fp[i0], multiply(slope, df)))
    if period is None:
        if not extrapolate[0]:
            f = where_(lax.lt(x, xp[0]), fp[0] if left is None else left, f)
        if not extrapolate[1]:
            f = where_(lax.gt(x, xp[-1]), fp[-1] if right is None else right, f)
    return f


# --------------------------------------------------------------------------- covariance


def _sample_weights(name, w, n_samples, integer):
    check_arraylike("cov", w)
    w = asarray(w)
    if aval_of(w).ndim > 1:
        raise RuntimeError(f"cannot handle multidimensional {name}")
    if aval_of(w).shape[0] != n_samples:
        raise RuntimeError(f"incompatible numbers of samples and {name}")
    if integer and not dtypes.is_int(aval_of(w).dtype):
        raise TypeError(f"{name} must be integer.")
    return lax.abs(w)  # NumPy rejects negative weights; JAX takes their magnitude


@staged("cov", static_argnames=("rowvar", "bias", "ddof", "dtype"))
def cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None, dtype=None):
    """The covariance matrix of the variables in the rows of ``m`` (columns if not
    ``rowvar``), with ``y``'s variables appended; a scalar for a single variable."""
    check_arraylike("cov", m) if y is None else check_arraylike("cov", m, y)
    if y is not None:
        m, y = promote_dtypes_inexact(asarray(m), asarray(y))
        if aval_of(y).ndim > 2:
            raise ValueError("y has more than 2 dimensions")
    else:
        m = promote_dtypes_inexact(asarray(m))[0]
    if aval_of(m).ndim > 2:
        raise ValueError("m has more than 2 dimensions")
    if dtype is not None and not dtypes.is_inexact(_canonical_dtype(dtype, "cov")):
        raise ValueError(f"cov: dtype must be a subclass of float or complex; got {dtype=}")
    x = atleast_2d(m)
    if not rowvar and aval_of(m).ndim != 1:
        x = lax.transpose(x, (1, 0))
    if aval_of(x).shape[0] == 0:
        return lax.broadcast_in_dim(const(x, 0), (0, 0), ())
    if y is not None:
        y2 = atleast_2d(y)
        if not rowvar and aval_of(y2).shape[0] != 1:
            y2 = lax.transpose(y2, (1, 0))
        x = lax.concatenate([x, y2], 0)
    n_vars, n_samples = aval_of(x).shape
    if n_samples == 0:
        shape = () if n_vars == 1 else (n_vars, n_vars)
        return lax.broadcast_in_dim(const(x, np.nan), shape, ())
    if ddof is None:
        ddof = 1 if not bias else 0
    w = None
    if fweights is not None:
        w = _sample_weights("fweights", fweights, n_samples, True)
    if aweights is not None:
        aweights = _sample_weights("aweights", aweights, n_samples, False)
        w = aweights if w is None else multiply(w, aweights)
    if dtype is not None:
        x = convert(x, _canonical_dtype(dtype, "cov"), False)
        w = None if w is None else convert(w, _canonical_dtype(dtype, "cov"), False)
    avg, w_sum = average(x, axis=1, weights=w, returned=True)
    w_sum = w_sum[0]
    if w is None:
        f = n_samples - ddof
    elif ddof == 0:
        f = w_sum
    elif aweights is None:
        f = subtract(w_sum, ddof)
    else:
        f = subtract(w_sum, true_divide(multiply(ddof, sum(multiply(w, aweights))), w_sum))
    x = subtract(x, avg[:, None])
    x_t = lax.transpose(x if w is None else multiply(x, w[None, :]), (1, 0))
    c = true_divide(dot(x, lax.conj(x_t) if dtypes.is_complex(aval_of(x_t).dtype) else x_t), f)
    return squeeze(c)


@staged("corrcoef", static_argnames=("rowvar", "dtype"))
def corrcoef(x, y=None, rowvar=True, dtype=None):
    """Pearson correlation coefficients: :func:`cov` normalised by the standard deviations,
    clipped to [-1, 1]."""
    check_arraylike("corrcoef", x)
    if dtype is not None and not dtypes.is_inexact(_canonical_dtype(dtype, "corrcoef")):
        raise ValueError(f"corrcoef: dtype must be a subclass of float or complex; got {dtype=}")
    c = cov(x, y, rowvar, dtype=dtype)
    if aval_of(c).ndim == 0:
        return true_divide(c, c)  # NaN for 0/0 or inf/inf, else 1
    d = diagonal(c)
    stddev = convert(
        lax.sqrt(lax.real(d) if dtypes.is_complex(aval_of(d).dtype) else d), aval_of(c).dtype, False
    )
    c = true_divide(true_divide(c, stddev[:, None]), stddev[None, :])
    if dtypes.is_complex(aval_of(c).dtype):
        re = clip(lax.real(c), -1, 1)
        im = clip(lax.imag(c), -1, 1)
        return lax.add(
            convert(re, aval_of(c).dtype, False),
            lax.mul(convert(im, aval_of(c).dtype, False), const(c, 1j)),
        )
    return clip(c, -1, 1)


def histogramdd(sample, bins=10, range=None, weights=None, density=None):  # noqa: A002
    """The ``D``-dimensional histogram of ``N`` points ``sample`` (shape ``(N, D)``): the
    counts (or summed ``weights``) and the list of each dimension's edges."""
    check_arraylike("histogramdd", sample)
    if weights is None:
        sample = promote_dtypes_inexact(asarray(sample))[0]
    else:
        check_arraylike("histogramdd", weights)
        if np.shape(weights) != np.shape(sample)[:1]:
            raise ValueError("should have one weight for each sample.")
        sample, weights = promote_dtypes_inexact(asarray(sample), asarray(weights))
    n, d = aval_of(sample).shape
    if range is not None and (
        len(range) != d or builtins.any(r is not None and np.shape(r)[0] != 2 for r in range)
    ):
        raise ValueError(
            f"For sample.shape={(n, d)}, range must be a sequence of {d} pairs "
            f"or Nones; got {range=}"
        )
    if isinstance(bins, (list, tuple)) or np.ndim(bins) == 1:
        per_dim = list(bins)
        if len(per_dim) != d:
            raise ValueError("should be a bin for each dimension.")
    else:
        per_dim = [bins] * d
    flat_index = asarray(0, dtypes.int32)
    edges_by_dim, sizes = [], []
    for i in builtins.range(d):
        column = sample[:, i]
        edges = histogram_bin_edges(column, per_dim[i], None if range is None else range[i])
        index = _searchsorted_right(edges, column)
        index = where_(lax.eq(column, edges[-1]), lax.sub(index, const(index, 1)), index)
        size = aval_of(edges).shape[0] + 1  # with an outlier bin at each end
        flat_index = lax.add(lax.mul(flat_index, const(flat_index, size)), index)
        edges_by_dim.append(edges)
        sizes.append(size)
    hist = bincount(flat_index, weights, length=math.prod(sizes))
    hist = lax.reshape(hist, tuple(sizes))[(slice(1, -1),) * d]
    if density:
        hist = convert(hist, aval_of(sample).dtype, False)
        hist = lax.div(hist, sum(hist))
        for i, edges in enumerate(edges_by_dim):
            widths = lax.sub(edges[1:], edges[:-1])
            hist = lax.div(hist, lax.broadcast_in_dim(widths, aval_of(hist).shape, (i,)))
    return hist, edges_by_dim


def histogram2d(x, y, bins=10, range=None, weights=None, density=None):  # noqa: A002
    """The 2-D histogram of the points ``(x, y)``: counts, x edges and y edges."""
    check_arraylike("histogram2d", x, y)
    try:
        n = len(bins)
    except TypeError:
        n = 1
    if n not in (1, 2):
        bins = [asarray(bins), asarray(bins)]
    x, y = promote_dtypes(asarray(x), asarray(y))
    sample = lax.transpose(lax.concatenate([x[None], y[None]], 0), (1, 0))
    hist, edges = histogramdd(sample, bins, range, weights, density)
    return hist, edges[0], edges[1]

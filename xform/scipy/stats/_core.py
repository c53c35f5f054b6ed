"""``mode``, ``rankdata`` and ``sem``: the summary statistics of ``jax.scipy.stats``."""

import math
from typing import NamedTuple

import numpy as np

from xform import dtypes, lax
from xform import numpy as xnp
from xform.api.batching import vmap
from xform.numpy._promote import check_arraylike, promote_args_inexact

__all__ = ["ModeResult", "mode", "rankdata", "sem"]

_NAN_POLICIES = ("propagate", "omit", "raise")


def _check_nan_policy(name, nan_policy):
    """Only ``"propagate"`` is implemented: the others need to know the data's NaNs up front."""
    if nan_policy not in _NAN_POLICIES:
        raise ValueError(
            f"{name}: illegal nan_policy value {nan_policy!r}; expected one of "
            "{'propagate', 'omit', 'raise'}"
        )
    if nan_policy == "omit":
        raise NotImplementedError(f"{name}: nan_policy='omit' is not implemented")
    if nan_policy == "raise":
        raise NotImplementedError(
            f"{name}: nan_policy='raise' cannot be compiled, as it needs to know whether the "
            "data holds NaNs; check for NaNs before calling it"
        )


class ModeResult(NamedTuple):
    """The result of ``mode``: the most common values and how often each occurs."""

    mode: object
    count: object


def _column_mode(column):
    """The smallest most common value of a 1-D ``column`` and its count."""
    if column.size == 0:
        nan = xnp.array(np.nan, dtype=dtypes.default_float())
        return nan, xnp.array(0, dtype=dtypes.default_float())
    values, counts = xnp.unique(column, return_counts=True, size=column.size)
    return values[xnp.argmax(counts)], xnp.max(counts)


def mode(a, axis=0, nan_policy="propagate", keepdims=False):
    """The most common value along ``axis`` (the smallest on a tie) and its count, as
    ``ModeResult(mode, count)``; ``axis=None`` looks at the flattened array."""
    check_arraylike("mode", a)
    x = xnp.atleast_1d(a)
    _check_nan_policy("mode", nan_policy)
    if axis is not None:
        if not -x.ndim <= axis < x.ndim:
            raise ValueError(f"mode: axis {axis} is out of bounds for an array of shape {x.shape}")
        axis %= x.ndim
    if axis is None:
        out_shape = (1,) * x.ndim if keepdims else ()
        x, axis = xnp.ravel(x), 0
    elif keepdims:
        out_shape = tuple(1 if i == axis else s for i, s in enumerate(x.shape))
    else:
        out_shape = tuple(s for i, s in enumerate(x.shape) if i != axis)
    x = xnp.moveaxis(x, axis, 0)
    x = xnp.reshape(x, (x.shape[0], math.prod(x.shape[1:])))
    values, counts = vmap(_column_mode, in_axes=1)(x)
    return ModeResult(xnp.reshape(values, out_shape), xnp.reshape(counts, out_shape))


def _ranks(a, method, out_dtype):
    """The ranks of the flat, NaN-free ``a`` by ``method``."""
    ordered, order = lax.sort_key_val(a, xnp.arange(a.size))
    # inverse[i] is the position of a[i] in the sorted order.
    _, inverse = lax.sort_key_val(order, xnp.arange(a.size))
    if method == "ordinal":
        return (inverse + 1).astype(out_dtype)
    starts = xnp.concatenate([xnp.array([True]), ordered[1:] != ordered[:-1]])
    dense = xnp.cumsum(starts)[inverse]
    if method == "dense":
        return dense.astype(out_dtype)
    # bounds[j] is where the (j+1)-th group of equal values starts; a.size past the last.
    bounds = xnp.nonzero(starts, size=a.size + 1, fill_value=a.size)[0].astype(out_dtype)
    if method == "max":
        return bounds[dense]
    if method == "min":
        return bounds[dense - 1] + 1
    return 0.5 * (bounds[dense] + bounds[dense - 1] + 1)


def rankdata(a, method="average", *, axis=None, nan_policy="propagate"):
    """The ranks (from 1) of the values of ``a``, ties by ``method``: "average", "min", "max",
    "dense" or "ordinal"; flattened unless ``axis`` is given; all NaN if ``a`` holds a NaN."""
    check_arraylike("rankdata", a)
    _check_nan_policy("rankdata", nan_policy)
    if method not in ("average", "min", "max", "dense", "ordinal"):
        raise ValueError(
            f"rankdata: unknown method {method!r}; expected 'average', 'min', "
            "'max', 'dense' or 'ordinal'"
        )
    if axis is not None:
        return xnp.apply_along_axis(rankdata, axis, a, method)
    a = xnp.ravel(a)
    out_dtype = dtypes.default_float()
    return lax.cond(
        xnp.any(xnp.isnan(a)),
        lambda a: xnp.full_like(a, np.nan, out_dtype),
        lambda a: _ranks(a, method, out_dtype),
        a,
    )


def sem(a, axis=0, ddof=1, nan_policy="propagate", *, keepdims=False):
    """The standard error of the mean along ``axis``: ``std(a, ddof) / sqrt(n)``; with
    ``nan_policy="omit"`` NaNs are left out of both."""
    (b,) = promote_args_inexact("sem", a)
    if nan_policy == "propagate":
        size = b.size if axis is None else b.shape[axis]
        std = xnp.std(b, axis, ddof=ddof, keepdims=keepdims)
        return std / xnp.sqrt(size).astype(b.dtype)
    if nan_policy == "omit":
        count = xnp.sum(~xnp.isnan(b), axis, keepdims=keepdims)
        std = xnp.nanstd(b, axis, ddof=ddof, keepdims=keepdims)
        return std / xnp.sqrt(count).astype(b.dtype)
    raise ValueError(f"sem: nan_policy={nan_policy!r} is not supported; use 'propagate' or 'omit'")

"""Reductions (sum, prod, max, min, all, any, mean, var, std, argmax, argmin) and cumulative
reductions, with jax.numpy's dtype rules: sums and products of small integers accumulate in
the default integer type, means of integers are floats, half floats accumulate in float32.

Public signatures are jax.numpy's, positional parameters included (hence the PLR0917 noqas).
"""

import builtins
import math
import operator

import numpy as np

from xform import config, core, dtypes
from xform.lax import _names as lax
from xform.numpy import _ufuncs
from xform.numpy._promote import (
    _canonical_dtype,
    _to_inexact,
    asarray,
    aval_of,
    broadcast_to_shape,
    check_arraylike,
    convert,
    promote_args,
    promote_dtypes_inexact,
    promote_dtypes_numeric,
)
from xform.numpy._staged import staged
from xform.numpy._ufuncs import const, isclose, multiply, where_

__all__ = [
    "sum",
    "prod",
    "max",
    "min",
    "amax",
    "amin",
    "all",
    "any",
    "mean",
    "var",
    "std",
    "argmax",
    "argmin",
    "cumsum",
    "cumprod",
    "cummax",
    "cummin",
    "cumulative_sum",
    "nansum",
    "nanmax",
    "nanmin",
    "ptp",
    "count_nonzero",
    "allclose",
    "average",
]


def canonicalize_axis(axis, ndim, name):
    """``axis`` as a non-negative int; ``ValueError`` (NumPy's AxisError) when out of range."""
    try:
        axis = int(axis.__index__())
    except AttributeError:
        raise TypeError(f"{name}: axis must be an integer, got {axis!r}") from None
    if not -ndim <= axis < ndim:
        raise np.exceptions.AxisError(
            f"{name}: axis {axis} is out of bounds for array of dimension {ndim}"
        )
    return axis + ndim if axis < 0 else axis


def reduction_axes(name, ndim, axis):
    """``axis`` (None, int, tuple) as a sorted tuple of distinct non-negative ints."""
    if axis is None:
        return tuple(range(ndim))
    sequence = isinstance(axis, (tuple, list, range)) or (
        isinstance(axis, np.ndarray) and axis.ndim
    )
    axes = tuple(axis) if sequence else (axis,)
    canon = tuple(canonicalize_axis(a, ndim, name) for a in axes)
    if len(set(canon)) != len(canon):
        raise ValueError(f"{name}: duplicate value in 'axis': {axis}")
    return canon


def _promote_integer_dtype(dtype):
    # jax.numpy accumulates small integers in the default integer type (NumPy: 64-bit).
    if dtype.kind in "fc":
        return dtype
    if dtype == dtypes.bool_:
        return dtypes.default_int()
    if dtypes.is_unsigned_int(dtype):
        default = dtypes.uint64 if config.x64_enabled() else dtypes.uint32
        return default if dtype.itemsize < default.itemsize else dtype
    if dtypes.is_int(dtype):
        default = dtypes.default_int()
        return default if dtype.itemsize < default.itemsize else dtype
    return dtype


def _upcast_f16(dtype):
    return dtypes.float32 if dtype in (dtypes.float16, dtypes.bfloat16) else dtype


_IDENTITY = {
    "sum": 0,
    "prod": 1,
    "all": True,
    "any": False,
    "bitwise_or": 0,
    "bitwise_xor": 0,
    "logical_xor": False,
}


def _identity(name, dtype):
    if name in _IDENTITY:
        return _IDENTITY[name]
    if name == "bitwise_and":  # all bits set
        return (
            True
            if dtype == dtypes.bool_
            else -1
            if dtypes.is_signed_int(dtype)
            else np.iinfo(dtype).max
        )
    big = name == "min"
    if dtype == dtypes.bool_:
        return big
    if dtypes.is_int(dtype):
        info = np.iinfo(dtype)
        return info.max if big else info.min
    return np.inf if big else -np.inf


def _reduction(
    a,
    name,
    lax_reduce,
    *,
    axis,
    dtype,
    keepdims,
    initial,
    where,
    bool_reduce=None,
    preproc=None,
    promote_integers=False,
    upcast_f16=False,
    has_identity=True,
):
    check_arraylike(name, a)
    a = asarray(a)
    if preproc is not None:
        a = preproc(a)
    aval = aval_of(a)
    axes = reduction_axes(name, aval.ndim, axis)
    if initial is None and not has_identity:
        if builtins.any(aval.shape[d] == 0 for d in axes):
            raise ValueError(f"zero-size array to reduction operation {name} which has no identity")
        if where is not None:
            raise ValueError(
                f"reduction operation {name} does not have an identity, so to use "
                "a where mask one has to specify 'initial'"
            )
    if dtype is None:
        result_dtype = _promote_integer_dtype(aval.dtype) if promote_integers else aval.dtype
    else:
        result_dtype = _canonical_dtype(dtype, name)
    computation_dtype = (
        _upcast_f16(result_dtype)
        if (upcast_f16 and dtypes.is_inexact(result_dtype))
        else result_dtype
    )
    a = lax.convert_element_type(a, computation_dtype)
    reduce = bool_reduce if (computation_dtype == dtypes.bool_ and bool_reduce) else lax_reduce
    if where is not None:
        mask = broadcast_to_shape(_where_mask(name, where), aval.shape)
        fill = (
            lax.broadcast_in_dim(const(a, _identity(name, computation_dtype)), aval.shape, ())
            if aval.shape
            else const(a, _identity(name, computation_dtype))
        )
        a = lax.select(mask, a, fill)
    result = reduce(a, axes) if axes else a
    if initial is not None:
        init = convert(asarray(initial), computation_dtype, False)
        if aval_of(init).shape:
            raise ValueError(
                f"initial value must be a scalar. Got array of shape {aval_of(init).shape}"
            )
        combine = {
            "sum": lax.add,
            "prod": lax.mul,
            "max": lax.max,
            "min": lax.min,
            "all": lax.bitwise_and,
            "any": lax.bitwise_or,
            "bitwise_and": lax.bitwise_and,
            "bitwise_or": lax.bitwise_or,
            "bitwise_xor": lax.bitwise_xor,
            "logical_xor": lax.bitwise_xor,
        }[name]
        if computation_dtype == dtypes.bool_ and name in ("sum", "prod"):
            combine = lax.bitwise_or if name == "sum" else lax.bitwise_and
        result = combine(init, result)
    if keepdims:
        result = lax.expand_dims(result, axes)
    return convert(result, result_dtype, False)


def _cast_to_numeric(a):
    return promote_dtypes_numeric(a)[0]


def _cast_to_bool(a):
    return a if aval_of(a).dtype == dtypes.bool_ else lax.ne(a, const(a, 0))


def sum(  # noqa: A001
    a,
    axis=None,
    dtype=None,
    out=None,
    keepdims=False,
    initial=None,
    where=None,
    promote_integers=True,
):
    """Sum over ``axis`` (None: all axes); bools and small ints sum in the default int."""
    _no_out("sum", out)
    return _reduction(
        a,
        "sum",
        lax.reduce_sum,
        axis=axis,
        dtype=dtype,
        keepdims=keepdims,
        initial=initial,
        where=where,
        bool_reduce=lax.reduce_or,
        preproc=_cast_to_numeric,
        promote_integers=promote_integers,
        upcast_f16=dtype is None,
    )


def prod(
    a,
    axis=None,
    dtype=None,
    out=None,
    keepdims=False,
    initial=None,
    where=None,
    promote_integers=True,
):
    """Product over ``axis``."""
    _no_out("prod", out)
    return _reduction(
        a,
        "prod",
        lax.reduce_prod,
        axis=axis,
        dtype=dtype,
        keepdims=keepdims,
        initial=initial,
        where=where,
        bool_reduce=lax.reduce_and,
        preproc=_cast_to_numeric,
        promote_integers=promote_integers,
        upcast_f16=dtype is None,
    )


def max(a, axis=None, out=None, keepdims=False, initial=None, where=None):  # noqa: A001  (numpy's name)
    """Maximum over ``axis``."""
    _no_out("max", out)
    return _reduction(
        a,
        "max",
        lax.reduce_max,
        axis=axis,
        dtype=None,
        keepdims=keepdims,
        initial=initial,
        where=where,
        has_identity=False,
    )


def min(a, axis=None, out=None, keepdims=False, initial=None, where=None):  # noqa: A001  (numpy's name)
    """Minimum over ``axis``."""
    _no_out("min", out)
    return _reduction(
        a,
        "min",
        lax.reduce_min,
        axis=axis,
        dtype=None,
        keepdims=keepdims,
        initial=initial,
        where=where,
        has_identity=False,
    )


amax, amin = max, min


def all(a, axis=None, out=None, keepdims=False, *, where=None):  # noqa: A001
    """True if every element along ``axis`` is true."""
    _no_out("all", out)
    return _reduction(
        a,
        "all",
        lax.reduce_and,
        axis=axis,
        dtype=None,
        keepdims=keepdims,
        initial=None,
        where=where,
        preproc=_cast_to_bool,
    )


def any(a, axis=None, out=None, keepdims=False, *, where=None):  # noqa: A001
    """True if some element along ``axis`` is true."""
    _no_out("any", out)
    return _reduction(
        a,
        "any",
        lax.reduce_or,
        axis=axis,
        dtype=None,
        keepdims=keepdims,
        initial=None,
        where=where,
        preproc=_cast_to_bool,
    )


def _no_out(name, out):
    if out is not None:
        raise NotImplementedError(f"The 'out' argument to xform.numpy.{name} is not supported.")


def _where_mask(name, where):
    """The ``where`` argument of a reduction: a boolean array (a Python bool too), as JAX."""
    check_arraylike(name, where)
    mask = asarray(where)
    if aval_of(mask).dtype != dtypes.bool_:
        raise ValueError(
            f"jnp.{name}: where must be None or a boolean array; got "
            f"where.dtype={aval_of(mask).dtype!r}."
        )
    return mask


def _count(a, axes, keepdims, where, dtype, name):
    aval = aval_of(a)
    if where is None:
        count = math.prod(aval.shape[i] for i in axes)
        if type(count) is int:  # a NumPy scalar: eager division takes it as a cached constant
            return np.array(count, dtype)
        return asarray(core.dimension_as_value(count), dtype)
    mask = broadcast_to_shape(_where_mask(name, where), aval.shape)
    return sum(mask, axes, dtype=dtype, keepdims=keepdims)


def mean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=None):
    """Arithmetic mean over ``axis``; integer inputs give floats."""
    _no_out("mean", out)
    check_arraylike("mean", a)
    a = asarray(a)
    aval = aval_of(a)
    if dtype is None:
        result_dtype = _to_inexact(aval.dtype)
    else:
        result_dtype = _canonical_dtype(dtype, "mean")
    computation_dtype = (
        _upcast_f16(result_dtype) if dtypes.is_inexact(result_dtype) else result_dtype
    )
    axes = reduction_axes("mean", aval.ndim, axis)
    normalizer = _count(a, axes, keepdims, where, computation_dtype, "mean")
    total = sum(a, axes, dtype=computation_dtype, keepdims=keepdims, where=where)
    return convert(lax.div(total, normalizer), result_dtype, False)


_mean = mean  # var's ``mean`` parameter shadows the function


def _var_promote_types(a_dtype, dtype):
    if dtype is not None:
        if not dtypes.is_complex(dtype) and dtypes.is_complex(a_dtype):
            raise ValueError(
                "var: a real dtype for the variance of complex values is not supported"
            )
        computation_dtype = dtype
    elif not dtypes.is_inexact(a_dtype):
        dtype = computation_dtype = _to_inexact(a_dtype)
    else:
        dtype = np.array(0, a_dtype).real.dtype
        computation_dtype = a_dtype
    return _upcast_f16(computation_dtype), np.dtype(dtype)


def _optional_axes(axis):
    """``axis`` as a static argument: None, an int or a tuple of ints (as JAX's)."""
    if axis is None:
        return None
    try:
        return operator.index(axis)
    except TypeError:
        return tuple(operator.index(i) for i in axis)


def _correction(name, ddof, correction):
    if correction is None:
        return ddof
    if ddof != 0:
        raise ValueError(f"{name}: ddof and correction can't be provided simultaneously.")
    return correction


def var(
    a,
    axis=None,
    dtype=None,
    out=None,
    ddof=0,
    keepdims=False,
    *,
    where=None,
    mean=None,
    correction=None,
):
    """Variance over ``axis``, dividing by ``N - ddof``; ``mean``, when given, is used as the
    mean (it must broadcast against ``a``, e.g. computed with ``keepdims=True``)."""
    correction = _correction("var", ddof, correction)
    check_arraylike("var", a)
    return _var(
        asarray(a),
        axis=_optional_axes(axis),
        dtype=dtype,
        out=out,
        correction=correction,
        keepdims=keepdims,
        where=where,
        a_mean=mean,
    )


@staged("_var", static_argnames=("axis", "dtype", "keepdims"))
def _var(
    a, *, axis=None, dtype=None, out=None, correction=0, keepdims=False, where=None, a_mean=None
):
    _no_out("var", out)
    if dtype is not None:
        dtype = _canonical_dtype(dtype, "var")
    computation_dtype, dtype = _var_promote_types(aval_of(a).dtype, dtype)
    a = convert(a, computation_dtype, False)
    axes = reduction_axes("var", aval_of(a).ndim, axis)
    if a_mean is None:
        a_mean = _mean(a, axes, dtype=computation_dtype, keepdims=True, where=where)
    else:
        check_arraylike("var", a_mean)
        a_mean = convert(asarray(a_mean), computation_dtype, False)
    centered = lax.sub(a, broadcast_to_shape(a_mean, aval_of(a).shape))
    if dtypes.is_complex(computation_dtype):
        centered = lax.real(lax.mul(centered, lax.conj(centered)))
        computation_dtype = aval_of(centered).dtype
    else:
        centered = lax.integer_pow(centered, 2)
    normalizer = _count(a, axes, keepdims, where, computation_dtype, "var")
    normalizer = lax.sub(normalizer, asarray(correction, computation_dtype))
    result = sum(centered, axes, dtype=computation_dtype, keepdims=keepdims, where=where)
    result = convert(lax.div(result, normalizer), dtype, False)
    return where_(lax.gt(normalizer, const(normalizer, 0)), result, np.nan)


def std(
    a,
    axis=None,
    dtype=None,
    out=None,
    ddof=0,
    keepdims=False,
    *,
    where=None,
    mean=None,
    correction=None,
):
    """Standard deviation over ``axis``; ``mean`` as in ``var``."""
    correction = _correction("std", ddof, correction)
    check_arraylike("std", a)
    return _std(
        asarray(a),
        axis=_optional_axes(axis),
        dtype=dtype,
        out=out,
        correction=correction,
        keepdims=keepdims,
        where=where,
        mean=mean,
    )


@staged("_std", static_argnames=("axis", "dtype", "keepdims"))
def _std(
    a, *, axis=None, dtype=None, out=None, correction=0, keepdims=False, where=None, mean=None
):
    _no_out("std", out)
    if dtype is not None:
        dtype = _canonical_dtype(dtype, "std")
        if not dtypes.is_inexact(dtype):
            raise ValueError(f"dtype argument to std must be inexact; got {dtype}")
    return lax.sqrt(
        var(a, axis, dtype, keepdims=keepdims, where=where, mean=mean, correction=correction)
    )


def _arg_reduction(name, lax_fn, a, *, axis, out, keepdims):
    _no_out(name, out)
    check_arraylike(name, a)
    a = asarray(a)
    if axis is None:
        dims = tuple(range(aval_of(a).ndim))
        a = lax.reshape(a, (aval_of(a).size,))
        axis = 0
    else:
        axis = canonicalize_axis(axis, aval_of(a).ndim, name)
        dims = (axis,)
    if aval_of(a).shape[axis] == 0:
        raise ValueError(f"attempt to get {name} of an empty sequence")
    result = lax_fn(a, axis, dtypes.default_int())
    return lax.expand_dims(result, dims) if keepdims else result


def argmax(a, axis=None, out=None, keepdims=None):
    """Index of the maximum along ``axis`` (the first one on ties; NaN counts as maximal)."""
    return _arg_reduction("argmax", lax.argmax, a, axis=axis, out=out, keepdims=keepdims)


def argmin(a, axis=None, out=None, keepdims=None):
    """Index of the minimum along ``axis``."""
    return _arg_reduction("argmin", lax.argmin, a, axis=axis, out=out, keepdims=keepdims)


def _cumulative(name, lax_fn, a, *, axis, dtype, out):
    _no_out(name, out)
    check_arraylike(name, a)
    a = asarray(a)
    if axis is None or aval_of(a).ndim == 0:
        a = lax.reshape(a, (aval_of(a).size,))
    axis = canonicalize_axis(0 if axis is None else axis, aval_of(a).ndim, name)
    a_dtype = aval_of(a).dtype
    if dtype is None:
        if a_dtype == dtypes.bool_:
            result_type = _promote_integer_dtype(a_dtype)
        else:
            result_type = a_dtype
        computation_type = result_type
    elif np.dtype(dtype) == dtypes.bool_:
        result_type = dtypes.bool_
        if a_dtype != result_type:
            a = lax.ne(a, const(a, 0))
        computation_type = _promote_integer_dtype(result_type)
    else:
        result_type = computation_type = _canonical_dtype(dtype, name)
    a = lax.convert_element_type(a, computation_type)
    return lax.convert_element_type(lax_fn(a, axis), result_type)


@staged("cumsum", static_argnames=("axis", "dtype"))
def cumsum(a, axis=None, dtype=None, out=None):
    """Cumulative sum along ``axis`` (None: of the flattened array)."""
    return _cumulative("cumsum", lax.cumsum, a, axis=axis, dtype=dtype, out=out)


@staged("cumprod", static_argnames=("axis", "dtype"))
def cumprod(a, axis=None, dtype=None, out=None):
    """Cumulative product along ``axis``."""
    return _cumulative("cumprod", lax.cumprod, a, axis=axis, dtype=dtype, out=out)


def cummax(a, axis=None, dtype=None, out=None):
    """Cumulative maximum along ``axis``."""
    return _cumulative("cummax", lax.cummax, a, axis=axis, dtype=dtype, out=out)


def cummin(a, axis=None, dtype=None, out=None):
    """Cumulative minimum along ``axis``."""
    return _cumulative("cummin", lax.cummin, a, axis=axis, dtype=dtype, out=out)


def cumulative_sum(x, /, *, axis=None, dtype=None, include_initial=False):
    """Array-API cumulative sum (``axis`` may be omitted only for 1-D input)."""
    check_arraylike("cumulative_sum", x)
    x = asarray(x)
    if axis is None:
        if aval_of(x).ndim != 1:
            raise ValueError("cumulative_sum: axis must be given for arrays of rank != 1")
        axis = 0
    out = cumsum(x, axis, dtype)
    if include_initial:
        axis = canonicalize_axis(axis, aval_of(x).ndim, "cumulative_sum")
        zeros_shape = list(aval_of(out).shape)
        zeros_shape[axis] = 1
        zero = lax.broadcast_in_dim(const(out, 0), tuple(zeros_shape), ())
        out = lax.concatenate([zero, out], axis)
    return out


@staged("nansum", static_argnames=("axis", "dtype", "keepdims"))
def nansum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    """Sum treating NaNs as zero."""
    check_arraylike("nansum", a)
    a = asarray(a)
    if dtypes.is_inexact(aval_of(a).dtype):
        a = where_(lax.ne(a, a), const(a, 0), a)
    return sum(a, axis, dtype, out, keepdims, initial, where)


@staged("nanmax", static_argnames=("axis", "keepdims"))
def nanmax(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    """Maximum ignoring NaNs (NaN where a slice is all NaN)."""
    check_arraylike("nanmax", a)
    a = asarray(a)
    if not dtypes.is_inexact(aval_of(a).dtype):
        return max(a, axis, out, keepdims, initial, where)
    nan_mask = lax.ne(a, a)
    out_ = max(where_(nan_mask, const(a, -np.inf), a), axis, out, keepdims, initial, where)
    if initial is not None:  # as JAX: an all-NaN (or empty) slice gives ``initial``
        return out_
    all_nan = all(nan_mask, axis, keepdims=keepdims)
    return where_(all_nan, const(out_, np.nan), out_)


@staged("nanmin", static_argnames=("axis", "keepdims"))
def nanmin(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    """Minimum ignoring NaNs."""
    check_arraylike("nanmin", a)
    a = asarray(a)
    if not dtypes.is_inexact(aval_of(a).dtype):
        return min(a, axis, out, keepdims, initial, where)
    nan_mask = lax.ne(a, a)
    out_ = min(where_(nan_mask, const(a, np.inf), a), axis, out, keepdims, initial, where)
    if initial is not None:  # as JAX: an all-NaN (or empty) slice gives ``initial``
        return out_
    all_nan = all(nan_mask, axis, keepdims=keepdims)
    return where_(all_nan, const(out_, np.nan), out_)


def ptp(a, axis=None, out=None, keepdims=False):
    """Range (max - min) along ``axis``."""
    return _ptp(a, _optional_axes(axis), out, keepdims)


@staged("_ptp", static_argnames=("axis", "keepdims"))
def _ptp(a, axis=None, out=None, keepdims=False):
    _no_out("ptp", out)
    return lax.sub(max(a, axis, keepdims=keepdims), min(a, axis, keepdims=keepdims))


@staged("count_nonzero", static_argnames=("axis", "keepdims"))
def count_nonzero(a, axis=None, keepdims=False):
    """Number of non-zero elements along ``axis``."""
    check_arraylike("count_nonzero", a)
    a = asarray(a)
    return sum(_cast_to_bool(a), axis=axis, dtype=dtypes.default_int(), keepdims=keepdims)


def average(a, axis=None, weights=None, returned=False, keepdims=False):
    """Weighted mean along ``axis`` (``weights`` of ``a``'s shape, or of its shape along
    ``axis``)."""
    if weights is None:
        avg = mean(a, axis, keepdims=keepdims)
        if not returned:
            return avg
        count = asarray(
            aval_of(asarray(a)).size // builtins.max(aval_of(avg).size, 1), aval_of(avg).dtype
        )
        return avg, lax.broadcast_in_dim(count, aval_of(avg).shape, ())
    a, weights = asarray(a), asarray(weights)
    a_shape, w_shape = aval_of(a).shape, aval_of(weights).shape
    if w_shape != a_shape:
        # As in JAX: weights shaped as ``a`` along ``axis`` (an int or a tuple, in its order)
        # weigh the entries along those axes.
        if axis is None:
            raise ValueError("Axis must be specified when shapes of a and weights differ.")
        axes = tuple(
            canonicalize_axis(ax, len(a_shape), "average")
            for ax in (axis if isinstance(axis, (tuple, list)) else (axis,))
        )
        if w_shape != tuple(a_shape[ax] for ax in axes):
            raise ValueError(
                "Shape of weights must be consistent with shape of a along specified axis."
            )
        order = tuple(int(i) for i in np.argsort(axes))
        weights = lax.broadcast_in_dim(lax.transpose(weights, order), a_shape, tuple(sorted(axes)))
    wsum = sum(weights, axis, keepdims=keepdims)
    avg = lax.div(*_same(sum(multiply(a, weights), axis, keepdims=keepdims), wsum))
    return (avg, broadcast_to_shape(wsum, aval_of(avg).shape)) if returned else avg


def _same(x, y):
    return promote_args("average", x, y)


@staged("allclose", static_argnames=("equal_nan",))
def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """True if every element of ``a`` is close to ``b``."""
    return all(isclose(a, b, rtol, atol, equal_nan))


# --------------------------------------------------------------------------- ufunc methods
# The ufunc objects live in _ufuncs, below this module; their reductions are registered here.


def _require_integer(a):
    if not (dtypes.is_int(aval_of(a).dtype) or aval_of(a).dtype == dtypes.bool_):
        raise ValueError(f"integer argument required; got dtype={aval_of(a).dtype}")
    return a


def _ufunc_reduction(name, lax_reduce, **options):
    def reduce(a, *, axis, dtype, keepdims, initial, where):
        return _reduction(
            a,
            name,
            lax_reduce,
            axis=axis,
            dtype=dtype,
            keepdims=keepdims,
            initial=initial,
            where=where,
            **options,
        )

    return reduce


def _logsumexp(a, *, axis, dtype, keepdims, initial, where, scale=None):
    """``logaddexp.reduce``: ``log(sum(exp(a)))`` shifted by the (constant) maximum, as JAX's
    (which accepts ``dtype`` but does not use it); ``scale`` = ln 2 gives ``logaddexp2``."""
    name = "logaddexp.reduce" if scale is None else "logaddexp2.reduce"
    check_arraylike(name, a)
    if dtype is not None:
        _canonical_dtype(dtype, name)
    (a,) = promote_dtypes_inexact(asarray(a))
    if scale is not None:
        a = lax.mul(a, const(a, scale))
        initial = None if initial is None else lax.mul(asarray(initial), const(a, scale))
    axes = reduction_axes(name, aval_of(a).ndim, axis)
    amax = max(a, axis=axes, keepdims=keepdims, where=where, initial=-np.inf)
    amax = lax.stop_gradient(where_(lax.is_finite(amax), amax, const(amax, 0)))
    shift = amax if keepdims else lax.expand_dims(amax, axes)
    exp_a = lax.exp(lax.sub(a, broadcast_to_shape(shift, aval_of(a).shape)))
    result = lax.add(lax.log(sum(exp_a, axis=axes, keepdims=keepdims, where=where)), amax)
    if initial is not None:
        result = _ufuncs.logaddexp(initial, result)
    return result if scale is None else lax.div(result, const(result, scale))


def _logsumexp2(a, **kwargs):
    return _logsumexp(a, **kwargs, scale=float(np.log(2)))


_ufuncs.add._register(reduce=sum, accumulate=cumsum)
_ufuncs.logaddexp._register(reduce=_logsumexp)
_ufuncs.logaddexp2._register(reduce=_logsumexp2)
_ufuncs.multiply._register(reduce=prod, accumulate=cumprod)
_ufuncs.maximum._register(reduce=_ufunc_reduction("max", lax.reduce_max, has_identity=False))
_ufuncs.minimum._register(reduce=_ufunc_reduction("min", lax.reduce_min, has_identity=False))
_ufuncs.logical_and._register(reduce=_ufunc_reduction("all", lax.reduce_and, preproc=_cast_to_bool))
_ufuncs.logical_or._register(reduce=_ufunc_reduction("any", lax.reduce_or, preproc=_cast_to_bool))
_ufuncs.logical_xor._register(
    reduce=_ufunc_reduction("logical_xor", lax.reduce_xor, preproc=_cast_to_bool)
)
for _name, _lax_reduce in (
    ("bitwise_and", lax.reduce_and),
    ("bitwise_or", lax.reduce_or),
    ("bitwise_xor", lax.reduce_xor),
):
    getattr(_ufuncs, _name)._register(
        reduce=_ufunc_reduction(_name, _lax_reduce, preproc=_require_integer)
    )

"""Polynomials as 1-D coefficient arrays, highest power first (NumPy's ``poly*`` API):
evaluation by Horner's rule in a ``scan``, arithmetic, calculus, least-squares fitting
(``linalg.lstsq``) and roots (eigenvalues of the companion matrix).

Public signatures are jax.numpy's, positional parameters included.
"""

import operator

import numpy as np

from xform import dtypes
from xform.lax import _names as lax
from xform.numpy import linalg
from xform.numpy._contractions import dot, outer
from xform.numpy._creation import arange
from xform.numpy._manipulation import vander
from xform.numpy._math import convolve
from xform.numpy._promote import (
    asarray,
    aval_of,
    check_arraylike,
    convert,
    promote_dtypes,
    promote_dtypes_inexact,
)
from xform.numpy._reductions import all as all_
from xform.numpy._reductions import argmin
from xform.numpy._reductions import sum as sum_
from xform.numpy._shape import atleast_1d
from xform.numpy._staged import staged
from xform.numpy._ufuncs import const, multiply, true_divide, where_

__all__ = [
    "polyval",
    "polyadd",
    "polysub",
    "polymul",
    "polydiv",
    "polyder",
    "polyint",
    "polyfit",
    "roots",
    "poly",
]


def _static_int(name, what, value):
    try:
        return operator.index(value)
    except TypeError as e:  # a traced value's ConcretizationTypeError too
        raise type(e)(f"{name}: argument '{what}' must be a static integer: {e}") from e


@staged("polyval", static_argnames=("unroll",))
def polyval(p, x, *, unroll=16):
    """The polynomial ``p`` (leading axis: coefficients) evaluated at ``x``."""
    check_arraylike("polyval", p, x)
    p, x = promote_dtypes(asarray(p), asarray(x))
    shape = np.broadcast_shapes(aval_of(p).shape[1:], aval_of(x).shape)
    y = lax.broadcast_in_dim(const(x, 0), shape, ())
    y = convert(y, aval_of(x).dtype, aval_of(x).weak_type and not shape)

    def horner(acc, coefficient):
        return lax.add(*_bcast(lax.mul(*_bcast(acc, x)), coefficient)), None

    y, _ = lax.scan(horner, y, p, unroll=unroll)
    return y


def _bcast(a, b):
    shape = np.broadcast_shapes(aval_of(a).shape, aval_of(b).shape)

    def to(v):
        s = aval_of(v).shape
        return (
            v
            if s == shape
            else lax.broadcast_in_dim(v, shape, tuple(range(len(shape) - len(s), len(shape))))
        )

    return to(a), to(b)


@staged("polyadd")
def polyadd(a1, a2):
    """The sum of two polynomials (the shorter is aligned to the end)."""
    check_arraylike("polyadd", a1, a2)
    a1, a2 = promote_dtypes(asarray(a1), asarray(a2))
    if aval_of(a2).shape[0] > aval_of(a1).shape[0]:
        a1, a2 = a2, a1
    return a1.at[-aval_of(a2).shape[0] :].add(a2)


@staged("polysub")
def polysub(a1, a2):
    """The difference of two polynomials."""
    check_arraylike("polysub", a1, a2)
    a1, a2 = promote_dtypes(asarray(a1), asarray(a2))
    return polyadd(a1, lax.neg(a2))


def _trim_leading_zeros(p, tol=0.0):
    host = np.asarray(p)  # a ConcretizationTypeError for traced input, as JAX
    nonzero = np.flatnonzero(np.abs(host) > tol)
    return p[nonzero[0] :] if nonzero.size else p[:0]


def polymul(a1, a2, *, trim_leading_zeros=False):
    """The product of two polynomials (a full convolution of their coefficients)."""
    check_arraylike("polymul", a1, a2)
    a1, a2 = promote_dtypes_inexact(asarray(a1), asarray(a2))
    if trim_leading_zeros and (aval_of(a1).size > 1 or aval_of(a2).size > 1):
        a1, a2 = _trim_leading_zeros(a1), _trim_leading_zeros(a2)
    if aval_of(a1).size == 0:
        a1 = lax.broadcast_in_dim(const(a2, 0), (1,), ())
    if aval_of(a2).size == 0:
        a2 = lax.broadcast_in_dim(const(a1, 0), (1,), ())
    return convolve(a1, a2, mode="full")


def polydiv(u, v, *, trim_leading_zeros=False):
    """Quotient and remainder of polynomial division ``u / v``."""
    check_arraylike("polydiv", u, v)
    u, v = promote_dtypes_inexact(asarray(u), asarray(v))
    m, n = aval_of(u).shape[0] - 1, aval_of(v).shape[0] - 1
    scale = lax.div(const(v, 1), v[0])
    q = lax.broadcast_in_dim(const(u, 0), (max(m - n + 1, 1),), ())
    for k in range(m - n + 1):
        d = lax.mul(scale, u[k])
        q = q.at[k].set(d)
        u = u.at[k : k + n + 1].add(lax.neg(lax.mul(d, v)))
    if trim_leading_zeros:
        u = _trim_leading_zeros(u, np.sqrt(dtypes.finfo(aval_of(u).dtype).eps))
    return q, u


def _falling_products(lo, hi, m, dtype):
    """The grid ``i - j`` for ``j`` in ``[0, m)`` (rows) and ``i`` in ``[lo, hi)`` (columns),
    whose column products are the factors of repeated derivatives and integrals."""
    width = max(hi - lo, 0)
    return lax.sub(
        lax.broadcast_in_dim(arange(lo, lo + width, dtype=dtype), (m, width), (1,)),
        lax.broadcast_in_dim(arange(m, dtype=dtype), (m, width), (0,)),
    )


@staged("polyder", static_argnames=("m",))
def polyder(p, m=1):
    """The ``m``-th derivative of the polynomial ``p``."""
    check_arraylike("polyder", p)
    m = _static_int("polyder", "m", m)
    p = promote_dtypes_inexact(asarray(p))[0]
    if m < 0:
        raise ValueError("Order of derivative must be positive")
    if m == 0:
        return p
    n = aval_of(p).shape[0]
    coeff = lax.reduce_prod(_falling_products(m, n, m, aval_of(p).dtype), (0,))
    return lax.mul(p[:-m], lax.rev(coeff, (0,)))


@staged("polyint", static_argnames=("m",))
def polyint(p, m=1, k=None):
    """The ``m``-th antiderivative of ``p``, with integration constants ``k`` (scalar or
    one per order)."""
    m = _static_int("polyint", "m", m)
    k = 0 if k is None else k
    check_arraylike("polyint", p, k)
    p, k = promote_dtypes_inexact(asarray(p), asarray(k))
    if m < 0:
        raise ValueError("Order of integral must be positive (see polyder)")
    k = atleast_1d(k)
    if aval_of(k).shape[0] == 1:
        k = lax.broadcast_in_dim(k[0], (m,), ())
    if aval_of(k).shape != (m,):
        raise ValueError("k must be a scalar or a rank-1 array of length 1 or m.")
    if m == 0:
        return p
    n = aval_of(p).shape[0]
    grid = _falling_products(0, n + m, m, aval_of(p).dtype)
    coeff = lax.rev(lax.reduce_prod(lax.max(grid, const(grid, 1)), (0,)), (0,))
    return true_divide(lax.concatenate([p, k], 0), coeff)


@staged("polyfit", static_argnames=("deg", "rcond", "full", "cov"))
def polyfit(x, y, deg, rcond=None, full=False, w=None, cov=False):  # noqa: PLR0912
    """Least-squares polynomial fit of degree ``deg`` to the points ``(x, y)`` (``y`` may
    hold several data sets as columns); with ``full`` also the residuals, rank, singular
    values and ``rcond``; with ``cov`` also the covariance of the coefficients."""
    check_arraylike("polyfit", x, y) if w is None else check_arraylike("polyfit", x, y, w)
    x, y = asarray(x), asarray(y)
    deg = _static_int("polyfit", "deg", deg)
    order = deg + 1
    if deg < 0:
        raise ValueError("expected deg >= 0")
    if aval_of(x).ndim != 1:
        raise TypeError("expected 1D vector for x")
    if aval_of(x).size == 0:
        raise TypeError("expected non-empty vector for x")
    if aval_of(y).ndim not in (1, 2):
        raise TypeError("expected 1D or 2D array for y")
    if aval_of(x).shape[0] != aval_of(y).shape[0]:
        raise TypeError("expected x and y to have same length")
    n = aval_of(x).shape[0]
    if rcond is None:
        rcond = n * float(dtypes.finfo(_inexact(x)).eps)
    rcond = float(rcond)
    lhs, rhs = vander(promote_dtypes_inexact(x)[0], order), y
    if w is not None:
        w = promote_dtypes_inexact(asarray(w))[0]
        if aval_of(w).ndim != 1:
            raise TypeError("expected a 1-d array for weights")
        if aval_of(w).shape[0] != aval_of(y).shape[0]:
            raise TypeError("expected w and y to have the same length")
        lhs = multiply(lhs, w[:, None])
        rhs = multiply(rhs, w[:, None] if aval_of(rhs).ndim == 2 else w)
    scale = lax.sqrt(sum_(multiply(lhs, lhs), axis=0))
    lhs = true_divide(lhs, scale[None, :])
    c, resids, rank, s = linalg.lstsq(lhs, rhs, rcond)
    c = true_divide(c, scale[:, None] if aval_of(c).ndim > 1 else scale)
    if full:
        return c, resids, rank, s, asarray(rcond)
    if not cov:
        return c
    base = true_divide(linalg.inv(dot(lax.transpose(lhs, (1, 0)), lhs)), outer(scale, scale))
    if cov == "unscaled":
        fac = asarray(1.0)
    else:
        if n <= order:
            raise ValueError(
                "the number of data points must exceed order to scale the covariance matrix"
            )
        fac = true_divide(resids, n - order)
    if aval_of(y).ndim == 1:
        return c, multiply(base, atleast_1d(fac)[None])
    return c, multiply(base[:, :, None], atleast_1d(fac)[None, None, :])


def _inexact(x):
    return aval_of(promote_dtypes_inexact(x)[0]).dtype


def _complex_dtype(dtype):
    return (
        np.result_type(dtype, np.complex64) if dtype != dtypes.bfloat16 else np.dtype(np.complex64)
    )


@staged("_roots_no_zeros")
def _roots_no_zeros(p):
    dtype = aval_of(p).dtype
    n = aval_of(p).shape[0]
    if n < 2:
        return convert(asarray(np.zeros(0, _complex_dtype(dtype))), _complex_dtype(dtype))
    # The companion matrix: ones below the diagonal, -p[1:] / p[0] in its first row.
    rows = lax.broadcasted_iota(dtypes.int32, (n - 1, n - 1), 0)
    cols = lax.broadcasted_iota(dtypes.int32, (n - 1, n - 1), 1)
    companion = convert(lax.eq(rows, lax.add(cols, const(cols, 1))), dtype, False)
    companion = companion.at[0, :].set(lax.neg(lax.div(p[1:], p[0])))
    return linalg.eigvals(companion)


def roots(p, *, strip_zeros=True):
    """The roots of the polynomial ``p``, as complex numbers. Leading zeros are stripped,
    which needs concrete ``p``; under ``jit`` pass ``strip_zeros=False`` (each leading zero
    then gives a NaN root)."""
    check_arraylike("roots", p)
    p = atleast_1d(promote_dtypes_inexact(asarray(p))[0])
    if aval_of(p).ndim != 1:
        raise ValueError("Input must be a rank-1 array.")
    n = aval_of(p).shape[0]
    if n < 2:
        return _roots_no_zeros(p)
    is_zero = lax.eq(p, const(p, 0))
    leading = where_(all_(is_zero), n, argmin(is_zero))
    if strip_zeros:
        try:
            leading = int(np.asarray(leading))
        except TypeError as e:
            raise type(e)(
                "roots: stripping leading zeros needs the value of p; under jit "
                "pass strip_zeros=False (leading zeros then give NaN roots)"
            ) from e
        return _roots_no_zeros(p[leading:])
    p = where_(lax.eq(leading, const(leading, n)), const(p, 1), p)
    # Rotate the leading zeros to the end: each gives a zero root, replaced by NaN below.
    index = lax.rem(lax.add(arange(n, dtype=aval_of(leading).dtype), leading), const(leading, n))
    found = _roots_no_zeros(p[index])
    _, found = lax.sort((lax.eq(found, const(found, 0)), found), dimension=0, num_keys=1)
    keep = lax.lt(
        arange(n - 1, dtype=aval_of(leading).dtype), lax.sub(const(leading, n - 1), leading)
    )
    return where_(keep, found, const(found, complex(np.nan, np.nan)))


def poly(seq_of_zeros):
    """The coefficients of the monic polynomial with the given roots (or, for a square
    matrix, its characteristic polynomial)."""
    check_arraylike("poly", seq_of_zeros)
    z = atleast_1d(promote_dtypes_inexact(asarray(seq_of_zeros))[0])
    shape = aval_of(z).shape
    if len(shape) == 2 and shape[0] == shape[1] and shape[0] != 0:
        z = linalg.eigvals(z)
    if aval_of(z).ndim != 1:
        raise ValueError("input must be 1d or non-empty square 2d array.")
    if aval_of(z).shape[0] == 0:
        return convert(asarray(1), aval_of(z).dtype, False)
    a = lax.broadcast_in_dim(const(z, 1), (1,), ())
    one = lax.broadcast_in_dim(const(z, 1), (1,), ())
    for k in range(aval_of(z).shape[0]):
        a = convolve(a, lax.concatenate([one, lax.neg(z[k : k + 1])], 0), mode="full")
    return a

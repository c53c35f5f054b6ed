"""The norms of ``xform.numpy.linalg`` (``norm``, ``matrix_norm``, ``vector_norm``, ``cond``)
and what is built on singular values and norms: ``matrix_rank``, ``pinv`` (with its
Golub-Pereyra ``custom_jvp``) and ``lstsq``.
"""

import builtins

import numpy as np

from xform import dtypes
from xform.custom_derivatives import custom_jvp
from xform.lax import _names as lax
from xform.numpy import _reductions, _shape, _ufuncs
from xform.numpy._creation import empty, zeros
from xform.numpy._promote import (
    asarray,
    aval_of,
    convert,
    promote_dtypes_inexact,
)
from xform.numpy._reductions import canonicalize_axis
from xform.numpy._staged import staged
from xform.numpy.linalg._decompositions import (
    _H,
    _arrays,
    _batched_matmul,
    _dtype_of,
    _inexact,
    _shape_of,
    _symmetrize,
    inv,
    svd,
    svdvals,
)

__all__ = [
    "cond",
    "lstsq",
    "matrix_norm",
    "matrix_rank",
    "norm",
    "pinv",
    "vector_norm",
]


# --------------------------------------------------------------------------- norms


def _sum_squares(x, axis, keepdims):
    return _reductions.sum(
        _ufuncs.real(_ufuncs.multiply(x, _ufuncs.conjugate(x))), axis=axis, keepdims=keepdims
    )


def vector_norm(x, /, *, axis=None, keepdims=False, ord=2):  # noqa: A002  (NumPy's name)
    """The vector ``ord``-norm over ``axis`` (all axes by default).

    ``ord`` is 2 (default), ``inf``, ``-inf``, 0 (the number of nonzeros), 1, or any other
    number ``p`` (``sum(abs(x)**p)**(1/p)``).

    Example:
      >>> vector_norm(jnp.array([3., 4.]))  # 5.
    """
    (x,) = _arrays("vector_norm", x)
    if ord is None or ord == 2:
        return _ufuncs.sqrt(_sum_squares(x, axis, keepdims))
    if ord == np.inf:
        return _reductions.max(_ufuncs.abs(x), axis=axis, keepdims=keepdims, initial=0)
    if ord == -np.inf:
        return _reductions.min(_ufuncs.abs(x), axis=axis, keepdims=keepdims)
    if ord == 0:
        real = dtypes.finfo(_dtype_of(x)).dtype
        return _reductions.sum(_ufuncs.not_equal(x, 0), dtype=real, axis=axis, keepdims=keepdims)
    if ord == 1:
        return _reductions.sum(_ufuncs.abs(x), axis=axis, keepdims=keepdims)
    if isinstance(ord, str):
        hint = {
            "inf": " Use 'jax.numpy.inf' instead.",
            "-inf": " Use '-jax.numpy.inf' instead.",
        }.get(ord, "")
        raise ValueError(f"Invalid order '{ord}' for vector norm.{hint}")
    abs_x = _ufuncs.abs(x)
    p = np.array(ord, _dtype_of(abs_x))
    total = _reductions.sum(_ufuncs.power(abs_x, p), axis=axis, keepdims=keepdims)
    return _ufuncs.power(total, np.array(1.0 / p, _dtype_of(abs_x)))


def _matrix_norm(x, ord, row_axis, col_axis, keepdims):  # noqa: A002
    abs_sum = _reductions.sum
    if ord is None or ord in ("f", "fro"):
        return _ufuncs.sqrt(_sum_squares(x, (row_axis, col_axis), keepdims))
    if ord in (1, -1):  # the largest (smallest) column sum
        if not keepdims and col_axis > row_axis:
            col_axis -= 1
        sums = abs_sum(_ufuncs.abs(x), axis=row_axis, keepdims=keepdims)
        if ord == 1:
            return _reductions.max(sums, axis=col_axis, keepdims=keepdims, initial=0)
        return _reductions.min(sums, axis=col_axis, keepdims=keepdims)
    if ord in (np.inf, -np.inf):  # the largest (smallest) row sum
        if not keepdims and row_axis > col_axis:
            row_axis -= 1
        sums = abs_sum(_ufuncs.abs(x), axis=col_axis, keepdims=keepdims)
        if ord == np.inf:
            return _reductions.max(sums, axis=row_axis, keepdims=keepdims, initial=0)
        return _reductions.min(sums, axis=row_axis, keepdims=keepdims)
    if ord in ("nuc", 2, -2):
        s = svd(_shape.moveaxis(x, (row_axis, col_axis), (-2, -1)), compute_uv=False)
        if ord == 2:
            y = _reductions.max(s, axis=-1, initial=0)
        elif ord == -2:
            y = _reductions.min(s, axis=-1)
        else:
            y = _reductions.sum(s, axis=-1)
        return _shape.expand_dims(y, (row_axis, col_axis)) if keepdims else y
    raise ValueError(f"Invalid order '{ord}' for matrix norm.")


@staged("norm", static_argnames=("ord", "axis", "keepdims"))
def norm(x, ord=None, axis=None, keepdims=False):  # noqa: A002  (NumPy's name)
    """A vector norm (one axis) or a matrix norm (two axes).

    Args:
      x: the array; integers are promoted to floats.
      ord: as ``vector_norm`` for one axis; for two: ``"fro"`` (default), ``"nuc"``, 1,
        -1, 2, -2, ``inf``, ``-inf``.
      axis: an axis or a pair; by default all of a 1-D or 2-D array (with ``ord=None``,
        the 2-norm of the flattened array whatever its rank).
      keepdims: keep the reduced axes with size one.

    Example:
      >>> norm(jnp.array([[1., 2.], [3., 4.]]), ord=1)  # 6.
    """
    (x,) = _inexact("norm", x)
    ndim = aval_of(x).ndim
    if axis is None:
        if ord is None:
            return _ufuncs.sqrt(_sum_squares(x, None, keepdims))
        axes = tuple(range(ndim))
    elif isinstance(axis, tuple):
        axes = tuple(canonicalize_axis(a, ndim, "linalg.norm") for a in axis)
    else:
        axes = (canonicalize_axis(axis, ndim, "linalg.norm"),)
    if len(axes) == 1:
        return vector_norm(x, ord=2 if ord is None else ord, axis=axes, keepdims=keepdims)
    if len(axes) == 2:
        return _matrix_norm(x, ord, axes[0], axes[1], keepdims)
    raise ValueError(
        f"Improper number of axes for norm: axis={axis}. Pass one axis to "
        "compute a vector-norm, or two axes to compute a matrix-norm."
    )


def matrix_norm(x, /, *, keepdims=False, ord="fro"):  # noqa: A002  (NumPy's name)
    """The matrix norm over the last two axes (``ord`` as ``norm``'s, default ``"fro"``).

    Example:
      >>> matrix_norm(jnp.eye(4))  # 2.
    """
    (x,) = _arrays("matrix_norm", x)
    return norm(x, ord=ord, keepdims=keepdims, axis=(-2, -1))


@staged("cond", static_argnames=("p",))
def cond(x, p=None):
    """The condition number of each matrix in the ``p`` norm: ``norm(x) * norm(inv(x))``,
    or the singular-value ratio for ``p`` None, 2 or -2; ``inf`` for a singular matrix.

    Example:
      >>> cond(jnp.array([[1., 0.], [0., 4.]]))  # 4.
    """
    (arr,) = _arrays("cond", x)
    shape = _shape_of(arr)
    if len(shape) < 2:
        raise ValueError(f"jnp.linalg.cond: input array must be at least 2D; got arr.shape={shape}")
    if shape[-1] == 0 or shape[-2] == 0:
        raise ValueError(f"jnp.linalg.cond: input array must not be empty; got arr.shape={shape}")
    if p is None or p == 2:
        s = svdvals(arr)
        return _ufuncs.true_divide(s[..., 0], s[..., -1])
    if p == -2:
        s = svdvals(arr)
        r = _ufuncs.true_divide(s[..., -1], s[..., 0])
    else:
        if shape[-2] != shape[-1]:
            raise ValueError(
                f"jnp.linalg.cond: for p={p}, array must be square; got arr.shape={shape}"
            )
        r = _ufuncs.multiply(norm(arr, ord=p, axis=(-2, -1)), norm(inv(arr), ord=p, axis=(-2, -1)))
    nan_input = _reductions.any(_ufuncs.isnan(arr), axis=(-2, -1))
    singular = _ufuncs.logical_and(_ufuncs.isnan(r), _ufuncs.logical_not(nan_input))
    return _shape.where(singular, np.inf, r)


# --------------------------------------------------------------------------- pseudo-inverses


@staged("matrix_rank", static_argnames=("hermitian",))
def matrix_rank(M, rtol=None, *, hermitian=False, tol=None):  # noqa: N803  (NumPy's name)
    """The number of singular values of each matrix above a threshold.

    Args:
      M: ``(..., m, n)``.
      rtol: the threshold, of shape ``M.shape[:-2]`` or a scalar (compared with the singular
        values directly, as in JAX); by default ``max(s) * max(m, n) * eps``.
      hermitian: ``M`` is Hermitian (singular values from ``eigh``).
      tol: an alias of ``rtol``.

    Example:
      >>> matrix_rank(jnp.array([[1., 2.], [2., 4.]]))  # 1
    """
    (M,) = _arrays("matrix_rank", M)
    if tol is not None:
        if rtol is not None:
            raise ValueError("matrix_rank: only one of tol or rtol may be specified.")
        rtol = tol
    (M,) = promote_dtypes_inexact(M)
    shape = _shape_of(M)
    if len(shape) < 2:
        return convert(_reductions.any(_ufuncs.not_equal(M, 0)), dtypes.int32)
    s = svd(M, full_matrices=False, compute_uv=False, hermitian=hermitian)
    if rtol is None:
        real = _dtype_of(s)
        largest = _reductions.max(s, axis=-1)
        rtol = _ufuncs.multiply(
            _ufuncs.multiply(largest, np.array(builtins.max(shape[-2:]), real)),
            np.array(dtypes.finfo(real).eps, real),
        )
    rtol = asarray(rtol)
    rtol = lax.expand_dims(rtol, (aval_of(rtol).ndim,))
    return _reductions.sum(_ufuncs.greater(s, rtol), axis=-1)


def _pinv_impl(a, rtol, hermitian):
    m, n = _shape_of(a)[-2:]
    dtype = _dtype_of(a)
    if m == 0 or n == 0:
        return empty((*_shape_of(a)[:-2], n, m), dtype)
    arr = _ufuncs.conjugate(a)
    if rtol is None:
        eps = asarray(dtypes.finfo(dtype).eps)
        rtol = _ufuncs.multiply(10.0 * builtins.max(m, n), eps)
    rtol = asarray(rtol)
    u, s, vh = svd(arr, full_matrices=False, hermitian=hermitian)
    # rtol has the batch shape (or is a scalar): a trailing axis, then leading ones.
    rtol = lax.expand_dims(rtol, (aval_of(rtol).ndim,))
    lead = aval_of(s).ndim - aval_of(rtol).ndim
    rtol = lax.expand_dims(rtol, tuple(range(lead))) if lead > 0 else rtol
    cutoff = _ufuncs.multiply(rtol, s[..., 0:1])
    s = convert(_shape.where(_ufuncs.greater(s, cutoff), s, np.inf), _dtype_of(u))
    s_column = lax.expand_dims(s, (aval_of(s).ndim,))
    out = _batched_matmul(
        _shape.matrix_transpose(vh), _ufuncs.true_divide(_shape.matrix_transpose(u), s_column)
    )
    return convert(out, dtype)


# rtol and hermitian are parameters of the rule, not differentiated (JAX's nondiff_argnums).
_pinv = custom_jvp(_pinv_impl, nondiff_argnums=(1, 2))


@_pinv.defjvp
def _pinv_jvp(rtol, hermitian, primals, tangents):
    # Golub & Pereyra (1973): with P = pinv(A),
    # dP = -P dA P + P P^H dA^H (I - A P) + (I - P A) dA^H P^H P.
    (a,), (da,) = primals, tangents
    p = _pinv(a, rtol, hermitian)
    if hermitian:
        a, da = _symmetrize(a), _symmetrize(da)
    mm, neg, sub, add = _batched_matmul, _ufuncs.negative, _ufuncs.subtract, _ufuncs.add
    m, n = _shape_of(a)[-2:]
    if m >= n:
        s = mm(mm(p, _H(p)), _H(da))
        t = mm(mm(_H(da), _H(p)), p)
        dp = sub(add(neg(mm(mm(p, da), p)), s), mm(mm(s, a), p))
        dp = sub(add(dp, t), mm(mm(p, a), t))
    else:
        s = mm(p, mm(_H(p), _H(da)))
        t = mm(_H(da), mm(_H(p), p))
        dp = sub(add(neg(mm(p, mm(da, p))), s), mm(s, mm(a, p)))
        dp = sub(add(dp, t), mm(p, mm(a, t)))
    return p, dp


@staged("_pinv", static_argnames=("hermitian",))
def pinv(a, rtol=None, hermitian=False, *, rcond=None):
    """The Moore-Penrose pseudo-inverse of each matrix, from its SVD: singular values at or
    below ``rtol * max(s)`` count as zero.

    Args:
      a: ``(..., m, n)``.
      rtol: the relative cutoff, a scalar or of shape ``a.shape[:-2]``; by default
        ``10 * max(m, n) * eps``.
      hermitian: ``a`` is Hermitian (SVD from ``eigh``).
      rcond: an alias of ``rtol``.

    Example:
      >>> pinv(jnp.array([[2., 0.], [0., 0.]]))  # [[0.5, 0.], [0., 0.]]
    """
    if rcond is not None:
        if rtol is not None:
            raise ValueError("pinv: only one of rtol and rcond may be specified.")
        rtol = rcond
    (a,) = _inexact("pinv", a)
    return _pinv(a, rtol, hermitian)


def lstsq(a, b, rcond=None, *, numpy_resid=False):
    """The least-squares solution of ``a @ x == b`` from the SVD of ``a``.

    Args:
      a: ``(m, n)``.
      b: ``(m,)`` or ``(m, k)``.
      rcond: singular values below ``rcond * max(s)`` count as zero (default
        ``eps * max(m, n)``; a negative value means ``eps``).
      numpy_resid: return NumPy's residuals (empty unless ``a`` has full column rank and
        ``m > n``) instead of always computing them; not traceable.

    Returns:
      ``(x, residuals, rank, s)``.

    Example:
      >>> x, resid, rank, s = lstsq(jnp.array([[1., 0.], [0., 1.], [0., 0.]]),
      ...                           jnp.array([1., 2., 3.]))  # x == [1., 2.], resid [9.]
    """
    a, b = _inexact("lstsq", a, b)
    a_shape, b_shape = _shape_of(a), _shape_of(b)
    if a_shape[0] != b_shape[0]:
        raise ValueError("Leading dimensions of input arrays must match")
    b_vector = len(b_shape) == 1
    if b_vector:
        b = lax.expand_dims(b, (1,))
    if len(a_shape) != 2:
        raise TypeError(f"{len(a_shape)}-dimensional array given. Array must be two-dimensional")
    if aval_of(b).ndim != 2:
        raise TypeError(
            f"{len(b_shape)}-dimensional array given. Array must be one or two-dimensional"
        )
    m, n = a_shape
    dtype = _dtype_of(a)
    if m * n == 0:
        s = empty(0, dtype=dtype)
        rank = asarray(0, dtype=int)
        x = zeros((n, *_shape_of(b)[1:]), dtype=dtype)
    else:
        eps = dtypes.finfo(dtype).eps
        u, s, vt = svd(a, full_matrices=False)
        real = _dtype_of(s)
        if rcond is None:
            rcond = asarray(float(eps) * builtins.max(n, m), real)
        else:
            rcond = convert(_shape.where(_ufuncs.less(rcond, 0), eps, rcond), real)
        mask = _ufuncs.logical_and(
            _ufuncs.greater(s, 0), _ufuncs.greater_equal(s, _ufuncs.multiply(rcond, s[0]))
        )
        rank = _reductions.sum(mask)
        safe_s = convert(_shape.where(mask, s, 1), dtype)
        s_inv = _shape.where(mask, _ufuncs.true_divide(1, safe_s), 0)
        u_b = _batched_matmul(_H(u), b)
        x = _batched_matmul(_H(vt), _ufuncs.multiply(lax.expand_dims(s_inv, (1,)), u_b))
    if numpy_resid and (bool(rank < n) or m <= n):
        resid = asarray(np.zeros(0, dtypes.default_float()))
    else:
        err = _ufuncs.subtract(b, _batched_matmul(a, x))
        resid = _ufuncs.square(norm(err, axis=0))
    if b_vector:
        x = _shape.ravel(x)
    return x, resid, rank, s

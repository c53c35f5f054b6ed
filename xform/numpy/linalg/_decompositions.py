"""The solves, determinants and decompositions of ``xform.numpy.linalg``, with their
``custom_jvp`` rules, the result types and the helpers the package shares.
"""

import math
import operator
from typing import NamedTuple

import numpy as np

from xform import dtypes
from xform.custom_derivatives import custom_jvp
from xform.lax import _names as lax
from xform.lax import linalg as lax_linalg
from xform.numpy import _contractions, _reductions, _shape, _ufuncs
from xform.numpy._creation import eye, ones, zeros_like
from xform.numpy._promote import (
    asarray,
    aval_of,
    broadcast_shapes,
    check_arraylike,
    convert,
    promote_dtypes_inexact,
)
from xform.numpy._staged import staged
from xform.primitives.linalg import lu_solve, solve_with_lu
from xform.primitives.qr import geqrf  # not public in jax.lax.linalg either

__all__ = [
    "EigResult",
    "EighResult",
    "QRResult",
    "SVDResult",
    "SlogdetResult",
    "cholesky",
    "det",
    "eig",
    "eigh",
    "eigvals",
    "eigvalsh",
    "inv",
    "qr",
    "slogdet",
    "solve",
    "svd",
    "svdvals",
    "tensorinv",
    "tensorsolve",
]


# --------------------------------------------------------------------------- result types


class EighResult(NamedTuple):
    """``eigh``'s result: real eigenvalues (ascending) and the eigenvectors as columns."""

    eigenvalues: object
    eigenvectors: object


class EigResult(NamedTuple):
    """``eig``'s result: complex eigenvalues and the right eigenvectors as columns."""

    eigenvalues: object
    eigenvectors: object


class QRResult(NamedTuple):
    """``qr``'s result; for ``mode="raw"``, LAPACK's packed reflectors and their scales."""

    Q: object
    R: object


class SlogdetResult(NamedTuple):
    """``slogdet``'s result: the sign (a unit complex number for complex input) and
    ``log(abs(det))``."""

    sign: object
    logabsdet: object


class SVDResult(NamedTuple):
    """``svd``'s result: ``a == U @ diag(S) @ Vh``."""

    U: object
    S: object
    Vh: object


# --------------------------------------------------------------------------- helpers


def _arrays(name, *xs):
    """jax.numpy's ``ensure_arraylike``: arrays and scalars only, as xform arrays."""
    check_arraylike(f"jnp.linalg.{name}", *xs)
    return [asarray(x) for x in xs]


def _inexact(name, *xs):
    return promote_dtypes_inexact(*_arrays(name, *xs))


def _shape_of(x):
    return aval_of(x).shape


def _dtype_of(x):
    return aval_of(x).dtype


def _H(x):
    """The conjugate transpose of each matrix."""
    return _ufuncs.conjugate(_shape.matrix_transpose(x))


def _symmetrize(x):
    return _ufuncs.true_divide(_ufuncs.add(x, _H(x)), 2)


def _check_square(name, x):
    shape = _shape_of(x)
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise ValueError(f"Argument to {name}() must have shape [..., n, n], got {shape}")


def _broadcast_batch(x, batch):
    """``x`` broadcast to the leading dimensions ``batch``, its own last two kept."""
    shape = _shape_of(x)
    return _shape.broadcast_to(x, (*batch, *shape[-2:]))


def _take_rows(x, rows):
    """``x[..., rows[..., i], :]`` per batch entry: ``x`` is ``(..., m, k)`` and ``rows``
    ``(..., r)`` with the same leading dimensions; the result is ``(..., r, k)``."""
    shape = _shape_of(rows)
    batch = [lax.broadcasted_iota(dtypes.int32, shape, d) for d in range(len(shape) - 1)]
    return x[(*batch, rows)]


def _take_columns(x, cols):
    """``x[..., :, cols[..., j]]`` per batch entry."""
    return _shape.matrix_transpose(_take_rows(_shape.matrix_transpose(x), cols))


def _batched_matmul(a, b):
    return _contractions.matmul(a, b, precision=lax.Precision.HIGHEST)


# --------------------------------------------------------------------------- solves


@custom_jvp
def _solve(a, b):
    # a (..., m, m), b (..., m, k), one batch shape.
    return lu_solve(a, b)


@_solve.defjvp
def _solve_jvp(primals, tangents):
    # x = A^-1 b, so dx = A^-1 (db - dA x): one LU serves the value and the derivative.
    (a, b), (da, db) = primals, tangents
    lu, _, permutation = lax_linalg.lu(a)
    x = solve_with_lu(lu, permutation, b)
    dx = solve_with_lu(lu, permutation, _ufuncs.subtract(db, _batched_matmul(da, x)))
    return x, dx


@staged("solve")
def solve(a, b):
    """Solve ``a @ x == b`` for ``x``, by LU decomposition with partial pivoting.

    Args:
      a: ``(..., m, m)``.
      b: ``(m,)`` (one right-hand side per matrix) or ``(..., m, n)``; leading dimensions
        broadcast against ``a``'s.

    Returns:
      ``x``, of shape ``a.shape[:-1]`` for a 1-D ``b``, else the broadcast ``(..., m, n)``.

    Example:
      >>> solve(jnp.array([[2., 0.], [0., 4.]]), jnp.array([2., 2.]))  # [1., 0.5]
    """
    a, b = _inexact("solve", a, b)
    a_shape, b_shape = _shape_of(a), _shape_of(b)
    if len(a_shape) < 2:
        raise ValueError(
            f"solve: left hand array must be at least two dimensional; got a.shape={a_shape}"
        )
    if (
        len(b_shape) > 1
        and len(a_shape) == len(b_shape) + 1
        and a_shape[-1] == b_shape[-1]
        and a_shape[-1] != b_shape[-2]
    ):
        raise ValueError(
            f"Invalid shapes for solve: {a_shape}, {b_shape}. A batch of 1-D "
            "right-hand sides is not supported; use solve(a, b[..., None])"
            "[..., 0]."
        )
    vector = len(b_shape) == 1
    m = a_shape[-1]
    if a_shape[-2] != m or (b_shape[-1] if vector else b_shape[-2]) != m:
        raise ValueError(
            f"solve: the arguments must have shapes a=[..., m, m] and b=[m] or "
            f"b=[..., m, k]; got a={a_shape} and b={b_shape}"
        )
    if vector:
        b = lax.expand_dims(b, (1,))
        batch = a_shape[:-2]
    else:
        batch = broadcast_shapes(a_shape[:-2], b_shape[:-2], name="solve")
    x = _solve(_broadcast_batch(a, batch), _broadcast_batch(b, batch))
    return x[..., 0] if vector else x


@staged("inv")
def inv(a):
    """The inverse of each square matrix of ``a`` (``solve`` against the identity).

    Example:
      >>> inv(jnp.array([[2., 0.], [0., 4.]]))  # [[0.5, 0.], [0., 0.25]]
    """
    (arr,) = _arrays("inv", a)
    shape = _shape_of(arr)
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise ValueError(f"Argument to inv must have shape [..., n, n], got {shape}.")
    identity = _shape.broadcast_to(eye(shape[-1], dtype=_dtype_of(arr)), shape)
    return solve(arr, identity)


def tensorinv(a, ind=2):
    """The inverse of ``a`` seen as a linear map from its first ``ind`` axes to the rest.

    Example:
      >>> tensorinv(jnp.eye(6).reshape(2, 3, 6), ind=2).shape  # (6, 2, 3)
    """
    (arr,) = _arrays("tensorinv", a)
    ind = operator.index(ind)
    if ind <= 0:
        raise ValueError(f"ind must be a positive integer; got ind={ind}")
    shape = _shape_of(arr)
    contracting, batch = shape[:ind], shape[ind:]
    rows, cols = math.prod(contracting), math.prod(batch)
    if rows != cols:
        raise ValueError(
            "tensorinv is only possible when the product of the first `ind` "
            "dimensions equals that of the remaining dimensions. got "
            f"arr.shape={shape} with ind={ind}."
        )
    out = inv(_shape.reshape(arr, (rows, cols)))
    return _shape.reshape(out, (*batch, *contracting))


def tensorsolve(a, b, axes=None):
    """Solve the tensor equation ``tensordot(a, x, x.ndim) == b`` for ``x``.

    Example:
      >>> tensorsolve(jnp.eye(6).reshape(2, 3, 6), jnp.ones((2, 3))).shape  # (6,)
    """
    a, b = _arrays("tensorsolve", a, b)
    if axes is not None:
        nd = aval_of(a).ndim
        a = _shape.moveaxis(a, axes, len(axes) * (nd - 1,))
    a_shape, b_shape = _shape_of(a), _shape_of(b)
    out_shape = a_shape[len(b_shape) :]
    if a_shape[: len(b_shape)] != b_shape:
        raise ValueError(
            "After moving axes to end, leading shape of a must match shape of b. "
            f"got a.shape={a_shape}, b.shape={b_shape}"
        )
    size = math.prod(b_shape)
    if size != math.prod(out_shape):
        raise ValueError(
            "Input arrays must have prod(a.shape[:b.ndim]) == "
            f"prod(a.shape[b.ndim:]); got a.shape={a_shape}, "
            f"b.ndim={len(b_shape)}."
        )
    a = _shape.reshape(a, (size, math.prod(out_shape)))
    return _shape.reshape(solve(a, _shape.ravel(b)), out_shape)


# --------------------------------------------------------------------------- determinants


def _log_abs(x):
    return _ufuncs.real(_ufuncs.log(_ufuncs.abs(x)))


def _slogdet_from_det(det):
    return _ufuncs.sign(det), _log_abs(det)


def _entry(a, i, j):
    return a[..., i, j]


def _det_2x2(a):
    e = _entry
    return _ufuncs.subtract(
        _ufuncs.multiply(e(a, 0, 0), e(a, 1, 1)), _ufuncs.multiply(e(a, 0, 1), e(a, 1, 0))
    )


def _det_3x3(a):
    """The rule of Sarrus, its six terms summed in JAX's order (so rounding agrees)."""
    e, mul = _entry, _ufuncs.multiply

    def term(i, j, k):  # a[0, i] * a[1, j] * a[2, k]
        return mul(mul(e(a, 0, i), e(a, 1, j)), e(a, 2, k))

    total = _ufuncs.add(_ufuncs.add(term(0, 1, 2), term(1, 2, 0)), term(2, 0, 1))
    for i, j, k in ((2, 1, 0), (0, 2, 1), (1, 0, 2)):
        total = _ufuncs.subtract(total, term(i, j, k))
    return total


@custom_jvp
def _slogdet_small(a):
    # 1x1 and 2x2 matrices: the determinant in closed form, no factorisation.
    det = _entry(a, 0, 0) if _shape_of(a)[-1] == 1 else _det_2x2(a)
    return _slogdet_from_det(det)


def _log_det_tangent_out(x, sign, log_dot):
    """(sign_dot, logabsdet_dot) from ``d log det = log_dot``: for complex ``x`` the
    imaginary part turns the sign, the real part is the log-magnitude's tangent."""
    if dtypes.is_complex(_dtype_of(x)):
        real = convert(_ufuncs.real(log_dot), _dtype_of(log_dot))
        return _ufuncs.multiply(_ufuncs.subtract(log_dot, real), sign), _ufuncs.real(log_dot)
    return zeros_like(sign), log_dot


@_slogdet_small.defjvp
def _slogdet_small_jvp(primals, tangents):
    (x,), (g,) = primals, tangents
    sign, logabsdet = _slogdet_small(x)
    e, mul, sub = _entry, _ufuncs.multiply, _ufuncs.subtract
    if _shape_of(x)[-1] == 1:
        log_dot = _ufuncs.true_divide(e(g, 0, 0), e(x, 0, 0))
    else:  # d det = the adjugate contracted with g
        d_det = sub(
            sub(mul(e(g, 0, 0), e(x, 1, 1)), mul(e(g, 0, 1), e(x, 1, 0))),
            mul(e(g, 1, 0), e(x, 0, 1)),
        )
        d_det = _ufuncs.add(d_det, mul(e(g, 1, 1), e(x, 0, 0)))
        log_dot = _ufuncs.true_divide(d_det, _det_2x2(x))
    return (sign, logabsdet), _log_det_tangent_out(x, sign, log_dot)


def _pivot_parity(pivots):
    """The number of row swaps LU's ``pivots`` made, per matrix."""
    shape = _shape_of(pivots)
    iota = lax.broadcasted_iota(_dtype_of(pivots), shape, len(shape) - 1)
    return _reductions.count_nonzero(_ufuncs.not_equal(pivots, iota), axis=-1)


def _parity_sign(parity, dtype):
    """+1 for an even count, -1 for an odd one, as ``dtype``."""
    odd = _ufuncs.remainder(parity, 2)
    return convert(_ufuncs.subtract(1, _ufuncs.multiply(2, odd)), dtype)


@custom_jvp
def _slogdet_lu(a):
    dtype = _dtype_of(a)
    lu, pivots, _ = lax_linalg.lu(a)
    diag = _contractions.diagonal(lu, axis1=-2, axis2=-1)
    is_zero = _reductions.any(_ufuncs.equal(diag, convert(0, dtype)), axis=-1)
    parity = _pivot_parity(pivots)
    if dtypes.is_complex(dtype):
        phases = _ufuncs.true_divide(diag, convert(_ufuncs.abs(diag), dtype))
        sign = _reductions.prod(phases, axis=-1)
    else:
        parity = _ufuncs.add(parity, _reductions.count_nonzero(_ufuncs.less(diag, 0), axis=-1))
        sign = convert(1, dtype)
    sign = _ufuncs.multiply(sign, _parity_sign(parity, dtype))
    sign = _shape.where(is_zero, convert(0, dtype), sign)
    log_abs = _reductions.sum(convert(_ufuncs.log(_ufuncs.abs(diag)), dtype), axis=-1)
    log_abs = _shape.where(is_zero, convert(-np.inf, dtype), log_abs)
    return sign, _ufuncs.real(log_abs)


def _slogdet_jvp_of(slogdet_fn):
    """The rule shared by the factorising methods: ``d log|det A| = Re trace(A^-1 dA)``;
    the sign's tangent is zero for real ``A``."""

    def rule(primals, tangents):
        (x,), (g,) = primals, tangents
        sign, logabsdet = slogdet_fn(x)
        log_dot = _contractions.trace(lu_solve(x, g), axis1=-1, axis2=-2)
        return (sign, logabsdet), _log_det_tangent_out(x, sign, log_dot)

    return rule


@custom_jvp
def _slogdet_qr(a):
    n = _shape_of(a)[-1]
    r, taus = geqrf(a)
    diag = _contractions.diagonal(r, axis1=-2, axis2=-1)
    log_abs = _reductions.sum(_ufuncs.log(_ufuncs.abs(diag)), axis=-1)
    # Each Householder reflector with a nonzero scale has determinant -1.
    reflections = _reductions.count_nonzero(_ufuncs.not_equal(taus[..., : n - 1], 0), axis=-1)
    sign = _ufuncs.multiply(
        _reductions.prod(_ufuncs.sign(diag), axis=-1), _parity_sign(reflections, _dtype_of(a))
    )
    return sign, log_abs


_slogdet_lu.defjvp(_slogdet_jvp_of(_slogdet_lu))
_slogdet_qr.defjvp(_slogdet_jvp_of(_slogdet_qr))


@staged("slogdet", static_argnames=("method",))
def slogdet(a, *, method=None):
    """The sign and the natural log of the absolute value of each determinant.

    Args:
      a: ``(..., m, m)``.
      method: ``"lu"`` (the default, ``None``) or ``"qr"`` (real input only).

    Returns:
      ``SlogdetResult(sign, logabsdet)``, each of shape ``a.shape[:-2]``; a singular matrix
      has sign 0 and logabsdet ``-inf``.

    Example:
      >>> slogdet(jnp.array([[1., 2.], [3., 4.]]))  # sign -1., logabsdet log(2)
    """
    (a,) = _inexact("slogdet", a)
    shape = _shape_of(a)
    _check_square("slogdet", a)
    if method is None or method == "lu":
        if shape[-1] in (1, 2):
            return SlogdetResult(*_slogdet_small(a))
        return SlogdetResult(*_slogdet_lu(a))
    if method == "qr":
        if dtypes.is_complex(_dtype_of(a)):
            raise NotImplementedError("slogdet method='qr' not implemented for complex inputs")
        return SlogdetResult(*_slogdet_qr(a))
    raise ValueError(
        f"Unknown slogdet method '{method}'. Supported methods are 'lu' (`None`), and 'qr'."
    )


def _cofactor_solve(a, b):
    """``(det(a), adj(a) @ b)``, where ``adj(a) = det(a) a^-1`` is the adjugate: well
    defined for singular ``a`` too, hence ``det``'s derivative.

    From ``a = P L U``: ``adj(a) b = det(a) U^-1 L^-1 P^T b``. Writing ``det(a)`` as
    ``sign * prod(diag(U))``, the last row of ``U^-1`` carries ``1 / U[-1, -1]``, which
    cancels one factor; so ``U[-1, -1]`` is replaced by the reciprocal of the other
    factors' product, the other rows are scaled by ``det(a)``, and a matrix of rank
    ``n - 1`` (``U[-1, -1] == 0``) still gives its rank-one adjugate. Below rank ``n - 1``
    the adjugate is zero: detected as a non-finite triangular solve.
    """
    m = _shape_of(a)[-1]
    if m == 1:
        return _entry(a, 0, 0), b
    dtype = _dtype_of(a)
    lu, pivots, permutation = lax_linalg.lu(a)
    batch = broadcast_shapes(_shape_of(lu)[:-2], _shape_of(b)[:-2])
    x = _broadcast_batch(b, batch)
    lu = _broadcast_batch(lu, batch)
    diag = _contractions.diagonal(lu, axis1=-2, axis2=-1)
    sign = _parity_sign(_pivot_parity(pivots), dtype)
    partial_det = _ufuncs.multiply(
        _reductions.cumprod(diag, axis=-1), lax.expand_dims(sign, (aval_of(sign).ndim,))
    )
    lu = lu.at[..., -1, -1].set(_ufuncs.true_divide(1, partial_det[..., -2]))
    permutation = _shape.broadcast_to(permutation, (*batch, m))
    probe = ones((*batch, m, 1), dtype)
    probe = lax_linalg.triangular_solve(lu, probe, left_side=True, lower=False)
    degenerate = _reductions.any(
        _ufuncs.logical_not(_ufuncs.isfinite(probe)), axis=(-2, -1), keepdims=True
    )
    zero = zeros_like(x)
    x = _shape.where(degenerate, zero, x)
    x = _take_rows(x, permutation)
    x = lax_linalg.triangular_solve(lu, x, left_side=True, lower=True, unit_diagonal=True)
    det = partial_det[..., -1]
    scale = lax.expand_dims(det, (len(batch), len(batch) + 1))
    x = _shape.concatenate([_ufuncs.multiply(x[..., :-1, :], scale), x[..., -1:, :]], axis=-2)
    x = lax_linalg.triangular_solve(lu, x, left_side=True, lower=False)
    return det, _shape.where(degenerate, zero, x)


@custom_jvp
def _det(a):
    sign, logabsdet = slogdet(a)
    return _ufuncs.multiply(sign, convert(_ufuncs.exp(logabsdet), _dtype_of(sign)))


@_det.defjvp
def _det_jvp(primals, tangents):
    # d det(A) = trace(adj(A) dA).
    (x,), (g,) = primals, tangents
    det, adj_g = _cofactor_solve(x, g)
    return det, _contractions.trace(adj_g, axis1=-1, axis2=-2)


@staged("det")
def det(a):
    """The determinant of each square matrix of ``a``.

    2x2 and 3x3 matrices use the closed form; larger ones an LU decomposition, with the
    adjugate as derivative (defined for singular matrices too).

    Example:
      >>> det(jnp.array([[1., 2.], [3., 4.]]))  # -2.
    """
    (a,) = _inexact("det", a)
    _check_square("det", a)
    n = _shape_of(a)[-1]
    if n == 2:
        return _det_2x2(a)
    if n == 3:
        return _det_3x3(a)
    return _det(a)


# --------------------------------------------------------------------------- decompositions


@staged("cholesky", static_argnames=("upper", "symmetrize_input"))
def cholesky(a, *, upper=False, symmetrize_input=True):
    """The Cholesky factor of each Hermitian positive-definite matrix: lower ``L`` with
    ``a == L @ L^H`` (or upper ``U = L^H`` if ``upper``); NaN where ``a`` is not positive
    definite.

    Args:
      a: ``(..., n, n)``.
      upper: return the upper factor.
      symmetrize_input: use ``(a + a^H) / 2`` (both triangles count, and gradients are
        symmetric); otherwise only the lower triangle is read.

    Example:
      >>> cholesky(jnp.array([[4., 2.], [2., 5.]]))  # [[2., 0.], [1., 2.]]
    """
    (a,) = _inexact("cholesky", a)
    factor = lax_linalg.cholesky(a, symmetrize_input=symmetrize_input)
    return _H(factor) if upper else factor


@staged("qr", static_argnames=("mode",))
def qr(a, mode="reduced"):
    """The QR decomposition of each matrix of ``a`` (``(..., m, n)``, ``k = min(m, n)``).

    Args:
      mode: ``"reduced"`` (or ``"full"``): ``Q`` ``(..., m, k)``, ``R`` ``(..., k, n)``;
        ``"complete"``: ``Q`` ``(..., m, m)``, ``R`` ``(..., m, n)``; ``"r"``: ``R`` alone
        (reduced); ``"raw"``: LAPACK's ``(a.mT, taus)`` (Householder reflectors below
        ``R``, transposed, and their scales).

    Example:
      >>> q, r = qr(jnp.array([[3., 1.], [4., 2.]]))  # q @ r == a
    """
    (a,) = _inexact("qr", a)
    if mode == "raw":
        packed, taus = geqrf(a)
        return QRResult(_shape.matrix_transpose(packed), taus)
    if mode in ("reduced", "r", "full"):
        full_matrices = False
    elif mode == "complete":
        full_matrices = True
    else:
        raise ValueError(f"Unsupported QR decomposition mode '{mode}'")
    q, r = lax_linalg.qr(a, pivoting=False, full_matrices=full_matrices)
    return r if mode == "r" else QRResult(q, r)


def _uplo_lower(uplo):
    if uplo is None or uplo == "L":
        return True
    if uplo == "U":
        return False
    raise ValueError(f"UPLO must be one of None, 'L', or 'U', got {uplo}")


@staged("eigh", static_argnames=("UPLO", "symmetrize_input"))
def eigh(a, UPLO=None, symmetrize_input=True):  # noqa: N803  (NumPy's name)
    """Eigenvalues (ascending) and eigenvectors of each Hermitian matrix of ``a``.

    Args:
      a: ``(..., n, n)``.
      UPLO: ``"L"`` (default) or ``"U"``: the triangle read when not symmetrizing.
      symmetrize_input: use ``(a + a^H) / 2``.

    Returns:
      ``EighResult(eigenvalues, eigenvectors)``, eigenvectors as columns.

    Example:
      >>> w, v = eigh(jnp.array([[2., 1.], [1., 2.]]))  # w == [1., 3.]
    """
    (a,) = _arrays("eigh", a)
    lower = _uplo_lower(UPLO)
    (a,) = promote_dtypes_inexact(a)
    vectors, values = lax_linalg.eigh(a, lower=lower, symmetrize_input=symmetrize_input)
    return EighResult(values, vectors)


@staged("eigvalsh", static_argnames=("UPLO", "symmetrize_input"))
def eigvalsh(a, UPLO="L", *, symmetrize_input=True):  # noqa: N803  (NumPy's name)
    """The eigenvalues (ascending) of each Hermitian matrix of ``a``.

    Example:
      >>> eigvalsh(jnp.array([[2., 1.], [1., 2.]]))  # [1., 3.]
    """
    (a,) = _inexact("eigvalsh", a)
    return eigh(a, UPLO, symmetrize_input=symmetrize_input).eigenvalues


def eig(a):
    """Eigenvalues and right eigenvectors of each square matrix of ``a`` (complex results;
    CPU only, as in JAX).

    Example:
      >>> w, v = eig(jnp.array([[0., 1.], [-1., 0.]]))  # w == [1j, -1j]
    """
    (a,) = _inexact("eig", a)
    w, v = lax_linalg.eig(a, compute_left_eigenvectors=False)
    return EigResult(w, v)


@staged("eigvals")
def eigvals(a):
    """The eigenvalues of each square matrix of ``a`` (complex).

    Example:
      >>> eigvals(jnp.array([[0., 1.], [-1., 0.]]))  # [1j, -1j]
    """
    (a,) = _inexact("eigvals", a)
    return lax_linalg.eig(a, compute_left_eigenvectors=False, compute_right_eigenvectors=False)[0]


def _hermitian_svd(a, compute_uv, subset_by_index):
    """The SVD from ``eigh``: singular values are the eigenvalues' magnitudes, sorted
    descending; ``Vh`` is ``U^H`` with each column's eigenvalue sign folded in."""
    vectors, values = lax_linalg.eigh(a, subset_by_index=subset_by_index)
    s = _ufuncs.abs(values)
    last = aval_of(s).ndim - 1
    if not compute_uv:
        return lax.rev(lax.sort(s, dimension=last), (last,))
    sign = _ufuncs.sign(values)
    order = lax.broadcasted_iota(dtypes.int32, _shape_of(s), last)
    s, order, sign = lax.sort((s, order, sign), dimension=last, num_keys=1)
    s, order, sign = (lax.rev(x, (last,)) for x in (s, order, sign))
    u = _take_columns(vectors, order)
    signs = convert(lax.expand_dims(sign, (last,)), _dtype_of(u))
    return SVDResult(u, s, _H(_ufuncs.multiply(u, signs)))


def svd(a, full_matrices=True, compute_uv=True, hermitian=False, subset_by_index=None):
    """The singular value decomposition ``a == U @ diag(S) @ Vh`` of each matrix.

    Args:
      a: ``(..., m, n)``; ``k = min(m, n)``.
      full_matrices: ``U`` ``(..., m, m)`` and ``Vh`` ``(..., n, n)``; else ``(..., m, k)``
        and ``(..., k, n)``.
      compute_uv: return ``SVDResult(U, S, Vh)``; otherwise ``S`` alone.
      hermitian: ``a`` is Hermitian: use ``eigh``.
      subset_by_index: ``(start, end)``: only those singular values (where the kernel
        supports it).

    Returns:
      ``SVDResult`` or the singular values ``(..., k)``, descending.

    Example:
      >>> svd(jnp.array([[3., 0.], [0., 4.]]), compute_uv=False)  # [4., 3.]
    """
    (a,) = _inexact("svd", a)
    if hermitian:
        return _hermitian_svd(a, compute_uv, subset_by_index)
    if compute_uv:
        u, s, vh = lax_linalg.svd(
            a, full_matrices=full_matrices, compute_uv=True, subset_by_index=subset_by_index
        )
        return SVDResult(u, s, vh)
    return lax_linalg.svd(
        a, full_matrices=full_matrices, compute_uv=False, subset_by_index=subset_by_index
    )


def svdvals(x, /):
    """The singular values of each matrix, descending.

    Example:
      >>> svdvals(jnp.array([[3., 0.], [0., 4.]]))  # [4., 3.]
    """
    (x,) = _arrays("svdvals", x)
    return svd(x, compute_uv=False, hermitian=False)

"""The factorizations and solves of ``xform.scipy.linalg`` (Cholesky, LU, QR, SVD, eigh,
Schur, Hessenberg; triangular and general solves, det, inv), from ``xform.lax.linalg``'s
kernels, and the helpers the package's other modules share.
"""

import warnings

import numpy as np

from xform import dtypes, lax
from xform import numpy as xnp
from xform.api.batching import vmap
from xform.lax import linalg as lax_linalg
from xform.numpy import linalg as xnp_linalg
from xform.numpy._promote import (
    promote_dtypes_inexact,
)
from xform.scipy.special import gammaln

__all__ = [
    "cho_factor",
    "cho_solve",
    "cholesky",
    "det",
    "eigh",
    "hessenberg",
    "inv",
    "lu",
    "lu_factor",
    "lu_solve",
    "qr",
    "qr_multiply",
    "rsf2csf",
    "schur",
    "solve",
    "solve_triangular",
    "svd",
]

_HIGHEST = lax.Precision.HIGHEST


# --------------------------------------------------------------------------- helpers


def _vectorize(fn, core_ranks):
    """``fn`` on core arrays of ranks ``core_ranks``, lifted to stacks of them: the leading
    dimensions broadcast against each other and are mapped with ``vmap`` (``jnp.vectorize``
    with a signature, for functions that only take single matrices)."""

    def vectorized(*args):
        batch = xnp.broadcast_shapes(
            *(x.shape[: x.ndim - r] for x, r in zip(args, core_ranks, strict=True))
        )
        args = [
            xnp.broadcast_to(x, batch + x.shape[x.ndim - r :])
            for x, r in zip(args, core_ranks, strict=True)
        ]
        mapped = fn
        for _ in batch:
            mapped = vmap(mapped)
        return mapped(*args)

    return vectorized


def _broadcast_batch(*args):
    """Matrices (and stacks of them) broadcast to one batch shape, as ``jnp.vectorize``."""
    batch = xnp.broadcast_shapes(*(x.shape[:-2] for x in args))
    return [xnp.broadcast_to(x, batch + x.shape[-2:]) for x in args]


def _check_square(name, x, what="a"):
    if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
        raise ValueError(
            f"{name}: expected {what} to be a (batched) square matrix, got {what}.shape={x.shape}"
        )


def _dot(a, b):
    return xnp.matmul(a, b, precision=_HIGHEST)


def _H(x):
    """The conjugate transpose of the last two axes."""
    return xnp.conj(x.mT)


def _strong(x):
    """``x`` with its dtype made strong: what a JAX kernel (a convolution, a dot) returns."""
    return lax.convert_element_type(x, x.dtype)


def _diag(v):
    """A (stack of) square matrix with ``v`` on the diagonal and exact zeros elsewhere."""
    n = v.shape[-1]
    return xnp.where(np.eye(n, dtype=bool), v[..., None, :], xnp.zeros((), v.dtype))


def _diagonal(x):
    return xnp.diagonal(x, axis1=-2, axis2=-1)


def _complex_dtype(dtype):
    """JAX's ``to_complex_dtype``: the complex type with (at least) ``dtype``'s precision."""
    dtype = np.dtype(dtype)
    if dtypes.is_complex(dtype):
        return dtype
    # Through the inexact type: 64-bit floats and integers widen to complex128.
    return dtypes.complex128 if dtype.itemsize == 8 and dtype.kind in "fiu" else dtypes.complex64


def _nonzero(mask, size):
    """The first ``size`` indices where the 1-D ``mask`` holds, padded with 0 (``jnp.nonzero``
    with a static ``size``)."""
    n = mask.shape[0]
    rank = xnp.cumsum(mask.astype(np.int32)) - 1
    hit = mask[None, :] & (rank[None, :] == np.arange(size, dtype=np.int32)[:, None])
    return xnp.sum(xnp.where(hit, np.arange(n, dtype=np.int32)[None, :], 0), axis=1)


def _binom(n, k):
    """Binomial coefficients from ``lgamma`` (exact for the small integers the special
    matrices need, to rounding); zero where ``k > n``."""
    return xnp.exp(lax.lgamma(n + 1.0) - lax.lgamma(n - k + 1.0) - lax.lgamma(k + 1.0))


def _comb(n, k):
    """``scipy.special.comb(n, k)`` in floating point: zero outside ``0 <= k <= n``."""
    ok = (k <= n) & (n >= 0) & (k >= 0)
    n = xnp.where(ok, n, 0.0)
    k = xnp.where(ok, k, 0.0)
    return xnp.where(ok, xnp.exp(gammaln(n + 1) - gammaln(k + 1) - gammaln(n + 1 - k)), 0.0)


def _kind(name, kind):
    kind = "symmetric" if kind is None else kind
    if kind not in ("symmetric", "lower", "upper"):
        raise ValueError(
            f"{name}: kind must be 'symmetric' (or None), 'lower' or 'upper', got {kind!r}"
        )
    return kind


# --------------------------------------------------------------------------- triangular solves


def _trans_flags(trans):
    if trans in (0, "N"):
        return False, False
    if trans in (1, "T"):
        return True, False
    if trans in (2, "C"):
        return True, True
    raise ValueError(f"solve_triangular: trans must be 0 or 'N', 1 or 'T', 2 or 'C', got {trans!r}")


def _solve_rhs(name, a, b, solve):
    """Apply ``solve(a, b)`` (same batch dimensions, ``b`` a stack of matrices) with SciPy's
    right-hand sides: ``b`` of shape ``(n,)`` is a vector, ``(..., n, k)`` a stack of matrices;
    ``a``'s and ``b``'s batch dimensions broadcast."""
    _check_square(name, a)
    if b.ndim == 0:
        raise ValueError(f"{name}: b must be at least 1-dimensional, got a scalar")
    vector = b.ndim == 1
    if not vector and a.ndim == b.ndim + 1 and a.shape[-1] == b.shape[-1]:
        warnings.warn(
            f"xform.scipy.linalg.{name}: batched 1D solves with b.ndim > 1 are "
            "deprecated (as in JAX), and in the future will be treated as a batched "
            f"2D solve. Use {name}(..., b[..., None]).squeeze(-1) to avoid this "
            "warning.",
            category=FutureWarning,
            stacklevel=3,
        )
        vector = True
    if vector:
        b = b[..., None]
    if b.shape[-2] != a.shape[-1]:
        raise ValueError(
            f"{name}: inconsistent sizes: a has shape {a.shape} but b has {b.shape[-2]} rows"
        )
    a, b = _broadcast_batch(a, b)
    x = solve(a, b)
    return x[..., 0] if vector else x


def solve_triangular(
    a,
    b,
    trans=0,
    lower=False,
    unit_diagonal=False,
    overwrite_b=False,
    debug=None,
    check_finite=True,
):
    """Solve ``a @ x = b`` (``trans`` 0 or ``'N'``), ``a.T @ x = b`` (1, ``'T'``) or
    ``a.conj().T @ x = b`` (2, ``'C'``) for a triangular ``a``.

    Args:
      a: array of shape ``(..., n, n)``; only its ``lower`` (or upper) triangle is read, and
        not its diagonal if ``unit_diagonal``.
      b: array of shape ``(n,)`` or ``(..., n, k)``.

    Returns:
      ``x``, of shape ``(..., n)`` or ``(..., n, k)``.

    Example:
      >>> solve_triangular(xform.numpy.array([[2., 1.], [0., 4.]]), xform.numpy.ones(2))
      ... # [0.375, 0.25]
    """
    del overwrite_b, debug, check_finite
    transpose_a, conjugate_a = _trans_flags(trans)
    a, b = promote_dtypes_inexact(xnp.asarray(a), xnp.asarray(b))

    def solve(a, b):
        return lax_linalg.triangular_solve(
            a,
            b,
            left_side=True,
            lower=lower,
            transpose_a=transpose_a,
            conjugate_a=conjugate_a,
            unit_diagonal=unit_diagonal,
        )

    return _solve_rhs("solve_triangular", a, b, solve)


# --------------------------------------------------------------------------- Cholesky


def cholesky(a, lower=False, overwrite_a=False, check_finite=True):
    """The Cholesky factor of a (stack of) Hermitian positive-definite ``a``: upper ``U``
    with ``a = U^H U``, or lower ``L`` with ``a = L L^H`` if ``lower``. Only that triangle
    of ``a`` is read."""
    del overwrite_a, check_finite
    (a,) = promote_dtypes_inexact(xnp.asarray(a))
    factor = lax_linalg.cholesky(a if lower else _H(a), symmetrize_input=False)
    return factor if lower else _H(factor)


def cho_factor(a, lower=False, overwrite_a=False, check_finite=True):
    """``(c, lower)``: the Cholesky factor of ``a`` and which triangle it is, for
    :func:`cho_solve`."""
    del overwrite_a, check_finite
    return cholesky(a, lower=lower), lower


def cho_solve(c_and_lower, b, overwrite_b=False, check_finite=True):
    """Solve ``a @ x = b`` given ``(c, lower) = cho_factor(a)``; ``b`` of shape ``(n,)`` or
    ``(..., n, k)``.

    Example:
      >>> a = xform.numpy.array([[4., 2.], [2., 3.]])
      >>> cho_solve(cho_factor(a), xform.numpy.array([6., 5.]))  # [1., 1.]
    """
    del overwrite_b, check_finite
    c, lower = c_and_lower
    c, b = promote_dtypes_inexact(xnp.asarray(c), xnp.asarray(b))

    def solve(c, b):
        # a = L L^H: solve with L, then with L^H (the upper factor is U = L^H).
        y = lax_linalg.triangular_solve(
            c, b, left_side=True, lower=lower, transpose_a=not lower, conjugate_a=not lower
        )
        return lax_linalg.triangular_solve(
            c, y, left_side=True, lower=lower, transpose_a=lower, conjugate_a=lower
        )

    return _solve_rhs("cho_solve", c, b, solve)


# --------------------------------------------------------------------------- LU


def lu_factor(a, overwrite_a=False, check_finite=True):
    """``(lu, piv)``: ``L`` (unit diagonal, not stored) and ``U`` packed in one array of shape
    ``(..., m, n)``, and LAPACK's pivots (row ``i`` was swapped with row ``piv[i]``)."""
    del overwrite_a, check_finite
    (a,) = promote_dtypes_inexact(xnp.asarray(a))
    lu_, pivots, _ = lax_linalg.lu(a)
    return lu_, pivots


def _lu_solve_matrix(lu_, perm, b, trans):
    """Solve with one square LU factorization (``a[perm] = L @ U``) for a matrix ``b``."""
    if trans == 0:
        x = b[perm, :]
        x = lax_linalg.triangular_solve(lu_, x, left_side=True, lower=True, unit_diagonal=True)
        return lax_linalg.triangular_solve(lu_, x, left_side=True, lower=False)
    conj = trans == 2
    x = lax_linalg.triangular_solve(
        lu_, b, left_side=True, lower=False, transpose_a=True, conjugate_a=conj
    )
    x = lax_linalg.triangular_solve(
        lu_, x, left_side=True, lower=True, unit_diagonal=True, transpose_a=True, conjugate_a=conj
    )
    _, inverse = lax.sort_key_val(perm, lax.iota(np.int32, perm.shape[0]))
    return x[inverse, :]


def lu_solve(lu_and_piv, b, trans=0, overwrite_b=False, check_finite=True):
    """Solve ``a @ x = b`` (``trans=0``), ``a.T @ x = b`` (1) or ``a.conj().T @ x = b`` (2)
    given ``(lu, piv) = lu_factor(a)``; ``b`` of shape ``(n,)`` or ``(..., n, k)``.

    Example:
      >>> a = xform.numpy.array([[1., 2.], [3., 4.]])
      >>> lu_solve(lu_factor(a), xform.numpy.array([3., 7.]))  # [1., 1.]
    """
    del overwrite_b, check_finite
    if trans not in (0, 1, 2):
        raise ValueError(f"lu_solve: trans must be 0, 1 or 2, got {trans!r}")
    lu_, pivots = lu_and_piv
    lu_, b = promote_dtypes_inexact(xnp.asarray(lu_), xnp.asarray(b))
    _check_square("lu_solve", lu_, "lu")
    perm = lax_linalg.lu_pivots_to_permutation(pivots, lu_.shape[-1])

    def solve(lu_, b):
        batch = lu_.shape[:-2]
        perm_b = xnp.broadcast_to(perm, batch + perm.shape[-1:])
        return _vectorize(lambda x, p, y: _lu_solve_matrix(x, p, y, trans), (2, 1, 2))(
            lu_, perm_b, b
        )

    return _solve_rhs("lu_solve", lu_, b, solve)


def lu(a, permute_l=False, overwrite_a=False, check_finite=True):
    """The LU decomposition ``a = P @ L @ U`` of an ``(m, n)`` matrix.

    Returns:
      ``(P, L, U)``, or ``(P @ L, U)`` if ``permute_l``: ``P`` an ``(m, m)`` permutation
      matrix, ``L`` ``(m, k)`` lower triangular with a unit diagonal, ``U`` ``(k, n)`` upper
      triangular, ``k = min(m, n)``.
    """
    del overwrite_a, check_finite
    (a,) = promote_dtypes_inexact(xnp.asarray(a))
    if a.ndim != 2:
        raise ValueError(
            f"lu: expected a matrix (JAX's scipy.linalg.lu takes no batch "
            f"dimensions), got a.shape={a.shape}"
        )
    lu_, _, permutation = lax_linalg.lu(a)
    m, n = a.shape
    k = min(m, n)
    p = xnp.real(
        (permutation[None, :] == xnp.arange(m, dtype=permutation.dtype)[:, None]).astype(a.dtype)
    )
    lower = xnp.tril(lu_, -1)[:, :k] + xnp.eye(m, k, dtype=a.dtype)
    upper = xnp.triu(lu_)[:k, :]
    if permute_l:
        return _dot(p, lower), upper
    return p, lower, upper


# --------------------------------------------------------------------------- solve, det, inv


def _solve_pos(a, b, lower):
    """``a^-1 b`` for a stack of positive-definite ``a`` (one triangle read by the Cholesky
    factorization) and a stack of matrices ``b`` of the same batch shape. As in JAX, the
    derivatives come from ``custom_linear_solve``: they treat ``a`` as the whole matrix it
    multiplies by, and reuse the factorization."""
    factors = cho_factor(lax.stop_gradient(a), lower=lower)
    return lax.custom_linear_solve(
        lambda x: _dot(a, x), b, solve=lambda _, x: cho_solve(factors, x), symmetric=True
    )


def solve(
    a,
    b,
    lower=False,
    overwrite_a=False,
    overwrite_b=False,
    debug=False,
    check_finite=True,
    assume_a="gen",
):
    """Solve ``a @ x = b``.

    Args:
      a: array of shape ``(..., n, n)``.
      b: array of shape ``(..., n)`` or ``(..., n, k)``.
      lower: with ``assume_a='pos'``, read the lower triangle of ``a`` (default the upper).
      assume_a: ``'gen'`` (LU), ``'sym'``, ``'her'`` (as ``'gen'``, as in JAX) or ``'pos'``
        (Cholesky).

    Returns:
      ``x`` with ``b``'s shape; NaN or inf for a singular ``a``.

    Example:
      >>> solve(xform.numpy.array([[3., 1.], [1., 2.]]), xform.numpy.array([9., 8.]))  # [2., 3.]
    """
    del overwrite_a, overwrite_b, debug, check_finite
    valid = ["gen", "sym", "her", "pos"]
    if assume_a not in valid:
        raise ValueError(f"solve: assume_a must be one of {valid}, got {assume_a!r}")
    a, b = promote_dtypes_inexact(xnp.asarray(a), xnp.asarray(b))
    if assume_a != "pos":
        return xnp_linalg.solve(a, b)
    if not (
        a.ndim >= 2
        and b.ndim in (a.ndim, a.ndim - 1)
        and a.shape[-1] == a.shape[-2] == b.shape[a.ndim - 2]
    ):
        raise ValueError(
            "solve: with assume_a='pos' the shapes must be a=[..., m, m] and "
            f"b=[..., m] or b=[..., m, k], got a.shape={a.shape} and "
            f"b.shape={b.shape}"
        )
    vector = a.ndim == b.ndim + 1
    a, b = _broadcast_batch(a, b[..., None] if vector else b)
    x = _solve_pos(a, b, lower)
    return x[..., 0] if vector else x


def det(a, overwrite_a=False, check_finite=True):
    """The determinant of a (stack of) square matrix (as ``xform.numpy.linalg.det``)."""
    del overwrite_a, check_finite
    return xnp_linalg.det(a)


def inv(a, overwrite_a=False, check_finite=True):
    """The inverse of a (stack of) square matrix (prefer :func:`solve` to ``inv(a) @ b``)."""
    del overwrite_a, check_finite
    return xnp_linalg.inv(a)


# --------------------------------------------------------------------------- QR, SVD, eigh


def qr(a, overwrite_a=False, lwork=None, mode="full", pivoting=False, check_finite=True):
    """The QR decomposition ``a = Q @ R`` (``a[:, P] = Q @ R`` with ``pivoting``).

    Args:
      a: array of shape ``(..., m, n)``.
      mode: ``'full'`` (``Q`` is ``(m, m)``), ``'economic'`` (``(m, k)``, ``k = min(m, n)``)
        or ``'r'`` (only ``R``).
      pivoting: column pivoting, so that ``R``'s diagonal does not increase in magnitude.

    Returns:
      ``(Q, R)``, ``(Q, R, P)``, ``(R,)`` or ``(R, P)`` (SciPy's tuples, also for ``'r'``).
    """
    del overwrite_a, lwork, check_finite
    if mode in ("full", "r"):
        full_matrices = True
    elif mode == "economic":
        full_matrices = False
    else:
        raise ValueError(f"qr: mode must be 'full', 'economic' or 'r', got {mode!r}")
    (a,) = promote_dtypes_inexact(xnp.asarray(a))
    q, r, *p = lax_linalg.qr(a, pivoting=pivoting, full_matrices=full_matrices)
    if mode == "r":
        return (r, p[0]) if pivoting else (r,)
    return (q, r, p[0]) if pivoting else (q, r)


def qr_multiply(
    a, c, mode="right", pivoting=False, conjugate=False, overwrite_a=False, overwrite_c=False
):
    """The QR decomposition of ``a`` with ``Q`` multiplied into ``c``.

    Args:
      a: array of shape ``(..., m, n)``.
      c: for ``mode='left'`` an array ``(..., k, p)`` (``k = min(m, n)``), giving ``Q @ c``;
        for ``mode='right'`` an array ``(..., p, m)``, giving ``c @ Q``. A 1-D ``c`` is a
        column (left) or row (right) and the product is raveled.
      conjugate: use ``conj(Q)``.

    Returns:
      ``(product, R)``, or ``(product, R, P)`` with ``pivoting``; ``R`` is ``(..., k, n)``.
    """
    del overwrite_a, overwrite_c
    a, c = promote_dtypes_inexact(xnp.asarray(a), xnp.asarray(c))
    if mode not in ("right", "left"):
        raise ValueError(f"qr_multiply: mode must be 'right' or 'left', got {mode!r}")
    onedim = c.ndim == 1
    if onedim:
        c = c[:, None] if mode == "left" else c[None, :]
    m, n = a.shape[-2:]
    k = min(m, n)
    if mode == "left" and c.shape[-2] != k:
        raise ValueError(
            f"qr_multiply: Q @ c needs c with {k} rows (Q of a with shape "
            f"{a.shape} has {k} columns), got c.shape={c.shape}"
        )
    if mode == "right" and c.shape[-1] != m:
        raise ValueError(
            f"qr_multiply: c @ Q needs c with {m} columns (Q of a with shape "
            f"{a.shape} has {m} rows), got c.shape={c.shape}"
        )
    a, c = _broadcast_batch(a, c)
    # The economic Q is all of Q that meets c: Q @ [c; 0] and (c @ Q)[:, :k] only see it.
    q, r, *p = lax_linalg.qr(a, pivoting=pivoting, full_matrices=False)
    if conjugate:
        q = xnp.conj(q)
    product = _dot(q, c) if mode == "left" else _dot(c, q)
    if onedim:
        product = product.ravel()
    return (product, r, p[0]) if pivoting else (product, r)


def svd(
    a,
    full_matrices=True,
    compute_uv=True,
    overwrite_a=False,
    check_finite=True,
    lapack_driver="gesdd",
):
    """The singular value decomposition ``a = U @ diag(s) @ Vh``.

    Returns:
      ``(U, s, Vh)`` (``U`` ``(..., m, m)`` and ``Vh`` ``(..., n, n)``, or ``(..., m, k)`` and
      ``(..., k, n)`` without ``full_matrices``), or only ``s`` without ``compute_uv``.
    """
    del overwrite_a, check_finite, lapack_driver
    (a,) = promote_dtypes_inexact(xnp.asarray(a))
    return lax_linalg.svd(a, full_matrices=full_matrices, compute_uv=compute_uv)


def eigh(
    a,
    b=None,
    lower=True,
    eigvals_only=False,
    overwrite_a=False,
    overwrite_b=False,
    turbo=True,
    eigvals=None,
    type=1,  # noqa: A002  (SciPy's name)
    check_finite=True,
):
    """Eigenvalues (ascending) and eigenvectors of a (stack of) Hermitian matrix.

    Only the standard problem is implemented, as in JAX: ``b``, ``eigvals`` and ``type != 1``
    raise ``NotImplementedError``.

    Returns:
      ``(w, v)`` with ``a @ v == v * w``, or ``w`` if ``eigvals_only``.
    """
    del overwrite_a, overwrite_b, turbo, check_finite
    if b is not None:
        raise NotImplementedError(
            "eigh: the generalized problem (b is not None) is not implemented, as in JAX"
        )
    if type != 1:
        raise NotImplementedError(f"eigh: only type=1 is implemented, as in JAX; got {type}")
    if eigvals is not None:
        raise NotImplementedError(
            "eigh: eigvals (a subset of the spectrum) is not implemented, "
            "as in JAX; take a slice of the result"
        )
    (a,) = promote_dtypes_inexact(xnp.asarray(a))
    v, w = lax_linalg.eigh(a, lower=lower)
    return w if eigvals_only else (w, v)


# --------------------------------------------------------------------------- Schur, Hessenberg


def schur(a, output="real"):
    """The Schur decomposition ``a = Z @ T @ Z^H``: ``T`` quasi-upper-triangular (real, with
    2x2 blocks for complex pairs) or upper-triangular (``output='complex'``).

    Returns:
      ``(T, Z)``.
    """
    if output not in ("real", "complex"):
        raise ValueError(f"schur: output must be 'real' or 'complex', got {output!r}")
    a = xnp.asarray(a)
    if output == "complex":
        a = a.astype(_complex_dtype(a.dtype))
    return lax_linalg.schur(a)


def hessenberg(a, *, calc_q=False, overwrite_a=False, check_finite=True):
    """The Hessenberg form ``H`` of ``a`` (zero below the first sub-diagonal), with the
    unitary ``Q`` (``a = Q @ H @ Q^H``) if ``calc_q``.

    Returns:
      ``H``, or ``(H, Q)`` if ``calc_q``.
    """
    del overwrite_a, check_finite
    a = xnp.asarray(a)
    n = a.shape[-1]
    if n == 0:
        return (xnp.zeros_like(a), xnp.zeros_like(a)) if calc_q else xnp.zeros_like(a)
    packed, taus = lax_linalg.hessenberg(a)
    h = xnp.triu(packed, -1)
    if not calc_q:
        return h
    # Q = diag(1, Q'), with Q' the product of the reflectors stored below the sub-diagonal.
    q = lax_linalg.householder_product(packed[..., 1:, :-1], taus)
    batch = packed.shape[:-2]
    top = xnp.concatenate(
        [xnp.ones(batch + (1, 1), packed.dtype), xnp.zeros(batch + (1, n - 1), packed.dtype)],
        axis=-1,
    )
    rest = xnp.concatenate([xnp.zeros(batch + (n - 1, 1), packed.dtype), q], axis=-1)
    return h, xnp.concatenate([top, rest], axis=-2)


def rsf2csf(T, Z, check_finite=True):  # noqa: N803  (SciPy's names)
    """Convert a real Schur form ``(T, Z)`` to the complex one (``T`` upper triangular) by
    Givens rotations that split each 2x2 block.

    Returns:
      ``(T, Z)``, complex, of the inputs' (broadcast) shapes.
    """
    del check_finite
    t, z = xnp.asarray(T), xnp.asarray(Z)
    if t.ndim < 2 or t.shape[-1] != t.shape[-2]:
        raise ValueError(f"rsf2csf: T must be a (stack of) square matrix, got T.shape={t.shape}")
    if z.ndim < 2 or z.shape[-1] != z.shape[-2]:
        raise ValueError(f"rsf2csf: Z must be a (stack of) square matrix, got Z.shape={z.shape}")
    if t.shape[-1] != z.shape[-1]:
        raise ValueError(
            f"rsf2csf: T and Z must be matrices of one size, got T.shape={t.shape} "
            f"and Z.shape={z.shape}"
        )
    return _vectorize(_rsf2csf_matrix, (2, 2))(t, z)


def _rsf2csf_matrix(t, z):
    dtype = _complex_dtype(xnp.result_type(t, z))
    t, z = t.astype(dtype), z.astype(dtype)
    n = t.shape[0]
    if n == 1:
        return t, z
    eps = dtypes.finfo(dtype).eps
    cols = np.arange(n)

    def split_block(m, t, z):
        # A rotation G of rows/columns m-1, m that zeroes t[m, m-1].
        block = lax.dynamic_slice(t, (m - 1, m - 1), (2, 2))
        mu = xnp_linalg.eigvals(block) - t[m, m]
        r = xnp_linalg.norm(xnp.stack([mu[0], t[m, m - 1]])).astype(dtype)
        c, s = mu[0] / r, t[m, m - 1] / r
        g = xnp.stack([xnp.stack([xnp.conj(c), s]), xnp.stack([-s, c])])
        rows = lax.dynamic_slice_in_dim(t, m - 1, 2, axis=0)
        right_of = cols >= m - 1
        rows = xnp.where(right_of, g @ xnp.where(right_of, rows, 0), rows)
        t = lax.dynamic_update_slice_in_dim(t, rows, m - 1, axis=0)
        pair = lax.dynamic_slice_in_dim(t, m - 1, 2, axis=1)
        above = (cols < m + 1)[:, None]
        pair = xnp.where(above, xnp.where(above, pair, 0) @ _H(g), pair)
        t = lax.dynamic_update_slice_in_dim(t, pair, m - 1, axis=1)
        zpair = lax.dynamic_slice_in_dim(z, m - 1, 2, axis=1)
        z = lax.dynamic_update_slice_in_dim(z, zpair @ _H(g), m - 1, axis=1)
        return t, z

    def step(i, tz):
        t, z = tz
        m = n - i
        coupled = xnp.abs(t[m, m - 1]) > eps * (xnp.abs(t[m - 1, m - 1]) + xnp.abs(t[m, m]))
        t, z = lax.cond(coupled, split_block, lambda m, t, z: (t, z), m, t, z)
        return t.at[m, m - 1].set(0), z

    return lax.fori_loop(1, n, step, (t, z))

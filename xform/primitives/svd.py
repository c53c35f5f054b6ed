"""The singular-value family: ``svd`` on jaxlib's LAPACK kernels (``gesdd``, divide and
conquer, by default; ``gesvd`` for ``SvdAlgorithm.QR``), ``symmetric_product``
(``alpha a a^T + beta c``, a contraction as in JAX) and ``qdwh`` (the polar decomposition by
QR-based dynamically weighted Halley iteration, a composition of ``qr``, ``cholesky`` and
``triangular_solve``, as JAX's).

Leading dimensions are batch dimensions, and the matrix helpers are ``linalg.py``'s.
"""

import enum

import numpy as np

from xform import dtypes
from xform.core import ShapedArray, get_aval
from xform.interpret import ad
from xform.primitives.base import FLOAT, check_dtype, standard_primitive
from xform.primitives.comparisons import eq, gt, lt, select
from xform.primitives.elementwise import abs as abs_
from xform.primitives.elementwise import (
    add,
    bitwise_and,
    bitwise_not,
    convert_element_type,
    div,
    mul,
    real,
    sub,
)
from xform.primitives.indexing import (
    dynamic_index_in_dim,
    dynamic_slice_in_dim,
    dynamic_update_slice_in_dim,
    index_in_dim,
    slice_in_dim,
)
from xform.primitives.linalg import (
    adjoint,
    batch_at_front,
    batch_dims_of,
    check_matrix,
    cholesky,
    const,
    eye_like,
    matmul,
    matrix_transpose,
    real_dtype,
    triangular_solve,
    tril,
)
from xform.primitives.loops import fori_loop
from xform.primitives.qr import abs2, conj_if_complex, qr
from xform.primitives.reductions import reduce_max, reduce_sum
from xform.primitives.structural import (
    broadcast_in_dim,
    broadcasted_iota,
    concatenate,
    expand_dims,
    pad,
    reshape,
)
from xform.primitives.transcendental import rsqrt, sqrt
from xform.primitives.while_loop import while_loop

__all__ = [
    "SvdAlgorithm",
    "svd",
    "symmetric_product",
    "qdwh",
]


def _as_dtype(x, dtype):
    return x if get_aval(x).dtype == dtype else convert_element_type(x, dtype)


def _diagonal(x):
    """The diagonals of a stack of square matrices ``(..., k, k)``: every ``k + 1``-th entry
    of the flattened matrix."""
    aval = get_aval(x)
    k = aval.shape[-1]
    flat = reshape(x, aval.shape[:-2] + (k * k,))
    return slice_in_dim(flat, 0, k * k, stride=k + 1, axis=aval.ndim - 2)


# --------------------------------------------------------------------------- svd


class SvdAlgorithm(enum.Enum):
    """The LAPACK routine behind ``svd`` on CPU: ``DEFAULT`` and ``DIVIDE_AND_CONQUER`` use
    ``gesdd``, ``QR`` uses ``gesvd``; ``JACOBI`` and ``POLAR`` exist on other backends only."""

    DEFAULT = "default"
    QR = "QR"
    JACOBI = "Jacobi"
    POLAR = "polar"
    DIVIDE_AND_CONQUER = "divide_and_conquer"


def _svd_abstract_eval(x, *, full_matrices, compute_uv, subset_by_index, algorithm):
    name = "lax.linalg.svd"
    check_matrix(name, x, square=False)
    batch, (m, n) = x.shape[:-2], x.shape[-2:]
    rank = min(m, n)
    if subset_by_index is not None:
        if full_matrices and subset_by_index != (0, rank):
            raise ValueError(
                f"{name}: full_matrices and subset_by_index cannot both be set "
                f"(subset_by_index={subset_by_index} for shape {x.shape})"
            )
        rank = min(rank, subset_by_index[1] - subset_by_index[0])
    outs = [ShapedArray(batch + (rank,), real_dtype(x.dtype))]
    if compute_uv:
        outs += [
            ShapedArray(batch + (m, m if full_matrices else rank), x.dtype),
            ShapedArray(batch + (n if full_matrices else rank, n), x.dtype),
        ]
    return outs


svd_p = standard_primitive("svd", _svd_abstract_eval, multiple_results=True)


def svd(x, *, full_matrices=True, compute_uv=True, subset_by_index=None, algorithm=None):
    """Singular value decomposition: ``x == u @ diag(s) @ vh`` for each matrix.

    Args:
      x: ``(..., m, n)``, float or complex.
      full_matrices: ``u`` of ``(..., m, m)`` and ``vh`` of ``(..., n, n)``; otherwise the
        economic ``(..., m, k)`` and ``(..., k, n)``, ``k = min(m, n)``.
      compute_uv: return ``(u, s, vh)``; otherwise only ``s``.
      subset_by_index: ``(start, end)``: only those singular values (largest first). On CPU
        only the whole range ``(0, k)`` can be lowered, as in JAX.
      algorithm: an ``SvdAlgorithm`` or None (``DEFAULT``).

    Returns:
      ``(u, s, vh)`` or ``s``: ``s`` real (``x``'s real dtype), non-negative and
      non-increasing; NaN where LAPACK fails to converge.

    Example:
      >>> u, s, vh = svd(np.array([[3., 0.], [4., 5.]]))  # s == [6.708..., 2.236...]
    """
    if algorithm is not None and not isinstance(algorithm, SvdAlgorithm):
        raise TypeError(
            f"lax.linalg.svd: algorithm must be None or an SvdAlgorithm, got {algorithm!r}"
        )
    if subset_by_index is not None:
        subset_by_index = tuple(int(i) for i in subset_by_index)
        if len(subset_by_index) != 2:
            raise ValueError(
                f"lax.linalg.svd: subset_by_index must be a pair (start, end), "
                f"got {subset_by_index}"
            )
    outs = svd_p.bind(
        x,
        full_matrices=bool(full_matrices),
        compute_uv=bool(compute_uv),
        subset_by_index=subset_by_index,
        algorithm=algorithm,
    )
    if compute_uv:
        s, u, vh = outs
        return u, s, vh
    return outs[0]


def svd_empty(x, *, full_matrices, compute_uv):
    """``svd`` of matrices with no rows or no columns: no singular values, identity (or
    empty) singular vectors. Its lowering there, as JAX's (LAPACK is not called)."""
    aval = get_aval(x)
    batch, (m, n) = aval.shape[:-2], aval.shape[-2:]
    s = broadcast_in_dim(np.array(0, real_dtype(aval.dtype)), batch + (0,), ())
    if not compute_uv:
        return [s]
    k = min(m, n)
    u = eye_like(x, (m, m if full_matrices else k))
    vt = eye_like(x, (n if full_matrices else k, n))
    return [s, u, vt]


def _svd_jvp(primals, tangents, *, full_matrices, compute_uv, subset_by_index, algorithm):
    # With a = u diag(s) v^H and dS = u^H da v: ds = Re diag(dS); du and dv from the
    # off-diagonal of dS scaled by 1 / (s_j^2 - s_i^2), plus, for a non-square a, the parts
    # of da outside the span of u (tall) or v (wide). Townsend, "Differentiating the
    # singular value decomposition" (2016), with the complex diagonal term.
    (a,), (da,) = primals, tangents
    aval = get_aval(a)
    nd, dtype, (m, n) = aval.ndim, aval.dtype, aval.shape[-2:]
    if compute_uv and full_matrices and m != n:
        raise NotImplementedError(
            "Singular value decomposition JVP not implemented for full matrices"
        )
    s, u, vt = svd_p.bind(
        a,
        full_matrices=False,
        compute_uv=True,
        subset_by_index=subset_by_index,
        algorithm=algorithm,
    )
    outs = [s, u, vt] if compute_uv else [s]
    if type(da) is ad.Zero:
        return outs, [ad.Zero(ad.tangent_aval(get_aval(o))) for o in outs]
    ut, v = adjoint(u), adjoint(vt)
    ds_mat = matmul(matmul(ut, da), v)
    ds = _diagonal(real(ds_mat) if dtypes.is_complex(dtype) else ds_mat)
    if not compute_uv:
        return outs, [ds]
    s_row = expand_dims(s, (nd - 2,))
    s_col = matrix_transpose(s_row)
    s_diffs = mul(add(s_row, s_col), sub(s_row, s_col))
    eye = eye_like(s_diffs)
    f = _as_dtype(sub(div(const(s, 1), add(s_diffs, eye)), eye), dtype)
    s_row_c, s_col_c = _as_dtype(s_row, dtype), _as_dtype(s_col, dtype)
    dss, sds = mul(s_row_c, ds_mat), mul(s_col_c, ds_mat)
    s_zeros = _as_dtype(eq(s, const(s, 0)), get_aval(s).dtype)
    s_inv = sub(div(const(s, 1), add(s, s_zeros)), s_zeros)
    s_inv_mat = _as_dtype(mul(eye, expand_dims(s_inv, (nd - 2,))), dtype)
    du_dv_diag = mul(mul(const(a, 0.5), sub(ds_mat, adjoint(ds_mat))), s_inv_mat)
    du = matmul(u, add(mul(f, add(dss, adjoint(dss))), du_dv_diag))
    dv = matmul(v, mul(f, add(sds, adjoint(sds))))
    if m > n:
        da_v = matmul(da, v)
        du = add(du, div(sub(da_v, matmul(u, matmul(ut, da_v))), s_row_c))
    if n > m:
        da_h_u = matmul(adjoint(da), u)
        dv = add(dv, div(sub(da_h_u, matmul(v, matmul(vt, da_h_u))), s_row_c))
    return outs, [ds, du, adjoint(dv)]


ad.jvp_rules[svd_p] = _svd_jvp
batch_at_front(svd_p)


# --------------------------------------------------------------------------- symmetric_product


def _symmetric_product_abstract_eval(a, c, *, alpha, beta):
    name = "lax.linalg.symmetric_product"
    check_dtype(name, a.dtype, (FLOAT,))
    if a.dtype != c.dtype:
        raise TypeError(
            f"{name}: a_matrix and c_matrix must have the same dtype, got {a.dtype} and {c.dtype}"
        )
    if a.ndim < 2 or c.ndim < 2:
        raise ValueError(
            f"{name}: a_matrix and c_matrix must be matrices or stacks of them, "
            f"got shapes {a.shape} and {c.shape}"
        )
    batch_dims_of(name, (a, c), (2, 2))
    if c.shape[-1] != c.shape[-2] or a.shape[-2] != c.shape[-1]:
        raise ValueError(
            f"{name}: takes a rectangular a_matrix of shape (..., n, k) and a "
            f"square c_matrix of shape (..., n, n), got shapes {a.shape} and "
            f"{c.shape}"
        )
    return [ShapedArray(c.shape, c.dtype)]


def _symmetric_product_host(a, c, *, alpha, beta):
    out = alpha * np.matmul(a, np.swapaxes(a, -1, -2)) + beta * c
    return [np.asarray(out, c.dtype)]


symmetric_product_p = standard_primitive(
    "symmetric_product", _symmetric_product_abstract_eval, _symmetric_product_host
)


def symmetric_product(a_matrix, c_matrix, *, alpha=1.0, beta=0.0, symmetrize_output=False):
    """``alpha * a @ a^T + beta * c`` for a symmetric ``c``.

    Args:
      a_matrix: ``(..., n, k)``, float; c_matrix: ``(..., n, n)``.
      symmetrize_output: fill the upper triangle from the lower one. Without it only the
        lower triangle is promised (a kernel may skip the rest; this one computes it all).

    Example:
      >>> symmetric_product(np.ones((2, 3)), np.eye(2), beta=2.)  # [[5., 3.], [3., 5.]]
    """
    out = symmetric_product_p.bind(a_matrix, c_matrix, alpha=float(alpha), beta=float(beta))
    if symmetrize_output:
        out = add(tril(out), matrix_transpose(tril(out, -1)))
    return out


def symmetric_product_composition(a, c, *, alpha, beta):
    """The product as a contraction: the lowering, as JAX's on CPU."""
    return add(mul(const(a, alpha), matmul(a, matrix_transpose(a))), mul(const(c, beta), c))


def _symmetric_product_jvp(primals, tangents, *, alpha, beta):
    (a, c), (da, dc) = primals, tangents
    out = symmetric_product_p.bind(a, c, alpha=alpha, beta=beta)
    total = None
    if type(da) is not ad.Zero:
        half = matmul(da, matrix_transpose(a))
        total = mul(const(a, alpha), add(half, matrix_transpose(half)))
    if type(dc) is not ad.Zero:
        term = mul(const(c, beta), dc)
        total = term if total is None else add(total, term)
    if total is None:
        return [out], [ad.Zero(ad.tangent_aval(get_aval(out)))]
    return [out], [total]


ad.jvp_rules[symmetric_product_p] = _symmetric_product_jvp
batch_at_front(symmetric_product_p)


# --------------------------------------------------------------------------- qdwh
# Nakatsukasa, Bai and Gygi, "Optimizing Halley's iteration for computing the matrix polar
# decomposition", SIAM J. Matrix Anal. Appl. 31(5), 2010. The matrix may be padded from a
# smaller true shape (m, n); rows and columns beyond it are masked.


def _mask(x, dims, alternative=None):
    """``x`` where every index is below ``dims`` (None: no bound), ``alternative`` (default
    0) elsewhere."""
    aval = get_aval(x)
    mask = None
    for i, d in enumerate(dims):
        if d is None or (isinstance(d, int) and d >= aval.shape[i]):
            continue
        inside = lt(
            broadcasted_iota(dtypes.int32, aval.shape, i), convert_element_type(d, dtypes.int32)
        )
        mask = inside if mask is None else bitwise_and(mask, inside)
    if mask is None:
        return x
    if alternative is None:
        alternative = broadcast_in_dim(const(x, 0), aval.shape, ())
    return select(mask, x, alternative)


def _stack_rows(top, bottom, m):
    """``top``'s first ``m`` rows, then ``bottom``."""
    rows = get_aval(top).shape[0]
    if isinstance(m, int) and m == rows:
        return concatenate([top, bottom], 0)
    padded = pad(top, const(top, 0), [(0, get_aval(bottom).shape[0], 0), (0, 0, 0)])
    return dynamic_update_slice_in_dim(padded, bottom, m, 0)


def _frobenius(x):
    return sqrt(reduce_sum(abs2(x), (0, 1)))


def _qdwh_qr_step(u, m, n, params):
    # u <- e u + (a - e) / sqrt(c) q1 q2^H, with [sqrt(c) u; I] = [q1; q2] r.
    a_minus_e_by_sqrt_c, sqrt_c, e = params
    rows, cols = get_aval(u).shape
    y = _stack_rows(mul(sqrt_c, u), eye_like(u, (cols, cols)), m)
    q, _ = qr(y, full_matrices=False)
    q1 = _mask(slice_in_dim(q, 0, rows, axis=0), (m, n))
    q2 = adjoint(_mask(dynamic_slice_in_dim(q, m, cols, axis=0), (n, n)))
    return add(mul(e, u), mul(a_minus_e_by_sqrt_c, matmul(q1, q2)))


def _qdwh_cholesky_step(u, m, n, params):
    # u <- e u + (a - e) u (c u^H u + I)^{-1}, by the Cholesky factor of c u^H u + I (padded
    # with the identity, so the masked corner stays positive definite).
    a_minus_e, c, e = params
    cols = get_aval(u).shape[1]
    eye = eye_like(u, (cols, cols))
    x = add(mul(c, matmul(adjoint(u), u)), eye)
    y = cholesky(_mask(x, (n, n), eye), symmetrize_input=False)
    z = conj_if_complex(
        triangular_solve(y, matrix_transpose(u), left_side=True, lower=True, conjugate_a=True)
    )
    z = adjoint(
        triangular_solve(y, z, left_side=True, lower=True, transpose_a=True, conjugate_a=True)
    )
    return add(mul(e, u), mul(a_minus_e, z))


def _qdwh_coefficients(eps, max_iterations):
    """The dynamically weighted Halley parameters ``(a, b, c)`` per iteration, while the
    lower bound ``l`` on the smallest singular value has not reached 1: as ``(a - e) /
    sqrt(c), sqrt(c), e`` for the QR form (used while ``c`` is large) and ``(a - e, c, e)``
    for the Cholesky form, ``e = b / c``."""
    qr_coefs, chol_coefs = [], []
    lower, tol_l, k = eps, 10.0 * eps / 2.0, 0
    while lower + tol_l < 1 and k < max_iterations:
        k += 1
        l2 = lower * lower
        dd = (4 * (1 / l2 - 1) / l2) ** (1 / 3)
        sqd = (1.0 + dd) ** (1 / 2)
        a = sqd + (2 - dd + 2 * (2 - l2) / (l2 * sqd)) ** (1 / 2)
        b = (a - 1) ** 2 / 4
        c = a + b - 1
        lower = lower * (a + b * l2) / (1 + c * l2)
        e = b / c
        if c > 100:
            qr_coefs.append(((a - e) / c ** (1 / 2), c ** (1 / 2), e))
        else:
            chol_coefs.append((a - e, c, e))
    return qr_coefs, chol_coefs


def qdwh(x, *, is_hermitian=False, max_iterations=None, eps=None, dynamic_shape=None):
    """The polar decomposition ``x = u h`` (``u`` with orthonormal columns, ``h`` Hermitian
    positive semi-definite) by QR-based dynamically weighted Halley iteration, as JAX's.

    Args:
      x: a full-rank ``(M, N)`` matrix, ``M >= N``; float or complex.
      is_hermitian: unused (JAX keeps it for compatibility).
      max_iterations: at most this many iterations (default 10).
      eps: the convergence tolerance's base (default the dtype's machine epsilon).
      dynamic_shape: ``(m, n)``, the true shape of ``x`` padded to ``(M, N)``.

    Returns:
      ``(u, h, num_iters, is_converged)``.

    Example:
      >>> u, h, _, ok = qdwh(np.array([[2., 0.], [0., -3.]]))  # u == diag(1, -1)
    """
    del is_hermitian
    name = "lax.linalg.qdwh"
    aval = get_aval(x)
    check_matrix(name, aval, square=False)
    if aval.ndim != 2:
        raise ValueError(f"{name}: takes one matrix (use vmap for a stack), got shape {aval.shape}")
    rows, cols = aval.shape
    if rows < cols:
        raise ValueError(
            f"{name}: the input matrix of shape M x N must have M >= N, got shape {aval.shape}"
        )
    max_iterations = 10 if max_iterations is None else int(max_iterations)
    if dynamic_shape is not None:
        m, n = dynamic_shape
        x = _mask(x, (m, n))
    else:
        m, n = rows, cols
    dtype, rdtype = aval.dtype, real_dtype(aval.dtype)
    eps = float(np.finfo(dtype).eps) if eps is None else float(eps)
    tol_norm = np.array(np.cbrt(10.0 * eps / 2.0), rdtype)

    # Scale so that ||x||_2 <= 1: 1 / sqrt(||x||_1 ||x||_inf) bounds 1 / ||x||_2.
    abs_x = abs_(x)
    one_norm = reduce_max(reduce_sum(abs_x, (0,)), (0,))
    inf_norm = reduce_max(reduce_sum(abs_x, (1,)), (0,))
    scale = select(
        eq(one_norm, np.array(0, rdtype)),
        np.array(1, rdtype),
        mul(rsqrt(one_norm), rsqrt(inf_norm)),
    )
    u = mul(x, _as_dtype(scale, dtype))

    def iterate(u, coefs, step, test_convergence):
        if not coefs:
            return u, np.array(True)
        table = np.array(coefs, dtype)

        def body(k, carry):
            u_prev, _ = carry
            row = dynamic_index_in_dim(table, k, 0, keepdims=False)
            params = [reshape(index_in_dim(row, i, 0), ()) for i in range(3)]
            u = step(u_prev, m, n, params)
            not_converged = (
                gt(_frobenius(sub(u, u_prev)), tol_norm) if test_convergence else np.array(True)
            )
            return u, not_converged

        return fori_loop(0, len(coefs), body, (u, np.array(True)))

    qr_coefs, chol_coefs = _qdwh_coefficients(eps, max_iterations)
    u, _ = iterate(u, qr_coefs, _qdwh_qr_step, False)
    u, not_converged = iterate(u, chol_coefs, _qdwh_cholesky_step, True)

    # Once l has reached 1 the parameters are Halley's (a, b, c) = (3, 1, 3): iterate on
    # until u settles.
    halley = [np.array(v, dtype) for v in (3 - 1 / 3, 3, 1 / 3)]

    def cond(state):
        k, _, not_converged = state
        return bitwise_and(not_converged, lt(k, max_iterations))

    def body(state):
        k, u_prev, _ = state
        u = _qdwh_cholesky_step(u_prev, m, n, halley)
        return add(k, 1), u, gt(_frobenius(sub(u, u_prev)), tol_norm)

    num_iters, u, not_converged = while_loop(
        cond, body, (len(qr_coefs) + len(chol_coefs), u, not_converged)
    )

    # A Newton-Schulz step for accuracy, then h = u^H x, made exactly Hermitian.
    u = sub(mul(const(u, 1.5), u), mul(const(u, 0.5), matmul(u, matmul(adjoint(u), u))))
    h = matmul(adjoint(u), x)
    h = div(add(h, adjoint(h)), const(h, 2))
    return u, h, num_iters, bitwise_not(not_converged)

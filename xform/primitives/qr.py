"""The QR family on jaxlib's LAPACK kernels: ``geqrf`` and ``geqp3`` (Householder QR, without
and with column pivoting, in LAPACK's packed form), ``householder_product`` (``Q`` from the
packed reflectors), ``ormqr`` (``Q`` applied to a matrix without forming it) and ``qr``, with
``cholesky_update`` (a rank-one update of a triangular factor, by Givens rotations).

``qr`` is a primitive with JAX's derivative; it lowers to the kernels of the others. LAPACK
has no derivative for the packed form, and JAX none for ``geqrf``, ``geqp3``,
``householder_product`` or ``ormqr``; here their tangents are those of
``householder_qr`` and ``apply_reflectors``, the same algorithms written as loops of lax
operations (the values still come from the kernels). Leading dimensions are batch
dimensions, as in ``linalg.py``, whose matrix helpers these rules share.
"""

import numpy as np

from xform import dtypes
from xform.core import ShapedArray, get_aval
from xform.interpret import ad
from xform.interpret import transpose as transposition
from xform.primitives.base import FLOAT, check_dtype, standard_primitive
from xform.primitives.comparisons import eq, ge, gt, lt, select
from xform.primitives.dot import Precision, dot_general
from xform.primitives.elementwise import abs as abs_
from xform.primitives.elementwise import (
    add,
    bitwise_and,
    conj,
    convert_element_type,
    div,
    imag,
    mul,
    neg,
    real,
    sub,
)
from xform.primitives.indexing import (
    dynamic_index_in_dim,
    dynamic_update_index_in_dim,
    slice_in_dim,
)
from xform.primitives.linalg import (
    adjoint,
    batch_at_front,
    batch_dims_of,
    check_matrix,
    const,
    eye_like,
    lu,
    lu_factors,
    matmul,
    matrix_transpose,
    real_dtype,
    triangular_solve,
    tril,
    triu,
)
from xform.primitives.loops import fori_loop
from xform.primitives.reductions import reduce_sum
from xform.primitives.sorting import take_along_axis
from xform.primitives.structural import (
    broadcast_in_dim,
    broadcasted_iota,
    concatenate,
    expand_dims,
    pad,
)
from xform.primitives.transcendental import sqrt

__all__ = [
    "householder_product",
    "ormqr",
    "qr",
    "cholesky_update",
]

# --------------------------------------------------------------------------- helpers


def _zero_tangents(outs):
    return [ad.Zero(ad.tangent_aval(get_aval(o))) for o in outs]


def _is_complex(x):
    return dtypes.is_complex(get_aval(x).dtype)


def conj_if_complex(x):
    """``conj`` for complex values; real ones are their own conjugate (lax's ``conj`` would
    make them complex)."""
    return conj(x) if _is_complex(x) else x


def abs2(x):
    """``|x|^2``, real; differentiable at 0 (``abs`` of a complex 0 is not)."""
    return real(mul(x, conj(x))) if _is_complex(x) else mul(x, x)


def _zeros(x, shape, dtype=None):
    dtype = get_aval(x).dtype if dtype is None else dtype
    return broadcast_in_dim(np.array(0, dtype), shape, ())


def _vecmat(v, a):
    """``v @ a`` for stacks of vectors ``(..., m)`` and matrices ``(..., m, n)``."""
    nb = get_aval(v).ndim - 1
    batch = tuple(range(nb))
    return dot_general(
        v, a, (((nb,), (nb,)), (batch, batch)), precision=(Precision.HIGHEST, Precision.HIGHEST)
    )


def _matvec(a, v):
    """``a @ v`` for stacks of matrices ``(..., m, n)`` and vectors ``(..., n)``."""
    nb = get_aval(v).ndim - 1
    batch = tuple(range(nb))
    return dot_general(
        a, v, (((nb + 1,), (nb,)), (batch, batch)), precision=(Precision.HIGHEST, Precision.HIGHEST)
    )


def _take_columns(x, perm):
    """``x[..., :, perm]`` for a stack of column orders ``perm`` of shape ``(..., n)``."""
    aval = get_aval(x)
    nd = aval.ndim
    idx = broadcast_in_dim(perm, aval.shape, (*range(nd - 2), nd - 1))
    return take_along_axis(x, idx, nd - 1)


def householder_qr(a):
    """``geqrf`` as a loop of lax operations, one column at a time as LAPACK's unblocked
    ``geqr2``/``larfg`` (same reflectors: ``beta = -sign(Re alpha) * norm``, ``tau = 0`` when
    nothing is below the diagonal and ``alpha`` is real). It is for differentiating the
    kernels: its tangents are theirs."""
    aval = get_aval(a)
    nd, dtype = aval.ndim, aval.dtype
    batch, (m, n) = aval.shape[:-2], aval.shape[-2:]
    k = min(m, n)
    rows = broadcasted_iota(dtypes.int32, batch + (m,), nd - 2)
    cols = broadcasted_iota(dtypes.int32, aval.shape, nd - 1)
    real_zero = np.array(0, real_dtype(dtype))

    def step(j, carry):
        a, taus = carry
        j = convert_element_type(j, dtypes.int32)  # the loop counts in int64 under x64
        col = dynamic_index_in_dim(a, j, nd - 1, keepdims=False)
        alpha = dynamic_index_in_dim(col, j, nd - 2, keepdims=False)
        below = select(gt(rows, j), col, _zeros(col, batch + (m,)))
        below_sq = reduce_sum(abs2(below), (nd - 2,))
        skip = eq(below_sq, real_zero)
        if dtypes.is_complex(dtype):
            skip = bitwise_and(skip, eq(imag(alpha), real_zero))
        # Where the reflector is the identity, the other branch must not divide by zero: its
        # derivative would poison reverse mode even though it is not selected.
        ones = broadcast_in_dim(np.array(1, real_dtype(dtype)), batch, ())
        total = select(skip, ones, add(abs2(alpha), below_sq))
        norm = sqrt(total)
        alpha_re = real(alpha) if dtypes.is_complex(dtype) else alpha
        beta = convert_element_type(select(ge(alpha_re, real_zero), neg(norm), norm), dtype)
        tau = select(skip, _zeros(alpha, batch), div(sub(beta, alpha), beta))
        denom = select(skip, broadcast_in_dim(const(a, 1), batch, ()), sub(alpha, beta))
        unit = convert_element_type(eq(rows, j), dtype)
        v = add(div(below, expand_dims(denom, (nd - 2,))), unit)
        diag = select(skip, alpha, beta)
        new_col = select(
            lt(rows, j),
            col,
            select(eq(rows, j), broadcast_in_dim(diag, batch + (m,), tuple(range(nd - 2))), v),
        )
        # Apply H^H = I - conj(tau) v v^H to the columns right of j.
        w = _vecmat(conj_if_complex(v), a)
        update = mul(
            expand_dims(conj_if_complex(tau), (nd - 2, nd - 1)),
            mul(expand_dims(v, (nd - 1,)), expand_dims(w, (nd - 2,))),
        )
        a = sub(a, select(gt(cols, j), update, _zeros(a, aval.shape)))
        a = dynamic_update_index_in_dim(a, new_col, j, nd - 1)
        return a, dynamic_update_index_in_dim(taus, tau, j, nd - 2)

    return fori_loop(0, k, step, (a, _zeros(a, batch + (k,))))


def apply_reflectors(a, taus, c, *, left, transpose):
    """``ormqr`` as a loop of lax operations: ``c`` times ``Q = H_1 ... H_k`` (or its
    adjoint), ``H_i = I - taus[i] v_i v_i^H``, one reflector at a time. For differentiating
    the kernels with respect to the reflectors."""
    aval = get_aval(a)
    nd = aval.ndim
    m = aval.shape[-2]
    k = get_aval(taus).shape[-1]
    vs = add(tril(slice_in_dim(a, 0, k, axis=nd - 1), -1), eye_like(a, (m, k)))
    taus = conj_if_complex(taus) if transpose else taus
    # Q c and c Q^H apply H_k first; Q^H c and c Q apply H_1 first.
    reverse = left != transpose

    def step(i, c):
        idx = sub(np.int32(k - 1), convert_element_type(i, dtypes.int32)) if reverse else i
        tau = expand_dims(dynamic_index_in_dim(taus, idx, nd - 2, keepdims=False), (nd - 2, nd - 1))
        v = dynamic_index_in_dim(vs, idx, nd - 1, keepdims=False)
        v_h = conj_if_complex(v)
        if left:  # c - tau v (v^H c)
            update = mul(expand_dims(v, (nd - 1,)), expand_dims(_vecmat(v_h, c), (nd - 2,)))
        else:  # c - tau (c v) v^H
            update = mul(expand_dims(_matvec(c, v), (nd - 1,)), expand_dims(v_h, (nd - 2,)))
        return sub(c, mul(tau, update))

    return fori_loop(0, k, step, c)


# --------------------------------------------------------------------------- geqrf


def _geqrf_abstract_eval(a):
    check_matrix("lax.linalg.geqrf", a, square=False)
    m, n = a.shape[-2:]
    return [ShapedArray(a.shape, a.dtype), ShapedArray(a.shape[:-2] + (min(m, n),), a.dtype)]


geqrf_p = standard_primitive("geqrf", _geqrf_abstract_eval, multiple_results=True)


def geqrf(a):
    """Householder QR in LAPACK's packed form.

    Returns:
      ``(a, taus)``: ``R`` in the upper triangle of ``a``; below it, the Householder vectors
      ``v_i`` (unit first entries not stored); ``taus`` (``(..., min(m, n))``) their scales,
      so that ``Q = H_1 ... H_k`` with ``H_i = I - taus[i] v_i v_i^H``.

    Example:
      >>> packed, taus = geqrf(np.array([[3., 1.], [4., 2.]]))  # packed[0, 0] == -5
    """
    packed, taus = geqrf_p.bind(a)
    return packed, taus


def _geqrf_jvp(primals, tangents):
    (a,), (da,) = primals, tangents
    outs = geqrf_p.bind(a)
    if type(da) is ad.Zero:
        return outs, _zero_tangents(outs)
    _, touts = ad.jvp_flat(householder_qr, [a], [da])
    return outs, touts


ad.jvp_rules[geqrf_p] = _geqrf_jvp
batch_at_front(geqrf_p)


# --------------------------------------------------------------------------- geqp3


def _geqp3_abstract_eval(a, jpvt, *, use_magma):
    name = "lax.linalg.geqp3"
    check_matrix(name, a, square=False)
    if jpvt.dtype != dtypes.int32:
        raise TypeError(f"{name}: jpvt must be an int32 array, got {jpvt.str_short()}")
    if jpvt.ndim != a.ndim - 1 or jpvt.shape[-1] != a.shape[-1]:
        raise ValueError(
            f"{name}: jpvt must have shape (..., n) for a of shape (..., m, n), "
            f"got a of shape {a.shape} and jpvt of shape {jpvt.shape}"
        )
    batch_dims_of(name, (a, jpvt), (2, 1))
    m, n = a.shape[-2:]
    return [
        ShapedArray(a.shape, a.dtype),
        ShapedArray(jpvt.shape, jpvt.dtype),
        ShapedArray(a.shape[:-2] + (min(m, n),), a.dtype),
    ]


geqp3_p = standard_primitive("geqp3", _geqp3_abstract_eval, multiple_results=True)


def geqp3(a, jpvt, *, use_magma=None):
    """Householder QR with column pivoting, in LAPACK's packed form.

    Args:
      a: ``(..., m, n)``.
      jpvt: ``(..., n)`` int32; LAPACK's convention: a nonzero ``jpvt[j]`` moves column ``j``
        to the front and keeps it there, zeros leave the choice free.
      use_magma: ignored on CPU (JAX's GPU option).

    Returns:
      ``(a, jpvt, taus)`` as ``geqrf``'s, with ``a[..., :, jpvt - 1] == Q @ R`` (``jpvt``
      counts from 1, as LAPACK's).
    """
    packed, jpvt, taus = geqp3_p.bind(a, jpvt, use_magma=use_magma)
    return packed, jpvt, taus


def _geqp3_jvp(primals, tangents, *, use_magma):
    (a, jpvt), (da, _) = primals, tangents
    outs = geqp3_p.bind(a, jpvt, use_magma=use_magma)
    if type(da) is ad.Zero:
        return outs, _zero_tangents(outs)
    # The pivots are piecewise constant: locally, geqp3 is geqrf of the permuted columns.
    perm = sub(outs[1], np.int32(1))
    _, (dpacked, dtaus) = ad.jvp_flat(
        householder_qr, [_take_columns(a, perm)], [_take_columns(da, perm)]
    )
    return outs, [dpacked, ad.Zero(ad.tangent_aval(get_aval(outs[1]))), dtaus]


ad.jvp_rules[geqp3_p] = _geqp3_jvp
batch_at_front(geqp3_p)


# --------------------------------------------------------------------------- householder_product


def _householder_product_abstract_eval(a, taus):
    name = "lax.linalg.householder_product"
    check_matrix(name, a, square=False)
    if taus.dtype != a.dtype:
        raise TypeError(
            f"{name}: a and taus must have the same dtype, got {a.dtype} and {taus.dtype}"
        )
    if taus.ndim != a.ndim - 1:
        raise TypeError(
            f"{name}: taus must have shape (..., k) for a of shape (..., m, n), "
            f"got a of shape {a.shape} and taus of shape {taus.shape}"
        )
    batch_dims_of(name, (a, taus), (2, 1))
    m, n = a.shape[-2:]
    if m < n:
        raise ValueError(
            f"{name}: a must have at least as many rows as columns, got shape {a.shape}"
        )
    if taus.shape[-1] > n:
        raise ValueError(
            f"{name}: taus must not have more entries ({taus.shape[-1]}) than the "
            f"minimum of a's rows and columns; got a of shape {a.shape}"
        )
    return [ShapedArray(a.shape, a.dtype)]


householder_product_p = standard_primitive(
    "householder_product", _householder_product_abstract_eval
)


def householder_product(a, taus):
    """The first ``n`` columns of ``Q = H_1 ... H_k``, ``H_i = I - taus[i] v_i v_i^H`` with
    ``v_i`` stored below the diagonal of column ``i`` of ``a`` (LAPACK's ``orgqr``/``ungqr``).

    Args:
      a: ``(..., m, n)`` with ``m >= n``, as ``geqrf`` leaves it.
      taus: ``(..., k)``, ``k <= n``.

    Returns:
      ``Q``'s first ``n`` columns, of ``a``'s shape: orthonormal (unitary) columns.

    Example:
      >>> q = householder_product(*geqrf(np.array([[3., 1.], [4., 2.]])))
    """
    return householder_product_p.bind(a, taus)


def _householder_product_jvp(primals, tangents):
    (a, taus), (da, dtaus) = primals, tangents
    q = householder_product_p.bind(a, taus)
    if type(da) is ad.Zero and type(dtaus) is ad.Zero:
        return [q], _zero_tangents([q])
    eye = eye_like(a)
    _, (dq,) = ad.jvp_flat(
        lambda a, taus: [apply_reflectors(a, taus, eye, left=True, transpose=False)],
        [a, taus],
        [da, dtaus],
    )
    return [q], [dq]


ad.jvp_rules[householder_product_p] = _householder_product_jvp
batch_at_front(householder_product_p)


# --------------------------------------------------------------------------- ormqr


def _ormqr_abstract_eval(a, taus, c, *, left, transpose):
    name = "lax.linalg.ormqr"
    check_matrix(name, a, square=False)
    check_matrix(name, c, square=False)
    if not a.dtype == taus.dtype == c.dtype:
        raise TypeError(
            f"{name}: a, taus and c must have the same dtype, got {a.dtype}, "
            f"{taus.dtype} and {c.dtype}"
        )
    if taus.ndim != a.ndim - 1:
        raise TypeError(
            f"{name}: taus must have shape (..., k) for a of shape (..., m, n), "
            f"got a of shape {a.shape} and taus of shape {taus.shape}"
        )
    batch_dims_of(name, (a, taus, c), (2, 1, 2))
    m, n = a.shape[-2:]
    if taus.shape[-1] > min(m, n):
        raise ValueError(
            f"{name}: taus must not have more entries ({taus.shape[-1]}) than the "
            f"minimum of a's rows and columns; got a of shape {a.shape}"
        )
    size = c.shape[-2] if left else c.shape[-1]
    if size != m:
        what = "rows" if left else "columns"
        raise ValueError(
            f"{name}: with left={left}, c must have as many {what} as a has rows "
            f"({m}); got a of shape {a.shape} and c of shape {c.shape}"
        )
    return [ShapedArray(c.shape, c.dtype)]


ormqr_p = standard_primitive("ormqr", _ormqr_abstract_eval)


def ormqr(a, taus, c, *, left=True, transpose=False):
    """``Q @ c`` (``left``) or ``c @ Q``, or with ``Q^H`` if ``transpose``, where ``Q`` is
    the product of the Householder reflectors in ``(a, taus)`` (as ``geqrf`` returns them),
    without forming ``Q`` (LAPACK's ``ormqr``/``unmqr``).

    Args:
      a: ``(..., m, n)`` reflectors below the diagonal; ``taus``: ``(..., k)``.
      c: ``(..., m, p)`` if ``left`` else ``(..., p, m)``.

    Example:
      >>> packed, taus = geqrf(x)
      >>> ormqr(packed, taus, c)  # equals qr(x)[0] @ c for square x
    """
    return ormqr_p.bind(a, taus, c, left=bool(left), transpose=bool(transpose))


def _ormqr_jvp(primals, tangents, *, left, transpose):
    a, taus, c = primals
    da, dtaus, dc = tangents
    out = ormqr_p.bind(a, taus, c, left=left, transpose=transpose)
    total = None
    if type(dc) is not ad.Zero:
        total = ormqr_p.bind(a, taus, dc, left=left, transpose=transpose)
    if type(da) is not ad.Zero or type(dtaus) is not ad.Zero:
        _, (term,) = ad.jvp_flat(
            lambda a, taus: [apply_reflectors(a, taus, c, left=left, transpose=transpose)],
            [a, taus],
            [da, dtaus],
        )
        total = term if total is None else add(total, term)
    if total is None:
        return [out], _zero_tangents([out])
    return [out], [total]


def _ormqr_transpose(ct, a, taus, c, *, left, transpose):
    if transposition.is_undefined(a) or transposition.is_undefined(taus):
        raise ValueError(
            "ormqr is linear only in c, so it cannot be transposed with respect to "
            "its reflectors a and taus"
        )
    if type(ct) is ad.Zero:
        return [None, None, ad.Zero(c.aval)]
    # The transpose of c -> op(Q) c is ct -> op(Q)^T ct, and op(Q)^T = conj(op(Q)^H).
    flipped = not transpose
    ct_c = ormqr_p.bind(a, taus, conj_if_complex(ct), left=left, transpose=flipped)
    return [None, None, conj_if_complex(ct_c)]


ad.jvp_rules[ormqr_p] = _ormqr_jvp
transposition.transpose_rules[ormqr_p] = _ormqr_transpose
batch_at_front(ormqr_p)


# --------------------------------------------------------------------------- qr


def _qr_abstract_eval(x, *, pivoting, full_matrices, use_magma):
    check_matrix("lax.linalg.qr", x, square=False)
    batch, (m, n) = x.shape[:-2], x.shape[-2:]
    k = m if full_matrices else min(m, n)
    outs = [ShapedArray(batch + (m, k), x.dtype), ShapedArray(batch + (k, n), x.dtype)]
    if pivoting:
        outs.append(ShapedArray(batch + (n,), dtypes.int32))
    return outs


qr_p = standard_primitive("qr", _qr_abstract_eval, multiple_results=True)


def qr(x, *, pivoting=False, full_matrices=True, use_magma=None):
    """QR decomposition: ``x == Q @ R`` with ``Q`` unitary and ``R`` upper triangular.

    Args:
      x: ``(..., m, n)``.
      pivoting: also choose a column order ``p`` (LAPACK's ``geqp3``), so that
        ``x[..., :, p] == Q @ R`` with ``|diag(R)|`` non-increasing.
      full_matrices: ``Q`` of ``(..., m, m)`` and ``R`` of ``(..., m, n)``; otherwise the
        economic ``(..., m, k)`` and ``(..., k, n)``, ``k = min(m, n)``.
      use_magma: ignored on CPU (JAX's GPU option).

    Returns:
      ``(q, r)``, or ``(q, r, p)`` with ``p`` int32 of shape ``(..., n)`` if ``pivoting``.

    Example:
      >>> q, r = qr(np.array([[3., 1.], [4., 2.]]))  # r[0, 0] == -5
    """
    q, r, *p = qr_p.bind(
        x, pivoting=bool(pivoting), full_matrices=bool(full_matrices), use_magma=use_magma
    )
    return (q, r, p[0]) if pivoting else (q, r)


def qr_decomposition(x, *, pivoting, full_matrices, use_magma=None):
    """``qr`` from the kernels: ``geqrf`` (or ``geqp3``), then ``householder_product`` on the
    packed reflectors (padded with zero columns for a full ``Q`` of a tall matrix). This is
    its lowering, as JAX's."""
    aval = get_aval(x)
    nd, batch, (m, n) = aval.ndim, aval.shape[:-2], aval.shape[-2:]
    if m == 0 or n == 0:
        k = m if full_matrices else min(m, n)
        outs = [eye_like(x, (m, k)), _zeros(x, batch + (k, n))]
        return outs + [_zeros(x, batch + (n,), dtypes.int32)] if pivoting else outs
    perm = []
    if pivoting:
        r, jpvt, taus = geqp3_p.bind(x, _zeros(x, batch + (n,), dtypes.int32), use_magma=use_magma)
        perm = [sub(jpvt, np.int32(1))]
    else:
        r, taus = geqrf_p.bind(x)
    if m < n:
        q = householder_product_p.bind(slice_in_dim(r, 0, m, axis=nd - 1), taus)
    elif full_matrices:
        widen = [(0, 0, 0)] * (nd - 1) + [(0, m - n, 0)]
        q = householder_product_p.bind(pad(r, const(x, 0), widen), taus)
    else:
        q = householder_product_p.bind(r, taus)
        r = slice_in_dim(r, 0, n, axis=nd - 2)
    return [q, triu(r), *perm]


def _thin_qr_jvp(q, r, dx):
    # For x = q r with r square (Walter and Lehmann; J. Townsend's note "Differentiating the
    # QR decomposition"): with C = q^H dx r^{-1}, dr = (C - Omega) r and dq = q (Omega - C) +
    # dx r^{-1}, Omega the skew-Hermitian matrix with C's strictly lower part (and, for complex
    # inputs, the imaginary part of C's diagonal).
    dx_rinv = triangular_solve(r, dx)
    c = matmul(adjoint(q), dx_rinv)
    low = tril(c, -1)
    omega = sub(low, adjoint(low))
    if _is_complex(c):
        imag_part = sub(c, convert_element_type(real(c), get_aval(c).dtype))
        omega = add(omega, mul(eye_like(c), imag_part))
    dq = add(matmul(q, sub(omega, c)), dx_rinv)
    dr = matmul(sub(c, omega), r)
    return dq, dr


def _solve_adjoint(a, b):
    """``x`` with ``a^H x = b``, by ``lu``: ``P a = L U`` gives ``x = P^T L^{-H} U^{-H} b``."""
    lu_, _, perm = lu(a)
    lower, upper = lu_factors(lu_)
    y = triangular_solve(upper, b, left_side=True, lower=False, transpose_a=True, conjugate_a=True)
    z = triangular_solve(
        lower, y, left_side=True, lower=True, transpose_a=True, conjugate_a=True, unit_diagonal=True
    )
    aval = get_aval(a)
    nd = aval.ndim
    rows = broadcast_in_dim(perm, aval.shape, tuple(range(nd - 1)))
    p = convert_element_type(
        eq(rows, broadcasted_iota(dtypes.int32, aval.shape, nd - 1)), aval.dtype
    )
    return matmul(matrix_transpose(p), z)


def _qr_jvp(primals, tangents, *, pivoting, full_matrices, use_magma):
    (x,), (dx,) = primals, tangents
    outs = qr_p.bind(x, pivoting=pivoting, full_matrices=full_matrices, use_magma=use_magma)
    if type(dx) is ad.Zero:
        return outs, _zero_tangents(outs)
    q, r, *p = outs
    dp = _zero_tangents(p)
    if pivoting:
        x, dx = _take_columns(x, p[0]), _take_columns(dx, p[0])
    nd, (m, n) = get_aval(x).ndim, get_aval(x).shape[-2:]
    if m < n:
        # x = [x1 x2] = q [r1 r2]: x1 = q r1 is a square QR, and r2 = q^H x2.
        dq, dr1 = _thin_qr_jvp(
            q, slice_in_dim(r, 0, m, axis=nd - 1), slice_in_dim(dx, 0, m, axis=nd - 1)
        )
        dr2 = add(
            matmul(adjoint(dq), slice_in_dim(x, m, n, axis=nd - 1)),
            matmul(adjoint(q), slice_in_dim(dx, m, n, axis=nd - 1)),
        )
        return outs, [dq, concatenate([dr1, dr2], nd - 1), *dp]
    full = full_matrices and m > n
    q_mn = slice_in_dim(q, 0, n, axis=nd - 1) if full else q
    r_nn = slice_in_dim(r, 0, n, axis=nd - 2) if full else r
    dq, dr = _thin_qr_jvp(q_mn, r_nn, dx)
    if full:
        # The last m - n columns of a full q (Roberts and Roberts 2024, arXiv:2409.13374, eqs.
        # 32-33): with Z = q_pn (q_nn - I)^{-1}, dq_mp = dq_mn Z^H - (q_mn + q_mp Z)
        # (dq_pn - Z dq_nn)^H; R's extra rows are zeros, and so are their tangents.
        q_nn, q_pn = slice_in_dim(q_mn, 0, n, axis=nd - 2), slice_in_dim(q_mn, n, m, axis=nd - 2)
        q_mp = slice_in_dim(q, n, m, axis=nd - 1)
        dq_nn, dq_pn = slice_in_dim(dq, 0, n, axis=nd - 2), slice_in_dim(dq, n, m, axis=nd - 2)
        z_h = _solve_adjoint(sub(q_nn, eye_like(q_nn)), adjoint(q_pn))
        z = adjoint(z_h)
        dq_mp = sub(
            matmul(dq, z_h),
            matmul(add(q_mn, matmul(q_mp, z)), adjoint(sub(dq_pn, matmul(z, dq_nn)))),
        )
        dq = concatenate([dq, dq_mp], nd - 1)
        dr = pad(dr, const(dr, 0), [(0, 0, 0)] * (nd - 2) + [(0, m - n, 0), (0, 0, 0)])
    return outs, [dq, dr, *dp]


ad.jvp_rules[qr_p] = _qr_jvp
batch_at_front(qr_p)


# --------------------------------------------------------------------------- cholesky_update


def _givens(x, y):
    """``(c, s)`` with ``c x - s y = r``, ``c y + s x = 0``, scaled against overflow as
    BLAS's ``rotg``; ``(1, 0)`` where ``y`` is 0."""
    zero, one = const(x, 0), const(x, 1)
    y_zero = eq(y, zero)
    scale = select(y_zero, one, select(gt(abs_(x), abs_(y)), abs_(x), abs_(y)))
    x, y = div(x, scale), div(y, scale)
    rh = div(one, sqrt(add(mul(x, x), mul(y, y))))
    return select(y_zero, one, mul(x, rh)), select(y_zero, zero, neg(mul(y, rh)))


def cholesky_update(r_matrix, w_vector):
    """The upper Cholesky factor of ``R^T R + w w^T`` from the one ``R`` of ``R^T R``, in
    ``O(n^2)`` (a Givens rotation per row, as JAX computes it; a composition of lax
    operations, so it is differentiable and batches under ``vmap``).

    Args:
      r_matrix: ``(n, n)`` upper triangular, float.
      w_vector: ``(n,)``, of ``r_matrix``'s dtype.

    Example:
      >>> cholesky_update(np.eye(2), np.array([1., 0.]))  # [[sqrt(2), 0], [0, 1]]
    """
    name = "lax.linalg.cholesky_update"
    r_aval, w_aval = get_aval(r_matrix), get_aval(w_vector)
    for aval, what, rank in ((r_aval, "r_matrix", 2), (w_aval, "w_vector", 1)):
        check_dtype(name, aval.dtype, (FLOAT,))
        if aval.ndim != rank:
            raise TypeError(f"{name}: {what} must have rank {rank}, got shape {aval.shape}")
    if r_aval.dtype != w_aval.dtype:
        raise TypeError(
            f"{name}: r_matrix and w_vector must have the same dtype, got "
            f"{r_aval.dtype} and {w_aval.dtype}"
        )
    n = w_aval.shape[0]
    if r_aval.shape != (n, n):
        raise ValueError(
            f"{name}: takes a square matrix and a vector of its size, got shapes "
            f"{r_aval.shape} and {w_aval.shape}"
        )

    def step(k, carry):
        r, z = carry
        row = dynamic_index_in_dim(r, k, 0, keepdims=False)
        c, s = _givens(
            dynamic_index_in_dim(row, k, 0, keepdims=False),
            dynamic_index_in_dim(z, k, 0, keepdims=False),
        )
        new_row = sub(mul(c, row), mul(s, z))
        z = add(mul(c, z), mul(s, row))
        return dynamic_update_index_in_dim(r, new_row, k, 0), z

    r, _ = fori_loop(0, n, step, (r_matrix, w_vector))
    return r

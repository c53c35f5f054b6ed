"""Linear algebra on jaxlib's LAPACK kernels: ``cholesky``, ``triangular_solve``, ``lu``,
``lu_pivots_to_permutation`` and ``tridiagonal_solve`` (the QR, eigen- and singular-value
families build on the helpers here, in ``qr.py``, ``eigen.py`` and ``svd.py``).

Every operand is a matrix or a stack of them: leading dimensions are batch dimensions, and
the batching rules move a vmapped dimension to the front, where the kernels loop over it.
None has a NumPy host implementation: eagerly, the one equation is compiled with XLA and
runs the same LAPACK kernel as under ``jit``, so eager results equal compiled ones bit for bit.
"""

import numpy as np

from xform import dtypes
from xform.core import ShapedArray, get_aval
from xform.interpret import ad, batching, transpose
from xform.primitives.base import COMPLEX, FLOAT, INEXACT, check_dtype, standard_primitive
from xform.primitives.comparisons import eq, ge, select
from xform.primitives.dot import Precision, dot_general
from xform.primitives.elementwise import add, conj, convert_element_type, div, mul, neg, sub
from xform.primitives.gather_scatter import ScatterDimensionNumbers, scatter
from xform.primitives.indexing import (
    dynamic_slice_in_dim,
    dynamic_update_slice_in_dim,
    slice_in_dim,
)
from xform.primitives.loops import fori_loop
from xform.primitives.sorting import take_along_axis
from xform.primitives.structural import (
    broadcast_in_dim,
    broadcasted_iota,
    expand_dims,
    pad,
    squeeze,
)
from xform.primitives.structural import (
    transpose as transpose_dims,
)

__all__ = [
    "cholesky",
    "triangular_solve",
    "lu",
    "lu_pivots_to_permutation",
    "tridiagonal_solve",
]

# --------------------------------------------------------------------------- matrix helpers
# Shared by the linear-algebra families' rules: each works on stacks of matrices.


def const(x, value):
    """``value`` as a 0-d array of ``x``'s dtype (lax ops take operands of one dtype)."""
    return np.array(value, get_aval(x).dtype)


def matrix_transpose(x):
    """Swap the last two dimensions."""
    n = get_aval(x).ndim
    return transpose_dims(x, (*range(n - 2), n - 1, n - 2))


def adjoint(x):
    """The conjugate transpose of each matrix (the transpose for real ones)."""
    x = matrix_transpose(x)
    return conj(x) if dtypes.is_complex(get_aval(x).dtype) else x


def matmul(a, b):
    """Batched matrix product over the leading dimensions (equal in ``a`` and ``b``), at the
    highest precision, as JAX's rules compute theirs."""
    n = get_aval(a).ndim
    batch = tuple(range(n - 2))
    return dot_general(
        a,
        b,
        (((n - 1,), (n - 2,)), (batch, batch)),
        precision=(Precision.HIGHEST, Precision.HIGHEST),
    )


def _triangle_mask(shape, k, lower):
    rows = broadcasted_iota(dtypes.int32, shape, len(shape) - 2)
    cols = broadcasted_iota(dtypes.int32, shape, len(shape) - 1)
    # lower: col <= row + k; upper: col >= row + k
    return ge(add(rows, np.int32(k)), cols) if lower else ge(cols, add(rows, np.int32(k)))


def tril(x, k=0):
    """``x`` with the entries above its ``k``-th diagonal zeroed."""
    shape = get_aval(x).shape
    return select(_triangle_mask(shape, k, True), x, broadcast_in_dim(const(x, 0), shape, ()))


def triu(x, k=0):
    """``x`` with the entries below its ``k``-th diagonal zeroed."""
    shape = get_aval(x).shape
    return select(_triangle_mask(shape, k, False), x, broadcast_in_dim(const(x, 0), shape, ()))


def eye_like(x, shape=None):
    """The identity of ``x``'s dtype, of the matrix shape ``shape`` (default ``x``'s),
    broadcast over ``x``'s batch dimensions."""
    aval = get_aval(x)
    shape = aval.shape if shape is None else aval.shape[:-2] + tuple(shape)
    rows = broadcasted_iota(dtypes.int32, shape, len(shape) - 2)
    cols = broadcasted_iota(dtypes.int32, shape, len(shape) - 1)
    return convert_element_type(eq(rows, cols), aval.dtype)


def check_matrix(name, aval, square=True):
    """``aval`` is a (stack of) float or complex matrices; square if ``square``."""
    check_dtype(name, aval.dtype, INEXACT)
    if aval.ndim < 2:
        raise TypeError(
            f"{name}: the argument must have at least 2 dimensions (a matrix or a "
            f"stack of matrices), got shape {aval.shape}"
        )
    if square and aval.shape[-1] != aval.shape[-2]:
        raise ValueError(
            f"{name}: the argument must be a square matrix or a stack of square "
            f"matrices, got shape {aval.shape}"
        )


def real_dtype(dtype):
    """float32 for complex64, float64 for complex128; real dtypes are themselves."""
    return np.finfo(dtype).dtype


def batch_at_front(prim):
    """Register the batching rule of a primitive whose operands may carry leading batch
    dimensions: each operand's vmapped dimension moves to the front (unmapped operands are
    broadcast there), and every output is batched at 0."""

    def rule(axis_data, args, dims, **params):
        args = [
            batching.batch_at_front(x, d, axis_data.size) for x, d in zip(args, dims, strict=True)
        ]
        outs = prim.bind(*args, **params)
        outs = outs if prim.multiple_results else [outs]
        return outs, [0] * len(outs)

    batching.batch_rules[prim] = rule


def batch_dims_of(name, avals, ranks):
    """The batch shape shared by operands of the given core ranks (2 for a matrix, 1 for a
    vector); ``ValueError`` naming ``name`` when they differ."""
    batch = None
    for a, r in zip(avals, ranks, strict=True):
        b = a.shape[: a.ndim - r]
        if batch is None:
            batch = b
        elif b != batch:
            shapes = ", ".join(str(x.shape) for x in avals)
            raise ValueError(
                f"{name}: the operands must have the same batch dimensions, got shapes {shapes}"
            )
    return batch


# --------------------------------------------------------------------------- cholesky


def _cholesky_abstract_eval(x):
    check_matrix("lax.linalg.cholesky", x)
    return [ShapedArray(x.shape, x.dtype)]


cholesky_p = standard_primitive("cholesky", _cholesky_abstract_eval)


def cholesky(x, *, symmetrize_input=True):
    """The lower Cholesky factor ``L`` of each Hermitian positive-definite matrix of ``x``
    (``L @ L^H == x``), NaN where a matrix is not positive definite.

    Args:
      x: a float or complex array of shape ``(..., n, n)``.
      symmetrize_input: use ``(x + x^H) / 2``, so only the Hermitian part of ``x`` counts
        (and gradients are symmetric); otherwise only the lower triangle of ``x`` is read.

    Example:
      >>> cholesky(np.array([[4., 2.], [2., 5.]]))  # [[2., 0.], [1., 2.]]
    """
    if symmetrize_input:
        check_matrix("lax.linalg.cholesky", get_aval(x))  # before symmetrizing: its message
        x = symmetrize(x)
    return cholesky_p.bind(x)


def symmetrize(x):
    """``(x + x^H) / 2``: the Hermitian part of each matrix."""
    return div(add(x, adjoint(x)), const(x, 2))


def _cholesky_jvp(primals, tangents):
    # With L L^H = A: dL = L phi(L^{-1} dA L^{-H}), phi taking the lower triangle with its
    # diagonal halved (Murray 2016, "Differentiation of the Cholesky decomposition").
    (x,), (dx,) = primals, tangents
    factor = cholesky_p.bind(x)
    if type(dx) is ad.Zero:
        return [factor], [ad.Zero(ad.tangent_aval(get_aval(factor)))]
    right = triangular_solve(
        factor, dx, left_side=False, lower=True, transpose_a=True, conjugate_a=True
    )
    middle = triangular_solve(factor, right, left_side=True, lower=True)
    phi = mul(tril(middle), sub(const(x, 1), mul(eye_like(x), const(x, 0.5))))
    return [factor], [matmul(factor, phi)]


ad.jvp_rules[cholesky_p] = _cholesky_jvp
batch_at_front(cholesky_p)


# --------------------------------------------------------------------------- triangular_solve


def _triangular_solve_abstract_eval(
    a, b, *, left_side, lower, transpose_a, conjugate_a, unit_diagonal
):
    name = "lax.linalg.triangular_solve"
    check_matrix(name, a)
    check_matrix(name, b, square=False)
    if a.dtype != b.dtype:
        raise TypeError(f"{name}: a and b must have the same dtype, got {a.dtype} and {b.dtype}")
    batch_dims_of(name, (a, b), (2, 2))
    m = a.shape[-1]
    k = b.shape[-2] if left_side else b.shape[-1]
    if k != m:
        side = "rows" if left_side else "columns"
        raise ValueError(
            f"{name}: with left_side={left_side}, b's {side} ({k}) must match a's "
            f"size ({m}); got a of shape {a.shape} and b of shape {b.shape}"
        )
    return [ShapedArray(b.shape, b.dtype)]


triangular_solve_p = standard_primitive("triangular_solve", _triangular_solve_abstract_eval)


def triangular_solve(
    a, b, *, left_side=False, lower=False, transpose_a=False, conjugate_a=False, unit_diagonal=False
):
    """Solve ``op(a) @ x = b`` (``left_side``) or ``x @ op(a) = b`` for ``x``, where ``a`` is
    triangular and ``op`` transposes and/or conjugates it as asked.

    Args:
      a: ``(..., m, m)``; only its ``lower`` (or upper) triangle is read.
      b: ``(..., m, n)`` if ``left_side`` else ``(..., n, m)``, with ``a``'s batch dimensions;
        or one dimension less than ``a`` (a vector per matrix), solved as a column (``left_side``)
        or a row, with that dimension dropped from the result again.
      unit_diagonal: take ``a``'s diagonal to be ones (without reading it).

    Example:
      >>> triangular_solve(np.array([[2., 0.], [1., 1.]]), np.array([[2.], [3.]]),
      ...                  left_side=True, lower=True)  # [[1.], [2.]]
    """
    a_aval = get_aval(a)
    if not dtypes.is_complex(a_aval.dtype):
        conjugate_a = False
    vector = len(get_aval(b).shape) == len(a_aval.shape) - 1
    if vector:
        b = expand_dims(b, (-1 if left_side else -2,))
    out = triangular_solve_p.bind(
        a,
        b,
        left_side=bool(left_side),
        lower=bool(lower),
        transpose_a=bool(transpose_a),
        conjugate_a=bool(conjugate_a),
        unit_diagonal=bool(unit_diagonal),
    )
    if vector:
        out = squeeze(out, (out.ndim - 1 if left_side else out.ndim - 2,))
    return out


def _triangular_solve_jvp(primals, tangents, **params):
    a, b = primals
    da, db = tangents
    out = triangular_solve_p.bind(a, b, **params)
    total = None
    if type(db) is not ad.Zero:
        total = triangular_solve_p.bind(a, db, **params)
    if type(da) is not ad.Zero:
        # d(op(a)^{-1} b) = -op(a)^{-1} op(da) op(a)^{-1} b, da restricted to what is read.
        k = 1 if params["unit_diagonal"] else 0
        da = tril(da, -k) if params["lower"] else triu(da, k)
        if params["transpose_a"]:
            da = matrix_transpose(da)
        if params["conjugate_a"]:
            da = conj(da)
        rhs = matmul(da, out) if params["left_side"] else matmul(out, da)
        term = neg(triangular_solve_p.bind(a, rhs, **params))
        # a's term first in the sum, as JAX adds its operands' terms in order
        total = term if total is None else ad.add_tangents(term, total)
    if total is None:
        total = ad.Zero(ad.tangent_aval(get_aval(out)))
    return [out], [total]


def _triangular_solve_transpose(ct, a, b, **params):
    if transpose.is_undefined(a):
        raise ValueError(
            "triangular_solve is not linear in its matrix a, so it cannot be "
            "transposed with respect to it"
        )
    if type(ct) is ad.Zero:
        return [None, ad.Zero(b.aval)]
    # x = op(a)^{-1} b is linear in b; its transpose applies op(a)^{-T}.
    flipped = dict(params, transpose_a=not params["transpose_a"])
    return [None, triangular_solve_p.bind(a, ct, **flipped)]


ad.jvp_rules[triangular_solve_p] = _triangular_solve_jvp
transpose.transpose_rules[triangular_solve_p] = _triangular_solve_transpose
batch_at_front(triangular_solve_p)


# --------------------------------------------------------------------------- lu


def _lu_abstract_eval(x):
    check_matrix("lax.linalg.lu", x, square=False)
    batch, (m, n) = x.shape[:-2], x.shape[-2:]
    return [
        ShapedArray(x.shape, x.dtype),
        ShapedArray(batch + (min(m, n),), dtypes.int32),
        ShapedArray(batch + (m,), dtypes.int32),
    ]


lu_p = standard_primitive("lu", _lu_abstract_eval, multiple_results=True)


def lu(x):
    """LU decomposition with partial pivoting: ``P @ x == L @ U`` for each matrix.

    Returns:
      ``(lu, pivots, permutation)``: ``L`` (unit diagonal, not stored) and ``U`` packed in
      ``lu``; row ``i`` was swapped with row ``pivots[i]``; ``permutation`` is the whole row
      order (``x[..., permutation, :] == L @ U``).

    Example:
      >>> lu_, pivots, perm = lu(np.array([[1., 2.], [3., 4.]]))  # pivots [1, 1]
    """
    return lu_p.bind(x)  # a list, as JAX returns


def lu_factors(lu_):
    """``(L, U)`` unpacked from ``lu``'s packed result, ``L`` of shape ``(..., m, k)`` with a
    unit diagonal and ``U`` of ``(..., k, n)``, ``k = min(m, n)``."""
    m, n = get_aval(lu_).shape[-2:]
    k = min(m, n)
    lower = slice_in_dim(lu_, 0, k, axis=get_aval(lu_).ndim - 1)
    lower = add(tril(lower, -1), eye_like(lower))
    upper = triu(slice_in_dim(lu_, 0, k, axis=get_aval(lu_).ndim - 2))
    return lower, upper


def solve_with_lu(lu_, permutation, b):
    """``a^{-1} b`` from ``lu(a)``'s packed factors and row permutation; ``b`` is
    ``(..., m, k)`` with ``a``'s batch dimensions. Linear in ``b``."""
    aval = get_aval(b)
    rows = broadcast_in_dim(permutation, aval.shape, tuple(range(aval.ndim - 1)))
    permuted = take_along_axis(b, rows, aval.ndim - 2)
    lower = triangular_solve(lu_, permuted, left_side=True, lower=True, unit_diagonal=True)
    return triangular_solve(lu_, lower, left_side=True, lower=False)


def lu_solve(a, b):
    """``a^{-1} b`` by LU with partial pivoting, differentiable in both through the rules of
    ``lu`` and ``triangular_solve`` (no custom rule)."""
    lu_, _, permutation = lu(a)
    return solve_with_lu(lu_, permutation, b)


def _lu_jvp(primals, tangents):
    # With P A = L U: L^{-1} P dA U^{-1} = L^{-1} dL + dU U^{-1}, strictly lower plus upper.
    # Rectangular matrices are completed to square L (m x m) and U (n x n) with identities.
    (a,), (da,) = primals, tangents
    lu_, pivots, perm = lu_p.bind(a)
    zero_int = [
        ad.Zero(ad.tangent_aval(get_aval(pivots))),
        ad.Zero(ad.tangent_aval(get_aval(perm))),
    ]
    if type(da) is ad.Zero:
        return [lu_, pivots, perm], [ad.Zero(ad.tangent_aval(get_aval(lu_))), *zero_int]
    aval = get_aval(a)
    nd, (m, n) = aval.ndim, aval.shape[-2:]
    k = min(m, n)
    rows = broadcast_in_dim(perm, aval.shape, tuple(range(nd - 1)))
    permuted = take_along_axis(da, rows, nd - 2)
    lower, upper = lu_factors(lu_)
    zero = const(a, 0)
    no_pad = [(0, 0, 0)] * (nd - 2)
    lower_sq = add(
        pad(lower, zero, [*no_pad, (0, 0, 0), (0, m - k, 0)]),
        pad(eye_like(a, (m - k, m - k)), zero, [*no_pad, (k, 0, 0), (k, 0, 0)]),
    )
    upper_sq = add(
        pad(upper, zero, [*no_pad, (0, n - k, 0), (0, 0, 0)]),
        pad(eye_like(a, (n - k, n - k)), zero, [*no_pad, (k, 0, 0), (k, 0, 0)]),
    )
    la = triangular_solve(lower_sq, permuted, left_side=True, lower=True, unit_diagonal=True)
    lau = triangular_solve(upper_sq, la, left_side=False, lower=False)
    dlu = add(matmul(lower_sq, tril(lau, -1)), matmul(triu(lau), upper_sq))
    return [lu_, pivots, perm], [dlu, *zero_int]


ad.jvp_rules[lu_p] = _lu_jvp
batch_at_front(lu_p)


# --------------------------------------------------------------------------- pivots


def _lu_pivots_to_permutation_abstract_eval(pivots, *, permutation_size):
    name = "lax.linalg.lu_pivots_to_permutation"
    if pivots.ndim < 1 or not dtypes.is_signed_int(pivots.dtype):
        raise TypeError(
            f"{name}: pivots must be a signed integer array of rank >= 1, got {pivots.str_short()}"
        )
    if permutation_size < pivots.shape[-1]:
        raise ValueError(
            f"{name}: permutation_size ({permutation_size}) must be at least the "
            f"number of pivots ({pivots.shape[-1]})"
        )
    return [ShapedArray(pivots.shape[:-1] + (permutation_size,), pivots.dtype)]


lu_pivots_to_permutation_p = standard_primitive(
    "lu_pivots_to_permutation", _lu_pivots_to_permutation_abstract_eval
)


def lu_pivots_to_permutation(pivots, permutation_size):
    """The row order that the swaps ``i <-> pivots[..., i]`` (in turn) make of
    ``range(permutation_size)``."""
    return lu_pivots_to_permutation_p.bind(pivots, permutation_size=int(permutation_size))


def apply_pivots(pivots, permutation_size):
    """``lu_pivots_to_permutation`` as a loop of lax operations: its lowering. Each swap reads
    and writes two entries per matrix (slices at ``i``, a gather and a scatter at the
    pivot), so the loop costs O(1) per pivot."""
    aval = get_aval(pivots)
    last = aval.ndim - 1
    shape = aval.shape[:-1] + (permutation_size,)
    positions = broadcasted_iota(aval.dtype, shape, last)
    if aval.shape[-1] == 0:
        return positions
    batch = tuple(range(last))
    put = ScatterDimensionNumbers(
        update_window_dims=(),
        inserted_window_dims=(last,),
        scatter_dims_to_operand_dims=(last,),
        operand_batching_dims=batch,
        scatter_indices_batching_dims=batch,
    )

    def swap(i, perm):
        j = dynamic_slice_in_dim(pivots, i, 1, axis=last)  # (..., 1)
        at_i = dynamic_slice_in_dim(perm, i, 1, axis=last)
        at_j = take_along_axis(perm, j, last)
        perm = dynamic_update_slice_in_dim(perm, at_j, i, axis=last)
        return scatter(perm, expand_dims(j, (last + 1,)), at_i, put, mode="promise_in_bounds")

    return fori_loop(0, aval.shape[-1], swap, positions)


ad.defjvp_zero(lu_pivots_to_permutation_p)
batch_at_front(lu_pivots_to_permutation_p)


# --------------------------------------------------------------------------- tridiagonal_solve


def _tridiagonal_solve_abstract_eval(dl, d, du, b, *, perturb_singular):
    name = "lax.linalg.tridiagonal_solve"
    for x in (dl, d, du, b):
        check_dtype(name, x.dtype, (FLOAT, COMPLEX))
    if not (dl.dtype == d.dtype == du.dtype == b.dtype):
        raise TypeError(
            f"{name}: dl, d, du and b must have the same dtype, got {dl.dtype}, "
            f"{d.dtype}, {du.dtype} and {b.dtype}"
        )
    if b.ndim < 2 or not (dl.shape == d.shape == du.shape) or d.ndim != b.ndim - 1:
        raise TypeError(
            f"{name}: dl, d and du must have equal shapes (..., m) and b the shape "
            f"(..., m, n); got {dl.shape}, {d.shape}, {du.shape} and {b.shape}"
        )
    batch_dims_of(name, (d, b), (1, 2))
    if d.shape[-1] != b.shape[-2]:
        raise TypeError(
            f"{name}: the diagonals' length ({d.shape[-1]}) must equal b's rows "
            f"({b.shape[-2]}); got b of shape {b.shape}"
        )
    return [ShapedArray(b.shape, b.dtype)]


tridiagonal_solve_p = standard_primitive("tridiagonal_solve", _tridiagonal_solve_abstract_eval)


def tridiagonal_solve(dl, d, du, b, *, perturb_singular=False):
    """Solve ``A @ x = b`` for the tridiagonal ``A`` with sub-diagonal ``dl`` (``dl[0]`` is
    ignored), diagonal ``d`` and super-diagonal ``du`` (``du[-1]`` is ignored).

    ``perturb_singular``: where a pivot is (numerically) zero, perturb it slightly instead of
    failing (LAPACK's gtsv gives NaN then), as inverse iteration needs.
    """
    return tridiagonal_solve_p.bind(dl, d, du, b, perturb_singular=bool(perturb_singular))


def _tridiagonal_matmul(dl, d, du, x):
    """``A @ x`` for the tridiagonal ``A`` of ``tridiagonal_solve``'s convention."""
    nd = get_aval(x).ndim
    m = get_aval(x).shape[-2]
    zero = const(x, 0)
    no_pad = [(0, 0, 0)] * (nd - 2)

    def col(v):
        return expand_dims(v, (nd - 1,))

    out = mul(col(d), x)
    if m > 1:
        above = pad(slice_in_dim(x, 1, m, axis=nd - 2), zero, [*no_pad, (0, 1, 0), (0, 0, 0)])
        below = pad(slice_in_dim(x, 0, m - 1, axis=nd - 2), zero, [*no_pad, (1, 0, 0), (0, 0, 0)])
        out = add(out, add(mul(col(du), above), mul(col(dl), below)))
    return out


def _tridiagonal_solve_jvp(primals, tangents, *, perturb_singular):
    dl, d, du, b = primals
    out = tridiagonal_solve_p.bind(dl, d, du, b, perturb_singular=perturb_singular)
    # d(A^{-1} b) = A^{-1} (db - dA x)
    rhs = None if type(tangents[3]) is ad.Zero else tangents[3]
    if any(type(t) is not ad.Zero for t in tangents[:3]):
        dl_t, d_t, du_t = (ad.instantiate(t) for t in tangents[:3])
        da_x = _tridiagonal_matmul(dl_t, d_t, du_t, out)
        rhs = neg(da_x) if rhs is None else sub(rhs, da_x)
    if rhs is None:
        return [out], [ad.Zero(ad.tangent_aval(get_aval(out)))]
    return [out], [tridiagonal_solve_p.bind(dl, d, du, rhs, perturb_singular=perturb_singular)]


def _tridiagonal_solve_transpose(ct, dl, d, du, b, *, perturb_singular):
    if any(transpose.is_undefined(x) for x in (dl, d, du)):
        raise ValueError(
            "tridiagonal_solve is linear only in b, so it cannot be transposed "
            "with respect to its diagonals"
        )
    if type(ct) is ad.Zero:
        return [None, None, None, ad.Zero(b.aval)]
    # A^T is tridiagonal with A's super-diagonal below and its sub-diagonal above.
    m = get_aval(d).shape[-1]
    last = get_aval(d).ndim - 1
    zero = const(d, 0)
    no_pad = [(0, 0, 0)] * last
    dl_t = pad(slice_in_dim(du, 0, m - 1, axis=last), zero, [*no_pad, (1, 0, 0)])
    du_t = pad(slice_in_dim(dl, 1, m, axis=last), zero, [*no_pad, (0, 1, 0)])
    return [
        None,
        None,
        None,
        tridiagonal_solve_p.bind(dl_t, d, du_t, ct, perturb_singular=perturb_singular),
    ]


ad.jvp_rules[tridiagonal_solve_p] = _tridiagonal_solve_jvp
transpose.transpose_rules[tridiagonal_solve_p] = _tridiagonal_solve_transpose
batch_at_front(tridiagonal_solve_p)

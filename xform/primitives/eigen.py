"""Eigen-decompositions and the reductions behind them, on jaxlib's LAPACK kernels: ``eigh``
(Hermitian), ``eig`` (general), ``schur``, ``hessenberg`` and ``tridiagonal``.

As in ``linalg.py`` (whose matrix helpers these rules share): leading dimensions are batch
dimensions, the batching rules move a vmapped dimension to the front, and there is no NumPy
host implementation (eagerly, the one equation runs through XLA). JAX differentiates
``eigh`` and ``eig``'s eigenvalues (and, on request, ``eig``'s eigenvectors) but not the
other three; their JVP rules raise JAX's ``NotImplementedError``.
"""

import enum
import warnings

import numpy as np

from xform import dtypes
from xform.core import ShapedArray, get_aval
from xform.errors import MissingRuleError
from xform.interpret import ad
from xform.primitives.base import standard_primitive
from xform.primitives.comparisons import eq, select
from xform.primitives.elementwise import abs as abs_
from xform.primitives.elementwise import (
    add,
    conj,
    convert_element_type,
    div,
    imag,
    integer_pow,
    mul,
    neg,
    real,
    sub,
)
from xform.primitives.linalg import (
    adjoint,
    batch_at_front,
    check_matrix,
    const,
    eye_like,
    lu_solve,
    matmul,
    matrix_transpose,
    real_dtype,
    symmetrize,
)
from xform.primitives.reductions import argmax, reduce_sum
from xform.primitives.structural import broadcast_in_dim, broadcasted_iota, expand_dims

__all__ = [
    "EigImplementation",
    "EighImplementation",
    "eig",
    "eigh",
    "hessenberg",
    "schur",
    "tridiagonal",
]


class EigImplementation(enum.Enum):
    """Kernel choice for ``eig``. Only ``LAPACK`` (the default) runs on a CPU."""

    CUSOLVER = "cusolver"
    MAGMA = "magma"
    LAPACK = "lapack"


class EighImplementation(enum.Enum):
    """Algorithm choice for ``eigh``. Only ``QR`` (the default) runs on a CPU."""

    QR = "qr"
    JACOBI = "jacobi"
    QDWH = "qdwh"


# --------------------------------------------------------------------------- rule helpers


def complex_dtype(dtype):
    """complex64 for float32, complex128 for float64; complex dtypes are themselves."""
    return np.result_type(dtype, np.complex64)


def _diagonal(x):
    """The diagonal of each matrix: ``(..., n, n) -> (..., n)``. Off-diagonal entries are
    selected away, not multiplied by zero, so an infinite one cannot turn it NaN."""
    aval = get_aval(x)
    rows = broadcasted_iota(dtypes.int32, aval.shape, aval.ndim - 2)
    cols = broadcasted_iota(dtypes.int32, aval.shape, aval.ndim - 1)
    picked = select(eq(rows, cols), x, broadcast_in_dim(const(x, 0), aval.shape, ()))
    return reduce_sum(picked, (aval.ndim - 1,))


def _rows_and_columns(w):
    """``w`` (``(..., n)``) broadcast to ``(..., n, n)`` along rows and along columns:
    entry ``(i, j)`` is ``w[j]`` in the first and ``w[i]`` in the second."""
    aval = get_aval(w)
    batch = tuple(range(aval.ndim - 1))
    shape = aval.shape + aval.shape[-1:]
    return (
        broadcast_in_dim(w, shape, (*batch, aval.ndim)),
        broadcast_in_dim(w, shape, (*batch, aval.ndim - 1)),
    )


def _gaps_reciprocal(w):
    """``F[i, j] = 1 / (w[j] - w[i])`` off the diagonal, 0 on it: the first-order coupling
    of eigenvectors ``i`` and ``j`` (infinite where two eigenvalues coincide, as in JAX)."""
    along_rows, along_columns = _rows_and_columns(w)
    eye = eye_like(along_rows)
    return sub(integer_pow(add(eye, sub(along_rows, along_columns)), -1), eye)


def _make_complex(re, im, dtype):
    """``re + 1j * im`` as ``dtype``."""
    return add(
        convert_element_type(re, dtype), mul(convert_element_type(im, dtype), np.array(1j, dtype))
    )


def _no_jvp(prim):
    """The rule of a primitive JAX cannot differentiate: JAX's error, with its words."""

    def rule(primals, tangents, **params):
        raise MissingRuleError(f"Differentiation rule for '{prim.name}' not implemented")

    ad.jvp_rules[prim] = rule


# --------------------------------------------------------------------------- eigh


def eigh(
    x,
    *,
    lower=True,
    symmetrize_input=True,
    sort_eigenvalues=True,
    subset_by_index=None,
    implementation=None,
):
    """Eigenvectors and eigenvalues of each Hermitian (real symmetric) matrix of ``x``:
    ``x @ v == v * w`` column by column, ``v`` unitary.

    Args:
      x: a float or complex array of shape ``(..., n, n)``.
      lower: without ``symmetrize_input``, read only the lower (or else upper) triangle.
      symmetrize_input: decompose ``(x + x^H) / 2`` (so gradients are Hermitian too).
      sort_eigenvalues: ascending order; the LAPACK kernel always sorts.
      subset_by_index: ``(start, end)``: only eigenvalues ``start..end-1``. The CPU kernel
        computes all of them, so only ``None`` or ``(0, n)`` can be compiled, as in JAX.
      implementation: an ``EighImplementation``; on a CPU only ``None`` or ``QR``.

    Returns:
      ``(v, w)``: ``v`` of ``x``'s dtype and shape, ``w`` real, ascending, ``(..., n)``.

    Example:
      >>> v, w = eigh(np.array([[2., 1.], [1., 2.]]))  # w == [1., 3.]
    """
    check_matrix("lax.linalg.eigh", get_aval(x))
    if symmetrize_input:
        x = symmetrize(x)
    if subset_by_index is not None:
        subset_by_index = tuple(int(i) for i in subset_by_index)
    v, w = eigh_p.bind(
        x,
        lower=bool(lower),
        sort_eigenvalues=bool(sort_eigenvalues),
        subset_by_index=subset_by_index,
        algorithm=implementation,
    )
    return v, w


def _eigh_abstract_eval(x, *, lower, sort_eigenvalues, subset_by_index, algorithm):
    name = "lax.linalg.eigh"
    check_matrix(name, x)
    n = x.shape[-1]
    d = n
    if subset_by_index is not None:
        start, end = subset_by_index
        if not 0 <= start <= end <= n:
            raise ValueError(
                f"{name}: subset_by_index must be (start, end) with "
                f"0 <= start <= end <= {n}, got {subset_by_index} for shape "
                f"{x.shape}"
            )
        d = end - start
    batch = x.shape[:-2]
    return [ShapedArray(batch + (n, d), x.dtype), ShapedArray(batch + (d,), real_dtype(x.dtype))]


eigh_p = standard_primitive("eigh", _eigh_abstract_eval, multiple_results=True)


def _eigh_jvp(primals, tangents, *, lower, sort_eigenvalues, subset_by_index, algorithm):
    # Non-degenerate perturbation theory (Giles 2008, "An extended collection of matrix
    # derivative results"): with P = v^H da v, dw = diag(P) and dv = v (F * P), where
    # F[i, j] = 1 / (w[j] - w[i]). As in JAX, the primal is the decomposition of the
    # symmetrized input, and equal eigenvalues give infinite couplings.
    (a,), (da,) = primals, tangents
    n = get_aval(a).shape[-1]
    if subset_by_index is not None and subset_by_index != (0, n):
        raise NotImplementedError("Derivatives not defined for partial eigen decomposition.")
    v, w_real = eigh_p.bind(
        symmetrize(a),
        lower=lower,
        sort_eigenvalues=sort_eigenvalues,
        subset_by_index=subset_by_index,
        algorithm=algorithm,
    )
    if type(da) is ad.Zero:
        return [v, w_real], [
            ad.Zero(ad.tangent_aval(get_aval(v))),
            ad.Zero(ad.tangent_aval(get_aval(w_real))),
        ]
    dtype = get_aval(a).dtype
    coupling = _gaps_reciprocal(convert_element_type(w_real, dtype))
    projected = matmul(matmul(adjoint(v), da), v)
    dv = matmul(v, mul(coupling, projected))
    dw = _diagonal(real(projected) if dtypes.is_complex(dtype) else projected)
    return [v, w_real], [dv, dw]


ad.jvp_rules[eigh_p] = _eigh_jvp
batch_at_front(eigh_p)


# --------------------------------------------------------------------------- eig

_EIGVEC_DERIVS_MESSAGE = (
    "Derivatives of non-symmetric eigenvectors are only valid under assumptions on the input "
    "that xform cannot check (see the enable_eigvec_derivs argument to "
    "xform.lax.linalg.eig). Pass enable_eigvec_derivs=True to xform.lax.linalg.eig to opt "
    "in, or compute_left_eigenvectors=False and compute_right_eigenvectors=False to "
    "differentiate the eigenvalues alone. See https://github.com/jax-ml/jax/issues/2748 for "
    "discussion."
)


def eig(
    x,
    *,
    compute_left_eigenvectors=True,
    compute_right_eigenvectors=True,
    enable_eigvec_derivs=False,
    implementation=None,
    use_magma=None,
):
    """Eigenvalues and left and/or right eigenvectors of each (general) square matrix of
    ``x``: ``x @ vr == vr * w`` and ``vl^H @ x == w[:, None] * vl^H``, column by column.

    Args:
      x: a float or complex array of shape ``(..., n, n)``.
      compute_left_eigenvectors, compute_right_eigenvectors: which eigenvectors to return.
      enable_eigvec_derivs: allow differentiating the eigenvectors, under LAPACK's
        normalization (unit 2-norm, largest component real); valid only for distinct
        eigenvalues and no tie for the largest component, which cannot be checked.
      implementation: an ``EigImplementation``; on a CPU only ``None`` or ``LAPACK``.
      use_magma: deprecated (a GPU option), as in JAX: ``implementation`` replaces it.

    Returns:
      A list ``[w, vl, vr]`` (without the eigenvectors not asked for), all complex: ``w``
      of shape ``(..., n)``, ``vl`` and ``vr`` ``(..., n, n)`` with unit-norm columns; NaN
      where the kernel failed.

    Example:
      >>> w, vl, vr = eig(np.array([[0., 1.], [-1., 0.]]))  # w == [1j, -1j]
    """
    if use_magma is not None:
        warnings.warn(
            "use_magma is deprecated, please use implementation=EigImplementation.MAGMA instead.",
            DeprecationWarning,
            stacklevel=2,
        )
        implementation = EigImplementation.MAGMA if use_magma else EigImplementation.LAPACK
    return list(
        eig_p.bind(
            x,
            compute_left_eigenvectors=bool(compute_left_eigenvectors),
            compute_right_eigenvectors=bool(compute_right_eigenvectors),
            enable_eigvec_derivs=bool(enable_eigvec_derivs),
            implementation=implementation,
        )
    )


def _eig_abstract_eval(
    x,
    *,
    compute_left_eigenvectors,
    compute_right_eigenvectors,
    enable_eigvec_derivs,
    implementation,
):
    check_matrix("lax.linalg.eig", x)
    dtype = complex_dtype(x.dtype)
    count = int(compute_left_eigenvectors) + int(compute_right_eigenvectors)
    return [ShapedArray(x.shape[:-1], dtype)] + [ShapedArray(x.shape, dtype) for _ in range(count)]


eig_p = standard_primitive("eig", _eig_abstract_eval, multiple_results=True)


def _eig_vectors_jvp(w, v, da):
    # Non-degenerate perturbation theory: P = v^{-1} da v gives dw = diag(P) and, up to a
    # multiple of each column of v, dv = v (F * P). LAPACK normalizes each column to unit
    # 2-norm with its largest component k real; the two real constraints fix the multiple
    # c = -Re(v^H u) - i Im(u[k]) / v[k], u = v (F * P).
    nd = get_aval(v).ndim
    projected = matmul(lu_solve(v, da), v)
    dw = _diagonal(projected)
    u = matmul(v, mul(_gaps_reciprocal(w), projected))
    k = argmax(abs_(v), nd - 2, dtypes.int32)
    rows = broadcasted_iota(dtypes.int32, get_aval(v).shape, nd - 2)
    mask = convert_element_type(eq(rows, expand_dims(k, (nd - 2,))), get_aval(v).dtype)
    re = neg(real(reduce_sum(mul(conj(v), u), (nd - 2,))))
    im = div(
        neg(imag(reduce_sum(mul(mask, u), (nd - 2,)))), real(reduce_sum(mul(mask, v), (nd - 2,)))
    )
    c = _make_complex(re, im, get_aval(v).dtype)
    return dw, add(u, mul(v, expand_dims(c, (nd - 2,))))


def _eig_jvp(
    primals,
    tangents,
    *,
    compute_left_eigenvectors,
    compute_right_eigenvectors,
    enable_eigvec_derivs,
    implementation,
):
    (a,), (da,) = primals, tangents
    vectors = compute_left_eigenvectors or compute_right_eigenvectors
    if vectors and not enable_eigvec_derivs:
        raise NotImplementedError(_EIGVEC_DERIVS_MESSAGE)
    # The right eigenvectors are needed for the eigenvalues' derivative too.
    outs = eig_p.bind(
        a,
        compute_left_eigenvectors=compute_left_eigenvectors,
        compute_right_eigenvectors=True,
        enable_eigvec_derivs=enable_eigvec_derivs,
        implementation=implementation,
    )
    w, vr = outs[0], outs[-1]
    da = convert_element_type(ad.instantiate(da), get_aval(vr).dtype)
    if not vectors:
        # dw[i] = (vr^{-1} da vr)[i, i]
        nd = get_aval(vr).ndim
        dw = reduce_sum(mul(lu_solve(vr, da), matrix_transpose(vr)), (nd - 1,))
        return [w], [dw]
    dw, dvr = _eig_vectors_jvp(w, vr, da)
    primals_out, tangents_out = [w], [dw]
    if compute_left_eigenvectors:
        # Left eigenvectors are the right ones of x^H, whose eigenvalues are conj(w).
        _, dvl = _eig_vectors_jvp(conj(w), outs[1], adjoint(da))
        primals_out.append(outs[1])
        tangents_out.append(dvl)
    if compute_right_eigenvectors:
        primals_out.append(vr)
        tangents_out.append(dvr)
    return primals_out, tangents_out


ad.jvp_rules[eig_p] = _eig_jvp
batch_at_front(eig_p)


# --------------------------------------------------------------------------- schur


def schur(x, *, compute_schur_vectors=True, sort_eig_vals=False, select_callable=None):
    """The Schur decomposition ``x == vs @ t @ vs^H`` of each square matrix of ``x``: ``t``
    upper triangular (quasi-triangular for real ``x``: 2x2 blocks for complex pairs of
    eigenvalues), ``vs`` unitary.

    Args:
      x: a float or complex array of shape ``(..., n, n)``.
      compute_schur_vectors: also return ``vs``.
      sort_eig_vals, select_callable: LAPACK's eigenvalue reordering, which neither JAX nor
        xform implements: ``sort_eig_vals=True`` fails to compile, as in JAX.

    Returns:
      A list ``[t, vs]`` (``[t]`` without ``compute_schur_vectors``), of ``x``'s dtype.

    Example:
      >>> t, vs = schur(np.array([[1., 2.], [0., 3.]]))  # t == x, vs == I
    """
    return list(
        schur_p.bind(
            x,
            compute_schur_vectors=bool(compute_schur_vectors),
            sort_eig_vals=bool(sort_eig_vals),
            select_callable=select_callable,
        )
    )


def _schur_abstract_eval(x, *, compute_schur_vectors, sort_eig_vals, select_callable):
    check_matrix("lax.linalg.schur", x)
    return [ShapedArray(x.shape, x.dtype) for _ in range(1 + bool(compute_schur_vectors))]


schur_p = standard_primitive("schur", _schur_abstract_eval, multiple_results=True)
_no_jvp(schur_p)
batch_at_front(schur_p)


# --------------------------------------------------------------------------- hessenberg


def hessenberg(a):
    """Reduce each square matrix of ``a`` to upper Hessenberg form ``h = q^H a q``.

    Returns:
      A list ``[a, taus]``: ``h`` in the upper triangle and first subdiagonal of ``a``, the
      Householder reflectors that make ``q`` below it, and their scalar factors ``taus``
      (``(..., n - 1)``), as LAPACK's ``gehrd``.

    Example:
      >>> h, taus = hessenberg(np.eye(3))  # taus == [0., 0.]
    """
    return list(hessenberg_p.bind(a))


def _hessenberg_abstract_eval(a):
    name = "lax.linalg.hessenberg"
    check_matrix(name, a)
    if a.shape[-1] == 0:
        raise ValueError(f"{name}: the matrices must not be empty, got shape {a.shape}")
    taus = ShapedArray(a.shape[:-2] + (a.shape[-1] - 1,), a.dtype)
    return [ShapedArray(a.shape, a.dtype), taus]


hessenberg_p = standard_primitive("hessenberg", _hessenberg_abstract_eval, multiple_results=True)
_no_jvp(hessenberg_p)
batch_at_front(hessenberg_p)


# --------------------------------------------------------------------------- tridiagonal


def tridiagonal(a, *, lower=True):
    """Reduce each Hermitian (real symmetric) matrix of ``a`` to real symmetric tridiagonal
    form ``t = q^H a q``, reading only its ``lower`` (or else upper) triangle.

    Returns:
      A list ``[a, d, e, taus]``, as LAPACK's ``sytrd``/``hetrd``: the diagonal ``d``
      (``(..., n)``, real) and off-diagonal ``e`` (``(..., n - 1)``, real) of ``t``; ``a``
      holds them too, with the Householder reflectors that make ``q`` in the rest of its
      ``lower`` (upper) triangle, and ``taus`` (``(..., n - 1)``) their scalar factors.

    Example:
      >>> a, d, e, taus = tridiagonal(np.array([[2., 1.], [1., 2.]]))  # d == [2., 2.]
    """
    return list(tridiagonal_p.bind(a, lower=bool(lower)))


def _tridiagonal_abstract_eval(a, *, lower):
    name = "lax.linalg.tridiagonal"
    check_matrix(name, a)
    n = a.shape[-1]
    if n == 0:
        raise ValueError(f"{name}: the matrices must not be empty, got shape {a.shape}")
    batch, rdtype = a.shape[:-2], real_dtype(a.dtype)
    return [
        ShapedArray(a.shape, a.dtype),
        ShapedArray(batch + (n,), rdtype),
        ShapedArray(batch + (n - 1,), rdtype),
        ShapedArray(batch + (n - 1,), a.dtype),
    ]


tridiagonal_p = standard_primitive("tridiagonal", _tridiagonal_abstract_eval, multiple_results=True)
_no_jvp(tridiagonal_p)
batch_at_front(tridiagonal_p)

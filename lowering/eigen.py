"""Lowering of the eigen family to jaxlib's LAPACK kernels (``lowering/lapack.py``), with the
operands, attributes and result handling JAX 0.10.2 emits on CPU: ``?syevd``/``?heevd``
(eigh), ``?geev`` (eig), ``?gees`` (schur), ``?gehrd`` (hessenberg) and ``?sytrd``/``?hetrd``
(tridiagonal). Every result of a matrix whose call failed (LAPACK's ``info != 0``) is NaN."""

from jaxlib.mlir.dialects import stablehlo as hlo

from lowering import lapack
from lowering.linalg import batch_info_aval
from lowering.mlir import lowering_rules
from xform import dtypes
from xform.core import ShapedArray
from xform.primitives import eigen


def _nan_where_failed(info, info_aval, results, avals):
    ok = lapack.info_ok(info, info_aval)
    return [
        lapack.nan_where_failed(ok, info_aval, x, aval)
        for x, aval in zip(results, avals, strict=True)
    ]


def _flag(compute):
    return lapack.char("V" if compute else "N")


def _eigh_lower(ctx, x, *, lower, sort_eigenvalues, subset_by_index, algorithm):
    # syevd returns its eigenvalues in ascending order whatever sort_eigenvalues says.
    (aval,) = ctx.avals_in
    n = aval.shape[-1]
    if subset_by_index is not None and subset_by_index != (0, n):
        raise NotImplementedError("subset_by_index not supported on CPU and GPU")
    if algorithm == eigen.EighImplementation.QDWH:
        raise NotImplementedError("QDWH implementation is only supported on TPU")
    if algorithm == eigen.EighImplementation.JACOBI:
        raise NotImplementedError("Jacobi implementation is not supported on CPU")
    info_aval = batch_info_aval(aval)
    routine = "heevd" if dtypes.is_complex(aval.dtype) else "syevd"
    v, w, info = lapack.custom_call(
        lapack.target(routine, aval.dtype),
        [x],
        [aval],
        [*ctx.avals_out, info_aval],
        {"mode": lapack.char("V"), "uplo": lapack.char(lapack.uplo(lower))},
        aval.ndim - 2,
        aliases=[(0, 0)],
    )
    return _nan_where_failed(info, info_aval, [v, w], ctx.avals_out)


def _eig_lower(
    ctx,
    x,
    *,
    compute_left_eigenvectors,
    compute_right_eigenvectors,
    enable_eigvec_derivs,
    implementation,
):
    if implementation not in (None, eigen.EigImplementation.LAPACK):
        raise ValueError("Only the lapack implementation is supported on CPU.")
    (aval,) = ctx.avals_in
    info_aval = batch_info_aval(aval)
    vectors_aval = ShapedArray(aval.shape, eigen.complex_dtype(aval.dtype))
    # For real input the kernel returns the eigenvalues' real and imaginary parts apart.
    real = not dtypes.is_complex(aval.dtype)
    values_aval = ShapedArray(aval.shape[:-1], aval.dtype)
    values_avals = [values_aval, values_aval] if real else [values_aval]
    *w, vl, vr, info = lapack.custom_call(
        lapack.target("geev", aval.dtype),
        [x],
        [aval],
        [*values_avals, vectors_aval, vectors_aval, info_aval],
        {
            "compute_left": _flag(compute_left_eigenvectors),
            "compute_right": _flag(compute_right_eigenvectors),
        },
        aval.ndim - 2,
    )
    outs = [hlo.complex(*w) if real else w[0]]
    if compute_left_eigenvectors:
        outs.append(vl)
    if compute_right_eigenvectors:
        outs.append(vr)
    return _nan_where_failed(info, info_aval, outs, ctx.avals_out)


def _schur_lower(ctx, x, *, compute_schur_vectors, sort_eig_vals, select_callable):
    if sort_eig_vals:
        raise NotImplementedError("The sort feature of LAPACK's gees routine is not implemented.")
    (aval,) = ctx.avals_in
    info_aval = batch_info_aval(aval)
    # Besides t and vs: the eigenvalues (real and imaginary parts apart for real input), the
    # number of selected ones (sdim, unused without sorting) and info.
    values_aval = ShapedArray(aval.shape[:-1], aval.dtype)
    values_avals = [values_aval] * (1 if dtypes.is_complex(aval.dtype) else 2)
    t, vs, *_, info = lapack.custom_call(
        lapack.target("gees", aval.dtype),
        [x],
        [aval],
        [aval, aval, *values_avals, info_aval, info_aval],
        {"mode": _flag(compute_schur_vectors), "sort": lapack.char("N")},
        aval.ndim - 2,
        aliases=[(0, 0)],
    )
    return _nan_where_failed(info, info_aval, [t, vs][: len(ctx.avals_out)], ctx.avals_out)


def _hessenberg_lower(ctx, a):
    (aval,) = ctx.avals_in
    info_aval = batch_info_aval(aval)
    # low and high (1-based) bound the part still to reduce: all of it.
    h, taus, info = lapack.custom_call(
        lapack.target("gehrd", aval.dtype),
        [a],
        [aval],
        [*ctx.avals_out, info_aval],
        {"low": lapack.i32(1), "high": lapack.i32(aval.shape[-1])},
        aval.ndim - 2,
        aliases=[(0, 0)],
    )
    return _nan_where_failed(info, info_aval, [h, taus], ctx.avals_out)


def _tridiagonal_lower(ctx, a, *, lower):
    (aval,) = ctx.avals_in
    info_aval = batch_info_aval(aval)
    routine = "hetrd" if dtypes.is_complex(aval.dtype) else "sytrd"
    *outs, info = lapack.custom_call(
        lapack.target(routine, aval.dtype),
        [a],
        [aval],
        [*ctx.avals_out, info_aval],
        {"uplo": lapack.char(lapack.uplo(lower))},
        aval.ndim - 2,
        aliases=[(0, 0)],
    )
    return _nan_where_failed(info, info_aval, outs, ctx.avals_out)


lowering_rules[eigen.eigh_p] = _eigh_lower
lowering_rules[eigen.eig_p] = _eig_lower
lowering_rules[eigen.schur_p] = _schur_lower
lowering_rules[eigen.hessenberg_p] = _hessenberg_lower
lowering_rules[eigen.tridiagonal_p] = _tridiagonal_lower

"""Lowering of the singular-value family, as JAX 0.10.2 emits it on CPU: ``svd`` is one call
of ``gesdd`` (or ``gesvd`` for ``SvdAlgorithm.QR``) returning ``(a, s, u, vt, info)``, its
``mode`` attribute 'A' (full), 'S' (economic) or 'N' (values only), with NaN for matrices
whose ``info`` is not 0; ``symmetric_product`` is a contraction."""

from lowering import lapack
from lowering.linalg import batch_info_aval, lower_composition
from lowering.mlir import lowering_rules
from xform.core import ShapedArray
from xform.primitives import svd as svd_family

_ROUTINES = {
    None: "gesdd",
    svd_family.SvdAlgorithm.DEFAULT: "gesdd",
    svd_family.SvdAlgorithm.DIVIDE_AND_CONQUER: "gesdd",
    svd_family.SvdAlgorithm.QR: "gesvd",
}


def _svd_lower(ctx, x, *, full_matrices, compute_uv, subset_by_index, algorithm):
    (aval,) = ctx.avals_in
    batch, (m, n) = aval.shape[:-2], aval.shape[-2:]
    k = min(m, n)
    if subset_by_index is not None and subset_by_index != (0, k):
        raise NotImplementedError("subset_by_index not implemented for CPU and GPU")
    if m == 0 or n == 0:

        def empty(x):
            return svd_family.svd_empty(x, full_matrices=full_matrices, compute_uv=compute_uv)

        return lower_composition(ctx, empty, [aval], [x], "svd")
    routine = _ROUTINES.get(algorithm)
    if routine is None:
        raise NotImplementedError("The SVD Jacobi and Polar algorithms are not implemented on CPU.")
    mode = "N" if not compute_uv else ("A" if full_matrices else "S")
    s_aval = ctx.avals_out[0]
    # The kernel writes u and vt even for mode 'N' (then they are only workspace).
    u_aval = ShapedArray(batch + (m, m if full_matrices else k), aval.dtype)
    vt_aval = ShapedArray(batch + (n if full_matrices else k, n), aval.dtype)
    info_aval = batch_info_aval(aval)
    _, s, u, vt, info = lapack.custom_call(
        lapack.target(routine, aval.dtype),
        [x],
        [aval],
        [aval, s_aval, u_aval, vt_aval, info_aval],
        {"mode": lapack.char(mode)},
        aval.ndim - 2,
        aliases=[(0, 0)],
    )
    ok = lapack.info_ok(info, info_aval)
    outs = [lapack.nan_where_failed(ok, info_aval, s, s_aval)]
    if compute_uv:
        outs += [
            lapack.nan_where_failed(ok, info_aval, u, u_aval),
            lapack.nan_where_failed(ok, info_aval, vt, vt_aval),
        ]
    return outs


def _symmetric_product_lower(ctx, a, c, *, alpha, beta):
    def fn(a, c):
        return [svd_family.symmetric_product_composition(a, c, alpha=alpha, beta=beta)]

    return lower_composition(ctx, fn, list(ctx.avals_in), [a, c], "symmetric_product")


lowering_rules[svd_family.svd_p] = _svd_lower
lowering_rules[svd_family.symmetric_product_p] = _symmetric_product_lower

"""Lowering of the linalg family to jaxlib's LAPACK kernels (``lowering/lapack.py``), with the
operands, attributes and result handling JAX 0.10.2 emits on CPU."""

from jaxlib.mlir.dialects import stablehlo as hlo

from lowering import lapack
from lowering.mlir import constant, full_like_aval, lower_jaxpr, lowering_rules
from xform import dtypes
from xform.core import ShapedArray
from xform.interpret.staging import trace_to_jaxpr
from xform.primitives import linalg as la


def lower_composition(ctx, fn, avals, args, name):
    """Emit ``fn`` (a function of lax operations on ``avals``) inline: for the parts of a
    kernel's result that JAX computes with ordinary operations around the call."""
    closed = trace_to_jaxpr(fn, avals, name)
    consts = [
        constant(c, v.aval.dtype)
        for v, c in zip(closed.jaxpr.constvars, closed.consts, strict=True)
    ]
    return lower_jaxpr(ctx.module, closed.jaxpr, consts, list(args))


def batch_info_aval(aval, core_rank=2):
    """The type of LAPACK's ``info``: one int32 per matrix of ``aval``."""
    return ShapedArray(aval.shape[: aval.ndim - core_rank], dtypes.int32)


def _cholesky_lower(ctx, x):
    (aval,) = ctx.avals_in
    nb = aval.ndim - 2
    info_aval = batch_info_aval(aval)
    factor, info = lapack.custom_call(
        lapack.target("potrf", aval.dtype),
        [x],
        [aval],
        [aval, info_aval],
        {"uplo": lapack.char(lapack.uplo(True))},
        nb,
        aliases=[(0, 0)],
    )
    factor = lapack.nan_where_failed(lapack.info_ok(info, info_aval), info_aval, factor, aval)
    # potrf leaves the upper triangle as it found it: zero it.
    return lower_composition(ctx, lambda f: [la.tril(f)], [aval], [factor], "cholesky")


def _triangular_solve_lower(
    ctx, a, b, *, left_side, lower, transpose_a, conjugate_a, unit_diagonal
):
    a_aval, b_aval = ctx.avals_in
    if conjugate_a and not transpose_a:
        # The kernel conjugates only together with transposing: conjugate a here.
        a = hlo.complex(hlo.real(a), hlo.negate(hlo.imag(a)))
        conjugate_a = False
    trans = ("C" if conjugate_a else "T") if transpose_a else "N"
    attrs = {
        "side": lapack.char("L" if left_side else "R"),
        "uplo": lapack.char(lapack.uplo(lower)),
        "trans_x": lapack.char(trans),
        "diag": lapack.char("U" if unit_diagonal else "N"),
    }
    return lapack.custom_call(
        lapack.target("trsm", a_aval.dtype),
        [a, b],
        [a_aval, b_aval],
        [b_aval],
        attrs,
        a_aval.ndim - 2,
        aliases=[(1, 0)],
    )


def _lu_lower(ctx, x):
    (aval,) = ctx.avals_in
    lu_aval, pivots_aval, perm_aval = ctx.avals_out
    info_aval = batch_info_aval(aval)
    lu_, pivots, info = lapack.custom_call(
        lapack.target("getrf", aval.dtype),
        [x],
        [aval],
        [lu_aval, pivots_aval, info_aval],
        {},
        aval.ndim - 2,
        aliases=[(0, 0)],
    )
    # LAPACK's pivots count from 1; info > 0 (a zero pivot) still gives a factorization.
    pivots = hlo.subtract(pivots, full_like_aval(1, pivots_aval))
    lu_ = lapack.nan_where_failed(lapack.info_ok(info, info_aval, "ge"), info_aval, lu_, lu_aval)
    (perm,) = _pivots_lower(ctx, pivots, pivots_aval, perm_aval.shape[-1])
    return [lu_, pivots, perm]


def _pivots_lower(ctx, pivots, pivots_aval, size):
    return lower_composition(
        ctx,
        lambda p: [la.apply_pivots(p, size)],
        [pivots_aval],
        [pivots],
        "lu_pivots_to_permutation",
    )


def _lu_pivots_to_permutation_lower(ctx, pivots, *, permutation_size):
    return _pivots_lower(ctx, pivots, ctx.avals_in[0], permutation_size)


def _tridiagonal_solve_lower(ctx, dl, d, du, b, *, perturb_singular):
    avals = ctx.avals_in
    b_aval = avals[3]
    if perturb_singular:  # jaxlib's own kernel (not LAPACK's), for every dtype, no info
        lapack.target("gtsv", b_aval.dtype)  # the same checks and initialization
        return lapack.custom_call(
            "tridiagonal_solve_perturbed_ffi",
            [dl, d, du, b],
            list(avals),
            [b_aval],
            {},
            b_aval.ndim - 2,
        )
    info_aval = batch_info_aval(b_aval)
    *_, x, info = lapack.custom_call(
        lapack.target("gtsv", b_aval.dtype),
        [dl, d, du, b],
        list(avals),
        [*avals[:3], b_aval, info_aval],
        {},
        b_aval.ndim - 2,
        aliases=[(0, 0), (1, 1), (2, 2), (3, 3)],
    )
    return [lapack.nan_where_failed(lapack.info_ok(info, info_aval), info_aval, x, b_aval)]


lowering_rules[la.cholesky_p] = _cholesky_lower
lowering_rules[la.triangular_solve_p] = _triangular_solve_lower
lowering_rules[la.lu_p] = _lu_lower
lowering_rules[la.lu_pivots_to_permutation_p] = _lu_pivots_to_permutation_lower
lowering_rules[la.tridiagonal_solve_p] = _tridiagonal_solve_lower

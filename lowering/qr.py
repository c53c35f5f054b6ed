"""Lowering of the QR family to jaxlib's LAPACK kernels, as JAX 0.10.2 emits it on CPU:
``geqrf``/``geqp3`` and ``orgqr``/``ungqr`` and ``ormqr``/``unmqr`` overwrite an operand (the
matrix; ``geqp3`` also the pivots; ``ormqr`` the multiplied matrix) and report no ``info``;
``qr`` is their composition (``qr.qr_decomposition``)."""

from jaxlib.mlir import ir

from lowering import lapack
from lowering.linalg import lower_composition
from lowering.mlir import lowering_rules
from xform import dtypes
from xform.primitives import qr as qr_family


def _orthogonal(routine, dtype):
    """``or<routine>`` for real matrices, ``un<routine>`` (unitary) for complex ones."""
    return lapack.target(("un" if dtypes.is_complex(dtype) else "or") + routine, dtype)


def _geqrf_lower(ctx, a):
    (aval,) = ctx.avals_in
    return lapack.custom_call(
        lapack.target("geqrf", aval.dtype),
        [a],
        [aval],
        list(ctx.avals_out),
        {},
        aval.ndim - 2,
        aliases=[(0, 0)],
    )


def _geqp3_lower(ctx, a, jpvt, *, use_magma):
    a_aval = ctx.avals_in[0]
    return lapack.custom_call(
        lapack.target("geqp3", a_aval.dtype),
        [a, jpvt],
        list(ctx.avals_in),
        list(ctx.avals_out),
        {},
        a_aval.ndim - 2,
        aliases=[(0, 0), (1, 1)],
    )


def _householder_product_lower(ctx, a, taus):
    a_aval = ctx.avals_in[0]
    return lapack.custom_call(
        _orthogonal("gqr", a_aval.dtype),
        [a, taus],
        list(ctx.avals_in),
        list(ctx.avals_out),
        {},
        a_aval.ndim - 2,
        aliases=[(0, 0)],
    )


def _ormqr_lower(ctx, a, taus, c, *, left, transpose):
    a_aval = ctx.avals_in[0]
    attrs = {"left": ir.BoolAttr.get(left), "transpose": ir.BoolAttr.get(transpose)}
    return lapack.custom_call(
        _orthogonal("mqr", a_aval.dtype),
        [a, taus, c],
        list(ctx.avals_in),
        list(ctx.avals_out),
        attrs,
        a_aval.ndim - 2,
        aliases=[(2, 0)],
    )


def _qr_lower(ctx, x, *, pivoting, full_matrices, use_magma):
    def fn(x):
        return qr_family.qr_decomposition(
            x, pivoting=pivoting, full_matrices=full_matrices, use_magma=use_magma
        )

    return lower_composition(ctx, fn, list(ctx.avals_in), [x], "qr")


lowering_rules[qr_family.geqrf_p] = _geqrf_lower
lowering_rules[qr_family.geqp3_p] = _geqp3_lower
lowering_rules[qr_family.householder_product_p] = _householder_product_lower
lowering_rules[qr_family.ormqr_p] = _ormqr_lower
lowering_rules[qr_family.qr_p] = _qr_lower

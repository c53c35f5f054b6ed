"""The two matrix factorizations the samplers need, as loops over columns of ``xform.numpy``
operations (xform has no ``linalg`` primitives yet): a Cholesky factor for
``multivariate_normal`` and the Q of a QR decomposition for ``orthogonal``.

Both work on stacks of matrices (leading batch axes) and under ``jit``/``vmap``/``grad``.
They are O(n^3) in plain arithmetic: fine for the small matrices samplers see, no substitute
for LAPACK. When ``xform.numpy.linalg`` gains ``cholesky``/``qr`` these should call it.
"""

import numpy as np

from xform import lax
from xform import numpy as xnp


def cholesky(a):
    """The lower-triangular ``L`` with ``L @ L.T == a`` for symmetric positive-definite ``a``
    of shape ``(..., n, n)``, column by column (Cholesky-Crout). As ``jnp.linalg.cholesky``,
    ``a`` is symmetrized first, so gradients are symmetric too."""
    a = (a + xnp.conj(xnp.swapaxes(a, -1, -2))) / 2
    n = a.shape[-1]
    rows = lax.iota(np.int32, n)

    def column(j, factor):
        e_j = (rows == j).astype(a.dtype)
        a_col = xnp.einsum("...ij,j->...i", a, e_j)  # a[..., :, j]
        l_row = xnp.einsum("...ij,i->...j", factor, e_j)  # factor[..., j, :], zero from j on
        v = a_col - xnp.einsum("...ik,...k->...i", factor, l_row)
        diag = xnp.sqrt(xnp.sum(v * e_j, axis=-1, keepdims=True))
        col = xnp.where(rows > j, v / diag, xnp.where(rows == j, diag, 0))
        return factor + col[..., :, None] * e_j

    return lax.fori_loop(0, n, column, xnp.zeros_like(a))


def qr_q(z):
    """The ``Q`` factor of the thin QR decomposition of ``z`` (shape ``(..., m, n)``,
    ``m >= n``) normalized so that ``R`` has a positive real diagonal: Gram-Schmidt with one
    re-orthogonalization pass per column."""
    n = z.shape[-1]
    cols = lax.iota(np.int32, n)

    def column(j, q):
        e_j = (cols == j).astype(z.dtype)
        v = xnp.einsum("...ij,j->...i", z, e_j)  # z[..., :, j]; q's columns from j on are zero
        for _ in range(2):
            v = v - xnp.einsum("...ik,...k->...i", q,
                               xnp.einsum("...ik,...i->...k", xnp.conj(q), v))
        norm = xnp.sqrt(xnp.sum(xnp.real(v * xnp.conj(v)), axis=-1, keepdims=True))
        return q + (v / norm.astype(z.dtype))[..., :, None] * e_j

    return lax.fori_loop(0, n, column, xnp.zeros_like(z))

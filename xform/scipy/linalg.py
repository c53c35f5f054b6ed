"""``xform.scipy.linalg``: JAX's ``jax.scipy.linalg`` as compositions of xform primitives.

The factorizations come from ``xform.lax.linalg`` (LAPACK kernels under ``jit``). Everything
else is written here in ``xform.numpy`` and ``xform.lax``: the special matrices, the matrix
exponential (Padé approximants with scaling and squaring), the matrix square root and
``funm`` (Schur forms), Sylvester's equation (Bartels-Stewart) and the tridiagonal
eigensolver (bisection on Sturm counts, inverse iteration), so each works eagerly, under
``jit`` and under the transformations.

Arguments that SciPy has and JAX ignores (``overwrite_*``, ``check_finite``, ``lwork``,
``debug``, ``turbo``, ``lapack_driver``) are accepted and ignored here too. Leading batch
dimensions are accepted wherever JAX accepts them; they broadcast as in ``jnp.vectorize``.
"""

import math
import operator
import warnings

import numpy as np

from xform import dtypes, lax, random
from xform import numpy as xnp
from xform.api.autodiff import jvp
from xform.api.batching import vmap
from xform.lax import linalg as lax_linalg
from xform.numpy import linalg as xnp_linalg
from xform.numpy._promote import (
    check_arraylike,
    promote_args_inexact,
    promote_dtypes,
    promote_dtypes_inexact,
)
from xform.scipy.special import gammaln

__all__ = [
    "block_diag",
    "cho_factor",
    "cho_solve",
    "cholesky",
    "circulant",
    "companion",
    "convolution_matrix",
    "det",
    "dft",
    "eigh",
    "eigh_tridiagonal",
    "expm",
    "expm_frechet",
    "fiedler",
    "fiedler_companion",
    "funm",
    "hadamard",
    "hankel",
    "helmert",
    "hessenberg",
    "hilbert",
    "inv",
    "invhilbert",
    "invpascal",
    "leslie",
    "lu",
    "lu_factor",
    "lu_solve",
    "pascal",
    "polar",
    "qr",
    "qr_multiply",
    "rsf2csf",
    "schur",
    "solve",
    "solve_sylvester",
    "solve_triangular",
    "sqrtm",
    "svd",
    "toeplitz",
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


# --------------------------------------------------------------------------- special matrices


def block_diag(*arrs):
    """A block-diagonal matrix with ``arrs`` (each of at most two dimensions) on its diagonal.

    Example:
      >>> block_diag(xform.numpy.ones((1, 1)), xform.numpy.ones((2, 2)))  # 3x3
    """
    check_arraylike("block_diag", *arrs)
    if not arrs:
        arrs = (xnp.zeros((1, 0)),)
    arrs = promote_dtypes(*arrs)
    bad = [i for i, a in enumerate(arrs) if a.ndim > 2]
    if bad:
        raise ValueError(
            f"block_diag: every block must have at most 2 dimensions, but argument "
            f"{bad[0]} has shape {arrs[bad[0]].shape}"
        )
    blocks = [xnp.atleast_2d(a) for a in arrs]
    zero = xnp.zeros((), blocks[0].dtype)
    total = sum(b.shape[1] for b in blocks)
    rows, col = [], 0
    for b in blocks:
        width = b.shape[1]
        rows.append(lax.pad(b, zero, ((0, 0, 0), (col, total - col - width, 0))))
        col += width
    return _strong(xnp.concatenate(rows, axis=0))


def circulant(c):
    """The circulant matrix with first column ``c`` (shape ``(..., n)``):
    ``A[i, j] = c[(i - j) % n]``."""
    check_arraylike("circulant", c)
    c = xnp.atleast_1d(xnp.asarray(c))
    n = c.shape[-1]
    return c[..., (np.arange(n)[:, None] - np.arange(n)[None, :]) % n]


def toeplitz(c, r=None):
    """The Toeplitz matrix with first column ``c`` and first row ``r`` (``r[0]`` is ignored;
    ``r`` defaults to ``conj(c)``); leading dimensions of ``c`` and ``r`` broadcast.

    Example:
      >>> toeplitz(xform.numpy.array([1, 2, 3]))  # [[1, 2, 3], [2, 1, 2], [3, 2, 1]]
    """
    if r is None:
        check_arraylike("toeplitz", c)
        r = xnp.conjugate(xnp.asarray(c))
    else:
        check_arraylike("toeplitz", c, r)
    c, r = xnp.atleast_1d(xnp.asarray(c)), xnp.atleast_1d(xnp.asarray(r))
    m, n = c.shape[-1], r.shape[-1]
    batch = xnp.broadcast_shapes(c.shape[:-1], r.shape[:-1])
    if m == 0 or n == 0:
        return xnp.empty(batch + (m, n), xnp.promote_types(c.dtype, r.dtype))
    c, r = (xnp.broadcast_to(x, batch + x.shape[-1:]) for x in (c, r))
    elems = xnp.concatenate([xnp.flip(c, axis=-1), r[..., 1:]], axis=-1)
    return _strong(elems[..., (m - 1) - np.arange(m)[:, None] + np.arange(n)[None, :]])


def hankel(c, r=None):
    """The Hankel matrix with first column ``c`` and last row ``r`` (``r[0]`` is ignored; ``r``
    defaults to zeros): ``H[i, j] = concatenate([c, r[1:]])[i + j]``."""
    if r is None:
        check_arraylike("hankel", c)
        c = xnp.asarray(c)
        r = xnp.zeros_like(c)
    else:
        check_arraylike("hankel", c, r)
        c, r = xnp.asarray(c), xnp.asarray(r)
    if c.ndim == 0:
        raise ValueError("hankel: c must be at least 1-dimensional, got a scalar.")
    if r.ndim == 0:
        raise ValueError("hankel: r must be at least 1-dimensional, got a scalar.")
    m, n = c.shape[-1], r.shape[-1]
    batch = xnp.broadcast_shapes(c.shape[:-1], r.shape[:-1])
    if m == 0 or n == 0:
        return xnp.empty(batch + (m, n), xnp.result_type(c, r))
    c, r = (xnp.broadcast_to(x, batch + x.shape[-1:]) for x in (c, r))
    v = xnp.concatenate([c, r[..., 1:]], axis=-1)
    return _strong(v[..., np.arange(m)[:, None] + np.arange(n)[None, :]])


def leslie(f, s):
    """The Leslie matrix: fecundities ``f`` (shape ``(..., n)``, ``n >= 2``) in the first row,
    survival rates ``s`` (shape ``(..., n - 1)``) on the first sub-diagonal."""
    check_arraylike("leslie", f, s)
    f, s = xnp.atleast_1d(f), xnp.atleast_1d(s)
    if f.shape[-1] < 2:
        raise ValueError(
            f"leslie: f needs at least 2 entries along its last axis, got f.shape={f.shape}"
        )
    if s.shape[-1] != f.shape[-1] - 1:
        raise ValueError(
            f"leslie: s needs one entry fewer than f along the last axis, got "
            f"f.shape={f.shape} and s.shape={s.shape}"
        )
    f, s = promote_dtypes(f, s)
    n = f.shape[-1]
    s = xnp.concatenate([s, xnp.zeros(s.shape[:-1] + (1,), s.dtype)], axis=-1)
    i, j = np.arange(n)[:, None], np.arange(n)[None, :]
    sub = xnp.where(i == j + 1, s[..., None, :], xnp.zeros((), s.dtype))
    return xnp.where(i == 0, f[..., None, :], sub)


def companion(a):
    """The companion matrix of the polynomial with coefficients ``a`` (shape ``(..., n)``,
    ``n >= 2``): first row ``-a[1:] / a[0]``, ones on the first sub-diagonal."""
    (a,) = promote_args_inexact("companion", a)
    a = xnp.atleast_1d(a)
    if a.shape[-1] < 2:
        raise ValueError(
            f"companion: a needs at least 2 coefficients along its last axis, got a.shape={a.shape}"
        )
    first_row = -a[..., 1:] / a[..., :1]
    m = a.shape[-1] - 1
    below = xnp.eye(m, m, k=-1, dtype=first_row.dtype)
    return xnp.where(np.arange(m)[:, None] == 0, first_row[..., None, :], below)


def fiedler(a):
    """The symmetric Fiedler matrix ``F[i, j] = |a[i] - a[j]|`` (``a`` of shape ``(..., n)``)."""
    check_arraylike("fiedler", a)
    a = xnp.atleast_1d(a)
    return xnp.abs(a[..., :, None] - a[..., None, :])


def fiedler_companion(a):
    """The pentadiagonal Fiedler companion matrix of the polynomial with coefficients ``a``
    (shape ``(..., n)``): its eigenvalues are the polynomial's roots."""
    (a,) = promote_args_inexact("fiedler_companion", a)
    a = xnp.atleast_1d(a)
    if a.shape[-1] == 0:
        raise ValueError(
            f"fiedler_companion: a needs at least 1 coefficient along its last "
            f"axis, got a.shape={a.shape}"
        )
    n = a.shape[-1] - 1
    if n == 0:
        return xnp.empty(a.shape[:-1] + (0, 0), a.dtype)
    a = a / a[..., :1]
    # Which coefficient (negated) sits where, and where the ones go: the pattern depends on
    # the size only, so it is built in NumPy.
    i, j = np.arange(n)[:, None], np.arange(n)[None, :]
    even, odd = i % 2 == 0, i % 2 == 1
    super_diag, sub_diag = (j == i + 1) & even, (j == i - 1) & even & (i >= 2)
    corner = (i == 0) & (j == 0)
    from_a = corner | super_diag | sub_diag
    which = np.where(corner, 1, np.where(super_diag, np.minimum(i + 2, n), np.minimum(i + 1, n)))
    ones = ((i == 1) & (j == 0)) | ((j == i + 2) & even) | ((j == i - 2) & odd & (i >= 3))
    one_zero = xnp.where(ones, xnp.ones((), a.dtype), xnp.zeros((), a.dtype))
    return xnp.where(from_a, -a[..., np.where(from_a, which, 0)], one_zero)


def convolution_matrix(a, n, mode="full"):
    """The Toeplitz matrix ``A`` with ``A @ v == convolve(a, v, mode)`` for ``v`` of length
    ``n``; ``a`` has shape ``(..., m)``, the result ``(..., k, n)`` with ``k`` ``m + n - 1``
    (``'full'``), ``max(m, n)`` (``'same'``) or ``max(m, n) - min(m, n) + 1``
    (``'valid'``)."""
    n = operator.index(n)
    if n <= 0:
        raise ValueError(f"convolution_matrix: n must be a positive integer, got {n}")
    check_arraylike("convolution_matrix", a)
    a = xnp.asarray(a)
    if a.ndim == 0:
        raise ValueError("convolution_matrix: a must be at least 1-dimensional, got a scalar")
    m = a.shape[-1]
    if m < 1:
        raise ValueError(
            f"convolution_matrix: a needs at least 1 entry along its last axis, "
            f"got a.shape={a.shape}"
        )
    if mode not in ("full", "valid", "same"):
        raise ValueError(
            f"convolution_matrix: mode must be 'full', 'valid' or 'same', got {mode!r}"
        )
    if mode == "same":
        trim = min(n, m) - 1
        head, tail = trim // 2, trim - trim // 2
    elif mode == "valid":
        head = tail = min(n, m) - 1
    else:
        head = tail = 0
    zeros = xnp.zeros(a.shape[:-1] + (n - 1,), a.dtype)
    padded = xnp.concatenate([a, zeros], axis=-1)
    padded_rev = xnp.concatenate([xnp.flip(a, axis=-1), zeros], axis=-1)
    length = m + n - 1
    first_col = padded[..., head : length - tail]
    first_row = padded_rev[..., length - n - head : length - head]
    return toeplitz(first_col, first_row)


def hilbert(n):
    """The Hilbert matrix ``H[i, j] = 1 / (i + j + 1)`` of order ``n`` (default float dtype)."""
    a = lax.broadcasted_iota(dtypes.default_float(), (n, 1), 0)
    return 1 / (a + a.T + 1)


def invhilbert(n):
    """The inverse of the Hilbert matrix of order ``n``, from its closed form in binomial
    coefficients (in floating point: SciPy's ``exact=True`` has no counterpart)."""
    a = xnp.arange(n, dtype=dtypes.default_float())
    i, j = a[:, None], a[None, :]
    s = i + j
    return (
        (-1.0) ** s
        * (s + 1.0)
        * _comb(n + i, n - j - 1)
        * _comb(n + j, n - i - 1)
        * _comb(s, i) ** 2
    )


def pascal(n, kind=None):
    """The Pascal matrix of order ``n`` (``kind`` ``'symmetric'``, ``'lower'`` or ``'upper'``),
    from ``lgamma`` in float32 as JAX does, so not exact for large ``n``."""
    kind = _kind("pascal", kind)
    a = xnp.arange(n, dtype=np.float32)
    lower = _binom(a[:, None], a[None, :])
    if kind == "lower":
        return lower
    if kind == "upper":
        return lower.T
    return xnp.dot(lower, lower.T)


def invpascal(n, kind=None):
    """The inverse of the Pascal matrix of order ``n``: ``L^-1[i, j] = (-1)**(i - j) *
    binom(i, j)``, ``U^-1 = (L^-1).T`` and the symmetric one ``U^-1 @ L^-1``."""
    kind = _kind("invpascal", kind)
    a = xnp.arange(n, dtype=dtypes.default_float())
    i, j = a[:, None], a[None, :]
    lower_inv = (-1.0) ** (i - j) * _binom(i, j)
    if kind == "lower":
        return lower_inv
    if kind == "upper":
        return lower_inv.T
    return xnp.dot(lower_inv.T, lower_inv)


def helmert(n, full=False):
    """The Helmert matrix of order ``n``: the ``(n - 1, n)`` orthonormal contrasts, with the
    row ``1 / sqrt(n)`` on top if ``full``."""
    if n < 1:
        raise ValueError(f"helmert: n must be a positive integer, got {n}")
    i, j = np.arange(n - 1)[:, None], np.arange(n)[None, :]
    k = xnp.asarray(i + 1, dtypes.default_float())
    denom = xnp.sqrt(k * (k + 1))
    h = xnp.where(j <= i, 1.0 / denom, xnp.where(j == i + 1, -k / denom, xnp.zeros_like(denom)))
    if full:
        first = xnp.full((1, n), 1.0 / xnp.sqrt(n), dtype=h.dtype)
        h = xnp.concatenate([first, h], axis=0)
    return h


def hadamard(n, dtype=int):
    """The Sylvester-Hadamard matrix of order ``n`` (a positive power of 2)."""
    if n < 1 or not math.log2(n).is_integer():
        raise ValueError(f"hadamard: n must be a positive power of 2, got {n}")
    h = xnp.ones((1, 1), dtype=dtype)
    for _ in range(int(math.log2(n))):
        h = xnp.concatenate(
            [xnp.concatenate([h, h], axis=1), xnp.concatenate([h, -h], axis=1)], axis=0
        )
    return h


def dft(n, scale=None, *, dtype=None):
    """The ``n``-by-``n`` discrete Fourier transform matrix ``W[i, j] = exp(-2j pi i j / n)``,
    unscaled or divided by ``sqrt(n)`` (``scale='sqrtn'``) or ``n`` (``scale='n'``)."""
    if scale is not None and scale not in ("sqrtn", "n"):
        raise ValueError(f"dft: scale must be None, 'sqrtn' or 'n', got {scale!r}")
    if dtype is None:
        dtype = dtypes.default_complex()
    else:
        dtype = dtypes.canonicalize(np.dtype(dtype))
        if not dtypes.is_complex(dtype):
            raise ValueError(f"dft: dtype must be a complex type, got {dtype}")
    a = xnp.arange(n, dtype=dtype)
    omegas = xnp.exp(-2j * np.pi * a[:, None] * a[None, :] / n)
    if scale == "sqrtn":
        omegas = omegas / xnp.sqrt(n)
    elif scale == "n":
        omegas = omegas / n
    return omegas


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


# --------------------------------------------------------------------------- matrix functions

_PADE_COEFFS = {
    3: (120.0, 60.0, 12.0, 1.0),
    5: (30240.0, 15120.0, 3360.0, 420.0, 30.0, 1.0),
    7: (17297280.0, 8648640.0, 1995840.0, 277200.0, 25200.0, 1512.0, 56.0, 1.0),
    9: (
        17643225600.0,
        8821612800.0,
        2075673600.0,
        302702400.0,
        30270240.0,
        2162160.0,
        110880.0,
        3960.0,
        90.0,
        1.0,
    ),
    13: (
        64764752532480000.0,
        32382376266240000.0,
        7771770303897600.0,
        1187353796428800.0,
        129060195264000.0,
        10559470521600.0,
        670442572800.0,
        33522128640.0,
        1323241920.0,
        40840800.0,
        960960.0,
        16380.0,
        182.0,
        1.0,
    ),
}

# Higham (2005): the largest 1-norm each Padé degree handles to working precision, and the
# norm to scale down to before the highest degree. Float64 uses degrees 3-13, float32 3-7.
_EXPM_DOUBLE = (
    (3, 5, 7, 9, 13),
    (1.495585217958292e-002, 2.539398330063230e-001, 9.504178996162932e-001, 2.097847961257068e000),
    5.371920351148152,
)
_EXPM_SINGLE = ((3, 5, 7), (4.258730016922831e-001, 1.880152677804762e000), 3.925724783138660)
_EXPM_PARAMS = {
    np.dtype(np.float64): _EXPM_DOUBLE,
    np.dtype(np.complex128): _EXPM_DOUBLE,
    np.dtype(np.float32): _EXPM_SINGLE,
    np.dtype(np.complex64): _EXPM_SINGLE,
}


def _pade(degree):
    """``(U, V)``: the odd and even parts of the ``[degree/degree]`` Padé approximant of
    ``exp``, so that ``exp(A) ~ (V - U)^-1 (V + U)``."""
    b = _PADE_COEFFS[degree]

    def approximant(a):
        ident = xnp.eye(a.shape[0], dtype=a.dtype)
        a2 = _dot(a, a)
        if degree == 13:
            a4 = _dot(a2, a2)
            a6 = _dot(a4, a2)
            u = _dot(
                a,
                _dot(a6, b[13] * a6 + b[11] * a4 + b[9] * a2)
                + b[7] * a6
                + b[5] * a4
                + b[3] * a2
                + b[1] * ident,
            )
            v = (
                _dot(a6, b[12] * a6 + b[10] * a4 + b[8] * a2)
                + b[6] * a6
                + b[4] * a4
                + b[2] * a2
                + b[0] * ident
            )
            return u, v
        powers = [ident, a2]  # powers[k] = a^(2k)
        while len(powers) <= degree // 2:
            powers.append(_dot(powers[-1], a2))
        odd = b[degree] * powers[-1]
        even = b[degree - 1] * powers[-1]
        for k in reversed(range(degree // 2)):
            odd = odd + b[2 * k + 1] * powers[k]
            even = even + b[2 * k] * powers[k]
        return _dot(a, odd), even

    return approximant


def _expm_matrix(a, upper_triangular, max_squarings):
    if a.dtype not in _EXPM_PARAMS:
        raise TypeError(
            f"expm: A.dtype={a.dtype} is not supported (float32, float64, complex64 or complex128)"
        )
    degrees, bounds, max_norm = _EXPM_PARAMS[a.dtype]
    norm = xnp_linalg.norm(a, 1)
    n_squarings = xnp.maximum(0, xnp.floor(xnp.log2(norm / max_norm)))
    scaled = a / 2 ** n_squarings.astype(a.dtype)
    # The degree is chosen from the norm before scaling, as JAX does.
    which = xnp.sum(norm >= xnp.asarray(bounds, norm.dtype)).astype(np.int32)
    u, v = lax.switch(which, [_pade(d) for d in degrees], scaled)
    p, q = u + v, -u + v

    def compute(a, p, q):
        r = solve_triangular(q, p) if upper_triangular else xnp_linalg.solve(q, p)

        def square(r, i):
            return lax.cond(i < n_squarings, lambda r: _dot(r, r), lambda r: r, r), None

        r, _ = lax.scan(square, r, xnp.arange(max_squarings, dtype=n_squarings.dtype))
        return r

    def overflow(a, p, q):
        return xnp.full_like(a, np.nan)

    return lax.cond(n_squarings > max_squarings, overflow, compute, a, p, q)


def expm(A, *, upper_triangular=False, max_squarings=16):  # noqa: N803  (SciPy's name)
    """The matrix exponential of a (stack of) square matrix, by Padé approximation with
    scaling and squaring (Higham 2005), as JAX.

    Args:
      A: array of shape ``(..., n, n)``.
      upper_triangular: ``A`` is upper triangular (a triangular solve replaces LU).
      max_squarings: the most squarings; a matrix whose norm needs more gives NaN.

    Example:
      >>> expm(xform.numpy.zeros((2, 2)))  # the identity
    """
    (a,) = promote_dtypes_inexact(xnp.asarray(A))
    _check_square("expm", a, "A")
    return _vectorize(lambda x: _expm_matrix(x, upper_triangular, max_squarings), (2,))(a)


def expm_frechet(A, E, *, method=None, compute_expm=True):  # noqa: N803  (SciPy's names)
    """The Fréchet derivative of :func:`expm` at ``A`` in the direction ``E`` (a ``jvp``).

    Returns:
      ``(expm(A), L(A, E))``, or ``L(A, E)`` alone if not ``compute_expm``.
    """
    del method
    a, e = xnp.asarray(A), xnp.asarray(E)
    if a.ndim < 2 or a.shape[-2] != a.shape[-1]:
        raise ValueError(
            f"expm_frechet: expected A to be a (batched) square matrix, got A.shape={a.shape}"
        )
    if e.ndim < 2 or e.shape[-2] != e.shape[-1]:
        raise ValueError(
            f"expm_frechet: expected E to be a (batched) square matrix, got E.shape={e.shape}"
        )
    if a.shape != e.shape:
        raise ValueError(
            f"expm_frechet: A and E must have the same shape, got A.shape={a.shape} "
            f"and E.shape={e.shape}"
        )
    expm_a, frechet = jvp(lambda x: expm(x, upper_triangular=False, max_squarings=16), (a,), (e,))
    return (expm_a, frechet) if compute_expm else frechet


def _sqrtm_triu(t):
    """The upper-triangular square root of an upper-triangular ``t``, column by column
    (Björck and Hammarling 1983): ``u[i, j] = (t[i, j] - sum_k u[i, k] u[k, j]) /
    (u[i, i] + u[j, j])`` over ``i < k < j``, from the diagonal up."""
    diag = xnp.sqrt(_diagonal(t))
    n = diag.shape[0]
    ks = np.arange(n)

    def column(j, u):
        def entry(step, u):
            i = j - 1 - step
            between = (ks > i) & (ks < j)
            s = xnp.sum(xnp.where(between, u[i, :] * u[:, j], 0))
            value = xnp.where(t[i, j] == s, 0, (t[i, j] - s) / (diag[i] + diag[j]))
            return u.at[i, j].set(value)

        return lax.fori_loop(0, j, entry, u)

    return lax.fori_loop(0, n, column, _diag(diag))


def sqrtm(A, blocksize=1):  # noqa: N803  (SciPy's name)
    """The principal square root of a square matrix, by its complex Schur form.

    Args:
      A: array of shape ``(n, n)``.
      blocksize: only 1 (JAX has no blocked version).

    Returns:
      A complex array ``X`` with ``X @ X == A``.

    Example:
      >>> sqrtm(xform.numpy.array([[4., 0.], [0., 9.]]))  # diag(2, 3), complex
    """
    if blocksize > 1:
        raise NotImplementedError(
            f"sqrtm: blocksize={blocksize}: the blocked algorithm is not "
            "implemented, as in JAX; use blocksize=1"
        )
    a = xnp.asarray(A)
    if a.ndim > 2:
        raise ValueError(
            f"sqrtm: takes one matrix (no batch dimensions, as in JAX), got A.shape={a.shape}"
        )
    t, z = schur(a, output="complex")
    return _dot(_dot(z, _sqrtm_triu(t)), _H(z))


def funm(A, func, disp=True):  # noqa: N803  (SciPy's name)
    """``func`` (a scalar function applied elementwise to arrays) lifted to a square matrix by
    its complex Schur form and Parlett's recurrence (Golub and Van Loan, Algorithm 11.1.1).

    Returns:
      ``F``, complex; or ``(F, err)`` if not ``disp``, ``err`` an estimate of the relative
      error.

    Example:
      >>> funm(xform.numpy.eye(2), xform.numpy.exp)  # e * I, complex
    """
    a = xnp.asarray(A)
    if a.ndim != 2 or a.shape[0] != a.shape[1]:
        raise ValueError(f"funm: A must be a square matrix, got A.shape={a.shape}")
    t, z = rsf2csf(*schur(a))
    f = _diag(func(_diagonal(t))).astype(t.dtype)
    f, minden = _parlett(f, t)
    f = _dot(_dot(z, f), _H(z))
    if disp:
        return f
    tol = {"e": dtypes.finfo(np.float16).eps, "f": dtypes.finfo(np.float32).eps}.get(
        f.dtype.char.lower(), dtypes.finfo(np.float64).eps
    )
    minden = xnp.where(minden == 0.0, tol, minden)
    err = xnp.where(
        xnp.any(xnp.isinf(f)),
        np.inf,
        xnp.minimum(1, xnp.maximum(tol, (tol / minden) * xnp_linalg.norm(xnp.triu(t, 1), 1))),
    )
    return f, err


def _parlett(f, t):
    """Fill the strictly upper part of ``f = func(t)`` (diagonal given) superdiagonal by
    superdiagonal; also the smallest gap ``|t[j, j] - t[i, i]|`` met (an error estimate)."""
    n = t.shape[0]
    idx = np.arange(n)

    def superdiagonal(p, f_minden):
        def entry(i, f_minden):
            f, minden = f_minden
            j = i + p
            s = t[i - 1, j - 1] * (f[j - 1, j - 1] - f[i - 1, i - 1])
            inside = (idx >= i) & (idx < j - 1)
            s = s + (
                xnp.where(inside, t[i - 1], 0) @ xnp.where(inside, f[:, j - 1], 0)
                - xnp.where(inside, f[i - 1], 0) @ xnp.where(inside, t[:, j - 1], 0)
            )
            den = t[j - 1, j - 1] - t[i - 1, i - 1]
            s = xnp.where(den != 0, s / den, s)
            return f.at[i - 1, j - 1].set(s), xnp.minimum(minden, xnp.abs(den))

        return lax.fori_loop(1, n - p + 1, entry, f_minden)

    return lax.fori_loop(1, n, superdiagonal, (f, xnp.abs(t[0, 0])))


# --------------------------------------------------------------------------- Sylvester


def _sylvester_triangular(r, s, f):
    """Solve ``r @ y + y @ s.T = f`` for upper-triangular ``r`` (m, m) and ``s.T``, element by
    element from the bottom-right corner (Bartels-Stewart's back substitution)."""
    m, n = f.shape
    rows, cols = np.arange(m), np.arange(n)

    def entry(y, flat):
        i, j = flat // n, flat % n
        row_term = xnp.sum(xnp.where(rows > i, r[i, :] * y[:, j], 0))
        col_term = xnp.sum(xnp.where(cols > j, y[i, :] * s[:, j], 0))
        value = (f[i, j] - (row_term + col_term)) / (r[i, i] + s[j, j])
        return y.at[i, j].set(value), None

    y, _ = lax.scan(entry, xnp.zeros((m, n), f.dtype), xnp.arange(m * n - 1, -1, -1))
    return y


def _sylvester_matrix(a, b, c, method, tol):
    m, n = c.shape
    if method == "schur":
        r, u = schur(a, output="complex")
        s, v = schur(_H(b), output="complex")
        f = _H(u) @ c.astype(r.dtype) @ v
        y = _sylvester_triangular(r, _H(s), f)
        x = u @ y @ _H(v)
    elif method == "eigen":
        ra, ua = xnp_linalg.eig(a)
        rb, ub = xnp_linalg.eig(b)
        f = xnp_linalg.solve(ua, c.astype(ra.dtype) @ ub)
        y = f / (ra[:, None] + rb[None, :])
        x = ua[:m, :m] @ y[:m, :n] @ inv(ub)[:n, :n]
    else:
        raise ValueError(f"solve_sylvester: method must be 'schur' or 'eigen', got {method!r}")
    if not dtypes.is_complex(c.dtype):
        x = xnp.real(x)
    sums = xnp_linalg.eigvals(a)[:, None] + xnp_linalg.eigvals(b)[None, :]
    near_singular = xnp.any(xnp.abs(sums) < tol)
    return lax.cond(near_singular, lambda: xnp.zeros_like(x) * np.nan, lambda: x)


def solve_sylvester(A, B, C, *, method="schur", tol=1e-8):  # noqa: N803  (SciPy's names)
    """Solve Sylvester's equation ``A @ X + X @ B = C``.

    Args:
      A: array of shape ``(..., m, m)``.
      B: array of shape ``(..., n, n)``.
      C: array of shape ``(..., m, n)``; batch dimensions of the three broadcast.
      method: ``'schur'`` (Bartels-Stewart, default) or ``'eigen'`` (diagonalization).
      tol: if some eigenvalue of ``A`` plus one of ``B`` is smaller than this in magnitude,
        the equation is taken to be singular and the result is NaN.

    Example:
      >>> solve_sylvester(2 * xform.numpy.eye(2), xform.numpy.eye(2), 3 * xform.numpy.eye(2))
      ... # the identity: 2 X + X = 3 I
    """
    a, b, c = promote_dtypes_inexact(xnp.asarray(A), xnp.asarray(B), xnp.asarray(C))
    m, n = c.shape[-2:]
    if a.shape[-2:] != (m, m) or b.shape[-2:] != (n, n):
        raise ValueError(
            f"solve_sylvester: the shapes must be A=[..., m, m], B=[..., n, n] and "
            f"C=[..., m, n], got A.shape={a.shape}, B.shape={b.shape} and "
            f"C.shape={c.shape}"
        )
    return _vectorize(lambda x, y, z: _sylvester_matrix(x, y, z, method, tol), (2, 2, 2))(a, b, c)


# --------------------------------------------------------------------------- polar


def _polar_matrix(a, side, method, eps):
    m, n = a.shape
    if method == "qdwh":
        if m >= n and side == "right":
            return lax_linalg.qdwh(a, eps=eps)[:2]
        if m < n and side == "left":
            u, p, _, _ = lax_linalg.qdwh(_H(a), eps=eps)
            return _H(u), _H(p)
        raise NotImplementedError(
            f"polar: method='qdwh' takes m >= n for side='right' and "
            f"m < n for side='left', got a {m}x{n} matrix with "
            f"side={side!r}; use method='svd'"
        )
    if method == "svd":
        u_svd, s_svd, vh_svd = lax_linalg.svd(a, full_matrices=False)
        s_svd = s_svd.astype(u_svd.dtype)
        unitary = u_svd @ vh_svd
        if side == "right":
            return unitary, (_H(vh_svd) * s_svd[None, :]) @ vh_svd
        return unitary, (u_svd * s_svd[None, :]) @ _H(u_svd)
    raise ValueError(f"polar: method must be 'qdwh' or 'svd', got {method!r}")


def polar(a, side="right", *, method="qdwh", eps=None, max_iterations=None):
    """The polar decomposition ``a = u @ p`` (``side='right'``) or ``a = p @ u`` (``'left'``)
    with ``u`` unitary (orthonormal columns or rows) and ``p`` positive semidefinite.

    Args:
      a: array of shape ``(..., m, n)``.
      method: ``'qdwh'`` (the QR-based dynamically weighted Halley iteration; ``m >= n`` for
        the right decomposition, ``m < n`` for the left) or ``'svd'``.
      eps: the QDWH convergence tolerance (default the dtype's epsilon).
      max_iterations: ignored, as in JAX.

    Returns:
      ``(u, p)``: ``u`` of shape ``(..., m, n)``, ``p`` ``(..., n, n)`` or ``(..., m, m)``.
    """
    del max_iterations
    a = xnp.asarray(a)
    if a.ndim < 2:
        raise ValueError(f"polar: a must have at least 2 dimensions, got a.shape={a.shape}")
    if side not in ("right", "left"):
        raise ValueError(f"polar: side must be 'right' or 'left', got {side!r}")
    return _vectorize(lambda x: _polar_matrix(x, side, method, eps), (2,))(a)


# --------------------------------------------------------------------------- tridiagonal eigh


def _sturm_count(alpha, beta_sq, pivmin, alpha0_perturbation, x):
    """How many eigenvalues of the tridiagonal matrix lie below each ``x``: the negative
    pivots of the LDL^T factorization of ``T - x I`` (Sturm sequence), pivots kept away from
    zero by ``pivmin``."""
    n = alpha.shape[0]
    q = alpha[0] - x
    count = xnp.where(q < 0, 1, 0).astype(np.int32)
    q = xnp.where(alpha[0] == x, alpha0_perturbation, q)

    def step(i, q_count):
        q, count = q_count
        q = alpha[i] - beta_sq[i - 1] / q - x
        negative = q <= pivmin
        return xnp.where(negative, xnp.minimum(q, -pivmin), q), xnp.where(
            negative, count + 1, count
        )

    return lax.fori_loop(1, n, step, (q, count))[1]


def _tridiagonal_eigenvectors(alpha, beta, eigvals, key):
    """Inverse iteration (as LAPACK's xSTEIN) for the eigenvectors of the tridiagonal matrix
    at the (ascending) ``eigvals``, from random starts; vectors of eigenvalues closer than
    ``sqrt(eps) |T|`` are re-orthogonalized after each step, by QR per cluster."""
    n, k = alpha.shape[0], eigvals.shape[0]
    zero = xnp.zeros((1,), beta.dtype)
    dl = xnp.concatenate([zero, xnp.conj(beta)])
    du = xnp.concatenate([beta, zero])
    eps = np.finfo(eigvals.dtype).eps
    t_norm = xnp.maximum(xnp.abs(eigvals[0]), xnp.abs(eigvals[-1]))
    close = eigvals[1:] - eigvals[:-1] < np.sqrt(eps) * t_norm
    no = xnp.zeros((1,), bool)
    left_close, right_close = xnp.concatenate([no, close]), xnp.concatenate([close, no])
    cluster_start, cluster_end = left_close < right_close, left_close > right_close
    max_clusters = k // 2 + 1
    starts = _nonzero(cluster_start, max_clusters)
    ends = _nonzero(cluster_end, max_clusters) + 1
    num_clusters = xnp.sum(cluster_start).astype(np.int32)
    rows = np.arange(k)
    solve_dtype = np.result_type(alpha.dtype, beta.dtype)
    base_dtype = np.finfo(solve_dtype).dtype

    def orthogonalize_cluster(c, v):
        start, end = starts[c], ends[c]
        in_window = (rows < end - start)[:, None]
        block = lax.dynamic_slice(xnp.concatenate([v, xnp.zeros_like(v)]), (start, 0), (k, n))
        q, _ = lax_linalg.qr(xnp.where(in_window, block, 0).T, full_matrices=False)
        update = lax.dynamic_update_slice(
            xnp.zeros((2 * k, n), v.dtype), xnp.where(in_window, q.T, 0), (start, 0)
        )[:k]
        return xnp.where(((rows >= start) & (rows < end))[:, None], update, v)

    v = random.normal(key, (k, n), dtype=base_dtype).astype(solve_dtype)
    v = v / xnp_linalg.norm(v, axis=-1, keepdims=True).astype(solve_dtype)
    shifted = (alpha[None, :] - eigvals[:, None]).astype(solve_dtype)
    dl_k = xnp.broadcast_to(dl, (k, n)).astype(solve_dtype)
    du_k = xnp.broadcast_to(du, (k, n)).astype(solve_dtype)

    def step(state):
        i, v, norm, _ = state
        v_new = lax_linalg.tridiagonal_solve(
            dl_k, shifted, du_k, v[:, :, None], perturb_singular=True
        )[..., 0]
        norm_new = xnp_linalg.norm(v_new, axis=-1)
        v_new = v_new / norm_new[:, None].astype(v_new.dtype)
        v_new = lax.fori_loop(0, num_clusters, orthogonalize_cluster, v_new)
        return i + 1, v_new, norm_new, norm

    def growing(state):
        # At most 5 steps, while some norm still grows by 10% or more (LAPACK's xSTEIN).
        i, _, norm, norm_old = state
        return (i < 5) & xnp.any(norm >= 1.1 * norm_old)

    init = (xnp.asarray(0, np.int32), v, xnp.ones(k, eigvals.dtype), xnp.zeros(k, eigvals.dtype))
    return lax.while_loop(growing, step, init)[1]


def _tridiagonal_eigvals(alpha, beta_abs, beta_sq, targets, tol):
    """The eigenvalues of indices ``targets`` (ascending order) of the real symmetric
    tridiagonal matrix with diagonal ``alpha`` and squared off-diagonal ``beta_sq``, by
    bisection on Sturm counts, all at once."""
    n = alpha.shape[0]
    # Gershgorin bounds on the spectrum, and the smallest pivot allowed in a Sturm count.
    off_diag = xnp.concatenate([beta_abs[:1], beta_abs[:-1] + beta_abs[1:], beta_abs[-1:]])
    est_max, est_min = xnp.max(alpha + off_diag), xnp.min(alpha - off_diag)
    t_norm = xnp.maximum(xnp.abs(est_min), xnp.abs(est_max))
    finfo = np.finfo(alpha.dtype)
    one = np.ones([], alpha.dtype)
    safemin = np.maximum(one / finfo.max, (one + finfo.eps) * finfo.tiny)
    pivmin = safemin * xnp.maximum(1, xnp.max(beta_sq))
    alpha0_perturbation = xnp.square(finfo.eps * beta_abs[0])
    abs_tol = finfo.eps * t_norm
    if tol is not None:
        abs_tol = xnp.maximum(tol, abs_tol)
    max_it = finfo.nmant + 1  # a bit per step: enough to reach eps * |T|

    # Bisect for every wanted eigenvalue at once, from a slightly widened Gershgorin interval.
    fudge = 2.1
    slack = xnp.asarray(n, alpha.dtype) * fudge * finfo.eps * t_norm
    shape = targets.shape
    lower = xnp.broadcast_to(est_min - slack - 2 * fudge * pivmin, shape)
    upper = xnp.broadcast_to(est_max + slack + fudge * pivmin, shape)
    mid = 0.5 * (upper + lower)
    pivmin = xnp.broadcast_to(pivmin, shape)
    alpha0_perturbation = xnp.broadcast_to(alpha0_perturbation, shape)

    def unresolved(state):
        i, lower, _, upper = state
        return (i < max_it) & (abs_tol < xnp.max(upper - lower))

    def bisect(state):
        i, lower, mid, upper = state
        counts = _sturm_count(alpha, beta_sq, pivmin, alpha0_perturbation, mid)
        lower = xnp.where(counts <= targets, mid, lower)
        upper = xnp.where(counts > targets, mid, upper)
        return i + 1, lower, 0.5 * (lower + upper), upper

    init = (xnp.asarray(0, np.int32), lower, mid, upper)
    return lax.while_loop(unresolved, bisect, init)[2]


def eigh_tridiagonal(
    d, e, *, eigvals_only=False, select="a", select_range=None, tol=None, key=None
):
    """Eigenvalues (and eigenvectors) of the symmetric (Hermitian) tridiagonal matrix with
    diagonal ``d`` and off-diagonal ``e``, by bisection on Sturm counts, all eigenvalues in
    parallel; eigenvectors by inverse iteration.

    Args:
      d: array of shape ``(n,)``.
      e: array of shape ``(n - 1,)``, of ``d``'s dtype.
      eigvals_only: return the eigenvalues only.
      select: ``'a'`` (all) or ``'i'`` (indices ``select_range[0] <= i <= select_range[1]``);
        ``'v'`` is not implemented, as in JAX.
      tol: the absolute tolerance of the eigenvalues (at least ``eps * |T|``).
      key: the PRNG key of inverse iteration's starting vectors (default ``key(42)``).

    Returns:
      The ascending eigenvalues, or ``(eigenvalues, eigenvectors)`` with eigenvectors in
      columns.

    Example:
      >>> eigh_tridiagonal(xform.numpy.zeros(2), xform.numpy.ones(1), eigvals_only=True)
      ... # [-1., 1.]
    """
    if not eigvals_only and key is None:
        key = random.key(42)
    alpha, beta = xnp.asarray(d), xnp.asarray(e)
    supported = (np.float32, np.float64, np.complex64, np.complex128)
    if alpha.dtype != beta.dtype:
        raise TypeError(
            f"eigh_tridiagonal: d and e must have one dtype, got {alpha.dtype} and {beta.dtype}"
        )
    if alpha.dtype not in supported:
        raise TypeError(
            f"eigh_tridiagonal: d and e must be float32, float64, complex64 or "
            f"complex128, got {alpha.dtype}"
        )
    n = alpha.shape[0]
    if n <= 1:
        return xnp.real(alpha) if eigvals_only else (xnp.real(alpha), xnp.eye(n, dtype=alpha.dtype))
    if dtypes.is_complex(alpha.dtype):
        alpha = xnp.real(alpha)
        beta_sq = xnp.real(beta * xnp.conj(beta))
        beta_abs = xnp.sqrt(beta_sq)
    else:
        beta_abs, beta_sq = xnp.abs(beta), xnp.square(beta)

    if select == "a":
        targets = xnp.arange(n, dtype=np.int32)
    elif select == "i":
        if select_range is None:
            raise ValueError("eigh_tridiagonal: select='i' needs select_range=(first, last)")
        if select_range[0] > select_range[1]:
            raise ValueError(
                f"eigh_tridiagonal: select_range={select_range} is an empty range of indices"
            )
        targets = xnp.arange(select_range[0], select_range[1] + 1, dtype=np.int32)
    elif select == "v":
        raise NotImplementedError(
            "eigh_tridiagonal: select='v' (the eigenvalues in an interval) "
            "is not implemented, as in JAX; use select='i'"
        )
    else:
        raise ValueError(f"eigh_tridiagonal: select must be 'a', 'i' or 'v', got {select!r}")

    eigvals = _tridiagonal_eigvals(alpha, beta_abs, beta_sq, targets, tol)
    if eigvals_only:
        return eigvals
    return eigvals, _tridiagonal_eigenvectors(alpha, beta, eigvals, key).T

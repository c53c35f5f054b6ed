"""The special matrices of ``xform.scipy.linalg`` (``block_diag``, ``toeplitz``, ``hankel``,
``hilbert``, ``pascal``, ...), composed of ``xform.numpy`` and ``xform.lax`` ops.
"""

import math
import operator

import numpy as np

from xform import dtypes, lax
from xform import numpy as xnp
from xform.numpy._promote import (
    check_arraylike,
    promote_args_inexact,
    promote_dtypes,
)
from xform.scipy.linalg._decompositions import (
    _binom,
    _comb,
    _kind,
    _strong,
)

__all__ = [
    "block_diag",
    "circulant",
    "companion",
    "convolution_matrix",
    "dft",
    "fiedler",
    "fiedler_companion",
    "hadamard",
    "hankel",
    "helmert",
    "hilbert",
    "invhilbert",
    "invpascal",
    "leslie",
    "pascal",
    "toeplitz",
]

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

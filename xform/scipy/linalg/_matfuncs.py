"""The matrix functions of ``xform.scipy.linalg``: the matrix exponential (Padé approximants
with scaling and squaring) and its Fréchet derivative, the matrix square root and ``funm``
(Schur forms), Sylvester's equation (Bartels-Stewart), the polar decomposition and the
tridiagonal eigensolver (bisection on Sturm counts, inverse iteration).
"""

import numpy as np

from xform import dtypes, lax, random
from xform import numpy as xnp
from xform.api.autodiff import jvp
from xform.lax import linalg as lax_linalg
from xform.numpy import linalg as xnp_linalg
from xform.numpy._promote import (
    promote_dtypes_inexact,
)
from xform.scipy.linalg._decompositions import (
    _H,
    _check_square,
    _diag,
    _diagonal,
    _dot,
    _nonzero,
    _vectorize,
    inv,
    rsf2csf,
    schur,
    solve_triangular,
)

__all__ = [
    "eigh_tridiagonal",
    "expm",
    "expm_frechet",
    "funm",
    "polar",
    "solve_sylvester",
    "sqrtm",
]

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

"""``xform.scipy.sparse.linalg``, as ``jax.scipy.sparse.linalg``: Krylov solvers.

``cg``, ``gmres`` and ``bicgstab`` solve ``A x = b`` for ``A`` given as a square matrix
or as a function (a linear map on a pytree of arrays). Each iteration is a
``lax.while_loop``; the solve sits inside ``lax.custom_linear_solve``, so derivatives
are implicit (another solve with the same method) rather than through the iterations.
Vectors are pytrees throughout, as in JAX: inner products sum over all leaves.
"""

import operator
from functools import partial

import numpy as np

from xform import lax, pytree
from xform import numpy as xnp
from xform.dtypes import finfo
from xform.primitives.elementwise import convert_element_type_p
from xform.runtime.array import Array
from xform.scipy import linalg as xsp_linalg

_dot = partial(xnp.dot, precision=lax.Precision.HIGHEST)
_vdot = partial(xnp.vdot, precision=lax.Precision.HIGHEST)
_einsum = partial(xnp.einsum, precision=lax.Precision.HIGHEST)


# ----------------------------------------------------------------------------- pytree vectors


def _vdot_real_part(x, y):
    """The real part of ``vdot(x, y)``, without complex products when both are real."""
    result = _vdot(x.real, y.real)
    if xnp.iscomplexobj(x) or xnp.iscomplexobj(y):
        result += _vdot(x.imag, y.imag)
    return result


def _vdot_real_tree(x, y):
    return sum(pytree.tree_leaves(pytree.tree_map(_vdot_real_part, x, y)))


def _vdot_tree(x, y):
    return sum(pytree.tree_leaves(pytree.tree_map(_vdot, x, y)))


def _norm(x):
    leaves = pytree.tree_leaves(x)
    return xnp.sqrt(sum(_vdot_real_part(v, v) for v in leaves))


def _mul(scalar, tree):
    return pytree.tree_map(lambda v: scalar * v, tree)


def _add(x, y):
    return pytree.tree_map(operator.add, x, y)


def _sub(x, y):
    return pytree.tree_map(operator.sub, x, y)


def _result_dtype(tree):
    """The promoted dtype of a pytree's leaves, and whether every leaf is weakly typed."""
    leaves = [xnp.asarray(v) for v in pytree.tree_leaves(tree)]
    dtype = xnp.result_type(*leaves)
    weak = all(getattr(v, "weak_type", False) for v in leaves)
    return dtype, weak


def _as_dtype(x, dtype, weak):
    """``x`` converted to ``dtype``, weakly typed if ``weak`` (JAX's lattice result)."""
    return convert_element_type_p.bind(xnp.asarray(x), new_dtype=np.dtype(dtype), weak_type=weak)


@pytree.Partial
def _identity(x):
    return x


def _normalize_matvec(f, name, what="A"):
    """A linear operator given as a function or a square matrix, as a function."""
    if callable(f):
        return f
    if isinstance(f, (np.ndarray, Array)) or hasattr(f, "__matmul__"):
        shape = np.shape(f)
        if len(shape) != 2 or shape[0] != shape[1]:
            raise ValueError(
                f"{name}: linear operator {what} must be a square matrix, but has shape: {shape}"
            )
        if isinstance(f, (np.ndarray, Array)):
            return partial(_dot, f)
        return partial(operator.matmul, f)
    raise TypeError(
        f"{name}: linear operator {what} must be either a function or ndarray, "
        f"got {type(f).__name__}: {f}"
    )


def _shapes(tree):
    return [np.shape(v) for v in pytree.tree_leaves(tree)]


def _check_x0(name, x0, b, shapes=True):
    if pytree.tree_structure(x0) != pytree.tree_structure(b):
        raise ValueError(
            f"{name}: x0 and b must have matching tree structure: "
            f"{pytree.tree_structure(x0)} vs {pytree.tree_structure(b)}"
        )
    if shapes and _shapes(x0) != _shapes(b):
        raise ValueError(
            f"{name}: arrays in x0 and b must have matching shapes: {_shapes(x0)} vs {_shapes(b)}"
        )


def _strong(v):
    """``v`` as an array without a weak type (JAX's solvers ``device_put`` b and x0)."""
    v = xnp.asarray(v)
    return lax.convert_element_type(v, v.dtype) if getattr(v, "weak_type", False) else v


def _prepare(name, A, b, x0, M):
    b = pytree.tree_map(_strong, b)
    x0 = pytree.tree_map(xnp.zeros_like, b) if x0 is None else pytree.tree_map(_strong, x0)
    A = _normalize_matvec(A, name)
    M = _identity if M is None else _normalize_matvec(M, name, "M")
    return A, b, x0, M


# ----------------------------------------------------------------------------- CG and BiCGSTAB


def _cg_solve(A, b, x0, *, maxiter, tol, atol, M):
    atol2 = xnp.maximum(xnp.square(tol) * _vdot_real_tree(b, b), xnp.square(atol))
    r0 = _sub(b, A(x0))
    p0 = z0 = M(r0)
    dtype = xnp.result_type(*pytree.tree_leaves(p0))
    gamma0 = _vdot_real_tree(r0, z0).astype(dtype)

    def cond(value):
        _, r, gamma, _, k = value
        rs = gamma.real if M is _identity else _vdot_real_tree(r, r)
        return (rs > atol2) & (k < maxiter)

    def body(value):
        x, r, gamma, p, k = value
        ap = A(p)
        alpha = gamma / _vdot_real_tree(p, ap).astype(dtype)
        x = _add(x, _mul(alpha, p))
        r = _sub(r, _mul(alpha, ap))
        z = M(r)
        gamma_next = _vdot_real_tree(r, z).astype(dtype)
        p = _add(z, _mul(gamma_next / gamma, p))
        return x, r, gamma_next, p, k + 1

    return lax.while_loop(cond, body, (x0, r0, gamma0, p0, 0))[0]


def _bicgstab_solve(A, b, x0, *, maxiter, tol, atol, M):
    atol2 = xnp.maximum(xnp.square(tol) * _vdot_real_tree(b, b), xnp.square(atol))

    def cond(value):
        _, r, *_, k = value
        # k < 0 flags a breakdown (rho, alpha or omega vanished).
        return (_vdot_real_tree(r, r) > atol2) & (k < maxiter) & (k >= 0)

    def body(value):
        x, r, rhat, alpha, omega, rho, p, q, k = value
        rho_next = _vdot_tree(rhat, r)
        beta = rho_next / rho * alpha / omega
        p = _add(r, _mul(beta, _sub(p, _mul(omega, q))))
        phat = M(p)
        q = A(phat)
        alpha = rho_next / _vdot_tree(rhat, q)
        s = _sub(r, _mul(alpha, q))
        exit_early = _vdot_real_tree(s, s) < atol2
        shat = M(s)
        t = A(shat)
        omega = _vdot_tree(t, s) / _vdot_tree(t, t)
        x = pytree.tree_map(
            partial(xnp.where, exit_early),
            _add(x, _mul(alpha, phat)),
            _add(x, _add(_mul(alpha, phat), _mul(omega, shat))),
        )
        r = pytree.tree_map(partial(xnp.where, exit_early), s, _sub(s, _mul(omega, t)))
        k = xnp.where((omega == 0) | (alpha == 0), -11, k + 1)
        k = xnp.where(rho_next == 0, -10, k)
        return x, r, rhat, alpha, omega, rho_next, p, q, k

    r0 = _sub(b, A(x0))
    one = _as_dtype(1, *_result_dtype(b))
    return lax.while_loop(cond, body, (x0, r0, r0, one, one, one, r0, r0, 0))[0]


def _isolve(name, solve, A, b, x0, *, tol, atol, maxiter, M, check_symmetric=False):
    A, b, x0, M = _prepare(name, A, b, x0, M)
    if maxiter is None:
        maxiter = 10 * sum(np.size(v) for v in pytree.tree_leaves(b))  # SciPy's default
    _check_x0(name, x0, b)
    solve = partial(solve, x0=x0, tol=tol, atol=atol, maxiter=maxiter, M=M)
    symmetric = check_symmetric and not any(xnp.iscomplexobj(v) for v in pytree.tree_leaves(b))
    x = lax.custom_linear_solve(A, b, solve=solve, transpose_solve=solve, symmetric=symmetric)
    return x, None


def cg(A, b, x0=None, *, tol=1e-5, atol=0.0, maxiter=None, M=None):
    """Conjugate gradients for a Hermitian positive-definite ``A``, as ``jax``'s ``cg``.

    Args:
      A: a square matrix or a function ``x -> A x`` on pytrees shaped like ``b``.
      b: the right-hand side, an array or a pytree of arrays.
      x0: the starting guess (zeros by default), shaped like ``b``.
      tol, atol: stop when ``norm(residual) <= max(tol * norm(b), atol)``.
      maxiter: the iteration limit (``10 * size(b)`` by default).
      M: a preconditioner approximating ``inv(A)``, a matrix or a function.

    Returns:
      ``(x, info)``; ``info`` is ``None``, as in JAX (convergence is not reported).

    Example:
      >>> x, _ = cg(xnp.array([[4., 1.], [1., 3.]]), xnp.array([1., 2.]))
    """
    return _isolve(
        "cg", _cg_solve, A, b, x0, tol=tol, atol=atol, maxiter=maxiter, M=M, check_symmetric=True
    )


def bicgstab(A, b, x0=None, *, tol=1e-5, atol=0.0, maxiter=None, M=None):
    """Biconjugate gradients, stabilised, for a general ``A``, as ``jax``'s ``bicgstab``.

    Args:
      A: a square matrix or a function ``x -> A x`` on pytrees shaped like ``b``.
      b: the right-hand side, an array or a pytree of arrays.
      x0: the starting guess (zeros by default), shaped like ``b``.
      tol, atol: stop when ``norm(residual) <= max(tol * norm(b), atol)``.
      maxiter: the iteration limit (``10 * size(b)`` by default).
      M: a preconditioner approximating ``inv(A)``, a matrix or a function.

    Returns:
      ``(x, info)``; ``info`` is ``None``, as in JAX.

    Example:
      >>> x, _ = bicgstab(xnp.array([[4., 1.], [2., 3.]]), xnp.array([1., 2.]))
    """
    return _isolve("bicgstab", _bicgstab_solve, A, b, x0, tol=tol, atol=atol, maxiter=maxiter, M=M)


# ----------------------------------------------------------------------------- GMRES


def _safe_normalize(x, thresh=None):
    """``(x / norm(x), norm(x))``, or zeros and 0 where the norm is at most ``thresh``."""
    norm = _norm(x)
    dtype, weak = _result_dtype(x)
    if thresh is None:
        thresh = finfo(norm.dtype).eps
    thresh = xnp.asarray(thresh).astype(dtype).real
    use_norm = norm > thresh
    norm_cast = _as_dtype(norm, dtype, weak)
    normalized = pytree.tree_map(lambda y: xnp.where(use_norm, y / norm_cast, 0.0), x)
    return normalized, xnp.where(use_norm, norm, 0.0)


def _project_on_columns(Q, v):
    """``Q^H v`` for a pytree of column blocks ``Q`` and a vector pytree ``v``."""
    parts = pytree.tree_map(lambda X, y: _einsum("...n,...->n", X.conj(), y), Q, v)
    return pytree.tree_reduce(operator.add, parts)


def _gram_schmidt(Q, x, xnorm, max_iterations=2):
    """Orthogonalise ``x`` against the columns of ``Q`` by classical Gram-Schmidt, repeated
    (at most ``max_iterations`` passes) while the norm drops by more than sqrt(2)."""
    r = xnp.zeros(pytree.tree_leaves(Q)[0].shape[-1], dtype=pytree.tree_leaves(Q)[0].dtype)

    def body(carry):
        k, q, r, qnorm_scaled = carry
        h = _project_on_columns(Q, q)
        q = _sub(q, pytree.tree_map(lambda X: _dot(X, h), Q))
        r = _add(r, h)

        def qnorm_cond(c):
            k, not_done, _, _ = c
            return xnp.logical_and(not_done, k < (max_iterations - 1))

        def qnorm(c):
            k, _, q, _ = c
            _, qn = _safe_normalize(q)
            return k, False, q, qn / xnp.sqrt(2.0)

        _, _, q, qnorm_scaled = lax.while_loop(qnorm_cond, qnorm, (k, True, q, qnorm_scaled))
        return k + 1, q, r, qnorm_scaled

    def cond(carry):
        k, _, r, qnorm_scaled = carry
        _, rnorm = _safe_normalize(r)
        return xnp.logical_and(k < (max_iterations - 1), rnorm < qnorm_scaled)

    carry = body((0, x, r, xnorm / xnp.sqrt(2.0)))
    _, q, r, _ = lax.while_loop(cond, body, carry)
    return q, r


def _arnoldi_step(k, A, M, V, H):
    """Extend the Krylov basis ``V`` by column ``k + 1`` and fill row ``k`` of ``H``."""
    dtype, _ = _result_dtype(V)
    v = M(A(pytree.tree_map(lambda X: X[..., k], V)))
    _, v_norm_0 = _safe_normalize(v)
    v, h = _gram_schmidt(V, v, v_norm_0, max_iterations=2)
    unit_v, v_norm_1 = _safe_normalize(v, thresh=finfo(dtype).eps * v_norm_0)
    V = pytree.tree_map(lambda X, y: X.at[..., k + 1].set(y), V, unit_v)
    h = h.at[k + 1].set(v_norm_1.astype(dtype))
    return V, H.at[k, :].set(h), v_norm_1 == 0.0


def _rotate(H, i, cs, sn):
    x1, y1 = H[i], H[i + 1]
    H = H.at[i].set(cs.conj() * x1 - sn.conj() * y1)
    return H.at[i + 1].set(sn * x1 + cs * y1)


def _givens(a, b):
    b_zero = abs(b) == 0
    a_lt_b = abs(a) < abs(b)
    t = -xnp.where(a_lt_b, a, b) / xnp.where(a_lt_b, b, a)
    r = lax.rsqrt(1 + abs(t) ** 2).astype(t.dtype)
    cs = xnp.where(b_zero, 1, xnp.where(a_lt_b, r * t, r))
    sn = xnp.where(b_zero, 0, xnp.where(a_lt_b, r, r * t))
    return cs, sn


def _krylov_basis(unit_residual, restart):
    return pytree.tree_map(
        lambda x: xnp.pad(x[..., None], ((0, 0),) * x.ndim + ((0, restart),)), unit_residual
    )


def _finish_cycle(A, b, M, x0, V, y):
    x = _add(x0, pytree.tree_map(lambda X: _dot(X[..., :-1], y), V))
    unit_residual, residual_norm = _safe_normalize(M(_sub(b, A(x))))
    return x, unit_residual, residual_norm


def _gmres_incremental(A, b, x0, unit_residual, residual_norm, ptol, restart, M):
    """One restart cycle, least squares by Givens rotations applied as the basis grows."""
    V = _krylov_basis(unit_residual, restart)
    dtype = xnp.result_type(*pytree.tree_leaves(b))
    R = xnp.eye(restart, restart + 1, dtype=dtype)
    givens = xnp.zeros((restart, 2), dtype=dtype)
    beta_vec = xnp.zeros(restart + 1, dtype=dtype).at[0].set(residual_norm.astype(dtype))

    def cond(carry):
        k, err, *_ = carry
        return xnp.logical_and(k < restart, err > ptol)

    def body(carry):
        k, _, V, R, beta_vec, givens = carry
        V, H, _ = _arnoldi_step(k, A, M, V, R)
        row = lax.fori_loop(0, k, lambda i, row: _rotate(row, i, *givens[i, :]), H[k, :])
        factors = _givens(row[k], row[k + 1])
        givens = givens.at[k, :].set(xnp.stack(factors))
        R = R.at[k, :].set(_rotate(row, k, *factors))
        beta_vec = _rotate(beta_vec, k, *givens[k, :])
        return k + 1, abs(beta_vec[k + 1]), V, R, beta_vec, givens

    _, _, V, R, beta_vec, _ = lax.while_loop(cond, body, (0, residual_norm, V, R, beta_vec, givens))
    y = xsp_linalg.solve_triangular(R[:, :-1].T, beta_vec[:-1])
    return _finish_cycle(A, b, M, x0, V, y)


def _gmres_batched(A, b, x0, unit_residual, residual_norm, ptol, restart, M):
    """One restart cycle: the whole Arnoldi process, then one least-squares solve."""
    del ptol
    V = _krylov_basis(unit_residual, restart)
    dtype, weak = _result_dtype(b)
    H = _as_dtype(xnp.eye(restart, restart + 1, dtype=dtype), dtype, weak)

    def cond(carry):
        _, _, breakdown, k = carry
        return xnp.logical_and(k < restart, xnp.logical_not(breakdown))

    def body(carry):
        V, H, _, k = carry
        V, H, breakdown = _arnoldi_step(k, A, M, V, H)
        return V, H, breakdown, k + 1

    V, H, _, _ = lax.while_loop(cond, body, (V, H, False, 0))
    beta_vec = xnp.zeros_like(H, shape=(restart + 1,)).at[0].set(residual_norm.astype(dtype))
    ht = H.T
    # Least squares by the normal equations, as JAX does.
    y = xsp_linalg.solve(_dot(ht.T.conj(), ht), _dot(ht.T.conj(), beta_vec), assume_a="pos")
    return _finish_cycle(A, b, M, x0, V, y)


def _gmres_solve(A, b, x0, atol, ptol, restart, maxiter, M, cycle):
    unit_residual, residual_norm = _safe_normalize(M(_sub(b, A(x0))))

    def cond(value):
        _, k, _, residual_norm = value
        return xnp.logical_and(k < maxiter, residual_norm > atol)

    def body(value):
        x, k, unit_residual, residual_norm = value
        x, unit_residual, residual_norm = cycle(
            A, b, x, unit_residual, residual_norm, ptol, restart, M
        )
        return x, k + 1, unit_residual, residual_norm

    return lax.while_loop(cond, body, (x0, 0, unit_residual, residual_norm))[0]


def gmres(
    A, b, x0=None, *, tol=1e-5, atol=0.0, restart=20, maxiter=None, M=None, solve_method="batched"
):
    """Restarted GMRES for a general ``A``, as ``jax.scipy.sparse.linalg.gmres``.

    Args:
      A: a square matrix or a function ``x -> A x`` on pytrees shaped like ``b``.
      b: the right-hand side, an array or a pytree of arrays.
      x0: the starting guess (zeros by default), shaped like ``b``.
      tol, atol: stop when ``norm(residual) <= max(tol * norm(b), atol)``.
      restart: the Krylov subspace size per cycle (at most ``size(b)``).
      maxiter: the number of restart cycles (``10 * size(b)`` by default).
      M: a preconditioner approximating ``inv(A)``, a matrix or a function.
      solve_method: ``"batched"`` (Arnoldi, then least squares) or ``"incremental"``
        (Givens rotations, stopping within a cycle once converged).

    Returns:
      ``(x, info)``; ``info`` is 0, or -1 where ``x`` holds NaNs.

    Example:
      >>> x, info = gmres(xnp.array([[4., 1.], [2., 3.]]), xnp.array([1., 2.]))
    """
    if solve_method == "incremental":
        cycle = _gmres_incremental
    elif solve_method == "batched":
        cycle = _gmres_batched
    else:
        raise ValueError(
            f"gmres: invalid solve_method {solve_method!r}, must be either "
            "'incremental' or 'batched'"
        )
    A, b, x0, M = _prepare("gmres", A, b, x0, M)
    size = sum(np.size(v) for v in pytree.tree_leaves(b))
    if maxiter is None:
        maxiter = 10 * size  # SciPy's default
    restart = min(restart, size)
    _check_x0("gmres", x0, b, shapes=False)
    b_norm = _norm(b)
    atol = xnp.maximum(tol * b_norm, atol)
    ptol = _norm(M(b)) * xnp.minimum(1.0, atol / b_norm)

    def solve(A, b):
        return _gmres_solve(A, b, x0, atol, ptol, restart, maxiter, M, cycle)

    x = lax.custom_linear_solve(A, b, solve=solve, transpose_solve=solve)
    return x, xnp.where(xnp.isnan(_norm(x)), -1, 0)

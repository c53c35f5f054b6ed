"""``xform.scipy.optimize``, as ``jax.scipy.optimize``: ``minimize`` with BFGS.

BFGS (Nocedal & Wright, Algorithm 6.1) with a strong-Wolfe line search (Algorithms 3.5
and 3.6), written on ``lax.while_loop`` so that it traces under ``jit`` and ``vmap``. The
line search follows JAX's choices step for step (first trial step, doubling, the
cubic/quadratic/bisection zoom and its thresholds), so iterates and counts match JAX's.
Branches are ``where`` selections rather than ``cond``: both zooms run every step, one of
them as a no-op, as in JAX.
"""

from collections.abc import Callable, Mapping
from functools import partial
from typing import Any, NamedTuple

import numpy as np

from xform import lax
from xform import numpy as xnp
from xform.api import autodiff as api_autodiff
from xform.dtypes import finfo

_dot = partial(xnp.dot, precision=lax.Precision.HIGHEST)
_einsum = partial(xnp.einsum, precision=lax.Precision.HIGHEST)


class OptimizeResults(NamedTuple):
    """What ``minimize`` returns (the fields of ``jax.scipy.optimize.OptimizeResults``).

    Fields:
      x: the final point.
      success: whether the gradient norm fell below ``gtol`` with no failed line search.
      status: 0 converged, 1 ``maxiter`` reached, 3 zoom failed, 5 line search reached
        its iteration limit, -1 undefined.
      fun: ``fun(x)``.
      jac: the gradient at ``x``.
      hess_inv: the final inverse-Hessian estimate.
      nfev: function evaluations.
      njev: gradient evaluations.
      nit: BFGS iterations.
    """

    x: Any
    success: Any
    status: Any
    fun: Any
    jac: Any
    hess_inv: Any
    nfev: Any
    njev: Any
    nit: Any


# ----------------------------------------------------------------------------- line search


class _ZoomState(NamedTuple):
    done: Any
    failed: Any
    j: Any
    a_lo: Any
    phi_lo: Any
    dphi_lo: Any
    a_hi: Any
    phi_hi: Any
    dphi_hi: Any
    a_rec: Any
    phi_rec: Any
    a_star: Any
    phi_star: Any
    dphi_star: Any
    g_star: Any
    nfev: Any
    ngev: Any


class _LineSearchState(NamedTuple):
    done: Any
    failed: Any
    i: Any
    a_i1: Any
    phi_i1: Any
    dphi_i1: Any
    nfev: Any
    ngev: Any
    a_star: Any
    phi_star: Any
    dphi_star: Any
    g_star: Any


class _LineSearchResults(NamedTuple):
    failed: Any
    nit: Any
    nfev: Any
    ngev: Any
    k: Any
    a_k: Any
    f_k: Any
    g_k: Any
    status: Any


def _cubicmin(a, fa, fpa, b, fb, c, fc):
    """The minimiser of the cubic through (a, fa) with slope fpa, (b, fb) and (c, fc)."""
    db, dc = b - a, c - a
    denom = (db * dc) ** 2 * (db - dc)
    # [A, B] = [[dc^2, -db^2], [-dc^3, db^3]] @ [fb - fa - fpa db, fc - fa - fpa dc] / denom
    rb, rc = fb - fa - fpa * db, fc - fa - fpa * dc
    big_a = (dc**2 * rb - db**2 * rc) / denom
    big_b = (-(dc**3) * rb + db**3 * rc) / denom
    radical = big_b * big_b - 3.0 * big_a * fpa
    return a + (-big_b + xnp.sqrt(radical)) / (3.0 * big_a)


def _quadmin(a, fa, fpa, b, fb):
    """The minimiser of the quadratic through (a, fa) with slope fpa and (b, fb)."""
    db = b - a
    curvature = (fb - fa - fpa * db) / (db**2)
    return a - fpa / (2.0 * curvature)


def _select(pred, state, **new):
    """``state`` with the fields in ``new`` replaced where ``pred`` holds."""
    return state._replace(**{k: xnp.where(pred, v, getattr(state, k)) for k, v in new.items()})


def _zoom(
    phi_dphi_g,
    wolfe_one,
    wolfe_two,
    a_lo,
    phi_lo,
    dphi_lo,
    a_hi,
    phi_hi,
    dphi_hi,
    g_0,
    pass_through,
):
    """Shrink the bracket [a_lo, a_hi] to a step meeting the strong Wolfe conditions."""
    state = _ZoomState(
        done=False,
        failed=False,
        j=0,
        a_lo=a_lo,
        phi_lo=phi_lo,
        dphi_lo=dphi_lo,
        a_hi=a_hi,
        phi_hi=phi_hi,
        dphi_hi=dphi_hi,
        a_rec=(a_lo + a_hi) / 2.0,
        phi_rec=(phi_lo + phi_hi) / 2.0,
        a_star=1.0,
        phi_star=phi_lo,
        dphi_star=dphi_lo,
        g_star=g_0,
        nfev=0,
        ngev=0,
    )
    delta1, delta2 = 0.2, 0.1

    def body(s):
        dalpha = s.a_hi - s.a_lo
        lo, hi = xnp.minimum(s.a_hi, s.a_lo), xnp.maximum(s.a_hi, s.a_lo)
        threshold = 1e-5 if finfo(dalpha.dtype).bits < 64 else 1e-10
        s = s._replace(failed=s.failed | (dalpha <= threshold))
        # The cubic step may be nan; the bracket checks then reject it.
        a_cubic = _cubicmin(s.a_lo, s.phi_lo, s.dphi_lo, s.a_hi, s.phi_hi, s.a_rec, s.phi_rec)
        use_cubic = (s.j > 0) & (a_cubic > lo + delta1 * dalpha) & (a_cubic < hi - delta1 * dalpha)
        a_quad = _quadmin(s.a_lo, s.phi_lo, s.dphi_lo, s.a_hi, s.phi_hi)
        use_quad = ~use_cubic & (a_quad > lo + delta2 * dalpha) & (a_quad < hi - delta2 * dalpha)
        use_bisection = ~use_cubic & ~use_quad
        a_j = xnp.where(use_cubic, a_cubic, s.a_rec)
        a_j = xnp.where(use_quad, a_quad, a_j)
        a_j = xnp.where(use_bisection, (s.a_lo + s.a_hi) / 2.0, a_j)

        phi_j, dphi_j, g_j = phi_dphi_g(a_j)
        phi_j = phi_j.astype(s.phi_lo.dtype)
        dphi_j = dphi_j.astype(s.dphi_lo.dtype)
        g_j = g_j.astype(s.g_star.dtype)
        s = s._replace(nfev=s.nfev + 1, ngev=s.ngev + 1)

        hi_to_j = wolfe_one(a_j, phi_j) | (phi_j >= s.phi_lo)
        star_to_j = wolfe_two(dphi_j) & ~hi_to_j
        hi_to_lo = (dphi_j * (s.a_hi - s.a_lo) >= 0.0) & ~hi_to_j & ~star_to_j
        lo_to_j = ~hi_to_j & ~star_to_j

        s = _select(
            hi_to_j, s, a_hi=a_j, phi_hi=phi_j, dphi_hi=dphi_j, a_rec=s.a_hi, phi_rec=s.phi_hi
        )
        s = _select(star_to_j, s, a_star=a_j, phi_star=phi_j, dphi_star=dphi_j, g_star=g_j)
        s = s._replace(done=star_to_j | s.done)
        s = _select(
            hi_to_lo,
            s,
            a_hi=s.a_lo,
            phi_hi=s.phi_lo,
            dphi_hi=s.dphi_lo,
            a_rec=s.a_hi,
            phi_rec=s.phi_hi,
        )
        s = _select(lo_to_j & ~hi_to_lo, s, a_rec=s.a_lo, phi_rec=s.phi_lo)
        s = _select(lo_to_j, s, a_lo=a_j, phi_lo=phi_j, dphi_lo=dphi_j)
        s = s._replace(j=s.j + 1)
        # JAX allows more zoom steps than SciPy's 10.
        return s._replace(failed=s.failed | (s.j >= 30))

    return lax.while_loop(lambda s: ~s.done & ~pass_through & ~s.failed, body, state)


def _line_search(f, xk, pk, old_fval, old_old_fval, gfk, c1=1e-4, c2=0.9, maxiter=20):
    """A step along ``pk`` from ``xk`` satisfying the strong Wolfe conditions."""

    def phi_dphi_g(t):
        t = xnp.array(t, dtype=pk.dtype)
        phi, g = api_autodiff.value_and_grad(f)(xk + t * pk)
        return phi, xnp.real(_dot(g, pk)), g

    phi_0 = old_fval
    dphi_0 = xnp.real(_dot(gfk, pk))
    candidate_start = 1.01 * 2 * (phi_0 - old_old_fval) / dphi_0
    start_value = xnp.where(candidate_start > 1, 1.0, candidate_start)

    def wolfe_one(a_i, phi_i):  # the sufficient-decrease condition fails
        return phi_i > phi_0 + c1 * a_i * dphi_0

    def wolfe_two(dphi_i):  # the curvature condition holds
        return xnp.abs(dphi_i) <= -c2 * dphi_0

    state = _LineSearchState(
        done=xnp.array(False),
        failed=xnp.array(False),
        i=1,
        a_i1=0.0,
        phi_i1=phi_0,
        dphi_i1=dphi_0,
        nfev=0,
        ngev=0,
        a_star=0.0,
        phi_star=phi_0,
        dphi_star=dphi_0,
        g_star=gfk,
    )

    def body(s):
        a_i = xnp.where(s.i == 1, start_value, s.a_i1 * 2.0)
        phi_i, dphi_i, g_i = phi_dphi_g(a_i)
        s = s._replace(nfev=s.nfev + 1, ngev=s.ngev + 1)
        to_zoom1 = wolfe_one(a_i, phi_i) | ((phi_i >= s.phi_i1) & (s.i > 1))
        to_i = wolfe_two(dphi_i) & ~to_zoom1
        to_zoom2 = (dphi_i >= 0.0) & ~to_zoom1 & ~to_i
        zoom1 = _zoom(
            phi_dphi_g,
            wolfe_one,
            wolfe_two,
            s.a_i1,
            s.phi_i1,
            s.dphi_i1,
            a_i,
            phi_i,
            dphi_i,
            gfk,
            ~to_zoom1,
        )
        s = s._replace(nfev=s.nfev + zoom1.nfev, ngev=s.ngev + zoom1.ngev)
        zoom2 = _zoom(
            phi_dphi_g,
            wolfe_one,
            wolfe_two,
            a_i,
            phi_i,
            dphi_i,
            s.a_i1,
            s.phi_i1,
            s.dphi_i1,
            gfk,
            ~to_zoom2,
        )
        s = s._replace(nfev=s.nfev + zoom2.nfev, ngev=s.ngev + zoom2.ngev)
        for pred, zoom in ((to_zoom1, zoom1), (None, None), (to_zoom2, zoom2)):
            if pred is None:
                s = _select(to_i, s, a_star=a_i, phi_star=phi_i, dphi_star=dphi_i, g_star=g_i)
                s = s._replace(done=to_i | s.done)
                continue
            s = _select(
                pred,
                s,
                a_star=zoom.a_star,
                phi_star=zoom.phi_star,
                dphi_star=zoom.dphi_star,
                g_star=zoom.g_star,
            )
            s = s._replace(done=pred | s.done, failed=(pred & zoom.failed) | s.failed)
        return s._replace(i=s.i + 1, a_i1=a_i, phi_i1=phi_i, dphi_i1=dphi_i)

    state = lax.while_loop(lambda s: ~s.done & (s.i <= maxiter) & ~s.failed, body, state)
    status = xnp.where(
        state.failed, xnp.array(1), xnp.where(state.i > maxiter, xnp.array(3), xnp.array(0))
    )
    alpha_k = xnp.asarray(state.a_star)
    if finfo(alpha_k.dtype).bits != 64:
        # Below 64 bits a vanishing step would stall BFGS on a zero direction.
        alpha_k = xnp.where(xnp.abs(alpha_k) < 1e-8, xnp.sign(alpha_k) * 1e-8, alpha_k)
    return _LineSearchResults(
        failed=state.failed | ~state.done,
        nit=state.i - 1,
        nfev=state.nfev,
        ngev=state.ngev,
        k=state.i,
        a_k=alpha_k,
        f_k=state.phi_star,
        g_k=state.g_star,
        status=status,
    )


# ----------------------------------------------------------------------------- BFGS


class _BFGSState(NamedTuple):
    converged: Any
    failed: Any
    k: Any
    nfev: Any
    ngev: Any
    x_k: Any
    f_k: Any
    g_k: Any
    H_k: Any
    old_old_fval: Any
    line_search_status: Any


def _minimize_bfgs(fun, x0, maxiter=None, norm=np.inf, gtol=1e-5, line_search_maxiter=10):
    """BFGS from ``x0``; returns the final ``_BFGSState`` and the status code."""
    if maxiter is None:
        maxiter = np.size(x0) * 200
    d = x0.shape[0]
    f_0, g_0 = api_autodiff.value_and_grad(fun)(x0)
    state = _BFGSState(
        converged=xnp.linalg.norm(g_0, ord=norm) < gtol,
        failed=False,
        k=0,
        nfev=1,
        ngev=1,
        x_k=x0,
        f_k=f_0,
        g_k=g_0,
        H_k=xnp.eye(d, dtype=x0.dtype),
        old_old_fval=f_0 + xnp.linalg.norm(g_0) / 2,
        line_search_status=0,
    )

    def body(s):
        p_k = -_dot(s.H_k, s.g_k)
        ls = _line_search(
            fun,
            s.x_k,
            p_k,
            old_fval=s.f_k,
            old_old_fval=s.old_old_fval,
            gfk=s.g_k,
            maxiter=line_search_maxiter,
        )
        s_k = ls.a_k * p_k
        y_k = ls.g_k - s.g_k
        rho_k = xnp.reciprocal(_dot(y_k, s_k))
        w = xnp.eye(d, dtype=rho_k.dtype) - rho_k * (s_k[:, None] * y_k[None, :])
        h_next = _einsum("ij,jk,lk", w, s.H_k, w) + rho_k * (s_k[:, None] * s_k[None, :])
        h_next = xnp.where(xnp.isfinite(rho_k), h_next, s.H_k)
        return _BFGSState(
            converged=xnp.linalg.norm(ls.g_k, ord=norm) < gtol,
            failed=ls.failed,
            k=s.k + 1,
            nfev=s.nfev + ls.nfev,
            ngev=s.ngev + ls.ngev,
            x_k=s.x_k + s_k,
            f_k=ls.f_k,
            g_k=ls.g_k,
            H_k=h_next,
            old_old_fval=s.f_k,
            line_search_status=ls.status,
        )

    state = lax.while_loop(lambda s: ~s.converged & ~s.failed & (s.k < maxiter), body, state)
    status = xnp.where(
        state.converged,
        0,
        xnp.where(state.k == maxiter, 1, xnp.where(state.failed, 2 + state.line_search_status, -1)),
    )
    return state, status


def minimize(
    fun: Callable,
    x0,
    args: tuple = (),
    *,
    method: str,
    tol: float | None = None,
    options: Mapping[str, Any] | None = None,
) -> OptimizeResults:
    """Minimise a scalar function of a 1-D array, as ``jax.scipy.optimize.minimize``.

    Gradients come from ``xform.grad``; the search traces under ``jit`` and ``vmap``.

    Args:
      fun: ``fun(x, *args) -> scalar`` with ``x`` of shape ``(n,)``; differentiable.
      x0: the starting point, shape ``(n,)``.
      args: extra positional arguments of ``fun`` (a tuple).
      method: ``"BFGS"`` (any case); the only method JAX offers publicly.
      tol: accepted and unused, as in JAX (use ``options["gtol"]``).
      options: ``maxiter``, ``norm``, ``gtol``, ``line_search_maxiter``.

    Returns:
      An ``OptimizeResults``.

    Example:
      >>> minimize(lambda x: xnp.sum((x - 1.) ** 2), xnp.zeros(3), method="BFGS").x
    """
    if options is None:
        options = {}
    if not isinstance(args, tuple):
        raise TypeError(
            f"args argument to xform.scipy.optimize.minimize must be a tuple, got {args}"
        )
    if method.lower() != "bfgs":
        raise ValueError(
            f"Method {method} not recognized by xform.scipy.optimize.minimize "
            "(only 'BFGS' is supported)"
        )
    x0 = xnp.asarray(x0)
    state, status = _minimize_bfgs(lambda x: fun(x, *args), x0, **options)
    return OptimizeResults(
        x=state.x_k,
        success=state.converged & ~state.failed,
        status=status,
        fun=state.f_k,
        jac=state.g_k,
        hess_inv=state.H_k,
        nfev=state.nfev,
        njev=state.ngev,
        nit=state.k,
    )

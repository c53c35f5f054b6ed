"""``jax.experimental.ode.odeint`` on xform: adaptive Dormand–Prince (RK45) integration.

The solver steps with a ``while_loop`` between consecutive output times (a ``scan`` over
them), keeping a step only when its embedded error estimate is within tolerance, and reads
the solution at each output time off the quartic that interpolates the last accepted step.
Its gradient is computed by the adjoint method: a ``custom_vjp`` whose backward pass
integrates the augmented system (state, its cotangent, and the cotangents of time and of the
extra arguments) backwards in time, between each pair of output times.
"""

import functools

import numpy as np

from xform import custom_derivatives, lax, tree_util
from xform import numpy as jnp
from xform.api.autodiff import vjp
from xform.api.batching import vmap
from xform.api.jit import jit
from xform.extend.core import valid_jaxtype
from xform.flatten_util import ravel_pytree

__all__ = ["odeint"]

# The Dormand–Prince 5(4) tableau: stage times, stage weights, the 5th-order solution's
# weights and their difference from an embedded 4th-order solution's (the error estimate;
# the 4th-order weights are those JAX's solver uses, so that both take the same steps).
_C = np.array([1 / 5, 3 / 10, 4 / 5, 8 / 9, 1.0, 1.0, 0.0])
_A = np.array(
    [
        [1 / 5, 0, 0, 0, 0, 0, 0],
        [3 / 40, 9 / 40, 0, 0, 0, 0, 0],
        [44 / 45, -56 / 15, 32 / 9, 0, 0, 0, 0],
        [19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729, 0, 0, 0],
        [9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656, 0, 0],
        [35 / 384, 0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84, 0],
    ]
)
_B = np.array([35 / 384, 0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84, 0])
_B_ERR = _B - np.array(
    [1951 / 21600, 0, 22642 / 50085, 451 / 720, -12231 / 42400, 649 / 6300, 1 / 60]
)
# Weights of the stages giving the solution at the middle of a step (Shampine's dense
# output), halved: the step's midpoint is y0 + dt * (these . k).
_B_MID = (
    np.array(
        [
            6025192743 / 30085553152,
            0,
            51252292925 / 65400821598,
            -2691868925 / 45128329728,
            187940372067 / 1594534317056,
            -1776094331 / 19743644256,
            11237099 / 235043384,
        ]
    )
    / 2
)


def _rk_step(fun, y, f, t, dt):
    """One Dormand–Prince step from ``(t, y)`` with ``f = fun(y, t)``: the new state, its
    derivative, the error estimate and the seven stage derivatives ``k``."""
    dtype = f.dtype
    nodes, weights = jnp.asarray(_C, dt.dtype), jnp.asarray(_A, dtype)
    h = dt.astype(dtype)

    def stage(i, k):
        y_i = y + h * jnp.dot(weights[i - 1, :], k)
        return k.at[i, :].set(fun(y_i, t + dt * nodes[i - 1]))

    k = lax.fori_loop(1, 7, stage, jnp.zeros((7, f.shape[0]), dtype).at[0, :].set(f))
    y_new = h * jnp.dot(jnp.asarray(_B, dtype), k) + y
    return y_new, k[-1], h * jnp.dot(jnp.asarray(_B_ERR, dtype), k), k


def _interpolant(y0, y1, k, dt):
    """The coefficients (highest power first) of the quartic through ``y0`` and ``y1`` with
    the step's end slopes and midpoint, in the step's relative time ``0..1``."""
    h = dt.astype(y0.dtype)
    y_mid = y0 + h * jnp.dot(jnp.asarray(_B_MID, y0.dtype), k)
    dy0, dy1 = h * k[0], h * k[-1]
    a = -2.0 * dy0 + 2.0 * dy1 - 8.0 * y0 - 8.0 * y1 + 16.0 * y_mid
    b = 5.0 * dy0 - 3.0 * dy1 + 18.0 * y0 + 14.0 * y1 - 32.0 * y_mid
    c = -4.0 * dy0 + dy1 - 11.0 * y0 - 5.0 * y1 + 16.0 * y_mid
    return jnp.stack([a, b, c, dy0, y0])


def _first_step(fun, t0, y0, f0, rtol, atol, order=4):
    """An initial step size from the scaled sizes of the state, its derivative and their
    change over a trial step (Hairer, Nørsett & Wanner, II.4)."""
    scale = (atol + jnp.abs(y0) * rtol).astype(y0.dtype)
    d0 = jnp.linalg.norm(y0 / scale)
    d1 = jnp.linalg.norm(f0 / scale)
    h0 = jnp.where((d0 < 1e-5) | (d1 < 1e-5), 1e-6, 0.01 * d0 / d1)
    f1 = fun(y0 + h0.astype(y0.dtype) * f0, t0 + h0)
    d2 = jnp.linalg.norm((f1 - f0) / scale) / h0
    h1 = jnp.where(
        (d1 <= 1e-15) & (d2 <= 1e-15),
        jnp.maximum(1e-6, h0 * 1e-3),
        (0.01 / jnp.maximum(d1, d2)) ** (1.0 / (order + 1.0)),
    )
    return jnp.minimum(100.0 * h0, h1)


def _error_ratio(err, rtol, atol, y0, y1):
    """The RMS of the error estimate relative to the tolerance: a step is kept if <= 1."""
    tol = (atol + rtol * jnp.maximum(jnp.abs(y0), jnp.abs(y1))).astype(err.dtype)
    ratio = err / tol
    sq = ratio.real**2 + ratio.imag**2 if jnp.iscomplexobj(ratio) else ratio**2
    return jnp.sqrt(jnp.mean(sq))


def _next_step(dt, ratio, safety=0.9, grow=10.0, shrink=0.2, order=5.0):
    """The next step size: scaled by the error ratio, at most ``grow`` times larger and, after
    a rejected step, at least ``shrink`` times as large."""
    floor = jnp.where(ratio < 1, 1.0, shrink)
    factor = jnp.minimum(grow, jnp.maximum(ratio ** (-1.0 / order) * safety, floor))
    return jnp.where(ratio == 0, dt * grow, dt * factor)


def odeint(func, y0, t, *args, rtol=1.4e-8, atol=1.4e-8, mxstep=jnp.inf, hmax=jnp.inf):
    """Integrate ``dy/dt = func(y, t, *args)`` from ``y0`` at ``t[0]``, reporting the solution
    at each time of ``t`` (adaptive Dormand–Prince steps; differentiable by the adjoint
    method).

    Args:
      func: the time derivative, ``func(y, t, *args)``, of ``y``'s structure.
      y0: the initial state: an array or a pytree of arrays.
      t: increasing float times; ``t[0]`` is the time of ``y0``.
      *args: extra arguments of ``func`` (pytrees of arrays or scalars).
      rtol, atol: relative and absolute local error tolerances.
      mxstep: the most steps taken between two times of ``t``.
      hmax: the largest step size.

    Returns:
      The solution at the times ``t``: ``y0``'s structure with a leading axis of ``len(t)``.

    Example:
      >>> ys = odeint(lambda y, t: -y, jnp.ones(2), jnp.linspace(0.0, 1.0, 5))
    """
    for arg in tree_util.tree_leaves(args):
        if not valid_jaxtype(arg):
            raise TypeError(
                f"The contents of odeint *args must be arrays or scalars, but got {arg}."
            )
    if not jnp.issubdtype(t.dtype, jnp.floating):
        raise TypeError(f"t must be an array of floats, but got {t}.")
    # Values ``func`` closes over become explicit arguments, so that they get cotangents.
    converted, consts = custom_derivatives.closure_convert(func, y0, t[0], *args)
    return _solve(converted, rtol, atol, mxstep, hmax, y0, t, *args, *consts)


@functools.partial(jit, static_argnums=(0, 1, 2, 3, 4))
def _solve(func, rtol, atol, mxstep, hmax, y0, ts, *args):
    flat_y0, unravel = ravel_pytree(y0)

    def flat_func(y, t, *args):
        return ravel_pytree(func(unravel(y), t, *args))[0]

    ys = _odeint(flat_func, rtol, atol, mxstep, hmax, flat_y0, ts, *args)
    return vmap(unravel)(ys)


@functools.partial(custom_derivatives.custom_vjp, nondiff_argnums=(0, 1, 2, 3, 4))
def _odeint(func, rtol, atol, mxstep, hmax, y0, ts, *args):
    """The solver on a flat state."""

    def fun(y, t):
        return func(y, t, *args)

    def advance(state, target):
        # Step until the last accepted step passes ``target``, then interpolate there.
        def unfinished(s):
            steps, _, _, t, dt, _, _ = s
            return (t < target) & (steps < mxstep) & (dt > 0)

        def attempt(s):
            steps, y, f, t, dt, t_prev, coeffs = s
            y_new, f_new, err, k = _rk_step(fun, y, f, t, dt)
            ratio = _error_ratio(err, rtol, atol, y, y_new)
            dt_next = jnp.clip(_next_step(dt, ratio), min=0.0, max=hmax)
            accepted = (steps + 1, y_new, f_new, t + dt, dt_next, t, _interpolant(y, y_new, k, dt))
            rejected = (steps + 1, y, f, t, dt_next, t_prev, coeffs)
            return tuple(
                jnp.where(ratio <= 1.0, a, r) for a, r in zip(accepted, rejected, strict=True)
            )

        _, *state = lax.while_loop(unfinished, attempt, (0, *state))
        _, _, t, _, t_prev, coeffs = state
        where = (target - t_prev) / (t - t_prev)
        return tuple(state), jnp.polyval(coeffs, where.astype(coeffs.dtype))

    f0 = fun(y0, ts[0])
    dt = jnp.clip(_first_step(fun, ts[0], y0, f0, rtol, atol), min=0.0, max=hmax)
    coeffs = jnp.stack([y0] * 5)
    _, ys = lax.scan(advance, (y0, f0, ts[0], dt, ts[0], coeffs), ts[1:])
    return jnp.concatenate([y0[None], ys])


def _odeint_fwd(func, rtol, atol, mxstep, hmax, y0, ts, *args):
    ys = _odeint(func, rtol, atol, mxstep, hmax, y0, ts, *args)
    return ys, (ys, ts, args)


def _odeint_bwd(func, rtol, atol, mxstep, hmax, residuals, g):
    ys, ts, args = residuals

    def augmented(state, t, *args):
        # Backwards in time (``-t``): the state, and the cotangents of the state, of the
        # time and of the arguments, which grow by the vjp of ``func``.
        y, y_bar = state[0], state[1]
        y_dot, pullback = vjp(func, y, -t, *args)
        return (-y_dot, *pullback(y_bar))

    def back(carry, i):
        y_bar, t0_bar, args_bar = carry
        t_bar = jnp.dot(func(ys[i], ts[i], *args), g[i]).real  # the output time's cotangent
        t0_bar = t0_bar - t_bar
        _, y_bar, t0_bar, args_bar = odeint(
            augmented,
            (ys[i], y_bar, t0_bar, args_bar),
            jnp.stack([-ts[i], -ts[i - 1]]),
            *args,
            rtol=rtol,
            atol=atol,
            mxstep=mxstep,
            hmax=hmax,
        )
        y_bar, t0_bar, args_bar = tree_util.tree_map(lambda x: x[1], (y_bar, t0_bar, args_bar))
        return (y_bar + g[i - 1], t0_bar, args_bar), t_bar

    init = (g[-1], 0.0, tree_util.tree_map(jnp.zeros_like, args))
    (y_bar, t0_bar, args_bar), ts_bar = lax.scan(back, init, jnp.arange(len(ts) - 1, 0, -1))
    ts_bar = jnp.concatenate([jnp.stack([t0_bar]), ts_bar[::-1]])
    return (y_bar, ts_bar, *args_bar)


_odeint.defvjp(_odeint_fwd, _odeint_bwd)

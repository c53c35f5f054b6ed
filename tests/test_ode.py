"""xform.experimental.ode.odeint against jax.experimental.ode.odeint: values, gradients
(the adjoint method), pytree states, closures, jit, and the errors on bad input."""

import jax as J
import jax.numpy as JN
import numpy as np
import pytest
from jax.experimental.ode import odeint as jax_odeint

import xform as jax
import xform.numpy as jnp
from xform.experimental.ode import odeint

TS = np.linspace(0.0, 2.0, 4).astype(np.float32)
Y0 = np.array([1.0, 0.0], np.float32)


def _pendulum(np_):
    def f(y, t, a, b):
        return np_.stack([a * y[1], -b * np_.sin(y[0]) + 0.1 * t])

    return f


def _loss(np_, ode):
    return lambda y0, ts, a, b: np_.sum(ode(_pendulum(np_), y0, ts, a, b) ** 2)


def test_values_match_jax():
    ours = odeint(_pendulum(jnp), jnp.asarray(Y0), jnp.asarray(TS), 1.0, 2.0)
    theirs = jax_odeint(_pendulum(JN), JN.asarray(Y0), JN.asarray(TS), 1.0, 2.0)
    np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-5)


def test_gradients_match_jax_under_jit():
    args = (Y0, TS, np.float32(1.0), np.float32(2.0))
    ours = jax.jit(jax.grad(_loss(jnp, odeint), argnums=(0, 1, 2, 3)))(*args)
    theirs = J.grad(_loss(JN, jax_odeint), argnums=(0, 1, 2, 3))(*args)
    for a, b in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(a, b, rtol=2e-4, atol=2e-4)


def test_pytree_state_closure_and_tolerances():
    def make(np_, ode):
        def loss(k):
            def f(y, t):  # closes over ``k``, traced by grad
                return {"x": -k * y["x"], "v": y["x"] - y["v"]}

            ys = ode(
                f,
                {"x": np_.ones(2), "v": np_.zeros(2)},
                np_.asarray(TS),
                rtol=1e-6,
                atol=1e-6,
                hmax=0.5,
            )
            return np_.sum(ys["x"]) + np_.sum(ys["v"] ** 2)

        return loss

    np.testing.assert_allclose(make(jnp, odeint)(0.7), make(JN, jax_odeint)(0.7), rtol=1e-5)
    np.testing.assert_allclose(
        jax.grad(make(jnp, odeint))(0.7), J.grad(make(JN, jax_odeint))(0.7), rtol=1e-4
    )


def test_exact_solution_and_mxstep():
    ys = odeint(lambda y, t: -y, jnp.ones(3), jnp.linspace(0.0, 1.0, 3))
    np.testing.assert_allclose(ys[:, 0], np.exp(-np.linspace(0.0, 1.0, 3)), rtol=1e-6)
    # with one step allowed per output time the solver stops early, as JAX's does
    ours = odeint(lambda y, t: -y, jnp.ones(1), jnp.asarray(TS), mxstep=1)
    theirs = jax_odeint(lambda y, t: -y, JN.ones(1), JN.asarray(TS), mxstep=1)
    np.testing.assert_allclose(ours, theirs, rtol=1e-5)


def test_bad_input_errors_as_jax():
    with pytest.raises(TypeError, match="t must be an array of floats"):
        odeint(lambda y, t: y, jnp.ones(1), jnp.arange(3))
    with pytest.raises(
        TypeError, match="The contents of odeint \\*args must be arrays or scalars, but got foo"
    ):
        odeint(lambda y, t, s: y, jnp.ones(1), jnp.asarray(TS), "foo")


def test_vmap_of_values_and_gradients():
    y0s = np.array([[1.0, 0.0], [0.5, 0.2], [2.0, -1.0]], np.float32)

    def make(np_, ode):
        f = lambda y, t, k: np_.stack([y[1], -k * y[0]])  # noqa: E731
        return lambda y0, k: ode(f, y0, np_.asarray(TS[:3]), k)[-1, 0]

    ours = jax.vmap(jax.value_and_grad(make(jnp, odeint), argnums=1), (0, None))(y0s, 2.0)
    theirs = J.vmap(J.value_and_grad(make(JN, jax_odeint), argnums=1), (0, None))(y0s, 2.0)
    for a, b in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)

"""Reverse mode and the grad family: against JAX, composed with jit, nested, and bad input."""

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import xform
import xform.numpy as xnp
from tests.harness import check_against_jax
from xform import lax
from xform.test_util import check_grads

X = np.linspace(-1.5, 1.5, 5, dtype=np.float32)


def loss(w, x):
    return xnp.sum(xnp.tanh(x * w) ** 2) + xnp.max(w)


def loss_jax(w, x):
    return jnp.sum(jnp.tanh(x * w) ** 2) + jnp.max(w)


def close(a, b, rtol=1e-5, atol=1e-6):
    for g, e in zip(jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b), strict=True):
        assert np.asarray(g).dtype == np.asarray(e).dtype
        np.testing.assert_allclose(np.asarray(g), np.asarray(e), rtol=rtol, atol=atol)


def test_grad_value_and_grad_vjp_match_jax():
    w = X[::-1].copy()
    close(xform.grad(loss)(w, X), jax.grad(loss_jax)(w, X))
    close(xform.grad(loss, argnums=(0, 1))(w, X), jax.grad(loss_jax, argnums=(0, 1))(w, X))
    close(xform.value_and_grad(loss)(w, X), jax.value_and_grad(loss_jax)(w, X))
    out, pullback = xform.vjp(lambda a: xnp.sin(a) * 2.0, X)
    close(pullback(xnp.ones(5)), jax.vjp(lambda a: jnp.sin(a) * 2.0, X)[1](jnp.ones(5)))


def test_grad_composes_with_jit_both_ways():
    w = X[::-1].copy()
    expected = jax.grad(loss_jax)(w, X)
    close(xform.jit(xform.grad(loss))(w, X), expected)
    close(xform.grad(xform.jit(loss))(w, X), expected)
    close(xform.jit(xform.grad(xform.jit(loss)))(w, X), expected)


def test_higher_order_and_nesting():
    f, fj = (lambda x: xnp.sin(x) * x), (lambda x: jnp.sin(x) * x)
    x = np.float32(0.7)
    close(xform.grad(xform.grad(f))(x), jax.grad(jax.grad(fj))(x))
    close(xform.grad(xform.grad(xform.grad(f)))(x), jax.grad(jax.grad(jax.grad(fj)))(x))
    close(xform.grad(xform.grad(xform.jit(f)))(x), jax.grad(jax.grad(fj))(x))
    close(xform.jit(xform.grad(xform.grad(f)))(x), jax.grad(jax.grad(fj))(x))
    # forward-over-reverse
    close(
        xform.jvp(xform.grad(f), (x,), (np.float32(1.0),)),
        jax.jvp(jax.grad(fj), (x,), (np.float32(1.0),)),
    )


def test_perturbation_confusion():
    out = xform.grad(lambda x: xform.grad(lambda y: x * y)(np.float32(2.0)))(np.float32(3.0))
    assert float(out) == 1.0
    deeper = xform.grad(
        lambda x: xform.grad(lambda y: xform.grad(lambda z: x * y * z)(np.float32(1.0)))(
            np.float32(2.0)
        )
    )
    assert float(deeper(np.float32(3.0))) == 1.0


def test_output_not_depending_on_input():
    g = xform.grad(lambda x: np.float32(3.0))(np.float32(1.0))
    assert float(g) == 0.0 and g.dtype == np.float32
    g = xform.grad(lambda x, y: xnp.sum(y))(X, X)
    np.testing.assert_array_equal(g, np.zeros(5, np.float32))


def test_pytrees_has_aux_and_allow_int():
    params = {"w": X, "b": np.float32(0.5)}

    def f(p, n):
        return xnp.sum(p["w"] * p["b"]) * n, {"n": n}

    grads, aux = xform.grad(f, has_aux=True)(params, 2.0)
    close(grads, jax.grad(lambda p, n: jnp.sum(p["w"] * p["b"]) * n)(params, 2.0))
    assert float(aux["n"]) == 2.0
    g = xform.grad(lambda x, k: x * k, argnums=(0, 1), allow_int=True)(np.float32(2.0), np.int32(3))
    assert float(g[0]) == 3.0 and g[1].dtype == jax.dtypes.float0


def test_special_points_follow_jax():
    for f, fj, x in [
        (xnp.abs, jnp.abs, 0.0),
        (xnp.sqrt, jnp.sqrt, 0.0),
        (lambda x: xnp.maximum(x, 1.0), lambda x: jnp.maximum(x, 1.0), 1.0),
        (
            lambda x: xnp.where(x > 0, xnp.log(xnp.where(x > 0, x, 1.0)), 0.0),
            lambda x: jnp.where(x > 0, jnp.log(jnp.where(x > 0, x, 1.0)), 0.0),
            0.0,
        ),
    ]:
        got, expected = xform.grad(f)(np.float32(x)), jax.grad(fj)(np.float32(x))
        np.testing.assert_array_equal(np.asarray(got), np.asarray(expected))


def test_stop_gradient():
    g = xform.grad(lambda x: x * lax.stop_gradient(x))(np.float32(3.0))
    assert float(g) == 3.0
    check_against_jax(lax.stop_gradient, jax.lax.stop_gradient, X)  # eager and lowered
    tree = {"a": X, "n": np.int32(2)}
    close(lax.stop_gradient(tree), jax.lax.stop_gradient(tree))
    close(
        xform.jit(xform.grad(lambda x: xnp.sum(x * lax.stop_gradient(x**2))))(X),
        jax.grad(lambda x: jnp.sum(x * jax.lax.stop_gradient(x**2)))(X),
    )


def test_jacobians_and_hessian():
    def f(x):
        return {"a": xnp.sin(x) * x[0], "b": xnp.sum(x**2)}

    def fj(x):
        return {"a": jnp.sin(x) * x[0], "b": jnp.sum(x**2)}

    close(xform.jacfwd(f)(X), jax.jacfwd(fj)(X))
    close(xform.jacrev(f)(X), jax.jacrev(fj)(X))
    close(
        xform.hessian(lambda x: xnp.sum(xnp.sin(x) * x))(X),
        jax.hessian(lambda x: jnp.sum(jnp.sin(x) * x))(X),
    )


def test_linearize_and_linear_transpose():
    out, f_jvp = xform.linearize(xnp.sin, X)
    close(f_jvp(np.ones(5, np.float32)), np.cos(X))
    transpose = xform.linear_transpose(lambda v: v * 2.0 + v, X)
    close(transpose(np.ones(5, np.float32)), (np.full(5, 3.0, np.float32),))


def test_check_grads_to_second_order():
    check_grads(lambda w: loss(w, X), (X[::-1].copy(),), order=2)
    with pytest.raises(AssertionError, match="fwd-mode derivative of order 1.*argument 0"):
        check_grads(_wrong_derivative, (X,), order=1, modes=("fwd",))


@xform.jit
def _wrong_derivative(x):
    # The tangent of sin replaced by a constant: a deliberately wrong derivative.
    return xnp.sin(lax.stop_gradient(x)) + (x - lax.stop_gradient(x)) * 2.0


def test_bad_input():
    with pytest.raises(TypeError, match="Gradient only defined for scalar-output functions"):
        xform.grad(xnp.sin)(X)
    with pytest.raises(TypeError, match="requires real-valued outputs.*holomorphic"):
        xform.grad(lambda x: x * (1 + 1j))(np.float32(1.0))
    with pytest.raises(TypeError, match="requires real- or complex-valued inputs.*int32"):
        xform.grad(lambda x: x * 2.0)(np.int32(1))
    with pytest.raises(TypeError, match="argnums=3 requires at least 4 positional"):
        xform.grad(lambda x: x, argnums=3)(np.float32(1.0))
    with pytest.raises(TypeError, match="must return a pair"):
        xform.grad(lambda x: x, has_aux=True)(np.float32(1.0))
    _, pullback = xform.vjp(xnp.sin, X)
    with pytest.raises(TypeError, match="structure of the primal output"):
        pullback((X, X))
    with pytest.raises(ValueError, match=r"cotangent 0 has shape \(3,\)"):
        pullback(np.ones(3, np.float32))


def test_grad_of_a_jitted_function_shows_forward_then_transposed_programs():
    # Both programs keep the function's name, as JAX's do.
    text = str(xform.make_jaxpr(xform.grad(xform.jit(lambda x: xnp.sum(xnp.sin(x)))))(X))
    expected = str(jax.make_jaxpr(jax.grad(jax.jit(lambda x: jnp.sum(jnp.sin(x)))))(X))
    names = re.findall(r"name=(\S+)", text)
    assert names == re.findall(r"name=(\S+)", expected) == ["<lambda>", "<lambda>"]


def test_gradients_of_python_scalars_are_weakly_typed_as_in_jax():
    # A cotangent has its primal's type: a Python float's gradient is a weak float32.
    cases = [
        (lambda x: x * 2.0, jax.grad(lambda x: x * 2.0), (1.0,), 0),
        (lambda x: 3.0 * xnp.sin(x) ** 2, jax.grad(lambda x: 3.0 * jnp.sin(x) ** 2), (0.5,), 0),
        (
            lambda x, y: x * y,
            jax.grad(lambda x, y: x * y, argnums=(0, 1)),
            (1.0, np.float32(2.0)),
            (0, 1),
        ),
        (lambda x, y: y, jax.grad(lambda x, y: y, argnums=0), (1.0, 2.0), 0),  # a zero
    ]
    for f, expected_fn, args, argnums in cases:
        expected = expected_fn(*args)
        for wrap in (lambda g: g, xform.jit):
            got = wrap(xform.grad(f, argnums=argnums))(*args)
            for g, e in zip(
                jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(expected), strict=True
            ):
                assert g.dtype == e.dtype and g.weak_type == e.weak_type, (g, e)
                np.testing.assert_allclose(np.asarray(g), np.asarray(e), rtol=1e-6)
    (ct,) = xform.vjp(lambda x: x * 2.0, 1.0)[1](1.0)
    assert ct.weak_type
    assert not xform.grad(lambda x: x * 2.0)(np.float32(1.0)).weak_type

"""The JVP interpreter: nesting, jit, symbolic zeros, integer inputs, and bad input."""

import jax
import numpy as np
import pytest

import xform
from xform import core, lax
from xform.errors import UnexpectedTracerError

F32_3 = np.linspace(-1, 1, 3, dtype=np.float32)
ONES_3 = np.ones(3, np.float32)


def f(x):
    return lax.mul(lax.sin(x), lax.cos(lax.mul(x, x)))


def f_jax(x):
    return jax.lax.mul(jax.lax.sin(x), jax.lax.cos(jax.lax.mul(x, x)))


def assert_pair(got, expected):
    for g, e in zip(got, expected, strict=True):
        assert np.asarray(g).dtype == np.asarray(e).dtype
        np.testing.assert_allclose(np.asarray(g), np.asarray(e), rtol=1e-6, atol=1e-6)


def test_jvp_matches_jax_eagerly_and_with_jit_inside_and_outside():
    expected = jax.jvp(f_jax, (F32_3,), (ONES_3,))
    assert_pair(xform.jvp(f, (F32_3,), (ONES_3,)), expected)
    assert_pair(xform.jvp(xform.jit(f), (F32_3,), (ONES_3,)), expected)
    assert_pair(xform.jit(lambda x, t: xform.jvp(f, (x,), (t,)))(F32_3, ONES_3), expected)


def test_jit_bodies_are_differentiated_once_and_cached():
    traces = []

    @xform.jit
    def g(x):
        traces.append(1)
        return lax.sin(x)

    for _ in range(3):
        xform.jvp(g, (F32_3,), (ONES_3,))
    assert len(traces) == 1
    jaxpr = xform.make_jaxpr(lambda x, t: xform.jvp(g, (x,), (t,)))(F32_3, ONES_3)
    assert [e.primitive.name for e in jaxpr.eqns] == ["jit"]
    assert "name=g" in str(jaxpr)  # the differentiated body keeps its name, as in JAX


def test_no_perturbation_confusion():
    # d/dx [d/dy (x * y)] at (3, 2) is 1, not 2: the inner jvp must not see x's tangent.
    def inner_derivative(x):
        return xform.jvp(lambda y: lax.mul(x, y), (np.float32(2.0),), (np.float32(1.0),))[1]

    out, tangent = xform.jvp(inner_derivative, (np.float32(3.0),), (np.float32(1.0),))
    assert float(out) == 3.0 and float(tangent) == 1.0


def test_second_and_third_derivatives_by_nesting():
    def d(fun):
        return lambda x: xform.jvp(fun, (x,), (xform.numpy.ones_like(x),))[1]

    x = np.float32(0.7)
    np.testing.assert_allclose(d(d(lax.sin))(x), -np.sin(x), rtol=1e-6)
    np.testing.assert_allclose(d(d(d(lax.sin)))(x), -np.cos(x), rtol=1e-6)
    np.testing.assert_allclose(xform.jit(d(d(lax.sin)))(x), -np.sin(x), rtol=1e-6)


def test_closed_over_outer_tracer_inside_jit():
    def outer(x):
        return xform.jit(lambda y: lax.mul(y, x))(np.float32(2.0))

    out, tangent = xform.jvp(outer, (np.float32(3.0),), (np.float32(1.0),))
    assert float(out) == 6.0 and float(tangent) == 2.0


def test_outputs_independent_of_the_input_have_zero_tangents():
    def g(x):
        return lax.sin(x), np.float32(5.0), lax.gt(x, 0.0)

    (a, b, c), (ta, tb, tc) = xform.jvp(g, (F32_3,), (ONES_3,))
    np.testing.assert_allclose(ta, np.cos(F32_3), rtol=1e-6)
    assert np.asarray(tb) == 0 and np.asarray(tb).dtype == np.float32
    assert np.asarray(tc).dtype == jax.dtypes.float0


def test_integer_inputs_take_float0_tangents():
    n = np.int32(3)
    float0 = np.zeros((), jax.dtypes.float0)
    out, tangent = xform.jvp(
        lambda x, k: lax.mul(x, lax.convert_element_type(k, np.float32)),
        (np.float32(2.0), n),
        (np.float32(1.0), float0),
    )
    assert float(out) == 6.0 and float(tangent) == 3.0


def test_python_control_flow_on_concrete_values_under_jvp():
    def g(x):
        return lax.sin(x) if x > 0 else lax.cos(x)

    np.testing.assert_allclose(
        xform.jvp(g, (np.float32(0.5),), (np.float32(1.0),))[1], np.cos(0.5), rtol=1e-6
    )


def test_has_aux():
    out, tangent, aux = xform.jvp(
        lambda x: (lax.sin(x), {"x": x}), (F32_3,), (ONES_3,), has_aux=True
    )
    np.testing.assert_allclose(tangent, np.cos(F32_3), rtol=1e-6)
    np.testing.assert_array_equal(aux["x"], F32_3)
    with pytest.raises(TypeError, match="must return a pair"):
        xform.jvp(lax.sin, (F32_3,), (ONES_3,), has_aux=True)


def test_leaked_jvp_tracer():
    leaked = []

    def g(x):
        leaked.append(x)
        return x

    xform.jvp(g, (F32_3,), (ONES_3,))
    with pytest.raises(UnexpectedTracerError, match="jvp"):
        lax.sin(leaked[0])
    assert core.current_trace() is core.eval_trace


def test_bad_input():
    with pytest.raises(TypeError, match="must be tuples or lists; found ndarray"):
        xform.jvp(lax.sin, F32_3, ONES_3)
    with pytest.raises(TypeError, match="same tree structure"):
        xform.jvp(lax.add, (F32_3, F32_3), (ONES_3,))
    with pytest.raises(ValueError, match=r"equal shapes.*\(3,\).*\(2,\)"):
        xform.jvp(lax.sin, (F32_3,), (np.ones(2, np.float32),))
    with pytest.raises(TypeError, match="needs a tangent of dtype float32, got int32"):
        xform.jvp(lax.sin, (F32_3,), (np.ones(3, np.int32),))

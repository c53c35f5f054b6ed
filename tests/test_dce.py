"""Dead-code elimination: of jaxprs, of jit bodies before lowering, of linearized programs."""

import jax
import jax.numpy as jnp
import numpy as np

import xform
import xform.numpy as xnp
from xform import core
from xform.api import autodiff as api_autodiff
from xform.interpret import dce
from xform.primitives.base import standard_primitive

X = np.linspace(-1.0, 1.0, 4, dtype=np.float32)


def with_dead_code(lib):
    def f(x, y):
        unused = lib.cos(y) * 3.0  # noqa: F841  (dead: nothing reads it)
        return lib.sin(x) * 2.0, lib.exp(x)

    return f


def prims(jaxpr):
    return [e.primitive.name for e in jaxpr.eqns]


def test_dce_jaxpr_keeps_what_the_used_outputs_need():
    closed = xform.make_jaxpr(with_dead_code(xnp))(X, X)
    jaxpr, used_inputs = dce.dce_jaxpr(closed.jaxpr, [True, True])
    assert prims(jaxpr) == ["sin", "mul", "exp"] and used_inputs == [True, False]
    assert len(jaxpr.invars) == 2  # the signature stays unless asked
    core.check_jaxpr(jaxpr)
    jaxpr, used_inputs = dce.dce_jaxpr(closed.jaxpr, [False, True], prune_inputs=True)
    assert prims(jaxpr) == ["exp"] and len(jaxpr.invars) == 1 and len(jaxpr.outvars) == 1
    core.check_jaxpr(jaxpr)
    (out,) = core.eval_jaxpr(jaxpr, [], X)
    np.testing.assert_allclose(np.asarray(out), np.exp(X), rtol=1e-6)


def test_dce_drops_unread_consts():
    big = np.arange(4, dtype=np.float32)
    closed = xform.make_jaxpr(lambda x: (x * big, x + 1.0))(X)
    assert len(closed.consts) == 1
    slim, _ = dce.dce_closed_jaxpr(closed, [False, True])
    assert slim.consts == [] and slim.jaxpr.constvars == [] and prims(slim.jaxpr) == ["add"]
    jaxpr, _ = dce.dce_jaxpr(closed.jaxpr, [False, True])  # a bare jaxpr keeps its signature
    assert len(jaxpr.constvars) == 1 and prims(jaxpr) == ["add"]


def test_effectful_equations_are_kept():
    effect_p = standard_primitive("test_dce_effect", lambda x: [x])
    dce.effectful.add(effect_p)
    try:
        closed = xform.make_jaxpr(lambda x: (effect_p.bind(x), x)[1])(X)
        jaxpr, _ = dce.dce_jaxpr(closed.jaxpr, [True])
        assert prims(jaxpr) == ["test_dce_effect"]
    finally:
        dce.effectful.discard(effect_p)
    jaxpr, _ = dce.dce_jaxpr(closed.jaxpr, [True])
    assert prims(jaxpr) == []


def test_jit_lowers_without_dead_code_and_matches_jax():
    f = xform.jit(with_dead_code(xnp))
    text = f.lower(X, X).as_text()
    assert "stablehlo.cosine" not in text and "stablehlo.sine" in text
    for got, expected in zip(f(X, X), jax.jit(with_dead_code(jnp))(X, X), strict=True):
        np.testing.assert_allclose(np.asarray(got), np.asarray(expected), rtol=1e-6)


def test_jit_bodies_shed_unused_outputs_and_stay_shared():
    inner = xform.jit(lambda a: (xnp.sin(a), xnp.cos(a)))

    def f(x):
        return inner(x)[0] + inner(x * 2.0)[0]  # the same body, called twice

    text = xform.jit(f).lower(X).as_text()
    assert "stablehlo.cosine" not in text
    assert text.count("func.func private") == 1  # one pruned body, called twice
    expected = jnp.sin(X) + jnp.sin(X * 2.0)
    np.testing.assert_allclose(np.asarray(xform.jit(f)(X)), np.asarray(expected), rtol=1e-6)


def test_linearize_drops_tangent_equations_no_output_needs():
    def f(x):
        dead = xnp.exp(x) * 3.0  # noqa: F841  (its tangent is staged, then dropped)
        return xnp.sin(x) * x

    lin = api_autodiff._Linearized(f, (X,), False)
    slim, _ = dce.dce_closed_jaxpr(lin.linear, [True])
    assert len(slim.jaxpr.eqns) < len(lin.linear.jaxpr.eqns)
    assert len(slim.consts) < len(lin.linear.consts)  # the dead residuals are freed
    out, f_jvp = xform.linearize(f, X)
    _, f_jvp_jax = jax.linearize(lambda x: jnp.sin(x) * x, X)
    t = np.float32(0.5) * X
    np.testing.assert_allclose(np.asarray(f_jvp(t)), np.asarray(f_jvp_jax(t)), rtol=1e-6)

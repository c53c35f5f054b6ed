"""Engine bugs that JAX libraries (equinox, blackjax, numpyro, optimistix) hit on xform, each
checked against JAX's own answer: ShapeDtypeStruct outputs, closures over outer tracers
inside custom derivatives and control flow, custom_jvp calls in linear code, cond's branch
types in an L-BFGS step."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import xform
import xform.numpy as xnp

# Both engines side by side: each case is written once against (engine, numpy module).
ENGINES = {"jax": (jax, jnp), "xform": (xform, xnp)}


def _both(case):
    """``case(engine, numpy)`` on xform and on JAX."""
    return case(*ENGINES["xform"]), case(*ENGINES["jax"])


def _assert_trees_close(got, want, rtol=1e-5, atol=1e-6):
    got_leaves, got_tree = jax.tree_util.tree_flatten(got)
    want_leaves, want_tree = jax.tree_util.tree_flatten(want)
    assert str(got_tree) == str(want_tree), (got_tree, want_tree)
    for g, w in zip(got_leaves, want_leaves, strict=True):
        assert np.shape(g) == np.shape(w)
        assert np.asarray(g).dtype == np.asarray(w).dtype
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=rtol, atol=atol)


def _shapes(tree):
    """ShapeDtypeStructs (either engine's) as comparable tuples, None kept."""
    return jax.tree_util.tree_map(
        lambda s: (tuple(s.shape), np.dtype(s.dtype).name, bool(s.weak_type)), tree)


# --------------------------------------------------------------------------- 1. eval_shape


def _sds_outputs(eng, np_):
    s = eng.ShapeDtypeStruct((2, 3), np_.float32)
    scalar = eng.ShapeDtypeStruct((), np_.int32)
    return lambda x: {"a": x * 2, "s": s, "none": None, "nested": (scalar, [x.sum(), s])}


@pytest.mark.parametrize("how", ["eval_shape", "jit.eval_shape", "eval_shape(jit)",
                                 "eval_shape(vmap)", "eval_shape(grad has_aux)",
                                 "make_jaxpr return_shape"])
def test_eval_shape_passes_shape_dtype_struct_outputs_through(how):
    def case(eng, np_):
        f = _sds_outputs(eng, np_)
        x = np_.ones(4)
        if how == "eval_shape":
            return eng.eval_shape(f, x)
        if how == "jit.eval_shape":
            return eng.jit(f).eval_shape(x)
        if how == "eval_shape(jit)":
            return eng.eval_shape(eng.jit(f), eng.ShapeDtypeStruct((4,), np_.float32))
        if how == "eval_shape(vmap)":
            return eng.eval_shape(eng.vmap(f), np_.ones((5, 4)))
        if how == "eval_shape(grad has_aux)":
            return eng.eval_shape(eng.grad(lambda x: (x.sum(), f(x)), has_aux=True), x)
        return eng.make_jaxpr(f, return_shape=True)(x)[1]

    got, want = _both(case)
    assert _shapes(got) == _shapes(want)


def test_shape_dtype_struct_output_is_a_constant_of_its_type_in_the_jaxpr():
    got, want = _both(lambda eng, np_: str(eng.make_jaxpr(
        lambda x: (x, eng.ShapeDtypeStruct((), np_.float32),
                   eng.ShapeDtypeStruct((2,), np_.int32)))(1.0)))
    assert got == want


def test_running_a_shape_dtype_struct_output_says_it_has_no_value():
    f = _sds_outputs(xform, xnp)
    with pytest.raises(TypeError, match="A ShapeDtypeStruct does not have a value"):
        xform.jit(f)(xnp.ones(4))
    with pytest.raises(TypeError, match="A ShapeDtypeStruct does not have a value"):
        jax.jit(_sds_outputs(jax, jnp))(jnp.ones(4))


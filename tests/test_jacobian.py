"""jacfwd, jacrev, hessian (built on vmap) and has_aux outputs, against JAX."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import xform
import xform.numpy as xnp
from tests.harness import assert_same
from xform.core import Tracer
from xform.runtime.array import Array

RNG = np.random.default_rng(0)
X = RNG.standard_normal((2, 3)).astype(np.float32)
Y = RNG.standard_normal(3).astype(np.float32)


def _f(lib):
    return lambda a, b: {"s": lib.sin(a) * b, "t": lib.sum(a**2) * b, "c": lib.cos(b)}


PAIRS = [(xform.jacfwd, jax.jacfwd), (xform.jacrev, jax.jacrev)]


@pytest.mark.parametrize("pair", PAIRS, ids=["jacfwd", "jacrev"])
@pytest.mark.parametrize("argnums", [0, 1, (0, 1)])
def test_pytree_jacobians(pair, argnums):
    ours, theirs = pair
    expected = theirs(_f(jnp), argnums)(X, Y)
    assert_same(ours(_f(xnp), argnums)(X, Y), expected, rtol=1e-5, atol=1e-6)
    assert_same(xform.jit(ours(_f(xnp), argnums))(X, Y), expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("pair", PAIRS, ids=["jacfwd", "jacrev"])
def test_jacobian_is_one_vectorized_program(pair):
    # The basis is vmapped: one sin for the primal, no per-element copies of the program.
    jaxpr = xform.make_jaxpr(pair[0](lambda a: xnp.sin(a) * 2.0))(Y)
    names = [e.primitive.name for e in jaxpr.eqns]
    assert names.count("sin") == 1 and names.count("cos") == 1, jaxpr


def test_hessian_and_nested():
    f = lambda lib: lambda a: lib.sum(lib.sin(a) * a**3)  # noqa: E731
    assert_same(xform.hessian(f(xnp))(X), jax.hessian(f(jnp))(X), rtol=1e-5, atol=1e-5)
    assert_same(
        xform.jacfwd(xform.jacfwd(f(xnp)))(Y),
        jax.jacfwd(jax.jacfwd(f(jnp)))(Y),
        rtol=1e-5,
        atol=1e-5,
    )
    assert_same(
        xform.vmap(xform.hessian(f(xnp)))(X), jax.vmap(jax.hessian(f(jnp)))(X), rtol=1e-5, atol=1e-5
    )


def test_output_independent_of_input():
    for ours, theirs in PAIRS:
        assert_same(ours(lambda a: xnp.ones(2))(Y), theirs(lambda a: jnp.ones(2))(Y))


def _aux_fun(lib):
    return lambda a: (lib.sum(lib.sin(a)), {"cos": lib.cos(a), "a": a})


@pytest.mark.parametrize(
    "name", ["jvp", "vjp", "linearize", "grad", "value_and_grad", "jacfwd", "jacrev"]
)
def test_has_aux_returns_plain_arrays(name):
    # aux is returned undifferentiated: arrays, never tracers of the finished transformation.
    f, fj = _aux_fun(xnp), _aux_fun(jnp)
    calls = {
        "jvp": lambda m, g: m.jvp(g, (Y,), (Y,), has_aux=True)[2],
        "vjp": lambda m, g: m.vjp(g, Y, has_aux=True)[2],
        "linearize": lambda m, g: m.linearize(g, Y, has_aux=True)[2],
        "grad": lambda m, g: m.grad(g, has_aux=True)(Y)[1],
        "value_and_grad": lambda m, g: m.value_and_grad(g, has_aux=True)(Y)[0][1],
        "jacfwd": lambda m, g: m.jacfwd(g, has_aux=True)(Y)[1],
        "jacrev": lambda m, g: m.jacrev(g, has_aux=True)(Y)[1],
    }
    aux = calls[name](xform, f)
    for leaf in jax.tree_util.tree_leaves(aux):
        assert isinstance(leaf, Array) and not isinstance(leaf, Tracer), type(leaf)
    assert_same(aux, calls[name](jax, fj), rtol=1e-6)


def test_has_aux_under_jit_and_vmap():
    f, fj = _aux_fun(xnp), _aux_fun(jnp)
    expected = jax.grad(fj, has_aux=True)(Y)
    assert_same(xform.jit(xform.grad(f, has_aux=True))(Y), expected, rtol=1e-6)
    assert_same(
        xform.vmap(xform.grad(f, has_aux=True))(X),
        jax.vmap(jax.grad(fj, has_aux=True))(X),
        rtol=1e-6,
    )


def _dtype_cases(lib):
    square = lambda z: z * z  # noqa: E731
    z, x, i = np.complex64(1 + 2j), np.float32(1.0), np.int32(1)
    return {
        "jacfwd_complex_in": lambda: lib.jacfwd(square)(z),
        "jacrev_complex_out": lambda: lib.jacrev(square)(z),
        "jacfwd_holomorphic_real": lambda: lib.jacfwd(square, holomorphic=True)(x),
        "jacrev_holomorphic_real": lambda: lib.jacrev(square, holomorphic=True)(x),
        "jacrev_real_part": lambda: lib.jacrev(lambda z: z.real)(z),
        "hessian_complex": lambda: lib.hessian(square)(z),
        "jacrev_int_in": lambda: lib.jacrev(square)(i),
        "jacfwd_int_in": lambda: lib.jacfwd(square)(i),
        "jacfwd_holomorphic": lambda: lib.jacfwd(square, holomorphic=True)(z),
        "jacrev_int_out": lambda: lib.jacrev(lambda x: (x * 2).astype(np.int32))(x),
    }


def test_jacobian_dtype_rules_as_jax():
    """Which input/output dtypes jacfwd/jacrev/hessian take (complex, integer, holomorphic),
    with JAX's values or JAX's TypeError and message."""
    got, want = _dtype_cases(xform), _dtype_cases(jax)
    for name in want:
        try:
            expected = want[name]()
        except TypeError as e:
            with pytest.raises(TypeError) as err:
                got[name]()
            assert str(err.value).split(",")[0] == str(e).split(",")[0], name
            continue
        np.testing.assert_allclose(got[name](), expected, rtol=1e-6, err_msg=name)

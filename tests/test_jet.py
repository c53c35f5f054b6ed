"""xform.experimental.jet against jax.experimental.jet: Taylor terms of compositions of the
common primitives, under jit and grad, and the errors on bad input."""

import jax as J
import jax.numpy as JN
import numpy as np
import pytest
from jax.experimental.jet import jet as jax_jet

import xform as jax
import xform.numpy as jnp
from xform.experimental.jet import jet

X = np.array([0.3, 0.7, 1.2], np.float32)
SERIES = [
    np.array([1.0, 0.5, -0.2], np.float32),
    np.array([0.1, 0.2, 0.3], np.float32),
    np.array([-0.3, 0.1, 0.4], np.float32),
]
W = np.arange(6.0, dtype=np.float32).reshape(3, 2) / 7


def _functions(jx, np_):
    lax = jx.lax
    return {
        "sin": np_.sin,
        "cos": np_.cos,
        "exp": np_.exp,
        "log": np_.log,
        "tanh": np_.tanh,
        "sinh": np_.sinh,
        "logistic": jx.nn.sigmoid,
        "sqrt": np_.sqrt,
        "rsqrt": lax.rsqrt,
        "pow": lambda x: x**2.5,
        "integer_pow": lambda x: x**3,
        "integer_pow_neg": lambda x: lax.integer_pow(x, -2),
        "div": lambda x: np_.sin(x) / (x + 1.0),
        "mul_sub": lambda x: x * np_.exp(x) - x,
        "dot_general": lambda x: np_.tanh(x @ W),
        "reduce_sum": lambda x: np_.sum(x**2),
        "reduce_max": lambda x: np_.max(np_.sin(x)),
        "min": lambda x: np_.min(x * x - x),
        "max": lambda x: np_.maximum(x, 0.7),
        "select_n": lambda x: np_.where(x > 0.5, x**2, -x),
        "structural": lambda x: np_.reshape(np_.outer(x, x), (9,))[::2].T,
        "concatenate": lambda x: np_.concatenate([x, np_.sin(x)]),
        "jit": jx.jit(lambda x: np_.sin(x) * x),
        "convert": lambda x: x.astype(np_.float16).astype(np_.float32) * x,
        "erf": jx.scipy.special.erf,
        "abs": lambda x: np_.abs(x - 0.5),
        "atan2": lambda x: np_.arctan2(x, 2.0 - x),
        "expm1_log1p": lambda x: np_.expm1(np_.log1p(x)),
        "gelu": jx.nn.gelu,
        "logsumexp": jx.nn.logsumexp,
    }


OURS, THEIRS = _functions(jax, jnp), _functions(J, JN)


@pytest.mark.parametrize("name", list(OURS))
def test_terms_match_jax(name):
    ours = jet(OURS[name], (jnp.asarray(X),), ([jnp.asarray(t) for t in SERIES],))
    theirs = jax_jet(THEIRS[name], (JN.asarray(X),), ([JN.asarray(t) for t in SERIES],))
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-5, atol=1e-6)
    for a, b in zip(ours[1], theirs[1], strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


def test_unscaled_terms_pytrees_and_several_arguments():
    def f(np_):
        return lambda x, y: {"a": x * y, "b": np_.sin(x) + y}

    args = ((1.0, 2.0), ((1.0, 0.5), (0.0, 1.0)))
    for scaled in (True, False):
        ours = jet(f(jnp), *args, factorial_scaled=scaled)
        theirs = jax_jet(f(JN), *args, factorial_scaled=scaled)
        for a, b in zip(J.tree.leaves(ours), J.tree.leaves(theirs), strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-6)


def test_sin_derivatives_under_jit_and_grad():
    x = 0.5
    primal, terms = jax.jit(lambda x: jet(jnp.sin, (x,), ((1.0, 0.0, 0.0),)))(x)
    np.testing.assert_allclose(
        [primal, *terms], [np.sin(x), np.cos(x), -np.sin(x), -np.cos(x)], rtol=1e-6
    )
    # d/dx of the second derivative of sin is the third
    np.testing.assert_allclose(
        jax.grad(lambda x: jet(jnp.sin, (x,), ((1.0, 0.0),))[1][1])(x), -np.cos(x), rtol=1e-6
    )


def test_errors_as_jax():
    with pytest.raises(ValueError, match="jet terms have inconsistent lengths"):
        jet(lambda x: x, (1.0,), ((1.0, 2.0), (1.0,)))
    with pytest.raises(ValueError, match="primal value at position 0 is not an array"):
        jet(lambda x: x, ([1.0],), (([1.0],),))
    with pytest.raises(ValueError, match="term 0 for argument 0 is not an array"):
        jet(lambda x: x, (1.0,), (([1.0],),))
    # JAX raises KeyError naming the primitive; xform's error is also a NotImplementedError
    with pytest.raises(KeyError, match="sort"):
        jax_jet(JN.sort, (JN.ones(3),), ((JN.ones(3),),))
    with pytest.raises(KeyError, match="sort") as info:
        jet(jnp.sort, (jnp.ones(3),), ((jnp.ones(3),),))
    assert isinstance(info.value, NotImplementedError)

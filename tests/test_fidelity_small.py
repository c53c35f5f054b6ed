"""Smaller differences from JAX 0.10.2 that JAX's own tests found, each pinned against JAX as
the oracle: gradients through a batched ``cond``, loop carries vmap leaves unbatched, typed
key arrays and the other PRNG implementations, and a handful of library edge cases."""

import jax
import jax.numpy as jnp
import numpy as np

import xform
import xform.numpy as xnp
from xform import lax

# --------------------------------------------------------------------------- batched cond


def _sum_of_batched_cond(vmap, cond, np_):
    """sum(vmap(cond(x > 0, sqrt, identity))): every branch runs on the whole batch."""

    def f(x):
        return np_.sum(vmap(lambda x: cond(x > 0, np_.sqrt, lambda x: x, x))(x))

    return f


def test_grad_of_batched_cond_sends_no_nan_from_the_branch_not_taken():
    x = np.array([0.0, 1.0, 4.0, -2.0], np.float32)
    want = jax.grad(_sum_of_batched_cond(jax.vmap, jax.lax.cond, jnp))(x)
    got = xform.grad(_sum_of_batched_cond(xform.vmap, lax.cond, xnp))(x)
    assert not np.isnan(np.asarray(want)).any()
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)


def test_grad_of_batched_switch_through_a_closed_over_value():
    def f(vmap, switch, np_, c, idx):
        branches = [lambda x: np_.sqrt(c) * x, lambda x: np_.log(c) + x, lambda x: x * x]
        return np_.sum(vmap(lambda i, x: switch(i, branches, x))(idx, np_.ones(3)))

    idx = np.array([2, 2, 1], np.int32)
    c = np.float32(0.0)  # sqrt's and log's derivatives are infinite here
    want = jax.grad(lambda c: f(jax.vmap, jax.lax.switch, jnp, c, idx))(c)
    got = xform.grad(lambda c: f(xform.vmap, lax.switch, xnp, c, idx))(c)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))

"""Smaller differences from JAX 0.10.2 that JAX's own tests found, each pinned against JAX as
the oracle: gradients through a batched ``cond``, loop carries vmap leaves unbatched, typed
key arrays and the other PRNG implementations, and a handful of library edge cases."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

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


# --------------------------------------------------------------------------- forwarding


def _loops(lax_, np_):
    """Loops whose second carry the body only reads (and the predicate never does)."""

    def cond_(x, y):
        return lax_.cond(x < 3, lambda x, y: (x * 2, y), lambda x, y: (x * 3, y), x, y)

    def while_(x, y):
        body = lambda c: (c[0] * 2 + c[1], c[1])  # noqa: E731
        return lax_.while_loop(lambda c: c[0] < 20, body, (x, y))

    def fori_(x, y):
        return lax_.fori_loop(0, x.astype(np_.int32), lambda i, c: (c[0] * 2, c[1]), (x, y))

    def scan_in_cond(x, y):
        def scan(x, y):
            return lax_.scan(lambda c, _: ((c[0] * 2, c[1]), None), (x, y), None, length=2)[0]

        return lax_.cond(x > 1, scan, lambda x, y: (x, y), x, y)

    return [cond_, while_, fori_, scan_in_cond]


def test_vmap_leaves_carries_the_loop_only_reads_unbatched():
    x, y = np.arange(1.0, 4.0, dtype=np.float32), np.float32(3.0)
    for want_f, got_f in zip(_loops(jax.lax, jnp), _loops(lax, xnp), strict=True):
        want = jax.vmap(want_f, in_axes=(0, None), out_axes=(0, None))(x, y)
        got = xform.vmap(got_f, in_axes=(0, None), out_axes=(0, None))(x, y)
        for w, g in zip(want, got, strict=True):
            np.testing.assert_array_equal(np.asarray(g), np.asarray(w))


def test_cond_and_scan_hand_on_what_they_do_not_change():
    y = jnp.array(3.0)

    def f(lax_, x, y):
        return lax_.cond(x < 3, lambda x, y: (x * 2, y), lambda x, y: (x * 3, y), x, y)

    assert jax.vmap(lambda x: f(jax.lax, x, y), out_axes=(0, None))(jnp.arange(3))[1] is y
    y = xnp.array(3.0)
    assert xform.vmap(lambda x: f(lax, x, y), out_axes=(0, None))(xnp.arange(3))[1] is y
    # a y that is an x is the xs themselves: the body returns one output, as JAX's
    for make_jaxpr, lax_ in ((jax.make_jaxpr, jax.lax), (xform.make_jaxpr, lax)):
        jaxpr = make_jaxpr(lambda xs, lax_=lax_: lax_.scan(lambda c, x: (c + 1, x), 0, xs))(
            np.ones(3)
        )
        assert len(jaxpr.eqns[0].params["jaxpr"].jaxpr.outvars) == 1
        assert jaxpr.jaxpr.outvars[1] is jaxpr.jaxpr.invars[0]


# --------------------------------------------------------------------------- scan's unroll


def test_scan_unroll_zero_and_true_run_the_whole_loop_as_jax():
    def run(lax_, unroll, jit):
        f = lambda xs: lax_.scan(lambda c, x: (c + x, c * 2), 0.0, xs, unroll=unroll)  # noqa: E731
        return jit(f)(np.arange(5.0, dtype=np.float32))

    for unroll in (0, True, False, 2, 7, np.int32(3)):
        want = run(jax.lax, unroll, jax.jit)
        got = run(lax, unroll, xform.jit)
        for w, g in zip(want, got, strict=True):
            np.testing.assert_array_equal(np.asarray(g), np.asarray(w))
    for lax_ in (jax.lax, lax):
        jaxpr = jax.make_jaxpr if lax_ is jax.lax else xform.make_jaxpr
        eqn = jaxpr(lambda xs, lax_=lax_: lax_.scan(lambda c, x: (c + x, c), 0.0, xs, unroll=0))(
            np.ones(4)
        )
        assert eqn.eqns[0].params["unroll"] == 0
    texts = [
        xform.jit(lambda xs, u=u: lax.scan(lambda c, x: (c + x, c), 0.0, xs, unroll=u))
        .lower(np.ones(4, np.float32))
        .as_text()
        for u in (0, True, 1)
    ]
    assert texts[0] == texts[1] != texts[2]  # 0 unrolls the whole loop, as True does


def test_scan_unroll_errors_as_jax():
    f = lambda c, x: (c, x)  # noqa: E731
    for lax_ in (jax.lax, lax):
        with pytest.raises(ValueError, match="`unroll` must be a `bool` or a non-negative `int`"):
            lax_.scan(f, 0.0, np.ones(3), unroll=-1)
    for jit, lax_, errors in ((jax.jit, jax.lax, jax.errors), (xform.jit, lax, xform.errors)):
        with pytest.raises(
            errors.ConcretizationTypeError,
            match="The `unroll` argument to `scan` expects a concrete `int` or `bool` value",
        ):
            jit(lambda n, x, lax_=lax_: lax_.scan(f, x, (), 10, unroll=n))(3, 1.0)
        with pytest.raises(
            errors.ConcretizationTypeError,
            match="The `length` argument to `scan` expects a concrete `int` value",
        ):
            jit(lambda n, x, lax_=lax_: lax_.scan(f, x, (), n))(3, 1.0)

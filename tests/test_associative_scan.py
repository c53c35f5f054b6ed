"""lax.associative_scan against jax.lax.associative_scan: values eagerly and under jit (add,
multiply, max, matmul, pytree elements), reverse, axes, odd/even/length-1 lengths, grad, vmap,
the parallel structure of the traced program, and bad input.

Each case is written once against a (lax, numpy) pair, so the same code runs on xform and on
JAX, the oracle.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import xform
import xform.numpy as xnp
from tests.harness import assert_same, check_vmap
from xform import lax
from xform.test_util import check_grads

XF = (lax, xnp)
JX = (jax.lax, jnp)
RNG = np.random.default_rng(0)


def both(case, *args, rtol=None, atol=None):
    """``case`` built on xform, eagerly and under jit, against ``case`` built on JAX."""
    expected = jax.jit(case(*JX))(*args)
    f = case(*XF)
    assert_same(f(*args), expected, rtol, atol, what="eager")
    assert_same(xform.jit(f)(*args), expected, rtol, atol, what="jit")


# --------------------------------------------------------------------------- cases


def scan_op(op, reverse=False, axis=0):
    def case(lx, np_):
        fn = {"add": np_.add, "mul": np_.multiply, "max": np_.maximum}[op]
        return lambda x: lx.associative_scan(fn, x, reverse=reverse, axis=axis)

    return case


def linear_recurrence(reverse=False, axis=0):
    """``h[t] = a[t] * h[t-1] + b[t]`` as a scan of (a, b) pairs."""

    def case(lx, np_):
        def fn(x, y):
            (a1, b1), (a2, b2) = x, y
            return a1 * a2, a2 * b1 + b2

        return lambda a, b: lx.associative_scan(fn, (a, b), reverse=reverse, axis=axis)

    return case


def dict_matmul(lx, np_):
    """A dict of leaves of different trailing shapes: 2x2 matrix products and sums."""

    def fn(x, y):
        return {"m": np_.matmul(x["m"], y["m"]), "s": x["s"] + y["s"]}

    return lambda m, s: lx.associative_scan(fn, {"m": m, "s": s})


# --------------------------------------------------------------------------- values


@pytest.mark.parametrize(
    ("op", "n"),
    [
        ("add", 1),
        ("add", 2),
        ("add", 5),
        ("add", 8),
        ("mul", 3),
        ("mul", 11),
        ("max", 4),
        ("max", 7),
    ],
)
def test_ops_lengths(op, n):
    x = RNG.uniform(0.8, 1.25, (n, 3)) if op == "mul" else RNG.standard_normal((n, 3))
    both(scan_op(op), x.astype(np.float32), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    ("reverse", "axis", "n"),
    [(True, 0, 1), (True, 0, 6), (False, 1, 7), (True, 1, 7), (True, -1, 6), (False, -1, 1)],
)
def test_reverse_axis(reverse, axis, n):
    shape = [2, 3, 4]
    shape[axis] = n
    x = RNG.standard_normal(shape).astype(np.float32)
    # JAX's reverse rejects a negative axis (it reverses before normalizing the axis); xform
    # accepts it, so the oracle gets the same axis counted from the front.
    expected = jax.jit(scan_op("add", reverse, axis % 3)(*JX))(x)
    f = scan_op("add", reverse, axis)(*XF)
    assert_same(f(x), expected, rtol=1e-5, atol=1e-5, what="eager")
    assert_same(xform.jit(f)(x), expected, rtol=1e-5, atol=1e-5, what="jit")


def test_integers_exact():
    x = RNG.integers(-9, 10, (13,)).astype(np.int32)
    both(scan_op("add"), x)
    both(scan_op("max", reverse=True), x)
    np.testing.assert_array_equal(np.asarray(lax.associative_scan(xnp.add, x)), np.cumsum(x))


@pytest.mark.parametrize(("reverse", "n"), [(False, 1), (False, 8), (True, 5)])
def test_pytree_linear_recurrence(reverse, n):
    a = RNG.uniform(0.5, 1.0, (n, 3)).astype(np.float32)
    b = RNG.standard_normal((n, 3)).astype(np.float32)
    both(linear_recurrence(reverse), a, b, rtol=1e-5, atol=1e-5)
    # Against the sequential recurrence itself.
    h, hs = np.zeros(3, np.float32), []
    for t in range(n - 1, -1, -1) if reverse else range(n):
        h = a[t] * h + b[t]
        hs.append(h)
    hs = np.stack(hs[::-1] if reverse else hs)
    _, got = linear_recurrence(reverse)(*XF)(a, b)
    np.testing.assert_allclose(np.asarray(got), hs, rtol=1e-5, atol=1e-5)


def test_pytree_axis1():
    a = RNG.uniform(0.5, 1.0, (3, 6)).astype(np.float32)
    b = RNG.standard_normal((3, 6)).astype(np.float32)
    both(linear_recurrence(axis=1), a, b, rtol=1e-5, atol=1e-5)


def test_dict_matmul():
    m = RNG.standard_normal((7, 2, 2)).astype(np.float32) / 2
    s = RNG.standard_normal((7,)).astype(np.float32)
    both(dict_matmul, m, s, rtol=1e-5, atol=1e-5)


def test_parallel_not_a_loop():
    """Built from slices, concatenations and ``fn``: no loop primitive, log depth."""
    x = np.ones(64, np.float32)
    jaxpr = xform.make_jaxpr(scan_op("add")(*XF))(x)
    prims = {e.primitive.name for e in jaxpr.eqns}
    assert "while" not in prims and "scan" not in prims, prims
    assert sum(e.primitive.name == "add" for e in jaxpr.eqns) == 2 * 6 - 1
    text = xform.jit(scan_op("add")(*XF)).lower(x).as_text()
    assert "stablehlo.while" not in text


# --------------------------------------------------------------------------- transformations


def _loss(case):
    def build(lx, np_):
        f = case(lx, np_)
        return lambda *args: np_.sum(np_.sin(jax.tree_util.tree_leaves(f(*args))[-1]) ** 2)

    return build


@pytest.mark.parametrize(
    "case",
    [scan_op("mul"), scan_op("max", reverse=True, axis=1), scan_op("add", axis=-1)],
    ids=["mul", "max_rev_ax1", "add"],
)
def test_grad(case):
    x = RNG.uniform(0.8, 1.25, (5, 6)).astype(np.float32)
    expected = jax.jit(jax.grad(_loss(case)(*JX)))(x)
    f = xform.grad(_loss(case)(*XF))
    assert_same(f(x), expected, rtol=1e-5, atol=1e-5, what="grad")
    assert_same(xform.jit(f)(x), expected, rtol=1e-5, atol=1e-5, what="jit(grad)")


def test_grad_pytree():
    a = RNG.uniform(0.5, 1.0, (7, 2)).astype(np.float32)
    b = RNG.standard_normal((7, 2)).astype(np.float32)
    expected = jax.jit(jax.grad(_loss(linear_recurrence(True))(*JX), (0, 1)))(a, b)
    f = xform.jit(xform.grad(_loss(linear_recurrence(True))(*XF), (0, 1)))
    assert_same(f(a, b), expected, rtol=1e-5, atol=1e-5)


def test_check_grads(x64):
    a = RNG.uniform(0.5, 1.0, (5, 2))
    b = RNG.standard_normal((5, 2))
    check_grads(linear_recurrence()(*XF), (a, b), order=2, modes=("fwd", "rev"))


def test_vmap():
    x = RNG.standard_normal((4, 5, 3)).astype(np.float32)
    check_vmap(
        scan_op("max", reverse=True, axis=1)(*XF),
        scan_op("max", reverse=True, axis=1)(*JX),
        (x,),
        in_axes=2,
        loop=False,
    )
    a = RNG.uniform(0.5, 1.0, (6, 3, 4)).astype(np.float32)
    b = RNG.standard_normal((6, 3, 4)).astype(np.float32)
    check_vmap(
        linear_recurrence()(*XF),
        linear_recurrence()(*JX),
        (a, b),
        in_axes=(2, 2),
        out_axes=1,
        rtol=1e-5,
        atol=1e-5,
        loop=False,
    )


def test_vmap_of_grad():
    x = RNG.uniform(0.8, 1.25, (3, 6)).astype(np.float32)
    expected = jax.jit(jax.vmap(jax.grad(_loss(scan_op("mul"))(*JX))))(x)
    got = xform.jit(xform.vmap(xform.grad(_loss(scan_op("mul"))(*XF))))(x)
    assert_same(got, expected, rtol=1e-5, atol=1e-5)


# --------------------------------------------------------------------------- bad input


def test_different_lengths():
    a, b = np.ones((3, 2), np.float32), np.ones((4, 2), np.float32)
    fn = linear_recurrence()(*XF)
    with pytest.raises(ValueError, match="same first dimension"):
        fn(a, b)
    with pytest.raises(ValueError, match="same first dimension"):
        linear_recurrence()(*JX)(a, b)


def test_not_callable():
    with pytest.raises(TypeError, match="callable"):
        lax.associative_scan(1, np.ones(3, np.float32))

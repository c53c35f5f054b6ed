"""The reduce_window family and the generic ``lax.reduce`` against JAX: max/avg pools with
VALID/SAME padding, strides and dilations (eager host impl, the one equation compiled, jit),
the specialised primitives JAX picks, gradients (first and second order), JVPs, vmap,
generic reducers with several operands, the StableHLO text, bad inputs."""

from functools import partial

import jax
import numpy as np
import pytest

import xform
from lowering.mlir import lower_to_module, module_text
from tests.harness import assert_same, check_vmap
from xform import lax
from xform.primitives import windowed
from xform.test_util import check_grads

RNG = np.random.default_rng(0)
X = RNG.standard_normal((2, 7, 6, 3)).astype(np.float32)  # NHWC
TOL = dict(rtol=1e-5, atol=1e-5)

# (window, strides, padding, base_dilation, window_dilation) over the H and W dims of NHWC
POOLS = [
    ((3, 3), (2, 2), "VALID", None, None),
    ((2, 3), (1, 2), "SAME", None, None),
    ((2, 2), (1, 1), ((1, 0), (2, 1)), (2, 1), None),
    ((2, 2), (2, 1), "SAME", None, (2, 2)),
]


def _nhwc(pool):
    window, strides, padding, base, wdil = pool
    pad = padding if isinstance(padding, str) else ((0, 0), *padding, (0, 0))
    return (
        (1, *window, 1),
        (1, *strides, 1),
        pad,
        None if base is None else (1, *base, 1),
        None if wdil is None else (1, *wdil, 1),
    )


def _pool(lib, kind, pool):
    """A max, min or sum pool of NHWC inputs, with ``lib`` (xform.lax or jax.lax)."""
    window, strides, padding, base, wdil = _nhwc(pool)
    init, op = {"max": (-np.inf, lib.max), "min": (np.inf, lib.min), "sum": (0.0, lib.add)}[kind]
    return lambda x: lib.reduce_window(x, init, op, window, strides, padding, base, wdil)


def _pools(lib, pool, kinds=("max", "min", "sum")):
    """The pools of ``kinds`` in one function: one compile per library."""
    fns = [_pool(lib, kind, pool) for kind in kinds]
    return lambda x: [f(x) for f in fns]


@pytest.mark.parametrize("pool", POOLS, ids=str)
def test_pools_match_jax(pool):
    expected = jax.jit(_pools(jax.lax, pool))(X)
    assert_same(_pools(lax, pool)(X), expected, **TOL, what="eager")
    assert_same(xform.jit(_pools(lax, pool))(X), expected, **TOL, what="jit")


def test_jax_picks_the_specialised_primitives():
    for kind, name in (
        ("max", "reduce_window_max"),
        ("min", "reduce_window_min"),
        ("sum", "reduce_window_sum"),
    ):
        text = str(xform.make_jaxpr(_pool(lax, kind, POOLS[1]))(X))
        assert name + "[" in text
        # the padding SAME resolves to, as in JAX's jaxpr
        assert "padding=((0, 0), (0, 1), (0, 1), (0, 0))" in text
    # an init that is not the identity: the generic primitive, with the reducer's jaxpr
    text = str(
        xform.make_jaxpr(lambda x: lax.reduce_window(x, 1.0, lax.add, (2,), (1,)))(
            np.ones(4, np.float32)
        )
    )
    assert "reduce_window[" in text and "reduce_window_sum" not in text


def test_avg_pool_ints_and_weak_types():
    x = RNG.integers(-5, 5, (1, 5, 5, 1)).astype(np.int32)

    def f(lib):
        return lambda x: lib.reduce_window(x, 0, lib.add, (1, 2, 2, 1), (1, 2, 2, 1), "SAME")

    assert_same(f(lax)(x), jax.jit(f(jax.lax))(x))

    def g(lib):  # a Python scalar operand stays weak through the specialised primitive
        return lib.reduce_window(2.0, -np.inf, lib.max, (), (), ())

    assert_same(g(lax), g(jax.lax))


def test_max_pool_stablehlo_text():
    closed = xform.make_jaxpr(xform.grad(lambda x: _pool(lax, "max", POOLS[1])(x).sum()))(X)
    text = module_text(lower_to_module(closed, "pool"))
    assert "stablehlo.reduce_window" in text and "stablehlo.select_and_scatter" in text


# --------------------------------------------------------------------------- autodiff


def _jvp(f, x, t):
    return jax.jvp(f, (x,), (t,))


def _vjp(f, x, ct):
    return jax.vjp(f, x)[1](ct)[0]


def _squares(f):
    return lambda x: (f(x) ** 2).sum()


@pytest.mark.parametrize("pool", POOLS[1:3], ids=str)
def test_pool_grads_match_jax(pool):
    f, jf = _pools(lax, pool, ("max", "sum")), _pools(jax.lax, pool, ("max", "sum"))
    primal, vjp = xform.vjp(f, X)
    cts = [RNG.standard_normal(p.shape).astype(np.float32) for p in primal]
    t = RNG.standard_normal(X.shape).astype(np.float32)

    def both(vjp, jvp):
        return lambda x, cts, t: (vjp(x, cts), jvp(x, t))

    expected = jax.jit(both(partial(_vjp, jf), partial(_jvp, jf)))(X, cts, t)
    assert_same((vjp(cts)[0], xform.jvp(f, (X,), (t,))), expected, **TOL)


def test_grad_under_jit_and_window_dilation_sum():
    pool = POOLS[3]
    for kind in ("max", "sum"):
        f, jf = _pool(lax, kind, pool), _pool(jax.lax, kind, pool)
        if kind == "sum":  # JAX has no VJP for max pooling with window dilation either
            assert_same(
                xform.jit(xform.grad(_squares(f)))(X), jax.jit(jax.grad(_squares(jf)))(X), **TOL
            )
        else:
            t = np.ones_like(X)
            assert_same(
                xform.jit(partial(xform.jvp, f))((X,), (t,)),
                jax.jit(partial(_jvp, jf))(X, t),
                **TOL,
            )


def test_second_order():
    x = RNG.permutation(36).reshape(1, 6, 6, 1).astype(np.float32) / 7  # no ties
    for kind in ("max", "sum"):
        f = _pool(lax, kind, ((2, 2), (2, 1), "SAME", None, None))
        check_grads(_squares(f), (x,), order=2, atol=2e-2, rtol=2e-2)
    # the Hessian-vector product of a max pool, against JAX
    f, jf = _pool(lax, "max", POOLS[0]), _pool(jax.lax, "max", POOLS[0])

    def hvp(grad, jvp, f):
        return lambda x, v: jvp(grad(lambda x: (f(x) ** 3).sum()), (x,), (v,))[1]

    v = RNG.standard_normal(X.shape).astype(np.float32)
    assert_same(
        hvp(xform.grad, xform.jvp, f)(X, v), jax.jit(hvp(jax.grad, jax.jvp, jf))(X, v), **TOL
    )


def test_vmap_over_a_non_leading_axis():
    xs = np.stack([X[:1], -X[:1]], 2)  # the batch in the middle
    f, jf = _pools(lax, POOLS[1], ("max", "sum")), _pools(jax.lax, POOLS[1], ("max", "sum"))
    check_vmap(f, jax.jit(jf), (xs,), in_axes=2, out_axes=1, **TOL, loop=False)
    # the max pool gradient (select_and_scatter_add, select_and_gather_add) under vmap
    g = xform.grad(lambda x: (_pool(lax, "max", POOLS[0])(x) ** 2).sum())
    jg = jax.grad(lambda x: (_pool(jax.lax, "max", POOLS[0])(x) ** 2).sum())
    check_vmap(g, jax.jit(jg), (xs,), in_axes=2, **TOL, loop=False, jit=False)


# --------------------------------------------------------------------------- generic reducers


def _affine(lib):
    return lambda a, b: a * b + 0.5


def test_generic_reducer_values_jvp_vmap():
    x = RNG.standard_normal((4, 5)).astype(np.float32)
    f, jf = [
        lambda x, lib=lib: lib.reduce_window(x, np.float32(1), _affine(lib), (2, 2), (1, 2), "SAME")
        for lib in (lax, jax.lax)
    ]
    expected = jax.jit(jf)(x)
    assert_same(f(x), expected, **TOL)
    assert_same(xform.jit(f)(x), expected, **TOL)
    t = RNG.standard_normal(x.shape).astype(np.float32)
    assert_same(xform.jvp(f, (x,), (t,)), jax.jit(partial(_jvp, jf))(x, t), **TOL)
    check_vmap(f, jax.jit(jf), (np.stack([x, 2 * x], 1),), in_axes=1, **TOL, loop=False, jit=False)


def _argmax_pair(lib):
    def reducer(a, b):
        pick = lib.ge(a[0], b[0])
        return lib.select(pick, a[0], b[0]), lib.select(pick, a[1], b[1])

    return reducer


def test_generic_reduce_window_with_two_operands():
    x = RNG.standard_normal((4, 6)).astype(np.float32)
    idx = np.broadcast_to(np.arange(6, dtype=np.int32), x.shape)
    inits = (np.float32(-np.inf), np.int32(-1))
    f, jf = [
        lambda x, i, lib=lib: lib.reduce_window(
            (x, i), inits, _argmax_pair(lib), (2, 3), (1, 2), "SAME"
        )
        for lib in (lax, jax.lax)
    ]
    expected = jax.jit(jf)(x, idx)
    assert_same(f(x, idx), expected)
    assert_same(xform.jit(f)(x, idx), expected)
    # Differentiable next to integer operands (JAX fails here): the tangent of the chosen
    # element, so a tangent equal to x gives back the pooled values.
    tangent = xform.jit(lambda x: xform.jvp(lambda x: f(x, idx)[0], (x,), (x,))[1])(x)
    assert_same(tangent, expected[0])


def test_reduce_monoids_and_several_operands():
    x = RNG.standard_normal((3, 5)).astype(np.float32)
    idx = np.broadcast_to(np.arange(5, dtype=np.int32), x.shape)
    inits = (np.float32(-np.inf), np.int32(0))
    f, jf = [
        lambda x, i, lib=lib: lib.reduce((x, i), inits, _argmax_pair(lib), (1,))
        for lib in (lax, jax.lax)
    ]
    expected = jax.jit(jf)(x, idx)
    assert_same(f(x, idx), expected)
    assert_same(xform.jit(f)(x, idx), expected)
    grad = xform.grad(lambda x: f(x, idx)[0].sum())(x)
    assert_same(grad, (x == x.max(1, keepdims=True)).astype(np.float32))
    # monoids become reduce_<op>, with JAX's weak types
    assert "reduce_sum[" in str(xform.make_jaxpr(lambda x: lax.reduce(x, 0, lax.add, (1,)))(x))
    ints = RNG.integers(0, 8, (3, 4)).astype(np.int32)
    for fn, init in (("bitwise_or", 0), ("bitwise_and", -1), ("max", -(2**31)), ("mul", 1)):
        got = lax.reduce(ints, np.int32(init), getattr(lax, fn), (0,))
        assert_same(got, jax.lax.reduce(ints, np.int32(init), getattr(jax.lax, fn), (0,)))
    assert_same(lax.reduce(3.0, 0.0, lax.add, ()), jax.lax.reduce(3.0, 0.0, jax.lax.add, ()))


def test_reduce_generic_jvp_grad_vmap():
    x = RNG.standard_normal((3, 4)).astype(np.float32)
    f, jf = [
        lambda x, lib=lib: lib.reduce(x, np.float32(1), _affine(lib), (0,))
        for lib in (lax, jax.lax)
    ]
    t = RNG.standard_normal(x.shape).astype(np.float32)
    assert_same(xform.jvp(f, (x,), (t,)), jax.jit(partial(_jvp, jf))(x, t), **TOL)
    assert_same(
        xform.grad(lambda x: f(x).sum())(x), jax.jit(jax.grad(lambda x: jf(x).sum()))(x), **TOL
    )
    check_vmap(f, jax.jit(jf), (np.stack([x, x + 1], 2),), in_axes=2, **TOL, loop=False, jit=False)


def test_shape_tuple_and_select_and_scatter():
    args = ((7, 6), (2, 3), (2, 1), ((1, 0), (0, 2)), (2, 1), (1, 2))
    assert lax.reduce_window_shape_tuple(*args) == jax.lax.reduce_window_shape_tuple(*args)
    # the general select_and_scatter, with ge and add, is the max-pool gradient (here under
    # vmap and jit; select_and_scatter_add eagerly, by its host impl)
    x = RNG.permutation(42).reshape(7, 6).astype(np.float32)
    pads = ((1, 0), (0, 1))
    src = RNG.standard_normal(lax.reduce_window_shape_tuple(x.shape, (2, 3), (2, 1), pads))
    src = src.astype(np.float32)
    expected = windowed._select_and_scatter_add(src, x, lax.ge_p, (2, 3), (2, 1), pads)

    def scatter_max(x, src):
        return windowed._select_and_scatter(
            x, lax.ge, (2, 3), (2, 1), pads, src, np.float32(0), lax.add
        )

    batched = xform.jit(xform.vmap(scatter_max, (1, None), 1))(np.stack([x, x], 1), src)
    assert_same(batched, np.stack([expected, expected], 1))
    with pytest.raises(NotImplementedError, match="'select_and_scatter' not implemented"):
        xform.jvp(lambda x: scatter_max(x, src), (x,), (x,))


# --------------------------------------------------------------------------- bad inputs


def test_bad_inputs():
    x = np.ones((2, 3), np.float32)
    with pytest.raises(TypeError, match=r"wrong number of window_dimensions.*\(2, 3\)"):
        lax.reduce_window(x, -np.inf, lax.max, (2,), (1,), "VALID")
    with pytest.raises(TypeError, match="wrong number of window_dimensions"):
        lax.reduce_window(x, 1.0, lax.mul, (2,), (1,), "SAME")
    with pytest.raises(TypeError, match="inconsistent window_strides"):
        lax.reduce_window(x, 0.0, lax.add, (1, 2), (1,), ((0, 0), (0, 0)))
    with pytest.raises(TypeError, match="must have every element be positive"):
        lax.reduce_window(x, 0.0, lax.add, (0, 2), (1, 1), "VALID")
    with pytest.raises(TypeError, match="inconsistent dtypes for operands and init_values"):
        lax.reduce_window(x, np.int32(1), lax.mul, (1, 2), (1, 1), "VALID")
    with pytest.raises(ValueError, match="same tree structure"):
        lax.reduce_window((x, x), (0.0,), lax.add, (1, 2))
    with pytest.raises(TypeError, match="reduce_window_sum must have a number dtype, got bool"):
        lax.reduce_window(x > 0, False, lax.add, (1, 2), (1, 1), "VALID")
    with pytest.raises(ValueError, match="same tree structure"):
        lax.reduce((x, x), (0.0,), lax.add, (1,))
    with pytest.raises(ValueError, match=r"reduction axes \(3,\).*out-of-bounds"):
        lax.reduce(x, np.float32(1), lax.mul, (3,))
    with pytest.raises(TypeError, match="operand dtypes should match"):
        lax.reduce(x, np.int32(1), lambda a, b: a * b, (0,))

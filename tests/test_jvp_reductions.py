"""JVP rules of the reduction, sorting and linalg families against ``jax.jvp``: primal and
tangent values and dtypes, eagerly and through ``xform.jit``, on hypothesis-drawn inputs;
central finite differences in float64; jvp of jvp; every primitive of the three families has
a rule."""

import functools

import hypothesis
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import strategies as st

import xform
from tests.harness import floats
from xform import lax
from xform.core import Primitive
from xform.interpret import ad
from xform.primitives import convolution, dot, reductions, sorting

jlax = jax.lax
F0 = jax.dtypes.float0

# Primitives of the three families that need no JVP rule, with the reason.
EXEMPT = {}


TIES = st.sampled_from([0.0, 1.0, 2.0])  # few distinct values: ties and zeros are likely
POSITIVE = st.floats(0.25, 2, width=32)


def _conv(m, x, w):
    return m.conv_general_dilated(
        x,
        w,
        (2, 1),
        [(1, 0), (0, 1)],
        lhs_dilation=(1, 2),
        rhs_dilation=(2, 1),
        dimension_numbers=("NHWC", "HWIO", "NHWC"),
        feature_group_count=2,
    )


# name -> (f(lax_module, *args), strategies of the float args, tolerance)
CASES = {
    "reduce_sum": (lambda m, x: m.reduce_sum(x, (0, 2)), [floats((2, 3, 2))]),
    "reduce_prod": (lambda m, x: m.reduce_prod(x, (1,)), [floats((2, 5))]),
    "reduce_prod_zeros": (lambda m, x: m.reduce_prod(x, (0, 1)), [floats((3, 3), TIES)]),
    "reduce_prod_empty": (lambda m, x: m.reduce_prod(x, (1,)), [floats((2, 0))]),
    "reduce_max": (lambda m, x: m.reduce_max(x, (1,)), [floats((3, 4), TIES)]),
    "reduce_min": (lambda m, x: m.reduce_min(x, (0, 1)), [floats((3, 4), TIES)]),
    "cumsum": (lambda m, x: m.cumsum(x, axis=1, reverse=True), [floats((2, 5))]),
    "cumprod": (lambda m, x: m.cumprod(x, axis=0), [floats((7, 2))]),
    "cumprod_zeros": (lambda m, x: m.cumprod(x, axis=1, reverse=True), [floats((2, 6), TIES)]),
    "cummax": (lambda m, x: m.cummax(x, axis=1), [floats((2, 7), TIES)]),
    "cummin": (lambda m, x: m.cummin(x, axis=0, reverse=True), [floats((6, 2), TIES)]),
    "cumlogsumexp": (lambda m, x: m.cumlogsumexp(x, axis=0), [floats((5, 2))]),
    "cumlogsumexp_reverse": (
        lambda m, x: m.cumlogsumexp(x, axis=1, reverse=True),
        [floats((2, 8))],
    ),
    "sort": (lambda m, x: m.sort(x, dimension=0), [floats((4, 3), TIES)]),
    "sort_multi": (
        lambda m, x, v: m.sort((x, v), dimension=1, num_keys=1),
        [floats((2, 5), TIES), floats((2, 5))],
    ),
    "sort_two_keys": (
        lambda m, x, v: m.sort((x, v), dimension=1, num_keys=2),
        [floats((2, 5), TIES), floats((2, 5), TIES)],
    ),
    "sort_int_keys": (
        lambda m, v: m.sort((np.array([3, 1, 2, 1], np.int32), v), num_keys=1),
        [floats((4,))],
    ),
    "top_k": (lambda m, x: m.top_k(x, 3), [floats((2, 5), TIES)]),
    "top_k_axis0": (lambda m, x: m.top_k(x, 2, axis=0), [floats((4, 3))]),
    "dot_general": (
        lambda m, x, y: m.dot_general(x, y, (((2,), (1,)), ((0,), (0,)))),
        [floats((2, 3, 4)), floats((2, 4, 2))],
    ),
    "dot_general_rhs_constant": (
        lambda m, x: m.dot_general(
            x, np.arange(6, dtype=np.float32).reshape(3, 2), (((1,), (0,)), ((), ()))
        ),
        [floats((2, 3))],
    ),
    "dot_general_outer": (
        lambda m, x, y: m.dot_general(x, y, (((), ()), ((), ()))),
        [floats((2,)), floats((3,))],
    ),
    "conv_general_dilated": (_conv, [floats((1, 4, 3, 4)), floats((2, 2, 2, 4))]),
}
# Not differentiable where ties are likely (FD straddles a kink), or nothing to perturb.
NO_FD = {
    "reduce_max",
    "reduce_min",
    "cummax",
    "cummin",
    "sort",
    "sort_multi",
    "sort_two_keys",
    "top_k",
    "top_k_axis0",
    "reduce_prod_empty",
}
# Contractions and scans sum in other orders than XLA: a little more rounding.
TOL = {
    "dot_general": 1e-5,
    "dot_general_rhs_constant": 1e-5,
    "dot_general_outer": 1e-5,
    "conv_general_dilated": 1e-5,
    "cumlogsumexp": 1e-5,
    "cumlogsumexp_reverse": 1e-5,
}


def draw_args(data, strategies):
    primals = [data.draw(s) for s in strategies]
    tangents = [data.draw(floats(p.shape)) for p in primals]
    return primals, tangents


def assert_same(x, j, tol=2e-6):
    xs, js = jax.tree.leaves(x), jax.tree.leaves(j)
    assert len(xs) == len(js)
    for xa, ja in zip(xs, js, strict=True):
        a, b = np.asarray(xa), np.asarray(ja)
        assert a.dtype == b.dtype, (a.dtype, b.dtype)
        assert a.shape == b.shape, (a.shape, b.shape)
        if b.dtype != F0:
            np.testing.assert_allclose(
                a.astype(np.float64), b.astype(np.float64), rtol=tol, atol=tol
            )


@functools.cache
def _jax_jvp(name):
    """JAX's jvp of case ``name``, under one jax.jit (compiled once per shape, where eager
    JAX would compile each of its ops: seconds per case)."""
    f = functools.partial(CASES[name][0], jlax)
    return jax.jit(lambda primals, tangents: jax.jvp(f, primals, tangents))


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
@hypothesis.given(data=st.data())
def test_jvp_matches_jax(name, jit, data):
    f, strategies = CASES[name]
    primals, tangents = draw_args(data, strategies)
    fx = functools.partial(f, lax)
    fx = xform.jit(fx) if jit else fx
    p, t = xform.jvp(fx, tuple(primals), tuple(tangents))
    jp, jt = _jax_jvp(name)(tuple(primals), tuple(tangents))
    tol = TOL.get(name, 2e-6)
    assert_same(p, jp, tol)
    assert_same(t, jt, tol)


@pytest.mark.parametrize("name", sorted(set(CASES) - NO_FD))
@hypothesis.settings(max_examples=4)
@hypothesis.given(data=st.data())
def test_jvp_finite_differences(name, data):
    f, strategies = CASES[name]
    primals, tangents = draw_args(data, strategies)
    primals = [p.astype(np.float64) for p in primals]
    tangents = [t.astype(np.float64) for t in tangents]
    fx = functools.partial(f, lax)
    eps = 1e-6
    with xform.enable_x64():
        try:
            _, t = xform.jvp(fx, tuple(primals), tuple(tangents))
        except TypeError:  # a float32 constant meets a float64 primal: no FD for this case
            return
        plus = fx(*[p + eps * v for p, v in zip(primals, tangents, strict=True)])
        minus = fx(*[p - eps * v for p, v in zip(primals, tangents, strict=True)])
    for ti, pl, mi in zip(
        jax.tree.leaves(t), jax.tree.leaves(plus), jax.tree.leaves(minus), strict=True
    ):
        if np.asarray(ti).dtype == F0:  # an integer output: nothing to difference
            continue
        fd = (np.asarray(pl) - np.asarray(mi)) / (2 * eps)
        np.testing.assert_allclose(np.asarray(ti), fd, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    "name", ["reduce_sum", "reduce_prod", "cumsum", "cumprod", "sort_multi", "dot_general"]
)
@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
@hypothesis.settings(max_examples=4)
@hypothesis.given(data=st.data())
def test_jvp_of_jvp(name, jit, data):
    f, strategies = CASES[name]
    primals, tangents = draw_args(data, strategies)
    _, outer = draw_args(data, strategies)

    def second(jvp, m, wrap):
        inner = wrap(functools.partial(f, m))

        def df(*xs):
            return jvp(inner, xs, tuple(tangents))[1]

        return jvp(df, tuple(primals), tuple(outer))

    p, t = second(xform.jvp, lax, xform.jit if jit else (lambda g: g))
    jp, jt = second(jax.jvp, jlax, lambda g: g)
    tol = TOL.get(name, 1e-5)
    assert_same(p, jp, tol)
    assert_same(t, jt, tol)


INT_VALUED = {
    "argmax": lambda m, x: m.argmax(x, 1, np.int32),
    "argmin": lambda m, x: m.argmin(x, 0, np.int32),
    "top_k_indices": lambda m, x: m.top_k(x, 2)[1],
}


@pytest.mark.parametrize("name", sorted(INT_VALUED))
def test_jvp_integer_outputs_get_float0_tangents(name):
    x = np.array([[1.0, 3.0, 2.0], [0.5, -1.0, 4.0]], np.float32)
    f = INT_VALUED[name]
    p, t = xform.jvp(functools.partial(f, lax), (x,), (np.ones_like(x),))
    jp, jt = jax.jvp(functools.partial(f, jlax), (x,), (np.ones_like(x),))
    assert_same(p, jp)
    assert_same(t, jt)
    assert np.asarray(t).dtype == F0


INT_OPERANDS = {
    "reduce_and": lambda m, x: m.reduce_and(x, (0,)),
    "reduce_or": lambda m, x: m.reduce_or(x, (1,)),
    "reduce_xor": lambda m, x: m.reduce_xor(x, (0, 1)),
    "reduce_max": lambda m, x: m.reduce_max(x, (1,)),
    "cummax": lambda m, x: m.cummax(x, axis=1),
    "cumsum": lambda m, x: m.cumsum(x, axis=0),
    "sort": lambda m, x: m.sort(x, dimension=1),
}


@pytest.mark.parametrize("name", sorted(INT_OPERANDS))
@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_jvp_integer_operands_get_float0_tangents(name, jit):
    x = np.array([[1, 3, 2], [5, -1, 4]], np.int32)
    f = functools.partial(INT_OPERANDS[name], lax)
    p, t = xform.jvp(xform.jit(f) if jit else f, (x,), (np.zeros(x.shape, F0),))
    jp, jt = jax.jvp(functools.partial(INT_OPERANDS[name], jlax), (x,), (np.zeros(x.shape, F0),))
    assert_same(p, jp)
    assert_same(t, jt)


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_jvp_dot_general_preferred_element_type(jit):
    rng = np.random.default_rng(0)
    x, y, tx, ty = (
        rng.standard_normal(s).astype(jnp.bfloat16) for s in ((2, 3), (3, 4), (2, 3), (3, 4))
    )

    def f(m, a, b):
        return m.dot_general(a, b, (((1,), (0,)), ((), ())), preferred_element_type=np.float32)

    fx = functools.partial(f, lax)
    p, t = xform.jvp(xform.jit(fx) if jit else fx, (x, y), (tx, ty))
    jp, jt = jax.jvp(functools.partial(f, jlax), (x, y), (tx, ty))
    assert np.asarray(t).dtype == np.float32
    assert_same(p, jp, 1e-2)
    assert_same(t, jt, 1e-2)


def test_jvp_sort_tangents_follow_the_stable_permutation():
    keys = np.array([2.0, 1.0, 2.0, 1.0], np.float32)
    t = np.array([10.0, 20.0, 30.0, 40.0], np.float32)
    _, tout = xform.jvp(lax.sort, (keys,), (t,))
    np.testing.assert_array_equal(np.asarray(tout), [20.0, 40.0, 10.0, 30.0])


@pytest.mark.parametrize(
    "module", [reductions, sorting, dot, convolution], ids=lambda m: m.__name__
)
def test_every_primitive_has_a_jvp_rule(module):
    prims = [v for k, v in vars(module).items() if k.endswith("_p") and isinstance(v, Primitive)]
    assert prims
    missing = [p.name for p in prims if p not in ad.jvp_rules and p.name not in EXEMPT]
    assert not missing, f"primitives without a JVP rule: {missing}"

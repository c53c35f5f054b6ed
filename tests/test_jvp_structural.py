"""JVP rules of the structural and indexing families against ``jax.jvp``: primal and tangent
values and dtypes, eagerly and through ``xform.jit``, on hypothesis-drawn inputs; central
finite differences in float64; jvp of jvp; every primitive of both families has a rule."""

import functools

import hypothesis
import jax
import numpy as np
import pytest
from hypothesis import strategies as st

import xform
from tests.harness import floats
from xform import lax
from xform.core import Primitive
from xform.interpret import ad
from xform.primitives import gather_scatter, indexing, structural

jlax = jax.lax
F0 = jax.dtypes.float0

# Primitives of the two families that need no JVP rule, with the reason.
EXEMPT = {}


TIES = st.sampled_from([0.0, 1.0, 2.0])  # few distinct values: min/max ties are likely


def gdn(mod, *dims):
    return mod.GatherDimensionNumbers(*dims)


def sdn(mod, *dims):
    return mod.ScatterDimensionNumbers(*dims)


ROWS = np.array([[0], [4], [2], [4]], np.int32)  # repeats row 4
UNIQUE_ROWS = np.array([[3], [0], [2]], np.int32)
PAST_END = np.array([[1], [7], [0]], np.int32)  # row 7 is out of bounds for 5 rows


def _scatter(name, rows, **kw):
    def f(m, x, u):
        return getattr(m, name)(x, rows, u, sdn(m, (1,), (0,), (0,)), **kw)

    return f


# name -> (f(lax_module, *args), strategies of the float args, extra int args (no tangent))
CASES = {
    "broadcast_in_dim": (lambda m, x: m.broadcast_in_dim(x, (2, 3, 4), (2, 1)), [floats((4, 1))]),
    "reshape": (lambda m, x: m.reshape(x, (3, 2)), [floats((2, 3))]),
    "reshape_dimensions": (lambda m, x: m.reshape(x, (6,), (1, 0)), [floats((2, 3))]),
    "squeeze": (lambda m, x: m.squeeze(x, (0, 2)), [floats((1, 3, 1))]),
    "transpose": (lambda m, x: m.transpose(x, (2, 0, 1)), [floats((2, 3, 1))]),
    "rev": (lambda m, x: m.rev(x, (1,)), [floats((2, 3))]),
    "pad": (lambda m, x, v: m.pad(x, v, [(1, -1, 1), (0, 2, 0)]), [floats((3, 2)), floats(())]),
    "pad_operand_only": (lambda m, x: m.pad(x, np.array(7, x.dtype), [(2, 1, 2)]), [floats((3,))]),
    "concatenate": (lambda m, x, y: m.concatenate([x, y, x], 1), [floats((2, 1)), floats((2, 3))]),
    "concatenate_constant": (
        lambda m, x: m.concatenate([np.ones(2, x.dtype), x], 0),
        [floats((3,))],
    ),
    "iota": (lambda m, x: m.mul(m.iota(x.dtype, 4), x), [floats((4,))]),
    "slice": (lambda m, x: m.slice(x, (1, 0), (5, 4), (2, 3)), [floats((5, 4))]),
    "dynamic_slice": (
        lambda m, x: m.dynamic_slice(x, (np.int32(3), np.int32(1)), (2, 2)),
        [floats((4, 3))],
    ),
    "dynamic_slice_traced_index": (
        lambda m, x, i: m.dynamic_slice(x, (i,), (2,)),
        [floats((5,))],
        [np.int32(4)],
    ),
    "dynamic_update_slice": (
        lambda m, x, u, i: m.dynamic_update_slice(x, u, (i, np.int32(0))),
        [floats((4, 2)), floats((2, 2))],
        [np.int32(1)],
    ),
    "dynamic_update_slice_operand_only": (
        lambda m, x: m.dynamic_update_slice(x, np.zeros(2, x.dtype), (np.int32(1),)),
        [floats((4,))],
    ),
    "gather": (lambda m, x: m.gather(x, ROWS, gdn(m, (1,), (0,), (0,)), (1, 3)), [floats((5, 3))]),
    "gather_fill": (
        lambda m, x: m.gather(x, PAST_END, gdn(m, (1,), (0,), (0,)), (1, 2), mode="fill"),
        [floats((5, 3))],
    ),
    "scatter_unique": (
        _scatter("scatter", UNIQUE_ROWS, unique_indices=True),
        [floats((5, 2)), floats((3, 2))],
    ),
    "scatter": (_scatter("scatter", ROWS), [floats((5, 2)), floats((4, 2))]),
    "scatter_past_end": (_scatter("scatter", PAST_END), [floats((5, 2)), floats((3, 2))]),
    "scatter_add": (_scatter("scatter_add", ROWS), [floats((5, 2)), floats((4, 2))]),
    "scatter_mul_unique": (
        _scatter("scatter_mul", UNIQUE_ROWS, unique_indices=True),
        [floats((5, 2)), floats((3, 2))],
    ),
    "scatter_mul_operand_only": (
        lambda m, x: m.scatter_mul(x, ROWS, np.full((4, 2), 3, x.dtype), sdn(m, (1,), (0,), (0,))),
        [floats((5, 2))],
    ),
    "scatter_min": (_scatter("scatter_min", ROWS), [floats((5, 2), TIES), floats((4, 2), TIES)]),
    "scatter_max": (_scatter("scatter_max", ROWS), [floats((5, 2), TIES), floats((4, 2), TIES)]),
    "scatter_max_clip": (
        _scatter("scatter_max", PAST_END, mode="clip"),
        [floats((5, 2), TIES), floats((3, 2), TIES)],
    ),
}
# Not differentiable where ties are likely, or (scatter with repeated rows) piecewise: no FD.
NO_FD = {"scatter_min", "scatter_max", "scatter_max_clip"}


def case(name):
    f, strategies, *ints = CASES[name]
    return f, strategies, (ints[0] if ints else [])


@functools.cache
def jitted(name):
    """One jitted function per case, so that examples share its compilations."""
    return xform.jit(functools.partial(CASES[name][0], lax))


def draw_args(data, strategies):
    primals = [data.draw(s) for s in strategies]
    tangents = [data.draw(floats(p.shape)) for p in primals]
    return primals, tangents


def with_ints(ints):
    return [np.zeros(np.shape(i), F0) for i in ints]


def assert_same(x, j):
    x, j = np.asarray(x), np.asarray(j)
    assert x.dtype == j.dtype, (x.dtype, j.dtype)
    assert x.shape == j.shape, (x.shape, j.shape)
    np.testing.assert_allclose(x, j, rtol=2e-6, atol=1e-6)


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
@hypothesis.given(data=st.data())
def test_jvp_matches_jax(name, jit, data):
    f, strategies, ints = case(name)
    primals, tangents = draw_args(data, strategies)
    fx = jitted(name) if jit else functools.partial(f, lax)
    p, t = xform.jvp(fx, (*primals, *ints), (*tangents, *with_ints(ints)))
    jp, jt = jax.jvp(functools.partial(f, jlax), (*primals, *ints), (*tangents, *with_ints(ints)))
    assert_same(p, jp)
    assert_same(t, jt)


@pytest.mark.parametrize("name", sorted(set(CASES) - NO_FD))
@hypothesis.settings(max_examples=4)
@hypothesis.given(data=st.data())
def test_jvp_finite_differences(name, data):
    f, strategies, ints = case(name)
    primals, tangents = draw_args(data, strategies)
    primals = [p.astype(np.float64) for p in primals]
    tangents = [t.astype(np.float64) for t in tangents]
    fx = functools.partial(f, lax)
    eps = 1e-6
    with xform.enable_x64():
        _, t = xform.jvp(fx, (*primals, *ints), (*tangents, *with_ints(ints)))
        plus = np.asarray(fx(*[p + eps * v for p, v in zip(primals, tangents, strict=True)], *ints))
        minus = np.asarray(
            fx(*[p - eps * v for p, v in zip(primals, tangents, strict=True)], *ints)
        )
        # Windows filled with NaN (gather's mode="fill") have zero tangents, as in JAX.
        fd = np.where(np.isnan(plus), 0, (plus - minus) / (2 * eps))
    assert np.asarray(t).dtype == np.float64
    np.testing.assert_allclose(np.asarray(t), fd, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize(
    "name", ["pad", "gather", "concatenate", "dynamic_update_slice", "scatter_mul_unique"]
)
@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
@hypothesis.settings(max_examples=4)
@hypothesis.given(data=st.data())
def test_jvp_of_jvp(name, jit, data):
    f, strategies, ints = case(name)
    primals, tangents = draw_args(data, strategies)
    _, outer = draw_args(data, strategies)

    def second(jvp, m, wrap):
        inner = wrap(functools.partial(f, m))

        def df(*xs):
            return jvp(inner, (*xs, *ints), (*tangents, *with_ints(ints)))[1]

        return jvp(df, tuple(primals), tuple(outer))

    p, t = second(xform.jvp, lax, xform.jit if jit else (lambda g: g))
    jp, jt = second(jax.jvp, jlax, lambda g: g)
    assert_same(p, jp)
    assert_same(t, jt)


def test_scatter_jvp_with_repeated_indices_masks_then_adds():
    rows = np.array([[1], [1]], np.int32)
    dn = lax.ScatterDimensionNumbers((), (0,), (0,))
    jaxpr = xform.make_jaxpr(
        lambda x, u: xform.jvp(lambda x: lax.scatter(x, rows, u, dn), (x,), (x,))
    )(np.ones(3, np.float32), np.ones(2, np.float32))
    # Which repeated update wins is unspecified: as JAX, scatter ids, mask the losers, add.
    assert "scatter-add" in str(jaxpr)


def test_jvp_integer_operands_get_float0_tangents():
    x = np.arange(6, dtype=np.int32).reshape(2, 3)
    p, t = xform.jvp(
        lambda x: lax.rev(lax.transpose(x, (1, 0)), (0,)), (x,), (np.zeros(x.shape, F0),)
    )
    jp, jt = jax.jvp(
        lambda x: jlax.rev(jlax.transpose(x, (1, 0)), (0,)), (x,), (np.zeros(x.shape, F0),)
    )
    assert_same(p, jp)
    assert np.asarray(t).dtype == np.asarray(jt).dtype == F0
    assert np.shape(t) == np.shape(jt)


def test_scatter_mul_updates_tangent_needs_unique_indices():
    f = functools.partial(_scatter("scatter_mul", ROWS), lax)
    x, u = np.ones((5, 2), np.float32), np.ones((4, 2), np.float32)
    with pytest.raises(NotImplementedError, match="unique_indices=True"):
        xform.jvp(f, (x, u), (x, u))


@pytest.mark.parametrize("module", [structural, indexing, gather_scatter], ids=lambda m: m.__name__)
def test_every_primitive_has_a_jvp_rule(module):
    prims = [v for k, v in vars(module).items() if k.endswith("_p") and isinstance(v, Primitive)]
    assert prims
    missing = [p.name for p in prims if p not in ad.jvp_rules and p.name not in EXEMPT]
    assert not missing, f"primitives without a JVP rule: {missing}"

"""The collectives of xform.lax (psum, pmean, pmax, pmin, all_gather, psum_scatter, ppermute,
pshuffle, all_to_all, axis_index): under xform.pmap against jax.pmap (the oracle), under
xform.vmap with an axis name against the same under xform.pmap, under jit of pmap; several
axis names (pmap of vmap, vmap of pmap, pmap of pmap against vmap of vmap and NumPy);
derivatives against JAX and finite differences; lowering; errors."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import xform
import xform.numpy as xnp
from tests.harness import assert_same, rand
from xform import lax as xl
from xform.test_util import check_grads

SIZES = [1, 2, 4, 8]
RNG = np.random.default_rng(0)
TOL = dict(rtol=1e-5, atol=1e-5)  # sums over devices may be added in another order
F32, I32 = np.dtype(np.float32), np.dtype(np.int32)


def r(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def ring(n, shift=1):
    return [(k, (k + shift) % n) for k in range(n)]


# --------------------------------------------------------------------------- one axis
# name: (body for a lax module and the axis size, per-device shape for the axis size, dtype)

CASES = {
    "psum": (lambda lax, n: lambda x: lax.psum(x, "i"), lambda n: (3,), F32),
    "psum_int": (lambda lax, n: lambda x: lax.psum(x, "i"), lambda n: (2, 3), I32),
    "psum_tuple_name": (lambda lax, n: lambda x: lax.psum(x, ("i",)), lambda n: (3,), F32),
    "psum_pytree": (
        lambda lax, n: lambda x: lax.psum({"a": x, "b": (x * 2.0,)}, "i"),
        lambda n: (3,),
        F32,
    ),
    "psum_python_scalar": (
        lambda lax, n: lambda x: (x + lax.psum(1, "i"), lax.psum(1.5, "i")),
        lambda n: (3,),
        F32,
    ),
    "psum_scalar": (lambda lax, n: lambda x: lax.psum(x.sum(), "i"), lambda n: (3,), F32),
    "pmean": (lambda lax, n: lambda x: lax.pmean(x, "i"), lambda n: (2, 3), F32),
    "pmax": (lambda lax, n: lambda x: lax.pmax(x, "i"), lambda n: (3,), F32),
    "pmin": (lambda lax, n: lambda x: lax.pmin(x, "i"), lambda n: (3,), F32),
    "pmax_int": (lambda lax, n: lambda x: lax.pmax(x, "i"), lambda n: (3,), I32),
    "pmin_int": (lambda lax, n: lambda x: lax.pmin(x, "i"), lambda n: (3,), I32),
    "all_gather": (lambda lax, n: lambda x: lax.all_gather(x, "i"), lambda n: (2, 3), F32),
    "all_gather_axis1": (
        lambda lax, n: lambda x: lax.all_gather(x, "i", axis=1),
        lambda n: (2, 3),
        F32,
    ),
    "all_gather_axis_last": (
        lambda lax, n: lambda x: lax.all_gather(x, "i", axis=-1),
        lambda n: (2, 3),
        F32,
    ),
    "all_gather_tiled": (
        lambda lax, n: lambda x: lax.all_gather(x, "i", tiled=True),
        lambda n: (2, 3),
        F32,
    ),
    "all_gather_tiled_axis1": (
        lambda lax, n: lambda x: lax.all_gather(x, "i", axis=1, tiled=True),
        lambda n: (2, 3),
        F32,
    ),
    "all_gather_int": (lambda lax, n: lambda x: lax.all_gather(x, "i"), lambda n: (3,), I32),
    "psum_scatter": (lambda lax, n: lambda x: lax.psum_scatter(x, "i"), lambda n: (n, 3), F32),
    "psum_scatter_dim1": (
        lambda lax, n: lambda x: lax.psum_scatter(x, "i", scatter_dimension=1),
        lambda n: (2, n),
        F32,
    ),
    "psum_scatter_tiled": (
        lambda lax, n: lambda x: lax.psum_scatter(x, "i", tiled=True),
        lambda n: (2 * n, 3),
        F32,
    ),
    "psum_scatter_tiled_dim1": (
        lambda lax, n: lambda x: lax.psum_scatter(x, "i", scatter_dimension=1, tiled=True),
        lambda n: (3, 2 * n),
        F32,
    ),
    "ppermute_ring": (lambda lax, n: lambda x: lax.ppermute(x, "i", ring(n)), lambda n: (3,), F32),
    "ppermute_back": (
        lambda lax, n: lambda x: lax.ppermute(x, "i", ring(n, n - 1)),
        lambda n: (2, 3),
        I32,
    ),
    "ppermute_partial": (
        lambda lax, n: lambda x: lax.ppermute(x, "i", [(0, n - 1)]),
        lambda n: (3,),
        F32,
    ),
    "pshuffle_reverse": (
        lambda lax, n: lambda x: lax.pshuffle(x, "i", list(range(n))[::-1]),
        lambda n: (3,),
        F32,
    ),
    "all_to_all": (lambda lax, n: lambda x: lax.all_to_all(x, "i", 0, 0), lambda n: (n, 3), F32),
    "all_to_all_split0_concat1": (
        lambda lax, n: lambda x: lax.all_to_all(x, "i", 0, 1),
        lambda n: (n, 3),
        F32,
    ),
    "all_to_all_split1_concat0": (
        lambda lax, n: lambda x: lax.all_to_all(x, "i", 1, 0),
        lambda n: (3, n),
        F32,
    ),
    "all_to_all_tiled": (
        lambda lax, n: lambda x: lax.all_to_all(x, "i", 0, 1, tiled=True),
        lambda n: (2 * n, 3),
        F32,
    ),
    "all_to_all_tiled_same_axis": (
        lambda lax, n: lambda x: lax.all_to_all(x, "i", 1, 1, tiled=True),
        lambda n: (3, 2 * n),
        F32,
    ),
    "axis_index": (lambda lax, n: lambda x: (lax.axis_index("i"), x * 2.0), lambda n: (3,), F32),
    "axis_index_arith": (
        lambda lax, n: lambda x: x * lax.axis_index("i").astype(x.dtype) + lax.axis_index("i"),
        lambda n: (3,),
        F32,
    ),
}


def case_args(name, n):
    _, shape, dtype = CASES[name]
    return (rand(RNG, (n, *shape(n)), dtype),)


def body(name, lax, n):
    return CASES[name][0](lax, n)


# The cases run a family at a time: one program per family and size, whose output names
# each case, so that a mismatch still says which case it is.
FAMILIES = ("reductions", "all_gather", "psum_scatter", "permutes", "all_to_all", "axis_index")


def family(name):
    for prefix in ("psum_scatter", "all_gather", "all_to_all", "axis_index"):
        if name.startswith(prefix):
            return prefix
    return "permutes" if name.startswith(("ppermute", "pshuffle")) else "reductions"


def family_fun(fam, lax, n):
    bodies = {c: body(c, lax, n) for c in CASES if family(c) == fam}
    return lambda xs: {c: f(xs[c]) for c, f in bodies.items()}


@functools.cache
def family_data(fam, n):
    """The arguments of a family's cases on ``n`` devices, and jax.pmap's results on them
    (shared by the tests that run the family under pmap, vmap and jit)."""
    xs = {c: case_args(c, n)[0] for c in sorted(CASES) if family(c) == fam}
    expected = jax.pmap(family_fun(fam, jax.lax, n), axis_name="i")(xs)
    return xs, expected


@functools.cache
def family_pmap(fam, n):
    return xform.pmap(family_fun(fam, xl, n), axis_name="i")


def assert_cases(got, expected, what):
    assert sorted(got) == sorted(expected)
    for c in sorted(expected):
        assert_same(got[c], expected[c], **TOL, what=f"{c}: {what}")


def test_every_case_has_a_family():
    assert {family(c) for c in CASES} == set(FAMILIES)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("fam", FAMILIES)
def test_collectives_under_pmap_and_vmap(fam, n):
    xs, expected = family_data(fam, n)
    got = family_pmap(fam, n)(xs)
    assert_cases(got, expected, "pmap vs jax.pmap")
    on_one_device = xform.vmap(family_fun(fam, xl, n), axis_name="i")(xs)
    assert_cases(on_one_device, got, "vmap vs pmap")


@pytest.mark.parametrize(
    ("fam", "n"), [(f, SIZES[(i + k) % len(SIZES)]) for i, f in enumerate(FAMILIES) for k in (1, 3)]
)
def test_collectives_under_jit_of_pmap(fam, n):
    # A pmap inside a jit is lowered differently (whole operands, sliced per replica).
    xs, expected = family_data(fam, n)
    assert_cases(xform.jit(family_pmap(fam, n))(xs), expected, "jit(pmap)")


@pytest.mark.parametrize("n", [2, 8])
def test_collectives_over_unmapped_values(n):
    # Values that are the same on every device: the vmap rules see them unbatched.
    def f(lax):
        def fun(x, c):
            return (
                lax.psum(c, "i"),
                lax.pmax(c, "i"),
                lax.all_gather(c, "i"),
                lax.psum_scatter(c, "i", tiled=True),
                lax.ppermute(c, "i", ring(n)),
                lax.all_to_all(c, "i", 0, 0, tiled=True),
                x,
            )

        return fun

    x, c = r(n, 2), r(2 * n)
    got = xform.pmap(f(xl), axis_name="i", in_axes=(0, None))(x, c)
    expected = jax.pmap(f(jax.lax), axis_name="i", in_axes=(0, None))(x, c)
    assert_same(got, expected, **TOL)
    assert_same(xform.vmap(f(xl), axis_name="i", in_axes=(0, None))(x, c), got, **TOL)


# --------------------------------------------------------------------------- several axes
# name: (body for a lax module and sizes (ni, nj), per-lane shape, NumPy of the whole x)
# on values x[i, j, ...] mapped over "i" (outer) and "j" (inner).


def _gather_along(x, axis):
    """out[i, j] stacks the values along ``axis``: x[:, j] (axis 0) or x[i, :] (axis 1)."""
    ni, nj = x.shape[:2]
    if axis == 0:
        return np.broadcast_to(np.swapaxes(x, 0, 1)[None], (ni, nj, ni) + x.shape[2:])
    return np.broadcast_to(x[:, None], (ni, nj, nj) + x.shape[2:])


MULTI = {
    "psum_ij": (
        lambda lax, s: lambda x: lax.psum(x, ("i", "j")),
        (2,),
        lambda x: np.broadcast_to(x.sum((0, 1), keepdims=True), x.shape),
    ),
    "psum_ji": (
        lambda lax, s: lambda x: lax.psum(x, ("j", "i")),
        (2,),
        lambda x: np.broadcast_to(x.sum((0, 1), keepdims=True), x.shape),
    ),
    "psum_i": (
        lambda lax, s: lambda x: lax.psum(x, "i"),
        (2,),
        lambda x: np.broadcast_to(x.sum(0, keepdims=True), x.shape),
    ),
    "psum_j": (
        lambda lax, s: lambda x: lax.psum(x, "j"),
        (2,),
        lambda x: np.broadcast_to(x.sum(1, keepdims=True), x.shape),
    ),
    "pmean_ij": (
        lambda lax, s: lambda x: lax.pmean(x, ("i", "j")),
        (2,),
        lambda x: np.broadcast_to(x.mean((0, 1), keepdims=True), x.shape),
    ),
    "pmax_ij": (
        lambda lax, s: lambda x: lax.pmax(x, ("i", "j")),
        (2,),
        lambda x: np.broadcast_to(x.max((0, 1), keepdims=True), x.shape),
    ),
    "pmin_j": (
        lambda lax, s: lambda x: lax.pmin(x, "j"),
        (2,),
        lambda x: np.broadcast_to(x.min(1, keepdims=True), x.shape),
    ),
    "axis_index": (
        lambda lax, s: lambda x: (lax.axis_index("i"), lax.axis_index("j")),
        (2,),
        lambda x: (
            np.broadcast_to(np.arange(x.shape[0], dtype=np.int32)[:, None], x.shape[:2]),
            np.broadcast_to(np.arange(x.shape[1], dtype=np.int32), x.shape[:2]),
        ),
    ),
    # the index along two names, row-major in the order they are named
    "axis_index_ij": (
        lambda lax, s: lambda x: lax.axis_index(("i", "j")),
        (2,),
        lambda x: np.arange(x.shape[0] * x.shape[1], dtype=np.int32).reshape(x.shape[:2]),
    ),
    "axis_index_ji": (
        lambda lax, s: lambda x: lax.axis_index(("j", "i")),
        (2,),
        lambda x: np.arange(x.shape[0] * x.shape[1], dtype=np.int32).reshape(x.shape[1::-1]).T,
    ),
    "all_gather_i": (
        lambda lax, s: lambda x: lax.all_gather(x, "i"),
        (2,),
        lambda x: _gather_along(x, 0),
    ),
    "all_gather_j": (
        lambda lax, s: lambda x: lax.all_gather(x, "j"),
        (2,),
        lambda x: _gather_along(x, 1),
    ),
    "ppermute_i": (
        lambda lax, s: lambda x: lax.ppermute(x, "i", ring(s[0])),
        (2,),
        lambda x: np.roll(x, 1, axis=0),
    ),
    "ppermute_j": (
        lambda lax, s: lambda x: lax.ppermute(x, "j", ring(s[1])),
        (2,),
        lambda x: np.roll(x, 1, axis=1),
    ),
    # per lane (ni, 2): lane (i, j) keeps row i of the sum over i
    "psum_scatter_i": (
        lambda lax, s: lambda x: lax.psum_scatter(x, "i"),
        None,
        lambda x: np.swapaxes(x.sum(0), 0, 1),
    ),
    # per lane (ni, 2): lane (i, j) gets row i from every lane (k, j), stacked in k
    "all_to_all_i": (
        lambda lax, s: lambda x: lax.all_to_all(x, "i", 0, 0),
        None,
        lambda x: np.swapaxes(x, 0, 2),
    ),
}


def multi_args(name, ni, nj):
    shape = MULTI[name][1]
    return r(ni, nj, *((ni, 2) if shape is None else shape))


def assert_reference(got, name, x):
    """``got`` (lanes (i, j) first) is MULTI[name]'s NumPy reference on ``x``."""
    expected = MULTI[name][2](x)
    for g, e in zip(
        jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(expected), strict=True
    ):
        np.testing.assert_allclose(np.asarray(g), e, rtol=1e-5, atol=1e-5)


SHAPES = [(2, 3), (4, 2), (8, 1), (1, 4)]


def _pairs(names, shapes, offsets=(0, 2)):
    return [(c, shapes[(i + k) % len(shapes)]) for i, c in enumerate(names) for k in offsets]


@pytest.mark.parametrize(("name", "sizes"), _pairs(sorted(MULTI), SHAPES, (0,)))
def test_pmap_of_vmap(name, sizes):
    ni, nj = sizes
    x = multi_args(name, ni, nj)
    f = MULTI[name][0]
    got = xform.pmap(xform.vmap(f(xl, sizes), axis_name="j"), axis_name="i")(x)
    expected = jax.pmap(jax.vmap(f(jax.lax, sizes), axis_name="j"), axis_name="i")(x)
    assert_same(got, expected, **TOL, what="pmap(vmap) vs jax")
    on_one_device = xform.vmap(xform.vmap(f(xl, sizes), axis_name="j"), axis_name="i")(x)
    assert_same(on_one_device, got, **TOL, what="vmap(vmap) vs pmap(vmap)")
    assert_reference(got, name, x)


@pytest.mark.parametrize(
    ("name", "sizes"),
    _pairs(
        [
            "psum_ij",
            "psum_i",
            "psum_j",
            "axis_index",
            "axis_index_ij",
            "axis_index_ji",
            "all_gather_i",
            "ppermute_j",
        ],
        SHAPES,
    ),
)
def test_vmap_of_pmap(name, sizes):
    # the vmap ("j") outside, the pmap ("i") inside: x[j, i, ...]
    ni, nj = sizes
    x = multi_args(name, ni, nj)
    f = MULTI[name][0]
    got = xform.vmap(xform.pmap(f(xl, sizes), axis_name="i"), axis_name="j", in_axes=1)(x)
    expected = jax.vmap(jax.pmap(f(jax.lax, sizes), axis_name="i"), axis_name="j", in_axes=1)(x)
    assert_same(got, expected, **TOL, what="vmap(pmap) vs jax")
    on_one_device = xform.vmap(xform.vmap(f(xl, sizes), axis_name="i"), axis_name="j", in_axes=1)(x)
    assert_same(on_one_device, got, **TOL)
    assert_reference(jax.tree_util.tree_map(lambda y: np.swapaxes(y, 0, 1), got), name, x)


NESTED_SHAPES = [(2, 2), (2, 4), (4, 2), (1, 8), (8, 1)]


@pytest.mark.parametrize(("name", "sizes"), _pairs(sorted(MULTI), NESTED_SHAPES))
def test_pmap_of_pmap(name, sizes):
    # jax.pmap of jax.pmap raises a mesh error in JAX 0.10.2: compare with vmap of vmap with
    # the same names, and with NumPy.
    ni, nj = sizes
    x = multi_args(name, ni, nj)
    f = MULTI[name][0]
    got = xform.pmap(xform.pmap(f(xl, sizes), axis_name="j"), axis_name="i")(x)
    on_one_device = xform.vmap(xform.vmap(f(xl, sizes), axis_name="j"), axis_name="i")(x)
    assert_same(got, on_one_device, **TOL, what="pmap(pmap) vs vmap(vmap)")
    assert_reference(got, name, x)


# all_gather and psum_scatter over two names where one is a vmap axis: JAX 0.10.2 fails
# ("axis size doesn't match" under pmap of vmap, "Please open a feature request!" under vmap
# of pmap), so every nesting of pmap and vmap is checked against the others and NumPy.
GATHER_TWO = {
    "all_gather_ij": (
        lambda x: xl.all_gather(x, ("i", "j")),
        lambda x: np.broadcast_to(
            x.reshape((1, 1, -1) + x.shape[2:]),
            x.shape[:2] + (x.shape[0] * x.shape[1],) + x.shape[2:],
        ),
    ),
    "all_gather_ji_tiled": (
        lambda x: xl.all_gather(x, ("j", "i"), axis=0, tiled=True),
        lambda x: np.broadcast_to(
            np.swapaxes(x, 0, 1).reshape((1, 1, -1)), x.shape[:2] + (x.size,)
        ),
    ),
}


def _scattered(x, order, tiled):
    """psum_scatter over both names of ``x`` (lanes (i, j) first, then rows, one column): the
    sum over the lanes, its rows split row-major over the names in ``order``."""
    ni, nj = x.shape[:2]
    total = x.sum((0, 1))  # (rows, 1)
    if order == "ij":
        chunks = total.reshape(ni, nj, -1, 1)
    else:
        chunks = np.swapaxes(total.reshape(nj, ni, -1, 1), 0, 1)
    return chunks if tiled else chunks[:, :, 0]


GATHER_TWO.update(
    {
        "psum_scatter_ij": (
            lambda x: xl.psum_scatter(x, ("i", "j")),
            lambda x: _scattered(x, "ij", False),
        ),
        "psum_scatter_ji_tiled": (
            lambda x: xl.psum_scatter(x, ("j", "i"), tiled=True),
            lambda x: _scattered(x, "ji", True),
        ),
    }
)


@pytest.mark.parametrize("name", sorted(GATHER_TWO))
@pytest.mark.parametrize("sizes", [(2, 4), (4, 2), (1, 8)])
def test_gather_and_scatter_over_a_pmap_and_a_vmap_axis(name, sizes):
    body, reference = GATHER_TWO[name]
    ni, nj = sizes
    rows = {"psum_scatter_ij": 8, "psum_scatter_ji_tiled": 16}.get(name)
    x = r(ni, nj, 2) if rows is None else r(ni, nj, rows, 1)
    nestings = {
        "pmap(vmap)": xform.pmap(xform.vmap(body, axis_name="j"), axis_name="i"),
        "pmap(pmap)": xform.pmap(xform.pmap(body, axis_name="j"), axis_name="i"),
        "vmap(vmap)": xform.vmap(xform.vmap(body, axis_name="j"), axis_name="i"),
    }
    # (psum_scatter sums over the devices in another order than NumPy: TOL)
    for what, f in nestings.items():
        np.testing.assert_allclose(np.asarray(f(x)), reference(x), **TOL, err_msg=what)
    # the vmap outside: lanes (j, i)
    outside = xform.vmap(xform.pmap(body, axis_name="i"), axis_name="j", in_axes=1)(x)
    np.testing.assert_allclose(
        np.swapaxes(np.asarray(outside), 0, 1), reference(x), **TOL, err_msg="vmap(pmap)"
    )


@pytest.mark.parametrize("sizes", [(2, 4), (4, 2)])
def test_grad_of_all_gather_over_a_pmap_and_a_vmap_axis(sizes):
    # The transpose of all_gather over both names is psum_scatter over both: lane (a, b)
    # gets every lane's cotangent of its own slot, ni * nj * w[a * nj + b].
    ni, nj = sizes
    x, w = r(ni, nj, 3), r(ni * nj, 3)
    grad = xform.grad(lambda v: (xl.all_gather(v, ("i", "j")) * w).sum())
    expected = ni * nj * w.reshape(ni, nj, 3)
    for what, f in {
        "pmap(vmap)": xform.pmap(xform.vmap(grad, axis_name="j"), axis_name="i"),
        "pmap(pmap)": xform.pmap(xform.pmap(grad, axis_name="j"), axis_name="i"),
        "vmap(vmap)": xform.vmap(xform.vmap(grad, axis_name="j"), axis_name="i"),
    }.items():
        np.testing.assert_allclose(np.asarray(f(x)), expected, **TOL, err_msg=what)


def test_all_gather_over_three_names():
    # the innermost vmap's name last, then first among the rest: supported
    x = r(2, 2, 2, 1)
    f = xform.pmap(
        xform.vmap(
            xform.vmap(lambda v: xl.all_gather(v, ("i", "j", "k")), axis_name="k"), axis_name="j"
        ),
        axis_name="i",
    )
    np.testing.assert_allclose(
        np.asarray(f(x)), np.broadcast_to(x.reshape(1, 1, 1, 8, 1), (2, 2, 2, 8, 1))
    )
    # the innermost vmap's name in the middle: not supported, said so
    g = xform.pmap(
        xform.vmap(
            xform.vmap(lambda v: xl.all_gather(v, ("i", "j", "k")), axis_name="j"), axis_name="k"
        ),
        axis_name="i",
    )
    with pytest.raises(NotImplementedError, match="'j' must come first or last"):
        g(x)


@pytest.mark.parametrize("sizes", [(2, 4), (4, 2)])
def test_all_gather_over_two_nested_pmap_axes(sizes):
    ni, nj = sizes
    x = r(ni, nj, 3)

    def f(a):
        return (xl.all_gather(a, ("i", "j")), xl.psum(a, ("j", "i")), xl.axis_index(("i", "j")))

    gathered, summed, index = xform.pmap(xform.pmap(f, axis_name="j"), axis_name="i")(x)
    np.testing.assert_allclose(
        np.asarray(gathered), np.broadcast_to(x.reshape(ni * nj, 3), (ni, nj, ni * nj, 3))
    )
    np.testing.assert_allclose(
        np.asarray(summed), np.broadcast_to(x.sum((0, 1)), x.shape), rtol=1e-5, atol=1e-5
    )
    np.testing.assert_array_equal(
        np.asarray(index), np.arange(ni * nj, dtype=np.int32).reshape(ni, nj)
    )


def test_jit_of_nested_pmap():
    x = r(2, 4, 3)

    def f(lax):
        return lambda a: lax.psum(a, "i") * lax.axis_index("j") + lax.pmax(a, "j")

    nested = xform.pmap(xform.pmap(f(xl), axis_name="j"), axis_name="i")
    on_one_device = xform.vmap(xform.vmap(f(xl), axis_name="j"), axis_name="i")(x)
    assert_same(xform.jit(nested)(x), on_one_device, **TOL)
    assert_same(nested(x), on_one_device, **TOL)


# --------------------------------------------------------------------------- derivatives
# Each collective between two nonlinear maps: grad outside the pmap against central finite
# differences and the same on one device (vmap), and pmap of grad against jax.pmap of
# jax.grad (the transpose of psum is psum, as in JAX).

GRAD_CASES = [
    "psum",
    "pmean",
    "all_gather",
    "all_gather_tiled_axis1",
    "psum_scatter",
    "psum_scatter_tiled",
    "ppermute_ring",
    "ppermute_partial",
    "pshuffle_reverse",
    "all_to_all",
    "all_to_all_split0_concat1",
    "all_to_all_tiled",
]
# psum / pmean and ppermute / pshuffle share their rules: finite differences for one of each
FD_CASES = [c for c in GRAD_CASES if c not in ("pmean", "pshuffle_reverse")]


def nonlinear(name, lib, lax, n):
    inner = body(name, lax, n)
    return lambda x: lib.sin(inner(lib.tanh(x) * x)) ** 2


@pytest.mark.parametrize("name", FD_CASES)
def test_grad_outside_pmap(name):
    n = [2, 4][GRAD_CASES.index(name) % 2]
    (x,) = case_args(name, n)
    pmapped = xform.pmap(nonlinear(name, xnp, xl, n), axis_name="i")
    vmapped = xform.vmap(nonlinear(name, xnp, xl, n), axis_name="i")
    w = r(*pmapped(x).shape)

    def loss(f):
        return lambda x: (f(x) * w).sum()

    assert_same(xform.grad(loss(pmapped))(x), xform.grad(loss(vmapped))(x), **TOL)
    check_grads(pmapped, (x,), order=1)


# JAX 0.10.2 cannot transpose a non-tiled all_to_all whose split and concat axes differ
# (ValueError: Expected cotangent type float32[4,3,1] but got float32[4,1,3]), under pmap or
# vmap: for that case the oracle is the same movement written with jnp.
_ALL_TO_ALL_01 = "all_to_all_split0_concat1"


def _all_to_all_01_total(w):
    # lane i's all_to_all(x, split 0, concat 1) is y[i, c, j] = x[j, i, c]
    return lambda x: (jnp.sin((jnp.tanh(x) * x).transpose(1, 2, 0)) ** 2 * w).sum()


@pytest.mark.parametrize("name", GRAD_CASES)
def test_pmap_of_grad(name):
    # Each device's gradient is that of the sum of all devices' losses with respect to its
    # own input (the transposes of the collectives carry the cotangents back).
    n = [4, 2][GRAD_CASES.index(name) % 2]
    (x,) = case_args(name, n)
    vmapped = xform.vmap(nonlinear(name, xnp, xl, n), axis_name="i")
    w = r(*vmapped(x).shape)

    def step(lib, lax, grad):
        f = nonlinear(name, lib, lax, n)
        return grad(lambda a, v: (f(a) * v).sum())

    got = xform.pmap(step(xnp, xl, xform.grad), axis_name="i")(x, w)
    if name == _ALL_TO_ALL_01:
        expected = jax.grad(_all_to_all_01_total(w))(x)
    else:
        expected = jax.pmap(step(jnp, jax.lax, jax.grad), axis_name="i")(x, w)
    assert_same(got, expected, **TOL)
    assert_same(got, xform.grad(lambda a: (vmapped(a) * w).sum())(x), **TOL)


@pytest.mark.parametrize("name", ["pmax", "pmin"])
def test_pmax_pmin_are_not_differentiable(name):
    x = r(2, 3)
    f = xform.pmap(lambda a: getattr(xl, name)(a, "i"), axis_name="i")
    message = f"Differentiation rule for '{name}' not implemented"
    with pytest.raises(NotImplementedError, match=message):
        xform.grad(lambda a: f(a).sum())(x)
    with pytest.raises(NotImplementedError, match=message):
        xform.jvp(f, (x,), (x,))
    with pytest.raises(NotImplementedError, match=message):
        xform.pmap(xform.grad(lambda a: getattr(xl, name)(a, "i").sum()), axis_name="i")(x)
    with pytest.raises(NotImplementedError, match=message):  # as in JAX
        jax.grad(
            lambda a: jax.pmap(lambda b: getattr(jax.lax, name)(b, "i"), axis_name="i")(a).sum()
        )(x)


def test_vmap_of_grad_of_psum_matches_pmap():
    x = r(4, 3)
    step = xform.grad(lambda a: xl.psum(xnp.sin(a) * a, "i").sum())
    assert_same(xform.vmap(step, axis_name="i")(x), xform.pmap(step, axis_name="i")(x), **TOL)


# --------------------------------------------------------------------------- lowering

_OPS = {
    "psum": ("psum", "stablehlo.all_reduce"),
    "pmax": ("pmax", "stablehlo.all_reduce"),
    "all_gather": ("all_gather", "stablehlo.all_gather"),
    "psum_scatter": ("psum_scatter", "stablehlo.reduce_scatter"),
    "ppermute_ring": ("ppermute", "stablehlo.collective_permute"),
    "all_to_all": ("all_to_all", "stablehlo.all_to_all"),
    "axis_index": ("axis_index", "stablehlo.replica_id"),
}


@pytest.mark.parametrize("name", sorted(_OPS))
def test_lowered_jit_of_pmap(name):
    n = 4
    args = case_args(name, n)
    text = xform.jit(xform.pmap(body(name, xl, n), axis_name="i")).lower(*args).as_text()
    assert "mhlo.num_replicas = 4" in text
    assert _OPS[name][1] in text
    if name == "ppermute_ring":
        assert "source_target_pairs = dense<[[0, 1], [1, 2], [2, 3], [3, 0]]>" in text
    elif name != "axis_index":
        assert "replica_groups = dense<[[0, 1, 2, 3]]>" in text


def test_lowered_replica_groups_of_nested_pmaps():
    def f(a):
        return (
            xl.psum(a, "j"),
            xl.psum(a, "i"),
            xl.psum(a, ("i", "j")),
            xl.ppermute(a, "i", [(0, 1), (1, 0)]),
        )

    nested = xform.pmap(xform.pmap(f, axis_name="j"), axis_name="i")
    text = xform.jit(nested).lower(r(2, 4, 3)).as_text()
    assert "mhlo.num_replicas = 8" in text
    assert "replica_groups = dense<[[0, 1, 2, 3], [4, 5, 6, 7]]>" in text
    assert "replica_groups = dense<[[0, 4], [1, 5], [2, 6], [3, 7]]>" in text
    assert "replica_groups = dense<[[0, 1, 2, 3, 4, 5, 6, 7]]>" in text
    assert (
        "source_target_pairs = dense<[[0, 4], [4, 0], [1, 5], [5, 1], [2, 6], [6, 2], "
        "[3, 7], [7, 3]]>"
    ) in text


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    "collective",
    [
        lambda x: xl.psum(x, "j"),
        lambda x: xl.pmean(x, "j"),
        lambda x: xl.pmax(x, "j"),
        lambda x: xl.pmin(x, "j"),
        lambda x: xl.all_gather(x, "j"),
        lambda x: xl.psum_scatter(x, "j"),
        lambda x: xl.ppermute(x, "j", [(0, 1)]),
        lambda x: xl.all_to_all(x, "j", 0, 0),
        lambda x: xl.axis_index("j") + x,
        lambda x: xl.psum(x, ("i", "j")),
    ],
)
def test_unbound_axis_name(collective):
    x = r(2, 2)
    with pytest.raises(NameError, match=r"unbound axis name: 'j'.*bound here .* are \['i'\]"):
        xform.pmap(collective, axis_name="i")(x)
    with pytest.raises(NameError, match=r"unbound axis name: 'j'.*bound here .* are \['i'\]"):
        xform.vmap(collective, axis_name="i")(x)
    # outside any map ('i' is not bound either)
    for run in (collective, xform.jit(collective), xform.make_jaxpr(collective)):
        with pytest.raises(NameError, match=r"unbound axis name: '[ij]'.* are \[\]"):
            run(x[0])


def test_unnamed_pmap_binds_no_name():
    with pytest.raises(NameError, match=r"unbound axis name: 'i'"):
        xform.pmap(lambda a: xl.psum(a, "i"))(r(2, 2))


def test_ppermute_errors():
    x = r(4, 2)
    with pytest.raises(ValueError, match=r"ppermute sources and destinations must be unique"):
        xform.pmap(lambda a: xl.ppermute(a, "i", [(0, 1), (1, 1)]), axis_name="i")(x)
    with pytest.raises(ValueError, match=r"ppermute sources and destinations must be unique"):
        xform.pmap(lambda a: xl.ppermute(a, "i", [(0, 1), (0, 2)]), axis_name="i")(x)
    with pytest.raises(
        ValueError,
        match=r"indices \[5\] in perm .* out of range for axis 'i' "
        r"of size 4",
    ):
        xform.pmap(lambda a: xl.ppermute(a, "i", [(0, 5)]), axis_name="i")(x)
    with pytest.raises(ValueError, match=r"indices \[-1\] .* out of range"):
        xform.pmap(lambda a: xl.ppermute(a, "i", [(-1, 0)]), axis_name="i")(x)
    with pytest.raises(ValueError, match=r"pshuffle: perm must be a permutation of range\(4\)"):
        xform.pmap(lambda a: xl.pshuffle(a, "i", [0, 0, 1, 2]), axis_name="i")(x)


def test_psum_scatter_and_all_to_all_sizes():
    x = r(4, 3, 2)
    with pytest.raises(
        ValueError,
        match=r"psum_scatter: dimension 0 of the operand \(shape "
        r"\(3, 2\)\) must equal the axis size 4",
    ):
        xform.pmap(lambda a: xl.psum_scatter(a, "i"), axis_name="i")(x)
    with pytest.raises(
        ValueError,
        match=r"psum_scatter: dimension 1 .* has size 2, not a "
        r"multiple of the axis size 4",
    ):
        xform.pmap(
            lambda a: xl.psum_scatter(a, "i", scatter_dimension=1, tiled=True), axis_name="i"
        )(x)
    with pytest.raises(
        ValueError,
        match=r"all_to_all: the split axis 0 .* must equal the axis "
        r"size 4",
    ):
        xform.pmap(lambda a: xl.all_to_all(a, "i", 0, 1), axis_name="i")(x)
    with pytest.raises(
        ValueError,
        match=r"all_to_all: the split axis 1 .* not a multiple of "
        r"the axis size 4",
    ):
        xform.vmap(lambda a: xl.all_to_all(a, "i", 1, 0, tiled=True), axis_name="i")(x)


def test_axis_index_groups_are_not_supported():
    with pytest.raises(NotImplementedError, match=r"psum: axis_index_groups is not supported"):
        xform.pmap(lambda a: xl.psum(a, "i", axis_index_groups=[[0, 1]]), axis_name="i")(r(2, 2))

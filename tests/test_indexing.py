"""The indexing family (slice, dynamic_slice, dynamic_update_slice, gather, the scatters and
their wrappers) against jax.lax with the same arguments: values, dtypes and weak types,
eagerly and under jit, with out-of-bounds and negative indices; jaxpr and StableHLO text;
every bad-input error."""

import hypothesis
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import strategies as st

import xform
from tests.harness import assert_same, check_against_jax, rand
from xform import lax
from xform.lax import _indexing
from xform.primitives import gather_scatter, indexing

jlax = jax.lax

DTYPES = [
    np.dtype(d)
    for d in (np.bool_, np.int8, np.int32, np.uint8, np.float16, jnp.bfloat16, np.float32)
]
NUMERIC = [d for d in DTYPES if d != np.bool_]
INDEX_DTYPES = [np.dtype(d) for d in (np.int32, np.int8, np.uint8, np.int16)]
MODES = [None, "clip", "fill", "promise_in_bounds"]


def index_value(draw, dim, dtype):
    """A start index around ``[0, dim)``: in bounds, negative or past the end."""
    lo = 0 if np.issubdtype(dtype, np.unsignedinteger) else -dim - 2
    return dtype.type(draw(st.integers(lo, dim + 2)))


def jax_dnums(dn):
    cls = (
        jlax.GatherDimensionNumbers
        if isinstance(dn, lax.GatherDimensionNumbers)
        else jlax.ScatterDimensionNumbers
    )
    return cls(*dn)


# --------------------------------------------------------------------------- slice


@hypothesis.given(st.data())
def test_slice(data):
    dtype = data.draw(st.sampled_from(DTYPES))
    shape = tuple(data.draw(st.lists(st.integers(0, 5), min_size=1, max_size=3)))
    starts, limits, strides = [], [], []
    for d in shape:
        s = data.draw(st.integers(0, d))
        starts.append(s)
        limits.append(data.draw(st.integers(s, d)))
        strides.append(data.draw(st.integers(1, 3)))
    x = rand(np.random.default_rng(data.draw(st.integers(0, 99))), shape, dtype)
    strides = data.draw(st.sampled_from([None, tuple(strides)]))
    check_against_jax(
        lambda a: lax.slice(a, starts, limits, strides),
        lambda a: jlax.slice(a, starts, limits, strides),
        x,
    )


@pytest.mark.parametrize(
    "start,limit,stride,axis",
    [(1, 4, 1, 0), (-3, None, 2, 1), (None, -1, 1, 1), (0, 0, 1, 0), (None, None, 3, -1)],
)
def test_slice_in_dim(start, limit, stride, axis):
    x = np.arange(20, dtype=np.float32).reshape(4, 5)
    check_against_jax(
        lambda a: lax.slice_in_dim(a, start, limit, stride, axis),
        lambda a: jlax.slice_in_dim(a, start, limit, stride, axis % 2),
        x,
    )


@pytest.mark.parametrize(
    "index,axis,keepdims", [(0, 0, True), (-1, 1, False), (2, 1, True), (-4, 0, False)]
)
def test_index_in_dim(index, axis, keepdims):
    x = np.arange(20, dtype=np.int32).reshape(4, 5)
    check_against_jax(
        lambda a: lax.index_in_dim(a, index, axis, keepdims),
        lambda a: jlax.index_in_dim(a, index, axis, keepdims),
        x,
    )


def test_slice_weak_type_and_text():
    check_against_jax(
        lambda a: lax.slice(lax.broadcast(a, (4,)), (1,), (3,)),
        lambda a: jlax.slice(jlax.broadcast(a, (4,)), (1,), (3,)),
        2.0,
    )
    x = np.zeros((3, 4), np.float32)
    f = lambda a: lax.slice(a, (1, 0), (3, 4), (1, 2))  # noqa: E731
    assert "stablehlo.slice %arg0 [1:3, 0:4:2]" in xform.jit(f).lower(x).as_text()
    assert "slice[limit_indices=(3, 4) start_indices=(1, 0) strides=(1, 2)]" in str(
        xform.make_jaxpr(f)(x)
    )


# --------------------------------------------------------------------------- dynamic_slice


@st.composite
def dynamic_case(draw):
    """An operand, a window that fits it, and (possibly out-of-range) start indices."""
    dtype = draw(st.sampled_from(DTYPES))
    shape = tuple(draw(st.lists(st.integers(0, 5), min_size=1, max_size=3)))
    sizes = tuple(draw(st.integers(0, d)) for d in shape)
    idx_dtype = draw(st.sampled_from(INDEX_DTYPES))
    starts = tuple(index_value(draw, d, idx_dtype) for d in shape)
    x = rand(np.random.default_rng(draw(st.integers(0, 99))), shape, dtype)
    return x, sizes, starts


@hypothesis.given(dynamic_case())
def test_dynamic_slice(case):
    x, sizes, starts = case
    check_against_jax(
        lambda a, *i: lax.dynamic_slice(a, i, sizes),
        lambda a, *i: jlax.dynamic_slice(a, i, sizes),
        x,
        *starts,
    )


@hypothesis.given(dynamic_case(), st.booleans())
def test_dynamic_update_slice(case, negative_ok):
    x, sizes, starts = case
    update = rand(np.random.default_rng(1), sizes, x.dtype)
    kw = {"allow_negative_indices": negative_ok}
    if not negative_ok:  # 0-d arrays are not static: negative ones clamp to 0, as in JAX
        starts = [np.asarray(i) for i in starts]
    check_against_jax(
        lambda a, u, *i: lax.dynamic_update_slice(a, u, i, **kw),
        lambda a, u, *i: jlax.dynamic_update_slice(a, u, i, **kw),
        x,
        update,
        *starts,
    )


def test_dynamic_slice_static_and_array_indices():
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    for starts in [(1, -2), (7, 3), np.array([2, -9]), (np.int8(-1), np.int8(2))]:
        check_against_jax(
            lambda a, s=starts: lax.dynamic_slice(a, s, (2, 3)),
            lambda a, s=starts: jlax.dynamic_slice(a, s, (2, 3)),
            x,
        )
    # A traced 1-D array of start indices is split into scalars.
    check_against_jax(
        lambda a, s: lax.dynamic_slice(a, s, (2, 3)),
        lambda a, s: jlax.dynamic_slice(a, s, (2, 3)),
        x,
        np.array([3, -1], np.int32),
    )


@pytest.mark.parametrize("index", [0, 3, -1, -7, 9])
def test_dynamic_in_dim_wrappers(index):
    x = np.arange(20, dtype=np.int32).reshape(4, 5)
    u = -np.arange(8, dtype=np.int32).reshape(4, 2)
    i = np.int32(index)
    check_against_jax(
        lambda a, i: lax.dynamic_slice_in_dim(a, i, 2, axis=1),
        lambda a, i: jlax.dynamic_slice_in_dim(a, i, 2, axis=1),
        x,
        i,
    )
    check_against_jax(
        lambda a, i: lax.dynamic_index_in_dim(a, i, 0, keepdims=False),
        lambda a, i: jlax.dynamic_index_in_dim(a, i, 0, keepdims=False),
        x,
        i,
    )
    check_against_jax(
        lambda a, u, i: lax.dynamic_update_slice_in_dim(a, u, i, 1),
        lambda a, u, i: jlax.dynamic_update_slice_in_dim(a, u, i, 1),
        x,
        u,
        i,
    )
    check_against_jax(
        lambda a, u, i: lax.dynamic_update_index_in_dim(a, u, i, 0),
        lambda a, u, i: jlax.dynamic_update_index_in_dim(a, u, i, 0),
        x,
        u[:, 0].reshape(4)[:1].repeat(5),
        index,
    )


def test_dynamic_slice_text():
    x = np.zeros((3, 4), np.float32)
    f = lambda a, i: lax.dynamic_slice(a, (i, 1), (2, 2))  # noqa: E731
    jaxpr = str(xform.make_jaxpr(f)(x, 1))
    assert "lt b 0:i32[]" in jaxpr and "select_n" in jaxpr
    assert "dynamic_slice[slice_sizes=(2, 2)] a e 1:i32[]" in jaxpr
    text = xform.jit(f).lower(x, 1).as_text()
    assert "stablehlo.dynamic_slice %arg0, %2, %c_1, sizes = [2, 2]" in text
    g = lambda a, u, i: lax.dynamic_update_slice(a, u, (i, 1))  # noqa: E731
    assert "stablehlo.dynamic_update_slice %arg0, %arg1" in (
        xform.jit(g).lower(x, x[:2, :2], 1).as_text()
    )


def test_dynamic_weak_type():
    # dynamic_slice keeps the operand's weak type; dynamic_update_slice needs all weak.
    check_against_jax(
        lambda a: lax.dynamic_slice(lax.broadcast(a, (3,)), (1,), (2,)),
        lambda a: jlax.dynamic_slice(jlax.broadcast(a, (3,)), (1,), (2,)),
        1.5,
    )
    check_against_jax(
        lambda a: lax.dynamic_update_slice(lax.broadcast(a, (3,)), lax.broadcast(a, (1,)), (1,)),
        lambda a: jlax.dynamic_update_slice(jlax.broadcast(a, (3,)), jlax.broadcast(a, (1,)), (1,)),
        1.5,
    )


# --------------------------------------------------------------------------- gather / scatter


@st.composite
def gather_case(draw):
    """Every kind of gather: any subset of operand dims indexed (in any order), collapsed or
    kept as windows, an optional batching dim, any placement of the offset dims in the output,
    and indices in and out of bounds."""
    rank = draw(st.integers(1, 3))
    shape = [draw(st.integers(1, 4)) for _ in range(rank)]
    batching = rank >= 2 and draw(st.booleans())
    operand_bdims = (0,) if batching else ()
    free = [d for d in range(rank) if d not in operand_bdims]
    index_map = tuple(draw(st.permutations(free))[: draw(st.integers(0, len(free)))])
    collapsed = tuple(d for d in free if draw(st.booleans()))
    sizes = tuple(
        1 if d in operand_bdims or d in collapsed else draw(st.integers(0, shape[d]))
        for d in range(rank)
    )
    batch_shape = [draw(st.integers(0, 3)) for _ in range(draw(st.integers(0, 2)))]
    indices_bdims = ()
    if batching:
        pos = draw(st.integers(0, len(batch_shape)))
        batch_shape.insert(pos, shape[0])
        indices_bdims = (pos,)
    n_offset = rank - len(collapsed) - len(operand_bdims)
    out_rank = len(batch_shape) + n_offset
    offset_dims = tuple(sorted(draw(st.permutations(range(out_rank)))[:n_offset]))
    dn = lax.GatherDimensionNumbers(offset_dims, collapsed, index_map, operand_bdims, indices_bdims)
    idx_dtype = draw(st.sampled_from(INDEX_DTYPES))
    indices = np.array(
        [
            index_value(draw, shape[d], idx_dtype)
            for _ in range(int(np.prod(batch_shape)))
            for d in index_map
        ],
        idx_dtype,
    ).reshape(*batch_shape, len(index_map))
    return tuple(shape), dn, sizes, indices


@hypothesis.given(gather_case(), st.sampled_from(DTYPES), st.sampled_from(MODES))
def test_gather(case, dtype, mode):
    shape, dn, sizes, indices = case
    x = rand(np.random.default_rng(0), shape, dtype)
    # tests/harness.py compares bfloat16 exactly, where NaN (the default fill) != NaN; the
    # bfloat16 NaN fill has its own test below.
    fill = 1.5 if dtype == jnp.bfloat16 else None
    check_against_jax(
        lambda a, i: lax.gather(a, i, dn, sizes, mode=mode, fill_value=fill),
        lambda a, i: jlax.gather(a, i, jax_dnums(dn), sizes, mode=mode, fill_value=fill),
        x,
        indices,
    )


def _scatter_dnums(dn):
    return lax.ScatterDimensionNumbers(*dn)  # the transpose of a gather, field by field


def _positions(shape, dn, sizes, indices):
    """For each update element, the operand position it lands on (windows clamped in)."""
    iota = np.arange(int(np.prod(shape)), dtype=np.int32).reshape(shape)
    return np.asarray(jlax.gather(iota, indices, jax_dnums(dn), sizes, mode="clip"))


SCATTERS = ["scatter", "scatter_add", "scatter_mul", "scatter_min", "scatter_max"]


@hypothesis.given(
    gather_case(), st.sampled_from(DTYPES), st.sampled_from(MODES), st.sampled_from(SCATTERS)
)
def test_scatter(case, dtype, mode, name):
    shape, dn, sizes, indices = case
    # XLA applies only the last of several updates when the index vector is empty (an XLA
    # quirk xform's NumPy impl does not copy): keep such cases to one update.
    hypothesis.assume(
        indices.shape[-1] > 0 or indices.size == 0 and np.prod(indices.shape[:-1]) <= 1
    )
    if dtype == np.bool_ and name in ("scatter_add", "scatter_mul"):
        dtype = np.dtype(np.int8)
    rng = np.random.default_rng(0)
    x = rand(rng, shape, dtype)
    pos = _positions(shape, dn, sizes, indices)
    if name == "scatter":
        # Several windows may write one element, in an order XLA leaves open: make every
        # write to an element carry the same value, so the result does not depend on it.
        updates = rand(np.random.default_rng(pos.size), (int(np.prod(shape)),), dtype)[pos]
    else:
        updates = rand(rng, pos.shape, dtype)
    sdn = _scatter_dnums(dn)
    check_against_jax(
        lambda a, i, u: getattr(lax, name)(a, i, u, sdn, mode=mode),
        lambda a, i, u: getattr(jlax, name)(a, i, u, jax_dnums(sdn), mode=mode),
        x,
        indices,
        updates,
    )


# NumPy-style integer-array indexing, as xform.numpy will emit it: x[idx], x[:, idx],
# x[i, j] and x.at[idx].set/add/... with negative and out-of-range entries.
INDEXING = [
    # operand shape, dims, slice sizes, indices
    ((5, 3), lax.GatherDimensionNumbers((1,), (0,), (0,)), (1, 3), [[0], [4], [-1], [7], [2]]),
    ((3, 5), lax.GatherDimensionNumbers((0,), (1,), (1,)), (3, 1), [[1], [1], [9]]),
    ((4, 5), lax.GatherDimensionNumbers((), (0, 1), (0, 1)), (1, 1), [[0, 4], [3, -1], [2, 2]]),
    ((4, 5, 2), lax.GatherDimensionNumbers((0, 2), (1,), (1,)), (4, 1, 2), [[[3], [0]]]),
]


@pytest.mark.parametrize("shape,dn,sizes,idx", INDEXING)
def test_numpy_style_gather_and_scatter(shape, dn, sizes, idx):
    x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    idx = np.array(idx, np.int32)
    for mode in ("fill", None):  # jnp's x[idx] and lax.gather's default
        out = check_against_jax(
            lambda a, i, m=mode: lax.gather(a, i, dn, sizes, mode=m),
            lambda a, i, m=mode: jlax.gather(a, i, jax_dnums(dn), sizes, mode=m),
            x,
            idx,
        )
    u = np.arange(out.size, dtype=np.float32).reshape(out.shape) + 100
    sdn = _scatter_dnums(dn)
    for mode in (None, "clip"):  # x.at[idx].add(u) and its mode="clip"
        check_against_jax(
            lambda a, i, u, m=mode: lax.scatter_add(a, i, u, sdn, mode=m),
            lambda a, i, u, m=mode: jlax.scatter_add(a, i, u, jax_dnums(sdn), mode=m),
            x,
            idx,
            u,
        )


def test_gather_fill_value_and_options():
    x = np.arange(12, dtype=np.int32).reshape(3, 4)
    dn = lax.GatherDimensionNumbers((1,), (0,), (0,))
    idx = np.array([[2], [3], [-1]], np.int32)
    for fill in (None, -7, np.int32(5)):
        check_against_jax(
            lambda a, i, f=fill: lax.gather(
                a,
                i,
                dn,
                (1, 4),
                mode="fill",
                fill_value=f,
                indices_are_sorted=True,
                unique_indices=True,
            ),
            lambda a, i, f=fill: jlax.gather(
                a,
                i,
                jax_dnums(dn),
                (1, 4),
                mode="fill",
                fill_value=f,
                indices_are_sorted=True,
                unique_indices=True,
            ),
            x,
            idx,
        )
    # The default fill of half floats is NaN (compared as float32: NaN != NaN in bfloat16).
    for dtype in (jnp.bfloat16, np.float16):
        xh = x.astype(dtype)
        for fn in (
            lax.gather,
            xform.jit(lax.gather, static_argnums=(2, 3), static_argnames="mode"),
        ):
            got = fn(xh, idx, dn, (1, 4), mode="fill")
            expected = jlax.gather(xh, idx, jax_dnums(dn), (1, 4), mode="fill")
            assert got.dtype == expected.dtype == dtype
            assert_same(np.asarray(got).astype(np.float32), np.asarray(expected).astype(np.float32))
            assert np.isnan(np.asarray(got).astype(np.float32)[2]).all()
    # JAX's own dimension numbers and mode enum are accepted too.
    got = lax.gather(x, idx, jax_dnums(dn), (1, 4), mode=jlax.GatherScatterMode.CLIP)
    assert_same(got, jlax.gather(x, idx, jax_dnums(dn), (1, 4), mode="clip"))


def test_scatter_duplicates_and_weak_type():
    dn = lax.ScatterDimensionNumbers((), (0,), (0,))
    idx = np.array([[1], [1], [1], [5], [-1], [0]], np.int32)
    u = np.array([1, 2, 3, 4, 5, 6], np.float32)
    for name in SCATTERS:
        for mode in (None, "clip"):
            check_against_jax(
                lambda a, i, v, f=name, m=mode: getattr(lax, f)(a, i, v, dn, mode=m),
                lambda a, i, v, f=name, m=mode: getattr(jlax, f)(a, i, v, jax_dnums(dn), mode=m),
                np.full(3, 2.0, np.float32),
                idx,
                u,
            )
    check_against_jax(
        lambda a: lax.scatter_add(lax.broadcast(a, (3,)), idx[:1], lax.broadcast(a, (1,)), dn),
        lambda a: jlax.scatter_add(
            jlax.broadcast(a, (3,)), idx[:1], jlax.broadcast(a, (1,)), jax_dnums(dn)
        ),
        1.5,
    )


def test_gather_scatter_text():
    x = np.zeros((3, 4), np.float32)
    idx = np.zeros((2, 1), np.int32)
    dn = lax.GatherDimensionNumbers((1,), (0,), (0,))
    g = lambda a, i, m: lax.gather(a, i, dn, (1, 4), mode=m)  # noqa: E731
    plain = xform.jit(g, static_argnums=2).lower(x, idx, None).as_text()
    assert (
        '"stablehlo.gather"(%arg0, %arg1) <{dimension_numbers = #stablehlo.gather<'
        "offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], "
        "index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 1, 4>}>"
        in plain
    )
    assert "stablehlo.select" not in plain
    fill = xform.jit(g, static_argnums=2).lower(x, idx, "fill").as_text()
    for op in (
        "stablehlo.compare GE",
        "stablehlo.compare LE",
        "stablehlo.reduce",
        "stablehlo.gather",
        "stablehlo.select",
    ):
        assert op in fill, op
    jaxpr = str(xform.make_jaxpr(lambda a, i: g(a, i, "fill"))(x, idx))
    assert "gather[\n      dimension_numbers=GatherDimensionNumbers(offset_dims=(1,)" in jaxpr
    assert "fill_value=nan" in jaxpr and "mode=GatherScatterMode.FILL_OR_DROP" in jaxpr

    sdn = lax.ScatterDimensionNumbers((1,), (0,), (0,))
    u = np.zeros((2, 4), np.float32)
    combiners = {
        "scatter": None,
        "scatter_add": "stablehlo.add",
        "scatter_mul": "stablehlo.multiply",
        "scatter_min": "stablehlo.minimum",
        "scatter_max": "stablehlo.maximum",
    }
    for name, combiner in combiners.items():
        s = lambda a, i, v, f=name: getattr(lax, f)(a, i, v, sdn)  # noqa: E731
        text = xform.jit(s).lower(x, idx, u).as_text()
        assert (
            "#stablehlo.scatter<update_window_dims = [1], inserted_window_dims = [0], "
            "scatter_dims_to_operand_dims = [0], index_vector_dim = 1>"
        ) in text
        assert "stablehlo.clamp" not in text
        if combiner:
            assert f"{combiner} %arg3, %arg4 : tensor<f32>" in text
        else:
            assert "stablehlo.return %arg4 : tensor<f32>" in text
    clip = xform.jit(lambda a, i, v: lax.scatter(a, i, v, sdn, mode="clip")).lower(x, idx, u)
    assert "stablehlo.clamp" in clip.as_text()
    jaxpr = str(xform.make_jaxpr(lambda a, i, v: lax.scatter_add(a, i, v, sdn))(x, idx, u))
    assert (
        "scatter-add[\n      dimension_numbers=ScatterDimensionNumbers(update_window_dims=(1,)"
    ) in jaxpr


def test_x64(x64):
    x = np.arange(10, dtype=np.float64).reshape(2, 5)
    idx = np.array([[1], [7], [-1]], np.int64)
    dn = lax.GatherDimensionNumbers((1,), (0,), (0,))
    expected = np.concatenate([x[1:], np.full((2, 5), np.nan)])
    for fn in (
        lambda a, i: lax.gather(a, i, dn, (1, 5), mode="fill"),
        xform.jit(lambda a, i: lax.gather(a, i, dn, (1, 5), mode="fill")),
    ):
        got = fn(x, idx)
        assert got.dtype == np.float64
        np.testing.assert_array_equal(np.asarray(got), expected)
    f = lambda a, i: lax.dynamic_slice(a, (1, i), (1, 2))  # noqa: E731
    assert "add b 5:i64[]" in str(xform.make_jaxpr(f)(x, 3))
    for i in (-1, 4, 9):
        np.testing.assert_array_equal(np.asarray(xform.jit(f)(x, i)), np.asarray(f(x, i)))
    np.testing.assert_array_equal(np.asarray(f(x, -1)), [[8.0, 9.0]])


# --------------------------------------------------------------------------- errors

X = np.zeros((3, 4), np.float32)
I32 = np.int32(0)
GDN = lax.GatherDimensionNumbers((1,), (0,), (0,))
SDN = lax.ScatterDimensionNumbers((1,), (0,), (0,))
IDX = np.zeros((2, 1), np.int32)
IDX3 = np.zeros((3, 1), np.int32)
UPD = np.zeros((2, 4), np.float32)

ERRORS = [
    (
        lambda: lax.slice(X, (0,), (1,)),
        TypeError,
        r"lax.slice: start_indices \(0,\) must have "
        r"one entry per operand dimension \(operand shape \(3, 4\)\)",
    ),
    (lambda: lax.slice(X, (0, 0), (1,)), TypeError, r"lax.slice: limit_indices \(1,\)"),
    (lambda: lax.slice(X, (0, 0), (1, 1), (1,)), TypeError, r"lax.slice: strides \(1,\)"),
    (
        lambda: lax.slice(X, (-1, 0), (1, 1)),
        TypeError,
        r"start_indices \(-1, 0\) must be "
        r"non-negative.*slice_in_dim",
    ),
    (
        lambda: lax.slice(X, (0, 0), (4, 1)),
        TypeError,
        r"limit_indices \(4, 1\) must not "
        r"exceed the operand shape \(3, 4\)",
    ),
    (
        lambda: lax.slice(X, (2, 0), (1, 1)),
        TypeError,
        r"limit_indices \(1, 1\) must be >= "
        r"start_indices \(2, 0\)",
    ),
    (
        lambda: lax.slice(X, (0, 0), (1, 1), (1, 0)),
        TypeError,
        r"strides \(1, 0\) must be "
        r"positive",
    ),
    (
        lambda: lax.slice(X, (0.5, 0), (1, 1)),
        TypeError,
        r"lax.slice: start_indices must be a "
        r"sequence of integers",
    ),
    (
        lambda: lax.index_in_dim(X, 3),
        IndexError,
        r"index 3 is out of bounds for axis 0 with "
        r"size 3",
    ),
    (
        lambda: lax.slice_in_dim(X, 0, 1, axis=2),
        ValueError,
        r"lax.slice_in_dim: axis 2 is out "
        r"of bounds",
    ),
    (
        lambda: lax.dynamic_slice(X, (I32,), (1, 1)),
        ValueError,
        r"lax.dynamic_slice: got 1 "
        r"start indices for an operand of shape \(3, 4\)",
    ),
    (
        lambda: lax.dynamic_slice(X, (I32, np.float32(0)), (1, 1)),
        TypeError,
        r"lax.dynamic_slice: start indices must be integers of one dtype, got int32, float32",
    ),
    (
        lambda: lax.dynamic_slice(X, (I32, np.int8(0)), (1, 1)),
        TypeError,
        r"integers of one dtype, got int32, int8",
    ),
    (
        lambda: lax.dynamic_slice(X, (I32, np.zeros(1, np.int32)), (1, 1)),
        TypeError,
        r"lax.dynamic_slice: start indices must be scalars, got i32\[\], i32\[1\]",
    ),
    (
        lambda: lax.dynamic_slice(X, (I32, I32), (4, 1)),
        TypeError,
        r"slice_sizes \(4, 1\) must be in \[0, dim\] for operand shape \(3, 4\)",
    ),
    (
        lambda: lax.dynamic_slice(X, (I32, I32), (1,)),
        TypeError,
        r"slice_sizes \(1,\) must have one entry per operand dimension",
    ),
    (
        lambda: lax.dynamic_slice(X, np.zeros((2, 1), np.int32), (1, 1)),
        ValueError,
        r"lax.dynamic_slice: start_indices must be a sequence of scalars or a 1-D array, got an "
        r"array of shape \(2, 1\)",
    ),
    (
        lambda: lax.dynamic_slice(X, (0, -1), (1, 1), allow_negative_indices=False),
        ValueError,
        r"lax.dynamic_slice: index -1 is out of bounds for dimension 4 with "
        r"allow_negative_indices=False",
    ),
    (
        lambda: lax.dynamic_update_slice(X, np.zeros((1, 1), np.int32), (0, 0)),
        TypeError,
        r"lax.dynamic_update_slice requires arguments to have the same dtypes, got float32, "
        r"int32",
    ),
    (
        lambda: lax.dynamic_update_slice(X, np.zeros(1, np.float32), (0, 0)),
        TypeError,
        r"update must have the operand's rank, got update shape \(1,\) for operand shape",
    ),
    (
        lambda: lax.dynamic_update_slice(X, np.zeros((4, 1), np.float32), (0, 0)),
        TypeError,
        r"update shape \(4, 1\) must fit in the operand shape \(3, 4\)",
    ),
    (
        lambda: lax.dynamic_update_slice(X, X, (0, 0.0)),
        TypeError,
        r"lax.dynamic_update_slice: start indices must be integers of one dtype",
    ),
    (
        lambda: lax.gather(X, IDX.astype(np.float32), GDN, (1, 4)),
        ValueError,
        r"lax.gather: indices must have an integer dtype, got f32\[2,1\]",
    ),
    (
        lambda: lax.gather(X, np.int32(0), GDN, (1, 4)),
        TypeError,
        r"lax.gather: indices must have rank >= 1",
    ),
    (
        lambda: lax.gather(X, np.zeros((2, 2), np.int32), GDN, (1, 4)),
        TypeError,
        r"start_index_map \(0,\) must have one entry per element of the index vector",
    ),
    (
        lambda: lax.gather(X, IDX, GDN, (2, 4)),
        TypeError,
        r"collapsed and batching dims must have slice size 1.*slice_sizes\[0\] is 2",
    ),
    (
        lambda: lax.gather(X, IDX, GDN, (1,)),
        TypeError,
        r"slice_sizes \(1,\) must have one entry per operand dimension",
    ),
    (
        lambda: lax.gather(X, IDX, GDN, (1, 5)),
        TypeError,
        r"slice_sizes \(1, 5\) must be in \[0, dim\] for operand shape \(3, 4\)",
    ),
    (
        lambda: lax.gather(X, IDX, lax.GatherDimensionNumbers((2,), (0,), (0,)), (1, 4)),
        TypeError,
        r"lax.gather: offset_dims \(2,\) out of range: valid dims are \[0, 2\)",
    ),
    (
        lambda: lax.gather(X, IDX, lax.GatherDimensionNumbers((0,), (), (0,)), (1, 4)),
        TypeError,
        r"each operand dim must be an offset dim, collapsed or batching",
    ),
    (
        lambda: lax.gather(X, IDX, lax.GatherDimensionNumbers((1,), (1,), (2,)), (3, 1)),
        TypeError,
        r"lax.gather: start_index_map \(2,\) out of range",
    ),
    (
        lambda: lax.gather(X, IDX, lax.GatherDimensionNumbers((1,), (0, 0), (0,)), (1, 4)),
        TypeError,
        r"collapsed_slice_dims must not repeat, got \(0, 0\)",
    ),
    (
        lambda: lax.gather(
            X,
            np.zeros((2, 3, 1), np.int32),
            lax.GatherDimensionNumbers((), (1,), (1,), (0,), (0,)),
            (1, 1),
        ),
        TypeError,
        r"operand batching dims have shape \(3,\) but indices batching dims have "
        r"shape \(2,\)",
    ),
    (
        lambda: lax.gather(X, IDX3, lax.GatherDimensionNumbers((), (0,), (0,), (0,), (0,)), (1, 1)),
        TypeError,
        r"operand_batching_dims \(0,\) must be disjoint",
    ),
    (
        lambda: lax.gather(X, IDX, (1, 2), (1, 4)),
        TypeError,
        r"lax.gather: dimension_numbers must be a GatherDimensionNumbers",
    ),
    (
        lambda: lax.gather(X, IDX, GDN, (1, 4), mode="wrap"),
        ValueError,
        r"Unknown gather/scatter mode 'wrap'",
    ),
    (
        lambda: lax.scatter(X, IDX, UPD.astype(np.int32), SDN),
        TypeError,
        r"lax.scatter requires arguments to have the same dtypes, got float32, int32",
    ),
    (
        lambda: lax.scatter_add(X, IDX.astype(np.float32), UPD, SDN),
        ValueError,
        r"lax.scatter_add: indices must have an integer dtype",
    ),
    (
        lambda: lax.scatter_add(X.astype(bool), IDX, UPD.astype(bool), SDN),
        TypeError,
        r"lax.scatter_add does not accept dtype bool",
    ),
    (
        lambda: lax.scatter_mul(X.astype(bool), IDX, UPD.astype(bool), SDN),
        TypeError,
        r"lax.scatter_mul does not accept dtype bool",
    ),
    (
        lambda: lax.scatter(X, IDX, UPD[0], SDN),
        TypeError,
        r"lax.scatter: updates must have rank 2 .*got updates shape \(4,\)",
    ),
    (
        lambda: lax.scatter_min(X, IDX, np.zeros((3, 4), np.float32), SDN),
        TypeError,
        r"lax.scatter_min: the scatter dims of updates \(shape \(3, 4\)\) must match the batch "
        r"dims of indices \(shape \(2, 1\)\)",
    ),
    (
        lambda: lax.scatter_max(X, IDX, np.zeros((2, 5), np.float32), SDN),
        TypeError,
        r"lax.scatter_max: the window of updates \(shape \(2, 5\)\) exceeds the operand",
    ),
    (
        lambda: lax.scatter(X, IDX, UPD, lax.ScatterDimensionNumbers((1,), (), (0,))),
        TypeError,
        r"must account for every dim of the operand of shape \(3, 4\)",
    ),
    (
        lambda: lax.scatter(X, np.zeros((2, 2), np.int32), UPD, SDN),
        TypeError,
        r"scatter_dims_to_operand_dims \(0,\) must have one entry per element",
    ),
    (
        lambda: lax.scatter(X, IDX, UPD, lax.ScatterDimensionNumbers((1,), (0,), (5,))),
        TypeError,
        r"scatter_dims_to_operand_dims \(5,\) out of range",
    ),
    (
        lambda: lax.scatter(X, IDX, UPD, SDN, mode="bogus"),
        ValueError,
        r"Unknown gather/scatter mode 'bogus'",
    ),
]


@pytest.mark.parametrize("fn,exc,match", ERRORS)
def test_errors(fn, exc, match):
    with pytest.raises(exc, match=match):
        fn()


def test_errors_under_jit():
    with pytest.raises(TypeError, match=r"lax.dynamic_slice: start indices must be integers"):
        xform.jit(lambda a, i: lax.dynamic_slice(a, (i, i), (1, 1)))(X, 1.0)
    with pytest.raises(ValueError, match=r"lax.gather: indices must have an integer dtype"):
        xform.jit(lambda a, i: lax.gather(a, i, GDN, (1, 4)))(X, IDX.astype(np.float32))


def test_public_names():
    for module in (indexing, gather_scatter, _indexing):
        for name in module.__all__:
            assert getattr(lax, name) is getattr(module, name)
            assert hasattr(jlax, name), name

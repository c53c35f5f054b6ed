"""NumPy-style indexing (``x[idx]``) and indexed updates (``x.at[idx]``) against jax.numpy."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import xform
import xform.numpy as xnp
from tests.harness import assert_same
from xform.errors import NonConcreteBooleanIndexError
from xform.numpy._indexing import IndexUpdateHelper, getitem
from xform.runtime.array import from_host

# --------------------------------------------------------------------------- strategies


@st.composite
def shapes(draw, min_rank=0, max_rank=3, min_size=0):
    return tuple(draw(st.lists(st.integers(min_size, 4), min_size=min_rank, max_size=max_rank)))


def _arange(shape, dtype=np.float32):
    n = int(np.prod(shape, dtype=np.int64))
    if dtype == np.bool_:
        return (np.arange(n) % 3 == 0).reshape(shape)
    return (np.arange(n) - n // 3).astype(dtype).reshape(shape)


@st.composite
def basic_index(draw, shape):
    """A tuple of ints (maybe out of bounds), slices with steps, None and one ``...``."""
    entries, dims = [], list(shape)
    use_ellipsis = draw(st.booleans())
    while True:
        choice = draw(
            st.sampled_from(["int", "slice", "none", "stop"] if dims else ["none", "stop"])
        )
        if choice == "stop" or len(entries) > 5:
            break
        if choice == "none":
            entries.append(None)
            continue
        size = dims.pop(0)
        if choice == "int":
            if size:  # JAX (and NumPy) reject an int index into an empty axis
                entries.append(draw(st.integers(-size - 2, size + 1)))
            else:
                entries.append(slice(None))
        else:
            bound = st.none() | st.integers(-size - 2, size + 2)
            step = draw(st.none() | st.sampled_from([1, 2, 3, -1, -2, -3]))
            entries.append(slice(draw(bound), draw(bound), step))
    if use_ellipsis:
        entries.insert(draw(st.integers(0, len(entries))), Ellipsis)
    return tuple(entries)


@st.composite
def advanced_index(draw, shape, signed=True):
    """Basic entries mixed with integer arrays (broadcastable, repeated, out of bounds)."""
    entries = list(draw(basic_index(shape)))
    positions = [i for i, e in enumerate(entries) if e is not Ellipsis and e is not None]
    if not positions:
        return tuple(entries)
    bshape = draw(shapes(1, 2, min_size=1))
    chosen = draw(st.lists(st.sampled_from(positions), min_size=1, max_size=3, unique=True))
    axis_of = _axes_of(entries, len(shape))
    for p in chosen:
        size = shape[axis_of[p]]
        rank = draw(st.integers(0, len(bshape)))
        sub = tuple(d if draw(st.booleans()) else 1 for d in bshape[len(bshape) - rank :])
        lo = -size - 1 if signed else 0
        vals = draw(
            st.lists(
                st.integers(lo, size + 1), min_size=int(np.prod(sub)), max_size=int(np.prod(sub))
            )
        )
        entries[p] = np.array(vals, np.int32 if signed else np.uint8).reshape(sub)
    return tuple(entries)


def _axes_of(entries, ndim):
    """The axis of x each entry of a basic index consumes."""
    consumed = sum(e is not None and e is not Ellipsis for e in entries)
    axes, axis = {}, 0
    for i, e in enumerate(entries):
        if e is Ellipsis:
            axis += ndim - consumed
        elif e is not None:
            axes[i] = axis
            axis += 1
    return axes


def _jnp_index(idx):
    return tuple(jnp.asarray(e) if isinstance(e, np.ndarray) else e for e in idx)


def _check(x_np, idx, **jit_kw):
    """getitem(x, idx) equals jnp's x[idx] eagerly and under xform.jit (idx closed over)."""
    expected = jnp.asarray(x_np)[_jnp_index(idx)]
    x = from_host(x_np)
    assert_same(getitem(x, idx), expected, what=f"eager {idx}")
    got = xform.jit(lambda a: getitem(a, idx))(x)
    assert_same(got, expected, what=f"jit {idx}")


# --------------------------------------------------------------------------- getitem


@given(st.data())
def test_basic_indexing_matches_jax(data):
    shape = data.draw(shapes())
    dtype = data.draw(st.sampled_from([np.float32, np.int32, np.bool_, np.float16]))
    idx = data.draw(basic_index(shape))
    _check(_arange(shape, dtype), idx)


@given(st.data())
def test_advanced_indexing_matches_jax(data):
    shape = data.draw(shapes(1, 3, min_size=1))
    idx = data.draw(advanced_index(shape, signed=data.draw(st.booleans())))
    _check(_arange(shape, data.draw(st.sampled_from([np.float32, np.int8]))), idx)


@given(st.data())
def test_traced_integer_arrays_match_jax(data):
    shape = data.draw(shapes(1, 3, min_size=1))
    idx = data.draw(advanced_index(shape))
    arrays = [i for i, e in enumerate(idx) if isinstance(e, np.ndarray)]

    def build(args):
        out = list(idx)
        for i, a in zip(arrays, args, strict=True):
            out[i] = a
        return tuple(out)

    x = _arange(shape)
    args = [idx[i] for i in arrays]
    expected = jax.jit(lambda a, *arrs: a[build(arrs)])(x, *args)
    got = xform.jit(lambda a, *arrs: getitem(a, build(arrs)))(from_host(x), *args)
    assert_same(got, expected)


@given(st.data())
def test_traced_scalar_indices_match_jax(data):
    """Traced scalar indices with unit-step slices, None and ``...`` (a dynamic_slice)."""
    shape = data.draw(shapes(1, 3, min_size=1))
    entries = list(data.draw(basic_index(shape)))
    entries = [
        slice(e.start, e.stop, e.step if e.step in (None, 1, -1) else 1)
        if isinstance(e, slice)
        else e
        for e in entries
    ]
    ints = [i for i, e in enumerate(entries) if isinstance(e, int)]
    if not ints:  # make the first slice over a non-empty axis an index
        axes = _axes_of(entries, len(shape))
        ints = [i for i, e in enumerate(entries) if isinstance(e, slice) and shape[axes[i]]][:1]
        for i in ints:
            entries[i] = -1

    def build(args):
        out = list(entries)
        for i, a in zip(ints, args, strict=True):
            out[i] = a
        return tuple(out)

    x = _arange(shape)
    args = [np.int32(entries[i]) for i in ints]
    expected = jax.jit(lambda a, *ii: a[build(ii)])(x, *args)
    got = xform.jit(lambda a, *ii: getitem(a, build(ii)))(from_host(x), *args)
    assert_same(got, expected, what=str(entries))


def test_traced_scalar_index_with_strided_slice():
    x = _arange((4, 5))
    for i in (1, -1, 7, -9):
        expected = jax.jit(lambda a, i: a[i, ::-2])(x, i)
        got = xform.jit(lambda a, i: getitem(a, (i, slice(None, None, -2))))(from_host(x), i)
        assert_same(got, expected, what=str(i))


def test_boolean_masks():
    x = _arange((3, 4))
    masks = [
        (x > 0,),
        (np.array([True, False, True]),),
        (slice(None), np.array([False, True, True, False])),
        (np.array([True, False, True]), np.array([1, 3])),
        (np.zeros((3, 4), bool),),
        (True,),
        (False,),
        (True, 1),
        (True, np.array([0, 2])),
        ([True, False, True],),
    ]
    for idx in masks:
        _check(x, idx)


def test_scalar_boolean_after_none_matches_numpy():
    # jax.numpy 0.10.2 gets arange(3)[None, True] wrong ([[[0]]]) and fails on np.bool_
    # scalars; these are NumPy's answers.
    x = np.arange(3, dtype=np.int32)
    for idx in [
        (None, True),
        (None, False, slice(None)),
        (..., np.bool_(False)),
        (np.array(True), None),
    ]:
        np.testing.assert_array_equal(getitem(from_host(x), idx), x[idx])


def test_index_kinds():
    x = _arange((3, 4))
    for idx in [
        (np.int64(2), np.uint8(1)),
        (np.array(-1),),
        (from_host(np.array([2, 0])),),
        ([0, 2], slice(None)),
        ([[0], [2]], [1, 3]),
        ([],),
        (np.array([], np.int32), 1),
        (jnp.asarray(1),),
        (slice(np.int32(1), from_host(np.array(3))),),
        (),
        (...,),
        (None, ..., None),
    ]:
        expected = jnp.asarray(x)[tuple(_to_jax(e) for e in idx)]
        got = getitem(from_host(x), idx)
        assert_same(got, expected, what=str(idx))


def _to_jax(e):
    if isinstance(e, (list, xform.Array)):
        return jnp.asarray(np.asarray(e, None if len(np.shape(e)) and np.size(e) else np.int32))
    if isinstance(e, slice):
        return slice(*(_to_jax(v) for v in (e.start, e.stop, e.step)))
    return e


def test_scalar_and_empty_arrays():
    _check(np.float32(3.5).reshape(()), ())
    _check(np.float32(3.5).reshape(()), (None, ...))
    _check(np.zeros((0, 3), np.float32), (slice(None), 1))
    _check(np.zeros((0, 3), np.float32), (np.array([], np.int32),))
    _check(np.zeros((2, 0), np.float32), (np.array([1, 0]),))


def test_weak_type_is_kept():
    """Indexing a weakly typed array (lax.full of a Python float) keeps it weak."""
    for idx in [slice(1, None), np.array([0, 0]), (None, -1)]:
        got = xform.jit(lambda i=idx: getitem(xform.lax.full((3,), 2.0), i))()
        expected = jax.jit(lambda i=idx: jax.lax.full((3,), 2.0)[i])()
        assert_same(got, expected, what=str(idx))
        assert got.weak_type
    got = xform.jit(lambda: IndexUpdateHelper(xform.lax.full((3,), 2.0))[1].add(1))()
    assert_same(got, jax.jit(lambda: jax.lax.full((3,), 2.0).at[1].add(1))())


# --------------------------------------------------------------------------- get modes


def test_get_modes():
    x = _arange((5,))
    idx = np.array([0, 4, 5, -1, -6, 9])
    for kw in [
        {},
        {"mode": "clip"},
        {"mode": "fill"},
        {"mode": "fill", "fill_value": -1.0},
        {"mode": "promise_in_bounds"},
        {"wrap_negative_indices": False},
        {"mode": "fill", "wrap_negative_indices": False},
        {"mode": jax.lax.GatherScatterMode.FILL_OR_DROP},
        {"indices_are_sorted": True, "unique_indices": True, "mode": "clip"},
    ]:
        kw_x = dict(kw)
        if "mode" in kw and not isinstance(kw["mode"], str):
            kw_x["mode"] = xform.lax.GatherScatterMode.FILL_OR_DROP
        expected = jnp.asarray(x).at[idx].get(**kw)
        assert_same(IndexUpdateHelper(from_host(x))[idx].get(**kw_x), expected, what=str(kw))
        got = xform.jit(lambda a, k=kw_x: IndexUpdateHelper(a)[idx].get(**k))(from_host(x))
        assert_same(got, expected, what=f"jit {kw}")
    for i in (7, -7):  # static ints: fill mode goes through gather
        expected = jnp.asarray(x).at[i].get(mode="fill", fill_value=3)
        assert_same(IndexUpdateHelper(from_host(x))[i].get(mode="fill", fill_value=3), expected)
    expected = jnp.asarray(x).at[-2].get(wrap_negative_indices=False)
    assert_same(IndexUpdateHelper(from_host(x))[-2].get(wrap_negative_indices=False), expected)


# --------------------------------------------------------------------------- lowering


def test_static_indexing_lowers_to_slice_not_gather():
    x = from_host(_arange((4, 3)))
    text = str(xform.make_jaxpr(lambda a: getitem(a, slice(1, 3)))(x))
    assert "slice[" in text and "gather" not in text, text
    text = str(xform.make_jaxpr(lambda a: getitem(a, (1, slice(None, None, -1))))(x))
    for op in ("slice[", "rev[", "squeeze["):
        assert op in text, text
    assert "gather" not in text
    text = str(xform.make_jaxpr(lambda a, i: getitem(a, (i, None)))(x, 1))
    assert "dynamic_slice[" in text and "gather" not in text, text
    text = str(xform.make_jaxpr(lambda a: getitem(a, (np.array([0, 2]),)))(x))
    assert "gather[" in text, text
    text = str(xform.make_jaxpr(lambda a: getitem(a, ...))(x))
    assert "let  in (a,)" in text, text  # no equations
    lowered = xform.jit(lambda a: getitem(a, slice(1, 3))).lower(x).as_text()
    assert "stablehlo.slice" in lowered and "gather" not in lowered
    lowered = xform.jit(lambda a: getitem(a, np.array([[0], [3]]))).lower(x).as_text()
    assert "stablehlo.gather" in lowered
    lowered = xform.jit(lambda a: IndexUpdateHelper(a)[1].add(1.0)).lower(x).as_text()
    assert "stablehlo.scatter" in lowered


# --------------------------------------------------------------------------- .at updates

_OPS = ["set", "add", "subtract", "multiply", "mul", "min", "max", "divide", "power"]


@st.composite
def update_case(draw):
    shape = draw(shapes(1, 3, min_size=1))
    op = draw(st.sampled_from(_OPS))
    kinds = [np.float32, np.int32, np.float16] + ([np.bool_] if op in ("set", "min", "max") else [])
    if op == "power":
        kinds = [np.float32, np.float16]
    dtype = draw(st.sampled_from(kinds))
    idx = draw(advanced_index(shape) if draw(st.booleans()) else basic_index(shape))
    return shape, op, dtype, idx


def _values(draw_or_rng, shape, dtype, op):
    vals = draw_or_rng.integers(1, 4, size=shape) * draw_or_rng.choice([-1, 1], size=shape)
    if op in ("divide", "power") or dtype == np.bool_:
        vals = np.abs(vals)
    return (vals > 1 if dtype == np.bool_ else vals).astype(dtype)


@given(update_case(), st.integers(0, 2**31 - 1))
def test_updates_match_jax(case, seed):
    shape, op, dtype, idx = case
    rng = np.random.default_rng(seed)
    x_np = _arange(shape, dtype)
    if op == "power":
        x_np = np.abs(x_np) + 1
    target = jnp.asarray(x_np)[_jnp_index(idx)].shape
    # Repeated indices make `set` order-dependent; then set one value everywhere.
    v_shape = () if op == "set" else target[rng.integers(0, len(target) + 1) :]
    vals = _values(rng, v_shape, dtype, op)
    expected = getattr(jnp.asarray(x_np).at[_jnp_index(idx)], op)(jnp.asarray(vals))
    x = from_host(x_np)
    tol = {"rtol": 1e-2, "atol": 1e-2} if dtype == np.float16 else {}
    got = getattr(IndexUpdateHelper(x)[idx], op)(vals)
    assert_same(got, expected, what=f"eager {op} {idx}", **tol)
    got = xform.jit(lambda a, v: getattr(IndexUpdateHelper(a)[idx], op)(v))(x, vals)
    assert_same(got, expected, what=f"jit {op} {idx}", **tol)


def test_repeated_indices_accumulate():
    x = np.zeros(4, np.float32)
    idx = np.array([1, 1, 3, 1, -1, 7, -9])
    vals = np.arange(1.0, 8.0, dtype=np.float32)
    for op in ("add", "multiply", "min", "max", "subtract"):
        expected = getattr(jnp.asarray(x + 2).at[idx], op)(vals)
        got = getattr(IndexUpdateHelper(from_host(x + 2))[idx], op)(vals)
        assert_same(got, expected, what=op)
    got = IndexUpdateHelper(from_host(x))[idx].add(vals)
    np.testing.assert_array_equal(got, [0, 7, 0, 8])  # 7 and -9 are out of bounds: dropped


def test_traced_indices_and_values_in_updates():
    x = _arange((4, 3))
    idx, vals = np.array([[0, 3], [3, -1]]), np.float32(2.5)
    expected = jax.jit(lambda a, i, v: a.at[i, 1:].add(v))(x, idx, vals)
    got = xform.jit(lambda a, i, v: IndexUpdateHelper(a)[i, 1:].add(v))(from_host(x), idx, vals)
    assert_same(got, expected)
    expected = jax.jit(lambda a, i, v: a.at[i, ::-2].set(v))(x, 2, vals)
    got = xform.jit(lambda a, i, v: IndexUpdateHelper(a)[i, ::-2].set(v))(from_host(x), 2, vals)
    assert_same(got, expected)


def test_update_modes_and_masks():
    x = _arange((5,))
    idx = np.array([0, 5, -1, -6])
    for kw in [
        {},
        {"mode": "clip"},
        {"mode": "drop"},
        {"mode": "promise_in_bounds"},
        {"wrap_negative_indices": False},
        {"unique_indices": True},
    ]:
        expected = jnp.asarray(x).at[idx].add(10.0, **kw)
        assert_same(IndexUpdateHelper(from_host(x))[idx].add(10.0, **kw), expected, what=kw)
    mask = x > 0
    for op in ("set", "add", "multiply"):
        expected = getattr(jnp.asarray(x).at[mask], op)(3.0)
        assert_same(getattr(IndexUpdateHelper(from_host(x))[mask], op)(3.0), expected)
    for idx in [True, False, (None, 2), (True, np.array([1, 2]))]:
        expected = jnp.asarray(x).at[idx].set(7.0)
        assert_same(IndexUpdateHelper(from_host(x))[idx].set(7.0), expected, what=str(idx))


def test_update_dtypes_and_casts():
    xi = np.arange(4, dtype=np.int32)
    # A Python int in range is the array's dtype; the result keeps x's dtype.
    for op in ("set", "add", "multiply", "divide"):
        expected = getattr(jnp.asarray(xi).at[1:3], op)(2)
        assert_same(getattr(IndexUpdateHelper(from_host(xi))[1:3], op)(2), expected, what=op)
    # Unsafe casts warn, as in JAX, and compute in the promoted dtype before casting back.
    with pytest.warns(FutureWarning, match="scatter inputs have incompatible types"):
        expected = jnp.asarray(xi).at[np.array([1, 1])].add(0.75)
    with pytest.warns(FutureWarning, match="incompatible types"):
        got = IndexUpdateHelper(from_host(xi))[np.array([1, 1])].add(0.75)
    assert_same(got, expected)
    xb = np.array([True, False, True])
    expected = jnp.asarray(np.float16([1, 2, 3])).at[0].set(xb[1])
    assert_same(IndexUpdateHelper(from_host(np.float16([1, 2, 3])))[0].set(xb[1]), expected)
    expected = jnp.asarray(xb).at[np.array([0, 1])].set(jnp.asarray(xb[1:]))
    assert_same(IndexUpdateHelper(from_host(xb))[np.array([0, 1])].set(xb[1:]), expected)
    expected = jnp.asarray(np.zeros((2, 3), np.float32)).at[:, 1].set([1.0, 2.0])
    got = IndexUpdateHelper(from_host(np.zeros((2, 3), np.float32)))[:, 1].set([1.0, 2.0])
    assert_same(got, expected)


def test_update_of_empty_selection_returns_x():
    x = from_host(_arange((3,)))
    assert IndexUpdateHelper(x)[1:1].set(5.0) is x
    assert IndexUpdateHelper(x)[np.array([], np.int32)].add(5.0) is x


def test_repr():
    x = from_host(np.arange(2, dtype=np.int32))
    assert "IndexUpdateHelper" in repr(IndexUpdateHelper(x))
    assert "_IndexUpdateRef" in repr(IndexUpdateHelper(x)[0])


# --------------------------------------------------------------------------- errors


def test_errors():
    x = from_host(_arange((3, 4)))
    with pytest.raises(
        IndexError,
        match=r"Too many indices: array of shape \(3, 4\) is "
        "2-dimensional, but 3 were indexed",
    ):
        getitem(x, (0, 0, 0))
    with pytest.raises(IndexError, match=r"Too many indices: array of shape \(\)"):
        getitem(from_host(np.float32(1)), 0)
    with pytest.raises(
        TypeError, match="Indexer must have integer or boolean type, got indexer with type float64"
    ):
        getitem(x, 1.0)
    with pytest.raises(
        TypeError, match="Indexer must have integer or boolean type, got indexer with type float32"
    ):
        getitem(x, np.array([1.0], np.float32))
    with pytest.raises(TypeError, match="Indexer must have integer or boolean type"):
        xform.jit(getitem)(x, np.float32(1))
    with pytest.raises(TypeError, match="Indexer must have integer or boolean type"):
        getitem(x, ([0.5],))
    with pytest.raises(TypeError, match="does not support string indexing"):
        getitem(x, "a")
    with pytest.raises(TypeError, match=r"non-tuple sequence.*arr\[array\(seq\)\]"):
        getitem(x, [0, 1])
    with pytest.raises(TypeError, match=r"non-tuple sequence.*arr\[tuple\(seq\)\]"):
        getitem(x, [0, slice(None)])
    with pytest.raises(IndexError, match="only integers, slices"):
        getitem(x, object())
    with pytest.raises(IndexError, match="single ellipsis"):
        getitem(x, (..., ...))
    with pytest.raises(IndexError, match="Slice entries must be static integers"):
        xform.jit(lambda a, i: getitem(a, slice(i, None)))(x, 1)
    with pytest.raises(ValueError, match="slice step cannot be zero"):
        getitem(x, slice(None, None, 0))
    with pytest.raises(NonConcreteBooleanIndexError, match="boolean indices must be concrete"):
        xform.jit(lambda a: getitem(a, a > 0))(x)
    with pytest.raises(IndexError, match="where"):  # the error says what to use instead
        xform.jit(lambda a, m: getitem(a, (m,)))(x, np.array([True, False, True]))
    with pytest.raises(
        IndexError,
        match=r"boolean index did not match.*got \(2,\), "
        r"expected \[3\]",
    ):
        getitem(x, np.array([True, False]))
    with pytest.raises(ValueError, match="could not be broadcast together"):
        getitem(x, (np.array([0, 1]), np.array([0, 1, 2])))
    with pytest.raises(IndexError, match="out of bounds for axis 1 with size 0"):
        getitem(from_host(np.zeros((2, 0), np.float32)), (slice(None), 0))
    with pytest.raises(IndexError, match="out of bounds for axis 0 with size 0"):
        xform.jit(getitem)(from_host(np.zeros((0,), np.float32)), 0)
    with pytest.raises(ValueError, match="fill_value argument to indexed get"):
        IndexUpdateHelper(x)[np.array([0])].get(mode="fill", fill_value=np.zeros(2))
    with pytest.raises(TypeError, match="fill_value.*concrete"):
        xform.jit(lambda a, f: IndexUpdateHelper(a)[np.array([0])].get(mode="fill", fill_value=f))(
            x, 1.0
        )
    with pytest.raises(ValueError, match=r"Incompatible shapes.*\(3,\).*\(2, 4\)"):
        IndexUpdateHelper(x)[1:].set(np.zeros(3, np.float32))
    # Integer arrays take integer powers, as in JAX.
    assert IndexUpdateHelper(from_host(np.arange(3)))[2].power(2).tolist() == [0, 1, 4]
    with pytest.raises(ValueError, match="Unknown gather/scatter mode"):
        IndexUpdateHelper(x)[0].get(mode="wrap")


def test_jax_raises_the_same_errors():
    """The error types above are JAX's (so `except` clauses written for JAX still work)."""
    x = jnp.zeros((3, 4))
    for idx, err in [
        ((0, 0, 0), IndexError),
        (1.0, TypeError),
        ([0, 1], TypeError),
        ((..., ...), IndexError),
        (np.array([True, False]), IndexError),
    ]:
        with pytest.raises(err):
            x[idx]
        with pytest.raises(err):
            getitem(from_host(np.zeros((3, 4), np.float32)), idx)
    with pytest.raises(IndexError):
        jax.jit(lambda a: a[a > 0])(x)


# --------------------------------------------------------------------------- x[idx] syntax


def test_operator_syntax_once_attached():
    x = from_host(_arange((3, 4)))
    j = jnp.asarray(_arange((3, 4)))
    idx = (np.array([2, 0]), slice(None, None, -1))
    assert_same(x[idx], j[idx])
    assert_same(x.at[idx].add(1.0), j.at[idx].add(1.0))
    got = xform.jit(lambda a, i: (a[i, 1:], a.at[i].max(5.0)))(x, 1)
    assert_same(got, (j[1, 1:], j.at[1].max(5.0)))
    assert_same(list(x), list(j))


def test_at_set_takes_a_tuple_of_traced_values_as_jax():
    def f(lib, jit):
        return jit(lambda a, b: lib.zeros((2, 2)).at[0, :].set((a, b)))(1.0, 2.0)

    assert_same(f(xnp, xform.jit), f(jnp, jax.jit))
    assert_same(xnp.zeros(2, np.int32).at[:].add([1, 2]), jnp.zeros(2, np.int32).at[:].add([1, 2]))

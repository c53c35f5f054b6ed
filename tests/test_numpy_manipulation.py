"""xform.numpy's array manipulation (pad, take, take_along_axis, put_along_axis, roll, rot90,
diff, insert, delete, ...) against jax.numpy: values, shapes, dtypes and weak types, eagerly
and under jit (one compiled function per group), gradients, vmap and bad-input errors."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import xform
import xform.numpy as xnp
from tests.harness import assert_same


def run_both(make, *args, rtol=None, atol=None):
    """``make(lib)`` built with xform.numpy, eagerly and under xform.jit, against jax.jit."""
    expected = jax.jit(make(jnp))(*args)
    assert_same(make(xnp)(*args), expected, rtol, atol, what="eager")
    assert_same(xform.jit(make(xnp))(*args), expected, rtol, atol, what="jit")


X = np.arange(12, dtype=np.float32).reshape(3, 4) ** 1.5 - 7
IX = np.array([[3, -1, 2], [0, 5, 1]], dtype=np.int32)
B = np.array([True, False, True, True])

PAD_CASES = [
    (2, {}),
    ((1, 2), {}),
    (((0, 1), (2, 0)), {}),
    ([[1, 2]], {}),
    (2, {"constant_values": 7}),
    ((1, 2), {"constant_values": (3, 4)}),
    (((1, 1), (2, 0)), {"constant_values": ((1, 2), (3, 4))}),
    (((1, 2), (3, 5)), {"mode": "edge"}),
    (((4, 5), (2, 9)), {"mode": "wrap"}),
    (((2, 6), (3, 7)), {"mode": "reflect"}),
    (((2, 6), (3, 7)), {"mode": "symmetric"}),
    (((2, 5), (3, 1)), {"mode": "reflect", "reflect_type": "odd"}),
    (((2, 5), (3, 1)), {"mode": "symmetric", "reflect_type": "odd"}),
    (((2, 1), (1, 3)), {"mode": "linear_ramp"}),
    (((2, 1), (1, 3)), {"mode": "linear_ramp", "end_values": (5, -2)}),
    (2, {"mode": "maximum"}),
    (2, {"mode": "minimum", "stat_length": 2}),
    (((1, 2), (2, 1)), {"mode": "mean", "stat_length": ((1, 2), (3, 1))}),
    (2, {"mode": "median"}),
    (((1, 2), (0, 3)), {"mode": "median", "stat_length": 2}),
    (((1, 2), (0, 3)), {"mode": "empty"}),
]


@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_pad_modes_against_jax(dtype):
    x = X.astype(dtype)
    # Integers differ only where statistics are rounded and ramps truncated.
    cases = PAD_CASES if dtype == np.float32 else PAD_CASES[13:]

    def make(lib):
        def f(x):
            return [lib.pad(x, w, **kw) for w, kw in cases]

        return f

    run_both(make, x)


def test_pad_scalars_bools_weak_types_and_callables():
    def custom(row, width, iaxis, kwargs):
        row = row.at[: width[0]].set(kwargs.get("before", -1))
        return row.at[row.shape[0] - width[1] :].set(10)

    def make(lib):
        def f(x, b):
            return (
                lib.pad(x[0], 2, mode="reflect"),
                lib.pad(x[0, :1], 3, mode="reflect"),
                lib.pad(x[0, :1], 3, mode="symmetric", reflect_type="odd"),
                lib.pad(b, 1),
                lib.pad(b, 2, mode="edge"),
                lib.pad(b, 5, mode="wrap"),
                lib.pad(lib.float32(2.0), 3),
                lib.pad(x, 1, custom),
                lib.pad(x[0], (2, 1), custom, before=5),
                lib.pad(x[0], 2, mode="mean"),
                lib.pad(x[:2, 0], (1, 0), mode="median"),
            )

        return f

    run_both(make, X, B)
    got, expected = xnp.pad(xnp.asarray(2.0) * X[0], 1), jnp.pad(jnp.asarray(2.0) * X[0], 1)
    assert_same(got, expected)


def test_pad_errors():
    with pytest.raises(ValueError, match="negative"):
        xnp.pad(X, -1)
    with pytest.raises(NotImplementedError, match="Unimplemented padding mode"):
        xnp.pad(X, 1, mode="foo")
    with pytest.raises(ValueError, match="unsupported keyword arguments"):
        xnp.pad(X, 1, mode="edge", constant_values=2)
    with pytest.raises(ValueError, match="unsupported shape"):
        xnp.pad(X, ((1, 2, 3),))
    with pytest.raises(ValueError, match="empty axis"):
        xnp.pad(np.zeros((0, 2)), 1, mode="edge")
    with pytest.raises(ValueError, match="stat_length of 0"):
        xnp.pad(X, 1, mode="mean", stat_length=0)
    with pytest.raises(TypeError, match="integral"):
        xnp.pad(X, 1.5)
    with pytest.raises(xform.errors.ConcretizationTypeError):
        xform.jit(xnp.pad)(X, 2)


def test_take_and_along_axis_against_jax():
    idx = np.argsort(X, axis=1).astype(np.int32)

    def make(lib):
        def f(x, i, idx):
            return (
                lib.take(x, i),
                lib.take(x, i, axis=1),
                lib.take(x, i, axis=0, mode="clip"),
                lib.take(x, i, axis=1, mode="wrap"),
                lib.take(x, i, fill_value=-1.0),
                lib.take(x, i[0], axis=-1, mode="fill"),
                lib.take(x, np.zeros((0,), np.int32), axis=1),
                lib.take(np.arange(5), 2),
                lib.asarray(x).take(i),
                lib.take_along_axis(x, idx, axis=1),
                lib.take_along_axis(x, idx[:1], 1),
                lib.take_along_axis(x, i[:, :1], axis=0),
                lib.take_along_axis(x[:2], i[:, :1], axis=1, mode="clip"),
                lib.take_along_axis(x, i[0], axis=None),
                lib.take_along_axis(x[:, :1], idx, axis=0, fill_value=3.0),
                lib.put_along_axis(x, idx[:, :2], 0.5, axis=1, inplace=False),
                lib.put_along_axis(x[:, :1], i[:, :1] % 3, x[:1, 0], axis=0, inplace=False),
                lib.put_along_axis(x, i[0] % 12, -1.0, axis=None, inplace=False),
            )

        return f

    run_both(make, X, IX, idx)


def test_take_errors():
    with pytest.raises(TypeError, match="integer"):
        xnp.take(X, np.array([0.5]))
    with pytest.raises(ValueError, match="Invalid mode"):
        xnp.take(X, IX, mode="foo")
    with pytest.raises(NotImplementedError, match="raise"):
        xnp.take(X, IX, mode="raise")
    with pytest.raises(IndexError, match="empty axis"):
        xnp.take(np.zeros((0,)), np.array([0]))
    with pytest.raises(ValueError, match="same number of dimensions"):
        xnp.take_along_axis(X, IX[0], axis=1)
    with pytest.raises(TypeError, match="integer"):
        xnp.take_along_axis(X, X, axis=1)
    with pytest.raises(ValueError, match="in-place"):
        xnp.put_along_axis(X, IX, 1.0, axis=1)
    with pytest.raises(ValueError, match="broadcastable"):
        xnp.put_along_axis(X, IX, np.ones(5), axis=1, inplace=False)


def test_roll_rot90_diff_against_jax():
    def make(lib):
        def f(x, b, s):
            return (
                lib.roll(x, 1),
                lib.roll(x, -5, axis=1),
                lib.roll(x, (1, 2), (0, 1)),
                lib.roll(x, (1, 2), 1),
                lib.roll(x, 2, (0, 1)),
                lib.roll(x, s, 0),
                lib.roll(x, s),
                lib.roll(x, np.array([1, -1]), (1, 0)),
                lib.rollaxis(x[None], 2),
                lib.rollaxis(x[None], 0, 3),
                lib.rollaxis(x[None], -1, -2),
                lib.rot90(x),
                lib.rot90(x, 2),
                lib.rot90(x, -1),
                lib.rot90(x, 5, (1, 0)),
                lib.rot90(x[None], 1, (0, 2)),
                lib.diff(x),
                lib.diff(x, 2, axis=0),
                lib.diff(x, 0),
                lib.diff(b),
                lib.diff(x, prepend=1.0),
                lib.diff(x, axis=0, append=x[:1]),
                lib.diff(np.arange(5) ** 2, n=3),
                lib.diff(x[0].astype(np.int8), prepend=2),
                lib.ediff1d(x),
                lib.ediff1d(x, to_end=np.array([1, 2]), to_begin=-1),
                lib.ediff1d(np.arange(4, dtype=np.int16), to_begin=3.7),
            )

        return f

    run_both(make, X, B, np.int32(3))


def test_insert_delete_append_unstack_resize_against_jax():
    def make(lib):
        def f(x, k):
            return (
                lib.append(x, x[0]),
                lib.append(x, x[:1], axis=0),
                lib.append(x, 1),
                lib.insert(x, 1, 5.0),
                lib.insert(x, 1, 5.0, axis=1),
                lib.insert(x, 2, x[:, 0], axis=1),
                lib.insert(x, np.array([0, 2, 2]), 9.0, axis=0),
                lib.insert(x, -1, np.array([1.0, 2.0, 3.0, 4.0]), axis=0),
                lib.insert(x, k, 0.5),
                lib.insert(x, slice(1, 3), -2.0, axis=1),
                lib.insert(x[0], 10, 3),
                lib.insert(np.arange(4), 1, 2.7),
                lib.delete(x, 1),
                lib.delete(x, -1, axis=1),
                lib.delete(x, slice(0, 3, 2)),
                lib.delete(x, np.array([0, 2]), axis=1),
                lib.delete(x, B, axis=1),
                lib.delete(x, np.array([3, 1]), assume_unique_indices=True),
                lib.delete(x, k[None], axis=1, assume_unique_indices=True),
                *lib.unstack(x),
                *lib.unstack(x, axis=1),
                lib.resize(x, (5, 3)),
                lib.resize(x[0], 2),
                lib.resize(x, (2, 0)),
            )

        return f

    run_both(make, X, np.int32(2))


def test_insert_delete_errors():
    with pytest.raises(xform.errors.ConcretizationTypeError):
        xform.jit(xnp.delete)(X, np.array([1]))
    with pytest.raises(ValueError, match="boolean indices"):
        xnp.delete(X, np.array([True]), axis=1)
    with pytest.raises(ValueError, match="integer typed"):
        xnp.insert(X, np.array([0.5]), 1.0)
    with pytest.raises(ValueError, match="one-dimensional"):
        xnp.insert(X, np.array([[0]]), 1.0)
    with pytest.raises(ValueError, match="rank > 0"):
        xnp.unstack(np.float32(1))
    with pytest.raises(ValueError, match="ndim at least two"):
        xnp.rot90(X[0])
    with pytest.raises(ValueError, match="distinct"):
        xnp.rot90(X, axes=(1, 1))
    with pytest.raises(ValueError, match="non-negative"):
        xnp.diff(X, -1)
    with pytest.raises(ValueError, match="at least one dimensional"):
        xnp.diff(np.float32(1))


def test_apply_along_and_over_axes():
    def make(lib):
        def f(x):
            x3 = lib.reshape(x, (3, 2, 2))
            return (
                lib.apply_along_axis(lib.sum, 0, x),
                lib.apply_along_axis(lib.cumsum, 1, x),
                lib.apply_along_axis(lambda r, k: r[:k] * 2, 1, x3, 1),
                lib.apply_along_axis(lambda r: lib.outer(r, r), 0, x3),
                lib.apply_over_axes(lib.sum, x3, [0, 2]),
                lib.apply_over_axes(lambda a, ax: lib.max(a, ax, keepdims=True), x3, (1,)),
            )

        return f

    run_both(make, X)


def _grad_check(fn, x):
    g = xform.grad(lambda x: xnp.sum(fn(xnp, x) ** 2))(x)
    e = jax.grad(lambda x: jnp.sum(fn(jnp, x) ** 2))(x)
    assert_same(g, e, rtol=1e-5, atol=1e-5)


GRAD_CASES = [
    lambda lib, x: lib.pad(x, 2, mode="reflect"),
    lambda lib, x: lib.pad(x, ((1, 2), (3, 1)), mode="edge"),
    lambda lib, x: lib.pad(x, 3, mode="wrap"),
    lambda lib, x: lib.pad(x, 2, mode="linear_ramp", end_values=1.0),
    lambda lib, x: lib.pad(x, 2, mode="mean", stat_length=2),
    lambda lib, x: lib.pad(x, 1, constant_values=2.0),
    lambda lib, x: lib.take(x, np.array([[2, -1], [0, 7]]), axis=1),
    lambda lib, x: lib.take_along_axis(x, np.argsort(X, axis=0), axis=0),
    lambda lib, x: lib.put_along_axis(
        x, np.array([[1], [0], [2]]), x[:, :1] * 3, axis=1, inplace=False
    ),
    lambda lib, x: lib.roll(x, (1, -2), (0, 1)),
    lambda lib, x: lib.rot90(x, 3),
    lambda lib, x: lib.diff(x, 2, prepend=x[:, :1] ** 2),
    lambda lib, x: lib.insert(x, 1, x[:, 0], axis=1),
    lambda lib, x: lib.delete(x, 1, axis=1),
    lambda lib, x: lib.apply_along_axis(lambda r: r * r[0], 1, x),
]


@pytest.mark.parametrize("case", range(len(GRAD_CASES)))
def test_grad_against_jax(case):
    _grad_check(GRAD_CASES[case], X)


def test_vmap_against_jax():
    xs = np.stack([X, X * 2 - 1])
    shifts = np.array([1, -3], np.int32)
    idx = np.argsort(xs, axis=2).astype(np.int32)
    for fn, args in [
        (lambda lib: lambda x: lib.pad(x, 1, mode="symmetric"), (xs,)),
        (lambda lib: lambda x, s: lib.roll(x, s, 1), (xs, shifts)),
        (lambda lib: lambda x, i: lib.take_along_axis(x, i, 1), (xs, idx)),
        (lambda lib: lambda x, i: lib.take(x, i[0], axis=1), (xs, idx)),
        (lambda lib: lambda x: lib.diff(x, axis=0), (xs,)),
        (lambda lib: lambda x, i: lib.searchsorted(lib.sort(x[0]), x[1]), (xs, idx)),
        (lambda lib: lambda x: lib.unique(x[0] > 0, size=3, return_counts=True), (xs,)),
        (lambda lib: lambda x, s: lib.insert(x, 2, s, axis=1), (xs, shifts)),
    ]:
        assert_same(xform.vmap(fn(xnp))(*args), jax.vmap(fn(jnp))(*args))


def test_index_tricks_against_jax():
    def make(lib):
        def f(a, b):
            return (
                lib.meshgrid(a, b),
                lib.meshgrid(a, b, indexing="ij"),
                lib.meshgrid(a, b, a[:2], sparse=True),
                lib.meshgrid(a),
                lib.meshgrid(),
                lib.indices((2, 3)),
                lib.indices((2, 3), sparse=True),
                lib.indices((2,), dtype=np.float32),
                lib.indices(()),
                lib.ix_(b, np.array([0, 2])),
                lib.ix_(np.zeros((0,), np.int32)),
                lib.mgrid[0:4, 1:3],
                lib.mgrid[0:1:5j],
                lib.mgrid[0:4:3j, 0:2],
                lib.mgrid[1:3.0],
                lib.ogrid[0:3, 0:2.0],
                lib.ogrid[-1:2],
                lib.r_[-1:5:2, 0, a],
                lib.r_[a, b],
                lib.r_["0,2", a, a],
                lib.r_["0,2,0", a, a],
                lib.r_["1,2,-2", a, a],
                lib.r_["r", a, a],
                lib.r_["c", a, a],
                lib.r_[0:1:4j, 2.5],
                lib.c_[a, a],
                lib.c_[lib.ones((2, 3)), lib.zeros((2, 1))],
                lib.c_["0,2,-1", a, a],
                lib.diag_indices(3),
                lib.diag_indices(2, 3),
                lib.diag_indices_from(lib.outer(a, a)),
                lib.tril_indices(3),
                lib.tril_indices(3, 1, 4),
                lib.triu_indices(4, -1),
                lib.triu_indices(2, 0, 5),
                lib.tril_indices_from(np.ones((2, 5)), -1),
                lib.triu_indices_from(np.ones((3, 2))),
                lib.mask_indices(3, lib.triu, size=6),
                lib.mask_indices(3, lib.tril, 1, size=8),
            )

        return f

    run_both(make, np.array([1.5, 2.0, -1.0], np.float32), np.array([2, 0, 1, 1], np.int32))
    assert xnp.s_[1:2, ::-1] == np.s_[1:2, ::-1] and xnp.index_exp[3] == np.index_exp[3]
    assert_same(xnp.mask_indices(3, xnp.triu), jnp.mask_indices(3, jnp.triu))
    assert_same(xnp.diag_indices_from(np.ones((2, 2))), jnp.diag_indices_from(np.ones((2, 2))))


def test_index_tricks_errors():
    with pytest.raises(ValueError, match="must be 1D"):
        xnp.meshgrid(X)
    with pytest.raises(ValueError, match="indexing"):
        xnp.meshgrid(X[0], indexing="foo")
    with pytest.raises(ValueError, match="copy=True"):
        xnp.meshgrid(X[0], copy=False)
    with pytest.raises(ValueError, match="1-dimensional"):
        xnp.ix_(X)
    with pytest.raises(NotImplementedError, match="Boolean"):
        xnp.ix_(B)
    with pytest.raises(ValueError, match="directive"):
        xnp.r_["a,b", X]
    with pytest.raises(ValueError, match="beginning"):
        xnp.r_[X[0], "r"]
    with pytest.raises(ValueError, match="nonnegative"):
        xnp.diag_indices(-1)
    with pytest.raises(ValueError, match="equal length"):
        xnp.diag_indices_from(X)
    with pytest.raises(ValueError, match="2-D"):
        xnp.triu_indices_from(X[0])
    with pytest.raises(xform.errors.ConcretizationTypeError):
        xform.jit(xnp.mask_indices, static_argnums=1)(3, xnp.triu)
    with pytest.raises(xform.errors.ConcretizationTypeError):
        xform.jit(lambda n: xnp.indices((n,)))(3)


@pytest.mark.parametrize("method", ["scan", "scan_unrolled", "compare_all", "sort"])
def test_searchsorted_against_jax(method):
    a = np.array([-np.inf, -1.0, 0.0, 2.0, 2.0, 3.5, np.nan], np.float32)
    v = np.array([[2.0, -0.0, np.nan], [9.0, -np.inf, 0.5]], np.float32)

    def make(lib):
        def f(a, v):
            return (
                lib.searchsorted(a, v, method=method),
                lib.searchsorted(a, v, "right", method=method),
                lib.searchsorted(a[:3], 1, method=method),
                lib.searchsorted(
                    np.array([3, 1, 2]),
                    np.array([2, 0, 5]),
                    sorter=np.array([1, 2, 0]),
                    method=method,
                ),
                lib.searchsorted(np.arange(5, dtype=np.int8), 2.5, method=method),
                lib.searchsorted(a[:0], v, method=method),
                lib.searchsorted(np.array([1 + 1j, 1 + 2j, 2 + 0j]), 1 + 1.5j, method=method),
                lib.searchsorted(np.array([False, True]), True, "right", method=method),
                lib.asarray(a).searchsorted(v[0]),
            )

        return f

    run_both(make, a, v)


def test_sorting_additions_against_jax():
    x = np.array([[3, 1, 2, 1, 5], [0, 4, 4, -2, 1]], np.float32)
    u = np.array([[3, 0, 2, 1, 7], [0, 4, 4, 255, 1]], np.uint8)

    def make(lib):
        def f(x, u):
            return (
                lib.lexsort((x[0], x[1])),
                lib.lexsort([x, -x], axis=0),
                lib.lexsort((x[0, 0],)),
                lib.sort_complex(x),
                lib.sort_complex(u[0]),
                lib.sort_complex(x[0] + 1j * x[1]),
                lib.partition(x, 2),
                lib.partition(x, -1, axis=0),
                lib.partition(u, 1),
                lib.argpartition(x, 2),
                lib.argpartition(x, 0, axis=0),
                lib.argpartition(u, 3),
                lib.asarray(x).argpartition(1),
            )

        return f

    run_both(make, x, u)
    with pytest.raises(ValueError, match="1-dimensional"):
        xnp.searchsorted(X, 1.0)
    with pytest.raises(ValueError, match="side"):
        xnp.searchsorted(X[0], 1.0, side="middle")
    with pytest.raises(ValueError, match="method"):
        xnp.searchsorted(X[0], 1.0, method="foo")
    with pytest.raises(TypeError, match="len > 0"):
        xnp.lexsort(())
    with pytest.raises(ValueError, match="same shape"):
        xnp.lexsort((X[0], X[1, :2]))
    with pytest.raises(NotImplementedError, match="complex"):
        xnp.partition(X.astype(np.complex64), 1)


SA = np.array([3, 1, 2, 3, 1, 5, np.nan, np.nan, -0.0, 0.0], np.float32)
SB = np.array([2, 9, 3, 3, 0, np.nan], np.float32)
SM = np.array([[1, 2], [0, 1], [1, 2], [0, 0]], np.int32)


def test_setops_eager_against_jax():
    for lib_fn in [
        lambda lib: lib.unique(SA, return_index=True, return_inverse=True, return_counts=True),
        lambda lib: lib.unique(SA, equal_nan=False, return_counts=True),
        lambda lib: lib.unique(
            SM, axis=0, return_index=True, return_inverse=True, return_counts=True
        ),
        lambda lib: lib.unique(np.zeros((0,), np.int32), return_counts=True),
        lambda lib: tuple(lib.unique_all(SA)),
        lambda lib: tuple(lib.unique_inverse(SM)),
        lambda lib: lib.union1d(SM, SB),
        lambda lib: lib.intersect1d(SA, SB, return_indices=True),
        lambda lib: lib.setdiff1d(SA, SB),
        lambda lib: lib.setxor1d(SA, SB),
    ]:
        assert_same(lib_fn(xnp), lib_fn(jnp))
    assert xnp.unique_all(SA).counts is not None


def test_setops_sized_and_isin_under_jit():
    def make(lib):
        def f(a, b, m):
            return (
                lib.unique(
                    a,
                    size=12,
                    fill_value=-1.0,
                    return_index=True,
                    return_inverse=True,
                    return_counts=True,
                ),
                lib.unique(a, size=3, return_counts=True),
                lib.unique(m, axis=0, size=4, return_counts=True),
                tuple(lib.unique_all(a, size=9)),
                lib.union1d(a, b, size=11),
                lib.intersect1d(a, b, return_indices=True, size=5),
                lib.intersect1d(a[:4], b[:3], True, True, size=3, fill_value=9),
                lib.setdiff1d(a, b, size=6),
                lib.setdiff1d(m[0], m[1], True, size=2),
                lib.setxor1d(a, b, size=8),
                lib.setxor1d(m[:, 0], m[:, 1] + 5, True, size=8, fill_value=4),
                *(lib.isin(a, b, method=k) for k in ("auto", "binary_search", "sort")),
                lib.isin(m, a, invert=True, method="compare_all"),
                lib.isin(2, m, method="sort"),
                lib.isin(a, b[:0]),
            )

        return f

    run_both(make, SA, SB, SM)


def test_setops_errors():
    with pytest.raises(xform.errors.ConcretizationTypeError, match="size"):
        xform.jit(xnp.unique)(SA)
    with pytest.raises(xform.errors.ConcretizationTypeError):
        xform.jit(xnp.union1d)(SA, SB)
    with pytest.raises(xform.errors.ConcretizationTypeError):
        xform.jit(xnp.setdiff1d)(SA, SB)
    with pytest.raises(xform.errors.ConcretizationTypeError):
        xform.jit(xnp.intersect1d)(SA, SB)
    with pytest.raises(ValueError, match="fill_value must be specified"):
        xnp.unique(SA[:0], size=2)
    with pytest.raises(ValueError, match="not implemented"):
        xnp.isin(SA, SB, method="foo")


def test_selecting_against_jax():
    def make(lib):
        def f(x, b, i):
            return (
                lib.select([x > 0, x < -3], [x, x * 2]),
                lib.select([b], [x[0]], default=-1.0),
                lib.select([x > 1, x > 0], [1, 2.5], default=0),
                lib.piecewise(x, [x < 0, x > 2], [lambda v: -v, lambda v: v * 2, 7]),
                lib.piecewise(x, [x < 0], [0, lambda v: v**2]),
                lib.piecewise(i, [i > 1, i < 0], [lambda v: v * 3, 9]),
                lib.choose(i % 3, [x[0, :3], x[1, :3], 0.5], mode="wrap"),
                lib.choose(i[:2], [x[:2, 0], x[:2, 1]], mode="clip"),
                lib.compress(b, x, axis=1, size=2),
                lib.compress(b[:3], x, size=2, fill_value=9.0),
                lib.extract(x > 0, x, size=6),
                lib.extract(x > 0, x, size=3, fill_value=1),
                lib.place(x, x > 0, np.array([1.0, 2.0]), inplace=False),
                lib.put(x, i, np.array([-1.0, -2.0]), inplace=False),
                lib.put(x, i, 5.0, mode="clip", inplace=False),
                lib.put(x, i * 5, x[0], mode="wrap", inplace=False),
                lib.ravel_multi_index((i, i), (4, 6), mode="clip"),
                lib.ravel_multi_index((i, i + 1), (4, 6), mode="wrap", order="F"),
                lib.ravel_multi_index((i, i), (2, 3), mode="ignore", dtype=np.int16),
                lib.unravel_index(i * 3, (2, 3)),
                lib.unravel_index(i, 5),
                lib.unravel_index(np.array([-5, 30, 2]), (2, 3)),
                lib.diag(x),
                lib.diag(x, 1),
                lib.diag(x, -2),
                lib.diag(x[0]),
                lib.diag(x[0], -1),
                lib.diag(b, 2),
                lib.diagflat(x),
                lib.diagflat(x[0], 2),
                lib.diagflat(i, -1),
                lib.fill_diagonal(x, 0.5, inplace=False),
                lib.fill_diagonal(x, x[0, :2], inplace=False),
                lib.fill_diagonal(np.zeros((2, 2, 2)), 3, inplace=False),
            )

        return f

    run_both(make, X, B, IX[0])
    for fn in [
        lambda lib: lib.compress(B, X, axis=1),
        lambda lib: lib.extract(X > 0, X),
        lambda lib: lib.choose(np.array([0, 1, 0]), [X[0, :3], X[1, :3]]),
        lambda lib: lib.ravel_multi_index((np.array([1, 2]), np.array([0, 3])), (3, 4)),
    ]:
        assert_same(fn(xnp), fn(jnp))


def test_selecting_errors():
    with pytest.raises(ValueError, match="length equal"):
        xnp.select([B], [B, B])
    with pytest.raises(ValueError, match="non-empty"):
        xnp.select([], [])
    with pytest.raises(ValueError, match="functions are"):
        xnp.piecewise(X, [X > 0], [1, 2, 3])
    with pytest.raises(ValueError, match="invalid entry"):
        xnp.choose(np.array([0, 2]), [X[0, :2], X[1, :2]])
    with pytest.raises(xform.errors.ConcretizationTypeError):
        xform.jit(lambda i: xnp.choose(i, [X[0, :2], X[1, :2]]))(np.array([0, 1]))
    with pytest.raises(ValueError, match="integer typed"):
        xnp.choose(np.array([0.0]), [X[0, :1]])
    with pytest.raises(ValueError, match="1D"):
        xnp.compress(X > 0, X)
    with pytest.raises(ValueError, match="out of bounds"):
        xnp.compress(np.ones(20, bool), X)
    with pytest.raises(xform.errors.ConcretizationTypeError):
        xform.jit(xnp.extract)(X > 0, X)
    with pytest.raises(ValueError, match="in-place"):
        xnp.place(X, X > 0, 1.0)
    with pytest.raises(ValueError, match="in-place"):
        xnp.put(X, IX, 1.0)
    with pytest.raises(NotImplementedError, match="inplace=False"):
        xnp.fill_diagonal(X, 1.0)
    with pytest.raises(ValueError, match="invalid entry"):
        xnp.ravel_multi_index((np.array([5]), np.array([0])), (3, 4))
    with pytest.raises(TypeError, match="int indices"):
        xnp.ravel_multi_index((np.array([0.5]), np.array([0])), (3, 4), mode="clip", dtype=np.int32)
    with pytest.raises(ValueError, match="1d or 2d"):
        xnp.diag(np.zeros((2, 2, 2)))


def test_block_kron_vander_trim_equal_against_jax():
    def make(lib):
        def f(x, b, i):
            return (
                lib.block([[x, x[:, :1]], [x[:1], x[:1, :1]]]),
                lib.block([x[0], i]),
                lib.block(x),
                lib.block([[x[0, :3]], [i]]),
                lib.block([[[x]], [[x]]]),
                lib.kron(x, x[:2, :2]),
                lib.kron(x[0], i),
                lib.kron(2.0, i),
                lib.vander(x[0]),
                lib.vander(i, 2),
                lib.vander(x[1], 5, increasing=True),
                lib.vander(i, 0),
                lib.array_equal(x, x),
                lib.array_equal(x, x[:2]),
                lib.array_equal(
                    lib.sqrt(lib.asarray(x) - 9), lib.sqrt(lib.asarray(x) - 9), equal_nan=True
                ),
                lib.array_equal(i, i + 0.0),
                lib.array_equiv(x, x[:1]),
                lib.array_equiv(x, x[0, :3]),
                lib.array_equiv(i, i),
            )

        return f

    run_both(make, X, B, IX[0])
    z = np.array([[0, 0, 0], [0, 1, 0], [0, 0, 2], [0, 0, 0]], np.float32)
    for args in [
        (z,),
        (z, "f"),
        (z, "b", 0),
        (z, "fb", (1,)),
        (z[:, 0],),
        (z[0],),
        (np.array([0, 3, 0]), "x"),
    ]:
        assert_same(xnp.trim_zeros(*args), jnp.trim_zeros(*args))
    with pytest.raises(ValueError, match="tuples"):
        xnp.block((X, X))
    with pytest.raises(ValueError, match="empty list"):
        xnp.block([])
    with pytest.raises(ValueError, match="depths"):
        xnp.block([X, [X]])
    with pytest.raises(ValueError, match="one-dimensional"):
        xnp.vander(X)
    with pytest.raises(ValueError, match="nonnegative"):
        xnp.vander(X[0], -1)
    with pytest.raises(xform.errors.ConcretizationTypeError):
        xform.jit(xnp.trim_zeros)(X[0])


@pytest.mark.parametrize(
    "fn",
    [
        lambda lib, x: lib.kron(x, x[:2, :2] + 1),
        lambda lib, x: lib.block([[x, x[:, :1] * 2], [x[:1] ** 2, x[:1, :1]]]),
        lambda lib, x: lib.select([x > 0, x < -3], [x**2, x * 2], default=1.0),
        lambda lib, x: lib.piecewise(x, [x < 0], [lambda v: v**3, lambda v: v * 2]),
        lambda lib, x: lib.diag(lib.diag(x, 1), -1) + lib.diagflat(x[0]).sum(),
        lambda lib, x: lib.vander(x[0], 3),
    ],
)
def test_grad_more_against_jax(fn):
    _grad_check(fn, X)

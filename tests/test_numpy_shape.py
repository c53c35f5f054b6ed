"""xform.numpy shape ops, creation, contractions (dot, matmul, einsum, tensordot), sorting and
the array methods/operators, against jax.numpy (grouped jitted functions: few compiles) and
NumPy (hypothesis-drawn cases), with every bad-input error."""

import hypothesis
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import strategies as st

import xform
import xform.numpy as xnp
from tests.harness import assert_same

BF16 = np.dtype(jnp.bfloat16)


def run_both(make, *args, rtol=None, atol=None):
    """``make(lib)`` built with xform.numpy, eagerly and under xform.jit, against jax.jit."""
    expected = jax.jit(make(jnp))(*args)
    assert_same(make(xnp)(*args), expected, rtol, atol, what="eager")
    assert_same(xform.jit(make(xnp))(*args), expected, rtol, atol, what="jit")


def test_shape_ops_against_jax():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    v = np.arange(3, dtype=np.int8)

    def make(lib):
        def f(x, v):
            return (
                lib.reshape(x, (4, -1)),
                lib.reshape(x, (6, 4), order="F"),
                lib.ravel(x),
                lib.transpose(x),
                lib.transpose(x, (1, 0, 2)),
                lib.swapaxes(x, 0, -1),
                lib.moveaxis(x, 0, -1),
                lib.moveaxis(x, (0, 1), (2, 0)),
                lib.expand_dims(x, (0, -1)),
                lib.squeeze(x[:1]),
                lib.squeeze(x[:1], 0),
                lib.concatenate([x, x], axis=1),
                lib.concatenate([v, x[0, 0]], axis=None),
                lib.stack([v, v, v], axis=1),
                lib.hstack([v, v]),
                lib.vstack([v, v]),
                lib.dstack([v, v]),
                lib.broadcast_to(v, (2, 3)),
                *lib.broadcast_arrays(v, x[:, :, 0]),
                lib.atleast_1d(v[0]),
                lib.atleast_2d(v),
                lib.atleast_3d(v),
                lib.flip(x, 1),
                lib.flip(x),
                lib.fliplr(x[0]),
                *lib.split(x, 2),
                *lib.split(x, [1, 3], axis=2),
                *lib.array_split(x, 3, axis=2),
                lib.tile(v, (2, 2)),
                lib.repeat(v, 2),
                lib.stack([v, 2 * v]),
                lib.column_stack([v, v]),
                x.T,
                x.mT,
                x.reshape(4, 6),
                x.reshape((3, 8)),
                x.transpose(2, 0, 1),
                x.flatten(),
                x.astype(np.int32),
                v.astype(np.float16),
                lib.tril(x[0]),
                lib.triu(x, 1),
            )

        return f

    run_both(make, x, v)


def test_creation_against_jax():
    def make(lib):
        def f():
            return (
                lib.zeros(3),
                lib.ones((2, 2), np.int8),
                lib.full((2,), 7),
                lib.full(3, 2.5),
                lib.full((2, 3), np.arange(3, dtype=np.int32)),
                lib.zeros_like(np.ones(3, np.int8)),
                lib.ones_like(lib.asarray(2.0)),
                lib.full_like(np.ones((2,), np.float16), 3),
                lib.empty((2,)),
                lib.arange(5),
                lib.arange(2.0, 5),
                lib.arange(1, 10, 3),
                lib.arange(0, 1, 0.25),
                lib.arange(5, dtype=np.float16),
                lib.arange(10, 0, -3),
                lib.linspace(0, 1, 5),
                lib.linspace(0, 10, 4, False),
                lib.linspace(np.zeros(2), 1.0, 3, axis=1),
                lib.linspace(0, 10, 5, dtype=int),
                *lib.linspace(2, 3, 4, retstep=True),
                lib.eye(3),
                lib.eye(2, 4, 1, np.int32),
                lib.eye(3, k=-1),
                lib.identity(2, bool),
                lib.tri(3, 4, 1),
            )

        return f

    run_both(make)


def test_contractions_against_jax():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((2, 3, 4)).astype(np.float32)
    b = rng.standard_normal((4, 5)).astype(np.float32)
    v = rng.standard_normal((4,)).astype(np.float32)
    i = np.arange(12, dtype=np.int8).reshape(3, 4)

    def make(lib):
        def f(a, b, v, i):
            return (
                lib.dot(a, b),
                lib.dot(v, v),
                lib.dot(a, v),
                lib.dot(2.0, v),
                a @ b,
                lib.matmul(v, b),
                lib.matmul(a, v),
                lib.matmul(a[:, None], b[None]),
                lib.vdot(v, v),
                lib.inner(a, v),
                lib.outer(v, v),
                lib.tensordot(a, b, 1),
                lib.tensordot(a, a, ((1, 2), (1, 2))),
                lib.tensordot(b, b, 0),
                lib.einsum("ijk,kl->ijl", a, b),
                lib.einsum("ij,ij->", b, b),
                lib.einsum("...k,k", a, v),
                lib.einsum("ii->i", b[:4, :4]),
                lib.einsum("ij->ji", b),
                lib.einsum("ijk->", a),
                lib.einsum("i,j", v, v),
                lib.einsum("bij,bkj->bik", a, a),
                lib.einsum("ij,jk,kl->il", i, i.T, i),
                lib.einsum("ij,j", i, v),
                lib.trace(b),
                lib.trace(a, 1, 1, 2),
                lib.diagonal(b, -1),
                lib.diagonal(a, 1, 2, 1),
                i @ i.T,
                i.dot(v),
            )

        return f

    run_both(make, a, b, v, i, rtol=2e-5, atol=2e-5)


def test_sort_against_jax():
    x = np.array([[3, 1, 2, 1], [0, -1, 5, 5]], np.int32)
    f = np.array([2.5, np.nan, -1.0, 0.0, -0.0, np.inf], np.float32)

    def make(lib):
        def g(x, f):
            x = lib.asarray(x)
            return (
                lib.sort(x),
                lib.sort(x, axis=0),
                lib.sort(x, axis=None),
                lib.sort(f),
                lib.sort(x, descending=True),
                lib.argsort(x),
                lib.argsort(x, axis=0),
                lib.argsort(f),
                lib.argsort(x, descending=True),
                x.sort(),
                x.argsort(0),
            )

        return g

    run_both(make, x, f)


@st.composite
def einsum_case(draw):
    letters = "abcd"
    sizes = {c: draw(st.integers(1, 3)) for c in letters}
    n_ops = draw(st.integers(1, 3))
    terms = [
        "".join(draw(st.lists(st.sampled_from(letters), min_size=0, max_size=3)))
        for _ in range(n_ops)
    ]
    used = sorted(set("".join(terms)))
    out = "".join(draw(st.permutations(used))[: draw(st.integers(0, len(used)))])
    explicit = draw(st.booleans())
    spec = ",".join(terms) + ("->" + out if explicit else "")
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    ops = [rng.integers(-3, 4, tuple(sizes[c] for c in t)).astype(np.float32) for t in terms]
    return spec, ops


@hypothesis.given(einsum_case())
def test_einsum_matches_numpy(case):
    spec, ops = case
    got = xnp.einsum(spec, *ops)
    np.testing.assert_allclose(np.asarray(got), np.einsum(spec, *ops), rtol=1e-6, atol=1e-6)
    expected = jax.eval_shape(lambda: jnp.einsum(spec, *ops))
    assert got.shape == expected.shape and got.dtype == expected.dtype


@st.composite
def matmul_case(draw):
    batch = draw(st.lists(st.integers(1, 3), max_size=2))
    other = [draw(st.sampled_from([1, b])) for b in batch]
    m, k, n = (draw(st.integers(1, 3)) for _ in range(3))
    a_shape = draw(st.sampled_from([(k,), tuple(batch) + (m, k)]))
    b_shape = draw(st.sampled_from([(k,), tuple(other) + (k, n)]))
    dtype = draw(st.sampled_from([np.float32, np.int32, np.int8]))
    rng = np.random.default_rng(0)
    return (rng.integers(-3, 4, a_shape).astype(dtype), rng.integers(-3, 4, b_shape).astype(dtype))


@hypothesis.given(matmul_case())
def test_matmul_and_dot_match_numpy(case):
    a, b = case
    got = xnp.matmul(a, b)
    np.testing.assert_array_equal(np.asarray(got), np.matmul(a, b))
    assert got.dtype == jax.eval_shape(lambda: jnp.matmul(a, b)).dtype
    if b.ndim <= 2:
        np.testing.assert_array_equal(np.asarray(xnp.dot(a, b)), np.dot(a, b))


@hypothesis.given(st.lists(st.integers(0, 3), min_size=1, max_size=3).map(tuple), st.data())
def test_reshape_transpose_squeeze_match_numpy(shape, data):
    x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    perm = data.draw(st.permutations(range(len(shape))))
    np.testing.assert_array_equal(np.asarray(xnp.transpose(x, perm)), np.transpose(x, perm))
    np.testing.assert_array_equal(np.asarray(xnp.reshape(x, (-1,))), x.reshape(-1))
    np.testing.assert_array_equal(np.asarray(xnp.squeeze(x)), np.squeeze(x))
    ax = data.draw(st.integers(-len(shape), len(shape) - 1))
    np.testing.assert_array_equal(np.asarray(xnp.flip(x, ax)), np.flip(x, ax))
    np.testing.assert_array_equal(np.asarray(xnp.cumsum(x, ax)), np.cumsum(x, ax))
    np.testing.assert_array_equal(np.asarray(xnp.expand_dims(x, ax)), np.expand_dims(x, ax))


def test_operators_and_methods_keep_weak_types():
    x = np.array([1.5, -2.0, 3.0], np.float16)
    i = np.array([7, -3, 2], np.int32)

    def make(lib):
        def f(x, i):
            x, i = lib.asarray(x), lib.asarray(i)
            return (
                x + 1,
                2 * x,
                x - 1.5,
                1 - x,
                x / 2,
                3 / x,
                x // 2,
                x % 2,
                x**2,
                2**x,
                -x,
                +x,
                abs(x),
                x < 1,
                x >= i,
                x == 1.5,
                x != 1.5,
                i & 3,
                i | 1,
                i ^ 2,
                ~i,
                i << 1,
                i >> 1,
                1 << i[2],
                i % -2,
                7 // i,
                round(x[0]),
                x.sum(),
                x.mean(),
                x.max(),
                x.argmin(),
                i.prod(),
                x.std(),
                i.min(),
                i.argmax(),
                (x > 0).all(),
                (x > 0).any(),
                i.cumsum(),
                i.cumprod(),
                x.clip(0, 2),
                x.round(),
                x.conj(),
                x.real,
                x.imag,
                x.squeeze(),
                x.ravel(),
                x.swapaxes(0, 0),
                x.copy(),
                x.dot(x),
                x @ x,
                x.reshape(3, 1),
                divmod(i, 2)[0],
                x.astype(np.int32),
                i.T,
            )

        return f

    run_both(make, x, i)
    # Only eagerly: staging's JaxprTracer has a slot named `var` that hides the method.
    assert_same(xnp.asarray(x).var(), jnp.asarray(x).var())


def test_getitem_and_at_are_attached():
    x = xnp.arange(6).reshape(2, 3)
    np.testing.assert_array_equal(np.asarray(x[1]), [3, 4, 5])
    np.testing.assert_array_equal(np.asarray(x[:, 1:]), [[1, 2], [4, 5]])
    y = x.at[0, 0].set(10)
    assert int(y[0, 0]) == 10 and int(x[0, 0]) == 0
    assert [int(r.sum()) for r in x] == [3, 12]
    f = xform.jit(lambda a: a[0] * 2 + a.at[1].add(1)[1])
    np.testing.assert_array_equal(np.asarray(f(x)), [4, 7, 10])


def test_operators_reject_unknown_operands():
    x = xnp.ones(3)
    with pytest.raises(TypeError, match="unsupported operand"):
        x + [1, 2, 3]
    with pytest.raises(TypeError, match="unsupported operand"):
        x - "a"
    assert (x == "a") is False
    np.testing.assert_array_equal(np.asarray(x == 1.0), [True] * 3)


def test_namespace_dtypes_and_constants():
    assert np.dtype(xnp.float32) == np.float32 and xnp.float32 == np.float32
    assert xnp.zeros(2, xnp.bfloat16).dtype == BF16
    assert_same(xnp.float32(3), jnp.float32(3))
    assert_same(xnp.int8([1, 2]), jnp.int8([1, 2]))
    assert xnp.issubdtype(xnp.bfloat16, xnp.floating) and xnp.issubdtype(np.int8, xnp.integer)
    assert not xnp.issubdtype(np.float32, xnp.integer)
    assert xnp.isdtype(np.int8, "integral") and not xnp.isdtype(np.int8, "real floating")
    assert xnp.finfo(xnp.bfloat16).bits == 16 and xnp.iinfo(np.int8).max == 127
    assert xnp.ndarray is xform.Array and xnp.newaxis is None and xnp.pi == np.pi
    assert xnp.shape([[1, 2]]) == (1, 2) and xnp.ndim(3.0) == 0 and xnp.size(np.ones((2, 3)))
    assert xnp.result_type(np.int8, 2.0) == np.float32


def test_shape_errors():
    x = np.ones((2, 3), np.float32)
    with pytest.raises(
        TypeError, match=r"cannot reshape array of shape \(2, 3\) \(size 6\) into shape \(4,\)"
    ):
        xnp.reshape(xnp.asarray(x), (4,))
    with pytest.raises(TypeError, match="can only specify one unknown axis size"):
        xnp.reshape(xnp.asarray(x), (-1, -1))
    with pytest.raises(ValueError, match=r"cannot reshape array of size 6 into shape \(4,\)"):
        xnp.reshape(x, (4,))  # NumPy data: NumPy's reshape and error, as JAX's
    with pytest.raises(TypeError, match="transpose: axes .* are not a permutation"):
        xnp.transpose(x, (0, 0))
    with pytest.raises(ValueError, match="swapaxes: axis 2 is out of bounds"):
        xnp.swapaxes(x, 0, 2)
    with pytest.raises(ValueError, match="cannot select an axis to squeeze out"):
        xnp.squeeze(x, 0)
    with pytest.raises(ValueError, match="Need at least one array to concatenate"):
        xnp.concatenate([])
    with pytest.raises(ValueError, match="Zero-dimensional arrays cannot be concatenated"):
        xnp.concatenate([1.0, 2.0])
    with pytest.raises(TypeError, match="all input array dimensions except axis 0"):
        xnp.concatenate([x, np.ones((2, 2))])
    with pytest.raises(ValueError, match="All input arrays must have the same shape"):
        xnp.stack([x, x[0]])
    with pytest.raises(ValueError, match="array split does not result in an equal division"):
        xnp.split(x, 2, axis=1)
    with pytest.raises(ValueError, match="expand_dims: repeated axis"):
        xnp.expand_dims(x, (0, 0))
    with pytest.raises(ValueError, match="moveaxis: axis 5 is out of bounds"):
        xnp.moveaxis(x, 5, 0)
    with pytest.raises(ValueError, match="matmul input operand 1 must have ndim at least 1"):
        xnp.matmul(x, 2.0)
    with pytest.raises(ValueError, match="Incompatible shapes for matmul arguments"):
        xnp.matmul(np.ones((2, 2, 3)), np.ones((3, 3, 4)))
    with pytest.raises(
        ValueError, match="einsum: subscripts 'ij' do not match an operand of rank 1"
    ):
        xnp.einsum("ij", np.ones(3))
    with pytest.raises(ValueError, match="einsum: index 'j' has incompatible sizes"):
        xnp.einsum("ij,jk", x, x)
    with pytest.raises(ValueError, match="Number of samples, -1, must be non-negative"):
        xnp.linspace(0, 1, -1)
    with pytest.raises(TypeError, match="negative dimensions are not allowed"):
        xnp.zeros((2, -1))
    with pytest.raises(TypeError, match="'kind' argument to sort is not supported"):
        xnp.sort(x, kind="quicksort")
    with pytest.raises(ValueError, match="diagonal requires an array of at least two"):
        xnp.diagonal(np.ones(3))
    with pytest.raises(xform.errors.ConcretizationTypeError, match="arange"):
        xform.jit(xnp.arange)(3)

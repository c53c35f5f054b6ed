"""The structural family (broadcast_in_dim, reshape, squeeze, transpose, rev, pad, concatenate,
iota and the wrappers over them) against JAX: values, dtypes and weak types, eagerly and under
jit; jaxpr and StableHLO text; every bad-input error."""

import re

import hypothesis
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import strategies as st

import xform
from tests.harness import assert_same, check_against_jax, rand
from xform import core, lax
from xform.primitives import structural
from xform.runtime import dispatch

DTYPES = [
    np.dtype(d)
    for d in (
        np.bool_,
        np.int8,
        np.int32,
        np.uint8,
        np.float16,
        jnp.bfloat16,
        np.float32,
        np.complex64,
    )
]
NUMERIC = [d for d in DTYPES if d != np.bool_]

dtype_st = st.sampled_from(DTYPES)
shape_st = st.lists(st.integers(0, 3), max_size=3).map(tuple)


@st.composite
def arrays(draw, shape=None, dtype=None):
    shape = draw(shape_st) if shape is None else shape
    dtype = draw(dtype_st) if dtype is None else dtype
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    return rand(rng, shape, dtype)


# --------------------------------------------------------------------------- values vs JAX


@hypothesis.given(st.data())
def test_transpose(data):
    x = data.draw(arrays())
    perm = data.draw(st.permutations(range(x.ndim)))
    # xform also accepts negative axes; JAX's lax does not.
    xf_perm = [data.draw(st.sampled_from([p, p - x.ndim])) for p in perm]
    check_against_jax(
        lambda a: lax.transpose(a, xf_perm), lambda a: jax.lax.transpose(a, tuple(perm)), x
    )


@hypothesis.given(st.data())
def test_rev(data):
    x = data.draw(arrays())
    dims = data.draw(st.lists(st.integers(0, max(x.ndim - 1, 0)), unique=True, max_size=x.ndim))
    check_against_jax(lambda a: lax.rev(a, dims), lambda a: jax.lax.rev(a, dims), x)


@st.composite
def padding_configs(draw, shape):
    config = []
    for d in shape:
        interior = draw(st.integers(0, 2))
        dilated = 0 if d == 0 else d + (d - 1) * interior
        lo = draw(st.integers(-min(dilated, 2), 2))
        hi = draw(st.integers(-min(dilated + lo, 2), 2))
        config.append((lo, hi, interior))
    return config


@hypothesis.given(st.data())
def test_pad(data):
    x = data.draw(arrays())
    config = data.draw(padding_configs(x.shape))
    value = rand(np.random.default_rng(0), (), x.dtype)
    check_against_jax(
        lambda a, v: lax.pad(a, v, config), lambda a, v: jax.lax.pad(a, v, config), x, value
    )


def test_pad_removes_more_than_one_side():
    # A negative low edge larger than the dilated operand, made up for by the high edge.
    x = np.arange(3, dtype=np.int32)
    for config in ([(-4, 3, 0)], [(3, -4, 0)], [(-5, 4, 1)], [(-3, -1, 1)]):
        check_against_jax(
            lambda a, c=config: lax.pad(a, np.int32(7), c),
            lambda a, c=config: jax.lax.pad(a, np.int32(7), c),
            x,
        )


@hypothesis.given(st.data())
def test_concatenate(data):
    shape = data.draw(shape_st.filter(bool))
    dtype = data.draw(dtype_st)
    dim = data.draw(st.integers(0, len(shape) - 1))
    n = data.draw(st.integers(1, 3))
    xs = []
    for _ in range(n):
        s = list(shape)
        s[dim] = data.draw(st.integers(0, 3))
        xs.append(data.draw(arrays(tuple(s), dtype)))
    xf_dim = data.draw(st.sampled_from([dim, dim - len(shape)]))
    check_against_jax(
        lambda *a: lax.concatenate(a, xf_dim), lambda *a: jax.lax.concatenate(a, dim), *xs
    )


def test_concatenate_wide():
    # More operands than one stablehlo.concatenate takes: lowered as a tree, as JAX does.
    xs = [np.full((1, 2), i, np.float32) for i in range(20)]
    check_against_jax(lambda *a: lax.concatenate(a, 0), lambda *a: jax.lax.concatenate(a, 0), *xs)
    text = xform.jit(lambda *a: lax.concatenate(a, 0)).lower(*xs).as_text()
    assert text.count("stablehlo.concatenate") == 3


@hypothesis.given(st.sampled_from(NUMERIC), shape_st.filter(bool), st.data())
def test_broadcasted_iota(dtype, shape, data):
    dim = data.draw(st.integers(0, len(shape) - 1))
    xf_dim = data.draw(st.sampled_from([dim, dim - len(shape)]))
    check_against_jax(
        lambda: lax.broadcasted_iota(dtype, shape, xf_dim),
        lambda: jax.lax.broadcasted_iota(dtype, shape, dim),
    )


@pytest.mark.parametrize("dtype", NUMERIC)
def test_iota(dtype):
    for size in (0, 1, 5):
        check_against_jax(
            lambda s=size: lax.iota(dtype, s), lambda s=size: jax.lax.iota(dtype, s), jit=size == 5
        )


@hypothesis.given(
    shape_st,
    st.sampled_from([None, *DTYPES]),
    st.sampled_from([2, 2.5, True, np.float32(1.5), np.int8(-3), 1 + 2j]),
)
def test_full(shape, dtype, fill):
    if (
        isinstance(fill, complex)
        and dtype is not None
        and not np.issubdtype(dtype, np.complexfloating)
    ):
        fill = 3  # JAX warns when a complex is cast to a real dtype
    check_against_jax(
        lambda: lax.full(shape, fill, dtype), lambda: jax.lax.full(shape, fill, dtype)
    )


@hypothesis.given(st.data())
def test_full_like(data):
    x = data.draw(arrays())
    dtype = data.draw(st.sampled_from([None, np.dtype(np.float32), np.dtype(np.int8)]))
    shape = data.draw(st.sampled_from([None, (2,), ()]))
    check_against_jax(
        lambda a: lax.full_like(a, 3, dtype, shape),
        lambda a: jax.lax.full_like(a, 3, dtype, shape),
        x,
    )


def test_full_like_weak_and_shape_struct():
    check_against_jax(lambda a: lax.full_like(a, 3), lambda a: jax.lax.full_like(a, 3), 2.0)
    out = lax.full_like(xform.ShapeDtypeStruct((2, 1), np.int8), 4)
    assert out.shape == (2, 1) and out.dtype == np.int8 and not out.weak_type


@st.composite
def reshapes(draw):
    """An array and a new shape of the same size (including sizes 0 and 1)."""
    x = draw(arrays())
    size = x.size
    options = [(size,), (1, size), (size, 1, 1), tuple(reversed(x.shape))]
    if size and size % 2 == 0:
        options += [(2, size // 2), (size // 2, 1, 2)]
    if size == 0:
        options += [(0, 5), (3, 0, 2)]
    return x, draw(st.sampled_from(options))


@hypothesis.given(reshapes(), st.data())
def test_reshape(x_and_shape, data):
    x, new_sizes = x_and_shape
    check_against_jax(
        lambda a: lax.reshape(a, new_sizes), lambda a: jax.lax.reshape(a, new_sizes), x
    )
    dims = tuple(data.draw(st.permutations(range(x.ndim))))
    check_against_jax(
        lambda a: lax.reshape(a, new_sizes, dims), lambda a: jax.lax.reshape(a, new_sizes, dims), x
    )


@hypothesis.given(st.data())
def test_squeeze(data):
    shape = data.draw(st.lists(st.sampled_from([0, 1, 2]), max_size=4).map(tuple))
    x = data.draw(arrays(shape))
    ones = [i for i, s in enumerate(shape) if s == 1]
    dims = data.draw(st.lists(st.sampled_from(ones), unique=True) if ones else st.just([]))
    xf_dims = [data.draw(st.sampled_from([d, d - x.ndim])) for d in dims]
    check_against_jax(lambda a: lax.squeeze(a, xf_dims), lambda a: jax.lax.squeeze(a, dims), x)


@hypothesis.given(st.data())
def test_expand_dims(data):
    x = data.draw(arrays())
    k = data.draw(st.integers(0, 2))
    out_ndim = x.ndim + k
    dims = data.draw(
        st.lists(
            st.integers(-out_ndim, out_ndim - 1),
            min_size=k,
            max_size=k,
            unique_by=lambda d: d % out_ndim,
        )
        if k
        else st.just([])
    )
    check_against_jax(lambda a: lax.expand_dims(a, dims), lambda a: jax.lax.expand_dims(a, dims), x)


@st.composite
def broadcasts(draw):
    """An operand, a target shape and broadcast_dimensions (in any order) that fit."""
    shape = draw(st.lists(st.integers(0, 3), max_size=4).map(tuple))
    dims = draw(st.lists(st.integers(0, max(len(shape) - 1, 0)), unique=True, max_size=len(shape)))
    operand_shape = tuple(draw(st.sampled_from([shape[d], 1])) for d in dims)
    return draw(arrays(operand_shape)), shape, tuple(dims)


@hypothesis.given(broadcasts())
def test_broadcast_in_dim(case):
    x, shape, dims = case
    check_against_jax(
        lambda a: lax.broadcast_in_dim(a, shape, dims),
        lambda a: jax.lax.broadcast_in_dim(a, shape, dims),
        x,
    )


@hypothesis.given(arrays(), st.lists(st.integers(0, 3), max_size=2))
def test_broadcast(x, sizes):
    check_against_jax(lambda a: lax.broadcast(a, sizes), lambda a: jax.lax.broadcast(a, sizes), x)


# --------------------------------------------------------------------------- weak types, 0-d

# (name, xform fn, jax fn, args): each run on Python scalars (weak) and on 0-d arrays.
SCALAR_CASES = [
    ("broadcast_in_dim", lambda m, x: m.broadcast_in_dim(x, (2, 3), ())),
    ("broadcast", lambda m, x: m.broadcast(x, (2,))),
    ("reshape", lambda m, x: m.reshape(x, (1, 1))),
    ("reshape_to_0d", lambda m, x: m.reshape(m.reshape(x, (1,)), ())),
    ("squeeze", lambda m, x: m.squeeze(m.expand_dims(x, (0,)), (0,))),
    ("expand_dims", lambda m, x: m.expand_dims(x, (0, -1))),
    ("transpose", lambda m, x: m.transpose(x, ())),
    ("rev", lambda m, x: m.rev(x, ())),
    ("pad_weak_value", lambda m, x: m.pad(x, 1.0, ())),
    ("pad_strong_value", lambda m, x: m.pad(x, np.float32(1.0), ())),
    ("concatenate", lambda m, x: m.concatenate([m.broadcast(x, (1,)), m.broadcast(x, (2,))], 0)),
    (
        "concatenate_mixed",
        lambda m, x: m.concatenate([m.broadcast(x, (1,)), m.broadcast(np.float32(1), (2,))], 0),
    ),
    ("full", lambda m, x: m.full((2,), x)),
    ("full_dtype", lambda m, x: m.full((2,), x, np.float32)),
    ("full_like", lambda m, x: m.full_like(x, 4)),
]


@pytest.mark.parametrize("name,fn", SCALAR_CASES, ids=[c[0] for c in SCALAR_CASES])
@pytest.mark.parametrize("x", [2.0, np.float32(2.0)], ids=["weak", "strong"])
def test_weak_type_and_0d(name, fn, x):
    out = check_against_jax(lambda a: fn(lax, a), lambda a: fn(jax.lax, a), x)
    if name == "broadcast_in_dim" and isinstance(x, float):
        assert out.weak_type  # lax.broadcast_in_dim(2.0, ...) is weakly typed, as in JAX


def test_iota_is_not_weak():
    assert not lax.iota(np.float32, 3).weak_type
    assert not xform.jit(lambda: lax.iota(np.float32, 3))().weak_type


# --------------------------------------------------------------------------- host impls

# (primitive, operands, params): the NumPy impl must give exactly the abstract value.
HOST_CASES = [
    (
        structural.broadcast_in_dim_p,
        [np.ones((3, 1), jnp.bfloat16)],
        dict(shape=(1, 2, 3), broadcast_dimensions=(2, 0)),
    ),
    (structural.reshape_p, [np.ones((2, 3), np.float16)], dict(new_sizes=(3, 2), dimensions=None)),
    (structural.squeeze_p, [np.ones((1, 0, 1), np.uint8)], dict(dimensions=(0, 2))),
    (structural.transpose_p, [np.ones((2, 0, 3), np.complex64)], dict(permutation=(2, 0, 1))),
    (structural.rev_p, [np.ones((2, 3), np.bool_)], dict(dimensions=(0, 1))),
    (
        structural.pad_p,
        [np.ones((2, 3), jnp.bfloat16), np.array(0, jnp.bfloat16)],
        dict(padding_config=((1, -2, 1), (0, 0, 0))),
    ),
    (
        structural.concatenate_p,
        [np.ones((2, 0), np.int8), np.ones((2, 2), np.int8)],
        dict(dimension=1),
    ),
    (structural.iota_p, [], dict(dtype=np.dtype(jnp.bfloat16), shape=(2, 3), dimension=0)),
    (structural.iota_p, [], dict(dtype=np.dtype(np.float16), shape=(0,), dimension=0)),
    # 0-d operands: NumPy indexing with () would hand back a scalar, not an array.
    (structural.rev_p, [np.array(True)], dict(dimensions=())),
    (structural.pad_p, [np.array(1, np.int8), np.array(0, np.int8)], dict(padding_config=())),
    (structural.transpose_p, [np.array(1j, np.complex64)], dict(permutation=())),
    (structural.squeeze_p, [np.ones((1,), np.float16)], dict(dimensions=(0,))),
    (structural.reshape_p, [np.ones((1, 1), np.uint8)], dict(new_sizes=(), dimensions=None)),
    (
        structural.broadcast_in_dim_p,
        [np.array(2, np.int32)],
        dict(shape=(), broadcast_dimensions=()),
    ),
    (structural.concatenate_p, [np.ones((1,), np.bool_)], dict(dimension=0)),
]


@pytest.mark.parametrize("prim,args,params", HOST_CASES, ids=[str(c[0]) for c in HOST_CASES])
def test_host_impl_matches_aval_and_device(prim, args, params):
    (aval,) = core.abstract_eval(prim, *[core.get_aval(a) for a in args], **params)
    (out,) = core.host_impls[prim](*args, **params)
    assert isinstance(out, np.ndarray)
    assert out.shape == aval.shape and out.dtype == aval.dtype
    # The eager path without NumPy (GPU, TPU) compiles the single primitive with XLA.
    (dev,) = dispatch.device_apply(prim, args, params)
    assert_same(dev, out, what=str(prim))


# --------------------------------------------------------------------------- text


def test_make_jaxpr_text():
    def f(lax):
        def fun(x, y):
            a = lax.transpose(x, (1, 0))
            b = lax.pad(lax.rev(a, (0,)), 0.0, [(1, -1, 1), (0, 0, 0)])
            c = lax.concatenate([b, lax.broadcasted_iota(np.float32, (5, 2), 0)], 1)
            return lax.reshape(c, (2, 10)), lax.squeeze(lax.expand_dims(y, (0,)), (0,))

        return fun

    args = (np.ones((2, 3), np.float32), 1.0)
    text = str(xform.make_jaxpr(f(lax))(*args))
    assert "h:f32[2,10] = reshape[dimensions=None new_sizes=(2, 10) sharding=None] g" in text
    assert text == str(jax.make_jaxpr(f(jax.lax))(*args))


def test_lowered_text():
    def f(x):
        return (
            lax.transpose(x, (1, 0)),
            lax.rev(x, (1,)),
            lax.pad(x, np.float32(0), [(1, -1, 2), (0, 1, 0)]),
            lax.concatenate([x, x], 0),
            lax.broadcasted_iota(np.int32, (2, 3), 1),
            lax.reshape(x, (3, 2)),
            lax.squeeze(lax.expand_dims(x, (0,)), (0,)),
            lax.full((2,), 2.0),
        )

    text = xform.jit(f).lower(np.ones((2, 3), np.float32)).as_text()
    for pattern in [
        r"stablehlo\.transpose %arg0, dims = \[1, 0\] : \(tensor<2x3xf32>\) -> tensor<3x2xf32>",
        r"stablehlo\.reverse %arg0, dims = \[1\] : tensor<2x3xf32>",
        r"stablehlo\.pad %arg0, %\w+, low = \[1, 0\], high = \[-1, 1\], interior = \[2, 0\]"
        r" : \(tensor<2x3xf32>, tensor<f32>\) -> tensor<4x4xf32>",
        r"stablehlo\.concatenate %arg0, %arg0, dim = 0 : .* -> tensor<4x3xf32>",
        r"stablehlo\.iota dim = 1 : tensor<2x3xi32>",
        r"stablehlo\.reshape %arg0 : \(tensor<2x3xf32>\) -> tensor<3x2xf32>",
        r"stablehlo\.broadcast_in_dim %arg0, dims = \[1, 2\] : .* -> tensor<1x2x3xf32>",
        r"stablehlo\.broadcast_in_dim %\w+, dims = \[\] : \(tensor<f32>\) -> tensor<2xf32>",
    ]:
        assert re.search(pattern, text), (pattern, text)


def test_identity_ops_return_the_operand():
    x = lax.iota(np.float32, 3)
    assert lax.transpose(x, (0,)) is x
    assert lax.reshape(x, (3,)) is x
    assert lax.squeeze(x, ()) is x
    assert lax.broadcast(x, ()) is x
    assert lax.concatenate([x], 0) is x
    jaxpr = xform.make_jaxpr(lambda a: lax.transpose(lax.reshape(a, (3,), (0,)), (0,)))(x)
    assert not jaxpr.eqns
    # An identity permutation adds no transpose, even where the reshape is needed.
    jaxpr = xform.make_jaxpr(lambda: lax.reshape(2.0, (1,), ()))()
    assert [e.primitive for e in jaxpr.eqns] == [structural.reshape_p]


def test_x64_dtypes(x64):
    x = np.arange(6, dtype=np.float64).reshape(2, 3)
    out = lax.pad(lax.transpose(x, (1, 0)), np.float64(-1), [(1, 0, 1), (0, 0, 0)])
    assert out.dtype == np.float64
    assert lax.iota(np.int64, 3).dtype == np.int64
    assert xform.jit(lambda a: lax.concatenate([a, a], 1))(x).dtype == np.float64


# --------------------------------------------------------------------------- errors

X = np.ones((2, 3), np.float32)
ERRORS = [
    (lambda: lax.broadcast_in_dim(X, (2, 3), (0,)), TypeError, "one entry per operand"),
    (lambda: lax.broadcast_in_dim(X, (2, 3, 4), (1, 1)), TypeError, "duplicates"),
    (lambda: lax.broadcast_in_dim(X, (2, 3), (0, 2)), TypeError, "dimensions of the target"),
    (lambda: lax.broadcast_in_dim(X, (2, 4), (0, 1)), TypeError, r"sizes must be 1 or equal"),
    (lambda: lax.broadcast_in_dim(X, (2, -3), (0, 1)), TypeError, "negative dimension"),
    (lambda: lax.broadcast(X, (1.5,)), TypeError, "sequences of integers"),
    (lambda: lax.reshape(X, (4,)), TypeError, r"total size must be unchanged.*\(2, 3\)"),
    (lambda: lax.reshape(X, (6,), (0, 0)), TypeError, "permutation of the operand dimensions"),
    (
        lambda: structural.reshape_p.bind(X, new_sizes=(3, 2), dimensions=(1, 0)),
        TypeError,
        "must be None",
    ),
    (lambda: lax.squeeze(X, (0,)), ValueError, r"cannot squeeze dimension 0 .* size is 2"),
    (lambda: lax.squeeze(X, (2,)), ValueError, "lax.squeeze: axis 2 is out of bounds"),
    (lambda: lax.squeeze(np.ones((1, 2)), (0, -2)), ValueError, "not unique"),
    (lambda: lax.expand_dims(X, (0, 0)), ValueError, "repeated axis"),
    (lambda: lax.expand_dims(X, (0, -4)), ValueError, "repeated axis.*non-negative"),
    (lambda: lax.expand_dims(X, (4,)), ValueError, "lax.expand_dims: axis 4 is out of bounds"),
    (lambda: lax.transpose(X, (0,)), TypeError, r"\(0,\) is not a permutation"),
    (lambda: lax.transpose(X, (0, 2)), TypeError, "not a permutation"),
    (lambda: lax.transpose(X, 1), TypeError, "expected a sequence of dimensions"),
    (lambda: lax.rev(X, (0, -2)), TypeError, "must be unique"),
    (lambda: lax.rev(X, (2,)), TypeError, r"out of range for an operand of shape \(2, 3\)"),
    (
        lambda: lax.pad(X, np.int32(0), [(0, 0, 0)] * 2),
        TypeError,
        "same dtype, got float32 and int32",
    ),
    (
        lambda: lax.pad(X, np.zeros(2, np.float32), [(0, 0, 0)] * 2),
        ValueError,
        "padding_value must be a scalar",
    ),
    (lambda: lax.pad(X, np.float32(0), [(0, 0, 0)]), ValueError, "one .* triple per axis"),
    (lambda: lax.pad(X, np.float32(0), [(0, 0, -1)] * 2), ValueError, "interior padding"),
    (
        lambda: lax.pad(X, np.float32(0), [(-2, -1, 0), (0, 0, 0)]),
        ValueError,
        r"result shape \(-1, 3\)",
    ),
    (lambda: lax.pad(X, np.float32(0), [(0, 0)] * 2), TypeError, r"\(low, high, interior\)"),
    (lambda: lax.concatenate([], 0), ValueError, "non-empty"),
    (
        lambda: lax.concatenate([X, X.astype(np.int32)], 0),
        TypeError,
        "same dtypes, got float32, int32",
    ),
    (
        lambda: lax.concatenate([X, np.ones(3, np.float32)], 0),
        TypeError,
        "different numbers of dimensions",
    ),
    (lambda: lax.concatenate([X, X], 2), TypeError, "dimension 2 out of bounds"),
    (
        lambda: lax.concatenate([X, np.ones((2, 2), np.float32)], 0),
        TypeError,
        "must agree except along dimension 0",
    ),
    (lambda: structural.concatenate_p.bind(dimension=0), TypeError, "at least one operand"),
    (lambda: lax.iota(np.bool_, 3), TypeError, "iota does not accept dtype bool"),
    (
        lambda: lax.broadcasted_iota(np.int32, (2, 3), 2),
        ValueError,
        r"dimension=2 for shape=\(2, 3\)",
    ),
    (lambda: lax.iota(np.int32, -1), TypeError, "negative dimension"),
    (lambda: lax.full((2,), np.ones(2)), TypeError, r"scalar fill_value.*\(2,\)"),
]


@pytest.mark.parametrize("fn,exc,match", ERRORS, ids=[f"error{i}" for i in range(len(ERRORS))])
def test_errors(fn, exc, match):
    with pytest.raises(exc, match=match):
        fn()


def test_errors_under_jit_name_the_op():
    with pytest.raises(TypeError, match="lax.transpose: permutation"):
        xform.jit(lambda a: lax.transpose(a, (0, 0)))(X)
    with pytest.raises(xform.errors.TracerIntegerConversionError):
        xform.jit(lambda d: lax.broadcasted_iota(np.int32, (2, 3), d))(1)

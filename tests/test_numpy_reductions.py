"""xform.numpy reductions and cumulative reductions: hypothesis-drawn shapes, dtypes, axes
and keepdims. Result types come from ``jax.eval_shape`` of jax.numpy (no compiles), values
from NumPy; one grouped function is compared with ``jax.jit`` eagerly and under xform.jit."""

import warnings

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
DTYPES = [np.dtype(d) for d in (np.bool_, np.int8, np.uint8, np.int32, np.float16, np.float32)] + [
    BF16
]


@st.composite
def array_and_axis(draw, min_size=0):
    shape = tuple(draw(st.lists(st.integers(min_size, 3), max_size=3)))
    dtype = draw(st.sampled_from(DTYPES))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    if dtype == np.bool_:
        x = rng.integers(0, 2, shape).astype(bool)
    else:
        x = (
            rng.integers(-2, 3, shape).astype(dtype)
            if dtype.kind != "u"
            else rng.integers(0, 3, shape).astype(dtype)
        )
    ndim = len(shape)
    axis = draw(
        st.one_of(
            st.none(),
            st.integers(-ndim, ndim - 1) if ndim else st.none(),
            st.lists(st.integers(0, ndim - 1), unique=True, max_size=ndim).map(tuple)
            if ndim
            else st.none(),
        )
    )
    return x, axis, draw(st.booleans())


def _type_matches(xf_out, jnp_fn, *args, **kwargs):
    expected = jax.eval_shape(lambda: jnp_fn(*args, **kwargs))
    assert xf_out.shape == expected.shape
    assert xf_out.dtype == expected.dtype, (xf_out.dtype, expected.dtype)
    assert bool(xf_out.weak_type) == bool(expected.weak_type)


def _np_value(name, x, axis, keepdims, dtype):
    fn = {
        "sum": np.sum,
        "prod": np.prod,
        "max": np.max,
        "min": np.min,
        "all": np.all,
        "any": np.any,
        "mean": np.mean,
        "var": np.var,
        "std": np.std,
    }[name]
    wide = x.astype(np.float64) if x.dtype != np.bool_ else x
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # mean of an empty slice
        return np.asarray(fn(wide, axis=axis, keepdims=keepdims)).astype(dtype)


@hypothesis.given(array_and_axis())
def test_reductions_types_and_values(args):
    x, axis, keepdims = args
    for name in ["sum", "prod", "max", "min", "all", "any", "mean", "var", "std"]:
        empty = any(
            x.shape[a] == 0 for a in (range(x.ndim) if axis is None else np.atleast_1d(axis))
        )
        if name in ("max", "min") and empty:
            with pytest.raises(ValueError, match="zero-size array"):
                getattr(xnp, name)(x, axis=axis)
            continue
        out = getattr(xnp, name)(x, axis=axis, keepdims=keepdims)
        _type_matches(out, getattr(jnp, name), x, axis=axis, keepdims=keepdims)
        expected = _np_value(name, x, axis, keepdims, out.dtype)
        tol = 2e-2 if out.dtype in (np.float16, BF16) else 1e-5
        np.testing.assert_allclose(
            np.asarray(out, np.float64),
            expected.astype(np.float64),
            rtol=tol,
            atol=tol,
            equal_nan=True,
            err_msg=name,
        )


@hypothesis.given(array_and_axis(min_size=1))
def test_arg_and_cumulative_reductions(args):
    x, axis, keepdims = args
    if x.ndim == 0:
        axis = None
    single = axis if not isinstance(axis, tuple) else (axis[0] if axis else None)
    for name, np_fn in [("argmax", np.argmax), ("argmin", np.argmin)]:
        out = getattr(xnp, name)(x, axis=single, keepdims=keepdims)
        _type_matches(out, getattr(jnp, name), x, axis=single, keepdims=keepdims)
        np.testing.assert_array_equal(
            np.asarray(out), np_fn(x.astype(np.float64), axis=single, keepdims=keepdims)
        )
    for name, np_fn in [("cumsum", np.cumsum), ("cumprod", np.cumprod)]:
        out = getattr(xnp, name)(x, axis=single)
        _type_matches(out, getattr(jnp, name), x, axis=single)
        np.testing.assert_allclose(
            np.asarray(out, np.float64),
            np_fn(x.astype(np.float64), axis=single).astype(out.dtype).astype(np.float64),
            rtol=2e-2,
        )


def test_reductions_against_jax_eager_and_jit():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4) / 7 - 1
    i8 = (np.arange(12, dtype=np.int8) - 5).reshape(3, 4)

    def make(lib):
        def f(x, i8):
            return (
                lib.sum(x, axis=(0, 2)),
                lib.mean(x, 1, keepdims=True),
                lib.var(x, ddof=1),
                lib.std(x, axis=-1),
                lib.max(x, axis=0),
                lib.min(i8, 1),
                lib.prod(i8, 0),
                lib.sum(i8),
                lib.mean(i8),
                lib.argmax(x, axis=1),
                lib.argmin(i8),
                lib.cumsum(i8, axis=1),
                lib.cumprod(x, 0),
                lib.all(i8 > 0, 1),
                lib.any(x > 1),
                lib.sum(x, where=x > 0),
                lib.max(x, initial=0.5),
                lib.sum(i8, dtype=np.float32),
                lib.cumsum(i8),
                lib.mean(x, where=x > 0),
            )

        return f

    expected = jax.jit(make(jnp))(x, i8)
    assert_same(make(xnp)(x, i8), expected, rtol=1e-5, atol=1e-5, what="eager")
    assert_same(xform.jit(make(xnp))(x, i8), expected, rtol=1e-5, atol=1e-5, what="jit")
    text = str(xform.make_jaxpr(lambda v: xnp.sum(v, 0))(i8))
    assert "convert_element_type[new_dtype=int32 weak_type=False]" in text
    assert "reduce_sum" in text


def test_reduction_dtypes_in_x64():
    with xform.enable_x64(), jax.enable_x64(True):
        x = np.ones((2, 3), np.int8)
        for name in ["sum", "prod", "mean", "var", "cumsum"]:
            _type_matches(getattr(xnp, name)(x), getattr(jnp, name), x)
        _type_matches(xnp.argmax(x), jnp.argmax, x)
        _type_matches(xnp.sum(np.ones(3, np.uint8)), jnp.sum, np.ones(3, np.uint8))


def test_reduction_errors():
    x = np.ones((2, 3), np.float32)
    with pytest.raises(
        ValueError,
        match=r"sum: axis 2 is out of bounds for array of "
        r"dimension 2",
    ):
        xnp.sum(x, axis=2)
    with pytest.raises(ValueError, match="duplicate value in 'axis'"):
        xnp.mean(x, axis=(0, -2))
    with pytest.raises(ValueError, match="zero-size array to reduction operation max"):
        xnp.max(np.ones((0, 2)), axis=0)
    with pytest.raises(ValueError, match="attempt to get argmax of an empty sequence"):
        xnp.argmax(np.ones((0,)))
    with pytest.raises(ValueError, match="argmin: axis -3 is out of bounds"):
        xnp.argmin(x, axis=-3)
    with pytest.raises(NotImplementedError, match="'out' argument"):
        xnp.sum(x, out=x)
    with pytest.raises(ValueError, match="dtype argument to std must be inexact"):
        xnp.std(x, dtype=np.int32)


@pytest.mark.parametrize(
    "axis, weights_shape", [(None, (3, 4)), (1, (3, 4)), (1, (4,)), (-2, (3,)), (0, (3, 4))]
)
def test_average_against_jax(axis, weights_shape):
    a = np.arange(12.0, dtype=np.float32).reshape(3, 4)
    w = np.linspace(1.0, 2.0, int(np.prod(weights_shape)), dtype=np.float32).reshape(weights_shape)
    for returned in (False, True):
        got = xnp.average(a, axis, w, returned=returned)
        expected = jnp.average(a, axis, w, returned=returned)
        for g, e in zip(
            np.atleast_1d(got) if not returned else got,
            np.atleast_1d(expected) if not returned else expected,
            strict=True,
        ):
            np.testing.assert_allclose(np.asarray(g), np.asarray(e), rtol=1e-6)
    with pytest.raises(ValueError, match="Shape of weights must be consistent with shape of a"):
        xnp.average(a, 0, np.ones(4, np.float32))  # JAX's words

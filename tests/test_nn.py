"""xform.nn against jax.nn: values (eager, jit, float32/float64), gradients (check_grads to
order 2 and JAX's derivatives at kinks and extreme inputs), vmap, one_hot errors, initializers
(bit for bit), dot_product_attention (against JAX and a written-out NumPy attention: masks,
bias, causal, sequence lengths, local windows, grouped-query heads, jit, grad, vmap), the
scaled matmuls, and the completeness of jax.nn's and jax.nn.initializers' names."""

import functools

import hypothesis
import hypothesis.strategies as st
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import xform
import xform.numpy as xnp
from tests.harness import assert_same, check_vmap
from xform import nn
from xform.test_util import check_grads

# name -> (xform function, jax function): elementwise activations and their keyword variants.
ELEMENTWISE = {
    "relu": (nn.relu, jax.nn.relu),
    "relu6": (nn.relu6, jax.nn.relu6),
    "leaky_relu": (nn.leaky_relu, jax.nn.leaky_relu),
    "leaky_relu_0.2": (
        functools.partial(nn.leaky_relu, negative_slope=0.2),
        functools.partial(jax.nn.leaky_relu, negative_slope=0.2),
    ),
    "elu": (nn.elu, jax.nn.elu),
    "elu_0.5": (functools.partial(nn.elu, alpha=0.5), functools.partial(jax.nn.elu, alpha=0.5)),
    "celu": (nn.celu, jax.nn.celu),
    "selu": (nn.selu, jax.nn.selu),
    "gelu_tanh": (nn.gelu, jax.nn.gelu),
    "gelu_exact": (
        functools.partial(nn.gelu, approximate=False),
        functools.partial(jax.nn.gelu, approximate=False),
    ),
    "silu": (nn.silu, jax.nn.silu),
    "swish": (nn.swish, jax.nn.swish),
    "sigmoid": (nn.sigmoid, jax.nn.sigmoid),
    "hard_sigmoid": (nn.hard_sigmoid, jax.nn.hard_sigmoid),
    "hard_silu": (nn.hard_silu, jax.nn.hard_silu),
    "hard_tanh": (nn.hard_tanh, jax.nn.hard_tanh),
    "soft_sign": (nn.soft_sign, jax.nn.soft_sign),
    "softplus": (nn.softplus, jax.nn.softplus),
    "log_sigmoid": (nn.log_sigmoid, jax.nn.log_sigmoid),
    "mish": (nn.mish, jax.nn.mish),
    "identity": (nn.identity, jax.nn.identity),
}
# Smooth where check_grads samples (finite differences must not straddle a kink).
SMOOTH_POINTS = np.array([-2.3, -0.7, 0.4, 1.9, 3.1])
# Kinks and far tails, where the derivative is a convention (JAX's) or easily NaN.
KINKS = np.array([-1000.0, -30.0, -3.0, -1.0, 0.0, 1.0, 3.0, 6.0, 30.0, 1000.0])

# Reductions over an axis: (xform, jax) pairs; softmax-like ones share the signature.
SOFTMAXES = {
    "softmax": (nn.softmax, jax.nn.softmax),
    "log_softmax": (nn.log_softmax, jax.nn.log_softmax),
    "logsumexp": (nn.logsumexp, jax.nn.logsumexp),
}


def _values(dtype):
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.uniform(-8, 8, 20), KINKS[1:-1]])
    return x.astype(dtype)


def check_table(xf_table, jf_table, *args, rtol=None, atol=None, jit=True):
    """Each xform function of the table equals JAX's, eagerly and under one ``xform.jit`` of
    the whole table; the oracle is one ``jax.jit`` of the whole table (one compile each)."""
    expected = jax.jit(lambda *a: {k: f(*a) for k, f in jf_table.items()})(*args)
    got_jit = xform.jit(lambda *a: {k: f(*a) for k, f in xf_table.items()})(*args) if jit else {}
    for name, xf in xf_table.items():
        assert_same(xf(*args), expected[name], rtol, atol, what=f"{name}, eager")
        if jit:
            assert_same(got_jit[name], expected[name], rtol, atol, what=f"{name}, jit")


def _sum_grad(fn, weights=None):
    """The gradient of ``sum(fn(x) * weights)``: elementwise derivatives for weights of 1."""
    return lambda grad: grad(lambda v: (fn(v) * (1 if weights is None else weights)).sum())


def check_grad_table(xf_table, jf_table, x, weights=None, rtol=1e-6, atol=1e-7):
    """Gradients of each function (summed against ``weights``) equal JAX's and are finite."""
    xf_grads = {k: _sum_grad(f, weights)(xform.grad) for k, f in xf_table.items()}
    jf_grads = {k: _sum_grad(f, weights)(jax.grad) for k, f in jf_table.items()}
    expected = jax.jit(lambda v: {k: g(v) for k, g in jf_grads.items()})(x)
    for name, g in xf_grads.items():
        got = g(x)
        assert np.all(np.isfinite(np.asarray(got))), f"{name}: {got}"
        assert_same(got, expected[name], rtol, atol, check_weak_type=False, what=name)


XF_ELEMENTWISE = {k: v[0] for k, v in ELEMENTWISE.items()}
JF_ELEMENTWISE = {k: v[1] for k, v in ELEMENTWISE.items()}


# --------------------------------------------------------------------------- values


def test_elementwise_values_f32():
    check_table(XF_ELEMENTWISE, JF_ELEMENTWISE, _values(np.float32), rtol=3e-6, atol=1e-6)


def test_elementwise_values_f64(x64):
    with jax.enable_x64(True):
        check_table(
            XF_ELEMENTWISE, JF_ELEMENTWISE, _values(np.float64), rtol=1e-13, atol=1e-14, jit=False
        )


def test_python_scalars_stay_weak():
    names = ("relu", "sigmoid", "softplus", "gelu_tanh", "elu")
    expected = jax.jit(lambda v: {k: JF_ELEMENTWISE[k](v) for k in names})(0.5)
    for name in names:
        assert_same(XF_ELEMENTWISE[name](0.5), expected[name], what=name)


# --------------------------------------------------------------------------- gradients


@pytest.mark.parametrize("name", ELEMENTWISE)
def test_elementwise_check_grads(name, x64):
    xf, _ = ELEMENTWISE[name]
    check_grads(xf, (SMOOTH_POINTS,), order=2)


def test_elementwise_grads_at_kinks_and_tails_equal_jax():
    # relu'(0) == 0, relu6'(6) == 0, softplus'(0) == 1/2, elu at 0, far tails finite.
    check_grad_table(XF_ELEMENTWISE, JF_ELEMENTWISE, KINKS.astype(np.float32))


def test_softplus_derivative_at_zero_is_half():
    # A plain derivative of logaddexp's max/abs formula gives 0 here.
    assert float(xform.grad(nn.softplus)(0.0)) == 0.5
    assert float(xform.grad(nn.log_sigmoid)(0.0)) == 0.5


def test_log_sigmoid_extremes():
    x = np.array([-1000.0, -100.0, 100.0, 1000.0], np.float32)
    np.testing.assert_allclose(np.asarray(nn.log_sigmoid(x)), [-1000, -100, 0, 0], atol=1e-30)
    got = xform.grad(lambda v: nn.log_sigmoid(v).sum())(x)
    np.testing.assert_array_equal(np.asarray(got), [1, 1, 0, 0])


@pytest.mark.parametrize("name", SOFTMAXES)
def test_softmax_family_check_grads(name, x64):
    xf, _ = SOFTMAXES[name]
    x = np.random.default_rng(1).standard_normal((3, 4))
    check_grads(xf, (x,), order=2)
    check_grads(lambda v: xf(v, axis=0), (x,), order=2)


def test_softmax_family_large_logits():
    x = np.array([[1000.0, 1000.0, -1000.0], [1e4, 0.0, 1e4 - 1.0]], np.float32)
    xfs, jfs = ({k: v[i] for k, v in SOFTMAXES.items()} for i in (0, 1))
    check_table(xfs, jfs, x, jit=False)
    for name, xf in xfs.items():
        out = np.asarray(xf(x))
        assert np.all(np.isfinite(out) | (out == -np.inf)), name
    # Weighted sums, so that the gradients of softmax are not identically zero.
    weights = np.arange(6, dtype=np.float32).reshape(2, 3)
    check_grad_table(
        {k: xfs[k] for k in ("softmax", "log_softmax")},
        {k: jfs[k] for k in ("softmax", "log_softmax")},
        x,
        weights,
        atol=1e-6,
    )
    check_grad_table({"logsumexp": xfs["logsumexp"]}, {"logsumexp": jfs["logsumexp"]}, x)


def test_logsumexp_of_equal_large_values():
    x = np.array([1000.0, 1000.0], np.float32)
    assert np.isclose(float(nn.logsumexp(x)), 1000 + np.log(2))
    np.testing.assert_array_equal(np.asarray(xform.grad(nn.logsumexp)(x)), [0.5, 0.5])


# --------------------------------------------------------------------------- softmax options

AXES = (-1, 0, 1, (0, 2), None)


def test_softmax_family_axes():
    x = np.random.default_rng(2).standard_normal((2, 3, 4)).astype(np.float32)
    xfs = {
        f"{k}, axis={a}": functools.partial(v[0], axis=a)
        for k, v in SOFTMAXES.items()
        for a in AXES
    }
    jfs = {
        f"{k}, axis={a}": functools.partial(v[1], axis=a)
        for k, v in SOFTMAXES.items()
        for a in AXES
    }
    check_table(xfs, jfs, x, rtol=3e-6, atol=1e-6)


def test_softmax_family_where():
    x = np.random.default_rng(3).standard_normal((3, 5)).astype(np.float32)
    where = np.random.default_rng(4).random((3, 5)) > 0.3
    where[:, 0] = True
    xfs = {k: functools.partial(v[0], where=where) for k, v in SOFTMAXES.items()}
    jfs = {k: functools.partial(v[1], where=where) for k, v in SOFTMAXES.items()}
    check_table(xfs, jfs, x, rtol=3e-6, atol=1e-6)
    weights = np.where(where, np.arange(1.0, 16.0).reshape(3, 5), 0).astype(np.float32)
    check_grad_table(
        {k: xfs[k] for k in ("softmax", "log_softmax")},
        {k: jfs[k] for k in ("softmax", "log_softmax")},
        x,
        weights,
        rtol=1e-5,
        atol=1e-6,
    )


@pytest.mark.parametrize("name", SOFTMAXES)
def test_softmax_family_vmap(name):
    xf, jf = SOFTMAXES[name]
    x = np.random.default_rng(5).standard_normal((4, 3, 5)).astype(np.float32) * 10
    # A jitted oracle: jax.vmap of it is one compile, not one per primitive.
    check_vmap(xf, jax.jit(jf), (x,), rtol=3e-6, atol=1e-6, jit=False)
    check_vmap(
        lambda v: xf(v, axis=0),
        jax.jit(functools.partial(jf, axis=0)),
        (x,),
        in_axes=1,
        rtol=3e-6,
        atol=1e-6,
        loop=False,
    )


def test_grad_of_log_softmax_under_vmap():
    x = np.random.default_rng(6).standard_normal((4, 5)).astype(np.float32) * 50

    def xf(v):
        return xform.grad(lambda u: nn.log_softmax(u)[0])(v)

    check_vmap(
        xf,
        jax.jit(jax.grad(lambda u: jax.nn.log_softmax(u)[0])),
        (x,),
        rtol=1e-5,
        atol=1e-6,
        jit=False,
    )


def _np_softmax(x, axis):
    e = np.exp(x - x.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


@hypothesis.given(
    shape=st.lists(st.integers(1, 4), min_size=1, max_size=3),
    seed=st.integers(0, 2**31 - 1),
    data=st.data(),
)
def test_softmax_sums_to_one(shape, seed, data):
    # Against NumPy in float64 (a JAX oracle would compile for every drawn shape).
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    x = np.random.default_rng(seed).normal(0, 30, shape).astype(np.float32)
    got = np.asarray(nn.softmax(x, axis=axis))
    np.testing.assert_allclose(got, _np_softmax(x.astype(np.float64), axis), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(got.sum(axis), 1, rtol=1e-5)
    lse = np.asarray(nn.log_softmax(x, axis=axis))
    np.testing.assert_allclose(np.exp(lse), got, rtol=1e-5, atol=1e-7)


# --------------------------------------------------------------------------- one_hot


def test_one_hot():
    x = np.array([[0, 2, 5], [-1, 1, 3]], np.int32)
    cases = [(a, d) for a in (-1, 0, 1, -2) for d in (None, np.float32, np.int32, np.bool_)]
    check_table(
        {
            f"axis={a}, dtype={d}": functools.partial(nn.one_hot, num_classes=4, dtype=d, axis=a)
            for a, d in cases
        },
        {
            f"axis={a}, dtype={d}": functools.partial(
                jax.nn.one_hot, num_classes=4, dtype=d, axis=a
            )
            for a, d in cases
        },
        x,
    )


def test_one_hot_under_vmap():
    x = np.array([[0, 2], [3, 1], [1, 1]], np.int32)
    check_vmap(lambda v: nn.one_hot(v, 4), jax.jit(lambda v: jax.nn.one_hot(v, 4)), (x,), jit=False)


def test_one_hot_errors():
    x = np.array([0, 1])
    with pytest.raises(TypeError, match="num_classes"):
        nn.one_hot(x, 3.0)
    with pytest.raises(TypeError, match="num_classes"):
        nn.one_hot(x, "3")
    with pytest.raises(xform.errors.ConcretizationTypeError, match="num_classes"):
        xform.jit(lambda n: nn.one_hot(x, n))(3)
    with pytest.raises(TypeError, match="num_classes"):
        nn.one_hot(x, -1)
    with pytest.raises(ValueError, match="out of bounds"):
        nn.one_hot(x, 3, axis=2)
    with pytest.raises(TypeError, match="axis"):
        nn.one_hot(x, 3, axis="batch")
    with pytest.raises(TypeError, match="`x`.*bool"):
        nn.one_hot(np.array([True, False]), 2)
    with pytest.warns(DeprecationWarning, match="integer"):
        got = nn.one_hot(np.array([0.0, 1.7, 2.0], np.float32), 3)
    np.testing.assert_array_equal(np.asarray(got), np.diag([1.0, 0.0, 1.0]))


def test_one_hot_concrete_array_num_classes():
    assert_same(nn.one_hot(np.array([1]), xnp.array(3)), jax.nn.one_hot(np.array([1]), 3))


# --------------------------------------------------------------------------- standardize


def test_standardize():
    x = np.random.default_rng(7).normal(2, 3, (3, 4)).astype(np.float32)
    cases = [(a, alg) for a in (-1, 0, (0, 1), None) for alg in ("fast", "stable")]
    check_table(
        {
            f"{a}, {alg}": functools.partial(nn.standardize, axis=a, algorithm=alg)
            for a, alg in cases
        },
        {
            f"{a}, {alg}": functools.partial(jax.nn.standardize, axis=a, algorithm=alg)
            for a, alg in cases
        },
        x,
        rtol=1e-5,
        atol=1e-5,
    )


def test_standardize_options_and_grads(x64):
    x = np.random.default_rng(8).normal(2, 3, (3, 4))
    where = np.array([[True, True, False, True]] * 3)
    with jax.enable_x64(True):
        assert_same(
            nn.standardize(x, where=where),
            jax.nn.standardize(x, where=where),
            rtol=1e-12,
            atol=1e-12,
        )
        assert_same(
            nn.standardize(x, mean=1.0, variance=4.0, epsilon=0.0),
            jax.nn.standardize(x, mean=1.0, variance=4.0, epsilon=0.0),
        )
    check_grads(lambda v: nn.standardize(v, algorithm="stable"), (x,), order=2)
    check_grads(nn.standardize, (x,), order=2)


def test_standardize_errors():
    with pytest.raises(ValueError, match="algorithm"):
        nn.standardize(np.ones(3), algorithm="slow")
    with pytest.raises(TypeError, match="mean"):
        nn.standardize(np.ones(3), mean=[1.0, 2.0, 3.0])


# --------------------------------------------------------------------------- initializers

initializers = nn.initializers

# name -> (builder, args, kwargs)
INITIALIZERS = {
    "glorot_uniform": ("glorot_uniform", (), {}),
    "glorot_normal": ("glorot_normal", (), {}),
    "he_normal": ("he_normal", (), {}),
    "he_uniform": ("he_uniform", (), {}),
    "lecun_normal": ("lecun_normal", (), {}),
    "lecun_uniform": ("lecun_uniform", (), {}),
    "normal": ("normal", (), {}),
    "normal(2)": ("normal", (2.0,), {}),
    "uniform": ("uniform", (), {}),
    "uniform(3)": ("uniform", (3.0,), {}),
    "truncated_normal": ("truncated_normal", (0.5,), {}),
    "fan_out normal": ("variance_scaling", (2.0, "fan_out", "normal"), {}),
    "fan_geo_avg uniform": (
        "variance_scaling",
        (0.5, "fan_geo_avg", "uniform"),
        {"in_axis": 0, "out_axis": 2},
    ),
    "batch axis": (
        "variance_scaling",
        (1.0, "fan_in", "truncated_normal"),
        {"in_axis": (0, 1), "out_axis": -1, "batch_axis": 2},
    ),
}


def _inits(module):
    return {
        name: getattr(module, builder)(*args, **kwargs)
        for name, (builder, args, kwargs) in INITIALIZERS.items()
    }


def _shape_for(name):
    return (2, 3, 4, 5) if name in ("fan_geo_avg uniform", "batch axis", "he_uniform") else (4, 6)


def test_initializers_match_jax_bit_for_bit():
    # xform.random gives JAX's bits, so the same key gives JAX's values: under jit exactly, and
    # eagerly to the last bit (XLA may fold the scale into the draw inside one jit).
    key = np.asarray(jax.random.PRNGKey(7))
    xf_inits, jf_inits = _inits(initializers), _inits(jax.nn.initializers)
    expected = jax.jit(lambda k: {n: f(k, _shape_for(n)) for n, f in jf_inits.items()})(key)
    got_jit = xform.jit(lambda k: {n: f(k, _shape_for(n)) for n, f in xf_inits.items()})(key)
    for name in xf_inits:
        assert_same(got_jit[name], expected[name], 0, 0, what=f"{name}, jit")
    # Eagerly each initializer compiles its own sampler: a few stand for the rest.
    for name in sorted(xf_inits)[::5]:
        assert_same(
            xf_inits[name](key, _shape_for(name)), expected[name], 2.5e-7, 0, what=f"{name}, eager"
        )


def test_initializers_float64_and_constants(x64):
    key = np.asarray(jax.random.PRNGKey(3))

    def table(module, dtype):
        return {
            "glorot_uniform": module.glorot_uniform(),
            "he_normal": module.he_normal(),
            "normal": module.normal(),
            "zeros": module.zeros,
            "ones int32": functools.partial(module.ones, dtype=dtype),
            "constant": module.constant(-7.0),
        }

    xf_inits, jf_inits = table(initializers, np.int32), table(jax.nn.initializers, jnp.int32)
    with jax.enable_x64(True):
        expected = jax.jit(lambda k: {n: f(k, (4, 6)) for n, f in jf_inits.items()})(key)
    got_jit = xform.jit(lambda k: {n: f(k, (4, 6)) for n, f in xf_inits.items()})(key)
    for name, xf in xf_inits.items():
        assert_same(got_jit[name], expected[name], 0, 0, what=f"{name}, jit")
        assert_same(xf(key, (4, 6)), expected[name], 1e-15, 0, what=f"{name}, eager")


def test_initializers_errors():
    key = np.asarray(jax.random.PRNGKey(0))
    with pytest.raises(ValueError, match="in_axis"):
        initializers.glorot_uniform()(key, (5,))
    with pytest.raises(ValueError, match="mode"):
        initializers.variance_scaling(1.0, "fan_sideways", "normal")
    with pytest.raises(ValueError, match="distribution"):
        initializers.variance_scaling(1.0, "fan_in", "cauchy")
    with pytest.raises(TypeError, match="shape"):
        initializers.normal()(key, 3)
    with pytest.raises(TypeError, match="shape"):
        initializers.zeros(key, (2.5, 3))


# --------------------------------------------------------------------------- newer activations

NEW_ELEMENTWISE = {
    "squareplus": (nn.squareplus, jax.nn.squareplus),
    "squareplus_b1": (
        functools.partial(nn.squareplus, b=1.0),
        functools.partial(jax.nn.squareplus, b=1.0),
    ),
    "sparse_plus": (nn.sparse_plus, jax.nn.sparse_plus),
    "sparse_sigmoid": (nn.sparse_sigmoid, jax.nn.sparse_sigmoid),
    "tanh": (nn.tanh, jax.nn.tanh),
    "log1mexp": (
        lambda x: nn.log1mexp(xnp.abs(x) + 0.01),
        lambda x: jax.nn.log1mexp(jnp.abs(x) + 0.01),
    ),
    "glu": (nn.glu, jax.nn.glu),
    "glu_axis0": (
        lambda x: nn.glu(x.reshape(2, -1), axis=0),
        lambda x: jax.nn.glu(x.reshape(2, -1), axis=0),
    ),
}
XF_NEW = {k: v[0] for k, v in NEW_ELEMENTWISE.items()}
JF_NEW = {k: v[1] for k, v in NEW_ELEMENTWISE.items()}


def test_new_activations_values_and_grads():
    x = _values(np.float32)  # 28 values, including +-1 and 0 (the sparse_* kinks)
    check_table(XF_NEW, JF_NEW, x, rtol=3e-6, atol=1e-6)
    check_grad_table(XF_NEW, JF_NEW, x, rtol=3e-6, atol=1e-6)
    assert_same(nn.sparse_plus(2), jax.nn.sparse_plus(2))  # a Python int promotes as JAX's
    assert_same(nn.squareplus(np.int32(3)), jax.nn.squareplus(np.int32(3)))


def test_log1mexp_small_and_large_x():
    x = np.array([1e-6, 1e-3, 0.5, np.log(2.0), 2.0, 40.0], np.float32)
    assert_same(nn.log1mexp(x), jax.nn.log1mexp(x), 2e-6, 0)
    assert_same(
        xform.grad(lambda v: nn.log1mexp(v).sum())(x),
        jax.grad(lambda v: jax.nn.log1mexp(v).sum())(x),
        2e-6,
        0,
    )


def test_logmeanexp():
    x = np.random.default_rng(1).normal(size=(3, 4)).astype(np.float32)
    where = np.array([[1, 1, 0, 1], [0, 0, 0, 1], [1, 1, 1, 1]], bool)
    for kwargs in ({}, {"axis": 1}, {"axis": 0, "keepdims": True}, {"axis": 1, "where": where}):
        assert_same(
            nn.logmeanexp(x, **kwargs), jax.nn.logmeanexp(x, **kwargs), 2e-6, 1e-6, what=str(kwargs)
        )
    g = xform.grad(lambda v: nn.logmeanexp(v, axis=1, where=where).sum())(x)
    assert_same(
        g, jax.grad(lambda v: jax.nn.logmeanexp(v, axis=1, where=where).sum())(x), 2e-6, 1e-7
    )
    assert_same(nn.logmeanexp(np.arange(6)), jax.nn.logmeanexp(np.arange(6)), 2e-6, 0)


def test_new_activation_errors():
    with pytest.raises(AssertionError, match=r"glu: .*divisible by 2.*\(3, 5\)"):
        nn.glu(np.ones((3, 5)))
    with pytest.raises(TypeError, match="squareplus"):
        nn.squareplus([1.0, 2.0])
    with pytest.raises(TypeError, match="log1mexp"):
        nn.log1mexp("x")


# --------------------------------------------------------------------------- attention


def _attention_inputs(b=2, t=5, s=6, n=4, k=2, h=8, dtype=np.float32, seed=0):
    rng = np.random.default_rng(seed)
    q = rng.normal(size=(b, t, n, h)).astype(dtype)
    kk = rng.normal(size=(b, s, k, h)).astype(dtype)
    v = rng.normal(size=(b, s, k, h)).astype(dtype)
    return q, kk, v


_RNG = np.random.default_rng(5)
_BIAS = _RNG.normal(size=(2, 4, 5, 6)).astype(np.float32)
_BIAS_1HEAD = _RNG.normal(size=(1, 1, 5, 6)).astype(np.float32)
_MASK = _RNG.uniform(size=(2, 4, 5, 6)) > 0.3
_QLEN = np.array([3, 5], np.int32)
_KVLEN = np.array([6, 2], np.int32)
# name -> (bias, mask, keyword arguments), all on the GQA inputs (4 query heads, 2 kv heads).
ATTENTION_CASES = {
    "plain": (None, None, {}),
    "bias": (_BIAS, None, {}),
    "bias one head": (_BIAS_1HEAD, None, {"scale": 0.3}),
    "mask": (None, _MASK, {}),
    "causal": (None, None, {"is_causal": True}),
    "seq lengths": (None, None, {"query_seq_lengths": _QLEN, "key_value_seq_lengths": _KVLEN}),
    "window": (None, None, {"local_window_size": (2, 1)}),
    "window int causal": (None, None, {"local_window_size": 1, "is_causal": True}),
    "all": (
        _BIAS,
        _MASK,
        {
            "is_causal": True,
            "query_seq_lengths": _QLEN,
            "key_value_seq_lengths": _KVLEN,
            "local_window_size": 3,
            "implementation": "xla",
        },
    ),
}


def _attention_table(attention):
    def run(q, k, v):
        return {
            name: attention(q, k, v, bias, mask, **kw)
            for name, (bias, mask, kw) in ATTENTION_CASES.items()
        }

    return run


def _reference_attention(q, k, v, bias, mask, kw):
    """softmax(Q K^T / sqrt(d) + bias) V written out in NumPy, masks as -inf-like logits."""
    b, t, n, h = q.shape
    s, kh = k.shape[1], k.shape[2]
    k, v = np.repeat(k, n // kh, axis=2), np.repeat(v, n // kh, axis=2)
    logits = np.einsum("btnh,bsnh->bnts", q, k).astype(np.float64) * kw.get("scale", h**-0.5)
    if bias is not None:
        logits = logits + bias
    keep = np.ones(logits.shape, bool) if mask is None else np.broadcast_to(mask, logits.shape)
    qi, ki = np.arange(t)[:, None], np.arange(s)[None, :]
    if kw.get("is_causal"):
        keep = keep & (qi >= ki)
    window = kw.get("local_window_size")
    if window is not None:
        left, right = (window, window) if isinstance(window, int) else window
        keep = keep & (qi <= ki + left) & (qi >= ki - right)
    qlen = kw.get("query_seq_lengths", np.full(b, t))
    kvlen = kw.get("key_value_seq_lengths", np.full(b, s))
    keep = keep & (np.arange(t)[None, None, :, None] < qlen[:, None, None, None])
    keep = keep & (np.arange(s)[None, None, None, :] < kvlen[:, None, None, None])
    logits = np.where(keep, logits, -0.7 * np.finfo(np.float32).max)
    probs = np.exp(logits - logits.max(-1, keepdims=True))
    probs /= probs.sum(-1, keepdims=True)
    out = np.einsum("bnts,bsnh->btnh", probs, v)
    return out * (np.arange(t)[None, :] < qlen[:, None])[:, :, None, None]


def test_dot_product_attention_matches_jax_and_reference():
    q, k, v = _attention_inputs()
    expected = jax.jit(_attention_table(jax.nn.dot_product_attention))(q, k, v)
    got_jit = xform.jit(_attention_table(nn.dot_product_attention))(q, k, v)
    for name, (bias, mask, kw) in ATTENTION_CASES.items():
        assert_same(got_jit[name], expected[name], 2e-5, 2e-6, what=f"{name}, jit")
        reference = _reference_attention(q, k, v, bias, mask, kw).astype(np.float32)
        np.testing.assert_allclose(np.asarray(got_jit[name]), reference, 2e-5, 2e-6, err_msg=name)
    bias, mask, kw = ATTENTION_CASES["all"]
    assert_same(
        nn.dot_product_attention(q, k, v, bias, mask, **kw),
        expected["all"],
        2e-5,
        2e-6,
        what="all, eager",
    )


def test_dot_product_attention_grads():
    q, k, v = _attention_inputs(seed=1)
    bias, mask, kw = ATTENTION_CASES["all"]
    w = np.random.default_rng(2).normal(size=q.shape).astype(np.float32)

    def loss(attention):
        return lambda q, k, v, bias: (attention(q, k, v, bias, mask, **kw) * w).sum()

    expected = jax.jit(jax.grad(loss(jax.nn.dot_product_attention), (0, 1, 2, 3)))(q, k, v, bias)
    got = xform.jit(xform.grad(loss(nn.dot_product_attention), (0, 1, 2, 3)))(q, k, v, bias)
    assert_same(got, expected, 5e-5, 5e-6)


def test_dot_product_attention_layouts_dtypes_and_residual():
    q, k, v = _attention_inputs(b=1, n=2, k=2, h=4)
    qb, kb, vb = (a.astype(jnp.bfloat16) for a in (q, k, v))

    def run(attention):
        # Unbatched T N H inputs with the logsumexp residual; bfloat16 in and out (the
        # softmax runs in float32), as JAX's.
        return lambda q, k, v, qb, kb, vb: (
            attention(q[0], k[0], v[0], is_causal=True, return_residual=True),
            attention(qb, kb, vb, is_causal=True),
        )

    (out, res), out_bf16 = xform.jit(run(nn.dot_product_attention))(q, k, v, qb, kb, vb)
    (e_out, e_res), e_bf16 = jax.jit(run(jax.nn.dot_product_attention))(q, k, v, qb, kb, vb)
    assert_same((out, res), (e_out, e_res), 2e-5, 2e-6)
    assert_same(out_bf16, e_bf16, 2e-2, 2e-2)
    # vmap over a leading axis equals jax.vmap and a loop.
    q3, k3, v3 = _attention_inputs(b=3, t=4, s=4, n=2, k=1, h=4, seed=3)
    check_vmap(
        xform.jit(nn.dot_product_attention),
        jax.nn.dot_product_attention,
        (q3[:, None], k3[:, None], v3[:, None]),
        rtol=2e-5,
        atol=2e-6,
        jit=False,
    )


def test_dot_product_attention_errors():
    q, k, v = _attention_inputs()
    with pytest.raises(ValueError, match=r"query shape should be \(2, \*, \*, 8\).*\(2, 5, 4, 6\)"):
        nn.dot_product_attention(q[..., :6], k, v)
    with pytest.raises(ValueError, match=r"value shape should be .*\(2, 6, 2, 8\)"):
        nn.dot_product_attention(q, k, v[:, :3])
    with pytest.raises(ValueError, match=r"multiple of key/value heads.*3 vs 2"):
        nn.dot_product_attention(q[:, :, :3], k, v)
    with pytest.raises(ValueError, match="query dtype should be float32"):
        nn.dot_product_attention(q.astype(np.float16), k, v)
    with pytest.raises(ValueError, match="mask dtype should be bool"):
        nn.dot_product_attention(q, k, v, mask=_MASK.astype(np.int32))
    with pytest.raises(ValueError, match="query_seq_lengths dtype should be int32"):
        nn.dot_product_attention(q, k, v, query_seq_lengths=_QLEN.astype(np.float32))
    with pytest.raises(AssertionError, match=r"bias heads must be 1 or 4.*\(1, 2, 5, 6\)"):
        nn.dot_product_attention(q, k, v, bias=np.ones((1, 2, 5, 6), np.float32))
    with pytest.raises(RuntimeError, match="cuDNN is not detected"):
        nn.dot_product_attention(q, k, v, implementation="cudnn")
    with pytest.raises(ValueError, match="unsupported implementation"):
        nn.dot_product_attention(q, k, v, implementation="flash")


# --------------------------------------------------------------------------- scaled matmuls


def test_scaled_matmul_and_dot_general():
    rng = np.random.default_rng(4)
    a, b = rng.normal(size=(2, 3, 64)), rng.normal(size=(2, 5, 64))
    sa, sb = rng.uniform(0.5, 2, size=(2, 3, 2)), rng.uniform(0.5, 2, size=(2, 5, 2))
    a, b, sa, sb = (x.astype(np.float32) for x in (a, b, sa, sb))
    expected = np.einsum("bmk,bnk->bmn", a * np.repeat(sa, 32, -1), b * np.repeat(sb, 32, -1))
    got = nn.scaled_matmul(a, b, sa, sb)
    assert got.dtype == np.float32
    np.testing.assert_allclose(np.asarray(got), expected, 2e-5, 2e-5)
    a8 = a.astype(jnp.float8_e4m3fn)
    s8 = np.ones((2, 3, 2), jnp.float8_e8m0fnu)
    np.testing.assert_allclose(
        np.asarray(nn.scaled_matmul(a8, a8, s8, s8, jnp.bfloat16).astype(np.float32)),
        np.einsum("bmk,bnk->bmn", *(a8.astype(np.float32),) * 2),
        1e-2,
    )
    dims = (((2,), (2,)), ((0,), (0,)))
    assert_same(
        nn.scaled_dot_general(a, b, dims), jax.nn.scaled_dot_general(a, b, dims), 2e-6, 2e-6
    )
    for mode in ("mxfp8", "nvfp4"):
        mine, theirs = (
            nn.get_scaled_dot_general_config(mode),
            jax.nn.get_scaled_dot_general_config(mode),
        )
        assert (mine.mode, mine.block_size, mine.data_type, mine.scale_type) == (
            theirs.mode,
            theirs.block_size,
            theirs.data_type,
            theirs.scale_type,
        )
    with pytest.raises(ValueError, match=r"matching batch \(B\) and contract.*\(2, 3, 64\)"):
        nn.scaled_matmul(a, b[:, :, :32], sa, sb)
    with pytest.raises(ValueError, match="3-dimensional"):
        nn.scaled_matmul(a[0], b, sa, sb)
    with pytest.raises(ValueError, match="unsupported mode"):
        nn.get_scaled_dot_general_config("int4")
    with pytest.raises(NotImplementedError, match="scaled_dot_general"):
        nn.scaled_dot_general(a, b, dims, configs=[nn.get_scaled_dot_general_config("mxfp8")] * 3)


# --------------------------------------------------------------------------- orthogonal inits


def test_orthogonal_initializers_match_jax_bit_for_bit():
    key = np.asarray(jax.random.PRNGKey(11))
    cases = {
        "orthogonal, column axis 0": ("orthogonal", (2.0, 0), (4, 2, 3)),
        "delta 4-D": ("delta_orthogonal", (0.5,), (3, 3, 2, 4)),
    }

    def table(module):
        return lambda key: {
            name: getattr(module, builder)(*args)(key, shape)
            for name, (builder, args, shape) in cases.items()
        }

    got, expected = xform.jit(table(initializers))(key), jax.jit(table(jax.nn.initializers))(key)
    for name in cases:
        assert_same(got[name], expected[name], 0, 0, what=name)
    with pytest.raises(ValueError, match=r"at least a 2D shape.*\(4,\)"):
        initializers.orthogonal()(key, (4,))
    with pytest.raises(ValueError, match="3D, 4D or 5D"):
        initializers.delta_orthogonal()(key, (2, 2))
    with pytest.raises(ValueError, match="fan_in"):
        initializers.delta_orthogonal()(key, (3, 4, 2))
    with pytest.raises(NotImplementedError, match="orthogonal: argument `out_sharding`"):
        initializers.orthogonal()(key, (2, 2), out_sharding="x")
    assert_same(
        initializers.zeros(key, (2,), np.int32, out_sharding=None),
        jax.nn.initializers.zeros(key, (2,), jnp.int32, out_sharding=None),
    )


# --------------------------------------------------------------------------- completeness


def _public(module):
    return {name for name in dir(module) if not name.startswith("_")}


def test_nn_names_complete():
    assert _public(jax.nn) <= _public(nn), sorted(_public(jax.nn) - _public(nn))
    assert _public(jax.nn.initializers) <= _public(initializers), sorted(
        _public(jax.nn.initializers) - _public(initializers)
    )

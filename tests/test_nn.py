"""xform.nn against jax.nn: values (eager, jit, float32/float64), gradients (check_grads to
order 2 and JAX's derivatives at kinks and extreme inputs), vmap, one_hot errors, initializers."""

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
    "leaky_relu_0.2": (functools.partial(nn.leaky_relu, negative_slope=0.2),
                       functools.partial(jax.nn.leaky_relu, negative_slope=0.2)),
    "elu": (nn.elu, jax.nn.elu),
    "elu_0.5": (functools.partial(nn.elu, alpha=0.5), functools.partial(jax.nn.elu, alpha=0.5)),
    "celu": (nn.celu, jax.nn.celu),
    "selu": (nn.selu, jax.nn.selu),
    "gelu_tanh": (nn.gelu, jax.nn.gelu),
    "gelu_exact": (functools.partial(nn.gelu, approximate=False),
                   functools.partial(jax.nn.gelu, approximate=False)),
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
SOFTMAXES = {"softmax": (nn.softmax, jax.nn.softmax),
             "log_softmax": (nn.log_softmax, jax.nn.log_softmax),
             "logsumexp": (nn.logsumexp, jax.nn.logsumexp)}


def _values(dtype):
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.uniform(-8, 8, 20), KINKS[1:-1]])
    return x.astype(dtype)


def check_table(xf_table, jf_table, *args, rtol=None, atol=None, jit=True):
    """Each xform function of the table equals JAX's, eagerly and under one ``xform.jit`` of
    the whole table; the oracle is one ``jax.jit`` of the whole table (one compile each)."""
    expected = jax.jit(lambda *a: {k: f(*a) for k, f in jf_table.items()})(*args)
    got_jit = (xform.jit(lambda *a: {k: f(*a) for k, f in xf_table.items()})(*args)
               if jit else {})
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
        check_table(XF_ELEMENTWISE, JF_ELEMENTWISE, _values(np.float64), rtol=1e-13,
                    atol=1e-14, jit=False)


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
    check_grad_table({k: xfs[k] for k in ("softmax", "log_softmax")},
                     {k: jfs[k] for k in ("softmax", "log_softmax")}, x, weights, atol=1e-6)
    check_grad_table({"logsumexp": xfs["logsumexp"]}, {"logsumexp": jfs["logsumexp"]}, x)


def test_logsumexp_of_equal_large_values():
    x = np.array([1000.0, 1000.0], np.float32)
    assert np.isclose(float(nn.logsumexp(x)), 1000 + np.log(2))
    np.testing.assert_array_equal(np.asarray(xform.grad(nn.logsumexp)(x)), [0.5, 0.5])


# --------------------------------------------------------------------------- softmax options

AXES = (-1, 0, 1, (0, 2), None)


def test_softmax_family_axes():
    x = np.random.default_rng(2).standard_normal((2, 3, 4)).astype(np.float32)
    xfs = {f"{k}, axis={a}": functools.partial(v[0], axis=a)
           for k, v in SOFTMAXES.items() for a in AXES}
    jfs = {f"{k}, axis={a}": functools.partial(v[1], axis=a)
           for k, v in SOFTMAXES.items() for a in AXES}
    check_table(xfs, jfs, x, rtol=3e-6, atol=1e-6)


def test_softmax_family_where():
    x = np.random.default_rng(3).standard_normal((3, 5)).astype(np.float32)
    where = np.random.default_rng(4).random((3, 5)) > 0.3
    where[:, 0] = True
    xfs = {k: functools.partial(v[0], where=where) for k, v in SOFTMAXES.items()}
    jfs = {k: functools.partial(v[1], where=where) for k, v in SOFTMAXES.items()}
    check_table(xfs, jfs, x, rtol=3e-6, atol=1e-6)
    weights = np.where(where, np.arange(1.0, 16.0).reshape(3, 5), 0).astype(np.float32)
    check_grad_table({k: xfs[k] for k in ("softmax", "log_softmax")},
                     {k: jfs[k] for k in ("softmax", "log_softmax")}, x, weights,
                     rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", SOFTMAXES)
def test_softmax_family_vmap(name):
    xf, jf = SOFTMAXES[name]
    x = np.random.default_rng(5).standard_normal((4, 3, 5)).astype(np.float32) * 10
    # A jitted oracle: jax.vmap of it is one compile, not one per primitive.
    check_vmap(xf, jax.jit(jf), (x,), rtol=3e-6, atol=1e-6, jit=False)
    check_vmap(lambda v: xf(v, axis=0), jax.jit(functools.partial(jf, axis=0)), (x,),
               in_axes=1, rtol=3e-6, atol=1e-6, loop=False)


def test_grad_of_log_softmax_under_vmap():
    x = np.random.default_rng(6).standard_normal((4, 5)).astype(np.float32) * 50

    def xf(v):
        return xform.grad(lambda u: nn.log_softmax(u)[0])(v)

    check_vmap(xf, jax.jit(jax.grad(lambda u: jax.nn.log_softmax(u)[0])), (x,), rtol=1e-5,
               atol=1e-6, jit=False)


def _np_softmax(x, axis):
    e = np.exp(x - x.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


@hypothesis.given(shape=st.lists(st.integers(1, 4), min_size=1, max_size=3),
                  seed=st.integers(0, 2**31 - 1), data=st.data())
def test_softmax_sums_to_one(shape, seed, data):
    # Against NumPy in float64 (a JAX oracle would compile for every drawn shape).
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    x = np.random.default_rng(seed).normal(0, 30, shape).astype(np.float32)
    got = np.asarray(nn.softmax(x, axis=axis))
    np.testing.assert_allclose(got, _np_softmax(x.astype(np.float64), axis), rtol=1e-5,
                               atol=1e-7)
    np.testing.assert_allclose(got.sum(axis), 1, rtol=1e-5)
    lse = np.asarray(nn.log_softmax(x, axis=axis))
    np.testing.assert_allclose(np.exp(lse), got, rtol=1e-5, atol=1e-7)


# --------------------------------------------------------------------------- one_hot


def test_one_hot():
    x = np.array([[0, 2, 5], [-1, 1, 3]], np.int32)
    cases = [(a, d) for a in (-1, 0, 1, -2) for d in (None, np.float32, np.int32, np.bool_)]
    check_table({f"axis={a}, dtype={d}": functools.partial(nn.one_hot, num_classes=4, dtype=d,
                                                           axis=a) for a, d in cases},
                {f"axis={a}, dtype={d}": functools.partial(jax.nn.one_hot, num_classes=4,
                                                           dtype=d, axis=a) for a, d in cases},
                x)


def test_one_hot_under_vmap():
    x = np.array([[0, 2], [3, 1], [1, 1]], np.int32)
    check_vmap(lambda v: nn.one_hot(v, 4), jax.jit(lambda v: jax.nn.one_hot(v, 4)), (x,),
               jit=False)


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
    check_table({f"{a}, {alg}": functools.partial(nn.standardize, axis=a, algorithm=alg)
                 for a, alg in cases},
                {f"{a}, {alg}": functools.partial(jax.nn.standardize, axis=a, algorithm=alg)
                 for a, alg in cases}, x, rtol=1e-5, atol=1e-5)


def test_standardize_options_and_grads(x64):
    x = np.random.default_rng(8).normal(2, 3, (3, 4))
    where = np.array([[True, True, False, True]] * 3)
    with jax.enable_x64(True):
        assert_same(nn.standardize(x, where=where), jax.nn.standardize(x, where=where),
                    rtol=1e-12, atol=1e-12)
        assert_same(nn.standardize(x, mean=1.0, variance=4.0, epsilon=0.0),
                    jax.nn.standardize(x, mean=1.0, variance=4.0, epsilon=0.0))
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
    "glorot_uniform": ("glorot_uniform", (), {}), "glorot_normal": ("glorot_normal", (), {}),
    "he_normal": ("he_normal", (), {}), "he_uniform": ("he_uniform", (), {}),
    "lecun_normal": ("lecun_normal", (), {}), "lecun_uniform": ("lecun_uniform", (), {}),
    "normal": ("normal", (), {}), "normal(2)": ("normal", (2.0,), {}),
    "uniform": ("uniform", (), {}), "uniform(3)": ("uniform", (3.0,), {}),
    "truncated_normal": ("truncated_normal", (0.5,), {}),
    "fan_out normal": ("variance_scaling", (2.0, "fan_out", "normal"), {}),
    "fan_geo_avg uniform": ("variance_scaling", (0.5, "fan_geo_avg", "uniform"),
                            {"in_axis": 0, "out_axis": 2}),
    "batch axis": ("variance_scaling", (1.0, "fan_in", "truncated_normal"),
                   {"in_axis": (0, 1), "out_axis": -1, "batch_axis": 2}),
}


def _inits(module):
    return {name: getattr(module, builder)(*args, **kwargs)
            for name, (builder, args, kwargs) in INITIALIZERS.items()}


def _shape_for(name):
    return (2, 3, 4, 5) if name in ("fan_geo_avg uniform", "batch axis", "he_uniform") else (4, 6)


def test_initializers_match_jax_bit_for_bit():
    # xform.random gives JAX's bits, so the same key gives JAX's values: under jit exactly, and
    # eagerly to the last bit (XLA may fold the scale into the draw inside one jit).
    key = np.asarray(jax.random.PRNGKey(7))
    xf_inits, jf_inits = _inits(initializers), _inits(jax.nn.initializers)
    expected = jax.jit(lambda k: {n: f(k, _shape_for(n)) for n, f in jf_inits.items()})(key)
    got_jit = xform.jit(lambda k: {n: f(k, _shape_for(n)) for n, f in xf_inits.items()})(key)
    for name, xf in xf_inits.items():
        assert_same(got_jit[name], expected[name], 0, 0, what=f"{name}, jit")
        assert_same(xf(key, _shape_for(name)), expected[name], 2.5e-7, 0, what=f"{name}, eager")


def test_initializers_float64_and_constants(x64):
    key = np.asarray(jax.random.PRNGKey(3))

    def table(module, dtype):
        return {"glorot_uniform": module.glorot_uniform(), "he_normal": module.he_normal(),
                "normal": module.normal(), "zeros": module.zeros,
                "ones int32": functools.partial(module.ones, dtype=dtype),
                "constant": module.constant(-7.0)}

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

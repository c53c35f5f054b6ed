"""xform.example_libraries (optimizers, stax) against JAX's, and JAX's examples run on both."""

import functools

import jax
import jax.example_libraries.optimizers as jax_opt
import jax.example_libraries.stax as jax_stax
import numpy as np
import pytest
from harness import assert_same

import xform
import xform.example_libraries.optimizers as xf_opt
import xform.example_libraries.stax as xf_stax

# Names in JAX's modules that are its own imports, not part of the libraries.
_IMPORT_ARTEFACTS = {
    "annotations",
    "functools",
    "jax",
    "jnp",
    "lax",
    "math",
    "random",
    "namedtuple",
    "partial",
    "map",
    "zip",
    "safe_map",
    "safe_zip",
    "Any",
    "Callable",
    "NamedTuple",
}


@pytest.mark.parametrize(
    "jax_mod,xf_mod", [(jax_opt, xf_opt), (jax_stax, xf_stax)], ids=["optimizers", "stax"]
)
def test_every_public_name(jax_mod, xf_mod):
    public = {n for n in dir(jax_mod) if not n.startswith("_")} - _IMPORT_ARTEFACTS
    missing = sorted(n for n in public if not hasattr(xf_mod, n))
    assert not missing, missing
    assert set(xf_mod.__all__) <= set(dir(xf_mod))


# --------------------------------------------------------------------------- optimizers

_RNG = np.random.default_rng(0)
_PARAMS = {"w": _RNG.standard_normal((3, 2)).astype(np.float32), "b": [np.float32(0.5)]}
_GRADS = [
    jax.tree_util.tree_map(lambda x: _RNG.standard_normal(np.shape(x)).astype(np.float32), _PARAMS)
    for _ in range(2)
]

_OPTIMIZERS = [
    ("sgd", (0.1,), {}),
    ("sgd", (lambda i: 0.1 / (i + 1),), {}),
    ("momentum", (0.1,), {"mass": 0.9}),
    ("nesterov", (0.1,), {"mass": 0.8}),
    ("adagrad", (0.1,), {}),
    ("rmsprop", (0.1,), {"gamma": 0.8}),
    ("rmsprop_momentum", (0.1,), {}),
    ("adam", (0.1,), {}),
    ("adamax", (0.1,), {"b1": 0.8}),
    ("sm3", (0.1,), {}),
]


@functools.cache
def _all_trajectories(lib):
    """Every optimizer of ``_OPTIMIZERS`` run for ``len(_GRADS)`` steps (a traced step index),
    all in one jitted program: one compile per library."""
    optimizers = lib.example_libraries.optimizers

    def run(params, grads, steps):
        trajectories = []
        for name, args, kwargs in _OPTIMIZERS:
            init, update, get_params = getattr(optimizers, name)(*args, **kwargs)
            states = [init(params)]
            for i, g in enumerate(grads):
                states.append(update(steps[i], g, states[-1]))
            trajectories.append((states, get_params(states[-1])))
        return trajectories

    return lib.jit(run)(_PARAMS, _GRADS, np.arange(len(_GRADS), dtype=np.int32))


def _assert_same_states(got, expected, what):
    assert isinstance(got, xf_opt.OptimizerState)
    assert got.tree_def == expected.tree_def, what
    assert got.subtree_defs == expected.subtree_defs, what
    assert_same(got.packed_state, expected.packed_state, rtol=1e-6, atol=1e-6, what=what)


@pytest.mark.parametrize(
    "index", range(len(_OPTIMIZERS)), ids=[f"{o[0]}{i}" for i, o in enumerate(_OPTIMIZERS)]
)
def test_optimizer_update_sequence(index):
    got_states, got_params = _all_trajectories(xform)[index]
    expected_states, expected_params = _all_trajectories(jax)[index]
    for step, (g, e) in enumerate(zip(got_states, expected_states, strict=True)):
        _assert_same_states(g, e, f"{_OPTIMIZERS[index][0]} step {step}")
    assert_same(got_params, expected_params, rtol=1e-6, atol=1e-6)


def test_optimizer_eagerly():
    # Python-int step indices, every op dispatched on its own, against JAX's (jitted) run.
    index = [o[0] for o in _OPTIMIZERS].index("adam")
    name, args, kwargs = _OPTIMIZERS[index]
    init, update, get_params = xf_opt.adam(*args, **kwargs)
    states = [init(_PARAMS)]
    for i, g in enumerate(_GRADS):
        states.append(update(i, g, states[-1]))
    expected_states, expected_params = _all_trajectories(jax)[index]
    for step, (g, e) in enumerate(zip(states, expected_states, strict=True)):
        _assert_same_states(g, e, f"adam step {step}, eagerly")
    assert_same(get_params(states[-1]), expected_params, rtol=1e-6, atol=1e-6)


def test_optimizer_state_is_a_pytree_and_round_trips():
    init, update, get_params = xf_opt.momentum(0.1, 0.9)
    state = update(0, _GRADS[0], init(_PARAMS))
    leaves, tree = xform.tree_util.tree_flatten(state)
    assert len(leaves) == 4  # two parameters, each (x, velocity)
    rebuilt = xform.tree_util.tree_unflatten(tree, leaves)
    assert isinstance(rebuilt, xf_opt.OptimizerState)
    assert_same(get_params(rebuilt), get_params(state))
    # It crosses jit boundaries as a pytree, and grad of a function of get_params works.
    doubled = xform.jit(lambda s: xform.tree_util.tree_map(lambda x: 2 * x, s))(state)
    assert_same(get_params(doubled), xform.tree_util.tree_map(lambda x: 2 * x, get_params(state)))
    ct = xform.grad(lambda s: xform.numpy.sum(get_params(s)["w"]))(state)
    assert isinstance(ct, xf_opt.OptimizerState) and ct.tree_def == state.tree_def
    w_ct = xf_opt.unpack_optimizer_state(ct)["w"].subtree
    assert_same(w_ct, (np.ones((3, 2), np.float32), np.zeros((3, 2), np.float32)))
    # pack/unpack: a parameter-shaped tree of JoinPoints, and back.
    marked = xf_opt.unpack_optimizer_state(state)
    assert set(marked) == {"w", "b"} and isinstance(marked["w"], xf_opt.JoinPoint)
    x, velocity = marked["w"].subtree
    assert_same(x, get_params(state)["w"])
    packed = xf_opt.pack_optimizer_state(marked)
    assert packed.tree_def == state.tree_def and packed.subtree_defs == state.subtree_defs
    assert_same(packed.packed_state, state.packed_state)
    # Same marked structure as JAX's for the same state.
    jax_state = jax_opt.momentum(0.1, 0.9)[1](0, _GRADS[0], jax_opt.momentum(0.1, 0.9)[0](_PARAMS))
    jax_marked = jax_opt.unpack_optimizer_state(jax_state)
    assert_same(
        [j.subtree for j in jax.tree_util.tree_leaves(marked)],
        [j.subtree for j in jax.tree_util.tree_leaves(jax_marked)],
        rtol=1e-6,
    )


_SCHEDULES = [
    ("constant", (0.5,)),
    ("exponential_decay", (0.5, 10, 0.3)),
    ("inverse_time_decay", (0.5, 4, 0.7)),
    ("inverse_time_decay", (0.5, 4, 0.7, True)),
    ("polynomial_decay", (0.5, 10, 0.01, 2.0)),
    ("piecewise_constant", ([3, 8], [1.0, 0.5, 0.1])),
]


_SCHEDULE_STEPS = np.arange(0, 14, 3, dtype=np.int32)


@functools.cache
def _all_schedule_values(lib):
    """Every schedule of ``_SCHEDULES`` over ``_SCHEDULE_STEPS``, under one jit of vmaps."""
    optimizers = lib.example_libraries.optimizers

    def run(steps):
        return [lib.vmap(getattr(optimizers, name)(*args))(steps) for name, args in _SCHEDULES]

    return lib.jit(run)(_SCHEDULE_STEPS)


@pytest.mark.parametrize(
    "index", range(len(_SCHEDULES)), ids=[f"{s[0]}{i}" for i, s in enumerate(_SCHEDULES)]
)
def test_schedules(index):
    name, args = _SCHEDULES[index]
    expected = _all_schedule_values(jax)[index]
    assert_same(
        _all_schedule_values(xform)[index],
        np.broadcast_to(expected, _SCHEDULE_STEPS.shape),
        rtol=1e-6,
        check_weak_type=False,
    )
    got_sched, expected_sched = getattr(xf_opt, name)(*args), getattr(jax_opt, name)(*args)
    # Eagerly, with a Python int step.
    assert_same(xform.numpy.asarray(got_sched(9)), jax.numpy.asarray(expected_sched(9)), rtol=1e-6)
    assert xf_opt.make_schedule(got_sched) is got_sched
    assert xf_opt.make_schedule(0.5)(7) == 0.5


def test_l2_norm_and_clip_grads():
    for max_norm in (1.0, 100.0):
        assert_same(
            xf_opt.clip_grads(_GRADS[0], max_norm),
            jax_opt.clip_grads(_GRADS[0], max_norm),
            rtol=1e-6,
        )
    assert_same(xf_opt.l2_norm(_PARAMS), jax_opt.l2_norm(_PARAMS), rtol=1e-6)


def test_optimizer_errors():
    init, update, _ = xf_opt.sgd(0.1)
    with pytest.raises(TypeError, match="gradient tree that did not match the parameter tree"):
        update(0, [1.0, 2.0], init({"a": 1.0}))
    with pytest.raises(AssertionError, match="pack_optimizer_state: every leaf .* JoinPoint"):
        xf_opt.pack_optimizer_state({"a": 1.0})
    with pytest.raises(TypeError, match="make_schedule: expected a scalar or a callable"):
        xf_opt.make_schedule(np.ones(3))
    with pytest.raises(ValueError, match="piecewise_constant: boundaries length must be one"):
        xf_opt.piecewise_constant([1, 2], [1.0, 2.0])
    with pytest.raises(ValueError, match="piecewise_constant: boundaries and values must be"):
        xf_opt.piecewise_constant(1, [1.0, 2.0])


# --------------------------------------------------------------------------- stax


def _all_layers(stax):
    """A (layer, input shape) table covering every stax layer, built from one module.

    Kernel shapes repeat on purpose (16x16 for Dense as in the examples below, 3x3x2x2 for
    2-D convolutions in every layout, 3x2x2 for 1-D ones) so that both libraries' compiled
    random draws are reused; the layouts still differ in which dimension is which.
    """
    zeros = stax.zeros
    return {
        "Dense": (stax.Dense(16), (2, 16)),
        "Conv": (stax.Conv(2, (3, 3), strides=(1, 2), padding="SAME"), (2, 5, 6, 2)),
        # (Default bias initializers are checked once above: the rest use cheaper zeros.)
        "GeneralConv": (
            stax.GeneralConv(("NCHW", "OIHW", "NCHW"), 3, (2, 2), b_init=zeros),
            (1, 3, 5, 4),
        ),
        "ConvTranspose": (
            stax.ConvTranspose(2, (3, 3), strides=(2, 2), b_init=zeros),
            (1, 3, 4, 2),
        ),
        "Conv1DTranspose": (stax.Conv1DTranspose(2, (3,), padding="SAME", b_init=zeros), (2, 5, 2)),
        "GeneralConvTranspose": (
            stax.GeneralConvTranspose(("NCH", "IOH", "NCH"), 2, (2,), strides=(2,), b_init=zeros),
            (1, 3, 4),
        ),
        "BatchNorm": (stax.BatchNorm(), (2, 3, 3, 4)),
        "BatchNorm_axis": (stax.BatchNorm(axis=0, center=False), (5, 3)),
        "BatchNorm_scale": (stax.BatchNorm(axis=(0,), scale=False), (5, 3)),
        **{
            name: (getattr(stax, name), (2, 5))
            for name in (
                "Tanh",
                "Relu",
                "Exp",
                "LogSoftmax",
                "Softmax",
                "Softplus",
                "Sigmoid",
                "Elu",
                "LeakyRelu",
                "Selu",
                "Gelu",
                "Identity",
            )
        },
        "elementwise": (stax.elementwise(stax.leaky_relu, negative_slope=0.3), (2, 5)),
        "MaxPool": (stax.MaxPool((2, 2), strides=(1, 2)), (2, 5, 6, 3)),
        "SumPool": (stax.SumPool((2, 3), padding="SAME"), (1, 4, 5, 2)),
        "AvgPool": (stax.AvgPool((3, 2), strides=(2, 1), padding="SAME"), (1, 5, 4, 2)),
        "AvgPool_spec": (stax.AvgPool((2,), padding="SAME", spec="NCW"), (2, 3, 5)),
        "Flatten": (stax.Flatten, (2, 3, 4)),
        # The combinators, all in one network.
        "combinators": (
            stax.serial(
                stax.FanOut(3),
                stax.parallel(
                    stax.Dense(16), stax.Tanh, stax.shape_dependent(lambda s: stax.Dense(s[-1]))
                ),
                stax.FanInSum,
                stax.FanOut(2),
                stax.parallel(stax.Identity, stax.Dense(16)),
                stax.FanInConcat(),
            ),
            (2, 16),
        ),
        "Dropout": (stax.Dropout(0.6), (3, 4)),
        "Dropout_test": (stax.Dropout(0.7, mode="test"), (2, 5)),
    }


_LAYER_NAMES = list(_all_layers(xf_stax))
_LAYER_INPUTS = {
    name: np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    for name, (_, shape) in _all_layers(xf_stax).items()
}


@functools.cache
def _all_layer_results(lib):
    """For every layer of ``_all_layers``: its output shape and initial params (initialized
    eagerly, as the examples do) and its output on ``_LAYER_INPUTS`` (all under one jit: one
    compile per library)."""
    layers = _all_layers(lib.example_libraries.stax)
    out_shapes, params = {}, {}
    for name, (layer, shape) in layers.items():
        out_shapes[name], layer_params = layer[0](lib.random.PRNGKey(3), shape)
        params[name] = list(layer_params)  # parallel's init gives a zip of tuples

    def apply_all(params, key):
        return {
            name: layer[1](params[name], _LAYER_INPUTS[name], rng=key)
            for name, (layer, _) in layers.items()
        }

    return out_shapes, params, lib.jit(apply_all)(params, lib.random.PRNGKey(4))


@pytest.mark.parametrize("name", _LAYER_NAMES)
def test_stax_layer_init_and_apply(name):
    got_shapes, got_params, got = _all_layer_results(xform)
    expected_shapes, expected_params, expected = _all_layer_results(jax)
    assert tuple(got_shapes[name]) == tuple(expected_shapes[name])
    assert_same(got_params[name], expected_params[name], rtol=1e-6, atol=1e-7, what="params")
    assert_same(got[name], expected[name], rtol=2e-5, atol=2e-6, what="apply")
    assert np.shape(got[name]) == tuple(expected_shapes[name])


def test_dropout_needs_a_key():
    with pytest.raises(ValueError, match="Dropout: the layer's apply_fun needs a PRNG key"):
        xf_stax.Dropout(0.5)[1]((), np.ones(3, np.float32))


# --------------------------------------------------------------------------- JAX's examples
#
# Each example is written once against a `jax`-like module and run with real JAX and with
# `xform` in its place; the loss trajectories must agree.


def mnist_classifier(jax, images, labels, num_steps=4):
    """examples/mnist_classifier.py: an MLP trained with momentum on minibatches."""
    jnp, optimizers, stax = jax.numpy, jax.example_libraries.optimizers, jax.example_libraries.stax
    init_random_params, predict = stax.serial(
        stax.Dense(16), stax.Relu, stax.Dense(labels.shape[1]), stax.LogSoftmax
    )

    def loss(params, batch):
        inputs, targets = batch
        return -jnp.mean(jnp.sum(predict(params, inputs) * targets, axis=1))

    def accuracy(params, batch):
        inputs, targets = batch
        return jnp.mean(jnp.argmax(predict(params, inputs), axis=1) == jnp.argmax(targets, axis=1))

    opt_init, opt_update, get_params = optimizers.momentum(0.05, mass=0.9)

    @jax.jit
    def update(i, opt_state, batch):
        # (Adapted: returns the loss and, on the whole set, the accuracy, saving compiles.)
        params = get_params(opt_state)
        value, grads = jax.value_and_grad(loss)(params, batch)
        return value, accuracy(params, (images, labels)), opt_update(i, grads, opt_state)

    _, init_params = init_random_params(jax.random.PRNGKey(0), (-1, images.shape[1]))
    opt_state = opt_init(init_params)
    losses = []
    for i in range(num_steps):
        idx = slice(8 * (i % 2), 8 * (i % 2) + 8)
        value, acc, opt_state = update(i, opt_state, (images[idx], labels[idx]))
        losses += [value, acc]
    return np.array(losses)


def mnist_vae(jax, images, num_epochs=2, batch_size=4):
    """examples/mnist_vae.py: a VAE, a fori_loop over binarized batches per jitted epoch."""
    jnp, lax, random = jax.numpy, jax.lax, jax.random
    optimizers, stax = jax.example_libraries.optimizers, jax.example_libraries.stax
    latent = 16
    encoder_init, encode = stax.serial(
        stax.Dense(16),
        stax.Relu,
        stax.FanOut(2),
        stax.parallel(stax.Dense(latent), stax.serial(stax.Dense(latent), stax.Softplus)),
    )
    decoder_init, decode = stax.serial(stax.Dense(16), stax.Relu, stax.Dense(images.shape[1]))

    def gaussian_kl(mu, sigmasq):
        return -0.5 * jnp.sum(1.0 + jnp.log(sigmasq) - mu**2.0 - sigmasq)

    def gaussian_sample(rng, mu, sigmasq):
        return mu + jnp.sqrt(sigmasq) * random.normal(rng, mu.shape)

    def bernoulli_logpdf(logits, x):
        return -jnp.sum(jnp.logaddexp(0.0, jnp.where(x, -1.0, 1.0) * logits))

    def elbo(rng, params, batch):
        enc_params, dec_params = params
        mu_z, sigmasq_z = encode(enc_params, batch)
        logits_x = decode(dec_params, gaussian_sample(rng, mu_z, sigmasq_z))
        return bernoulli_logpdf(logits_x, batch) - gaussian_kl(mu_z, sigmasq_z)

    num_batches = images.shape[0] // batch_size
    enc_rng, dec_rng = random.split(random.PRNGKey(2))
    _, init_encoder_params = encoder_init(enc_rng, (batch_size, images.shape[1]))
    _, init_decoder_params = decoder_init(dec_rng, (batch_size, latent))
    opt_init, opt_update, get_params = optimizers.momentum(0.001, mass=0.9)

    @jax.jit
    def run_epoch(rng, opt_state, images):
        # (Adapted: also sums the batch losses, in place of the example's separate evaluation.)
        def body_fun(i, carry):
            opt_state, total = carry
            elbo_rng, data_rng = random.split(random.fold_in(rng, i))
            batch = lax.dynamic_slice_in_dim(images, (i % num_batches) * batch_size, batch_size)
            batch = random.bernoulli(data_rng, batch)

            def loss(params):
                return -elbo(elbo_rng, params, batch) / batch_size

            value, g = jax.value_and_grad(loss)(get_params(opt_state))
            return opt_update(i, g, opt_state), total + value

        return lax.fori_loop(0, num_batches, body_fun, (opt_state, 0.0))

    opt_state = opt_init((init_encoder_params, init_decoder_params))
    losses = []
    for epoch in range(num_epochs):
        opt_state, total = run_epoch(random.PRNGKey(epoch), opt_state, images)
        losses.append(total / num_batches)
    return np.array(losses)


def advi(jax, num_steps=5, num_samples=40):
    """examples/advi.py: a Gaussian fitted to a funnel density by a Monte Carlo ELBO."""
    jnp, random, norm = jax.numpy, jax.random, jax.scipy.stats.norm
    optimizers = jax.example_libraries.optimizers

    def diag_gaussian_sample(rng, mean, log_std):
        return mean + jnp.exp(log_std) * random.normal(rng, mean.shape)

    def diag_gaussian_logpdf(x, mean, log_std):
        return jnp.sum(jax.vmap(norm.logpdf)(x, mean, jnp.exp(log_std)))

    def elbo(logprob, rng, mean, log_std):
        sample = diag_gaussian_sample(rng, mean, log_std)
        return logprob(sample) - diag_gaussian_logpdf(sample, mean, log_std)

    def batch_elbo(logprob, rng, params, num_samples):
        rngs = random.split(rng, num_samples)
        vectorized_elbo = jax.vmap(functools.partial(elbo, logprob), in_axes=(0, None, None))
        return jnp.mean(vectorized_elbo(rngs, *params))

    def funnel_log_density(params):
        return norm.logpdf(params[0], 0, jnp.exp(params[1])) + norm.logpdf(params[1], 0, 1.35)

    @jax.jit
    def objective(params, t):
        return -batch_elbo(funnel_log_density, random.PRNGKey(t), params, num_samples)

    opt_init, opt_update, get_params = optimizers.momentum(step_size=0.1, mass=0.9)
    opt_state = opt_init((jnp.zeros(2), jnp.zeros(2)))

    @jax.jit
    def update(i, opt_state):
        params = get_params(opt_state)
        return opt_update(i, jax.grad(objective)(params, i), opt_state)

    values = []
    for t in range(num_steps):
        opt_state = update(t, opt_state)
        values.append(objective(get_params(opt_state), t))
    return np.array(values)


_DATA = np.random.default_rng(5)
_IMAGES = _DATA.uniform(size=(16, 16)).astype(np.float32)
_LABELS = np.eye(16, dtype=np.float32)[_DATA.integers(0, 16, 16)]


@pytest.mark.parametrize(
    "example,args",
    [(mnist_classifier, (_IMAGES, _LABELS)), (mnist_vae, (_IMAGES,)), (advi, ())],
    ids=["mnist_classifier", "mnist_vae", "advi"],
)
def test_jax_example_runs_with_xform(example, args):
    expected = example(jax, *args)
    got = example(xform, *args)
    assert np.all(np.isfinite(expected))
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)

# ruff: noqa: PLC0415  (each program imports jax and the libraries when it runs: the same code
# then binds real JAX in this process and xform in the compat subprocess)
"""xform.compat: JAX programs and libraries (optax, flax, equinox, numpyro, blackjax, dm-haiku)
running on xform unmodified.

Unit tests of ``install``/``uninstall`` run in this process (and undo themselves). The library
programs below run twice, as the same code: once here on real JAX (the oracle), and once in ONE
subprocess under ``python -m xform.run tests/test_compat.py`` (compat mode replaces ``jax`` in
``sys.modules``, so it cannot share this process); that subprocess prints every program's
losses (and samplers' draws) as JSON. Losses after 50 training steps, and the draws of the
samplers run from the same keys, must agree to float32 tolerance.
"""

import importlib
import importlib.util
import json
import os
import subprocess
import sys

import jax  # real JAX: the oracle, and what uninstall must give back
import jax.numpy as jnp
import numpy as np
import pytest

import xform
import xform.numpy as xnp
from xform import compat

STEPS = 50
_LIBS = ("optax", "flax", "equinox", "numpyro", "blackjax", "haiku")
_HAVE_LIBS = all(importlib.util.find_spec(name) is not None for name in _LIBS)
needs_libs = pytest.mark.skipif(
    not _HAVE_LIBS,
    reason="the compat extra (optax, flax, equinox, numpyro, blackjax, "
    "dm-haiku) is not installed: "
    "pip install -e '.[compat]'",
)
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# --------------------------------------------------------------------------- the programs
# Plain JAX code: each imports jax and the libraries itself, so it binds real JAX here and
# xform in the compat subprocess. Each returns {name: [loss per step]} (or other floats).


def _data(n=32, d=4, k=2):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(n, d)).astype(np.float32)
    w = rng.normal(size=(d, k)).astype(np.float32)
    return x, np.tanh(x @ w).astype(np.float32)


def _program_optax():
    import jax
    import jax.numpy as jnp
    import optax

    x, y = _data()

    def loss_fn(p):
        return jnp.mean((jnp.tanh(x @ p["w"] + p["b"]) - y) ** 2)

    sched = optax.warmup_cosine_decay_schedule(0.0, 0.1, 5, STEPS, 0.01)
    opts = {
        "adam": optax.adam(0.05),
        "adamw": optax.adamw(0.05, weight_decay=0.1),
        "sgd": optax.sgd(0.1, momentum=0.9),
        "lion": optax.lion(0.01),
        "chain": optax.chain(optax.clip_by_global_norm(0.5), optax.adam(sched)),
        "exp_decay": optax.sgd(optax.exponential_decay(0.2, 10, 0.5)),
    }

    @jax.jit
    def step(params, states):  # every optimizer in one program: one compilation
        losses, new_params, new_states = {}, {}, {}
        for name, opt in opts.items():
            losses[name], g = jax.value_and_grad(loss_fn)(params[name])
            updates, new_states[name] = opt.update(g, states[name], params[name])
            new_params[name] = optax.apply_updates(params[name], updates)
        return new_params, new_states, losses

    params = {name: {"w": jnp.zeros((4, 2)), "b": jnp.zeros((2,))} for name in opts}
    states = {name: opt.init(params[name]) for name, opt in opts.items()}
    out = {f"optax_{name}": [] for name in opts}
    for _ in range(STEPS):
        params, states, losses = step(params, states)
        for name, loss in losses.items():
            out[f"optax_{name}"].append(float(loss))
    out["optax_schedule"] = [float(sched(i)) for i in (0, 3, 5, 20, 49)]
    return out


def _program_linen():
    import jax
    import jax.numpy as jnp
    import optax
    from flax import linen as nn
    from flax.training import train_state

    class MLP(nn.Module):
        @nn.compact
        def __call__(self, x):
            return nn.Dense(2)(nn.relu(nn.Dense(16)(x)))

    class CNN(nn.Module):
        @nn.compact
        def __call__(self, x, train):
            x = nn.relu(nn.Conv(4, (3, 3))(x))
            x = nn.avg_pool(x, (2, 2), strides=(2, 2))
            x = nn.Dropout(0.2, deterministic=not train)(x)
            return nn.Dense(2)(x.reshape((x.shape[0], -1)))

    x, y = _data()
    rng = np.random.default_rng(1)
    images = rng.normal(size=(8, 6, 6, 1)).astype(np.float32)
    targets = rng.normal(size=(8, 2)).astype(np.float32)
    mlp, cnn = MLP(), CNN()
    mlp_state = train_state.TrainState.create(  # a raw uint32 key
        apply_fn=mlp.apply, params=mlp.init(jax.random.PRNGKey(0), x)["params"], tx=optax.adam(0.01)
    )
    cnn_state = train_state.TrainState.create(  # a typed key
        apply_fn=cnn.apply,
        params=cnn.init(jax.random.key(0), images, train=False)["params"],
        tx=optax.sgd(0.05),
    )

    @jax.jit
    def step(mlp_state, cnn_state, key):
        def mlp_loss(p):
            return jnp.mean((mlp_state.apply_fn({"params": p}, x) - y) ** 2)

        def cnn_loss(p):
            pred = cnn_state.apply_fn({"params": p}, images, train=True, rngs={"dropout": key})
            return jnp.mean((pred - targets) ** 2)

        loss1, g1 = jax.value_and_grad(mlp_loss)(mlp_state.params)
        loss2, g2 = jax.value_and_grad(cnn_loss)(cnn_state.params)
        return (
            mlp_state.apply_gradients(grads=g1),
            cnn_state.apply_gradients(grads=g2),
            loss1,
            loss2,
        )

    out = {"linen_mlp": [], "linen_cnn": []}
    key = jax.random.key(2)
    for _ in range(STEPS):
        key, sub = jax.random.split(key)
        mlp_state, cnn_state, loss1, loss2 = step(mlp_state, cnn_state, sub)
        out["linen_mlp"].append(float(loss1))
        out["linen_cnn"].append(float(loss2))
    return out


def _program_equinox():
    import equinox as eqx
    import jax
    import jax.numpy as jnp
    import optax

    x, y = _data()
    model = eqx.nn.MLP(4, 2, 16, 2, key=jax.random.key(1))
    opt = optax.adam(0.01)
    opt_state = opt.init(eqx.filter(model, eqx.is_array))

    @eqx.filter_value_and_grad
    def loss_fn(m):
        return jnp.mean((eqx.filter_vmap(m)(x) - y) ** 2)

    @eqx.filter_jit
    def step(m, s):
        loss, g = loss_fn(m)
        updates, s = opt.update(g, s, eqx.filter(m, eqx.is_array))
        return eqx.apply_updates(m, updates), s, loss

    losses = []
    for _ in range(STEPS):
        model, opt_state, loss = step(model, opt_state)
        losses.append(float(loss))
    # filter_jvp tells its tracers apart by their trace's `main` (JAX's older trace API).
    out, tangent = eqx.filter_jvp(model, (x[0],), (np.ones(4, np.float32),))
    return {
        "equinox_mlp": losses,
        "equinox_jvp": np.concatenate([np.asarray(out), np.asarray(tangent)]).tolist(),
    }


def _program_nnx():
    import jax
    import jax.numpy as jnp
    import optax
    from flax import nnx

    x, y = _data()

    class MLP(nnx.Module):
        def __init__(self, rngs):
            self.l1 = nnx.Linear(4, 16, rngs=rngs)
            self.l2 = nnx.Linear(16, 2, rngs=rngs)

        def __call__(self, x):
            return self.l2(jax.nn.relu(self.l1(x)))

    model = MLP(nnx.Rngs(0))
    opt = nnx.Optimizer(model, optax.adam(0.01), wrt=nnx.Param)

    @nnx.jit
    def step(model, opt):
        loss, g = nnx.value_and_grad(lambda m: jnp.mean((m(x) - y) ** 2))(model)
        opt.update(model, g)
        return loss

    losses = [float(step(model, opt)) for _ in range(STEPS)]
    grads = nnx.jit(nnx.grad(lambda m: jnp.mean(m(x) ** 2)))(model)
    return {"nnx_mlp": losses, "nnx_grad": np.asarray(grads.l1.kernel[...]).ravel().tolist()}


def _program_numpyro():
    import jax
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist
    from numpyro.infer import MCMC, NUTS

    x, y = _data(n=24, d=3, k=1)

    def model(x, y=None):
        w = numpyro.sample("w", dist.Normal(jnp.zeros(3), 1.0).to_event(1))
        sigma = numpyro.sample("sigma", dist.HalfNormal(1.0))
        numpyro.sample("y", dist.Normal(x @ w, sigma), obs=y)

    mcmc = MCMC(NUTS(model), num_warmup=30, num_samples=20, progress_bar=False)
    mcmc.run(jax.random.PRNGKey(0), x, y[:, 0])
    samples = mcmc.get_samples()
    return {
        "numpyro_nuts_w": np.asarray(samples["w"]).ravel().tolist(),
        "numpyro_nuts_sigma": np.asarray(samples["sigma"]).tolist(),
    }


def _program_blackjax():
    import blackjax
    import jax
    import jax.numpy as jnp

    def logdensity(x):
        return -0.5 * jnp.sum((x - jnp.array([1.0, -1.0])) ** 2 / jnp.array([1.0, 0.25]))

    hmc = blackjax.hmc(
        logdensity, step_size=0.3, inverse_mass_matrix=jnp.ones(2), num_integration_steps=5
    )
    nuts = blackjax.nuts(logdensity, step_size=0.5, inverse_mass_matrix=jnp.ones(2))
    out = {"blackjax_hmc": [], "blackjax_nuts": []}
    for name, kernel, steps in (("blackjax_hmc", hmc, 20), ("blackjax_nuts", nuts, 10)):
        step, state = jax.jit(kernel.step), kernel.init(jnp.zeros(2))
        for i in range(steps):
            state, _ = step(jax.random.key(i), state)
            out[name].extend(np.asarray(state.position).tolist())
    return out


def _program_haiku():
    import haiku as hk
    import jax
    import jax.numpy as jnp
    import optax

    x, y = _data()

    def forward(x):  # (haiku modules are made inside the transformed function)
        return hk.nets.MLP([16, 2])(x)

    model = hk.transform(forward)
    params = model.init(jax.random.PRNGKey(0), x)
    opt = optax.adam(0.01)
    state = opt.init(params)

    @jax.jit
    def step(params, state):
        loss, g = jax.value_and_grad(lambda p: jnp.mean((model.apply(p, None, x) - y) ** 2))(params)
        updates, state = opt.update(g, state)
        return optax.apply_updates(params, updates), state, loss

    losses = []
    for _ in range(STEPS):
        params, state, loss = step(params, state)
        losses.append(float(loss))
    return {"haiku_mlp": losses}


_PROGRAMS = (
    _program_optax,
    _program_linen,
    _program_equinox,
    _program_nnx,
    _program_numpyro,
    _program_blackjax,
    _program_haiku,
)


def _run_programs():
    out = {}
    for program in _PROGRAMS:
        out.update(program())
    return out


# --------------------------------------------------------------------------- the comparison


def _run_compat_subprocess():
    """Starts ``python -m xform.run tests/test_compat.py --programs`` (compat mode)."""
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    return subprocess.Popen(
        [sys.executable, "-m", "xform.run", os.path.abspath(__file__), "--programs"],
        cwd=_ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


_NAMES = (
    "optax_adam",
    "optax_adamw",
    "optax_sgd",
    "optax_lion",
    "optax_chain",
    "optax_exp_decay",
    "optax_schedule",
    "linen_mlp",
    "linen_cnn",
    "equinox_mlp",
    "equinox_jvp",
    "nnx_mlp",
    "nnx_grad",
    "numpyro_nuts_w",
    "numpyro_nuts_sigma",
    "blackjax_hmc",
    "blackjax_nuts",
    "haiku_mlp",
)


@needs_libs
def test_library_programs_match_jax():
    # One test, not one per program: under pytest-xdist every worker that got a case would run
    # both sides again. The compat subprocess runs while this process runs JAX.
    proc = _run_compat_subprocess()
    try:
        want = _run_programs()
        stdout, stderr = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, stderr[-4000:]
    got = json.loads(stdout.strip().splitlines()[-1])
    assert sorted(got) == sorted(want) == sorted(_NAMES)
    mismatched = {}
    for name in _NAMES:
        try:
            np.testing.assert_allclose(got[name], want[name], rtol=2e-5, atol=1e-6)
        except AssertionError as e:
            mismatched[name] = str(e)
    assert not mismatched, f"xform differs from JAX in {sorted(mismatched)}: {mismatched}"
    for name in _NAMES:
        if name.startswith(("optax_", "linen_", "equinox_", "nnx_", "haiku_")) and name not in (
            "optax_schedule",
            "nnx_grad",
            "equinox_jvp",
        ):  # loss curves: trained
            assert len(got[name]) == STEPS and got[name][-1] < got[name][0], name


# --------------------------------------------------------------------------- install/uninstall

_SUBMODULES = (
    "numpy",
    "lax",
    "random",
    "nn",
    "scipy",
    "scipy.special",
    "tree_util",
    "tree",
    "typing",
    "dtypes",
    "errors",
    "flatten_util",
    "custom_derivatives",
    "custom_batching",
    "ad_checkpoint",
    "export",
    "debug",
    "experimental",
    "extend",
    "numpy.linalg",
)


def test_install_resolves_jax_modules_to_xform(installed):
    assert compat.is_installed()
    assert installed is not jax and installed.jit is xform.jit
    assert installed.__version__ == jax.__version__  # the JAX API version xform follows
    assert installed.__version_info__ == jax.__version_info__
    for name in _SUBMODULES:
        mod = importlib.import_module(f"jax.{name}")
        assert mod is importlib.import_module(f"xform.{name}"), name
    assert importlib.import_module("jax.interpreters.ad") is xform.extend.ad
    assert importlib.import_module("jax.core").ShapedArray is xform.core.ShapedArray
    assert installed.numpy.sin is xnp.sin and installed.lax is xform.lax
    assert importlib.import_module("jax.sharding").PartitionSpec is not None
    assert callable(installed.config.parse_flags_with_absl)  # a name xform.config lacks


def test_install_is_idempotent_and_imports_are_stable(installed):
    first_np = importlib.import_module("jax.numpy")
    compat.install()
    assert importlib.import_module("jax") is installed
    assert importlib.import_module("jax.numpy") is first_np
    exec_ns = {}
    exec("import jax\nimport jax.numpy as jnp\nfrom jax import lax", exec_ns)
    assert exec_ns["jax"] is installed and exec_ns["jnp"] is xnp and exec_ns["lax"] is xform.lax


def test_uninstall_restores_real_jax():
    compat.install()
    compat.uninstall()
    compat.uninstall()  # idempotent
    assert not compat.is_installed()
    assert importlib.import_module("jax") is jax
    assert importlib.import_module("jax.numpy") is jnp
    assert xnp.ndarray is xform.Array  # what compat mode replaced is back
    assert hasattr(xform.Array, "__jax_array__")
    assert not hasattr(xform.core.eval_trace, "main")  # what compat mode added is gone
    with pytest.raises(AttributeError, match="no attribute 'no_such_name'") as info:
        xnp.no_such_name  # noqa: B018
    assert "xform lacks" not in str(info.value)


def test_jax_array_isinstance_under_compat(installed):
    arr = xnp.ones(3)
    key = xform.random.key(0)
    assert isinstance(arr, installed.Array) and isinstance(key, installed.Array)
    assert isinstance(key, installed.numpy.ndarray)
    assert not isinstance(np.ones(3), installed.Array)
    assert not hasattr(arr, "__jax_array__")  # it is a jax.Array here: nothing to convert
    trace = xform.core.eval_trace
    assert trace.main is trace  # JAX's traces answer `main` (equinox's filter_jvp reads it)
    assert importlib.import_module("jax.interpreters.ad").JVPTracer.__name__ == "JVPTracer"
    seen = []

    @xform.jit
    def f(x):
        seen.append(isinstance(x, installed.Array))
        return x

    f(arr)
    assert seen == [True]
    assert installed.dtypes.issubdtype(key.dtype, installed.dtypes.prng_key)


def test_names_jax_has_and_xform_lacks_fail_where_they_are_used(installed):
    # A module JAX 0.10.2 has imports (as a library's top-level import does); using what it
    # holds raises NotImplementedError naming the jax name and the line that used it.
    j2tf = importlib.import_module("jax.experimental.jax2tf")
    convert = j2tf.convert  # reading a name JAX has is not yet a use
    line = sys._getframe().f_lineno + 6  # the line of convert(len) below
    with pytest.raises(
        NotImplementedError,
        match=r"xform lacks jax\.experimental\.jax2tf\."
        rf"convert: called at .*test_compat\.py:{line};",
    ):
        convert(len)
    pe = importlib.import_module("jax.interpreters.partial_eval")
    with pytest.raises(NotImplementedError, match=r"trace_to_jaxpr_nounits: read as \.foo"):
        pe.trace_to_jaxpr_nounits.foo  # noqa: B018
    from jax.interpreters.partial_eval import PartialVal

    class Mine(PartialVal):  # subclassing works (libraries define such classes at import)
        pass

    assert not isinstance(object(), PartialVal)
    for use in (Mine, lambda: PartialVal[int], lambda: list(PartialVal)):
        with pytest.raises(NotImplementedError, match="xform lacks .*PartialVal"):
            use()
    assert (
        importlib.import_module("jax._src.interpreters.pxla").__name__
        == "jax._src.interpreters.pxla"
    )
    # Names JAX lacks too stay errors, so that hasattr-based feature tests read JAX's answers.
    with pytest.raises(ModuleNotFoundError, match=r"jax\.experimental\.no_such_module"):
        importlib.import_module("jax.experimental.no_such_module")
    with pytest.raises(AttributeError, match=r"jax\.no_such_name is not available, xform lacks"):
        installed.no_such_name  # noqa: B018
    with pytest.raises(AttributeError, match=r"jax\.numpy\.no_such_fn .*xform lacks"):
        installed.numpy.no_such_fn  # noqa: B018
    assert hasattr(importlib.import_module("jax.core"), "DropVar")
    assert not hasattr(importlib.import_module("jax.core"), "TraceTag")  # removed in JAX 0.10
    tb = importlib.import_module("jax._src.traceback_util")  # a small internal that is provided
    tb.register_exclusion(__file__)
    assert tb.api_boundary(len) is len


def test_axis_primitive_batchers_runs_jax_style_rules(installed):
    batching = importlib.import_module("jax.interpreters.batching")
    prim = importlib.import_module("jax.extend.core").Primitive("compat_double")
    prim.def_impl(lambda x: x * 2)
    prim.def_abstract_eval(lambda x: x)
    seen = []

    def rule(axis_size, axis_name, trace_type, args, dims):
        seen.append((axis_size, axis_name, list(dims)))
        return prim.bind(*args), dims[0]

    batching.axis_primitive_batchers[prim] = rule  # as equinox registers its primitives
    try:
        assert batching.axis_primitive_batchers[prim] is rule
        out = installed.vmap(prim.bind, axis_name="i")(xnp.arange(3.0))
    finally:
        del batching.axis_primitive_batchers[prim]
    np.testing.assert_array_equal(out, [0.0, 2.0, 4.0])
    assert seen == [(3, "i", [0])]


def test_jax_array_protocol_hands_jax_the_device_buffer():
    x = xnp.arange(4.0) * 2
    y = jnp.asarray(x)
    assert isinstance(y, jax.Array) and y.dtype == jnp.float32
    np.testing.assert_array_equal(np.asarray(y), [0.0, 2.0, 4.0, 6.0])
    np.testing.assert_array_equal(jax.jit(jnp.sin)(jnp.asarray(x)), np.sin(np.asarray(x)))


def test_asarray_of_a_jax_array_shares_its_buffer():
    big = jnp.arange(12.0).reshape(3, 4)
    x = xnp.asarray(big)
    assert x._device_buffer() is big  # no copy through the host (it was 25 ms for 1M floats)
    np.testing.assert_array_equal(np.asarray(x * 2), np.asarray(big * 2))
    weak = jnp.asarray(1.0)
    assert xnp.asarray(weak).weak_type == jnp.asarray(weak).weak_type is True
    converted = xnp.asarray(jnp.arange(3), dtype=np.float32)
    assert converted.dtype == np.float32 and not converted.weak_type
    np.testing.assert_array_equal(converted, [0.0, 1.0, 2.0])


def test_dot_general_accepts_jax_signature():
    x = xnp.ones((2, 3))
    dims = (((1,), (0,)), ((), ()))
    np.testing.assert_array_equal(
        xform.lax.dot_general(x, x.T, dims, out_sharding=None),
        jax.lax.dot_general(jnp.ones((2, 3)), jnp.ones((3, 2)), dims),
    )
    with pytest.raises(TypeError, match="`out_sharding` argument of dot_general only "):
        xform.lax.dot_general(x, x.T, dims, out_sharding="x")  # as JAX's


def _matmul_eqns(lib, mod, shapes):
    """(primitive, dimension_numbers, output shapes) of ``a @ b`` and of it vmapped over b."""
    a, b = (lib.ones(shape) for shape in shapes)
    traced = (
        mod.make_jaxpr(lambda a, b: a @ b)(a, b),
        mod.make_jaxpr(mod.vmap(lambda a, b: a @ b, (None, 0)))(a, lib.stack([b, b])),
    )
    return [
        [
            (
                e.primitive.name,
                e.params.get("dimension_numbers"),
                [tuple(v.aval.shape) for v in e.outvars],
            )
            for e in closed.jaxpr.eqns
        ]
        for closed in traced
    ]


@pytest.mark.parametrize(
    "shapes",
    [((3, 4), (4,)), ((4,), (4, 3)), ((2, 3, 4), (4,)), ((4,), (2, 4, 3)), ((4,), (4,))],
    ids=str,
)
def test_matmul_of_a_vector_traces_as_jax(shapes):
    # equinox's Linear is `weight @ x` on one example, vmapped: a unit dimension added to the
    # vector and squeezed away made (B, k, 1) operands, and the step (e2) ran slower than JAX's.
    assert _matmul_eqns(xnp, xform, shapes) == _matmul_eqns(jnp, jax, shapes)


# Typed keys in jnp's element-moving functions (flax and equinox stack, split and select keys):
# each case runs on JAX's keys and on xform's, and the key data must agree.
_KEY_OPS = {
    "stack": lambda jnp, k, ks: jnp.stack([k, ks[1]]),
    "concatenate": lambda jnp, k, ks: jnp.concatenate([ks, ks[::-1]], axis=-1),
    "where": lambda jnp, k, ks: jnp.where(jnp.array([True, False, True, False]), ks, k),
    "reshape": lambda jnp, k, ks: jnp.reshape(ks, (2, -1)),
    "expand_dims": lambda jnp, k, ks: jnp.expand_dims(k, 0),
    "broadcast_to": lambda jnp, k, ks: jnp.broadcast_to(k, (3,)),
    "take": lambda jnp, k, ks: jnp.take(ks, jnp.array([3, 0])),
    "transpose": lambda jnp, k, ks: jnp.transpose(ks.reshape(2, 2)),
    "method_T": lambda jnp, k, ks: ks.reshape(2, 2).T,
    "flip": lambda jnp, k, ks: jnp.flip(ks),
    "roll": lambda jnp, k, ks: jnp.roll(ks, 1),
    "tile": lambda jnp, k, ks: jnp.tile(k, 2),
    "repeat": lambda jnp, k, ks: jnp.repeat(ks, 2),
    "swapaxes": lambda jnp, k, ks: jnp.swapaxes(ks.reshape(2, 2), 0, 1),
    "squeeze": lambda jnp, k, ks: ks[None].squeeze(0),
    "split": lambda jnp, k, ks: jnp.split(ks, 2)[1],
    "asarray": lambda jnp, k, ks: jnp.asarray(ks),
    "full_like": lambda jnp, k, ks: jnp.full_like(ks, k),
    "at_set": lambda jnp, k, ks: ks.at[1].set(k),
    "eq": lambda jnp, k, ks: ks == ks[::-1],
}


def test_typed_keys_in_jnp_functions():
    results = {}
    for mod, lib in ((xform, xnp), (jax, jnp)):
        k, ks = mod.random.key(0), mod.random.split(mod.random.key(1), 4)
        for name, op in _KEY_OPS.items():
            out = op(lib, k, ks)
            data = out if name == "eq" else mod.random.key_data(out)
            results.setdefault(name, []).append((str(out.dtype), np.asarray(data)))
    for name, ((xf_dtype, xf_data), (jax_dtype, jax_data)) in results.items():
        assert xf_dtype == jax_dtype, name
        np.testing.assert_array_equal(xf_data, jax_data, err_msg=name)
    for mod, lib in ((xform, xnp), (jax, jnp)):  # flax's nnx.Rngs compares keys so
        k, ks = mod.random.key(0), mod.random.split(mod.random.key(1))
        assert bool(lib.array_equal(k, mod.random.key(0)))
        assert not bool(lib.array_equal(ks, ks[::-1]))
        with pytest.raises(TypeError, match="key<rbg>|rbg"):
            lib.array_equal(k, mod.random.key(0, impl="rbg"))
    mixed = xform.random.key(0, impl="rbg")
    with pytest.raises(ValueError, match="stack: key arrays of different PRNG implementations"):
        xnp.stack([xform.random.key(0), mixed])
    with pytest.raises(ValueError, match="asarray: key arrays cannot become float32"):
        xnp.asarray(xform.random.key(0), dtype=np.float32)


def test_vmap_passes_non_arrays_at_in_axes_none():
    # equinox and flax pass functions, strings and modules' static fields unmapped.
    def f(fn, label, x):
        return fn(x) * len(label)

    x = np.arange(3.0, dtype=np.float32)
    for mod, lib in ((xform, xnp), (jax, jnp)):
        out = mod.vmap(f, in_axes=(None, None, 0))(lib.sin, "abc", x)
        np.testing.assert_allclose(out, 3 * np.sin(x), rtol=1e-6)
        assert mod.vmap(lambda d, x: x * d[1], in_axes=(None, 0))((object(), 2.0), x).shape == (3,)
    with pytest.raises(TypeError, match=r"args\[0\] is of type function"):
        xform.vmap(f, in_axes=(0, None, 0))(xnp.sin, "abc", x)  # a mapped non-array


def test_broadcast_shapes_takes_ints_as_jax():
    assert xnp.broadcast_shapes((1, 3), (4, 1), 3) == jnp.broadcast_shapes((1, 3), (4, 1), 3)
    for fn in (
        xnp.broadcast_shapes,
        jnp.broadcast_shapes,
        xform.lax.broadcast_shapes,
        jax.lax.broadcast_shapes,
    ):  # optax's tests match JAX's words
        with pytest.raises(
            ValueError,
            match=r"^Incompatible shapes for broadcasting: "
            r"shapes=\[\(3,\), \(4,\)\]",
        ):
            fn((3,), (4,))
    with pytest.raises(ValueError, match=r"shapes=\[\(3,\), \(4,\)\]"):
        xnp.broadcast_shapes(3, 4)


def test_like_functions_take_shape_dtype_structs_as_jax():
    # optax's MultiSteps builds its accumulators with zeros_like of jax.eval_shape's output.
    for mod, lib in ((xform, xnp), (jax, jnp)):
        spec = mod.ShapeDtypeStruct((2, 3), np.float16)
        for out in (
            lib.zeros_like(spec),
            lib.full_like(spec, 2, dtype=np.int32),
            lib.ones_like(spec, shape=(4,)),
        ):
            assert isinstance(out, mod.Array)
        np.testing.assert_array_equal(lib.zeros_like(spec), np.zeros((2, 3), np.float16))
        assert lib.zeros_like(spec).dtype == np.float16 and not lib.zeros_like(spec).weak_type
        assert lib.ones_like(spec, shape=(4,)).shape == (4,)


def test_isclose_under_strict_promotion_as_jax():
    # equinox's tests run with jax_numpy_dtype_promotion="strict"; isclose joins a weak bool
    # with a bool inside.
    x = np.array([1.0, 2.0, np.inf], np.float32)
    y = np.array([1.0, 2.1, np.inf], np.float32)
    with xform.numpy_dtype_promotion("strict"), jax.numpy_dtype_promotion("strict"):
        np.testing.assert_array_equal(xnp.isclose(x, y), jnp.isclose(x, y))
        assert bool(xnp.allclose(x, x)) and bool(jnp.allclose(x, x))
        with pytest.raises(xform.dtypes.TypePromotionError, match="strict"):
            xnp.add(xnp.ones(2, np.int32), True)  # a weak bool joins only bools
        with pytest.raises(jax.dtypes.TypePromotionError, match="strict"):
            jnp.add(jnp.ones(2, np.int32), True)


def test_run_usage_error():
    from xform import run

    assert run.main([]) == 2


if __name__ == "__main__" and sys.argv[1:] == ["--programs"]:  # the compat subprocess
    print(json.dumps(_run_programs()))

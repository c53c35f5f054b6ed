"""JAX's config flags in xform: names, values, context managers, environment variables, and
the flags that change behaviour, each against JAX run the same way."""

import logging
import os
import subprocess
import sys
import threading
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import xform
import xform.numpy as xnp
from xform import config

# Flags whose default xform shares with JAX (jax_num_cpu_devices is set by conftest in JAX;
# the compilation cache's directory by conftest in xform, and its default differs: xform's
# cache is on in the user's cache directory, JAX's off until a directory is given).
_SHARED = [
    "jax_enable_x64",
    "jax_platforms",
    "jax_default_device",
    "jax_disable_jit",
    "jax_debug_nans",
    "jax_debug_infs",
    "jax_log_compiles",
    "jax_explain_cache_misses",
    "jax_default_matmul_precision",
    "jax_numpy_rank_promotion",
    "jax_numpy_dtype_promotion",
    "jax_default_prng_impl",
    "jax_threefry_partitionable",
    "jax_traceback_filtering",
    "jax_check_tracer_leaks",
    "jax_enable_checks",
    "jax_transfer_guard",
    "jax_enable_custom_prng",
    "jax_debug_key_reuse",
]


def _plain(v):
    return getattr(v, "value", v)  # JAX's enum flags hold enum members


def test_defaults_and_reads_match_jax():
    for name in _SHARED:
        if name == "jax_enable_checks":  # on in the test suite (conftest)
            continue
        assert _plain(getattr(xform.config, name)) == _plain(getattr(jax.config, name)), name
        assert config.read(name) == getattr(xform.config, name)
    assert config.read("enable_x64") is config.x64_enabled() is jax.config.jax_enable_x64
    assert config.jax_enable_checks and config.check_jaxprs


def test_update_read_and_scopes_restore():
    config.update("jax_compilation_cache_dir", "/tmp/xform-cache")  # accepted and stored
    try:
        assert config.jax_compilation_cache_dir == "/tmp/xform-cache"
    finally:
        config.update("jax_compilation_cache_dir", None)
    with xform.numpy_rank_promotion("warn"):
        assert config.jax_numpy_rank_promotion == "warn"
        seen = []
        t = threading.Thread(target=lambda: seen.append(config.jax_numpy_rank_promotion))
        t.start()
        t.join()
        assert seen == ["allow"]  # a scope is this thread's only, as JAX's
    assert config.jax_numpy_rank_promotion == "allow"
    with xform.debug_nans(True), xform.disable_jit():
        assert config.jax_debug_nans and config.jax_disable_jit and config.slow_calls
    assert not config.slow_calls
    with pytest.raises(TypeError, match="requires an argument"):
        xform.numpy_rank_promotion()


def test_unknown_flags_and_bad_values():
    with pytest.raises(AttributeError):
        jax.config.update("jax_enable_x65", True)
    with pytest.raises(AttributeError, match="'jax_enable_x65'.*did you mean 'jax_enable_x64'"):
        config.update("jax_enable_x65", True)
    with pytest.raises(AttributeError, match="jax_debug_nan'.*'jax_debug_nans'"):
        config.jax_debug_nan  # noqa: B018
    with pytest.raises(ValueError, match="must be in"):
        jax.config.update("jax_numpy_rank_promotion", "sometimes")
    with pytest.raises(ValueError, match="jax_numpy_rank_promotion.*'allow', 'warn', 'raise'"):
        config.update("jax_numpy_rank_promotion", "sometimes")
    with pytest.raises(ValueError, match="jax_num_cpu_devices.*int"):
        config.update("jax_num_cpu_devices", "8")
    with pytest.raises(TypeError, match="'jax_debug_nans' takes a bool"):
        config.update("jax_debug_nans", "yes")
    with pytest.raises(ValueError, match="jax_default_prng_impl.*'rbg'"):
        xform.default_prng_impl("philox")
    assert not config.jax_debug_nans and config.jax_default_prng_impl == "threefry2x32"


def test_num_cpu_devices_after_backend_start_raises_as_jax():
    jax.devices(), xform.devices()  # the backends start (if no test started them yet)
    with pytest.raises(RuntimeError, match="before backends are initialized"):
        jax.config.update("jax_num_cpu_devices", 4)
    with pytest.raises(RuntimeError, match="before backends are initialized"):
        config.update("jax_num_cpu_devices", 4)
    assert config.jax_num_cpu_devices == -1


def _branchy(x, n):
    if x.sum() > 0:  # Python control flow on a value: only without jit
        return x * n
    return -x


def test_disable_jit_runs_python_control_flow():
    x = np.array([1.0, 2.0], np.float32)
    with jax.disable_jit():
        want = jax.jit(_branchy)(x, 3)
    with xform.disable_jit():
        got = xform.jit(_branchy)(xnp.asarray(x), 3)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    with pytest.raises(Exception, match="[Cc]oncret|bool"):
        xform.jit(_branchy)(xnp.asarray(x), 3)  # traced: the `if` cannot see a value


_NAN_IN_LOG = r"invalid value \(nan\) encountered in log"
_INF_IN_DIV = r"invalid value \(inf\) encountered in div"


def _log_then_scale(x):
    y = jnp.log(x) if isinstance(x, jax.Array) else xnp.log(x)
    return y * 2.0


def test_disable_jit_runs_control_flow_in_python_as_jax():
    """Under disable_jit, scan/fori_loop/while_loop/cond/switch run their Python functions on
    concrete values (a Python ``if`` on a carried value works), with JAX's results."""

    def programs(lib, lax):
        def body(c, x):
            c = c + x if float(c) < 3 else c - x  # needs concrete values
            return c, c * 2

        return {
            "scan": lambda: lax.scan(body, 0.0, lib.arange(5.0)),
            "scan_reverse": lambda: lax.scan(body, 0.0, lib.arange(4.0), reverse=True),
            "fori": lambda: lax.fori_loop(0, 4, lambda i, v: v * 2 if int(i) % 2 else v + 1, 1.0),
            "fori_empty": lambda: lax.fori_loop(3, 3, lambda i, v: v + 1, 1.0),
            "while": lambda: lax.while_loop(lambda v: v < 10, lambda v: v * 3, 1),
            "cond": lambda: lax.cond(
                float(lib.sum(lib.ones(2))) > 1, lambda x: [x, x + 1], lambda x: [x, x], 2.0
            ),
            "switch": lambda: lax.switch(5, [lambda: 0.0, lambda: 1.0]),
        }

    with xform.disable_jit(), jax.disable_jit():
        got = {k: f() for k, f in programs(xnp, xform.lax).items()}
        want = {k: f() for k, f in programs(jnp, jax.lax).items()}
        with pytest.raises(ValueError, match="zero-length scan"):
            xform.lax.scan(lambda c, x: (c, x), 0.0, xnp.zeros((0,)))
    for k, expected in want.items():
        for g, w in zip(
            jax.tree_util.tree_leaves(got[k]), jax.tree_util.tree_leaves(expected), strict=True
        ):
            np.testing.assert_allclose(g, w, err_msg=k)
            assert (np.asarray(g).dtype, getattr(g, "weak_type", None)) == (
                np.asarray(w).dtype,
                getattr(w, "weak_type", None),
            ), k


def test_debug_nans_names_the_primitive_and_line(capsys):
    x = -np.ones(3, np.float32)
    with jax.debug_nans(True), pytest.raises(FloatingPointError, match=_NAN_IN_LOG):
        jax.jit(_log_then_scale)(jnp.asarray(x))
    jitted = xform.jit(_log_then_scale)
    with xform.debug_nans(True):
        with pytest.raises(
            FloatingPointError,
            match=r"invalid value \(nan\) encountered in log \(at .*"
            r"test_config_flags.py:\d+ \(_log_then_scale\)",
        ):
            jitted(xnp.asarray(x))
        assert "Calling the de-optimized version" in capsys.readouterr().out
        np.testing.assert_allclose(jitted(xnp.ones(3)), np.zeros(3))  # no NaN: no error
    assert np.isnan(np.asarray(jitted(xnp.asarray(x)))).all()  # flag off: NaNs pass


def test_debug_infs_eager():
    with jax.debug_infs(True), pytest.raises(FloatingPointError, match=_INF_IN_DIV):
        jnp.ones(2) / 0.0
    with xform.debug_infs(True), pytest.raises(FloatingPointError, match=_INF_IN_DIV):
        xnp.ones(2) / 0.0
    with xform.debug_nans(True):
        xnp.ones(2) / 0.0  # an inf is not a NaN


def test_log_compiles_and_explain_cache_misses(caplog):
    def scaled_sum(x, y):
        return (x * y).sum()

    f = xform.jit(scaled_sum)
    with (
        caplog.at_level(logging.WARNING),
        xform.log_compiles(True),
        xform.explain_cache_misses(True),
    ):
        f(xnp.ones(2), xnp.ones(2))
        f(xnp.ones(2), xnp.ones(2, xnp.int32))
    compiles = [r.getMessage() for r in caplog.records if r.name == "xform.runtime.dispatch"]
    api = [r.getMessage() for r in caplog.records if r.name == "xform.runtime.jit"]
    misses = [m for m in api if "CACHE MISS" in m]
    traces = [m for m in api if m.startswith("Finished tracing + transforming scaled_sum")]
    # Per compile, as JAX's: what is compiled, then how long lowering and XLA took; per trace
    # its time and the calling line; a persistent-cache hit or miss per program.
    assert [m.split(" ")[0] for m in compiles] == ["Compiling", "Finished", "Finished"] * 2
    assert "Compiling scaled_sum" in compiles[0] and "MLIR module" in compiles[1]
    assert "XLA compilation of jit(scaled_sum)" in compiles[2]
    assert len(traces) == 2 and all("test_config_flags.py" in m for m in traces)
    assert len(misses) == 1 and "argument 'y' changed dtype: f32[2] -> i32[2]" in misses[0]
    cache = [r.getMessage() for r in caplog.records if r.name == "xform.compile_cache"]
    assert len(cache) == 2 and all("Persistent compilation cache" in m for m in cache)
    caplog.clear()
    f(xnp.ones(3), xnp.ones(3))  # flags off: nothing logged
    assert not caplog.records


def test_retracing_is_silent_by_default_as_in_jax():
    # JAX explains retraces only under jax_explain_cache_misses; a fourth shape under
    # -W error is no error (a fresh process: the suite's conftest sets the flag itself).
    code = (
        "import numpy as np, xform\n"
        "f = xform.jit(lambda x: x + 1)\n"
        "[f(np.ones(n, np.float32)) for n in (1, 2, 3, 4)]\n"
        "print(xform.config.read('xform_warn_recompiles'))\n"
    )
    out = subprocess.run(
        [sys.executable, "-W", "error", "-c", code], capture_output=True, text=True, check=False
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


def test_recompile_warning_names_the_argument():
    def affine(x, params, *, scale):
        return x * params["w"] * scale

    f = xform.jit(affine, static_argnames="scale")
    params = {"w": xnp.ones(2)}
    with xform.config.scope("xform_warn_recompiles", True):
        f(xnp.ones(2), params, scale=1)
        f(xnp.ones(2), params, scale=2)  # second trace: no warning
        with pytest.warns(
            UserWarning,
            match=r"jit of affine is tracing for the third time "
            r"\(called at .*test_config_flags.py:\d+.*static "
            r"argument 'scale' changed from 2 to 3",
        ):
            f(xnp.ones(2), params, scale=3)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            f(xnp.ones(2), params, scale=4)  # once per function
        g = xform.jit(affine, static_argnames="scale")
        g.clear_cache()
        g(xnp.ones(2), params, scale=1)
        g(xnp.ones(3), {"w": xnp.ones(3)}, scale=1)
        with pytest.warns(
            UserWarning,
            match=r"argument 'params' at \['w'\] changed dtype: "
            r"f32\[3\] -> i32\[3\]",
        ):
            g(xnp.ones(3), {"w": xnp.ones(3, xnp.int32)}, scale=1)
        with warnings.catch_warnings():  # xform's own jitted helpers retrace per shape silently
            warnings.simplefilter("error")
            for n in range(1, 5):
                xform.random.normal(xform.random.PRNGKey(0), (n,))


@pytest.mark.parametrize("impl", ["rbg", "unsafe_rbg"])
def test_default_prng_impl_as_jax(impl):
    """The flag picks what PRNGKey/key make and how raw keys are read: JAX's key data and
    bits for the same seed."""
    with xform.default_prng_impl(impl), jax.default_prng_impl(impl):
        raw, want = xform.random.PRNGKey(3), jax.random.PRNGKey(3)
        assert raw.shape == want.shape == (4,) and np.array_equal(raw, want)
        assert str(xform.random.key(1).dtype) == str(jax.random.key(1).dtype)
        np.testing.assert_array_equal(xform.random.split(raw), jax.random.split(want))
        np.testing.assert_array_equal(xform.random.bits(raw, (3,)), jax.random.bits(want, (3,)))
    assert xform.random.PRNGKey(3).shape == (2,)  # threefry again after the scope


def test_rank_and_dtype_promotion_as_jax():
    a, b = np.ones(2, np.float32), np.ones((3, 2), np.float32)
    for lib, np_ in ((jax, jnp), (xform, xnp)):
        with lib.numpy_rank_promotion("raise"):
            with pytest.raises(
                ValueError,
                match=r"add on shapes \(2,\) \(3, 2\) and with "
                "the config option jax_numpy_rank_promotion",
            ):
                np_.asarray(a) + np_.asarray(b)
            assert (np_.asarray(a) + 1.0).shape == (2,)  # scalars are not rank promotion
        with lib.numpy_rank_promotion("warn"), pytest.warns(UserWarning, match="rank promotion"):
            np_.asarray(a) + np_.asarray(b)
        with lib.numpy_dtype_promotion("strict"):
            for x, y in ((np.ones(2, np.int32), 1.0), (np.ones(2, np.int8), np.ones(2, np.int16))):
                with pytest.raises(
                    lib.dtypes.TypePromotionError, match="when jax_numpy_dtype_promotion=strict"
                ):
                    np_.asarray(x) + (np_.asarray(y) if isinstance(y, np.ndarray) else y)
            assert (np_.asarray(a) + 1).dtype == np.float32  # weak scalars still join


@pytest.mark.parametrize("precision", ["float32", "tensorfloat32", "bfloat16", "F32_F32_F32"])
def test_default_matmul_precision_as_jax(precision):
    """The flag is dot_general's precision when none is given: in the jaxpr and the lowered
    module as JAX's, and part of jit's cache key (a jitted function traced outside the scope
    traces again inside it)."""
    a = np.ones((2, 3), np.float32)
    f = xform.jit(lambda a: a @ a.T)
    outside = f.lower(a).as_text()
    with xform.default_matmul_precision(precision), jax.default_matmul_precision(precision):
        got = xform.make_jaxpr(lambda a: a @ a.T)(a).eqns[1].params["precision"]
        want = jax.make_jaxpr(lambda a: a @ a.T)(a).eqns[1].params["precision"]
        inside = f.lower(a).as_text()
        jax_text = jax.jit(lambda a: a @ a.T).lower(a).as_text()
    assert str(got) == str(want)
    if precision == "F32_F32_F32":
        return  # xform emits no algorithm attribute on CPU (its backend ignores it); JAX does
    dot = [line.split("precision")[-1] for line in inside.splitlines() if "dot_general" in line]
    jax_dot = [
        line.split("precision")[-1] for line in jax_text.splitlines() if "dot_general" in line
    ]
    assert dot == jax_dot
    assert (inside != outside) == (precision != "bfloat16")  # bfloat16 is DEFAULT
    assert f.lower(a).as_text() == outside  # the default again after the scope


def test_ensure_compile_time_eval_is_concrete_inside_jit():
    seen = []

    def f(x):
        with xform.ensure_compile_time_eval():
            y = xnp.sin(2.0)
            seen.append(float(y))  # concrete, though inside jit
        return x + y

    np.testing.assert_allclose(xform.jit(f)(xnp.ones(2)), 1 + np.sin(2.0), rtol=1e-6)
    assert seen == [pytest.approx(np.sin(2.0))]


def test_check_tracer_leaks_in_jit():
    kept = []

    def leaky(x):
        kept.append(x * 2.0)
        return x

    # JAX raises a plain Exception, "Leaked trace DynamicJaxprTrace. Leaked tracer(s): ..."
    # (not run here: JAX's check costs about a second).
    with xform.checking_leaks():
        np.testing.assert_allclose(xform.jit(lambda x: x * 2.0)(1.0), 2.0)  # no leak
        with pytest.raises(Exception, match=r"Leaked trace of jit of leaky: 1 tracer\(s\)"):
            xform.jit(leaky)(1.0)
    kept.clear()


_ENV_SCRIPT = """
import xform, xform.numpy as xnp
from xform import config
print(config.jax_enable_x64, config.jax_debug_nans, config.jax_numpy_rank_promotion,
      config.jax_platforms, config.xform_warn_recompiles, xform.device_count())
print(xnp.ones(2).dtype)
try:
    xnp.ones(2) + xnp.ones((3, 2))
except ValueError as e:
    print("rank", "jax_numpy_rank_promotion='raise'" in str(e))
try:
    xform.jit(lambda x: xnp.log(x))(-xnp.ones(2))
except FloatingPointError as e:
    print("nan", "encountered in log" in str(e))
"""


def test_environment_variables_set_defaults():
    env = dict(
        os.environ,
        JAX_ENABLE_X64="1",
        JAX_DEBUG_NANS="true",
        JAX_PLATFORMS="cpu",
        JAX_NUMPY_RANK_PROMOTION="raise",
        JAX_NUM_CPU_DEVICES="3",
        XFORM_WARN_RECOMPILES="0",
    )
    out = subprocess.run(
        [sys.executable, "-c", _ENV_SCRIPT],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout.splitlines()
    assert out[0] == "True True raise cpu False 3"
    assert out[1:] == [
        "float64",
        "rank True",
        "Invalid nan value encountered in the output "
        "of a jit function (<lambda>). Calling the de-optimized version.",
        "nan True",
    ]

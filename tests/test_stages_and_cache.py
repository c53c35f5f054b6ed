"""Ahead-of-time stages (trace -> lower -> compile) against JAX's, and the persistent
compilation cache: hits across processes, concurrent writers, corrupt entries, an unwritable
directory, eviction."""

import os
import re
import subprocess
import sys
import textwrap
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import xform
import xform.numpy as xnp
from lowering import compile_cache


def _model(np_):
    def f(params, x, *, scale=2.0):
        return {"y": np_.tanh(x @ params["w"]) * scale, "n": np_.sum(x)}

    return f


PARAMS = {"w": np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3)}
X = np.linspace(0, 1, 8, dtype=np.float32).reshape(2, 4)


# --------------------------------------------------------------------------- stages


@pytest.fixture(scope="module")
def stages():
    out = {}
    for name, lib, np_ in (("xform", xform, xnp), ("jax", jax, jnp)):
        jitted = lib.jit(_model(np_))
        traced = jitted.trace(PARAMS, lib.ShapeDtypeStruct((2, 4), np.float32))
        lowered = traced.lower()
        out[name] = (traced, lowered, lowered.compile())
    return out


def test_stages_describe_the_signature_as_jax(stages):
    (xt, xl, xc), (jt, jl, jc) = stages["xform"], stages["jax"]
    for x_stage, j_stage in ((xt, jt), (xl, jl), (xc, jc)):
        assert x_stage.in_tree == j_stage.in_tree
        x_info, j_info = (jax.tree_util.tree_leaves(s.args_info) for s in (x_stage, j_stage))
        assert [(a.shape, a.dtype, a.donated) for a in x_info] == [
            (a.shape, a.dtype, a.donated) for a in j_info
        ]
        assert jax.tree_util.tree_map(
            lambda s: (s.shape, s.dtype), x_stage.out_info
        ) == jax.tree_util.tree_map(lambda s: (s.shape, s.dtype), j_stage.out_info)
    assert "tanh" in str(xt.jaxpr) and xt.fun_name == jt.fun_name == "f"
    with pytest.warns(UserWarning, match="donated buffers were not usable: float32\\[2,4\\]"):
        donating = xform.jit(_model(xnp), donate_argnums=1).lower(PARAMS, X)
    assert [a.donated for a in jax.tree_util.tree_leaves(donating.args_info)] == [False, True]
    assert jax.tree_util.tree_structure(xc.input_shardings) == jax.tree_util.tree_structure(
        jc.input_shardings
    )
    assert xc.output_shardings.keys() == jc.output_shardings.keys()


def test_lowered_and_compiled_text_and_analyses(stages):
    (_, xl, xc), (_, jl, jc) = stages["xform"], stages["jax"]
    assert "stablehlo.tanh" in xl.as_text() and xl.as_text() == xl.as_text("stablehlo")
    assert xl.as_text("hlo").startswith("HloModule") and "tanh" in xl.as_text("hlo")
    assert xl.compiler_ir().operation.name == "builtin.module"
    assert type(xl.compiler_ir("hlo")) is type(jl.compiler_ir("hlo"))
    assert {"flops", "bytes accessed"} <= set(xl.cost_analysis())
    assert xl.cost_analysis()["flops"] == jl.cost_analysis()["flops"]
    assert xc.as_text().startswith("HloModule") and "is_scheduled=true" in xc.as_text()
    assert xc.cost_analysis()["flops"] == jc.cost_analysis()["flops"]
    xm, jm = xc.memory_analysis(), jc.memory_analysis()
    assert (xm.argument_size_in_bytes, xm.output_size_in_bytes) == (
        jm.argument_size_in_bytes,
        jm.output_size_in_bytes,
    )
    with pytest.raises(ValueError, match="dialect"):
        xl.as_text("tosa")


def _scoped(mod):
    def f(x):
        with mod.named_scope("layer1"):
            y = mod.numpy.sin(x) * 2
            with mod.named_scope("inner"):
                y = y + 1
        return mod.numpy.cos(y)

    return f


def test_named_scopes_reach_locations_and_op_metadata_as_jax():
    """The names of named_scope (and the program's, ``jit(f)``) reach the lowered module's
    locations and XLA's op metadata, with the user's file and line, as JAX's."""
    x = np.arange(3, dtype=np.float32)
    got_lowered = xform.jit(_scoped(xform)).lower(x)
    want_lowered = jax.jit(_scoped(jax)).lower(x)

    def op_names(lowered):  # (of the ops: JAX also names the parameters by the arguments)
        names = re.findall(r'op_name="([^"]*)"', lowered.compile().as_text())
        return sorted({n for n in names if "/" in n})

    assert op_names(got_lowered) == op_names(want_lowered)
    assert "jit(f)/layer1/inner/add" in op_names(got_lowered)
    text = got_lowered.as_text(debug_info=True)
    assert 'loc("jit(f)/layer1/sin"' in text and f'"{__file__}":' in text
    assert "loc(" not in got_lowered.as_text()  # as JAX's: no locations unless asked


def test_compiled_runs_and_rejects_other_types_as_jax(stages):
    (_, _, xc), (_, _, jc) = stages["xform"], stages["jax"]
    got, want = xc(PARAMS, X.copy()), jc(PARAMS, jnp.asarray(X))
    for k in want:
        np.testing.assert_allclose(got[k], want[k], rtol=1e-6)
    for bad in ((PARAMS, X[:1]), (PARAMS, X.astype(np.int32)), (PARAMS, (X,))):
        with pytest.raises(TypeError) as j_err:
            jc(*bad)
        with pytest.raises(TypeError) as x_err:
            xc(*bad)
        assert str(x_err.value).split(".")[0] == str(j_err.value).split(".")[0]
    with pytest.raises(
        TypeError,
        match="Argument 'x' compiled with float32\\[2,4\\] and called with float32\\[1,4\\]",
    ):
        xc(PARAMS, X[:1])


def test_compile_with_xla_options_and_static_arguments():
    f = xform.jit(lambda x, n: xnp.exp(x) * n, static_argnums=1)
    lowered = f.lower(np.ones(3, np.float32), 2)
    fast = lowered.compile({"xla_cpu_enable_fast_math": True})
    np.testing.assert_allclose(fast(np.ones(3, np.float32)), 2 * np.e, rtol=1e-6)
    with pytest.raises(jax.errors.JaxRuntimeError, match="No such compile option"):
        lowered.compile({"not_an_option": 1})


def test_compiled_takes_only_the_dynamic_arguments_as_jax():
    def model(np_):
        def f(x, n, *, scale, y=None):
            return x * n * scale if y is None else x * n * scale + y

        return f

    x = np.arange(3, dtype=np.float32)
    compiled = {}
    for name, lib, np_ in (("xform", xform, xnp), ("jax", jax, jnp)):
        jitted = lib.jit(model(np_), static_argnums=1, static_argnames="scale")
        compiled[name] = (
            jitted.lower(x, 3, scale=2.0).compile(),
            jitted.lower(x, 3, scale=2.0, y=x).compile(),
        )
    (xc, xcy), (jc, jcy) = compiled["xform"], compiled["jax"]
    assert xc.in_tree == jc.in_tree and xcy.in_tree == jcy.in_tree
    np.testing.assert_array_equal(xc(x), jc(x))
    np.testing.assert_array_equal(xcy(x, y=x), jcy(x, y=x))
    assert xc(1.0 + x).dtype == jc(1.0 + x).dtype
    bad_calls = (
        (xc, jc, (x, 3), {}),
        (xc, jc, (), {}),
        (xc, jc, (x,), {"scale": 2.0}),
        (xcy, jcy, (x, x), {}),
        (xc, jc, ((x,),), {}),
    )
    for xf, jf, args, kwargs in bad_calls:
        with pytest.raises(TypeError) as j_err:
            jf(*args, **kwargs)
        with pytest.raises(TypeError, match="There are [12] mismatches") as x_err:
            xf(*args, **kwargs)
        assert str(x_err.value).split(".")[0] == str(j_err.value).split(".")[0]
    with pytest.raises(
        TypeError, match="Argument 'y' compiled with float32\\[3\\] and called with float32\\[2\\]"
    ):
        xcy(x, y=x[:2])


# --------------------------------------------------------------------------- the cache


@pytest.fixture
def cache_dir(tmp_path):
    before = compile_cache.directory()
    compile_cache.set_directory(tmp_path / "cache")
    yield tmp_path / "cache"
    compile_cache.set_directory(before)
    compile_cache.set_max_bytes(2 << 30)


def _fresh_program(c):
    """A program no one compiled before in this process (its constant is in the module)."""
    return xform.jit(lambda x: xnp.sin(x) * c + xnp.cumsum(x))


def _entries(folder):
    return sorted(p for p in os.listdir(folder) if not p.startswith("."))


def test_a_program_is_written_once_then_read_back(cache_dir):
    hits, misses = compile_cache.stats()
    x = np.arange(4, dtype=np.float32)
    cold = _fresh_program(1.25)(x)
    assert compile_cache.stats() == (hits, misses + 1) and len(_entries(cache_dir)) == 1
    warm = _fresh_program(1.25)(x)  # a new function: traced and lowered again, not compiled
    assert compile_cache.stats() == (hits + 1, misses + 1)
    np.testing.assert_array_equal(warm, cold)


@pytest.mark.parametrize("damage", ["garbage", "truncated", "foreign"])
def test_a_damaged_entry_is_dropped_and_recompiled(cache_dir, damage):
    x = np.arange(4, dtype=np.float32)
    want = _fresh_program(0.5)(x)
    path = cache_dir / _entries(cache_dir)[0]
    blob = path.read_bytes()
    assert len(blob) > 100
    damaged = {
        "garbage": b"\x00not an executable" * 10,
        "truncated": blob[: len(blob) // 2],
        # a well-formed entry whose payload XLA cannot load
        "foreign": compile_cache.MAGIC
        + __import__("hashlib").sha256(__import__("zlib").compress(b"junk")).digest()
        + __import__("zlib").compress(b"junk"),
    }[damage]
    path.write_bytes(damaged)
    _, misses = compile_cache.stats()
    np.testing.assert_array_equal(_fresh_program(0.5)(x), want)
    assert compile_cache.stats()[1] == misses + 1
    assert path.read_bytes().startswith(compile_cache.MAGIC)  # replaced by a good entry
    hits, _ = compile_cache.stats()
    _fresh_program(0.5)(x)
    assert compile_cache.stats()[0] == hits + 1


def test_an_unwritable_directory_warns_once_and_compiles(tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    before = compile_cache.directory()
    compile_cache.set_directory(blocker / "cache")  # under a file: cannot be made
    try:
        with pytest.warns(RuntimeWarning, match="cannot be written") as record:
            a = _fresh_program(3.5)(np.ones(2, np.float32))
            b = _fresh_program(4.5)(np.ones(2, np.float32))
        assert len([w for w in record if "cannot be written" in str(w.message)]) == 1
        np.testing.assert_allclose(
            [a, b], [np.sin(1) * 3.5 + [1, 2], np.sin(1) * 4.5 + [1, 2]], rtol=1e-6
        )
    finally:
        compile_cache.set_directory(before)


def test_the_least_recently_used_entries_go_first(cache_dir):
    x = np.ones(3, np.float32)
    for c in (6.0, 7.0, 8.0):
        _fresh_program(c)(x)
    entries = {p: os.path.getsize(cache_dir / p) for p in _entries(cache_dir)}
    assert len(entries) == 3
    oldest = min(entries, key=lambda p: os.path.getmtime(cache_dir / p))
    os.utime(cache_dir / oldest, (1, 1))  # make the order certain
    compile_cache.set_directory(cache_dir)  # recount the directory on the next write
    compile_cache.set_max_bytes(sum(entries.values()) + 10)
    _fresh_program(9.0)(x)
    left = _entries(cache_dir)
    assert oldest not in left and len(left) < 4


def test_off_means_nothing_is_written(tmp_path):
    before = compile_cache.directory()
    compile_cache.set_directory(None)
    try:
        _fresh_program(11.0)(np.ones(2, np.float32))
    finally:
        compile_cache.set_directory(before)
    assert not any(tmp_path.iterdir())


_WORKER = textwrap.dedent("""
    import sys
    import numpy as np
    import xform, xform.numpy as xnp
    from lowering import compile_cache
    compile_cache.set_directory(sys.argv[1])
    f = xform.jit(lambda x: xnp.sin(x) * 13.0 + xnp.cumsum(x))
    print(repr(np.asarray(f(np.arange(4, dtype=np.float32))).tolist()), compile_cache.stats())
""")


def test_processes_share_the_cache_and_write_it_concurrently(cache_dir):
    """Two processes compile the same program at once into an empty directory; a third (this
    one) then loads it instead of compiling, with the same result."""
    env = dict(os.environ, XLA_FLAGS=os.environ.get("XLA_FLAGS", ""))
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _WORKER, str(cache_dir)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for _ in range(2)
    ]
    outs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), [err for _, err in outs]
    values = {out.split(" (")[0] for out, _ in outs}
    assert len(values) == 1 and len(_entries(cache_dir)) == 1
    hits, misses = compile_cache.stats()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = xform.jit(lambda x: xnp.sin(x) * 13.0 + xnp.cumsum(x))(np.arange(4, dtype=np.float32))
    # The subprocesses ran with one CPU device, this one with 8: the key does not depend on it
    # for a one-device program, and XLA's flags are the same.
    assert compile_cache.stats() == (hits + 1, misses)
    assert repr(np.asarray(got).tolist()) == values.pop()

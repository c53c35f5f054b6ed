"""Meshes, sharded arrays and partitioned jit, against JAX on 8 host CPU devices."""

import os
import re
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

import xform
import xform.numpy as xnp
from tests.harness import assert_same
from tests.multiprocess_worker import mlp_loss
from xform.api.sharding import with_sharding_constraint

# jax.sharding's names that xform.sharding does not have, each with the reason.
EXEMPT = {}  # jax.sharding names xform.sharding lacks, with the reason
TOP_LEVEL = [
    "NamedSharding",
    "P",
    "make_mesh",
    "set_mesh",
    "reshard",
    "shard_map",
    "make_array_from_callback",
    "make_array_from_single_device_arrays",
    "make_array_from_process_local_data",
]

MESH = jax.make_mesh((4, 2), ("x", "y"))
AUTO = jax.make_mesh((4, 2), ("x", "y"), axis_types=(jax.sharding.AxisType.Auto,) * 2)
A = np.arange(32, dtype=np.float32).reshape(8, 4) / 7


def put_both(a, spec, mesh=MESH):
    s = NamedSharding(mesh, spec)
    return xform.device_put(a, s), jax.device_put(a, s)


def collectives(hlo_text):
    """The collective ops of a compiled HLO module, with their replica groups."""
    ops = re.findall(
        r"= \S+ (all-reduce|all-gather|reduce-scatter|all-to-all|"
        r"collective-permute)\(.*?replica_groups=(\S+)",
        hlo_text,
    )
    return sorted(ops)


def sdy_annotations(text):
    """The mesh and the arguments' Shardy shardings of a lowered module."""
    mesh = re.search(r"sdy\.mesh @\w+ = <[^>]*>", text).group(0)
    args = re.findall(r"%arg\d+: [^ ]+ \{sdy\.sharding = (#sdy\.sharding<[^>]*>)", text)
    return mesh, args


def test_names_of_jax_sharding():
    public = {n for n in dir(jax.sharding) if not n.startswith("_")}
    missing = {n for n in public if not hasattr(xform.sharding, n)}
    assert missing == set(EXEMPT)
    for name in TOP_LEVEL:
        assert hasattr(xform, name), name
    assert xform.P is P and xform.NamedSharding is NamedSharding


def test_device_put_and_array_properties():
    x, jx = put_both(A, P("x", "y"))
    assert x.sharding == jx.sharding and x.committed and not x.is_fully_replicated
    assert [(s.device, s.index, s.replica_id) for s in x.addressable_shards] == [
        (s.device, s.index, s.replica_id) for s in jx.addressable_shards
    ]
    for s, js in zip(x.global_shards, jx.global_shards, strict=True):
        assert isinstance(s.data, xform.Array)
        np.testing.assert_array_equal(np.asarray(s.data), np.asarray(js.data))
    np.testing.assert_array_equal(np.asarray(x.addressable_data(3)), A[2:4, 2:4])
    np.testing.assert_array_equal(np.asarray(x), A)
    # a pytree prefix of shardings; already on the devices: moved device to device
    tree = xform.device_put(
        {"a": x, "b": A}, {"a": NamedSharding(MESH, P(None, "x")), "b": NamedSharding(MESH, P())}
    )
    assert tree["a"].sharding.spec == P(None, "x") and tree["b"].is_fully_replicated
    np.testing.assert_array_equal(np.asarray(tree["a"]), A)
    one = xform.numpy.ones(3)
    assert one.sharding == jnp.ones(3).sharding and one.is_fully_replicated


def test_make_array_from():
    s = NamedSharding(MESH, P("x"))
    x = xform.make_array_from_callback(A.shape, s, lambda idx: A[idx])
    jx = jax.make_array_from_callback(A.shape, s, lambda idx: A[idx])
    assert x.sharding == jx.sharding
    np.testing.assert_array_equal(np.asarray(x), A)
    pieces = [
        xform.device_put(A[idx], d) for d, idx in s.addressable_devices_indices_map(A.shape).items()
    ]
    y = xform.make_array_from_single_device_arrays(A.shape, s, pieces)
    np.testing.assert_array_equal(np.asarray(y), A)
    z = xform.make_array_from_process_local_data(s, A)
    assert z.sharding == jax.make_array_from_process_local_data(s, A).sharding
    np.testing.assert_array_equal(np.asarray(z), A)


@pytest.mark.parametrize("n", [1, 2, 4, 8])
def test_partitioned_jit_on_n_devices(n):
    mesh = jax.make_mesh((n,), ("i",))
    x, jx = put_both(A, P("i"), mesh)
    f = xform.jit(lambda x: xnp.sin(x) * 2 + x.sum(0))
    jf = jax.jit(lambda x: jnp.sin(x) * 2 + x.sum(0))
    out, expected = f(x), jf(jx)
    assert_same(out, expected, rtol=1e-5)
    assert out.sharding.is_equivalent_to(expected.sharding, 2)
    assert out.sharding == expected.sharding or n == 1  # one device: any spec is the same


def test_jit_shardings_lowering_and_hlo_match_jax():
    x, jx = put_both(A, P("x", "y"))

    def f(x, np_):
        return np_.sin(x).sum(0)

    xf, jf = xform.jit(lambda x: f(x, xnp)), jax.jit(lambda x: f(x, jnp))
    out, expected = xf(x), jf(jx)
    assert_same(out, expected, rtol=1e-5)
    assert out.sharding == expected.sharding  # chosen by the partitioner: P('y')
    lowered, jlowered = xf.lower(x), jf.lower(jx)
    for text in (lowered.as_text(), jlowered.as_text()):
        assert "mhlo.num_partitions = 8" in text
    assert sdy_annotations(lowered.as_text()) == sdy_annotations(jlowered.as_text())
    assert collectives(lowered.compile().as_text()) == collectives(jlowered.compile().as_text())
    # in_shardings on a NumPy argument, out_shardings
    s_in, s_out = NamedSharding(MESH, P("x")), NamedSharding(MESH, P(None, "y"))
    g = xform.jit(lambda x: x * 2, in_shardings=s_in, out_shardings=s_out)
    jg = jax.jit(lambda x: x * 2, in_shardings=s_in, out_shardings=s_out)
    out, expected = g(A), jg(A)
    assert out.sharding == expected.sharding == s_out
    assert_same(out, expected)
    # The trace stage lowers the same partitioned module; the compiled stage's shardings
    # come in JAX's pytrees.
    traced = g.trace(A).lower()
    assert sdy_annotations(traced.as_text()) == sdy_annotations(jg.trace(A).lower().as_text())
    compiled, jcompiled = traced.compile(), jg.lower(A).compile()
    assert compiled.input_shardings == jcompiled.input_shardings == ((s_in,), {})
    assert compiled.output_shardings == jcompiled.output_shardings == s_out


@pytest.mark.parametrize("mesh", [MESH, AUTO], ids=["explicit", "auto"])
def test_arguments_without_a_layout_are_left_to_the_partitioner_as_jax(mesh):
    # A NumPy (or uncommitted) argument beside a sharded one has no sharding in the module:
    # XLA chooses its layout (here w split by rows over y), and the call lays it out so.
    x, jx = put_both(A, P("x", "y"), mesh)
    w = np.arange(16, dtype=np.float32).reshape(4, 4) / 9

    def f(np_):
        return lambda x, w: {"out": np_.sin(x) @ w, "total": x.sum()}

    xf, jf = xform.jit(f(xnp)), jax.jit(f(jnp))
    assert xf.lower(x, w).as_text() == jf.lower(jx, w).as_text()
    compiled, jcompiled = xf.lower(x, w).compile(), jf.lower(jx, w).compile()
    assert compiled.input_shardings == jcompiled.input_shardings
    assert jcompiled.input_shardings[0][1].spec == P("y")  # what the case is about
    assert collectives(compiled.as_text()) == collectives(jcompiled.as_text())
    for arg in (w, xform.device_put(w)):
        out, expected = xf(x, arg), jf(jx, w)
        assert_same(out, expected, rtol=1e-5)
        assert out["out"].sharding == expected["out"].sharding


def test_unread_arguments_are_not_taken_as_jax():
    # JAX's keep_unused=False: the module takes only what it reads; the compiled stage
    # reports None for the others, and calls (general, then keyed) still work.
    x, jx = put_both(A, P("x", "y"))
    z, jz = put_both(A[:, 0], P("x"))
    w = np.ones(3, np.float32)
    xf, jf = xform.jit(lambda x, w, z: x * 2), jax.jit(lambda x, w, z: x * 2)
    assert xf.lower(x, w, z).as_text() == jf.lower(jx, w, jz).as_text()
    assert (
        xf.lower(x, w, z).compile().input_shardings == jf.lower(jx, w, jz).compile().input_shardings
    )
    for _ in range(3):
        out, expected = xf(x, w, z), jf(jx, w, jz)
        assert_same(out, expected)
        assert out.sharding == expected.sharding


def test_tensor_parallel_mlp_one_all_reduce_as_jax():
    rng = np.random.default_rng(0)
    w1 = rng.standard_normal((16, 32)).astype(np.float32) / 4
    w2 = rng.standard_normal((32, 16)).astype(np.float32) / 4
    b = rng.standard_normal((8, 16)).astype(np.float32)
    shardings = (
        NamedSharding(MESH, P(None, "y")),
        NamedSharding(MESH, P("y", None)),
        NamedSharding(MESH, P("x")),
    )

    def mlp(np_, relu):
        return lambda w1, w2, b: relu(b @ w1) @ w2

    xf = xform.jit(mlp(xnp, xform.nn.relu), in_shardings=shardings, out_shardings=shardings[2])
    jf = jax.jit(mlp(jnp, jax.nn.relu), in_shardings=shardings, out_shardings=shardings[2])
    assert_same(xf(w1, w2, b), jf(w1, w2, b), rtol=1e-5, atol=1e-5)
    hlo = xf.lower(w1, w2, b).compile().as_text()
    assert collectives(hlo) == collectives(jf.lower(w1, w2, b).compile().as_text())
    assert [op for op, _ in collectives(hlo)] == ["all-reduce"]


def test_sharding_constraint_reshard_grad_vmap():
    x, jx = put_both(A, P("x", "y"))
    s = NamedSharding(AUTO, P("y"))
    f = xform.jit(lambda x: with_sharding_constraint(x * 2, s) + 1)
    jf = jax.jit(lambda x: jax.lax.with_sharding_constraint(x * 2, s) + 1)
    out, expected = f(A), jf(A)
    assert_same(out, expected)
    assert out.sharding == expected.sharding
    assert "sdy.sharding_constraint" in f.lower(A).as_text()
    with pytest.raises(ValueError, match="can only refer to Auto axes"):
        xform.jit(lambda x: with_sharding_constraint(x, NamedSharding(MESH, P("x"))))(x)
    inner = xform.jit(lambda x: xform.reshard(x * 2, NamedSharding(MESH, P(None, "y"))))(x)
    assert (
        inner.sharding
        == jax.jit(lambda x: jax.reshard(x * 2, NamedSharding(MESH, P(None, "y"))))(jx).sharding
    )
    r = xform.reshard(x, NamedSharding(MESH, P(None, "x")))
    assert r.sharding == jax.reshard(jx, NamedSharding(MESH, P(None, "x"))).sharding
    np.testing.assert_array_equal(np.asarray(r), A)
    # grad and vmap of a sharded jit keep the arguments' layout
    h = xform.jit(lambda x: xnp.sin(x).sum())
    g = xform.grad(h)(x)
    jg = jax.jit(jax.grad(lambda x: jnp.sin(x).sum()))(jx)
    assert_same(g, jg, rtol=1e-6)
    assert g.sharding == jg.sharding
    stacked = xform.device_put(np.stack([A, -A]), NamedSharding(MESH, P(None, "x", "y")))
    v = xform.vmap(xform.jit(lambda x: x * 3))(stacked)
    assert v.sharding.spec == P(None, "x", "y")
    np.testing.assert_allclose(np.asarray(v), np.stack([A, -A]) * 3)


def test_partition_specs_under_set_mesh():
    with xform.set_mesh(MESH):
        y = xform.jit(lambda x: x * 2, in_shardings=P("x"), out_shardings=P(None, "y"))(A)
        assert y.sharding == NamedSharding(MESH, P(None, "y"))
        assert xform.reshard(y, P("x", "y")).sharding == NamedSharding(MESH, P("x", "y"))
    with pytest.raises(ValueError, match=r"PartitionSpec P\('x',\) needs a mesh"):
        xform.jit(lambda x: x, in_shardings=P("x"))(A)


def test_grad_and_vmap_of_jit_with_in_shardings():
    s = NamedSharding(MESH, P("x"))
    g = xform.grad(xform.jit(lambda x: xnp.sin(x).sum(), in_shardings=s))(A)
    v = xform.vmap(xform.jit(lambda x: x * 2, in_shardings=s, out_shardings=s))(np.stack([A, A]))
    with jax.set_mesh(MESH):
        jg = jax.grad(jax.jit(lambda x: jnp.sin(x).sum(), in_shardings=s))(A)
        jv = jax.vmap(jax.jit(lambda x: x * 2, in_shardings=s, out_shardings=s))(np.stack([A, A]))
    assert_same(g, jg, rtol=1e-6)
    assert_same(v, jv)
    # the same layouts (JAX writes some of these specs without their trailing Nones)
    assert g.sharding.is_equivalent_to(jg.sharding, 2)
    assert v.sharding.is_equivalent_to(jv.sharding, 3) and not v.sharding.is_fully_replicated


def test_pmap_arrays_feed_partitioned_jit():
    y = xform.pmap(lambda v: v * 2)(np.arange(8.0, dtype=np.float32).reshape(8, 1))
    assert isinstance(y.sharding, NamedSharding)
    x = xform.device_put(np.ones((8, 1), np.float32), NamedSharding(MESH, P(("x", "y"))))
    out = xform.jit(lambda a, b: a + b)(y, x)
    np.testing.assert_array_equal(np.asarray(out), np.arange(8.0).reshape(8, 1) * 2 + 1)


def test_visualize_array_sharding(capsys):
    x, _ = put_both(A, P("x", "y"))
    xform.debug.visualize_array_sharding(x)
    text = capsys.readouterr().out
    assert all(f"CPU {i}" in text for i in range(8)) and text.count("│") == 12
    xform.debug.visualize_array_sharding(xform.device_put(A, NamedSharding(MESH, P(None, "y"))))
    assert "CPU 0,2,4,6" in capsys.readouterr().out
    # the picture as JAX draws it without colours (rich's table): blocks sized by their
    # share of the array, labels centred
    pytest.importorskip("rich")
    line = jax.make_mesh((8,), ("a",))
    for shape, mesh, spec in [
        ((8, 4), MESH, P("x", "y")),
        ((8, 4), MESH, P("y", "x")),
        ((8, 4), MESH, P("x")),
        ((8, 4), MESH, P(("x", "y"))),
        ((12, 12), MESH, P("x", "y")),
        ((8, 4), MESH, P(None, "y")),
        ((16,), line, P("a")),
        ((16,), MESH, P("x")),
        ((16,), MESH, P()),
        ((64, 8), MESH, P("x", "y")),
        ((24, 16), line, P(None, "a")),
        ((3, 5), MESH, P()),
    ]:
        sharding = NamedSharding(mesh, spec)
        xform.debug.visualize_sharding(shape, sharding)
        got = capsys.readouterr().out
        jax.debug.visualize_sharding(shape, sharding, use_color=False)
        assert got == capsys.readouterr().out, (shape, spec)
    seen = []
    xform.debug.inspect_array_sharding(x, callback=seen.append)
    assert seen == [x.sharding]


def test_bad_input():
    with pytest.raises(ValueError, match=r"Resource axis: z of P\('z',\) is not found in mesh"):
        xform.device_put(A, NamedSharding(MESH, P("z")))
    with pytest.raises(ValueError, match=r"dimension 1 \(size 4\) is not divisible by 8"):
        xform.device_put(A, NamedSharding(MESH, P(None, ("x", "y"))))
    with pytest.raises(
        ValueError,
        match=r"jit of <lambda>: .*f32\[6,4\].*dimension 0 "
        r"\(size 6\) is not divisible by 4",
    ):
        xform.jit(lambda x: x, in_shardings=NamedSharding(MESH, P("x")))(A[:6])
    a = xform.device_put(
        A, NamedSharding(jax.make_mesh((4,), ("i",), devices=jax.devices()[:4]), P("i"))
    )
    b = xform.device_put(
        A, NamedSharding(jax.make_mesh((4,), ("i",), devices=jax.devices()[4:]), P("i"))
    )
    with pytest.raises(ValueError, match=r"incompatible devices.*\[0, 1, 2, 3\].*\[4, 5, 6, 7\]"):
        xform.jit(lambda a, b: a + b)(a, b)
    with pytest.raises(ValueError, match=r"Number of devices 8 must be >= .* \(16,\)"):
        xform.make_mesh((16,), ("i",))


@pytest.mark.slow  # two processes start XLA's distributed runtime: ~10 s on 2 busy cores
def test_two_processes_sharded_jit_and_shard_map(tmp_path):
    # Two processes x 4 CPU devices: the global batch from each process's rows, a sharded-jit
    # SGD step and a shard_map psum over all 8 devices, against this process's results.
    from tests.test_multiprocess import _free_port, _kill, _logs  # noqa: PLC0415

    rng = np.random.default_rng(3)
    inputs = dict(
        param0=rng.standard_normal((3, 5)).astype(np.float32),
        param1=rng.standard_normal(5).astype(np.float32),
        param2=rng.standard_normal((5, 2)).astype(np.float32),
        param3=rng.standard_normal(2).astype(np.float32),
        x=rng.standard_normal((16, 3)).astype(np.float32),
        y=rng.standard_normal((16, 2)).astype(np.float32),
    )
    np.savez(tmp_path / "inputs.npz", **inputs)
    port = _free_port()
    env = dict(os.environ, JAX_PLATFORMS="cpu", PYTHONUNBUFFERED="1")
    worker = Path(__file__).with_name("sharding_worker.py")
    procs = []
    for k in range(2):
        with open(tmp_path / f"worker_{k}.log", "w") as log:
            procs.append(
                subprocess.Popen(
                    [
                        sys.executable,
                        "-m",
                        "tests.sharding_worker",
                        str(k),
                        str(port),
                        str(tmp_path),
                    ],
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    cwd=worker.parent.parent,
                    env=env,
                )
            )
    try:
        codes = [p.wait(timeout=120) for p in procs]
    except subprocess.TimeoutExpired:
        codes = None
    finally:
        _kill(procs)
    assert codes == [0, 0], _logs(tmp_path)
    params = tuple(jnp.asarray(inputs[f"param{k}"]) for k in range(4))
    loss, grads = jax.value_and_grad(lambda p: mlp_loss(p, inputs["x"], inputs["y"], jnp))(params)
    for process_id in range(2):
        load = lambda name: np.load(tmp_path / f"{name}_{process_id}.npy")  # noqa: E731, B023
        np.testing.assert_allclose(load("loss"), loss, rtol=1e-5)
        for k, (p, g) in enumerate(zip(params, grads, strict=True)):
            np.testing.assert_allclose(load(f"param{k}"), p - 0.1 * g, rtol=1e-5, atol=1e-6)
        rows = inputs["x"].reshape(8, 2, 3)
        np.testing.assert_allclose(
            load("psum"), np.broadcast_to(rows.sum(0), (4, 2, 3)), rtol=1e-5, atol=1e-6
        )
        # multihost_utils across the two processes
        np.testing.assert_array_equal(load("allgather"), [[0, 10], [1, 11]])
        np.testing.assert_array_equal(load("tiled"), [0, 10, 1, 11])
        np.testing.assert_array_equal(load("broadcast"), np.arange(3, dtype=np.float32))
        half = inputs["x"].shape[0] // 2
        np.testing.assert_array_equal(
            load("roundtrip"), inputs["x"][process_id * half : (process_id + 1) * half]
        )
        np.testing.assert_array_equal(load("global"), inputs["x"])


def test_eager_ops_on_sharded_arrays_run_partitioned_as_jax():
    """An eager primitive on a sharded array runs as one partitioned program: the result
    stays laid out as JAX lays it out (never gathered to one device)."""
    s = NamedSharding(MESH, P("x", "y"))
    data = np.arange(32, dtype=np.float32).reshape(8, 4)
    x, jx = xform.device_put(data, s), jax.device_put(data, s)
    for name, f in (
        ("affine", lambda m, v: v * 2 + 1),
        ("sin", lambda m, v: m.sin(v)),
        ("sum", lambda m, v: v.sum(axis=0)),
    ):
        got, want = f(xnp, x), f(jnp, jx)
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6, err_msg=name)
        assert got.sharding.is_equivalent_to(want.sharding, got.ndim), name
    y = xform.pmap(lambda v: v * 2.0, donate_argnums=0)(
        xform.pmap(lambda v: v + 1.0)(np.arange(4.0, dtype=np.float32))
    )
    np.testing.assert_allclose(np.asarray(y + 1.0), 2 * np.arange(1.0, 5.0) + 1)


def test_arrays_committed_to_one_device_as_jax():
    # device_put to a device commits there; jit and eager ops run on the committed device
    # and commit their results; two devices at once is JAX's ValueError.
    for lib, np_ in ((xform, xnp), (jax, jnp)):
        _check_committed(lib, np_, dev=3)
    assert_same(
        xform.jit(lambda a: xnp.sin(a) * 2)(xform.device_put(A, xform.devices()[3])), jnp.sin(A) * 2
    )


def _check_committed(lib, np_, dev):
    d = lib.device_put(A, lib.devices()[dev])
    assert d.committed and d.devices() == {lib.devices()[dev]}
    assert not np_.asarray(A).committed and not lib.device_put(A).committed
    double = lib.jit(lambda a: np_.sin(a) * 2)
    for out in (double(d), np_.sin(d) * 2, lib.jit(lambda a, b: a + b)(d, np_.ones(4))):
        assert out.committed and out.devices() == {lib.devices()[dev]}
    assert not double(np_.asarray(A)).committed
    other = lib.device_put(A, lib.devices()[1])
    message = r"Received incompatible devices for jitted computation.*\[3\].*\[1\]"
    with pytest.raises(ValueError, match=message):
        d + other
    with pytest.raises(ValueError, match=message):
        lib.jit(lambda a, b: a * b)(d, other)
    # with an array over a mesh: refused too, after a call with an uncommitted one (the
    # fast path's key does not hide it), by jit and eagerly
    split = lib.device_put(A, lib.NamedSharding(lib.make_mesh((8,), ("i",)), lib.P("i")))
    both = lib.jit(lambda a, b: a * b)
    assert both(split, lib.device_put(A)).sharding.is_equivalent_to(split.sharding, 2)
    message = (
        r"Received incompatible devices for jitted computation\. Got argument .* with "
        r"shape float32\[8@i,4\] and with device ids \[0, 1, 2, 3, 4, 5, 6, 7\] on "
        r"platform CPU and argument .* with shape float32\[8,4\] and with device ids "
        r"\[3\] on platform CPU"
    )
    for call in (lambda: both(split, d), lambda: split * d):
        with pytest.raises(ValueError, match=message):
            call()


@pytest.mark.parametrize("mesh", [MESH, AUTO], ids=["explicit", "auto"])
def test_repeated_calls_of_sharded_arrays_take_the_fast_path_as_jax(mesh, monkeypatch):
    # After a first call, jit's fastest path runs the partitioned program on sharded Arrays
    # of the same avals and layouts; results, types and shardings stay JAX's, call after
    # call (each feeding the next), and other arguments still take the general path.
    from xform.runtime import partitioned  # noqa: PLC0415  (only to count the general path)

    general = []
    run = partitioned.run_partitioned
    monkeypatch.setattr(
        partitioned, "run_partitioned", lambda *args: (general.append(1), run(*args))[1]
    )
    step = lambda lib: lambda w, x: (lib.tanh(x @ w), w * 0.5)  # noqa: E731
    xf, jf = xform.jit(step(xnp)), jax.jit(step(jnp))
    w, jw = put_both(np.ones((4, 4), np.float32) / 4, P(None, "y"), mesh)
    x, jx = put_both(A, P("x", None), mesh)
    for _ in range(4):
        (y, w), (jy, jw) = xf(w, x), jf(jw, jx)
        assert_same((y, w), (jy, jw), rtol=1e-6)
        assert y.sharding == jy.sharding and w.sharding == jw.sharding
        assert str(xform.typeof(y)) == str(jax.typeof(jy)), (xform.typeof(y), jax.typeof(jy))
    assert len(general) == 2  # the first call, and the first with the program's own layouts
    np.testing.assert_allclose(xf(w, np.asarray(x))[0], jf(jw, np.asarray(jx))[0], rtol=1e-6)
    assert len(general) == 3  # a host array: the general path


def test_repeated_calls_of_pytrees_with_given_shardings_take_the_fast_path(monkeypatch):
    # A training step's call: pytrees of sharded Arrays into a jit with in_shardings and
    # out_shardings, its results fed back. After the first calls, each runs the program
    # without the general path; results and shardings stay JAX's.
    from xform.runtime import partitioned  # noqa: PLC0415  (only to count the general path)

    general = []
    run = partitioned.run_partitioned
    monkeypatch.setattr(
        partitioned, "run_partitioned", lambda *args: (general.append(1), run(*args))[1]
    )

    def step(lib):
        def f(params, batch):
            w, b = params["w"], params["b"]
            y = lib.tanh(batch["x"] @ w + b)
            return {"w": w - 0.1 * batch["x"].T @ y / 8, "b": b * 0.9}, y.sum()

        return f

    p_s = {"w": NamedSharding(AUTO, P(None, "y")), "b": NamedSharding(AUTO, P("y"))}
    b_s = {"x": NamedSharding(AUTO, P("x", None))}
    kw = dict(in_shardings=(p_s, b_s), out_shardings=(p_s, NamedSharding(AUTO, P())))
    params = {"w": np.ones((4, 8), np.float32) / 8, "b": np.arange(8, dtype=np.float32)}
    batch = {"x": A}
    xf, jf = xform.jit(step(xnp), **kw), jax.jit(step(jnp), **kw)
    xp, xb = xform.device_put(params, p_s), xform.device_put(batch, b_s)
    jp, jb = jax.device_put(params, p_s), jax.device_put(batch, b_s)
    for _ in range(4):
        (xp, xv), (jp, jv) = xf(xp, xb), jf(jp, jb)
        assert_same((xp, xv), (jp, jv), rtol=1e-5, atol=1e-6)
        assert xp["w"].sharding == jp["w"].sharding and xv.sharding == jv.sharding
    assert len(general) <= 2
    # laid out otherwise than in_shardings: the general path, and JAX's error
    before, other = len(general), NamedSharding(AUTO, P())
    for lib, params_, jit_step in ((xform, xp, xf), (jax, jp, jf)):
        with pytest.raises(
            ValueError,
            match=r"Sharding passed to jit does not match the "
            r"sharding on the respective arg. Got jit sharding: .*P\('x', None\)"
            r".*\narg sharding: .*spec=P\(\).* for arg type: float32\[8,4\]",
        ):
            jit_step(params_, lib.device_put(batch, other))
    assert len(general) == before + 1


def test_mesh_utils_as_jax():
    from jax.experimental import mesh_utils as jax_mesh_utils  # noqa: PLC0415

    from xform.experimental import mesh_utils  # noqa: PLC0415

    assert sorted(n for n in dir(jax_mesh_utils) if not n.startswith("_")) == sorted(
        mesh_utils.__all__
    )
    for shape in [(8,), (4, 2), (2, 2, 2), (np.int64(2), 4)]:
        got = mesh_utils.create_device_mesh(shape)
        assert got.shape == tuple(int(s) for s in shape)
        assert (got == jax_mesh_utils.create_device_mesh(shape)).all()
    devices = jax.devices()[:4][::-1]
    assert (
        mesh_utils.create_device_mesh((2, 2), devices)
        == jax_mesh_utils.create_device_mesh((2, 2), devices)
    ).all()
    hybrid = mesh_utils.create_hybrid_device_mesh((4, 2), (1, 1), process_is_granule=True)
    assert (
        hybrid == jax_mesh_utils.create_hybrid_device_mesh((4, 2), (1, 1), process_is_granule=True)
    ).all()
    mesh = xform.sharding.Mesh(mesh_utils.create_device_mesh((4, 2)), ("x", "y"))
    x = xform.device_put(A, NamedSharding(mesh, P("x", "y")))
    assert x.sharding.shard_shape(A.shape) == (2, 2)
    for call in (
        lambda m: m.create_device_mesh((3, 3)),
        lambda m: m.create_device_mesh((2, "a")),
        lambda m: m.create_hybrid_device_mesh((4, 2), (1, 1)),
        lambda m: m.create_hybrid_device_mesh((2, 2), (2, 1), process_is_granule=True),
    ):
        messages = []
        for m in (mesh_utils, jax_mesh_utils):
            with pytest.raises(ValueError) as info:
                call(m)
            messages.append(str(info.value))
        assert messages[0] == messages[1]


def test_multihost_utils_in_one_process_as_jax():
    from jax.experimental import multihost_utils as jax_mhu  # noqa: PLC0415

    from xform.experimental import multihost_utils as mhu  # noqa: PLC0415

    exempt = {  # JAX's names that xform's module cannot have, with why
        "live_devices": "JAX's fault-tolerant device liveness; xform.distributed lacks it",
        "ProcessFailureError": "raised only by live_devices",
        **{
            n: "an internal of JAX's host<->global primitives (xform's are eager functions)"
            for n in (
                "global_array_to_host_local_array_impl",
                "gtl_abstract_eval",
                "host_local_array_to_global_array_impl",
                "ltg_abstract_eval",
                "ltg_batcher",
            )
        },
    }
    public = {
        n
        for n in dir(jax_mhu)
        if not n.startswith("_")
        and getattr(getattr(jax_mhu, n), "__module__", None) == jax_mhu.__name__
    }
    assert public - set(exempt) == set(mhu.__all__)
    tree = {"a": np.arange(6.0, dtype=np.float32).reshape(2, 3), "s": np.float32(2.5)}
    x = xform.device_put(A, NamedSharding(MESH, P("x", "y")))
    jx = jax.device_put(A, NamedSharding(MESH, P("x", "y")))
    for tiled in (False, True):
        for got, want in (
            (
                mhu.process_allgather(tree, tiled=tiled),
                jax_mhu.process_allgather(tree, tiled=tiled),
            ),
            (mhu.process_allgather(x, tiled=tiled), jax_mhu.process_allgather(jx, tiled=tiled)),
        ):
            for g, w in zip(jax.tree.leaves(got), jax.tree.leaves(want), strict=True):
                assert type(g) is np.ndarray and g.shape == w.shape
                np.testing.assert_array_equal(g, w)
    for g, w in zip(
        jax.tree.leaves(mhu.broadcast_one_to_all(tree)),
        jax.tree.leaves(jax_mhu.broadcast_one_to_all(tree)),
        strict=True,
    ):
        np.testing.assert_array_equal(g, w)
    mhu.assert_equal(tree, "same everywhere")
    mhu.sync_global_devices("step")
    for m in (mhu, jax_mhu):
        with pytest.raises(ValueError, match="`None` is not a valid input to the pspecs"):
            m.host_local_array_to_global_array({"a": A}, MESH, {"a": None})
    specs = {"a": P("x"), "s": P()}
    placed = {"a": np.arange(8.0, dtype=np.float32), "s": np.float32(1)}
    glob = mhu.host_local_array_to_global_array(placed, MESH, specs)
    jglob = jax_mhu.host_local_array_to_global_array(placed, MESH, specs)
    back = mhu.global_array_to_host_local_array(glob, MESH, specs)
    assert {s.data.shape for s in glob["s"].addressable_shards} == {()}  # a scalar's shards
    for k, value in placed.items():
        assert glob[k].sharding == jglob[k].sharding
        assert_same(glob[k], jglob[k])
        assert_same(back[k], value)
    with pytest.raises(RuntimeError, match="xform lacks it"):
        mhu.reached_preemption_sync_point(0)


# --------------------------------------------------------------------------- P.UNCONSTRAINED,
# vmap's spmd_axis_name and XLA's propagation flags


def _constraint_specs(text):
    return re.findall(r"sdy\.sharding_constraint %\S+ (<@mesh, [^>]*>)", text)


def _jaxpr_specs(closed):
    return [
        str(e.params["sharding"].spec)
        for e in closed.jaxpr.eqns
        if e.primitive.name == "sharding_constraint"
    ]


def test_unconstrained_dims_as_jax():
    pair = [
        NamedSharding(AUTO, P(P.UNCONSTRAINED, "y", None)),
        NamedSharding(AUTO, P("x", P.UNCONSTRAINED, None)),
    ]
    v = np.arange(256, dtype=np.float32).reshape(4, 8, 8)
    results, texts = [], []
    for mod in (xform, jax):

        def f(xs, mod=mod):
            xs = mod.lax.with_sharding_constraint(xs, pair)
            return [xs[0] * 2, mod.numpy.sin(xs[1])]

        g = mod.jit(f)
        results.append(g([v, v + 1]))
        texts.append(g.lower([v, v + 1]).as_text())
    assert_same(*results)
    assert (
        _constraint_specs(texts[0])
        == _constraint_specs(texts[1])
        == ['<@mesh, [{?}, {"y"}, {}]>', '<@mesh, [{"x"}, {?}, {}]>']
    )
    # Eagerly, a dimension left to the partitioner is not split.
    eager = xform.lax.with_sharding_constraint(xform.numpy.asarray(v), pair[0])
    np.testing.assert_array_equal(np.asarray(eager), v)
    for mod in (xform, jax):
        for kw in ("in_shardings", "out_shardings"):
            with pytest.raises(ValueError, match="Unconstrained dims are not allowed"):
                mod.jit(lambda x: x, **{kw: NamedSharding(AUTO, P(P.UNCONSTRAINED, "x"))})


def test_vmap_of_sharding_constraints_as_jax():
    x = np.arange(256, dtype=np.float32).reshape(4, 8, 8)
    got = {}
    for mod in (xform, jax):

        def f(v, mod=mod):
            return mod.lax.with_sharding_constraint(v * 2, NamedSharding(AUTO, P("x")))

        inner = mod.jit(lambda v: v * 2, in_shardings=NamedSharding(AUTO, P("x")))
        got[mod] = []
        for fun in (
            mod.vmap(f),
            mod.vmap(f, spmd_axis_name="y"),
            mod.vmap(f, in_axes=1),
            mod.vmap(inner),
        ):
            got[mod].append(
                (_constraint_specs(mod.jit(fun).lower(x).as_text()), np.asarray(mod.jit(fun)(x)))
            )
        got[mod].append(_jaxpr_specs(mod.make_jaxpr(mod.vmap(f, spmd_axis_name="y"))(x)))
        got[mod].append(_jaxpr_specs(mod.make_jaxpr(mod.vmap(f))(x)))
        with pytest.raises(
            ValueError, match="spmd_axis_name .* cannot appear in with_sharding_constraint spec"
        ):
            mod.vmap(f, spmd_axis_name="x")(x)
    for (xs, xv), (js, jv) in zip(got[xform][:4], got[jax][:4], strict=True):
        assert xs == js
        np.testing.assert_array_equal(xv, jv)
    assert got[xform][4:] == got[jax][4:] == [["P('y', 'x')"], ["P(UNCONSTRAINED, 'x', None)"]]
    assert [s for s, _ in got[xform][:4]] == [
        ['<@mesh, [{?}, {"x"}, {}]>'],
        ['<@mesh, [{"y"}, {"x"}, {}]>'],
        ['<@mesh, [{"x"}, {?}, {}]>'],
        ['<@mesh, [{}, {"x"}, {}]>'],
    ]


def _propagation_flags(compiled_text):
    return re.findall(
        r"allow_spmd_sharding_propagation_to_\w+=\{[^}]*\}", compiled_text.splitlines()[0]
    )


def test_propagation_flags_of_the_compiled_program_as_jax():
    # XLA may choose the layout of an argument without one and of a result that
    # out_shardings does not name, as it may for JAX's, and of no other.
    s = NamedSharding(AUTO, P("x"))
    x = xform.device_put(A, s), jax.device_put(A, s)
    flags = []
    for k, mod in enumerate((xform, jax)):

        def f(a, b, mod=mod):
            return mod.numpy.sin(a) + b, a * 2

        for kw in ({"out_shardings": (s, None)}, {"out_shardings": s}, {}):
            flags.append(_propagation_flags(mod.jit(f, **kw).lower(x[k], A).compile().as_text()))
    assert flags[:3] == flags[3:]
    assert flags[0] == [
        "allow_spmd_sharding_propagation_to_parameters={false,true}",
        "allow_spmd_sharding_propagation_to_output={false,true}",
    ]


def test_the_accelerator_check_runs_on_host_devices():
    # benchmarks/gpu_check.py is what a lent GPU runs: kept runnable here, on 8 CPU devices
    root = Path(__file__).resolve().parents[1]
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.gpu_check"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "sharded jit SGD step over 8 devices" in done.stdout and "FAIL" not in done.stdout


@pytest.mark.parametrize("mesh", [MESH, AUTO], ids=["explicit", "auto"])
def test_results_left_to_the_partitioner_report_jax_specs(mesh):
    # A result no out_shardings names and no type carries gets the partitioner's layout,
    # reported as JAX reports it: trailing unsplit dimensions left out, on any mesh; a typed
    # result's spec (an Explicit mesh's arrays) names every dimension.
    cases = [
        (lambda a: a * 2, P("x")),
        (lambda a: a.sum(0), P("x")),
        (lambda a: a.T, P("x")),
        (lambda a: a * 2, P(None, "y")),
        (lambda a: (a * 2).sum(), P("x", "y")),
        (lambda a: a[None] * 2, P()),
    ]
    for f, spec in cases:
        for arg in (A, "placed"):
            got, want = [
                lib.jit(f, in_shardings=NamedSharding(mesh, spec))(
                    A if arg is A else lib.device_put(A, NamedSharding(mesh, spec))
                )
                for lib in (xform, jax)
            ]
            assert got.sharding.spec == want.sharding.spec, (spec, arg)
            np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)


def test_in_shardings_lay_out_but_do_not_type_as_jax():
    # JAX's jit takes in/out_shardings as params of its equation: the body's types are the
    # arguments' own, so a NumPy argument stays untyped inside (and the gradient's
    # contraction over the split batch needs no out_sharding), under make_jaxpr and grad.
    batch, replicated = NamedSharding(MESH, P("x")), NamedSharding(MESH, P())

    def loss(lib):
        return lambda w, x: lib.mean(lib.tanh(x @ w) ** 2)

    w, x = np.ones((4, 3), np.float32) / 4, A

    def typed_inputs(lib, np_, args):
        f = lib.jit(lib.grad(loss(np_)), in_shardings=(replicated, batch))
        jaxpr = lib.make_jaxpr(f)(*args)
        return [str(a) for a in jaxpr.eqns[0].params["jaxpr"].in_avals] + [
            str(a) for a in jaxpr.out_avals
        ]

    for args in ((w, x), "placed"):
        if args == "placed":
            got_args = (xform.device_put(w, replicated), xform.device_put(x, batch))
            want_args = (jax.device_put(w, replicated), jax.device_put(x, batch))
        else:
            got_args = want_args = args
        assert typed_inputs(xform, xnp, got_args) == typed_inputs(jax, jnp, want_args)
        got = xform.jit(xform.grad(loss(xnp)), in_shardings=(replicated, batch))(*got_args)
        want = jax.jit(jax.grad(loss(jnp)), in_shardings=(replicated, batch))(*want_args)
        assert_same(got, want, rtol=1e-5)
    outer = xform.make_jaxpr(lambda a: xform.jit(lambda v: v * 2, in_shardings=batch)(a) + 1)(A)
    assert str(outer.out_avals[0]) == str(
        jax.make_jaxpr(lambda a: jax.jit(lambda v: v * 2, in_shardings=batch)(a) + 1)(A).out_avals[
            0
        ]
    )


def test_with_sharding_constraint_takes_partition_specs_as_jax():
    # PartitionSpecs (alone or in a pytree prefix, with None) name the context mesh's axes;
    # without a mesh JAX's RuntimeError. (The docs' matmul example crashed with a TypeError.)
    def f(lib):
        def constrained(x, y):
            z = lib.numpy.dot(x, y)
            return lib.lax.with_sharding_constraint(z, P("x", None))

        return constrained

    def pair(lib):
        return lambda a, b: lib.lax.with_sharding_constraint([a, b], [P("x"), None])

    x, y = A, np.ones((4, 6), np.float32)
    with pytest.raises(RuntimeError, match="requires a non-empty mesh in context"):
        xform.jit(f(xform))(x, y)
    results = []
    for lib in (xform, jax):
        with lib.set_mesh(AUTO):
            results.append((lib.jit(f(lib))(x, y), f(lib)(x, y), lib.jit(pair(lib))(x, A)))
    (got, got_eager, got_pair), (want, want_eager, want_pair) = results
    for g, w in (
        (got, want),
        (got_eager, want_eager),
        (got_pair[0], want_pair[0]),
        (got_pair[1], want_pair[1]),
    ):
        assert_same(g, w, rtol=1e-6)
        assert g.sharding.spec == w.sharding.spec


def test_scalars_laid_out_over_a_mesh_stay_scalars_as_jax():
    # A 0-d array put on a mesh (replicated) keeps shape () in its host copy, its shards and
    # its printed forms (its shards were 1-d: str gave "[11.920298]").
    value = np.float32(11.920298)
    got = xform.device_put(value, NamedSharding(MESH, P()))
    want = jax.device_put(value, NamedSharding(MESH, P()))
    assert np.asarray(got).shape == () and got.addressable_shards[0].data.shape == ()
    assert (str(got), repr(got)) == (str(want), repr(want))
    assert repr(xform.jit(lambda a: a * 2)(got)) == repr(jax.jit(lambda a: a * 2)(want))

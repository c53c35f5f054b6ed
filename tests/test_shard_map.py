"""shard_map against JAX's on a 4x2 mesh of host CPU devices: every collective, the
lowering (sdy.manual_computation), jit, grad, vmap, control flow inside, bad input."""

import re

import jax
import numpy as np
import pytest
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

import xform
from tests.harness import assert_same

MESH = jax.make_mesh((4, 2), ("x", "y"))
A = (np.arange(64, dtype=np.float32).reshape(8, 8) - 20) / 9
SPEC = P("x", "y")
JA = jax.device_put(A, NamedSharding(MESH, SPEC))  # JAX's explicit mode wants it laid out


def every_collective(lax):
    def body(a):
        return (lax.psum(a, "x"), lax.pmean(a, ("x", "y")), lax.pmax(a, "y"), lax.pmin(a, "x"),
                lax.all_gather(a, "y", tiled=True), lax.all_gather(a, "x", axis=1),
                lax.psum_scatter(a, "x", scatter_dimension=1, tiled=True),
                lax.ppermute(a, "x", [(i, (i + 1) % 4) for i in range(4)]),
                lax.all_to_all(a, "y", 0, 1, tiled=True),
                a + lax.axis_index("x") * 10 + lax.axis_index("y"))
    return body


OUT_SPECS = (P("x", "y"), P("x", "y"), P("x", "y"), P("x", "y"), P("x", "y"),
             P("x", "y", None), P("x", "y"), P("x", "y"), P("x", "y"), P("x", "y"))


@pytest.fixture(scope="module")
def collectives_both():
    kw = dict(mesh=MESH, in_specs=SPEC, out_specs=OUT_SPECS)
    xf = xform.jit(xform.shard_map(every_collective(xform.lax), **kw))
    jf = jax.jit(jax.shard_map(every_collective(jax.lax), check_vma=False, **kw))
    return xf, jf


def test_every_collective_under_jit(collectives_both):
    xf, jf = collectives_both
    outs, expected = xf(A), jf(JA)
    for k, (o, e) in enumerate(zip(outs, expected, strict=True)):
        assert_same(o, e, rtol=1e-6, atol=1e-6, what=f"output {k}")
        assert o.sharding == e.sharding


def _collective_ops(text):
    """Each collective of a lowered module with its groups/pairs and channel attributes."""
    return sorted(re.findall(r'"?stablehlo\.(all_reduce|all_gather|reduce_scatter|all_to_all|'
                             r'collective_permute)"?\(.*?(replica_groups = dense<[^>]*>|'
                             r'source_target_pairs = dense<[^>]*>)', text))


def test_lowered_as_jax(collectives_both):
    xf, jf = collectives_both
    text, jtext = xf.lower(A).as_text(), jf.lower(JA).as_text()
    manual = re.compile(r"sdy\.manual_computation\(%arg0\) (in_shardings=.*?manual_axes=\{[^}]*\})")
    assert manual.search(text).group(1) == manual.search(jtext).group(1)
    assert _collective_ops(text) == _collective_ops(jtext)
    assert text.count("channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>") == \
        jtext.count("channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>")
    assert "stablehlo.partition_id" in text


def test_eager_shardings_and_nested_specs():
    f = xform.shard_map(lambda a, b: (a * 2, xform.lax.psum(b["w"], "y")), mesh=MESH,
                        in_specs=(SPEC, {"w": P(None, "y")}), out_specs=(SPEC, P()))
    out, w = f(A, {"w": A})
    assert out.sharding == NamedSharding(MESH, SPEC) and w.sharding == NamedSharding(MESH, P())
    np.testing.assert_allclose(np.asarray(out), A * 2)
    np.testing.assert_allclose(np.asarray(w), A[:, :4] + A[:, 4:], rtol=1e-6)
    old = xform.experimental.shard_map.shard_map(lambda a: a + 1, MESH, SPEC, SPEC)
    np.testing.assert_allclose(np.asarray(old(A)), A + 1)


def test_grad():
    def loss(lax, shard_map):
        def body(a):
            s = lax.psum(a * a, "x")
            p = lax.ppermute(a, "y", [(0, 1), (1, 0)])
            return (s * p).sum(), lax.all_gather(a, "x", tiled=True)

        def f(a):
            total, gathered = shard_map(body, mesh=MESH, in_specs=SPEC,
                                        out_specs=(P(), P(None, "y")), check_vma=False)(a)
            return total + (gathered ** 2).sum()
        return f

    with jax.set_mesh(MESH):
        expected = jax.jit(jax.grad(loss(jax.lax, jax.shard_map)))(JA)
    got = xform.grad(loss(xform.lax, xform.shard_map))(A)
    assert_same(got, expected, rtol=2e-5, atol=2e-5)
    assert got.sharding.is_equivalent_to(expected.sharding, 2)


def test_vmap_and_control_flow_inside():
    def body(lax):
        def f(a):
            def step(c, row):
                return c + lax.psum(row, "x"), c.sum()
            carry, ys = lax.scan(step, np.zeros(a.shape[1], np.float32), a)
            return lax.cond(carry.sum() > 0, lambda c: c * 2, lambda c: -c, carry), ys
        return f

    # vmap over a leading batch axis: the batch dimension is not split
    kw = dict(mesh=MESH, in_specs=P("x", "y"), out_specs=(P("y"), P("x")))
    stacked = np.stack([A, -A])
    got = xform.vmap(xform.shard_map(body(xform.lax), **kw))(stacked)
    with jax.set_mesh(MESH):
        expected = jax.jit(jax.vmap(jax.shard_map(body(jax.lax), check_vma=False, **kw)))(
            jax.device_put(stacked, NamedSharding(MESH, P(None, "x", "y"))))
    assert_same(got, expected, rtol=1e-5, atol=1e-5)


def test_bad_input():
    f = xform.shard_map(lambda a: a, mesh=MESH, in_specs=P("z"), out_specs=P("z"))
    with pytest.raises(ValueError, match=r"in_specs\[0\] is P\('z',\).*axis 'z'.*not in mesh"):
        f(A)
    g = xform.shard_map(lambda a: a, mesh=MESH, in_specs=P(("x", "y")), out_specs=P("x"))
    with pytest.raises(ValueError, match=r"dimension 0 \(size 4\) is not divisible by 8"):
        g(A[:4])
    h = xform.shard_map(lambda a: a * 2, mesh=MESH, in_specs=SPEC, out_specs=P("x"))
    with pytest.raises(ValueError, match="out_specs.*replicated across mesh axis 'y'"):
        h(A)
    ok = xform.shard_map(lambda a: a * 2, mesh=MESH, in_specs=SPEC, out_specs=P("x"),
                         check_vma=False)
    assert ok(A).shape == (8, 4)
    with pytest.raises(ValueError, match="no mesh given"):
        xform.shard_map(lambda a: a, in_specs=SPEC, out_specs=SPEC)(A)


def test_partial_manual_axes_as_jax():
    auto = jax.make_mesh((4, 2), ("x", "y"), axis_types=(jax.sharding.AxisType.Auto,) * 2)
    kw = dict(mesh=auto, in_specs=P("x"), out_specs=P(), axis_names={"x"})
    xf = xform.jit(xform.shard_map(lambda b: xform.lax.psum(b, "x") * 2, **kw))
    jf = jax.jit(jax.shard_map(lambda b: jax.lax.psum(b, "x") * 2, **kw))
    out, expected = xf(A), jf(A)
    assert_same(out, expected)
    assert out.sharding == expected.sharding
    manual = re.compile(r"manual_computation\(%arg0\) (.*manual_axes=\{[^}]*\})")
    text, jtext = xf.lower(A).as_text(), jf.lower(A).as_text()
    assert manual.search(text).group(1) == manual.search(jtext).group(1)  # {"x", ?}: open
    assert _collective_ops(text) == _collective_ops(jtext)

"""Details of JAX's API that its libraries (equinox, flax, optax) lean on, against JAX: jit's
cached call with pytrees, keywords and static arguments, buffer donation (deletion, pointers,
the unusable-donation warning), einsum's ``_dot_general`` and the samplers' ``out_sharding``."""

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import NamedSharding, PartitionSpec

import xform
import xform.lax as xlax
import xform.numpy as xnp
import xform.random as xrandom


def _step(np_):
    def step(params, x, *, scale, bias=None):
        y = np_.tanh(x @ params["w"]) * scale
        return {"y": y if bias is None else y + bias, "n": np_.sum(x)}, params

    return step


def test_cached_calls_with_pytrees_keywords_and_statics_as_jax():
    params = {"w": np.linspace(-1, 1, 6, dtype=np.float32).reshape(3, 2)}
    x = np.linspace(0, 1, 12, dtype=np.float32).reshape(4, 3)
    bias = np.float32(0.5)
    xf = xform.jit(_step(xnp), static_argnames="scale")
    jf = jax.jit(_step(jnp), static_argnames="scale")
    xparams, xx = {"w": xnp.asarray(params["w"])}, xnp.asarray(x)
    for _ in range(3):  # the first call traces; the later ones take the cached path
        for scale, kwargs in ((2.0, {}), (3.0, {"bias": bias})):
            got = xf(xparams, xx, scale=scale, **kwargs)
            want = jf(params, x, scale=scale, **kwargs)
            assert jax.tree_util.tree_structure(got) == jax.tree_util.tree_structure(want)
            for g, w in zip(
                jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want), strict=True
            ):
                assert g.dtype == w.dtype and g.weak_type == w.weak_type
                np.testing.assert_allclose(g, w, rtol=1e-6)
    assert xf._cache_size() == 2


@pytest.mark.parametrize("lib", [xform, jax])
def test_donated_buffers_are_reused_and_deleted_as_jax(lib):
    np_ = xnp if lib is xform else jnp
    f = lib.jit(lambda x: x + 1, donate_argnums=0)
    x = np_.array(0.0)
    pointer = x.unsafe_buffer_pointer()
    y = f(x)
    assert x.is_deleted() and not y.is_deleted()
    assert y.unsafe_buffer_pointer() == pointer
    with pytest.raises(RuntimeError, match="deleted"):
        x + 1
    assert isinstance(np_.ones(2).unsafe_buffer_pointer(), int)
    # a copy has a buffer of its own: donating it leaves the original alive
    z = f(np_.arange(3.0))
    copied = np_.copy(z)
    f(copied)
    assert copied.is_deleted() and not z.is_deleted()
    np.testing.assert_array_equal(z, [1.0, 2.0, 3.0])


def _warnings_of(lib, np_, donate_argnums):
    g = lib.jit(lambda x, y: x + np_.sum(y), donate_argnums=donate_argnums)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        g(np_.array(1.0), np_.ones((10,)))
    return [(w.category, str(w.message)) for w in caught]


def test_unusable_donations_warn_as_jax():
    for donate in ((0, 1), (1,), (0,)):
        got = _warnings_of(xform, xnp, donate)
        assert got == _warnings_of(jax, jnp, donate)
        assert bool(got) == (1 in donate)
    assert "float32[10]" in _warnings_of(xform, xnp, (0, 1))[0][1]


def test_einsum_calls_the_given_dot_general_as_jax():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.arange(12, dtype=np.float32).reshape(3, 4)
    c = np.arange(8, dtype=np.float32).reshape(4, 2)
    results = {}
    for name, np_, lax in (("xform", xnp, xlax), ("jax", jnp, jax.lax)):
        calls = []

        def dot_general(
            lhs,
            rhs,
            dims,
            precision=None,
            preferred_element_type=None,
            lax=lax,
            calls=calls,
            **kwargs,
        ):
            calls.append(dims)
            return 2 * lax.dot_general(
                lhs, rhs, dims, precision, preferred_element_type=preferred_element_type
            )

        out = np_.einsum("ij,jk,kl->il", a, b, c, _dot_general=dot_general, optimize=False)
        results[name] = (np.asarray(out), len(calls))
    np.testing.assert_allclose(results["xform"][0], results["jax"][0], rtol=1e-6)
    assert results["xform"][1] == results["jax"][1] == 2


def test_samplers_take_out_sharding_as_jax():
    mesh = jax.sharding.Mesh(
        np.array(jax.devices()[:1]), ("x",), axis_types=(jax.sharding.AxisType.Explicit,)
    )
    sharding = NamedSharding(mesh, PartitionSpec("x"))
    for name, shape in (("uniform", (4,)), ("cauchy", (4,))):  # one of each module
        for out_sharding in (None, sharding):
            with jax.set_mesh(mesh):  # JAX places a result over a mesh it is inside
                want = getattr(jax.random, name)(
                    jax.random.key(0), shape, out_sharding=out_sharding
                )
            got = getattr(xrandom, name)(xrandom.key(0), shape, out_sharding=out_sharding)
            np.testing.assert_array_equal(got, want)
            assert got.sharding.is_equivalent_to(want.sharding, len(shape))

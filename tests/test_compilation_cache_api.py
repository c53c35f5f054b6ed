"""xform.experimental.compilation_cache: JAX 0.10.2's names, steering xform's persistent
cache."""

import os

import jax.experimental.compilation_cache.compilation_cache as jax_cc
import numpy as np

import xform
import xform.numpy as jnp
from lowering import compile_cache
from xform.experimental.compilation_cache import compilation_cache as cc


def test_names_as_jax():
    public = lambda m: {n for n in dir(m) if not n.startswith("_")}  # noqa: E731
    assert {"reset_cache", "set_cache_dir"} <= public(jax_cc)
    assert public(jax_cc) - {"annotations"} <= public(cc)


def test_set_cache_dir_stores_compiled_programs_there(tmp_path):
    before = xform.config.read("jax_compilation_cache_dir")
    try:
        cc.set_cache_dir(tmp_path / "cache")
        assert xform.config.read("jax_compilation_cache_dir") == str(tmp_path / "cache")
        assert compile_cache.directory() == str(tmp_path / "cache")
        f = xform.jit(lambda x: jnp.sin(x) * 3.0 + jnp.cumsum(x))
        np.testing.assert_allclose(
            f(jnp.arange(4.0)), np.sin(np.arange(4.0)) * 3 + np.cumsum(np.arange(4.0)), rtol=1e-6
        )
        assert os.listdir(tmp_path / "cache")
        cc.reset_cache()
        assert compile_cache.directory() == str(tmp_path / "cache")
    finally:
        cc.set_cache_dir(before)

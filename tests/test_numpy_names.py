"""xform.numpy has every public name of jax.numpy: a name that goes missing fails the suite."""

import jax.numpy as jnp

import xform.numpy as xnp


def test_the_names_of_jax_numpy():
    public = {n for n in dir(jnp) if not n.startswith("_")}
    missing = {n for n in public if not hasattr(xnp, n)}
    assert not missing, f"xform.numpy lacks {sorted(missing)}"

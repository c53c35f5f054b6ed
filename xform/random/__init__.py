"""``xform.random``: JAX's counter-based PRNG (threefry2x32), bit for bit.

Keys are raw ``uint32[2]`` arrays, as JAX's legacy ``jax.random.PRNGKey``; ``key`` returns the
same raw form (xform has no extended key dtype) and ``key_data``/``wrap_key_data`` check and
pass key data through. For the same key and arguments, ``split``, ``fold_in``, ``bits``,
``uniform``, ``normal``, ``randint``, ``permutation`` and the samplers built only on them equal
JAX's default PRNG exactly (``jax_threefry_partitionable=True``, JAX's default). Everything is a
composition of ``xform.lax`` primitives, so it works under ``jit``, ``vmap`` (over keys too),
``grad`` and ``pmap``.

Example:
  >>> key = xform.random.PRNGKey(0)
  >>> key, sub = xform.random.split(key)
  >>> x = xform.random.normal(sub, (3,))
"""

from xform.random._distributions import (
    bernoulli,
    beta,
    categorical,
    choice,
    dirichlet,
    exponential,
    gamma,
    gumbel,
    laplace,
    loggamma,
    logistic,
    multivariate_normal,
    normal,
    orthogonal,
    permutation,
    randint,
    truncated_normal,
    uniform,
)
from xform.random._keys import PRNGKey, bits, fold_in, key, key_data, split, wrap_key_data

__all__ = [
    "PRNGKey", "key", "key_data", "wrap_key_data", "split", "fold_in", "bits", "uniform",
    "normal", "truncated_normal", "bernoulli", "categorical", "randint", "choice",
    "permutation", "gamma", "loggamma", "beta", "dirichlet", "exponential", "laplace",
    "logistic", "multivariate_normal", "gumbel", "orthogonal",
]

"""``xform.random``: JAX's counter-based PRNG, bit for bit.

Keys come in JAX's two styles: raw ``uint32[2]`` arrays from ``PRNGKey`` (legacy, always
threefry2x32), and typed key arrays from ``key`` (dtype ``key<fry>``, ``key<rbg>``, ...,
for the ``threefry2x32``, ``threefry4x32``, ``rbg``, ``unsafe_rbg``, ``philox2x32`` and
``philox4x32`` implementations, JAX's six), with
``key_data``/``wrap_key_data`` to convert. For the same key and arguments every sampler
equals JAX's default PRNG (``jax_threefry_partitionable=True``, JAX's default): it follows
JAX's algorithm op for op. Everything is a composition of ``xform.lax`` primitives and, as
in JAX, two of its own: ``threefry2x32_p`` (the hash, lowered once per module and operand
types as a called function) and ``random_gamma_p`` (the gamma sampler, differentiable in
``a``). So it works under ``jit``, ``vmap`` (over keys too), ``grad`` and ``pmap``; typed
keys are pytrees over their data and cross those transformations as arrays do.

Example:
  >>> key = xform.random.key(0)
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
    random_gamma_p,
    truncated_normal,
    uniform,
)
from xform.random._keys import (
    KeyArray,
    PRNGKey,
    bits,
    clone,
    fold_in,
    key,
    key_data,
    key_dtype,
    key_impl,
    split,
    wrap_key_data,
)
from xform.random._samplers import (
    ball,
    binomial,
    cauchy,
    chisquare,
    double_sided_maxwell,
    f,
    generalized_normal,
    geometric,
    lognormal,
    maxwell,
    multinomial,
    pareto,
    poisson,
    rademacher,
    rayleigh,
    t,
    triangular,
    wald,
    weibull_min,
)

__all__ = [
    "PRNGKey",
    "key",
    "key_data",
    "wrap_key_data",
    "key_impl",
    "key_dtype",
    "clone",
    "split",
    "fold_in",
    "bits",
    "uniform",
    "normal",
    "truncated_normal",
    "bernoulli",
    "categorical",
    "randint",
    "choice",
    "permutation",
    "gamma",
    "loggamma",
    "beta",
    "dirichlet",
    "exponential",
    "laplace",
    "logistic",
    "multivariate_normal",
    "gumbel",
    "orthogonal",
    "ball",
    "binomial",
    "cauchy",
    "chisquare",
    "double_sided_maxwell",
    "f",
    "generalized_normal",
    "geometric",
    "lognormal",
    "maxwell",
    "multinomial",
    "pareto",
    "poisson",
    "rademacher",
    "rayleigh",
    "t",
    "triangular",
    "wald",
    "weibull_min",
    "KeyArray",
    "random_gamma_p",
]

"""jaxpr -> StableHLO lowering and the XLA runtime. Importing this registers every rule."""

import jax  # noqa: F401, I001  (before jaxlib: importing JAX first quiets XLA's C++ logging)

from lowering import (  # noqa: F401  (each module registers its family's lowering rules)
    autodiff,
    call,
    callback,
    collectives,
    compiler,
    cond,
    contractions,
    custom_batching,
    eigen,
    elementwise,
    fft,
    indexing,
    linalg,
    loops,
    pmap,
    qr,
    reductions,
    remat,
    rng,
    solves,
    sorting,
    special,
    structural,
    svd,
    threefry,
    windowed,
)

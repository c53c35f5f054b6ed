"""xform's public extension API, modelled on ``jax.extend``.

Define new primitives with every rule (``core.Primitive``, ``ad``, ``batching``, ``mlir``),
and read, walk and evaluate jaxprs (``core.Jaxpr``, ``core.eval_jaxpr``, ...). The registrars
here are the ones xform's own primitives use: a user's primitive is not a second-class one.

Beyond ``jax.extend``: ``ad`` and ``batching`` stand for ``jax.interpreters.ad`` and
``jax.interpreters.batching``, and ``mlir.register_lowering``/``mlir.lower_fun`` for those of
``jax.interpreters.mlir``, which JAX's tutorials import from its internals.
"""

from xform.extend import (  # noqa: F401
    ad,
    backend,
    batching,
    core,
    linear_util,
    lowering,
    mlir,
    random,
    source_info_util,
)

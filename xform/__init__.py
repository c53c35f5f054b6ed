"""xform: a hackable JAX-style transformation engine.

``import xform as jax; import xform.numpy as jnp`` runs JAX programs wherever xform has the
feature.
"""

import lowering  # noqa: F401  (registers the lowering rules)
from xform import (  # noqa: F401
    config,
    dispatch,
    errors,
    example_libraries,
    image,
    lax,
    nn,
    numpy,
    ops,
    random,
    scipy,
    spmd,
    tree_util,
)
from xform.api import (  # noqa: F401
    ShapeDtypeStruct,
    block_until_ready,
    default_backend,
    device_count,
    device_put,
    device_put_replicated,
    device_put_sharded,
    devices,
    eval_shape,
    jit,
    local_device_count,
    local_devices,
    make_jaxpr,
    process_count,
    process_index,
)
from xform.api_autodiff import (  # noqa: F401
    grad,
    jvp,
    linear_transpose,
    linearize,
    value_and_grad,
    vjp,
)
from xform.api_batching import vmap  # noqa: F401
from xform.api_jacobian import hessian, jacfwd, jacobian, jacrev  # noqa: F401
from xform.api_pmap import pmap  # noqa: F401
from xform.api_remat import checkpoint, checkpoint_policies, remat  # noqa: F401
from xform.array import Array, ShardedArray  # noqa: F401
from xform.config import enable_x64_scope as enable_x64  # noqa: F401
from xform.custom_derivatives import custom_jvp, custom_vjp  # noqa: F401

__version__ = "0.1.0"

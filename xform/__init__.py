"""xform: a hackable JAX-style transformation engine.

``import xform as jax; import xform.numpy as jnp`` runs JAX programs wherever xform has the
feature.
"""

import lowering  # noqa: F401  (registers the lowering rules)
from xform import (  # noqa: F401
    config,
    errors,
    example_libraries,
    image,
    lax,
    nn,
    numpy,
    ops,
    random,
    scipy,
    tree_util,
)
from xform.api.autodiff import (  # noqa: F401
    grad,
    jvp,
    linear_transpose,
    linearize,
    value_and_grad,
    vjp,
)
from xform.api.batching import vmap  # noqa: F401
from xform.api.jacobian import hessian, jacfwd, jacobian, jacrev  # noqa: F401
from xform.api.jit import (  # noqa: F401
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
from xform.api.pmap import pmap  # noqa: F401
from xform.api.remat import checkpoint, checkpoint_policies, remat  # noqa: F401
from xform.config import enable_x64_scope as enable_x64  # noqa: F401
from xform.custom_derivatives import custom_jvp, custom_vjp  # noqa: F401
from xform.runtime import dispatch  # noqa: F401
from xform.runtime import pmap as spmd  # noqa: F401
from xform.runtime.array import Array, ShardedArray  # noqa: F401

__version__ = "0.1.0"

# --- [tree+top-level] names (helper A owns this block) ---
from xform import flatten_util, tree, typing, version  # noqa: E402, F401, I001
from xform.api.jit import clear_caches  # noqa: E402, F401
from xform.api.host import (  # noqa: E402, F401
    Device,
    device_get,
    host_count,
    host_id,
    host_ids,
    live_arrays,
    named_call,
    named_scope,
    print_environment_info,
    process_indices,
    typeof,
)
from xform.dtypes import float0  # noqa: E402, F401
# --- end [tree+top-level] ---

# --- [callbacks] names (helper B owns this block) ---
from xform import debug, experimental  # noqa: E402, F401
from xform.primitives.callback import pure_callback  # noqa: E402, F401
# --- end [callbacks] ---

# --- [config] names (helper C owns this block) ---
from xform.api.jit import ensure_compile_time_eval  # noqa: E402, F401
from xform.config import (  # noqa: E402, F401
    check_tracer_leaks,
    checking_leaks,
    debug_infs,
    debug_key_reuse,
    debug_nans,
    default_device,
    default_matmul_precision,
    default_prng_impl,
    disable_jit,
    enable_checks,
    enable_custom_prng,
    explain_cache_misses,
    log_compiles,
    numpy_dtype_promotion,
    numpy_rank_promotion,
    threefry_partitionable,
    transfer_guard,
    transfer_guard_device_to_device,
    transfer_guard_device_to_host,
    transfer_guard_host_to_device,
)
from xform.config import (  # noqa: E402, F401
    allow_f16_reductions,
    array_garbage_collection_guard,
    auto_pcast,
    jax2tf_associative_scan_reductions,
    legacy_prng_key,
    no_execution,
    no_tracing,
    remove_size_one_mesh_axis_from_type,
    softmax_custom_jvp,
    thread_guard,
)
from xform import distributed, dlpack, monitoring, profiler  # noqa: E402, F401, I001
from xform.api.autodiff import fwd_and_bwd  # noqa: E402, F401
from xform.api.host import copy_to_host_async, effects_barrier  # noqa: E402, F401
# --- end [config] ---

# --- [remat+ad] names (helper D owns this block) ---
from xform import ad_checkpoint, custom_derivatives  # noqa: F401, E402
from xform.custom_derivatives import closure_convert, custom_gradient  # noqa: F401, E402
# --- end [remat+ad] ---

# --- [extend] names (helper E owns this block) ---
from xform import extend  # noqa: F401, E402  (jax.extend's counterpart: needs the API above)
# --- end [extend] ---

# --- [export] names (helper G owns this block) ---
from xform import export  # noqa: F401, E402  (jax.export's counterpart: needs the API above)
# --- end [export] ---

# --- [sharding] names (helper I owns this block) ---
from xform import sharding  # noqa: F401, E402
from xform.api.sharding import (  # noqa: F401, E402
    make_array_from_callback,
    make_array_from_process_local_data,
    make_array_from_single_device_arrays,
)
from xform.sharding import NamedSharding, PartitionSpec as P, reshard, set_mesh  # noqa: F401, E402
from lowering.sharding import make_mesh  # noqa: F401, E402
from xform.api.shard_map import shard_map  # noqa: F401, E402
# --- end [sharding] ---

"""xform: a hackable JAX-style transformation engine.

``import xform as jax; import xform.numpy as jnp`` runs JAX programs wherever xform has the
feature.

This package's top level only hands names on, and lazily: ``import xform`` loads nothing
but this file, and each name loads its module the first time it is read (``xform.jit``
loads the jit machinery, the runtime and the lowering rules; ``xform.scipy`` loads SciPy's
counterpart). So a program pays for what it uses, and ``import xform.core`` (the IR) loads
neither jaxlib nor the lowering. ARCHITECTURE.md has the layers.
"""

import importlib
import importlib.util

__version__ = "0.1.0"

# module -> the names of it that ``xform`` hands on (a pair: the name here, the name there)
_EXPORTS = {
    "lowering.sharding": ("make_mesh",),
    "xform.api.autodiff": (
        "fwd_and_bwd",
        "grad",
        "jvp",
        "linear_transpose",
        "linearize",
        "value_and_grad",
        "vjp",
    ),
    "xform.api.batching": ("vmap",),
    "xform.api.host": (
        "Device",
        "copy_to_host_async",
        "device_get",
        "effects_barrier",
        "host_count",
        "host_id",
        "host_ids",
        "live_arrays",
        "named_call",
        "named_scope",
        "print_environment_info",
        "process_indices",
        "typeof",
    ),
    "xform.api.jacobian": (
        "hessian",
        "jacfwd",
        "jacobian",
        "jacrev",
    ),
    "xform.api.jit": (
        "ShapeDtypeStruct",
        "block_until_ready",
        "clear_caches",
        "default_backend",
        "device_count",
        "device_put",
        "device_put_replicated",
        "device_put_sharded",
        "devices",
        "ensure_compile_time_eval",
        "eval_shape",
        "jit",
        "local_device_count",
        "local_devices",
        "make_jaxpr",
        "process_count",
        "process_index",
    ),
    "xform.api.pmap": ("pmap",),
    "xform.api.remat": (
        "checkpoint",
        "checkpoint_policies",
        "remat",
    ),
    "xform.api.shard_map": ("shard_map", "smap"),
    "xform.api.user_context": ("make_user_context",),
    "xform.api.sharding": (
        "make_array_from_callback",
        "make_array_from_process_local_data",
        "make_array_from_single_device_arrays",
    ),
    "xform.config": (
        "allow_f16_reductions",
        "array_garbage_collection_guard",
        "auto_pcast",
        "check_tracer_leaks",
        "checking_leaks",
        "debug_infs",
        "debug_key_reuse",
        "debug_nans",
        "default_device",
        "default_matmul_precision",
        "default_prng_impl",
        "disable_jit",
        "enable_checks",
        "enable_custom_prng",
        "explain_cache_misses",
        "jax2tf_associative_scan_reductions",
        "legacy_prng_key",
        "log_compiles",
        "no_execution",
        "no_tracing",
        "numpy_dtype_promotion",
        "numpy_rank_promotion",
        "remove_size_one_mesh_axis_from_type",
        "softmax_custom_jvp",
        "thread_guard",
        "threefry_partitionable",
        "transfer_guard",
        "transfer_guard_device_to_device",
        "transfer_guard_device_to_host",
        "transfer_guard_host_to_device",
        ("enable_x64", "enable_x64_scope"),
    ),
    "xform.custom_derivatives": (
        "closure_convert",
        "custom_gradient",
        "custom_jvp",
        "custom_vjp",
    ),
    "xform.dtypes": ("float0",),
    "xform.primitives.callback": ("pure_callback",),
    "xform.ref": (
        "Ref",
        "empty_ref",
        "free_ref",
        "freeze",
        "new_ref",
    ),
    "xform.runtime.array": (
        "Array",
        "ShardedArray",
    ),
    "xform.sharding": (
        "NamedSharding",
        "reshard",
        "set_mesh",
        ("P", "PartitionSpec"),
    ),
}

_WHERE = {
    (item if isinstance(item, str) else item[0]): (
        module,
        item if isinstance(item, str) else item[1],
    )
    for module, items in _EXPORTS.items()
    for item in items
}


# The modules below the libraries (the engine's layers: ARCHITECTURE.md). Reading one of
# them loads nothing more: they are what the rest is built from.
_ENGINE = {
    "core", "jaxpr_printer", "dtypes", "config", "errors", "version", "pytree", "meshes",
    "interpret", "primitives", "runtime", "api", "custom_derivatives", "ad_checkpoint",
}  # fmt: skip


def __getattr__(name):
    if name not in _ENGINE and not name.startswith("_"):
        # An array's operators (``x + 1``, ``x[i]``, ``x.sum()``) are jax.numpy's functions,
        # which xform.numpy sets on the array and tracer classes, as JAX's does: every name
        # a program reads here brings them (a jitted lambda adds 1 to a tracer).
        importlib.import_module("xform.numpy")
    where = _WHERE.get(name)
    if where is not None:
        value = getattr(importlib.import_module(where[0]), where[1])
    elif not name.startswith("_") and importlib.util.find_spec(f"{__name__}.{name}"):
        value = importlib.import_module(f"{__name__}.{name}")  # a submodule: xform.numpy
    else:
        raise AttributeError(f"module 'xform' has no attribute '{name}'")
    globals()[name] = value
    return value


def __dir__():
    return sorted({*globals(), *_WHERE, *_SUBMODULES})


# The public submodules, listed for dir() (any submodule loads when read, these included).
_SUBMODULES = [
    "ad_checkpoint",
    "config",
    "custom_batching",
    "custom_derivatives",
    "debug",
    "distributed",
    "dlpack",
    "errors",
    "example_libraries",
    "experimental",
    "export",
    "extend",
    "flatten_util",
    "image",
    "lax",
    "monitoring",
    "nn",
    "numpy",
    "ops",
    "profiler",
    "random",
    "ref",
    "scipy",
    "sharding",
    "tree",
    "tree_util",
    "typing",
    "version",
]

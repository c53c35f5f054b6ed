"""The public transformations: ``jit``, ``make_jaxpr``, ``eval_shape``, devices and transfer.

``jit`` checks its options and hands the function to the runtime: the jitted function's call,
its cache and its programs are xform/runtime/jit.py and jit_cache.py. Pytrees are handled at
the edge; everything below works on flat lists.
"""

import contextlib
import functools
import time

import numpy as np

from lowering import runtime
from xform import config, core, dtypes, pytree
from xform.api import sharding as api_sharding
from xform.core import ShapedArray
from xform.interpret.staging import trace_to_jaxpr
from xform.runtime import dispatch
from xform.runtime.array import ShardedArray
from xform.runtime.jit import (
    JitFunction,
    arg_avals,
    flatten_fun,
    fun_name,
    jit_state,
    normalize_statics,
    split_statics,
)
from xform.runtime.jit_cache import clear_caches
from xform.runtime.stages import ShapeDtypeStruct, abstractify, shape_struct
from xform.traceback_util import api_boundary

__all__ = [
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
]


def jit(
    fun=None,
    *,
    in_shardings=None,
    out_shardings=None,
    static_argnums=None,
    static_argnames=None,
    donate_argnums=None,
    donate_argnames=None,
    device=None,
    backend=None,
    inline=False,
    keep_unused=False,
):
    """Compile ``fun`` with XLA: traced once per signature, cached, run as one program.

    As in JAX, the cache belongs to ``fun`` (held weakly), not to the wrapper: a fresh
    ``jit(fun)`` reuses the traces and programs of earlier ones.

    Args:
      fun: the function; pytrees of arrays in and out.
      static_argnums, static_argnames: arguments that are Python values baked into the
        trace (hashable; a new value retraces).
      donate_argnums, donate_argnames: arguments whose buffers the program may reuse for an
        output of the same shape and dtype; a donated array is deleted by the call.
      device: the device to run on (default: the first device of the default backend).
      in_shardings, out_shardings: shardings (or pytree prefixes of the positional arguments
        and of the result) that make the call one program partitioned over their mesh;
        arrays already spread over devices are partitioned by their own shardings.

    Returns:
      The jitted function, which also has ``.lower(*args)``.

    Example:
      >>> f = xform.jit(lambda x: xform.numpy.sin(x) * 2.0)
      >>> f(xform.numpy.ones(3))
    """
    if fun is None:
        return functools.partial(
            jit,
            in_shardings=in_shardings,
            out_shardings=out_shardings,
            static_argnums=static_argnums,
            static_argnames=static_argnames,
            donate_argnums=donate_argnums,
            donate_argnames=donate_argnames,
            device=device,
            backend=backend,
            inline=inline,
            keep_unused=keep_unused,
        )
    if not callable(fun):
        raise TypeError(f"jit: expected a callable, got {type(fun).__name__}")
    # inline changes neither the trace nor the program here.
    return JitFunction(
        fun,
        *jit_state(
            fun,
            (
                static_argnums,
                static_argnames,
                donate_argnums,
                donate_argnames,
                device,
                backend,
                in_shardings,
                out_shardings,
                keep_unused,
            ),
        ),
    )


# --------------------------------------------------------------------------- make_jaxpr & co


def make_jaxpr(fun, static_argnums=(), axis_env=None, return_shape=False):
    """A function returning the closed jaxpr ``fun`` traces to for the given arguments.

    Example:
      >>> print(xform.make_jaxpr(lambda x: xform.numpy.sin(x) * 2.0)(1.0))
      { lambda ; a:f32[]. let b:f32[] = sin a; c:f32[] = mul b 2.0:f32[] in (c,) }
    """
    nums, _ = normalize_statics(fun, static_argnums, None)

    @functools.wraps(fun)
    @api_boundary
    def make(*args, **kwargs):
        dyn_args, dyn_kwargs, statics = split_statics(fun, args, kwargs, nums, frozenset())
        leaves, in_tree = pytree.tree_flatten((dyn_args, dyn_kwargs))
        avals = arg_avals(leaves, in_tree, fun, abstractify)
        store = {}
        flat = flatten_fun(fun, in_tree, store, statics)
        with contextlib.ExitStack() as scope:
            for name, size in axis_env or ():  # named axes for collectives, as pmap would bind
                scope.enter_context(core.extend_axis_env(name, size))
            closed = trace_to_jaxpr(flat, avals, f"tracing `{fun_name(fun)}` for make_jaxpr")
        if return_shape:
            shapes = [shape_struct(a) for a in closed.out_avals]
            return closed, pytree.tree_unflatten(store["out_tree"], shapes)
        return closed

    return make


@api_boundary
def eval_shape(fun, *args, **kwargs):
    """The shapes and dtypes ``fun`` would return, computed without running it."""
    leaves, in_tree = pytree.tree_flatten((args, kwargs))
    avals = arg_avals(leaves, in_tree, fun, abstractify)
    store = {}
    closed = trace_to_jaxpr(
        flatten_fun(fun, in_tree, store), avals, f"tracing `{fun_name(fun)}` for eval_shape"
    )
    return pytree.tree_unflatten(store["out_tree"], [shape_struct(a) for a in closed.out_avals])


# --------------------------------------------------------------------------- devices


def devices(backend=None):
    """The devices of ``backend`` (default: GPU or TPU if JAX sees one, else CPU)."""
    return list(runtime.devices(backend))


def local_devices(process_index=None, backend=None):
    """The devices driven by this process (or by ``process_index``): all of them unless
    several processes were started with ``jax.distributed.initialize``."""
    me = runtime.process_index() if process_index is None else process_index
    return [d for d in runtime.devices(backend) if d.process_index == me]


def device_count(backend=None):
    return len(runtime.devices(backend))


def local_device_count(backend=None):
    return len(local_devices(backend=backend))


def process_index(backend=None):
    """This process's index among those started with ``jax.distributed.initialize`` (0)."""
    return runtime.process_index()


def process_count(backend=None):
    """How many processes share the devices (1 unless ``jax.distributed`` started several)."""
    return runtime.process_count()


def default_backend():
    return runtime.platform()


def device_put(x, device=None):
    """Copy a pytree of arrays to ``device`` (default device if None), or lay them out over
    several devices as a ``Sharding`` (or a pytree prefix of shardings) says; arrays already
    on the mesh's devices move device to device (xform/api/sharding.py)."""
    return api_sharding.device_put(x, device)


def device_put_sharded(shards, devices):
    """Stack a list of pytrees (one per device) along a new leading axis, entry ``i`` on
    ``devices[i]``: the layout ``pmap`` reads without copying. Returns ShardedArrays."""
    if len(shards) != len(devices):
        raise ValueError(
            f"device_put_sharded: got {len(shards)} shards for {len(devices)} "
            "devices; pass one shard per device"
        )
    return pytree.tree_map(
        lambda *xs: _put_stacked(np.stack([_host(x) for x in xs]), devices), *shards
    )


def device_put_replicated(x, devices):
    """A copy of pytree ``x`` on each of ``devices``, stacked along a new leading axis (as
    ``pmap`` reads replicated parameters). Returns ShardedArrays."""
    return pytree.tree_map(
        lambda leaf: _put_stacked(
            np.broadcast_to(_host(leaf)[None], (len(devices),) + np.shape(leaf)), devices
        ),
        x,
    )


def _host(x):
    aval = core.get_aval(x)
    return dispatch.host_value(x, aval)


def _put_stacked(stacked, devices):
    sharding = runtime.mapped_sharding(tuple(devices), "_pmap", len(devices), 0)
    buf = runtime.put_sharded(stacked, sharding, 0, len(devices))
    return ShardedArray(ShapedArray(stacked.shape, dtypes.canonicalize(stacked.dtype)), None, buf)


def block_until_ready(x):
    """Wait for every array in the pytree ``x``; returns ``x``."""
    for leaf in pytree.tree_leaves(x):
        if hasattr(leaf, "block_until_ready"):
            leaf.block_until_ready()
    return x


def ensure_compile_time_eval():
    """Context manager: evaluate operations right away, even inside ``jit``, as JAX's.

    Values that do not depend on traced arguments become concrete (a Python ``if`` may read
    them); operations on traced values are traced as outside the block (numpyro validates
    a distribution's traced parameters in one).
    """
    return config.scope("eager_constant_folding", True)


def timed(fn, *args):
    """(result, seconds) of one call, waiting for the result: used by the demo."""
    start = time.perf_counter()
    out = block_until_ready(fn(*args))
    return out, time.perf_counter() - start

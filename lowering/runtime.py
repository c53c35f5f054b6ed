"""The runtime under xform: PJRT devices, host<->device transfer, compile, execute.

JAX is used here only as a door to jaxlib's PJRT client (``jax.devices()``); JAX's own config
is never changed, and 64-bit values go to the device intact (``enable_x64=True`` on the
transfer, whatever JAX's flag says).
"""

import functools

import jax
import numpy as np
from jax import core as jax_core
from jaxlib import _jax

from lowering import compile_cache, mlir
from xform import config

BufferType = _jax.ArrayImpl


@functools.lru_cache(maxsize=4096)
def _jax_aval(shape, dtype):
    # JAX's own abstract value, so the buffers we make are ordinary JAX arrays.
    return jax_core.ShapedArray(shape, dtype)


_devices = None


def devices(backend=None):
    """The devices of the default backend: the first of ``jax_platforms`` (or
    ``jax_platform_name``) that starts when the flag is set, else GPU or TPU when JAX sees
    one, else CPU."""
    global _devices
    if backend is not None:
        return jax.devices(backend)
    if _devices is None:
        platforms = config.values.platforms or config.values.platform_name
        if not platforms:
            _devices = jax.devices()
        else:
            errors = []
            for platform in platforms.split(","):
                try:
                    _devices = jax.devices(platform.strip())
                    break
                except RuntimeError as e:
                    errors.append(f"{platform.strip()}: {e}")
            else:
                raise RuntimeError(
                    f"Unable to initialize backend for jax_platforms="
                    f"{platforms!r}: {'; '.join(errors)}"
                )
    return _devices


def use_host_devices(n):
    """Give the CPU backend ``n`` devices (for pmap on one machine); only before any backend
    has started (``RuntimeError`` after, as JAX). Set by ``jax_num_cpu_devices``: a program's
    own choice, xform never calls it behind the user's back."""
    if n is not None and n >= 0:
        jax.config.update("jax_num_cpu_devices", n)


config.on_update("jax_num_cpu_devices", use_host_devices)


def default_device():
    return devices()[0]


def platform():
    return default_device().platform


_shardings = {}


def _sharding(device):
    s = _shardings.get(device)
    if s is None:
        s = _shardings[device] = jax.sharding.SingleDeviceSharding(device)
    return s


def to_device(x, device=None, copy=False):
    """Copy a NumPy array to ``device`` (the default device if None); a device buffer. On
    CPU it may share the array's memory unless ``copy``: an array's own buffer copies, since
    a jit donated a shared buffer cannot write its result there (XLA copies instead)."""
    device = device or default_device()
    if not x.flags.c_contiguous:
        x = np.ascontiguousarray(x)
    return _jax.batched_device_put(
        _jax_aval(x.shape, x.dtype), _sharding(device), [x], [device], True, copy, enable_x64=True
    )


def to_host(buf):
    """The NumPy array of a device buffer."""
    return np.asarray(buf)


def buffer_device(buf):
    return next(iter(buf.devices()))


# Each execution of a program on arguments that outlive it leaves jaxlib a few Python objects
# (about 70 bytes per call) to release once the execution is done, which jaxlib defers to its
# garbage hook. JAX runs that hook from a Python GC callback (jax/_src/lib/__init__.py), but
# a loop of cached calls allocates nothing that wakes the collector, and memory would grow
# by the call. So the hook runs after every execution: about 0.1 µs, and memory stays flat.
collect_garbage = _jax.collect_garbage


class Executable:
    """A compiled program for one device: ``call(buffers) -> buffers``. ``kept``: the
    positions of the arguments the program takes (None: all), when it was lowered without
    those it does not read."""

    __slots__ = ("loaded", "text", "device", "handlers", "kept")

    def __init__(self, loaded, text, device, out_avals):
        self.loaded = loaded
        self.text = text
        self.device = device
        self.kept = None
        # C++ result handlers turn the raw outputs into arrays without a Python loop.
        sharding = _sharding(device)
        self.handlers = [
            _jax.array_result_handler(
                _jax_aval(a.shape, a.dtype), sharding, True, _skip_checks=True
            )
            for a in out_avals
        ]

    def call(self, buffers):
        if self.kept is not None:
            buffers = [buffers[i] for i in self.kept]
        outs = self.loaded.execute_sharded(buffers).consume_with_handlers(self.handlers)
        collect_garbage()
        return outs


def compile_options(xla_options=()):
    """jaxlib's CompileOptions, with XLA debug options (``(name, value)`` pairs) set."""
    options = _jax.CompileOptions()
    if xla_options:
        options.env_option_overrides = list(xla_options)
    return options


def _compile(client, module, text, devices, options, min_cache_secs=0.0):
    """XLA's executable for ``module`` (its MLIR ``text``), through the persistent cache. A
    module that calls host callbacks (lowering/callback.py) is never cached and goes in as the
    module itself, with the Python functions its custom calls name: jaxlib takes
    ``host_callbacks`` only with a module object."""
    callbacks = mlir.host_callbacks.get(module)
    if callbacks is None:
        return compile_cache.compile_and_load(
            client,
            text,
            devices,
            options,
            min_compile_secs=min_cache_secs,
            key_text=lambda: mlir.module_text(module),
        )
    with mlir._lock, mlir.context():  # the module is read in the shared MLIR context
        return client.compile_and_load(
            module, _jax.DeviceList(tuple(devices)), options, host_callbacks=callbacks
        )


def compile_module(
    module, out_avals, device=None, min_cache_secs=0.0, xla_options=(), num_inputs=0
):
    """Compile a verified StableHLO module of ``num_inputs`` arguments for one device;
    ``out_avals`` type its results. The persistent cache keeps it if compiling took
    ``min_cache_secs`` or more."""
    text = mlir.module_text(module, debug_info=True)  # locations: XLA's op metadata
    options = compile_options(xla_options)
    # As JAX sets them for a program whose arguments and results have no sharding given
    # (on one device they change nothing but the compiled module's header).
    build = options.executable_build_options
    build.allow_spmd_sharding_propagation_to_parameters = [True] * num_inputs
    build.allow_spmd_sharding_propagation_to_output = [True] * max(len(out_avals), 1)
    if device is not None:  # pinned there (XLA's default assignment is the first device)
        options.device_assignment = _jax.DeviceAssignment.create(np.array([[device.id]]))
    device = device or default_device()
    loaded = _compile(device.client, module, text, (device,), options, min_cache_secs)
    return Executable(loaded, text, device, out_avals)


# --------------------------------------------------------------------------- SPMD programs


def process_count():
    return jax.process_count()


def process_index():
    return jax.process_index()


def _mesh(devices, axis_name, size):
    """A mesh of ``devices`` with the pmap axis first; a second axis holds the replicas of
    nested pmaps (each device along it has the same slice of the outer axis)."""
    grid = np.array(devices, dtype=object).reshape(size, len(devices) // size)
    if grid.shape[1] == 1:
        return jax.sharding.Mesh(grid.reshape(size), (axis_name,))
    return jax.sharding.Mesh(grid, (axis_name, "_replicas"))


@functools.lru_cache(maxsize=1024)
def mapped_sharding(devices, axis_name, size, axis):
    """The sharding of an array split along ``axis`` over the pmap axis of ``devices``
    (``axis`` None: the array whole on every device)."""
    mesh = _mesh(devices, axis_name, size)
    if axis is None:
        return jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec())
    return jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec(*[None] * axis, axis_name))


def put_sharded(x, sharding, axis, size):
    """A NumPy array as an array with ``sharding`` (over this process's devices): slice ``i``
    along ``axis`` (kept, of size 1) on the devices at index ``i`` of the pmap axis; ``x``
    whole on every device if ``axis`` is None."""
    devices = list(sharding.mesh.devices.flat)
    if axis is None:
        pieces = [x] * len(devices)
        shape = x.shape
    else:
        per_slice = len(devices) // size
        index = [slice(None)] * x.ndim
        pieces = []
        for k in range(len(devices)):
            index[axis] = slice(k // per_slice, k // per_slice + 1)
            pieces.append(np.ascontiguousarray(x[tuple(index)]))
        shape = x.shape[:axis] + (size,) + x.shape[axis + 1 :]
    return _jax.batched_device_put(
        _jax_aval(shape, x.dtype), sharding, pieces, devices, True, False, enable_x64=True
    )


def put_with_sharding(x, sharding):
    """A NumPy array as a global array laid out as ``sharding`` (a JAX Sharding)."""
    indices = sharding.addressable_devices_indices_map(x.shape)
    devices = list(indices)
    # (not ascontiguousarray: it makes a 0-d shard 1-d)
    pieces = [np.asarray(x[indices[d]], order="C") for d in devices]
    return _jax.batched_device_put(
        _jax_aval(x.shape, x.dtype), sharding, pieces, devices, True, False, enable_x64=True
    )


def is_sharding(x):
    return isinstance(x, jax.sharding.Sharding)


def is_device(x):
    return isinstance(x, jax.Device)


def local_devices_of(devices):
    """The devices of ``devices`` this process drives (all of them, unless it is one of
    several processes started with ``jax.distributed.initialize``)."""
    me = jax.process_index()
    return tuple(d for d in devices if d.process_index == me)


class SpmdExecutable:
    """A program run by one replica per device of ``devices``: ``call(arrays) -> arrays``,
    global arrays in (one shard per device) and out (shaped and sharded as ``outs`` say:
    ``(aval, sharding)`` pairs)."""

    __slots__ = ("loaded", "text", "devices", "handlers", "one_at_a_time")

    def __init__(self, loaded, text, devices, outs):
        self.loaded = loaded
        self.text = text
        self.devices = devices
        self.one_at_a_time = devices[0].platform == "cpu"  # see call
        self.handlers = [
            _jax.array_result_handler(_jax_aval(a.shape, a.dtype), s, True, _skip_checks=True)
            for a, s in outs
        ]

    def call(self, arrays):
        global _in_flight
        previous, _in_flight = _in_flight, None
        if previous is not None and self.one_at_a_time:
            # XLA's CPU collectives can deadlock (every device thread waiting at a rendezvous
            # some replica never reaches, then the process is aborted) when the next replicated
            # program is queued while the last one still runs: seen here with jax.pmap too, on
            # 8 host devices over 2 cores. One replicated program at a time on CPU avoids it.
            _wait_for(previous)
        outs = self.loaded.execute_sharded(arrays).consume_with_handlers(self.handlers)
        _in_flight = outs
        collect_garbage()
        return outs


_in_flight = None  # the results of the last replicated program, while it may still run


def _wait_for(outs):
    """Wait until a replicated program's results are computed. Its error (a host callback
    raised) is its own caller's, raised from those results; this program must not take it up,
    or every later replicated program would fail with it."""
    for out in outs:
        try:
            if not out.is_deleted():
                out.block_until_ready()
        except Exception:  # noqa: BLE001, S110 (see the docstring)
            pass


def compile_spmd(module, devices, outs, xla_options=()):
    """Compile a module of ``len(devices)`` replicas, replica ``r`` on ``devices[r]``."""
    text = mlir.module_text(module, debug_info=True)  # locations: XLA's op metadata
    options = compile_options(xla_options)
    options.num_replicas = len(devices)
    options.device_assignment = _jax.DeviceAssignment.create(
        np.array([d.id for d in devices]).reshape(len(devices), 1)
    )
    loaded = _compile(devices[0].client, module, text, devices, options)
    return SpmdExecutable(loaded, text, devices, outs)


class ReplicatedExecutable:
    """A jit program holding pmaps, run by one replica per device of ``spmd``: it is called
    like a one-device program; each replica gets the whole arguments, and replica 0's results
    are returned."""

    __slots__ = ("spmd", "sharding", "text")

    def __init__(self, spmd, sharding):
        self.spmd = spmd
        self.sharding = sharding  # every argument whole on every device
        self.text = spmd.text

    def call(self, buffers):
        arrays = [
            put_sharded(np.ascontiguousarray(to_host(b)), self.sharding, None, 1) for b in buffers
        ]
        return [out.addressable_shards[0].data for out in self.spmd.call(arrays)]


def compile_replicated(module, out_avals, num_replicas, xla_options=()):
    """Compile a jit module of ``num_replicas`` replicas (it holds pmaps) on the first devices."""
    devices = tuple(devices_for_replicas(num_replicas))
    sharding = mapped_sharding(devices, "_replicas", len(devices), None)
    return ReplicatedExecutable(
        compile_spmd(module, devices, [(a, sharding) for a in out_avals], xla_options), sharding
    )


def devices_for_replicas(num_replicas):
    available = devices()
    if num_replicas > len(available):
        raise ValueError(
            f"compiling a computation that requires {num_replicas} logical devices "
            f"(the pmaps in it), but only {len(available)} XLA devices are "
            "available"
        )
    return available[:num_replicas]

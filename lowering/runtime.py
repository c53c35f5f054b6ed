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

from lowering import mlir

BufferType = _jax.ArrayImpl


@functools.lru_cache(maxsize=4096)
def _jax_aval(shape, dtype):
    # JAX's own abstract value, so the buffers we make are ordinary JAX arrays.
    return jax_core.ShapedArray(shape, dtype)


_devices = None


def devices(backend=None):
    """The devices of the default backend (GPU or TPU when JAX sees one, else CPU)."""
    global _devices
    if backend is not None:
        return jax.devices(backend)
    if _devices is None:
        _devices = jax.devices()
    return _devices


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


def to_device(x, device=None):
    """Copy a NumPy array to ``device`` (the default device if None); a device buffer."""
    device = device or default_device()
    if not x.flags.c_contiguous:
        x = np.ascontiguousarray(x)
    return _jax.batched_device_put(_jax_aval(x.shape, x.dtype), _sharding(device), [x],
                                   [device], True, False, enable_x64=True)


def to_host(buf):
    """The NumPy array of a device buffer."""
    return np.asarray(buf)


def buffer_device(buf):
    return next(iter(buf.devices()))


class Executable:
    """A compiled program for one device: ``call(buffers) -> buffers``."""

    __slots__ = ("loaded", "text", "device", "handlers")

    def __init__(self, loaded, text, device, out_avals):
        self.loaded = loaded
        self.text = text
        self.device = device
        # C++ result handlers turn the raw outputs into arrays without a Python loop.
        sharding = _sharding(device)
        self.handlers = [_jax.array_result_handler(_jax_aval(a.shape, a.dtype), sharding, True,
                                                   _skip_checks=True) for a in out_avals]

    def call(self, buffers):
        return self.loaded.execute_sharded(buffers).consume_with_handlers(self.handlers)


def compile_module(module, out_avals, device=None):
    """Compile a verified StableHLO module for one device; ``out_avals`` type its results."""
    device = device or default_device()
    text = mlir.module_text(module)
    options = _jax.CompileOptions()
    loaded = device.client.compile_and_load(text, _jax.DeviceList((device,)), options)
    return Executable(loaded, text, device, out_avals)

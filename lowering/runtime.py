"""The runtime under xform: PJRT devices, host<->device transfer, compile, execute.

JAX is used here only as a door to jaxlib's PJRT client (``jax.devices()``); JAX's own config
is never changed, and 64-bit values go to the device intact (``enable_x64=True`` on the
transfer, whatever JAX's flag says).
"""

import jax
import numpy as np
from jaxlib import _jax

from lowering import mlir


BufferType = _jax.ArrayImpl


class _AvalLike:
    """What ``batched_device_put`` wants to know about the value it transfers."""

    __slots__ = ("shape", "dtype", "weak_type", "ndim")

    def __init__(self, x):
        self.shape = x.shape
        self.dtype = x.dtype
        self.weak_type = False
        self.ndim = x.ndim


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
    return _jax.batched_device_put(_AvalLike(x), _sharding(device), [x], [device], True,
                                   False, enable_x64=True)


def to_host(buf):
    """The NumPy array of a device buffer."""
    return np.asarray(buf)


def buffer_device(buf):
    return next(iter(buf.devices()))


class Executable:
    """A compiled program for one device: ``call(buffers) -> buffers``."""

    __slots__ = ("loaded", "text", "device")

    def __init__(self, loaded, text, device):
        self.loaded = loaded
        self.text = text
        self.device = device

    def call(self, buffers):
        return self.loaded.execute(buffers)


def compile_module(module, device=None):
    """Compile a verified StableHLO module for one device."""
    device = device or default_device()
    text = mlir.module_text(module)
    options = _jax.CompileOptions()
    loaded = device.client.compile_and_load(text, _jax.DeviceList((device,)), options)
    return Executable(loaded, text, device)

"""``xform.Array``: a concrete array with its abstract value.

Its data lives on the host (a read-only NumPy array, what fast eager evaluation on a CPU
produces) or on a device (a PJRT buffer, what compiled code produces), and moves to the other
side on first need, once: arrays are immutable, so both copies stay valid.
Operators and NumPy-style methods are attached by ``xform.numpy``.
"""

import _abc
import functools

import numpy as np

from lowering import runtime
from xform import core, dtypes
from xform.core import ShapedArray, Tracer, intern_aval


class _ArrayMeta(type):
    """Makes ``isinstance(x, Array)`` true for tracers too, as ``jax.Array`` is: user code
    checks for arrays without caring whether it runs under a transformation.

    Tracers are registered as virtual subclasses, and the checks are CPython's own ABC
    checks (C, with a per-type cache), bound to ``Array`` below: a Python
    ``__instancecheck__`` would cost a frame on every ``isinstance(x, (Array, ...))`` in
    xform that is not given an exact Array (those CPython answers before asking the
    metaclass). Subclasses of Array get ``_ExactArrayMeta``: plain checks.
    """

    def __new__(mcls, name, bases, namespace, **kwargs):
        if mcls is _ArrayMeta and bases:  # a subclass of Array
            mcls = _ExactArrayMeta
        return super().__new__(mcls, name, bases, namespace, **kwargs)


class _ExactArrayMeta(_ArrayMeta):
    __instancecheck__ = type.__instancecheck__
    __subclasscheck__ = type.__subclasscheck__


class Array(metaclass=_ArrayMeta):
    """A concrete, immutable array on a device (or its host mirror); ``isinstance`` also
    accepts the tracers that stand for arrays inside transformations."""

    # ``_subnormal``: the host data holds subnormal floats, which XLA's CPU reads as zero in
    # arithmetic (see ``mark_subnormals``); eager dispatch flushes such an operand first.
    __slots__ = ("aval", "_host", "_buf", "_subnormal", "__weakref__")
    __array_priority__ = 100

    def __init__(self, aval, host=None, buf=None):
        self.aval = aval
        self._host = host
        self._buf = buf
        self._subnormal = False

    # ------------------------------------------------------------------ data movement
    def _host_value(self):
        host = self._host
        if host is None:
            host = runtime.to_host(self._buf)
            if host.dtype != self.aval.dtype:
                host = host.astype(self.aval.dtype)
            host.flags.writeable = False
            self._host = host
        return host

    def _device_buffer(self, device=None):
        buf = self._buf
        if buf is None:
            buf = self._buf = runtime.to_device(self._host, device, copy=True)
        elif device is not None and runtime.buffer_device(buf) != device:
            return runtime.to_device(self._host_value(), device)
        return buf

    def __jax_array__(self):
        """This array as a JAX array: its device buffer (a jaxlib array, no copy once on the
        device), so JAX functions given an xform array compute on it."""
        return self._device_buffer()

    # ------------------------------------------------------------------ metadata
    shape = property(lambda self: self.aval.shape)
    dtype = property(lambda self: self.aval.dtype)
    ndim = property(lambda self: len(self.aval.shape))
    size = property(lambda self: self.aval.size)
    weak_type = property(lambda self: self.aval.weak_type)
    nbytes = property(lambda self: self.aval.size * self.aval.dtype.itemsize)
    itemsize = property(lambda self: self.aval.dtype.itemsize)

    def devices(self):
        """The set of devices holding this array."""
        if self._buf is not None:
            return set(self._buf.devices())
        return {runtime.default_device()}

    @property
    def device(self):
        return next(iter(self.devices()))

    def block_until_ready(self):
        """Wait until the computation producing this array has finished; returns self."""
        if self._buf is not None:
            self._buf.block_until_ready()
        return self

    def copy_to_host_async(self):
        """Start copying the data to the host; a later ``np.asarray`` finds it there."""
        if self._buf is not None and self._host is None:
            self._buf.copy_to_host_async()

    def unsafe_buffer_pointer(self):
        """The address of the device buffer's data (put on the device first if it is on the
        host only), as JAX's; raises ``RuntimeError`` once the array is deleted."""
        return self._device_buffer().unsafe_buffer_pointer()

    def is_deleted(self):
        return self._host is None and self._buf.is_deleted()

    def delete(self):
        """Free this array's memory; using it afterwards raises ``RuntimeError``."""
        if self._buf is None:
            self._buf = runtime.to_device(self._host, copy=True)
        self._host = None
        self._buf.delete()

    def _donated(self):
        # A jit call consumed the device buffer; the host mirror must go too, so that any use
        # of this array fails as JAX's does ("Array has been deleted").
        if self._buf is not None and self._buf.is_deleted():
            self._host = None

    # ------------------------------------------------------------------ sharding
    @property
    def sharding(self):
        """How the array is laid out: a ``SingleDeviceSharding`` for an array on one device,
        a ``NamedSharding`` for one spread over a mesh."""
        if self._buf is not None:
            return self._buf.sharding
        return runtime._sharding(runtime.default_device())

    @property
    def is_fully_replicated(self):
        """Does every device hold the whole array?"""
        return self._buf is None or self._buf.is_fully_replicated

    @property
    def is_fully_addressable(self):
        """Does this process hold every shard (not so for a global array of a run over
        several processes)?"""
        return self.sharding.is_fully_addressable

    @property
    def committed(self):
        """Is the array pinned to its devices (spread over a mesh by ``device_put`` or a
        partitioned ``jit``)? An array on one device follows the others in a call."""
        return False

    @property
    def addressable_shards(self):
        """The shards on this process's devices: ``Shard``s with ``.device``, ``.index``
        (slices of the global array), ``.replica_id`` and ``.data`` (an Array)."""
        if self._buf is None:
            self._device_buffer()
        return [
            Shard(s.device, s.index, s.replica_id, _shard_array(s.data, self.aval))
            for s in self._buf.addressable_shards
        ]

    @property
    def global_shards(self):
        """Every device's shard (one process: the addressable ones)."""
        return self.addressable_shards

    def addressable_data(self, index):
        """The data of addressable shard ``index``, as an Array on its device."""
        return self.addressable_shards[index].data

    # ------------------------------------------------------------------ Python protocols
    def __array__(self, dtype=None, copy=None):
        host = self._host_value()
        if copy:
            return np.array(host, dtype)
        return host if dtype is None else host.astype(dtype, copy=False)

    def __dlpack__(self, *args, **kwargs):
        return self._device_buffer().__dlpack__(*args, **kwargs)

    def __dlpack_device__(self):
        return self._device_buffer().__dlpack_device__()

    __hash__ = None

    def __bool__(self):
        if self.aval.size == 0:
            raise ValueError(
                "The truth value of an empty array is ambiguous. Use "
                "`array.size > 0` to check that an array is not empty."
            )
        if self.aval.size != 1:
            raise ValueError(
                f"The truth value of an array with {self.aval.size} elements is "
                "ambiguous. Use a.any() or a.all()"
            )
        return bool(self._host_value())

    def __int__(self):
        return int(self._scalar("int()"))

    def __float__(self):
        return float(self._scalar("float()"))

    def __complex__(self):
        return complex(self._scalar("complex()"))

    def __index__(self):
        if not dtypes.is_int(self.aval.dtype) or self.aval.ndim:
            raise TypeError(
                f"Only integer scalar arrays can be converted to a scalar index, "
                f"got {self.aval.str_short()}"
            )
        return int(self._host_value()[()])

    def _scalar(self, what):
        # As JAX (NumPy only deprecates it): size-1 arrays of rank > 0 are not scalars.
        if self.aval.ndim:
            raise TypeError(
                f"{what}: only scalar arrays can be converted to Python scalars, "
                f"got shape {self.aval.shape}; index the element first (x[0]) "
                "or use x.item()"
            )
        return self._host_value()[()]

    def item(self, *args):
        return self._host_value().item(*args)

    def tolist(self):
        return self._host_value().tolist()

    def __len__(self):
        if not self.aval.shape:
            raise TypeError("len() of unsized object")
        return self.aval.shape[0]

    def __iter__(self):
        if not self.aval.shape:
            raise TypeError("iteration over a 0-d array")
        host = self._host_value()
        aval = ShapedArray(self.aval.shape[1:], self.aval.dtype, self.aval.weak_type)
        # host[i, ...]: a 0-d array where host[i] would be a NumPy scalar, which __array__
        # must not return (np.array(x, copy=None) refuses it)
        rows = (host[i, ...] for i in range(len(host)))
        if self._subnormal:
            return (mark_subnormals(Array(aval, row)) for row in rows)
        return (Array(aval, row) for row in rows)

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    def __reduce__(self):
        return (_rebuild, (self._host_value(), self.aval.weak_type))

    def __format__(self, spec):
        if self.aval.ndim == 0:
            return format(self._host_value()[()], spec)
        return format(str(self), spec)

    def __str__(self):
        return str(self._host_value())

    def __repr__(self):
        host = self._host_value()
        prefix = "Array("
        if host.size == 0:  # as JAX: Array([], shape=(0,), dtype=float32)
            body = f"[], shape={host.shape}"
        else:
            body = np.array2string(host, separator=", ", prefix=prefix)
        weak = ", weak_type=True" if self.aval.weak_type else ""
        return f"{prefix}{body}, dtype={self.aval.dtype.name}{weak})"


# Not descriptors, so called with the instance alone: ``Array``'s checks, in C.
_abc._abc_init(Array)
_abc._abc_register(Array, Tracer)
_ArrayMeta.__instancecheck__ = functools.partial(_abc._abc_instancecheck, Array)
_ArrayMeta.__subclasscheck__ = functools.partial(_abc._abc_subclasscheck, Array)


class ShardedArray(Array):
    """An Array whose data is spread over several devices, with a ``NamedSharding``: what
    ``pmap``, a partitioned ``jit`` and ``device_put`` with a sharding leave. A following
    ``pmap`` or partitioned ``jit`` reads the shards where they are; a one-device program
    gathers them first (``np.asarray`` gives the whole array).

    It stays a subclass rather than a plain Array so that jit's fastest path, which hands an
    exact ``Array``'s buffer straight to a one-device program, never sees a sharded one."""

    __slots__ = ()

    def _device_buffer(self, device=None):
        # One device's copy of the whole array, for programs that run on a single device.
        return runtime.to_device(self._host_value(), device)

    def devices(self):
        return set(self._buf.devices())

    @property
    def committed(self):
        return True


class CommittedArray(Array):
    """An Array pinned to one device, as JAX's committed arrays: what ``device_put(x, device)``
    leaves, and what a ``jit`` computes from committed arguments. A ``jit`` call runs on the
    device of its committed arguments (and refuses arguments committed to different devices);
    a plain Array follows the others.

    A subclass, like ShardedArray, so that jit's fastest path (exact ``Array``s, the default
    device) needs no device check per argument."""

    __slots__ = ()

    @property
    def committed(self):
        return True


class Shard:
    """One device's piece of an Array (as ``jax.Shard``)."""

    __slots__ = ("device", "index", "replica_id", "data")

    def __init__(self, device, index, replica_id, data):
        self.device = device
        self.index = index
        self.replica_id = replica_id
        self.data = data

    def __repr__(self):
        return (
            f"Shard(device={self.device!r}, index={self.index}, "
            f"replica_id={self.replica_id}, data={self.data})"
        )


def _shard_array(buf, aval):
    return Array(ShapedArray(tuple(buf.shape), aval.dtype, aval.weak_type), None, buf)


def _rebuild(host, weak_type):
    return from_host(host, weak_type)


def from_host(x, weak_type=False):
    """An Array holding a private, read-only copy of NumPy-like ``x`` in its canonical dtype."""
    x = np.asarray(x)
    dtype = dtypes.canonicalize(x.dtype)
    host = np.array(x, dtype, order="C")
    host.flags.writeable = False
    return mark_subnormals(Array(intern_aval(ShapedArray(host.shape, dtype, weak_type)), host))


# XLA's CPU backend reads subnormal float operands as zero (denormals-are-zero) wherever it
# computes; NumPy does not. Arrays made from user data are checked once, when made (which
# copies the data anyway), so that eager evaluation can read them as XLA does (see
# ``xform.runtime.dispatch``). float16 is left out: XLA computes it in float32, where its subnormals
# are normal numbers; bfloat16 shares float32's range, so its limit is float32's.
TINY = {np.dtype(d): np.finfo(d).tiny for d in ("float32", "float64", "complex64", "complex128")}
TINY[np.dtype(dtypes.bfloat16)] = np.float32(np.finfo(np.float32).tiny)


def has_subnormals(host):
    """Does NumPy array ``host`` hold a float that XLA's CPU reads as zero (a subnormal)?"""
    tiny = TINY.get(host.dtype)
    if tiny is None:
        return False
    if host.dtype.kind == "c":
        return has_subnormals(host.real) or has_subnormals(host.imag)
    if host.ndim == 0:  # a scalar: a Python comparison, far cheaper than NumPy's
        return 0 < abs(float(host)) < tiny
    mags = np.abs(host)
    small = mags < tiny  # zeros too; usually none, and then no second look
    return bool(small.any() and (mags[small] > 0).any())


def mark_subnormals(array):
    """``array`` (an Array on the host), marked when its data holds subnormal floats."""
    array._subnormal = has_subnormals(array._host)
    return array


def from_buffer(buf, aval):
    return Array(aval, None, buf)


def share_jax_array(x):
    """An Array on the buffer of JAX array ``x``, without a copy; None if ``x`` is not a JAX
    array or has a dtype xform does not keep as it is (float64 without x64)."""
    if type(x) is not runtime.BufferType or x.dtype != dtypes.canonicalize(x.dtype):
        return None
    return Array(ShapedArray(x.shape, x.dtype, False), None, x)


def _buffer_aval(buf):
    return ShapedArray(buf.shape, dtypes.canonicalize(buf.dtype), bool(buf.weak_type))


core.pytype_aval_mappings[Array] = core.pytype_aval_mappings[
    ShardedArray
] = core.pytype_aval_mappings[CommittedArray] = lambda x: x.aval
core.pytype_aval_mappings[runtime.BufferType] = _buffer_aval

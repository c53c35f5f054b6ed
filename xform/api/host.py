"""The everyday top-level names around the transformations: host transfer, types of values,
name scopes, live arrays, the environment and the process/host queries.

None of these transform anything; each mirrors the JAX name of the same spelling.
"""

import contextlib
import functools
import gc
import importlib.metadata
import os
import platform
import sys
import warnings

import jax
import numpy as np
from jax import Device  # noqa: F401  (the runtime's device class: xform's devices are these)

from lowering import runtime
from xform import core, dtypes, version
from xform.core import Tracer
from xform.pytree import tree_leaves, tree_map
from xform.runtime.array import Array


def device_get(x):
    """Copy the arrays of pytree ``x`` to the host as NumPy arrays.

    Leaves with an ``__array__`` method (Arrays) become ``np.ndarray``; other leaves (Python
    scalars, strings, ``None``) and tracers are returned as they are, as JAX does.

    Example:
      >>> xform.device_get({"w": xform.numpy.ones(2), "step": 3})
      {'step': 3, 'w': array([1., 1.], dtype=float32)}
    """
    for leaf in tree_leaves(x):  # start every transfer before waiting for any
        if type(leaf) is Array and leaf._buf is not None:
            leaf._buf.copy_to_host_async()
    return tree_map(_device_get, x)


def _device_get(x):
    if isinstance(x, Tracer):
        return x
    to_array = getattr(x, "__array__", None)
    return x if to_array is None else to_array()


def typeof(x):
    """The abstract value (``ShapedArray``: shape, dtype, weak type) of an array, tracer,
    NumPy value or Python scalar, as ``jax.typeof``; ``TypeError`` for anything else.

    Example:
      >>> xform.typeof(1.0)
      ShapedArray(f32[], weak_type=True)
    """
    dtype = getattr(x, "dtype", None)
    if (
        dtype is not None
        and not isinstance(dtype, np.dtype)
        and dtypes.issubdtype(dtype, dtypes.extended)
    ):  # a typed key array
        return core.ShapedArray(tuple(x.shape), dtype)
    try:
        return core.get_aval(x)
    except TypeError:
        raise TypeError(
            f"typeof: argument {x!r} of type {type(x)} is not a valid xform "
            "type (an array, a NumPy value or a Python scalar)"
        ) from None


# --------------------------------------------------------------------------- name scopes
# As JAX's, the names enter the name stack of the equations traced inside them
# (``core.trace_state.name_stack``, recorded with each equation's source) and so the lowered
# module's locations and XLA's op metadata (``op_name="jit(f)/layer1/sin"``).


@contextlib.contextmanager
def _name_scope(name):
    state = core.trace_state
    outer = state.name_stack
    state.name_stack = f"{outer}/{name}" if outer else name
    try:
        yield
    finally:
        state.name_stack = outer


def named_scope(name):
    """A context manager (also a decorator) naming the operations traced inside it: the
    names reach the compiled program's op metadata and locations, as JAX's.

    Example:
      >>> with xform.named_scope("layer1"):
      ...     y = x * 2
    """
    if not isinstance(name, str):
        raise TypeError(
            f"named_scope name argument must be a string, got {name!r} of type "
            f"{type(name).__name__}."
        )
    return _name_scope(name)


def named_call(fun, *, name=None):
    """``fun`` run inside ``named_scope(name)`` (default: ``fun.__name__``).

    The result computes exactly what ``fun`` does, under any transformation.
    """
    if not callable(fun):
        raise TypeError(f"named_call: expected a callable, got {type(fun).__name__}")
    if name is None:
        name = getattr(fun, "__name__", type(fun).__name__)
    named_scope(name)  # (checks the name)

    @functools.wraps(fun)
    def named(*args, **kwargs):
        with _name_scope(name):  # (a fresh one per call: a generator's runs once)
            return fun(*args, **kwargs)

    return named


# --------------------------------------------------------------------------- live arrays


def live_arrays(platform=None):
    """The Arrays alive in this process (not deleted) on ``platform``'s devices (default: the
    default backend), as ``jax.live_arrays``. An array still held only on the host counts as
    on the default device. Found by walking the garbage collector's objects: a debugging aid,
    not a fast call."""
    target = runtime.platform() if platform is None else platform
    found = []
    for obj in gc.get_objects():
        if (
            isinstance(obj, Array)
            and not isinstance(obj, Tracer)
            and not obj.is_deleted()
            and any(d.platform == target for d in obj.devices())
        ):
            found.append(obj)
    return found


def effects_barrier():
    """Wait until every computation launched so far, and the host callbacks inside it, has
    finished: as ``jax.effects_barrier`` (xform's programs run their callbacks in order of
    execution, so waiting for the live arrays is enough)."""
    for array in live_arrays():
        array.block_until_ready()


def copy_to_host_async(x):
    """Start copying every array leaf of ``x`` to the host without waiting (as JAX's); ``x``
    is returned, so the call can wrap an expression."""
    for leaf in tree_leaves(x):
        start = getattr(leaf, "copy_to_host_async", None)
        if start is not None:
            start()
    return x


# --------------------------------------------------------------------------- environment


def print_environment_info(return_string=False):
    """Versions of xform, JAX/jaxlib, NumPy and Python, the devices and the ``JAX_*``/
    ``XLA_*`` environment variables: to paste into a bug report.

    Args:
      return_string: return the text instead of printing it.
    """
    devices = runtime.devices()
    lines = [
        f"xform:  {version.__version__}",
        f"jax:    {jax.__version__}",
        f"jaxlib: {importlib.metadata.version('jaxlib')}",
        f"numpy:  {np.__version__}",
        f"python: {sys.version.replace(chr(10), ' ')}",
        f"device info: {devices[0].device_kind}-{len(devices)}, "
        f"{len(runtime.local_devices_of(devices))} local devices",
        f"process_count: {runtime.process_count()}",
        f"platform: {platform.uname()}",
    ]
    lines += [f"{k}={v}" for k, v in os.environ.items() if k.startswith(("JAX_", "XLA_"))]
    info = "\n".join(lines)
    if return_string:
        return info
    print(info)
    return None


# --------------------------------------------------------------------------- hosts/processes


def process_indices(backend=None):
    """The indices of all processes sharing the devices: ``[0]`` in one process."""
    return sorted({d.process_index for d in runtime.devices(backend)})


def _renamed(old, new):
    warnings.warn(
        f"xform.{old} has been renamed to xform.{new}, as in JAX; this alias will "
        "eventually be removed, please update your code.",
        UserWarning,
        stacklevel=3,
    )


def host_count(backend=None):
    """Deprecated alias of ``process_count`` (warns, as JAX's does)."""
    _renamed("host_count", "process_count")
    return runtime.process_count()


def host_id(backend=None):
    """Deprecated alias of ``process_index`` (warns, as JAX's does)."""
    _renamed("host_id", "process_index")
    return runtime.process_index()


def host_ids(backend=None):
    """Deprecated alias of ``process_indices`` (warns, as JAX's does)."""
    _renamed("host_ids", "process_indices")
    return process_indices(backend)

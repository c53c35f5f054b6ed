"""Printing options, file and buffer I/O, and DLPack, as jax.numpy has them.

Arrays print through NumPy, so NumPy's print options apply to them; the readers run NumPy's
and return xform arrays; ``fromfile`` and ``fromiter`` are not provided, as in JAX, because
they consume a file or an iterator (impure under ``jit``).
"""

import functools

import ml_dtypes
import numpy as np

from xform.api.batching import vmap
from xform.numpy._creation import arange
from xform.numpy._promote import asarray
from xform.runtime.array import Array, share_jax_array

__all__ = [
    "printoptions",
    "get_printoptions",
    "set_printoptions",
    "array_repr",
    "array_str",
    "load",
    "save",
    "savez",
    "fromfile",
    "frombuffer",
    "fromstring",
    "fromiter",
    "fromfunction",
    "from_dlpack",
]

# --------------------------------------------------------------------------- printing

array_repr, array_str = np.array_repr, np.array_str


def get_printoptions():
    """NumPy's ``get_printoptions``: xform arrays print through NumPy."""
    return np.get_printoptions()


def printoptions(*args, **kwargs):
    """NumPy's ``printoptions`` context manager: xform arrays print through NumPy."""
    return np.printoptions(*args, **kwargs)


def set_printoptions(*args, **kwargs):
    """NumPy's ``set_printoptions``: xform arrays print through NumPy."""
    return np.set_printoptions(*args, **kwargs)


# --------------------------------------------------------------------------- files, buffers

save, savez = np.save, np.savez


def load(file, *args, **kwargs):
    """``np.load``, returning an xform array for a ``.npy`` file (bfloat16 data, which
    NumPy stores as 2-byte voids, comes back as bfloat16); ``.npz`` archives are returned as
    NumPy loads them."""
    out = np.load(file, *args, **kwargs)
    if isinstance(out, np.ndarray):
        if out.dtype == np.dtype("V2"):
            out = out.view(ml_dtypes.bfloat16)
        try:
            out = asarray(out)
        except TypeError:  # a dtype xform has no type for (strings, objects): left as NumPy's
            pass
    return out


def frombuffer(buffer, dtype=float, count=-1, offset=0):
    """A 1-D array of the data in ``buffer`` (``np.frombuffer``)."""
    return asarray(np.frombuffer(buffer=buffer, dtype=dtype, count=count, offset=offset))


def fromstring(string, dtype=float, count=-1, *, sep):
    """A 1-D array of the numbers in ``string``, separated by ``sep`` (``np.fromstring``)."""
    return asarray(np.fromstring(string, dtype=dtype, count=count, sep=sep))


def _impure(name, what):
    def fn(*args, **kwargs):
        raise NotImplementedError(
            f"xform.numpy.{name}() is not implemented because it consumes {what} and so is "
            "not pure, which makes it unsafe under jit and other transformations. Use "
            f"xform.numpy.asarray(np.{name}(...)) outside transformed functions instead."
        )

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Not implemented, as in JAX: use ``asarray(np.{name}(...))``."
    return fn


fromfile = _impure("fromfile", "a file object")
fromiter = _impure("fromiter", "an iterator")


def fromfunction(function, shape, *, dtype=float, **kwargs):
    """``function`` evaluated at every index of ``shape``: ``function`` takes one scalar
    index per dimension (it is mapped with ``vmap``, unlike NumPy's, which passes index
    grids); ``kwargs`` are passed to it unmapped.

    Example:
      >>> fromfunction(lambda i, j: i + j, (2, 3), dtype=int)
      Array([[0, 1, 2],
             [1, 2, 3]], dtype=int32)
    """
    shape = tuple(_dim(d) for d in (shape if isinstance(shape, (tuple, list)) else (shape,)))
    mapped = functools.partial(function, **kwargs) if kwargs else function
    for i in range(len(shape)):
        in_axes = [0 if i == j else None for j in range(len(shape))]
        mapped = vmap(mapped, in_axes=tuple(in_axes[::-1]))
    return mapped(*(arange(s, dtype=dtype) for s in shape))


def _dim(d):
    try:
        return int(d.__index__())
    except (AttributeError, TypeError):
        raise TypeError(
            f"fromfunction: shape must be a sequence of integers, got an element {d!r}"
        ) from None


# --------------------------------------------------------------------------- DLPack


def from_dlpack(x, /, *, device=None, copy=None):
    """An xform array from any DLPack producer (``__dlpack__``): a NumPy array, a JAX or
    xform array, a tensor of another library on the CPU.

    Args:
      x: the producer.
      device: unsupported beyond None (the array stays where its data is).
      copy: as ``np.from_dlpack``: None or False shares memory where possible (a JAX
        array's device buffer is reused), True copies.

    Returns:
      An ``xform.Array``.
    """
    if not hasattr(x, "__dlpack__"):
        raise TypeError(
            f"from_dlpack: expected an object with a __dlpack__ method, got {type(x).__name__}"
        )
    if device is not None:
        raise NotImplementedError("from_dlpack: the 'device' argument is not supported")
    if isinstance(x, Array):
        return asarray(x, copy=copy)
    if not copy:
        shared = share_jax_array(x)
        if shared is not None:
            return shared
    return asarray(np.from_dlpack(x, copy=copy))

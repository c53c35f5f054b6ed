"""``jax.ref``: mutable array references (``new_ref``, ``Ref``, ``get``/``swap``/``set``/
``addupdate``, ``freeze``, ``empty_ref``, ``free_ref``). The type and its primitives are in
xform/primitives/refs.py; this module takes user values (Python scalars, NumPy arrays) in.
"""

from xform import core, dtypes
from xform.numpy import asarray
from xform.primitives import refs
from xform.primitives.refs import AbstractRef, Ref, freeze

__all__ = [
    "AbstractRef",
    "Ref",
    "addupdate",
    "empty_ref",
    "free_ref",
    "freeze",
    "get",
    "new_ref",
    "set",
    "swap",
]


def new_ref(init_val, *, memory_space=None, kind=None):
    """A new mutable array reference holding ``init_val``.

    Args:
      init_val: an array (or a value ``jnp.asarray`` takes) to start with.
      memory_space: where the reference lives (accepted for JAX's signature; device memory).
      kind: JAX's reference kind (accepted, unused).

    Returns:
      A ``Ref``: ``r[idx]`` reads, ``r[idx] = v`` writes in place, ``freeze(r)`` ends it.

    Example:
      >>> r = xform.new_ref(xform.numpy.zeros(3)); r[1] += 1.0
    """
    if isinstance(init_val, Ref):
        raise TypeError("new_ref: references to references are not supported")
    value = init_val if isinstance(init_val, core.Tracer) else asarray(init_val)
    return refs.new_ref(value, memory_space=memory_space, kind=kind)


def empty_ref(ty, memory_space=None):
    """A new reference of type ``ty`` (a ``ShapeDtypeStruct`` or an array's type), to be
    written before it is read."""
    aval = core.ShapedArray(tuple(ty.shape), dtypes.canonicalize(ty.dtype))
    return refs.empty_ref(aval, memory_space=memory_space)


def free_ref(ref):
    """Invalidate ``ref``: it must not be used afterwards."""
    refs.free_ref(ref)


def get(ref, idx=None):
    """``ref[idx]`` for a NumPy-style indexer (all of it when ``idx`` is None)."""
    return refs.get(ref, idx)


def swap(ref, idx, value, _function_name="ref_swap"):
    """Write ``value`` at ``ref[idx]`` and return the value it replaces."""
    return refs.swap(ref, idx, _value(value))


def set(ref, idx, value):  # noqa: A001  (JAX's name)
    """``ref[idx] = value``."""
    refs.ref_set(ref, idx, _value(value))


def addupdate(ref, idx, x):
    """``ref[idx] += x`` as one operation."""
    refs.addupdate(ref, idx, _value(x))


def _value(x):
    return x if isinstance(x, core.Tracer) else asarray(x)

"""``xform.typing``: the annotations of ``jax.typing``.

- ``ArrayLike``: any value that converts implicitly to an ``xform.Array``: an Array (or a
  tracer standing for one), a NumPy array or scalar, or a Python ``bool``/``int``/``float``/
  ``complex``. Sequences and strings are not array-like. Usable with ``isinstance``.
- ``DTypeLike``: anything ``np.dtype`` turns into a supported dtype: a name (``"float32"``),
  a scalar type (``np.float32``, ``float``), a dtype, or an object with a ``.dtype``.
"""

import typing
from typing import Any, Protocol

import numpy as np

from xform.runtime.array import Array


@typing.runtime_checkable
class SupportsDType(Protocol):
    """An object with a ``dtype`` attribute (``xform.numpy.float32``, an array)."""

    @property
    def dtype(self, /) -> np.dtype: ...


ArrayLike = Array | np.ndarray | np.bool_ | np.number | bool | int | float | complex

DTypeLike = str | type[Any] | np.dtype | SupportsDType

__all__ = ["ArrayLike", "DTypeLike"]

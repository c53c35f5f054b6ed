"""Constructors that pick a sparse format by name: ``empty`` and ``eye``."""

from xform.experimental.sparse.bcoo import BCOO
from xform.experimental.sparse.bcsr import BCSR

__all__ = ["empty", "eye"]


def _format(name, sparse_format):
    if sparse_format == "bcoo":
        return BCOO
    if sparse_format == "bcsr":
        return BCSR
    raise ValueError(
        f"{name}: sparse_format={sparse_format!r} is not supported by xform; use 'bcoo' or 'bcsr'"
    )


def empty(shape, dtype=None, index_dtype="int32", sparse_format="bcoo", **kwds):
    """An all-zero sparse array of ``shape`` with no stored entries (``nse=0`` by default).

    Example:
      >>> empty((2, 3))
      BCOO(float32[2, 3], nse=0)
    """
    cls = _format("empty", sparse_format)
    mat = BCOO._empty(shape, dtype=dtype, index_dtype=index_dtype, **kwds)
    return mat if cls is BCOO else BCSR.from_bcoo(mat)


def eye(N, M=None, k=0, dtype=None, index_dtype="int32", sparse_format="bcoo", **kwds):
    """A sparse identity matrix of shape ``(N, M)`` (ones on diagonal ``k``).

    Example:
      >>> eye(3).nse
      3
    """
    cls = _format("eye", sparse_format)
    mat = BCOO._eye(N, N if M is None else M, k, dtype=dtype, index_dtype=index_dtype, **kwds)
    return mat if cls is BCOO else BCSR.from_bcoo(mat)

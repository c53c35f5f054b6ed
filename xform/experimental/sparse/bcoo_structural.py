"""BCOO's structural functions: reshape, squeeze, sort, reverse, slice, concatenate,
broadcast, change of layout, and basic indexing.

They rebuild their result with the type of their operand, so this module needs no import
of the ``BCOO`` class (whose methods use these functions).
"""

import operator
import warnings

from xform.experimental.sparse import _core, _structural
from xform.experimental.sparse._base import (
    JAXSparse,
    SparseEfficiencyError,
    SparseEfficiencyWarning,
)

__all__ = [
    "bcoo_broadcast_in_dim",
    "bcoo_concatenate",
    "bcoo_dynamic_slice",
    "bcoo_reshape",
    "bcoo_rev",
    "bcoo_slice",
    "bcoo_sort_indices",
    "bcoo_squeeze",
    "bcoo_update_layout",
]


def _buffers(mat):
    return mat.data, mat.indices, mat.shape


def _getitem(mat, key):
    """``mat[key]`` for basic indices, as a slice, a squeeze and a broadcast."""
    key = key if isinstance(key, tuple) else (key,)
    n_given = sum(k is not None and k is not Ellipsis for k in key)
    if n_given > mat.ndim:
        raise IndexError(
            f"Too many indices: {mat.ndim}-dimensional array indexed with "
            f"{n_given} regular indices."
        )
    if Ellipsis in key:
        at = key.index(Ellipsis)
        key = (*key[:at], *[slice(None)] * (mat.ndim - n_given), *key[at + 1 :])
    key = (*key, *[slice(None)] * (mat.ndim - sum(k is not None for k in key)))
    start, limit, strides, squeezed, out_dims = [], [], [], [], []
    dim = 0
    for k in key:
        if k is None:
            out_dims.append(None)
            continue
        size = mat.shape[dim]
        if isinstance(k, slice):
            lo, hi, step = k.indices(size)
            if step < 1:
                raise NotImplementedError(
                    "BCOO indexing with a negative step is not supported by xform"
                )
            start.append(lo)
            limit.append(max(lo, hi))
            strides.append(step)
            out_dims.append(dim)
        else:
            try:
                i = operator.index(k)
            except TypeError:
                raise NotImplementedError(
                    f"BCOO indexing supports integers, slices, None and Ellipsis; got {k!r}"
                ) from None
            if not -size <= i < size:
                raise IndexError(f"index {i} is out of bounds for axis {dim} with size {size}")
            i %= size
            start.append(i)
            limit.append(i + 1)
            strides.append(1)
            squeezed.append(dim)
        dim += 1
    out = bcoo_slice(mat, start_indices=start, limit_indices=limit, strides=strides)
    if squeezed:
        out = bcoo_squeeze(out, dimensions=squeezed)
    if None in out_dims:
        kept = [d for d in out_dims if d is not None]
        shape = tuple(1 if d is None else out.shape[kept.index(d)] for d in out_dims)
        bdims = tuple(i for i, d in enumerate(out_dims) if d is not None)
        out = bcoo_broadcast_in_dim(out, shape=shape, broadcast_dimensions=bdims)
    return out


def bcoo_reshape(mat, *, new_sizes, dimensions=None, sharding=None):
    """``mat`` reshaped to ``new_sizes``; batch, sparse and dense dimensions must each reshape
    among themselves."""
    if dimensions is not None or sharding is not None:
        raise NotImplementedError(
            "bcoo_reshape: xform supports dimensions=None and sharding=None only"
        )
    data, indices, shape = _core.reshape(*_buffers(mat), new_sizes)
    return type(mat)((data, indices), shape=shape)


def bcoo_squeeze(arr, *, dimensions):
    """``arr`` without the given size-1 dimensions."""
    dims = {operator.index(d) % arr.ndim for d in dimensions}
    for d in dims:
        if arr.shape[d] != 1:
            raise ValueError(
                f"cannot select an axis to squeeze out which has size not equal "
                f"to one, got shape={arr.shape} and dimensions={tuple(dimensions)}"
            )
    return bcoo_reshape(arr, new_sizes=tuple(s for i, s in enumerate(arr.shape) if i not in dims))


def bcoo_sort_indices(mat):
    """``mat`` with its entries in row-major order of their indices (duplicates kept)."""
    data, indices = _structural.sort_indices(*_buffers(mat))
    return type(mat)(
        (data, indices), shape=mat.shape, indices_sorted=True, unique_indices=mat.unique_indices
    )


def bcoo_rev(operand, dimensions):
    """``operand`` reversed along ``dimensions`` (as ``lax.rev``)."""
    data, indices = _structural.rev(*_buffers(operand), dimensions)
    return type(operand)(
        (data, indices), shape=operand.shape, unique_indices=operand.unique_indices
    )


def bcoo_slice(mat, *, start_indices, limit_indices, strides=None):
    """The slice of ``mat`` (as ``lax.slice``); entries outside it become padding.

    Example:
      >>> M = BCOO.fromdense(xform.numpy.eye(3))
      >>> bcoo_slice(M, start_indices=(1, 1), limit_indices=(3, 3)).todense()
      Array([[1., 0.],
             [0., 1.]], dtype=float32)
    """
    data, indices, shape = _structural.slice_(*_buffers(mat), start_indices, limit_indices, strides)
    return type(mat)((data, indices), shape=shape)


def bcoo_concatenate(operands, *, dimension):
    """BCOO arrays of one layout joined along ``dimension`` (a batch or sparse dimension)."""
    if not all(isinstance(op, JAXSparse) for op in operands):
        raise ValueError(
            "bcoo_concatenate: expected operands to be a sequence of BCOO "
            f"arrays, got {[type(op).__name__ for op in operands]}"
        )
    data, indices, shape = _structural.concatenate([_buffers(op) for op in operands], dimension)
    return type(operands[0])((data, indices), shape=shape)


def bcoo_broadcast_in_dim(mat, *, shape, broadcast_dimensions, sharding=None):
    """``mat`` broadcast to ``shape`` (as ``lax.broadcast_in_dim``): new leading dimensions
    become batch dimensions, new size-1 dimensions among the sparse ones sparse dimensions."""
    if sharding is not None:
        raise NotImplementedError("bcoo_broadcast_in_dim: sharding is not supported by xform")
    data, indices, out_shape = _structural.broadcast_in_dim(
        *_buffers(mat), shape, broadcast_dimensions
    )
    return type(mat)(
        (data, indices),
        shape=out_shape,
        indices_sorted=mat.indices_sorted,
        unique_indices=mat.unique_indices,
    )


def bcoo_update_layout(mat, *, n_batch=None, n_dense=None, on_inefficient="error"):
    """``mat`` with ``n_batch`` batch and ``n_dense`` dense dimensions (defaults: its own).

    Args:
      mat: a BCOO array.
      n_batch, n_dense: the new layout.
      on_inefficient: ``'error'`` (default), ``'warn'`` or None: what to do when the new
        layout stores much more than the old one (sparse dimensions of size > 1 turned batch
        or dense).

    Returns:
      A BCOO array with the same dense value.
    """
    n_batch = mat.n_batch if n_batch is None else operator.index(n_batch)
    n_dense = mat.n_dense if n_dense is None else operator.index(n_dense)
    if (n_batch, n_dense) == (mat.n_batch, mat.n_dense):
        return mat
    if on_inefficient not in ("error", "warn", None):
        raise ValueError(
            f"on_inefficent={on_inefficient!r}; expected one of ['error', 'warn', None]."
        )
    if n_batch < 0:
        raise ValueError(f"n_batch must be non-negative; got {n_batch}")
    if n_dense < 0:
        raise ValueError(f"n_dense must be non-negative; got {n_dense}")
    if n_batch + n_dense > mat.ndim:
        raise ValueError(
            f"sum of n_batch={n_batch} and n_dense={n_dense} cannot be larger "
            f"than mat.ndim={mat.ndim}."
        )
    grown = []
    if n_dense > mat.n_dense and any(
        d > 1 for d in mat.shape[mat.ndim - n_dense : mat.ndim - mat.n_dense]
    ):
        grown.append(("n_dense", mat.n_dense, n_dense))
    if n_batch > mat.n_batch and any(d > 1 for d in mat.shape[mat.n_batch : n_batch]):
        grown.append(("n_batch", mat.n_batch, n_batch))
    for name, old, new in grown:
        msg = (
            f"For matrix of shape {mat.shape}, increasing {name} from {old} to {new} "
            "results in inefficient storage."
        )
        if on_inefficient == "error":
            raise SparseEfficiencyError(
                msg + " To disable this error, set the on_inefficient "
                "argument of bcoo_update_layout to 'warn' or None."
            )
        if on_inefficient == "warn":
            warnings.warn(
                msg + " To disable this warning, set the on_inefficient argument "
                "of bcoo_update_layout to None.",
                SparseEfficiencyWarning,
                stacklevel=2,
            )
    data, indices = _structural.update_layout(*_buffers(mat), n_batch, n_dense)
    return type(mat)((data, indices), shape=mat.shape)


def bcoo_dynamic_slice(mat, start_indices, slice_sizes):
    """The slice of ``mat`` at traced ``start_indices`` (as ``lax.dynamic_slice``: clamped so
    the ``slice_sizes`` fit); ``nse`` shrinks to the slice's sparse size if that is smaller."""
    data, indices, shape = _structural.dynamic_slice(*_buffers(mat), start_indices, slice_sizes)
    return type(mat)((data, indices), shape=shape)

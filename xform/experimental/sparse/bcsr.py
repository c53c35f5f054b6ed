"""``BCSR``: batched compressed-sparse-row arrays, as ``jax.experimental.sparse.BCSR``.

A BCSR array has exactly two sparse dimensions (rows, columns) after its batch dimensions:
``indices`` holds each entry's column, ``indptr`` (``rows + 1`` long per batch) where each
row's entries start. Its operations convert to the BCOO layout (the row of entry ``k`` is the
number of rows that end at or before ``k``) and use BCOO's, so the rules of autodiff and
batching are BCOO's.
"""

import operator

import numpy as np

from xform import numpy as jnp
from xform.experimental.sparse import _core
from xform.experimental.sparse._base import JAXSparse
from xform.experimental.sparse.bcoo import BCOO, bcoo_dot_general, bcoo_fromdense
from xform.experimental.sparse.bcoo_structural import (
    bcoo_broadcast_in_dim,
    bcoo_concatenate,
    bcoo_sort_indices,
)
from xform.tree_util import register_pytree_node_class

__all__ = [
    "BCSR",
    "bcsr_broadcast_in_dim",
    "bcsr_concatenate",
    "bcsr_dot_general",
    "bcsr_extract",
    "bcsr_fromdense",
    "bcsr_sum_duplicates",
    "bcsr_todense",
]


def _rows_of_entries(indptr, nse):
    """The row of each of ``nse`` entries; ``rows`` (out of bounds) for padding."""
    k = jnp.arange(nse, dtype=indptr.dtype)
    return jnp.sum(indptr[None, 1:] <= k[:, None], axis=1).astype(indptr.dtype)


def _indptr_of_rows(rows, n_rows):
    """``indptr`` of entries sorted by row (padding rows equal to ``n_rows`` are not counted)."""
    r = jnp.arange(n_rows + 1, dtype=rows.dtype)
    return jnp.sum(rows[None, :] < r[:, None], axis=1).astype(rows.dtype)


@register_pytree_node_class
class BCSR(JAXSparse):
    """A batched compressed-sparse-row array.

    Args:
      args: ``(data, indices, indptr)``: ``data`` of shape ``batch + (nse,) + dense``, column
        ``indices`` of shape ``batch + (nse,)``, ``indptr`` of shape ``batch + (rows + 1,)``.
      shape: the shape of the array it stands for.
      indices_sorted, unique_indices: what is known about the indices.

    Example:
      >>> BCSR.fromdense(xform.numpy.eye(2))
      BCSR(float32[2, 2], nse=2)
    """

    def __init__(self, args, *, shape, indices_sorted=False, unique_indices=False):
        data, indices, indptr = args
        self.data, self.indices, self.indptr = map(jnp.asarray, (data, indices, indptr))
        self.shape = tuple(operator.index(d) for d in shape)
        self.indices_sorted = bool(indices_sorted)
        self.unique_indices = bool(unique_indices)
        n_batch = self.indices.ndim - 1
        if len(self.shape) - n_batch - self.n_dense != 2:
            raise ValueError(
                f"BCSR: buffers data {self.data.shape}, indices "
                f"{self.indices.shape} do not fit shape {self.shape} with two "
                "sparse dimensions"
            )
        if self.indptr.shape[-1] != self.shape[n_batch] + 1:
            raise ValueError(
                f"BCSR: indptr of shape {self.indptr.shape} must have "
                f"{self.shape[n_batch] + 1} (rows + 1) entries per batch"
            )

    n_batch = property(lambda self: self.indices.ndim - 1)
    n_sparse = property(lambda self: 2)
    n_dense = property(lambda self: self.data.ndim - 1 - self.n_batch)
    nse = property(lambda self: self.indices.shape[-1])
    _bufs = property(lambda self: (self.data, self.indices, self.indptr))

    def _repr_fields(self):
        extra = f", n_batch={self.n_batch}" if self.n_batch else ""
        return extra + (f", n_dense={self.n_dense}" if self.n_dense else "")

    def tree_flatten(self):
        return (self.data, self.indices, self.indptr), {
            "shape": self.shape,
            "indices_sorted": self.indices_sorted,
            "unique_indices": self.unique_indices,
        }

    @classmethod
    def tree_unflatten(cls, aux_data, children):
        obj = object.__new__(cls)
        obj.data, obj.indices, obj.indptr = children
        obj.shape = _core.unflattened_shape(aux_data["shape"], obj.data, obj.indices, 1)
        obj.indices_sorted = aux_data["indices_sorted"]
        obj.unique_indices = aux_data["unique_indices"]
        return obj

    @classmethod
    def fromdense(cls, mat, *, nse=None, index_dtype=np.int32, n_dense=0, n_batch=0):
        """The BCSR form of dense ``mat`` (see ``bcsr_fromdense``)."""
        return bcsr_fromdense(
            mat, nse=nse, index_dtype=index_dtype, n_dense=n_dense, n_batch=n_batch
        )

    @classmethod
    def from_scipy_sparse(cls, mat, *, index_dtype=None, n_dense=0, n_batch=0):
        """The BCSR form of a 2-D :mod:`scipy.sparse` array."""
        if n_dense != 0 or n_batch != 0:
            raise NotImplementedError("BCSR from_scipy_sparse with nonzero n_dense/n_batch.")
        if mat.ndim != 2:
            raise ValueError(f"BCSR from_scipy_sparse requires 2D array; {mat.ndim}D is given.")
        mat = mat.tocsr()
        dtype = index_dtype or np.int32
        return cls(
            (
                jnp.asarray(mat.data),
                jnp.asarray(mat.indices.astype(dtype)),
                jnp.asarray(mat.indptr.astype(dtype)),
            ),
            shape=mat.shape,
        )

    @classmethod
    def from_bcoo(cls, arr):
        """The BCSR form of a BCOO array with two sparse dimensions and row-sorted indices."""
        if arr.n_sparse != 2:
            raise NotImplementedError(
                f"BSCR must have 2 sparse dimensions; got n_sparse={arr.n_sparse}"
            )
        n_rows = arr.shape[arr.n_batch]
        data, indices = _core.full_batch(arr.data, arr.indices, arr.n_batch)

        def unbatched(i):
            valid = _core.in_bounds(i, arr.shape[arr.n_batch : arr.n_batch + 2])
            rows = jnp.where(valid, i[:, 0], n_rows)
            return i[:, 1], _indptr_of_rows(rows, n_rows)

        cols, indptr = _core.nfold_vmap(unbatched, arr.n_batch)(indices)
        return cls(
            (data, cols, indptr),
            shape=arr.shape,
            indices_sorted=arr.indices_sorted,
            unique_indices=arr.unique_indices,
        )

    def to_bcoo(self):
        """The same array in the BCOO layout."""
        nse = self.nse

        def unbatched(cols, indptr):
            rows = _rows_of_entries(indptr, nse)
            return jnp.stack([rows, cols.astype(rows.dtype)], axis=1)

        indices = _core.nfold_vmap(unbatched, self.n_batch)(self.indices, self.indptr)
        return BCOO(
            (self.data, indices),
            shape=self.shape,
            indices_sorted=self.indices_sorted,
            unique_indices=self.unique_indices,
        )

    def todense(self):
        """The dense array."""
        return bcsr_todense(self)

    def transpose(self, *args, **kwargs):
        raise NotImplementedError("Transpose is not implemented.")

    def sum_duplicates(self, nse=None, remove_zeros=True):
        """The array with duplicate entries summed (see ``bcsr_sum_duplicates``)."""
        del remove_zeros
        return bcsr_sum_duplicates(self, nse=nse)

    def __matmul__(self, other):
        return self.to_bcoo() @ other

    def __rmatmul__(self, other):
        return other @ self.to_bcoo()


def bcsr_fromdense(mat, *, nse=None, n_batch=0, n_dense=0, index_dtype=np.int32):
    """The BCSR form of a dense array (two sparse dimensions after ``n_batch`` batch ones).

    Example:
      >>> bcsr_fromdense(xform.numpy.eye(2)).indptr
      Array([0, 1, 2], dtype=int32)
    """
    mat = jnp.asarray(mat)
    if mat.ndim - n_batch - n_dense != 2:
        raise ValueError("bcsr_fromdense: must have 2 sparse dimensions.")
    return BCSR.from_bcoo(
        bcoo_fromdense(mat, nse=nse, n_batch=n_batch, n_dense=n_dense, index_dtype=index_dtype)
    )


def bcsr_extract(indices, indptr, mat):
    """The entries of dense ``mat`` at the positions that BCSR ``indices``/``indptr`` store:
    the data of a BCSR array with this pattern (zero at padding)."""
    mat = jnp.asarray(mat)
    indices, indptr = jnp.asarray(indices), jnp.asarray(indptr)
    n_batch = indices.ndim - 1
    nse = indices.shape[-1]

    def unbatched(cols, ptr, m):
        rows = _rows_of_entries(ptr, nse)
        return m.at[rows, cols].get(mode="fill", fill_value=0)

    return _core.nfold_vmap(unbatched, n_batch)(indices, indptr, mat)


def _via_bcoo(bcoo_result):
    """The BCSR form of a BCOO result: its entries sorted so that padding comes last, as the
    row pointers need."""
    if bcoo_result.n_sparse != 2:
        raise NotImplementedError(
            f"BCSR needs 2 sparse dimensions; the result has n_sparse={bcoo_result.n_sparse}"
        )
    return BCSR.from_bcoo(bcoo_sort_indices(bcoo_result))


def bcsr_concatenate(operands, *, dimension):
    """BCSR arrays of one layout joined along ``dimension`` (see ``bcoo_concatenate``)."""
    return _via_bcoo(bcoo_concatenate([op.to_bcoo() for op in operands], dimension=dimension))


def bcsr_broadcast_in_dim(mat, *, shape, broadcast_dimensions, sharding=None):
    """``mat`` broadcast to ``shape``: new leading dimensions become batch dimensions (see
    ``bcoo_broadcast_in_dim``)."""
    return _via_bcoo(
        bcoo_broadcast_in_dim(
            mat.to_bcoo(), shape=shape, broadcast_dimensions=broadcast_dimensions, sharding=sharding
        )
    )


def bcsr_todense(mat):
    """The dense array of a BCSR array."""
    return mat.to_bcoo().todense()


def bcsr_sum_duplicates(mat, nse=None):
    """``mat`` with duplicate entries summed, sorted."""
    return BCSR.from_bcoo(mat.to_bcoo().sum_duplicates(nse=nse))


def bcsr_dot_general(
    lhs, rhs, *, dimension_numbers, precision=None, preferred_element_type=None, out_sharding=None
):
    """``lax.dot_general`` with a BCSR operand and a dense one; a dense array."""
    lhs = lhs.to_bcoo() if isinstance(lhs, BCSR) else lhs
    rhs = rhs.to_bcoo() if isinstance(rhs, BCSR) else rhs
    return bcoo_dot_general(
        lhs,
        rhs,
        dimension_numbers=dimension_numbers,
        precision=precision,
        preferred_element_type=preferred_element_type,
        out_sharding=out_sharding,
    )

"""``BCOO``: batched coordinate-format sparse arrays, as ``jax.experimental.sparse.BCOO``.

A ``BCOO`` is a pytree whose leaves are ``data`` and ``indices`` and whose static part is
the shape (with the ``indices_sorted``/``unique_indices`` flags), so it passes through
``jit``, ``vmap`` and ``grad`` like any container. The layout and the operations on bare
buffers are in ``_core.py`` and ``_dot.py``; this module wraps them as JAX's functions and
methods.
"""

import operator

import numpy as np

from xform import lax
from xform import numpy as jnp
from xform.experimental.sparse import _core, _dot
from xform.experimental.sparse._base import JAXSparse
from xform.experimental.sparse.bcoo_structural import (
    _getitem,
    bcoo_reshape,
    bcoo_sort_indices,
    bcoo_update_layout,
)
from xform.tree_util import register_pytree_node_class

__all__ = [
    "BCOO",
    "bcoo_dot_general",
    "bcoo_dot_general_sampled",
    "bcoo_extract",
    "bcoo_fromdense",
    "bcoo_multiply_dense",
    "bcoo_multiply_sparse",
    "bcoo_reduce_sum",
    "bcoo_sum_duplicates",
    "bcoo_todense",
    "bcoo_transpose",
]


def _dense_comparison(self, other):
    raise NotImplementedError(
        "sparse rule for comparisons is not implemented because it would result in dense "
        "output. If this is your intent, use sparse.todense() to convert your arguments to "
        "dense matrices."
    )


@register_pytree_node_class
class BCOO(JAXSparse):
    """A batched coordinate-format sparse array.

    Args:
      args: ``(data, indices)``: ``data`` of shape ``batch + (nse,) + dense`` and ``indices``
        of shape ``batch + (nse, n_sparse)``.
      shape: the shape of the array it stands for.
      indices_sorted: whether the indices are known to be sorted.
      unique_indices: whether the indices are known to hold no duplicates.

    Example:
      >>> M = BCOO.fromdense(xform.numpy.array([[1., 0.], [0., 2.]]))
      >>> M
      BCOO(float32[2, 2], nse=2)
    """

    def __init__(self, args, *, shape, indices_sorted=False, unique_indices=False):
        data, indices = args
        self.data, self.indices = jnp.asarray(data), jnp.asarray(indices)
        self.shape = tuple(operator.index(d) for d in shape)
        self.indices_sorted = bool(indices_sorted)
        self.unique_indices = bool(unique_indices)
        _core.props(self.data, self.indices, self.shape)

    n_batch = property(lambda self: self.indices.ndim - 2)
    n_sparse = property(lambda self: self.indices.shape[-1])
    n_dense = property(lambda self: self.data.ndim - 1 - self.n_batch)
    nse = property(lambda self: self.indices.shape[-2])
    _bufs = property(lambda self: (self.data, self.indices))

    def _repr_fields(self):
        extra = ""
        if self.n_batch:
            extra += f", n_batch={self.n_batch}"
        if self.n_dense:
            extra += f", n_dense={self.n_dense}"
        return extra

    # -- pytree: data and indices are the leaves, the shape and flags are static
    def tree_flatten(self):
        return (self.data, self.indices), {
            "shape": self.shape,
            "indices_sorted": self.indices_sorted,
            "unique_indices": self.unique_indices,
        }

    @classmethod
    def tree_unflatten(cls, aux_data, children):
        # no validation: tree utilities rebuild with placeholders (None, object()) as leaves
        obj = object.__new__(cls)
        obj.data, obj.indices = children
        obj.shape = _core.unflattened_shape(aux_data["shape"], obj.data, obj.indices, 2)
        obj.indices_sorted = aux_data["indices_sorted"]
        obj.unique_indices = aux_data["unique_indices"]
        return obj

    @classmethod
    def fromdense(cls, mat, *, nse=None, index_dtype=np.int32, n_dense=0, n_batch=0):
        """The BCOO form of dense ``mat`` (see ``bcoo_fromdense``)."""
        return bcoo_fromdense(
            mat, nse=nse, index_dtype=index_dtype, n_dense=n_dense, n_batch=n_batch
        )

    @classmethod
    def from_scipy_sparse(cls, mat, *, index_dtype=None, n_dense=0, n_batch=0):
        """The BCOO form of a :mod:`scipy.sparse` array (entries as scipy stores them)."""
        if n_dense != 0 or n_batch != 0:
            raise NotImplementedError("BCOO.fromscipy with nonzero n_dense/n_batch")
        mat = mat.tocoo()
        indices = np.column_stack((mat.row, mat.col)).astype(index_dtype or np.int32)
        return cls((jnp.asarray(mat.data), jnp.asarray(indices)), shape=mat.shape)

    @classmethod
    def _empty(cls, shape, *, dtype=None, index_dtype="int32", n_dense=0, n_batch=0, nse=0):
        shape = tuple(operator.index(d) for d in shape)
        n_sparse = len(shape) - n_dense - n_batch
        if n_sparse < 0 or n_dense < 0 or n_batch < 0 or nse < 0:
            raise ValueError(
                f"Invalid inputs: shape={shape}, n_dense={n_dense}, n_batch={n_batch}, nse={nse}"
            )
        batch, sparse, dense = (
            shape[:n_batch],
            shape[n_batch : n_batch + n_sparse],
            shape[n_batch + n_sparse :],
        )
        data = jnp.zeros((*batch, nse, *dense), dtype)
        indices = _core.fill_value(sparse, np.dtype(index_dtype), (*batch, nse))
        return cls((data, indices), shape=shape, indices_sorted=True, unique_indices=True)

    @classmethod
    def _eye(cls, N, M, k, *, dtype=None, index_dtype="int32", n_batch=0, n_dense=0):
        if n_batch or n_dense:
            raise NotImplementedError("sparse.eye: xform builds only n_batch=0, n_dense=0")
        k = operator.index(k)
        start, stop = max(0, -k), min(N, M - k)
        nse = max(stop - start, 0)
        rows = np.arange(start, start + nse, dtype=np.dtype(index_dtype))
        indices = (
            np.stack([rows, rows + k], axis=1) if nse else np.zeros((0, 2), np.dtype(index_dtype))
        )
        data = jnp.ones(nse, dtype)
        return cls(
            (data, jnp.asarray(indices)), shape=(N, M), indices_sorted=True, unique_indices=True
        )

    def todense(self):
        """The dense array (see ``bcoo_todense``)."""
        return bcoo_todense(self)

    def transpose(self, axes=None):
        """The array with its axes permuted (default reversed)."""
        axes = tuple(range(self.ndim))[::-1] if axes is None else tuple(axes)
        out = bcoo_transpose(self, permutation=axes)
        # the order of the entries is kept, so sortedness survives if the sparse dims stay
        sparse = axes[self.n_batch : self.n_batch + self.n_sparse]
        out.indices_sorted = self.indices_sorted and sparse == tuple(
            range(self.n_batch, self.n_batch + self.n_sparse)
        )
        return out

    def reshape(self, *args, **kwargs):
        """The array reshaped; batch, sparse and dense dimensions reshape among themselves."""
        new = kwargs.pop("shape", kwargs.pop("newshape", None))
        if kwargs:
            raise TypeError(f"BCOO.reshape got unexpected arguments {sorted(kwargs)}")
        if new is None:
            new = args[0] if len(args) == 1 and not isinstance(args[0], int) else args
        return bcoo_reshape(self, new_sizes=tuple(new))

    def sum(self, axis=None, keepdims=False):
        """The sum over ``axis`` (default all): a BCOO, or a dense scalar when every axis is
        summed (as JAX's)."""
        axes = (
            tuple(range(self.ndim))
            if axis is None
            else (axis,)
            if isinstance(axis, int)
            else tuple(axis)
        )
        axes = tuple(operator.index(a) % max(self.ndim, 1) for a in axes)
        out = bcoo_reduce_sum(self, axes=axes)
        if keepdims:
            out = bcoo_reshape(
                out, new_sizes=tuple(1 if i in axes else d for i, d in enumerate(self.shape))
            )
        elif out.shape == ():
            return out.data.sum()
        return out

    def sum_duplicates(self, nse=None, remove_zeros=True):
        """The array with duplicate indices summed (see ``bcoo_sum_duplicates``). Explicit
        zeros are kept (``remove_zeros`` only changes JAX's eager ``nse``)."""
        del remove_zeros
        return bcoo_sum_duplicates(self, nse=nse)

    def sort_indices(self):
        """The array with its entries sorted by index (see ``bcoo_sort_indices``)."""
        return bcoo_sort_indices(self)

    def __getitem__(self, key):
        """Basic indexing: integers, slices with positive steps, ``None`` and ``...``."""
        return _getitem(self, key)

    def update_layout(self, *, n_batch=None, n_dense=None, on_inefficient="error"):
        """The array in another layout (see ``bcoo_update_layout``)."""
        return bcoo_update_layout(
            self, n_batch=n_batch, n_dense=n_dense, on_inefficient=on_inefficient
        )

    def astype(self, dtype):
        """The array with its data cast to ``dtype``."""
        return BCOO(
            (self.data.astype(dtype), self.indices),
            shape=self.shape,
            indices_sorted=self.indices_sorted,
            unique_indices=self.unique_indices,
        )

    # -- arithmetic, with the rules of JAX's sparsify (``BCOO + BCOO`` keeps both sets of
    # entries: the operands are separate values even when they are the same object)
    def __neg__(self):
        return _with_data(self, -self.data)

    def __pos__(self):
        return self

    def __add__(self, other):
        return add(self, other)

    def __radd__(self, other):
        return add(other, self)

    def __sub__(self, other):
        return sub(self, other)

    def __rsub__(self, other):
        return sub(other, self)

    def __mul__(self, other):
        return mul(self, other)

    def __rmul__(self, other):
        return mul(other, self)

    def __truediv__(self, other):
        if isinstance(other, JAXSparse):
            raise NotImplementedError(
                "Division by a sparse array is not implemented because it would result in "
                "dense output. If this is your intent, use sparse.todense() to convert your "
                "arguments to a dense array."
            )
        return mul(self, 1 / jnp.asarray(other))

    def __rtruediv__(self, other):
        raise NotImplementedError(
            "Division by a sparse array is not implemented because it would result in "
            "dense output. If this is your intent, use sparse.todense() to convert your "
            "arguments to a dense array."
        )

    def __matmul__(self, other):
        return matmul(self, other)

    def __rmatmul__(self, other):
        return matmul(other, self)

    def __abs__(self):
        mat = unique(self)
        return _with_data(mat, abs(mat.data))

    def __pow__(self, y):
        if isinstance(y, int) or (np.ndim(y) == 0 and np.issubdtype(np.result_type(y), np.integer)):
            y = operator.index(y)
            if y <= 0:
                raise NotImplementedError(
                    f"sparse rule for integer_pow with non-positive exponent {y} is not "
                    "implemented because it would result in dense output. If this is your "
                    "intent, use sparse.todense() to convert your argument to a dense array."
                )
            mat = unique(self)
            return _with_data(mat, mat.data**y)
        raise NotImplementedError(
            "sparse rule for pow is not implemented: only positive "
            "integer powers of a sparse array stay sparse."
        )

    def __rpow__(self, other):
        raise NotImplementedError(
            "sparse rule for pow is not implemented because it would result in dense output."
        )

    def __iter__(self):
        if not self.shape:
            raise TypeError("iteration over a 0-d array")
        return (self[i] for i in range(self.shape[0]))

    # comparisons: 0 compares to 0 as True or False everywhere, so the result is dense
    __gt__ = __ge__ = __lt__ = __le__ = __eq__ = __ne__ = _dense_comparison


def unique(mat):
    """``mat`` with unique indices (duplicates summed, ``nse`` kept), for functions that are
    not linear in the data."""
    return mat if mat.unique_indices else bcoo_sum_duplicates(mat, nse=mat.nse)


def _with_data(mat, data):
    """``mat`` with new data and the same indices."""
    return BCOO(
        (data, mat.indices),
        shape=mat.shape,
        indices_sorted=mat.indices_sorted,
        unique_indices=mat.unique_indices,
    )


def _buffers(mat):
    return mat.data, mat.indices, mat.shape


# ----------------------------------------------------------------------------- functions


def bcoo_fromdense(mat, *, nse=None, n_batch=0, n_dense=0, index_dtype=np.int32):
    """The BCOO form of a dense array.

    Args:
      mat: the dense array.
      nse: the number of stored entries per batch; default the largest number of nonzeros
        (which needs a concrete ``mat``: pass it under ``jit``).
      n_batch: the number of leading batch dimensions.
      n_dense: the number of trailing dense dimensions.
      index_dtype: the dtype of the indices.

    Returns:
      A ``BCOO`` whose ``todense()`` is ``mat`` (if ``nse`` is large enough).

    Example:
      >>> bcoo_fromdense(xform.numpy.eye(3)).nse
      3
    """
    mat = jnp.asarray(mat)
    data, indices = _core.fromdense(
        mat, nse=nse, n_batch=n_batch, n_dense=n_dense, index_dtype=index_dtype
    )
    return BCOO((data, indices), shape=mat.shape, indices_sorted=True, unique_indices=True)


def bcoo_todense(mat):
    """The dense array of a BCOO array (duplicate entries summed).

    Example:
      >>> bcoo_todense(BCOO.fromdense(xform.numpy.eye(2)))
      Array([[1., 0.],
             [0., 1.]], dtype=float32)
    """
    return _core.todense(*_buffers(mat))


def bcoo_extract(sparr, arr, *, assume_unique=None):
    """The BCOO array with ``sparr``'s indices and the values of dense ``arr`` there.

    Args:
      sparr: the BCOO array whose indices are read.
      arr: a dense array of ``sparr``'s shape.
      assume_unique: unused (xform reads every entry, duplicates included).

    Returns:
      A ``BCOO`` of ``arr``'s dtype.
    """
    del assume_unique
    arr = jnp.asarray(arr)
    if arr.shape != sparr.shape:
        raise ValueError(f"shape mismatch: sparr.shape={sparr.shape}, arr.shape={arr.shape}")
    return _with_data(sparr, _core.extract(sparr.indices, arr))


def bcoo_transpose(mat, *, permutation):
    """``mat`` with its dimensions permuted (batch, sparse and dense each among themselves)."""
    data, indices, shape = _core.transpose(*_buffers(mat), permutation)
    return BCOO((data, indices), shape=shape, unique_indices=mat.unique_indices)


def bcoo_reduce_sum(mat, *, axes):
    """The sum of ``mat`` over ``axes``, a BCOO array (of shape ``()`` when every axis is
    summed)."""
    data, indices, shape = _core.reduce_sum(*_buffers(mat), axes)
    return BCOO((data, indices), shape=shape)


def bcoo_multiply_dense(sp_mat, v):
    """The data of ``sp_mat * v`` for a dense ``v`` broadcasting to ``sp_mat``'s shape (the
    product keeps ``sp_mat``'s indices, so only its data is returned, as JAX's)."""
    return _core.multiply_dense(*_buffers(sp_mat), v)


def bcoo_multiply_sparse(lhs, rhs):
    """The elementwise product of two BCOO arrays of one shape, a BCOO array."""
    data, indices = _core.multiply_sparse(_buffers(lhs), _buffers(rhs))
    return BCOO((data, indices), shape=lhs.shape)


def bcoo_sum_duplicates(mat, nse=None):
    """``mat`` with repeated indices summed into one entry, indices sorted.

    Args:
      mat: a BCOO array.
      nse: the number of entries of the result; default the number of distinct indices
        (which needs concrete indices: pass it under ``jit``).
    """
    data, indices = _core.sum_duplicates(*_buffers(mat), nse=nse)
    return BCOO((data, indices), shape=mat.shape, indices_sorted=True, unique_indices=True)


def bcoo_dot_general(
    lhs, rhs, *, dimension_numbers, precision=None, preferred_element_type=None, out_sharding=None
):
    """``lax.dot_general`` where either operand (or both) may be a BCOO array.

    Args:
      lhs, rhs: BCOO or dense arrays.
      dimension_numbers: ``((lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch))``;
        a sparse operand's batch dimensions must be its BCOO batch dimensions.
      precision: unused (accepted for JAX's signature).
      preferred_element_type: the result's dtype.
      out_sharding: must be None.

    Returns:
      A dense array, or a BCOO array when both operands are sparse.

    Example:
      >>> M = BCOO.fromdense(xform.numpy.eye(2))
      >>> bcoo_dot_general(M, xform.numpy.ones(2), dimension_numbers=(([1], [0]), ([], [])))
      Array([1., 1.], dtype=float32)
    """
    del precision
    if out_sharding is not None:
        raise NotImplementedError("bcoo_dot_general: out_sharding is not supported by xform")
    lhs_sparse, rhs_sparse = isinstance(lhs, BCOO), isinstance(rhs, BCOO)
    if lhs_sparse and rhs_sparse:
        data, indices, shape = _dot.sparse_sparse(
            _buffers(lhs), _buffers(rhs), dimension_numbers, preferred_element_type
        )
        return BCOO((data, indices), shape=shape)
    if lhs_sparse:
        return _dot.sparse_dense(*_buffers(lhs), rhs, dimension_numbers, preferred_element_type)
    if rhs_sparse:
        return _dot.dense_sparse(lhs, *_buffers(rhs), dimension_numbers, preferred_element_type)
    raise TypeError("bcoo_dot_general: at least one operand must be a BCOO array")


def bcoo_dot_general_sampled(A, B, indices, *, dimension_numbers):
    """The entries of ``lax.dot_general(A, B)`` at BCOO ``indices``: the data of the product
    restricted to a sparsity pattern (zero at padding).

    The product is formed densely and then read at the indices; its gradients with respect
    to ``A`` and ``B`` follow from that composition.
    """
    out = lax.dot_general(jnp.asarray(A), jnp.asarray(B), dimension_numbers)
    return _core.extract(jnp.asarray(indices), out)


# ------------------------------------------------------------------ sparsify's arithmetic


def _promote(sp, other):
    """``sp`` and dense ``other`` cast to their common dtype (Python scalars weakly)."""
    dtype = jnp.result_type(sp.data, other)
    return sp.astype(dtype) if sp.dtype != dtype else sp, jnp.asarray(other).astype(dtype)


def _check_broadcast(name, x, y):
    """A TypeError, as ``jnp``'s, if the operands' shapes do not broadcast."""
    try:
        np.broadcast_shapes(
            np.shape(x) if not isinstance(x, BCOO) else x.shape,
            np.shape(y) if not isinstance(y, BCOO) else y.shape,
        )
    except ValueError:
        xs = x.shape if isinstance(x, BCOO) else np.shape(x)
        ys = y.shape if isinstance(y, BCOO) else np.shape(y)
        raise TypeError(f"{name} got incompatible shapes for broadcasting: {xs}, {ys}.") from None


def add(x, y, same_indices=False):
    """``x + y`` with at least one BCOO operand, by sparsify's rule: two sparse operands of one
    shape give a BCOO (data added when ``same_indices``, else the entries of both); a sparse
    and a dense operand give a dense array, if the dense one has the result's shape."""
    _check_broadcast("add", x, y)
    if isinstance(x, BCOO) and isinstance(y, BCOO):
        if x.shape != y.shape:
            raise NotImplementedError("Addition between sparse matrices of different shapes.")
        if same_indices:
            return _with_data(x, x.data + y.data)
        data, indices = _core.concatenate_entries(_buffers(x), _buffers(y))
        return BCOO((data, indices), shape=x.shape)
    sp, dense = (x, y) if isinstance(x, BCOO) else (y, x)
    dense = jnp.asarray(dense)
    if dense.shape != tuple(np.broadcast_shapes(sp.shape, dense.shape)):
        raise NotImplementedError(
            "Addition between a sparse array X and a dense array Y is not implemented when "
            "the output shape is larger than Y.shape. This is to prevent silent densification "
            "of a large sparse array. If this is your intent, you can explicitly cast the "
            "sparse array to a dense matrix."
        )
    sp, dense = _promote(sp, dense)
    return sp.todense() + dense


def sub(x, y, same_indices=False):
    """``x - y`` for two BCOO operands (as ``x + (-y)``); a sparse and a dense operand raise
    NotImplementedError, as JAX's sparsify does."""
    _check_broadcast("sub", x, y)
    if isinstance(x, BCOO) and isinstance(y, BCOO):
        return add(x, -y, same_indices)
    raise NotImplementedError("Subtraction between sparse and dense array.")


def mul(x, y, same_indices=False):
    """``x * y`` with at least one BCOO operand: by a dense array or scalar, the data are
    scaled at the stored indices; two sparse operands multiply entry pairs (or the data,
    when ``same_indices`` and they are unique)."""
    _check_broadcast("mul", x, y)
    if isinstance(x, BCOO) and isinstance(y, BCOO):
        if same_indices and x.unique_indices:
            return _with_data(x, x.data * y.data)
        return bcoo_multiply_sparse(x, y)
    sp, dense = (x, y) if isinstance(x, BCOO) else (y, x)
    sp, dense = _promote(sp, dense)
    return _with_data(sp, bcoo_multiply_dense(sp, dense))


def matmul(x, y):
    """``x @ y`` (``jnp.matmul``'s dimensions) with at least one BCOO operand.

    A 1-D operand contracts with the other's last (or second-to-last) dimension; a 2-D
    operand against one of higher rank broadcasts over the other's leading dimensions; two
    operands of one rank share their leading (batch) dimensions.
    """
    xs = x.shape if isinstance(x, BCOO) else np.shape(x)
    ys = y.shape if isinstance(y, BCOO) else np.shape(y)
    if not xs or not ys:
        raise ValueError(f"matmul: inputs must not be scalars (0-d), got shapes {xs} and {ys}")
    lc, rc = len(xs) - 1, 0 if len(ys) == 1 else len(ys) - 2
    if len(xs) == 1 or len(ys) == 1 or len(xs) == len(ys) == 2:
        batch = 0
    elif len(xs) == len(ys):
        batch = len(xs) - 2
    elif len(xs) == 2 or len(ys) == 2:
        batch = None  # the 2-D operand is broadcast: no dot batch dimensions
    else:
        raise NotImplementedError(
            "sparse matmul broadcasting batch dimensions of different "
            f"ranks is not supported; got shapes {xs} and {ys}"
        )
    dn = ((lc,), (rc,)), (tuple(range(batch or 0)), tuple(range(batch or 0)))
    out = bcoo_dot_general(x, y, dimension_numbers=dn)
    if batch is None and len(ys) > 2:
        # dot_general gave (x's row, *y's batch, y's column): move the row after the batch
        perm = (*range(1, len(ys) - 1), 0, len(ys) - 1)
        out = (
            bcoo_transpose(out, permutation=perm)
            if isinstance(out, BCOO)
            else jnp.transpose(out, perm)
        )
    return out

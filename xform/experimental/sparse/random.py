"""Random sparse arrays, as ``jax.experimental.sparse.random``."""

import math
import operator

import numpy as np

from xform import dtypes, random
from xform import numpy as jnp
from xform.api.batching import vmap
from xform.experimental.sparse.bcoo import BCOO

__all__ = ["random_bcoo"]


def random_bcoo(
    key,
    shape,
    *,
    dtype=None,
    indices_dtype=None,
    nse=0.2,
    n_batch=0,
    n_dense=0,
    unique_indices=True,
    sorted_indices=False,
    generator=random.uniform,
    **kwds,
):
    """A random BCOO array: random positions, values from ``generator``.

    Args:
      key: the PRNG key.
      shape: the array's shape.
      dtype: the values' dtype (default float).
      indices_dtype: the indices' dtype (default int).
      nse: the number of stored entries per batch, or, if between 0 and 1, that fraction of
        the sparse size (rounded up).
      n_batch, n_dense: the layout.
      unique_indices: whether positions are drawn without replacement.
      sorted_indices: whether to sort the entries by index.
      generator: ``generator(key, shape=..., dtype=..., **kwds)`` draws the values.

    Returns:
      A ``BCOO`` of ``shape``; the same key gives the same array as JAX's.

    Example:
      >>> random_bcoo(xform.random.key(0), (3, 4), nse=2).nse
      2
    """
    shape = tuple(map(operator.index, shape))
    n_batch, n_dense = operator.index(n_batch), operator.index(n_dense)
    if n_batch < 0 or n_dense < 0 or n_batch + n_dense > len(shape):
        raise ValueError(f"Invalid n_batch={n_batch}, n_dense={n_dense} for shape={shape}")
    n_sparse = len(shape) - n_batch - n_dense
    batch_shape = shape[:n_batch]
    sparse_shape = shape[n_batch : n_batch + n_sparse]
    dense_shape = shape[n_batch + n_sparse :]
    sparse_size = math.prod(sparse_shape)
    if not 0 <= nse < sparse_size:
        raise ValueError(f"got nse={nse}, expected to be between 0 and {sparse_size}")
    if 0 < nse < 1:
        nse = int(math.ceil(nse * sparse_size))
    nse = operator.index(nse)
    indices_dtype = np.dtype(indices_dtype or dtypes.default_int())
    if sparse_size > np.iinfo(indices_dtype).max:
        raise ValueError(
            f"indices_dtype={indices_dtype} does not have enough range to "
            f"generate sparse indices of size {sparse_size}."
        )

    def positions(k):
        # distinct flat positions (a prefix of a permutation) unless repeats are allowed
        flat = random.choice(k, sparse_size, shape=(nse,), replace=not unique_indices)
        coords = jnp.unravel_index(flat.astype(indices_dtype), sparse_shape)
        return jnp.stack([c.astype(indices_dtype) for c in coords], axis=1)

    # one key for the values, then one per batch for the positions (JAX's order)
    keys = random.split(key, math.prod(batch_shape) + 1)
    data = generator(
        keys[0],
        shape=(*batch_shape, nse, *dense_shape),
        dtype=dtype or dtypes.default_float(),
        **kwds,
    )
    if sparse_shape:
        indices = vmap(positions)(keys[1:])
    else:
        indices = jnp.zeros((len(keys) - 1, nse, 0), indices_dtype)
    mat = BCOO((data, indices.reshape(*batch_shape, nse, n_sparse)), shape=shape)
    return mat.sort_indices() if sorted_indices else mat

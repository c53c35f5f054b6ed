"""``xform.experimental.sparse``: JAX's ``jax.experimental.sparse`` on xform.

Sparse arrays in the BCOO (batched coordinate) and BCSR (batched compressed row) layouts,
their operations as compositions of xform's primitives, and ``sparsify``, which runs
``xform.numpy`` code on them. The modules: ``_core``, ``_dot`` and ``_structural`` (the BCOO
layout's operations on bare buffers), ``bcoo`` (the class, products, sums),
``bcoo_structural`` (reshape, slice, concatenate, ...), ``bcsr``, ``api`` (``empty``,
``eye``), ``transform`` (sparsify, sparse-aware grad and jacobians).
"""

from xform.experimental.sparse import (  # noqa: F401
    bcoo,
    bcoo_structural,
    bcsr,
    random,
    transform,
)
from xform.experimental.sparse._base import (  # noqa: F401
    CuSparseEfficiencyWarning,
    JAXSparse,
    SparseEfficiencyError,
    SparseEfficiencyWarning,
)
from xform.experimental.sparse.api import empty, eye  # noqa: F401
from xform.experimental.sparse.bcoo import (  # noqa: F401
    BCOO,
    bcoo_dot_general,
    bcoo_dot_general_sampled,
    bcoo_extract,
    bcoo_fromdense,
    bcoo_multiply_dense,
    bcoo_multiply_sparse,
    bcoo_reduce_sum,
    bcoo_sum_duplicates,
    bcoo_todense,
    bcoo_transpose,
)
from xform.experimental.sparse.bcoo_structural import (  # noqa: F401
    bcoo_broadcast_in_dim,
    bcoo_concatenate,
    bcoo_dynamic_slice,
    bcoo_reshape,
    bcoo_rev,
    bcoo_slice,
    bcoo_sort_indices,
    bcoo_squeeze,
    bcoo_update_layout,
)
from xform.experimental.sparse.bcsr import (  # noqa: F401
    BCSR,
    bcsr_broadcast_in_dim,
    bcsr_concatenate,
    bcsr_dot_general,
    bcsr_extract,
    bcsr_fromdense,
    bcsr_sum_duplicates,
    bcsr_todense,
)
from xform.experimental.sparse.random import random_bcoo  # noqa: F401
from xform.experimental.sparse.transform import (  # noqa: F401
    grad,
    jacfwd,
    jacobian,
    jacrev,
    sparsify,
    todense,
    value_and_grad,
)

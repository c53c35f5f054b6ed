"""``xform.lax.linalg``: JAX's ``jax.lax.linalg``, the linear-algebra primitives (decompositions
and solves on LAPACK kernels), with their names and signatures."""

from xform.primitives.linalg import *  # noqa: F403
from xform.primitives.linalg import (  # noqa: F401
    cholesky_p,
    lu_p,
    lu_pivots_to_permutation_p,
    triangular_solve_p,
    tridiagonal_solve_p,
)

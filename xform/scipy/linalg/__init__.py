"""``xform.scipy.linalg``: JAX's ``jax.scipy.linalg`` as compositions of xform primitives.

The factorizations come from ``xform.lax.linalg`` (LAPACK kernels under ``jit``). Everything
else is written here in ``xform.numpy`` and ``xform.lax``: the special matrices, the matrix
exponential (Padé approximants with scaling and squaring), the matrix square root and
``funm`` (Schur forms), Sylvester's equation (Bartels-Stewart) and the tridiagonal
eigensolver (bisection on Sturm counts, inverse iteration), so each works eagerly, under
``jit`` and under the transformations.

Arguments that SciPy has and JAX ignores (``overwrite_*``, ``check_finite``, ``lwork``,
``debug``, ``turbo``, ``lapack_driver``) are accepted and ignored here too. Leading batch
dimensions are accepted wherever JAX accepts them; they broadcast as in ``jnp.vectorize``.

The package hands on the names of its modules: ``_decompositions`` (factorizations and
solves), ``_special_matrices`` and ``_matfuncs`` (matrix functions, Sylvester, polar,
tridiagonal eigh).
"""

from xform.scipy.linalg import _decompositions, _matfuncs, _special_matrices
from xform.scipy.linalg._decompositions import *  # noqa: F403
from xform.scipy.linalg._matfuncs import *  # noqa: F403
from xform.scipy.linalg._special_matrices import *  # noqa: F403

__all__ = _decompositions.__all__ + _matfuncs.__all__ + _special_matrices.__all__

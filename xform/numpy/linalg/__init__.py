"""``xform.numpy.linalg``: jax.numpy.linalg's functions, as compositions of the decompositions
in ``xform.lax.linalg`` (LU, Cholesky, QR, eigh, eig, SVD on LAPACK kernels) and of
``xform.numpy``.

Where JAX gives a function its own derivative, so do we, with ``custom_jvp``: ``solve``
differentiates through the LU factors it already has (``dx = A^-1 (db - dA x)``);
``slogdet``'s log-determinant has the derivative ``trace(A^-1 dA)`` and its sign none;
``det``'s derivative is the adjugate form, defined for singular matrices too; ``pinv``'s is
the Golub-Pereyra formula. The rules call plain LU solves on their tangents, never another
custom-derivative function, so the tangent program stays made of linear primitives that
reverse mode can transpose.

Integer and boolean inputs are promoted to floats (``promote_dtypes_inexact``) wherever
jax.numpy promotes them; the shape-only helpers (``matmul``, ``matrix_transpose``,
``outer``, ...) keep their input's dtype, as in JAX.

The package hands on the names of its modules: ``_decompositions`` (solves, determinants,
decompositions), ``_products`` and ``_norms`` (norms, ``matrix_rank``, ``pinv``, ``lstsq``).
"""

from xform.numpy.linalg import _decompositions, _norms, _products
from xform.numpy.linalg._decompositions import *  # noqa: F403
from xform.numpy.linalg._norms import *  # noqa: F403
from xform.numpy.linalg._products import *  # noqa: F403

__all__ = _decompositions.__all__ + _products.__all__ + _norms.__all__

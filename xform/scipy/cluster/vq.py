"""``xform.scipy.cluster.vq``, as ``jax.scipy.cluster.vq``: vector quantisation."""

from xform import numpy as xnp
from xform.numpy._promote import check_arraylike, promote_dtypes_inexact


def vq(obs, code_book, check_finite=True):
    """The nearest code in ``code_book`` for each observation, as ``scipy.cluster.vq.vq``.

    Args:
      obs: observations, shape ``(M, N)`` (or ``(M,)``: length-1 observations).
      code_book: codes, shape ``(K, N)`` (or ``(K,)``), the same rank as ``obs``.
      check_finite: unused, as in JAX.

    Returns:
      ``(code, dist)``: the index of the nearest code per observation (int, ``(M,)``) and
      the Euclidean distance to it (float, ``(M,)``).

    Example:
      >>> vq(xnp.array([[1.1, 2.1]]), xnp.array([[1., 2.], [4., 5.]]))
    """
    del check_finite
    check_arraylike("scipy.cluster.vq.vq", obs, code_book)
    obs, code_book = promote_dtypes_inexact(obs, code_book)
    if obs.ndim != code_book.ndim:
        raise ValueError(
            "vq: observation and code_book should have the same rank, got "
            f"obs of shape {obs.shape} and code_book of shape {code_book.shape}"
        )
    if obs.ndim == 1:
        obs, code_book = obs[:, None], code_book[:, None]
    if obs.ndim != 2:
        raise ValueError(
            f"vq: ndim different than 1 or 2 are not supported, got obs of shape {obs.shape}"
        )
    dist = xnp.linalg.norm(obs[:, None, :] - code_book[None, :, :], axis=-1)
    code = xnp.argmin(dist, axis=-1)
    return code, xnp.take_along_axis(dist, code[:, None], axis=-1)[:, 0]

"""The products of ``xform.numpy.linalg`` (``matmul``, ``multi_dot``, ``matrix_power``,
``tensordot``, ``vecdot``, ``outer``, ``cross``, ``diagonal``, ``trace``, ...).
"""

import math
import operator

from xform.lax import _names as lax
from xform.numpy import _contractions, _shape, _ufuncs
from xform.numpy._creation import eye
from xform.numpy._promote import (
    aval_of,
)
from xform.numpy._reductions import canonicalize_axis
from xform.numpy._staged import staged
from xform.numpy.linalg._decompositions import (
    _arrays,
    _dtype_of,
    _shape_of,
    inv,
)

__all__ = [
    "cross",
    "diagonal",
    "matmul",
    "matrix_power",
    "matrix_transpose",
    "multi_dot",
    "outer",
    "tensordot",
    "trace",
    "vecdot",
]


# --------------------------------------------------------------------------- products


def matmul(x1, x2, /, *, precision=None, preferred_element_type=None):
    """Matrix product with batching over leading dimensions (``x1 @ x2``).

    Example:
      >>> matmul(jnp.ones((2, 3)), jnp.ones((3, 4))).shape  # (2, 4)
    """
    x1, x2 = _arrays("matmul", x1, x2)
    return _contractions.matmul(
        x1, x2, precision=precision, preferred_element_type=preferred_element_type
    )


def tensordot(x1, x2, /, *, axes=2, precision=None, preferred_element_type=None, out_sharding=None):
    """Contract ``axes`` (a count, or a pair of axis sequences) of ``x1`` with ``x2``.

    Example:
      >>> tensordot(jnp.ones((2, 3)), jnp.ones((3, 4)), axes=1).shape  # (2, 4)
    """
    if out_sharding is not None:
        raise NotImplementedError("xform.numpy.linalg.tensordot: out_sharding is not supported")
    x1, x2 = _arrays("tensordot", x1, x2)
    return _contractions.tensordot(
        x1, x2, axes, precision=precision, preferred_element_type=preferred_element_type
    )


def vecdot(x1, x2, /, *, axis=-1, precision=None, preferred_element_type=None):
    """The dot product of vectors along ``axis``, conjugating ``x1``, with broadcasting.

    Example:
      >>> vecdot(jnp.ones((2, 3)), jnp.arange(3.))  # [3., 3.]
    """
    x1, x2 = _arrays("vecdot", x1, x2)
    return _contractions.vecdot(
        x1, x2, axis=axis, precision=precision, preferred_element_type=preferred_element_type
    )


def outer(x1, x2, /):
    """The outer product of two 1-D arrays.

    Example:
      >>> outer(jnp.array([1, 2]), jnp.array([1, 10, 100]))  # [[1, 10, 100], [2, 20, 200]]
    """
    x1, x2 = _arrays("outer", x1, x2)
    n1, n2 = aval_of(x1).ndim, aval_of(x2).ndim
    if n1 != 1 or n2 != 1:
        raise ValueError(
            f"outer: input arrays must be one-dimensional, but they are x1.ndim={n1} x2.ndim={n2}"
        )
    return _ufuncs.multiply(lax.expand_dims(x1, (1,)), lax.expand_dims(x2, (0,)))


def cross(x1, x2, /, *, axis=-1):
    """The cross product of 3-vectors along ``axis`` (with broadcasting).

    Example:
      >>> cross(jnp.array([1., 0., 0.]), jnp.array([0., 1., 0.]))  # [0., 0., 1.]
    """
    x1, x2 = _arrays("cross", x1, x2)
    s1, s2 = _shape_of(x1), _shape_of(x2)
    a1 = canonicalize_axis(axis, len(s1), "linalg.cross")
    a2 = canonicalize_axis(axis, len(s2), "linalg.cross")
    if s1[a1] != 3 or s2[a2] != 3:
        raise ValueError(
            f"cross: both input arrays must be (arrays of) 3-dimensional "
            f"vectors, but they have x1.shape[axis]={s1[a1]} and "
            f"x2.shape[axis]={s2[a2]}"
        )
    a = _shape.moveaxis(x1, axis, -1)
    b = _shape.moveaxis(x2, axis, -1)
    u = [a[..., i] for i in range(3)]
    v = [b[..., i] for i in range(3)]
    sub, mul = _ufuncs.subtract, _ufuncs.multiply
    c = _shape.stack(
        [
            sub(mul(u[1], v[2]), mul(u[2], v[1])),
            sub(mul(u[2], v[0]), mul(u[0], v[2])),
            sub(mul(u[0], v[1]), mul(u[1], v[0])),
        ]
    )
    return _shape.moveaxis(c, 0, axis)


def _chain_order(dims):
    """The cheapest parenthesisation of a matrix chain with sizes ``dims`` (matrix ``i`` is
    ``dims[i] x dims[i + 1]``): ``split[i][j]`` is where the product of ``i..j`` splits."""
    n = len(dims) - 1
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = math.inf
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if c < cost[i][j]:
                    cost[i][j], split[i][j] = c, k
    return split


def multi_dot(arrays, *, precision=None):
    """The product of a chain of matrices, multiplied in the cheapest order; the first and
    last may be vectors.

    Example:
      >>> multi_dot([jnp.ones(3), jnp.ones((3, 4)), jnp.ones(4)])  # 12.
    """
    arrs = _arrays("multi_dot", *arrays)
    if len(arrs) < 2:
        raise ValueError(f"multi_dot requires at least two arrays; got len(arrays)={len(arrs)}")
    shapes = [_shape_of(a) for a in arrs]
    if not (
        len(shapes[0]) in (1, 2)
        and len(shapes[-1]) in (1, 2)
        and all(len(s) == 2 for s in shapes[1:-1])
    ):
        raise ValueError(
            "multi_dot: input arrays must all be two-dimensional, except for the "
            "first and last array which may be 1 or 2 dimensional. Got array "
            f"shapes {shapes}"
        )
    if any(a[-1] != b[0] for a, b in zip(shapes[:-1], shapes[1:], strict=True)):
        raise ValueError(
            "multi_dot: last dimension of each array must match first dimension "
            f"of following array. Got array shapes {shapes}"
        )
    first_vec, last_vec = len(shapes[0]) == 1, len(shapes[-1]) == 1
    if first_vec:
        arrs[0] = lax.expand_dims(arrs[0], (0,))
    if last_vec:
        arrs[-1] = lax.expand_dims(arrs[-1], (1,))
    dims = [_shape_of(arrs[0])[0]] + [_shape_of(a)[1] for a in arrs]
    split = _chain_order(dims)

    def product(i, j):
        if i == j:
            return arrs[i]
        k = split[i][j]
        return _contractions.matmul(product(i, k), product(k + 1, j), precision=precision)

    out = product(0, len(arrs) - 1)
    squeeze = tuple(d for d, vec in ((0, first_vec), (1, last_vec)) if vec)
    return lax.squeeze(out, squeeze) if squeeze else out


def matrix_transpose(x, /):
    """Swap the last two axes.

    Example:
      >>> matrix_transpose(jnp.ones((5, 2, 3))).shape  # (5, 3, 2)
    """
    (x,) = _arrays("matrix_transpose", x)
    ndim = aval_of(x).ndim
    if ndim < 2:
        raise ValueError(f"matrix_transpose requires at least 2 dimensions; got ndim={ndim}")
    return lax.transpose(x, (*range(ndim - 2), ndim - 1, ndim - 2))


def diagonal(x, /, *, offset=0):
    """The ``offset`` diagonal of each matrix (over the last two axes).

    Example:
      >>> diagonal(jnp.arange(4.).reshape(2, 2))  # [0., 3.]
    """
    (x,) = _arrays("diagonal", x)
    return _contractions.diagonal(x, offset=offset, axis1=-2, axis2=-1)


def trace(x, /, *, offset=0, dtype=None):
    """The sum along the ``offset`` diagonal of each matrix.

    Example:
      >>> trace(jnp.eye(3))  # 3.
    """
    (x,) = _arrays("trace", x)
    return _contractions.trace(x, offset=offset, axis1=-2, axis2=-1, dtype=dtype)


@staged("matrix_power", static_argnames=("n",))
def matrix_power(a, n):
    """``a`` raised to the integer power ``n`` by repeated squaring (``n < 0`` inverts).

    Example:
      >>> matrix_power(jnp.array([[1., 1.], [0., 1.]]), 3)  # [[1., 3.], [0., 1.]]
    """
    (arr,) = _arrays("matrix_power", a)
    shape = _shape_of(arr)
    if len(shape) < 2:
        raise TypeError(
            f"{len(shape)}-dimensional array given. Array must be at least two-dimensional"
        )
    if shape[-2] != shape[-1]:
        raise TypeError("Last 2 dimensions of the array must be square")
    try:
        n = operator.index(n)
    except TypeError as err:
        raise TypeError(f"exponent must be an integer, got {n}") from err
    if n == 0:
        return _shape.broadcast_to(eye(shape[-1], dtype=_dtype_of(arr)), shape)
    if n < 0:
        arr, n = inv(arr), -n
    if n == 1:
        return arr
    if n == 2:
        return _contractions.matmul(arr, arr)
    if n == 3:
        return _contractions.matmul(_contractions.matmul(arr, arr), arr)
    power, result = None, None
    while n > 0:
        power = arr if power is None else _contractions.matmul(power, power)
        n, bit = divmod(n, 2)
        if bit:
            result = power if result is None else _contractions.matmul(result, power)
    return result

"""``ravel_pytree``: a pytree of arrays as one flat vector, and the function that undoes it.

Written with xform's own ops, so the vector and its ``unravel`` work under ``jit``, ``grad``
and ``vmap``. Leaves of several dtypes are promoted to their common dtype, and ``unravel``
casts each piece back; with one dtype ``unravel`` keeps whatever dtype it is given.
"""

import numpy as np

from xform import dtypes, lax
from xform import numpy as jnp
from xform.pytree import tree_flatten, tree_unflatten


def ravel_pytree(pytree):
    """Ravel (flatten) a pytree of arrays and scalars into a 1-D array.

    Args:
      pytree: a pytree of arrays and scalars.

    Returns:
      ``(flat, unravel)``: the leaves raveled and concatenated in tree order, in the dtype
      their promotion gives (float32 ``[0]`` for a tree with no leaves), and a function from
      such a vector back to a pytree of ``pytree``'s structure, shapes and dtypes. ``unravel``
      is hashable (equal for equal trees), so it can be a static argument.

    Example:
      >>> flat, unravel = ravel_pytree({"a": 1.0, "b": (jnp.ones(2), 3)})
      >>> flat
      Array([1., 1., 1., 3.], dtype=float32)
      >>> unravel(flat)["b"][1]
      Array(3, dtype=int32)
    """
    leaves, treedef = tree_flatten(pytree)
    if not leaves:
        return lax.full((0,), 0, dtypes.float32), _Unravel(treedef, (), (), None, None)
    from_dtypes = tuple(jnp.result_type(x) for x in leaves)
    to_dtype = dtypes.result_type(*from_dtypes)
    sizes = tuple(int(np.size(x)) for x in leaves)
    shapes = tuple(np.shape(x) for x in leaves)
    if all(d == to_dtype for d in from_dtypes):
        # One dtype: no casts, so unravel takes a vector of any dtype (a tangent, a cotangent).
        flat = lax.concatenate([jnp.ravel(x) for x in leaves], 0)
        return flat, _Unravel(treedef, sizes, shapes, None, None)
    flat = lax.concatenate([jnp.ravel(lax.convert_element_type(x, to_dtype)) for x in leaves], 0)
    return flat, _Unravel(treedef, sizes, shapes, from_dtypes, to_dtype)


class _Unravel:
    """The inverse of one ``ravel_pytree``: a 1-D array back to the pytree."""

    __slots__ = ("treedef", "sizes", "shapes", "from_dtypes", "to_dtype")

    def __init__(self, treedef, sizes, shapes, from_dtypes, to_dtype):
        self.treedef = treedef
        self.sizes = sizes
        self.shapes = shapes
        self.from_dtypes = from_dtypes  # None: one dtype, no casts
        self.to_dtype = to_dtype

    def _key(self):
        return (self.treedef, self.sizes, self.shapes, self.from_dtypes, self.to_dtype)

    def __eq__(self, other):
        return type(other) is _Unravel and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def __repr__(self):
        return f"unravel_pytree({self.treedef})"

    def __call__(self, flat):
        if not self.sizes:
            return tree_unflatten(self.treedef, [])
        shape, dtype = np.shape(flat), jnp.result_type(flat)
        if self.from_dtypes is not None and dtype != self.to_dtype:
            raise TypeError(
                f"unravel function given array of dtype {dtype}, but expected dtype {self.to_dtype}"
            )
        if len(shape) != 1 or shape[0] != sum(self.sizes):
            raise ValueError(
                f"unravel function given array of shape {shape}, but expected "
                f"shape ({sum(self.sizes)},): the sizes of the leaves are "
                f"{list(self.sizes)}"
            )
        chunks = lax.split(flat, self.sizes)
        leaves = [jnp.reshape(c, s) for c, s in zip(chunks, self.shapes, strict=True)]
        if self.from_dtypes is not None:
            # Complex to real keeps the real part, silently, as JAX's unravel does.
            leaves = [
                lax.convert_element_type(
                    jnp.real(x) if dtypes.is_complex(x.dtype) and not dtypes.is_complex(d) else x, d
                )
                for x, d in zip(leaves, self.from_dtypes, strict=True)
            ]
        return tree_unflatten(self.treedef, leaves)

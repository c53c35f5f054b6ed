"""``lax.associative_scan``: a composition of slices, pads and the user's combining
function (JAX's parallel prefix scan), so its derivatives and batching come from theirs.
"""

from xform import pytree
from xform.core import (
    get_aval,
)
from xform.primitives.base import canonicalize_axis
from xform.primitives.indexing import slice_in_dim
from xform.primitives.structural import (
    concatenate,
    expand_dims,
    reshape,
    rev,
)
from xform.traceback_util import api_boundary

__all__ = ["associative_scan"]


# --------------------------------------------------------------------------- associative_scan


@api_boundary
def associative_scan(fn, elems, reverse=False, axis=0):
    """Inclusive prefix scan of ``elems`` along ``axis`` under the associative ``fn``:
    ``[a, fn(a, b), fn(fn(a, b), c), ...]`` (with ``reverse``, the suffixes instead).

    ``elems`` is a pytree of arrays sharing the length of ``axis``; ``fn(a, b)`` takes and
    returns pytrees like ``elems`` and must work elementwise over whole arrays (its
    arguments are slices of ``elems`` along ``axis``). This is no primitive: it is the
    parallel (Blelloch) prefix scan written with ``slice``, ``concatenate``, ``reshape`` and
    ``fn``, so ``jit``, ``grad`` and ``vmap`` see ordinary operations. Depth ``O(log n)``,
    ``O(n)`` applications of ``fn`` (on shrinking arrays), as in JAX.
    """
    if not callable(fn):
        raise TypeError("lax.associative_scan: fn argument should be callable.")
    leaves, tree = pytree.tree_flatten(elems)
    if not leaves:
        return elems
    avals = [get_aval(x) for x in leaves]
    axis = canonicalize_axis(axis, avals[0].ndim, "lax.associative_scan")
    n = avals[0].shape[axis]
    if any(a.ndim <= axis or a.shape[axis] != n for a in avals[1:]):
        raise ValueError(
            "Array inputs to associative_scan must have the same first "
            f"dimension. (saw: {[a.shape for a in avals]})"
        )

    def combine(a, b):
        out = pytree.tree_leaves(fn(pytree.tree_unflatten(tree, a), pytree.tree_unflatten(tree, b)))
        if len(out) != len(a):
            raise TypeError(
                f"lax.associative_scan: fn must return {len(a)} arrays, like its "
                f"inputs; it returned {len(out)}"
            )
        return out

    def part(xs, start, stop=None, stride=1):
        return [slice_in_dim(x, start, stop, stride, axis) for x in xs]

    def interleave(evens, odds):
        # [e0, o0, e1, o1, ...]: the two stacked along a new axis after ``axis``, merged.
        # (A reshape rather than JAX's sum of two interior-padded arrays, which turns -0.0
        # into 0.0.) ``evens`` may be one longer; its last element goes on the end.
        m = get_aval(odds).shape[axis]
        head = evens if get_aval(evens).shape[axis] == m else slice_in_dim(evens, 0, m, 1, axis)
        pairs = concatenate(
            [expand_dims(head, (axis + 1,)), expand_dims(odds, (axis + 1,))], axis + 1
        )
        shape = get_aval(odds).shape
        out = reshape(pairs, shape[:axis] + (2 * m,) + shape[axis + 1 :])
        if head is evens:
            return out
        return concatenate([out, slice_in_dim(evens, m, m + 1, 1, axis)], axis)

    def prefix(xs):
        # Results at odd positions: the scan of the pairwise combined elements (recursion);
        # at even positions > 0: the preceding odd result combined with the element there.
        size = get_aval(xs[0]).shape[axis]
        if size < 2:
            return xs
        odd = prefix(combine(part(xs, 0, size - 1, 2), part(xs, 1, None, 2)))
        first = part(xs, 0, 1)
        if size < 3:
            even = first
        else:
            num_odd = size // 2
            prev = odd if size % 2 else part(odd, 0, num_odd - 1)
            later = combine(prev, part(xs, 2, None, 2))
            even = [concatenate([f, e], axis) for f, e in zip(first, later, strict=True)]
        return [interleave(e, o) for e, o in zip(even, odd, strict=True)]

    if reverse:
        leaves = [rev(x, (axis,)) for x in leaves]
    out = prefix(leaves)
    if reverse:
        out = [rev(x, (axis,)) for x in out]
    return pytree.tree_unflatten(tree, out)

"""Products and contractions (dot, matmul, vdot, inner, outer, tensordot, einsum, trace,
diagonal), all lowered to ``dot_general`` plus transposes, reshapes and reductions.
"""

import builtins
import operator
import string

from xform import dtypes, lax
from xform.numpy._promote import (
    _canonical_dtype,
    asarray,
    aval_of,
    broadcast_shapes,
    broadcast_to_shape,
    check_arraylike,
    convert,
    result_type,
)
from xform.numpy._reductions import canonicalize_axis
from xform.numpy._reductions import sum as sum_
from xform.numpy._shape import moveaxis, ravel
from xform.numpy._ufuncs import conjugate, full_like_aval, multiply, where_

__all__ = ["dot", "matmul", "vdot", "vecdot", "inner", "outer", "tensordot", "einsum",
           "trace", "diagonal"]


def _operands(name, a, b, preferred_element_type):
    check_arraylike(name, a, b)
    common, weak = result_type(a, b, return_weak_type_flag=True)
    dtype = common
    if preferred_element_type is not None:
        dtype, weak = _canonical_dtype(preferred_element_type, name), False
        # As lax.dot_general's check (JAX's jnp functions pass the type on to it).
        if not dtypes.is_float(common) and dtype.itemsize < common.itemsize:
            raise TypeError(f"{name}: `preferred_element_type` must not be narrower than the "
                            f"original type, got preferred_element_type of {dtype} for "
                            f"result type of {common}.")
    return convert(asarray(a), common), convert(asarray(b), common), dtype, weak


def _finish(out, dtype, weak):
    return convert(out, dtype, weak)


def dot(a, b, *, precision=None, preferred_element_type=None):
    """Dot product: sum over the last axis of ``a`` and the second-to-last of ``b``."""
    a, b, dtype, weak = _operands("dot", a, b, preferred_element_type)
    a_ndim, b_ndim = aval_of(a).ndim, aval_of(b).ndim
    if a_ndim == 0 or b_ndim == 0:
        return _finish(multiply(a, b), dtype, weak)
    contract = ((a_ndim - 1,), (0,)) if b_ndim == 1 else ((a_ndim - 1,), (b_ndim - 2,))
    out = lax.dot_general(a, b, (contract, ((), ())), precision=precision)
    return _finish(out, dtype, weak)


def matmul(a, b, *, precision=None, preferred_element_type=None):
    """Matrix product with NumPy's batching rules (``a @ b``)."""
    a, b, dtype, weak = _operands("matmul", a, b, preferred_element_type)
    for i, x in enumerate((a, b)):
        if aval_of(x).ndim == 0:
            raise ValueError(f"matmul input operand {i} must have ndim at least 1, but it has "
                             "ndim 0")
    a_vec, b_vec = aval_of(a).ndim == 1, aval_of(b).ndim == 1
    if a_vec:
        a = lax.expand_dims(a, (0,))
    if b_vec:
        b = lax.expand_dims(b, (1,))
    a_shape, b_shape = aval_of(a).shape, aval_of(b).shape
    try:
        batch = broadcast_shapes(a_shape[:-2], b_shape[:-2])
    except ValueError:
        raise ValueError(f"Incompatible shapes for matmul arguments: {a_shape} and "
                         f"{b_shape}") from None
    if a_shape[-1] != b_shape[-2]:  # TypeError, as JAX's (from dot_general)
        raise TypeError(f"matmul: contracting dimensions differ: operand shapes {a_shape} "
                        f"and {b_shape} ({a_shape[-1]} != {b_shape[-2]})")
    a = broadcast_to_shape(a, batch + a_shape[-2:])
    b = broadcast_to_shape(b, batch + b_shape[-2:])
    nb = len(batch)
    dims = (((nb + 1,), (nb,)), (tuple(range(nb)), tuple(range(nb))))
    out = lax.dot_general(a, b, dims, precision=precision)
    squeeze = ((nb,) if a_vec else ()) + ((nb + 1,) if b_vec else ())
    if squeeze:
        out = lax.squeeze(out, squeeze)
    return _finish(out, dtype, weak)


def vdot(a, b, *, precision=None, preferred_element_type=None):
    """Dot product of the flattened arrays, conjugating ``a``."""
    check_arraylike("vdot", a, b)
    a = asarray(a)
    if dtypes.is_complex(aval_of(a).dtype):
        a = conjugate(a)
    return dot(ravel(a), ravel(b), precision=precision,
               preferred_element_type=preferred_element_type)


def vecdot(x1, x2, /, *, axis=-1, precision=None, preferred_element_type=None):
    """Vector dot product along ``axis`` (conjugating ``x1``), with broadcasting."""
    x1, x2, dtype, weak = _operands("vecdot", x1, x2, preferred_element_type)
    x1 = moveaxis(x1, axis, -1)
    x2 = moveaxis(x2, axis, -1)
    if dtypes.is_complex(aval_of(x1).dtype):
        x1 = conjugate(x1)
    return _finish(sum_(multiply(x1, x2), axis=-1), dtype, weak)


def inner(a, b, *, precision=None, preferred_element_type=None):
    """Sum product over the last axes of ``a`` and ``b``."""
    a, b, dtype, weak = _operands("inner", a, b, preferred_element_type)
    a_ndim, b_ndim = aval_of(a).ndim, aval_of(b).ndim
    if a_ndim == 0 or b_ndim == 0:
        return _finish(multiply(a, b), dtype, weak)
    out = lax.dot_general(a, b, (((a_ndim - 1,), (b_ndim - 1,)), ((), ())),
                          precision=precision)
    return _finish(out, dtype, weak)


def outer(a, b, out=None):
    """``a.ravel()[:, None] * b.ravel()[None, :]``."""
    if out is not None:
        raise NotImplementedError("The 'out' argument to xform.numpy.outer is not supported.")
    check_arraylike("outer", a, b)
    a, b = ravel(a), ravel(b)
    return multiply(lax.expand_dims(a, (1,)), lax.expand_dims(b, (0,)))


def tensordot(a, b, axes=2, *, precision=None, preferred_element_type=None):
    """Contract the last ``axes`` axes of ``a`` with the first of ``b`` (or given pairs)."""
    a, b, dtype, weak = _operands("tensordot", a, b, preferred_element_type)
    a_ndim, b_ndim = aval_of(a).ndim, aval_of(b).ndim
    if isinstance(axes, int) or hasattr(axes, "__index__"):
        n = int(axes)
        if n < 0 or n > builtins.min(a_ndim, b_ndim):
            raise TypeError(f"tensordot: number of contracting axes {n} must be between 0 "
                            f"and min(a.ndim, b.ndim) = {builtins.min(a_ndim, b_ndim)}")
        ca, cb = tuple(range(a_ndim - n, a_ndim)), tuple(range(n))
    elif isinstance(axes, (list, tuple)) and len(axes) == 2:
        ax_a, ax_b = axes
        ax_a = (ax_a,) if isinstance(ax_a, int) else tuple(ax_a)
        ax_b = (ax_b,) if isinstance(ax_b, int) else tuple(ax_b)
        if len(ax_a) != len(ax_b):
            raise TypeError(f"tensordot requires axes lists of equal length, got {axes}")
        ca = tuple(canonicalize_axis(i, a_ndim, "tensordot") for i in ax_a)
        cb = tuple(canonicalize_axis(i, b_ndim, "tensordot") for i in ax_b)
    else:
        raise TypeError(f"tensordot: axes must be an int or a pair of sequences, got {axes!r}")
    out = lax.dot_general(a, b, ((ca, cb), ((), ())), precision=precision)
    return _finish(out, dtype, weak)


# --------------------------------------------------------------------------- einsum


def _parse_einsum(subscripts, shapes):
    """Per-operand letter strings and the output letters, ellipses spelled out."""
    subscripts = subscripts.replace(" ", "")
    if "->" in subscripts:
        lhs, out = subscripts.split("->")
        explicit = True
    else:
        lhs, out, explicit = subscripts, None, False
    inputs = lhs.split(",")
    if len(inputs) != len(shapes):
        raise ValueError(f"einsum: subscripts {subscripts!r} name {len(inputs)} operands, got "
                         f"{len(shapes)}")
    used = set(subscripts) - set(".,->")
    for c in used:
        if c not in string.ascii_letters:
            raise ValueError(f"einsum: invalid subscript character {c!r} in {subscripts!r}")
    spare = [c for c in string.ascii_letters if c not in used]
    ell_ndim = 0
    for spec, shape in zip(inputs, shapes, strict=True):
        if "..." in spec:
            ell_ndim = builtins.max(ell_ndim, len(shape) - (len(spec) - 3))
    ell = "".join(spare[:ell_ndim])
    terms = []
    for given, shape in zip(inputs, shapes, strict=True):
        spec = given
        if "..." in spec:
            n = len(shape) - (len(spec) - 3)
            if n < 0:
                raise ValueError(f"einsum: operand of shape {shape} has fewer dimensions than "
                                 f"subscripts {spec!r}")
            spec = spec.replace("...", ell[ell_ndim - n:])
        if "." in spec:
            raise ValueError(f"einsum: invalid ellipsis in {subscripts!r}")
        if len(spec) != len(shape):
            raise ValueError(f"einsum: subscripts {spec!r} do not match an operand of rank "
                             f"{len(shape)} (shape {shape})")
        terms.append(spec)
    if explicit:
        out = out.replace("...", ell)
        for c in out:
            if not any(c in t for t in terms):
                raise ValueError(f"einsum: output subscript {c!r} does not appear in the "
                                 "inputs")
        if len(set(out)) != len(out):
            raise ValueError(f"einsum: output subscripts {out!r} repeat a letter")
    else:
        counts = {}
        for t in terms:
            for c in t:
                counts[c] = counts.get(c, 0) + 1
        out = ell + "".join(sorted(c for c, k in counts.items() if k == 1 and c not in ell))
    return terms, out


def _sum_axes(x, axes):
    if not axes:
        return x
    if aval_of(x).dtype == dtypes.bool_:
        return lax.reduce_or(x, tuple(axes))
    return lax.reduce_sum(x, tuple(axes))


def _take_diagonal(x, spec):
    """Collapse repeated letters of one operand (``ii->i``) to their diagonal."""
    while True:
        dup = next((c for c in spec if spec.count(c) > 1), None)
        if dup is None:
            return x, spec
        i = spec.index(dup)
        j = spec.index(dup, i + 1)
        shape = aval_of(x).shape
        if shape[i] != shape[j]:
            raise ValueError(f"einsum: repeated index {dup!r} has sizes {shape[i]} and "
                             f"{shape[j]}")
        mask = lax.eq(lax.broadcasted_iota(dtypes.int32, shape, i),
                      lax.broadcasted_iota(dtypes.int32, shape, j))
        x = _sum_axes(where_(mask, x, full_like_aval(x, 0)), (j,))
        spec = spec[:j] + spec[j + 1:]


def einsum(subscripts, *operands, out=None, optimize=None, precision=None,
           preferred_element_type=None):
    """Einstein summation: contractions pairwise in the order given, via ``dot_general``."""
    del optimize
    if out is not None:
        raise NotImplementedError("The 'out' argument to xform.numpy.einsum is not supported.")
    if not isinstance(subscripts, str):
        raise TypeError("einsum: only the string form of subscripts is supported")
    if not operands:
        raise ValueError("einsum: at least one operand is required")
    check_arraylike("einsum", *operands)
    if preferred_element_type is None:
        dtype, weak = result_type(*operands, return_weak_type_flag=True)
    else:
        dtype, weak = dtypes.canonicalize(preferred_element_type), False
    common = result_type(*operands)
    ops = [convert(asarray(x), common) for x in operands]
    terms, out_spec = _parse_einsum(subscripts, [aval_of(x).shape for x in ops])
    sizes = {}
    for t, x in zip(terms, ops, strict=True):
        for c, d in zip(t, aval_of(x).shape, strict=True):
            if sizes.get(c, d) != d and d != 1 and sizes[c] != 1:
                raise ValueError(f"einsum: index {c!r} has incompatible sizes {sizes[c]} and "
                                 f"{d}")
            sizes[c] = builtins.max(sizes.get(c, d), d)
    prepared = []
    for term, op in zip(terms, ops, strict=True):
        x, t = _take_diagonal(op, term)
        # Size-1 axes broadcast against their letter's size (ellipsis broadcasting).
        shape = tuple(sizes[c] for c in t)
        if aval_of(x).shape != shape:
            x = lax.broadcast_in_dim(x, shape, tuple(range(len(shape))))
        prepared.append((x, t))

    def needed_after(k):
        keep = set(out_spec)
        for _, t in prepared[k:]:
            keep |= set(t)
        return keep

    def sum_unneeded(x, t, keep):
        axes = [i for i, c in enumerate(t) if c not in keep]
        return _sum_axes(x, axes), "".join(c for c in t if c in keep)

    x, t = sum_unneeded(*prepared[0], needed_after(1))
    for k in range(1, len(prepared)):
        y, u = prepared[k]
        keep = needed_after(k + 1)
        y, u = sum_unneeded(y, u, keep | set(t))
        x, t = sum_unneeded(x, t, keep | set(u))
        shared = [c for c in t if c in u]
        batch = [c for c in shared if c in keep]
        contract = [c for c in shared if c not in keep]
        dims = ((tuple(t.index(c) for c in contract), tuple(u.index(c) for c in contract)),
                (tuple(t.index(c) for c in batch), tuple(u.index(c) for c in batch)))
        x = lax.dot_general(x, y, dims, precision=precision)
        t = ("".join(batch) + "".join(c for c in t if c not in shared)
             + "".join(c for c in u if c not in shared))
    x, t = sum_unneeded(x, t, set(out_spec))
    perm = tuple(t.index(c) for c in out_spec)
    if perm != tuple(range(len(perm))):
        x = lax.transpose(x, perm)
    return _finish(x, dtype, weak)


# --------------------------------------------------------------------------- diagonals


def diagonal(a, offset=0, axis1=0, axis2=1):
    """The ``offset`` diagonal over ``axis1``, ``axis2``, as the last axis of the result."""
    check_arraylike("diagonal", a)
    a = asarray(a)
    ndim = aval_of(a).ndim
    if ndim < 2:
        raise ValueError(f"diagonal requires an array of at least two dimensions, got shape "
                         f"{aval_of(a).shape}")
    axis1 = canonicalize_axis(axis1, ndim, "diagonal")
    axis2 = canonicalize_axis(axis2, ndim, "diagonal")
    if axis1 == axis2:
        raise TypeError("diagonal: axis1 and axis2 must be different")  # as JAX's
    a = moveaxis(a, (axis1, axis2), (-2, -1))
    shape = aval_of(a).shape
    n, m = shape[-2:]
    offset = operator.index(offset)  # TypeError for a float, as JAX
    rows = lax.broadcasted_iota(dtypes.int32, shape, len(shape) - 2)
    cols = lax.broadcasted_iota(dtypes.int32, shape, len(shape) - 1)
    mask = lax.eq(lax.add(rows, asarray(offset, dtypes.int32)), cols)
    picked = _sum_axes(where_(mask, a, full_like_aval(a, 0)), (len(shape) - 1,))
    start = builtins.max(0, -offset)
    length = builtins.max(0, builtins.min(n - start, m - builtins.max(0, offset)))
    lead = shape[:-2]
    return lax.slice(picked, (0,) * len(lead) + (start,), lead + (start + length,))


def trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    """Sum along a diagonal."""
    if out is not None:
        raise NotImplementedError("The 'out' argument to xform.numpy.trace is not supported.")
    ndim = aval_of(asarray(a)).ndim
    if canonicalize_axis(axis1, ndim, "trace") == canonicalize_axis(axis2, ndim, "trace"):
        raise ValueError(f"trace: axis1 and axis2 can not be the same, got axis1={axis1} and "
                         f"axis2={axis2}")  # ValueError here, as JAX's (diagonal: TypeError)
    return sum_(diagonal(a, offset, axis1, axis2), axis=-1, dtype=dtype)

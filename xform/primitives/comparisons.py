"""Comparisons, bitwise and logical ops, and dtype conversions, with every rule: the
elementwise primitives that the arithmetic (elementwise.py) and transcendental
(transcendental.py) ones use in their rules. Comparisons and bitwise ops have zero
derivatives; conversions are linear.
"""

import numpy as np

from xform import dtypes
from xform.core import ShapedArray, get_aval
from xform.interpret import ad, batching, transpose
from xform.interpret.batching import not_mapped
from xform.primitives.base import (
    ANY,
    BOOL,
    FLOAT,
    INT,
    elementwise,
    elementwise_abstract_eval,
    standard_primitive,
)
from xform.pytree import ArrayNode

__all__ = [
    "is_finite",
    "eq",
    "ne",
    "lt",
    "le",
    "gt",
    "ge",
    "select_n",
    "select",
]


def _bool(dtype):
    return dtypes.bool_


# --------------------------------------------------------------------------- unary

is_finite_p = elementwise("is_finite", (FLOAT,), np.isfinite, out_dtype=_bool)


def is_finite(x):
    return is_finite_p.bind(x)


# --------------------------------------------------------------------------- binary

eq_p = elementwise("eq", ANY, np.equal, out_dtype=_bool)
ne_p = elementwise("ne", ANY, np.not_equal, out_dtype=_bool)
_ORDERED = (FLOAT, INT[0], INT[1], BOOL)
lt_p = elementwise("lt", _ORDERED, np.less, out_dtype=_bool)
le_p = elementwise("le", _ORDERED, np.less_equal, out_dtype=_bool)
gt_p = elementwise("gt", _ORDERED, np.greater, out_dtype=_bool)
ge_p = elementwise("ge", _ORDERED, np.greater_equal, out_dtype=_bool)


def eq(x, y):
    return eq_p.bind(x, y)


def ne(x, y):
    return ne_p.bind(x, y)


def lt(x, y):
    return lt_p.bind(x, y)


def le(x, y):
    return le_p.bind(x, y)


def gt(x, y):
    return gt_p.bind(x, y)


def ge(x, y):
    return ge_p.bind(x, y)


# --------------------------------------------------------------------------- select_n


def _select_n_abstract_eval(which, *cases):
    if not cases:
        raise ValueError("select_n needs at least one case")
    if which.dtype != dtypes.bool_ and not dtypes.is_int(which.dtype):
        raise TypeError(f"select_n: `which` must be boolean or integer, got {which.dtype}")
    if which.dtype == dtypes.bool_ and len(cases) > 2:
        raise TypeError(
            f"select_n: a boolean `which` selects between at most 2 cases, got {len(cases)}"
        )
    first = cases[0]
    for c in cases[1:]:
        if c.shape != first.shape or c.dtype != first.dtype:
            raise TypeError(
                f"select_n: cases must have the same shape and dtype, got "
                f"{', '.join(a.str_short() for a in cases)}"
            )
    if which.shape and which.shape != first.shape:
        raise TypeError(
            f"select_n: `which` must be scalar or have the cases' shape "
            f"{first.shape}, got {which.shape}"
        )
    return [ShapedArray(first.shape, first.dtype, all(c.weak_type for c in cases))]


def _select_n_host(which, *cases):
    if which.dtype == np.bool_:
        return [np.where(which, cases[-1], cases[0])]
    return [np.choose(which, cases, mode="clip")]


select_n_p = standard_primitive("select_n", _select_n_abstract_eval, _select_n_host)


def select_n(which, *cases):
    """``cases[which]`` elementwise; ``which`` is bool (at most 2 cases) or an integer."""
    if cases and isinstance(cases[0], ArrayNode):
        return _select_elements(which, cases)
    return select_n_p.bind(which, *cases)


def select(pred, on_true, on_false):
    """``on_true`` where ``pred`` else ``on_false``."""
    return select_n(pred, on_false, on_true)


def _select_elements(which, cases):
    # Arrays whose elements are words of engine data (typed PRNG keys: ``_data`` holds each
    # key's words in a trailing axis) select whole elements, as JAX's select_n on extended
    # dtypes: ``which`` is broadcast over the words.
    datas = [c._data for c in cases]
    shape = get_aval(datas[0]).shape
    rank = get_aval(which).ndim
    if rank:
        which = batching.batch_ops["broadcast_in_dim"](which, shape, tuple(range(rank)))
    return cases[0]._with_data(select_n_p.bind(which, *datas))


# --------------------------------------------------------------------------- total order
# eq_to, le_to and lt_to compare in the total order of floats (JAX's sort comparator uses
# them).


def _total_order_key(x):
    """Integers ordered as XLA's TOTALORDER orders floats: -NaN < -inf < ... < -0 < +0 < ...
    < inf < NaN. The bits of a negative float have their magnitude bits flipped."""
    if x.dtype.kind != "f" and x.dtype.name != "bfloat16":
        return x
    bits = x.view(f"i{x.dtype.itemsize}")
    magnitude = np.array(np.iinfo(bits.dtype).max, bits.dtype)
    return bits ^ ((bits >> np.array(8 * x.dtype.itemsize - 1, bits.dtype)) & magnitude)


def _eq_to_host(x, y):
    if dtypes.is_complex(x.dtype):
        return _eq_to_host(np.real(x), np.real(y)) & _eq_to_host(np.imag(x), np.imag(y))
    return _total_order_key(x) == _total_order_key(y)


eq_to_p = standard_primitive(
    "eq_to", elementwise_abstract_eval("eq_to", ANY, _bool), lambda x, y: [_eq_to_host(x, y)]
)
le_to_p = standard_primitive(
    "le_to",
    elementwise_abstract_eval("le_to", _ORDERED, _bool),
    lambda x, y: [_total_order_key(x) <= _total_order_key(y)],
)
lt_to_p = standard_primitive(
    "lt_to",
    elementwise_abstract_eval("lt_to", _ORDERED, _bool),
    lambda x, y: [_total_order_key(x) < _total_order_key(y)],
)

# --------------------------------------------------------------------------- jvp rules

# Derivatives follow JAX's rules in jax/_src/lax/{lax,special}.py formula for formula (the
# conventions at kinks included: abs'(0) = 1, ties of max/min split the tangent half and half),
# so tangents agree with JAX's to the rounding of the kernels. Rules that need the result
# (exp, sqrt, tanh, ...) use it rather than recompute it: ``ad.defjvp_with_ans``.


def _zeros(x, shape):
    """Zeros of ``x``'s dtype and the given shape."""
    return ad.instantiate(ad.Zero(ShapedArray(shape, get_aval(x).dtype)))


def _select_n_jvp(primals, tangents):
    which, *cases = primals
    out = select_n(which, *cases)
    case_tangents = tangents[1:]
    if all(type(t) is ad.Zero for t in case_tangents):
        return [out], [ad.Zero(ad.tangent_aval(get_aval(out)))]
    case_tangents = [ad.instantiate(t) for t in case_tangents]
    return [out], [select_n(which, *case_tangents)]


for _prim in (
    is_finite_p,
    eq_p,
    ne_p,
    lt_p,
    le_p,
    gt_p,
    ge_p,
):
    ad.defjvp_zero(_prim)


ad.jvp_rules[select_n_p] = _select_n_jvp


for _prim in (
    eq_to_p,
    le_to_p,
    lt_to_p,
):
    ad.defjvp_zero(_prim)

# --------------------------------------------------------------------------- transpose rules

# The linear primitives of the family, as the JVP rules above apply them to tangents: add,
# sub, neg, real, imag, conj (defjvp_linear); mul in either operand and div in its numerator (the
# other operand a residual); select_n in its cases; convert_element_type between inexact
# dtypes. Cotangents of complex values are transposes, not adjoints (as in JAX): the
# transpose of ``t -> c * t`` is ``ct -> c * ct``.


def _select_n_transpose(ct, which, *cases):
    if transpose.is_undefined(which):
        raise ValueError(
            "select_n is not linear in `which`, so it cannot be transposed with respect to it"
        )
    if type(ct) is ad.Zero:
        return [None] + [ad.Zero(c.aval) if transpose.is_undefined(c) else None for c in cases]
    zeros = _zeros(ct, get_aval(ct).shape)
    # select_n again, not a comparison per case: the cotangent of each case is ct exactly
    # where the forward select_n took that case, whatever it does with `which` out of range.
    return [None] + [
        select_n(which, *[ct if j == i else zeros for j in range(len(cases))])
        if transpose.is_undefined(c)
        else None
        for i, c in enumerate(cases)
    ]


transpose.transpose_rules[select_n_p] = _select_n_transpose

# --------------------------------------------------------------------------- batching rules

# Unary ops act on each element wherever the batch dimension sits; n-ary ops broadcast their
# operands against each other (``defbroadcasting`` lines up the batch dimensions).
for _prim in (is_finite_p,):
    batching.defvectorized(_prim)
for _prim in (
    eq_p,
    ne_p,
    lt_p,
    le_p,
    gt_p,
    ge_p,
    eq_to_p,
    le_to_p,
    lt_to_p,
):
    batching.defbroadcasting(_prim)


def _full_shape_operands(axis, args, dims, scalar_ok):
    """Operands for ``select_n`` and ``clamp``, which take one shape, that of operand 1 (the
    first case; clamp's ``x``), except those in ``scalar_ok`` (the predicate; the bounds),
    which may also be rank 0. There is no size-1 broadcasting as in ``add``: every operand
    is batched at one dimension ``bdim`` at the full shape, except unmapped rank-0 ones in
    ``scalar_ok``, which broadcast as they are. Returns ``(operands, bdim)``."""
    ranks = [get_aval(x).ndim - (d is not not_mapped) for x, d in zip(args, dims, strict=True)]
    rank = ranks[1]
    # The batch dimension of a mapped full-shape operand, so that it need not move.
    bdim = next(
        (d for d, r in zip(dims, ranks, strict=True) if d is not not_mapped and r == rank), 0
    )
    full = get_aval(args[1]).shape
    if dims[1] is not not_mapped:
        full = full[: dims[1]] + full[dims[1] + 1 :]
    batched_shape = full[:bdim] + (axis.size,) + full[bdim:]
    out = []
    for i, (x, d, r) in enumerate(zip(args, dims, ranks, strict=True)):
        if d is not_mapped and r == 0 and i in scalar_ok:
            out.append(x)
        elif d is not_mapped:
            out.append(batching.broadcast_batch(x, axis.size, bdim))
        elif r == rank:
            out.append(batching.moveaxis(x, d, bdim))
        elif r == 0 and i in scalar_ok:  # a mapped scalar: one value per example
            out.append(batching.batch_ops["broadcast_in_dim"](x, batched_shape, (bdim,)))
        else:
            out.append(x)  # a wrong rank: the abstract eval says so
    return out, bdim


def _select_n_batch(axis, args, dims):
    args, bdim = _full_shape_operands(axis, args, dims, scalar_ok=(0,))
    return [select_n_p.bind(*args)], [bdim]


batching.batch_rules[select_n_p] = _select_n_batch

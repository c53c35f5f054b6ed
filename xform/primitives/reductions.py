"""Reduction primitives: monoid reductions over axes, argmax/argmin, cumulative reductions,
and the generic ``reduce`` with a Python reducer.

``reduce_<op>[axes]`` folds the given axes with a monoid (the combiner and its identity are
listed once, in ``MONOIDS``, and shared with the lowering); ``argmax``/``argmin`` return the
first index of the extreme value (NaN counts as the extreme, as in XLA); the cumulative
reductions ``cum<op>[axis, reverse]`` keep the shape of their operand.

Host implementations of sums and products of float16/bfloat16 follow XLA's CPU order exactly
(``_xla_ordered_reduce``: windows of 32, each folded in the half type); the other reductions
of the half types compute in float32 and round once, which is exact for max/min.
"""

import functools

import numpy as np

from xform import dtypes, pytree
from xform.core import ShapedArray, Tracer, eval_jaxpr, get_aval, is_concrete_array
from xform.interpret import ad, batching, staging, transpose
from xform.interpret.staging import trace_to_jaxpr
from xform.primitives.base import (
    ANY,
    BOOL,
    FLOAT,
    INT,
    INT_OR_BOOL,
    NUMBER,
    check_dtype,
    standard_primitive,
)
from xform.primitives.comparisons import eq, ne, select_n
from xform.primitives.elementwise import abs as abs_
from xform.primitives.elementwise import (
    add,
    bitwise_and,
    bitwise_or,
    bitwise_xor,
    convert_element_type,
    convert_element_type_p,
    div,
    mul,
    neg,
    sub,
)
from xform.primitives.elementwise import max as max_
from xform.primitives.elementwise import min as min_
from xform.primitives.indexing import slice_in_dim
from xform.primitives.structural import (
    broadcast_in_dim,
    concatenate,
    full,
    pad,
    reshape,
    rev,
    squeeze,
)
from xform.primitives.transcendental import exp, log1p

__all__ = [
    "reduce_sum",
    "reduce_prod",
    "reduce_max",
    "reduce_min",
    "reduce_and",
    "reduce_or",
    "reduce_xor",
    "argmax",
    "argmin",
    "cumsum",
    "cumprod",
    "cummax",
    "cummin",
    "cumlogsumexp",
    "reduce",
]

_HALF = (dtypes.float16, dtypes.bfloat16)


def _compute_dtype(dtype):
    """The dtype a host impl computes in: float32 for the half floats, 32-bit integers for
    int4 and kin (NumPy has no loops for them; the result wraps back), else ``dtype``."""
    if dtype in _HALF:
        return dtypes.float32
    if dtype in dtypes.NARROW_SIGNED or dtype in dtypes.NARROW_UNSIGNED:
        return dtypes.int32 if dtype in dtypes.NARROW_SIGNED else dtypes.uint32
    return dtype


# NumPy adds along a non-innermost axis (and in a cumulative sum) one element at a time in the
# operand's precision, an error that grows with the count; XLA's CPU reductions stay within a
# few ulps. Long float32 sums therefore accumulate in float64 and round once, which lands as
# close to XLA's result as its own rounding allows. Short ones keep the cheaper float32 path.
_WIDE_SUM = {dtypes.float32: dtypes.float64, dtypes.complex64: dtypes.complex128}
_WIDE_SUM_MIN_SIZE = 256


# The longest axis XLA's CPU sums sequentially (measured against jit on float16, bfloat16,
# float32 and float64, as rows and as columns); longer ones it splits in an order of its own.
_SEQUENTIAL_SUM_MAX = 32
_SEQUENTIAL_SUM_DTYPES = frozenset(
    map(
        np.dtype,
        (dtypes.float16, dtypes.bfloat16, np.float32, np.float64, np.complex64, np.complex128),
    )
)


def _sum_dtype(x, dtype):
    """The accumulation dtype of a sum over ``x`` computed in ``dtype``."""
    return _WIDE_SUM.get(dtype, dtype) if x.size >= _WIDE_SUM_MIN_SIZE else dtype


# --------------------------------------------------------------------------- monoids


def _max_identity(dtype):
    if dtype == dtypes.bool_:
        return False
    if dtypes.is_inexact(dtype):  # the lowest finite value where there is no infinity
        return -np.inf if dtypes.supports_inf(dtype) else dtypes.finfo(dtype).min
    return dtypes.iinfo(dtype).min


def _min_identity(dtype):
    if dtype == dtypes.bool_:
        return True
    if dtypes.is_inexact(dtype):
        return np.inf if dtypes.supports_inf(dtype) else dtypes.finfo(dtype).max
    return dtypes.iinfo(dtype).max


def _all_ones(dtype):
    return True if dtype == dtypes.bool_ else np.array(-1).astype(dtype)[()]


# name -> (NumPy ufunc, identity(dtype)). The lowering maps the same names to StableHLO ops.
MONOIDS = {
    "add": (np.add, lambda dtype: 0),
    "mul": (np.multiply, lambda dtype: 1),
    "max": (np.maximum, _max_identity),
    "min": (np.minimum, _min_identity),
    "and": (np.bitwise_and, _all_ones),
    "or": (np.bitwise_or, lambda dtype: False if dtype == dtypes.bool_ else 0),
    "xor": (np.bitwise_xor, lambda dtype: False if dtype == dtypes.bool_ else 0),
}


@functools.cache  # read by every eager reduction
def identity(monoid, dtype):
    """The identity of ``monoid`` as a NumPy scalar of ``dtype`` (the reduction's init)."""
    return np.asarray(MONOIDS[monoid][1](dtype)).astype(dtype)[()]


# --------------------------------------------------------------------------- reduce_<op>


def _canonicalize_axes(operand, axes):
    """Axes as a sorted tuple (out-of-range ones, negative ones included, are kept for the
    abstract eval to report: lax takes no negative axes, as JAX's)."""
    if isinstance(axes, (int, np.integer)):
        axes = (axes,)
    return tuple(sorted(int(a) for a in axes))


def _lax_axis(name, axis, ndim):
    """A lax ``axis`` argument: in ``[0, ndim)``, as JAX's lax takes it (jax.numpy is where
    negative axes count from the end)."""
    axis = int(axis)
    if not 0 <= axis < ndim:
        raise ValueError(
            f"lax.{name}: invalid axis {axis} for an operand of rank {ndim}: lax "
            "takes axes in [0, rank) (no negative axes, unlike xform.numpy)"
        )
    return axis


def _reduce_abstract_eval_rule(name, kinds):
    def rule(x, *, axes):
        check_dtype(f"lax.{name}", x.dtype, kinds)
        if not all(0 <= a < x.ndim for a in axes):
            raise ValueError(
                f"lax.{name}: reduction axes {axes} contain out-of-bounds "
                f"indices for an array of shape {x.shape} (rank {x.ndim})"
            )
        if len(set(axes)) != len(axes):
            raise ValueError(
                f"lax.{name}: duplicate value in the reduction axes {axes} "
                f"(operand shape {x.shape}); list each axis once"
            )
        shape = tuple(d for i, d in enumerate(x.shape) if i not in axes)
        return [ShapedArray(shape, x.dtype, x.weak_type)]

    return rule


# XLA's CPU folds a reduction one element at a time, rounding each step to the operand's
# dtype, once every reduced axis is 32 long or shorter; before that it rewrites the reduction
# into a tree: each longer reduced axis is padded with the identity on both sides (the odd
# element at the end) to a multiple of 32 and cut into windows of 32, the shorter reduced axes
# are taken whole, each window is folded in row-major order, and the same is done to the
# window results. (Read from the optimized HLO of ``jax.jit(lax.reduce_sum)``, checked bit for
# bit on bfloat16, and on float16 over one axis, tests/test_reductions.py. A float16 tree over
# several axes can differ from XLA's in the last bit: its compiled loop does not round every
# step there.)
_TREE_WINDOW = 32


def _fold_last_axis(x, ufunc):
    """``x`` folded along its last axis one element at a time, each step rounded to its dtype
    (NumPy's float16 loops round each step; ml_dtypes' bfloat16 accumulate does not)."""
    if x.dtype == dtypes.float16:
        return ufunc.accumulate(x, axis=-1)[..., -1]
    total = x[..., 0]
    for i in range(1, x.shape[-1]):
        total = ufunc(total, x[..., i])
    return total


def _xla_ordered_reduce(x, axes, monoid):
    """A sum or product of a float16/bfloat16 ``x`` over nonempty ``axes``, in XLA's order."""
    ufunc, init = MONOIDS[monoid][0], identity(monoid, x.dtype)
    while any(x.shape[a] > _TREE_WINDOW for a in axes):
        pads, split = [], []  # each axis split into (windows, window size)
        for a, n in enumerate(x.shape):
            if a in axes and n > _TREE_WINDOW:
                extra = -n % _TREE_WINDOW
                pads.append((extra // 2, extra - extra // 2))
                split += [(n + extra) // _TREE_WINDOW, _TREE_WINDOW]
            else:
                pads.append((0, 0))
                split += [1, n] if a in axes else [n, 1]
        x = np.pad(x, pads, constant_values=init).reshape(split)
        x = x.transpose([*range(0, x.ndim, 2), *range(1, x.ndim, 2)])
        x = _fold_last_axis(x.reshape(*split[::2], -1), ufunc)
    kept = [d for a, d in enumerate(x.shape) if a not in axes]
    x = np.moveaxis(x, axes, range(x.ndim - len(axes), x.ndim)).reshape(*kept, -1)
    # Folding from the identity turns a sum of negative zeros into +0, as 0 + x does.
    return ufunc(_fold_last_axis(x, ufunc), init)


def _reduce_host_rule(monoid):
    ufunc = MONOIDS[monoid][0]

    def impl(x, *, axes):
        if monoid in ("add", "mul") and x.dtype in _HALF and axes and x.size:
            return [np.asarray(_xla_ordered_reduce(x, axes, monoid))]
        if (
            monoid == "add"
            and len(axes) == 1
            and 0 < x.shape[axes[0]] <= _SEQUENTIAL_SUM_MAX
            and x.dtype in _SEQUENTIAL_SUM_DTYPES
        ):
            # XLA's CPU adds a short axis one element at a time, rounding each partial sum
            # to the operand's dtype (float16 too): ``accumulate`` does the same, in one call.
            # Adding the identity last turns a sum of negative zeros into +0, as 0 + x does.
            if x.dtype == dtypes.bfloat16:  # (ml_dtypes' accumulate does not round each step)
                total = np.zeros(np.delete(x.shape, axes[0]), x.dtype)
                for part in np.moveaxis(x, axes[0], 0):
                    total = total + part
                return [total]
            last = (slice(None),) * axes[0] + (-1,)
            return [np.add.accumulate(x, axis=axes[0])[last] + x.dtype.type(0)]
        dtype = _compute_dtype(x.dtype)
        if monoid == "add":
            dtype = _sum_dtype(x, dtype)
        # `initial` makes empty reductions well defined (np.maximum has no identity).
        out = ufunc.reduce(
            x.astype(dtype, copy=False), axis=axes, dtype=dtype, initial=identity(monoid, dtype)
        )
        return [np.asarray(out).astype(x.dtype, copy=False)]

    return impl


def _reduction(name, monoid, kinds):
    return standard_primitive(
        name, _reduce_abstract_eval_rule(name, kinds), _reduce_host_rule(monoid)
    )


reduce_sum_p = _reduction("reduce_sum", "add", NUMBER)
reduce_prod_p = _reduction("reduce_prod", "mul", NUMBER)
reduce_max_p = _reduction("reduce_max", "max", ANY)
reduce_min_p = _reduction("reduce_min", "min", ANY)
reduce_and_p = _reduction("reduce_and", "and", INT_OR_BOOL)
reduce_or_p = _reduction("reduce_or", "or", INT_OR_BOOL)
reduce_xor_p = _reduction("reduce_xor", "xor", INT_OR_BOOL)

# primitive -> monoid name, for the lowering
REDUCTION_MONOIDS = {
    reduce_sum_p: "add",
    reduce_prod_p: "mul",
    reduce_max_p: "max",
    reduce_min_p: "min",
    reduce_and_p: "and",
    reduce_or_p: "or",
    reduce_xor_p: "xor",
}


def reduce_sum(operand, axes):
    """Sum of ``operand`` over ``axes`` (a sequence of ints; negative ones count from the end).

    Example:
      >>> reduce_sum(np.ones((2, 3), np.float32), (1,))  # [3., 3.]
    """
    return reduce_sum_p.bind(operand, axes=_canonicalize_axes(operand, axes))


def reduce_prod(operand, axes):
    """Product of ``operand`` over ``axes``."""
    return reduce_prod_p.bind(operand, axes=_canonicalize_axes(operand, axes))


def reduce_max(operand, axes):
    """Maximum of ``operand`` over ``axes`` (NaN propagates; -inf or the least integer if
    empty)."""
    return reduce_max_p.bind(operand, axes=_canonicalize_axes(operand, axes))


def reduce_min(operand, axes):
    """Minimum of ``operand`` over ``axes`` (NaN propagates; +inf or the greatest integer if
    empty)."""
    return reduce_min_p.bind(operand, axes=_canonicalize_axes(operand, axes))


def reduce_and(operand, axes):
    """Logical (bool) or bitwise (integer) AND of ``operand`` over ``axes``."""
    return reduce_and_p.bind(operand, axes=_canonicalize_axes(operand, axes))


def reduce_or(operand, axes):
    """Logical (bool) or bitwise (integer) OR of ``operand`` over ``axes``."""
    return reduce_or_p.bind(operand, axes=_canonicalize_axes(operand, axes))


def reduce_xor(operand, axes):
    """Logical (bool) or bitwise (integer) XOR of ``operand`` over ``axes``."""
    return reduce_xor_p.bind(operand, axes=_canonicalize_axes(operand, axes))


# --------------------------------------------------------------------------- argmax, argmin

_ARG_KINDS = (FLOAT, *INT, BOOL)


def _argminmax_abstract_eval_rule(name):
    def rule(x, *, axes, index_dtype):
        check_dtype(f"lax.{name}", x.dtype, _ARG_KINDS)
        if not dtypes.is_int(index_dtype):
            raise TypeError(f"lax.{name}: index_dtype must be an integer type, got {index_dtype}")
        if len(axes) != 1 or not 0 <= axes[0] < x.ndim:
            raise ValueError(
                f"lax.{name}: invalid axes {axes} for an operand of shape "
                f"{x.shape}; give one axis in [-{x.ndim}, {x.ndim})"
            )
        if x.shape[axes[0]] == 0:
            raise ValueError(
                f"lax.{name} requires a non-empty reduced dimension: operand "
                f"shape {x.shape}, axis {axes[0]}"
            )
        shape = tuple(d for i, d in enumerate(x.shape) if i != axes[0])
        return [ShapedArray(shape, index_dtype)]

    return rule


def _argminmax_host_rule(np_fn):
    def impl(x, *, axes, index_dtype):
        # np.argmax/argmin return the first NaN if any, else the first extreme: XLA's rule.
        out = np_fn(x.astype(_compute_dtype(x.dtype), copy=False), axis=axes[0])
        return [np.asarray(out).astype(index_dtype)]

    return impl


argmax_p = standard_primitive(
    "argmax", _argminmax_abstract_eval_rule("argmax"), _argminmax_host_rule(np.argmax)
)
argmin_p = standard_primitive(
    "argmin", _argminmax_abstract_eval_rule("argmin"), _argminmax_host_rule(np.argmin)
)


def _argminmax_params(name, operand, axis, index_dtype):
    axis = _lax_axis(name, axis, get_aval(operand).ndim)
    try:
        index_dtype = dtypes.canonicalize(index_dtype)
    except TypeError:
        raise TypeError(
            f"lax.{name}: index_dtype must be an integer type, got {index_dtype!r}"
        ) from None
    return dict(axes=(axis,), index_dtype=index_dtype)


def argmax(operand, axis, index_dtype):
    """Index of the first maximum of ``operand`` along ``axis``, as ``index_dtype``.

    NaN counts as greater than every number, so the first NaN wins, as in XLA.
    """
    return argmax_p.bind(operand, **_argminmax_params("argmax", operand, axis, index_dtype))


def argmin(operand, axis, index_dtype):
    """Index of the first minimum of ``operand`` along ``axis`` (the first NaN if any)."""
    return argmin_p.bind(operand, **_argminmax_params("argmin", operand, axis, index_dtype))


# --------------------------------------------------------------------------- cumulative


def _cumulative_abstract_eval_rule(name, kinds):
    def rule(x, *, axis, reverse):
        check_dtype(f"lax.{name}", x.dtype, kinds)
        if not 0 <= axis < x.ndim:
            raise ValueError(
                f"lax.{name}: axis {axis} is out of bounds for an array of shape {x.shape}"
            )
        return [ShapedArray(x.shape, x.dtype, x.weak_type)]

    return rule


def _cumulative_host_rule(accumulate):
    def impl(x, *, axis, reverse):
        dtype = _compute_dtype(x.dtype)
        if accumulate == np.add.accumulate:  # bound methods are equal, never identical
            dtype = _sum_dtype(x, dtype)
        y = x.astype(dtype, copy=False)
        if reverse:
            y = np.flip(y, axis)
        with np.errstate(all="ignore"):  # inf - inf in logaddexp, overflow: XLA is silent
            out = accumulate(y, axis=axis, dtype=dtype)
        if reverse:
            out = np.flip(out, axis)
        return [np.ascontiguousarray(out).astype(x.dtype, copy=False)]

    return impl


def _cumulative(name, monoid, kinds, accumulate):
    prim = standard_primitive(
        name, _cumulative_abstract_eval_rule(name, kinds), _cumulative_host_rule(accumulate)
    )
    CUMULATIVE_MONOIDS[prim] = monoid
    return prim


# primitive -> monoid name ("logaddexp" for cumlogsumexp), for the lowering
CUMULATIVE_MONOIDS = {}

cumsum_p = _cumulative("cumsum", "add", NUMBER, np.add.accumulate)
cumprod_p = _cumulative("cumprod", "mul", NUMBER, np.multiply.accumulate)
cummax_p = _cumulative("cummax", "max", NUMBER, np.maximum.accumulate)
cummin_p = _cumulative("cummin", "min", NUMBER, np.minimum.accumulate)
# np.logaddexp is computed stably (max + log1p(exp(-|a - b|))), as in the lowering.
cumlogsumexp_p = _cumulative("cumlogsumexp", "logaddexp", (FLOAT,), np.logaddexp.accumulate)


def _cumulative_bind(prim, operand, axis, reverse):
    axis = _lax_axis(prim.name, axis, get_aval(operand).ndim)
    return prim.bind(operand, axis=axis, reverse=bool(reverse))


def cumsum(operand, axis=0, reverse=False):
    """Cumulative sum along ``axis`` (from the end if ``reverse``).

    Example:
      >>> cumsum(np.array([1, 2, 3]))  # [1, 3, 6]
    """
    return _cumulative_bind(cumsum_p, operand, axis, reverse)


def cumprod(operand, axis=0, reverse=False):
    """Cumulative product along ``axis``."""
    return _cumulative_bind(cumprod_p, operand, axis, reverse)


def cummax(operand, axis=0, reverse=False):
    """Cumulative maximum along ``axis``."""
    return _cumulative_bind(cummax_p, operand, axis, reverse)


def cummin(operand, axis=0, reverse=False):
    """Cumulative minimum along ``axis``."""
    return _cumulative_bind(cummin_p, operand, axis, reverse)


def cumlogsumexp(operand, axis=0, reverse=False):
    """Cumulative ``log(sum(exp(x)))`` along ``axis``, computed without overflow."""
    return _cumulative_bind(cumlogsumexp_p, operand, axis, reverse)


# --------------------------------------------------------------------------- jvp rules
# The rules build tangents with the elementwise, structural and indexing wrappers.

ad.defjvp_linear(reduce_sum_p)
ad.defjvp_linear(cumsum_p)
for _prim in (reduce_and_p, reduce_or_p, reduce_xor_p, argmax_p, argmin_p):
    ad.defjvp_zero(_prim)


def _reduce_chooser_jvp(prim):
    """reduce_max/min: the tangent averaged over the positions equal to the result (JAX)."""

    def rule(primals, tangents, *, axes):
        (x,), (t,) = primals, tangents
        ans = prim.bind(x, axes=axes)
        shape = tuple(1 if i in axes else d for i, d in enumerate(get_aval(x).shape))
        t = ad.instantiate(t)
        where = convert_element_type(eq(x, reshape(ans, shape)), get_aval(t).dtype)
        return [ans], [div(reduce_sum(mul(t, where), axes), reduce_sum(where, axes))]

    return rule


ad.jvp_rules[reduce_max_p] = _reduce_chooser_jvp(reduce_max_p)
ad.jvp_rules[reduce_min_p] = _reduce_chooser_jvp(reduce_min_p)


# The rules below differentiate JAX's own evaluation orders (a pairwise tree for reduce_prod,
# a parallel prefix scan for the cumulative reductions) by hand, on (primal, tangent) pairs:
# their values, ties and zeros included, are then those of jax.jvp.


def _ones(x):
    aval = get_aval(x)
    return full(aval.shape, 1, aval.dtype)


def _mul_pair(a, b):
    (x, tx), (y, ty) = a, b
    return [mul(x, y), ad.add_tangents(mul(tx, y), mul(x, ty))]


def _balanced_eq(x, z, y):
    """1 where x == z, halved where y == z too: JAX's tie split for max and min."""
    dtype = get_aval(z).dtype
    return div(
        convert_element_type(eq(x, z), dtype), add(_ones(z), convert_element_type(eq(y, z), dtype))
    )


def _chooser_pair(op):
    def combine(a, b):
        (x, tx), (y, ty) = a, b
        z = op(x, y)
        return [z, ad.add_tangents(mul(tx, _balanced_eq(x, z, y)), mul(ty, _balanced_eq(y, z, x)))]

    return combine


def _replace_inf(x):
    aval = get_aval(x)
    return select_n(eq(x, full(aval.shape, np.inf, aval.dtype)), x, full(aval.shape, 0, aval.dtype))


def _logaddexp_pair(a, b):
    (x, tx), (y, ty) = a, b
    delta = sub(x, y)
    z = select_n(ne(delta, delta), add(max_(x, y), log1p(exp(neg(abs_(delta))))), add(x, y))
    rz = _replace_inf(z)
    return [z, add(mul(tx, exp(sub(_replace_inf(x), rz))), mul(ty, exp(sub(_replace_inf(y), rz))))]


def _reduce_prod_jvp(primals, tangents, *, axes):
    x, t = primals[0], ad.instantiate(tangents[0])
    aval = get_aval(x)
    rest = tuple(i for i in range(aval.ndim) if i not in axes)
    n = int(np.prod([aval.shape[a] for a in axes], dtype=np.int64))
    rest_shape = tuple(aval.shape[i] for i in rest)
    if n == 0:
        return [full(rest_shape, 1, aval.dtype)], [full(rest_shape, 0, get_aval(t).dtype)]
    # Reduced axes flattened to the front, then halved pairwise (padding with 1) as JAX does.
    x, t = reshape(x, (n,) + rest_shape, axes + rest), reshape(t, (n,) + rest_shape, axes + rest)
    config = [(0, 0, 0)] * (1 + len(rest))
    while n > 1:
        n1 = (n + 1) // 2
        (x1, t1), (x2, t2) = [
            [slice_in_dim(v, lo, hi) for v in (x, t)] for lo, hi in ((0, n1), (n1, None))
        ]
        if n - n1 != n1:
            config[0] = (0, 1, 0)
            x2, t2 = (
                pad(x2, np.array(1, aval.dtype), config),
                pad(t2, np.array(0, get_aval(t).dtype), config),
            )
        x, t = _mul_pair((x1, t1), (x2, t2))
        n = n1
    return [squeeze(x, (0,))], [squeeze(t, (0,))]


ad.jvp_rules[reduce_prod_p] = _reduce_prod_jvp


def _interleave(a, b, axis):
    aval, bval = get_aval(a), get_aval(b)
    same = aval.shape[axis] == bval.shape[axis]
    a_cfg, b_cfg = [(0, 0, 0)] * aval.ndim, [(0, 0, 0)] * aval.ndim
    a_cfg[axis] = (0, 1 if same else 0, 1)
    b_cfg[axis] = (1, 0 if same else 1, 1)
    zero = np.array(0, aval.dtype)
    return add(pad(a, zero, a_cfg), pad(b, zero, b_cfg))


def _associative_scan(combine, elems, axis):
    """JAX's ``associative_scan`` (lax/control_flow/loops.py), on a list of arrays."""
    n = get_aval(elems[0]).shape[axis]
    if n < 2:
        return elems
    reduced = combine(
        [slice_in_dim(e, 0, -1, stride=2, axis=axis) for e in elems],
        [slice_in_dim(e, 1, None, stride=2, axis=axis) for e in elems],
    )
    odd = _associative_scan(combine, reduced, axis)
    evens = [slice_in_dim(e, 2, None, stride=2, axis=axis) for e in elems]
    if n % 2 == 0:
        even = combine([slice_in_dim(e, 0, -1, axis=axis) for e in odd], evens)
    else:
        even = combine(odd, evens)
    even = [
        concatenate([slice_in_dim(e, 0, 1, axis=axis), r], axis)
        for e, r in zip(elems, even, strict=True)
    ]
    return [_interleave(e, o, axis) for e, o in zip(even, odd, strict=True)]


def _cumulative_jvp(combine):
    def rule(primals, tangents, *, axis, reverse):
        elems = [primals[0], ad.instantiate(tangents[0])]
        if reverse:
            elems = [rev(e, (axis,)) for e in elems]
        out = _associative_scan(combine, elems, axis)
        if reverse:
            out = [rev(e, (axis,)) for e in out]
        return [out[0]], [out[1]]

    return rule


ad.jvp_rules[cumprod_p] = _cumulative_jvp(_mul_pair)
ad.jvp_rules[cummax_p] = _cumulative_jvp(_chooser_pair(max_))
ad.jvp_rules[cummin_p] = _cumulative_jvp(_chooser_pair(min_))
ad.jvp_rules[cumlogsumexp_p] = _cumulative_jvp(_logaddexp_pair)


# --------------------------------------------------------------------------- transpose rules
# reduce_sum and cumsum are linear in their one operand; the other reductions are not.

# The structural family's transpose rules (broadcast_in_dim, pad) sum with this: it cannot
# import this module, which imports it.
ad.tangent_ops["reduce_sum"] = reduce_sum


def _reduce_sum_transpose(ct, operand, *, axes):
    aval = operand.aval
    if type(ct) is ad.Zero:
        return [ad.Zero(aval)]
    kept = tuple(i for i in range(aval.ndim) if i not in axes)
    # laid out as the operand (as JAX's: a sharded type's cotangent is typed alike)
    return [broadcast_in_dim(ct, aval.shape, kept, out_sharding=aval.sharding)]


def _cumsum_transpose(ct, operand, *, axis, reverse):
    if type(ct) is ad.Zero:
        return [ad.Zero(operand.aval)]
    # Each input reaches every output on its side of it: sum the cotangent the other way.
    return [cumsum(ct, axis, not reverse)]


transpose.transpose_rules[reduce_sum_p] = _reduce_sum_transpose
transpose.transpose_rules[cumsum_p] = _cumsum_transpose


# --------------------------------------------------------------------------- batching rules


for _prim in (*REDUCTION_MONOIDS, argmax_p, argmin_p, *CUMULATIVE_MONOIDS):
    batching.defaxes(_prim)


# --------------------------------------------------------------------------- reduce (generic)
# Its rules sit together here, in the usual order: wrapper, reduce_p, abstract eval, jvp,
# batching. There is no host impl: eagerly, the one equation is compiled with XLA.

# Traced reducers, per (computation, init avals, tree): a repeated call reuses the jaxpr, so
# eager evaluation hits the compile cache as it does in JAX.
_reducer_jaxprs = {}
_MAX_CACHED_REDUCERS = 512


def reduction_jaxpr(computation, init_avals, tree, name):
    """``computation(xs, ys)`` (pytrees of ``tree``'s structure, scalars of ``init_avals``)
    traced to a ClosedJaxpr on the flat leaves of ``xs`` then ``ys``; returns it and the
    output tree. A reducer closing over tracers is a ``NotImplementedError``, as in JAX."""
    key = (computation, tuple(init_avals), tree)
    try:
        hit = _reducer_jaxprs.get(key)
    except TypeError:  # an unhashable computation: trace it every time
        hit, key = None, None
    if hit is not None:
        return hit
    n = len(init_avals)
    out_trees = []

    def flat_computation(*args):
        xs = pytree.tree_unflatten(tree, args[:n])
        ys = pytree.tree_unflatten(tree, args[n:])
        outs, out_tree = pytree.tree_flatten(computation(xs, ys))
        out_trees.append(out_tree)
        return outs

    closed = trace_to_jaxpr(flat_computation, list(init_avals) * 2, f"tracing the {name}")
    if any(isinstance(c, Tracer) for c in closed.consts):
        raise NotImplementedError(
            f"{name} can't close over Tracers (values of an enclosing "
            "transformation): pass them as operands instead."
        )
    hit = (closed, out_trees[0])
    if key is not None:
        if len(_reducer_jaxprs) >= _MAX_CACHED_REDUCERS:  # fresh lambdas on every call
            _reducer_jaxprs.clear()
        _reducer_jaxprs[key] = hit
    return hit


def _is_intlike(dtype):
    return dtype == dtypes.bool_ or dtypes.is_int(dtype)


# reducer function -> (monoid name, reduction wrapper, dtype condition)
_MONOID_REDUCERS = {
    add: ("add", lambda: reduce_sum, None),
    mul: ("mul", lambda: reduce_prod, None),
    max_: ("max", lambda: reduce_max, None),
    min_: ("min", lambda: reduce_min, None),
    bitwise_and: ("and", lambda: reduce_and, _is_intlike),
    bitwise_or: ("or", lambda: reduce_or, _is_intlike),
    bitwise_xor: ("xor", lambda: reduce_xor, _is_intlike),
}


def monoid_of(computation, init_values, monoids=None):
    """The monoid name of ``computation`` if it is one of lax's monoid ops and its one init
    value is a concrete scalar equal to that monoid's identity (JAX's test), else None."""
    try:
        entry = _MONOID_REDUCERS.get(computation)
    except TypeError:
        return None
    if entry is None or len(init_values) != 1 or (monoids and entry[0] not in monoids):
        return None
    (x,) = init_values
    if not is_concrete_array(x):
        return None
    aval = get_aval(x)
    if aval.shape or (entry[2] is not None and not entry[2](aval.dtype)):
        return None
    value = np.asarray(x._host_value() if hasattr(x, "_host_value") else x)
    return entry[0] if bool(np.equal(value, identity(entry[0], aval.dtype))) else None


def flatten_operands_and_inits(name, operands, init_values):
    """The leaves of ``operands`` and ``init_values`` (pytrees of one structure, as the
    variadic reductions take them) and that structure; ValueError naming ``name`` if not."""
    flat_operands, operand_tree = pytree.tree_flatten(operands)
    flat_inits, init_tree = pytree.tree_flatten(init_values)
    if operand_tree != init_tree:
        raise ValueError(
            f"{name}: operands must have the same tree structure as "
            f"init_values: {operand_tree} vs. {init_tree}"
        )
    if len(flat_operands) != len(flat_inits):
        raise ValueError(
            f"{name}: must have the same total number of operands as "
            f"init_values: {len(flat_operands)} vs. {len(flat_inits)}"
        )
    return flat_operands, flat_inits, operand_tree


def reduce(operands, init_values, computation, dimensions):  # noqa: A001  (lax's name)
    """Reduce ``operands`` over ``dimensions`` with ``computation``, XLA's Reduce.

    Args:
      operands: an array or a pytree of arrays of one shape.
      init_values: scalars, a pytree of the structure of ``operands``: the identity of
        ``computation``.
      computation: ``(xs, ys) -> zs``, pytrees like ``operands``; with ``init_values`` it must
        form a monoid (associative, with that identity), else the result is undefined.
      dimensions: the dimensions to reduce.

    Returns:
      A pytree like ``operands``, each leaf without the reduced dimensions.

    Example:
      >>> reduce(np.arange(4.), 0., xform.lax.add, (0,))  # 6.0, as reduce_sum
    """
    flat_operands, flat_inits, operand_tree = flatten_operands_and_inits(
        "lax.reduce", operands, init_values
    )
    dimensions = tuple(int(d) for d in dimensions)
    monoid = monoid_of(computation, flat_inits)
    if monoid is not None:
        (operand,), (init,) = flat_operands, flat_inits
        weak = get_aval(operand).weak_type and get_aval(init).weak_type
        wrapper = _MONOID_REDUCERS[computation][1]()
        out = wrapper(operand, dimensions)
        aval = get_aval(out)
        if aval.weak_type != weak:
            out = convert_element_type_p.bind(out, new_dtype=aval.dtype, weak_type=weak)
        return out
    init_avals = [get_aval(x) for x in flat_inits]
    jaxpr, out_tree = reduction_jaxpr(
        computation, init_avals, operand_tree, "reduction computation of lax.reduce"
    )
    outs = reduce_p.bind(*flat_operands, *flat_inits, jaxpr=jaxpr, dimensions=dimensions)
    return pytree.tree_unflatten(out_tree, outs)


def _check_reducer(name, jaxpr, init_avals):
    """The reducer's jaxpr maps pairs of scalars of the init types to scalars of them."""
    outs = jaxpr.out_avals
    if len(outs) != len(init_avals) or any(
        o.shape or o.dtype != i.dtype for o, i in zip(outs, init_avals, strict=True)
    ):
        got = ", ".join(a.str_short() for a in outs)
        want = ", ".join(a.str_short() for a in init_avals)
        raise TypeError(
            f"{name}: the reduction computation must return scalars of the "
            f"init_values' types ({want}), got ({got})"
        )


def _reduce_abstract_eval(*avals, jaxpr, dimensions):
    n = len(avals) // 2
    operands, inits = avals[:n], avals[n:]
    if any(a.shape for a in inits):
        raise ValueError(f"lax.reduce found non-scalar initial value: {[a.shape for a in inits]}")
    if [a.dtype for a in operands] != [a.dtype for a in inits]:
        raise TypeError(
            "lax.reduce operand dtypes should match corresponding initial value "
            f"dtypes, got operands=({', '.join(a.str_short() for a in operands)}) "
            f"and initial_values=({', '.join(a.str_short() for a in inits)})"
        )
    shape = operands[0].shape
    if any(a.shape != shape for a in operands):
        raise ValueError(
            f"lax.reduce: operands must have one shape, got {[a.shape for a in operands]}"
        )
    if len(set(dimensions)) != len(dimensions) or any(not 0 <= d < len(shape) for d in dimensions):
        raise ValueError(
            f"lax.reduce: reduction axes {dimensions} contains out-of-bounds "
            f"or repeated indices for {operands[0].str_short()}."
        )
    _check_reducer("lax.reduce", jaxpr, inits)
    out_shape = tuple(d for i, d in enumerate(shape) if i not in dimensions)
    return [
        ShapedArray(out_shape, o.dtype, o.weak_type and i.weak_type)
        for o, i in zip(operands, inits, strict=True)
    ]


reduce_p = standard_primitive("reduce", _reduce_abstract_eval, multiple_results=True)


def vectorized_reducer(jaxpr):
    """The scalar reducer ``jaxpr`` applied elementwise to flat 1-D arrays, by vmap."""

    def apply(*args):
        size = get_aval(args[0]).shape[0]
        return batching.vmap_flat(
            lambda *xs: eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, *xs),
            batching.AxisData(None, size),
            list(args),
            [0] * len(args),
            [0] * len(jaxpr.out_avals),
        )

    return apply


def _reduce_tree(jaxpr, inits, xs):
    """JAX's evaluation order for differentiating ``reduce``: ``xs`` (the reduced dims first,
    flattened to one) halved pairwise, the odd one out padded with the init values."""
    apply = vectorized_reducer(jaxpr)
    rest = get_aval(xs[0]).shape[1:]
    m = int(np.prod(rest, dtype=np.int64))
    if get_aval(xs[0]).shape[0] == 0:
        return [full(rest, i, get_aval(i).dtype) for i in inits]
    while (n := get_aval(xs[0]).shape[0]) > 1:
        n1 = (n + 1) // 2
        xs1 = [slice_in_dim(x, 0, n1) for x in xs]
        xs2 = [slice_in_dim(x, n1, None) for x in xs]
        if n - n1 != n1:
            config = [(0, 1, 0)] + [(0, 0, 0)] * len(rest)
            xs2 = [pad(x, i, config) for x, i in zip(xs2, inits, strict=True)]
        outs = apply(*[reshape(x, (n1 * m,)) for x in xs1 + xs2])
        xs = [reshape(o, (n1,) + rest) for o in outs]
    return [reshape(x, rest) for x in xs]


def _reduce_jvp(primals, tangents, *, jaxpr, dimensions):
    n = len(primals) // 2
    xs, inits = primals[:n], primals[n:]
    if any(type(t) is not ad.Zero for t in tangents[n:]):
        raise NotImplementedError(
            "Gradient of general lax.reduce with non-zero tangents for "
            "initial values to reduction not implemented"
        )
    if all(type(t) is ad.Zero for t in tangents[:n]):
        outs = reduce_p.bind(*primals, jaxpr=jaxpr, dimensions=dimensions)
        return outs, [ad.Zero(ad.tangent_aval(get_aval(o))) for o in outs]
    shape = get_aval(xs[0]).shape
    rest = tuple(i for i in range(len(shape)) if i not in dimensions)
    count = int(np.prod([shape[d] for d in dimensions], dtype=np.int64))
    new_shape = (count,) + tuple(shape[i] for i in rest)
    perm = tuple(dimensions) + rest
    xs = [reshape(x, new_shape, perm) for x in xs]
    # integer operands (an argmax's indices) keep symbolic zero tangents
    ts = [
        reshape(ad.instantiate(t), new_shape, perm)
        if ad.is_differentiable(get_aval(x))
        else ad.Zero(ad.tangent_aval(get_aval(x)))
        for x, t in zip(xs, tangents[:n], strict=True)
    ]
    outs, touts = ad.jvp_flat(lambda *a: _reduce_tree(jaxpr, inits, list(a)), xs, ts)
    return outs, touts


ad.jvp_rules[reduce_p] = _reduce_jvp


def _reduce_batch(axis, args, dims, *, jaxpr, dimensions):
    n = len(args) // 2
    if any(d is not batching.not_mapped for d in dims[n:]):
        raise NotImplementedError("lax.reduce: vmap over the init_values is not implemented")
    xs = [batching.batch_at_front(x, d, axis.size) for x, d in zip(args[:n], dims[:n], strict=True)]
    outs = reduce_p.bind(*xs, *args[n:], jaxpr=jaxpr, dimensions=tuple(d + 1 for d in dimensions))
    return outs, [0] * n


batching.batch_rules[reduce_p] = _reduce_batch

# Type rules of plain params only (not reduce_p's jaxpr): eager ops reuse their output types.
staging.memoize_abstract_eval(
    reduce_sum_p,
    reduce_prod_p,
    reduce_max_p,
    reduce_min_p,
    reduce_and_p,
    reduce_or_p,
    reduce_xor_p,
    argmax_p,
    argmin_p,
    cumsum_p,
    cumprod_p,
    cummax_p,
    cummin_p,
    cumlogsumexp_p,
)

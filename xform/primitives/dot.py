"""``dot_general`` (and its ``dot`` wrapper): precisions, dot algorithms and every rule.

A dot takes a ``precision`` (``None``, a pair of ``Precision``, which the CPU backend ignores,
or a ``DotAlgorithm``/``DotAlgorithmPreset``, whose operand and accumulation types a dot
follows) and a ``preferred_element_type`` that widens the result type. Its NumPy host
implementation moves the operands into a canonical layout (batch, free, contracted), computes
in the result dtype (half floats in float32, as XLA's CPU backend does) and moves back.
``conv_general_dilated`` (xform/primitives/convolution.py) shares the precision handling and
the bilinear transpose.
"""

import enum
import functools
import math
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from xform import config, dtypes
from xform.core import ShapedArray, get_aval
from xform.interpret import ad, batching, transpose
from xform.interpret.batching import not_mapped
from xform.primitives.base import standard_primitive
from xform.primitives.elementwise import (
    convert_element_type,
)
from xform.primitives.sharding import bind_laid_out, full_spec, out_sharding_param, typed
from xform.primitives.structural import transpose as transpose_dims

__all__ = [
    "Precision",
    "PrecisionLike",
    "DotAlgorithm",
    "DotAlgorithmPreset",
    "DotDimensionNumbers",
    "dot_general",
    "dot",
]


_PRECISION_STRINGS = {}


class Precision(enum.Enum):
    """Precision of a contraction on accelerators (bfloat16 passes on TPU); no effect on CPU.

    Besides the members, ``Precision(s)`` takes JAX's lower-case aliases: ``'default'``,
    ``'fastest'``, ``'bfloat16'`` (DEFAULT), ``'high'``, ``'bfloat16_3x'``, ``'tensorfloat32'``
    (HIGH), ``'highest'``, ``'float32'`` (HIGHEST). ``Precision['HIGHEST']`` looks up a name.
    """

    DEFAULT = 0
    HIGH = 1
    HIGHEST = 2

    @classmethod
    def _missing_(cls, value):
        return _PRECISION_STRINGS.get(value)

    def __repr__(self):
        return f"Precision.{self.name}"

    def __str__(self):
        return self.name


_PRECISION_STRINGS.update(
    {
        "highest": Precision.HIGHEST,
        "float32": Precision.HIGHEST,
        "high": Precision.HIGH,
        "bfloat16_3x": Precision.HIGH,
        "tensorfloat32": Precision.HIGH,
        "default": Precision.DEFAULT,
        "bfloat16": Precision.DEFAULT,
        "fastest": Precision.DEFAULT,
        None: Precision.DEFAULT,
    }
)


class DotAlgorithm(NamedTuple):
    """A dot product algorithm, given as ``precision=``: the types the operands are rounded
    to, the accumulation type (which is also the result type when the algorithm is given)
    and how many components/operations emulate a higher precision.

    The CPU backend supports none but the presets listed in ``DotAlgorithmPreset``'s CPU set;
    others raise ``ValueError`` when the contraction runs, as JAX's.
    """

    lhs_precision_type: object
    rhs_precision_type: object
    accumulation_type: object
    lhs_component_count: int = 1
    rhs_component_count: int = 1
    num_primitive_operations: int = 1
    allow_imprecise_accumulation: bool = False


class DotAlgorithmPreset(enum.Enum):
    """Named dot algorithms (``LHS_RHS_ACCUM``), given as ``precision=`` or by name
    (``precision="F32_F32_F32"``). On CPU only DEFAULT, F16_F16_F16, F32_F32_F32,
    F64_F64_F64, BF16_BF16_F32, BF16_BF16_F32_X3 and BF16_BF16_F32_X6 run; the operands are
    converted to the algorithm's input types and accumulated in its accumulation type."""

    DEFAULT = enum.auto()
    ANY_F8_ANY_F8_F32 = enum.auto()
    ANY_F8_ANY_F8_F32_FAST_ACCUM = enum.auto()
    ANY_F8_ANY_F8_ANY = enum.auto()
    ANY_F8_ANY_F8_ANY_FAST_ACCUM = enum.auto()
    F16_F16_F16 = enum.auto()
    F16_F16_F32 = enum.auto()
    BF16_BF16_BF16 = enum.auto()
    BF16_BF16_F32 = enum.auto()
    BF16_BF16_F32_X3 = enum.auto()
    BF16_BF16_F32_X6 = enum.auto()
    BF16_BF16_F32_X9 = enum.auto()
    TF32_TF32_F32 = enum.auto()
    TF32_TF32_F32_X3 = enum.auto()
    F32_F32_F32 = enum.auto()
    F64_F64_F64 = enum.auto()

    def __repr__(self):
        return f"DotAlgorithmPreset.{self.name}"

    def __str__(self):
        return self.name

    @property
    def supported_lhs_types(self):
        """The input types the algorithm takes (an operand of another type is converted to
        the first), or None for any."""
        name = self.name
        if name == "DEFAULT" or name.startswith("ANY_F8"):
            return None
        if name.startswith("F16_"):
            return (dtypes.float16,)
        if name in ("BF16_BF16_BF16", "BF16_BF16_F32"):
            return (dtypes.bfloat16_dtype, dtypes.float32)
        if name == "F64_F64_F64":
            return (dtypes.float64,)
        return (dtypes.float32,)

    @property
    def supported_rhs_types(self):
        return self.supported_lhs_types

    @property
    def accumulation_type(self):
        """The accumulation type, or None where the result type decides."""
        name = self.name
        if name in ("DEFAULT", "ANY_F8_ANY_F8_ANY", "ANY_F8_ANY_F8_ANY_FAST_ACCUM"):
            return None
        return {
            "F16_F16_F16": dtypes.float16,
            "BF16_BF16_BF16": dtypes.bfloat16_dtype,
            "F64_F64_F64": dtypes.float64,
        }.get(name, dtypes.float32)

    def supported_output_types(self, lhs_dtype, rhs_dtype):
        """The result types the algorithm can produce for these operand types."""
        name = self.name
        if name.startswith("ANY_F8_ANY_F8_F32"):
            return (dtypes.float32, dtypes.float16, dtypes.bfloat16_dtype)
        if name in ("F16_F16_F32", "BF16_BF16_F32"):
            half = dtypes.float16 if name.startswith("F16") else dtypes.bfloat16_dtype
            both = np.dtype(lhs_dtype) == np.dtype(rhs_dtype) == half
            return (dtypes.float32, half) if both else (dtypes.float32,)
        acc = self.accumulation_type
        return None if acc is None else (acc,)


# The presets XLA's CPU backend runs (JAX checks this when it lowers for CPU).
_CPU_PRESETS = frozenset(
    DotAlgorithmPreset[n]
    for n in (
        "DEFAULT",
        "F16_F16_F16",
        "F32_F32_F32",
        "F64_F64_F64",
        "BF16_BF16_F32",
        "BF16_BF16_F32_X3",
        "BF16_BF16_F32_X6",
    )
)

# What ``precision=`` takes, as JAX's type alias.
PrecisionLike = (
    None
    | str
    | Precision
    | tuple[str, str]
    | tuple[Precision, Precision]
    | DotAlgorithm
    | DotAlgorithmPreset
)

# ``((lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch))``, as JAX's type alias.
DotDimensionNumbers = tuple[
    tuple[Sequence[int], Sequence[int]], tuple[Sequence[int], Sequence[int]]
]


def _one_precision(p):
    if isinstance(p, Precision):
        return p
    if isinstance(p, str) and p in _PRECISION_STRINGS:
        return _PRECISION_STRINGS[p]
    # Another library's enum with the same member names (jax.lax.Precision).
    member = getattr(p, "name", None)
    if isinstance(member, str) and member in Precision.__members__ and not isinstance(p, str):
        return Precision[member]
    return None


def canonicalize_precision(precision, name="lax.dot_general"):
    """``None``, a pair ``(Precision, Precision)`` (lhs, rhs), a ``DotAlgorithm`` or a
    ``DotAlgorithmPreset``; ``ValueError`` for anything else, as JAX's. ``None`` is the
    ``jax_default_matmul_precision`` flag's value (None when it is unset)."""
    if precision is None:
        default = config.values.default_matmul_precision
        return None if default is None else canonicalize_precision(default, name)
    if isinstance(precision, (DotAlgorithm, DotAlgorithmPreset)):
        return precision
    if isinstance(precision, str) and precision in DotAlgorithmPreset.__members__:
        return DotAlgorithmPreset[precision]
    member = getattr(precision, "name", None)  # jax.lax.DotAlgorithmPreset
    if (
        type(precision).__name__ == "DotAlgorithmPreset"
        and isinstance(member, str)
        and member in DotAlgorithmPreset.__members__
    ):
        return DotAlgorithmPreset[member]
    if isinstance(precision, (list, tuple)) and len(precision) == 2:
        pair = (_one_precision(precision[0]), _one_precision(precision[1]))
        # Two Precisions or two strings, not one of each (as JAX's).
        if None not in pair and len({isinstance(p, str) for p in precision}) == 1:
            return pair
    elif not isinstance(precision, (list, tuple)):
        p = _one_precision(precision)
        if p is not None:
            return (p, p)
    raise ValueError(
        f"{name}: precision must be None, a Precision, one of the strings "
        f"{[s for s in _PRECISION_STRINGS if s is not None]}, a pair of "
        "Precisions or of those strings, a DotAlgorithmPreset or its name, or a "
        f"DotAlgorithm; got {precision!r}"
    )


def dot_algorithm_types(precision, lhs_dtype, rhs_dtype, out_dtype):
    """The (lhs, rhs, accumulation) types a contraction computes in: the operands' and the
    result's own unless ``precision`` is an algorithm, as JAX's get_algorithm_compute_types.
    Raises ``ValueError`` for an algorithm the CPU backend does not run."""
    if not isinstance(precision, (DotAlgorithm, DotAlgorithmPreset)):
        return lhs_dtype, rhs_dtype, out_dtype
    if precision not in _CPU_PRESETS:
        raise ValueError(f"The precision '{precision}' is not supported by dot_general on CPU")

    def pick(dtype, allowed):
        if allowed is None or np.dtype(dtype) in [np.dtype(a) for a in allowed]:
            return np.dtype(dtype)
        return np.dtype(allowed[0])

    lhs = pick(lhs_dtype, precision.supported_lhs_types)
    rhs = pick(rhs_dtype, precision.supported_rhs_types)
    return lhs, rhs, pick(out_dtype, precision.supported_output_types(lhs, rhs))


def _preferred_dtype(preferred_element_type):
    if preferred_element_type is None:
        return None
    return dtypes.canonicalize(preferred_element_type)


def _bit_width(dtype):
    return 1 if dtype == dtypes.bool_ else dtype.itemsize * 8


def _compute_dtype(dtype):
    """Half floats are multiplied and accumulated in float32, as XLA's CPU backend does."""
    return dtypes.float32 if dtype in (dtypes.float16, dtypes.bfloat16) else dtype


# --------------------------------------------------------------------------- dot_general


def _dims_tuple(dims, ndim):
    if isinstance(dims, (int, np.integer)):
        dims = (dims,)
    # Negative dimensions count from the end; out-of-range ones are left for the checker.
    return tuple(int(d) + ndim if -ndim <= int(d) < 0 else int(d) for d in dims)


_canonical_dnums = {}  # (dimension_numbers, lhs ndim, rhs ndim) -> canonical tuples


def _canonicalize_dnums(dimension_numbers, ln, rn):
    try:
        (lc, rc), (lb, rb) = dimension_numbers
    except (TypeError, ValueError):
        raise TypeError(
            "lax.dot_general: dimension_numbers must be ((lhs_contracting, "
            "rhs_contracting), (lhs_batch, rhs_batch)), got "
            f"{dimension_numbers!r}"
        ) from None
    dnums = ((_dims_tuple(lc, ln), _dims_tuple(rc, rn)), (_dims_tuple(lb, ln), _dims_tuple(rb, rn)))
    try:
        if len(_canonical_dnums) > 1024:
            _canonical_dnums.clear()
        _canonical_dnums[dimension_numbers, ln, rn] = dnums
    except TypeError:  # unhashable: not memoized
        pass
    return dnums


def dot_general(
    lhs, rhs, dimension_numbers, precision=None, preferred_element_type=None, *, out_sharding=None
):
    """General contraction: ``dimension_numbers = ((lhs_contract, rhs_contract),
    (lhs_batch, rhs_batch))``.

    Returns an array whose dimensions are the batch dimensions, then the lhs free dimensions,
    then the rhs free dimensions (as XLA's DotGeneral). ``out_sharding`` (a NamedSharding, or
    a PartitionSpec of the current mesh) lays the result out so, its type carrying it under
    a mesh of Explicit axes (what a contraction over sharded dimensions needs).

    Example: ``dot_general(x, y, (((2,), (1,)), ((0,), (0,))))`` is a batched matmul.
    """
    ln, rn = get_aval(lhs).ndim, get_aval(rhs).ndim
    try:
        dnums = _canonical_dnums[dimension_numbers, ln, rn]
    except (KeyError, TypeError):  # TypeError: unhashable, dimension numbers as lists
        dnums = _canonicalize_dnums(dimension_numbers, ln, rn)
    sharding = None
    if out_sharding is not None:  # (a param only when given: the rules' default is None)
        (lc, _), (lb, _) = dnums
        sharding = out_sharding_param(out_sharding, "dot_general", ln + rn - 2 * len(lc) - len(lb))
    params = dict(
        dimension_numbers=dnums,
        precision=canonicalize_precision(precision),
        preferred_element_type=_preferred_dtype(preferred_element_type),
    )
    return bind_laid_out(dot_general_p, [lhs, rhs], params, "out_sharding", sharding)


def dot(
    lhs,
    rhs,
    precision=None,
    preferred_element_type=None,
    *,
    dimension_numbers=None,
    out_sharding=None,
):
    """Vector/matrix product: ``lhs`` and ``rhs`` of rank 1 or 2, contracting the last
    dimension of ``lhs`` with the first of ``rhs``; any contraction with ``dimension_numbers``.
    """
    if dimension_numbers is None:
        ls, rs = get_aval(lhs).shape, get_aval(rhs).shape
        if not (1 <= len(ls) <= 2 and 1 <= len(rs) <= 2 and ls[-1] == rs[0]):
            raise ValueError(
                "lax.dot: dimension_numbers must be specified when not performing "
                "simple un-batched matrix-matrix, matrix-vector, or vector-vector "
                f"products; got lhs_shape={ls} rhs_shape={rs}"
            )
        dimension_numbers = (((len(ls) - 1,), (0,)), ((), ()))
    return dot_general(
        lhs, rhs, dimension_numbers, precision, preferred_element_type, out_sharding=out_sharding
    )


def _free_dims(ndim, contracting, batch):
    return tuple(d for d in range(ndim) if d not in contracting and d not in batch)


@functools.cache  # per dtype: read twice by every dot_general's type rule and eager impl
def _type_properties(dtype):
    """XLA's order of "higher precision" types (primitive_util.h's HigherPrecisionType)."""
    c = dtypes.is_complex(dtype)
    real = np.finfo(dtype).dtype if c else dtype
    f = dtypes.finfo(real) if dtypes.is_float(real) else None
    return (
        c,
        f.maxexp if f else -1,
        f.nmant if f else -1,
        _bit_width(real),
        not dtypes.is_unsigned_int(real),
    )


def _dot_result_dtype(name, lhs, rhs, preferred, precision=None):
    lp, rp = _type_properties(lhs.dtype), _type_properties(rhs.dtype)
    if lp == rp and lhs.dtype != rhs.dtype:
        raise TypeError(f"{name}: argument type error: {lhs.dtype}, {rhs.dtype}")
    dtype = lhs.dtype if lp >= rp else rhs.dtype
    if preferred is None or preferred == dtype:
        return dtype
    if preferred not in dtypes.SUPPORTED:
        raise TypeError(f"{name}: unsupported preferred_element_type {preferred}")
    # With an algorithm the accumulation type decides, so no width check (as JAX's).
    has_algorithm = isinstance(precision, (DotAlgorithm, DotAlgorithmPreset))
    if (
        not has_algorithm
        and not dtypes.is_float(dtype)
        and _bit_width(preferred) < _bit_width(dtype)
    ):
        raise TypeError(
            f"{name}: `preferred_element_type` must not be narrower than the "
            f"original type, got preferred_element_type of {preferred} for "
            f"result type of {dtype}."
        )
    return preferred


def _dot_general_abstract_eval(
    lhs, rhs, *, dimension_numbers, precision, preferred_element_type, out_sharding=None
):
    name = "lax.dot_general"
    (lc, rc), (lb, rb) = dimension_numbers
    for side, aval, contract, batch in (("lhs", lhs, lc, lb), ("rhs", rhs, rc, rb)):
        if not all(0 <= d < aval.ndim for d in contract + batch):
            raise TypeError(
                f"{name} requires {side} dimension numbers to be nonnegative and "
                f"less than the number of axes of the {side} value, got "
                f"{side}_batch of {batch} and {side}_contracting of {contract} "
                f"for {side} of shape {aval.shape}"
            )
        for what, dims in (("batch", batch), ("contracting", contract)):
            if len(set(dims)) != len(dims):
                raise TypeError(
                    f"{name} requires {side} {what} dimensions to be distinct, "
                    f"got {side}_{what} {dims}"
                )
        if set(contract) & set(batch):
            raise TypeError(
                f"{name} requires {side} batch dimensions to be disjoint from "
                f"contracting dimensions, got {side}_batch {batch} and "
                f"{side}_contracting {contract}"
            )
    if len(lb) != len(rb):
        raise TypeError(
            f"{name} requires equal numbers of lhs_batch and rhs_batch "
            f"dimensions, got lhs_batch {lb} and rhs_batch {rb}"
        )
    if len(lc) != len(rc):
        raise TypeError(
            f"{name} requires equal numbers of lhs and rhs contracting "
            f"dimensions, got lhs_contracting {lc} and rhs_contracting {rc}"
        )
    lbs, rbs = tuple(lhs.shape[d] for d in lb), tuple(rhs.shape[d] for d in rb)
    if lbs != rbs:
        raise TypeError(
            f"{name} requires lhs batch dimensions and rhs batch dimensions to "
            f"have the same shape, got {lbs} and {rbs} (lhs shape {lhs.shape}, "
            f"rhs shape {rhs.shape}, lhs_batch {lb}, rhs_batch {rb})"
        )
    lcs, rcs = tuple(lhs.shape[d] for d in lc), tuple(rhs.shape[d] for d in rc)
    if lcs != rcs:
        raise TypeError(
            f"{name} requires contracting dimensions to have the same shape, got "
            f"{lcs} and {rcs} (lhs shape {lhs.shape}, rhs shape {rhs.shape}, "
            f"lhs_contracting {lc}, rhs_contracting {rc})"
        )
    shape = (
        lbs
        + tuple(lhs.shape[d] for d in _free_dims(lhs.ndim, lc, lb))
        + tuple(rhs.shape[d] for d in _free_dims(rhs.ndim, rc, rb))
    )
    dtype = _dot_result_dtype(name, lhs, rhs, preferred_element_type, precision)
    return [typed(ShapedArray(shape, dtype, lhs.weak_type and rhs.weak_type), out_sharding)]


def _dot_general_host(
    lhs, rhs, *, dimension_numbers, precision, preferred_element_type, out_sharding=None
):
    signature = (
        lhs.shape,
        lhs.dtype,
        rhs.shape,
        rhs.dtype,
        dimension_numbers,
        precision,
        preferred_element_type,
    )
    try:
        plan = _host_plan(*signature)
    except TypeError:  # unhashable params (dimension numbers bound as lists): no memo
        plan = _host_plan.__wrapped__(*signature)
    lhs_t, rhs_t, compute, acc, out_dtype, l_perm, r_perm, x_shape, y_shape, out_shape = plan
    # (batch, free, contracted) @ (batch, contracted, free): one batched matmul, BLAS for floats
    # (without a batch, one 2-D product: the same BLAS call, less of NumPy's batching).
    x = lhs if lhs.dtype == lhs_t else lhs.astype(lhs_t)
    if l_perm is not None:
        x = np.transpose(x, l_perm)
    if x.dtype != compute:
        x = x.astype(compute)
    y = rhs if rhs.dtype == rhs_t else rhs.astype(rhs_t)
    if r_perm is not None:
        y = np.transpose(y, r_perm)
    if y.dtype != compute:
        y = y.astype(compute)
    if x_shape[2] == 0:  # NumPy's matmul rejects empty contractions of some dtypes: sum zero
        out = np.zeros((x_shape[0], x_shape[1], y_shape[2]), compute)
    elif x_shape[0] == 1:
        out = np.matmul(x.reshape(x_shape[1:]), y.reshape(y_shape[1:]))
    else:
        out = np.matmul(x.reshape(x_shape), y.reshape(y_shape))
    out = out.reshape(out_shape)
    if out.dtype != acc:
        out = out.astype(acc)
    return [out if out.dtype == out_dtype else out.astype(out_dtype)]


@functools.lru_cache(maxsize=512)  # per signature: eager steps repeat the same contractions
def _host_plan(
    lhs_shape, lhs_dtype, rhs_shape, rhs_dtype, dimension_numbers, precision, preferred_element_type
):
    """How ``_dot_general_host`` computes a contraction: operand and accumulation types,
    the transposes (None: the identity) and the shapes of one batched matmul."""
    (lc, rc), (lb, rb) = dimension_numbers
    lhs, rhs = ShapedArray(lhs_shape, lhs_dtype), ShapedArray(rhs_shape, rhs_dtype)
    out_dtype = _dot_result_dtype("lax.dot_general", lhs, rhs, preferred_element_type, precision)
    lhs_t, rhs_t, acc = dot_algorithm_types(precision, lhs_dtype, rhs_dtype, out_dtype)
    lf, rf = _free_dims(len(lhs_shape), lc, lb), _free_dims(len(rhs_shape), rc, rb)
    batch_shape = tuple(lhs_shape[d] for d in lb)
    lf_shape = tuple(lhs_shape[d] for d in lf)
    rf_shape = tuple(rhs_shape[d] for d in rf)
    k = math.prod([lhs_shape[d] for d in lc])  # math.prod: np.prod costs µs per call
    b, m, n = math.prod(batch_shape), math.prod(lf_shape), math.prod(rf_shape)
    l_perm, r_perm = lb + lf + lc, rb + rc + rf
    return (
        lhs_t,
        rhs_t,
        _compute_dtype(acc),
        acc,
        out_dtype,
        None if l_perm == tuple(range(len(l_perm))) else l_perm,
        None if r_perm == tuple(range(len(r_perm))) else r_perm,
        (b, m, k),
        (b, k, n),
        batch_shape + lf_shape + rf_shape,
    )


dot_general_p = standard_primitive("dot_general", _dot_general_abstract_eval, _dot_general_host)


# --------------------------------------------------------------------------- jvp rules


# A contraction is bilinear: each operand's tangent contracts with the other primal,
# under the same parameters (preferred_element_type included, so the tangent has the
# output's dtype).
ad.defjvp(
    dot_general_p,
    lambda t, x, y, **params: dot_general_p.bind(t, y, **params),
    lambda t, x, y, **params: dot_general_p.bind(x, t, **params),
)


# --------------------------------------------------------------------------- transpose rules
# Each contraction is linear in either operand with the other known. The cotangent of an
# operand contracts the output cotangent with the other operand, under the primal's
# precision and preferred_element_type, and is converted back to the operand's dtype (the
# output may be wider, with a preferred_element_type). The math is JAX's (lax.py and
# convolution.py).


def _as_dtype(x, dtype):
    return x if get_aval(x).dtype == dtype else convert_element_type(x, dtype)


def _bilinear_transpose(prim, transpose_lhs, transpose_rhs):
    def rule(ct, lhs, rhs, **params):
        lhs_linear, rhs_linear = transpose.is_undefined(lhs), transpose.is_undefined(rhs)
        if lhs_linear and rhs_linear:
            raise ValueError(
                f"{prim.name} of two linear operands is not linear, so it cannot be transposed"
            )
        if type(ct) is ad.Zero:
            return [
                ad.Zero(lhs.aval) if lhs_linear else None,
                ad.Zero(rhs.aval) if rhs_linear else None,
            ]
        if lhs_linear:
            return [transpose_lhs(ct, lhs.aval, rhs, **params), None]
        return [None, transpose_rhs(ct, lhs, rhs.aval, **params)]

    transpose.transpose_rules[prim] = rule


def _ranges_like(*xs):
    start, out = 0, []
    for x in xs:
        out.append(tuple(range(start, start + len(x))))
        start += len(x)
    return out


@functools.lru_cache(maxsize=256)  # per signature: a gradient step transposes the same dots
def _transpose_lhs_dims(dimension_numbers, x_ndim, y_ndim, swap_ans):
    """The dimension numbers contracting ct with y, and the permutation that puts the result
    in x's dimension order."""
    (x_contract, y_contract), (x_batch, y_batch) = dimension_numbers
    x_kept = _free_dims(x_ndim, x_contract, x_batch)
    y_kept = _free_dims(y_ndim, y_contract, y_batch)
    if swap_ans:  # ct's dimensions are (batch, y free, x free)
        ans_batch, ans_y, _ = _ranges_like(x_batch, y_kept, x_kept)
    else:  # (batch, x free, y free)
        ans_batch, _, ans_y = _ranges_like(x_batch, x_kept, y_kept)
    # Contract ct's y dims with y's free dims: (batch, x free, x contracted in y's order).
    dims = ((ans_y, y_kept), (ans_batch, tuple(y_batch)))
    x_contract_by_y = tuple(int(x_contract[i]) for i in _argsort(y_contract))
    order = tuple(x_batch) + x_kept + x_contract_by_y
    return dims, tuple(_argsort(order))


def _argsort(values):
    return sorted(range(len(values)), key=values.__getitem__)


def _dot_general_transpose_lhs(
    ct,
    x_aval,
    y,
    *,
    dimension_numbers,
    precision,
    preferred_element_type,
    out_sharding=None,
    swap_ans=False,
):
    signature = (dimension_numbers, x_aval.ndim, get_aval(y).ndim, swap_ans)
    try:
        dims, perm = _transpose_lhs_dims(*signature)
    except TypeError:  # dimension numbers bound as lists: nothing to memoize
        dims, perm = _transpose_lhs_dims.__wrapped__(*signature)
    params = {}
    if x_aval.sharding is not None:  # the cotangent is laid out as x (as JAX's)
        spec = x_aval.sharding.spec
        order = sorted(range(len(perm)), key=perm.__getitem__)
        params["out_sharding"] = type(x_aval.sharding)(
            x_aval.sharding.mesh, type(spec)(*(spec[o] for o in order))
        )
    out = dot_general_p.bind(
        ct,
        y,
        dimension_numbers=dims,
        precision=precision,
        preferred_element_type=preferred_element_type,
        **params,
    )
    return _as_dtype(transpose_dims(out, perm), x_aval.dtype)


def _dot_general_transpose_rhs(
    ct, x, y_aval, *, dimension_numbers, precision, preferred_element_type, out_sharding=None
):
    (x_contract, y_contract), (x_batch, y_batch) = dimension_numbers
    swapped = ((y_contract, x_contract), (y_batch, x_batch))
    return _dot_general_transpose_lhs(
        ct,
        y_aval,
        x,
        dimension_numbers=swapped,
        precision=precision,
        preferred_element_type=preferred_element_type,
        swap_ans=True,
    )


_bilinear_transpose(dot_general_p, _dot_general_transpose_lhs, _dot_general_transpose_rhs)


# --------------------------------------------------------------------------- batching rules


def _shift_past(dims, bdim):
    """Dimension numbers of an unbatched operand, renumbered for its batched value."""
    return tuple(d + (d >= bdim) for d in dims)


def _dot_general_batch(
    axis, args, dims, *, dimension_numbers, precision, preferred_element_type, out_sharding=None
):
    # One dot, however the operands are mapped: the batch dimension of both operands joins
    # the dot's batch dimensions (first in the output); that of one operand alone is one
    # more of its free dimensions, whose output position is where the free dims fall.
    (lhs, rhs), (ld, rd) = args, dims
    (lc, rc), (lb, rb) = dimension_numbers
    if ld is not not_mapped and rd is not not_mapped:
        dnums = (
            (_shift_past(lc, ld), _shift_past(rc, rd)),
            ((ld,) + _shift_past(lb, ld), (rd,) + _shift_past(rb, rd)),
        )
        out_dim = 0
    elif ld is not not_mapped:
        dnums = ((_shift_past(lc, ld), rc), (_shift_past(lb, ld), rb))
        free = _free_dims(get_aval(lhs).ndim, dnums[0][0], dnums[1][0])
        out_dim = len(lb) + free.index(ld)
    else:
        dnums = ((lc, _shift_past(rc, rd)), (lb, _shift_past(rb, rd)))
        lhs_free = _free_dims(get_aval(lhs).ndim, lc, lb)
        free = _free_dims(get_aval(rhs).ndim, dnums[0][1], dnums[1][1])
        out_dim = len(lb) + len(lhs_free) + free.index(rd)
    params = {}
    if out_sharding is not None:  # the batch dimension split as the mapped operands' are
        rank = get_aval(lhs).ndim + get_aval(rhs).ndim - 2 * len(dnums[0][0]) - len(dnums[1][0])
        spec = list(full_spec(out_sharding, rank - 1))
        spec.insert(out_dim, _mapped_entry((lhs, ld), (rhs, rd)))
        params["out_sharding"] = type(out_sharding)(
            out_sharding.mesh, type(out_sharding.spec)(*spec)
        )
    out = dot_general_p.bind(
        lhs,
        rhs,
        dimension_numbers=dnums,
        precision=precision,
        preferred_element_type=preferred_element_type,
        **params,
    )
    return [out], [out_dim]


def _mapped_entry(*operands):
    """The mesh axes splitting the vmapped dimension of mapped ``operands`` (``(x, dim)``
    pairs), as JAX's vmap gives them to a result whose sharding is otherwise given."""
    for x, d in operands:
        sharding = get_aval(x).sharding if d is not not_mapped else None
        if sharding is not None and d < len(sharding.spec) and sharding.spec[d] is not None:
            return sharding.spec[d]
    return None


batching.batch_rules[dot_general_p] = _dot_general_batch

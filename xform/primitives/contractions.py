"""Contractions: ``dot_general`` (and its ``dot`` wrapper) and ``conv_general_dilated``.

Both take a ``precision`` (``None``, a pair of ``Precision``, which the CPU backend ignores,
or a ``DotAlgorithm``/``DotAlgorithmPreset``, whose operand and accumulation types a dot
follows) and a ``preferred_element_type`` that widens the result type. Their NumPy host
implementations move the operands into a canonical layout (batch, free, contracted), compute
in the result dtype (half floats in float32, as XLA's CPU backend does) and move back.
"""

import dataclasses
import enum
import functools
import math
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from xform import config, dtypes
from xform.core import ShapedArray, get_aval
from xform.interpret import ad, batching, staging, transpose, vjp_tape
from xform.interpret.batching import not_mapped
from xform.primitives.base import standard_primitive
from xform.primitives.elementwise import (
    bitwise_and,
    convert_element_type,
    eq,
    le,
    lt,
    mul,
    select,
    sub,
)
from xform.primitives.reductions import cumsum
from xform.primitives.sharding import bind_laid_out, full_spec, out_sharding_param, typed
from xform.primitives.structural import (
    broadcast_in_dim,
    broadcasted_iota,
    full_like,
    reshape,
    rev,
)
from xform.primitives.structural import transpose as transpose_dims

__all__ = [
    "Precision",
    "PrecisionLike",
    "DotAlgorithm",
    "DotAlgorithmPreset",
    "DotDimensionNumbers",
    "dot_general",
    "dot",
    "ConvDimensionNumbers",
    "conv_dimension_numbers",
    "conv_general_permutations",
    "padtype_to_pads",
    "conv_general_dilated",
    "conv",
    "conv_with_general_padding",
    "ConvGeneralDilatedDimensionNumbers",
    "conv_shape_tuple",
    "conv_general_shape_tuple",
    "conv_transpose_shape_tuple",
    "conv_transpose",
    "conv_general_dilated_patches",
    "conv_general_dilated_local",
    "batch_matmul",
    "RaggedDotDimensionNumbers",
    "ragged_dot_general",
    "ragged_dot",
    "scaled_dot",
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


# --------------------------------------------------------------------------- convolution


class ConvDimensionNumbers(NamedTuple):
    """Where the batch, feature and spatial dimensions of a convolution's operands are.

    ``lhs_spec``: (batch dim, feature dim, spatial dims...); ``rhs_spec``: (out feature dim,
    in feature dim, spatial dims...); ``out_spec``: (batch dim, feature dim, spatial dims...).
    """

    lhs_spec: tuple
    rhs_spec: tuple
    out_spec: tuple


def conv_general_permutations(dimension_numbers):
    """The ``(lhs, rhs, out)`` permutations for specs such as ``('NCHW', 'OIHW', 'NCHW')``."""
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    charpairs = (("N", "C"), ("O", "I"), ("N", "C"))
    for i, (a, b) in enumerate(charpairs):
        spec = dimension_numbers[i]
        if not spec.count(a) == spec.count(b) == 1:
            raise TypeError(
                f"convolution dimension_numbers[{i}] must contain the characters "
                f"'{a}' and '{b}' exactly once, got {spec}."
            )
        if len(spec) != len(set(spec)):
            raise TypeError(
                f"convolution dimension_numbers[{i}] cannot have duplicate characters, got {spec}."
            )
    if not (set(lhs_spec) - {"N", "C"} == set(rhs_spec) - {"O", "I"} == set(out_spec) - {"N", "C"}):
        raise TypeError(
            "convolution dimension_numbers elements must each have the same set "
            f"of spatial characters, got {tuple(dimension_numbers)}."
        )

    def getperm(spec, charpair):
        spatial = [i for i, c in enumerate(spec) if c not in charpair]
        if spec is not rhs_spec:  # spatial dims are ordered as in the kernel spec
            spatial = sorted(spatial, key=lambda i: rhs_spec.index(spec[i]))
        return (spec.index(charpair[0]), spec.index(charpair[1])) + tuple(spatial)

    return tuple(getperm(s, c) for s, c in zip(dimension_numbers, charpairs, strict=True))


def conv_dimension_numbers(lhs_shape, rhs_shape, dimension_numbers):
    """``dimension_numbers`` (None, three spec strings, or ConvDimensionNumbers) as a
    ``ConvDimensionNumbers``."""
    if isinstance(dimension_numbers, ConvDimensionNumbers):
        return ConvDimensionNumbers(*(tuple(int(d) for d in s) for s in dimension_numbers))
    if len(lhs_shape) != len(rhs_shape):
        raise TypeError(
            f"convolution requires lhs and rhs ndim to be equal, got "
            f"{len(lhs_shape)} and {len(rhs_shape)}."
        )
    if dimension_numbers is None:
        iota = tuple(range(len(lhs_shape)))
        return ConvDimensionNumbers(iota, iota, iota)
    if not isinstance(dimension_numbers, (list, tuple)):
        raise TypeError(
            "convolution dimension_numbers must be tuple/list or None, got "
            f"{type(dimension_numbers)}."
        )
    if len(dimension_numbers) != 3:
        raise TypeError(
            "convolution dimension_numbers list/tuple must be length 3, got "
            f"{len(dimension_numbers)}."
        )
    if not all(isinstance(s, str) for s in dimension_numbers):
        raise TypeError(
            "convolution dimension_numbers elements must be strings, got "
            f"{tuple(type(s).__name__ for s in dimension_numbers)}."
        )
    for i, s in enumerate(dimension_numbers):
        if len(s) != len(lhs_shape):
            raise TypeError(
                f"convolution dimension_numbers[{i}] must have len equal to the "
                f"ndim of lhs and rhs, got {len(s)} for lhs and rhs shapes "
                f"{tuple(lhs_shape)} and {tuple(rhs_shape)}."
            )
    return ConvDimensionNumbers(*conv_general_permutations(dimension_numbers))


def _dilate_dim(d, dilation):
    return 0 if d == 0 else 1 + dilation * (d - 1)


def padtype_to_pads(in_shape, window_shape, window_strides, padding):
    """``'SAME'``, ``'SAME_LOWER'`` or ``'VALID'`` as a list of ``(low, high)`` pairs."""
    kind = padding.upper()
    if kind == "VALID":
        return [(0, 0)] * len(in_shape)
    if kind not in ("SAME", "SAME_LOWER"):
        raise RuntimeError(
            f"Unrecognized padding type: expected 'VALID', 'SAME', or 'SAME_LOWER', got {padding}."
        )  # RuntimeError, as JAX's
    pads = []
    for d, k, s in zip(in_shape, window_shape, window_strides, strict=True):
        out = -(-d // s)
        total = max((out - 1) * s + k - d, 0)
        lo = total // 2 if kind == "SAME" else total - total // 2
        pads.append((lo, total - lo))
    return pads


def _int_tuple(xs, n, what, name):
    try:
        out = tuple(int(x.__index__()) for x in xs)
    except (TypeError, AttributeError):
        raise TypeError(f"{name}: {what} must be a sequence of integers, got {xs!r}") from None
    if len(out) != n:
        raise ValueError(
            f"{name}: {what} must have one entry per spatial dimension ({n}), got {out}"
        )
    return out


def conv_general_dilated(
    lhs,
    rhs,
    window_strides,
    padding,
    lhs_dilation=None,
    rhs_dilation=None,
    dimension_numbers=None,
    feature_group_count=1,
    batch_group_count=1,
    precision=None,
    preferred_element_type=None,
    out_sharding=None,
):
    """General n-dimensional convolution (a cross-correlation, as XLA's Conv).

    Args:
      lhs: the input, rank ``n + 2``; rhs: the kernel, rank ``n + 2``.
      window_strides: ``n`` strides. padding: ``'SAME'``, ``'SAME_LOWER'``, ``'VALID'`` or
        ``n`` ``(low, high)`` pairs (negative values crop).
      lhs_dilation / rhs_dilation: ``n`` dilation factors (transposed / atrous conv).
      dimension_numbers: ``None`` (``NCHW``/``OIHW``/``NCHW``), a ``ConvDimensionNumbers`` or
        three spec strings such as ``('NHWC', 'HWIO', 'NHWC')``.
      feature_group_count / batch_group_count: grouped convolutions.

      out_sharding: the result's layout; only None (the operands' own) yet.

    Example: ``conv_general_dilated(x, w, (1, 1), 'SAME')``.
    """
    name = "lax.conv_general_dilated"
    if out_sharding is not None:
        raise NotImplementedError(
            f"{name}: out_sharding={out_sharding!r} is not supported "
            "yet; lay the result out with lax.with_sharding_constraint"
        )
    lhs_shape, rhs_shape = get_aval(lhs).shape, get_aval(rhs).shape
    dnums = conv_dimension_numbers(lhs_shape, rhs_shape, dimension_numbers)
    n = len(rhs_shape) - 2
    if n < 0:
        raise TypeError(
            f"{name}: operands must have rank at least 2, got lhs shape "
            f"{lhs_shape} and rhs shape {rhs_shape}"
        )
    window_strides = _int_tuple(window_strides, n, "window_strides", name)
    lhs_dilation = (
        (1,) * n if lhs_dilation is None else _int_tuple(lhs_dilation, n, "lhs_dilation", name)
    )
    rhs_dilation = (
        (1,) * n if rhs_dilation is None else _int_tuple(rhs_dilation, n, "rhs_dilation", name)
    )
    if isinstance(padding, str):
        if any(d != 1 for d in lhs_dilation):
            raise ValueError(
                f"{name}: string padding is not implemented for transposed "
                "convolution (lhs_dilation > 1); give explicit (low, high) pairs"
            )
        in_spatial = [lhs_shape[d] for d in dnums.lhs_spec[2:]]
        window = [
            _dilate_dim(rhs_shape[d], r)
            for d, r in zip(dnums.rhs_spec[2:], rhs_dilation, strict=True)
        ]
        padding = padtype_to_pads(in_spatial, window, window_strides, padding)
    try:
        padding = tuple((int(lo.__index__()), int(hi.__index__())) for lo, hi in padding)
    except (TypeError, ValueError, AttributeError):
        raise ValueError(
            f"{name}: padding should be a string or a sequence of (low, high) "
            f"pairs, got {padding!r}"
        ) from None
    return conv_general_dilated_p.bind(
        lhs,
        rhs,
        window_strides=window_strides,
        padding=padding,
        lhs_dilation=lhs_dilation,
        rhs_dilation=rhs_dilation,
        dimension_numbers=dnums,
        feature_group_count=int(feature_group_count),
        batch_group_count=int(batch_group_count),
        precision=canonicalize_precision(precision, name),
        preferred_element_type=_preferred_dtype(preferred_element_type),
    )


def conv(lhs, rhs, window_strides, padding, precision=None, preferred_element_type=None):
    """``conv_general_dilated`` with ``NCHW``/``OIHW`` layouts and no dilation."""
    return conv_general_dilated(
        lhs,
        rhs,
        window_strides,
        padding,
        precision=precision,
        preferred_element_type=preferred_element_type,
    )


def conv_with_general_padding(
    lhs,
    rhs,
    window_strides,
    padding,
    lhs_dilation,
    rhs_dilation,
    precision=None,
    preferred_element_type=None,
):
    """``conv_general_dilated`` with ``NCHW``/``OIHW`` layouts."""
    return conv_general_dilated(
        lhs,
        rhs,
        window_strides,
        padding,
        lhs_dilation=lhs_dilation,
        rhs_dilation=rhs_dilation,
        precision=precision,
        preferred_element_type=preferred_element_type,
    )


def _conv_result_dtype(name, lhs, rhs, preferred):
    if lhs.dtype != rhs.dtype:
        raise TypeError(
            f"{name} requires arguments to have the same dtypes, got {lhs.dtype}, "
            f"{rhs.dtype}. (Tip: convert one with lax.convert_element_type.)"
        )
    dtype = lhs.dtype
    if preferred is None:
        return dtype
    if preferred not in dtypes.SUPPORTED:
        raise TypeError(f"{name}: unsupported preferred_element_type {preferred}")
    if not (dtypes.is_int(dtype) and dtypes.is_float(preferred)):
        for kind in (dtypes.is_int, dtypes.is_float, dtypes.is_complex):
            if kind(dtype) and not kind(preferred):
                raise TypeError(
                    f"{name}: input type {dtype} is incompatible with "
                    f"preferred_element_type {preferred}. The compatible "
                    "combinations are (integral, integral), (integral, floating), "
                    "(floating, floating), (complex, complex)."
                )
        if dtypes.is_signed_int(dtype) and not dtypes.is_signed_int(preferred):
            raise TypeError(
                f"{name}: preferred_element_type {preferred} must have the same "
                f"signedness as the input type {dtype}."
            )
    if preferred.itemsize < dtype.itemsize:
        raise TypeError(
            f"{name}: preferred_element_type {preferred} must not be narrower "
            f"than the input type {dtype}."
        )
    return preferred


def _conv_general_dilated_abstract_eval(
    lhs,
    rhs,
    *,
    window_strides,
    padding,
    lhs_dilation,
    rhs_dilation,
    dimension_numbers,
    feature_group_count,
    batch_group_count,
    precision,
    preferred_element_type,
):
    name = "lax.conv_general_dilated"
    if lhs.ndim != rhs.ndim:
        raise ValueError(
            f"{name}: lhs and rhs must have the same number of dimensions, but "
            f"got shapes {lhs.shape} and {rhs.shape}."
        )
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    for what, spec in (("lhs_spec", lhs_spec), ("rhs_spec", rhs_spec), ("out_spec", out_spec)):
        if sorted(spec) != list(range(lhs.ndim)):
            raise ValueError(
                f"{name}: dimension_numbers.{what} {spec} must be a permutation "
                f"of range({lhs.ndim})"
            )
    n = lhs.ndim - 2
    for what, v in (
        ("window_strides", window_strides),
        ("lhs_dilation", lhs_dilation),
        ("rhs_dilation", rhs_dilation),
        ("padding", padding),
    ):
        if len(v) != n:
            raise ValueError(
                f"{name}: {what} {v} must have one entry per spatial dimension "
                f"({n}) for operands of shapes {lhs.shape} and {rhs.shape}"
            )
    for what, v in (
        ("window_strides", window_strides),
        ("lhs_dilation", lhs_dilation),
        ("rhs_dilation", rhs_dilation),
    ):
        if any(s < 1 for s in v):
            raise ValueError(f"{name}: {what} must be positive, got {v}")
    fg, bg = feature_group_count, batch_group_count
    if fg < 1 or bg < 1:
        raise ValueError(
            f"{name}: feature_group_count and batch_group_count must be positive "
            f"integers, got {fg} and {bg}."
        )
    if fg > 1 and bg > 1:
        raise ValueError(
            f"{name}: at most one of batch_group_count and feature_group_count "
            f"may be > 1, got batch_group_count={bg} and feature_group_count={fg}"
        )
    in_features, out_features = lhs.shape[lhs_spec[1]], rhs.shape[rhs_spec[0]]
    if in_features % fg:
        raise ValueError(
            f"{name}: feature_group_count must divide the lhs feature dimension "
            f"size, but {fg} does not divide {in_features} (lhs shape {lhs.shape})"
        )
    if in_features // fg != rhs.shape[rhs_spec[1]]:
        raise ValueError(
            f"{name}: the lhs feature dimension size divided by "
            "feature_group_count must equal the rhs input feature dimension "
            f"size, but {in_features} // {fg} != {rhs.shape[rhs_spec[1]]} (lhs "
            f"shape {lhs.shape}, rhs shape {rhs.shape})"
        )
    for what, g in (("feature_group_count", fg), ("batch_group_count", bg)):
        if out_features % g:
            raise ValueError(
                f"{name}: the rhs output feature dimension size must be a "
                f"multiple of {what}, but {out_features} is not a multiple of "
                f"{g} (rhs shape {rhs.shape})"
            )
    batch = lhs.shape[lhs_spec[0]]
    if batch % bg:
        raise ValueError(
            f"{name}: batch_group_count must divide the lhs batch dimension "
            f"size, but {bg} does not divide {batch} (lhs shape {lhs.shape})"
        )
    spatial = []
    for i in range(n):
        d = _dilate_dim(lhs.shape[lhs_spec[2 + i]], lhs_dilation[i])
        k = _dilate_dim(rhs.shape[rhs_spec[2 + i]], rhs_dilation[i])
        padded = d + padding[i][0] + padding[i][1]
        if padded < 0:
            raise ValueError(
                f"{name}: negative padding {padding} is larger than the size of "
                f"the corresponding dimension of the lhs, shape {lhs.shape}"
            )
        spatial.append(max((padded - k) // window_strides[i] + 1, 0))
    canonical = (batch // bg, out_features) + tuple(spatial)
    shape = [0] * lhs.ndim
    for i, d in enumerate(out_spec):
        shape[d] = canonical[i]
    dtype = _conv_result_dtype(name, lhs, rhs, preferred_element_type)
    return [ShapedArray(tuple(shape), dtype, lhs.weak_type and rhs.weak_type)]


def _dilate(x, dilation, axes):
    if all(d == 1 for d in dilation):
        return x
    shape = list(x.shape)
    index = [slice(None)] * x.ndim
    for ax, d in zip(axes, dilation, strict=True):
        shape[ax] = _dilate_dim(x.shape[ax], d)
        index[ax] = slice(None, None, d)
    out = np.zeros(shape, x.dtype)
    out[tuple(index)] = x
    return out


def _pad(x, padding, axes):
    """Pad with zeros; negative padding crops."""
    widths = [(0, 0)] * x.ndim
    index = [slice(None)] * x.ndim
    for ax, (lo, hi) in zip(axes, padding, strict=True):
        widths[ax] = (max(lo, 0), max(hi, 0))
        size = x.shape[ax] + widths[ax][0] + widths[ax][1]
        index[ax] = slice(-lo if lo < 0 else 0, size + hi if hi < 0 else size)
    if any(w != (0, 0) for w in widths):
        x = np.pad(x, widths)
    return x[tuple(index)]


_LETTERS = "abcdefghijklmnopqrstuvwxyz"


def _conv_general_dilated_host(
    lhs,
    rhs,
    *,
    window_strides,
    padding,
    lhs_dilation,
    rhs_dilation,
    dimension_numbers,
    feature_group_count,
    batch_group_count,
    precision,
    preferred_element_type,
):
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    out_dtype = _conv_result_dtype("lax.conv_general_dilated", lhs, rhs, preferred_element_type)
    compute = _compute_dtype(out_dtype)
    n = lhs.ndim - 2
    spatial_axes = tuple(range(2, n + 2))
    # Canonical layouts: x is (N, C, spatial...), w is (O, I, window...).
    x = np.transpose(lhs, lhs_spec).astype(compute, copy=False)
    w = np.transpose(rhs, rhs_spec).astype(compute, copy=False)
    x = _pad(_dilate(x, lhs_dilation, spatial_axes), padding, spatial_axes)
    w = _dilate(w, rhs_dilation, spatial_axes)
    window = w.shape[2:]
    batch, channels = x.shape[:2]
    out_features = w.shape[0]
    out_spatial = tuple(
        max((d - k) // s + 1, 0)
        for d, k, s in zip(x.shape[2:], window, window_strides, strict=True)
    )
    fg, bg = feature_group_count, batch_group_count
    if 0 in out_spatial or x.size == 0 or w.size == 0:
        out = np.zeros((batch // bg, out_features) + out_spatial, compute)
    else:
        # Windows: (N, C, out spatial..., window...), strided by the window strides.
        windows = np.lib.stride_tricks.sliding_window_view(x, window, axis=spatial_axes)
        windows = windows[
            (slice(None), slice(None)) + tuple(slice(None, None, s) for s in window_strides)
        ]
        windows = windows[(slice(None), slice(None)) + tuple(slice(0, o) for o in out_spatial)]
        # Groups: the lhs features split into fg groups, its batch into bg groups
        # (group-major, as XLA); the output features split into fg * bg groups.
        g = fg * bg
        windows = windows.reshape((bg, batch // bg, fg, channels // fg) + windows.shape[2:])
        w = w.reshape((bg, fg, out_features // g) + w.shape[1:])
        sp, win = _LETTERS[:n], _LETTERS[n : 2 * n]
        out = np.einsum(f"BNFC{sp}{win},BFOC{win}->NBFO{sp}", windows, w, optimize=True)
        out = out.reshape((batch // bg, out_features) + out_spatial)
    out = np.transpose(out, np.argsort(out_spec))
    return [np.ascontiguousarray(out).astype(out_dtype, copy=False)]


conv_general_dilated_p = standard_primitive(
    "conv_general_dilated", _conv_general_dilated_abstract_eval, _conv_general_dilated_host
)


# --------------------------------------------------------------------------- jvp rules


# Both contractions are bilinear: each operand's tangent contracts with the other primal,
# under the same parameters (preferred_element_type included, so the tangent has the
# output's dtype).
ad.defjvp(
    dot_general_p,
    lambda t, x, y, **params: dot_general_p.bind(t, y, **params),
    lambda t, x, y, **params: dot_general_p.bind(x, t, **params),
)
ad.defjvp(
    conv_general_dilated_p,
    lambda t, x, y, **params: conv_general_dilated_p.bind(t, y, **params),
    lambda t, x, y, **params: conv_general_dilated_p.bind(x, t, **params),
)
# Eager grad's direct rules (xform/interpret/vjp_tape.py): each operand's transpose.
vjp_tape.defbilinear_vjp(dot_general_p)
vjp_tape.defbilinear_vjp(conv_general_dilated_p)


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


def _conv_spec_transpose(spec):
    """Swap the first two entries: batch <-> feature, or out feature <-> in feature."""
    return (spec[1], spec[0]) + tuple(spec[2:])


def _reshape_axis_out_of(src, size1, x):
    """Split dimension ``src`` of ``x`` into (size1, rest)."""
    shape = list(get_aval(x).shape)
    shape[src : src + 1] = [size1, shape[src] // size1]
    return reshape(x, tuple(shape))


def _reshape_axis_into(src, dst, x):
    """Merge dimension ``src`` of ``x`` into dimension ``dst`` (numbered once ``src`` is
    removed), as its major part."""
    shape = get_aval(x).shape
    perm = [i for i in range(len(shape)) if i != src]
    perm.insert(dst, src)
    new_shape = [shape[i] for i in range(len(shape)) if i != src]
    new_shape[dst] *= shape[src]
    return reshape(x, tuple(new_shape), tuple(perm))


def _conv_vjp_lhs_padding(
    in_shape, window, strides, out_shape, padding, lhs_dilation, rhs_dilation
):
    pads = []
    for d, k, s, o, (lo, _), ld, rd in zip(
        in_shape, window, strides, out_shape, padding, lhs_dilation, rhs_dilation, strict=True
    ):
        in_d, k_d, out_d = _dilate_dim(d, ld), _dilate_dim(k, rd), _dilate_dim(o, s)
        before = k_d - lo - 1
        pads.append((before, in_d + k_d - 1 - out_d - before))
    return tuple(pads)


def _conv_vjp_rhs_padding(
    in_shape, window, strides, out_shape, padding, lhs_dilation, rhs_dilation
):
    pads = []
    for d, k, s, o, (lo, _), ld, rd in zip(
        in_shape, window, strides, out_shape, padding, lhs_dilation, rhs_dilation, strict=True
    ):
        in_d, k_d, out_d = _dilate_dim(d, ld), _dilate_dim(k, rd), _dilate_dim(o, s)
        pads.append((lo, (out_d - in_d) + (k_d - lo - 1)))
    return tuple(pads)


def _conv_general_dilated_transpose_lhs(
    ct,
    lhs_aval,
    rhs,
    *,
    window_strides,
    padding,
    lhs_dilation,
    rhs_dilation,
    dimension_numbers,
    feature_group_count,
    batch_group_count,
    precision,
    preferred_element_type,
):
    # The lhs cotangent is a convolution of ct with the flipped kernel, its in and out
    # features swapped; the forward strides become lhs dilation.
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    rhs_shape, ct_shape = get_aval(rhs).shape, get_aval(ct).shape
    fg, bg = feature_group_count, batch_group_count
    if fg > 1 or bg > 1:  # move the group axis of the out features into the in features
        rhs = _reshape_axis_out_of(rhs_spec[0], max(fg, bg), rhs)
        rhs = _reshape_axis_into(rhs_spec[0], rhs_spec[1], rhs)
    pads = _conv_vjp_lhs_padding(
        [lhs_aval.shape[d] for d in lhs_spec[2:]],
        [rhs_shape[d] for d in rhs_spec[2:]],
        window_strides,
        [ct_shape[d] for d in out_spec[2:]],
        padding,
        lhs_dilation,
        rhs_dilation,
    )
    kernel = _as_dtype(rev(rhs, tuple(rhs_spec[2:])), get_aval(ct).dtype)
    dnums = ConvDimensionNumbers(out_spec, _conv_spec_transpose(rhs_spec), lhs_spec)
    out = conv_general_dilated_p.bind(
        ct,
        kernel,
        window_strides=tuple(lhs_dilation),
        padding=pads,
        lhs_dilation=tuple(window_strides),
        rhs_dilation=tuple(rhs_dilation),
        dimension_numbers=dnums,
        feature_group_count=max(fg, bg),
        batch_group_count=1,
        precision=precision,
        preferred_element_type=preferred_element_type,
    )
    out = _as_dtype(out, lhs_aval.dtype)
    if bg > 1:  # the batch groups came out as feature groups: move them back
        out = _reshape_axis_out_of(lhs_spec[1], bg, out)
        out = _reshape_axis_into(lhs_spec[1], lhs_spec[0], out)
    return out


def _conv_general_dilated_transpose_rhs(
    ct,
    lhs,
    rhs_aval,
    *,
    window_strides,
    padding,
    lhs_dilation,
    rhs_dilation,
    dimension_numbers,
    feature_group_count,
    batch_group_count,
    precision,
    preferred_element_type,
):
    # The kernel cotangent convolves lhs with ct, batch and feature roles swapped: feature
    # groups become batch groups and the other way round.
    ct_shape = get_aval(ct).shape
    if 0 in ct_shape:  # avoid a degenerate convolution with a spatially empty kernel
        return ad.Zero(rhs_aval)
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    lhs_shape = get_aval(lhs).shape
    pads = _conv_vjp_rhs_padding(
        [lhs_shape[d] for d in lhs_spec[2:]],
        [rhs_aval.shape[d] for d in rhs_spec[2:]],
        window_strides,
        [ct_shape[d] for d in out_spec[2:]],
        padding,
        lhs_dilation,
        rhs_dilation,
    )
    dnums = ConvDimensionNumbers(
        _conv_spec_transpose(lhs_spec),
        _conv_spec_transpose(out_spec),
        _conv_spec_transpose(rhs_spec),
    )
    out = conv_general_dilated_p.bind(
        _as_dtype(lhs, get_aval(ct).dtype),
        ct,
        window_strides=tuple(rhs_dilation),
        padding=pads,
        lhs_dilation=tuple(lhs_dilation),
        rhs_dilation=tuple(window_strides),
        dimension_numbers=dnums,
        feature_group_count=batch_group_count,
        batch_group_count=feature_group_count,
        precision=precision,
        preferred_element_type=preferred_element_type,
    )
    return _as_dtype(out, rhs_aval.dtype)


_bilinear_transpose(
    conv_general_dilated_p, _conv_general_dilated_transpose_lhs, _conv_general_dilated_transpose_rhs
)


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


def _fold_batch_into(x, bdim, dim, groups=1):
    """Fold ``x``'s batch dimension ``bdim`` into its dimension ``dim`` (numbered without the
    batch dimension). That dimension is ``groups`` groups, group-major, as convolutions
    split features and batches: the batch goes inside each group, (groups, B * rest)."""
    if groups == 1:
        return _reshape_axis_into(bdim, dim, x)
    at = dim + (bdim <= dim)  # where ``dim`` is in x
    x = _reshape_axis_out_of(at, groups, x)  # (groups, rest) at at, at + 1
    x = _reshape_axis_into(bdim + (bdim > at), dim + 1, x)  # (groups, B * rest) at dim
    return _reshape_axis_into(dim, dim, x)


def _unfold_batch(x, dim, size, groups=1):
    """The inverse: ``x``'s dimension ``dim``, (groups, B * rest), as a batch dimension at
    ``dim`` followed by (groups * rest)."""
    if groups == 1:
        return _reshape_axis_out_of(dim, size, x)
    x = _reshape_axis_out_of(dim, groups, x)
    x = _reshape_axis_out_of(dim + 1, size, x)  # (groups, B, rest) at dim
    return _reshape_axis_into(dim, dim + 1, x)


def _conv_general_dilated_batch(
    axis, args, dims, *, dimension_numbers, feature_group_count, batch_group_count, **params
):
    # One convolution: a mapped lhs joins the convolution's batch, a mapped kernel its output
    # features; both mapped, each example is a group of its own (the lhs features, or with
    # batch groups the lhs batch, split into B more groups, each with its own kernel).
    (lhs, rhs), (ld, rd) = args, dims
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    fg, bg = feature_group_count, batch_group_count
    size = axis.size
    if ld is not not_mapped and rd is not not_mapped:
        if bg > 1:
            lhs, bg = _fold_batch_into(lhs, ld, lhs_spec[0]), bg * size
        else:
            lhs, fg = _fold_batch_into(lhs, ld, lhs_spec[1]), fg * size
        rhs = _fold_batch_into(rhs, rd, rhs_spec[0])
        out_dim, groups = out_spec[1], 1
    elif ld is not not_mapped:
        lhs = _fold_batch_into(lhs, ld, lhs_spec[0], bg)
        out_dim, groups = out_spec[0], 1  # the output batch has no groups
    else:
        groups = fg * bg  # one of them is 1
        rhs = _fold_batch_into(rhs, rd, rhs_spec[0], groups)
        out_dim = out_spec[1]
    out = conv_general_dilated_p.bind(
        lhs,
        rhs,
        dimension_numbers=dimension_numbers,
        feature_group_count=fg,
        batch_group_count=bg,
        **params,
    )
    return [_unfold_batch(out, out_dim, size, groups)], [out_dim]


batching.batch_rules[dot_general_p] = _dot_general_batch
batching.batch_rules[conv_general_dilated_p] = _conv_general_dilated_batch


# --------------------------------------------------------------------------- compositions
# JAX's wrappers around the two primitives: transposed convolutions, patch extraction,
# unshared (local) convolutions, batched matmuls, ragged and scaled dots. Each is a
# composition of existing primitives, so its derivatives and batching come from theirs.

# Where the spec strings are, as JAX's type alias: three strings, a ConvDimensionNumbers or
# None.
ConvGeneralDilatedDimensionNumbers = tuple[str, str, str] | ConvDimensionNumbers | None


def conv_shape_tuple(lhs_shape, rhs_shape, strides, pads, batch_group_count=1):
    """The output shape of a convolution of operands in the canonical layout
    (``NC...``, ``OI...``); ``pads`` is a padding string or ``(low, high)`` pairs."""
    if isinstance(pads, str):
        pads = padtype_to_pads(lhs_shape[2:], rhs_shape[2:], strides, pads)
    if len(pads) != len(lhs_shape) - 2:
        raise TypeError(
            f"Wrong number of explicit pads for convolution: expected "
            f"{len(lhs_shape) - 2}, got {len(pads)}."
        )
    padded = [d + lo + hi for d, (lo, hi) in zip(lhs_shape[2:], pads, strict=True)]
    if any(p < 0 for p in padded):
        raise ValueError(
            "Negative padding is larger than the size of the corresponding "
            f"dimension: got padding={pads} for lhs_shape[2:]={lhs_shape[2:]}"
        )
    space = tuple(
        max((p - k) // s + 1, 0) for p, k, s in zip(padded, rhs_shape[2:], strides, strict=True)
    )
    batch = lhs_shape[0] // batch_group_count if batch_group_count > 1 else lhs_shape[0]
    return (batch, rhs_shape[0]) + space


def _take(shape, perm):
    return tuple(int(shape[i]) for i in perm)


def _untake(shape, perm):
    return tuple(shape[i] for i in np.argsort(perm))


def conv_general_shape_tuple(lhs_shape, rhs_shape, window_strides, padding, dimension_numbers):
    """The output shape of ``conv_general_dilated`` for spec strings ``dimension_numbers``."""
    lhs_perm, rhs_perm, out_perm = conv_general_permutations(dimension_numbers)
    out = conv_shape_tuple(
        _take(lhs_shape, lhs_perm), _take(rhs_shape, rhs_perm), window_strides, padding
    )
    return _untake(out, out_perm)


def _conv_transpose_padding(k, s, padding):
    """The (low, high) padding of one dimension of a transposed convolution whose forward
    convolution had kernel size ``k``, stride ``s`` and ``padding``."""
    if padding == "SAME":
        total = k + s - 2
        lo = k - 1 if s > k - 1 else -(-total // 2)
    elif padding == "VALID":
        total = k + s - 2 + max(k - s, 0)
        lo = k - 1
    elif isinstance(padding, (tuple, list)) and len(padding) == 2:
        lo, hi = (k - p - 1 for p in padding)
        total = lo + hi
    else:
        raise ValueError(f"Invalid padding mode: {padding}")
    return lo, total - lo


def conv_transpose_shape_tuple(lhs_shape, rhs_shape, window_strides, padding, dimension_numbers):
    """The output shape of ``conv_transpose`` for spec strings ``dimension_numbers``."""
    lhs_perm, rhs_perm, out_perm = conv_general_permutations(dimension_numbers)
    lhs_t, rhs_t = _take(lhs_shape, lhs_perm), _take(rhs_shape, rhs_perm)
    if isinstance(padding, str):
        padding = [
            _conv_transpose_padding(k, s, padding)
            for k, s in zip(rhs_t[2:], window_strides, strict=False)
        ]
    space = tuple(
        (i - 1) * s - k + 2 + sum(p)
        for i, k, s, p in zip(lhs_t[2:], rhs_t[2:], window_strides, padding, strict=False)
    )
    return _untake((lhs_t[0], rhs_t[0]) + space, out_perm)


_CONV_TRANSPOSE_DEFAULT_SPECS = {
    2: ("NC", "IO", "NC"),
    3: ("NHC", "HIO", "NHC"),
    4: ("NHWC", "HWIO", "NHWC"),
    5: ("NHWDC", "HWDIO", "NHWDC"),
}


def conv_transpose(
    lhs,
    rhs,
    strides,
    padding,
    rhs_dilation=None,
    dimension_numbers=None,
    transpose_kernel=False,
    precision=None,
    preferred_element_type=None,
    use_consistent_padding=False,
):
    """A transposed ("fractionally strided") convolution: ``conv_general_dilated`` with the
    ``strides`` as lhs dilation.

    Args:
      lhs: the input, rank ``n + 2``; rhs: the kernel, rank ``n + 2``.
      strides: ``n`` fractional strides.
      padding: ``'SAME'`` or ``'VALID'`` (the padding of the forward convolution this one
        transposes) or ``n`` ``(low, high)`` pairs, the transposed convolution's own padding
        (with ``use_consistent_padding=True`` pairs are the forward convolution's too).
      rhs_dilation: ``n`` kernel dilation factors.
      dimension_numbers: as ``conv_general_dilated``; ``None`` is TensorFlow's layout
        (``NHWC``, ``HWIO``, ``NHWC`` and its 1-D/3-D forms).
      transpose_kernel: flip the kernel's spatial dimensions and swap its in and out
        features, which makes this the gradient of the forward convolution (Keras's
        Conv2DTranspose).

    Example: ``conv_transpose(x, w, (2, 2), 'SAME')`` doubles the spatial size of ``x``.
    """
    name = "lax.conv_transpose"
    lhs_shape, rhs_shape = get_aval(lhs).shape, get_aval(rhs).shape
    ndim = len(lhs_shape)
    if ndim != len(rhs_shape) or ndim < 2:
        raise TypeError(
            f"{name}: lhs and rhs must have the same rank, at least 2, got shapes "
            f"{lhs_shape} and {rhs_shape}"
        )
    if dimension_numbers is None:
        if ndim not in _CONV_TRANSPOSE_DEFAULT_SPECS:
            raise ValueError("No 4+ dimensional dimension_number defaults.")
        dimension_numbers = _CONV_TRANSPOSE_DEFAULT_SPECS[ndim]
    dn = conv_dimension_numbers(lhs_shape, rhs_shape, dimension_numbers)
    n = ndim - 2
    strides = _int_tuple(strides, n, "strides", name)
    rhs_dilation = (
        (1,) * n if rhs_dilation is None else _int_tuple(rhs_dilation, n, "rhs_dilation", name)
    )
    if use_consistent_padding or padding in ("SAME", "VALID"):
        kernel = [
            _dilate_dim(rhs_shape[d], r) for d, r in zip(dn.rhs_spec[2:], rhs_dilation, strict=True)
        ]
        per_dim = [padding] * n if isinstance(padding, str) else list(padding)
        pads = tuple(
            _conv_transpose_padding(k, s, p)
            for k, s, p in zip(kernel, strides, per_dim, strict=True)
        )
    else:
        pads = padding
    if transpose_kernel:
        rhs = rev(rhs, tuple(dn.rhs_spec[2:]))
        perm = list(range(ndim))
        perm[dn.rhs_spec[0]], perm[dn.rhs_spec[1]] = dn.rhs_spec[1], dn.rhs_spec[0]
        rhs = transpose_dims(rhs, tuple(perm))
    return conv_general_dilated(
        lhs,
        rhs,
        (1,) * n,
        pads,
        strides,
        rhs_dilation,
        dn,
        precision=precision,
        preferred_element_type=preferred_element_type,
    )


def _moveaxis(x, src, dst):
    """Move dimensions ``src`` of ``x`` to positions ``dst`` (the others keep their order)."""
    ndim = get_aval(x).ndim
    src = [s % ndim for s in src]
    dst = [d % ndim for d in dst]
    rest = [i for i in range(ndim) if i not in src]
    perm = [None] * ndim
    for s, d in sorted(zip(src, dst, strict=True), key=lambda p: p[1]):
        perm[d] = s
    it = iter(rest)
    perm = tuple(next(it) if p is None else p for p in perm)
    return x if perm == tuple(range(ndim)) else transpose_dims(x, perm)


def conv_general_dilated_patches(
    lhs,
    filter_shape,
    window_strides,
    padding,
    lhs_dilation=None,
    rhs_dilation=None,
    dimension_numbers=None,
    precision=None,
    preferred_element_type=None,
):
    """The patches ``conv_general_dilated`` would multiply with a kernel of spatial shape
    ``filter_shape``, flattened into the output feature dimension (features major, then the
    window positions in the kernel spec's order): a convolution with a one-hot kernel, one
    feature group per input feature.

    ``precision`` is one ``Precision`` (the lhs's), as JAX's.
    """
    filter_shape = tuple(int(k) for k in filter_shape)
    lhs_aval = get_aval(lhs)
    dn = conv_dimension_numbers(lhs_aval.shape, (1, 1) + filter_shape, dimension_numbers)
    size = int(np.prod(filter_shape, dtype=np.int64))
    channels = lhs_aval.shape[dn.lhs_spec[1]]
    eye = convert_element_type(
        eq(
            broadcasted_iota(dtypes.int32, (size, size), 0),
            broadcasted_iota(dtypes.int32, (size, size), 1),
        ),
        lhs_aval.dtype,
    )
    rhs = broadcast_in_dim(eye, (channels, size, size), (1, 2))
    rhs = reshape(rhs, (channels * size, 1) + filter_shape)
    rhs = _moveaxis(rhs, (0, 1), (dn.rhs_spec[0], dn.rhs_spec[1]))
    return conv_general_dilated(
        lhs,
        rhs,
        window_strides,
        padding,
        lhs_dilation,
        rhs_dilation,
        dn,
        feature_group_count=channels,
        precision=None if precision is None else (precision, Precision.DEFAULT),
        preferred_element_type=preferred_element_type,
    )


def conv_general_dilated_local(
    lhs,
    rhs,
    window_strides,
    padding,
    filter_shape,
    lhs_dilation=None,
    rhs_dilation=None,
    dimension_numbers=None,
    precision=None,
):
    """An unshared ("locally connected") convolution: a separate kernel at each output
    position. ``rhs``'s spatial dimensions are the output positions and its ``I`` dimension
    holds the input features times the receptive window (``filter_shape``), flattened as
    ``conv_general_dilated_patches`` flattens them."""
    name = "lax.conv_general_dilated_local"
    c_precision = canonicalize_precision(precision, name)
    if isinstance(c_precision, (DotAlgorithm, DotAlgorithmPreset)):  # a pair is needed
        raise ValueError(f"Unsupported precision for conv_general_dilated_local: {precision}")
    lhs_precision = None if c_precision is None else c_precision[0]
    patches = conv_general_dilated_patches(
        lhs,
        filter_shape,
        window_strides,
        padding,
        lhs_dilation,
        rhs_dilation,
        dimension_numbers,
        precision=lhs_precision,
    )
    _, rhs_spec, out_spec = conv_dimension_numbers(
        get_aval(lhs).shape, (1, 1) + tuple(filter_shape), dimension_numbers
    )
    lhs_b = list(out_spec[2:])
    rhs_b = list(rhs_spec[2:])
    rhs_b = [rhs_b[i] for i in sorted(range(len(rhs_b)), key=lambda k: lhs_b[k])]
    lhs_b = sorted(lhs_b)
    dn = (((out_spec[1],), (rhs_spec[1],)), (tuple(lhs_b), tuple(rhs_b)))
    out = dot_general(patches, rhs, dn, precision=precision)
    return _moveaxis(out, (-2, -1), (out_spec[0], out_spec[1]))


def batch_matmul(lhs, rhs, precision=None):
    """Batched matrix product: ``lhs`` ``(..., m, k)`` times ``rhs`` ``(..., k, n)``, the
    leading dimensions batch dimensions of equal sizes."""
    ln, rn = get_aval(lhs).ndim, get_aval(rhs).ndim
    if min(ln, rn) < 2:
        raise ValueError(f"Arguments to batch_matmul must be at least 2D, got {ln}, {rn}")
    if ln != rn:
        raise ValueError(f"Arguments to batch_matmul must have same ndim, got {ln}, {rn}")
    batch = tuple(range(ln - 2))
    return dot_general(lhs, rhs, (((ln - 1,), (rn - 2,)), (batch, batch)), precision=precision)


@dataclasses.dataclass(frozen=True)
class RaggedDotDimensionNumbers:
    """The dimensions of a ragged dot: ``dot_dimension_numbers`` as ``dot_general``'s, the
    lhs's one ragged dimension (``lhs_ragged_dimensions``) and the rhs's group dimension
    (``rhs_group_dimensions``: one when the ragged dimension is a free one, else none)."""

    dot_dimension_numbers: DotDimensionNumbers
    lhs_ragged_dimensions: Sequence[int]
    rhs_group_dimensions: Sequence[int]

    def __init__(self, dot_dimension_numbers, lhs_ragged_dimensions, rhs_group_dimensions):
        dims = tuple(
            tuple(tuple(int(d) for d in side) for side in pair) for pair in dot_dimension_numbers
        )
        object.__setattr__(self, "dot_dimension_numbers", dims)
        object.__setattr__(
            self, "lhs_ragged_dimensions", tuple(int(d) for d in lhs_ragged_dimensions)
        )
        object.__setattr__(
            self, "rhs_group_dimensions", tuple(int(d) for d in rhs_group_dimensions)
        )


_BASIC_RAGGED_DOT_DIMENSION_NUMBERS = RaggedDotDimensionNumbers(
    dot_dimension_numbers=(((1,), (1,)), ((), ())),
    lhs_ragged_dimensions=(0,),
    rhs_group_dimensions=(0,),
)


def _ragged_groups_mask(x, dim, group_sizes, prefix):
    """``x`` spread over the groups: ``[g, *x.shape]``, group ``i`` keeping only its rows of
    ``x``'s ragged dimension ``dim`` (rows ``[sum(gs[:i]), sum(gs[:i + 1]))``). The leading
    dimensions of a rank > 1 ``group_sizes`` are ``x``'s dimensions ``prefix``."""
    shape = get_aval(x).shape
    gs_aval = get_aval(group_sizes)
    out_shape = (gs_aval.shape[-1],) + tuple(shape)
    ends = cumsum(group_sizes, axis=gs_aval.ndim - 1)
    starts = sub(ends, group_sizes)
    gs_dims = tuple(1 + d for d in prefix[len(prefix) - (gs_aval.ndim - 1) :]) + (0,)
    ends = broadcast_in_dim(ends, out_shape, gs_dims)
    starts = broadcast_in_dim(starts, out_shape, gs_dims)
    rows = broadcasted_iota(gs_aval.dtype, out_shape, dim + 1)
    mask = bitwise_and(le(starts, rows), lt(rows, ends))
    spread = broadcast_in_dim(x, out_shape, tuple(range(1, len(out_shape))))
    return select(mask, spread, full_like(spread, 0))


def _ragged_prefix(kind, rank, ragged, batch, contract):
    """The operand dimensions that a rank > 1 ``group_sizes``'s leading dimensions match."""
    free = [d for d in range(rank) if d not in batch and d not in contract]
    if kind == "free":
        return list(batch) + free[: free.index(ragged)]
    if kind == "contracting":
        return list(batch) + list(contract[: contract.index(ragged)])
    return list(batch[: batch.index(ragged)])


def ragged_dot_general(
    lhs,
    rhs,
    group_sizes,
    ragged_dot_dimension_numbers,
    precision=None,
    preferred_element_type=None,
    group_offset=None,
):
    """A dot of ``lhs``, whose one ragged dimension is split into ``len(group_sizes)``
    consecutive groups, with ``rhs``. Three modes, by the kind of the ragged dimension:

    - a free dimension ``m``: ``rhs`` has a group dimension; each group of rows of ``lhs``
      multiplies its own slice of ``rhs``; ``[m, k], [g, k, n] -> [m, n]``.
    - a contracting dimension ``k``: each group contracts separately;
      ``[m, k], [k, n] -> [g, m, n]``.
    - a batch dimension: a plain ``dot_general``.

    Rows past ``sum(group_sizes)`` give zeros, as JAX's. ``group_offset`` is not supported
    (``NotImplementedError``, as JAX's CPU backend).
    """
    name = "lax.ragged_dot_general"
    if group_offset is not None:
        raise NotImplementedError("Unimplemented group_offset support.")
    dnums = ragged_dot_dimension_numbers
    if not isinstance(dnums, RaggedDotDimensionNumbers):
        raise TypeError(
            f"{name}: ragged_dot_dimension_numbers must be a "
            f"RaggedDotDimensionNumbers, got {dnums!r}"
        )
    lhs_aval, rhs_aval, gs_aval = get_aval(lhs), get_aval(rhs), get_aval(group_sizes)
    if not dtypes.is_int(gs_aval.dtype):
        raise TypeError(
            f"{name} requires that group_sizes.dtype is subtype of np.integer, got {gs_aval.dtype}."
        )
    if len(dnums.lhs_ragged_dimensions) != 1:
        raise TypeError(
            f"{name} expects exactly one lhs ragged dimension, got {dnums.lhs_ragged_dimensions}."
        )
    if gs_aval.ndim == 0:
        raise TypeError(f"{name}: expected rank of group_sizes to be >=1.")
    ragged = dnums.lhs_ragged_dimensions[0]
    if not 0 <= ragged < lhs_aval.ndim:
        raise TypeError(
            f"{name} requires lhs ragged dimension numbers to be nonnegative and "
            f"less than the number of axes of the lhs value, got {ragged} for "
            f"lhs of rank {lhs_aval.ndim}."
        )
    (lc, rc), (lb, rb) = dnums.dot_dimension_numbers
    kind = "contracting" if ragged in lc else "batch" if ragged in lb else "free"
    prefix = _ragged_prefix(kind, lhs_aval.ndim, ragged, lb, lc)
    if gs_aval.ndim != 1:
        expected = tuple(lhs_aval.shape[d] for d in prefix) + (gs_aval.shape[-1],)
        if gs_aval.shape != expected:
            raise TypeError(
                f"{name}: expected group_sizes to have shape {expected}, got {gs_aval.shape}."
            )
    groups = gs_aval.shape[-1]
    group_dims = dnums.rhs_group_dimensions
    if kind != "free" and group_dims:
        raise TypeError(
            f"{name} requires zero group dimensions in the rhs when lhs ragged "
            "dimension is contracting or batch."
        )
    if kind == "free":
        if len(group_dims) != 1:
            raise TypeError(
                f"{name} requires exactly one rhs group dimension when lhs ragged "
                "dimension is noncontracting."
            )
        g = group_dims[0]
        if not 0 <= g < rhs_aval.ndim:
            raise TypeError(
                f"{name} requires rhs group dimension numbers to be nonnegative "
                "and less than the number of axes of the rhs value, got "
                f"{g} for rhs of rank {rhs_aval.ndim}."
            )
        if g in rb or g in rc:
            raise TypeError(
                f"{name} requires rhs group dimension numbers to be distinct "
                "from contracting and batch dimensions."
            )
        if rhs_aval.shape[g] != groups:
            raise TypeError(
                f"{name}: expected rhs group dimension size to be {groups}, got "
                f"{rhs_aval.shape[g]}."
            )
    up = lambda dims: tuple(d + 1 for d in dims)  # noqa: E731
    if kind == "batch":
        return dot_general(lhs, rhs, dnums.dot_dimension_numbers, precision, preferred_element_type)
    spread_lhs = _ragged_groups_mask(lhs, ragged, group_sizes, prefix)
    if kind == "free":  # the group dimension contracts with the rhs's group dimension
        dims = ((up(lc) + (0,), tuple(rc) + (group_dims[0],)), (up(lb), tuple(rb)))
        return dot_general(spread_lhs, rhs, dims, precision, preferred_element_type)
    rhs_ragged = rc[lc.index(ragged)]
    rhs_prefix = _ragged_prefix(kind, rhs_aval.ndim, rhs_ragged, rb, rc)
    spread_rhs = _ragged_groups_mask(rhs, rhs_ragged, group_sizes, rhs_prefix)
    dims = ((up(lc), up(rc)), ((0,) + up(lb), (0,) + up(rb)))
    return dot_general(spread_lhs, spread_rhs, dims, precision, preferred_element_type)


def ragged_dot(
    lhs, rhs, group_sizes, precision=None, preferred_element_type=None, group_offset=None
):
    """Ragged matrix product: ``lhs`` ``(m, k)``, its rows in ``g`` consecutive groups of
    sizes ``group_sizes`` ``(g,)``, each multiplied by its own ``rhs[i]`` ``(k, n)``; rows
    past ``sum(group_sizes)`` give zeros. Returns ``(m, n)``."""
    return ragged_dot_general(
        lhs,
        rhs,
        group_sizes,
        _BASIC_RAGGED_DOT_DIMENSION_NUMBERS,
        precision,
        preferred_element_type,
        group_offset,
    )


def _scale_operand(name, side, x, scale, contract, out_type):
    """``x * scale`` of their bfloat16 roundings, each scale entry repeated over its block of
    the contracting dimensions (as JAX's CPU decomposition)."""
    x_shape, s_shape = get_aval(x).shape, get_aval(scale).shape
    for i, size in enumerate(x_shape):
        if i in contract:
            if s_shape[i] == 0 or size % s_shape[i]:
                raise TypeError(
                    f"{name}: {side} contracting dim {i} of size {size} must be "
                    f"divisible by its scale's dim size {s_shape[i]}."
                )
            if size // s_shape[i] < 2:
                raise TypeError(
                    f"{name}: the ratio of {side} contracting dim {i} to its "
                    f"scale's dim size ({size // s_shape[i]}) must be at least 2."
                )
        elif s_shape[i] != size:
            raise TypeError(
                f"{name}: {side} dim {i} of size {size} does not match scale dim size {s_shape[i]}."
            )
    for i in sorted(contract):
        shape = get_aval(scale).shape
        reps = x_shape[i] // shape[i]
        if reps != 1:
            wide = shape[: i + 1] + (reps,) + shape[i + 1 :]
            dims = tuple(d if d <= i else d + 1 for d in range(len(shape)))
            scale = reshape(
                broadcast_in_dim(scale, wide, dims), shape[:i] + (shape[i] * reps,) + shape[i + 1 :]
            )
    x, scale = (convert_element_type(v, dtypes.bfloat16) for v in (x, scale))
    if out_type == dtypes.bfloat16:
        return mul(x, scale)
    # The product of two bfloat16 values is exact in float32: XLA's CPU backend leaves it
    # unrounded when the dot accumulates into a wider type.
    return mul(convert_element_type(x, dtypes.float32), convert_element_type(scale, dtypes.float32))


def scaled_dot(
    lhs, rhs, *, lhs_scale=None, rhs_scale=None, dimension_numbers=None, preferred_element_type=None
):
    """``dot_general(lhs * lhs_scale, rhs * rhs_scale)``, each scale repeated over blocks of
    the contracting dimensions (block-scaled, e.g. microscaling formats). The products are
    formed in bfloat16 and accumulated in ``preferred_element_type`` (default bfloat16), as
    JAX's CPU decomposition. Scales default to ones.

    ``dimension_numbers`` defaults to a (batched) matmul: the last dimension of ``lhs``
    with the second-to-last of ``rhs``, the leading ones batch dimensions.
    """
    name = "lax.scaled_dot"
    lhs_aval, rhs_aval = get_aval(lhs), get_aval(rhs)
    if dimension_numbers is None:
        n = lhs_aval.ndim
        if n < 2:
            raise TypeError("scaled_dot does not support 0-rank and 1-rank operands.")
        dimension_numbers = (((n - 1,), (n - 2,)), (tuple(range(n - 2)), tuple(range(n - 2))))
    (lc, rc), (lb, rb) = dimension_numbers
    ranks = {lhs_aval.ndim, rhs_aval.ndim} | {
        get_aval(s).ndim for s in (lhs_scale, rhs_scale) if s is not None
    }
    if len(ranks) != 1:
        raise TypeError(
            f"{name}: all input tensors must have the same rank, got lhs rank "
            f"{lhs_aval.ndim} and rhs rank {rhs_aval.ndim} (and their scales')."
        )
    if len(lb) != len(rb) or len(lc) != len(rc):
        raise TypeError(
            f"{name}: LHS and RHS must have the same numbers of batch and "
            f"contracting dimensions, got {dimension_numbers}."
        )
    for i, j in zip(lc, rc, strict=True):
        if lhs_aval.shape[i] != rhs_aval.shape[j]:
            raise TypeError(
                f"{name}: LHS contracting dim {i} of size {lhs_aval.shape[i]} "
                f"does not match RHS contracting dim {j} of size "
                f"{rhs_aval.shape[j]}."
            )
    out_type = (
        dtypes.bfloat16_dtype
        if preferred_element_type is None
        else _preferred_dtype(preferred_element_type)
    )
    scaled = [
        convert_element_type(x, dtypes.bfloat16)
        if scale is None
        else _scale_operand(name, side, x, scale, contract, out_type)
        for side, x, scale, contract in (("LHS", lhs, lhs_scale, lc), ("RHS", rhs, rhs_scale, rc))
    ]
    return dot_general(*scaled, dimension_numbers, preferred_element_type=out_type)


staging.memoize_abstract_eval(dot_general_p)

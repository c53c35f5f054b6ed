"""Array conversion, dtype promotion and shape broadcasting, as jax.numpy does them.

Every ``xform.numpy`` function starts here: ``asarray`` turns Python and NumPy values into
arrays, ``promote_args`` gives operands one dtype (the jax.numpy lattice of
``xform.dtypes.promote``, with weakly typed Python scalars) and one shape (``broadcast_in_dim``;
rank-0 operands stay rank-0 because lax's elementwise ops accept them, so ``x * 2.0`` stages
as ``mul a 2.0:f32[]``).
"""

import builtins
import warnings

import numpy as np

from lowering import runtime
from xform import config, core, dtypes
from xform.core import ShapedArray, Tracer
from xform.errors import IncompatibleShapesError
from xform.lax import _names as lax
from xform.primitives.base import user_dtype
from xform.primitives.elementwise import convert_element_type_p, copy_p
from xform.runtime.array import Array, from_host, mark_subnormals

_PY_SCALARS = (bool, int, float, complex)


_WEAK_PY_TYPES = (int, float, complex)


# --------------------------------------------------------------------------- dtypes


def _canonical_dtype(dtype, name="dtype", warn=True):
    """A user's dtype argument (np type, string, dtype, Python type) in canonical form; a
    64-bit dtype without x64 warns (``warn``), as JAX's dtype arguments do."""
    if dtype is bool:
        return dtypes.bool_
    if dtype is int:
        return dtypes.default_int()
    if dtype is float:
        return dtypes.default_float()
    if dtype is complex:
        return dtypes.default_complex()
    if isinstance(dtype, (Array, Tracer)):
        raise ValueError(
            f"{name}: passing an array as a dtype argument is not supported; use dtype=arr.dtype"
        )
    try:
        dt = np.dtype(dtype)
    except TypeError as e:
        raise TypeError(f"{name}: {dtype!r} is not a valid dtype") from e
    if dt not in dtypes.SUPPORTED:
        raise TypeError(
            f"xform.numpy only supports number and bool dtypes, got dtype {dt} in {name}"
        )
    return user_dtype(dt, name, stacklevel=4) if warn else dtypes.canonicalize(dt)


def _dtype_and_weak(x):
    """(dtype, weak_type) of a value or a dtype specifier, as JAX's lattice sees it."""
    if isinstance(x, (Tracer, Array)):
        return x.aval.dtype, x.aval.weak_type
    t = type(x)
    if t in _PY_SCALARS:
        return dtypes.python_scalar_dtype(x), t is not bool
    if isinstance(x, type) and x in _PY_SCALARS:
        return _canonical_dtype(x, warn=False), x is not bool
    if isinstance(x, (np.ndarray, np.generic)):
        return _canonical_dtype(x.dtype, warn=False), False
    if isinstance(x, _PY_SCALARS):  # subclasses of Python scalars (IntEnum, np.float64)
        return dtypes.python_scalar_dtype(x), not isinstance(x, bool)
    if isinstance(x, str) or isinstance(x, (np.dtype, type)):
        return _canonical_dtype(x, "result_type", warn=False), False
    if hasattr(x, "dtype"):
        return (
            _canonical_dtype(x.dtype, "result_type", warn=False),
            bool(getattr(x, "weak_type", False)),
        )
    raise TypeError(f"Cannot determine dtype of {x!r} (type {type(x).__name__})")


_WEAK_KIND = {bool: "b", int: "iufVc", float: "fVc", complex: "c"}  # V: bfloat16


def _check_strict_promotion(pairs):
    """jax_numpy_dtype_promotion "strict": no implicit promotion between different dtypes; a
    weak Python scalar joins only an array of its own kind."""
    strong = {d for d, w in pairs if not w}
    weak = {
        bool if d.kind == "b" else int if d.kind in "iu" else float if d.kind in "fV" else complex
        for d, w in pairs
        if w
    }
    ok = len(strong) <= 1 and all(d.kind in _WEAK_KIND[t] for d in strong for t in weak)
    if not ok:
        names = sorted({str(d) for d in strong} | {str(t) for t in weak})
        raise dtypes.TypePromotionError(
            f"Input dtypes {tuple(names)} have no available implicit dtype promotion path "
            "when jax_numpy_dtype_promotion=strict. Try explicitly casting inputs to the "
            "desired output type, or set jax_numpy_dtype_promotion=standard."
        )


def lattice_result_type(*args):
    """(dtype, weak_type) of an operation on ``args``: JAX's ``lattice_result_type``."""
    pairs = [_dtype_and_weak(x) for x in args]
    if not pairs:
        raise ValueError("at least one array or dtype is required")
    if config.values.numpy_dtype_promotion == "strict":
        _check_strict_promotion(pairs)
    return dtypes.lattice_join(pairs)


def result_type(*args, return_weak_type_flag=False):
    """The dtype jax.numpy gives an operation on ``args`` (arrays, scalars or dtypes)."""
    dtype, weak = lattice_result_type(*(dtypes.default_float() if a is None else a for a in args))
    if weak:
        dtype = dtypes.weak_default(dtype)
    dtype = dtypes.canonicalize(dtype)
    return (dtype, weak) if return_weak_type_flag else dtype


_WIDE = {dtypes.int64, dtypes.uint64, dtypes.float64, dtypes.complex128}


def promote_types(a, b):
    """The dtype to which a binary operation casts ``a`` and ``b`` (not canonicalized).

    Python's ``int``, ``float`` and ``complex`` types are weak: ``promote_types(np.uint8,
    int)`` is ``uint8``.
    """
    nodes = []
    for t in (a, b):
        if any(t is w for w in _WEAK_PY_TYPES):
            nodes.append((np.dtype(t), True))
        else:
            dt = np.dtype(t)
            if dt not in dtypes.SUPPORTED:
                raise TypeError(f"promote_types: unsupported dtype {dt}")
            nodes.append((dt, False))
    with config.enable_x64_scope(True):
        out, _ = dtypes.promote(*nodes)
    # Without x64, JAX never forms a 64-bit type from narrower inputs (uint32 x int32 is
    # int32, not int64).
    if not config.x64_enabled() and out in _WIDE and not any(w or d in _WIDE for d, w in nodes):
        out = dtypes.canonicalize(out)
    return out


# --------------------------------------------------------------------------- conversion


def _is_arraylike(x):
    # runtime.BufferType: JAX's own arrays, which xform computes on in place.
    return (
        isinstance(x, (Tracer, Array, np.ndarray, np.generic, runtime.BufferType))
        or type(x) in _PY_SCALARS
        or isinstance(x, _PY_SCALARS)
    )


def check_arraylike(name, *args):
    """jax.numpy functions take arrays and scalars, not lists: ``TypeError`` otherwise."""
    for i, x in enumerate(args):
        if not _is_arraylike(x):
            if isinstance(x, str):
                raise TypeError(f"{name}: strings are not supported (got {x!r} at position {i})")
            raise TypeError(
                f"{name} requires ndarray or scalar arguments, got {type(x)} at position {i}."
            )


_scalar_avals = {}  # (dtype, weak) -> the rank-0 aval: one object, not one per scalar operand


def _scalar_aval(dtype, weak):
    # Shared, so later memo lookups keyed by this aval (dispatch's and staging's) find the
    # very object they stored and compare it by identity.
    aval = _scalar_avals.get((dtype, weak))
    if aval is None:
        aval = _scalar_avals[(dtype, weak)] = ShapedArray((), dtype, weak)
    return aval


_INT_RANGES = {}  # dtype -> (min, max) of the integer dtypes, for the Python-int checks


def _int_range(dtype):
    bounds = _INT_RANGES.get(dtype)
    if bounds is None:
        info = dtypes.iinfo(dtype)
        bounds = _INT_RANGES[dtype] = (int(info.min), int(info.max))
    return bounds


def _python_int(x, dtype, requested):
    """The Python int ``x`` as JAX converts it to ``dtype``. A ``requested`` dtype (``asarray(x,
    dtype)``) must hold it, as in NumPy. Otherwise (``int8_array + 300``, promotion) it must fit
    the default integer type, int32 or int64 with x64, and then wraps around to ``dtype`` as
    XLA's conversion does."""
    if requested:
        if dtype.kind in "iu":
            lo, hi = _int_range(dtype)
            if not lo <= x <= hi:
                raise OverflowError(f"Python integer {x} out of bounds for {dtype}")
        return x
    default = dtypes.default_int()
    lo, hi = _int_range(default)
    if not lo <= x <= hi:
        raise OverflowError(f"xform.numpy: Python int {x} too large to convert to {default}")
    if dtype.kind in "iu":
        lo, hi = _int_range(dtype)
        if lo <= x <= hi:
            return x
    elif -65504 <= x <= 65504:  # within the range of every float type (float16's)
        return x
    with np.errstate(all="ignore"):
        return np.array(x, default).astype(dtype)


def _scalar_array(x, dtype, weak, requested=False):
    """A rank-0 Array from a Python scalar (a jaxpr literal when staged)."""
    if isinstance(x, int) and not isinstance(x, bool):
        x = _python_int(int(x), dtype, requested)
    host = np.array(x, dtype)
    host.flags.writeable = False
    array = Array(_scalar_aval(dtype, weak), host)
    if type(x) is not int and 0 < abs(x) < _F32_TINY:  # rare: it may be subnormal in dtype
        mark_subnormals(array)
    return array


_F32_TINY = float(np.finfo(np.float32).tiny)  # subnormals of every float type lie below it


def convert(x, dtype, weak_type=False):
    """``x`` as ``dtype`` with the given weak type (``lax._convert_element_type``)."""
    if type(x) in _PY_SCALARS or (isinstance(x, _PY_SCALARS) and not isinstance(x, np.generic)):
        return _scalar_array(x, dtype, weak_type)
    if isinstance(x, (np.ndarray, np.generic)):
        x = from_host(x)
    aval = x.aval
    if aval.dtype == dtype and aval.weak_type == weak_type:
        return x
    return convert_element_type_p.bind(x, new_dtype=dtype, weak_type=weak_type)


def _leaves(obj, depth, shapes, leaves):
    """Walk a nested list/tuple: collect leaves and the shape at each nesting level."""
    if isinstance(obj, (list, tuple)):
        shapes.append((depth, len(obj)))
        for e in obj:
            _leaves(e, depth + 1, shapes, leaves)
    else:
        leaves.append((depth, obj))


def _nested_shape(obj):
    shapes, leaves = [], []
    _leaves(obj, 0, shapes, leaves)
    dims = {}
    for depth, n in shapes:
        if dims.setdefault(depth, n) != n:
            raise ValueError(
                f"array: setting an array element with a sequence; the nested "
                f"sequence is ragged (lengths {dims[depth]} and {n} at depth "
                f"{depth})"
            )
    return leaves


def asarray(a, dtype=None, order=None, *, copy=None, device=None):
    """Convert ``a`` (array, scalar, NumPy array, nested list) to an xform array.

    Python scalars become weakly typed arrays; NumPy data is copied; 64-bit inputs become
    32-bit unless x64 is enabled.
    """
    del order, copy, device  # arrays are immutable and placed by the runtime
    dtype = None if dtype is None else _canonical_dtype(dtype, "asarray")
    if isinstance(a, (Tracer, Array)):
        return a if dtype is None else convert(a, dtype, False)
    if a is None:
        raise ValueError("None is not a valid value for xform.numpy.array")  # as JAX's
    if isinstance(a, str) or (isinstance(a, np.ndarray) and a.dtype.kind in "USO"):
        raise TypeError(f"xform.numpy does not support string or object arrays, got {a!r}")
    if type(a) in _PY_SCALARS or (isinstance(a, _PY_SCALARS) and not isinstance(a, np.generic)):
        if dtype is None:
            d, weak = _dtype_and_weak(a)
            return _scalar_array(a, d, weak)
        return _scalar_array(a, dtype, False, requested=True)
    if isinstance(a, (np.ndarray, np.generic)):
        out = from_host(a)
        return out if dtype is None else convert(out, dtype, False)
    if isinstance(a, (list, tuple)):
        return _from_sequence(a, dtype)
    if type(a) is runtime.BufferType and a.dtype == dtypes.canonicalize(a.dtype):
        # A JAX array: an xform array on its device buffer (with its weak type), no copy
        # through the host (a float64 one without x64 is converted through the host below).
        out = Array(core.get_aval(a), None, a)
        return out if dtype is None else convert(out, dtype, False)
    if hasattr(a, "__jax_array__"):
        return asarray(a.__jax_array__(), dtype)
    if hasattr(a, "__array__"):
        return asarray(np.asarray(a), dtype)
    if core.is_symbolic_dim(a):  # a symbolic dimension (export) as a value
        return asarray(a.as_value(), dtype)
    raise TypeError(
        f"asarray: cannot convert an object of type {type(a).__name__} to an xform array"
    )


def _from_sequence(a, dtype):
    leaves = _nested_shape(a)
    values = [v for _, v in leaves]
    for v in values:
        if v is None:
            raise ValueError(
                "None is not a valid value for xform.numpy.array (found in a sequence)"
            )
        if isinstance(v, str):
            raise TypeError(f"xform.numpy does not support strings, got {v!r} in a sequence")
        if not _is_arraylike(v) and not hasattr(v, "__array__"):
            raise TypeError(f"array: cannot convert an element of type {type(v).__name__}")
    if dtype is None:
        dtype = lattice_result_type(*values)[0] if values else dtypes.default_float()
    if not any(isinstance(v, Tracer) for v in values):
        hosts = [np.asarray(v) if not isinstance(v, _PY_SCALARS) else v for v in values]
        for h in hosts:
            if isinstance(h, int) and not isinstance(h, bool) and dtypes.is_int(dtype):
                dtypes.check_int_range(h, dtype, "xform.numpy.array")
        with np.errstate(all="ignore"):
            host = np.array(_rebuild(a, iter(hosts)), dtype)
        return from_host(host)
    return _stack_nested(a, dtype)


def _rebuild(obj, it):
    if isinstance(obj, (list, tuple)):
        return [_rebuild(e, it) for e in obj]
    return next(it)


def _stack_nested(obj, dtype):
    if not isinstance(obj, (list, tuple)):
        return asarray(obj, dtype)
    parts = [_stack_nested(e, dtype) for e in obj]
    parts = [lax.expand_dims(p, (0,)) for p in parts]
    return lax.concatenate(parts, 0)


def array(object, dtype=None, copy=True, order="K", ndmin=0):  # noqa: A002  (NumPy's name)
    """Like ``asarray``; ``ndmin`` prepends size-1 dimensions."""
    del order
    if copy and isinstance(object, Tracer):  # as JAX's: a traced value is copied (an equation)
        out = asarray(copy_p.bind(object), dtype)
    else:
        out = asarray(object, dtype)
    if out.aval.ndim < ndmin:
        out = lax.expand_dims(out, tuple(range(ndmin - out.aval.ndim)))
    return out


# --------------------------------------------------------------------------- promotion


def promote_dtypes(*args):
    """Convert ``args`` to their common dtype (weakly typed if all of them are weak)."""
    if len(args) < 2:
        return [asarray(x) if not isinstance(x, (Tracer, Array)) else x for x in args]
    dtype, weak = lattice_result_type(*args)
    dtype = dtypes.canonicalize(dtype)
    return [convert(x, dtype, weak) for x in args]


def _to_inexact(dtype):
    """JAX's ``to_inexact_dtype``: integers up to 32 bits and bool become float32 (also with
    x64), 64-bit integers float64."""
    if dtypes.is_inexact(dtype):
        return dtype
    wide = dtype.itemsize == 8
    return dtypes.canonicalize(dtypes.float64 if wide else dtypes.float32)


def promote_dtypes_inexact(*args):
    """Promote, then ints and bools become the default float (``sin(int)`` is a float)."""
    dtype, weak = lattice_result_type(*args)
    dtype = _to_inexact(dtypes.canonicalize(dtype))
    return [convert(x, dtype, weak) for x in args]


def promote_dtypes_numeric(*args):
    """Promote, then bools become int32, as JAX's ``to_numeric_dtype`` (int32 under x64 too)."""
    if len(args) == 1:  # one array that is numeric already (``sum(x)``): nothing to do
        x = args[0]
        if isinstance(x, _ARRAY_TYPES) and x.aval.dtype in _NUMERIC:
            return [x]
    dtype, weak = lattice_result_type(*args)
    dtype = dtypes.canonicalize(dtype)
    if dtype == dtypes.bool_:
        dtype, weak = dtypes.int32, False
    return [convert(x, dtype, weak) for x in args]


def broadcast_shapes(*shapes, name="broadcast_shapes"):
    """The NumPy broadcast of ``shapes``; ``ValueError`` if they are incompatible."""
    if len(shapes) == 2 and type(shapes[0]) is tuple and type(shapes[1]) is tuple:
        out = _broadcast_pair(*shapes)
        if out is not None:
            return out
    try:
        ndim = builtins.max((len(s) for s in shapes), default=0)
    except TypeError:  # an int is a 1-d shape, as for jax.numpy.broadcast_shapes
        shapes = [(s,) if isinstance(s, (int, np.integer)) else s for s in shapes]
        ndim = builtins.max((len(s) for s in shapes), default=0)
    out = []
    for i in range(ndim):
        sizes = {s[i - ndim + len(s)] for s in shapes if i - ndim + len(s) >= 0}
        sizes.discard(1)
        if len(sizes) > 1:
            where = "" if name == "broadcast_shapes" else f"{name}: "
            raise IncompatibleShapesError(
                f"{where}Incompatible shapes for broadcasting: shapes={[tuple(s) for s in shapes]}"
            )
        out.append(sizes.pop() if sizes else 1)
    return tuple(out)


def _broadcast_pair(a, b):
    """Two shapes' broadcast, or None where they do not broadcast (the general path says so
    in its error). The common case of a binary op, without sets."""
    if len(a) < len(b):
        a, b = b, a
    lead = len(a) - len(b)
    out = list(a)
    for i, d in enumerate(b):
        e = a[lead + i]
        if d != e:
            if e == 1:
                out[lead + i] = d
            elif d != 1:
                return None
    return tuple(out)


def broadcast_to_shape(x, shape):
    """``x`` broadcast to ``shape`` with one ``broadcast_in_dim`` (none if already there)."""
    aval = core.get_aval(x)
    if aval.shape == shape:
        return x
    lead = len(shape) - aval.ndim
    if lead < 0 or any(d != 1 and d != shape[lead + i] for i, d in enumerate(aval.shape)):
        raise IncompatibleShapesError(
            f"Incompatible shapes for broadcasting: {aval.shape} and requested shape {shape}"
        )
    return lax.broadcast_in_dim(x, shape, tuple(range(lead, len(shape))))


def _check_rank_promotion(name, shapes):
    """jax_numpy_rank_promotion "raise" or "warn": operands of different nonzero ranks."""
    if len({len(s) for s in shapes if s}) < 2:
        return
    listed = " ".join(map(str, shapes))
    link = "see https://docs.jax.dev/en/latest/rank_promotion_warning.html."
    if config.values.numpy_rank_promotion == "raise":
        raise ValueError(
            f"Operands could not be broadcast together for {name} on shapes "
            f"{listed} and with the config option "
            f"jax_numpy_rank_promotion='raise'. For more information, {link}"
        )
    warnings.warn(
        f"Following NumPy automatic rank promotion for {name} on shapes {listed}. "
        "Set the jax_numpy_rank_promotion config option to 'allow' to disable this "
        f"warning; for more information, {link}",
        UserWarning,
        stacklevel=4,
    )


def promote_shapes(name, *args, full=True):
    """Broadcast operands to one shape; rank-0 operands are left for lax to broadcast.
    ``full=False`` (for an operation that is one n-ary lax primitive, as jax.numpy's ufuncs):
    operands of lower rank only get leading unit dimensions, and the primitive broadcasts
    size-1 dimensions itself (so jaxprs show JAX's ``f32[1,3]``, not ``f32[4,3]``)."""
    if len(args) < 2:
        return list(args)
    shapes = [core.get_aval(x).shape for x in args]
    if all(s == shapes[0] for s in shapes):
        return list(args)
    if not full and (
        all(len(s) == len(shapes[0]) for s in shapes) or len({len(s) for s in shapes if s}) < 2
    ):
        return list(args)  # equal ranks, or scalars: the primitive broadcasts
    if config.values.numpy_rank_promotion != "allow":
        _check_rank_promotion(name, shapes)
    shape = broadcast_shapes(*shapes, name=name)
    if not full:
        rank = len(shape)
        return [
            x if len(s) == rank else broadcast_to_shape(x, (1,) * (rank - len(s)) + s)
            for x, s in zip(args, shapes, strict=True)
        ]
    return [
        x if (not s and shape) else broadcast_to_shape(x, shape)
        for x, s in zip(args, shapes, strict=True)
    ]


_ARRAY_TYPES = (Tracer, Array)  # tracers first: their check is the plain one
_INEXACT = frozenset(d for d in dtypes.SUPPORTED if dtypes.is_inexact(d))
_NUMERIC = frozenset(d for d in dtypes.SUPPORTED if d != dtypes.bool_)
_FAST_SCALARS = {int: _NUMERIC, float: _INEXACT}


def _already_promoted(args, accepted):
    """``args`` as a list when no promotion or broadcasting is needed, else None.

    The common cases of a ufunc call, kept cheap: arrays of one type and shape, or an array
    and a Python scalar that becomes a weak rank-0 constant of the array's dtype.
    """
    first = args[0]
    if not isinstance(first, _ARRAY_TYPES):
        return None
    aval = first.aval
    dtype = aval.dtype
    if dtype not in accepted:
        return None
    if len(args) == 2:
        other = args[1]
        kinds = _FAST_SCALARS.get(type(other))
        if kinds is not None and not aval.weak_type and dtype in kinds:
            return [first, _scalar_array(other, dtype, True)]
    for x in args[1:]:
        if not isinstance(x, _ARRAY_TYPES):
            return None
        a = x.aval
        if a.dtype != dtype or a.weak_type != aval.weak_type or a.shape != aval.shape:
            return None
    return list(args)


def _same_types(args, accepted):
    """Whether ``args`` are arrays or tracers of one accepted dtype and weak type (their
    shapes may differ: a bias added to a batch), so only broadcasting is left to do."""
    first = args[0]
    if not isinstance(first, _ARRAY_TYPES):
        return False
    aval = first.aval
    if aval.dtype not in accepted:
        return False
    for x in args[1:]:
        if not isinstance(x, _ARRAY_TYPES):
            return False
        a = x.aval
        if a.dtype != aval.dtype or a.weak_type != aval.weak_type:
            return False
    return True


def _args_promoter(fn_name, promote, accepted, what):
    def promote_args(name, *args, full=True):
        fast = _already_promoted(args, accepted)
        if fast is not None:
            return fast
        if not _same_types(args, accepted):
            check_arraylike(name, *args)
            args = promote(*args)
        return promote_shapes(name, *args, full=full)

    promote_args.__doc__ = (
        f"Check, promote dtypes ({what}) and broadcast shapes (see "
        "``promote_shapes``): the start of every jnp ufunc."
    )
    promote_args.__name__ = promote_args.__qualname__ = fn_name
    return promote_args


promote_args = _args_promoter(
    "promote_args", promote_dtypes, dtypes.SUPPORTED, "to their common type"
)
promote_args_inexact = _args_promoter(
    "promote_args_inexact", promote_dtypes_inexact, _INEXACT, "to an inexact type"
)
promote_args_numeric = _args_promoter(
    "promote_args_numeric", promote_dtypes_numeric, _NUMERIC, "bool to int"
)


ACCEPTED_DTYPES = {
    promote_args: dtypes.SUPPORTED,
    promote_args_inexact: _INEXACT,
    promote_args_numeric: _NUMERIC,
}


def aval_of(x):
    return core.get_aval(x)

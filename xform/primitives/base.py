"""Registrars shared by the primitive families: one way to define each recurring shape of rule.

A primitive family module defines, per primitive and in this order: the public wrapper, the
``x_p`` object, its abstract evaluation, its NumPy host implementation (for fast eager
evaluation on a CPU), and later its jvp, transpose and batching rules. Lowering rules live in
``lowering/`` under the same family name.
"""

import functools
import warnings

import numpy as np

from xform import core, dtypes, errors
from xform.core import Primitive, ShapedArray

# Predicates on dtypes, with the words JAX's errors use for them.
FLOAT = (dtypes.is_float, "floating")
COMPLEX = (dtypes.is_complex, "complexfloating")
SIGNED = (dtypes.is_signed_int, "signedinteger")
UNSIGNED = (dtypes.is_unsigned_int, "unsignedinteger")
BOOL = ((lambda d: d == dtypes.bool_), "bool")
INEXACT = (FLOAT, COMPLEX)
INT = (SIGNED, UNSIGNED)
NUMBER = (FLOAT, COMPLEX, SIGNED, UNSIGNED)
ANY = (FLOAT, COMPLEX, SIGNED, UNSIGNED, BOOL)
INT_OR_BOOL = (SIGNED, UNSIGNED, BOOL)
FLOAT_OR_INT = (FLOAT, SIGNED, UNSIGNED)


_PYTHON_TYPES = (bool, int, float, complex)


def user_dtype(dtype, name, stacklevel=3):
    """The canonical form of a dtype a user asked for. A 64-bit dtype without x64 is narrowed
    with a ``UserWarning``, as JAX warns; Python's ``int``/``float``/``complex`` mean the
    default types and never warn. ``stacklevel``: how far up the caller is, for the warning."""
    canonical = dtypes.canonicalize(dtype)
    if canonical == dtype:  # the common case, kept cheap
        return canonical
    requested = np.dtype(dtype)
    if canonical != requested and not (isinstance(dtype, type) and dtype in _PYTHON_TYPES):
        warnings.warn(
            f"Explicitly requested dtype {requested} requested in {name} is not "
            f"available, and will be truncated to dtype {canonical}. To enable "
            "more dtypes, set the jax_enable_x64 configuration option "
            "(xform.config.update('jax_enable_x64', True)) or the JAX_ENABLE_X64 "
            "shell environment variable.",
            UserWarning,
            stacklevel=stacklevel,
        )
    return canonical


def standard_primitive(name, abstract_eval, host_impl=None, multiple_results=False):
    """Make a primitive and register its abstract evaluation and (optional) NumPy impl."""
    prim = Primitive(name, multiple_results)
    core.abstract_eval_rules[prim] = abstract_eval
    if host_impl is not None:
        core.host_impls[prim] = host_impl
    return prim


@functools.cache
def accepted_dtypes(kinds):
    """The supported dtypes in ``kinds``, as a set: membership is the fast check."""
    return frozenset(d for d in dtypes.SUPPORTED if any(pred(d) for pred, _ in kinds))


def check_dtype(name, dtype, kinds):
    if dtype not in accepted_dtypes(kinds):
        accepted = ", ".join(word for _, word in kinds)
        raise TypeError(
            f"{name} does not accept dtype {dtype}. Accepted dtypes are subtypes of {accepted}."
        )


def broadcast_elementwise_shapes(name, avals):
    """The result shape of an elementwise op. As in ``lax``: rank-0 operands broadcast, and
    operands of one rank broadcast along their size-1 dimensions; nothing else does."""
    shape = None
    for a in avals:
        if a.shape:
            if shape is None:
                shape = a.shape
            elif a.shape != shape:
                if len(a.shape) != len(shape) or any(
                    m not in (n, 1) and n != 1 for m, n in zip(a.shape, shape, strict=True)
                ):
                    shapes = ", ".join(str(b.shape) for b in avals)
                    raise TypeError(f"{name} got incompatible shapes for broadcasting: {shapes}.")
                shape = tuple(n if m == 1 else m for m, n in zip(a.shape, shape, strict=True))
    return () if shape is None else shape


def elementwise_abstract_eval(name, kinds, out_dtype=None):
    """Rule for an elementwise op: operands share a dtype in ``kinds``; shape broadcasts."""

    accepted = accepted_dtypes(kinds)

    def rule(*avals, **params):
        first = avals[0]
        dtype, shape, weak = first.dtype, first.shape, first.weak_type
        for a in avals:  # a plain loop: this rule runs for every traced arithmetic op
            if a.dtype != dtype:
                got = ", ".join(str(b.dtype) for b in avals)
                raise TypeError(
                    f"lax.{name} requires arguments to have the same dtypes, got "
                    f"{got}. (Tip: xform.numpy functions promote dtypes for you.)"
                )
            if a.shape != shape:
                shape = broadcast_elementwise_shapes(name, avals)
            weak = weak and a.weak_type
        if dtype not in accepted:
            check_dtype(name, dtype, kinds)
        # As in JAX, the result is weak when every operand is, whatever its dtype.
        return [ShapedArray(shape, dtype if out_dtype is None else out_dtype(dtype), weak)]

    return rule


_HALF = frozenset([dtypes.float16, dtypes.bfloat16_dtype])


def elementwise_host(fn):
    """A NumPy implementation of an elementwise op; half floats compute in float32 as XLA's
    CPU backend does, then round once."""

    def impl(*xs, **params):
        dtype = xs[0].dtype
        if dtype in _HALF:
            out = np.asarray(fn(*(x.astype(np.float32) for x in xs), **params))
            return [out.astype(dtype) if out.dtype == np.float32 else out]
        return [fn(*xs, **params)]  # dispatch turns NumPy's 0-d scalars into arrays

    impl.numpy_fn = fn  # see direct_host_fn
    return impl


def direct_host_fn(impl, dtype):
    """The NumPy function that computes host impl ``impl`` on operands of ``dtype`` when
    called directly, with one result and no list around it (eager dispatch's fast path);
    None when ``impl`` needs its wrapper (half floats, impls not made by ``elementwise``)."""
    fn = getattr(impl, "numpy_fn", None)
    return None if fn is None or dtype in _HALF else fn


def elementwise(name, kinds, host_fn=None, out_dtype=None):
    """Define an elementwise primitive: its abstract eval and, given one, its NumPy impl."""
    host = elementwise_host(host_fn) if host_fn is not None else None
    return standard_primitive(name, elementwise_abstract_eval(name, kinds, out_dtype), host)


def canonicalize_axis(axis, ndim, name):
    """``axis`` as a non-negative int; ``ValueError`` naming ``name`` when out of range."""
    axis = int(axis)
    if not -ndim <= axis < ndim:
        raise ValueError(f"{name}: axis {axis} is out of bounds for an array of rank {ndim}")
    return axis + ndim if axis < 0 else axis


def as_shape(shape, name):
    """A shape argument as a tuple of non-negative ints; ``TypeError`` for anything else."""
    if type(shape) is tuple:  # the common case, checked without a generator
        for d in shape:
            if type(d) is not int or d < 0:
                break
        else:
            return shape
    if isinstance(shape, (int, np.integer)) or (
        hasattr(shape, "__index__") and not hasattr(shape, "__len__")
    ):
        shape = (shape,)
    try:
        out = tuple(int(d.__index__()) for d in shape)
    except errors.InconclusiveDimensionOperation:  # symbolic dimensions (export) pass as they are
        out = tuple(d if core.is_symbolic_dim(d) else int(d.__index__()) for d in shape)
    except (TypeError, AttributeError) as e:
        if isinstance(e, errors.ConcretizationTypeError):
            raise
        raise TypeError(f"{name}: shapes must be sequences of integers, got {shape!r}") from None
    if any(d < 0 for d in out):  # TypeError, as JAX's shape checks
        raise TypeError(
            f"{name}: shape {out} has a negative dimension; every dimension must be nonnegative"
        )
    return out

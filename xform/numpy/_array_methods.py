"""Operators and NumPy-style methods of ``xform.Array`` and of tracers.

They are set as attributes of both classes when ``xform.numpy`` is imported, as JAX does, so
concrete and traced arrays behave the same. A binary operator returns ``NotImplemented`` for
an operand xform cannot use (a list, a string), so Python raises its usual ``TypeError``;
Python scalars stay weakly typed (``x_f16 * 2`` is float16).
"""

import numpy as np

from xform.core import Tracer
from xform.numpy import (
    _contractions,
    _manipulation,
    _promote,
    _reductions,
    _shape,
    _sorting,
    _ufuncs,
)
from xform.numpy._indexing import IndexUpdateHelper, getitem
from xform.numpy._promote import _is_arraylike
from xform.primitives import refs
from xform.primitives.elementwise import copy_p
from xform.runtime.array import Array


def _binary(fn, reflected=False):
    fn = _plain(fn)
    # ``type(other) is Array`` first: the common eager case, without a call.
    if reflected:

        def op(self, other):
            if type(other) is not Array and not _is_arraylike(other):
                return NotImplemented
            return fn(other, self)
    else:

        def op(self, other):
            if type(other) is not Array and not _is_arraylike(other):
                return NotImplemented
            return fn(self, other)

    return op


_BINARY = {
    "add": _ufuncs.add,
    "sub": _ufuncs.subtract,
    "mul": _ufuncs.multiply,
    "truediv": _ufuncs.true_divide,
    "floordiv": _ufuncs.floor_divide,
    "mod": _ufuncs.remainder,
    "divmod": _ufuncs.divmod,
    "pow": _ufuncs.power,
    "matmul": _contractions.matmul,
    "and": _ufuncs.bitwise_and,
    "or": _ufuncs.bitwise_or,
    "xor": _ufuncs.bitwise_xor,
    "lshift": _ufuncs.left_shift,
    "rshift": _ufuncs.right_shift,
}

_COMPARISONS = {
    "eq": _ufuncs.equal,
    "ne": _ufuncs.not_equal,
    "lt": _ufuncs.less,
    "le": _ufuncs.less_equal,
    "gt": _ufuncs.greater,
    "ge": _ufuncs.greater_equal,
}


def _reshape(self, *args, order="C", out_sharding=None, **kwargs):
    shape = kwargs.pop("shape", None)
    if kwargs:
        raise TypeError(f"reshape() got unexpected keyword arguments {sorted(kwargs)}")
    if shape is None:
        shape = args[0] if len(args) == 1 and not isinstance(args[0], (int, np.integer)) else args
    return _shape.reshape(self, shape, order, out_sharding=out_sharding)


def _transpose(self, *axes):
    if len(axes) == 1 and (axes[0] is None or isinstance(axes[0], (tuple, list))):
        axes = axes[0]
    return _shape.transpose(self, axes or None)


def _operator_round(self, ndigits=None):
    # Python's round(x) gives an integer array, round(x, n) keeps the dtype (as in JAX).
    out = _ufuncs.round(self, ndigits or 0)
    return _shape.astype(out, int) if ndigits is None else out


def _setitem(self, idx, value):
    raise TypeError(
        "xform arrays are immutable and do not support in-place item assignment. "
        "Instead of x[idx] = y, use x = x.at[idx].set(y) or another .at[] method "
        "(add, multiply, min, max, ...)."
    )


def _contains(self, value):
    # As JAX (departing from NumPy): a scalar searched for in a 1-d array.
    if value is None or isinstance(value, str):
        raise TypeError(f"Array.__contains__: unsupported operand type {type(value)}.")
    if self.ndim != 1:
        raise ValueError(
            "Array.__contains__: search array must be one-dimensional, got "
            f"arr.shape={self.shape}; use (x == value).any() for other shapes."
        )
    query = _promote.asarray(value)
    if query.ndim != 0:
        raise ValueError(
            f"Array.__contains__: query value must be a scalar, got query.shape={query.shape}"
        )
    return _reductions.any(_ufuncs.equal(self, query))


def _method(fn):
    def method(self, *args, **kwargs):
        return fn(self, *args, **kwargs)

    method.__name__ = fn.__name__
    method.__doc__ = fn.__doc__
    return method


_METHODS = {
    "sum": _reductions.sum,
    "prod": _reductions.prod,
    "max": _reductions.max,
    "min": _reductions.min,
    "mean": _reductions.mean,
    "var": _reductions.var,
    "std": _reductions.std,
    "argmax": _reductions.argmax,
    "argmin": _reductions.argmin,
    "all": _reductions.all,
    "any": _reductions.any,
    "cumsum": _reductions.cumsum,
    "cumprod": _reductions.cumprod,
    "ptp": _reductions.ptp,
    "squeeze": _shape.squeeze,
    "ravel": _shape.ravel,
    "flatten": _shape.ravel,
    "swapaxes": _shape.swapaxes,
    "clip": _shape.clip,
    "astype": _shape.astype,
    "copy": _shape.copy,
    "repeat": _shape.repeat,
    "nonzero": _shape.nonzero,
    "round": _ufuncs.round,
    "conj": _ufuncs.conjugate,
    "conjugate": _ufuncs.conjugate,
    "dot": _contractions.dot,
    "diagonal": _contractions.diagonal,
    "trace": _contractions.trace,
    "sort": _sorting.sort,
    "argsort": _sorting.argsort,
    "take": _manipulation.take,
    "searchsorted": _sorting.searchsorted,
    "argpartition": _sorting.argpartition,
}


def _plain(fn):
    """The function behind a ufunc object: operators skip the object's call layer (and a
    ufunc object, not being a function, would not bind ``self`` as a method)."""
    return fn._call if isinstance(fn, _ufuncs.ufunc) else fn


def _attach(cls):
    for name, fn in _BINARY.items():
        setattr(cls, f"__{name}__", _binary(fn))
        setattr(cls, f"__r{name}__", _binary(fn, reflected=True))
    for name, fn in _COMPARISONS.items():
        setattr(cls, f"__{name}__", _binary(fn))
    # Plain functions become methods: ``x.__neg__()`` calls ``negative(x)``.
    cls.__neg__ = _plain(_ufuncs.negative)
    cls.__pos__ = _ufuncs.positive
    cls.__abs__ = _ufuncs.absolute
    cls.__invert__ = _ufuncs.invert
    cls.__round__ = _operator_round
    cls.__getitem__ = getitem
    cls.__setitem__ = _setitem
    cls.__contains__ = _contains
    cls.at = property(IndexUpdateHelper)
    cls.T = property(_shape.transpose)
    cls.mT = property(_shape.matrix_transpose)
    cls.real = property(_ufuncs.real)
    cls.imag = property(_ufuncs.imag)
    cls.reshape = _reshape
    cls.transpose = _transpose
    for name, fn in _METHODS.items():
        setattr(cls, name, _method(fn))


for _cls in (Array, Tracer):
    _attach(_cls)
del _cls


# A tracer of a reference (``Ref{f32[3]}`` inside jit) is read and written by indexing.
def _tracer_getitem(self, idx):
    if type(self.aval) is refs.AbstractRef:
        return refs.get(self, idx)
    return getitem(self, idx)


def _tracer_setitem(self, idx, value):
    if type(self.aval) is refs.AbstractRef:
        return refs.ref_set(self, idx, value)
    return _setitem(self, idx, value)


def _tracer_at(self):
    if type(self.aval) is refs.AbstractRef:
        return refs._RefAt(self)
    return IndexUpdateHelper(self)


Tracer.__getitem__ = _tracer_getitem
Tracer.__setitem__ = _tracer_setitem
Tracer.at = property(_tracer_at)


# As JAX's: copy.copy and copy.deepcopy of a tracer are a copy of its value in the same
# trace (a ``copy`` equation), not the tracer object duplicated with its state.
def _tracer_copy(self):
    return copy_p.bind(self)


Tracer.__copy__ = _tracer_copy
Tracer.__deepcopy__ = lambda self, memo: _tracer_copy(self)

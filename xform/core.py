"""The IR (abstract values, variables, equations, jaxprs), primitives, and the trace machinery.

A *primitive* is an operation with a name and a rule per interpreter. ``prim.bind(*args,
**params)`` hands the call to the *current trace*: eager evaluation at the bottom, or a
transformation (staging, JVP, batching, ...) that wraps values in its own tracers. Each
transformation sets itself as current while it runs the user's function and keeps a link to
its ``parent`` trace, on which it binds the primitives it emits. That is how transformations
nest to any depth: a tracer knows its trace, and a trace only unwraps its own tracers, so two
differentiations of one function never confuse their perturbations.

Calling convention, for every rule table in xform: array operands positional, params
keyword-only and hashable, results a list.
"""

import itertools
import math
import os
import sys
import threading

import numpy as np

from xform import dtypes, errors
from xform.jaxpr_printer import (  # noqa: F401  (mesh_axis_order, vma_order: core's names too)
    Names,
    mesh_axis_order,
    pp_eqn,
    pp_jaxpr,
    pp_toplevel_jaxpr,
    vma_order,
)
from xform.traceback_util import concretization_message, filter_exception, register_boundary

# --------------------------------------------------------------------------- abstract values


class SymbolicDim:
    """Base of symbolic dimension expressions (``xform.export.symbolic_shape``): they appear
    in avals only while tracing a function for export."""

    __slots__ = ()


def is_symbolic_dim(d):
    """Whether the dimension ``d`` is symbolic (not an integer)."""
    return isinstance(d, SymbolicDim)


def shape_size(shape):
    """The number of elements of ``shape`` (exact; an expression for symbolic dimensions)."""
    size = math.prod(shape)
    return int(size) if isinstance(size, (int, np.integer)) else size


def dimension_as_value(d):
    """A dimension as a value: an int, or for a symbolic dimension a traced integer scalar."""
    return d.as_value() if isinstance(d, SymbolicDim) else d


_NO_AXES = frozenset()


class ShapedArray:
    """The abstract value of an array: its shape, dtype, whether its type is weak, and (in
    explicit sharding mode only) its sharding: a NamedSharding over an abstract mesh whose
    spec has one entry per dimension, or None (the default: no sharding in the type)."""

    __slots__ = ("shape", "dtype", "weak_type", "sharding", "vma", "_hash")

    def __init__(self, shape, dtype, weak_type=False, sharding=None, vma=_NO_AXES):
        self.shape = shape
        self.dtype = dtype
        self.weak_type = weak_type
        self.sharding = sharding
        # JAX's varying manual axes: inside a shard_map body traced with check_vma=True, the
        # mesh axes the value may differ over; empty everywhere else.
        self.vma = vma
        self._hash = None  # computed on first use: avals key the caches of jit and dispatch

    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: shape_size(self.shape))

    def update(self, shape=None, dtype=None, weak_type=None, sharding=None, vma=None):
        # The sharding is kept only while the shape is: a new shape needs a sharding rule.
        if (
            sharding is None
            and self.sharding is not None
            and (shape is None or shape == self.shape)
        ):
            sharding = self.sharding
        return ShapedArray(
            self.shape if shape is None else shape,
            self.dtype if dtype is None else dtype,
            self.weak_type if weak_type is None else weak_type,
            sharding,
            self.vma if vma is None else vma,
        )

    def strip_weak_type(self):
        return (
            ShapedArray(self.shape, self.dtype, False, self.sharding, self.vma)
            if self.weak_type
            else self
        )

    def __eq__(self, other):
        return (
            type(other) is ShapedArray
            and self.shape == other.shape
            and self.dtype == other.dtype
            and self.weak_type == other.weak_type
            and self.sharding == other.sharding
            and self.vma == other.vma
        )

    def __hash__(self):
        h = self._hash
        if h is None:  # cached: avals are hashed on every jit call's cache lookup
            h = self._hash = hash((self.shape, self.dtype, self.weak_type, self.sharding, self.vma))
        return h

    @property
    def mat(self):
        """JAX 0.10.2's spelling of the varying manual axes: ``typeof(x).mat.varying`` (also
        ``typeof(x).manual_axis_type.varying``)."""
        return ManualAxisType(self.vma)

    manual_axis_type = mat

    def str_short(self, short_dtypes=True):
        """``f32[8,4@x]`` as jaxprs print types; ``float32[8,4@x]`` with ``short_dtypes``
        False, as JAX's ``str`` of a type."""
        dims = (
            map(str, self.shape)
            if self.sharding is None
            else map(_sharded_dim, self.shape, self.sharding.spec)
        )
        name = dtypes.short_name(self.dtype) if short_dtypes else str(self.dtype)
        if not self.vma:
            return f"{name}[{','.join(dims)}]"
        # as JAX's: ``f32[4]{V:x}``, ``f32[4]{V:(x,y)}``
        axes = vma_order(self.vma)
        varying = axes[0] if len(axes) == 1 else f"({','.join(axes)})"
        return f"{name}[{','.join(dims)}]{{V:{varying}}}"

    def __str__(self):  # as JAX's: ``jax.typeof(x)`` prints ``float32[8,4]``, weak ones ``~``
        return ("~" if self.weak_type else "") + self.str_short(short_dtypes=False)

    def __repr__(self):
        weak = ", weak_type=True" if self.weak_type else ""
        return f"ShapedArray({self.str_short(short_dtypes=False)}{weak})"


class ManualAxisType:
    """JAX's ``ManualAxisType`` as far as xform types it: the varying axes (xform types no
    reduced or unreduced ones)."""

    __slots__ = ("varying",)
    unreduced = reduced = _NO_AXES

    def __init__(self, varying):
        self.varying = varying

    def __repr__(self):  # as JAX's
        return (
            f"ManualAxisType(varying={frozenset(self.varying)}, unreduced=frozenset(), "
            "reduced=frozenset())"
        )


def _sharded_dim(size, entry):
    """A dimension as JAX prints it in a sharded type: ``8``, ``8@x``, ``8@(x,y)``."""
    if entry is None:
        return str(size)
    if isinstance(entry, tuple):
        return f"{size}@({','.join(entry)})"
    return f"{size}@{entry}"


# Concrete Python/NumPy values -> abstract values. Array types register here (see array.py).
pytype_aval_mappings = {}


def _scalar_aval(x):
    dt = dtypes.python_scalar_dtype(x)
    if type(x) is int:
        dtypes.check_int_range(x, dt, "xform")
    return ShapedArray((), dt, weak_type=type(x) is not bool)


def _numpy_aval(x):
    return ShapedArray(x.shape, dtypes.canonicalize(x.dtype))


for _t in (bool, int, float, complex):
    pytype_aval_mappings[_t] = _scalar_aval
pytype_aval_mappings[np.ndarray] = _numpy_aval
# Types with an aval but no value (ShapeDtypeStruct, registered by api.py): a trace stages
# one as a constant of its type, never as an inline literal, which would need its value.
valueless_types = set()


# Equal avals as one object: the avals of Arrays made from data, of eager results and of
# memoized abstract evaluations are interned, so eager dispatch's memo (keyed by their ids),
# the ``is`` checks of xform.numpy's fast paths and the memo of ``out_avals_of`` mostly
# compare by identity.
_interned = {}


def intern_aval(aval):
    """The one aval object equal to ``aval`` among those interned (a full table is emptied)."""
    if len(_interned) > 4096:
        _interned.clear()
    return _interned.setdefault(aval, aval)


def get_aval(x):
    """The abstract value of a tracer or a concrete array-like; ``TypeError`` for anything else."""
    if isinstance(x, Tracer):
        return x.aval
    fn = pytype_aval_mappings.get(type(x))
    if fn is not None:
        return fn(x)
    if isinstance(x, np.generic):
        return _numpy_aval(x)
    for t, fn in pytype_aval_mappings.items():  # subclasses (IntEnum, np.ndarray subclasses)
        if isinstance(x, t):
            return fn(x)
    raise TypeError(
        f"Value {x!r} of type {type(x).__name__} is not a valid xform type: "
        "expected an array, a NumPy value or a Python scalar"
    )


def is_concrete_array(x):
    """True for values ``get_aval`` accepts that are not tracers."""
    return not isinstance(x, Tracer) and (
        type(x) in pytype_aval_mappings
        or isinstance(x, np.generic)
        or any(isinstance(x, t) for t in pytype_aval_mappings)
    )


# --------------------------------------------------------------------------- the IR


class Var:
    """A variable of a jaxpr; identity is the variable, its name is given when printing."""

    __slots__ = ("aval",)

    def __init__(self, aval):
        self.aval = aval

    def __repr__(self):
        return f"Var({self.aval.str_short()})"


class Literal:
    """A scalar constant written inline in an equation."""

    __slots__ = ("val", "aval")

    def __init__(self, val, aval):
        self.val = val
        self.aval = aval

    def __repr__(self):
        return f"Literal({self.val})"


class JaxprEqn:
    """``outvars = primitive[params] invars``, with where in the user's code it came from."""

    __slots__ = ("primitive", "invars", "outvars", "params", "source_info")
    effects = frozenset()  # as JAX's equations have: xform has no effect system

    def __init__(self, primitive, invars, outvars, params, source_info=None):
        self.primitive = primitive
        self.invars = invars
        self.outvars = outvars
        self.params = params
        self.source_info = source_info

    def __repr__(self):
        return pp_eqn(self, Names(), 0)


class Jaxpr:
    """A typed program: ``{ lambda constvars ; invars . let eqns in outvars }``."""

    __slots__ = ("constvars", "invars", "outvars", "eqns", "__weakref__")
    effects = frozenset()  # as JAX's jaxprs have: xform has no effect system

    def __init__(self, constvars, invars, outvars, eqns):
        self.constvars = list(constvars)
        self.invars = list(invars)
        self.outvars = list(outvars)
        self.eqns = list(eqns)

    in_avals = property(lambda self: [v.aval for v in self.invars])
    out_avals = property(lambda self: [v.aval for v in self.outvars])

    def __str__(self):
        return pp_toplevel_jaxpr(self)

    __repr__ = __str__

    def pretty_print(self, *, use_color=False, **options):
        """The jaxpr's text (``str``): xform never colors, and takes JAX's other options
        (``source_info``, ``print_shapes``, ...) at their defaults only."""
        if any(v != (k in ("print_shapes", "custom_pp_eqn_rules")) for k, v in options.items()):
            raise NotImplementedError(f"Jaxpr.pretty_print: options {options} not supported")
        return str(self)


class ClosedJaxpr:
    """A jaxpr together with the values of its constvars."""

    __slots__ = ("jaxpr", "consts", "__weakref__")

    def __init__(self, jaxpr, consts):
        self.jaxpr = jaxpr
        self.consts = list(consts)

    in_avals = property(lambda self: self.jaxpr.in_avals)
    out_avals = property(lambda self: self.jaxpr.out_avals)
    eqns = property(lambda self: self.jaxpr.eqns)
    literals = property(lambda self: self.consts)  # JAX's other name for the consts

    def __str__(self):
        return str(self.jaxpr)

    __repr__ = __str__

    pretty_print = property(lambda self: self.jaxpr.pretty_print)

    def _repr_pretty_(self, p, cycle):
        p.text(str(self))


def source_info():
    """(file, line, function, code, instruction offset, named scopes) of the innermost frame
    outside xform: where the user called us. While a staged equation is replayed
    (``eval_jaxpr``), what it makes comes from where that equation came from, as in JAX."""
    replayed = trace_state.replayed_source
    if replayed is not None:
        return replayed
    frame = sys._getframe(1)
    internal = _internal_code
    while frame is not None:
        code = frame.f_code
        inside = internal.get(code)
        if inside is None:
            inside = internal[code] = code.co_filename.startswith(_XFORM_DIR)
        if not inside:  # (and the named_scope names around the call, as one "a/b" string)
            where = (code.co_filename, frame.f_lineno, code.co_name, code, frame.f_lasti)
            return (*where, trace_state.name_stack)
        frame = frame.f_back
    return None


def source_span(info):
    """``(line, column, end line, end column)`` of ``info``'s expression (0-based), or None."""
    if info is None or len(info) < 5:
        return None
    at = next(itertools.islice(info[3].co_positions(), info[4] // 2, None), None)
    return None if at is None or None in at else (at[0], at[2], at[1], at[3])


_internal_code = {}  # code object -> whether it belongs to xform (memoized: hot when tracing)
_XFORM_DIR = os.path.dirname(os.path.abspath(__file__))


def format_source_info(info):
    return "an unknown location" if info is None else f"{info[0]}:{info[1]} ({info[2]})"


# --------------------------------------------------------------------------- primitives

abstract_eval_rules = {}
host_impls = {}  # NumPy implementations used for eager evaluation on a CPU backend
# Primitives whose eager evaluation runs Python rather than one kernel (custom-derivative
# calls evaluate their jaxpr): ``rule(*args, **params) -> list``.
eager_rules = {}


class Primitive:
    """A named operation. ``bind`` applies it under the current trace."""

    __slots__ = ("name", "multiple_results")

    def __init__(self, name, multiple_results=False):
        self.name = name
        self.multiple_results = multiple_results

    @register_boundary
    def bind(self, *args, **params):
        try:  # an API boundary for eager operations (a try costs nothing until it raises)
            outs = trace_state.trace.process_primitive(self, args, params)
        except Exception as e:
            filter_exception(e)
            raise
        return outs if self.multiple_results else outs[0]

    # The registrars of JAX's ``Primitive``, for primitives defined outside xform (see
    # ``xform.extend``). Their rules follow JAX's convention: one result, unless
    # ``multiple_results``; they are stored in xform's tables in xform's (a list).

    def def_impl(self, impl):
        """Eager evaluation: ``impl(*args, **params)`` returns the result (a sequence of
        them when ``multiple_results``). Returns ``impl``, so it works as a decorator."""
        eager_rules[self] = self._as_list(impl)
        return impl

    def def_abstract_eval(self, abstract_eval):
        """Shape/dtype rule: ``abstract_eval(*avals, **params)`` returns the result's
        ``ShapedArray`` (a sequence of them when ``multiple_results``)."""
        abstract_eval_rules[self] = self._as_list(abstract_eval)
        return abstract_eval

    def _as_list(self, rule):
        # ``multiple_results`` is read per call: JAX lets it be set after the rules.
        def listed(*args, **params):
            out = rule(*args, **params)
            return list(out) if self.multiple_results else [out]

        return listed

    def __repr__(self):
        return self.name


def abstract_eval(prim, *avals, **params):
    """Run ``prim``'s shape/dtype rule; a missing rule is a ``errors.MissingRuleError``."""
    rule = abstract_eval_rules.get(prim)
    if rule is None:
        raise errors.MissingRuleError(f"primitive '{prim.name}' has no abstract evaluation rule")
    return rule(*avals, **params)


# --------------------------------------------------------------------------- traces


class Trace:
    """An interpreter. ``process_primitive(prim, args, params)`` returns a list of outputs."""

    __slots__ = ("__weakref__",)
    alive = True
    name = "eager evaluation"

    def process_primitive(self, prim, args, params):
        raise NotImplementedError


class EvalTrace(Trace):
    """The bottom of every trace stack: apply primitives to concrete values right away.

    ``apply`` (installed by the backend, see ``set_eager_impl``) must reject tracers with
    ``escaped_tracer_error``: any tracer reaching eager evaluation has outlived its trace.
    It does so on its slow path only, which keeps the check off the hot one.
    """

    # ``process_primitive`` is an instance slot holding ``apply`` itself, not a method that
    # calls it: ``bind`` at the bottom of the stack then costs one Python call fewer.
    __slots__ = ("apply", "process_primitive")

    def __init__(self):
        self.apply = self.process_primitive = _no_backend


def _no_backend(prim, args, params):
    raise RuntimeError(
        f"cannot evaluate '{prim.name}' eagerly: no backend is loaded "
        "(import xform, not only xform.core)"
    )


eval_trace = EvalTrace()


class _TraceState(threading.local):
    def __init__(self):
        self.trace = eval_trace
        self.axis_env = ()  # the named axes (pmap, vmap) in scope: ((name, size), ...)
        self.replayed_source = None  # the source of the equation eval_jaxpr is binding
        self.name_stack = ""  # the named_scope names entered ("outer/inner"), for lowering


trace_state = _TraceState()


def current_trace():
    return trace_state.trace


class set_current_trace:
    """``with set_current_trace(t):`` runs a block with ``t`` as the current trace."""

    __slots__ = ("trace", "saved")

    def __init__(self, trace):
        self.trace = trace

    def __enter__(self):
        self.saved = trace_state.trace
        trace_state.trace = self.trace

    def __exit__(self, *exc):
        trace_state.trace = self.saved


class extend_axis_env:
    """``with extend_axis_env(name, size):`` binds a named axis for the collectives traced in
    the block (``pmap`` and ``vmap(axis_name=...)`` bind theirs while tracing the body)."""

    __slots__ = ("frame", "saved")

    def __init__(self, name, size):
        self.frame = (name, size)

    def __enter__(self):
        self.saved = trace_state.axis_env
        trace_state.axis_env = self.saved + (self.frame,)

    def __exit__(self, *exc):
        trace_state.axis_env = self.saved


def axis_size(name, what):
    """The size of the named axis ``name`` in scope; NameError (as in JAX) naming ``what``
    (the collective) and the axes in scope when no pmap or vmap binds it."""
    for bound, size in reversed(trace_state.axis_env):
        if bound == name:
            return size
    in_scope = [n for n, _ in trace_state.axis_env]
    raise NameError(
        f"unbound axis name: {name!r} in {what}. The axis names bound here (by pmap "
        f"or vmap with axis_name=...) are {in_scope}; call {what} inside a function "
        "mapped with that axis_name"
    )


def set_eager_impl(fn):
    """Install the function eager evaluation uses: ``fn(prim, args, params) -> list``."""
    eval_trace.apply = eval_trace.process_primitive = fn


# --------------------------------------------------------------------------- tracers


class Tracer:
    """A value inside a transformation: it knows its trace and its abstract value.

    Operators and NumPy-style methods are attached by ``xform.numpy`` for tracers and concrete
    arrays alike.
    """

    __slots__ = ("_trace",)
    __array_priority__ = 1000

    @property
    def aval(self):
        raise NotImplementedError

    shape = property(lambda self: self.aval.shape)
    dtype = property(lambda self: self.aval.dtype)
    ndim = property(lambda self: len(self.aval.shape))
    size = property(lambda self: self.aval.size)
    weak_type = property(lambda self: self.aval.weak_type)

    def concrete_value(self):
        """The concrete value behind this tracer when the transformation knows one, else None."""
        return None

    def _concretize(self, what):
        value = self.concrete_value()
        return self._refuse(what) if value is None else value

    # JAX lets bool/int/index/item see the value a JVP tracer knows, but never float,
    # complex, tolist or NumPy conversion: a function that works under grad must not
    # depend on which of these it calls, so xform draws the same line.
    def _refuse(self, what):
        error, message = concretization_message(self, what)
        raise getattr(errors, error)(message)  # (made when first raised: xform/errors.py)

    def _origin_msg(self):
        """Where this traced value came from, for errors (a staging tracer knows)."""
        return ""

    def __bool__(self):
        return bool(self._concretize("bool"))

    def __int__(self):
        return int(self._concretize("int"))

    def __index__(self):
        return self._concretize("__index__").__index__()

    def __float__(self):
        self._refuse("float")

    def __complex__(self):
        self._refuse("complex")

    def item(self):
        return self._concretize("item").item()

    def tolist(self):
        self._refuse("tolist")

    def __array__(self, dtype=None, copy=None):
        self._refuse("__array__")

    def __hash__(self):
        raise TypeError(
            f"unhashable type: traced array {self.aval.str_short()}; traced "
            "values cannot be dict keys or static arguments"
        )

    def __len__(self):
        if not self.aval.shape:
            raise TypeError("len() of unsized object (a 0-d traced array)")
        return self.aval.shape[0]

    def __iter__(self):
        if not self.aval.shape:
            raise TypeError("iteration over a 0-d traced array")
        return (self[i] for i in range(self.aval.shape[0]))

    def __repr__(self):
        return f"Traced<{self.aval.str_short()}>with<{type(self._trace).__name__}>"


def escaped_tracer_error(tracer, where):
    trace = tracer._trace
    made = getattr(tracer, "source", None)
    origin = f", created at {format_source_info(made)}" if made else ""
    state = "has already finished" if not trace.alive else "is not the current one"
    return errors.UnexpectedTracerError(
        f"Encountered an unexpected tracer: a traced {tracer.aval.str_short()} value{origin}, "
        f"used by '{where}'. It belongs to the transformation that was {trace.name}, "
        f"which {state}: the tracer escaped through a side effect (a global, a list, an "
        "attribute) of the transformed function. Return the value from the function instead "
        "of storing it."
    )


def eval_jaxpr(jaxpr, consts, *args):
    """Run ``jaxpr`` by binding its equations under the current trace; a list of outputs.

    This is how a transformation applies itself to a staged program (a ``jit`` body under
    ``jvp``, say): the equations are replayed on its tracers.
    """
    env = {}

    def read(x):
        return x.val if type(x) is Literal else env[x]

    for v, x in zip(jaxpr.constvars, consts, strict=True):
        env[v] = x
    for v, x in zip(jaxpr.invars, args, strict=True):
        env[v] = x
    state = trace_state
    outer = state.replayed_source
    try:
        for eqn in jaxpr.eqns:
            # what a transformation makes of the equation is attributed to the user's line
            state.replayed_source = eqn.source_info or outer
            outs = eqn.primitive.bind(*[read(x) for x in eqn.invars], **eqn.params)
            if not eqn.primitive.multiple_results:
                outs = [outs]
            for v, out in zip(eqn.outvars, outs, strict=True):
                env[v] = out
    finally:
        state.replayed_source = outer
    return [read(x) for x in jaxpr.outvars]


def jaxpr_as_fun(closed_jaxpr):
    """``closed_jaxpr`` as a function of its inputs that returns the list of its outputs."""

    def fun(*args):
        return eval_jaxpr(closed_jaxpr.jaxpr, closed_jaxpr.consts, *args)

    return fun


# --------------------------------------------------------------------------- typechecking


def subjaxprs(params):
    """The jaxprs held in an equation's params (jit bodies, branches, loop bodies)."""
    for v in params.values():
        if isinstance(v, (Jaxpr, ClosedJaxpr)):
            yield v.jaxpr if isinstance(v, ClosedJaxpr) else v
        elif isinstance(v, tuple):
            for w in v:
                if isinstance(w, (Jaxpr, ClosedJaxpr)):
                    yield w.jaxpr if isinstance(w, ClosedJaxpr) else w


def _same_type(a, b):
    return a.shape == b.shape and a.dtype == b.dtype


def check_jaxpr(jaxpr):
    """Typecheck ``jaxpr`` (a Jaxpr or ClosedJaxpr); raise ``JaxprTypeError`` quoting the eqn."""
    if isinstance(jaxpr, ClosedJaxpr):
        for v, c in zip(jaxpr.jaxpr.constvars, jaxpr.consts, strict=True):
            if not isinstance(c, Tracer) and not _same_type(v.aval, get_aval(c)):
                raise errors.JaxprTypeError(
                    f"constvar of type {v.aval.str_short()} is bound to a "
                    f"constant of type {get_aval(c).str_short()}"
                )
        jaxpr = jaxpr.jaxpr
    names = Names()
    defined = set()

    def define(v):
        if v in defined:
            raise errors.JaxprTypeError(
                f"variable {names(v)} is defined twice in\n{pp_jaxpr(jaxpr, names, 0)}"
            )
        defined.add(v)

    def read(x, eqn):
        if type(x) is Literal:
            if not _same_type(x.aval, get_aval(np.asarray(x.val, x.aval.dtype))):
                raise errors.JaxprTypeError(
                    f"literal {x.val} does not have type {x.aval.str_short()}"
                )
            return x.aval
        if x not in defined:
            where = pp_eqn(eqn, names, 0) if eqn else "the outputs"
            raise errors.JaxprTypeError(
                f"variable {names(x)} is used before it is defined, in: {where}"
            )
        return x.aval

    for v in jaxpr.constvars + jaxpr.invars:
        names(v)  # name binders first, so quoted equations read as the printed jaxpr does
        define(v)
    for eqn in jaxpr.eqns:
        in_avals = [read(x, eqn) for x in eqn.invars]
        try:
            out_avals = abstract_eval(eqn.primitive, *in_avals, **eqn.params)
        except (TypeError, ValueError) as e:
            raise errors.JaxprTypeError(f"ill-typed equation: {pp_eqn(eqn, names, 0)}\n{e}") from e
        if len(out_avals) != len(eqn.outvars) or not all(
            _same_type(a, v.aval) for a, v in zip(out_avals, eqn.outvars, strict=True)
        ):
            expected = ", ".join(a.str_short() for a in out_avals)
            raise errors.JaxprTypeError(
                f"equation {pp_eqn(eqn, names, 0)} binds outputs whose types "
                f"differ from its rule's: {expected}"
            )
        for sub in subjaxprs(eqn.params):
            check_jaxpr(sub)
        for v in eqn.outvars:
            define(v)
    for x in jaxpr.outvars:
        read(x, None)


# The printer reads the IR classes above, and they print through it.

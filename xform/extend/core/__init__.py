"""The IR and the primitive machinery, as ``jax.extend.core`` names them, and the classes
xform's own interpreters are written with (``Trace``, ``Tracer``, ``Primitive``).

Shape rules: ``abstract_eval_rules[prim] = rule(*avals, **params) -> [aval, ...]`` is the
table the built-ins fill (xform's convention: a list, one entry unless
``prim.multiple_results``); ``prim.def_abstract_eval`` and ``prim.def_impl`` take JAX's
single-result rules and store them in xform's convention. ``standard_primitive(name,
abstract_eval, host_impl=None, multiple_results=False)`` is how the built-ins make theirs:
the abstract evaluation and, optionally, ``host_impls[prim] = impl(*ndarrays, **params) ->
[ndarray, ...]``, the NumPy implementation eager evaluation runs on a CPU (elsewhere, and
without one, the equation is compiled by its lowering rule and run through XLA, as under
``jit``). ``def_impl`` instead replaces eager evaluation altogether.

Writing an interpreter: a ``Tracer`` subclass carries what the interpreter knows about a
value (set ``_trace``, and give the ``aval`` property: the value's ``ShapedArray``); a
``Trace`` subclass interprets every primitive applied to its tracers in
``process_primitive(prim, args, params) -> list`` of results (one entry unless
``prim.multiple_results``), call primitives such as ``jit``'s included. There is no
``pure``/``lift``: an operand that is not this trace's tracer (a constant, or a value of an
enclosing transformation) arrives as it is, and the rule decides what it means. Rules bind on
the trace below (keep it as ``parent``, the ``current_trace()`` when the interpreter started)
under ``set_current_trace(parent)``, so interpreters nest; when the interpreted function
returns, set ``alive = False`` on the trace so that tracers leaking out of it are reported.

Example (an interpreter that counts the primitives a function applies):

  class CountingTracer(core.Tracer):
      __slots__ = ("val",)

      def __init__(self, trace, val):
          self._trace, self.val = trace, val

      @property
      def aval(self):
          return core.get_aval(self.val)

  class CountingTrace(core.Trace):
      __slots__ = ("parent", "count")

      def __init__(self, parent):
          self.parent, self.count = parent, 0

      def process_primitive(self, prim, args, params):
          self.count += 1
          vals = [x.val if isinstance(x, CountingTracer) and x._trace is self else x
                  for x in args]
          with core.set_current_trace(self.parent):
              outs = prim.bind(*vals, **params)
          return [CountingTracer(self, o) for o in (outs if prim.multiple_results else [outs])]
"""

from xform.core import (  # noqa: F401
    ClosedJaxpr,
    EvalTrace,
    Jaxpr,
    JaxprEqn,
    Literal,
    Primitive,
    ShapedArray,
    Trace,
    Tracer,
    Var,
    abstract_eval,
    abstract_eval_rules,
    check_jaxpr,
    current_trace,
    eval_jaxpr,
    eval_trace,
    get_aval,
    host_impls,
    jaxpr_as_fun,
    set_current_trace,
)
from xform.errors import JaxprTypeError  # noqa: F401
from xform.extend._core import (  # noqa: F401
    DropVar,
    TraceTag,
    array_types,
    call_impl,
    concrete_or_error,
    find_top_trace,
    gensym,
    jaxprs_in_params,
    mapped_aval,
    new_jaxpr_eqn,
    no_effects,
    primal_dtype_to_tangent_dtype,
    subjaxprs,
    take_current_trace,
    unmapped_aval,
    valid_jaxtype,
)
from xform.extend._core import nonempty_axis_env as nonempty_axis_env_DO_NOT_USE  # noqa: F401
from xform.extend._core import (  # noqa: F401
    unsafe_am_i_under_a_jit as unsafe_am_i_under_a_jit_DO_NOT_USE,
)
from xform.extend._core import (  # noqa: F401
    unsafe_am_i_under_a_vmap as unsafe_am_i_under_a_vmap_DO_NOT_USE,
)
from xform.extend._core import (  # noqa: F401
    unsafe_get_axis_names as unsafe_get_axis_names_DO_NOT_USE,
)
from xform.extend.core import primitives  # noqa: F401
from xform.extend.linear_util import DebugInfo  # noqa: F401
from xform.primitives.base import standard_primitive  # noqa: F401
from xform.primitives.call import CallPrimitive  # noqa: F401

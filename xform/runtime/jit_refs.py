"""``jit`` of a function that takes, closes over or makes mutable array references.

The traced jaxpr (references as ``Ref{...}`` inputs, closed-over ones as constants) is checked
as JAX checks it (no reference returned, none passed twice or both passed and closed over),
then discharged (xform/primitives/refs.py) into a functional program that takes the
references' values and returns their final values after its results. A call reads the
values, runs that program as a ``jit`` equation (compiled once per program, or staged into
an enclosing trace) and writes the final values back into the references: the caller sees
them mutated. Traces whose constants are all concrete are kept per signature.
"""

import weakref

from xform import core, pytree
from xform.primitives.call import jit_p
from xform.primitives.refs import AbstractRef, discharge, read_refs, write_refs

__all__ = ["RefsFound", "call", "known"]


class RefsFound(Exception):  # noqa: N818  (a signal from the trace, not an error)
    """Raised by jit's trace when the function's jaxpr involves references."""


# the jitted function's JitCache -> {signature: (trace, discharged jaxpr)}
known = weakref.WeakKeyDictionary()


def call(jit_fun, key, in_tree, statics, avals, leaves, names):
    """Run ``jit_fun`` on ``leaves`` (flat arguments) with the references among them;
    ``names()`` gives the leaves' names for errors."""
    cache = known.setdefault(jit_fun._cache, {})
    hit = cache.get(key)
    if hit is None:
        trace = jit_fun._trace(in_tree, statics, avals, refs_ok=True)
        jaxpr = trace.jaxpr.jaxpr
        name = jit_fun._state.name
        _check_outputs(jaxpr, trace, jit_fun, names)
        pure = discharge(jaxpr, f"discharging the references of `{name}` for jit")
        hit = (trace, pure)
        if not any(isinstance(c, core.Tracer) for c in trace.consts):
            cache[key] = hit
    trace, pure = hit
    inputs = [*trace.consts, *leaves]
    _check_aliases(inputs, len(trace.consts), jit_fun, names)
    ref_inputs = [x for x in inputs if type(core.get_aval(x)) is AbstractRef]
    outs = jit_p.bind(*read_refs(inputs), jaxpr=pure, name=jit_fun._state.name)
    n = len(outs) - len(ref_inputs)
    write_refs(ref_inputs, outs[n:])
    return pytree.tree_unflatten(trace.out_tree, outs[:n])


def _where(jit_fun):
    fun = getattr(jit_fun._fun, "__wrapped__", jit_fun._fun)
    code = getattr(fun, "__code__", None)
    name = getattr(fun, "__name__", jit_fun._state.name)
    return f"function {name} at {code.co_filename}:{code.co_firstlineno}" if code else name


def _check_outputs(jaxpr, trace, jit_fun, names):
    n_consts = len(trace.consts)
    for x in jaxpr.outvars:
        if type(x.aval) is AbstractRef:
            origin = ""
            if x in jaxpr.invars:
                i = jaxpr.invars.index(x)
                if i >= n_consts:
                    arg = names()[i - n_consts]
                    origin = f"\n\nThe returned mutable array was passed in as the argument {arg}."
                else:
                    origin = "\n\nThe returned mutable array was closed over by the function."
            else:
                origin = "\n\nThe returned mutable array was created on line inside the function."
            raise ValueError(
                f"{_where(jit_fun)} traced for jit returned a mutable array reference of type "
                f"{x.aval}, but mutable array references cannot be returned.{origin}"
            )


def _check_aliases(inputs, n_consts, jit_fun, names):
    seen = {}
    for i, x in enumerate(inputs):
        if type(core.get_aval(x)) is not AbstractRef:
            continue
        j = seen.setdefault(id(x), i)
        if j == i:
            continue
        names = names()
        aval = core.get_aval(x)
        if j < n_consts:
            raise ValueError(
                f"when tracing {_where(jit_fun)} for jit, a mutable array reference of type "
                f"{aval} was both closed over and passed as the argument {names[i - n_consts]}"
            )
        raise ValueError(
            "only one reference to a mutable array may be passed as an argument to a "
            f"function, but when tracing {_where(jit_fun)} for jit the mutable array "
            f"reference of type {aval} appeared at both {names[j - n_consts]} and "
            f"{names[i - n_consts]}."
        )

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
from xform.primitives import refs
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
        refs.check_returned(
            jaxpr,
            jit_fun._fun,
            "jit",
            len(trace.consts),
            names,
            lambda: refs.out_paths(trace.out_tree),
        )
        pure = discharge(jaxpr, f"discharging the references of `{name}` for jit")
        positions = [i for i, v in enumerate(jaxpr.invars) if type(v.aval) is AbstractRef]
        hit = (trace, pure, positions)
        if not any(isinstance(c, core.Tracer) for c in trace.consts):
            cache[key] = hit
    trace, pure, positions = hit
    inputs = [*trace.consts, *leaves]
    ref_inputs = [inputs[i] for i in positions]
    if len({id(r) for r in ref_inputs}) != len(ref_inputs):
        refs.check_aliases(trace.consts, leaves, jit_fun._fun, "jit", names)
    for i, r in zip(positions, read_refs(ref_inputs), strict=True):
        inputs[i] = r
    outs = jit_p.bind(*inputs, jaxpr=pure, name=jit_fun._state.name)
    n = len(outs) - len(ref_inputs)
    write_refs(ref_inputs, outs[n:])
    return pytree.tree_unflatten(trace.out_tree, outs[:n])

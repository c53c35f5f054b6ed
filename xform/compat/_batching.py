"""``jax.interpreters.batching`` under ``xform.compat``: ``xform.extend.batching`` plus
``axis_primitive_batchers``, the rule table equinox registers its primitives in.

An axis rule is ``rule(axis_size, axis_name, trace_type, batched_args, batch_dims, **params)
-> (out, out_dim)``; xform passes ``None`` for ``trace_type`` (it has no main traces).
"""

from xform.extend._tables import RuleTable
from xform.extend.batching import (  # noqa: F401
    AxisData,
    defbroadcasting,
    defvectorized,
    fancy_primitive_batchers,
    not_mapped,
    primitive_batchers,
)
from xform.interpret import batching as _batching


def _axis_to_xform(prim, rule):
    def batch(axis, args, dims, **params):
        outs, out_dims = rule(axis.size, axis.name, None, args, dims, **params)
        if prim.multiple_results:
            return list(outs), list(out_dims)
        return [outs], [out_dims]

    return batch


def _axis_from_xform(prim, rule):
    def batch(axis_size, axis_name, trace_type, args, dims, **params):
        del trace_type
        outs, out_dims = rule(AxisData(axis_name, axis_size), args, dims, **params)
        return (outs, out_dims) if prim.multiple_results else (outs[0], out_dims[0])

    return batch


axis_primitive_batchers = RuleTable(_batching.batch_rules, _axis_to_xform, _axis_from_xform)

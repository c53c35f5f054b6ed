"""Batching rules for new primitives, as ``jax.interpreters.batching`` names them.

``primitive_batchers[prim] = rule`` with ``rule(batched_args, batch_dims, **params) ->
(out, out_dim)`` (sequences of them when ``prim.multiple_results``): ``batch_dims[i]`` is the
mapped dimension of ``batched_args[i]``, or ``not_mapped``; the rule may put the output's
batch dimension anywhere and says where. ``fancy_primitive_batchers`` takes rules that also
get the ``AxisData`` (name and size) first: ``rule(axis_data, batched_args, batch_dims,
**params)``. ``defvectorized`` and ``defbroadcasting`` are one-line registrars for ops that
act on each element independently and for n-ary elementwise ops.
"""

from xform.extend._tables import RuleTable
from xform.interpret import batching as _batching
from xform.interpret.batching import AxisData, defbroadcasting, defvectorized, not_mapped

__all__ = [
    "AxisData",
    "defbroadcasting",
    "defvectorized",
    "fancy_primitive_batchers",
    "not_mapped",
    "primitive_batchers",
]


def _from_jax_results(prim, outs, dims):
    if prim.multiple_results:
        return list(outs), list(dims)
    return [outs], [dims]


def _to_jax_results(prim, outs, dims):
    return (outs, dims) if prim.multiple_results else (outs[0], dims[0])


def _batcher_to_xform(prim, rule):
    def batch(axis, args, dims, **params):
        return _from_jax_results(prim, *rule(args, dims, **params))

    return batch


def _axis_size(args, dims):
    return next(x.shape[d] for x, d in zip(args, dims, strict=True) if d is not not_mapped)


def _batcher_from_xform(prim, rule):
    def batch(args, dims, **params):
        axis = AxisData(None, _axis_size(args, dims))
        return _to_jax_results(prim, *rule(axis, args, dims, **params))

    return batch


primitive_batchers = RuleTable(_batching.batch_rules, _batcher_to_xform, _batcher_from_xform)


def _fancy_to_xform(prim, rule):
    def batch(axis, args, dims, **params):
        return _from_jax_results(prim, *rule(axis, args, dims, **params))

    return batch


def _fancy_from_xform(prim, rule):
    def batch(axis, args, dims, **params):
        return _to_jax_results(prim, *rule(axis, args, dims, **params))

    return batch


fancy_primitive_batchers = RuleTable(_batching.batch_rules, _fancy_to_xform, _fancy_from_xform)

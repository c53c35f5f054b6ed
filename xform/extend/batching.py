"""Batching rules for new primitives, as ``jax.interpreters.batching`` names them.

The rule table and registrars here are the ones xform's own primitives use
(``xform/interpret/batching.py``, handed on unchanged). Their convention, the one xform's
``vmap`` reads: ``batch_rules[prim] = rule`` with ``rule(axis_data, batched_args,
batch_dims, **params) -> (outs, out_dims)``, two lists (one entry each for a single-result
primitive): ``axis_data`` is the ``AxisData`` (name and size) of the vmap, ``batch_dims[i]``
is the mapped dimension of ``batched_args[i]`` or ``not_mapped`` (at least one operand is
mapped), and the rule may put each output's batch dimension anywhere and says where.

Registrars: ``defvectorized`` (a one-operand op acting on each element independently),
``defbroadcasting`` (n-ary elementwise ops), ``defaxes`` (one-operand ops whose
``axes``/``axis`` param names the dimensions they work along).

``primitive_batchers`` (``rule(batched_args, batch_dims, **params) -> (out, out_dim)``) and
``fancy_primitive_batchers`` (the same with the ``AxisData`` first) are ``batch_rules`` seen
in JAX's conventions (a single-result primitive's rule returns one output and one
dimension, not lists), kept for JAX code run under ``xform.compat``; xform's own code and
new extensions use ``batch_rules``.
"""

from xform.extend._tables import RuleTable
from xform.interpret.batching import (
    AxisData,
    batch_rules,
    defaxes,
    defbroadcasting,
    defvectorized,
    not_mapped,
)

__all__ = [
    "AxisData",
    "batch_rules",
    "defaxes",
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


primitive_batchers = RuleTable(batch_rules, _batcher_to_xform, _batcher_from_xform)


def _fancy_to_xform(prim, rule):
    def batch(axis, args, dims, **params):
        return _from_jax_results(prim, *rule(axis, args, dims, **params))

    return batch


def _fancy_from_xform(prim, rule):
    def batch(axis, args, dims, **params):
        return _to_jax_results(prim, *rule(axis, args, dims, **params))

    return batch


fancy_primitive_batchers = RuleTable(batch_rules, _fancy_to_xform, _fancy_from_xform)

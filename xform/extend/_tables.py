"""Views of xform's rule tables that take and give rules in JAX's convention.

xform's rules always return lists (results, tangents, batch dims); JAX's return a single
value for a primitive without ``multiple_results``. Assigning a JAX-style rule through a view
stores its xform-style adaptation in xform's own table, the one the interpreters read, and
reading gives a JAX-style rule back, for xform's built-in primitives too.
"""

from collections.abc import MutableMapping


class RuleTable(MutableMapping):
    """``table`` seen through ``to_xform(prim, rule)`` / ``from_xform(prim, rule)``."""

    def __init__(self, table, to_xform, from_xform):
        self._table = table
        self._to_xform = to_xform
        self._from_xform = from_xform

    def __setitem__(self, prim, rule):
        adapted = self._to_xform(prim, rule)
        adapted.jax_rule = rule
        self._table[prim] = adapted

    def __getitem__(self, prim):
        rule = self._table[prim]
        jax_rule = getattr(rule, "jax_rule", None)
        return jax_rule if jax_rule is not None else self._from_xform(prim, rule)

    def __delitem__(self, prim):
        del self._table[prim]

    def __iter__(self):
        return iter(self._table)

    def __len__(self):
        return len(self._table)

    def __repr__(self):
        return f"<rule table of {len(self)} primitives>"

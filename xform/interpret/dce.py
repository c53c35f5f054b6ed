"""Dead-code elimination: drop the equations of a jaxpr whose results nothing uses.

One backward walk over the equations: a variable is live if a kept output or a kept
equation reads it; an equation is kept if one of its outputs is live or its primitive has
effects (``effectful``: ``debug_callback`` and ``io_callback``, xform/primitives/callback.py)
or holds a jaxpr that has (a loop, branch or ``jit`` body with a print in it): such an
equation is kept whole, even when nothing reads its results.

Rule table: ``dce_rules[prim](used_outputs, eqn) -> (used_inputs, eqn)`` for equations that
can shed part of themselves (a ``jit`` call whose body computes unused outputs); the rule
returns a bool per operand of ``eqn``, whether the slimmed equation still reads it, and the
equation to keep (``None`` to drop it). Without a rule a live equation is kept whole and
reads all its operands.
"""

import weakref

from xform.core import ClosedJaxpr, Jaxpr, JaxprEqn, Literal, subjaxprs

dce_rules = {}
effectful = set()


def dce_jaxpr(jaxpr, used_outputs, prune_inputs=False):
    """``jaxpr`` computing only the outputs marked in ``used_outputs``.

    Returns ``(jaxpr, used_inputs)``: a bool per invar, whether the kept program reads it.
    With ``prune_inputs`` the unread invars are dropped as well; otherwise the signature
    stays (a compiled program's callers pass every argument). Constvars always stay, so the
    consts that go with them still do: ``dce_closed_jaxpr`` drops the unread ones.
    """
    return _dce(jaxpr, used_outputs, prune_inputs)[:2]


def dce_closed_jaxpr(closed, used_outputs, prune_inputs=False):
    """``dce_jaxpr`` for a ClosedJaxpr, which also drops the constvars nothing reads and
    their consts (residuals only dead code read are freed). Returns ``(closed, used_inputs)``."""
    jaxpr, used_inputs, live = _dce(closed.jaxpr, used_outputs, prune_inputs)
    kept = [(v, c) for v, c in zip(jaxpr.constvars, closed.consts, strict=True) if v in live]
    if len(kept) < len(closed.consts):
        jaxpr = Jaxpr([v for v, _ in kept], jaxpr.invars, jaxpr.outvars, jaxpr.eqns)
    return ClosedJaxpr(jaxpr, [c for _, c in kept]), used_inputs


def _dce(jaxpr, used_outputs, prune_inputs):
    eqns, live = _live_eqns(jaxpr, used_outputs)
    used_inputs = [v in live for v in jaxpr.invars]
    invars = (
        [v for v, u in zip(jaxpr.invars, used_inputs, strict=True) if u]
        if prune_inputs
        else jaxpr.invars
    )
    outvars = [v for v, u in zip(jaxpr.outvars, used_outputs, strict=True) if u]
    return Jaxpr(jaxpr.constvars, invars, outvars, eqns), used_inputs, live


def _live_eqns(jaxpr, used_outputs):
    """The equations to keep, and the set of variables they (and the used outputs) read."""
    live = {
        v for v, u in zip(jaxpr.outvars, used_outputs, strict=True) if u and type(v) is not Literal
    }
    kept = []
    for eqn in reversed(jaxpr.eqns):
        used_outs = [v in live for v in eqn.outvars]
        effects = False
        if not any(used_outs):
            if not has_effects(eqn):
                continue
            effects = True  # kept whole: a rule would drop it, having no results to keep
        rule = None if effects else dce_rules.get(eqn.primitive)
        new_eqn = eqn
        if rule is None:
            used_ins = [True] * len(eqn.invars)
        else:
            used_ins, new_eqn = rule(used_outs, eqn)
            if new_eqn is None:
                continue
        for x, u in zip(eqn.invars, used_ins, strict=True):  # aligned with the original
            if u and type(x) is not Literal:
                live.add(x)
        kept.append(new_eqn)
    kept.reverse()
    return kept, live


def has_dead_code(jaxpr):
    """Whether ``dce_jaxpr`` with every output used would drop an equation (a quick scan
    that lets callers keep the jaxpr object, and the caches keyed on it, when it would not)."""
    live = {v for v in jaxpr.outvars if type(v) is not Literal}
    for eqn in reversed(jaxpr.eqns):
        if not any(v in live for v in eqn.outvars) and not has_effects(eqn):
            return True
        if eqn.primitive in dce_rules:  # a call: its body may hold dead code of its own
            return True
        live.update(x for x in eqn.invars if type(x) is not Literal)
    return False


_effects = weakref.WeakKeyDictionary()  # jaxpr -> whether an equation in it has effects


def has_effects(eqn):
    """Whether running ``eqn`` has effects: its primitive has, or a jaxpr among its params
    holds such an equation (at any depth)."""
    if eqn.primitive in effectful:
        return True
    for jaxpr in subjaxprs(eqn.params):
        known = _effects.get(jaxpr)
        if known is None:
            known = _effects[jaxpr] = any(has_effects(e) for e in jaxpr.eqns)
        if known:
            return True
    return False


# --------------------------------------------------------------------------- call primitives

# body jaxpr -> {used outputs: (slimmed ClosedJaxpr, used inputs)}: the same body slimmed the
# same way stays one object, so lowering still emits one function for it.
_slimmed = weakref.WeakKeyDictionary()


def dce_call(used_outputs, eqn, param="jaxpr"):
    """Rule for a call primitive whose ``param`` is a const-free ClosedJaxpr taking the
    operands one to one and returning the results (``jit``): prune its body."""
    closed = eqn.params[param]
    key = tuple(used_outputs)
    cache = _slimmed.setdefault(closed.jaxpr, {})
    hit = cache.get(key)
    if hit is None:
        if all(key) and not has_dead_code(closed.jaxpr):
            hit = (None, [True] * len(eqn.invars))  # None, not ``closed``: the cache is weak
        else:
            body, used_inputs = dce_jaxpr(closed.jaxpr, key, prune_inputs=True)
            hit = (ClosedJaxpr(body, closed.consts), used_inputs)
        cache[key] = hit
    body, used_inputs = hit
    if body is None:
        return used_inputs, eqn
    invars = [x for x, u in zip(eqn.invars, used_inputs, strict=True) if u]
    outvars = [v for v, u in zip(eqn.outvars, used_outputs, strict=True) if u]
    params = {**eqn.params, param: body}
    return used_inputs, JaxprEqn(eqn.primitive, invars, outvars, params, eqn.source_info)

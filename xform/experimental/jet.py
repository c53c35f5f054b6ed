"""``jax.experimental.jet``: Taylor-mode automatic differentiation on xform.

A ``JetTracer`` carries a primal and its truncated Taylor series: ``terms[k-1]`` is the
coefficient of ``t**k`` (inside the interpreter coefficients are not scaled by factorials;
``jet`` converts at its edges). ``terms`` is None when the series is known to be zero: an
operation whose operands all have zero series is bound on the parent trace and its result
left unwrapped, as the JVP interpreter does with zero tangents.

Rule signature: ``jet_rules[prim](primals, series, **params) -> (primal_out, series_out)``
with ``series`` one list of ``order`` arrays per operand (zeros materialized), results as
``prim.bind`` returns them (lists for primitives with several results). Rules run with the
parent trace current. Most are the recurrences for the Taylor coefficients of a composition
(Griewank & Walther, "Evaluating Derivatives", ch. 13).
"""

import math

import numpy as np

from xform import core, lax, tree_util
from xform import numpy as jnp
from xform.core import Tracer, get_aval
from xform.errors import MissingRuleError
from xform.interpret.staging import convert_constvars, trace_to_jaxpr
from xform.primitives.call import jit_p

__all__ = ["jet", "jet_rules"]

jet_rules = {}
# Primitives that run a function (custom-derivative calls, checkpoints): ``rule(trace, args,
# params) -> list``, with the jet trace's own tracers as ``args``.
_call_rules = {}


class JetRuleError(MissingRuleError, KeyError):
    """A primitive without a jet rule (JAX raises ``KeyError`` here; this is also xform's
    ``NotImplementedError`` for a missing rule)."""

    def __str__(self):
        return self.args[0]


class JetTracer(Tracer):
    __slots__ = ("primal", "terms")

    def __init__(self, trace, primal, terms):
        self._trace = trace
        self.primal = primal
        self.terms = terms

    @property
    def aval(self):
        return get_aval(self.primal)

    def concrete_value(self):
        primal = self.primal
        return primal.concrete_value() if isinstance(primal, Tracer) else np.asarray(primal)


class JetTrace(core.Trace):
    __slots__ = ("parent", "order", "alive")
    name = "expanding a Taylor series with jet"

    def __init__(self, parent, order):
        self.parent = parent
        self.order = order
        self.alive = True

    def to_primal_terms(self, x):
        if isinstance(x, JetTracer) and x._trace is self:
            return x.primal, x.terms
        return x, None

    def process_primitive(self, prim, args, params):
        call = _call_rules.get(prim)
        if call is not None:
            return call(self, args, params)
        pairs = [self.to_primal_terms(x) for x in args]
        primals = [p for p, _ in pairs]
        if all(t is None for _, t in pairs):
            return self.parent.process_primitive(prim, primals, params)
        rule = jet_rules.get(prim)
        if rule is None:
            raise JetRuleError(f"jet has no Taylor rule for primitive '{prim.name}'")
        with core.set_current_trace(self.parent):
            series = [_zeros_series(p, self.order) if t is None else t for p, t in pairs]
            out, out_series = rule(primals, series, **params)
        if not prim.multiple_results:
            return [self._wrap(out, out_series)]
        return [self._wrap(p, s) for p, s in zip(out, out_series, strict=True)]

    def _wrap(self, primal, terms):
        return primal if terms is None else JetTracer(self, primal, list(terms))


def _zeros_series(x, order):
    aval = get_aval(x)
    return [jnp.zeros(aval.shape, aval.dtype)] * order


def _jet_flat(fun, primals, series, order):
    """``fun`` (flat lists in and out) at ``primals`` with the unscaled ``series``; returns
    the output primals and their series (zeros where the output does not depend on them)."""
    trace = JetTrace(core.current_trace(), order)
    args = [JetTracer(trace, p, list(s)) for p, s in zip(primals, series, strict=True)]
    try:
        with core.set_current_trace(trace):
            outs = fun(*args)
        pairs = [trace.to_primal_terms(x) for x in outs]
    finally:
        trace.alive = False
    return ([p for p, _ in pairs], [_zeros_series(p, order) if t is None else t for p, t in pairs])


def jet(fun, primals, series, factorial_scaled=True, **_):
    """Taylor-mode differentiation: ``fun`` and the Taylor series of ``fun(x(t))`` at ``t=0``.

    Args:
      fun: a function of arrays returning an array or a pytree of arrays.
      primals: the arguments (a tuple or list of arrays).
      series: per argument, a tuple or list of its higher Taylor terms, all of one length
        (the order).
      factorial_scaled: with True (the default) term ``k`` is the ``k``-th derivative (as in
        a Taylor series written with ``1/k!``), in and out; with False it is the plain
        coefficient of ``t**k``.

    Returns:
      ``(primals_out, series_out)``: ``fun(*primals)`` and its series, of ``fun``'s output
      structure.

    Example:
      >>> jet(xform.numpy.sin, (0.5,), ((1.0, 0.0),))  # sin, cos, -sin at 0.5
    """
    try:
        (order,) = set(map(len, series))
    except ValueError:
        raise ValueError("jet terms have inconsistent lengths for different arguments") from None
    for i, (x, terms) in enumerate(zip(primals, series, strict=False)):
        if not tree_util.treedef_is_leaf(tree_util.tree_structure(x)):
            raise ValueError(f"primal value at position {i} is not an array")
        for j, t in enumerate(terms):
            if not tree_util.treedef_is_leaf(tree_util.tree_structure(t)):
                raise ValueError(f"term {j} for argument {i} is not an array")
    store = {}

    def flat_fun(*args):
        leaves, store["tree"] = tree_util.tree_flatten(fun(*args))
        return leaves

    if factorial_scaled:
        series = [[t / float(math.factorial(k + 1)) for k, t in enumerate(ts)] for ts in series]
    outs, out_series = _jet_flat(flat_fun, list(primals), [list(s) for s in series], order)
    if factorial_scaled:
        out_series = [
            [t * float(math.factorial(k + 1)) for k, t in enumerate(ts)] for ts in out_series
        ]
    tree = store["tree"]
    return tree_util.tree_unflatten(tree, outs), tree_util.tree_unflatten(tree, out_series)


def _jet_unscaled(fun, primals, series):
    """The rule of a composition: ``fun`` expanded by a nested jet (unscaled terms)."""
    outs, out_series = _jet_flat(
        lambda *xs: [fun(*xs)], list(primals), list(series), len(series[0])
    )
    return outs[0], out_series[0]


# --------------------------------------------------------------------------- registrars


def defzero(prim):
    """Piecewise-constant (or integer- or bool-valued) ops: the series is zero."""
    jet_rules[prim] = lambda primals, series, **params: (prim.bind(*primals, **params), None)


def deflinear(prim):
    """Ops linear in all their operands jointly: the op applied to each term."""

    def rule(primals, series, **params):
        terms = [prim.bind(*ts, **params) for ts in zip(*series, strict=True)]
        if prim.multiple_results:
            terms = [list(t) for t in zip(*terms, strict=True)]
        return prim.bind(*primals, **params), terms

    jet_rules[prim] = rule


def _linear_in_first(prim, n_linear=1):
    """Ops linear in their first ``n_linear`` operands, given the others (indices)."""

    def rule(primals, series, **params):
        rest = primals[n_linear:]
        terms = [
            prim.bind(*ts[:n_linear], *rest, **params)
            for ts in zip(*series[:n_linear], strict=True)
        ]
        return prim.bind(*primals, **params), terms

    jet_rules[prim] = rule


def def_comp(prim, comp):
    """An op expanded as a composition of ops with rules."""
    jet_rules[prim] = lambda primals, series, **params: _jet_unscaled(comp, primals, series)


def _chain(c, u, v0):
    """Coefficients of ``v`` with ``v' = c * u'`` (``c`` and ``u`` known series)."""
    v = [v0]
    for k in range(1, len(u)):
        v.append(sum(j * c[k - j] * u[j] for j in range(1, k + 1)) / k)
    return v


def def_deriv(prim, deriv):
    """An op whose derivative ``deriv`` has rules: ``v' = deriv(u) u'``."""

    def rule(primals, series):
        (x,), (terms,) = primals, series
        c0, cs = _jet_unscaled(deriv, [x], [terms])
        return tuple(_split(_chain([c0, *cs], [x, *terms], prim.bind(x))))

    jet_rules[prim] = rule


def _split(v):
    return v[0], v[1:]


# --------------------------------------------------------------------------- rules

for _p in (
    lax.le_p,
    lax.lt_p,
    lax.gt_p,
    lax.ge_p,
    lax.eq_p,
    lax.ne_p,
    lax.not_p,
    lax.and_p,
    lax.or_p,
    lax.xor_p,
    lax.floor_p,
    lax.ceil_p,
    lax.round_p,
    lax.sign_p,
    lax.stop_gradient_p,
    lax.is_finite_p,
    lax.shift_left_p,
    lax.shift_right_logical_p,
    lax.shift_right_arithmetic_p,
    lax.bitcast_convert_type_p,
    lax.argmax_p,
    lax.argmin_p,
    lax.population_count_p,
    lax.clz_p,
):
    defzero(_p)

for _p in (
    lax.neg_p,
    lax.real_p,
    lax.imag_p,
    lax.conj_p,
    lax.complex_p,
    lax.add_p,
    lax.add_any_p,
    lax.sub_p,
    lax.convert_element_type_p,
    lax.broadcast_in_dim_p,
    lax.concatenate_p,
    lax.split_p,
    lax.stack_p,
    lax.unstack_p,
    lax.pad_p,
    lax.reshape_p,
    lax.squeeze_p,
    lax.rev_p,
    lax.transpose_p,
    lax.slice_p,
    lax.reduce_sum_p,
    lax.reduce_window_sum_p,
    lax.fft_p,
    lax.copy_p,
    lax.device_put_p,
    lax.reshard_p,
    lax.cumsum_p,
    lax.tile_p,
    lax.optimization_barrier_p,
    lax.sharding_constraint_p,
):
    deflinear(_p)

_linear_in_first(lax.dynamic_slice_p)
_linear_in_first(lax.dynamic_update_slice_p, 2)
_linear_in_first(lax.gather_p)


def _scatter_add_rule(primals, series, **params):
    operand, indices, updates = primals
    terms = [
        lax.scatter_add_p.bind(a, indices, b, **params)
        for a, b in zip(series[0], series[2], strict=True)
    ]
    return lax.scatter_add_p.bind(operand, indices, updates, **params), terms


jet_rules[lax.scatter_add_p] = _scatter_add_rule


def _bilinear(prim):
    # The Cauchy product: v_k = sum_j op(u_j, w_{k-j}).
    def rule(primals, series, **params):
        u, w = [primals[0], *series[0]], [primals[1], *series[1]]
        v = []
        for k in range(len(u)):
            terms = [prim.bind(u[j], w[k - j], **params) for j in range(k + 1)]
            v.append(sum(terms[1:], terms[0]))
        return _split(v)

    jet_rules[prim] = rule


for _p in (lax.mul_p, lax.dot_general_p, lax.conv_general_dilated_p):
    _bilinear(_p)


def _div_rule(primals, series):
    # From u = v * w: v_k = (u_k - sum_{j<k} v_j w_{k-j}) / w_0.
    u, w = [primals[0], *series[0]], [primals[1], *series[1]]
    v = []
    for k in range(len(u)):
        acc = sum(v[j] * w[k - j] for j in range(k)) if k else 0
        v.append((u[k] - acc) / w[0])
    return _split(v)


jet_rules[lax.div_p] = _div_rule


def _exp_rule(primals, series):
    (x,), (terms,) = primals, series
    u, v = [x, *terms], [lax.exp(x)]
    for k in range(1, len(u)):  # v' = v u'
        v.append(sum(j * u[j] * v[k - j] for j in range(1, k + 1)) / k)
    return _split(v)


jet_rules[lax.exp_p] = _exp_rule


def _log_rule(primals, series):
    (x,), (terms,) = primals, series
    u, v = [x, *terms], [lax.log(x)]
    for k in range(1, len(u)):  # u v' = u'
        acc = sum(j * v[j] * u[k - j] for j in range(1, k)) if k > 1 else 0
        v.append((u[k] - acc / k) / u[0])
    return _split(v)


jet_rules[lax.log_p] = _log_rule


def _sin_cos(sign, sin, cos):
    # s' = c u', c' = sign * s u' (sign -1 for sin/cos, +1 for sinh/cosh).
    def both(x, terms):
        u, s, c = [x, *terms], [sin(x)], [cos(x)]
        for k in range(1, len(u)):
            s.append(sum(j * u[j] * c[k - j] for j in range(1, k + 1)) / k)
            c.append(sign * sum(j * u[j] * s[k - j] for j in range(1, k + 1)) / k)
        return s, c

    return (
        lambda primals, series: _split(both(primals[0], series[0])[0]),
        lambda primals, series: _split(both(primals[0], series[0])[1]),
    )


jet_rules[lax.sin_p], jet_rules[lax.cos_p] = _sin_cos(-1, lax.sin, lax.cos)
jet_rules[lax.sinh_p], jet_rules[lax.cosh_p] = _sin_cos(1, lax.sinh, lax.cosh)


def _logistic_series(x, terms):
    # v' = e u' with e = v (1 - v), whose terms follow from v's.
    u, v = [x, *terms], [lax.logistic(x)]
    e = [v[0] * (1 - v[0])]
    for k in range(1, len(u)):
        v.append(sum(j * e[k - j] * u[j] for j in range(1, k + 1)) / k)
        e.append((1 - v[0]) * v[k] - sum(v[j] * v[k - j] for j in range(1, k + 1)))
    return v


jet_rules[lax.logistic_p] = lambda primals, series: _split(_logistic_series(primals[0], series[0]))


def _tanh_rule(primals, series):
    # tanh(x) = 2 logistic(2x) - 1
    v = _logistic_series(2 * primals[0], [2 * t for t in series[0]])
    return 2 * v[0] - 1, [2 * t for t in v[1:]]


jet_rules[lax.tanh_p] = _tanh_rule


def _exp_of(log_series, v0):
    u, v = log_series, [v0]
    for k in range(1, len(u)):
        v.append(sum(j * v[k - j] * u[j] for j in range(1, k + 1)) / k)
    return _split(v)


def _pow_rule(primals, series):
    # x ** y = exp(y log x)
    x, y = primals
    z0, zs = _jet_unscaled(lambda a, b: lax.mul(b, lax.log(a)), primals, series)
    return _exp_of([z0, *zs], lax.pow(x, y))


jet_rules[lax.pow_p] = _pow_rule


def _power_by_squaring(x, n):
    if n < 0:
        return _power_by_squaring(1 / x, -n)
    if n == 0:
        return jnp.ones_like(x)
    half = _power_by_squaring(x * x, n // 2) if n > 1 else None
    if n % 2 == 0:
        return half
    return x if half is None else x * half


def _integer_pow_rule(primals, series, *, y):
    return _jet_unscaled(lambda x: _power_by_squaring(x, y), primals, series)


jet_rules[lax.integer_pow_p] = _integer_pow_rule
def_comp(lax.sqrt_p, lambda x: lax.pow(x, jnp.asarray(0.5, x.dtype)))
def_comp(lax.rsqrt_p, lambda x: lax.pow(x, jnp.asarray(-0.5, x.dtype)))
def_comp(lax.square_p, lambda x: x * x)
def_comp(lax.expm1_p, lambda x: lax.exp(x) - 1)
def_comp(lax.log1p_p, lambda x: lax.log(1 + x))
def_comp(lax.erfc_p, lambda x: 1 - lax.erf(x))
def_comp(lax.clamp_p, lambda lo, x, hi: lax.min(lax.max(lo, x), hi))
def_comp(lax.rem_p, lambda x, y: x - y * lax.floor(x / y))
def_comp(lax.asinh_p, lambda x: lax.log(x + lax.sqrt(x * x + 1)))
def_comp(lax.acosh_p, lambda x: lax.log(x + lax.sqrt(x * x - 1)))
def_comp(lax.atanh_p, lambda x: 0.5 * lax.log((1 + x) / (1 - x)))
def_deriv(lax.erf_p, lambda x: (2 / np.sqrt(np.pi)) * lax.exp(-(x * x)))
def_deriv(lax.atan_p, lambda x: 1 / (1 + x * x))


def _atan2_rule(primals, series):
    z0, zs = _jet_unscaled(lax.div, primals, series)
    c0, cs = _jet_unscaled(lambda z: 1 / (1 + z * z), [z0], [zs])
    return _split(_chain([c0, *cs], [z0, *zs], lax.atan2(*primals)))


jet_rules[lax.atan2_p] = _atan2_rule


def _select_n_rule(primals, series):
    which, *cases = primals
    terms = [lax.select_n(which, *ts) for ts in zip(*series[1:], strict=True)]
    return lax.select_n(which, *cases), terms


jet_rules[lax.select_n_p] = _select_n_rule


def _abs_rule(primals, series):
    (x,), (terms,) = primals, series
    sign = jnp.where(x < 0, -1, 1).astype(x.dtype)
    return lax.abs(x), [sign * t for t in terms]


jet_rules[lax.abs_p] = _abs_rule


def _max_min_rule(pick):
    # Where x and y tie, each term is the mean of theirs (as JAX's rule).
    def rule(primals, series):
        x, y = jnp.broadcast_arrays(*primals)
        first, tie = pick(x, y), x == y

        def term(a, b):
            a, b = jnp.broadcast_arrays(a, b)
            return lax.select(tie, (a + b) / 2, lax.select(first, a, b))

        return lax.select(first, x, y), [term(a, b) for a, b in zip(*series, strict=True)]

    return rule


jet_rules[lax.max_p] = _max_min_rule(lambda x, y: x > y)
jet_rules[lax.min_p] = _max_min_rule(lambda x, y: x < y)


def _reduce_choose_rule(prim):
    # The terms of the chosen elements, averaged over ties.
    def rule(primals, series, *, axes, **params):
        (x,), (terms,) = primals, series
        out = prim.bind(x, axes=axes, **params)
        kept = tuple(1 if i in axes else d for i, d in enumerate(x.shape))
        where = (x == lax.reshape(out, kept)).astype(terms[0].dtype)
        count = lax.reduce_sum(where, axes)
        return out, [lax.reduce_sum(t * where, axes) / count for t in terms]

    jet_rules[prim] = rule


_reduce_choose_rule(lax.reduce_max_p)
_reduce_choose_rule(lax.reduce_min_p)


def _jit_rule(primals, series, *, jaxpr, **params):
    # The body expanded by a jet of its own, staged into a new jit call.
    n, order = len(primals), len(series[0])

    def flat(*xs):
        ps, ts = xs[:n], xs[n:]
        outs, out_series = _jet_flat(
            lambda *a: core.eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, *a),
            list(ps),
            [list(ts[i * order : (i + 1) * order]) for i in range(n)],
            order,
        )
        return [*outs, *(t for s in out_series for t in s)]

    terms = [t for s in series for t in s]
    avals = [get_aval(x) for x in [*primals, *terms]]
    body, consts = convert_constvars(trace_to_jaxpr(flat, avals, "tracing a jit body for jet"))
    outs = jit_p.bind(*consts, *primals, *terms, jaxpr=body, **params)
    m = len(jaxpr.out_avals)
    return outs[:m], [list(outs[m + i * order : m + (i + 1) * order]) for i in range(m)]


jet_rules[jit_p] = _jit_rule


def _run_function(trace, args, params):
    # Custom-derivative calls: their function, expanded (the custom rules are for AD only).
    fun = params.get("fun")
    if fun is None:
        closed = params["call_jaxpr"]
        return core.eval_jaxpr(closed.jaxpr, closed.consts, *args)
    with core.set_current_trace(trace):
        return list(fun(*args))


def _run_checkpoint(trace, args, params):
    closed = params["jaxpr"]
    return core.eval_jaxpr(closed.jaxpr, closed.consts, *args)


_call_rules[lax.custom_jvp_call_p] = _run_function
_call_rules[lax.custom_vjp_call_p] = _run_function
_call_rules[lax.remat_p] = _run_checkpoint

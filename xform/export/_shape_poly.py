"""Symbolic dimensions: ``symbolic_shape("b, 784")`` and what calling a shape-polymorphic
exported program needs.

Exporting: ``export`` traces a function whose argument shapes hold dimension expressions;
they flow through the shape rules as ``core.SymbolicDim``s (arithmetic builds expressions,
comparisons decide from bounds or raise ``InconclusiveDimensionOperation``, a dimension used
as a value binds ``dimension_as_value_p``), and lowering/export.py emits dynamic shapes.
Calling: a program exported with symbolic dimensions (by xform or JAX) is called after
solving the dimension variables from the actual argument shapes (``solve_dim_vars``).

A dimension expression is kept as a small syntax tree over integers, dimension variables,
``+``, ``-``, ``*`` and JAX's functions (``floordiv``, ``mod``, ``max``, ``min``,
``non_negative``); it prints in JAX's syntax, so serialized shapes parse back in JAX.
"""

import operator
import re

import numpy as np

from xform import core, dtypes, pytree
from xform.api.jit import ShapeDtypeStruct
from xform.core import ShapedArray
from xform.errors import InconclusiveDimensionOperation
from xform.primitives.base import standard_primitive

__all__ = ["SymbolicScope", "is_symbolic_dim", "symbolic_args_specs", "symbolic_shape"]

_FUNCTIONS = {
    "floordiv": lambda a, b: a // b,
    "mod": lambda a, b: a % b,
    "max": max,
    "min": min,
    "non_negative": lambda a: max(a, 0),
}


class SymbolicScope:
    """The scope that the symbolic dimensions of one exported function share, with the
    constraints on them (strings ``"e1 >= e2"``, ``"e1 <= e2"`` or ``"e1 == e2"``).

    Dimensions from different scopes must not meet in one shape or one call.
    """

    def __init__(self, constraints_str=()):
        if isinstance(constraints_str, str):
            raise ValueError(
                f"The symbolic constraints should be a sequence of strings. Got {constraints_str!r}"
            )
        self._constraints = []
        for c in constraints_str:
            m = re.fullmatch(r"(.+?)(>=|<=|==)(.+)", c.strip())
            if m is None:
                raise ValueError(
                    f"Invalid symbolic constraint {c!r}: expected the form "
                    "'e1 >= e2', 'e1 <= e2' or 'e1 == e2'"
                )
            self._constraints.append(
                (_parse(m.group(1), self), m.group(2), _parse(m.group(3), self))
            )

    def lower_bound(self, var):
        """The lower bound of ``var``: 1, or c from a constraint ``var >= c``."""
        bound = 1
        for a, op, b in self._constraints:
            big, small = (b, a) if op == "<=" else (a, b)
            if op != "==" and big.node == ("var", var) and small.node[0] == "const":
                bound = max(bound, small.node[1])
        return bound

    def check(self, env):
        """Raise ``ValueError`` if a constraint does not hold for these variable values."""
        for lhs, op, rhs in self._constraints:
            a, b = lhs.evaluate(env), rhs.evaluate(env)
            ok = a >= b if op == ">=" else a <= b if op == "<=" else a == b
            if not ok:
                raise ValueError(
                    f"Symbolic constraint '{lhs} {op} {rhs}' does not hold for "
                    f"{lhs} = {a} and {rhs} = {b}"
                )

    def __str__(self):
        return "SymbolicScope(" + ", ".join(f"{a} {op} {b}" for a, op, b in self._constraints) + ")"

    __repr__ = __str__


class _DimExpr(core.SymbolicDim):
    """A symbolic dimension: a syntax tree ``(op, *children)``; op is ``"var"``, ``"const"``,
    ``"+"``, ``"*"``, ``"neg"`` or a function name."""

    __slots__ = ("node", "scope")

    def __init__(self, node, scope):
        self.node = node
        self.scope = scope

    def evaluate(self, env):
        """The integer value for ``env`` (variable name -> int)."""
        return _evaluate(self.node, env)

    def variables(self):
        return _variables(self.node)

    def linear(self):
        """``({var: coefficient}, constant)`` if the expression is linear, else None."""
        return _linear(self.node)

    def __str__(self):
        return _show(self.node)

    def __repr__(self):
        return str(self)

    def __eq__(self, other):
        # Equal when structurally equal, or when both are linear with the same terms (so
        # that b*3 == 3*b, as shape rules compare sizes).
        if isinstance(other, _DimExpr):
            return self.node == other.node or (
                self._canonical() is not None and self._canonical() == other._canonical()
            )
        if isinstance(other, (int, np.integer)):
            return self._canonical() == ((), int(other))
        return False

    def _canonical(self):
        lin = self.linear()
        if lin is None:
            return None
        return tuple(sorted((v, k) for v, k in lin[0].items() if k)), lin[1]

    def __hash__(self):
        canonical = self._canonical()
        return hash(self.node if canonical is None else canonical)

    # Arithmetic builds larger expressions, as with JAX's symbolic dimensions.
    def _combine(self, op, other, swap=False):
        if isinstance(other, _DimExpr):
            if other.scope is not self.scope:
                raise ValueError(
                    f"Invalid mixing of symbolic scopes: {self} and {other} come "
                    "from different SymbolicScope objects"
                )
            node = other.node
        elif isinstance(other, core.Tracer):  # x.shape[0] + x: arithmetic on the value
            fn = {
                "+": operator.add,
                "-": operator.sub,
                "*": operator.mul,
                "floordiv": operator.floordiv,
                "mod": operator.mod,
            }[op]
            return fn(other, self.as_value()) if swap else fn(self.as_value(), other)
        elif isinstance(other, int) or (
            hasattr(other, "__index__") and not isinstance(other, core.Tracer)
        ):
            node = ("const", int(other))
        else:
            return NotImplemented
        a, b = (node, self.node) if swap else (self.node, node)
        neutral = {"*": 1, "+": 0, "-": 0, "floordiv": 1}.get(op)
        if node == ("const", neutral) and (not swap or op in ("*", "+")):
            return self  # b*1, 1*b, b+0, b-0: kept as b, so that equal shapes print equal
        lin = self.linear()
        if (
            op in ("floordiv", "mod")
            and node[0] == "const"
            and not swap
            and lin is not None
            and node[1] > 0
            and all(k % node[1] == 0 for k in (*lin[0].values(), lin[1]))
        ):
            if op == "mod":  # mod(3*b, 3) is 0
                return 0
            return _from_linear(
                {v: k // node[1] for v, k in lin[0].items()}, lin[1] // node[1], self.scope
            )  # floordiv(3*b, 3) is b
        if op == "*" and node[0] == "const" and lin is not None:  # 4*(3*b) is 12*b
            if node[1] == 0:
                return 0
            return _from_linear(
                {v: k * node[1] for v, k in lin[0].items()}, lin[1] * node[1], self.scope
            )
        if op in ("floordiv", "mod") and not swap and node[0] != "const":
            ratio = _ratio(lin, _linear(node))  # floordiv(12*b, b) is 12, mod(12*b, b) 0
            if ratio is not None:
                return 0 if op == "mod" else ratio
        if op == "*" and b[0] == "const":  # constants first: "2*b", as JAX prints
            a, b = b, a
        if op in ("+", "-"):
            lin_a, lin_b = _linear(a), _linear(b)
            if lin_a is not None and lin_b is not None:
                # b + b is 2*b, (b + b) - b is b: sums of variables are collected, as JAX's
                sign = 1 if op == "+" else -1
                coeffs = dict(lin_a[0])
                for v, k in lin_b[0].items():
                    coeffs[v] = coeffs.get(v, 0) + sign * k
                if not any(coeffs.values()):  # a constant, as JAX's b - b
                    return lin_a[1] + sign * lin_b[1]
                return _from_linear(coeffs, lin_a[1] + sign * lin_b[1], self.scope)
        if op == "-":
            return _DimExpr(("+", a, ("neg", b)), self.scope)
        return _DimExpr((op, a, b), self.scope)

    def __add__(self, other):
        return self._combine("+", other)

    def __radd__(self, other):
        return self._combine("+", other, swap=True)

    def __sub__(self, other):
        return self._combine("-", other)

    def __rsub__(self, other):
        return self._combine("-", other, swap=True)

    def __mul__(self, other):
        return self._combine("*", other)

    def __rmul__(self, other):
        return self._combine("*", other, swap=True)

    def __floordiv__(self, other):
        return self._combine("floordiv", other)

    def __mod__(self, other):
        return self._combine("mod", other)

    def __neg__(self):
        return _DimExpr(("neg", self.node), self.scope)

    def __index__(self):
        raise _inconclusive(
            f"Symbolic dimension {self} cannot be used as an integer (a "
            "concrete value is needed here)"
        )

    def as_value(self):
        """The dimension as a traced integer scalar (``dimension_as_value_p``)."""
        return dimension_as_value_p.bind(dim=self)

    # Comparisons decide from the bounds of the difference (every variable is >= 1), as
    # JAX's; one that the bounds cannot decide raises InconclusiveDimensionOperation.
    def _compare(self, other, op):
        if not isinstance(other, (_DimExpr, int)) and not hasattr(other, "__index__"):
            return NotImplemented
        diff = self - other
        lo, hi = (diff, diff) if isinstance(diff, int) else _bounds(diff.node, self.scope)
        if op == ">=":
            decided = True if lo >= 0 else False if hi < 0 else None
        else:  # ">"
            decided = True if lo > 0 else False if hi <= 0 else None
        if decided is None:
            raise _inconclusive(
                f"Symbolic dimension comparison '{self}' {op} '{other}' is inconclusive."
            )
        return decided

    def __ge__(self, other):
        return self._compare(other, ">=")

    def __gt__(self, other):
        return self._compare(other, ">")

    def __le__(self, other):
        return _as_expr(other, self.scope)._compare(self, ">=")

    def __lt__(self, other):
        return _as_expr(other, self.scope)._compare(self, ">")

    __int__ = __index__


def _ratio(lin_a, lin_b):
    """The integer c with ``a == c * b`` for two linear forms, or None."""
    if lin_a is None or lin_b is None or not any(lin_b[0].values()):
        return None
    pairs = [(lin_a[0].get(v, 0), lin_b[0].get(v, 0)) for v in {*lin_a[0], *lin_b[0]}]
    pairs.append((lin_a[1], lin_b[1]))
    ka, kb = next((ka, kb) for ka, kb in pairs if kb)
    if ka % kb:
        return None
    c = ka // kb
    return c if all(x == c * y for x, y in pairs) else None


def _from_linear(coeffs, const, scope):
    def term(k, node):
        positive = node if abs(k) == 1 else ("*", ("const", abs(k)), node)
        return positive if k > 0 else ("neg", positive)

    terms = [term(k, ("var", v)) for v, k in sorted(coeffs.items()) if k]
    if const or not terms:
        terms.append(
            ("const", const)
            if const >= 0 or not terms
            else term(const, ("const", 1))
            if abs(const) == 1
            else ("neg", ("const", -const))
        )
    node = terms[0]
    for t in terms[1:]:
        node = ("+", node, t)
    return _DimExpr(node, scope)


def _as_expr(x, scope):
    return x if isinstance(x, _DimExpr) else _DimExpr(("const", int(x)), scope)


def _bounds(node, scope):
    """``(lower, upper)`` bounds of a linear expression for variables >= 1, or >= c under a
    constraint ``"v >= c"`` of ``scope`` (infinite when not linear or unbounded)."""
    lin = _linear(node)
    if lin is None:
        return -np.inf, np.inf
    coeffs, const = lin
    lo = hi = const
    for v, k in coeffs.items():
        if k > 0:
            lo, hi = lo + k * scope.lower_bound(v), np.inf
        elif k < 0:
            lo, hi = -np.inf, hi + k * scope.lower_bound(v)
    return lo, hi


def _inconclusive(message):
    return InconclusiveDimensionOperation(message)


def _evaluate(node, env):
    op = node[0]
    if op == "const":
        return node[1]
    if op == "var":
        if node[1] not in env:
            raise KeyError(node[1])
        return env[node[1]]
    args = [_evaluate(c, env) for c in node[1:]]
    if op == "+":
        return sum(args)
    if op == "*":
        return int(np.prod(args, dtype=object))
    if op == "neg":
        return -args[0]
    return _FUNCTIONS[op](*args)


def _variables(node):
    if node[0] == "var":
        return {node[1]}
    if node[0] == "const":
        return set()
    return set().union(*(_variables(c) for c in node[1:]))


def _linear(node):
    op = node[0]
    if op == "const":
        return {}, node[1]
    if op == "var":
        return {node[1]: 1}, 0
    if op in ("+", "neg"):
        parts = [_linear(c) for c in node[1:]]
        if any(p is None for p in parts):
            return None
        sign = -1 if op == "neg" else 1
        coeffs, const = {}, 0
        for cs, c in parts:
            for v, k in cs.items():
                coeffs[v] = coeffs.get(v, 0) + sign * k
            const += sign * c
        return coeffs, const
    if op == "*":
        parts = [_linear(c) for c in node[1:]]
        if any(p is None for p in parts) or sum(1 for cs, _ in parts if cs) > 1:
            return None
        factor = int(np.prod([c for cs, c in parts if not cs], dtype=object))
        for cs, c in parts:
            if cs:
                return {v: k * factor for v, k in cs.items()}, c * factor
        return {}, factor
    return None


def _show(node, parent=None):
    op = node[0]
    if op == "const":
        return str(node[1])
    if op == "var":
        return node[1]
    if op == "neg":
        return f"-{_show(node[1], '*')}"
    if op == "+":
        text = _show(node[1], "+")
        for c in node[2:]:
            if c[0] == "neg":
                text += f" - {_show(c[1], '*')}"
            else:
                text += f" + {_show(c, '+')}"
        return f"({text})" if parent == "*" else text
    if op == "*":
        return "*".join(_show(c, "*") for c in node[1:])
    return f"{op}(" + ", ".join(_show(c) for c in node[1:]) + ")"


# --------------------------------------------------------------------------- parsing

_TOKEN = re.compile(r"\s*(?:(\d+)|([A-Za-z][A-Za-z0-9_]*)|(.))")


def _tokens(text):
    out = []
    pos = 0
    text = text.rstrip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        num, name, sym = m.groups()
        out.append(("num", int(num)) if num else ("name", name) if name else ("sym", sym))
        pos = m.end()
    return out


class _Parser:
    def __init__(self, text):
        self.text = text
        self.toks = _tokens(text)
        self.i = 0

    def error(self, what):
        return ValueError(f"syntax error in symbolic shape {self.text!r}: {what}")

    def peek(self):
        return self.toks[self.i] if self.i < len(self.toks) else ("end", None)

    def take(self, sym=None):
        tok = self.peek()
        if sym is not None and tok != ("sym", sym):
            raise self.error(f"expected {sym!r}")
        self.i += 1
        return tok

    def expr(self):
        terms = [self.term()]
        while self.peek() in (("sym", "+"), ("sym", "-")):
            sign = self.take()[1]
            t = self.term()
            terms.append(("neg", t) if sign == "-" else t)
        return terms[0] if len(terms) == 1 else ("+", *terms)

    def term(self):
        factors = [self.factor()]
        while self.peek() == ("sym", "*"):
            self.take()
            factors.append(self.factor())
        return factors[0] if len(factors) == 1 else ("*", *factors)

    def factor(self):
        kind, val = self.take()
        if kind == "num":
            return ("const", val)
        if kind == "sym" and val == "-":
            return ("neg", self.factor())
        if kind == "sym" and val == "(":
            e = self.expr()
            self.take(")")
            return e
        if kind == "name":
            if self.peek() == ("sym", "("):
                if val not in _FUNCTIONS:
                    raise self.error(f"unknown function {val!r}")
                self.take("(")
                args = [self.expr()]
                while self.peek() == ("sym", ","):
                    self.take()
                    args.append(self.expr())
                self.take(")")
                return (val, *args)
            return ("var", val)
        raise self.error(f"unexpected {val!r}")


def _parse(text, scope):
    p = _Parser(text)
    node = p.expr()
    if p.peek()[0] != "end":
        raise p.error(f"unexpected {p.peek()[1]!r}")
    return _DimExpr(node, scope)


def _dim(text, scope):
    d = _parse(text, scope)
    return d.node[1] if d.node[0] == "const" else d


def symbolic_shape(shape_spec, *, constraints=(), scope=None, like=None):
    """A shape with symbolic dimensions from a string such as ``"b, 784"`` or ``"(b, 2*b)"``.

    Args:
      shape_spec: comma-separated dimension expressions (integers, variables, ``+``, ``-``,
        ``*``, ``floordiv``, ``mod``, ``max``, ``min``), optionally in parentheses; ``_``
        takes the dimension from ``like``, ``...`` the rest of ``like``. None means ``"..."``.
      constraints: constraints on the dimensions (``"b >= 16"``), for a new scope.
      scope: the ``SymbolicScope`` the dimensions belong to (not with ``constraints``).
      like: a shape that fills in the placeholders.

    Returns:
      A tuple of ints and symbolic dimensions.

    Example:
      >>> symbolic_shape("b, 784")  # (b, 784)
    """
    if scope is not None and constraints:
        raise ValueError("Cannot specify both a `scope` and `constraints`.")
    if scope is None:
        scope = SymbolicScope(constraints)
    spec = "..." if shape_spec is None else shape_spec
    if not isinstance(spec, str):
        raise ValueError(f"polymorphic shape spec should be a string, got {shape_spec!r}")
    spec = spec.strip()
    if spec.startswith("(") and spec.endswith(")") and _balanced(spec[1:-1]):
        spec = spec[1:-1]
    parts = [p.strip() for p in _split_top(spec)] if spec.strip() else []
    if parts and parts[-1] == "":
        parts.pop()  # "b," is a 1-tuple
    out = []
    for i, p in enumerate(parts):
        if p == "...":
            if i != len(parts) - 1:
                raise ValueError(
                    f"syntax error in symbolic shape {shape_spec!r}: '...' must be last"
                )
            if like is None:
                raise ValueError(
                    f"polymorphic shape {shape_spec!r} uses '...' but no `like` shape was given"
                )
            rest = list(like[i:])
            if any(d is None for d in rest):
                raise ValueError(
                    f"polymorphic shape {shape_spec!r} in dimension {i} uses "
                    f"'...' for an unknown dimension of {tuple(like)}"
                )
            out.extend(rest)
        elif p == "_":
            if like is None or i >= len(like) or like[i] is None:
                raise ValueError(
                    f"polymorphic shape {shape_spec!r} in dimension {i} uses "
                    "'_' for a dimension with no known value in `like`"
                )
            out.append(like[i])
        else:
            d = _dim(p, scope)
            if (
                like is not None
                and isinstance(d, int)
                and i < len(like)
                and like[i] is not None
                and like[i] != d
            ):
                raise ValueError(
                    f"polymorphic shape {shape_spec!r} in dimension {i} must "
                    f"match the known dimension size {like[i]}"
                )
            out.append(d)
    if like is not None and len(out) != len(like):
        raise ValueError(
            f"polymorphic shape {shape_spec!r} of rank {len(out)} must match the "
            f"rank {len(like)} of the known shape {tuple(like)}"
        )
    return tuple(out)


def _balanced(text):
    depth = 0
    for c in text:
        depth += c == "("
        depth -= c == ")"
        if depth < 0:
            return False
    return depth == 0


def _split_top(text):
    parts, depth, cur = [], 0, ""
    for c in text:
        if c == "," and depth == 0:
            parts.append(cur)
            cur = ""
            continue
        depth += (c == "(") - (c == ")")
        cur += c
    parts.append(cur)
    return parts


def is_symbolic_dim(p):
    """Whether a dimension is symbolic (not an integer)."""
    return isinstance(p, _DimExpr)


def symbolic_args_specs(args, shapes_specs, constraints=(), scope=None):
    """``ShapeDtypeStruct`` specs for ``export``: ``args``'s pytree and dtypes with the shapes
    of ``shapes_specs`` (None, one string for every argument, or a prefix pytree of
    strings), placeholders filled from ``args``."""
    if scope is not None and constraints:
        raise ValueError("Cannot specify both a `scope` and `constraints`.")
    if scope is None:
        scope = SymbolicScope(constraints)
    leaves, tree = pytree.tree_flatten(args)
    if shapes_specs is None:
        specs = [None] * len(leaves)
    elif isinstance(shapes_specs, str):
        specs = [shapes_specs] * len(leaves)
    else:
        specs = _broadcast_prefix(shapes_specs, args)
    out = []
    for x, spec in zip(leaves, specs, strict=True):
        shape = tuple(np.shape(x)) if not hasattr(x, "shape") else tuple(x.shape)
        dtype = x.dtype if hasattr(x, "dtype") else np.asarray(x).dtype
        if spec is not None:
            shape = symbolic_shape(spec, scope=scope, like=shape)
        out.append(ShapeDtypeStruct(shape, dtype))
    return pytree.tree_unflatten(tree, out)


def _broadcast_prefix(prefix, full):
    """One spec per leaf of ``full``, ``prefix`` broadcast along its subtrees."""
    out = []
    pytree.tree_map(
        lambda spec, sub: out.extend([spec] * len(pytree.tree_leaves(sub))),
        prefix,
        full,
        is_leaf=lambda x: x is None or isinstance(x, str),
    )
    return out


# --------------------------------------------------------------------------- calling


def solve_dim_vars(exp_avals, actual_shapes, describe):
    """The values of the dimension variables of ``exp_avals`` (shapes with symbolic
    dimensions) for arguments of ``actual_shapes``. ``describe(i, d)`` names argument ``i``'s
    dimension ``d`` (or the argument, for ``d=None``) in errors, as JAX's."""
    env = {}
    pending = []
    for i, (aval, shape) in enumerate(zip(exp_avals, actual_shapes, strict=True)):
        for d, (e, actual) in enumerate(zip(aval.shape, shape, strict=True)):
            if isinstance(e, int):
                continue
            lin = e.linear()
            if lin is not None and lin[1] == 0 and list(lin[0].values()) == [1]:
                var = next(iter(lin[0]))
                if var in env and env[var] != actual:
                    raise ValueError(
                        f"Found inconsistency between dimension size {describe(i, d)} "
                        f"(= {actual}) and dimension variable '{var}' (= {env[var]}); "
                        f"expected {aval.shape} and called with {tuple(shape)}"
                    )
                env[var] = actual
            else:
                pending.append((i, d, e, actual, aval.shape, shape))
    progress = True
    while pending and progress:
        progress, rest = False, []
        for item in pending:
            i, d, e, actual, exp_shape, shape = item
            unknown = e.variables() - set(env)
            lin = e.linear()
            if len(unknown) == 1 and lin is not None:
                var = unknown.pop()
                coeff = lin[0][var]
                known = lin[1] + sum(k * env[v] for v, k in lin[0].items() if v != var)
                if (actual - known) % coeff:
                    raise ValueError(
                        f"Division had remainder {(actual - known) % coeff} when "
                        f"computing the value of '{var}' from {describe(i, d)} "
                        f"= {actual}, which must be {e}"
                    )
                env[var] = (actual - known) // coeff
                progress = True
            elif not unknown:
                progress = True
            else:
                rest.append(item)
                continue
            if e.evaluate(env) != actual:
                raise ValueError(
                    f"Found inconsistency between dimension size {describe(i, d)} "
                    f"(= {actual}) and its expression {e} (= {e.evaluate(env)}); "
                    f"expected {exp_shape} and called with {tuple(shape)}"
                )
        pending = rest
    if pending:
        e = pending[0][2]
        raise NotImplementedError(
            f"cannot solve for the dimension variables of {e}: xform "
            "solves a variable from a linear dimension expression only"
        )
    for var, value in env.items():
        if value < 1:
            raise ValueError(
                f"Expected value >= 1 for dimension variable '{var}'. Using the "
                f"following polymorphic shapes specifications: "
                f"{[str(tuple(a.shape)) for a in exp_avals]}. Obtained dimension "
                f"variables: '{var}' = {value}"
            )
    scopes = {e.scope for a in exp_avals for e in a.shape if isinstance(e, _DimExpr)}
    for scope in scopes:
        scope.check(env)
    return env


def evaluate_shape(shape, env):
    return tuple(d if isinstance(d, int) else d.evaluate(env) for d in shape)


# --------------------------------------------------------------------------- tracing


def _dimension_as_value_abstract_eval(*, dim):
    return [ShapedArray((), dtypes.default_int(), weak_type=True)]


# A symbolic dimension's value in a program exported with symbolic shapes (the mean's count,
# for one); lowered from the module's dimension variables (lowering/export.py).
dimension_as_value_p = standard_primitive("dimension_as_value", _dimension_as_value_abstract_eval)

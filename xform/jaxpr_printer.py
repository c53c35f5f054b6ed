"""Jaxprs as text, printed as JAX prints them.

The same layout (a document of texts, breaks and groups, laid out for 80 columns by Lindig's
"strictly pretty" algorithm: a group goes on one line if it fits there, else its breaks become
newlines), the same variable names (a, b, ..., z, ba, ...; `_` for a top-level result nothing
reads), the same literal and type forms (`1.0:f32[]`) and the same per-primitive conventions
for params (`pp_param_rules`).

The printer sits below ``xform.core``, which prints its jaxprs with it: it reads a jaxpr by
its fields alone (a Jaxpr has ``eqns``; a ClosedJaxpr has ``jaxpr`` and ``consts``; a
Literal is the one atom with a ``val``), so it imports nothing of the IR.
"""

import contextlib

import numpy as np

_PP_WIDTH = 80


class _MeshAxisOrder:
    # JAX prints a type's varying axes in its mesh's order, which an xform type does not
    # hold: the mesh axes of the shard_map being traced or printed (mesh_axis_order).
    names = ()


@contextlib.contextmanager
def mesh_axis_order(names):
    """Print varying axes in the order of ``names`` (a mesh's axis names) meanwhile."""
    saved, _MeshAxisOrder.names = _MeshAxisOrder.names, tuple(names)
    try:
        yield
    finally:
        _MeshAxisOrder.names = saved


def vma_order(vma):
    """The varying axes in the order a type prints them: the mesh's (see mesh_axis_order),
    then by name."""
    order = _MeshAxisOrder.names
    return tuple(sorted(vma, key=lambda n: (order.index(n) if n in order else len(order), str(n))))


def _is_literal(x):
    return hasattr(x, "val")  # a Var holds only its type


def _open_jaxpr(x):
    """The jaxpr ``x`` is or holds (a ClosedJaxpr's), or None for any other value."""
    if hasattr(x, "consts") and hasattr(getattr(x, "jaxpr", None), "eqns"):
        return x.jaxpr
    return x if hasattr(x, "eqns") and hasattr(x, "outvars") else None


def _subjaxprs(params):
    """The jaxprs among an equation's params (``core.subjaxprs``, read by fields)."""
    for v in params.values():
        for w in v if type(v) is tuple else (v,):
            j = _open_jaxpr(w)
            if j is not None:
                yield j


# A layout document is a tuple: ("text", s), ("brk", s) (s flat, a newline when its group
# breaks), ("cat", docs), ("group", doc) or ("nest", n, doc).


def _text(s):
    return ("text", s)


def _brk(s=" "):
    return ("brk", s)


def _cat(*docs):
    return ("cat", docs)


def _group(doc):
    return ("group", doc)


def _nest(n, doc):
    return ("nest", n, doc)


def _join(sep, docs):
    out = []
    for i, d in enumerate(docs):
        if i:
            out.append(sep)
        out.append(d)
    return ("cat", tuple(out))


def _fits(doc, width):
    """Whether ``doc`` laid out flat takes at most ``width`` columns (the group alone decides,
    not what follows it on the line)."""
    stack = [doc]
    while stack and width >= 0:
        d = stack.pop()
        kind = d[0]
        if kind in ("text", "brk"):
            width -= len(d[1])
        elif kind == "cat":
            stack.extend(reversed(d[1]))
        else:  # group, nest
            stack.append(d[-1])
    return width >= 0


def _layout(doc, width=_PP_WIDTH):
    out, col = [], 0
    stack = [(0, False, doc)]  # (indent, flat, doc)
    while stack:
        indent, flat, d = stack.pop()
        kind = d[0]
        if kind == "text":
            out.append(d[1])
            col += len(d[1])
        elif kind == "brk":
            if flat:
                out.append(d[1])
                col += len(d[1])
            else:
                out.append("\n" + " " * indent)
                col = indent
        elif kind == "cat":
            stack.extend((indent, flat, c) for c in reversed(d[1]))
        elif kind == "group":
            stack.append((indent, flat or _fits(d[1], width - col), d[1]))
        else:  # nest
            stack.append((indent + d[1], flat, d[2]))
    return "".join(out)


class Names:
    """The printing context: hands out a, b, ..., z, ba, bb, ... to variables in order of
    first appearance (skipping the names of shared jaxprs), and names the jaxprs printed once
    at the top and referred to by name."""

    def __init__(self, names=None):
        self.names = dict(names or {})
        self.count = 0
        self.shared = {}  # jaxpr -> its name
        self.shared_names = set()

    def __call__(self, var):
        name = self.names.get(var)
        if name is None:
            while True:
                n, name = self.count, ""
                self.count += 1
                while True:
                    name = chr(ord("a") + n % 26) + name
                    n //= 26
                    if n == 0:
                        break
                if name not in self.shared_names:
                    break
            self.names[var] = name
        return name

    def suggest(self, for_vars, like_vars):
        """Give ``for_vars`` (a sub-jaxpr's binders) the names of ``like_vars`` (the atoms the
        equation binds them to), as JAX does for a ``jit`` body."""
        if len(for_vars) != len(like_vars):
            return
        used = set()
        for v, like in zip(for_vars, like_vars, strict=True):
            if not _is_literal(like) and like not in used and v not in self.names:
                used.add(like)
                self.names[v] = self(like)


def _pp_atom(x, names):
    if _is_literal(x):
        return f"{_pp_literal(x.val)}:{x.aval.str_short()}"
    return names(x)


def _pp_literal(val):
    return "[...]" if np.shape(val) else str(np.asarray(val).item())


def _pp_vars(vs, names, *, binders=False, sep=""):
    if binders:
        items = [_text(f"{names(v)}:{v.aval.str_short()}") for v in vs]
    else:
        items = [_text(_pp_atom(v, names)) for v in vs]
    return _nest(2, _group(_join(_cat(_text(sep), _group(_brk())), items)))


def _pp_param(value, names):
    jaxpr = _open_jaxpr(value)
    if jaxpr is not None:
        return _pp_jaxpr_doc(jaxpr, names)
    if type(value) is tuple and value and all(_open_jaxpr(v) is not None for v in value):
        docs = [_pp_param(v, names) for v in value]
        return _group(
            _cat(_nest(2, _cat(_text("("), _brk(""), _join(_brk(), docs))), _brk(""), _text(")"))
        )
    if isinstance(value, frozenset):
        return _text(f"frozenset({{{', '.join(repr(e) for e in sorted(value))}}})")
    if callable(value) and not isinstance(value, (type, np.dtype)) and hasattr(value, "__name__"):
        return _text(value.__name__)
    return _text(str(value))


def _pp_params(items, names):
    if not items:
        return _text("")
    pairs = [_cat(_text(f"{k}="), _pp_param(v, names)) for k, v in items]
    return _group(
        _cat(_nest(2, _cat(_text("["), _brk(""), _join(_brk(), pairs))), _brk(""), _text("]"))
    )


# Per-primitive printing conventions, keyed by primitive name (the printer sits below the
# primitive families): ``rule(eqn, names) -> [(key, value), ...]``, the params to show in
# order. They hide what JAX hides (defaults, what the binder's type implies) and show the
# rest as JAX does. Primitives without a rule show all params sorted by name.
pp_param_rules = {}


def _sorted_params(params, hide=()):
    return [(k, params[k]) for k in sorted(params) if k not in hide]


def _hide_if_none(*keys):
    def rule(eqn, names):
        p = eqn.params
        return _sorted_params(p, {k for k in keys if k in p and p[k] is None})

    return rule


for _name in (
    "exp",
    "exp2",
    "log",
    "expm1",
    "log1p",
    "tanh",
    "logistic",
    "sin",
    "cos",
    "tan",
    "sqrt",
    "rsqrt",
    "cbrt",
):
    pp_param_rules[_name] = _hide_if_none("accuracy")
pp_param_rules["mul"] = _hide_if_none("out_dtype")
pp_param_rules["convert_element_type"] = lambda eqn, names: _sorted_params(eqn.params, {"sharding"})
pp_param_rules["reshard"] = lambda eqn, names: []  # as JAX: the result's type says it


def _dot_general_params(eqn, names):
    p = {k: v for k, v in eqn.params.items() if v is not None and k != "out_sharding"}
    (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
    p["dimension_numbers"] = ((list(lc), list(rc)), (list(lb), list(rb)))
    return _sorted_params(p)


pp_param_rules["dot_general"] = _dot_general_params


def _broadcast_in_dim_params(eqn, names):
    p = eqn.params
    hide = {"shape", "sharding"} | (
        set() if p.get("broadcast_dimensions") else {"broadcast_dimensions"}
    )
    return _sorted_params(p, hide)


pp_param_rules["broadcast_in_dim"] = _broadcast_in_dim_params


def _jit_params(eqn, names):
    p = eqn.params
    body = _open_jaxpr(p["jaxpr"])
    if body not in names.shared:  # the body's binders read as the equation's atoms
        names.suggest(body.invars, eqn.invars)
        names.suggest(body.outvars, eqn.outvars)
    hide = {"name", "inline"}
    if not any(p.get("donated_invars", ())):
        hide.add("donated_invars")
    if not p.get("keep_unused", True):
        hide.add("keep_unused")
    rest = _sorted_params(p, hide)
    return ([("name", p["name"])] if "name" in p else []) + rest


pp_param_rules["jit"] = _jit_params


def _custom_call_params(eqn, names):
    p = eqn.params
    rest = _sorted_params(p, {"name"} | ({"num_consts"} if not p.get("num_consts") else set()))
    return ([("name", p["name"])] if "name" in p else []) + rest


def _custom_lin_params(eqn, names):
    p = dict(eqn.params, in_zeros=list(eqn.params["in_zeros"]))
    return _sorted_params(p, {"out_avals"})


def _with_absent(**absent):
    """Params JAX's primitive has and xform's does not (xform programs carry no shardings):
    printed with the value they always have in xform's programs, so texts read as JAX's."""

    def rule(eqn, names):
        return _sorted_params({**absent, **eqn.params})

    return rule


pp_param_rules["reduce_sum"] = _with_absent(out_sharding=None)
pp_param_rules["conv_general_dilated"] = _with_absent(out_sharding=None)
pp_param_rules["reshape"] = _with_absent(sharding=None)
pp_param_rules["iota"] = _with_absent(sharding=None)
# JAX's scan has no ``linear`` param (transposition finds the linear operands itself)
pp_param_rules["scan"] = lambda eqn, names: _sorted_params(eqn.params, {"linear"})
pp_param_rules["custom_jvp_call"] = _custom_call_params
pp_param_rules["custom_vjp_call"] = _custom_call_params
pp_param_rules["custom_lin"] = _custom_lin_params
# JAX's axis_index names its axis (a tuple only for several); its size comes from the mesh
pp_param_rules["axis_index"] = lambda eqn, names: [
    ("axis_name", eqn.params["axes"][0] if len(eqn.params["axes"]) == 1 else eqn.params["axes"])
]
pp_param_rules["shard_map"] = lambda eqn, names: _sorted_params(
    {("newly_manual_axes" if k == "manual_axes" else k): v for k, v in eqn.params.items()}
)

# JAX's collectives carry axis_index_groups (None in xform's programs: xform has none), and
# those that move data name their axes ``axis_name``; psum_invariant has neither.
pp_param_rules["psum"] = lambda eqn, names: _sorted_params(
    eqn.params if eqn.invars[0].aval.vma else {"axis_index_groups": None, **eqn.params}
)
for _name in ("pmax", "pmin"):
    pp_param_rules[_name] = _with_absent(axis_index_groups=None)
for _name in ("all_gather", "psum_scatter", "all_to_all"):
    pp_param_rules[_name] = lambda eqn, names: _sorted_params(
        {
            "axis_index_groups": None,
            "axis_name": eqn.params["axes"],
            **{k: v for k, v in eqn.params.items() if k != "axes"},
        }
    )

pp_param_rules["ppermute"] = lambda eqn, names: _sorted_params(
    {("axis_name" if k == "axes" else k): v for k, v in eqn.params.items()}
)

# Names JAX gives an equation by its types: ``rule(eqn) -> name``. In a shard_map body typed
# with check_vma=True, JAX's psum is ``psum_invariant`` (varying operand, invariant result);
# JAX's psum_scatter binds its ``reduce_scatter``.
pp_name_rules = {
    "psum": lambda eqn: "psum_invariant" if eqn.invars[0].aval.vma else "psum",
    "psum_scatter": lambda eqn: "reduce_scatter",
}


# Params JAX's primitive has and xform's does not, derived from the equation by a rule its
# family registers (a scatter's combining function, as a jaxpr): ``derive(eqn) -> {key:
# value}``. They print as params do, and their sub-jaxprs are shared by name like theirs.
pp_derived_params = {}


def _printed_params(eqn):
    derive = pp_derived_params.get(eqn.primitive.name)
    return eqn.params if derive is None else {**eqn.params, **derive(eqn)}


pp_eqn_rules = {}  # equations JAX prints its own way (``b <- a[i]``): rule(eqn, names) -> str


def _pp_eqn_doc(eqn, names):
    if eqn.primitive.name in pp_eqn_rules:
        return _text(pp_eqn_rules[eqn.primitive.name](eqn, names))
    rule = pp_param_rules.get(eqn.primitive.name)
    items = rule(eqn, names) if rule else _sorted_params(_printed_params(eqn))
    lhs = _pp_vars(eqn.outvars, names, binders=True)
    name_rule = pp_name_rules.get(eqn.primitive.name)
    name = name_rule(eqn) if name_rule else eqn.primitive.name
    rhs = [_text(name), _pp_params(items, names), _text(" "), _pp_vars(eqn.invars, names)]
    return _cat(lhs, _text(" = "), *rhs) if eqn.outvars else _cat(*rhs)


def _pp_jaxpr_doc(jaxpr, names):
    shared = names.shared.get(jaxpr)
    if shared is not None:
        return _text(shared)
    consts = _pp_vars(jaxpr.constvars, names, binders=True)
    ins = _pp_vars(jaxpr.invars, names, binders=True)
    eqns = _join(_brk("; "), [_pp_eqn_doc(e, names) for e in jaxpr.eqns])
    outs = _cat(
        _text("("),
        _pp_vars(jaxpr.outvars, names, sep=","),
        _text(")" if len(jaxpr.outvars) != 1 else ",)"),
    )
    return _group(
        _cat(
            _nest(
                2,
                _cat(
                    _text("{ lambda "),
                    consts,
                    _text("; "),
                    ins,
                    _text(". let"),
                    _nest(2, _cat(_brk(), eqns)),
                    _brk(),
                    _text("in "),
                    outs,
                ),
            ),
            _text(" }"),
        )
    )


def _dropped_names(jaxpr):
    """``_`` for the results of top-level equations that nothing reads."""
    dropped, used = {}, {x for x in jaxpr.outvars if not _is_literal(x)}
    for eqn in reversed(jaxpr.eqns):
        for v in eqn.outvars:
            if v not in used:
                dropped[v] = "_"
        used.update(x for x in eqn.invars if not _is_literal(x))
    return dropped


def _share_jaxprs(top, names):
    """Name the sub-jaxprs used more than once (or with more than 10 equations), which print
    first as ``let name = { ... } in``; returns them in order."""
    counts, labels, queue = {}, {}, [top]
    while queue:
        jaxpr = queue.pop(0)
        counts[jaxpr] = counts.get(jaxpr, 0) + 1 + (jaxpr is not top and len(jaxpr.eqns) > 10)
        for eqn in jaxpr.eqns:
            name = eqn.params.get("name")
            for sub in _subjaxprs(_printed_params(eqn)):
                queue.append(sub)
                if isinstance(name, str):
                    labels.setdefault(sub, name.strip("<>"))
    taken, shared = {}, []
    for jaxpr, c in counts.items():
        if c == 1:
            continue
        name = labels.get(jaxpr, "jaxpr")
        n = taken.get(name, 0)
        taken[name] = n + 1
        if n:
            name += str(n)
            taken[name] = taken.get(name, 0) + 1
        names.shared_names.add(name)
        names.shared[jaxpr] = name
        shared.append((name, jaxpr))
    return shared


def pp_toplevel_jaxpr(jaxpr):
    """``jaxpr`` as JAX prints a jaxpr."""
    with mesh_axis_order(_shard_map_axes(jaxpr)):  # varying axes print in mesh order
        return _pp_toplevel_jaxpr(jaxpr)


def _shard_map_axes(jaxpr):
    """The axis names of the meshes of ``jaxpr``'s shard_maps (nested ones too)."""
    axes, queue = [], [jaxpr]
    while queue:
        for eqn in queue.pop().eqns:
            if eqn.primitive.name == "shard_map":
                axes += [n for n in eqn.params["mesh"].axis_names if n not in axes]
            queue.extend(_subjaxprs(eqn.params))
    return axes


def _pp_toplevel_jaxpr(jaxpr):
    names = Names(_dropped_names(jaxpr))
    docs = []
    for name, sub in _share_jaxprs(jaxpr, names):
        del names.shared[sub]  # print its body here, by name elsewhere
        body = _pp_jaxpr_doc(sub, names)
        names.shared[sub] = name
        docs.append(_cat(_text(f"let {name} = "), body, _text(" in"), _brk()))
    docs.append(_pp_jaxpr_doc(jaxpr, names))
    return _layout(_cat(*docs))


def pp_eqn(eqn, names, indent=0):
    """One equation as it prints in a jaxpr (indented by ``indent`` where it breaks)."""
    return _layout(_nest(indent, _pp_eqn_doc(eqn, names)), _PP_WIDTH - indent)


def pp_jaxpr(jaxpr, names, indent=0):
    return _layout(_nest(indent, _pp_jaxpr_doc(jaxpr, names)), _PP_WIDTH - indent)

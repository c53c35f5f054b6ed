"""Mutable array references (JAX's ``jax.new_ref`` family): the ``Ref`` type and its primitives.

A ``Ref`` is a box around an array value. Outside a staging trace its operations are
functional updates of the box's value, so ``grad``, ``vmap`` and the eager tape see ordinary
indexing and scatter operations on that value (``_value`` may be a tracer of the trace the
box was made in). Inside a staging trace (``jit``, ``make_jaxpr``, a loop body), and on a box
made outside it, they are staged as equations on values of type ``AbstractRef``: ``new_ref``,
``get`` (``b <- a[idx]``), ``swap`` (``c, a[idx] <- a[idx], b``), ``addupdate``
(``a[idx] += b``), ``freeze``, ``empty_ref``, ``free_ref``; JAX's names and printing.

A jaxpr holding such equations is made functional by ``discharge``: each reference becomes a
value threaded through, and the references a jaxpr takes as inputs return their final values
as extra outputs. ``jit``, ``remat`` and the control-flow wrappers (scan, cond, while_loop)
discharge their bodies at the call (``run_discharged`` runs a traced body on the references'
values; ``read_refs``/``write_refs`` move the values in and out): a reference a loop body
closes over is an extra carry, one a branch closes over an extra operand and result of every
branch, a scanned one is scanned as its value and its final slices stacked back. So the
interpreters and the lowering only ever see functional programs. ``vmap`` gives a function
taking a reference a new one holding the batched value (``box_arguments``).

Indexers are NumPy's: ints, slices with static bounds, ``...``, ``None`` and integer arrays
(passed as operands; their positions are the ``tree`` param). Reading and writing a value at
an indexer uses the array operators (``x[idx]``, ``x.at[idx].set``), which ``xform.numpy``
sets on arrays and tracers.
"""

import itertools

import numpy as np

from xform import core, dtypes, pytree
from xform.core import Primitive, Tracer
from xform.interpret import ad, batching, dce
from xform.interpret.staging import JaxprTrace, convert_constvars, trace_to_jaxpr
from xform.jaxpr_printer import pp_eqn_rules
from xform.primitives.autodiff import stop_gradient
from xform.primitives.elementwise import convert_element_type
from xform.traceback_util import positional_names

__all__ = [
    "AbstractRef",
    "Ref",
    "addupdate",
    "discharge",
    "empty_ref",
    "free_ref",
    "freeze",
    "get",
    "has_refs",
    "new_ref",
    "read_refs",
    "ref_set",
    "swap",
    "write_refs",
]


class AbstractRef:
    """The type of a mutable array reference: ``Ref{float32[3]}``, around its value's type."""

    __slots__ = ("inner_aval", "memory_space", "kind")

    def __init__(self, inner_aval, memory_space=None, kind=None):
        self.inner_aval = inner_aval
        self.memory_space = memory_space
        self.kind = kind

    shape = property(lambda self: self.inner_aval.shape)
    dtype = property(lambda self: self.inner_aval.dtype)
    weak_type = property(lambda self: self.inner_aval.weak_type)
    ndim = property(lambda self: len(self.inner_aval.shape))
    size = property(lambda self: self.inner_aval.size)
    sharding = property(lambda self: self.inner_aval.sharding)
    vma = property(lambda self: self.inner_aval.vma)

    def str_short(self, short_dtypes=True):
        return f"Ref{{{self.inner_aval.str_short(short_dtypes)}}}"

    def __str__(self):  # as JAX's: ``jax.typeof(r)`` is ``Ref{float32[3]}`` (weak or not)
        return self.str_short(short_dtypes=False)

    __repr__ = __str__

    def strip_weak_type(self):
        return AbstractRef(self.inner_aval.strip_weak_type(), self.memory_space, self.kind)

    def __eq__(self, other):
        return type(other) is AbstractRef and self.inner_aval == other.inner_aval

    def __hash__(self):
        return hash(("Ref", self.inner_aval))


def is_ref(x):
    return isinstance(x, Ref) or (isinstance(x, Tracer) and type(x.aval) is AbstractRef)


class _RefMeta(type):
    # ``isinstance(x, Ref)`` holds inside ``jit`` too, where a reference is a tracer
    def __instancecheck__(cls, x):
        return type(x) is Ref or (isinstance(x, Tracer) and type(x.aval) is AbstractRef)


class Ref(metaclass=_RefMeta):
    """A mutable array reference (``jax.Ref``): read with ``r[idx]``, write with
    ``r[idx] = v``; made by ``new_ref``. Not an array: do math on ``r[...]``."""

    __slots__ = ("_value", "_trace", "_kind", "__weakref__")

    def __init__(self, value, trace, kind=None):
        self._value = value
        self._trace = trace  # the trace it was made in: its value is that trace's
        self._kind = kind  # JAX's: "no_grad_no_remat" takes differentiated writes' primals

    aval = property(lambda self: AbstractRef(core.get_aval(self._value)))
    shape = property(lambda self: core.get_aval(self._value).shape)
    dtype = property(lambda self: core.get_aval(self._value).dtype)
    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: core.get_aval(self._value).size)
    sharding = property(lambda self: self._value.sharding)

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __getitem__(self, idx):
        return get(self, idx)

    def __setitem__(self, idx, value):
        ref_set(self, idx, value)

    def addupdate(self, x, idx=None):
        """``self[idx] += x`` as one operation (``jax.ref.addupdate``)."""
        addupdate(self, idx, x)

    @property
    def at(self):
        return _RefAt(self)

    def unsafe_buffer_pointer(self):
        return self._value.unsafe_buffer_pointer()

    def __repr__(self):  # as JAX's: the value's repr with ``Ref`` for ``Array``
        text = repr(self._value)
        return "Ref" + text[5:] if text.startswith("Array") else f"Ref({text})"

    __str__ = __repr__


class _RefAt:
    """``r.at[idx]``: a view of part of a reference, read and written by indexing it."""

    __slots__ = ("ref",)

    def __init__(self, ref):
        self.ref = ref

    def __getitem__(self, idx):
        return _RefView(self.ref, idx)


class _RefView:
    __slots__ = ("ref", "idx")

    def __init__(self, ref, idx):
        self.ref, self.idx = ref, idx

    def _full(self, idx):
        # r.at[a][b] reads and writes r[a][b]: the two indexers applied one after the other
        # (only the common case is composed: ``b`` is ``...``)
        if idx is not Ellipsis and idx != ():
            raise NotImplementedError("indexing a reference view: only view[...] is supported")
        return self.idx

    def __getitem__(self, idx):
        return get(self.ref, self._full(idx))

    def __setitem__(self, idx, value):
        ref_set(self.ref, self._full(idx), value)

    shape = property(lambda self: _indexed_shape(self.ref.shape, *split_index(self.idx)))


core.pytype_aval_mappings[Ref] = lambda r: r.aval
core.valueless_types.add(Ref)  # staged as a constant of its type, never an inline literal


# --------------------------------------------------------------------------- indexers


def split_index(idx):
    """A NumPy indexer as ``(tree, dyn)``: a hashable description with the array indices
    (operands) taken out. Entries: ``("int", i)``, ``("slice", start, stop, step)``,
    ``("...",)``, ``("None",)``, ``("dyn",)``."""
    if not isinstance(idx, tuple):
        idx = (idx,)
    tree, dyn = [], []
    for i in idx:
        if i is Ellipsis:
            tree.append(("...",))
        elif i is None:
            tree.append(("None",))
        elif isinstance(i, slice):
            parts = (i.start, i.stop, i.step)
            if any(p is not None and not isinstance(p, (int, np.integer)) for p in parts):
                raise NotImplementedError(
                    "reference indexing: slice bounds must be static ints; index with an "
                    "integer array (or lax.dynamic_slice the value read) instead"
                )
            tree.append(("slice", *(None if p is None else int(p) for p in parts)))
        elif isinstance(i, (int, np.integer)) and not isinstance(i, bool):
            tree.append(("int", int(i)))
        else:
            tree.append(("dyn",))
            dyn.append(i)
    return tuple(tree), dyn


def build_index(tree, dyn):
    """The NumPy indexer ``split_index`` took apart."""
    out, it = [], iter(dyn)
    for entry in tree:
        kind = entry[0]
        if kind == "...":
            out.append(Ellipsis)
        elif kind == "None":
            out.append(None)
        elif kind == "slice":
            out.append(slice(*entry[1:]))
        elif kind == "int":
            out.append(entry[1])
        else:
            out.append(next(it))
    return tuple(out)


def _indexed_shape(shape, tree, dyn_avals):
    """The shape of ``x[idx]`` by NumPy's rules, on a zero-strided stand-in of ``shape``."""
    dummy = np.broadcast_to(np.zeros((), np.int8), shape)
    try:
        return dummy[build_index(tree, [np.zeros(a.shape, np.int32) for a in dyn_avals])].shape
    except IndexError as e:
        raise ValueError(f"Out of bound indexer: {e}") from None


def _pp_index(shape, tree, dyn_names):
    """An indexer as JAX prints it: one entry per dimension, ``...`` when it takes all."""
    names = iter(dyn_names)
    entries, rest = [], list(shape)
    explicit = sum(e[0] not in ("...", "None") for e in tree)
    for entry in tree:
        kind = entry[0]
        if kind == "...":
            n = len(shape) - explicit
            entries += [":"] * n
            rest = rest[n:]
            continue
        if kind == "None":
            continue
        dim = rest.pop(0)
        if kind == "int":
            entries.append(str(entry[1] % dim if dim else entry[1]))
        elif kind == "dyn":
            entries.append(next(names))
        else:
            start, stop, step = slice(*entry[1:]).indices(dim)
            size = len(range(start, stop, step))
            end = start + size
            entries.append(f"{start or ''}:{'' if end == dim else end}")
    entries += [":"] * len(rest)
    if all(e == ":" for e in entries):
        return "..."
    return ",".join(entries)


# --------------------------------------------------------------------------- the operations


def _staged(ref):
    """Whether an operation on ``ref`` must be an equation: the reference is a staging
    tracer, or a staging trace lies between the current trace and the box's own."""
    if type(ref) is not Ref:
        return True
    t = core.trace_state.trace
    while t is not ref._trace and t is not core.eval_trace:
        if isinstance(t, JaxprTrace):
            return True
        t = getattr(t, "parent", None)
        if t is None:
            break
    return False


def _foreign(ref, value):
    if type(ref) is not Ref:
        return False
    # a tracer of a trace the box was not made in: the trace's rule for the equation
    # decides (vmap and differentiation refuse it, as JAX does)
    return isinstance(value, Tracer) and value._trace is not ref._trace


def new_ref(init_val, memory_space=None, kind=None):
    """A new reference holding ``init_val`` (an array)."""
    if isinstance(core.trace_state.trace, JaxprTrace):
        return new_ref_p.bind(init_val, memory_space=memory_space, kind=kind)
    return Ref(init_val, core.trace_state.trace, kind)


def empty_ref(ty, memory_space=None):
    """A new reference of type ``ty`` (a ``ShapedArray``) whose value is not yet written."""
    if isinstance(core.trace_state.trace, JaxprTrace):
        return empty_ref_p.bind(ty=ty, memory_space=memory_space)
    return Ref(_zeros(ty), core.trace_state.trace)


def _zeros(aval):
    return ad.tangent_ops["zeros"](aval)


def get(ref, idx=None):
    """``ref[idx]``, a new array."""
    tree, dyn = split_index(() if idx is None else idx)
    _check_ref(ref, "get")
    if _staged(ref):
        return get_p.bind(ref, *dyn, tree=tree)
    return _read(ref._value, tree, dyn)


def _read(value, tree, dyn):
    return value if _whole(tree) else value[build_index(tree, dyn)]


def _whole(tree):
    return not tree or tree == (("...",),)


def _check_ref(ref, what):
    if not is_ref(ref):
        raise TypeError(f"ref_{what}: expected a Ref (made by new_ref), got {type(ref).__name__}")


def _coerce(ref, value, tree, dyn, what):
    """``value`` checked against (and cast to) the reference's type at the indexer."""
    aval = core.get_aval(ref).inner_aval
    want = _indexed_shape(aval.shape, tree, [core.get_aval(d) for d in dyn])
    vaval = core.get_aval(value)
    if vaval.shape != want:
        raise ValueError(
            f"Invalid shape for `{what}`. Ref shape: {aval.shape}. Expected shape: {want}. "
            f"Value shape: {vaval.shape}. Transforms: (). "
        )
    if vaval.dtype != aval.dtype and not np.can_cast(vaval.dtype, aval.dtype, "same_kind"):
        raise ValueError(
            f"Invalid dtype for `{what}`. Ref dtype: {aval.dtype}. Value dtype: {vaval.dtype}. "
        )
    # (a no-op on a strong array of the reference's dtype; Python and NumPy values become
    # arrays, weak types strong, as JAX's swap converts them)
    if not hasattr(value, "aval") and isinstance(core.trace_state.trace, JaxprTrace):
        return np.asarray(value, aval.dtype)  # staged as a literal, as JAX's
    return convert_element_type(value, aval.dtype)


def swap(ref, idx, value):
    """Write ``value`` at ``ref[idx]``; returns the value it replaced."""
    _check_ref(ref, "swap")
    tree, dyn = split_index(() if idx is None else idx)
    value = _undifferentiated(ref, _coerce(ref, value, tree, dyn, "swap"))
    if _staged(ref) or _foreign(ref, value) or any(_foreign(ref, d) for d in dyn):
        return swap_p.bind(ref, value, *dyn, tree=tree)
    return _swap_value(ref, value, tree, dyn)


def _undifferentiated(ref, value):
    """A value written into a ``no_grad_no_remat`` reference made outside a differentiation
    loses its tangent there (as JAX's: such a reference is never differentiated)."""
    if type(ref) is Ref and ref._kind == "no_grad_no_remat" and _foreign(ref, value):
        return stop_gradient(value)
    return value


def _swap_value(ref, value, tree, dyn):
    old = _read(ref._value, tree, dyn)
    if _whole(tree):
        ref._value = value
    else:
        ref._value = ref._value.at[build_index(tree, dyn)].set(value)
    return old


def ref_set(ref, idx, value):
    """``ref[idx] = value``."""
    swap(ref, idx, value)


def addupdate(ref, idx, x):
    """``ref[idx] += x`` as one operation."""
    _check_ref(ref, "addupdate")
    tree, dyn = split_index(() if idx is None else idx)
    x = _undifferentiated(ref, _coerce(ref, x, tree, dyn, "addupdate"))
    if _staged(ref) or _foreign(ref, x) or any(_foreign(ref, d) for d in dyn):
        addupdate_p.bind(ref, x, *dyn, tree=tree)
    else:
        _add_value(ref, x, tree, dyn)


def _add_value(ref, x, tree, dyn):
    if _whole(tree):
        ref._value = ref._value + x
    else:
        ref._value = ref._value.at[build_index(tree, dyn)].add(x)


def freeze(ref):
    """The reference's final value (JAX's ``freeze``: the reference is not to be used after)."""
    _check_ref(ref, "freeze")
    if _staged(ref):
        return freeze_p.bind(ref)
    return ref._value


def free_ref(ref):
    """Invalidate ``ref`` (JAX's ``free_ref``)."""
    _check_ref(ref, "free_ref")
    if _staged(ref):
        free_ref_p.bind(ref)


# --------------------------------------------------------------------------- the primitives

new_ref_p = Primitive("new_ref")
empty_ref_p = Primitive("empty_ref")
get_p = Primitive("get")
swap_p = Primitive("swap")
addupdate_p = Primitive("addupdate")
addupdate_p.multiple_results = True
freeze_p = Primitive("freeze")
free_ref_p = Primitive("free_ref")
free_ref_p.multiple_results = True
REF_PRIMITIVES = (new_ref_p, empty_ref_p, get_p, swap_p, addupdate_p, freeze_p, free_ref_p)
for _p in (swap_p, addupdate_p, free_ref_p, new_ref_p, empty_ref_p):
    dce.effectful.add(_p)  # writes are kept; new_ref too (it makes what they write to)


def _ref_operand(aval, what):
    if type(aval) is not AbstractRef:
        raise TypeError(f"{what}: expected a Ref operand, got {aval.str_short()}")
    return aval.inner_aval


def _new_ref_abstract_eval(aval, *, memory_space, kind):
    if type(aval) is AbstractRef:
        raise TypeError("new_ref: references to references are not supported")
    return [AbstractRef(aval, memory_space, kind)]


def _empty_ref_abstract_eval(*, ty, memory_space):
    return [AbstractRef(core.ShapedArray(tuple(ty.shape), dtypes.canonicalize(ty.dtype)))]


def _get_abstract_eval(ref, *dyn, tree):
    inner = _ref_operand(ref, "get")
    return [inner.update(shape=_indexed_shape(inner.shape, tree, dyn))]


def _swap_abstract_eval(ref, value, *dyn, tree):
    inner = _ref_operand(ref, "swap")
    return [inner.update(shape=_indexed_shape(inner.shape, tree, dyn), weak_type=False)]


def _addupdate_abstract_eval(ref, value, *dyn, tree):
    _ref_operand(ref, "addupdate")
    return []


def _freeze_abstract_eval(ref):
    return [_ref_operand(ref, "freeze")]


def _free_ref_abstract_eval(ref):
    _ref_operand(ref, "free_ref")
    return []


core.abstract_eval_rules.update(
    {
        new_ref_p: _new_ref_abstract_eval,
        empty_ref_p: _empty_ref_abstract_eval,
        get_p: _get_abstract_eval,
        swap_p: _swap_abstract_eval,
        addupdate_p: _addupdate_abstract_eval,
        freeze_p: _freeze_abstract_eval,
        free_ref_p: _free_ref_abstract_eval,
    }
)


# Eagerly (an equation replayed on concrete boxes): the functional updates of the box.
core.eager_rules.update(
    {
        new_ref_p: lambda x, **_: [Ref(x, core.eval_trace)],
        empty_ref_p: lambda *, ty, memory_space: [Ref(_zeros(ty), core.eval_trace)],
        get_p: lambda r, *dyn, tree: [_read(r._value, tree, dyn)],
        swap_p: lambda r, v, *dyn, tree: [_swap_value(r, v, tree, dyn)],
        addupdate_p: lambda r, v, *dyn, tree: _add_value(r, v, tree, dyn) or [],
        freeze_p: lambda r: [r._value],
        free_ref_p: lambda r: [],
    }
)


# Writing a differentiated or batched value into a reference made outside the
# transformation: JAX's errors (its type is ``Exception``).
def _differentiated_write(prim):
    def rule(primals, tangents, **params):
        if all(type(t) is ad.Zero for t in tangents[1:]):  # a constant written: no error
            outs = prim.bind(*primals, **params)
            outs = outs if prim.multiple_results else [outs]
            return outs, [ad.Zero(ad.tangent_aval(core.get_aval(o))) for o in outs]
        aval = core.get_aval(primals[0])
        raise Exception(  # noqa: TRY002  (JAX's type)
            f"performing a set/swap operation with a differentiated value on a "
            f"non-differentiated array reference of type {aval}. Move the array reference to "
            "be an argument of the differentiated function?"
        )

    return rule


def _batched_write(axis, args, dims, **params):
    if dims[0] is not batching.not_mapped:
        raise NotImplementedError("vmap of an operation on a batched staged reference")
    aval = core.get_aval(args[0])
    raise Exception(  # noqa: TRY002  (JAX's type)
        f"performing a set/swap operation with vmapped value on an unbatched array reference "
        f"of type {aval}. Move the array reference to be an argument to the vmapped function?"
    )


def _read_jvp(primals, tangents, **params):
    # a read of a reference made outside the differentiation at a differentiated index
    out = get_p.bind(*primals, **params)
    return [out], [ad.Zero(ad.tangent_aval(core.get_aval(out)))]


for _p in (swap_p, addupdate_p):
    ad.jvp_rules[_p] = _differentiated_write(_p)
    batching.batch_rules[_p] = _batched_write
ad.jvp_rules[get_p] = _read_jvp


# --------------------------------------------------------------------------- printing


def _pp_get(eqn, names):
    ref, *dyn = eqn.invars
    idx = _pp_index(ref.aval.shape, eqn.params["tree"], [names(d) for d in dyn])
    out = eqn.outvars[0]
    return f"{names(out)}:{out.aval.str_short()} <- {names(ref)}[{idx}]"


def _pp_write(op):
    def rule(eqn, names):
        ref, value, *dyn = eqn.invars
        idx = _pp_index(ref.aval.shape, eqn.params["tree"], [_atom(d, names) for d in dyn])
        target = f"{names(ref)}[{idx}]"
        if op == "+=":
            return f"{target} += {_atom(value, names)}"
        out = eqn.outvars[0]
        if names(out) == "_":  # as JAX's: a swap whose old value nothing reads
            return f"{target} <- {_atom(value, names)}"
        return f"{names(out)}:{out.aval.str_short()}, {target} <- {target}, {_atom(value, names)}"

    return rule


def _atom(x, names):
    if type(x) is core.Literal:
        return f"{np.asarray(x.val).item()}:{x.aval.str_short()}"
    return names(x)


pp_eqn_rules["get"] = _pp_get
pp_eqn_rules["swap"] = _pp_write("<-")
pp_eqn_rules["addupdate"] = _pp_write("+=")
pp_eqn_rules["free_ref"] = lambda eqn, names: f"free_ref {names(eqn.invars[0])}"


# --------------------------------------------------------------------------- discharge


def has_refs(jaxpr):
    """Whether ``jaxpr`` (a Jaxpr) takes references or makes them, itself or in the jaxpr of
    one of its equations (a remat's, a custom_vjp's: loops and jit discharge their own)."""
    if any(type(v.aval) is AbstractRef for v in jaxpr.constvars + jaxpr.invars):
        return True
    closed_jaxpr, discharged = core.ClosedJaxpr, _DISCHARGED  # (a walk of every jit's trace)
    for e in jaxpr.eqns:
        if e.primitive in discharged:
            return True
        for v in e.params.values():
            if type(v) is closed_jaxpr and has_refs(v.jaxpr):
                return True
    return False


def _inner(eqn):
    """The ClosedJaxprs among ``eqn``'s params."""
    return [v for v in eqn.params.values() if type(v) is core.ClosedJaxpr]


def _discharged_inner(closed):
    """A sub-jaxpr that makes references but takes none, made functional (same signature)."""
    j = closed.jaxpr
    if not has_refs(j) or any(type(v.aval) is AbstractRef for v in j.constvars + j.invars):
        return closed  # (one taking references: run_discharged refuses the cells it gets)
    run = lambda *args: run_discharged(j, args, closed.consts)  # noqa: E731
    return trace_to_jaxpr(run, [v.aval for v in j.invars], "discharging references")


def discharge(jaxpr, name="discharging references"):
    """``jaxpr`` (a Jaxpr without constvars) made functional: a ClosedJaxpr of the same
    inputs, each reference input taking its value instead, whose outputs are ``jaxpr``'s
    followed by the final value of each reference input, in order."""
    in_avals = [v.aval.inner_aval if type(v.aval) is AbstractRef else v.aval for v in jaxpr.invars]
    return trace_to_jaxpr(lambda *args: run_discharged(jaxpr, args), in_avals, name)


def run_discharged(jaxpr, args, consts=()):
    """Evaluate ``jaxpr`` (a Jaxpr; ``consts`` the values of its constvars) on ``args``, each
    reference input given its value, in the current trace: ``jaxpr``'s outputs followed by
    the final value of each reference input, in order. References it makes live only in
    the evaluation; so do those made inside its equations' jaxprs (a remat's, ...)."""
    env = dict(zip(jaxpr.constvars, consts, strict=True))
    refs = []

    def read(x):
        return x.val if type(x) is core.Literal else env[x]

    for v, x in zip(jaxpr.invars, args, strict=True):
        if type(v.aval) is AbstractRef:
            refs.append(_Cell(x))
        env[v] = refs[-1] if type(v.aval) is AbstractRef else x
    for eqn in jaxpr.eqns:
        rule = _DISCHARGED.get(eqn.primitive)
        ins = [read(x) for x in eqn.invars]
        if rule is not None:
            outs = rule(*ins, **eqn.params)
        else:
            if any(type(x) is _Cell for x in ins):
                raise NotImplementedError(
                    f"a reference passed to '{eqn.primitive.name}' inside a staged program"
                )
            params = eqn.params
            if _inner(eqn):
                params = {
                    k: _discharged_inner(v) if type(v) is core.ClosedJaxpr else v
                    for k, v in params.items()
                }
            outs = eqn.primitive.bind(*ins, **params)
            outs = outs if eqn.primitive.multiple_results else [outs]
        for v, o in zip(eqn.outvars, outs, strict=True):
            env[v] = o
    outs = [read(x) for x in jaxpr.outvars]
    if any(type(x) is _Cell for x in outs):
        raise ValueError("mutable array references cannot be returned")
    return outs + [cell.value for cell in refs]


def call_discharged(closed, args, bind):
    """Call a traced function that uses references: ``closed`` (a const-free ClosedJaxpr)
    on ``args``, as ``bind(jaxpr, values)`` of its discharged version on their values (a
    call primitive's bind); the final values are written back. Returns its outputs."""
    jaxpr, consts = convert_constvars(discharge(closed.jaxpr))
    ref_args = [x for x in args if is_ref(x)]
    outs = bind(jaxpr, [*consts, *read_refs(args)])
    n = len(outs) - len(ref_args)
    write_refs(ref_args, outs[n:])
    return outs[:n]


class _Cell:
    """A reference while a jaxpr is discharged: its current value, and whether it was freed."""

    __slots__ = ("value", "freed")

    def __init__(self, value):
        self.value = value
        self.freed = False


def _live(cell, what):
    if cell.freed:
        raise ValueError(
            f"`{what}` must be called on a live `Ref`: this reference was freed by "
            "`free_ref` earlier in the program. Do not use a reference after freeing it."
        )
    return cell.value


def _cell_get(cell, *dyn, tree):
    return [_read(_live(cell, "get"), tree, dyn)]


def _cell_swap(cell, value, *dyn, tree):
    old = _read(_live(cell, "swap"), tree, dyn)
    cell.value = value if _whole(tree) else cell.value.at[build_index(tree, dyn)].set(value)
    return [old]


def _cell_add(cell, x, *dyn, tree):
    value = _live(cell, "addupdate")
    cell.value = value + x if _whole(tree) else value.at[build_index(tree, dyn)].add(x)
    return []


def _cell_free(cell):
    _live(cell, "free_ref")
    cell.freed = True
    return []


_DISCHARGED = {
    new_ref_p: lambda x, **_: [_Cell(x)],
    empty_ref_p: lambda *, ty, memory_space: [_Cell(_zeros(ty))],
    get_p: _cell_get,
    swap_p: _cell_swap,
    addupdate_p: _cell_add,
    freeze_p: lambda cell: [_live(cell, "freeze")],
    free_ref_p: _cell_free,
}


def read_refs(values):
    """The values of the references among ``values`` (others as they are), read now."""
    return [
        (x._value if type(x) is Ref and not _staged(x) else get(x, ...)) if is_ref(x) else x
        for x in values
    ]


def write_refs(refs, values):
    """Write each final value (of its reference's type: a discharged program's output)
    back into its reference."""
    for r, v in zip(refs, values, strict=True):
        if type(r) is Ref and not _staged(r) and not _foreign(r, v):
            r._value = v  # a box's functional update, without swap's checks
        else:
            ref_set(r, ..., v)


# --------------------------------------------------------------------------- boundary errors
# A traced function (a jit, a loop body, a branch) may take references but may not return
# one, nor take one reference twice (the discharged program would hold two values for it).


def fun_location(fun):
    """``function f at file.py:12``: a traced function as JAX's errors name it."""
    fun = getattr(fun, "__wrapped__", fun)
    code = getattr(fun, "__code__", None)
    name = getattr(fun, "__name__", type(fun).__name__)
    return f"function {name} at {code.co_filename}:{code.co_firstlineno}" if code else name


def arg_names(fun, args):
    """Per leaf of ``args`` (the positional arguments of ``fun``), its name as JAX's errors
    give it: the parameter's name and the leaf's path inside it (``c[0]``)."""
    params = positional_names(fun)
    names = []
    for keys, _ in pytree.tree_flatten_with_path(tuple(args))[0]:
        i = keys[0].idx
        names.append((params[i] if i < len(params) else f"args[{i}]") + pytree.keystr(keys[1:]))
    return names


def check_aliases(consts, args, fun, what, names):
    """JAX's ValueError when a reference is among ``args`` (a traced function's flat
    arguments; ``names()`` names them) twice, or is both one of them and closed over (among
    ``consts``)."""
    seen, closed = {}, {id(c) for c in consts if is_ref(c)}
    where = fun_location(fun).removeprefix("function ")  # as JAX's: "when tracing f at ..."
    for i, x in enumerate(args):
        if not is_ref(x):
            continue
        aval = core.get_aval(x)
        if id(x) in closed:
            raise ValueError(
                f"when tracing {where} for {what}, a mutable array reference of "
                f"type {aval} was both closed over and passed as the argument {names()[i]}"
            )
        j = seen.setdefault(id(x), i)
        if j != i:
            raise ValueError(
                "only one reference to a mutable array may be passed as an argument to a "
                f"function, but when tracing {where} for {what} the mutable array "
                f"reference of type {aval} appeared at both {names()[j]} and {names()[i]}."
            )


def check_returned(jaxpr, fun, what, n_consts, names, out_paths):
    """JAX's ValueError when ``jaxpr`` (traced from ``fun``, its first ``n_consts`` inputs
    the closed-over values; ``names()`` names the others) returns a reference;
    ``out_paths()`` gives each output's path (``[0]``)."""
    for k, x in enumerate(jaxpr.outvars):
        if type(x.aval) is not AbstractRef:
            continue
        path = out_paths()[k]
        at = f" at output tree path result{path}" if path else ""
        origin = ""
        if x in jaxpr.invars:
            i = jaxpr.invars.index(x)
            if i >= n_consts:
                arg = names()[i - n_consts]
                origin = f"\n\nThe returned mutable array was passed in as the argument {arg}."
        else:
            origin = f"\n\nThe returned mutable array was created on line {_made_at(jaxpr, x)}."
        raise ValueError(
            f"{fun_location(fun)} traced for {what} returned a mutable array reference of type "
            f"{x.aval}{at}, but mutable array references cannot be returned.{origin}"
        )


def _made_at(jaxpr, var):
    """``file.py:3:8 (f)``: where the equation that made ``var`` was traced."""
    for eqn in jaxpr.eqns:
        if var in eqn.outvars and eqn.source_info is not None:
            info = eqn.source_info
            file, line, name = info[:3]
            if len(info) < 5:
                return f"{file}:{line} ({name})"
            code, offset = info[3], info[4]
            at = next(itertools.islice(code.co_positions(), offset // 2, None), (None,) * 4)
            col = "" if at[2] is None else f":{at[2]}"
            return f"{file}:{line}{col} ({code.co_qualname})"
    return "an unknown line"


def out_paths(tree):
    """The path of each leaf of a function's output, of treedef ``tree`` (``[1]['a']``)."""
    placeholder = pytree.tree_unflatten(tree, [0] * tree.num_leaves)
    return [pytree.keystr(k) for k, _ in pytree.tree_flatten_with_path(placeholder)[0]]


# --------------------------------------------------------------------------- vmapped references


def box_arguments(flat, leaves, mapped):
    """For ``vmap``: the references among ``leaves`` (a call's flat arguments) that are
    mapped (``mapped[i]``) are passed as their values, and ``flat`` is given a new
    reference to each (made in the trace it runs in, so batched writes are its own) and
    returns their final values after its outputs. Unmapped references are passed to
    ``flat`` as they are, not as arguments. Returns ``(flat, kept, values, boxed)``: the new
    function, the positions of the leaves it takes, its arguments (the references' values
    read), and ``(position among them, reference)`` for each mapped reference."""
    kept = [i for i, x in enumerate(leaves) if mapped[i] or not is_ref(x)]
    boxed = [k for k, i in enumerate(kept) if is_ref(leaves[i])]

    def flat_boxed(*xs):
        full = list(leaves)
        for i, x in zip(kept, xs, strict=True):
            full[i] = x
        boxes = [new_ref(xs[k]) for k in boxed]
        for k, b in zip(boxed, boxes, strict=True):
            full[kept[k]] = b
        return [*flat(*full), *(freeze(b) for b in boxes)]

    values = [get(leaves[i], ...) if is_ref(leaves[i]) else leaves[i] for i in kept]
    return flat_boxed, kept, values, [(k, leaves[kept[k]]) for k in boxed]


def write_back(outs, boxed):
    """``outs`` without its last ``len(boxed)`` values, which are written into the references
    of ``boxed`` (as ``box_arguments`` returned it)."""
    if not boxed:
        return outs
    n = len(outs) - len(boxed)
    write_refs([r for _, r in boxed], outs[n:])
    return outs[:n]

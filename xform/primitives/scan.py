"""``scan`` as the ``scan`` primitive, with every rule, and ``map`` over it.

``scan[jaxpr, num_consts, num_carry, length, reverse, unroll, linear] *consts *init *xs`` runs
``carry, ys[i] = jaxpr(*consts, *carry, *xs[i])`` for ``i`` in ``range(length)`` (backwards
with ``reverse``) and returns the last carry and the stacked ``ys``. ``linear`` marks the
operands the body is linear in (the tangent operands of a differentiated scan). Its body is
traced and transformed with the helpers of while_loop.py, as ``while``'s.

Reverse mode: a differentiated ``scan`` splits (partial evaluation) into a known scan that
also emits the residuals its tangent part needs, stacked per iteration, and a linear scan;
the linear scan transposes to a scan running the other way.
"""

import operator
import weakref

import numpy as np

from xform import config, pytree
from xform.core import (
    ClosedJaxpr,
    Jaxpr,
    Literal,
    ShapedArray,
    Tracer,
    Var,
    eager_rules,
    eval_jaxpr,
    eval_trace,
    get_aval,
    is_concrete_array,
    set_current_trace,
)
from xform.errors import ConcretizationTypeError
from xform.interpret import ad, batching, dce, partial_eval, transpose
from xform.interpret.batching import not_mapped
from xform.primitives import refs
from xform.primitives.base import standard_primitive
from xform.primitives.indexing import index_in_dim, slice_in_dim
from xform.primitives.structural import (
    broadcast_in_dim,
    concatenate,
    expand_dims,
    reshape,
)
from xform.primitives.while_loop import (
    _as_array,
    _at_front,
    _check_operands,
    _check_tree,
    _jvp_jaxpr,
    _leaf_paths,
    _nonzero,
    _or,
    _permuted,
    _pick,
    _same_types,
    _split,
    _trace_body,
    _trace_carry_body,
    _types,
    asarray,
)
from xform.traceback_util import api_boundary

__all__ = ["map", "scan"]


# --------------------------------------------------------------------------- scan


def _type_name(x):
    """``f32[3]`` for an array or a tracer; the repr of anything else (for error messages)."""
    if isinstance(x, Tracer) or is_concrete_array(x):
        return get_aval(x).str_short()
    return repr(x)


def _scan_length(xs, length):
    lengths = set()
    for x in xs:
        shape = get_aval(x).shape
        if not shape:
            raise ValueError(
                f"scan got value with no leading axis to scan over: {get_aval(x).str_short()}"
            )
        lengths.add(shape[0])
    if length is not None:
        length = operator.index(
            _concrete(
                length,
                "The `length` argument to `scan` expects a concrete `int` value. For "
                "scan-like iteration with a dynamic length, use `while_loop` or `fori_loop`.",
            )
        )
        if lengths and lengths != {length}:
            raise ValueError(
                f"scan got `length` argument of {length} which disagrees with "
                f"leading axis sizes {sorted(lengths)}."
            )
        return length
    if len(lengths) > 1:
        raise ValueError(
            f"scan got values with different leading axis sizes: "
            f"{', '.join(str(n) for n in sorted(lengths))}."
        )
    if not lengths:
        raise ValueError("scan got no values to scan over and `length` not provided.")
    return lengths.pop()


@api_boundary
def scan(f, init, xs=None, length=None, reverse=False, unroll=1, _split_transpose=False):
    """Scan ``f`` over the leading axis of ``xs`` while carrying state.

    The semantics, in Python::

        def scan(f, init, xs, length=None):
            carry, ys = init, []
            for x in xs:
                carry, y = f(carry, x)
                ys.append(y)
            return carry, np.stack(ys)

    Args:
      f: ``(carry, x) -> (carry, y)``; the carry keeps its structure and types.
      init: the initial carry, a pytree of arrays.
      xs: a pytree of arrays scanned along their leading axis, or None (then ``length``).
      length: the number of iterations, when ``xs`` is None (or to check it).
      reverse: scan from the end of ``xs`` to its start (``ys`` stays in ``xs``'s order).
      unroll: how many iterations one step of the compiled loop runs (True or 0: all).
      _split_transpose: JAX's private hint to split the transposed loop (libraries such
        as flax pass it); the values are the same without it, and xform ignores it.

    Returns:
      ``(final carry, stacked ys)``.

    Example:
      >>> xform.lax.scan(lambda c, x: (c + x, c), 0.0, xform.numpy.arange(3.0))
    """
    if not callable(f):
        raise TypeError("lax.scan: f argument should be callable.")
    xs_flat, xs_tree = pytree.tree_flatten(xs)
    length = _scan_length(xs_flat, length)
    unroll = _concrete(
        unroll, "The `unroll` argument to `scan` expects a concrete `int` or `bool` value."
    )
    if isinstance(unroll, (bool, np.bool_)):
        unroll = max(length, 1) if unroll else 1
    unroll = operator.index(unroll)
    if unroll < 0:  # 0, as in JAX, unrolls the whole loop
        raise ValueError("`unroll` must be a `bool` or a non-negative `int`.")
    if config.values.disable_jit:
        return _python_scan(f, init, xs_flat, xs_tree, length, reverse)
    init_flat, in_tree = pytree.tree_flatten(init)
    n = len(init_flat)
    x_avals = []
    for x in xs_flat:
        a = get_aval(x)
        x_avals.append(ShapedArray(a.shape[1:], a.dtype, a.weak_type, vma=a.vma))
        if type(a) is refs.AbstractRef:  # a scanned reference: the body's is to a slice
            x_avals[-1] = refs.AbstractRef(x_avals[-1])
    names = lambda: refs.arg_names(f, (init, xs))  # noqa: E731
    refs.check_aliases((), init_flat + xs_flat, f, "scan", names)
    y_tree = {}

    def flat_f(*args):
        carry = pytree.tree_unflatten(in_tree, args[:n])
        x = pytree.tree_unflatten(xs_tree, args[n:])
        out = f(carry, x)
        if not isinstance(out, (tuple, list)) or len(out) != 2:
            got = pytree.tree_map(_type_name, out)
            if isinstance(out, (tuple, list)):
                got = f"a {type(out).__name__} of length {len(out)}: {got}"
            raise TypeError(f"scan body output must be a pair (carry, y), got {got}.")
        carry_out, out_tree = pytree.tree_flatten(out[0])
        _check_tree("scan body function carry input and carry output", in_tree, out_tree)
        ys, y_tree["tree"] = pytree.tree_flatten(out[1])
        return carry_out + ys

    jaxpr, consts, init_flat = _trace_carry_body(
        flat_f,
        init_flat,
        _leaf_paths(init),
        x_avals,
        "tracing the body of scan",
        "scan body function carry input and carry output must have equal types",
    )
    if refs.has_refs(jaxpr.jaxpr):
        trees = (in_tree, y_tree["tree"])
        args = (jaxpr, consts, init_flat, xs_flat)
        return _scan_with_refs(f, names, trees, *args, length, reverse, unroll)
    carry_fwd, ys_fwd = _forwarding(jaxpr, len(consts), n)
    if any(carry_fwd) or any(k is not None for k in ys_fwd):
        jaxpr = _forwards_removed(jaxpr, len(consts), n, carry_fwd, ys_fwd)
        consts = [*_pick(init_flat, carry_fwd), *consts]
    carry_in = _pick(init_flat, carry_fwd, False)
    operands = consts + carry_in + xs_flat
    outs = iter(
        scan_p.bind(
            *operands,
            jaxpr=jaxpr,
            num_consts=len(consts),
            num_carry=len(carry_in),
            length=length,
            reverse=bool(reverse),
            unroll=unroll,
            linear=(False,) * len(operands),
        )
    )
    carry_out = [x if f else next(outs) for x, f in zip(init_flat, carry_fwd, strict=True)]
    outs = carry_out + [next(outs) if k is None else xs_flat[k] for k in ys_fwd]
    return (
        pytree.tree_unflatten(in_tree, outs[:n]),
        pytree.tree_unflatten(y_tree["tree"], outs[n:]),
    )


def _scan_with_refs(f, names, trees, jaxpr, consts, init, xs, length, reverse, unroll):
    """``scan`` of a body that uses references, as a scan of their values: the references
    the body closes over are extra carries, each scanned one is scanned as its value and its
    slices' final values are stacked as extra ``ys``; the body is the traced one, run with
    its references discharged (refs.py). Their final values are then written back."""
    in_tree, y_tree = trees
    refs.check_aliases(consts, init + xs, f, "scan", names)
    paths = lambda: [  # noqa: E731
        *("[0]" + p for p in refs.out_paths(in_tree)),
        *("[1]" + p for p in refs.out_paths(y_tree)),
    ]
    refs.check_returned(jaxpr.jaxpr, f, "scan", len(consts), names, paths)
    if any(refs.is_ref(x) for x in init):
        raise ValueError(
            f"scan of {refs.fun_location(f)}: a mutable array reference cannot be part of the "
            "carry. Close over it in the body, or scan over it as part of `xs`."
        )
    closed = [c for c in consts if refs.is_ref(c)]
    scanned = [x for x in xs if refs.is_ref(x)]
    n, nc = len(init), len(closed)

    def body(carry, x):
        values, carry = carry
        values = iter(values)
        args = [next(values) if refs.is_ref(c) else c for c in consts]
        outs = refs.run_discharged(jaxpr.jaxpr, [*args, *carry, *x])
        k = len(outs) - nc - len(scanned)
        return (outs[k : k + nc], outs[:n]), (outs[n:k], outs[k + nc :])

    init = (refs.read_refs(closed), init)
    (finals, carry), (ys, slices) = scan(body, init, refs.read_refs(xs), length, reverse, unroll)
    refs.write_refs(closed + scanned, finals + slices)
    return pytree.tree_unflatten(in_tree, carry), pytree.tree_unflatten(y_tree, ys)


def _concrete(x, message):
    """``x`` itself, or its value when it is a tracer that knows one; else JAX's
    ConcretizationTypeError, saying with ``message`` what needed the value."""
    if not isinstance(x, Tracer):
        return x
    try:
        return x.item()
    except ConcretizationTypeError as e:
        first, _, rest = str(e).partition("\n")  # what was traced, then why it was needed
        raise ConcretizationTypeError(f"{first}\n{message}\n{rest}") from None


def _forwarding(jaxpr, nconsts, ncarry):
    """What a scan body hands on unchanged, as JAX's scan reads it before binding: per
    carry, whether it is its own input (the loop only reads it: it becomes a const, and
    ``vmap`` leaves it unbatched when it is); per ``y``, the index of the ``xs`` it is (the
    stacked ``ys`` are then that ``xs`` itself), or None."""
    j = jaxpr.jaxpr
    carry_in, xs_in = j.invars[nconsts : nconsts + ncarry], j.invars[nconsts + ncarry :]
    carry_fwd = [o is v for o, v in zip(j.outvars[:ncarry], carry_in, strict=True)]
    xs_pos = {id(v): k for k, v in enumerate(xs_in)}
    ys_fwd = [xs_pos.get(id(o)) if isinstance(o, Var) else None for o in j.outvars[ncarry:]]
    return carry_fwd, ys_fwd


def _forwards_removed(jaxpr, nconsts, ncarry, carry_fwd, ys_fwd):
    """The body with its forwarded carries taken as leading consts and the forwarded
    carries and ``ys`` no longer returned."""
    j = jaxpr.jaxpr
    consts, carry = j.invars[:nconsts], j.invars[nconsts : nconsts + ncarry]
    invars = _pick(carry, carry_fwd) + consts + _pick(carry, carry_fwd, False)
    outvars = _pick(j.outvars[:ncarry], carry_fwd, False) + [
        o for o, k in zip(j.outvars[ncarry:], ys_fwd, strict=True) if k is None
    ]
    return _permuted(jaxpr, invars=invars + j.invars[nconsts + ncarry :], outvars=outvars)


def _python_scan(f, init, xs_flat, xs_tree, length, reverse):
    """``scan`` as a Python loop over the slices (JAX's ``disable_jit`` mode)."""
    if length == 0:
        raise ValueError(
            "zero-length scan is not supported in disable_jit() mode because "
            "the output type is unknown."
        )
    carry, ys = init, []
    steps = range(length - 1, -1, -1) if reverse else range(length)
    for i in steps:
        x = pytree.tree_unflatten(xs_tree, [index_in_dim(v, i, keepdims=False) for v in xs_flat])
        carry, y = f(carry, x)
        ys.append(y)
    if reverse:
        ys.reverse()
    stacked = pytree.tree_map(
        lambda *ys: concatenate([expand_dims(asarray(y), (0,)) for y in ys], 0), *ys
    )
    return carry, stacked


@api_boundary
def map(f, xs, *, batch_size=None):  # noqa: A001  (lax's name)
    """``f`` applied to each slice of ``xs`` along its leading axis, results stacked.

    With ``batch_size``, ``f`` is vectorized (vmapped) over ``batch_size`` slices at a time
    and the batches are scanned over; the slices left over run as one last vmapped batch.

    Example:
      >>> xform.lax.map(lambda x: x * 2, xform.numpy.arange(3.0))  # [0., 2., 4.]
    """
    if batch_size is None:
        _, ys = scan(lambda _, x: ((), f(x)), (), xs)
        return ys
    if (
        isinstance(batch_size, bool)
        or not isinstance(batch_size, (int, np.integer))
        or batch_size < 0
    ):
        raise TypeError(f"lax.map: batch_size must be a non-negative int, got {batch_size!r}")
    leaves, tree = pytree.tree_flatten(xs)
    if not leaves:
        _, ys = scan(lambda _, x: ((), f(x)), (), xs)
        return ys
    length = get_aval(leaves[0]).shape[0] if get_aval(leaves[0]).shape else 0
    num_batches = length // batch_size if batch_size else 0
    batched = num_batches * batch_size
    ys = None
    if num_batches:
        scan_xs = [
            reshape(
                slice_in_dim(x, 0, batched, axis=0),
                (num_batches, batch_size) + get_aval(x).shape[1:],
            )
            for x in leaves
        ]
        _, ys = scan(
            lambda _, x: ((), _vmap_leading(f, x)), (), pytree.tree_unflatten(tree, scan_xs)
        )
        ys = pytree.tree_map(lambda y: reshape(y, (batched,) + get_aval(y).shape[2:]), ys)
    if batched < length:
        rest = _vmap_leading(
            f,
            pytree.tree_unflatten(tree, [slice_in_dim(x, batched, length, axis=0) for x in leaves]),
        )
        ys = rest if ys is None else pytree.tree_map(lambda y, r: concatenate([y, r], 0), ys, rest)
    return ys


def _vmap_leading(f, xs):
    """``f`` vectorized over the leading axis of every leaf of ``xs`` (vmap, at this level)."""
    leaves, tree = pytree.tree_flatten(xs)
    store = {}

    def flat_f(*flat):
        out, store["tree"] = pytree.tree_flatten(f(pytree.tree_unflatten(tree, flat)))
        return out

    axis = batching.AxisData(None, get_aval(leaves[0]).shape[0])
    outs = batching.vmap_flat(flat_f, axis, leaves, [0] * len(leaves), lambda n: [0] * n)
    return pytree.tree_unflatten(store["tree"], outs)


def _scan_abstract_eval(*avals, jaxpr, num_consts, num_carry, length, reverse, unroll, linear):
    consts, carry, xs = _split(avals, num_consts, num_carry)
    if any(not x.shape or x.shape[0] != length for x in xs):
        raise TypeError(f"scan of length {length} got xs of types ({_types(xs)})")
    slices = [ShapedArray(x.shape[1:], x.dtype, x.weak_type, vma=x.vma) for x in xs]
    _check_operands("scan body", jaxpr.in_avals, consts + carry + slices)
    carry_out, ys = _split(jaxpr.out_avals, num_carry)
    if not all(_same_types(carry, carry_out)):
        raise TypeError(
            "scan body function carry input and carry output must have equal "
            f"types: input ({_types(carry)}), output ({_types(carry_out)})"
        )
    if len(linear) != len(avals):
        raise TypeError(f"scan: `linear` has {len(linear)} entries for {len(avals)} operands")
    return carry_out + [
        ShapedArray((length,) + y.shape, y.dtype, y.weak_type, vma=y.vma) for y in ys
    ]


scan_p = standard_primitive("scan", _scan_abstract_eval, multiple_results=True)


def _stack(ys, aval, length):
    if not ys:
        return broadcast_in_dim(np.zeros((), aval.dtype), (length,) + aval.shape, ())
    return concatenate([reshape(y, (1,) + aval.shape) for y in ys], 0)


def _scan_impl(*args, jaxpr, num_consts, num_carry, length, reverse, unroll, linear):
    consts, carry, xs = _split(args, num_consts, num_carry)
    out_avals = jaxpr.out_avals
    carry_avals, y_avals = out_avals[:num_carry], out_avals[num_carry:]
    with set_current_trace(eval_trace):
        ys = [[] for _ in y_avals]
        for k in range(length):
            i = length - 1 - k if reverse else k
            slices = [index_in_dim(x, i, 0, keepdims=False) for x in xs]
            outs = eval_jaxpr(jaxpr.jaxpr, (), *consts, *carry, *slices)
            carry = outs[:num_carry]
            for acc, y in zip(ys, outs[num_carry:], strict=True):
                acc.append(y)
        if reverse:
            for acc in ys:
                acc.reverse()
        carry = [_as_array(x, a) for x, a in zip(carry, carry_avals, strict=True)]
        stacked = [_stack(acc, a, length) for acc, a in zip(ys, y_avals, strict=True)]
        stacked = [
            _as_array(y, a.update(shape=(length,) + a.shape))
            for y, a in zip(stacked, y_avals, strict=True)
        ]
    return carry + stacked


eager_rules[scan_p] = _scan_impl


# --------------------------------------------------------------------------- scan: jvp


def _scan_jvp(primals, tangents, *, jaxpr, num_consts, num_carry, length, reverse, unroll, linear):
    num_xs = len(primals) - num_consts - num_carry
    num_ys = len(jaxpr.out_avals) - num_carry
    consts, init, xs = _split(primals, num_consts, num_carry)
    consts_t, init_t, xs_t = _split(tangents, num_consts, num_carry)
    consts_nz = [_nonzero(t) for t in consts_t]
    carry_nz = [_nonzero(t) for t in init_t]
    xs_nz = [_nonzero(t) for t in xs_t]
    while True:  # fixpoint: which carries have tangents
        body, extra, out_nz = _jvp_jaxpr(
            jaxpr, tuple(consts_nz + carry_nz + xs_nz), tuple(carry_nz) + (False,) * num_ys
        )
        if list(out_nz[:num_carry]) == carry_nz:
            break
        carry_nz = _or(carry_nz, out_nz[:num_carry])
    ys_nz = list(out_nz[num_carry:])
    body = _scan_jvp_body(
        body,
        len(extra),
        num_consts,
        num_carry,
        num_xs,
        tuple(consts_nz),
        tuple(carry_nz),
        tuple(xs_nz),
        tuple(ys_nz),
    )
    lin_consts, lin_init, lin_xs = _split(linear, num_consts, num_carry)
    new_consts = extra + consts + _pick(consts_t, consts_nz)
    new_carry = init + [ad.instantiate(t) for t, nz in zip(init_t, carry_nz, strict=True) if nz]
    new_xs = xs + _pick(xs_t, xs_nz)
    new_linear = (
        (False,) * len(extra)
        + tuple(lin_consts)
        + (True,) * sum(consts_nz)
        + tuple(lin_init)
        + (True,) * sum(carry_nz)
        + tuple(lin_xs)
        + (True,) * sum(xs_nz)
    )
    outs = scan_p.bind(
        *new_consts,
        *new_carry,
        *new_xs,
        jaxpr=body,
        num_consts=len(new_consts),
        num_carry=len(new_carry),
        length=length,
        reverse=reverse,
        unroll=unroll,
        linear=new_linear,
    )
    carry_out, carry_t_out, ys, ys_t = _split(outs, num_carry, sum(carry_nz), num_ys)
    carry_t_out, ys_t = iter(carry_t_out), iter(ys_t)
    out_avals = _scan_abstract_eval(
        *[get_aval(x) for x in primals],
        jaxpr=jaxpr,
        num_consts=num_consts,
        num_carry=num_carry,
        length=length,
        reverse=reverse,
        unroll=unroll,
        linear=linear,
    )
    tangents_out = [
        next(carry_t_out) if nz else ad.Zero(ad.tangent_aval(a))
        for a, nz in zip(out_avals[:num_carry], carry_nz, strict=True)
    ]
    tangents_out += [
        next(ys_t) if nz else ad.Zero(ad.tangent_aval(a))
        for a, nz in zip(out_avals[num_carry:], ys_nz, strict=True)
    ]
    return carry_out + ys, tangents_out


_scan_jvp_bodies = weakref.WeakKeyDictionary()


def _scan_jvp_body(
    body, num_extra, num_consts, num_carry, num_xs, consts_nz, carry_nz, xs_nz, ys_nz
):
    """The jvp jaxpr's operands and results reordered to a scan body's layout: consts (with
    their tangents), then carries, then xs; results carries then ys."""
    cache = _scan_jvp_bodies.setdefault(body.jaxpr, {})
    hit = cache.get(None)
    if hit is not None:
        return hit
    extra, consts, carry, xs, consts_t, carry_t, xs_t = _split(
        body.jaxpr.invars, num_extra, num_consts, num_carry, num_xs, sum(consts_nz), sum(carry_nz)
    )
    num_ys = len(ys_nz)
    carry_out, ys, carry_t_out, ys_t = _split(body.jaxpr.outvars, num_carry, num_ys, sum(carry_nz))
    hit = cache[None] = _permuted(
        body,
        extra + consts + consts_t + carry + carry_t + xs + xs_t,
        carry_out + carry_t_out + ys + ys_t,
    )
    return hit


ad.jvp_rules[scan_p] = _scan_jvp


# --------------------------------------------------------------------------- scan: partial eval

_split_jaxprs = weakref.WeakKeyDictionary()  # jaxpr -> {(unknowns, instantiate): split}


def _split_jaxpr(closed, unknowns, instantiate):
    """``partial_eval.partial_eval_jaxpr`` with outputs forced unknown (``instantiate``),
    once per body, mask and forcing."""
    cache = _split_jaxprs.setdefault(closed.jaxpr, {})
    key = (unknowns, instantiate)
    hit = cache.get(key)
    if hit is None:
        hit = cache[key] = partial_eval.partial_eval_jaxpr(
            closed, unknowns, "partially evaluating a scan body", instantiate
        )
    return hit


def _scan_partial_eval(trace, args, params):
    jaxpr, num_consts, num_carry = params["jaxpr"], params["num_consts"], params["num_carry"]
    length, linear = params["length"], params["linear"]
    num_ys = len(jaxpr.out_avals) - num_carry
    unknowns = [trace.is_unknown(x) for x in args]
    const_uk, carry_uk, xs_uk = _split(unknowns, num_consts, num_carry)
    while True:  # fixpoint: a carry is unknown if its init or its update is
        split = _split_jaxpr(
            jaxpr, tuple(const_uk + carry_uk + xs_uk), tuple(carry_uk) + (False,) * num_ys
        )
        out_uk = list(split[3])
        if out_uk[:num_carry] == carry_uk:
            break
        carry_uk = _or(carry_uk, out_uk[:num_carry])
    known_jaxpr, known_consts, unknown_jaxpr, out_uk, num_res = split
    consts, carry, xs = _split(args, num_consts, num_carry)
    lin_consts, lin_carry, lin_xs = _split(linear, num_consts, num_carry)
    known_consts_in = known_consts + _pick(consts, const_uk, False)
    num_known_carry = num_carry - sum(carry_uk)

    # Residuals that do not change from one iteration to the next (constants, known consts
    # passed through) become consts of the unknown scan; the others are stacked, as ys.
    kj = known_jaxpr.jaxpr
    const_vars = {v: x for v, x in zip(kj.invars, known_consts_in, strict=False)}
    num_known_outs = len(kj.outvars) - num_res
    res_vars = kj.outvars[num_known_outs:]
    invariant = [type(v) is Literal or v in const_vars for v in res_vars]
    # Residuals that are slices of known xs are those xs, not stacked again (as JAX).
    known_xs = _pick(xs, xs_uk, False)
    xs_vars = dict(zip(kj.invars[len(kj.invars) - len(known_xs) :], known_xs, strict=True))
    forwarded = [not inv and v in xs_vars for v, inv in zip(res_vars, invariant, strict=True)]
    body = _permuted(
        known_jaxpr,
        outvars=kj.outvars[:num_known_outs]
        + [
            v
            for v, inv, fw in zip(res_vars, invariant, forwarded, strict=True)
            if not inv and not fw
        ],
    )
    known_args = known_consts_in + _pick(carry, carry_uk, False) + known_xs
    with set_current_trace(trace.parent):
        known_outs = scan_p.bind(
            *known_args,
            jaxpr=body,
            num_consts=len(known_consts_in),
            num_carry=num_known_carry,
            length=length,
            reverse=params["reverse"],
            unroll=params["unroll"],
            linear=(False,) * len(known_args),
        )
    known_outs, stacked = known_outs[:num_known_outs], iter(known_outs[num_known_outs:])
    stacked = [
        xs_vars[v] if fw else next(stacked)
        for v, inv, fw in zip(res_vars, invariant, forwarded, strict=True)
        if not inv
    ]
    invariant_vals = [
        np.asarray(v.val, v.aval.dtype) if type(v) is Literal else const_vars[v]
        for v, inv in zip(res_vars, invariant, strict=True)
        if inv
    ]

    uj = unknown_jaxpr.jaxpr
    res_in, uk_in = uj.invars[:num_res], uj.invars[num_res:]
    consts_in, carry_in, xs_in = _split(uk_in, sum(const_uk), sum(carry_uk))
    unknown_body = _permuted(
        unknown_jaxpr,
        invars=(
            _pick(res_in, invariant)
            + consts_in
            + carry_in
            + _pick(res_in, invariant, False)
            + xs_in
        ),
    )
    unknown_args = (
        invariant_vals
        + _pick(consts, const_uk)
        + _pick(carry, carry_uk)
        + stacked
        + _pick(xs, xs_uk)
    )
    unknown_linear = (
        (False,) * len(invariant_vals)
        + tuple(_pick(lin_consts, const_uk))
        + tuple(_pick(lin_carry, carry_uk))
        + (False,) * len(stacked)
        + tuple(_pick(lin_xs, xs_uk))
    )
    unknown_params = dict(
        params,
        jaxpr=unknown_body,
        num_consts=len(invariant_vals) + sum(const_uk),
        num_carry=sum(carry_uk),
        linear=unknown_linear,
    )
    out_avals = _scan_abstract_eval(*[get_aval(x) for x in unknown_args], **unknown_params)
    unknown_outs = iter(trace.stage(scan_p, unknown_args, unknown_params, out_avals))
    known_outs = iter(known_outs)
    return [next(unknown_outs) if u else next(known_outs) for u in out_uk]


partial_eval.partial_eval_rules[scan_p] = _scan_partial_eval


# --------------------------------------------------------------------------- scan: transpose

_transposed_jaxprs = weakref.WeakKeyDictionary()


def _transposed_body(jaxpr, num_consts, num_carry, consts_lin, xs_lin, ys_zero):
    """The body of the transposed scan: (residual consts; accumulated cotangents of the
    linear consts, carry cotangents; residual xs, ys cotangents) -> (accumulators, carry
    cotangents, cotangents of the linear xs). Returns ``(jaxpr, consts)``."""
    cache = _transposed_jaxprs.setdefault(jaxpr.jaxpr, {})
    key = (consts_lin, xs_lin, ys_zero)
    hit = cache.get(key)
    if hit is not None:
        return hit
    consts_avals, carry_avals, x_avals = _split(jaxpr.in_avals, num_consts, num_carry)
    y_avals = jaxpr.out_avals[num_carry:]
    res_avals = _pick(consts_avals, consts_lin, False)
    acc_avals = [ad.tangent_aval(a) for a in _pick(consts_avals, consts_lin)]
    ct_carry_avals = [ad.tangent_aval(a) for a in carry_avals]
    res_x_avals = _pick(x_avals, xs_lin, False)
    ct_y_avals = [ad.tangent_aval(a) for a in _pick(y_avals, ys_zero, False)]
    sizes = (len(res_avals), len(acc_avals), len(ct_carry_avals), len(res_x_avals))

    def transposed(*args):
        res, acc, ct_carry, res_xs, ct_ys = _split(args, *sizes)
        res, res_xs, ct_ys = iter(res), iter(res_xs), iter(ct_ys)
        invals = [
            transpose.UndefinedPrimal(a) if lin else next(res)
            for a, lin in zip(consts_avals, consts_lin, strict=True)
        ]
        invals += [transpose.UndefinedPrimal(a) for a in carry_avals]
        invals += [
            transpose.UndefinedPrimal(a) if lin else next(res_xs)
            for a, lin in zip(x_avals, xs_lin, strict=True)
        ]
        cts_out = list(ct_carry) + [
            ad.Zero(ad.tangent_aval(a)) if z else next(ct_ys)
            for a, z in zip(y_avals, ys_zero, strict=True)
        ]
        cts_in = transpose.backward_pass(jaxpr.jaxpr, (), invals, cts_out)
        ct_consts, ct_init, ct_xs = _split(cts_in, num_consts, num_carry)
        acc_out = [
            ad.instantiate(ad.add_tangents(a, ct))
            for a, ct in zip(acc, _pick(ct_consts, consts_lin), strict=True)
        ]
        return (
            acc_out
            + [ad.instantiate(ct) for ct in ct_init]
            + [ad.instantiate(ct) for ct in _pick(ct_xs, xs_lin)]
        )

    hit = cache[key] = _trace_body(
        transposed,
        res_avals + acc_avals + ct_carry_avals + res_x_avals + ct_y_avals,
        "transposing a scan body",
    )
    return hit


def _scan_transpose(cts, *args, jaxpr, num_consts, num_carry, length, reverse, unroll, linear):
    consts, carry, xs = _split(args, num_consts, num_carry)
    ct_carry, ct_ys = cts[:num_carry], cts[num_carry:]
    consts_lin = tuple(transpose.is_undefined(x) for x in consts)
    xs_lin = tuple(transpose.is_undefined(x) for x in xs)
    ys_zero = tuple(type(ct) is ad.Zero for ct in ct_ys)
    body, extra = _transposed_body(jaxpr, num_consts, num_carry, consts_lin, xs_lin, ys_zero)
    res = _pick(consts, consts_lin, False)
    acc = [ad.instantiate(ad.Zero(ad.tangent_aval(x.aval))) for x in _pick(consts, consts_lin)]
    carry_avals = jaxpr.in_avals[num_consts : num_consts + num_carry]
    ct_init = [
        ad.instantiate(ad.Zero(ad.tangent_aval(a)) if ct is None else ct)
        for ct, a in zip(ct_carry, carry_avals, strict=True)
    ]
    res_xs = _pick(xs, xs_lin, False)
    ct_ys = [ct for ct in ct_ys if type(ct) is not ad.Zero]
    operands = extra + res + acc + ct_init + res_xs + ct_ys
    num_t_consts = len(extra) + len(res)
    linear_t = (
        (False,) * num_t_consts
        + (True,) * (len(acc) + num_carry)
        + (False,) * len(res_xs)
        + (True,) * len(ct_ys)
    )
    outs = scan_p.bind(
        *operands,
        jaxpr=body,
        num_consts=num_t_consts,
        num_carry=len(acc) + num_carry,
        length=length,
        reverse=not reverse,
        unroll=unroll,
        linear=linear_t,
    )
    ct_consts, ct_init, ct_xs = _split(outs, len(acc), num_carry)
    ct_consts, ct_xs = iter(ct_consts), iter(ct_xs)
    return (
        [next(ct_consts) if lin else None for lin in consts_lin]
        + [ct if transpose.is_undefined(x) else None for ct, x in zip(ct_init, carry, strict=True)]
        + [next(ct_xs) if lin else None for lin in xs_lin]
    )


transpose.transpose_rules[scan_p] = _scan_transpose


# --------------------------------------------------------------------------- scan: batching


def _scan_batch(axis, args, dims, *, jaxpr, num_consts, num_carry, length, reverse, unroll, linear):
    num_ys = len(jaxpr.out_avals) - num_carry
    consts, init, xs = _split(args, num_consts, num_carry)
    consts_dims, init_dims, xs_dims = _split(dims, num_consts, num_carry)
    # Batched xs carry the batch at 1, so each slice has it at 0.
    xs = [
        x if d is not_mapped else batching.moveaxis(x, d, 1)
        for x, d in zip(xs, xs_dims, strict=True)
    ]
    slice_dims = [not_mapped if d is not_mapped else 0 for d in xs_dims]
    carry_b = [d is not not_mapped for d in init_dims]
    while True:  # fixpoint: a carry the body makes batched is batched from the start
        in_dims = tuple(consts_dims + [0 if b else not_mapped for b in carry_b] + slice_dims)
        body, extra, out_b = batching.batch_jaxpr(
            jaxpr, axis, in_dims, tuple(carry_b) + (False,) * num_ys
        )
        if list(out_b[:num_carry]) == carry_b:
            break
        carry_b = _or(carry_b, out_b[:num_carry])
    init = [_at_front(x, d, b, axis.size) for x, d, b in zip(init, init_dims, carry_b, strict=True)]
    outs = scan_p.bind(
        *extra,
        *consts,
        *init,
        *xs,
        jaxpr=body,
        num_consts=len(extra) + num_consts,
        num_carry=num_carry,
        length=length,
        reverse=reverse,
        unroll=unroll,
        linear=(False,) * len(extra) + linear,
    )
    out_dims = [0 if b else not_mapped for b in carry_b]
    out_dims += [1 if b else not_mapped for b in out_b[num_carry:]]
    return outs, out_dims


batching.batch_rules[scan_p] = _scan_batch


# --------------------------------------------------------------------------- dead code
# As JAX's rule: the ys nothing reads go, and so do the carries nothing needs (read after the
# loop, or by a kept part of the body, found to a fixpoint: `fori_loop`'s counter, say), then
# the operands the slimmed body does not read.

_scan_slimmed = weakref.WeakKeyDictionary()  # body jaxpr -> {used outputs: slimming}


def _slim_scan_body(body, nc, nk, used_outputs):
    """``(used_inputs, kept_outputs, body)`` of a scan whose outputs ``used_outputs`` are
    read (``body`` None: the scan stays as it is); cached per body."""
    cache = _scan_slimmed.setdefault(body.jaxpr, {})
    hit = cache.get(used_outputs)
    if hit is not None:
        return hit
    used_carry, used_ys = list(used_outputs[:nk]), list(used_outputs[nk:])
    while True:
        _, used_in = dce.dce_jaxpr(body.jaxpr, used_carry + used_ys)
        needed = [u or v for u, v in zip(used_carry, used_in[nc : nc + nk], strict=True)]
        if needed == used_carry:
            break
        used_carry = needed
    used_inputs = used_in[:nc] + used_carry + used_in[nc + nk :]
    kept_outputs = used_carry + used_ys
    new_body = None
    if not (all(used_inputs) and all(kept_outputs) and not dce.has_dead_code(body.jaxpr)):
        slim, _ = dce.dce_jaxpr(body.jaxpr, kept_outputs)
        new_body = ClosedJaxpr(
            Jaxpr(
                slim.constvars,
                [v for v, u in zip(slim.invars, used_inputs, strict=True) if u],
                slim.outvars,
                slim.eqns,
            ),
            body.consts,
        )
    hit = cache[used_outputs] = (used_inputs, kept_outputs, new_body)
    return hit


def _scan_dce(used_outputs, eqn):
    if not any(used_outputs):
        return [False] * len(eqn.invars), None
    params = eqn.params
    nc, nk = params["num_consts"], params["num_carry"]
    used_inputs, kept_outputs, new_body = _slim_scan_body(
        params["jaxpr"], nc, nk, tuple(used_outputs)
    )
    if new_body is None:
        return used_inputs, eqn
    new_params = {
        **params,
        "jaxpr": new_body,
        "num_consts": sum(used_inputs[:nc]),
        "num_carry": sum(kept_outputs[:nk]),
        "linear": tuple(lin for lin, u in zip(params["linear"], used_inputs, strict=True) if u),
    }
    new_eqn = type(eqn)(
        eqn.primitive,
        [x for x, u in zip(eqn.invars, used_inputs, strict=True) if u],
        [v for v, u in zip(eqn.outvars, kept_outputs, strict=True) if u],
        new_params,
        eqn.source_info,
    )
    return used_inputs, new_eqn


dce.dce_rules[scan_p] = _scan_dce

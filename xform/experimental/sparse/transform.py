"""``sparsify``: run a function written with ``xform.numpy`` on BCOO arguments.

The function is traced to a jaxpr with every sparse argument standing in as a dense array of
its shape; the jaxpr is then evaluated with an environment whose values are either dense
arrays or sparse values, and each equation that meets a sparse value runs its sparse rule
(``sparse_rules``, keyed by the primitive) instead of the primitive. Equations on dense
values only are bound as they are, so the evaluation composes with ``jit``, ``grad`` and
``vmap`` around the sparsified function. A sparse value remembers which sparse value its
indices came from (``ref``), so ``x + x`` adds data in place where JAX's does, and ``x + y``
of two different arguments keeps both sets of entries, as JAX's.

Also here: ``todense`` and the sparse-aware ``grad``, ``value_and_grad``, ``jacfwd`` and
``jacrev``, which differentiate with respect to the data of sparse arguments.
"""

import functools
import operator

from xform import lax
from xform import numpy as jnp
from xform.api.autodiff import grad as _grad
from xform.api.autodiff import value_and_grad as _value_and_grad
from xform.api.batching import vmap
from xform.api.jacobian import jacfwd as _jacfwd
from xform.api.jacobian import jacrev as _jacrev
from xform.api.jit import ShapeDtypeStruct, jit, make_jaxpr
from xform.core import Literal
from xform.experimental.sparse import bcoo, bcoo_structural
from xform.experimental.sparse._base import JAXSparse
from xform.experimental.sparse.bcoo import BCOO
from xform.primitives import (
    call,
    comparisons,
    cond,
    dot,
    elementwise,
    indexing,
    reductions,
    scan,
    structural,
    transcendental,
    while_loop,
)
from xform.tree_util import tree_flatten, tree_structure, tree_unflatten

__all__ = ["grad", "jacfwd", "jacobian", "jacrev", "sparsify", "todense", "value_and_grad"]


def _sparse_todense(x):
    return x


# On a dense array ``todense`` is the identity, but inside a function that ``sparsify``
# traces its argument may stand in for a sparse one: a jit of this function marks the spot
# in the jaxpr, and sparsify's rule for it densifies (as JAX's ``todense_p`` does).
_todense_marker = jit(_sparse_todense)


def todense(arr):
    """The dense form of a sparse array; a dense array is returned as it is.

    Example:
      >>> todense(BCOO.fromdense(xform.numpy.ones(2)))
      Array([1., 1.], dtype=float32)
    """
    if isinstance(arr, JAXSparse):
        return arr.todense()
    return _todense_marker(arr)


def _is_sparse(x):
    return isinstance(x, JAXSparse)


class _SpValue:
    """A sparse value of the evaluation: the BCOO array and the token of its indices."""

    __slots__ = ("mat", "ref")

    def __init__(self, mat, ref=None):
        self.mat = mat
        self.ref = object() if ref is None else ref


def _unique(x):
    """``x`` with unique indices, for ops that are not linear in the data."""
    return x if x.mat.unique_indices else _SpValue(bcoo.unique(x.mat))


def _zero_preserving(prim, linear):
    """A rule for an elementwise unary op that maps 0 to 0: applied to the data."""

    def rule(x, **params):
        x = x if linear else _unique(x)
        out = prim.bind(x.mat.data, **params)
        return [_SpValue(bcoo._with_data(x.mat, out), x.ref)]

    return rule


def _dense_rule(prim):
    def rule(*args, **params):
        raise NotImplementedError(
            f"sparse rule for {prim.name} is not implemented because it would result in dense "
            "output. If this is your intent, use sparse.todense() to convert your arguments "
            "to dense matrices."
        )

    return rule


def _operands(*args):
    return [a.mat if isinstance(a, _SpValue) else a for a in args]


def _same(x, y):
    return isinstance(x, _SpValue) and isinstance(y, _SpValue) and x.ref is y.ref


def _add_rule(x, y):
    out = bcoo.add(*_operands(x, y), same_indices=_same(x, y))
    return [_SpValue(out, x.ref) if _same(x, y) else _wrap(out)]


def _sub_rule(x, y):
    out = bcoo.sub(*_operands(x, y), same_indices=_same(x, y))
    return [_SpValue(out, x.ref) if _same(x, y) else _wrap(out)]


def _mul_rule(x, y):
    same = _same(x, y) and x.mat.unique_indices
    out = bcoo.mul(*_operands(x, y), same_indices=same)
    if isinstance(out, BCOO) and (
        same or not (isinstance(x, _SpValue) and isinstance(y, _SpValue))
    ):
        sp = x if isinstance(x, _SpValue) else y
        return [_SpValue(out, sp.ref)]  # scaled data at the same indices
    return [_wrap(out)]


def _div_rule(x, y):
    if isinstance(y, _SpValue):
        raise NotImplementedError(
            "Division by a sparse array is not implemented because it would result in dense "
            "output. If this is your intent, use sparse.todense() to convert your arguments "
            "to a dense array."
        )
    return [_SpValue(bcoo.mul(x.mat, 1 / jnp.asarray(y)), x.ref)]


def _integer_pow_rule(x, *, y):
    if y <= 0:
        raise NotImplementedError(
            f"sparse rule for integer_pow with non-positive exponent {y} is not implemented "
            "because it would result in dense output. If this is your intent, use "
            "sparse.todense() to convert your argument to a dense array."
        )
    return _zero_preserving(elementwise.integer_pow_p, False)(x, y=y)


def _dot_general_rule(x, y, *, dimension_numbers, preferred_element_type=None, **params):
    lhs, rhs = _operands(x, y)
    out = bcoo.bcoo_dot_general(
        lhs, rhs, dimension_numbers=dimension_numbers, preferred_element_type=preferred_element_type
    )
    return [_wrap(out)]


def _reduce_sum_rule(x, *, axes, **params):
    out = bcoo.bcoo_reduce_sum(x.mat, axes=axes)
    return [out.data.sum() if out.shape == () else _SpValue(out)]


def _transpose_rule(x, *, permutation):
    return [_SpValue(bcoo.bcoo_transpose(x.mat, permutation=permutation))]


def _reshape_rule(x, *, new_sizes, dimensions=None, **params):
    return [
        _SpValue(bcoo_structural.bcoo_reshape(x.mat, new_sizes=new_sizes, dimensions=dimensions))
    ]


def _squeeze_rule(x, *, dimensions):
    return [_SpValue(bcoo_structural.bcoo_squeeze(x.mat, dimensions=dimensions))]


def _broadcast_in_dim_rule(x, *, shape, broadcast_dimensions, **params):
    out = bcoo_structural.bcoo_broadcast_in_dim(
        x.mat, shape=shape, broadcast_dimensions=broadcast_dimensions
    )
    return [_SpValue(out)]


def _rev_rule(x, *, dimensions):
    return [_SpValue(bcoo_structural.bcoo_rev(x.mat, dimensions))]


def _slice_rule(x, *, start_indices, limit_indices, strides=None, **params):
    out = bcoo_structural.bcoo_slice(
        x.mat, start_indices=start_indices, limit_indices=limit_indices, strides=strides
    )
    return [_SpValue(out)]


def _dynamic_slice_rule(x, *starts, slice_sizes, **params):
    if any(isinstance(s, _SpValue) for s in starts):
        raise NotImplementedError("sparse rule for dynamic_slice: start indices must be dense")
    return [_SpValue(bcoo_structural.bcoo_dynamic_slice(x.mat, starts, slice_sizes))]


def _concatenate_rule(*args, dimension, **params):
    if not all(isinstance(a, _SpValue) for a in args):
        raise NotImplementedError(
            "sparse rule for concatenate: xform concatenates only "
            "sparse operands; use sparse.todense() on the others"
        )
    out = bcoo_structural.bcoo_concatenate([a.mat for a in args], dimension=dimension)
    return [_SpValue(out)]


def _jit_rule(*args, jaxpr, name, **params):
    if name == _sparse_todense.__name__:
        return [x.mat.todense() if isinstance(x, _SpValue) else x for x in args]
    return _eval_sparse(jaxpr.jaxpr, jaxpr.consts, args)


# Control flow: the sparse operands may only be loop-invariant (consts, cond operands); the
# loop is rebuilt with ``lax`` around Python functions that evaluate the sub-jaxprs sparsely,
# so the sparse arrays' buffers enter the new loop as closed-over values.


def _dense_only(what, values):
    if any(isinstance(v, _SpValue) for v in values):
        raise NotImplementedError(
            f"sparse rule for {what}: xform's sparsify supports sparse "
            "arrays only as loop-invariant operands, not in the carry, "
            "the scanned values or the results"
        )
    return list(values)


def _scan_rule(*args, jaxpr, num_consts, num_carry, length, reverse, unroll, **params):
    consts, carry = args[:num_consts], args[num_consts : num_consts + num_carry]
    xs = _dense_only("scan", args[num_consts + num_carry :])

    def body(c, x):
        outs = _dense_only("scan", _eval_sparse(jaxpr.jaxpr, jaxpr.consts, [*consts, *c, *x]))
        return outs[:num_carry], outs[num_carry:]

    carry, ys = lax.scan(
        body, _dense_only("scan", carry), xs, length=length, reverse=reverse, unroll=unroll
    )
    return [*carry, *ys]


def _while_rule(*args, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    cond_consts = args[:cond_nconsts]
    body_consts = args[cond_nconsts : cond_nconsts + body_nconsts]
    init = _dense_only("while", args[cond_nconsts + body_nconsts :])

    def keep_going(c):
        return _eval_sparse(cond_jaxpr.jaxpr, cond_jaxpr.consts, [*cond_consts, *c])[0]

    def body(c):
        outs = _eval_sparse(body_jaxpr.jaxpr, body_jaxpr.consts, [*body_consts, *c])
        return _dense_only("while", outs)

    return list(lax.while_loop(keep_going, body, init))


def _cond_rule(index, *operands, branches):
    def branch(closed):
        def run():
            return _dense_only("cond", _eval_sparse(closed.jaxpr, closed.consts, operands))

        return run

    return list(lax.switch(index, [branch(b) for b in branches]))


def _convert_rule(x, *, new_dtype, **params):
    return [_SpValue(x.mat.astype(new_dtype), x.ref)]


def _wrap(out):
    return _SpValue(out) if isinstance(out, BCOO) else out


sparse_rules = {
    elementwise.add_p: _add_rule,
    elementwise.sub_p: _sub_rule,
    elementwise.mul_p: _mul_rule,
    elementwise.div_p: _div_rule,
    elementwise.integer_pow_p: _integer_pow_rule,
    elementwise.convert_element_type_p: _convert_rule,
    dot.dot_general_p: _dot_general_rule,
    reductions.reduce_sum_p: _reduce_sum_rule,
    structural.transpose_p: _transpose_rule,
    structural.reshape_p: _reshape_rule,
    structural.squeeze_p: _squeeze_rule,
    structural.broadcast_in_dim_p: _broadcast_in_dim_rule,
    structural.rev_p: _rev_rule,
    structural.concatenate_p: _concatenate_rule,
    indexing.slice_p: _slice_rule,
    indexing.dynamic_slice_p: _dynamic_slice_rule,
    call.jit_p: _jit_rule,
    scan.scan_p: _scan_rule,
    while_loop.while_p: _while_rule,
    cond.cond_p: _cond_rule,
}
for _p in (
    elementwise.neg_p,
    elementwise.conj_p,
    elementwise.real_p,
    elementwise.imag_p,
    elementwise.copy_p,
):
    sparse_rules[_p] = _zero_preserving(_p, linear=True)
for _p in (
    elementwise.abs_p,
    transcendental.asin_p,
    transcendental.asinh_p,
    transcendental.atan_p,
    transcendental.atanh_p,
    transcendental.expm1_p,
    transcendental.log1p_p,
    elementwise.sign_p,
    transcendental.sin_p,
    transcendental.sinh_p,
    transcendental.sqrt_p,
    elementwise.square_p,
    transcendental.tan_p,
    transcendental.tanh_p,
):
    sparse_rules[_p] = _zero_preserving(_p, linear=False)
for _p in (
    transcendental.acos_p,
    transcendental.acosh_p,
    transcendental.cos_p,
    transcendental.cosh_p,
    comparisons.eq_p,
    transcendental.exp_p,
    comparisons.ge_p,
    comparisons.gt_p,
    comparisons.le_p,
    comparisons.lt_p,
    transcendental.log_p,
    comparisons.ne_p,
):
    sparse_rules[_p] = _dense_rule(_p)


def _eval_sparse(jaxpr, consts, args):
    """Evaluate ``jaxpr`` on values that may be sparse (``_SpValue``); a list of outputs."""
    env = {}

    def read(v):
        return v.val if type(v) is Literal else env[v]

    for v, x in zip(jaxpr.constvars, consts, strict=True):
        env[v] = x
    for v, x in zip(jaxpr.invars, args, strict=True):
        env[v] = x
    for eqn in jaxpr.eqns:
        invals = [read(v) for v in eqn.invars]
        if any(isinstance(x, _SpValue) for x in invals):
            rule = sparse_rules.get(eqn.primitive)
            if rule is None:
                raise NotImplementedError(
                    f"sparse rule for {eqn.primitive.name} is not implemented: xform's "
                    "sparsify has no rule for it. Use sparse.todense() on its sparse "
                    "operands if a dense result is intended."
                )
            outs = rule(*invals, **eqn.params)
        else:
            outs = eqn.primitive.bind(*invals, **eqn.params)
            outs = outs if eqn.primitive.multiple_results else [outs]
        for v, out in zip(eqn.outvars, outs, strict=True):
            env[v] = out
    return [read(v) for v in jaxpr.outvars]


def sparsify(f, use_tracer=False):
    """``f`` made to accept BCOO arrays wherever it takes arrays.

    Args:
      f: a function of arrays written with ``xform.numpy``/``xform.lax``.
      use_tracer: unused (xform always evaluates the traced jaxpr).

    Returns:
      A function with ``f``'s signature whose BCOO arguments stay sparse: matmul, sums,
      transposes, reshapes, products with dense arrays and zero-preserving unary functions
      give BCOO or dense results without densifying; ops that would make a sparse array dense
      raise NotImplementedError.

    Example:
      >>> M = BCOO.fromdense(xform.numpy.eye(2))
      >>> sparsify(lambda m, v: m @ v + 1.0)(M, xform.numpy.ones(2))
      Array([2., 2.], dtype=float32)
    """
    del use_tracer

    @functools.wraps(f)
    def wrapped(*args, **kwargs):
        leaves, in_tree = tree_flatten((args, kwargs), is_leaf=_is_sparse)
        mats = [x.to_bcoo() if _is_sparse(x) and not isinstance(x, BCOO) else x for x in leaves]
        stand_ins = [ShapeDtypeStruct(x.shape, x.dtype) if isinstance(x, BCOO) else x for x in mats]

        def flat(*flat_args):
            a, kw = tree_unflatten(in_tree, flat_args)
            return f(*a, **kw)

        closed, out_shapes = make_jaxpr(flat, return_shape=True)(*stand_ins)
        values = [_SpValue(x) if isinstance(x, BCOO) else x for x in mats]
        outs = _eval_sparse(closed.jaxpr, closed.consts, values)
        outs = [x.mat if isinstance(x, _SpValue) else x for x in outs]
        return tree_unflatten(tree_structure(out_shapes), outs)

    return wrapped


# ------------------------------------------------------------------ sparse-aware autodiff


def _sparse_ad(transformation, fun, argnums, has_aux, kwargs, takes_value):
    """``transformation`` (``xform.grad``, ``jacfwd``, ...) of ``fun`` with each sparse
    argument at ``argnums`` replaced by its data: the derivative lives in the subspace of the
    sparsity pattern, and comes back as a sparse array with the argument's indices (batched
    over the output's dimensions, for a jacobian)."""
    nums = (
        (operator.index(argnums),)
        if isinstance(argnums, int)
        else tuple(map(operator.index, argnums))
    )

    @functools.wraps(fun)
    def wrapped(*args):
        # each differentiated argument as a list of leaves, a sparse leaf as its data
        trees, data_args = {}, list(args)
        for i in nums:
            leaves, tree = tree_flatten(args[i], is_leaf=_is_sparse)
            trees[i] = (leaves, tree)
            data_args[i] = [x.data if _is_sparse(x) else x for x in leaves]

        def rebuild(i, data_leaves, batched=False):
            leaves, tree = trees[i]
            out = []
            for x, d in zip(leaves, data_leaves, strict=True):
                if not _is_sparse(x):
                    out.append(d)
                    continue
                fill = functools.partial(_with_data, x)
                for _ in range(d.ndim - x.data.ndim if batched else 0):
                    fill = vmap(fill)  # a jacobian's output dims become batch dims
                out.append(fill(d))
            return tree_unflatten(tree, out)

        def of_data(*a):
            return fun(*[rebuild(i, x) if i in trees else x for i, x in enumerate(a)])

        out = transformation(of_data, argnums=argnums, has_aux=has_aux, **kwargs)(*data_args)
        # value_and_grad gives ((value, aux), grads); the others (derivs, aux)
        value, derivs = out if takes_value else (None, out)
        aux_with_derivs = has_aux and not takes_value
        if aux_with_derivs:
            derivs, aux = derivs
        if isinstance(argnums, int):
            derivs = rebuild(nums[0], derivs, batched=True)
        else:
            derivs = tuple(rebuild(i, g, batched=True) for i, g in zip(nums, derivs, strict=True))
            if len(derivs) == 1:
                derivs = derivs[0]  # as JAX's sparse AD, a one-element argnums is unwrapped
        if aux_with_derivs:
            derivs = (derivs, aux)
        return (value, derivs) if takes_value else derivs

    return wrapped


def _with_data(mat, data):
    leaves, tree = tree_flatten(mat)
    return tree_unflatten(tree, [data, *leaves[1:]])


def value_and_grad(fun, argnums=0, has_aux=False, **kwargs):
    """``xform.value_and_grad`` where sparse arguments are differentiated with respect to
    their data: the gradient of a BCOO argument is a BCOO with its indices.

    Example:
      >>> M = BCOO.fromdense(xform.numpy.eye(2))
      >>> value_and_grad(lambda m: m.sum())(M)[1].data
      Array([1., 1.], dtype=float32)
    """
    return _sparse_ad(_value_and_grad, fun, argnums, has_aux, kwargs, takes_value=True)


def grad(fun, argnums=0, has_aux=False, **kwargs):
    """``xform.grad`` where sparse arguments are differentiated with respect to their data
    (see ``value_and_grad``)."""
    return _sparse_ad(_grad, fun, argnums, has_aux, kwargs, takes_value=False)


def jacfwd(fun, argnums=0, has_aux=False, **kwargs):
    """``xform.jacfwd`` where sparse arguments are differentiated with respect to their data;
    the jacobian for a BCOO argument is a BCOO whose leading batch dimensions are the
    output's."""
    return _sparse_ad(_jacfwd, fun, argnums, has_aux, kwargs, takes_value=False)


def jacrev(fun, argnums=0, has_aux=False, **kwargs):
    """``xform.jacrev`` where sparse arguments are differentiated with respect to their data
    (see ``jacfwd``)."""
    return _sparse_ad(_jacrev, fun, argnums, has_aux, kwargs, takes_value=False)


jacobian = jacrev

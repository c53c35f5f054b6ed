"""Jacobians and Hessians: ``jacfwd``, ``jacrev`` (``jacobian``) and ``hessian``.

A Jacobian is a derivative applied to every basis vector at once: ``jacfwd`` vmaps a JVP over
the standard basis of the inputs, ``jacrev`` vmaps the pullback of one VJP over the standard
basis of the outputs. The primal computation does not depend on the basis, so under ``vmap``
it stays unbatched and runs once.
"""

import functools

import numpy as np

from xform import core, dtypes, pytree
from xform.api.autodiff import jvp, vjp
from xform.api.batching import vmap
from xform.interpret.batching import moveaxis
from xform.primitives import structural
from xform.primitives.elementwise import convert_folding_constants
from xform.traceback_util import api_boundary


def jacfwd(fun, argnums=0, has_aux=False, holomorphic=False):
    """The Jacobian of ``fun`` by forward mode: a vmapped JVP over the inputs' basis.

    The result has the output's structure outside and the differentiated arguments' inside;
    each block has shape ``out.shape + in.shape``.

    Example:
      >>> xform.jacfwd(lambda x: x ** 2)(jnp.arange(3.0))  # diag(0, 2, 4)
    """
    return _jacobian(fun, argnums, has_aux, holomorphic, forward=True)


def jacrev(fun, argnums=0, has_aux=False, holomorphic=False, allow_int=False):
    """The Jacobian of ``fun`` by reverse mode: one VJP, its pullback vmapped over the
    outputs' basis. Same result layout as ``jacfwd``."""
    return _jacobian(fun, argnums, has_aux, holomorphic, forward=False, allow_int=allow_int)


jacobian = jacrev


def hessian(fun, argnums=0, has_aux=False, holomorphic=False):
    """The Hessian of scalar ``fun``: ``jacfwd(jacrev(fun))``."""
    return jacfwd(jacrev(fun, argnums, has_aux, holomorphic), argnums, has_aux, holomorphic)


def _std_basis(avals):
    """One-hot vectors for every element of every array in ``avals``, stacked on a leading
    axis of their total size ``n``; array ``i`` holds rows ``starts[i]:starts[i] + size``."""
    sizes = [a.size for a in avals]
    n = sum(sizes)
    leaves, starts, start = [], [], 0
    for a, size in zip(avals, sizes, strict=True):
        block = np.zeros((n, size), a.dtype)
        block[start : start + size] = np.eye(size, dtype=a.dtype)
        leaves.append(block.reshape((n,) + a.shape))
        starts.append(start)
        start += size
    return leaves, starts


def _typed_as(x, example):
    """A Jacobian entry with the type of ``example`` (the output for jacfwd, the input for
    jacrev), weak type included, as JAX's: an integer output's float0 tangent is its zeros."""
    aval = core.get_aval(example)
    if getattr(x, "dtype", None) == dtypes.float0:
        zeros = structural.full(aval.shape, 0, aval.dtype)  # unbatched: vmap broadcasts it
        return convert_folding_constants(zeros, aval.dtype, aval.weak_type)
    if dtypes.is_inexact(aval.dtype) and core.get_aval(x).dtype == aval.dtype:
        return convert_folding_constants(x, aval.dtype, aval.weak_type)
    return x


def _block(batched, start, basis_aval, other_aval, basis_last):
    """The rows of ``batched`` (leading axis: basis vectors) that belong to one array of the
    basis, as a block ``out.shape + in.shape``; ``basis_last``: the basis spans the inputs."""
    rows = batched[start : start + basis_aval.size]
    if basis_last:
        rows = moveaxis(rows, 0, core.get_aval(rows).ndim - 1)
        return structural.reshape(rows, other_aval.shape + basis_aval.shape)
    return structural.reshape(rows, basis_aval.shape + other_aval.shape)


def _check_inputs(forward, holomorphic, allow_int, arg):
    """JAX's checks of the differentiated inputs' dtypes, with its messages."""
    name = "jacfwd" if forward else "jacrev"
    for leaf in pytree.tree_leaves(arg):
        dtype = core.get_aval(leaf).dtype
        if holomorphic and not dtypes.is_complex(dtype):
            raise TypeError(
                f"{name} with holomorphic=True requires inputs with complex "
                f"dtype, but got {dtype.name}."
            )
        if forward and not holomorphic and not dtypes.is_float(dtype):
            raise TypeError(
                f"jacfwd requires real-valued inputs (input dtype that is a sub-dtype of "
                f"np.floating), but got {dtype.name}. For holomorphic differentiation, pass "
                "holomorphic=True. For differentiation of non-holomorphic functions involving "
                "complex inputs or integer inputs, use jax.jvp directly."
            )
        if not forward and not dtypes.is_inexact(dtype) and not allow_int:
            raise TypeError(
                f"jacrev requires real- or complex-valued inputs (input dtype that is a "
                f"sub-dtype of np.inexact), but got {dtype.name}. If you want to use Boolean- "
                "or integer-valued inputs, use vjp or set allow_int to True."
            )


def _check_outputs(forward, holomorphic, leaves):
    name = "jacfwd" if forward else "jacrev"
    for leaf in leaves:
        dtype = core.get_aval(leaf).dtype
        if holomorphic and not dtypes.is_complex(dtype):
            raise TypeError(
                f"{name} with holomorphic=True requires outputs with complex "
                f"dtype, but got {dtype.name}."
            )
        if not forward and not holomorphic and dtypes.is_complex(dtype):
            raise TypeError(
                f"jacrev requires real-valued outputs (output dtype that is a sub-dtype of "
                f"np.floating), but got {dtype.name}. For holomorphic differentiation, pass "
                "holomorphic=True. For differentiation of non-holomorphic functions involving "
                "complex outputs, use jax.vjp directly."
            )
        if not forward and not holomorphic and not dtypes.is_inexact(dtype):
            raise TypeError(
                f"jacrev requires real-valued outputs (output dtype that is a sub-dtype of "
                f"np.floating), but got {dtype.name}. For differentiation of functions with "
                "integer outputs, use jax.vjp directly."
            )


def _jacobian(fun, argnums, has_aux, holomorphic, forward, allow_int=False):
    int_argnums = isinstance(argnums, int)
    nums = (argnums,) if int_argnums else tuple(argnums)

    @functools.wraps(fun)  # named as ``fun``, as JAX's
    @api_boundary
    def jac(*args, **kwargs):
        positions = [i % len(args) for i in nums]
        for i in positions:
            _check_inputs(forward, holomorphic, allow_int, args[i])

        def partial(*diff_args):
            full = list(args)
            for i, a in zip(positions, diff_args, strict=True):
                full[i] = a
            return fun(*full, **kwargs)

        diff_args = tuple(args[i] for i in positions)
        in_leaves, in_tree = pytree.tree_flatten(diff_args)
        in_avals = [core.get_aval(x) for x in in_leaves]
        aux = None
        if forward:
            basis, starts = _std_basis(in_avals)

            def pushforward(*tangent_leaves):
                result = jvp(
                    partial,
                    diff_args,
                    pytree.tree_unflatten(in_tree, tangent_leaves),
                    has_aux=has_aux,
                )
                tangents = pytree.tree_map(_typed_as, result[1], result[0])
                return (tangents, result[2]) if has_aux else (tangents, None)

            tangents, aux = vmap(pushforward, out_axes=(0, None))(*basis)
            t_leaves, out_tree = pytree.tree_flatten(tangents)
            _check_outputs(forward, holomorphic, t_leaves)
            out_avals = [core.ShapedArray(np.shape(t)[1:], t.dtype) for t in t_leaves]
            blocks = [
                [_block(t, s, a, o_aval, True) for s, a in zip(starts, in_avals, strict=True)]
                for t, o_aval in zip(t_leaves, out_avals, strict=True)
            ]
        else:
            outs, pullback, *rest = vjp(partial, *diff_args, has_aux=has_aux)
            aux = rest[0] if has_aux else None
            out_leaves, out_tree = pytree.tree_flatten(outs)
            _check_outputs(forward, holomorphic, out_leaves)
            out_avals = [core.get_aval(o) for o in out_leaves]
            basis, starts = _std_basis(out_avals)
            cts = vmap(
                lambda *cs: pytree.tree_map(
                    _typed_as, pullback(pytree.tree_unflatten(out_tree, cs)), diff_args
                )
            )(*basis)
            ct_leaves = pytree.tree_leaves(cts)
            blocks = [
                [_block(c, s, o_aval, a, False) for c, a in zip(ct_leaves, in_avals, strict=True)]
                for s, o_aval in zip(starts, out_avals, strict=True)
            ]
        per_output = [pytree.tree_unflatten(in_tree, b) for b in blocks]
        if int_argnums:
            per_output = [p[0] for p in per_output]
        result = pytree.tree_unflatten(out_tree, per_output)
        return (result, aux) if has_aux else result

    return jac

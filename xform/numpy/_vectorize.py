"""``vectorize``: a function on core-shaped arrays, mapped over NumPy-broadcast leading
dimensions with nested ``vmap``s (jax.numpy's semantics, gufunc signatures included).

Each broadcast dimension becomes one ``vmap``; an argument whose size there is 1 (or which
lacks the dimension) is squeezed and passed unmapped, so nothing is materialised by
broadcasting; a dimension of size 1 in every argument is put back on the result.
"""

import functools
import re

from xform.api.batching import vmap
from xform.lax import _names as lax
from xform.numpy._promote import asarray, aval_of, broadcast_shapes

__all__ = ["vectorize"]

_DIM = r"\w+"
_CORE_DIMS = rf"\((?:{_DIM}(?:,{_DIM})*)?\)"
_SIGNATURE = re.compile(rf"^{_CORE_DIMS}(?:,{_CORE_DIMS})*->{_CORE_DIMS}(?:,{_CORE_DIMS})*$")


def _parse_signature(signature):
    """``'(m,n),(n)->(m)'`` as ``([('m', 'n'), ('n',)], [('m',)])``."""
    if not _SIGNATURE.match(signature.replace(" ", "")):
        raise ValueError(f"vectorize: not a valid gufunc signature: {signature!r}")
    ins, outs = signature.replace(" ", "").split("->")
    return (
        [tuple(re.findall(_DIM, arg)) for arg in re.findall(_CORE_DIMS, part)]
        for part in (ins, outs)
    )


def _check_core_dims(sizes, shape, core_dims, context, *, is_input):
    """Records (and checks against ``sizes``) the sizes of one argument's core dimensions."""
    n = len(core_dims)
    if is_input and len(shape) < n:
        raise ValueError(
            f"input with shape {shape} does not have enough dimensions for all "
            f"core dimensions {core_dims} {context}"
        )
    if not is_input and len(shape) != n:
        raise ValueError(
            f"output shape {shape} does not match core dimensions {core_dims} {context}"
        )
    for dim, size in zip(core_dims, shape[len(shape) - n :], strict=True):
        if sizes.setdefault(dim, size) != size:
            raise ValueError(
                f"inconsistent size for core dimension {dim!r}: {size} vs {sizes[dim]} {context}"
            )


def _bind_excluded(func, excluded, args, kwargs):
    """``func`` with the excluded arguments bound, and the remaining (mapped) arguments."""
    if not excluded:
        return func, list(args), kwargs
    static_args = [
        (i, args[i]) for i in sorted(e for e in excluded if isinstance(e, int)) if i < len(args)
    ]
    static_kwargs = {k: v for k, v in kwargs.items() if k in excluded}

    def bound(*dynamic, **dynamic_kwargs):
        full = list(dynamic)
        for i, arg in static_args:
            full.insert(i, arg)
        return func(*full, **dynamic_kwargs, **static_kwargs)

    dynamic = [a for i, a in enumerate(args) if i not in excluded]
    return bound, dynamic, {k: v for k, v in kwargs.items() if k not in excluded}


def vectorize(pyfunc, *, excluded=frozenset(), signature=None):
    """A vectorized ``pyfunc`` with NumPy broadcasting, as ``jax.numpy.vectorize``.

    Args:
      pyfunc: a function of arrays (scalars, or core-shaped arrays with ``signature``).
      excluded: positions (ints) or keyword names (strs) of arguments passed as they are.
      signature: an optional gufunc signature such as ``'(n),(n)->()'``; without one,
        ``pyfunc`` takes scalars and may return any shape.

    Returns:
      A function that maps ``pyfunc`` over the broadcast leading dimensions with ``vmap``.

    Example:
      >>> dot = vectorize(lambda a, b: (a * b).sum(), signature="(n),(n)->()")
      >>> dot(xform.numpy.ones((4, 3)), xform.numpy.ones(3)).shape
      (4,)
    """
    if any(not isinstance(e, (str, int)) for e in excluded):
        raise TypeError(
            f"vectorize can only exclude integer or string arguments, but excluded={excluded!r}"
        )
    if any(isinstance(e, int) and e < 0 for e in excluded):
        raise ValueError(f"vectorize: excluded={excluded!r} contains negative numbers")

    @functools.wraps(pyfunc)
    def wrapped(*args, **kwargs):
        context = f"on vectorized function with excluded={excluded!r} and signature={signature!r}"
        func, args, kwargs = _bind_excluded(pyfunc, excluded, args, kwargs)
        if kwargs:  # keyword arguments that are not excluded are passed unmapped
            func = functools.partial(func, **kwargs)
        if signature is None:
            in_core, out_core = [()] * len(args), None
        else:
            in_core, out_core = _parse_signature(signature)
        nones = {i for i, a in enumerate(args) if a is None}
        if nones:  # None arguments are passed through, as excluded ones
            if any(in_core[i] for i in nones if i < len(in_core)):
                raise ValueError(
                    f"vectorize: cannot pass None at positions {sorted(nones)} "
                    f"with signature={signature!r}"
                )
            func, args, _ = _bind_excluded(func, nones, args, {})
            in_core = [d for i, d in enumerate(in_core) if i not in nones]
        if len(args) != len(in_core):
            raise TypeError(
                f"wrong number of positional arguments: expected {len(in_core)}, "
                f"got {len(args)} {context}"
            )
        args = [asarray(a) for a in args]
        sizes = {}
        loop_shapes = []
        for arg, core in zip(args, in_core, strict=True):
            shape = aval_of(arg).shape
            _check_core_dims(sizes, shape, core, context, is_input=True)
            loop_shapes.append(shape[: len(shape) - len(core)])
        loop_shape = broadcast_shapes(*loop_shapes)
        if out_core is not None:
            func = _checking_outputs(func, sizes, out_core, context)
        squeezed, filled = [], []
        for arg, shape in zip(args, loop_shapes, strict=True):
            filled.append((1,) * (len(loop_shape) - len(shape)) + shape)
            ones = tuple(i for i, d in enumerate(shape) if d == 1)
            squeezed.append(lax.squeeze(arg, ones) if ones else arg)
        mapped, restored = func, []
        for dim in reversed(range(len(loop_shape))):
            in_axes = tuple(None if s[dim] == 1 else 0 for s in filled)
            if all(a is None for a in in_axes):
                restored.append(dim)
            else:
                mapped = vmap(mapped, in_axes)
        result = mapped(*squeezed)
        if not restored:
            return result
        restored = tuple(sorted(restored))
        if isinstance(result, tuple):
            return tuple(lax.expand_dims(r, restored) for r in result)
        return lax.expand_dims(result, restored)

    return wrapped


def _checking_outputs(func, sizes, out_core, context):
    def checked(*args):
        out = func(*args)
        outs = out if isinstance(out, tuple) else (out,)
        if len(out_core) > 1 and not isinstance(out, tuple):
            raise TypeError(
                f"output must be a tuple when multiple outputs are expected, got {out!r} {context}"
            )
        if len(outs) != len(out_core):
            raise TypeError(
                f"wrong number of output arguments: expected {len(out_core)}, got "
                f"{len(outs)} {context}"
            )
        found = dict(sizes)
        for o, core in zip(outs, out_core, strict=True):
            _check_core_dims(found, aval_of(o).shape, core, context, is_input=False)
        return out

    return checked

"""Directions to the compiler rather than arithmetic: ``optimization_barrier``, ``composite``,
``platform_dependent``, ordering tokens (``create_token``, ``after_all``), ``dce_sink`` and
``device_put_p``.

Every primitive here computes the identity (or nothing) on its operands; what it adds is
what XLA sees: a ``stablehlo.optimization_barrier`` that stops values from being moved or
merged across it, a ``stablehlo.composite`` that names a decomposition a backend may replace
with a kernel of its own, a branch chosen per platform (``platform_index``).

Tokens: xform's values are arrays, so a token is an empty ``bool[0]`` array (``TOKEN``)
rather than a ``!stablehlo.token``. No xform primitive consumes tokens for ordering
(there are no side effects to order), so they only have to flow through programs.
"""

import enum
import functools

import numpy as np

from xform import core, dtypes, pytree
from xform.core import ShapedArray, Tracer, get_aval
from xform.errors import UnexpectedTracerError
from xform.interpret import ad, batching, dce, transpose
from xform.interpret.batching import not_mapped
from xform.interpret.staging import convert_constvars, trace_to_jaxpr
from xform.primitives.base import standard_primitive
from xform.primitives.call import call_abstract_eval
from xform.primitives.cond import switch

__all__ = [
    "optimization_barrier",
    "composite",
    "platform_dependent",
    "create_token",
    "after_all",
    "dce_sink",
]


def _no_operands_batch(prim):
    """Batch rule of a primitive without operands: never mapped (vmap hands such a primitive
    to the parent trace), registered so that every primitive has one."""

    def rule(axis, args, dims, **params):
        outs = prim.bind(*args, **params)
        outs = outs if prim.multiple_results else [outs]
        return outs, [not_mapped] * len(outs)

    batching.batch_rules[prim] = rule


def _array_leaves(name, tree):
    """The leaves of a pytree of arrays; TypeError naming ``name`` for a leaf that is not."""
    leaves, treedef = pytree.tree_flatten(tree)
    for i, leaf in enumerate(leaves):
        try:
            get_aval(leaf)
        except TypeError:
            raise TypeError(
                f"Error interpreting argument to {name} as an array: leaf {i} is "
                f"{leaf!r} of type {type(leaf).__name__}"
            ) from None
    return leaves, treedef


# --------------------------------------------------------------------------- optimization_barrier


def optimization_barrier(operand, /):
    """The identity on a pytree of arrays, which XLA may not move computations across: every
    output waits for every input, and nothing is merged (e.g. rematerialised) through it.

    Example:
      >>> a, b = optimization_barrier((x, y))
    """
    leaves, tree = _array_leaves("optimization_barrier", operand)
    outs = optimization_barrier_p.bind(*leaves)
    return pytree.tree_unflatten(tree, outs)


def _optimization_barrier_abstract_eval(*avals):
    return list(avals)


def _optimization_barrier_host(*xs):
    return list(xs)


optimization_barrier_p = standard_primitive(
    "optimization_barrier",
    _optimization_barrier_abstract_eval,
    _optimization_barrier_host,
    multiple_results=True,
)


def _barrier_over_nonzero(values):
    """A barrier on ``values`` (tangents or cotangents), zeros instantiated as JAX does, but
    the ``float0`` zeros of integer values left symbolic: they have no array to hold."""
    keep = [
        i
        for i, v in enumerate(values)
        if not (type(v) is ad.Zero and v.aval.dtype == dtypes.float0)
    ]
    outs = list(values)
    if keep:
        barred = optimization_barrier_p.bind(*[ad.instantiate(values[i]) for i in keep])
        for i, v in zip(keep, barred, strict=True):
            outs[i] = v
    return outs


def _optimization_barrier_jvp(primals, tangents):
    # As JAX: one barrier on the primals and one on the (instantiated) tangents, so that the
    # tangent barrier is linear in its operands and transposes to a barrier on cotangents.
    return optimization_barrier_p.bind(*primals), _barrier_over_nonzero(tangents)


ad.jvp_rules[optimization_barrier_p] = _optimization_barrier_jvp


def _optimization_barrier_transpose(cts, *operands):
    outs = _barrier_over_nonzero(cts)
    return [ct if transpose.is_undefined(x) else None for ct, x in zip(outs, operands, strict=True)]


transpose.transpose_rules[optimization_barrier_p] = _optimization_barrier_transpose


def _optimization_barrier_batch(axis, args, dims):
    return optimization_barrier_p.bind(*args), list(dims)


batching.batch_rules[optimization_barrier_p] = _optimization_barrier_batch


# --------------------------------------------------------------------------- composite


class _Attribute:
    """A composite attribute's value, hashable (NumPy arrays by their bytes) so it can sit
    in a primitive's params."""

    __slots__ = ("value", "_key")

    def __init__(self, value):
        self.value = value
        if isinstance(value, np.ndarray):
            self._key = (value.dtype.str, value.shape, value.tobytes())
        else:
            self._key = (type(value), value)

    def __eq__(self, other):
        return type(other) is _Attribute and self._key == other._key

    def __hash__(self):
        return hash(self._key)

    def __repr__(self):
        return repr(self.value)


def _attribute(op_name, key, value):
    if isinstance(value, Tracer):
        raise UnexpectedTracerError(
            f"Found a tracer as the attribute {key!r} of the composite op '{op_name}'. "
            "Attributes must be known when the composite is traced: pass traced values as "
            "positional arguments, and arrays as NumPy arrays."
        )
    if isinstance(value, (bool, int, float, str, np.ndarray, np.generic)):
        return _Attribute(np.asarray(value) if isinstance(value, np.generic) else value)
    raise TypeError(
        f"composite op '{op_name}': attribute {key!r} must be a bool, int, float, "
        f"str or NumPy array, got {type(value).__name__}"
    )


def composite(decomposition, name, version=0):
    """Make ``decomposition`` a composite op called ``name``: a function that, under ``jit``,
    lowers to one ``stablehlo.composite`` whose decomposition is ``decomposition`` traced into
    a private function. A compiler that knows ``name`` may replace it; XLA inlines it.

    Positional arguments of the returned function are arrays (pytrees); keyword arguments
    are static attributes of the op (bools, ints, floats, strings, NumPy arrays; None is
    dropped). As in JAX, a composite has no JVP or batching rule: use ``custom_jvp``.

    Example:
      >>> @functools.partial(composite, name="my.tangent")
      ... def tangent(x):
      ...     return xform.numpy.sin(x) / xform.numpy.cos(x)
    """

    def call(*args, **kwargs):
        attributes = tuple((k, _attribute(name, k, v)) for k, v in kwargs.items() if v is not None)
        leaves, in_tree = pytree.tree_flatten(args)
        out_tree = []

        def flat(*xs):
            out = decomposition(*pytree.tree_unflatten(in_tree, list(xs)), **kwargs)
            out_leaves, tree = pytree.tree_flatten(out)
            out_tree.append(tree)
            return out_leaves

        closed = trace_to_jaxpr(
            flat, [get_aval(x) for x in leaves], f"tracing the decomposition of composite '{name}'"
        )
        jaxpr, consts = convert_constvars(closed)
        if any(isinstance(c, Tracer) for c in consts):
            raise UnexpectedTracerError(
                f"Found a tracer as a constant in the decomposition of the composite op "
                f"'{name}': the decomposition closes over a value being transformed. Pass "
                "such values as positional arguments of the composite."
            )
        outs = composite_p.bind(
            *consts, *leaves, name=name, attributes=attributes, version=int(version), jaxpr=jaxpr
        )
        return pytree.tree_unflatten(out_tree[0], outs)

    return functools.wraps(decomposition)(call)


def _composite_abstract_eval(*avals, name, attributes, version, jaxpr):
    return call_abstract_eval(f"composite '{name}'", avals, jaxpr)


composite_p = standard_primitive("composite", _composite_abstract_eval, multiple_results=True)


def _composite_eager(*args, name, attributes, version, jaxpr):
    return core.eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, *args)


core.eager_rules[composite_p] = _composite_eager


def _composite_jvp(primals, tangents, *, name, **params):
    raise ValueError(
        f"JVP rule for composite not implemented (composite op '{name}'). You "
        "can use `xform.custom_jvp` to add support."
    )


ad.jvp_rules[composite_p] = _composite_jvp


def _composite_batch(axis, args, dims, *, name, **params):
    raise NotImplementedError(
        f"Batching rule for 'composite' not implemented (composite op '{name}'), as in JAX"
    )


batching.batch_rules[composite_p] = _composite_batch


# --------------------------------------------------------------------------- platform_dependent

_PLATFORMS = ("cpu", "cuda", "rocm", "tpu")


def platform_dependent(*args, default=None, **per_platform):
    """``per_platform[p](*args)`` for the platform ``p`` the program runs on (``cpu``,
    ``cuda``, ``rocm`` or ``tpu``), else ``default(*args)``.

    Eagerly the branch is chosen right away. Under ``jit`` every branch is traced and a
    ``platform_index`` primitive picks one: xform compiles for one backend at a time, so its
    lowering is the constant index of the default backend's branch, which XLA folds (JAX
    lowers all branches with a per-platform index: for a one-platform program it is the same).

    Example:
      >>> platform_dependent(x, cpu=lambda x: x + 1, default=lambda x: x - 1)
    """
    branches, platforms = [], []
    for pname, branch in per_platform.items():
        if not callable(branch):
            raise TypeError(f"lax.platform_dependent: the '{pname}' branch must be a callable.")
        if pname == "gpu":
            raise ValueError("Use 'cuda' or 'rocm' for lax.platform_dependent.")
        for i, b in enumerate(branches):  # one branch for the platforms sharing a function
            if b is branch:
                platforms[i] = platforms[i] + (pname,)
                break
        else:
            branches.append(branch)
            platforms.append((pname,))
    if default is not None:
        if not callable(default):
            raise TypeError("lax.platform_dependent: the 'default' branch must be a callable.")
        branches.append(default)
        platforms.append(None)
    if not branches:
        raise TypeError("lax.platform_dependent: no branches given")
    index = platform_index_p.bind(platforms=tuple(platforms))
    if not isinstance(index, Tracer):
        return branches[int(index)](*args)
    return switch(index, branches, *args)


def platform_branch(platforms, platform):
    """The index of the branch for ``platform`` in ``platforms`` (tuples of names, None for
    the default); NotImplementedError when none applies."""
    default = None
    for i, ps in enumerate(platforms):
        if ps is None:
            default = i
        elif platform in ps:
            return i
    if default is None:
        raise NotImplementedError(
            f"lax.platform_dependent: no branch for platform "
            f"'{platform}' and no default (branches for {platforms})"
        )
    return default


def _platform_index_abstract_eval(*, platforms):
    return [ShapedArray((), dtypes.int32)]


def _platform_index_host(*, platforms):
    # Host implementations run only on a CPU backend (dispatch uses them there alone).
    return [np.int32(platform_branch(platforms, "cpu"))]


platform_index_p = standard_primitive(
    "platform_index", _platform_index_abstract_eval, _platform_index_host
)
ad.defjvp_zero(platform_index_p)
_no_operands_batch(platform_index_p)


# --------------------------------------------------------------------------- tokens

TOKEN = ShapedArray((0,), dtypes.bool_)  # the abstract value of a token (see the docstring)


def create_token(_=None):
    """A token with no preconditions (the argument is ignored, as in JAX)."""
    return create_token_p.bind()


def _create_token_abstract_eval():
    return [TOKEN]


create_token_p = standard_primitive(
    "create_token", _create_token_abstract_eval, lambda: [np.zeros((0,), np.bool_)]
)
ad.defjvp_zero(create_token_p)
_no_operands_batch(create_token_p)


def after_all(*operands):
    """A token that comes after all the tokens ``operands``."""
    return after_all_p.bind(*operands)


def _after_all_abstract_eval(*avals):
    for a in avals:
        if a.shape != TOKEN.shape or a.dtype != TOKEN.dtype:
            raise TypeError(f"Arguments to after_all must be tokens, got {a.str_short()}")
    return [TOKEN]


after_all_p = standard_primitive(
    "after_all", _after_all_abstract_eval, lambda *tokens: [np.zeros((0,), np.bool_)]
)
ad.defjvp_zero(after_all_p)


def _after_all_batch(axis, args, dims):
    # Tokens order nothing in xform (see the module docstring): one unbatched token will do.
    return [after_all_p.bind()], [not_mapped]


batching.batch_rules[after_all_p] = _after_all_batch


# --------------------------------------------------------------------------- dce_sink


def dce_sink(val, *, prevent_mlir_dce=False):
    """Mark the arrays of the pytree ``val`` as used, so that dead-code elimination keeps the
    computations producing them. Returns None."""
    for leaf in _array_leaves("dce_sink", val)[0]:
        dce_sink_p.bind(leaf, prevent_mlir_dce=bool(prevent_mlir_dce))


def _dce_sink_abstract_eval(x, *, prevent_mlir_dce):
    return []


dce_sink_p = standard_primitive(
    "dce_sink", _dce_sink_abstract_eval, lambda x, **params: [], multiple_results=True
)
dce.effectful.add(dce_sink_p)


def _dce_sink_jvp(primals, tangents, **params):
    return dce_sink_p.bind(*primals, **params), []


ad.jvp_rules[dce_sink_p] = _dce_sink_jvp
transpose.transpose_rules[dce_sink_p] = lambda cts, x, **params: [None]


def _dce_sink_batch(axis, args, dims, **params):
    return dce_sink_p.bind(*args, **params), []


batching.batch_rules[dce_sink_p] = _dce_sink_batch


# --------------------------------------------------------------------------- device_put_p


class ArrayCopySemantics(enum.Enum):
    """Whether ``device_put`` copies its input (a parameter of ``device_put_p``, as JAX's)."""

    ALWAYS_COPY = 0
    REUSE_INPUT = 1
    DONATE_INPUT = 2

    def __repr__(self):
        return f"ArrayCopySemantics.{self.name}"


def device_put_traced(x, device):
    """``device_put`` of a traced value: an equation, as JAX stages it."""
    return device_put_p.bind(
        x, devices=(device,), srcs=(None,), copy_semantics=(ArrayCopySemantics.REUSE_INPUT,)
    )[0]


def _device_put_abstract_eval(*avals, devices, srcs, copy_semantics):
    return list(avals)


device_put_p = standard_primitive(
    "device_put", _device_put_abstract_eval, lambda *xs, **params: list(xs), multiple_results=True
)
ad.defjvp_linear(device_put_p)
transpose.transpose_rules[device_put_p] = lambda cts, *xs, **params: [
    ct if transpose.is_undefined(x) else None for ct, x in zip(cts, xs, strict=True)
]


def _device_put_batch(axis, args, dims, **params):
    return device_put_p.bind(*args, **params), list(dims)


batching.batch_rules[device_put_p] = _device_put_batch

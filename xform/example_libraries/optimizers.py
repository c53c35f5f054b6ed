"""``xform.example_libraries.optimizers``: first-order optimizers, as JAX ships with its examples.

An optimizer is an ``(init_fun, update_fun, get_params)`` triple:

- ``init_fun(params)`` takes a pytree of initial parameters and returns an optimizer state;
- ``update_fun(step, grads, opt_state)`` takes the step index, a gradient pytree shaped like
  the parameters and a state, and returns the next state;
- ``get_params(opt_state)`` reads the parameters back out of a state.

Each optimizer below is written for a single array and lifted to pytrees by the ``optimizer``
decorator. The state is an ``OptimizerState`` pytree (registered in the pytree registry xform
shares with JAX), so it passes through ``jit``, ``grad`` and ``vmap``. For the same inputs the
update sequences equal JAX's.

Example:
  >>> opt_init, opt_update, get_params = optimizers.adam(1e-3)
  >>> state = opt_init(params)
  >>> state = opt_update(0, xform.grad(loss)(get_params(state)), state)
"""

from __future__ import annotations

import functools
from collections import namedtuple
from collections.abc import Callable
from typing import Any, NamedTuple

from xform import numpy as jnp
from xform import pytree

__all__ = [
    "Optimizer",
    "OptimizerState",
    "JoinPoint",
    "optimizer",
    "sgd",
    "momentum",
    "nesterov",
    "adagrad",
    "rmsprop",
    "rmsprop_momentum",
    "adam",
    "adamax",
    "sm3",
    "constant",
    "exponential_decay",
    "inverse_time_decay",
    "polynomial_decay",
    "piecewise_constant",
    "make_schedule",
    "l2_norm",
    "clip_grads",
    "pack_optimizer_state",
    "unpack_optimizer_state",
]

# The state of a whole parameter pytree is kept partly flattened: the outer tree (the
# parameters') flattens to a list of leaves; each leaf's own state is an inner pytree, kept as
# its flat leaves plus its treedef. Only the flat inner leaves are pytree children.
OptimizerState = namedtuple("OptimizerState", ["packed_state", "tree_def", "subtree_defs"])
pytree.register_pytree_node(
    OptimizerState,
    lambda state: ((state.packed_state,), (state.tree_def, state.subtree_defs)),
    lambda aux, children: OptimizerState(children[0], aux[0], aux[1]),
)

Array = Any
Params = Any  # a pytree of arrays
State = Any  # one array's optimizer state (a pytree)
Updates = Params  # gradients, shaped like the parameters
Step = int
Schedule = Callable[[Step], float]
InitFn = Callable[[Params], OptimizerState]
UpdateFn = Callable[[Step, Updates, OptimizerState], OptimizerState]
ParamsFn = Callable[[OptimizerState], Params]


class Optimizer(NamedTuple):
    """An ``(init_fn, update_fn, params_fn)`` triple."""

    init_fn: InitFn
    update_fn: UpdateFn
    params_fn: ParamsFn


def unzip2(pairs):
    """Two tuples out of a sequence of pairs (tuples, so states have JAX's tree structure)."""
    firsts, seconds = [], []
    for a, b in pairs:
        firsts.append(a)
        seconds.append(b)
    return tuple(firsts), tuple(seconds)


def _flatten_states(states):
    return unzip2(pytree.tree_flatten(s) for s in states)


def _unflatten_states(subtree_defs, states_flat):
    pairs = zip(subtree_defs, states_flat, strict=True)
    return [pytree.tree_unflatten(d, leaves) for d, leaves in pairs]


def optimizer(
    opt_maker: Callable[..., tuple[Callable, Callable, Callable]],
) -> Callable[..., Optimizer]:
    """Lift an optimizer written for single arrays to one over pytrees of arrays.

    Args:
      opt_maker: a function returning an ``(init, update, get_params)`` triple where
        ``init(x0)`` gives one array's state (any pytree), ``update(i, g, state)`` the next
        state and ``get_params(state)`` the array.

    Returns:
      A function with ``opt_maker``'s signature that returns an ``Optimizer`` whose functions
      take parameter pytrees and an ``OptimizerState``.
    """

    @functools.wraps(opt_maker)
    def tree_opt_maker(*args, **kwargs):
        init, update, get_params = opt_maker(*args, **kwargs)

        @functools.wraps(init)
        def tree_init(x0_tree):
            x0_flat, tree = pytree.tree_flatten(x0_tree)
            states_flat, subtrees = _flatten_states(init(x0) for x0 in x0_flat)
            return OptimizerState(states_flat, tree, subtrees)

        @functools.wraps(update)
        def tree_update(i, grad_tree, opt_state):
            states_flat, tree, subtrees = opt_state
            grad_flat, grad_tree_def = pytree.tree_flatten(grad_tree)
            if grad_tree_def != tree:
                raise TypeError(
                    "optimizer update function was passed a gradient tree that did not match "
                    f"the parameter tree structure with which it was initialized: parameter "
                    f"tree {tree} and grad tree {grad_tree_def}."
                )
            states = _unflatten_states(subtrees, states_flat)
            new_states = [update(i, g, s) for g, s in zip(grad_flat, states, strict=True)]
            new_states_flat, new_subtrees = _flatten_states(new_states)
            for before, after in zip(subtrees, new_subtrees, strict=True):
                if after != before:
                    raise TypeError(
                        "optimizer update function produced an output structure that did not "
                        f"match its input structure: input {before} and output {after}."
                    )
            return OptimizerState(new_states_flat, tree, subtrees)

        @functools.wraps(get_params)
        def tree_get_params(opt_state):
            states_flat, tree, subtrees = opt_state
            states = _unflatten_states(subtrees, states_flat)
            return pytree.tree_unflatten(tree, [get_params(s) for s in states])

        return Optimizer(tree_init, tree_update, tree_get_params)

    return tree_opt_maker


# --------------------------------------------------------------------------- optimizers


def _first(state):
    return state[0]


@optimizer
def sgd(step_size):
    """Stochastic gradient descent: ``x <- x - step_size(i) * g``.

    Args:
      step_size: a positive scalar, or a schedule mapping the step index to one.

    Returns:
      An ``(init_fun, update_fun, get_params)`` triple.
    """
    step_size = make_schedule(step_size)

    def init(x0):
        return x0

    def update(i, g, x):
        return x - step_size(i) * g

    def get_params(x):
        return x

    return Optimizer(init, update, get_params)


@optimizer
def momentum(step_size: Schedule, mass: float):
    """SGD with (heavy-ball) momentum ``mass``.

    Args:
      step_size: a positive scalar, or a schedule mapping the step index to one.
      mass: the momentum coefficient.

    Returns:
      An ``(init_fun, update_fun, get_params)`` triple.
    """
    step_size = make_schedule(step_size)

    def init(x0):
        return x0, jnp.zeros_like(x0)

    def update(i, g, state):
        x, velocity = state
        velocity = mass * velocity + g
        return x - step_size(i) * velocity, velocity

    return init, update, _first


@optimizer
def nesterov(step_size: Schedule, mass: float):
    """SGD with Nesterov momentum ``mass``.

    Args:
      step_size: a positive scalar, or a schedule mapping the step index to one.
      mass: the momentum coefficient.

    Returns:
      An ``(init_fun, update_fun, get_params)`` triple.
    """
    step_size = make_schedule(step_size)

    def init(x0):
        return x0, jnp.zeros_like(x0)

    def update(i, g, state):
        x, velocity = state
        velocity = mass * velocity + g
        return x - step_size(i) * (mass * velocity + g), velocity

    return init, update, _first


@optimizer
def adagrad(step_size, momentum=0.9):
    """Adagrad (Duchi et al., 2011) with momentum on the scaled gradient.

    Args:
      step_size: a positive scalar, or a schedule mapping the step index to one.
      momentum: the momentum coefficient.

    Returns:
      An ``(init_fun, update_fun, get_params)`` triple.
    """
    step_size = make_schedule(step_size)

    def init(x0):
        return x0, jnp.zeros_like(x0), jnp.zeros_like(x0)

    def update(i, g, state):
        x, g_sq, m = state
        g_sq = g_sq + jnp.square(g)
        g_sq_inv_sqrt = jnp.where(g_sq > 0, 1.0 / jnp.sqrt(g_sq), 0.0)
        m = (1.0 - momentum) * (g * g_sq_inv_sqrt) + momentum * m
        return x - step_size(i) * m, g_sq, m

    return init, update, _first


@optimizer
def rmsprop(step_size, gamma=0.9, eps=1e-8):
    """RMSProp: steps scaled by a running root mean square of the gradients.

    Args:
      step_size: a positive scalar, or a schedule mapping the step index to one.
      gamma: the decay of the running mean of squared gradients.
      eps: added under the square root.

    Returns:
      An ``(init_fun, update_fun, get_params)`` triple.
    """
    step_size = make_schedule(step_size)

    def init(x0):
        return x0, jnp.zeros_like(x0)

    def update(i, g, state):
        x, avg_sq_grad = state
        avg_sq_grad = avg_sq_grad * gamma + jnp.square(g) * (1.0 - gamma)
        return x - step_size(i) * g / jnp.sqrt(avg_sq_grad + eps), avg_sq_grad

    return init, update, _first


@optimizer
def rmsprop_momentum(step_size, gamma=0.9, eps=1e-8, momentum=0.9):
    """RMSProp with momentum on the scaled step.

    Args:
      step_size: a positive scalar, or a schedule mapping the step index to one.
      gamma: the decay of the running mean of squared gradients.
      eps: added under the square root.
      momentum: the momentum coefficient.

    Returns:
      An ``(init_fun, update_fun, get_params)`` triple.
    """
    step_size = make_schedule(step_size)

    def init(x0):
        return x0, jnp.zeros_like(x0), jnp.zeros_like(x0)

    def update(i, g, state):
        x, avg_sq_grad, mom = state
        avg_sq_grad = avg_sq_grad * gamma + jnp.square(g) * (1.0 - gamma)
        mom = momentum * mom + step_size(i) * g / jnp.sqrt(avg_sq_grad + eps)
        return x - mom, avg_sq_grad, mom

    return init, update, _first


@optimizer
def adam(step_size, b1=0.9, b2=0.999, eps=1e-8):
    """Adam (Kingma and Ba, 2014).

    Args:
      step_size: a positive scalar, or a schedule mapping the step index to one.
      b1: the decay rate of the first-moment estimate.
      b2: the decay rate of the second-moment estimate.
      eps: added to the root of the second moment for stability.

    Returns:
      An ``(init_fun, update_fun, get_params)`` triple.
    """
    step_size = make_schedule(step_size)

    def init(x0):
        return x0, jnp.zeros_like(x0), jnp.zeros_like(x0)

    def update(i, g, state):
        x, m, v = state
        m = (1 - b1) * g + b1 * m
        v = (1 - b2) * jnp.square(g) + b2 * v
        # Bias corrections, with the betas in the state's dtype (not weakly typed).
        mhat = m / (1 - jnp.asarray(b1, m.dtype) ** (i + 1))
        vhat = v / (1 - jnp.asarray(b2, m.dtype) ** (i + 1))
        return x - step_size(i) * mhat / (jnp.sqrt(vhat) + eps), m, v

    return init, update, _first


@optimizer
def adamax(step_size, b1=0.9, b2=0.999, eps=1e-8):
    """AdaMax, the infinity-norm variant of Adam.

    Args:
      step_size: a positive scalar, or a schedule mapping the step index to one.
      b1: the decay rate of the first-moment estimate.
      b2: the decay rate of the weighted infinity norm.
      eps: added to the norm for stability.

    Returns:
      An ``(init_fun, update_fun, get_params)`` triple.
    """
    step_size = make_schedule(step_size)

    def init(x0):
        return x0, jnp.zeros_like(x0), jnp.zeros_like(x0)

    def update(i, g, state):
        x, m, u = state
        m = (1 - b1) * g + b1 * m
        u = jnp.maximum(b2 * u, jnp.abs(g))
        corrected_step = step_size(i) / (1 - jnp.asarray(b1, m.dtype) ** (i + 1))
        return x - corrected_step * m / (u + eps), m, u

    return init, update, _first


@optimizer
def sm3(step_size, momentum=0.9):
    """SM3 (Anil et al., 2019): Adagrad with one accumulator per axis slice.

    Args:
      step_size: a positive scalar, or a schedule mapping the step index to one.
      momentum: the momentum coefficient.

    Returns:
      An ``(init_fun, update_fun, get_params)`` triple.
    """
    step_size = make_schedule(step_size)

    def along(ndim, v, axis):
        # v (a vector along ``axis``) viewed with size-1 axes everywhere else; a gradient of
        # a scalar has ndim 0 while v has one axis: v is then indexed as is.
        index = [None] * ndim
        index[axis : axis + 1] = [slice(None)]
        return v[tuple(index)]

    def init(x0):
        x_shape = x0.shape
        x0 = jnp.atleast_1d(x0)
        accumulators = [jnp.zeros(n, dtype=x0.dtype) for n in x0.shape]
        return x0, jnp.zeros_like(x0), accumulators, x_shape

    def update(i, g, state):
        x, m, vs, x_shape = state
        vs = [along(g.ndim, v, axis) for axis, v in enumerate(vs)]
        accum = functools.reduce(jnp.minimum, vs) + jnp.square(g)
        accum_inv_sqrt = jnp.where(accum > 0, 1.0 / jnp.sqrt(accum), 0)
        m = (1.0 - momentum) * (g * accum_inv_sqrt) + momentum * m
        x = x - step_size(i) * m
        others = [tuple(a for a in range(x.ndim) if a != axis) for axis in range(x.ndim)]
        return x, m, [accum.max(axes) for axes in others], x_shape

    def get_params(state):
        x, _, _, x_shape = state
        return x.reshape(x_shape)

    return init, update, get_params


# --------------------------------------------------------------------------- schedules


def constant(step_size) -> Schedule:
    """A schedule that is ``step_size`` at every step."""

    def schedule(i):
        return step_size

    return schedule


def exponential_decay(step_size, decay_steps, decay_rate):
    """A schedule ``step_size * decay_rate ** (i / decay_steps)``."""

    def schedule(i):
        return step_size * decay_rate ** (i / decay_steps)

    return schedule


def inverse_time_decay(step_size, decay_steps, decay_rate, staircase=False):
    """A schedule ``step_size / (1 + decay_rate * i / decay_steps)``, the ratio floored when
    ``staircase``."""
    if staircase:

        def schedule(i):
            return step_size / (1 + decay_rate * jnp.floor(i / decay_steps))
    else:

        def schedule(i):
            return step_size / (1 + decay_rate * i / decay_steps)

    return schedule


def polynomial_decay(step_size, decay_steps, final_step_size, power=1.0):
    """A schedule from ``step_size`` to ``final_step_size`` over ``decay_steps`` steps along
    ``(1 - i / decay_steps) ** power``, then constant."""

    def schedule(step_num):
        step_num = jnp.minimum(step_num, decay_steps)
        step_mult = (1 - step_num / decay_steps) ** power
        return step_mult * (step_size - final_step_size) + final_step_size

    return schedule


def piecewise_constant(boundaries: Any, values: Any):
    """A schedule that is ``values[k]`` for steps in ``(boundaries[k-1], boundaries[k]]``.

    Raises:
      ValueError: if ``boundaries`` and ``values`` are not 1-D, or ``values`` is not one
        longer than ``boundaries``.
    """
    boundaries = jnp.array(boundaries)
    values = jnp.array(values)
    if not boundaries.ndim == values.ndim == 1:
        raise ValueError(
            "piecewise_constant: boundaries and values must be sequences, got "
            f"shapes {boundaries.shape} and {values.shape}"
        )
    if not boundaries.shape[0] == values.shape[0] - 1:
        raise ValueError(
            "piecewise_constant: boundaries length must be one shorter than "
            f"values length, got {boundaries.shape[0]} and {values.shape[0]}"
        )

    def schedule(i):
        return values[jnp.sum(i > boundaries)]

    return schedule


def make_schedule(scalar_or_schedule: float | Schedule) -> Schedule:
    """``scalar_or_schedule`` as a schedule: a callable is returned as is, a scalar made
    constant.

    Raises:
      TypeError: for anything else (e.g. an array with dimensions).
    """
    if callable(scalar_or_schedule):
        return scalar_or_schedule
    if jnp.ndim(scalar_or_schedule) == 0:
        return constant(scalar_or_schedule)
    raise TypeError(
        f"make_schedule: expected a scalar or a callable step size, got "
        f"{type(scalar_or_schedule)} of shape {jnp.shape(scalar_or_schedule)}"
    )


# --------------------------------------------------------------------------- utilities


def l2_norm(tree):
    """The l2 norm of all the leaves of a pytree of arrays taken together."""
    leaves = pytree.tree_leaves(tree)
    return jnp.sqrt(sum(jnp.vdot(x, x) for x in leaves))


def clip_grads(grad_tree, max_norm):
    """``grad_tree`` scaled down so that its ``l2_norm`` is at most ``max_norm``."""
    norm = l2_norm(grad_tree)

    def normalize(g):
        return jnp.where(norm < max_norm, g, g * (max_norm / norm))

    return pytree.tree_map(normalize, grad_tree)


# --------------------------------------------------------------------------- serialization


class JoinPoint:
    """Marks where an inner (per-parameter state) pytree joins the outer parameter pytree."""

    def __init__(self, subtree):
        self.subtree = subtree

    def __iter__(self):
        # Containers of arrays are iterable; so is a JoinPoint, over its one subtree.
        yield self.subtree


def unpack_optimizer_state(opt_state):
    """An ``OptimizerState`` as the parameter pytree with a ``JoinPoint`` at each leaf holding
    that parameter's state, e.g. for serialization.

    Args:
      opt_state: an ``OptimizerState``.

    Returns:
      A pytree shaped like the parameters whose leaves are ``JoinPoint``s.
    """
    states_flat, tree_def, subtree_defs = opt_state
    joins = [JoinPoint(s) for s in _unflatten_states(subtree_defs, states_flat)]
    return pytree.tree_unflatten(tree_def, joins)


def pack_optimizer_state(marked_pytree):
    """The inverse of ``unpack_optimizer_state``.

    Args:
      marked_pytree: a pytree whose leaves are ``JoinPoint``s.

    Returns:
      The equivalent ``OptimizerState``.

    Raises:
      AssertionError: if a leaf is not a ``JoinPoint`` (JAX's type for this error).
    """
    joins, tree_def = pytree.tree_flatten(marked_pytree)
    for leaf in joins:
        if not isinstance(leaf, JoinPoint):
            raise AssertionError(
                "pack_optimizer_state: every leaf of marked_pytree must be a "
                f"JoinPoint, got {type(leaf).__name__}"
            )
    states_flat, subtree_defs = _flatten_states(j.subtree for j in joins)
    return OptimizerState(states_flat, tree_def, subtree_defs)

"""Gradient checking and hypothesis strategies, for xform's tests and for yours.

``check_grads`` compares forward-mode and reverse-mode derivatives against central finite
differences (and against each other), to any order. The strategies draw arrays and pytrees of
arrays for property-based gradient tests; they need ``hypothesis`` (``pip install hypothesis``,
or xform's ``dev`` extra), which ``check_grads`` does not.
"""

import numpy as np

from xform import pytree

try:
    import hypothesis.extra.numpy as hnp
    import hypothesis.strategies as st
except ImportError:  # an optional dependency: only the strategies below use it
    hnp = st = None

from xform import dtypes
from xform.api.autodiff import jvp, vjp

_EPS = {
    np.dtype(np.float16): 1e-1,
    dtypes.bfloat16_dtype: 1e-1,
    np.dtype(np.float32): 3e-3,
    np.dtype(np.float64): 1e-6,
}
_TOL = {
    np.dtype(np.float16): 1e-1,
    dtypes.bfloat16_dtype: 1e-1,
    np.dtype(np.float32): 2e-2,
    np.dtype(np.float64): 1e-5,
}


def _dtype_of(leaves):
    """The least precise inexact dtype among ``leaves``: it sets the step and tolerance."""
    # Canonical: a Python float computes in float32 unless x64 is on, whatever NumPy says.
    leaf_dtypes = [dtypes.canonicalize(np.asarray(x).dtype) for x in leaves]
    inexact = [d for d in leaf_dtypes if dtypes.is_inexact(d)]
    return max(inexact, key=lambda d: _EPS.get(d, 1e-3), default=np.dtype(np.float32))


def _inner(a, b):
    """Sum of elementwise products over two pytrees of the same structure."""
    leaves_a, leaves_b = pytree.tree_leaves(a), pytree.tree_leaves(b)
    return sum(
        np.vdot(np.asarray(x, np.float64).ravel(), np.asarray(y, np.float64).ravel())
        for x, y in zip(leaves_a, leaves_b, strict=True)
    )


def _random_like(rng, tree):
    def draw(x):
        x = np.asarray(x)
        return rng.standard_normal(x.shape).astype(x.dtype)

    return pytree.tree_map(draw, tree)


def _scaled_add(tree, direction, scale):
    return pytree.tree_map(
        lambda x, d: (np.asarray(x, np.float64) + scale * np.asarray(d, np.float64)).astype(
            np.asarray(x).dtype
        ),
        tree,
        direction,
    )


def _tolerance(given, dtype):
    """The tolerance for ``dtype``: ``given`` (a number, or a dict by dtype as JAX's tests
    pass: ``{np.float32: 1e-2, ...}``) or the default."""
    if isinstance(given, dict):
        given = {np.dtype(k): v for k, v in given.items()}.get(np.dtype(dtype))
    return given if given is not None else _TOL.get(dtype, 1e-2)


def _max_error(got, expected, atol, rtol):
    """(largest |got - expected|, index of the first leaf out of tolerance, or None)."""
    worst, bad = 0.0, None
    pairs = zip(pytree.tree_leaves(got), pytree.tree_leaves(expected), strict=True)
    for i, (got_leaf, expected_leaf) in enumerate(pairs):
        g, e = np.asarray(got_leaf, np.float64), np.asarray(expected_leaf, np.float64)
        if g.size:
            worst = max(worst, float(np.nanmax(np.abs(g - e))))
        if bad is None and not np.allclose(g, e, atol=atol, rtol=rtol, equal_nan=True):
            bad = i
    return worst, bad


def _fail(mode, order, argnum, err, detail):
    raise AssertionError(
        f"check_grads: {mode}-mode derivative of order {order} disagrees with "
        f"{detail} for argument {argnum}: largest error {err:.3g}"
    )


def check_jvp(f, args, atol=None, rtol=None, eps=None, order=1, rng=None):
    """``jvp(f)`` agrees with central finite differences along a random direction."""
    rng = rng or np.random.default_rng(0)
    dtype = _dtype_of(pytree.tree_leaves(args))
    eps = eps or _EPS.get(dtype, 1e-3)
    atol = _tolerance(atol, dtype)
    rtol = _tolerance(rtol, dtype)
    for argnum in range(len(args)):
        direction = [
            _random_like(rng, a) if i == argnum else pytree.tree_map(np.zeros_like, a)
            for i, a in enumerate(args)
        ]
        _, tangent = jvp(f, tuple(args), tuple(direction))
        err, where = _max_error(tangent, _fd_jvp(f, args, direction, eps), atol, rtol)
        if where is not None:
            _fail("fwd", order, argnum, err, "central finite differences")


def _fd_jvp(f, args, direction, eps):
    """``f``'s derivative at ``args`` along ``direction`` by central finite differences; an
    output NaN on both sides (a constant fill, as gather's mode="fill") has derivative 0."""
    plus = f(*[_scaled_add(a, d, eps) for a, d in zip(args, direction, strict=True)])
    minus = f(*[_scaled_add(a, d, -eps) for a, d in zip(args, direction, strict=True)])

    def difference(p, m):
        p, m = np.asarray(p, np.float64), np.asarray(m, np.float64)
        return np.where(np.isnan(p) & np.isnan(m), 0.0, (p - m) / (2 * eps))

    return pytree.tree_map(difference, plus, minus)


def check_vjp(f, args, atol=None, rtol=None, eps=None, order=1, rng=None):
    """``vjp(f)`` is the transpose of ``f``'s derivative, taken by central finite
    differences as JAX's check does (so a ``custom_vjp`` function, which has no forward
    mode, can be checked): ``<ct, J t> == <J^T ct, t>``."""
    rng = rng or np.random.default_rng(1)
    dtype = _dtype_of(pytree.tree_leaves(args))
    eps = eps or _EPS.get(dtype, 1e-3)
    atol = _tolerance(atol, dtype)
    rtol = _tolerance(rtol, dtype)
    out, pullback = vjp(f, *args)
    ct = _random_like(rng, out)
    cts_in = pullback(ct)
    for argnum in range(len(args)):
        direction = [
            _random_like(rng, a) if i == argnum else pytree.tree_map(np.zeros_like, a)
            for i, a in enumerate(args)
        ]
        lhs = _inner(ct, _fd_jvp(f, args, direction, eps))
        rhs = _inner(cts_in[argnum], direction[argnum])
        err = abs(lhs - rhs)
        if not err <= atol + rtol * max(abs(lhs), abs(rhs)):
            _fail("rev", order, argnum, err, "finite differences (<ct, J t> != <J^T ct, t>)")


def check_grads(f, args, order, modes=("fwd", "rev"), atol=None, rtol=None, eps=None):
    """Check ``f``'s derivatives at ``args`` up to ``order`` in the given modes.

    Both modes are compared with central finite differences (reverse mode through the
    transpose identity); higher orders check the derivative functions themselves.
    Raises ``AssertionError`` naming the argument, the mode, the order and the largest error.

    Example:
      >>> check_grads(xform.numpy.sin, (0.5,), order=2)
    """
    args = tuple(args)
    rng = np.random.default_rng(0)

    def check(fun, order_now):
        if "fwd" in modes:
            check_jvp(fun, args, atol, rtol, eps, order_now, rng)
        if "rev" in modes:
            check_vjp(fun, args, atol, rtol, eps, order_now, rng)
        if order_now < order:
            if "fwd" in modes:
                direction = tuple(_random_like(rng, a) for a in args)
                check(lambda *xs: jvp(fun, xs, direction)[1], order_now + 1)
            if "rev" in modes:
                ct = _random_like(rng, fun(*args))
                check(lambda *xs: vjp(fun, *xs)[1](ct), order_now + 1)

    check(f, 1)


# --------------------------------------------------------------------------- strategies


def _require_hypothesis(name):
    if st is None:
        raise ImportError(
            f"xform.test_util.{name} is a hypothesis strategy and needs the "
            "`hypothesis` package: pip install hypothesis"
        )


def shapes(max_rank=3, max_side=4, min_rank=0):
    """Array shapes of rank ``min_rank..max_rank`` with sides ``1..max_side``."""
    _require_hypothesis("shapes")
    return hnp.array_shapes(min_dims=min_rank, max_dims=max_rank, min_side=1, max_side=max_side)


def arrays(dtype=np.float32, shape=None, min_value=-3.0, max_value=3.0):
    """NumPy arrays of ``dtype`` with finite values in ``[min_value, max_value]``."""
    _require_hypothesis("arrays")
    dtype = np.dtype(dtype)
    if dtypes.is_float(dtype):
        elements = st.floats(
            min_value,
            max_value,
            width=min(dtype.itemsize * 8, 64),
            allow_nan=False,
            allow_infinity=False,
        )
    elif dtypes.is_int(dtype):
        elements = st.integers(int(min_value), int(max_value))
    else:
        elements = None
    return hnp.arrays(dtype, shape if shape is not None else shapes(), elements=elements)


def pytrees(leaves=None, max_leaves=4):
    """Pytrees (nested tuples, lists and dicts) whose leaves are drawn from ``leaves``."""
    _require_hypothesis("pytrees")
    leaves = leaves if leaves is not None else arrays()
    return st.recursive(
        leaves,
        lambda children: st.one_of(
            st.lists(children, min_size=1, max_size=3),
            st.tuples(children, children),
            st.dictionaries(st.sampled_from("abc"), children, min_size=1, max_size=3),
        ),
        max_leaves=max_leaves,
    )

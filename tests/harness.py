"""Shared checks: xform against JAX (the oracle), eagerly and under jit."""

import contextlib

import hypothesis.extra.numpy as hnp
import hypothesis.strategies as st
import jax
import numpy as np
from jax import tree_util

import xform

# Tolerances per dtype, for transcendental results computed by different kernels.
_TOL = {
    np.dtype(np.float16): 2e-3,
    np.dtype(jax.numpy.bfloat16): 2e-2,
    np.dtype(np.float32): 2e-6,
    np.dtype(np.float64): 1e-13,
    np.dtype(np.complex64): 2e-6,
    np.dtype(np.complex128): 1e-13,
}


def floats(shape, elements=None):
    """A hypothesis strategy: float32 arrays of ``shape`` with values in [-4, 4]."""
    elements = st.floats(-4, 4, width=32) if elements is None else elements
    return hnp.arrays(np.float32, shape, elements=elements)


def rand(rng, shape, dtype):
    """Random test values of ``dtype``: small integers, bools, normal floats and complexes."""
    if dtype == np.bool_:
        return rng.integers(0, 2, shape).astype(bool)
    if np.issubdtype(dtype, np.unsignedinteger):
        return rng.integers(0, 10, shape).astype(dtype)
    if np.issubdtype(dtype, np.integer):
        return rng.integers(-9, 10, shape).astype(dtype)
    if np.issubdtype(dtype, np.complexfloating):
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def tolerance(dtype):
    return _TOL.get(np.dtype(dtype), 0)


def assert_same(got, expected, rtol=None, atol=None, *, check_weak_type=True, what=""):
    """Values, shapes, dtypes (and weak types) of two pytrees of arrays agree."""
    g_leaves, g_tree = tree_util.tree_flatten(got)
    e_leaves, e_tree = tree_util.tree_flatten(expected)
    assert g_tree == e_tree, f"{what}: structure {g_tree} != {e_tree}"
    for g, e in zip(g_leaves, e_leaves, strict=True):
        g_np, e_np = np.asarray(g), np.asarray(e)
        assert g_np.shape == e_np.shape, f"{what}: shape {g_np.shape} != {e_np.shape}"
        assert g_np.dtype == e_np.dtype, f"{what}: dtype {g_np.dtype} != {e_np.dtype}"
        if check_weak_type and hasattr(e, "weak_type") and hasattr(g, "weak_type"):
            assert bool(g.weak_type) == bool(e.weak_type), (
                f"{what}: weak_type {g.weak_type} != {e.weak_type}"
            )
        tol = tolerance(e_np.dtype)
        if e_np.dtype == jax.numpy.bfloat16:  # kind "V": compare as float32, bf16 tolerance
            g_np, e_np = g_np.astype(np.float32), e_np.astype(np.float32)
        r = tol if rtol is None else rtol
        a = tol if atol is None else atol
        if e_np.dtype.kind in "biuV" or (r == 0 and a == 0):
            np.testing.assert_array_equal(g_np, e_np, err_msg=what)
        else:
            np.testing.assert_allclose(
                g_np.astype(np.complex128 if e_np.dtype.kind == "c" else np.float64),
                e_np.astype(np.complex128 if e_np.dtype.kind == "c" else np.float64),
                rtol=r,
                atol=a,
                equal_nan=True,
                err_msg=what,
            )


def check_against_jax(
    xf_fn, jax_fn, *args, rtol=None, atol=None, jit=True, check_weak_type=True, **kwargs
):
    """``xf_fn(*args)`` equals ``jax_fn(*args)`` eagerly and, if ``jit``, under both jits."""
    expected = jax_fn(*args, **kwargs)
    got = xf_fn(*args, **kwargs)
    assert_same(got, expected, rtol, atol, check_weak_type=check_weak_type, what="eager")
    if jit:
        got_jit = xform.jit(lambda *a: xf_fn(*a, **kwargs))(*args)
        expected_jit = jax.jit(lambda *a: jax_fn(*a, **kwargs))(*args)
        assert_same(got_jit, expected_jit, rtol, atol, check_weak_type=check_weak_type, what="jit")
    return got


def check_vmap(
    xf_fn,
    jax_fn,
    args,
    in_axes=0,
    out_axes=0,
    *,
    rtol=None,
    atol=None,
    jit=True,
    check_weak_type=True,
    loop=True,
):
    """``xform.vmap(xf_fn)`` equals ``jax.vmap(jax_fn)`` (eagerly and, if ``jit``, under
    both jits) and, if ``loop``, a Python loop of ``xf_fn`` over the mapped axis stacked
    along ``out_axes`` (``in_axes``/``out_axes`` ints or None per argument/output here)."""
    expected = jax.vmap(jax_fn, in_axes, out_axes)(*args)
    got = xform.vmap(xf_fn, in_axes, out_axes)(*args)
    assert_same(got, expected, rtol, atol, check_weak_type=check_weak_type, what="vmap")
    if jit:
        got_jit = xform.jit(xform.vmap(xf_fn, in_axes, out_axes))(*args)
        assert_same(
            got_jit, expected, rtol, atol, check_weak_type=check_weak_type, what="jit(vmap)"
        )
    if loop:
        axes = in_axes if isinstance(in_axes, (tuple, list)) else (in_axes,) * len(args)
        size = next(np.shape(a)[ax] for a, ax in zip(args, axes, strict=True) if ax is not None)
        rows = [
            xf_fn(
                *[
                    a if ax is None else np.take(np.asarray(a), i, axis=ax)
                    for a, ax in zip(args, axes, strict=True)
                ]
            )
            for i in range(size)
        ]
        leaves = [tree_util.tree_leaves(r) for r in rows]
        outs = tree_util.tree_leaves(expected)
        o_axes = out_axes if isinstance(out_axes, (tuple, list)) else (out_axes,) * len(outs)
        for j, (e, ax) in enumerate(zip(outs, o_axes, strict=True)):
            stacked = (
                np.asarray(leaves[0][j])
                if ax is None
                else np.stack([np.asarray(r[j]) for r in leaves], axis=ax)
            )
            assert_same(
                stacked, np.asarray(e), rtol, atol, check_weak_type=False, what=f"loop, output {j}"
            )
    return got


@contextlib.contextmanager
def x64_for(dtype):
    """Both libraries' 64-bit modes on for a 64-bit ``dtype`` (nothing changes otherwise), so
    float64/complex128 values reach both intact."""
    if np.dtype(dtype) not in (np.dtype(np.float64), np.dtype(np.complex128)):
        yield
        return
    with xform.enable_x64(), jax.enable_x64(True):
        yield


def call_id(name, args, kwargs):
    """A readable test id for ``name(*args, **kwargs)``: arrays shown as dtype and shape."""

    def short(v):
        return f"{np.asarray(v).dtype}{list(np.shape(v))}" if isinstance(v, np.ndarray) else repr(v)

    words = [short(a) for a in args] + [f"{k}={short(v)}" for k, v in kwargs.items()]
    return f"{name}({', '.join(words)})"

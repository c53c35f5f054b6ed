"""xform.random's two primitives, ``threefry2x32_p`` and ``random_gamma_p``, against JAX's
(``jax.extend.random.threefry2x32_p``, ``jax.random.random_gamma_p``): bits and values
eagerly (the NumPy host impl, the compiled composition), under ``jit`` and ``vmap``; the
gamma sample's derivative against ``jax.grad``; the outlined lowering (one private function
per operand types, called at each use); and the errors."""

import collections
import re

import jax
import jax.extend.random as jex_random
import numpy as np
import pytest

import xform
from lowering.mlir import lowering_rules
from lowering.threefry import _hash_jaxpr
from tests.harness import assert_same
from xform import core
from xform import random as xr
from xform.interpret import ad, batching
from xform.primitives.threefry import threefry2x32, threefry2x32_p

_KEY = np.asarray(jax.random.PRNGKey(42))
_K1, _K2 = np.uint32(0x12345678), np.uint32(0x9ABCDEF0)
_X1 = np.arange(5, dtype=np.uint32) * np.uint32(0x01010101)
_X2 = np.arange(5, dtype=np.uint32)[::-1].copy()
_ALPHA = np.array([0.3, 1.0, 2.5, 7.0], np.float32)


def _jax_threefry(*args):
    return jex_random.threefry2x32_p.bind(*args)


def test_threefry2x32_bits_equal_jax_eagerly_and_under_jit():
    expected = jax.jit(_jax_threefry)(_K1, _K2, _X1, _X2)
    assert_same(threefry2x32(_K1, _K2, _X1, _X2), list(expected), what="eager (host impl)")
    assert_same(xform.jit(threefry2x32)(_K1, _K2, _X1, _X2), list(expected), what="jit")


def test_threefry2x32_vmap_over_keys_and_counters():
    k1, x2 = np.array([1, 2, 3], np.uint32), _X2[:3]
    # jax.vmap of JAX's own rule fails on these in_axes (its rolled CPU loop): a loop of calls
    expected = [
        np.stack(w)
        for w in zip(
            *(_jax_threefry(k1[i], _K2, _X1, np.full(5, x2[i])) for i in range(3)), strict=True
        )
    ]
    got = xform.jit(xform.vmap(threefry2x32, (0, None, None, 0)))(k1, _K2, _X1, x2)
    assert_same(got, expected)


@pytest.mark.parametrize("rolled", [True, False], ids=["rolled (CPU)", "unrolled"])
def test_both_lowered_hash_bodies_equal_the_host_impl(rolled):
    # a column of keys against a row of counters, the shapes vmap over keys makes
    args = (np.array([[1], [2], [3]], np.uint32), _K2, _X1[None], _X2[None])
    closed = _hash_jaxpr(tuple(core.get_aval(x) for x in args), rolled)
    assert_same(core.jaxpr_as_fun(closed)(*args), threefry2x32(*args))


@pytest.mark.parametrize("prim", [threefry2x32_p, xr.random_gamma_p], ids=lambda p: p.name)
def test_rules(prim):
    # neither is in xform.lax (JAX has them in jax.extend.random and jax.random), so
    # tests/test_coverage.py does not walk them: the same checks here
    for table in (core.abstract_eval_rules, lowering_rules, ad.jvp_rules, batching.batch_rules):
        assert prim in table
    # random_gamma has no host impl: eagerly its one equation is compiled, as under jit
    assert (prim in core.host_impls) == (prim is threefry2x32_p)


def test_threefry2x32_zero_tangents():
    x = xform.numpy.asarray(_X1)
    outs, tangents = ad.jvp_rules[threefry2x32_p]([_K1, _K2, x, x], [ad.Zero(None)] * 4)
    assert all(type(t) is ad.Zero for t in tangents) and len(outs) == 2


def test_threefry2x32_is_outlined_once_per_operand_types():
    def f(k1, k2, x):
        a, b = threefry2x32(k1, k2, x, x)
        c, d = threefry2x32(k2, k1, a, b)
        e, _ = threefry2x32(k1, k2, x[:3], x[:3])  # other types: a second function
        return c ^ d, e

    text = xform.jit(f).lower(_K1, _K2, _X1).as_text()
    defs = re.findall(r"func\.func private @(threefry2x32\w*)", text)
    assert len(defs) == 2, defs
    calls = collections.Counter(re.findall(r"call @(threefry2x32\w*)", text))
    assert set(calls) == set(defs) and sorted(calls.values()) == [1, 2], calls
    assert_same(xform.jit(f)(_K1, _K2, _X1), f(_K1, _K2, _X1))  # compiled == host impl


def test_split_inside_a_loop_calls_one_threefry_function():
    f = xform.jit(lambda k: xr.poisson(k, np.full(8, 3.0, np.float32)))
    text = f.lower(_KEY).as_text()
    defs = re.findall(r"func\.func private @(threefry2x32\w*)\(([^)]*)\)", text)
    assert len({types for _, types in defs}) == len(defs)  # one function per operand types
    assert text.count("call @threefry2x32") >= len(defs) >= 2


def test_threefry2x32_bad_input():
    with pytest.raises(TypeError, match="threefry2x32 must have uint32 type"):
        threefry2x32(_K1, _K2, _X1.astype(np.int32), _X2)
    with pytest.raises(TypeError, match="threefry2x32 got incompatible shapes"):
        threefry2x32(_K1, _K2, _X1, _X2[:3])


# --------------------------------------------------------------------------- random_gamma_p


_KEYS = np.asarray(jax.random.split(jax.random.PRNGKey(1), 3))
_ALPHAS = np.stack([_ALPHA, _ALPHA + 1, _ALPHA * 3])


def _gamma_suite(random, vjp, vmap, bind_log_space):
    """Everything the gamma tests compare, as one program per library (compiling a gamma
    sampler takes a second or two): ``vmap`` of ``gamma`` over keys and ``a``, and the
    primitive bound directly (log space), each with its reverse-mode derivative in ``a``
    (each draw depends on its own ``a`` only, so the VJP of ones is the gradient of the
    sum)."""

    def suite(key, alpha, keys, alphas):
        gamma, gamma_vjp = vjp(lambda a: vmap(random.gamma)(keys, a), alphas)
        loggamma, loggamma_vjp = vjp(lambda a: bind_log_space(key, a), alpha)
        return {
            "vmap_gamma": gamma,
            "loggamma": loggamma,
            "grad_vmap_gamma": gamma_vjp(alphas * 0 + 1)[0],
            "grad_loggamma": loggamma_vjp(alpha * 0 + 1)[0],
        }

    return suite


def _jax_bind(key, a):
    return jax.random.random_gamma_p.bind(jax.random.wrap_key_data(key), a, log_space=True)


def _xform_bind(key, a):
    return xr.random_gamma_p.bind(key, a, log_space=True, impl="threefry2x32")


@pytest.fixture(scope="module")
def gamma_results():
    args = (_KEY, _ALPHA, _KEYS, _ALPHAS)
    return (
        xform.jit(_gamma_suite(xr, xform.vjp, xform.vmap, _xform_bind))(*args),
        jax.jit(_gamma_suite(jax.random, jax.vjp, jax.vmap, _jax_bind))(*args),
    )


@pytest.mark.parametrize("what", ["vmap_gamma", "loggamma"])
def test_random_gamma_p_values_equal_jax(gamma_results, what):
    got, expected = gamma_results
    assert_same(got[what], expected[what], what=what)


@pytest.mark.parametrize("what", ["grad_vmap_gamma", "grad_loggamma"])
def test_gamma_grad_equals_jax(gamma_results, what):
    got, expected = gamma_results
    assert_same(got[what], expected[what], rtol=1e-5, atol=1e-6, what=what)


def test_gamma_samplers_bind_random_gamma_p():
    text = str(xform.make_jaxpr(lambda k, a: (xr.gamma(k, a), xr.loggamma(k, a)))(_KEY, _ALPHA))
    for log_space in (False, True):
        assert f"random_gamma[impl=threefry2x32 log_space={log_space}]" in text


def test_random_gamma_p_bad_input():
    with pytest.raises(TypeError, match=r"random_gamma: the key must be threefry2x32 key data"):
        xr.random_gamma_p.bind(np.zeros(2, np.int32), _ALPHA, log_space=False, impl="threefry2x32")
    with pytest.raises(TypeError, match=r"random_gamma: `a` must be a float array"):
        xr.random_gamma_p.bind(_KEY, np.ones(3, np.int32), log_space=False, impl="threefry2x32")

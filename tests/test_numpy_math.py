"""xform.numpy's math helpers (gcd/lcm, frexp/ldexp/modf/spacing, angle, log/geometric
ranges, windows, convolve/correlate, trapezoid, unwrap, cumulative_prod, matvec/vecmat,
bitwise_count) against jax.numpy: values, dtypes and weak types eagerly and under jit;
grad and vmap of a few; error types."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import xform
import xform.numpy as xnp
from tests.harness import assert_same, call_id, check_against_jax, check_vmap

_rng = np.random.default_rng(1)
I1 = np.array([12, -18, 0, 7, 0], np.int32)
I2 = np.array([8, 12, 5, 0, 0], np.int32)
# Normal floats and specials (subnormals are left out: XLA flushes them on CPU).
F = np.array([0.0, -0.0, 1.5, -3.25, 3e-3, np.inf, -np.inf, np.nan, 6e37], np.float32)
C = np.array([1 + 2j, -1, 0, 3j], np.complex64)
A = _rng.standard_normal(7).astype(np.float32)
V = _rng.standard_normal(3).astype(np.float32)
Y = _rng.standard_normal((3, 5)).astype(np.float32)
XS = np.sort(_rng.uniform(0, 5, 5)).astype(np.float32)
PHASE = np.cumsum(_rng.uniform(-4, 4, (3, 8)), axis=1).astype(np.float32)
MATS = _rng.standard_normal((2, 3, 4)).astype(np.float32)


def _case(name, *args, jit=True, **kwargs):
    return pytest.param(name, args, kwargs, jit, id=call_id(name, args, kwargs))


CASES = [
    _case("gcd", I1, I2),
    _case("lcm", I1, I2),
    _case("gcd", I1, 6, jit=False),
    _case("lcm", np.int8(4), np.int16(6), jit=False),
    _case("gcd", 12, 18, jit=False),
    _case("frexp", F),
    _case("frexp", np.arange(5), jit=False),
    _case("frexp", 3.0),
    _case("frexp", F[:8].astype(np.float16), jit=False),
    _case("frexp", F.astype(jnp.bfloat16), jit=False),
    _case("ldexp", F, np.int32(3)),
    _case("ldexp", F, np.array(-130), jit=False),
    _case("ldexp", np.float32(0.75), np.arange(-150, 150, 10)),
    _case("ldexp", 3, 2, jit=False),
    _case("ldexp", np.arange(3), 2, jit=False),
    _case("modf", F),
    _case("modf", 2.5, jit=False),
    _case("modf", np.arange(3), jit=False),
    _case("spacing", F),
    _case("spacing", F[:8].astype(np.float16), jit=False),
    _case("spacing", 1.0, jit=False),
    _case("spacing", np.arange(3), jit=False),
    *[
        _case(f, v, jit=i == 0)
        for f in ("angle", "iscomplex", "isreal")
        for i, v in enumerate((C, F[:5], np.arange(3), 2.0, 1j))
    ],
    _case("angle", C, deg=True, jit=False),
    # (jit with a static num: test_spaces_under_jit)
    _case("logspace", 0, 3, 5, jit=False),
    _case("logspace", 0.0, 2.0, 4, base=2, endpoint=False, jit=False),
    _case("logspace", np.array([0.0, 1]), np.array([2.0, 3]), 3, axis=1, jit=False),
    _case("logspace", 0, 3, 5, dtype=np.int32, jit=False),
    _case("geomspace", 1, 1000, 4, jit=False),
    _case("geomspace", -1.0, -16.0, 5, endpoint=False, jit=False),
    _case("geomspace", np.array([1.0, 2]), np.array([8.0, 32]), 3, axis=-1, jit=False),
    _case("geomspace", 1, 256, 9, dtype=np.int32, jit=False),
    *[
        _case(w, m, jit=False)
        for w in ("bartlett", "blackman", "hamming", "hanning")
        for m in (0, 1, 2, 5, 8)
    ],
    *[
        _case(f, *args, mode=mode, jit=mode == "same")
        for f in ("convolve", "correlate")
        for mode in ("full", "same", "valid")
        for args in ((A, V), (V, A), (np.arange(4), np.arange(2)))
    ],
    *[
        _case(f, (A * 1j + A[::-1]).astype(np.complex64), V + 1j, jit=False)
        for f in ("convolve", "correlate")
    ],
    *[
        _case(f, np.arange(4), np.arange(3), preferred_element_type=np.float32, jit=False)
        for f in ("convolve", "correlate")
    ],
    _case("trapezoid", Y),
    _case("trapezoid", Y, XS),
    _case("trapezoid", Y, dx=0.5),
    _case("trapezoid", Y, axis=0, jit=False),
    _case("trapezoid", Y, np.sort(Y, 0), axis=0),
    _case("trapezoid", np.arange(4), jit=False),
    _case("trapezoid", Y, dx=XS[:4], jit=False),
    _case("unwrap", PHASE),
    _case("unwrap", PHASE, axis=0, jit=False),
    _case("unwrap", PHASE, discont=4.0, jit=False),
    _case("unwrap", PHASE, period=5.0),
    _case("unwrap", np.array([0, 5, 11, 2, 9]), period=6),
    _case("cumulative_prod", A),
    _case("cumulative_prod", Y, axis=1, include_initial=True),
    _case("cumulative_prod", np.arange(1, 5, dtype=np.int8), jit=False),
    _case("cumulative_prod", Y, axis=0, dtype=np.float16, jit=False),
    _case("matvec", MATS, MATS[0, 0]),
    _case("matvec", MATS, Y[:2, :4], jit=False),
    _case("vecmat", V, MATS),
    _case("vecmat", C[:3], MATS, jit=False),
    _case("bitwise_count", np.array([0, 1, -1, 7, 255], np.int32)),
    _case("bitwise_count", np.array([0, 255], np.uint8), jit=False),
    _case("bitwise_count", np.array([True, False]), jit=False),
    _case("bitwise_count", 5, jit=False),
    _case("gradient", Y),
    _case("gradient", Y, 2.0, jit=False),
    _case("gradient", Y, axis=1, jit=False),
    _case("gradient", Y, XS, axis=1),
    _case("gradient", Y, 0.5, XS, jit=False),
    _case("gradient", np.arange(5), jit=False),
    _case("gradient", Y, axis=(), jit=False),
    _case("gradient", XS, XS, jit=False),
    _case(
        "i0",
        np.concatenate([np.linspace(-35, 35, 141), [45, 80, np.inf, np.nan]]).astype(np.float32),
    ),
    _case("i0", 2.5, jit=False),
    _case("i0", np.arange(3), jit=False),
    _case("i0", np.linspace(-9, 9, 19).astype(np.float16), jit=False),
    _case("cross", MATS[0, :, :3], MATS[1, :, :3]),
    _case("cross", MATS[0, :, :2], MATS[1, :, :2], jit=False),
    _case("cross", MATS[0, :, :2], MATS[1, :, :3], jit=False),
    _case("cross", MATS[0, :, :3].T, MATS[1, :, :3].T, axis=0),
    _case("cross", MATS[0, :, :3], MATS[1, :, :3].T, axisb=0, axisc=0, jit=False),
    _case("cross", np.arange(3), np.arange(3) + 1, jit=False),
    *[
        _case("kaiser", m, beta, jit=False)
        for m, beta in ((0, 1.0), (1, 2.0), (5, 0.0), (8, 5.0), (12, 14.0))
    ],
]


@pytest.mark.parametrize(("name", "args", "kwargs", "jit"), CASES)
def test_against_jax(name, args, kwargs, jit):
    check_against_jax(
        getattr(xnp, name), getattr(jnp, name), *args, rtol=2e-6, atol=1e-6, jit=jit, **kwargs
    )


@pytest.mark.parametrize(
    ("name", "fn"),
    [
        ("frexp", lambda m, x: m.frexp(x)[0]),
        ("ldexp", lambda m, x: m.ldexp(x, 3)),
        ("modf", lambda m, x: m.modf(x)[0] + m.modf(x)[1] * 2),
        ("angle", lambda m, x: m.angle(x + 2)),
        ("convolve", lambda m, x: m.convolve(x, m.sin(x[:3]), mode="same")),
        ("correlate", lambda m, x: m.correlate(x, m.cos(x[:2]), mode="full")),
        ("trapezoid", lambda m, x: m.trapezoid(m.sin(x), m.cumsum(m.abs(x)))),
        ("unwrap", lambda m, x: m.unwrap(3 * m.cumsum(x))),
        ("cumulative_prod", lambda m, x: m.cumulative_prod(x, include_initial=True)),
        ("matvec", lambda m, x: m.matvec(m.outer(x, x), x)),
        ("geomspace", lambda m, x: m.geomspace(m.abs(x[0]) + 1, 8.0, 4)),
        ("gradient", lambda m, x: m.gradient(x * x, m.cumsum(m.abs(x) + 1))),
        ("i0", lambda m, x: m.log(m.i0(x * 20)) / 20 + m.i0(x)),
        ("cross", lambda m, x: m.cross(x[:3], x[3:6] ** 2)),
    ],
)
def test_grad(name, fn):
    def loss(mod):
        return lambda x: mod.sum(mod.sin(fn(mod, x)))

    assert_same(xform.grad(loss(xnp))(A), jax.grad(loss(jnp))(A), 2e-5, 2e-6, what=name)


def test_spaces_under_jit():
    def spaces(mod):
        return lambda a, b: (mod.logspace(a, b, 5, base=2.0), mod.geomspace(a + 1, b, 4))

    assert_same(xform.jit(spaces(xnp))(0.5, 3.0), jax.jit(spaces(jnp))(0.5, 3.0), 2e-6, 1e-6)
    with pytest.raises(TypeError, match="num"):
        xform.jit(lambda n: xnp.logspace(0, 1, n))(3)


def test_vmap():
    check_vmap(
        lambda a, v: xnp.convolve(a, v, mode="same"),
        lambda a, v: jnp.convolve(a, v, mode="same"),
        (Y, Y[:, :3]),
        rtol=2e-6,
        atol=1e-6,
    )
    check_vmap(xnp.gcd, jnp.gcd, (I1[:, None] * np.arange(1, 4), I2[:, None] + 0 * I1[:3]))
    check_vmap(xnp.unwrap, jnp.unwrap, (PHASE,), jit=False, rtol=2e-6, atol=1e-6)


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda m: m.gcd(F, 2), ValueError, "integers"),
        (lambda m: m.lcm(F, 2), ValueError, "integers"),
        (lambda m: m.frexp(C), TypeError, "complex"),
        (lambda m: m.ldexp(F, 1.5), ValueError, "ldexp"),
        (lambda m: m.spacing(C), ValueError, "complex"),
        (lambda m: m.convolve(Y, V), ValueError, "1-dimensional"),
        (lambda m: m.convolve(A, V, mode="wide"), ValueError, "mode"),
        (lambda m: m.correlate(A, np.zeros(0)), ValueError, "empty"),
        (lambda m: m.unwrap(C), ValueError, "complex"),
        (lambda m: m.cumulative_prod(Y), ValueError, "axis"),
        (lambda m: m.cumulative_prod(2.0), ValueError, "scalar"),
        (lambda m: m.logspace(0, 1, 2.5), TypeError, "num"),
        (lambda m: m.bitwise_count(F), TypeError, "integer"),
        (lambda m: m.gradient(Y[:1], axis=0), ValueError, "too small"),
        (lambda m: m.gradient(Y, XS), ValueError, "same length"),
        (lambda m: m.gradient(Y, 1.0, 2.0, 3.0), TypeError, "spacing"),
        (lambda m: m.gradient(Y, edge_order=2), NotImplementedError, "edge_order"),
        (lambda m: m.i0(C), ValueError, "i0"),
        (lambda m: m.cross(MATS, MATS), ValueError, "2 or 3"),
    ],
)
def test_errors(call, error, match):
    with pytest.raises(error):
        call(jnp)
    with pytest.raises(error, match=match):
        call(xnp)

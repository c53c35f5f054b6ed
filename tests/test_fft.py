"""The fft family (``lax.fft`` and ``xform.numpy.fft``) against JAX: values, shapes, dtypes,
eagerly (the one equation compiled by XLA) and under jit; every norm, ``n``/``s`` cropping and
padding, axes; 64-bit types; gradients and JVPs; vmap; the StableHLO text; bad inputs."""

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import xform
import xform.numpy as xnp
from lowering import fft as fft_lowering
from lowering.mlir import lowering_rules
from tests.harness import assert_same, check_vmap, x64_for
from xform import lax

RNG = np.random.default_rng(0)
REAL_IN = {"rfft", "rfft2", "rfftn", "ihfft"}


def rand(shape, dtype):
    x = RNG.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * RNG.standard_normal(shape)
    return x.astype(dtype)


def check(xf_fn, jax_fn, *args, rtol=1e-5, atol=1e-5, jit=True):
    """``xf_fn`` eagerly and under ``xform.jit`` against ``jax.jit(jax_fn)``: JAX's eager
    path compiles every op, which would dominate this file's time."""
    expected = jax.jit(jax_fn)(*args)
    got = xf_fn(*args)
    assert_same(got, expected, rtol, atol, what="eager")
    if jit:
        assert_same(xform.jit(xf_fn)(*args), expected, rtol, atol, what="jit")
    return got


def complex_of(dtype):
    return np.complex128 if np.dtype(dtype).itemsize == 8 else np.complex64


def real_of(dtype):
    return np.float64 if np.dtype(dtype) in (np.float64, np.complex128) else np.float32


# --------------------------------------------------------------------------- the public surface


def test_every_name_of_jax_numpy_fft():
    names = [n for n in dir(jnp.fft) if not n.startswith("_")]
    missing = [n for n in names if not hasattr(xnp.fft, n)]
    assert not missing, f"xform.numpy.fft lacks {missing}"
    assert sorted(xnp.fft.__all__) == sorted(names)


def test_lax_names():
    assert lax.fft_p.name == "fft"
    assert [t.name for t in lax.FftType] == [t.name for t in jax.lax.FftType]
    assert [int(t) for t in lax.FftType] == [int(t) for t in jax.lax.FftType]


# --------------------------------------------------------------------------- lax.fft

LAX_CASES = [  # (fft_type, input shape, fft_lengths)
    ("fft", (3, 8), (8,)),
    ("ifft", (2, 3, 5), (3, 5)),
    ("FFT", (2, 2, 3, 4), (2, 3, 4)),
    ("rfft", (3, 8), (8,)),
    ("RFFT", (2, 3, 7), (3, 7)),
    ("rfft", (2, 2, 3, 4), (2, 3, 4)),
    ("irfft", (3, 5), (8,)),
    ("IRFFT", (2, 3, 4), (3, 7)),
    ("irfft", (2, 3, 3), (2, 3, 5)),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("typ, shape, lengths", LAX_CASES)
def test_lax_fft(typ, shape, lengths, dtype):
    in_dtype = dtype if typ.lower() == "rfft" else complex_of(dtype)
    x = rand(shape, in_dtype)
    with x64_for(dtype):
        expected = jax.jit(lambda a: jax.lax.fft(a, typ, lengths))(x)
        got = lax.fft(x, typ, lengths)
        jitted = xform.jit(lambda a: lax.fft(a, typ, lengths))(x)
        assert_same(got, expected, rtol=1e-5, atol=1e-5)
        # No host impl: eagerly the same XLA kernel runs, so eager equals jit bit for bit.
        np.testing.assert_array_equal(np.asarray(got), np.asarray(jitted))


def test_lax_fft_enum_and_empty_lengths():
    x = rand((2, 4), np.complex64)
    check(
        lambda a: lax.fft(a, lax.FftType.IFFT, (4,)),
        lambda a: jax.lax.fft(a, jax.lax.FftType.IFFT, (4,)),
        x,
    )
    # No lengths: the input, converted, is the result.
    check(lambda a: lax.fft(a, "fft", ()), lambda a: jax.lax.fft(a, "fft", ()), x.real.copy())


@pytest.mark.parametrize("dtype", [np.int32, np.int8, np.uint8, np.bool_, np.float16])
@pytest.mark.parametrize("typ", ["fft", "rfft"])
def test_lax_fft_promotes_like_jax(dtype, typ):
    x = RNG.integers(0, 2, (6,)) if dtype == np.bool_ else RNG.integers(0, 5, (6,))
    x = x.astype(dtype)
    if typ == "rfft" and dtype == np.float16:
        for f in (jax.lax.fft, lax.fft):
            with pytest.raises(ValueError, match="RFFT input must be float32 or float64"):
                f(x, typ, (6,))
        return
    check(lambda a: lax.fft(a, typ, (6,)), lambda a: jax.lax.fft(a, typ, (6,)), x, jit=False)


def test_lax_fft_promotes_64_bit_ints_under_x64():
    with x64_for(np.float64):
        for dtype in (np.int64, np.int32, np.bool_):
            x = np.arange(4).astype(dtype)
            for typ in ("fft", "rfft"):
                check(
                    lambda a, t=typ: lax.fft(a, t, (4,)),
                    lambda a, t=typ: jax.lax.fft(a, t, (4,)),
                    x,
                    jit=False,
                )


# --------------------------------------------------------------------------- numpy.fft


ONE_D_CASES = [  # kwargs of a one-dimensional transform of a (3, 6) array: every norm
    {},
    {"n": 4, "norm": "ortho"},
    {"n": 9, "axis": 0, "norm": "forward"},
    {"axis": -2, "norm": "backward"},
    {"n": 5, "norm": None},
]


@pytest.mark.parametrize("name", ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"])
def test_numpy_1d(name):
    dtype = np.float32 if name in REAL_IN else np.complex64
    x = rand((3, 6), dtype)
    check(
        lambda a: [getattr(xnp.fft, name)(a, **k) for k in ONE_D_CASES],
        lambda a: [getattr(jnp.fft, name)(a, **k) for k in ONE_D_CASES],
        x,
    )


ND_CASES = [  # kwargs of an n-dimensional transform of a (3, 4, 5) array: every norm
    {},
    {"axes": (0, 2), "norm": "ortho"},
    {"axes": (2, 0), "norm": "forward"},
    {"s": (2, 7), "norm": "backward"},
    {"s": (6, 2, 3), "axes": (1, 0, 2), "norm": "ortho"},
    {"s": (4,), "axes": (-2,), "norm": "forward"},
]


@pytest.mark.parametrize("name", ["fftn", "ifftn", "rfftn", "irfftn"])
def test_numpy_nd(name):
    x = rand((3, 4, 5), np.float32 if name in REAL_IN else np.complex64)
    check(
        lambda a: [getattr(xnp.fft, name)(a, **k) for k in ND_CASES],
        lambda a: [getattr(jnp.fft, name)(a, **k) for k in ND_CASES],
        x,
    )


@pytest.mark.parametrize("name", ["fft2", "ifft2", "rfft2", "irfft2"])
def test_numpy_2d(name):
    x = rand((2, 3, 6), np.float32 if name in REAL_IN else np.complex64)
    cases = ({}, {"axes": (0, 2)}, {"s": (5, 4)}, {"s": (2, 3), "axes": (2, 1), "norm": "ortho"})
    check(
        lambda a: [getattr(xnp.fft, name)(a, **k) for k in cases],
        lambda a: [getattr(jnp.fft, name)(a, **k) for k in cases],
        x,
    )


@pytest.mark.parametrize("name", ["fftn", "ifftn", "rfftn", "irfftn"])
def test_numpy_more_than_three_axes(name):
    # XLA transforms at most three axes at once: JAX splits the rest off, and so do we.
    x = rand((2, 3, 2, 3, 4, 2), np.float32 if name in REAL_IN else np.complex64)
    cases = ({}, {"axes": (5, 0, 3, 1)}, {"s": (3, 2, 2, 3, 4)})
    check(
        lambda a: [getattr(xnp.fft, name)(a, **k) for k in cases],
        lambda a: [getattr(jnp.fft, name)(a, **k) for k in cases],
        x,
    )


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_numpy_64_bit(dtype):
    with x64_for(dtype):
        x = rand((4, 6), dtype)
        names = ("fft", "ifft", "fft2", "irfft", "irfftn", "hfft")
        check(
            lambda a: [getattr(xnp.fft, f)(a) for f in names],
            lambda a: [getattr(jnp.fft, f)(a) for f in names],
            x,
        )
        x = x.real.copy()
        names = ("rfft", "rfftn", "ihfft")
        check(
            lambda a: [getattr(xnp.fft, f)(a, norm="ortho") for f in names],
            lambda a: [getattr(jnp.fft, f)(a, norm="ortho") for f in names],
            x,
        )
        assert xnp.fft.fft(x).dtype == np.complex128
        assert xnp.fft.irfft(x).dtype == np.float64


def test_numpy_input_dtypes():
    for x in (np.arange(6, dtype=np.int32), np.arange(6) % 2 == 0, np.arange(6, dtype=np.float16)):
        for name in ("fft", "ifft", "fftn", "irfft"):
            check(getattr(xnp.fft, name), getattr(jnp.fft, name), x, jit=False)
    for x in (np.arange(6, dtype=np.int32), np.arange(6, dtype=np.uint8)):
        check(xnp.fft.rfft, jnp.fft.rfft, x, jit=False)
    # A 0-d array has no axes for fftn: it is converted, not transformed.
    check(xnp.fft.fftn, jnp.fft.fftn, np.float32(2.0), jit=False)
    check(xnp.fft.irfftn, jnp.fft.irfftn, np.float32(2.0), jit=False)
    check(xnp.fft.irfft, jnp.fft.irfft, np.ones(1, np.complex64), jit=False)


def test_fftfreq_and_rfftfreq():
    cases = [
        (f, (n, d), {})
        for f in ("fftfreq", "rfftfreq")
        for n, d in ((1, 1.0), (5, 1.0), (8, 0.1), (7, 2))
    ]
    cases += [
        (f, (6,), {"dtype": dtype})
        for f in ("fftfreq", "rfftfreq")
        for dtype in (np.int32, np.float32)
    ]
    check(
        lambda: [getattr(xnp.fft, f)(*a, **k) for f, a, k in cases],
        lambda: [getattr(jnp.fft, f)(*a, **k) for f, a, k in cases],
    )
    with x64_for(np.float64):
        check(lambda: xnp.fft.fftfreq(6, 0.3), lambda: jnp.fft.fftfreq(6, 0.3), jit=False)


def test_fftshift_and_ifftshift():
    x = rand((3, 4, 5), np.float32)
    cases = [
        (f, axes) for f in ("fftshift", "ifftshift") for axes in (None, 0, -1, (0, 2), (1, 1), [2])
    ]
    check(
        lambda a: [getattr(xnp.fft, f)(a, axes) for f, axes in cases],
        lambda a: [getattr(jnp.fft, f)(a, axes) for f, axes in cases],
        x,
    )
    check(xnp.fft.fftshift, jnp.fft.fftshift, np.arange(7, dtype=np.int32))
    check(xnp.fft.ifftshift, jnp.fft.ifftshift, np.zeros((0, 3), np.float32))


# --------------------------------------------------------------------------- derivatives

GRAD_CASES = [  # (name, loss(np_module, x), input dtype, input shape)
    ("fft", lambda m, a: m.sum(m.abs(m.fft.fft(a)) ** 2), np.float32, (3, 6)),
    (
        "fft_complex",
        lambda m, a: m.sum(m.abs(m.fft.fft(a, norm="ortho")) ** 2),
        np.complex64,
        (3, 4),
    ),
    (
        "ifft",
        lambda m, a: m.sum(m.fft.ifft(a, axis=0).real * 2 + m.fft.ifft(a).imag),
        np.complex64,
        (3, 4),
    ),
    ("rfft", lambda m, a: m.sum(m.fft.rfft(a, n=8).real * m.arange(5.0)), np.float32, (3, 6)),
    ("rfft_odd", lambda m, a: m.sum(m.fft.rfft(a).imag * m.arange(3.0)), np.float32, (2, 5)),
    ("rfft2", lambda m, a: m.sum(m.fft.rfft2(a).imag ** 2), np.float32, (3, 6)),
    ("irfft", lambda m, a: m.sum(m.fft.irfft(a) * m.arange(6.0)), np.complex64, (3, 4)),
    ("irfft_odd", lambda m, a: m.sum(m.fft.irfft(a, n=7) * m.arange(7.0)), np.complex64, (3, 4)),
    ("irfftn", lambda m, a: m.sum(m.fft.irfftn(a) ** 2), np.complex64, (3, 4)),
    ("hfft", lambda m, a: m.sum(m.fft.hfft(a, norm="forward") ** 2), np.complex64, (3, 4)),
    ("ihfft", lambda m, a: m.sum(m.abs(m.fft.ihfft(a))), np.float32, (3, 5)),
]


@pytest.mark.parametrize("name, loss, dtype, shape", GRAD_CASES, ids=[c[0] for c in GRAD_CASES])
def test_grad_and_jvp(name, loss, dtype, shape):
    x = rand(shape, dtype)
    expected = jax.jit(jax.grad(lambda a: loss(jnp, a)))(x)
    got = xform.grad(lambda a: loss(xnp, a))(x)
    assert_same(got, expected, rtol=1e-5, atol=1e-5, what="grad")
    got_jit = xform.jit(xform.grad(lambda a: loss(xnp, a)))(x)
    assert_same(got_jit, expected, rtol=1e-5, atol=1e-5, what="jit(grad)")
    t = rand(shape, dtype)
    p_x, t_x = xform.jvp(lambda a: loss(xnp, a), (x,), (t,))
    p_j, t_j = jax.jit(lambda a, b: jax.jvp(lambda c: loss(jnp, c), (a,), (b,)))(x, t)
    assert_same((p_x, t_x), (p_j, t_j), rtol=1e-4, atol=1e-4, what="jvp")


@pytest.mark.parametrize("typ, shape, lengths", LAX_CASES)
def test_vjp_is_jaxs_transpose(typ, shape, lengths):
    # Complex cotangents on complex outputs, real ones on real: the transpose rules themselves.
    x = rand(shape, np.float32 if typ.lower() == "rfft" else np.complex64)
    out, f_vjp = xform.vjp(lambda a: lax.fft(a, typ, lengths), x)
    ct = rand(out.shape, out.dtype)
    (got,) = f_vjp(ct)
    (expected,) = jax.jit(lambda a, c: jax.vjp(lambda b: jax.lax.fft(b, typ, lengths), a)[1](c))(
        x, ct
    )
    assert_same(got, expected, rtol=1e-5, atol=1e-5)
    # Linear in x: the transpose satisfies <ct, f(x)> = <f^T(ct), x> (bilinear, no conj).
    lhs = np.sum(np.asarray(ct) * np.asarray(out))
    rhs = np.sum(np.asarray(got) * x)
    if typ.lower() in ("rfft", "irfft"):  # linear over the reals only
        lhs, rhs = lhs.real, rhs.real
    np.testing.assert_allclose(lhs, rhs, rtol=1e-4, atol=1e-4)


def test_second_order():
    x = rand((5,), np.float32)

    def loss(m, a):
        return m.sum(m.fft.irfft(m.fft.rfft(a) * m.fft.rfft(a)) ** 2)

    expected = jax.jit(jax.hessian(lambda a: loss(jnp, a)))(x)
    got = xform.hessian(lambda a: loss(xnp, a))(x)
    assert_same(got, expected, rtol=1e-4, atol=1e-4)


def test_grad_64_bit():
    with x64_for(np.float64):
        x = rand((3, 5), np.float64)

        def loss(m, a):
            return m.sum(m.fft.irfft(m.fft.rfft(a) * m.fft.fft(a)[..., :3], n=5) ** 2)

        expected = jax.jit(jax.grad(lambda a: loss(jnp, a)))(x)
        assert_same(xform.grad(lambda a: loss(xnp, a))(x), expected, what="grad")


# --------------------------------------------------------------------------- vmap


@pytest.mark.parametrize("name", ["fft", "rfft", "irfft", "fft2", "rfftn"])
def test_vmap_non_leading_axis(name):
    x = rand((3, 4, 6), np.float32 if name in REAL_IN else np.complex64)
    if name in ("fft2", "rfftn"):  # the batch dimension among the transformed ones
        check_vmap(
            getattr(xnp.fft, name),
            getattr(jnp.fft, name),
            (x,),
            in_axes=2,
            out_axes=1,
            rtol=1e-5,
            atol=1e-5,
            loop=False,
        )
    else:
        check_vmap(
            getattr(xnp.fft, name), getattr(jnp.fft, name), (x,), in_axes=1, rtol=1e-5, atol=1e-5
        )


def test_vmap_lax_fft_last_axis():
    x = rand((3, 5, 4), np.complex64)
    check_vmap(
        lambda a: lax.fft(a, "irfft", (3, 8)),
        lambda a: jax.lax.fft(a, "irfft", (3, 8)),
        (x,),
        in_axes=2,
        rtol=1e-5,
        atol=1e-5,
    )


# --------------------------------------------------------------------------- lowering


def _fft_ops(text):
    return re.findall(r"stablehlo\.fft .*", text)


@pytest.mark.parametrize(
    "name, dtype, shape",
    [
        ("fft", np.complex64, (3, 4)),
        ("ifft2", np.complex64, (3, 4)),
        ("rfft2", np.float32, (3, 4)),
        ("irfft", np.complex64, (3, 4)),
        ("rfftn", np.float32, (2, 3, 4)),
        ("irfftn", np.complex64, (2, 3, 4)),
    ],
)
def test_lowered_text(name, dtype, shape):
    x = np.zeros(shape, dtype)
    ours = _fft_ops(xform.jit(getattr(xnp.fft, name)).lower(x).as_text())
    theirs = _fft_ops(jax.jit(getattr(jnp.fft, name)).lower(x).as_text())
    assert ours and ours == theirs


def test_gpu_irfft_decomposition_on_cpu(monkeypatch):
    # On GPUs a multi-dimensional IRFFT lowers as IFFTs then a 1-D IRFFT (JAX's GPU rule):
    # run that lowering here, on XLA's CPU FFT, against JAX.
    monkeypatch.setitem(lowering_rules, lax.fft_p, fft_lowering.fft_lower_gpu)
    x = rand((2, 3, 4, 3), np.complex64)
    for lengths in ((4, 5), (3, 4, 4)):
        f = xform.jit(lambda a, n=lengths: lax.fft(a, "irfft", n))
        assert len(_fft_ops(f.lower(x).as_text())) == 2
        assert_same(
            f(x), jax.jit(lambda a, n=lengths: jax.lax.fft(a, "irfft", n))(x), rtol=1e-5, atol=1e-5
        )
    # Every other transform is the one op.
    f = xform.jit(lambda a: lax.fft(a, "ifft", (4, 3)))
    assert len(_fft_ops(f.lower(x).as_text())) == 1


def test_lowered_text_64_bit():
    with x64_for(np.float64):
        x = np.zeros((2, 6), np.float64)
        text = xform.jit(lambda a: lax.fft(a, "rfft", (2, 6))).lower(x).as_text()
        assert _fft_ops(text) == [
            "stablehlo.fft %arg0, type = RFFT, length = [2, 6] : "
            "(tensor<2x6xf64>) -> tensor<2x4xcomplex<f64>>"
        ]


# --------------------------------------------------------------------------- errors

C4 = np.ones(4, np.complex64)
ERRORS = [  # (call on a NumPy-like module and lax, exception type, message)
    (lambda m, lx: lx.fft(C4, "bogus", (4,)), ValueError, "Unknown FFT type 'bogus'"),
    (lambda m, lx: lx.fft(C4, 3.0, (4,)), TypeError, "Unknown FFT type value '3.0'"),
    (
        lambda m, lx: lx.fft(C4, "fft", (5,)),
        ValueError,
        r"FFT input shape \(4,\) minor dimensions must be equal to fft_lengths \(5,\)",
    ),
    (
        lambda m, lx: lx.fft(C4, "fft", (4, 4)),
        ValueError,
        r"must have at least as many input dimensions as fft_lengths \(4, 4\)",
    ),
    (
        lambda m, lx: lx.fft(C4, "rfft", (4,)),
        ValueError,
        "only real valued inputs supported for rfft",
    ),
    (
        lambda m, lx: lx.fft(np.ones((3, 4), np.complex64), "irfft", (4, 4)),
        ValueError,
        "IRFFT input shape \\(3, 4\\) minor dimensions must be equal to all except the last",
    ),
    (
        lambda m, lx: lx.fft(np.ones(4, np.float16), "rfft", (4,)),
        ValueError,
        "RFFT input must be float32 or float64, got float16",
    ),
    (lambda m, lx: m.fft.fft(np.ones(4), n=0), ValueError, "[Ss]hape should be positive"),
    (
        lambda m, lx: m.fft.fftn(np.ones((4, 4)), s=(2,), axes=(0, 1)),
        ValueError,
        "[Ss]hape and axes have different lengths",
    ),
    (
        lambda m, lx: m.fft.fftn(np.ones((4, 4)), axes=(0, 0)),
        ValueError,
        "does not support repeated axes",
    ),
    (
        lambda m, lx: m.fft.fft(np.ones((4, 4)), axis=(0, 1)),
        ValueError,
        "does not support multiple axes",
    ),
    (
        lambda m, lx: m.fft.fft2(np.ones((4, 4, 4)), axes=(0, 1, 2)),
        ValueError,
        "only supports 2 axes",
    ),
    (lambda m, lx: m.fft.fft([1.0, 2.0]), TypeError, "requires ndarray or scalar arguments"),
    (lambda m, lx: m.fft.fftshift([1.0, 2.0]), TypeError, "requires ndarray or scalar arguments"),
    (lambda m, lx: m.fft.fft(np.ones(4), norm="bogus"), ValueError, "[Ii]nvalid norm value"),
    (lambda m, lx: m.fft.fft(np.ones(4), axis=3), ValueError, "out of bounds"),
    (lambda m, lx: m.fft.fft(np.ones(())), ValueError, "out of bounds"),
    (
        lambda m, lx: m.fft.rfft(np.ones(4, np.complex64)),
        ValueError,
        "only real valued inputs supported for rfft",
    ),
    (lambda m, lx: m.fft.fftfreq([3]), ValueError, "only takes an int"),
    (lambda m, lx: m.fft.rfftfreq(3, [1.0]), ValueError, "only takes a single value"),
]


@pytest.mark.parametrize("call, exc, match", ERRORS, ids=[e[2][:30] for e in ERRORS])
def test_errors(call, exc, match):
    with pytest.raises(exc, match=match):
        call(jnp, jax.lax)
    with pytest.raises(exc, match=match):
        call(xnp, lax)
    with pytest.raises(exc, match=match):
        xform.jit(lambda: call(xnp, lax))()


def test_weak_type_passes_through_the_primitive_not_the_wrapper():
    # As in JAX: fft_p keeps its operand's weak type; lax.fft converts to a strong dtype first.
    x = xform.lax.convert_element_type(np.ones(4, np.complex64), np.complex64)
    weak = xform.core.ShapedArray((4,), np.dtype(np.complex64), True)
    (out,) = xform.core.abstract_eval_rules[lax.fft_p](
        weak, fft_type=lax.FftType.FFT, fft_lengths=(4,)
    )
    assert out.weak_type
    assert not lax.fft(x, "fft", (4,)).weak_type


def test_abstract_eval_errors_name_the_op():
    with pytest.raises(ValueError, match=r"lax\.fft \(IFFT\): IFFT input must be complex64"):
        lax.fft_p.bind(np.ones(4, np.float32), fft_type=lax.FftType.IFFT, fft_lengths=(4,))

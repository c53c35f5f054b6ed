"""xform.scipy's signal, fft, integrate, interpolate and ndimage against jax.scipy: every
public name, values (float32, float64, complex; eager and jit), gradients against
jax.grad, vmap, and JAX's exception types for bad inputs."""

import functools

import jax
import jax.scipy.fft as jfft
import jax.scipy.integrate as jintegrate
import jax.scipy.interpolate as jinterpolate
import jax.scipy.ndimage as jndimage
import jax.scipy.signal as jsignal
import numpy as np
import pytest

import xform
from tests.harness import assert_same, check_vmap, x64_for
from xform.scipy import fft as xfft
from xform.scipy import integrate as xintegrate
from xform.scipy import interpolate as xinterpolate
from xform.scipy import ndimage as xndimage
from xform.scipy import signal as xsignal

_RNG = np.random.default_rng(0)
_X = _RNG.standard_normal(12).astype(np.float32)
_K = _RNG.standard_normal(3).astype(np.float32)
_A = _RNG.standard_normal((5, 6)).astype(np.float32)
_B = _RNG.standard_normal((2, 3)).astype(np.float32)
_C = (_RNG.standard_normal((2, 3)) + 1j * _RNG.standard_normal((2, 3))).astype(np.complex64)
_S = _RNG.standard_normal((2, 40)).astype(np.float32)
_S2 = _RNG.standard_normal((2, 40)).astype(np.float32)
_GRID = (np.linspace(0, 1, 5).astype(np.float32), np.linspace(-1, 1, 6).astype(np.float32))
_PTS = _RNG.uniform(-0.2, 1.2, (7, 2)).astype(np.float32)
_COORDS = [_RNG.uniform(-2, 7, 6).astype(np.float32), _RNG.uniform(-2, 8, 6).astype(np.float32)]

_MODULES = [
    (jsignal, xsignal),
    (jfft, xfft),
    (jintegrate, xintegrate),
    (jinterpolate, xinterpolate),
    (jndimage, xndimage),
]


@pytest.mark.parametrize("jmod,xmod", _MODULES, ids=[m.__name__ for m, _ in _MODULES])
def test_every_public_name(jmod, xmod):
    names = [n for n in dir(jmod) if not n.startswith("_")]
    missing = [n for n in names if not callable(getattr(xmod, n, None))]
    assert not missing, f"{xmod.__name__} lacks {missing}"
    assert all(getattr(xmod, n).__doc__ for n in names)


def _pair(name, module_pair=(jsignal, xsignal)):
    return getattr(module_pair[1], name), getattr(module_pair[0], name)


# (test id, xform function, jax function, args, kwargs). Each runs eagerly and under jit.
_CASES = [
    ("convolve_full", *_pair("convolve"), (_X, _K), {}),
    ("convolve_same_swapped", *_pair("convolve"), (_K, _X), {"mode": "same"}),
    ("convolve_valid_fft", *_pair("convolve"), (_X, _K), {"mode": "valid", "method": "fft"}),
    ("convolve_int", *_pair("convolve"), (np.arange(5), np.arange(3)), {}),
    ("correlate_same", *_pair("correlate"), (_X, _K), {"mode": "same"}),
    ("correlate_complex", *_pair("correlate"), (_B, _C), {}),
    ("convolve2d_same", *_pair("convolve2d"), (_A, _B), {"mode": "same"}),
    ("correlate2d_full_swapped_complex", *_pair("correlate2d"), (_C, _A), {}),
    ("correlate2d_valid_swapped", *_pair("correlate2d"), (_B, _A), {"mode": "valid"}),
    ("correlate2d_same", *_pair("correlate2d"), (_A, _C), {"mode": "same"}),
    ("fftconvolve_full", *_pair("fftconvolve"), (_A, _B), {}),
    ("fftconvolve_same_complex", *_pair("fftconvolve"), (_A, _C), {"mode": "same"}),
    ("fftconvolve_axes", *_pair("fftconvolve"), (_A, _A[:, :3]), {"axes": 1}),
    ("detrend_linear_bp", *_pair("detrend"), (_A,), {"axis": 0, "bp": [2]}),
    ("detrend_constant", *_pair("detrend"), (_A,), {"type": "constant"}),
    ("stft", *_pair("stft"), (_S,), {"nperseg": 16}),
    (
        "stft_odd_linear",
        *_pair("stft"),
        (_S.T,),
        {"nperseg": 9, "nfft": 12, "boundary": "odd", "detrend": "linear", "axis": 0},
    ),
    ("istft", *_pair("istft"), (np.asarray(jsignal.stft(_S, nperseg=16)[2]),), {}),
    (
        "stft_callable_detrend",
        *_pair("stft"),
        (_S,),
        {"nperseg": 8, "detrend": lambda d: d - d.mean(-1, keepdims=True), "padded": False},
    ),
    (
        "istft_twosided_no_boundary",
        *_pair("istft"),
        (np.asarray(jsignal.stft(_S[0], nperseg=8, return_onesided=False, boundary=None)[2]),),
        {"input_onesided": False, "boundary": False},
    ),
    ("welch_twosided", *_pair("welch"), (_S,), {"nperseg": 8, "return_onesided": False}),
    ("csd_shorter_y", *_pair("csd"), (_S, _S2[:, :30]), {"nperseg": 8, "axis": -1}),
    (
        "welch_median_spectrum",
        *_pair("welch"),
        (_S,),
        {"nperseg": 16, "average": "median", "scaling": "spectrum"},
    ),
    (
        "welch_window_array",
        *_pair("welch"),
        (_S,),
        {"window": np.hanning(12).astype(np.float32), "noverlap": 3},
    ),
    ("csd", *_pair("csd"), (_S, _S2), {"nperseg": 16, "noverlap": 4}),
    ("dct", *_pair("dct", (jfft, xfft)), (_A,), {"n": 8}),
    ("dct_ortho_int", *_pair("dct", (jfft, xfft)), (np.arange(6),), {"norm": "ortho"}),
    ("idct_axis0", *_pair("idct", (jfft, xfft)), (_A,), {"axis": 0, "n": 4}),
    ("dctn_complex", *_pair("dctn", (jfft, xfft)), (_C,), {"norm": "ortho"}),
    ("idctn_s", *_pair("idctn", (jfft, xfft)), (_A,), {"s": (4, 7)}),
    ("trapezoid_x", *_pair("trapezoid", (jintegrate, xintegrate)), (_A, _A[0]), {}),
    ("trapezoid_dx", *_pair("trapezoid", (jintegrate, xintegrate)), (_A,), {"dx": 0.5, "axis": 0}),
]
# The cases that also run under xform.jit (all of them in one program, to compile once).
_JITTED = (
    "convolve_full",
    "correlate2d_full_swapped_complex",
    "fftconvolve_axes",
    "detrend_linear_bp",
    "stft_odd_linear",
    "istft",
    "csd",
    "dct",
    "idctn_s",
    "trapezoid_dx",
)


def _oracle(jf, *args, **kwargs):
    """JAX's result, computed under ``jax.jit`` (op-by-op JAX compiles every operation)."""
    return jax.jit(functools.partial(jf, **kwargs))(*args)


@functools.cache
def _expected():
    """JAX's results for every case, from one ``jax.jit`` program."""
    results = jax.jit(lambda: [jf(*args, **kwargs) for _, _, jf, args, kwargs in _CASES])()
    return dict(zip([c[0] for c in _CASES], results, strict=True))


@pytest.mark.parametrize("name,xf,jf,args,kwargs", _CASES, ids=[c[0] for c in _CASES])
def test_values(name, xf, jf, args, kwargs):
    del jf
    assert_same(xf(*args, **kwargs), _expected()[name], rtol=3e-5, atol=3e-5, what=name)


def test_values_under_jit():
    cases = [c for c in _CASES if c[0] in _JITTED]
    got = xform.jit(lambda: [xf(*args, **kwargs) for _, xf, _, args, kwargs in cases])()
    for (name, *_), g in zip(cases, got, strict=True):
        assert_same(g, _expected()[name], rtol=3e-5, atol=3e-5, what=f"jit {name}")


def test_map_coordinates_modes():
    ints = np.arange(30).reshape(5, 6)
    calls = [
        (img, order, mode)
        for order in (0, 1)
        for mode in ("constant", "nearest", "wrap", "mirror", "reflect")
        for img in (_A, ints)
    ]

    def run(m):
        return [
            m.map_coordinates(img, _COORDS, order, mode, cval=0.5) for img, order, mode in calls
        ]

    for call, g, w in zip(calls, run(xndimage), jax.jit(lambda: run(jndimage))(), strict=True):
        assert_same(g, w, rtol=1e-6, atol=1e-6, what=str(call[1:]))


def test_regular_grid_interpolator():
    values = np.stack([_A, 2 * _A], axis=-1)  # a trailing value dimension
    calls = [("linear", np.nan), ("linear", None), ("nearest", 1.5), ("nearest", None)]

    def run(m):
        return [
            m.RegularGridInterpolator(_GRID, values, method, fill_value=fill)(_PTS)
            for method, fill in calls
        ]

    want = jax.jit(lambda: run(jinterpolate))()
    for call, g, w in zip(calls, run(xinterpolate), want, strict=True):
        assert_same(g, w, rtol=1e-6, atol=1e-6, what=str(call))
    # A pytree through jit; points as a tuple of coordinate arrays.
    f = xinterpolate.RegularGridInterpolator(_GRID, values, fill_value=None)
    assert len(xform.tree_util.tree_leaves(f)) == 3
    assert_same(
        xform.jit(lambda f, p: f(p))(f, (_PTS[:, 0], _PTS[:, 1])), want[1], rtol=1e-6, atol=1e-6
    )


def test_float64():
    with x64_for(np.float64):
        x, k = _X.astype(np.float64), _K.astype(np.float64)
        a, s = _A.astype(np.float64), _S.astype(np.float64)

        def both(m, x, k, a, s):
            return (
                m[0].convolve(x, k, "same"),
                m[0].fftconvolve(x, k),
                m[1].dct(x, norm="ortho"),
                m[1].idctn(a),
                m[0].welch(s, nperseg=16),
            )

        assert_same(
            both((xsignal, xfft), x, k, a, s),
            _oracle(functools.partial(both, (jsignal, jfft)), x, k, a, s),
        )
        assert_same(xsignal.istft(xsignal.stft(s, nperseg=8)[2])[1], s)


def test_complex_signal_warns_and_goes_two_sided():
    z = (_S[0] + 1j * _S2[0]).astype(np.complex64)
    with pytest.warns(UserWarning, match="complex"):
        want = _oracle(jsignal.stft, z, nperseg=8)
    with pytest.warns(UserWarning, match="complex"):
        got = xsignal.stft(z, nperseg=8)
    assert_same(got, want, rtol=1e-5, atol=1e-5)
    with pytest.warns(UserWarning, match="nperseg=64 is greater"):
        assert xsignal.welch(_S, nperseg=64)[1].shape == (2, 21)


def test_stft_round_trip_and_vmap():
    """istft inverts stft; vmap against jax.vmap and against loops."""
    _, _, zxx = xsignal.stft(_S, nperseg=16)
    assert_same(xsignal.istft(zxx)[1], _S, rtol=1e-5, atol=1e-5)
    check_vmap(
        lambda a: xsignal.convolve(a, _K, "same"),
        lambda a: jsignal.convolve(a, _K, "same"),
        (_A,),
        rtol=1e-5,
        atol=1e-5,
        jit=False,
    )
    # vmap against a loop of the (JAX-checked) unbatched calls.
    coords = np.stack(_COORDS, axis=1)  # (6, 2): mapped over the points
    for fn, batch in [
        (lambda a: xfft.dct(a, norm="ortho"), _A),
        (lambda c: xndimage.map_coordinates(_A, [c[0], c[1]], 1), coords),
        (xinterpolate.RegularGridInterpolator(_GRID, _A), _PTS[:, None]),
        (lambda s: xsignal.welch(s, nperseg=8)[1], _S),
    ]:
        assert_same(xform.vmap(fn)(batch), np.stack([fn(b) for b in batch]), rtol=1e-6, atol=1e-6)


def _weighted_sum(out):
    """``sum(out * w)`` for a fixed, non-uniform weighting ``w``."""
    return (out * np.cos(np.arange(out.size)).reshape(out.shape).astype(np.float32)).sum()


def _losses(signal, fft, ndimage, interpolate):
    """Differentiable uses of each module, as losses of their array arguments."""
    return [
        (lambda a, b: _weighted_sum(signal.convolve(a, b, "same")), (_X, _K)),
        (lambda a, b: _weighted_sum(signal.correlate2d(a, b)), (_A, _B)),
        (lambda a, b: _weighted_sum(signal.fftconvolve(a, b)), (_A, _B)),
        (lambda a: _weighted_sum(fft.dct(a, norm="ortho")), (_A,)),
        (lambda a: _weighted_sum(fft.idctn(a)), (_A,)),
        (
            lambda img, c: _weighted_sum(ndimage.map_coordinates(img, [c, c + 1], 1, "reflect")),
            (_A, np.array([0.3, 1.7, 3.2], np.float32)),
        ),
        (
            lambda v, p: _weighted_sum(interpolate.RegularGridInterpolator(_GRID, v)(p)),
            (_A, _PTS.clip(0.05, 0.95)),
        ),
    ]


def test_grads():
    """xform.grad (eagerly) against jax.grad (all cases in one jax.jit, to compile once)."""

    def all_grads(grad, losses):
        return [grad(f, tuple(range(len(args))))(*args) for f, args in losses]

    want = jax.jit(lambda: all_grads(jax.grad, _losses(jsignal, jfft, jndimage, jinterpolate)))()
    got = all_grads(xform.grad, _losses(xsignal, xfft, xndimage, xinterpolate))
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        assert_same(g, w, rtol=2e-5, atol=2e-5, what=f"loss {i}")


_ERRORS = [
    (lambda m: m.signal.convolve(_X, _A), ValueError, "same number of dimensions"),
    (lambda m: m.signal.convolve(_X, _K, mode="bogus"), ValueError, "mode must be one of"),
    (lambda m: m.signal.convolve(_X, _K, method="bogus"), ValueError, "expected 'auto'"),
    (lambda m: m.signal.convolve(_A, _A.T), ValueError, "smaller than the other"),
    (lambda m: m.signal.correlate(_X, _A), ValueError, "same number of dimensions"),
    (lambda m: m.signal.convolve2d(_X, _K), ValueError, "only supports 2-dimensional"),
    (
        lambda m: m.signal.correlate2d(_A, _B, boundary="wrap"),
        NotImplementedError,
        "boundary='fill'",
    ),
    (lambda m: m.signal.fftconvolve(_X, _A), ValueError, "same dimensionality"),
    (lambda m: m.signal.fftconvolve(_A, _B, axes=0), ValueError, "mapped axes"),
    (lambda m: m.signal.detrend(_X, type="cubic"), ValueError, "Trend type"),
    (
        lambda m: m.signal.stft(_S, nperseg=8, noverlap=8),
        ValueError,
        "noverlap must be less than nperseg",
    ),
    (
        lambda m: m.signal.stft(_S, nperseg=8, boundary="bogus"),
        ValueError,
        "Unknown boundary option",
    ),
    (lambda m: m.signal.istft(_X), ValueError, "at least 2d"),
    (lambda m: m.signal.csd(_S, _S2, nperseg=8, average="mode"), ValueError, "average must be"),
    (lambda m: m.signal.welch(_S, nperseg=8, nfft=4), ValueError, "nfft must be greater"),
    (
        lambda m: m.signal.welch(_S, window=np.ones((2, 2), np.float32)),
        ValueError,
        "window must be 1-D",
    ),
    (lambda m: m.scipy_fft.dct(_X, type=3), NotImplementedError, "type 2"),
    (lambda m: m.scipy_fft.idct(_X, norm="forward"), ValueError, "norm='forward'"),
    (lambda m: m.scipy_fft.dctn(_A, s=(1, 2, 3)), ValueError, "at most x.ndim"),
    (lambda m: m.scipy_fft.idctn(_A, type=1), NotImplementedError, "type 2"),
    (lambda m: m.ndimage.map_coordinates(_A, [_X], 1), ValueError, "length input.ndim"),
    (lambda m: m.ndimage.map_coordinates(_A, _COORDS, 3), NotImplementedError, "order<=1"),
    (
        lambda m: m.ndimage.map_coordinates(_A, _COORDS, 1, "grid-wrap"),
        NotImplementedError,
        "support mode",
    ),
    (
        lambda m: m.interpolate.RegularGridInterpolator(_GRID, _A, "cubic"),
        ValueError,
        "is not defined",
    ),
    (
        lambda m: m.interpolate.RegularGridInterpolator(_GRID, _A, bounds_error=True),
        NotImplementedError,
        "bounds_error",
    ),
    (
        lambda m: m.interpolate.RegularGridInterpolator(_GRID + _GRID, _A),
        ValueError,
        "point arrays",
    ),
    (
        lambda m: m.interpolate.RegularGridInterpolator(_GRID, _A)(_PTS[:, :1]),
        ValueError,
        "have dimension 1",
    ),
    (lambda m: m.integrate.trapezoid(_A, _X), ValueError, "shapes"),
]


class _Jax:
    signal, scipy_fft, ndimage, interpolate, integrate = (
        jsignal,
        jfft,
        jndimage,
        jinterpolate,
        jintegrate,
    )


class _Xform:
    signal, scipy_fft, ndimage, interpolate, integrate = (
        xsignal,
        xfft,
        xndimage,
        xinterpolate,
        xintegrate,
    )


@pytest.mark.parametrize("call,exc,match", _ERRORS, ids=range(len(_ERRORS)))
def test_bad_input(call, exc, match):
    with pytest.raises(exc):  # JAX's exception type for the same input (raised while tracing)
        jax.jit(lambda: call(_Jax))()
    with pytest.raises(exc, match=match):
        call(_Xform)

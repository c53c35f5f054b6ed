"""xform.image against jax.image: resize per method (values, dtypes, antialias, grads),
scale_and_translate (values and gradients in the image, scale and translation), errors,
and the list of names."""

import jax
import numpy as np
import pytest

import xform
from tests.harness import assert_same
from xform import image

METHODS = ("nearest", "linear", "cubic", "lanczos3", "lanczos5", "cubic-pytorch", "area")
IMAGE = np.random.default_rng(0).normal(size=(5, 7, 3)).astype(np.float32)
# (method, antialias): every method antialiased, and the two whose non-antialiased path
# differs most (plain linear, and cubic-pytorch's edge padding). The output shape upsamples
# the first axis and downsamples the second.
RESIZE_CASES = [(m, True) for m in METHODS] + [("linear", False), ("cubic-pytorch", False)]


def _resize_table(module):
    def run(x):
        return {
            case: module.resize(x, (9, 4, 3), case[0], antialias=case[1]) for case in RESIZE_CASES
        }

    return run


def test_resize_matches_jax_per_method():
    expected = jax.jit(_resize_table(jax.image))(IMAGE)
    got = xform.jit(_resize_table(image))(IMAGE)
    for case, value in expected.items():
        assert_same(got[case], value, 3e-6, 2e-6, what=str(case))
    # Eagerly, with an enum method and integer input (nearest keeps the dtype).
    assert_same(
        image.resize(IMAGE, (3, 11, 3), image.ResizeMethod.LINEAR),
        jax.image.resize(IMAGE, (3, 11, 3), jax.image.ResizeMethod.LINEAR),
        3e-6,
        2e-6,
    )
    ints = np.arange(12, dtype=np.int32).reshape(3, 4)
    assert_same(image.resize(ints, (5, 2), "nearest"), jax.image.resize(ints, (5, 2), "nearest"))


def test_method_names():
    for names, method in (
        (("linear", "bilinear", "trilinear", "triangle"), "LINEAR"),
        (("cubic", "bicubic", "tricubic"), "CUBIC"),
        (("lanczos3",), "LANCZOS3"),
        (("nearest",), "NEAREST"),
    ):
        for name in names:
            assert image.ResizeMethod.from_string(name) is image.ResizeMethod[method]
            assert jax.image.ResizeMethod.from_string(name).name == method


def test_scale_and_translate_values_grads_and_vmap():
    scale = np.array([1.5, 0.7], np.float32)
    translation = np.array([0.3, -1.0], np.float32)
    w = np.random.default_rng(2).normal(size=(8, 5, 3)).astype(np.float32)

    def table(module, grad, vmap):
        def run(x, s, t):
            out = {
                m: module.scale_and_translate(x, (8, 5, 3), (0, 1), s, t, m)
                for m in ("linear", "lanczos3", "area")
            }
            out["grads cubic"] = grad(
                lambda x, s, t: (
                    module.scale_and_translate(x, (8, 5, 3), (0, 1), s, t, "cubic") * w
                ).sum(),
                (0, 1, 2),
            )(x, s, t)
            out["grad resize lanczos5"] = grad(
                lambda x: (module.resize(x, (8, 5, 3), "lanczos5") * w).sum()
            )(x)
            out["vmap cubic-pytorch"] = vmap(
                lambda y: module.resize(y, (3, 9), "cubic-pytorch", antialias=False), 2, 2
            )(x)
            return out

        return run

    expected = jax.jit(table(jax.image, jax.grad, jax.vmap))(IMAGE, scale, translation)
    got = xform.jit(table(image, xform.grad, xform.vmap))(IMAGE, scale, translation)
    assert_same(got, expected, 1e-5, 3e-6)


def test_image_errors():
    with pytest.raises(
        ValueError,
        match=r"resize: shape must have length .*\(2, 2\) vs "
        r"\(5, 7, 3\)",
    ):
        image.resize(IMAGE, (2, 2), "linear")
    with pytest.raises(ValueError, match='Unknown resize method "bogus"'):
        image.resize(IMAGE, (2, 2, 3), "bogus")
    with pytest.raises(ValueError, match="scale_and_translate: nearest"):
        image.scale_and_translate(IMAGE, (2, 2, 3), (0, 1), np.ones(2), np.zeros(2), "nearest")
    with pytest.raises(ValueError, match=r"`scale` must have shape \(2,\)"):
        image.scale_and_translate(IMAGE, (2, 2, 3), (0, 1), np.ones(3), np.zeros(2), "linear")
    with pytest.raises(TypeError, match="resize"):
        image.resize([[1.0]], (2, 2), "linear")


def test_image_names_complete():
    public = {n for n in dir(jax.image) if not n.startswith("_")}
    assert public <= set(dir(image)), sorted(public - set(dir(image)))
    assert [m.name for m in image.ResizeMethod] == [m.name for m in jax.image.ResizeMethod]

"""add_any, the sum of two tangents or cotangents (JAX's ``add_jaxvals_p``), against JAX.

Its rules one by one: the type (the first operand's, weak type included), eager values
bit-equal to ``add``'s, the compiled program, JVP, transpose and batching; the printed
programs of derivatives are compared with JAX's in tests/test_jaxpr_printing.py.
"""

import re

import jax
import ml_dtypes
import numpy as np
import pytest
from jax._src import ad_util

import xform
from tests.harness import assert_same
from xform.interpret import tape
from xform.primitives import elementwise as ew

RNG = np.random.default_rng(0)
X = RNG.normal(size=(2, 3)).astype(np.float32)
Y = RNG.normal(size=(2, 3)).astype(np.float32)


def _bits(x):
    x = np.asarray(x)
    return x.dtype, x.shape, x.tobytes()


@pytest.mark.parametrize("dtype", [np.float32, np.float16, ml_dtypes.bfloat16, np.complex64])
def test_eager_values_are_adds_bit_for_bit(dtype):
    x, y = (X * 3).astype(dtype), (Y / 7).astype(dtype)
    if dtype == np.complex64:
        x = x + 1j * y
    got = ew.add_any(x, y)
    assert _bits(got) == _bits(ew.add(x, y))
    assert _bits(got) == _bits(jax.jit(ad_util.add_jaxvals)(x, y))
    assert _bits(xform.jit(ew.add_any)(x, y)) == _bits(got)


def test_result_type_is_adds():
    # The program prints as JAX's; the result is weak when both operands are, as add's (JAX
    # gives the first operand's weak type: see the comment at add_any).
    for a, b in [(1.5, np.float32(2)), (np.float32(2), 1.5), (1.5, 2.5)]:
        ours = xform.make_jaxpr(ew.add_any)(a, b)
        assert str(ours) == str(jax.make_jaxpr(ad_util.add_jaxvals)(a, b))
        weak = isinstance(a, float) and isinstance(b, float)
        assert ours.out_avals[0].weak_type == weak
        assert ew.add_any(a, b).weak_type == weak == ew.add(a, b).weak_type


@pytest.mark.parametrize(
    "x, y",
    [(X, np.float32(1)), (X, X.T), (X, X.astype(np.float16))],
    ids=["rank0", "shapes", "dtypes"],
)
def test_operands_of_two_types_are_rejected(x, y):
    # No broadcasting and no promotion: JAX asserts (an internal check); xform says what.
    with pytest.raises(AssertionError):
        jax.make_jaxpr(ad_util.add_jaxvals)(x, y)
    with pytest.raises(
        TypeError,
        match=r"add_any requires operands of one shape and dtype, "
        r"got f32\[2,3\] and (f32\[\]|f32\[3,2\]|f16\[2,3\])",
    ):
        ew.add_any(x, y)


def test_lowered_to_stablehlo_add():
    text = xform.jit(ew.add_any).lower(X, Y).as_text()
    assert "stablehlo.add" in text
    assert text.count("stablehlo.") == jax.jit(ad_util.add_jaxvals).lower(X, Y).as_text().count(
        "stablehlo."
    )


def test_jvp_is_linear_and_transpose_copies_the_cotangent():
    def jvp(L, add):
        return lambda x, y: L.jvp(add, (x, y), (y, x))

    def vjp(L, add):
        return lambda x, y: L.vjp(add, x, y)[1](x)

    for make in (jvp, vjp):
        ours = xform.make_jaxpr(make(xform, ew.add_any))(X, Y)
        assert str(ours) == str(jax.make_jaxpr(make(jax, ad_util.add_jaxvals))(X, Y))
        for got, want in zip(
            make(xform, ew.add_any)(X, Y), make(jax, ad_util.add_jaxvals)(X, Y), strict=True
        ):
            assert_same(got, want)
    # A zero tangent is instantiated, as JAX's linear rule does.
    one = lambda L, add: lambda x, y: L.jvp(lambda a: add(a, y), (x,), (y,))  # noqa: E731
    assert str(xform.make_jaxpr(one(xform, ew.add_any))(X, Y)) == str(
        jax.make_jaxpr(one(jax, ad_util.add_jaxvals))(X, Y)
    )


@pytest.mark.parametrize("in_axes", [(0, 0), (0, 1), (1, 0), (None, 0), (1, None)])
def test_batching_moves_both_operands_to_one_dimension(in_axes):
    args = [
        np.moveaxis(X[:, :, None] * np.ones(2, np.float32), 2, d) if d is not None else X
        for d in in_axes
    ]
    ours = xform.vmap(ew.add_any, in_axes=in_axes)
    theirs = jax.vmap(ad_util.add_jaxvals, in_axes=in_axes)
    text, expected = (str(L.make_jaxpr(f)(*args)) for L, f in ((xform, ours), (jax, theirs)))
    if None in in_axes:
        # JAX's vmap writes a broadcast's dimensions as NumPy ints (xform's broadcast_batch
        # does not, for every primitive), which changes its line breaks: the equations and
        # their types are compared.
        def eqns(t):
            return re.findall(r"(\S+:\S+) = ([a-z_]+)", t)

        assert eqns(text) == eqns(expected) and eqns(text)[0][1] == "broadcast_in_dim"
    else:
        assert text == expected
    assert_same(ours(*args), theirs(*args))


def test_gradients_accumulate_with_add_any_on_the_tape_too():
    """Eager grad on the tape is bit-equal to linearize + transpose of the staged program
    (both sum cotangents with add_any), and close to JAX's, for a variable read thrice."""

    def f(x):
        return xform.numpy.sum(x * xform.numpy.sin(x) * x)

    eager = xform.grad(f)(X)
    tape.enabled = False
    try:
        staged = xform.grad(f)(X)
    finally:
        tape.enabled = True
    assert _bits(eager) == _bits(staged)
    assert "add_any" in str(xform.make_jaxpr(xform.grad(f))(X))
    want = jax.grad(lambda x: jax.numpy.sum(x * jax.numpy.sin(x) * x))(X)
    np.testing.assert_allclose(eager, want, rtol=1e-6)

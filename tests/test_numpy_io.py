"""Printing options, file and buffer I/O, fromfunction and DLPack, against jax.numpy."""

import functools

import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

import xform
import xform.numpy as xnp
from tests.harness import assert_same


def test_printing_follows_numpy_options():
    x = xnp.array([1.23456, 2.0])
    with xnp.printoptions(precision=2):
        assert repr(x) == repr(jnp.array([1.23456, 2.0])) == "Array([1.23, 2.  ], dtype=float32)"
        assert xnp.get_printoptions()["precision"] == 2
    assert xnp.array_repr is jnp.array_repr and xnp.array_str is jnp.array_str
    old = xnp.get_printoptions()
    try:
        xnp.set_printoptions(precision=1)
        assert str(x) == "[1.2 2. ]"
    finally:
        xnp.set_printoptions(**old)


def test_save_load_round_trip(tmp_path):
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    xnp.save(tmp_path / "a.npy", xnp.asarray(x))
    assert_same(xnp.load(tmp_path / "a.npy"), jnp.load(tmp_path / "a.npy"))
    xnp.save(tmp_path / "b.npy", np.ones(3, ml_dtypes.bfloat16))
    assert xnp.load(tmp_path / "b.npy").dtype == jnp.load(tmp_path / "b.npy").dtype
    xnp.savez(tmp_path / "c.npz", x=x)
    assert_same(xnp.asarray(xnp.load(tmp_path / "c.npz")["x"]), jnp.asarray(x))


def test_buffers_and_strings():
    data = np.arange(4, dtype=np.int32).tobytes()
    assert_same(
        xnp.frombuffer(data, dtype=np.int32, count=3, offset=4),
        jnp.frombuffer(data, dtype=np.int32, count=3, offset=4),
    )
    assert_same(xnp.fromstring("1 2 3", sep=" "), jnp.fromstring("1 2 3", sep=" "))
    for name in ("fromfile", "fromiter"):
        with pytest.raises(NotImplementedError, match=f"{name}.. is not implemented"):
            getattr(xnp, name)(iter([1, 2]), dtype=float)


def test_fromfunction():
    def f(i, j, scale=1):
        return (i * 10 + j) * scale

    # Keyword arguments are passed unmapped, as JAX documents (its own maps them, and fails).
    assert_same(
        xnp.fromfunction(f, (2, 3), dtype=int, scale=2),
        jnp.fromfunction(functools.partial(f, scale=2), (2, 3), dtype=int),
    )
    assert_same(xnp.fromfunction(lambda i: i / 2, (4,)), jnp.fromfunction(lambda i: i / 2, (4,)))
    with pytest.raises(TypeError, match="fromfunction: shape must be a sequence of integers"):
        xnp.fromfunction(f, (2.5, 3))


def test_from_dlpack():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    for producer in (x, jnp.asarray(x), xnp.asarray(x)):
        got = xnp.from_dlpack(producer)
        assert type(got) is xform.Array
        assert_same(got, jnp.from_dlpack(x))
    with pytest.raises(TypeError, match="from_dlpack: expected an object with a __dlpack__"):
        xnp.from_dlpack([1, 2])

"""xform.Array: the concrete array type, against jax.Array's behaviour."""

import copy
import pickle

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import xform
from xform import lax
from xform.runtime.array import from_host


@pytest.mark.parametrize(
    "value",
    [
        np.arange(3, dtype=np.float32),
        np.int32(7),
        np.array([[True, False]]),
        np.zeros((2, 0), np.float32),
    ],
)
def test_repr_like_jax(value):
    assert repr(from_host(value)) == repr(jnp.asarray(value))


def test_weak_scalar_repr():
    x = lax.add(1.0, 2.0)
    assert repr(x) == repr(jax.lax.add(1.0, 2.0)) == "Array(3., dtype=float32, weak_type=True)"


def test_protocols():
    x = from_host(np.arange(6, dtype=np.float32).reshape(2, 3))
    with pytest.raises(TypeError, match="unhashable"):
        hash(x)
    host = np.asarray(x)
    assert host.dtype == np.float32 and not host.flags.writeable
    np.testing.assert_array_equal(np.from_dlpack(x), host)
    assert x.block_until_ready() is x
    assert x.devices() == {xform.devices()[0]}
    assert (x.shape, x.ndim, x.size, x.dtype, x.nbytes) == ((2, 3), 2, 6, np.float32, 24)
    assert len(x) == 2 and [r.shape for r in x] == [(3,), (3,)]
    np.testing.assert_array_equal(list(x)[1], host[1])
    # The elements of a 1-D array are 0-d arrays, which NumPy takes as arrays (matplotlib's
    # fill_between asks np.array(..., copy=None) of them)
    first = list(xform.vmap(lambda a: a * 2)(np.arange(3.0, dtype=np.float32)))[0]
    assert np.array(first, copy=None).shape == () and float(first) == 0.0
    with pytest.raises(ValueError, match="ambiguous"):
        bool(x)
    with pytest.raises(TypeError, match="only scalar arrays"):
        float(x)
    assert float(from_host(np.float32(2.5))) == 2.5
    assert [0, 1, 2][from_host(np.int32(1))] == 1
    with pytest.raises(TypeError, match="integer scalar arrays"):
        [0, 1][from_host(np.float32(1.0))]
    y = pickle.loads(pickle.dumps(x))
    np.testing.assert_array_equal(y, host)
    assert copy.deepcopy(x) is x
    assert f"{from_host(np.float32(1.5)):.2f}" == "1.50"


def test_user_numpy_data_is_copied():
    data = np.arange(3, dtype=np.float32)
    x = from_host(data)
    data[0] = 100
    assert np.asarray(x)[0] == 0


def test_device_results_move_to_host_once():
    out = xform.jit(lax.neg)(np.arange(3, dtype=np.float32))
    assert out._buf is not None and out._host is None
    np.testing.assert_array_equal(lax.mul(out, out), np.arange(3) ** 2)  # eager, on host
    assert out._host is not None


def test_jax_arrays_are_accepted_as_inputs():
    out = xform.jit(lax.sin)(jnp.arange(3.0))
    np.testing.assert_allclose(out, np.sin(np.arange(3.0)), rtol=1e-6)

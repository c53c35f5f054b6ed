"""Keys: seeding, splitting, folding in data, raw bits; and the argument checks every sampler
shares (a key of the right shape and dtype, a shape of non-negative ints).

Keys are raw ``uint32[2]`` arrays, as JAX's legacy ``jax.random.PRNGKey``; ``key`` returns the
same raw form (xform has no extended key dtype), and ``key_data``/``wrap_key_data`` check and
pass the data through, so code written for either JAX key style runs unchanged.
"""

import operator
from collections.abc import Sequence

import numpy as np

from xform import config, core, dtypes, lax
from xform import numpy as xnp
from xform.api import jit
from xform.random import _threefry

_IMPL = "threefry2x32"


# --------------------------------------------------------------------------- argument checks


def check_key(name, key, allow_batched=False):
    """``key`` as an xform array after checking it is a ``uint32`` array ending in ``(2,)``
    (a single key unless ``allow_batched``)."""
    try:
        aval = core.get_aval(key)
    except TypeError:
        raise TypeError(f"xform.random.{name}: `key` must be a uint32 array of shape (2,) "
                        f"(from xform.random.PRNGKey), got {type(key).__name__}") from None
    if aval.ndim < 1 or aval.shape[-1:] != _threefry.KEY_SHAPE:
        raise TypeError(f"xform.random.{name}: `key` must be a uint32 array of shape (2,) "
                        f"(a threefry2x32 key), got shape {aval.shape}")
    if aval.dtype != np.uint32:
        raise TypeError(f"xform.random.{name}: `key` must have dtype uint32 (a threefry2x32 "
                        f"key), got {aval.dtype}")
    if not allow_batched and aval.ndim > 1:
        raise ValueError(f"xform.random.{name} accepts a single key, but was given a key array "
                         f"of shape {aval.shape[:-1]} != (). Use xform.vmap for batching.")
    return key if isinstance(key, core.Tracer) else xnp.asarray(key)


def canonical_shape(name, shape):
    """``shape`` as a tuple of non-negative Python ints (an int ``n`` means ``(n,)``, as in
    JAX); ``TypeError``/``ValueError`` naming the argument otherwise."""
    if isinstance(shape, (int, np.integer)) and not isinstance(shape, bool):
        shape = (shape,)
    elif isinstance(shape, np.ndarray) and shape.ndim == 1:
        shape = tuple(shape.tolist())
    if not isinstance(shape, Sequence) or isinstance(shape, str):
        raise TypeError(f"xform.random.{name}: `shape` must be a tuple of ints, got {shape!r}")
    try:
        dims = tuple(operator.index(d) for d in shape)
    except TypeError:
        raise TypeError(f"xform.random.{name}: `shape` must be a tuple of ints, got "
                        f"{shape!r}") from None
    if any(d < 0 for d in dims):
        raise ValueError(f"xform.random.{name}: `shape` must have non-negative dimensions, got "
                         f"{dims}")
    return dims


def check_shape(name, shape, *param_shapes):
    """The parameter shapes broadcast into ``shape`` without growing it."""
    if param_shapes:
        try:
            out = xnp.broadcast_shapes(shape, *param_shapes)
        except ValueError:
            out = None
        if out != shape:
            raise ValueError(f"xform.random.{name}: parameter shapes {list(param_shapes)} must "
                             f"broadcast to the `shape` argument {shape}")


def canonical_dtype(name, dtype, default, kinds, error=ValueError):
    """``dtype`` (or ``default``) canonicalized, checked to be one of ``kinds`` ("float",
    "inexact", "int", "uint")."""
    dt = dtypes.canonicalize(default if dtype is None else dtype)
    ok = {"float": dtypes.is_float(dt), "inexact": dtypes.is_inexact(dt),
          "int": dtypes.is_int(dt), "uint": dtypes.is_int(dt) and not dtypes.is_signed_int(dt)}
    if not ok[kinds]:
        what = {"float": "a float", "inexact": "a float or complex", "int": "an integer",
                "uint": "an unsigned integer"}[kinds]
        raise error(f"xform.random.{name}: `dtype` must be {what} dtype, got {dt}")
    return dt


# --------------------------------------------------------------------------- keys


def _check_impl(name, impl):
    if impl is not None and str(impl) != _IMPL:
        raise ValueError(f"xform.random.{name}: only the {_IMPL!r} PRNG is implemented, got "
                         f"impl={impl!r}")


def PRNGKey(seed, *, impl=None):  # noqa: N802  (JAX's name)
    """A key (a ``uint32[2]`` array) from an integer seed, equal to JAX's ``PRNGKey(seed)``.

    Args:
      seed: a 64- or 32-bit integer scalar (without x64, Python ints wrap to 32 bits as in
        JAX).

    Returns:
      The key, a ``uint32`` array of shape ``(2,)``.

    Example:
      >>> xform.random.PRNGKey(42)
      Array([ 0, 42], dtype=uint32)
    """
    return _seed("PRNGKey", seed, impl)


def key(seed, *, impl=None):
    """Same as ``PRNGKey``: xform's keys are raw ``uint32[2]`` arrays, never an extended
    key dtype, so ``key(s)`` equals ``key_data(jax.random.key(s))``."""
    return _seed("key", seed, impl)


def _seed(name, seed, impl):
    _check_impl(name, impl)
    if isinstance(seed, int) and not isinstance(seed, bool):
        seed = np.int64(seed)  # as JAX: overflow-checked, then narrowed by wrapping without x64
        if not config.x64_enabled():
            seed = seed.astype(np.int32)
    try:
        aval = core.get_aval(seed)
    except TypeError:
        raise TypeError(f"xform.random.{name}: `seed` must be an integer scalar, got "
                        f"{type(seed).__name__}") from None
    if aval.ndim:
        raise TypeError(f"xform.random.{name} accepts a scalar seed, but was given an array of "
                        f"shape {aval.shape} != (). Use xform.vmap for batching.")
    if not (dtypes.is_int(aval.dtype) or aval.dtype == np.bool_):
        raise TypeError(f"xform.random.{name}: `seed` must be an integer, got dtype "
                        f"{aval.dtype}")
    if not isinstance(seed, core.Tracer):
        seed = xnp.asarray(seed, aval.dtype)
    return _seed_jit(seed)


@jit
def _seed_jit(seed):
    return _threefry.seed(seed)


def key_data(keys):
    """The ``uint32[..., 2]`` data of a key array: the keys themselves, checked."""
    return check_key("key_data", keys, allow_batched=True)


def wrap_key_data(key_bits_array, *, impl=None):
    """A key array from ``uint32[..., 2]`` data: the data itself, checked."""
    _check_impl("wrap_key_data", impl)
    return check_key("wrap_key_data", key_bits_array, allow_batched=True)


def split(key, num=2):
    """Split ``key`` into ``num`` new keys (an int or a shape), bit-equal to JAX.

    Returns:
      A ``uint32[*shape, 2]`` array of keys.

    Example:
      >>> k1, k2 = xform.random.split(xform.random.PRNGKey(0))
    """
    key = check_key("split", key)
    shape = tuple(num) if isinstance(num, Sequence) else (num,)
    return _split(key, shape=canonical_shape("split", shape))


def fold_in(key, data):
    """A new key from ``key`` and a 32-bit integer scalar ``data``, bit-equal to JAX."""
    key = check_key("fold_in", key)
    if np.ndim(data) if not isinstance(data, core.Tracer) else data.ndim:
        raise TypeError(f"xform.random.fold_in accepts a scalar `data`, but was given an array "
                        f"of shape {np.shape(data)} != (). Use xform.vmap for batching.")
    if isinstance(data, int) and not isinstance(data, bool):
        dtypes.check_int_range(data, np.dtype(np.uint32), "xform.random.fold_in `data`")
        data = np.uint32(data)
    data = lax.convert_element_type(xnp.asarray(data), np.uint32)
    return _fold_in(key, data)


_split = jit(_threefry.split, static_argnames=("shape",))
_fold_in = jit(_threefry.fold_in)


def bits(key, shape=(), dtype=None):
    """Uniform random bits as unsigned integers of ``dtype`` (default uint32, uint64 under
    x64), bit-equal to JAX's ``random.bits``."""
    key = check_key("bits", key)
    default = np.uint64 if config.x64_enabled() else np.uint32
    dt = canonical_dtype("bits", dtype, default, "uint")
    return _bits(key, shape=canonical_shape("bits", shape), bit_width=dt.itemsize * 8)


@jit(static_argnames=("shape", "bit_width"))
def _bits(key, shape, bit_width):
    return _threefry.random_bits(key, bit_width, shape)

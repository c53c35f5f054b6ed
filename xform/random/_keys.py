"""Keys: PRNG implementations, typed key arrays, seeding, splitting, folding in data, raw
bits; and the argument checks every sampler shares (a valid key, a shape of non-negative
ints).

Two key styles, as in JAX:

- raw keys (``PRNGKey``): ``uint32[..., 2]`` arrays, always threefry2x32;
- typed keys (``key``, ``wrap_key_data``): a ``KeyArray`` holding the ``uint32`` key data of
  an implementation (``threefry2x32`` and ``philox4x32``: 2 words a key; ``rbg``,
  ``unsafe_rbg`` and ``threefry4x32``: 4; ``philox2x32``: 1). Its
  ``shape`` leaves out the trailing key words, it indexes and reshapes as an array of keys,
  and it is a pytree over its data, so it crosses ``jit`` (arguments and results), ``vmap``,
  ``while_loop`` and ``scan`` as the data does, with the implementation in the tree
  structure.

Every sampler turns its key into a ``KeyArray`` (a raw key is wrapped as threefry2x32) and
works on that; ``split``/``fold_in``/``clone`` hand back the style they were given.
"""

import functools
import math
import operator
from collections.abc import Sequence

import jax.dtypes
import numpy as np

from xform import config, core, dtypes, lax, pytree
from xform import numpy as xnp
from xform.api.jit import jit
from xform.numpy._keys import KeyArrayBase, apply_to_keys
from xform.primitives import rng
from xform.random import _philox, _threefry, _threefry4x32

# --------------------------------------------------------------------------- implementations


class PRNGImpl:
    """A PRNG implementation: key data of ``key_shape`` uint32 words, and its seed, split,
    fold-in and random-bits functions on that data (compositions of ``xform.lax``)."""

    __slots__ = ("name", "tag", "key_shape", "seed", "split", "fold_in", "random_bits")

    def __init__(self, name, tag, key_shape, seed, split, fold_in, random_bits):
        self.name, self.tag, self.key_shape = name, tag, key_shape
        self.seed, self.split, self.fold_in, self.random_bits = seed, split, fold_in, random_bits
        rng.key_shapes[name] = key_shape  # random_gamma_p's abstract evaluation reads it

    def __repr__(self):
        return f"PRNGImpl({self.name!r})"


def _rbg_seed(seed):
    half = _threefry.seed(seed)
    return lax.concatenate([half, half], 0)


def _halves(key):
    return lax.slice(key, (0,), (2,)), lax.slice(key, (2,), (4,))


def _rbg_split(key, shape):
    """Each half of the key split as a threefry key, the halves side by side."""
    return lax.concatenate([_threefry.split(h, shape) for h in _halves(key)], len(shape))


def _rbg_fold_in(key, data):
    return lax.concatenate([_threefry.fold_in(h, data) for h in _halves(key)], 0)


def _rbg_random_bits(key, bit_width, shape):
    return lax.rng_bit_generator(key, shape, _threefry.UINT_DTYPES[bit_width])[1]


def _unsafe_rbg_split(key, shape):
    """Every tenth of ``10 * n`` rng_bit_generator draws of 4 words (a 'hash')."""
    n = math.prod(shape)
    _, words = lax.rng_bit_generator(key, (10 * n, 4), np.uint32)
    return lax.reshape(lax.slice(words, (0, 0), (10 * n, 4), (10, 1)), (*shape, 4))


def _unsafe_rbg_fold_in(key, data):
    _, words = lax.rng_bit_generator(_rbg_seed(data), (10, 4), np.uint32)
    return lax.bitwise_xor(key, lax.index_in_dim(words, 9, keepdims=False))


THREEFRY = PRNGImpl(
    "threefry2x32",
    "fry",
    (2,),
    _threefry.seed,
    _threefry.split,
    _threefry.fold_in,
    _threefry.random_bits,
)
RBG = PRNGImpl("rbg", "rbg", (4,), _rbg_seed, _rbg_split, _rbg_fold_in, _rbg_random_bits)
UNSAFE_RBG = PRNGImpl(
    "unsafe_rbg", "urbg", (4,), _rbg_seed, _unsafe_rbg_split, _unsafe_rbg_fold_in, _rbg_random_bits
)
PHILOX = PRNGImpl(
    "philox2x32", "phx2", (1,), _philox.seed, _philox.split, _philox.fold_in, _philox.random_bits
)
PHILOX4 = PRNGImpl(
    "philox4x32",
    "phx4",
    (2,),
    _philox.seed_4x32,
    _philox.split_4x32,
    _philox.fold_in_4x32,
    _philox.random_bits_4x32,
)
THREEFRY4 = PRNGImpl(
    "threefry4x32",
    "fry4",
    (4,),
    _threefry4x32.seed,
    _threefry4x32.split,
    _threefry4x32.fold_in,
    _threefry4x32.random_bits,
)
IMPLS = {impl.name: impl for impl in (THREEFRY, RBG, UNSAFE_RBG, PHILOX, PHILOX4, THREEFRY4)}


def default_impl():
    """The implementation of raw keys and of ``key``/``PRNGKey`` without ``impl=``: the
    ``jax_default_prng_impl`` flag's (threefry2x32 unless set), as JAX's."""
    return IMPLS[config.values.default_prng_impl]


def resolve_impl(name, impl):
    """The ``PRNGImpl`` named by ``impl`` (a name, a ``PRNGImpl`` or a key dtype; None means
    the default, ``default_impl()``); ``ValueError`` naming the choices otherwise."""
    if impl is None:
        return default_impl()
    if isinstance(impl, PRNGImpl):
        return impl
    if isinstance(impl, KeyDType):
        return impl.impl
    if isinstance(impl, str) and impl in IMPLS:
        return IMPLS[impl]
    raise ValueError(
        f"xform.random.{name}: unrecognized PRNG implementation {impl!r}; "
        f"choose one of {', '.join(repr(n) for n in IMPLS)}"
    )


# --------------------------------------------------------------------------- typed keys


class KeyDType:
    """The dtype of a typed key array, ``key<tag>``; a subtype of ``jax.dtypes.prng_key``
    (its ``type``), as JAX's key dtypes are."""

    __slots__ = ("impl",)
    type = jax.dtypes.prng_key

    def __init__(self, impl):
        self.impl = impl

    @property
    def name(self):
        return f"key<{self.impl.tag}>"

    def __repr__(self):
        return self.name

    __str__ = __repr__

    def __eq__(self, other):
        return isinstance(other, KeyDType) and other.impl is self.impl

    def __hash__(self):
        return hash((KeyDType, self.impl.name))


class KeyArray(KeyArrayBase):
    """An array of typed PRNG keys: ``uint32`` key data of shape ``(*shape, *key_shape)``
    and its implementation. Indexing, ``reshape``, iteration and ``len`` act on the key
    axes, and so do the xform.numpy functions that move elements (``stack``, ``where``,
    ``take``, ...: see ``xform.numpy._keys``); ``xform.random.key_data`` gives the data back."""

    __slots__ = ("_data", "_impl")

    def __init__(self, data, impl):
        self._data, self._impl = data, impl

    def _with_data(self, data):
        return KeyArray(data, self._impl)

    @property
    def shape(self):
        data = self._data  # an array or tracer; or a ShapeDtypeStruct (a library's
        # abstract state: flax.nnx's graph of a module, say)
        shape = (
            data.shape if type(data).__name__ == "ShapeDtypeStruct" else core.get_aval(data).shape
        )
        return tuple(shape[: -len(self._impl.key_shape)])

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        return math.prod(self.shape)

    @property
    def dtype(self):
        return KeyDType(self._impl)

    @property
    def itemsize(self):
        """The bytes of one key: its uint32 words."""
        return 4 * math.prod(self._impl.key_shape)

    @property
    def nbytes(self):
        return self.size * self.itemsize

    # Where the keys live and whether they are ready: their data's answers, as JAX's.
    device = property(lambda self: self._data.device)
    sharding = property(lambda self: self._data.sharding)

    def devices(self):
        return self._data.devices()

    def is_deleted(self):
        return self._data.is_deleted()

    def block_until_ready(self):
        """The keys, once their data is computed."""
        self._data.block_until_ready()
        return self

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of unsized object (a scalar key array)")
        return self.shape[0]

    def __iter__(self):
        if not self.shape:
            raise TypeError("iteration over a 0-d key array")
        return (self[i] for i in range(self.shape[0]))

    def __getitem__(self, index):
        index = index if isinstance(index, tuple) else (index,)
        if any(i is Ellipsis for i in index):  # the key words stay whole at the end
            at = next(n for n, i in enumerate(index) if i is Ellipsis)
            explicit = sum(i is not None for i in index) - 1
            index = index[:at] + (slice(None),) * (self.ndim - explicit) + index[at + 1 :]
        return KeyArray(self._data[index], self._impl)

    def reshape(self, *shape):
        """The keys in a new shape (the key words stay whole)."""
        shape = shape[0] if len(shape) == 1 and isinstance(shape[0], Sequence) else shape
        key_shape = self._impl.key_shape
        return KeyArray(xnp.reshape(self._data, (*shape, *key_shape)), self._impl)

    def ravel(self):
        """The keys as a 1-d key array."""
        return self.reshape(self.size)

    flatten = ravel

    def transpose(self, *axes):
        """The keys with their axes permuted (reversed by default)."""
        axes = axes[0] if len(axes) == 1 and isinstance(axes[0], Sequence) else axes
        return xnp.transpose(self, axes or None)

    @property
    def T(self):  # noqa: N802  (NumPy's name)
        return xnp.transpose(self)

    def squeeze(self, axis=None):
        """The keys without their unit axes."""
        return xnp.squeeze(self, axis)

    def swapaxes(self, axis1, axis2):
        """The keys with two axes swapped."""
        return xnp.swapaxes(self, axis1, axis2)

    def take(self, indices, axis=None, **kwargs):
        """The keys at ``indices`` (as ``xform.numpy.take``)."""
        return xnp.take(self, indices, axis=axis, **kwargs)

    def copy(self):
        """A copy of the keys."""
        return xnp.copy(self)

    @property
    def at(self):
        """Functional updates, as ``Array.at``: ``keys.at[i].set(other_keys)``."""
        return _KeyAt(self)

    def __eq__(self, other):
        """Elementwise: whether the keys hold the same data (as JAX's key arrays)."""
        if not isinstance(other, KeyArray):
            return NotImplemented
        return xnp.all(self._data == other._data, axis=-1)

    def __ne__(self, other):
        if not isinstance(other, KeyArray):
            return NotImplemented
        return xnp.any(self._data != other._data, axis=-1)

    __hash__ = None  # an array: unhashable, as JAX's

    def __repr__(self):
        return f"Array({self.shape}, dtype={self.dtype}) overlaying:\n{self._data}"


class _KeyAt:
    """``keys.at[index]``: ``set`` and ``get`` on the key axes."""

    __slots__ = ("keys",)

    def __init__(self, keys):
        self.keys = keys

    def __getitem__(self, index):
        return _KeyAtIndex(self.keys, index)


class _KeyAtIndex:
    __slots__ = ("keys", "index")

    def __init__(self, keys, index):
        self.keys, self.index = keys, index

    def get(self, **kwargs):
        """The keys at the index (as ``keys[index]``)."""
        return apply_to_keys(lambda data: data.at[self.index].get(**kwargs), self.keys)

    def set(self, values, **kwargs):
        """The keys with those at the index replaced by the key array ``values``."""
        if not isinstance(values, KeyArray):
            raise TypeError(
                f"at[...].set on a key array takes a key array, got {type(values).__name__}"
            )
        return apply_to_keys(
            lambda data, new: data.at[self.index].set(new, **kwargs), self.keys, values
        )


pytree.register_pytree_node(
    KeyArray, lambda k: ((k._data,), k._impl), lambda impl, children: KeyArray(children[0], impl)
)


# --------------------------------------------------------------------------- argument checks


def _check_data(name, data, impl, what="key"):
    """``data`` checked as ``uint32[..., *impl.key_shape]`` key data; an xform array."""
    words = impl.key_shape[0]
    try:
        aval = core.get_aval(data)
    except TypeError:
        raise TypeError(
            f"xform.random.{name}: `{what}` must be a uint32 array of shape "
            f"({words},) (from xform.random.PRNGKey) or a typed key array (from "
            f"xform.random.key), got {type(data).__name__}"
        ) from None
    if aval.ndim < 1 or aval.shape[-1:] != impl.key_shape:
        raise TypeError(
            f"xform.random.{name}: `{what}` must be a uint32 array of shape "
            f"({words},) (a {impl.name} key), got shape {aval.shape}"
        )
    if aval.dtype != np.uint32:
        raise TypeError(
            f"xform.random.{name}: `{what}` must have dtype uint32 (a {impl.name} "
            f"key), got {aval.dtype}"
        )
    return data if isinstance(data, core.Tracer) else xnp.asarray(data)


def check_key(name, key, allow_batched=False):
    """``key`` as a ``KeyArray``: a typed key as is, a raw ``uint32`` array checked and
    wrapped as a key of the default implementation (a single key unless ``allow_batched``)."""
    if not isinstance(key, KeyArray):
        impl = default_impl()
        key = KeyArray(_check_data(name, key, impl), impl)
    if not allow_batched and key.ndim:
        raise ValueError(
            f"xform.random.{name} accepts a single key, but was given a key array "
            f"of shape {key.shape} != (). Use xform.vmap for batching."
        )
    return key


def _returned(was_raw, key):
    """Keys back in the style they came in: raw data for a raw key."""
    return key._data if was_raw else key


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
        raise TypeError(
            f"xform.random.{name}: `shape` must be a tuple of ints, got {shape!r}"
        ) from None
    if any(d < 0 for d in dims):
        raise ValueError(
            f"xform.random.{name}: `shape` must have non-negative dimensions, got {dims}"
        )
    return dims


def check_shape(name, shape, *param_shapes):
    """The parameter shapes broadcast into ``shape`` without growing it."""
    if param_shapes:
        try:
            out = xnp.broadcast_shapes(shape, *param_shapes)
        except ValueError:
            out = None
        if out != shape:
            raise ValueError(
                f"xform.random.{name}: parameter shapes {list(param_shapes)} must "
                f"broadcast to the `shape` argument {shape}"
            )


def canonical_dtype(name, dtype, default, kinds, error=ValueError):
    """``dtype`` (or ``default``) canonicalized, checked to be one of ``kinds`` ("float",
    "inexact", "int", "uint")."""
    dt = dtypes.canonicalize(default if dtype is None else dtype)
    ok = {
        "float": dtypes.is_float(dt),
        "inexact": dtypes.is_inexact(dt),
        "int": dtypes.is_int(dt),
        "uint": dtypes.is_int(dt) and not dtypes.is_signed_int(dt),
    }
    if not ok[kinds]:
        what = {
            "float": "a float",
            "inexact": "a float or complex",
            "int": "an integer",
            "uint": "an unsigned integer",
        }[kinds]
        raise error(f"xform.random.{name}: `dtype` must be {what} dtype, got {dt}")
    return dt


# --------------------------------------------------------------------------- keys


def split_key(key, shape):
    """``shape`` new keys from the ``KeyArray`` ``key`` (a ``KeyArray`` of that shape)."""
    return KeyArray(key._impl.split(key._data, shape), key._impl)


def random_bits(key, bit_width, shape):
    """Random ``uint{bit_width}[*shape]`` bits from the single ``KeyArray`` ``key``."""
    return key._impl.random_bits(key._data, bit_width, shape)


def PRNGKey(seed, *, impl=None):  # noqa: N802  (JAX's name)
    """A raw key (legacy style: the ``uint32`` key data, ``uint32[2]`` for threefry2x32)
    from an integer seed, equal to JAX's ``PRNGKey(seed, impl=impl)``.

    Args:
      seed: a 64- or 32-bit integer scalar (without x64, Python ints wrap to 32 bits as in
        JAX).
      impl: None (the ``jax_default_prng_impl`` flag's, threefry2x32 unless set), or
        "threefry2x32", "threefry4x32", "rbg", "unsafe_rbg", "philox2x32", "philox4x32".

    Returns:
      The key data, a ``uint32`` array of shape ``(2,)`` (threefry2x32; 4, 4, 4, 1, 2 words
      for the others in that order).

    Example:
      >>> xform.random.PRNGKey(42)
      Array([ 0, 42], dtype=uint32)
    """
    return _seed("PRNGKey", seed, resolve_impl("PRNGKey", impl))._data


def _eager_jit(**jit_kwargs):
    """Decorator: ``jit(fun)`` eagerly (one compiled program per signature); under a
    transformation ``fun`` itself, as JAX's key functions (``key``, ``split``, ``fold_in``,
    ``bits``), whose primitives it stages without a nested jit."""

    def wrap(fun):
        jitted = jit(fun, **jit_kwargs)

        @functools.wraps(fun)
        def call(*args, **kwargs):
            if core.trace_state.trace is core.eval_trace:
                return jitted(*args, **kwargs)
            return fun(*args, **kwargs)

        return call

    return wrap


def key(seed, *, impl=None, dtype=None):
    """A typed key (a scalar ``KeyArray`` of dtype ``key<fry>``, ``key<rbg>``, ``key<phx2>``,
    ...) from an integer seed, equal to JAX's ``key(seed, impl=impl)``; the
    implementation may be given as a key ``dtype`` (or its name) instead.

    Example:
      >>> k = xform.random.key(0)
      >>> k1, k2 = xform.random.split(k)
    """
    impl = _impl_or_dtype("key", impl, dtype)
    return _seed("key", seed, resolve_impl("key", impl))


def _impl_or_dtype(name, impl, dtype):
    """The implementation named by ``impl`` or by ``dtype`` (JAX's newer spelling), not both."""
    if dtype is None:
        return impl
    if impl is not None:
        raise ValueError(f"Cannot specify both `impl` and `dtype` arguments to xform.random.{name}")
    return dtype


def _seed(name, seed, impl):
    if isinstance(seed, int) and not isinstance(seed, bool):
        seed = np.int64(seed)  # as JAX: overflow-checked, then narrowed by wrapping without x64
        if not config.x64_enabled():
            seed = seed.astype(np.int32)
    try:
        aval = core.get_aval(seed)
    except TypeError:
        raise TypeError(
            f"xform.random.{name}: `seed` must be an integer scalar, got {type(seed).__name__}"
        ) from None
    if aval.ndim:
        raise TypeError(
            f"xform.random.{name} accepts a scalar seed, but was given an array of "
            f"shape {aval.shape} != (). Use xform.vmap for batching."
        )
    if not (dtypes.is_int(aval.dtype) or aval.dtype == np.bool_):
        raise TypeError(f"xform.random.{name}: `seed` must be an integer, got dtype {aval.dtype}")
    if not isinstance(seed, core.Tracer):
        seed = xnp.asarray(seed, aval.dtype)
    return _seed_jit(seed, impl=impl)


@_eager_jit(static_argnames=("impl",))
def _seed_jit(seed, impl):
    return KeyArray(impl.seed(seed), impl)


def key_data(keys):
    """The ``uint32[..., n]`` data of a key array (typed or raw; raw keys are returned as
    they are, after checking)."""
    return check_key("key_data", keys, allow_batched=True)._data


def wrap_key_data(key_bits_array, *, impl=None, dtype=None):
    """A typed key array from ``uint32[..., n]`` key data of the implementation ``impl`` (or
    of the key ``dtype``): default threefry2x32, ``n == 2``; ``n == 4`` for the rbg impls,
    ``n == 1`` for philox2x32."""
    impl = resolve_impl("wrap_key_data", _impl_or_dtype("wrap_key_data", impl, dtype))
    if isinstance(key_bits_array, KeyArray):
        raise TypeError(
            "xform.random.wrap_key_data: `key_bits_array` must be a uint32 array, "
            f"got a typed key array of dtype {key_bits_array.dtype}"
        )
    return KeyArray(_check_data("wrap_key_data", key_bits_array, impl, "key_bits_array"), impl)


def key_impl(keys):
    """The name of the PRNG implementation of ``keys`` (a raw key is threefry2x32)."""
    return check_key("key_impl", keys, allow_batched=True)._impl.name


def key_dtype(impl=None):
    """The key dtype (``key<fry>``, ...) of the implementation ``impl``."""
    return KeyDType(resolve_impl("key_dtype", impl))


def clone(key):
    """``key`` itself: a copy for reuse (JAX's key-reuse checker is not modeled here)."""
    check_key("clone", key, allow_batched=True)
    return key


def split(key, num=2):
    """Split ``key`` into ``num`` new keys (an int or a shape), bit-equal to JAX.

    Returns:
      The keys, typed if ``key`` is typed, else raw data of shape ``(*shape, 2)``.

    Example:
      >>> k1, k2 = xform.random.split(xform.random.key(0))
    """
    typed = check_key("split", key)
    shape = tuple(num) if isinstance(num, Sequence) else (num,)
    return _returned(typed is not key, _split(typed, shape=canonical_shape("split", shape)))


def fold_in(key, data):
    """A new key from ``key`` and a 32-bit integer scalar ``data``, bit-equal to JAX."""
    typed = check_key("fold_in", key)
    if np.ndim(data) if not isinstance(data, core.Tracer) else data.ndim:
        raise TypeError(
            f"xform.random.fold_in accepts a scalar `data`, but was given an array "
            f"of shape {np.shape(data)} != (). Use xform.vmap for batching."
        )
    if isinstance(data, int) and not isinstance(data, bool):
        dtypes.check_int_range(data, np.dtype(np.uint32), "xform.random.fold_in `data`")
        data = np.uint32(data)
    data = lax.convert_element_type(xnp.asarray(data), np.uint32)
    return _returned(typed is not key, _fold_in(typed, data))


_split = _eager_jit(static_argnames=("shape",))(split_key)


@_eager_jit()
def _fold_in(key, data):
    return KeyArray(key._impl.fold_in(key._data, data), key._impl)


def bits(key, shape=(), dtype=None):
    """Uniform random bits as unsigned integers of ``dtype`` (default uint32, uint64 under
    x64), bit-equal to JAX's ``random.bits``."""
    key = check_key("bits", key)
    default = np.uint64 if config.x64_enabled() else np.uint32
    dt = canonical_dtype("bits", dtype, default, "uint")
    return _bits(key, shape=canonical_shape("bits", shape), bit_width=dt.itemsize * 8)


@_eager_jit(static_argnames=("shape", "bit_width"))
def _bits(key, shape, bit_width):
    return random_bits(key, bit_width, shape)

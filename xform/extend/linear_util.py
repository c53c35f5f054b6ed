"""Function wrappers that carry transformations, as ``jax.extend.linear_util`` names them.

A ``WrappedFun`` is a Python function plus a stack of transformations applied around it when it
is called (``call_wrapped``). A transformation sees the arguments going in and the results
coming out; one "with aux" also stores a side value (an output tree, say) that the caller reads
after the call through a ``Store``. Libraries that trace a function through their own
interpreter build on these (numpyro's provenance tracking, haiku's graph drawing, flax's scan);
xform's own transformations flatten pytrees at the API edge and do not need them.

Two styles are accepted, as JAX accepts them: a generator (``transformation``: ``args, kwargs
= yield`` what the inner function receives, then ``yield`` the results) or a function taking
the inner function first (``transformation2``).
"""

import functools
import weakref

__all__ = [
    "DebugInfo",
    "Store",
    "StoreException",
    "WrappedFun",
    "cache",
    "merge_linear_aux",
    "transformation",
    "transformation2",
    "transformation_with_aux",
    "transformation_with_aux2",
    "wrap_init",
]


class DebugInfo:
    """What a traced function is, for messages: why it was traced, where it was defined,
    its argument names and (once known) its result paths."""

    __slots__ = ("arg_names", "func_src_info", "result_paths", "traced_for")

    def __init__(self, traced_for, func_src_info, arg_names, result_paths=None):
        self.traced_for = traced_for
        self.func_src_info = func_src_info
        self.arg_names = tuple(arg_names)
        self.result_paths = result_paths

    @property
    def func_name(self):
        return (self.func_src_info or "<unknown>").split(" ")[0]

    def with_unknown_names(self):
        return DebugInfo(
            self.traced_for, self.func_src_info, (None,) * len(self.arg_names), self.result_paths
        )

    def __repr__(self):
        return (
            f"DebugInfo(traced_for={self.traced_for!r}, func_src_info="
            f"{self.func_src_info!r}, arg_names={self.arg_names!r})"
        )


class StoreException(Exception):
    """A ``Store`` read before its transformation ran, or written twice."""


_EMPTY = object()


class Store:
    """The side value of a transformation with aux: written once by the call, then read."""

    __slots__ = ("_val",)

    def __init__(self):
        self._val = _EMPTY

    def store(self, val):
        if self._val is not _EMPTY:
            raise StoreException("Store occupied")  # (a wrapped function is called once)
        self._val = val

    def reset(self):
        self._val = _EMPTY

    @property
    def val(self):
        if self._val is _EMPTY:
            raise StoreException("Store empty: read before the wrapped function was called")
        return self._val

    def __bool__(self):
        return self._val is not _EMPTY


class _StoreThunk:
    """What a transformation with aux returns beside the wrapped function: calling it reads
    the store (``out_tree()``), as JAX's thunks do."""

    __slots__ = ("store",)

    def __init__(self, store):
        self.store = store

    def __call__(self):
        return self.store.val

    @property
    def val(self):
        return self.store.val


def _run_generator(gen, static_args, store, inner, *args, **kwargs):
    """One call through a generator transformation: it yields the inner call's arguments,
    receives its results, and yields its own (with the aux value when ``store`` is given)."""
    steps = gen(*static_args, *args, **kwargs)
    inner_args, inner_kwargs = next(steps)
    result = steps.send(inner(*inner_args, **inner_kwargs))
    steps.close()
    if store is None:
        return result
    result, aux = result
    store.store(aux)
    return result


class WrappedFun:
    """A function with transformations around it (innermost first) and keyword ``params``
    bound to it; ``call_wrapped(*args)`` runs the whole stack."""

    __slots__ = ("f", "transforms", "stores", "params", "debug_info")

    def __init__(self, f, transforms, stores, params, debug_info):
        self.f = f
        self.transforms = transforms  # ((kind, transform, static_args), ...)
        self.stores = stores
        self.params = params
        self.debug_info = debug_info

    @property
    def __name__(self):
        return getattr(self.f, "__name__", "<unnamed wrapped function>")

    def _add(self, kind, transform, static_args, store):
        return WrappedFun(
            self.f,
            (*self.transforms, (kind, transform, tuple(static_args))),
            (*self.stores, store),
            self.params,
            self.debug_info,
        )

    def wrap(self, gen, gen_static_args, out_store):
        """Add a generator transformation (``out_store`` for one with aux, else None)."""
        return self._add("generator", gen, gen_static_args, out_store)

    def call_wrapped(self, *args, **kwargs):
        """Call the function through its transformations."""
        params = dict(self.params)

        def call(*a, **k):
            return self.f(*a, **params, **k)

        for (kind, transform, static_args), store in zip(self.transforms, self.stores, strict=True):
            call = _layer(kind, transform, static_args, store, call)
        return call(*args, **kwargs)

    def with_unknown_names(self):
        return self

    def __eq__(self, other):
        return (
            type(other) is WrappedFun
            and self.f is other.f
            and self.transforms == other.transforms
            and self.params == other.params
        )

    def __hash__(self):
        return hash((id(self.f), self.transforms, tuple(sorted(self.params.items()))))

    def __repr__(self):
        names = [getattr(t, "__name__", repr(t)) for _, t, _ in self.transforms]
        return f"Wrapped function: {self.__name__} through {names or 'no transformation'}"


def _layer(kind, transform, static_args, store, inner):
    if kind == "generator":
        return functools.partial(_run_generator, transform, static_args, store, inner)
    if store is None:  # transformation2: f(inner, *static_args, *args, **kwargs)
        return functools.partial(transform, inner, *static_args)
    return functools.partial(transform, inner, store, *static_args)


def wrap_init(f, params=None, *, debug_info=None):
    """``f`` as a ``WrappedFun`` with no transformation (``params`` bound as keywords)."""
    return WrappedFun(f, (), (), dict(params or {}), debug_info)


def transformation(gen):
    """Decorator: generator ``gen(*static_args, *args)`` as a transformation of wrapped
    functions, applied as ``t(fun, *static_args)``."""

    @functools.wraps(gen)
    def apply(fun, *static_args):
        return fun.wrap(gen, static_args, None)

    return apply


def transformation_with_aux(gen):
    """Decorator: like ``transformation``, for a generator whose last yield is ``(results,
    aux)``; applying it returns the wrapped function and a thunk reading ``aux``."""

    @functools.wraps(gen)
    def apply(fun, *static_args):
        store = Store()
        return fun.wrap(gen, static_args, store), _StoreThunk(store)

    return apply


def transformation2(fn):
    """Decorator: ``fn(inner, *static_args, *args, **kwargs)`` as a transformation."""

    @functools.wraps(fn)
    def apply(fun, *static_args):
        return fun._add("function", fn, static_args, None)

    return apply


def transformation_with_aux2(fn):
    """Decorator: ``fn(inner, store, *static_args, *args, **kwargs)``, which calls
    ``store.store(aux)``; applying it returns the wrapped function and a thunk reading it."""

    @functools.wraps(fn)
    def apply(fun, *static_args):
        store = Store()
        return fun._add("function", fn, static_args, store), _StoreThunk(store)

    return apply


def merge_linear_aux(aux1, aux2):
    """Of two thunks exactly one of which was filled by the call: ``(True, value)`` for the
    first, ``(False, value)`` for the second."""
    if aux1.store:
        if aux2.store:
            raise StoreException("merge_linear_aux: both stores are filled")
        return True, aux1()
    if not aux2.store:
        raise StoreException("merge_linear_aux: neither store is filled")
    return False, aux2()


def cache(call):
    """Memoize ``call(fun, *args)`` on the wrapped function (its transformations and params)
    and the (hashable) arguments, as long as the underlying Python function lives."""
    memo = weakref.WeakKeyDictionary()  # fun.f -> {(transforms, params, *args): result}

    @functools.wraps(call)
    def memoized(fun, *args):
        try:
            per_function = memo.setdefault(fun.f, {})
            key = (fun.transforms, tuple(sorted(fun.params.items())), *args)
            hit = per_function.get(key)
        except TypeError:  # unhashable arguments, or a function without weak references
            return call(fun, *args)
        if hit is None:
            hit = per_function[key] = call(fun, *args)
        return hit

    memoized.cache_clear = memo.clear
    return memoized

"""One table over every public callable name of jax.numpy: each name's recipe calls (in
tests/numpy_recipes.py) run through xform.numpy and jax.numpy eagerly and under both jits, with
grads and vmaps where the recipe asks; where JAX raises, xform must raise the same type."""

import builtins
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import xform
import xform.numpy as xnp
from tests.harness import assert_same, x64_for
from tests.numpy_recipes import EXEMPT, NOT_YET, RECIPES, Lib

PUBLIC = sorted(n for n in dir(jnp) if not n.startswith("_") and callable(getattr(jnp, n)))

# Known mismatches in files this table does not own, by (name, call index or "grad"/"vmap"):
# those checks leave test_name and run in test_known_mismatch, strictly xfailed (a fix must
# drop its entry here).
XFAIL = {}


def _resolve(value, lib):
    if isinstance(value, Lib):
        return getattr(lib, value.name)
    if isinstance(value, list):
        return [_resolve(v, lib) for v in value]
    if isinstance(value, tuple):
        return tuple(_resolve(v, lib) for v in value)
    return value


def _fn(name, recipe, lib):
    return recipe.fn(lib) if recipe.fn is not None else getattr(lib, name)


def _wide(args, kwargs):
    """A 64-bit dtype among the arrays of a call (then both libraries run in x64 mode)."""

    def walk(v):
        if isinstance(v, np.ndarray):
            yield v.dtype
        elif isinstance(v, (list, tuple)):
            for x in v:
                yield from walk(x)
        elif isinstance(v, type) and issubclass(v, np.generic):
            yield np.dtype(v)

    for d in walk([*args, *kwargs.values()]):
        if d in (np.float64, np.complex128):
            return d
    return np.float32


def _error_type(e):
    """The builtin exception class an error is (JAX's own errors subclass TypeError etc.)."""
    return next(t for t in type(e).__mro__ if getattr(builtins, t.__name__, None) is t)


def _plain(tree):
    """Named tuples as plain tuples (the two libraries define their own result classes)."""
    if isinstance(tree, tuple) and hasattr(tree, "_fields"):
        return tuple(tree)
    return tree


def _same_or_same_error(what, run_jax, run_xform, tol):
    """Both calls agree, or both raise errors of the same builtin type. Returns JAX's result,
    or None where it raised."""
    try:
        expected = run_jax()
    except Exception as e:  # noqa: BLE001 -- the oracle's error type is what we compare
        with pytest.raises(_error_type(e)):
            run_xform()
        return None
    got = run_xform()
    assert getattr(got, "_fields", None) == getattr(expected, "_fields", None), what
    assert_same(_plain(got), _plain(expected), *tol, what=what)
    return expected


def _loss(lib, f):
    def loss(*a):
        leaves = [x for x in jax.tree_util.tree_leaves(f(*a)) if np.issubdtype(x.dtype, np.inexact)]
        return sum(lib.sum(lib.real(x)) for x in leaves)

    return loss


def _with(args, positions, values):
    out = list(args)
    for i, v in zip(positions, values, strict=True):
        out[i] = v
    return out


class _Check:
    """One check of a name (a recipe call, its grad or its vmap) as two functions of the same
    arrays: ``jax_fn`` built from jax.numpy, ``xform_fn`` from xform.numpy. Arrays are the
    traced arguments; every other argument is closed over."""

    def __init__(self, name, recipe, k):
        self.k, self.what = k, f"{name} {'call ' if isinstance(k, int) else ''}{k}"
        index = {"grad": recipe.grad_call, "vmap": recipe.vmap_call}.get(k, k)
        args, kwargs = recipe.calls[index]
        self.wide = _wide(args, kwargs)
        self.tol = recipe.tol or ((2e-5, 2e-6) if k == "grad" else (None, None))
        self.jit = recipe.jit and isinstance(k, int)
        self.python_out = recipe.python_out
        pos = (
            list(recipe.grad)
            if k == "grad"
            else [i for i, a in enumerate(args) if isinstance(a, np.ndarray)]
        )
        self.arrays = [args[i] for i in pos]
        fns = []
        for lib in (jnp, xnp):
            f, a, kw = _fn(name, recipe, lib), _resolve(args, lib), _resolve(kwargs, lib)
            fns.append(lambda *arrays, f=f, a=a, kw=kw: f(*_with(a, pos, arrays), **kw))
        (jf, xf) = fns
        if k == "grad":
            argnums = tuple(range(len(pos)))
            jf, xf = jax.grad(_loss(jnp, jf), argnums), xform.grad(_loss(xnp, xf), argnums)
        elif k == "vmap":
            self.arrays = [np.stack([a, np.flip(a)]) for a in self.arrays]
            jf, xf = jax.vmap(jf), xform.vmap(xf)
        self.jax_fn, self.xform_fn = jf, xf


def _traces(check):
    """Whether JAX traces the check abstractly (then it can join the name's one compile)."""
    try:
        jax.eval_shape(check.jax_fn, *check.arrays)
    except Exception:  # noqa: BLE001 -- it then runs alone, where its error is compared
        return False
    return True


def _check_group(checks):
    """Run checks under one x64 mode. Those JAX traces share ONE jax.jit (the oracle, one XLA
    compile per name and mode instead of one per call or per op) and, for the calls a recipe
    jits, one xform.jit; xform also runs each eagerly. The rest (JAX raises, or the output
    shape depends on values) compare eager results or error types one by one, and under both
    jits where the recipe jits."""

    def oracle(group):
        return jax.jit(lambda arrays: [c.jax_fn(*a) for c, a in zip(group, arrays, strict=True)])(
            [c.arrays for c in group]
        )

    together = [c for c in checks if not c.python_out]
    try:  # usually all of them trace; else find out which, one by one
        expected = oracle(together) if together else []
    except Exception:  # noqa: BLE001 -- those that raise run alone, errors compared
        together = [c for c in together if _traces(c)]
        expected = oracle(together) if together else []
    for c in checks:
        if c in together:
            continue
        _same_or_same_error(
            c.what, lambda c=c: c.jax_fn(*c.arrays), lambda c=c: c.xform_fn(*c.arrays), c.tol
        )
        if c.jit:
            _same_or_same_error(
                f"jit {c.what}",
                lambda c=c: jax.jit(c.jax_fn)(*c.arrays),
                lambda c=c: xform.jit(c.xform_fn)(*c.arrays),
                c.tol,
            )
    for c, e in zip(together, expected, strict=True):
        _same_or_same_error(c.what, lambda e=e: e, lambda c=c: c.xform_fn(*c.arrays), c.tol)
    jitted = [(c, e) for c, e in zip(together, expected, strict=True) if c.jit]
    if jitted:
        got = xform.jit(
            lambda arrays: [c.xform_fn(*a) for (c, _), a in zip(jitted, arrays, strict=True)]
        )([c.arrays for c, _ in jitted])
        for (c, e), g in zip(jitted, got, strict=True):
            _same_or_same_error(f"jit {c.what}", lambda e=e: e, lambda g=g: g, c.tol)


def _checks(name, recipe):
    return [
        *range(len(recipe.calls)),
        *(["grad"] if recipe.grad is not None else []),
        *(["vmap"] if recipe.vmap else []),
    ]


def _run(name, ks):
    recipe = RECIPES[name]
    checks = [_Check(name, recipe, k) for k in ks]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for wide in dict.fromkeys(c.wide for c in checks):
            with x64_for(wide):
                _check_group([c for c in checks if c.wide == wide])


def test_every_name_has_a_recipe_or_a_reason():
    missing = [n for n in PUBLIC if n not in RECIPES and n not in EXEMPT]
    assert not missing, f"no recipe and no exemption for {missing}"
    both = sorted(set(RECIPES) & set(EXEMPT))
    assert not both, f"both a recipe and an exemption: {both}"
    stale = sorted((set(RECIPES) | set(EXEMPT) | {n for n, _ in XFAIL}) - set(PUBLIC))
    assert not stale, f"not a public callable of jax.numpy: {stale}"
    lacking = sorted(n for n in PUBLIC if not hasattr(xnp, n) and n not in NOT_YET)
    assert not lacking, f"xform.numpy lacks {lacking}"


# Every name's values run by default in a fixed quarter of the table (every fourth name, so
# each family is sampled) and all of them with `-m slow`: the whole table compiles some 700
# XLA programs, about a minute of the suite's 15-minute budget.
_NAMES = [n for n in PUBLIC if n in RECIPES]


@pytest.mark.parametrize(
    "name",
    [pytest.param(n, marks=() if i % 4 == 0 else pytest.mark.slow) for i, n in enumerate(_NAMES)],
)
def test_name(name):
    if not hasattr(xnp, name):
        pytest.skip(f"xform.numpy has no {name} yet")
    _run(
        name,
        [k for k in _checks(name, RECIPES[name]) if isinstance(k, int) and (name, k) not in XFAIL],
    )


# grad and vmap of every name double the table's compile time, past what the default run
# can spend; the family tests (test_grad_*, test_vmap_numpy, ...) cover them by default, and
# `python -m pytest -m slow tests/test_numpy_table.py` runs them all.
@pytest.mark.slow
@pytest.mark.parametrize(
    "name", [n for n in PUBLIC if n in RECIPES and (RECIPES[n].grad is not None or RECIPES[n].vmap)]
)
def test_name_grad_and_vmap(name):
    if not hasattr(xnp, name):
        pytest.skip(f"xform.numpy has no {name} yet")
    _run(
        name,
        [
            k
            for k in _checks(name, RECIPES[name])
            if not isinstance(k, int) and (name, k) not in XFAIL
        ],
    )


@pytest.mark.parametrize(
    ("name", "k"),
    [
        pytest.param(n, k, id=f"{n}-{k}", marks=pytest.mark.xfail(strict=True, reason=why))
        for (n, k), why in XFAIL.items()
    ],
)
def test_known_mismatch(name, k):
    if not hasattr(xnp, name):
        pytest.skip(f"xform.numpy has no {name} yet")
    _run(name, [k])


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (
            lambda m: m.matvec(np.zeros((2, 3)), np.zeros(2)),
            ValueError,
            "matvec: inconsistent size",
        ),
        (
            lambda m: m.vecmat(np.zeros(2), np.zeros((3, 2))),
            ValueError,
            "vecmat: inconsistent size",
        ),
        (lambda m: m.permute_dims(np.zeros((2, 3))), TypeError, "axes"),
    ],
)
def test_errors_fixed_here(call, error, match):
    """Errors this table found and fixed in xform.numpy (matvec/vecmat core sizes: JAX raises
    ValueError; permute_dims requires axes), pinned with their messages."""
    with pytest.raises(error):
        call(jnp)
    with pytest.raises(error, match=match):
        call(xnp)

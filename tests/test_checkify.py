"""xform.experimental.checkify against jax.experimental.checkify: messages, exception types,
and checks through jit, vmap, grad and control flow."""

import jax as J
import jax.numpy as JN
import numpy as np
import pytest
from jax.experimental import checkify as JC

import xform as jax
import xform.numpy as jnp
from xform.experimental import checkify as ck

LIBS = {"xform": (jax, jnp, ck), "jax": (J, JN, JC)}


def _messages(make, args, errors="all_checks"):
    """``err.get()`` of the checkified ``make(jax, jnp, checkify)`` in xform and in JAX."""
    got = []
    for lib in ("xform", "jax"):
        jx, np_, C = LIBS[lib]
        lib_args = [a if isinstance(a, (int, float)) else np_.asarray(a) for a in args]
        err, _ = C.checkify(make(jx, np_, C), errors=getattr(C, errors))(*lib_args)
        got.append(err.get())
    return got


def _user(jx, np_, C):
    def f(x):
        C.check(x > 0, "{x} needs to be positive! {}", x, x=x)
        return 1 / x

    return f


def _cond(jx, np_, C):
    def f(x):
        def big(x):
            C.check(x < 5, "too big {}", x)
            return x

        return jx.lax.cond(x > 0, big, np_.sin, x)

    return f


def _scan(jx, np_, C):
    def f(xs):
        def body(c, x):
            C.check(x < 3, "bad x {}", x)
            return c + x, np_.log(x)

        return jx.lax.scan(body, 0.0, xs)

    return f


def _while(jx, np_, C):
    def f(x):
        def body(c):
            C.check(c < 5, "c too big {}", c)
            return c + 1.0

        return jx.lax.while_loop(lambda c: c < x, body, 0.0)

    return f


def _while_test(jx, np_, C):
    def f(x):
        def test(c):
            C.check(c < 3, "test {}", c)
            return c < 5

        return jx.lax.while_loop(test, lambda c: c + 1.0, x)

    return f


def _switch(jx, np_, C):
    def f(i, x):
        def checked(x):
            C.check(x < 0, "sw {}", x)
            return x

        return jx.lax.switch(i, [lambda x: x, checked, np_.log], x)

    return f


CASES = [
    ("user", _user, (np.float32(-3.0),), "user_checks"),
    ("user_ok", _user, (np.float32(3.0),), "user_checks"),
    ("user_in_jit", lambda jx, np_, C: jx.jit(_user(jx, np_, C)), (-3.0,), "user_checks"),
    (
        "user_off",
        lambda jx, np_, C: lambda x: C.check(x > 0, "bad") or np_.sin(x),
        (-np.inf,),
        "nan_checks",
    ),
    ("nan", lambda jx, np_, C: np_.sin, (np.inf,), "nan_checks"),
    ("nan_in_jit", lambda jx, np_, C: jx.jit(lambda x: np_.log(x) + 1.0), (-1.0,), "all_checks"),
    (
        "nan_sub",
        lambda jx, np_, C: jx.jit(lambda x: x**2 * np_.inf - np_.inf),
        (1.0,),
        "float_checks",
    ),
    ("div_int", lambda jx, np_, C: jx.jit(lambda x, y: x // y), (3, 0), "div_checks"),
    ("div_float", lambda jx, np_, C: jx.jit(lambda x, y: x / y), (3.0, 0.0), "div_checks"),
    ("oob", lambda jx, np_, C: jx.jit(lambda x, i: x[i]), (np.arange(3.0), 5), "index_checks"),
    ("oob_neg", lambda jx, np_, C: jx.jit(lambda x, i: x[i]), (np.arange(3.0), -5), "index_checks"),
    (
        "oob_slice",
        lambda jx, np_, C: jx.jit(lambda x, i: jx.lax.dynamic_slice(x, (i,), (2,))),
        (np.arange(3.0), 2),
        "index_checks",
    ),
    (
        "oob_set",
        lambda jx, np_, C: jx.jit(lambda x, i: x.at[i].set(1.0)),
        (np.arange(3.0), 7),
        "index_checks",
    ),
    (
        "oob_add",
        lambda jx, np_, C: jx.jit(lambda x, i: x.at[i].add(1.0)),
        (np.arange(3.0), np.array([1, 3])),
        "index_checks",
    ),
    (
        "oob_gather",
        lambda jx, np_, C: jx.jit(lambda x, i: x[i, 1]),
        (np.ones((3, 4)), np.array([0, 1, -9])),
        "index_checks",
    ),
    (
        "first_of_many",
        lambda jx, np_, C: jx.jit(lambda x, i: (np_.log(x), x[i], x / 0.0)),
        (-np.arange(3.0), 7),
        "all_checks",
    ),
    (
        "first_of_many2",
        lambda jx, np_, C: jx.jit(lambda x, i: (x / 0.0, x[i], np_.log(x))),
        (-np.arange(3.0), 7),
        "all_checks",
    ),
    ("cond", _cond, (7.0,), "all_checks"),
    ("cond_nan", _cond, (-np.inf,), "all_checks"),
    ("cond_ok", _cond, (1.0,), "all_checks"),
    ("scan", _scan, (np.array([1.0, 2.0, 4.0, 5.0]),), "all_checks"),
    ("scan_nan", _scan, (np.array([1.0, -2.0]),), "all_checks"),
    ("while", _while, (10.0,), "all_checks"),
    ("while_ok", _while, (3.0,), "all_checks"),
    ("grad_sqrt", lambda jx, np_, C: jx.grad(np_.sqrt), (0.0,), "nan_checks"),
    ("jit_of_grad", lambda jx, np_, C: jx.jit(jx.grad(_user(jx, np_, C))), (-1.0,), "user_checks"),
    (
        "nested_jit",
        lambda jx, np_, C: jx.jit(lambda x: jx.jit(_user(jx, np_, C))(x) + 1),
        (-2.0,),
        "user_checks",
    ),
    ("while_test_check", _while_test, (0.0,), "user_checks"),
    ("switch", _switch, (2, -2.0), "all_checks"),
    (
        "custom_jvp",
        lambda jx, np_, C: lambda x: jx.nn.relu(np_.log(x)),
        ([1.0, -1.0],),
        "nan_checks",
    ),
    (
        "checkpoint",
        lambda jx, np_, C: jx.checkpoint(lambda x: np_.log(x) * 2),
        (-2.0,),
        "nan_checks",
    ),
]


@pytest.mark.parametrize("make,args,errors", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_messages_match_jax(make, args, errors):
    ours, theirs = _messages(make, args, errors)
    assert ours == theirs


@pytest.mark.parametrize("lib", ["xform", "jax"])
def test_throw_and_jit_of_checkify(lib):
    jx, np_, C = LIBS[lib]
    err, out = jx.jit(C.checkify(_user(jx, np_, C)))(-2.0)
    assert err.get() == "-2.0 needs to be positive! -2.0 (`check` failed)"
    with pytest.raises(ValueError, match="needs to be positive") as info:
        err.throw()
    assert type(info.value).__name__ == "JaxRuntimeError"
    err, _ = C.checkify(_user(jx, np_, C))(np_.float32(2.0))
    assert err.get() is None and str(err) == "Error(None)"
    err.throw()


def test_exception_types_as_jax():
    assert issubclass(ck.JaxRuntimeError, ValueError)
    with pytest.raises(ck.JaxRuntimeError, match=r"eager 1.0 \(`check` failed\)"):
        ck.check(jnp.asarray(False), "eager {}", jnp.float32(1.0))
    with pytest.raises(ValueError, match="Cannot abstractly evaluate a checkify.check"):
        jax.jit(lambda x: ck.check(x > 0, "hi"))(1.0)
    with pytest.raises(TypeError, match=r"check takes a scalar pred as argument, got \[ True\]"):
        ck.check(np.array([True]), "hi")
    with pytest.raises(
        TypeError,
        match="Formatting arguments to checkify.check need to be "
        "PyTrees of arrays, but got 3 of type <class 'int'>",
    ):
        ck.check(True, "hi", 3)
    with pytest.raises(
        TypeError, match="check_error takes an Error as argument, got type <class 'int'> instead."
    ):
        ck.check_error(3)


def test_vmap_of_checkify_reports_each_index():
    xs = np.array([1.0, -2.0, 3.0, -4.0], np.float32)
    want = JC.checkify(_user(J, JN, JC))
    got = ck.checkify(_user(jax, jnp, ck))
    assert jax.vmap(got)(xs)[0].get() == J.vmap(want)(xs)[0].get()
    # a check under vmap inside checkify reports one failing index (the last)
    assert (
        ck.checkify(jax.vmap(_user(jax, jnp, ck)))(xs)[0].get()
        == "-4.0 needs to be positive! -4.0 (`check` failed)"
    )


def test_debug_check_and_check_error():
    for jx, np_, C in LIBS.values():
        f = C.checkify(lambda x, C=C: C.debug_check(x > 0, "dbg {}", x) or x)
        assert f(np_.float32(-1.0))[0].get() == "dbg -1.0 (`check` failed)"
        assert float(jx.jit(lambda x, C=C: C.debug_check(x > 0, "dbg") or x)(1.0)) == 1.0
        err = C.checkify(lambda x, C=C: C.check(x > 0, "cc {}", x))(np_.float32(-1.0))[0]
        assert C.checkify(C.check_error)(err)[0].get() == "cc -1.0 (`check` failed)"


def test_vmap_of_checkify_nan():
    xs = np.array([1.0, -1.0, 2.0], np.float32)
    ours = jax.vmap(ck.checkify(jnp.log, errors=ck.nan_checks))(xs)[0].get()
    assert ours == J.vmap(JC.checkify(JN.log, errors=JC.nan_checks))(xs)[0].get()
    assert ours == "at mapped index 1: nan generated by primitive: log."


def test_check_under_grad_and_values():
    f = lambda x: (ck.check(x > 0, "neg"), x**3)[1]  # noqa: E731
    assert float(jax.grad(f)(2.0)) == 12.0
    err, g = ck.checkify(jax.grad(f))(jnp.float32(-2.0))
    assert err.get() == "neg (`check` failed)" and float(g) == 12.0
    err, out = ck.checkify(lambda x: {"a": x * 2, "b": [x]})(jnp.arange(3.0))
    np.testing.assert_array_equal(out["a"], [0.0, 2.0, 4.0])


def test_error_sets():
    assert ck.float_checks == ck.nan_checks | ck.div_checks
    assert ck.automatic_checks == ck.float_checks | ck.index_checks
    assert ck.all_checks == ck.automatic_checks | ck.user_checks
    assert issubclass(ck.FailedCheckError, ck.JaxException)

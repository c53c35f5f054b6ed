"""Shardings in types (explicit sharding mode), against JAX on 8 host CPU devices: ``typeof``,
printed jaxprs, the sharding rules and their errors, jit's results and its Shardy lowering."""

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

import xform
import xform.numpy as xnp
from xform.errors import ShardingTypeError

MESH = jax.make_mesh((4, 2), ("x", "y"), axis_types=(AxisType.Explicit,) * 2)
AUTO = jax.make_mesh((4, 2), ("x", "y"), axis_types=(AxisType.Auto,) * 2)
A = (np.arange(64, dtype=np.float32).reshape(8, 8) - 20) / 9


def put_both(a, spec, mesh=MESH):
    s = NamedSharding(mesh, spec)
    return xform.device_put(a, s), jax.device_put(a, s)


def jaxpr_types(jaxpr):
    """The types of a jaxpr's inputs and of each equation's results, as printed."""
    def text(aval):
        return aval.str_short() if isinstance(aval, xform.core.ShapedArray) else \
            aval.str_short(short_dtypes=True)
    j = jaxpr.jaxpr
    return [text(v.aval) for v in j.invars] + [
        (e.primitive.name, [text(v.aval) for v in e.outvars]) for e in j.eqns]


def test_typeof_carries_the_sharding():
    for spec in (P("x", None), P(None, "y"), P(("x", "y")), P(), P("y", "x")):
        x, jx = put_both(A, spec)
        t, jt = xform.typeof(x), jax.typeof(jx)
        assert t.sharding == jt.sharding  # over the abstract mesh, one entry per dimension
        assert t.str_short() == jt.str_short(short_dtypes=True)
    assert xform.typeof(x).str_short() == "f32[8@y,8@x]"
    assert xform.typeof(put_both(A, P(("x", "y")))[0]).str_short() == "f32[8@(x,y),8]"
    # Auto axes, one device, NumPy: no sharding in the type (the default path)
    assert xform.typeof(put_both(A, P("x"), AUTO)[0]).sharding is None
    assert xform.typeof(xnp.ones(3)).sharding is None and xform.typeof(A).sharding is None
    # the sharding is part of the type: equal shapes on other layouts are other types
    a, b = xform.typeof(put_both(A, P("x"))[0]), xform.typeof(put_both(A, P("y"))[0])
    assert a != b and a != xform.typeof(A) and a == xform.typeof(put_both(A, P("x"))[0])
    with jax.set_mesh(MESH):  # a PartitionSpec is one over the mesh set
        assert xform.typeof(xform.device_put(A, P("x"))).sharding == \
            jax.typeof(jax.device_put(A, P("x"))).sharding


# (name, function of the same name in both libraries, its argument's spec)
CASES = [
    ("sin*2", lambda np_: lambda t: np_.sin(t) * 2, P("x", "y")),
    ("transpose", lambda np_: lambda t: t.T, P("x", "y")),
    ("sum0", lambda np_: lambda t: t.sum(0), P("x", "y")),
    ("sum1", lambda np_: lambda t: t.sum(1), P("x", "y")),
    ("argmax", lambda np_: lambda t: np_.argmax(t, 1), P("x", "y")),
    ("max", lambda np_: lambda t: t.max(0), P("x", None)),
    ("astype", lambda np_: lambda t: t.astype(np_.int32), P("x", "y")),
    ("broadcast", lambda np_: lambda t: np_.broadcast_to(t, (3, 8, 8)), P("x", "y")),
    ("expand", lambda np_: lambda t: t[:, None] + 1.0, P("x", None)),
    ("merge", lambda np_: lambda t: t.reshape(64), P("x", "y")),
    ("split", lambda np_: lambda t: t.reshape(4, 2, 8), P("x", "y")),
    ("split last", lambda np_: lambda t: t.reshape(8, 4, 2), P("x", "y")),
    ("unit dim", lambda np_: lambda t: t.reshape(8, 1, 8), P("x", "y")),
    ("compare", lambda np_: lambda t: t > 1, P("x", "y")),
    ("slice", lambda np_: lambda t: (xform.lax if np_ is xnp else jax.lax).slice(
        t, (0, 2), (4, 8)), P("x", None)),
    ("concatenate", lambda np_: lambda t: np_.concatenate([t, t * 2]), P("x", "y")),
    ("matmul", lambda np_: lambda t: t @ (t * 2), P(None, "y")),
    ("reshard", lambda np_: lambda t: (xform if np_ is xnp else jax).sharding.reshard(
        t, P(None, "x")), P("x", "y")),
]


@pytest.mark.parametrize("name,make,spec", CASES, ids=[c[0] for c in CASES])
def test_types_through_tracing_and_eager(name, make, spec):
    x, jx = put_both(A, spec)
    f, jf = make(xnp), make(jnp)
    with jax.set_mesh(MESH):
        assert jaxpr_types(xform.make_jaxpr(f)(x)) == jaxpr_types(jax.make_jaxpr(jf)(jx))
        out, jout = f(x), jf(jx)  # eagerly: one partitioned program per operation
    assert xform.typeof(out).str_short() == jax.typeof(jout).str_short(short_dtypes=True)
    assert out.sharding == jout.sharding
    np.testing.assert_allclose(np.asarray(out), np.asarray(jout), rtol=1e-6)


def test_printed_jaxpr_and_jit_of_an_mlp():
    rng = np.random.RandomState(0)
    args = [put_both(rng.randn(*shape).astype(np.float32), spec)
            for shape, spec in (((8, 4), P("x", None)), ((4, 6), P(None, "y")),
                                ((6, 2), P("y", None)))]
    xs, jxs = [a for a, _ in args], [b for _, b in args]

    def mlp(lib, np_):
        def f(x, w1, w2):
            h = np_.maximum(x @ w1, 0.0) * 2.0
            h = lib.sharding.reshard(h, P("x", None))
            return np_.tanh(h @ w2)
        return f

    f, jf = mlp(xform, xnp), mlp(jax, jnp)
    with jax.set_mesh(MESH):
        assert str(xform.make_jaxpr(f)(*xs)) == str(jax.make_jaxpr(jf)(*jxs))
        out, jout = xform.jit(f)(*xs), jax.jit(jf)(*jxs)
        text, jtext = xform.jit(f).lower(*xs).as_text(), jax.jit(jf).lower(*jxs).as_text()
    assert out.sharding == jout.sharding and xform.typeof(out).str_short() == "f32[8@x,2]"
    np.testing.assert_allclose(np.asarray(out), np.asarray(jout), rtol=1e-5, atol=1e-6)
    # the Shardy annotations: arguments, results, and a constraint after each operation
    sdy = r"sdy\.sharding = #sdy\.sharding<[^>]*>|sdy\.sharding_constraint %\S+ <[^>]*>"

    def annotations(t):
        return [re.sub(r"%\S+", "%", a) for a in re.findall(sdy, t)]

    assert annotations(text) == annotations(jtext)
    assert len(annotations(text)) > 10


def test_jit_results_and_grad_keep_their_shardings():
    x, jx = put_both(A, P("x", "y"))
    w, jw = put_both(A[:, :4], P("y", None))

    def loss(lib, np_):
        def f(w, x):
            h = lib.sharding.reshard(np_.sin(x), P("x", None))
            return (np_.tanh(h @ w) ** 2).sum()
        return f

    with jax.set_mesh(MESH):
        out, jout = xform.jit(lambda t: (t * 2).sum(0))(x), jax.jit(lambda t: (t * 2).sum(0))(jx)
        g = xform.jit(xform.grad(loss(xform, xnp)))(w, x)
        jg = jax.jit(jax.grad(loss(jax, jnp)))(jw, jx)
    assert out.sharding == jout.sharding and out.sharding.spec == P("y")
    np.testing.assert_allclose(np.asarray(out), np.asarray(jout), rtol=1e-6)
    assert g.sharding == jg.sharding and xform.typeof(g).sharding == jax.typeof(jg).sharding
    np.testing.assert_allclose(np.asarray(g), np.asarray(jg), rtol=1e-4, atol=1e-5)


ERRORS = [
    ("conflicting add", lambda np_: lambda a, b: a + b, P("x", None), P("y", None),
     "add got incompatible shardings for broadcasting"),
    ("contracting dims", lambda np_: lambda a, b: a @ b, P(None, "x"), P("y", None),
     "dot_general requires contracting dimensions to have consistent sharding"),
    ("ambiguous dot", lambda np_: lambda a, b: a @ b, P(None, "x"), P("x", None),
     "Contracting dimensions are sharded and it is ambiguous"),
    ("reshape", lambda np_: lambda a, b: a.reshape(16, 4), P("x", "y"), P(),
     "This reshape is not supported"),
    ("uneven slice", lambda np_: lambda a, b: a[:3], P("x", None), P(),
     "slicing on sharded dims where out dim"),
    ("axis twice", lambda np_: lambda a, b: a.sum(1)[:, None] * b.sum(0)[None, :],
     P("x", None), P(None, "x"), "produces an illegally sharded result"),
]


@pytest.mark.parametrize("name,make,spec_a,spec_b,match", ERRORS, ids=[e[0] for e in ERRORS])
def test_sharding_type_errors(name, make, spec_a, spec_b, match):
    (a, ja), (b, jb) = put_both(A, spec_a), put_both(A, spec_b)
    with jax.set_mesh(MESH):
        with pytest.raises(Exception, match=match) as jax_error:
            jax.make_jaxpr(make(jnp))(ja, jb)
        assert type(jax_error.value).__name__ == "ShardingTypeError"
        with pytest.raises(ShardingTypeError, match=match):
            xform.make_jaxpr(make(xnp))(a, b)
        with pytest.raises(ShardingTypeError, match=match):
            make(xnp)(a, b)  # eagerly too

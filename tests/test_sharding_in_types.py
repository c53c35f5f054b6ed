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
MIXED = jax.make_mesh((4, 2), ("x", "y"), axis_types=(AxisType.Explicit, AxisType.Auto))
A = (np.arange(64, dtype=np.float32).reshape(8, 8) - 20) / 9


def put_both(a, spec, mesh=MESH):
    s = NamedSharding(mesh, spec)
    return xform.device_put(a, s), jax.device_put(a, s)


def jaxpr_types(jaxpr):
    """The types of a jaxpr's inputs and of each equation's results, as printed."""

    def text(aval):
        return (
            aval.str_short()
            if isinstance(aval, xform.core.ShapedArray)
            else aval.str_short(short_dtypes=True)
        )

    j = jaxpr.jaxpr
    return [text(v.aval) for v in j.invars] + [
        (e.primitive.name, [text(v.aval) for v in e.outvars]) for e in j.eqns
    ]


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
        assert (
            xform.typeof(xform.device_put(A, P("x"))).sharding
            == jax.typeof(jax.device_put(A, P("x"))).sharding
        )


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
    (
        "slice",
        lambda np_: lambda t: (xform.lax if np_ is xnp else jax.lax).slice(t, (0, 2), (4, 8)),
        P("x", None),
    ),
    ("concatenate", lambda np_: lambda t: np_.concatenate([t, t * 2]), P("x", "y")),
    ("matmul", lambda np_: lambda t: t @ (t * 2), P(None, "y")),
    (
        "reshard",
        lambda np_: lambda t: (xform if np_ is xnp else jax).sharding.reshard(t, P(None, "x")),
        P("x", "y"),
    ),
    ("tile", lambda np_: lambda t: np_.tile(t, (2, 1, 2)), P("x", None)),
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
    args = [
        put_both(rng.randn(*shape).astype(np.float32), spec)
        for shape, spec in (((8, 4), P("x", None)), ((4, 6), P(None, "y")), ((6, 2), P("y", None)))
    ]
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
    (
        "conflicting add",
        lambda np_: lambda a, b: a + b,
        P("x", None),
        P("y", None),
        "add got incompatible shardings for broadcasting",
    ),
    (
        "contracting dims",
        lambda np_: lambda a, b: a @ b,
        P(None, "x"),
        P("y", None),
        "dot_general requires contracting dimensions to have consistent sharding",
    ),
    (
        "ambiguous dot",
        lambda np_: lambda a, b: a @ b,
        P(None, "x"),
        P("x", None),
        "Contracting dimensions are sharded and it is ambiguous",
    ),
    (
        "reshape",
        lambda np_: lambda a, b: a.reshape(16, 4),
        P("x", "y"),
        P(),
        "This reshape is not supported",
    ),
    (
        "uneven slice",
        lambda np_: lambda a, b: a[:3],
        P("x", None),
        P(),
        "slicing on sharded dims where out dim",
    ),
    (
        "axis twice",
        lambda np_: lambda a, b: a.sum(1)[:, None] * b.sum(0)[None, :],
        P("x", None),
        P(None, "x"),
        "produces an illegally sharded result",
    ),
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


# --------------------------------------------------------------------------- more rules

IDX = np.array([3, 1, 0, 7, 2, 5, 6, 4], np.int32)


IDX2 = np.argsort(-A, axis=1).astype(np.int32)


def lax_of(np_):
    return xform.lax if np_ is xnp else jax.lax


def lib_of(np_):
    return xform if np_ is xnp else jax


# (name, function of the same name in both libraries, its argument's spec, the primitive
# whose equations' types are compared: jnp functions may stage different equations around it)
RULES = [
    ("cumsum", lambda np_: lambda t: lax_of(np_).cumsum(t, 1), P("x", None), "cumsum"),
    ("cumprod", lambda np_: lambda t: lax_of(np_).cumprod(t, 0), P(None, "y"), "cumprod"),
    ("cummax", lambda np_: lambda t: lax_of(np_).cummax(t, 1), P("x", None), "cummax"),
    (
        "cumlogsumexp",
        lambda np_: lambda t: lax_of(np_).cumlogsumexp(t, 1),
        P("x", None),
        "cumlogsumexp",
    ),
    ("x[i]", lambda np_: lambda t: t[2], P(None, "y"), "squeeze"),
    ("x[:, 2:]", lambda np_: lambda t: t[:, 4:], P("x", None), "slice"),
    ("x[idx]", lambda np_: lambda t: t[IDX], P(None, "y"), "gather"),
    ("x[:, idx]", lambda np_: lambda t: t[:, IDX], P("x", None), "gather"),
    ("x[::-1]", lambda np_: lambda t: t[::-1], P(None, "y"), "rev"),
    (
        "dynamic_slice",
        lambda np_: lambda t: lax_of(np_).dynamic_slice(t, (1, 0), (4, 8)),
        P("x", "y"),
        "dynamic_slice",
    ),
    (
        "dynamic_update_slice",
        lambda np_: lambda t: lax_of(np_).dynamic_update_slice(t, t[:2] * 0, (1, 0)),
        P(None, "y"),
        "dynamic_update_slice",
    ),
    (
        "pad",
        lambda np_: lambda t: lax_of(np_).pad(t, 0.0, ((0, 0, 0), (1, 1, 0))),
        P("x", None),
        "pad",
    ),
    ("concatenate", lambda np_: lambda t: np_.concatenate([t, t], 1), P("x", None), "concatenate"),
    ("transpose", lambda np_: np_.transpose, P("x", "y"), "transpose"),
    (
        "sum keepdims",
        lambda np_: lambda t: t.sum(1, keepdims=True),
        P("x", "y"),
        "broadcast_in_dim",
    ),
    (
        "max keepdims",
        lambda np_: lambda t: t.max(0, keepdims=True),
        P("x", "y"),
        "broadcast_in_dim",
    ),
    ("argmax", lambda np_: lambda t: np_.argmax(t, 0), P("x", "y"), "argmax"),
    ("sort", lambda np_: lambda t: lax_of(np_).sort(t, dimension=1), P("x", None), "sort"),
    ("top_k", lambda np_: lambda t: lax_of(np_).top_k(t, 3), P("x", None), "top_k"),
    ("where", lambda np_: lambda t: lax_of(np_).select(t > 0, t, -t), P("x", "y"), "select_n"),
    ("clamp", lambda np_: lambda t: lax_of(np_).clamp(0.0, t, 1.0), P("x", "y"), "clamp"),
    ("expand_dims", lambda np_: lambda t: np_.expand_dims(t, 1), P("x", "y"), "broadcast_in_dim"),
    ("squeeze", lambda np_: lambda t: np_.squeeze(t[:, :1], 1), P("x", None), "squeeze"),
    (
        "broadcast_in_dim",
        lambda np_: lambda t: lax_of(np_).broadcast_in_dim(t, (8, 2, 8), (0, 2)),
        P("x", "y"),
        "broadcast_in_dim",
    ),
    (
        "convert",
        lambda np_: lambda t: lax_of(np_).convert_element_type(t, np_.int32),
        P("x", "y"),
        "convert_element_type",
    ),
    (
        "iota",
        lambda np_: lambda t: lax_of(np_).broadcasted_iota(np_.float32, (8, 8), 1) + t,
        P("x", "y"),
        "add",
    ),
    (
        "reduce_window",
        lambda np_: (
            lambda t: lax_of(np_).reduce_window(t, 0.0, lax_of(np_).add, (1, 2), (1, 2), "VALID")
        ),
        P("x", None),
        "reduce_window_sum",
    ),
    ("scatter", lambda np_: lambda t: t.at[:, 0].set(1.0), P("x", None), "scatter"),
    ("scatter-add", lambda np_: lambda t: t.at[IDX].add(1.0), P(None, "y"), "scatter-add"),
    (
        "scan",
        lambda np_: lambda t: lax_of(np_).scan(lambda c, r: (c + r, c * 2), t[0], t)[1],
        P(None, "y"),
        "scan",
    ),
    ("zeros_like", lambda np_: lambda t: np_.zeros_like(t) + 1, P("x", "y"), "broadcast_in_dim"),
    (
        "lax.full_like",
        lambda np_: lambda t: lax_of(np_).full_like(t, 2.0),
        P("x", None),
        "broadcast_in_dim",
    ),
    # along the batch (unindexed) dimension: one gather with batching dimensions, as JAX's
    (
        "take_along_axis",
        lambda np_: lambda t: np_.take_along_axis(t, IDX2, axis=1),
        P("x", None),
        "gather",
    ),
    (
        "take_along_axis of argsort",
        lambda np_: lambda t: np_.take_along_axis(t, np_.argsort(t, axis=1), axis=1),
        P("x", None),
        "gather",
    ),
    (
        "take_along_axis, indices broadcast",
        lambda np_: lambda t: np_.take_along_axis(t, IDX2[:1], axis=0),
        P(None, "y"),
        "gather",
    ),
    ("tile", lambda np_: lambda t: np_.tile(t, (1, 2)), P("x", None), "tile"),
    ("lax.tile", lambda np_: lambda t: lax_of(np_).tile(t, (2, 1)), P(None, "y"), "tile"),
    (
        "concatenate a replicated constant",
        lambda np_: lambda t: np_.concatenate([t, np_.zeros((2, 8))]),
        P(),
        "concatenate",
    ),
    (
        "concatenate a resharded constant",
        lambda np_: (
            lambda t: np_.concatenate(
                [t, lib_of(np_).sharding.reshard(np_.zeros((2, 8)), P(None, "y"))]
            )
        ),
        P(None, "y"),
        "concatenate",
    ),
    (
        "dynamic_update_slice of a resharded constant",
        lambda np_: (
            lambda t: lax_of(np_).dynamic_update_slice(
                t, lib_of(np_).sharding.reshard(np_.zeros((2, 8)), P(None, "y")), (3, 0)
            )
        ),
        P(None, "y"),
        "dynamic_update_slice",
    ),
]


def eqn_types(closed, name):
    """The result types of the ``name`` equations of ``closed``, those of the ``jit``s in it
    included (JAX's ``jnp.take_along_axis`` is one)."""
    found = [
        types for prim, types in jaxpr_types(closed)[len(closed.jaxpr.invars) :] if prim == name
    ]
    for e in closed.jaxpr.eqns:
        if e.primitive.name == "jit":
            found += eqn_types(e.params["jaxpr"], name)
    return found


@pytest.mark.parametrize("name,make,spec,prim", RULES, ids=[c[0] for c in RULES])
def test_sharding_rules_against_jax(name, make, spec, prim):
    x, jx = put_both(A, spec)
    f, jf = make(xnp), make(jnp)
    with jax.set_mesh(MESH):
        got, want = xform.make_jaxpr(f)(x), jax.make_jaxpr(jf)(jx)
        assert eqn_types(got, prim) == eqn_types(want, prim) != []
        assert [a.str_short() for a in got.out_avals] == [
            a.str_short(short_dtypes=True) for a in want.out_avals
        ]
        outs, jouts = f(x), jf(jx)  # eagerly: one partitioned program per operation
    for out, jout in zip(
        xform.tree_util.tree_leaves(outs), jax.tree_util.tree_leaves(jouts), strict=True
    ):
        assert out.sharding == jout.sharding
        np.testing.assert_allclose(np.asarray(out), np.asarray(jout), rtol=1e-6)


MORE_ERRORS = [
    (
        "cumsum over a split axis",
        lambda np_: lambda a, b: lax_of(np_).cumsum(a, 0),
        P("x", None),
        P(),
        "Input should be unsharded over the axis being reduced",
    ),
    (
        "sort over a split axis",
        lambda np_: lambda a, b: lax_of(np_).sort(a, dimension=0),
        P("x", "y"),
        P(),
        "Arguments to sort must be unsharded over the sorting dimension",
    ),
    (
        "sort of unequal shardings",
        lambda np_: lambda a, b: lax_of(np_).sort((a, b), dimension=1, num_keys=1),
        P("x", None),
        P("y", None),
        "Arguments to sort must have equal shardings",
    ),
    (
        "top_k over a split axis",
        lambda np_: lambda a, b: lax_of(np_).top_k(a, 2),
        P(None, "y"),
        P(),
        "The input should be unsharded over the axis along which",
    ),
    (
        "gather of a split axis",
        lambda np_: lambda a, b: a[IDX],
        P("x", "y"),
        P(),
        re.escape("Use `.at[...].get(out_sharding=)` to provide output PartitionSpec"),
    ),
    (
        "dynamic_update_slice",
        lambda np_: lambda a, b: lax_of(np_).dynamic_update_slice(a, b[:4], (0, 0)),
        P("x", "y"),
        P(None, "y"),
        re.escape(
            "dynamic_update_slice operand sharding must be equal to update sharding, got "
            "operand sharding float32[8@x,8@y]({Explicit: ('x', 'y')}) and update "
            "sharding float32[4,8@y]({Explicit: ('x', 'y')})."
        ),
    ),
    (
        "select cases",
        lambda np_: lambda a, b: lax_of(np_).select(a > 0, a, b),
        P("x", "y"),
        P(None, "y"),
        "select cases must have the same shardings",
    ),
    (
        "select predicate",
        lambda np_: lambda a, b: lax_of(np_).select(b > 0, a, a),
        P("x", "y"),
        P(None, "y"),
        "select `which` must be scalar or have the same sharding",
    ),
    (
        "uneven pad",
        lambda np_: lambda a, b: lax_of(np_).pad(a, 0.0, ((1, 1, 0), (0, 0, 0))),
        P("x", None),
        P(),
        re.escape("padding on sharded dims where out dim (10) is not"),
    ),
    (
        "concatenate",
        lambda np_: lambda a, b: np_.concatenate([a, b]),
        P("x", None),
        P(None, "y"),
        "All operands should have the same sharding. Got shardings",
    ),
    # a constant is replicated: it is not laid out as a split operand by itself
    (
        "concatenate with a constant",
        lambda np_: lambda a, b: np_.concatenate([a, np_.zeros((2, 8))]),
        P(None, "y"),
        P(),
        re.escape(
            "spec=P(None, 'y')), NamedSharding(mesh=AbstractMesh('x': 4, 'y': 2, "
            "axis_types=(Explicit, Explicit), device_kind=cpu, num_cores=None, "
            "platform=cpu), spec=P(None, None))"
        ),
    ),
    (
        "constant first",
        lambda np_: lambda a, b: np_.concatenate([np_.ones((8, 2)), a], 1),
        P("x", None),
        P(),
        "All operands should have the same sharding",
    ),
    (
        "dynamic_update_slice of a constant",
        lambda np_: lambda a, b: lax_of(np_).dynamic_update_slice(a, np_.zeros((2, 8)), (0, 0)),
        P(None, "y"),
        P(),
        re.escape(
            "got operand sharding float32[8,8@y]({Explicit: ('x', 'y')}) and update "
            "sharding float32[2,8]({Explicit: ('x', 'y')})."
        ),
    ),
    (
        "dynamic_update_slice into a constant",
        lambda np_: lambda a, b: lax_of(np_).dynamic_update_slice(np_.zeros((8, 8)), a[:2], (0, 0)),
        P(None, "y"),
        P(),
        "dynamic_update_slice operand sharding must be equal to update sharding",
    ),
    (
        "tile of a split axis",
        lambda np_: lambda a, b: np_.tile(a, (2, 1)),
        P("x", None),
        P(),
        re.escape(
            "Operand cannot be sharded on dimension 0 when the tiling is non-trivial. Got "
            "input type: float32[8@x,8] with reps: (2, 1)"
        ),
    ),
]


@pytest.mark.parametrize(
    "name,make,spec_a,spec_b,match", MORE_ERRORS, ids=[e[0] for e in MORE_ERRORS]
)
def test_more_sharding_type_errors(name, make, spec_a, spec_b, match):
    test_sharding_type_errors(name, make, spec_a, spec_b, match)


# --------------------------------------------------------------------------- out_sharding

OUT_SHARDING = [
    (
        "lax.reshape",
        lambda lib, np_: lambda t: lib.lax.reshape(t, (16, 4), out_sharding=P("x", None)),
    ),
    ("jnp.reshape", lambda lib, np_: lambda t: np_.reshape(t, (16, 4), out_sharding=P("x"))),
    ("Array.reshape", lambda lib, np_: lambda t: t.reshape(16, 4, out_sharding=P(None, "y"))),
    (
        "reshape order F",
        lambda lib, np_: lambda t: np_.reshape(t, (16, 4), order="F", out_sharding=P("x", None)),
    ),
    (
        "lax.dot_general",
        lambda lib, np_: (
            lambda t: lib.lax.dot_general(t, t, (((1,), (0,)), ((), ())), out_sharding=P("x", "y"))
        ),
    ),
    ("lax.dot", lambda lib, np_: lambda t: lib.lax.dot(t, t.T, out_sharding=P("x", None))),
    ("jnp.dot", lambda lib, np_: lambda t: np_.dot(t, t, out_sharding=P("x", None))),
    ("jnp.matmul", lambda lib, np_: lambda t: np_.matmul(t, t, out_sharding=P(None, "y"))),
    ("einsum", lambda lib, np_: lambda t: np_.einsum("ij,jk->ki", t, t, out_sharding=P("y", None))),
    (
        "einsum of 3",
        lambda lib, np_: lambda t: np_.einsum("ij,jk,kl->il", t, t, t, out_sharding=P("x", None)),
    ),
    (
        "grad of reshape",
        lambda lib, np_: lib.grad(
            lambda u: (u.reshape(16, 4, out_sharding=P("x", None)) ** 2).sum()
        ),
    ),
]


@pytest.mark.parametrize("name,make", OUT_SHARDING, ids=[c[0] for c in OUT_SHARDING])
def test_out_sharding(name, make):
    x, jx = put_both(A, P("x", "y"))
    f, jf = make(xform, xnp), make(jax, jnp)
    with jax.set_mesh(MESH):
        got, want = xform.make_jaxpr(f)(x), jax.make_jaxpr(jf)(jx)
        assert [a.str_short() for a in got.out_avals] == [
            a.str_short(short_dtypes=True) for a in want.out_avals
        ]
        if name != "reshape order F":  # (JAX's transposes in its reshape)
            assert str(got) == str(want)
        out, jout = f(x), jf(jx)
    assert out.sharding == jout.sharding
    np.testing.assert_allclose(np.asarray(out), np.asarray(jout), rtol=1e-5)


def test_out_sharding_errors_as_jax():
    x, jx = put_both(A, P("x", "y"))
    for lib in (jax, xform):  # a PartitionSpec needs a mesh
        with pytest.raises(ValueError, match="Using PartitionSpec when you are not under a mesh"):
            lib.lax.reshape(jx if lib is jax else x, (16, 4), out_sharding=P("x"))
        with pytest.raises(TypeError, match="`out_sharding` argument of dot_general only"):
            lib.lax.dot_general(A, A, (((1,), (0,)), ((), ())), out_sharding="x")
    with jax.set_mesh(MESH):  # without out_sharding: refused, the fix named
        with pytest.raises(
            ShardingTypeError,
            match="specify the sharding of the output via the `out_sharding` argument",
        ):
            x.reshape(16, 4)
        assert xform.typeof(x.reshape(16, 4, out_sharding=P(("x", "y")))).str_short() == jax.typeof(
            jx.reshape(16, 4, out_sharding=P(("x", "y")))
        ).str_short(True)


# --------------------------------------------------------------------------- auto/explicit axes

AXES = [
    (
        "auto_axes",
        MESH,
        P("x", "y"),
        lambda lib, np_: lib.sharding.auto_axes(
            lambda t: (t @ t.T).reshape(16, 4), out_sharding=P("x", None)
        ),
    ),
    (
        "auto_axes of one axis",
        MESH,
        P("x", "y"),
        lambda lib, np_: lib.sharding.auto_axes(
            lambda t: t * 2, axes="x", out_sharding=P("x", "y")
        ),
    ),
    (
        "auto_axes, out_sharding per call",
        MESH,
        P("x", "y"),
        lambda lib, np_: (
            lambda t: lib.sharding.auto_axes(lambda u: np_.sin(u).sum(0))(t, out_sharding=P("y"))
        ),
    ),
    (
        "explicit_axes",
        AUTO,
        P("x", None),
        lambda lib, np_: lib.sharding.explicit_axes(lambda t: t @ t, in_sharding=P("x", None)),
    ),
    (
        "explicit_axes of one axis",
        AUTO,
        P("x", None),
        lambda lib, np_: lib.sharding.explicit_axes(np_.sin, axes="y", in_sharding=P(None, "y")),
    ),
    # over a mesh with both kinds of axes: the Auto axis keeps its split out of the region
    (
        "explicit_axes, mixed mesh",
        MIXED,
        P("x", None),
        lambda lib, np_: lib.sharding.explicit_axes(
            lambda t: t * 2, axes="y", in_sharding=P("x", "y")
        ),
    ),
    (
        "explicit_axes, mixed mesh, reduced",
        MIXED,
        P("x", None),
        lambda lib, np_: lib.sharding.explicit_axes(
            lambda t: t.sum(0), axes="y", in_sharding=P("x", "y")
        ),
    ),
    (
        "auto_axes, mixed mesh",
        MIXED,
        P("x", "y"),
        lambda lib, np_: lib.sharding.auto_axes(
            lambda t: t @ t, axes="x", out_sharding=P("x", None)
        ),
    ),
    (
        "auto_axes of one axis, into a mixed region",
        MESH,
        P("x", "y"),
        lambda lib, np_: lib.sharding.auto_axes(
            lambda t: np_.sin(t).sum(1), axes="y", out_sharding=P("x")
        ),
    ),
]


@pytest.mark.parametrize("name,mesh,spec,make", AXES, ids=[c[0] for c in AXES])
def test_auto_and_explicit_axes(name, mesh, spec, make):
    x, jx = put_both(A, spec, mesh)
    f, jf = make(xform, xnp), make(jax, jnp)
    with jax.set_mesh(mesh):
        assert str(xform.make_jaxpr(f)(x)) == str(jax.make_jaxpr(jf)(jx))
        text, jtext = xform.jit(f).lower(x).as_text(), jax.jit(jf).lower(jx).as_text()
        out, jout = f(x), xform.jit(f)(x)
        want = jf(jx)
    # the Shardy constraints: none into an all-Auto region, open dimensions into a mixed one
    constraints = r"sdy\.sharding_constraint %\S+ (<[^>]*>)"
    assert re.findall(constraints, text) == re.findall(constraints, jtext)
    assert xform.typeof(out).str_short() == jax.typeof(want).str_short(short_dtypes=True)
    assert out.sharding == want.sharding  # eagerly: the layout too, Auto axes' splits kept
    if mesh is MESH:
        assert jout.sharding == want.sharding
    for o in (out, jout):
        np.testing.assert_allclose(np.asarray(o), np.asarray(want), rtol=1e-5)


def test_auto_and_explicit_axes_errors_as_jax():
    x, jx = put_both(A, P("x", None), AUTO)
    for lib in (jax, xform):
        with pytest.raises(ValueError, match="Context mesh cannot be empty"):
            lib.sharding.explicit_axes(lambda t: t, in_sharding=P())(x if lib is xform else jx)
        with jax.set_mesh(AUTO):
            with pytest.raises(TypeError, match="Missing required keyword argument: 'in_"):
                lib.sharding.explicit_axes(lambda t: t)(x if lib is xform else jx)
        with jax.set_mesh(MESH):
            with pytest.raises(TypeError, match="Missing required keyword argument: 'out_"):
                lib.sharding.auto_axes(lambda t: t)(A)


# --------------------------------------------------------------------------- grad


def test_grad_cotangents_of_dots_take_their_operands_types():
    """The transpose of a dot gives its cotangent the operand's type by its own
    ``out_sharding`` (as JAX's), with no reshard after it."""
    x, jx = put_both(A, P("x", "y"))
    w, jw = put_both(A[:, :4], P("y", None))

    def loss(lib, np_):
        def f(w, x):
            h = lib.sharding.reshard(np_.sin(x), P("x", None))
            return (np_.tanh(h @ w) ** 2).sum() + (x @ lib.sharding.reshard(w, P())).sum()

        return f

    def picked(closed):  # the contractions, their transposes and the reshards of arrays
        return [
            (
                e.primitive.name,
                [
                    str(
                        v.aval.str_short(
                            *(() if isinstance(v.aval, xform.core.ShapedArray) else (True,))
                        )
                    )
                    for v in e.outvars
                ],
            )
            for e in closed.jaxpr.eqns
            if e.primitive.name in ("dot_general", "transpose")
            or e.primitive.name == "reshard"
            and e.invars[0].aval.shape
        ]

    with jax.set_mesh(MESH):
        got = xform.make_jaxpr(xform.grad(loss(xform, xnp), (0, 1)))(w, x)
        want = jax.make_jaxpr(jax.grad(loss(jax, jnp), (0, 1)))(jw, jx)
        g = xform.jit(xform.grad(loss(xform, xnp), (0, 1)))(w, x)
        jg = jax.jit(jax.grad(loss(jax, jnp), (0, 1)))(jw, jx)
    assert picked(got) == picked(want)
    assert [a.str_short() for a in got.out_avals] == ["f32[8@y,4]", "f32[8@x,8@y]"]
    for a, b in zip(g, jg, strict=True):
        assert a.sharding == b.sharding
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-4, atol=1e-5)


GRADS = [
    (
        "dot of a resharded operand",
        lambda lib, np_: (
            lambda w, x: (np_.sin(x @ lib.sharding.reshard(w, P(None, None))) * 2).sum()
        ),
    ),
    ("sums and mean", lambda lib, np_: lambda w, x: (x.T * 3.0).sum(0).sum() + (w * w).mean()),
    (
        "reshape and dot",
        lambda lib, np_: (
            lambda w, x: np_.sin(
                x.reshape(4, 16, out_sharding=P("x", None))
                @ w.reshape(16, 2, out_sharding=P("x", None))
            ).sum()
        ),
    ),
]


@pytest.mark.parametrize("name,make", GRADS, ids=[c[0] for c in GRADS])
def test_grad_jaxpr_as_jax(name, make):
    """``make_jaxpr(grad(f))`` prints as JAX's: the seed, the broadcast of a sum's cotangent
    and each dot's cotangent typed as JAX types them, no reshard of xform's own."""
    x, jx = put_both(A, P("x", "y"))
    w, jw = put_both(A[:, :4], P("y", None))
    with jax.set_mesh(MESH):
        got = xform.make_jaxpr(xform.grad(make(xform, xnp)))(w, x)
        want = jax.make_jaxpr(jax.grad(make(jax, jnp)))(jw, jx)
        g = xform.grad(make(xform, xnp))(w, x)  # eagerly
        jg = jax.grad(make(jax, jnp))(jw, jx)
    assert str(got) == str(want)
    assert xform.typeof(g).str_short() == jax.typeof(jg).str_short(short_dtypes=True)
    np.testing.assert_allclose(np.asarray(g), np.asarray(jg), rtol=1e-4, atol=1e-5)


# --------------------------------------------------------------------------- vmap of dots

B = np.arange(4 * 8 * 8, dtype=np.float32).reshape(4, 8, 8) / 100

# (name, function, its arguments' specs): the dot's out_sharding names the per-example
# result's dimensions; vmap gives the batch dimension the mapped operands' split, as JAX's.
VMAP_DOTS = [
    (
        "both mapped, batch split",
        lambda lib, np_: lib.vmap(
            lambda a, b: lib.lax.dot_general(
                a, b, (((1,), (0,)), ((), ())), out_sharding=P(None, "y")
            )
        ),
        (P("x"), P("x")),
    ),
    (
        "lhs mapped at 1",
        lambda lib, np_: lib.vmap(
            lambda a: lib.lax.dot_general(
                a, A, (((1,), (0,)), ((), ())), out_sharding=P(None, "y")
            ),
            in_axes=1,
        ),
        (P(None, "x"),),
    ),
    (
        "rhs mapped at 2, batch split",
        lambda lib, np_: lib.vmap(
            lambda b: lib.lax.dot_general(
                A[:, :4], b, (((1,), (0,)), ((), ())), out_sharding=P("y", None)
            ),
            in_axes=2,
        ),
        (P(None, None, "x"),),
    ),
    (
        "batch unsplit",
        lambda lib, np_: lib.vmap(lambda a, b: np_.matmul(a, b, out_sharding=P("x", None))),
        (P(None, "x"), P()),
    ),
]


@pytest.mark.parametrize("name,make,specs", VMAP_DOTS, ids=[c[0] for c in VMAP_DOTS])
def test_vmap_of_dots_with_out_sharding(name, make, specs):
    args = [put_both(B, s) for s in specs]
    xs, jxs = [a for a, _ in args], [b for _, b in args]
    f, jf = make(xform, xnp), make(jax, jnp)
    with jax.set_mesh(MESH):
        got, want = xform.make_jaxpr(f)(*xs), jax.make_jaxpr(jf)(*jxs)
        assert str(got) == str(want)
        assert [a.str_short() for a in got.out_avals] == [
            a.str_short(short_dtypes=True) for a in want.out_avals
        ]
        out, jout = f(*xs), jf(*jxs)
    assert xform.typeof(out).str_short() == jax.typeof(jout).str_short(short_dtypes=True)
    assert out.sharding == jout.sharding
    np.testing.assert_allclose(np.asarray(out), np.asarray(jout), rtol=1e-5)


# --------------------------------------------------------------------------- mixed meshes

# (mesh axis types, the array's layout, the reshard's spec): over a mesh with Auto axes the
# partitioner keeps an Auto axis where the Explicit ones asked for leave it room.
E_, AU_ = AxisType.Explicit, AxisType.Auto
RESHARD_MIXED = [
    ((E_, AU_), P("x", "y"), P("x", None)),
    ((E_, AU_), P("x", "y"), P()),
    ((E_, AU_), P(None, "y"), P("x", None)),
    ((E_, AU_), P("y", "x"), P("x", None)),
    ((E_, AU_), P("y", "x"), P(None, None)),
    ((E_, AU_), P(("x", "y")), P("x", None)),
    ((E_, AU_), P(("x", "y")), P(None, None)),
    ((AU_, E_), P("x", "y"), P(None, None)),
    ((AU_, E_), P(("x", "y")), P(None, "y")),
    ((AU_, E_), P(("x", "y")), P("y", None)),
    ((AU_, E_), P("y", "x"), P("y", None)),
]


@pytest.mark.parametrize(
    "types,src,dst", RESHARD_MIXED, ids=[f"{s}->{d}@{t[0].name}" for t, s, d in RESHARD_MIXED]
)
def test_eager_reshard_on_a_mixed_mesh(types, src, dst):
    mesh = jax.make_mesh((4, 2), ("x", "y"), axis_types=types)
    x, jx = put_both(A, src, MESH)  # laid out over the all-Explicit mesh of the same devices
    with jax.set_mesh(mesh):
        out, jout = xform.sharding.reshard(x, dst), jax.sharding.reshard(jx, dst)
    assert out.sharding == jout.sharding
    assert xform.typeof(out).str_short() == jax.typeof(jout).str_short(short_dtypes=True)
    np.testing.assert_array_equal(np.asarray(out), A)


def test_mixed_mesh_types_and_reshard_errors_as_jax():
    x, jx = put_both(A, P("x", "y"), MIXED)  # the Auto axis is no part of the type
    assert (
        xform.typeof(x).str_short() == jax.typeof(jx).str_short(short_dtypes=True) == "f32[8@x,8]"
    )
    match = re.escape(
        "PartitionSpec passed to reshard cannot contain axis names that are of "
        "type Auto or Manual. Got PartitionSpec: P(None, 'y') with axis name: y "
        "of type: AxisType.Auto."
    )
    with jax.set_mesh(MIXED):
        for lib, t in ((jax, jx), (xform, x)):
            with pytest.raises(ValueError, match=match):
                lib.sharding.reshard(t, P(None, "y"))
            with pytest.raises(ValueError, match=match):
                lib.jit(lambda u, lib=lib: lib.sharding.reshard(u, P(None, "y")))(t)


# --------------------------------------------------------------------------- jit's annotations

# (name, mesh, argument spec, function): the arguments and results of jit's module are
# annotated as JAX's: results as their types say over a mesh of Explicit axes (a constant's
# replicated), left open over one with Auto axes unless every dimension is split.
ANNOTATED = [
    (
        "a constant and a scalar",
        MESH,
        P("x", None),
        lambda np_: lambda t: (np_.zeros((4, 4)), t.sum()),
    ),
    ("passed through", MESH, P("x", "y"), lambda np_: lambda t: (t, t * 2)),
    ("mixed mesh", MIXED, P("x", "y"), lambda np_: lambda t: (t * 2, t.sum(1), t.sum())),
    ("mixed mesh, reduced", MIXED, P("x", None), lambda np_: lambda t: np_.sin(t).sum(0)),
    ("auto mesh", AUTO, P("x", None), lambda np_: lambda t: t.T * 2),
]


@pytest.mark.parametrize("name,mesh,spec,make", ANNOTATED, ids=[c[0] for c in ANNOTATED])
def test_jit_module_annotations_as_jax(name, mesh, spec, make):
    x, jx = put_both(A, spec, mesh)
    f, jf = make(xnp), make(jnp)
    with jax.set_mesh(mesh):
        text, jtext = xform.jit(f).lower(x).as_text(), jax.jit(jf).lower(jx).as_text()
        outs, jouts = xform.jit(f)(x), jax.jit(jf)(jx)

    def signature(t):  # main's arguments and results, less JAX's result_info
        sig = re.search(r"func\.func public @main(.*) \{$", t, re.M).group(1)
        sig = re.sub(r'(, )?jax\.result_info = "[^"]*"(, )?', "", sig).replace(" {}", "")
        return re.sub(r"-> \((.*)\)$", r"-> \1", sig)

    assert signature(text) == signature(jtext)
    for out, jout in zip(
        xform.tree_util.tree_leaves(outs), jax.tree_util.tree_leaves(jouts), strict=True
    ):
        assert out.sharding == jout.sharding
        assert xform.typeof(out).str_short() == jax.typeof(jout).str_short(short_dtypes=True)
        np.testing.assert_allclose(np.asarray(out), np.asarray(jout), rtol=1e-5)

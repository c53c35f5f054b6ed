"""shard_map against JAX's on 8 host CPU devices (a 1-D mesh of 8, a 4x2 mesh): every
collective x {eager, jit, grad, vmap} over one mesh axis and over both, values and result
shardings; the lowering (sdy.manual_computation, the collectives' groups); scan, cond and
while in the body; gradients with replicated arguments (JAX's check_vma=True values);
check_vma's errors (JAX's type and message); bad input. JAX deadlocks here on pipelined
8-device shard_maps, so each JAX result is waited for before the next call."""

import functools
import re

import jax
import numpy as np
import pytest
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

import xform
from tests.harness import assert_same

MESH = jax.make_mesh((4, 2), ("x", "y"))
A = (np.arange(64, dtype=np.float32).reshape(8, 8) - 20) / 9
SPEC = P("x", "y")
JA = jax.device_put(A, NamedSharding(MESH, SPEC))  # explicit mode wants it laid out
XA = xform.device_put(A, NamedSharding(MESH, SPEC))


def _placed(mod, xs, specs, mesh=MESH):
    """``xs`` laid out as ``specs`` say by ``mod`` (xform or jax): on an Explicit mesh
    shard_map's in_specs must be the arguments' own shardings."""
    return [mod.device_put(x, NamedSharding(mesh, s)) for x, s in zip(xs, specs, strict=True)]


def every_collective(lax):
    def body(a):
        return (
            lax.psum(a, "x"),
            lax.pmean(a, ("x", "y")),
            lax.pmax(a, "y"),
            lax.pmin(a, "x"),
            lax.all_gather(a, "y", tiled=True),
            lax.all_gather(a, "x", axis=1),
            lax.psum_scatter(a, "x", scatter_dimension=1, tiled=True),
            lax.ppermute(a, "x", [(i, (i + 1) % 4) for i in range(4)]),
            lax.all_to_all(a, "y", 0, 1, tiled=True),
            a + lax.axis_index("x") * 10 + lax.axis_index("y"),
        )

    return body


OUT_SPECS = (
    P("x", "y"),
    P("x", "y"),
    P("x", "y"),
    P("x", "y"),
    P("x", "y"),
    P("x", "y", None),
    P("x", "y"),
    P("x", "y"),
    P("x", "y"),
    P("x", "y"),
)


@pytest.fixture(scope="module")
def collectives_both():
    kw = dict(mesh=MESH, in_specs=SPEC, out_specs=OUT_SPECS)
    xf = xform.jit(xform.shard_map(every_collective(xform.lax), **kw))
    jf = jax.jit(jax.shard_map(every_collective(jax.lax), check_vma=False, **kw))
    return xf, jf


def test_every_collective_under_jit(collectives_both):
    xf, jf = collectives_both
    outs, expected = xf(XA), jf(JA)
    for k, (o, e) in enumerate(zip(outs, expected, strict=True)):
        assert_same(o, e, rtol=1e-6, atol=1e-6, what=f"output {k}")
        assert o.sharding == e.sharding


def _collective_ops(text):
    """Each collective of a lowered module with its groups/pairs and channel attributes."""
    return sorted(
        re.findall(
            r'"?stablehlo\.(all_reduce|all_gather|reduce_scatter|all_to_all|'
            r'collective_permute)"?\(.*?(replica_groups = dense<[^>]*>|'
            r"source_target_pairs = dense<[^>]*>)",
            text,
        )
    )


def test_lowered_as_jax(collectives_both):
    xf, jf = collectives_both
    text, jtext = xf.lower(XA).as_text(), jf.lower(JA).as_text()
    manual = re.compile(r"sdy\.manual_computation\(%arg0\) (in_shardings=.*?manual_axes=\{[^}]*\})")
    assert manual.search(text).group(1) == manual.search(jtext).group(1)
    assert _collective_ops(text) == _collective_ops(jtext)
    assert text.count(
        "channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>"
    ) == jtext.count("channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>")
    assert "stablehlo.partition_id" in text


def test_eager_shardings_and_nested_specs():
    f = xform.shard_map(
        lambda a, b: (a * 2, xform.lax.psum(b["w"], "y")),
        mesh=MESH,
        in_specs=(SPEC, {"w": P(None, "y")}),
        out_specs=(SPEC, P()),
    )
    out, w = f(XA, {"w": xform.device_put(A, NamedSharding(MESH, P(None, "y")))})
    assert out.sharding == NamedSharding(MESH, SPEC) and w.sharding == NamedSharding(MESH, P())
    np.testing.assert_allclose(np.asarray(out), A * 2)
    np.testing.assert_allclose(np.asarray(w), A[:, :4] + A[:, 4:], rtol=1e-6)
    old = xform.experimental.shard_map.shard_map(lambda a: a + 1, MESH, SPEC, SPEC)
    np.testing.assert_allclose(np.asarray(old(XA)), A + 1)


def test_grad():
    def loss(lax, shard_map):
        def body(a):
            s = lax.psum(a * a, "x")
            p = lax.ppermute(a, "y", [(0, 1), (1, 0)])
            return (s * p).sum(), lax.all_gather(a, "x", tiled=True)

        def f(a):
            total, gathered = shard_map(
                body, mesh=MESH, in_specs=SPEC, out_specs=(P(), P(None, "y")), check_vma=False
            )(a)
            return total + (gathered**2).sum()

        return f

    with jax.set_mesh(MESH):
        expected = jax.jit(jax.grad(loss(jax.lax, jax.shard_map)))(JA)
    got = xform.grad(loss(xform.lax, xform.shard_map))(XA)
    assert_same(got, expected, rtol=2e-5, atol=2e-5)
    assert got.sharding.is_equivalent_to(expected.sharding, 2)


def test_vmap_and_control_flow_inside():
    def body(lax):
        def f(a):
            def step(c, row):
                return c + lax.psum(row, "x"), c.sum()

            carry, ys = lax.scan(step, np.zeros(a.shape[1], np.float32), a)
            return lax.cond(carry.sum() > 0, lambda c: c * 2, lambda c: -c, carry), ys

        return f

    # vmap over a leading batch axis: the batch dimension is not split
    kw = dict(mesh=MESH, in_specs=P("x", "y"), out_specs=(P("y"), P("x")), check_vma=False)
    stacked = np.stack([A, -A])
    laid_out = NamedSharding(MESH, P(None, "x", "y"))
    got = xform.vmap(xform.shard_map(body(xform.lax), **kw))(xform.device_put(stacked, laid_out))
    with jax.set_mesh(MESH):
        expected = jax.jit(jax.vmap(jax.shard_map(body(jax.lax), **kw)))(
            jax.device_put(stacked, laid_out)
        )
    assert_same(got, expected, rtol=1e-5, atol=1e-5)


def test_bad_input():
    f = xform.shard_map(lambda a: a, mesh=MESH, in_specs=P("z"), out_specs=P("z"))
    with pytest.raises(ValueError, match=r"in_specs\[0\] is P\('z',\).*axis 'z'.*not in mesh"):
        f(A)
    g = xform.shard_map(lambda a: a, mesh=MESH, in_specs=P(("x", "y")), out_specs=P("x"))
    with pytest.raises(ValueError, match=r"dimension 0 \(size 4\) is not divisible by 8"):
        g(A[:4])
    h = xform.shard_map(lambda a: a * 2, mesh=MESH, in_specs=SPEC, out_specs=P("x"))
    with pytest.raises(ValueError, match="out_specs.*replicated across mesh axis 'y'"):
        h(XA)
    ok = xform.shard_map(
        lambda a: a * 2, mesh=MESH, in_specs=SPEC, out_specs=P("x"), check_vma=False
    )
    assert ok(XA).shape == (8, 4)
    with pytest.raises(ValueError, match="no mesh given"):
        xform.shard_map(lambda a: a, in_specs=SPEC, out_specs=SPEC)(A)


def _error(mod, f):
    with pytest.raises(ValueError) as info:
        f()
    return (
        str(info.value).split("--------------------")[0].strip().replace(mod.__name__ + ".", "lib.")
    )


@pytest.mark.parametrize("jitted", [False, True])
def test_in_specs_must_be_the_arguments_own_on_an_explicit_mesh(jitted):
    """On a mesh of Explicit axes, all manual, an argument's type holds its sharding and
    in_specs must name it (JAX's ValueError and message); omitted, they are inferred."""

    def run(mod, x, **kw):
        f = mod.shard_map(lambda a: a * 2, mesh=MESH, out_specs=SPEC, **kw)
        return (mod.jit(f) if jitted else f)(x)

    for x, spec in [(A, SPEC), (JA, P("x")), (JA, P(None, "y"))]:
        xs = {jax: x, xform: x if x is A else XA}
        assert _error(xform, functools.partial(run, xform, xs[xform], in_specs=spec)) == _error(
            jax, functools.partial(run, jax, xs[jax], in_specs=spec)
        )
    assert_same(run(xform, XA), run(jax, JA))  # inferred in_specs
    auto = jax.make_mesh((4, 2), ("x", "y"), axis_types=(jax.sharding.AxisType.Auto,) * 2)
    out = xform.shard_map(lambda a: a * 2, mesh=auto, in_specs=SPEC, out_specs=SPEC)(A)
    assert_same(out, A * 2)  # Auto axes: laid out as in_specs say


def test_jaxpr_types_on_a_mesh_of_other_axis_order_as_jax():
    """Varying axes print in the mesh's order (not by name), shard_map results carry their
    out_specs in explicit mode, and collectives print JAX's names and params."""
    mesh = jax.make_mesh((2, 4), ("y", "x"))
    spec, a = P("y", "x"), np.arange(32, dtype=np.float32).reshape(8, 4)

    def body(lax):
        return lambda b: (
            lax.all_gather(b, "x", tiled=True),
            lax.ppermute(b, "y", [(0, 1), (1, 0)]),
            lax.pmean(b, "y"),
            lax.psum_scatter(b, "x", tiled=True),
        )

    texts = []
    for mod in (xform, jax):
        f = mod.shard_map(
            body(mod.lax), mesh=mesh, in_specs=spec, out_specs=(spec, spec, P(None, "x"), spec)
        )
        x = mod.device_put(a, NamedSharding(mesh, spec))
        texts.append(str(mod.make_jaxpr(f)(x)))
        texts.append(
            str(
                mod.make_jaxpr(mod.vmap(f))(
                    mod.device_put(np.stack([a, -a]), NamedSharding(mesh, P(None, *spec)))
                )
            )
        )
    assert texts[:2] == texts[2:]
    assert "{V:(y,x)}" in texts[0] and "f32[32@y,4@x]" in texts[0]


def test_partial_manual_axes_as_jax():
    auto = jax.make_mesh((4, 2), ("x", "y"), axis_types=(jax.sharding.AxisType.Auto,) * 2)
    kw = dict(mesh=auto, in_specs=P("x"), out_specs=P(), axis_names={"x"})
    xf = xform.jit(xform.shard_map(lambda b: xform.lax.psum(b, "x") * 2, **kw))
    jf = jax.jit(jax.shard_map(lambda b: jax.lax.psum(b, "x") * 2, **kw))
    out, expected = xf(A), jf(A)
    assert_same(out, expected)
    assert out.sharding == expected.sharding
    manual = re.compile(r"manual_computation\(%arg0\) (.*manual_axes=\{[^}]*\})")
    text, jtext = xf.lower(A).as_text(), jf.lower(A).as_text()
    assert manual.search(text).group(1) == manual.search(jtext).group(1)  # {"x", ?}: open
    assert _collective_ops(text) == _collective_ops(jtext)


# --------------------------------------------------------------------------- the table
# Every collective x {plain, jit, grad, vmap} x {1-D mesh of 8; 4x2 mesh over "x"; over both}.
# One shard_map per (mesh, mode) holds every collective (argument k feeds collective k), so a
# row costs one compile for each library; the rows then compare their own output.

MESH8 = jax.make_mesh((8,), ("i",))
B = np.sin(np.arange(128, dtype=np.float32).reshape(8, 16)) * 3
MESHES = {"1d": (MESH8, P("i"), "i"), "2d-x": (MESH, SPEC, "x"), "2d-xy": (MESH, SPEC, ("x", "y"))}


def _size(mesh, axes):
    return int(np.prod([mesh.shape[n] for n in ((axes,) if isinstance(axes, str) else axes)]))


def _without(spec, axes):
    """``spec`` with ``axes`` left out: the layout of a value replicated over them."""
    gone = {axes} if isinstance(axes, str) else set(axes)
    entries = []
    for e in spec:
        names = () if e is None else (e,) if isinstance(e, str) else tuple(e)
        kept = tuple(n for n in names if n not in gone)
        entries.append(None if not kept else kept[0] if len(kept) == 1 else kept)
    return P(*entries)


def _shift(n):
    return [(k, (k + 1) % n) for k in range(n)]


# name -> (body of (lax, axes, size), whether its result is replicated over the axes)
COLLECTIVES = {
    "psum": (lambda lax, ax, n: lambda a: lax.psum(a, ax), True),
    "pmean": (lambda lax, ax, n: lambda a: lax.pmean(a, ax), True),
    "pmax": (lambda lax, ax, n: lambda a: lax.pmax(a, ax), True),
    "pmin": (lambda lax, ax, n: lambda a: lax.pmin(a, ax), True),
    "all_gather": (
        lambda lax, ax, n: lambda a: lax.all_gather(a, ax, axis=1, tiled=True),
        False,
    ),  # varying, as JAX types it (all_gather_invariant is not)
    "psum_scatter": (
        lambda lax, ax, n: lambda a: lax.psum_scatter(a, ax, scatter_dimension=1, tiled=True),
        False,
    ),
    "ppermute": (lambda lax, ax, n: lambda a: lax.ppermute(a, ax, _shift(n)), False),
    "all_to_all": (lambda lax, ax, n: lambda a: lax.all_to_all(a, ax, 1, 0, tiled=True), False),
    "axis_index": (lambda lax, ax, n: lambda a: a * (lax.axis_index(ax) + 1), False),
}
NAMES = tuple(COLLECTIVES)
SMOOTH = tuple(n for n in NAMES if n not in ("pmax", "pmin"))  # JAX differentiates these


def _every(mod, mesh_key, names, **kw):
    """One shard_map of ``mod`` applying collective k to argument k."""
    mesh, spec, axes = MESHES[mesh_key]
    n = _size(mesh, axes)
    bodies = [COLLECTIVES[c][0](mod.lax, axes, n) for c in names]
    out_specs = tuple(_without(spec, axes) if COLLECTIVES[c][1] else spec for c in names)

    def body(*blocks):
        return tuple(b(a) for b, a in zip(bodies, blocks, strict=True))

    return mod.shard_map(body, mesh=mesh, in_specs=spec, out_specs=out_specs, **kw)


def _inputs(mod, mesh_key, names, batch=False):
    mesh, spec, _ = MESHES[mesh_key]
    xs = [B * (k + 1) + k for k in range(len(names))]
    if batch:
        xs, spec = [np.stack([x, 1 - x]) for x in xs], P(None, *spec)
    return [mod.device_put(x, NamedSharding(mesh, spec)) for x in xs]


def _loss(mod, mesh_key, names):
    f = _every(mod, mesh_key, names)

    def loss(*xs):
        return sum(mod.numpy.sin(o).sum() for o in f(*xs))

    return loss


def _run(mod, mesh_key, mode):
    """The outputs of every collective (row order), for ``mod`` in ``mode``."""
    names = SMOOTH if mode == "grad" else NAMES
    xs = _inputs(mod, mesh_key, names, batch=mode == "vmap")
    if mode == "plain":
        outs = _every(mod, mesh_key, names)(*xs)
    elif mode == "jit":
        outs = mod.jit(_every(mod, mesh_key, names))(*xs)
    elif mode == "grad":
        argnums = tuple(range(len(names)))
        outs = mod.jit(mod.grad(_loss(mod, mesh_key, names), argnums=argnums))(*xs)
    else:
        outs = mod.vmap(_every(mod, mesh_key, names))(*xs)
    jax.block_until_ready(outs)  # JAX deadlocks on pipelined 8-device shard_maps here
    return dict(zip(names, outs, strict=True))


_RESULTS = {}


def _results(mesh_key, mode):
    key = (mesh_key, mode)
    if key not in _RESULTS:
        try:
            with jax.set_mesh(MESHES[mesh_key][0]):
                expected = _run(jax, mesh_key, mode)
            _RESULTS[key] = (_run(xform, mesh_key, mode), expected)
        except Exception as e:  # each row reports it, without tracing again
            _RESULTS[key] = e
    if isinstance(_RESULTS[key], Exception):
        raise _RESULTS[key]
    return _RESULTS[key]


@pytest.mark.parametrize("mode", ["plain", "jit", "grad", "vmap"])
@pytest.mark.parametrize("mesh_key", list(MESHES))
@pytest.mark.parametrize("name", NAMES)
def test_collective_table(name, mesh_key, mode):
    if mode == "grad" and name not in SMOOTH:
        pytest.skip("JAX does not differentiate pmax/pmin: see test_pmax_pmin_grad_error")
    got, expected = _results(mesh_key, mode)
    what = f"{name} on {mesh_key} ({mode})"
    assert_same(got[name], expected[name], rtol=1e-5, atol=1e-5, what=what)
    assert got[name].sharding == expected[name].sharding, what


@pytest.mark.parametrize("name", ["pmax", "pmin"])
def test_pmax_pmin_grad_error(name):
    def errors(mod):
        loss = _loss(mod, "1d", (name,))
        with pytest.raises(NotImplementedError) as info:
            mod.jit(mod.grad(loss))(*_inputs(mod, "1d", (name,)))
        return str(info.value)

    with jax.set_mesh(MESH8):
        expected = errors(jax)
    assert errors(xform) == expected


# --------------------------------------------------------------------------- check_vma


def _vma_error(mod, body, mesh, in_specs, out_specs, *args):
    """The message of the ValueError ``mod.shard_map`` raises, less the function's name
    (JAX 0.10.2 names its own wrapper, '_rem_singleton'; xform names the user's function)."""
    with pytest.raises(ValueError) as info, jax.set_mesh(mesh):
        mod.shard_map(body, mesh=mesh, in_specs=in_specs, out_specs=out_specs)(*args)
    text = str(info.value).replace("`jax.shard_map`", "`xform.shard_map`")
    if mod is xform:
        assert f"to the function '{body.__name__}' was given" in text
    return re.sub(r"the function '[^']*'", "the function", text)


def _scan_sum(lax):
    def scanned(a):
        init = lax.pcast(np.zeros(a.shape[1:], np.float32), ("x", "y"), to="varying")
        return lax.scan(lambda c, r: (c + r, c.sum()), init, a)

    return scanned


def _varying_pred(lax):  # JAX types a cond's results by its branches' alone
    def branchy(a):
        s = lax.psum(a, ("x", "y"))
        return (lax.cond(a.sum() > 0, lambda: s, lambda: -s),)

    return branchy


def _varying_branch(lax):
    def branchy(a):
        s = lax.psum(a, "x")
        return (lax.cond(s.sum() > 0, lambda: lax.pcast(s, "x", to="varying"), lambda: a),)

    return branchy


def _while_carry(lax):
    def looped(a):
        init = lax.pcast(np.zeros(a.shape, np.float32), ("x", "y"), to="varying")
        return (lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] + a), (0, init))[1],)

    return looped


def _invariant_pred(lax):
    def branchy(a):
        s = lax.psum(a, "x")
        return (lax.cond(s.sum() > 0, lambda: s, lambda: -s),)

    return branchy


def _permuted(lax):
    def permuted(a, w):  # w is replicated, but ppermute's result varies over its axis
        return a, lax.ppermute(w, "x", [(0, 1), (1, 0), (2, 3), (3, 2)])

    return permuted


def _two_bad(lax):
    def two_bad(a):
        return {"sum": lax.psum(a, "y"), "id": a, "gathered": lax.all_gather(a, "x")}

    return two_bad


VMA_ERRORS = {  # name -> (body of lax, in_specs, out_specs)
    "1-axis": (lambda lax: lambda a: (a * 2,), SPEC, (P("x"),)),
    "unmentioned-2": (lambda lax: lambda a: (lax.psum(a, "y"),), SPEC, (P(),)),
    "scan-carry": (_scan_sum, SPEC, (P("y"), P("x"))),
    "cond-branch": (_varying_branch, SPEC, (P(None, "y"),)),
    "while-carry": (_while_carry, SPEC, (P(None, "y"),)),
    "ppermute-replicated": (_permuted, (SPEC, P()), (SPEC, P())),
    "dict-two": (_two_bad, SPEC, {"sum": P(), "id": SPEC, "gathered": P()}),
    "pcast": (
        lambda lax: lambda a: (lax.pcast(lax.psum(a, ("x", "y")), "y", to="varying"),),
        SPEC,
        (P(),),
    ),
}


@pytest.mark.parametrize("case", list(VMA_ERRORS))
def test_check_vma_error_as_jax(case):
    body, in_specs, out_specs = VMA_ERRORS[case]
    args = (A, A) if isinstance(in_specs, tuple) else (A,)
    specs = in_specs if isinstance(in_specs, tuple) else (in_specs,)
    jargs, xargs = (_placed(mod, args, specs) for mod in (jax, xform))
    expected = _vma_error(jax, body(jax.lax), MESH, in_specs, out_specs, *jargs)
    assert _vma_error(xform, body(xform.lax), MESH, in_specs, out_specs, *xargs) == expected


ACCEPTED = {  # name -> (body of lax, out_specs): replicated where their specs say
    "cond-invariant-pred": (_invariant_pred, (P(None, "y"),)),
    "cond-varying-pred": (_varying_pred, (P(),)),
    "pmax-of-psum": (
        lambda lax: lambda a: (lax.pmax(lax.psum(a, "x") * lax.axis_index("y"), "y"),),
        (P(),),
    ),
}


@pytest.mark.parametrize("case", list(ACCEPTED))
def test_check_vma_accepts_replicated_as_jax(case):
    body, out_specs = ACCEPTED[case]
    kw = dict(mesh=MESH, in_specs=SPEC, out_specs=out_specs)
    got = xform.jit(xform.shard_map(body(xform.lax), **kw))(XA)
    expected = jax.jit(jax.shard_map(body(jax.lax), **kw))(JA)
    jax.block_until_ready(expected)
    assert_same(got, expected, rtol=1e-6, atol=1e-6)
    assert got[0].sharding == expected[0].sharding


# --------------------------------------------------------------------------- grad with types
# JAX differentiates with its varying-manual-axes types (check_vma=True, the default): a
# replicated argument used by every device gets the sum of their cotangents, a replicated
# result's cotangent is not split. xform's rules must give the same values.


def _mixed(lax):
    def body(a, w, v):  # a varies over x and y, w over none, v over y
        def step(c, row):
            return c + lax.psum(row * w[0, :4], "x") * v[0], (c * row).sum()

        init = lax.pcast(np.zeros(a.shape[1:], np.float32), "y", to="varying")
        carry, ys = lax.scan(step, init, a)
        picked = lax.cond(
            lax.psum(ys.sum(), ("x", "y")) > 0, lambda c: c * 2, lambda c: c - 1, carry
        )
        gathered = lax.all_gather(
            a * lax.pcast(w[:2, :4], "x", to="varying"), ("x", "y"), axis=1, tiled=True
        )
        return picked, lax.pmean(gathered, ("x", "y")), ys, lax.psum(w[:, :4], "x") * v

    return body


MIXED_SPECS = dict(
    in_specs=(SPEC, P(), P(None, "y")), out_specs=(P("y"), P(), P(("x", "y")), P(None, "y"))
)


def _mixed_loss(mod):
    f = mod.shard_map(_mixed(mod.lax), mesh=MESH, **MIXED_SPECS)

    def loss(a, w, v):
        return sum((mod.numpy.sin(o) * (k + 1)).sum() for k, o in enumerate(f(a, w, v)))

    return loss


W = np.cos(np.arange(64, dtype=np.float32)).reshape(8, 8)


def test_grad_with_replicated_args_and_control_flow():
    jargs, args = (_placed(mod, (A, W, W * 0.5), MIXED_SPECS["in_specs"]) for mod in (jax, xform))
    with jax.set_mesh(MESH):
        expected = jax.jit(jax.grad(_mixed_loss(jax), argnums=(0, 1, 2)))(*jargs)
        jax.block_until_ready(expected)
        values = jax.jit(_mixed_loss(jax))(*jargs)
    got = xform.jit(xform.grad(_mixed_loss(xform), argnums=(0, 1, 2)))(*args)
    assert_same(xform.jit(_mixed_loss(xform))(*args), values, rtol=1e-5, atol=1e-5)
    for k, (g, e) in enumerate(zip(got, expected, strict=True)):
        assert_same(g, e, rtol=2e-5, atol=2e-5, what=f"cotangent of argument {k}")
        assert g.sharding.is_equivalent_to(e.sharding, 2), k
    eager = xform.grad(_mixed_loss(xform), argnums=1)(*args)  # no jit: eager shard_maps
    assert_same(eager, expected[1], rtol=2e-5, atol=2e-5)


def test_vmap_of_mixed_body():
    batch = [np.stack([x, x * -0.5]) for x in (A, W, W * 0.5)]
    kw = dict(mesh=MESH, **MIXED_SPECS)
    specs = [P(None, *s) for s in MIXED_SPECS["in_specs"]]
    got = xform.vmap(xform.shard_map(_mixed(xform.lax), **kw))(*_placed(xform, batch, specs))
    with jax.set_mesh(MESH):
        expected = jax.vmap(jax.shard_map(_mixed(jax.lax), **kw))(*_placed(jax, batch, specs))
        jax.block_until_ready(expected)
    assert_same(got, expected, rtol=1e-5, atol=1e-5)
    for g, e in zip(got, expected, strict=True):
        assert g.sharding == e.sharding


# --------------------------------------------------------------------------- lowering text


def _op_names(text):
    """The sdy and stablehlo operations a module uses."""
    return sorted(set(re.findall(r'^\s*(?:%[^=]* = )?"?((?:sdy|stablehlo)\.[a-z_]+)', text, re.M)))


def _arg_shardings(text):
    return re.findall(r"%arg\d+: tensor<[^>]*> \{sdy\.sharding = ([^}]*\})", text)


def _manual_attrs(text):
    return re.findall(
        r"sdy\.manual_computation\([^)]*\) (in_shardings=.*?manual_axes=\{[^}]*\})", text
    )


@pytest.mark.parametrize("mesh_key", list(MESHES))
@pytest.mark.parametrize("name", ["psum", "all_gather"])
def test_lowered_ops_as_jax(name, mesh_key):
    mesh, spec, _ = MESHES[mesh_key]
    xf = xform.jit(_every(xform, mesh_key, (name,)))
    jf = jax.jit(_every(jax, mesh_key, (name,)))
    text = xf.lower(xform.device_put(B, NamedSharding(mesh, spec))).as_text()
    jtext = jf.lower(jax.device_put(B, NamedSharding(mesh, spec))).as_text()
    collective = {"psum": "stablehlo.all_reduce", "all_gather": "stablehlo.all_gather"}[name]
    assert {"sdy.manual_computation", "sdy.return", collective} <= set(_op_names(text))
    assert _op_names(text) == _op_names(jtext)
    assert _arg_shardings(text) == _arg_shardings(jtext)
    assert _manual_attrs(text) == _manual_attrs(jtext)
    assert _collective_ops(text) == _collective_ops(jtext)
    assert re.findall(r"sdy\.mesh @\w+ = <[^>]*>", text) == re.findall(
        r"sdy\.mesh @\w+ = <[^>]*>", jtext
    )


# --------------------------------------------------------------------------- eager calls


def test_eager_calls_run_the_body_each_time_and_never_keep_tracers():
    calls = []

    def body(a):
        calls.append(a.shape)
        return xform.lax.psum(a, "x")

    f = xform.shard_map(body, mesh=MESH, in_specs=SPEC, out_specs=P(None, "y"))
    first, second = f(XA), f(XA + 1)
    assert len(calls) == 2  # as JAX's: an eager call runs the Python body
    expected = jax.jit(
        jax.shard_map(
            lambda a: jax.lax.psum(a, "x"), mesh=MESH, in_specs=SPEC, out_specs=P(None, "y")
        )
    )(JA + 1)
    jax.block_until_ready(expected)
    assert_same(second, expected, rtol=1e-6, atol=1e-6)
    assert_same(first, np.asarray(expected) - 4, rtol=1e-5, atol=1e-5)
    f(xform.device_put(A[:, :4], NamedSharding(MESH, SPEC)))
    assert calls[-1] == (2, 2)

    cell = {}  # the body reads grad's tracer from here: one shard_map, traced at each call
    g = xform.shard_map(
        lambda a: xform.lax.psum(a * cell["w"], "x"),
        mesh=MESH,
        in_specs=SPEC,
        out_specs=P(None, "y"),
    )

    def closes_over(w):
        cell["w"] = w
        return g(XA).sum() * w

    for w in (1.5, -2.0):
        assert_same(xform.grad(closes_over)(w), np.float32(A.sum() * 2 * w), rtol=1e-5, atol=1e-3)


def test_vmap_inside_the_body():
    def body(lax, vmap):
        def per_row(r):
            return (
                lax.psum(r, "x"),
                lax.all_gather(r, "y", tiled=True),
                lax.ppermute(r, ("x", "y"), _shift(8)),
                r * lax.axis_index(("x", "y")),
                lax.psum_scatter(r, ("x", "y"), tiled=True),
            )

        return vmap(per_row)

    kw = dict(
        mesh=MESH, in_specs=P("x", "y"), out_specs=(P("x", "y"), P("x", "y"), SPEC, SPEC, SPEC)
    )
    data = np.sin(np.arange(8 * 16, dtype=np.float32)).reshape(8, 16)
    got = xform.jit(xform.shard_map(body(xform.lax, xform.vmap), **kw))(
        xform.device_put(data, NamedSharding(MESH, SPEC))
    )
    expected = jax.jit(jax.shard_map(body(jax.lax, jax.vmap), **kw))(
        jax.device_put(data, NamedSharding(MESH, SPEC))
    )
    jax.block_until_ready(expected)
    assert_same(got, expected, rtol=1e-6, atol=1e-6)
    for g, e in zip(got, expected, strict=True):
        assert g.sharding == e.sharding


def test_pcast_outside_shard_map_as_jax():
    """Under pmap, pcast to 'varying' changes no value or gradient; under vmap(axis_name)
    it is JAX's ValueError."""
    xs = np.arange(8 * 3, dtype=np.float32).reshape(8, 3) / 7

    def f(lax):
        return lambda x: (lax.pcast(x, "i", to="varying") * x).sum()

    got = xform.pmap(xform.grad(f(xform.lax)), axis_name="i")(xs)
    expected = jax.pmap(jax.grad(f(jax.lax)), axis_name="i")(xs)
    jax.block_until_ready(expected)
    assert_same(got, expected, rtol=1e-6)
    for mod in (jax, xform):
        with pytest.raises(
            ValueError,
            match=f"pvary should be called under {mod.__name__}"
            r"\.shard_map",
        ):
            mod.vmap(f(mod.lax), axis_name="i")(xs)


# --------------------------------------------------------------------------- vma types
# With check_vma=True the types inside a body carry the manual axes each value varies over
# (JAX 0.10.2 spells them ``typeof(x).mat.varying`` and prints ``f32[2,4]{V:(x,y)}``); make_jaxpr
# shows them and the pvary equations JAX inserts. Traced only (no compiles), against JAX.

VB = np.ones((2, 8), np.float32) * 3
VJB = jax.device_put(VB, NamedSharding(MESH, P(None, "y")))
VXB = xform.device_put(VB, NamedSharding(MESH, P(None, "y")))


def vma_mixed(lax, record):
    def body(a, b):
        c = a * b
        s = lax.psum(c, "x")
        i = lax.axis_index("y")
        g = lax.all_gather(b, "x", tiled=True)
        m = lax.pmax(c, ("x", "y"))
        v = lax.pcast(b[0], "x", to="varying")
        record(a, b, c, s, i, g, m, v, s + i, c + 1.0)
        return s + i, c + 1.0

    return body


VMA_BODIES = {
    "mixed": vma_mixed,
    "scan": lambda lax, record: (
        lambda a, b: (
            lax.scan(
                lambda c, x: (c + a * x, c.sum()),
                lax.pcast(b, "x", to="varying"),
                np.arange(3, dtype=np.float32),
            )[0],
            b * 2,
        )
    ),
    "cond_on_varying": lambda lax, record: (
        lambda a, b: (lax.cond(a[0, 0] > 0, lambda: b, lambda: b * 2), lax.psum(b, "y"))
    ),
}
VMA_OUT = (P("x", "y"), P(None, "y"))


def _body_jaxpr(closed):
    """The shard_map body of make_jaxpr(jit(shard_map(...))), printed."""
    (body,) = [
        e.params["jaxpr"]
        for e in closed.eqns[0].params["jaxpr"].eqns
        if e.primitive.name == "shard_map"
    ]
    return str(body)


def _vma_jaxpr(mod, name, how):
    """The printed body of ``jit(how(shard_map(body)))`` on (A, VB) laid out by ``mod``."""
    out_specs = (P(None, "y"), P("x", "y")) if name == "mixed" else VMA_OUT
    in_specs = (SPEC, P(None, "y"))
    f = mod.shard_map(
        VMA_BODIES[name](mod.lax, lambda *v: None),
        mesh=MESH,
        in_specs=in_specs,
        out_specs=out_specs,
    )
    args = (A, VB)
    if how == "jvp":
        f = functools.partial(lambda f, a, b: mod.jvp(f, (a, b), (a * 2, b)), f)
    elif how == "vmap":
        f, args, in_specs = (
            mod.vmap(f),
            [np.stack([x, -x]) for x in args],
            [P(None, *s) for s in in_specs],
        )
    return _body_jaxpr(mod.make_jaxpr(mod.jit(f))(*_placed(mod, args, in_specs)))


# JVP and vmap keep what varies: their bodies are typed as JAX's too (JAX does not
# differentiate pmax, which "mixed" has; it rejects vmap of "cond_on_varying" by mistake,
# asking for an issue report)
@pytest.mark.parametrize(
    "name, how",
    [
        (n, h)
        for n in VMA_BODIES
        for h in ("plain", "jvp", "vmap")
        if (n, h) not in (("mixed", "jvp"), ("cond_on_varying", "vmap"))
    ],
)
def test_vma_jaxpr_as_jax(name, how):
    # JAX's vmap of a scan's reduce_sum leaves NumPy integers in its axes param (a longer
    # line, broken elsewhere): compared without them and without whitespace
    want = re.sub(r"np\.int64\((\d+)\)", r"\1", _vma_jaxpr(jax, name, how))
    assert "".join(_vma_jaxpr(xform, name, how).split()) == "".join(want.split())


def test_vma_types_as_jax():
    got, want = [], []
    kw = dict(mesh=MESH, in_specs=(SPEC, P(None, "y")), out_specs=(P(None, "y"), SPEC))

    def recorder(into, typeof, vma):
        return lambda *vs: into.extend((str(typeof(v)), vma(typeof(v))) for v in vs)

    xform.make_jaxpr(
        xform.jit(
            xform.shard_map(
                vma_mixed(xform.lax, recorder(got, xform.typeof, lambda t: t.vma)), **kw
            )
        )
    )(XA, VXB)
    jax.make_jaxpr(
        jax.jit(
            jax.shard_map(
                vma_mixed(jax.lax, recorder(want, jax.typeof, lambda t: t.mat.varying)), **kw
            )
        )
    )(JA, VJB)
    assert got == want and got[0][1] == {"x", "y"}  # from in_specs
    got, want = [], []
    xform.make_jaxpr(
        xform.jit(
            xform.shard_map(
                lambda a: recorder(got, xform.typeof, lambda t: t.mat.varying)(a) or a,
                mesh=MESH,
                in_specs=SPEC,
                out_specs=SPEC,
                check_vma=False,
            )
        )
    )(XA)
    assert got == [("float32[2,4]", frozenset())]  # check_vma=False: nothing typed
    assert xform.typeof(A).vma == frozenset() and "{" not in str(xform.typeof(A))
    # the long spelling of ``mat`` (the shard_map tutorial's), and its repr, as JAX's
    got, want = [], []
    for mod, into, arg in ((xform, got, XA), (jax, want, JA)):
        mod.make_jaxpr(
            mod.shard_map(
                lambda a, mod=mod, into=into: (
                    into.append(
                        (
                            mod.typeof(mod.lax.psum(a, "y")).manual_axis_type.varying,
                            repr(mod.typeof(mod.lax.psum(a, ("x", "y"))).manual_axis_type),
                        )
                    )
                    or a
                ),
                mesh=MESH,
                in_specs=SPEC,
                out_specs=SPEC,
            )
        )(arg)
    assert got == want and got[0][0] == {"x"}


def test_scan_slices_vary_as_their_xs_as_jax():
    """A scan's slices of xs vary as xs do, and so do its stacked ys."""

    def types(mod):
        got = []

        def body(a):
            def step(c, row):
                got.append(str(mod.typeof(row)))
                return c + mod.lax.psum(row, "x"), (c * row).sum()

            init = mod.lax.pcast(np.zeros(a.shape[1:], np.float32), "y", to="varying")
            carry, ys = mod.lax.scan(step, init, a)
            got.append(str(mod.typeof(ys)))
            return carry, ys

        f = mod.shard_map(body, mesh=MESH, in_specs=SPEC, out_specs=(P("y"), P(("x", "y"))))
        x = mod.device_put(A, NamedSharding(MESH, SPEC))
        outs = mod.jit(f)(x)
        mod.make_jaxpr(lambda x: mod.jvp(f, (x,), (x,)))(x)
        return got[:2], outs

    (got, outs), (want, expected) = types(xform), types(jax)
    assert got == want == ["float32[4]{V:(x,y)}", "float32[2]{V:(x,y)}"]
    assert_same(outs, expected, rtol=1e-6)


def _carry_cases(lax, jnp):
    zeros = jnp.zeros((2, 4))
    return {
        "scan": lambda a: lax.scan(lambda c, x: (c + a, None), zeros, None, length=3)[0],
        "while_loop": lambda a: lax.while_loop(lambda c: c[0, 0] < 3, lambda c: c + a, zeros),
        "fori_loop": lambda a: lax.fori_loop(0, 3, lambda i, c: c + a, zeros),
        "cond": lambda a: lax.cond(True, lambda: a, lambda: zeros),
    }


@pytest.mark.parametrize("case", ["scan", "while_loop", "fori_loop", "cond"])
def test_vma_carry_and_branch_mismatch_as_jax(case):
    kw = dict(mesh=MESH, in_specs=SPEC, out_specs=SPEC)
    with pytest.raises(TypeError) as jax_error:
        jax.make_jaxpr(jax.jit(jax.shard_map(_carry_cases(jax.lax, jax.numpy)[case], **kw)))(JA)
    gist = (
        "type float32[2,4] but the corresponding output carry component has type "
        "float32[2,4]{V:(x,y)}, so the manual axis types do not match"
    )
    if case == "cond":
        gist = (
            "has type float32[2,4]{V:(x,y)} but the corresponding output of false_fun has "
            "type float32[2,4], so the manual axis types do not match"
        )
    assert gist in str(jax_error.value)
    f = xform.jit(xform.shard_map(_carry_cases(xform.lax, xform.numpy)[case], **kw))
    with pytest.raises(TypeError, match=re.escape(gist)) as error:
        f(XA)
    assert "pcast(..., ('x', 'y'), to='varying')" in str(error.value)


def test_vma_carry_cast_by_user_runs_as_jax():
    def body(lax):
        return lambda a: lax.scan(
            lambda c, x: (c + a * x, None),
            lax.pcast(np.ones((2, 4), np.float32), ("x", "y"), to="varying"),
            np.arange(3, dtype=np.float32),
        )[0]

    kw = dict(mesh=MESH, in_specs=SPEC, out_specs=SPEC)
    assert_same(xform.shard_map(body(xform.lax), **kw)(XA), jax.shard_map(body(jax.lax), **kw)(JA))


@pytest.mark.parametrize("op", ["psum", "pmean", "psum_scatter"])
def test_sum_over_axes_partly_varying_refused_as_jax(op):
    """A sum over axes of which the operand varies over some only is JAX's ValueError (no
    implicit pvary); over axes it varies over none of, the operand is cast first."""

    def run(mod, axes):
        def body(a):
            if op == "psum_scatter":
                return mod.lax.psum_scatter(a, axes, tiled=True)
            return getattr(mod.lax, op)(a, axes)

        out_specs = P("x", "y") if op == "psum_scatter" else P(None, "y")  # (still varies)
        f = mod.shard_map(body, mesh=MESH, in_specs=P(None, "y"), out_specs=out_specs)
        return f(mod.device_put(A, NamedSharding(MESH, P(None, "y"))))

    states = r"input state: \{'(in)?varying', '(in)?varying'\}"
    for mod in (jax, xform):
        with pytest.raises(
            ValueError,
            match=rf"{mod.__name__}\.lax\.{op.replace('pmean', 'psum')} "
            r"can only accept axis_name .* Got input type: float32\[8,4\]\{V:y\}, "
            rf"axes: \('x', 'y'\) and {states}",
        ):
            run(mod, ("x", "y"))
    assert_same(run(xform, "x"), run(jax, "x"), rtol=1e-6, atol=1e-6)


def test_pcast_of_varying_value_as_jax():
    def body(lax):
        return lambda a: lax.pcast(a, "x", to="varying")

    kw = dict(mesh=MESH, in_specs=SPEC, out_specs=SPEC)
    with pytest.raises(ValueError, match="Unsupported pcast from=varying, to='varying'"):
        jax.make_jaxpr(jax.shard_map(body(jax.lax), **kw))(JA)
    with pytest.raises(ValueError, match="Unsupported pcast from=varying, to='varying'"):
        xform.make_jaxpr(xform.shard_map(body(xform.lax), **kw))(XA)


AUTO_MESH = jax.make_mesh((4, 2), ("x", "y"), axis_types=(jax.sharding.AxisType.Auto,) * 2)
# Bodies whose gradient jaxprs JAX and xform should build alike: a typed sum and pvary
# (their transposes swap), residuals that are the body's inputs (forwarded, not returned),
# a rank-0 residual (returned as (1,)), and all_gather with pmean.
GRAD_BODIES = {
    "psum": (
        lambda lib: lambda a, w: lib.lax.psum(lib.numpy.sin(a) @ w[:4], "y"),
        (P("x", "y"), P("y", None)),
        P("x", None),
    ),
    "forwarded": (lambda lib: lambda a, w: a * w, (P("x", "y"), P("x", "y")), P("x", "y")),
    "scalar": (
        lambda lib: lambda a, w: w * lib.lax.psum(lib.numpy.sum(a * a), ("x", "y")),
        (P("x", "y"), P("x", "y")),
        P("x", "y"),
    ),
    "gather": (
        lambda lib: (
            lambda a, w: (
                lib.lax.all_gather(lib.numpy.tanh(a), "x", tiled=True).sum(0)
                * lib.lax.pmean(w, "x")
            )
        ),
        (P("x", "y"), P("x", "y")),
        P("x", "y"),
    ),
}


def _grad_of_shard_map(lib, name):
    body, in_specs, out_specs = GRAD_BODIES[name]
    f = lib.shard_map(body(lib), mesh=AUTO_MESH, in_specs=in_specs, out_specs=out_specs)
    a = np.linspace(-1, 1, 32, dtype=np.float32).reshape(8, 4)
    w = np.linspace(0, 2, 32, dtype=np.float32).reshape(8, 4)
    if name == "psum":
        w = w[:4]
    g = lib.grad(lambda a, w: lib.numpy.sum(f(a, w) ** 2), argnums=(0, 1))
    eqns = [e for e in lib.make_jaxpr(g)(a, w).eqns if e.primitive.name == "shard_map"]
    # JAX's manual-mesh shardings in reshape/reduce_sum params and NumPy ints left out
    printed = [
        re.sub(
            r"np\.int64\((\d+)\)",
            r"\1",
            re.sub(
                r"(out_)?sharding=(None|NamedSharding\(.*?spec=P\([^)]*\)\))",
                "",
                str(e.params["jaxpr"]),
            ),
        )
        for e in eqns
    ]
    return printed, [(e.params["in_specs"], e.params["out_specs"]) for e in eqns], g(a, w)


@pytest.mark.parametrize("name", GRAD_BODIES)
def test_grad_of_shard_map_jaxpr_as_jax(name):
    # The known part returns its residuals first, each block put together along dimension
    # 0 over the axes it varies over; the transposed body is typed (no cotangent scaling).
    got, got_specs, grads = _grad_of_shard_map(xform, name)
    want, want_specs, jgrads = _grad_of_shard_map(jax, name)
    assert_same(grads, jgrads, rtol=1e-5, atol=1e-6)
    assert got_specs == want_specs
    assert ["".join(t.split()) for t in got] == ["".join(t.split()) for t in want]


@pytest.mark.parametrize("check_vma", [True, False])
def test_vmap_spmd_axis_name_splits_the_batch_as_jax(check_vma):
    auto = jax.make_mesh((4, 2), ("x", "y"), axis_types=(jax.sharding.AxisType.Auto,) * 2)
    x = np.arange(96, dtype=np.float32).reshape(4, 8, 3)
    got = []
    for mod in (xform, jax):
        sm = mod.shard_map(
            lambda v, mod=mod: mod.lax.psum(v.sum(-1), "x"),
            mesh=auto,
            in_specs=P("x"),
            out_specs=P(),
            check_vma=check_vma,
        )
        f = mod.vmap(sm, spmd_axis_name="y")
        eqn = mod.make_jaxpr(f)(x).jaxpr.eqns[0]
        body = eqn.params["jaxpr"]
        body = getattr(body, "jaxpr", body)
        manual = [
            ln.strip()
            for ln in mod.jit(f).lower(x).as_text().splitlines()
            if "manual_computation" in ln
        ]
        types = [str(v.aval) for v in body.invars + body.outvars]
        got.append(
            (
                np.asarray(mod.jit(f)(x)),
                eqn.params["in_specs"],
                eqn.params["out_specs"],
                types,
                manual[0].split("(%arg1")[0],
            )
        )
        weighted = mod.vmap(
            mod.shard_map(
                lambda v, w, mod=mod: mod.lax.psum(mod.numpy.sin(v * w).sum(-1), "x"),
                mesh=auto,
                in_specs=(P("x"), P()),
                out_specs=P(),
                check_vma=check_vma,
            ),
            in_axes=(0, None),
            spmd_axis_name="y",
        )
        got[-1] += (
            mod.jit(
                mod.value_and_grad(lambda v, w, f=weighted: (f(v, w) ** 2).sum(), argnums=(0, 1))
            )(x / 50, np.float32(1.5)),
        )
        with pytest.raises(ValueError, match="vmap spmd_axis_name cannot appear in shard_map"):
            mod.vmap(
                mod.shard_map(
                    lambda v: v * 2, mesh=auto, in_specs=P("x"), out_specs=P("y"), check_vma=False
                ),
                spmd_axis_name="y",
            )(x)
    assert_same(got[0][0], got[1][0])
    assert_same(got[0][5], got[1][5], rtol=1e-5)
    assert got[0][1:5] == got[1][1:5]
    assert got[0][1] == (P("y", "x"),) and '[{"y"}, {"x"}, {}]' in got[0][4]


def _eager_body(mod):
    """A body whose values take every route of an eager shard_map: per-block operations, a
    nested jit, cond and scan (compiled per operation), collectives."""

    def body(a):
        y = mod.jit(lambda v: mod.numpy.sin(v) * 2)(a)
        z = mod.lax.cond(mod.numpy.sum(a) > 0, lambda v: v + 1, lambda v: v - 1, y)
        c, ys = mod.lax.scan(lambda c, r: (c + r, c * r), z[0] * 0, z)
        total = mod.lax.psum(ys, ("x", "y"))
        return total, mod.lax.pmax(c, "y"), mod.numpy.cumsum(a, axis=1)

    return body


def test_eager_body_runs_each_operation_as_jax():
    kw = dict(mesh=MESH, in_specs=SPEC, out_specs=(P(), P("x"), SPEC))
    got = xform.shard_map(_eager_body(xform), **kw)(XA)
    expected = jax.shard_map(_eager_body(jax), **kw)(JA)
    jax.block_until_ready(expected)
    assert_same(got, expected, rtol=1e-5, atol=1e-5)
    for g, e in zip(got, expected, strict=True):
        assert g.sharding == e.sharding


def test_eager_body_prints_each_devices_block(capsys):
    def body(mod):
        def f(a):
            print(a)
            print(mod.lax.axis_index("y"))
            s = mod.lax.psum(a, "x")
            print(mod.typeof(s), bool(mod.numpy.sum(mod.lax.psum(s, "y")) > 0))
            return s

        return f

    kw = dict(mesh=MESH, in_specs=SPEC, out_specs=P(None, "y"))
    jax.block_until_ready(jax.shard_map(body(jax), **kw)(JA))
    expected = capsys.readouterr().out
    xform.shard_map(body(xform), **kw)(XA)
    assert capsys.readouterr().out == expected
    assert "On " in expected and "at mesh coordinates (x, y,) = (3, 1):" in expected


def test_eager_body_values_varying_over_an_axis_are_not_concrete():
    def body(mod):
        def f(a):
            return a if mod.numpy.sum(a) > 0 else -a

        return f

    kw = dict(mesh=MESH, in_specs=SPEC, out_specs=SPEC)
    for mod, x in ((jax, JA), (xform, XA)):
        with pytest.raises(mod.errors.TracerBoolConversionError):
            mod.shard_map(body(mod), **kw)(x)


def test_eager_out_specs_replication_error_as_jax():
    for mod, x in ((jax, JA), (xform, XA)):
        f = mod.shard_map(lambda a: a * 2, mesh=MESH, in_specs=SPEC, out_specs=P("x"))
        with pytest.raises(ValueError, match="replicated across mesh axis 'y'"):
            f(x)
    kw = dict(mesh=MESH, in_specs=SPEC, out_specs=P("x"), check_vma=False)
    got = xform.shard_map(lambda a: a * 2, **kw)(XA)
    expected = jax.shard_map(lambda a: a * 2, **kw)(JA)
    assert_same(got, expected)


def test_smap_is_shard_map_over_one_axis_as_jax():
    mesh = jax.make_mesh((8,), ("i",))
    data = np.arange(16 * 3, dtype=np.float32).reshape(16, 3) / 7

    def run(mod):
        f = mod.smap(
            lambda x, w: (mod.lax.psum(x * w, "i"), x + w),
            in_axes=(0, None),
            out_axes=(None, 1),
            axis_name="i",
        )
        with mod.sharding.set_mesh(mesh):
            x = mod.device_put(data, NamedSharding(mesh, P("i")))
            return mod.jit(f)(x, np.float32(2.0)), f(x, np.float32(2.0))

    expected = run(jax)
    jax.block_until_ready(expected)
    assert_same(run(xform), expected, rtol=1e-6, atol=1e-6)
    for mod in (jax, xform):
        with pytest.raises(TypeError, match="smap axis_name should be"):
            mod.smap(lambda x: x, in_axes=0, out_axes=0, axis_name=("i",))
        with pytest.raises(TypeError, match="smap out_axes must be an int"):
            mod.smap(lambda x: x, in_axes=0, out_axes="a", axis_name="i")

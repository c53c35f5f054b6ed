"""xform.debug (print, callback, breakpoint), pure_callback and io_callback against JAX.

Every program is written once against a module namespace (``jax`` or ``xform``) and run on
both; printed lines are captured with capsys (XLA host callbacks print from Python).
"""

import io

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import xform
import xform.numpy as xnp
from lowering.mlir import lowering_rules
from xform import core
from xform.debug import NOT_PROVIDED
from xform.experimental import io_callback
from xform.interpret import ad, batching, dce
from xform.primitives import callback as cb

X = np.arange(3, dtype=np.float32)


def _ns(m):
    """The names a program needs, from JAX or from xform."""
    if m == "jax":
        return jax, jnp, jax.experimental.io_callback
    return xform, xnp, io_callback


def _block(m, out):
    for leaf in jax.tree_util.tree_leaves(out):
        leaf.block_until_ready()
    if m == "jax":
        jax.effects_barrier()
    return out


def _lines(capsys, m, program):
    _block(m, program(*_ns(m)))
    return capsys.readouterr().out.splitlines()


# --------------------------------------------------------------------------- debug.print


def _eager(j, np_, _):
    j.debug.print("x = {x}, sum {}", np_.sum(np_.asarray(X)), x=np_.asarray(X))
    return np_.asarray(X)


def _jit(j, np_, _):
    def f(x):
        j.debug.print("x = {x:}", x=x)
        j.debug.print("{:.2f} and {}", x[1], "static")
        j.debug.print("plain", x[0], skip_format_check=True)  # the values follow the text
        return x * 2

    return j.jit(f)(X)


def _vmap(j, np_, _):
    def f(x):
        j.debug.print("lane {} of {}", x, 3)
        return x + 1

    return j.vmap(f)(X), j.jit(j.vmap(f))(X + 10)


def _grad(j, np_, _):
    def f(x):
        j.debug.print("primal {}", x)
        return np_.sin(x) * x

    return j.grad(f)(1.5), j.jit(j.grad(f))(2.5)


def _scan(j, np_, _):
    def body(c, x):
        j.debug.print("carry {} x {}", c, x)
        return c + x, c

    return j.jit(lambda xs: j.lax.scan(body, 0.0, xs))(X)


def _while(j, np_, _):
    def body(c):
        j.debug.print("i={}", c)
        return c + 1

    return j.jit(lambda n: j.lax.while_loop(lambda c: c < n, body, 0))(3)


def _cond(j, np_, _):
    def f(p, x):
        return j.lax.cond(
            p,
            lambda x: (j.debug.print("yes {}", x), x)[1],
            lambda x: (j.debug.print("no {}", x), -x)[1],
            x,
        )

    g = j.jit(f)
    return g(True, 1.0), g(False, 2.0)


def _ordered(j, np_, _):
    def f(x):
        for i in range(4):
            j.debug.print("step {} {}", i, x + i, ordered=True)
        return x

    return j.jit(f)(1.0)


def _ordered_regions(j, np_, _):
    def f(x):
        j.debug.print("before {}", x, ordered=True)
        y = j.lax.fori_loop(
            0, 3, lambda i, c: (j.debug.print("body {}", i, ordered=True), c + 1.0)[1], x
        )
        y = j.lax.cond(
            y > 0, lambda y: (j.debug.print("cond {}", y, ordered=True), y + 1)[1], lambda y: y, y
        )
        j.lax.cond(
            y > 0, lambda y: j.debug.print("no results {}", y, ordered=True), lambda y: None, y
        )
        j.debug.print("after {}", y * 2, ordered=True)
        return y

    return j.jit(f)(1.0)


@pytest.mark.parametrize(
    "program",
    [_eager, _jit, _vmap, _grad, _scan, _while, _cond, _ordered, _ordered_regions],
    ids=lambda p: p.__name__[1:],
)
def test_print_lines_as_jax(capsys, program):
    expected = _lines(capsys, "jax", program)
    assert expected
    assert _lines(capsys, "xform", program) == expected


def test_print_in_scan_and_cond_under_grad_and_vmap(capsys):
    def program(j, np_, _):
        def f(x):
            def body(c, t):
                j.debug.print("scan c={} t={}", c, t)
                return np_.sin(c) * t, c

            c, ys = j.lax.scan(body, x, np.arange(3, dtype=np.float32))
            c = j.lax.cond(
                c > -10, lambda c: (j.debug.print("cond {}", c), c * c)[1], lambda c: c, c
            )
            return c + ys.sum()

        return j.jit(j.vmap(j.grad(f)))(np.array([0.1, 0.2], np.float32))

    # unordered prints of different lanes in one step may come in either order, as in JAX
    assert sorted(_lines(capsys, "xform", program)) == sorted(_lines(capsys, "jax", program))


def test_print_in_checkpoint_and_custom_jvp(capsys):
    def program(j, np_, _):
        @j.checkpoint
        def g(x):
            j.debug.print("remat {}", x)
            return np_.sin(x)

        @j.custom_jvp
        def h(x):
            j.debug.print("custom_jvp {}", x)
            return x * 2

        h.defjvp(lambda p, t: (h(p[0]), t[0] * 2))
        return j.grad(lambda x: g(x) + h(x))(0.5)

    # the primal prints, and remat's recomputation prints again in the backward pass
    assert _lines(capsys, "xform", program) == _lines(capsys, "jax", program)


def test_print_under_pmap_once_per_device(capsys):
    def program(j, np_, _):
        def f(x):
            j.debug.print("dev {}", x)
            return x * 2

        return j.pmap(f)(np.arange(2, dtype=np.float32))

    expected = _lines(capsys, "jax", program)
    got = _lines(capsys, "xform", program)
    assert sorted(got) == sorted(expected) == ["dev 0.0", "dev 1.0"]


def test_log_goes_to_the_logger(caplog):
    with caplog.at_level("INFO", logger="xform.debug"):
        _block("xform", xform.jit(lambda x: (xform.debug.log("v={}", x), x)[1])(np.float32(3)))
    assert [r.getMessage() for r in caplog.records] == ["v=3.0"]


def test_print_options_first_form_and_text(capsys):
    f = xform.jit(lambda x: (xform.debug.print(ordered=True)("v={v}", v=x), x)[1])
    _block("xform", f(np.float32(2)))
    assert capsys.readouterr().out == "v=2.0\n"
    assert "xla_ffi_python_cpu_callback" in f.lower(np.float32(2)).as_text()
    with pytest.raises(TypeError, match="unexpected arguments in the two-call form"):
        xform.debug.print(None, 1)


@pytest.mark.parametrize(
    "fmt,args,kwargs",
    [("{} {}", (1.0,), {}), ("{x}", (), {"y": 1}), ("{", (1,), {}), ("{}", (1, 2), {})],
)
def test_bad_format_raises_at_trace_time(fmt, args, kwargs):
    with pytest.raises(Exception) as want:
        jax.jit(lambda x: jax.debug.print(fmt, *[x for _ in args], **kwargs))(1.0)
    with pytest.raises(type(want.value), match=None) as got:
        xform.jit(lambda x: xform.debug.print(fmt, *[x for _ in args], **kwargs))(1.0)
    assert str(got.value).split(":")[0] == str(want.value).split(":")[0]


# --------------------------------------------------------------------------- debug.callback


def test_callback_eager_jit_scan():
    seen = []
    record = lambda x, tag: seen.append((tag, np.asarray(x).tolist()))  # noqa: E731
    xform.debug.callback(record, X, tag="eager")

    def body(c, x):
        xform.debug.callback(record, x, tag="scan")
        return c, x

    _block("xform", xform.jit(lambda xs: xform.lax.scan(body, 0.0, xs))(X))
    assert seen == [("eager", [0.0, 1.0, 2.0]), ("scan", 0.0), ("scan", 1.0), ("scan", 2.0)]
    with pytest.raises(TypeError, match="must be callable"):
        xform.debug.callback(3, X)


def test_callback_kept_when_nothing_uses_it(capsys):
    f = xform.jit(lambda x: (xform.debug.print("kept {}", x * 3), x)[1])
    _block("xform", f(np.float32(1)))
    assert capsys.readouterr().out == "kept 3.0\n"

    def g(x):  # a cond and a loop whose results are unused, kept for the prints in them
        xform.lax.cond(x > 0, lambda x: xform.debug.print("cond {}", x), lambda x: None, x)
        xform.lax.fori_loop(0, 2, lambda i, c: (xform.debug.print("loop {}", i), c)[1], x)
        return x

    _block("xform", xform.jit(g)(np.float32(1)))
    assert sorted(capsys.readouterr().out.splitlines()) == ["cond 1.0", "loop 0", "loop 1"]


# --------------------------------------------------------------------------- pure_callback


def _calls(m, vmap_method, jit):
    """Results, and the shapes the callback saw, of a vmapped pure_callback."""
    j, np_, _ = _ns(m)
    shapes = []

    def cb(x, y):
        shapes.append((np.shape(x), np.shape(y)))
        return np.sin(np.asarray(x)) + np.asarray(y)

    def f(x, y):
        shape = jnp.broadcast_shapes(np.shape(x), np.shape(y))
        return j.pure_callback(
            cb, j.ShapeDtypeStruct(shape, np.float32), x, y, vmap_method=vmap_method
        )

    g = j.vmap(f, in_axes=(0, None))
    out = (j.jit(g) if jit else g)(np.ones((4, 3), np.float32), X)
    return np.asarray(_block(m, out)), shapes


@pytest.mark.parametrize(
    "vmap_method", ["sequential", "expand_dims", "broadcast_all", "legacy_vectorized"]
)
def test_pure_callback_vmap_methods(vmap_method):
    want, want_shapes = _calls("jax", vmap_method, jit=True)
    got, got_shapes = _calls("xform", vmap_method, jit=True)
    np.testing.assert_allclose(got, want, rtol=1e-6)
    assert got_shapes == want_shapes


def test_pure_callback_eager_pytrees_and_dtypes():
    def cb(d):
        return {"s": np.asarray(d["a"]).sum(), "n": np.int32(7)}

    spec = {"s": xform.ShapeDtypeStruct((), np.float32), "n": jax.ShapeDtypeStruct((), np.int32)}
    for f in (
        lambda a: xform.pure_callback(cb, spec, {"a": a}),
        xform.jit(lambda a: xform.pure_callback(cb, spec, {"a": a})),
    ):
        out = f(X)
        assert float(out["s"]) == 3.0 and int(out["n"]) == 7
        assert out["n"].dtype == np.int32 and out["s"].dtype == np.float32


def test_pure_callback_errors():
    spec = xform.ShapeDtypeStruct((3,), np.float32)
    wrong_shape = lambda x: xform.pure_callback(lambda a: np.zeros(2, np.float32), spec, x)  # noqa: E731
    for f in (wrong_shape, xform.jit(wrong_shape)):
        with pytest.raises(RuntimeError, match=r"Expected: \(3,\), Actual: \(2,\)"):
            _block("xform", f(X))
    wrong_dtype = lambda x: xform.pure_callback(lambda a: np.zeros(3, np.int32), spec, x)  # noqa: E731
    with pytest.raises(RuntimeError, match="Expected: float32, Actual: int32"):
        wrong_dtype(X)
    sin = lambda x: xform.pure_callback(np.sin, spec, x).sum()  # noqa: E731
    with pytest.raises(ValueError, match="Pure callbacks do not support JVP"):
        xform.grad(sin)(X)
    with pytest.raises(ValueError, match="Pure callbacks do not support JVP"):
        jax.grad(lambda x: jax.pure_callback(np.sin, spec, x).sum())(X)
    with pytest.raises(NotImplementedError, match="Got vmap_method=None"):
        xform.vmap(lambda x: xform.pure_callback(np.sin, spec, x))(np.ones((2, 3), np.float32))
    with pytest.raises(ValueError, match="vmap_method must be"):
        xform.pure_callback(np.sin, spec, X, vmap_method="loop")
    with pytest.raises(ValueError, match="cannot specify 64-bit types"):
        xform.pure_callback(np.sin, xform.ShapeDtypeStruct((3,), np.float64), X)
    with pytest.raises(TypeError, match="must have shape and dtype"):
        xform.pure_callback(np.sin, (3,), X)


# --------------------------------------------------------------------------- io_callback


def test_io_callback_ordered_and_never_dropped():
    log = []

    def record(x):
        log.append(float(np.asarray(x)))
        return np.float32(len(log))

    spec = xform.ShapeDtypeStruct((), np.float32)

    def f(x):
        io_callback(record, spec, x, ordered=True)  # result unused: still runs
        y = io_callback(record, spec, x + 1, ordered=True)
        return y + io_callback(record, spec, x + 2, ordered=True)

    out = _block("xform", xform.jit(f)(np.float32(10)))
    assert log == [10.0, 11.0, 12.0] and float(out) == 5.0
    log.clear()
    assert float(f(np.float32(0))) == 5.0 and log == [0.0, 1.0, 2.0]  # eagerly
    with pytest.raises(ValueError, match="Cannot `vmap` ordered IO callback"):
        xform.vmap(lambda x: io_callback(record, spec, x, ordered=True))(X)
    with pytest.raises(ValueError, match="IO callbacks do not support JVP"):
        xform.grad(lambda x: io_callback(record, spec, x))(1.0)


def test_io_callback_vmap_is_sequential():
    seen = []
    spec = xform.ShapeDtypeStruct((), np.float32)
    f = xform.vmap(lambda x: io_callback(lambda v: (seen.append(np.shape(v)), v * 2)[1], spec, x))
    np.testing.assert_array_equal(np.asarray(xform.jit(f)(X)), X * 2)
    assert seen == [(), (), ()]


# --------------------------------------------------------------------------- breakpoint


def test_breakpoint_eager_and_under_jit():
    def session(commands):
        out = io.StringIO()
        return dict(stdin=io.StringIO(commands), stdout=out), out

    kwargs, out = session("p y\nc\n")
    y = X + 1
    xform.debug.breakpoint(**kwargs)
    assert "Entering jdb:" in out.getvalue() and "[1., 2., 3.]" in out.getvalue()

    kwargs, out = session("p z\nw\nc\n")

    def f(x):
        z = x * 2
        xform.debug.breakpoint(**kwargs)
        return z

    g = xform.jit(f)
    assert out.getvalue() == ""  # tracing does not stop
    _block("xform", g(X))
    assert "Array([0., 2., 4.], dtype=float32)" in out.getvalue()
    assert "Traceback:" in out.getvalue()
    del y

    kwargs, out = session("p w\nc\n")

    def h(x):
        w = x + 5
        return xform.debug.breakpoint(token=w * 2, **kwargs)

    np.testing.assert_array_equal(np.asarray(_block("xform", xform.jit(h)(X))), (X + 5) * 2)
    assert "Array([5., 6., 7.], dtype=float32)" in out.getvalue()
    with pytest.raises(ValueError, match="mutually exclusive"):
        xform.debug.breakpoint(token=X, ordered=True)


def test_names_of_jax_debug():
    public = {n for n in dir(jax.debug) if not n.startswith("_")}
    missing = {n for n in public if not hasattr(xform.debug, n)}
    assert missing == set(NOT_PROVIDED)  # the sharding names, each with its reason
    assert xform.experimental.io_callback is io_callback


def test_every_callback_primitive_has_its_rules():
    # Not walked by tests/test_coverage.py (jax.lax exports no callback primitive), so here.
    for prim in (cb.debug_callback_p, cb.pure_callback_p, cb.io_callback_p):
        for table in (
            core.abstract_eval_rules,
            core.eager_rules,
            lowering_rules,
            ad.jvp_rules,
            batching.batch_rules,
        ):
            assert prim in table, (prim, table)
    assert dce.effectful >= {cb.debug_callback_p, cb.io_callback_p}
    assert cb.pure_callback_p not in dce.effectful


def _callbacks_program(mod, np_):
    from jax.experimental import io_callback as jax_io  # noqa: PLC0415

    io = io_callback if mod is xform else jax_io

    def f(x):
        mod.debug.print("x {}", x)
        y = mod.pure_callback(
            lambda v: (np.asarray(v), np.asarray(v)),
            (mod.ShapeDtypeStruct(x.shape, np_.float32),) * 2,
            x,
        )
        io(lambda v: None, None, x)  # (ordered ones: JAX threads tokens through main)
        return y[0] * 2 + y[1]

    return f


def test_callbacks_lower_as_jax():
    # A callback's custom call carries JAX's sdy.sharding: on the program's first device
    # (@maximal_mesh_0) in a jit, sharded or not, and on each device (@empty_mesh) inside a
    # shard_map's region; the module declares the mesh once. (The compiled programs are then
    # JAX's too.)
    auto = jax.make_mesh((4,), ("i",), axis_types=(jax.sharding.AxisType.Auto,))
    x8 = np.arange(8, dtype=np.float32)

    def texts(mod, np_):
        f = _callbacks_program(mod, np_)
        placed = mod.device_put(x8, mod.NamedSharding(auto, mod.P("i")))

        def body(b):
            mod.debug.print("b {}", b.sum())
            return b * 2

        mapped = mod.shard_map(body, mesh=auto, in_specs=mod.P("i"), out_specs=mod.P("i"))
        return [
            mod.jit(f).lower(X).as_text(),
            mod.jit(f).lower(placed).as_text(),
            mod.jit(mapped).lower(x8).as_text(),
        ]

    got, want = texts(xform, xnp), texts(jax, jnp)
    for g, w in zip(got, want, strict=True):
        assert g == w
    assert "@maximal_mesh_0" in got[0] and "@empty_mesh" in got[2]
    out = xform.jit(_callbacks_program(xform, xnp))(X)
    np.testing.assert_allclose(np.asarray(out), 3 * X)

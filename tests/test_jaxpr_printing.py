"""Jaxprs print as JAX prints them: layout, names, literals, types and params.

Each program of the table is traced by both libraries. Where the two jaxprs are the same
program the printed texts must be equal; where the equations legitimately differ (a param
only one library has, a different but equivalent lowering of a NumPy function), each param
that both libraries give the same primitive must print the same, and the layout checks run
on xform's text alone.
"""

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax as jlax
from jax._src import core as jcore

import xform
import xform.numpy as xnp
from xform import jaxpr_printer
from xform import lax as xlax

F = np.arange(6, dtype=np.float32).reshape(2, 3)
V = np.arange(3, dtype=np.float32)
I = np.arange(3, dtype=np.int32)  # noqa: E741
IDX = np.array([1, 0], np.int32)
IDX2 = IDX[:, None]
I2 = F.astype(np.int32)


def _dnums(L):
    return L.lax.ScatterDimensionNumbers(
        update_window_dims=(1,), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,)
    )


class _Lib:
    """One library's namespace for the programs: ``L.np``, ``L.lax``, ``L.jit``, ..."""

    def __init__(self, top, np_, lax):
        self.top, self.np, self.lax = top, np_, lax
        self.jit, self.grad, self.vmap = top.jit, top.grad, top.vmap
        self.custom_jvp, self.custom_vjp = top.custom_jvp, top.custom_vjp


XF, JX = _Lib(xform, xnp, xlax), _Lib(jax, jnp, jlax)


def _custom_jvp(L):
    @L.custom_jvp
    def f(x):
        return L.np.sin(x)

    @f.defjvp
    def f_jvp(primals, tangents):
        return f(primals[0]), 2.0 * tangents[0]

    return f


def _custom_vjp(L):
    @L.custom_vjp
    def f(x):
        return L.np.sin(x)

    def f_fwd(x):
        return L.np.sin(x), L.np.cos(x)

    def f_bwd(res, ct):
        return (res * ct,)

    f.defvjp(f_fwd, f_bwd)
    return f


def _jit_twice(L):
    g = L.jit(lambda y: y * 2.0)
    return lambda x: g(x) + g(x + 1.0)


# name -> (program(L), args, exact): exact if both libraries trace the same equations.
PROGRAMS = {
    "literals": (lambda L: lambda x: L.np.sin(x) * 2.0 + 1, (F,), True),
    "int_literal": (lambda L: lambda x: x + 3, (I,), True),
    "bool_literal": (lambda L: lambda x: L.lax.bitwise_and(x, True), (I > 0,), True),
    "one_line": (lambda L: lambda x: L.lax.mul(L.lax.sin(x), 2.0), (V,), True),
    "identity": (lambda L: lambda x: x, (V,), True),
    "two_outputs": (lambda L: lambda x: (L.lax.sin(x), L.lax.cos(x)), (V,), True),
    "sum_axes": (lambda L: lambda x: L.np.sum(x, axis=1, keepdims=True), (F,), False),
    "max_all": (lambda L: lambda x: L.lax.reduce_max(x, (0, 1)), (F,), False),
    "broadcast_in_dim": (lambda L: lambda x: L.lax.broadcast_in_dim(x, (4, 3), (1,)), (V,), True),
    "broadcast_scalar": (
        lambda L: lambda x: L.lax.broadcast_in_dim(x, (2, 2), ()),
        (np.float32(1),),
        True,
    ),
    "reshape": (lambda L: lambda x: L.lax.reshape(x, (3, 2)), (F,), False),
    "transpose": (lambda L: lambda x: L.lax.transpose(x, (1, 0)), (F,), True),
    "dot_general": (
        lambda L: lambda x: L.lax.dot_general(x, x, (((1,), (1,)), ((), ()))),
        (F,),
        False,
    ),
    "matmul": (lambda L: lambda x: x.T @ x, (F,), False),
    "convert": (lambda L: lambda x: L.lax.convert_element_type(x, np.int32), (F,), True),
    "astype": (lambda L: lambda x: x.astype(L.np.float16), (F,), True),
    "slice": (lambda L: lambda x: x[0, 1:], (F,), True),
    # xform folds the constant index's wrap-around at trace time: fewer equations
    "gather": (lambda L: lambda x: x[L.np.array([1, 0])], (F,), False),
    "dynamic_slice": (
        lambda L: lambda x, i: L.lax.dynamic_slice(x, (i, 0), (1, 3)),
        (F, np.int32(1)),
        True,
    ),
    "concatenate": (lambda L: lambda x: L.lax.concatenate([x, x], 0), (F,), True),
    "pad": (lambda L: lambda x: L.lax.pad(x, 0.0, [(1, 0, 1)]), (V,), True),
    "iota": (lambda L: lambda x: L.lax.iota(np.float32, 3) + x, (V,), False),
    "cumsum": (lambda L: lambda x: L.lax.cumsum(x, 1), (F,), True),
    "sort": (lambda L: L.lax.sort, (V,), True),
    "cond": (
        lambda L: lambda x: L.lax.cond(x.sum() > 0, lambda y: y * 2, lambda y: y, x),
        (F,),
        False,
    ),
    "while": (
        lambda L: (
            lambda x: L.lax.while_loop(
                lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * 2.0), (0, x)
            )[1]
        ),
        (F,),
        True,
    ),
    "fori_loop": (lambda L: lambda x: L.lax.fori_loop(0, 3, lambda i, y: y * 2.0, x), (F,), False),
    "scan": (
        lambda L: (
            lambda x: L.lax.scan(lambda c, r: (c + r, c * r), L.lax.full((3,), 0.0, np.float32), x)
        ),
        (F,),
        False,
    ),
    "conv": (
        lambda L: (
            lambda x: L.lax.conv_general_dilated(
                x[None, None], L.np.ones((1, 1, 2, 2), np.float32), (1, 1), "SAME"
            )
        ),
        (F,),
        False,
    ),
    "scatter_add": (lambda L: lambda x: x.at[IDX].add(1.0), (F,), False),
    # xform's scatters derive JAX's update_jaxpr and update_consts params for printing; one
    # update_jaxpr per dtype, shared by name when used twice
    "lax_scatter": (lambda L: lambda x, i: L.lax.scatter(x, i, x, _dnums(L)), (F, IDX2), True),
    "lax_scatter_mul_twice": (
        lambda L: (
            lambda x, i: L.lax.scatter_mul(L.lax.scatter_mul(x, i, x, _dnums(L)), i, x, _dnums(L))
        ),
        (F, IDX2),
        True,
    ),
    "lax_scatter_ops": (
        lambda L: (
            lambda x, i: [
                getattr(L.lax, f"scatter_{op}")(x, i, x, _dnums(L)) for op in ("add", "min", "max")
            ]
        ),
        (I2, IDX2),
        True,
    ),
    "at_add_traced_index": (lambda L: lambda x, i: x.at[i].add(1.0), (V, np.int32(1)), True),
    "grad_of_gather": (
        lambda L: L.grad(
            lambda x, i: L.np.sum(
                L.lax.gather(
                    x,
                    i,
                    L.lax.GatherDimensionNumbers(
                        offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,)
                    ),
                    (1, 3),
                )
            )
        ),
        (F, IDX2),
        True,
    ),
    "argsort": (lambda L: lambda x: L.np.argsort(x, axis=1), (F,), False),
    "cumprod": (lambda L: lambda x: L.lax.cumprod(x, axis=1, reverse=True), (F,), True),
    "switch": (lambda L: lambda x: L.lax.switch(1, [L.np.sin, L.np.cos], x), (F,), False),
    "jit_in_jit": (lambda L: lambda x: L.jit(lambda y: y * 2.0)(x) + 1.0, (F,), True),
    "jit_twice": (_jit_twice, (V,), True),
    "custom_jvp": (_custom_jvp, (V,), False),
    "custom_vjp": (_custom_vjp, (V,), False),
    "grad": (lambda L: L.grad(lambda x: L.np.sum(L.np.sin(x))), (F,), False),
    "grad_of_jit": (
        lambda L: L.grad(L.jit(lambda x: L.lax.reduce_sum(L.lax.sin(x), (0,)))),
        (V,),
        False,
    ),
    "vmap": (
        lambda L: L.vmap(lambda x: L.lax.dot_general(x, x, (((0,), (0,)), ((), ())))),
        (F,),
        False,
    ),
}


# Params whose values (not their printing) differ, by design or pending elsewhere.
KNOWN_PARAM_DIFFERENCES = set()


def _trace(name):
    build, args, _ = PROGRAMS[name]
    with jax.numpy_rank_promotion("allow"):
        theirs = jax.make_jaxpr(build(JX))(*args)
    ours = xform.make_jaxpr(build(XF))(*args)
    return ours, theirs


def _split_params(line, prim):
    """``{key: printed value}`` of the params of a one-line equation ``... = prim[k=v ...]``."""
    start = line.find(f"{prim}[", line.find(" = ") + 1 if " = " in line else 0)
    if start < 0:
        return {}
    i, depth, begin, parts = start + len(prim) + 1, 0, start + len(prim) + 1, []
    while i < len(line):
        c = line[i]
        if c in "([{":
            depth += 1
        elif c in ")}" or (c == "]" and depth > 0):
            depth -= 1
        elif c == "]" and depth == 0:
            parts.append(line[begin:i])
            break
        elif c == " " and depth == 0 and re.match(r"[A-Za-z_]\w*=", line[i + 1 :]):
            parts.append(line[begin:i])
            begin = i + 1
        i += 1
    return dict(p.split("=", 1) for p in parts if "=" in p)


def _eqns(jaxpr):
    """Every equation, sub-jaxprs' included, in order."""
    for eqn in jaxpr.eqns:
        yield eqn
        for v in eqn.params.values():
            for sub in v if type(v) is tuple else (v,):
                if hasattr(sub, "eqns"):
                    yield from _eqns(sub.jaxpr if hasattr(sub, "consts") else sub)


def _our_params(eqn):
    line = jaxpr_printer._layout(jaxpr_printer._pp_eqn_doc(eqn, jaxpr_printer.Names()), 10**9)
    return _split_params(line, eqn.primitive.name)


def _their_params(eqn):
    ctx, settings = jcore.JaxprPpContext(), jcore.JaxprPpSettings()
    line = jcore.pp_eqn(eqn, ctx, settings).format(10**9, use_color=False)
    return _split_params(line, eqn.primitive.name)


def _first_by_primitive(eqns, params):
    out = {}
    for eqn in eqns:
        out.setdefault(eqn.primitive.name, params(eqn))
    return out


def _params_by_type(eqns, params):
    """The params of the first equation of each primitive and operand and result types."""
    out = {}
    for eqn in eqns:
        types = tuple((v.aval.dtype.name, v.aval.shape) for v in [*eqn.invars, *eqn.outvars])
        out.setdefault((eqn.primitive.name, types), params(eqn))
    return out


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_printed_like_jax(name):
    ours, theirs = _trace(name)
    text, expected = str(ours), str(theirs)
    if PROGRAMS[name][2]:
        assert text == expected
        return
    # The equations differ: every param both give one primitive prints the same.
    mine = _first_by_primitive(_eqns(ours.jaxpr), _our_params)
    jaxs = _first_by_primitive(_eqns(theirs.jaxpr), _their_params)
    shared = set(mine) & set(jaxs)
    assert shared, (text, expected)
    # The same params shown (JAX hides defaults xform must hide too) by equations of one
    # primitive and types ...
    mine_typed = _params_by_type(_eqns(ours.jaxpr), _our_params)
    jaxs_typed = _params_by_type(_eqns(theirs.jaxpr), _their_params)
    for prim, types in set(mine_typed) & set(jaxs_typed):
        known = {k for n, p, k in KNOWN_PARAM_DIFFERENCES if (n, p) == (name, prim)}
        assert set(mine_typed[prim, types]) - known == set(jaxs_typed[prim, types]) - known, (
            prim,
            text,
            expected,
        )
    # ... and every param both give one primitive prints the same.
    for prim in shared:
        for key in set(mine[prim]) & set(jaxs[prim]):
            if (
                mine[prim][key].startswith("{ lambda")
                or (name, prim, key) in KNOWN_PARAM_DIFFERENCES
            ):
                continue  # sub-jaxprs: their equations are compared above
            assert mine[prim][key] == jaxs[prim][key], (prim, key, text, expected)
    # ... and the layout reads as JAX's: the header, the indentation, the result tuple.
    assert re.match(r"\{ lambda [^;]*; [^.]*\. let", text), text
    assert text.endswith(expected[expected.rindex(" in (") :][-3:])
    assert [len(s) - len(s.lstrip()) for s in text.splitlines()][:2] == [
        len(s) - len(s.lstrip()) for s in expected.splitlines()
    ][:2]


def test_sub_jaxprs_on_one_line_when_they_fit():
    ours, theirs = _trace("cond")
    assert "{ lambda ; f:f32[2,3]. let  in (f,) }" in str(ours)
    assert "{ lambda ; g:f32[2,3]. let h:f32[2,3] = mul g 2.0:f32[] in (h,) }" in str(ours)


def test_unread_results_print_as_underscore():
    ours, theirs = _trace("fori_loop")
    assert "    _:i32[] b:f32[2,3] = scan[" in str(ours)
    assert "    _:i32[] b:f32[2,3] = scan[" in str(theirs)


def test_jaxpr_used_twice_prints_once_by_name():
    text = str(_trace("jit_twice")[0])
    assert text.startswith("let lambda = { lambda ; ")
    assert text.count("jaxpr=lambda") == 2


def test_long_equation_breaks_params_one_a_line():
    ours, theirs = _trace("gather")
    assert "    c:f32[2,3] = gather[\n      dimension_numbers=GatherDimensionNumbers(" in (
        str(ours)
    )


def test_equation_and_jaxpr_reprs():
    jaxpr = xform.make_jaxpr(lambda x: xlax.add(xlax.sin(x), 1.0))(V).jaxpr
    assert repr(jaxpr.eqns[0]) == "a:f32[3] = sin b"
    names = jaxpr_printer.Names()
    assert jaxpr_printer.pp_eqn(jaxpr.eqns[1], names) == "a:f32[3] = add b 1.0:f32[]"
    assert repr(jaxpr) == str(jaxpr)


def _summed(f, L):
    return lambda x: L.np.sum(f(x))


def _jvp_of(f, L):
    return lambda x: L.top.jvp(f, (x,), (x,))


# Custom-derivative calls and jit bodies under transformations: the same equations, so the
# texts are equal (names, symbolic_zeros, jvp/fwd/bwd, custom_lin's in_zeros and num_res).
TRANSFORMED = {
    "custom_jvp": _custom_jvp,
    "custom_jvp_jit": lambda L: L.jit(_custom_jvp(L)),
    "custom_jvp_vmap": lambda L: L.vmap(_custom_jvp(L)),
    "custom_jvp_jvp": lambda L: _jvp_of(_custom_jvp(L), L),
    "custom_jvp_grad_jit": lambda L: L.grad(L.jit(_summed(_custom_jvp(L), L))),
    "custom_vjp": _custom_vjp,
    "custom_vjp_jit": lambda L: L.jit(_custom_vjp(L)),
    "custom_vjp_vmap": lambda L: L.vmap(_custom_vjp(L)),
    "custom_vjp_jvp": lambda L: _jvp_of(_custom_vjp(L), L),
    "custom_vjp_grad_jit": lambda L: L.grad(L.jit(_summed(_custom_vjp(L), L))),
    "jit_grad": lambda L: L.grad(L.jit(lambda x: L.lax.reduce_sum(L.lax.sin(x), (0,)))),
    "jit_jvp": lambda L: _jvp_of(L.jit(L.lax.sin), L),
    "jit_vmap": lambda L: L.vmap(L.jit(lambda x: L.lax.sin(x) * 2.0)),
    # elementwise operands of one shape and rank-0 ones keep the batch dimension in place
    "vmap_in_axes_1": lambda L: L.vmap(lambda x: L.lax.sin(x) * 2.0 - x + 1.0, in_axes=1),
    "jit_vjp": lambda L: lambda x: L.top.vjp(L.jit(L.lax.sin), x)[1](x),
}


@pytest.mark.parametrize("name", sorted(TRANSFORMED))
def test_transformed_calls_print_as_jax(name):
    build = TRANSFORMED[name]
    arg = F if "vmap" in name else V
    assert str(xform.make_jaxpr(build(XF))(arg)) == str(jax.make_jaxpr(build(JX))(arg))


def _lowered_programs(L):
    def f(x):
        return L.lax.reduce_sum(L.lax.sin(x), (0,))

    def main(x):
        return x + 1.0

    return [
        L.grad(L.jit(f)),
        lambda x: L.top.vjp(L.jit(f), x)[1](1.0),
        lambda x: L.jit(main)(x),  # noqa: PLW0108 (the module is named after a lambda)
        _custom_jvp(L),
        L.grad(_summed(_custom_vjp(L), L)),
    ]  # custom calls inline


def test_lowered_function_names_as_jax():
    """Private functions are named after the jit'd function, clashes renamed ``f_0``, ``f_1``
    as MLIR's symbol table renames them; the module name has no trailing underscore; custom
    derivative calls are emitted inline."""
    names = []
    for L in (XF, JX):
        for prog in _lowered_programs(L):
            text = L.jit(prog).lower(V).as_text()
            names.append(
                (
                    re.findall(r"module @([\w.-]+)", text),
                    re.findall(r"func\.func \w+ @([\w.-]+)", text),
                )
            )
    assert names[:5] == names[5:]
    assert names[0] == (["jit_f"], ["main", "f", "f_0"])
    assert names[2] == (["jit__lambda"], ["main", "main_0"])
    assert names[3] == (["jit_f"], ["main"])


@pytest.mark.parametrize(
    "make", [lambda L: L.np.sin, _custom_jvp, _custom_vjp], ids=["sin", "custom_jvp", "custom_vjp"]
)
def test_gradient_of_a_python_scalar_prints_as_jax(make):
    """A weakly typed primal has weakly typed tangents and cotangents, as in JAX: no
    conversions to a strong type and back in the program."""
    text = str(xform.make_jaxpr(XF.grad(make(XF)))(1.5))
    assert text == str(jax.make_jaxpr(JX.grad(make(JX)))(1.5))
    assert "convert_element_type" not in text


def _custom_vjp2(L):
    @L.custom_vjp
    def f(x, y):
        return L.np.sin(x) * y

    def f_fwd(x, y):
        return f(x, y), (L.np.cos(x), y)

    def f_bwd(res, ct):
        return res[0] * res[1] * ct, L.np.sin(res[1]) * ct

    f.defvjp(f_fwd, f_bwd)
    return f


def test_custom_lin_marks_zero_tangents_as_jax():
    """Only the nonzero tangents are custom_lin's operands; ``in_zeros`` says which."""

    def program(L):
        f = _custom_vjp2(L)
        return lambda x, y: L.top.jvp(lambda a: f(a, y), (x,), (x,))

    text = str(xform.make_jaxpr(program(XF))(V, V))
    assert text == str(jax.make_jaxpr(program(JX))(V, V))
    assert "in_zeros=[False, True]" in text
    grads = [L.grad(_summed2(_custom_vjp2(L), L))(V, V) for L in (XF, JX)]
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-6)


def _summed2(f, L):
    return lambda x, y: L.np.sum(f(x, y))


def _sin_x(L):
    return L.grad(lambda x: L.np.sum(L.np.sin(x) * x))


def _custom_jvp_adding(L):
    @L.custom_jvp
    def f(x):
        return L.np.sin(x)

    @f.defjvp
    def f_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return f(x), t * 2.0 + L.np.cos(x) * t

    return L.grad(_summed(f, L))


def _float0_jvp(L):
    f = lambda x, i: L.np.sum(x * x * i)  # noqa: E731
    return lambda x, i: L.top.jvp(f, (x, i), (x, np.zeros(3, jax.dtypes.float0)))


C = (V + 1j * V).astype(np.complex64)

# Derivatives: tangents and cotangents are summed with add_any (JAX's add_jaxvals_p), not add.
# name -> (program(L), args, exact); not exact where other equations legitimately differ
# (see test_derivatives_sum_with_add_any_as_jax).
DERIVATIVES = {
    "grad_sin_x": (_sin_x, (V,), True),
    "grad_x_x": (lambda L: L.grad(lambda x: L.np.sum(x * x)), (V,), True),
    "grad_div": (lambda L: L.grad(lambda x, y: L.np.sum(x / y), argnums=(0, 1)), (V, V + 1), True),
    "grad_used_three_times": (
        lambda L: L.grad(lambda x: L.np.sum(x * L.np.sin(x) * L.np.exp(x))),
        (V,),
        True,
    ),
    "grad_tanh_layer": (
        lambda L: L.grad(lambda w, x: L.np.sum(L.np.tanh(x @ w) ** 2)),
        (F.T.copy(), F),
        True,
    ),
    "grad_scan": (
        lambda L: L.grad(lambda x: L.lax.scan(lambda c, r: (c * r + L.np.sin(c), c), 1.0, x)[0]),
        (V,),
        False,
    ),
    "grad_cond": (
        lambda L: L.grad(
            lambda x: L.lax.cond(x > 0, lambda y: y * y * L.np.sin(y), lambda y: y, x)
        ),
        (np.float32(1.5),),
        False,
    ),
    "grad_fori_loop": (
        lambda L: L.grad(lambda x: L.lax.fori_loop(0, 2, lambda i, y: y * y, x)),
        (np.float32(1.5),),
        True,
    ),
    "vmap_of_grad": (lambda L: L.vmap(L.grad(lambda x: L.np.sin(x) * x)), (V,), True),
    "jvp_of_mul": (
        lambda L: lambda x, y: L.top.jvp(lambda a, b: a * b, (x, y), (x, y)),
        (V, V),
        True,
    ),
    "custom_jvp_rule_adds": (_custom_jvp_adding, (V,), True),
    "grad_complex": (
        lambda L: L.grad(lambda z: L.np.real(L.np.sum(z * z * L.np.sin(z)))),
        (C,),
        False,
    ),
    "grad_python_scalar": (lambda L: L.grad(lambda x: x * x + 2.0 * x), (1.5,), True),
    "jvp_float0_tangent": (_float0_jvp, (V, I), True),
    "linearize": (
        lambda L: lambda x: L.top.linearize(lambda a: a * L.np.sin(a), x)[1](x),
        (V,),
        True,
    ),
    "vjp": (lambda L: lambda x: L.top.vjp(lambda a: a * L.np.cos(a) * a, x)[1](x), (V,), True),
    "grad_matmuls": (lambda L: L.grad(lambda x: L.np.sum((x @ x.T) @ x)), (F,), True),
}


@pytest.mark.parametrize("name", sorted(DERIVATIVES))
def test_derivatives_sum_with_add_any_as_jax(name):
    build, args, exact = DERIVATIVES[name]
    text = str(xform.make_jaxpr(build(XF))(*args))
    expected = str(jax.make_jaxpr(build(JX))(*args))
    if exact:
        assert text == expected
        return
    # Other equations differ (a cond's unused residuals, a literal's conversion): the sums
    # are still add_any equations of the same types, in the same order.
    sums = [re.findall(r":(\S+) = (add_any|add) ", t) for t in (text, expected)]
    assert sums[0] == sums[1], (text, expected)
    assert any(op == "add_any" for _, op in sums[0])


def test_tracers_print_as_jax():
    # What `print(x)` shows inside a transformation, as JAX 0.10.2's tracers: JitTracer
    # (jit, make_jaxpr, eval_shape; `~` for a weak type), JVPTracer, GradTracer, VmapTracer.
    def printed(mod, np_):
        seen = []

        def show(x):
            seen.append(repr(x))
            return x

        mod.jit(show)(1.0)
        mod.make_jaxpr(show)(np_.ones(3, np_.int32))
        mod.eval_shape(show, np_.ones((2, 2)))
        mod.jvp(show, (np_.ones(2),), (np_.ones(2),))
        mod.jvp(show, (1.0,), (np.float32(1.0),))
        mod.grad(lambda x: show(x * 2).sum())(np_.ones(2))
        mod.vmap(show)(np_.ones((3, 2), np_.int32))
        mod.vmap(show, in_axes=1)(np_.ones((3, 2)))
        mod.vmap(lambda x: show(x * 2.0))(np_.ones((3, 2), np_.int32))
        mod.jit(mod.vmap(show))(np_.ones((3, 2)))
        mod.jit(mod.grad(lambda x: show(x) * 2))(1.0)  # grad by linearize: GradTracers
        mod.jit(lambda p, t: mod.jvp(show, (p,), (t,)))(1.0, 1.0)
        mod.linearize(show, 1.0)
        mod.vmap(mod.grad(lambda x: show(x).sum()))(np_.ones((3, 2)))
        mod.grad(mod.grad(lambda x: show(x) * 2))(1.0)
        return seen

    assert printed(xform, xnp) == printed(jax, jnp)

"""The rest of the contraction API against JAX: conv_transpose and the convolution helpers,
ragged and scaled dots, batch_matmul, Precision / DotAlgorithm arguments, and jax.numpy's
preferred_element_type, einsum ``optimize``/sublist forms and einsum_path."""

import jax
import jax.lax as jlax
import jax.numpy as jnp
import numpy as np
import pytest

import xform
import xform.numpy as xnp
from tests.harness import assert_same
from xform import lax

RNG = np.random.default_rng(7)
F32 = dict(rtol=2e-5, atol=2e-5)


def _normal(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def _vs_jax(xf_fn, jax_fn, *args, jit=False, **tol):
    """``xf_fn(*args)`` (and, if ``jit``, ``xform.jit(xf_fn)(*args)``) equals the jitted JAX
    oracle (compiled once: JAX's eager mode compiles every operation)."""
    expected = jax.jit(jax_fn)(*args)
    assert_same(xf_fn(*args), expected, what="eager", **tol)
    if jit:
        assert_same(xform.jit(xf_fn)(*args), expected, what="jit", **tol)
    return expected


# --------------------------------------------------------------------------- conv_transpose

CONV_T_CASES = [
    # lhs shape, rhs shape, strides, padding, rhs_dilation, dimension_numbers, transpose_kernel
    ((2, 7, 3), (3, 3, 2), (2,), "SAME", None, None, False),
    ((2, 7, 3), (3, 2, 3), (3,), "VALID", (2,), None, True),
    ((1, 5, 4, 2), (3, 2, 2, 3), (2, 2), ((1, 2), (0, 1)), None, None, False),
    ((1, 2, 5, 4), (2, 3, 2, 3), (2, 1), "SAME", (1, 2), ("NCHW", "OIHW", "NCHW"), True),
]


@pytest.mark.parametrize("ls,rs,strides,padding,dil,dn,tk", CONV_T_CASES)
def test_conv_transpose_values_jit_grad(ls, rs, strides, padding, dil, dn, tk):
    x, w = _normal(*ls), _normal(*rs)
    kw = dict(rhs_dilation=dil, dimension_numbers=dn, transpose_kernel=tk)
    _vs_jax(
        lambda a, b: lax.conv_transpose(a, b, strides, padding, **kw),
        lambda a, b: jlax.conv_transpose(a, b, strides, padding, **kw),
        x,
        w,
        jit=True,
        **F32,
    )

    def loss(mod):
        return lambda a, b: (mod.conv_transpose(a, b, strides, padding, **kw) ** 2).sum()

    got = xform.grad(loss(lax), argnums=(0, 1))(x, w)
    expected = jax.jit(jax.grad(loss(jlax), argnums=(0, 1)))(x, w)
    assert_same(got, expected, rtol=1e-4, atol=1e-4)


def test_conv_transpose_vmap_consistent_padding_and_preferred_type():
    x, w = _normal(3, 1, 5, 4, 2), _normal(3, 3, 2, 3)
    expected = jax.jit(jax.vmap(lambda a: jlax.conv_transpose(a, w, (2, 2), "SAME")))(x)
    assert_same(xform.vmap(lambda a: lax.conv_transpose(a, w, (2, 2), "SAME"))(x), expected, **F32)
    pads = ((1, 1), (0, 2))
    _vs_jax(
        lambda a: lax.conv_transpose(a, w, (2, 1), pads, use_consistent_padding=True),
        lambda a: jlax.conv_transpose(a, w, (2, 1), pads, use_consistent_padding=True),
        x[0],
        **F32,
    )
    xi, wi = np.full((1, 3, 2), 100, np.int8), np.full((2, 2, 1), 100, np.int8)
    _vs_jax(
        lambda a: lax.conv_transpose(a, wi, (2,), "VALID", preferred_element_type=np.int32),
        lambda a: jlax.conv_transpose(a, wi, (2,), "VALID", preferred_element_type=np.int32),
        xi,
    )


def test_conv_transpose_bad_input():
    x, w = np.ones((1, 4, 4, 2), np.float32), np.ones((3, 3, 2, 1), np.float32)
    for mod in (lax, jlax):
        with pytest.raises(RuntimeError, match="Unrecognized padding type"):
            mod.conv_transpose(x, w, (1, 1), "FOO")
    with pytest.raises(ValueError, match="No 4\\+ dimensional"):
        lax.conv_transpose(np.ones((1,) * 6), np.ones((1,) * 6), (1,) * 4, "SAME")


# --------------------------------------------------------------------------- shape helpers


def test_shape_tuples_match_jax():
    dn = ("NHWC", "HWIO", "NHWC")
    for pads in ("SAME", "VALID", ((1, 1), (2, 0))):
        for args in [((2, 3, 9, 9), (4, 3, 3, 3), (2, 2), pads)]:
            assert lax.conv_shape_tuple(*args) == jlax.conv_shape_tuple(*args)
        args = ((2, 9, 8, 3), (3, 2, 3, 4), (2, 1), pads, dn)
        assert lax.conv_general_shape_tuple(*args) == jlax.conv_general_shape_tuple(*args)
        assert lax.conv_transpose_shape_tuple(*args) == jlax.conv_transpose_shape_tuple(*args)
    assert lax.conv_shape_tuple(
        (4, 3, 5), (6, 3, 2), (1,), "VALID", batch_group_count=2
    ) == jlax.conv_shape_tuple((4, 3, 5), (6, 3, 2), (1,), "VALID", batch_group_count=2)
    for mod in (lax, jlax):
        with pytest.raises(TypeError, match="Wrong number of explicit pads"):
            mod.conv_shape_tuple((2, 3, 9, 9), (4, 3, 3, 3), (1, 1), ((1, 1),))
        with pytest.raises(ValueError, match="Negative padding is larger"):
            mod.conv_shape_tuple((2, 3, 4), (4, 3, 3), (1,), ((-3, -3),))
    assert lax.ConvGeneralDilatedDimensionNumbers is not None
    assert lax.DotDimensionNumbers is not None


# --------------------------------------------------------------------------- patches / local


def test_conv_general_dilated_patches_and_local():
    x = _normal(2, 3, 6, 5)
    _vs_jax(
        lambda a: lax.conv_general_dilated_patches(a, (2, 3), (1, 2), "SAME"),
        lambda a: jlax.conv_general_dilated_patches(a, (2, 3), (1, 2), "SAME"),
        x,
        jit=True,
    )
    nhwc = np.ascontiguousarray(x.transpose(0, 2, 3, 1))
    kw = dict(dimension_numbers=("NHWC", "HWIO", "NHWC"), rhs_dilation=(2, 1), lhs_dilation=(1, 2))
    _vs_jax(
        lambda a: lax.conv_general_dilated_patches(a, (2, 3), (1, 1), ((1, 0), (0, 1)), **kw),
        lambda a: jlax.conv_general_dilated_patches(a, (2, 3), (1, 1), ((1, 0), (0, 1)), **kw),
        nhwc,
    )
    out_space = lax.conv_general_dilated_patches(x, (2, 3), (1, 2), "SAME").shape[2:]
    w = _normal(4, 3 * 6, *out_space)
    _vs_jax(
        lambda a, b: lax.conv_general_dilated_local(a, b, (1, 2), "SAME", (2, 3)),
        lambda a, b: jlax.conv_general_dilated_local(a, b, (1, 2), "SAME", (2, 3)),
        x,
        w,
        **F32,
    )
    got = xform.grad(lambda b: lax.conv_general_dilated_local(x, b, (1, 2), "SAME", (2, 3)).sum())(
        w
    )
    expected = jax.jit(
        jax.grad(lambda b: jlax.conv_general_dilated_local(x, b, (1, 2), "SAME", (2, 3)).sum())
    )(w)
    assert_same(got, expected, **F32)
    for mod in (lax, jlax):
        with pytest.raises(TypeError, match="lhs and rhs ndim to be equal, got 4 and 3"):
            mod.conv_general_dilated_patches(x, (2,), (1, 1), "SAME")
        with pytest.raises(
            ValueError, match="Unsupported precision for conv_general_dilated_local"
        ):
            mod.conv_general_dilated_local(x, w, (1, 2), "SAME", (2, 3), precision="F32_F32_F32")


# --------------------------------------------------------------------------- ragged dots


def test_ragged_dot_values_grads_jit():
    lhs, rhs = _normal(7, 4), _normal(3, 4, 5)
    for sizes in ([2, 0, 4], [2, 1, 1]):  # the second leaves rows past the groups: zeros
        gs = np.array(sizes, np.int32)
        _vs_jax(lax.ragged_dot, jlax.ragged_dot, lhs, rhs, gs, jit=True, **F32)
    gs = np.array([2, 0, 4], np.int32)

    def loss(mod):
        return lambda a, b: (mod.ragged_dot(a, b, gs) ** 2).sum()

    assert_same(
        xform.grad(loss(lax), argnums=(0, 1))(lhs, rhs),
        jax.jit(jax.grad(loss(jlax), argnums=(0, 1)))(lhs, rhs),
        **F32,
    )
    # vmap over the lhs rows (JAX's own rule does not map a ragged dot's lhs): a loop
    stacked = np.stack([lhs, 2 * lhs])
    got = xform.vmap(lambda a: lax.ragged_dot(a, rhs, gs))(stacked)
    one = jax.jit(lambda a: jlax.ragged_dot(a, rhs, gs))
    assert_same(got, np.stack([one(a) for a in stacked]), **F32)
    li, ri = np.full((4, 3), 100, np.int8), np.full((2, 3, 2), 100, np.int8)
    gi = np.array([1, 3], np.int32)
    _vs_jax(
        lambda a, b: lax.ragged_dot(a, b, gi, preferred_element_type=np.int32),
        lambda a, b: jlax.ragged_dot(a, b, gi, preferred_element_type=np.int32),
        li,
        ri,
    )


def test_ragged_dot_general_modes():
    def dnums(mod, dot, ragged, group):
        return mod.RaggedDotDimensionNumbers(
            dot_dimension_numbers=dot, lhs_ragged_dimensions=ragged, rhs_group_dimensions=group
        )

    # ragged free dimension with a batch dimension, group sizes per batch and shared
    dot = (([2], [1]), ([0], [0]))
    lhs, rhs = _normal(2, 6, 4), _normal(2, 4, 3, 5)
    for gs in (np.array([[1, 3, 2], [0, 4, 1]], np.int32), np.array([1, 3, 2], np.int32)):
        assert_same(
            lax.ragged_dot_general(lhs, rhs, gs, dnums(lax, dot, [1], [2])),
            jlax.ragged_dot_general(lhs, rhs, gs, dnums(jlax, dot, [1], [2])),
            **F32,
        )
    # ragged contracting dimension: one output per group
    dot = (([1], [0]), ([], []))
    lhs, rhs, gs = _normal(3, 6), _normal(6, 5), np.array([1, 3, 2], np.int32)
    _vs_jax(
        lambda a, b: lax.ragged_dot_general(a, b, gs, dnums(lax, dot, [1], [])),
        lambda a, b: jlax.ragged_dot_general(a, b, gs, dnums(jlax, dot, [1], [])),
        lhs,
        rhs,
        **F32,
    )
    # ragged batch dimension: a plain dot_general
    dot = (([2], [1]), ([0], [0]))
    lhs, rhs, gs = _normal(3, 2, 4), _normal(3, 4, 5), np.array([1, 2], np.int32)
    assert_same(
        lax.ragged_dot_general(lhs, rhs, gs, dnums(lax, dot, [0], [])),
        jlax.ragged_dot_general(lhs, rhs, gs, dnums(jlax, dot, [0], [])),
        **F32,
    )


def test_ragged_dot_bad_input():
    lhs, rhs, gs = _normal(7, 4), _normal(3, 4, 5), np.array([2, 0, 4], np.int32)
    for mod in (lax, jlax):
        with pytest.raises(TypeError, match="group_sizes.dtype is subtype of np.integer"):
            mod.ragged_dot(lhs, rhs, gs.astype(np.float32))
        with pytest.raises(TypeError, match="expected rhs group dimension size to be 3, got 2"):
            mod.ragged_dot(lhs, rhs[:2], gs)
    with pytest.raises(NotImplementedError, match="group_offset"):
        lax.ragged_dot(lhs, rhs, gs, group_offset=np.array([1], np.int32))


# --------------------------------------------------------------------------- scaled_dot and
# batch_matmul


def test_scaled_dot():
    x, y = _normal(2, 8), _normal(8, 3)
    ls, rs = RNG.uniform(1, 2, (2, 2)).astype(np.float32), RNG.uniform(1, 2, (2, 3))
    rs = rs.astype(np.float32)
    _vs_jax(lax.scaled_dot, jlax.scaled_dot, x, y)
    for pref in (None, np.float32):
        kw = dict(lhs_scale=ls, rhs_scale=rs, preferred_element_type=pref)
        _vs_jax(
            lambda a, b, kw=kw: lax.scaled_dot(a, b, **kw),
            lambda a, b, kw=kw: jlax.scaled_dot(a, b, **kw),
            x,
            y,
            jit=True,
            **F32,
        )
    x3, y3, s3 = _normal(2, 3, 8), _normal(2, 8, 4), RNG.uniform(1, 2, (2, 3, 4))
    s3 = s3.astype(np.float32)
    _vs_jax(
        lambda a, b: lax.scaled_dot(a, b, lhs_scale=s3),
        lambda a, b: jlax.scaled_dot(a, b, lhs_scale=s3),
        x3,
        y3,
    )
    for mod in (lax, jlax):
        with pytest.raises(TypeError, match="must be divisible by its scale's dim size 3"):
            mod.scaled_dot(x, y, lhs_scale=np.ones((2, 3), np.float32))
        with pytest.raises(TypeError, match="does not support 0-rank and 1-rank"):
            mod.scaled_dot(x[0], y[:, 0])


def test_batch_matmul():
    x, y = _normal(2, 3, 4), _normal(2, 4, 5)
    _vs_jax(lax.batch_matmul, jlax.batch_matmul, x, y, **F32)
    for mod in (lax, jlax):
        with pytest.raises(ValueError, match="must have same ndim, got 2, 3"):
            mod.batch_matmul(x[0], y)
        with pytest.raises(ValueError, match="must be at least 2D"):
            mod.batch_matmul(x[0, 0], y[0, 0])


# --------------------------------------------------------------------------- precision


def test_precision_strings_and_algorithms():
    for word in (
        "highest",
        "float32",
        "high",
        "tensorfloat32",
        "bfloat16",
        "default",
        "fastest",
        "bfloat16_3x",
    ):
        assert lax.Precision(word).name == jlax.Precision(word).name
    assert repr(lax.Precision("highest")) == "Precision.HIGHEST"
    assert lax.Precision["HIGHEST"] is lax.Precision.HIGHEST
    for mod in (lax, jlax):
        with pytest.raises(ValueError, match="'HIGHEST' is not a valid Precision"):
            mod.Precision("HIGHEST")
    assert [p.name for p in lax.DotAlgorithmPreset] == [p.name for p in jlax.DotAlgorithmPreset]
    x = (RNG.standard_normal((2, 3)) / 7).astype(np.float16)
    y = (RNG.standard_normal((3, 2)) / 3).astype(np.float16)
    for prec in ("F32_F32_F32", "BF16_BF16_F32", "F64_F64_F64", "DEFAULT"):
        _vs_jax(
            lambda a, b, p=prec: lax.dot(a, b, precision=p),
            lambda a, b, p=prec: jlax.dot(a, b, precision=p),
            x,
            y,
            jit=prec == "BF16_BF16_F32",
        )
    _vs_jax(
        lambda a, b: lax.dot(
            a, b, precision=lax.DotAlgorithmPreset.BF16_BF16_F32, preferred_element_type=np.float32
        ),
        lambda a, b: jlax.dot(
            a, b, precision=jlax.DotAlgorithmPreset.BF16_BF16_F32, preferred_element_type=np.float32
        ),
        x,
        y,
    )
    xf = x.astype(np.float32)
    got = xform.grad(lambda a: lax.dot(a, xf.T, precision="F32_F32_F32").sum())(xf)
    expected = jax.jit(jax.grad(lambda a: jlax.dot(a, xf.T, precision="F32_F32_F32").sum()))(xf)
    assert_same(got, expected)
    for mod in (lax, jlax):
        with pytest.raises(
            ValueError, match="'TF32_TF32_F32' is not supported by dot_general on CPU"
        ):
            mod.dot(xf, xf.T, precision="TF32_TF32_F32")
        with pytest.raises(ValueError, match="[Pp]recision"):
            mod.dot(xf, xf.T, precision="HIGHEST")
        with pytest.raises(ValueError, match="[Pp]recision"):
            mod.dot(xf, xf.T, precision=(mod.Precision.HIGH, "highest"))
    with pytest.raises(ValueError, match="not supported by dot_general on CPU"):
        xform.jit(lambda a: lax.dot(a, a.T, precision="TF32_TF32_F32"))(xf)


# --------------------------------------------------------------------------- preferred types


@pytest.mark.parametrize("name", ["dot", "matmul", "inner", "vdot", "tensordot", "vecdot"])
def test_numpy_preferred_element_type_accumulates_wide(name):
    a = np.full((2, 3), 200, np.uint8)
    b = a if name in ("inner", "vecdot", "vdot") else np.full((3,), 200, np.uint8)
    kw = {"axes": 1} if name == "tensordot" else {}
    _vs_jax(
        lambda p, q: getattr(xnp, name)(p, q, preferred_element_type=np.int32, **kw),
        lambda p, q: getattr(jnp, name)(p, q, preferred_element_type=np.int32, **kw),
        a,
        b,
        jit=name == "dot",
    )


def test_preferred_element_type_dtypes_and_grads():
    x, y = np.arange(6, dtype=np.int8).reshape(2, 3), np.arange(3, dtype=np.int8)
    _vs_jax(
        lambda a, b: xnp.dot(a, b, preferred_element_type=np.float32),
        lambda a, b: jnp.dot(a, b, preferred_element_type=np.float32),
        x,
        y,
        jit=True,
    )
    _vs_jax(
        lambda a: xnp.dot(a, 3, preferred_element_type=np.int32),
        lambda a: jnp.dot(a, 3, preferred_element_type=np.int32),
        x,
    )
    dims = (((1,), (0,)), ((), ()))
    _vs_jax(
        lambda a, b: lax.dot_general(a, b, dims, preferred_element_type=np.int32),
        lambda a, b: jlax.dot_general(a, b, dims, preferred_element_type=np.int32),
        x,
        y,
        jit=True,
    )
    xf, yf = _normal(2, 3).astype(np.float16), _normal(3, 4).astype(np.float16)

    def loss(mod, np_mod):
        return lambda a, b: np_mod.matmul(a, b, preferred_element_type=np.float32).sum()

    got = xform.grad(loss(lax, xnp), argnums=(0, 1))(xf, yf)
    expected = jax.jit(jax.grad(loss(jlax, jnp), argnums=(0, 1)))(xf, yf)
    assert_same(got, expected)
    tangent = xform.jvp(lambda a: lax.dot(a, yf, preferred_element_type=np.float32), (xf,), (xf,))
    expected = jax.jit(
        lambda p, t: jax.jvp(
            lambda a: jlax.dot(a, yf, preferred_element_type=np.float32), (p,), (t,)
        )
    )(xf, xf)
    assert_same(tangent, expected, rtol=1e-3, atol=1e-3)
    for mod in (xnp, jnp):
        with pytest.raises(TypeError, match="must not be narrower than the original type"):
            mod.dot(x.astype(np.int32), y.astype(np.int32), preferred_element_type=np.int8)


# --------------------------------------------------------------------------- einsum


EINSUM_OPERANDS = (_normal(3, 4), _normal(4, 5), _normal(5, 2))


@pytest.mark.parametrize(
    "optimize", ["auto", True, False, "greedy", "optimal", [(1, 2), (0, 1)]], ids=str
)
def test_einsum_optimize(optimize):
    _vs_jax(
        lambda *ops: xnp.einsum("ij,jk,kl->il", *ops, optimize=optimize),
        lambda *ops: jnp.einsum("ij,jk,kl->il", *ops, optimize=optimize),
        *EINSUM_OPERANDS,
        jit=optimize is True,
        **F32,
    )


def test_einsum_sublists_preferred_type_and_grad():
    a, b, c = EINSUM_OPERANDS
    _vs_jax(
        lambda p, q: xnp.einsum(p, [0, 1], q, [1, 2], [0, 2]),
        lambda p, q: jnp.einsum(p, [0, 1], q, [1, 2], [0, 2]),
        a,
        b,
        jit=True,
        **F32,
    )
    assert_same(xnp.einsum(a, [0, 1], b, [1, 2]), jnp.einsum(a, [0, 1], b, [1, 2]), **F32)
    assert_same(
        xnp.einsum(a, [Ellipsis, 1], b, [1, 2], [Ellipsis, 2]),
        jnp.einsum(a, [Ellipsis, 1], b, [1, 2], [Ellipsis, 2]),
        **F32,
    )
    d = _normal(3, 3, 4)
    for spec, ops in [
        ("iij,jk->ik", (d, b)),
        ("iij->j", (d,)),
        ("...j,jk->...k", (d, b)),
        ("bij,bjk->bik", (_normal(2, 3, 4), _normal(1, 4, 5))),
    ]:
        assert_same(xnp.einsum(spec, *ops), jnp.einsum(spec, *ops), **F32)
    u = np.full((3, 3), 200, np.uint8)
    for spec in ("ij,jk->ik", "ij->i", "ii->"):
        ops = (u, u) if "," in spec else (u,)
        assert_same(
            xnp.einsum(spec, *ops, preferred_element_type=np.int32),
            jnp.einsum(spec, *ops, preferred_element_type=np.int32),
        )
    got = xform.grad(lambda p: xnp.einsum("ij,jk,kl->il", p, b, c, optimize="greedy").sum())(a)
    expected = jax.jit(jax.grad(lambda p: jnp.einsum("ij,jk,kl->il", p, b, c).sum()))(a)
    assert_same(got, expected, **F32)


def test_einsum_path_matches_jax():
    ops = EINSUM_OPERANDS
    for optimize in ("optimal", "greedy", False, True):
        got = xnp.einsum_path("ij,jk,kl->il", *ops, optimize=optimize)
        expected = jnp.einsum_path("ij,jk,kl->il", *ops, optimize=optimize)
        assert got[0] == expected[0]
        assert str(got[1]) == str(expected[1])


def test_einsum_bad_input():
    a, b, _ = EINSUM_OPERANDS
    for mod, words in (
        (xnp, "einsum: index 'j' has incompatible sizes 4 and 3"),
        (jnp, "Size of label 'j'"),
    ):
        with pytest.raises(ValueError, match=words):
            mod.einsum("ij,jk->ik", a, a)
        with pytest.raises(NotImplementedError, match="3 or more"):
            mod.einsum("ij,jk,kl->il", *EINSUM_OPERANDS, optimize=[(0, 1, 2)])
    with pytest.raises(TypeError, match="einsum"):
        xnp.einsum("ij,jk->ik", a, "not an array")


@pytest.mark.parametrize(
    "subscripts, a_shape, b_shape",
    [
        ("ij,kj->ik", (4, 3), (5, 3)),
        ("ij,kj->ki", (4, 3), (5, 3)),
        ("bij,bkj->bik", (2, 4, 3), (2, 5, 3)),
        ("bij,bjk->bik", (2, 4, 3), (2, 3, 5)),
        ("ij,jk->ki", (4, 3), (3, 5)),
        ("ij,j->i", (4, 3), (3,)),
        ("j,ij->i", (3,), (4, 3)),
    ],
)
def test_einsum_jaxpr_as_jax(subscripts, a_shape, b_shape):
    # Each pair is contracted in the operand order that needs no transpose, where one does.
    a, b = np.ones(a_shape, np.float32), np.ones(b_shape, np.float32)
    got = xform.make_jaxpr(lambda a, b: xnp.einsum(subscripts, a, b))(a, b)
    want = jax.make_jaxpr(lambda a, b: jnp.einsum(subscripts, a, b))(a, b)
    assert str(got) == str(want)

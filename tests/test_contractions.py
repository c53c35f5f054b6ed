"""dot_general, dot and conv_general_dilated against jax.lax, eagerly and under jit."""

import re

import hypothesis.strategies as st
import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
from hypothesis import given

import xform
from tests.harness import assert_same, check_against_jax
from xform import lax

jlax = jax.lax
BF16 = np.dtype(ml_dtypes.bfloat16)


def _values(rng, shape, dtype):
    """Small integers (exact in every dtype, so sums are exact whatever the order), or
    normal floats where asked."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    lo = 0 if dtype.kind == "u" else -3
    x = rng.integers(lo, 4, size=shape)
    if dtype.kind == "c":
        return (x + 1j * rng.integers(-3, 4, size=shape)).astype(dtype)
    return x.astype(dtype)


def _op_line(text, op):
    """The line of ``op`` in a module's text, without the SSA result name."""
    line = next(ln for ln in text.splitlines() if f"stablehlo.{op}" in ln)
    return re.sub(r"^\s*%\S+ = ", "", line).strip()


# --------------------------------------------------------------------------- dot_general


@st.composite
def dot_problems(draw):
    """Shapes and dimension numbers with batch, contracting and free dims in random places."""
    nb, nc = draw(st.integers(0, 2)), draw(st.integers(0, 2))
    nlf, nrf = draw(st.integers(0, 2)), draw(st.integers(0, 2))
    size = st.integers(0, 3) if draw(st.booleans()) else st.integers(1, 3)
    bsz = [draw(size) for _ in range(nb)]
    csz = [draw(size) for _ in range(nc)]

    def operand(nfree):
        ndim = nb + nc + nfree
        perm = draw(st.permutations(range(ndim)))
        batch, contract = tuple(perm[:nb]), tuple(perm[nb : nb + nc])
        shape = [0] * ndim
        for d, s in zip(batch + contract, bsz + csz, strict=True):
            shape[d] = s
        for d in perm[nb + nc :]:
            shape[d] = draw(size)
        return tuple(shape), batch, contract

    ls, lb, lc = operand(nlf)
    rs, rb, rc = operand(nrf)
    return ls, rs, ((lc, rc), (lb, rb))


@given(dot_problems(), st.integers(0, 2**16))
def test_dot_general_random_dimension_numbers(problem, seed):
    ls, rs, dnums = problem
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(ls).astype(np.float32)
    y = rng.standard_normal(rs).astype(np.float32)
    # Summation order differs between NumPy/BLAS and XLA's kernel.
    check_against_jax(
        lambda a, b: lax.dot_general(a, b, dnums),
        lambda a, b: jlax.dot_general(a, b, dnums),
        x,
        y,
        rtol=1e-5,
        atol=1e-5,
    )


_DOT_DTYPES = [
    np.float32,
    np.float16,
    BF16,
    np.int32,
    np.int8,
    np.uint8,
    np.int16,
    np.bool_,
    np.complex64,
]


@pytest.mark.parametrize("dtype", _DOT_DTYPES, ids=lambda d: np.dtype(d).name)
def test_dot_general_dtypes(dtype):
    rng = np.random.default_rng(0)
    dnums = (((2, 0), (1, 3)), ((1,), (0,)))
    x, y = _values(rng, (3, 2, 4), dtype), _values(rng, (2, 4, 5, 3), dtype)
    check_against_jax(
        lambda a, b: lax.dot_general(a, b, dnums), lambda a, b: jlax.dot_general(a, b, dnums), x, y
    )


@pytest.mark.parametrize(
    "lhs_dtype,rhs_dtype",
    [
        (np.float32, np.int32),
        (np.int8, np.int32),
        (np.float16, np.float32),
        (np.uint8, np.int8),
        (np.float16, BF16),
        (np.bool_, np.float32),
        (np.int32, np.complex64),
    ],
    ids=lambda d: np.dtype(d).name,
)
def test_dot_general_mixed_dtypes(lhs_dtype, rhs_dtype):
    rng = np.random.default_rng(1)
    x, y = _values(rng, (2, 3), lhs_dtype), _values(rng, (3, 4), rhs_dtype)
    check_against_jax(lax.dot, jlax.dot, x, y)


@pytest.mark.parametrize(
    "dtype,preferred",
    [
        (np.int8, np.int32),
        (np.int8, np.float32),
        (np.uint8, np.int32),
        (BF16, np.float32),
        (np.float16, np.float32),
        (np.int32, np.float32),
        (np.float32, np.float32),
        (np.float32, np.float16),
    ],
    ids=lambda d: np.dtype(d).name,
)
def test_dot_general_preferred_element_type(dtype, preferred):
    rng = np.random.default_rng(2)
    x, y = _values(rng, (2, 5, 3), dtype), _values(rng, (2, 3, 4), dtype)
    dnums = (((2,), (1,)), ((0,), (0,)))
    check_against_jax(
        lambda a, b: lax.dot_general(a, b, dnums, preferred_element_type=preferred),
        lambda a, b: jlax.dot_general(a, b, dnums, preferred_element_type=preferred),
        x,
        y,
    )


def test_dot_general_int_wraps_like_xla():
    x = np.full((2, 40), 100, np.int8)
    check_against_jax(lax.dot, jlax.dot, x, x.T)


def test_dot_general_weak_types():
    check_against_jax(
        lambda a, b: lax.dot_general(a, b, (((), ()), ((), ()))),
        lambda a, b: jlax.dot_general(a, b, (((), ()), ((), ()))),
        2.0,
        3.0,
    )
    check_against_jax(
        lambda a, b: lax.dot_general(a, b, (((), ()), ((), ()))),
        lambda a, b: jlax.dot_general(a, b, (((), ()), ((), ()))),
        np.float32(2),
        3.0,
    )


def test_dot_general_negative_dims_and_lists():
    x, y = np.ones((5, 2, 3), np.float32), np.ones((5, 3, 4), np.float32)
    got = lax.dot_general(x, y, ([[-1], [1]], [[0], [-3]]))
    assert_same(got, jlax.dot_general(x, y, (((2,), (1,)), ((0,), (0,)))))


@pytest.mark.parametrize("ls,rs", [((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((2, 3), (3, 4))])
def test_dot(ls, rs):
    rng = np.random.default_rng(3)
    x, y = _values(rng, ls, np.float32), _values(rng, rs, np.float32)
    check_against_jax(lax.dot, jlax.dot, x, y)


def test_dot_precision_and_dimension_numbers():
    x, y = np.ones((5, 2, 3), np.float32), np.ones((5, 3, 4), np.float32)
    dn = (((2,), (1,)), ((0,), (0,)))
    check_against_jax(
        lambda a, b: lax.dot(a, b, precision="highest", dimension_numbers=dn),
        lambda a, b: jlax.dot(a, b, precision="highest", dimension_numbers=dn),
        x,
        y,
    )
    for prec, word in [
        (lax.Precision.HIGH, "HIGH, HIGH"),
        (jlax.Precision.HIGHEST, "HIGHEST, HIGHEST"),
        (("default", "highest"), "DEFAULT, HIGHEST"),
    ]:
        text = (
            xform.jit(lambda a, b, p=prec: lax.dot_general(a, b, dn, precision=p))
            .lower(x, y)
            .as_text()
        )
        assert f"precision = [{word}]" in text
    with pytest.raises(ValueError, match="precision must be None"):
        lax.dot(x[0], y[0], precision="fast")


def test_dot_general_jaxpr_and_lowering_match_jax():
    x, y = np.ones((5, 2, 3), np.float32), np.ones((5, 3, 4), np.float32)
    dn = (((2,), (1,)), ((0,), (0,)))
    text = str(xform.make_jaxpr(lambda a, b: lax.dot_general(a, b, dn))(x, y))
    # as JAX prints it: dimension numbers as lists, a None precision hidden
    assert "c:f32[5,2,4] = dot_general[dimension_numbers=(([2], [1]), ([0], [0]))] a b" in text
    for a, b, kw in [
        (x, y, {}),
        (x.astype(np.int8), y.astype(np.int8), {"preferred_element_type": np.float32}),
        (x, y.astype(np.int32), {}),
    ]:
        ours = xform.jit(lambda p, q, kw=kw: lax.dot_general(p, q, dn, **kw)).lower(a, b).as_text()
        theirs = jax.jit(lambda p, q, kw=kw: jlax.dot_general(p, q, dn, **kw)).lower(a, b).as_text()
        assert _op_line(ours, "dot_general") == _op_line(theirs, "dot_general")
        assert ours.count("stablehlo.convert") == theirs.count("stablehlo.convert")


def test_dot_general_errors():
    x, y = np.ones((2, 3), np.float32), np.ones((4, 5), np.float32)
    with pytest.raises(
        TypeError,
        match=r"lax.dot_general requires contracting dimensions to "
        r"have the same shape, got \(3,\) and \(4,\).*lhs shape "
        r"\(2, 3\), rhs shape \(4, 5\)",
    ):
        lax.dot_general(x, y, (((1,), (0,)), ((), ())))
    with pytest.raises(TypeError, match="contracting dimensions to have the same shape"):
        xform.jit(lambda a, b: lax.dot_general(a, b, (((1,), (0,)), ((), ()))))(x, y)
    with pytest.raises(
        TypeError,
        match=r"batch dimensions to have the same shape, got "
        r"\(2,\) and \(4,\)",
    ):
        lax.dot_general(x, y, (((), ()), ((0,), (0,))))
    with pytest.raises(TypeError, match="lhs dimension numbers to be nonnegative and less"):
        lax.dot_general(x, y, (((2,), (0,)), ((), ())))
    with pytest.raises(TypeError, match="rhs dimension numbers"):
        lax.dot_general(x, y, (((1,), (5,)), ((), ())))
    with pytest.raises(TypeError, match="lhs contracting dimensions to be distinct"):
        lax.dot_general(x, y, (((1, 1), (0, 1)), ((), ())))
    with pytest.raises(TypeError, match="lhs batch dimensions to be disjoint"):
        lax.dot_general(x, x, (((0,), (0,)), ((0,), (1,))))
    with pytest.raises(TypeError, match="equal numbers of lhs_batch and rhs_batch"):
        lax.dot_general(x, x, (((), ()), ((0,), ())))
    with pytest.raises(TypeError, match="equal numbers of lhs and rhs contracting"):
        lax.dot_general(x, x, (((0, 1), (0,)), ((), ())))
    with pytest.raises(TypeError, match="dimension_numbers must be"):
        lax.dot_general(x, x, ((1,), (0,)))
    with pytest.raises(TypeError, match="preferred_element_type` must not be narrower"):
        lax.dot(
            np.ones((2, 2), np.int32), np.ones((2, 2), np.int32), preferred_element_type=np.int8
        )
    with pytest.raises(
        ValueError,
        match=r"lax.dot: dimension_numbers must be specified.*"
        r"lhs_shape=\(2, 3, 4\)",
    ):
        lax.dot(np.ones((2, 3, 4)), np.ones((4,)))


# --------------------------------------------------------------------------- convolution

_SPECS = {
    1: [None, ("NCW", "OIW", "NCW"), ("NWC", "WIO", "NWC"), ("WCN", "IWO", "CNW")],
    2: [None, ("NHWC", "HWIO", "NHWC"), ("NCHW", "OIHW", "NHWC"), ("HNWC", "WOHI", "CWHN")],
    3: [None, ("NDHWC", "DHWIO", "NDHWC"), ("NCDHW", "OIDHW", "NCDHW")],
}


def _layout(canonical_shape, spec, chars):
    """A shape given as (N/O, C/I, spatial sizes in D, H, W order) laid out as ``spec``."""
    if spec is None:
        return canonical_shape
    spatial = [c for c in spec if c not in chars]
    order = chars + "".join(sorted(spatial, key=_SPATIAL_ORDER.index))
    return tuple(canonical_shape[order.index(c)] for c in spec)


_SPATIAL_ORDER = "DHW"


@st.composite
def conv_problems(draw):
    n = draw(st.integers(1, 3))
    spec = draw(st.sampled_from(_SPECS[n]))
    groups = draw(st.sampled_from(["none", "feature", "batch"]))
    g = draw(st.integers(2, 3)) if groups != "none" else 1
    fg, bg = (g, 1) if groups == "feature" else (1, g) if groups == "batch" else (1, 1)
    batch = bg * draw(st.integers(1, 2))
    cin = draw(st.integers(1, 2))
    cout = g * draw(st.integers(1, 2))
    small = 3 if n == 3 else 5
    spatial = [draw(st.integers(1, small + 2)) for _ in range(n)]
    window = [draw(st.integers(1, 3)) for _ in range(n)]
    strides = tuple(draw(st.integers(1, 3)) for _ in range(n))
    rhs_dil = tuple(draw(st.integers(1, 2)) for _ in range(n))
    kind = draw(st.sampled_from(["VALID", "SAME", "SAME_LOWER", "explicit"]))
    if kind == "explicit":
        padding = [(draw(st.integers(-1, 2)), draw(st.integers(-1, 2))) for _ in range(n)]
        lhs_dil = tuple(draw(st.integers(1, 2)) for _ in range(n))
    else:
        padding, lhs_dil = kind, None
    lhs_shape = _layout((batch, cin * fg, *spatial), spec and spec[0], "NC")
    rhs_shape = _layout((cout, cin, *window), spec and spec[1], "OI")
    kwargs = dict(
        window_strides=strides,
        padding=padding,
        lhs_dilation=lhs_dil,
        rhs_dilation=rhs_dil,
        dimension_numbers=spec,
        feature_group_count=fg,
        batch_group_count=bg,
    )
    return lhs_shape, rhs_shape, kwargs


def _conv_ok(lhs_shape, rhs_shape, kwargs):
    try:
        jax.eval_shape(
            lambda a, b: jlax.conv_general_dilated(a, b, **kwargs),
            jax.ShapeDtypeStruct(lhs_shape, jnp.float32),
            jax.ShapeDtypeStruct(rhs_shape, jnp.float32),
        )
    except (TypeError, ValueError):
        return False
    return True


@given(conv_problems(), st.integers(0, 2**16))
def test_conv_general_dilated_random(problem, seed):
    lhs_shape, rhs_shape, kwargs = problem
    if not _conv_ok(lhs_shape, rhs_shape, kwargs):
        # JAX rejects the combination (negative padding past the input): so must we.
        with pytest.raises((TypeError, ValueError)):
            lax.conv_general_dilated(
                np.ones(lhs_shape, np.float32), np.ones(rhs_shape, np.float32), **kwargs
            )
        return
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(lhs_shape).astype(np.float32)
    w = rng.standard_normal(rhs_shape).astype(np.float32)
    # Summation order differs between NumPy's einsum and XLA's kernel.
    check_against_jax(
        lambda a, b: lax.conv_general_dilated(a, b, **kwargs),
        lambda a, b: jlax.conv_general_dilated(a, b, **kwargs),
        x,
        w,
        rtol=1e-5,
        atol=1e-5,
    )


_CONV_CASES = {
    "1d_stride_same": ((2, 3, 9), (4, 3, 3), dict(window_strides=(2,), padding="SAME")),
    "2d_dilated_nhwc": (
        (2, 7, 6, 3),
        (3, 2, 3, 4),
        dict(
            window_strides=(1, 2),
            padding=[(1, 0), (2, 1)],
            lhs_dilation=(2, 1),
            rhs_dilation=(1, 2),
            dimension_numbers=("NHWC", "HWIO", "NHWC"),
        ),
    ),
    "2d_feature_groups": (
        (1, 4, 5, 5),
        (6, 2, 2, 2),
        dict(window_strides=(1, 1), padding="VALID", feature_group_count=2),
    ),
    "3d_batch_groups": (
        (4, 2, 3, 4, 3),
        (6, 2, 2, 1, 2),
        dict(window_strides=(1, 2, 1), padding="SAME", batch_group_count=2),
    ),
}


_CONV_DTYPES = [np.float32, np.float16, BF16, np.int32, np.int8, np.uint8, np.bool_, np.complex64]


@pytest.mark.parametrize("dtype", _CONV_DTYPES, ids=lambda d: np.dtype(d).name)
def test_conv_dtypes(dtype):
    # Each dtype on one of the cases, in turn: every case meets several dtypes, and the
    # layouts themselves are covered by the random test.
    case = sorted(_CONV_CASES)[_CONV_DTYPES.index(dtype) % len(_CONV_CASES)]
    ls, rs, kwargs = _CONV_CASES[case]
    rng = np.random.default_rng(4)
    x, w = _values(rng, ls, dtype), _values(rng, rs, dtype)
    check_against_jax(
        lambda a, b: lax.conv_general_dilated(a, b, **kwargs),
        lambda a, b: jlax.conv_general_dilated(a, b, **kwargs),
        x,
        w,
    )


@pytest.mark.parametrize(
    "dtype,preferred",
    [(np.int8, np.int32), (np.int8, np.float32), (BF16, np.float32), (np.float16, np.float32)],
    ids=lambda d: np.dtype(d).name,
)
def test_conv_preferred_element_type(dtype, preferred):
    ls, rs, kwargs = _CONV_CASES["2d_feature_groups"]
    rng = np.random.default_rng(5)
    x, w = _values(rng, ls, dtype), _values(rng, rs, dtype)
    check_against_jax(
        lambda a, b: lax.conv_general_dilated(a, b, preferred_element_type=preferred, **kwargs),
        lambda a, b: jlax.conv_general_dilated(a, b, preferred_element_type=preferred, **kwargs),
        x,
        w,
    )


def test_conv_wrappers():
    rng = np.random.default_rng(6)
    x, w = _values(rng, (2, 3, 6, 5), np.float32), _values(rng, (4, 3, 3, 2), np.float32)
    check_against_jax(
        lambda a, b: lax.conv(a, b, (1, 2), "SAME"),
        lambda a, b: jlax.conv(a, b, (1, 2), "SAME"),
        x,
        w,
    )
    check_against_jax(
        lambda a, b: lax.conv_with_general_padding(a, b, (2, 1), [(1, 1), (0, 2)], (1, 2), (2, 1)),
        lambda a, b: jlax.conv_with_general_padding(a, b, (2, 1), [(1, 1), (0, 2)], (1, 2), (2, 1)),
        x,
        w,
    )


def test_conv_dimension_numbers_helper():
    for spec in [("NCHW", "OIHW", "NCHW"), ("NHWC", "HWIO", "NHWC"), ("HNWC", "WOHI", "CWHN")]:
        ours = lax.conv_dimension_numbers((1,) * 4, (1,) * 4, spec)
        theirs = jlax.conv_dimension_numbers((1,) * 4, (1,) * 4, spec)
        assert isinstance(ours, lax.ConvDimensionNumbers)
        assert tuple(ours) == tuple(theirs)
    assert tuple(lax.conv_dimension_numbers((1,) * 3, (1,) * 3, None)) == ((0, 1, 2),) * 3
    dn = lax.ConvDimensionNumbers((0, 2, 1), (2, 1, 0), (0, 2, 1))
    assert lax.conv_dimension_numbers((1,) * 3, (1,) * 3, dn) == dn
    for padding in ["SAME", "SAME_LOWER", "VALID"]:
        assert lax.padtype_to_pads((7, 6), (3, 4), (2, 3), padding) == jlax.padtype_to_pads(
            (7, 6), (3, 4), (2, 3), padding
        )


def test_conv_jaxpr_and_lowering_match_jax():
    ls, rs, kwargs = _CONV_CASES["2d_dilated_nhwc"]
    x, w = np.ones(ls, np.float32), np.ones(rs, np.float32)
    text = str(xform.make_jaxpr(lambda a, b: lax.conv_general_dilated(a, b, **kwargs))(x, w))
    assert "conv_general_dilated[\n      batch_group_count=1\n" in text  # one param a line
    assert (
        "dimension_numbers=ConvDimensionNumbers(lhs_spec=(0, 3, 1, 2), "
        "rhs_spec=(3, 2, 0, 1), out_spec=(0, 3, 1, 2))\n"
    ) in text
    for case in sorted(_CONV_CASES):
        ls, rs, kwargs = _CONV_CASES[case]
        x, w = np.ones(ls, np.float32), np.ones(rs, np.float32)
        ours = (
            xform.jit(lambda a, b, k=kwargs: lax.conv_general_dilated(a, b, **k))
            .lower(x, w)
            .as_text()
        )
        theirs = (
            jax.jit(lambda a, b, k=kwargs: jlax.conv_general_dilated(a, b, **k))
            .lower(x, w)
            .as_text()
        )
        assert _op_line(ours, "convolution") == _op_line(theirs, "convolution")


def test_conv_errors():
    x, w = np.ones((2, 4, 5), np.float32), np.ones((3, 2, 2), np.float32)
    conv = lax.conv_general_dilated
    with pytest.raises(
        ValueError,
        match=r"lax.conv_general_dilated: the lhs feature dimension "
        r"size divided by feature_group_count must equal.*"
        r"4 // 1 != 2",
    ):
        conv(x, w, (1,), "VALID")
    with pytest.raises(ValueError, match="feature_group_count must divide"):
        conv(x, w, (1,), "VALID", feature_group_count=3)
    with pytest.raises(ValueError, match="multiple of feature_group_count"):
        conv(x, w, (1,), "VALID", feature_group_count=2)
    with pytest.raises(ValueError, match="batch_group_count must divide"):
        conv(np.ones((3, 2, 5)), np.ones((4, 2, 2)), (1,), "VALID", batch_group_count=2)
    with pytest.raises(ValueError, match="at most one of batch_group_count"):
        conv(
            np.ones((2, 4, 5)),
            np.ones((4, 2, 2)),
            (1,),
            "VALID",
            batch_group_count=2,
            feature_group_count=2,
        )
    with pytest.raises(
        TypeError,
        match=r"requires arguments to have the same dtypes, got "
        r"float32, int32",
    ):
        conv(x, np.ones((3, 4, 2), np.int32), (1,), "VALID")
    with pytest.raises(ValueError, match="string padding is not implemented for transposed"):
        conv(x, np.ones((3, 4, 2)), (1,), "SAME", lhs_dilation=(2,))
    with pytest.raises(
        ValueError,
        match=r"window_strides must have one entry per spatial "
        r"dimension \(1\)",
    ):
        conv(x, np.ones((3, 4, 2)), (1, 1), "VALID")
    with pytest.raises(ValueError, match="negative padding"):
        conv(x, np.ones((3, 4, 2)), (1,), [(-4, -3)])
    with pytest.raises(ValueError, match="padding should be a string or a sequence"):
        conv(x, np.ones((3, 4, 2)), (1,), [1, 2])
    with pytest.raises(RuntimeError, match="Unrecognized padding type"):
        conv(x, np.ones((3, 4, 2)), (1,), "FULL")
    with pytest.raises(
        TypeError,
        match=r"dimension_numbers\[1\] must contain the characters "
        r"'O' and 'I'",
    ):
        conv(x, np.ones((3, 4, 2)), (1,), "VALID", dimension_numbers=("NCW", "OOW", "NCW"))
    with pytest.raises(TypeError, match="same set of spatial characters"):
        conv(x, np.ones((3, 4, 2)), (1,), "VALID", dimension_numbers=("NCW", "OIH", "NCW"))
    with pytest.raises(TypeError, match="lhs and rhs ndim to be equal"):
        conv(x, np.ones((3, 4, 2, 2)), (1,), "VALID")
    with pytest.raises(TypeError, match="preferred_element_type float16 must not be narrower"):
        conv(x, np.ones((3, 4, 2), np.float32), (1,), "VALID", preferred_element_type=np.float16)
    with pytest.raises(TypeError, match="same signedness"):
        conv(
            x.astype(np.int8),
            np.ones((3, 4, 2), np.int8),
            (1,),
            "VALID",
            preferred_element_type=np.uint16,
        )

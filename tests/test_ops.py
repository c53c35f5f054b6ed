"""xform.ops against jax.ops: segment_sum/prod/max/min values, dtypes and weak types (eager and
under jit), out-of-range ids, empty segments, modes and buckets, num_segments errors, grad
(ties included) and vmap."""

import inspect

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import xform
import xform.numpy as xnp
import xform.ops
from tests.harness import assert_same, x64_for
from xform import ops
from xform.test_util import check_grads

NAMES = ["segment_sum", "segment_prod", "segment_max", "segment_min"]
PAIRS = {name: (getattr(ops, name), getattr(jax.ops, name)) for name in NAMES}

# The id layouts every op is checked on, all with NUM segments (one compiled function per
# dtype serves them all under jit).
NUM = 4
IDS = {
    "sorted": np.array([0, 0, 1, 2, 3, 3], np.int32),
    "unsorted": np.array([2, 0, 1, 0, 3, 1], np.int32),  # segment 3 holds one entry
    "out_of_range": np.array([0, 5, -1, 1, 3, -7], np.int32),  # dropped, not wrapped
    "empty_segments": np.array([3, 0, 3, 0, 0, 3], np.int32),  # 1 and 2 are empty
}
DEFAULT_NUM_IDS = np.array([1, 0, 3, 1, 0, 3], np.int32)  # num_segments=None: 4; 2 is empty


def _data(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    if dtype == np.bool_:
        return rng.integers(0, 2, shape).astype(bool)
    if np.issubdtype(dtype, np.integer):
        return rng.integers(-4, 5, shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def _same_error(fn_xf, fn_jax, error):
    """Both raise ``error`` (xform's may be a subclass of JAX's class of the same name)."""
    with pytest.raises(error):
        fn_jax()
    with pytest.raises(error):
        fn_xf()


def test_every_public_name_of_jax_ops():
    public = [n for n in dir(jax.ops) if not n.startswith("_")]
    assert public, "jax.ops has no public names?"
    for name in public:
        assert hasattr(ops, name), f"xform.ops lacks jax.ops.{name}"
        got = list(inspect.signature(getattr(ops, name)).parameters)
        expected = list(inspect.signature(getattr(jax.ops, name)).parameters)
        assert got == expected, f"{name}: parameters {got} != JAX's {expected}"
    assert xform.ops is ops and sorted(ops.__all__) == sorted(public)


@pytest.mark.parametrize("name", NAMES)
def test_values(name):
    xf, jx = PAIRS[name]
    if name in ("segment_sum", "segment_prod"):  # JAX: TypeError for bool data
        ids = IDS["sorted"]
        _same_error(
            lambda: xf(np.ones(6, bool), ids, NUM),
            lambda: jx(np.ones(6, bool), ids, NUM),
            TypeError,
        )
    dts = [np.float32, np.int32, np.float64] + (
        [np.bool_] if name in ("segment_max", "segment_min") else []
    )
    for dtype in dts:
        with x64_for(dtype):
            # Data without and with rows, (6, 3, 2); the ids are arguments under jit.
            for k, shape in enumerate([(6,), (6, 3, 2)]):
                data = _data(shape, dtype, seed=k)
                jax_fn = jax.jit(lambda d, i: jx(d, i, NUM))
                xf_fn = xform.jit(lambda d, i: xf(d, i, NUM))
                for layout, ids in IDS.items():
                    expected = jax_fn(data, ids)
                    what = f"{np.dtype(dtype)}, {shape}, {layout}"
                    assert_same(xf(data, ids, NUM), expected, 1e-6, 1e-6, what=what)
                    assert_same(xf_fn(data, ids), expected, 1e-6, 1e-6, what=f"{what}, jit")
            # num_segments=None: max(segment_ids) + 1 (eager only; see
            # test_num_segments_errors); the operands as xform arrays.
            data = _data((6,), dtype)
            assert_same(
                xf(xnp.asarray(data), xnp.asarray(DEFAULT_NUM_IDS)),
                jx(data, DEFAULT_NUM_IDS),
                1e-6,
                1e-6,
                what=f"{np.dtype(dtype)}, None",
            )


@pytest.mark.parametrize("name", NAMES)
def test_identities_of_empty_segments(name):
    """Empty segments hold the identity in every dtype: 0, 1, -inf/min, +inf/max."""
    xf, jx = PAIRS[name]
    dts = [np.float32, np.int32, np.int8, np.uint8, np.float16] + (
        [np.bool_] if name in ("segment_max", "segment_min") else []
    )
    datas = [_data((2,), dtype) for dtype in dts]
    ids, none = np.array([0, 0], np.int32), np.zeros(0, np.int32)

    def cases(f):  # segments 1 and 2 empty; then no entries at all
        return lambda ds: [f(d, ids, 3) for d in ds] + [f(d[:0], none, 2) for d in ds]

    assert_same(cases(xf)(datas), jax.jit(cases(jx))(datas))


MODES = [
    "clip",
    "drop",
    "fill",
    "promise_in_bounds",
    jax.lax.GatherScatterMode.CLIP,
    xform.lax.GatherScatterMode.FILL_OR_DROP,
]


@pytest.mark.parametrize("name", NAMES)
def test_modes(name):
    xf, jx = PAIRS[name]
    ids, n = IDS["out_of_range"], NUM
    in_range = np.clip(ids, 0, n - 1)  # with promise_in_bounds, out-of-range is unspecified

    def all_modes(f, jax_modes):
        def run(d):
            out = []
            for mode in MODES:
                if jax_modes and isinstance(mode, xform.lax.GatherScatterMode):
                    mode = jax.lax.GatherScatterMode[mode.name]  # noqa: PLW2901
                i = in_range if mode == "promise_in_bounds" else ids
                out.append(f(d, i, n, mode=mode))
            return out

        return run

    data = _data(ids.shape, np.float32)
    expected = jax.jit(all_modes(jx, True))(data)
    assert_same(all_modes(xf, False)(data), expected, what="eager")
    assert_same(xform.jit(all_modes(xf, False))(data), expected, what="jit")


@pytest.mark.parametrize("name", NAMES)
def test_bucket_size(name):
    xf, jx = PAIRS[name]
    ids = np.array([0, 2, 1, 0, 2, 9, 1], np.int32)
    dts = [np.float32, np.int8] + ([np.bool_] if name in ("segment_max", "segment_min") else [])
    datas = [_data((7, 2), dtype) for dtype in dts]

    def buckets(f):  # every bucket size for float32; 3 for the other dtypes
        return lambda ds: (
            [f(d, ids, 4, bucket_size=b) for d in ds[:1] for b in (1, 10)]
            + [f(d, ids, 4, bucket_size=3) for d in ds]
        )

    expected = jax.jit(buckets(jx))(datas)
    assert_same(buckets(xf)(datas), expected, 1e-6, 1e-6, what="eager")
    assert_same(xform.jit(buckets(xf))(datas), expected, 1e-6, 1e-6, what="jit")


def test_flags_and_weak_types():
    ids = np.array([0, 1, 1, 2], np.int32)
    data = np.arange(4.0, dtype=np.float32)

    def cases(f, np_):
        return lambda d: [
            f(d, ids, 3, indices_are_sorted=True),
            f(d, np.array([3, 0, 1, 2]), 4, unique_indices=True),
            # A weakly typed operand (a Python scalar, broadcast to every entry) gives a
            # strongly typed result, as in JAX.
            f(2.0, ids, 3),
            f(np_.asarray(2), ids, 3),
            # Unsigned ids.
            f(d, ids.astype(np.uint8), 3),
        ]

    for name, (xf, jx) in PAIRS.items():
        expected = jax.jit(cases(jx, jnp))(data)
        assert_same(cases(xf, xnp)(data), expected, what=name)
        assert_same(xform.jit(cases(xf, xnp))(data), expected, what=f"{name}, jit")
    with x64_for(np.float64):  # 64-bit ids
        xf, jx = PAIRS["segment_sum"]
        assert_same(xf(data, ids.astype(np.int64), 3), jx(data, ids.astype(np.int64), 3))


def test_num_segments_errors():
    xf, jx = PAIRS["segment_sum"]
    data, ids = np.arange(4.0, dtype=np.float32), np.array([0, 1, 1, 2], np.int32)
    # Traced ids and no num_segments: the result's length is unknown when tracing.
    _same_error(
        lambda: xform.jit(xf)(data, ids),
        lambda: jax.jit(jx)(data, ids),
        jax.errors.ConcretizationTypeError,
    )
    with pytest.raises(xform.errors.ConcretizationTypeError, match="num_segments"):
        xform.jit(xf)(data, ids)
    # A traced num_segments.
    _same_error(
        lambda: xform.jit(lambda k: xf(data, ids, k))(3),
        lambda: jax.jit(lambda k: jx(data, ids, k))(3),
        jax.errors.ConcretizationTypeError,
    )
    with pytest.raises(xform.errors.ConcretizationTypeError, match="static_argnums"):
        xform.jit(xf)(data, ids, 3)
    # Under vmap of the ids, too.
    _same_error(
        lambda: xform.vmap(lambda i: xf(data, i))(np.stack([ids, ids])),
        lambda: jax.vmap(lambda i: jx(data, i))(np.stack([ids, ids])),
        jax.errors.ConcretizationTypeError,
    )
    # Concrete arrays and NumPy ints are fine; negative, float or empty-default are not.
    assert_same(xf(data, ids, xnp.asarray(3)), jx(data, ids, jnp.asarray(3)))
    assert_same(xf(data, ids, np.int64(3)), jx(data, ids, np.int64(3)))
    _same_error(lambda: xf(data, ids, -1), lambda: jx(data, ids, -1), ValueError)
    with pytest.raises(ValueError, match="segment_sum: num_segments must be non-negative"):
        xf(data, ids, -1)
    _same_error(lambda: xf(data, ids, 3.0), lambda: jx(data, ids, 3.0), TypeError)
    _same_error(lambda: xf(data[:0], ids[:0]), lambda: jx(data[:0], ids[:0]), ValueError)
    assert_same(xf(data, ids, 0), jx(data, ids, 0))


def test_argument_errors():
    xf, jx = PAIRS["segment_max"]
    data, ids = np.arange(4.0, dtype=np.float32), np.array([0, 1, 1, 2], np.int32)
    _same_error(lambda: xf(list(data), ids, 3), lambda: jx(list(data), ids, 3), TypeError)
    _same_error(lambda: xf(data, list(ids), 3), lambda: jx(data, list(ids), 3), TypeError)
    _same_error(
        lambda: xf(data, ids.astype(np.float32), 3),
        lambda: jx(data, ids.astype(np.float32), 3),
        TypeError,
    )
    with pytest.raises(TypeError, match="segment_max: segment_ids must have an integer dtype"):
        xf(data, ids.astype(np.float32), 3)
    _same_error(lambda: xf(data[:3], ids, 3), lambda: jx(data[:3], ids, 3), ValueError)
    with pytest.raises(ValueError, match=r"segment_max: data of shape \(3,\) does not match"):
        xf(data[:3], ids, 3)
    _same_error(
        lambda: xf(data, ids, 3, mode="wrap"), lambda: jx(data, ids, 3, mode="wrap"), ValueError
    )
    with pytest.raises(ValueError, match="bucket_size must be a positive integer"):
        xf(data, ids, 3, bucket_size=0)
    with pytest.raises(NotImplementedError, match="out_sharding"):
        xf(data, ids, 3, out_sharding=object())


# Data with ties within segments (max/min split the cotangent among tied entries, as JAX),
# a repeated id, an out-of-range id and an empty segment.
GRAD_IDS = np.array([0, 0, 0, 1, 1, 3, 5, 2], np.int32)
GRAD_DATA = np.array([1.0, 3.0, 3.0, -2.0, -2.0, 0.5, 7.0, 1.5], np.float32)
GRAD_W = np.array([1.0, -2.0, 0.5, 3.0, 0.25], np.float32)


@pytest.mark.parametrize("name", NAMES)
def test_grad(name):
    xf, jx = PAIRS[name]

    def loss(f, np_, ids=GRAD_IDS, **kw):
        return lambda x: np_.sum(GRAD_W * f(x, ids, 5, **kw))

    if name == "segment_prod":  # scatter_mul differentiates only with unique_indices=True
        _same_error(
            lambda: xform.grad(loss(xf, xnp))(GRAD_DATA),
            lambda: jax.grad(loss(jx, jnp))(GRAD_DATA),
            NotImplementedError,
        )
        unique = np.array([4, 0, 2, 1, 7, 3, -1, 9], np.int32)
        expected = jax.jit(jax.grad(loss(jx, jnp, unique, unique_indices=True)))(GRAD_DATA)
        got = xform.grad(loss(xf, xnp, unique, unique_indices=True))(GRAD_DATA)
        assert_same(got, expected, what="grad, unique ids")
        return
    for bucket_size in (None, 3):
        expected = jax.jit(jax.grad(loss(jx, jnp, bucket_size=bucket_size)))(GRAD_DATA)
        got = xform.grad(loss(xf, xnp, bucket_size=bucket_size))(GRAD_DATA)
        assert_same(got, expected, what=f"grad, bucket_size={bucket_size}")
    assert_same(xform.jit(xform.grad(loss(xf, xnp)))(GRAD_DATA), expected, what="jit(grad)")
    # Multi-dimensional data, sorted ids.
    data = _data((6, 2), np.float32, seed=3)
    ids = IDS["sorted"]
    w = _data((NUM, 2), np.float32, seed=4)
    exp = jax.jit(jax.grad(lambda x: jnp.sum(w * jx(x, ids, NUM, indices_are_sorted=True))))(data)
    got = xform.grad(lambda x: xnp.sum(w * xf(x, ids, NUM, indices_are_sorted=True)))(data)
    assert_same(got, exp, 1e-6, 1e-6, what="grad, rows")
    # Away from ties, against finite differences to order 2.
    check_grads(
        lambda x: xf(x, ids, NUM), (data,), order=2, modes=("fwd", "rev"), atol=1e-2, rtol=1e-2
    )


@pytest.mark.parametrize("name", NAMES)
def test_vmap(name):
    xf, jx = PAIRS[name]
    data = _data((3, 6, 2), np.float32, seed=5)
    ids = np.array([[0, 0, 1, 2, 2, 2], [2, 0, 4, 0, 2, 1], [1, 1, 1, 1, 1, -1]], np.int32)

    def batched(f, vmap):
        # Batched data with one set of ids; batched ids with the data shared; both batched;
        # both batched along other axes.
        return lambda d, i, d_t: [
            vmap(lambda a: f(a, ids[1], 3))(d),
            vmap(lambda j: f(data[0], j, 3))(i),
            vmap(lambda a, j: f(a, j, 4))(d, i),
            vmap(lambda a, j: f(a, j, 4), (1, 0), 1)(d_t, i),
        ]

    args = (data, ids, np.swapaxes(data, 0, 1))
    expected = jax.jit(batched(jx, jax.vmap))(*args)
    assert_same(batched(xf, xform.vmap)(*args), expected, 1e-6, 1e-6, what="vmap")
    assert_same(xform.jit(batched(xf, xform.vmap))(*args), expected, 1e-6, 1e-6, what="jit(vmap)")
    loop = np.stack([np.asarray(xf(data[k], ids[k], 4)) for k in range(3)])
    assert_same(loop, np.asarray(expected[2]), 1e-6, 1e-6, what="loop")
    if name == "segment_prod":  # not differentiable with repeated ids (test_grad)
        return
    # grad of vmap, vmap of grad.
    w = _data((4, 2), np.float32, seed=6)

    def grads(f, np_, grad, vmap):
        return lambda d: [
            grad(lambda d: np_.sum(w * vmap(lambda a, j: f(a, j, 4))(d, ids)))(d),
            vmap(grad(lambda a: np_.sum(w * f(a, ids[0], 4))))(d),
        ]

    expected = jax.jit(grads(jx, jnp, jax.grad, jax.vmap))(data)
    got = grads(xf, xnp, xform.grad, xform.vmap)(data)
    assert_same(got, expected, 1e-6, 1e-6, what="grad(vmap), vmap(grad)")

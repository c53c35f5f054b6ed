"""More samplers, each JAX's algorithm op for op so the values equal ``jax.random``'s for
the same key: transforms of uniform/normal/gamma draws (cauchy, pareto, t, chisquare, f,
lognormal, maxwell, rayleigh, wald, weibull_min, triangular, generalized_normal, ball, ...)
and the discrete samplers built on ``while_loop`` over split keys (poisson: Knuth's
product of uniforms for ``lam < 10``, Hörmann's transformed rejection above; binomial:
geometric-sum inversion for ``n * p <= 10``, BTRS above; multinomial: a ``scan`` of
conditional binomials).

Each public function checks its arguments, then calls one jitted body (static shape and
dtype), as in ``_distributions``.
"""

import functools

import numpy as np

from xform import dtypes, lax
from xform import numpy as xnp
from xform.api.jit import jit
from xform.random._distributions import (
    _bernoulli,
    _exponential,
    _gamma_impl,
    _normal,
    _param_shape,
    _uniform,
    takes_out_sharding,
)
from xform.random._keys import (
    THREEFRY,
    canonical_dtype,
    canonical_shape,
    check_key,
)
from xform.random._keys import split_key as _split

_MAX_ITERS = np.int32(np.iinfo(np.int32).max)


def _float_sampler_args(name, key, dtype, kinds="float"):
    return check_key(name, key), canonical_dtype(name, dtype, float, kinds)


def _convert(x, dtype):
    return lax.convert_element_type(x, dtype)


def _isnan(x):
    return lax.ne(x, x)  # as JAX: a comparison, not an is_finite test


def _uniform01(key, shape, dtype):
    return _uniform(key, 0.0, 1.0, shape, dtype)


# --------------------------------------------------------------------------- transforms


@takes_out_sharding
def cauchy(key, shape=(), dtype=None):
    """Standard Cauchy values, ``tan(pi * (u - 1/2))``, as ``jax.random.cauchy``."""
    key, dt = _float_sampler_args("cauchy", key, dtype)
    return _cauchy(key, shape=canonical_shape("cauchy", shape), dtype=dt)


@functools.partial(jit, static_argnames=("shape", "dtype"))
def _cauchy(key, shape, dtype):
    u = _uniform(key, dtypes.finfo(dtype).eps, 1.0, shape, dtype)
    return lax.tan(lax.mul(np.array(np.pi, dtype), lax.sub(u, np.array(0.5, dtype))))


@takes_out_sharding
def pareto(key, b, shape=None, dtype=None):
    """Pareto(b) values on ``[1, inf)``, ``exp(e / b)`` for ``e`` exponential."""
    key, dt = _float_sampler_args("pareto", key, dtype)
    return _pareto(key, b, shape=_param_shape("pareto", shape, b), dtype=dt)


@functools.partial(jit, static_argnames=("shape", "dtype"))
def _pareto(key, b, shape, dtype):
    return lax.exp(_exponential(key, shape, dtype) / _convert(b, dtype))


def _chisquare_body(key, df, shape, dtype):
    half_df = lax.div(_convert(df, dtype), np.array(2, dtype))
    return lax.mul(xnp.exp(_gamma_impl(key, half_df, shape, dtype, True)), np.array(2, dtype))


@takes_out_sharding
def chisquare(key, df, shape=None, dtype=None):
    """Chi-square(df) values, ``2 * exp(loggamma(df / 2))``."""
    key, dt = _float_sampler_args("chisquare", key, dtype)
    return _chisquare(key, df, shape=_param_shape("chisquare", shape, df), dtype=dt)


_chisquare = jit(_chisquare_body, static_argnames=("shape", "dtype"))


@takes_out_sharding
def f(key, dfnum, dfden, shape=None, dtype=None):
    """F(dfnum, dfden) values: the ratio of two scaled chi-square draws."""
    key, dt = _float_sampler_args("f", key, dtype)
    return _f(key, dfnum, dfden, shape=_param_shape("f", shape, dfnum, dfden), dtype=dt)


@functools.partial(jit, static_argnames=("shape", "dtype"))
def _f(key, dfnum, dfden, shape, dtype):
    dfden, dfnum = _convert(dfden, dtype), _convert(dfnum, dtype)
    keys = _split(key, (2,))
    chi2_num = _chisquare_body(keys[1], dfnum, shape, dtype)
    chi2_den = _chisquare_body(keys[0], dfden, shape, dtype)
    return lax.div(lax.div(chi2_num, dfnum), lax.div(chi2_den, dfden))


@takes_out_sharding
def t(key, df, shape=None, dtype=None):
    """Student's t(df) values, ``n * sqrt(df / 2 / g)`` for ``n`` normal and ``g``
    Gamma(df / 2)."""
    key, dt = _float_sampler_args("t", key, dtype)
    return _t(key, df, shape=_param_shape("t", shape, df), dtype=dt)


@functools.partial(jit, static_argnames=("shape", "dtype"))
def _t(key, df, shape, dtype):
    df = _convert(df, dtype)
    keys = _split(key, (2,))
    n = _normal(keys[0], shape, dtype)
    half_df = lax.div(df, np.array(2, dtype))
    g = _gamma_impl(keys[1], half_df, shape, dtype, False)
    return n * xnp.sqrt(half_df / g)


@takes_out_sharding
def lognormal(key, sigma=1.0, shape=None, dtype=None):
    """Log-normal values, ``exp(sigma * n)`` for ``n`` standard normal."""
    key, dt = _float_sampler_args("lognormal", key, dtype, "inexact")
    return _lognormal(key, sigma, shape=_param_shape("lognormal", shape, sigma), dtype=dt)


@functools.partial(jit, static_argnames=("shape", "dtype"))
def _lognormal(key, sigma, shape, dtype):
    return lax.exp(_normal(key, shape, dtype) * _convert(sigma, dtype))


def _rademacher_body(key, shape, dtype, float_dtype):
    signs = _bernoulli(key, np.array(0.5, float_dtype), shape=shape, mode="low").astype(dtype)
    return (2 * signs - 1).astype(dtype)


@takes_out_sharding
def rademacher(key, shape=(), dtype=None):
    """Values -1 or +1 with equal probability (default int dtype), as
    ``jax.random.rademacher``."""
    key = check_key("rademacher", key)
    dt = dtypes.canonicalize(int if dtype is None else dtype)
    return _rademacher(
        key,
        shape=canonical_shape("rademacher", shape),
        dtype=dt,
        float_dtype=dtypes.default_float(),
    )


_rademacher = jit(_rademacher_body, static_argnames=("shape", "dtype", "float_dtype"))


def _maxwell_body(key, shape, dtype):
    x = _normal(key, (*shape, 3), dtype)
    return xnp.sqrt(xnp.sum(x * x, axis=-1))


@takes_out_sharding
def maxwell(key, shape=(), dtype=None):
    """One-sided Maxwell values: the norm of a 3-vector of standard normals."""
    key, dt = _float_sampler_args("maxwell", key, dtype)
    return _maxwell(key, shape=canonical_shape("maxwell", shape), dtype=dt)


_maxwell = jit(_maxwell_body, static_argnames=("shape", "dtype"))


def double_sided_maxwell(key, loc, scale, shape=(), dtype=None):
    """Double-sided Maxwell values ``sign * maxwell * scale + loc``; as in JAX, the result
    shape is ``shape + broadcast(loc, scale).shape`` (``shape`` defaults to the latter)."""
    key, dt = _float_sampler_args("double_sided_maxwell", key, dtype)
    shape = canonical_shape("double_sided_maxwell", shape)
    params = xnp.broadcast_shapes(np.shape(loc), np.shape(scale))
    return _double_sided_maxwell(
        key,
        loc,
        scale,
        shape=(shape or params) + params,
        dtype=dt,
        float_dtype=dtypes.default_float(),
    )


@functools.partial(jit, static_argnames=("shape", "dtype", "float_dtype"))
def _double_sided_maxwell(key, loc, scale, shape, dtype, float_dtype):
    keys = _split(key, (2,))
    rvs = _maxwell_body(keys[0], shape, dtype)
    sign = _rademacher_body(keys[1], shape, dtype, float_dtype)
    return sign * rvs * scale + loc


def weibull_min(key, scale, concentration, shape=(), dtype=None):
    """Weibull values by the inverse CDF, ``(-log1p(-u)) ** (1 / concentration) * scale``."""
    key, dt = _float_sampler_args("weibull_min", key, dtype)
    return _weibull_min(
        key, scale, concentration, shape=canonical_shape("weibull_min", shape), dtype=dt
    )


@functools.partial(jit, static_argnames=("shape", "dtype"))
def _weibull_min(key, scale, concentration, shape, dtype):
    u = _uniform01(key, shape, dtype)
    return xnp.power(-xnp.log1p(-u), 1.0 / concentration) * scale


def _generalized_normal_body(key, p, shape, dtype, float_dtype):
    keys = _split(key, (2,))
    g = _gamma_impl(keys[0], 1 / p, shape, dtype, False)
    r = _rademacher_body(keys[1], shape, dtype, float_dtype)
    return r * g ** (1 / p)


@takes_out_sharding
def generalized_normal(key, p, shape=(), dtype=None):
    """Generalized normal values with density proportional to ``exp(-|x| ** p)``:
    ``sign * g ** (1 / p)`` for ``g`` Gamma(1 / p)."""
    key, dt = _float_sampler_args("generalized_normal", key, dtype)
    return _generalized_normal(
        key,
        p,
        shape=canonical_shape("generalized_normal", shape),
        dtype=dt,
        float_dtype=dtypes.default_float(),
    )


_generalized_normal = jit(
    _generalized_normal_body, static_argnames=("shape", "dtype", "float_dtype")
)


@takes_out_sharding
def ball(key, d, p=2, shape=(), dtype=None):
    """Points uniform in the unit ``p``-norm ball of dimension ``d`` (shape
    ``(*shape, d)``), as ``jax.random.ball``."""
    key, dt = _float_sampler_args("ball", key, dtype)
    try:
        d = int(d)
    except TypeError:
        raise TypeError(
            f"xform.random.ball: `d` must be a concrete integer, got {type(d).__name__}"
        ) from None
    return _ball(
        key,
        p,
        d=d,
        shape=canonical_shape("ball", shape),
        dtype=dt,
        float_dtype=dtypes.default_float(),
    )


@functools.partial(jit, static_argnames=("d", "shape", "dtype", "float_dtype"))
def _ball(key, p, d, shape, dtype, float_dtype):
    keys = _split(key, (2,))
    g = _generalized_normal(keys[0], p, shape=(*shape, d), dtype=dtype, float_dtype=float_dtype)
    e = _exponential(keys[1], shape, dtype)
    return g / (((xnp.abs(g) ** p).sum(-1) + e) ** (1 / p))[..., None]


@takes_out_sharding
def rayleigh(key, scale, shape=None, dtype=None):
    """Rayleigh(scale) values, ``scale * sqrt(-2 log u)``."""
    key, dt = _float_sampler_args("rayleigh", key, dtype)
    return _rayleigh(key, scale, shape=_param_shape("rayleigh", shape, scale), dtype=dt)


@functools.partial(jit, static_argnames=("shape", "dtype"))
def _rayleigh(key, scale, shape, dtype):
    u = _uniform01(key, shape, dtype)
    scale = xnp.broadcast_to(_convert(scale, dtype), shape)
    return lax.mul(scale, lax.sqrt(lax.mul(lax.log(u), np.array(-2, dtype))))


@takes_out_sharding
def wald(key, mean, shape=None, dtype=None):
    """Wald (inverse Gaussian) values with ``mean`` and unit shape parameter, by
    Michael-Schucany-Haas's transform."""
    key, dt = _float_sampler_args("wald", key, dtype)
    return _wald(key, mean, shape=_param_shape("wald", shape, mean), dtype=dt)


@functools.partial(jit, static_argnames=("shape", "dtype"))
def _wald(key, mean, shape, dtype):
    keys = _split(key, (2,))
    mean = xnp.broadcast_to(_convert(mean, dtype), shape)
    v = _normal(keys[0], shape, dtype)
    z = _uniform01(keys[1], shape, dtype)
    y = lax.integer_pow(v, 2)
    y_sq = lax.integer_pow(y, 2)
    mean_sq = lax.integer_pow(mean, 2)
    sqrt_term = lax.sqrt(4 * mean * y + mean_sq * y_sq)
    x = mean + mean_sq * y / 2 - mean / 2 * sqrt_term
    return lax.select(lax.le(z, mean / (mean + x)), x, mean_sq / x)


@takes_out_sharding
def geometric(key, p, shape=None, dtype=None):
    """Geometric(p) values (trials until the first success, from 1), an integer dtype."""
    key = check_key("geometric", key)
    dt = canonical_dtype("geometric", dtype, int, "int")
    p_dtype = dtypes.canonicalize(getattr(p, "dtype", np.result_type(p)))
    if not dtypes.is_inexact(p_dtype):
        p = np.asarray(p, dtypes.default_float())
    return _geometric(key, p, shape=_param_shape("geometric", shape, p), dtype=dt)


@functools.partial(jit, static_argnames=("shape", "dtype"))
def _geometric(key, p, shape, dtype):
    u = _uniform01(key, shape, p.dtype)
    u = xnp.where(u == 0, 1, u)  # as JAX: u == 0 maps to 1, not to an infinite log
    log_one_minus_p = xnp.broadcast_to(lax.log1p(-p), shape)
    return (lax.floor(lax.div(lax.log(u), log_one_minus_p)) + 1).astype(dtype)


@takes_out_sharding
def triangular(key, left, mode, right, shape=None, dtype=None):
    """Triangular(left, mode, right) values by the inverse CDF."""
    key, dt = _float_sampler_args("triangular", key, dtype)
    shape = _param_shape("triangular", shape, left, mode, right)
    return _triangular(key, left, mode, right, shape=shape, dtype=dt)


@functools.partial(jit, static_argnames=("shape", "dtype"))
def _triangular(key, left, mode, right, shape, dtype):
    left, right, mode = (xnp.broadcast_to(_convert(v, dtype), shape) for v in (left, right, mode))
    fc = (mode - left) / (right - left)
    u = _uniform01(key, shape, dtype)
    out1 = left + lax.sqrt(u * (right - left) * (mode - left))
    out2 = right - lax.sqrt((1 - u) * (right - left) * (right - mode))
    return lax.select(u < fc, out1, out2)


# --------------------------------------------------------------------------- poisson


@takes_out_sharding
def poisson(key, lam, shape=None, dtype=None):
    """Poisson(lam) values (default int dtype), as ``jax.random.poisson``: Knuth's algorithm
    for ``lam < 10``, transformed rejection (Hörmann) above, each a ``while_loop`` over
    split keys; ``lam`` is sampled in float32."""
    key = check_key("poisson", key)
    if key._impl is not THREEFRY:
        raise NotImplementedError(
            f"xform.random.poisson is only implemented for the "
            f"threefry2x32 PRNG, not {key._impl.name}"
        )
    dt = canonical_dtype("poisson", dtype, int, "int")
    shape = np.shape(lam) if shape is None else canonical_shape("poisson", shape)
    return _poisson(key, lam, shape=tuple(shape), dtype=dt)


def _poisson_knuth(key, lam, shape, dtype):
    def body(carry):
        i, k, key, log_prod = carry
        keys = _split(key, (2,))
        k = lax.select(log_prod > -lam, k + 1, k)
        u = _uniform01(keys[1], shape, np.dtype(np.float32))
        return i + 1, k, keys[0], log_prod + xnp.log(u)

    def cond(carry):
        i, _, _, log_prod = carry
        return xnp.any(log_prod > -lam) & (i < _MAX_ITERS)

    init = (np.int32(0), xnp.zeros(shape, dtype), key, xnp.zeros(shape, np.float32))
    k = lax.while_loop(cond, body, init)[1]
    return (k - 1).astype(dtype)


def _poisson_rejection(key, lam, shape, dtype):
    log_lam = lax.log(lam)
    b = 0.931 + 2.53 * lax.sqrt(lam)
    a = -0.059 + 0.02483 * b
    inv_alpha = 1.1239 + 1.1328 / (b - 3.4)
    v_r = 0.9277 - 3.6224 / (b - 2)

    def body(carry):
        i, k_out, accepted, key = carry
        key, key_u, key_v = _split(key, (3,))
        u = _uniform01(key_u, shape, lam.dtype) - 0.5
        v = _uniform01(key_v, shape, lam.dtype)
        u_shifted = 0.5 - abs(u)
        k = lax.floor((2 * a / u_shifted + b) * u + lam + 0.43)
        s = lax.log(v * inv_alpha / (a / (u_shifted * u_shifted) + b))
        t = -lam + k * log_lam - lax.lgamma(k + 1)
        accept1 = (u_shifted >= 0.07) & (v <= v_r)
        reject = (k < 0) | ((u_shifted < 0.013) & (v > u_shifted))
        accept = accept1 | (~reject & (s <= t))
        return i + 1, lax.select(accept, k, k_out), accepted | accept, key

    def cond(carry):
        i, _, accepted, _ = carry
        return xnp.any(~accepted) & (i < _MAX_ITERS)

    init = (np.int32(0), xnp.full(shape, -1, lam.dtype), xnp.zeros(shape, bool), key)
    return lax.while_loop(cond, body, init)[1].astype(dtype)


@functools.partial(jit, static_argnames=("shape", "dtype"))
def _poisson(key, lam, shape, dtype):
    lam = _convert(xnp.broadcast_to(lam, shape), np.float32)
    use_knuth = _isnan(lam) | (lam < 10)
    lam_knuth = lax.select(use_knuth, lam, xnp.zeros_like(lam))
    # rejection's acceptance rate tends to 89% as lam grows: any large lam fills the lanes
    lam_rejection = lax.select(use_knuth, xnp.full_like(lam, 1e5), lam)
    result = lax.select(
        use_knuth,
        _poisson_knuth(key, lam_knuth, shape, dtype),
        _poisson_rejection(key, lam_rejection, shape, dtype),
    )
    return lax.select(lam == 0, xnp.zeros_like(result), result)


# --------------------------------------------------------------------------- binomial


_STIRLING_TAIL = (
    0.0810614667953272,
    0.0413406959554092,
    0.0276779256849983,
    0.02079067210376509,
    0.0166446911898211,
    0.0138761288230707,
    0.0118967099458917,
    0.0104112652619720,
    0.00925546218271273,
    0.00833056343336287,
)


def _stirling_approx_tail(k):
    table = xnp.asarray(np.array(_STIRLING_TAIL, k.dtype))
    use_table = k <= 9
    k = lax.clamp(np.array(0, k.dtype), k, np.array(9, k.dtype))
    kp1sq = (k + 1) * (k + 1)
    approx = (1.0 / 12 - (1.0 / 360 - 1.0 / 1260 / kp1sq) / kp1sq) / (k + 1)
    return lax.select(use_table, table[xnp.floor(k).astype(np.int32)], approx)


def _binomial_inversion(key, count, prob, shape, dtype):
    log1minusprob = xnp.log1p(-prob)

    def body(carry):
        i, num_geom, geom_sum, key = carry
        keys = _split(key, (2,))
        num_geom = lax.select(geom_sum <= count, num_geom + 1, num_geom)
        u = _uniform01(keys[0], shape, prob.dtype)
        geom = xnp.ceil(xnp.log(u) / log1minusprob)
        return i + 1, num_geom, geom_sum + geom, keys[1]

    def cond(carry):
        i, _, geom_sum, _ = carry
        return xnp.any(geom_sum <= count) & (i < _MAX_ITERS)

    zeros = xnp.zeros(shape, prob.dtype)
    k = lax.while_loop(cond, body, (np.int32(0), zeros, zeros, key))[1]
    return (k - 1).astype(dtype)


def _btrs(key, count, prob, shape, dtype):
    """Hörmann's transformed rejection with squeeze (BTRS)."""
    stddev = xnp.sqrt(count * prob * (1 - prob))
    b = 1.15 + 2.53 * stddev
    a = -0.0873 + 0.0248 * b + 0.01 * prob
    c = count * prob + 0.5
    v_r = 0.92 - 4.2 / b
    r = prob / (1 - prob)
    alpha = (2.83 + 5.1 / b) * stddev
    m = xnp.floor((count + 1) * prob)

    def body(carry):
        i, k_out, accepted, key = carry
        key, key_u, key_v = _split(key, (3,))
        u = _uniform01(key_u, shape, prob.dtype)
        v = _uniform01(key_v, shape, prob.dtype)
        u = u - 0.5
        us = 0.5 - xnp.abs(u)
        accept1 = (us >= 0.07) & (v <= v_r)
        k = xnp.floor((2 * a / us + b) * u + c)
        reject = (k < 0) | (k > count)
        v = xnp.log(v * alpha / (a / (us * us) + b))
        ub = (
            (m + 0.5) * xnp.log((m + 1) / (r * (count - m + 1)))
            + (count + 1) * xnp.log((count - m + 1) / (count - k + 1))
            + (k + 0.5) * xnp.log(r * (count - k + 1) / (k + 1))
            + _stirling_approx_tail(m)
            + _stirling_approx_tail(count - m)
            - _stirling_approx_tail(k)
            - _stirling_approx_tail(count - k)
        )
        accept = accept1 | (~reject & (v <= ub))
        return i + 1, lax.select(accept, k, k_out), accepted | accept, key

    def cond(carry):
        i, _, accepted, _ = carry
        return xnp.any(~accepted) & (i < _MAX_ITERS)

    init = (np.int32(0), xnp.full(shape, -1, prob.dtype), xnp.zeros(shape, bool), key)
    return lax.while_loop(cond, body, init)[1].astype(dtype)


def binomial(key, n, p, shape=None, dtype=None):
    """Binomial(n, p) counts as floats (``dtype``, default float), as
    ``jax.random.binomial``: inversion by geometric sums for ``n * min(p, 1 - p) <= 10``,
    BTRS above; NaN for invalid ``n``/``p``, ``inf`` for infinite ``n``."""
    key, dt = _float_sampler_args("binomial", key, dtype)
    p_dtype = dtypes.canonicalize(getattr(p, "dtype", np.result_type(p)))
    if not dtypes.is_inexact(p_dtype):
        p = np.asarray(p, dtypes.default_float())
    return _binomial(key, n, p, shape=_param_shape("binomial", shape, n, p), dtype=dt)


def _binomial_body(key, count, prob, shape, dtype):
    count = xnp.broadcast_to(_convert(count, prob.dtype), shape)
    prob = xnp.broadcast_to(prob, shape)
    p_lt_half = prob < 0.5
    q = lax.select(p_lt_half, prob, 1.0 - prob)
    count_nan_or_neg = _isnan(count) | (count < 0.0)
    count_inf = xnp.isinf(count)
    q_is_nan = _isnan(q)
    q_l_0 = q < 0.0
    q = lax.select(q_is_nan | q_l_0, xnp.full_like(q, 0.01), q)
    use_inversion = count_nan_or_neg | (count * q <= 10.0)
    count = xnp.floor(count)  # float counts round down, as np.random.binomial
    count_inv = lax.select(use_inversion, count, xnp.zeros_like(count))
    count_btrs = lax.select(use_inversion, xnp.full_like(count, 1e4), count)
    q_btrs = lax.select(use_inversion, xnp.full_like(q, 0.5), q)
    samples = lax.select(
        use_inversion,
        _binomial_inversion(key, count_inv, q, shape, dtype),
        _btrs(key, count_btrs, q_btrs, shape, dtype),
    )
    invalid = q_l_0 | q_is_nan | count_nan_or_neg
    samples = lax.select(invalid, xnp.full_like(samples, np.nan, dtype), samples)
    samples = lax.select(count_inf & ~invalid, xnp.full_like(samples, np.inf, dtype), samples)
    return lax.select(
        p_lt_half | count_nan_or_neg | q_is_nan | count_inf, samples, count.astype(dtype) - samples
    )


_binomial = jit(_binomial_body, static_argnames=("shape", "dtype"))


def multinomial(key, n, p, *, shape=None, dtype=None, unroll=1):
    """Multinomial(n, p) counts over the last axis of ``p`` (as floats): a ``scan`` of
    binomial draws of each outcome given the trials left, as ``jax.random.multinomial``.
    ``shape``, if given, is the full result shape (ending in ``p.shape[-1]``)."""
    key, dt = _float_sampler_args("multinomial", key, dtype)
    if np.ndim(p) < 1:
        raise ValueError(
            f"xform.random.multinomial requires p.ndim >= 1, got p.ndim == {np.ndim(p)}"
        )
    n, p = xnp.asarray(n), xnp.asarray(p)
    common = xnp.result_type(n, p)
    common = common if dtypes.is_inexact(common) else dtypes.default_float()
    shape = np.shape(p) if shape is None else canonical_shape("multinomial", shape)
    return _multinomial(
        key, n.astype(common), p.astype(common), shape=tuple(shape), dtype=dt, unroll=unroll
    )


@functools.partial(jit, static_argnames=("shape", "dtype", "unroll"))
def _multinomial(key, n, p, shape, dtype, unroll):
    n = xnp.broadcast_to(n, shape[:-1])
    p = xnp.moveaxis(xnp.broadcast_to(p, shape), -1, 0)
    remaining = lax.cumsum(p, 0, reverse=True)
    ratios = p / xnp.where(remaining == 0, 1, remaining)

    def step(remainder, ratio_key):
        ratio, key = ratio_key
        count = _binomial_body(
            key, remainder, xnp.clip(ratio, 0, 1), remainder.shape, remainder.dtype
        )
        return remainder - count, count

    keys = _split(key, (ratios.shape[0],))
    _, counts = lax.scan(step, n, (ratios, keys), unroll=unroll)
    return xnp.moveaxis(counts, 0, -1).astype(dtype)

"""Series-defined special functions, as elementwise loops that stop per element: Bessel
``J_n``, the confluent and Gauss hypergeometric functions, and spherical harmonics."""

import operator

import numpy as np

from xform import lax
from xform import numpy as xnp
from xform.custom_derivatives import custom_jvp
from xform.numpy._promote import aval_of, promote_args_inexact
from xform.numpy._staged import staged
from xform.scipy.special._basic import (
    _check_real,
    _const,
    _while_active,
    gamma,
)

# --------------------------------------------------------------------------- Bessel J_n

__all__ = ["bessel_jn", "hyp1f1", "hyp2f1", "sph_harm_y"]


@staged("bessel_jn", static_argnames=("v", "n_iter"))
def bessel_jn(z, *, v, n_iter=50):
    """Bessel functions of the first kind ``J_0 .. J_v`` of real ``z``, stacked on a new
    leading axis: shape ``(v + 1, *z.shape)``.

    Miller's downward recurrence ``f_k = 2 (k + 1) f_(k+1) / z - f_(k+2)`` from ``k = n_iter``
    to 0, normalised by ``J_0 + 2 J_2 + 2 J_4 + ... = 1`` (Zhang and Jin's ``BJNDD``).

    Args:
      z: a real array.
      v: the highest order, a concrete non-negative int.
      n_iter: the starting order of the recurrence, a concrete int (larger for larger |z|).
    """
    (z,) = promote_args_inexact("bessel_jn", z)
    if xnp.iscomplexobj(z):
        raise ValueError("bessel_jn: complex input not supported.")
    v, n_iter = operator.index(v), int(n_iter)
    f0, f1 = xnp.zeros_like(z), xnp.full_like(z, 1e-16)
    norm = xnp.zeros_like(z)
    values = [None] * (v + 1)
    for k in range(n_iter, -1, -1):
        f = _const(z, 2.0 * (k + 1)) * f1 / z - f0
        if k % 2 == 0:
            norm = norm + 2 * f
        if k <= v:
            values[k] = f
        f0, f1 = f1, f
    scale = norm - f1  # f1 is f_0 here: the sum counts J_0 once
    return xnp.stack([value / scale for value in values])


# ------------------------------------------------------------------------- confluent hypergeometric


def _hyp1f1_sum(a, b, x, start, weight):
    """``start + sum_k weight(k) t_k`` over the terms ``t_k = (a)_k x^k / ((b)_k k!)``, k >= 1,
    each element stopping once a term is below epsilon relative to its sum (or at 250
    terms), as JAX's loops per element do."""
    eps = _const(x, np.finfo(aval_of(x).dtype).eps)
    state = (xnp.full_like(x, start), xnp.ones_like(x), a / b * x)

    def body(state):
        total, k, term = state
        return total + term * weight(k), k + 1, term * (a + k) / (b + k) * x / (k + 1)

    def active(state):
        total, k, term = state
        return (k < 250) & (xnp.abs(term) / xnp.abs(total) > eps)

    return _while_active(active, body, state)[0]


def _hyp1f1_asymptotic(a, b, x):
    """For large ``|x|``: ``gamma(b) / gamma(a) e^x x^(a - b) sum_k (b - a)_k (1 - a)_k /
    (k! x^k)`` (Muller 2001, arXiv:1407.7786)."""
    eps = _const(x, np.finfo(aval_of(x).dtype).eps)
    state = (xnp.ones_like(x), xnp.ones_like(x), (b - a) * (1 - a) / x)

    def body(state):
        total, k, term = state
        return total + term, k + 1, term * (b - a + k) * (1 - a + k) / (k + 1) / x

    def active(state):
        total, k, term = state
        return (k < 250) & (xnp.abs(term) / xnp.abs(total) > eps)

    total = _while_active(active, body, state)[0]
    return gamma(b) / gamma(a) * xnp.exp(x) * x ** (a - b) * total


@custom_jvp
def _hyp1f1(a, b, x):
    near = xnp.abs(x) < 100
    series = _hyp1f1_sum(a, b, xnp.where(near, x, _const(x, 0)), 1, lambda k: 1)
    asymptotic = _hyp1f1_asymptotic(a, b, xnp.where(near, _const(x, 100), x))
    out = xnp.where(near, series, asymptotic)
    out = xnp.where((b == 0) & (a != 0), _const(x, np.inf), out)
    out = xnp.where((a == b) & (a != 0), xnp.exp(x), out)
    return xnp.where(a == 0, _const(x, 1), out)


def _hyp1f1_jvp(primals, tangents):
    (a, b, x), (a_dot, b_dot, x_dot) = primals, tangents
    # d/da and d/db term by term (functions.wolfram.com 07.20.20.0001, .0002); d/dx in closed
    # form. The series is used at every x, as JAX's derivatives do.
    da = _hyp1f1_sum(a, b, x, 0, lambda k: lax.digamma(a + k) - lax.digamma(a))
    db = _hyp1f1_sum(a, b, x, 0, lambda k: lax.digamma(b) - lax.digamma(b + k))
    dx = a / b * _hyp1f1(a + 1, b + 1, x)
    return _hyp1f1(a, b, x), da * a_dot + db * b_dot + dx * x_dot


_hyp1f1.defjvp(_hyp1f1_jvp)


@staged("hyp1f1")
def hyp1f1(a, b, x):
    """Kummer's confluent hypergeometric function ``1F1(a; b; x) = sum_k (a)_k x^k /
    ((b)_k k!)``: the series for ``|x| < 100``, the asymptotic expansion beyond (JAX's
    method: large ``a`` or ``b`` lose accuracy). ``1F1(0; 0; x) = 1``, as JAX (SciPy: NaN).
    Differentiable in all three arguments."""
    a, b, x = promote_args_inexact("hyp1f1", a, b, x)
    _check_real("hyp1f1", a, b, x)
    a, b, x = xnp.broadcast_arrays(a, b, x)
    return _hyp1f1(a, b, x)


# ------------------------------------------------------------------------- Gauss' hypergeometric
# JAX's method (Pearson, Olver and Porter, arXiv:1407.7786): the series; a finite sum when a or
# b is a non-positive integer; near x = 1 with c - a - b an integer, the digamma expansion
# (Abramowitz and Stegun 15.3.10-12); Euler's transformation for c - a - b <= -1. Every branch
# runs elementwise loops that stop per element, and only where its branch is chosen.


def _eps(x):
    return _const(x, np.finfo(aval_of(x).dtype).eps)


def _hyp2f1_series(a, b, c, x, enabled):
    x = xnp.where(enabled, x, _const(x, 0))
    state = (xnp.zeros_like(x), xnp.ones_like(x), xnp.ones_like(x))

    def body(state):
        total, k, term = state
        return total + term, k + 1, term * (a + k - 1) * (b + k - 1) / (c + k - 1) / k * x

    def active(state):
        total, k, term = state
        return (k < 250) & (xnp.abs(term) > _eps(x) * xnp.abs(total))

    return _while_active(active, body, state)[0]


def _hyp2f1_finite(a, b, c, x, enabled):
    """The terminating sum when ``a`` (or ``b``, swapped in) is a non-positive integer."""
    ib = xnp.round(b)
    c_pole_above_b = (c == xnp.floor(c)) & (c <= 0) & (c > b)
    swap = (b < a) & (xnp.abs(b - ib) < 50 * _eps(x)) & ~c_pole_above_b
    a, b = xnp.where(swap, b, a), xnp.where(swap, a, b)
    n = xnp.where(enabled, xnp.abs(a), _const(a, 0))
    state = (xnp.ones_like(x), xnp.ones_like(x), xnp.ones_like(x))

    def body(state):
        total, i, term = state
        term = term * -(n - i + 1) / (c + i - 1) * (b + i - 1) / i * x
        return total + term, i + 1, term

    return _while_active(lambda s: s[1] < n + 1, body, state)[0]


def _hyp2f1_near_one(a, b, c, x, enabled):
    """``2F1`` for ``x`` near 1 when ``d = c - a - b`` is an integer: the expansion in
    ``1 - x`` with digamma coefficients (A&S 15.3.10-12)."""
    one = _const(x, 1)
    x = xnp.where(enabled, x, _const(x, 0.95))
    d = c - a - b
    s = one - x
    rd = xnp.round(d)
    up = rd >= 0
    e = xnp.where(up, d, -d)
    d1 = xnp.where(up, d, _const(d, 0))
    d2 = xnp.where(up, _const(d, 0), d)
    ard = xnp.abs(rd)
    log_s = xnp.log(s)
    psi = lax.digamma
    y = (psi(one) + psi(one + e) - psi(a + d1) - psi(b + d1) - log_s) / gamma(e + one)
    p = (a + d1) * (b + d1) * s / gamma(e + 2)

    def body(state):
        p, q, t, y = state
        r = psi(one + t) + psi(one + t + e) - psi(a + t + d1) - psi(b + t + d1) - log_s
        q = p * r
        p = p * s * (a + t + d1) / (t + 1) * (b + t + d1) / (t + 1 + e)
        return p, q, t + 1, y + q

    def active(state):
        p, q, t, y = state
        return enabled & (t < 250) & (xnp.abs(q) >= _eps(x) * xnp.abs(y))

    y = _while_active(active, body, (p, y, xnp.ones_like(x), y))[3]

    def finite_part(state):
        p, t, y1 = state
        p = p * s * (a + t + d2) * (b + t + d2) / (one - e + t)
        t = t + 1
        p = p / t
        return p, t, y1 + p

    counted = xnp.where(enabled, ard, one)
    _, _, y1 = _while_active(
        lambda st: st[1] + 1 < counted,
        finite_part,
        (xnp.ones_like(x), xnp.zeros_like(x), xnp.ones_like(x)),
    )
    gamma_c = gamma(c)
    y1 = y1 * gamma(e) * gamma_c / (gamma(a + d1) * gamma(b + d1))
    y_n = y * gamma_c / (gamma(a + d2) * gamma(b + d2))
    y_n = xnp.where(xnp.fmod(ard, _const(ard, 2)) != 0, -y_n, y_n)
    q = s**rd
    summed = xnp.where(rd > 0, y_n * q + y1, y_n + y1 * q)
    return xnp.where(rd == 0, y * gamma_c / (gamma(a) * gamma(b)), summed)


def _hyp2f1_any(a, b, c, x, enabled):
    """The series, the finite sum or the expansion near 1, chosen per element."""
    eps50 = 50 * _eps(x)
    d = c - a - b
    neg_int_a = (a <= 0) & (xnp.abs(a - xnp.round(a)) < eps50)
    neg_int_b = (b <= 0) & (xnp.abs(b - xnp.round(b)) < eps50)
    finite = neg_int_a | neg_int_b
    near_one = (x > 0.9) & ~finite & (xnp.abs(d - xnp.round(d)) < eps50)
    series = ~finite & ~near_one
    out = _hyp2f1_series(a, b, c, x, enabled & series)
    out = xnp.where(near_one, _hyp2f1_near_one(a, b, c, x, enabled & near_one), out)
    return xnp.where(finite, _hyp2f1_finite(a, b, c, x, enabled & finite), out)


def _hyp2f1_values(a, b, c, x):
    one, inf = _const(x, 1), _const(x, np.inf)
    eps50 = 50 * _eps(x)
    d, s, ca, cb = c - a - b, one - x, c - a, c - b
    c_pole = (c == 0) | ((c < 0) & (c == xnp.floor(c)))
    euler = (d <= -1) & ~((xnp.abs(d - xnp.round(d)) >= eps50) & (s < 0))
    # JAX's order of cases: the first that holds decides.
    cases = [
        (x == 0) | (((a == 0) | (b == 0)) & (c != 0)),
        c_pole,
        euler,
        (d <= 0) & (x == 1),
        (x < 1) & (b == c),
        (x < 1) & (a == c),
        x > 1,
        x == 1,
    ]
    taken = xnp.zeros_like(x, dtype=bool)
    chosen = []
    for case in cases:
        chosen.append(case & ~taken)
        taken = taken | case
    transformed = s**d * _hyp2f1_any(ca, cb, c, x, chosen[2])
    at_one = gamma(c) * gamma(d) / (gamma(ca) * gamma(cb))
    values = [one, inf, transformed, inf, s**-a, s**-b, inf, at_one]
    out = _hyp2f1_any(a, b, c, x, ~taken)
    for case, value in zip(reversed(chosen), reversed(values), strict=True):
        out = xnp.where(case, value, out)
    return out


def _hyp2f1_derivative_sum(a, b, c, x, weight):
    state = (xnp.zeros_like(x), xnp.ones_like(x), a * b / c * x)

    def body(state):
        total, k, term = state
        return (total + term * weight(k), k + 1, term * (a + k) * (b + k) / (c + k) / (k + 1) * x)

    def active(state):
        total, k, term = state
        return (k < 250) & (xnp.abs(term) / xnp.abs(total) > _eps(x))

    return _while_active(active, body, state)[0]


@custom_jvp
def _hyp2f1(a, b, c, x):
    return _hyp2f1_values(a, b, c, x)


def _hyp2f1_jvp(primals, tangents):
    (a, b, c, x), (a_dot, b_dot, c_dot, x_dot) = primals, tangents
    psi = lax.digamma
    # Term by term in a, b, c (functions.wolfram.com 07.23.20.0001-0003), as JAX's.
    da = _hyp2f1_derivative_sum(a, b, c, x, lambda k: psi(a + k) - psi(a))
    db = _hyp2f1_derivative_sum(a, b, c, x, lambda k: psi(b + k) - psi(b))
    dc = _hyp2f1_derivative_sum(a, b, c, x, lambda k: psi(c) - psi(c + k))
    dx = a * b / c * _hyp2f1(a + 1, b + 1, c + 1, x)
    return _hyp2f1(a, b, c, x), da * a_dot + db * b_dot + dc * c_dot + dx * x_dot


_hyp2f1.defjvp(_hyp2f1_jvp)


@staged("hyp2f1")
def hyp2f1(a, b, c, x):
    """Gauss' hypergeometric function ``2F1(a, b; c; x) = sum_k (a)_k (b)_k x^k / ((c)_k k!)``
    for real arguments and ``x <= 1`` (``inf`` beyond, as JAX's), by JAX's method. Large
    arguments lose accuracy in float32. Differentiable in all four arguments."""
    a, b, c, x = promote_args_inexact("hyp2f1", a, b, c, x)
    _check_real("hyp2f1", a, b, c, x)
    a, b, c, x = xnp.broadcast_arrays(a, b, c, x)
    return _hyp2f1(a, b, c, x)


# ------------------------------------------------------------------------- spherical harmonics


def _normalized_legendre(n, order, x, n_max):
    """``sqrt((2n + 1) (n - m)! / (4 pi (n + m)!)) P_n^m(x)`` (Condon-Shortley phase) for
    ``0 <= m <= n <= n_max`` elementwise, by the stable recurrences in the degree."""
    sin_theta = xnp.sqrt(xnp.maximum(1 - x * x, _const(x, 0)))
    # The diagonal P_k^k, kept where k is the element's order.
    p = xnp.full_like(x, 1 / np.sqrt(4 * np.pi))
    diagonal = p
    for k in range(1, n_max + 1):
        p = _const(x, -np.sqrt((2 * k + 1) / (2 * k))) * sin_theta * p
        diagonal = xnp.where(order == k, p, diagonal)
    # Up the degree: P_l = a_l (x P_(l-1) - P_(l-2) / a_(l-1)), a_l = sqrt((4l^2 - 1) /
    # (l^2 - m^2)); P_(m-1) is taken as 0.
    result = xnp.where(n == order, diagonal, xnp.zeros_like(x))
    m2 = order * order
    previous, before = diagonal, xnp.zeros_like(x)
    for l in range(1, n_max + 1):  # noqa: E741  (the degree's usual name)
        active = order < l
        a_l = xnp.sqrt((4 * l * l - 1) / xnp.where(active, l * l - m2, _const(x, 1)))
        second = order < l - 1
        a_prev = xnp.sqrt(
            ((2 * l - 1) * (2 * l - 3)) / xnp.where(second, (l - 1) ** 2 - m2, _const(x, 1))
        )
        value = a_l * (x * previous - xnp.where(second, before / a_prev, _const(x, 0)))
        before = xnp.where(active, previous, before)
        previous = xnp.where(active, value, previous)
        result = xnp.where(active & (n == l), value, result)
    return result


def sph_harm_y(n, m, theta, phi, diff_n=None, n_max=None):
    """The spherical harmonics ``Y_n^m(theta, phi)`` (theta the colatitude, phi the
    longitude), orthonormal on the sphere, with the Condon-Shortley phase, as SciPy's.

    Args:
      n: degrees, ``n >= 0`` (an integer array).
      m: orders, ``|m| <= n``.
      theta: colatitudes in ``[0, pi]``; a scalar is made a 1-element array, as JAX does.
      phi: longitudes.
      diff_n: unsupported, as in JAX.
      n_max: the largest degree, a concrete int (default ``max(n)``, which must then be
        concrete); larger ``n`` are clipped to it, as JAX's.
    """
    if diff_n is not None:
        raise NotImplementedError(
            "The 'diff_n' argument to sph_harm_y is not supported (as in JAX)."
        )
    if xnp.ndim(theta) == 0:
        theta = xnp.atleast_1d(theta)
    if n_max is None:
        n_max = np.max(np.asarray(n))
    n_max = operator.index(int(n_max))
    theta, phi = promote_args_inexact("sph_harm_y", theta, phi)
    n, m, theta, phi = xnp.broadcast_arrays(xnp.asarray(n), xnp.asarray(m), theta, phi)
    dtype = aval_of(theta).dtype
    n = xnp.clip(n, 0, n_max).astype(dtype)
    order = xnp.minimum(xnp.abs(m), n_max).astype(dtype)
    legendre = _normalized_legendre(n, order, xnp.cos(theta), n_max)
    angle = order * phi
    harmonics = lax.complex(legendre * xnp.cos(angle), legendre * xnp.sin(angle))
    sign = xnp.where(xnp.fmod(order, _const(order, 2)) == 0, _const(order, 1), _const(order, -1))
    negative = lax.complex(sign, xnp.zeros_like(sign)) * xnp.conj(harmonics)
    return xnp.where(m < 0, negative, harmonics)

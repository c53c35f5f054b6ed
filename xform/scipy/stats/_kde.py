"""``gaussian_kde``: a Gaussian kernel density estimate, a pytree as in ``jax.scipy.stats``."""

import dataclasses
import functools
import math
from typing import Any

import numpy as np

from xform import numpy as xnp
from xform import random
from xform.api.batching import vmap
from xform.numpy._promote import check_arraylike, promote_dtypes_inexact
from xform.scipy import linalg, special
from xform.tree_util import register_pytree_node_class

__all__ = ["gaussian_kde"]


@register_pytree_node_class
@dataclasses.dataclass(frozen=True, init=False, slots=True)
class gaussian_kde:  # noqa: N801  (JAX's and SciPy's name)
    """A Gaussian kernel density estimate of ``dataset`` (``(d, n)``: n points in d
    dimensions), with bandwidth ``bw_method`` ("scott", "silverman", a scalar or a callable
    of the estimate) and optional point ``weights``. Its leaves are ``neff``, ``dataset``,
    ``weights``, ``covariance`` and ``inv_cov``, so it passes through ``jit`` and ``vmap``."""

    neff: Any
    dataset: Any
    weights: Any
    covariance: Any
    inv_cov: Any

    def __init__(self, dataset, bw_method=None, weights=None):
        check_arraylike("gaussian_kde", dataset)
        dataset = xnp.atleast_2d(dataset)
        if xnp.iscomplexobj(dataset):
            raise NotImplementedError("gaussian_kde does not support complex data")
        if not dataset.size > 1:
            raise ValueError(
                "gaussian_kde: `dataset` input should have multiple elements, "
                f"got shape {dataset.shape}"
            )
        d, n = dataset.shape
        if weights is None:
            (dataset,) = promote_dtypes_inexact(dataset)
            weights = xnp.full(n, 1.0 / n, dtype=dataset.dtype)
        else:
            check_arraylike("gaussian_kde", weights)
            dataset, weights = promote_dtypes_inexact(dataset, weights)
            weights = xnp.atleast_1d(weights)
            weights = weights / xnp.sum(weights)
            if weights.ndim != 1:
                raise ValueError(
                    "gaussian_kde: `weights` input should be one-dimensional, got "
                    f"shape {weights.shape}"
                )
            if len(weights) != n:
                raise ValueError(
                    f"gaussian_kde: `weights` input should be of length n={n}, got {len(weights)}"
                )
        self._set("dataset", dataset)
        self._set("weights", weights)
        neff = self._set("neff", 1 / xnp.sum(weights**2))
        bw_method = "scott" if bw_method is None else bw_method
        if isinstance(bw_method, str) and bw_method == "scott":
            factor = xnp.power(neff, -1.0 / (d + 4))
        elif isinstance(bw_method, str) and bw_method == "silverman":
            factor = xnp.power(neff * (d + 2) / 4.0, -1.0 / (d + 4))
        elif xnp.isscalar(bw_method) and not isinstance(bw_method, str):
            factor = bw_method
        elif callable(bw_method):
            factor = bw_method(self)
        else:
            raise ValueError(
                "gaussian_kde: `bw_method` should be 'scott', 'silverman', a "
                f"scalar, or a callable; got {bw_method!r}"
            )
        data_cov = xnp.atleast_2d(xnp.cov(dataset, rowvar=1, bias=False, aweights=weights))
        self._set("covariance", data_cov * factor**2)
        self._set("inv_cov", xnp.linalg.inv(data_cov) / factor**2)

    def _set(self, name, value):
        object.__setattr__(self, name, value)
        return value

    def tree_flatten(self):
        return (self.neff, self.dataset, self.weights, self.covariance, self.inv_cov), None

    @classmethod
    def tree_unflatten(cls, aux_data, children):
        del aux_data
        kde = cls.__new__(cls)
        for name, value in zip(
            ("neff", "dataset", "weights", "covariance", "inv_cov"), children, strict=True
        ):
            kde._set(name, value)
        return kde

    @property
    def d(self):
        """The number of dimensions."""
        return self.dataset.shape[0]

    @property
    def n(self):
        """The number of data points."""
        return self.dataset.shape[1]

    def evaluate(self, points):
        """The estimated density at ``points`` (``(d, m)``, or ``(m,)`` when ``d == 1``)."""
        check_arraylike("gaussian_kde.evaluate", points)
        return _kernel_sum(
            False, self.dataset, self.weights, self._reshape_points(points), self.inv_cov
        )

    def __call__(self, points):
        return self.evaluate(points)

    def pdf(self, x):
        """The estimated density at ``x``, as ``evaluate``."""
        return self.evaluate(x)

    def logpdf(self, x):
        """The log of the estimated density at ``x``, summed without overflow."""
        check_arraylike("gaussian_kde.logpdf", x)
        return _kernel_sum(True, self.dataset, self.weights, self._reshape_points(x), self.inv_cov)

    def integrate_gaussian(self, mean, cov):
        """The integral of the estimate times the normal density ``N(mean, cov)``."""
        mean = xnp.atleast_1d(xnp.squeeze(mean))
        cov = xnp.atleast_2d(cov)
        if mean.shape != (self.d,):
            raise ValueError(
                f"gaussian_kde.integrate_gaussian: mean does not have dimension "
                f"{self.d}, got shape {mean.shape}"
            )
        if cov.shape != (self.d, self.d):
            raise ValueError(
                f"gaussian_kde.integrate_gaussian: covariance does not have "
                f"dimension {self.d}, got shape {cov.shape}"
            )
        chol = linalg.cho_factor(self.covariance + cov)
        norm = 1.0 / (xnp.sqrt(2 * math.pi) ** self.d * xnp.prod(xnp.diag(chol[0])))
        return _kernel_convolve(chol, norm, self.dataset, self.weights, mean)

    def integrate_box_1d(self, low, high):
        """The mass of a 1-D estimate between the scalars ``low`` and ``high``."""
        if self.d != 1:
            raise ValueError(
                f"gaussian_kde.integrate_box_1d() only handles 1D pdfs, got d={self.d}"
            )
        if np.ndim(low) != 0 or np.ndim(high) != 0:
            raise ValueError("the limits of integration in integrate_box_1d must be scalars")
        sigma = xnp.squeeze(xnp.sqrt(self.covariance))
        low = xnp.squeeze((low - self.dataset) / sigma)
        high = xnp.squeeze((high - self.dataset) / sigma)
        return xnp.sum(self.weights * (special.ndtr(high) - special.ndtr(low)))

    def integrate_kde(self, other):
        """The integral of the product of this estimate and ``other``."""
        if other.d != self.d:
            raise ValueError(
                f"gaussian_kde.integrate_kde: KDEs are not the same "
                f"dimensionality, {self.d} != {other.d}"
            )
        chol = linalg.cho_factor(self.covariance + other.covariance)
        norm = 1.0 / (xnp.sqrt(2 * math.pi) ** self.d * xnp.prod(xnp.diag(chol[0])))
        small, large = (self, other) if self.n < other.n else (other, self)
        convolve = functools.partial(_kernel_convolve, chol, norm, large.dataset, large.weights)
        return xnp.sum(vmap(convolve, in_axes=1)(small.dataset) * small.weights)

    def resample(self, key, shape=()):
        """Draws from the estimate: ``shape`` data points (chosen by weight) plus normal noise
        of the kernel covariance; the result has shape ``(d,) + shape``."""
        ind_key, eps_key = random.split(key)
        ind = random.choice(ind_key, self.n, shape=shape, p=self.weights)
        eps = random.multivariate_normal(
            eps_key,
            xnp.zeros(self.d, self.covariance.dtype),
            self.covariance,
            shape=shape,
            dtype=self.dataset.dtype,
        ).T
        return self.dataset[:, ind] + eps

    def integrate_box(self, low_bounds, high_bounds, maxpts=None):
        """Not implemented: only 1-D boxes, through ``integrate_box_1d``."""
        del low_bounds, high_bounds, maxpts
        raise NotImplementedError("only 1D box integrations are supported; use `integrate_box_1d`")

    def set_bandwidth(self, bw_method=None):
        """Not implemented: the estimate is immutable."""
        del bw_method
        raise NotImplementedError("dynamically changing the bandwidth method is not supported")

    def _reshape_points(self, points):
        if xnp.iscomplexobj(points):
            raise NotImplementedError("gaussian_kde does not support complex coordinates")
        points = xnp.atleast_2d(points)
        d, m = points.shape
        if d != self.d:
            if d == 1 and m == self.d:
                return xnp.reshape(points, (self.d, 1))
            raise ValueError(f"points have dimension {d}, dataset has dimension {self.d}")
        return points


def _kernel_convolve(chol, norm, target, weights, mean):
    diff = target - mean[:, None]
    alpha = linalg.cho_solve(chol, diff)
    return norm * xnp.sum(xnp.exp(-0.5 * xnp.sum(diff * alpha, axis=0)) * weights)


def _kernel_sum(in_log, dataset, weights, points, precision):
    """The weighted Gaussian kernel sum (or its log) at each column of ``points``."""
    dataset, weights, points, precision = promote_dtypes_inexact(
        dataset, weights, points, precision
    )
    d = dataset.shape[0]
    whitening = linalg.cholesky(precision, lower=True)
    train = xnp.dot(dataset.T, whitening)  # (n, d)
    test = xnp.dot(points.T, whitening)  # (m, d)
    log_norm = xnp.sum(xnp.log(xnp.diag(whitening))) - 0.5 * d * xnp.log(2 * math.pi)
    arg = log_norm - 0.5 * xnp.sum(xnp.square(train[None] - test[:, None]), axis=-1)
    if in_log:
        return special.logsumexp(xnp.log(weights) + arg, axis=1)
    return xnp.sum(weights * xnp.exp(arg), axis=1)

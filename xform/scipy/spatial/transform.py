"""``xform.scipy.spatial.transform``, as ``jax.scipy.spatial.transform``: 3-D rotations.

A ``Rotation`` holds unit quaternions ``(x, y, z, w)`` (scalar last) in an array of shape
``(4,)`` (one rotation) or ``(N, 4)``; it is a NamedTuple, hence a pytree, so it passes
through ``jit`` and ``vmap``. Every conversion works on the last axis, so batches need no
``vectorize``; Euler axis sequences are Python strings, resolved before tracing.
"""

import re
import typing

import numpy as np

from xform import numpy as xnp
from xform import random as xrandom


def _norm(v):
    return xnp.sqrt(xnp.sum(v * v, axis=-1))


def _normalize(quat):
    return quat / _norm(quat)[..., None]


def _compose(p, q):
    """The quaternion product ``p * q`` (apply ``q`` first), broadcasting leading axes."""
    px, py, pz, pw = (p[..., i] for i in range(4))
    qx, qy, qz, qw = (q[..., i] for i in range(4))
    return xnp.stack(
        [
            pw * qx + qw * px + (py * qz - pz * qy),
            pw * qy + qw * py + (pz * qx - px * qz),
            pw * qz + qw * pz + (px * qy - py * qx),
            pw * qw - px * qx - py * qy - pz * qz,
        ],
        axis=-1,
    )


def _check_seq(seq, name, exact3):
    if exact3 and len(seq) != 3:
        raise ValueError(f"Rotation.{name}: expected 3 axes, got {seq!r}.")
    if not 1 <= len(seq) <= 3:
        raise ValueError(
            f"Rotation.{name}: expected axis specification to be a non-empty "
            f"string of up to 3 characters, got {seq!r}"
        )
    intrinsic = re.match(r"^[XYZ]{1,3}$", seq) is not None
    if not intrinsic and re.match(r"^[xyz]{1,3}$", seq) is None:
        raise ValueError(
            f"Rotation.{name}: expected axes from `seq` to be from "
            f"['x', 'y', 'z'] or ['X', 'Y', 'Z'], got {seq!r}"
        )
    if any(a == b for a, b in zip(seq, seq[1:], strict=False)):
        raise ValueError(f"Rotation.{name}: expected consecutive axes to be different, got {seq!r}")
    return ["xyz".index(c) for c in seq.lower()], intrinsic


def _elementary_quat(axis, angle):
    half = angle / 2.0
    zero = xnp.zeros_like(angle)
    parts = [zero, zero, zero, xnp.cos(half)]
    parts[axis] = xnp.sin(half)
    return xnp.stack(parts, axis=-1)


def _as_matrix(quat):
    x, y, z, w = (quat[..., i] for i in range(4))
    x2, y2, z2, w2 = x * x, y * y, z * z, w * w
    xy, zw, xz, yw, yz, xw = x * y, z * w, x * z, y * w, y * z, x * w
    rows = [
        [x2 - y2 - z2 + w2, 2 * (xy - zw), 2 * (xz + yw)],
        [2 * (xy + zw), -x2 + y2 - z2 + w2, 2 * (yz - xw)],
        [2 * (xz - yw), 2 * (yz + xw), -x2 - y2 + z2 + w2],
    ]
    return xnp.stack([xnp.stack(row, axis=-1) for row in rows], axis=-2)


def _from_matrix(matrix):
    """Shepperd's method: build from the largest of the diagonal entries and the trace."""
    m = lambda i, j: matrix[..., i, j]  # noqa: E731
    trace = m(0, 0) + m(1, 1) + m(2, 2)
    candidates = []
    for i in range(3):
        j, k = (i + 1) % 3, (i + 2) % 3
        q = [None] * 4
        q[i] = 1 - trace + 2 * m(i, i)
        q[j] = m(j, i) + m(i, j)
        q[k] = m(k, i) + m(i, k)
        q[3] = m(k, j) - m(j, k)
        candidates.append(xnp.stack(q, axis=-1))
    candidates.append(
        xnp.stack([m(2, 1) - m(1, 2), m(0, 2) - m(2, 0), m(1, 0) - m(0, 1), 1 + trace], axis=-1)
    )
    choice = xnp.argmax(xnp.stack([m(0, 0), m(1, 1), m(2, 2), trace], axis=-1), axis=-1)
    quat = xnp.take_along_axis(xnp.stack(candidates, axis=-2), choice[..., None, None], axis=-2)[
        ..., 0, :
    ]
    return _normalize(quat)


def _from_rotvec(rotvec, degrees):
    if degrees:
        rotvec = xnp.deg2rad(rotvec)
    angle = _norm(rotvec)
    angle2 = angle * angle
    small = 0.5 - angle2 / 48 + angle2 * angle2 / 3840  # Taylor series near zero
    scale = xnp.where(angle <= 1e-3, small, xnp.sin(angle / 2) / angle)
    return xnp.concatenate([scale[..., None] * rotvec, xnp.cos(angle / 2)[..., None]], axis=-1)


def _as_rotvec(quat, degrees):
    quat = xnp.where(quat[..., 3:] < 0, -quat, quat)  # w >= 0: angle in [0, pi]
    angle = 2.0 * xnp.arctan2(_norm(quat[..., :3]), quat[..., 3])
    angle2 = angle * angle
    small = 2 + angle2 / 12 + 7 * angle2 * angle2 / 2880
    scale = xnp.where(angle <= 1e-3, small, angle / xnp.sin(angle / 2))
    if degrees:
        scale = xnp.rad2deg(scale)
    return scale[..., None] * quat[..., :3]


def _from_mrp(mrp):
    s = xnp.sum(mrp * mrp, axis=-1)[..., None] + 1
    return xnp.concatenate([2 * mrp[..., :3], 2 - s], axis=-1) / s


def _as_mrp(quat):
    sign = xnp.where(quat[..., 3:] < 0, -1.0, 1.0)
    return sign * quat[..., :3] / (1.0 + sign * quat[..., 3:])


def _as_euler(quat, axes, extrinsic, degrees):
    """Euler angles by Bernardes & Viollet's method (as SciPy), axes known statically."""
    if not extrinsic:
        axes = axes[::-1]
    i, j, k = axes
    symmetric = i == k
    if symmetric:
        k = 3 - i - j
    sign = (i - j) * (j - k) * (k - i) // 2
    q = lambda n: quat[..., n]  # noqa: E731
    if symmetric:
        a, b, c, d = q(3), q(i), q(j), q(k) * sign
    else:
        a, b, c, d = q(3) - q(j), q(i) + q(k) * sign, q(j) + q(3), q(k) * sign - q(i)
    eps = 1e-7
    middle = 2 * xnp.arctan2(xnp.hypot(c, d), xnp.hypot(a, b))
    case = xnp.where(xnp.abs(middle - np.pi) <= eps, 2, 0)
    case = xnp.where(xnp.abs(middle) <= eps, 1, case)  # 1, 2: gimbal lock
    half_sum, half_diff = xnp.arctan2(b, a), xnp.arctan2(d, c)
    angles = [
        xnp.where(case == 1, 2 * half_sum, 2 * half_diff * (-1 if extrinsic else 1)),
        middle,
        xnp.zeros_like(middle),
    ]
    first, third = (0, 2) if extrinsic else (2, 0)
    angles[first] = xnp.where(case == 0, half_sum - half_diff, angles[first])
    angles[third] = xnp.where(case == 0, half_sum + half_diff, angles[third])
    if not symmetric:
        angles[third] = angles[third] * sign
        angles[1] = angles[1] - np.pi / 2
    angles = (xnp.stack(angles, axis=-1) + np.pi) % (2 * np.pi) - np.pi
    return xnp.rad2deg(angles) if degrees else angles


def _make_canonical(quat):
    """``quat`` or ``-quat``: the one whose first nonzero entry among (w, x, y, z) is
    positive."""
    neg, zero = quat < 0, quat == 0
    flip = (
        neg[..., 3]
        | (zero[..., 3] & neg[..., 0])
        | (zero[..., 3] & zero[..., 0] & neg[..., 1])
        | (zero[..., 3] & zero[..., 0] & zero[..., 1] & neg[..., 2])
    )
    return xnp.where(flip[..., None], -quat, quat)


class Rotation(typing.NamedTuple):
    """Rotations in three dimensions, as ``jax.scipy.spatial.transform.Rotation``.

    Example:
      >>> r = Rotation.from_euler("z", 90, degrees=True)
      >>> r.apply(xnp.array([1., 0., 0.]))   # about [0, 1, 0]
    """

    quat: typing.Any

    @classmethod
    def concatenate(cls, rotations: typing.Sequence):
        """The rotations of a sequence of ``Rotation`` objects, one after another."""
        return cls(xnp.concatenate([xnp.atleast_2d(r.quat) for r in rotations]))

    @classmethod
    def from_euler(cls, seq: str, angles, degrees: bool = False):
        """From Euler angles about axes ``seq`` (``"xyz"`` extrinsic, ``"XYZ"`` intrinsic)."""
        axes, intrinsic = _check_seq(seq, "from_euler", exact3=False)
        angles = xnp.atleast_1d(angles)
        angles = angles.astype(xnp.result_type(angles, float))
        if angles.shape[-1] != len(axes):
            raise ValueError(
                f"Rotation.from_euler: expected angles of shape (..., "
                f"{len(axes)}) for seq {seq!r}, got shape {angles.shape}"
            )
        if degrees:
            angles = xnp.deg2rad(angles)
        result = _elementary_quat(axes[0], angles[..., 0])
        for n in range(1, len(axes)):
            quat = _elementary_quat(axes[n], angles[..., n])
            result = _compose(result, quat) if intrinsic else _compose(quat, result)
        return cls(result)

    @classmethod
    def from_matrix(cls, matrix):
        """From rotation matrices, shape ``(3, 3)`` or ``(N, 3, 3)``."""
        return cls(_from_matrix(xnp.asarray(matrix)))

    @classmethod
    def from_mrp(cls, mrp):
        """From Modified Rodrigues Parameters, shape ``(3,)`` or ``(N, 3)``."""
        return cls(_from_mrp(xnp.asarray(mrp)))

    @classmethod
    def from_quat(cls, quat):
        """From quaternions ``(x, y, z, w)``, normalised."""
        return cls(_normalize(xnp.asarray(quat)))

    @classmethod
    def from_rotvec(cls, rotvec, degrees: bool = False):
        """From rotation vectors (axis times angle)."""
        return cls(_from_rotvec(xnp.asarray(rotvec), degrees))

    @classmethod
    def identity(cls, num: int | None = None, dtype=float):
        """The identity rotation (``num`` of them if given)."""
        quat = xnp.array([0.0, 0.0, 0.0, 1.0], dtype=dtype)
        return cls(quat if num is None else xnp.tile(quat, (num, 1)))

    @classmethod
    def random(cls, random_key, num: int | None = None):
        """Uniformly distributed rotations (normalised Gaussian quaternions).

        JAX leaves this unimplemented; here it draws from ``xform.random.normal``.
        """
        shape = (4,) if num is None else (num, 4)
        return cls(_normalize(xrandom.normal(random_key, shape)))

    def __getitem__(self, indexer):
        """The rotation(s) at ``indexer``."""
        if self.single:
            raise TypeError("Single rotation is not subscriptable.")
        return Rotation(self.quat[indexer])

    def __len__(self):
        """The number of rotations held."""
        if self.single:
            raise TypeError("Single rotation has no len().")
        return self.quat.shape[0]

    def __mul__(self, other):
        """The composition: ``other`` applied first, then ``self``."""
        return Rotation.from_quat(_compose(self.quat, other.quat))

    def apply(self, vectors, inverse: bool = False):
        """Rotate ``vectors`` (shape ``(3,)`` or ``(N, 3)``), or undo the rotation."""
        matrix = self.as_matrix()
        if inverse:
            matrix = xnp.swapaxes(matrix, -1, -2)
        return xnp.matmul(matrix, xnp.asarray(vectors)[..., None])[..., 0]

    def as_euler(self, seq: str, degrees: bool = False):
        """Euler angles about the three axes of ``seq``, in radians unless ``degrees``."""
        axes, intrinsic = _check_seq(seq, "as_euler", exact3=True)
        return _as_euler(self.quat, axes, not intrinsic, degrees)

    def as_matrix(self):
        """Rotation matrices, shape ``(3, 3)`` or ``(N, 3, 3)``."""
        return _as_matrix(self.quat)

    def as_mrp(self):
        """Modified Rodrigues Parameters."""
        return _as_mrp(self.quat)

    def as_rotvec(self, degrees: bool = False):
        """Rotation vectors (axis times angle, angle in [0, pi])."""
        return _as_rotvec(self.quat, degrees)

    def as_quat(self, canonical: bool = False, scalar_first: bool = False):
        """Quaternions, ``(x, y, z, w)`` or (``scalar_first``) ``(w, x, y, z)``."""
        quat = _make_canonical(self.quat) if canonical else self.quat
        return xnp.roll(quat, shift=1, axis=-1) if scalar_first else quat

    def inv(self):
        """The inverse rotation(s)."""
        return Rotation(self.quat * xnp.array([-1, -1, -1, 1], dtype=self.quat.dtype))

    def magnitude(self):
        """The rotation angle(s), in [0, pi]."""
        return 2.0 * xnp.arctan2(_norm(self.quat[..., :3]), xnp.abs(self.quat[..., 3]))

    def mean(self, weights=None):
        """The (weighted) mean rotation, by Markley's eigenvector method."""
        w = (
            xnp.ones(self.quat.shape[0], dtype=self.quat.dtype)
            if weights is None
            else xnp.asarray(weights, dtype=self.quat.dtype)
        )
        if w.ndim != 1:
            raise ValueError(
                f"Rotation.mean: expected `weights` to be 1 dimensional, got shape {w.shape}."
            )
        if w.shape[0] != len(self):
            raise ValueError(
                "Rotation.mean: expected `weights` to have number of values "
                f"equal to number of rotations, got {w.shape[0]} values and "
                f"{len(self)} rotations."
            )
        k = xnp.dot(w[None, :] * self.quat.T, self.quat)
        _, v = xnp.linalg.eigh(k)
        return Rotation(v[:, -1])

    @property
    def single(self) -> bool:
        """Whether this holds a single rotation (``quat`` of shape ``(4,)``)."""
        return self.quat.ndim == 1


class Slerp(typing.NamedTuple):
    """Spherical linear interpolation of rotations, as ``jax``'s ``Slerp``.

    Example:
      >>> s = Slerp.init(xnp.array([0., 1.]), Rotation.from_euler("z", [[0.], [90.]],
      ...                                                        degrees=True))
      >>> s(0.5).as_euler("zyx", degrees=True)   # about [45, 0, 0]
    """

    times: typing.Any
    timedelta: typing.Any
    rotations: Rotation
    rotvecs: typing.Any

    @classmethod
    def init(cls, times, rotations: Rotation):
        """Interpolate between ``rotations`` (at least two) keyed at increasing ``times``."""
        if not isinstance(rotations, Rotation):
            raise TypeError(
                "Slerp.init: `rotations` must be a `Rotation` instance, got "
                f"{type(rotations).__name__}."
            )
        if rotations.single or len(rotations) == 1:
            raise ValueError("Slerp.init: `rotations` must be a sequence of at least 2 rotations.")
        times = xnp.asarray(times, dtype=rotations.quat.dtype)
        if times.ndim != 1:
            raise ValueError(
                "Slerp.init: expected times to be specified in a 1 dimensional "
                f"array, got {times.ndim} dimensions."
            )
        if times.shape[0] != len(rotations):
            raise ValueError(
                "Slerp.init: expected number of rotations to be equal to number "
                f"of timestamps given, got {len(rotations)} rotations and "
                f"{times.shape[0]} timestamps."
            )
        starts = Rotation(rotations.quat[:-1])
        steps = starts.inv() * Rotation(rotations.quat[1:])
        return cls(
            times=times, timedelta=xnp.diff(times), rotations=starts, rotvecs=steps.as_rotvec()
        )

    def __call__(self, times):
        """The interpolated rotation(s) at ``times`` (a scalar or a 1-D array)."""
        t = xnp.asarray(times, dtype=self.times.dtype)
        if t.ndim > 1:
            raise ValueError(f"Slerp: `times` must be at most 1-dimensional, got shape {t.shape}.")
        single = t.ndim == 0
        t = xnp.atleast_1d(t)
        ind = xnp.maximum(xnp.searchsorted(self.times, t) - 1, 0)
        alpha = (t - self.times[ind]) / self.timedelta[ind]
        result = self.rotations[ind] * Rotation.from_rotvec(self.rotvecs[ind] * alpha[:, None])
        return result[0] if single else result

"""Exponential mechanism over public points with utility −haversine distance (ALGORITHM §3.2)."""

from __future__ import annotations

import math
from typing import Any, NoReturn

import numpy as np
import numpy.typing as npt

from geoldp._core import kernels as _kernels
from geoldp._core.geo import to_radians
from geoldp._core.pointset import PointSet
from geoldp._core.randomness import resolve_rng
from geoldp._core.validation import check_epsilon
from geoldp.mechanisms._base import CHUNK_CELLS


def em_epsilon_limit(m: int) -> float:
    """Float-margin limit of the EM budget for a public set of ``m`` points (ALGORITHM §3.2).

    A budget ε′ is valid only if ``ε′ < 2·(52·ln 2 − ln 10 − 2·ln m)``, i.e. the smallest probability
    ``e^{−ε′/2}/m`` stays above ``10·m·2⁻⁵²``.

    Examples
    --------
    >>> round(em_epsilon_limit(262), 1), round(em_epsilon_limit(10_000), 1), round(em_epsilon_limit(10**6), 1)
    (45.2, 30.6, 12.2)
    """
    return 2.0 * (52.0 * math.log(2.0) - math.log(10.0) - 2.0 * math.log(m))


def check_em_epsilon(
    epsilon: object, m: int, *, caller: str, stage: str = "EM", name: str = "epsilon"
) -> float:
    """Validate an EM budget (finite, > 0) and the float-margin rule; ``ValueError`` names the stage."""
    eps = check_epsilon(epsilon, caller=caller, name=name)
    limit = em_epsilon_limit(m)
    if not eps < limit:
        raise ValueError(
            f"The {stage} budget of {caller} ({eps:.6g}) exceeds the float-margin limit {limit:.6g} "
            "for a public "
            f"set of {m} points."
        )
    return eps


def _distances(x_lam: np.ndarray, x_phi: np.ndarray, points: PointSet, domain: np.ndarray) -> np.ndarray:
    out = np.empty((x_lam.shape[0], domain.shape[0]))
    _kernels.haversine_cross(
        np.ascontiguousarray(x_lam), np.ascontiguousarray(x_phi), points.lam[domain], points.phi[domain], out
    )
    return out


def em_log_weights(
    x_lam: npt.ArrayLike,
    x_phi: npt.ArrayLike,
    points: PointSet,
    domain: np.ndarray | None,
    epsilon: float,
    *,
    shift: bool = False,
) -> np.ndarray:
    """Unnormalised EM log-weights ``ℓ_r = −(ε′·d(x, P_r)) / (2Δ)`` for r in ``domain``.

    With ``shift=True`` the max-subtracted form ``ℓ_r − max ℓ = −(ε′·(d_r − min_s d_s)) / (2Δ)`` is returned,
    evaluated on the distance *differences*: for inputs far from P (|ℓ| ~ 10⁵) this keeps the pmf accurate to
    ~1e−15 relative, where subtracting two large log-weights would lose ~1e−11. This is the form the
    primitive's pmf and sampler use.

    Parameters
    ----------
    x_lam, x_phi : array_like
        Private input locations in **radians** (1-D, or scalars).
    points : PointSet
        The public set; Δ = ``points.diameter_m``.
    domain : array_like of int or None
        Sorted output indices; ``None`` for all of P.
    epsilon : float
        Budget ε′ (validated by the caller).

    Returns
    -------
    numpy.ndarray
        Shape (n, |S|) (or (|S|,) for scalar input).
    """
    x_lam = np.asarray(x_lam, dtype=np.float64)
    x_phi = np.asarray(x_phi, dtype=np.float64)
    scalar = x_lam.ndim == 0
    dom = np.arange(points.size, dtype=np.int64) if domain is None else np.asarray(domain, dtype=np.int64)
    d = _distances(x_lam.reshape(-1), x_phi.reshape(-1), points, dom)
    if shift:
        d = d - d.min(axis=1, keepdims=True)
    lw = -(epsilon * d) / (2.0 * points.diameter_m)
    return lw[0] if scalar else lw


def _log_normalise(lw: np.ndarray) -> np.ndarray:
    """``ℓ − logsumexp(ℓ)`` as ``ℓ − max − log1p(Σ_{r ≠ argmax} exp(ℓ_r − max))``.

    Accurate also when one weight dominates (``log`` of a sum close to 1 would lose precision).
    """
    mx = lw.max(axis=-1, keepdims=True)
    w = np.exp(lw - mx)
    np.put_along_axis(w, np.argmax(lw, axis=-1)[..., None], 0.0, axis=-1)
    return lw - (mx + np.log1p(w.sum(axis=-1, keepdims=True)))


def _normalise(lw: np.ndarray) -> np.ndarray:
    w = np.exp(lw - lw.max(axis=-1, keepdims=True))
    return w / w.sum(axis=-1, keepdims=True)


class ExponentialMechanism:
    """Exponential mechanism: release a public point index, favouring points close to the private location.

    Parameters
    ----------
    epsilon : float
        Budget ε′ > 0, below the float-margin limit :func:`em_epsilon_limit` of ``points.size``.
    points : PointSet
        The public set P (its exact diameter Δ is the sensitivity).
    domain : array_like of int, optional
        Output domain S ⊆ P as indices (sorted and de-duplicated here); default all of P. It must be public
        (never computed from the private input).

    Notes
    -----
    Pr[r | x] ∝ exp(−ε′·d(x, P_r)/(2Δ)) for r ∈ S, computed in log space with max subtraction. For any x and
    r, r′: abs(d(x, P_r) − d(x, P_r′)) ≤ Δ, so every probability lies in [e^{−ε′/2}/|S|, e^{ε′/2}/|S|] and two
    inputs' pmfs differ by at most e^{ε′}: ε′-LDP for arbitrary input locations (ALGORITHM §9.3).
    Sampling is ``categorical(pmf)`` (inverse CDF) in ascending index order. If |S| = 1 the single element is
    returned **without consuming randomness**. Runtime O(n·|S|); memory is bounded by chunking.

    References
    ----------
    Y. Zhang et al., PVLDB 16(10), 2023 (Eq. 5), https://arxiv.org/abs/2307.09339;
    F. McSherry and K. Talwar, "Mechanism design via differential privacy", FOCS 2007.

    Examples
    --------
    >>> from geoldp import PointSet
    >>> ps = PointSet([0.0, 0.01, 0.02], [0.0, 0.0, 0.0])
    >>> em = ExponentialMechanism(epsilon=1.0, points=ps)
    >>> round(float(em.probabilities(0.0, 0.0).sum()), 12)
    1.0
    """

    __slots__ = ("domain", "epsilon", "points")
    epsilon: float
    points: PointSet
    domain: np.ndarray | None

    def __init__(self, *, epsilon: float, points: PointSet, domain: npt.ArrayLike | None = None) -> None:
        if not isinstance(points, PointSet):
            raise TypeError(
                "The 'points' parameter of ExponentialMechanism must be a PointSet. "
                f"Got {type(points).__name__}."
            )
        eps = check_em_epsilon(epsilon, points.size, caller="ExponentialMechanism")
        if domain is None:
            dom = None
        else:
            arr = np.asarray(domain)
            if arr.size == 0:
                raise ValueError("The 'domain' parameter of ExponentialMechanism must not be empty.")
            if arr.dtype.kind not in "iu":
                raise TypeError(
                    "The 'domain' parameter of ExponentialMechanism must be an integer array. "
                    f"Got dtype {arr.dtype}."
                )
            dom = np.unique(arr.astype(np.int64).reshape(-1))
            if dom[0] < 0 or dom[-1] >= points.size:
                raise ValueError(
                    "The 'domain' parameter of ExponentialMechanism must hold indices in "
                    f"[0, {points.size - 1}]."
                )
            dom.flags.writeable = False
        object.__setattr__(self, "epsilon", eps)
        object.__setattr__(self, "points", points)
        object.__setattr__(self, "domain", dom)

    def __setattr__(self, name: str, value: Any) -> NoReturn:
        raise AttributeError("ExponentialMechanism is immutable.")

    def __reduce__(self) -> tuple[Any, ...]:
        domain = None if self.domain is None else np.array(self.domain)
        return (_rebuild_em, (self.epsilon, self.points, domain))

    def __repr__(self) -> str:
        dom = "None" if self.domain is None else f"<{self.domain.size} indices>"
        return f"ExponentialMechanism(epsilon={self.epsilon!r}, points={self.points!r}, domain={dom})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ExponentialMechanism):
            return NotImplemented
        same_dom = (self.domain is None and other.domain is None) or (
            self.domain is not None and other.domain is not None and np.array_equal(self.domain, other.domain)
        )
        return self.epsilon == other.epsilon and self.points == other.points and same_dom

    # Defining __eq__ without __hash__ makes instances unhashable (Python sets __hash__ to None).

    @property
    def support(self) -> np.ndarray:
        """The ordered output set S (int64 indices)."""
        return np.arange(self.points.size, dtype=np.int64) if self.domain is None else np.array(self.domain)

    def _inputs(self, lon: npt.ArrayLike, lat: npt.ArrayLike) -> tuple[np.ndarray, np.ndarray]:
        lon = np.asarray(lon, dtype=np.float64)
        lat = np.asarray(lat, dtype=np.float64)
        lon, lat = np.broadcast_arrays(lon, lat)
        if not (np.all(np.isfinite(lon)) and np.all(np.isfinite(lat))):
            raise ValueError("The 'lon' and 'lat' parameters of ExponentialMechanism must be finite.")
        if np.any(np.abs(lat) > 90.0) or np.any(np.abs(lon) > 180.0):
            raise ValueError(
                "The 'lon' and 'lat' parameters of ExponentialMechanism must be in [-180, 180] and [-90, 90]."
            )
        return to_radians(lon, lat)

    def log_weights(self, lon: npt.ArrayLike, lat: npt.ArrayLike, *, shift: bool = False) -> np.ndarray:
        """Unnormalised log-weights over :attr:`support` for (lon, lat), degrees (:func:`em_log_weights`)."""
        lam, phi = self._inputs(lon, lat)
        return em_log_weights(lam, phi, self.points, self.domain, self.epsilon, shift=shift)

    def log_probabilities(self, lon: npt.ArrayLike, lat: npt.ArrayLike) -> np.ndarray:
        """Exact log-pmf over :attr:`support`: shape (|S|,) for a scalar location, (n, |S|) for arrays."""
        return _log_normalise(self.log_weights(lon, lat, shift=True))

    def probabilities(self, lon: npt.ArrayLike, lat: npt.ArrayLike) -> np.ndarray:
        """Exact pmf over :attr:`support` (``exp(ℓ − max ℓ)`` normalised), the vector the sampler uses."""
        return _normalise(self.log_weights(lon, lat, shift=True))

    def perturb(self, lon: npt.ArrayLike, lat: npt.ArrayLike, *, rng: Any = None) -> np.ndarray:
        """Release one public point index per input location (int64, same shape as the broadcast input)."""
        lam, phi = self._inputs(lon, lat)
        source = resolve_rng(rng)
        shape = lam.shape
        lam = lam.reshape(-1)
        phi = phi.reshape(-1)
        support = self.support
        n = lam.shape[0]
        out = np.empty(n, dtype=np.int64)
        if support.size == 1:
            out[:] = support[0]
            return out.reshape(shape)
        rows = max(1, CHUNK_CELLS // support.size)
        for start in range(0, n, rows):
            stop = min(n, start + rows)
            lw = em_log_weights(
                lam[start:stop], phi[start:stop], self.points, self.domain, self.epsilon, shift=True
            )
            j = np.asarray(source.categorical(_normalise(lw)), dtype=np.int64)
            out[start:stop] = support[j]
        return out.reshape(shape)


def _rebuild_em(epsilon: float, points: PointSet, domain: np.ndarray | None) -> ExponentialMechanism:
    return ExponentialMechanism(epsilon=epsilon, points=points, domain=domain)


def exponential(
    lon: npt.ArrayLike,
    lat: npt.ArrayLike,
    *,
    points: PointSet,
    epsilon: float,
    domain: npt.ArrayLike | None = None,
    rng: Any = None,
) -> np.ndarray:
    """Exponential mechanism, functional form of :class:`ExponentialMechanism` (see there)."""
    return ExponentialMechanism(epsilon=epsilon, points=points, domain=domain).perturb(lon, lat, rng=rng)

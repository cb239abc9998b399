"""Square-Wave mechanism on [0, 1] (ALGORITHM §3.3), bucketed (default) or continuous output."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numba
import numpy as np
import numpy.typing as npt

from geoldp._core.randomness import resolve_rng
from geoldp._core.validation import check_epsilon, check_int_range
from geoldp.mechanisms._base import CHUNK_CELLS, EPS_MAX, MAX_SW_BUCKETS

_SERIES_FACT = [math.factorial(m) for m in range(2, 12)]


def sw_half_width(epsilon: float) -> float:
    """Stable half-width b(ε) = (εe^ε − e^ε + 1)/(2e^ε(e^ε − 1 − ε)) of the Square-Wave window.

    Evaluated by cases (ALGORITHM §3.3): a Taylor series below 0.01, ``(ε + expm1(−ε))/(2(expm1(ε) − ε))``
    up to 1, and ``(ε − 1 + t)·t/(2(1 − (1 + ε)t))`` with t = e^{−ε} above 1. Relative error < 1e−13 on
    (0, 700].

    Examples
    --------
    >>> round(sw_half_width(1.0), 6), round(sw_half_width(4.0), 6)
    (0.256083, 0.030428)
    """
    e = float(epsilon)
    if e < 0.01:
        f = 0.0
        g = 0.0
        for i, fact in enumerate(_SERIES_FACT):  # m = i + 2
            term = e**i / fact
            f += term if i % 2 == 0 else -term
            g += term
        return f / (2.0 * g)
    if e <= 1.0:
        return (e + math.expm1(-e)) / (2.0 * (math.expm1(e) - e))
    t = math.exp(-e)
    return (e - 1.0 + t) * t / (2.0 * (1.0 - (1.0 + e) * t))


def sw_densities(epsilon: float) -> tuple[float, float, float]:
    """Return ``(b, p_sw, q_sw)``: half-width, high density 1/(2b + e^{−ε}), low density e^{−ε}·p_sw."""
    b = sw_half_width(epsilon)
    t = math.exp(-epsilon)
    den = 2.0 * b + t
    return b, 1.0 / den, t / den


@numba.njit(cache=True)
def _masses_kernel(
    v: np.ndarray, edges: np.ndarray, b: float, w: float, p: float, q: float, out: np.ndarray
) -> np.ndarray:
    n, m = out.shape
    for r in range(n):
        for j in range(m):
            hi = min(edges[j + 1] - v[r], b)
            lo = max(edges[j] - v[r], -b)
            ov = hi - lo
            if ov < 0.0:
                ov = 0.0
            out[r, j] = w * q + (p - q) * ov
    return out


def sw_bucket_masses(v: npt.ArrayLike, epsilon: float, M: int) -> np.ndarray:
    """Exact probability of each of the M public buckets of [−b, 1+b] for inputs v ∈ [0, 1].

    Mass of bucket j = w·q_sw + (p_sw − q_sw)·|B_j ∩ [v − b, v + b]|, w = (1 + 2b)/M. The overlap is
    computed relative to v (``min(e_{j+1} − v, b) − max(e_j − v, −b)``), so a window narrower than the float
    spacing near v (large ε) keeps its full mass 2b, and the outer edges are open so that the
    window always has total overlap 2b.

    Returns
    -------
    numpy.ndarray
        Shape (M,) for scalar v, (n, M) for an array.
    """
    v_arr = np.asarray(v, dtype=np.float64)
    b, p, q = sw_densities(epsilon)
    w = (1.0 + 2.0 * b) / M
    edges = -b + np.arange(M + 1, dtype=np.float64) * w
    # The window [v − b, v + b] always lies inside [−b, 1 + b]; open the outer edges so that rounding of
    # −b + M·w (which can fall below 1 + b) never cuts it.
    edges[0] = -np.inf
    edges[-1] = np.inf
    flat = np.ascontiguousarray(v_arr.reshape(-1))
    masses = _masses_kernel(flat, edges, b, w, p, q, np.empty((flat.shape[0], M)))
    return masses[0] if v_arr.ndim == 0 else masses.reshape(v_arr.shape + (M,))


@dataclass(frozen=True)
class SquareWave:
    """Square-Wave mechanism for values in [0, 1].

    Parameters
    ----------
    epsilon : float
        Budget, 0 < ε ≤ 700.
    buckets : int, default 1024
        Number M of equal public buckets of the output range [−b, 1 + b], 2 ≤ M ≤ 10⁶
        (``geoldp.mechanisms._base.MAX_SW_BUCKETS``).
    continuous : bool, default False
        Release a float instead of a bucket midpoint. **Not recommended:** reachable floats leak
        information (Mironov); the bucketed default is exactly ε-LDP.

    Notes
    -----
    The output density is p_sw = 1/(2b + e^{−ε}) within b of v and q_sw = e^{−ε}·p_sw elsewhere in
    [−b, 1 + b]; p_sw/q_sw = e^ε, so every bucket mass lies in [w·q_sw, w·p_sw] and the release is
    ε-LDP. Bucketed sampling is ``categorical(bucket masses)``; the released value is the bucket midpoint
    −b + (j + ½)·w. Continuous sampling: ``bernoulli(2b·p_sw)`` then one ``uniform()``.

    References
    ----------
    Z. Li et al., "Estimating Numerical Distributions under Local Differential Privacy", SIGMOD 2020;
    Y. Zhang et al., PVLDB 16(10), 2023 (Eq. 4), https://arxiv.org/abs/2307.09339.

    Examples
    --------
    >>> sw = SquareWave(epsilon=1.0, buckets=8)
    >>> round(float(sw.probabilities(0.3).sum()), 12)
    1.0
    """

    epsilon: float
    buckets: int = 1024
    continuous: bool = False

    def __init__(self, *, epsilon: float, buckets: int = 1024, continuous: bool = False) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(epsilon, caller="SquareWave", maximum=EPS_MAX))
        buckets = check_int_range(buckets, "buckets", caller="SquareWave", minimum=2, maximum=MAX_SW_BUCKETS)
        object.__setattr__(self, "buckets", buckets)
        if not isinstance(continuous, (bool, np.bool_)):
            raise TypeError(
                f"The 'continuous' parameter of SquareWave must be a bool. Got {type(continuous).__name__}."
            )
        object.__setattr__(self, "continuous", bool(continuous))

    @property
    def b(self) -> float:
        """Half-width of the high-density window."""
        return sw_half_width(self.epsilon)

    @property
    def bucket_width(self) -> float:
        """The width w = (1 + 2b)/M."""
        return (1.0 + 2.0 * self.b) / self.buckets

    @property
    def midpoints(self) -> np.ndarray:
        """Released value of each bucket, −b + (j + ½)·w."""
        return -self.b + (np.arange(self.buckets) + 0.5) * self.bucket_width

    def _inputs(self, v: npt.ArrayLike) -> np.ndarray:
        arr = np.asarray(v)
        if arr.dtype.kind not in "iuf":
            raise TypeError(f"The 'v' parameter of SquareWave must be real numbers. Got dtype {arr.dtype}.")
        arr = arr.astype(np.float64)
        if not np.all((arr >= 0.0) & (arr <= 1.0)):
            raise ValueError("The 'v' parameter of SquareWave must be in [0, 1] (clip first).")
        return arr

    def probabilities(self, v: npt.ArrayLike) -> np.ndarray:
        """Exact bucket masses (M,) or (n, M): the pmf of the bucketed output.

        For ``continuous=True``, the probability that the float falls in each bucket.
        """
        return sw_bucket_masses(self._inputs(v), self.epsilon, self.buckets)

    def log_probabilities(self, v: npt.ArrayLike) -> np.ndarray:
        """Natural log of :meth:`probabilities`."""
        return np.log(self.probabilities(v))

    def density(self, y: npt.ArrayLike, v: npt.ArrayLike) -> np.ndarray:
        """Density of the continuous output at y for input v (0 outside [−b, 1 + b])."""
        v = self._inputs(v)
        y = np.asarray(y, dtype=np.float64)
        b, p, q = sw_densities(self.epsilon)
        inside = (y >= -b) & (y <= 1.0 + b)
        return np.where(inside, np.where(np.abs(y - v) <= b, p, q), 0.0)

    def cdf(self, y: npt.ArrayLike, v: npt.ArrayLike) -> np.ndarray:
        """CDF of the continuous output at y for input v."""
        v = self._inputs(v)
        y = np.asarray(y, dtype=np.float64)
        b, p, q = sw_densities(self.epsilon)
        yc = np.clip(y, -b, 1.0 + b)
        low_left = np.clip(np.minimum(yc, v - b) + b, 0.0, None)  # low-density part left of the window
        high = np.clip(np.minimum(yc, v + b) - (v - b), 0.0, 2 * b)
        low_right = np.clip(yc - (v + b), 0.0, None)
        return np.clip(q * low_left + p * high + q * low_right, 0.0, 1.0)

    def perturb_bucket(self, v: npt.ArrayLike, *, rng: Any = None) -> np.ndarray:
        """Bucketed release as bucket indices j ∈ {0, …, M−1} (int64, shape of v)."""
        arr = self._inputs(v)
        source = resolve_rng(rng)
        flat = arr.reshape(-1)
        out = np.empty(flat.shape[0], dtype=np.int64)
        rows = max(1, CHUNK_CELLS // self.buckets)
        for start in range(0, flat.shape[0], rows):
            stop = min(flat.shape[0], start + rows)
            masses = sw_bucket_masses(flat[start:stop], self.epsilon, self.buckets)
            out[start:stop] = np.asarray(source.categorical(masses), dtype=np.int64)
        return out.reshape(arr.shape)

    def perturb(self, v: npt.ArrayLike, *, rng: Any = None) -> np.ndarray:
        """Release noisy values in [−b, 1 + b] (bucket midpoints, or floats if ``continuous``)."""
        if not self.continuous:
            j = self.perturb_bucket(v, rng=rng)
            return -self.b + (j + 0.5) * self.bucket_width
        arr = self._inputs(v)
        source = resolve_rng(rng)
        b, p, _ = sw_densities(self.epsilon)
        flat = arr.reshape(-1)
        n = flat.shape[0]
        if n == 0:
            return np.empty(arr.shape)
        high = np.asarray(source.bernoulli(2.0 * b * p, size=n), dtype=bool)
        u = np.asarray(source.uniform(n), dtype=np.float64)
        y = np.where(high, flat - b + 2.0 * b * u, np.where(u < flat, u - b, u + b))
        return y.reshape(arr.shape)


def square_wave(v: npt.ArrayLike, *, epsilon: float, buckets: int = 1024, rng: Any = None) -> np.ndarray:
    """Bucketed Square-Wave release, functional form of :class:`SquareWave` (see there)."""
    return SquareWave(epsilon=epsilon, buckets=buckets).perturb(v, rng=rng)

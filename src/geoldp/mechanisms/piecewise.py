"""Piecewise mechanisms on a line segment and on the circle (Zheng & Hu, TraCS, PETS 2026, Defs. 3.1, 3.2).

Both release a continuous value whose density takes two levels: a high level on a window around the input
and a low level everywhere else, with high/low = e^ε, so they are ε-LDP. They are the primitives of
TraCS-D (a direction on the circle, a normalised distance on [0, 1]) and TraCS-C (two normalised
coordinates on [0, 1]). :doc:`/mechanisms` ("TraCS-D and TraCS-C: continuous space in a public box", The
primitives) gives both densities with t = e^{−ε/2}: the linear window [l(v), l(v) + 2C],
C = t/(2(1 + t)), l(v) = min(max(v − C, 0), 1 − 2C), and the circular arc of half-width a = π·t/(1 + t).
They come from total mass 1: 2C·e^{ε/2} + (1 − 2C)·e^{−ε/2} = 1 on [0, 1], and likewise for the arc; the
window (or arc) holds 1/(1 + t).

Sampling: ``bernoulli(1/(1 + t))`` picks the window, then one ``uniform()`` places the output uniformly in
the window or in its complement (the complement of the linear window is folded into one interval of length
1 − 2C; that of the arc starts at θ + a and runs 2π − 2a). Every ε adds noise (no shortcut that returns
the input at large ε, unlike the published code).

Limits. ε ≤ :data:`PIECEWISE_EPS_MAX` = 50: there the window is still ≥ 6.9·10⁻¹² wide on [0, 1]
(≈ 3·10⁴ representable floats below 1) and the arc ≥ 4.4·10⁻¹¹ rad (≈ 5·10⁴ floats near 2π). As for the
continuous Square-Wave option, a float output has reachable-value leaks at the level of single floats
(Mironov 2012); the two-level density itself is exactly ε-LDP.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from geoldp._core.kernels import TWO_PI, jit, jit_inline
from geoldp._core.randomness import resolve_rng
from geoldp._core.validation import check_epsilon, check_int_range

#: Largest ε a piecewise mechanism accepts (see the module notes).
PIECEWISE_EPS_MAX = 50.0


@jit_inline
def linear_params(epsilon: float) -> tuple[float, float]:
    """``(C, high)``: half-width C = t/(2(1 + t)) of the window and its mass 1/(1 + t), t = e^{−ε/2}."""
    t = math.exp(-0.5 * epsilon)
    return 0.5 * t / (1.0 + t), 1.0 / (1.0 + t)


@jit_inline
def circular_params(epsilon: float) -> tuple[float, float]:
    """``(a, high)``: half-width a = π·t/(1 + t) of the arc and its mass 1/(1 + t), t = e^{−ε/2}."""
    t = math.exp(-0.5 * epsilon)
    return math.pi * t / (1.0 + t), 1.0 / (1.0 + t)


@jit_inline
def split_uniform(u: float, high: float) -> tuple[bool, float]:
    """One uniform u ∈ [0, 1) as the window branch (u < high) and a fresh uniform for the position.

    Given the branch, u/high (resp. (u − high)/(1 − high)) is uniform on [0, 1): the trajectory kernels
    draw one uniform per stage instead of a ``bernoulli`` and a ``uniform`` (half the random words).
    """
    if u < high:
        return True, u / high
    w = (u - high) / (1.0 - high)
    if w >= 1.0:  # 1 − high rounds at large ε
        w = 0.9999999999999999
    return False, w


@jit_inline
def linear_window_start(v: float, c: float) -> float:
    """Start l(v) = min(max(v − C, 0), 1 − 2C) of the high-density window [l, l + 2C] of input v."""
    lo = v - c
    if lo < 0.0:
        lo = 0.0
    top = 1.0 - 2.0 * c
    if lo > top:
        lo = top
    return lo


@jit_inline
def linear_sample(v: float, c: float, high: bool, u: float) -> float:
    """One linear piecewise output for input v ∈ [0, 1]: ``high`` = the window branch, ``u`` uniform."""
    lo = linear_window_start(v, c)
    if high:
        y = lo + 2.0 * c * u
    else:
        y = u * (1.0 - 2.0 * c)  # the complement [0, lo) ∪ [lo + 2C, 1], folded
        if y >= lo:
            y += 2.0 * c
    if y > 1.0:
        y = 1.0
    elif y < 0.0:
        y = 0.0
    return y


@jit_inline
def circular_sample(theta: float, a: float, high: bool, u: float) -> float:
    """One circular piecewise output for θ ∈ [0, 2π): ``high`` = the arc branch, ``u`` uniform."""
    if high:
        y = theta + a * (2.0 * u - 1.0)
    else:
        y = theta + a + u * (TWO_PI - 2.0 * a)
    y = y - TWO_PI * math.floor(y / TWO_PI)
    if y >= TWO_PI or y < 0.0:
        y = 0.0
    return y


@jit
def _linear_many(v: np.ndarray, epsilon: float, high: np.ndarray, u: np.ndarray, out: np.ndarray) -> None:
    c, _ = linear_params(epsilon)
    for i in range(out.shape[0]):
        out[i] = linear_sample(v[i], c, high[i], u[i])


@jit
def _circular_many(
    theta: np.ndarray, epsilon: float, high: np.ndarray, u: np.ndarray, out: np.ndarray
) -> None:
    a, _ = circular_params(epsilon)
    for i in range(out.shape[0]):
        out[i] = circular_sample(theta[i], a, high[i], u[i])


def _real_array(values: npt.ArrayLike, name: str, caller: str) -> np.ndarray:
    arr = np.asarray(values)
    if arr.dtype.kind not in "iuf":
        raise TypeError(f"The {name!r} parameter of {caller} must be real numbers. Got dtype {arr.dtype}.")
    return arr.astype(np.float64)


def _overlap(edges: np.ndarray, centre: np.ndarray, half: float) -> np.ndarray:
    """Length of [edges[j], edges[j + 1]] ∩ [centre − half, centre + half] for every bucket j.

    Computed relative to the centre (as the Square-Wave bucket masses), so a window narrower than the
    float spacing near it keeps its full length 2·half; the outer edges are open, so that rounding of a
    window that touches an end of the range never cuts it.
    """
    width = np.diff(edges)
    cut = edges.copy()
    cut[0] = -np.inf
    cut[-1] = np.inf
    return np.clip(np.minimum(cut[1:] - centre, half) - np.maximum(cut[:-1] - centre, -half), 0.0, width)


def _overlap_offsets(
    edges: np.ndarray, anchor: np.ndarray | float, lo: np.ndarray | float, hi: np.ndarray | float
) -> np.ndarray:
    """Length of [edges[j], edges[j + 1]] ∩ [anchor + lo, anchor + hi], measured from the anchor."""
    width = np.diff(edges)
    return np.clip(np.minimum(edges[1:] - anchor, hi) - np.maximum(edges[:-1] - anchor, lo), 0.0, width)


def _masses(overlap: np.ndarray, w: float, epsilon: float, length: float) -> np.ndarray:
    """Bucket masses (w·e^{−ε/2} + (e^{ε/2} − e^{−ε/2})·overlap)/length of the two-level density."""
    hi = math.exp(0.5 * epsilon)
    lo = math.exp(-0.5 * epsilon)
    return (w * lo + (hi - lo) * overlap) / length


@dataclass(frozen=True)
class _Piecewise:
    """Shared parts: ε validation and the two density levels."""

    epsilon: float

    def __init__(self, *, epsilon: float) -> None:
        caller = type(self).__name__
        object.__setattr__(self, "epsilon", check_epsilon(epsilon, caller=caller, maximum=PIECEWISE_EPS_MAX))

    @property
    def high_mass(self) -> float:
        """Probability 1/(1 + e^{−ε/2}) of the high-density window."""
        return 1.0 / (1.0 + math.exp(-0.5 * self.epsilon))

    def _release(self, values: npt.ArrayLike, rng: Any, kernel: Any) -> np.ndarray:
        # one window branch and one uniform per input, then the kernel (the samplers' arithmetic)
        arr = self._inputs(values)
        flat = np.ascontiguousarray(arr.reshape(-1))
        source = resolve_rng(rng)
        high = np.asarray(source.bernoulli(self.high_mass, size=flat.shape[0]), dtype=np.bool_)
        u = np.asarray(source.uniform(flat.shape[0]), dtype=np.float64)
        out = np.empty(flat.shape[0])
        kernel(flat, float(self.epsilon), high, u, out)
        return out.reshape(arr.shape)

    def _inputs(self, values: npt.ArrayLike) -> np.ndarray:
        raise NotImplementedError


@dataclass(frozen=True, init=False)
class PiecewiseLinear(_Piecewise):
    """Piecewise mechanism on [0, 1] (TraCS, Definition 3.2): ε-LDP for inputs v ∈ [0, 1].

    Parameters
    ----------
    epsilon : float
        Budget, 0 < ε ≤ 50.

    Notes
    -----
    With t = e^{−ε/2}, C = t/(2(1 + t)) and l(v) = min(max(v − C, 0), 1 − 2C), the output density is

        f(y | v) = e^{ε/2}   for y ∈ [l(v), l(v) + 2C],
        f(y | v) = e^{−ε/2}  for the other y ∈ [0, 1],

    so f(y | v)/f(y | v′) ≤ e^ε for all v, v′, y. The window holds mass 1/(1 + t).

    References
    ----------
    Y. Zheng, H. Hu. TraCS: Trajectory Collection in Continuous Space under Local Differential Privacy.
    PETS 2026.

    Examples
    --------
    >>> pw = PiecewiseLinear(epsilon=2.0)
    >>> round(pw.half_width, 6), round(float(pw.cdf(1.0, 0.3)), 12)
    (0.134471, 1.0)
    """

    @property
    def half_width(self) -> float:
        """C = t/(2(1 + t)), t = e^{−ε/2}."""
        return float(linear_params(self.epsilon)[0])

    def _inputs(self, v: npt.ArrayLike) -> np.ndarray:
        arr = _real_array(v, "v", type(self).__name__)
        if not np.all((arr >= 0.0) & (arr <= 1.0)):
            raise ValueError(f"The 'v' parameter of {type(self).__name__} must be in [0, 1] (clip first).")
        return arr

    def window(self, v: npt.ArrayLike) -> tuple[np.ndarray, np.ndarray]:
        """The high-density window ``(l(v), l(v) + 2C)`` of each input."""
        v = self._inputs(v)
        c = self.half_width
        lo = np.clip(v - c, 0.0, 1.0 - 2.0 * c)
        return lo, lo + 2.0 * c

    def density(self, y: npt.ArrayLike, v: npt.ArrayLike) -> np.ndarray:
        """Density of the output at y for input v (0 outside [0, 1])."""
        lo, hi = self.window(v)
        y = np.asarray(y, dtype=np.float64)
        level = np.where((y >= lo) & (y <= hi), math.exp(0.5 * self.epsilon), math.exp(-0.5 * self.epsilon))
        return np.where((y >= 0.0) & (y <= 1.0), level, 0.0)

    def cdf(self, y: npt.ArrayLike, v: npt.ArrayLike) -> np.ndarray:
        """Probability that the output is ≤ y, for input v."""
        lo, hi = self.window(v)
        yc = np.clip(np.asarray(y, dtype=np.float64), 0.0, 1.0)
        inside = np.clip(np.minimum(yc, hi) - lo, 0.0, None)
        outside = yc - inside
        return np.clip(inside * math.exp(0.5 * self.epsilon) + outside * math.exp(-0.5 * self.epsilon), 0, 1)

    def probabilities(self, v: npt.ArrayLike, buckets: int = 1024) -> np.ndarray:
        """Exact probability of each of ``buckets`` equal buckets of [0, 1], shape (M,) or (n, M).

        Mass of bucket B_j = w·e^{−ε/2} + (e^{ε/2} − e^{−ε/2})·|B_j ∩ window|, w = 1/M: between
        w·e^{−ε/2} and w·e^{ε/2} for every input, so any two rows differ by at most e^ε.
        """
        lo, _ = self.window(v)
        m = check_int_range(buckets, "buckets", caller=type(self).__name__, minimum=1)
        c = self.half_width
        edges = np.linspace(0.0, 1.0, m + 1)
        overlap = _overlap(edges, lo[..., None] + c, c)
        return _masses(overlap, 1.0 / m, self.epsilon, 1.0)

    def perturb(self, v: npt.ArrayLike, *, rng: Any = None) -> np.ndarray:
        """Release one noisy value in [0, 1] per input (same shape as ``v``)."""
        return self._release(v, rng, _linear_many)


@dataclass(frozen=True, init=False)
class PiecewiseCircular(_Piecewise):
    """Piecewise mechanism on the circle [0, 2π) (TraCS, Definition 3.1): ε-LDP for directions θ.

    Parameters
    ----------
    epsilon : float
        Budget, 0 < ε ≤ 50.

    Notes
    -----
    With t = e^{−ε/2}, a = π·t/(1 + t) and d(φ, θ) the distance on the circle, the output density is

        f(φ | θ) = e^{ε/2}/(2π)   for d(φ, θ) ≤ a,
        f(φ | θ) = e^{−ε/2}/(2π)  otherwise,

    so f(φ | θ)/f(φ | θ′) ≤ e^ε for all θ, θ′, φ. The arc holds mass 1/(1 + t).

    Examples
    --------
    >>> pc = PiecewiseCircular(epsilon=2.0)
    >>> round(pc.half_width, 6)
    0.844904
    """

    @property
    def half_width(self) -> float:
        """The constant a = π·t/(1 + t), t = e^{−ε/2}."""
        return float(circular_params(self.epsilon)[0])

    def _inputs(self, theta: npt.ArrayLike) -> np.ndarray:
        arr = _real_array(theta, "theta", type(self).__name__)
        if not np.all((arr >= 0.0) & (arr < TWO_PI)):
            raise ValueError(
                f"The 'theta' parameter of {type(self).__name__} must be in [0, 2π) (take it mod 2π first)."
            )
        return arr

    def density(self, phi: npt.ArrayLike, theta: npt.ArrayLike) -> np.ndarray:
        """Density of the output at φ for input θ (0 outside [0, 2π))."""
        theta = self._inputs(theta)
        phi = np.asarray(phi, dtype=np.float64)
        d = np.abs(phi - theta)
        d = np.minimum(d, TWO_PI - d)
        level = np.where(d <= self.half_width, math.exp(0.5 * self.epsilon), math.exp(-0.5 * self.epsilon))
        return np.where((phi >= 0.0) & (phi < TWO_PI), level / TWO_PI, 0.0)

    def cdf(self, phi: npt.ArrayLike, theta: npt.ArrayLike) -> np.ndarray:
        """Probability that the output is ≤ φ (measured from 0), for input θ."""
        theta = self._inputs(theta)
        a = self.half_width
        pc = np.clip(np.asarray(phi, dtype=np.float64), 0.0, TWO_PI)
        # the arc [θ − a, θ + a] as up to three pieces of [0, 2π): shifted by −2π, as is, shifted by +2π
        inside = np.zeros(np.broadcast(pc, theta).shape)
        for shift in (-TWO_PI, 0.0, TWO_PI):
            lo = np.clip(theta - a + shift, 0.0, TWO_PI)
            hi = np.clip(theta + a + shift, 0.0, TWO_PI)
            inside = inside + np.clip(np.minimum(pc, hi) - lo, 0.0, None)
        outside = pc - inside
        hi_d = math.exp(0.5 * self.epsilon) / TWO_PI
        lo_d = math.exp(-0.5 * self.epsilon) / TWO_PI
        return np.clip(inside * hi_d + outside * lo_d, 0.0, 1.0)

    def probabilities(self, theta: npt.ArrayLike, buckets: int = 1024) -> np.ndarray:
        """Exact probability of each of ``buckets`` equal arcs of [0, 2π), shape (M,) or (n, M).

        Mass of arc B_j = (w·e^{−ε/2} + (e^{ε/2} − e^{−ε/2})·|B_j ∩ arc(θ)|)/(2π), w = 2π/M.
        """
        theta = self._inputs(theta)[..., None]
        m = check_int_range(buckets, "buckets", caller=type(self).__name__, minimum=1)
        a = self.half_width
        edges = np.linspace(0.0, TWO_PI, m + 1)
        # the arc as up to two pieces, each measured from an anchor it contains exactly (θ, 0 or 2π), so
        # that a piece cut by the wrap keeps its length to the rounding of a (not of 2π)
        wrap_low = theta - a < 0.0
        wrap_high = theta + a >= TWO_PI
        lo = np.where(wrap_low, -theta, -a)
        hi = np.where(wrap_high, TWO_PI - theta, a)
        overlap = _overlap_offsets(edges, theta, lo, hi)
        overlap = overlap + np.where(wrap_low, _overlap_offsets(edges, TWO_PI, theta - a, 0.0), 0.0)
        overlap = overlap + np.where(wrap_high, _overlap_offsets(edges, 0.0, 0.0, (theta - TWO_PI) + a), 0.0)
        return _masses(overlap, TWO_PI / m, self.epsilon, TWO_PI)

    def perturb(self, theta: npt.ArrayLike, *, rng: Any = None) -> np.ndarray:
        """Release one noisy direction in [0, 2π) per input (same shape as ``theta``)."""
        return self._release(theta, rng, _circular_many)

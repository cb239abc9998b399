"""TraCS-D and TraCS-C: trajectories released in continuous space inside a public box (Zheng & Hu, 2026).

Both work on planar coordinates (a projected CRS, metres) inside a public box [x₀, x₁] × [y₀, y₁] and
need no public point set. The trajectory's ε is split evenly over its n locations (ε/n each, rounded down
exactly as the other ledgers), and each location is released once by the piecewise mechanisms of
:mod:`geoldp.mechanisms.piecewise`: **TraCS-D** as a direction and a normalised distance from a public
reference (the previous *released* location), **TraCS-C** as its two coordinates normalised by the box.
:doc:`/mechanisms` ("TraCS-D and TraCS-C: continuous space in a public box") gives the budget shares,
the references, the output and the guarantee (adaptive sequential composition: each location
(ε/n)-LDP, the trajectory ε-LDP for trajectories of the same length n). A location outside the box is
first moved to the nearest point of the box, and a location equal to its reference gets direction 0 and
distance 0: public rules applied to the input, so the guarantee holds for any input.

Randomness: trajectory ``i`` draws from the ChaCha20 stream ``offset + i`` under one key (as the fast path
of TP/ATP), per location one uniform for the direction (or x) and one for the distance (or y), each split
into the window branch and the position (:func:`geoldp.mechanisms.piecewise.split_uniform`).

References
----------
Y. Zheng, H. Hu. TraCS: Trajectory Collection in Continuous Space under Local Differential Privacy.
PETS 2026.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from numbers import Rational, Real
from typing import TYPE_CHECKING, Any, ClassVar

import numba
import numpy as np

from geoldp._core.aot import Entry, array
from geoldp._core.kernels import TWO_PI, jit, jit_inline
from geoldp._core.randomness import stream_reset, stream_uniform
from geoldp._core.validation import check_epsilon, check_option
from geoldp.budget import Ledger, LedgerEntry, exact_share
from geoldp.mechanisms.piecewise import (
    PIECEWISE_EPS_MAX,
    circular_params,
    circular_sample,
    linear_params,
    linear_sample,
    split_uniform,
)
from geoldp.trajectory._base import fraction_str, warn_large_epsilon
from geoldp.trajectory.tp import check_length

if TYPE_CHECKING:
    from geoldp._core.kernels import KernelInt

#: The paper's direction share π/(π + 1) of each location's budget (as the exact value of the float).
DEFAULT_DIRECTION_SHARE = Fraction(math.pi / (math.pi + 1.0))

_ORIGINS = ("centre", "corner")
#: |cos φ| or |sin φ| below this is taken as 0 by :func:`edge_distance`.
_AXIS = 1e-12


def check_box(bounds: Any, *, caller: str) -> tuple[float, float, float, float]:
    """Validate a public box ``(minx, miny, maxx, maxy)``: four finite reals with minx < maxx, miny < maxy."""
    try:
        values = tuple(bounds)
    except TypeError:
        raise TypeError(
            f"The 'bounds' parameter of {caller} must be a public box (minx, miny, maxx, maxy). "
            f"Got {type(bounds).__name__} instead."
        ) from None
    if len(values) != 4 or any(isinstance(v, bool) or not isinstance(v, Real) for v in values):
        raise TypeError(
            f"The 'bounds' parameter of {caller} must be four real numbers (minx, miny, maxx, maxy)."
        )
    x0, y0, x1, y1 = (float(v) for v in values)
    if not all(math.isfinite(v) for v in (x0, y0, x1, y1)):
        raise ValueError(f"The 'bounds' parameter of {caller} must hold finite numbers.")
    if not (x0 < x1 and y0 < y1):
        raise ValueError(
            f"The 'bounds' parameter of {caller} must satisfy minx < maxx and miny < maxy "
            "(the order is minx, miny, maxx, maxy)."
        )
    return x0, y0, x1, y1


def _check_share(value: object, name: str, caller: str) -> Fraction:
    if isinstance(value, bool) or not isinstance(value, Real):
        raise TypeError(
            f"The {name!r} parameter of {caller} must be a real number in (0, 1). "
            f"Got {type(value).__name__} instead."
        )
    try:
        share = Fraction(value) if isinstance(value, Rational) else Fraction(float(value))
    except (ValueError, OverflowError):
        share = None
    if share is None or not (0 < share < 1):
        raise ValueError(
            f"The {name!r} parameter of {caller} must be in the open range (0, 1). Got {value!r}."
        )
    return share


@jit_inline
def edge_distance_cs(
    rx: float, ry: float, c: float, s: float, x0: float, y0: float, x1: float, y1: float
) -> float:
    """Distance from (rx, ry) (inside the box) to the box's edge along the unit vector (c, s).

    A component below :data:`_AXIS` in magnitude counts as 0: cos(3π/2) rounds to −1.8·10⁻¹⁶, which
    would otherwise make a ray along the box's edge leave the box at once (the drift this ignores is at
    most 10⁻¹² of the distance; outputs are clamped to the box).
    """
    d = math.inf
    if c > _AXIS:
        d = min(d, (x1 - rx) / c)
    elif c < -_AXIS:
        d = min(d, (x0 - rx) / c)
    if s > _AXIS:
        d = min(d, (y1 - ry) / s)
    elif s < -_AXIS:
        d = min(d, (y0 - ry) / s)
    if not (d > 0.0):  # the reference on the edge, pointing out (or rounding just below 0)
        d = 0.0
    return d


@jit_inline
def edge_distance(rx: float, ry: float, phi: float, x0: float, y0: float, x1: float, y1: float) -> float:
    """Distance from (rx, ry) (inside the box) to the box's edge along direction φ (radians from +x)."""
    return edge_distance_cs(rx, ry, math.cos(phi), math.sin(phi), x0, y0, x1, y1)


@jit_inline
def _clamp(v: float, lo: float, hi: float) -> float:
    if v < lo:
        return lo
    if v > hi:
        return hi
    return v


@jit_inline
def direction_and_distance(
    px: float, py: float, rx: float, ry: float, x0: float, y0: float, x1: float, y1: float
) -> tuple[Any, ...]:
    """The private inputs of TraCS-D for location (px, py) and reference (rx, ry), both inside the box.

    Returns ``(θ, v)``: the direction in [0, 2π) (0 when the location equals the reference) and the
    distance normalised by :func:`edge_distance` along θ, clipped to [0, 1] (0 when that distance is 0).
    """
    dx = px - rx
    dy = py - ry
    if dx == 0.0 and dy == 0.0:
        return 0.0, 0.0
    theta = math.atan2(dy, dx)
    if theta < 0.0:
        theta += TWO_PI
    if theta >= TWO_PI:
        theta = 0.0
    r = math.hypot(dx, dy)
    # the edge distance along the location's own direction (dx, dy)/r: no trigonometry needed
    d = edge_distance_cs(rx, ry, dx / r, dy / r, x0, y0, x1, y1)
    if not (d > 0.0):
        return theta, 0.0
    return theta, _clamp(r / d, 0.0, 1.0)


@jit
def _tracs_d_kernel(
    x: np.ndarray,
    y: np.ndarray,
    offsets: np.ndarray,
    box: np.ndarray,
    origin: np.ndarray,
    eps_a: np.ndarray,
    eps_b: np.ndarray,
    key: np.ndarray,
    first_stream: KernelInt,
    buf: np.ndarray,
    state: np.ndarray,
    out_x: np.ndarray,
    out_y: np.ndarray,
) -> None:
    x0 = box[0]
    y0 = box[1]
    x1 = box[2]
    y1 = box[3]
    for t in range(offsets.shape[0] - 1):
        stream_reset(state, first_stream + t)
        a, high_a = circular_params(eps_a[t])
        c, high_b = linear_params(eps_b[t])
        rx = origin[0]
        ry = origin[1]
        for i in range(offsets[t], offsets[t + 1]):
            px = _clamp(x[i], x0, x1)
            py = _clamp(y[i], y0, y1)
            theta, v = direction_and_distance(px, py, rx, ry, x0, y0, x1, y1)
            h, u = split_uniform(stream_uniform(key, buf, state), high_a)
            phi = circular_sample(theta, a, h, u)
            h, u = split_uniform(stream_uniform(key, buf, state), high_b)
            w = linear_sample(v, c, h, u)
            cp = math.cos(phi)
            sp = math.sin(phi)
            r = w * edge_distance_cs(rx, ry, cp, sp, x0, y0, x1, y1)
            ox = _clamp(rx + r * cp, x0, x1)
            oy = _clamp(ry + r * sp, y0, y1)
            out_x[i] = ox
            out_y[i] = oy
            rx = ox
            ry = oy


@jit
def _tracs_c_kernel(
    x: np.ndarray,
    y: np.ndarray,
    offsets: np.ndarray,
    box: np.ndarray,
    eps_a: np.ndarray,
    eps_b: np.ndarray,
    key: np.ndarray,
    first_stream: KernelInt,
    buf: np.ndarray,
    state: np.ndarray,
    out_x: np.ndarray,
    out_y: np.ndarray,
) -> None:
    x0 = box[0]
    y0 = box[1]
    wx = box[2] - box[0]
    wy = box[3] - box[1]
    for t in range(offsets.shape[0] - 1):
        stream_reset(state, first_stream + t)
        ca, high_a = linear_params(eps_a[t])
        cb, high_b = linear_params(eps_b[t])
        for i in range(offsets[t], offsets[t + 1]):
            u = _clamp((x[i] - x0) / wx, 0.0, 1.0)
            v = _clamp((y[i] - y0) / wy, 0.0, 1.0)
            h, w = split_uniform(stream_uniform(key, buf, state), high_a)
            su = linear_sample(u, ca, h, w)
            h, w = split_uniform(stream_uniform(key, buf, state), high_b)
            sv = linear_sample(v, cb, h, w)
            out_x[i] = _clamp(x0 + su * wx, box[0], box[2])
            out_y[i] = _clamp(y0 + sv * wy, box[1], box[3])


# Python calls the two kernels through their compiled exports when geoldp was installed with them
# (geoldp._core.aot: the first call then compiles nothing), otherwise through numba's JIT.
_F1 = array(numba.float64, 1)
_I1 = array(numba.int64, 1)
_U1 = array(numba.uint32, 1)
_I8 = numba.int64
_NONE = numba.types.none
_tracs_d_kernel = Entry(
    _tracs_d_kernel,
    {"tracs_d_kernel": _NONE(_F1, _F1, _I1, _F1, _F1, _F1, _F1, _U1, _I8, _U1, _I1, _F1, _F1)},
)
_tracs_c_kernel = Entry(
    _tracs_c_kernel,
    {"tracs_c_kernel": _NONE(_F1, _F1, _I1, _F1, _F1, _F1, _U1, _I8, _U1, _I1, _F1, _F1)},
)


@dataclass(frozen=True, kw_only=True)
class _TraCS:
    """Options and budget split shared by TraCS-D and TraCS-C (validated on construction)."""

    epsilon: float
    bounds: tuple[float, float, float, float]
    _share: Fraction = field(init=False, repr=False, compare=False)

    name: ClassVar[str] = ""
    #: The ledger kinds of a location's two stages, in draw order.
    stage_kinds: ClassVar[tuple[str, str]] = ("", "")
    #: What each of the two stages releases (provenance).
    stage_names: ClassVar[tuple[str, str]] = ("", "")
    #: Releases continuous coordinates (no public point set needed; snapping to one is post-processing).
    continuous: ClassVar[bool] = True
    _kernel: ClassVar[Entry]

    def _common(self) -> None:
        caller = type(self).__name__
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon, caller=caller))
        object.__setattr__(self, "bounds", check_box(self.bounds, caller=caller))
        warn_large_epsilon(self.epsilon, caller, stacklevel=5)

    @property
    def granularity_value(self) -> None:
        """TraCS uses no direction sectors: always ``None``."""
        return None

    def location_budget(self, n: int) -> float:
        """Budget of each location of a length-``n`` trajectory: ε/n rounded down."""
        return exact_share(self.epsilon, Fraction(1, int(n)))

    def stage_budgets(self, n: int) -> tuple[float, float]:
        """The two stage budgets of each location, rounded down: (s·ε/n, (1 − s)·ε/n)."""
        loc = Fraction(1, int(n))
        return (
            exact_share(self.epsilon, loc * self._share),
            exact_share(self.epsilon, loc * (1 - self._share)),
        )

    def ledger(self, n: int) -> Ledger:
        """Two entries per location (its two piecewise stages); the exact sum never exceeds ε."""
        n = check_length(n, type(self).__name__)
        ea, eb = self.stage_budgets(n)
        sa = Fraction(1, n) * self._share
        sb = Fraction(1, n) * (1 - self._share)
        entries = []
        for i in range(1, n + 1):
            entries.append(LedgerEntry(None, self.stage_kinds[0], (i,), ea, sa))
            entries.append(LedgerEntry(None, self.stage_kinds[1], (i,), eb, sb))
        return Ledger(tuple(entries), self.epsilon)

    def check_budgets(self, n: int, m: int | None = None) -> None:
        """Validate both stage budgets of a length-``n`` trajectory (``m``, |P|, is unused).

        Raises
        ------
        ValueError
            A stage budget that is 0 (ε too small for n) or above the piecewise limit (50).
        """
        caller = type(self).__name__
        for kind, eps in zip(self.stage_names, self.stage_budgets(n), strict=True):
            if not (eps > 0.0 and math.isfinite(eps)):
                raise ValueError(f"The {kind} budget of {caller} ({eps!r}) for length {n} must be > 0.")
            if eps > PIECEWISE_EPS_MAX:
                raise ValueError(
                    f"The {kind} budget of {caller} ({eps:.6g}) for length {n} exceeds the limit "
                    f"{PIECEWISE_EPS_MAX:g} of the piecewise mechanism. Use a smaller epsilon."
                )

    def _stage_arrays(self, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        distinct, inverse = np.unique(lengths, return_inverse=True)
        table = np.array([self.stage_budgets(int(n)) for n in distinct], dtype=np.float64).reshape(-1, 2)
        return np.ascontiguousarray(table[inverse, 0]), np.ascontiguousarray(table[inverse, 1])

    def perturb_xy(
        self, x: np.ndarray, y: np.ndarray, offsets: np.ndarray, *, key: np.ndarray, first_stream: int = 0
    ) -> tuple[np.ndarray, np.ndarray]:
        """Release flat planar vertices (trajectory t is ``[offsets[t], offsets[t + 1])``), stream per t.

        Internal driver of the releases: inputs are validated, ``key`` is a ``uint32[8]`` stream key.
        """
        x = np.ascontiguousarray(x, dtype=np.float64)
        y = np.ascontiguousarray(y, dtype=np.float64)
        offsets = np.ascontiguousarray(offsets, dtype=np.int64)
        out_x = np.empty_like(x)
        out_y = np.empty_like(y)
        if offsets.shape[0] < 2:
            return out_x, out_y
        eps_a, eps_b = self._stage_arrays(np.diff(offsets))
        box = np.array(self.bounds, dtype=np.float64)
        key = np.ascontiguousarray(key, dtype=np.uint32)
        buf = np.zeros(16, dtype=np.uint32)
        state = np.zeros(3, dtype=np.int64)
        start = (x, y, offsets, box, *self._references())
        self._kernel(*start, eps_a, eps_b, key, np.int64(first_stream), buf, state, out_x, out_y)
        return out_x, out_y

    def _references(self) -> tuple[np.ndarray, ...]:
        return ()  # the kernel's public arguments after the box (TraCS-D: the first reference)

    def _options(self, share_name: str) -> dict:
        return {
            "mechanism": self.name,
            "epsilon": self.epsilon,
            "bounds": list(self.bounds),
            share_name: fraction_str(self._share),
            f"{share_name}_float": float(self._share),
        }


@dataclass(frozen=True, kw_only=True)
class TraCSD(_TraCS):
    """TraCS-D: each location by its direction and distance from the previous released location.

    Parameters
    ----------
    epsilon : float
        Total budget of one trajectory (> 0), split evenly over its n locations. ε > 10 emits a
        :class:`~geoldp.PrivacyWarning`.
    bounds : (minx, miny, maxx, maxy)
        The public box, in the planar coordinates of the locations (a projected CRS).
    direction_share : float or Fraction, default π/(π + 1)
        Share s of each location's budget spent on the direction; the distance gets 1 − s.
    origin : {"centre", "corner"}, default "centre"
        The public reference of the first location: the box's centre, or its (minx, miny) corner (the
        published code's choice, which wastes direction budget on directions that point out of the box).

    Notes
    -----
    Per location, ε_d = s·ε/n and ε_r = (1 − s)·ε/n, each rounded down. With θ and v from
    :func:`direction_and_distance`, the released direction θ′ has the circular piecewise density
    f(θ′ | θ) ∈ {e^{ε_d/2}, e^{−ε_d/2}}/(2π) and the released normalised distance v′ the linear piecewise
    density f(v′ | v) ∈ {e^{ε_r/2}, e^{−ε_r/2}}; the output is ref + v′·D(θ′)·(cos θ′, sin θ′), D the edge
    distance along θ′. For two inputs the joint density ratio is ≤ e^{ε_d}·e^{ε_r} ≤ e^{ε/n}; the map to
    the output depends on released values and the public box only, so it is post-processing.

    Examples
    --------
    >>> m = TraCSD(epsilon=4.0, bounds=(0.0, 0.0, 1000.0, 1000.0))
    >>> [e.kind for e in m.ledger(1)], float(m.ledger(3).total()) <= 4.0
    (['direction_pw', 'distance_pw'], True)
    """

    direction_share: float | Fraction = DEFAULT_DIRECTION_SHARE
    origin: str = "centre"

    name: ClassVar[str] = "tracs-d"
    stage_kinds: ClassVar[tuple[str, str]] = ("direction_pw", "distance_pw")
    stage_names: ClassVar[tuple[str, str]] = ("direction", "distance")
    _kernel: ClassVar[Entry] = _tracs_d_kernel

    def __post_init__(self) -> None:
        caller = type(self).__name__
        object.__setattr__(self, "_share", _check_share(self.direction_share, "direction_share", caller))
        object.__setattr__(self, "direction_share", self._share)
        object.__setattr__(self, "origin", check_option(self.origin, "origin", _ORIGINS, caller))
        self._common()

    @property
    def origin_point(self) -> tuple[float, float]:
        """The public reference of the first location."""
        x0, y0, x1, y1 = self.bounds
        if self.origin == "corner":
            return x0, y0
        return 0.5 * (x0 + x1), 0.5 * (y0 + y1)

    def _references(self) -> tuple[np.ndarray, ...]:
        return (np.array(self.origin_point, dtype=np.float64),)

    def options(self) -> dict:
        """JSON-able description of the mechanism and every option (for provenance)."""
        return {**self._options("direction_share"), "origin": self.origin}


@dataclass(frozen=True, kw_only=True)
class TraCSC(_TraCS):
    """TraCS-C: each location by its two coordinates, normalised by the box, released independently.

    Parameters
    ----------
    epsilon : float
        Total budget of one trajectory (> 0), split evenly over its n locations.
    bounds : (minx, miny, maxx, maxy)
        The public box, in the planar coordinates of the locations (a projected CRS).
    x_share : float or Fraction, default 1/2
        Share of each location's budget spent on x; y gets the rest.

    Notes
    -----
    Per location, u = (x − minx)/(maxx − minx) and v = (y − miny)/(maxy − miny) are released by the linear
    piecewise mechanism with s·ε/n and (1 − s)·ε/n (each rounded down); densities as in
    :class:`~geoldp.mechanisms.piecewise.PiecewiseLinear`, joint ratio ≤ e^{ε/n}.

    Examples
    --------
    >>> m = TraCSC(epsilon=2.0, bounds=(0.0, 0.0, 10.0, 5.0))
    >>> m.stage_budgets(2)
    (0.5, 0.5)
    """

    x_share: float | Fraction = Fraction(1, 2)

    name: ClassVar[str] = "tracs-c"
    stage_kinds: ClassVar[tuple[str, str]] = ("coordinate_pw", "coordinate_pw")
    stage_names: ClassVar[tuple[str, str]] = ("x", "y")
    _kernel: ClassVar[Entry] = _tracs_c_kernel

    def __post_init__(self) -> None:
        caller = type(self).__name__
        object.__setattr__(self, "_share", _check_share(self.x_share, "x_share", caller))
        object.__setattr__(self, "x_share", self._share)
        self._common()

    def options(self) -> dict:
        """JSON-able description of the mechanism and every option (for provenance)."""
        return self._options("x_share")

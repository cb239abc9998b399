"""Shape distributions: JSD of the trajectory-length and trajectory-diameter histograms."""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from geoldp._core.docstrings import doc
from geoldp._core.frames import TrajectoryArrays
from geoldp._core.geo import haversine_array_m
from geoldp.metrics._pairing import pair


def lengths_km(tr: TrajectoryArrays) -> np.ndarray:
    """Polyline length of every trajectory (sum of haversine segment lengths), km."""
    if tr.lon.shape[0] < 2:
        return np.zeros(tr.n_trajectories)
    seg = haversine_array_m(tr.lon[:-1], tr.lat[:-1], tr.lon[1:], tr.lat[1:])
    seg = np.where(tr.segment_mask(), seg, 0.0)
    seg_traj = tr.codes[:-1]
    return np.bincount(seg_traj, weights=seg, minlength=tr.n_trajectories) / 1000.0


def diameters_km(tr: TrajectoryArrays, *, budget: int = 4_000_000) -> np.ndarray:
    """Largest pairwise haversine distance within every trajectory, km (exact, O(n²) per trajectory)."""
    out = np.zeros(tr.n_trajectories)
    lengths = tr.lengths
    for n in np.unique(lengths):
        if n < 2:
            continue
        rows = np.flatnonzero(lengths == n)
        step = max(1, budget // int(n * n))
        if step >= 1 and n * n <= budget:
            for r0 in range(0, rows.size, step):
                rr = rows[r0 : r0 + step]
                v = tr.offsets[rr][:, None] + np.arange(n)[None, :]  # (t, n) flat vertex positions
                lon, lat = tr.lon[v], tr.lat[v]
                d = haversine_array_m(lon[:, :, None], lat[:, :, None], lon[:, None, :], lat[:, None, :])
                out[rr] = d.reshape(rr.size, -1).max(axis=1)
        else:  # very long trajectories (raw GPS): blocks of rows of the pairwise matrix
            blk = max(1, budget // int(n))
            for r in rows:
                lon = tr.lon[tr.offsets[r] : tr.offsets[r + 1]]
                lat = tr.lat[tr.offsets[r] : tr.offsets[r + 1]]
                best = 0.0
                for i0 in range(0, int(n), blk):
                    d = haversine_array_m(
                        lon[i0 : i0 + blk, None], lat[i0 : i0 + blk, None], lon[None, i0:], lat[None, i0:]
                    )
                    best = max(best, float(d.max()))
                out[r] = best
    return out / 1000.0


def histogram_jsd(a: np.ndarray, b: np.ndarray, bins: int) -> float:
    """Jensen-Shannon divergence (base 2, in [0, 1]) of the histograms of a and b over common bins."""
    hi = float(max(a.max(initial=0.0), b.max(initial=0.0)))
    if hi <= 0.0:
        return 0.0
    edges = np.linspace(0.0, hi, bins + 1)
    p = np.histogram(a, edges)[0].astype(np.float64)
    q = np.histogram(b, edges)[0].astype(np.float64)
    p /= p.sum()
    q /= q.sum()
    return jensen_shannon(p, q)


def jensen_shannon(p: np.ndarray, q: np.ndarray) -> float:
    """Jensen-Shannon divergence of two pmfs, base 2 (in [0, 1]): ½ KL(p ‖ m) + ½ KL(q ‖ m), m = (p + q)/2."""
    mid = 0.5 * (p + q)

    def kl(x: np.ndarray) -> float:
        nz = x > 0
        return float(np.sum(x[nz] * np.log2(x[nz] / mid[nz])))

    return max(0.0, 0.5 * kl(p) + 0.5 * kl(q))


def check_dist_args(bins: Any, method: str, caller: str) -> None:
    if isinstance(bins, bool) or not isinstance(bins, numbers.Integral) or bins < 1:
        raise ValueError(f"The 'bins' parameter of {caller} must be an int >= 1. Got {bins!r} instead.")
    if method not in ("jsd", "mae"):
        raise ValueError(f"Got method={method!r}; `method` of {caller} must be one of ('jsd', 'mae').")


def _distribution_error(a: np.ndarray, b: np.ndarray, bins: int, method: str) -> float:
    if method == "jsd":
        return histogram_jsd(a, b, bins)
    return float(np.mean(np.abs(b - a)))


_PARAMETERS_AND_RETURNS = """
Parameters
----------
original, perturbed : GeoDataFrame, GeoSeries or sequence of array_like of int
    Trajectories (same number of rows).
points : PointSet, GeoDataFrame of Points or (m, 2) array, optional
    Public point set; required for index-array input.
bins : int, default 20
    Number of histogram bins (JSD only).
method : {"jsd", "mae"}, default "jsd"
    ``"jsd"``: JSD of the histograms; ``"mae"``: mean absolute error per row, in km.

Returns
-------
float"""


@doc(parameters=_PARAMETERS_AND_RETURNS)
def length_error(
    original: Any, perturbed: Any, *, points: Any = None, bins: int = 20, method: str = "jsd"
) -> float:
    """Distance between the trajectory-length distributions of original and perturbed data.

    The length of a trajectory is L(τ) = Σ_{i<|τ|} d(x_i, x_{i+1}) in km (haversine; 0 for one point).

    - ``method="jsd"`` (default): Jensen-Shannon divergence, base 2 (so in [0, 1], 0 = same histogram),
      between the histograms of L over ``bins`` equal-width bins spanning [0, max L of both inputs]:
      JSD(p, q) = ½ KL(p ‖ m) + ½ KL(q ‖ m), m = (p + q)/2.
    - ``method="mae"``: mean absolute error per row, (1/|T|) Σ_τ abs(L(τ̂) − L(τ)) in km.

    {parameters}

    Examples
    --------
    >>> import numpy as np
    >>> P = np.array([[0.0, 0.0], [0.0, 1.0], [0.0, 2.0]])
    >>> round(length_error([[0, 1], [0, 2]], [[0, 2], [0, 1]], points=P, method="mae"), 3)
    111.195
    >>> length_error([[0, 1], [0, 2]], [[0, 2], [0, 1]], points=P)  # same distribution
    0.0
    """
    caller = "length_error"
    check_dist_args(bins, method, caller)
    to, tp, _ = pair(original, perturbed, points, caller=caller, pointwise=False)
    return _distribution_error(lengths_km(to), lengths_km(tp), int(bins), method)


@doc(parameters=_PARAMETERS_AND_RETURNS)
def diameter_error(
    original: Any, perturbed: Any, *, points: Any = None, bins: int = 20, method: str = "jsd"
) -> float:
    """Distance between the trajectory-diameter (spatial extent) distributions.

    The diameter of a trajectory is D(τ) = max_{i,j} d(x_i, x_j) in km (haversine; exact, O(|τ|²) per
    trajectory in bounded memory). ``method`` and ``bins`` as in :func:`length_error`: JSD (base 2) of the
    histograms over ``bins`` equal-width bins on [0, max D], or the per-row mean absolute error in km.

    {parameters}

    Examples
    --------
    >>> import numpy as np
    >>> P = np.array([[0.0, 0.0], [0.0, 1.0], [0.0, 2.0]])
    >>> round(diameter_error([[0, 1, 2]], [[0, 1, 0]], points=P, method="mae"), 3)
    111.195
    """
    caller = "diameter_error"
    check_dist_args(bins, method, caller)
    to, tp, _ = pair(original, perturbed, points, caller=caller, pointwise=False)
    return _distribution_error(diameters_km(to), diameters_km(tp), int(bins), method)

"""Hotspots: the top-k visited public points of the originals, compared with a release or an estimate."""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np

from geoldp._core.validation import check_max_km
from geoldp.metrics._pairing import pair
from geoldp.queries import distinct_visits


def top_k(counts: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k largest counts, ties broken by the lower index."""
    order = np.lexsort((np.arange(counts.shape[0]), -counts))
    return order[:k]


def kendall_tau_b(x: np.ndarray, y: np.ndarray) -> float:
    """Kendall's τ-b (ties corrected), O(k²) for the small k of hotspot lists; NaN if x or y is constant.

    τ_b = (n_c − n_d) / sqrt((n_0 − n_x)(n_0 − n_y)), n_0 = k(k−1)/2, n_x / n_y = pairs tied in x / y.
    """
    i, j = np.triu_indices(x.shape[0], k=1)
    sx = np.sign(x[i] - x[j])
    sy = np.sign(y[i] - y[j])
    n0 = i.shape[0]
    denom = math.sqrt(float(n0 - np.sum(sx == 0)) * float(n0 - np.sum(sy == 0)))
    return float(np.sum(sx * sy) / denom) if denom > 0 else float("nan")


def hotspot_preservation(
    original: Any, perturbed: Any, *, k: int = 10, points: Any = None, max_km: float | None = 0.001
) -> dict[str, float]:
    """Compare the top-k public points ("hotspots") of original and perturbed data.

    The popularity of a public point p is the number of distinct trajectories visiting it, c(p) for the
    original and ĉ(p) for the perturbed data (:func:`geoldp.queries.visit_counts`). Let H be the k most
    popular points of the original (ties → lower index) and Ĥ those of the perturbed data.

    - ``acd`` (average count difference) = (1/k) Σ_{p∈H} abs(ĉ(p) − c(p))   (lower is better);
    - ``acd_relative`` = (1/k) Σ_{p∈H} abs(ĉ(p) − c(p)) / max(c(p), 1)   (lower is better);
    - ``kendall_tau`` = Kendall's τ-b between (c(p))_{p∈H} and (ĉ(p))_{p∈H}: does the perturbed data rank the
      true hotspots in the same order (1 best, NaN if either vector is constant);
    - ``overlap`` = #(H ∩ Ĥ) / k   (1 best).

    Parameters
    ----------
    original, perturbed : GeoDataFrame, GeoSeries or sequence of array_like of int
        Trajectories (same number of rows).
    k : int, default 10
        Number of hotspots, 1 ≤ k ≤ |P|.
    points : PointSet, GeoDataFrame of Points or (m, 2) array
        The public point set (required): the candidate hotspots.
    max_km : float or None, default 0.001
        Snapping tolerance for geometry input (see :func:`geoldp.queries.visit_counts`).

    Returns
    -------
    dict
        Keys ``acd``, ``acd_relative``, ``kendall_tau``, ``overlap``, ``k``.

    Examples
    --------
    >>> import numpy as np
    >>> P = np.array([[0.0, 0.0], [0.01, 0.0], [0.02, 0.0]])
    >>> r = hotspot_preservation([[0, 1], [0, 2], [0]], [[0, 1], [1, 2], [2]], k=2, points=P)
    >>> r["acd"], r["overlap"]
    (1.5, 0.5)
    """
    caller = "hotspot_preservation"
    max_km = check_max_km(max_km, caller=caller)
    if points is None:
        raise ValueError(f"The 'points' parameter of {caller} is required (the public point set).")
    to, tp, pts = pair(original, perturbed, points, caller=caller, pointwise=False)
    if pts is None:  # unreachable: checked when the arguments were validated
        raise ValueError("internal error: a required public input is missing; please report it")
    if isinstance(k, bool) or not isinstance(k, numbers.Integral) or not (1 <= k <= pts.size):
        raise ValueError(
            f"The 'k' parameter of {caller} must be an int in the range [1, {pts.size}]. Got {k!r}."
        )
    c = distinct_visits(to, pts, max_km).astype(np.float64)
    chat = distinct_visits(tp, pts, max_km).astype(np.float64)
    return {**hotspot_scores(c, chat, int(k)), "k": int(k)}


def hotspot_scores(c: np.ndarray, chat: np.ndarray, k: int) -> dict[str, float]:
    """ACD, relative ACD, Kendall τ-b and overlap of the top-k of ``c`` against ``chat`` (per point)."""
    h = top_k(c, k)
    hhat = top_k(chat, k)
    diff = np.abs(chat[h] - c[h])
    return {
        "acd": float(diff.mean()),
        "acd_relative": float(np.mean(diff / np.maximum(c[h], 1.0))),
        "kendall_tau": kendall_tau_b(c[h], chat[h]),
        "overlap": float(np.intersect1d(h, hhat).size / k),
    }

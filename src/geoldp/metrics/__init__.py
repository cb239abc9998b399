"""Utility metrics comparing original and perturbed trajectories.

Every function takes ``(original, perturbed)`` in that order. Each argument is either a GeoDataFrame /
GeoSeries of LineStrings in any CRS (one row per trajectory; vertices are reprojected to WGS84 and a Point
counts as a length-1 trajectory), or a sequence of integer index arrays into a public point set passed as
``points=``. Rows are matched **by position**: both inputs must have the same number of rows and, for the
point-wise metrics, the same number of vertices in every row; otherwise a ``ValueError`` names the first
offending row.

Distances are great-circle (haversine) distances on a sphere of radius 6371 km (ALGORITHM §2.1) and are
reported in **km**.

| function | formula | better |
|---|---|---|
| :func:`normalized_error` | NE = (1/|T|) Σ_τ (1/|τ|) Σ_i d(x_i, x̂_i) | lower |
| :func:`preservation_range_query` | PRQ(δ) = (1/|T|) Σ_τ (1/|τ|) Σ_i 1[d(x_i, x̂_i) ≤ δ] | higher |
| :func:`range_query_error` | RE(R) = |ĉ(R) − c(R)| / max(c(R), b) | lower |
| :func:`hotspot_preservation` | ACD, Kendall τ, overlap of the top-k visited points | lower/higher/higher |
| :func:`length_error` | JSD of the trajectory-length histograms | lower |
| :func:`diameter_error` | JSD of the trajectory-diameter histograms | lower |

:func:`evaluate` returns all of them as one tidy table.
"""

from __future__ import annotations

from geoldp.metrics._baselines import BASELINES as BASELINES
from geoldp.metrics._baselines import baseline_release, one_median
from geoldp.metrics._distributions import diameter_error, length_error
from geoldp.metrics._evaluate import COUNT_KEYS as COUNT_KEYS
from geoldp.metrics._evaluate import evaluate as evaluate
from geoldp.metrics._hotspots import hotspot_preservation
from geoldp.metrics._scores import (
    normalised_error as normalised_error,
)
from geoldp.metrics._scores import (
    normalized_error,
    preservation_range_query,
    range_query_error,
)
from geoldp.metrics._zoning import (
    od_counts,
    od_flow_error,
    zone_visit_counts,
    zone_visit_error,
)

__all__ = [
    "baseline_release",
    "diameter_error",
    "hotspot_preservation",
    "length_error",
    "normalized_error",
    "od_counts",
    "od_flow_error",
    "one_median",
    "preservation_range_query",
    "range_query_error",
    "zone_visit_counts",
    "zone_visit_error",
]

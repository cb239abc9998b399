"""Collector-side estimators for report tables: debiased counts, 95 % intervals, projections.

They read only the report table, its ledger (the public design) and, optionally, the public zones.

For every domain value v the support count C(v) (reports that support v) is debiased,

    f̂(v) = (C(v) − n·q*) / (p* − q*),

an unbiased estimate of the expected number of reports whose sampled item is v. The count of
trajectories is ℓ·f̂(v) (padding-and-sampling with ``pad_length`` ℓ): unbiased for trajectories with at
most ℓ items (every OD pair; ℓ = 1 for "one sampled zone" estimates each trajectory's share 1/|set|).

Variance. Every report supports v independently with probability r_u = q* + a_u(p* − q*), a_u being the
probability that user u's sampled item is v. So Var C(v) = Σ r_u(1 − r_u), which is

* for a single item per trajectory (OD): n q*(1−q*) + c (p*−q*)(1−p*−q*) exactly (Wang et al. 2017);
* for sets: at most n·r̄(1 − r̄), r̄ the mean of r_u (concavity), which also covers the randomness of
  the sampled item.

The plug-in c is f̂ clipped to [0, n]. The 95 % interval is estimate ± 1.96·std_error (not clipped:
clipping would break its coverage). ``projected`` is the post-processed estimate: the Euclidean
projection of f̂ over the whole domain onto {x ≥ 0, Σx = n} (the set the true values lie in), scaled by ℓ;
it is never negative and its cells sum to the number of reports.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from geoldp.reports import oracles as fo
from geoldp.reports.release import design_of, ledger_of
from geoldp.reports.zones import check_zones

__all__ = [
    "Z95",
    "count_variance",
    "debiased",
    "estimate_counts",
    "project_simplex",
    "support_counts",
    "true_counts",
]

#: The two-sided 95 % normal quantile.
Z95 = 1.959963984540054

#: Rows of OUE reports unpacked at a time (bounds memory at about 64 MB of bits).
_OUE_CHUNK_BITS = 1 << 26


def support_counts(table: pd.DataFrame, des: Any) -> tuple[np.ndarray, int]:
    """``(C, n)``: support count of every domain value and the number of (non-missing) reports."""
    o = des.oracle
    if o.name == "oue":
        bits = table["bits"].dropna().to_numpy()
        n = bits.shape[0]
        counts = np.zeros(o.d, dtype=np.int64)
        width = (o.d + 7) // 8
        step = max(1, _OUE_CHUNK_BITS // max(1, 8 * width))
        for start in range(0, n, step):
            chunk = np.frombuffer(b"".join(bits[start : start + step]), dtype=np.uint8).reshape(-1, width)
            counts += np.unpackbits(chunk, axis=1, count=o.d).sum(axis=0, dtype=np.int64)
        return counts, n
    ok = table["report"].notna().to_numpy()
    values = np.asarray(table["report"].to_numpy()[ok], dtype=np.int64)
    if o.name == "krr":
        return np.bincount(values, minlength=o.d).astype(np.int64), int(values.shape[0])
    seeds = np.asarray(table["seed"].to_numpy()[ok], dtype=np.int64)
    counts = fo.olh_support(seeds, values, np.int64(o.d), np.int64(o.g), np.zeros(o.d, dtype=np.int64))
    return counts, int(values.shape[0])


def count_variance(c: np.ndarray, n: int, o: Any, *, single: bool) -> np.ndarray:
    """Variance of the debiased frequency of values with ``c`` expected reports among ``n`` (module notes)."""
    p, q = o.p_star, o.q_star
    c = np.clip(np.asarray(c, dtype=np.float64), 0.0, float(n))
    if single:
        var_c = n * q * (1.0 - q) + c * (p - q) * (1.0 - p - q)
    else:
        r = q + (c / max(n, 1)) * (p - q)
        var_c = n * r * (1.0 - r)
    return var_c / (p - q) ** 2


def debiased(counts: np.ndarray, n: int, o: Any, *, single: bool) -> tuple[np.ndarray, np.ndarray]:
    """Debiased item frequencies and their (plug-in) variances (see the module notes)."""
    f = (counts - n * o.q_star) / (o.p_star - o.q_star)
    return f, count_variance(f, n, o, single=single)


def project_simplex(v: np.ndarray, total: float) -> np.ndarray:
    """Euclidean projection of ``v`` onto {x ≥ 0, Σx = total} (sort-based, O(d log d)).

    Examples
    --------
    >>> project_simplex(np.array([3.0, -1.0, 1.0]), 2.0).tolist()
    [2.0, 0.0, 0.0]
    """
    v = np.asarray(v, dtype=np.float64)
    if v.size == 0 or total <= 0:
        return np.zeros_like(v)
    u = np.sort(v)[::-1]
    css = np.cumsum(u) - total
    ks = np.arange(1, v.size + 1)
    rho = int(np.flatnonzero(u - css / ks > 0)[-1])
    theta = css[rho] / (rho + 1)
    return np.maximum(v - theta, 0.0)


def estimate_counts(
    reports: Any, zones: Any = None, *, include_outside: bool = False, geometry: bool = False
) -> pd.DataFrame:
    """Estimated counts with 95 % intervals from a report table of :func:`geoldp.report`.

    Parameters
    ----------
    reports : pandas.DataFrame
        The report table (or a slice of it: pandas keeps its ledger).
    zones : GeoDataFrame or GeoSeries, optional
        The **same** public zones the reports were made over (checked against the ledger's digest);
        labels the rows with the zones' index. Without it, zones are labelled 0, 1, ….
    include_outside : bool, default False
        Also return the outside category (label ``"outside"``).
    geometry : bool, default False
        For ``"visited_zone"`` with ``zones``: return a GeoDataFrame with each zone's geometry.

    Returns
    -------
    pandas.DataFrame
        ``"visited_zone"``: one row per zone (index ``zone``); ``"od"`` and ``"transitions"``: one row per
        ordered pair (index ``origin``, ``destination``; transitions skip a == b). Columns ``estimate``
        (unbiased, may be negative), ``std_error``, ``lower``, ``upper`` (95 %), ``projected``
        (non-negative, post-processed) and ``support`` (the raw support count).

    Raises
    ------
    TypeError, ValueError
        Not a report table; zones that differ from the reports' zones.

    Examples
    --------
    >>> import geopandas as gpd
    >>> from shapely.geometry import LineString
    >>> from geoldp.reports import report, zone_grid
    >>> trips = gpd.GeoDataFrame(geometry=[LineString([(0.1, 0.1), (0.9, 0.9)])] * 400, crs="EPSG:4326")
    >>> zones = zone_grid((0.0, 0.0, 1.0, 1.0), cells=2)
    >>> est = estimate_counts(report(trips, zones, epsilon=4.0, rng=1), zones)
    >>> est.columns.tolist()
    ['estimate', 'std_error', 'lower', 'upper', 'projected', 'support']
    >>> bool(est.loc[0, "lower"] < 200 < est.loc[0, "upper"])
    True
    """
    caller = "geoldp.reports.estimate_counts"
    led = ledger_of(reports, caller=caller)
    des = design_of(led)
    labels: Any = pd.RangeIndex(des.n_zones)
    z = None
    if zones is not None:
        z = check_zones(zones, caller=caller)
        if z.size != des.n_zones or z.digest() != led["domain"].get("zones_digest"):
            raise ValueError(
                f"The 'zones' passed to {caller} are not the zones the reports were made over "
                f"({z.size} zones given, {des.n_zones} in the reports' ledger, or different geometry)."
            )
        labels = z.index
    counts, n = support_counts(reports, des)
    f, var = debiased(counts, n, des.oracle, single=des.statistic == "od")
    ell = float(des.pad_length)
    proj = project_simplex(f, float(n)) * ell
    est, se = f * ell, np.sqrt(var) * ell
    keep, index = _rows(des.statistic, des.n_zones, labels, include_outside)
    out = pd.DataFrame(
        {
            "estimate": est[keep],
            "std_error": se[keep],
            "lower": est[keep] - Z95 * se[keep],
            "upper": est[keep] + Z95 * se[keep],
            "projected": proj[keep],
            "support": counts[keep],
        },
        index=index,
    )
    if geometry and z is not None and des.statistic == "visited_zone" and not include_outside:
        import geopandas as gpd

        return gpd.GeoDataFrame(out, geometry=np.asarray(z.geoms), crs=z.crs)
    return out


def _rows(statistic: str, n_zones: int, labels: Any, include_outside: bool) -> tuple[np.ndarray, Any]:
    """Domain positions to return and their index (zones, or ordered zone pairs)."""
    k = n_zones + 1
    names = np.empty(k, dtype=object)  # an object array: labels of any type, indexed without a loop
    names[:n_zones] = list(labels)
    names[n_zones] = "outside"
    if statistic == "visited_zone":
        if not include_outside:
            return np.arange(n_zones), labels.copy().rename("zone")
        return np.arange(k), pd.Index(list(names), name="zone")
    a, b = np.divmod(np.arange(k * k), k)
    ok = np.ones(k * k, dtype=bool) if include_outside else (a < n_zones) & (b < n_zones)
    if statistic == "transitions":
        ok &= a != b
    keep = np.flatnonzero(ok)
    index = pd.MultiIndex.from_arrays([names[a[keep]], names[b[keep]]], names=["origin", "destination"])
    return keep, index


def true_counts(
    gdf: Any, zones: Any, *, statistic: str = "visited_zone", include_outside: bool = False
) -> Any:
    """The exact counts of a statistic computed **from the private trajectories** (for evaluation only).

    Trajectories visiting each zone, per OD pair, or having each transition, in the row layout of
    :func:`estimate_counts`. This reads the raw data: use it to measure an estimator's error in
    experiments, never as something to publish.

    Returns
    -------
    pandas.Series
        Named ``count``.
    """
    from geoldp import _frames
    from geoldp._validation import check_option
    from geoldp.reports.release import STATISTICS, statistic_items
    from geoldp.reports.zones import zone_of_vertices

    caller = "geoldp.reports.true_counts"
    statistic = check_option(statistic, "statistic", STATISTICS, caller, case_insensitive=True)
    gdf = _frames.check_frame(gdf, caller=caller)
    z = check_zones(zones, caller=caller)
    ft = _frames.extract(gdf, caller=caller)
    zone = zone_of_vertices(z, ft.lon, ft.lat)
    _, items = statistic_items(statistic, zone, ft.offsets, z.size)
    k = z.size + 1
    counts = np.bincount(items, minlength=k if statistic == "visited_zone" else k * k)
    keep, index = _rows(statistic, z.size, z.index, include_outside)
    return pd.Series(counts[keep], index=index, name="count")

"""The ``geoldp demo``: TP and ATP on a built-in synthetic city, with no download.

:func:`run_demo` generates a deterministic synthetic city (:func:`geoldp.datasets.synthetic_city`),
perturbs its trips with TP and ATP through the ``.ldp`` accessor, prints a short utility table, and writes
GeoJSON files and a PNG map comparing original and perturbed trajectories.

The demo passes a seed, because it is an experiment that should be reproducible. A deployment omits the
seed so that geoldp draws from the operating system's CSPRNG.
"""

from __future__ import annotations

import importlib.util
import sys
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import numpy as np

from geoldp.errors import PrivacyWarning

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    import geopandas as gpd
    import pandas as pd

__all__ = ["DemoResult", "run_demo", "save_comparison_map", "utility_table"]

#: Radii (km) of the PRQ columns of the demo table.
DEMO_DELTAS_KM = (0.5, 1.0, 2.0)

_EARTH_RADIUS_KM = 6371.0


@dataclass(frozen=True)
class DemoResult:
    """What :func:`run_demo` produced.

    Attributes
    ----------
    table : pandas.DataFrame
        The utility table (one row per mechanism).
    files : dict of str to pathlib.Path
        The files written, by role ("original", "points", "tp", "atp", "map").
    seconds : float
        Wall-clock time of the perturbation step (both mechanisms).
    """

    table: pd.DataFrame
    files: dict[str, Path] = field(default_factory=dict)
    seconds: float = 0.0


# ------------------------------------------------------------------------------------------------------
# utility table


def _vertex_coords(gdf: gpd.GeoDataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Return (xy, offsets): all vertices of a LineString/Point frame in WGS 84, and row offsets."""
    import shapely

    geoms = gdf.geometry
    if geoms.crs is not None and not geoms.crs.equals("EPSG:4326"):
        geoms = geoms.to_crs("EPSG:4326")
    xy, index = shapely.get_coordinates(np.asarray(geoms.values), return_index=True)
    counts = np.bincount(index, minlength=len(geoms))
    offsets = np.concatenate([[0], np.cumsum(counts)])
    return xy, offsets


def _haversine_km(lon1: np.ndarray, lat1: np.ndarray, lon2: np.ndarray, lat2: np.ndarray) -> np.ndarray:
    try:
        from geoldp.geo import haversine_m
    except ImportError:  # pragma: no cover - only while geoldp.geo is being written
        haversine_m = None
    if haversine_m is not None:
        return np.asarray(haversine_m(lon1, lat1, lon2, lat2), dtype=float) / 1000.0
    lam1, phi1, lam2, phi2 = (np.radians(np.asarray(a, dtype=float)) for a in (lon1, lat1, lon2, lat2))
    h = np.sin((phi2 - phi1) / 2) ** 2 + np.cos(phi1) * np.cos(phi2) * np.sin((lam2 - lam1) / 2) ** 2
    return 2 * _EARTH_RADIUS_KM * np.arcsin(np.sqrt(np.clip(h, 0.0, 1.0)))


def _per_row_mean(values: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    counts = np.diff(offsets)
    sums = np.add.reduceat(values, offsets[:-1]) if len(values) else np.zeros(len(counts))
    return sums / counts


def _uniform_expectation(
    original: gpd.GeoDataFrame, points: gpd.GeoDataFrame, deltas_km: Sequence[float]
) -> dict[str, float]:
    """Exact expected NE and PRQ when every point is replaced by a uniform draw from P (ε = 0)."""
    xy0, off0 = _vertex_coords(original)
    pxy, _ = _vertex_coords(points)
    ne_v = np.empty(len(xy0))
    prq_v = np.empty((len(deltas_km), len(xy0)))
    chunk = max(1, 2_000_000 // max(1, len(pxy)))
    for start in range(0, len(xy0), chunk):
        part = xy0[start : start + chunk]
        d = _haversine_km(part[:, :1], part[:, 1:2], pxy[None, :, 0], pxy[None, :, 1])
        ne_v[start : start + chunk] = d.mean(axis=1)
        for k, delta in enumerate(deltas_km):
            prq_v[k, start : start + chunk] = (d <= delta).mean(axis=1)
    row = {"NE_km": float(np.mean(_per_row_mean(ne_v, off0)))}
    for k, delta in enumerate(deltas_km):
        row[f"PRQ_{delta:g}km"] = float(np.mean(_per_row_mean(prq_v[k], off0)))
    return row


def utility_table(
    original: gpd.GeoDataFrame,
    perturbed: Mapping[str, gpd.GeoDataFrame],
    *,
    points: gpd.GeoDataFrame | None = None,
    deltas_km: Sequence[float] = DEMO_DELTAS_KM,
) -> pd.DataFrame:
    """Normalised error and PRQ of each perturbed frame against the original.

    Parameters
    ----------
    original : geopandas.GeoDataFrame
        The original trajectories (LineStrings, any CRS).
    perturbed : mapping of str to geopandas.GeoDataFrame
        Perturbed versions of ``original`` (same rows, same vertex counts), by label.
    points : geopandas.GeoDataFrame, optional
        The public points. When given, a first row "uniform (ε=0)" holds the exact expectation of the
        metrics when every point is replaced by a uniform draw from the public points (no information).
    deltas_km : sequence of float, default (0.5, 1, 2)
        The radii of the PRQ columns, in km.

    Returns
    -------
    pandas.DataFrame
        One row per label, columns ``NE_km`` (lower is better) and ``PRQ_<δ>km`` (higher is better).

    Notes
    -----
    ``NE = (1/#T) Σ_τ (1/#τ) Σ_i d(x_i, x̂_i)`` and ``PRQ(δ) = (1/#T) Σ_τ (1/#τ) Σ_i 1[d(x_i, x̂_i) ≤ δ]``
    (#T trajectories, #τ points in τ), with the haversine distance d (R = 6371 km), as in the paper; computed
    by
    :func:`geoldp.metrics.normalized_error` and :func:`geoldp.metrics.preservation_range_query`.
    """
    import pandas as pd

    from geoldp import metrics

    rows: dict[str, dict[str, float]] = {}
    if points is not None:
        rows["uniform (eps=0)"] = _uniform_expectation(original, points, deltas_km)
    for label, frame in perturbed.items():
        row = {"NE_km": metrics.normalized_error(original, frame)}
        prq = np.atleast_1d(metrics.preservation_range_query(original, frame, list(deltas_km)))
        row.update({f"PRQ_{delta:g}km": float(v) for delta, v in zip(deltas_km, prq, strict=True)})
        rows[label] = row
    table = pd.DataFrame.from_dict(rows, orient="index")
    table.index.name = "mechanism"
    return table


# ------------------------------------------------------------------------------------------------------
# map


def _sample_rows(n_rows: int, n: int) -> np.ndarray:
    """Evenly spaced row positions (deterministic; no randomness)."""
    if n_rows <= n:
        return np.arange(n_rows)
    return np.unique(np.linspace(0, n_rows - 1, n).round().astype(np.int64))


def save_comparison_map(
    original: gpd.GeoDataFrame,
    perturbed: Mapping[str, gpd.GeoDataFrame],
    path: str | Path,
    *,
    points: gpd.GeoDataFrame | None = None,
    n: int = 12,
    dpi: int = 110,
) -> Path:
    """Draw original and perturbed trajectories side by side and save the figure.

    One panel per entry of ``perturbed``; each shows the same ``n`` rows (evenly spaced, deterministic)
    of the original and of the perturbed frame, drawn by :func:`geoldp.plotting.plot_trajectories`
    (row i of both in one colour; original solid, perturbed dashed). No global matplotlib state is
    changed: the figure is rendered with the Agg canvas, not pyplot.

    Parameters
    ----------
    original : geopandas.GeoDataFrame
        Original trajectories.
    perturbed : mapping of str to geopandas.GeoDataFrame
        Perturbed trajectories (same rows as ``original``), by panel title.
    path : str or pathlib.Path
        Output image (PNG, PDF or SVG, by suffix).
    points : geopandas.GeoDataFrame, optional
        Public points, drawn as small grey dots.
    n : int, default 12
        Number of trajectories per panel.
    dpi : int, default 110
        Resolution of raster output.

    Returns
    -------
    pathlib.Path
        ``path``.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    path = Path(path)
    k = max(1, len(perturbed))
    fig = Figure(figsize=(5.2 * k, 5.2), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, k, squeeze=False)[0]
    rows = _sample_rows(len(original), n)
    orig = original.iloc[rows].to_crs("EPSG:4326") if original.crs is not None else original.iloc[rows]
    pts = None
    if points is not None:
        pts = points.to_crs("EPSG:4326") if points.crs is not None else points
    try:
        from geoldp.plotting import plot_trajectories
    except ImportError:  # pragma: no cover - geoldp.plotting is part of the package
        plot_trajectories = None
    for ax, (label, frame) in zip(axes, perturbed.items(), strict=False):
        if plot_trajectories is not None:
            plot_trajectories(original, frame, ax=ax, points=points, rows=rows)
            ax.set_title(
                f"{label}: {len(rows)} trajectories (solid: original, dashed: perturbed)", fontsize="medium"
            )
            continue
        pert = frame.iloc[rows].to_crs("EPSG:4326") if frame.crs is not None else frame.iloc[rows]
        if pts is not None:
            ax.scatter(pts.geometry.x, pts.geometry.y, s=1, color="0.75", zorder=0, label="public points")
        _draw_lines(ax, orig, color="tab:blue", label="original")
        _draw_lines(ax, pert, color="tab:red", label="perturbed")
        ax.set_title(f"{label}: {len(rows)} trajectories")
        ax.set_xlabel("lon")
        ax.set_ylabel("lat")
        ax.set_aspect(1.0 / max(np.cos(np.radians(float(np.mean(ax.get_ylim())))), 1e-6))
        ax.legend(loc="upper right", fontsize="small")
    fig.savefig(path, dpi=dpi)
    return path


def _draw_lines(ax: Any, gdf: gpd.GeoDataFrame, *, color: str, label: str) -> None:
    import shapely

    xy, index = shapely.get_coordinates(np.asarray(gdf.geometry.values), return_index=True)
    first = True
    for r in range(len(gdf)):
        seg = xy[index == r]
        if len(seg) == 0:
            continue
        ax.plot(
            seg[:, 0], seg[:, 1], "-o", color=color, lw=0.8, ms=2, alpha=0.6, label=label if first else None
        )
        first = False


# ------------------------------------------------------------------------------------------------------
# demo


def run_demo(
    output: str | Path | None = "geoldp-demo",
    *,
    n_trips: int = 2000,
    n_points: int = 1000,
    epsilon: float = 4.0,
    seed: int = 0,
    plot: bool = True,
    stream: TextIO | None = None,
) -> DemoResult:
    """Run TP and ATP on a synthetic city, print a utility table and write files.

    Parameters
    ----------
    output : str or pathlib.Path or None, default "geoldp-demo"
        Directory for the files (created if needed). ``None`` writes nothing.
    n_trips : int, default 2000
        Number of synthetic trips.
    n_points : int, default 1000
        Number of public points.
    epsilon : float, default 4.0
        Privacy budget per trip.
    seed : int, default 0
        Seed of the synthetic city and of the perturbation. The demo is an experiment; a deployment
        omits the seed (OS CSPRNG).
    plot : bool, default True
        Draw the PNG map. Without matplotlib the map is skipped with a note.
    stream : file-like, optional
        Where to print the report. Defaults to ``sys.stdout``.

    Returns
    -------
    DemoResult
        The utility table, the files written and the perturbation time.

    Examples
    --------
    >>> from geoldp.demo import run_demo
    >>> result = run_demo(None, n_trips=50, n_points=100, stream=open("/dev/null", "w"))  # doctest: +SKIP
    >>> list(result.table.index)  # doctest: +SKIP
    ['uniform (eps=0)', 'TP', 'ATP']
    """
    from geoldp.datasets import synthetic_city  # importing geoldp registers the .ldp accessor

    out = sys.stdout if stream is None else stream
    points, trips = synthetic_city(n_points=n_points, n_trips=n_trips, seed=seed)
    n_vertices = int(sum(len(g.coords) for g in trips.geometry))
    print(
        f"geoldp demo: synthetic city with {len(points)} public points and {len(trips)} trips "
        f"({n_vertices} points in total), epsilon = {epsilon:g} per trip, seed = {seed}",
        file=out,
    )

    rng = np.random.default_rng(seed)
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        # Shown below as notes: on this demo data the near-uniform PrivacyWarning is expected (trips of up
        # to 8 points share one ε); on your data, read it and act on it.
        warnings.simplefilter("always", PrivacyWarning)
        perturbed = {
            "TP": trips.ldp.perturb(points, mechanism="tp", epsilon=epsilon, rng=rng),
            "ATP": trips.ldp.perturb(points, mechanism="atp", epsilon=epsilon, rng=rng),
        }
    seconds = time.perf_counter() - t0
    notes = []
    for w in caught:
        if issubclass(w.category, PrivacyWarning):
            text = " ".join(str(w.message).split())
            if text not in notes:
                notes.append(text)
        else:  # anything else is re-issued unchanged
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)

    table = utility_table(trips, perturbed, points=points)
    print("", file=out)
    print("Utility (NE: mean distance to the original point, km, lower is better;", file=out)
    print("         PRQ_d: share of points within d km of the original, higher is better;", file=out)
    print(
        "         uniform: expected values if every point were replaced by a random public point)", file=out
    )
    print(table.to_string(float_format=lambda v: f"{v:.3f}"), file=out)
    print("", file=out)
    for text in notes:
        print(f"Note (PrivacyWarning): {text}", file=out)
    if notes:
        print("", file=out)

    files: dict[str, Path] = {}
    if output is not None:
        from geoldp import io as gio

        folder = Path(output)
        folder.mkdir(parents=True, exist_ok=True)
        files["points"] = folder / "points.geojson"
        points.to_file(files["points"], driver="GeoJSON")
        files["original"] = folder / "original.geojson"
        trips.to_file(files["original"], driver="GeoJSON")
        for label, frame in perturbed.items():
            files[label.lower()] = folder / f"{label.lower()}.geojson"
            gio.to_geojson(frame, files[label.lower()], ledger=True, overwrite=True)  # the demo owns DIR
        has_matplotlib = importlib.util.find_spec("matplotlib") is not None
        if plot and has_matplotlib:
            files["map"] = save_comparison_map(trips, perturbed, folder / "map.png", points=points)
        print("Files written:", file=out)
        for role, path in files.items():
            print(f"  {role:<9} {path}", file=out)
        if plot and not has_matplotlib:
            print('Map skipped: matplotlib is not installed (pip install "geoldp[plot]").', file=out)
    print(
        f"Perturbation time: {seconds:.1f} s for {2 * len(trips)} trajectory releases "
        "(TP and ATP; includes numba compilation on the first run).",
        file=out,
    )
    return DemoResult(table=table, files=files, seconds=seconds)

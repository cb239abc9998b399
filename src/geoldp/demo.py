"""The ``geoldp demo``: TP and ATP on a built-in synthetic city, with no download.

:func:`run_demo` generates a deterministic synthetic city (:func:`geoldp.datasets.synthetic_city`),
perturbs its trips with TP and ATP through the ``.ldp`` accessor, prints a short utility table, and writes
GeoJSON files and a PNG map comparing original and perturbed trajectories.

The demo passes a seed, because it is an experiment (a deployment omits it), and writes every file like
the other outputs of geoldp (:mod:`geoldp.io`), checking all its output paths before it computes
anything (:doc:`/cli`, "geoldp demo").
"""

from __future__ import annotations

import importlib.util
import io
import os
import sys
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import numpy as np

from geoldp._core import safe_write as _safe_write
from geoldp._core.errors import PrivacyWarning

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    import geopandas as gpd
    import pandas as pd

__all__ = ["run_demo"]

_GEOJSON_OUTPUTS = ("points.geojson", "original.geojson", "tp.geojson", "atp.geojson")
_FIGURE_OUTPUTS = ("map.png", "density.png")
_WEB_OUTPUTS = ("map.html",)

#: Radii (km) of the PRQ columns of the demo table.
DEMO_DELTAS_KM = (0.5, 1.0, 2.0)

#: Estimator parameters of the demo: smaller than geoldp.estimate's defaults (3000 candidates, 16
#: simulations, 30 bootstrap replicates) so that the estimated and denoised rows add about 20 s, at the
#: price of more Monte-Carlo noise and no intervals (the demo table shows point estimates only).
DEMO_ESTIMATE_OPTIONS: dict[str, Any] = {"n_candidates": 500, "n_sims": 4, "n_boot": 0}


@dataclass(frozen=True)
class DemoResult:
    """What :func:`run_demo` produced.

    Attributes
    ----------
    table : pandas.DataFrame
        The utility table (one row per release: "TP raw", "ATP raw", "ATP estimated", "ATP denoised",
        then the baselines "uniform" and "constant"; see :func:`utility_table`).
    files : dict of str to pathlib.Path
        The files written, by role ("original", "points", "tp", "atp", "map", "density", "map_html": the
        interactive map of the ATP release over the originals, written where folium is installed).
    seconds : float
        Wall-clock time of the perturbation step (both mechanisms).
    """

    table: pd.DataFrame
    files: dict[str, Path] = field(default_factory=dict)
    seconds: float = 0.0


# ------------------------------------------------------------------------------------------------------
# utility table


#: Columns of the demo table and whether lower or higher is better.
DEMO_COLUMNS = {
    "NE_km": "lower",
    "PRQ_{}km": "higher",
    "range_query_error": "lower",
    "zone_l1": "lower",
    "od_l1": "lower",
    "hotspot_overlap": "higher",
    "length_jsd": "lower",
}


def utility_table(
    original: gpd.GeoDataFrame,
    perturbed: Mapping[str, gpd.GeoDataFrame],
    *,
    points: gpd.GeoDataFrame | None = None,
    deltas_km: Sequence[float] = DEMO_DELTAS_KM,
    zones: Any = "auto",
    rng: Any = 0,
    estimate: Sequence[str] = (),
    estimate_options: dict | None = None,
) -> pd.DataFrame:
    """The demo's utility table: each release next to the no-data baselines (a subset of evaluate).

    Parameters
    ----------
    original : geopandas.GeoDataFrame
        The original trajectories (LineStrings, any CRS).
    perturbed : mapping of str to geopandas.GeoDataFrame
        Perturbed versions of ``original`` (same rows, same vertex counts), by label.
    points : geopandas.GeoDataFrame, optional
        The public points. When given, the rows ``uniform`` (every point a uniform draw from P; NE and PRQ
        are exact expectations) and ``constant`` (every point the 1-median of P) are added, and so are the
        zone, OD and hotspot columns.
    deltas_km : sequence of float, default (0.5, 1, 2)
        The radii of the PRQ columns, in km.
    zones : "auto" or GeoDataFrame of polygons, default "auto"
        Zones of the ``zone_l1`` and ``od_l1`` columns (default: about 1.5 km squares over P).
    rng : int or Generator, default 0
        Randomness of the uniform baseline's draw (public) and of the estimators.
    estimate : sequence of str, default ()
        Labels of ``perturbed`` (releases carrying their ledger, e.g. "ATP raw") that also get the rows
        "<MECH> estimated" and "<MECH> denoised" of :func:`geoldp.metrics.evaluate` (``estimate=True``),
        right after their raw row. Needs ``points``.
    estimate_options : dict, optional
        Estimator parameters (see :func:`geoldp.metrics.evaluate`); default :data:`DEMO_ESTIMATE_OPTIONS`.

    Returns
    -------
    pandas.DataFrame
        One row per label (then ``uniform`` and ``constant``), columns ``NE_km`` and ``PRQ_<δ>km``, and
        with ``points`` ``range_query_error``, ``zone_l1``, ``od_l1``, ``hotspot_overlap``, ``length_jsd``.
        :data:`DEMO_COLUMNS` says which direction is better; :func:`geoldp.metrics.evaluate` documents
        every metric.
    """
    import pandas as pd

    from geoldp import metrics

    kw = dict(
        points=points,
        delta_km=list(deltas_km),
        zones=zones if points is not None else None,
        regions="auto" if points is not None else None,
        rng=rng,
    )
    table = metrics.evaluate(original, dict(perturbed), **kw)
    unknown = [lab for lab in estimate if lab not in perturbed]
    if unknown:
        raise ValueError(f"The 'estimate' labels {unknown} of utility_table are not keys of 'perturbed'.")
    parts = []
    for lab in table.index:
        parts.append(table.loc[[lab]])
        if lab in estimate:
            options = DEMO_ESTIMATE_OPTIONS if estimate_options is None else estimate_options
            extra = metrics.evaluate(
                original,
                {lab: perturbed[lab]},
                **kw,
                baselines=(),
                estimate=True,
                estimate_options=dict(options),
            )
            parts.append(extra.iloc[1:])
    attrs = table.attrs
    table = pd.concat(parts)
    table.attrs = attrs
    columns = [c for c in _display_columns(deltas_km) if c in table.columns]
    return table[columns]


def _display_columns(deltas_km: Sequence[float]) -> dict[str, str]:
    out: dict[str, str] = {}
    for name, better in DEMO_COLUMNS.items():
        if "{}" in name:
            out.update({name.format(f"{d:g}"): better for d in deltas_km})
        else:
            out[name] = better
    return out


def format_table(table: pd.DataFrame, deltas_km: Sequence[float] = DEMO_DELTAS_KM) -> str:
    """The utility table transposed for a terminal: one row per metric, one column per release."""
    better = _display_columns(deltas_km)
    shown = table.T
    shown.insert(0, "better", [better.get(c, "") for c in shown.index])
    shown.index.name = "metric"
    shown.columns.name = None
    return shown.to_string(float_format=lambda v: f"{v:.3f}")


# ------------------------------------------------------------------------------------------------------
# figures (rendered with the Agg canvas, not pyplot: no global matplotlib state is changed)


def _lengths(gdf: gpd.GeoDataFrame) -> np.ndarray:
    import shapely

    return shapely.get_num_coordinates(np.asarray(gdf.geometry.values)).astype(np.int64)


def _agg_figure(figsize: tuple[float, float] | None = None) -> Any:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=figsize, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _save_figure(fig: Any, path: Path, *, dpi: int, overwrite: bool) -> Path:
    """Render ``fig`` in memory (format by suffix) and write it atomically; never through a link."""
    _safe_write.check_output(path, overwrite=overwrite, what="figure")
    buf = io.BytesIO()
    fig.savefig(buf, dpi=dpi, format=path.suffix.lstrip(".").lower() or "png")
    _safe_write.write_bytes(path, buf.getvalue(), overwrite=overwrite)
    return path


def save_comparison_map(
    original: gpd.GeoDataFrame,
    perturbed: Mapping[str, gpd.GeoDataFrame],
    path: str | Path,
    *,
    points: gpd.GeoDataFrame | None = None,
    n: int = 4,
    rows: Sequence[int] | None = None,
    dpi: int = 130,
    overwrite: bool = False,
) -> Path:
    """Draw a handful of trajectories, original vs every release, as small multiples, and save the figure.

    One panel per trajectory (:func:`geoldp.plotting.plot_trajectory_panels`): the original in black with
    numbered vertices, each release in its own colour, the public points as faint grey context and the
    legend below the panels.

    Parameters
    ----------
    perturbed : mapping of str to geopandas.GeoDataFrame
        Released trajectories (same rows as ``original``), by label.
    path : str or pathlib.Path
        Output image (PNG, PDF or SVG, by suffix); returned.
    n : int, default 4
        Number of trajectories (evenly spaced among those with at least 4 points; deterministic).
    rows : sequence of int, optional
        Explicit row positions instead.
    dpi : int, default 130
        Resolution of raster output.
    overwrite : bool, default False
        Replace an existing file. The image is written atomically and never through a symbolic link.
    """
    from geoldp.plotting import plot_trajectory_panels

    path = Path(path)
    k = n if rows is None else len(rows)
    cols = min(max(k, 1), 4)
    title_lines = 2 + (len(perturbed) - 1) // 2  # the panel titles list two errors per line
    fig = _agg_figure((3.4 * cols, (3.4 + 0.2 * title_lines) * -(-k // cols) + 0.6))
    plot_trajectory_panels(original, dict(perturbed), rows=rows, n=n, points=points, fig=fig)
    return _save_figure(fig, path, dpi=dpi, overwrite=overwrite)


def save_comparison_html(
    original: gpd.GeoDataFrame,
    released: gpd.GeoDataFrame,
    path: str | Path,
    *,
    points: Any = None,
    overwrite: bool = False,
) -> Path | None:
    """Write the interactive comparison map as one HTML page that renders offline; ``None`` without folium.

    The map is :func:`geoldp.explore.explore_release`: the release over the originals, the public points.

    The page holds the original trajectories: it is as private as they are. It is written atomically,
    over an existing file only with ``overwrite=True``.
    """
    import importlib.util

    if importlib.util.find_spec("folium") is None:
        return None
    from geoldp._core import safe_write as _safe_write
    from geoldp.explore import explore_release

    fmap = explore_release(released, original, points)
    path = Path(path)
    _safe_write.write_bytes(path, fmap.get_root().render().encode("utf-8"), overwrite=overwrite)
    return path


def save_density_map(
    counts: Mapping[str, Any],
    zones: gpd.GeoDataFrame,
    path: str | Path,
    *,
    points: gpd.GeoDataFrame | None = None,
    dpi: int = 130,
    overwrite: bool = False,
) -> Path:
    """Draw visit-density maps per zone side by side on one colour scale and save the figure.

    See :func:`geoldp.plotting.plot_zone_density`: ``counts`` maps a label (the first one is the
    reference, e.g. "original") to counts per zone; an estimate is one more entry. The image is written
    atomically, never through a symbolic link, and over an existing file only with ``overwrite=True``;
    returns ``path``.
    """
    from geoldp.plotting import plot_zone_density

    path = Path(path)
    cols = min(len(counts), 5)  # original, two releases, an estimate and a baseline fit on one row
    fig = _agg_figure((3.2 * cols + 1.0, 3.5 * -(-len(counts) // cols) + 0.3))
    plot_zone_density(counts, zones, points=points, fig=fig, max_cols=cols)
    return _save_figure(fig, path, dpi=dpi, overwrite=overwrite)


# ------------------------------------------------------------------------------------------------------
# demo


def _say_kernel_stage(out: TextIO) -> None:
    """Say, before the wait, whether numba compiles the kernels now (once per installation) or loads them."""
    from geoldp.trajectory import ATP, TP
    from geoldp.trajectory.engine import kernel_state

    states = {kernel_state(TP(epsilon=1.0)), kernel_state(ATP(epsilon=1.0))}
    if "compile" in states:
        text = "Compiling kernels (first run only: a minute or two; later runs load them) ..."
        print(text, file=out, flush=True)
    elif "cached" in states:
        print("Loading compiled kernels ...", file=out, flush=True)


#: Designs the demo's plan compares (PointEM left out: the demo does not release with it).
DEMO_PLAN_DESIGNS = ("tp", "atp", "ldptrace", "report:visited_zone", "report:visited_zone:padded")


def _print_plan(points: Any, n: int, epsilon: float, seed: int, out: TextIO) -> None:
    """Print which design :func:`geoldp.plan` recommends for zone visits, from public inputs only."""
    from geoldp.planner import plan
    from geoldp.zones import zone_grid

    zones = zone_grid(points, cell_km=1.5)
    # public inputs only: P, the zones, ε, the number of rows and an assumed length distribution (2-8)
    table = plan(
        points, zones, epsilon=epsilon, n=n, lengths=list(range(2, 9)), designs=DEMO_PLAN_DESIGNS, rng=seed
    )
    print(
        "Planning before any budget is spent (geoldp.plan, public inputs only): expected zone-visit\n"
        "L1 error of each design (0 = exact, 2 = disjoint) on populations SIMULATED over the public points\n"
        "(the utility table further down measures zone_l1 on the demo's own trips: other numbers):",
        file=out,
    )
    shown = table[["kind", "error", "recommended"]].copy()
    shown["error"] = shown["error"].round(3)
    print(shown.to_string(), file=out)
    best = table.attrs["recommended"]
    if table.attrs["beats_baselines"]:
        print(f"Recommended design for zone visits: {best}. The demo goes on with TP and ATP.", file=out)
    else:
        print(
            f"No design beats the no-data baselines here ({best} is best); the demo goes on with TP/ATP.",
            file=out,
        )
    print("", file=out, flush=True)


#: What the demo table shows, printed above it.
_TABLE_LEGEND = """
Utility of the raw releases next to two releases that use no private data at all:
  uniform  = every point replaced by a uniform draw from the public points (NE, PRQ exact);
  constant = every point replaced by the 1-median of the public points.
NE: mean distance to the original point (km). PRQ_d: share of points within d km.
range_query_error: relative error of counts of trajectories through 16 circles.
zone_l1 / od_l1: L1 distance of the visit / origin-destination distributions over 1.5 km
  (the planner's 'error' above is the same L1, expected on simulated populations)
zones (0 = exact, 2 = disjoint). hotspot_overlap: share of the top-10 public points found.
length_jsd: JS divergence of the trajectory-length distributions.
ATP estimated = zone, OD, range and visit counts estimated from the ATP release alone
  (geoldp.estimate; NE/PRQ/length do not apply); ATP denoised = geoldp.estimate.denoise of it.
  Estimator parameters {options}: fast and noisy.
  At this budget the estimates miss most of their targets; see docs/results/estimators.md."""


def _privacy_notes(caught: list[warnings.WarningMessage]) -> list[str]:
    """The distinct PrivacyWarning texts among ``caught``; every other warning is re-issued unchanged."""
    notes: list[str] = []
    for w in caught:
        if issubclass(w.category, PrivacyWarning):
            text = " ".join(str(w.message).split())
            if text not in notes:
                notes.append(text)
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return notes


def run_demo(
    output: str | Path | None = "geoldp-demo",
    *,
    n_trips: int = 2000,
    n_points: int = 1000,
    epsilon: float = 4.0,
    seed: int = 0,
    plot: bool = True,
    stream: TextIO | None = None,
    overwrite: bool = False,
) -> DemoResult:
    """Run TP and ATP on a synthetic city, print a utility table with baselines and write files.

    First it prints the plan (:func:`geoldp.plan` on public inputs only): the expected zone-visit error of
    each design next to the no-data baselines, and the design it recommends.

    The table also has the collector-side rows "ATP estimated" and "ATP denoised" (:mod:`geoldp.estimate`
    on the ATP release alone, with the fast parameters :data:`DEMO_ESTIMATE_OPTIONS`). The files are
    GeoJSON (points, originals, both releases with their ledgers), ``map.png`` (four trajectories,
    original vs TP vs ATP vs ATP denoised) and ``density.png`` (visit share per 1.5 km zone: original, raw
    TP, raw ATP, ATP estimated and the uniform baseline, on one colour scale).

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
    overwrite : bool, default False
        Replace the files of an earlier run. Without it an existing output file is an error; a symbolic
        link at an output path is refused in any case. All paths are checked before anything is computed.

    Returns
    -------
    DemoResult
        The utility table, the files written and the perturbation time.

    Raises
    ------
    ValueError
        An output file exists (without ``overwrite``) or is a symbolic link or not a regular file.

    Examples
    --------
    >>> from geoldp.demo import run_demo
    >>> result = run_demo(None, n_trips=50, n_points=100, stream=open("/dev/null", "w"))  # doctest: +SKIP
    >>> list(result.table.index)  # doctest: +SKIP
    ['TP raw', 'ATP raw', 'ATP estimated', 'ATP denoised', 'uniform', 'constant']
    """
    from geoldp.datasets import synthetic_city  # importing geoldp registers the .ldp accessor
    from geoldp.zones import zone_grid

    out = sys.stdout if stream is None else stream
    has_matplotlib = importlib.util.find_spec("matplotlib") is not None
    if output is not None:  # every output checked before any work: nothing is half-written or clobbered
        has_folium = importlib.util.find_spec("folium") is not None
        names = [*_GEOJSON_OUTPUTS, *(_FIGURE_OUTPUTS if plot and has_matplotlib else ())]
        names += list(_WEB_OUTPUTS if plot and has_folium else ())
        if os.path.isdir(output):
            for name in names:
                _safe_write.check_output(Path(output) / name, overwrite=overwrite, what="demo output")
    points, trips = synthetic_city(n_points=n_points, n_trips=n_trips, seed=seed)
    n_vertices = int(sum(len(g.coords) for g in trips.geometry))
    print(
        f"geoldp demo: synthetic city with {len(points)} public points and {len(trips)} trips "
        f"({n_vertices} points in total), epsilon = {epsilon:g} per trip, seed = {seed}",
        file=out,
    )

    rng = np.random.default_rng(seed)
    _say_kernel_stage(out)
    _print_plan(points, len(trips), epsilon, seed, out)
    print("Perturbing with TP and ATP ...", file=out, flush=True)
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
    notes = _privacy_notes(caught)

    text = f"Perturbed in {seconds:.1f} s; evaluating and estimating from the ATP release ..."
    print(text, file=out, flush=True)
    t1 = time.perf_counter()
    table = utility_table(
        trips, {f"{k} raw": v for k, v in perturbed.items()}, points=points, estimate=("ATP raw",), rng=seed
    )
    est_seconds = time.perf_counter() - t1
    print(_TABLE_LEGEND.format(options=DEMO_ESTIMATE_OPTIONS), file=out)
    print(format_table(table), file=out)
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
        releases = {label.lower(): frame for label, frame in perturbed.items()}
        for role, frame in {"points": points, "original": trips, **releases}.items():
            files[role] = folder / f"{role}.geojson"  # the releases with their ledgers
            gio.to_geojson(frame, files[role], ledger=role in releases, overwrite=overwrite)
        if plot and has_matplotlib:
            from geoldp import estimate, metrics

            t1 = time.perf_counter()
            zones = zone_grid(points, cell_km=1.5)
            opts = dict(DEMO_ESTIMATE_OPTIONS)
            denoised = estimate.denoise(
                perturbed["ATP"], points, rng=seed, **{k: v for k, v in opts.items() if k != "n_boot"}
            )
            atp_zones = estimate.visit_counts(perturbed["ATP"], points, zones=zones, rng=seed, **opts)
            est_seconds += time.perf_counter() - t1
            shown = {**perturbed, "ATP denoised": denoised}
            files["map"] = save_comparison_map(
                trips, shown, folder / "map.png", points=points, overwrite=overwrite
            )
            uniform = metrics.baseline_release("uniform", points, _lengths(trips), rng=seed)
            counts = {"original": metrics.zone_visit_counts(trips, zones)}
            for label, frame in perturbed.items():
                counts[f"{label} raw"] = metrics.zone_visit_counts(frame, zones)
            counts["ATP estimated"] = atp_zones
            counts["uniform"] = metrics.zone_visit_counts(uniform, zones, points=points)
            files["density"] = save_density_map(counts, zones, folder / "density.png", overwrite=overwrite)
        if plot:  # the interactive map: the ATP release over the originals (an HTML page)
            html = save_comparison_html(
                trips, perturbed["ATP"], folder / "map.html", points=points, overwrite=overwrite
            )
            if html is not None:
                files["map_html"] = html
        print("Files written:", file=out)
        for role, path in files.items():
            print(f"  {role:<9} {path}", file=out)
        if plot and not has_matplotlib:
            print('Map skipped: matplotlib is not installed (pip install "geoldp[plot]").', file=out)
        if plot and "map_html" not in files:
            print('Web map skipped: folium is not installed (pip install "geoldp[explore]").', file=out)
    print(
        f"Perturbation time: {seconds:.1f} s for {2 * len(trips)} trajectory releases "
        "(TP and ATP; without the kernels compiled at install, the first run includes numba's compilation).",
        file=out,
    )
    print(f"Estimation time: {est_seconds:.1f} s (collector-side estimates of the ATP release).", file=out)
    return DemoResult(table=table, files=files, seconds=seconds)

"""Plots: visit-density maps per zone, trajectories original vs released, and utility-vs-ε curves.

matplotlib is an optional dependency (``pip install geoldp[plot]``); it is imported inside the functions, so
``import geoldp.plotting`` works without it.
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np
import pandas as pd

from geoldp._core.frames import as_pointset, trajectory_arrays
from geoldp._core.geo import KM_PER_DEGREE
from geoldp._core.validation import missing_column
from geoldp.metrics._pairing import check_same_rows

__all__ = [
    "plot_estimate_layer",
    "plot_intervals",
    "plot_trajectories",
    "plot_trajectory_panels",
    "plot_utility",
    "plot_zone_density",
]


def _pyplot() -> Any:
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            "geoldp.plotting needs matplotlib. Install it with `pip install geoldp[plot]`."
        ) from exc
    return plt


def _check_count(value: Any, name: str, caller: str) -> None:
    """Refuse (ValueError) a ``value`` that is not an int >= 1."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(f"The {name!r} parameter of {caller} must be an int >= 1. Got {value!r} instead.")


def plot_trajectories(
    original: Any,
    perturbed: Any,
    *,
    n: int = 20,
    ax: Any = None,
    points: Any = None,
    rows: Any = None,
) -> Any:
    """Draw a sample of original and perturbed trajectories on one lon/lat map.

    Row i of ``original`` and row i of ``perturbed`` share a colour; originals are solid lines with round
    markers, perturbed ones dashed with crosses. The public points, when given, are drawn as small grey dots.

    Parameters
    ----------
    original, perturbed : GeoDataFrame, GeoSeries or sequence of array_like of int
        Trajectories matched by position (any CRS; drawn in WGS84 lon/lat degrees).
    n : int, default 20
        Number of rows to draw when ``rows`` is not given: ``n`` rows evenly spaced over the frame
        (deterministic, no randomness).
    ax : matplotlib.axes.Axes, optional
        Axes to draw on; a new figure is created otherwise.
    points : PointSet, GeoDataFrame of Points or (m, 2) array, optional
        Public point set: drawn as background, and required for index-array input.
    rows : sequence of int, optional
        Explicit row positions to draw.

    Returns
    -------
    matplotlib.axes.Axes
    """
    caller = "plot_trajectories"
    _check_count(n, "n", caller)
    pts = as_pointset(points, caller=caller) if points is not None else None
    to = trajectory_arrays(original, pts, name="original", caller=caller)
    tp = trajectory_arrays(perturbed, pts, name="perturbed", caller=caller)
    check_same_rows(to, tp, caller=caller)
    if rows is None:
        sel = np.unique(
            np.linspace(0, max(to.n_trajectories - 1, 0), num=min(int(n), to.n_trajectories))
            .round()
            .astype(int)
        )
    else:
        sel = np.asarray(rows, dtype=np.int64).ravel()
        if sel.size and (sel.min() < -to.n_trajectories or sel.max() >= to.n_trajectories):
            raise ValueError(f"The 'rows' of {caller} must be row positions in [0, {to.n_trajectories}).")
        sel = sel % max(to.n_trajectories, 1)
    plt = _pyplot()
    if ax is None:
        _, ax = plt.subplots(figsize=(7, 7))
    if pts is not None:
        ax.scatter(pts.lon, pts.lat, s=3, c="0.75", zorder=1, label="public points")
    cmap = plt.get_cmap("tab20")
    for j, r in enumerate(sel):
        colour = cmap(j % 20)
        for tr, style, marker, label in ((to, "-", "o", "original"), (tp, "--", "x", "perturbed")):
            a, b = tr.offsets[r], tr.offsets[r + 1]
            ax.plot(
                tr.lon[a:b],
                tr.lat[a:b],
                linestyle=style,
                marker=marker,
                markersize=4,
                color=colour,
                linewidth=1.2,
                zorder=2,
                label=label if j == 0 else None,
            )
    ax.set_xlabel("longitude (°)")
    ax.set_ylabel("latitude (°)")
    ax.set_title(f"{len(sel)} trajectories: original (solid) vs perturbed (dashed)")
    mid_lat = float(np.mean(to.lat)) if to.lat.size else 0.0
    ax.set_aspect(1.0 / max(np.cos(np.radians(mid_lat)), 1e-3))
    ax.legend(loc="best", fontsize="small")
    return ax


def plot_utility(
    table: pd.DataFrame,
    *,
    metric: str = "NE",
    param: float | None = None,
    ax: Any = None,
    x: str = "epsilon",
    hue: str = "mechanism",
) -> Any:
    """Plot a utility metric against ε, one line per mechanism, from an evaluation table.

    Rows with the same (``hue``, ``x``) (e.g. repetitions) are averaged; error bars show ± one standard
    deviation when there are several.

    Parameters
    ----------
    table : pandas.DataFrame
        Long table with columns ``metric``, ``value``, ``x`` (default ``epsilon``) and ``hue`` (default
        ``mechanism``), optionally ``param``, as ``docs/results/*.csv``; or :func:`geoldp.evaluate`'s
        tables concatenated, each with an ``x`` column (``t.assign(epsilon=4.0)``): one line per release
        label (their index, or a ``hue`` column), ``metric`` one of their columns (``"NE_km"``). If it has
        a ``dataset`` column, it must hold a single dataset (filter it first).
    metric : str, default "NE"
        Value of the ``metric`` column to plot (of a long table), or the column of evaluate's tables.
    param : float, optional
        Value of the ``param`` column to keep (e.g. δ for PRQ). Required when the metric has several.
    ax : matplotlib.axes.Axes, optional
        Axes to draw on; a new figure is created otherwise.
    x, hue : str
        Column names for the x axis and for the lines.

    Returns
    -------
    matplotlib.axes.Axes
    """
    caller = "plot_utility"
    if not isinstance(table, pd.DataFrame):
        raise TypeError(
            f"The 'table' parameter of {caller} must be a pandas DataFrame. Got {type(table).__name__}."
        )
    if "metric" not in table.columns and metric in table.columns:  # evaluate()'s tables, stacked
        rows = table if hue in table.columns else table.rename_axis(hue).reset_index()
        table = rows.assign(metric=metric, value=rows[metric])
    missing = [c for c in ("metric", "value", x, hue) if c not in table.columns]
    if missing:
        raise ValueError(f"The 'table' of {caller} lacks the column(s) {missing}.")
    if "dataset" in table.columns and table["dataset"].nunique() > 1:
        raise ValueError(
            f"The 'table' of {caller} holds several datasets; select one first, e.g. "
            "table[table.dataset == 'chi_atp']."
        )
    sub = table[table["metric"] == metric]
    if sub.empty:
        raise ValueError(
            f"Got metric={metric!r}; the table of {caller} has the metrics "
            f"{sorted(table['metric'].unique())}."
        )
    label_param = ""
    if "param" in sub.columns:
        params = sub["param"].dropna().unique()
        if param is not None:
            sub = sub[np.isclose(sub["param"].astype(float), float(param))]
            if sub.empty:
                raise ValueError(
                    f"Got param={param!r}; metric {metric!r} has the params {sorted(params.tolist())}."
                )
            label_param = f" (param = {param:g})"
        elif params.size > 1:
            raise ValueError(
                f"Metric {metric!r} has several params {sorted(params.tolist())}; pass `param=` to {caller}."
            )
    plt = _pyplot()
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 4))
    stats = sub.groupby([hue, x], sort=True)["value"].agg(["mean", "std", "count"]).reset_index()
    order = list(dict.fromkeys(sub[hue]))  # lines in order of first appearance in the table
    for name in order:
        grp = stats[stats[hue] == name]
        yerr = grp["std"].where(grp["count"] > 1).fillna(0.0).to_numpy()
        ax.errorbar(
            grp[x].to_numpy(float),
            grp["mean"].to_numpy(float),
            yerr=yerr,
            marker="o",
            capsize=3,
            label=str(name),
        )
    ax.set_xlabel("ε" if x == "epsilon" else x)
    ax.set_ylabel(metric + label_param)
    ax.legend(fontsize="small")
    ax.grid(True, alpha=0.3)
    return ax


# --------------------------------------------------------------------------------------------------
# visit density per zone
# --------------------------------------------------------------------------------------------------

#: Colours of the releases in :func:`plot_trajectory_panels` (colour-blind safe, distinct from black).
RELEASE_COLOURS = ("#E69F00", "#0072B2", "#009E73", "#CC79A7", "#D55E00", "#56B4E9")


def _new_figure(fig: Any, figsize: Any, default: tuple[float, float]) -> Any:
    """A new pyplot figure of ``figsize`` (or ``default``), or ``fig`` resized to ``figsize`` if given."""
    if fig is None:
        return _pyplot().figure(figsize=figsize or default, layout="constrained")
    if figsize is not None:
        fig.set_size_inches(*figsize)
    return fig


def _panels(fig: Any, figsize: Any, count: int, max_cols: int, size: tuple[float, ...]) -> tuple[Any, Any]:
    """``fig`` (:func:`_new_figure`, default size ``(a·cols + b, c·rows + d)``) and its ``count`` panels."""
    ncols = min(count, int(max_cols))
    nrows = -(-count // ncols)
    fig = _new_figure(fig, figsize, (size[0] * ncols + size[1], size[2] * nrows + size[3]))
    axes = np.atleast_1d(fig.subplots(nrows, ncols, squeeze=False)).ravel()
    for ax in axes[count:]:
        ax.set_axis_off()
    return fig, axes[:count]


def _zone_shares(counts: Any, zones: Any, label: str) -> np.ndarray:
    """Counts per zone (Series indexed like ``zones`` or an array in zone order) as shares in %."""
    if isinstance(counts, pd.DataFrame):
        if "estimate" not in counts.columns:
            raise ValueError(f"The counts of {label!r} are a DataFrame without an 'estimate' column.")
        counts = counts["estimate"]
    if isinstance(counts, pd.Series):
        counts = counts.reindex(zones.index, fill_value=0.0)
    arr = np.clip(np.asarray(counts, dtype=np.float64), 0.0, None)
    if arr.shape != (len(zones),) or not np.all(np.isfinite(arr)):
        raise ValueError(f"The counts of {label!r} must hold one finite count per zone ({len(zones)}).")
    total = arr.sum()
    return 100.0 * arr / total if total > 0 else arr


def plot_zone_density(
    counts: Any,
    zones: Any,
    *,
    reference: str | None = None,
    points: Any = None,
    fig: Any = None,
    max_cols: int = 4,
    gamma: float = 0.5,
    figsize: Any = None,
) -> Any:
    """Visit-density maps per zone, one panel per entry, on one shared colour scale.

    Each panel shows, for every zone, its share of all zone visits (in %; the normalised distinct-visit
    counts of :func:`geoldp.metrics.zone_visit_counts`), so a release, a baseline and a collector-side
    estimate (one more entry of ``counts``) are compared on the same scale. Panel titles give the L1
    distance of each distribution to the ``reference`` one (:func:`geoldp.metrics.zone_visit_error`).

    Parameters
    ----------
    counts : mapping of str to Series, DataFrame or array_like
        Label → counts per zone: a Series indexed by the zones' index, a DataFrame with an ``estimate``
        column, or an array in zone order. Negative values are drawn as 0.
    zones : GeoDataFrame of polygons
        The zones (any CRS; drawn in EPSG:4326), e.g. :func:`geoldp.zone_grid`.
    reference : str, optional
        Label the L1 distances refer to; default the first entry (e.g. "original").
    points : PointSet, GeoDataFrame of Points or (m, 2) array, optional
        Public points, drawn as faint grey dots on top.
    fig : matplotlib.figure.Figure, optional
        Figure to draw on (its content is replaced); a new pyplot figure otherwise.
    max_cols : int, default 4
        Panels per row.
    gamma : float, default 0.5
        Exponent of the colour scale (``PowerNorm``): < 1 shows the quieter zones too. Zones without a
        visit are white.
    figsize : (float, float), optional
        Figure size in inches; default about 3.4 x 3.6 per panel.

    Returns
    -------
    matplotlib.figure.Figure
    """
    caller = "plot_zone_density"
    from collections.abc import Mapping

    import geopandas as gpd
    from matplotlib.colors import PowerNorm

    if not isinstance(counts, Mapping) or not counts:
        raise TypeError(f"The 'counts' parameter of {caller} must be a non-empty mapping label -> counts.")
    if not isinstance(zones, gpd.GeoDataFrame | gpd.GeoSeries) or zones.crs is None:
        raise TypeError(f"The 'zones' parameter of {caller} must be a GeoDataFrame of polygons with a CRS.")
    _check_count(max_cols, "max_cols", caller)
    labels = [str(k) for k in counts]
    reference = labels[0] if reference is None else str(reference)
    if reference not in labels:
        raise ValueError(f"Got reference={reference!r}; it must be one of the labels {labels}.")
    shares = {str(k): _zone_shares(v, zones, str(k)) for k, v in counts.items()}
    z = zones.to_crs("EPSG:4326")
    geoms = z.geometry if isinstance(z, gpd.GeoDataFrame) else z
    vmax = max(float(v.max()) for v in shares.values()) or 1.0
    norm = PowerNorm(gamma=gamma, vmin=0.0, vmax=vmax)
    cmap = _pyplot().get_cmap("magma_r")
    fig, axes = _panels(fig, figsize, len(labels), max_cols, (3.2, 1.0, 3.5, 0.3))
    pts = as_pointset(points, caller=caller) if points is not None else None
    b = geoms.total_bounds
    mid_lat = 0.5 * (b[1] + b[3])
    for ax, lab in zip(axes, labels, strict=False):
        colours = cmap(norm(shares[lab]))
        colours[shares[lab] <= 0] = (1.0, 1.0, 1.0, 1.0)
        gpd.GeoSeries(geoms.values, crs="EPSG:4326").plot(
            ax=ax, color=colours, edgecolor="0.85", linewidth=0.2
        )
        if pts is not None:
            ax.scatter(pts.lon, pts.lat, s=0.6, c="0.55", alpha=0.35, linewidths=0, zorder=3)
        p, q = shares[reference] / 100.0, shares[lab] / 100.0
        sub = "" if lab == reference else f"\nL1 to {reference}: {np.abs(p - q).sum():.2f}"
        ax.set_title(f"{lab}{sub}", fontsize="medium")
        ax.set_xlim(b[0], b[2])
        ax.set_ylim(b[1], b[3])
        ax.set_aspect(1.0 / max(np.cos(np.radians(mid_lat)), 1e-3))
        ax.set_xticks([])
        ax.set_yticks([])
        ax.set_xlabel("")
        ax.set_ylabel("")
    side = _zone_side_km(zones)
    _scale_bar(axes[0], b, mid_lat, f"zones: {side:.2g} km" if side else "")
    sm = _pyplot().cm.ScalarMappable(norm=norm, cmap=cmap)
    cbar = fig.colorbar(sm, ax=axes.tolist(), shrink=0.8, pad=0.02, aspect=25)
    cbar.set_label("share of zone visits (%)")
    return fig


def _zone_side_km(zones: Any) -> float | None:
    """The side of a square of the zones' median area, km (None if the area cannot be measured)."""
    try:
        area = zones.to_crs(zones.estimate_utm_crs()).area
    except Exception:  # no UTM zone fits (a global layer): no size in the label
        return None
    med = float(np.median(area)) if len(area) else 0.0
    return med**0.5 / 1000.0 if med > 0 else None


def _scale_bar(ax: Any, bounds: Any, mid_lat: float, note: str = "") -> None:
    """A scale bar of a round length (about a fifth of the width) in the lower left of ``ax`` (lon/lat).

    ``note`` (the zone size) follows its length.
    """
    km_per_deg = 111.32 * max(np.cos(np.radians(mid_lat)), 1e-3)
    width_km = (bounds[2] - bounds[0]) * km_per_deg
    if not width_km > 0:
        return
    target = width_km / 5.0
    step = 10.0 ** np.floor(np.log10(target))
    length = max(m * step for m in (1, 2, 5) if m * step <= target)
    x0 = bounds[0] + 0.05 * (bounds[2] - bounds[0])
    y0 = bounds[1] + 0.05 * (bounds[3] - bounds[1])
    x1 = x0 + length / km_per_deg
    ax.plot([x0, x1], [y0, y0], color="black", linewidth=2, solid_capstyle="butt", zorder=5)
    label = f"{length:g} km" if length >= 1 else f"{length * 1000:g} m"
    label = f"{label}; {note}" if note else label
    ax.text(x0, y0 + 0.02 * (bounds[3] - bounds[1]), label, ha="left", va="bottom", fontsize="small",
            zorder=5, bbox={"facecolor": "white", "alpha": 0.8, "edgecolor": "none", "pad": 1})  # fmt: skip


# --------------------------------------------------------------------------------------------------
# a handful of trajectories, original vs released
# --------------------------------------------------------------------------------------------------


def plot_trajectory_panels(
    original: Any,
    releases: Any,
    *,
    rows: Any = None,
    n: int = 4,
    points: Any = None,
    fig: Any = None,
    max_cols: int = 4,
    figsize: Any = None,
) -> Any:
    """Small multiples: one panel per trajectory, the original and every release drawn on top.

    Each panel is centred on one trajectory, in km east and north of the centre of its original points.
    The original is black (solid, numbered vertices, a square at the start); each release has its own
    colour (dashed, crosses), and the public points within view are faint grey context. The legend sits
    below the panels, outside the data.

    Parameters
    ----------
    original : GeoDataFrame, GeoSeries or sequence of array_like of int
        Original trajectories.
    releases : mapping of str to trajectories
        Label → released trajectories matched to ``original`` by position (e.g. "TP", "ATP", "denoised").
    rows : sequence of int, optional
        Row positions to draw. Default: ``n`` rows evenly spaced among the longest-enough trajectories
        (at least 4 points where there are ``n`` of them), deterministic.
    n : int, default 4
        Number of panels when ``rows`` is not given.
    points : PointSet, GeoDataFrame of Points or (m, 2) array, optional
        Public points (context), required for index-array input.
    fig : matplotlib.figure.Figure, optional
        Figure to draw on; a new pyplot figure otherwise.
    max_cols : int, default 4
        Panels per row.
    figsize : (float, float), optional
        Figure size in inches; default about 3.4 x 3.6 per panel.

    Returns
    -------
    matplotlib.figure.Figure
    """
    caller = "plot_trajectory_panels"
    from collections.abc import Mapping

    from matplotlib.lines import Line2D

    if not isinstance(releases, Mapping) or not releases:
        raise TypeError(
            f"The 'releases' parameter of {caller} must be a non-empty mapping label -> trajectories."
        )
    _check_count(n, "n", caller)
    pts = as_pointset(points, caller=caller) if points is not None else None
    to = trajectory_arrays(original, pts, name="original", caller=caller)
    rel = {}
    for lab, obj in releases.items():
        tr = trajectory_arrays(obj, pts, name=f"releases[{lab!r}]", caller=caller)
        check_same_rows(to, tr, caller=caller, name=f"releases[{lab!r}]")
        rel[str(lab)] = tr
    if rows is None:
        long_rows = np.flatnonzero(to.lengths >= 4)
        pool = long_rows if long_rows.size >= n else np.arange(to.n_trajectories)
        pick = np.unique(np.linspace(0, pool.size - 1, num=min(int(n), pool.size)).round().astype(int))
        sel = pool[pick]
    else:
        sel = np.asarray(rows, dtype=np.int64).ravel()
        if sel.size == 0 or sel.min() < 0 or sel.max() >= to.n_trajectories:
            raise ValueError(f"The 'rows' of {caller} must be row positions in [0, {to.n_trajectories}).")
    fig, axes = _panels(fig, figsize, sel.size, max_cols, (3.4, 0.0, 3.4, 0.5))
    for ax, r in zip(axes, sel, strict=False):
        a, b = to.offsets[r], to.offsets[r + 1]
        lon0, lat0 = float(np.mean(to.lon[a:b])), float(np.mean(to.lat[a:b]))
        kx = KM_PER_DEGREE * np.cos(np.radians(lat0))

        def km(
            lon: np.ndarray, lat: np.ndarray, lon0: float = lon0, lat0: float = lat0, kx: float = kx
        ) -> Any:
            return (lon - lon0) * kx, (lat - lat0) * KM_PER_DEGREE

        xs, ys = [km(to.lon[a:b], to.lat[a:b])[0]], [km(to.lon[a:b], to.lat[a:b])[1]]
        for tr in rel.values():
            x, y = km(tr.lon[tr.offsets[r] : tr.offsets[r + 1]], tr.lat[tr.offsets[r] : tr.offsets[r + 1]])
            xs.append(x)
            ys.append(y)
        allx, ally = np.concatenate(xs), np.concatenate(ys)
        half = 0.55 * max(float(np.ptp(allx)), float(np.ptp(ally)), 0.5)
        cx, cy = 0.5 * (allx.min() + allx.max()), 0.5 * (ally.min() + ally.max())
        if pts is not None:
            px, py = km(pts.lon, pts.lat)
            view = (np.abs(px - cx) <= half) & (np.abs(py - cy) <= half)
            ax.scatter(px[view], py[view], s=4, c="0.8", linewidths=0, zorder=1)
        for j, (x, y) in enumerate(zip(xs[1:], ys[1:], strict=True)):
            colour = RELEASE_COLOURS[j % len(RELEASE_COLOURS)]
            ax.plot(x, y, linestyle="--", marker="x", color=colour, lw=1.4, ms=6, mew=1.6, zorder=3)
        x, y = xs[0], ys[0]
        ax.plot(x, y, "-o", color="black", lw=2.0, ms=4, zorder=4)
        ax.plot(x[:1], y[:1], "s", mfc="white", mec="black", ms=9, mew=1.5, zorder=5)
        for i, (xi, yi) in enumerate(zip(x, y, strict=True)):
            ax.annotate(str(i + 1), (xi, yi), xytext=(4, 4), textcoords="offset points", fontsize=7, zorder=6)
        ax.set_xlim(cx - half, cx + half)
        ax.set_ylim(cy - half, cy + half)
        ax.set_aspect("equal")
        # mean displacement of each release on this trajectory (its NE term), when lengths match
        errs = [
            f"{lab} {float(np.mean(np.hypot(x - xs[0], y - ys[0]))):.1f}"
            for lab, x, y in zip(rel, xs[1:], ys[1:], strict=True)
            if x.shape == xs[0].shape
        ]
        # two errors per line: the title stays within its panel with three or more releases
        lines = [", ".join(errs[i : i + 2]) for i in range(0, len(errs), 2)]
        sub = "\nmean error (km): " + ",\n".join(lines) if errs else ""
        ax.set_title(f"trajectory {int(r)} ({b - a} points){sub}", fontsize="medium")
        ax.set_xlabel("km east", fontsize="small")
        ax.set_ylabel("km north", fontsize="small")
        ax.tick_params(labelsize="x-small")
        ax.grid(True, alpha=0.25)
    handles = [
        Line2D([], [], color="black", marker="o", lw=2.0, ms=4, label="original (1, 2, ... = order)"),
        Line2D([], [], color="black", marker="s", mfc="white", ls="none", ms=8, label="start"),
    ]
    handles += [
        Line2D([], [], color=RELEASE_COLOURS[j % len(RELEASE_COLOURS)], ls="--", marker="x", ms=6, label=lab)
        for j, lab in enumerate(rel)
    ]
    if pts is not None:
        handles.append(Line2D([], [], color="0.8", marker="o", ls="none", ms=4, label="public points"))
    fig.legend(
        handles=handles, loc="outside lower center", ncols=len(handles), fontsize="small", frameon=False
    )
    return fig


# --------------------------------------------------------------------------------------------------
# estimates with intervals (the layers of geoldp.layers)
# --------------------------------------------------------------------------------------------------


def _check_estimates(table: Any, name: str, caller: str) -> None:
    missing = [c for c in ("estimate", "lower", "upper") if c not in getattr(table, "columns", ())]
    if missing:
        raise ValueError(
            f"The {name!r} parameter of {caller} needs the columns estimate, lower and upper (a table of "
            f"geoldp.estimate or a layer of geoldp.layers); missing {missing}."
        )


def plot_intervals(
    table: Any, *, k: int = 20, label_col: Any = None, ax: Any = None, level: float | None = None
) -> Any:
    """The ``k`` largest estimates as dots with their intervals as bars, and the release's raw count.

    Parameters
    ----------
    table : pandas.DataFrame or geopandas.GeoDataFrame
        Columns ``estimate``, ``lower``, ``upper`` (and ``raw``, drawn as a cross when present): a table of
        :mod:`geoldp.estimate` or a layer of :mod:`geoldp.layers`.
    k : int, default 20
        Rows drawn (by decreasing estimate).
    label_col : column label, optional
        The row labels (default: ``zone``, ``point``, ``region`` or ``origin``→``destination`` when
        present, else the index).
    ax : matplotlib.axes.Axes, optional
        Axes to draw on; a new figure otherwise.
    level : float, optional
        The intervals' coverage, for the legend.

    Returns
    -------
    matplotlib.axes.Axes
    """
    caller = "plot_intervals"
    _check_estimates(table, "table", caller)
    _check_count(k, "k", caller)
    if label_col is not None and label_col not in table.columns:
        raise missing_column("label_col", caller, label_col, table.columns, where="'table'")
    plt = _pyplot()
    est = table["estimate"].to_numpy(dtype=np.float64)
    order = np.lexsort((np.arange(len(table)), -est))[: int(k)]
    rows = table.iloc[order]
    if list(rows.index.names) == ["origin", "destination"]:  # an answer table of OD pairs
        rows = rows.reset_index()
    if label_col is not None:
        labels = [str(v) for v in rows[label_col]]
    elif {"origin", "destination"} <= set(rows.columns):
        labels = [f"{o} → {d}" for o, d in zip(rows["origin"], rows["destination"], strict=True)]
    else:
        col = next((c for c in ("zone", "point", "region") if c in rows.columns), None)
        labels = [str(v) for v in (rows[col] if col is not None else rows.index)]
    if ax is None:
        ax = plt.figure(figsize=(6.0, 0.9 + 0.28 * len(rows)), layout="constrained").add_subplot()
    y = np.arange(len(rows))[::-1]
    e = rows["estimate"].to_numpy(dtype=np.float64)
    lo = rows["lower"].to_numpy(dtype=np.float64)
    hi = rows["upper"].to_numpy(dtype=np.float64)
    what = "interval" if level is None else f"{level:.0%} interval"
    ax.hlines(y, lo, hi, color="#0072B2", linewidth=3, alpha=0.5, label=what)
    ax.plot(e, y, "o", color="#0072B2", label="estimate")
    if "raw" in rows.columns:
        ax.plot(rows["raw"].to_numpy(dtype=np.float64), y, "x", color="#D55E00", label="raw (the release)")
    ax.set_yticks(y, labels)
    ax.set_xlabel("trajectories")
    ax.set_xlim(left=0.0)
    ax.legend(loc="lower right", fontsize="small")
    return ax


def plot_estimate_layer(
    layer: Any, *, fig: Any = None, figsize: Any = None, gamma: float = 0.5, title: str | None = None
) -> Any:
    """Map an estimate layer with its uncertainty: the estimate and the interval width side by side.

    Polygons (zones) and points are coloured by ``estimate`` and by ``width`` (``upper - lower``) on two
    panels; OD flows (LineStrings) are drawn with a line width proportional to the estimate, next to
    :func:`plot_intervals` of the largest flows.

    Parameters
    ----------
    layer : geopandas.GeoDataFrame
        A layer of :func:`geoldp.layers.estimate_layers` (or any frame with ``estimate``, ``lower``,
        ``upper``), any CRS (drawn in EPSG:4326).
    fig : matplotlib.figure.Figure, optional
        Figure to draw on; a new pyplot figure otherwise.
    figsize : (float, float), optional
        Figure size in inches.
    gamma : float, default 0.5
        Exponent of the colour scales (< 1 shows the quieter zones too).
    title : str, optional
        A title over both panels.

    Returns
    -------
    matplotlib.figure.Figure
    """
    caller = "plot_estimate_layer"
    import geopandas as gpd
    from matplotlib.colors import PowerNorm

    if not isinstance(layer, gpd.GeoDataFrame) or layer.crs is None:
        raise TypeError(f"The 'layer' parameter of {caller} must be a GeoDataFrame with a CRS.")
    _check_estimates(layer, "layer", caller)
    z = layer.to_crs("EPSG:4326")
    fig = _new_figure(fig, figsize, (10.0, 4.6))
    ax1, ax2 = fig.subplots(1, 2)
    lines = bool(len(z)) and bool(z.geom_type.isin(["LineString", "MultiLineString"]).all())
    if lines:
        est = np.clip(z["estimate"].to_numpy(dtype=np.float64), 0.0, None)
        top = est.max() if est.size and est.max() > 0 else 1.0
        widths = 0.3 + 5.0 * est / top
        for geom, w in zip(z.geometry.values, widths, strict=True):
            xs, ys = geom.xy
            ax1.plot(xs, ys, color="#0072B2", linewidth=w, alpha=0.6, solid_capstyle="round")
        ax1.set_title("flows (line width: estimate)", fontsize="medium")
        ax1.set_aspect(1.0 / max(np.cos(np.radians(float(np.mean(z.total_bounds[1::2])))), 1e-3))
        plot_intervals(z, k=15, ax=ax2)
        ax2.set_title("largest flows with intervals", fontsize="medium")
    else:
        width = (z["upper"] - z["lower"]).to_numpy(dtype=np.float64)
        for ax, values, label, cmap in (
            (ax1, z["estimate"].to_numpy(dtype=np.float64), "estimate", "magma_r"),
            (ax2, width, "interval width (upper - lower)", "viridis_r"),
        ):
            v = np.clip(np.nan_to_num(values, nan=0.0), 0.0, None)
            norm = PowerNorm(gamma=gamma, vmin=0.0, vmax=float(v.max()) or 1.0)
            z.assign(_v=v).plot(column="_v", ax=ax, cmap=cmap, norm=norm, edgecolor="0.85", linewidth=0.2)
            sm = _pyplot().cm.ScalarMappable(norm=norm, cmap=cmap)
            fig.colorbar(sm, ax=ax, shrink=0.8, pad=0.02, aspect=25).set_label(label)
            ax.set_title(label, fontsize="medium")
    for ax in (ax1,) if lines else (ax1, ax2):
        ax.set_xticks([])
        ax.set_yticks([])
    if title:
        fig.suptitle(title)
    return fig

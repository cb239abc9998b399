"""Plots: original vs perturbed trajectories on one map, and utility-vs-ε curves.

matplotlib is an optional dependency (``pip install geoldp[plot]``); it is imported inside the functions, so
``import geoldp.plotting`` works without it.
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np
import pandas as pd

from geoldp._frames import as_pointset, trajectory_arrays

__all__ = ["plot_trajectories", "plot_utility"]


def _pyplot() -> Any:
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            "geoldp.plotting needs matplotlib. Install it with `pip install geoldp[plot]`."
        ) from exc
    return plt


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
    if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 1:
        raise ValueError(f"The 'n' parameter of {caller} must be an int >= 1. Got {n!r} instead.")
    pts = as_pointset(points, caller=caller) if points is not None else None
    to = trajectory_arrays(original, pts, name="original", caller=caller)
    tp = trajectory_arrays(perturbed, pts, name="perturbed", caller=caller)
    if to.n_traj != tp.n_traj:
        raise ValueError(
            f"{caller}: 'original' has {to.n_traj} rows and 'perturbed' has {tp.n_traj}; rows are matched by "
            "position."
        )
    if rows is None:
        sel = np.unique(np.linspace(0, max(to.n_traj - 1, 0), num=min(int(n), to.n_traj)).round().astype(int))
    else:
        sel = np.asarray(rows, dtype=np.int64).ravel()
        if sel.size and (sel.min() < -to.n_traj or sel.max() >= to.n_traj):
            raise ValueError(f"The 'rows' of {caller} must be row positions in [0, {to.n_traj}).")
        sel = sel % max(to.n_traj, 1)
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
        ``mechanism``), optionally ``param`` — for instance :func:`geoldp.metrics.evaluate` outputs
        concatenated with an ``epsilon`` and a ``mechanism`` column, or ``docs/results/*.csv``. If it has a
        ``dataset`` column, it must hold a single dataset (filter it first).
    metric : str, default "NE"
        Value of the ``metric`` column to plot.
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

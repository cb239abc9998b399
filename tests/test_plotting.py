"""Plotting functions produce figures under the Agg backend."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import geoldp  # noqa: E402
from geoldp import metrics  # noqa: E402
from geoldp.plotting import (  # noqa: E402
    plot_trajectories,
    plot_trajectory_panels,
    plot_utility,
    plot_zone_density,
)
from geoldp.trajectory import perturb_trajectories  # noqa: E402

P = np.array([[0.0, 0.0], [0.0, 0.01], [0.01, 0.01], [0.01, 0.0]])
ORIG = [np.array([0, 1, 2]), np.array([3]), np.array([1, 3])]
PERT = [np.array([1, 1, 2]), np.array([0]), np.array([2, 3])]


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _table():
    rows = []
    for mech in ("uniform", "pointem", "tp", "atp"):
        for eps in (1.0, 4.0, 10.0):
            for rep in range(3):
                rows.append(("chi_atp", mech, eps, rep, "NE", np.nan, 10.0 - eps / 10 + rep * 0.01))
                for d in (0.5, 1.0):
                    rows.append(("chi_atp", mech, eps, rep, "PRQ", d, d / 10))
    return pd.DataFrame(rows, columns=["dataset", "mechanism", "epsilon", "rep", "metric", "param", "value"])


def test_plot_trajectories_returns_axes():
    ax = plot_trajectories(ORIG, PERT, points=P, n=2)
    assert isinstance(ax, matplotlib.axes.Axes)
    # 2 rows x (original, perturbed) lines
    assert len(ax.get_lines()) == 4
    ax.figure.canvas.draw()


def test_plot_trajectories_on_given_axes_with_rows():
    fig, ax = plt.subplots()
    out = plot_trajectories(ORIG, PERT, points=P, rows=[0, 2], ax=ax)
    assert out is ax
    assert len(ax.get_lines()) == 4
    with pytest.raises(ValueError, match="'rows' of plot_trajectories"):
        plot_trajectories(ORIG, PERT, points=P, rows=[5])
    with pytest.raises(ValueError, match="'n' parameter of plot_trajectories"):
        plot_trajectories(ORIG, PERT, points=P, n=0)


def test_plot_utility_ne_and_prq():
    table = _table()
    ax = plot_utility(table, metric="NE")
    assert isinstance(ax, matplotlib.axes.Axes)
    assert len(ax.get_legend().get_texts()) == 4
    ax2 = plot_utility(table, metric="PRQ", param=0.5)
    assert ax2.get_ylabel() == "PRQ (param = 0.5)"
    ax2.figure.canvas.draw()


def test_plot_utility_of_evaluate_tables_over_epsilon():
    # the flow a user writes: evaluate a release per epsilon, stack the tables, plot one metric
    tables = []
    for eps in (1.0, 4.0, 8.0):
        released = perturb_trajectories(
            ORIG, geoldp.PointSet(P[:, 0], P[:, 1]), mechanism="tp", epsilon=eps, rng=0
        )
        tables.append(metrics.evaluate(ORIG, {"TP": released}, points=P).assign(epsilon=eps))
    table = pd.concat(tables)
    ax = plot_utility(table, metric="NE_km")
    lines = {c.get_label(): c.lines[0] for c in ax.containers}  # one errorbar per release label
    assert set(lines) == {"TP", "uniform", "constant"} and ax.get_ylabel() == "NE_km"
    tp = table.loc["TP"]
    np.testing.assert_allclose(lines["TP"].get_ydata(), tp["NE_km"].to_numpy())  # one value per epsilon
    with pytest.raises(ValueError, match="lacks the column"):
        plot_utility(table.drop(columns="epsilon"), metric="NE_km")


def test_plot_utility_errors():
    table = _table()
    with pytest.raises(ValueError, match="pass `param=`"):
        plot_utility(table, metric="PRQ")
    with pytest.raises(ValueError, match="the table of plot_utility has the metrics"):
        plot_utility(table, metric="XYZ")
    two = pd.concat([table, table.assign(dataset="nyc_atp")])
    with pytest.raises(ValueError, match="holds several datasets"):
        plot_utility(two)
    with pytest.raises(ValueError, match="lacks the column"):
        plot_utility(table.drop(columns="epsilon"))


def test_plot_zone_density_one_panel_per_entry_shared_scale():
    zones = geoldp.zone_grid(P, cell_km=0.5)
    counts = {
        "original": metrics.zone_visit_counts(ORIG, zones, points=P),
        "raw": metrics.zone_visit_counts(PERT, zones, points=P).to_numpy(),
        "estimate": pd.DataFrame({"estimate": np.ones(len(zones))}, index=zones.index),
    }
    fig = plot_zone_density(counts, zones, points=P)
    axes = [ax for ax in fig.axes if ax.get_label() != "<colorbar>"]
    assert [ax.get_title().splitlines()[0] for ax in axes[:3]] == ["original", "raw", "estimate"]
    # the L1 in the title is the metric's value
    l1 = metrics.zone_visit_error(ORIG, PERT, zones, points=P)["l1"]
    assert f"L1 to original: {l1:.2f}" in axes[1].get_title()
    assert len(fig.axes) == 4  # three maps and one shared colour bar
    # a scale bar with the zone size in the first panel (0.5 km zones: the metric grid's side)
    notes = [t.get_text() for t in axes[0].texts]
    assert any(n.endswith("km; zones: 0.5 km") or n.endswith("m; zones: 0.5 km") for n in notes), notes
    fig.canvas.draw()
    with pytest.raises(ValueError, match="one finite count per zone"):
        plot_zone_density({"x": [1.0]}, zones)
    with pytest.raises(ValueError, match="reference"):
        plot_zone_density(counts, zones, reference="nope")


def test_plot_trajectory_panels_legend_outside():
    fig = plot_trajectory_panels(ORIG, {"TP": PERT, "ATP": ORIG}, points=P, n=3)
    axes = fig.axes
    assert len(axes) == 3
    assert all(ax.get_legend() is None for ax in axes)  # one figure legend, not on the data
    assert len(fig.legends) == 1
    texts = [t.get_text() for t in fig.legends[0].get_texts()]
    assert "TP" in texts and "ATP" in texts and "public points" in texts
    # ATP here is the original itself: its mean error on the panel is 0
    assert "ATP 0.0" in axes[0].get_title()
    fig.canvas.draw()
    with pytest.raises(ValueError, match="'rows' of plot_trajectory_panels"):
        plot_trajectory_panels(ORIG, {"TP": PERT}, points=P, rows=[7])


def test_a_different_number_of_rows_is_refused_as_the_metrics_refuse_it():
    # one check, one wording (geoldp.metrics._pairing): the plots and the metrics say the same
    with pytest.raises(ValueError, match="same number of rows") as metric:
        metrics.evaluate(ORIG, PERT[:2], points=P)
    with pytest.raises(ValueError, match="same number of rows") as plot:
        plot_trajectories(ORIG, PERT[:2], points=P)
    assert str(plot.value) == str(metric.value).replace("evaluate", "plot_trajectories")
    with pytest.raises(ValueError, match=r"releases\['TP'\]. has 2; rows are matched"):
        plot_trajectory_panels(ORIG, {"TP": PERT[:2]}, points=P)

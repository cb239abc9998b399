"""Plotting functions produce figures under the Agg backend."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from geoldp.plotting import plot_trajectories, plot_utility  # noqa: E402

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

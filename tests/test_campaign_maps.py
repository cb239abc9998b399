"""Estimate layers on static plots (with intervals) and interactive maps."""

from __future__ import annotations

import geopandas as gpd
import numpy as np
import pytest
from shapely import LineString

from geoldp import layers
from geoldp import points as gp

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from geoldp.plotting import plot_estimate_layer, plot_intervals  # noqa: E402

AREA = (116.30, 39.90, 116.40, 39.96)


@pytest.fixture(scope="module")
def lay():
    P = gp.grid(AREA, 1000)
    rng = np.random.default_rng(0)
    lines = [
        LineString(zip(116.31 + rng.random(4) * 0.08, 39.91 + rng.random(4) * 0.04, strict=True))
        for _ in range(40)
    ]
    trips = gpd.GeoDataFrame(geometry=lines, crs="EPSG:4326")
    out = trips.ldp.perturb(P, epsilon=4.0, rng=0)
    return layers.estimate_layers(out, cell_km=3.0, rng=0, n_candidates=100, n_boot=3)


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def test_plot_intervals_draws_the_largest_with_bars(lay):
    # the zones by estimate (the hotspots layer ranks supported zones only, and 40 trips support none)
    zv = lay["zone_visits"]
    hot = zv.iloc[np.lexsort((np.arange(len(zv)), -zv["estimate"].to_numpy()))]
    ax = plot_intervals(zv, k=5, level=0.95)
    ticks = sorted(zip(ax.get_yticks(), (t.get_text() for t in ax.get_yticklabels()), strict=True))
    assert [label for _, label in ticks[::-1]] == [str(z) for z in hot["zone"].iloc[:5]]  # largest on top
    bars = ax.collections[0].get_segments()
    assert len(bars) == 5
    lo = sorted(b[0][0] for b in bars)
    assert lo == pytest.approx(sorted(hot["lower"].iloc[:5]))
    assert "95% interval" in [t.get_text() for t in ax.get_legend().get_texts()]


def test_plot_estimate_layer_zones_and_flows(lay):
    fig = plot_estimate_layer(lay["zone_visits"], title="zones")
    assert len(fig.axes) == 4  # two maps and their colour bars
    fig = plot_estimate_layer(lay["od_flows"])
    assert len(fig.axes[0].lines) == len(lay["od_flows"])
    with pytest.raises(ValueError, match="estimate, lower and upper"):
        plot_estimate_layer(lay["zone_visits"].drop(columns=["lower"]))


def test_explore_estimates_on_one_map(lay):
    pytest.importorskip("folium")
    from geoldp.explore import explore_estimates, explore_release

    fmap = explore_estimates(lay["zone_visits"], tiles=None)
    again = explore_estimates(lay["od_flows"], m=fmap, name="flows")
    assert again is fmap
    html = fmap.get_root().render()
    assert "flows" in html and "estimate" in html
    with pytest.raises(ValueError, match="column"):
        explore_estimates(lay["zone_visits"], "nope")
    assert explore_release(lay["od_flows"], m=fmap) is fmap

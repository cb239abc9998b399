"""Measure the collector-side estimators (geoldp.estimate) on real data, beside baselines and a control.

On chi_atp, nyc_atp and cps_atp (P = points.csv, trajectories = the loc_id sequences, as in
``paper_setup.py``), at ε = 4 with ATP, TP and PointEM, zones a 1.5 km square grid (cells holding at least
one public point), this script reports:

- zone visit distribution: L1 error of the normalised distinct-visit counts for the estimate, the raw
  release, a flat distribution over the zones and a P-proportional one; interval coverage;
- range counts over a grid of circles of 1, 2 and 3 km: mean relative error of the estimate and of the
  raw counts; interval coverage;
- denoise: NE (km) and PRQ(1 km) of the denoised release, the raw release and the constant (P's 1-median);
- the fake-data control: the same pipeline (release at the same ε by the same mechanism, then fit and
  query) on a population without user data, uniform draws from P with the same lengths, scored against the
  real truth. A result counts only where it beats the control: otherwise the gain over the raw release
  comes from the model, not from the data;
- supported: the share of zones / circles whose interval excludes the estimates of both no-data
  populations (the estimator's own flag, column ``supported``);
- totals: Σ estimate / Σ truth of the zone visits and range counts with the total's own interval
  (``attrs["total"]``), and coverage over the supported rows only;
- why: how much the release distribution moves when the population moves from the truth to a
  P-proportional one (``signal``), against the sampling noise between two releases of the same truth;
  and the slope of a release's distinct-zone count on its original's (within lengths);
- the run time of ``visit_counts`` (with intervals) on 10^4 synthetic trajectories with |P| = 10^3.

Outputs (``--out``, default docs/results): ``estimators.csv``, ``estimators.md`` and
``estimators_<dataset>.png`` (zone density: original / raw release / estimate) and
``estimators_<dataset>_trajectories.png`` (four trajectories: original / ATP release / denoised).
Seeded randomness is for experiments only. Exits 0 with a message when the data directory is absent.

Usage::

    python experiments/estimators.py                       # all data sets and mechanisms
    python experiments/estimators.py --datasets cps_atp --mechanisms atp
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO / "experiments"))
DEFAULT_DATA = REPO.parent / "shared" / "data"
if not DEFAULT_DATA.exists():
    DEFAULT_DATA = Path("/work/shared/data")
DEFAULT_OUT = REPO / "docs" / "results"
DATASETS = ("chi_atp", "nyc_atp", "cps_atp")
MECHANISMS = ("atp", "tp", "pointem")
EPSILON = 4.0
ZONE_KM = 1.5
SEED = 20230710


def log(msg: str) -> None:
    print(f"[estimators {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def square_zones(lon: np.ndarray, lat: np.ndarray, km: float):
    """A km x km grid (local azimuthal equidistant CRS centred on P) of the cells holding a public point."""
    import geopandas as gpd
    import shapely
    from pyproj import Transformer

    crs = f"+proj=aeqd +lat_0={lat.mean():.6f} +lon_0={lon.mean():.6f} +datum=WGS84 +units=m"
    x, y = Transformer.from_crs("EPSG:4326", crs, always_xy=True).transform(lon, lat)
    s = km * 1000.0
    ix, iy = np.floor((x - x.min()) / s), np.floor((y - y.min()) / s)
    cells = np.unique(np.column_stack([ix, iy]), axis=0)
    boxes = [
        shapely.box(x.min() + i * s, y.min() + j * s, x.min() + (i + 1) * s, y.min() + (j + 1) * s)
        for i, j in cells
    ]
    return gpd.GeoDataFrame(geometry=boxes, crs=crs)


def circles(lon: np.ndarray, lat: np.ndarray, spacing_km: float) -> list[tuple[float, float, float]]:
    """Circles on a regular grid of centres over P's bounding box, radii cycling through 1, 2, 3 km."""
    kx = 111.195 * np.cos(np.radians(lat.mean()))
    xs = np.arange(lon.min(), lon.max() + 1e-9, spacing_km / kx)
    ys = np.arange(lat.min(), lat.max() + 1e-9, spacing_km / 111.195)
    out = []
    for i, (cx, cy) in enumerate((a, b) for a in xs for b in ys):
        out.append((float(cx), float(cy), float(1 + i % 3)))
    return out


def distinct_counts(seqs, label: np.ndarray, n_labels: int) -> np.ndarray:
    out = np.zeros(n_labels)
    for s in seqs:
        lab = np.unique(label[s])
        out[lab[lab >= 0]] += 1
    return out


def l1(a, b) -> float:
    a, b = np.asarray(a, float), np.asarray(b, float)
    return float(np.abs(a / a.sum() - b / b.sum()).sum())


def covered_where(truth, table) -> float:
    """Coverage of the interval over the rows flagged supported (NaN when none is)."""
    sup = table["supported"].to_numpy()
    if not sup.any():
        return float("nan")
    inside = (truth >= table["lower"].to_numpy()) & (truth <= table["upper"].to_numpy())
    return float(inside[sup].mean())


def within_length_slope(trajs, rel, zone_of) -> float:
    """OLS slope of a release's distinct-zone count on its original's, within trajectory lengths.

    Near 0: the release's count hardly depends on the original's, so no estimator can learn the total from
    its first moment (a diagnostic that reads the originals: experiments only).
    """
    n = np.array([t.shape[0] for t in trajs])
    d_o = np.array([np.unique(zone_of[t]).size for t in trajs], dtype=float)
    d_r = np.array([np.unique(zone_of[r]).size for r in rel], dtype=float)
    for k in np.unique(n):
        on = n == k
        d_o[on] -= d_o[on].mean()
        d_r[on] -= d_r[on].mean()
    return float((d_o * d_r).sum() / max((d_o * d_o).sum(), 1e-12))


def ne_prq(orig, rel, lon, lat, delta_km: float) -> tuple[float, float]:
    from geoldp._core.geo import haversine_m

    ne, prq = [], []
    for x, y in zip(orig, rel, strict=True):
        d = np.asarray(haversine_m(lon[x], lat[x], lon[y], lat[y])) / 1000.0
        ne.append(d.mean())
        prq.append((d <= delta_km).mean())
    return float(np.mean(ne)), float(np.mean(prq))


def one_median(lon: np.ndarray, lat: np.ndarray) -> int:
    from geoldp._core.geo import haversine_m

    best, arg = np.inf, 0
    for a in range(0, lon.size, 500):
        tot = np.asarray(haversine_m(lon[a : a + 500, None], lat[a : a + 500, None], lon, lat)).sum(axis=1)
        if tot.min() < best:
            best, arg = float(tot.min()), a + int(np.argmin(tot))
    return arg


def run_dataset(name, folder, mechanisms, out_dir, rows, max_trajectories=None):
    from paper_setup import load_dataset

    from geoldp import PointSet, estimate, perturb_trajectories
    from geoldp.estimate import _inputs

    lon, lat, trajs = load_dataset(folder)
    if max_trajectories is not None and len(trajs) > max_trajectories:
        # a seeded subsample of the users (the whole pipeline then runs on it, truth included)
        keep = np.sort(np.random.default_rng(SEED).permutation(len(trajs))[:max_trajectories])
        trajs = [trajs[i] for i in keep]
    ps = PointSet(lon, lat)
    zones = square_zones(lon, lat, ZONE_KM)
    zone_of, _ = _inputs.zone_of_points(zones, ps, caller="experiment")
    nz = len(zones)
    truth_z = distinct_counts(trajs, zone_of, nz)
    pprop = np.bincount(zone_of, minlength=nz).astype(float)
    regs = circles(lon, lat, 3.0 if ps.diameter_km > 10 else 0.75)
    members, _ = _inputs.region_members(regs, ps, crs="EPSG:4326", caller="experiment")
    keep = [i for i, m in enumerate(members) if m.size]
    regs = [regs[i] for i in keep]
    members = [members[i] for i in keep]
    truth_r = np.array([sum(bool(np.isin(t, m).any()) for t in trajs) for m in members], dtype=float)
    med = one_median(lon, lat)
    const = [np.full(t.shape[0], med) for t in trajs]
    delta = 1.0
    ne_c, prq_c = ne_prq(trajs, const, lon, lat, delta)
    lengths = [t.shape[0] for t in trajs]
    gen = np.random.default_rng(SEED)
    uniform_pop = [gen.integers(0, ps.size, size=n) for n in lengths]
    ne_u, prq_u = ne_prq(trajs, uniform_pop, lon, lat, delta)
    unif_r = np.array([sum(bool(np.isin(t, m).any()) for t in uniform_pop) for m in members], dtype=float)
    # the constant release: every trajectory visits only the 1-median's zone and the circles holding it
    const_r = np.array([len(trajs) * float(med in set(m.tolist())) for m in members])
    maps = {}
    for k, mech in enumerate(mechanisms):
        seed = SEED + 1000 * DATASETS.index(name) + k
        t0, c0 = time.time(), time.process_time()
        rel = perturb_trajectories(trajs, ps, mechanism=mech, epsilon=EPSILON, rng=seed)
        kw = dict(mechanism=mech, epsilon=EPSILON, rng=seed + 1)
        pop = estimate.fit(rel, ps, **kw)  # one fit answers the three queries
        vz = pop.visit_counts(zones)
        rc = pop.range_counts(regs)
        den = pop.denoise()
        wall, cpu = time.time() - t0, time.process_time() - c0
        # the fake-data control: the whole pipeline on a release of the no-data population
        rel_u = perturb_trajectories(uniform_pop, ps, mechanism=mech, epsilon=EPSILON, rng=seed + 2)
        pop_u = estimate.fit(rel_u, ps, **kw)
        vz_u = pop_u.visit_counts(zones)
        rc_u = pop_u.range_counts(regs)
        den_u = pop_u.denoise()
        ne_r, prq_r = ne_prq(trajs, rel, lon, lat, delta)
        ne_d, prq_d = ne_prq(trajs, den, lon, lat, delta)
        ne_dc, prq_dc = ne_prq(trajs, den_u, lon, lat, delta)
        ok = truth_r > 0
        # information: release of the truth vs release of a P-proportional population, and the sampling
        # noise between two releases of the truth
        rel_2 = perturb_trajectories(trajs, ps, mechanism=mech, epsilon=EPSILON, rng=seed + 3)
        raw_z = vz["raw"].to_numpy()
        row = {
            "dataset": name,
            "mechanism": mech,
            "epsilon": EPSILON,
            "n_traj": len(trajs),
            "m": ps.size,
            "zones": nz,
            "zone_L1_estimate": l1(vz["estimate"], truth_z),
            "zone_L1_raw": l1(raw_z, truth_z),
            "zone_L1_flat": l1(np.ones(nz), truth_z),
            "zone_L1_pprop": l1(pprop, truth_z),
            "zone_L1_uniform": l1(distinct_counts(uniform_pop, zone_of, nz), truth_z),
            "zone_L1_constant": l1(distinct_counts(const, zone_of, nz), truth_z),
            "zone_L1_control": l1(vz_u["estimate"], truth_z),
            "zone_coverage_control": float(np.mean((truth_z >= vz_u["lower"]) & (truth_z <= vz_u["upper"]))),
            "zone_supported": float(vz["supported"].mean()),
            "zone_total_ratio": float(vz["estimate"].sum() / truth_z.sum()),
            "zone_total_lower_ratio": vz.attrs["total"]["lower"] / truth_z.sum(),
            "zone_total_upper_ratio": vz.attrs["total"]["upper"] / truth_z.sum(),
            "zone_total_supported": bool(vz.attrs["total"]["supported"]),
            "zone_total_ratio_control": float(vz_u["estimate"].sum() / truth_z.sum()),
            "zone_coverage_supported": covered_where(truth_z, vz),
            "range_total_ratio": float(rc["estimate"].sum() / truth_r.sum()),
            "range_total_lower_ratio": rc.attrs["total"]["lower"] / truth_r.sum(),
            "range_total_upper_ratio": rc.attrs["total"]["upper"] / truth_r.sum(),
            "range_total_supported": bool(rc.attrs["total"]["supported"]),
            "range_coverage_supported": covered_where(truth_r, rc),
            "zone_total_ratio_raw": float(raw_z.sum() / truth_z.sum()),
            "zone_coverage": float(np.mean((truth_z >= vz["lower"]) & (truth_z <= vz["upper"]))),
            "zone_interval_width_rel": float(np.mean((vz["upper"] - vz["lower"]) / np.maximum(truth_z, 1))),
            "zone_interval_width_median_10": float(
                np.median(((vz["upper"] - vz["lower"]) / np.maximum(truth_z, 1))[truth_z >= 10])
            )
            if (truth_z >= 10).any()
            else float("nan"),
            "regions": len(regs),
            "range_MRE_estimate": float(
                np.mean(np.abs(rc["estimate"].to_numpy() - truth_r)[ok] / truth_r[ok])
            ),
            "range_TRE_estimate": float(np.abs(rc["estimate"].to_numpy() - truth_r).sum() / truth_r.sum()),
            "range_TRE_raw": float(np.abs(rc["raw"].to_numpy() - truth_r).sum() / truth_r.sum()),
            "range_total_ratio_raw": float(rc["raw"].sum() / truth_r.sum()),
            "range_MRE_raw": float(np.mean(np.abs(rc["raw"].to_numpy() - truth_r)[ok] / truth_r[ok])),
            "range_MRE_uniform": float(np.mean(np.abs(unif_r - truth_r)[ok] / truth_r[ok])),
            "range_TRE_uniform": float(np.abs(unif_r - truth_r).sum() / truth_r.sum()),
            "range_MRE_constant": float(np.mean(np.abs(const_r - truth_r)[ok] / truth_r[ok])),
            "range_coverage": float(np.mean((truth_r >= rc["lower"]) & (truth_r <= rc["upper"]))),
            "range_MRE_control": float(
                np.mean(np.abs(rc_u["estimate"].to_numpy() - truth_r)[ok] / truth_r[ok])
            ),
            "range_TRE_control": float(np.abs(rc_u["estimate"].to_numpy() - truth_r).sum() / truth_r.sum()),
            "range_coverage_control": float(np.mean((truth_r >= rc_u["lower"]) & (truth_r <= rc_u["upper"]))),
            "range_supported": float(rc["supported"].mean()),
            "NE_denoise": ne_d,
            "NE_raw": ne_r,
            "NE_constant": ne_c,
            "NE_uniform": ne_u,
            "NE_control": ne_dc,
            "PRQ1_denoise": prq_d,
            "PRQ1_raw": prq_r,
            "PRQ1_constant": prq_c,
            "PRQ1_uniform": prq_u,
            "PRQ1_control": prq_dc,
            "signal_L1_release_truth_vs_pprop": l1(raw_z, distinct_counts(rel_u, zone_of, nz)),
            "noise_L1_two_releases": l1(raw_z, distinct_counts(rel_2, zone_of, nz)),
            "population_L1_truth_vs_pprop": l1(truth_z, distinct_counts(uniform_pop, zone_of, nz)),
            "slope_distinct_zones": within_length_slope(trajs, rel, zone_of),
            "seconds_wall": wall,
            "seconds_cpu": cpu,
        }
        rows.append(row)
        log(
            f"{name} {mech}: zone L1 est {row['zone_L1_estimate']:.3f} raw {row['zone_L1_raw']:.3f} "
            f"pprop {row['zone_L1_pprop']:.3f} control {row['zone_L1_control']:.3f}; "
            f"range MRE est {row['range_MRE_estimate']:.3f} raw "
            f"{row['range_MRE_raw']:.3f}; NE den {ne_d:.3f} raw {ne_r:.3f} const {ne_c:.3f}; {wall:.0f} s"
        )
        if mech == "atp":
            maps = {"original": truth_z, "raw release": raw_z, "estimate": vz["estimate"].to_numpy()}
            draw_trajectories(trajs, rel, den, ps, name, out_dir / f"estimators_{name}_trajectories.png")
    if maps:
        draw_map(zones, maps, name, out_dir / f"estimators_{name}.png")


def draw_trajectories(trajs, rel, den, ps, name, path):
    """Four trajectories of at least 4 points: original vs ATP release vs denoised, P as faint context."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from geoldp.plotting import plot_trajectory_panels

    fig = plt.figure(figsize=(10.5, 9.6), layout="constrained")
    releases = {"ATP release": rel, "denoised": den}
    plot_trajectory_panels(trajs, releases, n=4, points=ps, fig=fig, max_cols=2)
    fig.suptitle(f"{name}: four trajectories, original vs ATP release (ε = {EPSILON:g}) vs denoised")
    fig.savefig(path, dpi=110)
    plt.close(fig)


def draw_map(zones, maps, name, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(13, 4.6), constrained_layout=True)
    shares = {k: v / v.sum() for k, v in maps.items()}
    vmax = max(float(np.quantile(v, 0.99)) for v in shares.values())
    for ax, (title, v) in zip(axes, shares.items(), strict=True):
        z = zones.assign(share=v)
        z.plot(column="share", ax=ax, cmap="viridis", vmin=0, vmax=vmax, edgecolor="none")
        ax.set_title(f"{title} (L1 to original {l1(v, shares['original']):.2f})")
        ax.set_axis_off()
    sm = plt.cm.ScalarMappable(cmap="viridis", norm=plt.Normalize(0, vmax))
    fig.colorbar(sm, ax=axes, shrink=0.8, label="share of distinct trajectory visits per 1.5 km zone")
    fig.suptitle(f"{name}: ATP, ε = {EPSILON:g} — zone visit density")
    fig.savefig(path, dpi=110)
    plt.close(fig)


_TIMING_SCRIPT = """
import json, time
import numpy as np
from geoldp import PointSet, estimate, perturb_trajectories
from geoldp.datasets import synthetic_city_arrays

lon, lat, flat, off, _ = synthetic_city_arrays(1000, 10000, seed=0)
ps = PointSet(lon, lat)
trajs = np.split(flat, off[1:-1])
rel = perturb_trajectories(trajs, ps, mechanism="atp", epsilon=EPS, rng=1)
estimate.visit_counts(rel[:20], ps, mechanism="atp", epsilon=EPS, rng=0, n_candidates=50)  # compile
t0, c0 = time.time(), time.process_time()
estimate.visit_counts(rel, ps, mechanism="atp", epsilon=EPS, rng=2)
print(json.dumps({"seconds_wall": time.time() - t0, "seconds_cpu": time.process_time() - c0}))
"""


def timing() -> dict:
    """visit_counts with intervals on 10^4 ATP releases, |P| = 10^3, in a child process on one core.

    The BLAS thread pools are limited to one thread (environment variables read when numpy loads), so the
    CPU time is that of one core.
    """
    import json
    import os
    import subprocess

    one = {k: "1" for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}
    env = dict(os.environ, **one, PYTHONPATH=str(REPO))
    script = _TIMING_SCRIPT.replace("EPS", repr(EPSILON))
    out = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


ARGS = ""  # the command-line arguments of the run, for the report
USERS = "all users"


def write_markdown(df: pd.DataFrame, tim: dict, path: Path) -> None:
    def pct(a, b):
        return f"{100 * (1 - a / b):+.0f} %"

    def na(x):
        return "–" if not np.isfinite(x) else f"{x:.2f}"

    def beats(a, c, lower_is_better=True):
        return "yes" if (a < c if lower_is_better else a > c) else "**no**"

    n = len(df)
    wins_z = int((df.zone_L1_estimate < df.zone_L1_control).sum())
    wins_r = int((df.range_MRE_estimate < df.range_MRE_control).sum())
    wins_d = int((df.NE_denoise < df.NE_control).sum())
    lines = [
        "# Collector-side estimators: measured on real data, beside baselines and a fake-data control",
        "",
        f"Generated by `python experiments/estimators.py{ARGS}` (ε = {EPSILON:g}, {USERS}, "
        f"zones a {ZONE_KM} km square grid "
        "of the cells holding a public point, circles of 1–3 km on a regular grid; one release per setting, "
        "seeded). `flat`: uniform over the zones; `pprop`: proportional to the number of public points per "
        "zone; `uniform`: every point an independent uniform draw from P (one seeded draw of the same "
        "lengths); `constant`: every point replaced by P's 1-median; flat, pprop, uniform and constant use "
        "no release. Percentages are reductions relative to "
        "the raw release (positive = better). The estimator (docs/collector.md): a mixture over a library of "
        "candidate trajectories (a public proposal, uniform draws from P, the constant at P's 1-median and "
        "the releases) fitted by EM on the per-trajectory likelihood (exact for PointEM, simulated composite "
        "for TP/ATP), stopped by two-fold cross-validation (the simplest start and iteration count within "
        "one standard error of the best held-out fit, never below the raw release or a no-data population); "
        "estimate = posterior mean; 95 % interval = from the lowest to the highest estimate "
        "of the models cross-validation cannot reject (within two standard errors), widened by 1.96 sd "
        "(posterior variance plus the variance over 30 bootstrap refits), then widened to hold the channel's "
        "own interval (a moment estimate from simulated releases of the library: where the release's count "
        "hardly depends on the originals', it spans every count the group of releases could have). "
        "`width`: median of (upper − lower) / truth over the zones with at least 10 true visits.",
        "",
        "**The fake-data control** (`control`): the same pipeline — release by the same mechanism at the "
        "same ε, fit, query — on the uniform no-data population (no user data at all), scored against the "
        "real truth. An estimate counts only where it beats the control (`beats control`); where it does "
        "not, whatever it gains over the raw release comes from the model, not from the data. "
        f"Zone L1 beats the control in {wins_z} of {n} settings, range MRE in {wins_r} of {n}, denoise NE "
        f"in {wins_d} of {n}. `supported`: the share of zones (circles) whose interval excludes the "
        "estimates of both no-data populations (the estimator's `supported` column; elsewhere the release "
        "cannot tell the count from what a population without data gives); `coverage where supported`: the "
        "coverage over those zones only (– when none is flagged).",
        "",
        "## Zone visit distribution (L1 of normalised distinct-visit counts; coverage of the 95 % interval)",
        "",
        "| data set | mechanism | estimate | control | beats control | raw | flat | pprop | uniform "
        "| constant | vs raw | coverage | coverage control | supported | coverage where supported | width |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in df.itertuples():
        lines.append(
            f"| {r.dataset} | {r.mechanism} | {r.zone_L1_estimate:.3f} | {r.zone_L1_control:.3f} | "
            f"{beats(r.zone_L1_estimate, r.zone_L1_control)} | {r.zone_L1_raw:.3f} | "
            f"{r.zone_L1_flat:.3f} | {r.zone_L1_pprop:.3f} | {r.zone_L1_uniform:.3f} | "
            f"{r.zone_L1_constant:.3f} | "
            f"{pct(r.zone_L1_estimate, r.zone_L1_raw)} | "
            f"{r.zone_coverage:.2f} | {r.zone_coverage_control:.2f} | {r.zone_supported:.2f} | "
            f"{na(r.zone_coverage_supported)} | {r.zone_interval_width_median_10:.2f} |"
        )
    lines += [
        "",
        "## Totals (Σ estimate / Σ truth, with the total's own 95 % interval from `attrs['total']`)",
        "",
        "`zone`: the sum of the distinct zone visits; `range`: the sum of the range counts. `supported`: the "
        "total's interval excludes the totals of both no-data populations. `raw`: the same sum on the "
        "release; `control`: on the fake-data release.",
        "",
        "| data set | mechanism | zone total | interval | supported | raw | control "
        "| range total | interval | supported | raw |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in df.itertuples():
        lines.append(
            f"| {r.dataset} | {r.mechanism} | {r.zone_total_ratio:.2f} | "
            f"{r.zone_total_lower_ratio:.2f}–{r.zone_total_upper_ratio:.2f} | "
            f"{'yes' if r.zone_total_supported else 'no'} | {r.zone_total_ratio_raw:.2f} | "
            f"{r.zone_total_ratio_control:.2f} | {r.range_total_ratio:.2f} | "
            f"{r.range_total_lower_ratio:.2f}–{r.range_total_upper_ratio:.2f} | "
            f"{'yes' if r.range_total_supported else 'no'} | {r.range_total_ratio_raw:.2f} |"
        )
    lines += [
        "",
        "## Range counts (mean relative error; coverage of the 95 % interval)",
        "",
        "MRE = mean over circles with a positive true count of |est − truth| / truth "
        "(dominated by small circles with few visits); TRE = Σ|est − truth| / Σ truth.",
        "",
        "| data set | mechanism | circles | MRE estimate | MRE control | beats control | MRE raw "
        "| MRE uniform | MRE constant | vs raw | TRE estimate | TRE control | TRE raw | TRE uniform "
        "| coverage | coverage control | supported | coverage where supported |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in df.itertuples():
        lines.append(
            f"| {r.dataset} | {r.mechanism} | {r.regions} | {r.range_MRE_estimate:.3f} | "
            f"{r.range_MRE_control:.3f} | {beats(r.range_MRE_estimate, r.range_MRE_control)} | "
            f"{r.range_MRE_raw:.3f} | {r.range_MRE_uniform:.3f} | {r.range_MRE_constant:.3f} "
            f"| {pct(r.range_MRE_estimate, r.range_MRE_raw)} | {r.range_TRE_estimate:.3f} | "
            f"{r.range_TRE_control:.3f} | {r.range_TRE_raw:.3f} | {r.range_TRE_uniform:.3f} | "
            f"{r.range_coverage:.2f} | {r.range_coverage_control:.2f} | {r.range_supported:.2f} | "
            f"{na(r.range_coverage_supported)} |"
        )
    lines += [
        "",
        "## Denoise (NE in km, PRQ at 1 km)",
        "",
        "`control`: the denoised release of the no-data population, paired with the real trajectories in "
        "order (same lengths).",
        "",
        "| data set | mechanism | NE denoise | NE control | beats control | NE raw | NE constant "
        "| NE uniform | vs constant | PRQ denoise | PRQ control | PRQ raw | PRQ constant | PRQ uniform |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in df.itertuples():
        lines.append(
            f"| {r.dataset} | {r.mechanism} | {r.NE_denoise:.3f} | {r.NE_control:.3f} | "
            f"{beats(r.NE_denoise, r.NE_control)} | {r.NE_raw:.3f} | {r.NE_constant:.3f} | "
            f"{r.NE_uniform:.3f} | {pct(r.NE_denoise, r.NE_constant)} | {r.PRQ1_denoise:.3f} | "
            f"{r.PRQ1_control:.3f} | {r.PRQ1_raw:.3f} | {r.PRQ1_constant:.3f} | {r.PRQ1_uniform:.3f} |"
        )
    lines += [
        "",
        "## How much the release says (zone level)",
        "",
        "`population`: L1 between the truth's zone distribution and that of a P-proportional population of "
        "the same lengths. `signal`: L1 between the *releases* of those two populations. `noise`: L1 between "
        "two releases of the truth. When signal is not well above noise, no estimator can tell the truth "
        "from the P-proportional population at this resolution.",
        "",
        "`slope`: the least-squares slope of a release's distinct-zone count on its original's, within "
        "trajectory lengths (1: the release shows every change of the original's count; 0: none). Near 0 "
        "the release cannot tell how many zones a trajectory visited, hence not the total either.",
        "",
        "| data set | mechanism | population | signal | noise | signal / population | slope |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in df.itertuples():
        lines.append(
            f"| {r.dataset} | {r.mechanism} | {r.population_L1_truth_vs_pprop:.3f} | "
            f"{r.signal_L1_release_truth_vs_pprop:.3f} | {r.noise_L1_two_releases:.3f} | "
            f"{r.signal_L1_release_truth_vs_pprop / r.population_L1_truth_vs_pprop:.2f} | "
            f"{r.slope_distinct_zones:.2f} |"
        )
    lines += ["", "## Maps (ATP)", ""]
    lines += [
        "Zone visit density (share of distinct trajectory visits per 1.5 km zone): original, raw ATP "
        "release, estimate; then four trajectories, original vs released vs denoised (km from the "
        "original's centre; public points faint).",
        "",
    ]
    for name in df["dataset"].unique():
        if (path.parent / f"estimators_{name}.png").exists():
            lines += [f"![{name} zone density](estimators_{name}.png)", ""]
        if (path.parent / f"estimators_{name}_trajectories.png").exists():
            lines += [f"![{name} trajectories](estimators_{name}_trajectories.png)", ""]
    timed = (
        f"{tim['seconds_cpu']:.0f} s CPU, {tim['seconds_wall']:.0f} s wall, one BLAS thread (target: under a "
        "minute on one core)."
        if np.isfinite(tim["seconds_cpu"])
        else "not measured in this run (`--no-timing`)."
    )
    lines += [
        "",
        "## Run time",
        "",
        "`visit_counts` with intervals (30 bootstrap replicates) on 10^4 synthetic ATP releases, "
        f"|P| = 10^3: {timed}",
        "",
        "Per data set and mechanism (one fit for visit_counts, range_counts and denoise): see `seconds_cpu` "
        "in `estimators.csv`.",
        "",
    ]
    path.write_text("\n".join(lines), encoding="utf-8")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--datasets", nargs="+", default=list(DATASETS))
    ap.add_argument("--mechanisms", nargs="+", default=list(MECHANISMS))
    ap.add_argument("--no-timing", action="store_true")
    ap.add_argument(
        "--max-trajectories", type=int, default=None, help="a seeded subsample of at most this many users"
    )
    args = ap.parse_args(argv)
    global ARGS, USERS
    ARGS = "".join(" " + a for a in (sys.argv[1:] if argv is None else argv))
    if args.max_trajectories is not None:
        USERS = f"a seeded subsample of at most {args.max_trajectories} users per data set"
    if not args.data.is_dir():
        print(f"data directory {args.data} not found; nothing to do", flush=True)
        return 0
    args.out.mkdir(parents=True, exist_ok=True)
    rows: list[dict] = []
    for name in args.datasets:
        folder = args.data / name
        if not folder.is_dir():
            log(f"{name}: not found in {args.data}, skipped")
            continue
        run_dataset(name, folder, args.mechanisms, args.out, rows, args.max_trajectories)
    if not rows:
        print("no data set found; nothing to do", flush=True)
        return 0
    df = pd.DataFrame(rows)
    df.to_csv(args.out / "estimators.csv", index=False)
    tim = {"seconds_wall": float("nan"), "seconds_cpu": float("nan")} if args.no_timing else timing()
    log(f"timing: {tim}")
    write_markdown(df, tim, args.out / "estimators.md")
    log(f"wrote {args.out / 'estimators.md'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

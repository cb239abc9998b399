"""geoldp's LDPTrace (geoldp.synthesize) side by side with the published LDPTrace code.

For each shared data set (chi_atp, nyc_atp, cps_atp: the trajectories' coordinates, WGS 84 degrees as the
published code uses raw coordinates) and ε, both implementations synthesise as many trajectories as the
input has, on an N x N grid (N = 6, the published default). The metrics follow the published code's
definitions and are computed here, by one implementation, for both outputs:

- density error: Jensen-Shannon divergence (natural log, 1e-8 smoothing as published) between the cell
  visit distributions of the gridded originals and of the synthetic trajectories;
- query error: mean relative error of 200 random square point-count queries (edge sqrt(area / 9),
  centres uniform in the grid box; sanity bound 1 % of the original points), on points drawn uniformly
  inside the cells of each trajectory (as the published code does for both sides);
- length error: JSD of the travel-distance distributions (20 buckets over the originals' range), originals
  raw, synthetic points uniform inside their cells;
- trip error: JSD of the (start cell, end cell) distributions.

Each implementation is measured on its own grid: the published code grids the data's own bounding box
(a private box, as published); geoldp grids the bounding box of the public point set P. Next to them, the
no-data baselines on geoldp's grid: ``uniform`` (every vertex a uniform draw from P, with the original
lengths, which favours the baseline) and ``constant`` (every vertex at P's 1-median). Run time is the wall
time of the whole synthesis (reading excluded, gridding included) on one core; the published side is
timed inside its own process, with its evaluation switched off.

The published code is not part of geoldp: pass the path of a checkout (``--theirs``) and the Python of a
virtual environment that can run it (``--their-python``, numpy is its only dependency); without them
only geoldp's side and the baselines run. Seeded randomness is for experiments only.

Usage::

    python experiments/ldptrace_compare.py --theirs CHECKOUT --their-python VENV/bin/python
"""

from __future__ import annotations

import argparse
import json
import lzma
import math
import pickle
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
DEFAULT_DATA = Path("/work/shared/data")
DEFAULT_OUT = REPO / "docs" / "results"
DATASETS = ("chi_atp", "nyc_atp", "cps_atp")
EPSILONS = (1.0, 2.0, 4.0, 8.0)
GRID = 6
SEED = 20230828

# Runs the published main.py in its own process: its seeds replaced by ours, its evaluation (which we
# redo here for both sides) switched off, the synthesis timed. Written to a temporary directory at run
# time; it only drives the published code, it is not a copy of it.
_DRIVER = r"""
import json, random, runpy, sys, time
import numpy as np
seed = int(sys.argv[1])
_np_seed, _py_seed = np.random.seed, random.seed
np.random.seed = lambda s=None: _np_seed(seed)
random.seed = lambda s=None: _py_seed(seed)
import experiment
for name in ("calculate_point_query", "calculate_coverage_kendall_tau", "calculate_diameter_error",
             "calculate_length_error", "mine_patterns", "calculate_pattern_f1_error",
             "calculate_pattern_support", "calculate_hotspot_ndcg"):
    setattr(experiment, name, lambda *a, **k: 0.0)
sys.argv = ["main.py"] + sys.argv[2:]
runpy.run_path("main.py", run_name="__main__")
"""


def log(msg: str) -> None:
    print(f"[ldptrace {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def load(folder: Path):
    """Trajectories as a GeoDataFrame of LineStrings (WGS 84), raw coordinate lists, and P (lon, lat)."""
    import geopandas as gpd
    import shapely

    df = pd.read_csv(folder / "trajectories.csv.gz", dtype={"traj_id": str, "loc_id": str})
    codes, ids = pd.factorize(df["traj_id"])
    xy = df[["lon", "lat"]].to_numpy()
    counts = np.bincount(codes)
    single = counts == 1  # a LineString needs two vertices: repeat a lone point
    if single.any():
        extra = np.flatnonzero(single[codes])
        xy = np.insert(xy, extra, xy[extra], axis=0)
        codes = np.insert(codes, extra, codes[extra])
    lines = gpd.GeoDataFrame(
        {"traj_id": ids}, geometry=shapely.linestrings(xy, indices=codes), crs="EPSG:4326"
    )
    offsets = np.concatenate([[0], np.cumsum(np.bincount(codes))])
    raw = [[(float(a), float(b)) for a, b in xy[offsets[i] : offsets[i + 1]]] for i in range(len(ids))]
    P = pd.read_csv(folder / "points.csv", dtype={"loc_id": str})
    return lines, raw, P["lon"].to_numpy(), P["lat"].to_numpy()


# --------------------------------------------------------------------------------------------------
# metrics (the published definitions)
# --------------------------------------------------------------------------------------------------


def jsd(a: np.ndarray, b: np.ndarray) -> float:
    a = np.asarray(a, float) / max(np.sum(a), 1e-300)
    b = np.asarray(b, float) / max(np.sum(b), 1e-300)
    m = (a + b) / 2

    def kl(p, q):
        return float(np.sum(np.log((p + 1e-8) / (q + 1e-8)) * p))

    return 0.5 * kl(a, m) + 0.5 * kl(b, m)


class Box:
    """A grid over a box: cells of points, uniform points inside cells."""

    def __init__(self, minx, miny, maxx, maxy, n):
        self.minx, self.miny, self.maxx, self.maxy, self.n = minx, miny, maxx, maxy, n
        self.sx, self.sy = (maxx - minx) / n, (maxy - miny) / n

    def cells(self, xy: np.ndarray) -> np.ndarray:
        ix = np.clip(np.floor((xy[:, 0] - self.minx) / self.sx), 0, self.n - 1).astype(int)
        iy = np.clip(np.floor((xy[:, 1] - self.miny) / self.sy), 0, self.n - 1).astype(int)
        return ix * self.n + iy

    def jitter(self, cells: np.ndarray, rng) -> np.ndarray:
        ix, iy = np.divmod(cells, self.n)
        u = rng.random((cells.size, 2))
        return np.column_stack([self.minx + (ix + u[:, 0]) * self.sx, self.miny + (iy + u[:, 1]) * self.sy])


def grid_trajectories(raw_flat: np.ndarray, offsets: np.ndarray, box: Box):
    """Gridded originals as the published code builds them (geoldp.ldptrace.cell_sequences)."""
    from geoldp import ldptrace

    grid = ldptrace.Grid(box.minx, box.miny, box.maxx, box.maxy, n=box.n)
    return ldptrace.cell_sequences(raw_flat[:, 0], raw_flat[:, 1], offsets, grid)


def travel(xy: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    step = np.hypot(*np.diff(xy, axis=0).T)
    same = np.ones(len(xy) - 1, bool)
    ends = offsets[1:-1] - 1
    same[ends[ends < len(same)]] = False
    codes = np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))[:-1]
    return np.bincount(codes[same], weights=step[same], minlength=len(offsets) - 1)


def metrics(orig, syn, box: Box, queries, rng) -> dict[str, float]:
    """orig / syn: dicts with cells, offsets (grid) and xy, xy_offsets (points)."""
    k = box.n * box.n
    dens = jsd(np.bincount(orig["cells"], minlength=k), np.bincount(syn["cells"], minlength=k))
    # queries on points uniform inside the cells (both sides)
    oxy = box.jitter(orig["cells"], rng)
    sxy = syn["xy"]
    total = len(oxy)
    errs = []
    for cx, cy, h in queries:
        a = np.sum((np.abs(oxy[:, 0] - cx) <= h) & (np.abs(oxy[:, 1] - cy) <= h))
        s = np.sum((np.abs(sxy[:, 0] - cx) <= h) & (np.abs(sxy[:, 1] - cy) <= h))
        errs.append(abs(a - s) / max(a, 0.01 * total))
    ol = travel(orig["raw"], orig["raw_offsets"])
    sl = travel(sxy, syn["xy_offsets"])
    width = (ol.max() - ol.min()) / 20
    edges = ol.min() + width * np.arange(21)
    oh = np.array([np.sum((ol >= edges[i]) & (ol <= edges[i + 1])) for i in range(20)])
    sh = np.array([np.sum((sl >= edges[i]) & (sl <= edges[i + 1])) for i in range(20)])
    so, eo = orig["cells"][orig["offsets"][:-1]], orig["cells"][orig["offsets"][1:] - 1]
    ss, es = syn["cells"][syn["offsets"][:-1]], syn["cells"][syn["offsets"][1:] - 1]
    trip = jsd(np.bincount(so * k + eo, minlength=k * k), np.bincount(ss * k + es, minlength=k * k))
    return {"density": dens, "query": float(np.mean(errs)), "length": jsd(oh, sh), "trip": trip}


def make_queries(box: Box, rng, n=200, size_factor=9.0):
    edge = math.sqrt((box.maxx - box.minx) * (box.maxy - box.miny) / size_factor)
    cx = box.minx + rng.random(n) * (box.maxx - box.minx)
    cy = box.miny + rng.random(n) * (box.maxy - box.miny)
    return [(a, b, edge / 2) for a, b in zip(cx, cy, strict=True)]


def as_syn(cells: np.ndarray, offsets: np.ndarray, box: Box, rng, xy=None, xy_offsets=None):
    lengths = np.diff(offsets)
    if xy is None:  # points uniform in the cells; a one-cell trajectory gets two (as published)
        reps = np.where(lengths == 1, 2, 1)
        per = np.repeat(reps, lengths)
        xy = box.jitter(np.repeat(cells, per), rng)
        xy_offsets = np.concatenate([[0], np.cumsum(np.maximum(lengths, 2))])
    return {"cells": cells, "offsets": offsets, "xy": xy, "xy_offsets": xy_offsets}


# --------------------------------------------------------------------------------------------------
# the two implementations and the baselines
# --------------------------------------------------------------------------------------------------


def run_geoldp(lines, box: Box, eps: float, seed: int):
    import shapely

    import geoldp

    t0 = time.perf_counter()
    out = geoldp.synthesize(
        lines, epsilon=eps, bounds=(box.minx, box.miny, box.maxx, box.maxy), grid_size=box.n, rng=seed
    )
    seconds = time.perf_counter() - t0
    xy = shapely.get_coordinates(out.geometry.values)
    n_coords = shapely.get_num_coordinates(out.geometry.values)
    off = np.concatenate([[0], np.cumsum(n_coords)])
    cells_all = box.cells(xy)
    # one-cell trajectories were written as two vertices on the centre: count them once
    keep = np.ones(len(xy), bool)
    two_same = (n_coords == 2) & (cells_all[off[:-1]] == cells_all[off[:-1] + 1])
    keep[off[:-1][two_same] + 1] = False
    lengths = np.where(two_same, 1, n_coords)
    cells = cells_all[keep]
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    return cells, offsets, seconds, out.attrs["geoldp"]["max_length"]


def run_theirs(raw, code_dir: Path, python: str, eps: float, seed: int, work: Path):
    """The published main.py on ``raw`` (as its 'porto' input); returns its synthetic points and time."""
    run = work / f"run_{seed}"
    if run.exists():
        shutil.rmtree(run)
    shutil.copytree(code_dir, run / "code")
    (run / "data" / "porto").mkdir(parents=True)
    with lzma.open(run / "data" / "porto.xz", "wb") as f:
        pickle.dump(raw, f)
    (run / "code" / "driver.py").write_text(_DRIVER)
    args = [python, "driver.py", str(seed), "--dataset", "porto", "--grid_num", str(GRID)]
    args += ["--epsilon", str(eps), "--re_syn"]
    t0 = time.perf_counter()
    proc = subprocess.run(args, cwd=run / "code", capture_output=True, text=True, timeout=3600)
    seconds = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"the published code failed: {proc.stderr[-2000:]}")
    quantile = None
    for line in proc.stdout.splitlines():
        if "Quantile:" in line:
            quantile = int(line.rsplit(":", 1)[1])
    name = f"syn_porto_eps_{eps}_max_0.9_grid_{GRID}.pkl"
    with open(run / "data" / "porto" / name, "rb") as f:
        syn = pickle.load(f)
    shutil.rmtree(run)
    return syn, seconds, quantile


def their_box(raw) -> Box:
    xy = np.array([p for t in raw for p in t])
    return Box(
        xy[:, 0].min() - 1e-6, xy[:, 1].min() - 1e-6, xy[:, 0].max() + 1e-6, xy[:, 1].max() + 1e-6, GRID
    )


def baselines(orig_lengths: np.ndarray, plon, plat, box: Box, rng):
    """uniform over P (original lengths) and constant at P's 1-median, as grid trajectories + points."""
    import geopandas as gpd

    from geoldp.metrics import one_median

    pts = gpd.GeoDataFrame(geometry=gpd.points_from_xy(plon, plat), crs="EPSG:4326")
    out = {}
    m = int(one_median(pts))
    n = len(orig_lengths)
    idx = rng.integers(0, len(plon), int(orig_lengths.sum()))
    for name, chosen, lengths in (
        ("uniform", idx, orig_lengths),
        ("constant", np.full(n, m), np.ones(n, dtype=int)),
    ):
        xy = np.column_stack([plon[chosen], plat[chosen]])
        offs = np.concatenate([[0], np.cumsum(lengths)])
        cells, coffs = grid_trajectories(xy, offs, box)
        out[name] = as_syn(cells, coffs, box, rng)
        if name == "uniform":  # the travel distance of the raw uniform points
            out[name]["xy"], out[name]["xy_offsets"] = xy, offs
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--datasets", nargs="+", default=list(DATASETS))
    ap.add_argument("--epsilons", nargs="+", type=float, default=list(EPSILONS))
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--theirs", type=Path, default=None, help="checkout of the published LDPTrace code")
    ap.add_argument("--their-python", default=sys.executable)
    args = ap.parse_args(argv)
    if not args.data.exists():
        print(f"data directory {args.data} not found: nothing to do")
        return 0
    code_dir = None if args.theirs is None else args.theirs / "LDPTrace" / "code"
    if code_dir is not None and not (code_dir / "main.py").exists():
        log(f"no published code under {args.theirs}: their side is skipped")
        code_dir = None
    rows = []
    work = Path(tempfile.mkdtemp(prefix="ldptrace-compare-"))
    try:
        for ds in args.datasets:
            lines, raw, plon, plat = load(args.data / ds)
            raw_flat = np.array([p for t in raw for p in t])
            raw_off = np.concatenate([[0], np.cumsum([len(t) for t in raw])])
            boxes = {
                "geoldp": Box(plon.min(), plat.min(), plon.max(), plat.max(), GRID),
                "published": their_box(raw),
            }
            origs = {}
            for side, box in boxes.items():
                cells, offs = grid_trajectories(raw_flat, raw_off, box)
                origs[side] = {"cells": cells, "offsets": offs, "raw": raw_flat, "raw_offsets": raw_off}
            qrng = np.random.default_rng(SEED)
            queries = {side: make_queries(box, qrng) for side, box in boxes.items()}
            brng = np.random.default_rng(SEED + 1)
            base = baselines(np.diff(raw_off), plon, plat, boxes["geoldp"], brng)
            for name, syn in base.items():
                m = metrics(origs["geoldp"], syn, boxes["geoldp"], queries["geoldp"], brng)
                rows.append({"dataset": ds, "epsilon": np.nan, "impl": name, "rep": 0, "seconds": 0.0, **m})
            run_geoldp(lines.iloc[:50], boxes["geoldp"], 1.0, 0)  # warm-up: imports, first calls
            for eps in args.epsilons:
                for rep in range(args.reps):
                    seed = SEED + 100 * rep + int(eps * 10)
                    mrng = np.random.default_rng(seed)
                    cells, offs, sec, L = run_geoldp(lines, boxes["geoldp"], eps, seed)
                    syn = as_syn(cells, offs, boxes["geoldp"], mrng)
                    m = metrics(origs["geoldp"], syn, boxes["geoldp"], queries["geoldp"], mrng)
                    rows.append(
                        {
                            "dataset": ds,
                            "epsilon": eps,
                            "impl": "geoldp",
                            "rep": rep,
                            "seconds": sec,
                            "L": L,
                            **m,
                        }
                    )
                    log(f"{ds} eps={eps} rep={rep} geoldp {sec:.2f}s {m}")
                    if code_dir is None:
                        continue
                    pts, sec, L = run_theirs(raw, code_dir, args.their_python, eps, seed, work)
                    box = boxes["published"]
                    xy = np.array([p for t in pts for p in t])
                    xoff = np.concatenate([[0], np.cumsum([len(t) for t in pts])])
                    c = box.cells(xy)
                    # their one-cell trajectories carry two points in the same cell: count the cell once
                    lengths = np.diff(xoff)
                    keep = np.ones(len(c), bool)
                    two = (lengths == 2) & (c[xoff[:-1]] == c[xoff[:-1] + 1])
                    keep[xoff[:-1][two] + 1] = False
                    coffs = np.concatenate([[0], np.cumsum(np.where(two, 1, lengths))])
                    syn = as_syn(c[keep], coffs, box, mrng, xy=xy, xy_offsets=xoff)
                    m = metrics(origs["published"], syn, box, queries["published"], mrng)
                    rows.append(
                        {
                            "dataset": ds,
                            "epsilon": eps,
                            "impl": "published",
                            "rep": rep,
                            "seconds": sec,
                            "L": L,
                            **m,
                        }
                    )
                    log(f"{ds} eps={eps} rep={rep} published {sec:.2f}s {m}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    df = pd.DataFrame(rows)
    args.out.mkdir(parents=True, exist_ok=True)
    from geoldp import _safe_write

    _safe_write.write_bytes(args.out / "ldptrace.csv", df.to_csv(index=False).encode(), overwrite=True)
    write_report(df, args.out / "ldptrace.md")
    return 0


def write_report(df: pd.DataFrame, path: Path) -> None:
    lines = ["# LDPTrace: geoldp against the published code", ""]
    lines.append(
        "Generated by `experiments/ldptrace_compare.py` (N = 6 grid, as many synthetic trajectories as "
        "originals, metrics as defined by the published code, mean ± sd over the repetitions). Lower is "
        "better for every error. The baselines use no private data (their lengths are the originals', "
        "which only helps them)."
    )
    lines.append("")
    metrics_cols = ["density", "query", "length", "trip"]
    for ds, part in df.groupby("dataset", sort=False):
        lines.append(f"## {ds}")
        lines.append("")
        lines.append(
            "| ε | implementation | density error | query error | length error | trip error | L | seconds |"
        )
        lines.append("|---|---|---|---|---|---|---|---|")
        for name in ("uniform", "constant"):
            b = part[part.impl == name]
            if len(b):
                vals = " | ".join(f"{b[c].iloc[0]:.3f}" for c in metrics_cols)
                lines.append(f"| - | {name} (no data) | {vals} | - | - |")
        runs = part[part.impl.isin(["geoldp", "published"])]
        for (eps, impl), g in runs.groupby(["epsilon", "impl"], sort=True):
            vals = " | ".join(
                f"{g[c].mean():.3f} ± {g[c].std(ddof=1) if len(g) > 1 else 0:.3f}" for c in metrics_cols
            )
            lines.append(f"| {eps:g} | {impl} | {vals} | {g['L'].mean():.1f} | {g['seconds'].mean():.2f} |")
        lines.append("")
    text = "\n".join(lines) + "\n"
    from geoldp import _safe_write

    _safe_write.write_bytes(path, text.encode(), overwrite=True)  # a generated report: replaced on purpose
    print(json.dumps({"written": str(path)}))


if __name__ == "__main__":
    raise SystemExit(main())

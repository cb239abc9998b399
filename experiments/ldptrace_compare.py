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
sys.path.insert(0, str(REPO / "src"))
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


#: T-Drive has no public point set: a public box over central Beijing (about the 6th ring road), and as
#: P for the baselines a 30 x 30 lattice over it. Its GPS weeks are cut into hourly trips (``segment``).
TDRIVE_BOX = (116.1, 39.7, 116.7, 40.1)
TDRIVE_GAP_MIN = 15.0


def segment(df: pd.DataFrame) -> pd.DataFrame:
    """T-Drive weeks into trips: fixes inside the public box, cut at gaps > 15 min, box exits, full hours."""
    minx, miny, maxx, maxy = TDRIVE_BOX
    inside = df["lon"].between(minx, maxx) & df["lat"].between(miny, maxy)
    stamp = pd.to_datetime(df["time"], format="ISO8601")
    t = (stamp - pd.Timestamp("2008-02-01", tz=stamp.dt.tz)).dt.total_seconds() / 60.0  # minutes
    hour = np.floor(t / 60.0)
    new = (df["traj_id"] != df["traj_id"].shift()) | (t.diff() > TDRIVE_GAP_MIN) | (hour != hour.shift())
    new |= ~inside.shift(fill_value=False)
    trip = new.cumsum()
    out = df.assign(traj_id=trip.astype(str))[inside.to_numpy()]
    size = out.groupby("traj_id", sort=False)["lon"].transform("size")
    return out[size.to_numpy() >= 2]


def load(folder: Path):
    """Trajectories as a GeoDataFrame of LineStrings (WGS 84), raw coordinate lists, and P (lon, lat)."""
    import geopandas as gpd
    import shapely

    df = pd.read_csv(folder / "trajectories.csv.gz", dtype={"traj_id": str, "loc_id": str})
    if not (folder / "points.csv").exists():
        df = segment(df)
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
    if not (folder / "points.csv").exists():
        minx, miny, maxx, maxy = TDRIVE_BOX
        gx, gy = np.meshgrid(np.linspace(minx, maxx, 30), np.linspace(miny, maxy, 30))
        return lines, raw, gx.ravel(), gy.ravel()
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
    """geoldp.synthesize with the public points' box (passed as the points, whose box ``box`` is)."""
    import geopandas as gpd
    import shapely

    import geoldp

    pub = gpd.GeoDataFrame(
        geometry=gpd.points_from_xy([box.minx, box.maxx], [box.miny, box.maxy]), crs=lines.crs
    )
    t0 = time.perf_counter()
    out = geoldp.synthesize(lines, epsilon=eps, points=pub, grid_size=box.n, rng=seed)
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
    return cells, offsets, seconds, out.ldp.ledger.settings["max_length"]


def run_unpadded(raw_flat, raw_off, box: Box, eps: float, seed: int):
    """Attribution only, NOT ε-LDP: geoldp's model without the padding of the transition reports.

    Each user sends only their real transitions, as the published code does, so the number of reports
    reveals the length. Built from geoldp.ldptrace's public pieces to measure what the padding costs.
    """
    from geoldp import ldptrace
    from geoldp.mechanisms import oracles

    rng = np.random.default_rng(seed)
    grid = ldptrace.Grid(box.minx, box.miny, box.maxx, box.maxy, n=box.n)
    cells, offs = ldptrace.cell_sequences(raw_flat[:, 0], raw_flat[:, 1], raw_off, grid)
    lengths = np.diff(offs)
    n, d = len(lengths), grid.size
    split1 = ldptrace.budget_split(eps, 1)
    true_len = np.bincount(np.minimum(lengths, d) - 1, minlength=d)
    length_counts = oracles.oue_estimate(
        oracles.oue_counts(true_len, n, split1["length"], rng=rng), n, split1["length"]
    )
    cum = np.cumsum(length_counts)
    hit = np.flatnonzero(cum >= 0.9 * cum[-1])  # the published rule (as geoldp.ldptrace)
    L = int(hit[0] + 1) if hit.size else d
    e = ldptrace.budget_split(eps, L)["per_report"]
    used = np.minimum(lengths, L)
    starts = offs[:-1]
    k = np.arange(int((used - 1).sum())) - np.repeat(np.cumsum(used - 1) - (used - 1), used - 1)
    src = np.repeat(starts, used - 1) + k
    codes = cells[src] * 8 + ldptrace.move_codes(cells[src], cells[src + 1], grid)
    m = int((used - 1).sum())  # only the real transitions: the count of reports depends on the length
    moves = oracles.oue_estimate(oracles.oue_counts(np.bincount(codes, minlength=8 * d), m, e, rng=rng), m, e)
    start = oracles.oue_estimate(
        oracles.oue_counts(np.bincount(cells[starts], minlength=d), n, e, rng=rng), n, e
    )
    end_cells = cells[starts + used - 1]
    end = oracles.oue_estimate(oracles.oue_counts(np.bincount(end_cells, minlength=d), n, e, rng=rng), n, e)
    moves = moves.reshape(d, 8)
    moves[grid.neighbours() < 0] = 0.0
    model = ldptrace.LDPTraceModel(
        grid, length_counts, L, start, end, moves, n, ldptrace.budget_split(eps, L)
    )
    syn, syn_off = ldptrace.synthesize_cells(model, n, rng=rng)
    return syn, syn_off, L


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
    ap.add_argument("--report-only", action="store_true", help="rewrite the report from the CSV")
    ap.add_argument(
        "--reuse-published",
        action="store_true",
        help="take the published code's rows (same data set, ε, seed) from the CSV of an earlier run",
    )
    ap.add_argument(
        "--scale", type=int, nargs="*", default=[], help="timing only: each set replicated k times"
    )
    args = ap.parse_args(argv)
    if not args.data.exists():
        print(f"data directory {args.data} not found: nothing to do")
        return 0
    code_dir = None if args.theirs is None else args.theirs / "LDPTrace" / "code"
    if code_dir is not None and not (code_dir / "main.py").exists():
        log(f"no published code under {args.theirs}: their side is skipped")
        code_dir = None
    if args.scale:
        return timing_at_scale(args, code_dir)
    if args.report_only:
        return report_only(args.out)
    rows = []
    earlier = pd.read_csv(args.out / "ldptrace.csv") if (args.out / "ldptrace.csv").exists() else None
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
                    cells, offs, L = run_unpadded(raw_flat, raw_off, boxes["geoldp"], eps, seed)
                    syn = as_syn(cells, offs, boxes["geoldp"], mrng)
                    m = metrics(origs["geoldp"], syn, boxes["geoldp"], queries["geoldp"], mrng)
                    rows.append(
                        {
                            "dataset": ds,
                            "epsilon": eps,
                            "impl": "unpadded",
                            "rep": rep,
                            "seconds": np.nan,
                            "L": L,
                            **m,
                        }
                    )
                    if args.reuse_published and earlier is not None:
                        same = earlier[
                            (earlier.dataset == ds)
                            & (earlier.epsilon == eps)
                            & (earlier.rep == rep)
                            & (earlier.impl == "published")
                        ]
                        if len(same):  # the published code is deterministic given the seed
                            rows.append(same.iloc[0].to_dict())
                            continue
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
    old = args.out / "ldptrace.csv"
    if old.exists():  # keep the other data sets' rows of an earlier run
        prev = pd.read_csv(old)
        df = pd.concat([prev[~prev["dataset"].isin(args.datasets)], df], ignore_index=True)
    from geoldp._core import safe_write as _safe_write

    _safe_write.write_bytes(args.out / "ldptrace.csv", df.to_csv(index=False).encode(), overwrite=True)
    write_report(df, args.out / "ldptrace.md")
    return 0


def timing_at_scale(args, code_dir) -> int:
    """Wall time of both implementations on each set replicated k times (ε = 4), one run each."""
    import pandas as pd

    rows = []
    work = Path(tempfile.mkdtemp(prefix="ldptrace-scale-"))
    try:
        for ds in args.datasets:
            lines, raw, plon, plat = load(args.data / ds)
            box = Box(plon.min(), plat.min(), plon.max(), plat.max(), GRID)
            run_geoldp(lines.iloc[:50], box, 1.0, 0)  # warm-up
            for k in args.scale:
                big = pd.concat([lines] * k, ignore_index=True)
                _, _, sec, _ = run_geoldp(big, box, 4.0, SEED)
                row = {"dataset": ds, "copies": k, "trajectories": len(big), "geoldp_s": sec}
                if code_dir is not None:
                    _, row["published_s"], _ = run_theirs(
                        raw * k, code_dir, args.their_python, 4.0, SEED, work
                    )
                rows.append(row)
                log(str(row))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    from geoldp._core import safe_write as _safe_write

    text = pd.DataFrame(rows).to_csv(index=False)
    _safe_write.write_bytes(args.out / "ldptrace_scale.csv", text.encode(), overwrite=True)
    return 0


METRICS = ("density", "query", "length", "trip")

_NOTES = """\
How to read this: every figure is the mean ± standard deviation over the repetitions (independent seeded
runs; for the published code its own seeds replaced by ours; geoldp, which takes well under a second per
run, has more repetitions than the published code: column "runs"). Lower is better for every error. An
implementation helps a collector only where it is below **both** no-data baselines (`uniform`: every
vertex a uniform draw from P, with the originals' lengths, which favours it; `constant`: every vertex at
P's 1-median). "within noise" means that the two implementations' means differ by less than twice the
standard error of the difference (Welch). Each implementation is scored on its own grid: the published
code grids the data's own bounding box (private), geoldp the bounding box of the public P (for T-Drive, a
public box over central Beijing; trips are hour-long windows of the taxis' weeks inside it). Seconds are
wall time on a shared 2-core machine: geoldp's whole `synthesize` call after a warm-up call, the published
code's whole process (Python start-up and its evaluation switched off; gridding, reports and synthesis).

Known difference in design: geoldp pads every user's transition reports to L − 1 with empty OUE reports,
so that the number of reports does not reveal the length; the published code sends only the real
transitions (fewer reports, less noise in the aggregate, but the count of reports is not private). The
padding adds the OUE noise of n (L − 1) reports instead of Σ min(length, L) − 1.
"""


def _cell(g: pd.DataFrame, col: str) -> str:
    sd = g[col].std(ddof=1) if len(g) > 1 else 0.0
    return f"{g[col].mean():.3f} ± {sd:.3f}"


def write_report(df: pd.DataFrame, path: Path) -> None:
    lines = ["# LDPTrace: geoldp against the published code", ""]
    lines.append(
        "Generated by `experiments/ldptrace_compare.py`: N = 6 grid, as many synthetic trajectories as "
        "originals, ε per trajectory, the published code's metrics computed by the script for both sides."
    )
    lines += ["", _NOTES, "## Summary", ""]
    runs = df[df.impl.isin(["geoldp", "unpadded", "published"])]
    within = {"geoldp": [0, 0], "unpadded": [0, 0]}
    beat = {"geoldp": 0, "unpadded": 0, "published": 0}
    ratios = []
    for (ds, _eps), g in runs.groupby(["dataset", "epsilon"], sort=False):
        b = g[g.impl == "published"]
        base = df[(df.dataset == ds) & df.impl.isin(["uniform", "constant"])]
        for col in METRICS:
            for name in beat:
                part = g[g.impl == name]
                if len(part) and part[col].mean() < base[col].min():
                    beat[name] += 1
            for name in within:
                a = g[g.impl == name]
                if len(a) > 1 and len(b) > 1:
                    se = math.sqrt(a[col].var(ddof=1) / len(a) + b[col].var(ddof=1) / len(b))
                    within[name][1] += 1
                    within[name][0] += abs(a[col].mean() - b[col].mean()) <= 2 * se
        a = g[g.impl == "geoldp"]
        if len(a) and len(b):
            ratios.append(b["seconds"].mean() / a["seconds"].mean())
    n_cells = len(runs.groupby(["dataset", "epsilon"])) * len(METRICS)
    for name, (ok, total) in within.items():
        if total:
            label = "geoldp" if name == "geoldp" else "geoldp without padding (attribution, not ε-LDP)"
            lines.append(
                f"- {label}: {ok} of {total} (data set, ε, metric) comparisons within noise of the published "
                "code."
            )
    lines.append(
        f"- Below both no-data baselines, of {n_cells} (data set, ε, metric) settings: geoldp "
        f"{beat['geoldp']}, without padding {beat['unpadded']}, the published code {beat['published']}."
    )
    if ratios:
        lines.append(
            f"- Speed: the published code takes {min(ratios):.0f}× to {max(ratios):.0f}× (median "
            f"{float(np.median(ratios)):.0f}×) geoldp's time."
        )
    lines.append("")
    for ds, part in df.groupby("dataset", sort=False):
        lines += [f"## {ds}", ""]
        head = (
            "| ε | implementation | runs | density error | query error | length error | trip error | L | s |"
        )
        lines += [head, "|---|---|---|---|---|---|---|---|---|"]
        for name in ("uniform", "constant"):
            b = part[part.impl == name]
            if len(b):
                vals = " | ".join(f"{b[c].iloc[0]:.3f}" for c in METRICS)
                lines.append(f"| - | {name} (no data) | - | {vals} | - | - |")
        names = {"geoldp": "geoldp", "unpadded": "geoldp, no padding (not ε-LDP)", "published": "published"}
        for (eps, impl), g in part[part.impl.isin(list(names))].groupby(["epsilon", "impl"]):
            vals = " | ".join(_cell(g, c) for c in METRICS)
            sec = "-" if impl == "unpadded" else f"{g['seconds'].mean():.2f}"
            lines.append(f"| {eps:g} | {names[impl]} | {len(g)} | {vals} | {g['L'].mean():.1f} | {sec} |")
        lines.append("")
    scale = path.parent / "ldptrace_scale.csv"
    if scale.exists():
        sc = pd.read_csv(scale)
        lines += ["## Run time at scale (ε = 4, each set replicated k times, one run each)", ""]
        lines += ["| data set | trajectories | geoldp (s) | published (s) | ratio |", "|---|---|---|---|---|"]
        for _, r in sc.iterrows():
            pub = r.get("published_s", float("nan"))
            lines.append(
                f"| {r['dataset']} | {int(r['trajectories']):,} | {r['geoldp_s']:.2f} | {pub:.1f} | "
                f"{pub / r['geoldp_s']:.0f}× |"
            )
        lines.append("")
    text = "\n".join(lines) + "\n"
    from geoldp._core import safe_write as _safe_write

    _safe_write.write_bytes(path, text.encode(), overwrite=True)  # a generated report: replaced on purpose
    print(json.dumps({"written": str(path)}))


def report_only(out: Path) -> int:
    """Rewrite the report from the CSV of an earlier run."""
    write_report(pd.read_csv(out / "ldptrace.csv"), out / "ldptrace.md")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

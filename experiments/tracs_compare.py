"""geoldp's TraCS-D and TraCS-C side by side with the published TraCS code, TP, ATP and the no-data baselines.

For each shared data set (default chi_atp and nyc_atp; a seeded subsample of trajectories, see
``--trajectories``) and budget, both implementations release every trajectory inside the public box (the
bounding box of the public point set P), and each released location is moved to its nearest point of P
(as the published experiments do). Two settings:

- **per location** (the published experiments): every location gets ε_loc ∈ {2, 4, 6, 8, 10} (a
  trajectory of n locations then spends n·ε_loc), plus 16 and 20 where the published circular mechanism
  gets a direction budget above 10 and returns the true direction without noise;
- **per trajectory** ε ∈ {1, 2, 4, 8}, split evenly over the locations (geoldp's user-level ε; the
  published functions are called with ε/n per location), next to geoldp's TP and ATP at the same ε.

Utility: the published metric (the average over trajectories of the mean L2 distance, in degrees, between
original and released locations), and geoldp's :func:`geoldp.evaluate` metrics with the no-data baselines
``uniform`` and ``constant``: NE (km), zone visit L1, OD flow L1 and range-query error. The published code
works on the box normalised to the unit square, as in its experiments (x and y scaled separately); geoldp
in metres, in a local azimuthal equidistant plane derived from the box. geoldp's TraCS-D is run with the
published first reference (the box's corner, ``origin="corner"``) and with its default (the centre).

Throughput: points per CPU second of each implementation's perturbation of the whole subsample (the
published functions in a Python loop, geoldp's array entry point), one thread, after a warm-up; snapping
and evaluation excluded. CPU time, since the machine is shared.

The published code is not part of geoldp: pass the path of a checkout (``--theirs``, the folder that holds
its ``src``); numpy is all its mechanisms need, so it runs in this process. Its randomness (Python's
``random``) is seeded for the comparison; geoldp's seeded runs are for experiments only.

Usage::

    python experiments/tracs_compare.py --theirs CHECKOUT
"""

from __future__ import annotations

import argparse
import importlib
import math
import random
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))
DEFAULT_DATA = Path("/work/shared/data")
DEFAULT_OUT = REPO / "docs" / "results"
DATASETS = ("chi_atp", "nyc_atp")
PER_LOCATION = (2.0, 4.0, 6.0, 8.0, 10.0, 16.0, 20.0)
PER_TRAJECTORY = (1.0, 2.0, 4.0, 8.0)
SEED = 20260705
#: The published CHI figures (average L2 distance in degrees, per-location ε 2 to 10), from the published
#: repository's experiments/discrete_space/results/experiment_2_chi.csv (their own CHI cut and grid).
PAPER_CHI = {
    "TRACS-D": (0.227475712, 0.155957916, 0.105023395, 0.07961625, 0.053628636),
    "TRACS-C": (0.164812569, 0.118301781, 0.079763279, 0.051039011, 0.033094737),
}
METRICS = ("NE_km", "zone_l1", "od_l1", "range_query_error")


INTRO = """\
# TraCS-D and TraCS-C beside the published code, TP and ATP

This page compares geoldp's TraCS-D and TraCS-C (continuous-space trajectory release in a public box) with
the published TraCS code (Zheng & Hu, PETS 2026, `ZhengYeah/TraCS`), with geoldp's TP and ATP, and with
the no-data baselines `uniform` (every location a uniform draw from P) and `constant` (every location at
P's 1-median).

**What was measured.** On the shared sets `chi_atp` and `nyc_atp`, a seeded subsample of {n_traj}
trajectories each (the machine is shared: 2 cores), the box being the bounding box of the public point set
P. Every released location is moved to its nearest point of P, as the published experiments do
(post-processing). `avg_l2_deg` is the published metric: the mean over trajectories of the mean distance
in degrees between original and released locations. NE (km), zone L1, OD L1 and the range-query error are
`geoldp.evaluate`'s metrics (lower is better everywhere). `points_per_s` is points per CPU second of the
perturbation alone on one thread (the published functions in their Python loop; geoldp's array entry point
`geoldp.trajectory.perturb_coordinates`, which also validates its input; for TP and ATP the whole
`gdf.ldp.perturb` call), snapping and evaluation excluded; on a few hundred trajectories geoldp's
figure is dominated by its per-call overhead (see Throughput below for the rate at scale). `avg_l2_deg`,
`exact_direction_share` and `points_per_s` are means over the repetitions, the `geoldp.evaluate` metrics
are those of the first repetition; one seeded
subsample, so differences of a few per cent are noise.

**Command.** `{command}` (CHECKOUT: a checkout of the published code; its mechanisms need only numpy,
so they run in geoldp's environment).

**Settings.** *Per location*: every location gets the ε shown (the published experiments); a trajectory of
n locations spends n·ε. *Per trajectory*: ε per trajectory, ε/n per location (geoldp's user-level ε, as TP
and ATP). TraCS-D splits each location's budget π/(π+1) : 1/(π+1) between direction and distance, TraCS-C
½ : ½ between the coordinates. `geoldp TRACS-D (corner)` starts from the box's corner as the published code
does; `geoldp TRACS-D` from the centre (geoldp's default). The published code works on the box scaled to
the unit square (x and y separately), geoldp in metres in a local azimuthal equidistant plane; both release
inside the same box.
"""

OUTRO = """\
## Above ε = 10: the published circular mechanism adds no noise

The published circular mechanism returns the private direction unchanged when its budget exceeds 10 (to
avoid a numerical error). TraCS-D gives the direction π/(π+1) ≈ 0.76 of each location's budget, so this
happens from 13.2 per location on: in the rows at 16 and 20 per location, `exact_direction_share` (the
share of locations whose released direction, measured from the previous released location, equals the true
direction to 1e−9 rad) is 1 for the published code: the direction of every move is released exactly, which
is not ε-LDP at any ε, and its TraCS-D error there is the distance noise alone. geoldp samples the circular
mechanism at every budget (up to 50 per stage, where its window still spans tens of thousands of floats),
so its share is 0.

## Throughput

geoldp's compiled TraCS on 10⁶ planar locations (trajectories of 4), one thread, best of 3, CPU time
(the machine is shared; wall time under load is up to 2–3 times longer):

| mechanism | points per second |
|---|---|
"""

CAVEATS = """
`benchmarks/bench_tracs.py` measures the kernel and the frame path at scale (see the performance page).

## What this does not show

- Both TraCS variants release each location with ε/n (per trajectory): like TP and ATP, the guarantee is
  for trajectories of the same length; the length is released.
- The published results were on the authors' own CHI cut and grid; these runs use the shared ATP cuts,
  whose points cluster in the city centre, so absolute figures differ from the paper's.
- geoldp's estimators (`ldp.estimate_*`, `denoise`) model TP and ATP releases; they are not fitted to TraCS
  releases here.
"""


def log(msg: str) -> None:
    print(f"[tracs {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def load(folder: Path, n_traj: int):
    """(trajectories as a list of (n, 2) lon/lat arrays, their frame, P as a frame) for a seeded subsample."""
    import geopandas as gpd
    import shapely

    df = pd.read_csv(folder / "trajectories.csv.gz", dtype={"traj_id": str, "loc_id": str})
    codes, _ = pd.factorize(df["traj_id"])
    xy = df[["lon", "lat"]].to_numpy()
    starts = np.r_[0, np.flatnonzero(np.diff(codes)) + 1, len(codes)]
    trajs = [xy[a:b] for a, b in zip(starts[:-1], starts[1:], strict=True)]
    rng = np.random.default_rng(SEED)
    pick = np.sort(rng.choice(len(trajs), size=min(n_traj, len(trajs)), replace=False))
    trajs = [trajs[i] for i in pick]
    lines = gpd.GeoDataFrame(
        geometry=[shapely.LineString(t) if len(t) > 1 else shapely.LineString([t[0], t[0]]) for t in trajs],
        crs="EPSG:4326",
    )
    P = pd.read_csv(folder / "points.csv", dtype={"loc_id": str})
    points = gpd.GeoDataFrame(geometry=gpd.points_from_xy(P.lon, P.lat), crs="EPSG:4326")
    return trajs, lines, points


def snap_to(points_xy: np.ndarray, released: list[np.ndarray], scale: np.ndarray) -> list[np.ndarray]:
    """Each released location's nearest point of P, distances measured after dividing by ``scale``."""
    from scipy.spatial import cKDTree

    tree = cKDTree(points_xy / scale)
    flat = np.vstack(released)
    _, idx = tree.query(flat / scale)
    out = points_xy[idx]
    ends = np.cumsum([len(r) for r in released])[:-1]
    return np.split(out, ends)


def avg_l2_deg(original: list[np.ndarray], released: list[np.ndarray]) -> float:
    """The published metric: mean over trajectories of the mean L2 distance (degrees) per location."""
    return float(np.mean([np.mean(np.hypot(*(o - r).T)) for o, r in zip(original, released, strict=True)]))


def exact_direction_share(original: list[np.ndarray], cont: list[np.ndarray], origin: np.ndarray) -> float:
    """Share of locations whose released direction (from the previous *released* location, before any
    snapping) equals the true direction from that reference to within 1e−9 rad: the share released
    without direction noise."""
    hits = total = 0
    for o, r in zip(original, cont, strict=True):
        ref = origin
        for true, out in zip(o, r, strict=True):
            d_true = math.atan2(true[1] - ref[1], true[0] - ref[0])
            d_out = math.atan2(out[1] - ref[1], out[0] - ref[0])
            diff = abs((d_true - d_out + math.pi) % (2 * math.pi) - math.pi)
            if not np.allclose(true, ref):
                hits += diff < 1e-9
                total += 1
            ref = out
    return hits / max(total, 1)


class Published:
    """The published TraCS functions, on the box normalised to the unit square (as its experiments)."""

    def __init__(self, checkout: Path, box: tuple[float, float, float, float]) -> None:
        sys.path.insert(0, str(checkout))
        self.module = importlib.import_module("src.methods.wrapped_tracs")
        self.box = np.array(box)
        self.span = self.box[2:] - self.box[:2]

    def run(self, name: str, trajs: list[np.ndarray], eps_loc: list[float]) -> list[np.ndarray]:
        out = []
        for t, e in zip(trajs, eps_loc, strict=True):
            unit = np.clip((t - self.box[:2]) / self.span, 0.0, 1.0)
            if name == "tracs-d":
                r = self.module.tracs_d(unit, e, math.pi / (math.pi + 1) * e)
            else:
                r = self.module.tracs_c(unit, e, e / 2)
            out.append(np.asarray(r, dtype=float) * self.span + self.box[:2])
        return out


def geoldp_run(mech: str, trajs, box, eps_traj, seed: int, **options) -> tuple[list[np.ndarray], float]:
    """geoldp's TraCS on the trajectories (lon/lat), in the local plane of the box; one call per ε.

    Returns the released trajectories (lon/lat) and the seconds spent in the perturbation itself.
    """
    from geoldp._core.box import planar_box
    from geoldp.trajectory import perturb_coordinates

    pb = planar_box(box, "EPSG:4326", caller="tracs_compare")
    lengths = np.array([len(t) for t in trajs])
    ends = np.cumsum(lengths)[:-1]
    flat = np.vstack(trajs)
    x, y = pb.to_plane(flat[:, 0], flat[:, 1])
    planar = np.split(np.column_stack([x, y]), ends)
    out: list[np.ndarray] = [np.empty((0, 2))] * len(trajs)
    secs = 0.0
    for eps in sorted(set(eps_traj)):
        sel = [i for i, e in enumerate(eps_traj) if e == eps]
        rel, dt = timed(
            perturb_coordinates,
            [planar[i] for i in sel],
            mechanism=mech,
            epsilon=eps,
            bounds=pb.planar_bounds,
            rng=seed,
            **options,
        )
        secs += dt
        for i, r in zip(sel, rel, strict=True):
            out[i] = r
    px = np.vstack(out)
    lon, lat = pb.to_wgs84(px[:, 0], px[:, 1])
    return np.split(np.column_stack([lon, lat]), ends), secs


def as_frame(released: list[np.ndarray]):
    import geopandas as gpd
    import shapely

    return gpd.GeoDataFrame(geometry=[shapely.LineString(r) for r in released], crs="EPSG:4326")


def evaluate(lines, points, releases: dict[str, list[np.ndarray]]) -> pd.DataFrame:
    import geoldp

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = geoldp.evaluate(lines, {k: as_frame(v) for k, v in releases.items()}, points=points, rng=0)
    return table[list(METRICS)]


def timed(fn, *args, **kwargs):
    """``(fn(...), CPU seconds of this process)``: CPU time, since the machine is shared."""
    t0 = time.process_time()
    out = fn(*args, **kwargs)
    return out, time.process_time() - t0


def run_dataset(name: str, args) -> list[dict]:
    from geoldp.metrics import baseline_release

    trajs, lines, points = load(args.data / name, args.trajectories)
    pxy = np.column_stack([points.geometry.x, points.geometry.y])
    box = tuple(float(v) for v in (*pxy.min(axis=0), *pxy.max(axis=0)))
    span = np.array(box[2:]) - np.array(box[:2])
    n_points = int(sum(len(t) for t in trajs))
    lengths = [len(t) for t in trajs]
    log(f"{name}: {len(trajs)} trajectories, {n_points} points, |P| = {len(points)}")
    theirs = Published(args.theirs, box) if args.theirs else None
    rows: list[dict] = []

    def record(setting, eps, label, snapped, cont=None, secs=None, origin=None):
        row = {"dataset": name, "setting": setting, "epsilon": eps, "release": label}
        row["avg_l2_deg"] = avg_l2_deg(trajs, snapped)
        row["points_per_s"] = n_points / secs if secs else np.nan
        if cont is not None and origin is not None:
            row["exact_direction_share"] = exact_direction_share(trajs, cont, origin)
        rows.append(row)
        return row

    for setting, budgets in (("per location", args.per_location), ("per trajectory", args.per_trajectory)):
        for eps in budgets:
            eps_loc = [eps if setting == "per location" else eps / n for n in lengths]
            eps_traj = [eps * n if setting == "per location" else eps for n in lengths]
            releases: dict[str, list[np.ndarray]] = {}
            for rep in range(args.reps):
                seed = SEED + rep
                if theirs is not None:
                    for mech in ("tracs-d", "tracs-c"):
                        random.seed(seed)  # the published code draws from Python's random
                        cont, secs = timed(theirs.run, mech, trajs, eps_loc)
                        snapped = snap_to(pxy, cont, span)  # the published rounding: unit-square distance
                        label = f"published {mech.upper()}"
                        origin = np.array(box[:2])
                        record(
                            setting, eps, label, snapped, cont if mech == "tracs-d" else None, secs, origin
                        )
                        releases.setdefault(label, snapped)
                for mech, opts, label in (
                    ("tracs-d", {"origin": "corner"}, "geoldp TRACS-D (corner)"),
                    ("tracs-d", {}, "geoldp TRACS-D"),
                    ("tracs-c", {}, "geoldp TRACS-C"),
                ):
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")  # ε above 10 per trajectory: tested on purpose
                        cont, secs = geoldp_run(mech, trajs, box, eps_traj, seed, **opts)
                    snapped = snap_to(pxy, cont, span)
                    origin = np.array(box[:2]) if opts else 0.5 * (np.array(box[:2]) + np.array(box[2:]))
                    record(setting, eps, label, snapped, cont if mech == "tracs-d" else None, secs, origin)
                    releases.setdefault(label, snapped)
                if setting == "per trajectory":
                    for mech in ("tp", "atp"):
                        with warnings.catch_warnings():
                            warnings.simplefilter("ignore")
                            out, secs = timed(
                                lines.ldp.perturb, points, mechanism=mech, epsilon=eps, rng=seed
                            )
                        rel = [np.asarray(g.coords) for g in out.geometry]
                        record(setting, eps, f"geoldp {mech.upper()}", rel, secs=secs)
                        releases.setdefault(f"geoldp {mech.upper()}", rel)
            table = evaluate(lines, points, releases)
            for label in table.index:
                if label in ("uniform", "constant"):
                    base = {"dataset": name, "setting": setting, "epsilon": eps, "release": label}
                    idx = baseline_release(label, pxy, lengths, rng=SEED)
                    base["avg_l2_deg"] = avg_l2_deg(trajs, [pxy[i] for i in idx])
                    rows.append(base)
            for row in rows:
                if row["dataset"] == name and row["setting"] == setting and row["epsilon"] == eps:
                    if row["release"] in table.index:
                        for m in METRICS:
                            row[m] = float(table.loc[row["release"], m])
            log(f"{name} {setting} ε={eps:g} done")
    return rows


def kernel_rate(n_points: int = 1_000_000, length: int = 4) -> dict[str, float]:
    """geoldp's compiled TraCS on n_points planar locations (trajectories of ``length``), one thread."""
    from geoldp.trajectory import TraCSC, TraCSD

    rng = np.random.default_rng(SEED)
    xy = rng.uniform(0.0, 40_000.0, (n_points, 2))
    offsets = np.arange(0, n_points + 1, length)
    out = {}
    for mech in (
        TraCSD(epsilon=4.0, bounds=(0, 0, 40_000, 40_000)),
        TraCSC(epsilon=4.0, bounds=(0, 0, 40_000, 40_000)),
    ):
        key = np.arange(8, dtype=np.uint32)
        mech.perturb_xy(xy[:100, 0], xy[:100, 1], offsets[:2], key=key)  # compile / load
        best = min(timed(mech.perturb_xy, xy[:, 0], xy[:, 1], offsets, key=key)[1] for _ in range(3))
        out[mech.name] = n_points / best
    return out


def findings(df: pd.DataFrame, rates: dict[str, float]) -> list[str]:
    """The page's summary, computed from the results."""
    out = ["## Findings", ""]
    mean = df.groupby(["dataset", "setting", "epsilon", "release"]).mean(numeric_only=True)["avg_l2_deg"]
    pairs = (("published TRACS-D", "geoldp TRACS-D (corner)"), ("published TRACS-C", "geoldp TRACS-C"))
    for theirs, ours in pairs:
        rel = []
        for (ds, st, eps, rel_name), v in mean.items():
            if rel_name == theirs and eps <= 10 and (ds, st, eps, ours) in mean.index:
                rel.append(abs(mean[(ds, st, eps, ours)] - v) / v)
        if rel:
            out.append(
                f"- **The same utility as the published code where that is ε-LDP** (ε ≤ 10 per location): "
                f"`{ours}` is within {100 * max(rel):.0f} % of `{theirs}` on `avg_l2_deg` in every row "
                f"(median {100 * float(np.median(rel)):.1f} %)."
            )
    chi = df[(df.dataset == "chi_atp") & (df.setting == "per location")]
    if not chi.empty:
        out += [
            "- **The published CHI figures.** On `chi_atp` (another cut of the same Gowalla Chicago data):",
            "",
            "  | ε per location | 2 | 4 | 6 | 8 | 10 |",
            "  |---|---|---|---|---|---|",
        ]
        for variant, paper in PAPER_CHI.items():
            out.append(f"  | paper, {variant} | " + " | ".join(f"{v:.3f}" for v in paper) + " |")
            for label in (
                f"published {variant}",
                f"geoldp {variant}" + (" (corner)" if variant == "TRACS-D" else ""),
            ):
                vals = [
                    chi[(chi.release == label) & (chi.epsilon == e)].avg_l2_deg.mean()
                    for e in (2, 4, 6, 8, 10)
                ]
                out.append(f"  | {label}, chi_atp | " + " | ".join(f"{v:.3f}" for v in vals) + " |")
        out.append("")
    per_traj = df[df.setting == "per trajectory"]
    if not per_traj.empty:
        wins = []
        for (ds, eps), g in per_traj.groupby(["dataset", "epsilon"]):
            base = g[g.release.isin(["uniform", "constant"])]
            for m in METRICS:
                best_base = base[m].min()
                for rel_name in ("geoldp TRACS-D", "geoldp TRACS-C", "geoldp TP", "geoldp ATP"):
                    v = g[g.release == rel_name][m].mean()
                    if v < best_base:
                        wins.append((ds, eps, rel_name, m))
        tracs = sorted({(ds, e, m) for ds, e, r, m in wins if "TRACS" in r})
        tpatp = sorted({(ds, e, m) for ds, e, r, m in wins if "TRACS" not in r})
        cells = len(METRICS) * per_traj.groupby(["dataset", "epsilon"]).ngroups
        out.append(
            "- **Against the no-data baselines, per trajectory ε ≤ 8.** TraCS beats the better of `uniform` "
            f"and `constant` on {len(tracs)} of the {cells} (data set, ε, metric) cells, TP or ATP on "
            f"{len(tpatp)}: with ε/n per location on these short check-in trajectories, TraCS's output is "
            "spread over the whole box, while TP's and ATP's outputs are public points near the data."
        )
    per_loc = df[df.setting == "per location"]
    for (ds, rel_name), g in per_loc.groupby(["dataset", "release"]):
        if not rel_name.startswith("geoldp TRACS"):
            continue
        base = per_loc[(per_loc.dataset == ds) & per_loc.release.isin(["uniform", "constant"])].NE_km.min()
        beats = sorted(e for e, v in g.groupby("epsilon").NE_km.mean().items() if v < base)
        first = f"from ε = {beats[0]:g} per location on" if beats else "at no ε per location up to 20"
        out.append(f"- Per location, `{rel_name}` on `{ds}` beats the baselines' NE ({base:.2f} km) {first}.")
    published = df[df.release.str.startswith("published")].groupby("release").points_per_s.mean()
    for name, rate in rates.items():
        theirs = published.get(f"published {name.upper()}")
        if theirs and not np.isnan(theirs):
            out.append(
                f"- **Throughput, {name}**: geoldp's kernel {rate:,.0f} points per CPU second, "
                f"{rate / theirs:,.0f}× the published code's {theirs:,.0f} (mean over the runs above)."
            )
    out.append("")
    return out


def write_report(df: pd.DataFrame, rates: dict[str, float], path: Path, command: str, n_traj: int) -> None:
    def fmt(v, digits=3):
        return "" if pd.isna(v) else f"{v:.{digits}g}"

    lines = INTRO.format(n_traj=n_traj, command=command).splitlines()
    lines += findings(df, rates)
    for setting in ("per location", "per trajectory"):
        sub = df[df.setting == setting]
        if sub.empty:
            continue
        lines += [f"## {setting.capitalize()} ε", ""]
        for name in sub.dataset.unique():
            s = sub[sub.dataset == name]
            agg = s.groupby(["epsilon", "release"], sort=False).mean(numeric_only=True).reset_index()
            cols = ["avg_l2_deg", *METRICS, "points_per_s"]
            if setting == "per location":
                cols.insert(1, "exact_direction_share")
            lines += [f"### {name}", "", "| ε | release | " + " | ".join(cols) + " |"]
            lines.append("|---|---|" + "---|" * len(cols))
            for _, r in agg.iterrows():
                vals = [fmt(r.get(c)) if c != "points_per_s" else fmt(r.get(c), 4) for c in cols]
                lines.append(f"| {r.epsilon:g} | {r.release} | " + " | ".join(vals) + " |")
            lines.append("")
    lines += OUTRO.splitlines()
    for k, v in rates.items():
        lines.append(f"| {k} | {v:,.0f} |")
    lines += CAVEATS.splitlines()
    path.write_text("\n".join(lines), encoding="utf-8")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--datasets", nargs="+", default=list(DATASETS))
    ap.add_argument("--per-location", nargs="*", type=float, default=list(PER_LOCATION))
    ap.add_argument("--per-trajectory", nargs="*", type=float, default=list(PER_TRAJECTORY))
    ap.add_argument("--trajectories", type=int, default=500, help="subsample size per data set")
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--theirs", type=Path, default=None, help="checkout of the published TraCS code")
    args = ap.parse_args(argv)
    rows = []
    for name in args.datasets:
        if not (args.data / name).exists():
            log(f"{name}: not found under {args.data}, skipped")
            continue
        rows += run_dataset(name, args)
    df = pd.DataFrame(rows)
    args.out.mkdir(parents=True, exist_ok=True)
    df.to_csv(args.out / "tracs.csv", index=False)
    rates = kernel_rate()
    command = "python experiments/tracs_compare.py --theirs CHECKOUT" + (
        "" if args.trajectories == 500 else f" --trajectories {args.trajectories}"
    )
    write_report(df, rates, args.out / "tracs.md", command, args.trajectories)
    log(f"wrote {args.out / 'tracs.csv'} and {args.out / 'tracs.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

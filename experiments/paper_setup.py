"""Reproduce the experimental setup of Zhang et al. (PVLDB 2023) on the ATP authors' data sets.

Runs, on chi_atp, nyc_atp and cps_atp (public point set P = the data set's ``points.csv``, trajectories = its
``loc_id`` sequences mapped to row indices of ``points.csv``):

- ``uniform``: every point replaced by a uniform draw from P (the ε = 0 reference; a seeded draw done here,
  it is not a geoldp mechanism);
- ``pointem``: every point perturbed independently by EM over P with ε/n (geoldp.PointEM);
- ``tp`` and ``atp``: geoldp's TP and ATP with their default (normative) options;

at ε ∈ {0.5, 1, 2, 4, 6, 8, 10} with 5 repetitions, and records NE and PRQ(δ) (δ = 0.5, 1, 2, 3, 4 km; 0.1,
0.25, 0.5, 1, 2 km for cps_atp), see ALGORITHM.md §13. It also computes the *exact* expected NE of uniform and
PointEM from their pmfs (§13.3), so the Monte-Carlo numbers can be checked against them.

At ε ∈ {0.5, 1, 2, 4, 8} (``--evaluate-epsilons``) it runs ``geoldp.evaluate`` on repetition 0 of PointEM,
TP and ATP together with the no-data baselines ``uniform`` and ``constant`` (1-median of P), both computed
from P and the trajectory lengths only: NE, PRQ, range-count error over public circles (centred on the public
points nearest to a 5 x 5 lattice over P's bounding box, radii 1, 2, 3 km; 0.25, 0.5, 0.75 km for cps_atp),
visit-density and OD-flow errors over
1.5 km square zones (``geoldp.zone_grid``), hotspot overlap and the length / diameter JSD. It adds
at ε = 4, for each of PointEM, TP and ATP, the rows ``<MECH> estimated`` (zone, OD, range and visit counts
of ``geoldp.estimate`` from the release alone) and ``<MECH> denoised`` (``geoldp.estimate.denoise``,
evaluated as a release). All rows go to ``evaluate.csv``.

Outputs (in ``--out``, default ``docs/results`` of this repository):
``paper_setup.csv`` (one row per dataset, mechanism, ε, repetition, metric, δ), ``paper_setup_summary.csv``
(mean, std over repetitions), ``exact_baselines.csv``, ``paper_setup_meta.json`` (command, machine,
versions, run times) and one plot per data set, ``<dataset>.png``.

Seeded randomness is for experiments only (never for deployment). Usage::

    python experiments/paper_setup.py                 # full run (~minutes)
    python experiments/paper_setup.py --quick         # 1 repetition, ε ∈ {1, 4, 10}
    python experiments/paper_setup.py --datasets cps_atp --reps 2 --data /path/to/data

Exits 0 with a message when the data directory (default ``../shared/data`` relative to the repository)
is absent.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

import geoldp

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DATA = REPO.parent / "shared" / "data"
DEFAULT_OUT = REPO / "docs" / "results"
DATASETS = ("chi_atp", "nyc_atp", "cps_atp")
MECHANISMS = ("uniform", "pointem", "tp", "atp")
EPSILONS = (0.5, 1.0, 2.0, 4.0, 6.0, 8.0, 10.0)
DELTAS_KM = {"cps_atp": (0.1, 0.25, 0.5, 1.0, 2.0)}
DEFAULT_DELTAS_KM = (0.5, 1.0, 2.0, 3.0, 4.0)
EVAL_EPSILONS = (0.5, 1.0, 2.0, 4.0, 8.0)
ESTIMATE_EPSILON = 4.0
ZONE_KM = 1.5
REGION_RADII_KM = {"cps_atp": (0.25, 0.5, 0.75)}
DEFAULT_REGION_RADII_KM = (1.0, 2.0, 3.0)
RELEASE_LABEL = {"pointem": "PointEM", "tp": "TP", "atp": "ATP"}


def log(msg: str) -> None:
    print(f"[paper_setup {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def load_dataset(folder: Path) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    """Return (lon, lat) of P in points.csv row order and the trajectories as index arrays into P."""
    pts = pd.read_csv(folder / "points.csv", dtype={"loc_id": str})
    df = pd.read_csv(folder / "trajectories.csv.gz", dtype={"traj_id": str, "loc_id": str})
    if pts["loc_id"].duplicated().any():
        raise ValueError(f"{folder.name}: duplicate loc_id in points.csv")
    codes, _ = pd.factorize(df["traj_id"], sort=False)  # trajectories in file (source) order
    order = np.lexsort((df["seq"].to_numpy(), codes))  # rows are grouped and sorted; enforce it anyway
    df = df.iloc[order].reset_index(drop=True)
    codes = codes[order]
    idx = pd.Index(pts["loc_id"]).get_indexer(df["loc_id"])
    if (idx < 0).any():
        raise ValueError(f"{folder.name}: {int((idx < 0).sum())} trajectory loc_ids are not in points.csv")
    lon = pts["lon"].to_numpy(np.float64)
    lat = pts["lat"].to_numpy(np.float64)
    # the mapping must reproduce the stored coordinates exactly
    if not (
        np.array_equal(lon[idx], df["lon"].to_numpy()) and np.array_equal(lat[idx], df["lat"].to_numpy())
    ):
        raise ValueError(f"{folder.name}: trajectory coordinates differ from their loc_id's point")
    counts = np.bincount(codes)
    trajs = np.split(idx.astype(np.int64), np.cumsum(counts)[:-1])
    return lon, lat, trajs


def distance_matrix_m(lon: np.ndarray, lat: np.ndarray) -> np.ndarray:
    from geoldp._core.geo import haversine_array_m

    return haversine_array_m(lon[:, None], lat[:, None], lon[None, :], lat[None, :])


def exact_baselines(D: np.ndarray, trajs: list[np.ndarray], epsilons: tuple[float, ...]) -> pd.DataFrame:
    """Exact expected NE (km) of uniform-over-P and of PointEM (EM over P, ε/n per point), ALGORITHM §13.3.

    E[NE] = (1/|T|) Σ_τ (1/n_τ) Σ_i Σ_r Pr[r | x_i] d(x_i, P_r).
    """
    delta = float(D.max())
    lengths = np.array([t.shape[0] for t in trajs])
    flat = np.concatenate(trajs)
    weight = np.repeat(1.0 / lengths, lengths) / len(trajs)  # NE weight of every point
    rows = [
        {
            "mechanism": "uniform",
            "epsilon": 0.0,
            "expected_NE_km": float(weight @ D[flat].mean(axis=1)) / 1000,
        }
    ]
    n_of_point = np.repeat(lengths, lengths)
    for eps in epsilons:
        total = 0.0
        for n in np.unique(lengths):
            sel = n_of_point == n
            xs, inv = np.unique(flat[sel], return_inverse=True)
            logw = -(eps / n) * D[xs] / (2.0 * delta)
            w = np.exp(logw - logw.max(axis=1, keepdims=True))
            expd = (w * D[xs]).sum(axis=1) / w.sum(axis=1)
            total += float(weight[sel] @ expd[inv])
        rows.append({"mechanism": "pointem", "epsilon": eps, "expected_NE_km": total / 1000})
    return pd.DataFrame(rows)


def perturb(
    mech: str,
    trajs: list[np.ndarray],
    points,
    eps: float,
    rng: np.random.Generator,
    sampler: str,
    options: dict | None = None,
):
    """One run of one mechanism; returns index arrays. ``options`` go to TP/ATP only."""
    if mech in ("tp", "atp") and options:
        # "atp.sw_output" applies to ATP only; a key without a prefix applies to both
        options = {
            k.split(".", 1)[-1]: v for k, v in options.items() if "." not in k or k.split(".", 1)[0] == mech
        }
    else:
        options = None
    m = len(points)
    if mech == "uniform":  # reference: each point uniform over P (not a geoldp mechanism)
        lengths = np.array([t.shape[0] for t in trajs])
        flat = rng.integers(0, m, size=int(lengths.sum()))
        return np.split(flat, np.cumsum(lengths)[:-1])
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", geoldp.PrivacyWarning)  # ε > 10 never happens here; be explicit
        if sampler == "fast":
            return geoldp.perturb_trajectories(
                trajs, points, mechanism=mech, epsilon=eps, rng=rng, **(options or {})
            )
        from geoldp.trajectory import engine  # reference (pure-Python) sampler, for small checks only

        cls = {"pointem": geoldp.PointEM, "tp": geoldp.TP, "atp": geoldp.ATP}[mech]
        mech_obj = cls(epsilon=eps, **(options or {}))
        return engine.run(trajs, points, mech_obj, rng=rng, sampler="reference")


def ne_prq(
    D: np.ndarray, trajs: list[np.ndarray], out: list[np.ndarray], deltas_km
) -> tuple[float, np.ndarray]:
    """NE (km) and PRQ(δ) from the precomputed distance matrix (same formulas as geoldp.metrics)."""
    lengths = np.array([t.shape[0] for t in trajs])
    x = np.concatenate(trajs)
    y = np.concatenate(out)
    if y.shape != x.shape:
        raise RuntimeError("perturbed output has a different number of points than the input")
    d = D[x, y] / 1000.0
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    ne = float(np.mean(np.add.reduceat(d, starts) / lengths))
    hit = (d[:, None] <= np.asarray(deltas_km)[None, :]).astype(float)
    prq = (np.add.reduceat(hit, starts, axis=0) / lengths[:, None]).mean(axis=0)
    return ne, prq


def public_regions(points, radii_km, grid: int = 5) -> list[tuple[float, float, float]]:
    """Circles centred on the public points nearest to a grid x grid lattice over P's bounding box
    (duplicates dropped), radii cycling through ``radii_km``: public, and where the public points are."""
    lon, lat = np.asarray(points.lon), np.asarray(points.lat)
    cx = lon.min() + (np.arange(grid) + 0.5) * (lon.max() - lon.min()) / grid
    cy = lat.min() + (np.arange(grid) + 0.5) * (lat.max() - lat.min()) / grid
    gx, gy = np.meshgrid(cx, cy)
    idx, _ = points.nearest(gx.ravel(), gy.ravel())
    idx = list(dict.fromkeys(int(i) for i in idx))  # first occurrence order, no duplicates
    return [(float(lon[i]), float(lat[i]), float(radii_km[j % len(radii_km)])) for j, i in enumerate(idx)]


def evaluate_rows(
    name: str, eps: float, outputs: dict, trajs, points, zones, regions, deltas
) -> pd.DataFrame:
    """geoldp.evaluate of the raw releases at one ε, the no-data baselines and, at ESTIMATE_EPSILON, the
    collector-side estimates of every mechanism's release (rows "<MECH> estimated" and "<MECH> denoised")."""

    entries = {f"{RELEASE_LABEL[m]} raw": out for m, out in outputs.items() if m in RELEASE_LABEL}
    kw = dict(points=points, zones=zones, regions=regions, delta_km=deltas)
    ev = geoldp.evaluate(trajs, entries, **kw)
    if eps == ESTIMATE_EPSILON:
        parts = [ev]
        for m, out in outputs.items():
            if m not in RELEASE_LABEL:
                continue
            lab = RELEASE_LABEL[m]
            # one mechanism per call: evaluate's estimators read that mechanism's public configuration
            est = geoldp.evaluate(
                trajs, {f"{lab} raw": out}, estimate=True, mechanism=m, epsilon=eps, baselines=(), **kw
            )
            parts.append(est.loc[[f"{lab} estimated", f"{lab} denoised"]])
        ev = pd.concat(parts)
    ev = ev.reset_index()
    ev.insert(0, "epsilon", eps)
    ev.insert(0, "dataset", name)
    return ev


def plot_dataset(table: pd.DataFrame, name: str, deltas, path: Path, exact: pd.DataFrame | None) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from geoldp.plotting import plot_utility

    fig, axes = plt.subplots(2, 3, figsize=(15, 8.5), layout="constrained")
    sub = table[table.dataset == name]
    ax = plot_utility(sub, metric="NE", ax=axes[0, 0])
    if exact is not None:
        ex = exact[(exact.dataset == name) & (exact.mechanism == "pointem")]
        ax.plot(ex.epsilon, ex.expected_NE_km, "k:", label="pointem exact E[NE]")
        ax.legend(fontsize="small")
    ax.set_ylabel("NE (km)")
    ax.set_title(f"{name}: NE (lower is better)")
    for ax, d in zip(axes.ravel()[1:], deltas, strict=False):
        plot_utility(sub, metric="PRQ", param=d, ax=ax)
        ax.set_ylabel(f"PRQ(δ = {d:g} km)")
        ax.set_title(f"{name}: PRQ, δ = {d:g} km (higher is better)")
    fig.savefig(path, dpi=110)
    plt.close(fig)


def machine_info() -> dict:
    info = {
        "platform": platform.platform(),
        "python": sys.version.split()[0],
        "cpu_count": os.cpu_count(),
        "processor": platform.processor() or platform.machine(),
    }
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    info["cpu"] = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        info["git_commit"] = subprocess.run(
            ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(REPO), "status", "--porcelain", "--", "geoldp"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split("\n")
        info["uncommitted_library_files"] = [line[3:] for line in dirty if line.strip()]
    except (OSError, subprocess.CalledProcessError):
        pass

    info["geoldp"] = geoldp.__version__
    info["numpy"] = np.__version__
    info["pandas"] = pd.__version__
    return info


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--data", type=Path, default=DEFAULT_DATA, help="folder holding chi_atp/, nyc_atp/, cps_atp/"
    )
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output folder (CSV, JSON, PNG)")
    ap.add_argument("--datasets", default=",".join(DATASETS), help="comma-separated data set names")
    ap.add_argument(
        "--mechanisms", default=",".join(MECHANISMS), help="comma-separated: " + ",".join(MECHANISMS)
    )
    ap.add_argument(
        "--epsilons", default=",".join(f"{e:g}" for e in EPSILONS), help="comma-separated ε values"
    )
    ap.add_argument("--reps", type=int, default=5, help="repetitions per setting (default 5)")
    ap.add_argument("--quick", action="store_true", help="1 repetition, ε ∈ {1, 4, 10}")
    ap.add_argument("--max-trajectories", type=int, default=None, help="use only the first N trajectories")
    ap.add_argument(
        "--sampler",
        choices=("fast", "reference"),
        default="fast",
        help="geoldp engine path (reference = pure Python, for small checks)",
    )
    ap.add_argument(
        "--seed", type=int, default=20230710, help="base seed (experiments only, never deployment)"
    )
    ap.add_argument(
        "--option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="TP/ATP option, e.g. tie_break=index or atp.sw_output=continuous (repeatable; ablations)",
    )
    ap.add_argument("--no-plots", action="store_true")
    ap.add_argument(
        "--evaluate-epsilons",
        "--evaluate-epsilon",
        default=",".join(f"{e:g}" for e in EVAL_EPSILONS),
        help="run geoldp.evaluate (all metrics, with the baselines) on repetition 0 at these ε "
        "(comma-separated; a negative value skips it)",
    )
    args = ap.parse_args(argv)

    options = {}
    for kv in args.option:
        key, sep, value = kv.partition("=")
        if not sep:
            ap.error(f"--option must be KEY=VALUE, got {kv!r}")
        try:
            options[key.strip()] = json.loads(value)
        except json.JSONDecodeError:
            options[key.strip()] = value
    datasets = [s.strip() for s in args.datasets.split(",") if s.strip()]
    mechanisms = [s.strip().lower() for s in args.mechanisms.split(",") if s.strip()]
    bad = sorted(set(mechanisms) - set(MECHANISMS))
    if bad:
        ap.error(f"unknown mechanism(s) {bad}; choose from {MECHANISMS}")
    epsilons = tuple(float(e) for e in args.epsilons.split(","))
    eval_eps = {float(e) for e in args.evaluate_epsilons.split(",") if e.strip() and float(e) >= 0}
    reps = args.reps
    if args.quick:
        epsilons, reps = (1.0, 4.0, 10.0), 1
    if not args.data.is_dir():
        log(f"data directory {args.data} not found; nothing to do (skipping).")
        return 0
    present = [d for d in datasets if (args.data / d / "points.csv").is_file()]
    for d in sorted(set(datasets) - set(present)):
        log(f"data set {d} not found under {args.data}; skipping it.")
    if not present:
        log("no data set found; nothing to do (skipping).")
        return 0

    args.out.mkdir(parents=True, exist_ok=True)
    records, exact_tables, timings, eval_tables = [], [], [], []
    t_start = time.perf_counter()
    for di, name in enumerate(present):
        lon, lat, trajs = load_dataset(args.data / name)
        if args.max_trajectories is not None:
            trajs = trajs[: args.max_trajectories]
        points = geoldp.PointSet(lon, lat)
        D = distance_matrix_m(lon, lat)
        deltas = DELTAS_KM.get(name, DEFAULT_DELTAS_KM)
        lengths = np.array([t.shape[0] for t in trajs])
        log(
            f"{name}: |P| = {len(lon)}, {len(trajs)} trajectories, {lengths.sum()} points, "
            f"mean length {lengths.mean():.2f}, Δ = {D.max() / 1000:.3f} km"
        )
        ex = exact_baselines(D, trajs, epsilons)
        ex.insert(0, "dataset", name)
        exact_tables.append(ex)
        kept: dict[float, dict] = {}  # ε -> mechanism -> repetition-0 output, for geoldp.evaluate
        for mi, mech in enumerate(mechanisms):
            for ei, eps in enumerate(epsilons):
                t0 = time.perf_counter()
                for rep in range(reps):
                    seq = np.random.SeedSequence([args.seed, di, mi, ei, rep])
                    out = perturb(mech, trajs, points, eps, np.random.default_rng(seq), args.sampler, options)
                    ne, prq = ne_prq(D, trajs, out, deltas)
                    if rep == 0 and eps in eval_eps:
                        kept.setdefault(eps, {})[mech] = out
                    base = {"dataset": name, "mechanism": mech, "epsilon": eps, "rep": rep}
                    records.append({**base, "metric": "NE", "param": np.nan, "value": ne})
                    records.extend(
                        {**base, "metric": "PRQ", "param": d, "value": float(v)}
                        for d, v in zip(deltas, prq, strict=True)
                    )
                dt = time.perf_counter() - t0
                timings.append(
                    {"dataset": name, "mechanism": mech, "epsilon": eps, "seconds": dt, "reps": reps}
                )
                last = [r["value"] for r in records[-(1 + len(deltas)) * reps :] if r["metric"] == "NE"]
                log(f"{name} {mech:8s} ε={eps:<4g} NE={np.mean(last):.4f} km ({reps} reps, {dt:.1f} s)")
        if kept:
            t0 = time.perf_counter()
            zones = geoldp.zone_grid(points, cell_km=ZONE_KM)
            regions = public_regions(points, REGION_RADII_KM.get(name, DEFAULT_REGION_RADII_KM))
            for eps in sorted(kept):
                eval_tables.append(evaluate_rows(name, eps, kept[eps], trajs, points, zones, regions, deltas))
            dt = time.perf_counter() - t0
            timings.append(
                {"dataset": name, "mechanism": "evaluate", "epsilon": np.nan, "seconds": dt, "reps": 1}
            )
            log(f"{name} evaluate with baselines at ε = {sorted(kept)} ({len(zones)} zones, {dt:.1f} s)")
    total = time.perf_counter() - t_start

    table = pd.DataFrame.from_records(records)
    table.to_csv(args.out / "paper_setup.csv", index=False)
    summary = (
        table.groupby(["dataset", "mechanism", "metric", "param", "epsilon"], dropna=False)["value"]
        .agg(["mean", "std", "count"])
        .reset_index()
    )
    summary.to_csv(args.out / "paper_setup_summary.csv", index=False)
    if eval_tables:
        pd.concat(eval_tables, ignore_index=True).to_csv(args.out / "evaluate.csv", index=False)
    exact = pd.concat(exact_tables, ignore_index=True)
    exact.to_csv(args.out / "exact_baselines.csv", index=False)
    meta = {
        "command": "python experiments/paper_setup.py "
        + " ".join(argv if argv is not None else sys.argv[1:]),
        "datasets": present,
        "mechanisms": mechanisms,
        "epsilons": list(epsilons),
        "reps": reps,
        "sampler": args.sampler,
        "options": options,
        "max_trajectories": args.max_trajectories,
        "total_seconds": round(total, 1),
        "timings": timings,
        "machine": machine_info(),
    }
    (args.out / "paper_setup_meta.json").write_text(json.dumps(meta, indent=1))
    if not args.no_plots:
        for name in present:
            plot_dataset(table, name, DELTAS_KM.get(name, DEFAULT_DELTAS_KM), args.out / f"{name}.png", exact)
    log(f"done in {total:.1f} s; wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

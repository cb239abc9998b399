"""Accuracy against the number of users: every design and question, n = 10^3 … 10^6, both no-data baselines.

Populations are bootstrapped from the shared real data sets (chi_atp, nyc_atp, cps_atp): the evaluation
half of the seeded split of ``experiments/designs.py`` is resampled with replacement to n users. Zones are
the public 10 x 10 grid over P's box. For each n, ε and design, the error of the design's answer against
the bootstrapped population's exact answer (:func:`geoldp.planner.error_of`) is measured, next to the
no-data baselines (uniform over P, constant at P's 1-median, P's zone shares) on the same plot.

How each design is run at every n (bounded, so that all of it fits in minutes):

- **Reports** (one visited zone, ℓ = 3 padded visited zones, the OD pair; the shrunk variants of
  :func:`geoldp.shrinkage.shrink_to_baseline`; the empirical-Bayes variants of
  :func:`geoldp.shrinkage.shrink_empirical_bayes` (one visited zone, ℓ = 2, the OD pair); and shrunk
  padded reports at ℓ = 5 and 8, whose ℓ-scaled estimates are visit counts rather than sampled-zone
  frequencies): the estimator's closed-form variance
  (:func:`geoldp.reports.estimators.count_variance`) around the expected report counts of the
  bootstrapped population, Gaussian noise, the same projection as ``estimate_counts``. At n = 10^3 and
  10^4 the real pipeline (``geoldp.report`` + ``estimate_counts`` on the bootstrapped trajectories) is
  also run, as a check of the closed form (markers on the plots).
- **TP, ATP, PointEM** (raw counts): every trajectory of the evaluation half is released ``POOL`` times
  once; a bootstrapped user gets one of her trajectory's releases at random. Beyond about
  ``POOL`` x the half's size users the pool's own noise is frozen (a floor of that size; the raw counts'
  bias dominates long before).
- **LDPTrace** (6 x 6 grid over P's box): the collection of n users is simulated exactly in aggregate
  (OUE sums, ``geoldp.ldptrace.collect``); at most ``SYNTH`` synthetic trajectories are drawn from the
  model and their counts scaled to n.
- **Hybrids** (report share s ∈ {0.25, 0.5, 0.75} of ε): ATP at (1 − s)ε from its pool and a shrunk
  report at sε, answers blended by :func:`geoldp.shrinkage.blend`.

The planner's view: ``geoldp.plan`` (with the held-out half as the public prior, and with no prior) gives
its expected error of the report designs at each n (dotted lines), and ``users_needed`` for a fixed public
target error per question, compared with where the measured curve crosses that target.

Outputs (``--out``, default docs/results): ``accuracy_vs_n.csv``, ``accuracy_vs_n_planner.csv``, one PNG
per data set and ε (``accuracy_vs_n_<set>_eps<ε>.png``) and ``accuracy_vs_n.md``. ``--datasets`` runs
a chunk; rows of other data sets already in the CSVs are kept. Exits 0 when the data are absent.

Usage::

    nice -n 10 python experiments/accuracy_vs_n.py --datasets cps_atp
    python experiments/accuracy_vs_n.py --from-csv                 # only redraw figures and the page
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "experiments"))
sys.path.insert(0, str(REPO / "src"))

import designs as shared  # noqa: E402  (the loader and the seeded split of experiments/designs.py)

DEFAULT_DATA = Path("/work/shared/data")
DEFAULT_OUT = REPO / "docs" / "results"
DATASETS = ("chi_atp", "nyc_atp", "cps_atp")
EPSILONS = (1.0, 2.0, 4.0, 8.0)
NS = (1_000, 3_000, 10_000, 30_000, 100_000, 300_000, 1_000_000)
REAL_NS = (1_000, 10_000)
PLAN_NS = (1_000, 10_000, 100_000, 1_000_000)
POOL = 10
SYNTH = 20_000
REPS = 2
SPLITS = (0.25, 0.5, 0.75)
QUESTIONS = ("zone_visits", "hotspots", "od_flows", "range_counts")
#: Public target errors for "users needed" (a collector's choice, fixed before looking at any data).
TARGETS = {"zone_visits": 0.1, "hotspots": 0.2, "od_flows": 0.5, "range_counts": 0.2}
REPORTS = {
    "report:visited_zone": ("visited_zone", 1, "projected"),
    "report:visited_zone:padded": ("visited_zone", 3, "projected"),
    "report:visited_zone:shrunk": ("visited_zone", 1, "shrunk"),
    "report:visited_zone:eb": ("visited_zone", 1, "eb"),
    "report:visited_zone:pad2:eb": ("visited_zone", 2, "eb"),
    "report:visited_zone:pad5:shrunk": ("visited_zone", 5, "shrunk"),
    "report:visited_zone:pad8:shrunk": ("visited_zone", 8, "shrunk"),
    "report:od": ("od", 1, "projected"),
    "report:od:shrunk": ("od", 1, "shrunk"),
    "report:od:eb": ("od", 1, "eb"),
}
SEED = shared.SEED + 100


class Population:
    """The evaluation trajectories as flat arrays (zone items per trajectory), for weighted counts."""

    def __init__(self, seqs, zone_of_point, k):
        self.k = k
        self.size = len(seqs)
        zs = [zone_of_point[s] for s in seqs]
        uniq = [np.unique(z) for z in zs]
        self.item_traj = np.repeat(np.arange(self.size), [u.size for u in uniq])
        self.items = np.concatenate(uniq)
        self.n_items = np.array([u.size for u in uniq])
        self.origin = np.array([z[0] for z in zs])
        self.dest = np.array([z[-1] for z in zs])

    def visits(self, w):
        keep = self.items < self.k
        return np.bincount(self.items[keep], weights=w[self.item_traj[keep]], minlength=self.k)

    def od(self, w):
        k = self.k
        ok = (self.origin < k) & (self.dest < k)
        return np.bincount(self.origin[ok] * k + self.dest[ok], weights=w[ok], minlength=k * k)

    def report_frequencies(self, w, des):
        """Expected reports of each domain value, users weighted by ``w`` (their multiplicities)."""
        f = np.zeros(des.d)
        if des.statistic == "od":
            np.add.at(f, self.origin * (self.k + 1) + self.dest, w)
            return f
        m = np.maximum(self.n_items, des.pad_length)
        np.add.at(f, self.items, (w / m)[self.item_traj])
        missing = m - self.n_items  # dummies fill the missing slots
        for j in range(int(missing.max()) if missing.size else 0):
            f[des.base + j] += float(np.sum((w / m)[missing > j]))
        return f


def report_closed_form(pop, w, n, stat, pad, estimator, eps, zp, rng, lengths):
    """(visits or OD) of a report design by the closed-form variance (see the module notes)."""
    from geoldp.nodata import no_data_shapes, uniform_answer
    from geoldp.reports import estimators as rest
    from geoldp.reports import release as rrel
    from geoldp.shrinkage import shrink_empirical_bayes, shrink_to_baseline

    des = rrel.scheme(stat, pop.k, eps, pad_length=pad, caller="accuracy_vs_n")
    f = pop.report_frequencies(w, des)
    sd = np.sqrt(rest.count_variance(f, n, des.oracle, single=stat == "od"))
    noisy = f + sd * rng.standard_normal(f.shape[0])
    k = pop.k

    def cells(v):
        return v[: (k + 1) ** 2].reshape(k + 1, k + 1)[:k, :k].reshape(-1) if stat == "od" else v[:k]

    od = stat == "od"
    if estimator == "shrunk":
        return shrink_to_baseline(cells(noisy * pad), cells(sd * pad), uniform_answer(zp, k, od=od))
    if estimator == "eb":  # the public length distribution, as the uniform baseline uses it
        shapes = no_data_shapes(zp, k, lengths, od=od)
        return shrink_empirical_bayes(cells(noisy * pad), cells(sd * pad), shapes)
    return cells(rest.project_simplex(noisy, float(n)) * pad)


def run_dataset(name, args, log):
    import geoldp
    from geoldp import ldptrace, metrics, zone_grid
    from geoldp.nodata import uniform_answer, uniform_visits
    from geoldp.planner import error_of
    from geoldp.reports import estimate_counts, report
    from geoldp.shrinkage import blend
    from geoldp.zones import check_zones, zone_of_vertices

    rng = np.random.default_rng(shared.SEED)
    points, all_seqs, all_trips = shared.load(args.data / name, 10**9, rng)
    ev, held = shared.split_halves(len(all_seqs), 2000, rng)
    seqs = [all_seqs[i] for i in ev]
    trips = all_trips.iloc[ev].reset_index(drop=True)
    prior = all_trips.iloc[held].reset_index(drop=True)
    zones = zone_grid(points, cells=shared.CELLS)
    z = check_zones(zones, caller="accuracy_vs_n")
    ps = geoldp.PointSet(points.lon.to_numpy(), points.lat.to_numpy())
    zp = zone_of_vertices(z, ps.lon, ps.lat)
    k = z.size
    pop = Population(seqs, zp, k)
    size = pop.size
    lengths = [len(s) for s in seqs]
    med = int(zp[metrics.one_median(ps)])
    const_v, const_od = np.zeros(k), np.zeros(k * k)
    if med < k:
        const_v[med], const_od[med * k + med] = 1.0, 1.0
    # per user: the expected zone visits of a trajectory of uniform draws from P with the data's lengths
    uni_v, uni_od = uniform_visits(zp, k, lengths) / len(lengths), uniform_answer(zp, k, od=True)
    # LDPTrace grid and the zone of each cell (as the planner's LDPTrace design)
    lon, lat = np.asarray(ps.lon), np.asarray(ps.lat)
    grid = ldptrace.Grid(float(lon.min()), float(lat.min()), float(lon.max()), float(lat.max()), n=6)
    seq_len = np.array([s.size for s in seqs])
    cells, offsets = ldptrace.cell_sequences(
        lon[np.concatenate(seqs)], lat[np.concatenate(seqs)], np.concatenate([[0], np.cumsum(seq_len)]), grid
    )
    cx, cy = grid.centres()
    zone_of_cell = zone_of_vertices(z, cx, cy)
    rows, prows = [], []
    for eps in args.eps:
        t0 = time.process_time()
        # release pools: POOL releases of every evaluation trajectory
        pools = {}
        for mech, e in [("tp", eps), ("atp", eps), ("pointem", eps)] + [
            ("atp", eps * (1 - s)) for s in SPLITS
        ]:
            rel = geoldp.perturb_trajectories(
                [s for s in seqs for _ in range(POOL)], ps, mechanism=mech, epsilon=e, rng=SEED + len(pools)
            )
            rp = Population(rel, zp, k)
            pools[(mech, e)] = rp
        log(f"{name} eps={eps}: pools {time.process_time() - t0:.0f} s CPU")
        gen = np.random.default_rng(SEED + int(eps * 10))
        for n in args.ns:
            for rep in range(REPS):
                w = gen.multinomial(n, np.full(size, 1.0 / size)).astype(np.float64)
                vis, od = pop.visits(w), pop.od(w)
                ans = {
                    "baseline:uniform": (uni_v * n, uni_od * n),
                    "baseline:constant": (const_v * n, const_od * n),
                    "baseline:shares": (uniform_answer(zp, k, od=False) * n, None),  # no OD answer
                }
                # trajectory designs: each user gets one of her trajectory's POOL releases
                rel_w = {}
                for key in pools:
                    u = np.zeros(size * POOL)
                    pick = gen.integers(0, POOL, size=n)
                    owners = np.repeat(np.arange(size), w.astype(np.int64))
                    np.add.at(u, owners * POOL + pick, 1.0)
                    rel_w[key] = u
                for mech in ("tp", "atp", "pointem"):
                    rp, u = pools[(mech, eps)], rel_w[(mech, eps)]
                    ans[mech] = (rp.visits(u), rp.od(u))
                for label, (stat, pad, estimator) in REPORTS.items():
                    v = report_closed_form(pop, w, n, stat, pad, estimator, eps, zp, gen, lengths)
                    ans[label] = (v, None) if stat == "visited_zone" else (None, v)
                for s in SPLITS:
                    rp, u = pools[("atp", eps * (1 - s))], rel_w[("atp", eps * (1 - s))]
                    rv = report_closed_form(pop, w, n, "visited_zone", 1, "shrunk", eps * s, zp, gen, lengths)
                    ro = report_closed_form(pop, w, n, "od", 1, "shrunk", eps * s, zp, gen, lengths)
                    ans[f"hybrid:atp+report@{s:g}"] = (blend(rv, rp.visits(u), s), blend(ro, rp.od(u), s))
                # LDPTrace: the n users' reports in aggregate, at most SYNTH synthetic trajectories
                wi = w.astype(np.int64)
                lens = np.repeat(np.diff(offsets), wi)  # cell sequences (repeated cells merged)
                starts = np.repeat(offsets[:-1], wi)
                idx = np.repeat(starts, lens) + (
                    np.arange(lens.sum()) - np.repeat(np.cumsum(lens) - lens, lens)
                )
                model = ldptrace.collect(
                    cells[idx],
                    np.concatenate([[0], np.cumsum(lens)]),
                    grid,
                    eps,
                    rng=int(gen.integers(2**62)),
                )
                m = min(n, SYNTH)
                syn, off = ldptrace.synthesize_cells(model, m, rng=int(gen.integers(2**62)))
                zs = [zone_of_cell[syn[a:b]] for a, b in zip(off[:-1], off[1:], strict=True) if b > a]
                sv = np.zeros(k)
                so = np.zeros(k * k)
                for q_ in zs:
                    uq = np.unique(q_)
                    sv[uq[uq < k]] += 1
                    if q_[0] < k and q_[-1] < k:
                        so[q_[0] * k + q_[-1]] += 1
                scale = n / max(len(zs), 1)
                ans["ldptrace"] = (sv * scale, so * scale)
                for label, (v, o) in ans.items():
                    for q in QUESTIONS:
                        est = o if q == "od_flows" else v
                        if est is None:
                            continue
                        truth = od if q == "od_flows" else vis
                        rows.append(
                            {
                                "dataset": name,
                                "epsilon": eps,
                                "n": n,
                                "rep": rep,
                                "design": label,
                                "question": q,
                                "path": "fast",
                                "error": error_of(q, truth, est, n),
                            }
                        )
                # the real report pipeline at small n, as a check of the closed form
                if n in REAL_NS and rep == 0:
                    boot = trips.iloc[np.repeat(np.arange(size), wi)].reset_index(drop=True)
                    for label, (stat, pad, estimator) in REPORTS.items():
                        if estimator != "projected":
                            continue
                        est = estimate_counts(
                            report(boot, zones, statistic=stat, epsilon=eps, pad_length=pad, rng=SEED + n),
                            zones,
                        )["projected"].to_numpy()
                        for q in QUESTIONS:
                            if (q == "od_flows") != (stat == "od"):
                                continue
                            truth = od if q == "od_flows" else vis
                            rows.append(
                                {
                                    "dataset": name,
                                    "epsilon": eps,
                                    "n": n,
                                    "rep": rep,
                                    "design": label,
                                    "question": q,
                                    "path": "real",
                                    "error": error_of(q, truth, est, n),
                                }
                            )
            log(f"{name} eps={eps} n={n}: {time.process_time() - t0:.0f} s CPU")
        # the planner's expected error (report designs, closed form) at every n, and users needed
        for mode in ("prior", "no prior"):
            for q in QUESTIONS:
                names = [d for d in REPORTS if (d.startswith("report:od")) == (q == "od_flows")]
                for n in [m for m in args.ns if m in PLAN_NS]:
                    tab = geoldp.plan(
                        points,
                        zones,
                        epsilon=eps,
                        n=n,
                        lengths=lengths,
                        question=q,
                        designs=names,
                        prior=prior if mode == "prior" else None,
                        target_error=TARGETS[q],
                        rng=SEED,
                    )
                    for d in tab.index:
                        prows.append(
                            {
                                "dataset": name,
                                "epsilon": eps,
                                "n": n,
                                "question": q,
                                "planner": mode,
                                "design": d,
                                "planned_error": float(tab.loc[d, "error"]),
                                "users_needed": float(tab.loc[d, "users_needed"])
                                if "users_needed" in tab.columns
                                else np.nan,
                                "target": TARGETS[q],
                            }
                        )
        log(f"{name} eps={eps}: done, {time.process_time() - t0:.0f} s CPU")
    return pd.DataFrame(rows), pd.DataFrame(prows)


# --------------------------------------------------------------------------------------------------
# outputs
# --------------------------------------------------------------------------------------------------

STYLE = {
    "tp": ("tab:blue", "-"),
    "atp": ("tab:orange", "-"),
    "pointem": ("tab:green", "-"),
    "ldptrace": ("tab:brown", "-"),
    "report:visited_zone": ("tab:red", "-"),
    "report:visited_zone:padded": ("tab:purple", "-"),
    "report:visited_zone:shrunk": ("tab:pink", "-"),
    "report:visited_zone:pad5:shrunk": ("tab:cyan", "-"),
    "report:visited_zone:pad8:shrunk": ("tab:gray", "-."),
    "report:od": ("tab:red", "-"),
    "report:od:shrunk": ("tab:pink", "-"),
    # solid, in colours of their own: dotted lines are the planner's
    "report:visited_zone:eb": ("#1b9e77", "-"),
    "report:visited_zone:pad2:eb": ("#7570b3", "-"),
    "report:od:eb": ("#d95f02", "-"),
    "hybrid:atp+report@0.25": ("tab:olive", "--"),
    "hybrid:atp+report@0.5": ("tab:olive", "-."),
    "hybrid:atp+report@0.75": ("tab:olive", ":"),
    "baseline:uniform": ("black", "--"),
    "baseline:constant": ("grey", "--"),
    "baseline:shares": ("black", ":"),
}
LABELS = {
    "zone_visits": "zone visits: L1",
    "hotspots": "hotspots: 1 − top-10 precision",
    "od_flows": "OD flows: L1",
    "range_counts": "range counts: mean relative error",
}


def merge_csv(path: Path, new: pd.DataFrame) -> pd.DataFrame:
    """New rows replace the old rows of the same data sets and ε; the rest is kept."""
    if path.exists() and not new.empty:
        old = pd.read_csv(path)
        keys = set(zip(new["dataset"], new["epsilon"], strict=True))
        old = old[[(d, e) not in keys for d, e in zip(old["dataset"], old["epsilon"], strict=True)]]
        new = pd.concat([old, new], ignore_index=True)
    elif path.exists():
        new = pd.read_csv(path)
    tmp = path.with_suffix(".tmp")
    new.to_csv(tmp, index=False)
    tmp.replace(path)
    return new


def figures(df: pd.DataFrame, planned: pd.DataFrame, out: Path) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = []
    for (dset, eps), g in df.groupby(["dataset", "epsilon"]):
        fig, axes = plt.subplots(2, 2, figsize=(13, 10), layout="constrained")
        for ax, q in zip(axes.ravel(), QUESTIONS, strict=True):
            h = g[(g["question"] == q)]
            fast = h[h["path"] == "fast"].groupby(["design", "n"])["error"].mean().reset_index()
            for d, c in fast.groupby("design"):
                colour, ls = STYLE.get(d, ("tab:cyan", "-"))
                lw = 2.2 if d.startswith("baseline") else 1.5
                ax.plot(
                    c["n"],
                    c["error"],
                    ls,
                    color=colour,
                    lw=lw,
                    label=d,
                    marker="" if d.startswith("b") else ".",
                )
            real = h[h["path"] == "real"]
            for d, c in real.groupby("design"):
                ax.plot(c["n"], c["error"], "x", color=STYLE.get(d, ("k", ""))[0], ms=9, mew=2)
            p = planned[
                (planned["dataset"] == dset)
                & (planned["epsilon"] == eps)
                & (planned["question"] == q)
                & (planned["planner"] == "prior")
                & planned["design"].str.startswith("report")
            ]
            for d, c in p.groupby("design"):
                ax.plot(c["n"], c["planned_error"], ":", color=STYLE.get(d, ("k", ""))[0], lw=1.2)
            ax.set_xscale("log")
            if q != "hotspots":  # 1 − precision is often exactly 0: linear there
                ax.set_yscale("log")
            ax.set_xlabel("users n (bootstrapped)")
            ax.set_title(LABELS[q])
            ax.grid(alpha=0.3, which="both")
        handles = {}
        for ax in axes.ravel():
            for hd, lb in zip(*ax.get_legend_handles_labels(), strict=True):
                handles.setdefault(lb, hd)
        fig.legend(handles.values(), handles.keys(), loc="outside lower center", ncol=5, fontsize=8)
        fig.suptitle(
            f"{dset}, ε = {eps:g} per trajectory: error against the number of users (lower is better). "
            "x: real report pipeline; dotted: the planner's expected error (prior)",
            fontsize=10,
        )
        name = f"accuracy_vs_n_{dset}_eps{eps:g}.png"
        fig.savefig(out / name, dpi=90)
        plt.close(fig)
        names.append(name)
    return names


def crossing(c: pd.DataFrame, target: float) -> float:
    """Smallest measured n (log-interpolated) where the mean error is at most the target; NaN if none."""
    c = c.sort_values("n")
    ns, es = c["n"].to_numpy(float), c["error"].to_numpy(float)
    hit = np.flatnonzero(es <= target)
    if hit.size == 0:
        return np.nan
    i = int(hit[0])
    if i == 0:
        return ns[0] if es[0] <= target else np.nan
    a, b = np.log(ns[i - 1]), np.log(ns[i])
    t = (es[i - 1] - target) / (es[i - 1] - es[i]) if es[i - 1] != es[i] else 1.0
    return float(np.exp(a + t * (b - a)))


def markdown_page(df: pd.DataFrame, planned: pd.DataFrame, pngs: list[str], out: Path, cpu: str) -> None:
    from designs import markdown

    lines = [
        "# Accuracy against the number of users",
        "",
        "What was measured: for every design and question, the error of its answer against the exact",
        "answer of a population of n users, n = 10^3 … 10^6, next to the no-data baselines (uniform",
        "over P: every point a uniform draw from P, with the data's lengths, so a zone holding a share s",
        "of P is visited by 1 − (1 − s)^L of the trajectories of length L, for OD the outer product of",
        "the shares; constant: everything in the zone of P's 1-median; and, for the zone questions,",
        "shares: one visit per trajectory spread over the zones like P's points). Populations are",
        "bootstrapped (users resampled with replacement) from the evaluation half of each real data set",
        "(chi_atp, nyc_atp, cps_atp; the seeded split of `experiments/designs.py`, at most 2,000",
        "trajectories); zones are a public 10 x 10 grid over P's box. Errors as in",
        "[the designs comparison](designs.md): zone-visit and OD L1 (0 to 2), 1 − top-10 precision, and",
        "the mean relative error of the visit count of each zone. Mean of two bootstraps per point.",
        "",
        "How the designs are run at large n (so that all of it is bounded):",
        "",
        "- **Reports** use their estimator's closed-form variance around the population's expected",
        "  report counts (Gaussian noise, the estimator's projection). The crosses are the real pipeline",
        "  (`geoldp.report` + `geoldp.reports.estimate_counts` on the bootstrapped trajectories) at",
        "  n = 10^3 and 10^4, a check of the closed form. `pad5:shrunk` and `pad8:shrunk` pad each",
        "  trajectory's visited zones to ℓ = 5 or 8 and scale by ℓ, so that they estimate visit counts",
        "  (the one-zone report estimates each trajectory's 1/|set| share of each zone it visits).",
        "  `:eb` (one visited zone, ℓ = 2, the OD pair): the unbiased estimate shrunk zone by zone toward",
        "  the mix of no-data answers the release fits best (`geoldp.shrinkage.shrink_empirical_bayes`)",
        "  (no crosses, as for the shrunk reports: the real pipeline is run for the projected estimates).",
        f"- **TP, ATP, PointEM** (raw counts): each trajectory of the evaluation half is released {POOL}",
        "  times once and each bootstrapped user gets one of her trajectory's releases. Beyond about",
        f"  {POOL} x 2,000 users the pool's own noise is frozen; the raw counts' bias dominates long before.",
        "- **LDPTrace** (6 x 6 grid over P's box): the n users' reports are simulated exactly in",
        f"  aggregate (OUE sums); at most {SYNTH:,} synthetic trajectories are drawn, their counts",
        "  scaled to n.",
        "- **Hybrids** `hybrid:atp+report@s`: a share s of ε to a shrunk report, the rest to an ATP",
        "  trajectory; the answers are averaged with weights s and 1 − s.",
        "",
        "Dotted lines: the planner's expected error of each report design (`geoldp.plan` with the",
        "held-out half of the data set as its public prior), computed before any release.",
        "",
        "Command: `nice -n 10 python experiments/accuracy_vs_n.py` (all data sets, or one at a time with",
        f"`--datasets`; CPU per data set: {cpu}).",
        "Data: `accuracy_vs_n.csv` (every point), `accuracy_vs_n_planner.csv` (the planner's view).",
        "",
    ]
    for name in pngs:
        lines += [f"![{name}]({name})", ""]
    # the best design against the baselines at each n
    fast = df[df["path"] == "fast"].groupby(["dataset", "epsilon", "question", "design", "n"])["error"].mean()
    fast = fast.reset_index()
    lines += [
        "## Where the designs beat no data",
        "",
        "For each setting, the best design at n = 10^3, 10^4, 10^5 and 10^6 and its error relative to the",
        "better baseline (negative = the design is better).",
        "",
    ]
    tab = []
    for (dset, eps, q), g in fast.groupby(["dataset", "epsilon", "question"]):
        row = {"dataset": dset, "epsilon": eps, "question": q}
        for n in (1_000, 10_000, 100_000, 1_000_000):
            h = g[g["n"] == n].set_index("design")["error"]
            if h.empty:
                continue
            base = h[[d.startswith("baseline") for d in h.index]].min()
            des = h[[not d.startswith("baseline") for d in h.index]]
            row[f"n={n:,}"] = f"{des.idxmin()} {des.min() / base - 1:+.0%}" if base > 0 else des.idxmin()
        tab.append(row)
    lines += [markdown(pd.DataFrame(tab)), ""]
    # the smallest n at which some design is 30 % below the better baseline
    lines += [
        "## Users needed to beat no data by 30 %",
        "",
        "The smallest n of the grid at which some design's error is at least 30 % below the better",
        "baseline's (for hotspots: 1 − precision at least 0.1 below), and that design; empty = not",
        "within 10^6 users.",
        "",
    ]
    tab = []
    for (dset, eps, q), g in fast.groupby(["dataset", "epsilon", "question"]):
        row = {"dataset": dset, "epsilon": eps, "question": q, "n": "", "design": ""}
        for n, h in g.groupby("n"):
            h = h.set_index("design")["error"]
            base = h[[d.startswith("baseline") for d in h.index]].min()
            des = h[[not d.startswith("baseline") for d in h.index]]
            ok = des.min() <= base - 0.1 if q == "hotspots" else des.min() <= 0.7 * base
            if ok:
                row["n"], row["design"] = f"{n:,}", des.idxmin()
                break
        tab.append(row)
    lines += [markdown(pd.DataFrame(tab)), ""]
    # planner's users needed against the measured crossing
    lines += [
        "## Users needed for a target error: the planner against the curves",
        "",
        "Targets (public, fixed before the runs): "
        + ", ".join(f"{q} {t:g}" for q, t in TARGETS.items())
        + ". `planner` is `users_needed` from `geoldp.plan` at n = 10^4 (prior = held-out half; no",
        "prior = random walks); `measured` is where the measured curve (closed form, mean of two",
        "bootstraps, log-interpolated) first reaches the target; empty = not within 10^6 users.",
        "1,000 (measured) and 156 (planner: 10^4 / 64) are the lower ends of the two grids: the target",
        "is already reached there.",
        "",
    ]
    tab = []
    for (dset, eps, q, d), g in fast.groupby(["dataset", "epsilon", "question", "design"]):
        if d not in REPORTS:
            continue
        p = planned[
            (planned["dataset"] == dset)
            & (planned["epsilon"] == eps)
            & (planned["question"] == q)
            & (planned["design"] == d)
            & (planned["n"] == 10_000)
        ].set_index("planner")
        measured = crossing(g, TARGETS[q])
        row = {"dataset": dset, "epsilon": eps, "question": q, "design": d}
        row["measured"] = f"{measured:,.0f}" if np.isfinite(measured) else ""
        for mode in ("prior", "no prior"):
            v = p.loc[mode, "users_needed"] if mode in p.index else np.nan
            row[f"planner ({mode})"] = f"{v:,.0f}" if np.isfinite(v) else ""
        tab.append(row)
    lines += [markdown(pd.DataFrame(tab)), ""]
    # planner's expected error against the measured curve
    lines += [
        "## The planner's expected error against the measured curve",
        "",
        "Median over n of |planned − measured| / measured for the report designs:",
        "",
    ]
    m = fast[fast["design"].isin(list(REPORTS))]
    j = planned.merge(m, on=["dataset", "epsilon", "question", "design", "n"])
    j["rel_gap"] = (j["planned_error"] - j["error"]).abs() / j["error"].clip(lower=1e-9)
    summ = j.groupby(["question", "planner"])["rel_gap"].median().unstack()
    lines += [markdown(summ.reset_index().rename(columns={"question": "question"})), ""]
    # the closed form against the real pipeline (one real report table per point: its noise included)
    real = df[df["path"] == "real"].groupby(["dataset", "epsilon", "question", "design", "n"])["error"].mean()
    both = pd.concat(
        [fast.set_index(["dataset", "epsilon", "question", "design", "n"])["error"], real], axis=1
    )
    both = both.dropna()
    both.columns = ["closed form", "real"]
    gap = ((both["closed form"] - both["real"]).abs() / both["real"].clip(lower=1e-9)).groupby(
        level="question"
    )
    lines += [
        "## The closed form against the real report pipeline",
        "",
        "Median |closed form − real| / real at n = 10^3 and 10^4 (one real report table per point, so",
        "its own noise is part of the gap; hotspots, often exactly 0, are left out):",
        "",
        markdown(gap.median().drop("hotspots", errors="ignore").rename("median gap").reset_index()),
        "",
    ]
    (out / "accuracy_vs_n.md").write_text("\n".join(lines), encoding="utf-8")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--datasets", nargs="+", default=list(DATASETS))
    ap.add_argument("--eps", nargs="+", type=float, default=list(EPSILONS))
    ap.add_argument("--ns", nargs="+", type=int, default=list(NS))
    ap.add_argument("--from-csv", action="store_true", help="only redraw the figures and the page")
    args = ap.parse_args(argv)

    def log(msg):
        print(f"accuracy_vs_n: {msg}", file=sys.stderr, flush=True)

    args.out.mkdir(parents=True, exist_ok=True)
    cpu_file = args.out / "accuracy_vs_n_cpu.txt"
    if not args.from_csv:
        if not args.data.exists():
            log(f"data directory {args.data} not found; nothing to do")
            return 0
        warnings.simplefilter("ignore")  # the no-data-level warnings are what is measured here
        for name in args.datasets:
            if not (args.data / name).exists():
                log(f"{name} not found, skipped")
                continue
            t0 = time.process_time()
            rows, prows = run_dataset(name, args, log)
            merge_csv(args.out / "accuracy_vs_n.csv", rows)
            merge_csv(args.out / "accuracy_vs_n_planner.csv", prows)
            spent = (
                dict(line.split(": ") for line in cpu_file.read_text().splitlines() if ": " in line)
                if cpu_file.exists()
                else {}
            )
            spent[name] = f"{time.process_time() - t0:.0f} s CPU"
            cpu_file.write_text("".join(f"{k}: {v}\n" for k, v in spent.items()))
    if not (args.out / "accuracy_vs_n.csv").exists():
        log("no results yet; nothing drawn")
        return 0
    df = pd.read_csv(args.out / "accuracy_vs_n.csv")
    planned = pd.read_csv(args.out / "accuracy_vs_n_planner.csv")
    pngs = figures(df, planned, args.out)
    cpu = (
        ", ".join(f"{line}" for line in cpu_file.read_text().splitlines())
        if cpu_file.exists()
        else "CPU time not recorded"
    )
    markdown_page(df, planned, pngs, args.out, cpu)
    log(f"wrote {args.out / 'accuracy_vs_n.md'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

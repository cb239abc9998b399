"""Out of sample: is any collector-side estimator's answer worse than the raw release and the no-data answers?

Every estimator of :mod:`geoldp.estimate` (one :func:`geoldp.estimate.fit` per release answers them all;
:mod:`geoldp.layers` only joins these tables to geometry) is scored against the truth beside

- the **raw release**'s answer to the same question (the ``raw`` column; for :func:`~geoldp.estimate.denoise`
  the released trajectories themselves), and
- the two **no-data baselines**: every point an independent uniform draw from P (with the release's lengths,
  which are public) and every point at P's 1-median (the constant).

Questions and errors (lower is better):

============  ===========================================  ============================================
estimator     question                                     error
============  ===========================================  ============================================
denoise       every trajectory                             NE: mean point distance to the original (km)
visit_counts  distinct trajectories per public point       L1 of the normalised distribution
visit_counts  distinct trajectories per zone               L1 of the normalised distribution
range_counts  trajectories through each circle (1-3 km)    mean relative error (planner.error_of)
hotspots      top-10 zones                                 1 − top-10 precision (abstention: a miss)
od_flows      origin zone x destination zone               L1 of the normalised distribution
============  ===========================================  ============================================

Data (``/work/shared/data``), prepared exactly as ``experiments/designs_oos.py`` does (same seeds): chi_atp,
nyc_atp, cps_atp (their public P; at most ``--max-traj`` trajectories of the evaluation half) — **the sets
on which any rule is chosen** — and the held-out test sets tdrive_600 (a seeded draw of ``--max-traj``
trips) and geolife_small_mpd (43 trips), both over a public 1 km grid of points over a fixed box of Beijing,
trips resampled to at most 8 points. Zones: the public 10 x 10 grid of ``designs_oos``. ATP (and TP /
PointEM with ``--mechanisms``) at ε ∈ {1, 4, 8} per trajectory; every setting is repeated over
``--seeds`` seeded releases (each with its own estimator seed), and every figure is the mean over them with
its spread.

**Worse than both** (the target): the estimate's error exceeds both the raw release's and the better no-data
baseline's by more than its noise, i.e. the mean paired difference over seeds exceeds two of its standard
errors for both comparisons.

Rules compared (``geoldp.estimate.FALLBACK``, set for each query of the same fit; ``rule`` column):

- ``none``: the population model's own answer (the estimators before any rule);
- ``split``: a held-out check of the release (:meth:`geoldp.estimate._model.Model.release_check`): the
  model refitted on half of each length's rows is kept unless the raw release, uniform draws from P or
  the constant at P's 1-median, each taken as a population and pushed through the simulated channel,
  predicts the other half's released counts better (then that answer);
- ``support``: every count table reports the model's count where it is ``supported`` and the raw count
  elsewhere;
- ``support-range`` (the default): the same for range counts only; the other tables are the model's.

For hotspots the table as returned (only supported zones are ranked; an empty table is an explicit "no
supported hotspot" answer, scored as misses) and, as ``<rule> (ranked)``, the top 10 of the zone-visit
estimate. Denoise has no rule (its answer is the same in every row).

Outputs (``--out``, default docs/results): ``estimators_oos.csv`` (one row per data set, ε, mechanism,
seed, estimator, question and rule: error, raw error, baselines' errors, the answer given) and
``estimators_oos.md`` (the summary). Seeded (experiments only). Exits 0 with a message when the data
directory is absent.

Usage::

    nice -n 10 python experiments/estimators_oos.py      # everything (about 10 CPU-minutes)
    python experiments/estimators_oos.py --datasets cps_atp --eps 4 --seeds 2
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO / "experiments"))

import designs_oos as oos  # noqa: E402  (its data preparation is reused as it is)
from estimators import circles  # noqa: E402

DEFAULT_DATA = Path("/work/shared/data")
DEFAULT_OUT = REPO / "docs" / "results"
TUNING = ("chi_atp", "nyc_atp", "cps_atp")
TESTS = ("tdrive_600", "geolife_small_mpd")
DATASETS = TUNING + TESTS
EPSILONS = (1.0, 4.0, 8.0)
SEED = 20261205
#: The rules compared (``geoldp.estimate.FALLBACK``): none = the model's answer; support-range the default.
RULES = ("none", "split", "support", "support-range")
QUESTIONS = (
    ("denoise", "trajectories", "NE (km)"),
    ("visit_counts", "points", "point L1"),
    ("visit_counts", "zones", "zone L1"),
    ("range_counts", "circles", "range MRE"),
    ("hotspots", "zones", "1 − top-10 precision"),
    ("od_flows", "zones", "OD L1"),
)


def log(msg: str) -> None:
    print(f"[estimators_oos {time.strftime('%H:%M:%S')}] {msg}", flush=True)


# --------------------------------------------------------------------------------------------------
# truth, raw and baselines
# --------------------------------------------------------------------------------------------------


def distinct(seqs, label: np.ndarray, n_labels: int) -> np.ndarray:
    out = np.zeros(n_labels)
    for s in seqs:
        lab = np.unique(label[s])
        out[lab[lab >= 0]] += 1
    return out


def od_counts(seqs, label: np.ndarray, k: int) -> np.ndarray:
    out = np.zeros(k * k)
    for s in seqs:
        o, d = label[s[0]], label[s[-1]]
        if o >= 0 and d >= 0:
            out[o * k + d] += 1
    return out


def member_counts(seqs, members: list[np.ndarray], m: int) -> np.ndarray:
    inside = np.zeros((len(members), m), dtype=bool)
    for r, mem in enumerate(members):
        inside[r, mem] = True
    return np.array([sum(bool(row[s].any()) for s in seqs) for row in inside], dtype=float)


def uniform_hits(share: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Σ_j 1 − (1 − s)^{n_j}: trajectories of uniform draws from P hitting a set of P-share s."""
    values, counts = np.unique(lengths, return_counts=True)
    return (counts[None, :] * (1.0 - (1.0 - share)[:, None] ** values[None, :])).sum(axis=1)


def ne_km(orig, est, lon, lat) -> float:
    from geoldp import haversine_m

    return float(
        np.mean(
            [np.mean(haversine_m(lon[x], lat[x], lon[y], lat[y])) for x, y in zip(orig, est, strict=True)]
        )
        / 1000.0
    )


def error(question: str, truth: np.ndarray, est: np.ndarray, n: int) -> float:
    from geoldp.planner import error_of

    q = {
        "zone L1": "zone_visits",
        "point L1": "zone_visits",
        "OD L1": "od_flows",
        "range MRE": "range_counts",
    }
    return error_of(q[question], truth, est, n)


def hotspot_error(truth: np.ndarray, ranked: np.ndarray) -> float:
    """1 − top-k precision of the ranked positions (k = 10, as :func:`geoldp.planner.error_of`)."""
    k = max(1, min(10, truth.shape[0] // 2))
    top = set(np.lexsort((np.arange(truth.shape[0]), -truth))[:k].tolist())
    return 1.0 - len(top & set(np.asarray(ranked)[:k].tolist())) / k


def ranked(v: np.ndarray) -> np.ndarray:
    return np.lexsort((np.arange(v.shape[0]), -np.asarray(v, dtype=float)))


class Setting:
    """One data set's public inputs, truth and no-data answers (independent of ε and of the release)."""

    def __init__(self, data: Path, name: str, max_traj: int) -> None:
        import geoldp
        from geoldp.estimate import _inputs

        points, zones, seqs, _ = oos.evaluation_set(data, name, max_traj)
        self.name, self.seqs, self.zones = name, seqs, zones
        self.ps = geoldp.PointSet(points.lon.to_numpy(), points.lat.to_numpy())
        ps, lon, lat = self.ps, self.ps.lon, self.ps.lat
        self.lon, self.lat = np.asarray(lon), np.asarray(lat)
        self.zone_of, _ = _inputs.zone_of_points(zones, ps, caller="estimators_oos")
        k = self.k = len(zones)
        regs = circles(self.lon, self.lat, 3.0 if ps.diameter_km > 10 else 0.75)
        members, _ = _inputs.region_members(regs, ps, crs="EPSG:4326", caller="estimators_oos")
        keep = [i for i, mem in enumerate(members) if mem.size]
        self.regions = [regs[i] for i in keep]
        self.members = [members[i] for i in keep]
        n, m = len(seqs), ps.size
        lengths = np.array([s.shape[0] for s in seqs])  # = the release's lengths (public)
        self.med = med = int(ps.one_median())
        zmed = int(self.zone_of[med])
        pts = np.arange(m)
        self.truth = {
            "point L1": distinct(seqs, pts, m),
            "zone L1": distinct(seqs, self.zone_of, k),
            "range MRE": member_counts(seqs, self.members, m),
            "OD L1": od_counts(seqs, self.zone_of, k),
        }
        self.truth["1 − top-10 precision"] = self.truth["zone L1"]
        zshare = np.bincount(self.zone_of[self.zone_of >= 0], minlength=k) / m
        rshare = np.array([mem.size / m for mem in self.members])
        const_z = np.zeros(k)
        const_od = np.zeros(k * k)
        if zmed >= 0:
            const_z[zmed], const_od[zmed * k + zmed] = n, n
        const_p = np.zeros(m)
        const_p[med] = n
        self.baselines = {
            "uniform": {
                "point L1": uniform_hits(np.full(m, 1.0 / m), lengths),
                "zone L1": uniform_hits(zshare, lengths),
                "range MRE": uniform_hits(rshare, lengths),
                "OD L1": np.outer(zshare, zshare).reshape(-1) * n,
            },
            "constant": {
                "point L1": const_p,
                "zone L1": const_z,
                "range MRE": np.array([n * float(med in set(mem.tolist())) for mem in self.members]),
                "OD L1": const_od,
            },
        }
        for b in self.baselines.values():
            b["1 − top-10 precision"] = b["zone L1"]
        self.base_err = {b: {} for b in self.baselines}
        for b, ans in self.baselines.items():
            for q, v in ans.items():
                t = self.truth[q]
                self.base_err[b][q] = (
                    hotspot_error(t, ranked(v)) if q.startswith("1 −") else error(q, t, v, n)
                )
        # NE of the baselines, exact: the constant's distance, and the mean distance to a uniform draw
        from geoldp import haversine_m

        self.base_err["constant"]["NE (km)"] = ne_km(seqs, [np.full(s.shape[0], med) for s in seqs], lon, lat)
        pts_used = np.unique(np.concatenate(seqs))
        mean_d = np.array(
            [np.mean(haversine_m(self.lon[p], self.lat[p], self.lon, self.lat)) / 1000.0 for p in pts_used]
        )
        md = dict(zip(pts_used.tolist(), mean_d.tolist(), strict=True))
        self.base_err["uniform"]["NE (km)"] = float(np.mean([np.mean([md[p] for p in s]) for s in seqs]))


# --------------------------------------------------------------------------------------------------
# one release
# --------------------------------------------------------------------------------------------------


def answers(
    st: Setting, mech: str, eps: float, seed: int, n_boot: int, rules: list[str]
) -> tuple[dict, dict]:
    """{question: {answer: value}} and the fallback records of one seeded release.

    One fit answers every question under every rule (``estimate.FALLBACK``): the answer ``none`` is the
    population model's own; ``raw`` the release's.
    """
    from geoldp import estimate, perturb_trajectories

    rel = perturb_trajectories(st.seqs, st.ps, mechanism=mech, epsilon=eps, rng=seed)
    pop = estimate.fit(rel, st.ps, mechanism=mech, epsilon=eps, rng=seed + 1, n_boot=n_boot)
    out: dict = {q: {} for _, _, q in QUESTIONS}
    notes: dict = {q: {} for _, _, q in QUESTIONS}
    k = st.k
    before = estimate.FALLBACK
    try:
        for rule in rules:
            estimate.FALLBACK = rule
            vp = pop.visit_counts()
            vz = pop.visit_counts(st.zones)
            rc = pop.range_counts(st.regions)
            od = pop.od_flows(st.zones).reset_index()  # the pairs as columns
            hs = pop.hotspots(k=10, zones=st.zones)
            full = np.zeros(k * k)
            pos = st.zones.index.get_indexer(od["origin"]) * k + st.zones.index.get_indexer(od["destination"])
            full[pos] = od["estimate"].to_numpy()
            for q, tab, val in (
                ("point L1", vp, None),
                ("zone L1", vz, None),
                ("range MRE", rc, None),
                ("OD L1", od, full),
            ):
                out[q][rule] = tab["estimate"].to_numpy() if val is None else val
                fb = dict(tab.attrs.get("estimator", {}).get("fallback") or {})
                notes[q][rule] = fb.get("answer", "")
                if rule == rules[0]:
                    raw = tab["raw"].to_numpy()
                    if q == "OD L1":
                        raw = np.zeros(k * k)
                        raw[pos] = od["raw"].to_numpy()
                    out[q]["raw"] = raw
            out["1 − top-10 precision"][rule] = ("ranked", st.zones.index.get_indexer(hs.index))
            out["1 − top-10 precision"][rule + " (ranked)"] = ("ranked", ranked(vz["estimate"].to_numpy()))
            notes["1 − top-10 precision"][rule] = (
                f"{len(hs)} rows of {hs.attrs.get('supported_cells')} supported"
            )
            if rule == rules[0]:
                out["1 − top-10 precision"]["raw"] = ("ranked", ranked(vz["raw"].to_numpy()))
    finally:
        estimate.FALLBACK = before
    den = pop.denoise()
    for rule in rules:
        out["NE (km)"][rule] = den
        notes["NE (km)"][rule] = ""
    out["NE (km)"]["raw"] = rel
    return out, notes


def score(st: Setting, q: str, value) -> float:
    t = st.truth.get(q)
    if q == "NE (km)":
        return ne_km(st.seqs, value, st.lon, st.lat)
    if isinstance(value, tuple) and value[0] == "ranked":
        return hotspot_error(t, value[1])
    return error(q, t, value, len(st.seqs))


def run(args) -> pd.DataFrame:
    from geoldp._core.errors import GeoLDPWarning

    warnings.simplefilter("ignore", GeoLDPWarning)
    rows = []
    for name in args.datasets:
        if not (args.data / name).exists():
            log(f"{args.data / name} not found, skipped")
            continue
        t0 = time.process_time()
        st = Setting(args.data, name, args.max_traj)
        size = f"{len(st.seqs)} trajectories, |P| = {st.ps.size}"
        log(f"{name}: {size}, {st.k} zones, {len(st.regions)} circles")
        for mech in args.mechanisms:
            for eps in args.eps:
                for s in range(args.seeds):
                    seed = SEED + 1000 * DATASETS.index(name) + 100 * int(eps) + 10 * s
                    t1 = time.process_time()
                    ans, notes = answers(st, mech, eps, seed, args.n_boot, args.rules)
                    cpu = time.process_time() - t1
                    for est_name, unit, q in QUESTIONS:
                        raw_err = score(st, q, ans[q]["raw"])
                        for rule in [r for r in ans[q] if r != "raw"]:
                            rows.append(
                                {
                                    "dataset": name,
                                    "role": "tuning" if name in TUNING else "test",
                                    "mechanism": mech,
                                    "epsilon": eps,
                                    "seed": s,
                                    "n": len(st.seqs),
                                    "estimator": est_name,
                                    "unit": unit,
                                    "question": q,
                                    "rule": rule,
                                    "estimate": score(st, q, ans[q][rule]),
                                    "raw": raw_err,
                                    "uniform": st.base_err["uniform"][q],
                                    "constant": st.base_err["constant"][q],
                                    "answer": notes[q].get(rule, ""),
                                    "fit_cpu_s": cpu,
                                }
                            )
                    log(f"{name} {mech} eps={eps} seed {s}: {cpu:.1f} s CPU")
        log(f"{name}: {time.process_time() - t0:.0f} s CPU")
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------------------------------
# summary
# --------------------------------------------------------------------------------------------------


def summarise(df: pd.DataFrame) -> pd.DataFrame:
    """Per (data set, mechanism, ε, estimator, question): means, spreads and the worse-than-both flag."""
    keys = ["dataset", "role", "mechanism", "epsilon", "estimator", "question", "rule"]
    out = []
    for key, g in df.groupby(keys, sort=False):
        e = g["estimate"].to_numpy()
        raw = g["raw"].to_numpy()
        better = "uniform" if g["uniform"].iloc[0] <= g["constant"].iloc[0] else "constant"
        base = g[better].to_numpy()
        s = len(g)
        d_raw, d_base = e - raw, e - base

        def se(d: np.ndarray, s: int = s) -> float:
            return float(np.std(d, ddof=1) / np.sqrt(s)) if s > 1 else float("nan")

        worse_raw = d_raw.mean() > 2.0 * se(d_raw)
        worse_base = d_base.mean() > 2.0 * se(d_base)  # the baselines are exact: the estimate's noise
        out.append(
            dict(
                zip(keys, key, strict=True),
                seeds=s,
                answers=", ".join(
                    f"{a} {c}" for a, c in g["answer"].dropna().astype(str).value_counts().items() if a
                ),
                error=float(e.mean()),
                error_sd=float(np.std(e, ddof=1)) if s > 1 else float("nan"),
                raw=float(raw.mean()),
                raw_sd=float(np.std(raw, ddof=1)) if s > 1 else float("nan"),
                uniform=float(g["uniform"].iloc[0]),
                constant=float(g["constant"].iloc[0]),
                better_baseline=better,
                diff_raw=float(d_raw.mean()),
                diff_raw_se=se(d_raw),
                diff_baseline=float(d_base.mean()),
                diff_baseline_se=se(d_base),
                worse_than_raw=bool(worse_raw),
                worse_than_baseline=bool(worse_base),
                worse_than_both=bool(worse_raw and worse_base),
            )
        )
    return pd.DataFrame(out)


def md_table(df: pd.DataFrame) -> str:
    """A GitHub markdown table (floats to 3 decimals, booleans as yes/no)."""

    def cell(v) -> str:
        if isinstance(v, bool | np.bool_):
            return "**yes**" if v else "no"
        if isinstance(v, float | np.floating):
            return f"{v:.3f}"
        return str(v)

    head = "| " + " | ".join(map(str, df.columns)) + " |"
    rule = "|" + "---|" * len(df.columns)
    body = ["| " + " | ".join(cell(v) for v in row) + " |" for row in df.itertuples(index=False)]
    return "\n".join([head, rule, *body])


def _pm(mean: float, sd: float) -> str:
    return f"{mean:.3f} ± {sd:.3f}" if np.isfinite(sd) else f"{mean:.3f}"


def _flag(row) -> str:
    return "**worse than both**" if row.worse_than_both else ("worse than raw" if row.worse_than_raw else "")


def comparison(summary: pd.DataFrame, rules: list[str]) -> pd.DataFrame:
    """One row per (data set, ε, question): raw, baselines and each rule's error with its flag."""
    keys = ["dataset", "epsilon", "estimator", "question"]
    rows = []
    for key, g in summary.groupby(keys, sort=False):
        g = g.set_index("rule")
        first = g.iloc[0]
        row = dict(zip(["data set", "ε", "estimator", "question"], key, strict=True))
        row["raw"] = _pm(first.raw, first.raw_sd)
        row["uniform"], row["constant"] = first.uniform, first.constant
        for rule in rules:
            if rule in g.index:
                r = g.loc[rule]
                row[rule] = _pm(r.error, r.error_sd) + (" " + _flag(r) if _flag(r) else "")
                if rule not in ("none", "support"):
                    row[f"{rule}: answers"] = r.answers
        rows.append(row)
    return pd.DataFrame(rows)


def write_markdown(df: pd.DataFrame, path: Path, command: str, cpu: float) -> None:
    summary = summarise(df)
    rules = [r for r in RULES if r in set(summary["rule"])]
    counts = (
        summary[~summary["estimator"].isin(["hotspots"])]
        .groupby(["role", "rule"], sort=False)
        .agg(
            settings=("worse_than_both", "size"),
            worse_than_both=("worse_than_both", "sum"),
            worse_than_raw=("worse_than_raw", "sum"),
        )
        .reset_index()
    )
    ratio = summary.assign(
        vs_raw=summary["error"] / summary["raw"],
        vs_best=summary["error"]
        / np.minimum(summary["raw"], np.minimum(summary["uniform"], summary["constant"])),
    )
    counts = counts.merge(
        ratio[ratio["estimator"] != "hotspots"]
        .groupby(["role", "rule"])[["vs_raw", "vs_best"]]
        .mean()
        .reset_index(),
        on=["role", "rule"],
    )
    counts.columns = [
        "sets",
        "rule",
        "settings",
        "worse than both",
        "worse than raw",
        "mean error / raw",
        "mean error / best of raw and baselines",
    ]
    counts = counts.iloc[:, [1, 0, 2, 3, 4, 5, 6]]
    lines = [
        "# Collector-side estimators out of sample: every answer against the raw release and no data",
        "",
        f"Generated by `nice -n 10 {command}` ({platform.machine()}, 2 shared cores; "
        f"{cpu / 60:.1f} CPU-minutes in all, "
        f"{df.drop_duplicates(['dataset', 'epsilon', 'seed'])['fit_cpu_s'].sum() / 60:.1f}"
        " for the releases, fits and queries, the rest for loading and the truth). Data, questions, errors "
        "and rules: the docstring of `experiments/estimators_oos.py`. ATP, ε per trajectory, "
        f"{df['seed'].nunique()} seeded releases per setting (each with its own estimator seed); at most "
        f"{df['n'].max()} trajectories per data set (a seeded draw).",
        "",
        "**Worse than both** (the target): the mean error over the releases exceeds the raw release's and "
        "the better no-data baseline's by more than two standard errors of the paired difference (the "
        "baselines are exact, so against them the noise is the estimate's own). Values are mean ± sd over "
        "the releases.",
        "",
        "**Rules** (`geoldp.estimate.FALLBACK`): `none` is the population model's own answer (the "
        "estimators before any rule); `split` refits the model on half of each length's released rows and "
        "keeps its answer only if no alternative — the raw release, uniform draws from P, every point at "
        "P's 1-median, each taken as a population — predicts the other half's release (through the "
        "simulated channel) as well; `support` reports, in every count table, the model's count where the "
        "table flags it `supported` and the raw count elsewhere; `support-range` (**the default**) does "
        "so for range counts only. The rule was chosen on chi_atp, nyc_atp and cps_atp (`tuning`) and is "
        "judged on tdrive_600 and geolife_small_mpd (`test`, out of sample).",
        "",
        "## Summary (every question but hotspots: denoise and the four count questions)",
        "",
        md_table(counts),
        "",
        "## Per setting",
        "",
        "`answers`: the answer the rule gave over the releases (how many times each).",
        "",
    ]
    table = comparison(summary, rules)
    for est in ("visit_counts", "range_counts", "od_flows"):
        lines += [f"### {est}", "", md_table(table[table["estimator"] == est].drop(columns="estimator")), ""]
    den = table[table["estimator"] == "denoise"][["data set", "ε", "raw", "uniform", "constant", "none"]]
    lines += [
        "### denoise (NE, km; no rule: its answer is the same under every rule)",
        "",
        md_table(den.rename(columns={"none": "denoise"})),
        "",
    ]
    hs = summary[summary["estimator"] == "hotspots"]
    hs_table = []
    for key, g in hs.groupby(["dataset", "epsilon"], sort=False):
        g = g.set_index("rule")
        first = g.iloc[0]
        row = {"data set": key[0], "ε": key[1], "raw": _pm(first.raw, first.raw_sd)}
        row["uniform"], row["constant"] = first.uniform, first.constant
        for rule in rules:
            if rule in g.index:
                row[f"{rule}: table"] = _pm(g.loc[rule].error, g.loc[rule].error_sd)
                ranked_ = g.loc[f"{rule} (ranked)"]
                row[f"{rule}: ranked estimate"] = _pm(ranked_.error, ranked_.error_sd)
        row["split: table rows"] = g.loc["split"].answers if "split" in g.index else ""
        hs_table.append(row)
    lines += [
        "### hotspots (1 − top-10 precision)",
        "",
        "`table`: the hotspots table as returned, which ranks only supported zones and is empty (an explicit "
        "'no supported hotspot' answer) when none is; scored as misses. `ranked estimate`: the top 10 of the "
        "visit-count estimate itself, for comparison.",
        "",
        md_table(pd.DataFrame(hs_table)),
        "",
    ]
    path.write_text("\n".join(lines), encoding="utf-8")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--datasets", nargs="+", default=list(DATASETS))
    ap.add_argument("--mechanisms", nargs="+", default=["atp"])
    ap.add_argument("--eps", nargs="+", type=float, default=list(EPSILONS))
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--max-traj", type=int, default=400)
    ap.add_argument("--n-boot", type=int, default=30)
    ap.add_argument("--tag", default="", help="suffix of the output files")
    ap.add_argument(
        "--rules", nargs="+", default=list(RULES), help="fallback rules compared (estimate.FALLBACK)"
    )
    args = ap.parse_args(argv)
    if not args.data.is_dir():
        print(f"data directory {args.data} not found; nothing to do", flush=True)
        return 0
    t0 = time.process_time()
    df = run(args)
    if df.empty:
        print("no data set found; nothing to do", flush=True)
        return 0
    args.out.mkdir(parents=True, exist_ok=True)
    df.to_csv(args.out / f"estimators_oos{args.tag}.csv", index=False)
    command = "python experiments/estimators_oos.py" + "".join(
        " " + a for a in (sys.argv[1:] if argv is None else argv)
    )
    write_markdown(df, args.out / f"estimators_oos{args.tag}.md", command, time.process_time() - t0)
    log(f"wrote {args.out / f'estimators_oos{args.tag}.md'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

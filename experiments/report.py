"""Markdown tables for docs/results.md from the CSVs written by experiments/paper_setup.py.

Usage::

    python experiments/report.py [--results docs/results] > /tmp/tables.md

Prints: NE (mean ± std over repetitions) per data set, mechanism and ε; a comparison at ε = 1, 4, 10 with
the sanity ranges of ALGORITHM.md §13.3–13.4 (measured / reference); the Monte-Carlo PointEM and uniform
NE against their exact expectations; PRQ tables next to the §13.4/§13.5 PRQ examples.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parents[1]
LABEL = {"chi_atp": "CHI", "nyc_atp": "NYC", "cps_atp": "CPS"}

# ALGORITHM.md §13.3 (uniform, per-point EM exact expectations) and §13.4 (TP, ATP, one run each), NE in km.
REF_NE = {
    ("cps_atp", "uniform"): {0: 1.070},
    ("chi_atp", "uniform"): {0: 11.72},
    ("nyc_atp", "uniform"): {0: 12.76},
    ("cps_atp", "pointem"): {1: 1.060, 4: 1.030, 10: 0.972},
    ("chi_atp", "pointem"): {1: 11.39, 4: 10.50, 10: 9.02},
    ("nyc_atp", "pointem"): {1: 12.53, 4: 11.88, 10: 10.72},
    ("cps_atp", "atp"): {1: 0.986, 4: 0.988, 10: 0.972},
    ("cps_atp", "tp"): {1: 1.091, 4: 1.070, 10: 1.027},
    ("chi_atp", "atp"): {1: 9.918, 4: 9.699, 10: 8.956},
    ("chi_atp", "tp"): {1: 11.424, 4: 10.414, 10: 8.963},
    ("nyc_atp", "atp"): {1: 10.505, 4: 10.421, 10: 9.874},
    ("nyc_atp", "tp"): {1: 12.364, 4: 12.033, 10: 10.654},
}
# §13.5: the authors' released code (budget bug E1), one run, NE in km (ATP).
REF_AUTHORS = {
    "cps_atp": {0.5: 0.987, 1: 0.986, 2: 0.981, 4: 0.983, 6: 0.985, 8: 0.980, 10: 0.976},
    "chi_atp": {0.5: 9.871, 1: 9.731, 2: 9.870, 4: 9.867, 6: 9.606, 8: 9.218, 10: 9.219},
}
# PRQ examples: §13.4 TP CPS ε = 1; §13.5 authors' ATP, CPS and CHI at ε = 10.
REF_PRQ = {
    ("cps_atp", "tp", 1.0): [0.016, 0.072, 0.220, 0.545, 0.875],
    ("cps_atp", "atp", 10.0): [0.017, 0.081, 0.245, 0.595, 0.923],
    ("chi_atp", "atp", 10.0): [0.058, 0.141, 0.272, 0.352, 0.414],
}
ORDER = ["uniform", "pointem", "tp", "atp"]


def fmt(mean: float, std: float | None = None, digits: int = 3) -> str:
    if std is None or not np.isfinite(std):
        return f"{mean:.{digits}f}"
    return f"{mean:.{digits}f} ± {std:.{digits}f}"


def ne_table(summary: pd.DataFrame, dataset: str) -> str:
    s = summary[(summary.dataset == dataset) & (summary.metric == "NE")]
    eps = sorted(s.epsilon.unique())
    digits = 3 if dataset == "cps_atp" else 2
    lines = ["| mechanism | " + " | ".join(f"ε = {e:g}" for e in eps) + " |", "|---" * (len(eps) + 1) + "|"]
    for mech in [m for m in ORDER if m in set(s.mechanism)]:
        cells = []
        for e in eps:
            r = s[(s.mechanism == mech) & (s.epsilon == e)]
            cells.append(fmt(r["mean"].iloc[0], r["std"].iloc[0], digits) if len(r) else "")
        lines.append(f"| {mech} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def comparison_table(summary: pd.DataFrame, exact: pd.DataFrame) -> str:
    lines = [
        "| data set | mechanism | ε | measured NE (mean of reps) | exact E[NE] | §13 reference "
        "| measured / ref |",
        "|---|---|---|---|---|---|---|",
    ]
    ne = summary[summary.metric == "NE"]
    for ds in [d for d in ("cps_atp", "chi_atp", "nyc_atp") if d in set(ne.dataset)]:
        for mech in [m for m in ORDER if m in set(ne.mechanism)]:
            for e in (1.0, 4.0, 10.0):
                r = ne[(ne.dataset == ds) & (ne.mechanism == mech) & (ne.epsilon == e)]
                if r.empty:
                    continue
                ref = REF_NE.get((ds, mech), {})
                refv = ref.get(0, ref.get(int(e)))
                if mech == "uniform":
                    ex = exact[(exact.dataset == ds) & (exact.mechanism == "uniform")]
                else:
                    ex = exact[(exact.dataset == ds) & (exact.mechanism == mech) & (exact.epsilon == e)]
                exv = f"{ex.expected_NE_km.iloc[0]:.4f}" if len(ex) else "–"
                m = r["mean"].iloc[0]
                ratio = f"{m / refv:.3f}" if refv else "–"
                refs = f"{refv:g}" if refv else "–"
                lines.append(f"| {LABEL[ds]} | {mech} | {e:g} | {m:.4f} | {exv} | {refs} | {ratio} |")
    return "\n".join(lines)


def mc_vs_exact(table: pd.DataFrame, exact: pd.DataFrame) -> str:
    """z-scores of the repetition mean of NE against the exact expectation (uniform and PointEM)."""
    lines = [
        "| data set | mechanism | ε | reps | mean NE | exact E[NE] | rel. diff | z |",
        "|---|---|---|---|---|---|---|---|",
    ]
    ne = table[table.metric == "NE"]
    for (ds, mech, e), g in ne[ne.mechanism.isin(["uniform", "pointem"])].groupby(
        ["dataset", "mechanism", "epsilon"]
    ):
        if mech == "uniform":
            ex = exact[(exact.dataset == ds) & (exact.mechanism == "uniform")]
        else:
            ex = exact[(exact.dataset == ds) & (exact.mechanism == mech) & (exact.epsilon == e)]
        if ex.empty:
            continue
        exv = float(ex.expected_NE_km.iloc[0])
        m, sd, n = g.value.mean(), g.value.std(ddof=1), len(g)
        z = (m - exv) / (sd / np.sqrt(n)) if n > 1 and sd > 0 else float("nan")
        rel = 100 * (m / exv - 1)
        lines.append(
            f"| {LABEL[ds]} | {mech} | {e:g} | {n} | {m:.4f} | {exv:.4f} | {rel:+.2f} % | {z:+.2f} |"
        )
    return "\n".join(lines)


def prq_table(summary: pd.DataFrame, dataset: str, eps_list=(1.0, 10.0)) -> str:
    s = summary[(summary.dataset == dataset) & (summary.metric == "PRQ")]
    deltas = sorted(s.param.unique())
    lines = [
        "| mechanism | ε | " + " | ".join(f"δ = {d:g} km" for d in deltas) + " | §13 reference |",
        "|---" * (len(deltas) + 3) + "|",
    ]
    for e in eps_list:
        for mech in [m for m in ORDER if m in set(s.mechanism)]:
            r = s[(s.mechanism == mech) & (s.epsilon == e)].sort_values("param")
            if r.empty:
                continue
            ref = REF_PRQ.get((dataset, mech, e))
            refs = " / ".join(f"{v:.3f}" for v in ref) if ref else ""
            lines.append(f"| {mech} | {e:g} | " + " | ".join(f"{v:.3f}" for v in r["mean"]) + f" | {refs} |")
    return "\n".join(lines)


# Columns of the utility tables: (column of evaluate.csv, header, True if lower is better).
EVAL_COLUMNS = [
    ("NE_km", "NE km ↓", True),
    ("PRQ", "PRQ ↑", False),  # δ = 1 km (0.25 km for CPS), see prq_column
    ("range_query_error", "range RE ↓", True),
    ("zone_l1", "zone L1 ↓", True),
    ("zone_jsd", "zone JSD ↓", True),
    ("od_l1", "OD L1 ↓", True),
    ("hotspot_overlap", "top-10 overlap ↑", False),
    ("length_jsd", "length JSD ↓", True),
]
BASELINE_ROWS = ("uniform", "constant")


def prq_column(dataset: str) -> str:
    return "PRQ_0.25km" if dataset == "cps_atp" else "PRQ_1km"


def _cells(row: pd.Series, base: pd.DataFrame, dataset: str, mark: bool) -> list[str]:
    """Formatted metric cells; in bold where the row beats both no-data baselines."""
    out = []
    for col, _, lower in EVAL_COLUMNS:
        col = prq_column(dataset) if col == "PRQ" else col
        v = row.get(col, np.nan)
        if pd.isna(v):
            out.append("–")
            continue
        text = f"{v:.3f}" if abs(v) < 100 else f"{v:.1f}"
        b = base[col].dropna() if col in base else pd.Series(dtype=float)
        if mark and len(b) == len(BASELINE_ROWS) and ((v < b.min()) if lower else (v > b.max())):
            text = f"**{text}**"
        out.append(text)
    return out


def print_evaluate(ev: pd.DataFrame) -> None:
    """Utility tables (raw releases next to the no-data baselines) and the estimated rows, per data set."""
    header = "| ε | release | " + " | ".join(h for _, h, _ in EVAL_COLUMNS) + " |"
    rule = "|---" * (len(EVAL_COLUMNS) + 2) + "|"
    for ds in [d for d in ("cps_atp", "chi_atp", "nyc_atp") if d in set(ev.dataset)]:
        g = ev[ev.dataset == ds]
        base = g[g.release.isin(BASELINE_ROWS)].drop_duplicates("release").set_index("release")
        raw = g[g.release.str.endswith(" raw")]
        print(f"### Raw releases and no-data baselines, {ds} ({LABEL[ds]}), repetition 0\n")
        print(f"PRQ at δ = {prq_column(ds)[4:-2]} km. Bold: better than both baselines.\n")
        print(header + "\n" + rule)
        for name in BASELINE_ROWS:
            if name in base.index:
                print(
                    f"| – | {name} (no data) | " + " | ".join(_cells(base.loc[name], base, ds, False)) + " |"
                )
        for _, r in raw.iterrows():
            print(f"| {r.epsilon:g} | {r.release} | " + " | ".join(_cells(r, base, ds, True)) + " |")
        print()
    est = ev[~ev.release.str.endswith(" raw") & ~ev.release.isin(BASELINE_ROWS)]
    print("### Estimated rows (collector-side estimators, post-processing of the release)\n")
    print(
        "Same columns; an estimator that yields only counts has no NE, PRQ or length entry. "
        "Bold: better than both baselines.\n"
    )
    print("| data set | " + header[2:] + "\n" + "|---" + rule)
    for _, r in est.iterrows():
        g = ev[ev.dataset == r.dataset]
        base = g[g.release.isin(BASELINE_ROWS)].drop_duplicates("release").set_index("release")
        cells = _cells(r, base, r.dataset, True)
        print(f"| {LABEL[r.dataset]} | {r.epsilon:g} | {r.release} | " + " | ".join(cells) + " |")
    print()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--results", type=Path, default=REPO / "docs" / "results")
    ap.add_argument(
        "--update",
        type=Path,
        default=None,
        help="write the tables into this markdown file between the GENERATED markers instead of stdout",
    )
    args = ap.parse_args(argv)
    if args.update is not None:
        import contextlib
        import io

        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            _print_tables(args)
        text = args.update.read_text(encoding="utf8")
        begin, end = "<!-- BEGIN GENERATED TABLES -->", "<!-- END GENERATED TABLES -->"
        head, rest = text.split(begin, 1)
        _, tail = rest.split(end, 1)
        args.update.write_text(head + begin + "\n" + buf.getvalue() + end + tail, encoding="utf8")
        return 0
    _print_tables(args)
    return 0


def _print_tables(args: argparse.Namespace) -> None:
    table = pd.read_csv(args.results / "paper_setup.csv")
    summary = pd.read_csv(args.results / "paper_setup_summary.csv")
    exact = pd.read_csv(args.results / "exact_baselines.csv")
    meta = json.loads((args.results / "paper_setup_meta.json").read_text())
    print(f"<!-- generated by experiments/report.py from {meta['command']} -->\n")
    for ds in [d for d in ("cps_atp", "chi_atp", "nyc_atp") if d in set(summary.dataset)]:
        print(f"### NE (km), {ds} ({LABEL[ds]}), mean ± std over {meta['reps']} repetitions\n")
        print(ne_table(summary, ds) + "\n")
    print("### Comparison with ALGORITHM.md §13.3–13.4\n")
    print(comparison_table(summary, exact) + "\n")
    print("### Monte-Carlo vs exact expectation (uniform, PointEM)\n")
    print(mc_vs_exact(table, exact) + "\n")
    for ds in [d for d in ("cps_atp", "chi_atp", "nyc_atp") if d in set(summary.dataset)]:
        print(f"### PRQ, {ds} ({LABEL[ds]}), mean over repetitions\n")
        print(prq_table(summary, ds) + "\n")
    if {"cps_atp", "chi_atp"} & set(summary.dataset):
        print("### ATP vs the authors' released code (§13.5, budget bug E1), NE in km\n")
        lines = [
            "| data set | " + " | ".join(f"ε = {e:g}" for e in REF_AUTHORS["cps_atp"]) + " |",
            "|---" * 8 + "|",
        ]
        for ds, ref in REF_AUTHORS.items():
            s = summary[(summary.dataset == ds) & (summary.metric == "NE") & (summary.mechanism == "atp")]
            if s.empty:
                continue
            cells = []
            for e, v in ref.items():
                r = s[s.epsilon == e]
                cells.append(f"{r['mean'].iloc[0]:.3f} (ref {v:.3f})" if len(r) else f"– (ref {v:.3f})")
            lines.append(f"| {LABEL[ds]} | " + " | ".join(cells) + " |")
        print("\n".join(lines) + "\n")
    ev_path = args.results / "evaluate.csv"
    if ev_path.is_file():
        print_evaluate(pd.read_csv(ev_path))
    t = pd.DataFrame(meta["timings"])
    print("### Run time (seconds, all repetitions)\n")
    piv = t.pivot_table(index=["dataset", "mechanism"], values="seconds", aggfunc="sum").reset_index()
    print("| data set | mechanism | seconds |\n|---|---|---|")
    for _, r in piv.iterrows():
        print(f"| {r.dataset} | {r.mechanism} | {r.seconds:.1f} |")
    print(f"\nTotal: {meta['total_seconds']:.0f} s.")


if __name__ == "__main__":
    raise SystemExit(main())

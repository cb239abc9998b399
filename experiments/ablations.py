"""Ablations behind the discussion in docs/results.md: which option could explain a gap to ALGORITHM §13.

Runs experiments/paper_setup.py for TP and ATP at ε ∈ {1, 4, 10} (5 repetitions) with one option changed at
a time, and writes the NE means to ``docs/results/ablations.csv``:

- ``default``: the normative defaults;
- ``tie_break=index``: the merge tie-break of the §13 reference implementation;
- ``fallback=region``: empty intersections go straight to the region (the reference skipped the
  right-neighbour step, which lies between the two);
- ``atp.sw_output=continuous``: continuous Square-Wave output, as in the §13 reference;
- ``granularity=6``: TP at ε = 10 with g = 6 instead of the automatic g = 12;
- ``sampler=reference``: the pure-Python reference path instead of the numba fast path (TP, ATP, CHI, ε = 10).

Usage: ``python experiments/ablations.py [--data DIR] [--reps 5]`` (about 5 minutes here).
"""

from __future__ import annotations

import argparse
import importlib.util
import tempfile
from pathlib import Path

import pandas as pd

HERE = Path(__file__).resolve().parent


def _paper_setup():
    spec = importlib.util.spec_from_file_location("paper_setup", HERE / "paper_setup.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


VARIANTS = [
    ("default", ["--mechanisms", "tp,atp", "--epsilons", "1,4,10"]),
    ("tie_break=index", ["--mechanisms", "tp,atp", "--epsilons", "1,4,10", "--option", "tie_break=index"]),
    ("fallback=region", ["--mechanisms", "tp,atp", "--epsilons", "1,4,10", "--option", "fallback=region"]),
    (
        "atp.sw_output=continuous",
        ["--mechanisms", "atp", "--epsilons", "1,4,10", "--option", "atp.sw_output=continuous"],
    ),
    ("granularity=6", ["--mechanisms", "tp", "--epsilons", "10", "--option", "granularity=6"]),
    (
        "sampler=reference",
        ["--mechanisms", "tp,atp", "--epsilons", "10", "--datasets", "chi_atp", "--sampler", "reference"],
    ),
]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mod = _paper_setup()
    ap.add_argument("--data", type=Path, default=mod.DEFAULT_DATA)
    ap.add_argument("--out", type=Path, default=mod.DEFAULT_OUT / "ablations.csv")
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args(argv)
    if not args.data.is_dir():
        print(f"data directory {args.data} not found; nothing to do (skipping).")
        return 0
    frames = []
    for name, extra in VARIANTS:
        with tempfile.TemporaryDirectory() as tmp:
            common = ["--data", str(args.data), "--out", tmp, "--reps", str(args.reps), "--no-plots"]
            if "--datasets" not in extra:
                common += ["--datasets", "chi_atp,nyc_atp,cps_atp"]
            mod.main([*common, "--evaluate-epsilon", "-1", *extra])
            s = pd.read_csv(Path(tmp) / "paper_setup_summary.csv")
        s = s[s.metric == "NE"].drop(columns=["metric", "param"])
        s.insert(0, "variant", name)
        frames.append(s)
    out = pd.concat(frames, ignore_index=True)
    out.to_csv(args.out, index=False)
    piv = out.pivot_table(
        index=["dataset", "mechanism", "epsilon"], columns="variant", values="mean", sort=False
    )
    print(piv.round(3).to_string())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

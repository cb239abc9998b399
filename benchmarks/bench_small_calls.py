"""CPU time of a one-trajectory ``perturb_trajectories`` call per mechanism (the fixed cost of a call).

Plain script. A fresh subprocess per checkout (``--source``, default this one) builds a synthetic city of
300 public points, warms the kernels up, then times batches of one-trajectory calls (length 5, ε = 4,
seed i for call i) and reports the median batch's CPU milliseconds per call (``time.process_time``: the
machine is shared). Several checkouts are measured interleaved, round by round, so that load changes hit
them alike. The target is at most 0.2 ms per call for every mechanism.

Usage::

    python benchmarks/bench_small_calls.py
    python benchmarks/bench_small_calls.py --source /path/to/older/checkout --source .
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MECHANISMS = ("atp", "tp", "pointem")

CHILD = """
import json, sys, time
import numpy as np
import geoldp
from geoldp.datasets import synthetic_city_arrays
from geoldp._core.pointset import PointSet

lon, lat, _, _, _ = synthetic_city_arrays(300, 5, seed=1)
points = PointSet(lon, lat)
traj = [np.array([1, 5, 9, 30, 77])]
calls = int(sys.argv[1])
out = {}
for mech in sys.argv[2:]:
    for i in range(5):
        geoldp.perturb_trajectories(traj, points, mechanism=mech, epsilon=4.0, rng=i)
    t0 = time.process_time()
    for i in range(calls):
        geoldp.perturb_trajectories(traj, points, mechanism=mech, epsilon=4.0, rng=i)
    out[mech] = (time.process_time() - t0) / calls * 1e3
print(json.dumps(out))
"""


def _sources(checkout: str) -> str:
    """The folder to put on PYTHONPATH for a checkout (its src/ folder, or the checkout for an old layout)."""
    inner = os.path.join(checkout, "src")
    return inner if os.path.isdir(os.path.join(inner, "geoldp")) else checkout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", action="append", help="checkout to time (repeatable; default: this one)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=300)
    args = parser.parse_args()
    sources = [str(Path(s).resolve()) for s in (args.source or [str(ROOT)])]
    results: dict[str, dict[str, list[float]]] = {s: {m: [] for m in MECHANISMS} for s in sources}
    with tempfile.TemporaryDirectory() as cwd:  # `python -c` puts the working directory first on sys.path
        for _ in range(args.rounds):
            for src in sources:
                env = dict(os.environ, PYTHONPATH=_sources(src))
                cmd = [sys.executable, "-c", CHILD, str(args.calls), *MECHANISMS]
                proc = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, check=True)
                for mech, ms in json.loads(proc.stdout.strip().splitlines()[-1]).items():
                    results[src][mech].append(ms)
    print(f"| checkout | {' | '.join(MECHANISMS)} |  (median CPU ms per one-trajectory call)")
    print("|---|" + "---|" * len(MECHANISMS))
    for src in sources:
        row = " | ".join(f"{statistics.median(results[src][m]):.3f}" for m in MECHANISMS)
        print(f"| {src} | {row} |")


if __name__ == "__main__":
    main()

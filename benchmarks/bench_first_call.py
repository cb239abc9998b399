"""CPU time of the first perturb call per mechanism in a fresh process with an empty numba cache.

Plain script. For each mechanism and each kernel route (the kernels compiled at install time, and numba's
JIT with ``GEOLDP_AOT=0``) it starts a fresh interpreter with an empty ``NUMBA_CACHE_DIR`` (as on a fresh
install) that imports geoldp, builds a synthetic city of 300 public points and perturbs three trajectories
(lengths 5, 1, 8; ε = 4, seed 1). It reports the process's CPU seconds (user + system, from
``resource.getrusage``: the machine is shared) for the import and for the whole run, and checks that both
routes released the same trajectories. The target is at most 2 s CPU per mechanism on a fresh install.

Usage::

    python benchmarks/bench_first_call.py                     # the geoldp this interpreter imports
    python benchmarks/bench_first_call.py --python /path/to/venv/bin/python --rounds 3
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

MECHANISMS = ("pointem", "tp", "atp")

CHILD = """
import json, resource, sys
def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime
import numpy as np
import geoldp
from geoldp._core import aot as _aot
t_import = cpu()
from geoldp.datasets import synthetic_city_arrays
lon, lat, *_ = synthetic_city_arrays(300, 5, seed=1)
points = geoldp.PointSet(lon, lat)
trajs = [np.array([1, 5, 9, 30, 77]), np.array([3]), np.array([2, 4, 8, 16, 32, 64, 128, 256])]
out = geoldp.perturb_trajectories(trajs, points, mechanism=sys.argv[1], epsilon=4.0, rng=1)
print(json.dumps({"import": t_import, "total": cpu(), "aot": _aot.enabled(),
                  "out": [o.tolist() for o in out]}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", default=sys.executable, help="interpreter of the install to time")
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    rows: dict[tuple[str, str], list[dict]] = {}
    with tempfile.TemporaryDirectory() as cwd:  # `python -c` puts the working directory first on sys.path
        for _ in range(args.rounds):
            for mech in MECHANISMS:
                for route, flag in (("compiled at install", "1"), ("numba JIT", "0")):
                    with tempfile.TemporaryDirectory() as cache:
                        env = dict(os.environ, NUMBA_CACHE_DIR=cache, GEOLDP_AOT=flag)
                        env.pop("PYTHONPATH", None)
                        proc = subprocess.run(
                            [args.python, "-c", CHILD, mech],
                            env=env,
                            cwd=cwd,
                            capture_output=True,
                            text=True,
                            check=True,
                        )
                    result = json.loads(proc.stdout.strip().splitlines()[-1])
                    rows.setdefault((mech, route), []).append(result)
    print("| mechanism | kernels | import (CPU s) | import + first call (CPU s) | same output |")
    print("|---|---|---|---|---|")
    for mech in MECHANISMS:
        reference = rows[(mech, "numba JIT")][0]["out"]
        for route in ("compiled at install", "numba JIT"):
            runs = rows[(mech, route)]
            used = "compiled at install" if runs[0]["aot"] else "numba JIT"
            same = all(r["out"] == reference for r in runs)
            print(
                f"| {mech} | {used} | {statistics.median(r['import'] for r in runs):.2f} | "
                f"{statistics.median(r['total'] for r in runs):.2f} | {'yes' if same else 'NO'} |"
            )


if __name__ == "__main__":
    main()

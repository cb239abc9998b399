"""Start-up cost of geoldp: ``import geoldp`` and ``geoldp --version`` against ``import pandas``.

Plain script. Each command runs ``--repeat`` times in a fresh interpreter, interleaved (pandas, geoldp,
CLI, pandas, ...) so that a change of machine load hits all of them alike; the table gives the median wall
time and its ratio to ``import pandas`` measured in the same run. The targets: ``import geoldp`` at most
1.5x ``import pandas``, ``geoldp --version`` at most 1 s.

Usage::

    python benchmarks/bench_startup.py            # 7 rounds
    python benchmarks/bench_startup.py --repeat 15
    python benchmarks/bench_startup.py --source /path/to/other/checkout   # e.g. an older version
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

COMMANDS = {
    "python -c 'import pandas'": [sys.executable, "-c", "import pandas"],
    "python -c 'import geoldp'": [sys.executable, "-c", "import geoldp"],
    "geoldp --version": [sys.executable, "-m", "geoldp", "--version"],
    "geoldp perturb (usage error)": [sys.executable, "-m", "geoldp", "perturb"],
    "python -c 'import geopandas'": [sys.executable, "-c", "import geopandas"],
}


def _wall(cmd: list[str], env: dict[str, str], cwd: str) -> float:
    t0 = time.perf_counter()
    # from a neutral directory: `python -c` puts the working directory first on sys.path
    subprocess.run(cmd, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument(
        "--source", default=str(ROOT), help="checkout whose geoldp to time (default: this one)"
    )
    args = parser.parse_args()
    inner = os.path.join(args.source, "src")  # an old checkout has no src/ folder
    env = dict(os.environ, PYTHONPATH=inner if os.path.isdir(inner) else args.source)
    times: dict[str, list[float]] = {name: [] for name in COMMANDS}
    with tempfile.TemporaryDirectory() as cwd:
        for cmd in COMMANDS.values():  # warm the OS file cache once
            _wall(cmd, env, cwd)
        for _ in range(args.repeat):
            for name, cmd in COMMANDS.items():
                times[name].append(_wall(cmd, env, cwd))
    base = statistics.median(times["python -c 'import pandas'"])
    print(f"| command | median wall s ({args.repeat} runs) | / import pandas |")
    print("|---|---|---|")
    for name, ts in times.items():
        med = statistics.median(ts)
        print(f"| `{name}` | {med:.3f} | {med / base:.2f}x |")


if __name__ == "__main__":
    main()

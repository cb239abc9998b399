"""Concurrent ingest into one store: P processes charging and appending N report records of one campaign.

Plain script. For each back end (a new SQLite GeoPackage in a temporary folder; PostgreSQL when a URL is
given or ``GEOLDP_TEST_POSTGRES_URL`` is set, in a schema of its own that is dropped afterwards), P
processes (default 8) start together and append the N records (default 10^5) in batches through
:meth:`geoldp.store.Store.append_reports`, each batch one transaction that charges every record's user and
stores it. Record ``i`` belongs to user ``i mod U`` (default U = N/10, so every user sends 10 records of ε
1 against a total of 8: two of each user's records must be refused) and is sent by process ``i mod P``;
every process also re-sends 5 % of another process's records (duplicates that must be stored once).

Checked after each run, from the store alone: no user past her total, each user's total equal to the sum
of her spends, every record stored at most once, every record a process was told is stored in the store
(none lost), and exactly ``N * 8/10`` stored (every user's budget filled, never passed). Reported: the
wall time from the common start to the last process's end, the unique records per second (the target is
at least 5,000 per second), the CPU seconds of all processes and the load average at the start (the
machine may be shared: the CPU time is the steadier figure).

Usage::

    python benchmarks/bench_store.py                       # SQLite, and PostgreSQL if the variable is set
    python benchmarks/bench_store.py --postgres postgresql://user@host/db --records 100000 --processes 8
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import platform
import sys
import tempfile
import time
import uuid
from fractions import Fraction
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from geoldp.store import Report, Store  # noqa: E402

TOTAL = 8.0
PER_USER = 10


def _record(i: int, users: int) -> Report:
    payload = json.dumps({"zone": i % 97, "seed": i}, separators=(",", ":"))
    ledger = json.dumps({"campaign": "bench", "epsilon": 1.0, "oracle": "krr"}, separators=(",", ":"))
    return Report(f"user-{i % users}", f"digest-{i:08d}", 1.0, payload, ledger)


def _worker(target: str, p: int, args: dict[str, int], start: mp.synchronize.Event, out: mp.Queue) -> None:
    n, procs, users, batch = args["records"], args["processes"], args["users"], args["batch"]
    mine = list(range(p, n, procs))
    other = (p + 1) % procs
    mine += list(range(other, n, procs))[::20]  # 5 % of another process's records, sent again
    records = [_record(i, users) for i in mine]
    counts = {"stored": 0, "duplicate": 0, "over budget": 0}
    with Store.open(target) as store:
        start.wait()
        cpu = time.process_time()
        for k in range(0, len(records), batch):
            for outcome in store.append_reports("bench", records[k : k + batch]):
                counts[outcome] += 1
        cpu = time.process_time() - cpu
    out.put((time.perf_counter(), cpu, counts))


def run(target: str, args: argparse.Namespace) -> dict[str, object]:
    """One timed run on a new store at ``target``; the checks raise on any violation."""
    Store.open(target, total_epsilon=TOTAL).close()
    ctx = mp.get_context("spawn")
    start, out = ctx.Event(), ctx.Queue()
    params = {"records": args.records, "processes": args.processes, "users": args.users, "batch": args.batch}
    procs = [ctx.Process(target=_worker, args=(target, p, params, start, out)) for p in range(args.processes)]
    for proc in procs:
        proc.start()
    time.sleep(2.0)  # every process imported and connected
    t0 = time.perf_counter()
    start.set()
    ends, totals = [], {"stored": 0, "duplicate": 0, "over budget": 0}
    load = os.getloadavg()[0]
    cpu = 0.0
    for _ in procs:
        end, used, counts = out.get(timeout=3600)
        ends.append(end)
        cpu += used
        for key, value in counts.items():
            totals[key] += value
    for proc in procs:
        proc.join()
        if proc.exitcode != 0:
            raise RuntimeError(f"a worker failed (exit {proc.exitcode})")
    wall = max(ends) - t0
    with Store.open(target) as store:
        problems = store.verify()
        spent = store.spent()
        n_reports = store.count("geoldp_reports")
    expected = args.users * min(args.records // args.users, int(TOTAL))  # every user's budget filled
    checks = {
        "overspent_users": sum(s > Fraction(TOTAL) for s in spent.values()) + problems["overspent"],
        "budget_mismatch": problems["budget_mismatch"],
        # a record a process was told is stored but the store lacks (lost), or stored twice
        "lost_or_duplicated": abs(totals["stored"] - n_reports) + problems["duplicate_reports"],
        "orphans": problems["report_without_spend"] + problems["spend_without_report"],
    }
    if any(checks.values()) or n_reports != expected:
        raise AssertionError(
            f"store invariants violated: {checks}, {n_reports} stored of {expected} expected"
        )
    return {
        "wall_s": wall,
        "records_per_s": args.records / wall,
        "cpu_s": cpu,
        "load": load,
        "n_reports": n_reports,
        **checks,
        **totals,
    }


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.machine()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--processes", type=int, default=8)
    parser.add_argument("--batch", type=int, default=500, help="records per transaction")
    parser.add_argument("--users", type=int, default=None, help="default: records / 10")
    parser.add_argument("--postgres", default=os.environ.get("GEOLDP_TEST_POSTGRES_URL"))
    parser.add_argument("--backends", default="sqlite,postgres")
    args = parser.parse_args()
    args.users = args.users or args.records // PER_USER
    rows = []
    if "sqlite" in args.backends:
        with tempfile.TemporaryDirectory() as tmp:
            rows.append(
                ("SQLite (GeoPackage, WAL, synchronous=FULL)", run(str(Path(tmp) / "bench.gpkg"), args))
            )
    if "postgres" in args.backends and args.postgres:
        import psycopg

        schema = "bench_" + uuid.uuid4().hex[:12]
        with psycopg.connect(args.postgres, autocommit=True) as conn:
            conn.execute(f"CREATE SCHEMA {schema}")
            version = conn.execute("SHOW server_version").fetchone()
        url = f"{args.postgres}{'&' if '?' in args.postgres else '?'}options=-csearch_path%3D{schema}"
        try:
            rows.append((f"PostgreSQL {version[0] if version else ''}".strip(), run(url, args)))
        finally:
            with psycopg.connect(args.postgres, autocommit=True) as conn:
                conn.execute(f"DROP SCHEMA {schema} CASCADE")
    print(f"machine: {_cpu_model()}, {os.cpu_count()} logical CPUs, load {os.getloadavg()[0]:.1f}")
    print(f"{args.records} records, {args.users} users (total {TOTAL:g}, {PER_USER} records of 1 each), "
          f"{args.processes} processes, {args.batch} records per transaction")  # fmt: skip
    head = (
        "store",
        "wall s",
        "records/s",
        "CPU s (all processes)",
        "records per CPU s",
        "load at start",
        "stored",
        "refused (over budget)",
        "duplicates sent",
        "overspent users",
        "lost or duplicated records",
    )
    print("| " + " | ".join(head) + " |")
    print("|---" * len(head) + "|")
    for name, r in rows:
        print(
            f"| {name} | {r['wall_s']:.1f} | {r['records_per_s']:,.0f} | {r['cpu_s']:.1f} "
            f"| {args.records / r['cpu_s']:,.0f} | {r['load']:.1f} "
            f"| {r['n_reports']} | {r['over budget']} | {r['duplicate']} | {r['overspent_users']} "
            f"| {r['lost_or_duplicated']} |"
        )


if __name__ == "__main__":
    main()

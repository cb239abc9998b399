"""Concurrent ingest of report records: P processes taking N JSON Lines records of one campaign into a store.

Plain script. The whole path a collector runs: each process calls
:func:`geoldp.field.ingest.ingest` on its own
JSON Lines file (every line parsed, checked against the campaign: format, campaign id, design, ε, the
report's domain; its digest computed) and appends the records in transactions of ``--batch`` records, each
charging every record's user and storing the record. The campaign is ``report:visited_zone`` at ε = 1 over a
5 × 5 grid (an OUE report per record: 26 bits, as 8 hex digits) with each user's total 8; record ``i``
belongs to user ``i mod U`` (U = N/10: every user sends 10 records, two of which must be refused) and goes
to process ``i mod P``, and every process also re-sends 5 % of another process's records (stored once). The
records are real client output (:func:`geoldp.client.respond`, 500 devices) given distinct record ids and
users, so that making 10⁵ of them takes seconds.

Checked afterwards from the store alone: no user past her total, each user's total equal to the sum of
her spends, every report with its spend, no record stored twice, the records the processes were told
are stored all there, exactly N·8/10 stored. Reported: wall time from the common start to the last
process's end (the processes have imported geoldp and read their files' first bytes before the start),
records per second, CPU seconds of all ingest processes and per record read, the CPU seconds of the
PostgreSQL server's processes (when it runs on this machine and its data folder is readable: its CPU
shares the same cores), and the load average at the start and the end (the machine may be shared: the
CPU per record does not depend on the load, the records per second do).

Usage::

    python benchmarks/bench_ingest.py                       # SQLite, and PostgreSQL if the variable is set
    python benchmarks/bench_ingest.py --postgres postgresql://user@host/db --records 100000 --processes 8
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import platform
import sys
import tempfile
import time
import uuid
from fractions import Fraction
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

TOTAL = 8.0
PER_USER = 10
EPSILON = 1.0
BOX = (116.30, 39.90, 116.40, 40.00)


def _campaign(folder: Path) -> Path:
    import geopandas as gpd

    from geoldp import zone_grid
    from geoldp.field.campaign import Campaign

    rng = np.random.default_rng(1)
    lon = BOX[0] + rng.random(500) * (BOX[2] - BOX[0])
    lat = BOX[1] + rng.random(500) * (BOX[3] - BOX[1])
    points = gpd.GeoDataFrame(geometry=gpd.points_from_xy(lon, lat), crs="EPSG:4326")
    c = Campaign.create(
        "report:visited_zone",
        epsilon=EPSILON,
        points=points,
        zones=zone_grid(BOX, cells=5),
        user_total_epsilon=TOTAL,
    )
    return c.write(folder / "campaign.json")


def _files(campaign: Path, folder: Path, args: argparse.Namespace) -> list[Path]:
    """One JSON Lines file per process: its records and 5 % of the next process's."""
    from geoldp import client

    device = client.Client(str(campaign))
    rng = np.random.default_rng(2)
    templates = []
    for k in range(500):
        n = int(rng.integers(2, 8))
        xy = np.column_stack(
            [BOX[0] + rng.random(n) * (BOX[2] - BOX[0]), BOX[1] + rng.random(n) * (BOX[3] - BOX[1])]
        )
        templates.append(device.respond(xy, user="template", rng=k))
    lines = []
    for i in range(args.records):
        record = {**templates[i % len(templates)], "record_id": f"{i:032x}", "user": f"user-{i % args.users}"}
        lines.append(client.to_json_line(record) + "\n")
    paths = []
    for p in range(args.processes):
        mine = list(range(p, args.records, args.processes))
        other = (p + 1) % args.processes
        mine += list(range(other, args.records, args.processes))[::20]
        path = folder / f"reports-{p}.jsonl"
        path.write_text("".join(lines[i] for i in mine))
        paths.append(path)
    return paths


def _worker(
    campaign: str, target: str, path: str, batch: int, start: mp.synchronize.Event, out: mp.Queue
) -> None:
    from geoldp.field.ingest import ingest

    with open(path, "rb") as fh:
        fh.read(1)  # the file is there
    start.wait()
    cpu = time.process_time()
    summary = ingest(campaign, [path], store=target, batch=batch)
    cpu = time.process_time() - cpu
    counts = {"stored": summary.stored, "duplicate": summary.duplicates, "over budget": summary.over_budget}
    out.put((time.perf_counter(), cpu, counts, len(summary.refused)))


def _postmaster(url: str) -> int | None:
    """The process id of a PostgreSQL server on this machine (its data folder readable), else None."""
    try:
        import psycopg

        with psycopg.connect(url, autocommit=True) as conn:
            row = conn.execute("SHOW data_directory").fetchone()
        with open(os.path.join(str(row[0]) if row else "", "postmaster.pid"), encoding="utf-8") as fh:
            return int(fh.readline())
    except Exception:  # another machine, no rights: the server's CPU is not measured
        return None


def _server_cpu(pid: int | None) -> float | None:
    """CPU seconds of a server process and all its children, live and ended, from ``/proc`` (Linux)."""
    if pid is None:
        return None
    tick = os.sysconf("SC_CLK_TCK")

    def fields(p: int | str) -> list[str]:
        with open(f"/proc/{p}/stat", encoding="utf-8") as fh:
            return fh.read().rsplit(")", 1)[1].split()

    try:
        own = fields(pid)
        total = sum(int(v) for v in own[11:15])  # utime, stime, and those of the children it waited for
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    f = fields(entry)
                except OSError:
                    continue
                if int(f[1]) == pid:  # a live child (backend, writer): its own time so far
                    total += int(f[11]) + int(f[12])
        return total / tick
    except (OSError, ValueError, IndexError):
        return None


def run(target: str, campaign: Path, files: list[Path], args: argparse.Namespace) -> dict[str, object]:
    """One timed run on a new store at ``target``; raises on any violated invariant."""
    from geoldp.store import Store, is_url

    Store.open(target, total_epsilon=TOTAL).close()
    server = _postmaster(target) if is_url(target) else None
    ctx = mp.get_context("spawn")
    start, out = ctx.Event(), ctx.Queue()
    procs = [
        ctx.Process(target=_worker, args=(str(campaign), target, str(f), args.batch, start, out))
        for f in files
    ]
    for proc in procs:
        proc.start()
    time.sleep(3.0)  # every process imported geoldp.field.ingest
    load = os.getloadavg()[0]
    server_cpu = _server_cpu(server)
    t0 = time.perf_counter()
    start.set()
    ends, totals, cpu, refused = [], {"stored": 0, "duplicate": 0, "over budget": 0}, 0.0, 0
    for _ in procs:
        end, used, counts, bad = out.get(timeout=3600)
        ends.append(end)
        cpu += used
        refused += bad
        for key, value in counts.items():
            totals[key] += value
    for proc in procs:
        proc.join()
        if proc.exitcode != 0:
            raise RuntimeError(f"a worker failed (exit {proc.exitcode})")
    wall = max(ends) - t0
    after = _server_cpu(server)
    server_cpu = None if server_cpu is None or after is None else after - server_cpu
    load_end = os.getloadavg()[0]
    with Store.open(target) as store:
        problems = store.verify()
        spent = store.spent()
        n_reports = store.count("geoldp_reports")
    expected = args.users * min(args.records // args.users, int(TOTAL))
    checks = {
        "overspent_users": sum(s > Fraction(TOTAL) for s in spent.values()) + problems["overspent"],
        "budget_mismatch": problems["budget_mismatch"],
        "lost_or_duplicated": abs(totals["stored"] - n_reports) + problems["duplicate_reports"],
        "orphans": problems["report_without_spend"] + problems["spend_without_report"],
        "refused_lines": refused,
    }
    if any(checks.values()) or n_reports != expected:
        raise AssertionError(
            f"store invariants violated: {checks}, {n_reports} stored of {expected} expected"
        )
    return {
        "wall_s": wall,
        "cpu_s": cpu,
        "server_cpu_s": server_cpu,
        "load": load,
        "load_end": load_end,
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
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--processes", type=int, default=8)
    parser.add_argument("--batch", type=int, default=2000, help="records per transaction")
    parser.add_argument("--users", type=int, default=None, help="default: records / 10")
    parser.add_argument("--postgres", default=os.environ.get("GEOLDP_TEST_POSTGRES_URL"))
    parser.add_argument("--backends", default="sqlite,postgres")
    args = parser.parse_args()
    args.users = args.users or args.records // PER_USER
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        campaign = _campaign(folder)
        files = _files(campaign, folder, args)
        if "sqlite" in args.backends:
            rows.append(
                (
                    "SQLite (GeoPackage, WAL, synchronous=FULL)",
                    run(str(folder / "s.gpkg"), campaign, files, args),
                )
            )
        if "postgres" in args.backends and args.postgres:
            import psycopg

            schema = "bench_" + uuid.uuid4().hex[:12]
            with psycopg.connect(args.postgres, autocommit=True) as conn:
                conn.execute(f"CREATE SCHEMA {schema}")
                version = conn.execute("SHOW server_version").fetchone()
            url = f"{args.postgres}{'&' if '?' in args.postgres else '?'}options=-csearch_path%3D{schema}"
            try:
                name = f"PostgreSQL {version[0] if version else ''}".strip()
                rows.append((name, run(url, campaign, files, args)))
            finally:
                with psycopg.connect(args.postgres, autocommit=True) as conn:
                    conn.execute(f"DROP SCHEMA {schema} CASCADE")
    print(f"machine: {_cpu_model()}, {os.cpu_count()} logical CPUs, load {os.getloadavg()[0]:.1f}")
    print(
        f"{args.records} records, {args.users} users (total {TOTAL:g}, {PER_USER} records of {EPSILON:g} "
        "each), "
        f"{args.processes} processes, {args.batch} records per transaction"
    )
    head = (
        "store",
        "wall s",
        "records/s",
        "CPU s (ingest processes)",
        "CPU µs per record",
        "server CPU s",
        "load (1 min) at start / end",
        "stored",
        "refused (over budget)",
        "re-sent, stored once",
        "overspent users",
        "lost or duplicated records",
    )
    print("| " + " | ".join(head) + " |")
    print("|---" + "|---:" * (len(head) - 1) + "|")
    n_read = args.records + sum(
        len(range(p, args.records, args.processes)[::20]) for p in range(args.processes)
    )
    for name, r in rows:
        server = "–" if r["server_cpu_s"] is None else f"{r['server_cpu_s']:.1f}"
        print(
            f"| {name} | {r['wall_s']:.1f} | {args.records / r['wall_s']:,.0f} | {r['cpu_s']:.1f} "
            f"| {r['cpu_s'] / n_read * 1e6:.0f} | {server} | {r['load']:.1f} / {r['load_end']:.1f} "
            f"| {r['n_reports']:,} | {r['over budget']:,} "
            f"| {r['duplicate']:,} | {r['overspent_users']} | {r['lost_or_duplicated']} |"
        )
    print(
        f"CPU µs per record: the ingest processes' CPU over the {n_read:,} records read (re-sent included)."
    )


if __name__ == "__main__":
    main()

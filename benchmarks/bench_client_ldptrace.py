"""One device's LDPTrace reports: the time of a round-1 and a round-2 record (median of ``--reports``).

Plain script. Builds LDPTrace's round-1 campaign on an N × N grid over a 0.1° box (ε = 4 per user) and a
round 2 of ``--length`` L (the budgets as :func:`geoldp.ldptrace.field_split` gives them; L is what a
collector would fix from round 1), then times ``geoldp.client.respond`` on a prepared client for a walk
of 30 vertices, with the operating system's randomness (median and 95th percentile, milliseconds), and
the size of a record as one JSON line.

Usage::

    taskset -c 0 python benchmarks/bench_client_ldptrace.py --grid 6 --length 11
    taskset -c 0 python benchmarks/bench_client_ldptrace.py --grid 32 --length 40
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from geoldp import _campaign_doc as doc
from geoldp import client, ldptrace
from geoldp.field.campaign import Campaign

BOX = (116.30, 39.90, 116.40, 40.00)


def round2(c1: Campaign, length: int) -> Campaign:
    """A round 2 of ``c1`` at L = ``length`` (round-1 sums all 0: only the sizes matter here)."""
    par = c1.document["parameters"]
    split = ldptrace.field_split(par["total_epsilon"], length)
    document = {
        **c1.document,
        "epsilon": split["round2"],
        "parameters": {
            **par,
            "round": 2,
            "round1": c1.id,
            "max_length": length,
            "per_report": split["per_report"],
            "length_reports": 1,
            "length_sums": [0] * par["length_domain"],
        },
    }
    document["id"] = doc.campaign_id(document)
    return Campaign(document)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--grid", type=int, default=6)
    ap.add_argument("--length", type=int, default=11)
    ap.add_argument("--reports", type=int, default=100)
    args = ap.parse_args()
    c1 = Campaign.create(f"ldptrace:grid{args.grid}", epsilon=4.0, bounds=BOX)
    c2 = round2(c1, min(args.length, c1.document["parameters"]["length_domain"]))
    rng = np.random.default_rng(1)
    xy = np.array(BOX[:2]) + 0.02 + np.cumsum(rng.normal(0.0, 0.004, size=(30, 2)), axis=0)
    for name, c in (("round 1", c1), ("round 2", c2)):
        device = client.Client(c)
        device.respond(xy, user="warm-up")
        times = []
        for i in range(args.reports):
            t = time.perf_counter()
            record = device.respond(xy, user=f"u{i}")
            times.append(time.perf_counter() - t)
        ms = 1e3 * np.asarray(times)
        size = len(client.to_json_line(record))
        print(
            f"N = {args.grid}, L = {c2.document['parameters']['max_length']}, {name}: median "
            f"{np.median(ms):.2f} ms, p95 {np.percentile(ms, 95):.2f} ms, record {size / 1024:.1f} KiB"
        )


if __name__ == "__main__":
    main()

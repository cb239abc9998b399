"""LDPTrace in the field: two rounds of device reports, then synthetic trajectories from the store.

Run it as ``python examples/field_ldptrace.py [FOLDER]`` (default: a new temporary folder). It

1. publishes LDPTrace's round-1 campaign: a public 6 x 6 grid over a rounded box, ε = 4 per user;
2. simulates 2,000 devices, each reporting the length of its trip (ε/10, ``geoldp.client``, numpy only);
3. ingests them, and makes round 2 from the stored length reports alone (L, the 90 % length quantile);
4. the same devices answer round 2 (start, end and L − 1 moves, the rest of ε); ingest;
5. draws synthetic trajectories from the stored reports and writes them as a GIS layer.

``GEOLDP_EXAMPLES_SMALL=1`` runs 300 devices (the tests do).
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import numpy as np

# [settings]
AREA = (116.30, 39.90, 116.40, 40.00)  # a public, rounded box (never the data's own bounds)
EPSILON = 4.0  # per user, both rounds together
N_DEVICES = 300 if os.environ.get("GEOLDP_EXAMPLES_SMALL") else 2000
# [/settings]


def trip(user: int) -> np.ndarray:
    """Where user ``user`` went (simulated; a real device has her GPS): a short walk in the area."""
    rng = np.random.default_rng(user)
    start = np.array(AREA[:2]) + rng.random(2) * 0.1
    xy = start + np.cumsum(rng.normal(0.0, 0.01, size=(10, 2)), axis=0)
    return np.clip(xy, AREA[:2], AREA[2:])


# [device]
def devices(campaign_path: Path, out: Path) -> None:
    """Every device answers the campaign with its own trip: one JSON line each, the trip stays local."""
    import geoldp.client

    device = geoldp.client.Client(campaign_path)  # prepared once, reused for every report
    with open(out, "w", encoding="utf-8") as fh:
        for user in range(N_DEVICES):
            record = geoldp.client.respond(device, trip(user), user=f"user-{user:04d}")
            fh.write(geoldp.client.to_json_line(record) + "\n")


# [/device]


def main(folder: Path) -> None:
    # [rounds]
    from geoldp.field.campaign import Campaign
    from geoldp.field.ingest import answer, ingest

    store = folder / "store.gpkg"
    round1 = Campaign.create("ldptrace", epsilon=EPSILON, bounds=AREA)  # the lengths, at ε/10
    round1.write(folder / "round1.json", overwrite=True)
    devices(folder / "round1.json", folder / "round1.jsonl")
    ingest(round1, [folder / "round1.jsonl"], store=store)
    round2 = round1.next_round(store)  # L from the stored round-1 reports only
    round2.write(folder / "round2.json", overwrite=True)
    devices(folder / "round2.json", folder / "round2.jsonl")
    summary = ingest(round2, [folder / "round2.jsonl"], store=store)
    synthetic = answer(store, round2)  # a GeoDataFrame of synthetic trips, with its ledger
    synthetic.to_file(folder / "synthetic.gpkg", driver="GPKG")
    # [/rounds]
    print(round2.summary())
    print(f"round 2: stored {summary.stored}; {len(synthetic)} synthetic trajectories")
    print(f"wrote {folder / 'synthetic.gpkg'}")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp(prefix="geoldp-ldptrace-")))

"""A whole collection in the field: publish a campaign, devices respond, ingest, answer as GIS layers.

Run it as ``python examples/field_campaign.py [FOLDER]`` (default: a new temporary folder). It

1. publishes a campaign file: the design ATP at ε = 4 per trip over a public grid P, with zones;
2. simulates 1,000 devices, each in a pool of separate processes, each running ``geoldp.client`` on its
   own trajectory (a simulated trip here) and writing one report record: the raw trips never leave the
   device function;
3. ingests the records into a GeoPackage store, which charges every user's budget;
4. answers "how many trips visit each zone" from the stored reports and writes it as a GIS layer.

``GEOLDP_EXAMPLES_SMALL=1`` runs 200 devices (the tests do).
"""

from __future__ import annotations

import os
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

# [settings]
AREA = (116.30, 39.90, 116.40, 40.00)  # a public, rounded box (never the data's own bounds)
DESIGN = "atp"  # as `geoldp plan` names it
EPSILON = 4.0  # per trip, every stage of ATP included
N_DEVICES = 200 if os.environ.get("GEOLDP_EXAMPLES_SMALL") else 1000
# [/settings]


# [publish]
def publish(folder: Path) -> Path:
    """The collector's side: a public grid P, zones over it, and the campaign file devices download."""
    from geoldp import points, zone_grid
    from geoldp.field.campaign import Campaign

    grid = points.grid(AREA, spacing_m=500)  # public points from the public area only
    zones = zone_grid(AREA, cells=4)  # 16 public zones
    campaign = Campaign.create(DESIGN, epsilon=EPSILON, points=grid, zones=zones, max_points=16)
    return campaign.write(folder / "campaign.json", overwrite=True)


# [/publish]


# [device]
def device(job: tuple[str, int, str]) -> str:
    """One user's device: her own trip goes in, one JSON line (her report record) comes out.

    It imports ``geoldp.client`` only (numpy, no GIS stack) and draws from the OS's cryptographic source.
    """
    import geoldp.client

    campaign_path, user, _ = job
    rng = np.random.default_rng()  # only to simulate where this user went (a real device has her GPS)
    start = np.array([AREA[0], AREA[1]]) + rng.random(2) * 0.1
    trip = start + np.cumsum(rng.normal(0.0, 0.004, size=(8, 2)), axis=0)
    trip = np.clip(trip, [AREA[0], AREA[1]], [AREA[2], AREA[3]])
    record = geoldp.client.respond(campaign_path, trip, user=f"user-{user:04d}")
    return geoldp.client.to_json_line(record)


# [/device]


def main(folder: Path) -> None:
    campaign_path = publish(folder)
    print(f"published {campaign_path}")
    # [respond]
    reports = folder / "reports.jsonl"
    jobs = [(str(campaign_path), user, "") for user in range(N_DEVICES)]
    with ProcessPoolExecutor(max_workers=2) as pool, open(reports, "w", encoding="utf-8") as out:
        for line in pool.map(device, jobs, chunksize=50):
            out.write(line + "\n")
    # [/respond]
    print(f"{N_DEVICES} devices answered: {reports}")
    # [ingest]
    from geoldp.field.ingest import ingest

    store = folder / "store.gpkg"
    summary = ingest(campaign_path, [reports], store=store)
    print(f"stored {summary.stored}, over budget {summary.over_budget}, refused {len(summary.refused)}")
    # [/ingest]
    # [answer]
    from geoldp import designs
    from geoldp.field.campaign import Campaign
    from geoldp.field.ingest import answer

    campaign = Campaign.read(campaign_path)
    table = answer(store, campaign, "zone_visits")
    layer = designs.to_layer(table, campaign.zones())
    layer.to_file(folder / "zone_visits.gpkg", driver="GPKG")
    print(table[["estimate", "supported"]].head())
    # [/answer]
    print(f"wrote {folder / 'zone_visits.gpkg'}")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp(prefix="geoldp-field-")))

"""Ingest: take the users' report records into the collection store, and answer questions from it.

Devices send report records (:func:`geoldp.client.respond`), one JSON object per line of a JSON Lines
file. :func:`ingest` checks every record against the campaign and appends the valid ones to a
:class:`~geoldp.store.Store`, each charged to its user in the transaction that stores it; :doc:`/field`
("3. Ingest") says what is checked and refused, why a record sent twice is stored once, and what
concurrent or killed ingest processes leave in the store.

:func:`release_of` rebuilds the release a design's ``answer`` reads from the stored reports, and
:func:`answer` gives the one answer table of a question (:meth:`geoldp.designs.Design.answer`), or, for
LDPTrace's second round, synthetic trajectories from the model of the stored bit vectors.
"""

from __future__ import annotations

import itertools
import json
import os
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from geoldp import _campaign_doc as doc
from geoldp.store import Report, Store, is_url, opened

if TYPE_CHECKING:
    from geoldp.field.campaign import Campaign

__all__ = ["answer", "ingest"]

#: Records per transaction (each transaction charges and stores its records together).
DEFAULT_BATCH = 2000
#: Longest line read from a report file (bytes): an OUE report over 10⁶ values is 250 kB of hex.
MAX_LINE_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True)
class Refusal:
    """A record refused before it reached the store: its file, line (1-based) and the reason."""

    file: str
    line: int
    reason: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.reason}"


@dataclass
class IngestSummary:
    """What one :func:`ingest` call did.

    Attributes
    ----------
    stored : int
        Records stored (each with its user's spend).
    duplicates : int
        Records the store held already (or that came twice in this call): stored once, charged once.
    over_budget : int
        Records that would have taken their user past her total: neither stored nor charged.
    refused : list of Refusal
        Malformed records and records of another campaign, design or ε, with their file and line.
    """

    stored: int = 0
    duplicates: int = 0
    over_budget: int = 0
    refused: list[Refusal] = field(default_factory=list)

    @property
    def read(self) -> int:
        """Records read (every line that was not blank)."""
        return self.stored + self.duplicates + self.over_budget + len(self.refused)


def _document(campaign: Any) -> dict[str, Any]:
    """The checked document of a campaign file's path or of a :class:`~geoldp.field.campaign.Campaign`."""
    if isinstance(campaign, (str, os.PathLike)):
        return doc.load_campaign(campaign)
    document = getattr(campaign, "document", None)
    if not isinstance(document, dict):
        raise TypeError(
            "The 'campaign' parameter must be a geoldp.field.campaign.Campaign or a campaign file's path. "
            "Got "
            f"{type(campaign).__name__} instead."
        )
    return doc.check_campaign(document)


def _ledger_entry(campaign: dict[str, Any]) -> tuple[str, str]:
    """The public ledger entry stored beside a report, as a prefix and suffix around its record id and rng.

    The canonical JSON of campaign, design, ε, record id, rng: the other members are the campaign's.
    """
    head = doc.canonical(
        {"campaign": campaign["id"], "design": campaign["design"], "epsilon": campaign["epsilon"]}
    )
    return head.decode("utf-8")[:-1] + ',"record_id":"', '","rng":"'


#: One JSON decoder for every line (``json.loads`` with an argument builds a new decoder per call).
_DECODER = json.JSONDecoder(parse_constant=doc.refuse_constant)
_RECORD_ID = re.compile(r"[0-9a-f]{32}")
_RNGS = frozenset({"os-csprng", "seeded"})


def _loads(text: str) -> Any:
    """``json.loads(text, parse_constant=refuse_constant)``: the same value or the same error."""
    if text.startswith("\ufeff"):  # as json.loads refuses it (the decoder itself does not look)
        raise json.JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", text, 0)
    return _DECODER.decode(text)


def _quick_check(campaign: dict[str, Any]) -> Callable[[Any], str | None]:
    """A function giving the payload text of a record that is surely valid for ``campaign``, else None.

    Every condition is one of :func:`check_record`'s, or stricter (exact types), so a record it accepts
    is one that the full check accepts; a record it does not accept takes the full check.
    """
    keys = doc.RECORD_KEYS
    expected = (doc.RECORD_FORMAT, campaign["id"], campaign["design"])
    epsilon = campaign["epsilon"]
    longest = doc.MAX_USER_CHARS
    payload_text = doc.payload_writer(campaign)
    record_id, rngs = _RECORD_ID.fullmatch, _RNGS

    def check(record: Any) -> str | None:
        if type(record) is not dict or record.keys() != keys:
            return None
        version, eps, rid, user, rng = (
            record["version"],
            record["epsilon"],
            record["record_id"],
            record["user"],
            record["rng"],
        )
        if (
            (record["format"], record["campaign"], record["design"]) != expected
            or type(version) is not int
            or version != doc.RECORD_VERSION
            or type(eps) is not float
            or eps != epsilon
            or type(rid) is not str
            or record_id(rid) is None
            or type(user) is not str
            or not 0 < len(user) <= longest
            or not user.strip()
            or type(rng) is not str
            or rng not in rngs
        ):
            return None
        return payload_text(record["report"])

    return check


def line_limit(campaign: dict[str, Any]) -> int:
    """The longest line read for a campaign: :data:`MAX_LINE_BYTES`, or an LDPTrace record's size and 64 kB.

    An LDPTrace round-2 record holds L + 1 bit vectors as hex (2 N² characters per transition): its size
    follows from the public campaign alone.
    """
    if campaign["kind"] != "ldptrace":
        return MAX_LINE_BYTES
    size = sum(2 * ((d + 7) // 8 + 2) * count for d, count in doc.ldptrace_shapes(campaign).values())
    return max(MAX_LINE_BYTES, size + 65536)


def _records(path: Path, campaign: dict[str, Any], refused: list[Refusal]) -> Iterator[Report]:
    """The valid records of one JSON Lines file, as store rows; malformed lines go to ``refused``.

    Each record passes the quick check (:func:`_quick_check`) or the full one (:func:`check_record`),
    which gives the reason of a refusal.
    """
    name = os.fspath(path)
    head, middle = _ledger_entry(campaign)
    quick = _quick_check(campaign)
    one_per_user = campaign["kind"] == "ldptrace"  # each round of LDPTrace: one record per user
    longest = line_limit(campaign)
    with open(path, "rb") as fh:
        for number, raw in enumerate(fh, start=1):
            if len(raw) > longest:
                refused.append(Refusal(name, number, f"a line longer than {longest} bytes"))
                continue
            if raw.isspace():  # a blank line (never empty: each holds its newline or text)
                continue
            try:
                record = _loads(raw.decode("utf-8"))
                payload = quick(record)
                if payload is None:
                    doc.check_record(record, campaign, where=f"{name}:{number}")
            except (UnicodeDecodeError, ValueError, RecursionError) as exc:
                where = f"{name}:{number}"
                reason = str(exc)
                if reason.startswith(where + ": "):
                    reason = reason[len(where) + 2 :]
                else:
                    reason = f"not a JSON report record ({reason})"
                refused.append(Refusal(name, number, reason))
                continue
            if payload is None:  # valid, off the quick path
                payload = doc.canonical(record["report"]).decode("utf-8")
            yield Report(
                user_id=record["user"],
                record_digest=doc.record_digest(record, per_user=one_per_user),
                epsilon=float(record["epsilon"]),
                payload=payload,
                ledger=f'{head}{record["record_id"]}{middle}{record["rng"]}"}}',  # checked: hex and a policy
            )


def ingest(
    campaign: Any,
    files: Iterable[str | os.PathLike[str]],
    *,
    store: Any,
    batch: int = DEFAULT_BATCH,
) -> IngestSummary:
    """Check report records against their campaign and append them to the store, charging each user.

    Parameters
    ----------
    campaign : Campaign or path
        The campaign the records answer (it is registered in the store).
    files : iterable of paths
        JSON Lines files of report records (:func:`geoldp.client.respond`, one record per line).
    store : path, URL or Store
        The collection store: a GeoPackage file (created if new) or a ``postgresql://`` URL; created with
        the campaign's ``user_total_epsilon`` as each user's total (an existing store must keep the same).
    batch : int, default 2000
        Records per transaction (each transaction commits, with a flush to disk, once).

    Returns
    -------
    IngestSummary

    Raises
    ------
    FileNotFoundError
        A report file or the campaign file does not exist.
    ValueError
        A malformed campaign, a store with another total per user or another document under the
        campaign's id.
    """
    document = _document(campaign)
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise ValueError(
            f"The 'batch' parameter of geoldp.field.ingest.ingest must be an int >= 1. Got {batch!r} instead."
        )
    paths = [Path(f) for f in files]
    for p in paths:
        if not p.is_file():
            raise FileNotFoundError(f"The report file '{os.fspath(p)}' does not exist.")
    cid = document["id"]
    round2 = document["kind"] == "ldptrace" and document["parameters"]["round"] == 2
    if (
        round2 and isinstance(store, (str, os.PathLike)) and not is_url(store) and not os.path.exists(store)
    ):  # refused before a new, empty store is made
        raise ValueError(
            f"The store '{os.fspath(store)}' does not exist, so it does not hold the round 1 that the "
            f"round-2 campaign {cid[:12]}... continues: ingest round 2 into the store of its round 1."
        )
    summary = IngestSummary()
    with opened(store, float(document["user_total_epsilon"])) as st:
        if round2:
            _check_round1(st, document)
        st.add_campaign(cid, doc.canonical(document).decode("utf-8"))
        for p in paths:
            rows = _records(p, document, summary.refused)
            while pending := list(itertools.islice(rows, batch)):  # one transaction each
                _append(st, cid, pending, summary)
    return summary


def _check_round1(store: Store, round2: dict[str, Any]) -> None:
    """Refuse an LDPTrace round 2 whose round 1 is not in ``store`` (or differs from what it continues)."""
    par = round2["parameters"]
    text = store.campaign(par["round1"])
    if text is None:
        raise ValueError(
            f"The store {store.location} does not hold the round 1 ({par['round1'][:12]}...) that the "
            f"round-2 campaign {round2['id'][:12]}... continues: ingest round 2 into the store of its "
            "round 1."
        )
    first = json.loads(text)
    same = ("total_epsilon", "grid", "length_domain", "quantile", "length_epsilon")
    if (
        first.get("kind") != "ldptrace"
        or first["parameters"]["round"] != 1
        or any(first["parameters"][k] != par[k] for k in same)
        or first["user_total_epsilon"] != round2["user_total_epsilon"]
        or first["design"] != round2["design"]
    ):
        raise ValueError(
            f"The round-2 campaign {round2['id'][:12]}... does not continue the round 1 stored under its id "
            "(another grid, budget or quantile): it was not made by Campaign.next_round from that round."
        )


def _append(store: Store, campaign_id: str, rows: list[Report], summary: IngestSummary) -> None:
    for outcome in store.append_reports(campaign_id, rows):
        if outcome == "stored":
            summary.stored += 1
        elif outcome == "duplicate":
            summary.duplicates += 1
        else:
            summary.over_budget += 1


# ------------------------------------------------------------------------------------------------------
# reading the reports back


def stored_campaign(store: Any, campaign_id: str) -> Campaign:
    """The campaign registered in ``store`` under ``campaign_id`` (a unique prefix of it is enough)."""
    from geoldp.field.campaign import Campaign

    with opened(store) as st:
        ids = [c for c in st.campaigns() if c.startswith(str(campaign_id))]
        if len(ids) != 1:
            known = ", ".join(c[:12] for c in st.campaigns()) or "none"
            raise ValueError(
                f"The store {st.location} holds {'no' if not ids else 'more than one'} campaign with the id "
                f"{campaign_id!r} (campaigns: {known}); name one by its id or a unique prefix of it."
            )
        text, location = st.campaign(ids[0]), st.location
    if text is None:  # listed just above: only a concurrent removal gets here
        raise ValueError(f"The campaign {ids[0][:12]}... is no longer in the store {location}.")
    return Campaign(doc.check_campaign(json.loads(text), where=f"The campaign {ids[0][:12]}... in the store"))


def release_of(campaign: Campaign, payloads: Iterable[str]) -> Any:
    """The release a design's ``answer`` reads, rebuilt from stored report payloads (JSON text).

    Trajectory designs: a GeoDataFrame of the released trajectories (P's points, EPSG:4326). Report
    designs: the report table with its ledger, as :func:`geoldp.report` returns it. Hybrid designs: the
    pair (trajectories, reports), each part rebuilt as if it were alone, as :func:`geoldp.hybrid` returns it.
    A pilot: its reports with their ledger, as :meth:`geoldp.designs.Pilot.release` returns them.
    """
    return _release_of_reports(campaign, [json.loads(p) for p in payloads])


def _release_of_reports(campaign: Campaign, reports: list[Any]) -> Any:
    """:func:`release_of` from the decoded payloads (a hybrid's parts are passed on as they are)."""
    import geopandas as gpd
    import pandas as pd
    import shapely

    d = campaign.document
    if d["kind"] == "hybrid":
        return tuple(
            _release_of_reports(campaign.part(kind), [r[kind] for r in reports])
            for kind in ("trajectory", "report")
        )
    if d["kind"] == "pilot":
        return _pilot_reports(campaign, reports)
    if d["kind"] not in ("trajectory", "report"):
        raise ValueError(
            f"The reports of a {d['kind']} campaign are not one release: geoldp.field.ingest.answer reads "
            "them (LDPTrace's round 2 gives its synthetic trajectories)."
        )
    if d["kind"] == "trajectory":
        lon = np.asarray(d["points"]["lon"])
        lat = np.asarray(d["points"]["lat"])
        geoms = []
        for r in reports:
            idx = np.asarray(r["points"], dtype=np.int64)
            xy = np.column_stack([lon[idx], lat[idx]])
            geoms.append(shapely.LineString(xy) if len(idx) > 1 else shapely.Point(xy[0]))
        released = gpd.GeoDataFrame(geometry=geoms, crs="EPSG:4326")
        from geoldp._core.ledger import ReleaseLedger, attach
        from geoldp._core.point_record import ledger_record

        # the public part of the central ledger that the estimators read: the mechanism, its ε and P
        attach(
            released,
            ReleaseLedger(
                mechanism=str(d["design"]),
                epsilon=campaign.epsilon,
                points=ledger_record(campaign.points()),
                settings={"rng": "os-csprng", "source": "reports ingested into a store"},
            ),
        )
        return released
    from geoldp._core.ledger import attach
    from geoldp.accounting import finish_release
    from geoldp.reports.release import release_provenance
    from geoldp.reports.release import scheme as report_design
    from geoldp.zones import check_zones

    par = d["parameters"]
    caller = "geoldp.field.ingest.release_of"
    zones = check_zones(campaign.zones(reported=True), caller=caller)
    des = report_design(
        par["statistic"],
        zones.size,
        campaign.epsilon,
        oracle=par["oracle"],
        pad_length=par["pad_length"],
        caller=caller,
    )
    if par["oracle"] == "oue":
        table = pd.DataFrame({"bits": pd.Series([bytes.fromhex(r["bits"]) for r in reports], dtype=object)})
    else:  # the release's columns and the payload members they hold
        columns = {"seed": "seed", "report": "value"} if par["oracle"] == "olh" else {"report": "value"}
        table = pd.DataFrame(
            {c: np.array([r[k] for r in reports], dtype=np.int64) for c, k in columns.items()}
        )
    attach(table, finish_release(release_provenance(des, zones, "os-csprng", "LineString")))
    return table


def _pilot_reports(campaign: Campaign, reports: list[Any]) -> Any:
    """A pilot campaign's reports as the table :meth:`geoldp.designs.Pilot.release` returns, with its ledger.

    The ledger holds the public part of the central pilot's (ε, its split, the classes, the number of
    coarse cells, the zones' digest), which :meth:`~geoldp.designs.Pilot.estimate` and
    ``geoldp plan --pilot`` read.
    """
    import pandas as pd

    from geoldp._core.ledger import attach
    from geoldp.accounting import finish_release
    from geoldp.designs import Pilot
    from geoldp.zones import check_zones

    table = pd.DataFrame({c: np.array([r[c] for r in reports], dtype=np.int64) for c in doc.PILOT_COLUMNS})
    pilot = cast(Pilot, campaign.design())  # a pilot campaign's design is its Pilot
    provenance = pilot.provenance(
        campaign.epsilon,
        coarse_cells=int(campaign.document["parameters"]["n_cells"]),
        zones_digest=check_zones(campaign.zones(), caller="geoldp.field.ingest.release_of").digest(),
        rng="os-csprng",
    )
    attach(table, finish_release({**provenance, "source": "reports ingested into a store"}))
    return table


def model_of(campaign: Campaign, payloads: list[str]) -> Any:
    """The :class:`~geoldp.ldptrace.LDPTraceModel` of an LDPTrace round-2 campaign's stored payloads.

    The round-1 sums the campaign holds give the length estimates; the bit sums of the round-2
    reports (:func:`geoldp.ldptrace.report_sums`) go through :func:`geoldp.ldptrace.model_from_sums`,
    the code the central :func:`geoldp.ldptrace.collect` ends with.
    """
    from geoldp import ldptrace
    from geoldp.mechanisms.oracles import oue_estimate

    par = campaign.document["parameters"]
    n, L = int(par["grid"]["n"]), int(par["max_length"])
    x0, y0, x1, y1 = (float(b) for b in par["grid"]["bounds"])
    grid = ldptrace.Grid(x0, y0, x1, y1, n=n)
    sums = (
        ldptrace.report_sums(payloads, "start", grid.size),
        ldptrace.report_sums(payloads, "end", grid.size),
        ldptrace.report_sums(payloads, "transitions", 8 * grid.size),
    )
    e1 = float(par["length_epsilon"])
    length_counts = oue_estimate(np.asarray(par["length_sums"]), int(par["length_reports"]), e1)
    split = {"length": e1, "per_report": float(par["per_report"]), "reports": L + 1}
    return ldptrace.model_from_sums(grid, length_counts, L, split, sums, len(payloads))


def synthesize_from(
    campaign: Campaign, payloads: list[str], *, n_synthetic: int | None = None, rng: Any = None
) -> Any:
    """LDPTrace's synthetic trajectories from the round-2 payloads of ``campaign`` (JSON text).

    The sums of the stored bit vectors and the round-1 sums the campaign holds give the same
    :class:`~geoldp.ldptrace.LDPTraceModel` as the central :func:`geoldp.ldptrace.collect`
    (:func:`geoldp.ldptrace.model_from_sums`); the trajectories are drawn from it as
    :func:`geoldp.synthesize` draws them. Post-processing of the reports only.
    """
    from geoldp import ldptrace
    from geoldp._core.ledger import attach
    from geoldp._core.randomness import resolve_rng
    from geoldp._core.validation import check_count
    from geoldp._core.versions import geoldp_version
    from geoldp.accounting import finish_release

    caller = "geoldp.field.ingest.answer"
    par = campaign.document["parameters"]
    if par["round"] != 2:
        raise ValueError(
            f"The campaign {campaign.id[:12]}... is LDPTrace's round 1 (the length reports): make its "
            "round 2 (Campaign.next_round, geoldp campaign next-round), have the devices answer it, "
            "ingest it, then answer the round-2 campaign."
        )
    if n_synthetic is not None:
        n_synthetic = check_count(n_synthetic, "n_synthetic", caller=caller, maximum=ldptrace.MAX_SYNTHETIC)
    source = resolve_rng(rng)
    model = model_of(campaign, payloads)
    grid = model.grid
    n_out = len(payloads) if n_synthetic is None else n_synthetic
    cells, offsets = ldptrace.synthesize_cells(model, n_out, rng=source)
    out = ldptrace.synthetic_frame(grid, cells, offsets, "EPSG:4326")
    eps = float(par["total_epsilon"])
    settings = {
        **ldptrace.model_settings(model, eps, "EPSG:4326", int(par["length_domain"]), float(par["quantile"])),
        "n_users": len(payloads),
        "n_synthetic": n_out,
        "input": {"source": "reports ingested into a store", "round1": par["round1"], "round2": campaign.id},
        "geoldp_version": geoldp_version(),
        "rng": str(getattr(source, "policy", "os-csprng")),
    }
    attach(out, finish_release(settings, released=out))
    out.attrs["reports"] = len(payloads)
    return out


def answer(
    store: Any, campaign: Any, question: Any = None, *, n_synthetic: int | None = None, rng: Any = None
) -> Any:
    """The answer table to ``question`` from the reports of ``campaign`` in ``store``.

    Parameters
    ----------
    store : path, URL or Store
    campaign : Campaign, or str
        The campaign, or its id (or a unique prefix) as registered in the store.
    question : Question or str, optional
        ``"zone_visits"``, ``"hotspots"``, ``"od_flows"``, ``"range_counts"`` (as the design answers).
        Needed, except for LDPTrace's round 2, whose answer without a question is its synthetic
        trajectories, and for a pilot, which answers none (its answer is its reports).
    n_synthetic : int, optional
        LDPTrace: the number of synthetic trajectories (default: one per round-2 report).
    rng : optional
        LDPTrace: the source of the synthetic draws (``None``: the OS CSPRNG; an int seeds NumPy, for
        tests only). The other designs draw nothing here.

    Returns
    -------
    pandas.DataFrame or geopandas.GeoDataFrame
        The one answer table (:func:`geoldp.designs.answer_table`); ``attrs["reports"]`` is the number
        of reports it reads. LDPTrace without a question: the synthetic trajectories (LineStrings in
        EPSG:4326, with their ledger, as :func:`geoldp.synthesize` returns them); with a question, the
        counts of those trajectories in the campaign's zones. A pilot: its reports with their ledger, as
        :meth:`geoldp.designs.Pilot.release` returns them (for :meth:`~geoldp.designs.Pilot.estimate`).

    Raises
    ------
    ValueError
        No reports of the campaign in the store, no zones to answer over, no question (but for
        LDPTrace and a pilot), a question for a pilot, or LDPTrace's round 1 (whose reports only fix
        round 2).
    """
    with opened(store) as st:
        c = stored_campaign(st, campaign) if isinstance(campaign, str) else campaign
        rows = st.reports(c.id)
    if not rows:
        raise ValueError(
            f"The store holds no reports of the campaign {c.id[:12]}...: ingest them first (a report "
            "whose user had no budget left in this store is not stored: geoldp accountant show STORE)."
        )
    if c.document["kind"] == "ldptrace":
        synthetic = synthesize_from(c, [p for _, p, _ in rows], n_synthetic=n_synthetic, rng=rng)
        if question is None:
            return synthetic
        if c.zones() is None:
            raise ValueError(f"The campaign {c.id[:12]}... has no zones to answer {question!s} over.")
        table = c.design().answer(synthetic, question, zones=c.zones())
        table.attrs["reports"] = len(rows)
        return table
    if c.document["kind"] == "pilot":
        if question is not None:
            raise ValueError(
                "The reports of a pilot campaign answer no question: they feed the planner (leave out the "
                "question for their table, then geoldp.plan(..., pilot=...) or geoldp plan --pilot)."
            )
        table = release_of(c, (payload for _, payload, _ in rows))
        table.attrs["reports"] = len(rows)
        return table
    if question is None:
        raise ValueError(
            "The 'question' parameter of geoldp.field.ingest.answer is needed for this campaign's design: "
            "'zone_visits', 'hotspots', 'od_flows' or 'range_counts'."
        )
    zones = c.zones()
    if zones is None:
        raise ValueError(f"The campaign {c.id[:12]}... has no zones to answer over.")
    released = release_of(c, (payload for _, payload, _ in rows))
    table = c.design().answer(released, question, points=c.points(), zones=zones)
    table.attrs["reports"] = len(rows)
    return table

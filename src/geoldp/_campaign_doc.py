"""The campaign file and the report record: their one format, read and checked with the standard library.

A **campaign** is the public configuration of one collection, as a JSON document: the design and its
parameters, ε and its split, the public points P (with a digest), the zones where the design uses them,
and what a user's device needs to run the design's randomiser. It is content-addressed: its ``id`` is the
SHA-256 of its canonical JSON without the ``id`` member, so two collectors who publish the same
configuration publish the same id, and a file that was edited no longer matches its id.

A **report record** is what one user's device sends back: one report of one trajectory under the
campaign's ε, with its ledger entry (campaign id, user id, design, ε, record id).

This module is the one reader and checker of both, used by the client on a device (so it imports the
standard library only) and by the collector's :mod:`geoldp.field.campaign` and
:mod:`geoldp.field.ingest`. Every
refusal is a ``ValueError`` that names the file (and the line of a record) and says what to do.
"""

from __future__ import annotations

import math
import os
import re
import struct
from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = [
    "CAMPAIGN_FORMAT",
    "CAMPAIGN_VERSION",
    "KINDS",
    "RECORD_FORMAT",
    "RECORD_KEYS",
    "RECORD_VERSION",
    "campaign_id",
    "canonical",
    "check_campaign",
    "check_record",
    "load_campaign",
    "points_digest",
    "part_views",
    "record_digest",
    "zones_digest",
]

#: The ``format`` member of a campaign file and the version this geoldp writes and reads.
CAMPAIGN_FORMAT = "geoldp.field.campaign"
CAMPAIGN_VERSION = 1
#: The ``format`` member of a report record and its version.
RECORD_FORMAT = "geoldp.report"
RECORD_VERSION = 1
#: The design kinds a campaign can hold (one randomiser per user each; LDPTrace's in two rounds).
KINDS = ("trajectory", "report", "hybrid", "pilot", "ldptrace")
#: OLH's largest hash range (as geoldp's oracles).
OLH_G_MAX = 1 << 30
#: Largest campaign file read (bytes): P of 10⁶ points is about 40 MB of JSON.
MAX_CAMPAIGN_BYTES = 256 * 1024 * 1024

_TOP_KEYS = frozenset(
    {
        "format",
        "version",
        "id",
        "kind",
        "design",
        "epsilon",
        "epsilon_exact",
        "user_total_epsilon",
        "ledger",
        "points",
        "zones",
        "report_zones",
        "parameters",
        "client",
    }
)
_POINTS_KEYS = frozenset({"lon", "lat", "digest", "diameter_m"})
_ZONES_KEYS = frozenset({"labels", "polygons", "crs", "digest"})
_PARAMETER_KEYS = {
    "trajectory": frozenset({"mechanism", "max_points"}),
    "report": frozenset(
        {"statistic", "pad_length", "oracle", "n_zones", "base", "domain", "estimator", "coarse"}
    ),
    "hybrid": frozenset({"report_share", "combiner", "trajectory", "report"}),
    "pilot": frozenset({"length_edges", "zone_edges", "shares", "split", "n_zones", "n_cells"}),
    "ldptrace": frozenset(
        {
            "round",
            "total_epsilon",
            "grid",
            "length_domain",
            "quantile",
            "length_epsilon",
            "round1",
            "max_length",
            "per_report",
            "length_reports",
            "length_sums",
        }
    ),
}
#: LDPTrace's grid in a campaign: its box (longitude, latitude), side N and CRS (WGS 84 only).
_LDPTRACE_GRID_KEYS = frozenset({"bounds", "n", "crs"})
#: The parameters an LDPTrace round-2 campaign fixes (null in round 1).
LDPTRACE_ROUND2_MEMBERS = ("round1", "max_length", "per_report", "length_reports", "length_sums")
#: LDPTrace's largest grid side (as :data:`geoldp._ldptrace_grid.GRID_MAX`) and length domain.
LDPTRACE_GRID_MAX = 256
LDPTRACE_MAX_DOMAIN = 100_000
#: The three reports of a pilot, in the order of its budget split.
PILOT_COLUMNS = ("length_class", "zone_count_class", "coarse_cell")
_CLIENT_KEYS = {
    "trajectory": frozenset(
        {
            "kernel",
            "grid",
            "plan",
            "tau",
            "proposals",
            "region_tol",
            "region_record",
            "stack",
            "stats",
            "lengths",
        }
    ),
    "report": frozenset(),
    # TraCS-D and TraCS-C: the plane and the box of the central release, each length's stage budgets
    "tracs": frozenset({"kernel", "plane", "bounds", "planar_bounds", "origin", "lengths"}),
}
#: The kernels of a trajectory campaign's client: over P's grid, or in a plane (TraCS).
GRID_KERNELS = ("run_tp", "run_atp", "run_pointem")
TRACS_KERNELS = ("tracs_d_kernel", "tracs_c_kernel")
_GRID_KEYS = frozenset({"gf", "gi", "basis", "cell_start", "order", "levels"})
#: The switches and counts of a trajectory client's sampler plan.
PLAN_KEYS = frozenset(
    {
        "granularity",
        "centred",
        "balanced",
        "neighbour_fallback",
        "vector_mean",
        "sw_buckets",
        "continuous_sw",
        "input_mapping",
    }
)
#: The members of a report record, every one required.
RECORD_KEYS = frozenset(
    {"format", "version", "record_id", "campaign", "user", "design", "epsilon", "report", "rng"}
)
_HEX64 = re.compile(r"[0-9a-f]{64}")
_HEX32 = re.compile(r"[0-9a-f]{32}")
_HEX = re.compile(r"[0-9a-f]*")
#: Longest user id accepted (characters).
MAX_USER_CHARS = 256


def canonical(document: Any) -> bytes:
    """The canonical JSON bytes of ``document``: sorted keys, no spaces, UTF-8, no NaN or infinity.

    Floats are written by ``repr`` (the shortest text that reads back to the same float), so a document
    read and written again is byte-identical.
    """
    import json  # here, not at the top: ``import geoldp.client`` stays light (2-5 ms each)

    return json.dumps(
        document, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode("utf-8")


def campaign_id(document: Mapping[str, Any]) -> str:
    """The id of a campaign document: SHA-256 (hex) of its canonical JSON without the ``id`` member."""
    return _sha256(canonical({k: v for k, v in document.items() if k != "id"}))


def points_digest(lon: Sequence[float], lat: Sequence[float]) -> str:
    """SHA-256 (hex) of P's coordinates: ``b"lon"``, the longitudes, ``b"lat"``, the latitudes (float64)."""
    import hashlib

    h = hashlib.sha256(b"lon")
    h.update(struct.pack(f"<{len(lon)}d", *lon))
    h.update(b"lat")
    h.update(struct.pack(f"<{len(lat)}d", *lat))
    return h.hexdigest()


def zones_digest(labels: Sequence[str], polygons: Sequence[Any]) -> str:
    """SHA-256 (hex) of the zones' labels and polygon rings (their canonical JSON)."""
    return _sha256(canonical({"labels": list(labels), "polygons": list(polygons)}))


def record_digest(record: Mapping[str, Any], *, per_user: bool = False) -> str:
    """The key a record is stored once under: SHA-256 (hex) of its campaign id, user id and record id.

    A record is its id: sending it again, however it was re-serialised, stores and charges it once; a
    different report under an id already stored is the same record for the store, and is not stored.
    With ``per_user`` (each round of an LDPTrace campaign: one report per user) the key is the campaign
    and the user alone, so a user's second record of the round, whatever its id, is not stored either.
    """
    if per_user:
        return _sha256(f"{record['campaign']}\0{record['user']}\0one per user".encode())
    key = f"{record['campaign']}\0{record['user']}\0{record['record_id']}"
    return _sha256(key.encode("utf-8"))


def _sha256(data: bytes) -> str:
    import hashlib  # here, not at the top: ``import geoldp.client`` stays light

    return hashlib.sha256(data).hexdigest()


# ------------------------------------------------------------------------------------------------------
# campaigns


def refuse_constant(name: str) -> Any:
    """Refuse NaN and infinity while parsing JSON (``json.loads(..., parse_constant=refuse_constant)``)."""
    raise ValueError(f"holds {name}, which JSON does not allow")


def load_campaign(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read and check a campaign file; return its document.

    ``ValueError`` for a file that is not a campaign file of this version, a digest that does not match, or
    a member that is missing, unknown or malformed; the message names the file.
    """
    name = os.fspath(path)
    where = f"The campaign file '{name}'"
    try:
        size = os.path.getsize(name)
    except FileNotFoundError:
        raise FileNotFoundError(f"{where} does not exist.") from None
    if size > MAX_CAMPAIGN_BYTES:
        raise ValueError(f"{where} is larger than {MAX_CAMPAIGN_BYTES // 2**20} MiB: not a campaign file.")
    with open(name, "rb") as fh:
        data = fh.read()
    import json

    try:
        document = json.loads(data.decode("utf-8"), parse_constant=refuse_constant)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:  # JSONDecodeError is a ValueError
        raise ValueError(f"{where} is not a JSON campaign file ({exc}).") from None
    return check_campaign(document, where=where)


def _fail(where: str, what: str) -> ValueError:
    return ValueError(f"{where} {what}")


def _keys(value: Any, allowed: frozenset[str], where: str, member: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _fail(where, f"has a malformed '{member}' member (an object is expected).")
    missing = sorted(allowed - set(value))
    unknown = sorted(set(value) - allowed)
    if unknown:
        raise _fail(
            where,
            f"has unknown member(s) {unknown} in '{member}': it was written by another program or a newer "
            "geoldp, or edited; this geoldp reads campaign files of version "
            f"{CAMPAIGN_VERSION} only.",
        )
    if missing:
        raise _fail(where, f"lacks the member(s) {missing} in '{member}'.")
    return value


def _is_finite(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _finite_list(value: Any, where: str, member: str, *, length: int | None = None) -> list[float]:
    if not isinstance(value, list) or not all(_is_finite(v) for v in value):
        raise _fail(where, f"has a malformed '{member}' (a list of finite numbers is expected).")
    if length is not None and len(value) != length:
        raise _fail(where, f"has {len(value)} values in '{member}', not {length}.")
    return [float(v) for v in value]


def _positive(value: Any, where: str, member: str) -> float:
    if not isinstance(value, float) or not (0.0 < value < math.inf):
        raise _fail(where, f"has a malformed '{member}' (a positive float is expected).")
    return value


def _int(value: Any, where: str, member: str, *, minimum: int = 0) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise _fail(where, f"has a malformed '{member}' (an int >= {minimum} is expected).")
    return value


def check_campaign(document: Any, *, where: str = "The campaign") -> dict[str, Any]:
    """Check a campaign document (format, version, members, digests) as :func:`load_campaign`; return it.

    ``where`` is how messages name it (``"The campaign file 'c.json'"``).
    """
    if not isinstance(document, dict) or document.get("format") != CAMPAIGN_FORMAT:
        raise _fail(where, f"is not a geoldp campaign (its 'format' is not {CAMPAIGN_FORMAT!r}).")
    if document.get("version") != CAMPAIGN_VERSION:
        raise _fail(
            where,
            f"has format version {document.get('version')!r}; this geoldp reads version {CAMPAIGN_VERSION}: "
            "ask the collector for a file of that version, or use the geoldp that wrote it.",
        )
    _keys(document, _TOP_KEYS, where, "the campaign")
    cid = document["id"]
    if not isinstance(cid, str) or _HEX64.fullmatch(cid) is None or cid != campaign_id(document):
        raise _fail(
            where,
            "does not match its id (the SHA-256 of its content): it was edited or damaged after it was "
            "published; download the collector's file again.",
        )
    kind = document["kind"]
    if kind not in KINDS:
        raise _fail(where, f"has kind {kind!r}; one of {KINDS} is expected.")
    if not isinstance(document["design"], str) or not document["design"]:
        raise _fail(where, "has a malformed 'design' (a design name such as 'atp' is expected).")
    for member in ("epsilon", "user_total_epsilon"):
        _positive(document[member], where, member)
    if document["user_total_epsilon"] < document["epsilon"]:
        raise _fail(where, "has a 'user_total_epsilon' below its 'epsilon': no user could send a report.")
    if not isinstance(document["epsilon_exact"], str) or not isinstance(document["ledger"], dict):
        raise _fail(where, "has a malformed 'epsilon_exact' or 'ledger'.")
    if document["points"] is not None:
        _check_points(document["points"], where)
    for member in ("zones", "report_zones"):
        if document[member] is not None:
            _check_zones(document[member], where, member)
    parameters = _keys(document["parameters"], _PARAMETER_KEYS[kind], where, "parameters")
    if kind == "hybrid":
        _check_hybrid(document, parameters, where)
    for view in part_views(document).values():
        _check_part(view, where)
    return document


def _check_points(points: Any, where: str) -> None:
    """The public points: coordinates, at least two, their digest and diameter."""
    _keys(points, _POINTS_KEYS, where, "points")
    lon = _finite_list(points["lon"], where, "points.lon")
    lat = _finite_list(points["lat"], where, "points.lat", length=len(lon))
    if len(lon) < 2:
        raise _fail(where, "has fewer than 2 public points.")
    if points["digest"] != points_digest(lon, lat):
        raise _fail(where, "has public points that do not match their digest: download the file again.")
    diameter = points["diameter_m"]
    if not isinstance(diameter, float) or not (0.0 < diameter < math.inf):
        raise _fail(where, "has a malformed 'points.diameter_m'.")


def _check_zones(zones: Any, where: str, member: str) -> None:
    """One zones member: labels and polygons, EPSG:4326, their digest, every polygon."""
    _keys(zones, _ZONES_KEYS, where, member)
    labels, polygons = zones["labels"], zones["polygons"]
    if not isinstance(labels, list) or not isinstance(polygons, list) or len(labels) != len(polygons):
        raise _fail(where, f"has malformed '{member}' (as many labels as polygons are expected).")
    if not polygons:
        raise _fail(where, f"has no zones in '{member}'.")
    if zones["crs"] != "EPSG:4326":
        raise _fail(where, f"has '{member}' in {zones['crs']!r}; campaign zones are in EPSG:4326.")
    if zones["digest"] != zones_digest(labels, polygons):
        raise _fail(where, f"has '{member}' that do not match their digest: download the file again.")
    for k, zone in enumerate(polygons):
        _check_zone(zone, where, f"{member}.polygons[{k}]")


def _check_hybrid(document: Mapping[str, Any], parameters: Mapping[str, Any], where: str) -> None:
    """A hybrid's parts: their parameters (each with its ε) and a split whose exact sum is at most ε."""
    from fractions import Fraction

    share = parameters["report_share"]
    if not isinstance(share, float) or not 0.0 < share < 1.0:
        raise _fail(where, "has a malformed 'parameters.report_share' (a float in (0, 1) is expected).")
    if parameters["combiner"] not in ("blend", "ivw"):
        raise _fail(where, "has an unknown 'parameters.combiner'.")
    total = Fraction(0)
    for part in ("trajectory", "report"):
        allowed = _PARAMETER_KEYS[part] | {"epsilon"}
        eps = _keys(parameters[part], allowed, where, f"parameters.{part}")["epsilon"]
        total += Fraction(_positive(eps, where, f"parameters.{part}.epsilon"))
    if total > Fraction(document["epsilon"]):
        raise _fail(where, "has parts whose budgets add up to more than its 'epsilon'.")


def part_views(document: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """The randomisers of a (checked) campaign, by kind: each a view of the campaign as if it were alone.

    A trajectory or report campaign is its own one part. A hybrid has two, ``"trajectory"`` and
    ``"report"``: each view has the part's ``kind``, ``design``, ``epsilon``, ``parameters`` and
    ``client``, and shares the campaign's id, points and zones. A device sends one report per part.
    """
    kind = document["kind"]
    if kind != "hybrid":
        return {kind: dict(document)}
    par = document["parameters"]
    views = {}
    for part in ("trajectory", "report"):
        own = {k: v for k, v in par[part].items() if k != "epsilon"}
        views[part] = {
            **document,
            "kind": part,
            "design": own["mechanism"] if part == "trajectory" else "report",
            "epsilon": par[part]["epsilon"],
            "parameters": own,
            "client": document["client"] if part == "trajectory" else None,
        }
    return views


def _check_pilot(view: Mapping[str, Any], where: str) -> None:
    """A pilot: its public classes, a split within ε, the zones and the coarse cells it reports over."""
    from fractions import Fraction

    par = view["parameters"]
    for member in ("length_edges", "zone_edges"):
        edges = par[member]
        if not (
            isinstance(edges, list)
            and edges
            and all(_is_int(e, 0, 2**31) for e in edges)
            and all(a < b for a, b in zip(edges, edges[1:], strict=False))
        ):
            raise _fail(where, f"has a malformed 'parameters.{member}' (increasing ints).")
    _finite_list(par["shares"], where, "parameters.shares", length=3)
    split = _finite_list(par["split"], where, "parameters.split", length=3)
    if min(split) <= 0.0 or sum(Fraction(v) for v in split) > Fraction(view["epsilon"]):
        raise _fail(where, "has a pilot split that is not positive or adds up to more than its 'epsilon'.")
    if view["zones"] is None or view["report_zones"] is None or view["client"] is not None:
        raise _fail(where, "is a pilot campaign without its zones and coarse cells (or with a 'client').")
    if _int(par["n_zones"], where, "parameters.n_zones", minimum=1) != len(view["zones"]["polygons"]):
        raise _fail(where, "has a 'parameters.n_zones' that is not the number of its zones.")
    if _int(par["n_cells"], where, "parameters.n_cells", minimum=1) != len(view["report_zones"]["polygons"]):
        raise _fail(where, "has a 'parameters.n_cells' that is not the number of its coarse cells.")


def _check_ldptrace_grid(grid: Any, where: str) -> int:
    """LDPTrace's grid: a box in longitude and latitude and a side; return the number of cells."""
    grid = _keys(grid, _LDPTRACE_GRID_KEYS, where, "parameters.grid")
    x0, y0, x1, y1 = _finite_list(grid["bounds"], where, "parameters.grid.bounds", length=4)
    if not (-180.0 <= x0 < x1 <= 180.0 and -90.0 <= y0 < y1 <= 90.0) or grid["crs"] != "EPSG:4326":
        raise _fail(where, "has a malformed 'parameters.grid' (a lon/lat box with min < max, EPSG:4326).")
    if not _is_int(grid["n"], 1, LDPTRACE_GRID_MAX + 1):
        raise _fail(where, f"has a malformed 'parameters.grid.n' (an int in [1, {LDPTRACE_GRID_MAX}]).")
    return int(grid["n"]) ** 2


def _check_ldptrace(view: Mapping[str, Any], where: str) -> None:
    """An LDPTrace round: its public grid and length domain, and budgets within each user's total exactly.

    Round 1 (the length report) spends ``length_epsilon``, the campaign's ``epsilon``; round 2 continues
    a round 1 (its id) with L from the round-1 sums it holds, and ``epsilon`` (what the store charges)
    covers its L + 1 reports exactly: ``(L + 1) · per_report ≤ epsilon`` and ``length_epsilon + epsilon
    ≤ total_epsilon ≤ user_total_epsilon``.
    """
    from fractions import Fraction

    par = view["parameters"]
    if view["client"] is not None or view["report_zones"] is not None:
        raise _fail(where, "is an LDPTrace campaign with a 'client' or 'report_zones' (null is expected).")
    _check_ldptrace_grid(par["grid"], where)
    d = par["length_domain"]
    if not _is_int(d, 1, LDPTRACE_MAX_DOMAIN + 1):
        raise _fail(
            where, f"has a malformed 'parameters.length_domain' (an int in [1, {LDPTRACE_MAX_DOMAIN}])."
        )
    q = par["quantile"]
    if not (isinstance(q, float) and 0.0 < q <= 1.0):
        raise _fail(where, "has a malformed 'parameters.quantile' (a float in (0, 1]).")
    total = _positive(par["total_epsilon"], where, "parameters.total_epsilon")
    e1 = _positive(par["length_epsilon"], where, "parameters.length_epsilon")
    if Fraction(e1) * 10 > Fraction(total) or total > view["user_total_epsilon"]:
        raise _fail(
            where, "has a 'length_epsilon' above a tenth of 'total_epsilon', or a total above the user's."
        )
    rnd = par["round"]
    if rnd == 1:
        if any(par[k] is not None for k in LDPTRACE_ROUND2_MEMBERS):
            raise _fail(where, "is an LDPTrace round 1 with members of round 2 (null is expected).")
        if view["epsilon"] != e1:
            raise _fail(where, "is an LDPTrace round 1 whose 'epsilon' is not its 'length_epsilon'.")
        return
    if rnd != 2:
        raise _fail(where, "has a malformed 'parameters.round' (1 or 2).")
    _check_ldptrace_round2(view, par, where)


def _check_ldptrace_round2(view: Mapping[str, Any], par: Mapping[str, Any], where: str) -> None:
    from fractions import Fraction

    if not (isinstance(par["round1"], str) and _HEX64.fullmatch(par["round1"])):
        raise _fail(where, "has a malformed 'parameters.round1' (the id of the round 1 it continues).")
    d = par["length_domain"]
    L = par["max_length"]
    if not _is_int(L, 1, d + 1):
        raise _fail(where, f"has a malformed 'parameters.max_length' (an int in [1, {d}]).")
    n1 = par["length_reports"]
    if not _is_int(n1, 1, 2**62):
        raise _fail(where, "has a malformed 'parameters.length_reports' (an int >= 1).")
    sums = par["length_sums"]
    if not (isinstance(sums, list) and len(sums) == d and all(_is_int(v, 0, n1 + 1) for v in sums)):
        raise _fail(where, f"has a malformed 'parameters.length_sums' ({d} ints in [0, length_reports]).")
    pr, eps = _positive(par["per_report"], where, "parameters.per_report"), view["epsilon"]
    if (L + 1) * Fraction(pr) > Fraction(eps) or Fraction(par["length_epsilon"]) + Fraction(eps) > Fraction(
        par["total_epsilon"]
    ):
        raise _fail(where, "has round budgets that add up to more than its 'total_epsilon'.")


def _check_part(view: Mapping[str, Any], where: str) -> None:
    """One part of a campaign: a trajectory randomiser over P, or a report over the report zones."""
    parameters, client, points = view["parameters"], view["client"], view["points"]
    if view["kind"] == "pilot":
        _check_pilot(view, where)
        return
    if view["kind"] == "ldptrace":
        _check_ldptrace(view, where)
        return
    if view["kind"] == "trajectory":
        if points is None:
            raise _fail(where, "is a trajectory campaign without public points.")
        _int(parameters["max_points"], where, "parameters.max_points", minimum=1)
        _check_trajectory_client(client, len(points["lon"]), parameters["max_points"], where)
        return
    if view["report_zones"] is None:
        raise _fail(where, "is a report campaign without 'report_zones'.")
    n_zones = len(view["report_zones"]["polygons"])
    if _int(parameters["n_zones"], where, "parameters.n_zones", minimum=1) != n_zones:
        raise _fail(where, "has a 'parameters.n_zones' that is not the number of its report zones.")
    if parameters["oracle"] not in ("krr", "oue", "olh"):
        raise _fail(where, "has an unknown 'parameters.oracle'.")
    if parameters["statistic"] not in ("visited_zone", "od"):
        raise _fail(where, "has an unknown 'parameters.statistic'.")
    _int(parameters["pad_length"], where, "parameters.pad_length", minimum=1)
    _int(parameters["base"], where, "parameters.base", minimum=2)
    _int(parameters["domain"], where, "parameters.domain", minimum=2)
    if client is not None:
        raise _fail(where, "has a 'client' member for a report campaign (null is expected).")


def _check_zone(zone: Any, where: str, member: str) -> None:
    """A zone: a list of polygons, each a list of rings, each a closed list of at least 4 [lon, lat]."""

    def vertex(v: Any) -> bool:
        return isinstance(v, list) and len(v) == 2 and all(_is_finite(c) for c in v)

    def ring(r: Any) -> bool:
        return isinstance(r, list) and len(r) >= 4 and r[0] == r[-1] and all(vertex(v) for v in r)

    if not (
        isinstance(zone, list)
        and zone
        and all(isinstance(p, list) and p and all(ring(r) for r in p) for p in zone)
    ):
        raise _fail(where, f"has a malformed zone '{member}' (polygons of closed [lon, lat] rings).")


def _length_rows(client: Mapping[str, Any], max_points: int, where: str) -> list[tuple[int, Any]]:
    """The stage budgets of each length a client releases (lengths not releasable hold their reason)."""
    lengths = client["lengths"]
    if not (isinstance(lengths, list) and len(lengths) == max_points + 1):
        raise _fail(where, "has a 'client.lengths' table that does not cover 1 to max_points.")
    return [(n, row) for n, row in enumerate(lengths) if row is not None and not isinstance(row, str)]


def _check_tracs_client(client: Any, max_points: int, where: str) -> None:
    client = _keys(client, _CLIENT_KEYS["tracs"], where, "client")
    plane = _keys(client["plane"], frozenset({"lat_0", "lon_0", "radius_m"}), where, "client.plane")
    lat0, lon0, radius = _finite_list(
        [plane["lat_0"], plane["lon_0"], plane["radius_m"]], where, "client.plane"
    )
    if not (abs(lat0) < 90.0 and abs(lon0) <= 180.0 and radius > 0.0):
        raise _fail(where, "has a malformed 'client.plane' (lat_0 in (-90, 90), lon_0, radius_m > 0).")
    for member in ("bounds", "planar_bounds"):
        x0, y0, x1, y1 = _finite_list(client[member], where, f"client.{member}", length=4)
        if not (x0 < x1 and y0 < y1):
            raise _fail(where, f"has an empty 'client.{member}' box.")
    if client["kernel"] == "tracs_d_kernel":
        _finite_list(client["origin"], where, "client.origin", length=2)
    elif client["origin"] is not None:
        raise _fail(where, "has a 'client.origin' for TraCS-C (null is expected).")
    for n, row in _length_rows(client, max_points, where):
        a, b = _finite_list(row, where, f"client.lengths[{n}]", length=2)
        if not (a > 0.0 and b > 0.0):
            raise _fail(where, f"has a non-positive stage budget in 'client.lengths[{n}]'.")


def _check_trajectory_client(client: Any, m: int, max_points: int, where: str) -> None:
    kernel = client.get("kernel") if isinstance(client, dict) else None
    if kernel in TRACS_KERNELS:
        _check_tracs_client(client, max_points, where)
        return
    client = _keys(client, _CLIENT_KEYS["trajectory"], where, "client")
    if kernel not in GRID_KERNELS:
        raise _fail(where, "has an unknown 'client.kernel'.")
    grid = _keys(client["grid"], _GRID_KEYS, where, "client.grid")
    _keys(client["plan"], PLAN_KEYS, where, "client.plan")
    _finite_list(grid["gf"], where, "client.grid.gf", length=12)
    gi = grid["gi"]
    if not (isinstance(gi, list) and len(gi) == 3 and all(isinstance(v, int) and v >= 0 for v in gi)):
        raise _fail(where, "has a malformed 'client.grid.gi'.")
    order, cell_start = grid["order"], grid["cell_start"]
    if not (isinstance(order, list) and sorted(order) == list(range(m))):
        raise _fail(where, "has a 'client.grid.order' that is not a permutation of the public points.")
    if not (
        isinstance(cell_start, list)
        and len(cell_start) == gi[0] * gi[1] + 1
        and cell_start[0] == 0
        and cell_start[-1] == m
        and all(isinstance(v, int) for v in cell_start)
        and all(a <= b for a, b in zip(cell_start, cell_start[1:], strict=False))
    ):
        raise _fail(where, "has a malformed 'client.grid.cell_start'.")
    for n, row in _length_rows(client, max_points, where):
        flat = row if n < 1 or not isinstance(row[0], list) else [v for part in row for v in part]
        _finite_list(flat, where, f"client.lengths[{n}]")


# ------------------------------------------------------------------------------------------------------
# report records


def check_record(record: Any, campaign: Mapping[str, Any], *, where: str) -> dict[str, Any]:
    """Check one report record against its (checked) campaign: format, campaign id, design, ε, domain.

    Returns the record; ``where`` is how messages name it (``"reports.jsonl line 3"``).
    """
    if not isinstance(record, dict):
        raise ValueError(f"{where}: not a report record (a JSON object is expected).")
    if record.get("format") != RECORD_FORMAT or record.get("version") != RECORD_VERSION:
        raise ValueError(
            f"{where}: not a geoldp report record of version {RECORD_VERSION} (format "
            f"{record.get('format')!r}, "
            f"version {record.get('version')!r})."
        )
    missing = sorted(RECORD_KEYS - set(record))
    unknown = sorted(set(record) - RECORD_KEYS)
    if missing or unknown:
        raise ValueError(f"{where}: a report record with missing {missing} or unknown {unknown} members.")
    if record["campaign"] != campaign["id"]:
        raise ValueError(
            f"{where}: a record of another campaign ({str(record['campaign'])[:16]}...), not of this one."
        )
    if record["design"] != campaign["design"]:
        raise ValueError(
            f"{where}: a record of design {record['design']!r}; the campaign's is {campaign['design']!r}."
        )
    eps = record["epsilon"]
    if not isinstance(eps, float) or eps != campaign["epsilon"]:
        raise ValueError(f"{where}: a record at epsilon {eps!r}; the campaign's is {campaign['epsilon']!r}.")
    if not isinstance(record["record_id"], str) or _HEX32.fullmatch(record["record_id"]) is None:
        raise ValueError(f"{where}: a malformed 'record_id' (32 lowercase hex digits are expected).")
    user = record["user"]
    if not isinstance(user, str) or not user.strip() or len(user) > MAX_USER_CHARS:
        raise ValueError(
            f"{where}: a malformed 'user' (a non-empty string of at most {MAX_USER_CHARS} characters)."
        )
    if record["rng"] not in ("os-csprng", "seeded"):
        raise ValueError(f"{where}: a malformed 'rng' ('os-csprng' or 'seeded').")
    _check_payload(record["report"], campaign, where)
    return record


def _is_int(value: Any, low: int, high: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and low <= value < high


def _check_payload(payload: Any, campaign: Mapping[str, Any], where: str) -> None:
    if campaign["kind"] == "hybrid":
        if not isinstance(payload, dict) or set(payload) != {"trajectory", "report"}:
            raise ValueError(f"{where}: a hybrid report is {{'trajectory': ..., 'report': ...}}.")
        for part, view in part_views(campaign).items():
            _check_one_payload(payload[part], view, f"{where} ({part} part)")
        return
    _check_one_payload(payload, campaign, where)


def ldptrace_shapes(campaign: Mapping[str, Any]) -> dict[str, tuple[int, int]]:
    """The reports of one LDPTrace record, by member: ``(bits of each report, number of reports)``.

    Round 1: ``{"length": (D, 1)}``. Round 2: ``{"start": (N², 1), "end": (N², 1), "transitions":
    (8 N², L − 1)}``; ``transitions`` is a list of L − 1 bit vectors (the others are one each).
    """
    par = campaign["parameters"]
    if par["round"] == 1:
        return {"length": (int(par["length_domain"]), 1)}
    cells = int(par["grid"]["n"]) ** 2
    return {"start": (cells, 1), "end": (cells, 1), "transitions": (8 * cells, int(par["max_length"]) - 1)}


def _check_one_payload(payload: Any, campaign: Mapping[str, Any], where: str) -> None:
    kind, par = campaign["kind"], campaign["parameters"]
    if kind == "pilot":
        sizes = (len(par["length_edges"]) + 1, len(par["zone_edges"]) + 1, par["n_cells"] + 1)
        if not (
            isinstance(payload, dict)
            and set(payload) == set(PILOT_COLUMNS)
            and all(_is_int(payload[c], 0, k) for c, k in zip(PILOT_COLUMNS, sizes, strict=True))
        ):
            raise ValueError(
                f"{where}: a pilot report is {{'length_class': a, 'zone_count_class': b, 'coarse_cell': c}} "
                f"with a < {sizes[0]}, b < {sizes[1]}, c < {sizes[2]}."
            )
    elif payload_writer(campaign)(payload) is None:
        raise ValueError(f"{where}: {_payload_form(payload, campaign)}")


def _payload_form(payload: Any, campaign: Mapping[str, Any]) -> str:
    """What a payload of ``campaign`` (not a pilot's) must be, as a refusal says it."""
    kind, par = campaign["kind"], campaign["parameters"]
    if kind == "ldptrace":
        what = ", ".join(
            f"'{m}': {'a list of ' + str(c) + ' ' if m == 'transitions' else ''}hex of {d} bits"
            for m, (d, c) in ldptrace_shapes(campaign).items()
        )
        return f"an LDPTrace round {par['round']} report is {{{what}}}."
    if kind == "trajectory":
        if not isinstance(payload, dict) or set(payload) != {"points"}:
            return "a trajectory report is {'points': [indices into P]}."
        m = len(campaign["points"]["lon"])
        return f"the report's 'points' must be 1 to {par['max_points']} public point indices (0 to {m - 1})."
    d = par["domain"]
    if par["oracle"] == "krr":
        return f"a k-RR report is {{'value': v}} with 0 <= v < {d}."
    if par["oracle"] == "olh":
        g = olh_range(campaign["epsilon"])
        return f"an OLH report is {{'seed': s, 'value': v}} with s < 2**32 and v < {g}."
    return f"an OUE report is {{'bits': hex}} of {(d + 7) // 8} bytes ({d} bits)."


def _points_writer(m: int, limit: int) -> Callable[[Any], str | None]:
    def points(payload: Any) -> str | None:
        if type(payload) is not dict or len(payload) != 1:
            return None
        pts = payload.get("points")
        if (
            type(pts) is not list
            or not 1 <= len(pts) <= limit
            or set(map(type, pts)) != {int}  # no bool, no float: plain ints only
            or min(pts) < 0
            or max(pts) >= m
        ):
            return None
        return '{"points":[' + ",".join(map(str, pts)) + "]}"

    return points


def _krr_writer(d: int) -> Callable[[Any], str | None]:
    def krr(payload: Any) -> str | None:
        if type(payload) is not dict or len(payload) != 1:
            return None
        v = payload.get("value")
        return f'{{"value":{v}}}' if type(v) is int and 0 <= v < d else None

    return krr


def _olh_writer(g: int) -> Callable[[Any], str | None]:
    def olh(payload: Any) -> str | None:
        if type(payload) is not dict or len(payload) != 2:
            return None
        s, v = payload.get("seed"), payload.get("value")
        if type(s) is int and type(v) is int and 0 <= s < 2**32 and 0 <= v < g:
            return f'{{"seed":{s},"value":{v}}}'
        return None

    return olh


def _hex_shape(d: int) -> tuple[int, int]:
    """The hex characters of an OUE bit vector of ``d`` bits, and the mask of its last byte's padding."""
    return 2 * ((d + 7) // 8), (1 << (8 - d % 8)) - 1 if d % 8 else 0


def _oue_writer(d: int, member: str = "bits") -> Callable[[Any], str | None]:
    n_chars, pad = _hex_shape(d)

    def oue(payload: Any) -> str | None:
        if type(payload) is not dict or len(payload) != 1:
            return None
        bits = payload.get(member)
        if type(bits) is not str or len(bits) != n_chars or _HEX.fullmatch(bits) is None:
            return None
        if pad and int(bits[-2:], 16) & pad:  # the padding bits of the last byte
            return None
        return f'{{"{member}":"{bits}"}}'

    return oue


def _ldptrace_writer(campaign: Mapping[str, Any]) -> Callable[[Any], str | None]:
    """The quick check of an LDPTrace record: each member a hex string of its exact length, nothing else.

    Round 2's hex digits and padding bits are checked at once over the whole record (one regex on the
    joined text, one look at each last byte), so a record of L reports costs a few microseconds.
    """
    shapes = ldptrace_shapes(campaign)
    if "transitions" not in shapes:  # round 1: one OUE report of the length
        return _oue_writer(shapes["length"][0], "length")
    keys = frozenset(shapes)
    (n_one, pad_one), (n_many, _) = _hex_shape(shapes["start"][0]), _hex_shape(shapes["transitions"][0])
    count = shapes["transitions"][1]

    def round2(payload: Any) -> str | None:
        if type(payload) is not dict or payload.keys() != keys:
            return None
        start, end, moves = payload["start"], payload["end"], payload["transitions"]
        if type(moves) is not list or len(moves) != count or type(start) is not str or type(end) is not str:
            return None
        if (
            len(start) != n_one
            or len(end) != n_one
            or any(type(m) is not str or len(m) != n_many for m in moves)
        ):
            return None
        joined = "".join(moves)
        if _HEX.fullmatch(start + end + joined) is None:
            return None
        if int(start[-2:], 16) & pad_one or int(end[-2:], 16) & pad_one:
            return None  # 8 N² bits are whole bytes: only start and end can have padding
        listed = ",".join(f'"{m}"' for m in moves)
        return f'{{"end":"{end}","start":"{start}","transitions":[{listed}]}}'

    return round2


def payload_writer(campaign: Mapping[str, Any]) -> Callable[[Any], str | None]:
    """The check of a report payload: a function giving its canonical JSON text if it is valid, else None.

    The one domain check of a trajectory, report or LDPTrace payload (exact types: what JSON gives):
    :func:`check_record` refuses what it refuses, and ingest's quick path stores the text it writes
    without the encoder. A pilot's or a hybrid's payload always gives None (check_record checks them).
    """
    if campaign["kind"] == "trajectory":
        return _points_writer(len(campaign["points"]["lon"]), int(campaign["parameters"]["max_points"]))
    if campaign["kind"] == "ldptrace":
        return _ldptrace_writer(campaign)
    if campaign["kind"] != "report":
        return lambda payload: None
    parameters = campaign["parameters"]
    oracle, d = parameters["oracle"], int(parameters["domain"])
    if oracle == "krr":
        return _krr_writer(d)
    if oracle == "olh":
        return _olh_writer(olh_range(campaign["epsilon"]))
    return _oue_writer(d)


def olh_range(epsilon: float) -> int:
    """OLH's hash range g = round(e^ε) + 1, at least 2 (as :func:`geoldp.mechanisms.oracles.olh_range`)."""
    if float(epsilon) > math.log(OLH_G_MAX):
        return OLH_G_MAX
    return max(2, int(round(math.exp(float(epsilon)))) + 1)

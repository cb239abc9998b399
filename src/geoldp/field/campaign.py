"""Campaigns: the public configuration of one collection, published as a small content-addressed file.

A collector who runs a collection the way local differential privacy intends (each user's device
randomises her own trajectory) publishes one **campaign file** first: everything a device needs and
nothing private, named by the SHA-256 of its content. :doc:`/field` ("1. Publish the campaign") lists
what it holds and why a file edited after it was published is refused.

>>> import geoldp.field.campaign  # doctest: +SKIP
>>> c = geoldp.field.campaign.Campaign.create("atp", epsilon=4.0, points=P, zones=zones)  # doctest: +SKIP
>>> c.write("campaign.json")  # doctest: +SKIP

Devices answer with :func:`geoldp.client.respond`; the collector takes the answers in with
:func:`geoldp.field.ingest.ingest` and answers questions from the store (:func:`geoldp.field.ingest.answer`).
"""

from __future__ import annotations

import math
import os
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from geoldp import _campaign_doc as doc
from geoldp._core import frames as _frames
from geoldp._core.safe_write import check_output, write_bytes
from geoldp._core.validation import check_int_range, check_real, check_release_epsilon
from geoldp.designs import Composition, Pilot, ReportDesign, TrajectoryDesign, design
from geoldp.designs.base import Design
from geoldp.designs.coarse import coarse_zones
from geoldp.designs.synthesis import SynthesisDesign
from geoldp.reports.release import scheme as report_design
from geoldp.trajectory import _atp_region as region
from geoldp.trajectory import engine
from geoldp.trajectory._fast import grid as fast_grid
from geoldp.trajectory._fast import sampling
from geoldp.trajectory.merge import TAU_FACTOR
from geoldp.zones import check_zones

__all__ = ["Campaign"]

#: The longest trajectory (points) a campaign releases unless told otherwise.
DEFAULT_MAX_POINTS = 64
#: The fast path's tolerance of ATP's certified region (metres per point), as its driver uses it.
REGION_TOLERANCE_M = 2.0
_CALLER = "geoldp.field.campaign.Campaign.create"


class Campaign:
    """One collection's public configuration: read, written and checked as a campaign file.

    Build one with :meth:`create`, publish it with :meth:`write`, read it with :meth:`read`. The object
    holds the checked document (``document``); its properties read it.

    Parameters
    ----------
    document : dict
        A campaign document (checked here: format, version, members, digests).
    """

    def __init__(self, document: dict[str, Any]) -> None:
        self.document: dict[str, Any] = doc.check_campaign(document)

    # -- reading the document -------------------------------------------------------------------------
    @property
    def id(self) -> str:
        """The campaign id: the SHA-256 (hex) of its content."""
        return str(self.document["id"])

    @property
    def design_name(self) -> str:
        """The design's name, as :func:`geoldp.plan` prints it."""
        return str(self.document["design"])

    @property
    def epsilon(self) -> float:
        """The ε of one report (one trajectory): what the store charges a record of this campaign.

        For an LDPTrace round, the round's share of the user's ε (``parameters.total_epsilon``).
        """
        return float(self.document["epsilon"])

    @property
    def user_total_epsilon(self) -> float:
        """Each user's total budget over the campaign (the store refuses a report past it)."""
        return float(self.document["user_total_epsilon"])

    @property
    def ledger(self) -> dict[str, float]:
        """How a report's ε is split among the design's releases."""
        return dict(self.document["ledger"])

    def design(self) -> Design:
        """The :class:`~geoldp.designs.Design` object of the campaign.

        A pilot campaign's is its :class:`~geoldp.designs.Pilot` (which releases and estimates, but
        answers no question itself).
        """
        par = self.document["parameters"]
        if self.document["kind"] == "pilot":
            pilot = Pilot(tuple(par["length_edges"]), tuple(par["zone_edges"]), tuple(par["shares"]))
            return pilot  # type: ignore[return-value]
        if self.document["kind"] == "hybrid" and par["report"]["statistic"] == "od":
            return design(self.design_name, question="od_flows")  # a hybrid reports OD pairs for OD flows
        return design(self.design_name)

    def part(self, kind: str) -> Campaign:
        """One part of the campaign as if it were alone: ``"trajectory"`` or ``"report"`` of a hybrid.

        The part has the campaign's id, points and zones, and its own kind, design, ε, parameters and
        client arrays; a record's report of that part is ``record["report"][kind]``. A trajectory or
        report campaign is its own one part.

        Raises
        ------
        ValueError
            The campaign has no such part.
        """
        views = doc.part_views(self.document)
        if kind not in views:
            raise ValueError(
                f"The 'kind' parameter must be one of {sorted(views)} for this campaign. Got {kind!r}."
            )
        if self.document["kind"] != "hybrid":
            return self
        part = object.__new__(Campaign)
        part.document = views[kind]  # a view of a checked document: not checked again (its id is the whole's)
        return part

    def points(self) -> Any:
        """The public points P as a :class:`~geoldp.PointSet` (None where the design needs none)."""
        pts = self.document["points"]
        if pts is None:
            return None
        from geoldp._core.pointset import PointSet

        return PointSet(np.asarray(pts["lon"]), np.asarray(pts["lat"]))

    def zones(self, *, reported: bool = False) -> Any:
        """The campaign's zones as a GeoDataFrame in EPSG:4326 (``reported``: the reports' own).

        Returns None where the campaign has none.
        """
        zones = self.document["report_zones" if reported else "zones"]
        if zones is None:
            return None
        import geopandas as gpd
        import shapely

        geoms = []
        for zone in zones["polygons"]:
            parts = [shapely.Polygon(p[0], p[1:]) for p in zone]
            geoms.append(parts[0] if len(parts) == 1 else shapely.MultiPolygon(parts))
        return gpd.GeoDataFrame(geometry=geoms, index=list(zones["labels"]), crs="EPSG:4326")

    def summary(self) -> str:
        """One line that says what the campaign collects (what ``geoldp campaign show`` prints)."""
        d = self.document
        split = ", ".join(f"{k} {v:g}" for k, v in self.ledger.items())
        parts = [f"campaign {self.id}", f"design {self.design_name} (epsilon per report: {split})"]
        parts.append(f"each user's total {self.user_total_epsilon:g}")
        if d["points"] is not None:
            parts.append(f"{len(d['points']['lon'])} public points")
        if d["zones"] is not None:
            parts.append(f"{len(d['zones']['labels'])} zones")
        parts += [_SUMMARIES[kind](view["parameters"]) for kind, view in doc.part_views(d).items()]
        return "; ".join(parts)

    def __repr__(self) -> str:
        return f"Campaign(design={self.design_name!r}, epsilon={self.epsilon!r}, id={self.id[:12]!r}...)"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Campaign) and other.id == self.id

    def __hash__(self) -> int:
        return hash(self.id)

    # -- files ------------------------------------------------------------------------------------------
    @classmethod
    def read(cls, path: str | os.PathLike[str]) -> Campaign:
        """Read a campaign file, refusing all but a campaign of this version that matches its id.

        Raises
        ------
        FileNotFoundError
            No such file.
        ValueError
            Another format or version, a digest that does not match, a missing or unknown member; the
            message names the file.
        """
        return cls(doc.load_campaign(path))

    def to_bytes(self) -> bytes:
        """The file's content: the canonical JSON of the document."""
        return doc.canonical(self.document) + b"\n"

    def write(self, path: str | os.PathLike[str], *, overwrite: bool = False) -> Path:
        """Write the campaign file atomically; an existing file is replaced only with ``overwrite=True``.

        Returns
        -------
        pathlib.Path

        Raises
        ------
        ValueError
            The file exists (without ``overwrite``), is a link or not a regular file, or its folder is
            missing.
        """
        check_output(path, overwrite=overwrite, what="campaign")
        write_bytes(path, self.to_bytes(), overwrite=overwrite)
        return Path(path)

    def verify(self) -> None:
        """Recompute everything derived (the design's split, the client arrays of P) and compare.

        A device that trusts a campaign's public arrays can check them here, where geoldp is installed:
        P's diameter (the sensitivity of every exponential mechanism) and each length's stage budgets
        are recomputed from the design, ε and P alone.

        Raises
        ------
        ValueError
            Anything derived differs from what geoldp computes.
        """
        if self.document["kind"] == "ldptrace":
            again = _ldptrace_again(self)
            if again.id != self.id:
                raise ValueError(
                    f"The campaign {self.id[:12]}... does not match what geoldp computes from its design, "
                    "epsilon, grid and round-1 sums. Do not answer it."
                )
            return
        again = Campaign.create(
            self.design(),
            epsilon=self.epsilon,
            points=self.points(),
            zones=self.zones(),
            user_total_epsilon=self.user_total_epsilon,
            max_points=_max_points(self.document),
        )
        if again.id != self.id:
            differ = sorted(k for k in self.document if k != "id" and self.document[k] != again.document[k])
            raise ValueError(
                f"The campaign {self.id[:12]}... does not match what geoldp computes from its design, "
                f"epsilon "
                f"and points: {differ} differ. Do not answer it."
            )

    def next_round(self, store: Any) -> Campaign:
        """LDPTrace's round-2 campaign, from the round-1 reports of this campaign in ``store``.

        The collector sums the stored round-1 length reports (bit by bit), estimates the length
        distribution (:func:`~geoldp.mechanisms.oracles.oue_estimate`) and fixes L, its ``quantile``
        (:func:`geoldp.ldptrace.length_cut`): post-processing of ε-LDP reports only. The round-2
        campaign holds L, the sums it was fixed from, the budget of each of the L + 1 reports and the
        id of this campaign; its ``epsilon`` is what the store charges a user's round-2 record, so that
        her two records cost at most the campaign's total exactly (:func:`geoldp.ldptrace.field_split`).

        Parameters
        ----------
        store : path, URL or geoldp.store.Store
            The store the round-1 records were ingested into.

        Returns
        -------
        Campaign

        Raises
        ------
        ValueError
            This is not an LDPTrace round-1 campaign, or the store holds none of its reports.
        """
        from geoldp.ldptrace import report_sums
        from geoldp.store import opened

        d = self.document
        if d["kind"] != "ldptrace" or d["parameters"]["round"] != 1:
            raise ValueError(
                f"The campaign {self.id[:12]}... is not the first round of an LDPTrace campaign: only that "
                "has a next round."
            )
        with opened(store) as st:
            rows, location = st.reports(self.id), st.location
        if not rows:
            raise ValueError(
                f"The store {location} holds no round-1 reports of the campaign {self.id[:12]}...: ingest "
                "them first (geoldp ingest), then ask for the next round."
            )
        par = d["parameters"]
        sums = report_sums([p for _, p, _ in rows], "length", int(par["length_domain"]))
        return Campaign(_ldptrace_round2(d, sums, len(rows)))

    # -- building ---------------------------------------------------------------------------------------
    @classmethod
    def create(
        cls,
        design_name: Any,
        *,
        epsilon: float,
        points: Any = None,
        zones: Any = None,
        user_total_epsilon: float | None = None,
        max_points: int = DEFAULT_MAX_POINTS,
        bounds: Any = None,
        length_domain: int | None = None,
        quantile: float = 0.9,
    ) -> Campaign:
        """The campaign of a design at ``epsilon`` over public points and zones.

        Parameters
        ----------
        design_name : str or Design
            The design, as :func:`geoldp.plan` names it (or the design it recommends): ``"tp"``, ``"atp"``,
            ``"pointem"``, ``"tracs-d"``, ``"tracs-c"``, a report design such as ``"report:visited_zone"``,
            ``"report:od:eb"``, ``"report:visited_zone:coarse"``, or a hybrid such as
            ``"hybrid:atp+report@0.5"`` (pass the :class:`~geoldp.designs.Composition` itself for one that
            reports OD pairs). TraCS releases in the plane of P's bounding box, as its central release,
            and the device snaps the released locations to P. A hybrid's device sends one report per
            part, ε split as :func:`geoldp.hybrid` splits it. ``"ldptrace"`` (or ``"ldptrace:grid<N>"``)
            gives the campaign of LDPTrace's **first round** (each user's length report); once its
            reports are ingested, :meth:`next_round` gives the second.
        epsilon : float
            The budget of one report (one trajectory). For LDPTrace, the budget of one trajectory over
            both rounds: the round-1 campaign's own ``epsilon`` is its tenth (the length report).
        points : PointSet, GeoDataFrame of Points or (m, 2) array of (lon, lat), optional
            The public points P (needed by the trajectory designs; kept for the answers otherwise).
        zones : GeoDataFrame or GeoSeries of polygons, optional
            The public zones the questions are about (needed by the report designs). They are stored in
            EPSG:4326: the campaign's zones are the ones every report and answer uses.
        user_total_epsilon : float, optional
            Each user's total budget over the campaign; default ``epsilon`` (one report per user).
        max_points : int, default 64
            The longest trajectory a device reports (trajectory designs): a longer one must be resampled
            first. The stage budgets of every length up to it are in the file.
        bounds : (min lon, min lat, max lon, max lat), optional
            LDPTrace only: the public box of its grid in degrees (default: P's bounding box). The grid is
            laid in longitude and latitude, as :func:`geoldp.synthesize` lays it over WGS 84 trips.
        length_domain : int, optional
            LDPTrace only: the longest grid trajectory a user reports (cells; default N²).
        quantile : float, default 0.9
            LDPTrace only: the length quantile L that round 2 fixes from the round-1 reports.

        Returns
        -------
        Campaign

        Raises
        ------
        TypeError, ValueError
            An unknown design, a design a campaign cannot hold (a hybrid of TraCS), an invalid ε,
            missing points or zones (LDPTrace: neither points nor bounds), or ``user_total_epsilon``
            below ``epsilon``.
        """
        des: Design | Pilot = (
            design_name
            if isinstance(design_name, Pilot)
            else Pilot()
            if design_name == "pilot"
            else design(design_name)
        )
        eps = check_release_epsilon(epsilon, caller=_CALLER)
        total = (
            eps
            if user_total_epsilon is None
            else check_real(user_total_epsilon, "user_total_epsilon", caller=_CALLER)
        )
        if not total < math.inf:
            raise ValueError(
                f"The 'user_total_epsilon' parameter of {_CALLER} must be a finite float. Got {total!r} "
                "instead."
            )
        if not total >= eps:
            raise ValueError(
                f"The 'user_total_epsilon' parameter of {_CALLER} ({total:g}) is below 'epsilon' "
                f"({eps:g}): no "
                "user could send a report."
            )
        max_points = check_int_range(max_points, "max_points", caller=_CALLER, minimum=1, maximum=100_000)
        kind = _kind_of(des)
        pts_doc = None
        ps = None
        if points is not None:
            ps = _frames.as_pointset(points, caller=_CALLER, release=True)
            lon = [float(v) for v in np.asarray(ps.lon)]
            lat = [float(v) for v in np.asarray(ps.lat)]
            pts_doc = {
                "lon": lon,
                "lat": lat,
                "digest": doc.points_digest(lon, lat),
                "diameter_m": float(ps.diameter_m),
            }
        elif kind == "ldptrace" and bounds is None:
            raise ValueError(
                f"The design {_name_of(des)!r} lays its grid over a public box: pass points=P (its bounding "
                f"box) or bounds=(min lon, min lat, max lon, max lat) to {_CALLER}."
            )
        elif kind in ("trajectory", "hybrid"):
            raise ValueError(
                f"The design {_name_of(des)!r} releases over public points: pass points=P to {_CALLER}."
            )
        zones_4326 = None
        if zones is not None:
            z = check_zones(zones, caller=_CALLER)
            zones_4326 = z.series if z.crs.to_epsg() == 4326 else z.series.to_crs(4326)
        document: dict[str, Any] = {
            "format": doc.CAMPAIGN_FORMAT,
            "version": doc.CAMPAIGN_VERSION,
            "kind": kind,
            "design": _name_of(des),
            "epsilon": eps,
            "epsilon_exact": str(Fraction(eps)),
            "user_total_epsilon": float(total),
            "ledger": {k: float(v) for k, v in des.ledger(eps).items()},
            "points": pts_doc,
            "zones": None if zones_4326 is None else _zones_doc(zones_4326),
            "report_zones": None,
            "parameters": None,
            "client": None,
        }
        if kind not in ("trajectory", "ldptrace") and zones_4326 is None:
            raise ValueError(
                f"The design {_name_of(des)!r} reports over public zones: pass zones=... to {_CALLER}."
            )
        if isinstance(des, SynthesisDesign):  # kind "ldptrace"
            box = _ldptrace_box(ps, bounds)
            document.update(_ldptrace_round1(des, eps, box, length_domain, quantile))
        else:
            document.update(_kind_members(des, eps, ps, zones_4326, max_points))
        document["id"] = doc.campaign_id(document)
        return cls(document)


def _name_of(des: Design | Pilot) -> str:
    return "pilot" if isinstance(des, Pilot) else des.name


def _kind_members(
    des: Design | Pilot, eps: float, ps: Any, zones_4326: Any, max_points: int
) -> dict[str, Any]:
    """The members of the document that depend on the kind: parameters, report zones, client arrays."""
    if isinstance(des, TrajectoryDesign):
        return {
            "parameters": {"mechanism": des.name, "max_points": max_points},
            "client": _trajectory_client(des, eps, ps, max_points),
        }
    if isinstance(des, ReportDesign):
        reported = des.report_zones(zones_4326)
        return {
            "report_zones": _zones_doc(reported),
            "parameters": _report_parameters(des, eps, len(reported)),
        }
    if isinstance(des, Pilot):  # the coarse grid over the campaign's zones, as Pilot.release lays it
        coarse = coarse_zones(zones_4326)
        return {
            "report_zones": _zones_doc(coarse.geometry),
            "parameters": {
                "length_edges": [int(e) for e in des.length_edges],
                "zone_edges": [int(e) for e in des.zone_edges],
                "shares": [float(v) for v in des.shares],
                "split": [float(v) for v in des.ledger(eps).values()],
                "n_zones": len(zones_4326),
                "n_cells": len(coarse),
            },
        }
    # a composition: one trajectory and one report per trajectory, ε split as the central hybrid
    eps_traj, eps_rep = des.ledger(eps).values()
    comp: Composition = des  # type: ignore[assignment]
    traj = TrajectoryDesign(comp.mechanism)
    return {
        "report_zones": _zones_doc(zones_4326),
        "parameters": {
            "report_share": float(comp.report_share),
            "combiner": comp.combiner,
            "trajectory": {"mechanism": traj.name, "max_points": max_points, "epsilon": eps_traj},
            "report": {**_report_parameters(comp.report_part, eps_rep, len(zones_4326)), "epsilon": eps_rep},
        },
        "client": _trajectory_client(traj, eps_traj, ps, max_points),
    }


def _kind_of(des: Design | Pilot) -> str:
    """The campaign kind of a design, or the refusal of one a campaign cannot hold."""
    if isinstance(des, Pilot):
        return "pilot"
    if isinstance(des, SynthesisDesign):
        return "ldptrace"
    if isinstance(des, TrajectoryDesign):
        return "trajectory"
    if isinstance(des, ReportDesign):
        return "report"
    if isinstance(des, Composition) and not TrajectoryDesign(des.mechanism).continuous:
        return "hybrid"
    raise ValueError(
        f"The design {_name_of(des)!r} cannot be run as a campaign of per-user reports: a campaign holds "
        "'tp', 'atp', 'pointem', 'tracs-d', 'tracs-c', 'ldptrace', a 'report:...' design or a "
        "'hybrid:...' of TP, ATP or PointEM and a report."
    )


def _max_points(document: dict[str, Any]) -> int:
    par = document["parameters"] or {}
    if document["kind"] == "hybrid":
        par = par["trajectory"]
    return int(par.get("max_points", DEFAULT_MAX_POINTS))


def _report_parameters(des: ReportDesign, eps: float, n_zones: int) -> dict[str, Any]:
    """The public parameters of a report design over ``n_zones`` zones at ``eps`` (its oracle, its domain)."""
    rdes = report_design(des.statistic, n_zones, eps, pad_length=des.pad_length, caller=_CALLER)
    return {
        "statistic": des.statistic,
        "pad_length": des.pad_length,
        "oracle": rdes.oracle.name,
        "n_zones": n_zones,
        "base": rdes.base,
        "domain": rdes.d,
        "estimator": des.estimator,
        "coarse": des.coarse,
    }


def _label(value: Any) -> Any:
    if isinstance(value, (bool, np.bool_)):
        return str(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    return str(value)


def _zones_doc(zones: Any) -> dict[str, Any]:
    """Zones (EPSG:4326 polygons) as the campaign holds them: labels, rings of [lon, lat], digest."""
    import shapely

    geoms = zones.geometry if hasattr(zones, "geometry") else zones
    polygons = []
    for geom in geoms:
        parts = list(geom.geoms) if isinstance(geom, shapely.MultiPolygon) else [geom]
        polygons.append(
            [
                [[[float(x), float(y)] for x, y, *_ in ring.coords] for ring in (p.exterior, *p.interiors)]
                for p in parts
            ]
        )
    labels = [_label(v) for v in zones.index]
    return {
        "labels": labels,
        "polygons": polygons,
        "crs": "EPSG:4326",
        "digest": doc.zones_digest(labels, polygons),
    }


def _length_row(mech: Any, n: int, m: int) -> Any:
    """One length's stage budgets as the fast kernels read them, or the reason it cannot be released."""
    from geoldp import mechanisms

    try:
        engine.check_budgets(mech, [n], m)
    except ValueError as exc:
        return str(exc)
    plan = mech.sampler_plan
    if plan.single(n):
        return [float(mech.single_budget(n))]
    rows = []
    for copy in ("A", "B"):
        bud = mech.copy_budgets(n, copy)
        anc = rad = b = dec = 0.0
        if plan.anchor_region:
            anc, rad = float(bud.anchor), float(bud.radius)
            b = float(mechanisms.sw_half_width(bud.radius))
            dec = float(mech.decay_budget(n, copy))
        lie = float(mechanisms.krr_lie_probability(int(plan.granularity), bud.direction))
        rows.append([float(bud.point_pivot), float(bud.point_nonpivot), lie, anc, rad, b, dec])
    return rows


def _bounds(ps: Any) -> tuple[float, float, float, float]:
    """P's bounding box in degrees: (min lon, min lat, max lon, max lat)."""
    lon, lat = np.asarray(ps.lon, dtype=np.float64), np.asarray(ps.lat, dtype=np.float64)
    return (float(np.min(lon)), float(np.min(lat)), float(np.max(lon)), float(np.max(lat)))


def _tracs_client(des: TrajectoryDesign, eps: float, ps: Any, max_points: int) -> dict[str, Any]:
    """What a device's TraCS randomiser reads: the central release's plane and box, each length's budgets.

    The box is P's bounding box (public), as :meth:`TrajectoryDesign.release` takes it.
    """
    import re

    from geoldp._core import box as _box

    bounds = _bounds(ps)
    box = _box.planar_box(bounds, "EPSG:4326", caller=_CALLER)
    plane = {  # read from the definition itself: the client projects with exactly these numbers
        k: float(v) for k, v in re.findall(r"\+(lat_0|lon_0|R)=(\S+)", box.plane_definition)
    }
    mech = engine.resolve_mechanism(des.mechanism, eps, {"bounds": box.planar_bounds}, caller=_CALLER)
    origin = getattr(mech, "origin_point", None)

    def row(n: int) -> Any:
        try:
            mech.check_budgets(n)
        except ValueError as exc:
            return str(exc)
        return [float(v) for v in mech.stage_budgets(n)]

    return {
        "kernel": "tracs_d_kernel" if des.mechanism == "tracs-d" else "tracs_c_kernel",
        "plane": {"lat_0": plane["lat_0"], "lon_0": plane["lon_0"], "radius_m": plane["R"]},
        "bounds": list(bounds),
        "planar_bounds": [float(v) for v in box.planar_bounds],
        "origin": None if origin is None else [float(v) for v in origin],
        "lengths": [None] + [row(n) for n in range(1, max_points + 1)],
    }


def _trajectory_client(des: TrajectoryDesign, eps: float, ps: Any, max_points: int) -> dict[str, Any]:
    """What a device's randomiser reads of P and the design: P's grid, the plan, each length's budgets."""
    if des.continuous:
        return _tracs_client(des, eps, ps, max_points)
    mech = engine.resolve_mechanism(des.mechanism, eps, {}, caller=_CALLER)
    index = fast_grid.get_index(ps)
    plan = mech.sampler_plan
    kernel = ("run_pointem", "run_tp", "run_atp")[plan.kernel_kind]
    levels: list[list[int]] = [[0, 1, 1]]
    if kernel == "run_atp" and index.use_grid:
        levels = np.asarray(index.tree().levels).tolist()
    m = int(index.m)
    return {
        "kernel": kernel,
        "grid": {
            "gf": [float(v) for v in index.gf],
            "gi": [int(v) for v in index.gi],
            "basis": [float(v) for v in np.asarray(index.basis).reshape(-1)],
            "cell_start": [int(v) for v in index.cell_start],
            "order": [int(v) for v in index.order],
            "levels": levels,
        },
        "plan": {  # the sampler plan's switches, and its two counts
            k: (int if k in ("granularity", "sw_buckets") else bool)(getattr(plan, k)) for k in doc.PLAN_KEYS
        },
        "tau": float(TAU_FACTOR * index.delta),
        "proposals": [int(sampling.MAX_PROPOSALS), int(sampling.MAX_PROPOSALS_D)],
        "region_tol": REGION_TOLERANCE_M,
        "region_record": int(region.N_REGION),
        "stack": int(region.STACK),
        "stats": int(fast_grid.N_STATS),
        "lengths": [None] + [_length_row(mech, n, m) for n in range(1, max_points + 1)],
    }


# ------------------------------------------------------------------------------------------------------
# LDPTrace: two rounds


def _ldptrace_box(ps: Any, bounds: Any) -> list[float]:
    """The public box of LDPTrace's grid in degrees: ``bounds`` if given, else P's bounding box."""
    if bounds is not None:
        try:
            box = [check_real(b, "bounds", caller=_CALLER) for b in bounds]
        except TypeError:
            raise TypeError(
                f"The 'bounds' parameter of {_CALLER} must be (min lon, min lat, max lon, max lat) in "
                "degrees."
            ) from None
        if (
            len(box) != 4
            or not all(math.isfinite(v) for v in box)
            or not (box[2] > box[0] and box[3] > box[1])
        ):
            raise ValueError(
                f"The 'bounds' parameter of {_CALLER} must be 4 finite numbers with minx < maxx and "
                "miny < maxy."
            )
        if not (-180.0 <= box[0] and box[2] <= 180.0 and -90.0 <= box[1] and box[3] <= 90.0):
            raise ValueError(
                f"The 'bounds' parameter of {_CALLER} must be (min lon, min lat, max lon, max lat) in "
                "degrees (WGS 84)."
            )
        return box
    box = list(_bounds(ps))
    if not (box[2] > box[0] and box[3] > box[1]):
        raise ValueError(f"The 'points' of {_CALLER} must span a box of positive width and height.")
    return box


def _ldptrace_round1(
    des: SynthesisDesign, eps: float, box: list[float], length_domain: int | None, quantile: float
) -> dict[str, Any]:
    """The members of LDPTrace's round-1 campaign: the grid, D, the quantile and the length budget."""
    from geoldp import ldptrace
    from geoldp._core.validation import MAX_LENGTH, check_count

    q = check_real(quantile, "quantile", caller=_CALLER)
    if not 0.0 < q <= 1.0:
        raise ValueError(f"The 'quantile' parameter of {_CALLER} must be in (0, 1]. Got {q!r}.")
    n = des.grid_size
    if n > ldptrace.GRID_MAX:
        raise ValueError(f"The grid side of {des.name!r} must be at most {ldptrace.GRID_MAX}.")
    d_len = n * n if length_domain is None else check_count(length_domain, "length_domain", caller=_CALLER)
    if d_len > min(MAX_LENGTH, doc.LDPTRACE_MAX_DOMAIN):
        raise ValueError(
            f"The 'length_domain' parameter of {_CALLER} must be at most "
            f"{min(MAX_LENGTH, doc.LDPTRACE_MAX_DOMAIN)} cells."
        )
    e1 = ldptrace.field_split(eps, 1)["length"]
    return {
        "epsilon": e1,
        "epsilon_exact": str(Fraction(e1)),
        "ledger": {"length": e1},
        "parameters": {
            "round": 1,
            "total_epsilon": eps,
            "grid": {"bounds": box, "n": n, "crs": "EPSG:4326"},
            "length_domain": int(d_len),
            "quantile": float(q),
            "length_epsilon": e1,
            **dict.fromkeys(doc.LDPTRACE_ROUND2_MEMBERS),
        },
        "client": None,
        "report_zones": None,
    }


def _ldptrace_round2(round1: dict[str, Any], sums: np.ndarray, n_reports: int) -> dict[str, Any]:
    """LDPTrace's round-2 document: L from the round-1 sums (post-processing), the budgets of its reports."""
    from geoldp import ldptrace
    from geoldp.mechanisms.oracles import oue_estimate

    par = round1["parameters"]
    e1 = float(par["length_epsilon"])
    counts = oue_estimate(sums, n_reports, e1)
    L = ldptrace.length_cut(counts, int(par["length_domain"]), float(par["quantile"]))
    split = ldptrace.field_split(float(par["total_epsilon"]), L)
    pr = split["per_report"]
    document = {
        **round1,
        "epsilon": split["round2"],
        "epsilon_exact": str(Fraction(split["round2"])),
        "ledger": {"start": pr, "end": pr, "transitions": float((L - 1) * Fraction(pr))},
        "parameters": {
            **par,
            "round": 2,
            "round1": round1["id"],
            "max_length": int(L),
            "per_report": pr,
            "length_reports": int(n_reports),
            "length_sums": [int(v) for v in sums],
        },
    }
    del document["id"]
    document["id"] = doc.campaign_id(document)
    return document


def _ldptrace_again(campaign: Campaign) -> Campaign:
    """A round's document recomputed from its public inputs (round 2: from the round-1 sums it holds)."""
    d = campaign.document
    par = d["parameters"]
    first = Campaign.create(
        d["design"],
        epsilon=par["total_epsilon"],
        points=campaign.points(),
        zones=campaign.zones(),
        user_total_epsilon=d["user_total_epsilon"],
        bounds=par["grid"]["bounds"],
        length_domain=par["length_domain"],
        quantile=par["quantile"],
    )
    if par["round"] == 1:
        return first
    if first.id != par["round1"]:
        raise ValueError(
            f"The campaign {campaign.id[:12]}... does not continue the round 1 its grid, budget and "
            "quantile give. Do not answer it."
        )
    return Campaign(_ldptrace_round2(first.document, np.asarray(par["length_sums"]), par["length_reports"]))


def _ldptrace_summary(par: dict[str, Any]) -> str:
    n = par["grid"]["n"]
    if par["round"] == 1:
        return (
            f"LDPTrace round 1 (the length of each trajectory, OUE over {par['length_domain']} lengths) on "
            f"a {n} x {n} grid; total per user over both rounds {par['total_epsilon']:g}"
        )
    return (
        f"LDPTrace round 2 of {par['round1'][:12]}... ({par['max_length'] + 1} OUE reports: start, end, "
        f"{par['max_length'] - 1} transitions, epsilon {par['per_report']:g} each) on a {n} x {n} grid, "
        f"L = {par['max_length']} from {par['length_reports']} length reports"
    )


#: What each part of a campaign collects, from its parameters (:meth:`Campaign.summary`).
_SUMMARIES = {
    "trajectory": lambda par: f"trajectories of at most {par['max_points']} points",
    "report": lambda par: f"{par['oracle']} reports over {par['domain']} values",
    "ldptrace": _ldptrace_summary,
    "pilot": lambda par: f"three k-RR reports (length class, zones visited, one of {par['n_cells']} cells)",
}

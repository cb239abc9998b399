"""Campaigns: the public configuration of one collection, published as a small content-addressed file.

A collector who runs a collection the way local differential privacy intends (each user's device
randomises her own trajectory) publishes one **campaign file** first. It holds everything a device needs
and nothing private: the design (as :func:`geoldp.plan` names it) and its parameters, ε and its split
(the design's ledger), each user's total budget, the public points P (with a digest) and the zones where
the design reports over them, and the public arrays of P the design's randomiser reads. The file's id is
the SHA-256 of its content, so a device, the collector's store and a reader of the results all name the
same configuration, and a file edited after it was published is refused.

>>> import geoldp.campaign  # doctest: +SKIP
>>> c = geoldp.campaign.Campaign.create("atp", epsilon=4.0, points=P, zones=zones)  # doctest: +SKIP
>>> c.write("campaign.json")  # doctest: +SKIP

Devices answer with :func:`geoldp.client.respond`; the collector takes the answers in with
:func:`geoldp.ingest.ingest` and answers questions from the store (:func:`geoldp.ingest.answer`).
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
from geoldp.designs import ReportDesign, TrajectoryDesign, design
from geoldp.designs.base import Design
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
_CALLER = "geoldp.campaign.Campaign.create"


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
        """The ε of one report (one trajectory)."""
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
        """The :class:`~geoldp.designs.Design` object of the campaign."""
        return design(self.design_name)

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
        again = Campaign.create(
            self.design_name,
            epsilon=self.epsilon,
            points=self.points(),
            zones=self.zones(),
            user_total_epsilon=self.user_total_epsilon,
            max_points=(self.document["parameters"] or {}).get("max_points", DEFAULT_MAX_POINTS),
        )
        if again.id != self.id:
            differ = sorted(k for k in self.document if k != "id" and self.document[k] != again.document[k])
            raise ValueError(
                f"The campaign {self.id[:12]}... does not match what geoldp computes from its design, "
                f"epsilon "
                f"and points: {differ} differ. Do not answer it."
            )

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
    ) -> Campaign:
        """The campaign of a design at ``epsilon`` over public points and zones.

        Parameters
        ----------
        design_name : str or Design
            The design, as :func:`geoldp.plan` names it: ``"tp"``, ``"atp"``, ``"pointem"``, or a report
            design such as ``"report:visited_zone"``, ``"report:od:eb"``, ``"report:visited_zone:coarse"``.
        epsilon : float
            The budget of one report (one trajectory).
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

        Returns
        -------
        Campaign

        Raises
        ------
        TypeError, ValueError
            An unknown design, a design a campaign cannot hold (LDPTrace, hybrids, the pilot, TraCS), an
            invalid ε, missing points or zones, or ``user_total_epsilon`` below ``epsilon``.
        """
        des = design(design_name)
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
        if isinstance(des, TrajectoryDesign) and not des.continuous:
            kind = "trajectory"
        elif isinstance(des, ReportDesign):
            kind = "report"
        else:
            raise ValueError(
                f"The design {des.name!r} cannot be run as a campaign of per-user reports yet: use "
                "one of 'tp', "
                "'atp', 'pointem' or a 'report:...' design (geoldp collect runs the others centrally)."
            )
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
        elif kind == "trajectory":
            raise ValueError(
                f"The design {des.name!r} releases over public points: pass points=P to {_CALLER}."
            )
        zones_4326 = None
        if zones is not None:
            z = check_zones(zones, caller=_CALLER)
            zones_4326 = z.series if z.crs.to_epsg() == 4326 else z.series.to_crs(4326)
        document: dict[str, Any] = {
            "format": doc.CAMPAIGN_FORMAT,
            "version": doc.CAMPAIGN_VERSION,
            "kind": kind,
            "design": des.name,
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
        if isinstance(des, TrajectoryDesign):
            document["parameters"] = {"mechanism": des.name, "max_points": max_points}
            document["client"] = _trajectory_client(des, eps, ps, max_points)
        elif isinstance(des, ReportDesign):
            if zones_4326 is None:
                raise ValueError(
                    f"The design {des.name!r} reports over public zones: pass zones=... to {_CALLER}."
                )
            reported = des.report_zones(zones_4326)
            n_zones = len(reported)
            rdes = report_design(des.statistic, n_zones, eps, pad_length=des.pad_length, caller=_CALLER)
            document["report_zones"] = _zones_doc(reported)
            document["parameters"] = {
                "statistic": des.statistic,
                "pad_length": des.pad_length,
                "oracle": rdes.oracle.name,
                "n_zones": n_zones,
                "base": rdes.base,
                "domain": rdes.d,
                "estimator": des.estimator,
                "coarse": des.coarse,
            }
        document["id"] = doc.campaign_id(document)
        return cls(document)


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


def _trajectory_client(des: TrajectoryDesign, eps: float, ps: Any, max_points: int) -> dict[str, Any]:
    """What a device's randomiser reads of P and the design: P's grid, the plan, each length's budgets."""
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
        "plan": {
            "granularity": int(plan.granularity),
            "centred": bool(plan.centred),
            "balanced": bool(plan.balanced),
            "neighbour_fallback": bool(plan.neighbour_fallback),
            "vector_mean": bool(plan.vector_mean),
            "sw_buckets": int(plan.sw_buckets),
            "continuous_sw": bool(plan.continuous_sw),
            "input_mapping": bool(plan.input_mapping),
        },
        "tau": float(TAU_FACTOR * index.delta),
        "proposals": [int(sampling.MAX_PROPOSALS), int(sampling.MAX_PROPOSALS_D)],
        "region_tol": REGION_TOLERANCE_M,
        "region_record": int(region.N_REGION),
        "stack": int(region.STACK),
        "stats": int(fast_grid.N_STATS),
        "lengths": [None] + [_length_row(mech, n, m) for n in range(1, max_points + 1)],
    }

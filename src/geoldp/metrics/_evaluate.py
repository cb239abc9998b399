"""The one-table utility report: every metric for every release, next to the no-data baselines.

:func:`evaluate` validates its arguments once (:class:`_Setup`), computes the statistics of the
originals once, then builds every row from one small function per column group: a release row from
``_RELEASE_COLUMNS``, a count entry (an estimate) from ``_COUNT_COLUMNS``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from geoldp._core.frames import TrajectoryArrays, as_pointset, as_regions, trajectory_arrays
from geoldp._core.geo import haversine_array_m
from geoldp._core.ledger import ledger_of
from geoldp._core.pointset import PointSet
from geoldp._core.progress import stages
from geoldp._core.randomness import resolve_rng
from geoldp._core.validation import check_bool, check_epsilon, check_int_min
from geoldp.metrics._baselines import BASELINES, baseline_release, uniform_ne_prq
from geoldp.metrics._distributions import check_dist_args, diameters_km, histogram_jsd, lengths_km
from geoldp.metrics._hotspots import hotspot_scores
from geoldp.metrics._pairing import pair, per_trajectory_mean, point_distances_m
from geoldp.metrics._scores import check_deltas, range_query_error, resolve_sanity_bound
from geoldp.metrics._zoning import (
    counts_vector,
    normalise,
    od_of,
    od_sparse,
    pmf_distances,
    sparse_distances,
    zone_arg,
    zone_counts_of,
)
from geoldp.queries import check_how, distinct_visits, range_counts
from geoldp.zones import Zones


def _auto_regions(lon: np.ndarray, lat: np.ndarray, grid: int = 4) -> list[tuple[float, float, float]]:
    """A deterministic grid x grid set of circles over the bounding box of ``lon``/``lat``.

    :func:`evaluate` passes P's coordinates (public) whenever it has P: the regions then say nothing
    about the originals, and the collector-side estimates it runs get the same public regions. Only
    without P (no estimates then) does it pass the original vertices.
    """
    lon0, lon1 = float(lon.min()), float(lon.max())
    lat0, lat1 = float(lat.min()), float(lat.max())
    diag_km = float(haversine_array_m(lon0, lat0, lon1, lat1)) / 1000.0
    radius = max(diag_km / (2.0 * grid), 1e-3)
    cx = lon0 + (np.arange(grid) + 0.5) * (lon1 - lon0) / grid
    cy = lat0 + (np.arange(grid) + 0.5) * (lat1 - lat0) / grid
    return [(float(x), float(y), radius) for y in cy for x in cx]


#: Keys a count entry of :func:`evaluate` may hold (an estimate instead of released trajectories).
COUNT_KEYS = ("zone_counts", "od_counts", "range_counts", "visit_counts")


def _release_entries(perturbed: Any, label: Any, caller: str) -> list[tuple[str, Any]]:
    from collections.abc import Mapping

    if isinstance(perturbed, Mapping):
        entries = [(str(key), val) for key, val in perturbed.items()]
        if not entries:
            raise ValueError(f"The 'perturbed' mapping of {caller} is empty.")
        return entries
    if label is None:
        mech = _ledger_mechanism(perturbed)
        label = f"{mech.upper()} raw" if mech else "perturbed"
    return [(str(label), perturbed)]


def _ledger_mechanism(release: Any) -> str | None:
    led = ledger_of(release)
    return None if led is None else led.mechanism


def _synthetic(release: Any) -> bool:
    led = ledger_of(release)
    return led is not None and led.synthetic


def _mechanism_name(mechanism: Any) -> str:
    """Upper-case display name of a mechanism given as a name, a ledger dict or a mechanism object."""
    if isinstance(mechanism, str):
        return mechanism.upper()
    if isinstance(mechanism, dict) and mechanism.get("mechanism"):
        return str(mechanism["mechanism"]).upper()
    return type(mechanism).__name__.upper()


def _estimate_labels(entries: list[tuple[str, Any]], mechanism: Any) -> dict[str, tuple[str, str]]:
    """Release label -> (estimated label, denoised label), for every trajectory (not count) entry."""
    out = {}
    for lab, obj in entries:
        if isinstance(obj, dict) or _synthetic(obj):  # a synthetic set is no release to estimate from
            continue
        if lab.endswith(" raw"):
            base = lab[: -len(" raw")]
        elif len(entries) == 1 and (mechanism is not None or _ledger_mechanism(obj)):
            base = _mechanism_name(mechanism if mechanism is not None else _ledger_mechanism(obj))
        else:
            base = lab
        out[lab] = (f"{base} estimated", f"{base} denoised")
    return out


def _estimate_release(
    release: Any,
    pts: PointSet,
    zn: Any,
    regs: Any,
    mechanism: Any,
    epsilon: float | None,
    options: dict,
    source: Any,
) -> tuple[dict[str, Any], Any]:
    """Collector-side estimates from ``release`` alone (never the originals): counts and denoised rows.

    One population fit answers every query (:func:`geoldp.estimate.fit`); no interval is needed here.
    """
    from geoldp import estimate as est

    kw = {key: val for key, val in options.items() if key not in ("n_boot", "level")}
    pop = est.fit(
        release, pts, mechanism=mechanism, epsilon=epsilon, rng=int(source.integers(2**31)), n_boot=0, **kw
    )
    counts: dict[str, Any] = {"visit_counts": pop.visit_counts()["estimate"].to_numpy()}
    if zn is not None:
        counts["zone_counts"] = pop.visit_counts(zones=zn.series)
        counts["od_counts"] = pop.od_flows(zn.series)
    if regs is not None:
        counts["range_counts"] = pop.range_counts(regs)["estimate"].to_numpy()
    return counts, pop.denoise()


def evaluate(
    original: Any,
    perturbed: Any,
    *,
    points: Any = None,
    label: str | None = None,
    baselines: Any = "auto",
    delta_km: Any = (0.5, 1.0, 2.0, 3.0, 4.0),
    regions: Any = "auto",
    zones: Any = "auto",
    sanity_bound: Any = "auto",
    k: int = 10,
    bins: int = 20,
    rng: Any = 0,
    estimate: bool = False,
    mechanism: Any = None,
    epsilon: float | None = None,
    estimate_options: dict | None = None,
    progress: bool = False,
) -> pd.DataFrame:
    """Utility of one or several releases next to the no-data baselines, as one table.

    One row per release label, one column per metric. The baseline rows (``uniform``: every point a
    uniform draw from P; ``constant``: every point P's 1-median, see :func:`baseline_release`) are computed
    from the public point set and the trajectory lengths only; a release that does not beat them on a
    metric tells the collector nothing on that metric.

    Parameters
    ----------
    original : GeoDataFrame, GeoSeries or sequence of array_like of int
        The original trajectories.
    perturbed : release or mapping of str to release or to counts
        A release (GeoDataFrame/GeoSeries of LineStrings or index arrays, matched to ``original`` by
        position, same number of points per row), or a mapping label → release. A mapping value may also
        be a dict of estimated counts with keys among ``zone_counts`` (per zone, see
        :func:`zone_visit_error`), ``od_counts`` (see :func:`od_flow_error`), ``range_counts`` (one count
        per region, in ``regions`` order) and ``visit_counts`` (per public point, P's order): that row gets
        the metrics those counts define and NaN elsewhere (e.g. an ``"ATP estimated"`` row). A synthetic
        set (:func:`geoldp.synthesize`, with its ledger) is not paired with the originals, so its row
        has the distribution columns only (range queries on its counts scaled to the number of
        originals, zones, OD, length, diameter) and NaN for NE, PRQ and the hotspots (its vertices are
        grid cells, not public points: zones much finer than its grid see only the cells' centres).
    points : PointSet, GeoDataFrame of Points or (m, 2) array, optional
        Public point set; required for index-array input, for the baselines, the automatic zones and the
        hotspot columns. Hotspots count a vertex as a visit of a public point only within 1 m of it (see
        :func:`geoldp.queries.visit_counts`), so snap raw GPS originals to P first (``gdf.ldp.snap``).
    label : str, optional
        Row label of a single release. Default: ``"<MECHANISM> raw"`` from the release's ledger
        (:func:`geoldp.ledger_of`), else ``"perturbed"``.
    baselines : "auto" or sequence of {"uniform", "constant"}, default "auto"
        Baseline rows to add after the releases. They are computed from the public point set:
        ``"auto"`` adds both when ``points`` is given and none otherwise; an explicit list without
        ``points`` raises ``ValueError``; ``()`` for none.
    delta_km : float or sequence of float, default (0.5, 1, 2, 3, 4)
        PRQ thresholds in km.
    regions : "auto", None or regions, default "auto"
        Query regions for :func:`range_query_error`. ``"auto"``: a deterministic 4×4 grid of circles over
        the bounding box of ``points`` (public: the regions, and the estimates of ``estimate=True``, never
        depend on the originals), each with radius 1/8 of the box diagonal; without ``points``, over the
        bounding box of the original vertices (an evaluation-only choice). ``None`` skips the range-query
        columns. ``table.attrs["evaluate"]["regions"]`` says where they came from: ``"points"``,
        ``"originals"``, ``"given"`` or ``None``.
    zones : "auto", None or GeoDataFrame of polygons, default "auto"
        Zones of the visit-density and OD columns. ``"auto"``: :func:`geoldp.zone_grid` of ``points`` (about
        1.5 km squares over P's bounding box; skipped without ``points``). ``None`` skips them.
    sanity_bound : "auto" or float, default "auto"
        See :func:`range_query_error`.
    k : int, default 10
        Number of hotspots, >= 1 (capped at |P|).
    bins : int, default 20
        Histogram bins for the length and diameter JSD, >= 1.
    rng : None, int, Generator, ..., default 0
        Randomness of the uniform baseline's draw and, with ``estimate=True``, of the estimators (their
        candidate library, simulations and bootstrap; each estimator gets a seed drawn from ``rng`` after
        the baselines, so the baseline rows do not depend on ``estimate``). It is public (no privacy
        role), so a fixed seed by default keeps the table reproducible.
    estimate : bool, default False
        Add, after each release ``"<MECH> raw"``, a row ``"<MECH> estimated"`` (zone, OD, range and visit
        counts estimated by :mod:`geoldp.estimate` from that release alone, evaluated as a count-only
        entry: NaN for NE, PRQ, length and diameter) and a row ``"<MECH> denoised"`` (the trajectories of
        :func:`geoldp.estimate.denoise`, evaluated as a release). Needs ``points``. The estimators read
        only the release, the public points and the public mechanism configuration, never ``original``.
    mechanism : str, mechanism object or dict, optional
        Public configuration of the mechanism behind the releases, for ``estimate=True``; default: each
        release's ledger (the output of ``GeoDataFrame.ldp.perturb``).
    epsilon : float, optional
        The per-trajectory budget, with a mechanism name (see :func:`geoldp.estimate.visit_counts`).
    estimate_options : dict, optional
        Keyword arguments for every estimator (``n_candidates``, ``n_sims``, ``n_boot``, ``n_iter``,
        ``cell_km``, ``mechanism_options``); the defaults are those of :mod:`geoldp.estimate`. Smaller
        values are faster and noisier.
    progress : bool, default False
        Report the stages (the originals, each release, the baselines, the estimates) on a progress bar
        (tqdm; a widget in notebooks; one line per stage on the command line). The table does not change.

    Returns
    -------
    pandas.DataFrame
        Index ``release`` (the labels, then the baselines), columns in this order:

        - ``NE_km`` (lower is better, :func:`normalized_error`) and ``PRQ_<δ>km`` per δ (higher is
          better, :func:`preservation_range_query`);
        - ``range_query_error`` (mean RE over the regions) and ``range_query_error_median``
          (:func:`range_query_error`, lower is better);
        - ``zone_l1``, ``zone_jsd`` (:func:`zone_visit_error`) and ``od_l1``, ``od_jsd``
          (:func:`od_flow_error`), lower is better;
        - ``hotspot_acd``, ``hotspot_acd_relative`` (lower is better), ``hotspot_kendall_tau``,
          ``hotspot_overlap`` (higher is better) over the top-k points (:func:`hotspot_preservation`);
        - ``length_jsd``, ``diameter_jsd`` (:func:`length_error`, :func:`diameter_error`, lower is better).

        ``table.attrs["evaluate"]`` records k, the δs, the number of regions and where they came from, the
        number of zones and the 1-median.
        The ``uniform`` row holds the *exact* expectation of NE and PRQ (mean over P of the distance to each
        original point) when the number of original points times |P| is at most 5·10⁸, and otherwise, like
        every other column, the value on one draw with ``rng``.

    Raises
    ------
    TypeError, ValueError
        Trajectories or parameters of the wrong type or value; a different number of rows or of points per
        row in ``perturbed``.

    Examples
    --------
    >>> import numpy as np
    >>> P = np.array([[0.0, 0.0], [0.0, 0.01], [0.01, 0.0]])
    >>> t = evaluate([[0, 1], [2]], [[0, 1], [2]], points=P, k=2)
    >>> list(t.index), float(t.loc["perturbed", "NE_km"])
    (['perturbed', 'uniform', 'constant'], 0.0)
    """
    caller = "evaluate"
    progress = check_bool(progress, "progress", caller=caller)
    if epsilon is not None:  # checked whether or not it is used, so a bad value is never silently kept
        epsilon = check_epsilon(epsilon, caller=caller)
    s = _setup(original, points, delta_km, regions, zones, sanity_bound, k, bins, caller)
    _check_estimate_args(estimate, estimate_options, s.pts, caller)
    if label is None and mechanism is not None and not _ledger_mechanism(perturbed):
        label = f"{_mechanism_name(mechanism)} raw"
    entries = _release_entries(perturbed, label, caller)
    derived = _estimate_labels(entries, mechanism) if estimate else {}
    bases = _resolve_baselines(baselines, s.pts, caller)
    labels = [lab for lab, _ in entries] + [x for both in derived.values() for x in both] + list(bases)
    if len(set(labels)) != len(labels):
        raise ValueError(f"The release labels of {caller} must be unique; got {labels}.")
    n_stages = 1 + len(entries) + bool(bases) + bool(derived)
    with stages("evaluating", n_stages, enabled=progress) as stage:
        stage(f"the {s.to.n_trajectories} original trajectories")
        s.resolve_public_inputs(regions, zones, sanity_bound)
        rows = {}
        for lab, obj in entries:
            stage(f"scoring {lab!r}")
            rows[lab] = _entry_row(s, obj, lab, "perturbed")
        source = resolve_rng(rng) if (bases or derived) else None  # normalised once
        if bases:
            stage("the no-data baselines")
        base_rows, median = _baseline_rows(s, bases, source)  # drawn first: they do not depend on `estimate`
        if derived:
            stage("estimates from the releases")
            options = dict(estimate_options or {})
            options.setdefault("progress", progress)  # the fits' own stages
            rows = _with_estimates(s, entries, rows, derived, mechanism, epsilon, options, source)
    rows.update(base_rows)
    return _table(s, rows, median)


# --------------------------------------------------------------------------------------------------
# the inputs, validated once, and the statistics of the originals
# --------------------------------------------------------------------------------------------------


class _Setup:
    """What :func:`evaluate` knows before it scores a release, each computed once.

    Checked parameters, P, the public regions and zones, and the statistics of the originals (``truth``).
    """

    def __init__(
        self, caller: str, to: TrajectoryArrays, pts: PointSet | None, deltas: np.ndarray, k: int, bins: int
    ) -> None:
        self.caller, self.to, self.pts, self.deltas, self.bins = caller, to, pts, deltas, bins
        self.k = min(k, pts.size) if pts is not None else None  # hotspots, capped at |P|
        self.regs: Any = None
        self.regions_from: str | None = None
        self.n_regions = 0
        self.zn: Zones | None = None
        self.truth: dict[str, Any] = {}

    def resolve_public_inputs(self, regions: Any, zones: Any, sanity_bound: Any) -> None:
        """The zones, the regions and the truth side (in this order: it is the order of the errors)."""
        self.zn = _resolve_zones(zones, self.pts, self.caller)
        self.regs, self.regions_from, self.n_regions = _resolve_regions(
            regions, self.pts, self.to, self.caller
        )
        self.truth = _truth(self, sanity_bound)

    def points(self) -> PointSet:
        """P, for the rows that cannot exist without it (checked when the arguments were validated)."""
        if self.pts is None:  # unreachable: checked when the arguments were validated
            raise ValueError("internal error: a required public input is missing; please report it")
        return self.pts


def _setup(
    original: Any,
    points: Any,
    delta_km: Any,
    regions: Any,
    zones: Any,
    sanity_bound: Any,
    k: Any,
    bins: Any,
    caller: str,
) -> _Setup:
    k = check_int_min(k, "k", minimum=1, caller=caller)  # hotspots; k=0 would divide by zero
    check_dist_args(bins, "jsd", caller)
    deltas, _ = check_deltas(delta_km, caller)
    pts = as_pointset(points, caller=caller) if points is not None else None
    to = trajectory_arrays(original, pts, name="original", caller=caller)
    if to.n_trajectories == 0:
        raise ValueError(f"{caller}: 'original' must contain at least one trajectory.")
    return _Setup(caller, to, pts, deltas, int(k), int(bins))


def _check_estimate_args(estimate: Any, estimate_options: Any, pts: PointSet | None, caller: str) -> None:
    if not isinstance(estimate, bool):
        raise TypeError(f"The 'estimate' parameter of {caller} must be True or False.")
    if estimate and pts is None:
        raise ValueError(
            f"estimate=True in {caller} runs the collector-side estimators, which need the public point "
            "set: pass `points=`."
        )
    if estimate_options is not None and not isinstance(estimate_options, dict):
        raise TypeError(f"The 'estimate_options' parameter of {caller} must be a dict or None.")


def _resolve_baselines(baselines: Any, pts: PointSet | None, caller: str) -> tuple[str, ...]:
    if isinstance(baselines, str) and baselines == "auto":
        baselines = BASELINES if pts is not None else ()
    elif isinstance(baselines, str):
        baselines = (baselines,)
    baselines = tuple(baselines or ())
    bad = [b for b in baselines if b not in BASELINES]
    if bad:
        raise ValueError(f"Got baselines={bad!r}; `baselines` of {caller} must be a subset of {BASELINES}.")
    if baselines and pts is None:
        raise ValueError(
            f"The baseline rows of {caller} are computed from the public point set: pass `points=`, or "
            "baselines=() to leave them out."
        )
    return baselines


def _resolve_zones(zones: Any, pts: PointSet | None, caller: str) -> Zones | None:
    if isinstance(zones, str) and zones == "auto" and pts is None:
        return None  # the automatic zones are built from P: without P, no zone columns
    return zone_arg(zones, pts, caller)


def _resolve_regions(
    regions: Any, pts: PointSet | None, to: TrajectoryArrays, caller: str
) -> tuple[Any, str | None, int]:
    """(regions, where they came from, how many); public regions from P whenever there is one."""
    if regions is None:
        return None, None, 0
    if isinstance(regions, str) and regions == "auto":
        # never the originals' box when P is given: see _auto_regions
        regs: Any = _auto_regions(pts.lon, pts.lat) if pts is not None else _auto_regions(to.lon, to.lat)
        regions_from = "points" if pts is not None else "originals"
    else:
        regs, regions_from = regions, "given"
    return regs, regions_from, len(as_regions(regs, caller=caller)[0])


def _truth(s: _Setup, sanity_bound: Any) -> dict[str, Any]:
    """The statistics of the originals every row is compared with."""
    truth: dict[str, Any] = {}
    if s.regs is not None:
        truth["b"] = resolve_sanity_bound(sanity_bound, s.to.n_trajectories, s.caller)
    if s.zn is not None:
        truth["zone"] = zone_counts_of(s.to, s.zn, s.pts)
        truth["od"] = od_of(s.to, s.zn, s.pts)
    if s.pts is not None:
        truth["visits"] = distinct_visits(s.to, s.pts, 0.001).astype(np.float64)
    truth["length"] = lengths_km(s.to)
    truth["diameter"] = diameters_km(s.to)
    return truth


# --------------------------------------------------------------------------------------------------
# one function per column group, for a release (trajectories) and for a count entry (an estimate)
# --------------------------------------------------------------------------------------------------


def _columns(s: _Setup) -> list[str]:
    columns = ["NE_km", *(f"PRQ_{dl:g}km" for dl in s.deltas)]
    if s.regs is not None:
        columns += ["range_query_error", "range_query_error_median"]
    if s.zn is not None:
        columns += ["zone_l1", "zone_jsd", "od_l1", "od_jsd"]
    if s.pts is not None:
        columns += ["hotspot_acd", "hotspot_acd_relative", "hotspot_kendall_tau", "hotspot_overlap"]
    return columns + ["length_jsd", "diameter_jsd"]


def _prq_columns(deltas: np.ndarray, prq: np.ndarray) -> dict[str, float]:
    return {f"PRQ_{dl:g}km": float(v) for dl, v in zip(deltas, prq, strict=True)}


def _pointwise_columns(s: _Setup, tp: TrajectoryArrays) -> dict[str, float]:
    """NE and PRQ(δ) (:func:`normalized_error`, :func:`preservation_range_query`)."""
    to_, tp_, _ = pair(s.to, tp, s.pts, caller=s.caller)
    d = point_distances_m(to_, tp_)
    row = {"NE_km": float(np.mean(per_trajectory_mean(d / 1000.0, s.to)))}
    hit = (d[:, None] <= s.deltas[None, :] * 1000.0).astype(np.float64)
    row.update(_prq_columns(s.deltas, per_trajectory_mean(hit, s.to).mean(axis=0)))
    return row


def _range_columns(s: _Setup, tp: TrajectoryArrays) -> dict[str, float]:
    if s.regs is None:
        return {}
    rq = range_query_error(s.to, tp, s.regs, sanity_bound=s.truth["b"])["relative_error"]
    return {"range_query_error": float(rq.mean()), "range_query_error_median": float(rq.median())}


def _zone_pmf_columns(s: _Setup, chat: np.ndarray) -> dict[str, float]:
    l1, jsd = pmf_distances(normalise(s.truth["zone"]), normalise(chat))
    return {"zone_l1": l1, "zone_jsd": jsd}


def _od_columns(s: _Setup, od: tuple[np.ndarray, np.ndarray]) -> dict[str, float]:
    l1, jsd = sparse_distances(s.truth["od"], od)
    return {"od_l1": l1, "od_jsd": jsd}


def _zone_columns(s: _Setup, tp: TrajectoryArrays) -> dict[str, float]:
    if s.zn is None:
        return {}
    return {**_zone_pmf_columns(s, zone_counts_of(tp, s.zn, s.pts)), **_od_columns(s, od_of(tp, s.zn, s.pts))}


def _hotspot_columns_of(s: _Setup, chat: np.ndarray) -> dict[str, float]:
    if s.k is None:  # unreachable: checked when the arguments were validated
        raise ValueError("internal error: a required public input is missing; please report it")
    return {f"hotspot_{key}": v for key, v in hotspot_scores(s.truth["visits"], chat, s.k).items()}


def _hotspot_columns(s: _Setup, tp: TrajectoryArrays) -> dict[str, float]:
    if s.pts is None:
        return {}
    return _hotspot_columns_of(s, distinct_visits(tp, s.pts, 0.001).astype(float))


def _shape_columns(s: _Setup, tp: TrajectoryArrays) -> dict[str, float]:
    """JSD of the length and of the diameter histograms (:func:`length_error`, :func:`diameter_error`)."""
    return {
        "length_jsd": histogram_jsd(s.truth["length"], lengths_km(tp), s.bins),
        "diameter_jsd": histogram_jsd(s.truth["diameter"], diameters_km(tp), s.bins),
    }


_RELEASE_COLUMNS = (_pointwise_columns, _range_columns, _zone_columns, _hotspot_columns, _shape_columns)


def _release_row(s: _Setup, tp: TrajectoryArrays) -> dict[str, float]:
    row: dict[str, float] = {}
    for group in _RELEASE_COLUMNS:
        row.update(group(s, tp))
    return row


def _zone_count_columns(s: _Setup, est: dict, lab: str) -> dict[str, float]:
    row: dict[str, float] = {}
    if "zone_counts" in est and s.zn is not None:
        chat = counts_vector(est["zone_counts"], s.zn, s.caller, f"zone_counts of {lab!r}")
        row.update(_zone_pmf_columns(s, chat))
    if "od_counts" in est and s.zn is not None:
        row.update(_od_columns(s, od_sparse(est["od_counts"], s.zn, s.caller, f"od_counts of {lab!r}")))
    return row


def _range_count_columns(s: _Setup, est: dict, lab: str) -> dict[str, float]:
    if "range_counts" not in est or s.regs is None:
        return {}
    c = range_counts(s.to, as_regions(s.regs, caller=s.caller)[0], check_how("points", s.caller))
    chat = np.asarray(est["range_counts"], dtype=np.float64)
    if chat.shape != c.shape:
        raise ValueError(f"The range_counts of {lab!r} in {s.caller} must hold {c.size} counts.")
    rq = np.abs(chat - c) / np.maximum(c, s.truth["b"])
    return {"range_query_error": float(rq.mean()), "range_query_error_median": float(np.median(rq))}


def _hotspot_count_columns(s: _Setup, est: dict, lab: str) -> dict[str, float]:
    if "visit_counts" not in est or s.pts is None:
        return {}
    chat = np.asarray(est["visit_counts"], dtype=np.float64)
    if chat.shape != (s.pts.size,):
        raise ValueError(f"The visit_counts of {lab!r} in {s.caller} must hold {s.pts.size} counts.")
    return _hotspot_columns_of(s, chat)


_COUNT_COLUMNS = (_zone_count_columns, _range_count_columns, _hotspot_count_columns)


def _count_row(s: _Setup, est: dict, lab: str) -> dict[str, float]:
    """The columns a count entry defines (NaN elsewhere in the table)."""
    unknown = sorted(set(est) - set(COUNT_KEYS))
    if unknown:
        raise ValueError(
            f"The counts of release {lab!r} in {s.caller} have unknown keys {unknown}; use {COUNT_KEYS}."
        )
    row: dict[str, float] = {}
    for group in _COUNT_COLUMNS:
        row.update(group(s, est, lab))
    return row


# --------------------------------------------------------------------------------------------------
# the rows: releases, baselines, estimates; the table
# --------------------------------------------------------------------------------------------------


def _entry_row(s: _Setup, obj: Any, lab: str, name: str) -> dict[str, float]:
    """The row of one entry: a count entry (dict), a synthetic set or a release."""
    if isinstance(obj, dict):
        return _count_row(s, obj, lab)
    tp = trajectory_arrays(obj, s.pts, name=name, caller=s.caller)
    return _synthetic_row(s, tp, lab) if _synthetic(obj) else _release_row(s, tp)


def _synthetic_row(s: _Setup, tp: TrajectoryArrays, lab: str) -> dict[str, float]:
    """A synthetic set's distribution columns: its rows are not the originals', its vertices not P's."""
    row = {**_zone_columns(s, tp), **_shape_columns(s, tp)}
    if s.regs is not None:
        counts = range_counts(tp, as_regions(s.regs, caller=s.caller)[0], check_how("points", s.caller))
        scaled = counts * (s.to.n_trajectories / max(tp.n_trajectories, 1))
        row.update(_range_count_columns(s, {"range_counts": scaled}, lab))
    return row


def _baseline_rows(
    s: _Setup, baselines: tuple[str, ...], source: Any
) -> tuple[dict[str, dict[str, float]], int | None]:
    """The no-data rows, and the 1-median when the constant row is among them."""
    rows: dict[str, dict[str, float]] = {}
    median = None
    if not baselines:
        return rows, median
    pts = s.points()
    for b in baselines:
        rel = baseline_release(b, pts, s.to.lengths, rng=source)
        rows[b] = _release_row(s, trajectory_arrays(rel, pts, name=b, caller=s.caller))
        if b == "constant":
            median = int(rel[0][0])
        if b == "uniform" and s.to.lon.shape[0] * pts.size <= 500_000_000:
            ne, prq = uniform_ne_prq(s.to, pts, s.deltas)  # the exact expectation instead of one draw
            rows[b].update({"NE_km": ne, **_prq_columns(s.deltas, prq)})
    return rows, median


def _with_estimates(
    s: _Setup,
    entries: list[tuple[str, Any]],
    rows: dict[str, dict[str, float]],
    derived: dict[str, tuple[str, str]],
    mechanism: Any,
    epsilon: float | None,
    options: dict,
    source: Any,
) -> dict[str, dict[str, float]]:
    """``rows`` with the estimated and denoised rows of every release right after its own row."""
    pts = s.points()
    ordered: dict[str, dict[str, float]] = {}
    for lab, obj in entries:
        ordered[lab] = rows[lab]
        if lab not in derived:
            continue
        est_lab, den_lab = derived[lab]
        counts, denoised = _estimate_release(obj, pts, s.zn, s.regs, mechanism, epsilon, options, source)
        ordered[est_lab] = _count_row(s, counts, est_lab)
        ordered[den_lab] = _entry_row(s, denoised, den_lab, "denoised")
    return ordered


def _table(s: _Setup, rows: dict[str, dict[str, float]], median: int | None) -> pd.DataFrame:
    table = pd.DataFrame.from_dict(rows, orient="index").reindex(columns=_columns(s)).astype(np.float64)
    table.index.name = "release"
    table.attrs["evaluate"] = {
        "k": s.k,
        "delta_km": [float(v) for v in s.deltas],
        "n_regions": s.n_regions,
        "regions": s.regions_from,
        "n_zones": s.zn.size if s.zn is not None else 0,
        "one_median": median,
    }
    return table

"""One ε-LDP aggregate report per trajectory: the release of :func:`geoldp.report`.

Steps (the same order as every geoldp release): validate the public parameters (zones, statistic, ε,
oracle, padding, ``rng``) before any row is read; validate the rows (:func:`geoldp._core.frames.extract`);
check the accountant before any draw; draw **one** stream key; report row ``i`` with the ChaCha20 stream
``i`` (so a seeded release does not depend on chunking); assemble the report table and its ledger.

The statistic of a trajectory is computed from its vertices' zones (:mod:`geoldp.zones`) and lives only
inside this call. :doc:`/reports` ("Statistics") gives the three statistics (``"visited_zone"``, ``"od"``,
``"transitions"``) with their domains, the outside category and padding-and-sampling; the set-valued
domains also hold the padding dummies, and a trajectory's set of transitions (ordered pairs a ≠ b of
consecutive distinct zones) may be empty. The sampled item is drawn from the same private stream as the
oracle, and the whole report is ε-LDP because the oracle is ε-LDP for every item (a mixture of ε-LDP
outputs).
"""

from __future__ import annotations

import hashlib
import json
import warnings
from typing import Any

import numpy as np
import pandas as pd

from geoldp import _release
from geoldp._core import frames as _frames
from geoldp._core.area import warn_if_area_from
from geoldp._core.errors import GeoLDPWarning
from geoldp._core.ledger import ReleaseLedger, attach, ledger_of
from geoldp._core.progress import stages
from geoldp._core.randomness import resolve_rng
from geoldp._core.validation import (
    MAX_PAD_LENGTH,
    check_bool,
    check_int_range,
    check_option,
    check_release_epsilon,
)
from geoldp._core.versions import geoldp_version
from geoldp.mechanisms import krr_constants
from geoldp.mechanisms import oracles as fo
from geoldp.zones import Zones, check_zones, zone_of_vertices

#: The statistics a report can carry.
STATISTICS = ("visited_zone", "od", "transitions")

#: Largest domain ``oracle="oue"`` may be asked for: 2²⁰ values. An OUE report holds one bit per value
#: (128 KiB a report here); beyond it a table of reports would not fit in memory ("auto" picks OLH there).
MAX_OUE_DOMAIN = 1 << 20

#: Smallest possible set size of each statistic (public): padding needs pad_length − this many dummies.
_MIN_SET = {"visited_zone": 1, "od": 1, "transitions": 0}


class ReportScheme:
    """The public configuration of a report (domain, padding, oracle): no private data.

    Attributes
    ----------
    n_zones : int
        Number of zones; value ``n_zones`` is the outside category.
    base : int
        Number of real domain values (zones + 1, or its square for pairs).
    n_dummies : int
        Dummy values ``base, …, base + n_dummies − 1``.
    oracle : geoldp.mechanisms.oracles.Oracle
        Over ``d = base + n_dummies`` values.
    """

    __slots__ = ("base", "n_dummies", "n_zones", "oracle", "pad_length", "statistic")

    def __init__(self, statistic: str, n_zones: int, pad_length: int, oracle: fo.Oracle) -> None:
        k = n_zones + 1
        self.statistic = statistic
        self.n_zones = n_zones
        self.base = k if statistic == "visited_zone" else k * k
        self.pad_length = pad_length
        self.n_dummies = pad_length - _MIN_SET[statistic]
        self.oracle = oracle

    @property
    def d(self) -> int:
        """Oracle domain size."""
        return self.base + self.n_dummies


def scheme(
    statistic: str, n_zones: int, epsilon: float, *, oracle: str = "auto", pad_length: int = 1, caller: str
) -> ReportScheme:
    """Validate a report configuration and choose the oracle (public inputs only).

    Raises
    ------
    TypeError, ValueError
        An unknown statistic or oracle, an invalid ε, or ``pad_length`` < 1 (naming the parameter).
    """
    statistic = check_option(statistic, "statistic", STATISTICS, caller, case_insensitive=True)
    epsilon = check_release_epsilon(epsilon, caller=caller)
    oracle = check_option(oracle, "oracle", ("auto", *fo.ORACLES), caller, case_insensitive=True)
    pad_length = check_int_range(pad_length, "pad_length", caller=caller, minimum=1)
    if pad_length > MAX_PAD_LENGTH:
        raise ValueError(
            f"The 'pad_length' parameter of {caller} must be an int in the range [1, {MAX_PAD_LENGTH}] "
            "(geoldp.reports.MAX_PAD_LENGTH): padding a trajectory's set to more items than it visits only "
            f"adds dummies, and the estimate's error grows with pad_length. Got {pad_length} instead."
        )
    if statistic == "od" and pad_length != 1:
        raise ValueError(
            f"The 'pad_length' parameter of {caller} must be 1 for statistic='od' (one pair per trajectory)."
        )
    probe = ReportScheme(statistic, n_zones, pad_length, fo.oracle("krr", 2, epsilon))
    d = probe.d
    if d < 2:
        raise ValueError(f"The report domain of {caller} must have at least 2 values.")
    name = fo.choose_oracle(d, epsilon) if oracle == "auto" else oracle
    if name == "oue" and d > MAX_OUE_DOMAIN:
        raise ValueError(
            f"The 'oracle' parameter of {caller} is 'oue' over {d} values, more than "
            f"geoldp.reports.MAX_OUE_DOMAIN = {MAX_OUE_DOMAIN}: an OUE report holds one bit per value, so "
            "the reports would not fit in memory. Use oracle='olh' or 'auto', or fewer zones."
        )
    return ReportScheme(statistic, n_zones, pad_length, fo.oracle(name, d, epsilon))


def warn_if_no_data_level(des: ReportScheme, n: int, *, stacklevel: int = 2) -> None:
    """Warn, before any draw, when the release cannot be told from no data (public inputs only).

    The standard error of one domain value's estimated share of ``n`` reports,
    ``sqrt(Var₁/n)`` with ``Var₁`` the oracle's data-independent count variance per report
    (:meth:`~geoldp.mechanisms.oracles.Oracle.count_variance`), is compared with the share ``1/base`` each
    real value has in a uniform (no-data) population. When the noise is at least that large, no value's
    estimate can be told from that of an empty value or a uniform population: one closed-form
    :class:`~geoldp.GeoLDPWarning`, naming the number of reports that would bring it below.
    """
    if n <= 0:
        return
    var1 = float(des.oracle.count_variance(1.0))
    se_share = (var1 / n) ** 0.5
    fair = 1.0 / des.base
    if se_share < fair:
        return
    n_needed = int(var1 * des.base**2) + 1  # the smallest n with sqrt(var1 / n) < 1 / base
    what = "zone" if des.statistic == "visited_zone" else "zone pair"
    warnings.warn(
        f"With {n} report(s) at epsilon={des.oracle.epsilon:g} over {des.base} values "
        f"(statistic={des.statistic!r}, oracle={des.oracle.name!r}), the standard error of one {what}'s "
        f"estimated share ({se_share:.3g}) is at least the share each {what} has when nothing is known "
        f"(1/{des.base} = {fair:.3g}): estimates from these reports will not be told from no data. About "
        f"{n_needed} reports would bring that standard error below 1/{des.base} at this epsilon (this "
        "warning's target; geoldp plan's users_needed targets half the better no-data baseline's error "
        "instead). Fewer zones, a larger epsilon or another design may fit: compare the designs before "
        "collecting with geoldp.plan(points, zones, epsilon=..., n=...) (command line: geoldp plan).",
        GeoLDPWarning,
        stacklevel=stacklevel + 1,
    )


def statistic_items(statistic: str, zone: np.ndarray, offsets: np.ndarray, n_zones: int) -> tuple:
    """Per-trajectory item sets as CSR ``(set_offsets, items)`` from the vertices' zone positions.

    Private data in, private data out: the caller draws the reports from it and drops it.
    """
    k = n_zones + 1
    n = offsets.shape[0] - 1
    codes = np.repeat(np.arange(n, dtype=np.int64), np.diff(offsets))
    if statistic == "od":
        items = zone[offsets[:-1]] * k + zone[offsets[1:] - 1]
        return np.arange(n + 1, dtype=np.int64), items.astype(np.int64)
    if statistic == "visited_zone":
        keys = np.unique(codes * k + zone)  # distinct (trajectory, zone), sorted
    else:
        # consecutive vertices of one trajectory in different zones
        same_traj = codes[1:] == codes[:-1]
        moved = same_traj & (zone[1:] != zone[:-1])
        keys = np.unique(codes[1:][moved] * (k * k) + zone[:-1][moved] * k + zone[1:][moved])
    width = k if statistic == "visited_zone" else k * k
    traj, items = np.divmod(keys, width)
    set_offsets = np.searchsorted(traj, np.arange(n + 1), side="left").astype(np.int64)
    return set_offsets, items.astype(np.int64)


def _draw(
    des: ReportScheme, key: np.ndarray, set_offsets: np.ndarray, items: np.ndarray, offset: int = 0
) -> dict[str, Any]:
    """Draw the reports (trajectory i on stream ``offset + i``); returns the report columns."""
    n = set_offsets.shape[0] - 1
    o = des.oracle
    args = (key, np.int64(offset), set_offsets, items, np.int64(des.pad_length), np.int64(des.base))
    if o.name == "krr":
        lie = krr_constants(o.d, o.epsilon)[2]
        out = fo.sample_krr(*args, np.int64(o.d), lie, np.empty(n, dtype=np.int64))
        return {"report": out}
    if o.name == "olh":
        lie = krr_constants(o.g, o.epsilon)[2]
        seeds = np.empty(n, dtype=np.int64)
        out = fo.sample_olh(*args, np.int64(o.g), lie, seeds, np.empty(n, dtype=np.int64))
        return {"seed": seeds, "report": out}
    p, q = fo.oue_probabilities(o.epsilon)
    packed = fo.sample_oue(*args, np.int64(o.d), p, q, np.zeros((n, (o.d + 7) // 8), dtype=np.uint8))
    return {"bits": [row.tobytes() for row in packed]}


def release_provenance(des: ReportScheme, zones: Zones, policy: str, kind: str) -> dict[str, Any]:
    """The public ledger of a report release before :func:`geoldp.accounting.finish_release`."""
    o = des.oracle
    eps = float(o.epsilon)
    return {
        "mechanism": "report",
        "epsilon": eps,
        "unit": "one row = one trajectory",
        "statistic": des.statistic,
        "oracle": o.name,
        "oracle_parameters": o.parameters(),
        "domain": {
            "zones": des.n_zones,
            "outside": "one extra category for vertices in no zone (the first zone wins where zones overlap)",
            "base": des.base,
            "pad_length": des.pad_length,
            "dummies": des.n_dummies,
            "size": des.d,
            "zones_digest": zones.digest(),
            "zones_crs": zones.crs.to_string(),
        },
        "ledger": {
            "unit": "one trajectory",
            "max_total_epsilon": eps,
            "by_kind": {f"{o.name} report": eps},
        },
        "input": {"geometry": kind},
        "unprotected_columns": [],
        "geoldp_version": geoldp_version(),
        "rng": policy,
    }


def _content_id(table: pd.DataFrame, provenance: dict[str, Any]) -> str:
    """A digest of a seeded release (reports, index, ledger): reproducible byte for byte, never the seed."""
    h = hashlib.sha256(json.dumps(provenance, sort_keys=True, default=str).encode())
    h.update(pd.util.hash_pandas_object(table, index=True).to_numpy().tobytes())
    return h.hexdigest()[:32]


def seeded_release_id(table: pd.DataFrame, ledger: ReleaseLedger) -> ReleaseLedger:
    """A seeded table's ``release_id`` is a digest of the table and its ledger (else the random one kept)."""
    if ledger.settings.get("rng") != "seeded":
        return ledger
    record = ledger.record()
    record.pop("release_id", None)
    return ledger.replace(release_id=_content_id(table, record))


def report(
    gdf: Any,
    zones: Any,
    *,
    statistic: str = "visited_zone",
    epsilon: float,
    oracle: str = "auto",
    pad_length: int = 1,
    rng: Any = None,
    accountant: Any = None,
    user_col: Any = None,
    on_invalid: str = "raise",
    user_budget: str = "trajectory",
    max_per_user: int | None = None,
    select_trips: str = "first",
    progress: bool = False,
) -> pd.DataFrame:
    """One ε-LDP aggregate report per trajectory (row) over public zones.

    Parameters
    ----------
    gdf : geopandas.GeoDataFrame
        One LineString per row (one trajectory), or Point rows (each a one-point trajectory). Any CRS.
    zones : GeoDataFrame or GeoSeries of Polygons/MultiPolygons
        **Public** zones (for example :func:`geoldp.zone_grid` over the public points). A vertex
        in no zone counts as the *outside* category, which is part of the domain; where zones overlap
        the first one wins.
    statistic : {"visited_zone", "od", "transitions"}, default "visited_zone"
        What each trajectory reports (see the module notes).
    epsilon : float
        The budget of one trajectory (one row), 0 < ε ≤ 700; with ``user_budget="split"`` the budget of
        one user in this release.
    oracle : {"auto", "krr", "oue", "olh"}, default "auto"
        The frequency oracle; ``"auto"`` takes the smallest count variance for the public domain size
        (:func:`geoldp.reports.choose_oracle`). With ``user_budget="split"`` one oracle serves every
        part: the one with the smallest summed count variance over the parts (each part's rows at its
        budget; both are shown by the output's ``epsilon`` column).
    pad_length : int, default 1
        Padding-and-sampling length ℓ for the set statistics (must be 1 for ``"od"``). Counts of
        trajectories visiting a zone are unbiased when no trajectory has more than ℓ items; ℓ = 1 reports
        one uniformly sampled zone (or transition).
    rng : {None, int, array_like[ints], SeedSequence, BitGenerator, Generator}, optional
        ``None`` (default): the operating system's CSPRNG. Anything else seeds NumPy: **experiments and
        tests only**.
    accountant : geoldp.BudgetAccountant, optional
        Charge every row ``epsilon`` to its user (needs ``user_col``), refusing before any draw a release
        that would take a user past the total (``user_budget="split"``: ``epsilon`` per user).
    user_col : column label, optional
        Each row's user id, for ``accountant``, ``user_budget`` and ``max_per_user`` (not released).
    on_invalid : {"raise", "null"}, default "raise"
        ``"null"``: invalid rows get a missing report instead of raising (this reveals which rows were
        invalid).
    user_budget : {"trajectory", "split"}, default "trajectory"
        ``"split"``: ``epsilon`` is each user's budget, shared by her k trajectories (ε/k each, rounded
        down); the rows of each k are reported as one part at ε/k, and the column ``"epsilon"`` holds each
        row's budget (it tells how many trajectories its user contributed; use ``max_per_user`` where
        that is sensitive). :func:`geoldp.reports.estimate_counts` debiases each part with its own
        budget. See :mod:`geoldp.budget_strategies`.
    max_per_user : int, optional
        Report at most this many trajectories per user (the others are dropped from the output, whose
        index tells which rows were kept); combined with ``"split"``, ε is shared by the kept ones.
    select_trips : {"first", "last", "random"}, default "first"
        Which trajectories ``max_per_user`` keeps (``"random"`` draws with ``rng``).
    progress : bool, default False
        Report the stages (the rows, the zones of their vertices, the draws) on a progress bar (tqdm; a
        widget in notebooks; one line per stage on the command line). The output does not change.

    Returns
    -------
    pandas.DataFrame
        One row per input row (same index and order; only the kept rows with ``max_per_user``): column
        ``report`` (k-RR: the reported value; OLH: with ``seed``) or ``bits`` (OUE: the packed bit vector,
        ``numpy.packbits`` order), and ``epsilon`` with ``user_budget="split"``.
        Its ledger (:func:`geoldp.ledger_of`) records the statistic, oracle and its parameters, domain, ε, RNG
        policy, a ``release_id``); estimate with :func:`geoldp.reports.estimate_counts`.

    Raises
    ------
    TypeError, ValueError
        Invalid parameters, zones or rows (all before any random draw).
    BudgetError
        With ``accountant``: a user would go past the total (nothing drawn or charged).

    Warns
    -----
    PrivacyWarning
        Point rows (each a one-point trip) with a column that looks like a time or a repeated trip id:
        they may be GPS fixes of longer trips, each reported at the full ε (group them first).
    GeoLDPWarning
        Before any draw, when the noise of one value's estimated share (closed form, from ε, the
        oracle, the domain size and the number of reports) is at least the share each value has in a
        uniform no-data population, with the number of reports that would be needed; compare designs
        with :func:`geoldp.plan`.

    Examples
    --------
    >>> import geopandas as gpd
    >>> from shapely.geometry import LineString
    >>> from geoldp import zone_grid
    >>> trips = gpd.GeoDataFrame(geometry=[LineString([(0.1, 0.1), (0.9, 0.9)])] * 500, crs="EPSG:4326")
    >>> zones = zone_grid((0.0, 0.0, 1.0, 1.0), cells=2)
    >>> rep = report(trips, zones, statistic="od", epsilon=2.0, rng=0)
    >>> from geoldp import ledger_of
    >>> led = ledger_of(rep)
    >>> led.settings["oracle"], led.settings["domain"]["size"], len(rep)
    ('oue', 25, 500)
    """
    caller = "geoldp.report"
    progress = check_bool(progress, "progress", caller=caller)
    gdf = _frames.check_frame(gdf, caller=caller)
    z = check_zones(zones, caller=caller)
    des = scheme(statistic, z.size, epsilon, oracle=oracle, pad_length=pad_length, caller=caller)
    _frames.warn_if_fixes(gdf, traj_id_col=None, caller=caller, option=None, ignore=(user_col,))
    warn_if_area_from(gdf, zones, what="zones", stacklevel=2)
    if user_budget != "trajectory" or max_per_user is not None or select_trips != "first":
        return _report_per_user(
            gdf,
            zones,
            des,
            oracle=oracle,
            epsilon=epsilon,
            rng=rng,
            accountant=accountant,
            user_col=user_col,
            on_invalid=on_invalid,
            user_budget=user_budget,
            max_per_user=max_per_user,
            select_trips=select_trips,
            caller=caller,
            progress=progress,
        )
    source = resolve_rng(rng)
    spend = _release.Spend(gdf, accountant, user_col, caller=caller)  # refuse, draw, commit: in order
    with stages("reporting", 3, enabled=progress) as stage:
        stage(f"checking {len(gdf)} rows")
        ft = _frames.extract(gdf, on_invalid=on_invalid, caller=caller)
        spend.refuse(gdf, des.oracle.epsilon)
        # the number of reports is released (one per valid row): a public input of the check
        warn_if_no_data_level(des, int(np.count_nonzero(ft.valid)), stacklevel=2)
        stage(f"zones of {ft.lon.shape[0]} vertices")
        set_offsets, items = _items(des, z, ft)
        stage(f"{des.oracle.name} reports over {des.d} values")
        key = spend.draw(source)  # once, after every check
        out = _table(des, key, set_offsets, items, ft, gdf.index, offset=0)
        del set_offsets, items  # private: never outlive the call
    prov = release_provenance(des, z, source.policy, ft.kind)
    prov["input"]["on_invalid"] = on_invalid
    attach(out, seeded_release_id(out, spend.finish(prov)))
    return out


def _report_per_user(
    gdf: Any, zones: Any, des: ReportScheme, *, oracle: str, caller: str, **kw: Any
) -> pd.DataFrame:
    """:func:`report` under a per-user budget: the shared driver of :mod:`geoldp.budget_strategies`."""
    from geoldp import accounting, budget_strategies

    on_invalid = kw.pop("on_invalid")
    progress = kw.pop("progress")
    _frames.extract(gdf, on_invalid=on_invalid, caller=caller)  # every row checked before any draw
    statistic, pad_length = des.statistic, des.pad_length

    def one(frame: Any, zs: Any, *, epsilon: float, traj_id_col: Any, rng: Any, oracle: str) -> pd.DataFrame:
        return report(
            frame,
            zs,
            statistic=statistic,
            epsilon=epsilon,
            oracle=oracle,
            pad_length=pad_length,
            rng=rng,
            on_invalid=on_invalid,
            progress=progress,  # each part's stages
        )

    def configure(parts: list[tuple[float, int]]) -> dict[str, Any]:
        if oracle.lower() != "auto":
            return {}
        return {"oracle": fo.split_oracle(des.d, parts)}

    def finish(
        combined: Any, base: ReleaseLedger, first: ReleaseLedger, points: Any
    ) -> tuple[Any, ReleaseLedger]:
        ledger = accounting.finish_release(base.record())  # a report has no P: its "points" record is empty
        return combined, seeded_release_id(combined, ledger)

    return budget_strategies.perturb_per_user(
        one,
        gdf,
        zones,
        traj_id_col=None,
        caller=caller,
        configure=configure,
        finish=finish,
        oracle=des.oracle.name,
        **kw,
    )


def _items(des: ReportScheme, z: Zones, ft: Any) -> tuple:
    """The private item sets of extracted trajectories ``ft`` (CSR, see :func:`statistic_items`)."""
    zone = zone_of_vertices(z, ft.lon, ft.lat)
    return statistic_items(des.statistic, zone, ft.offsets, z.size)


def _table(
    des: ReportScheme, key: np.ndarray, set_offsets: Any, items: Any, ft: Any, index: pd.Index, *, offset: int
) -> pd.DataFrame:
    """The report table of extracted trajectories ``ft`` (trajectory i on stream ``offset + i``)."""
    columns = _draw(des, key, set_offsets, items, offset)
    n_rows = len(index)
    rows = ft.traj_rows
    out = pd.DataFrame(index=index.copy())
    for name, values in columns.items():
        if name == "bits":
            col = np.full(n_rows, None, dtype=object)
            col[rows] = np.asarray(values, dtype=object)
            out[name] = col
        else:
            col = pd.array(np.zeros(n_rows, dtype=np.int64), dtype="Int64")
            col[:] = pd.NA
            col[rows] = values
            out[name] = col if not ft.valid.all() else np.asarray(col, dtype=np.int64)
    return out


def report_partition(
    part: Any, des: ReportScheme, zones: Zones, key: np.ndarray, *, offset: int, caller: str
) -> pd.DataFrame:
    """Reports of one partition of a partitioned release whose first row has global position ``offset``.

    Every row must be valid (``on_invalid="raise"``), so row ``offset + i`` uses stream ``offset + i``:
    the same stream as in the in-memory :func:`report` of the whole frame.
    """
    if len(part) == 0:
        return empty_table(des, part.index)
    ft = _frames.extract(part, on_invalid="raise", caller=caller)
    set_offsets, items = _items(des, zones, ft)
    return _table(des, key, set_offsets, items, ft, part.index, offset=offset)


def empty_table(des: ReportScheme, index: Any = None) -> pd.DataFrame:
    """A report table with no rows and the columns (and dtypes) of the design's oracle."""
    index = pd.RangeIndex(0) if index is None else index[:0]
    name = des.oracle.name
    if name == "oue":
        return pd.DataFrame({"bits": pd.Series([], dtype=object)}, index=index)
    cols = ["seed", "report"] if name == "olh" else ["report"]
    return pd.DataFrame({c: np.array([], dtype=np.int64) for c in cols}, index=index)


def n_reports(table: pd.DataFrame) -> int:
    """Number of non-missing reports in a report table."""
    col = "bits" if "bits" in table.columns else "report"
    return int(table[col].notna().sum())


def report_ledger(table: Any, *, caller: str) -> ReleaseLedger:
    """The ledger of a report table, checked."""
    if not isinstance(table, pd.DataFrame):
        raise TypeError(
            f"The 'reports' parameter of {caller} must be the DataFrame returned by geoldp.report. "
            f"Got {type(table).__name__} instead."
        )
    led = ledger_of(table)
    if led is None or led.mechanism != "report":
        raise ValueError(
            f"The 'reports' passed to {caller} carry no report ledger: pass the table returned by "
            "geoldp.report, or parts of it (pandas keeps the ledger through slicing)."
        )
    return led


def scheme_of(led: ReleaseLedger, epsilon: float | None = None) -> ReportScheme:
    """Rebuild the public design from a ledger (at ``epsilon``: one part of a split table)."""
    dom, statistic = led.settings["domain"], str(led.settings["statistic"])
    eps = float(led.epsilon if epsilon is None else epsilon)
    des = ReportScheme(statistic, int(dom["zones"]), int(dom["pad_length"]), fo.oracle("krr", 2, eps))
    oracle = fo.oracle(str(led.settings["oracle"]), des.d, eps)
    return ReportScheme(statistic, des.n_zones, des.pad_length, oracle)

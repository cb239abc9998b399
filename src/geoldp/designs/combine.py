"""One estimate per query from every kind of release about the same population (post-processing).

:func:`combine` weighs several releases of the **same** trajectories (a TP/ATP/PointEM trajectory release,
report tables, an LDPTrace synthetic set) by inverse variance, query by query:

    x̂ = Σ_i w_i x̂_i / Σ_i w_i,   w_i = 1 / σ̂_i²,   σ̂² = 1 / Σ_i w_i,   interval x̂ ± z·σ̂.

:doc:`/reports` ("One estimate from several releases") says where each part's estimate, variance and
bias come from, why every report's variance is taken at the combined estimate, how padded reports are
used, and which parts are refused or left out. What is written only here:

Independence. Releases of the same trajectories are independent given the trajectories when each drew
its own noise (each is a separate ε-LDP release; by sequential composition a user spends the sum of their
budgets, which the accountant checks when they are made); then σ̂² ≤ min_i σ̂_i² (every part's variance at
the same count). The common value at which the reports' variances are evaluated, the combined estimate,
is a fixed point, found by iteration. Parts that cannot be read are refused (``ValueError``) too.

Padded reports' upper end. A visited-zone report with ``pad_length`` ℓ below the public bound
``max_set_size`` M estimates Σ min(1, ℓ/|S|) over the trajectories visiting a zone. With weight shares
sᵢ, the combination's mean is at least c − Σ sᵢ(1 − ℓᵢ/M)·min(c, Nᵢ) (Nᵢ the trajectories with at least
ℓᵢ zones, bounded from the padding dummies), and the upper end is the largest count c consistent with
that and x̂ + z·σ̂. As in :func:`geoldp.reports.estimate_counts` the level is split by the union bound
(half of 1 − level to the lower end, a quarter to x̂ + z·σ̂, a quarter to the Nᵢ bounds), so the interval
covers the count at the level whatever the set sizes; with one padded report alone it is that report's
own interval.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from typing import Any

import numpy as np
import pandas as pd

from geoldp import layers, ldptrace
from geoldp._core.ledger import ReleaseLedger, ledger_of, release_parts, require
from geoldp._core.progress import stages
from geoldp._core.randomness import resolve_rng
from geoldp._core.validation import check_bool, check_int_range, check_option, check_real
from geoldp.questions import Question, answer_table
from geoldp.reports.estimators import DebiasedCounts, debiased_counts
from geoldp.reports.release import n_reports, statistic_items
from geoldp.zones import check_zones, zone_of_vertices

#: The questions :func:`combine` answers.
QUESTIONS = tuple(q.value for q in Question if q is not Question.HOTSPOTS)

#: The report statistic that answers each question (range counts over regions are visits of the regions).
_REPORT_STATISTIC = {"zone_visits": "visited_zone", "od_flows": "od", "range_counts": "visited_zone"}


def _normal_quantile(level: float) -> float:
    from scipy.stats import norm

    return float(norm.ppf(0.5 + level / 2.0))


#: The kind of part each release mechanism makes.
_KINDS = {
    "report": "report",
    "ldptrace": "synthetic",
    "tp": "trajectory",
    "atp": "trajectory",
    "pointem": "trajectory",
}


def _query_index(zones: Any, question: str) -> pd.Index:
    """Zones (or regions) by their index labels; ordered zone pairs for OD flows."""
    labels = zones.index
    if question != "od_flows":
        return pd.Index(labels, name="region" if question == "range_counts" else "zone")
    a, b = np.divmod(np.arange(len(labels) ** 2), len(labels))
    return pd.MultiIndex.from_arrays(
        [np.asarray(labels, dtype=object)[a], np.asarray(labels, dtype=object)[b]],
        names=["origin", "destination"],
    )


def _analysis_seed(parts: Any, zones_digest: str, question: str, options: dict[str, Any], n_boot: int) -> Any:
    """A seed from a digest of the parts (ledger records and contents, in order) and the settings."""
    h = hashlib.sha256(b"geoldp.combine key v2")
    h.update(repr((zones_digest, question, sorted(options.items(), key=str), n_boot)).encode())
    for part in parts:
        led = ledger_of(part)
        # the ledger's public settings, without what differs between copies of one release's content
        # (its random id, what an accountant charged)
        record = None if led is None else dataclasses.replace(led, release_id=None, accounting=None).record()
        h.update(json.dumps(record, sort_keys=True, default=str).encode())
        if isinstance(part, pd.DataFrame):
            for name in part.columns:
                column = part[name]
                to_wkb = getattr(column, "to_wkb", None)
                data = b"\0".join(to_wkb()) if callable(to_wkb) else _column_bytes(column)
                h.update(repr(name).encode() + b"\0" + data)
    return np.random.SeedSequence(np.frombuffer(h.digest(), dtype=np.uint32).tolist())


def _column_bytes(column: pd.Series) -> bytes:
    """A column's values as bytes for the digest: pandas' fixed-key row hashes and the dtype."""
    try:
        rows = pd.util.hash_pandas_object(column, index=False).to_numpy()
    except TypeError:  # unhashable cells (lists, dicts): their text
        return repr(column.tolist()).encode()
    return str(column.dtype).encode() + b"\0" + rows.tobytes()


def _population_size(part: Any, kind: str, led: ReleaseLedger) -> int:
    if kind == "report":
        return n_reports(part)
    if kind == "synthetic":
        return int(led.settings["n_users"])
    return len(part)


# ------------------------------------------------------------------------------------------------------
# one part's estimate and standard error for every query cell


def _report_part(table: Any, zones: Any, max_set_size: int | None) -> DebiasedCounts:
    """A report's debiased counts (refuses other zones by their digest); rows in the zones' order."""
    led = ledger_of(table)
    statistic = None if led is None else led.settings.get("statistic")
    bound = max_set_size if statistic in ("visited_zone", "transitions") else None
    return debiased_counts(table, zones, max_set_size=bound, caller="geoldp.combine")


def _trajectory_part(
    released: Any,
    zones: Any,
    question: str,
    index: pd.Index,
    points: Any,
    options: dict[str, Any],
    source: Any,
) -> tuple[np.ndarray, np.ndarray]:
    from geoldp import estimate

    points = layers.points_for(released, points)  # rebuilt from the ledger's recipe, or checked
    est = np.zeros(len(index))
    var = np.zeros(len(index))
    z = _normal_quantile(float(options.get("level", 0.95)))
    known = np.ones(len(index), dtype=bool)
    # a user_budget="split" release is estimated part by part (disjoint trajectories): sums add up
    for piece in release_parts(released):
        pop = estimate.fit(piece, points, rng=source, **options)
        if question == "zone_visits":
            table = pop.visit_counts(zones)
        elif question == "range_counts":
            table = pop.range_counts(zones)
        else:
            table = pop.od_flows(zones)
        table = table.reindex(index)
        se = (table["upper"] - table["lower"]).to_numpy(np.float64) / (2.0 * z)
        known &= table["estimate"].notna().to_numpy() & np.isfinite(se)
        est += np.nan_to_num(table["estimate"].to_numpy(np.float64))
        var += np.nan_to_num(se) ** 2
    # a pair the fit has no row (or no interval) for carries no variance to weigh it by
    est[~known] = np.nan
    se = np.sqrt(var)
    se[~known] = np.nan
    return est, se


def _synthetic_counts(
    cells: np.ndarray, offsets: np.ndarray, zone_of_cell: np.ndarray, question: str, k: int
) -> np.ndarray:
    """Trajectories visiting each zone (or per ordered zone pair) of grid trajectories."""
    zone = zone_of_cell[cells]
    stat = "od" if question == "od_flows" else "visited_zone"
    _, items = statistic_items(stat, zone, offsets, k)
    width = (k + 1) ** 2 if stat == "od" else k + 1
    counts = np.bincount(items, minlength=width).astype(np.float64)
    return counts.reshape(k + 1, k + 1)[:k, :k].reshape(-1) if stat == "od" else counts[:k]


def _synthetic_part(
    syn: Any, zones: Any, question: str, led: ReleaseLedger, n_boot: int, source: Any
) -> tuple[np.ndarray, np.ndarray]:
    z = check_zones(zones, caller="geoldp.combine")
    grid, cells, offsets, lon, lat = ldptrace.synthetic_cells(syn, caller="geoldp.combine")
    zone_of_cell = zone_of_vertices(z, lon, lat)  # the synthetic vertices are cell centres
    n_users, n_syn = int(led.settings["n_users"]), int(offsets.shape[0] - 1)
    scale = n_users / n_syn
    est = _synthetic_counts(cells, offsets, zone_of_cell, question, z.size) * scale
    # parametric bootstrap: the synthetic set plays the population; collect, fit and synthesise again
    lengths = np.diff(offsets)
    reps = np.empty((n_boot, est.shape[0]))
    for b in range(n_boot):
        pick = np.asarray(source.integers(n_syn, size=n_users), dtype=np.int64)  # n_users trajectories
        lens = lengths[pick]
        off = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
        flat = np.repeat(offsets[:-1][pick] - off[:-1], lens) + np.arange(int(off[-1]))
        model = ldptrace.collect(
            cells[flat],
            off,
            grid,
            led.epsilon,
            length_domain=int(led.settings["length_domain"]),
            quantile=float(led.settings["quantile"]),
            rng=source,
        )
        c2, o2 = ldptrace.synthesize_cells(model, n_syn, rng=source)
        reps[b] = _synthetic_counts(c2, o2, zone_of_cell, question, z.size) * scale
    return est, reps.std(axis=0, ddof=1)


def part_estimates(
    parts: Any,
    zones: Any,
    *,
    question: str = "zone_visits",
    points: Any = None,
    max_set_size: int | None = None,
    estimate_options: dict[str, Any] | None = None,
    n_boot: int = 20,
    rng: Any = None,
) -> tuple[pd.DataFrame, pd.DataFrame, list[dict[str, Any]]]:
    """Every part's estimate and standard error per query, before they are combined.

    Parameters and checks as in :func:`combine`.

    Returns
    -------
    (estimates, std_errors, parts)
        Two DataFrames with one column per part used (``part0``, ``part1`` ..., by position in
        ``parts``) and one row per query (NaN: the part says nothing there), and the list describing
        every part (used or not, and why). A report's standard error here is its own (its variance at
        its own estimate); :func:`combine` weighs it by its variance at the combined estimate.
    """
    ests, ses, described, _ = _estimates(
        parts,
        zones,
        question=question,
        points=points,
        max_set_size=max_set_size,
        estimate_options=estimate_options,
        n_boot=n_boot,
        rng=rng,
    )
    return ests, ses, described


def _describe_part(
    i: int, part: Any, seen: dict[str, int], *, question: str, zones_digest: str, n_boot: int
) -> dict[str, Any]:
    """What part ``i`` is and whether it answers ``question``; refuses a repeat or other zones."""
    caller = "geoldp.combine"
    led = ledger_of(part)
    kind = "" if led is None else _KINDS.get(led.mechanism.lower(), "")
    if led is None or not kind:
        raise ValueError(
            f"Part {i} passed to {caller} is not a geoldp release with its ledger: "
            "give report tables, TP/ATP/PointEM releases or synthetic sets as returned (or read back "
            "with their ledger sidecar)."
        )
    rid = led.release_id
    if isinstance(rid, str):
        if rid in seen:
            raise ValueError(
                f"Parts {seen[rid]} and {i} passed to {caller} are the same release (release id "
                f"{rid[:12]}...): their noise is not independent, so they cannot be combined."
            )
        seen[rid] = i
    info: dict[str, Any] = {
        "part": i,
        "kind": kind,
        "mechanism": led.mechanism,
        "epsilon": led.epsilon,
        "release_id": rid,
        "trajectories": _population_size(part, kind, led),
        "used": True,
        "reason": "",
        "unbiased": kind == "report",
    }
    if kind == "report":
        statistic = led.settings.get("statistic")
        if statistic != _REPORT_STATISTIC[question]:
            info.update(used=False, reason=f"a report of {statistic!r} does not answer {question}")
        elif led.settings["domain"].get("zones_digest") != zones_digest:
            raise ValueError(
                f"Part {i} passed to {caller} is a report over other zones than 'zones' (its ledger's zone "
                "digest differs): every part must be about the same zones."
            )
    elif kind == "trajectory":
        info["reason"] = "model-based estimate (geoldp.estimate); its interval gives the variance"
    else:
        info["reason"] = f"model-based (LDPTrace synthesis); variance from {n_boot} bootstrap re-syntheses"
    return info


def _estimates(
    parts: Any,
    zones: Any,
    *,
    question: str,
    points: Any,
    max_set_size: int | None,
    estimate_options: dict[str, Any] | None,
    n_boot: int,
    rng: Any,
    progress: bool = False,
) -> tuple[pd.DataFrame, pd.DataFrame, list[dict[str, Any]], dict[str, DebiasedCounts]]:
    """:func:`part_estimates`, and the debiased counts of every report part used (by column)."""
    caller = "geoldp.combine"
    question = check_option(question, "question", QUESTIONS, caller, case_insensitive=True)
    from geoldp.estimate import MAX_BOOT

    n_boot = check_int_range(n_boot, "n_boot", minimum=2, maximum=MAX_BOOT, caller=caller)
    if isinstance(parts, pd.DataFrame) or not isinstance(parts, list | tuple):
        raise TypeError(
            f"The 'parts' parameter of {caller} must be a list of releases (report tables, trajectory "
            "releases, synthetic sets). Got "
            f"{type(parts).__name__}; wrap a single release in a list."
        )
    if not parts:
        raise ValueError(f"The 'parts' parameter of {caller} is empty: give at least one release.")
    z = check_zones(zones, caller=caller)
    index = _query_index(z.series, question)
    options = dict(estimate_options or {})
    options.setdefault("level", 0.95)
    # once: every fit and bootstrap draws from it; by default a digest of what is analysed, so that two
    # analysts get the same answer from the same files
    source = resolve_rng(_analysis_seed(parts, z.digest(), question, options, n_boot) if rng is None else rng)

    described: list[dict[str, Any]] = []
    seen: dict[str, int] = {}
    for i, part in enumerate(parts):
        described.append(
            _describe_part(i, part, seen, question=question, zones_digest=z.digest(), n_boot=n_boot)
        )
    used = [d for d in described if d["used"]]
    if not used:
        reasons = "; ".join(f"part {d['part']}: {d['reason']}" for d in described)
        raise ValueError(f"No part passed to {caller} answers {question}: {reasons}.")
    first = used[0]
    for d in used[1:]:
        if d["trajectories"] != first["trajectories"]:
            raise ValueError(
                f"Parts {first['part']} and {d['part']} passed to {caller} are not about the same "
                "population: "
                f"{first['trajectories']} and {d['trajectories']} trajectories. Combine only releases of the "
                "same trajectories (for example both halves of geoldp.hybrid)."
            )
    ests, ses, counts = {}, {}, {}
    with stages("combining", len(used), enabled=progress) as report:
        for d in used:
            report(f"part {d['part']}: {_STAGE[d['kind']]} of {d['trajectories']} trajectories")
            part = parts[d["part"]]
            if d["kind"] == "report":
                dc = _report_part(part, zones, max_set_size)
                d["unbiased"], d["reason"] = not dc.padded, _report_reason(dc)
                counts[f"part{d['part']}"] = dc
                e, s = dc.estimate, dc.std_error  # zones (pairs) in their positions' order, as index is
            elif d["kind"] == "trajectory":
                e, s = _trajectory_part(part, zones, question, index, points, options, source)
            else:
                led = require(part, what=f"Part {d['part']}", caller=caller)
                e, s = _synthetic_part(part, zones, question, led, n_boot, source)
            ests[f"part{d['part']}"], ses[f"part{d['part']}"] = e, s
    return pd.DataFrame(ests, index=index), pd.DataFrame(ses, index=index), described, counts


#: What estimating a part of each kind does (the progress stage names).
_STAGE = {
    "report": "debiasing the reports",
    "trajectory": "fitting the population model",
    "synthetic": "bootstrap re-syntheses",
}


def _report_reason(dc: DebiasedCounts) -> str:
    if not dc.padded:
        return "unbiased" if dc.statistic == "od" else f"unbiased (pad_length={dc.pad_length} ≥ max_set_size)"
    return (
        f"padded (pad_length={dc.pad_length} < max_set_size={dc.max_set_size}): estimates "
        "Σ min(1, ℓ/|S|) over the trajectories visiting a zone, at most their number; the upper end "
        "allows for the visits it misses"
    )


def combine(
    parts: Any,
    zones: Any,
    *,
    question: str = "zone_visits",
    points: Any = None,
    level: float = 0.95,
    max_set_size: int | None = None,
    estimate_options: dict[str, Any] | None = None,
    n_boot: int = 20,
    rng: Any = None,
    progress: bool = False,
) -> pd.DataFrame:
    """One estimate per zone (or zone pair, or region) from several releases of the same trajectories.

    Parameters
    ----------
    parts : list
        Releases of the same trajectories, in any mix: report tables (:func:`geoldp.report`),
        TP/ATP/PointEM releases (``gdf.ldp.perturb``) and LDPTrace synthetic sets
        (:func:`geoldp.synthesize`), each with its ledger.
    zones : GeoDataFrame or GeoSeries of polygons
        The public zones (for ``"range_counts"``: the regions). Report parts must have been made over
        these zones (checked against their ledger).
    question : {"zone_visits", "od_flows", "range_counts"}, default "zone_visits"
        Trajectories visiting each zone; per ordered pair (first zone, last zone); passing through each
        region.
    points : PointSet, GeoDataFrame or GeoSeries of Points, optional
        The public points of the trajectory parts; default rebuilt from their ledger's recipe.
    level : float, default 0.95
        Coverage of the intervals.
    max_set_size : int, optional
        A **public** bound M on the number of zones (the outside category included) one trajectory
        visits, known without looking at the data, for the visited-zone reports (as in
        :func:`geoldp.reports.estimate_counts`; default: every zone and the outside category). A report
        with ``pad_length`` ≥ M estimates the visit counts without bias; one with a smaller
        ``pad_length`` is *padded* (see Notes).
    estimate_options : dict, optional
        Passed to :func:`geoldp.estimate.fit` for trajectory parts (``n_candidates``, ``n_boot`` ...).
    n_boot : int, default 20
        Bootstrap re-syntheses of a synthetic part, for its variance (2 to ``geoldp.estimate.MAX_BOOT``).
    rng : optional
        Randomness of the trajectory fits and the bootstrap. ``None``: derived from a digest of the parts
        (their ledgers and contents) and the settings, so the same releases give the same answer on any
        machine (post-processing: no privacy cost); an int or a generator: that stream instead.
    progress : bool, default False
        Report the parts as they are estimated on a progress bar (tqdm; a widget in notebooks; one line
        per part on the command line). A trajectory part's model fit is the long one (tens of seconds
        for thousands of trajectories). The result does not change.

    Returns
    -------
    pandas.DataFrame
        The answer table (:func:`geoldp.designs.answer_table`): one row per zone (index ``zone``), region
        (``region``) or ordered zone pair (``origin``, ``destination``); columns ``estimate`` (the count:
        ``raw`` kept inside [``lower``, ``upper``]), ``lower``, ``upper`` (within [0, number of
        trajectories]), ``std_error`` (of ``raw``), ``supported``, ``raw`` (the inverse-variance
        combination, unbiased when every part used is: it may be negative or above the number of
        trajectories), then ``parts`` (how many parts weigh on the row; 0 and NaN estimates where none
        does) and ``padded_weight`` (the share of the row's weight on padded reports, whose estimates
        are below the counts: 0 where the estimate is unbiased or model-based; where it is above 0 the
        upper end allows for the visits they miss and the interval is not symmetric).
        ``attrs["combine"]`` lists every part (kind, mechanism, ε, release id, number of trajectories,
        whether it was used and why, whether it is unbiased) and the mean weight of each part used.

    Raises
    ------
    TypeError, ValueError
        Not a list of releases; parts about another population or other zones, the same release twice,
        no part answering the question, an invalid option.

    Notes
    -----
    See the module notes for where each part's variance comes from, which parts are unbiased, and how
    padded reports are weighed. The variances of report parts are evaluated at the combined estimate, so
    the weights are estimated too: the combined interval is approximate in the same way as each part's
    normal interval.

    Examples
    --------
    >>> import geopandas as gpd
    >>> from shapely.geometry import LineString
    >>> import geoldp
    >>> from geoldp import zone_grid
    >>> trips = gpd.GeoDataFrame(geometry=[LineString([(0.1, 0.1), (0.9, 0.9)])] * 400, crs="EPSG:4326")
    >>> zones = zone_grid((0.0, 0.0, 1.0, 1.0), cells=2)
    >>> a = geoldp.report(trips, zones, epsilon=2.0, pad_length=2, rng=1)
    >>> b = geoldp.report(trips, zones, epsilon=2.0, pad_length=2, oracle="krr", rng=2)
    >>> out = geoldp.combine([a, b], zones)
    >>> out.columns.tolist(), int(out["parts"].max())
    (['estimate', 'lower', 'upper', 'std_error', 'supported', 'raw', 'parts', 'padded_weight'], 2)
    """
    caller = "geoldp.combine"
    level = check_real(level, "level", caller=caller)
    if not 0.0 < level < 1.0:
        raise ValueError(f"The 'level' parameter of {caller} must be in (0, 1). Got {level!r}.")
    options = dict(estimate_options or {})
    options.setdefault("level", level)
    progress = check_bool(progress, "progress", caller=caller)
    options.setdefault("progress", progress)  # a trajectory part's fit: its own stages
    ests, ses, described, counts = _estimates(
        parts,
        zones,
        question=question,
        points=points,
        max_set_size=max_set_size,
        estimate_options=options,
        n_boot=n_boot,
        rng=rng,
        progress=progress,
    )
    x = ests.to_numpy(np.float64, copy=True)
    cols = {c: j for j, c in enumerate(ests.columns)}
    if any(not dc.padded for dc in counts.values()):
        # an unbiased report estimates the counts themselves: a padded one would add its bias, which
        # the interval would have to allow for, for less variance than that costs; it is left out
        for col in [c for c, dc in counts.items() if dc.padded]:
            x[:, cols[col]] = np.nan
            del counts[col]
            described[int(col[4:])].update(
                used=False,
                reason=described[int(col[4:])]["reason"]
                + "; left out: an unbiased report estimates the counts themselves",
            )
    w, est, se = _weights_at_the_combined_estimate(x, ses.to_numpy(np.float64), cols, counts)
    ok = w > 0
    z = _normal_quantile(level)
    lower, upper = est - z * se, est + z * se
    padded = [c for c, dc in counts.items() if dc.padded]
    total = w.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        share = np.where(total[:, None] > 0, w / total[:, None], np.nan)
    padded_share = np.nan_to_num(share[:, [cols[c] for c in padded]].sum(axis=1))
    n = float(next(d["trajectories"] for d in described if d["used"]))
    if padded:
        hi = _padded_upper(est, se, share, level, n, [(cols[c], counts[c]) for c in padded])
        rows = padded_share > 0
        upper[rows] = np.maximum(lower, hi)[rows]
    # a count lies in [0, n]: the interval clipped to it still covers it, and the answer is the unbiased
    # combination (``raw``) kept inside its own interval
    lower = np.clip(lower, 0.0, n)
    upper = np.clip(upper, lower, n)
    out = answer_table(
        ests.index,
        np.clip(est, lower, upper),
        lower=lower,
        upper=upper,
        std_error=se,
        raw=est,
        question=Question(question),
        design="combine",
        covers=f"{100 * level:g} % interval of each cell's count, inverse-variance combined (cell by cell)",
    )
    out["parts"] = ok.sum(axis=1)
    out["padded_weight"] = padded_share
    mean_weight = np.nanmean(share, axis=0) if share.size else np.array([])
    for col, mw in zip(ests.columns, mean_weight, strict=True):
        described[int(col[4:])]["mean_weight"] = float(mw)
    out.attrs["combine"] = {
        "question": question,
        "level": level,
        "method": "inverse-variance weighting per query, report variances at the combined estimate",
        "parts": described,
    }
    return out


def _weights_at_the_combined_estimate(
    x: np.ndarray, s: np.ndarray, cols: dict[str, int], counts: dict[str, DebiasedCounts]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Inverse-variance weights, combined estimate and its standard error, per row.

    A report's variance formula depends on the count it estimates. Evaluated at the report's own
    estimate it gives a low draw a smaller variance (hence more weight) and the combination leans towards
    low draws, and towards a padded report, whose estimate is low by design. Every report's variance is
    therefore evaluated at one common value per row, the combined estimate itself: a fixed point, found
    by iterating from the plain mean of the parts. Other parts keep their own standard errors.
    """
    s = s.copy()
    known = np.isfinite(x)
    with np.errstate(invalid="ignore"):
        mean = np.nanmean(np.where(known, x, np.nan), axis=1) if x.shape[1] else np.zeros(x.shape[0])
    c = np.nan_to_num(mean)
    for _ in range(100):
        for col, dc in counts.items():
            s[:, cols[col]] = dc.std_error_at(c)
        ok = known & np.isfinite(s) & (s > 0)
        w = np.where(ok, 1.0 / np.where(ok, s, 1.0) ** 2, 0.0)
        total = w.sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            est = (w * np.where(ok, x, 0.0)).sum(axis=1) / total
        new = np.nan_to_num(est)
        step = np.max(np.abs(new - c), initial=0.0)
        c = new
        if not counts or step <= 1e-10 * max(1.0, np.max(np.abs(c), initial=0.0)):
            break
    with np.errstate(invalid="ignore", divide="ignore"):
        se = 1.0 / np.sqrt(total)
    est[total == 0] = np.nan
    return w, est, se


def _padded_upper(
    est: np.ndarray,
    se: np.ndarray,
    share: np.ndarray,
    level: float,
    n: float,
    padded: list[tuple[int, DebiasedCounts]],
) -> np.ndarray:
    """Upper ends that cover the count where padded reports weigh on the combined estimate.

    A padded report i estimates eᵢ = c − mᵢ with 0 ≤ mᵢ ≤ (1 − ℓᵢ/M)·min(c, Nᵢ) (M the bound on the
    set size, Nᵢ the trajectories with at least ℓᵢ items), so the combination x̂ = Σ sᵢ x̂ᵢ (weight shares
    sᵢ) has mean at least g(c) = c − Σ aᵢ min(c, Nᵢ), aᵢ = sᵢ(1 − ℓᵢ/M). g is increasing and convex,
    and the count is at most g⁻¹(x̂ + z·se) when x̂ + z·se bounds the mean of x̂ and every Nᵢ⁺ ≥ Nᵢ.
    1 − ``level`` is split as in :func:`geoldp.reports.estimate_counts`: half to the lower end, a
    quarter to x̂ + z·se, a quarter shared by the k padded reports' Nᵢ⁺. With one padded report and no
    other part this is that function's upper end.
    """
    from scipy.stats import norm

    alpha = 1.0 - level
    z_est = float(norm.isf(alpha / 4.0))
    z_big = float(norm.isf(alpha / (4.0 * len(padded))))
    a = np.nan_to_num(
        np.stack([share[:, j] * (1.0 - dc.pad_length / dc.max_set_size) for j, dc in padded], axis=1)
    )
    big = np.array([dc.large_sets_upper(z_big) for _, dc in padded])
    order = np.argsort(big, kind="stable")
    a, big = a[:, order], big[order]
    x_hi = est + z_est * se
    y = np.maximum(x_hi, 0.0)
    # g is linear between its kinks at the sorted Nᵢ⁺ and lies above each of those lines, so g⁻¹(y) is
    # the least of the lines' solutions
    inv = np.full(y.shape, np.inf)
    for j in range(len(padded) + 1):
        slope = 1.0 - a[:, j:].sum(axis=1)
        inv = np.minimum(inv, (y + (a[:, :j] * big[:j]).sum(axis=1)) / slope)
    return np.minimum(x_hi + (inv - y), n)

"""Collector-side estimators: what a collector can learn from released trajectories (post-processing).

Every function reads only the release (released LineStrings in any CRS, or index arrays into P), the
public point set P and the public mechanism configuration (a name with ε and options, a TP/ATP/PointEM
object, or the ledger the release carries), never the original trajectories, so it costs no privacy.
The estimates are derived in :doc:`/collector`: the population model, a mixture over a library of
candidate trajectories fitted by EM per released length ("The model"), the 95 % intervals and the
``supported`` flag ("Intervals"), the raw count a range count falls back to where it is not supported
("Guarded answers"), one fit for many queries ("One fit, many queries") and the sample above
``fit_rows`` ("Cost").

Functions
---------
fit            fit the population model once; the :class:`Population` it returns answers every query
visit_counts   distinct trajectories visiting each public point or each zone
range_counts   trajectories passing through each region (circles or polygons)
od_flows       origin zone x destination zone counts (first and last points)
hotspots       the top-k points or zones by estimated visits
denoise        a point estimate of every released trajectory made of public points
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any, TypedDict, Unpack

import numpy as np
import pandas as pd
import scipy.sparse as sp

from geoldp._core.docstrings import doc, shared_keywords
from geoldp._core.randomness import resolve_rng
from geoldp._core.validation import check_bool, check_count, check_int_min, check_positive_km, check_real
from geoldp.estimate import _denoise, _inputs, _model
from geoldp.estimate._ranking import top_supported
from geoldp.questions import answer_table

if TYPE_CHECKING:
    from geoldp._core.pointset import PointSet

__all__ = ["Population", "denoise", "fit", "hotspots", "od_flows", "range_counts", "visit_counts"]

#: Most bootstrap replicates (``n_boot``) an estimate draws: each holds a value per zone (or zone pair), and
#: 10⁴ replicates already pin a 95 % interval's ends far below the sampling noise.
MAX_BOOT = 10_000
#: Most simulated releases per candidate (``n_sims``): they are held at once, candidates × n_sims × length.
MAX_SIMS = 1_000


def _options(fit: _EstimateKeywords, caller: str) -> _model.FitOptions:
    cell_km = check_positive_km(fit["cell_km"], "cell_km", caller=caller)  # TypeError for a non-number
    level = fit["level"]
    if not (0.0 < check_real(level, "level", caller=caller) < 1.0):
        raise ValueError(
            f"The 'level' parameter of {caller} must be a float in (0, 1). Got {level!r} instead."
        )
    n_iter = fit["n_iter"]
    return _model.FitOptions(
        n_candidates=check_int_min(fit["n_candidates"], "n_candidates", minimum=10, caller=caller),
        n_sims=check_count(fit["n_sims"], "n_sims", maximum=MAX_SIMS, caller=caller),
        n_boot=check_count(fit["n_boot"], "n_boot", minimum=0, maximum=MAX_BOOT, caller=caller),
        n_iter="cv" if n_iter == "cv" else check_int_min(n_iter, "n_iter", minimum=0, caller=caller),
        cell_km=None if cell_km is None else float(cell_km),
        level=float(level),
        fit_rows=check_int_min(fit["fit_rows"], "fit_rows", minimum=10, caller=caller),
        progress=check_bool(fit["progress"], "progress", caller=caller),
    )


def _prepare(released: Any, points: Any, fit: _EstimateKeywords, caller: str) -> Population:
    """Validate everything and draw the one key (candidates, simulations, bootstrap); fit nothing yet."""
    ps, source = _inputs.resolve_public_points(points, caller=caller)
    _inputs.check_release_points(released, ps, caller=caller)  # the P the ledger records, or refused
    mech = _inputs.resolve_release_mechanism(
        fit["mechanism"], fit["epsilon"], fit["mechanism_options"], released, caller=caller
    )
    rel = _inputs.released_sequences(released, ps, caller=caller)
    if not rel.seqs:
        raise ValueError(f"The released trajectories passed to {caller} are empty.")
    for n in sorted({s.shape[0] for s in rel.seqs}):
        mech.check_budgets(n, ps.size)
    options = _options(fit, caller)
    if fit["rng"] is None:  # post-processing: a digest of the public inputs seeds it at no privacy cost
        key, drawn = _inputs.digest_key(rel.seqs, ps, mech, options), "digest of the release"
    else:
        key, drawn = resolve_rng(fit["rng"]).stream_key(), "rng"
    return Population(_Fit(ps, source, mech, rel, options, key, released, drawn))


@dataclasses.dataclass(eq=False)
class _Fit:
    """The validated inputs of one fit and, once a query needs it, the fitted model (never the originals)."""

    ps: PointSet
    source: Any
    mech: Any
    rel: _inputs.Release
    options: _model.FitOptions
    key: np.ndarray
    released: Any
    drawn: str
    fitted: _model.Model | None = None

    @property
    def settings(self) -> dict[str, Any]:
        """How the estimator's randomness was drawn, with its settings, recorded beside every answer."""
        return {"randomness": self.drawn, **dataclasses.asdict(self.options)}

    def model(self) -> _model.Model:
        if self.fitted is None:
            self.fitted = _model.fit(self.rel.seqs, self.ps, self.mech, key=self.key, options=self.options)
        return self.fitted


class Population:
    """A population model fitted to one release; every query is answered from the same fit.

    Made by :func:`fit`. The model (see the module notes) is fitted on the first query and kept, so a
    collector asking for zone visits, range counts, flows and denoised trajectories pays for one fit.
    It holds the release, the public point set and the public configuration only.

    Attributes
    ----------
    mechanism : str
        The mechanism's name (``"tp"``, ``"atp"`` or ``"pointem"``).
    n_trajectories : int
        Number of released trajectories.
    """

    def __init__(self, state: _Fit) -> None:
        self._state = state
        self.mechanism = str(getattr(state.mech, "name", type(state.mech).__name__.lower()))
        self.n_trajectories = len(state.rel.seqs)

    def __repr__(self) -> str:
        fitted = "fitted" if self._state.fitted is not None else "not fitted yet"
        return f"<geoldp.estimate.Population: {self.n_trajectories} {self.mechanism} releases, {fitted}>"

    def visit_counts(self, zones: Any = None) -> pd.DataFrame:
        """Distinct trajectories visiting each public point, or each zone: see :func:`visit_counts`."""
        return self._visit_counts(zones, "geoldp.estimate.Population.visit_counts")

    def _visit_counts(self, zones: Any, caller: str) -> pd.DataFrame:
        st = self._state
        if zones is None:
            label, n_labels = np.arange(st.ps.size), st.ps.size
            index = pd.RangeIndex(st.ps.size, name="point")
        else:
            label, index = _inputs.zone_of_points(zones, st.ps, caller=caller)
            n_labels = len(index)
        question = "point_visits" if zones is None else "zone_visits"
        return self._table(_visit_matrix(label, n_labels), index, question)

    def range_counts(self, regions: Any, how: str = "points") -> pd.DataFrame:
        """Trajectories passing through each region: see :func:`range_counts`."""
        return self._range_counts(regions, how, "geoldp.estimate.Population.range_counts")

    def _range_counts(self, regions: Any, how: str, caller: str) -> pd.DataFrame:
        st = self._state
        members, index = _region_members(regions, how, st, caller)
        # point -> regions incidence (m x R); a candidate passes through r when any of its points is in r
        rows = np.concatenate([mm for mm in members]) if members else np.zeros(0, dtype=np.int64)
        cols = np.repeat(np.arange(len(members)), [mm.size for mm in members])
        inc = sp.csr_matrix((np.ones(rows.size), (rows, cols)), shape=(st.ps.size, len(members)))
        size = st.ps.size

        def values(cand: np.ndarray) -> Any:
            k, n = cand.shape
            hit = sp.csr_matrix(
                (np.ones(k * n), (np.repeat(np.arange(k), n), cand.reshape(-1))), shape=(k, size)
            )
            out = (hit @ inc).tocsr()
            out.data[:] = (out.data > 0).astype(np.float64)
            return out

        return self._table(values, index, "range_counts")

    def od_flows(self, zones: Any) -> pd.DataFrame:
        """Origin-destination flows between zones: see :func:`od_flows`."""
        return self._od_flows(zones, "geoldp.estimate.Population.od_flows")

    def _od_flows(self, zones: Any, caller: str) -> pd.DataFrame:
        st = self._state
        label, index = _inputs.zone_of_points(zones, st.ps, caller=caller)
        nz = len(index)

        def pairs(cand: np.ndarray) -> np.ndarray:
            o, d = label[cand[:, 0]], label[cand[:, -1]]
            return np.where((o >= 0) & (d >= 0), o * nz + d, -1)

        # only pairs that some candidate or release can take (never a Z x Z dense table)
        seen: set = set()
        for g in st.model().groups:
            seen.update(np.unique(pairs(g.cand)).tolist())
        for n in {s.shape[0] for s in st.rel.seqs}:
            seen.update(np.unique(pairs(np.stack([s for s in st.rel.seqs if s.shape[0] == n]))).tolist())
        seen.discard(-1)
        keys = np.array(sorted(seen), dtype=np.int64)

        def values(cand: np.ndarray) -> Any:
            p = pairs(cand)
            col = np.searchsorted(keys, p)
            # every pair a candidate or the release takes is in keys; a simulated release of the channel
            # check can take another pair, which no row of the table counts
            ok = (p >= 0) & (col < keys.size)
            ok[ok] = keys[col[ok]] == p[ok]
            col = col[ok]
            return sp.csr_matrix(
                (np.ones(col.size), (np.flatnonzero(ok), col)), shape=(cand.shape[0], keys.size)
            )

        labels = np.asarray(index, dtype=object)
        pairs_index = pd.MultiIndex.from_arrays(
            [labels[keys // nz], labels[keys % nz]], names=["origin", "destination"]
        )
        table = self._table(values, pairs_index, "od_flows")
        record = dict(table.attrs["estimator"]["fallback"])
        keep = (table["estimate"] > 1e-9) | (table["raw"] > 0)
        if "model" in record:  # the model's own estimates, of the rows kept
            model = np.asarray(record["model"], dtype=np.float64)
            keep |= model > 1e-9
            record["model"] = model[keep.to_numpy()].tolist()
        out = table[keep].copy()
        out.attrs = {**table.attrs, "estimator": {**table.attrs["estimator"], "fallback": record}}
        return out

    def hotspots(self, k: int = 10, zones: Any = None) -> pd.DataFrame:
        """The top-k public points (or zones) by estimated visits: see :func:`hotspots`."""
        k = check_int_min(k, "k", minimum=1, caller="geoldp.estimate.Population.hotspots")
        return top_supported(self.visit_counts(zones), k)

    def denoise(self) -> Any:
        """A point estimate of every original trajectory made of public points: see :func:`denoise`."""
        import geopandas as gpd

        st = self._state
        out_seqs = _denoise.posterior_medoids(st.model(), len(st.rel.seqs))
        if st.rel.frame is None:
            return out_seqs
        from geoldp._core import frames as _frames

        xy = _frames.public_xy(st.ps, st.rel.frame.crs, st.source)
        geoms = _frames.build_geometry(st.rel.ft, out_seqs, xy, len(st.rel.frame))
        out = st.rel.frame.copy()
        out[out.geometry.name] = gpd.GeoSeries(geoms, index=out.index, crs=out.crs)
        out.attrs = dict(st.rel.frame.attrs)
        if isinstance(st.released, gpd.GeoSeries):
            series = out.geometry
            series.name = st.released.name
            return series
        return out

    def _table(self, values: Callable[[np.ndarray], Any], index: pd.Index, question: str) -> pd.DataFrame:
        # one more column, the per-trajectory sum (the total), estimated like every count
        def with_total(cand: np.ndarray) -> Any:
            v = sp.csr_matrix(values(cand))
            return sp.hstack([v, sp.csr_matrix(v.sum(axis=1))]).tocsr()

        model = self._state.model()
        est, lo, hi, sup = model.estimate(with_total)
        raw = _raw(with_total, self._state.rel.seqs)
        est, lo, hi, sup, record = _fallback(model, with_total, est, lo, hi, sup, raw, question)
        level = self._state.options.level
        out = answer_table(
            index,
            est[:-1],
            lower=lo[:-1],
            upper=hi[:-1],
            supported=sup[:-1],
            raw=raw[:-1],
            question=question,
            design=self.mechanism,
            covers=f"{100 * level:g} % interval of each count, from the population model fitted to the "
            "release (bootstrap, widened by the channel check; cell by cell)",
        )
        out.attrs["total"] = {
            "estimate": float(est[-1]),
            "lower": float(lo[-1]),
            "upper": float(hi[-1]),
            "raw": float(raw[-1]),
            "supported": bool(sup[-1]),
        }
        out.attrs["estimator"] = {**self._state.settings, "fallback": record}
        return out


#: The rule that guards the count answers (see :func:`_fallback`, measured in
#: ``docs/results/estimators_oos.md``): ``"support-range"`` (the default: a range count is the model's
#: where the table flags it ``supported`` and the raw count elsewhere; the other tables are the model's),
#: ``"support"`` (the same for every count table), ``"split"`` (a held-out check of the release, see
#: :meth:`~geoldp.estimate._model.Model.release_check`), ``"splitraw"`` (the same, the raw release predicting
#: the other half by its own counts) and ``"none"`` (the model's answer everywhere).
FALLBACK = "support-range"


def _fallback(
    model: _model.Model,
    values: Callable[[np.ndarray], Any],
    est: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
    sup: np.ndarray,
    raw: np.ndarray,
    question: str,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict]:
    """The answer a count table reports under the rule :data:`FALLBACK`, and its record.

    ``"support"`` rules: where the table does not flag a count ``supported`` (the release cannot tell it
    from a population without data), the count reported is the raw release's, not the model's (whose
    value there comes from its prior, not from the release). ``"split"`` rules: the model's answer unless
    :meth:`~geoldp.estimate._model.Model.release_check` finds the raw release's or a no-data answer closer
    on held-out halves of the release (a no-data answer is then never ``supported``). The last column is
    the total, which follows its own flag (support) or the check's choice (split). The interval is widened
    to hold the reported estimate. The record (``attrs["estimator"]["fallback"]``): ``rule``, ``answer``
    and, when some count is not the model's, ``model`` (the model's own estimates, row by row).
    """
    record: dict[str, Any] = {"rule": FALLBACK, "answer": "model"}
    if FALLBACK == "none" or (FALLBACK == "support-range" and question != "range_counts"):
        return est, lo, hi, sup, record
    if FALLBACK in ("support", "support-range"):
        if sup.all():
            return est, lo, hi, sup, record
        new = np.where(sup, est, raw.astype(np.float64))
        record["answer"] = f"model in {int(sup[:-1].sum())} supported rows, raw in {int((~sup[:-1]).sum())}"
    else:
        check = model.release_check(values, est.shape[0] - 1, raw_as_release=FALLBACK == "splitraw")
        names = {"released": "raw"}
        record["answer"] = names.get(check.answer, check.answer)
        record["score"] = {names.get(k, k): round(float(v), 6) for k, v in check.score.items()}
        if check.answer == "model":
            return est, lo, hi, sup, record
        if check.answer == "released":
            new = raw.astype(np.float64)
        else:  # a no-data answer: nothing in it is learned from the release
            prior = np.asarray(check.prior[check.answer], dtype=np.float64)
            new, sup = np.append(prior, prior.sum()), np.zeros_like(sup)
    record["model"] = est[:-1].tolist()
    return new, np.minimum(lo, new), np.maximum(hi, new), sup, record


def _region_members(regions: Any, how: str, st: _Fit, caller: str) -> tuple[list[np.ndarray], Any]:
    """Validated regions: the public points in each and the regions' index."""
    if how != "points":
        raise ValueError(
            f"Got how={how!r}; `how` of {caller} must be 'points' (a released vertex is a public point, so "
            "segment crossings are not estimated)."
        )
    crs = st.rel.frame.crs if st.rel.frame is not None else "EPSG:4326"
    return _inputs.region_members(regions, st.ps, crs=crs, caller=caller)


def _visit_matrix(label: np.ndarray, n_labels: int) -> Callable[[np.ndarray], Any]:
    """Per-candidate distinct-visit indicator of each label (points or zones; label -1 is ignored)."""

    def values(cand: np.ndarray) -> Any:
        k, n = cand.shape
        lab = label[cand]
        rows = np.repeat(np.arange(k), n)
        ok = lab.reshape(-1) >= 0
        m = sp.csr_matrix((np.ones(int(ok.sum())), (rows[ok], lab.reshape(-1)[ok])), shape=(k, n_labels))
        m.sum_duplicates()
        m.data[:] = 1.0
        return m

    return values


def _raw(values: Callable[[np.ndarray], Any], seqs: list[np.ndarray]) -> np.ndarray:
    """The same query on the release itself (the 'raw' statistic)."""
    out = None
    for n in sorted({s.shape[0] for s in seqs}):
        arr = np.stack([s for s in seqs if s.shape[0] == n])
        v = np.asarray(values(arr).sum(axis=0)).reshape(-1)
        out = v if out is None else out + v
    if out is None:  # unreachable: checked when the arguments were validated
        raise ValueError("internal error: a required public input is missing; please report it")
    return out


class _ModelKeywords(TypedDict, total=False):
    """The keyword parameters of every estimator, ``Annotated[type, default]``: their one definition.

    Each estimator takes them as ``**fit: Unpack[...]`` (see :func:`geoldp._core.docstrings.shared_keywords`);
    they are documented once, in ``_FIT_DOC``.
    """

    mechanism: Annotated[Any, None]
    epsilon: Annotated[float | None, None]
    mechanism_options: Annotated[dict | None, None]
    rng: Annotated[Any, None]
    n_candidates: Annotated[int, 3000]
    n_sims: Annotated[int, 16]
    n_iter: Annotated[int | str, "cv"]
    cell_km: Annotated[float | None, None]
    fit_rows: Annotated[int, 5000]
    progress: Annotated[bool, False]


class _EstimateKeywords(_ModelKeywords, total=False):
    """And those of the interval, which every estimator but :func:`denoise` (a point estimate) takes."""

    n_boot: Annotated[int, 30]
    level: Annotated[float, 0.95]


_FIT_DOC = """
    mechanism : None, {"tp", "atp", "pointem"}, TP/ATP/PointEM object or dict, default None
        The public configuration of the mechanism that produced ``released``. ``None`` reads the ledger
        the release's ledger (the output of ``GeoDataFrame.ldp.perturb``); a dict is such a ledger's record.
    epsilon : float, optional
        The per-trajectory budget, with a mechanism name; must agree with the ledger when both are given.
    mechanism_options : dict, optional
        Options of a named mechanism (``granularity``, ``split``, ...), as given to the mechanism.
    rng : {None, int, array_like[ints], SeedSequence, BitGenerator, Generator}, optional
        Seeds the simulations, the candidate library, the cross-validation folds and the bootstrap, each
        from its own stream. ``None`` derives the seed from a digest of the release, P, the mechanism's
        configuration and these settings (estimation is post-processing: this costs no privacy), so two
        analysts get the same answer from the same files; another ``rng`` draws another answer within
        its Monte-Carlo error. Every table records how it was drawn, with the settings, in
        ``attrs["estimator"]``.
    n_candidates : int, default 3000
        Proposal candidates per released length (at most twice the number of releases, at least 200); the
        library also holds up to as many released trajectories of that length.
    n_sims : int, default 16
        Simulated releases per candidate (TP and ATP; PointEM's likelihood is exact and needs none).
    n_iter : int or "cv", default "cv"
        EM iterations from the starting weights (more fit the release more closely, and its noise);
        ``"cv"`` chooses, for each length, the start (uniform over the released copies, over independent
        uniform draws from P, over the whole library or over the public proposal, or the trajectory at
        P's 1-median) and 0, 1, 2, 4, ..., 64
        iterations by two-fold cross-validation of the held-out per-trajectory log-likelihood over
        released rows (the simplest model within one standard error of the best); an int fixes the
        iterations and cross-validates only the start.
    cell_km : float, optional
        Side of the public grid cells on which TP/ATP releases are compared with the simulations (default
        Δ/16).
    fit_rows : int, default 5000
        The most released trajectories of one length the population is fitted on. Up to this many, every
        release is fitted (and the result does not depend on ``fit_rows``); a length with more fits the
        weights on a uniform sample of ``fit_rows`` of its releases, drawn from ``rng`` (never from the
        data), and each count is the sample's posterior mean count times the length's number of releases,
        its variance adding that of the sampling. Time and memory then stop growing with the release
        except for the raw counts and the channel check (``docs/collector.md``, Cost).
    progress : bool, default False
        Report the fit's stages (simulations and fit per released length, the bootstrap) on a progress bar
        (tqdm; a widget in notebooks); the result does not change.
    n_boot : int, default 30
        Bootstrap replicates for the interval (0: no interval, NaN bounds).
    level : float, default 0.95
        Nominal coverage of the interval."""


@doc(fit=_FIT_DOC)
@shared_keywords(_EstimateKeywords)
def fit(released: Any, points: Any, **fit: Unpack[_EstimateKeywords]) -> Population:
    """Fit the population model to a release once, for any number of queries.

    ``fit(...).visit_counts(zones)`` equals ``visit_counts(..., zones=zones)`` with the same arguments and
    ``rng``; every query of the returned :class:`Population` reuses the one fit, while each function
    below fits its own.

    Parameters
    ----------
    released, points
        As in :func:`visit_counts`.
    {fit}

    Returns
    -------
    Population
        Methods ``visit_counts(zones=None)``, ``range_counts(regions)``, ``od_flows(zones)``,
        ``hotspots(k=10, zones=None)`` and ``denoise()``. The model is fitted on the first query.

    Raises
    ------
    ValueError, TypeError
        As :func:`visit_counts`, at this call (before any fitting).

    Examples
    --------
    >>> import numpy as np
    >>> from geoldp import PointSet, estimate, perturb_trajectories
    >>> P = PointSet(np.linspace(0, 0.1, 20), np.zeros(20))
    >>> rel = perturb_trajectories([np.array([0, 1])] * 50, P, mechanism="tp", epsilon=4.0, rng=0)
    >>> pop = estimate.fit(rel, P, mechanism="tp", epsilon=4.0, rng=0, n_boot=0)
    >>> pop.visit_counts().shape, len(pop.denoise())
    ((20, 6), 50)
    """
    return _prepare(released, points, fit, "geoldp.estimate.fit")


@doc(fit=_FIT_DOC)
@shared_keywords(_EstimateKeywords)
def visit_counts(
    released: Any, points: Any, *, zones: Any = None, **fit: Unpack[_EstimateKeywords]
) -> pd.DataFrame:
    """Estimated number of distinct original trajectories visiting each public point or zone.

    Parameters
    ----------
    released : GeoDataFrame, GeoSeries or sequence of array_like of int
        The release: LineStrings whose vertices are public points (any CRS; a Point row is a
        trajectory of one point, as a release collected in the field holds), or index arrays into
        ``points``.
    points : PointSet, GeoDataFrame/GeoSeries of Points or (m, 2) array of (lon, lat)
        The public point set P the mechanism used (same order).
    zones : GeoDataFrame or GeoSeries of polygons, optional
        Count per zone (any CRS; a public point belongs to the first zone containing it) instead of per
        public point.
    {fit}

    Returns
    -------
    pandas.DataFrame
        The answer table (:func:`geoldp.designs.answer_table`): one row per public point (P's order,
        index ``point``) or per zone (the zones' index), columns ``estimate``, ``lower``, ``upper`` (the
        interval), ``std_error`` (NaN: the interval is not a normal one), ``supported`` (bool) and
        ``raw`` (the same count on the release); ``attrs`` say the question (``"point_visits"`` or
        ``"zone_visits"``), the mechanism (``design``) and what the interval ``covers``. ``supported``
        is False where the interval (without a bootstrap, the range of the plausible
        models' estimates) contains the estimate under a no-data population (uniform draws from P, or
        every point at P's 1-median): there the release cannot tell the count from what a population
        without any data gives, and the estimate is not learned from the release.
        ``attrs["total"]`` (dict) holds ``estimate``, ``lower``, ``upper``, ``raw`` and ``supported`` for
        the total over all rows, estimated like each count. ``attrs["estimator"]["fallback"]`` (dict)
        says which answer each row gives (``rule``, ``answer``) and, when some row is not the model's
        (range counts: a count that is not ``supported`` is the raw count), the model's own estimates
        (``model``); see ``docs/collector.md``, Guarded answers.

    Raises
    ------
    ValueError
        No mechanism and no ledger; ε conflicting with the ledger; a released vertex that is not a public
        point; zones without CRS; an invalid option.
    TypeError
        Inputs of the wrong type.

    Notes
    -----
    Per public point the release carries almost no information at the budgets of the paper (a point EM
    gets ε/16 or less): the point-level estimate is then mostly the model's prior and its interval is wide.
    Zones of a few km are the resolution at which the release says something; see ``docs/collector.md``.

    The interval runs from the lowest to the highest estimate of the plausible models (the chosen one
    and those whose held-out likelihood is within two standard errors of the best: the release cannot
    tell them apart), widened by z·sd with sd² = Σ_j p_j(1 − p_j) + the bootstrap variance: p_j is the
    posterior probability that original trajectory j visits the point or zone (which trajectory is
    which, given the fitted population) and the bootstrap resamples released rows and refits the
    weights (same start, same number of EM iterations), for the uncertainty of the population. It is
    valid when the channel is right (exact for PointEM; the simulated composite likelihood of TP/ATP
    ignores the dependence between positions, which makes posteriors too sharp), the library can
    represent the truth and the truth lies within the plausible models; it does not include the
    Monte-Carlo error of the TP/ATP simulations (measured coverage and width:
    ``docs/results/estimators.md``).

    Examples
    --------
    >>> import numpy as np
    >>> from geoldp import PointSet, perturb_trajectories
    >>> from geoldp.estimate import visit_counts
    >>> P = PointSet(np.linspace(0, 0.1, 20), np.zeros(20))
    >>> rel = perturb_trajectories([np.array([0, 1])] * 50, P, mechanism="tp", epsilon=4.0, rng=0)
    >>> visit_counts(rel, P, mechanism="tp", epsilon=4.0, rng=0, n_boot=0).shape
    (20, 6)
    """
    caller = "geoldp.estimate.visit_counts"
    return _prepare(released, points, fit, caller)._visit_counts(zones, caller)


@doc(fit=_FIT_DOC)
@shared_keywords(_EstimateKeywords)
def range_counts(
    released: Any, points: Any, regions: Any, *, how: str = "points", **fit: Unpack[_EstimateKeywords]
) -> pd.DataFrame:
    """Estimated number of original trajectories passing through each region.

    Parameters
    ----------
    released, points
        As in :func:`visit_counts`.
    regions : circle, polygon, list of those, or GeoDataFrame/GeoSeries of polygons
        A circle is ``(lon, lat, radius_km)`` (WGS 84 centre, haversine radius); a bare polygon is in the
        release's CRS (EPSG:4326 for index input); a GeoDataFrame/GeoSeries needs a CRS.
    how : {"points"}, default "points"
        A trajectory passes through a region when one of its vertices (a public point) lies in it.
    {fit}

    Returns
    -------
    pandas.DataFrame
        The answer table: one row per region (the regions' index, or ``region`` 0..R-1), its columns
        and ``attrs`` as in :func:`visit_counts`.

    Raises
    ------
    TypeError, ValueError
        As :func:`visit_counts`; a malformed region.
    """
    caller = "geoldp.estimate.range_counts"
    return _prepare(released, points, fit, caller)._range_counts(regions, how, caller)


@doc(fit=_FIT_DOC)
@shared_keywords(_EstimateKeywords)
def od_flows(released: Any, points: Any, zones: Any, **fit: Unpack[_EstimateKeywords]) -> pd.DataFrame:
    """Estimated origin-destination flows between zones (first and last point of each trajectory).

    Parameters
    ----------
    released, points
        As in :func:`visit_counts`.
    zones : GeoDataFrame or GeoSeries of polygons
        The zones (any CRS). Trajectories starting or ending outside every zone are not counted.
    {fit}

    Returns
    -------
    pandas.DataFrame
        The answer table, indexed by ``origin`` and ``destination`` (zone index labels), its columns and
        ``attrs`` as in :func:`visit_counts`: one row per pair with a positive estimate or raw count,
        sorted by pair (``reset_index()`` gives the long format with ``origin`` and ``destination``
        columns).

    Raises
    ------
    TypeError, ValueError
        As :func:`visit_counts`; zones without a CRS.
    """
    caller = "geoldp.estimate.od_flows"
    return _prepare(released, points, fit, caller)._od_flows(zones, caller)


@doc(fit=_FIT_DOC)
@shared_keywords(_EstimateKeywords)
def hotspots(
    released: Any, points: Any, *, k: int = 10, zones: Any = None, **fit: Unpack[_EstimateKeywords]
) -> pd.DataFrame:
    """The top-k public points (or zones) by estimated visits, with estimate and interval.

    Parameters
    ----------
    released, points
        As in :func:`visit_counts`.
    k : int, default 10
        Number of hotspots.
    zones : GeoDataFrame or GeoSeries of polygons, optional
        As in :func:`visit_counts`.
    {fit}

    Returns
    -------
    pandas.DataFrame
        At most ``k`` rows, ranked among the **supported** points/zones only (a row the release cannot
        tell from no data is never ranked; none supported: no row, and ``attrs["note"]`` says so),
        sorted by decreasing estimate (ties by position), the index of :func:`visit_counts`, columns
        ``rank`` (1..k), then those of :func:`visit_counts`;
        ``attrs["supported_cells"]`` and ``attrs["cells"]`` count the rows ranked among and all rows.

    Raises
    ------
    TypeError, ValueError
        As :func:`visit_counts`; k not a positive int.
    """
    k = check_int_min(k, "k", minimum=1, caller="geoldp.estimate.hotspots")
    return top_supported(visit_counts(released, points, zones=zones, **fit), k)


@shared_keywords(_ModelKeywords)  # no interval: not n_boot, level
def denoise(released: Any, points: Any, **fit: Unpack[_ModelKeywords]) -> Any:
    """A point estimate of every original trajectory, made of public points (post-processing).

    For each released trajectory, the posterior over the fitted library of candidates is its per-trajectory
    likelihood times the fitted weights (the likelihood of :func:`visit_counts`); each position is then the
    spherical
    geometric median of the candidates' points at that position under this posterior (the Bayes estimate
    for the distance loss), snapped to the nearest public point. For a length with more releases than
    ``fit_rows`` the median is approximated: the candidates' points are pooled by public cells of side
    1/64 of P's diameter (mass and posterior-weighted centroid per cell) before the iterations, which
    keeps 10⁶ releases within minutes; its error is measured in ``docs/collector.md`` (Denoising).

    Parameters
    ----------
    released, points, mechanism, epsilon, mechanism_options, rng
        As in :func:`visit_counts`.
    n_candidates, n_sims, n_iter, cell_km, fit_rows, progress
        As in :func:`visit_counts`.

    Returns
    -------
    GeoDataFrame or list of numpy.ndarray
        The same type and shape as ``released``: for a GeoDataFrame/GeoSeries a copy with the same index,
        columns, CRS, attrs and vertex counts whose vertices are the denoised public points (in the
        release's CRS); for index input, a list of int64 arrays of the same lengths.

    Raises
    ------
    TypeError, ValueError
        As :func:`visit_counts`; a frame that is not a release of LineStrings.
    """
    caller = "geoldp.estimate.denoise"
    return _prepare(released, points, _EstimateKeywords(**fit, n_boot=0, level=0.95), caller).denoise()

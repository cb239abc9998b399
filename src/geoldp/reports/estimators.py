"""Collector-side estimators for report tables: debiased counts, 95 % intervals, projections.

They read only the report table, its ledger (the public design) and, optionally, the public zones.

For every domain value v the support count C(v) (reports that support v) is debiased,

    f̂(v) = (C(v) − n·q*) / (p* − q*),

an unbiased estimate of the expected number of reports whose sampled item is v. The count of
trajectories is ℓ·f̂(v) (padding-and-sampling with ``pad_length`` ℓ): unbiased for trajectories with at
most ℓ items (every OD pair; ℓ = 1 for "one sampled zone" estimates each trajectory's share 1/|set|).

Variance. Every report supports v independently with probability r_u = q* + a_u(p* − q*), a_u being the
probability that user u's sampled item is v. So Var C(v) = Σ r_u(1 − r_u), which is

* for a single item per trajectory (OD): n q*(1−q*) + c (p*−q*)(1−p*−q*) exactly (Wang et al. 2017);
* for sets: at most n·r̄(1 − r̄), r̄ the mean of r_u (concavity), which also covers the randomness of
  the sampled item.

The plug-in c is f̂ clipped to [0, n]. The 95 % interval is estimate ± 1.96·std_error, except for set
counts (below), clipped to [0, n]: the count lies there, so clipping never drops it. ``projected`` is the
point estimate of the count: the Euclidean projection of f̂ over the whole domain onto {x ≥ 0, Σx = n}
(the set the true values lie in), scaled by ℓ, then kept inside the cell's interval; it is never negative
and never above n.

Set counts (visited zones, or transitions; ℓ = 1 included). A trajectory whose set S has s = |S| items
(zones it visits, or distinct transitions it makes) and holds v adds min(1, ℓ/s) to the estimand
e(v) = E[ℓ·f̂(v)] and 1 to the count c(v). So e(v) ≤ c(v), and the missing mass
c(v) − e(v) = Σ over the holders with s > ℓ of (1 − ℓ/s). With a public bound M on s (by default the
domain's values: the zones + 1, or their ordered pairs) each of those terms is at most 1 − ℓ/M, and it
is at most (M/ℓ − 1) times that holder's share ℓ/s of e(v); and there are at most N = #{s ≥ ℓ} such
holders. Hence

    e(v) ≤ c(v) ≤ e(v) + min((1 − ℓ/M)·N, (M/ℓ − 1)·e(v)).

N is released by the padding itself: dummy 0 is sampled (with probability 1/ℓ) exactly by the
trajectories with s < ℓ, so N = n − ℓ·E f̂(dummy 0) (with ℓ = 1 for visited zones there is no dummy:
every trajectory has a zone, N = n). The interval is

    lower = max(0, ℓf̂(v) − 1.96·se),   upper = min(n, e⁺ + min((1 − ℓ/M)·N⁺, (M/ℓ − 1)·max(e⁺, 0))),

with e⁺ = ℓf̂(v) + z·se and N⁺ = n − ℓ·(f̂(dummy 0) − z·se(dummy 0)) (clipped to [0, n]), z the 1.25 %
one-sided normal quantile. The lower end misses c(v) only when it misses e(v) (2.5 %), the upper only
when e⁺ < e(v) or N⁺ < N (1.25 % each): by the union bound the interval covers c(v) with probability at
least 95 % (up to the normal approximation of each bound), whatever the set sizes. It is conservative:
the release cannot tell how many items the large sets have, so the upper end allows the worst case.

Tables with a per-user budget (``user_budget="split"``). Their rows were reported in parts, one per
budget ε/k (the column ``epsilon``), each with the same oracle and domain at its own ε. Each part is
debiased with its own p*, q* and variance; the parts hold different trajectories, so the sum of their
f̂ is unbiased for the sum of their estimands and the variances add. Everything above is a sum over
trajectories (e, c, N, the missing mass), so the same bounds hold for the whole table with f̂, its
variance and n summed over the parts: e⁺ and N⁺ come from the summed estimates and standard errors,
``projected`` from the summed f̂ and n.
"""

from __future__ import annotations

import functools
import operator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from geoldp._core.ledger import ReleaseLedger
from geoldp._core.validation import check_int_range
from geoldp.budget_strategies import EPSILON_COLUMN
from geoldp.mechanisms import oracles as fo
from geoldp.reports.release import report_ledger, scheme_of
from geoldp.zones import check_zones

#: The two-sided 95 % normal quantile.
Z95 = 1.959963984540054

#: The one-sided 1.25 % normal quantile: the upper end of a padded visit count splits its 2.5 % evenly
#: between the bound on the estimand and the bound on the trajectories with at least ℓ zones.
_Z_SPLIT = 2.2414027276049464

#: Rows of OUE reports unpacked at a time (bounds memory at about 64 MB of bits).
_OUE_CHUNK_BITS = 1 << 26


def support_counts(table: pd.DataFrame, des: Any) -> tuple[np.ndarray, int]:
    """``(C, n)``: support count of every domain value and the number of (non-missing) reports."""
    o = des.oracle
    if o.name == "oue":
        bits = table["bits"].dropna().to_numpy()
        n = bits.shape[0]
        counts = np.zeros(o.d, dtype=np.int64)
        width = (o.d + 7) // 8
        step = max(1, _OUE_CHUNK_BITS // max(1, 8 * width))
        for start in range(0, n, step):
            chunk = np.frombuffer(b"".join(bits[start : start + step]), dtype=np.uint8).reshape(-1, width)
            counts += np.unpackbits(chunk, axis=1, count=o.d).sum(axis=0, dtype=np.int64)
        return counts, n
    ok = table["report"].notna().to_numpy()
    values = np.asarray(table["report"].to_numpy()[ok], dtype=np.int64)
    if o.name == "krr":
        return np.bincount(values, minlength=o.d).astype(np.int64), int(values.shape[0])
    seeds = np.asarray(table["seed"].to_numpy()[ok], dtype=np.int64)
    counts = fo.olh_support(seeds, values, np.int64(o.d), np.int64(o.g), np.zeros(o.d, dtype=np.int64))
    return counts, int(values.shape[0])


def count_variance(c: np.ndarray, n: int, o: Any, *, single: bool) -> np.ndarray:
    """Variance of the debiased frequency of values with ``c`` expected reports among ``n`` (module notes)."""
    p, q = o.p_star, o.q_star
    c = np.clip(np.asarray(c, dtype=np.float64), 0.0, float(n))
    if single:
        var_c = n * q * (1.0 - q) + c * (p - q) * (1.0 - p - q)
    else:
        r = q + (c / max(n, 1)) * (p - q)
        var_c = n * r * (1.0 - r)
    return var_c / (p - q) ** 2


def debiased(counts: np.ndarray, n: int, o: Any, *, single: bool) -> tuple[np.ndarray, np.ndarray]:
    """Debiased item frequencies and their (plug-in) variances (see the module notes)."""
    f = (counts - n * o.q_star) / (o.p_star - o.q_star)
    return f, count_variance(f, n, o, single=single)


def project_simplex(v: np.ndarray, total: float) -> np.ndarray:
    """Euclidean projection of ``v`` onto {x ≥ 0, Σx = total} (sort-based, O(d log d)).

    Examples
    --------
    >>> project_simplex(np.array([3.0, -1.0, 1.0]), 2.0).tolist()
    [2.0, 0.0, 0.0]
    """
    v = np.asarray(v, dtype=np.float64)
    if v.size == 0 or total <= 0:
        return np.zeros_like(v)
    u = np.sort(v)[::-1]
    css = np.cumsum(u) - total
    ks = np.arange(1, v.size + 1)
    rho = int(np.flatnonzero(u - css / ks > 0)[-1])
    theta = css[rho] / (rho + 1)
    return np.maximum(v - theta, 0.0)


def estimate_counts(
    reports: Any,
    zones: Any = None,
    *,
    include_outside: bool = False,
    geometry: bool = False,
    max_set_size: int | None = None,
    simultaneous: bool = False,
) -> pd.DataFrame:
    """Estimated counts with 95 % intervals from a report table of :func:`geoldp.report`.

    Parameters
    ----------
    reports : pandas.DataFrame
        The report table (or a slice of it: pandas keeps its ledger). A table made with
        ``user_budget="split"`` is estimated part by part (its rows grouped by the ``epsilon`` column,
        which must be kept) and the parts added (see the module notes).
    zones : GeoDataFrame or GeoSeries, optional
        The **same** public zones the reports were made over (checked against the ledger's digest);
        labels the rows with the zones' index. Without it, zones are labelled 0, 1, ….
    include_outside : bool, default False
        Also return the outside category (label ``"outside"``).
    geometry : bool, default False
        For ``"visited_zone"`` with ``zones``: return a GeoDataFrame with each zone's geometry.
    max_set_size : int, optional
        For padded ``"visited_zone"`` or ``"transitions"`` reports (``pad_length`` ℓ > 1): a **public**
        bound M on the number of zones (the outside category included) one trajectory visits, or of the
        distinct transitions it makes, known without looking at the data (for example from the
        trajectories' public maximum number of points). Default: the domain's size (the zones + 1, or
        their ordered pairs). A smaller M narrows the upper ends; an M below a trajectory's true number
        of items voids their guarantee. With M ≤ ℓ the counts are unbiased and the interval is
        symmetric.
    simultaneous : bool, default False
        Family-wise intervals: all the returned rows' intervals cover their counts together with
        probability at least 95 % (Bonferroni: each at the level 1 − 5 %/rows). Wider; use them when a
        map or a list of cells is read as a whole (which cells are busy), not one cell at a time.

    Returns
    -------
    pandas.DataFrame
        ``"visited_zone"``: one row per zone (index ``zone``); ``"od"`` and ``"transitions"``: one row per
        ordered pair (index ``origin``, ``destination``; transitions skip a == b). Columns ``estimate``
        (unbiased for the estimand below: it may be negative or above the number of reports, and outside
        the interval), ``std_error``, ``lower``, ``upper`` (95 % for the **count**, within [0, number of
        reports]), ``projected`` (the point estimate of the count: the non-negative projection of the
        estimates with the reports' total, then kept inside [``lower``, ``upper``]) and ``support`` (the
        raw support count). The intervals are cell by cell, not simultaneous: over many cells some miss.

        ``estimate`` and ``std_error`` are those of ℓ·f̂: for ``"visited_zone"`` with ℓ > 1 that
        estimates Σ min(1, ℓ/|S|) over the trajectories visiting the zone (|S| the number of zones a
        trajectory visits), which is below the visit count when some trajectories visit more than ℓ
        zones (with ℓ = 1: each trajectory's share 1/|S|). ``lower`` and ``upper`` always bound the
        **visit count** itself: ``lower`` is estimate − 1.96·std_error (at least 0), and ``upper`` adds
        the most the trajectories visiting more than ℓ zones can be missing (bounded with the padding
        dummies' own count of the trajectories with fewer than ℓ zones and ``max_set_size``; see the
        module notes), at most the number of reports.
        The interval covers the visit count with probability at least 95 % (a union bound over its
        three one-sided bounds, up to their normal approximations) whatever the set sizes; it is
        conservative, and can be far wider than 2·1.96·std_error when many trajectories visit more than
        ℓ zones; padded ``"transitions"`` likewise for the trajectories making each transition. For
        ``"od"`` (one pair per trajectory) and with ``max_set_size`` ≤ ℓ the interval is
        estimate ± 1.96·std_error, clipped to [0, number of reports].

    Raises
    ------
    TypeError, ValueError
        Not a report table; zones that differ from the reports' zones; ``max_set_size`` not a positive
        int, or given for ``"od"`` reports (one pair per trajectory: nothing to bound).

    Examples
    --------
    >>> import geopandas as gpd
    >>> from shapely.geometry import LineString
    >>> from geoldp.reports import report
    >>> from geoldp import zone_grid
    >>> trips = gpd.GeoDataFrame(geometry=[LineString([(0.1, 0.1), (0.9, 0.9)])] * 400, crs="EPSG:4326")
    >>> zones = zone_grid((0.0, 0.0, 1.0, 1.0), cells=2)
    >>> est = estimate_counts(report(trips, zones, epsilon=4.0, rng=1), zones)
    >>> est.columns.tolist()
    ['estimate', 'std_error', 'lower', 'upper', 'projected', 'support']
    >>> bool(est.loc[0, "lower"] < 200 < est.loc[0, "upper"])
    True

    Padded reports (ℓ = 2): by default the upper ends allow trips visiting up to all 5 values (4 zones
    and the outside category), at most the 400 reports; a public bound of 2 zones per trip (each trip
    here visits 2) makes the counts unbiased and the interval symmetric:

    >>> rep2 = report(trips, zones, epsilon=4.0, pad_length=2, rng=1)
    >>> estimate_counts(rep2, zones)["upper"].round().tolist()
    [400.0, 17.0, 50.0, 400.0]
    >>> estimate_counts(rep2, zones, max_set_size=2)["upper"].round().tolist()
    [400.0, 5.0, 18.0, 400.0]
    """
    caller = "geoldp.reports.estimate_counts"
    dc = debiased_counts(
        reports, zones, include_outside=include_outside, max_set_size=max_set_size, caller=caller
    )
    est, se = dc.estimate, dc.std_error
    n = float(dc.n)
    z, z_split = Z95, _Z_SPLIT
    if simultaneous:  # Bonferroni over the returned rows
        alpha = 0.05 / max(len(est), 1)
        z, z_split = _normal_quantile(1.0 - alpha / 2.0), _normal_quantile(1.0 - alpha / 4.0)
    # a count lies in [0, n]: clipping the interval to it never drops the true count
    lower = np.clip(est - z * se, 0.0, n)
    upper = est + z * se
    if dc.padded:  # sets (ℓ = 1 included): the estimand is below the count by the large sets' missing mass
        upper = padded_upper(dc.f, dc.var, dc.n, dc.design, dc.max_set_size, z=z_split)[dc.keep]
    upper = np.clip(upper, lower, n)
    projected = np.clip((project_simplex(dc.f, n) * dc.pad_length)[dc.keep], lower, upper)
    out = pd.DataFrame(
        {
            "estimate": est,
            "std_error": se,
            "lower": lower,
            "upper": upper,
            "projected": projected,
            "support": dc.counts[dc.keep],
        },
        index=dc.index,
    )
    z = dc.zones
    if geometry and z is not None and dc.statistic == "visited_zone" and not include_outside:
        import geopandas as gpd

        return gpd.GeoDataFrame(out, geometry=np.asarray(z.geoms), crs=z.crs)
    return out


def _normal_quantile(p: float) -> float:
    from scipy.stats import norm

    return float(norm.ppf(p))


@dataclass(frozen=True, slots=True)
class DebiasedCounts:
    """A report table's debiased counts over its whole domain, and the rows :func:`estimate_counts` returns.

    Made by :func:`debiased_counts`. ``f`` and ``var`` are the debiased item frequencies f̂ of every domain
    value (dummies included) and their plug-in variances, summed over the table's ε parts; ``keep`` the
    domain positions of the returned rows and ``index`` their labels. The count of a row is estimated by
    ``pad_length``·f̂ (see the module notes).
    """

    counts: np.ndarray
    design: Any
    f: np.ndarray
    index: Any
    keep: np.ndarray
    max_set_size: int
    n: int
    parts: list[tuple[int, Any]]
    var: np.ndarray
    zones: Any

    @property
    def statistic(self) -> str:
        """The reports' statistic."""
        return str(self.design.statistic)

    @property
    def pad_length(self) -> int:
        """ℓ, the padded set length."""
        return int(self.design.pad_length)

    @property
    def padded(self) -> bool:
        """Whether the estimate may be below the count: a set statistic, ``pad_length`` < ``max_set_size``.

        Then a row's estimate is unbiased for Σ min(1, ℓ/|S|) over the trajectories holding it, not for
        their number (with ℓ = 1: each trajectory's share 1/|S|).
        """
        return self.statistic in ("visited_zone", "transitions") and self.pad_length < self.max_set_size

    @property
    def estimate(self) -> np.ndarray:
        """ℓ·f̂ of the returned rows."""
        return np.asarray(self.f[self.keep] * self.pad_length, dtype=np.float64)

    @property
    def std_error(self) -> np.ndarray:
        """The plug-in standard error of ℓ·f̂ of the returned rows (its variance at its own estimate)."""
        return np.sqrt(self.var[self.keep]) * self.pad_length

    def std_error_at(self, count: np.ndarray) -> np.ndarray:
        """Standard error of ℓ·f̂ of the returned rows if their estimand were ``count`` (one per row).

        The variance formula of the module notes evaluated at the frequency ``count``/ℓ instead of the
        row's own estimate, shared among the table's ε parts in proportion to their reports.
        """
        freq = np.asarray(count, dtype=np.float64) / self.pad_length
        single = self.statistic == "od"
        var = sum(
            count_variance(freq * (n_k / max(self.n, 1)), n_k, o, single=single) for n_k, o in self.parts
        )
        return np.sqrt(np.asarray(var, dtype=np.float64)) * self.pad_length

    def large_sets_upper(self, z: float) -> float:
        """Upper bound N⁺ on the trajectories with at least ℓ items, at the one-sided normal quantile ``z``.

        Released by the padding dummies: dummy 0 is sampled, with probability 1/ℓ, by exactly the sets
        with fewer than ℓ items. Without dummies (ℓ = 1 for visited zones: every trajectory has an item)
        it is the number of reports.
        """
        return _large_sets_upper(self.f, self.var, self.n, self.design, z)


def _large_sets_upper(f: np.ndarray, var: np.ndarray, n: int, des: Any, z: float) -> float:
    """N⁺ = n − ℓ·(f̂(dummy 0) − z·se), clipped to [0, n]; n without dummies (see ``large_sets_upper``)."""
    if des.n_dummies == 0:
        return float(n)
    d0 = int(des.base)  # dummy 0: sampled, with probability 1/ℓ, by exactly the sets with fewer than ℓ items
    return float(np.clip(n - float(des.pad_length) * (f[d0] - z * np.sqrt(var[d0])), 0.0, float(n)))


def debiased_counts(
    reports: Any,
    zones: Any = None,
    *,
    include_outside: bool = False,
    max_set_size: int | None = None,
    caller: str = "geoldp.reports.debiased_counts",
) -> DebiasedCounts:
    """The debiased counts of a report table, as :func:`estimate_counts` computes them (parameters there).

    Returns
    -------
    DebiasedCounts
        The whole domain's debiased frequencies and variances, the reports' design, the returned rows,
        and the public bound ``max_set_size`` (default: the domain's size).
    """
    led = report_ledger(reports, caller=caller)
    des = scheme_of(led)
    labels: Any = pd.RangeIndex(des.n_zones)
    z = None
    if zones is not None:
        z = check_zones(zones, caller=caller)
        if z.size != des.n_zones or z.digest() != led.settings["domain"].get("zones_digest"):
            raise ValueError(
                f"The 'zones' passed to {caller} are not the zones the reports were made over "
                f"({z.size} zones given, {des.n_zones} in the reports' ledger, or different geometry)."
            )
        labels = z.index
    bound = _set_size_bound(max_set_size, des, caller)
    parts = _debiased_parts(reports, led, des, caller)
    # part by part, starting from the first (one part: its values as they are)
    columns = zip(*(p[:4] for p in parts), strict=True)
    counts, n, f, var = (functools.reduce(operator.add, column) for column in columns)
    keep, index = _rows(des.statistic, des.n_zones, labels, include_outside)
    return DebiasedCounts(
        counts=counts,
        design=des,
        f=f,
        index=index,
        keep=keep,
        max_set_size=bound,
        n=int(n),
        parts=[(int(p[1]), p[4]) for p in parts],
        var=var,
        zones=z,
    )


def _debiased_parts(reports: Any, led: ReleaseLedger, des: Any, caller: str) -> list[tuple]:
    """``(C, n, f̂, Var f̂, oracle)`` of each ε part of the table (one part without a per-user budget).

    Each part (its rows share one ``epsilon`` value) is debiased with its own design; the parts hold
    different trajectories, so their unbiased estimates and their variances add.
    """
    single = des.statistic == "od"
    epsilons = led.part_epsilons
    if epsilons is None:
        parts = [(reports, des)]
    else:
        # a slice without rows has no part: debiasing no rows gives the zeros under any design
        parts = [
            (reports.iloc[np.flatnonzero(rows)], scheme_of(led, eps))
            for eps, rows in _split_rows(reports, epsilons, caller)
        ] or [(reports, des)]
    sums = []
    for rows, part_des in parts:
        c_k, n_k = support_counts(rows, part_des)
        sums.append((c_k, n_k, *debiased(c_k, n_k, part_des.oracle, single=single), part_des.oracle))
    return sums


def _split_rows(reports: Any, epsilons: list[float], caller: str) -> list[tuple[float, np.ndarray]]:
    """The rows (a mask) of each ε part of a ``user_budget="split"`` table that has any (checked)."""
    if EPSILON_COLUMN not in reports.columns:
        raise ValueError(
            f"The 'reports' passed to {caller} were made with user_budget='split' but have lost their "
            f"{EPSILON_COLUMN!r} column (each row's budget); pass the whole table or keep that column."
        )
    row_eps = np.asarray(reports[EPSILON_COLUMN].to_numpy(), dtype=np.float64)
    unknown = ~np.isin(row_eps, np.asarray(epsilons, dtype=np.float64))
    if unknown.any():
        raise ValueError(
            f"Row position {int(np.argmax(unknown))} of the 'reports' passed to {caller} has an "
            f"{EPSILON_COLUMN!r} value that is not one of the budgets in the table's ledger: pass the table "
            "returned by geoldp.report (or rows of it) unchanged."
        )
    return [(eps, row_eps == eps) for eps in epsilons if (row_eps == eps).any()]


def _set_size_bound(max_set_size: Any, des: Any, caller: str) -> int:
    """The public bound M on a trajectory's number of items (``max_set_size`` checked; at most the domain)."""
    if max_set_size is None:
        return int(des.base)
    if des.statistic == "od":
        raise ValueError(
            f"The 'max_set_size' parameter of {caller} applies to the set statistics 'visited_zone' and "
            "'transitions' only (these reports are 'od': one pair per trajectory); leave it out."
        )
    return min(check_int_range(max_set_size, "max_set_size", caller=caller, minimum=1), int(des.base))


def padded_upper(
    f: np.ndarray, var: np.ndarray, n: int, des: Any, max_set_size: int, *, z: float = _Z_SPLIT
) -> np.ndarray:
    """Upper ends of the counts of padded ``"visited_zone"`` or ``"transitions"`` reports (whole domain).

    ``f`` and ``var`` are the debiased frequencies and variances of every domain value (dummies
    included), ``max_set_size`` the public bound M > ℓ on a trajectory's number of items. Each end is
    e⁺ + min((1 − ℓ/M)·N⁺, (M/ℓ − 1)·max(e⁺, 0)), at most ``n``, where e⁺ bounds the padded estimand
    and N⁺ the trajectories with at least ℓ items, each at the one-sided 1.25 % level.
    """
    ell = float(des.pad_length)
    m = float(max_set_size)
    e_hi = ell * (f + z * np.sqrt(var))
    n_big_hi = _large_sets_upper(f, var, n, des, z)
    missing = np.minimum((1.0 - ell / m) * n_big_hi, (m / ell - 1.0) * np.maximum(e_hi, 0.0))
    return np.minimum(e_hi + missing, float(n))


def _rows(statistic: str, n_zones: int, labels: Any, include_outside: bool) -> tuple[np.ndarray, Any]:
    """Domain positions to return and their index (zones, or ordered zone pairs)."""
    k = n_zones + 1
    names = np.empty(k, dtype=object)  # an object array: labels of any type, indexed without a loop
    names[:n_zones] = list(labels)
    names[n_zones] = "outside"
    if statistic == "visited_zone":
        if not include_outside:
            return np.arange(n_zones), labels.copy().rename("zone")
        return np.arange(k), pd.Index(list(names), name="zone")
    a, b = np.divmod(np.arange(k * k), k)
    ok = np.ones(k * k, dtype=bool) if include_outside else (a < n_zones) & (b < n_zones)
    if statistic == "transitions":
        ok &= a != b
    keep = np.flatnonzero(ok)
    index = pd.MultiIndex.from_arrays([names[a[keep]], names[b[keep]]], names=["origin", "destination"])
    return keep, index


def true_counts(
    gdf: Any, zones: Any, *, statistic: str = "visited_zone", include_outside: bool = False
) -> Any:
    """The exact counts of a statistic computed **from the private trajectories** (for evaluation only).

    Trajectories visiting each zone, per OD pair, or having each transition, in the row layout of
    :func:`estimate_counts`. This reads the raw data: use it to measure an estimator's error in
    experiments, never as something to publish.

    Returns
    -------
    pandas.Series
        Named ``count``.
    """
    from geoldp._core import frames as _frames
    from geoldp._core.validation import check_option
    from geoldp.reports.release import STATISTICS, statistic_items
    from geoldp.zones import zone_of_vertices

    caller = "geoldp.reports.true_counts"
    statistic = check_option(statistic, "statistic", STATISTICS, caller, case_insensitive=True)
    gdf = _frames.check_frame(gdf, caller=caller)
    z = check_zones(zones, caller=caller)
    ft = _frames.extract(gdf, caller=caller)
    zone = zone_of_vertices(z, ft.lon, ft.lat)
    _, items = statistic_items(statistic, zone, ft.offsets, z.size)
    k = z.size + 1
    counts = np.bincount(items, minlength=k if statistic == "visited_zone" else k * k)
    keep, index = _rows(statistic, z.size, z.index, include_outside)
    return pd.Series(counts[keep], index=index, name="count")

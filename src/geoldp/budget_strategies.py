"""Per-user budget strategies of a release: share a user's ε over her trips, or keep k trips per user.

A user with ``k`` trajectories in a release spends ``k·ε``. Two public rules fit a release to a per-user
budget (``gdf.ldp.perturb(..., user_col=...)``, and :func:`geoldp.report`, whose rows are estimated part
by part): ``user_budget="split"`` perturbs each of a user's ``k`` trajectories with ``ε/k`` (rounded down;
the column ``"epsilon"`` holds each row's budget, :func:`release_parts` splits such a release for the
estimators) and ``max_per_user=k`` keeps at most ``k`` trajectories per user and drops the others
(:func:`select_per_user` gives the same choice as a mask); both can be combined. :doc:`/user_guide`
("Budgets across releases") says what each rule releases, charges and records in the ledger (never a
user id or a per-user count).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd

from geoldp import accounting
from geoldp._core.ledger import ReleaseLedger, attach, require
from geoldp._core.ledger import release_parts as release_parts  # its reader, owned by the ledger
from geoldp._core.randomness import resolve_rng
from geoldp._core.validation import check_int_min, missing_column

__all__ = ["release_parts", "select_per_user"]

#: ``user_budget`` values: ε per trajectory (the default) or ε per user shared over her trajectories.
USER_BUDGETS = ("trajectory", "split")
#: ``select_trips`` values for ``max_per_user``.
SELECT = ("first", "last", "random")
#: Output column holding each row's per-trajectory ε in a ``user_budget="split"`` release.
EPSILON_COLUMN = "epsilon"

#: Appended to the accountant's refusal of a ``gdf.ldp.perturb`` release: the options that fit a per-user
#: budget.
REFUSAL_ADVICE = (
    " To fit a per-user budget, pass user_budget='split' (each user's epsilon shared over her trips; "
    "CLI --user-budget split) or max_per_user=k (keep at most k trips per user; CLI --max-per-user K)."
)


def split_epsilon(epsilon: float, k: int) -> float:
    """The budget of each of ``k`` trajectories sharing ``epsilon``: ε/k rounded down (``k·result ≤ ε``).

    Examples
    --------
    >>> split_epsilon(4.0, 3) * 3 <= 4.0
    True
    """
    share = float(Fraction(float(epsilon)) / int(k))
    while Fraction(share) * int(k) > Fraction(float(epsilon)):  # the exact sum never passes ε
        share = math.nextafter(share, 0.0)
    return share


def _check_user_col(gdf: Any, user_col: Any, caller: str) -> None:
    if user_col is None:
        raise ValueError(
            f"The 'user_budget' and 'max_per_user' parameters of {caller} need 'user_col': name the column "
            "that holds each row's user id."
        )
    accounting.user_ids(gdf, user_col, caller=caller)  # present, and no row without a user


def _trip_codes(gdf: Any, user_col: Any, traj_id_col: Any) -> tuple[np.ndarray, np.ndarray]:
    """``(user code, trip code)`` per row; trips in order of first appearance (one row = one trip)."""
    # one code per user under the accountant's key: 7, "7" and "007" are one user, as they are charged
    codes, uniques = pd.factorize(gdf[user_col], sort=False)
    keys: dict[int | str, int] = {}
    remap = np.fromiter(
        (keys.setdefault(accounting.user_key(u), len(keys)) for u in uniques),
        dtype=np.int64,
        count=len(uniques),
    )
    users = remap[codes]
    if traj_id_col is None:
        return users, np.arange(len(gdf))
    pairs = pd.MultiIndex.from_arrays([users, gdf[traj_id_col].to_numpy()])
    return users, pd.factorize(pairs, sort=False)[0]


def select_per_user(
    gdf: Any,
    user_col: Any,
    max_per_user: int,
    *,
    select_trips: str = "first",
    traj_id_col: Any = None,
    rng: Any = None,
) -> np.ndarray:
    """Which rows a ``max_per_user`` release keeps: a boolean mask over the rows of ``gdf``.

    Parameters
    ----------
    gdf : pandas.DataFrame
        One trajectory per row, or Point rows grouped by ``traj_id_col``.
    user_col : column label
        Each row's user id.
    max_per_user : int
        Trajectories kept per user, ≥ 1.
    select_trips : {"first", "last", "random"}, default "first"
        The first or last ``max_per_user`` trajectories of each user in row order (order of first
        appearance for Point rows; sort by start time first to keep the earliest trips), or a uniformly
        random subset of that size drawn with ``rng``.
    traj_id_col : column label, optional
        For Point rows: a trajectory is a ``(user, traj_id)`` pair.
    rng : {None, int, Generator, ...}, optional
        For ``"random"`` only (``None``: the OS CSPRNG).

    Returns
    -------
    numpy.ndarray of bool

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"user": ["a", "a", "b", "a"]})
    >>> select_per_user(df, "user", 2).tolist()
    [True, True, True, False]
    >>> select_per_user(df, "user", 2, select_trips="last").tolist()
    [False, True, True, True]
    """
    caller = "geoldp.budget_strategies.select_per_user"
    k = check_int_min(max_per_user, "max_per_user", minimum=1, caller=caller)
    if select_trips not in SELECT:
        raise ValueError(
            f"The 'select_trips' parameter of {caller} must be one of {SELECT}. Got {select_trips!r}."
        )
    _check_user_col(gdf, user_col, caller)
    if traj_id_col is not None and traj_id_col not in gdf.columns:
        raise missing_column("traj_id_col", caller, traj_id_col, gdf.columns)
    return _select(gdf, user_col, k, select_trips, traj_id_col, resolve_rng(rng))


def _select(gdf: Any, user_col: Any, k: int, select_trips: str, traj_id_col: Any, source: Any) -> np.ndarray:
    users, trips = _trip_codes(gdf, user_col, traj_id_col)
    first = pd.DataFrame({"u": users, "t": trips}).drop_duplicates("t")  # one row per trip, in order
    if select_trips == "random":
        # a uniform random k-subset per user: the k smallest of independent uniform keys
        keys = np.asarray(source.uniform(size=len(first)), dtype=np.float64)
        rank = first.assign(key=keys).groupby("u", sort=False)["key"].rank(method="first")
        keep_trip = (rank <= k).to_numpy()
    else:
        ascending = select_trips == "first"
        keep_trip = (first.groupby("u", sort=False).cumcount(ascending=ascending) < k).to_numpy()
    kept = np.zeros(int(trips.max()) + 1 if trips.size else 0, dtype=bool)
    kept[first["t"].to_numpy()[keep_trip]] = True
    return kept[trips]


def _trips_per_user(gdf: Any, user_col: Any, traj_id_col: Any) -> np.ndarray:
    """For every row, the number of trajectories of its user in ``gdf``."""
    users, trips = _trip_codes(gdf, user_col, traj_id_col)
    per_trip = pd.DataFrame({"u": users, "t": trips}).drop_duplicates("t")
    counts = per_trip.groupby("u", sort=False).size()
    return counts.reindex(users).to_numpy()


def _check_strategy(
    gdf: Any,
    *,
    epsilon: Any,
    user_col: Any,
    accountant: Any,
    user_budget: str,
    max_per_user: Any,
    select_trips: str,
    caller: str,
) -> tuple[int | None, float]:
    """The checked public parameters of a per-user release: ``(max_per_user, epsilon)``."""
    from geoldp._core.validation import check_epsilon

    if user_budget not in USER_BUDGETS:
        raise ValueError(
            f"The 'user_budget' parameter of {caller} must be one of {USER_BUDGETS}. Got {user_budget!r}."
        )
    if max_per_user is not None:
        max_per_user = check_int_min(max_per_user, "max_per_user", minimum=1, caller=caller)
    if select_trips not in SELECT:
        raise ValueError(
            f"The 'select_trips' parameter of {caller} must be one of {SELECT}. Got {select_trips!r}."
        )
    if select_trips != "first" and max_per_user is None:
        raise ValueError(f"The 'select_trips' parameter of {caller} goes with 'max_per_user'.")
    if accountant is not None and not isinstance(accountant, accounting.BudgetAccountant):
        raise TypeError(
            f"The 'accountant' parameter of {caller} must be a geoldp.BudgetAccountant. "
            f"Got {type(accountant).__name__}."
        )
    _check_user_col(gdf, user_col, caller)
    if not isinstance(epsilon, int | float | np.integer | np.floating) or isinstance(epsilon, bool):
        raise TypeError(
            f"The 'epsilon' parameter of {caller} must be a float with user_budget/max_per_user: pass the "
            "mechanism by name (mechanism='atp', epsilon=...)."
        )
    epsilon = check_epsilon(epsilon, caller=caller)
    return max_per_user, epsilon


def perturb_per_user(
    release: Callable[..., Any],
    gdf: Any,
    points: Any,
    *,
    epsilon: Any,
    user_col: Any,
    accountant: Any,
    user_budget: str,
    max_per_user: Any,
    select_trips: str,
    traj_id_col: Any,
    rng: Any,
    caller: str,
    configure: Callable[[list[tuple[float, int]]], dict[str, Any]] | None = None,
    finish: Callable[[Any, ReleaseLedger, ReleaseLedger, Any], tuple[Any, ReleaseLedger]] | None = None,
    **kwargs: Any,
) -> Any:
    """Release ``gdf`` under a per-user budget strategy (the driver behind ``user_budget``/``max_per_user``).

    ``release`` is the plain frame release (:func:`geoldp.accessor.perturb`, or :func:`geoldp.report`
    through an adapter), called once per distinct per-trajectory budget without an accountant; the charges
    are checked, all of them, before the first draw and committed once every part is released.

    Two hooks serve releases other than ``gdf.ldp.perturb`` (``user_budget="split"`` only):
    ``configure(parts)`` gets the public ``(epsilon, rows)`` of every part before the first draw (the
    values the output's ``epsilon`` column shows) and returns keyword arguments given to every part;
    ``finish(combined, ledger, first, points)`` turns the concatenated parts and the combined ledger
    (before its ``release_id``) into ``(release, ledger)``; by default a GeoDataFrame with the points'
    provenance.
    """
    max_per_user, epsilon = _check_strategy(
        gdf,
        epsilon=epsilon,
        user_col=user_col,
        accountant=accountant,
        user_budget=user_budget,
        max_per_user=max_per_user,
        select_trips=select_trips,
        caller=caller,
    )
    source = resolve_rng(rng)  # once, for the selection and every part

    rule: dict[str, Any] = {"strategy": user_budget, "user_col": str(user_col)}
    frame = gdf
    if max_per_user is not None:
        keep = _select(gdf, user_col, max_per_user, select_trips, traj_id_col, source)
        frame = gdf.iloc[np.flatnonzero(keep)]
        rule.update(
            {"max_per_user": max_per_user, "select_trips": select_trips, "dropped_rows_released": False}
        )
        if len(frame) == 0:  # unreachable: every user keeps at least one trip
            raise ValueError(f"{caller}: no rows left after max_per_user.")

    def charge_of(rows: Any, eps: float) -> accounting.PendingCharge | None:
        return accounting.charge_release(
            accountant, rows, user_col, eps, traj_id_col=traj_id_col, caller=caller, advice=REFUSAL_ADVICE
        )

    if user_budget == "trajectory":
        charge = None if accountant is None else charge_of(frame, epsilon)
        out = release(frame, points, epsilon=epsilon, traj_id_col=traj_id_col, rng=source, **kwargs)
        led = require(out, what="The release", caller=caller)
        if charge is not None:
            charge.commit(str(led.release_id))
            led = led.replace(accounting=charge.ledger())
        attach(out, led.replace(user_budget=rule))
        return out

    if EPSILON_COLUMN in frame.columns:
        raise ValueError(
            f"{caller}: user_budget='split' writes each row's budget to the column {EPSILON_COLUMN!r}, which "
            "the frame already has; rename that column first."
        )
    k_of_row = _trips_per_user(frame, user_col, traj_id_col)
    parts = sorted(set(k_of_row.tolist()))
    charges: list[accounting.PendingCharge] = []
    if accountant is not None:
        for k in parts:  # disjoint users: checking each part alone is checking the whole release
            pending = charge_of(frame.iloc[np.flatnonzero(k_of_row == k)], split_epsilon(epsilon, k))
            if pending is not None:
                charges.append(pending)
    if configure is not None:  # public: each part's budget and row count, as the epsilon column shows
        kwargs.update(
            configure([(split_epsilon(epsilon, k), int(np.count_nonzero(k_of_row == k))) for k in parts])
        )
    outs: list[tuple[np.ndarray, Any]] = []
    ledgers: list[dict[str, Any]] = []
    first: ReleaseLedger | None = None
    for k in parts:
        pos = np.flatnonzero(k_of_row == k)
        eps_k = split_epsilon(epsilon, k)
        part = release(frame.iloc[pos], points, epsilon=eps_k, traj_id_col=traj_id_col, rng=source, **kwargs)
        part[EPSILON_COLUMN] = eps_k
        led = require(part, what="A part of the release", caller=caller)
        first = first if first is not None else led
        outs.append((pos, part))
        ledgers.append({"epsilon": eps_k, "trips_per_user": int(k), "ledger": led.settings.get("ledger", {})})
        part.attrs = {}  # the parts' ledgers differ: pandas would drop them with a warning
    order = np.concatenate([pos for pos, _ in outs])
    combined = pd.concat([p for _, p in outs], axis=0) if len(outs) > 1 else outs[0][1]
    combined = combined.iloc[np.argsort(order, kind="stable")]
    if first is None:  # unreachable: every user is in one part
        raise RuntimeError(f"{caller}: a split release without parts.")
    base = first.with_settings(
        unit="one user: her epsilon is shared by her trajectories in this release",
        ledger={"unit": "one trajectory, per part", "by_part": ledgers},
        unprotected_columns=[*first.settings.get("unprotected_columns", []), EPSILON_COLUMN],
    )
    rule.update(
        {
            "epsilon_per_user": epsilon,
            "epsilon_column": EPSILON_COLUMN,
            "note": "each row's epsilon column tells how many trips its user contributed to this release",
        }
    )
    base = base.replace(epsilon=epsilon, user_budget=rule, release_id=None, points=None, accounting=None)
    out, ledger = (finish or _finish_frame)(combined, base, first, points)
    if charges:  # the parts are one release: one charge under its id
        accounting.PendingCharge.merge(charges).commit(str(ledger.release_id))
        ledger = ledger.replace(
            accounting={
                **charges[0].ledger(),
                "composition": "sequential per user: her trips share her epsilon (k trips at epsilon/k each)",
            }
        )
    out.attrs = {}
    attach(out, ledger)
    del k_of_row
    return out


def _finish_frame(
    combined: Any, base: ReleaseLedger, first: ReleaseLedger, points: Any
) -> tuple[Any, ReleaseLedger]:
    """The ``finish`` of a ``gdf.ldp.perturb`` split release: a GeoDataFrame with P's provenance."""
    import geopandas as gpd

    from geoldp._core.point_record import provenance_of

    out = gpd.GeoDataFrame(combined, geometry=combined.geometry.name, crs=combined.crs)
    ledger = accounting.finish_release(base.record(), released=out, points_provenance=provenance_of(points))
    # the parts' P: the same for all
    return out, ledger.replace(points=first.points if first.points is not None else ledger.points)

"""Privacy-budget accounting across releases: :class:`BudgetAccountant`, and the ledger of combined frames.

A single release spends ε per trajectory (its ledger, ``released.attrs["geoldp"]``, says how). A user who
contributes several trajectories, to one release or to several, spends the sum (sequential composition):
``k`` trajectories of user ``u`` at ε each cost ``u`` ``k·ε``. A :class:`BudgetAccountant` keeps that sum
per user across calls and refuses, before any random draw, a release that would take a user past the
total::

    >>> acc = geoldp.BudgetAccountant(8.0)  # doctest: +SKIP
    >>> r1 = trips.ldp.perturb(P, epsilon=4.0, accountant=acc, user_col="user")  # doctest: +SKIP
    >>> acc.remaining("alice")  # doctest: +SKIP
    4.0

Sums are exact (:class:`fractions.Fraction` of the float budgets), so 10 releases at ε = 0.1 fit a total
of 1.0 only if the exact binary sum does.

Ledgers of combined frames
--------------------------
Each release gets a unique ``release_id`` in its ledger (a random UUID; for seeded experiment runs a digest
of the release itself, so that they stay reproducible byte for byte). pandas keeps ``attrs`` through
``pd.concat``, ``merge`` and ``join`` only when every input has non-empty, equal ``attrs``; so

* parts of **one** release put back together (``pd.concat([r.iloc[:5], r.iloc[5:]])``, ``r.join(r[[c]])``)
  keep its ledger, which is still correct (post-processing costs no budget);
* **different** releases combined (``pd.concat([r1, r2])``, ``r1.merge(r2, ...)``) lose the ledger, and a
  :class:`~geoldp.GeoLDPWarning` says so; the combined frame never carries a ledger that understates the
  spend. Track such spends with a :class:`BudgetAccountant`;
* a release joined with a frame without a ledger loses the ledger silently (pandas compares nothing
  then): the result has no ledger, never a wrong one.
"""

from __future__ import annotations

import hashlib
import json
import math
import numbers
import os
import sys
import tempfile
import uuid
import warnings
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

import numpy as np

from geoldp._validation import check_epsilon
from geoldp.errors import BudgetError, GeoLDPWarning

__all__ = [
    "FORMAT",
    "BudgetAccountant",
    "PendingCharge",
    "ReleaseLedger",
    "charge_release",
    "finish_release",
]

#: The ``"format"`` member of a saved accountant.
FORMAT = "geoldp.BudgetAccountant"
_VERSION = 1


def _check_user(value: Any, *, where: str) -> int | str:
    """A user id as a plain int or str (JSON keeps both); anything else is rejected without echoing it."""
    if isinstance(value, bool | np.bool_):
        raise TypeError(f"User ids must be int or str; {where} is a bool.")
    if isinstance(value, numbers.Integral | np.integer):
        return int(value)
    if isinstance(value, str | np.str_):
        return str(value)
    raise TypeError(
        f"User ids must be int or str; {where} is a {type(value).__name__}. Cast the user column with "
        ".astype(str) or .astype('int64') (and drop rows without a user)."
    )


class BudgetAccountant:
    """Per-user privacy budget across releases (sequential composition), saved and loaded as JSON.

    Parameters
    ----------
    total_epsilon : float
        Each user's total budget, > 0.

    Attributes
    ----------
    total_epsilon : float
        Each user's total budget.
    spent : dict
        ``{user: ε spent}`` (a copy; users never charged are absent).

    See Also
    --------
    geoldp.accessor.perturb : ``accountant=`` and ``user_col=`` charge a release.

    Notes
    -----
    The accountant holds the user ids it has charged: it is the data holder's record, keep it with the
    private data (never publish it). It is not thread-safe.

    Examples
    --------
    >>> acc = BudgetAccountant(2.0)
    >>> acc.charge({"a": 1.5, "b": 0.5})
    >>> acc.remaining("a"), acc.remaining("c")
    (0.5, 2.0)
    """

    __slots__ = ("_spent", "_total")

    def __init__(self, total_epsilon: float) -> None:
        self._total = check_epsilon(total_epsilon, caller="BudgetAccountant", name="total_epsilon")
        self._spent: dict[int | str, Fraction] = {}

    # -- queries ------------------------------------------------------------------------------------
    @property
    def total_epsilon(self) -> float:
        """Each user's total budget."""
        return self._total

    @property
    def spent(self) -> dict[int | str, float]:
        """``{user: ε spent}`` for every user charged so far (a copy)."""
        return {u: float(s) for u, s in self._spent.items()}

    def spent_by(self, user: Any) -> float:
        """The budget ``user`` has spent (0 for a user never charged)."""
        return float(self._spent.get(_check_user(user, where="'user'"), Fraction(0)))

    def remaining(self, user: Any) -> float:
        """The budget ``user`` has left: ``total_epsilon - spent`` (rounded down, never negative)."""
        left = Fraction(self._total) - self._spent.get(_check_user(user, where="'user'"), Fraction(0))
        value = float(left)
        if Fraction(value) > left:  # round towards 0 so that a charge of `remaining` always fits
            value = math.nextafter(value, 0.0)
        return max(value, 0.0)

    def __len__(self) -> int:
        return len(self._spent)

    def __repr__(self) -> str:  # no user ids
        return f"BudgetAccountant(total_epsilon={self._total!r}, users={len(self._spent)})"

    # -- charging -----------------------------------------------------------------------------------
    def _costs(self, costs: Mapping[Any, Any]) -> dict[int | str, Fraction]:
        if not isinstance(costs, Mapping):
            raise TypeError(
                f"BudgetAccountant costs must be a mapping {{user: epsilon}}. Got {type(costs).__name__}."
            )
        out: dict[int | str, Fraction] = {}
        for pos, (user, eps) in enumerate(costs.items()):
            u = _check_user(user, where=f"user number {pos}")
            if isinstance(eps, bool | np.bool_) or not isinstance(
                eps, numbers.Real | np.integer | np.floating
            ):
                raise TypeError(
                    f"BudgetAccountant costs must be real numbers; the cost of user number {pos} is not."
                )
            f = float(eps)
            if not (0.0 <= f < math.inf):
                raise ValueError(
                    f"BudgetAccountant costs must be finite and >= 0; user number {pos} has {f!r}."
                )
            out[u] = out.get(u, Fraction(0)) + Fraction(f)
        return out

    def check(self, costs: Mapping[Any, Any]) -> None:
        """Raise :class:`~geoldp.BudgetError` if any charge in ``costs`` would exceed a user's total.

        Parameters
        ----------
        costs : mapping
            ``{user: ε}`` to be charged.

        Raises
        ------
        BudgetError
            Naming how many users would exceed their total (never which).
        """
        self._refuse(self._costs(costs))

    def _refuse(self, costs: dict[int | str, Fraction]) -> None:
        total = Fraction(self._total)
        over = [u for u, c in costs.items() if self._spent.get(u, Fraction(0)) + c > total]
        if over:
            raise BudgetError(
                f"Release refused (nothing was drawn or charged): it would take {len(over)} of the "
                f"{len(costs)} user(s) in it past their total budget of {self._total:g}. Drop their rows "
                "(BudgetAccountant.remaining(user) gives each user's budget left), release fewer "
                "trajectories per user, or use a smaller epsilon."
            )

    def charge(self, costs: Mapping[Any, Any]) -> None:
        """Charge ``{user: ε}`` all at once, or nothing if any user would exceed the total.

        Raises
        ------
        BudgetError
            As :meth:`check`; then nothing is charged.
        """
        parsed = self._costs(costs)
        self._refuse(parsed)
        for u, c in parsed.items():
            self._spent[u] = self._spent.get(u, Fraction(0)) + c

    # -- persistence --------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """A JSON-able dict; the per-user spends are exact fractions written as strings (``"3/2"``)."""
        return {
            "format": FORMAT,
            "version": _VERSION,
            "total_epsilon": self._total,
            "spent": [[u, str(s)] for u, s in self._spent.items()],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> BudgetAccountant:
        """Rebuild an accountant from :meth:`to_dict` output.

        Raises
        ------
        ValueError
            Not a geoldp accountant record, or a malformed entry (named by position).
        """
        if not isinstance(data, Mapping) or data.get("format") != FORMAT:
            raise ValueError(f"Not a saved BudgetAccountant: the 'format' member must be {FORMAT!r}.")
        if data.get("version") != _VERSION:
            raise ValueError(f"Unsupported BudgetAccountant version; this geoldp reads version {_VERSION}.")
        try:
            acc = cls(data["total_epsilon"])
        except (KeyError, TypeError):
            raise ValueError("A saved BudgetAccountant needs a numeric 'total_epsilon' > 0.") from None
        entries = data.get("spent")
        if not isinstance(entries, list):
            raise ValueError("A saved BudgetAccountant needs a 'spent' list of [user, spent] pairs.")
        for pos, entry in enumerate(entries):
            try:
                user, raw = entry
                spent = Fraction(raw)
            except (TypeError, ValueError, ZeroDivisionError):
                raise ValueError(
                    f"Entry {pos} of 'spent' in a saved BudgetAccountant must be [user, \"p/q\"]."
                ) from None
            if spent < 0 or not isinstance(raw, str):
                raise ValueError(f"Entry {pos} of 'spent' in a saved BudgetAccountant is not a valid spend.")
            u = _check_user(user, where=f"entry {pos} of 'spent'")
            if u in acc._spent:
                raise ValueError(f"Entry {pos} of 'spent' in a saved BudgetAccountant repeats a user.")
            acc._spent[u] = spent
        return acc

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the accountant as JSON atomically (a temporary file in the same folder, then os.replace).

        A crash mid-write leaves the previous file intact, never a truncated one.
        """
        path = os.fspath(path)
        folder = os.path.dirname(os.path.abspath(path))
        fd, tmp = tempfile.mkstemp(prefix=".geoldp-accountant-", suffix=".tmp", dir=folder)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(self.to_dict(), fh, indent=1)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> BudgetAccountant:
        """Read an accountant written by :meth:`save`.

        Raises
        ------
        FileNotFoundError, ValueError
            No such file; not valid JSON or not a saved accountant.
        """
        with open(os.fspath(path), encoding="utf-8") as fh:
            try:
                data = json.load(fh)
            except json.JSONDecodeError:
                raise ValueError("The BudgetAccountant file is not valid JSON.") from None
        return cls.from_dict(data)


# ------------------------------------------------------------------------------------------------------
# the hooks used by a release (perturb)


class PendingCharge:
    """A checked charge of one release, committed once the release exists (:func:`finish_release`)."""

    __slots__ = ("_acc", "_costs", "_done", "epsilon", "user_col")

    def __init__(
        self, acc: BudgetAccountant, costs: dict[int | str, Fraction], user_col: Any, epsilon: float
    ):
        self._acc = acc
        self._costs = costs
        self._done = False
        self.user_col = user_col
        self.epsilon = epsilon

    def commit(self) -> None:
        """Charge the accountant (once); re-checks, so a charge made in between cannot overdraw."""
        if self._done:
            return
        self._acc._refuse(self._costs)
        for u, c in self._costs.items():
            self._acc._spent[u] = self._acc._spent.get(u, Fraction(0)) + c
        self._done = True
        self._costs = {}  # private per-user counts do not outlive the release

    def ledger(self) -> dict[str, Any]:
        """Public settings only (no user ids, no counts)."""
        return {
            "user_col": str(self.user_col),
            "total_epsilon_per_user": self._acc.total_epsilon,
            "composition": "sequential per user: k trajectories of one user cost k * epsilon",
        }


def charge_release(
    accountant: Any,
    frame: Any,
    user_col: Any,
    epsilon: float,
    *,
    traj_id_col: Any = None,
    caller: str = "GeoDataFrame.ldp.perturb",
) -> PendingCharge | None:
    """Check a release against the accountant before any random draw; return the charge to commit.

    Every trajectory costs its user ``epsilon``: one row is one trajectory, or, for Point rows grouped by
    ``traj_id_col``, each distinct ``(user, trajectory)`` pair is one.

    Parameters
    ----------
    accountant : BudgetAccountant or None
    frame : pandas.DataFrame
        The (private) frame being released.
    user_col : column label or None
        The column with the user id of each row (int or str values).
    epsilon : float
        The budget of one trajectory.
    traj_id_col : column label, optional
        For grouped Point rows only.
    caller : str
        Named in error messages.

    Returns
    -------
    PendingCharge or None
        ``None`` when neither ``accountant`` nor ``user_col`` is given.

    Raises
    ------
    TypeError, ValueError
        Only one of ``accountant``/``user_col`` given, a missing column, a missing or non int/str user id
        (named by row position).
    BudgetError
        The release would take some user past the total (the message gives the count of such users).
    """
    if accountant is None and user_col is None:
        return None
    if not isinstance(accountant, BudgetAccountant):
        raise TypeError(
            f"The 'accountant' parameter of {caller} must be a geoldp.BudgetAccountant when 'user_col' is "
            f"given. Got {type(accountant).__name__}."
        )
    if user_col is None:
        raise ValueError(
            f"The 'user_col' parameter of {caller} is needed with 'accountant': name the column that holds "
            "each row's user id."
        )
    if user_col not in frame.columns:
        raise ValueError(f"The 'user_col' parameter of {caller} names a column that is not in the frame.")
    users = frame[user_col]
    missing = np.flatnonzero(np.asarray(users.isna()))
    if missing.size:
        raise ValueError(
            f"The user column of {caller} has a missing user id at row position {int(missing[0])}; drop or "
            "fill such rows before the release."
        )
    import pandas as pd

    values = users.to_numpy()
    if pd.api.types.infer_dtype(values, skipna=False) not in ("integer", "string"):
        for pos, v in enumerate(values):  # find the first bad one, to name its position
            _check_user(v, where=f"row position {pos} of the user column")

    if traj_id_col is not None:
        pairs = pd.DataFrame({"u": values, "t": frame[traj_id_col].to_numpy()}).drop_duplicates()
        counts = pairs.groupby("u", sort=False).size()
    else:
        counts = pd.Series(values).value_counts(sort=False)
    eps = Fraction(float(epsilon))
    costs = {_check_user(u, where="a user id"): eps * int(k) for u, k in counts.items()}
    del counts, values
    accountant._refuse(costs)
    return PendingCharge(accountant, costs, user_col, float(epsilon))


def _user_stacklevel() -> int:
    """The ``stacklevel`` that points a warning at the first frame outside geoldp, pandas and geopandas."""
    frame: Any = sys._getframe(1)
    level = 1
    while frame is not None and str(frame.f_globals.get("__name__", "")).split(".")[0] in (
        "geoldp",
        "pandas",
        "geopandas",
    ):
        frame, level = frame.f_back, level + 1
    return level


def _called_from_pandas_finalize() -> bool:
    """Whether this comparison runs inside pandas' ``__finalize__`` (concat / merge / join of attrs)."""
    frame: Any = sys._getframe(2)
    for _ in range(4):
        if frame is None:
            return False
        if frame.f_code.co_name == "__finalize__" and str(frame.f_globals.get("__name__", "")).startswith(
            "pandas"
        ):
            return True
        frame = frame.f_back
    return False


class ReleaseLedger(dict):
    """The provenance/ledger dict of one release (``released.attrs["geoldp"]``), with a ``release_id``.

    A plain dict for every use (JSON, pickling, ``==``). One addition: when pandas compares the ledgers
    of two *different* releases while combining frames (``pd.concat``, ``merge``, ``join``), it drops the
    ledger, and this class raises a :class:`~geoldp.GeoLDPWarning` saying so.
    """

    __slots__ = ()
    __hash__ = None  # a dict

    def __eq__(self, other: object) -> bool:
        equal = dict.__eq__(self, other)
        if (
            equal is False
            and isinstance(other, ReleaseLedger)
            and self.get("release_id") != other.get("release_id")
            and _called_from_pandas_finalize()
        ):
            warnings.warn(
                "Combining different geoldp releases: pandas drops the ledger (attrs['geoldp']) of the "
                "result, since no single ledger describes it. A user whose trajectories are in several "
                "releases has spent the sum of their epsilons; track that with geoldp.BudgetAccountant.",
                GeoLDPWarning,
                stacklevel=_user_stacklevel(),
            )
        return equal

    def __ne__(self, other: object) -> bool:
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal


def _content_id(released: Any, provenance: Mapping[str, Any]) -> str:
    """A digest of the release itself (geometry, index, ledger): public values only, never the seed."""
    import pandas as pd
    import shapely

    h = hashlib.sha256()
    h.update(json.dumps(provenance, sort_keys=True, default=str).encode())
    h.update(pd.util.hash_pandas_object(released.index, index=False).to_numpy().tobytes())
    # the geometry as arrays (type, parts and vertex count per row, then every vertex): a release holds
    # Points and LineStrings, which these determine; ten times cheaper than WKB for a large release
    geoms = np.asarray(released.geometry.values)
    for part in (shapely.get_type_id(geoms), shapely.get_num_geometries(geoms)):
        h.update(np.ascontiguousarray(part, dtype=np.int64).tobytes())
    h.update(np.ascontiguousarray(shapely.get_num_coordinates(geoms), dtype=np.int64).tobytes())
    h.update(np.ascontiguousarray(shapely.get_coordinates(geoms, include_z=True), dtype=np.float64).tobytes())
    return h.hexdigest()[:32]


def finish_release(
    provenance: Mapping[str, Any],
    *,
    released: Any = None,
    points_provenance: str | None = None,
    charge: PendingCharge | None = None,
) -> ReleaseLedger:
    """Complete a release's ledger (unique ``release_id``, point provenance, accounting); commit the charge.

    Parameters
    ----------
    provenance : mapping
        The ledger built by the release (JSON-able, public values only).
    released : geopandas.GeoDataFrame, optional
        The release. For a seeded release (``provenance["rng"] == "seeded"``, experiments only) the id is
        a digest of the release itself, so that a seeded run is reproducible byte for byte; otherwise
        (and always with the OS CSPRNG) it is a random UUID.
    points_provenance : str, optional
        :func:`geoldp.points.provenance_of` of the public points.
    charge : PendingCharge, optional
        From :func:`charge_release`; committed here, after the release was drawn.

    Returns
    -------
    ReleaseLedger
    """
    out = ReleaseLedger(provenance)
    out["points"] = {"provenance": points_provenance}
    if released is not None and out.get("rng") == "seeded":
        out["release_id"] = _content_id(released, out)  # equal only for identical releases
    else:
        out["release_id"] = uuid.uuid4().hex  # os.urandom: never derived from the seed or the data
    if charge is not None:
        charge.commit()
        out["accounting"] = charge.ledger()
    return out

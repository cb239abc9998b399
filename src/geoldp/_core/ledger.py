"""The ledger of a release: what one release spent, how, and under which public settings.

Every release (trajectories, aggregate reports, synthetic trajectories, a pilot) carries one
:class:`ReleaseLedger`. It travels with the frame (in ``frame.attrs``, as the JSON record that the files'
sidecars hold) and is read and written only here: :func:`ledger_of` reads it, :func:`attach` writes it,
:func:`require` reads it or says what is missing, and :func:`release_parts` splits a release whose
users shared their ε over their trips into single-budget releases. The record's format is the sidecar format
(``<file>.ledger.json`` and the GeoJSON ``"geoldp"`` member), unchanged.

>>> led = ReleaseLedger.from_record({"mechanism": "atp", "epsilon": 2.0, "split": "uniform"})
>>> led.mechanism, led.epsilon, led.settings["split"]
('atp', 2.0, 'uniform')
>>> led.replace(user_budget={"rule": "sample"}).record()["user_budget"]
{'rule': 'sample'}
"""

from __future__ import annotations

import copy
import dataclasses
import math
import sys
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from geoldp._core.errors import GeoLDPWarning

__all__ = ["ReleaseLedger", "attach", "ledger_of", "record_problem", "release_parts", "require"]

#: Where a frame keeps its ledger record (``frame.attrs[ATTRS_KEY]``); also the GeoJSON member's name.
ATTRS_KEY = "geoldp"

#: The record keys that every kind of release may carry, typed as fields of :class:`ReleaseLedger`.
_TYPED = ("mechanism", "epsilon", "release_id", "points", "accounting", "user_budget", "hybrid")


@dataclass(frozen=True, eq=False)
class ReleaseLedger:
    """The public record of one release.

    Parameters
    ----------
    mechanism : str
        The release kind: a trajectory mechanism (``"tp"``, ``"atp"``, ``"pointem"``, ``"tracs-d"``,
        ``"tracs-c"``), ``"report"``, ``"ldptrace"`` or ``"pilot"``.
    epsilon : float
        ε spent per trajectory (per user for a user-level release).
    release_id : str, optional
        Unique id of the release (a digest of the release for seeded experiments, else random).
    points : mapping, optional
        The public points' record (provenance, digest, file name).
    accounting : mapping, optional
        What the accountant charged for this release.
    user_budget : mapping, optional
        The per-user rule (sampling or splitting a user's trajectories), never a user id.
    hybrid : mapping, optional
        For one part of a hybrid release: the parts' ids and shares of ε.
    settings : mapping
        Everything else the release records, by kind (the split of ε, the mechanism's options, a report's
        statistic, oracle and domain, the input columns, the RNG kind, the package version, ...).
    """

    mechanism: str
    epsilon: float
    release_id: str | None = None
    points: Mapping[str, Any] | None = None
    accounting: Mapping[str, Any] | None = None
    user_budget: Mapping[str, Any] | None = None
    hybrid: Mapping[str, Any] | None = None
    settings: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_record(cls, record: Mapping[str, Any], *, source: str = "the ledger") -> ReleaseLedger:
        """Read a ledger record (a release's attrs, a sidecar file, a GeoJSON member).

        Parameters
        ----------
        record : mapping
            The JSON record, with at least ``mechanism`` (a string) and ``epsilon`` (a positive number).
        source : str
            What the record came from, named in errors.

        Returns
        -------
        ReleaseLedger

        Raises
        ------
        ValueError
            When the record is not a geoldp ledger.
        """
        problem = record_problem(record)
        if problem is not None:
            raise ValueError(f"{source} is not a geoldp ledger ({problem}).")
        typed = {key: record[key] for key in _TYPED if key in record}
        typed["epsilon"] = float(record["epsilon"])
        settings = {key: value for key, value in record.items() if key not in _TYPED}
        return cls(**typed, settings=settings)

    def record(self) -> dict[str, Any]:
        """The JSON record (the sidecar format): the settings plus the typed fields that are set."""
        out = {"mechanism": self.mechanism, "epsilon": self.epsilon}
        out.update(copy.deepcopy(dict(self.settings)))
        for key in _TYPED[2:]:
            value = getattr(self, key)
            if value is not None:
                out[key] = copy.deepcopy(value)
        return out

    @property
    def part_epsilons(self) -> list[float] | None:
        """The per-row budgets of a ``user_budget="split"`` release (``None`` for a one-budget release)."""
        rule = self.user_budget
        if not isinstance(rule, Mapping) or rule.get("strategy") != "split":
            return None
        return [float(part["epsilon"]) for part in self.settings["ledger"]["by_part"]]

    @property
    def synthetic(self) -> bool:
        """Whether the release holds synthetic trajectories (LDPTrace), not a row per original one."""
        return "n_synthetic" in self.settings

    def replace(self, **changes: Any) -> ReleaseLedger:
        """A copy with some fields changed (typed fields by name; settings keys through ``settings=``)."""
        return dataclasses.replace(self, **changes)

    def with_settings(self, **changes: Any) -> ReleaseLedger:
        """A copy with some settings added or changed."""
        return dataclasses.replace(self, settings={**self.settings, **changes})

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ReleaseLedger):
            return NotImplemented
        return self.record() == other.record()

    __hash__ = None  # type: ignore[assignment]  # a record of mutable mappings


def record_problem(record: Any) -> str | None:
    """Why ``record`` is not a geoldp ledger record, or ``None`` when it is one.

    ``record`` is a value read from a frame's attrs, a sidecar or a GeoJSON member; the first problem
    found is worded to follow "is not a geoldp ledger (...)".
    """
    if not isinstance(record, Mapping):
        return "it is not a JSON object"
    mechanism, epsilon = record.get("mechanism"), record.get("epsilon")
    if not isinstance(mechanism, str) or not mechanism:
        return "it has no 'mechanism' text"
    if isinstance(epsilon, bool) or not isinstance(epsilon, int | float) or not 0 < epsilon < math.inf:
        return "its 'epsilon' is not a positive finite number"
    for key in ("ledger", "options", "input", "snap", "points", "accounting", "user_budget", "hybrid"):
        if record.get(key) is not None and not isinstance(record[key], Mapping):
            return f"its {key!r} member is not a JSON object"
    if "unprotected_columns" in record and not isinstance(record["unprotected_columns"], list):
        return "its 'unprotected_columns' member is not a list"
    return None


#: The packages a warning's stack level skips (the user's code is the first frame outside them).
_LIBRARIES = ("geoldp", "pandas", "geopandas")


def user_stacklevel() -> int:
    """The ``stacklevel`` that points a warning at the first frame outside geoldp, pandas and geopandas."""
    frame: Any = sys._getframe(1)
    level = 1
    while frame is not None and str(frame.f_globals.get("__name__", "")).split(".")[0] in _LIBRARIES:
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


class ReleaseRecord(dict):
    """The ledger record as a frame carries it: a plain JSON dict, kept in ``frame.attrs``.

    A dict for every use (JSON, pickling, parquet metadata, ``==``). One addition: when pandas compares
    the records of two *different* releases while combining frames (``pd.concat``, ``merge``, ``join``),
    it drops the ledger, and this class warns with a :class:`~geoldp.GeoLDPWarning` saying so.
    """

    __slots__ = ()
    __hash__ = None  # a dict

    def __eq__(self, other: object) -> bool:
        equal = dict.__eq__(self, other)
        if (
            equal is False
            and isinstance(other, ReleaseRecord)
            and self.get("release_id") != other.get("release_id")
            and _called_from_pandas_finalize()
        ):
            warnings.warn(
                "Combining different geoldp releases: pandas drops the ledger of the result, since no "
                "single ledger describes it. A user whose trajectories are in several releases has spent "
                "the sum of their epsilons; track that with geoldp.BudgetAccountant.",
                GeoLDPWarning,
                stacklevel=user_stacklevel(),
            )
        return equal

    def __ne__(self, other: object) -> bool:
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal


def ledger_of(frame: Any) -> ReleaseLedger | None:
    """The ledger a frame carries, or ``None`` (not a release, or pandas dropped it).

    Parameters
    ----------
    frame : pandas.DataFrame or geopandas.GeoDataFrame
        A release (trajectories, a report table, synthetic trajectories), or any frame.

    Returns
    -------
    ReleaseLedger or None
    """
    attrs = getattr(frame, "attrs", None)
    record = attrs.get(ATTRS_KEY) if isinstance(attrs, dict) else None
    if not isinstance(record, Mapping):
        return None
    try:
        return ReleaseLedger.from_record(record)
    except ValueError:
        return None


def require(
    frame: Any, *, what: str, caller: str, mechanism: str | tuple[str, ...] | None = None
) -> ReleaseLedger:
    """The ledger a frame carries; a ValueError naming ``what`` and the fix when there is none.

    ``what`` is how the message names the frame (``"The 'reports'"``); ``mechanism``, if given, the
    release kinds accepted (another kind is refused).
    """
    led = ledger_of(frame)
    if led is None:
        raise ValueError(
            f"{what} passed to {caller} carries no geoldp ledger: pass the frame a geoldp release returned, "
            "or read it back with geoldp.read_trajectories / the matching reader (which attach the ledger "
            "from the file's sidecar)."
        )
    kinds = (mechanism,) if isinstance(mechanism, str) else mechanism
    if kinds is not None and led.mechanism not in kinds:
        expected = " or ".join(map(repr, kinds))
        raise ValueError(f"{what} passed to {caller} is a {led.mechanism!r} release; expected {expected}.")
    return led


def attach(frame: Any, ledger: ReleaseLedger | Mapping[str, Any] | None) -> None:
    """Make ``ledger`` (or its JSON record; ``None`` removes it) the frame's ledger, in place.

    ``frame`` is one the caller owns (a release being built), never a user's input.
    """
    if ledger is None:
        frame.attrs.pop(ATTRS_KEY, None)
        return
    record = ledger.record() if isinstance(ledger, ReleaseLedger) else dict(ledger)
    frame.attrs[ATTRS_KEY] = ReleaseRecord(record)


def release_parts(released: Any) -> list[Any]:
    """Split a ``user_budget="split"`` release into single-budget releases that estimators accept.

    Each part holds the rows released with one per-trajectory ε (input order kept) and a ledger with that
    ε, so :mod:`geoldp.estimate` can analyse it; the estimates of the parts add up (the parts hold
    different trajectories). Any other release is returned as the only part.

    Parameters
    ----------
    released : geopandas.GeoDataFrame
        A release with its ledger.

    Returns
    -------
    list of geopandas.GeoDataFrame
    """
    ledger = ledger_of(released)
    if ledger is None or ledger.part_epsilons is None:  # one budget: the release is its only part
        return [released]
    rule = dict(ledger.user_budget or {})  # a split rule (part_epsilons said so)
    column = str(rule.get("epsilon_column", "epsilon"))  # each row's budget, as the per-user driver wrote it
    if column not in released.columns:
        raise ValueError(
            f"This release was made with user_budget='split' but has lost its {column!r} column; "
            "read the whole release file."
        )
    out = []
    kept = [c for c in ledger.settings.get("unprotected_columns", []) if c != column]
    for part in ledger.settings["ledger"]["by_part"]:
        eps = float(part["epsilon"])
        rows = released[released[column].to_numpy() == eps].drop(columns=[column])
        led = ledger.replace(epsilon=eps, user_budget=None, accounting=None).with_settings(
            ledger=part["ledger"], unit="one row = one trajectory", unprotected_columns=kept
        )
        rows.attrs = {}
        attach(rows, led)
        out.append(rows)
    return out

"""Parameter validation shared by geoldp (STYLE §5).

Every checker returns the coerced value and raises ``TypeError`` for a wrong type or ``ValueError`` for a
wrong value, with the message grammar "The 'epsilon' parameter of ATP must be a float in the range
(0, inf). Got nan instead." (``caller`` and ``name`` are the public function and its parameter, named in
the message.) Checks never mention private data values, only parameter names.
"""

from __future__ import annotations

import math
import numbers
from fractions import Fraction
from typing import Any

import numpy as np

__all__ = [
    "MAX_COUNT",
    "MAX_EPSILON",
    "MAX_LENGTH",
    "MAX_LISTED_COLUMNS",
    "MAX_PAD_LENGTH",
    "MAX_PLAN_USERS",
    "MIN_EPSILON",
    "available_columns",
    "check_bool",
    "check_count",
    "check_epsilon",
    "check_float_range",
    "check_int_min",
    "check_int_range",
    "check_lengths",
    "check_max_km",
    "check_no_missing",
    "check_option",
    "check_positive_km",
    "check_real",
    "check_release_epsilon",
    "check_time_kinds",
    "missing_column",
]

#: Smallest ε (per trajectory, row or user) a release of any kind accepts: below it even a one-point
#: trajectory is released by an exponential mechanism with ε′ ≤ ε < 0.001, so the nearest public point is at
#: most e^{0.0005} ≈ 1.0005 times as likely as the farthest one. The output is then uniform noise, whatever
#: the data: an error (usually a unit slip such as ``1e-300`` for ``1.0``), not only a warning.
MIN_EPSILON = 1e-3

#: Largest ε a release of any kind accepts: 53·ln 2 ≈ 36.74. Every sampler turns uniform draws into
#: outputs (``Generator.random()``, the OS source and the seeded streams alike), and those draws lie on a
#: grid of 2⁻⁵³: no Bernoulli draw ``u < q`` (k-RR, OUE, OLH, SW) can have a probability in (0, 2⁻⁵³), so
#: the ratio of two outputs' probabilities, e^ε, cannot exceed 2⁵³. Above this ε a sampler draws exactly as
#: it does at it (its effective ε stops growing) while the ledger would state the larger value. (The
#: exponential mechanism's stage budgets have a stricter float-margin limit of their own.)
MAX_EPSILON = 53.0 * math.log(2.0)

#: Largest count a public parameter may ask for (trajectories to synthesise or simulate, bootstrap
#: rounds, a trajectory length): 10⁸. Each unit takes at least a few bytes of memory, so a larger request
#: is a slip (a unit or a stray digit) that would otherwise end in a MemoryError after a long wait.
MAX_COUNT = 100_000_000

#: Most users a plan is made for (``n``): its simulation of the report designs holds about 0.6 kB per
#: user (10⁷ users: 5.7 GB, 48 s). Plans for more users differ little from a plan for 10⁷.
MAX_PLAN_USERS = 10_000_000

#: Longest trajectory (in points) a public length parameter may name (a planner's or a model's lengths):
#: 10⁴. Already past about 370 points every point of a trajectory gets less than ε/n = 0.1 of the largest
#: ε, so its release is close to uniform; a larger value is a slip (a unit or a stray digit).
MAX_LENGTH = 10_000

#: Largest ``pad_length`` (ℓ) a report accepts (``geoldp.reports.MAX_PAD_LENGTH``): :data:`MAX_LENGTH`.
#: Padding a set to more items than a trajectory visits only adds dummies: the estimate's standard error
#: grows with ℓ, so a larger ℓ is a slip (a unit or a stray digit), refused before any work.
MAX_PAD_LENGTH = MAX_LENGTH


def _fmt(value: Any) -> str:
    if isinstance(value, np.generic):
        return repr(value.item())
    if isinstance(value, Fraction):
        return f"Fraction({value.numerator}, {value.denominator})"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _is_real_number(value: Any) -> bool:
    if isinstance(value, (bool, np.bool_)):
        return False
    return isinstance(value, (numbers.Real, np.integer, np.floating))


def check_real(value: Any, name: str, *, caller: str) -> float:
    """Return ``value`` as a float if it is a real number (not bool, str, complex, Decimal, None).

    An int beyond the float range is a ``ValueError``.
    """
    if not _is_real_number(value):
        raise TypeError(
            f"The {name!r} parameter of {caller} must be a real number (int, float or Fraction). "
            f"Got {_fmt(value)} of type {type(value).__name__} instead."
        )
    try:
        return float(value)
    except OverflowError:
        raise ValueError(
            f"The {name!r} parameter of {caller} must be a finite float. Got {_fmt(value)} instead."
        ) from None


def check_epsilon(epsilon: Any, *, caller: str, name: str = "epsilon", maximum: float | None = None) -> float:
    """Validate a privacy budget in (0, inf), or (0, ``maximum``] (e.g. 700 for k-RR and SW, ALGORITHM §3.4).

    ``bool``, ``str``, ``None``, ``complex`` and ``Decimal`` are rejected.

    Examples
    --------
    >>> check_epsilon(1, caller="TP")
    1.0
    """
    value = check_real(epsilon, name, caller=caller)
    upper = math.inf if maximum is None else float(maximum)
    if not (0.0 < value < math.inf if maximum is None else 0.0 < value <= upper):
        rng = "(0, inf)" if maximum is None else f"(0, {upper:g}]"
        raise ValueError(
            f"The {name!r} parameter of {caller} must be a float in the range {rng}. "
            f"Got {_fmt(epsilon)} instead."
        )
    return value


def check_release_epsilon(epsilon: Any, *, caller: str, name: str = "epsilon") -> float:
    """Validate the ε of a release (perturb, report, synthesize, hybrid, plan, estimate ...).

    One range for every release kind: ``[MIN_EPSILON, MAX_EPSILON]`` = [0.001, 53·ln 2 ≈ 36.74] (see
    :data:`MIN_EPSILON` and :data:`MAX_EPSILON` for why).

    Examples
    --------
    >>> check_release_epsilon(4, caller="report")
    4.0
    """
    value = check_real(epsilon, name, caller=caller)
    if MIN_EPSILON <= value <= MAX_EPSILON:
        return value
    rng = f"[{MIN_EPSILON:g}, {MAX_EPSILON:.4g}]"
    if 0.0 < value < MIN_EPSILON:
        why = (
            f"{value:g} is below the smallest budget geoldp releases with, {MIN_EPSILON:g}: at that ε every "
            "output is, to within 0.05 %, a uniform draw, whatever the data"
        )
    elif MAX_EPSILON < value < math.inf:
        why = (
            f"{value:g} is above {MAX_EPSILON:.4g} (53·ln 2), where the samplers, which draw on a grid of "
            "2⁻⁵³, stop changing: the release would be no more accurate than at that ε"
        )
    else:
        why = f"got {_fmt(epsilon)}"
    raise ValueError(
        f"The {name!r} parameter of {caller} must be a float in the range {rng}; {why}. Use ε per "
        "trajectory (e.g. 1 to 10, as in the paper)."
    )


def check_count(value: Any, name: str, *, caller: str, minimum: int = 1, maximum: int = MAX_COUNT) -> int:
    """Validate a count that sizes an allocation: an int in ``[minimum, maximum]`` (default max 10⁸).

    Checked before anything is allocated, so that a slip ends in this error, not in a MemoryError.

    Examples
    --------
    >>> check_count(1000, "n_synthetic", caller="synthesize")
    1000
    """
    number = check_int_range(value, name, caller=caller)  # its type check and message
    if not minimum <= number <= maximum:
        raise ValueError(
            f"The {name!r} parameter of {caller} must be an int in the range [{minimum}, {maximum}]; got "
            f"{number}. A larger request is refused before it allocates memory it cannot get: ask for at "
            f"most {maximum}."
        )
    return number


def check_lengths(lengths: Any, *, caller: str, name: str = "lengths") -> Any:
    """Refuse a trajectory length above :data:`MAX_LENGTH` in an int or a list of ints.

    The check runs before anything is sized by a length; ``lengths`` is returned unchanged (its type and
    the lower end are the caller's to check).

    Examples
    --------
    >>> check_lengths([2, 3, 8], caller="plan")
    [2, 3, 8]
    """
    values = [lengths] if np.ndim(lengths) == 0 else np.ravel(np.asarray(lengths, dtype=object)).tolist()
    for value in values:
        if _is_real_number(value) and not value <= MAX_LENGTH:
            raise ValueError(
                f"The {name!r} parameter of {caller} holds {_fmt(value)}, more than the longest trajectory "
                f"geoldp models, {MAX_LENGTH} points (past about 370 points every point gets less than ε/n "
                "= 0.1, a near-uniform release). Use lengths of at most that."
            )
    return lengths


def check_option(value: Any, name: str, allowed: Any, caller: str, *, case_insensitive: bool = False) -> Any:
    """Return ``value`` if it is one of ``allowed``, else raise ``ValueError`` listing the options.

    With ``case_insensitive=True`` a string is matched ignoring case and the canonical spelling from
    ``allowed`` is returned.

    Examples
    --------
    >>> check_option("floor", "sector_convention", ("centred", "floor"), "TP")
    'floor'
    """
    allowed = tuple(allowed)
    if case_insensitive and isinstance(value, str):
        for option in allowed:
            if isinstance(option, str) and option.lower() == value.lower():
                return option
    else:
        for option in allowed:
            if type(option) is type(value) and option == value:
                return option
    raise ValueError(f"Got {name}={_fmt(value)} in {caller}; `{name}` must be one of {allowed!r}.")


def check_int_range(
    value: Any, name: str, *, caller: str, minimum: int | None = None, maximum: int | None = None
) -> int:
    """Validate an int (Python or numpy; not bool, nor a float such as ``2.0``) in ``[minimum, maximum]``.

    Examples
    --------
    >>> check_int_range(4, "g", caller="TP", minimum=2, maximum=12)
    4
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (numbers.Integral, np.integer)):
        raise TypeError(
            f"The {name!r} parameter of {caller} must be an int. Got {_fmt(value)} of type "
            f"{type(value).__name__} instead."
        )
    value = int(value)
    lo_ok = minimum is None or value >= minimum
    hi_ok = maximum is None or value <= maximum
    if not (lo_ok and hi_ok):
        lo = "-inf" if minimum is None else str(minimum)
        hi = "inf" if maximum is None else str(maximum)
        raise ValueError(
            f"The {name!r} parameter of {caller} must be an int in the range [{lo}, {hi}]. "
            f"Got {value} instead."
        )
    return value


def check_bool(value: Any, name: str, *, caller: str) -> bool:
    """Return ``value`` as a bool if it is a Python or numpy bool (``0``/``1`` and strings are refused).

    Examples
    --------
    >>> check_bool(True, "progress", caller="perturb")
    True
    """
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(
            f"The {name!r} parameter of {caller} must be a bool. Got {type(value).__name__} instead."
        )
    return bool(value)


def check_max_km(max_km: Any, *, caller: str) -> float | None:
    """Validate a snapping tolerance of the analyses: None, or a float in [0, inf).

    Anything else, a non-number included, is a ``ValueError``.

    Examples
    --------
    >>> check_max_km(0.5, caller="visit_counts")
    0.5
    """
    if max_km is None:
        return None
    if not _is_real_number(max_km) or not (0.0 <= float(max_km) < math.inf):
        raise ValueError(
            f"The 'max_km' parameter of {caller} must be None or a float in [0, inf). Got {_fmt(max_km)}."
        )
    return float(max_km)


def check_positive_km(value: Any, name: str, *, caller: str) -> float | None:
    """Validate an optional distance in km: None, or a float in the range (0, inf) (not a bool).

    Examples
    --------
    >>> check_positive_km(2, "snap_max_km", caller="perturb")
    2.0
    """
    if value is None:
        return None
    if not _is_real_number(value):
        raise TypeError(
            f"The {name!r} parameter of {caller} must be a float in the range (0, inf) or None. "
            f"Got {type(value).__name__} instead."
        )
    number = float(value)
    if not (0.0 < number < math.inf):
        raise ValueError(
            f"The {name!r} parameter of {caller} must be a float in the range (0, inf) or None. "
            f"Got {number!r} instead."
        )
    return number


def check_int_min(value: Any, name: str, *, minimum: int, caller: str) -> int:
    """Validate an integer parameter (Python or numpy int; not bool, nor a float such as ``2.0``) >= minimum.

    Examples
    --------
    >>> check_int_min(3, "max_points", minimum=2, caller="resample")
    3
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (numbers.Integral, np.integer)):
        raise TypeError(
            f"The {name!r} parameter of {caller} must be an int >= {minimum}. Got {type(value).__name__} "
            "instead."
        )
    if value < minimum:
        raise ValueError(
            f"The {name!r} parameter of {caller} must be an int >= {minimum}. Got {value!r} instead."
        )
    return int(value)


def check_float_range(
    value: Any, name: str, *, caller: str, minimum: float = 0.0, closed: bool = False
) -> float:
    """Validate a real number in ``(minimum, inf)`` (or ``[minimum, inf)`` with ``closed=True``).

    Examples
    --------
    >>> check_float_range(5, "spacing_m", caller="resample")
    5.0
    """
    number = check_real(value, name, caller=caller)
    ok = (number >= minimum if closed else number > minimum) and number < math.inf
    if not ok:
        bracket = "[" if closed else "("
        raise ValueError(
            f"The {name!r} parameter of {caller} must be a float in the range {bracket}{minimum:g}, inf). "
            f"Got {_fmt(value)} instead."
        )
    return number


#: What :func:`pandas.api.types.infer_dtype` says about a column that mixes kinds of value.
_MIXED_KINDS = ("mixed", "mixed-integer")


def check_time_kinds(values: Any, name: str, *, caller: str) -> None:
    """Refuse a time column whose values mix kinds (numbers with text or dates, say).

    Sorting such a column orders by kind first (every number before every text), which is no time order.
    Numbers alone, datetimes alone or text alone pass (text is parsed by the caller). The message names
    the column, never its values.

    Examples
    --------
    >>> import pandas as pd
    >>> check_time_kinds(pd.Series([1, 2.5]), "time", caller="perturb")
    """
    import pandas as pd

    if not pd.api.types.is_object_dtype(values):
        return
    kind = pd.api.types.infer_dtype(values, skipna=True)
    if kind in _MIXED_KINDS:
        raise ValueError(
            f"The time column {name!r} passed to {caller} mixes kinds of value (numbers and text, or "
            "numbers and dates), which have no common time order. Use one kind: ISO 8601 date-times, "
            "datetimes or numbers."
        )


def check_no_missing(
    values: Any,
    *,
    what: str,
    column: Any,
    caller: str,
    rows: Any = None,
    frame: str = "trajectories",
) -> None:
    """Refuse a missing value (NaN, None, NaT) in a column of the rows being released, naming its row.

    ``values`` is a pandas Series; ``rows`` the row position of each value in the user's frame (default:
    its own positions); ``what`` names the value ("time", "user id" ...).
    """
    hits = np.flatnonzero(np.asarray(values.isna()))
    if hits.size:
        pos = int(hits[0] if rows is None else rows[hits[0]])
        raise ValueError(
            f"Row position {pos} of the {frame} passed to {caller} has a missing {what} in column "
            f"{column!r}. Fill or drop such rows first."
        )


#: Most column names an error message lists (a frame of thousands of columns gets the first ones and a count).
MAX_LISTED_COLUMNS = 50


def available_columns(columns: Any) -> str:
    """``"Available columns: [...]."``: the names of ``columns`` (names only), for a missing-column error.

    At most :data:`MAX_LISTED_COLUMNS` names, and the count of the others.
    """
    names = [str(c) for c in columns]
    if not names:
        return "The frame has no columns."
    more = len(names) - MAX_LISTED_COLUMNS
    if more > 0:
        return f"Available columns: {names[:MAX_LISTED_COLUMNS]} and {more} more."
    return f"Available columns: {names}."


def missing_column(
    parameter: str, caller: str, column: Any, columns: Any, *, where: str = "the frame"
) -> ValueError:
    """The ``ValueError`` (to raise) for a ``*_col`` parameter naming a column that ``where`` lacks.

    The message lists the names of ``columns`` (names only, never values).
    """
    return ValueError(
        f"The {parameter!r} parameter of {caller} names a column that is not in {where}: {str(column)!r}. "
        f"{available_columns(columns)}"
    )

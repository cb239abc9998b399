"""Privacy-budget accounting across releases: :class:`BudgetAccountant`, and the ledger of combined frames.

A single release spends ε per trajectory (its :class:`~geoldp.ReleaseLedger` says how). A user who
contributes several trajectories, to one release or to several, spends the sum (sequential composition):
``k`` trajectories of user ``u`` at ε each cost ``u`` ``k·ε``. A :class:`BudgetAccountant` keeps that sum
per user across calls and refuses, before any random draw, a release that would take a user past the
total::

    >>> acc = geoldp.BudgetAccountant(8.0)  # doctest: +SKIP
    >>> r1 = trips.ldp.perturb(P, epsilon=4.0, accountant=acc, user_col="user")  # doctest: +SKIP
    >>> acc.remaining("alice")  # doctest: +SKIP
    4.0

:doc:`/user_guide` ("Budgets across releases") says why sums are exact fractions, which ids are one user
(:func:`user_key`), where the accountant lives (in memory with :meth:`~BudgetAccountant.save` and
:meth:`~BudgetAccountant.load`, or in a :mod:`geoldp.store` shared by processes through
:meth:`~BudgetAccountant.open`, which migrates a JSON accountant once) and which combined frames keep a
release's ledger. Each release's ``release_id`` is a random UUID (for seeded experiment runs a digest of
the release itself, so that they stay reproducible byte for byte); a combined frame never carries a
ledger that understates the spend.
"""

from __future__ import annotations

import hashlib
import json
import math
import numbers
import os
import re
import stat
import threading
import uuid
import warnings
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

import numpy as np

from geoldp._core.errors import BudgetError, GeoLDPWarning
from geoldp._core.ledger import ReleaseLedger, user_stacklevel
from geoldp._core.validation import check_epsilon, check_no_missing, missing_column

#: The ``"format"`` member of a saved accountant.
FORMAT = "geoldp.BudgetAccountant"
_VERSION = 2  # 2: a SHA-256 checksum of the content; 1 (no checksum) is still read, with a warning
#: The default size limit of :meth:`BudgetAccountant.load` (bytes): about six million users.
MAX_FILE_BYTES = 256 * 2**20
_DECIMAL = re.compile(r"-?[0-9]+", re.ASCII)


def user_key(value: Any) -> int | str:
    """The canonical key of a user id: the one key under which :class:`BudgetAccountant` charges it.

    An integer (Python or numpy) is its ``int``; a string of ASCII decimal digits, with an optional
    leading ``-``, is the ``int`` it spells, leading zeros ignored (``"7"``, ``"007"`` and ``7`` are one
    user); any other string is itself (``"+7"``, ``" 7"``, ``"7.0"``, ``"u7"`` are ids of their own).
    Merging ``"007"`` with ``7`` errs on the safe side: two ids that a file or a parser may have turned
    into one another pay one budget (at worst a refusal), never two (an overspend). If ``"007"`` and
    ``"7"`` are different people, give the ids a non-digit prefix (``"id-007"``).

    Parameters
    ----------
    value : int, str, numpy integer or numpy str
        A user id.

    Returns
    -------
    int or str

    Raises
    ------
    TypeError
        Any other type (bool, float, None, ...); the message never echoes the value.

    Examples
    --------
    >>> user_key("007"), user_key(7), user_key("u7")
    (7, 7, 'u7')
    """
    return _check_user(value, where="the user id")


def _check_user(value: Any, *, where: str) -> int | str:
    """:func:`user_key`, with ``where`` named in the message; never echoes the value."""
    if isinstance(value, bool | np.bool_):
        raise TypeError(f"User ids must be int or str; {where} is a bool.")
    if isinstance(value, numbers.Integral | np.integer):
        return int(value)
    if isinstance(value, str | np.str_):
        text = str(value)
        if _DECIMAL.fullmatch(text):
            try:
                return int(text)
            except ValueError:  # more digits than int() parses (sys.get_int_max_str_digits): keep the text
                return text
        return text
    raise TypeError(
        f"User ids must be int or str; {where} is a {type(value).__name__}. Cast the user column with "
        ".astype(str) or .astype('int64') (and drop rows without a user)."
    )


def _digest(data: Mapping[str, Any]) -> str | None:
    """SHA-256 of a saved accountant's content (every member but the checksum), in a canonical JSON form;
    None for content that is not JSON (then no checksum can match)."""
    body = {key: data.get(key) for key in ("format", "version", "total_epsilon", "spent")}
    try:
        text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    except (TypeError, ValueError):
        return None
    return hashlib.sha256(text.encode("ascii")).hexdigest()


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
        ``{user: ε spent}`` (a copy; users never charged are absent), keyed by :func:`user_key`.

    See Also
    --------
    geoldp.accessor.perturb : ``accountant=`` and ``user_col=`` charge a release.

    Notes
    -----
    The accountant holds the user ids it has charged: it is the data holder's record, keep it with the
    private data (never publish it). Users are keyed by :func:`user_key`: ``7``, ``"7"`` and ``"007"``
    are one user. This constructor keeps the record in memory (threads may share it: check-and-spend
    holds a lock); :meth:`open` keeps it in a transactional store that processes may share.

    Examples
    --------
    >>> acc = BudgetAccountant(2.0)
    >>> acc.charge({"a": 1.5, "b": 0.5})
    >>> acc.remaining("a"), acc.remaining("c")
    (0.5, 2.0)
    >>> acc.charge({7: 1.0}); acc.remaining("7")  # one user: the int 7 and the string "7"
    1.0
    """

    __slots__ = ("_hold", "_lock", "_releases", "_spent", "_store", "_total", "migrated_from")

    def __init__(self, total_epsilon: float) -> None:
        self._total = check_epsilon(total_epsilon, caller="BudgetAccountant", name="total_epsilon")
        self._spent: dict[int | str, Fraction] = {}
        self._releases: dict[str, dict[int | str, Fraction]] = {}  # release id -> its costs (in memory)
        self._lock = threading.RLock()
        self._store: Any = None  # a geoldp.store.Store for an accountant opened with open()
        self._hold: str | None = None
        self.migrated_from: str | None = None

    # -- copies: the lock (and a store's connection) are not part of the state ---------------------------
    def __getstate__(self) -> tuple[Any, ...]:
        with self._lock:
            if self._store is not None:
                return ("store", self._store.target, self._hold)
            return self._total, dict(self._spent), dict(self._releases)

    def __setstate__(self, state: tuple[Any, ...]) -> None:
        self._lock = threading.RLock()
        self._store, self._hold, self.migrated_from = None, None, None
        self._spent, self._releases = {}, {}
        if state[0] == "store":
            from geoldp import store as stores

            self._store = stores.Store.open(state[1])
            self._total = self._store.total_epsilon
            self._hold = state[2]
            return
        self._total, spent = state[0], state[1]
        self._spent = dict(spent)
        self._releases = dict(state[2]) if len(state) > 2 else {}

    # -- a store shared by processes -----------------------------------------------------------------
    @classmethod
    def open(cls, target: str | os.PathLike[str], *, total_epsilon: float | None = None) -> BudgetAccountant:
        """An accountant kept in a transactional store that processes may share (created if new).

        Parameters
        ----------
        target : str or path-like
            A file (a GeoPackage; a link is followed to its target, a link to nothing is refused) or a
            PostgreSQL URL (``postgresql://user@host/db``; needs ``pip install "geoldp[postgres]"``).
            A path ending in ``.json``, or a file holding a JSON accountant saved by :meth:`save`, names
            the store next to it (:func:`store_path`): a JSON accountant there is migrated to that store
            the first time (the JSON file is kept unchanged and is no longer charged).
        total_epsilon : float, optional
            Each user's total budget: needed to create a store; for an existing store it must be the
            store's own total.

        Returns
        -------
        BudgetAccountant
            Every check-and-spend is one database transaction: processes sharing the store never take a
            user past the total together.

        Raises
        ------
        FileNotFoundError
            No store there and no ``total_epsilon`` to create one.
        ValueError
            Not a geoldp store (another GeoPackage or database, any other file), a total that differs
            from the store's, or a JSON accountant that changed after it was migrated.

        Examples
        --------
        >>> acc = geoldp.BudgetAccountant.open("budget.gpkg", total_epsilon=8.0)  # doctest: +SKIP
        >>> r = trips.ldp.perturb(P, epsilon=4.0, accountant=acc, user_col="user")  # doctest: +SKIP
        """
        from geoldp import store as stores

        if total_epsilon is not None:
            total_epsilon = check_epsilon(total_epsilon, caller="BudgetAccountant.open", name="total_epsilon")
        location, legacy = store_path(target)
        acc = cls.__new__(cls)
        acc.__setstate__((1.0, {}))
        if legacy is None:
            acc._store = stores.Store.open(location, total_epsilon=total_epsilon)
        else:
            acc._store = _migrate(legacy, location, total_epsilon)
            acc.migrated_from = legacy
        acc._total = acc._store.total_epsilon
        return acc

    @property
    def location(self) -> str | None:
        """Where the accountant is kept: the store's real path or URL (no password); None in memory."""
        return None if self._store is None else str(self._store.location)

    def close(self) -> None:
        """Close the store's connection (the next use reopens it); nothing to do in memory."""
        if self._store is not None:
            self._store.close()

    def __enter__(self) -> BudgetAccountant:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def hold_charges(self, output: str | os.PathLike[str] | None) -> None:
        """Record the following charges as *pending* until :meth:`confirm` (a store only).

        For a program that writes the release to ``output`` after it is charged: a pending spend counts
        like any other, and :meth:`pending` lists it with ``output``, so that a release whose program was
        killed before it could confirm can be reconciled (``geoldp accountant reconcile``). ``None``
        records the charges as committed again (the default).
        """
        if self._store is None:
            raise ValueError("Only an accountant kept in a store (BudgetAccountant.open) holds charges.")
        self._hold = None if output is None else os.path.abspath(os.fspath(output))

    def pending(self) -> list[dict[str, Any]]:
        """The releases charged as pending and not yet confirmed (empty in memory).

        Each is a dict with ``release_id``, ``output`` (the file it was to be written to), ``charged_utc``
        and ``users`` (how many users it charged).
        """
        return [] if self._store is None else self._store.pending()

    def confirm(self, release_id: str) -> bool:
        """Confirm a pending release (its output was written); False if no pending release has that id."""
        return self._store is not None and self._store.confirm(str(release_id)) > 0

    def refund(self, release_id: str) -> bool:
        """Undo a pending release's charge (it was never written); False if no pending release has that id.

        Only a release whose output does not exist may be refunded: a release that left the program has
        spent its budget, whatever happened afterwards.
        """
        return self._store is not None and self._store.refund(str(release_id)) > 0

    # -- queries ------------------------------------------------------------------------------------
    @property
    def total_epsilon(self) -> float:
        """Each user's total budget."""
        return self._total

    def _spent_of(self, users: Any = None) -> dict[int | str, Fraction]:
        """Exact spends of ``users`` (keys), or of every user charged; from the store when there is one."""
        if self._store is None:
            with self._lock:
                if users is None:
                    return dict(self._spent)
                return {u: self._spent[u] for u in users if u in self._spent}
        texts = None if users is None else [_user_text(u) for u in users]
        return {_check_user(t, where="a stored user id"): s for t, s in self._store.spent(texts).items()}

    @property
    def spent(self) -> dict[int | str, float]:
        """``{user: ε spent}`` for every user charged so far (a copy)."""
        return {u: float(s) for u, s in self._spent_of().items()}

    def spent_by(self, user: Any) -> float:
        """The budget ``user`` has spent (0 for a user never charged)."""
        key = _check_user(user, where="'user'")
        return float(self._spent_of([key]).get(key, Fraction(0)))

    def remaining(self, user: Any) -> float:
        """The budget ``user`` has left: ``total_epsilon - spent`` (rounded down, never negative)."""
        key = _check_user(user, where="'user'")
        left = Fraction(self._total) - self._spent_of([key]).get(key, Fraction(0))
        value = float(left)
        if Fraction(value) > left:  # round towards 0 so that a charge of `remaining` always fits
            value = math.nextafter(value, 0.0)
        return max(value, 0.0)

    def __len__(self) -> int:
        return len(self._spent_of())

    def __repr__(self) -> str:  # no user ids
        where = "" if self._store is None else f", store={self._store.location!r}"
        return f"BudgetAccountant(total_epsilon={self._total!r}, users={len(self)}{where})"

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
            out[u] = out.get(u, Fraction(0)) + Fraction(f)  # 7 and "7" in one mapping: one user, summed
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
        parsed = self._costs(costs)
        with self._lock:
            self._refuse(parsed)

    def _refuse(self, costs: dict[int | str, Fraction], *, late: bool = False) -> None:
        # callers hold self._lock (an RLock: taking it again here is cheap and keeps direct calls safe)
        with self._lock:
            total = Fraction(self._total)
            spent = self._spent_of(costs)
            over = [u for u, c in costs.items() if spent.get(u, Fraction(0)) + c > total]
        if over:
            self._refusal(len(over), len(costs), late=late)

    def _refusal(self, n_over: int, n_users: int, *, late: bool) -> None:
        if late:
            raise BudgetError(
                f"Release refused when it was charged: since it was checked, other releases charged to this "
                f"accountant (another process sharing it) took {n_over} of the {n_users} user(s) in it too "
                f"close to their total budget of {self._total:g}. Nothing was charged and the release was "
                "discarded (nothing was written). Check the budgets left and run it again."
            )
        raise BudgetError(
            f"Release refused (nothing was drawn or charged): it would take {n_over} of the "
            f"{n_users} user(s) in it past their total budget of {self._total:g}. Drop their rows "
            "(BudgetAccountant.remaining(user) gives each user's budget left), release fewer "
            "trajectories per user, or use a smaller epsilon."
        )

    def _spend(
        self, costs: dict[int | str, Fraction], release_id: str | None = None, *, late: bool = False
    ) -> None:
        """Check and add ``costs`` as one step: no other thread's (or, in a store, process's) spend can come
        in between. A release id already charged is not charged again."""
        if self._store is not None:
            rid = release_id if release_id is not None else uuid.uuid4().hex
            over = self._store.charge(
                rid, {_user_text(u): c for u, c in costs.items()}, pending_output=self._hold
            )
            if over:
                self._refusal(len(over), len(costs), late=late)
            return
        with self._lock:
            if release_id is not None and release_id in self._releases:
                if self._releases[release_id] != costs:
                    raise ValueError(
                        f"The release id {release_id!r} was charged before with other users or costs; a "
                        "release id names one release."
                    )
                return
            self._refuse(costs, late=late)
            for u, c in costs.items():
                self._spent[u] = self._spent.get(u, Fraction(0)) + c
            if release_id is not None:
                self._releases[release_id] = dict(costs)

    def charge(self, costs: Mapping[Any, Any], *, release_id: str | None = None) -> None:
        """Charge ``{user: ε}`` all at once, or nothing if any user would exceed the total.

        Parameters
        ----------
        costs : mapping
            ``{user: ε}``.
        release_id : str, optional
            The release charged: a release id charged before (with the same costs) is not charged again,
            so a charge sent twice counts once. Without one, every call is a new charge.

        Raises
        ------
        BudgetError
            As :meth:`check`; then nothing is charged.
        ValueError
            ``release_id`` was charged before with other costs.
        """
        self._spend(self._costs(costs), None if release_id is None else str(release_id))

    # -- persistence --------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """A JSON-able dict with a checksum; per-user spends are exact fractions as strings (``"3/2"``)."""
        data: dict[str, Any] = {
            "format": FORMAT,
            "version": _VERSION,
            "total_epsilon": self._total,
            "spent": [[u, str(s)] for u, s in self._spent_of().items()],
        }
        data["sha256"] = _digest(data)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> BudgetAccountant:
        """Rebuild an accountant from :meth:`to_dict` output, after checking its integrity.

        The checksum must match the content; the total must be a finite number > 0; every spend an exact
        fraction in ``[0, total]``; no user may appear twice (under :func:`user_key`). A record without a
        checksum (written by geoldp before checksums) is read with a :class:`~geoldp.GeoLDPWarning`.

        Raises
        ------
        ValueError
            Not a geoldp accountant record, a checksum that does not match, or an inconsistent entry
            (named by position).
        """
        return cls._from_dict(data, "The saved BudgetAccountant")

    @classmethod
    def _from_dict(cls, data: Any, source: str) -> BudgetAccountant:
        if not isinstance(data, Mapping) or data.get("format") != FORMAT:
            raise ValueError(f"{source} is not a saved BudgetAccountant: its 'format' must be {FORMAT!r}.")
        version = data.get("version")
        if type(version) is not int or version not in (1, _VERSION):
            raise ValueError(
                f"{source} has an unsupported BudgetAccountant version; this geoldp reads versions 1 and "
                f"{_VERSION}."
            )
        if version == 1:
            warnings.warn(
                f"{source} has no checksum (it was saved by an older geoldp), so hand edits cannot be "
                "detected; its entries are checked and ids that are one user (7 and '7') merged. Save it "
                "again to add a checksum.",
                GeoLDPWarning,
                stacklevel=user_stacklevel(),
            )
        elif not isinstance(data.get("sha256"), str) or data["sha256"] != _digest(data):
            raise ValueError(
                f"{source} fails its integrity check: its checksum does not match its content (the file was "
                "edited or damaged after it was saved). It is refused: restore it from a backup."
            )
        total = data.get("total_epsilon")
        if (
            isinstance(total, bool)
            or not isinstance(total, int | float)
            or not (0.0 < float(total) < math.inf)
        ):
            raise ValueError(f"{source} needs a finite numeric 'total_epsilon' > 0.")
        acc = cls(float(total))
        limit = Fraction(acc._total)
        entries = data.get("spent")
        if not isinstance(entries, list):
            raise ValueError(f"{source} needs a 'spent' list of [user, spent] pairs.")
        for pos, entry in enumerate(entries):
            try:
                user, raw = entry
                if not isinstance(raw, str):
                    raise TypeError
                spent = Fraction(raw)
            except (TypeError, ValueError, ZeroDivisionError):
                raise ValueError(f"Entry {pos} of 'spent' in {source} must be [user, \"p/q\"].") from None
            if spent < 0:
                raise ValueError(f"Entry {pos} of 'spent' in {source} is not a valid spend (negative).")
            if spent > limit:
                raise ValueError(
                    f"Entry {pos} of 'spent' in {source} is above the total: no release can spend more "
                    "than 'total_epsilon'."
                )
            try:
                u = _check_user(user, where=f"entry {pos} of 'spent'")
            except TypeError as err:
                raise ValueError(f"{err} ({source})") from None
            if u in acc._spent:
                if version != 1:  # to_dict writes each user once
                    raise ValueError(f"Entry {pos} of 'spent' in {source} repeats a user.")
                spent += acc._spent[u]  # an old file may hold 7 and "7": one user, who spent both
            acc._spent[u] = spent
        return acc

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the accountant as JSON atomically, replacing the file at ``path`` if there is one.

        The file is written in full under a temporary identity in the same folder, fsynced, then given its
        name in one atomic rename (the layer every geoldp output goes through): a crash, Ctrl-C or
        ``kill -9`` mid-write leaves the previous file intact, never a truncated one, and no temporary
        file. The file carries a SHA-256 checksum of its content, checked by :meth:`load`. For an accountant
        kept in a store (:meth:`open`) it is a copy: the store goes on being charged, and ``path`` may not
        be the store's own file (that would replace the store).
        """
        from geoldp import store as stores
        from geoldp._core import safe_write as _safe_write

        location = self.location
        if location is not None and not stores.is_url(location):
            target = os.path.realpath(os.fspath(path))
            if any(
                target == location + suffix for suffix in ("", "-wal", "-shm", "-journal", stores.LOCK_SUFFIX)
            ):
                raise ValueError(
                    f"BudgetAccountant.save would replace the accountant's own store '{location}'; save the "
                    "JSON copy to another file."
                )
        data = json.dumps(self.to_dict(), indent=1).encode("utf-8")
        _safe_write.write_bytes(path, data, overwrite=True)

    @classmethod
    def load(cls, path: str | os.PathLike[str], *, max_bytes: int = MAX_FILE_BYTES) -> BudgetAccountant:
        """Read an accountant written by :meth:`save`, after checking its integrity (:meth:`from_dict`).

        Parameters
        ----------
        path : str or path-like
            A regular file (a FIFO, device, socket or directory is refused without being opened for a
            blocking read).
        max_bytes : int, default 256 MiB
            Refuse larger files (about six million users fit the default); raise it for a bigger record.

        Raises
        ------
        FileNotFoundError
            No such file.
        ValueError
            Not a regular file, larger than ``max_bytes``, not valid JSON, not a saved accountant, a
            checksum that does not match the content, or an inconsistent entry.

        Notes
        -----
        The checksum detects accidental edits, damage and naive tampering (a raised total, a deleted or
        lowered entry). It is not a signature: someone who can write the file and knows the format can
        recompute it. Protect the file like the private data it describes.
        """
        name = os.fspath(path)
        source = f"The BudgetAccountant file {name!r}"
        if isinstance(max_bytes, bool) or not isinstance(max_bytes, numbers.Integral) or max_bytes < 1:
            raise ValueError("The 'max_bytes' parameter of BudgetAccountant.load must be an int >= 1.")
        limit = int(max_bytes)
        irregular = ValueError(
            f"{source} is not a regular file; BudgetAccountant.load reads only regular files."
        )
        if not stat.S_ISREG(os.stat(name).st_mode):  # before open(): opening a FIFO would block
            raise irregular
        flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
        fd = os.open(name, flags)  # non-blocking: a FIFO swapped in after the check does not hang
        with os.fdopen(fd, "rb") as fh:
            info = os.fstat(fh.fileno())
            if not stat.S_ISREG(info.st_mode):
                raise irregular
            raw = fh.read(limit + 1) if info.st_size <= limit else b""
        if info.st_size > limit or len(raw) > limit:
            raise ValueError(
                f"{source} is larger than max_bytes={limit} bytes. If it really is your accountant, pass a "
                "larger max_bytes= to BudgetAccountant.load."
            )
        try:
            data = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError):
            raise ValueError(f"{source} is not valid JSON.") from None
        return cls._from_dict(data, source)


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

    def commit(self, release_id: str | None = None) -> None:
        """Charge the accountant (once), under ``release_id``; re-checks and adds as one step, so no charge
        made in between (by this thread, another, or another process sharing a store) can overdraw.

        Raises
        ------
        BudgetError
            Another charge made since the check left some user too little budget: nothing is charged,
            and the release must be discarded.
        """
        with self._acc._lock:
            if self._done:
                return
            self._acc._spend(self._costs, release_id, late=True)
            self._done = True
            self._costs = {}  # private per-user counts do not outlive the release

    @classmethod
    def merge(cls, charges: list[PendingCharge]) -> PendingCharge:
        """One charge for the parts of one release (each part's costs added up), to commit once."""
        first = charges[0]
        costs: dict[int | str, Fraction] = {}
        for charge in charges:
            if charge._acc is not first._acc:
                raise ValueError("Charges of one release go to one accountant.")
            for u, c in charge._costs.items():
                costs[u] = costs.get(u, Fraction(0)) + c
        return cls(first._acc, costs, first.user_col, first.epsilon)

    def ledger(self) -> dict[str, Any]:
        """Public settings only (no user ids, no counts)."""
        return {
            "user_col": str(self.user_col),
            "total_epsilon_per_user": self._acc.total_epsilon,
            "composition": "sequential per user: k trajectories of one user cost k * epsilon",
        }


def check_charge_parameters(accountant: Any, user_col: Any, columns: Any, *, caller: str) -> bool:
    """Check the accountant parameters of a release against the frame's column labels (no row is read).

    Returns whether the release is charged: ``accountant`` and ``user_col`` go together (``False`` when
    neither is given).
    """
    if accountant is None and user_col is None:
        return False
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
    if user_col not in columns:
        raise missing_column("user_col", caller, user_col, columns)
    return True


def user_ids(frame: Any, user_col: Any, *, caller: str) -> Any:
    """The user column of ``frame`` (a Series), checked: it exists and no row lacks a user id."""
    if user_col not in frame.columns:
        raise missing_column("user_col", caller, user_col, frame.columns)
    users = frame[user_col]
    check_no_missing(users, what="user id", column=user_col, caller=caller)
    return users


def charge_release(
    accountant: Any,
    frame: Any,
    user_col: Any,
    epsilon: float,
    *,
    traj_id_col: Any = None,
    caller: str = "GeoDataFrame.ldp.perturb",
    advice: str = "",
) -> PendingCharge | None:
    """Check a release against the accountant before any random draw; return the charge to commit.

    Every trajectory costs its user ``epsilon``: one row is one trajectory, or, for Point rows grouped by
    ``traj_id_col``, each distinct ``(user, trajectory)`` pair is one.

    ``frame`` is the (private) frame being released; ``user_col`` holds each row's user id (int or str).
    ``advice`` is appended to the refusal message (for instance the options of ``caller`` that fit a
    per-user budget). ``None`` when neither ``accountant`` nor ``user_col`` is given. A ``BudgetError`` when
    the release would take some user past the total (the message gives the count of such users, no id).
    """
    if not check_charge_parameters(accountant, user_col, frame.columns, caller=caller):
        return None
    users = user_ids(frame, user_col, caller=caller)
    import pandas as pd

    values = users.to_numpy()
    if pd.api.types.infer_dtype(values, skipna=False) not in ("integer", "string"):
        for pos, v in enumerate(values):  # find the first bad one, to name its position
            _check_user(v, where=f"row position {pos} of the user column")

    # one code per user under user_key: an object column holding 7 and "7" (or "007") is one user
    codes, uniques = pd.factorize(values, sort=False)
    keys: dict[int | str, int] = {}
    remap = np.fromiter(
        (keys.setdefault(_check_user(u, where="a user id"), len(keys)) for u in uniques),
        dtype=np.int64,
        count=len(uniques),
    )
    user = remap[codes]
    if traj_id_col is not None:
        pairs = pd.DataFrame({"u": user, "t": frame[traj_id_col].to_numpy()}).drop_duplicates()
        counts = np.bincount(pairs["u"].to_numpy(), minlength=len(keys))
        del pairs
    else:
        counts = np.bincount(user, minlength=len(keys))
    eps = Fraction(float(epsilon))
    costs = {u: eps * int(counts[code]) for u, code in keys.items()}
    del counts, values, codes, uniques, user
    try:
        with accountant._lock:
            accountant._refuse(costs)
    except BudgetError as exc:
        if not advice:
            raise
        raise BudgetError(f"{exc}{advice}") from None
    return PendingCharge(accountant, costs, user_col, float(epsilon))


def _user_text(key: int | str) -> str:
    """A user key as the store keeps it: an int's decimal digits, a string as it is (see the notes)."""
    # a str key that is all digits only stays a str past int()'s digit limit, longer than any int's text:
    # the two kinds never share a text, and user_key(text) gives the key back
    return str(key)


def store_path(target: str | os.PathLike[str]) -> tuple[str, str | None]:
    """Where :meth:`BudgetAccountant.open` keeps the accountant named ``target``: ``(store, json)``.

    A URL is its own store. A file holding a JSON accountant (saved by :meth:`BudgetAccountant.save`)
    has its store next to it: ``budget.json`` -> ``budget.gpkg`` (``acc`` -> ``acc.gpkg``), and ``json`` is
    that file (links followed), to migrate; a path ending in ``.json`` that does not exist names the same
    ``.gpkg``. Any other path is the store itself (``json`` None).
    """
    from geoldp import store as stores

    if stores.is_url(target):
        return str(target), None
    given = os.fspath(target)
    if not isinstance(given, str):
        raise TypeError("The accountant's path must be a str or os.PathLike of str.")
    legacy = _holds_json(given)
    if not legacy and not (given.lower().endswith(".json") and not os.path.lexists(given)):
        return given, None
    base = os.path.realpath(given) if legacy else given
    stem = base[: -len(".json")] if base.lower().endswith(".json") else base
    return stem + ".gpkg", (base if legacy else None)


def _holds_json(path: str) -> bool:
    """Whether ``path`` is a regular file whose first non-blank byte opens a JSON object."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return False
        with open(path, "rb") as fh:
            head = fh.read(64).lstrip()
    except OSError:
        return False
    return head.startswith(b"{")


def _migrate(legacy: str, location: str, total_epsilon: float | None) -> Any:
    """The store of the JSON accountant ``legacy``: created from it the first time, checked afterwards."""
    from geoldp import store as stores

    with open(legacy, "rb") as fh:
        raw = fh.read()
    sha = hashlib.sha256(raw).hexdigest()
    old = BudgetAccountant.load(legacy)
    if total_epsilon is not None and Fraction(total_epsilon) != Fraction(old.total_epsilon):
        raise ValueError(
            f"The JSON accountant '{legacy}' keeps a total of {old.total_epsilon:g} per user, not "
            f"{total_epsilon:g}."
        )
    initial = {_user_text(u): s for u, s in old._spent.items()}
    store = stores.Store.open(
        location, total_epsilon=old.total_epsilon, initial=initial, migrated_from=legacy, migrated_sha256=sha
    )
    if store.migrated_sha256 != sha:
        store.close()
        if store.migrated_from is None:
            why = "was not made from it"
        else:
            why = "was made from an earlier version of it (the JSON file changed after it was migrated)"
        raise ValueError(
            f"The JSON accountant '{legacy}' has its store at '{location}', which {why}. Open the store "
            "itself, or move one of the two files away."
        )
    if store.created:
        warnings.warn(
            f"The JSON accountant '{legacy}' was migrated to the store '{location}', which is charged from "
            "now on (the JSON file is kept, unchanged, and no longer charged).",
            GeoLDPWarning,
            stacklevel=user_stacklevel(),
        )
    return store


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
    """
    record = dict(provenance)
    record["points"] = {"provenance": points_provenance}
    if released is not None and record.get("rng") == "seeded":
        record["release_id"] = _content_id(released, record)  # equal only for identical releases
    else:
        record["release_id"] = uuid.uuid4().hex  # os.urandom: never derived from the seed or the data
    if charge is not None:
        charge.commit(record["release_id"])
        record["accounting"] = charge.ledger()
    return ReleaseLedger.from_record(record)

"""The transactional store of a collection: each user's budget, every spend, and the reports received.

One store keeps the state that several processes share while a collection runs: the public configuration
(each user's total ε, the format version), every spend (one row per release and user, with the release
id), each user's running total, the campaigns, and the reports received. Two back ends, one schema and
one logic:

* **SQLite** (the default, a file path): the file is a GeoPackage (OGC 12-128, version 1.4), so QGIS and
  GDAL open it; every table is registered in ``gpkg_contents`` as an attribute table, and the GeoPackage
  tables a layer needs (``gpkg_spatial_ref_sys`` with WGS 84, ``gpkg_geometry_columns``) are in place
  for layers of reports. A check-and-spend runs in one ``BEGIN IMMEDIATE`` transaction, which holds the
  database's write lock: processes take turns, never interleave. The file is in WAL mode (readers do not
  wait for a writer) with ``synchronous=FULL`` (a committed spend survives a power loss).
* **PostgreSQL** (a ``postgresql://`` URL; needs ``pip install "geoldp[postgres]"``, psycopg 3): the same
  tables. A check-and-spend creates the missing budget rows of its users and locks them all
  (``SELECT ... FOR UPDATE``, in one order, so that two transactions never wait for each other in a
  circle); a transaction that still meets a deadlock or a conflict is rolled back and run again.

Every write is one transaction: a process killed at any moment (``kill -9``) leaves the store as it was
before or after that transaction, never in between, so each user's total always equals the sum of her
spends and each report has its spend (:meth:`Store.verify` checks both).

A spend is idempotent by its release id and a report by its record digest: sending the same release or
the same record twice charges and stores it once.

User ids are text here, in the canonical form of :func:`geoldp.accounting.user_key` (the accountant
converts); budgets are exact fractions, kept as text (``"3/2"``) beside a float for reading in a GIS.
The store holds user ids: it is the collector's private record, never to be published.
"""

from __future__ import annotations

import contextlib
import datetime
import math
import os
import sqlite3
import stat
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from fractions import Fraction
from typing import Any, NamedTuple, TypeVar

try:
    import fcntl
except ImportError:  # pragma: no cover (Windows: SQLite's own wait only)
    fcntl = None  # type: ignore[assignment]

__all__ = ["Report", "Store"]

#: The ``format`` of a store's configuration row.
FORMAT = "geoldp.store"
#: The schema version this geoldp writes and reads.
VERSION = 1
#: GeoPackage's ``application_id`` ("GPKG") and ``user_version`` (1.4.0).
GPKG_APPLICATION_ID = 0x47504B47
GPKG_USER_VERSION = 10400
#: How long a process waits for another's transaction before giving up (seconds).
BUSY_SECONDS = 120.0
#: Rows per statement when a list of keys goes into ``IN (...)`` (below SQLite's variable limit).
_CHUNK = 5000
#: The advisory lock file next to a SQLite store (see ``_SQLite``).
LOCK_SUFFIX = "-lock"
#: Transactions retried after a deadlock or serialization failure (PostgreSQL).
_RETRIES = 20

_T = TypeVar("_T")

#: The store's tables: name -> (description, SQLite columns). PostgreSQL gets the same columns.
TABLES: dict[str, tuple[str, str]] = {
    "geoldp_accountant": (
        "geoldp: the store's public configuration (each user's total epsilon, format version)",
        "fid INTEGER PRIMARY KEY CHECK (fid = 1), format TEXT NOT NULL, version INTEGER NOT NULL, "
        "total_epsilon DOUBLE NOT NULL, total_epsilon_exact TEXT NOT NULL, created_utc DATETIME NOT NULL, "
        "migrated_from TEXT, migrated_sha256 TEXT",
    ),
    "geoldp_budgets": (
        "geoldp: each user's epsilon spent so far (the sum of her spends)",
        "fid INTEGER PRIMARY KEY AUTOINCREMENT, user_id TEXT NOT NULL UNIQUE, spent_epsilon DOUBLE NOT NULL, "
        "spent_exact TEXT NOT NULL, updated_utc DATETIME NOT NULL",
    ),
    "geoldp_spends": (
        "geoldp: every spend, one row per release (or report) and user",
        "fid INTEGER PRIMARY KEY AUTOINCREMENT, release_id TEXT NOT NULL, user_id TEXT NOT NULL, "
        "kind TEXT NOT NULL, epsilon DOUBLE NOT NULL, epsilon_exact TEXT NOT NULL, state TEXT NOT NULL "
        "CHECK (state IN ('pending', 'committed')), output TEXT, charged_utc DATETIME NOT NULL, "
        "UNIQUE (release_id, user_id)",
    ),
    "geoldp_campaigns": (
        "geoldp: the campaigns whose reports this store receives (their public configuration)",
        "fid INTEGER PRIMARY KEY AUTOINCREMENT, campaign_id TEXT NOT NULL UNIQUE, document TEXT NOT NULL, "
        "registered_utc DATETIME NOT NULL",
    ),
    "geoldp_reports": (
        "geoldp: the reports received, one row per record (stored once, with its spend)",
        "fid INTEGER PRIMARY KEY AUTOINCREMENT, campaign_id TEXT NOT NULL, user_id TEXT NOT NULL, "
        "record_digest TEXT NOT NULL UNIQUE, epsilon DOUBLE NOT NULL, payload TEXT NOT NULL, "
        "ledger TEXT NOT NULL, received_utc DATETIME NOT NULL",
    ),
}
#: The columns the store writes, in the order of its statements' parameters.
_CONFIG = "format, version, total_epsilon, total_epsilon_exact, migrated_from, migrated_sha256"
_BUDGET = "user_id, spent_epsilon, spent_exact, updated_utc"
_SPEND = "release_id, user_id, kind, epsilon, epsilon_exact, state, output, charged_utc"
_REPORT = "campaign_id, user_id, record_digest, epsilon, payload, ledger, received_utc"
#: PostgreSQL types of the columns that are not text (for the arrays of a bulk insert).
_PG_TYPES = {
    "spent_epsilon": "float8",
    "epsilon": "float8",
    "total_epsilon": "float8",
    "version": "int8",
    "fid": "int8",
    "created_utc": "timestamptz",
    "updated_utc": "timestamptz",
    "charged_utc": "timestamptz",
    "registered_utc": "timestamptz",
    "received_utc": "timestamptz",
}
#: Besides the unique keys (a spend by release and user, a report by digest, a budget by user): only what
#: reading a campaign's reports needs; every index is written by every append, so there are no others.
_INDEXES = ("CREATE INDEX IF NOT EXISTS geoldp_reports_campaign ON geoldp_reports (campaign_id)",)
#: The counts :meth:`Store.verify` reads with one query each.
_CHECKS = {
    "report_without_spend": "SELECT count(*) FROM geoldp_reports r WHERE NOT EXISTS (SELECT 1 FROM "
    "geoldp_spends s WHERE s.release_id = r.record_digest AND s.kind = 'report')",
    "spend_without_report": "SELECT count(*) FROM geoldp_spends s WHERE s.kind = 'report' AND NOT EXISTS "
    "(SELECT 1 FROM geoldp_reports r WHERE r.record_digest = s.release_id)",
    "duplicate_reports": "SELECT count(*) - count(DISTINCT record_digest) FROM geoldp_reports",
}

_WGS84_WKT = (
    'GEOGCS["WGS 84",DATUM["WGS_1984",SPHEROID["WGS 84",6378137,298.257223563,AUTHORITY["EPSG","7030"]],'
    'AUTHORITY["EPSG","6326"]],PRIMEM["Greenwich",0,AUTHORITY["EPSG","8901"]],UNIT["degree",'
    '0.0174532925199433,AUTHORITY["EPSG","9122"]],AUTHORITY["EPSG","4326"]]'
)
#: The GeoPackage core tables (OGC 12-128r18, Annex C), created in an empty SQLite store.
_GPKG_CORE = (
    "CREATE TABLE gpkg_spatial_ref_sys (srs_name TEXT NOT NULL, srs_id INTEGER NOT NULL PRIMARY KEY, "
    "organization TEXT NOT NULL, organization_coordsys_id INTEGER NOT NULL, definition TEXT NOT NULL, "
    "description TEXT)",
    "CREATE TABLE gpkg_contents (table_name TEXT NOT NULL PRIMARY KEY, data_type TEXT NOT NULL, "
    "identifier TEXT UNIQUE, description TEXT DEFAULT '', last_change DATETIME NOT NULL DEFAULT "
    "(strftime('%Y-%m-%dT%H:%M:%fZ','now')), min_x DOUBLE, min_y DOUBLE, max_x DOUBLE, max_y DOUBLE, "
    "srs_id INTEGER, CONSTRAINT fk_gc_r_srs_id FOREIGN KEY (srs_id) REFERENCES gpkg_spatial_ref_sys(srs_id))",
    "CREATE TABLE gpkg_geometry_columns (table_name TEXT NOT NULL, column_name TEXT NOT NULL, "
    "geometry_type_name TEXT NOT NULL, srs_id INTEGER NOT NULL, z TINYINT NOT NULL, m TINYINT NOT NULL, "
    "CONSTRAINT pk_geom_cols PRIMARY KEY (table_name, column_name), CONSTRAINT uk_gc_table_name UNIQUE "
    "(table_name), CONSTRAINT fk_gc_tn FOREIGN KEY (table_name) REFERENCES gpkg_contents(table_name), "
    "CONSTRAINT fk_gc_srs FOREIGN KEY (srs_id) REFERENCES gpkg_spatial_ref_sys (srs_id))",
)
_GPKG_SRS = (
    (
        "Undefined cartesian SRS",
        -1,
        "NONE",
        -1,
        "undefined",
        "undefined cartesian coordinate system",
    ),
    (
        "Undefined geographic SRS",
        0,
        "NONE",
        0,
        "undefined",
        "undefined geographic coordinate system",
    ),
    ("WGS 84 geodetic", 4326, "EPSG", 4326, _WGS84_WKT, "longitude/latitude coordinates in decimal degrees"),
)


def is_url(target: Any) -> bool:
    """Whether ``target`` is a PostgreSQL URL (``postgresql://...`` or ``postgres://...``), not a path."""
    return isinstance(target, str) and target.startswith(("postgresql://", "postgres://"))


def redact(url: str) -> str:
    """A URL without its password, for messages."""
    head, sep, tail = url.partition("://")
    if "@" not in tail:
        return url
    creds, _, rest = tail.rpartition("@")
    user = creds.split(":", 1)[0]
    return f"{head}{sep}{user}{':***' if ':' in creds else ''}@{rest}"


@contextlib.contextmanager
def opened(store: Any, total_epsilon: float | None = None) -> Iterator[Store]:
    """``store`` as it is, or the store of a path or URL (created with ``total_epsilon`` if new), closed at
    the end only if it was opened here; a given store must keep ``total_epsilon`` per user, if given."""
    if isinstance(store, Store):
        if total_epsilon is not None and store.total_epsilon != total_epsilon:
            raise ValueError(
                f"The store {store.location} keeps a total of {store.total_epsilon:g} per user; the "
                f"campaign's is {total_epsilon:g}: use a store made for this campaign."
            )
        yield store
        return
    if not (isinstance(store, (str, os.PathLike)) and (is_url(store) or os.fspath(store))):
        raise TypeError(
            "The 'store' parameter must be a GeoPackage path, a postgresql:// URL or a geoldp.store.Store. "
            f"Got {type(store).__name__} instead."
        )
    with Store.open(store, total_epsilon=total_epsilon) as st:
        yield st


class Report(NamedTuple):
    """One report record to append: its user, digest (unique), ε, and the JSON payload and ledger entry.

    A named tuple (immutable, and quick to make: ingest makes one per record).
    """

    user_id: str
    record_digest: str
    epsilon: float
    payload: str
    ledger: str


class _Refused(Exception):
    """Raised inside a transaction to roll it back: these users would pass their total."""

    def __init__(self, over: list[str]) -> None:
        super().__init__(len(over))
        self.over = over


def _exact(text: Any, where: str) -> Fraction:
    return Fraction(*_ratio(text, where))


def _ratio(text: Any, where: str) -> tuple[int, int]:
    """``(numerator, denominator > 0)``, not reduced, of ``"p/q"`` or ``"p"`` as ``str(Fraction)`` writes it.

    Two ints, without Fraction's slower parsing of text (:meth:`Store.append_reports` adds and compares
    them without building fractions).
    """
    try:
        num, _, den = str(text).partition("/")
        n, d = int(num), int(den) if den else 1
    except ValueError:
        raise ValueError(f"The store holds a malformed exact value in {where}.") from None
    if d == 0:
        raise ValueError(f"The store holds a malformed exact value in {where}.")
    if d < 0:
        n, d = -n, -d
    if n < 0:
        raise ValueError(f"The store holds a negative value in {where}.")
    return n, d


def _text(num: int, den: int) -> str:
    """``str(Fraction(num, den))`` for ``den > 0``, without building the fraction."""
    g = math.gcd(num, den)
    return str(num // g) if den == g else f"{num // g}/{den // g}"


def _insert(mark: str, table: str, columns: str, *, upsert: str = "", values: str = "") -> str:
    """``INSERT INTO table (columns) VALUES (mark, ...)`` (or ``values``, a query); with ``upsert``, the
    other columns replace those of the row whose ``upsert`` column conflicts (SQLite and PostgreSQL)."""
    names = [c.strip() for c in columns.split(",")]
    values = values or f"VALUES ({', '.join([mark] * len(names))})"
    sql = f"INSERT INTO {table} ({', '.join(names)}) {values}"
    if upsert:
        sets = ", ".join(f"{c} = excluded.{c}" for c in names if c != upsert)
        sql += f" ON CONFLICT ({upsert}) DO UPDATE SET {sets}"
    return sql


def _where_in(mark: str, column: str, values: Sequence[str]) -> tuple[str, tuple[Any, ...]]:
    """``column IN (?, ...)`` (SQLite) or ``column = ANY(%s)`` (PostgreSQL: one array parameter), with its
    parameters."""
    if mark == "?":
        return f"{column} IN ({', '.join('?' * len(values))})", tuple(values)
    return f"{column} = ANY(%s)", (list(values),)


def _chunks(items: Sequence[_T], size: int = _CHUNK) -> Iterator[Sequence[_T]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


# ------------------------------------------------------------------------------------------------------
# the two back ends: connections, transactions, dialect


class _SQLite:
    """A GeoPackage file: one write transaction at a time (``BEGIN IMMEDIATE``).

    Writers of a store also queue on an advisory lock file next to it (``<store>-lock``, like SQLite's
    ``-wal`` and ``-shm``): SQLite's own wait polls with sleeps of up to 100 ms, so under contention the
    write lock would sit free while every waiter sleeps; the kernel wakes the next writer as soon as the
    lock file is released. SQLite's locking stays what guarantees one writer at a time.
    """

    mark = "?"
    name = "SQLite"

    def __init__(self, path: str) -> None:
        self.path = path
        self.conn = sqlite3.connect(path, timeout=BUSY_SECONDS, isolation_level=None, check_same_thread=False)
        self.conn.execute(f"PRAGMA busy_timeout = {int(BUSY_SECONDS * 1000)}")
        self.conn.execute("PRAGMA foreign_keys = ON")
        self._queue: int | None = None  # the lock file, opened once the file is known to be a store

    def now(self) -> Any:
        now = datetime.datetime.now(datetime.UTC)
        return now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z"  # GeoPackage's form

    @contextlib.contextmanager
    def transaction(self, write: bool = True) -> Iterator[Any]:
        queued = write and self._queue is not None and fcntl is not None
        if queued:
            fcntl.flock(self._queue, fcntl.LOCK_EX)  # type: ignore[arg-type]
        try:
            cur = self.conn.cursor()
            cur.execute("BEGIN IMMEDIATE" if write else "BEGIN")
            try:
                yield cur
            except BaseException:
                with contextlib.suppress(sqlite3.Error):
                    cur.execute("ROLLBACK")
                raise
            cur.execute("COMMIT")
        finally:
            if queued:
                fcntl.flock(self._queue, fcntl.LOCK_UN)  # type: ignore[arg-type]

    def run(self, body: Callable[[Any], _T], *, write: bool = True) -> _T:
        with self.transaction(write) as cur:
            return body(cur)

    def insert(
        self, cur: Any, table: str, columns: str, rows: Sequence[tuple[Any, ...]], upsert: str = ""
    ) -> None:
        """Insert ``rows`` (tuples in the order of ``columns``); ``upsert``: see :func:`_insert`."""
        cur.executemany(_insert(self.mark, table, columns, upsert=upsert), rows)

    def lock_users(self, cur: Any, users: Sequence[str], now: Any) -> dict[str, str]:
        """``{user: spent, exact text}`` of ``users`` (those with a budget row), locked until the end of
        the transaction."""
        # BEGIN IMMEDIATE already holds the database's write lock: reading is enough
        return _read_spent(cur, self.mark, users)

    def has_schema(self, cur: Any) -> bool:
        cur.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'geoldp_accountant'")
        return cur.fetchone() is not None

    def is_empty(self, cur: Any) -> bool:
        cur.execute("SELECT count(*) FROM sqlite_master")
        return int(cur.fetchone()[0]) == 0

    def create_schema(self, cur: Any, now: str) -> None:
        cur.execute(f"PRAGMA application_id = {GPKG_APPLICATION_ID}")
        cur.execute(f"PRAGMA user_version = {GPKG_USER_VERSION}")
        for sql in _GPKG_CORE:
            cur.execute(sql)
        cur.executemany("INSERT INTO gpkg_spatial_ref_sys VALUES (?, ?, ?, ?, ?, ?)", _GPKG_SRS)
        for table, (description, columns) in TABLES.items():
            cur.execute(f"CREATE TABLE {table} ({columns})")
            cur.execute(
                "INSERT INTO gpkg_contents (table_name, data_type, identifier, description, last_change) "
                "VALUES (?, 'attributes', ?, ?, ?)",
                (table, table, description, now),
            )
        for sql in _INDEXES:
            cur.execute(sql)

    def after_create(self) -> None:
        # WAL: readers never wait for a writer; persistent in the file. Not inside a transaction.
        for _ in range(50):
            try:
                self.conn.execute("PRAGMA journal_mode = WAL")
                break
            except sqlite3.OperationalError:  # another connection is busy: WAL is an optimisation only
                time.sleep(0.05)

    def configure(self) -> None:
        self.conn.execute("PRAGMA synchronous = FULL")  # a committed spend survives a power loss
        if fcntl is not None and self._queue is None:
            with contextlib.suppress(OSError):  # a folder we cannot write to: SQLite's wait alone
                self._queue = os.open(self.path + LOCK_SUFFIX, os.O_RDWR | os.O_CREAT, 0o600)

    def close(self) -> None:
        self.conn.close()
        if self._queue is not None:
            os.close(self._queue)
            self._queue = None


class _Postgres:
    """A PostgreSQL database through psycopg 3: the users of a transaction locked, retried on conflict."""

    mark = "%s"
    name = "PostgreSQL"

    def __init__(self, url: str) -> None:
        try:
            import psycopg
        except ImportError:
            raise ImportError('A PostgreSQL store needs psycopg 3: pip install "geoldp[postgres]"') from None
        self._psycopg = psycopg
        self.conn = psycopg.connect(url, autocommit=True)
        errors = psycopg.errors
        self._retry = (errors.DeadlockDetected, errors.SerializationFailure, errors.UniqueViolation)

    def now(self) -> Any:
        return datetime.datetime.now(datetime.UTC)

    @contextlib.contextmanager
    def transaction(self, write: bool = True) -> Iterator[Any]:
        with self.conn.transaction():
            with self.conn.cursor() as cur:
                yield cur

    def run(self, body: Callable[[Any], _T], *, write: bool = True) -> _T:
        for attempt in range(_RETRIES):
            try:
                with self.transaction(write) as cur:
                    return body(cur)
            except self._retry:
                if attempt == _RETRIES - 1:
                    raise
                # back-off jitter from the OS, not from any global random state
                time.sleep(int.from_bytes(os.urandom(2), "big") / 65536.0 * 0.01 * (attempt + 1))
        raise AssertionError("unreachable")

    def insert(
        self, cur: Any, table: str, columns: str, rows: Sequence[tuple[Any, ...]], upsert: str = ""
    ) -> None:
        """Insert ``rows`` in one statement (one array per column, ``unnest``): not one per row."""
        if not rows:
            return
        arrays = ", ".join(f"%b::{_PG_TYPES.get(c.strip(), 'text')}[]" for c in columns.split(","))  # binary
        sql = _insert(self.mark, table, columns, upsert=upsert, values=f"SELECT * FROM unnest({arrays})")
        cur.execute(sql, [list(col) for col in zip(*rows, strict=True)])

    def lock_users(self, cur: Any, users: Sequence[str], now: Any) -> dict[str, str]:
        """``{user: spent, exact text}`` of ``users`` (a zero row created for a new user), locked until the
        end of the transaction."""
        if not users:
            return {}
        ordered = sorted(users)
        # a row for each new user, then every user's row locked, in one order (no deadlock between two)
        cur.execute(
            "INSERT INTO geoldp_budgets (user_id, spent_epsilon, spent_exact, updated_utc) "
            "SELECT u, 0, '0', %s FROM unnest(%s::text[]) AS u ORDER BY u ON CONFLICT (user_id) DO NOTHING",
            (now, ordered),
        )
        cur.execute(
            "SELECT user_id, spent_exact FROM geoldp_budgets WHERE user_id = ANY(%s) ORDER BY user_id "
            "FOR UPDATE",
            (ordered,),
        )
        return dict(cur.fetchall())

    def has_schema(self, cur: Any) -> bool:
        cur.execute("SELECT to_regclass('geoldp_accountant') IS NOT NULL")
        return bool(cur.fetchone()[0])

    def is_empty(self, cur: Any) -> bool:
        return True  # a database holds other tables too: the store's own tables are what counts

    def create_schema(self, cur: Any, now: Any) -> None:
        for table, (_, columns) in TABLES.items():
            cols = (
                columns.replace(
                    "INTEGER PRIMARY KEY AUTOINCREMENT", "BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY"
                )
                .replace("DOUBLE", "DOUBLE PRECISION")
                .replace("DATETIME", "TIMESTAMPTZ")
            )
            cur.execute(f"CREATE TABLE {table} ({cols})")
        for sql in _INDEXES:
            cur.execute(sql)

    def before_create(self, cur: Any) -> None:
        cur.execute("SELECT pg_advisory_xact_lock(4747474747)")  # one creator at a time

    def after_create(self) -> None:
        return None

    def configure(self) -> None:
        return None

    def close(self) -> None:
        self.conn.close()


def _read_spent(cur: Any, mark: str, users: Sequence[str] | None = None) -> dict[str, str]:
    """``{user: spent, exact text}`` of ``users`` (those with a budget row), or of every user."""
    if users is None:
        cur.execute("SELECT user_id, spent_exact FROM geoldp_budgets")
        return dict(cur.fetchall())
    out: dict[str, str] = {}
    for part in _chunks(list(users)):
        where, params = _where_in(mark, "user_id", part)
        cur.execute(f"SELECT user_id, spent_exact FROM geoldp_budgets WHERE {where}", params)
        out.update(cur.fetchall())
    return out


# ------------------------------------------------------------------------------------------------------
# the store


def _close_quietly(backend: Any, pid: int) -> None:
    """Close a back end's connection in the process that opened it (a forked child leaves it alone)."""
    if os.getpid() == pid:
        with contextlib.suppress(Exception):
            backend.close()


def _sqlite_path(path: str | os.PathLike[str], create: bool) -> str:
    """The file a SQLite store lives in: links followed to their target (a dangling link is refused),
    only a regular file accepted; a new file is created empty, readable by its owner only."""
    given = os.fspath(path)
    real = os.path.realpath(given)
    if os.path.islink(given) and not os.path.exists(real):
        raise ValueError(
            f"The store '{given}' is a link to '{real}', which does not exist; link to an existing store or "
            "name the store's own path."
        )
    try:
        info = os.stat(real)
    except FileNotFoundError:
        if not create:
            raise FileNotFoundError(f"The store '{given}' does not exist.") from None
        parent = os.path.dirname(real) or "."
        if not os.path.isdir(parent):
            raise ValueError(f"The folder of the store '{given}' does not exist.") from None
        try:
            os.close(os.open(real, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        except FileExistsError:
            pass  # another process created it just now: open it (its creator writes the schema first)
        return real
    if not stat.S_ISREG(info.st_mode):
        raise ValueError(f"The store '{given}' is not a regular file.")
    return real


class Store:
    """A transactional store of budgets, spends and reports (see the module notes).

    Open one with :meth:`open`; close it with :meth:`close` (or use it in a ``with`` block). A store is
    safe to share between threads (a lock serialises its connection) and between processes (each opens
    its own); a forked child reconnects on first use.

    Attributes
    ----------
    location : str
        The file's real path, or the URL without its password.
    total_epsilon : float
        Each user's total budget.
    total_exact : fractions.Fraction
        The same, exactly.
    migrated_from : str or None
        The JSON accountant this store was created from, if any.
    migrated_sha256 : str or None
        That file's SHA-256 when it was migrated.
    created : bool
        Whether this :meth:`open` created the store.
    """

    def __init__(self, target: str, backend: Any, config: Mapping[str, Any]) -> None:
        self._target = target
        self._lock = threading.RLock()
        self._attach(backend)
        self.location = redact(target) if is_url(target) else target
        self.total_exact = _exact(config["total_epsilon_exact"], "geoldp_accountant")
        self.total_epsilon = float(config["total_epsilon"])
        self.migrated_from: str | None = config.get("migrated_from")
        self.migrated_sha256: str | None = config.get("migrated_sha256")
        self.created = bool(config.get("created"))

    @property
    def target(self) -> str:
        """The path or URL the store was opened with (a URL with its password: keep it private)."""
        return self._target

    # -- opening ------------------------------------------------------------------------------------
    @classmethod
    def open(
        cls,
        target: str | os.PathLike[str],
        *,
        total_epsilon: float | None = None,
        initial: Mapping[str, Fraction] | None = None,
        migrated_from: str | None = None,
        migrated_sha256: str | None = None,
    ) -> Store:
        """Open the store at ``target`` (a file path or a PostgreSQL URL), creating it if it is new.

        Parameters
        ----------
        target : str or path-like
            A file (SQLite GeoPackage; a link is followed to its target) or ``postgresql://...``.
        total_epsilon : float, optional
            Each user's total budget: needed to create a store; for an existing one it must equal the
            store's own.
        initial : mapping, optional
            ``{user: ε spent}`` to start a new store with (a migrated accountant); ignored for an
            existing store.
        migrated_from, migrated_sha256 : str, optional
            The JSON file ``initial`` comes from, and its SHA-256, recorded in a new store.

        Raises
        ------
        FileNotFoundError
            No store at ``target`` and no ``total_epsilon`` to create one.
        ValueError
            A file that is not a geoldp store (another GeoPackage or database, or no SQLite file at
            all), a store of another format version, or a ``total_epsilon`` that differs from the store's.
        """
        url = is_url(target)
        if url:
            name = str(target)
            backend: Any = _Postgres(name)
        else:
            name = _sqlite_path(target, create=total_epsilon is not None)
            try:
                backend = _SQLite(name)
            except sqlite3.Error as exc:
                raise ValueError(f"The store '{os.fspath(target)}' cannot be opened: {exc}.") from None
        where = redact(name) if url else f"'{os.fspath(target)}'"
        try:
            config = cls._initialise(
                backend, where, total_epsilon, dict(initial or {}), migrated_from, migrated_sha256
            )
        except sqlite3.DatabaseError as exc:
            backend.close()
            raise ValueError(
                f"The store {where} is not a geoldp store ({exc}); name a new file or an existing store."
            ) from None
        except BaseException:
            backend.close()
            raise
        store = cls(name, backend, config)
        if total_epsilon is not None and Fraction(float(total_epsilon)) != store.total_exact:
            store.close()
            raise ValueError(
                f"The store {where} keeps a total of {store.total_epsilon:g} per user, not {total_epsilon:g}."
            )
        return store

    @staticmethod
    def _initialise(
        backend: Any,
        where: str,
        total: float | None,
        initial: dict[str, Fraction],
        migrated_from: str | None,
        migrated_sha256: str | None,
    ) -> dict[str, Any]:
        created = False

        def body(cur: Any) -> dict[str, Any]:
            nonlocal created
            if hasattr(backend, "before_create"):
                backend.before_create(cur)
            if not backend.has_schema(cur):
                if not backend.is_empty(cur):
                    raise ValueError(
                        f"The file {where} is a database or GeoPackage that is not a geoldp store; name a "
                        "new file for the store (or the store itself)."
                    )
                if total is None:
                    raise FileNotFoundError(
                        f"The store {where} is empty; create it with a total budget per user."
                    )
                now = backend.now()
                backend.create_schema(cur, now)
                m = backend.mark
                exact = Fraction(float(total))
                cur.execute(
                    _insert(m, "geoldp_accountant", f"fid, {_CONFIG}, created_utc"),
                    (1, FORMAT, VERSION, float(total), str(exact), migrated_from, migrated_sha256, now),
                )
                rows = sorted((u, s) for u, s in initial.items() if s > 0)
                if rows:
                    backend.insert(
                        cur, "geoldp_budgets", _BUDGET, [(u, float(s), str(s), now) for u, s in rows]
                    )
                    release = f"migrated:{migrated_sha256 or 'initial'}"
                    backend.insert(
                        cur,
                        "geoldp_spends",
                        _SPEND,
                        [
                            (release, u, "migrated", float(s), str(s), "committed", migrated_from, now)
                            for u, s in rows
                        ],
                    )
                created = True
            return configuration(cur)

        def configuration(cur: Any) -> dict[str, Any]:
            cur.execute(f"SELECT {_CONFIG} FROM geoldp_accountant WHERE fid = 1")
            row = cur.fetchone()
            if row is None or row[0] != FORMAT:
                raise ValueError(f"The store {where} is not a geoldp store (no configuration row).")
            if row[1] != VERSION:
                raise ValueError(
                    f"The store {where} has format version {row[1]}; this geoldp reads version {VERSION}."
                )
            return dict(zip(_CONFIG.split(", "), row, strict=True))

        # an existing store is read without the write lock (processes opening it together do not queue);
        # a new one is created in a write transaction, which checks again
        found = backend.run(lambda cur: configuration(cur) if backend.has_schema(cur) else None, write=False)
        config = found if found is not None else backend.run(body)
        config["created"] = created
        if created:
            backend.after_create()
        backend.configure()
        return config

    # -- plumbing -----------------------------------------------------------------------------------
    def _attach(self, backend: Any) -> None:
        """Use ``backend`` (a connection of this process), closed with the store or when it is collected.

        A ``weakref.finalize`` rather than ``__del__``: the collector runs it before the finalisers of the
        objects it holds, so a connection is never collected open (which psycopg reports as a warning).
        """
        self._backend = backend
        self._pid = os.getpid()
        self._closer = weakref.finalize(self, _close_quietly, backend, self._pid)

    def _run(self, body: Callable[[Any], _T], *, write: bool = True) -> _T:
        with self._lock:
            if os.getpid() != self._pid:  # closed, or a forked child: never use the parent's connection
                self._closer.detach()
                backend = _Postgres(self._target) if is_url(self._target) else _SQLite(self._target)
                backend.configure()
                self._attach(backend)
            return self._backend.run(body, write=write)

    def close(self) -> None:
        """Close the connection (a later call reconnects)."""
        with self._lock:
            self._closer()
            self._pid = -1  # reconnect on next use

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Store({self.location!r}, total_epsilon={self.total_epsilon!r})"

    @property
    def backend(self) -> str:
        """``"SQLite"`` or ``"PostgreSQL"``."""
        return str(self._backend.name)

    # -- reading ------------------------------------------------------------------------------------
    def spent(self, users: Iterable[str] | None = None) -> dict[str, Fraction]:
        """``{user: ε spent}`` (exact) for ``users``, or for every user charged (spent > 0)."""
        m = self._backend.mark

        def body(cur: Any) -> dict[str, Fraction]:
            found = _read_spent(cur, m, None if users is None else sorted(set(users)))
            return {u: s for u, text in found.items() if (s := _exact(text, "geoldp_budgets")) > 0}

        return self._run(body, write=False)

    def pending(self) -> list[dict[str, Any]]:
        """The releases charged, not yet confirmed: ``release_id``, ``output``, ``charged_utc``, ``users``."""

        def body(cur: Any) -> list[dict[str, Any]]:
            cur.execute(
                "SELECT release_id, min(output), min(charged_utc), count(*) FROM geoldp_spends "
                "WHERE state = 'pending' GROUP BY release_id ORDER BY min(charged_utc)"
            )
            return [
                {"release_id": r, "output": o, "charged_utc": str(t), "users": int(n)}
                for r, o, t, n in cur.fetchall()
            ]

        return self._run(body, write=False)

    def count(self, table: str) -> int:
        """The number of rows of one of the store's tables (:data:`TABLES`)."""
        if table not in TABLES:
            raise ValueError(f"'{table}' is not a table of the store; one of {sorted(TABLES)}.")

        def body(cur: Any) -> int:
            cur.execute(f"SELECT count(*) FROM {table}")
            return int(cur.fetchone()[0])

        return self._run(body, write=False)

    def campaign(self, campaign_id: str) -> str | None:
        """The public configuration (JSON text) a campaign was registered with, or None."""
        return self._run(lambda cur: self._campaign(cur, campaign_id), write=False)

    def _campaign(self, cur: Any, campaign_id: str) -> str | None:
        cur.execute(
            f"SELECT document FROM geoldp_campaigns WHERE campaign_id = {self._backend.mark}", (campaign_id,)
        )
        row = cur.fetchone()
        return None if row is None else str(row[0])

    def campaigns(self) -> list[str]:
        """The ids of the campaigns registered, in the order registered."""

        def body(cur: Any) -> list[str]:
            cur.execute("SELECT campaign_id FROM geoldp_campaigns ORDER BY fid")
            return [str(c) for (c,) in cur.fetchall()]

        return self._run(body, write=False)

    def reports(self, campaign_id: str) -> list[tuple[str, str, str]]:
        """The reports stored for one campaign, in the order received: ``(record_digest, payload, ledger)``.

        What a collector's estimators read: the released values and their public ledger entries, never the
        user ids the store keeps beside them.
        """
        m = self._backend.mark

        def body(cur: Any) -> list[tuple[str, str, str]]:
            cur.execute(
                "SELECT record_digest, payload, ledger FROM geoldp_reports "
                f"WHERE campaign_id = {m} ORDER BY fid",
                (campaign_id,),
            )
            return [(str(d), str(p), str(led)) for d, p, led in cur.fetchall()]

        return self._run(body, write=False)

    def verify(self) -> dict[str, int]:
        """Check the store's invariants; return the count of violations of each (all 0 for a sound store).

        ``budget_mismatch``: users whose total differs from the sum of their spends; ``overspent``: users
        past the total; ``report_without_spend`` and ``spend_without_report``: a report and its spend
        are stored together or not at all; ``duplicate_reports``: digests stored twice.
        """

        def body(cur: Any) -> dict[str, int]:
            cur.execute("SELECT user_id, epsilon_exact FROM geoldp_spends")
            sums: dict[str, Fraction] = {}
            for u, e in cur.fetchall():
                sums[u] = sums.get(u, Fraction(0)) + _exact(e, "geoldp_spends")
            budgets = {
                u: _exact(s, "geoldp_budgets") for u, s in _read_spent(cur, self._backend.mark).items()
            }
            users = set(sums) | set(budgets)
            mismatch = sum(sums.get(u, Fraction(0)) != budgets.get(u, Fraction(0)) for u in users)
            over = sum(s > self.total_exact for s in budgets.values())
            out = {"budget_mismatch": int(mismatch), "overspent": int(over)}
            for name, sql in _CHECKS.items():
                cur.execute(sql)
                out[name] = int(cur.fetchone()[0])
            return out

        return self._run(body, write=False)

    # -- writing ------------------------------------------------------------------------------------
    def _add(self, cur: Any, spent: Mapping[str, str], costs: Mapping[str, Fraction], now: Any) -> None:
        """Add ``costs`` to the locked budgets ``spent`` (exact text) and write the new totals."""
        self._write(cur, {u: _exact(spent.get(u, "0"), "geoldp_budgets") + c for u, c in costs.items()}, now)

    def _write(self, cur: Any, totals: Mapping[str, Fraction], now: Any) -> None:
        """Write the new totals of the (locked) budgets of some users."""
        rows = [(u, float(totals[u]), str(totals[u]), now) for u in sorted(totals)]
        self._backend.insert(cur, "geoldp_budgets", _BUDGET, rows, upsert="user_id")

    def charge(
        self,
        release_id: str,
        costs: Mapping[str, Fraction],
        *,
        pending_output: str | None = None,
    ) -> list[str]:
        """Check and spend ``{user: ε}`` for one release, in one transaction.

        Parameters
        ----------
        release_id : str
            The release's id: a release already charged under it is not charged again (the same costs
            are required).
        costs : mapping
            ``{user: ε}``, exact.
        pending_output : str, optional
            Record the spend as *pending* for the release to be written to this file, until
            :meth:`confirm`; a pending spend counts like any other.

        Returns
        -------
        list of str
            The users the release would take past the total (then nothing is charged); empty on success.

        Raises
        ------
        ValueError
            ``release_id`` was charged before with other costs.
        """
        wanted = {u: Fraction(c) for u, c in costs.items() if c > 0}
        users = sorted(wanted)
        m = self._backend.mark
        state = "committed" if pending_output is None else "pending"

        def body(cur: Any) -> list[str]:
            now = self._backend.now()
            spent = self._backend.lock_users(cur, users, now)
            cur.execute(
                f"SELECT user_id, epsilon_exact FROM geoldp_spends WHERE release_id = {m}", (release_id,)
            )
            before = {u: _exact(e, "geoldp_spends") for u, e in cur.fetchall()}
            if before:
                if before != wanted:
                    raise ValueError(
                        f"The release id {release_id!r} was charged before with other users or costs; a "
                        "release id names one release."
                    )
                return []  # charged once already: sent twice, charged once
            over = [
                u for u in users if _exact(spent.get(u, "0"), "geoldp_budgets") + wanted[u] > self.total_exact
            ]
            if over:
                raise _Refused(over)
            self._add(cur, spent, wanted, now)
            self._backend.insert(
                cur,
                "geoldp_spends",
                _SPEND,
                [
                    (release_id, u, "release", float(c), str(c), state, pending_output, now)
                    for u, c in sorted(wanted.items())
                ],
            )
            return []

        try:
            return self._run(body)
        except _Refused as refused:
            return refused.over

    def confirm(self, release_id: str) -> int:
        """Mark a pending release as written (committed); return the number of spends confirmed."""
        m = self._backend.mark

        def body(cur: Any) -> int:
            cur.execute(
                f"UPDATE geoldp_spends SET state = 'committed' WHERE release_id = {m} AND state = 'pending'",
                (release_id,),
            )
            return int(cur.rowcount)

        return self._run(body)

    def refund(self, release_id: str) -> int:
        """Undo a *pending* release's spends (one that was never written); return the number undone.

        Committed spends are final: only a pending release is refunded.
        """
        m = self._backend.mark

        def body(cur: Any) -> int:
            now = self._backend.now()
            cur.execute(
                f"SELECT user_id, epsilon_exact FROM geoldp_spends WHERE release_id = {m} AND state = {m}",
                (release_id, "pending"),
            )
            costs = {u: _exact(e, "geoldp_spends") for u, e in cur.fetchall()}
            if not costs:
                return 0
            spent = self._backend.lock_users(cur, sorted(costs), now)
            self._add(cur, spent, {u: -c for u, c in costs.items()}, now)
            cur.execute(
                f"DELETE FROM geoldp_spends WHERE release_id = {m} AND state = 'pending'", (release_id,)
            )
            return len(costs)

        return self._run(body)

    def add_campaign(self, campaign_id: str, document: str) -> bool:
        """Register a campaign's public configuration (JSON text); False if it was registered already.

        Raises
        ------
        ValueError
            The id is registered with another document.
        """

        def registered(found: str | None) -> bool:
            if found is not None and found != document:
                raise ValueError(f"The campaign {campaign_id!r} is registered with another document.")
            return found is not None

        def body(cur: Any) -> bool:
            if registered(self._campaign(cur, campaign_id)):
                return False
            cur.execute(
                _insert(self._backend.mark, "geoldp_campaigns", "campaign_id, document, registered_utc"),
                (campaign_id, document, self._backend.now()),
            )
            return True

        # read first: no write transaction when it is there
        return not registered(self.campaign(campaign_id)) and self._run(body)

    def append_reports(self, campaign_id: str, records: Sequence[Report]) -> list[str]:
        """Charge each record's user and store the record, all in one transaction.

        Records are taken in order: a record whose digest is stored already (or earlier in ``records``)
        is a ``"duplicate"`` (stored once, charged once); one that would take its user past the total
        is ``"over budget"`` (neither stored nor charged); every other is ``"stored"`` with its spend.

        Returns
        -------
        list of str
            One outcome per record.

        Raises
        ------
        ValueError
            A record's ε is not a finite number > 0.
        """
        m = self._backend.mark
        records = list(records)
        # each distinct ε once: its exact ratio, and the float and text its spends are written with
        costs: dict[float, tuple[int, int, float, str]] = {}
        for r in records:
            if r.epsilon not in costs:
                eps = float(r.epsilon)
                if not (math.isfinite(eps) and eps > 0):
                    raise ValueError(
                        f"A report's epsilon must be a finite number > 0. Got {r.epsilon!r} (record "
                        f"{r.record_digest!r})."
                    )
                num, den = eps.as_integer_ratio()
                costs[r.epsilon] = (num, den, eps, _text(num, den))
        total = self.total_exact

        def body(cur: Any) -> list[str]:
            now = self._backend.now()
            spent = {
                u: _ratio(s, "geoldp_budgets")
                for u, s in self._backend.lock_users(cur, sorted({r.user_id for r in records}), now).items()
            }
            digests = [r.record_digest for r in records]
            stored: set[str] = set()
            for part in _chunks(digests):
                where, params = _where_in(m, "record_digest", part)
                cur.execute(f"SELECT record_digest FROM geoldp_reports WHERE {where}", params)
                stored.update(d for (d,) in cur.fetchall())
            # exact arithmetic in integers: every value a multiple of 1/unit (no fraction per record)
            unit = math.lcm(
                total.denominator, *(c[1] for c in costs.values()), *(d for _, d in spent.values())
            )
            limit = total.numerator * (unit // total.denominator)
            step = {e: num * (unit // den) for e, (num, den, _, _) in costs.items()}
            running = {u: n * (unit // d) for u, (n, d) in spent.items()}  # each user's spend so far
            outcomes: list[str] = []
            touched: set[str] = set()
            spends: list[tuple[Any, ...]] = []
            reports: list[tuple[Any, ...]] = []
            for r in records:
                if r.record_digest in stored:
                    outcomes.append("duplicate")
                    continue
                after = running.get(r.user_id, 0) + step[r.epsilon]
                if after > limit:
                    outcomes.append("over budget")
                    continue
                running[r.user_id] = after
                touched.add(r.user_id)
                stored.add(r.record_digest)
                eps, text = costs[r.epsilon][2:]
                spends.append((r.record_digest, r.user_id, "report", eps, text, "committed", None, now))
                reports.append((campaign_id, r.user_id, r.record_digest, eps, r.payload, r.ledger, now))
                outcomes.append("stored")
            if reports:
                self._backend.insert(
                    cur,
                    "geoldp_budgets",
                    _BUDGET,
                    [(u, running[u] / unit, _text(running[u], unit), now) for u in sorted(touched)],
                    upsert="user_id",
                )
                self._backend.insert(cur, "geoldp_spends", _SPEND, spends)
                self._backend.insert(cur, "geoldp_reports", _REPORT, reports)
            return outcomes

        return self._run(body)

"""The accountant of the command line: ``--accountant`` of the release commands, and ``geoldp accountant``.

Every ``--accountant STORE`` (of ``geoldp perturb``, ``report`` and ``synthesize``) is a
:meth:`geoldp.BudgetAccountant.open` store shared safely by any number of processes. A release command
refuses an accountant that is any file it reads or writes, checks the release against the store before
the first random draw, charges it in one transaction as **pending** for its output file once it is drawn,
writes the output, then confirms the charge; ``geoldp accountant reconcile STORE`` settles the pending
charges a killed command leaves (over-counted, never under-counted). :doc:`/cli` ("geoldp perturb",
"Per-user budgets"; "geoldp accountant") says what is refused (exit status 2), confirmed and refunded.
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from typing import Any, TextIO

from geoldp._core.ledger import ledger_of
from geoldp.cli._args import stage, usage

PROG = "geoldp"

#: The file arguments of the release commands, with the words that name them in messages.
FILE_ARGS = {
    "output": "output",
    "kept_rows": "--kept-rows file",
    "trips": "TRIPS file",
    "points": "POINTS file",
    "zones": "--zones file",
}


def _same(a: str, b: str) -> bool:
    """Whether two paths name one file: the same real path, or (both existing) one inode."""
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _files_of(args: argparse.Namespace) -> list[tuple[str, str]]:
    """``(role, path)`` of every file the command reads or writes (an output with its ledger sidecar)."""
    from geoldp.io import ledger_path

    files: list[tuple[str, str]] = []
    for name, role in FILE_ARGS.items():
        value = getattr(args, name, None)
        if isinstance(value, str | os.PathLike):
            files.append((role, os.fspath(value)))
            if name == "output":
                files.append(("output's ledger sidecar", os.fspath(ledger_path(value))))
    return files


def open_accountant(args: argparse.Namespace) -> Any:
    """The ``--accountant`` of a release command, opened (created, migrated), checked against its files.

    Charges are held as pending for ``args.output`` until :func:`confirm_release`.

    Raises
    ------
    SystemExit
        (via the sub-command's usage error, exit status 2) the accountant is a file the command reads or
        writes.
    ValueError
        No store and no ``--total-epsilon``, a total that differs from the store's, not a store.
    """
    from geoldp import accounting
    from geoldp import store as stores

    given = os.fspath(args.accountant)
    shown = stores.redact(given) if stores.is_url(given) else given  # never a password in a message
    location, legacy = accounting.store_path(given)
    if not stores.is_url(location):
        names = [given, location] + ([legacy] if legacy else [])
        names += [location + suffix for suffix in ("-wal", "-shm", "-journal", stores.LOCK_SUFFIX)]
        for role, path in _files_of(args):
            if any(_same(name, path) for name in names):
                usage(
                    args,
                    f"--accountant '{given}' is the {role} '{path}' of this command, which would replace or "
                    "read it as data; keep the accountant in a file of its own",
                )
        exists = os.path.lexists(location)
        if not exists and args.total_epsilon is None and legacy is None:
            raise ValueError(
                f"the accountant '{given}' does not exist; create it with --total-epsilon T (each user's "
                "total budget)"
            )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with stage(f"cannot open the accountant '{shown}'"):
            acc = accounting.BudgetAccountant.open(given, total_epsilon=args.total_epsilon)
    for w in caught:
        print(f"{PROG}: note: {' '.join(str(w.message).split())}", file=sys.stderr)
    acc.hold_charges(args.output)
    return acc


def confirm_release(options: dict[str, Any], released: Any) -> None:
    """After the output is written: confirm the release's pending charge (if an accountant charged it)."""
    acc = options.get("accountant")
    if acc is None or acc.location is None:
        return
    ledger = ledger_of(released)
    release_id = None if ledger is None else ledger.release_id
    if release_id is not None:
        acc.confirm(str(release_id))
    acc.close()


# ------------------------------------------------------------------------------------------------------
# geoldp accountant


def _cmd_accountant(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    from geoldp import accounting
    from geoldp import store as stores

    shown = stores.redact(args.store) if stores.is_url(args.store) else args.store
    with stage(f"cannot open the accountant '{shown}'"):
        acc = accounting.BudgetAccountant.open(args.store)
    try:
        pending = acc.pending()
        if args.action == "show":
            spent = acc.spent
            print(f"store: {acc.location}", file=stdout)
            print(f"total epsilon per user: {acc.total_epsilon:g}", file=stdout)
            print(f"users charged: {len(spent)}", file=stdout)
            print(f"users at their total: {sum(acc.remaining(u) == 0 for u in spent)}", file=stdout)
            print(f"pending releases: {len(pending)}", file=stdout)
            return 0
        return _reconcile(acc, pending, refund_missing=args.refund_missing, stdout=stdout, stderr=stderr)
    finally:
        acc.close()


def _reconcile(
    acc: Any, pending: list[dict[str, Any]], *, refund_missing: bool, stdout: TextIO, stderr: TextIO
) -> int:
    from geoldp import io as gio

    confirmed = refunded = kept = 0
    for item in pending:
        rid, output = item["release_id"], item["output"]
        found = False
        if output and os.path.lexists(output):
            try:
                ledger = gio.read_ledger(output)  # finishes an interrupted write of the pair first
            except (OSError, ValueError):
                ledger = None
            found = ledger is not None and ledger.release_id == rid
            if not found:  # a file is there, but not this release: it may have been replaced since
                print(f"{rid}: '{output}' exists but does not hold this release; kept pending", file=stdout)
                kept += 1
                continue
        if found:
            acc.confirm(rid)
            confirmed += 1
            print(f"{rid}: written to '{output}'; confirmed", file=stdout)
        elif refund_missing:
            acc.refund(rid)
            refunded += 1
            print(f"{rid}: '{output}' does not exist; refunded ({item['users']} user(s))", file=stdout)
        else:
            kept += 1
            print(f"{rid}: '{output}' does not exist; kept pending (counted)", file=stdout)
    print(
        f"{PROG}: {len(pending)} pending release(s): {confirmed} confirmed, {refunded} refunded, {kept} kept "
        "pending" + ("" if refund_missing or not kept else "; --refund-missing refunds those never written"),
        file=stderr,
    )
    return 0


def add_parser(sub: Any) -> None:
    """Add ``geoldp accountant {show,reconcile} STORE`` to the sub-command parsers."""
    p = sub.add_parser(
        "accountant",
        help="inspect a budget accountant, or settle releases whose program was killed",
        description="'show' prints a summary of the accountant (no user ids). 'reconcile' settles the "
        "releases charged as pending whose program ended before it confirmed them: a release whose output "
        "exists with its release id is confirmed; one whose output does not exist stays pending (counted) "
        "unless --refund-missing is given.",
    )
    p.add_argument("action", choices=("show", "reconcile"), help="what to do")
    p.add_argument("store", metavar="STORE", help="the accountant: a GeoPackage file or a PostgreSQL URL")
    p.add_argument(
        "--refund-missing",
        action="store_true",
        help="reconcile: refund the pending releases whose output does not exist (only if they were never "
        "written anywhere)",
    )
    p.set_defaults(func=_cmd_accountant, command_parser=p)

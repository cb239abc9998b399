"""The per-user budget options of the release commands (``perturb``, ``report``, ``synthesize``).

``--user-col``, ``--accountant``, ``--total-epsilon``, ``--user-budget``, ``--max-per-user``,
``--kept-rows`` and ``--select-trips``: checked as one group before anything is read, turned into the
keyword arguments of the release (the accountant opened, see :mod:`geoldp.cli.accountant`), and, after
the release, the rows kept and the charge reported.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, TextIO

from geoldp._core.ledger import attach, ledger_of
from geoldp.cli._args import check_target, stage, usage
from geoldp.cli._args import int_at_least as _int_at_least
from geoldp.cli._args import positive_float as _positive_float

__all__ = ["add_options", "finish", "options"]

PROG = "geoldp"


def add_options(p: argparse.ArgumentParser) -> None:
    """Add the per-user budget options to a release command's parser."""
    g = p.add_argument_group("per-user budget")
    g.add_argument(
        "--user-col",
        metavar="C",
        default=None,
        help="the column of TRIPS holding each row's user id (read as text; not written unless kept)",
    )
    g.add_argument(
        "--accountant",
        metavar="STORE",
        default=None,
        help="each user's budget record (geoldp.BudgetAccountant): a GeoPackage file (created with "
        "--total-epsilon; a JSON accountant of an earlier geoldp is migrated to FILE.gpkg) or a PostgreSQL "
        "URL. The release is refused if it would take a user past her total; the charge is one transaction, "
        "so several commands may share one accountant. Keep it private, with the data",
    )
    g.add_argument(
        "--total-epsilon",
        type=_positive_float,
        metavar="T",
        default=None,
        help="each user's total budget, to create a new --accountant file",
    )
    g.add_argument(
        "--user-budget",
        choices=("trajectory", "split"),
        default="trajectory",
        help="'trajectory' (default): --epsilon per trajectory; 'split': --epsilon per user in this release, "
        "shared equally by her trips (an 'epsilon' column gives each row's share)",
    )
    g.add_argument(
        "--max-per-user",
        type=_int_at_least(1),
        metavar="K",
        default=None,
        help="release at most K trips per user; the other rows are dropped (see --select-trips)",
    )
    g.add_argument(
        "--kept-rows",
        metavar="CSV",
        default=None,
        help="with --max-per-user: write the positions (0-based) of the TRIPS rows released to CSV (private; "
        "the release itself is written without the row numbers)",
    )
    g.add_argument(
        "--select-trips",
        choices=("first", "last", "random"),
        default="first",
        help="which trips --max-per-user keeps: first or last in file order, or random (default: first)",
    )
    p.set_defaults(command_parser=p)


def options(args: argparse.Namespace) -> dict[str, Any]:
    """The extra keyword arguments of the release for the per-user options (accountant opened)."""
    strategy = args.user_budget != "trajectory" or args.max_per_user is not None
    if args.select_trips != "first" and args.max_per_user is None:
        usage(args, "--select-trips goes with --max-per-user K")
    if (strategy or args.accountant is not None) and args.user_col is None:
        usage(args, "--accountant, --user-budget split and --max-per-user need --user-col C (the user ids)")
    if args.user_col is not None and not strategy and args.accountant is None:
        usage(args, "--user-col goes with --accountant STORE, --user-budget split or --max-per-user K")
    if args.kept_rows is not None and args.max_per_user is None:
        usage(args, "--kept-rows goes with --max-per-user K")
    if args.total_epsilon is not None and args.accountant is None:
        usage(args, "--total-epsilon goes with --accountant STORE")
    if args.kept_rows is not None:
        check_target(Path(args.kept_rows), overwrite=args.overwrite, what="--kept-rows")
    out: dict[str, Any] = {}
    if args.user_col is None:
        return out
    out["user_col"] = args.user_col
    if args.accountant is not None:
        from geoldp.cli import accountant as cli_accountant

        # refused if it is a file this command reads or writes; charges held until the output is written
        out["accountant"] = cli_accountant.open_accountant(args)
    if strategy:
        out.update(
            user_budget=args.user_budget, max_per_user=args.max_per_user, select_trips=args.select_trips
        )
    return out


def finish(args: argparse.Namespace, options: dict[str, Any], trips: Any, out: Any, stderr: TextIO) -> None:
    """After the release: record the points file, save the accountant, report the rows kept."""
    led = ledger_of(out)
    if getattr(args, "points", None) and led is not None and isinstance(led.points, dict):
        # the name only, not the folder
        attach(out, led.replace(points={**led.points, "file": Path(args.points).name}))
    acc = options.get("accountant")
    if acc is not None:
        # charged (pending) before the release is written, confirmed after: see geoldp.cli.accountant
        print(f"{PROG}: charged the release to {len(acc)} user(s) in '{acc.location}'", file=stderr)
    if getattr(args, "kept_rows", None) is not None:
        import numpy as np

        from geoldp._core import safe_write as _safe_write

        rows = (
            np.flatnonzero(trips.index.isin(out.index)) if len(out) != len(trips) else np.arange(len(trips))
        )
        with stage(f"cannot write --kept-rows '{args.kept_rows}'"):
            _safe_write.write_bytes(
                Path(args.kept_rows),
                ("row\n" + "".join(f"{r}\n" for r in rows)).encode(),
                overwrite=args.overwrite,
            )
    if options.get("max_per_user") is not None and len(out) != len(trips):
        print(
            f"{PROG}: kept {len(out)} of {len(trips)} rows (at most {args.max_per_user} "
            f"trip{'' if args.max_per_user == 1 else 's'} per user, "
            f"{args.select_trips}); the dropped rows are not in the output",
            file=stderr,
        )

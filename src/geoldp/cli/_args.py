"""Argument types, errors, input and output checks shared by the command modules of :mod:`geoldp.cli`.

Every command words the same mistake the same way.

Light on purpose: only the standard library at import, so that ``geoldp --help`` stays fast.
"""

from __future__ import annotations

import argparse
import os
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NoReturn, TextIO

__all__ = [
    "MAX_OUTPUT_NAME_BYTES",
    "add_cell_km",
    "UsageError",
    "UserError",
    "bbox",
    "check_name",
    "check_output",
    "check_target",
    "epsilon",
    "existing_file",
    "int_at_least",
    "one_line",
    "positive_float",
    "positive_int",
    "report_warnings",
    "seed",
    "stage",
    "usage",
    "warned",
]

#: Longest output file name (bytes, UTF-8), leaving room for ``.ledger.json`` and the temporary names
#: next to it within the 255-byte limit of common file systems.
MAX_OUTPUT_NAME_BYTES = 200


class UsageError(Exception):
    """A command-line usage error (exit status 2)."""


class UserError(Exception):
    """An error in the user's data or parameters (exit status 1)."""


def one_line(message: object) -> str:
    """Collapse a message to one line."""
    return " ".join(str(message).split()) or "unknown error"


@contextmanager
def report_warnings(stderr: TextIO) -> Iterator[None]:
    """Print each distinct warning raised inside the block as one ``geoldp: warning:`` line.

    The warnings are printed when the block succeeds; after an error only the error line is printed.
    """
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
    seen: set[str] = set()
    for w in caught:
        line = f"geoldp: warning: {w.category.__name__}: {one_line(w.message)}"
        if line not in seen:
            seen.add(line)
            print(line, file=stderr)


def warned(command: Callable[..., int]) -> Callable[..., int]:
    """A command whose warnings are printed as ``geoldp: warning:`` lines once it succeeds.

    ``command(args, stdout, stderr)`` is wrapped in :func:`report_warnings`.
    """

    def run(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
        with report_warnings(stderr):
            return command(args, stdout, stderr)

    return run


#: The options that take a lon/lat box (its first number is often negative)
BOX_OPTIONS = ("--area", "--bounds")


def join_negative_boxes(argv: Sequence[str]) -> list[str]:
    """``--area -122.5,37.7,-122.3,37.8`` rewritten as ``--area=-122.5,...``.

    Else argparse would take the box, which starts with a minus sign, for an option and stop with
    "expected one argument".
    """
    out: list[str] = []
    args = list(argv)
    i = 0
    while i < len(args):
        token = args[i]
        if token in BOX_OPTIONS and i + 1 < len(args) and args[i + 1].startswith("-"):
            try:
                bbox(args[i + 1])
            except argparse.ArgumentTypeError:
                pass
            else:
                out.append(f"{token}={args[i + 1]}")
                i += 2
                continue
        out.append(token)
        i += 1
    return out


def lengths(text: str) -> list[int]:
    """An argument type: comma-separated trajectory lengths, each an integer >= 1 (e.g. ``2,3,5,8``)."""
    try:
        values = [int(v) for v in text.split(",")]
    except ValueError:
        values = []
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"must be comma-separated integers >= 1, e.g. 2,3,8; got {text!r}")
    return values


def int_at_least(low: int, what: str | None = None) -> Callable[[str], int]:
    """An argument type: an integer ``>= low`` (``what`` names it in the message)."""
    name = what or f"an integer >= {low}"

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be {name}, got {text!r}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be {name}, got {text!r}")
        return value

    return parse


def int_in_range(low: int, high: int, limit: str) -> Callable[[str], int]:
    """An argument type: an integer in ``[low, high]``; ``limit`` names the public constant ``high`` is."""
    name = f"an integer in [{low}, {high}] ({limit})"

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be {name}, got {text[:40]!r}") from None
        if not (low <= value <= high):
            raise argparse.ArgumentTypeError(f"must be {name}, got {text[:40]!r}")
        return value

    return parse


#: An integer >= 1.
positive_int = int_at_least(1, "a positive integer")
#: A seed: an integer >= 0.
seed = int_at_least(0, "a non-negative integer")


def epsilon(text: str) -> float:
    """An argument type: a number (the syntax only; the library checks the range, one grammar everywhere)."""
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number, got {text!r}") from None


def positive_float(text: str) -> float:
    """An argument type: a finite number > 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text!r}") from None
    if not (0.0 < value < float("inf")):
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text!r}")
    return value


def add_cell_km(p: argparse.ArgumentParser | argparse._ArgumentGroup, help: str, **kwargs: Any) -> None:
    """Add ``--cell-km KM`` (default 1.5): the side of a command's square zones over the public points."""
    p.add_argument("--cell-km", type=positive_float, default=1.5, metavar="KM", help=help, **kwargs)


def bbox(text: str) -> tuple[float, float, float, float]:
    """An argument type: four numbers ``MINX,MINY,MAXX,MAXY``."""
    try:
        values = tuple(float(p) for p in text.split(","))
    except ValueError:
        values = ()
    if len(values) != 4:
        raise argparse.ArgumentTypeError(f"must be four numbers MINX,MINY,MAXX,MAXY, got {text!r}")
    return values[0], values[1], values[2], values[3]


def print_written(written: Iterable[object], stdout: TextIO) -> int:
    """Print every written path on stdout, one a line (what a script reads), and return exit status 0."""
    for path in written:
        print(path, file=stdout)
    return 0


def usage(args: argparse.Namespace, message: str) -> NoReturn:
    """Raise the usage error of the sub-command that parsed ``args`` (exit status 2)."""
    args.command_parser.error(message)
    raise AssertionError("unreachable: ArgumentParser.error raises")


@contextmanager
def stage(what: str) -> Iterator[None]:
    """Turn any exception raised while doing ``what`` (reading or writing a file) into a :class:`UserError`.

    ``GEOLDP_TRACEBACK=1`` in the environment lets the original exception through (for bug reports).
    """
    try:
        yield
    except (UsageError, UserError):
        raise
    except Exception as exc:
        if os.environ.get("GEOLDP_TRACEBACK"):
            raise
        raise UserError(f"{what}: {one_line(exc)}") from exc


def existing_file(path: str, what: str) -> Path:
    """``path`` as a :class:`~pathlib.Path`, if it names an existing file (``what`` names it otherwise)."""
    p = Path(path)
    if not p.exists():
        raise UserError(f"{what} file '{path}' does not exist")
    if p.is_dir():
        raise UserError(f"{what} path '{path}' is a directory, not a file")
    return p


def check_name(path: str, what: str = "output") -> None:
    """Refuse a file name that other tools would garble or the operating system would refuse late."""
    bad = sorted({c for c in path if ord(c) < 32 or ord(c) == 127})
    if bad:
        raise UserError(
            f"the {what} name {path[:60]!r} holds a newline, tab or other control character; choose a "
            "plain file name"
        )
    name = Path(path).name
    from geoldp._core.safe_write import check_utf8_name

    try:
        check_utf8_name(name, f"the {what}")
    except ValueError as exc:
        raise UserError(str(exc)) from None
    if '"' in name or "'" in name:
        raise UserError(
            f"the {what} name {name[:60]!r} holds a quote character, which GIS tools and shells garble; "
            "choose a name without quotes"
        )
    size = len(os.fsencode(name))
    if size > MAX_OUTPUT_NAME_BYTES:
        raise UserError(
            f"the {what} name is {size} bytes long, more than {MAX_OUTPUT_NAME_BYTES} (the ledger sidecar "
            "and temporary files add to it, within the 255-byte limit of file systems); choose a shorter name"
        )


def check_output(
    path: str,
    *,
    overwrite: bool,
    inputs: Sequence[Path] = (),
    suffixes: Sequence[str] | None = None,
    ledger: bool = True,
    what: str = "output",
) -> Path:
    """Check an output path before any work is done, as every command does.

    Refused, each with a :class:`UserError` naming the fix: a name with control or quote characters or
    longer than :data:`MAX_OUTPUT_NAME_BYTES`, a suffix not in ``suffixes`` (default: the formats of
    :func:`geoldp.io.write_file`), a directory that does not exist, and an existing output, one of
    ``inputs`` or a link (see
    :func:`geoldp._core.safe_write.check_output`), for the file and, with ``ledger``,
    its ledger sidecar. ``what`` names the file in the messages. Nothing is written.
    """
    from geoldp._core.formats import WRITE_FORMATS
    from geoldp.io import ledger_path

    check_name(path, what)
    p = Path(path)
    allowed = tuple(suffixes) if suffixes is not None else tuple(sorted(WRITE_FORMATS))
    if not p.name.lower().endswith(allowed):
        raise UserError(
            f"cannot infer the output format of '{path}'; use one of the suffixes {', '.join(allowed)}"
        )
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.is_dir():
        raise UserError(f"output directory '{parent}' does not exist")
    targets = [(p, what)] + ([(ledger_path(p), "ledger sidecar")] if ledger else [])
    for target, role in targets:
        check_target(target, overwrite=overwrite, inputs=inputs, what=role)
    return p


def check_target(path: Path, *, overwrite: bool, inputs: Sequence[Path] = (), what: str = "output") -> None:
    """:func:`geoldp._core.safe_write.check_output` of one file, its refusal a :class:`UserError`."""
    from geoldp._core import safe_write as _safe_write

    try:
        _safe_write.check_output(path, overwrite=overwrite, inputs=inputs, what=what)
    except ValueError as exc:
        raise UserError(str(exc).replace("overwrite=True (CLI: --overwrite)", "--overwrite")) from None

"""Command-line interface: ``geoldp COMMAND ...``, one module per command and one runner for all.

Every command is a module of this package that owns its sub-parser (``add_parser(subparsers)``) and its
handler (``args.func(args, stdout, stderr)``): see :data:`COMMANDS`. The shared steps live beside them:
argument types, errors and input and output checks in :mod:`geoldp.cli._args`, reading in
:mod:`geoldp.cli._read`, the per-user budget options of the release commands in
:mod:`geoldp.cli._budget`. This module keeps the runner: it parses, calls the command, and turns every
error into one line.

User errors print one line ``geoldp: error: ...`` with exit status 2 (usage) or 1 (bad input data or
parameters), the full traceback only with ``GEOLDP_TRACEBACK=1`` (:doc:`/cli`, "Errors").

The entry point is :func:`main`, used by the ``geoldp`` console script and by ``python -m geoldp``.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from typing import TYPE_CHECKING, Any, NoReturn, TextIO

from geoldp._core import progress as _progress
from geoldp._core.memory import is_out_of_memory

# Only light modules at the top: `--help`, `--version` and usage errors answer before numba or GeoPandas
# load (every command imports what it needs inside its handler).
from geoldp.cli._args import UsageError, UserError, join_negative_boxes
from geoldp.cli._args import one_line as _one_line

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

__all__ = ["main"]

PROG = "geoldp"

#: The command modules of ``geoldp``, in the order ``geoldp --help`` lists their commands. Each has an
#: ``add_parser(subparsers)`` that adds its command(s) with ``func`` set to the handler.
COMMANDS = (
    "perturb",  # release trajectories (TP, ATP, PointEM, TraCS)
    "demo",  # the built-in synthetic city
    "evaluate",  # a release against its original
    "prepare",  # GPS fixes into trips
    "points",  # a public point set
    "estimate",  # answers with intervals from a trajectory release
    "reports",  # report, report-estimate: aggregate reports over public zones
    "synthesize",  # LDPTrace
    "collect",  # pilot, collect: any design by its planned name
    "accountant",  # accountant show, accountant reconcile
    "field",  # campaign, respond, ingest, answer: a collection in the field
    "plan",  # which design, before any epsilon is spent
    "info",  # versions
)


class _Parser(argparse.ArgumentParser):
    """ArgumentParser whose errors are one line, raised as :class:`UsageError` instead of exiting."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see '{self.prog} --help')")


def build_parser() -> argparse.ArgumentParser:
    """The ``geoldp`` argument parser: one sub-parser per command of :data:`COMMANDS` (the docs use it)."""
    from geoldp.cli.info import version

    parser = _Parser(
        prog=PROG,
        description=(
            "Perturb trajectories under local differential privacy with TP and ATP (Zhang et al., "
            "PVLDB 2023). One row = one trajectory = one privacy unit."
        ),
        epilog="Run 'geoldp COMMAND --help' for the options of a command.",
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name in COMMANDS:
        importlib.import_module(f"geoldp.cli.{name}").add_parser(sub)
    return parser


def _lean_arrow_allocator() -> None:
    """Let Arrow (pandas' string columns) use the C allocator in this process, unless the user chose one.

    Arrow's default allocator (mimalloc) reserves 1 GiB of address space on its first allocation; under a
    2 GiB address-space limit (``ulimit -v``) that left too little for a 10^6-point public set. The choice
    is read when pyarrow is loaded, so it is made only if pyarrow is not loaded yet (the command line, not
    a Python session calling :func:`main`); results do not depend on it.
    """
    if "pyarrow" not in sys.modules:
        os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``geoldp`` command line.

    Ctrl-C (SIGINT) prints ``geoldp: interrupted`` and returns 130, SIGTERM prints ``geoldp: terminated``
    and returns 143, never with a traceback; an output being written keeps its previous state (or is
    complete, if the signal came while it was being renamed into place) and no temporary file is left.

    Parameters
    ----------
    argv : sequence of str, optional
        The arguments, without the program name. Defaults to ``sys.argv[1:]``.

    Returns
    -------
    int
        The exit status: 0 on success, 1 for bad input data or parameters, 2 for command-line usage
        errors, 130 after SIGINT, 143 after SIGTERM.
    """
    import signal

    from geoldp._core.safe_write import Terminated

    def terminate(signum: int, frame: Any) -> None:
        raise Terminated()

    try:
        previous = signal.signal(signal.SIGTERM, terminate)
    except (ValueError, AttributeError, OSError):  # not the main thread, or no SIGTERM
        previous = None
    code = 130
    _progress.use_lines()  # long stages: one "geoldp: ..." line each on stderr
    _lean_arrow_allocator()
    try:
        code = _run(argv)
    except Terminated:
        print(f"{PROG}: terminated", file=sys.stderr)
        code = 143
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
    finally:
        _progress.use_lines(False)
        ending = argv is None  # run as a program: the process ends now
        if previous is not None:
            # a signal during interpreter shutdown would print a traceback from a library's thread or
            # finaliser; called in-process: restore
            signal.signal(signal.SIGTERM, signal.SIG_IGN if ending else previous)
            if ending and signal.getsignal(signal.SIGINT) is signal.default_int_handler:
                signal.signal(signal.SIGINT, signal.SIG_IGN)
        if ending and code == 130:
            # CPython ends a program by SIGINT (status -2, not 130) when a KeyboardInterrupt once passed
            # through a string exec() (numba compiles that way), even a handled one; executing an empty
            # string clears that mark
            exec("")
    return code


def _run(argv: Sequence[str] | None = None) -> int:
    """Run the ``geoldp`` command line (signals are handled by :func:`main`).

    Returns the exit status: 0 on success, 1 for bad input data or parameters, 2 for command-line usage
    errors.
    """
    stdout, stderr = sys.stdout, sys.stderr
    parser = build_parser()
    args = _parse(parser, sys.argv[1:] if argv is None else argv, stderr)
    if isinstance(args, int):
        return args
    if args.command is None:
        parser.print_help(stdout)
        return 0
    return _call(args.func, args, stdout, stderr)


def _parse(parser: argparse.ArgumentParser, argv: Sequence[str], stderr: TextIO) -> argparse.Namespace | int:
    """The parsed arguments, or the exit status of ``--help``, ``--version`` or a usage error."""
    try:
        return parser.parse_args(join_negative_boxes(argv))
    except UsageError as exc:
        print(f"{PROG}: error: {_one_line(exc)}", file=stderr)
        return 2
    except SystemExit as exc:  # --help, --version
        return exc.code if isinstance(exc.code, int) else 0
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=stderr)
        return 130
    except Exception as exc:  # e.g. MemoryError on an absurd argument: one line all the same
        if os.environ.get("GEOLDP_TRACEBACK"):
            raise
        return _unexpected(exc, stderr)


def _call(
    func: Callable[[argparse.Namespace, TextIO, TextIO], int],
    args: argparse.Namespace,
    stdout: TextIO,
    stderr: TextIO,
) -> int:
    """Run a command's handler; every error it raises becomes one ``geoldp: error:`` line and a status."""
    from geoldp._core.errors import GeoLDPError
    from geoldp.cli._args import report_warnings

    try:
        with report_warnings(stderr):  # every command's warnings as "geoldp: warning: ..." lines
            return func(args, stdout, stderr)
    except UsageError as exc:
        print(f"{PROG}: error: {_one_line(exc)}", file=stderr)
        return 2
    except UserError as exc:
        print(f"{PROG}: error: {_one_line(exc)}", file=stderr)
        return 1
    except (GeoLDPError, ValueError, TypeError, KeyError, ImportError) as exc:
        # Validation errors of the library: the message grammar names the parameter or the row position.
        return _library_error(exc, stderr)
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=stderr)
        return 130
    except BrokenPipeError:
        return _broken_pipe(stdout)
    except (OSError, ArithmeticError, MemoryError) as exc:
        # A file that cannot be read or written (a full disk, permissions), or a numeric failure: one line.
        return _system_error(exc, stderr)
    except Exception as exc:  # anything else (a bug, RecursionError, ...): still one line, no traceback
        if os.environ.get("GEOLDP_TRACEBACK"):
            raise
        return _unexpected(exc, stderr)


def _library_error(exc: Exception, stderr: TextIO) -> int:
    """The one line of a library validation error (``GEOLDP_TRACEBACK=1`` re-raises it)."""
    if os.environ.get("GEOLDP_TRACEBACK"):
        raise exc
    if isinstance(exc, ImportError) and is_out_of_memory(exc):  # a library that could not be mapped
        return _out_of_memory(exc, stderr)
    message = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
    print(f"{PROG}: error: {_one_line(message)}", file=stderr)
    return 1


def _broken_pipe(stdout: TextIO) -> int:
    """The reader of stdout went away (``geoldp info | head``): exit quietly, as Unix tools do."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass
    return 141


def _system_error(exc: BaseException, stderr: TextIO) -> int:
    """One line for an OSError, a numeric failure or a MemoryError (``GEOLDP_TRACEBACK=1`` re-raises it)."""
    if os.environ.get("GEOLDP_TRACEBACK"):
        raise exc
    if is_out_of_memory(exc):  # a MemoryError, or a library that could not be mapped (OSError)
        return _out_of_memory(exc, stderr)
    detail = exc.strerror if isinstance(exc, OSError) and exc.strerror else _one_line(exc)
    print(f"{PROG}: error: {type(exc).__name__}: {_one_line(detail)}", file=stderr)
    return 1


def _out_of_memory(exc: BaseException, stderr: TextIO) -> int:
    """The one line for a MemoryError, or a library that could not be loaded for lack of memory."""
    detail = _one_line(exc)
    if not isinstance(exc, MemoryError):
        detail = f"a compiled library could not be loaded: {detail}"
    print(
        f"{PROG}: error: out of memory ({detail[:300]}): the input or the public points need more memory "
        "than this process may use; split the input, use fewer public points, or raise the memory limit",
        file=stderr,
    )
    return 1


def _unexpected(exc: BaseException, stderr: TextIO) -> int:
    """One line for an error geoldp did not foresee; GEOLDP_TRACEBACK=1 gives the traceback instead."""
    if is_out_of_memory(exc):
        return _out_of_memory(exc, stderr)
    kind = type(exc).__name__
    print(
        f"{PROG}: error: unexpected {kind}: {_one_line(exc)[:200]} (run with GEOLDP_TRACEBACK=1 for the "
        "traceback of a bug report)",
        file=stderr,
    )
    return 1

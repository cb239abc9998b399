"""``geoldp info`` (and ``geoldp --version``): the geoldp version and its dependencies' versions."""

from __future__ import annotations

import argparse
from typing import Any, TextIO

PROG = "geoldp"


def version() -> str:
    """The installed geoldp version."""
    from geoldp._core.versions import geoldp_version

    return geoldp_version()


def _cmd_info(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    from geoldp._core.versions import show_versions

    print(
        f"{PROG} {version()}: trajectory collection under local differential privacy (TP, ATP)", file=stdout
    )
    show_versions(file=stdout)
    return 0


def add_parser(sub: Any) -> None:
    """Add ``geoldp info`` to the ``geoldp`` subparsers."""
    i = sub.add_parser(
        "info",
        help="print the geoldp version and dependency versions",
        description="Print the geoldp version and the versions of its dependencies.",
    )
    i.set_defaults(func=_cmd_info)

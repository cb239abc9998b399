"""Argument types and message helpers shared by the command-line modules (``cli``, ``cli_campaign``).

Light on purpose: only the standard library, so that ``geoldp --help`` stays fast.
"""

from __future__ import annotations

import argparse
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TextIO

__all__ = [
    "bbox",
    "int_at_least",
    "one_line",
    "positive_float",
    "positive_int",
    "report_warnings",
    "seed",
]


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


#: An integer >= 1.
positive_int = int_at_least(1, "a positive integer")
#: A seed: an integer >= 0.
seed = int_at_least(0, "a non-negative integer")


def positive_float(text: str) -> float:
    """An argument type: a finite number > 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text!r}") from None
    if not (0.0 < value < float("inf")):
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text!r}")
    return value


def bbox(text: str) -> tuple[float, float, float, float]:
    """An argument type: four numbers ``MINX,MINY,MAXX,MAXY``."""
    try:
        values = tuple(float(p) for p in text.split(","))
    except ValueError:
        values = ()
    if len(values) != 4:
        raise argparse.ArgumentTypeError(f"must be four numbers MINX,MINY,MAXX,MAXY, got {text!r}")
    return values[0], values[1], values[2], values[3]

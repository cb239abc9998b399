"""Argument types and message helpers shared by the command-line modules (``cli``, ``cli_campaign``).

Light on purpose: only the standard library, so that ``geoldp --help`` stays fast.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

__all__ = ["bbox", "int_at_least", "one_line", "positive_float", "positive_int", "seed"]


def one_line(message: object) -> str:
    """Collapse a message to one line."""
    return " ".join(str(message).split()) or "unknown error"


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

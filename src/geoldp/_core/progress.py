"""Progress reports of long calls: a tqdm bar (a widget in notebooks), or one line per stage (the CLI).

A call that can take more than a couple of seconds takes ``progress=`` and reports its stages through
:func:`stages`::

    with stages("estimating", total=3, enabled=progress) as report:
        report("simulating")   # a new stage: the bar advances, or a line is printed
        ...

In Python the report is a tqdm bar (``tqdm.auto``: a widget in Jupyter where ipywidgets is installed, else
text on stderr); without tqdm, nothing. The command-line interface calls :func:`use_lines`: every stage
is then one line on stderr, ``geoldp: estimating: simulating (1/3)``, which logs and pipes keep readable.
Progress never changes a result, and reports only public quantities (stage names, lengths, counts).
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["stages", "tqdm_class", "use_lines"]

_LINES = [False]


def use_lines(on: bool = True) -> None:
    """Report stages as lines on stderr (the CLI) instead of a bar."""
    _LINES[0] = bool(on)


def tqdm_class() -> Any:
    """The tqdm bar class: a notebook widget where ipywidgets is installed, else text; None without tqdm."""
    import importlib.util

    try:
        if importlib.util.find_spec("ipywidgets") is None:
            # tqdm.auto would pick its notebook bar in Jupyter, then warn that ipywidgets is missing
            from tqdm.std import tqdm
        else:
            from tqdm.auto import tqdm
    except (ImportError, ValueError):  # tqdm is optional: no bar
        return None
    return tqdm


def _line(text: str) -> None:
    sys.stderr.write(f"geoldp: {text}\n")
    sys.stderr.flush()


@contextlib.contextmanager
def stages(desc: str, total: int, *, enabled: bool) -> Iterator[Callable[[str], None]]:
    """Report the stages of one call (``total`` of them, about); yields ``report(stage_name)``."""
    if not enabled:
        yield lambda name: None
        return
    if _LINES[0]:
        count = [0]
        t0 = time.monotonic()

        def line(name: str) -> None:
            count[0] += 1
            _line(f"{desc}: {name} ({count[0]}/{max(total, count[0])})")

        yield line
        _line(f"{desc}: done in {time.monotonic() - t0:.1f} s")
        return
    tqdm = tqdm_class()
    if tqdm is None:
        yield lambda name: None
        return
    with tqdm(total=total, desc=f"geoldp: {desc}", unit="stage", leave=False) as bar:
        started = [False]

        def advance(name: str) -> None:
            if started[0]:
                bar.update(1)
            started[0] = True
            bar.set_postfix_str(name, refresh=True)

        yield advance
        if started[0]:
            bar.update(1)

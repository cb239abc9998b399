"""Entry point for ``python -m geoldp`` and for the ``geoldp`` program (:func:`run`)."""

from __future__ import annotations

import signal
import sys
from typing import NoReturn


def run() -> NoReturn:
    """Run the ``geoldp`` command line as a program and exit with its status.

    Ctrl-C at any point from here on, also while the command line itself is still being imported, ends
    the program with one line ``geoldp: interrupted`` and exit status 130, never a traceback.
    """
    try:
        from geoldp.cli import main

        code = main()
    except KeyboardInterrupt:  # Ctrl-C while geoldp.cli and its imports were loading
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C while the program ends
        # CPython ends a program by SIGINT (status -2, not 130) when a KeyboardInterrupt passed through a
        # string exec() (as namedtuple and dataclass definitions run while modules load), even a handled
        # one; executing an empty string clears that mark
        exec("")
        sys.stderr.write("geoldp: interrupted\n")
        code = 130
    sys.exit(code)


if __name__ == "__main__":
    run()

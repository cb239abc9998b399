"""Entry point for ``python -m geoldp`` (same as the ``geoldp`` console script)."""

from __future__ import annotations

import sys

from geoldp.cli import main

if __name__ == "__main__":
    sys.exit(main())

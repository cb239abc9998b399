"""Version report for bug reports (``geoldp.show_versions()``)."""

from __future__ import annotations

import platform
import sys
from importlib.metadata import PackageNotFoundError, version
from typing import TextIO

__all__ = ["show_versions"]

#: Required dependencies, by distribution name.
REQUIRED = (
    "numpy",
    "pandas",
    "geopandas",
    "shapely",
    "pyproj",
    "scikit-learn",
    "scipy",
    "numba",
)

#: Optional dependencies, by distribution name.
OPTIONAL = (
    "matplotlib",
    "tqdm",
    "pyogrio",
    "pyarrow",
    "dask",
    "dask-geopandas",
)


def _dist_version(name: str) -> str | None:
    """Return the installed version of distribution ``name``, or None if it is not installed."""
    try:
        return version(name)
    except PackageNotFoundError:
        return None


def geoldp_version() -> str:
    """The installed geoldp version (``"0.0.0+unknown"`` in a source tree without metadata)."""
    try:
        return version("geoldp")
    except PackageNotFoundError:
        return "0.0.0+unknown"


def _collect() -> dict[str, dict[str, str | None]]:
    """Collect the information printed by :func:`show_versions`."""
    system: dict[str, str | None] = {
        "geoldp": geoldp_version(),
        "python": sys.version.replace("\n", " "),
        "executable": sys.executable,
        "platform": platform.platform(),
        "machine": platform.machine(),
    }
    return {
        "system": system,
        "dependencies": {name: _dist_version(name) for name in REQUIRED},
        "optional": {name: _dist_version(name) for name in OPTIONAL},
    }


def show_versions(file: TextIO | None = None) -> None:
    """Print geoldp, Python, platform and dependency versions, for bug reports.

    Parameters
    ----------
    file : file-like, optional
        Where to write the report. Defaults to ``sys.stdout``.

    Returns
    -------
    None

    Examples
    --------
    >>> import geoldp
    >>> geoldp.show_versions()  # doctest: +SKIP
    <BLANKLINE>
    SYSTEM INFO
    -----------
    geoldp     : 0.1.0
    ...
    """
    out = sys.stdout if file is None else file
    info = _collect()
    titles = {
        "system": "SYSTEM INFO",
        "dependencies": "DEPENDENCIES",
        "optional": "OPTIONAL DEPENDENCIES",
    }
    width = max(len(k) for section in info.values() for k in section)
    for key, section in info.items():
        print("", file=out)
        print(titles[key], file=out)
        print("-" * len(titles[key]), file=out)
        for name, value in section.items():
            shown = "not installed" if value is None else value
            print(f"{name:<{width}} : {shown}", file=out)

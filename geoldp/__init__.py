"""geoldp: trajectory collection under local differential privacy.

geoldp implements the TP and ATP mechanisms of Zhang et al., "Trajectory Data Collection with Local
Differential Privacy" (PVLDB 16(10), 2023) on top of GeoPandas. Importing the package registers the
``.ldp`` accessor on GeoDataFrames.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

# First: point numba's on-disk cache away from the installed package, before any module below is decorated
# with ``numba.njit(cache=True)``.
from geoldp import _numba_cache  # noqa: F401  # isort: skip

# Importing the accessor module registers ``GeoDataFrame.ldp`` as a side effect.
from geoldp import accessor as _accessor  # noqa: F401
from geoldp import estimate, points
from geoldp._versions import show_versions
from geoldp.accounting import BudgetAccountant
from geoldp.budget import Ledger
from geoldp.errors import BudgetError, DomainError, GeoLDPError, GeoLDPWarning, PrivacyWarning
from geoldp.interop import from_movingpandas, from_trackintel, to_movingpandas, to_trackintel
from geoldp.ldptrace import synthesize
from geoldp.metrics import evaluate
from geoldp.planner import plan
from geoldp.pointset import PointSet
from geoldp.reports import report
from geoldp.trajectory import ATP, TP, PointEM, perturb_trajectories

try:
    __version__ = version("geoldp")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0.0.0+unknown"

__all__ = [
    "ATP",
    "TP",
    "BudgetAccountant",
    "BudgetError",
    "DomainError",
    "GeoLDPError",
    "GeoLDPWarning",
    "Ledger",
    "PointEM",
    "PointSet",
    "PrivacyWarning",
    "__version__",
    "estimate",
    "evaluate",
    "from_movingpandas",
    "from_trackintel",
    "perturb_trajectories",
    "plan",
    "points",
    "report",
    "show_versions",
    "synthesize",
    "to_movingpandas",
    "to_trackintel",
]

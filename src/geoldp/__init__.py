"""geoldp: trajectory collection under local differential privacy.

geoldp implements the TP and ATP mechanisms of Zhang et al., "Trajectory Data Collection with Local
Differential Privacy" (PVLDB 16(10), 2023) on top of GeoPandas. Importing the package registers the
``.ldp`` accessor on GeoDataFrames and GeoSeries.

``import geoldp`` is light: the public names and submodules below are imported the first time they are
used (PEP 562), so numba, GeoPandas and the estimators load only when a command or a call needs them. The
``.ldp`` accessor is registered the moment pandas is imported (or at once, when it already is), and its
module loads on the first ``gdf.ldp``.
"""

from __future__ import annotations

import importlib
import sys
from typing import TYPE_CHECKING, Any

from geoldp._core.errors import BudgetError, DomainError, GeoLDPError, GeoLDPWarning, PrivacyWarning

if TYPE_CHECKING:
    from geoldp import datasets as datasets
    from geoldp import designs as designs
    from geoldp import estimate, points
    from geoldp import io as io
    from geoldp import plotting as plotting
    from geoldp import prepare as prepare
    from geoldp import questions as questions
    from geoldp._core.geo import haversine_array_m, haversine_m
    from geoldp._core.ledger import ReleaseLedger, ledger_of
    from geoldp._core.pointset import PointSet
    from geoldp._core.versions import show_versions
    from geoldp.accounting import BudgetAccountant
    from geoldp.budget import Ledger
    from geoldp.designs.combine import combine
    from geoldp.hybrids import hybrid
    from geoldp.interop import from_movingpandas, from_trackintel, to_movingpandas, to_trackintel
    from geoldp.ldptrace import synthesize
    from geoldp.metrics import evaluate
    from geoldp.planner import plan
    from geoldp.reports import report
    from geoldp.trajectory import ATP, TP, PointEM, perturb_trajectories
    from geoldp.zones import zone_grid

    __version__: str

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
    "ReleaseLedger",
    "__version__",
    "combine",
    "estimate",
    "evaluate",
    "from_movingpandas",
    "from_trackintel",
    "hybrid",
    "haversine_array_m",
    "haversine_m",
    "ledger_of",
    "perturb_trajectories",
    "plan",
    "points",
    "report",
    "show_versions",
    "synthesize",
    "to_movingpandas",
    "to_trackintel",
    "zone_grid",
]

# public name -> the module that defines it
_NAMES = {
    "ATP": "geoldp.trajectory",
    "TP": "geoldp.trajectory",
    "PointEM": "geoldp.trajectory",
    "perturb_trajectories": "geoldp.trajectory",
    "BudgetAccountant": "geoldp.accounting",
    "Ledger": "geoldp.budget",
    "ReleaseLedger": "geoldp._core.ledger",
    "ledger_of": "geoldp._core.ledger",
    "PointSet": "geoldp._core.pointset",
    "evaluate": "geoldp.metrics",
    "plan": "geoldp.planner",
    "report": "geoldp.reports",
    "synthesize": "geoldp.ldptrace",
    "hybrid": "geoldp.hybrids",
    "combine": "geoldp.designs.combine",
    "show_versions": "geoldp._core.versions",
    "from_movingpandas": "geoldp.interop",
    "from_trackintel": "geoldp.interop",
    "to_movingpandas": "geoldp.interop",
    "to_trackintel": "geoldp.interop",
    "zone_grid": "geoldp.zones",
    "haversine_m": "geoldp._core.geo",
    "haversine_array_m": "geoldp._core.geo",
}
# submodules reachable as attributes right after ``import geoldp``
_SUBMODULES = (
    "accounting",
    "budget_strategies",
    "datasets",
    "designs",
    "estimate",
    "hybrids",
    "io",
    "layers",
    "metrics",
    "plotting",
    "points",
    "prepare",
    "questions",
    "reports",
    "zones",
)


def __getattr__(name: str) -> Any:
    from geoldp._core.memory import loading  # a compiled library that cannot be mapped: a MemoryError

    if name in _NAMES:
        with loading(f"geoldp.{name} (with its compiled libraries)"):
            value = getattr(importlib.import_module(_NAMES[name]), name)
    elif name in _SUBMODULES:
        with loading(f"geoldp.{name} (with its compiled libraries)"):
            value = importlib.import_module(f"geoldp.{name}")
    elif name == "__version__":
        from geoldp._core.versions import geoldp_version

        value = geoldp_version()
    else:
        raise AttributeError(f"module 'geoldp' has no attribute {name!r}")
    globals()[name] = value  # the next lookup is an ordinary attribute
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__) | set(_SUBMODULES))


# ------------------------------------------------------------------------------------------------------
# Work that must happen when a heavy dependency is imported, by anyone, without importing it here.


def _configure_numba() -> None:
    # Points numba's on-disk cache away from the installed package before any geoldp kernel is decorated
    # with ``numba.njit(cache=True)`` (every such module imports numba first, which runs this hook).
    importlib.import_module("geoldp._core.numba_cache")


class _LazyAccessor:
    """``DataFrame.ldp`` (or ``Series.ldp``) until first used.

    Then it imports :mod:`geoldp.accessor`, which registers both accessors itself.
    """

    def __init__(self, series: bool = False) -> None:
        self._series = series

    def __get__(self, obj: Any, cls: Any) -> Any:
        import pandas as pd

        for owner in (pd.DataFrame, pd.Series):  # both placeholders go, so the real ones replace them
            if isinstance(owner.__dict__.get("ldp"), _LazyAccessor):
                delattr(owner, "ldp")
        from geoldp import accessor  # its decorators register both accessors on the first import

        if not hasattr(pd.DataFrame, "ldp"):  # the module had been imported before: register again
            pd.api.extensions.register_dataframe_accessor("ldp")(accessor.LDPAccessor)
        if not hasattr(pd.Series, "ldp"):
            pd.api.extensions.register_series_accessor("ldp")(accessor.GeoSeriesLDPAccessor)
        target = accessor.GeoSeriesLDPAccessor if self._series else accessor.LDPAccessor
        return target if obj is None else target(obj)


def _register_accessor() -> None:
    # ``geoldp.accessor`` in sys.modules: that module is being (or has been) imported and registers itself.
    pandas = sys.modules["pandas"]
    if "geoldp.accessor" in sys.modules:
        return
    for owner, series in ((pandas.DataFrame, False), (pandas.Series, True)):
        if not hasattr(owner, "ldp"):
            owner.ldp = _LazyAccessor(series)
            owner._accessors.add("ldp")


def _register_dask_accessor() -> None:
    # ``ddf.ldp`` exists only for users of geoldp.dask; ``import geoldp`` never imports Dask
    module = sys.modules.get("geoldp.dask")
    if module is not None:
        module.register_accessor()


_AFTER_IMPORT = {
    "numba": _configure_numba,
    "pandas": _register_accessor,
    "dask.dataframe": _register_dask_accessor,
}


class _AfterImport:
    """Runs ``_AFTER_IMPORT[name]`` right after the module ``name`` has been executed, then steps aside.

    A meta path finder by its ``find_spec`` alone (not a subclass of ``importlib.abc.MetaPathFinder``, whose
    import costs 20 ms: ``import geoldp.client`` stays light).

    It finds nothing itself: it asks the finders after it for the module's spec and wraps its loader's
    ``exec_module``, so the module is imported exactly as it would be without geoldp.
    """

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        hook = _AFTER_IMPORT.get(fullname)
        if hook is None:
            return None
        spec = None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                break
        loader = getattr(spec, "loader", None)
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        exec_module = loader.exec_module

        def exec_then_hook(module: Any) -> None:
            exec_module(module)
            del _AFTER_IMPORT[fullname]
            if not _AFTER_IMPORT and self in sys.meta_path:
                sys.meta_path.remove(self)
            hook()

        loader.exec_module = exec_then_hook
        return spec


for _name in list(_AFTER_IMPORT):
    if _name in sys.modules:
        _AFTER_IMPORT.pop(_name)()
if _AFTER_IMPORT:
    sys.meta_path.insert(0, _AfterImport())
del _name

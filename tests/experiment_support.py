"""Load a script of experiments/ as a module, for the tests of its pieces (no data file is read)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

EXPERIMENTS = Path(__file__).resolve().parents[1] / "experiments"


def load_experiment(name: str, module_name: str) -> ModuleType:
    """experiments/``name``.py as the module ``module_name`` (it may import the scripts beside it)."""
    sys.path.insert(0, str(EXPERIMENTS))
    try:
        spec = importlib.util.spec_from_file_location(module_name, EXPERIMENTS / f"{name}.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(EXPERIMENTS))
    return module

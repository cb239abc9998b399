"""The package's import graph (docs/architecture.md): layers, no circles, no private names across modules.

The graph is read from the source with :mod:`ast` (nothing is imported), and includes the imports inside
functions: a lazy import still couples two modules, and hiding a circle behind one is what this test is
meant to stop.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = "geoldp"
ROOT = Path(__file__).resolve().parents[1] / "src" / PACKAGE

#: The layers, lowest first (the same table as docs/architecture.md). A module may import modules of its
#: own layer or of a lower one, never of a higher one. A package name stands for all its submodules.
LAYERS: list[tuple[str, ...]] = [
    # _core: the private foundation package (errors, the release ledger, validation, randomness, files,
    # kernels, geometry, the point set, the GeoPandas <-> arrays boundary, TraCS's box)
    ("_core", "questions", "_campaign_doc", "_ldptrace_grid"),  # foundations
    # store: the transactional store of budgets, spends and reports, below the accountant that uses it
    ("budget", "store", "accounting", "points"),  # budgets, ledgers, the store, accounting; P
    ("mechanisms",),  # the ε-LDP primitives
    ("trajectory",),  # TP, ATP, PointEM and the array engine
    ("zones",),  # the one zone validator, Zones object, grid builder and point-in-zone rule
    # budget_strategies: the shared per-user driver (needs only accounting), run by perturb and report
    # client: one user's randomiser on her device (numpy and the compiled kernels; the full geoldp only as
    # its fallback)
    (
        "budget_strategies",
        "queries",
        "_release",
        "estimate",
        "ldptrace",
        "reports",
        "client",
    ),  # release pipelines
    ("metrics", "prepare", "nodata", "shrinkage"),  # utility metrics; GPS preparation; no-data answers
    (
        "accessor",
        "dask",
        "io",
        "plotting",
        "testing",
        "interop",
        "explore",
        "layers",
        "hybrids",
    ),  # drivers, I/O, maps
    ("designs", "field"),  # the ways to collect, as objects; campaigns and their ingest (field)
    ("planner",),  # ranks designs
    (
        "datasets",
        "demo",
        "cli",
        "__main__",
        "__init__",
        "_aot_build",
    ),  # applications and the package itself
]

#: Imports of another module's private names that are still to be removed, as (importer, name). It is
#: empty and must stay so: a name another module needs is a public name of its owner.
PENDING_PRIVATE_IMPORTS: set[tuple[str, str]] = set()


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


MODULES: dict[str, Path] = {_module_name(p): p for p in sorted(ROOT.rglob("*.py"))}
PACKAGES = {_module_name(p) for p in ROOT.rglob("__init__.py")}


def _is_module(name: str) -> bool:
    return name in MODULES


def _resolve_from(module: str, node: ast.ImportFrom) -> str | None:
    """Absolute module name of a ``from ... import`` (None outside the package)."""
    if node.level:
        base = module.split(".") if module in PACKAGES else module.split(".")[:-1]
        base = base[: len(base) - (node.level - 1)]
        target = ".".join(base + ([node.module] if node.module else []))
    else:
        target = node.module or ""
    return target if target == PACKAGE or target.startswith(PACKAGE + ".") else None


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _analyse(module: str) -> tuple[set[str], set[str]]:
    """Return (modules imported, private names of other modules used) for one module."""
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    imported: set[str] = set()
    private: set[str] = set()
    aliases: dict[str, str] = {}  # local name -> geoldp module it is bound to
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == PACKAGE or alias.name.startswith(PACKAGE + "."):
                    imported.add(alias.name)
                    if alias.asname:
                        aliases[alias.asname] = alias.name
        elif isinstance(node, ast.ImportFrom):
            target = _resolve_from(module, node)
            if target is None:
                continue
            for alias in node.names:
                full = f"{target}.{alias.name}"
                if _is_module(full):  # a submodule: importing a (private) module is fine
                    imported.add(full)
                    aliases[alias.asname or alias.name] = full
                else:
                    imported.add(target)
                    if _is_private(alias.name) and target != module:
                        private.add(full)
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and _is_private(node.attr):
            target = aliases.get(node.value.id)
            if target is not None and target != module and not _is_module(f"{target}.{node.attr}"):
                private.add(f"{target}.{node.attr}")
    return {m for m in imported if m != module}, private


GRAPH: dict[str, set[str]] = {}
PRIVATE: dict[str, set[str]] = {}
for _name in MODULES:
    GRAPH[_name], PRIVATE[_name] = _analyse(_name)


def _layer(module: str) -> int:
    parts = module.split(".")
    key = parts[1] if len(parts) > 1 else "__init__"
    if len(parts) == 2 and parts[1] == "__main__":
        key = "__main__"
    for level, names in enumerate(LAYERS):
        if key in names:
            return level
    raise AssertionError(
        f"{module} is in no layer: add it to LAYERS here and to the table in docs/architecture.md."
    )


def test_every_module_has_a_layer():
    for module in MODULES:
        _layer(module)


def test_the_graph_is_read():
    # guards against a silently empty graph (a broken walker would pass every test below)
    assert "geoldp._core.frames" in GRAPH["geoldp.queries"]
    assert "geoldp._release" in GRAPH["geoldp.accessor"]
    assert "geoldp.trajectory.engine" in GRAPH["geoldp._release"]


def test_no_import_runs_up_a_layer():
    up = sorted(
        f"{module} (layer {_layer(module)}) imports {target} (layer {_layer(target)})"
        for module, targets in GRAPH.items()
        for target in targets
        if _layer(target) > _layer(module)
    )
    assert not up, "imports that run up the layers:\n" + "\n".join(up)


def _find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}  # 1 = on the stack, 2 = done
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in graph:
                continue
            if state.get(nxt) == 1:
                return stack[stack.index(nxt) :] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def _module_graph() -> dict[str, set[str]]:
    """Module-to-module edges; a package's ``__init__`` is left out (importing a submodule runs it, which
    would make every submodule import of a package look like a cycle through the package)."""
    return {m: {t for t in ts if t not in PACKAGES} for m, ts in GRAPH.items()}


def test_no_import_circles():
    cycle = _find_cycle(_module_graph())
    assert cycle is None, "import circle: " + " -> ".join(cycle or [])


def test_the_cycle_finder_finds_cycles():
    assert _find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _find_cycle({"a": {"b"}, "b": set()}) is None


def test_no_module_imports_another_modules_private_names():
    found = {(module, name) for module, names in PRIVATE.items() for name in names}
    new = sorted(found - PENDING_PRIVATE_IMPORTS)
    assert not new, "private names used across modules:\n" + "\n".join(f"{m}: {n}" for m, n in new)


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("from geoldp.queries import _Points\n", {"geoldp.queries._Points"}),
        (
            "from geoldp import prepare\nprepare._warn_near_uniform(1)\n",
            {"geoldp.prepare._warn_near_uniform"},
        ),
        ("from geoldp._core import frames\nframes.extract(1)\n", set()),
        ("from geoldp.mechanisms._base import EPS_MAX\n", set()),
    ],
)
def test_the_private_name_check_can_fail(source, expected, tmp_path, monkeypatch):
    path = tmp_path / "probe.py"
    path.write_text(source, encoding="utf-8")
    monkeypatch.setitem(MODULES, "geoldp.probe", path)
    assert _analyse("geoldp.probe")[1] == expected


def test_docs_declare_the_same_layers():
    import re

    page = (ROOT.parents[1] / "docs" / "architecture.md").read_text(encoding="utf-8")
    documented = []
    for line in page.splitlines():
        if re.match(r"\|\s*\d+\.", line):
            cell = line.split("|")[2]
            names = re.findall(r"`([^`]+)`", cell)
            documented.append({"__init__" if n == "src/geoldp/__init__.py" else n for n in names})
    assert documented == [set(layer) for layer in LAYERS]


#: The geospatial stack (heavy, and the one place CRS and geometry semantics live): the modules that may
#: import each library today. A module not listed here may import none of them; go through the frame
#: boundary (``_frames``, ``_zones``) instead, or add the module here deliberately.
GEO_LIBRARIES = ("geopandas", "pyproj", "shapely")
GEO_IMPORTERS: dict[str, set[str]] = {
    "geoldp._core.area": {"pyproj"},
    "geoldp._core.box": {"pyproj"},
    "geoldp._core.frames": {"geopandas", "pyproj", "shapely"},
    "geoldp._core.point_record": {"geopandas"},  # the digest of P given as a frame
    "geoldp._release": {"geopandas"},
    "geoldp.accessor": {"geopandas"},
    "geoldp.accounting": {"shapely"},
    "geoldp.budget_strategies": {"geopandas"},
    # a campaign file holds its zones as rings of lon/lat, and ingest rebuilds a release's trajectories
    "geoldp.field.campaign": {"geopandas", "shapely"},
    "geoldp.cli._read": {"geopandas"},
    "geoldp.cli.evaluate": {"shapely"},
    "geoldp.cli.prepare": {"geopandas", "shapely"},
    "geoldp.dask": {"geopandas", "shapely"},
    "geoldp.datasets": {"geopandas", "shapely"},
    "geoldp.demo": {"geopandas", "shapely"},
    "geoldp.estimate": {"geopandas"},
    "geoldp.field.ingest": {"geopandas", "shapely"},
    "geoldp.estimate._inputs": {"geopandas", "pyproj", "shapely"},
    "geoldp.explore": {"geopandas"},
    "geoldp.interop": {"geopandas", "shapely"},
    "geoldp.io": {"geopandas", "pyproj", "shapely"},
    "geoldp.layers": {"geopandas", "shapely"},
    "geoldp.ldptrace": {"geopandas", "pyproj", "shapely"},
    "geoldp.metrics._zoning": {"geopandas", "shapely"},
    "geoldp.plotting": {"geopandas"},
    "geoldp.points": {"geopandas", "pyproj", "shapely"},
    "geoldp._core.pointset": {"geopandas"},
    "geoldp.prepare": {"geopandas", "pyproj", "shapely"},
    "geoldp.queries": {"shapely"},
    "geoldp.reports.estimators": {"geopandas"},
    "geoldp.zones": {"geopandas", "pyproj", "shapely"},
}


def _geo_imports(path: Path) -> set[str]:
    """The geospatial libraries a file imports anywhere (lazy imports inside functions included)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names = [node.module]
        else:
            continue
        found.update(n.split(".")[0] for n in names if n.split(".")[0] in GEO_LIBRARIES)
    return found


def test_only_listed_modules_import_the_geospatial_stack():
    extra = sorted(
        f"{module} imports {sorted(libs - GEO_IMPORTERS.get(module, set()))}"
        for module, path in MODULES.items()
        if (libs := _geo_imports(path)) - GEO_IMPORTERS.get(module, set())
    )
    assert not extra, "imports of geopandas/pyproj/shapely outside GEO_IMPORTERS:\n" + "\n".join(extra)


def test_the_geospatial_list_names_real_modules():
    assert set(GEO_IMPORTERS) <= set(MODULES)


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("import shapely.geometry\n", {"shapely"}),
        ("def f():\n    from pyproj import CRS\n", {"pyproj"}),
        ("import geopandas as gpd\nfrom .pyproj import x\n", {"geopandas"}),
        ("import numpy\n", set()),
    ],
)
def test_the_geospatial_check_can_fail(source, expected, tmp_path):
    path = tmp_path / "probe.py"
    path.write_text(source, encoding="utf-8")
    assert _geo_imports(path) == expected


def _public_names() -> set[str]:
    """``module.name`` for every name in a public module's ``__all__`` (private modules excluded)."""
    names = set()
    for module, path in MODULES.items():
        if any(_is_private(part) for part in module.split(".")):
            continue
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            targets = node.targets if isinstance(node, ast.Assign) else []
            if any(getattr(target, "id", None) == "__all__" for target in targets):
                names |= {f"{module}.{name}" for name in ast.literal_eval(node.value)}
    return names


def _api_reference_names() -> set[str]:
    """The names docs/api.md documents, as ``module.name`` (autosummary entries under a currentmodule)."""
    import re

    page = (ROOT.parents[1] / "docs" / "api.md").read_text(encoding="utf-8")
    names, current = set(), None
    for line in page.splitlines():
        text = line.strip()
        if match := re.match(r"\.\. currentmodule:: (\S+)", text):
            current = match.group(1)
        elif match := re.match(r"\.\. auto(?:class|function|data):: (\S+)", text):
            names.add(match.group(1))
        elif current and line.startswith("   ") and re.fullmatch(r"[A-Za-z_][\w.]*", text):
            names.add(f"{current}.{text}")
    return names


def test_the_api_reference_documents_exactly_the_public_names():
    # a name in an __all__ is a promise to users: the API reference shows each one, and nothing else
    public = {name for name in _public_names() if not name.startswith("geoldp.__") and name not in MODULES}
    documented = _api_reference_names() - set(MODULES)
    assert sorted(public - documented) == [], "public names missing from docs/api.md"
    assert sorted(documented - public) == [], "docs/api.md documents names that are in no __all__"


def test_the_public_surface_stays_small():
    # what a newcomer has to learn: every module __all__ plus the package root, at most 150 names
    assert 100 < len(_public_names()) <= 150

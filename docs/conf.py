"""Sphinx configuration for the geoldp documentation (Markdown sources via MyST)."""

from __future__ import annotations

import importlib.util
import os
import sys
from importlib import metadata

sys.path.insert(0, os.path.abspath(".."))

project = "geoldp"
author = "the geoldp developers"
copyright = "2026, the geoldp developers"
try:
    release = metadata.version("geoldp")
except metadata.PackageNotFoundError:  # building from a source tree that is not installed
    release = "0.0.0+unknown"
version = ".".join(release.split(".")[:2])

extensions = [
    "myst_parser",
    "numpydoc",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.intersphinx",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
]
# Optional extensions: used when installed, skipped otherwise so a minimal docs build still works.
for _optional in ("sphinx_autosummary_accessors", "sphinxarg"):
    if importlib.util.find_spec(_optional):
        extensions.append("sphinxarg.ext" if _optional == "sphinxarg" else _optional)

source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
root_doc = "index"
exclude_patterns = ["_build", "results/*.csv"]

myst_enable_extensions = ["colon_fence", "dollarmath", "deflist"]
myst_heading_anchors = 3

autosummary_generate = True
autodoc_typehints = "none"
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False

intersphinx_mapping = {
    "python": ("https://docs.python.org/3", None),
    "numpy": ("https://numpy.org/doc/stable", None),
    "pandas": ("https://pandas.pydata.org/docs", None),
    "geopandas": ("https://geopandas.org/en/stable", None),
    "shapely": ("https://shapely.readthedocs.io/en/stable", None),
    "pyproj": ("https://pyproj4.github.io/pyproj/stable", None),
}

html_theme = "pydata_sphinx_theme" if importlib.util.find_spec("pydata_sphinx_theme") else "alabaster"
html_title = f"geoldp {release}"

# Docstrings write set sizes as |P|, |S|, ... (the spec's notation); in reStructuredText that syntax is a
# substitution reference, so define each one to render as itself.
rst_prolog = "\n".join(
    rf".. |{name}| replace:: \|{name}\|" for name in ("P", "S", "T", "U", "C", "D", "lat", "τ")
)

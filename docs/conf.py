"""Sphinx configuration for the geoldp documentation (Markdown sources via MyST)."""

from __future__ import annotations

import importlib.util
import os
import re
import socket
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


def _offline() -> bool:
    """CI builds offline (and with -W a failed inventory download is an error); so do machines without DNS."""
    if os.environ.get("CI", "").lower() in ("1", "true", "yes") or os.environ.get("GEOLDP_DOCS_OFFLINE"):
        return True
    try:
        socket.create_connection(("docs.python.org", 443), timeout=2).close()
    except OSError:
        return True
    return False


if _offline():
    # Cross-references to other projects' docs then render as plain text instead of links.
    extensions.remove("sphinx.ext.intersphinx")
    intersphinx_mapping = {}

html_theme = "pydata_sphinx_theme" if importlib.util.find_spec("pydata_sphinx_theme") else "alabaster"
html_title = f"geoldp {release}"
templates_path = ["_templates"]
html_static_path = ["_static"]
html_css_files = ["geoldp.css"]
if html_theme == "pydata_sphinx_theme":
    # The theme's default primary sidebar shows only the pages *below* the current top-level page, and every
    # page here is top-level, so it was empty: show the whole site's toctree instead (_templates/).
    html_sidebars = {"**": ["sidebar-site-nav"]}
    html_theme_options = {
        "navigation_depth": 2,
        "show_nav_level": 1,
        "collapse_navigation": False,
        # No right-hand sidebar: at 1280 px its column left the article too narrow for a 100-character line
        # of code; the current page's sections are listed under it in the left sidebar instead.
        "secondary_sidebar_items": [],
        "show_prev_next": True,
        # The search as an icon, fewer header links: the header took two rows at 1280 px.
        "navbar_persistent": ["search-button"],
        "header_links_before_dropdown": 4,
    }

# Docstrings write set sizes as |P|, |S|, ... (the spec's notation); in reStructuredText that syntax is a
# substitution reference, so define each one to render as itself.
_SET_SIZES = ("P", "S", "T", "U", "C", "D", "lat", "τ")
rst_prolog = "\n".join(rf".. |{name}| replace:: \|{name}\|" for name in _SET_SIZES)


# A set size directly followed by a letter or superscript (|τ|²) is not a valid substitution reference end:
# add reStructuredText's escaped space (renders as nothing) so the prolog's substitution still applies.
_SET_SIZE_BEFORE_TEXT = re.compile(r"(\|(?:" + "|".join(_SET_SIZES) + r")\|)(?=[^\s.,;:!?)\]}'\"/|-])")


def _escape_set_sizes(app, what, name, obj, options, lines):
    lines[:] = [_SET_SIZE_BEFORE_TEXT.sub(r"\1\\ ", line) for line in lines]


def setup(app):
    app.connect("autodoc-process-docstring", _escape_set_sizes, priority=100)

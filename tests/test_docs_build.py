"""The Sphinx docs build offline with warnings as errors, and a browser at 1280 px shows them well.

Skipped where Sphinx (the ``docs`` extra) or Chromium is missing. ``.ci/run`` builds the docs once and
passes the output folder in ``GEOLDP_DOCS_HTML``; otherwise the test builds them itself. Screenshots go to
``GEOLDP_DOCS_SCREENSHOTS`` when that is set (CI keeps them for a human to look at).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import struct
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

pytest.importorskip("sphinx")
pytest.importorskip("myst_parser")
pytest.importorskip("numpydoc")
pytest.importorskip("pydata_sphinx_theme")

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAGES = ("index", "quickstart")
WIDTH = 1280
CHROMIUM = next(
    (p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome", "chrome")) if p), None
)
needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="no Chromium (apt-get install chromium)")

# Appended to a copy of a page: after load, report what the browser laid out.
LAYOUT_PROBE = """<script>
window.addEventListener("load", () => {
  const pres = [...document.querySelectorAll("div.highlight pre")];
  // The sidebar's own navigation (the sidebar also holds copies of the header links for small screens).
  const nav = document.querySelector(".bd-sidebar-primary .bd-docs-nav");
  const box = nav ? nav.getBoundingClientRect() : {width: 0, height: 0};
  const out = document.createElement("pre");
  out.id = "geoldp-layout";
  out.textContent = JSON.stringify({
    width: window.innerWidth,
    code_blocks: pres.length,
    clipped: pres.filter((p) => p.scrollWidth > p.clientWidth + 1).length,
    sidebar_nav_box: [box.width, box.height],
    sidebar_nav_links: nav ? nav.querySelectorAll("a[href]").length : 0,
  });
  document.body.appendChild(out);
});
</script>
"""


@pytest.fixture(scope="module")
def html_dir(tmp_path_factory) -> Path:
    given = os.environ.get("GEOLDP_DOCS_HTML")
    if given:
        path = Path(given)
        assert (path / "index.html").is_file(), f"GEOLDP_DOCS_HTML={given} holds no built docs"
        return path
    out = tmp_path_factory.mktemp("html")
    env = dict(os.environ, CI="true", PYTHONPATH=str(ROOT / "src"))  # CI=true: offline, intersphinx off
    proc = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html", str(DOCS), str(out)],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, f"sphinx -W failed:\n{proc.stderr[-4000:]}"
    return out


def _toctree_pages() -> list[str]:
    """The pages listed in the index's toctrees (read from the source, not from the built HTML)."""
    text = (DOCS / "index.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```\{toctree\}\n(.*?)```", text, re.S)
    assert blocks, "docs/index.md has no toctree"
    return [
        ln.strip()
        for block in blocks
        for ln in block.splitlines()
        if ln.strip() and not ln.strip().startswith(":")
    ]


class _SidebarLinks(HTMLParser):
    """Collects the hrefs of the primary sidebar's navigation (the ``bd-docs-nav`` element).

    Only that element: the primary sidebar also holds the header's links, for small screens.
    """

    def __init__(self) -> None:
        super().__init__()
        self.depth = 0  # > 0 while inside the sidebar
        self.links: list[str] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if self.depth:
            self.depth += tag not in ("br", "img", "input", "meta", "link", "hr")
            if tag == "a" and attrs.get("href"):
                self.links.append(attrs["href"])
        elif "bd-docs-nav" in (attrs.get("class") or "").split():
            self.depth = 1

    def handle_endtag(self, tag):
        if self.depth:
            self.depth -= 1


@pytest.mark.parametrize("page", PAGES)
def test_sidebar_lists_every_toctree_page(html_dir, page):
    parser = _SidebarLinks()
    parser.feed((html_dir / f"{page}.html").read_text(encoding="utf-8"))
    # The current page links to itself as "#".
    targets = {re.sub(r"[#?].*$", "", href).removesuffix(".html") or page for href in parser.links}
    missing = [p for p in _toctree_pages() if p not in targets]
    assert not missing, f"{page}.html: the sidebar has no link to {missing}"


def _chromium(profile: Path, *args: str) -> subprocess.CompletedProcess:
    # --no-sandbox: CI runs as root; a throw-away profile keeps runs independent of ~/.config.
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run"]
    cmd += [f"--user-data-dir={profile}", f"--window-size={WIDTH},1400", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300)


@needs_chromium
@pytest.mark.parametrize("page", PAGES)
def test_browser_layout_at_1280px(html_dir, page, tmp_path):
    source = (html_dir / f"{page}.html").read_text(encoding="utf-8")
    probe = html_dir / f"_layout_probe_{page}.html"  # same folder, so relative CSS/JS links resolve
    probe.write_text(source.replace("</body>", LAYOUT_PROBE + "</body>"), encoding="utf-8")
    try:
        proc = _chromium(tmp_path / "profile", "--dump-dom", probe.as_uri())
    finally:
        probe.unlink()
    found = re.search(r'<pre id="geoldp-layout"[^>]*>([^<]*)</pre>', proc.stdout)
    assert found, f"the browser did not run the layout probe:\n{proc.stderr[-2000:]}"
    layout = json.loads(found.group(1))
    assert layout["width"] == WIDTH
    assert layout["code_blocks"] > 0
    assert layout["clipped"] == 0, f"{page}: {layout['clipped']} code block(s) wider than their box"
    assert min(layout["sidebar_nav_box"]) > 0, f"{page}: the sidebar navigation is not displayed"
    assert layout["sidebar_nav_links"] >= len(_toctree_pages())


@needs_chromium
@pytest.mark.parametrize("page", PAGES)
def test_screenshot(html_dir, page, tmp_path):
    out_dir = Path(os.environ.get("GEOLDP_DOCS_SCREENSHOTS") or tmp_path)
    out_dir.mkdir(parents=True, exist_ok=True)
    png = out_dir / f"{page}-{WIDTH}px.png"
    png.unlink(missing_ok=True)
    proc = _chromium(tmp_path / "profile", f"--screenshot={png}", (html_dir / f"{page}.html").as_uri())
    assert png.is_file(), f"no screenshot:\n{proc.stderr[-2000:]}"
    header = png.read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", header[16:24])
    assert (width, height) == (WIDTH, 1400)

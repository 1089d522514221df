"""Open the HTML scoreboard in headless Chromium and check what a person would see.

Skipped where /usr/bin/chromium is absent (ci/setup.sh installs it). The page carries
a hostile case summary; if escaping failed, its script would retitle the page.
"""
from __future__ import annotations

import re
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest
from warpboard.reports import render

CHROMIUM = Path("/usr/bin/chromium")
pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason="needs /usr/bin/chromium")

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def _chromium(tmp_path: Path, *args: str) -> str:
    """Run Chromium once with its own profile; return standard output (the DOM)."""
    cmd = [str(CHROMIUM), *FLAGS, f"--user-data-dir={tmp_path / 'profile'}", *args]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


class Visible(HTMLParser):
    """Collect the title, the text of each matrix cell by (case, device), and the
    status-legend text, from a DOM dump."""

    def __init__(self):
        super().__init__()
        self.title, self.cells, self.legend = "", {}, ""
        self._where: list[str] = []
        self._cell = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "td" and "data-case" in a:
            self._cell = (a["data-case"], a["data-device"])
            self.cells[self._cell] = ""
        if tag == "ul" and "status-legend" in (a.get("class") or ""):
            self._where.append("legend")
        if tag == "title":
            self._where.append("title")

    def handle_endtag(self, tag):
        if tag == "td":
            self._cell = None
        if (tag, self._where[-1] if self._where else None) in (("ul", "legend"),
                                                                ("title", "title")):
            self._where.pop()

    def handle_data(self, data):
        if self._cell:
            self.cells[self._cell] += data
        if "legend" in self._where:
            self.legend += data
        if self._where[-1:] == ["title"]:
            self.title += data


def test_page_as_seen_in_chromium(tmp_path, results, baseline):
    page = tmp_path / "scoreboard.html"
    page.write_text(render.html(results, baseline), encoding="utf-8")
    seen = Visible()
    seen.feed(_chromium(tmp_path, "--dump-dom", page.as_uri()))
    assert seen.title == "warpboard scoreboard"          # the injected script never ran
    assert seen.cells[("truth/evil", "lavapipe-w8")] == "FAILwas PASS"
    assert seen.cells[("truth/a", "lavapipe-w4")] == "PASSwas FAIL"
    assert seen.cells[("truth/c", "lavapipe-w4")] == "UNSUPPORTED"
    for status in ("PASS", "FAIL", "XFAIL", "LIVELOCK", "CRASH", "not run on this device"):
        assert status in seen.legend

    shot = tmp_path / "page.png"
    _chromium(tmp_path, f"--screenshot={shot}", "--window-size=1200,900", page.as_uri())
    assert shot.stat().st_size > 0


def _hidden_rows_and_cells(dom: str) -> tuple[set[str], set[tuple[str, str]]]:
    rows = set(re.findall(r'<tr data-tags="[^"]*" data-fail="[01]"[^>]*class="hidden"><th[^>]*>([^<]+)</th>', dom))
    cells = set(re.findall(r'<td class="[^"]*\bhidden\b[^"]*"[^>]*data-case="([^"]+)" data-device="([^"]+)"', dom))
    return rows, cells


def test_the_filters_hide_rows_and_columns_from_the_address(tmp_path, results):
    page = tmp_path / "scoreboard.html"
    page.write_text(render.html(results), encoding="utf-8")
    rows, cells = _hidden_rows_and_cells(_chromium(tmp_path, "--dump-dom", page.as_uri()))
    assert not rows and not cells                        # no filter: everything shown
    rows, _ = _hidden_rows_and_cells(_chromium(tmp_path, "--dump-dom", page.as_uri() + "?failures=1"))
    assert rows == {"truth/a"}                           # truth/evil and truth/c have a FAIL
    _, cells = _hidden_rows_and_cells(_chromium(tmp_path, "--dump-dom", page.as_uri() + "?device=lavapipe-w8"))
    assert {d for _, d in cells} == {"lavapipe-w4"}
    rows, _ = _hidden_rows_and_cells(_chromium(tmp_path, "--dump-dom", page.as_uri() + "?family=truth&failures=1"))
    assert rows == {"truth/a"}                           # a family link's filter, with the others


def test_the_overview_comes_before_any_list_of_cells(tmp_path, results):
    page = tmp_path / "scoreboard.html"
    page.write_text(render.html(results), encoding="utf-8")
    dom = _chromium(tmp_path, "--dump-dom", page.as_uri())
    at = {name: dom.index(marker) for name, marker in (("overview", 'id="overview"'), ("families", 'id="families"'),
                                                        ("failed", "Failed cells"), ("matrix", 'id="scoreboard"'))}
    assert at["overview"] < at["families"] < at["failed"] < at["matrix"], at
    assert re.search(r'<table class="overview">.*?<th>turns</th>', dom, re.S)

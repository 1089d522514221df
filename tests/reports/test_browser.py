"""The HTML pages in a real browser (Selenium driving Debian's chromium through
chromium-driver), in a 1400x1000 window: on the scoreboard the overview and the first rows of
the per-family table are on the first screen, a family cell filters the matrix, the flaky
cells start collapsed, a regression is marked, a stale expectation is listed, a hostile case
summary's script never runs, and the address's filters hide the right rows; the history page
charts three runs and puts the latest regression first; the bench page has its charts; and
none of them loads anything from the web. The page ``warpboard run --html`` writes for three
translators on lavapipe is opened too, or, with ``WARPBOARD_PAGE=PATH``, the page
``make scoreboard`` wrote (the scoreboard CI job).

Each test keeps a screenshot: in ``WARPBOARD_SCREENSHOTS`` where set (the CI job uploads
them), else in its temporary folder. Skipped where selenium or /usr/bin/chromedriver is
missing (``pip install .[test]`` and ci/setup.sh bring them)."""
from __future__ import annotations

import copy
import json
import os
import shutil
from pathlib import Path

import pytest
from warpboard.harness.run import engine
from warpboard.reports import bench_page, history, history_page, render

from support.paths import library_case

webdriver = pytest.importorskip("selenium.webdriver")
# the tests share one chromium (``browser``): on one worker, started once
pytestmark = [pytest.mark.skipif(not shutil.which("chromedriver"), reason="needs chromium-driver"),
              pytest.mark.xdist_group("browser")]

from selenium.webdriver.common.by import By  # noqa: E402  (after the skip: selenium may be missing)


WIDTH, HEIGHT = 1400, 1000


@pytest.fixture
def shot(tmp_path, request):
    """``shot(browser)``: the window as a PNG named after the test, kept (see the module's docstring)."""
    folder = Path(os.environ.get("WARPBOARD_SCREENSHOTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)

    def take(browser) -> Path:
        path = folder / f"{request.node.name}.png"
        assert browser.save_screenshot(str(path)) and path.stat().st_size > 1000
        return path
    return take


def _first_screen(browser, css: str):
    """The element, which must be shown within the window's first screen."""
    found = browser.find_element(By.CSS_SELECTOR, css)
    viewport = browser.execute_script("return window.innerHeight")
    assert found.is_displayed() and found.rect["y"] < viewport, (css, found.rect, viewport)
    return found


def _offline(browser) -> None:
    resources = browser.execute_script("return performance.getEntriesByType('resource').map(e => e.name)")
    assert not [r for r in resources if r.startswith("http")]


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    """One chromium for the module's tests (each opens its own page)."""
    options = webdriver.ChromeOptions()
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 f"--window-size={WIDTH},{HEIGHT}", f"--user-data-dir={tmp_path_factory.mktemp('profile')}"):
        options.add_argument(flag)
    options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
    service = webdriver.ChromeService(executable_path=shutil.which("chromedriver"))
    driver = webdriver.Chrome(options=options, service=service)
    yield driver
    driver.quit()


@pytest.fixture
def three_translators(results):
    """The fixture run with a third translator, a flaky cell and another case family."""
    doc = copy.deepcopy(results)
    doc["translators"] = ["turns", "subgroup-native", "mine"]
    doc["cases"].append({**doc["cases"][0], "id": "vote/x", "summary": "a vote"})
    extra = []
    for r in doc["results"]:
        for t in ("subgroup-native", "mine"):
            extra.append({**r, "translator": t})
    doc["results"] += extra
    doc["results"] += [{**doc["results"][0], "case": "vote/x", "device": d, "translator": t}
                       for d in ("lavapipe-w4", "lavapipe-w8") for t in ("turns", "subgroup-native", "mine")]
    doc["results"][-1] = {**doc["results"][-1], "status": "FLAKY", "message": "failed once, then passed"}
    doc["stale_expectations"] = [{"where": "ci/expectations.txt:12", "rule": "lavapipe-w4 truth/a",
                                  "cells": ["truth/a on lavapipe-w4"]}]
    return doc


def test_the_board_at_a_glance_in_chromium(browser, tmp_path, three_translators, baseline, shot):
    page = tmp_path / "scoreboard.html"
    page.write_text(render.html(three_translators, baseline), encoding="utf-8")
    browser.get(page.as_uri())
    overview = _first_screen(browser, "table.overview")
    assert overview.rect["y"] + overview.rect["height"] < HEIGHT       # the whole overview
    rows = [r.find_element(By.TAG_NAME, "th").text for r in overview.find_elements(By.CSS_SELECTOR, "tr")[1:]]
    assert rows == ["turns", "subgroup-native", "mine"]
    first_family = browser.find_elements(By.CSS_SELECTOR, "table.families tr")[1]
    assert first_family.rect["y"] + first_family.rect["height"] < browser.execute_script("return window.innerHeight")
    shot(browser)
    flaky = browser.find_element(By.CSS_SELECTOR, "details.listed")
    assert flaky.get_attribute("open") is None and "Flaky cells (1)" in flaky.text
    assert "was PASS" in browser.find_element(By.CSS_SELECTOR, 'td[data-case="truth/evil"][data-device="lavapipe-w8"]').text
    assert "Stale expectations (1)" in browser.page_source and "truth/a on lavapipe-w4 passed" in browser.page_source
    browser.find_element(By.CSS_SELECTOR, 'table.families a[data-family="vote"]').click()
    shown = [r.get_attribute("data-family") for r in browser.find_elements(By.CSS_SELECTOR, "table.matrix tr[data-family]")
             if r.is_displayed()]
    assert shown == ["vote"]
    _offline(browser)


def test_the_history_of_three_runs_in_chromium(browser, tmp_path, results, baseline, shot):
    """Three runs, oldest first: the chart is drawn, and the latest run's regression heads
    the changes."""
    third = copy.deepcopy(results)
    third["created"] = "2026-12-02T20:00:00Z"
    third["results"] = [{**r, "status": "FAIL"} if (r["case"], r["device"]) == ("truth/a", "lavapipe-w8") else r
                        for r in third["results"]]
    folder = tmp_path / "runs"
    folder.mkdir()
    for name, doc in (("old.json", baseline), ("mid.json", results), ("new.json", third)):
        (folder / name).write_text(json.dumps(doc))
    page = tmp_path / "history.html"
    page.write_text(history_page.page(history.runs_in([folder])), encoding="utf-8")
    browser.get(page.as_uri())
    chart = _first_screen(browser, "figure.chart svg")
    assert chart.rect["height"] > 200
    first = browser.find_elements(By.CSS_SELECTOR, "table.changes tr")[1]
    assert first.get_attribute("data-run") == "3" and first.get_attribute("data-regression") == "true"
    assert "truth/a" in first.text and "PASS → FAIL (regression)" in first.text
    shot(browser)
    _offline(browser)


def test_the_bench_page_plots_each_kernel_in_chromium(browser, tmp_path, shot):
    rows = [{"case": "bench/bench_vote_loop", "device": "gpu", "mode": m, "gpu_s": {"median": t}}
            for m, t in (("turns", 0.0031), ("subgroup-native", 0.0012), ("structured", 0.0009))]
    page = tmp_path / "bench.html"
    page.write_text(bench_page.page({"rows": rows, "native": {"bench_vote_loop_ms": 0.8}}), encoding="utf-8")
    browser.get(page.as_uri())
    chart = _first_screen(browser, "figure.chart svg")
    labels = chart.text
    assert all(m in labels for m in ("turns", "subgroup-native", "structured", "native"))
    shot(browser)
    _offline(browser)


def test_the_page_a_run_writes_in_chromium(browser, tmp_path, lavapipe_config, shot):
    """The page of a real run (``WARPBOARD_PAGE``: the one ``make scoreboard`` wrote; else a
    run of two cases, three translators, on lavapipe-w8): the overview on the first screen,
    every translator in it, and a family filter that leaves only its rows."""
    path = os.environ.get("WARPBOARD_PAGE")
    if path:
        page = Path(path)
    else:
        cases = [library_case(c) for c in ("basic/bit_ops", "vote/vote_uni")]
        options = engine.Options(retries=0, translators=({"name": "turns"}, {"name": "subgroup-native"},
                                                         {"name": "structured"}))
        doc = engine.run_matrix(cases, [lavapipe_config(8)], interp=False, options=options, jobs=1)
        page = tmp_path / "scoreboard.html"
        page.write_text(render.html(doc), encoding="utf-8")
    browser.get(page.resolve().as_uri())
    overview = _first_screen(browser, "table.overview")
    translators = [r.find_element(By.TAG_NAME, "th").text for r in overview.find_elements(By.CSS_SELECTOR, "tr")[1:]]
    assert {"turns", "subgroup-native", "structured"} <= set(translators), translators
    _first_screen(browser, "table.families tr + tr")
    shot(browser)
    link = browser.find_elements(By.CSS_SELECTOR, "table.families a[data-family]")[0]
    family = link.get_attribute("data-family")
    link.click()
    shown = {r.get_attribute("data-family") for r in browser.find_elements(By.CSS_SELECTOR, "table.matrix tr[data-family]")
             if r.is_displayed()}
    assert shown == {family}
    _offline(browser)


def _shown(browser, uri: str) -> tuple[set[str], set[tuple[str, str]]]:
    """(cases whose matrix row the page's filters hid, (case, device) cells they hid) at ``uri``."""
    browser.get(uri)
    rows = browser.execute_script("return [...document.querySelectorAll('table.matrix tr.hidden > th')]"
                                  ".map(e => e.textContent.trim())")
    cells = browser.execute_script("return [...document.querySelectorAll('td.hidden[data-case]')]"
                                   ".map(e => [e.dataset.case, e.dataset.device])")
    return set(rows), {tuple(c) for c in cells}


def test_the_page_escapes_marks_changes_and_orders_its_sections(browser, tmp_path, results, baseline):
    """The hostile summary's script never ran; each cell says what it was before; the legend
    names every status; the overview and families come before any list of cells."""
    page = tmp_path / "scoreboard.html"
    page.write_text(render.html(results, baseline), encoding="utf-8")
    browser.get(page.as_uri())
    assert browser.title == "warpboard scoreboard"
    cell = lambda case, device: "".join(browser.find_element(   # noqa: E731
        By.CSS_SELECTOR, f'td[data-case="{case}"][data-device="{device}"]').get_attribute("textContent").split())
    assert cell("truth/evil", "lavapipe-w8") == "FAILwasPASS" and cell("truth/a", "lavapipe-w4") == "PASSwasFAIL"
    assert cell("truth/c", "lavapipe-w4") == "UNSUPPORTED"
    legend = browser.find_element(By.CSS_SELECTOR, "ul.status-legend").get_attribute("textContent")
    assert all(s in legend for s in ("PASS", "FAIL", "XFAIL", "LIVELOCK", "CRASH", "not run on this device"))
    dom = browser.page_source
    at = [dom.index(m) for m in ('id="overview"', 'id="families"', "Failed cells", 'id="scoreboard"')]
    assert at == sorted(at), at


def test_the_filters_hide_rows_and_columns_from_the_address(browser, tmp_path, results):
    page = tmp_path / "scoreboard.html"
    page.write_text(render.html(results), encoding="utf-8")
    assert _shown(browser, page.as_uri()) == (set(), set())                  # no filter: everything shown
    assert _shown(browser, page.as_uri() + "?failures=1")[0] == {"truth/a"}   # evil and c have a FAIL
    assert {d for _, d in _shown(browser, page.as_uri() + "?device=lavapipe-w8")[1]} == {"lavapipe-w4"}
    assert _shown(browser, page.as_uri() + "?family=truth&failures=1")[0] == {"truth/a"}

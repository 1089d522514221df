"""The HTML scoreboard in a real browser (Selenium driving Debian's chromium through
chromium-driver): the overview is on the first screen, a family cell filters the matrix, the
flaky cells start collapsed, a regression is marked, and the page loads nothing from the web.

Skipped where selenium or /usr/bin/chromedriver is missing (``pip install .[test]`` and
ci/setup.sh bring them)."""
from __future__ import annotations

import copy
import shutil

import pytest
from warpboard.reports import render

webdriver = pytest.importorskip("selenium.webdriver")
pytestmark = pytest.mark.skipif(not shutil.which("chromedriver"), reason="needs chromium-driver")

from selenium.webdriver.common.by import By  # noqa: E402  (after the skip: selenium may be missing)


@pytest.fixture
def browser(tmp_path):
    options = webdriver.ChromeOptions()
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--window-size=1280,800", f"--user-data-dir={tmp_path / 'profile'}"):
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
    return doc


def test_the_board_at_a_glance_in_chromium(browser, tmp_path, three_translators, baseline):
    page = tmp_path / "scoreboard.html"
    page.write_text(render.html(three_translators, baseline), encoding="utf-8")
    browser.get(page.as_uri())
    overview = browser.find_element(By.CSS_SELECTOR, "table.overview")
    assert overview.is_displayed() and overview.rect["y"] + overview.rect["height"] < 800   # the first screen
    rows = [r.find_element(By.TAG_NAME, "th").text for r in overview.find_elements(By.CSS_SELECTOR, "tr")[1:]]
    assert rows == ["turns", "subgroup-native", "mine"]
    flaky = browser.find_element(By.CSS_SELECTOR, "details.listed")
    assert flaky.get_attribute("open") is None and "Flaky cells (1)" in flaky.text
    assert "was PASS" in browser.find_element(By.CSS_SELECTOR, 'td[data-case="truth/evil"][data-device="lavapipe-w8"]').text
    browser.find_element(By.CSS_SELECTOR, 'table.families a[data-family="vote"]').click()
    shown = [r.get_attribute("data-family") for r in browser.find_elements(By.CSS_SELECTOR, "table.matrix tr[data-family]")
             if r.is_displayed()]
    assert shown == ["vote"]
    resources = browser.execute_script("return performance.getEntriesByType('resource').map(e => e.name)")
    assert not [r for r in resources if r.startswith("http")]

"""The board at a glance: translators x devices and families x columns as tallies, and launch
times against turns on the same device."""
import math

from warpboard.reports import render, summary


def _cell(case, device, status, translator="turns", run_s=None, clock="device"):
    cell = {"case": case, "device": device, "status": status, "translator": translator}
    if device == "interp":
        cell.pop("translator")
    if run_s is not None:
        cell.update(run_s=run_s, run_clock=clock)
    return cell


def _doc(cells):
    cases = sorted({c["case"] for c in cells})
    return {"version": 2, "translators": ["turns", "mine"], "cases": [{"id": c} for c in cases],
            "devices": [{"id": d} for d in ("gpu", "interp")], "results": cells}


DOC = _doc([
    _cell("vote/a", "gpu", "PASS", run_s=1.0), _cell("vote/a", "gpu", "PASS", "mine", run_s=2.0),
    _cell("vote/b", "gpu", "PASS", run_s=1.0), _cell("vote/b", "gpu", "PASS", "mine", run_s=8.0),
    _cell("spin/c", "gpu", "XFAIL"), _cell("spin/c", "gpu", "FAIL", "mine"),
    _cell("spin/d", "gpu", "FLAKY"), _cell("spin/d", "gpu", "UNSUPPORTED", "mine"),
    *[_cell(c, "interp", "PASS") for c in ("vote/a", "vote/b", "spin/c", "spin/d")],
])


def test_the_overview_tallies_each_translator_on_each_device():
    translators, devices, tallies = summary.overview(DOC)
    assert translators == ["turns", "mine", "reference"] and devices == ["gpu", "interp"]
    turns, mine = tallies[("turns", "gpu")], tallies[("mine", "gpu")]
    assert (turns.passed, turns.expected, turns.flaky, turns.wrong, turns.ran) == (2, 1, 1, 0, 4)
    assert (mine.passed, mine.wrong, mine.skipped, mine.ran) == (2, 1, 1, 3)
    assert mine.text() == "2/3 (1 wrong); 1 not run"
    assert tallies[("reference", "interp")].text() == "4/4"


def test_families_are_the_first_folder_of_the_case_ids():
    names, columns, tallies = summary.families(DOC)
    assert names == ["spin", "vote"] and "mine:gpu" in columns
    assert tallies[("spin", "mine:gpu")].wrong == 1 and tallies[("vote", "mine:gpu")].passed == 2


def test_speed_is_the_geometric_mean_over_the_cases_both_pass():
    _, _, found = summary.speed(DOC)
    assert math.isclose(found[("mine", "gpu")].ratio, 4.0) and found[("mine", "gpu")].cases == 2
    assert found[("turns", "gpu")].ratio == 1.0 and found[("mine", "gpu")].text() == "×4.00 over 2"


def test_the_markdown_opens_with_the_overview():
    text = render.markdown(DOC)
    assert text.index("### Translators × devices") < text.index("Failed cells") < text.index("Scoreboard:")
    assert "×4.00 over 2" in text and "2/3 (1 wrong); 1 not run" in text


def test_times_over_the_chip_where_captured_cases_carry_it_and_only_on_nvidia():
    doc = _doc([_cell("cap/a", "nvidia-h100", "PASS", run_s=0.004), _cell("cap/a", "nvidia-h100", "PASS", "mine", run_s=0.001),
                _cell("cap/b", "nvidia-h100", "PASS", run_s=0.009), _cell("cap/b", "nvidia-h100", "FAIL", "mine", run_s=0.002),
                _cell("cap/a", "lavapipe-w8", "PASS", run_s=0.5), _cell("cap/c", "nvidia-h100", "PASS", run_s=1.0)])
    doc["devices"] = [{"id": "nvidia-h100", "driver_name": "NVIDIA"}, {"id": "lavapipe-w8", "driver_name": "llvmpipe"}]
    doc["cases"] = [{"id": "cap/a", "provenance": {"chip_ms": 1.0}}, {"id": "cap/b", "provenance": {"chip_ms": 1.0}},
                    {"id": "cap/c", "provenance": {}}]
    found = summary.over_chip(doc)
    assert set(found) == {("turns", "nvidia-h100"), ("mine", "nvidia-h100")}     # not lavapipe's, not cap/c
    assert math.isclose(found[("turns", "nvidia-h100")].ratio, 6.0) and found[("turns", "nvidia-h100")].cases == 2
    assert math.isclose(found[("mine", "nvidia-h100")].ratio, 1.0) and found[("mine", "nvidia-h100")].cases == 1
    headers, rows = summary.speed_table(doc)
    assert headers == ["translator", "nvidia-h100", "lavapipe-w8"]
    assert rows[0][1] == "chip ×6.00 over 2" and rows[1][1] == "×0.25 over 1; chip ×1.00 over 1"

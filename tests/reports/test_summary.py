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

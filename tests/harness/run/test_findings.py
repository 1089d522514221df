"""Attribution (harness.run.findings): a failure one driver shows and another does not is the
driver's; one every driver shows is the translator's."""
from warpboard.harness.run.findings import attribute


def cell(case, device, status, translator="turns"):
    return {"case": case, "device": device, "status": status, "translator": None if device == "interp" else translator}


def test_one_driver_failing_is_a_driver_finding_all_failing_a_translator_finding():
    cells = [cell("a", "nvidia", "PASS"), cell("a", "lavapipe-w4", "FAIL"), cell("a", "interp", "PASS"),
             cell("b", "nvidia", "FAIL"), cell("b", "lavapipe-w4", "TIMEOUT"), cell("b", "interp", "PASS"),
             cell("c", "nvidia", "FAIL"), cell("c", "lavapipe-w4", "UNSUPPORTED"),
             cell("d", "nvidia", "FAIL"), cell("d", "lavapipe-w4", "FAIL"), cell("d", "interp", "FAIL")]
    found = attribute(cells)
    assert found == {"driver": ["a on lavapipe-w4 (turns)"],
                     "translator": ["b on nvidia (turns)", "b on lavapipe-w4 (turns)"]}
    assert [c.get("finding") for c in cells] == [None, "driver", None, "translator", "translator", None,
                                                   None, None, None, None, None]


def test_each_translator_is_judged_on_its_own_cells():
    cells = [cell("a", "nvidia", "PASS", "turns"), cell("a", "lavapipe-w4", "PASS", "turns"),
             cell("a", "nvidia", "FAIL", "native"), cell("a", "lavapipe-w4", "XFAIL", "native")]
    assert attribute(cells)["translator"] == ["a on nvidia (native)", "a on lavapipe-w4 (native)"]
    cells[2]["status"] = "PASS"
    assert attribute(cells) == {"driver": ["a on lavapipe-w4 (native)"], "translator": []}
    assert "finding" not in cells[2]          # a finding of an earlier attribution is gone

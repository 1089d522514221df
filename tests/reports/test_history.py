"""warpboard report --history: pass counts per column over runs in created order, and every
cell that changed status from one run to the next, regressions marked."""
import json
import re

from warpboard.reports import cli, history


def _run(tmp_path, name, created, statuses):
    doc = {"version": 2, "created": created, "translators": ["turns"],
           "cases": [{"id": c} for c in statuses], "devices": [{"id": "gpu"}],
           "results": [{"case": c, "device": "gpu", "status": s, "translator": "turns"} for c, s in statuses.items()]}
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return path


def test_history_orders_runs_counts_and_marks_changes(tmp_path, capsys):
    folder = tmp_path / "runs"
    folder.mkdir()
    _run(folder, "c.json", "2026-12-03T00:00:00Z", {"a/x": "PASS", "a/y": "FAIL", "b/z": "PASS"})
    _run(folder, "a.json", "2026-12-01T00:00:00Z", {"a/x": "PASS", "a/y": "PASS", "b/z": "PASS"})
    _run(folder, "b.json", "2026-12-02T00:00:00Z", {"a/x": "FAIL", "a/y": "PASS", "b/z": "FLAKY"})
    runs = history.runs_in([folder])
    assert [name for name, _ in runs] == ["a.json", "b.json", "c.json"]
    columns, tallies = history.counts(runs)
    assert columns == ["gpu"] and [t.passed for t in tallies["gpu"]] == [3, 1, 2]
    found = history.changes(runs)
    assert [(c.run, c.case, c.before, c.after, c.regression) for c in found] == [
        (1, "a/x", "PASS", "FAIL", True), (1, "b/z", "PASS", "FLAKY", False),
        (2, "a/x", "FAIL", "PASS", False), (2, "a/y", "PASS", "FAIL", True), (2, "b/z", "FLAKY", "PASS", False)]
    assert cli.report_main([str(folder), "--history", "--fail-on", "regressions"]) == 1
    text = capsys.readouterr().out
    assert "3 runs, oldest first" in text and "REGRESSION a/y on gpu: PASS -> FAIL" in text
    assert cli.report_main([str(folder / "a.json"), str(folder / "b.json")]) == 2


def test_the_history_page_charts_the_columns_and_lists_regressions_first(tmp_path):
    folder = tmp_path / "runs"
    folder.mkdir()
    _run(folder, "a.json", "2026-12-01T00:00:00Z", {"a/x": "PASS", "a/y": "PASS"})
    _run(folder, "b.json", "2026-12-02T00:00:00Z", {"a/x": "FAIL", "a/y": "PASS"})
    _run(folder, "c.json", "2026-12-03T00:00:00Z", {"a/x": "PASS", "a/y": "FAIL"})
    out = tmp_path / "history.html"
    assert cli.report_main([str(folder), "--history", "--format", "html", "-o", str(out)]) == 0
    text = out.read_text()
    assert text.count("<svg") == 1 and not re.search(r"<script[^>]*\bsrc=", text)   # one chart, nothing from the web
    assert "3 runs, oldest first; 3 cells changed status, 2 regressions" in text
    changes = text[text.index("class='changes'"):]
    # the latest run first, its regression at the top
    assert changes.index("data-run='3' data-regression='true'") < changes.index("data-run='3' data-regression='false'") \
        < changes.index("data-run='2'")
    assert "a/y</td><td>gpu</td><td>PASS → FAIL (regression)" in changes

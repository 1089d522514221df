"""Tests for reports/: tables, baseline comparison, HTML escaping and heatmap, merge.

The documents (``results``, ``baseline``, ``result_rows``) are fixtures of tests/conftest.py."""
from __future__ import annotations

import copy
import html

import markupsafe
import json
import re

import pytest
from warpboard.harness.run.results import Status
from warpboard.reports import collect, page, render
from warpboard.reports.cli import merge_main, report_main
from warpboard.reports.merge import merge


def _md_table(text: str) -> dict[str, dict[str, str]]:
    """Parse the first markdown table whose header starts with 'case' into
    {row label: {column: cell}}. The matrix's grouped headers (translators over the first
    row's devices) become column ids as the reports name them: the device for turns and the
    interpreter ("reference"), TRANSLATOR:DEVICE otherwise."""
    lines = text.splitlines()
    start = next(i for i, l in enumerate(lines) if re.match(r"\|\s*case\s*\|", l))
    split = lambda l: [c.strip() for c in re.split(r"(?<!\\)\|", l.strip())[1:-1]]
    header = split(lines[start])
    first = split(lines[start + 2]) if len(lines) > start + 2 else []
    if first and first[0] == "*device*":
        group, named = "", []
        for top, dev in zip(header[1:], first[1:]):
            group = top.removesuffix(" →") or group
            dev = dev.strip("*").replace("\\", "")
            named.append(dev if group in ("turns", "reference") else f"{group}:{dev}")
        header, start = ["case"] + named, start + 1
    table = {}
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        row = split(line)
        table[row[0]] = dict(zip(header[1:], row[1:]))
    return table


# --------------------------------------------------------------------------- collect

def test_load_rejects_other_versions(tmp_path, results):
    path = tmp_path / "r.json"
    path.write_text(json.dumps(dict(results, version=99)))
    with pytest.raises(collect.ResultsError, match="version 99 is not supported"):
        collect.load(path)
    path.write_text(json.dumps(results))
    assert collect.load(path)["host"] == "ci-host"


def test_frame_and_scoreboard(results):
    df = collect.frame(results)
    assert len(df) == 6 and {"case", "device", "status", "turns", "time_s",
                             "mismatch_count"} <= set(df.columns)
    del results["results"][0]                       # truth/a on w4 now missing
    board = collect.scoreboard(results)
    assert list(board.columns) == ["lavapipe-w4", "lavapipe-w8"]
    assert list(board.index) == ["truth/a", "truth/evil", "truth/c"]
    assert board.at["truth/a", "lavapipe-w4"] == collect.MISSING
    assert board.at["truth/evil", "lavapipe-w8"] == "FAIL"


def test_every_status_has_a_colour():
    assert {s.value for s in Status} <= set(page.STATUS_COLOURS)


# --------------------------------------------------------------------------- terminal / markdown

def test_terminal_cells_and_summary(results):
    text = render.terminal(results)
    row = next(l for l in text.splitlines() if l.startswith("truth/evil"))
    assert row.split() == ["truth/evil", "PASS", "FAIL"]
    assert re.search(r"lavapipe-w4\s+2/3 pass \(UNSUPPORTED 1\)", text)
    assert re.search(r"lavapipe-w8\s+1/3 pass \(FAIL 2\)", text)


def test_markdown_cells_legend_and_counts(results, result_rows):
    text = render.markdown(results)
    table = _md_table(text)
    assert table["truth/a"] == {"lavapipe-w4": "PASS", "lavapipe-w8": "PASS"}
    assert table["truth/evil"] == {"lavapipe-w4": "PASS", "lavapipe-w8": "**FAIL**"}
    assert table["truth/c"]["lavapipe-w4"] == "UNSUPPORTED"
    assert table["**passed**"] == {"lavapipe-w4": "2/3", "lavapipe-w8": "1/3"}
    assert "Mesa 22.3.6" in text and "1.3.230" in text
    assert "<script>" not in text and html.escape(result_rows.evil, quote=False) in text


def test_markdown_baseline_sections(results, baseline):
    text = render.markdown(results, baseline)
    sections = {m.group(1): m.group(2) for m in
                re.finditer(r"^### (.+?)\n\n(.*?)(?=\n\n|\Z)", text, re.M | re.S)}
    assert "truth/evil on lavapipe-w8: PASS -> FAIL" in sections["Regressions"]
    assert "truth/a on lavapipe-w4: FAIL -> PASS" in sections["Fixes"]
    assert "truth/c" in sections["New cases"]
    cmp = collect.compare(baseline, results)
    assert [(c.case, c.device) for c in cmp.regressions] == [("truth/evil", "lavapipe-w8")]
    assert [(c.case, c.device) for c in cmp.fixes] == [("truth/a", "lavapipe-w4")]


# --------------------------------------------------------------------------- html

def test_html_escapes_and_draws_heatmap(results, baseline, result_rows):
    page = render.html(results, baseline)
    assert result_rows.evil not in page and "<script>document" not in page
    escaped = str(markupsafe.escape(result_rows.evil))
    assert page.count(escaped) == 6     # summary (title + details), 2 messages, 2 in the failed list
    assert len(re.findall(r"<script>", page)) == 1          # only the page's own script
    cell = re.search(r'<td class="st st-FAIL[^"]*"[^>]*data-case="truth/evil" '
                     r'data-device="lavapipe-w8">(.*?)</td>', page)
    assert cell and ">FAIL</a>" in cell.group(1) and "was PASS" in cell.group(1)
    section = page[page.index('<details id="cell-0"'):page.index("</details>")]
    assert "truth/evil" in section
    heat = re.findall(r'<td class="hm-(ok|mismatch)" data-warp="(\d+)" data-lane="(\d+)" '
                      r'title="([^"]*)"', section)
    assert len(heat) == 2 * 32                               # 64 threads: 2 warps x 32 lanes
    bad = {(int(w), int(l)) for k, w, l, _ in heat if k == "mismatch"}
    assert bad == {(1, 3), (1, 4)}
    title = next(t for k, w, l, t in heat if (w, l) == ("1", "3"))
    assert "thread 35" in title and "expected 0xffffffff" in title and "actual 0x00000023" in title
    assert "<td class=\"mono\">0xffffffff</td>" in section


def test_write_all(tmp_path, results):
    paths = render.write_all(results, tmp_path / "out")
    assert {p.name for p in paths.values()} == {"scoreboard.md", "scoreboard.html",
                                                "scoreboard.json"}
    assert json.loads(paths["json"].read_text()) == results


# --------------------------------------------------------------------------- merge / cli

def test_merge_union_and_later_run_wins(results, result_rows):
    lava = copy.deepcopy(results)
    r = result_rows
    gpu = {"version": 1, "created": "2026-12-01T21:00:00Z", "warpboard": "0.1.0", "host": "gpu",
           "devices": [r.device("nvidia", 32), r.device("lavapipe-w8", 8)],
           "cases": [r.case("truth/a"), r.case("truth/gpu_only")],
           "results": [r.ok("truth/a", "nvidia"), r.ok("truth/gpu_only", "nvidia"),
                       r.ok("truth/evil", "lavapipe-w8")]}
    merged = merge([gpu, lava])                              # argument order != time order
    assert collect.device_ids(merged) == ["nvidia", "lavapipe-w8", "lavapipe-w4"]
    assert set(collect.case_ids(merged)) == {"truth/a", "truth/evil", "truth/c", "truth/gpu_only"}
    board = collect.scoreboard(merged)
    assert board.at["truth/evil", "lavapipe-w8"] == "PASS"   # from the later (gpu) run
    assert board.at["truth/c", "lavapipe-w8"] == "FAIL"      # only the earlier run had it
    assert board.at["truth/gpu_only", "lavapipe-w4"] == collect.MISSING
    assert len(merged["results"]) == 8
    assert any("lavapipe-w8" in n for n in merged["notes"])
    assert collect.check(merged) is merged


def test_cli_report_and_merge(tmp_path, results, baseline, capsys):
    new, old = tmp_path / "new.json", tmp_path / "old.json"
    new.write_text(json.dumps(results))
    old.write_text(json.dumps(baseline))
    assert report_main([str(new), "--against", str(old), "--format", "markdown",
                        "-o", str(tmp_path / "s.md")]) == 0
    assert "### Regressions" in (tmp_path / "s.md").read_text()
    assert report_main([str(new), "--fail-on", "failures"]) == 1
    assert "truth/evil" in capsys.readouterr().out
    assert merge_main([str(old), str(new), "-o", str(tmp_path / "m.json")]) == 0
    assert len(json.loads((tmp_path / "m.json").read_text())["cases"]) == 3
    (tmp_path / "v3.json").write_text(json.dumps(dict(results, version=3)))
    assert report_main([str(tmp_path / "v3.json")]) == 2
    assert "not supported" in capsys.readouterr().err

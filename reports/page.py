"""The HTML scoreboard: one self-contained page, rendered by Jinja2 with autoescaping from
``templates/scoreboard.html``, so that no case id, message or printed line reaches the page
unescaped. First the run's counts and the failed and flaky cells (each with the command that
reproduces it), then the device legend, the coloured matrix with filters (failures only, one
device, one tag), the status legend, (with a baseline) the changes, and a details section per
cell worth a look: message, command, heatmap of the threads that differ, mismatch list,
printf output, traceback. The filters also come from the address: ``?failures=1&device=ID&tag=T``.
"""
from __future__ import annotations

import re
from typing import Any

import jinja2
from markupsafe import Markup, escape

from warpboard.harness.run.results import Status

from . import collect, printf_view, summary, verdict
from .collect import MISSING, Comparison

NOT_RUN_COLOUR, NOT_RUN_MEANING = "#eeeeee", "not run on this device"
# the background of a cell of each status, green to red, and its legend phrase (the status's own)
COLOURS = {
    Status.PASS: "#2e7d32",
    Status.XFAIL: "#7cb342",
    Status.UNSUPPORTED: "#9e9e9e",
    Status.PENDING: "#90a4ae",
    Status.XPASS: "#f9a825",
    Status.FLAKY: "#ef6c00",
    Status.FAIL: "#c62828",
    Status.LIVELOCK: "#6a1b9a",
    Status.FAULT: "#ad1457",
    Status.TIMEOUT: "#4527a0",
    Status.DEVICE_LOST: "#311b92",
    Status.CRASH: "#000000",
    Status.ERROR: "#5d4037",
}
STATUS_COLOURS = {**{s.value: COLOURS[s] for s in Status}, MISSING: NOT_RUN_COLOUR}
STATUS_MEANING = {**{s.value: s.meaning for s in Status}, MISSING: NOT_RUN_MEANING}
MAX_HEATMAP_WARPS = 64      # beyond this, only warps with listed mismatches are drawn
MISMATCH_COLUMNS = ["#", "buffer", "index", "thread", "warp", "lane", "expected", "actual", "xor"]

_CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:1.5em}
table{border-collapse:collapse;margin:.5em 0}
th,td{border:1px solid #ccc;padding:3px 7px;text-align:left;vertical-align:top}
th{background:#f4f4f4}.meta{color:#666}
td.st{color:#fff;font-weight:600;text-align:center}td.st a{color:inherit}
.was{display:block;font-weight:400;font-size:.8em}
.chg-regression{outline:3px solid #ff1744;outline-offset:-3px}
.chg-fix{outline:3px dashed #00e676;outline-offset:-3px}
.sw{display:inline-block;width:1em;height:1em;vertical-align:middle;margin-right:.3em}
table.hm td{width:11px;height:11px;padding:0;border:1px solid #fff}
table.hm th{font-size:9px;padding:0 2px;font-weight:400}
td.hm-ok{background:#c8e6c9}td.hm-mismatch{background:#d32f2f}
pre{background:#f6f6f6;padding:.5em;overflow:auto;max-height:20em}
pre.pf{margin:0;padding:0 .3em}
details{margin:.6em 0;border-left:4px solid #ccc;padding-left:.6em}
.filters label{margin-right:1.2em}.cmd code,code.cmd{background:#f6f6f6;padding:0 .3em}
tr.hidden,th.hidden,td.hidden{display:none}
table.overview td.tally{min-width:11em}.bar{height:6px;background:#e0e0e0;margin-bottom:2px}.bar div{height:6px;background:#2e7d32}
td.has-wrong{background:#ffebee}table.families td{text-align:center}
code,.mono{font-family:ui-monospace,monospace}
"""

_SCRIPT = """
function o(){var e=location.hash&&document.getElementById(location.hash.slice(1));if(e&&e.tagName==='DETAILS')e.open=true}
function f(){var only=document.getElementById('only-failures').checked,dev=document.getElementById('device-filter').value,
tag=document.getElementById('tag-filter').value,fam=document.getElementById('family-filter').value;
document.querySelectorAll('table.matrix tr[data-tags]').forEach(function(r){
var hide=(only&&r.dataset.fail!=='1')||(tag&&(' '+r.dataset.tags+' ').indexOf(' '+tag+' ')<0)||(fam&&r.dataset.family!==fam);
r.classList.toggle('hidden',hide)});
document.querySelectorAll('table.matrix [data-device]').forEach(function(c){c.classList.toggle('hidden',!!dev&&c.dataset.device!==dev)})}
addEventListener('hashchange',o);addEventListener('DOMContentLoaded',function(){o();
var q=new URLSearchParams(location.search);document.getElementById('only-failures').checked=q.get('failures')==='1';
document.getElementById('device-filter').value=q.get('device')||'';document.getElementById('tag-filter').value=q.get('tag')||'';
document.getElementById('family-filter').value=q.get('family')||'';f();
['only-failures','device-filter','tag-filter','family-filter'].forEach(function(i){document.getElementById(i).addEventListener('change',f)});
document.querySelectorAll('table.families a[data-family]').forEach(function(a){a.addEventListener('click',function(e){e.preventDefault();
document.getElementById('family-filter').value=a.dataset.family;document.getElementById('device-filter').value=a.dataset.column;f();
document.getElementById('scoreboard').scrollIntoView()})})});
"""

_ENV = jinja2.Environment(loader=jinja2.PackageLoader("warpboard.reports", "templates"),
                          autoescape=True, undefined=jinja2.StrictUndefined, keep_trailing_newline=True)


def hexword(value: Any) -> str:
    """A buffer word in hex, as 32-bit unsigned (64-bit if it does not fit)."""
    if value is None:
        return MISSING
    v = int(value)
    if v < 0:
        v &= 0xFFFFFFFF if v >= -(1 << 31) else 0xFFFFFFFFFFFFFFFF
    return f"0x{v:08x}"


def _status_class(status: str) -> str:
    return "st-MISSING" if status == MISSING else "st-" + re.sub(r"[^A-Za-z]", "", status)


def _status_style(status: str) -> str:
    colour = STATUS_COLOURS.get(status, "#37474f")
    text = "#555" if status == MISSING else "#fff"
    return f"background:{colour};color:{text}"


def _anchor(index: int) -> str:
    return f"cell-{index}"


# --------------------------------------------------------------------------- the matrix
def _cell(case: str, dev: str, status: str, anchor: str | None, cmp: Comparison | None,
          r: dict[str, Any] | None) -> dict:
    """One matrix cell: coloured status, linked to its details, marked if it changed; where
    its kernel printed, the first lines in its title."""
    classes, was = ["st", _status_class(status)], None
    change = cmp.change_for(case, dev) if cmp else None
    if change is not None:
        classes.append("chg-regression" if change in cmp.regressions else "chg-fix")
        was = change.before
    title = printf_view.tooltip(r) if r is not None and printf_view.has_output(r) else None
    return {"device": dev, "status": status, "anchor": anchor, "classes": " ".join(classes),
            "style": _status_style(status), "title": title, "was": was}


def _rows(results: dict[str, Any], anchors: dict, cmp: Comparison | None) -> list[dict]:
    board = collect.scoreboard(results)
    cases, by_key = collect.cases_by_id(results), collect.cells(results)
    rows = []
    for case, statuses in zip(board.index, board.values):
        info = cases[case]
        cells = [_cell(case, dev, st, anchors.get((case, dev)), cmp, by_key.get((case, dev)))
                 for dev, st in zip(board.columns, statuses)]
        rows.append({"case": case, "summary": info.get("summary") or "", "cells": cells,
                     "tags": " ".join(info.get("tags") or ()), "family": summary.family_of(case),
                     "fail": "1" if any(collect.is_failure(st) for st in statuses) else "0"})
    return rows


# --------------------------------------------------------------------------- the details
def _grid_shape(case: dict[str, Any], mismatches: list[dict[str, Any]]) -> tuple[int, int]:
    """(warps, lanes) of a case's heatmap, from its thread count or the mismatches."""
    lanes = int(case.get("warp_size") or 32)
    threads = case.get("threads")
    if not threads:
        threads = 1 + max((m["thread"] for m in mismatches if m.get("thread") is not None),
                          default=lanes - 1)
    return -(-int(threads) // lanes), lanes


def _placed(mismatches: list[dict[str, Any]], lanes: int) -> dict[tuple[int, int], list]:
    """Listed mismatches grouped by (warp, lane), deriving warp/lane from thread if needed."""
    where: dict[tuple[int, int], list] = {}
    for m in mismatches:
        warp, lane, thread = m.get("warp"), m.get("lane"), m.get("thread")
        if (warp is None or lane is None) and thread is not None:
            warp, lane = divmod(int(thread), lanes)
        if warp is not None and lane is not None:
            where.setdefault((int(warp), int(lane)), []).append(m)
    return where


def _heat_title(thread: int, found: list[dict[str, Any]]) -> str:
    if not found:
        return f"thread {thread}: ok"
    lines = [f"thread {thread}:"] + [
        f"{m.get('buffer')}[{m.get('index')}] expected {hexword(m.get('expected'))} "
        f"actual {hexword(m.get('actual'))}" for m in found[:4]]
    if len(found) > 4:
        lines.append(f"... {len(found) - 4} more")
    return "\n".join(lines)


def heatmap_rows(case: dict[str, Any], mismatches: list[dict[str, Any]]) -> dict | None:
    """A warps x lanes grid: a mismatch where a listed one falls, ok elsewhere; each cell's
    title names the thread and its expected/actual words. None when no mismatch has a place."""
    warps, lanes = _grid_shape(case, mismatches)
    where = _placed(mismatches, lanes)
    if not where:
        return None
    shown, hidden = range(warps), 0
    if warps > MAX_HEATMAP_WARPS:
        shown = sorted({w for w, _ in where})
        hidden = warps - len(shown)
    rows = [{"warp": w, "cells": [{"lane": lane, "kind": "mismatch" if where.get((w, lane)) else "ok",
                                   "title": _heat_title(w * lanes + lane, where.get((w, lane), []))}
                                  for lane in range(lanes)]} for w in shown]
    return {"lanes": list(range(lanes)), "rows": rows, "hidden": hidden}


def _mismatch_rows(mismatches: list[dict[str, Any]]) -> list[list]:
    rows = []
    for i, m in enumerate(mismatches):
        exp, act = m.get("expected"), m.get("actual")
        xor = hexword(int(exp) ^ int(act)) if exp is not None and act is not None else MISSING
        vals = [i, m.get("buffer"), m.get("index"), m.get("thread"), m.get("warp"),
                m.get("lane"), hexword(exp), hexword(act), xor]
        rows.append([MISSING if v is None else v for v in vals])
    return rows


def _details(results: dict[str, Any], r: dict[str, Any], case: dict[str, Any], anchor: str) -> dict:
    """The details of one cell: message, command, heatmap, mismatch list, printf, traceback."""
    mism = r.get("mismatches") or []
    total = int(r.get("mismatch_count") or len(mism))
    facts = [f"{k}: {r[k]}" for k in ("mode", "turns", "steps", "subgroup_size", "time_s") if r.get(k) is not None]
    return {"anchor": anchor, "case": r["case"], "device": verdict.where(r), "status": r["status"],
            "finding": r.get("finding"),
            "summary": case.get("summary"), "message": r.get("message"),
            "command": verdict.repro_command(results, r), "facts": ", ".join(facts),
            "mismatches": _mismatch_rows(mism), "total": total,
            "noun": "word differs" if total == 1 else "words differ",
            "capped": f" (first {len(mism)} listed; unlisted threads drawn as ok)" if total > len(mism) else "",
            "heatmap": heatmap_rows(case, mism) if mism else None,
            "printf": Markup(printf_view.html_block(r, escape)) if printf_view.has_output(r) else None,
            "traceback": r.get("traceback")}


def _detail_cells(results: dict[str, Any]) -> list[dict[str, Any]]:
    """The cells with a details section: those worth a closer look, and those that printed,
    in scoreboard order."""
    worth = {(r["case"], collect.column_of(r)) for r in collect.failing_cells(results)}
    by_key = collect.cells(results)
    return [by_key[(c, d)] for c in collect.case_ids(results) for d in collect.column_ids(results)
            if (c, d) in by_key and ((c, d) in worth or printf_view.has_output(by_key[(c, d)]))]


def _listed(results, cells, anchors) -> list[dict]:
    return [{"case": r["case"], "device": verdict.where(r), "status": r["status"], "finding": r.get("finding"),
             "anchor": anchors.get((r["case"], collect.column_of(r)), ""), "command": verdict.repro_command(results, r),
             "first_line": ((r.get("message") or "").strip().splitlines() or [""])[0]} for r in cells]


def _overview(results) -> dict:
    translators, devices, tallies = summary.overview(results)
    def cell(t):
        if t is None or not t.total_seen:
            return None
        return {"share": round(100 * t.share()), "text": t.text(), "wrong": t.wrong}
    return {"devices": devices, "rows": [{"translator": tr, "cells": [cell(tallies.get((tr, d))) for d in devices]}
                                         for tr in translators]}


def _speed(results) -> dict:
    headers, rows = summary.speed_table(results)
    return {"headers": headers, "rows": rows}


def _families(results) -> dict:
    names, columns, tallies = summary.families(results)
    def cell(t, col):
        if t is None or not t.ran:
            return {"text": "", "wrong": 0, "column": col}
        return {"text": f"{t.passed}/{t.ran}" + (f" ✗{t.wrong}" if t.wrong else ""), "wrong": t.wrong, "column": col}
    return {"names": names, "columns": columns,
            "rows": [{"family": f, "cells": [cell(tallies.get((f, c)), c) for c in columns]} for f in names]}


# --------------------------------------------------------------------------- the page
def html(results: dict[str, Any], baseline: dict[str, Any] | None = None) -> str:
    """The page (see the module's docstring)."""
    cmp = collect.compare(baseline, results) if baseline is not None else None
    cases = collect.cases_by_id(results)
    detail_cells = _detail_cells(results)
    anchors = {(r["case"], collect.column_of(r)): _anchor(i) for i, r in enumerate(detail_cells)}
    meta = (f"warpboard {results.get('warpboard') or '?'} · {results.get('created') or '?'}"
            + (f" · host {results['host']}" if results.get("host") else ""))
    tags = sorted({t for c in cases.values() for t in c.get("tags") or ()})
    changes = None if cmp is None else {
        "lists": [("Regressions", cmp.regressions), ("Fixes", cmp.fixes)], "new_cases": cmp.new_cases}
    return _ENV.get_template("scoreboard.html").render(
        css=Markup(_CSS), script=Markup(_SCRIPT), meta=meta, summary=verdict.summary_line(results),
        sections=[{"title": "Failed cells", "kind": "failed", "cells": _listed(results, verdict.failed(results), anchors),
                   "collapsed": ""},
                  {"title": "Flaky cells", "kind": "flaky", "cells": _listed(results, verdict.flaky(results), anchors),
                   "collapsed": "failed, then passed on retry"}],
        overview=_overview(results), families=_families(results), speed=_speed(results),
        stale=verdict.stale_lines(results, str), legend_headers=collect.LEGEND_HEADERS,
        legend_rows=collect.device_legend_rows(results), devices=collect.column_ids(results), tags=tags,
        groups=collect.column_groups(results),
        rows=_rows(results, anchors, cmp), passed=collect.summaries(results),
        legend_status=[{"status": s, "style": _status_style(s), "meaning": STATUS_MEANING[s]} for s in STATUS_COLOURS],
        changes=changes, mismatch_columns=MISMATCH_COLUMNS,
        details=[_details(results, r, cases.get(r["case"], {"id": r["case"]}), anchors[(r["case"], collect.column_of(r))])
                 for r in detail_cells],
        notes=results.get("notes") or [])

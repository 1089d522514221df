"""Render a results document as a terminal table, a markdown scoreboard or an HTML page.

All three views come from :mod:`reports.collect`, so they agree on cells and counts.
Text that comes from case files or from runs (ids, summaries, messages, tracebacks)
is untrusted: it is escaped for markdown and HTML, and stripped of control characters
for the terminal. The HTML page is self-contained (inline CSS, a three-line script).
"""
from __future__ import annotations

import html as _html
import json
import re
from pathlib import Path
from typing import Any

from tabulate import tabulate

from warpboard.harness.files import write_atomic
from warpboard.harness.run.results import Status

from . import collect, printf_view, verdict
from .collect import MISSING, Comparison

# --------------------------------------------------------------------------- helpers

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_MD_SPECIAL = re.compile(r"([\\`*_\[\]|~#!])")
MAX_MESSAGE = 200           # characters of a message shown in the markdown list


def plain(text: Any) -> str:
    """Text safe to print on a terminal: escape sequences and other control characters
    shown escaped (``\\x1b``), so they are visible and inert."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", str(text))


def md(text: Any) -> str:
    """Text safe inside a GitHub markdown table cell: HTML-escaped, markdown-inert,
    one line."""
    one_line = " ".join(plain(text).split())
    return _MD_SPECIAL.sub(r"\\\1", _html.escape(one_line, quote=False))


def esc(text: Any) -> str:
    """HTML-escape anything (attributes included)."""
    return _html.escape("" if text is None else str(text), quote=True)


def hexword(value: Any) -> str:
    """A buffer word in hex, as 32-bit unsigned (64-bit if it does not fit)."""
    if value is None:
        return MISSING
    v = int(value)
    if v < 0:
        v &= 0xFFFFFFFF if v >= -(1 << 31) else 0xFFFFFFFFFFFFFFFF
    return f"0x{v:08x}"


def _first_line(text: str, limit: int = MAX_MESSAGE) -> str:
    """The first line of a message, shortened to ``limit`` characters."""
    line = (text or "").strip().splitlines()[0] if (text or "").strip() else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"


def device_legend_rows(results: dict[str, Any]) -> list[list[str]]:
    """Rows of (id, name, driver, Vulkan API, subgroup size) for every device."""
    rows = []
    for dev in collect.devices_by_id(results).values():
        driver = " ".join(x for x in (dev.get("driver_name"), dev.get("driver_info")) if x)
        rows.append([dev["id"], dev.get("name") or "", driver,
                     dev.get("api_version") or "", str(dev.get("subgroup_size") or "")])
    return rows


LEGEND_HEADERS = ["device", "name", "driver", "Vulkan", "subgroup"]


def _comparison(results: dict[str, Any], baseline: dict[str, Any] | None) -> Comparison | None:
    return collect.compare(baseline, results) if baseline is not None else None


# --------------------------------------------------------------------------- terminal

def terminal(results: dict[str, Any], baseline: dict[str, Any] | None = None,
             tablefmt: str = "simple") -> str:
    """The scoreboard as a plain-text table: the run's counts first, one summary line per
    device, (with a baseline) the regressions, fixes and new cases, and last the failed and
    flaky cells with their messages and the commands that reproduce them."""
    board = collect.scoreboard(results)
    rows = [[plain(case)] + [plain(s) for s in row] for case, row in zip(board.index, board.values)]
    out = [plain(verdict.summary_line(results)), "",
           tabulate(rows, headers=["case"] + [plain(d) for d in board.columns], tablefmt=tablefmt), ""]
    width = max((len(d) for d in board.columns), default=0)
    for s in collect.summaries(results):
        out.append(f"{plain(s.device):<{width}}  {plain(s.line())}")
    if results.get("partial"):
        out += ["", "partial run: interrupted before every cell finished"]
    printed = printf_view.summary_lines(results, plain)
    if printed:
        out += ["", "printf output:", *(f"  {line}" for line in printed)]
    cmp = _comparison(results, baseline)
    if cmp is not None:
        out += ["", *_change_lines(cmp, plain)]
    out += verdict.closing_lines(results, plain)
    return "\n".join(out) + "\n"


def _change_lines(cmp: Comparison, quote) -> list[str]:
    """Regressions / Fixes / New cases as plain lines (terminal) using ``quote``."""
    out = []
    for title, changes in (("Regressions", cmp.regressions), ("Fixes", cmp.fixes)):
        out.append(f"{title}: {len(changes)}")
        out += [f"  {quote(c.case)} on {quote(c.device)}: {c.before} -> {c.after}"
                for c in changes]
    out.append(f"New cases: {len(cmp.new_cases)}")
    out += [f"  {quote(c)}" for c in cmp.new_cases]
    for title, gone in (("Devices gone", cmp.removed_devices), ("Cases gone", cmp.removed_cases)):
        if gone:
            out.append(f"{title}: {len(gone)}")
            out += [f"  {quote(g)}" for g in gone]
    return out


# --------------------------------------------------------------------------- markdown

def _md_status(status: str) -> str:
    """A markdown status cell: failures in bold, everything else plain."""
    return f"**{md(status)}**" if collect.is_failure(status) else md(status)


def _md_header(results: dict[str, Any]) -> list[str]:
    run = f"warpboard {results.get('warpboard') or '?'}, {results.get('created') or '?'}"
    if results.get("host"):
        run += f", host {results['host']}"
    return ["## warpboard scoreboard", "", md(run), ""]


def _md_legend(results: dict[str, Any]) -> list[str]:
    rows = [[md(c) for c in row] for row in device_legend_rows(results)]
    return [tabulate(rows, headers=LEGEND_HEADERS, tablefmt="github", disable_numparse=True),
            ""]


def _md_matrix(results: dict[str, Any]) -> list[str]:
    board = collect.scoreboard(results)
    rows = [[md(case)] + [_md_status(s) for s in row]
            for case, row in zip(board.index, board.values)]
    rows.append(["**passed**"] + [f"{s.passed}/{s.total}" for s in collect.summaries(results)])
    headers = ["case"] + [md(d) for d in board.columns]
    return [tabulate(rows, headers=headers, tablefmt="github", disable_numparse=True,
                     stralign="left"), ""]


def _md_changes(cmp: Comparison) -> list[str]:
    out = []
    for title, changes in (("Regressions", cmp.regressions), ("Fixes", cmp.fixes)):
        out += [f"### {title}", ""]
        out += [f"- {md(c.case)} on {md(c.device)}: {md(c.before)} -> {md(c.after)}"
                for c in changes] or ["None."]
        out.append("")
    for title, gone in (("Devices gone", cmp.removed_devices), ("Cases gone", cmp.removed_cases)):
        if gone:
            out += [f"### {title}", "", *[f"- {md(g)}" for g in gone], ""]
    out += ["### New cases", ""]
    out += [f"- {md(c)}" for c in cmp.new_cases] or ["None."]
    return out + [""]


def _md_cells(results: dict[str, Any], title: str, cells: list[dict[str, Any]]) -> list[str]:
    """A section of cells: each with the first line of its message and its command."""
    if not cells:
        return []
    out = [f"### {title} ({len(cells)})", ""]
    for r in cells:
        msg = _first_line(r.get("message") or "")
        out.append(f"- {md(r['case'])} on {md(r['device'])}: **{md(r['status'])}**"
                   + (f" — {md(msg)}" if msg else ""))
        out.append(f"  `{verdict.repro_command(results, r)}`")
    return out + [""]


def _md_stale(results: dict[str, Any]) -> list[str]:
    lines = verdict.stale_lines(results, md)
    return [f"### Stale expectations ({len(lines)})", "", *(f"- {line}" for line in lines), ""] if lines else []


def _md_printf(results: dict[str, Any]) -> list[str]:
    """What the kernels printed: per case and distinct output, its devices and first lines."""
    found = printf_view.groups(results)
    if not found:
        return []
    out = [f"<details><summary>printf output of {len(found)} cells</summary>", ""]
    for case, devs, r in found:
        lines = [plain(line) for line in printf_view.first_lines(r)]
        fence = "`" * max(3, 1 + max((len(run) for line in lines for run in re.findall("`+", line)), default=0))
        out += [f"- {md(case)} on {md(', '.join(devs))}: {md(printf_view.counts(r))}", "",
                f"  {fence}text", *(f"  {line}" for line in lines), f"  {fence}", ""]
    return out + ["</details>", ""]


def markdown(results: dict[str, Any], baseline: dict[str, Any] | None = None) -> str:
    """A GitHub-flavoured markdown scoreboard, what needs a look first: the run's counts,
    (with a baseline) Regressions / Fixes / New cases, the failed and flaky cells with the
    commands that reproduce them, stale expectations; then, collapsed, the device legend and
    the cases x devices table with a pass-count row."""
    out = _md_header(results) + [f"**{md(verdict.summary_line(results))}**", ""]
    cmp = _comparison(results, baseline)
    if cmp is not None:
        out += _md_changes(cmp)
    out += _md_cells(results, "Failed cells", verdict.failed(results))
    out += _md_cells(results, "Flaky cells", verdict.flaky(results))
    out += _md_stale(results)
    board = collect.scoreboard(results)
    out += [f"<details><summary>Scoreboard: {len(board.index)} cases x {len(board.columns)} devices"
            "</summary>", ""] + _md_legend(results) + _md_matrix(results) + ["</details>", ""]
    out += _md_printf(results)
    out += [f"> {md(n)}" for n in results.get("notes", [])]
    return "\n".join(out).rstrip() + "\n"


# --------------------------------------------------------------------------- html

NOT_RUN_COLOUR, NOT_RUN_MEANING = "#eeeeee", "not run on this device"
# colour and legend phrase of every cell, from the statuses' own (harness.run.results.Status)
STATUS_COLOURS = {**{s.value: s.colour for s in Status}, MISSING: NOT_RUN_COLOUR}
STATUS_MEANING = {**{s.value: s.meaning for s in Status}, MISSING: NOT_RUN_MEANING}
MAX_HEATMAP_WARPS = 64      # beyond this, only warps with listed mismatches are drawn

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
code,.mono{font-family:ui-monospace,monospace}
"""
_SCRIPT = ("function o(){var e=location.hash&&document.getElementById(location.hash.slice(1));"
           "if(e&&e.tagName==='DETAILS')e.open=true}"
           "addEventListener('hashchange',o);addEventListener('DOMContentLoaded',o);")


def _status_class(status: str) -> str:
    return "st-MISSING" if status == MISSING else "st-" + re.sub(r"[^A-Za-z]", "", status)


def _status_style(status: str) -> str:
    colour = STATUS_COLOURS.get(status, "#37474f")
    text = "#555" if status == MISSING else "#fff"
    return f"background:{colour};color:{text}"


def _html_legend_devices(results: dict[str, Any]) -> str:
    head = "".join(f"<th>{esc(h)}</th>" for h in LEGEND_HEADERS)
    body = "".join("<tr>" + "".join(f"<td>{esc(c)}</td>" for c in row) + "</tr>"
                   for row in device_legend_rows(results))
    return f'<table class="devices"><tr>{head}</tr>{body}</table>'


def _html_legend_status() -> str:
    items = "".join(
        f'<li><span class="sw" style="{_status_style(s)}"></span><b>{esc(s)}</b> '
        f"{esc(STATUS_MEANING[s])}</li>" for s in STATUS_COLOURS)
    return f'<ul class="status-legend">{items}</ul>'


def _anchor(index: int) -> str:
    return f"cell-{index}"


def _html_cell(case: str, dev: str, status: str, anchor: str | None,
               cmp: Comparison | None, r: dict[str, Any] | None = None) -> str:
    """One matrix cell: coloured status, linked to its details, marked if it changed; where
    its kernel printed, the first lines in its title."""
    classes, was = ["st", _status_class(status)], ""
    change = cmp.change_for(case, dev) if cmp else None
    if change is not None:
        kind = "regression" if change in cmp.regressions else "fix"
        classes.append(f"chg-{kind}")
        was = f'<span class="was">was {esc(change.before)}</span>'
    text = esc(status) if anchor is None else f'<a href="#{anchor}">{esc(status)}</a>'
    title = f' title="{esc(printf_view.tooltip(r))}"' if r is not None and printf_view.has_output(r) else ""
    return (f'<td class="{" ".join(classes)}" style="{_status_style(status)}" '
            f'data-case="{esc(case)}" data-device="{esc(dev)}"{title}>{text}{was}</td>')


def _html_matrix(results: dict[str, Any], anchors: dict[tuple[str, str], str],
                 cmp: Comparison | None) -> str:
    board = collect.scoreboard(results)
    cases = collect.cases_by_id(results)
    by_key = collect.cells(results)
    head = "<tr><th>case</th>" + "".join(f"<th>{esc(d)}</th>" for d in board.columns) + "</tr>"
    rows = []
    for case, statuses in zip(board.index, board.values):
        summary = cases[case].get("summary") or ""
        cells = "".join(_html_cell(case, dev, st, anchors.get((case, dev)), cmp, by_key.get((case, dev)))
                        for dev, st in zip(board.columns, statuses))
        rows.append(f'<tr><th class="mono" title="{esc(summary)}">{esc(case)}</th>{cells}</tr>')
    counts = "".join(f"<td>{s.passed}/{s.total}</td>" for s in collect.summaries(results))
    rows.append(f'<tr class="passed"><th>passed</th>{counts}</tr>')
    return f'<table class="matrix">{head}{"".join(rows)}</table>'


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


def heatmap(case: dict[str, Any], mismatches: list[dict[str, Any]]) -> str:
    """A warps x lanes HTML table: red where a listed mismatch falls, green elsewhere;
    each cell's title names the thread and its expected/actual words."""
    warps, lanes = _grid_shape(case, mismatches)
    where = _placed(mismatches, lanes)
    shown = range(warps)
    hidden = 0
    if warps > MAX_HEATMAP_WARPS:
        shown = sorted({w for w, _ in where})
        hidden = warps - len(shown)
    head = "<tr><th></th>" + "".join(f"<th>{lane}</th>" for lane in range(lanes)) + "</tr>"
    rows = []
    for w in shown:
        cells = []
        for lane in range(lanes):
            found = where.get((w, lane), [])
            cls = "hm-mismatch" if found else "hm-ok"
            title = _heat_title(w * lanes + lane, found)
            cells.append(f'<td class="{cls}" data-warp="{w}" data-lane="{lane}" '
                         f'title="{esc(title)}"></td>')
        rows.append(f"<tr><th>warp {w}</th>{''.join(cells)}</tr>")
    note = f"<p class='meta'>{hidden} warps without listed mismatches not drawn.</p>" \
        if hidden else ""
    return f'<table class="hm">{head}{"".join(rows)}</table>{note}'


def _mismatch_table(mismatches: list[dict[str, Any]]) -> str:
    cols = ["#", "buffer", "index", "thread", "warp", "lane", "expected", "actual", "xor"]
    head = "".join(f"<th>{c}</th>" for c in cols)
    rows = []
    for i, m in enumerate(mismatches):
        exp, act = m.get("expected"), m.get("actual")
        xor = hexword(int(exp) ^ int(act)) if exp is not None and act is not None else MISSING
        vals = [i, m.get("buffer"), m.get("index"), m.get("thread"), m.get("warp"),
                m.get("lane"), hexword(exp), hexword(act), xor]
        rows.append("<tr>" + "".join(f'<td class="mono">{esc(MISSING if v is None else v)}</td>'
                                     for v in vals) + "</tr>")
    return f'<table class="mismatches"><tr>{head}</tr>{"".join(rows)}</table>'


def _details(r: dict[str, Any], case: dict[str, Any], anchor: str) -> str:
    """The details section of one cell: message, heatmap, mismatch list, traceback."""
    mism = r.get("mismatches") or []
    total = int(r.get("mismatch_count") or len(mism))
    parts = [f'<details id="{anchor}"><summary><b>{esc(r["case"])}</b> on '
             f'<b>{esc(r["device"])}</b>: {esc(r["status"])}</summary>']
    if case.get("summary"):
        parts.append(f'<p class="meta">{esc(case["summary"])}</p>')
    if r.get("message"):
        parts.append(f"<pre>{esc(r['message'])}</pre>")
    facts = [f"{k}: {r[k]}" for k in ("mode", "turns", "steps", "subgroup_size", "time_s")
             if r.get(k) is not None]
    if facts:
        parts.append(f'<p class="meta">{esc(", ".join(facts))}</p>')
    if mism:
        capped = f" (first {len(mism)} listed; unlisted threads drawn as ok)" \
            if total > len(mism) else ""
        noun = "word differs" if total == 1 else "words differ"
        parts.append(f"<p>{total} {noun}{esc(capped)}.</p>")
        if _placed(mism, _grid_shape(case, mism)[1]):
            parts.append(heatmap(case, mism))
        parts.append(_mismatch_table(mism))
    if printf_view.has_output(r):
        parts.append(printf_view.html_block(r, esc))
    if r.get("traceback"):
        parts.append(f"<pre>{esc(r['traceback'])}</pre>")
    return "".join(parts) + "</details>"


def _html_changes(cmp: Comparison) -> str:
    out = []
    for title, changes in (("Regressions", cmp.regressions), ("Fixes", cmp.fixes)):
        items = "".join(f"<li><code>{esc(c.case)}</code> on <code>{esc(c.device)}</code>: "
                        f"{esc(c.before)} -&gt; {esc(c.after)}</li>" for c in changes)
        out.append(f"<h2>{title}</h2>" + (f"<ul>{items}</ul>" if items else "<p>None.</p>"))
    items = "".join(f"<li><code>{esc(c)}</code></li>" for c in cmp.new_cases)
    out.append("<h2>New cases</h2>" + (f"<ul>{items}</ul>" if items else "<p>None.</p>"))
    return "".join(out)


def _detail_cells(results: dict[str, Any]) -> list[dict[str, Any]]:
    """The cells with a details section: those worth a closer look, and those that printed,
    in scoreboard order."""
    worth = {(r["case"], r["device"]) for r in collect.failing_cells(results)}
    by_key = collect.cells(results)
    return [by_key[(c, d)] for c in collect.case_ids(results) for d in collect.device_ids(results)
            if (c, d) in by_key and ((c, d) in worth or printf_view.has_output(by_key[(c, d)]))]


def html(results: dict[str, Any], baseline: dict[str, Any] | None = None) -> str:
    """One self-contained HTML page: device legend, coloured matrix with a status
    legend, (with a baseline) the changes, and a details section per non-passing cell and
    per cell whose kernel printed."""
    cmp = _comparison(results, baseline)
    cases = collect.cases_by_id(results)
    detail_cells = _detail_cells(results)
    anchors = {(r["case"], r["device"]): _anchor(i) for i, r in enumerate(detail_cells)}
    meta = (f"warpboard {results.get('warpboard') or '?'} · {results.get('created') or '?'}"
            + (f" · host {results['host']}" if results.get("host") else ""))
    body = [
        "<h1>warpboard scoreboard</h1>", f'<p class="meta">{esc(meta)}</p>',
        "<h2>Devices</h2>", _html_legend_devices(results),
        "<h2>Scoreboard</h2>", _html_matrix(results, anchors, cmp),
        "<h2>Status legend</h2>", _html_legend_status(),
    ]
    if cmp is not None:
        body.append(_html_changes(cmp))
    if detail_cells:
        body.append("<h2>Details</h2>")
        body += [_details(r, cases.get(r["case"], {"id": r["case"]}), anchors[(r["case"], r["device"])])
                 for r in detail_cells]
    if results.get("notes"):
        body.append("<h2>Notes</h2><ul>" + "".join(f"<li>{esc(n)}</li>" for n in results["notes"])
                    + "</ul>")
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<title>warpboard scoreboard</title>"
            f"<style>{_CSS}</style><script>{_SCRIPT}</script></head>\n<body>\n"
            + "\n".join(body) + "\n</body></html>\n")


# --------------------------------------------------------------------------- files

def write_all(results: dict[str, Any], outdir: str | Path,
              baseline: dict[str, Any] | None = None) -> dict[str, Path]:
    """Write scoreboard.md, scoreboard.html and scoreboard.json into ``outdir``;
    return their paths keyed by "markdown", "html", "json"."""
    outdir = Path(outdir)
    paths = {"markdown": outdir / "scoreboard.md", "html": outdir / "scoreboard.html",
             "json": outdir / "scoreboard.json"}
    write_atomic(paths["markdown"], markdown(results, baseline))
    write_atomic(paths["html"], html(results, baseline))
    write_atomic(paths["json"], json.dumps(results, indent=1) + "\n")
    return paths

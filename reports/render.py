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

from . import collect, printf_view, summary, verdict
from .page import html
from .collect import Comparison

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


def _first_line(text: str, limit: int = MAX_MESSAGE) -> str:
    """The first line of a message, shortened to ``limit`` characters."""
    line = (text or "").strip().splitlines()[0] if (text or "").strip() else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"




def _comparison(results: dict[str, Any], baseline: dict[str, Any] | None) -> Comparison | None:
    return collect.compare(baseline, results) if baseline is not None else None


# --------------------------------------------------------------------------- terminal

def terminal(results: dict[str, Any], baseline: dict[str, Any] | None = None,
             tablefmt: str = "simple") -> str:
    """The scoreboard as a plain-text table: the run's counts first, the translators x
    devices overview, the cases x columns table, one summary line per device, (with a baseline) the regressions, fixes and new cases, and last the failed and
    flaky cells with their messages and the commands that reproduce them."""
    board = collect.scoreboard(results)
    rows = [[plain(case)] + [plain(s) for s in row] for case, row in zip(board.index, board.values)]
    headers, overview = overview_rows(results, bars=False)
    out = [plain(verdict.summary_line(results)), "",
           tabulate([[plain(c) for c in r] for r in overview], headers=[plain(h) for h in headers],
                    tablefmt=tablefmt, disable_numparse=True), "",
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

def bar(share: float, width: int = 10) -> str:
    """A share as a bar of ``width`` marks (▰ passing, ▱ the rest)."""
    full = round(share * width)
    return "▰" * full + "▱" * (width - full)


def _tally_text(tally: summary.Tally | None, bars: bool = True) -> str:
    if tally is None or not tally.total_seen:
        return "—"
    return f"{bar(tally.share())} {tally.text()}" if bars else tally.text()


def overview_rows(results: dict[str, Any], bars: bool = True) -> tuple[list[str], list[list[str]]]:
    """(headers, rows) of the translators x devices overview, each cell (a bar and) its counts."""
    translators, devices, tallies = summary.overview(results)
    rows = [[t] + [_tally_text(tallies.get((t, d)), bars) for d in devices] for t in translators]
    return ["translator"] + devices, rows


def speed_rows(results: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    """(headers, rows) of launch times: :func:`reports.summary.speed_table`."""
    return summary.speed_table(results)


def family_rows(results: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    """(headers, rows) of the families x columns table: passed/ran per cell, wrong marked."""
    names, columns, tallies = summary.families(results)
    def cell(t):
        if t is None or not t.ran:
            return "—"
        return f"{t.passed}/{t.ran}" + (f" ✗{t.wrong}" if t.wrong else "")
    return ["family"] + columns, [[f] + [cell(tallies.get((f, c))) for c in columns] for f in names]


def _md_overview(results: dict[str, Any]) -> list[str]:
    headers, rows = overview_rows(results)
    out = ["### Translators × devices", "",
           "Passed of the cells that ran; wrong cells turn CI red, expected ones are listed in "
           "`ci/expectations.txt`; not run: unsupported there, or no cell.", ""]
    out.append(tabulate([[md(c) for c in r] for r in rows], headers=[md(h) for h in headers], tablefmt="github",
                        disable_numparse=True, stralign="left"))
    headers, rows = speed_rows(results)
    if rows:
        out += ["", "Launch time over `turns` on the same device (geometric mean over the cases both pass; the "
                "driver's timestamps where the device has them, of a cell's second launch where its first took "
                "under half a second, as lavapipe compiles at the first dispatch; `warpboard bench` times "
                "repeated dispatches). \"chip ×\": over the kernel's own time on an NVIDIA GPU, where captured "
                "cases carry it (CUPTI), on NVIDIA's devices:", "",
                tabulate([[md(c) for c in r] for r in rows], headers=[md(h) for h in headers], tablefmt="github",
                         disable_numparse=True, stralign="left")]
    headers, rows = family_rows(results)
    out += ["", "<details open><summary>Per case family (passed/ran; ✗ wrong)</summary>", "",
            tabulate([[md(c) for c in r] for r in rows], headers=[md(h) for h in headers], tablefmt="github",
                     disable_numparse=True, stralign="left"), "", "</details>", ""]
    return out


def _md_status(status: str) -> str:
    """A markdown status cell: failures in bold, everything else plain."""
    return f"**{md(status)}**" if collect.is_failure(status) else md(status)


def _md_header(results: dict[str, Any]) -> list[str]:
    run = f"warpboard {results.get('warpboard') or '?'}, {results.get('created') or '?'}"
    if results.get("host"):
        run += f", host {results['host']}"
    return ["## warpboard scoreboard", "", md(run), ""]


def _md_legend(results: dict[str, Any]) -> list[str]:
    rows = [[md(c) for c in row] for row in collect.device_legend_rows(results)]
    return [tabulate(rows, headers=collect.LEGEND_HEADERS, tablefmt="github", disable_numparse=True),
            ""]


def _md_matrix(results: dict[str, Any]) -> list[str]:
    """The matrix with grouped headers: the header row names each translator over its first
    column (the interpreter's group is "reference"), the first row the devices under it."""
    board = collect.scoreboard(results)
    groups = collect.column_groups(results)
    headers, devices = ["case"], ["*device*"]
    for name, cols in groups:
        headers += [f"{md(name)} →" if len(cols) > 1 else md(name)] + [""] * (len(cols) - 1)
        devices += [f"*{md(dev)}*" for _, dev in cols]
    rows = [devices] + [[md(case)] + [_md_status(s) for s in row]
                        for case, row in zip(board.index, board.values)]
    rows.append(["**passed**"] + [f"{s.passed}/{s.total}" for s in collect.summaries(results)])
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
        finding = f" ({md(r['finding'])} finding)" if r.get("finding") else ""
        out.append(f"- {md(r['case'])} on {md(verdict.where(r))}: **{md(r['status'])}**{finding}"
                   + (f" — {md(msg)}" if msg else ""))
        out.append(f"  `{verdict.repro_command(results, r)}`")
    return out + [""]


def _md_findings(results: dict[str, Any]) -> list[str]:
    """Whose failures they are (harness.run.findings): per translator, the cells each kind."""
    found = verdict.findings(results)
    if not any(found.values()):
        return []
    out = ["### Findings", "", "| translator | driver findings | translator findings |", "|---|---|---|"]
    for translator, kinds in found.items():
        out.append(f"| {md(translator)} | " + " | ".join(
            md(", ".join(kinds.get(k, []))) or "—" for k in ("driver", "translator")) + " |")
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
    """A GitHub-flavoured markdown scoreboard, the overview first: the run's counts, the
    translators x devices table and the families x columns one; then (with a baseline)
    Regressions / Fixes / New cases, the failed cells with the commands that reproduce them,
    findings and stale expectations; then, collapsed, the flaky cells, the device legend and
    the cases x devices table with a pass-count row."""
    out = _md_header(results) + [f"**{md(verdict.summary_line(results))}**", ""]
    out += _md_overview(results)
    cmp = _comparison(results, baseline)
    if cmp is not None:
        out += _md_changes(cmp)
    out += _md_cells(results, "Failed cells", verdict.failed(results))
    out += _md_findings(results)
    out += _md_stale(results)
    flaky = _md_cells(results, "Flaky cells", verdict.flaky(results))
    if flaky:
        out += [f"<details><summary>Flaky cells ({len(verdict.flaky(results))}): failed, then passed on "
                "retry</summary>", ""] + flaky + ["</details>", ""]
    board = collect.scoreboard(results)
    out += [f"<details><summary>Scoreboard: {len(board.index)} cases x {len(board.columns)} columns"
            "</summary>", ""] + _md_legend(results) + _md_matrix(results) + ["</details>", ""]
    out += _md_printf(results)
    out += [f"> {md(n)}" for n in results.get("notes", [])]
    return "\n".join(out).rstrip() + "\n"


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

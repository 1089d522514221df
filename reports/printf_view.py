"""What the cells' kernels printed, for the reports: the lines of each thread, as a GPU
debugger shows them, next to the scoreboard.

A cell's ``printf`` (harness.run.printf.Printed.to_json, plus "missing" and "extra" where its case
expects lines) holds every line in the results JSON; the views show the first threads' lines.
Cells whose output is the same on several devices are shown once, naming the devices.
Escaping is the caller's (render.py's ``plain``, ``md`` and ``esc``).
"""
from __future__ import annotations

import json
from typing import Any, Callable

from . import collect

SHOWN_THREADS = 4        # threads whose lines a summary shows
SHOWN_LINES = 3          # lines shown of each of them
DETAIL_THREADS = 64      # threads listed in an HTML cell's details


def has_output(r: dict[str, Any]) -> bool:
    """Whether a cell's kernel printed or was expected to print anything."""
    p = r.get("printf") or {}
    return bool(p.get("threads") or p.get("missing") or p.get("dropped"))


def threads(r: dict[str, Any]) -> list[tuple[int, list[str]]]:
    """(thread, its lines in order) of every thread that printed, by thread."""
    return [(int(e["thread"]), list(e["lines"])) for e in (r.get("printf") or {}).get("threads", [])]


def counts(r: dict[str, Any]) -> str:
    """``48 lines from 24 threads`` (and the calls the full buffer dropped)."""
    found = threads(r)
    lines = sum(len(ls) for _, ls in found)
    text = f"{lines} line{'s' * (lines != 1)} from {len(found)} thread{'s' * (len(found) != 1)}"
    dropped = (r.get("printf") or {}).get("dropped")
    return text + (f", {dropped} calls dropped (printf buffer full)" if dropped else "")


def first_lines(r: dict[str, Any], shown_threads: int = SHOWN_THREADS,
                shown_lines: int = SHOWN_LINES) -> list[str]:
    """``thread 3: "x=5"`` for the first lines of the first threads, then ``...`` if more."""
    found = threads(r)
    out = []
    for thread, lines in found[:shown_threads]:
        out += [f"thread {thread}: {json.dumps(line, ensure_ascii=False)}" for line in lines[:shown_lines]]
        if len(lines) > shown_lines:
            out.append(f"thread {thread}: ... {len(lines) - shown_lines} more")
    if len(found) > shown_threads:
        out.append(f"... {len(found) - shown_threads} more threads")
    return out


def groups(results: dict[str, Any]) -> list[tuple[str, list[str], dict[str, Any]]]:
    """(case, devices, one of its cells) for each distinct output of each case that printed,
    in scoreboard order."""
    by_key = collect.cells(results)
    out = []
    for case in collect.case_ids(results):
        seen: dict[str, tuple[list[str], dict]] = {}
        for dev in collect.device_ids(results):
            r = by_key.get((case, dev))
            if r is None or not has_output(r):
                continue
            key = json.dumps((r["printf"].get("threads"), r["printf"].get("dropped")), sort_keys=True)
            seen.setdefault(key, ([], r))[0].append(dev)
        out += [(case, devs, r) for devs, r in seen.values()]
    return out


def summary_lines(results: dict[str, Any], quote: Callable[[str], str], shown_threads: int = 2,
                  shown_lines: int = 2) -> list[str]:
    """Plain lines for the terminal: per case and output, its devices, the counts and the
    first lines, each passed through ``quote``."""
    out = []
    for case, devs, r in groups(results):
        out.append(f"{quote(case)} on {quote(', '.join(devs))}: {quote(counts(r))}")
        out += [f"  {quote(line)}" for line in first_lines(r, shown_threads, shown_lines)]
    return out


def tooltip(r: dict[str, Any]) -> str:
    """A cell's title text: its counts and first lines (plain, to be escaped)."""
    return "\n".join([f"printf: {counts(r)}", *first_lines(r, SHOWN_THREADS, 1)])


def html_block(r: dict[str, Any], esc: Callable[[Any], str]) -> str:
    """The printf part of a cell's details: every line of the first threads, and what the
    case expected but was not printed, or was printed but not expected."""
    found = threads(r)
    rows = "".join(f'<tr><td class="mono">{t}</td><td><pre class="pf">{esc(chr(10).join(ls))}</pre></td></tr>'
                   for t, ls in found[:DETAIL_THREADS])
    more = (f"<p class='meta'>{len(found) - DETAIL_THREADS} more threads in the results JSON.</p>"
            if len(found) > DETAIL_THREADS else "")
    p = r.get("printf") or {}
    diff = [f"expected, not printed: {json.dumps(line, ensure_ascii=False)}" for line in p.get("missing", [])]
    diff += [f"printed by thread {t}, not expected: {json.dumps(line, ensure_ascii=False)}"
             for t, line in p.get("extra", [])]
    diff_html = f"<pre>{esc(chr(10).join(diff))}</pre>" if diff else ""
    table = f'<table class="printf"><tr><th>thread</th><th>lines, in order</th></tr>{rows}</table>' if rows else ""
    return f"<p>printf: {esc(counts(r))}.</p>{diff_html}{table}{more}"

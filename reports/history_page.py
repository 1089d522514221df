"""The history as a page: ``warpboard report --history RUN.json... --format html -o history.html``.

A line per column (translator on device) of its passing share over the runs, oldest first,
drawn by pygal as inline SVG (no scripts from the web: one file that works offline); under it
the passed/ran table of :func:`reports.history.counts`; then every cell that changed status
from one run to the next (:func:`reports.history.changes`), the latest run's changes first
and regressions marked, each row carrying ``data-run`` and ``data-regression`` for a reader
that filters them.
"""
from __future__ import annotations

import html
from typing import Any

import pygal

from . import history
from .bench_page import STYLE

CSS = ("body{font:14px/1.4 system-ui,sans-serif;margin:1.5em}table{border-collapse:collapse;margin:.5em 0}"
       "th,td{border:1px solid #ccc;padding:3px 7px}tr.regression td{background:#ffebee;font-weight:600}"
       "figure{margin:0}")


def chart(runs: list[tuple[str, dict[str, Any]]]) -> str:
    """The passing share of each column over the runs, as an SVG line chart (None: not run)."""
    columns, tallies = history.counts(runs)
    c = pygal.Line(style=STYLE, js=[], width=960, height=360, title="passing share of the cells that ran",
                   range=(0, 1), disable_xml_declaration=True, legend_at_bottom=True, truncate_legend=-1,
                   value_formatter=lambda v: f"{v:.0%}")
    c.x_labels = [f"{i + 1}: {name}" for i, (name, _) in enumerate(runs)]
    for col in columns:
        c.add(col, [None if t is None or not t.ran else t.share() for t in tallies[col]])
    return c.render(is_unicode=True)


def page(runs: list[tuple[str, dict[str, Any]]]) -> str:
    """The whole page: the chart, the counts, the changes."""
    e = html.escape
    columns, tallies = history.counts(runs)
    found = history.changes(runs)
    regressions = sum(c.regression for c in found)
    head = "".join(f"<th>{i + 1}: {e(name)}</th>" for i, (name, _) in enumerate(runs))
    body = "".join(
        f"<tr><th>{e(col)}</th>" + "".join(
            f"<td>{'—' if t is None or not t.ran else f'{t.passed}/{t.ran}'}</td>" for t in tallies[col]) + "</tr>"
        for col in columns)
    rows = "".join(
        f"<tr class='{'regression' if c.regression else 'change'}' data-run='{c.run + 1}' "
        f"data-regression='{str(c.regression).lower()}'><td>{c.run + 1}: {e(runs[c.run][0])}</td>"
        f"<td>{e(c.case)}</td><td>{e(c.column)}</td><td>{e(c.before)} → {e(c.after)}"
        f"{' (regression)' if c.regression else ''}</td></tr>"
        for c in sorted(found, key=lambda c: (-c.run, not c.regression, c.case, c.column)))
    return "\n".join([
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>warpboard history</title>",
        f"<style>{CSS}</style></head><body>",
        f"<h1>warpboard history</h1><p class='verdict'>{len(runs)} runs, oldest first; {len(found)} cells changed "
        f"status, {regressions} regressions</p>",
        f"<figure class='chart'>{chart(runs)}</figure>",
        f"<h2>Passed / ran</h2><table class='counts'><tr><th>column</th>{head}</tr>{body}</table>",
        "<h2>Changes, latest run first</h2>",
        f"<table class='changes'><tr><th>run</th><th>case</th><th>column</th><th>status</th></tr>{rows}</table>"
        if found else "<p>No cell changed status.</p>",
        "</body></html>"]) + "\n"


__all__ = ["chart", "page"]

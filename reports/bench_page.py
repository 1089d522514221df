"""The bench page: ``warpboard report --bench BENCH.json -o bench.html``.

``warpboard bench`` writes each kernel's time per translator and mode on each device (the
driver's timestamps), and native CUDA's time where it was given (``--native``). The page
plots, per bench kernel and device, each translator's time beside native as a bar chart, and
tabulates the ratios. The charts are SVG drawn by pygal (a library made for SVG charts), inline,
with none of the tooltip scripts pygal would load from the web, so the page is one file that
works offline.
"""
from __future__ import annotations

import html
from typing import Any

import pygal
from pygal.style import Style

STYLE = Style(background="white", plot_background="white", colors=("#1565c0", "#ef6c00", "#6a1b9a", "#2e7d32"))


def kernel_times(bench: dict[str, Any]) -> dict[tuple[str, str], dict[str, float]]:
    """{(bench kernel, device): {mode or "native": milliseconds}}: the median device time of
    each bench kernel's mode, and native CUDA's where the document has it."""
    out: dict[tuple[str, str], dict[str, float]] = {}
    native = bench.get("native") or {}
    for r in bench.get("rows", []):
        if not r["case"].startswith("bench/") or not isinstance(r.get("gpu_s"), dict):
            continue
        name = r["case"].split("/", 1)[1]
        times = out.setdefault((name, r["device"]), {})
        times[r["mode"]] = 1e3 * r["gpu_s"]["median"]
        if f"{name}_ms" in native:
            times["native"] = native[f"{name}_ms"]
    return out


def chart(title: str, times: dict[str, float]) -> str:
    """One kernel's times on one device as an SVG bar chart (milliseconds)."""
    c = pygal.HorizontalBar(style=STYLE, js=[], width=640, height=60 + 36 * len(times), show_legend=False,
                            title=title, x_title="ms (device clock)", disable_xml_declaration=True,
                            print_values=True, value_formatter=lambda v: f"{v:.4f}")
    c.x_labels = list(times)
    c.add("time", list(times.values()))
    return c.render(is_unicode=True)


def page(bench: dict[str, Any]) -> str:
    """The whole page: per kernel and device a chart and the ratios over native."""
    parts = ["<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>warpboard bench</title>",
             "<style>body{font:14px/1.4 system-ui,sans-serif;margin:1.5em}table{border-collapse:collapse}"
             "th,td{border:1px solid #ccc;padding:3px 7px}</style></head><body>",
             f"<h1>warpboard bench</h1><p>{html.escape(str(bench.get('created') or ''))}</p>"]
    found = kernel_times(bench)
    if not found:
        parts.append("<p>No bench kernel has device times in this file.</p>")
    for (name, device), times in sorted(found.items()):
        parts.append(f"<h2>{html.escape(name)} on {html.escape(device)}</h2>")
        parts.append(f"<figure class='chart'>{chart(f'{name} on {device}', times)}</figure>")
        if "native" in times:
            rows = "".join(f"<tr><td>{html.escape(m)}</td><td>{t / times['native']:.2f}×</td></tr>"
                           for m, t in times.items() if m != "native")
            parts.append(f"<table><tr><th>mode</th><th>time over native</th></tr>{rows}</table>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


__all__ = ["kernel_times", "chart", "page"]

"""What a run comes to, for every view alike: the counts at the top of each report, the failed
and flaky cells with their full messages and the command that reproduces each, and the
expectations that no longer fail.

Like pytest, lit and deqp-runner, a report starts with the counts and ends with the failures;
each failure names the one ``warpboard run`` that runs that cell again.
"""
from __future__ import annotations

import shlex
from collections import Counter
from typing import Any

from warpboard.harness.run.results import Status

from . import collect

INTERP = collect.INTERP


def counts(results: dict[str, Any]) -> Counter:
    """Cells per status over the whole run."""
    return Counter(r["status"] for r in collect.cells(results).values())


def summary_line(results: dict[str, Any]) -> str:
    """``633 cells on 4 devices: 620 PASS, 12 XFAIL, 1 FAIL``, failures last."""
    found = counts(results)
    order = [s.value for s in sorted(Status, key=lambda s: (s.is_failure, list(Status).index(s)))]
    parts = [f"{found[s]} {s}" for s in order if found.get(s)]
    n_dev = len(collect.device_ids(results))
    n_tr = len(collect.translator_ids(results))
    by = f" by {n_tr} translators" if n_tr > 1 else ""
    return (f"{sum(found.values())} cells on {n_dev} device{'s' * (n_dev != 1)}{by}: "
            + (", ".join(parts) or "none ran"))


def failed(results: dict[str, Any]) -> list[dict[str, Any]]:
    """The cells whose status is a failure, in scoreboard order."""
    return [r for r in collect.failing_cells(results) if collect.is_failure(r["status"])]


def flaky(results: dict[str, Any]) -> list[dict[str, Any]]:
    """The cells that failed and then passed (or differed between repeats)."""
    return [r for r in collect.failing_cells(results) if r["status"] == Status.FLAKY.value]


def repro_command(results: dict[str, Any], cell: dict[str, Any]) -> str:
    """The ``warpboard run`` that runs this one cell again, with the run's own options."""
    device = "none" if cell["device"] == INTERP else cell["device"]
    args = ["warpboard", "run", cell["case"], "--device", device]
    translator = collect.translator_of(cell)
    if translator not in (None, collect.DEFAULT_TRANSLATOR):
        args += ["--translator", _translator_arg(results, translator)]
    run = results.get("run") or {}
    if run.get("root") not in (None, "cases"):
        args += ["--root", str(run["root"])]
    for key, flag in (("mode", "--mode"), ("budget", "--budget")):
        if run.get(key) is not None:
            args += [flag, str(run[key])]
    return shlex.join(args + ["-v"])


def _translator_arg(results: dict[str, Any], name: str) -> str:
    """What ``--translator`` takes to name this translator again (NAME=COMMAND for a command)."""
    command = (results.get("run") or {}).get("translator_commands", {}).get(name)
    return f"{name}={command}" if command else name


def where(cell: dict[str, Any]) -> str:
    """``device`` or ``device (translator)`` for a translator other than the default."""
    translator = collect.translator_of(cell)
    return cell["device"] + ("" if translator in (None, collect.DEFAULT_TRANSLATOR) else f" ({translator})")


def cell_lines(results: dict[str, Any], cells: list[dict[str, Any]], quote) -> list[str]:
    """Each cell: ``case on device: STATUS``, its whole message indented, the command."""
    out = []
    for r in cells:
        finding = r.get("finding")
        out.append(f"{quote(r['case'])} on {quote(where(r))}: {quote(r['status'])}"
                   + (f" ({quote(finding)} finding)" if finding else ""))
        out += [f"    {quote(line)}" for line in (r.get("message") or "").strip().splitlines()]
        out.append(f"    $ {quote(repro_command(results, r))}")
    return out


def findings(results: dict[str, Any]) -> dict[str, dict[str, list[str]]]:
    """Per translator, the "case on device" of its cells of each finding kind (driver, translator)."""
    out: dict[str, dict[str, list[str]]] = {}
    for r in collect.cells(results).values():
        if r.get("finding"):
            kinds = out.setdefault(collect.translator_of(r) or collect.REFERENCE, {})
            kinds.setdefault(r["finding"], []).append(f"{r['case']} on {r['device']}")
    return out


def stale(results: dict[str, Any]) -> list[dict[str, Any]]:
    """Expectation rules whose every cell in this run passed (see harness.run.expectations)."""
    return list(results.get("stale_expectations") or [])


def stale_lines(results: dict[str, Any], quote) -> list[str]:
    return [f"{quote(s['where'])}: '{quote(s['rule'])}' no longer fails: "
            f"{quote(', '.join(s['cells']))} passed" for s in stale(results)]


def closing_lines(results: dict[str, Any], quote) -> list[str]:
    """The end of a plain-text report: failed cells, flaky cells, stale expectations."""
    out = []
    for title, cells in (("Failed cells", failed(results)), ("Flaky cells", flaky(results))):
        if cells:
            out += ["", f"{title} ({len(cells)}):", *cell_lines(results, cells, quote)]
    if stale(results):
        out += ["", f"Stale expectations ({len(stale(results))}):", *(f"  {s}" for s in stale_lines(results, quote))]
    return out

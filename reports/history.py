"""The board across runs: ``warpboard report --history RUN.json... (or a folder of runs)``.

Runs are taken in the order of their ``created`` time (the order given where a run has none).
For each translator on each device the history gives its passed/ran per run, a line of counts
(the way a dashboard draws a line per column), and every cell whose status changed from one run
to the next, the change named (``PASS -> FAIL``); a regression is a change from a passing status
to a failing one (collect.compare's rule, applied to each pair of neighbours).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tabulate import tabulate

from . import collect, summary


@dataclass(frozen=True)
class Change:
    """One cell's status from one run to the next."""
    run: int                # index of the later run
    case: str
    column: str
    before: str
    after: str
    regression: bool


def runs_in(paths: list[Path]) -> list[tuple[str, dict[str, Any]]]:
    """(name, results) of every run named, a folder standing for its ``*.json`` files, in
    ``created`` order."""
    files = []
    for p in paths:
        files += sorted(p.glob("*.json")) if p.is_dir() else [p]
    loaded = [(f.name, collect.load(f)) for f in files]
    return sorted(loaded, key=lambda item: item[1].get("created") or "")


def counts(runs: list[tuple[str, dict[str, Any]]]) -> tuple[list[str], dict[str, list[summary.Tally | None]]]:
    """(column ids in board order, {column: its tally in each run, None where it is absent})."""
    columns: list[str] = []
    per_run = []
    for _, results in runs:
        board = collect.scoreboard(results)
        tallies = {}
        for col in board.columns:
            tally = summary.Tally()
            for status in board[col]:
                tally.add(status)
            tallies[col] = tally
        columns += [c for c in board.columns if c not in columns]
        per_run.append(tallies)
    return columns, {c: [t.get(c) for t in per_run] for c in columns}


def changes(runs: list[tuple[str, dict[str, Any]]]) -> list[Change]:
    """Every cell whose status differs between neighbouring runs (cells new in the later run
    or gone from it are not changes of status)."""
    out = []
    for i in range(1, len(runs)):
        before, after = collect.scoreboard(runs[i - 1][1]), collect.scoreboard(runs[i][1])
        for col in after.columns:
            if col not in before.columns:
                continue
            for case, now in after[col].items():
                if case not in before.index:
                    continue
                was = before.at[case, col]
                if was != now and collect.MISSING not in (was, now):
                    out.append(Change(i, case, col, was, now, collect.is_passing(was) and collect.is_failure(now)))
    return out


def render_history(runs: list[tuple[str, dict[str, Any]]], fmt: str = "terminal") -> str:
    """The history as text: a table of passed/ran per column (rows) and run (columns), a
    sparkline of the pass share per column, then the changes run by run."""
    columns, tallies = counts(runs)
    marks = "▁▂▃▄▅▆▇█"
    headers = ["column"] + [f"{i + 1}: {name}" for i, (name, _) in enumerate(runs)] + ["trend"]
    rows = []
    for col in columns:
        line = tallies[col]
        spark = "".join(" " if t is None or not t.ran else marks[min(7, int(t.share() * 7.999))] for t in line)
        rows.append([col] + [("—" if t is None or not t.ran else f"{t.passed}/{t.ran}") for t in line] + [spark])
    tablefmt = "github" if fmt == "markdown" else "simple"
    out = [f"{len(runs)} runs, oldest first", "", tabulate(rows, headers=headers, tablefmt=tablefmt,
                                                           disable_numparse=True), ""]
    found = changes(runs)
    out.append(f"{len(found)} cells changed status ({sum(c.regression for c in found)} regressions)")
    for c in found:
        mark = "REGRESSION " if c.regression else ""
        out.append(f"  run {c.run + 1} ({runs[c.run][0]}): {mark}{c.case} on {c.column}: {c.before} -> {c.after}")
    return "\n".join(out) + "\n"


__all__ = ["Change", "runs_in", "counts", "changes", "render_history"]

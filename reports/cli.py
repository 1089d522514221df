"""The ``warpboard report`` and ``warpboard merge`` subcommands.

The ``warpboard`` command (:mod:`warpboard.cli`) builds its subparsers with
:func:`add_report_arguments` / :func:`run_report` and :func:`add_merge_arguments` /
:func:`run_merge`; :func:`report_main` and :func:`merge_main` run either on its own from an
argument list. All return an exit code and never call ``sys.exit`` themselves. Adding the
arguments imports nothing heavy: pandas loads when a command runs.

Exit codes: 0 done; 1 ``--fail-on`` condition met; 2 usage or unreadable input.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Sequence

from warpboard.harness.files import OutputError, output_problem, write_atomic

from . import bench_page, collect, history, history_page, render
from .collect import ResultsError
from .merge import merge
from .render import plain

FORMATS = ("terminal", "markdown", "html")
REPORT_DESCRIPTION = "Render a results file as a scoreboard."
MERGE_DESCRIPTION = "Merge results files from several runs."


# --------------------------------------------------------------------------- report

def add_report_arguments(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add the ``report`` options to a parser (a fresh one or a subparser)."""
    p.add_argument("results", type=Path, nargs="+",
                   help="results JSON written by `warpboard run` (with --history: several, or folders of them)")
    p.add_argument("--bench", action="store_true",
                   help="the file is `warpboard bench`'s JSON: an HTML page charting each bench kernel's time per "
                        "translator beside native CUDA (-o PAGE.html)")
    p.add_argument("--history", action="store_true",
                   help="the runs given in created order: passed/ran per column and run, and every cell "
                        "that changed status from one run to the next (--format html: a page with a chart)")
    p.add_argument("--against", type=Path, metavar="OLD.json",
                   help="baseline results: list regressions, fixes and new cases")
    p.add_argument("--format", choices=FORMATS, default="terminal",
                   help="output format (default: terminal)")
    p.add_argument("-o", "--output", type=Path, metavar="OUT",
                   help="write to this file instead of standard output")
    p.add_argument("--outdir", type=Path, metavar="DIR",
                   help="also write scoreboard.md, scoreboard.html, scoreboard.json here")
    p.add_argument("--fail-on", choices=("never", "failures", "regressions"), default="never",
                   help="exit 1 when any cell is red (failures) or, with --against, "
                        "when a cell regressed (regressions); default: never")
    return p


def _rendered(fmt: str, results: dict[str, Any], baseline: dict[str, Any] | None) -> str:
    if fmt == "markdown":
        return render.markdown(results, baseline)
    if fmt == "html":
        return render.html(results, baseline)
    return render.terminal(results, baseline)


def _exit_code(fail_on: str, results: dict[str, Any], baseline: dict[str, Any] | None) -> int:
    """1 when the --fail-on condition holds, else 0."""
    if fail_on == "failures":
        return int(any(collect.is_failure(s) for s in collect.frame(results)["status"]))
    if fail_on == "regressions" and baseline is not None:
        return int(bool(collect.compare(baseline, results).regressions))
    return 0


def run_report(args: argparse.Namespace) -> int:
    """Carry out ``warpboard report`` for parsed arguments; return the exit code."""
    problem = (output_problem(args.output) if args.output else None) or \
        (f"--outdir {args.outdir} is a file" if args.outdir and args.outdir.is_file() else None)
    if problem:
        print(f"warpboard report: error: {problem}", file=sys.stderr)
        return 2
    if args.bench:
        if len(args.results) != 1:
            print("warpboard report: error: --bench takes one bench JSON", file=sys.stderr)
            return 2
        try:
            text = bench_page.page(json.loads(args.results[0].read_text()))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            print(f"warpboard report: {args.results[0]}: not a bench file: {exc}", file=sys.stderr)
            return 2
        if args.output:
            write_atomic(args.output, text)
        else:
            sys.stdout.write(text)
        return 0
    if args.history:
        try:
            runs = history.runs_in(args.results)
        except ResultsError as exc:
            print(f"warpboard report: {render.plain(exc)}", file=sys.stderr)
            return 2
        text = history_page.page(runs) if args.format == "html" else history.render_history(runs, args.format)
        if args.output:
            write_atomic(args.output, text)
        else:
            sys.stdout.write(text)
        latest = [c for c in history.changes(runs) if c.run == len(runs) - 1]
        return int(args.fail_on == "regressions" and any(c.regression for c in latest))
    if len(args.results) != 1:
        print("warpboard report: error: one results file (several only with --history)", file=sys.stderr)
        return 2
    try:
        results = collect.load(args.results[0])
        baseline = collect.load(args.against) if args.against else None
    except ResultsError as exc:
        print(f"warpboard report: {render.plain(exc)}", file=sys.stderr)
        return 2
    text = _rendered(args.format, results, baseline)
    try:
        if args.output:
            write_atomic(args.output, text)
        else:
            sys.stdout.write(text)
        if args.outdir:
            for kind, path in render.write_all(results, args.outdir, baseline).items():
                print(f"wrote {kind}: {path}", file=sys.stderr)
    except OutputError as exc:
        print(f"warpboard report: error: {render.plain(exc)}", file=sys.stderr)
        return 1
    return _exit_code(args.fail_on, results, baseline)


def report_main(argv: Sequence[str] | None = None) -> int:
    """``warpboard report RESULTS.json [--against OLD.json] [--format ...] [-o OUT]``."""
    p = argparse.ArgumentParser(prog="warpboard report", description=REPORT_DESCRIPTION)
    try:
        args = add_report_arguments(p).parse_args(argv)
    except SystemExit as exc:          # argparse exits on --help and on usage errors
        return int(exc.code or 0)
    return run_report(args)


# --------------------------------------------------------------------------- merge

def add_merge_arguments(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add the ``merge`` options to a parser (a fresh one or a subparser)."""
    p.add_argument("inputs", type=Path, nargs="+", metavar="RESULTS.json",
                   help="results files from separate runs (e.g. one per CI leg)")
    p.add_argument("-o", "--output", type=Path, required=True, metavar="OUT.json",
                   help="merged results file to write")
    return p


def run_merge(args: argparse.Namespace) -> int:
    """Carry out ``warpboard merge`` for parsed arguments; return the exit code."""
    if problem := output_problem(args.output):
        print(f"warpboard merge: error: {problem}", file=sys.stderr)
        return 2
    try:
        merged = merge([collect.load(p) for p in args.inputs])
    except ResultsError as exc:
        print(f"warpboard merge: {plain(exc)}", file=sys.stderr)
        return 2
    try:
        write_atomic(args.output, json.dumps(merged, indent=1) + "\n")
    except OutputError as exc:
        print(f"warpboard merge: error: {plain(exc)}", file=sys.stderr)
        return 1
    for note in merged.get("notes", []):
        print(f"note: {note}", file=sys.stderr)
    print(f"merged {len(args.inputs)} runs: {len(merged['devices'])} devices, "
          f"{len(merged['cases'])} cases -> {args.output}", file=sys.stderr)
    return 0


def merge_main(argv: Sequence[str] | None = None) -> int:
    """``warpboard merge A.json B.json ... -o OUT.json``."""
    p = argparse.ArgumentParser(prog="warpboard merge", description=MERGE_DESCRIPTION)
    try:
        args = add_merge_arguments(p).parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    return run_merge(args)

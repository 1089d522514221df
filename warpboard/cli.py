"""``warpboard``: run the case library on every device, render and merge the reports.

One argparse subcommand per command, each a pair of functions: one adds its options, one
carries it out from the parsed arguments and returns the exit code. The commands of
``harness`` and ``reports`` bring their own pairs; ``run`` is wired here, because it hands
the engine's results to the reports. Usage errors (bad options, missing or unreadable
inputs) print one line and exit with status 2; a file that cannot be written exits 1;
Ctrl-C exits 130 after writing the cells that finished. ``WARPBOARD_DEBUG=1`` lets an
unexpected exception through with its traceback.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from tabulate import tabulate

from warpboard.harness.case.expectations import load_expectations
from warpboard.harness.case.model import (
    MAX_BLOCK_DIMS,
    MAX_BLOCK_THREADS,
    MAX_SHARED_BYTES,
    MAX_STEP_BUDGET,
    CaseError,
    read_text,
    scan_cases,
)
from warpboard.harness.files import OutputError, output_problem, write_atomic
from warpboard.harness.fuzz import cli as fuzz_cli
from warpboard.harness.fuzz import merge as fuzz_merge
from warpboard.harness.fuzz import reduce as fuzz_reduce
from warpboard.harness.run import devices, engine
from warpboard.harness.run.results import Status
from warpboard.harness.tools import bench, corpus, mufu_rates, newcase, truth
from warpboard.reports import cli as reports_cli
from warpboard.reports import render
from warpboard.reports.render import plain
from warpboard.translator import TranslatorError, load_program, translate

EXPECTATIONS = "ci/expectations.txt"
DESCRIPTION = ("Run SM86 SASS cases on every Vulkan device and the CPU reference interpreter; "
               "render, merge and compare the scoreboards; translate, measure and write cases.")


MAX_TIMEOUT_S = 24 * 3600
MAX_REPEAT = 100
INTERRUPTED = 130                   # the shell's status for a process ended by SIGINT


class UsageError(Exception):
    """A command that cannot run as asked; :func:`main` prints it on one line, exit 2."""


def bounded(kind: type, lo, hi, *, above: bool = False) -> Callable[[str], object]:
    """An argparse type: ``kind`` (int or float) within lo..hi (``above``: strictly above lo)."""
    def parse(text: str):
        value = kind(text)          # a ValueError reads "invalid int value: 'x'"
        if value != value or (value <= lo if above else value < lo) or value > hi:
            raise argparse.ArgumentTypeError(f"{text} is outside {'(' if above else ''}{lo}..{hi}"
                                             f"{')' if above else ''}")
        return value
    parse.__name__ = kind.__name__
    return parse


class Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line: ``warpboard run: error: ...``."""
    commands: dict[str, argparse.ArgumentParser]     # the subcommands' parsers, by name (top level only)

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


# ------------------------------------------------------------------ run
def add_run_arguments(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The options of ``warpboard run``: which cases on which devices, and where the reports go."""
    p.add_argument("cases", nargs="*", help="case ids or fnmatch patterns (default: every case)")
    p.add_argument("--root", default="cases", help="the case library (default: cases)")
    p.add_argument("--device", action="append", help="device id or pattern (repeatable; default: all)")
    p.add_argument("--no-interp", action="store_true", help="leave out the CPU reference interpreter")
    p.add_argument("-o", "--output", help="results JSON")
    p.add_argument("--html", help="HTML page")
    p.add_argument("--markdown", help="markdown table")
    p.add_argument("--timeout", type=bounded(float, 0, MAX_TIMEOUT_S, above=True), default=60.0,
                   help="seconds per case before the worker is killed")
    p.add_argument("--budget", type=bounded(int, 1, MAX_STEP_BUDGET),
                   help="step budget (turns per block, or steps per thread)")
    p.add_argument("--mode", choices=["free", "turns"], help="force a mode (free only for collective-free cases)")
    p.add_argument("--repeat", type=bounded(int, 1, MAX_REPEAT), default=1,
                   help="run each cell N times; differing runs are FLAKY")
    p.add_argument("--expectations", default=EXPECTATIONS if Path(EXPECTATIONS).is_file() else None,
                   help=f"per-device expected failures (XFAIL); default {EXPECTATIONS}")
    p.add_argument("--strict", action="store_true", help="exit 1 when any cell is a failure")
    p.add_argument("--jobs", type=bounded(int, 0, 1024), default=0,
                   help="worker processes, each column's cases dealt out among them (default: CPU count)")
    p.add_argument("-v", "--verbose", action="store_true", help="print every cell as it finishes")
    return p


def cmd_run(args: argparse.Namespace) -> int:
    """Every selected case on every selected device; print the table and write the reports."""
    outputs = {"json": args.output, "html": args.html, "markdown": args.markdown}
    for path in filter(None, outputs.values()):
        if problem := output_problem(path):
            raise UsageError(problem)
    cases, broken = _select_cases(args.root, args.cases)
    expectations = _load_expectations(args.expectations)
    configs = _select_devices(args.device)
    options = engine.Options(timeout_s=args.timeout, budget=args.budget, mode=args.mode)
    progress = _progress((len(cases) + len(broken)) * (len(configs) + (0 if args.no_interp else 1)), args.verbose)
    doc = engine.run_matrix(cases, configs, interp=not args.no_interp, options=options, root=args.root,
                            expectations=expectations, repeat=args.repeat, progress=progress, broken=broken,
                            jobs=args.jobs)
    print(render.terminal(doc))
    for kind, path in outputs.items():
        if path:
            write_atomic(path, json.dumps(doc, indent=1) if kind == "json" else getattr(render, kind)(doc))
    if doc.get("partial"):
        print(f"warpboard run: interrupted; {len(doc['results'])} finished cells kept", file=sys.stderr)
        return INTERRUPTED
    failed = any(Status(r["status"]).is_failure for r in doc["results"])
    return 1 if failed and args.strict else 0


def _select_cases(root: str, patterns: list[str]) -> tuple[list, list]:
    """The cases the patterns select and the selected files that did not load."""
    try:
        cases, broken = scan_cases(root, patterns or None)
    except CaseError as exc:
        raise UsageError(str(exc)) from None
    if not cases and not broken:
        raise UsageError(f"no case in {root} matches {' '.join(patterns)}" if patterns
                         else f"no case files in {root}")
    return cases, broken


def _load_expectations(path: str | None):
    if path is None:
        return None
    try:
        return load_expectations(path)
    except OSError as exc:
        raise UsageError(f"{path}: cannot read the expectations: {exc.strerror or exc}") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise UsageError(str(exc)) from None


def _select_devices(patterns: list[str] | None) -> list:
    """The device configurations ``--device`` names (``none``: the interpreter only)."""
    if patterns == ["none"]:
        return []
    try:
        return devices.select(devices.discover(), patterns)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def _progress(total: int, verbose: bool) -> Callable:
    """A callback that prints a finished cell to stderr: every one, or (not verbose) the failures."""
    done = 0

    def progress(r) -> None:
        nonlocal done
        done += 1
        if verbose or r.status.is_failure:
            print(f"[{done}/{total}] {plain(r.device):14s} {r.status.value:11s} {plain(r.case)}  "
                  f"{plain(r.message[:120])}", file=sys.stderr, flush=True)
    return progress


# ------------------------------------------------------------------ devices, translate
def add_devices_arguments(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    return p


def cmd_devices(args: argparse.Namespace) -> int:
    """List every Vulkan device configuration (lavapipe at each subgroup width too)."""
    rows = devices.describe(devices.discover())
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        print(tabulate(rows, headers="keys") if rows else "no Vulkan device found")
    return 0


def add_translate_arguments(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    p.add_argument("listing", help="an SM86 SASS listing (nvdisasm or cuobjdump -sass)")
    p.add_argument("--kernel", help="the kernel to translate (default: the listing's only one)")
    p.add_argument("--block", type=bounded(int, 1, max(MAX_BLOCK_DIMS)), nargs=3, default=[32, 1, 1],
                   help=f"block size X Y Z (default 32 1 1; at most {MAX_BLOCK_THREADS} threads)")
    p.add_argument("--shared-bytes", type=bounded(int, 0, MAX_SHARED_BYTES), default=16384,
                   help="shared memory in bytes (default 16384)")
    p.add_argument("--mode", choices=["free", "turns"], help="force a mode")
    p.add_argument("-o", "--output", default="kernel.spv", help="the SPIR-V file (default kernel.spv)")
    return p


def cmd_translate(args: argparse.Namespace) -> int:
    """Translate one kernel of a listing to a SPIR-V compute shader."""
    x, y, z = args.block
    if x * y * z > MAX_BLOCK_THREADS or any(d > m for d, m in zip(args.block, MAX_BLOCK_DIMS)):
        raise UsageError(f"--block {x} {y} {z}: at most {MAX_BLOCK_THREADS} threads, "
                         f"{' '.join(map(str, MAX_BLOCK_DIMS))} per dimension")
    if problem := output_problem(args.output):
        raise UsageError(problem)
    try:
        text = read_text(Path(args.listing), "listing")
        program = load_program(text, args.kernel, args.listing)
        shader = translate(program, tuple(args.block), args.shared_bytes, args.mode)
    except (CaseError, TranslatorError) as exc:
        raise UsageError(str(exc)) from None
    write_atomic(args.output, shader.spirv)
    print(f"{program.name}: {len(program.insts)} instructions, {len(program.blocks)} blocks, "
          f"{shader.mode} mode -> {args.output} ({len(shader.spirv)} bytes)")
    return 0


# ------------------------------------------------------------------ the command line
@dataclass(frozen=True)
class Command:
    """One subcommand: its name, a line for ``warpboard --help``, its options and what it does."""
    name: str
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], object]
    run: Callable[[argparse.Namespace], int]
    description: str | None = None


COMMANDS = (
    Command("run", "every case on every device: a scoreboard", add_run_arguments, cmd_run),
    Command("devices", "list the Vulkan device configurations", add_devices_arguments, cmd_devices),
    Command("translate", "translate one kernel of a listing to SPIR-V", add_translate_arguments, cmd_translate),
    Command("report", "render a results JSON", reports_cli.add_report_arguments, reports_cli.run_report,
            reports_cli.REPORT_DESCRIPTION),
    Command("merge", "merge results JSON files", reports_cli.add_merge_arguments, reports_cli.run_merge,
            reports_cli.MERGE_DESCRIPTION),
    Command("bench", "measure the cost of taking turns (JSON out)", bench.add_arguments, bench.run,
            bench.DESCRIPTION),
    Command("new-case", "write a case file from a CUDA source", newcase.add_arguments, newcase.run,
            newcase.DESCRIPTION),
    Command("record-truth", "record expected values on an NVIDIA GPU", truth.add_arguments, truth.run,
            truth.DESCRIPTION),
    Command("fuzz", "random divergent kernels: build, run, per-device agreement", fuzz_cli.add_arguments,
            fuzz_cli.run, fuzz_cli.DESCRIPTION),
    Command("fuzz-merge", "one summary from the summaries of a campaign's shards", fuzz_merge.add_arguments,
            fuzz_merge.run, fuzz_merge.DESCRIPTION),
    Command("reduce", "shrink a failing generated program to a small case", fuzz_reduce.add_arguments,
            fuzz_reduce.run, fuzz_reduce.DESCRIPTION),
    Command("corpus", "compile CUDA code bases and classify every kernel", corpus.add_arguments,
            corpus.run, corpus.DESCRIPTION),
    Command("mufu-rates", "MUFU words per device against the chip's: bit-exact rates, ULPs",
            mufu_rates.add_arguments, mufu_rates.run, mufu_rates.DESCRIPTION),
)


def build_parser() -> Parser:
    """The ``warpboard`` parser with one subparser per command."""
    parser = Parser(prog="warpboard", description=DESCRIPTION)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        p = sub.add_parser(command.name, help=command.help,
                           description=command.description or command.run.__doc__)
        command.add_arguments(p)
        p.set_defaults(run=command.run)
    parser.commands = dict(sub.choices)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Parse the command line and run its command; the exit code (2 for a usage error)."""
    parser = build_parser()
    try:
        args, unknown = parser.parse_known_args(argv)
        if unknown:                 # named by the subcommand, whose --help lists what it takes
            parser.commands[args.command].error(f"unrecognized arguments: {' '.join(unknown)}")
    except SystemExit as exc:       # --help (0) or a usage error (2), already printed
        return exc.code if isinstance(exc.code, int) else 2
    return _carry_out(args)


def _carry_out(args: argparse.Namespace) -> int:
    """Run the parsed command; its errors become one line on stderr and an exit code."""
    prog = f"warpboard {args.command}"
    try:
        return args.run(args)
    except UsageError as exc:
        print(f"{prog}: error: {plain(exc)}", file=sys.stderr)
        return 2
    except OutputError as exc:
        print(f"{prog}: error: {plain(exc)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return INTERRUPTED
    except Exception as exc:  # noqa: BLE001 - a traceback only on request
        if os.environ.get("WARPBOARD_DEBUG"):
            raise
        print(f"{prog}: internal error: {type(exc).__name__}: {plain(exc)} "
              "(WARPBOARD_DEBUG=1 shows the traceback)", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())

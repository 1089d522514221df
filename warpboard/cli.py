"""``warpboard``: run the case library on every device, render and merge the reports.

One argparse subcommand per command, each a pair of functions: one adds its options, one
carries it out from the parsed arguments and returns the exit code. The commands of
``harness`` and ``reports`` bring their own pairs; ``run`` is wired here, because it hands
the engine's results to the reports. Usage errors print one line and exit with status 2.
"""
from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from harness import bench, newcase, truth
from reports import cli as reports_cli

EXPECTATIONS = "ci/expectations.txt"
DESCRIPTION = ("Run SM86 SASS cases on every Vulkan device and the CPU reference interpreter; "
               "render, merge and compare the scoreboards; translate, measure and write cases.")


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
    p.add_argument("--timeout", type=float, default=60.0, help="seconds per case before the worker is killed")
    p.add_argument("--budget", type=int, help="step budget (turns per block, or steps per thread)")
    p.add_argument("--mode", choices=["free", "turns"], help="force a mode (free only for collective-free cases)")
    p.add_argument("--repeat", type=int, default=1, help="run each cell N times; differing runs are FLAKY")
    p.add_argument("--expectations", default=EXPECTATIONS if Path(EXPECTATIONS).is_file() else None,
                   help=f"per-device expected failures (XFAIL); default {EXPECTATIONS}")
    p.add_argument("--strict", action="store_true", help="exit 1 when any cell is a failure")
    p.add_argument("-v", "--verbose", action="store_true", help="print every cell as it finishes")
    return p


def cmd_run(args: argparse.Namespace) -> int:
    """Every selected case on every selected device; print the table and write the reports."""
    from harness import devices, engine
    from harness.cases import discover_cases
    from harness.expectations import load_expectations
    from harness.results import Status
    from reports import render
    cases = discover_cases(args.root, args.cases or None)
    configs = devices.select(devices.discover(), args.device) if args.device != ["none"] else []
    expectations = load_expectations(args.expectations) if args.expectations else None
    options = engine.Options(timeout_s=args.timeout, budget=args.budget, mode=args.mode)
    progress = _progress(len(cases) * (len(configs) + (0 if args.no_interp else 1)), args.verbose)
    doc = engine.run_matrix(cases, configs, interp=not args.no_interp, options=options, root=args.root,
                            expectations=expectations, repeat=args.repeat, progress=progress)
    print(render.terminal(doc))
    for kind, path in {"json": args.output, "html": args.html, "markdown": args.markdown}.items():
        if path:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            Path(path).write_text(json.dumps(doc, indent=1) if kind == "json" else getattr(render, kind)(doc))
    failed = any(Status(r["status"]).is_failure for r in doc["results"])
    return 1 if failed and args.strict else 0


def _progress(total: int, verbose: bool) -> Callable:
    """A callback that prints a finished cell to stderr: every one, or (not verbose) the failures."""
    done = 0

    def progress(r) -> None:
        nonlocal done
        done += 1
        if verbose or r.status.is_failure:
            print(f"[{done}/{total}] {r.device:14s} {r.status.value:11s} {r.case}  {r.message[:120]}",
                  file=sys.stderr)
    return progress


# ------------------------------------------------------------------ devices, translate
def add_devices_arguments(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    return p


def cmd_devices(args: argparse.Namespace) -> int:
    """List every Vulkan device configuration (lavapipe at each subgroup width too)."""
    from tabulate import tabulate
    from harness import devices
    rows = devices.describe(devices.discover())
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        print(tabulate(rows, headers="keys") if rows else "no Vulkan device found")
    return 0


def add_translate_arguments(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    p.add_argument("listing", help="an SM86 SASS listing (nvdisasm or cuobjdump -sass)")
    p.add_argument("--kernel", help="the kernel to translate (default: the listing's only one)")
    p.add_argument("--block", type=int, nargs=3, default=[32, 1, 1], help="block size X Y Z (default 32 1 1)")
    p.add_argument("--shared-bytes", type=int, default=16384, help="shared memory in bytes (default 16384)")
    p.add_argument("--mode", choices=["free", "turns"], help="force a mode")
    p.add_argument("-o", "--output", default="kernel.spv", help="the SPIR-V file (default kernel.spv)")
    return p


def cmd_translate(args: argparse.Namespace) -> int:
    """Translate one kernel of a listing to a SPIR-V compute shader."""
    from translator.emit import translate
    from translator.ir import load_program
    text = Path(args.listing).read_text()
    program = load_program(text, args.kernel, args.listing)
    shader = translate(program, tuple(args.block), args.shared_bytes, args.mode)
    Path(args.output).write_bytes(shader.spirv)
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
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())

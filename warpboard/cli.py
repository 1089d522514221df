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

from warpboard.authoring import corpus, newcase, truth, words
from warpboard.authoring.assembler import cli as assemble_cli
from warpboard.authoring.capture import cli as capture_cli
from warpboard.harness.case.model import (
    MAX_BLOCK_DIMS,
    MAX_BLOCK_THREADS,
    MAX_SHARED_BYTES,
    CaseError,
    read_text,
)
from warpboard.harness.files import OutputError, output_problem, write_atomic
from warpboard.harness.run import devices
from warpboard.reports import cli as reports_cli
from warpboard.reports.render import plain
from warpboard.studies import bench, mufu_rates
from warpboard.studies.fuzz import cli as fuzz_cli
from warpboard.studies.fuzz import merge as fuzz_merge
from warpboard.studies.fuzz import reduce as fuzz_reduce

from .args import INTERRUPTED, UsageError, bounded
from .run_cmd import add_run_arguments, cmd_run
from warpboard.translator import DEFAULT_STRATEGY, STRATEGIES, Target, TranslatorError, load_program, translate

DESCRIPTION = ("Run SM86 SASS cases on every Vulkan device and the CPU reference interpreter; "
               "render, merge and compare the scoreboards; translate, measure and write cases.")


class Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line: ``warpboard run: error: ...``."""
    commands: dict[str, argparse.ArgumentParser]     # the subcommands' parsers, by name (top level only)

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


# ------------------------------------------------------------------ devices, translate
def add_devices_arguments(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.add_argument("--icd", action="append", default=[], metavar="FILE",
                   help="a Vulkan ICD file to add to the drivers found (repeatable)")
    return p


def cmd_devices(args: argparse.Namespace) -> int:
    """List every Vulkan device configuration (lavapipe at each subgroup width too) and what
    its subgroup probe found."""
    try:
        rows = devices.describe(devices.discover(extra=tuple(args.icd)))
    except devices.DiscoveryError as exc:
        raise UsageError(str(exc)) from None
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        print(tabulate(rows, headers="keys") if rows else "no Vulkan device found")
    return 0


def add_translate_arguments(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    p.add_argument("listing", help="an SM86 SASS listing (nvdisasm or cuobjdump -sass)")
    p.add_argument("--kernel", help="the kernel to translate (default: the listing's only one)")
    p.add_argument("--block", nargs="+", default=["32"], metavar="DIM",
                   help=f"block size as for new-case: 64, 64,1,1 or 64 1 1 (default 32; at most "
                        f"{MAX_BLOCK_THREADS} threads)")
    p.add_argument("--shared-bytes", type=bounded(int, 0, MAX_SHARED_BYTES), default=16384,
                   help="shared memory in bytes (default 16384)")
    p.add_argument("--mode", choices=["free", "turns"], help="force a mode (turns strategy)")
    p.add_argument("--translator", choices=list(STRATEGIES), default=DEFAULT_STRATEGY,
                   help=f"the built-in strategy (default {DEFAULT_STRATEGY})")
    p.add_argument("--warps", action="store_true",
                   help="for a device whose subgroups are warps (32 lanes in invocation order), where a "
                        "strategy maps collectives on subgroups (default: a device whose subgroups are not)")
    p.add_argument("-o", "--output", default="kernel.spv", help="the SPIR-V file (default kernel.spv)")
    return p


def cmd_translate(args: argparse.Namespace) -> int:
    """Translate one kernel of a listing to a SPIR-V compute shader."""
    try:
        x, y, z = block = (newcase.parse_dims(",".join(args.block), "block") + [1, 1])[:3]
    except newcase.NewCaseError as exc:
        raise UsageError(str(exc)) from None
    if x * y * z > MAX_BLOCK_THREADS or any(d > m for d, m in zip(block, MAX_BLOCK_DIMS)):
        raise UsageError(f"--block {x} {y} {z}: at most {MAX_BLOCK_THREADS} threads, "
                         f"{' '.join(map(str, MAX_BLOCK_DIMS))} per dimension")
    if problem := output_problem(args.output):
        raise UsageError(problem)
    try:
        text = read_text(Path(args.listing), "listing")
        program = load_program(text, args.kernel, args.listing)
        if args.mode and args.translator != DEFAULT_STRATEGY:
            raise UsageError(f"--mode is {DEFAULT_STRATEGY}'s; {args.translator} has no modes")
        shader = translate(program, tuple(block), args.shared_bytes, args.mode, Target(warp_subgroups=args.warps),
                           args.translator)
    except (CaseError, TranslatorError) as exc:
        raise UsageError(str(exc)) from None
    write_atomic(args.output, shader.spirv)
    print(f"{program.name}: {len(program.insts)} instructions, {len(program.blocks)} blocks, "
          f"{args.translator}{f' ({shader.mode} mode)' if shader.mode != args.translator else ''} -> {args.output} "
          f"({len(shader.spirv)} bytes)")
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
    Command("words", "give cases their kernels' SM86 instruction words", words.add_arguments, words.run,
            words.DESCRIPTION),
    Command("record-truth", "record expected values on an NVIDIA GPU", truth.add_arguments, truth.run,
            truth.DESCRIPTION),
    Command("fuzz", "random divergent kernels: build, run, per-device agreement", fuzz_cli.add_arguments,
            fuzz_cli.run, fuzz_cli.DESCRIPTION),
    Command("fuzz-merge", "one summary from the summaries of a campaign's shards", fuzz_merge.add_arguments,
            fuzz_merge.run, fuzz_merge.DESCRIPTION),
    Command("reduce", "shrink a failing generated program to a small case", fuzz_reduce.add_arguments,
            fuzz_reduce.run, fuzz_reduce.DESCRIPTION),
    Command("capture", "record a CUDA program's launches on the GPU as cases", capture_cli.add_arguments,
            capture_cli.run, capture_cli.DESCRIPTION),
    Command("corpus", "compile CUDA code bases and classify every kernel", corpus.add_arguments,
            corpus.run, corpus.DESCRIPTION),
    Command("assemble", "SM86 listing to instruction words; learn the encoding tables, measure them",
            assemble_cli.add_arguments, assemble_cli.run, assemble_cli.DESCRIPTION),
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

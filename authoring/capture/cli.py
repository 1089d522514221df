"""``warpboard capture``: every kernel launch of a CUDA program as a case with the chip's words.

    warpboard capture [--out DIR] [--name NAME] [--max-per-kernel N] [--max-bytes B]
                      [--runs R] [--timeout S] [--check | --no-check] -- PROGRAM ARGS...
    warpboard capture --cases-from DIR [--out CASES] [--check | --no-check]

The first form runs on a machine with an NVIDIA GPU, a CUDA toolkit with CUPTI, and a
program built with an sm_86 target beside the GPU's own
(``-gencode arch=compute_86,code=sm_86 -gencode arch=compute_90,code=sm_90`` on an H200):
it records the program's launches into DIR (default ``build/capture/<NAME>``) and writes
their cases to ``DIR/cases/<NAME>/``. The second writes the cases again from a recorded
capture (a folder carried from the GPU machine), anywhere. Both print what became of
each launch: its case, or why it has none. Each case of a small launch is replayed on the
interpreter as it is written (``--check``: every case; ``--no-check``: none), and a launch
whose replay loads or stores outside its allocations is skipped with that reason.
"""
from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

from ..toolchain import ToolFailed, ToolMissing
from . import cases, check, record
from .log import CaptureError

DESCRIPTION = __doc__


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", help="the capture folder (default build/capture/NAME); with --cases-from, "
                                 "where the cases go (default CAPTURE/cases)")
    p.add_argument("--name", help="the program's name in case ids (default: the program file's name)")
    p.add_argument("--max-per-kernel", type=int, default=8, help="launches kept per kernel (default 8)")
    p.add_argument("--max-bytes", type=int, default=64 << 20,
                   help="device memory a launch may touch to be kept, bytes (default 64 MiB)")
    p.add_argument("--runs", type=int, default=2, choices=range(1, 6), metavar="R",
                   help="runs of the program; launches whose words differ between runs are skipped (default 2)")
    p.add_argument("--timeout", type=float, default=600, help="seconds a run may take (default 600)")
    p.add_argument("--build", help="the command that built the program (kept in each case's provenance)")
    group = p.add_mutually_exclusive_group()
    group.add_argument("--check", dest="check", action="store_const", const="full", default="cheap",
                       help="replay every case on the interpreter once written (by default only launches of at most "
                            f"{check.CHEAP_THREADS} threads, each within {check.CHEAP_SECONDS:g} s); a launch that "
                            "loads or stores outside the allocations its parameters point into is skipped with that "
                            "reason")
    group.add_argument("--no-check", dest="check", action="store_const", const="off",
                       help="replay no case on the interpreter")
    p.add_argument("--cases-from", metavar="DIR", help="write cases from the recorded capture DIR; runs nothing")
    p.add_argument("command_line", nargs=argparse.REMAINDER, help="-- PROGRAM ARGS...")


def summarize(outcomes: list[cases.Outcome], where: Path) -> str:
    kept = [o for o in outcomes if o.case]
    reasons = Counter(cases.reason_kind(o.reason) for o in outcomes if o.reason)
    lines = [f"{len(outcomes)} launches: {len(kept)} cases in {where} ({sum(o.checked for o in kept)} replayed "
             f"on the interpreter), {len(outcomes) - len(kept)} skipped"]
    lines += [f"  {n:5d}  {reason}" for reason, n in reasons.most_common()]
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    command = list(args.command_line)
    if command and command[0] == "--":
        command = command[1:]
    try:
        if args.cases_from:
            if command:
                print("warpboard capture: give either --cases-from DIR or -- PROGRAM, not both", file=sys.stderr)
                return 2
            folder = Path(args.cases_from)
            out = Path(args.out) if args.out else folder / "cases"
        else:
            if not command:
                print("warpboard capture: nothing to run: give -- PROGRAM ARGS...", file=sys.stderr)
                return 2
            name = args.name or Path(command[0]).name
            folder = Path(args.out or f"build/capture/{name}")
            meta = record.record(command, folder, name, args.max_per_kernel, args.max_bytes, args.runs,
                                 args.timeout, args.build)
            if any(meta["exit"]):
                print(f"warpboard capture: `{' '.join(command)}` exited {meta['exit']}; its launches are kept",
                      file=sys.stderr)
            out = folder / "cases"
        outcomes = cases.write_cases(folder, out, check=args.check)
    except (CaptureError, ToolMissing, ToolFailed) as e:
        print(f"warpboard capture: {e}", file=sys.stderr)
        return 1
    print(summarize(outcomes, out))
    return 0

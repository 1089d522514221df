"""``warpboard``: run the scoreboard, list devices, translate one kernel, render and merge reports."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .results import Status


def _add_selection(p: argparse.ArgumentParser) -> None:
    p.add_argument("cases", nargs="*", help="case ids or fnmatch patterns (default: every case)")
    p.add_argument("--root", default="cases", help="the case library (default: cases)")
    p.add_argument("--device", action="append", help="device id or pattern (repeatable; default: all)")
    p.add_argument("--no-interp", action="store_true", help="leave out the CPU reference interpreter")


def cmd_devices(args) -> int:
    from tabulate import tabulate
    from . import devices
    configs = devices.discover()
    rows = devices.describe(configs)
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        print(tabulate(rows, headers="keys") if rows else "no Vulkan device found")
    return 0


def cmd_run(args) -> int:
    from reports import render
    from . import devices, engine
    from .cases import discover_cases
    from .expectations import load_expectations
    cases = discover_cases(args.root, args.cases or None)
    configs = devices.select(devices.discover(), args.device) if args.device != ["none"] else []
    expectations = load_expectations(args.expectations) if args.expectations else None
    total = len(cases) * (len(configs) + (0 if args.no_interp else 1))
    done = [0]

    def progress(r):
        done[0] += 1
        if args.verbose or r.status.is_failure:
            print(f"[{done[0]}/{total}] {r.device:14s} {r.status.value:11s} {r.case}  {r.message[:120]}",
                  file=sys.stderr)

    doc = engine.run_matrix(cases, configs, interp=not args.no_interp,
                            options=engine.Options(timeout_s=args.timeout, budget=args.budget, mode=args.mode),
                            root=args.root, expectations=expectations, repeat=args.repeat, progress=progress)
    print(render.terminal(doc))
    outputs = {"json": args.output, "html": args.html, "markdown": args.markdown}
    for kind, path in outputs.items():
        if path:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            text = json.dumps(doc, indent=1) if kind == "json" else getattr(render, kind)(doc)
            Path(path).write_text(text)
    failed = any(Status(r["status"]).is_failure for r in doc["results"])
    return 1 if failed and args.strict else 0


def cmd_translate(args) -> int:
    from translator.emit import translate
    from translator.ir import load_program
    text = Path(args.listing).read_text()
    program = load_program(text, args.kernel, args.listing)
    shader = translate(program, tuple(args.block), args.shared_bytes, args.mode)
    Path(args.output).write_bytes(shader.spirv)
    print(f"{program.name}: {len(program.insts)} instructions, {len(program.blocks)} blocks, "
          f"{shader.mode} mode -> {args.output} ({len(shader.spirv)} bytes)")
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in ("report", "merge"):
        from reports import cli as reports_cli
        return (reports_cli.report_main if argv[0] == "report" else reports_cli.merge_main)(argv[1:])
    if argv and argv[0] in ("new-case", "record-truth", "bench"):
        from importlib import import_module
        module = {"new-case": "harness.newcase", "record-truth": "harness.truth", "bench": "harness.bench"}[argv[0]]
        return import_module(module).main(argv[1:])
    if argv and argv[0] == "fuzz":
        from .fuzz.cli import run_argv
        return run_argv(argv[1:])
    parser = argparse.ArgumentParser(prog="warpboard", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("run", help="every case on every device: a scoreboard")
    _add_selection(p)
    p.add_argument("-o", "--output", help="results JSON")
    p.add_argument("--html", help="HTML page")
    p.add_argument("--markdown", help="markdown table")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds per case before the worker is killed")
    p.add_argument("--budget", type=int, help="step budget (turns per block, or steps per thread)")
    p.add_argument("--mode", choices=["free", "turns"], help="force a mode (free only for collective-free cases)")
    p.add_argument("--repeat", type=int, default=1, help="run each cell N times; differing runs are FLAKY")
    p.add_argument("--expectations", default="ci/expectations.txt" if Path("ci/expectations.txt").is_file() else None,
                   help="per-device expected failures (XFAIL); default ci/expectations.txt")
    p.add_argument("--strict", action="store_true", help="exit 1 when any cell is a failure")
    p.add_argument("-v", "--verbose", action="store_true", help="print every cell as it finishes")
    p.set_defaults(func=cmd_run)
    p = sub.add_parser("devices", help="list the Vulkan device configurations")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_devices)
    p = sub.add_parser("translate", help="translate one kernel of a listing to SPIR-V")
    p.add_argument("listing")
    p.add_argument("--kernel")
    p.add_argument("--block", type=int, nargs=3, default=[32, 1, 1])
    p.add_argument("--shared-bytes", type=int, default=16384)
    p.add_argument("--mode", choices=["free", "turns"])
    p.add_argument("-o", "--output", default="kernel.spv")
    p.set_defaults(func=cmd_translate)
    sub.add_parser("report", help="render a results JSON (see warpboard report --help)")
    sub.add_parser("merge", help="merge results JSON files (see warpboard merge --help)")
    sub.add_parser("new-case", help="write a case file from a CUDA source")
    sub.add_parser("record-truth", help="record expected values on an NVIDIA GPU")
    sub.add_parser("bench", help="measure the cost of taking turns (JSON out)")
    sub.add_parser("fuzz", help="random divergent kernels: build, run, per-device agreement")
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())

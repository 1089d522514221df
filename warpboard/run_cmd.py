"""``warpboard run``: every selected case on every selected device, the scoreboard, and an
exit status a CI job can trust: 1 when a cell is a failure (``--exit-zero`` keeps 0), 130
when interrupted. The run retries a failing cell once (FLAKY if it then passes), reads the
lists beside the expectations (``ci/flakes.txt``, ``ci/skips.txt``) and gives each case a
watchdog from its recorded cost (``ci/costs.json``); it ends with the failed and flaky cells,
each with the command that reproduces it.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from warpboard.harness.run.expectations import Expectations, load_expectations
from warpboard.harness.case.model import MAX_STEP_BUDGET, CaseError, scan_cases
from warpboard.harness.files import output_problem, write_atomic
from warpboard.harness.run import translators
from warpboard.harness.run import devices, engine
from warpboard.harness.run.results import Status
from warpboard.reports import render

from .args import INTERRUPTED, MAX_REPEAT, MAX_TIMEOUT_S, UsageError, bounded
from .progress import Progress

EXPECTATIONS = "ci/expectations.txt"
FLAKES = "ci/flakes.txt"
SKIPS = "ci/skips.txt"
COSTS = "ci/costs.json"


def _default(path: str) -> str | None:
    return path if Path(path).is_file() else None


def add_run_arguments(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The options of ``warpboard run``: which cases on which devices, and where the reports go."""
    p.add_argument("cases", nargs="*", help="case ids, fnmatch patterns or case files (default: every case)")
    p.add_argument("--root", default="cases", help="the case library (default: cases)")
    p.add_argument("--device", action="append", help="device id or pattern (repeatable; default: all)")
    p.add_argument("--icd", action="append", default=[], metavar="FILE",
                   help="a Vulkan ICD file to add to the drivers found (repeatable; each runs in its own workers)")
    p.add_argument("--translator", action="append", metavar="NAME[=COMMAND]",
                   help="a translator to score (repeatable; default: turns): a built-in strategy (turns, "
                        "subgroup-native), an entry point of the group warpboard.translators, or NAME=COMMAND "
                        "for a command speaking harness/run/translators/external.py's protocol")
    p.add_argument("--no-interp", action="store_true", help="leave out the CPU reference interpreter")
    p.add_argument("-o", "--output", help="results JSON")
    p.add_argument("--html", help="HTML page")
    p.add_argument("--markdown", help="markdown table")
    p.add_argument("--timeout", type=bounded(float, 0, MAX_TIMEOUT_S, above=True), default=60.0,
                   help="the least seconds a case may take before the worker is killed (default 60; a case "
                        f"with a recorded cost gets {engine.COST_FACTOR} times that when it is more)")
    p.add_argument("--costs", default=_default(COSTS),
                   help=f"recorded seconds per case, for the watchdog (default {COSTS} where it exists)")
    p.add_argument("--write-costs", help="record this run's seconds per case (the slowest device) here")
    p.add_argument("--budget", type=bounded(int, 1, MAX_STEP_BUDGET),
                   help="step budget (turns per block, or steps per thread)")
    p.add_argument("--mode", choices=["free", "turns"], help="force a mode (free only for collective-free cases)")
    p.add_argument("--repeat", type=bounded(int, 1, MAX_REPEAT), default=1,
                   help="run each cell N times; differing runs are FLAKY")
    p.add_argument("--retries", type=bounded(int, 0, MAX_REPEAT), default=1,
                   help="run a failing cell again up to N times; one that then passes is FLAKY (default 1)")
    p.add_argument("--expectations", default=_default(EXPECTATIONS),
                   help=f"per-device expected failures (XFAIL); default {EXPECTATIONS}")
    p.add_argument("--flakes", default=_default(FLAKES),
                   help=f"cells whose failures are FLAKY, not failures; default {FLAKES} where it exists")
    p.add_argument("--skips", default=_default(SKIPS), help=f"cells not to run; default {SKIPS} where it exists")
    p.add_argument("--exit-zero", action="store_true", help="exit 0 even when a cell is a failure")
    p.add_argument("--strict", action="store_true", help=argparse.SUPPRESS)   # the default now
    p.add_argument("--jobs", type=bounded(int, 0, 1024), default=0,
                   help="worker processes, each column's cases dealt out among them (default: CPU count)")
    p.add_argument("-v", "--verbose", action="store_true", help="print every cell as it finishes")
    return p


def cmd_run(args: argparse.Namespace) -> int:
    """Every selected case on every selected device; print the table and write the reports."""
    outputs = {"json": args.output, "html": args.html, "markdown": args.markdown}
    for path in filter(None, (*outputs.values(), args.write_costs)):
        if problem := output_problem(path):
            raise UsageError(problem)
    cases, broken = select_cases(args.root, args.cases)
    lists = engine.Lists(_load_list(args.expectations, "expectations"),
                         _load_list(args.flakes, "flakes", statuses=False),
                         _load_list(args.skips, "skips", statuses=False))
    configs = select_devices(args.device, args.icd)
    try:
        chosen = tuple(translators.parse(t) for t in (args.translator or [translators.DEFAULT]))
    except translators.TranslatorSpecError as exc:
        raise UsageError(str(exc)) from None
    if len({t["name"] for t in chosen}) != len(chosen):
        raise UsageError("--translator: each name once")
    options = engine.Options(timeout_s=args.timeout, budget=args.budget, mode=args.mode, retries=args.retries,
                             costs=load_costs(args.costs), translators=chosen)
    progress = Progress((len(cases) + len(broken)) * (len(configs) * len(chosen) + (0 if args.no_interp else 1)),
                        args.verbose)
    try:
        doc = engine.run_matrix(cases, configs, interp=not args.no_interp, options=options, root=args.root,
                                lists=lists, repeat=args.repeat, progress=progress, broken=broken, jobs=args.jobs)
    finally:
        progress.close()
    doc["run"]["translator_commands"] = {t["name"]: t["command"] for t in chosen if "command" in t}
    print(render.terminal(doc))
    for kind, path in outputs.items():
        if path:
            write_atomic(path, json.dumps(doc, indent=1) if kind == "json" else getattr(render, kind)(doc))
    if args.write_costs:
        write_atomic(args.write_costs, json.dumps(costs_of(doc, load_costs(args.write_costs)), indent=1,
                                                  sort_keys=True) + "\n")
    if doc.get("partial"):
        print(f"warpboard run: interrupted; {len(doc['results'])} finished cells kept", file=sys.stderr)
        return INTERRUPTED
    failed = sum(Status(r["status"]).is_failure for r in doc["results"])
    return 1 if failed and not args.exit_zero else 0


def select_cases(root: str, patterns: list[str]) -> tuple[list, list]:
    """The cases the patterns select (a pattern may be a case file's path, as pytest and lit
    take them) and the selected files that did not load."""
    patterns = [_case_id(root, p) for p in patterns]
    try:
        cases, broken = scan_cases(root, patterns or None)
    except CaseError as exc:
        raise UsageError(str(exc)) from None
    if not cases and not broken:
        raise UsageError(f"no case in {root} matches {' '.join(patterns)}" if patterns
                         else f"no case files in {root}")
    return cases, broken


def _case_id(root: str, pattern: str) -> str:
    """``cases/vote/x.toml`` -> ``vote/x``; a pattern that is no file stays as it is."""
    path = Path(pattern)
    if path.suffix != ".toml" or not path.is_file():
        return pattern
    try:
        return path.resolve().relative_to(Path(root).resolve()).with_suffix("").as_posix()
    except ValueError:
        raise UsageError(f"{pattern} is not inside the case library {root} (see --root)") from None


def _load_list(path: str | None, what: str, statuses: bool = True) -> Expectations | None:
    if path is None:
        return None
    try:
        return load_expectations(path, statuses)
    except OSError as exc:
        raise UsageError(f"{path}: cannot read the {what}: {exc.strerror or exc}") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise UsageError(str(exc)) from None


def load_costs(path: str | None) -> dict[str, dict[str, float]]:
    """Case id -> device id -> recorded seconds ({} without a file); a case's single number
    stands for every device."""
    if path is None or not Path(path).is_file():
        return {}
    try:
        costs = json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise UsageError(f"{path}: cannot read the costs: {exc}") from None
    out: dict[str, dict[str, float]] = {}
    for case, value in (costs.items() if isinstance(costs, dict) else [("", None)]):
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            out[case] = {"*": float(value)}
        elif isinstance(value, dict) and all(isinstance(v, (int, float)) for v in value.values()):
            out[case] = {str(d): float(v) for d, v in value.items()}
        else:
            raise UsageError(f"{path}: expected a JSON object of case id -> seconds, or -> device id -> seconds")
    return out


def costs_of(doc: dict, before: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
    """``before`` with each cell of the run at its seconds: a cell that ran through, or one
    that ran out of time (then at least that long: its next watchdog is longer)."""
    out = {case: dict(devices) for case, devices in before.items()}
    for r in doc["results"]:
        if r.get("time_s") is not None and r["status"] in ("PASS", "XFAIL", "PENDING", "FAIL", "TIMEOUT"):
            out.setdefault(r["case"], {}).pop("*", None)
            out[r["case"]][r["device"]] = round(r["time_s"], 2)
    return out


def select_devices(patterns: list[str] | None, icds: list[str] = ()) -> list:
    """The device configurations ``--device`` names (``none``: the interpreter only), among
    those of the drivers found and those ``--icd`` adds."""
    if patterns == ["none"]:
        return []
    try:
        return devices.select(devices.discover(extra=tuple(icds)), patterns)
    except (ValueError, devices.DiscoveryError) as exc:
        raise UsageError(str(exc)) from None

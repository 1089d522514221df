"""``warpboard record-truth``: expected words from a real NVIDIA GPU.

    warpboard record-truth [CASES...] [--force] [--repeat N] [--json OUT] [--from-json IN]

For each selected case with a CUDA ``source``: compile the source for the GPU at hand
(nvcc ``-cubin -arch=sm_XY``, else NVRTC through CuPy), launch ``kernel`` with the case's
grid, block, buffers (``init``) and parameters, ``--repeat`` times, and, when every run
left the same words, write them into the case file as each buffer's ``expected`` and the
provenance as ``expected = "chip"`` with ``recorded_on`` naming the GPU, its compute
capability, the CUDA version and the driver. Only those keys are rewritten; the rest of
the file stays as it is.

Which buffers get ``expected``: those the kernel changed, and those that already had one
(``--all-buffers``: every buffer). Without CASES, every ``expected = "pending"`` case is
selected (those written by ``warpboard new-case``). Cases with ``expected = "derived"``
(worked out by hand or on the CPU) are refused unless ``--force``.

What the kernel prints with ``printf`` is captured (the driver prints it on descriptor 1 at
the synchronisation) and written as the case's ``[printf] expected`` lines, where it printed
any or the case has strings or a ``[printf]`` table; the repeats must print the same lines
(in any order: the order between threads is not defined).

``--json OUT`` also writes what was recorded (every buffer's words, per case) as JSON;
``--from-json IN`` applies such a file, recorded on another machine, without a GPU.
Exit status: 0 all recorded, 1 some refused or failed, 2 cannot start (no CuPy, no GPU,
a broken case file), 3 stopped because the GPU failed or a launch hung.

The command is three modules: this one (choosing cases, the recording rules, the repeats,
``--json``/``--from-json`` and the command line), :mod:`authoring.truth_gpu` (the GPU, touched
only through the runner :func:`make_runner` makes, so the rest is testable without one) and
:mod:`authoring.truth_write` (writing the words into a case file). Their public names are
importable from here.
"""
from __future__ import annotations

import argparse
import fnmatch
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from warpboard.harness.case.model import Case, CaseError, discover_cases
from .truth_gpu import (
    CupyRunner,
    GpuFailure,
    GpuInfo,
    Launched,
    NoGpu,
    Runner,
    TruthError,
    as_launched,
    make_runner,
)
from .truth_write import apply, choose_buffers, rewrite_case_text, toml_lines

# ---------------------------------------------------------------- recording

@dataclass
class Outcome:
    """What became of one case: its status, why, and what was recorded (for ``--json``)."""
    case: str
    status: str                    # recorded | refused | failed | skipped
    message: str = ""
    buffers: dict[str, list[int]] | None = None
    printf: list[str] | None = None


def printf_to_record(case: Case, lines: list[str]) -> list[str] | None:
    """The lines to write as ``[printf] expected``: where the kernel printed any, or the
    case prints (it has strings or a [printf] table already); None: leave the case alone."""
    return list(lines) if lines or case.strings or case.printf_expected is not None else None


def refusal(case: Case, force: bool) -> str | None:
    """Why ``case`` may not be recorded, or None."""
    if case.source is None:
        return "no CUDA `source` to run"
    if case.kernel is None:
        return "no `kernel` named"
    if case.provenance.get("expected") == "derived" and not force:
        return ('its expected words are "derived" (worked out by hand or on the CPU); '
                "use --force to replace them with the chip's")
    return None


def record(cases: list[Case], runner: Runner, *, force: bool = False, repeat: int = 3,
           all_buffers: bool = False, write: bool = True,
           report: Callable[[Outcome], None] = lambda o: None,
           results: dict | None = None) -> list[Outcome]:
    """Run and record every case; ``results`` (if given) collects the JSON document."""
    info = runner.info()
    recorded_on = info.recorded_on(repeat)
    if results is not None:
        results.update({"recorded_on": recorded_on, "gpu": info.name,
                        "compute_capability": f"{info.capability[0]}.{info.capability[1]}",
                        "cuda": info.cuda, "driver": info.driver, "compiler": info.compiler,
                        "repeat": repeat, "cases": results.get("cases", {})})
    outcomes = []
    for case in cases:
        why = refusal(case, force)
        buffers = None
        if why:
            out = Outcome(case.id, "refused", why)
        else:
            try:
                runs = [as_launched(runner.run(case)) for _ in range(repeat)]
                if any(r.buffers != runs[0].buffers for r in runs[1:]):
                    raise TruthError(f"the {repeat} runs left different words: the kernel is "
                                     "not deterministic (atomics' order? a race?); not recorded")
                if any(sorted(r.printf) != sorted(runs[0].printf) for r in runs[1:]):
                    raise TruthError(f"the {repeat} runs printed different lines; not recorded")
                buffers = {b.name: words for b, words in zip(case.buffers, runs[0].buffers)}
                lines = printf_to_record(case, runs[0].printf)
                out = Outcome(case.id, "recorded",
                              apply(case, runs[0].buffers, recorded_on, all_buffers, write, lines),
                              buffers, lines)
            except GpuFailure as e:
                out = Outcome(case.id, "failed", str(e))
                outcomes.append(out)
                _note(results, out)
                report(out)
                raise
            except TruthError as e:
                out = Outcome(case.id, "failed", str(e), buffers)
        outcomes.append(out)
        _note(results, out)
        report(out)
    return outcomes


def _note(results: dict | None, out: Outcome) -> None:
    if results is not None:
        entry = {"status": out.status, "message": out.message}
        if out.buffers is not None:
            entry["buffers"] = out.buffers
        if out.printf is not None:
            entry["printf"] = out.printf
        results.setdefault("cases", {})[out.case] = entry


def apply_json(cases: list[Case], doc: dict, *, force: bool = False, all_buffers: bool = False,
               write: bool = True, report: Callable[[Outcome], None] = lambda o: None) -> list[Outcome]:
    """Apply results recorded elsewhere (``--json``) to the selected cases."""
    recorded = doc.get("cases", {})
    outcomes = []
    for case in cases:
        entry = recorded.get(case.id)
        why = refusal(case, force)
        if entry is None or "buffers" not in entry:
            out = Outcome(case.id, "skipped", "not in the results file" if entry is None
                          else f"not recorded there: {entry.get('message', '')}")
        elif why:
            out = Outcome(case.id, "refused", why)
        else:
            bufs = entry["buffers"]
            try:
                if sorted(bufs) != sorted(b.name for b in case.buffers):
                    raise TruthError(f"the results file has buffers {', '.join(bufs)}, the case "
                                     f"{', '.join(b.name for b in case.buffers)}")
                final = [bufs[b.name] for b in case.buffers]
                for b, words in zip(case.buffers, final):
                    if len(words) != b.words:
                        raise TruthError(f"buffer {b.name}: {len(words)} words recorded, "
                                         f"the case has {b.words}")
                lines = entry.get("printf")
                if lines is not None and not (isinstance(lines, list) and all(isinstance(x, str) for x in lines)):
                    raise TruthError("the results file's printf entry is not a list of lines")
                out = Outcome(case.id, "recorded",
                              apply(case, final, doc["recorded_on"], all_buffers, write, lines), bufs, lines)
            except TruthError as e:
                out = Outcome(case.id, "failed", str(e))
        outcomes.append(out)
        report(out)
    return outcomes


def select(root: str | Path, patterns: list[str], exclude: list[str] = ()) -> list[Case]:
    """The named cases, or (none named) every pending case; minus ``exclude`` patterns."""
    cases = discover_cases(root, patterns or None)
    if not patterns:
        cases = [c for c in cases if c.provenance.get("expected") == "pending"]
    return [c for c in cases if not any(fnmatch.fnmatchcase(c.id, x) for x in exclude)]


DESCRIPTION = ("Run cases' CUDA sources on an NVIDIA GPU (CuPy) and write the words "
               "they leave as the cases' expected values, with provenance.")


def _at_least_one(text: str) -> int:
    """An argparse type: a whole number of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def add_arguments(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add the ``warpboard record-truth`` options to a parser (a fresh one or a subparser)."""
    p.add_argument("cases", nargs="*", help="case ids or fnmatch patterns "
                                            "(default: every case whose expected is \"pending\")")
    p.add_argument("--root", default="cases", help="the case library (default: cases)")
    p.add_argument("--exclude", action="append", default=[],
                   help="leave out cases matching this pattern (repeatable)")
    p.add_argument("--force", action="store_true",
                   help="also overwrite cases whose expected words are \"derived\"")
    p.add_argument("--repeat", type=_at_least_one, default=3,
                   help="runs per case, which must all agree (default 3)")
    p.add_argument("--all-buffers", action="store_true",
                   help="record every buffer, not only those the kernel changed")
    p.add_argument("--json", dest="json_out", help="also write what was recorded as JSON")
    p.add_argument("--from-json", help="apply a JSON written by --json elsewhere (no GPU needed)")
    p.add_argument("--no-write", action="store_true", help="leave the case files alone")
    p.add_argument("--timeout", type=float, default=30.0, help="seconds per launch (default 30)")
    p.add_argument("--compiler", choices=["auto", "nvcc", "nvrtc"], default="auto",
                   help="how to compile for the GPU (default: nvcc if on the PATH, else NVRTC)")
    return p


def main(argv: list[str] | None = None) -> int:
    """``warpboard record-truth`` on its own: parse ``argv`` and run."""
    p = argparse.ArgumentParser(prog="warpboard record-truth", description=DESCRIPTION)
    return run(add_arguments(p).parse_args(argv))


def run(args: argparse.Namespace) -> int:
    """Carry out ``warpboard record-truth`` for parsed arguments; return the exit code."""
    try:
        cases = select(args.root, args.cases, args.exclude)
    except CaseError as e:
        print(f"warpboard record-truth: {e}", file=sys.stderr)
        return 2
    if not cases:
        print("warpboard record-truth: no case selected (no pending cases; name cases to "
              "re-record them)", file=sys.stderr)
        return 0

    def report(o: Outcome) -> None:
        print(f"{o.status:9s} {o.case}" + (f": {o.message}" if o.message else ""), flush=True)

    write = not args.no_write
    if args.from_json:
        try:
            doc = json.loads(Path(args.from_json).read_text())
        except (OSError, ValueError) as e:
            print(f"warpboard record-truth: {args.from_json}: {e}", file=sys.stderr)
            return 2
        outcomes = apply_json(cases, doc, force=args.force, all_buffers=args.all_buffers,
                              write=write, report=report)
    else:
        try:
            runner = make_runner(args.compiler, args.timeout)
        except NoGpu as e:
            print(f"warpboard record-truth: {e}", file=sys.stderr)
            return 2
        results: dict = {}
        outcomes: list[Outcome] = []

        def report_and_save(o: Outcome) -> None:
            outcomes.append(o)
            report(o)
            if args.json_out:
                Path(args.json_out).write_text(json.dumps(results, indent=1))

        print(f"recording on {runner.info().recorded_on(args.repeat)}", flush=True)
        try:
            record(cases, runner, force=args.force, repeat=args.repeat,
                   all_buffers=args.all_buffers, write=write, report=report_and_save,
                   results=results)
        except GpuFailure as e:
            print(f"warpboard record-truth: stopped: {e}", file=sys.stderr)
            return 3
    bad = [o for o in outcomes if o.status != "recorded"]
    print(f"{len(outcomes) - len(bad)} recorded, {len(bad)} not")
    return 1 if bad else 0


__all__ = ["DESCRIPTION", "CupyRunner", "GpuFailure", "GpuInfo", "Launched", "NoGpu", "Outcome",
           "Runner", "TruthError", "add_arguments", "apply", "apply_json", "choose_buffers", "main",
           "make_runner", "printf_to_record", "record", "refusal", "rewrite_case_text", "run",
           "select", "toml_lines"]


if __name__ == "__main__":
    sys.exit(main())

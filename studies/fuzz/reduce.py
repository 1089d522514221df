"""Shrink a failing generated program while it keeps failing the same way.

A generated program is the generator's output for a seed and knobs; the generator marks
*sites* where it can be edited without leaving CUDA's rules (:class:`generate.Site`): every
statement (deleted: its lines go, its exits take no lanes, so the masks after it stay exact),
a lane ``if`` (collapsed to its then or else side: ``true`` with all lanes, ``false`` with
none), a data condition (``true`` / ``false``; masks come from ballots), a loop's trip count
(a constant), a loop's extra condition (dropped), an expression node (its left or right
operand), the launch (one block of 32 threads). Site ids do not depend on the edits, so a
reduction is a set of ``site -> alternative`` edits of the original program.

:func:`reduce_program` is a greedy delta-debugging loop: it tries groups of edits, halving
the group size when none is kept, down to single edits (then the result is 1-minimal). Each
round's candidates are built together (:class:`Checker`: one ``.cu``, one nvcc call, one
CPU-model binary per ``batch``); a candidate counts only when the CPU model accepts it (the
program is still defined) and ``judge`` says it still fails the same way.
"""
from __future__ import annotations

import json
import re
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from warpboard.harness.case.fields import parse_toml
from warpboard.harness.case.model import load_case, load_cases
from warpboard.harness.case.toml_text import toml_string
from warpboard.harness.run.engine import Options
from warpboard.harness.run.results import CaseResult, Status
from warpboard.authoring.toolchain import ARCH
from . import campaign
from . import knobs as knobs_mod
from .build import Built, build_batch
from .generate import Program, Site, generate_edited
from .knobs import Knobs

# the order single edits are tried in: big cuts first
KIND_ORDER = ("statement", "block", "grid", "if_lane", "uniform_trip", "trip", "loop_extra",
              "condition", "expression")

Edits = dict[int, int]
Judge = Callable[[list[Built], Path], list[bool]]


# ---------------------------------------------------------------- what "the same failure" is

def signature(result: CaseResult) -> tuple[str, ...]:
    """The class of a cell's disagreement that a reduction must keep: the status, and for
    wrong words the buffers that differ, for UNSUPPORTED the instruction's mnemonic."""
    status = result.status.value
    if result.status is Status.FAIL:
        return (status, *sorted({m.buffer for m in result.mismatches}))
    if result.status is Status.UNSUPPORTED:
        return (status, unsupported_mnemonic(result.message))
    return (status,)


def unsupported_mnemonic(message: str) -> str:
    """What an UNSUPPORTED message says is missing, without where: ``constant bank 2``, or
    the instruction's mnemonic (``I2F.U16``), else the text with numbers blurred."""
    first = re.sub(r"^\S+:\d+:\s*", "", message.splitlines()[0] if message else "")
    bank = re.match(r"constant bank \S+", first)
    if bank:
        return bank.group(0)
    quoted = re.search(r"'(?:@!?U?P[T0-9]+\s+)?([A-Z][A-Z0-9_]*(?:\.[A-Z0-9_]+)*)", first)
    named = re.search(r"\bunsupported ([A-Z][A-Z0-9_.]*)|\bof ([A-Z][A-Z0-9_.]*)", first)
    if quoted:
        return quoted.group(1)
    if named:
        return named.group(1) or named.group(2)
    return re.sub(r"\d+", "N", first)


# ---------------------------------------------------------------- building candidates

class Checker:
    """Says which programs still fail the same way: builds them in batches of ``batch``
    (nvcc and the CPU model), then asks ``judge`` about the ones the model accepts."""

    def __init__(self, work: Path, judge: Judge, batch: int = 20, jobs: int = 0):
        self.work, self.judge, self.batch, self.jobs = Path(work), judge, batch, jobs
        self.batches = 0
        self.rejected = 0             # candidates the CPU model refused (left the rules)
        self.build_s = self.judge_s = 0.0

    def __call__(self, programs: list[Program]) -> list[bool]:
        verdicts: list[bool] = []
        for start in range(0, len(programs), self.batch):
            verdicts += self._one_batch(programs[start:start + self.batch])
        return verdicts

    def _one_batch(self, programs: list[Program]) -> list[bool]:
        name = f"batch{self.batches:04d}"
        self.batches += 1
        start = time.monotonic()
        built = build_batch(programs, self.work / name, name, self.jobs)
        cases = [b for b in built if b.status == "case"]
        self.rejected += sum(b.status == "rejected" for b in built)
        middle = time.monotonic()
        judged = dict(zip((b.program.name for b in cases), self.judge(cases, self.work / name))) if cases else {}
        self.build_s += middle - start
        self.judge_s += time.monotonic() - middle
        return [judged.get(p.name, False) for p in programs]


def device_judge(device: str, wanted: tuple[str, ...], options, jobs: int = 0) -> Judge:
    """A judge that runs the cases on ``device`` (``interp`` or a Vulkan id) and keeps those
    whose :func:`signature` is ``wanted``."""

    def judge(built: list[Built], root: Path) -> list[bool]:
        cases = load_cases([b.case_path for b in built], root)
        results = {r.case: r for r in campaign.run(cases, columns(device), options, jobs)}
        return [signature(results[c.id]) == wanted for c in cases]
    return judge


# ---------------------------------------------------------------- the greedy loop

@dataclass
class Reduction:
    """The result of a reduction: the edits, the programs before and after, and its cost."""
    seed: int
    knobs: Knobs
    edits: Edits
    original: Program
    reduced: Program
    sites: list[Site]
    tests: int = 0                # candidates built and judged
    rounds: int = 0
    seconds: float = 0.0

    def statements(self, edits: Edits | None = None) -> int:
        """Statements left with ``edits`` (default: this reduction's; ``{}``: the original)."""
        deleted = deleted_statements(self.sites, self.edits if edits is None else edits)
        return sum(1 for s in self.sites if s.kind.startswith("statement") and s.id not in deleted
                   and not deleted.intersection(s.within))


def deleted_statements(sites: list[Site], edits: Edits) -> set[int]:
    return {s.id for s in sites if s.kind.startswith("statement") and edits.get(s.id) == 0}


def moves(sites: list[Site], edits: Edits, singles: bool) -> list[tuple[int, int]]:
    """The edits still worth trying on top of ``edits``: sites not yet edited, not inside a
    deleted statement; every alternative when ``singles``, else the first of each site."""
    deleted = deleted_statements(sites, edits)
    out = []
    for s in sites:
        if s.id in edits or not s.labels or deleted.intersection(s.within):
            continue
        out += [(s.id, alt) for alt in (range(len(s.labels)) if singles else (0,))]
    rank = {kind: i for i, kind in enumerate(KIND_ORDER)}
    return sorted(out, key=lambda m: (rank.get(sites[m[0]].kind.split(":")[0], len(rank)), m[0]))


class Search:
    """The state of one reduction: the current edits and text, and a verdict cache by text."""

    def __init__(self, seed: int, knobs: Knobs, check: Callable[[list[Program]], list[bool]]):
        self.seed, self.knobs, self.check = seed, knobs, check
        self.original, self.sites = generate_edited(seed, knobs)
        self.edits: Edits = {}
        self.current = self.original
        self.verdicts: dict[tuple, bool] = {}
        self.tests = 0

    def program(self, edits: Edits, name: str | None = None) -> Program:
        return generate_edited(self.seed, self.knobs, edits, name)[0]

    @staticmethod
    def key(p: Program) -> tuple:
        return p.source.replace(p.name, "K", 1), p.block, p.grid

    def try_groups(self, groups: list[list[tuple[int, int]]]) -> list[bool]:
        """Which of ``edits + group`` still fail the same way (edits that change nothing are
        taken at once; texts seen before are not built again)."""
        keys, fresh = [], {}
        for group in groups:
            p = self.program({**self.edits, **dict(group)}, f"fz{self.seed}c{self.tests + len(fresh)}")
            key = self.key(p)
            if key == self.key(self.current):
                self.edits.update(group)             # changes nothing (e.g. inside a dropped operand)
                key = None
            elif key not in self.verdicts:
                fresh.setdefault(key, p)
            keys.append(key)
        for key, ok in zip(fresh, self.check(list(fresh.values())) if fresh else []):
            self.verdicts[key] = ok
        self.tests += len(fresh)
        return [self.verdicts.get(key, False) for key in keys]

    def accept(self, group: list[tuple[int, int]]) -> None:
        self.edits.update(group)
        self.current = self.program(self.edits)


def merges(groups: list[list[tuple[int, int]]]) -> list[list[tuple[int, int]]]:
    """Groups that passed alone, merged for the next round: all of them, the first half, the
    first quarter, ... (the first of these that passes is kept)."""
    out, n = [], len(groups)
    while n > 0:
        out.append([m for g in groups[:n] for m in g])
        n //= 2
    return out


def levels(todo: list[tuple[int, int]], size: int, room: int) -> tuple[list[list[tuple[int, int]]], int]:
    """``todo`` cut into groups of ``size``, then of half that size, ... while the groups fit
    in ``room`` candidates (one batch): a round whose big groups all fail has already tried
    the smaller ones. The groups, coarse first, and the smallest size used."""
    groups = [todo[i:i + size] for i in range(0, len(todo), size)]
    while size > 2 and len(groups) + -(-len(todo) // (size // 2)) <= room:
        size //= 2
        groups += [todo[i:i + size] for i in range(0, len(todo), size)]
    return groups, size


def reduce_program(seed: int, knobs: Knobs, check: Callable[[list[Program]], list[bool]],
                   log=lambda text: None, max_tests: int = 2000, batch: int = 20) -> Reduction:
    """The smallest program (edits of the one of ``seed``) ``check`` still accepts, found
    by greedy delta debugging: groups of edits (an eighth of them, and smaller ones while a
    batch of ``batch`` has room, see :func:`levels`) tried in one call to ``check``; the
    first group that passes is kept (the other passing groups are tried merged in the next
    round, see :func:`merges`); none passes: smaller groups, down to single edits (every
    alternative of every site); single edits none of which passes: done (1-minimal)."""
    start = time.monotonic()
    search = Search(seed, knobs, check)
    size, carry, rounds = None, [], 0
    while search.tests < max_tests:
        todo = moves(search.sites, search.edits, singles=size == 1)
        if not todo:
            break
        size = max(1, -(-len(todo) // 8)) if size is None else min(size, len(todo))
        merged = merges(carry)
        groups, finest = levels(todo, size, batch - len(merged)) if size > 1 else ([[m] for m in todo], 1)
        singles = moves(search.sites, search.edits, singles=True)
        if finest == 2 and len(merged) + len(groups) + len(singles) <= batch:
            groups, finest = groups + [[m] for m in singles], 1     # the last level fits too
        groups = merged + groups
        rounds += 1
        passed = [g for g, ok in zip(groups, search.try_groups(groups)) if ok]
        log(f"round {rounds}: {len(todo)} edits left to try, groups of {size}..{finest}: {len(passed)} of "
            f"{len(groups)} kept; {search.tests} programs built so far")
        if passed:
            search.accept(passed[0])
            live = set(moves(search.sites, search.edits, singles=True))
            carry = [kept for g in passed[1:] if g not in merged and (kept := [m for m in g if m in live])]
        elif size == 1:
            break
        else:
            size, carry = max(1, finest // 2), []
    return Reduction(seed, knobs, dict(search.edits), search.original, search.current, search.sites,
                     search.tests, rounds, time.monotonic() - start)


# ---------------------------------------------------------------- the reduced case

REDUCED = ("CPU model of CUDA semantics (cases/tools/cpu_collectives.h: one OS thread per CUDA "
           "thread, warp collectives meet by mask, block barriers among the block's threads) run on "
           "this source; the program is the one warpboard fuzz generated from seed {seed} ({knobs}), "
           "reduced by warpboard reduce with {edits} edits while it still gave {failure} on {device}")


def sass_instructions(listing: str) -> int:
    """Instruction lines of an nvdisasm listing (``/*0040*/ ...``)."""
    return len(re.findall(r"^\s*/\*[0-9a-f]{4,}\*/", listing, re.MULTILINE))


def write_case(r: Reduction, out_dir: Path, name: str, derivation: str, jobs: int = 0,
               step_budget: int | None = None) -> Path:
    """The reduced program as a case ``out_dir/NAME.toml`` with ``NAME.cu`` and
    ``NAME.sm_86.sass`` beside it, its expected words the CPU model's (``derived``), and the
    step budget it was reduced under (a LIVELOCK under a small budget passes under the default)."""
    program = generate_edited(r.seed, r.knobs, r.edits, name)[0]
    built = build_batch([program], Path(out_dir), name, jobs)[0]
    if built.status != "case":
        raise RuntimeError(f"{Path(out_dir) / (name + '.cu')}: the reduced program does not build: {built.message}")
    summary = (f"Random divergent kernel of seed {r.seed}, reduced to {r.statements()} statements "
               f"({program.block} threads x {program.grid} blocks).")
    text = built.case_path.read_text()
    text = re.sub(r"(?m)^summary = .*$", lambda m: f"summary = {toml_string(summary)}", text, count=1)
    text = re.sub(r"(?m)^derivation = .*$", lambda m: f"derivation = {toml_string(derivation)}", text, count=1)
    built.case_path.write_text(with_step_budget(text, step_budget))
    return built.case_path


def with_step_budget(text: str, step_budget: int | None) -> str:
    """A case file's text with ``step_budget = N`` after its summary (None: as it is)."""
    if step_budget is None:
        return text
    text = re.sub(r"(?m)^step_budget = .*\n", "", text)
    return re.sub(r"(?m)^(summary = .*\n)", lambda m: m.group(1) + f"step_budget = {step_budget}\n", text, count=1)


# ---------------------------------------------------------------- warpboard reduce

def add_arguments(p) -> None:
    p.add_argument("case", help="a failing case of a fuzz campaign (fz<seed>.toml beside campaign.json)")
    p.add_argument("--device", default="interp", help="where it fails: interp (default) or a Vulkan device id")
    p.add_argument("--out", default="cases/random", help="directory of the reduced case (default cases/random)")
    p.add_argument("--name", help="name of the reduced case and kernel (default fz<seed>_<status>)")
    p.add_argument("--knobs", help="knob file of the campaign (default: the one campaign.json names)")
    p.add_argument("--seed", type=int, help="the program's seed (default: from campaign.json)")
    p.add_argument("--work", help="directory for the candidates' batches (default build/reduce/<name>)")
    p.add_argument("--batch", type=int, default=20, help="candidates per nvcc / g++ call (default 20)")
    p.add_argument("--max-tests", type=int, default=2000, help="stop after building this many candidates")
    p.add_argument("--jobs", type=int, default=0, help="parallel processes (default: CPU count)")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds per case before the worker is killed")
    p.add_argument("--budget", type=int, help="step budget override")


def origin(case_path: Path, seed: int | None, knobs_path: str | None) -> tuple[int, str | None]:
    """The seed and knob file of a campaign's case (from campaign.json beside it)."""
    name = parse_toml(case_path, case_path.read_text())["name"]
    doc_path = case_path.parent / "campaign.json"
    doc = json.loads(doc_path.read_text()) if doc_path.is_file() else {}
    entry = doc.get("programs", {}).get(name)
    if seed is None and entry is None:
        raise ValueError(f"{case_path}: {name} is not in {doc_path}; give --seed (and --knobs)")
    return (seed if seed is not None else entry["seed"]), (knobs_path or doc.get("knobs"))


def columns(device: str):
    """The campaign column of ``device`` (``interp`` or a Vulkan id / pattern: the first match)."""
    interp = device == campaign.INTERP
    found = campaign.columns_for(None if interp else [device], interp)[:1]
    if not found:
        raise ValueError(f"no device matches {device!r} (see warpboard devices)")
    return found


def run_case(path: Path, device: str, options) -> CaseResult:
    """One case file on one device."""
    return campaign.run([load_case(path, path.parent)], columns(device), options, 1)[0]


def report(r: Reduction, before: CaseResult, after: CaseResult, written: Path, checker: Checker) -> str:
    """What the reduction did: statements, source and SASS lines before and after, its cost."""
    orig_sass = Path(checker.work / "batch0000" / f"fz{r.seed}c.{ARCH}.sass")
    new_sass = written.with_name(f"{written.stem}.{ARCH}.sass")
    rows = [("statements", r.statements({}), r.statements()),
            ("source lines", len(r.original.source.splitlines()), len(r.reduced.source.splitlines())),
            ("sm_86 instructions", sass_instructions(orig_sass.read_text()) if orig_sass.is_file() else "?",
             sass_instructions(new_sass.read_text())),
            ("threads x blocks", f"{r.original.block} x {r.original.grid}", f"{r.reduced.block} x {r.reduced.grid}")]
    lines = [f"{written}: {' '.join(signature(after))} on {after.device} (the original: {' '.join(signature(before))})"]
    lines += [f"  {what:20s} {a!s:>8} -> {b}" for what, a, b in rows]
    lines.append(f"  {len(r.edits)} edits in {r.rounds} rounds; {r.tests} candidates built in {checker.batches} "
                 f"batches ({checker.rejected} rejected by the CPU model); {r.seconds:.0f} s "
                 f"({checker.build_s:.0f} s nvcc + CPU model, {checker.judge_s:.0f} s on {after.device})")
    if after.message:
        lines.append(f"  {after.message.splitlines()[0][:200]}")
    return "\n".join(lines)


def run(args) -> int:
    """``warpboard reduce``: see :data:`DESCRIPTION`."""
    try:
        return _reduce(args, lambda text: print(text, file=sys.stderr, flush=True))
    except (OSError, ValueError, KeyError, RuntimeError) as e:
        print(f"warpboard reduce: {e}", file=sys.stderr)
        return 2


def _reduce(args, say) -> int:
    case_path = Path(args.case)
    seed, knobs_path = origin(case_path, args.seed, args.knobs)
    knobs = knobs_mod.load(knobs_path)
    check_origin(case_path, seed, knobs, knobs_path)
    options = Options(timeout_s=args.timeout, budget=args.budget)
    first = run_case(case_path, args.device, options)
    if first.status in (Status.PASS, Status.XFAIL):
        raise ValueError(f"{case_path}: {first.status.value} on {args.device}: nothing to reduce")
    wanted = signature(first)
    name = args.name or f"fz{seed}_{first.status.value.lower()}"
    work = Path(args.work or Path("build/reduce") / name)
    shutil.rmtree(work, ignore_errors=True)
    say(f"{case_path}: {' '.join(wanted)} on {args.device}; reducing (candidates in {work})")
    checker = Checker(work, device_judge(args.device, wanted, options, args.jobs), args.batch, args.jobs)
    if not checker([generate_edited(seed, knobs, None, f"fz{seed}c")[0]])[0]:
        raise ValueError(f"{case_path}: the regenerated program does not give {' '.join(wanted)} on "
                         f"{args.device} with the CPU model's words")
    r = reduce_program(seed, knobs, checker, say, args.max_tests, args.batch)
    derivation = REDUCED.format(seed=seed, knobs=knobs_path or "default knobs", edits=len(r.edits),
                                failure=" ".join(wanted), device=args.device)
    budget = args.budget or load_case(case_path, case_path.parent).step_budget
    written = write_case(r, Path(args.out), name, derivation, args.jobs, budget)
    again = run_case(written, args.device, options)
    print(report(r, first, again, written, checker))
    return 0 if signature(again) == wanted else 1


def check_origin(case_path: Path, seed: int, knobs: Knobs, knobs_path: str | None) -> None:
    """The case's source must hold the program the seed and knobs give (else the knobs differ)."""
    case = load_case(case_path, case_path.parent)
    if case.source is None or generate_edited(seed, knobs)[0].source not in case.source.read_text():
        raise ValueError(f"{case_path}: its source is not the program of seed {seed} under "
                         f"{knobs_path or 'the default knobs'} (give --seed / --knobs)")


DESCRIPTION = """Shrink a failing generated program while the same disagreement remains.

    warpboard reduce CASE [--device interp|ID] [--out DIR] [--name NAME] [--batch N]

CASE is a case of a ``warpboard fuzz`` campaign (its seed and knob file are read from the
campaign.json beside it, or --seed / --knobs). The case is run on the device; its failure
class (LIVELOCK, wrong words on the same buffers, UNSUPPORTED with the same mnemonic, ...)
is what every smaller program must still show, with the CPU model's words as expected and
the CPU model accepting it (the program still defined). Edits: delete statements (and
collectives), collapse lane branches to one side, data conditions to true / false, trip
counts to constants, expressions to an operand, the launch to one block of 32 threads;
tried in groups, one nvcc + one g++ per batch of candidates, down to single edits. The
smallest program becomes DIR/NAME.toml with NAME.cu and NAME.sm_86.sass beside it
(expected words from the CPU model, provenance derived)."""

"""Learning the SM86 encoding tables from nvcc's code: ``warpboard assemble --learn``.

Every training listing (:mod:`.training`: the case library's CUDA sources, corpus/cub, the
HeCBench programs, and the public corpus when its trees are there) pairs each instruction's
text with the 128-bit word nvcc gave it. The instructions are grouped by form (:mod:`.forms`);
each form's model is found with nvdisasm and checked against every sample (:mod:`.fit`); the
forms nvdisasm reads one modifier away from nvcc's are added (:mod:`.explore`).

The control bits are not part of a form. For an instruction whose listing does not give its
word, the assembler uses the bits learned here per opcode, chosen to be safe rather than
fast: stall 15 cycles (longer than any fixed-latency result takes, so no fixed-latency
dependency needs a scoreboard), wait on all six scoreboards (so every variable-latency result
and every source read is complete before the next instruction issues), a write scoreboard
(SB0) on the opcodes nvcc ever gave one and a read scoreboard (SB1) on those it ever gave one
(so the waits above cover them), no operand reuse (a cache hint; leaving it off is always
correct), and the yield bit nvcc sets with its longest stalls (nvdisasm refuses the other with
a stall of 12 or more). Instructions then run one at a time, each after everything before it
has finished: slower than nvcc's schedule, never wrong. nvdisasm must accept each form's word
with its opcode's control bits; a form whose word it refuses so is left out.
"""
from __future__ import annotations

import re
import time
from collections import Counter, defaultdict
from pathlib import Path

from warpboard.harness.files import write_atomic
from warpboard.translator import SassSyntaxError, parse_listing

from ..toolchain import find_nvcc, find_nvdisasm, nvcc_version, tool_release
from .encode import resolver
from .explore import explore, progress_every
from .fit import FitResult, Sample, fit_forms
from .forms import Context, shape
from .table import TABLE_PATH, Table
from .training import CACHE, SETS, Compiled, compile_sets
from .words import CONTROL_SHIFT, OPERATION_MASK, control_bits, control_field, control_of, disassemble_words, listing_words

SAFE_STALL, WAIT_ALL, NO_BARRIER, WRITE_SB, READ_SB = 15, 0x3F, 7, 0, 1


class Gathered:
    """The distinct samples of every form, how many instructions each form had, and what nvcc
    did with each opcode's control bits."""

    def __init__(self):
        self.groups: dict[str, list[Sample]] = defaultdict(list)
        self.count: Counter = Counter()
        self.words: dict[str, set[int]] = defaultdict(set)
        self.write: set[str] = set()
        self.read: set[str] = set()
        self.yields: Counter = Counter()
        self.unparsed: list[str] = []

    def add_listing(self, text: str, file: str) -> None:
        words = listing_words(text)
        listing = parse_listing(text, file)
        for kernel in listing:
            try:
                section = listing[kernel]
            except SassSyntaxError as e:
                self.unparsed.append(str(e))
                continue
            given, targets, context = words.get(kernel, {}), resolver(section), Context()
            for raw in section.instructions:
                word = given.get(raw.pc)
                if word is not None:
                    self.add(raw, shape(raw, targets, context=context), word, f"{file}:{raw.line}")
                context.follow(raw)

    def add(self, raw, found, word: int, where: str) -> None:
        key, op = found.key, word & OPERATION_MASK
        self.count[key] += 1
        opcode = raw.opcode.split(".", 1)[0]
        control = control_of(word)
        if control_field(control, "write") != NO_BARRIER:
            self.write.add(opcode)
        if control_field(control, "read") != NO_BARRIER:
            self.read.add(opcode)
        self.yields[control_field(control, "stall"), control_field(control, "yield")] += 1
        if op not in self.words[key]:
            self.words[key].add(op)
            self.groups[key].append(Sample(found, word, raw.pc, where))


def safe_controls(gathered: Gathered, opcodes: set[str]) -> tuple[dict[str, int], int]:
    """The control bits for each opcode (see the module's docstring) and for the rest."""
    longest = max((stall for stall, _ in gathered.yields), default=0)
    yield_bit = max((0, 1), key=lambda y: gathered.yields[longest, y])
    default = control_bits(stall=SAFE_STALL, **{"yield": yield_bit}, write=NO_BARRIER, read=NO_BARRIER,
                           wait=WAIT_ALL)
    out = {}
    for op in sorted(opcodes):
        bits = control_bits(stall=SAFE_STALL, **{"yield": yield_bit},
                            write=WRITE_SB if op in gathered.write else NO_BARRIER,
                            read=READ_SB if op in gathered.read else NO_BARRIER, wait=WAIT_ALL)
        if bits != default:
            out[op] = bits
    return out, default


def check_controls(table: Table, fit: FitResult, nvdisasm: str) -> None:
    """Every form's first sample with its opcode's safe control bits must be a legal word;
    a form whose word nvdisasm refuses so is moved to ``fit.failed``."""
    keys = sorted(table.forms)
    words = [(fit.words[k] & OPERATION_MASK) | table.control_for(_opcode(k)) << CONTROL_SHIFT for k in keys]
    texts = disassemble_words(words, nvdisasm)
    for key, text in zip(keys, texts):
        if text is None:
            fit.failed[key] = "nvdisasm refuses its word with the safe control bits"
            del table.forms[key]


def _opcode(key: str) -> str:
    return key.removeprefix("@UP ").split(" ", 1)[0]


def learn(sets: tuple[str, ...] = SETS, out: Path | None = TABLE_PATH, cache: Path = CACHE,
          log=print) -> tuple[Table, FitResult, Compiled]:
    """Compile (or take from the cache) the training sets, fit every form, write the tables
    to ``out`` (None: do not write). Returns the tables, the fit and the compiled sets."""
    nvdisasm, started = find_nvdisasm(), time.monotonic()

    def compiling(k: int, n: int, name: str) -> None:
        if k % 25 == 0:
            log(f"compiling {k}/{n}: {name}")
    compiled = compile_sets(sets, cache, compiling)
    gathered = Gathered()
    for source, text in compiled.listings.items():
        gathered.add_listing(text, source.name)
    log(f"{sum(gathered.count.values())} instructions, {len(gathered.groups)} forms from "
        f"{len(compiled.listings)} listings ({len(compiled.failed)} sources did not compile)")
    fit = fit_forms(dict(gathered.groups), nvdisasm, progress_every(log, "probing"), explore=True)
    for key, model in fit.models.items():
        model.samples = gathered.count[key]
    explore(fit, gathered.groups, nvdisasm, log)
    control, default = safe_controls(gathered, {_opcode(k) for k in fit.models})
    table = Table(dict(fit.models), control, default)
    check_controls(table, fit, nvdisasm)
    table.about = {"arch": "sm_86", "nvcc": nvcc_version(find_nvcc()), "nvdisasm": tool_release(nvdisasm),
                   "sources": {s: sum(1 for src in compiled.listings if src.set == s) for s in sets},
                   "instructions": sum(gathered.count.values()),
                   "forms": {"nvcc": sum(1 for m in table.forms.values() if m.samples),
                             "explored": sum(1 for m in table.forms.values() if not m.samples)},
                   "unfit": {k: _short(v) for k, v in sorted(fit.failed.items()) if k in gathered.groups},
                   "command": "warpboard assemble --learn --sets " + ",".join(sets)}
    log(f"{len(table.forms)} forms fitted ({table.about['forms']['nvcc']} of nvcc's), "
        f"{len(table.about['unfit'])} of nvcc's left out, in {time.monotonic() - started:.0f} s")
    if out is not None:
        write_atomic(str(out), table.dumps())
        log(f"wrote {out}")
    return table, fit, compiled


def _short(reason: str) -> str:
    """A reason without the training file's place (which names a cache path)."""
    return re.sub(r"^\S+:\d+: ", "", reason)[:160]


__all__ = ["Gathered", "learn", "safe_controls"]

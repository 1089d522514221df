"""Seeded mutations of the real listings in ``cases/``, for the mutation fuzzer (test_mutants).

A mutant is a library case whose kernel has had one to three edits: an instruction line
deleted, replaced by NOP, duplicated or swapped with another (addresses renumbered so the
kernel stays contiguous), its opcode or a modifier changed, a register, an immediate or a
branch target changed, a guard added, removed or negated. Every edit is drawn from a
``random.Random(seed)``, so a mutant is named by ``(seed, index)`` and made again from it.

Edits stay inside the case's kernel; the rest of the listing is untouched, and lines keep
their numbers unless lines are deleted or duplicated, so errors still name real lines.
"""
from __future__ import annotations

import dataclasses
import random
import re
from dataclasses import dataclass
from functools import cached_property

from warpboard.harness.case.model import Case
from warpboard.translator.errors import TranslatorError
from warpboard.translator.ir.program import load_program
from warpboard.translator.isa import ops
from warpboard.translator.sass.listing import parse_listing

_INSTRUCTION = re.compile(r"^(\s*/\*)([0-9a-fA-F]{4,})(\*/\s*)(.*?)(\s*;.*)?$")
_LABEL_LINE = re.compile(r"^\s*(\.L_x_\d+):\s*$")
_GUARD = re.compile(r"^@(!?)(U?P[0-6T])\s+")
_REGISTER = re.compile(r"(?<![\w.])(!?)(UR|R|UP|P|B)(\d+|Z|T)(?![\w\[])")
_IMMEDIATE = re.compile(r"(?<![\w.])(?<!c\[)(?<!cx\[)(-?)(0x[0-9a-fA-F]+)(?![\w.])")
_LABEL_REF = re.compile(r"`\(([^)]*)\)")
_OPCODE = re.compile(r"^(@!?U?P[0-6T]\s+)?([A-Z][A-Z0-9_]*(?:\.[A-Z0-9_]+)*)")

# values an immediate is changed to, besides a bit flip and a small step
INTERESTING = (0, 1, 2, 4, 0x1F, 0x20, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 0x10000, 0x100000000)
REGISTER_FILES = {"R": 255, "UR": 63, "P": 7, "UP": 7, "B": 16}     # numbers that parse, plus 1


@dataclass(frozen=True)
class Mutant:
    """One mutated case: where it came from and what was done to it."""
    seed: int
    index: int
    origin: str                 # the library case's id
    edits: tuple[str, ...]      # one per edit: "line 23: register: R2 -> R7 in 'IADD3 R2, ...'"
    case: Case

    @property
    def name(self) -> str:
        return f"mutant {self.seed}:{self.index} of {self.origin}"

    def describe(self) -> str:
        return f"{self.name} ({'; '.join(self.edits) or 'no edit applied'})"


@dataclass
class _Source:
    """A library case with its listing split into lines and its kernel's instruction lines."""
    case: Case

    @cached_property
    def lines(self) -> list[str]:
        return self.case.listing_text.splitlines()

    @cached_property
    def span(self) -> tuple[int, int]:
        listing = parse_listing(self.case.listing_text)
        kernel = self.case.kernel if self.case.kernel in listing else next(iter(listing))
        return listing.span(kernel)


class _Edit:
    """The lines of one mutant's kernel while it is being edited."""

    def __init__(self, source: _Source, rng: random.Random, corpus: "Corpus"):
        self.lines = list(source.lines)
        self.start, self.end = source.span
        self.rng, self.corpus = rng, corpus
        self.first_line = source.case.listing_line

    def instruction_rows(self) -> list[int]:
        return [k for k in range(self.start, self.end) if _INSTRUCTION.match(self.lines[k])]

    def labels(self) -> list[str]:
        return [m.group(1) for k in range(self.start, self.end) if (m := _LABEL_LINE.match(self.lines[k]))]

    def body(self, row: int) -> str:
        return _INSTRUCTION.match(self.lines[row]).group(4)

    def set_body(self, row: int, body: str) -> None:
        m = _INSTRUCTION.match(self.lines[row])
        self.lines[row] = m.group(1) + m.group(2) + m.group(3) + body + " ;"

    def renumber(self) -> None:
        """Give the kernel's instructions consecutive addresses from its first one."""
        rows = self.instruction_rows()
        if not rows:
            return
        first = _INSTRUCTION.match(self.lines[rows[0]])
        pc, width = int(first.group(2), 16), len(first.group(2))
        for row in rows:
            m = _INSTRUCTION.match(self.lines[row])
            self.lines[row] = f"{m.group(1)}{pc:0{width}x}{m.group(3)}{m.group(4)}{m.group(5) or ''}"
            pc += 16


# ---------------------------------------------------------------- the edits
# Each takes the kernel being edited and one of its instruction rows and returns what it did,
# or None when it does not apply to that row (an instruction without a register, say).

def delete_line(e: _Edit, row: int) -> str:
    text = e.body(row)
    del e.lines[row]
    e.end -= 1
    e.renumber()
    return f"'{text}'"


def replace_with_nop(e: _Edit, row: int) -> str:
    text = e.body(row)
    e.set_body(row, "NOP")
    return f"'{text}'"


def duplicate_line(e: _Edit, row: int) -> str:
    e.lines.insert(row + 1, e.lines[row])
    e.end += 1
    e.renumber()
    return f"'{e.body(row)}'"


def swap_lines(e: _Edit, row: int) -> str | None:
    rows = e.instruction_rows()
    k = rows.index(row)
    near = rows[max(0, k - 3):k] + rows[k + 1:k + 4]
    other = e.rng.choice(near if near and e.rng.random() < 0.7 else rows)
    if other == row:
        return None
    a, b = e.body(row), e.body(other)
    e.set_body(row, b)
    e.set_body(other, a)
    return f"'{a}' and '{b}'"


def change_opcode(e: _Edit, row: int) -> str | None:
    body = e.body(row)
    m = _OPCODE.match(body)
    if not m:
        return None
    operands = body[m.end():]
    count = operands.count(",") + 1 if operands.strip() else 0
    new = e.rng.choice(e.corpus.opcodes_by_arity.get(count) or e.corpus.opcodes)
    e.set_body(row, (m.group(1) or "") + new + operands)
    return f"{m.group(2)} -> {new}"


def change_modifier(e: _Edit, row: int) -> str | None:
    body = e.body(row)
    m = _OPCODE.match(body)
    if not m:
        return None
    base, *mods = m.group(2).split(".")
    spec = ops.lookup(base)
    choices = sorted(spec.mods) if spec and spec.mods else sorted(e.corpus.modifiers)
    action = e.rng.choice(["drop", "add", "replace"] if mods else ["add"])
    if action == "drop":
        mods.pop(e.rng.randrange(len(mods)))
    elif action == "add":
        mods.insert(e.rng.randint(0, len(mods)), e.rng.choice(choices))
    else:
        mods[e.rng.randrange(len(mods))] = e.rng.choice(choices)
    new = ".".join([base, *mods])
    e.set_body(row, (m.group(1) or "") + new + body[m.end():])
    return f"{m.group(2)} -> {new}"


def change_register(e: _Edit, row: int) -> str | None:
    body = e.body(row)
    found = list(_REGISTER.finditer(body))
    if not found:
        return None
    m = e.rng.choice(found)
    bang, file, number = m.groups()
    roll = e.rng.random()
    if file in ("P", "UP") and roll < 0.3:
        new = ("" if bang else "!") + file + number          # negate a predicate
    elif roll < 0.05:
        new = bang + file + str(REGISTER_FILES[file] + e.rng.randint(0, 300))   # past the file
    elif roll < 0.15:
        new = bang + file + ("T" if file in ("P", "UP") else "Z")
    else:
        now = int(number) if number.isdigit() else 0
        top = REGISTER_FILES[file] - 1
        pick = now + e.rng.choice([-2, -1, 1, 2]) if e.rng.random() < 0.6 else e.rng.randint(0, min(top, 40))
        new = bang + file + str(max(0, min(pick, top)))
    e.set_body(row, body[:m.start()] + new + body[m.end():])
    return f"{m.group(0)} -> {new} in '{body}'"


def change_immediate(e: _Edit, row: int) -> str | None:
    body = e.body(row)
    found = list(_IMMEDIATE.finditer(body))
    if not found:
        return None
    m = e.rng.choice(found)
    value = int(m.group(2), 16)
    roll = e.rng.random()
    if roll < 0.4:
        value = e.rng.choice(INTERESTING)
    elif roll < 0.7:
        value ^= 1 << e.rng.randrange(32)
    else:
        value = max(0, value + e.rng.choice([-8, -4, -1, 1, 4, 8]))
    new = m.group(1) + hex(value)
    e.set_body(row, body[:m.start()] + new + body[m.end():])
    return f"{m.group(0)} -> {new} in '{body}'"


def change_target(e: _Edit, row: int) -> str | None:
    body = e.body(row)
    m = _LABEL_REF.search(body)
    labels = e.labels()
    if not m or not labels or not m.group(1).startswith(".L"):
        return None
    new = e.rng.choice(labels)
    e.set_body(row, body[:m.start()] + f"`({new})" + body[m.end():])
    return f"{m.group(1)} -> {new} in '{body}'"


def change_guard(e: _Edit, row: int) -> str:
    body = e.body(row)
    m = _GUARD.match(body)
    if m and e.rng.random() < 0.5:
        new = body[m.end():]                                      # drop the guard
    elif m:
        new = f"@{'' if m.group(1) else '!'}{m.group(2)} " + body[m.end():]   # negate it
    else:
        new = f"@{e.rng.choice(['', '!'])}P{e.rng.randint(0, 3)} " + body
    e.set_body(row, new)
    return f"'{body}' -> '{new}'"


EDITS = {"delete": delete_line, "nop": replace_with_nop, "duplicate": duplicate_line, "swap": swap_lines,
         "opcode": change_opcode, "modifier": change_modifier, "register": change_register,
         "immediate": change_immediate, "target": change_target, "guard": change_guard}
WEIGHTS = {"delete": 2, "nop": 1, "duplicate": 2, "swap": 3, "opcode": 2, "modifier": 3, "register": 5,
           "immediate": 3, "target": 2, "guard": 2}


# ---------------------------------------------------------------- the corpus
class Corpus:
    """The library cases that mutants start from, and the opcodes seen in their listings."""

    def __init__(self, cases: list[Case]):
        self.sources = [_Source(c) for c in sorted(cases, key=lambda c: c.id)]
        seen: dict[str, int] = {}
        for source in self.sources:
            for k in range(*source.span):
                m = _INSTRUCTION.match(source.lines[k])
                body = m and _OPCODE.match(m.group(4))
                if body:
                    rest = m.group(4)[body.end():]
                    seen.setdefault(body.group(2), rest.count(",") + 1 if rest.strip() else 0)
        self.opcodes = sorted(seen)
        self.opcodes_by_arity: dict[int, list[str]] = {}
        for opcode, arity in sorted(seen.items()):
            self.opcodes_by_arity.setdefault(arity, []).append(opcode)
        self.modifiers = sorted({m for op in self.opcodes for m in op.split(".")[1:]})
        self.forms = {form for source in self.sources for form in instruction_forms(source.case)}

    def novel_forms(self, case: Case) -> list[str]:
        """The instruction forms of ``case`` that no library listing uses (see instruction_forms)."""
        return sorted(f"{opcode} {', '.join(kinds)}" for opcode, kinds in instruction_forms(case) - self.forms)

    def mutant(self, seed: int, index: int) -> Mutant:
        """Mutant ``index`` of the series ``seed`` (the same every time)."""
        rng = random.Random(seed * 1_000_003 + index)
        source = rng.choice(self.sources)
        edit = _Edit(source, rng, self)
        done: list[str] = []
        for _ in range(rng.choice([1, 1, 1, 2, 2, 3])):
            done.append(self._one_edit(edit, rng))
        text = "\n".join(edit.lines) + "\n"
        case = dataclasses.replace(source.case, listing_text=text)
        return Mutant(seed, index, source.case.id, tuple(d for d in done if d), case)

    def _one_edit(self, edit: _Edit, rng: random.Random) -> str:
        """One edit on a random instruction of the kernel: 'line N: what' ('' if none applied)."""
        for _ in range(8):
            rows = edit.instruction_rows()
            if not rows:
                return ""
            row = rng.choice(rows)
            kind = rng.choices(list(WEIGHTS), list(WEIGHTS.values()))[0]
            before = list(edit.lines)
            what = EDITS[kind](edit, row)
            if what and edit.lines != before:
                return f"line {edit.first_line + row}: {kind}: {what}"
            edit.lines, edit.end = before, edit.end - (len(edit.lines) - len(before))
        return ""


def instruction_forms(case: Case) -> set[tuple[str, tuple[str, ...]]]:
    """Each instruction's opcode with its modifiers and the kinds of its operands, in order
    (``("ISETP.NE.AND", ("pred", "pred", "reg", "reg", "pred"))``); empty when it does not load.
    The opcode table names no operand layouts, so a form outside the library's is untested."""
    try:
        program = load_program(case.listing_text, case.kernel, str(case.listing_path), case.listing_line)
    except TranslatorError:
        return set()
    return {(i.opcode, tuple(o.kind for o in i.ops)) for i in program.insts}

"""Assembled words back through nvdisasm: does ``nvdisasm --binary SM86`` read each word as the
instruction the listing wrote?

Each instruction is compared by its form and its numbers (:mod:`.forms`), not by its text (as
written, or as the form it was encoded as where the listing spells it otherwise: ``[R2.64]``
where nvdisasm writes ``[R2]``, :func:`encode.encode_instruction`): labels are addresses on both
sides (nvdisasm prints ``BRA 0x170`` where the listing says
``BRA `(.L_x_0)``), an immediate is the same if its 32 bits are (``0xffffffff`` and ``-0x1``),
a float immediate if its bits are, and ``.reuse`` flags and fields nvdisasm does not print
(``~``) are not compared. Many kernels are disassembled in one nvdisasm run, one after another
(:func:`compare_sections`); :func:`roundtrip` checks one kernel and says what differs first:
``instruction 0x0120: words say '...', listing says '...'``.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from warpboard.translator import parse_listing

from .encode import AssemblerError, Encoded, encode_section, pick_kernel, resolver
from .forms import IMPLICIT, label_slots, parse_texts, shape
from .table import Table, load_table
from .words import NOP_WORD, disassemble_words, listing_words

_LABEL = re.compile(r"`\(([^)]*)\)")


@dataclass
class Checked:
    """One kernel's instructions after the round trip: each one's form, whether it was
    encoded, and whether nvdisasm read its word back as the listing wrote it."""
    kernel: str
    encoded: list[Encoded]
    matched: list[bool] = field(default_factory=list)
    differences: list[str] = field(default_factory=list)

    @property
    def first_difference(self) -> str | None:
        errors = [e.error for e in self.encoded if e.error]
        return errors[0] if errors else self.differences[0] if self.differences else None


def _same_number(a, b, pc_a: int, pc_b: int) -> bool:
    if a.kind == "int" or b.kind == "int":
        return a == b
    ways = [t for t in a.transforms() if t in b.transforms()]
    for t in ways:
        x, y = a.raw(t, pc_a), b.raw(t, pc_b)
        if x is not None and y is not None and (x - y) % (1 << 32 if t == "int" else 1 << 64) == 0:
            return True
    return False


def same_instruction(form: str, fields: dict, words, pc_listing: int, pc_words: int) -> bool:
    """Whether nvdisasm's reading of the words (a Shape) is the instruction encoded: its form
    (the listing's, or the spelling of it that was encoded) and its fields."""
    if form != words.key:
        return False
    names = {n for n in fields if not n.startswith(IMPLICIT)}
    if names != {n for n in words.fields if not n.startswith(IMPLICIT)}:
        return False
    return all(_same_number(fields[n], words.fields[n], pc_listing, pc_words) for n in names)


def listing_text(raw, targets) -> str:
    """The instruction as the listing wrote it, each label as its address."""
    return _LABEL.sub(lambda m: f"{targets(m.group(1)):#x}", raw.text)


def compare_sections(items: list[tuple[object, list[Encoded]]], nvdisasm: str | None = None) -> list[Checked]:
    """Disassemble the encoded kernels (one after another, a NOP where an instruction has no
    word) in one nvdisasm run and compare every encoded instruction with its listing."""
    words, bases = [], []
    for _, encoded in items:
        bases.append(len(words))
        words += [e.word if e.word is not None else NOP_WORD for e in encoded]
    texts = disassemble_words(words, nvdisasm) if words else []
    parsed = parse_texts(texts)
    out = []
    for (section, encoded), base in zip(items, bases):
        checked = Checked(section.name, encoded)
        targets = resolver(section)
        for k, e in enumerate(encoded):
            ok = False
            if e.word is not None:
                back = parsed[base + k]
                theirs = shape(back, label_slots=label_slots(e.form)) if back is not None else None
                ok = theirs is not None and any(same_instruction(form, fields, theirs, e.raw.pc, 16 * (base + k))
                                                for form, fields in ((e.key, e.written), (e.form, e.fields)))
                if not ok:
                    said = texts[base + k] if texts[base + k] is not None else "an illegal instruction"
                    checked.differences.append(f"instruction {e.raw.pc:#06x}: words say '{said}', "
                                               f"listing says '{listing_text(e.raw, targets)}'")
            checked.matched.append(ok)
        out.append(checked)
    return out


def roundtrip(listing_text: str, kernel: str | None = None, file: str = "<listing>",
              table: Table | None = None, first_line: int = 1, nvdisasm: str | None = None) -> str | None:
    """Assemble one kernel, disassemble its words with nvdisasm and compare: the first
    difference (``instruction 0x0120: words say '...', listing says '...'``), or None when
    every instruction reads back as written. AssemblerError when it cannot be assembled."""
    table = table or load_table()
    section = pick_kernel(parse_listing(listing_text, file, first_line), kernel, file)
    encoded = encode_section(section, table, listing_words(listing_text).get(section.name, {}))
    failed = next((e.error for e in encoded if e.error), None)
    if failed:
        raise AssemblerError(failed)
    checked = compare_sections([(section, encoded)], nvdisasm)[0]
    return checked.first_difference


__all__ = ["Checked", "compare_sections", "listing_text", "roundtrip", "same_instruction"]

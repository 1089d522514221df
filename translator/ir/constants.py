"""Which constant-bank bytes a program reads, found by running each instruction's semantics on
a context that notes every constant operand it is asked for: ``c[0x2][0x10]`` as a word
(``read``), a pair (``read64``: DMUL's operand, IMAD.WIDE's addend, LDC.64), or the word
holding a byte or halfword (``cbank_word``: LDC.U8, LDC.S16). An operand indexed by a register
(``LDC R0, c[0x2][R4]``) is read at an offset known only at run time.

The harness compares these reads with the banks a case gives, so that a constant the case
does not supply is an error at load, not a silent zero.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import TranslatorError
from .lane_values import Lin, LaneValuesCtx


@dataclass(frozen=True)
class ConstantRead:
    """One instruction's read of a constant bank: ``offset`` is None where a register indexes it."""
    where: str          # file:line of the instruction
    text: str           # the instruction as the listing writes it
    bank: int
    offset: int | None
    size: int           # bytes: 4 or 8 (a byte or halfword reads its whole word)


class _Noting(LaneValuesCtx):
    """Lane values, noting each constant operand the semantics ask for."""

    def __init__(self, inst, noted: list[ConstantRead]):
        super().__init__({}, inst, lambda *a: None, None)
        self.noted = noted

    def _note(self, o, size: int) -> None:
        indexed = any(b is not None and b.name not in ("RZ", "URZ") for b in (o.base, o.uniform_base))
        self.noted.append(ConstantRead(self.inst.where, self.inst.text, o.value, None if indexed else o.offset, size))

    def read(self, o):
        if o.kind == "cbank":
            self._note(o, 4)
        return super().read(o)

    def read64(self, o):
        if o.kind == "cbank":
            self._note(o, 8)            # (a word read inside it is folded into this one below)
        return super().read64(o)

    def cbank_word(self, bank: int, off):
        known = isinstance(off, Lin) and off.is_const
        self.noted.append(ConstantRead(self.inst.where, self.inst.text, bank,
                                       off.const & ~3 & 0xFFFFFFFF if known else None, 4))
        return super().cbank_word(bank, off)


def constant_reads(insts) -> list[ConstantRead]:
    """Every constant-bank read of ``insts`` (a program's instructions), largest first per
    operand (a pair read notes its 8 bytes once)."""
    noted: list[ConstantRead] = []
    for inst in insts:
        if not any(o.kind == "cbank" for o in inst.ops):
            continue
        mine: list[ConstantRead] = []
        try:
            inst.spec.sem(_Noting(inst, mine), inst)
        except TranslatorError:
            continue                    # an instruction the translator refuses says so itself
        widest: dict[tuple, ConstantRead] = {}
        for r in mine:
            key = (r.bank, r.offset)
            if key not in widest or r.size > widest[key].size:
                widest[key] = r
        noted += widest.values()
    return noted

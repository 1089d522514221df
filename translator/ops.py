"""The opcode table: one entry per SASS mnemonic, read by the decoder, the CPU reference
interpreter and the SPIR-V emitter alike.

An entry names the semantics function (written once against :class:`translator.ctx.Ctx`),
the instruction's role for the scheduler, and the modifiers it accepts. Anything not here
is UNSUPPORTED, with its opcode named.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from . import sem_alu as alu
from . import sem_float as flt
from . import sem_mem as mem
from . import sem_warp as warp


@dataclass(frozen=True)
class OpSpec:
    """How one mnemonic behaves.

    role: "alu" | "memory" | "collective" | "branch" | "exit" | "sync" | "nop"
      - branch/exit end a basic block;
      - sync (BSYNC, WARPSYNC, BAR) make a block of their own: a thread may wait there;
      - collective and sync force the turns mode (the workgroup steps together).
    """
    name: str
    sem: Callable
    role: str = "alu"
    mods: frozenset[str] = frozenset()
    turns: bool = False          # its presence makes the program run in turns

    @property
    def ends_block(self) -> bool:
        return self.role in ("branch", "exit", "sync")


_CMP = {"EQ", "NE", "LT", "LE", "GT", "GE", "U32", "AND", "OR", "XOR", "EX"}
_MEMORY = {"E", "U8", "S8", "U16", "S16", "64", "128", "STRONG", "GPU", "SYS", "SM", "CTA", "CONSTANT",
           "EF", "EL", "LU", "EU", "NA", "PRIVATE", "WEAK", "MMIO", "ZFILL", "LTC64B", "LTC128B", "LTC256B"}
_ATOMIC = _MEMORY | set(mem.ATOMIC_NAMES) | {"S32", "U32"}


def _t(name, sem, role="alu", mods=(), turns=False):
    return OpSpec(name, sem, role, frozenset(mods), turns)


TABLE: dict[str, OpSpec] = {o.name: o for o in [
    # moves, constants, special registers
    _t("MOV", alu.mov), _t("UMOV", alu.mov), _t("R2UR", alu.mov), _t("S2R", alu.mov),
    _t("S2UR", alu.mov), _t("CS2R", alu.cs2r, mods={"32"}), _t("ULDC", alu.ldc, mods={"64", "U32"}),
    _t("LDC", alu.ldc, mods={"64", "U32"}),
    # integer arithmetic
    _t("IMAD", alu.imad, mods={"MOV", "U32", "WIDE", "HI", "IADD", "SHL", "X"}),
    _t("UIMAD", alu.imad, mods={"MOV", "U32", "WIDE", "HI", "IADD", "SHL", "X"}),
    _t("IADD3", alu.iadd3, mods={"X"}), _t("UIADD3", alu.iadd3, mods={"X"}),
    _t("LEA", alu.lea, mods={"HI", "X", "SX32"}), _t("ULEA", alu.lea, mods={"HI", "X", "SX32"}),
    _t("IMNMX", alu.imnmx, mods={"U32"}), _t("IABS", alu.iabs), _t("SGXT", alu.sgxt, mods={"U32", "W"}),
    # logic, shifts, bits
    _t("LOP3", alu.lop3, mods={"LUT"}), _t("ULOP3", alu.lop3, mods={"LUT"}),
    _t("PLOP3", alu.plop3, mods={"LUT"}), _t("UPLOP3", alu.plop3, mods={"LUT"}),
    _t("SHF", alu.shf, mods={"L", "R", "W", "U32", "S32", "U64", "S64", "HI"}),
    _t("USHF", alu.shf, mods={"L", "R", "W", "U32", "S32", "U64", "S64", "HI"}),
    _t("ISETP", alu.isetp, mods=_CMP), _t("UISETP", alu.isetp, mods=_CMP),
    _t("SEL", alu.sel), _t("USEL", alu.sel), _t("PRMT", alu.prmt), _t("UPRMT", alu.prmt),
    _t("POPC", alu.popc), _t("UPOPC", alu.popc), _t("BREV", alu.brev), _t("UBREV", alu.brev),
    _t("FLO", alu.flo, mods={"U32", "S32", "SH"}), _t("UFLO", alu.flo, mods={"U32", "S32", "SH"}),
    # the float conversions around integer division
    _t("I2F", flt.i2f, mods={"U32", "S32", "RN", "RP", "RM", "RZ", "F32"}),
    _t("F2I", flt.f2i, mods={"U32", "S32", "FTZ", "NTZ", "TRUNC", "FLOOR", "CEIL", "RN"}),
    _t("MUFU", flt.mufu, mods={"RCP", "RSQ", "EX2", "LG2", "SIN", "COS", "SQRT", "RCP64H"}),
    # memory
    _t("LDG", mem.load("global"), "memory", _MEMORY), _t("STG", mem.store("global"), "memory", _MEMORY),
    _t("LD", mem.load("global"), "memory", _MEMORY), _t("ST", mem.store("global"), "memory", _MEMORY),
    _t("LDS", mem.load("shared"), "memory", _MEMORY), _t("STS", mem.store("shared"), "memory", _MEMORY),
    _t("ATOMS", mem.atomic("shared", True), "memory", _ATOMIC),
    _t("ATOMG", mem.atomic("global", True), "memory", _ATOMIC),
    _t("ATOM", mem.atomic("global", True), "memory", _ATOMIC),
    _t("RED", mem.atomic("global", False), "memory", _ATOMIC),
    # warp collectives
    _t("VOTE", warp.vote, "collective", {"ALL", "ANY", "EQ"}, True),
    _t("VOTEU", warp.vote, "collective", {"ALL", "ANY", "EQ"}, True),
    _t("SHFL", warp.shfl, "collective", set(warp.SHFL_NAMES), True),
    _t("MATCH", warp.match, "collective", {"ANY", "ALL", "U32", "U64"}, True),
    _t("REDUX", warp.redux, "collective", set(warp.REDUX_NAMES) | {"S32"}, True),
    # control flow and convergence
    _t("BRA", warp.bra, "branch", {"U", "DIV", "CONV", "INC", "DEC"}),
    _t("CALL", warp.call, "branch", {"REL", "ABS", "NOINC"}),
    _t("RET", warp.ret, "branch", {"REL", "ABS", "NODEC"}),
    _t("EXIT", warp.exit_, "exit"),
    _t("BSSY", warp.bssy, "collective"),
    _t("BSYNC", warp.bsync, "sync"),
    _t("BREAK", warp.brk, "alu"),
    _t("WARPSYNC", warp.warpsync, "sync", {"ALL", "EXCLUSIVE"}, True),
    _t("BAR", warp.bar, "sync", {"SYNC", "DEFER_BLOCKING", "ARV", "RED", "POPC", "AND", "OR"}, True),
    _t("B2R", warp.b2r, "alu", {"RESULT"}, True),
    _t("YIELD", warp.yield_, "alu"), _t("NANOSLEEP", warp.yield_, "alu", {"SYNCS"}),
    # no effect on results
    *(_t(n, alu.nop, "nop", _MEMORY | {"SC", "ALL", "IVALL", "IVALLP", "WB"}) for n in (
        "NOP", "MEMBAR", "ERRBAR", "CCTL", "DEPBAR", "FENCE", "CGAERRBAR")),
]}


def lookup(base: str) -> OpSpec | None:
    """The entry for a mnemonic without modifiers, or None when the table lacks it."""
    return TABLE.get(base)

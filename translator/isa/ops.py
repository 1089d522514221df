"""The opcode table: one entry per SASS mnemonic, read by the decoder, the CPU reference
interpreter and the SPIR-V emitter alike.

An entry names the semantics function (written once against :class:`translator.isa.ctx.Ctx`),
the modifiers it accepts, and its properties (control flow, memory, what it takes from the
other lanes, whether it waits or yields). Anything not here is UNSUPPORTED, with its opcode
named. See README.md, "Adding an opcode".
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from .sem import alu as alu
from .sem import bits as bits
from .sem import float as flt
from .sem import half as half
from .sem import mem as mem
from .sem import warp as warp

FLOWS = ("next", "jump", "call", "return", "exit")
WAIT_RULES = ("bsync", "warpsync", "bar")       # see translator.interp.waits
LANE_USES = ("mask", "values", "reduce")


@dataclass(frozen=True)
class OpSpec:
    """How one mnemonic behaves: its semantics, the modifiers it accepts, and its properties
    as data, which the IR, the scheduler, the interpreter and the emitter ask instead of
    mnemonics. A property that depends on modifiers is a method taking them."""
    name: str
    sem: Callable
    mods: frozenset[str] = frozenset()
    flow: str = "next"            # how control leaves it: one of FLOWS
    target: str | None = None     # "pc": a label or address operand (BRA, CALL, BSSY);
                                  # "offset": added to a register (RET); "table": the pcs
                                  # its BRANCH_TARGETS annotation names (BRX)
    space: str | None = None      # memory it accesses: "global" | "shared" | "local" (the thread's own)
                                  # | "generic" (a 64-bit address: a window of shared or local memory, else global)
    access: str | None = None     # "load" | "store" | "atomic" (returns the old value) | "reduce"
    lanes: str | None = None      # what it takes from the other lanes of its warp: one of LANE_USES
    lanes_if: frozenset[str] = frozenset()  # ... only with one of these modifiers (BRA.DIV/.CONV)
    waits: str | None = None      # a thread may wait here, by this rule (WAIT_RULES): a block of its own
    yields: bool = False          # lets the other threads move (YIELD, NANOSLEEP)
    region: bool = False          # enters, leaves or syncs a convergence region Bx (BSSY, BREAK, BSYNC)
    turns: bool = False           # its presence makes the program run in turns
    external: bool = False        # calls a function outside the kernel (vprintf: a printf buffer)
    # how nvdisasm spells it (translator.sass.printer)
    float_imm: bool = False       # its immediates are floats, printed in decimal
    spaced_target: bool = False   # its target follows a register after a space, not a comma

    def __post_init__(self):
        assert self.flow in FLOWS and self.waits in (None, *WAIT_RULES) and self.lanes in (None, *LANE_USES), self

    @property
    def ends_block(self) -> bool:
        """Control may leave here, or a thread may wait here."""
        return self.flow != "next" or self.waits is not None

    def tests_divergence(self, mods: frozenset[str]) -> bool:
        """Whether it asks if its lanes have diverged (BRA.DIV, BRA.CONV)."""
        return bool(self.lanes_if & mods)

    def exchanges(self, mods: frozenset[str]) -> bool:
        """Whether it needs what the other lanes of its warp hold or do (collectives, BSSY's
        mask, BRA.DIV/.CONV): every lane of the workgroup must run it in one turn."""
        return self.lanes is not None and (not self.lanes_if or self.tests_divergence(mods))

    def visible(self, mods: frozenset[str]) -> bool:
        """Whether another thread may see its memory access or change what it reads: shared
        memory (a generic address may name it), atomics, and strong (volatile) global accesses."""
        return self.space is not None and (self.space in ("shared", "generic") or self.access in ("atomic", "reduce")
                                           or "STRONG" in mods)

    def rereads(self, mods: frozenset[str]) -> bool:
        """Whether it reads memory another thread may write (a loop around it may spin)."""
        return self.access in ("load", "atomic") and self.visible(mods)

    def quiet(self, mods: frozenset[str]) -> bool:
        """Whether no other thread can observe or affect it (see ir.Block.quiet)."""
        return not (self.turns or self.waits or self.yields or self.region or self.exchanges(mods)
                    or self.visible(mods))


_CMP = {"EQ", "NE", "LT", "LE", "GT", "GE", "U32", "AND", "OR", "XOR", "EX"}
_MEMORY = {"E", "U8", "S8", "U16", "S16", "64", "128", "STRONG", "GPU", "SYS", "SM", "CTA", "CONSTANT",
           "EF", "EL", "LU", "EU", "NA", "PRIVATE", "WEAK", "MMIO", "ZFILL", "LTC64B", "LTC128B", "LTC256B"}
_FLOAT = {"FTZ", "SAT", "RN", "RZ", "RM", "RP"}
_FCMP = set(flt.FSETP_TESTS) | {"AND", "OR", "XOR", "FTZ"}
_ATOMIC = _MEMORY | set(mem.ATOMIC_NAMES) | mem.FLOAT_ATOMICS | {"S32", "U32", "S64", "U64", "CAST", "SPIN", "POPC", "32", "FTZ", "RN"}


def _t(name, sem, mods=(), **props) -> OpSpec:
    return OpSpec(name, sem, frozenset(mods), **props)


def _mem(name, make_sem, space, access, mods) -> OpSpec:
    """A memory instruction: its semantics made for its space (atomics: returning or not)."""
    sem = make_sem(space, access == "atomic") if access in ("atomic", "reduce") else make_sem(space)
    return _t(name, sem, mods, space=space, access=access)


TABLE: dict[str, OpSpec] = {o.name: o for o in [
    # moves, constants, special registers
    _t("MOV", alu.mov), _t("UMOV", alu.mov), _t("R2UR", alu.mov), _t("S2R", alu.mov),
    _t("S2UR", alu.mov), _t("CS2R", alu.cs2r, {"32"}),
    _t("ULDC", alu.ldc, {"64", "U32", *alu.SUBWORDS}), _t("LDC", alu.ldc, {"64", "U32", *alu.SUBWORDS}),
    # integer arithmetic
    _t("IMAD", alu.imad, {"MOV", "U32", "WIDE", "HI", "IADD", "SHL", "X"}),
    _t("UIMAD", alu.imad, {"MOV", "U32", "WIDE", "HI", "IADD", "SHL", "X"}),
    _t("IADD3", alu.iadd3, {"X"}), _t("UIADD3", alu.iadd3, {"X"}),
    _t("LEA", alu.lea, {"HI", "X", "SX32"}), _t("ULEA", alu.lea, {"HI", "X", "SX32"}),
    _t("IMNMX", alu.imnmx, {"U32"}), _t("IABS", alu.iabs), _t("SGXT", bits.sgxt, {"U32", "W"}),
    _t("VABSDIFF", bits.vabsdiff, {"U32", "S32"}), _t("VABSDIFF4", bits.vabsdiff4, {"U8", "S8", "ACC"}),
    # logic, shifts, bits
    _t("LOP3", alu.lop3, {"LUT"}), _t("ULOP3", alu.lop3, {"LUT"}),
    _t("PLOP3", alu.plop3, {"LUT"}), _t("UPLOP3", alu.plop3, {"LUT"}),
    _t("SHF", alu.shf, {"L", "R", "W", "U32", "S32", "U64", "S64", "HI"}),
    _t("USHF", alu.shf, {"L", "R", "W", "U32", "S32", "U64", "S64", "HI"}),
    _t("ISETP", alu.isetp, _CMP), _t("UISETP", alu.isetp, _CMP),
    _t("SEL", alu.sel), _t("USEL", alu.sel), _t("PRMT", bits.prmt), _t("UPRMT", bits.prmt),
    _t("POPC", bits.popc), _t("UPOPC", bits.popc), _t("BREV", bits.brev), _t("UBREV", bits.brev),
    _t("FCHK", alu.fchk), _t("P2R", bits.p2r), _t("UP2R", bits.p2r), _t("R2P", bits.r2p), _t("UR2P", bits.r2p),
    _t("BMSK", bits.bmsk, {"W"}), _t("UBMSK", bits.bmsk, {"W"}),
    _t("FLO", bits.flo, {"U32", "S32", "SH"}), _t("UFLO", bits.flo, {"U32", "S32", "SH"}),
    # floats (see sem_float: FTZ, SAT, rounding, types)
    _t("FADD", flt.fadd, _FLOAT, float_imm=True), _t("FMUL", flt.fmul, _FLOAT | set(flt.FMUL_SCALES), float_imm=True), _t("FFMA", flt.ffma, _FLOAT, float_imm=True),
    _t("FSETP", flt.fsetp, _FCMP, float_imm=True), _t("FSET", flt.fset, _FCMP | {"BF"}, float_imm=True),
    _t("FSEL", flt.fsel, float_imm=True), _t("FMNMX", flt.fmnmx, {"FTZ", "NAN"}, float_imm=True),
    _t("I2F", flt.i2f, flt.MODS), _t("I2FP", flt.i2f, flt.MODS), _t("F2I", flt.f2i, flt.MODS), _t("F2IP", flt.f2ip, flt.F2IP_MODS),
    _t("F2F", flt.f2f, flt.MODS), _t("FRND", flt.frnd, flt.MODS),
    _t("MUFU", flt.mufu, set(flt.MUFU_FUNCTIONS), float_imm=True),
    _t("DADD", flt.dadd, _FLOAT, float_imm=True), _t("DMUL", flt.dmul, _FLOAT, float_imm=True), _t("DFMA", flt.dfma, _FLOAT, float_imm=True),
    _t("DSETP", flt.dsetp, _FCMP | {"MIN", "MAX"}, float_imm=True),
    _t("HADD2", half.hadd2, half.MODS, float_imm=True), _t("HMUL2", half.hmul2, half.MODS, float_imm=True), _t("HFMA2", half.hfma2, half.MODS, float_imm=True),
    _t("HSETP2", half.hsetp2, half.MODS, float_imm=True), _t("HSET2", half.hset2, half.MODS, float_imm=True), _t("HMNMX2", half.hmnmx2, half.MODS, float_imm=True),
    _t("F2FP", half.f2fp, half.MODS),
    # memory
    _mem("LDG", mem.load, "global", "load", _MEMORY), _mem("STG", mem.store, "global", "store", _MEMORY),
    _mem("LD", mem.load, "generic", "load", _MEMORY), _mem("ST", mem.store, "generic", "store", _MEMORY),
    _mem("LDS", mem.load, "shared", "load", _MEMORY), _mem("STS", mem.store, "shared", "store", _MEMORY),
    _mem("LDL", mem.load, "local", "load", _MEMORY), _mem("STL", mem.store, "local", "store", _MEMORY),
    _mem("LDGSTS", mem.async_copy, "shared", "store", _MEMORY | {"BYPASS"}),
    _mem("ATOMS", mem.atomic, "shared", "atomic", _ATOMIC),
    _mem("ATOMG", mem.atomic, "global", "atomic", _ATOMIC),
    _mem("ATOM", mem.atomic, "generic", "atomic", _ATOMIC),
    _mem("RED", mem.atomic, "global", "reduce", _ATOMIC),
    # warp collectives
    _t("VOTE", warp.vote, {"ALL", "ANY", "EQ"}, lanes="mask", turns=True),
    _t("VOTEU", warp.vote, {"ALL", "ANY", "EQ"}, lanes="mask", turns=True),
    _t("SHFL", warp.shfl, set(warp.SHFL_NAMES), lanes="values", turns=True),
    _t("MATCH", warp.match, {"ANY", "ALL", "U32", "U64"}, lanes="values", turns=True),
    _t("REDUX", warp.redux, set(warp.REDUX_NAMES) | {"S32"}, lanes="reduce", turns=True),
    # control flow and convergence
    _t("BRA", warp.bra, {"U", "DIV", "CONV", "INC", "DEC"}, lanes="mask", lanes_if=frozenset({"DIV", "CONV"}),
       flow="jump", target="pc"),
    _t("BRX", warp.brx, flow="jump", target="table", spaced_target=True),
    _t("CALL", warp.call, {"REL", "ABS", "NOINC"}, flow="call", target="pc", spaced_target=True),
    _t("LEPC", warp.lepc),
    _t("RET", warp.ret, {"REL", "ABS", "NODEC"}, flow="return", target="offset", spaced_target=True),
    _t("EXIT", warp.exit_, flow="exit"), _t("BPT", warp.bpt, {"TRAP", "INT"}, flow="exit"),
    _t("BSSY", warp.bssy, target="pc", lanes="mask", region=True),
    _t("BSYNC", warp.bsync, waits="bsync", region=True),
    _t("BREAK", warp.brk, region=True),
    _t("WARPSYNC", warp.warpsync, {"ALL", "EXCLUSIVE"}, waits="warpsync", turns=True),
    _t("BAR", warp.bar, {"SYNC", "DEFER_BLOCKING", "ARV", "RED", "POPC", "AND", "OR"}, waits="bar", turns=True),
    _t("B2R", warp.b2r, {"RESULT"}, turns=True),
    _t("BMOV", warp.bmov, {"32", "CLEAR"}, region=True, turns=True),
    _t("YIELD", warp.yield_, yields=True), _t("NANOSLEEP", warp.yield_, {"SYNCS"}, yields=True),
    # no effect on results
    *(_t(n, alu.nop, _MEMORY | {"SC", "ALL", "IVALL", "IVALLP", "WB", "LE"}) for n in (
        "NOP", "MEMBAR", "ERRBAR", "CCTL", "DEPBAR", "LDGDEPBAR", "FENCE", "CGAERRBAR")),
]}


# Forms whose first operand is a predicate and that behave differently from the plain mnemonic.
PREDICATE_FORMS: dict[str, OpSpec] = {
    "R2UR": _t("R2UR", warp.r2ur_pred, lanes="values", turns=True),   # Pd: Ra differs between lanes
}


_TENSOR = ("a tensor-core warp matrix multiply-accumulate: each lane holds a fixed slice of the A, B "
           "and C fragments and every output needs slices of eight lanes; the exchanges would fit "
           "the collective machinery, but the chip's accumulation order and the rounding of its "
           "partial sums are not documented, so no back end could promise the chip's bits "
           "(translator/README.md)")
_RESOURCE = ("reads or writes a bound texture or surface (a descriptor), which a case file does not "
             "describe")
NOT_TRANSLATED = {"HMMA": _TENSOR, "IMMA": _TENSOR, "DMMA": _TENSOR, "BMMA": _TENSOR,
                  "TEX": _RESOURCE, "TLD": _RESOURCE, "TLD4": _RESOURCE, "TXQ": _RESOURCE,
                  "SULD": _RESOURCE, "SUST": _RESOURCE, "SUATOM": _RESOURCE, "SURED": _RESOURCE}
"""Opcodes left out on purpose, and why: the UNSUPPORTED message says so."""


# Forms whose first operand is a register: a call through a function pointer, which returns to
# the next instruction (vprintf; see sem_warp.call_external).
REGISTER_FORMS: dict[str, OpSpec] = {
    "CALL": _t("CALL", warp.call_external, {"ABS", "NOINC"}, external=True, spaced_target=True),
}


def _spelled(name, float_imm=False, spaced_target=False) -> OpSpec:
    return OpSpec(name, alu.nop, float_imm=float_imm, spaced_target=spaced_target)


SPELLING_ONLY: dict[str, OpSpec] = {o.name: o for o in [
    *(_spelled(n, float_imm=True) for n in ("FADD32I", "FMUL32I", "FFMA32I", "FCMP", "FSWZADD",
                                            "HADD2_32I", "HMUL2_32I", "HFMA2_32I", "DMNMX")),
    _spelled("JMX", spaced_target=True),
]}
"""Mnemonics the table does not translate but the printer must spell as nvdisasm does (the
decoder never looks here: they stay UNSUPPORTED)."""


def spelling(base: str) -> OpSpec | None:
    """The entry whose print flags (``float_imm``, ``spaced_target``) the printer follows."""
    return TABLE.get(base) or SPELLING_ONLY.get(base)


def lookup(base: str) -> OpSpec | None:
    """The entry for a mnemonic without modifiers, or None when the table lacks it."""
    return TABLE.get(base)


def lookup_form(base: str, operands) -> OpSpec | None:
    """The entry for an instruction: its predicate form where the first operand is a
    predicate and the mnemonic has one, its register form where the first operand is a
    general register and it has one, else the mnemonic's entry."""
    if operands and operands[0].kind in ("pred", "upred") and base in PREDICATE_FORMS:
        return PREDICATE_FORMS[base]
    if operands and operands[0].kind == "reg" and base in REGISTER_FORMS:
        return REGISTER_FORMS[base]
    return lookup(base)

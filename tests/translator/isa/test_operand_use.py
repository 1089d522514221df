"""Every predicate operand of every instruction in the case library is read or written by
the instruction's semantics. Two root causes found by random programs were a predicate
operand the semantics never looked at (``BREAK Pp, Bx`` taken as ``BREAK Bx``, ``EXIT Pp``
as ``EXIT``): both back ends then agree with each other and are wrong together."""
from __future__ import annotations

from dataclasses import replace

from warpboard.translator.ir.lane_values import LaneValuesCtx
from warpboard.translator.ir.program import load_program
from warpboard.translator.isa import regs

from support.paths import library_cases

PREDICATES = ("pred", "upred")


class _SeenPredicates(LaneValuesCtx):
    """The lane-value walk (no lanes, no memory), noting each predicate operand it touches."""

    def __init__(self, inst, block):
        super().__init__({}, inst, lambda *access: None, block)
        self.seen: set[int] = set()

    def readp(self, o):
        self.seen.add(id(o))
        return super().readp(o)

    def writep(self, o, v):
        self.seen.add(id(o))
        return super().writep(o, v)


def unread_predicates(program) -> list[str]:
    """``file:line: instruction (operand)`` for each predicate operand its semantics ignore
    (the constants PT and UPT are left out)."""
    ignored = []
    for inst in program.insts:
        ctx = _SeenPredicates(inst, program.block)
        inst.spec.sem(ctx, inst)
        ignored += [f"{inst.where}: {inst.opcode} ({o.text})" for o in inst.ops
                    if o.kind in PREDICATES and not regs.is_true(o) and id(o) not in ctx.seen]
    return ignored


def test_semantics_read_every_predicate_operand_of_the_library():
    programs = 0
    ignored = []
    for case in library_cases():
        try:
            program = load_program(case.listing_text, case.kernel, str(case.listing_path),
                                   case.listing_line, case.block)
        except Exception:  # noqa: BLE001 - a case that does not translate has its own cell
            continue
        programs += 1
        ignored += unread_predicates(program)
    assert programs > 150
    assert not ignored, "\n".join(ignored[:20])


def test_the_check_finds_an_ignored_predicate():
    """EXIT with the semantics it had before ``EXIT Pp`` was read (a plain exit) is found;
    with today's, nothing is."""
    listing = ("        /*0000*/                   ISETP.NE.AND P0, PT, R0, RZ, PT ;\n"
               "        /*0010*/              @!P0 EXIT P1 ;\n"
               "        /*0020*/                   EXIT ;\n")
    program = load_program(listing)
    assert unread_predicates(program) == []
    exit_ = program.insts[1]
    plain = replace(exit_, spec=replace(exit_.spec, sem=lambda x, i: x.exit()))
    program.insts[1] = plain
    assert unread_predicates(program) == [f"{exit_.where}: EXIT (P1)"]

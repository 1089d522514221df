"""The opcode table carries each opcode's properties; the IR, the scheduler and both back ends
ask it. These tests pin the properties of every kind of opcode, the ones that depend on
modifiers, and the modifiers' order kept beside their set."""
import importlib

import pytest
from warpboard.translator.interp.thread import ThreadCtx
from warpboard.translator.ir.program import load_program
from warpboard.translator.isa import ctx, ops, regs
from warpboard.translator.sass.listing import Operand
from warpboard.translator.values import intops


def _inst(text: str, *more: str):
    """The first instruction of a one-kernel listing made of ``text`` (and ``more``), then EXIT."""
    lines = [text, *more, "EXIT ;", "BRA 0x0 ;"] if not text.startswith("EXIT") else [text]
    body = "\n".join(f"        /*{16 * k:04x}*/                   {line}" for k, line in enumerate(lines))
    program = load_program(f"Function : k\n.text.k:\n{body}\n")
    return program.insts[0], program


@pytest.mark.parametrize("name, waits", [("BSYNC", "bsync"), ("WARPSYNC", "warpsync"), ("BAR", "bar")])
def test_waiting_opcodes_name_their_rule_and_end_their_block(name, waits):
    spec = ops.lookup(name)
    assert spec.waits == waits and spec.ends_block
    assert not spec.quiet(frozenset())


@pytest.mark.parametrize("name", ["VOTE", "VOTEU", "SHFL", "MATCH", "REDUX"])
def test_collectives_exchange_lanes_and_force_turns(name):
    spec = ops.lookup(name)
    assert spec.exchanges(frozenset()) and spec.turns and spec.lanes in ops.LANE_USES
    assert not spec.ends_block and not spec.quiet(frozenset())


def test_yield_and_nanosleep_yield_but_do_not_wait():
    for name in ("YIELD", "NANOSLEEP"):
        spec = ops.lookup(name)
        assert spec.yields and spec.waits is None and not spec.quiet(frozenset())


def test_bra_exchanges_lanes_only_when_it_tests_divergence():
    bra = ops.lookup("BRA")
    assert bra.flow == "jump" and bra.target == "pc" and bra.ends_block
    for mod in ("DIV", "CONV"):
        assert bra.tests_divergence(frozenset({mod})) and bra.exchanges(frozenset({mod}))
    assert not bra.tests_divergence(frozenset({"U"})) and not bra.exchanges(frozenset({"U"}))
    assert bra.quiet(frozenset()) and not bra.quiet(frozenset({"DIV"}))


@pytest.mark.parametrize("name, mods, rereads, quiet", [
    ("LDG", (), False, True), ("LDG", ("E", "STRONG", "GPU"), True, False), ("LD", ("STRONG",), True, False),
    ("LD", ("E",), True, False), ("ST", ("E",), False, False),      # generic: may be shared memory
    ("STG", (), False, True), ("STG", ("STRONG",), False, False),
    ("LDS", (), True, False), ("STS", (), False, False),
    ("ATOMS", ("ADD",), True, False), ("ATOMG", ("ADD",), True, False), ("ATOM", ("ADD",), True, False),
    ("RED", ("ADD",), False, False),
])
def test_memory_properties_depend_on_the_strong_modifier(name, mods, rereads, quiet):
    spec = ops.lookup(name)
    assert spec.space in ("global", "shared", "generic") and spec.access is not None
    assert spec.rereads(frozenset(mods)) is rereads
    assert spec.quiet(frozenset(mods)) is quiet


def test_control_flow_kinds_and_targets():
    assert (ops.lookup("CALL").flow, ops.lookup("CALL").target) == ("call", "pc")
    assert (ops.lookup("RET").flow, ops.lookup("RET").target) == ("return", "offset")
    assert ops.lookup("EXIT").flow == "exit" and ops.lookup("EXIT").target is None
    assert ops.lookup("BSSY").target == "pc" and ops.lookup("BSSY").flow == "next"
    assert all(ops.lookup(n).region for n in ("BSSY", "BREAK", "BSYNC"))


def test_alu_opcodes_are_quiet_and_end_nothing():
    for name in ("IMAD", "LOP3", "ISETP", "SHF", "MOV", "I2F", "NOP"):
        spec = ops.lookup(name)
        assert spec.quiet(frozenset()) and not spec.ends_block and spec.space is None


def test_every_entry_is_well_formed():
    for name, spec in ops.TABLE.items():
        assert spec.name == name and callable(spec.sem)
        assert (spec.space is None) == (spec.access is None), name
        assert not spec.lanes_if or spec.lanes is not None, name


def test_instructions_keep_their_modifiers_in_order():
    inst, _ = _inst("I2F.U32.RP R2, R3 ;")
    assert inst.mod_list == ("U32", "RP") and inst.mods == frozenset({"U32", "RP"})
    inst, _ = _inst("I2F.RP.U32 R2, R3 ;")
    assert inst.mod_list == ("RP", "U32")


def test_instruction_properties_come_from_the_table():
    inst, program = _inst("LDG.E.STRONG.GPU R2, [R4.64] ;")
    assert inst.rereads_memory and not inst.quiet and not inst.exchanges
    inst, _ = _inst("BRA.DIV UR4, 0x20 ;")
    assert inst.tests_divergence and inst.exchanges and inst.conditional
    inst, _ = _inst("BSYNC B0 ;")
    assert inst.waits and 0x0 in program.blocks


def test_the_constant_registers():
    rz, urz = Operand("reg", "RZ", name="RZ", value=regs.RZ), Operand("ureg", "URZ", name="URZ", value=regs.URZ)
    pt, r3 = Operand("pred", "PT", name="PT", value=regs.PT), Operand("reg", "R3", name="R3", value=3)
    assert regs.is_zero(rz) and regs.is_zero(urz) and not regs.is_zero(r3)
    assert regs.is_true(pt) and not regs.is_true(r3)
    assert not regs.writable(rz) and regs.writable(r3) and not regs.writable(pt)
    assert regs.pair_word(r3, 1) == 4 and regs.pair_word(rz, 1) == regs.RZ


@pytest.mark.parametrize("op, args, value", [
    ("add", (0xFFFFFFFF, 2), 1), ("sub", (0, 1), 0xFFFFFFFF), ("sar", (0x80000000, 40), 0xFFFFFFFF),
    ("shl", (1, 32), 0), ("msb", (0xFFFFFFFF, True), 0xFFFFFFFF), ("msb", (0x10, False), 4),
    ("cmp", ("lt", 0xFFFFFFFF, 0, True), True), ("cmp", ("lt", 0xFFFFFFFF, 0, False), False),
    ("sext", (0x80000000,), 0xFFFFFFFF80000000), ("sar64", (1 << 63, 70), 0xFFFFFFFFFFFFFFFF),
])
def test_intops_are_the_values_both_back_ends_use(op, args, value):
    assert getattr(intops, op)(*args) == value
    assert getattr(ThreadCtx, op) is getattr(intops, op)     # the interpreter runs these very functions


@pytest.mark.parametrize("implementation", ["interp.thread.ThreadCtx", "interp.vector.ctx.LaneCtx", "emit.ctx.SpirvCtx",
                                            "ir.lane_values.LaneValuesCtx"])
def test_every_context_speaks_the_whole_vocabulary(implementation):
    """The semantics are written once against ctx.Ctx: a context that lacks one of its words
    fails only when an opcode using it runs, so every word is checked here, arithmetic too."""

    module, cls = implementation.rsplit(".", 1)
    context = getattr(importlib.import_module(f"warpboard.translator.{module}"), cls)
    words = {n for n in vars(ctx.Ctx) if not n.startswith("_")} | set(intops.OPERATIONS)
    missing = sorted(w for w in words if not callable(getattr(context, w, None)))
    assert not missing, f"{cls} lacks {missing}"

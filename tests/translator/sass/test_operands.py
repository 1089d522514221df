"""Guards, modifiers and every operand form of sm86-semantics.md §1 as the front end reads them
(translator.sass.operands), and the well-formed forms the translator does not take."""
from __future__ import annotations

import pytest
from warpboard.translator.emit.emitter import translate
from warpboard.translator.errors import (
    SassSyntaxError,
    UnsupportedInstruction,
)
from warpboard.translator.ir.program import load_program
from warpboard.translator.sass.listing import parse_listing

from support.sass_texts import by_pc, kernel_text


# ---------------------------------------------------------------- guards, modifiers, operands
@pytest.mark.parametrize("pc, kind, value, inv", [
    (0x40, "pred", 0, False),     # @P0
    (0x50, "pred", 0, True),      # @!P0
    (0x60, "pred", 7, True),      # @!PT
    (0x70, "upred", 0, False),    # @UP0
])
def test_guards(first, pc, kind, value, inv):
    g = by_pc(first, pc).guard
    assert (g.kind, g.value, g.inv) == (kind, value, inv)
    assert by_pc(first, 0x80).guard is None


def test_opcode_and_modifiers(first):
    i = by_pc(first, 0x20)
    assert (i.opcode, i.base, i.mods) == ("ISETP.NE.U32.AND", "ISETP", frozenset({"NE", "U32", "AND"}))
    assert by_pc(first, 0x50).mods == frozenset({"WIDE", "U32"})


def test_zero_and_true_registers(first):
    p, pt, a, rz, acc = by_pc(first, 0x20).ops
    assert (p.kind, p.value) == ("pred", 0) and (pt.kind, pt.name, pt.value) == ("pred", "PT", 7)
    assert (a.kind, a.value, a.suffix) == ("reg", 0, ())          # .reuse dropped
    assert (rz.kind, rz.name, rz.value) == ("reg", "RZ", 255)
    ur, upt, pt2 = by_pc(first, 0xD0).ops
    assert (ur.kind, ur.value) == ("ureg", 4) and (upt.kind, upt.name, upt.value) == ("upred", "UPT", 7)
    urz = by_pc(first, 0xF0).ops[2]
    assert (urz.kind, urz.name, urz.value) == ("ureg", "URZ", 63)
    neg = by_pc(first, 0xF0).ops[1]
    assert (neg.kind, neg.value, neg.neg) == ("reg", 10, True)


def test_constant_bank_operand(first):
    c = by_pc(first, 0x50).ops[3]
    assert (c.kind, c.value, c.offset, c.base, c.uniform_base) == ("cbank", 0, 0x160, None, None)
    assert by_pc(first, 0x0).ops[3].offset == 0x28


def test_pair_address(first):
    m = by_pc(first, 0x70).ops[1]
    assert (m.kind, m.base.name, m.base.value, m.suffix, m.offset, m.uniform_base) == \
        ("mem", "R2", 2, ("64",), 0, None)


def test_scaled_address(first):
    m = by_pc(first, 0x80).ops[1]
    assert (m.kind, m.base.name, m.suffix, m.offset) == ("mem", "R7", ("X4",), 0x200)


def test_descriptor_address(first):
    m = by_pc(first, 0x90).ops[1]
    assert (m.uniform_base.kind, m.uniform_base.value) == ("ureg", 4)
    assert (m.base.name, m.suffix, m.offset) == ("R2", ("64",), 0x10)


def test_zero_register_address(first):
    m = by_pc(first, 0x60).ops[1]
    assert (m.kind, m.base.name, m.offset) == ("mem", "RZ", 0)


@pytest.mark.parametrize("operand, fields", [
    ("[R2.64+-0x40]", {"offset": -0x40, "suffix": ("64",)}),
    ("[R2-0x4]", {"offset": -4}),
    ("[0x40]", {"offset": 0x40, "base": None}),
    ("c[0x3][UR4+0x4]", {"kind": "cbank", "value": 3, "offset": 4}),
    ("c[0x0][R2+0x160]", {"kind": "cbank", "offset": 0x160}),
    ("-|R5|", {"kind": "reg", "neg": True, "abs": True}),
    ("~R5", {"kind": "reg", "inv": True}),
    ("!P3", {"kind": "pred", "value": 3, "inv": True}),
    ("R16.B1", {"kind": "reg", "suffix": ("B1",)}),
    ("-0x1", {"kind": "imm", "value": -1}),
    ("0.5", {"kind": "fimm", "name": "0.5"}),
    ("-QNAN", {"kind": "fimm", "name": "-QNAN"}),
    ("SRZ", {"kind": "reg", "value": 255}),
    ("SR_TID.X", {"kind": "sreg", "name": "SR_TID.X"}),
    ("B3", {"kind": "barrier", "value": 3}),
])
def test_operand_forms(operand, fields):
    raw = parse_listing(f"/*0000*/ MOV R0, {operand} ;", "o.sass")["<anonymous>"].instructions[0]
    for key, want in fields.items():
        assert getattr(raw.operands[1], key) == want, (operand, key)


def test_branch_targets_resolve_labels(first):
    assert by_pc(first, 0x30).target == 0xD0       # BSSY B0, `(.L_x_1)
    assert by_pc(first, 0x40).target == 0xC0       # @P0 BRA `(.L_x_0)
    assert by_pc(first, 0xB0).target == 0xF0       # CALL.REL.NOINC `($__internal_0_$__helper)
    assert by_pc(first, 0x110).target == 0x110     # BRA `(.L_x_3) to itself


def test_ret_with_register_and_target(first):
    ret = by_pc(first, 0x100)
    assert [(o.kind, o.name) for o in ret.ops] == [("reg", "R10"), ("label", "first")]
    assert ret.target == 0



# ---------------------------------------------------------------- operand forms that parse
def _operands(instruction: str):
    return parse_listing(f"/*0000*/ {instruction} ;", "o.sass")["<anonymous>"].instructions[0].operands


def test_abs_operand_with_reuse_and_float_bits():
    p1, pt, a, f, pt2 = _operands("FSETP.GEU.AND P1, PT, |R3|.reuse, 1.17549435e-38, PT")
    assert (a.kind, a.value, a.abs, a.neg, a.suffix) == ("reg", 3, True, False, ())
    assert (f.kind, f.value, f.fvalue) == ("fimm", 0x00800000, 1.17549435e-38)
    n = _operands("FADD R0, -|R3|.H1, R1")[1]
    assert (n.neg, n.abs, n.suffix) == (True, True, ("H1",))


@pytest.mark.parametrize("text, bits, number", [
    ("+INF", 0x7F800000, float("inf")), ("-INF", 0xFF800000, float("-inf")),
    ("-0.5", 0xBF000000, -0.5), ("5.9604644775390625e-08", 0x33800000, 5.9604644775390625e-08),
    ("1e+39", 0x7F800000, 1e39),
])
def test_float_immediates(text, bits, number):
    f = _operands(f"FADD R0, R1, {text}")[2]
    assert (f.kind, f.name, f.value, f.fvalue) == ("fimm", text, bits, number)


def test_nan_immediates():
    q, nq = _operands("FSEL R0, QNAN, -QNAN, !P0")[1:3]
    assert (q.value, nq.value) == (0x7FFFFFFF, 0xFFFFFFFF) and q.fvalue != q.fvalue


@pytest.mark.parametrize("operand, base, index, suffix, offset", [
    ("[R2+URZ]", ("reg", 2), ("ureg", 63), (), 0),
    ("[R2.X4+R3]", ("reg", 2), ("reg", 3), ("X4",), 0),
    ("[R2+R3]", ("reg", 2), ("reg", 3), (), 0),
    ("[R2.64+UR4+0x10]", ("reg", 2), ("ureg", 4), ("64",), 0x10),
    ("[R2.64+UR4+-0x8]", ("reg", 2), ("ureg", 4), ("64",), -8),
    ("[UR4+0x10]", ("ureg", 4), None, (), 0x10),
])
def test_addresses_with_an_index_register(operand, base, index, suffix, offset):
    m = _operands(f"LDS R0, {operand}")[1]
    assert (m.kind, (m.base.kind, m.base.value), m.suffix, m.offset) == ("mem", base, suffix, offset)
    assert (m.index.kind, m.index.value) == index if index else m.index is None


@pytest.mark.parametrize("operand", ["[R2+R3+R4]", "[R2-R3]", "[0x10+R2]", "[P0]", "[R2+0x4+0x4]"])
def test_malformed_addresses(operand):
    with pytest.raises(SassSyntaxError) as err:
        parse_listing(f"/*0000*/ LDS R0, {operand} ;", "o.sass")["<anonymous>"]
    assert str(err.value) == f"o.sass:1: malformed address {operand} in 'LDS R0, {operand}'"


def test_constant_banks():
    c2, c3 = _operands("IADD3 R0, c[0x2][0x0], c[0x3][R2+0x10], RZ")[1:3]
    assert (c2.kind, c2.bank, c2.offset, c2.base) == ("cbank", 2, 0, None)
    assert (c3.bank, c3.base.name, c3.offset) == (3, "R2", 0x10)


def test_texture_scoreboard_and_descriptor_operands():
    ops = _operands("TEX.SCR.LL R0, R2, R4, R0, 0x0, 0x5a, 2D")
    assert [(o.kind, o.name or o.value) for o in ops[4:]] == [("imm", 0), ("imm", 0x5A), ("texdim", "2D")]
    sb, count, waits = _operands("DEPBAR.LE SB0, 0x1, {4,3}")
    assert (sb.kind, sb.name, sb.value, count.value, waits.kind, waits.value) == ("sb", "SB0", 0, 1, "list", 0b11000)
    d = _operands("LDG.E R0, desc[UR4][R2.64]")[1]
    assert (d.uniform_base.name, d.base.name, d.suffix) == ("UR4", "R2", ("64",))
    s, p = _operands("PLOP3.LUT P0, PT, !P1, SR_CLOCKLO, PT, 0x8, 0x0")[2:4]
    assert (s.kind, s.inv, p.kind, p.name) == ("pred", True, "sreg", "SR_CLOCKLO")


def test_well_formed_but_unknown_forms_are_unsupported_not_syntax_errors():
    with pytest.raises(UnsupportedInstruction) as err:
        load_program(kernel_text("TEX.SCR.LL R0, R2, R4, R0, 0x0, 0x5a, 2D", "EXIT"), None, "t.sass")
    assert err.value.opcode == "TEX.SCR.LL" and str(err.value).startswith("t.sass:3: ")


def test_an_index_register_in_an_address_is_unsupported_when_translated():
    program = load_program(kernel_text("LDS R0, [R2+R3]", "EXIT"), None, "i.sass")
    with pytest.raises(UnsupportedInstruction) as err:
        translate(program, (32, 1, 1))
    assert str(err.value) == ("i.sass:3: unsupported LDS: address with an index register [R2+R3] "
                              "in 'LDS R0, [R2+R3]'")
    translate(load_program(kernel_text("LDS R0, [R2+URZ]", "EXIT"), None, "i.sass"), (32, 1, 1))

"""The SASS front end (translator.sass.listing, translator.ir.program) on the text forms of
sm86-semantics.md §1: nvdisasm and cuobjdump listings, labels, guards, modifiers, operand
forms, several kernels in one file, file:line on every instruction, and exact error messages."""
from __future__ import annotations

import time
from pathlib import Path

import pytest

from warpboard.translator.errors import ProgramError, SassSyntaxError, UnsupportedInstruction
from warpboard.translator.ir.program import load_program
from warpboard.translator.sass.listing import parse_listing

ROOT = Path(__file__).resolve().parent.parent

# Two kernels in nvdisasm -c form; the first calls a helper that follows it in its section.
NVDISASM = """\
\t.target\tsm_86

//--------------------- .text.first             --------------------------
\t.section\t.text.first,"ax",@progbits
\t.sectioninfo\t@"SHI_REGISTERS=12"
        .global         first
first:
.text.first:
        /*0000*/                   IMAD.MOV.U32 R1, RZ, RZ, c[0x0][0x28] ;
        /*0010*/                   S2R R0, SR_TID.X ;
        /*0020*/                   ISETP.NE.U32.AND P0, PT, R0.reuse, RZ, PT ;
        /*0030*/                   BSSY B0, `(.L_x_1) ;
        /*0040*/               @P0 BRA `(.L_x_0) ;
        /*0050*/              @!P0 IMAD.WIDE.U32 R2, R0, 0x4, c[0x0][0x160] ;
        /*0060*/              @!PT LDS RZ, [RZ] ;
        /*0070*/              @UP0 LDG.E R4, [R2.64] ;
        /*0080*/                   LDS R5, [R7.X4+0x200] ;
        /*0090*/                   LDG.E R6, desc[UR4][R2.64+0x10] ;
.L_x_2:
        /*00a0*/                   MOV R10, 0x0 ;
        /*00b0*/                   CALL.REL.NOINC `($__internal_0_$__helper) ;
.L_x_0:
        /*00c0*/                   BSYNC B0 ;
.L_x_1:
        /*00d0*/                   VOTEU.ANY UR4, UPT, PT ;
        /*00e0*/                   EXIT ;
        .weak           $__internal_0_$__helper
        .type           $__internal_0_$__helper,@function
$__internal_0_$__helper:
        /*00f0*/                   IADD3 R11, -R10, URZ, RZ ;
        /*0100*/                   RET.REL.NODEC R10 `(first) ;
.L_x_3:
        /*0110*/                   BRA `(.L_x_3);
        /*0120*/                   NOP;
.L_x_9:

//--------------------- .text.second            --------------------------
\t.section\t.text.second,"ax",@progbits
second:
.text.second:
        /*0000*/                   S2R R0, SR_LANEID ;
        /*0010*/                   EXIT ;
.L_x_4:
        /*0020*/                   BRA `(.L_x_4);
"""

# cuobjdump -sass: encodings in comments, absolute branch targets, a bare RET target.
CUOBJDUMP = """\

Fatbin elf code:
================
arch = sm_86
code version = [1,7]
host = linux
compile_size = 64bit

\tcode for sm_86
\t\tFunction : add_one
\t.headerflags\t@"EF_CUDA_TEXMODE_UNIFIED EF_CUDA_64BIT_ADDRESS EF_CUDA_SM86 EF_CUDA_VIRTUAL_SM(EF_CUDA_SM86)"
        /*0000*/                   MOV R1, c[0x0][0x28] ;                   /* 0x00000a0000017a02 */
                                                                            /* 0x000fe40000000f00 */
        /*0010*/                   BSSY B0, 0x60 ;                          /* 0x0000004000007945 */
                                                                            /* 0x000fe20003800000 */
        /*0020*/              @!P0 BRA 0x50 ;                               /* 0x0000002000008947 */
                                                                            /* 0x000fea0003800000 */
        /*0030*/                   CALL.REL.NOINC 0x80 ;                    /* 0x0000004000007944 */
                                                                            /* 0x000fea0003c00000 */
        /*0040*/                   BRA 0x50 ;                               /* 0x0000000000007947 */
                                                                            /* 0x000fea0003800000 */
        /*0050*/                   BSYNC B0 ;                               /* 0x0000000000007941 */
                                                                            /* 0x000fea0003800000 */
        /*0060*/                   EXIT ;                                   /* 0x000000000000794d */
                                                                            /* 0x000fea0003800000 */
        /*0070*/                   BRA 0x70;                                /* 0xfffffff000007947 */
                                                                            /* 0x000fc0000383ffff */
        /*0080*/                   RET.REL.NODEC R4 0x0 ;                   /* 0xffffff7004007950 */
                                                                            /* 0x000fea0003c3ffff */
\t\t..........

\t\tFunction : other
\t.headerflags\t@"EF_CUDA_SM86"
        /*0000*/                   EXIT ;                                   /* 0x000000000000794d */
                                                                            /* 0x000fea0003800000 */
\t\t..........
"""


def line_of(text: str, needle: str) -> int:
    """1-based line of the only line containing ``needle``."""
    hits = [k + 1 for k, line in enumerate(text.splitlines()) if needle in line]
    assert len(hits) == 1, (needle, hits)
    return hits[0]


@pytest.fixture(scope="module")
def first():
    return load_program(NVDISASM, "first", "k.sass")


def by_pc(program, pc):
    return next(i for i in program.insts if i.pc == pc)


# ---------------------------------------------------------------- listing structure
def test_sections_functions_and_addresses():
    sections = parse_listing(NVDISASM, "k.sass")
    assert list(sections) == ["first", "second"]
    first = sections["first"]
    assert [r.pc for r in first.instructions] == list(range(0, 0x130, 0x10))
    assert [(f.name, f.start) for f in first.functions] == [("first", 0), ("$__internal_0_$__helper", 0xF0)]
    assert [r.pc for r in sections["second"].instructions] == [0, 0x10, 0x20]


def test_labels_bind_to_the_next_instruction():
    labels = parse_listing(NVDISASM, "k.sass")["first"].labels
    assert labels[".L_x_0"] == 0xC0 and labels[".L_x_1"] == 0xD0 and labels[".L_x_2"] == 0xA0
    assert labels["$__internal_0_$__helper"] == 0xF0 and labels["first"] == 0
    assert labels[".L_x_9"] == -1            # the end-of-kernel label binds to nothing


def test_label_that_is_not_a_branch_target_does_not_cut_a_block(first):
    assert 0xA0 not in first.blocks           # .L_x_2: nothing jumps there
    assert {0xC0, 0xD0} <= set(first.blocks)  # .L_x_0 (BRA, BSYNC) and .L_x_1 (BSSY) do
    block = next(b for b in first.blocks.values() if any(i.pc == 0xA0 for i in b.insts))
    assert block.insts[0].pc < 0xA0


def test_every_instruction_keeps_file_and_line(first):
    for inst in first.insts:
        assert inst.file == "k.sass"
        assert f"/*{inst.pc:04x}*/" in NVDISASM.splitlines()[inst.line - 1]
        assert inst.where == f"k.sass:{inst.line}"
    assert by_pc(first, 0x20).line == line_of(NVDISASM, "ISETP.NE.U32.AND")


def test_first_line_offsets_line_numbers():
    program = load_program(NVDISASM, "second", "case.toml", first_line=40)
    assert program.insts[0].line == 40 - 1 + line_of(NVDISASM, "SR_LANEID")
    assert program.insts[0].where == f"case.toml:{program.insts[0].line}"


def test_several_kernels_need_a_name():
    with pytest.raises(ProgramError) as err:
        load_program(NVDISASM, None, "k.sass")
    assert str(err.value) == "k.sass: 2 kernels in the listing; name one of ['first', 'second']"
    with pytest.raises(ProgramError) as err:
        load_program(NVDISASM, "third", "k.sass")
    assert str(err.value) == "k.sass: no kernel third in the listing (has first, second)"
    assert load_program(NVDISASM, "second", "k.sass").name == "second"


def test_shipped_multi_kernel_listing():
    text = (ROOT / "cases/truth/kernels.sm_86.sass").read_text()
    sections = parse_listing(text, "kernels.sm_86.sass")
    assert len(sections) >= 10
    for name in sections:
        program = load_program(text, name, "kernels.sm_86.sass")
        assert program.insts and all(i.file == "kernels.sm_86.sass" and i.line > 0 for i in program.insts)


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


# ---------------------------------------------------------------- cuobjdump
def test_cuobjdump_form():
    sections = parse_listing(CUOBJDUMP, "k.cuobjdump")
    assert list(sections) == ["add_one", "other"]
    program = load_program(CUOBJDUMP, "add_one", "k.cuobjdump")
    assert [i.pc for i in program.insts] == list(range(0, 0x90, 0x10))
    targets = {i.pc: i.target for i in program.insts if i.target is not None}
    assert targets == {0x10: 0x60, 0x20: 0x50, 0x30: 0x80, 0x40: 0x50, 0x70: 0x70, 0x80: 0}
    ret = by_pc(program, 0x80)
    assert [(o.kind, o.name or o.value) for o in ret.ops] == [("reg", "R4"), ("imm", 0)]
    assert ret.text == "RET.REL.NODEC R4 0x0"                  # no encoding comment
    assert by_pc(program, 0x20).guard.inv is True
    assert by_pc(program, 0x80).line == line_of(CUOBJDUMP, "RET.REL.NODEC")
    assert {0x50, 0x60, 0x80} <= set(program.blocks)


# ---------------------------------------------------------------- errors, asserted exactly
def _kernel(*body: str) -> str:
    lines = ["first:", ".text.first:"]
    lines += [f"        /*{16 * k:04x}*/                   {b} ;" for k, b in enumerate(body)]
    return "\n".join(lines) + "\n"


def test_malformed_operand():
    text = _kernel("S2R R0, SR_TID.X", "MOV R1, R2#")
    with pytest.raises(SassSyntaxError) as err:
        load_program(text, None, "bad.sass")
    assert str(err.value) == "bad.sass:4: malformed operand 'R2#' in 'MOV R1, R2#'"


def test_malformed_address():
    with pytest.raises(SassSyntaxError) as err:
        parse_listing(_kernel("LDG.E R1, [R2.64+R3*2]"), "bad.sass")["first"]
    assert str(err.value) == "bad.sass:3: malformed address [R2.64+R3*2] in 'LDG.E R1, [R2.64+R3*2]'"


def test_malformed_opcode():
    with pytest.raises(SassSyntaxError) as err:
        parse_listing(_kernel("EXIT", "iadd3 R0, R1, R2, RZ"), "bad.sass")["first"]
    assert str(err.value) == "bad.sass:4: malformed opcode 'iadd3' in 'iadd3 R0, R1, R2, RZ'"


def test_unknown_opcode():
    text = _kernel("S2R R0, SR_TID.X", "FOO.BAR R0, R1", "EXIT")
    with pytest.raises(UnsupportedInstruction) as err:
        load_program(text, None, "bad.sass")
    assert str(err.value) == "bad.sass:4: unknown opcode FOO.BAR"
    assert err.value.opcode == "FOO.BAR"


def test_unknown_modifier():
    with pytest.raises(UnsupportedInstruction) as err:
        load_program(_kernel("IADD3.FOO R0, R1, R2, RZ"), None, "bad.sass")
    assert str(err.value) == "bad.sass:3: unsupported modifier .FOO of IADD3 in 'IADD3.FOO R0, R1, R2, RZ'"


def test_unknown_label():
    text = _kernel("S2R R0, SR_TID.X", "BRA `(.L_x_9)")
    with pytest.raises(ProgramError) as err:
        load_program(text, None, "bad.sass")
    assert str(err.value) == "bad.sass:4: unknown label .L_x_9 in 'BRA `(.L_x_9)'"


def test_target_outside_the_kernel():
    with pytest.raises(ProgramError) as err:
        load_program(_kernel("BRA 0x100", "EXIT"), None, "bad.sass")
    assert str(err.value) == "bad.sass:3: target 0x100 is outside kernel first"


def test_addresses_must_follow_each_other():
    text = "first:\n/*0000*/ EXIT ;\n/*0020*/ EXIT ;\n"
    with pytest.raises(ProgramError) as err:
        load_program(text, None, "bad.sass")
    assert str(err.value) == "bad.sass:3: address /*0020*/ does not follow /*0000*/"


def test_error_lines_count_from_first_line():
    text = _kernel("MOV R1, R2#")
    with pytest.raises(SassSyntaxError) as err:
        load_program(text, None, "case.toml", first_line=10)
    assert str(err.value) == "case.toml:12: malformed operand 'R2#' in 'MOV R1, R2#'"


# ---------------------------------------------------------------- one bad kernel, the rest load
def test_a_kernel_that_does_not_parse_fails_alone():
    text = NVDISASM.replace("S2R R0, SR_LANEID ;", "S2R R0, SR_LANEID# ;")
    listing = parse_listing(text, "k.sass")
    assert list(listing) == ["first", "second"] and "second" in listing
    assert load_program(text, "first", "k.sass").name == "first"
    want = f"k.sass:{line_of(text, 'SR_LANEID#')}: malformed operand 'SR_LANEID#' in 'S2R R0, SR_LANEID#'"
    for ask in (lambda: listing["second"], lambda: load_program(text, "second", "k.sass")):
        with pytest.raises(SassSyntaxError) as err:
            ask()
        assert str(err.value) == want
    assert {name: str(e) for name, e in listing.errors().items()} == {"second": want}


def test_spans_need_no_instruction_parsing():
    text = NVDISASM.replace("EXIT ;\n.L_x_4:", "EXIT# ;\n.L_x_4:")
    listing = parse_listing(text, "k.sass")
    lines = text.splitlines()
    start, end = listing.span("second")
    assert lines[start].strip().startswith(".section") and ".text.second" in lines[start]
    assert end == len(lines) and listing.span("first") == (line_of(text, ".section\t.text.first") - 1, start)
    assert list(listing.errors()) == ["second"]


def test_cuobjdump_kernels_are_what_cases_see():
    from warpboard.harness.case.model import has_kernel, kernel_section, listing_kernels
    assert listing_kernels(CUOBJDUMP) == ["add_one", "other"] and has_kernel(CUOBJDUMP, "other")
    other = kernel_section(CUOBJDUMP, "other")
    assert other.lstrip().startswith("Function : other") and "add_one" not in other
    assert list(parse_listing(other)) == ["other"]
    assert listing_kernels(_kernel("EXIT").replace(".text.first:\n", "")) == []    # bare listing


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
        load_program(_kernel("TEX.SCR.LL R0, R2, R4, R0, 0x0, 0x5a, 2D", "EXIT"), None, "t.sass")
    assert err.value.opcode == "TEX.SCR.LL" and str(err.value).startswith("t.sass:3: ")


def test_an_index_register_in_an_address_is_unsupported_when_translated():
    from warpboard.translator.emit.emitter import translate
    program = load_program(_kernel("LDS R0, [R2+R3]", "EXIT"), None, "i.sass")
    with pytest.raises(UnsupportedInstruction) as err:
        translate(program, (32, 1, 1))
    assert str(err.value) == ("i.sass:3: unsupported LDS: address with an index register [R2+R3] "
                              "in 'LDS R0, [R2+R3]'")
    translate(load_program(_kernel("LDS R0, [R2+URZ]", "EXIT"), None, "i.sass"), (32, 1, 1))


# ---------------------------------------------------------------- linear time
def _parse_seconds(text: str, repeat: int = 5) -> float:
    """Best of ``repeat`` cold parses of every kernel of ``text``."""
    from warpboard.translator.sass import operands as sass_operands
    best = float("inf")
    for _ in range(repeat):
        sass_operands.clear_caches()
        start = time.perf_counter()
        listing = parse_listing(text, "big.sass")
        assert sum(len(listing[name].instructions) for name in listing) > 0
        best = min(best, time.perf_counter() - start)
    return best


def test_parsing_time_grows_linearly():
    from warpboard.harness.tools.bench import big_listing
    once, four = big_listing(ROOT / "cases", 6000), big_listing(ROOT / "cases", 24000)
    assert four.count("\n") == 4 * once.count("\n") == 24000
    assert _parse_seconds(four) < 6 * _parse_seconds(once)


def test_big_listing_kernels_stay_distinct_and_parse():
    from warpboard.harness.tools.bench import big_listing, parse_rate
    text = big_listing(ROOT / "cases", 20000)
    listing = parse_listing(text, "big.sass")
    assert not listing.errors()
    singles = {name for p in (ROOT / "cases").rglob("*.sass") for name in parse_listing(p.read_text())}
    assert {n.rsplit("_r", 1)[0] for n in listing} == singles
    assert len(listing) > len(singles)                              # copies are renamed, not merged
    rate = parse_rate(ROOT / "cases", 3000, repeat=1)
    assert rate["lines"] == 3000 and rate["instructions"] > 0 and rate["lines_per_s"] > 0


# ---------------------------------------------------------------- nvdisasm's annotations
def _annotated(*body: str) -> str:
    """A kernel whose lines are written as nvdisasm pads them before an annotation."""
    lines = ["first:", ".text.first:"]
    lines += [f"        /*{16 * k:04x}*/                   {b};" for k, b in enumerate(body)]
    return "\n".join(lines) + "\n"


SPILLS = _annotated('STL [R1+0x434], R4                        (*"SpillRefill"*)',
                    'LDL R5, [R1+0x434]  (*"SpillRefill"*)', "EXIT ")


def test_spill_refill_annotations_are_kept_and_change_nothing():
    store, load, _ = parse_listing(SPILLS, "s.sass")["first"].instructions
    assert store.annotations == ("SpillRefill",) and store.branch_targets == ()
    assert store.text == "STL [R1+0x434], R4"
    assert [(o.kind, o.offset if o.kind == "mem" else o.value) for o in store.operands] == [("mem", 0x434), ("reg", 4)]
    program = load_program(SPILLS, None, "s.sass")
    assert [i.base for i in program.insts] == ["STL", "LDL", "EXIT"]
    plain = load_program(SPILLS.replace('(*"SpillRefill"*)', ""), None, "s.sass")
    assert [i.ops for i in program.insts] == [i.ops for i in plain.insts]


def test_branch_targets_are_data_on_the_instruction():
    text = _annotated("LDC R2, c[0x2][R6]", 'BRX R2 -0x20    (*"BRANCH_TARGETS .L_x_113,.L_x_114,.L_x_43"*)')
    brx = parse_listing(text, "b.sass")["first"].instructions[1]
    assert brx.opcode == "BRX" and brx.branch_targets == (".L_x_113", ".L_x_114", ".L_x_43")
    assert brx.annotations == ("BRANCH_TARGETS .L_x_113,.L_x_114,.L_x_43",)
    assert [(o.kind, o.name or o.value) for o in brx.operands] == [("reg", "R2"), ("imm", -0x20)]
    assert brx.text == "BRX R2 -0x20"


def test_several_annotations_and_unknown_ones_parse():
    raw = parse_listing(_annotated('IADD3 R0, R1, R2, RZ (*"SpillRefill"*) (*"SOMETHING NEW"*)'), "a.sass")
    inst = raw["first"].instructions[0]
    assert inst.annotations == ("SpillRefill", "SOMETHING NEW")
    assert inst.unknown_annotations == ("SOMETHING NEW",)


@pytest.mark.parametrize("body, message", [
    ('IADD3 R0, R1, R2, RZ (*"SpillRefill"', "a.sass:3: malformed annotation in 'IADD3 R0, R1, R2, RZ (*\"SpillRefill\"'"),
    ('BRX R2 -0x20 (*"BRANCH_TARGETS .L_x_1,,.L_x_2"*)',
     "a.sass:3: malformed branch target '' in (*\"BRANCH_TARGETS .L_x_1,,.L_x_2\"*)"),
    ('BRX R2 -0x20 (*"BRANCH_TARGETS .L_x_1"*) (*"BRANCH_TARGETS .L_x_2"*)',
     "a.sass:3: two BRANCH_TARGETS annotations"),
])
def test_malformed_annotations(body, message):
    with pytest.raises(SassSyntaxError) as err:
        parse_listing(_annotated(body), "a.sass")["first"]
    assert str(err.value) == message


def test_an_unknown_annotation_is_refused_only_where_it_could_change_control():
    load_program(_annotated('IADD3 R0, R1, R2, RZ (*"SOMETHING NEW"*)', "EXIT "), None, "u.sass")
    with pytest.raises(UnsupportedInstruction) as err:
        load_program(_annotated("IADD3 R0, R1, R2, RZ", 'EXIT (*"SOMETHING NEW"*)'), None, "u.sass")
    assert str(err.value) == "u.sass:4: unknown annotation (*\"SOMETHING NEW\"*) on a control transfer in 'EXIT'"
    assert err.value.opcode == "EXIT"


def test_branch_targets_on_a_direct_branch_are_refused():
    text = ("first:\n/*0000*/ BRA `(.L_x_0)     (*\"BRANCH_TARGETS .L_x_0\"*);\n"
            ".L_x_0:\n/*0010*/ EXIT ;\n")
    with pytest.raises(ProgramError) as err:
        load_program(text, None, "d.sass")
    assert str(err.value) == "d.sass:2: branch targets on BRA, which does not branch through a register, in 'BRA `(.L_x_0)'"


def test_annotations_print_back():
    from warpboard.translator.sass.printer import format_instruction
    text = _annotated('BRX R2 -0x20                                (*"BRANCH_TARGETS .L_x_1,.L_x_2"*)',
                      'STL [R1+0x4], R4 (*"SpillRefill"*)')
    printed = [format_instruction(r) for r in parse_listing(text, "p.sass")["first"].instructions]
    assert printed == ['BRX R2 -0x20 (*"BRANCH_TARGETS .L_x_1,.L_x_2"*)', 'STL [R1+0x4], R4 (*"SpillRefill"*)']


def test_an_opcode_left_out_on_purpose_says_why():
    from warpboard.translator.errors import UnsupportedInstruction
    from warpboard.translator.ir.program import load_program
    from warpboard.harness.tools.corpus import blocker_key
    with pytest.raises(UnsupportedInstruction) as err:
        load_program(".text.k:\n        /*0000*/  HMMA.16816.F32 R4, R8, R12, R4 ;\n"
                     "        /*0010*/  EXIT ;\n", "k")
    assert "HMMA.16816.F32 is not translated: a tensor-core" in str(err.value)
    assert str(err.value).startswith("<listing>:2: ")
    assert blocker_key(err.value) == "HMMA"

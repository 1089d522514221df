"""Constant operands as nvdisasm prints them beside packed halves: a space between bank and
offset (``c[0x0] [0x170]``), a half select (``.H0_H0``, ``.H1_H1``, ``.F32``), sign and bars
around both (``-|c[0x0] [0x170].H1_H1|``), and an offset of 0x8000 or more printed negative
(``c[0x0][-0x6880]``). Each parses, prints back as nvdisasm printed it, and reads on both back
ends as the same select on a register holding the same word does; an unknown select is
refused, naming its line. Forms below are nvdisasm's own lines (nvcc 13.0 -arch=sm_86 -O3 of
kernels taking __half, __half2, __nv_bfloat16 and 32 KB parameters)."""
from __future__ import annotations

import pytest
from support.float32 import kernel
from support.sass_texts import kernel_text
from warpboard.translator.emit.emitter import translate
from warpboard.translator.errors import SassSyntaxError, UnsupportedInstruction
from warpboard.translator.ir.program import load_program
from warpboard.translator.sass.listing import parse_instruction
from warpboard.translator.sass.operands import Malformed, parse_operand
from warpboard.translator.sass.printer import format_instruction, half_constants


# ---------------------------------------------------------------- parsing
@pytest.mark.parametrize("text, want", [
    ("c[0x0] [0x170].H0_H0", {"value": 0, "offset": 0x170, "suffix": ("H0_H0",)}),
    ("c[0x0] [0x170].H1_H1", {"offset": 0x170, "suffix": ("H1_H1",)}),
    ("c[0x0] [0x170].F32", {"suffix": ("F32",)}),
    ("c[0x0] [0x170]", {"offset": 0x170, "suffix": ()}),
    ("c[0x0][0x170].H0_H0", {"offset": 0x170, "suffix": ("H0_H0",)}),           # without the space
    ("-c[0x0] [0x170].H0_H0", {"neg": True, "abs": False, "suffix": ("H0_H0",)}),
    ("|c[0x0] [0x170]|", {"abs": True, "neg": False, "suffix": ()}),
    ("-|c[0x0] [0x170].H1_H1|", {"neg": True, "abs": True, "suffix": ("H1_H1",)}),
    ("-|c[0x0] [0x170]|.H1_H1", {"neg": True, "abs": True, "suffix": ("H1_H1",)}),   # a register's order
    ("c[0x3] [UR4+0x8].H1_H1", {"value": 3, "offset": 8, "suffix": ("H1_H1",)}),
    ("c[0x0][-0x6880]", {"offset": 0x9780}),                                     # the 16-bit field
    ("c[0x0][-0x8000]", {"offset": 0x8000}),
])
def test_constant_forms_parse(text, want):
    o = parse_operand(text)
    assert o.kind == "cbank"
    assert {k: getattr(o, k) for k in want} == want


@pytest.mark.parametrize("text", ["c[0x0] [[0x170]", "c[0x0] [0x170", "c[0x0]  [0x170].", "c[0x0][-0x8004]",
                                  "c[0x0] [R2+R3]"])
def test_malformed_constants_are_refused(text):
    with pytest.raises(Malformed):
        parse_operand(text)


def test_a_spaced_constant_is_one_operand_of_its_instruction():
    raw = parse_instruction(0x60, "HADD2.F32 R0, -RZ, c[0x0] [0x170].H0_H0 ;", "k.sass", 22)
    assert [o.kind for o in raw.operands] == ["reg", "reg", "cbank"]
    assert (raw.operands[2].offset, raw.operands[2].suffix) == (0x170, ("H0_H0",))


def test_an_operand_error_names_file_and_line():
    with pytest.raises(SassSyntaxError) as err:
        parse_instruction(0x60, "HADD2.F32 R0, -RZ, c[0x0] [0x170.H0_H0 ;", "k.sass", 22)
    assert str(err.value).startswith("k.sass:22: malformed constant 'c[0x0] [0x170.H0_H0'")


# ---------------------------------------------------------------- printing back
NVDISASM_LINES = """\
HADD2.F32 R0, -RZ, c[0x0] [0x170].H0_H0
HADD2 R7, R2, -c[0x0] [0x170].H1_H1
HADD2 R7, R2, -|c[0x0] [0x170].H1_H1|
HADD2 R7, R2, |c[0x0] [0x170].H1_H1|
HADD2 R7, R2, |c[0x0] [0x170]|
HADD2 R9, R5, -|R2|.H0_H0
HFMA2 R0, R2.H0_H0, R7.H0_H0, -c[0x0] [0x170].H0_H0
HFMA2 R7, R2, R7.H0_H0, c[0x0] [0x170].H1_H1
HFMA2.BF16_V2 R7, R2, R7.H0_H0, c[0x0] [0x170].H0_H0
HFMA2.RELU R7, R2, c[0x0] [0x170], R2
HMUL2 R7, R2, -c[0x0] [0x170]
HMUL2.SAT R7, R2, c[0x0] [0x170]
HMNMX2 R7, R0, c[0x0] [0x170].H0_H0, !PT
HMNMX2.NAN R7, R2, c[0x0] [0x170], !PT
HSET2.BF.LE.AND R7, R2, c[0x0] [0x170].H1_H1, PT
@P0 HSET2.GT.AND R0, R2, c[0x0] [0x170].H0_H0, PT
HSETP2.GEU.AND P1, PT, R2.H0_H0, c[0x0] [0x170].H1_H1, PT
F2I.U32.F16.TRUNC.NTZ R0, c[0x0] [0x168]
F2I.S16.F16.TRUNC.NTZ R0, c[0x0] [0x168]
F2I.U64.F16.CEIL R2, c[0x0] [0x168]
F2I.F16.NTZ R0, R2.H1
F2I.F16.TRUNC.NTZ R7, |R2|
F2F.F64.F16 R2, c[0x0] [0x168]
FRND.F16.FLOOR R0, c[0x0] [0x168]
I2F.F16 R5, c[0x0][0x170]
F2F.F16.F64 R0, c[0x0][0x168]
F2FP.PACK_AB R0, R0, c[0x0][0x170]
IMAD.WIDE.U32 R2, R4, R3, c[0x0][-0x6880]
IADD3.X R3, R3, c[0x0][-0x687c], RZ, P0, !PT
IADD3 R5, R5, c[0x0][0x68a0], R0
"""


@pytest.mark.parametrize("line", NVDISASM_LINES.splitlines())
def test_nvdisasm_lines_print_back(line):
    assert format_instruction(parse_instruction(0, line + " ;", "k.sass", 1)) == line


def test_the_spaced_form_follows_what_the_constant_is_read_as():
    assert half_constants("HADD2.F32") and half_constants("HSETP2.GT.AND") and half_constants("HFMA2.MMA")
    assert half_constants("F2I.U32.F16.TRUNC.NTZ") and half_constants("F2F.F64.F16") and half_constants("FRND.F16")
    assert not half_constants("F2F.F16.F64") and not half_constants("I2F.F16") and not half_constants("F2FP.PACK_AB")
    assert not half_constants("IMAD.WIDE.U32") and not half_constants("F2I.F64.TRUNC")
    unspaced = parse_instruction(0, "HADD2.F32 R0, -RZ, c[0x0][0x170].H0_H0", "k.sass", 1)
    assert format_instruction(unspaced) == "HADD2.F32 R0, -RZ, c[0x0] [0x170].H0_H0"


# ---------------------------------------------------------------- semantics, on both back ends
W_ONE_FOUR = 0x4400_3C00     # halves 1.0 (H0) and 4.0 (H1)
W_F32 = 0x4020_0000          # 2.5 as binary32
W_NEG = 0xC000_BC00          # halves -1.0 (H0) and -2.0 (H1)
X = 0x3C00_4000              # R4: halves 2.0 (H0) and 1.0 (H1)
CONSTANTS = ((3, 0, (W_ONE_FOUR, W_F32, W_NEG)),)      # c[0x3][0x0], [0x4], [0x8]; R5, R6, R7 hold the same words
PREDICATES = " ;; SEL {d}, RZ, 0x1, !P0 ;; SEL R2, RZ, 0x2, !P1 ;; IADD3 {d}, {d}, R2, RZ"

# (the form on a constant, the same form on the register that holds its word, the result)
FORMS = [
    ("HADD2 {d}, -RZ, c[0x3] [0x0]", "HADD2 {d}, -RZ, R5", 0x4400_3C00),
    ("HADD2 {d}, -RZ, c[0x3] [0x0].H0_H0", "HADD2 {d}, -RZ, R5.H0_H0", 0x3C00_3C00),
    ("HADD2 {d}, -RZ, c[0x3] [0x0].H1_H1", "HADD2 {d}, -RZ, R5.H1_H1", 0x4400_4400),
    ("HADD2 {d}, -RZ, -c[0x3] [0x0].H1_H1", "HADD2 {d}, -RZ, -R5.H1_H1", 0xC400_C400),
    ("HADD2 {d}, -RZ, |c[0x3] [0x8]|", "HADD2 {d}, -RZ, |R7|", 0x4000_3C00),
    ("HADD2 {d}, -RZ, -|c[0x3] [0x8].H1_H1|", "HADD2 {d}, -RZ, -|R7|.H1_H1", 0xC000_C000),
    ("HADD2.F32 {d}, -RZ, c[0x3] [0x0].H1_H1", "HADD2.F32 {d}, -RZ, R5.H1_H1", 0x4080_0000),
    ("HADD2.F32 {d}, -RZ, c[0x3] [0x8].H0_H0", "HADD2.F32 {d}, -RZ, R7.H0_H0", 0xBF80_0000),
    ("HFMA2 {d}, R4, c[0x3] [0x0].H1_H1, -RZ", "HFMA2 {d}, R4, R5.H1_H1, -RZ", 0x4400_4800),
    ("HFMA2 {d}, R4, R4, c[0x3] [0x8].H0_H0", "HFMA2 {d}, R4, R4, R7.H0_H0", 0x0000_4200),
    ("HMUL2 {d}, R4, c[0x3] [0x4].F32", "HMUL2 {d}, R4, R6.F32", 0x4100_4500),
    ("HMNMX2 {d}, R4, c[0x3] [0x0].H1_H1, PT", "HMNMX2 {d}, R4, R5.H1_H1, PT", 0x3C00_4000),
    ("HSET2.BF.LE.AND {d}, R4, c[0x3] [0x0].H1_H1, PT", "HSET2.BF.LE.AND {d}, R4, R5.H1_H1, PT", 0x3C00_3C00),
    ("HSETP2.LT.AND P0, P1, R4, c[0x3] [0x0].H1_H1, PT" + PREDICATES,
     "HSETP2.LT.AND P0, P1, R4, R5.H1_H1, PT" + PREDICATES, 3),
    ("F2I.F16.NTZ {d}, c[0x3] [0x0]", "F2I.F16.NTZ {d}, R5", 1),
    ("F2I.F16.NTZ {d}, c[0x3] [0x0].H1", "F2I.F16.NTZ {d}, R5.H1", 4),
    ("F2I.F16.TRUNC.NTZ {d}, |c[0x3] [0x8]|", "F2I.F16.TRUNC.NTZ {d}, |R7|", 1),
    ("F2I.F16.TRUNC.NTZ {d}, -c[0x3] [0x8]", "F2I.F16.TRUNC.NTZ {d}, -R7", 1),
    ("F2F.F32.F16 {d}, c[0x3] [0x0].H1", "F2F.F32.F16 {d}, R5.H1", 0x4080_0000),
]


def test_a_select_reads_a_constant_as_it_reads_a_register(backend):
    ops = [(form, None) for pair in FORMS for form in pair[:2]]
    run = backend.run(kernel(ops, 4, len(ops)), [[X, W_ONE_FOUR, W_F32, W_NEG] * 32, [0] * (32 * len(ops))],
                      constants=CONSTANTS, name="constant_selects")
    assert run.outcome == "ok", f"{backend.name}: {run.outcome}: {run.detail}"
    got = run.buffers[1][:len(ops)]
    bad = [f"{c}: {got[2 * k]:#x} (its register twin {got[2 * k + 1]:#x}), expected {want:#x}"
           for k, (c, _, want) in enumerate(FORMS) if (got[2 * k], got[2 * k + 1]) != (want, want)]
    assert not bad, f"{backend.name}:\n" + "\n".join(bad)


@pytest.mark.parametrize("operand", ["c[0x3] [0x0].H0_H1", "R5.H1_H0_H0", "c[0x3] [0x0].X4"])
def test_an_unknown_select_is_refused_naming_its_line(operand):
    program = load_program(kernel_text("S2R R5, SR_TID.X", f"HADD2 R0, -RZ, {operand}", "EXIT"), None, "k.sass")
    with pytest.raises(UnsupportedInstruction) as err:
        translate(program, (32, 1, 1))
    assert str(err.value).startswith(f"k.sass:4: unsupported HADD2: operand {operand} (a half select is one of")

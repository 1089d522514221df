"""Operands that no SM86 encoding holds are errors where the listing is read: a register past
its file, an immediate wider than its 32-bit field, an address offset wider than its field, a
constant-bank offset not aligned to its read. Each is one ``file:line:`` error, and on every
back end the case is one ERROR cell (neither back end ever sees such an operand)."""
from __future__ import annotations

import pytest
from warpboard.harness.run.engine import run_case
from warpboard.harness.run.results import Status
from warpboard.translator.errors import SassSyntaxError
from warpboard.translator.ir.program import load_program

REJECTED = [
    ("MOV R300, R1", "register R300 out of range (R0-R254 or RZ)"),
    ("MOV R255, R1", "register R255 out of range (R0-R254 or RZ)"),
    ("UMOV UR99, 0x1", "register UR99 out of range (UR0-UR62 or URZ)"),
    ("UMOV UR63, 0x1", "register UR63 out of range (UR0-UR62 or URZ)"),
    ("BSYNC B99", "register B99 out of range (B0-B15)"),
    ("BSYNC B16", "register B16 out of range (B0-B15)"),
    ("DEPBAR.LE SB6, 0x0", "register SB6 out of range (SB0-SB5)"),
    ("ISETP.NE.AND P7, PT, R0, RZ, PT", "malformed operand 'P7'"),
    ("UISETP.NE.AND UP7, UPT, UR4, URZ, UPT", "malformed operand 'UP7'"),
    ("MOV R1, 0x100000000", "immediate 0x100000000 out of range (at most 32 bits)"),
    ("IADD3 R1, R1, -0x80000001, RZ", "immediate -0x80000001 out of range (at most 32 bits)"),
    ("LDG.E R1, [R2.64+0x800000]", "address offset 0x800000 out of range (a signed 24-bit offset)"),
    ("MOV R1, c[0x12][0x0]", "constant bank 0x12 out of range (banks 0x0-0x11)"),
    ("MOV R1, c[0x0][0x10000]", "constant bank offset 0x10000 out of range (0x0-0xffff)"),
    ("MOV R1, c[0x0][0x161]",
     "constant bank offset 0x161 in c[0x0][0x161] is not aligned to the 32-bit read of 'MOV R1, c[0x0][0x161]'"),
    ("ULDC.64 UR4, c[0x0][0x164]",
     "constant bank offset 0x164 in c[0x0][0x164] is not aligned to the 64-bit read of 'ULDC.64 UR4, c[0x0][0x164]'"),
]

ACCEPTED = ["MOV R254, RZ", "UMOV UR62, URZ", "BSYNC B15", "DEPBAR SB5, 0x0", "MOV R1, 0xffffffff",
            "IADD3 R1, R1, -0x80000000, RZ", "LDG.E R1, [R2.64+-0x800000]", "LDS R1, [R2+0x7ffffc]",
            "MOV R1, c[0x11][0xfffc]", "ULDC.64 UR4, c[0x0][0x168]", "LDC R1, c[0x0][R2+0x4]"]


def one_line(text: str) -> str:
    return f"        /*0000*/                   {text} ;\n        /*0010*/                   EXIT ;\n"


@pytest.mark.parametrize("text,message", REJECTED, ids=[t for t, _ in REJECTED])
def test_operand_out_of_range_is_an_error_naming_its_line(text, message):
    body = message if "of '" in message else f"{message} in '{text}'"
    with pytest.raises(SassSyntaxError) as err:
        load_program(one_line(text), file="k.sass")
    assert str(err.value) == f"k.sass:1: {body}"


@pytest.mark.parametrize("text", ACCEPTED)
def test_operand_at_the_edge_of_its_range_is_accepted(text):
    assert load_program(one_line(text), file="k.sass").insts[0].text == text


@pytest.mark.parametrize("text", ["MOV R0, R300", "MOV R0, c[0x0][0x161]", "MOV R0, 0x1ffffffff"])
def test_out_of_range_operand_is_one_error_cell_on_every_back_end(make_case, backend, text):
    sass = (f"        /*0000*/                   {text} ;\n"
            "        /*0010*/                   STG.E [R2.64], R0 ;\n"
            "        /*0020*/                   EXIT ;\n")
    case = make_case("ranges/bad", sass=sass)
    result = run_case(case, backend.name, backend.device)
    assert result.status is Status.ERROR
    assert result.traceback is None
    assert result.message.startswith(f"{case.listing_path}:")
    assert "out of range" in result.message or "not aligned" in result.message

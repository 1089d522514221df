"""Decoding a listing against the opcode table (translator.ir.program): every error message,
asserted exactly, with the file and line it names."""
from __future__ import annotations

import pytest
from warpboard.translator.errors import (
    ProgramError,
    SassSyntaxError,
    UnsupportedInstruction,
)
from warpboard.translator.ir.program import load_program
from warpboard.translator.sass.listing import parse_listing

from support.sass_texts import kernel_text


# ---------------------------------------------------------------- errors, asserted exactly
def test_malformed_operand():
    text = kernel_text("S2R R0, SR_TID.X", "MOV R1, R2#")
    with pytest.raises(SassSyntaxError) as err:
        load_program(text, None, "bad.sass")
    assert str(err.value) == "bad.sass:4: malformed operand 'R2#' in 'MOV R1, R2#'"


def test_malformed_address():
    with pytest.raises(SassSyntaxError) as err:
        parse_listing(kernel_text("LDG.E R1, [R2.64+R3*2]"), "bad.sass")["first"]
    assert str(err.value) == "bad.sass:3: malformed address [R2.64+R3*2] in 'LDG.E R1, [R2.64+R3*2]'"


def test_malformed_opcode():
    with pytest.raises(SassSyntaxError) as err:
        parse_listing(kernel_text("EXIT", "iadd3 R0, R1, R2, RZ"), "bad.sass")["first"]
    assert str(err.value) == "bad.sass:4: malformed opcode 'iadd3' in 'iadd3 R0, R1, R2, RZ'"


def test_unknown_opcode():
    text = kernel_text("S2R R0, SR_TID.X", "FOO.BAR R0, R1", "EXIT")
    with pytest.raises(UnsupportedInstruction) as err:
        load_program(text, None, "bad.sass")
    assert str(err.value) == "bad.sass:4: unknown opcode FOO.BAR"
    assert err.value.opcode == "FOO.BAR"


def test_unknown_modifier():
    with pytest.raises(UnsupportedInstruction) as err:
        load_program(kernel_text("IADD3.FOO R0, R1, R2, RZ"), None, "bad.sass")
    assert str(err.value) == "bad.sass:3: unsupported modifier .FOO of IADD3 in 'IADD3.FOO R0, R1, R2, RZ'"


def test_unknown_label():
    text = kernel_text("S2R R0, SR_TID.X", "BRA `(.L_x_9)")
    with pytest.raises(ProgramError) as err:
        load_program(text, None, "bad.sass")
    assert str(err.value) == "bad.sass:4: unknown label .L_x_9 in 'BRA `(.L_x_9)'"


def test_target_outside_the_kernel():
    with pytest.raises(ProgramError) as err:
        load_program(kernel_text("BRA 0x100", "EXIT"), None, "bad.sass")
    assert str(err.value) == "bad.sass:3: target 0x100 is outside kernel first"


def test_addresses_must_follow_each_other():
    text = "first:\n/*0000*/ EXIT ;\n/*0020*/ EXIT ;\n"
    with pytest.raises(ProgramError) as err:
        load_program(text, None, "bad.sass")
    assert str(err.value) == "bad.sass:3: address /*0020*/ does not follow /*0000*/"


def test_error_lines_count_from_first_line():
    text = kernel_text("MOV R1, R2#")
    with pytest.raises(SassSyntaxError) as err:
        load_program(text, None, "case.toml", first_line=10)
    assert str(err.value) == "case.toml:12: malformed operand 'R2#' in 'MOV R1, R2#'"

"""The SM86 assembler (authoring/assembler/): listing text to instruction words with tables learned
from nvcc's code, read back by nvdisasm."""
from __future__ import annotations

import argparse
import re

import pytest
from warpboard.authoring import toolchain
from warpboard.authoring.assembler import cli as assemble_cli
from warpboard.authoring.assembler.encode import AssemblerError, assemble, assemble_words
from warpboard.authoring.assembler.fit import Sample, fit_forms
from warpboard.authoring.assembler.forms import parse_texts, shape
from warpboard.authoring.assembler.roundtrip import roundtrip
from warpboard.authoring.assembler.table import Table, load_table
from warpboard.authoring.assembler.words import CONTROL_SHIFT, OPERATION_MASK, from_bytes, listing_words
from warpboard.harness.case.model import load_case
from warpboard.translator import parse_listing

from support.paths import CASES

try:
    NVDISASM = toolchain.find_nvdisasm()
except toolchain.ToolMissing:
    NVDISASM = None
needs_nvdisasm = pytest.mark.skipif(NVDISASM is None, reason="needs nvdisasm (pip install nvidia-cuda-nvdisasm)")
needs_tools = pytest.mark.skipif(not toolchain.cuda_tools_present(), reason="needs nvcc and nvdisasm")

HAND_WRITTEN = sorted(p for p in CASES.rglob("*.toml") if re.search(r'"hand-written"', p.read_text()))
# A compiled library listing and its source: branches, BSSY/BSYNC, loads and stores, predicates.
COMPILED = CASES / "branches" / "kernels.sm_86.sass"
LISTING = """\
        /*0000*/                   S2R R0, SR_TID.X ;
        /*0010*/                   IADD3 R2, -R0, 0x27, RZ ;
        /*0020*/                   ISETP.GE.U32.AND P0, PT, R2, 0x10, PT ;
        /*0030*/              @!P0 BRA `(.L_x_0) ;
        /*0040*/                   EXIT ;
.L_x_0:
        /*0050*/                   BRA `(.L_x_0);
"""


@pytest.fixture(scope="module")
def table() -> Table:
    return load_table()


def test_the_tables_say_where_they_come_from(table):
    about = table.about
    assert about["arch"] == "sm_86" and about["nvcc"] and about["nvdisasm"]
    assert about["forms"]["nvcc"] > 500 and len(table.forms) == about["forms"]["nvcc"] + about["forms"]["explored"]
    assert Table.loads(table.dumps()).dumps() == table.dumps()     # stable text: regeneration diffs read


@needs_nvdisasm
@pytest.mark.parametrize("path", HAND_WRITTEN, ids=lambda p: str(p.relative_to(CASES).with_suffix("")))
def test_every_hand_written_listing_round_trips(path, table):
    case = load_case(path, CASES)
    assert roundtrip(case.listing_text, case.kernel, str(path), table, case.listing_line, NVDISASM) is None


def test_the_library_has_hand_written_listings():
    assert len(HAND_WRITTEN) >= 10


@needs_tools
def test_a_compiled_listing_assembles_to_nvccs_words(table, tmp_path):
    """The library's listing of branches/kernels.cu, assembled, is nvcc's code: every operation
    bit, and the control bits where the listing gives none are the tables' safe choice."""
    cubin = tmp_path / "k.cubin"
    toolchain.compile_cubin(COMPILED.with_name("kernels.cu"), cubin)
    nvcc_text = toolchain.run([NVDISASM, "-c", "-hex", str(cubin)], "nvdisasm")
    ours, theirs = parse_listing(COMPILED.read_text()), parse_listing(nvcc_text)
    if [r.text for k in ours for r in ours[k].instructions] != [r.text for k in theirs for r in theirs[k].instructions]:
        pytest.skip(f"{COMPILED.name} was made by another nvcc than {toolchain.nvcc_version(toolchain.find_nvcc())}")
    words = listing_words(nvcc_text)
    count = 0
    for kernel in ours:
        mine = assemble_words(COMPILED.read_text(), kernel, str(COMPILED), table)
        for k, word in enumerate(mine):
            assert word & OPERATION_MASK == words[kernel][16 * k] & OPERATION_MASK, f"{kernel} /*{16 * k:04x}*/"
            opcode = ours[kernel].instructions[k].opcode
            assert word >> CONTROL_SHIFT == table.control_for(opcode)
            count += 1
        exact = assemble_words(nvcc_text, kernel, "k.sass", table)      # the -hex listing gives its control bits
        assert exact == [words[kernel][16 * k] for k in range(len(exact))]
    assert count > 100


def test_assemble_gives_16_bytes_an_instruction_low_word_first(table):
    data = assemble(LISTING, file="k.sass", table=table)
    words = from_bytes(data)
    assert len(data) == 16 * 6 and data[:8] == (words[0] & (2**64 - 1)).to_bytes(8, "little")
    branch = words[3] & OPERATION_MASK
    assert words[5] & OPERATION_MASK != branch and branch != 0     # the label: offsets from each pc


def test_a_branch_target_may_be_written_as_its_address(table):
    """cuobjdump writes ``BRA 0x50`` where nvdisasm writes a label."""
    by_address = LISTING.replace("`(.L_x_0)", "0x50")
    assert assemble(by_address, table=table) == assemble(LISTING, table=table)


def test_an_unknown_form_is_an_error_naming_file_line_and_form(table):
    text = LISTING.replace("EXIT ;", "FOO.BAR R1, R2, c[0x0][0x10] ;")
    with pytest.raises(AssemblerError, match=r"^k\.sass:5: no encoding learned for form 'FOO\.BAR R, R, c\[I\]\[I\]'$"):
        assemble(text, file="k.sass", table=table)


def test_a_number_its_field_cannot_hold_is_an_error_naming_the_field(table):
    text = "        /*0000*/                   BAR.SYNC.DEFER_BLOCKING 0x10 ;\n"
    with pytest.raises(AssemblerError, match=r"k\.sass:1: form 'BAR\.SYNC\.DEFER_BLOCKING I': field 0: 0x10 "):
        assemble(text, file="k.sass", table=table)


def test_several_kernels_need_a_name(table):
    two = (f"\t.section\t.text.a,\"ax\",@progbits\n{LISTING}"
           f"\t.section\t.text.b,\"ax\",@progbits\n{LISTING}")
    with pytest.raises(AssemblerError, match="2 kernels"):
        assemble(two, table=table)
    assert assemble(two, "b", table=table) == assemble(LISTING, table=table)


@needs_nvdisasm
def test_fields_are_found_by_flipping_the_bits_of_one_word():
    """One IADD3 word nvcc made: nvdisasm's reading of its 105 flips places every field."""
    word = 0x041FE40007FFE1FF_000000270A027810          # IADD3 R2, -R10, 0x27, RZ
    found = shape(parse_texts(["IADD3 R2, -R10, 0x27, RZ"])[0])
    fit = fit_forms({found.key: [Sample(found, word, 0)]}, NVDISASM)
    model = fit.models["IADD3 R, R, I, R"]
    assert {n: f.spec() for n, f in model.fields.items() if n in ("0", "1", "1.neg", "2", "3", "g", "g.not")} == {
        "0": "int 16:0:8", "1": "int 24:0:8", "1.neg": "int 72:0:1", "2": "int 32:0:32 s", "3": "int 64:0:8",
        "g": "int 12:0:3", "g.not": "int 15:0:1"}
    assert model.fixed | model.encode(found.fields, 0) == word & OPERATION_MASK


@needs_nvdisasm
def test_the_command_writes_words_and_checks_them(tmp_path, capsys):
    listing, out = tmp_path / "k.sass", tmp_path / "k.bin"
    listing.write_text(LISTING)
    assert assemble_cli.run(assemble_cli.add_arguments(_parser()).parse_args(
        [str(listing), "-o", str(out), "--check"])) == 0
    assert out.stat().st_size == 16 * 6 and "reads all 6 back" in capsys.readouterr().out
    listing.write_text(LISTING.replace("EXIT ;", "FOO R1 ;"))
    assert assemble_cli.run(assemble_cli.add_arguments(_parser()).parse_args([str(listing), "-o", str(out)])) == 2
    assert "no encoding learned for form 'FOO R'" in capsys.readouterr().err


@needs_nvdisasm
def test_coverage_counts_instructions_and_forms(tmp_path, capsys):
    listing = tmp_path / "k.sass"
    listing.write_text(LISTING.replace("EXIT ;", "FOO R1 ;"))
    assert assemble_cli.run(assemble_cli.add_arguments(_parser()).parse_args(["--coverage", str(listing)])) == 0
    out = capsys.readouterr().out
    assert re.search(r"k\.sass\s+1\s+6\s+5 \(83\.3%\)\s+5 \(83\.3%\)\s+5\s+4 \(80\.0%\)", out), out
    assert "1  FOO R" in out


def _parser() -> argparse.ArgumentParser:
    return argparse.ArgumentParser(prog="warpboard assemble")


def test_the_listing_words_pair_each_instruction_with_its_two_words():
    text = ("        /*0010*/                   S2R R10, SR_TID.X ;                          /* 0x00000000000a7919 */\n"
            "                                                                                /* 0x000e220000002100 */\n")
    assert listing_words(text) == {"<anonymous>": {0x10: 0x000E220000002100_00000000000A7919}}

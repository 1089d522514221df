"""The SASS front end (translator.sass.listing) on the text forms of sm86-semantics.md §1:
nvdisasm and cuobjdump listings, labels, several kernels in one file, file:line on every
instruction, a kernel that does not parse failing alone, linear parsing time, and nvdisasm's
annotations."""
from __future__ import annotations

import sys

import pytest
from support.paths import ROOT
from support.sass_texts import CUOBJDUMP, NVDISASM, by_pc, kernel_text, line_of
from warpboard.harness.case.model import has_kernel, kernel_section, listing_kernels
from warpboard.studies.bench import big_listing, parse_rate
from warpboard.authoring.corpus import blocker_key
from warpboard.translator.errors import (
    ProgramError,
    SassSyntaxError,
    UnsupportedInstruction,
)
from warpboard.translator.ir.program import load_program
from warpboard.translator.sass import operands as sass_operands
from warpboard.translator.sass.listing import parse_listing
from warpboard.translator.sass.printer import format_instruction


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
    assert listing_kernels(CUOBJDUMP) == ["add_one", "other"] and has_kernel(CUOBJDUMP, "other")
    other = kernel_section(CUOBJDUMP, "other")
    assert other.lstrip().startswith("Function : other") and "add_one" not in other
    assert list(parse_listing(other)) == ["other"]
    assert listing_kernels(kernel_text("EXIT").replace(".text.first:\n", "")) == []    # bare listing



# ---------------------------------------------------------------- linear time
def _parse_calls(text: str) -> int:
    """Python and C function calls made by one cold parse of every kernel of ``text``: a
    count, not a time, so the check below is the same on an idle and a loaded machine (the
    parse rate itself is measured by ``warpboard bench``)."""
    calls = 0

    def count(frame, event, arg):
        nonlocal calls
        calls += event in ("call", "c_call")

    sass_operands.clear_caches()
    sys.setprofile(count)
    try:
        listing = parse_listing(text, "big.sass")
    finally:
        sys.setprofile(None)
    assert sum(len(listing[name].instructions) for name in listing) > 0
    return calls


def test_parsing_work_grows_linearly():
    once, four = big_listing(ROOT / "cases", 6000), big_listing(ROOT / "cases", 24000)
    assert four.count("\n") == 4 * once.count("\n") == 24000
    assert _parse_calls(four) < 4.5 * _parse_calls(once)


def test_big_listing_kernels_stay_distinct_and_parse():
    every = sum(p.read_text().count("\n") + 1 for p in (ROOT / "cases").rglob("*.sass"))
    text = big_listing(ROOT / "cases", 2 * every)                   # every listing, twice
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
    text = _annotated('BRX R2 -0x20                                (*"BRANCH_TARGETS .L_x_1,.L_x_2"*)',
                      'STL [R1+0x4], R4 (*"SpillRefill"*)')
    printed = [format_instruction(r) for r in parse_listing(text, "p.sass")["first"].instructions]
    assert printed == ['BRX R2 -0x20 (*"BRANCH_TARGETS .L_x_1,.L_x_2"*)', 'STL [R1+0x4], R4 (*"SpillRefill"*)']


def test_an_opcode_left_out_on_purpose_says_why():
    with pytest.raises(UnsupportedInstruction) as err:
        load_program(".text.k:\n        /*0000*/  HMMA.16816.F32 R4, R8, R12, R4 ;\n"
                     "        /*0010*/  EXIT ;\n", "k")
    assert "HMMA.16816.F32 is not translated: a tensor-core" in str(err.value)
    assert str(err.value).startswith("<listing>:2: ")
    assert blocker_key(err.value) == "HMMA"

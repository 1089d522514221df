"""printf on the two back ends: nvcc's listing forms (LEPC, CALL.ABS.NOINC through a register),
the records each back end writes for the library's printf cases (the same ones, each thread's
in the same order), vprintf's result and its errors (a null format, a target that is not
vprintf, a format outside memory), the printf buffer's layout, spirv-val, and what
``warpboard new-case`` takes from the cubin (bank 4's pointers, the strings)."""
from __future__ import annotations

import shutil
import struct
from dataclasses import replace
from pathlib import Path

import pytest
from warpboard.harness.case import cubin
from warpboard.harness.case.model import BufferSpec, Case, Param, load_case
from warpboard.harness.run.dispatch import (
    prepare,
    run_interpreter,
    run_vulkan,
    translate_case,
)
from warpboard.harness.run.printf import printed
from warpboard.harness.run.results import Outcome
from warpboard.authoring import newcase, toolchain
from warpboard.harness.vk import validate_spirv
from warpboard.translator import abi
from warpboard.translator.ir.program import load_program
from warpboard.translator.isa import ops
from warpboard.translator.sass.listing import parse_listing
from warpboard.translator.sass.printer import format_instruction
from warpboard.translator.values import vprintf

from support.elf import make_elf
from support.paths import ROOT

PRINTF_CASES = sorted(p.stem for p in (ROOT / "cases" / "printf").glob("*.toml"))
VPRINTF = abi.FUNCTIONS["vprintf"]


def library(name: str):
    return load_case(ROOT / "cases" / "printf" / f"{name}.toml", ROOT / "cases")


def by_thread(output: vprintf.PrintfOutput) -> dict[int, list[tuple[int, bytes]]]:
    """Each thread's records (format address, argument bytes), in the order it wrote them."""
    out: dict[int, list] = {}
    for r in output.records:
        out.setdefault(r.thread, []).append((r.fmt, r.args))
    return out


# ---------------------------------------------------------------- the listing

def test_nvcc_listing_forms_decode_as_a_call_that_returns():
    case = library("odd_lanes")
    program = load_program(case.listing_text, case.kernel)
    lepc = next(i for i in program.insts if i.base == "LEPC")
    call = next(i for i in program.insts if i.base == "CALL")
    assert (lepc.text, call.text) == ("LEPC R8", "CALL.ABS.NOINC R2")
    assert call.spec is ops.REGISTER_FORMS["CALL"] and call.spec.external and call.spec.flow == "next"
    assert call.target is None and program.calls_external
    assert not load_program(library("odd_lanes").listing_text.replace("CALL.ABS.NOINC R2", "NOP"),
                            case.kernel).calls_external


def test_the_printf_instructions_print_back_as_nvdisasm_wrote_them():
    text = library("types").listing_text
    raws = [r for r in parse_listing(text)["types"].instructions if r.opcode.split(".")[0] in ("LEPC", "CALL")]
    assert raws and all(format_instruction(r) == r.text for r in raws)


# ---------------------------------------------------------------- both back ends

@pytest.mark.parametrize("name", PRINTF_CASES)
def test_both_back_ends_write_the_same_records(name, lavapipe):
    prep = prepare(library(name))
    cpu = run_interpreter(prep)
    gpu = run_vulkan(lavapipe, prep, translate_case(prep, use_cache=False)[0])
    assert cpu.outcome is gpu.outcome is Outcome.OK, (cpu.detail, gpu.detail)
    assert cpu.printf.records and cpu.printf.dropped == gpu.printf.dropped == 0
    assert by_thread(cpu.printf) == by_thread(gpu.printf)
    assert cpu.buffers == gpu.buffers


def test_a_record_holds_the_thread_the_format_and_the_argument_words(interp):
    prep = prepare(library("odd_lanes"))
    run = run_interpreter(prep)
    first = run.printf.records[0]
    # block 0 thread 1 prints (b, t, t % 32, t / 32): four u32 at the start of its 16-byte frame
    assert first.thread == 1 and first.fmt == abi.global_data_address(0)
    assert struct.unpack("<4I", first.args) == (0, 1, 1, 0)
    assert [r.thread for r in run.printf.records][-2:] == [48 + 45, 48 + 47]    # block 1's threads


CALL_LINES = ["IMAD.MOV.U32 R1, RZ, RZ, c[0x0][0x28]", "S2R R16, SR_TID.X", "IADD3 R1, R1, -0x8, RZ",
              "IADD3 R6, P0, R1, c[0x0][0x20], RZ", "IMAD.X R7, RZ, RZ, c[0x0][0x24], P0",
              "STL [R1], R16", "LDC.64 R4, c[0x4][0x8]", "LDC.64 R8, c[0x4][0x0]", "LEPC R10",
              "CALL.ABS.NOINC R8", "MOV R3, 0x4", "IMAD.WIDE R2, R16, R3, c[0x0][0x160]",
              "STG.E [R2.64], R4", "EXIT"]


def listing(lines: list[str]) -> str:
    return "".join(f"        /*{16 * k:04x}*/                   {line} ;\n" for k, line in enumerate(lines))


def call_case(fmt_pointer: int, target: int = VPRINTF, text: str = "%d%%%*d\n") -> Case:
    """A hand-written vprintf call with one u32 argument (the thread), from a format at
    ``fmt_pointer`` (bank 4 word 2) to the function at ``target`` (bank 4 word 0)."""
    words = (target & 0xFFFFFFFF, target >> 32, fmt_pointer & 0xFFFFFFFF, fmt_pointer >> 32)
    return Case(id="printf/hand", path=Path("hand.sass"), name="hand", summary="", tags=(), kernel=None,
                listing_text=listing(CALL_LINES), listing_path=Path("hand.sass"), listing_line=1, source=None,
                grid=(1, 1, 1), block=(32, 1, 1), shared_bytes=1024, step_budget=None,
                buffers=(BufferSpec("out", 32, (0,) * 32, None),), params=(Param("buffer", "out"),),
                provenance={}, constants=((4, 0, words),), strings=((0, text),))


def run_both(case, lavapipe):
    prep = prepare(case)
    return run_interpreter(prep), run_vulkan(lavapipe, prep, translate_case(prep, use_cache=False)[0])


def test_vprintf_returns_the_arguments_its_format_parses(lavapipe):
    for run in run_both(call_case(abi.global_data_address(0)), lavapipe):
        assert run.outcome is Outcome.OK, run.detail
        assert struct.unpack("<32I", run.buffers[0]) == (3,) * 32       # %d, and %*d takes two; %% none
        assert len(run.printf.records) == 32


@pytest.mark.parametrize("offset, text", [(1, "%%%5.*lld|%hhx%"), (2, "%-*.*s %% %ls%q%c"), (3, "a%%%%b%Lf%zu\n")])
def test_both_back_ends_count_what_the_format_parses(offset, text, lavapipe):
    case = replace(call_case(abi.global_data_address(offset), text=text), strings=((offset, text),))
    data = text.encode() + b"\0"
    parsed = vprintf.count_arguments(lambda a: data[a], 0)
    for run in run_both(case, lavapipe):
        assert run.outcome is Outcome.OK and struct.unpack("<32I", run.buffers[0]) == (parsed,) * 32


def test_a_null_format_returns_minus_one_and_prints_nothing(lavapipe):
    for run in run_both(call_case(0), lavapipe):
        assert run.outcome is Outcome.OK and not run.printf.records
        assert struct.unpack("<32I", run.buffers[0]) == (0xFFFFFFFF,) * 32


def test_a_call_to_another_function_is_a_bad_pc(lavapipe):
    cpu, gpu = run_both(call_case(abi.global_data_address(0), target=0x1234), lavapipe)
    assert cpu.outcome is gpu.outcome is Outcome.BAD_PC
    assert "CALL.ABS to 0x1234, which is not vprintf" in cpu.detail
    assert "jumped to 0x1234" in gpu.detail


def test_a_format_outside_memory_is_a_fault(lavapipe):
    outside = abi.buffer_address(3)       # an empty slot: no byte of it exists
    cpu, gpu = run_both(call_case(outside), lavapipe)
    assert cpu.outcome is gpu.outcome is Outcome.FAULT
    assert f"at {outside:#x} outside every buffer" in cpu.detail
    assert f"access at {outside:#x} outside every buffer" in gpu.detail


def test_a_format_that_runs_off_its_buffer_faults_where_it_leaves(lavapipe):
    case = call_case(abi.buffer_address(0))      # the out buffer: 128 bytes of "%d%d", no NUL
    case = replace(case, buffers=(BufferSpec("out", 32, (0x64256425,) * 32, None),))
    cpu, gpu = run_both(case, lavapipe)
    end = abi.buffer_address(0) + 128
    assert cpu.outcome is gpu.outcome is Outcome.FAULT
    assert f"at {end:#x} outside every buffer" in cpu.detail and f"access at {end:#x}" in gpu.detail


@pytest.mark.parametrize("text, parsed", [("%d %5.2f %%\n", 2), ("%*d|%-*.*s", 5), ("%lld%hhx%zu", 3),
                                          ("100%%", 0), ("%", 0), ("no conversions", 0), ("%%%d", 1)])
def test_count_arguments(text, parsed):
    data = text.encode() + b"\0"
    assert vprintf.count_arguments(lambda a: data[a], 0) == parsed


def test_the_printf_buffer_keeps_its_capacity_and_counts_the_rest():
    words = vprintf.buffer_words(capacity=2)
    words[abi.PRINTF_COUNT] = 5
    for k, thread in enumerate((7, 9)):
        at = abi.PRINTF_HEADER + k * abi.PRINTF_RECORD_WORDS
        words[at:at + 6] = [thread, 0x10, 0x7F07, 2, 0xAA, 0xBB]
    out = vprintf.decode(struct.pack(f"<{len(words)}I", *words))
    assert out.dropped == 3
    assert [(r.thread, r.fmt, r.args) for r in out.records] == [
        (7, 0x7F07_0000_0010, struct.pack("<2I", 0xAA, 0xBB)), (9, 0x7F07_0000_0010, struct.pack("<2I", 0xAA, 0xBB))]


def test_the_interpreter_drops_calls_past_the_capacity(monkeypatch):
    monkeypatch.setattr(abi, "PRINTF_RECORDS", 10)
    run = run_interpreter(prepare(library("odd_lanes")))
    assert len(run.printf.records) == 10 and run.printf.dropped == 38


@pytest.mark.skipif(shutil.which("spirv-val") is None, reason="spirv-val (SPIRV-Tools) not installed")
@pytest.mark.parametrize("mode", ["free", "turns"])
def test_the_printf_shader_is_valid_spirv(mode):
    shader, _ = translate_case(prepare(call_case(abi.global_data_address(0))), mode, use_cache=False)
    validate_spirv(shader.spirv)


# ---------------------------------------------------------------- new-case

needs_tools = pytest.mark.skipif(not toolchain.cuda_tools_present(), reason="needs nvcc and nvdisasm")


@needs_tools
def test_new_case_resolves_bank_4_and_keeps_the_strings(tmp_path):
    source = tmp_path / "cases" / "p" / "k.cu"
    source.parent.mkdir(parents=True)
    source.write_text('#include <cstdio>\nextern "C" __global__ void k(int *out) {\n'
                      '    printf("%s=%d\\n", "t", threadIdx.x);\n    out[threadIdx.x] = 1;\n}\n')
    case = newcase.new_case(source, "k", source.with_suffix(".toml"), block=(4,))
    assert sorted(text for _, text in case.strings) == ["%s=%d\n", "t"]
    at = {text: offset for offset, text in case.strings}
    bank4 = {4 * k + offset: w for bank, offset, words in case.constants if bank == 4 for k, w in enumerate(words)}
    pointers = {bank4[o] | bank4[o + 4] << 32 for o in range(0, max(bank4) + 1, 8) if o in bank4}
    assert VPRINTF in pointers and abi.global_data_address(at["%s=%d\n"]) in pointers
    run = run_interpreter(prepare(case))
    assert printed(run.printf, run.memory().string).lines() == [(t, f"t={t}") for t in range(4)]


def test_bank_4_relocations_are_resolved_from_themake_elf(tmp_path):
    """A cubin made by hand: .nv.constant4 with two 64-bit relocations, to a string of
    .nv.global.init and to vprintf, and one to a symbol nothing resolves."""
    image = make_elf({".nv.constant4": bytes(24), ".nv.global.init": b"ab\0%d\n\0"},
                 [("$str", ".nv.global.init", 0, 3), ("$str$1", ".nv.global.init", 3, 4),
                  ("vprintf", None, 0, 0), ("elsewhere", None, 0, 0)],
                 [(0, "vprintf"), (8, "$str$1"), (16, "elsewhere")])
    bank, strings = cubin.bank4_and_strings(image)
    assert struct.unpack("<3Q", bank) == (VPRINTF, abi.global_data_address(3), 0)
    assert strings == [(0, "ab"), (3, "%d\n")]

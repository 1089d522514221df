"""The `structured` strategy (translator/emit/structured/): the listing's jumps as SPIR-V
selection and loop constructs. Every library case it translates is a valid module; the ones
below run on lavapipe through the engine behind ``warpboard run --translator structured``;
a loop that never ends is LIVELOCK; what it cannot structure is UNSUPPORTED, with a reason."""
from __future__ import annotations

import importlib.util
import struct
from pathlib import Path

import pytest

from warpboard.harness.case.model import BufferSpec, Case, Param, discover_cases
from warpboard.harness.run import engine, translators
from warpboard.harness.run.dispatch import prepare, translate_case
from warpboard.translator import STRATEGIES, Target, UnsupportedInstruction, load_program, translate
from warpboard.translator.spirv.builder import OP

from support.listing_kit import listing
from support.paths import ROOT, library_case

def _spirv_valid():
    """The helper the other spirv-val tests use (test_spirv_valid.py, a module of no package)."""
    spec = importlib.util.spec_from_file_location("_spirv_valid", Path(__file__).with_name("test_spirv_valid.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


spirv_val = _spirv_valid().spirv_val

MIN_TRANSLATED = 86     # collective-, barrier-, call-, BRX- and ordering-point-free library cases (86 when written)
RUNS = ["basic/uneven_loops", "basic/bytes_switch", "memory/local_divergent", "printf/loop",
        "repro/spmv_csr_serial"]   # the whole library on every device: make scoreboard


def _opcodes(code: bytes) -> list[int]:
    words = struct.unpack(f"<{len(code) // 4}I", code)
    ops, k = [], 5
    while k < len(words):
        ops.append(words[k] & 0xFFFF)
        k += words[k] >> 16
    return ops


def _structured(case):
    prep = prepare(case)
    return translate_case(prep, None, Target(), "structured", use_cache=False)[0]


def test_it_is_registered():
    assert "structured" in STRATEGIES and "structured" in translators.builtin()
    assert STRATEGIES["structured"].package == "structured"


def test_every_translated_library_case_is_valid_spirv():
    translated, unsupported, bad = 0, {}, {}
    for case in discover_cases(ROOT / "cases"):
        try:
            shader = _structured(case)
        except UnsupportedInstruction as exc:
            unsupported[case.id] = str(exc)
            continue
        translated += 1
        complaint = spirv_val(shader.spirv)
        if complaint:
            bad[case.id] = complaint
    assert not bad, bad
    assert translated >= MIN_TRANSLATED, (translated, unsupported)
    assert all(reason.startswith("structured: ") for reason in unsupported.values())


def test_the_module_is_structured_not_a_pc_switch():
    ops = _opcodes(_structured(library_case("basic/uneven_loops")).spirv)
    assert OP["LoopMerge"] in ops and OP["SelectionMerge"] in ops
    assert OP["Switch"] not in ops
    turns = _opcodes(translate_case(prepare(library_case("basic/uneven_loops")), None, Target(), "turns",
                                    use_cache=False)[0].spirv)
    assert OP["Switch"] in turns        # the pc loop the strategy does without


BRANCHY = ["S2R R0, SR_TID.X", "IMAD.WIDE.U32 R4, R0, 0x4, c[0x0][0x160]", "ISETP.GE.AND P0, PT, R0, 0x4, PT",
           "@P0 BRA `(.L_x_1)", "IADD3 R2, R0, 0x1, RZ", "BRA `(.L_x_2)", ".L_x_1:", "IADD3 R2, R0, 0x2, RZ",
           ".L_x_2:", "STG.E [R4.64], R2", "EXIT"]


def test_a_branch_merges_at_its_post_dominator_with_no_guard():
    """if/else: one selection construct, merged where both sides meet; each block once."""
    program = load_program("k:\n.text.k:\n" + listing(BRANCHY), "k")
    ops = _opcodes(translate(program, (8, 1, 1), strategy="structured").spirv)
    assert OP["Switch"] not in ops and ops.count(OP["SelectionMerge"]) >= 1
    assert spirv_val(translate(program, (8, 1, 1), strategy="structured").spirv) is None


IRREDUCIBLE = ["S2R R0, SR_TID.X", "ISETP.GE.AND P0, PT, R0, 0x4, PT", "@P0 BRA `(.L_x_2)",
               ".L_x_1:", "IADD3 R0, R0, 0x1, RZ", ".L_x_2:", "IADD3 R0, R0, 0x2, RZ",
               "ISETP.LT.AND P1, PT, R0, 0x40, PT", "@P1 BRA `(.L_x_1)", "EXIT"]


def test_what_it_cannot_structure_is_unsupported_with_a_reason():
    program = load_program("k:\n.text.k:\n" + listing(IRREDUCIBLE), "k")
    with pytest.raises(UnsupportedInstruction, match="irreducible"):
        translate(program, (8, 1, 1), strategy="structured")
    with pytest.raises(UnsupportedInstruction, match=r"BRX .*0x0110"):
        _structured(library_case("realkernels/switch_table"))
    with pytest.raises(UnsupportedInstruction, match="CALL/RET"):
        _structured(library_case("basic/divmod64"))
    with pytest.raises(UnsupportedInstruction, match="ordering point"):
        _structured(library_case("warpsync_mem/war_shared"))


def test_library_cases_pass_on_lavapipe(lavapipe_config):
    """Loops, nested branches, early exits, local memory, printf: words as expected; what it
    cannot translate is UNSUPPORTED."""
    cases = [library_case(c) for c in RUNS + ["spin/never_ends", "realkernels/switch_table"]]
    options = engine.Options(retries=0, translators=({"name": "structured"},))
    doc = engine.run_matrix(cases, [lavapipe_config(8)], interp=False, options=options, jobs=1)
    cells = {r["case"]: r for r in doc["results"]}
    assert {c: cells[c]["status"] for c in RUNS} == dict.fromkeys(RUNS, "PASS"), \
        {c: cells[c]["message"] for c in RUNS if cells[c]["status"] != "PASS"}
    # its lanes share one word in instruction order: no shader rather than a wrong one
    assert cells["spin/never_ends"]["status"] == "UNSUPPORTED"
    assert "ordering point" in cells["spin/never_ends"]["message"]
    assert cells["realkernels/switch_table"]["status"] == "UNSUPPORTED"
    assert "BRX" in cells["realkernels/switch_table"]["message"]


SPINS = ["S2R R0, SR_TID.X", "IMAD.WIDE.U32 R4, R0, 0x4, c[0x0][0x160]", ".L_x_1:", "IADD3 R2, R2, 0x1, RZ",
         "ISETP.GE.U32.AND P0, PT, R2, 0x7, PT", "@P0 BRA `(.L_x_2)", "IADD3 R3, R3, 0x1, RZ", "BRA `(.L_x_1)",
         ".L_x_2:", "IMAD.MOV.U32 R2, RZ, RZ, RZ", "BRA `(.L_x_1)", "STG.E [R4.64], R2", "EXIT"]


def test_a_loop_that_never_ends_is_livelock_not_a_hang(lavapipe):
    """Two nested loops that never leave: every pass counts against the step budget, and
    the thread ends LIVELOCK at a pc of the loop, with no word written."""
    words = list(range(8))
    specs = (BufferSpec("out", 8, tuple(words), tuple(words)),)
    case = Case(id="semantics/spins", path=Path("spins.sass"), name="spins", summary="", tags=(), kernel=None,
                listing_text=listing(SPINS), listing_path=Path("spins.sass"), listing_line=1, source=None,
                grid=(1, 1, 1), block=(8, 1, 1), shared_bytes=0, step_budget=500, buffers=specs,
                params=(Param("buffer", "out"),), provenance={}, constants=())
    result = engine.run_case(case, "lavapipe", lavapipe, translator={"name": "structured"})
    assert result.outcome == "livelock", result.message
    assert "step budget of 500 spent" in result.message

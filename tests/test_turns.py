"""Turns mode on both back ends: uneven branches, nested BSSY, early exit and spin-waits
give the per-thread words recorded on the chip (or derived), and the fairness rule is what
lets a spinner placed before its producer finish."""
from pathlib import Path

import pytest

from harness.cases import load_case
from harness.engine import Options, run_case
from harness.results import Status
from translator import schedule

CASES = Path(__file__).resolve().parents[1] / "cases"
TURNS_CASES = ["truth/uneven_branch_ballot", "branches/uneven_if_chain", "bssy/nested_if4",
               "bssy/hand_nested4_break", "truth/nested_rejoin_masks", "exit/exit_inside_divergence",
               "exit/exit_in_nested_loops", "truth/exit_in_loop", "truth/early_return_vote",
               "spin/spinner_first_no_yield", "spin/inter_warp_shared_spinner_first", "spin/cas_lock"]
pytestmark = pytest.mark.xdist_group("lavapipe-w8")


def _case(case_id):
    return load_case(CASES / f"{case_id}.toml", CASES)


@pytest.mark.parametrize("case_id", TURNS_CASES)
@pytest.mark.parametrize("backend", ["interp", "vulkan"])
def test_every_thread_gets_the_recorded_words(case_id, backend, request):
    dev = request.getfixturevalue("vulkan_device") if backend == "vulkan" else None
    result = run_case(_case(case_id), backend, dev)
    assert result.mode == "turns"
    assert result.status is Status.PASS, result.message
    assert result.mismatch_count == 0 and result.turns > 0


def test_without_the_yield_rule_the_spinner_starves_its_producer(monkeypatch):
    case = _case("spin/spinner_first_no_yield")
    monkeypatch.setattr(schedule, "after_block", lambda t, block: None)
    result = run_case(case, "interp", None, Options(budget=500))
    assert result.status is Status.LIVELOCK
    assert "0x0030" in result.message and "threads 3" in result.message


def test_a_kernel_that_never_ends_is_livelock_naming_pcs_and_threads(vulkan_device):
    case = _case("spin/never_ends")
    for dev, backend in ((None, "interp"), (vulkan_device, "vulkan")):
        result = run_case(case, backend, dev)
        assert result.status is Status.LIVELOCK, result.message
        assert "step budget of 2000" in result.message and "pc" in result.message and "thread" in result.message


def test_both_back_ends_take_the_same_turns(vulkan_device):
    """The emitter and the interpreter implement one schedule: every turns-mode case of the
    library takes exactly as many turns on both (and passes on both)."""
    from harness.cases import discover_cases
    checked = 0
    for case in discover_cases(CASES):
        cpu = run_case(case, "interp")
        if cpu.mode != "turns" or cpu.status is not Status.PASS:
            continue
        gpu = run_case(case, "vulkan", vulkan_device)
        assert gpu.status is Status.PASS, f"{case.id}: {gpu.message}"
        assert gpu.turns == cpu.turns, f"{case.id}: {gpu.turns} turns on Vulkan, {cpu.turns} in the interpreter"
        checked += 1
    assert checked >= 60


def _loop_controls(spirv: bytes) -> list[int]:
    """The LoopControl word of every OpLoopMerge (opcode 246) of a SPIR-V module."""
    import struct
    words = struct.unpack(f"<{len(spirv) // 4}I", spirv)
    controls, at = [], 5
    while at < len(words):
        count, opcode = words[at] >> 16, words[at] & 0xFFFF
        if opcode == 246:
            controls.append(words[at + 3])
        at += max(1, count)
    return controls


@pytest.mark.parametrize("case_id", ["match_redux/match_any_u64", "random/break_to_syncthreads"])
def test_lane_scans_stay_loops_for_the_driver(case_id):
    """MATCH's and WARPSYNC's scans over the 32 lanes are loops marked DontUnroll: unrolled by
    lavapipe, their 32 copies of a workgroup-memory read made its LLVM compile many times slower."""
    from harness import dispatch
    prep = dispatch.prepare(_case(case_id))
    shader, _ = dispatch.translate_case(prep, use_cache=False)
    dont_unroll = [c for c in _loop_controls(shader.spirv) if c & 0x2]
    assert dont_unroll, f"{case_id}: no loop of the shader is marked DontUnroll"

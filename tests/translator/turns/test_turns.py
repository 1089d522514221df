"""Turns mode on both back ends: uneven branches, nested BSSY, early exit and spin-waits
give the per-thread words recorded on the chip (or derived), and the fairness rule is what
lets a spinner placed before its producer finish."""

import struct

import pytest
from support.paths import library_case, library_cases
from warpboard.harness.run import dispatch
from warpboard.harness.run.engine import Options, run_case
from warpboard.harness.run.results import Status
from warpboard.translator.interp import waits as schedule

TURNS_CASES = ["truth/uneven_branch_ballot", "branches/uneven_if_chain", "bssy/nested_if4",
               "bssy/hand_nested4_break", "truth/nested_rejoin_masks", "exit/exit_inside_divergence",
               "exit/exit_in_nested_loops", "truth/exit_in_loop", "truth/early_return_vote",
               "spin/spinner_first_no_yield", "spin/inter_warp_shared_spinner_first", "spin/cas_lock"]
pytestmark = pytest.mark.xdist_group("lavapipe-w8")


@pytest.mark.parametrize("case_id", TURNS_CASES)
@pytest.mark.parametrize("backend", ["interp", "vulkan"])
def test_every_thread_gets_the_recorded_words(case_id, backend, request):
    dev = request.getfixturevalue("vulkan_device") if backend == "vulkan" else None
    result = run_case(library_case(case_id), backend, dev)
    assert result.mode == "turns"
    assert result.status is Status.PASS, result.message
    assert result.mismatch_count == 0 and result.turns > 0


def test_without_the_yield_rule_the_spinner_starves_its_producer(monkeypatch):
    case = library_case("spin/spinner_first_no_yield")
    monkeypatch.setattr(schedule, "branched_back", lambda pc, block: False)
    result = run_case(case, "interp", None, Options(budget=500))
    assert result.status is Status.LIVELOCK
    assert "0x0030" in result.message and "threads 3" in result.message


def test_a_kernel_that_never_ends_is_livelock_naming_pcs_and_threads(vulkan_device):
    case = library_case("spin/never_ends")
    for dev, backend in ((None, "interp"), (vulkan_device, "vulkan")):
        result = run_case(case, backend, dev)
        assert result.status is Status.LIVELOCK, result.message
        assert "step budget of 2000" in result.message and "pc" in result.message and "thread" in result.message


SHARDS = 4     # the library's cases in shards, each its own xdist group, so both workers share them
# `make test` checks shard 0, a quarter of the library; `make campaign` (a CI job of its own) the
# other three: each shard costs 12 to 24 s of lavapipe compiles on an empty shader cache
QUICK_SHARDS = 1


@pytest.mark.parametrize("shard", [pytest.param(k, marks=[pytest.mark.xdist_group(f"turns-shard-{k}")]
                                                + ([] if k < QUICK_SHARDS else [pytest.mark.campaign]))
                                   for k in range(SHARDS)])
def test_both_back_ends_take_the_same_turns(vulkan_device, shard):
    """The emitter and the interpreter implement one schedule: every turns-mode case of the
    library takes exactly as many turns on both (and passes on both). A case tagged
    ``inter-block`` spins on another block's progress, so how many turns it takes depends on
    when the device runs each block: it must pass, but its turns are its own."""
    checked = 0
    for case in library_cases()[shard::SHARDS]:
        cpu = run_case(case, "interp")
        if cpu.mode != "turns" or cpu.status is not Status.PASS:
            continue
        gpu = run_case(case, "vulkan", vulkan_device)
        assert gpu.status is Status.PASS, f"{case.id}: {gpu.message}"
        if "inter-block" in case.tags:
            continue
        assert gpu.turns == cpu.turns, f"{case.id}: {gpu.turns} turns on Vulkan, {cpu.turns} in the interpreter"
        checked += 1
    assert checked >= 60 // SHARDS


def _opcodes(spirv: bytes):
    """(opcode, operand words) of every instruction of a SPIR-V module."""
    words = struct.unpack(f"<{len(spirv) // 4}I", spirv)
    at = 5
    while at < len(words):
        count, opcode = words[at] >> 16, words[at] & 0xFFFF
        yield opcode, words[at + 1:at + count]
        at += max(1, count)


def _shader(case_id):
    prep = dispatch.prepare(library_case(case_id))
    return prep.program, dispatch.translate_case(prep, use_cache=False)[0]


@pytest.mark.parametrize("case_id", ["match_redux/redux_all_ops", "float/f32_softmax_warp", "vote/hand_vote_eq"])
def test_collectives_share_one_exchange_site(case_id):
    """However many collectives a program has, its shader has one rendezvous: the fill's, the
    vote's and the exchange site's barriers, no more (translator/emit/turns/exchange.py). Inline,
    each collective added a barrier and about seven workgroup-memory accesses, and lavapipe's
    compile time grows with the square of those (translator/README.md, "What the driver pays")."""
    program, shader = _shader(case_id)
    collectives = sum(1 for i in program.insts if i.exchanges)
    barriers = sum(1 for op, _ in _opcodes(shader.spirv) if op == 224)       # OpControlBarrier
    assert collectives >= 5 and barriers == 3, f"{case_id}: {collectives} collectives, {barriers} barriers"


def test_lane_scans_are_short_loops_for_the_driver():
    """WARPSYNC's scans over the published masks are loops marked DontUnroll over 8 vector
    loads: unrolled, each of their reads was copied 32 times (lavapipe's compile time), and
    as a loop over 32 lanes each scan drew 32 iterations from lavapipe's budget of 65,535 loop
    iterations per shader run, so long programs ended as LIVELOCK."""
    _, shader = _shader("random/break_to_syncthreads")
    ops = list(_opcodes(shader.spirv))
    consts = {w[1]: w[2] for op, w in ops if op == 43 and len(w) == 3}      # OpConstant
    # a counted loop's header: i < N (OpULessThan), then OpLoopMerge marked DontUnroll
    bounds = [consts.get(ops[k - 1][1][3]) for k, (op, w) in enumerate(ops)
              if op == 246 and w[2] & 0x2 and ops[k - 1][0] == 176]
    assert bounds and set(bounds) == {8}, bounds

"""The `structured` strategy (translator/emit/structured/): the listing's jumps as SPIR-V
selection and loop constructs. Every library case it translates is a valid module; the ones
below run on lavapipe through the engine behind ``warpboard run --translator structured``;
a loop that never ends is LIVELOCK; a helper is inlined at each call; collectives are
subgroup operations where the structure brings the lanes together; what it cannot structure
is UNSUPPORTED, with a reason."""
from __future__ import annotations

import importlib.util
import struct
from pathlib import Path

import pytest

from warpboard.harness.run import devices, engine, translators
from warpboard.harness.run.dispatch import prepare, translate_case
from warpboard.translator import STRATEGIES, Target, UnsupportedInstruction, load_program, translate
from warpboard.translator.ir.inline import inline, pc_of
from warpboard.translator.spirv.builder import OP

from support.listing_kit import hand_case as _hand_case, listing
from support.paths import library_case, library_cases

def _spirv_valid():
    """The helper the other spirv-val tests use (test_spirv_valid.py, a module of no package)."""
    spec = importlib.util.spec_from_file_location("_spirv_valid", Path(__file__).with_name("test_spirv_valid.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


spirv_val = _spirv_valid().spirv_val

MIN_TRANSLATED = 236    # for subgroups that are warps (239 of 239 when written)
MIN_COLLECTIVE_FREE = 138   # for subgroups that are not: the collective-free programs (141 when written)
WARPS = Target(warp_subgroups=True, pass_runs=True)     # as a GPU whose subgroups are warps gets it
RUNS = ["basic/uneven_loops", "basic/bytes_switch", "memory/local_divergent", "printf/loop",
        "repro/spmv_csr_serial", "basic/divmod64", "realkernels/switch_table",
        "captured/reduction/reduce0_int_2", "warpsync_mem/war_shared"]   # the whole library: make scoreboard


def _opcodes(code: bytes) -> list[int]:
    words = struct.unpack(f"<{len(code) // 4}I", code)
    ops, k = [], 5
    while k < len(words):
        ops.append(words[k] & 0xFFFF)
        k += words[k] >> 16
    return ops


def _structured_on(case, config) -> dict[str, dict]:
    """The case's cells, by device, on the interpreter and ``config`` in the structured strategy."""
    options = engine.Options(retries=0, translators=({"name": "structured"},))
    return {r["device"]: r for r in engine.run_matrix([case], [config], interp=True, options=options, jobs=1)["results"]}


def _structured(case, target=WARPS):
    prep = prepare(case)
    return translate_case(prep, None, target, "structured", use_cache=False)[0]


def test_it_is_registered():
    assert "structured" in STRATEGIES and "structured" in translators.builtin()
    assert STRATEGIES["structured"].package == "structured"


def _valid_library_modules(stride: int, target: Target = WARPS) -> tuple[int, dict]:
    """(modules translated, {case: why not}) over every ``stride``-th library case, each
    module checked by spirv-val for ``target`` (default: subgroups that are warps)."""
    translated, unsupported, bad = 0, {}, {}
    for case in library_cases()[::stride]:
        try:
            shader = _structured(case, target)
        except UnsupportedInstruction as exc:
            unsupported[case.id] = str(exc)
            continue
        translated += 1
        complaint = spirv_val(shader.spirv)
        if complaint:
            bad[case.id] = complaint
    assert not bad, bad
    assert all(reason.startswith("structured: ") or " in structured (" in reason for reason in unsupported.values()), \
        unsupported
    return translated, unsupported


def test_self_loops_in_runs_of_passes_are_valid_spirv():
    """The library's self-loops (tests/translator/emit/test_tight_loops.py) as a GPU gets them,
    in runs of copies of the block, and as the CPU devices get them."""
    for case in ("basic/uneven_loops", "printf/loop", "atomics/hand_cas_loop_global", "memory/lds_uniform_index"):
        for target in (WARPS, Target()):
            assert spirv_val(_structured(library_case(case), target).spirv) is None, (case, target)


def test_a_sample_of_the_library_translates_to_valid_spirv():
    """Every 6th library case (the whole library: make campaign)."""
    translated, unsupported = _valid_library_modules(6)
    assert translated >= MIN_TRANSLATED // 6 - 2, (translated, unsupported)


@pytest.mark.campaign
def test_every_translated_library_case_is_valid_spirv():
    translated, unsupported = _valid_library_modules(1)
    assert translated >= MIN_TRANSLATED, (translated, unsupported)


@pytest.mark.campaign
def test_every_case_translated_for_narrow_subgroups_is_valid_spirv():
    """For subgroups that are not warps: collective-free programs, walks (.uniform) and the
    barriers Vulkan lacks (.barriers) included; what is left out is the collectives'."""
    translated, unsupported = _valid_library_modules(1, Target())
    assert translated >= MIN_COLLECTIVE_FREE, (translated, unsupported)
    assert all("collectives need a warp" in why for why in unsupported.values()), unsupported


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


RECURSES = ["S2R R0, SR_TID.X", ".L_x_0:", "MOV R20, 0x20", "CALL.REL.NOINC `(.L_x_f)", "EXIT", ".L_x_f:",
            "ISETP.GE.AND P0, PT, R0, 0x4, PT", "IADD3 R0, R0, 0x1, RZ", "@!P0 CALL.REL.NOINC `(.L_x_f)",
            "RET.REL.NODEC R20 `(.L_x_0)"]


def test_a_load_a_loop_waits_on_is_a_read_modify_write(monkeypatch):
    """Warp 0 spins on LDS [RZ] at 0x30: that load, and no other, is an atomic add of 0, which
    NVIDIA's compiler cannot read once for the whole loop as it does a volatile or atomic load."""
    from warpboard.translator.emit.structured.warp import StructuredWarp
    case = library_case("spin/inter_warp_shared_spinner_first")
    assert prepare(case).program.spin_reads == {0x30}
    adds = lambda: _opcodes(_structured(case).spirv).count(OP["AtomicIAdd"])   # noqa: E731
    with_write = adds()
    monkeypatch.setattr(StructuredWarp, "spin_reads_write", False)
    assert with_write == adds() + 1


def test_what_it_cannot_structure_is_unsupported_with_a_reason():
    program = load_program("k:\n.text.k:\n" + listing(IRREDUCIBLE), "k")
    with pytest.raises(UnsupportedInstruction, match="irreducible"):
        translate(program, (8, 1, 1), strategy="structured")
    program = load_program("k:\n.text.k:\n" + listing(RECURSES), "k")
    with pytest.raises(UnsupportedInstruction, match=r"<listing>:11: .*calls a helper it is inside of \(recursion\)"):
        translate(program, (8, 1, 1), strategy="structured")
    # collectives and lane-order points need a warp on a subgroup
    with pytest.raises(UnsupportedInstruction, match="collectives need a warp to be a subgroup"):
        _structured(library_case("vote/vote_split_masks"), Target())
    # a point in a block that falls into a BAR.SYNC, or in the top scope, is a workgroup barrier there
    for case in ("captured/reduction/reduce0_int_2", "warpsync_mem/war_shared"):
        assert STRATEGIES["structured"].needs_warps(prepare(library_case(case)).program) is None
        assert spirv_val(_structured(library_case(case), Target()).spirv) is None
    # a named barrier with a thread count inside a loop has no workgroup-barrier form
    looped = WAIT_FIRST[:3] + [".L_x_2:", "BAR.ARV 0x1, 0x40", "BAR.SYNC.DEFER_BLOCKING 0x1, 0x40",
                               "@P0 BRA `(.L_x_2)", "EXIT", ".L_x_1:", "EXIT"]
    with pytest.raises(UnsupportedInstruction, match=r"'BAR.ARV 0x1, 0x40' inside a loop"):
        translate(load_program("k:\n.text.k:\n" + listing(looped), "k"), (64, 1, 1), 0, target=Target(),
                  strategy="structured")


def test_a_helper_called_twice_is_inlined_at_each_call():
    """ballot_both_sides calls one votesync helper from both sides of a branch: each call site
    gets its own copy, whose RET goes back to that site only (no path into one call and out
    of the other, as the "through" view has)."""
    program = prepare(library_case("branches/ballot_both_sides")).program
    found = inline(program)
    sites = [i for b in program.reachable.values() for i in b.insts if i.spec.flow == "call"]
    helpers = {i.target for i in sites}
    assert len(sites) == 2 and len(helpers) == 1
    helper = helpers.pop()
    copies = [n for n in found.succ if pc_of(n) == helper]
    assert len(copies) == 2 and {n >> 32 for n in copies} == {1, 2}
    returns = {}
    for n, nexts in found.succ.items():
        last = program.blocks[pc_of(n)].insts[-1]
        if last.spec.flow == "return":
            returns[n >> 32] = {pc_of(s) for s in nexts}
    call_of = {found.calls[c][-1] for c in (1, 2)}
    back = {next(i.next_pc for i in sites if i.pc == found.calls[c][-1]) for c in (1, 2)}
    assert len(call_of) == 2 and {frozenset(v) for v in returns.values()} == {frozenset({b}) for b in back}
    assert found.reducible
    assert spirv_val(_structured(library_case("branches/ballot_both_sides")).spirv) is None


# lane-order points inside loops, on subgroups narrower than a warp (.uniform): one loop; two
# loops one after the other; a loop inside a loop, each with block barriers; and the barriers
# Vulkan lacks (.barriers): __syncthreads_count/and/or, named barriers with counts and
# arrivals, the waiting side placed first by nvcc, a barrier id in a register
WALKS = ["memory/lds_uniform_index", "atomics/cas_loops_shared", "realkernels/odd_even_merge_sort_shared",
         "barrier/syncthreads_count_and_or", "barrier/hand_bar_arv_counts", "barrier/named_arrive_sync",
         "barrier/named_pairs"]
WAIT_FIRST = ["S2R R0, SR_TID.X", "ISETP.GE.U32.AND P0, PT, R0, 0x20, PT", "@P0 BRA `(.L_x_1)",
              "BAR.SYNC.DEFER_BLOCKING 0x1, 0x40", "EXIT", ".L_x_1:", "BAR.SYNC.DEFER_BLOCKING 0x2, 0x20",
              "BAR.ARV 0x1, 0x40", "EXIT"]


def test_a_named_barrier_whose_arrival_comes_after_its_wait_is_unsupported():
    """Warp 1 waits on barrier 2 before it arrives on barrier 1, which warp 0 waits on: in any
    walk the wait on 1 comes first, and a workgroup barrier there would pass before the
    arrival. On the chip warp 0 waits for warp 1's arrival."""
    program = load_program("k:\n.text.k:\n" + listing(WAIT_FIRST), "k")
    with pytest.raises(UnsupportedInstruction, match=r"'BAR.ARV 0x1, 0x40' arrives after a wait on its barrier"):
        translate(program, (64, 1, 1), 0, target=Target(), strategy="structured")


def test_uniform_walks_are_valid_spirv():
    """And a walk through a helper inlined twice (each thread keeps its copy: make scoreboard
    runs it, a 512-thread case)."""
    for case in WALKS + ["captured/particlefilter/normalize_weights_kernel_2"]:
        assert spirv_val(_structured(library_case(case), Target()).spirv) is None, case


def _walks_pass(cases, config):
    options = engine.Options(retries=0, translators=({"name": "structured"},))
    doc = engine.run_matrix([library_case(c) for c in cases], [config], interp=False, options=options, jobs=1)
    cells = {r["case"]: r for r in doc["results"]}
    assert {c: cells[c]["status"] for c in cases} == dict.fromkeys(cases, "PASS"), \
        {c: cells[c]["message"] for c in cases if cells[c]["status"] != "PASS"}


def test_uniform_walks_pass_on_4_wide_subgroups(lavapipe_config):
    """Eight subgroups a warp, run one after another between barriers: the walks' words as
    recorded on the chip (with the second loop left out of the walk, or one vote's words
    shared by two nested loops, cas_loops_shared and odd_even_merge_sort_shared go wrong; a
    wait on a named barrier walked before its arrival, named_arrive_sync)."""
    _walks_pass(["atomics/cas_loops_shared", "realkernels/odd_even_merge_sort_shared", "barrier/named_arrive_sync",
                 "barrier/syncthreads_count_and_or"], lavapipe_config(4))


@pytest.mark.campaign
@pytest.mark.parametrize("width", [4, 8, 16])
def test_every_walk_passes(lavapipe_config, width):
    _walks_pass(WALKS + ["captured/particlefilter/normalize_weights_kernel_2"], lavapipe_config(width))


def test_a_barrier_on_one_side_of_a_branch_is_everyones():
    """exit/exit_between_barriers: threads branch around the second __syncthreads and exit,
    and on the chip it waits only for the threads that have not. The program is walked, so
    every invocation meets that barrier: inside the branch, Mesa 25's lavapipe (ci/setup.sh's
    second lavapipe) waited for the invocations that went the other way, and the words came
    out wrong."""
    private = [str(p) for p in devices.PRIVATE_DRIVERS.glob("*/icd.json")]
    configs = [c for c in devices.discover(icds=private) if c.id.startswith("lavapipe") and c.id.endswith("-w4")]
    if len(configs) < 2:
        pytest.skip("needs the system's lavapipe and ci/setup.sh's second one")
    options = engine.Options(retries=0, translators=({"name": "structured"},))
    doc = engine.run_matrix([library_case("exit/exit_between_barriers")], configs, interp=False, options=options, jobs=1)
    assert {r["device"]: r["status"] for r in doc["results"]} == {c.id: "PASS" for c in configs}, \
        [r["message"] for r in doc["results"]]


def test_library_cases_pass_on_lavapipe(lavapipe_config):
    """Loops, nested branches, early exits, local memory, printf, an inlined helper, a jump
    table, lane-order points before a block barrier: words as expected on 8-wide subgroups."""
    cases = [library_case(c) for c in RUNS + ["spin/never_ends"]]
    options = engine.Options(retries=0, translators=({"name": "structured"},))
    doc = engine.run_matrix(cases, [lavapipe_config(8)], interp=False, options=options, jobs=1)
    cells = {r["case"]: r for r in doc["results"]}
    assert {c: cells[c]["status"] for c in RUNS} == dict.fromkeys(RUNS, "PASS"), \
        {c: cells[c]["message"] for c in RUNS if cells[c]["status"] != "PASS"}
    # a block of 8 is one warp on one 8-wide subgroup: it spins until its step budget is spent
    assert cells["spin/never_ends"]["status"] == "LIVELOCK"


VOTES = ["S2R R0, SR_TID.X", "IMAD.WIDE.U32 R4, R0, 0x4, c[0x0][0x160]", "ISETP.GE.AND P0, PT, R0, 0x5, PT",
         "BSSY B0, `(.L_x_2)", "@P0 BRA `(.L_x_1)", "VOTE.ANY R2, PT, PT", "BRA `(.L_x_3)", ".L_x_1:",
         "VOTE.ANY R2, PT, PT", ".L_x_3:", "BSYNC B0", ".L_x_2:", "VOTE.ANY R3, PT, PT",
         "IMAD.SHL.U32 R3, R3, 0x10000, RZ", "IADD3 R2, R2, R3, RZ", "STG.E [R4.64], R2", "EXIT"]


def test_a_vote_sees_the_lanes_of_its_side_then_the_whole_warp(lavapipe_config):
    """On 16-wide subgroups, a block of 16 is one warp on one subgroup: a VOTE on each side of
    a branch sees that side's lanes, the one after the merge all 16."""
    expect = tuple((0x1F if t < 5 else 0xFFE0) | 0xFFFF << 16 for t in range(16))
    cells = _structured_on(_hand_case("votes", VOTES, tuple([0] * 16), expect), lavapipe_config(16))
    assert {d: c["status"] for d, c in cells.items()} == {"interp": "PASS", "lavapipe-w16": "PASS"}, cells


SPINS = ["S2R R0, SR_TID.X", "IMAD.WIDE.U32 R4, R0, 0x4, c[0x0][0x160]", ".L_x_1:", "IADD3 R2, R2, 0x1, RZ",
         "ISETP.GE.U32.AND P0, PT, R2, 0x7, PT", "@P0 BRA `(.L_x_2)", "IADD3 R3, R3, 0x1, RZ", "BRA `(.L_x_1)",
         ".L_x_2:", "IMAD.MOV.U32 R2, RZ, RZ, RZ", "BRA `(.L_x_1)", "STG.E [R4.64], R2", "EXIT"]


def test_a_loop_that_never_ends_is_livelock_not_a_hang(lavapipe):
    """Two nested loops that never leave: every pass counts against the step budget, and
    the thread ends LIVELOCK at a pc of the loop, with no word written."""
    case = _hand_case("spins", SPINS, tuple(range(8)), tuple(range(8)))
    result = engine.run_case(case, "lavapipe", lavapipe, translator={"name": "structured"})
    assert result.outcome == "livelock", result.message
    assert "step budget of 500 spent" in result.message


ONE_SPINS = ["S2R R0, SR_TID.X", "ISETP.NE.AND P0, PT, R0, RZ, PT", "@P0 EXIT", ".L_x_1:",
             "IADD3 R2, R2, 0x1, RZ", "BRA `(.L_x_1)", "EXIT"]


@pytest.mark.parametrize("strategy", ["structured", "turns"])
def test_a_livelock_names_the_budget_its_own_thread_spent(lavapipe, strategy):
    """Thread 0 spins, the other seven exit at once: the message counts the spinner's steps,
    not the launch's mean (which would read as a loop the driver ended, 500 / 8 steps in)."""
    case = _hand_case("one_spins", ONE_SPINS, tuple(range(8)), tuple(range(8)))
    result = engine.run_case(case, "lavapipe", lavapipe, translator={"name": strategy})
    assert result.outcome == "livelock", result.message
    assert "step budget of 500 spent; thread 0 " in result.message, result.message


EXCLUSIVE = ["S2R R0, SR_TID.X", "IMAD.WIDE.U32 R2, R0, 0x4, c[0x0][0x160]", "ISETP.GE.U32.AND P0, PT, R0, 0x8, PT",
             "IMAD.MOV.U32 R4, RZ, RZ, 0xff", "SEL R4, R4, 0xff00, !P0", "BSSY B0, `(.L_x_2)", "WARPSYNC.EXCLUSIVE R4",
             "REDUX.SUM UR6, R0", "MOV R5, UR6", "BSYNC B0", ".L_x_2:", "VOTE.ANY R6, PT, PT",
             "IMAD.SHL.U32 R6, R6, 0x10000, RZ", "IADD3 R5, R5, R6, RZ", "STG.E [R2.64], R5", "EXIT"]


def test_after_warpsync_exclusive_a_reduction_sees_its_own_masks_lanes(lavapipe_config):
    """ptxas's slow path of __reduce_add_sync with a register mask: lanes 0-7 hold 0xff,
    8-15 hold 0xff00, all converged. REDUX.SUM after WARPSYNC.EXCLUSIVE sums one mask's lanes
    (0+...+7 = 28, 8+...+15 = 92); after the BSYNC a VOTE sees all 16 again."""
    expect = tuple((28 if t < 8 else 92) | 0xFFFF << 16 for t in range(16))
    cells = _structured_on(_hand_case("exclusive", EXCLUSIVE, tuple([0] * 16), expect), lavapipe_config(16))
    assert {d: c["status"] for d, c in cells.items()} == {"interp": "PASS", "lavapipe-w16": "PASS"}, cells

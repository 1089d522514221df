"""Tight loops (translate's ``tight_loops``): a block that branches to itself runs again in
its own case of the switch where threads step alone. They are off on llvmpipe, which stops a
shader's loops after 65,535 iterations of all of them together; free mode's agreement with
the interpreter where a warp is a subgroup is tests/translator/turns/test_warp_subgroups.py's
(which turns them on: its programs are short). A counted loop (a register stepped to a bound,
as nvcc writes them) makes the passes its bound asks for, a step each, and one that never meets
its bound stops at the budget's last step."""
import dataclasses
import importlib
import struct
from pathlib import Path

import pytest
from warpboard.harness.run import devices, dispatch, engine
from warpboard.harness.run.dispatch import prepare, tight_loops_allowed, translate_case
from warpboard.harness.run.results import Status
from warpboard.studies.bench import bench_cases
from warpboard.translator.emit import tight
from warpboard.translator.spirv.builder import OP
from warpboard.translator import Target

from support.listing_kit import hand_case
from support.paths import library_case

BUILTIN = importlib.import_module("warpboard.harness.run.translators.builtin")     # the module, not its function

# thread 0 spins in a block that branches to itself; the others exit
SPINS_ALONE = ["S2R R0, SR_TID.X", "ISETP.NE.AND P0, PT, R0, RZ, PT", "@P0 EXIT", ".L_x_1:",
               "IADD3 R2, R2, 0x1, RZ", "BRA `(.L_x_1)", "EXIT"]
M32 = 0xFFFFFFFF


def _imm(v: int) -> str:
    return f"{v:#x}" if v < 0x80000000 else f"-{-v & M32:#x}"


def _run_counted(step: int, bound: int, t: int, budget: int) -> tuple[int, int]:
    """What thread t of :func:`counted_loop` leaves in its word, and the passes it makes."""
    acc, value, passes = 1, 0, 0
    while passes < budget:
        value, acc, passes = (value + step) & M32, (acc * 3 + t) & M32, passes + 1
        if value == bound:
            break
    return acc, passes


def counted_loop(name: str, step: int, bounds: list[int], budget: int = 500):
    """Thread t counts R2 up from 0 by ``step`` until it equals ``bounds[t]`` (its word of out),
    tripling an accumulator from 1 and adding t on each pass, and leaves the accumulator in
    its word: a tight loop whose own test reads its counter against a bound, as nvcc's
    counted loops do; the words say how many passes each thread made."""
    lines = ["S2R R0, SR_TID.X", "IMAD.WIDE.U32 R6, R0, 0x4, c[0x0][0x160]", "LDG.E R5, [R6.64]",
             "IMAD.MOV.U32 R2, RZ, RZ, RZ", "IMAD.MOV.U32 R4, RZ, RZ, 0x1", ".L_x_1:",
             f"IADD3 R2, R2, {_imm(step)}, RZ", "IMAD R4, R4, 0x3, R0", "ISETP.NE.AND P0, PT, R2, R5, PT",
             "@P0 BRA `(.L_x_1)", "STG.E [R6.64], R4", "EXIT"]
    expect = tuple(_run_counted(step, bound, t, budget)[0] for t, bound in enumerate(bounds))
    return hand_case(name, lines, tuple(bounds), expect, budget=budget)


def counted_passes(step: int, bounds: list[int], budget: int = 500) -> int:
    """The passes all threads of :func:`counted_loop` make: structured code's steps."""
    return sum(_run_counted(step, bound, t, budget)[1] for t, bound in enumerate(bounds))


def _trips(step: int, trips: list[int]) -> list[int]:
    """The bounds at which threads stepping by ``step`` leave after ``trips`` passes."""
    return [n * step & M32 for n in trips]


# down by one, each thread its own trips; up by 2^28, whose counter repeats after 16 passes: thread 7
# leaves only at the 16th pass, where the counter is back at 0
COUNTED = {"counted_by_one": (M32, _trips(M32, [t + 3 for t in range(8)])),
           "counted_by_2_28": (1 << 28, _trips(1 << 28, [t + 9 for t in range(8)]))}
# thread 5 never meets its bound (a value the counter cannot reach) and spends the budget of 40
NEVER_MEETS = ("never_meets_its_bound", 1 << 28, [*_trips(1 << 28, [3] * 5), 5, *_trips(1 << 28, [2, 1])], 40)

# library kernels with a block that branches to itself (a quiet one, in turns mode: its free run)
SELF_LOOPS = ("basic/uneven_loops", "printf/loop", "loops/collatz_bounded", "atomics/hand_cas_loop_global",
              "memory/lds_uniform_index")


def _count(spirv: bytes, opcode: str) -> int:
    """How many instructions of ``opcode`` a module holds."""
    words = struct.unpack(f"<{len(spirv) // 4}I", spirv)
    at, count = 5, 0
    while at < len(words):
        count += (words[at] & 0xFFFF) == OP[opcode]
        at += words[at] >> 16
    return count


def _loops(spirv: bytes) -> int:
    return _count(spirv, "LoopMerge")


def _bench(name):
    return prepare(next(c for c in bench_cases(1) if c.id == f"bench/{name}"))


def test_a_block_that_branches_to_itself_gets_a_loop_of_its_own():
    """The plain loop has two such blocks (its unrolled body and its tail): one loop each, in
    free mode and in turns mode's free run. Without tight loops, free mode's thread runs its
    quiet blocks in a loop of their own instead (emit/free.py)."""
    prep = _bench("bench_plain_loop")
    plain = translate_case(prep, "turns", use_cache=False)[0].spirv
    tight = translate_case(prep, "turns", Target(tight_loops=True), use_cache=False)[0].spirv
    assert _loops(tight) == _loops(plain) + 2
    plain = translate_case(prep, "free", use_cache=False)[0].spirv
    tight = translate_case(prep, "free", Target(tight_loops=True), use_cache=False)[0].spirv
    assert (_loops(plain), _loops(tight)) == (2, 1 + 2)


def test_tight_loops_are_off_on_llvmpipe_only(vulkan_infos):
    for info in vulkan_infos:
        assert tight_loops_allowed(info) == (info.driver_name != "llvmpipe" and not info.name.startswith("llvmpipe"))


@pytest.mark.skipif(not Path(devices.SWIFTSHADER_ICD).is_file(), reason="no SwiftShader (Debian's chromium-common)")
@pytest.mark.parametrize("strategy", ["turns", "structured"])
def test_self_loops_pass_on_swiftshader_and_a_spin_that_never_ends_is_still_a_livelock(strategy):
    """SwiftShader (no shared limit on a shader's loops) gets the tight loops: the kernels
    with self-loops pass, and a thread spinning alone in one still stops at the step budget."""
    [config] = [c for c in devices.discover(icds=[devices.SWIFTSHADER_ICD]) if "swiftshader" in c.id]
    assert tight_loops_allowed(config.info)
    spins = hand_case("spins_alone", SPINS_ALONE, tuple(range(8)), tuple(range(8)), budget=501)
    never = counted_loop(*NEVER_MEETS)
    counted = [counted_loop(name, step, bounds) for name, (step, bounds) in COUNTED.items()]
    cases = [library_case(c) for c in SELF_LOOPS] + counted + [spins, never]
    options = engine.Options(retries=0, translators=({"name": strategy},))
    cells = {c["case"]: c for c in engine.run_matrix(cases, [config], interp=False, options=options, jobs=1)["results"]}
    spin, never = cells.pop(spins.id), cells.pop(never.id)
    assert spin["status"] == Status.LIVELOCK.value and "step budget of 501 spent; thread 0 " in spin["message"], spin
    assert never["status"] == Status.LIVELOCK.value and "step budget of 40 spent; thread 5 " in never["message"], never
    if strategy == "structured":    # collectives, and lane order inside a loop, need warps on subgroups
        cells = {k: c for k, c in cells.items() if c["status"] != Status.UNSUPPORTED.value}
        assert {"basic/uneven_loops", "printf/loop"} <= set(cells)
    bad = {k: f"{c['status']}: {c.get('message')}" for k, c in cells.items() if c["status"] != Status.PASS.value}
    assert not bad, bad


@pytest.fixture(params=[False, True], ids=["one-pass-a-trip", "runs"])
def pass_runs(request, monkeypatch):
    """Structured code's self-loops as the device gets them (lavapipe: one pass a trip), and in
    runs of passes as a GPU gets them (``Target.pass_runs``)."""
    if request.param:
        def with_runs(*args, **kwargs):
            return dataclasses.replace(dispatch.device_target(*args, **kwargs), pass_runs=True)
        monkeypatch.setattr(BUILTIN, "device_target", with_runs)
    return request.param


def test_runs_of_passes_on_a_gpu_only(vulkan_infos):
    for info in vulkan_infos:
        assert dispatch.device_target(info, (32, 1, 1), "structured").pass_runs == (info.device_type != "cpu")


def test_a_run_holds_copies_of_the_block_and_tests_the_budget_once():
    """The plain loop's two self-loops (17 and 7 instructions) in runs: two loops of 16 copies,
    each testing the budget once, before the loop of one pass a trip that takes over where the
    budget has no room for a run."""
    prep = _bench("bench_plain_loop")
    one = translate_case(prep, None, Target(), "structured", use_cache=False)[0].spirv
    runs = translate_case(prep, None, Target(pass_runs=True), "structured", use_cache=False)[0].spirv
    assert tight.run_length(prep.program.blocks[0xe0]) == 16 and tight.run_length(prep.program.blocks[0x260]) == 16
    assert _count(runs, "LoopMerge") == _count(one, "LoopMerge") + 2
    assert _count(runs, "ULessThan") == _count(one, "ULessThan") + 2
    # the unrolled body's four SHF.R.U32.HI, the tail's one
    assert _count(runs, "ShiftRightLogical") - _count(one, "ShiftRightLogical") == 16 * 4 + 16 * 1


def test_library_self_loops_pass_in_runs_of_passes(lavapipe, monkeypatch):
    """The library's self-loops in structured code, as a GPU gets them (collectives aside:
    lavapipe's subgroups are not warps)."""
    monkeypatch.setattr(BUILTIN, "device_target",
                        lambda *a, **k: dataclasses.replace(dispatch.device_target(*a, **k), pass_runs=True))
    ran = []
    for name in SELF_LOOPS:
        result = engine.run_case(library_case(name), "lavapipe", lavapipe, translator={"name": "structured"})
        if result.status != Status.UNSUPPORTED:
            assert result.status == Status.PASS, (name, result.message)
            ran.append(name)
    assert {"basic/uneven_loops", "printf/loop", "memory/lds_uniform_index"} <= set(ran)


@pytest.mark.parametrize("name", sorted(COUNTED))
def test_a_counted_loop_leaves_at_its_own_test(lavapipe, name, pass_runs):
    """Structured code runs every self-loop as a tight loop, lavapipe's too: each thread makes
    the passes its bound asks for, the interpreter's as well, in runs of passes too (a thread
    leaving in the middle of a run)."""
    step, bounds = COUNTED[name]
    case = counted_loop(name, step, bounds)
    for device_id, device in (("interp", None), ("lavapipe", lavapipe)):
        result = engine.run_case(case, device_id, device, translator={"name": "structured"})
        assert result.status == Status.PASS, (device_id, result.message)
    assert result.steps == counted_passes(step, bounds)     # a step a pass, the first included


def test_a_counted_loop_that_never_meets_its_bound_spends_the_budget(lavapipe, pass_runs):
    """The loop's test never ends it: the budget does, at the step the interpreter stops it
    too, and the message names the thread. In runs of 16 passes, the budget of 40 has room for
    2 runs, and the last 8 passes are trips of one pass each."""
    case = counted_loop(*NEVER_MEETS)
    for device_id, device in (("interp", None), ("lavapipe", lavapipe)):
        result = engine.run_case(case, device_id, device, translator={"name": "structured"})
        message = result.message
        assert result.outcome == "livelock" and "step budget of 40 spent" in message and "thread 5 " in message, \
            (device_id, message)
    assert result.steps == counted_passes(*NEVER_MEETS[1:])

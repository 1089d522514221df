"""Translation strategies as the emitter sees them: registered by name, chosen per call, and
the `turns` strategy's two paths through the emitter: free mode (each thread its own pc loop,
no barrier) and turns (the workgroup votes a pc each turn, a barrier per vote)."""
import shutil
import struct

import pytest
from warpboard.harness.run import compare
from warpboard.harness.run.dispatch import prepare, run_vulkan, translate_case
from warpboard.harness.vk import validate_spirv
from warpboard.translator import DEFAULT_STRATEGY, STRATEGIES, Target, load_program, translate
from warpboard.translator.emit.emitter import Emitter
from warpboard.translator.emit.turns import FreeWarp, TurnsWarp, warp_for
from warpboard.translator.spirv.builder import OP
from warpboard.translator.spirv.enums import ExecutionMode

from support.listing_kit import listing
from support.paths import library_case

BLOCK = (64, 1, 1)
# Thread t adds 1 to its word of buffer 0 in a loop of t % 4 trips: divergent, no collective.
LOOP = ["S2R R0, SR_TID.X", "LOP3.LUT R3, R0, 0x3, RZ, 0xc0, !PT",
        "IMAD.WIDE.U32 R4, R0, 0x4, c[0x0][0x160]", "LDG.E R2, [R4.64]",
        "ISETP.NE.AND P0, PT, R3, RZ, PT", "@!P0 BRA `(.L_done)",
        ".L_loop:", "IADD3 R2, R2, 0x1, RZ", "IADD3 R3, R3, -0x1, RZ",
        "ISETP.NE.AND P0, PT, R3, RZ, PT", "@P0 BRA `(.L_loop)",
        ".L_done:", "STG.E [R4.64], R2", "EXIT", ".L_end:", "BRA `(.L_end)"]
# The same with a ballot after the loop: a collective, so the program runs in turns.
VOTED = LOOP[:-4] + ["VOTE.ANY R6, PT, PT", "STG.E [R4.64], R2", "EXIT", ".L_end:", "BRA `(.L_end)"]


def program(lines):
    return load_program("k:\n.text.k:\n" + listing(lines), "k")


def opcodes(spirv: bytes) -> list[str]:
    names = {code: name for name, code in OP.items()}
    words = struct.unpack(f"<{len(spirv) // 4}I", spirv)
    out, at = [], 5
    while at < len(words):
        out.append(names.get(words[at] & 0xFFFF, str(words[at] & 0xFFFF)))
        at += words[at] >> 16
    return out


def test_turns_is_registered_and_the_default():
    assert list(STRATEGIES)[0] == DEFAULT_STRATEGY == "turns" and STRATEGIES["turns"].make is warp_for
    shader = translate(program(LOOP), BLOCK)
    assert shader.spirv == translate(program(LOOP), BLOCK, strategy="turns").spirv


def test_an_unknown_strategy_is_refused_naming_the_known_ones():
    with pytest.raises(ValueError, match=r"unknown translation strategy 'nope'; known: turns"):
        translate(program(LOOP), BLOCK, strategy="nope")


def test_the_turns_strategy_makes_free_or_turns_warp_state_by_mode():
    for lines, mode, kind in ((LOOP, None, FreeWarp), (LOOP, "turns", TurnsWarp), (VOTED, None, TurnsWarp)):
        emitter = Emitter(program(lines), BLOCK, 1024, mode)
        assert type(emitter.warp) is kind, (mode, type(emitter.warp))


def test_free_mode_has_no_barrier_and_turns_mode_votes_with_one():
    prog = program(LOOP)
    assert prog.for_block(BLOCK).mode == "free" and program(VOTED).for_block(BLOCK).mode == "turns"
    free = translate(prog, BLOCK)
    forced = translate(prog, BLOCK, mode="turns")
    voted = translate(program(VOTED), BLOCK)
    assert (free.mode, forced.mode, voted.mode) == ("free", "turns", "turns")
    assert "ControlBarrier" not in opcodes(free.spirv)
    assert "ControlBarrier" in opcodes(forced.spirv) and "ControlBarrier" in opcodes(voted.spirv)
    assert "GroupNonUniformBallot" not in opcodes(free.spirv)


@pytest.mark.skipif(shutil.which("spirv-val") is None, reason="needs spirv-val (SPIRV-Tools)")
@pytest.mark.parametrize("lines, mode", [(LOOP, "free"), (LOOP, "turns"), (VOTED, "turns")])
def test_both_paths_are_valid_spirv(lines, mode):
    validate_spirv(translate(program(lines), BLOCK, mode=mode).spirv)


def test_both_paths_give_the_interpreters_words(backend):
    """Free and turns mode of one program (the interpreter runs it in turns), against t % 4
    added to each word."""
    words = list(range(100, 164))
    want = [w + t % 4 for t, w in enumerate(words)]
    for mode in ("free", "turns"):
        run = backend.run(LOOP, [words], threads=64, name=f"strategy_{mode}", mode=mode)
        assert run.outcome == "ok", run.detail
        assert run.buffers[0] == want, mode


def _without_maximal_reconvergence(spirv: bytes) -> tuple[bytes, bool]:
    """The module without OpExecutionMode MaximallyReconvergesKHR and its OpExtension (and
    whether it had the mode)."""
    words = list(struct.unpack(f"<{len(spirv) // 4}I", spirv))
    out, at, found = words[:5], 5, False
    while at < len(words):
        n, op = words[at] >> 16, words[at] & 0xFFFF
        mode = op == OP["ExecutionMode"] and words[at + 2] == ExecutionMode.MaximallyReconvergesKHR
        found |= mode
        if not mode and op != OP["Extension"]:
            out += words[at:at + n]
        at += n
    return struct.pack(f"<{len(out)}I", *out), found


@pytest.mark.skipif(shutil.which("spirv-val") is None, reason="spirv-val (SPIRV-Tools) not installed")
@pytest.mark.parametrize("lines", [LOOP, VOTED])
def test_subgroup_native_runs_every_program_on_the_free_loop(lines):
    prog = program(lines)
    shader = translate(prog, BLOCK, strategy="subgroup-native")
    assert shader.mode == "native" and "ControlBarrier" not in opcodes(shader.spirv)
    assert shader.subgroup_size == (32 if lines is VOTED else None)   # asked of the pipeline for a warp
    validate_spirv(shader.spirv)
    # where the device offers maximal reconvergence a shader with collectives asks for it
    # (spirv-val 2023.1 predates the mode: the rest of the module is validated)
    features = frozenset({"shaderInt64", "shaderMaximalReconvergence"})
    maximal = translate(prog, BLOCK, target=Target(features=features), strategy="subgroup-native").spirv
    rest, found = _without_maximal_reconvergence(maximal)
    assert found is (lines is VOTED) and (b"SPV_KHR_maximal_reconvergence" in maximal) is found
    validate_spirv(rest)


def _control_barrier_scopes(spirv: bytes) -> list[int]:
    """The execution scope of each OpControlBarrier (its constant's value)."""
    words = struct.unpack(f"<{len(spirv) // 4}I", spirv)
    consts, scopes, at = {}, [], 5
    while at < len(words):
        n, op = words[at] >> 16, words[at] & 0xFFFF
        if op == OP["Constant"] and n == 4:
            consts[words[at + 2]] = words[at + 3]
        elif op == OP["ControlBarrier"]:
            scopes.append(consts[words[at + 1]])
        at += n
    return scopes


WARPSYNCED = VOTED[:-4] + ["WARPSYNC 0xffffffff", "VOTE.ANY R6, PT, PT", "STG.E [R4.64], R2", "EXIT",
                           ".L_end:", "BRA `(.L_end)"]
BARRED = VOTED[:-4] + ["BAR.SYNC 0x0", "STG.E [R4.64], R2", "EXIT", ".L_end:", "BRA `(.L_end)"]


@pytest.mark.parametrize("lines, per_warp", [(VOTED, True), (WARPSYNCED, True), (BARRED, False)])
def test_where_subgroups_are_warps_each_warp_takes_its_own_turns_unless_a_bar_needs_the_workgroup(lines, per_warp):
    emitter = Emitter(program(lines), BLOCK, 1024, None, Target(warp_subgroups=True))
    assert emitter.warp.per_warp is per_warp
    scopes = _control_barrier_scopes(emitter.build().spirv)
    workgroup = scopes.count(2)                         # Scope.Workgroup
    if per_warp:                                        # the set-up's barrier, then subgroup ones only
        assert workgroup == 1 and set(scopes) <= {2, 3}
    else:
        assert workgroup > 1
    shared = Emitter(program(lines), BLOCK, 1024, None, Target(warp_subgroups=False))    # subgroups are not warps
    assert not shared.warp.per_warp and _control_barrier_scopes(shared.build().spirv).count(2) > 1


@pytest.mark.xdist_group("lavapipe-in-process")
@pytest.mark.parametrize("case_id", ["basic/divmod64", "basic/bytes_switch", "basic/gather_two"])
def test_free_mode_lanes_meet_where_the_listing_rejoins_them_and_give_the_same_words(lavapipe, case_id):
    """Where a warp is a subgroup, free mode's lanes run alone up to a block with a waiting
    instruction (BSYNC: a lane that left a loop early waits there for the rest) and the lanes
    at the subgroup's lowest such pc run it together; a listing with no such block needs no
    subgroup operation at all. Any device runs that schedule, so lavapipe checks its words;
    the turn-free loop keeps no barrier."""
    case = library_case(case_id)
    prep = prepare(case)
    if prep.program.turns:
        pytest.skip(f"{case_id} runs in turns")
    shader = translate_case(prep, "free", Target(warp_subgroups=True), use_cache=False)[0]
    rejoins = any(i.waits for i in prep.program.insts)
    assert ("GroupNonUniformUMin" in opcodes(shader.spirv)) == rejoins
    assert "ControlBarrier" not in opcodes(shader.spirv)
    raw = run_vulkan(lavapipe, prep, shader, timeout_s=60)
    assert raw.outcome.value == "ok", raw.detail
    assert compare.compare(case, raw.buffers).total == 0

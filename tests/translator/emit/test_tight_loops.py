"""Tight loops (translate's ``tight_loops``): a block that branches to itself runs again in
its own case of the switch where threads step alone. They are off on llvmpipe, which stops a
shader's loops after 65,535 iterations of all of them together; free mode's agreement with
the interpreter where a warp is a subgroup is tests/translator/turns/test_warp_subgroups.py's
(which turns them on: its programs are short)."""
import struct
from pathlib import Path

import pytest
from warpboard.harness.run import devices, engine
from warpboard.harness.run.dispatch import prepare, tight_loops_allowed, translate_case
from warpboard.harness.run.results import Status
from warpboard.studies.bench import bench_cases
from warpboard.translator.spirv.builder import OP
from warpboard.translator import Target

from support.listing_kit import hand_case
from support.paths import library_case

# thread 0 spins in a block that branches to itself; the others exit
SPINS_ALONE = ["S2R R0, SR_TID.X", "ISETP.NE.AND P0, PT, R0, RZ, PT", "@P0 EXIT", ".L_x_1:",
               "IADD3 R2, R2, 0x1, RZ", "BRA `(.L_x_1)", "EXIT"]
# library kernels with a block that branches to itself (a quiet one, in turns mode: its free run)
SELF_LOOPS = ("basic/uneven_loops", "printf/loop", "loops/collatz_bounded", "atomics/hand_cas_loop_global",
              "memory/lds_uniform_index")


def _loops(spirv: bytes) -> int:
    """How many OpLoopMerge a module holds."""
    words = struct.unpack(f"<{len(spirv) // 4}I", spirv)
    at, count = 5, 0
    while at < len(words):
        count += (words[at] & 0xFFFF) == OP["LoopMerge"]
        at += words[at] >> 16
    return count


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
    cases = [library_case(c) for c in SELF_LOOPS] + [spins]
    options = engine.Options(retries=0, translators=({"name": strategy},))
    cells = {c["case"]: c for c in engine.run_matrix(cases, [config], interp=False, options=options, jobs=1)["results"]}
    spin = cells.pop(spins.id)
    assert spin["status"] == Status.LIVELOCK.value and "step budget of 501 spent; thread 0 " in spin["message"], spin
    if strategy == "structured":    # collectives, and lane order inside a loop, need warps on subgroups
        cells = {k: c for k, c in cells.items() if c["status"] != Status.UNSUPPORTED.value}
        assert {"basic/uneven_loops", "printf/loop"} <= set(cells)
    bad = {k: f"{c['status']}: {c.get('message')}" for k, c in cells.items() if c["status"] != Status.PASS.value}
    assert not bad, bad

"""Collectives through subgroup operations: chosen only for devices whose subgroups can be
warps, and a shader translated that way either runs right or says it cannot."""
from types import SimpleNamespace

import pytest
from warpboard.harness.run import devices
from support.paths import library_case
from warpboard.harness.run.dispatch import prepare, run_vulkan, translate_case, warps_are_subgroups
from warpboard.harness.run.worker import Worker
from warpboard.translator import Target

FULL = ("basic", "vote", "arithmetic", "ballot", "shuffle", "shuffle_relative", "quad")


def _info(size, ops=FULL, stages=("compute",)):
    return SimpleNamespace(subgroup_size=size, subgroup_operations=ops, subgroup_stages=stages)


def test_only_32_wide_subgroups_with_the_operations_stand_for_warps(monkeypatch):
    monkeypatch.delenv("WARPBOARD_WARP_SUBGROUPS", raising=False)
    assert warps_are_subgroups(_info(32))
    assert not warps_are_subgroups(_info(16))
    assert not warps_are_subgroups(_info(64))
    assert not warps_are_subgroups(_info(32, ops=("basic", "vote", "ballot", "arithmetic")))   # no shuffle
    assert not warps_are_subgroups(_info(32, stages=("fragment",)))
    monkeypatch.setenv("WARPBOARD_WARP_SUBGROUPS", "off")
    assert not warps_are_subgroups(_info(32))


@pytest.mark.xdist_group("lavapipe-w32")
@pytest.mark.parametrize("case_id", ["truth/loop_ballot", "shuffle/shfl_xor_widths", "match_redux/redux_all_ops"])
def test_a_32_wide_subgroup_device_runs_right_or_says_why(case_id):
    """llvmpipe at 1024 bits reports 32-wide subgroups but runs them 16 wide (measured): the
    worker's probe sees it, so the case runs in the workgroup's turns and passes (where a
    shader translated for warps came to it anyway, its own check would name it: ERROR)."""
    if not any(c.id.startswith("lavapipe") for c in devices.discover()):
        pytest.skip("no lavapipe device (install mesa-vulkan-drivers)")
    with Worker({"LP_NATIVE_VECTOR_WIDTH": "1024"}, "lavapipe-1024") as worker:
        reply = worker.call("support.worker_targets:run_case_here", case_id, timeout_s=120)
    assert reply.ok, reply.describe()
    cell = reply.value
    if cell["subgroup_size"] != 32:
        pytest.skip(f"this llvmpipe reports {cell['subgroup_size']}-wide subgroups at 1024 bits")
    assert cell["status"] == "PASS", cell


def _info_probed(real, in_order=True, full32=None):
    probe = {"real": real, "lanes_in_order": in_order, "full32": full32}
    return SimpleNamespace(subgroup_size=real, subgroup_operations=FULL, subgroup_stages=("compute",), probe=probe)


def test_a_block_whose_one_warp_fits_a_subgroup_has_its_warp_as_subgroup(monkeypatch):
    """Where the probe saw 16 real lanes in order, a launch of one block of at most 16 threads
    has its one warp in one subgroup; a wider block, or lanes out of order, does not."""
    monkeypatch.delenv("WARPBOARD_WARP_SUBGROUPS", raising=False)
    assert warps_are_subgroups(_info_probed(16), (16, 1, 1))
    assert warps_are_subgroups(_info_probed(16), (4, 2, 2))
    assert not warps_are_subgroups(_info_probed(16), (17, 1, 1))
    assert not warps_are_subgroups(_info_probed(16), (16, 2, 1))
    assert not warps_are_subgroups(_info_probed(16))
    assert not warps_are_subgroups(_info_probed(16, in_order=False), (8, 1, 1))
    assert warps_are_subgroups(_info_probed(32), (256, 1, 1))


# the reproductions of collectives and their masks (not rp_4_12: 4 blocks of 1024 threads, whose
# shader lavapipe takes seconds to compile; make scoreboard runs it on every device)
PER_WARP_CASES = ["vote/*", "shuffle/*", "match_redux/*", "truth/*", "branches/*", "warpsync_mem/*",
                  "repro/ballot_*", "repro/livelock_*", "repro/any_all_*", "repro/spmv_*"]


def _per_warp_on_lavapipe(patterns, minimum, bench=(), mode="turns", inline=None, budget=None):
    if not any(c.id.startswith("lavapipe") for c in devices.discover()):
        pytest.skip("no lavapipe device (install mesa-vulkan-drivers)")
    with Worker({"LP_NATIVE_VECTOR_WIDTH": "512"}, "lavapipe-w16") as worker:
        reply = worker.call("support.worker_targets:per_warp_disagreements", 16, patterns, bench, mode, None, inline,
                            budget=budget, timeout_s=900)
    assert reply.ok, reply.describe()
    compared, wrong = reply.value
    assert not wrong, "\n".join(wrong)
    assert compared >= minimum


@pytest.mark.xdist_group("lavapipe-w16")
def test_per_warp_turns_on_lavapipe_agree_with_the_interpreter():
    """The shader of a device whose subgroups are warps (NVIDIA's: collectives as subgroup
    operations, each warp its own turns) runs on lavapipe-w16 for a block of 16 threads, whose
    one warp is one subgroup: the library's collective cases launched so give the
    interpreter's words, outcome and per-warp turns. These take a few dozen turns; with 16
    threads truth/spin_wait_flag's lane 5 waits for a lane 20 that is not there, and spends a
    budget of 2,000 turns, not the 60,000 of a case, on both sides."""
    _per_warp_on_lavapipe(PER_WARP_CASES, 30, budget=2000)


@pytest.mark.xdist_group("lavapipe-w16")
def test_chained_turns_of_the_bench_loops_agree_with_the_interpreter():
    """The bench kernels' loops, one block of 16 threads: a uniform warp runs the blocks of
    its loop body in one turn (chains, inline in the shader), and both back ends count the
    same turns."""
    _per_warp_on_lavapipe([], 2, bench=("bench/bench_vote_loop", "bench/bench_warp_trips"))


@pytest.mark.xdist_group("lavapipe-w16")
def test_chains_the_shader_has_no_copy_of_run_on_by_the_turn_loop_and_count_the_same():
    """With a budget of copies that runs out inside the bench loops' bodies (20
    instructions), the chains that got no copy run on by a trip round the turn loop: the
    words, the outcome and the turns are still the interpreter's."""
    _per_warp_on_lavapipe(["vote/*", "branches/*"], 6, bench=("bench/bench_vote_loop", "bench/bench_warp_trips"),
                          inline=20)


@pytest.mark.xdist_group("lavapipe-w16")
def test_free_mode_lanes_that_rejoin_on_lavapipe_agree_with_the_interpreter():
    """Free mode where a warp is a subgroup: lanes run alone between the blocks where the
    listing rejoins them (BSYNC) and meet there; the words and the outcome are the
    interpreter's. The bench's plain loop (lanes leave it at different trips) and the
    library's collective-free loops and branches."""
    _per_warp_on_lavapipe(["loops/*", "branches/*", "basic/*"], 8, bench=("bench/bench_plain_loop",), mode="free")


@pytest.mark.campaign
@pytest.mark.xdist_group("lavapipe-w16")
def test_every_free_case_per_warp_on_lavapipe_agrees_with_the_interpreter():
    _per_warp_on_lavapipe(None, 60, mode="free")


@pytest.mark.campaign
@pytest.mark.xdist_group("lavapipe-w16")
def test_every_turns_case_per_warp_on_lavapipe_agrees_with_the_interpreter():
    """All of them, the spin cases too (one block of 16 often leaves a spinner without its
    producer: then both end as LIVELOCK)."""
    _per_warp_on_lavapipe(None, 140)


def test_a_shader_for_warps_on_subgroups_that_are_not_says_so(lavapipe):
    """A shader translated for subgroups that are warps, dispatched where they are not (this
    lavapipe's subgroups are narrower than the block's warps), checks the mapping itself and
    ends with NOT_WARPS naming it: no wrong words."""
    prep = prepare(library_case("truth/loop_ballot"))
    assert prep.launch.threads_per_block > lavapipe.info.subgroup_size
    shader, _ = translate_case(prep, None, Target(warp_subgroups=True), use_cache=False)
    run = run_vulkan(lavapipe, prep, shader)
    assert run.outcome.value == "subgroups-not-warps" and "subgroups that are warps" in run.detail, run.detail

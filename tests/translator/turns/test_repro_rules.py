"""Register masks of ``*_sync`` collectives: ptxas tests them with ``R2UR Pd, URZ, Rmask``
(Pd: the mask differs between the lanes executing it) and ``@!Pd BRA.DIV URmask, slow``.
The cases under ``cases/repro/`` hold the words recorded on an H200; each rule below is
shown necessary by taking it away."""

import pytest
from support.paths import library_case
from warpboard.harness import vk
from warpboard.harness.run import devices
from warpboard.harness.run.engine import run_case
from warpboard.harness.run.results import Status
from warpboard.translator.interp import thread as interp_ctx
from warpboard.translator.interp.vector import ctx as vector_ctx
from warpboard.translator.ir.program import load_program
from warpboard.translator.isa import ops

REPROS = ["repro/livelock_bsync_warpsync", "repro/ballot_after_exchange", "repro/ballot_split_masks"]
pytestmark = pytest.mark.xdist_group("lavapipe-w8")


@pytest.fixture(scope="module")
def device():
    if not devices.discover():
        pytest.skip("no Vulkan device")
    with vk.Device(0) as dev:
        yield dev


@pytest.mark.parametrize("case_id", REPROS)
@pytest.mark.parametrize("backend", ["interp", "vulkan"])
def test_register_mask_collectives_give_the_recorded_words(case_id, backend, request):
    dev = request.getfixturevalue("device") if backend == "vulkan" else None
    result = run_case(library_case(case_id), backend, dev)
    assert result.status is Status.PASS, result.message
    assert result.mismatch_count == 0


def test_r2ur_with_a_predicate_is_a_collective_and_without_one_a_move():
    program = load_program("""
        .text.k:
        /*0000*/                   R2UR P1, URZ, R7 ;
        /*0010*/                   R2UR UR4, R7 ;
        /*0020*/                   EXIT ;
    """, "k")
    first, second = program.insts[:2]
    assert first.exchanges and first.spec.lanes == "values" and program.turns
    assert not second.exchanges and second.spec is ops.lookup("R2UR")


def test_without_the_predicate_of_r2ur_disjoint_masks_take_the_fast_path(monkeypatch):
    """With Pd never written (false), converged lanes holding two different masks vote
    together on the fast path: every lane of T1 gets 0xffffffff, not its own half."""
    monkeypatch.setattr(ops, "PREDICATE_FORMS", {})
    result = run_case(library_case("repro/ballot_split_masks"), "interp")
    assert result.status is Status.FAIL
    assert any(m.index < 32 for m in result.mismatches)


def test_with_a_per_lane_guard_on_bra_div_disjoint_masks_do_not_meet(monkeypatch):
    """Lanes whose guard is false must take BRA.DIV too: converged lanes holding two
    different masks go to the slow path together, where each mask meets its own lanes."""
    for ctx in (interp_ctx.ThreadCtx, vector_ctx.LaneCtx):      # the interpreter's threads, alone or as lanes
        monkeypatch.setattr(ctx, "jump_unguarded", lambda x, target, taken: x.jump(target, taken))
    result = run_case(library_case("repro/ballot_split_masks"), "interp")
    assert result.status is not Status.PASS

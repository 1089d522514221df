"""Convergence regions that nvcc leaves in ways the plain rules did not cover: a conditional
``BREAK Pp, Bx`` (and ``EXIT Pp``), and threads waiting at two barriers where only the one at the higher pc
can pass. Each listing deadlocked (LIVELOCK) or gave other words before its rule; both back
ends must give the words below."""

import pytest
from support.listing_kit import HEAD, store_outputs
from support.paths import CASES
from warpboard.harness.case.model import load_case
from warpboard.harness.run.engine import run_case
from warpboard.harness.run.results import Status

LANES = 32
# one library case per rule, reduced from random programs or written from the CUDA they break
LIBRARY = ["random/bsync_two_waiters", "random/break_with_predicate", "random/break_to_syncthreads",
           "random/exit_with_predicate",
           "random/reduce_two_masks"]


def _run(backend, body, words=1):
    run = backend.run(HEAD + body + store_outputs(words), [[0] * LANES, [0] * LANES * words])
    assert run.outcome == "ok", run.detail
    return run.buffers[1]


def test_a_break_with_a_predicate_leaves_the_region_only_where_the_predicate_holds(backend):
    """``@P0 BREAK P1, B0`` + ``@P0 BRA P1, out``: lanes 8-15 (P0 and P1) leave B0 and go
    out; lanes 16-31 (P0, not P1) stay in it, take a detour and reach ``BSYNC B0`` after
    lanes 0-7, which must wait for them: all 24 vote together. Taking ``P1`` for the
    barrier (``BREAK B1``) left lanes 0-7 waiting for lanes 8-15 forever."""
    words = _run(backend, [
        "ISETP.LT.U32.AND P1, PT, R0, 0x10, PT",
        "ISETP.GE.U32.AND P0, PT, R0, 0x8, PT",
        "BSSY B1, `(.L_end)",
        "BSSY B0, `(.L_join)",
        "@P0 BREAK P1, B0",
        "@P0 BRA P1, `(.L_out)",
        "@P0 BRA `(.L_detour)",
        ".L_back:",
        "BSYNC B0",
        ".L_join:",
        "VOTE.ANY R20, PT, PT",
        "BRA `(.L_sync)",
        ".L_out:",
        "IMAD.MOV.U32 R20, RZ, RZ, 0x1234",
        ".L_sync:",
        "BSYNC B1",
        ".L_end:",
        "BRA `(.L_store)",
        ".L_detour:",
        "IADD3 R5, R0, 0x1, RZ",
        "BRA `(.L_back)",
        ".L_store:",
    ])
    assert words == [0xFFFF00FF] * 8 + [0x1234] * 8 + [0xFFFF00FF] * 16


def test_an_exit_with_a_predicate_ends_only_the_threads_where_it_holds(backend):
    """``@!P0 EXIT P1`` (ptxas folds ``if (c) { ...; if (d) return; }`` into one EXIT) ends
    lanes 17, 19, ..., 31 (not P0, and P1); a plain ``EXIT P2`` ends lane 2 and lets every
    other lane go on. Taking either for a plain EXIT ended every lane it guards (a random
    program's 26 lanes per warp lost their last store)."""
    words = _run(backend, [
        "ISETP.GE.U32.AND P0, PT, R0, 0x10, PT",
        "LOP3.LUT R5, R0, 0x1, RZ, 0xc0, !PT",
        "ISETP.NE.U32.AND P1, PT, R5, RZ, PT",
        "ISETP.EQ.U32.AND P2, PT, R0, 0x2, PT",
        "@P0 EXIT P1",
        "EXIT P2",
        "IMAD.MOV.U32 R20, RZ, RZ, 0xb",
        "VOTE.ANY R21, PT, PT",
    ], words=2)
    survivors = 0x5555FFFB
    assert words == [w for lane in range(LANES)
                     for w in (([0xB, survivors]) if survivors >> lane & 1 else [0, 0])]


def test_waiters_at_two_barriers_take_turns_to_try(backend):
    """Lanes 16-31 wait at ``BSYNC B0`` (low pc) for lanes 0-15, which left B0's region
    without BREAK (nvcc's early return from a switch case); lanes 0-7 wait at ``BSYNC B2``
    (higher pc) for lanes 8-15, which vote among themselves (not quiet code: it runs in
    turns, after lanes 0-7 have tried B2) and exit instead of arriving. B2 can pass once they
    have exited, but only if its waiters get to try again while the waiter at the lower pc
    keeps failing."""
    words = _run(backend, [
        "ISETP.LT.U32.AND P0, PT, R0, 0x10, PT",
        "ISETP.LT.U32.AND P1, PT, R0, 0x8, PT",
        "BSSY B0, `(.L_a)",
        "@P0 BRA `(.L_b)",
        "BSYNC B0",
        ".L_a:",
        "IMAD.MOV.U32 R20, RZ, RZ, 0xa",
        "BRA `(.L_store)",
        ".L_b:",
        "BSSY B2, `(.L_c)",
        "@!P1 BRA `(.L_d)",
        "BSYNC B2",
        ".L_c:",
        "IMAD.MOV.U32 R20, RZ, RZ, 0xb",
        "BRA `(.L_store)",
        ".L_d:",
        "VOTE.ANY R20, PT, PT",
        *store_outputs(1),
        ".L_store:",
    ])
    assert words == [0xB] * 8 + [0xFF00] * 8 + [0xA] * 16


@pytest.mark.parametrize("case_id", LIBRARY)
def test_the_library_cases_of_these_rules_pass(case_id, backend):
    case = load_case(CASES / f"{case_id}.toml", CASES)
    result = run_case(case, "interp" if backend.device is None else "vulkan", backend.device)
    assert result.status is Status.PASS, result.message


def test_warpsync_exclusive_lets_one_group_pass_per_turn(backend):
    """Two complete groups (lanes 0-15 and 16-31, two masks) at one WARPSYNC.EXCLUSIVE: the
    maskless REDUX after it must see one group at a time, as ``__reduce_add_sync`` with a
    register mask does in ptxas's slow path. Both groups passing in one turn summed all 32."""
    words = _run(backend, [
        "ISETP.LT.U32.AND P0, PT, R0, 0x10, PT",
        "SEL R4, 0xffff, 0xffff0000, P0",
        "BSSY B0, `(.L_join)",
        "WARPSYNC.EXCLUSIVE R4",
        "REDUX.SUM UR6, R0",
        "BSYNC B0",
        ".L_join:",
        "IMAD.U32 R20, RZ, RZ, UR6",
    ])
    assert words == [sum(range(16))] * 16 + [sum(range(16, 32))] * 16


def test_a_bsync_does_not_wait_for_lanes_waiting_at_a_warpsync_that_names_it(backend):
    """Lanes 0-15 leave B0's region without BREAK, straight to ``WARPSYNC 0xffffffff`` (nvcc:
    a ``break`` out of a loop to the ``__syncthreads`` after it); lanes 16-31 wait at
    ``BSYNC B0`` for them. Each waits for the other unless the BSYNC lets lanes that wait at
    a WARPSYNC naming it count as gone; then all 32 meet at the WARPSYNC and vote together."""
    words = _run(backend, [
        "IMAD.MOV.U32 R20, RZ, RZ, 0xa",
        "ISETP.LT.U32.AND P0, PT, R0, 0x10, PT",
        "BSSY B0, `(.L_join)",
        "@P0 BRA `(.L_out)",
        "BSYNC B0",
        ".L_join:",
        "IMAD.MOV.U32 R20, RZ, RZ, 0xb",
        ".L_out:",
        "WARPSYNC 0xffffffff",
        "VOTE.ANY R21, PT, PT",
    ], words=2)
    assert words == [0xA, 0xFFFFFFFF] * 16 + [0xB, 0xFFFFFFFF] * 16


def test_a_return_to_a_pc_beyond_every_block_is_bad_pc(interp):
    """A return address far beyond the program (here 0x40000000, above the bits the turn key
    keeps for a pc) ends the run as BAD_PC naming the thread, not as an interpreter crash."""
    run = interp.run(HEAD + ["IMAD.MOV.U32 R4, RZ, RZ, 0x40000000", "RET.REL.NODEC R4 0x0", "EXIT"],
                     [[0] * LANES, [0] * LANES])
    assert run.outcome == "bad-pc", run.outcome
    assert "thread 0: jump to 0x40000000" in run.detail

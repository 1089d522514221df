"""Convergence regions that nvcc leaves in ways the plain rules did not cover: a conditional
``BREAK Pp, Bx``, and threads waiting at two barriers where only the one at the higher pc
can pass. Each listing deadlocked (LIVELOCK) or gave other words before its rule; both back
ends must give the words below."""
from listing_kit import HEAD, store_outputs

LANES = 32


def _run(backend, body):
    run = backend.run(HEAD + body + store_outputs(1), [[0] * LANES, [0] * LANES])
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

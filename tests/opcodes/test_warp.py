"""Convergence-barrier moves (BMOV) and traps (BPT.TRAP) on both back ends."""
from __future__ import annotations

from support.listing_kit import (
    HEAD,
    M32,
    SENTINEL,
    assert_rows,
    rows_of,
    store_outputs,
)


# ================================================================ BMOV
def test_bmov_saves_and_restores_a_region(backend):
    """ptxas saves B0 around an inner region on the same barrier (BMOV.32.CLEAR R, B0 ...
    BMOV.32 B0, R): the outer BSYNC must still wait for the lanes that went through the inner
    one, so the VOTE after it sees the whole warp."""
    threads = 64
    body = [
        "LOP3.LUT R5, R0, 0x3, RZ, 0xc0, !PT", "ISETP.NE.U32.AND P0, PT, R5, RZ, PT",
        "BSSY B0, `(.L_x_1)", "@!P0 BRA `(.L_x_0)",
        "BMOV.32.CLEAR R20, B0", "BMOV.32 R21, B0",
        "BSSY B0, `(.L_x_2)", "VOTE.ANY R22, PT, PT", "BSYNC B0",
        ".L_x_2:", "BMOV.32 B0, R20", "NOP",
        ".L_x_0:", "BSYNC B0",
        ".L_x_1:", "VOTE.ANY R23, PT, PT", "BMOV.32 R24, B0",
    ]
    run = backend.run(HEAD + body + store_outputs(5), [[0], [SENTINEL] * (threads * 5)], threads=threads,
                      name="bmov")
    assert run.outcome == "ok", run.detail
    want = [[M32, 0, 0xEEEEEEEE, M32, M32] if t % 4 else [0, 0, 0, M32, M32] for t in range(threads)]
    assert_rows(backend, rows_of(run.buffers[1], 5), want)



# ================================================================ traps
def test_bpt_trap_faults_where_a_thread_reaches_it(backend):
    """``BPT.TRAP 0x1`` (nvcc's __trap(), a failed assert, grid.sync() outside a cooperative
    launch): the thread that reaches it ends the run as a FAULT naming the trap; a launch whose
    threads all branch around it runs to the end."""
    around = ["ISETP.GT.U32.AND P0, PT, R0, 0x40, PT", "@!P0 BRA `(.L_x_1)", "BPT.TRAP 0x1",
              ".L_x_1:", "IMAD.MOV.U32 R20, RZ, RZ, 0x7"]
    run = backend.run(HEAD + around + store_outputs(1), [[0], [SENTINEL] * 32], name="no_trap")
    assert run.outcome == "ok", run.detail
    assert run.buffers[1] == [7] * 32
    hit = ["ISETP.NE.U32.AND P0, PT, R0, 0x5, PT", "@P0 BRA `(.L_x_1)", "BPT.TRAP 0x1",
           ".L_x_1:", "IMAD.MOV.U32 R20, RZ, RZ, 0x7"]
    run = backend.run(HEAD + hit + store_outputs(1), [[0], [SENTINEL] * 32], name="trap")
    assert run.outcome == "fault", (run.outcome, run.detail)
    assert "thread 5 " in run.detail and "BPT.TRAP" in run.detail and "a failed assert" in run.detail, run.detail


# ================================================================ SHFL from lanes not at it
def test_shfl_from_a_lane_that_is_not_at_the_shfl_reads_zero(backend):
    """Lanes 0-7 shuffle down while the others sit out: a source lane in range that is not at
    the SHFL gives 0, as the H200 gives the reduction sample's last warp
    (cases/captured/reduction/reduce7_float_2); one that is gives its value; out of range,
    the lane keeps its own."""
    body = [
        "IADD3 R5, R0, 0x1, RZ", "IMAD.MOV.U32 R20, RZ, RZ, 0x77", "IMAD.MOV.U32 R21, RZ, RZ, 0x77",
        "IMAD.MOV.U32 R22, RZ, RZ, 0x77",
        "ISETP.GE.U32.AND P0, PT, R0, 0x8, PT", "BSSY B0, `(.L_x_1)", "@P0 BRA `(.L_x_0)",
        "SHFL.DOWN PT, R20, R5, 0x10, 0x1f",       # lanes 16..23: not here
        "SHFL.DOWN PT, R21, R5, 0x4, 0x1f",        # lanes 4..7 here, 8..11 not
        "SHFL.DOWN PT, R22, R5, 0x4, 0x7",         # clamp 7: lanes 4..7 out of range, their own
        ".L_x_0:", "BSYNC B0", ".L_x_1:",
    ]
    run = backend.run(HEAD + body + store_outputs(3), [[0], [SENTINEL] * 96], name="shfl_absent")
    assert run.outcome == "ok", run.detail
    want = [[0, t + 5 if t < 4 else 0, t + 5 if t < 4 else t + 1] if t < 8 else [0x77] * 3 for t in range(32)]
    assert_rows(backend, rows_of(run.buffers[1], 3), want)

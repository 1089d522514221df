"""The smaller integer opcodes real kernels need, on both back ends against plain Python:
predicates to and from a register (P2R/R2P), bit masks (BMSK), clock reads (CS2R, S2R of
SR_CLOCKLO and the global timer) and absolute differences (VABSDIFF, VABSDIFF4)."""
from __future__ import annotations

import random

import pytest
from warpboard.translator.errors import UnsupportedInstruction

from support.listing_kit import (
    HEAD,
    M32,
    SENTINEL,
    assert_rows,
    rows_of,
    run_rows,
    store_outputs,
)


# ================================================================ P2R / R2P
def test_p2r_r2p_every_form(backend):
    """P0-P6 set from the bits of a, then P2R into bytes 0-3 of a register (keeping the bits
    outside the mask), R2P from a byte of another (changing only the predicates of its mask)."""
    threads, n_in = 64, 3
    rng = random.Random(86)
    words = [rng.getrandbits(32) for _ in range(threads * n_in)]
    setp = [s for k in range(7) for s in (f"LOP3.LUT R{30 + k}, R10, {1 << k:#x}, RZ, 0xc0, !PT",
                                          f"ISETP.NE.U32.AND P{k}, PT, R{30 + k}, RZ, PT")]
    body = setp + [
        "P2R R20, PR, RZ, 0x7f", "P2R R21, PR, R11, 0x15", "P2R R22, PR, R11.B1, 0x7f",
        "P2R R23, PR, R11.B3, 0x42",
        "R2P PR, R11.B2, 0x7f", "P2R R24, PR, RZ, 0x7f",
        "R2P PR, R12, 0xa", "P2R R25, PR, RZ, 0x7f",
        "SEL R26, 0x1, RZ, P6",
    ]
    got = run_rows(backend, body, words, n_in, 7, threads, "p2r_r2p")

    def expect(r):
        a, b, c = r
        p = a & 0x7F
        after_b = (b >> 16) & 0x7F
        after_c = (after_b & ~0xA) | (c & 0xA)
        return [p, (b & ~0x15) | (p & 0x15), (b & ~0x7F00) | p << 8, (b & ~(0x42 << 24) & M32) | (p & 0x42) << 24,
                after_b, after_c, after_c >> 6 & 1]
    assert_rows(backend, got, [expect(r) for r in rows_of(words, n_in)])


# ================================================================ BMSK
def bmsk(a: int, b: int, wrap: bool) -> int:
    """PTX's bmsk (.clamp without .W, .wrap with it), from the PTX ISA's definition."""
    a1, b1 = a & 31, b & 31
    mask0 = (M32 << a1) & M32
    total = a1 + b1
    mask1 = (M32 << total) & M32 if total < 32 else 0
    overflow = total >= 32
    if not wrap:
        if a >= 32:
            mask0, overflow = 0, True
        if b >= 32:
            overflow = True
    if overflow:
        mask1 = 0
    elif b1 == 0:
        mask1 = M32
    return mask0 & ~mask1 & M32


def test_bmsk_clamp_and_wrap(backend):
    """BMSK, BMSK.W and UBMSK over positions and widths around 0, 31, 32 and beyond."""
    threads, n_in = 128, 2
    rng = random.Random(7)
    near = [0, 1, 2, 15, 30, 31, 32, 33, 40, 63, 64, 0xFFFFFFFF, 0x80000000, 0x21]
    words = []
    for t in range(threads):
        words += [near[t % len(near)], near[t // len(near) % len(near)]] if t < 100 else \
                 [rng.choice([rng.randrange(40), rng.getrandbits(32)]) for _ in range(2)]
    body = ["BMSK R20, R10, R11", "BMSK.W R21, R10, R11", "BMSK R22, R10, 0x5",
            "R2UR UR4, R10", "R2UR UR5, R11", "UBMSK UR6, UR4, UR5", "UBMSK.W UR7, UR4, UR5",
            "MOV R23, UR6", "MOV R24, UR7"]
    got = run_rows(backend, body, words, n_in, 5, threads, "bmsk")
    want = [[bmsk(a, b, False), bmsk(a, b, True), bmsk(a, 5, False), bmsk(a, b, False), bmsk(a, b, True)]
            for a, b in rows_of(words, n_in)]
    assert_rows(backend, got, want)



# ================================================================ clock reads
def test_clock_counts_the_instructions_a_thread_ran(backend):
    """SR_CLOCKLO is the number of instructions the thread ran before (a waiting instruction
    counts 0), through every reading form; a loop of three instructions run (tid % 4) + 1
    times advances it by three per trip."""
    threads = 64
    body = [
        "CS2R R20, SR_CLOCKLO", "S2R R22, SR_CLOCKLO", "S2R R23, SR_CLOCKHI", "CS2R.32 R24, SR_CLOCKLO",
        "S2UR UR4, SR_CLOCKLO", "MOV R25, UR4",
        "LOP3.LUT R5, R0, 0x3, RZ, 0xc0, !PT", "MOV R26, RZ",
        ".L_x_0:", "ISETP.GE.U32.AND P0, PT, R26, R5, PT", "IADD3 R26, R26, 0x1, RZ", "@!P0 BRA `(.L_x_0)",
        "S2R R27, SR_CLOCKLO", "BAR.SYNC.DEFER_BLOCKING 0x0", "S2R R28, SR_CLOCKLO",
    ]
    run = backend.run(HEAD + body + store_outputs(9), [[0], [SENTINEL] * (threads * 9)], threads=threads,
                      name="clock")
    assert run.outcome == "ok", run.detail

    def expect(t):
        trips = t % 4 + 1
        return [2, 0, 3, 0, 5, 6, trips, 10 + 3 * trips, 11 + 3 * trips]
    assert_rows(backend, rows_of(run.buffers[1], 9), [expect(t) for t in range(threads)])


def test_global_timer_reads_the_same_counter(backend):
    """%globaltimer (CS2R SR_GLOBALTIMERLO, a pair; S2R SR_GLOBALTIMERHI) advances with the
    instructions the thread ran, as the clock does, so a spin with a timeout ends."""
    body = ["CS2R R20, SR_GLOBALTIMERLO", "S2R R22, SR_GLOBALTIMERHI", "S2R R23, SR_CLOCKLO",
            "CS2R R24, SR_GLOBALTIMERLO"]
    run = backend.run(HEAD + body + store_outputs(6), [[0], [SENTINEL] * (32 * 6)], name="globaltimer")
    assert run.outcome == "ok", run.detail
    assert_rows(backend, rows_of(run.buffers[1], 6), [[2, 0, 0, 4, 5, 0]] * 32)



# ================================================================ absolute differences
def test_vabsdiff_and_vabsdiff4(backend):
    """VABSDIFF (signed), VABSDIFF.U32 (|a - b| + c, mod 2^32), VABSDIFF4.U8 (four byte
    differences packed) and VABSDIFF4.U8.ACC (their sum + c), with the extremes: a signed
    difference of 2^32 - 1, bytes 0x00 against 0xff."""
    threads = 32
    rng = random.Random(86)
    rows = [[rng.getrandbits(32) for _ in range(3)] for _ in range(threads)]
    rows[0] = [0x80000000, 0x7FFFFFFF, 5]
    rows[1] = [0x00FF00FF, 0xFF00FF00, 0xFFFFFFFF]
    body = ["VABSDIFF R20, R10, R11, R12", "VABSDIFF.U32 R21, R10, R11, R12",
            "VABSDIFF4.U8 R22, R10, R11, RZ", "VABSDIFF4.U8.ACC R23, R10, R11, R12",
            "VABSDIFF.U32 R24, R10, R11, 0x7"]

    def s32(v):
        return v - (1 << 32) if v >> 31 else v

    def want(a, b, c):
        by = [abs((a >> 8 * k & 0xFF) - (b >> 8 * k & 0xFF)) for k in range(4)]
        return [(abs(s32(a) - s32(b)) + c) & M32, (abs(a - b) + c) & M32,
                sum(d << 8 * k for k, d in enumerate(by)), (sum(by) + c) & M32, (abs(a - b) + 7) & M32]
    got = run_rows(backend, body, [w for r in rows for w in r], 3, 5, threads, "vabsdiff")
    assert_rows(backend, got, [want(*r) for r in rows])
    assert got[0][:2] == [4, 6]             # |-2^31 - (2^31 - 1)| + 5 wraps to 4; unsigned: 1 + 5


def test_vabsdiff4_forms_not_checked_on_a_chip_are_refused(interp):
    for line, why in (("VABSDIFF4.S8 R20, R10, R11, RZ", "other than .U8"),
                      ("VABSDIFF4.U8 R20, R10, R11, R12", "merging a third operand")):
        with pytest.raises(UnsupportedInstruction, match=why):
            run_rows(interp, [line], [0] * 96, 3, 1, 32, "vabsdiff4_refused")

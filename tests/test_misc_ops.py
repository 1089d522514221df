"""Differential tests of the smaller opcodes real kernels need: predicates to and from a
register (P2R/R2P), bit masks (BMSK), convergence-barrier moves (BMOV), clock reads, the
remaining atomic forms (ATOMS.POPC.INC, ATOMS.CAST.SPIN, float atomics), async copies
(LDGSTS) and printf.

Each test is a hand-written listing run on both back ends (the CPU reference interpreter and
the SPIR-V translation on lavapipe, see the ``backend`` fixture); the expected words are
computed here in plain Python, never with the translator's helpers.
"""
from __future__ import annotations

import random
import struct

import pytest

from warpboard.translator.errors import UnsupportedInstruction

from listing_kit import HEAD, M32, SENTINEL, load_inputs, rows_of, store_outputs


def assert_rows(backend, got: list[list[int]], want: list[list[int]]):
    diffs = [f"thread {t} out[{k}]: expected {w:#x}, got {h:#x}"
             for t, (wr, hr) in enumerate(zip(want, got)) for k, (w, h) in enumerate(zip(wr, hr)) if w != h]
    assert not diffs, f"{backend.name}: {len(diffs)} differences:\n" + "\n".join(diffs[:30])


def run_rows(backend, body, words, n_in, n_out, threads, name, **kw):
    run = backend.run(HEAD + load_inputs(n_in) + body + store_outputs(n_out),
                      [words, [SENTINEL] * (threads * n_out)], threads=threads, name=name, **kw)
    assert run.outcome == "ok", run.detail
    return rows_of(run.buffers[1], n_out)


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


# ================================================================ atomics
def f32(x: float) -> int:
    return struct.unpack("<I", struct.pack("<f", x))[0]


def test_float_atomics_on_global_memory(backend):
    """RED/ATOMG .ADD.F32.FTZ.RN: sums exact in any order (so both back ends must agree),
    denormal inputs and memory words flushed; ATOMG returns each lane a distinct old value."""
    threads = 64
    body = [
        "MOV R2, c[0x0][0x160]", "MOV R3, c[0x0][0x164]",
        "LOP3.LUT R4, R0, 0x3, RZ, 0xc0, !PT", "ISETP.EQ.U32.AND P1, PT, R4, 0x3, PT",
        "SEL R4, R4, RZ, !P1",                          # tid % 4, with 3 folded into 0
        "IMAD.WIDE.U32 R8, R4, 0x4, R2",
        f"MOV R5, {f32(1.5):#x}", "RED.E.ADD.F32.FTZ.RN.STRONG.GPU [R8.64], R5",
        "ISETP.NE.U32.AND P0, PT, R0, RZ, PT",
        f"MOV R5, {f32(2.0):#x}", "@!P0 RED.E.ADD.F32.FTZ.RN.STRONG.GPU [R2.64+0xc], R5",
        f"MOV R5, {f32(1.0):#x}", "ATOMG.E.ADD.F32.FTZ.RN.STRONG.GPU PT, R20, [R2.64+0x10], R5",
        "MOV R5, 0x80000001", "RED.E.ADD.F32.FTZ.RN.STRONG.GPU [R2.64+0x14], R5",
    ]
    acc = [0, 0, 0, 0x5, 0, 0, 0, 0]
    run = backend.run(HEAD + body + store_outputs(1), [acc, [SENTINEL] * threads], threads=threads,
                      name="float_atomics")
    assert run.outcome == "ok", run.detail
    groups = [sum(1 for t in range(threads) if (t % 4) % 3 == g) for g in range(3)]
    assert run.buffers[0][:6] == [f32(1.5 * n) for n in groups] + [f32(2.0), f32(64.0), 0], \
        f"{backend.name}: {[hex(w) for w in run.buffers[0]]}"
    assert sorted(run.buffers[1]) == [f32(float(k)) for k in range(threads)], backend.name


SPIN_ADD = [   # ptxas's shared-memory atomicAdd(float *, 0.5f): a compare-and-store loop
    "BSSY B0, `(.L_x_0)",
    ".L_x_1:", "LDS R2, [R8]", "FADD R3, R2, 0.5", "ATOMS.CAST.SPIN R3, [R8], R2, R3",
    "ISETP.EQ.U32.AND P0, PT, R3, 0x1, PT", "@!P0 BRA `(.L_x_1)", "BSYNC B0",
    ".L_x_0:",
]


def test_shared_float_add_by_compare_and_store(backend):
    """ATOMS.CAST.SPIN stores only where the word still holds what the thread read and says
    so (1 or 0): 16 lanes per word adding 0.5 sum to 8.0 whatever the interleaving; also
    ATOMS.POPC.INC.32 (one per lane) and ATOMS.INC."""
    threads = 64
    body = ["LOP3.LUT R8, R0, 0x3, RZ, 0xc0, !PT", "IMAD.SHL.U32 R8, R8, 0x4, RZ"] + SPIN_ADD + [
        "ISETP.NE.U32.AND P1, PT, R0, 0x5, PT", "@P1 ATOMS.POPC.INC.32 RZ, [URZ+0x10]",
        "MOV R9, 0x1000", "ATOMS.INC RZ, [0x14], R9",
        "BAR.SYNC.DEFER_BLOCKING 0x0",
        "LDS R20, [R8]", "MOV R21, R3", "LDS R22, [0x10]", "LDS R23, [0x14]",
    ]
    run = backend.run(HEAD + body + store_outputs(4), [[0], [SENTINEL] * (threads * 4)], threads=threads,
                      name="cast_spin")
    assert run.outcome == "ok", run.detail
    assert_rows(backend, rows_of(run.buffers[1], 4), [[f32(8.0), 1, threads - 1, threads]] * threads)


def test_f64_atomic_add_and_64_bit_compare_and_store(backend):
    """ATOMG.E.ADD.F64.RN and ATOMS.CAST.SPIN.64 on the interpreter; the shader refuses the
    shared-memory one (its shared memory is 32-bit words) with a message naming the instruction
    (the global F64 add runs on devices: cases/atomics/atomics64_global)."""
    threads = 32
    body = [
        "MOV R2, c[0x0][0x160]", "MOV R3, c[0x0][0x164]", "MOV R4, RZ", "MOV R5, 0x3fd00000",   # 0.25
        "ATOMG.E.ADD.F64.RN.STRONG.GPU PT, R6, [R2.64], R4",
        "LOP3.LUT R13, R0, 0x1, RZ, 0xc0, !PT", "IMAD.SHL.U32 R13, R13, 0x8, RZ",
        ".L_x_3:", "LDS.64 R10, [R13]", "IADD3 R14, R10, 0x1, RZ", "MOV R15, R11",
        "ATOMS.CAST.SPIN.64 R14, [R13], R10, R14",
        "ISETP.EQ.U32.AND P0, PT, R14, 0x1, PT", "ISETP.EQ.U32.AND.EX P0, PT, R15, RZ, PT, P0",
        "@!P0 BRA `(.L_x_3)",
        "BAR.SYNC.DEFER_BLOCKING 0x0", "LDS R20, [R13]", "LDS R21, [R13+0x4]",
    ]
    args = (HEAD + body + store_outputs(2), [[0, 0], [SENTINEL] * (threads * 2)])
    if backend.name != "interp":
        with pytest.raises(UnsupportedInstruction, match="64-bit atomic on shared memory in 'ATOMS.CAST.SPIN.64"):
            backend.run(*args, threads=threads, name="atomics64")
        return
    run = backend.run(*args, threads=threads, name="atomics64")
    assert run.outcome == "ok", run.detail
    assert run.buffers[0] == [0, 0x40200000], [hex(w) for w in run.buffers[0]]        # 32 * 0.25 = 8.0
    assert_rows(backend, rows_of(run.buffers[1], 2), [[16, 0]] * threads)


# ================================================================ async copies
def test_ldgsts_copies_global_to_shared(backend):
    """cp.async as nvcc emits it (LDGSTS, LDGDEPBAR, DEPBAR.LE SB0, 0x0, then a barrier):
    every thread copies one word and a quad, then reads its neighbours' words."""
    threads = 32
    rng = random.Random(3)
    words = [rng.getrandbits(32) for _ in range(threads * 5)]
    body = [
        "IMAD.SHL.U32 R9, R0, 0x4, RZ", "IMAD.WIDE.U32 R2, R0, 0x4, c[0x0][0x160]",
        "IMAD.WIDE.U32 R4, R0, 0x10, c[0x0][0x160]", "IADD3 R4, P0, R4, 0x80, RZ", "IADD3.X R5, R5, RZ, RZ, P0, !PT",
        "LDGSTS.E [R9], [R2.64]", "IMAD.SHL.U32 R11, R0, 0x10, RZ",
        "LDGSTS.E.BYPASS.128 [R11+0x80], [R4.64]",
        "LDGDEPBAR", "DEPBAR.LE SB0, 0x0", "BAR.SYNC.DEFER_BLOCKING 0x0",
        "IADD3 R12, R0, 0x1, RZ", "LOP3.LUT R12, R12, 0x1f, RZ, 0xc0, !PT", "IMAD.SHL.U32 R12, R12, 0x4, RZ",
        "LDS R20, [R12]", "LDS.128 R24, [R11+0x80]", "MOV R21, R24", "MOV R22, R27",
    ]
    run = backend.run(HEAD + body + store_outputs(3), [words, [SENTINEL] * (threads * 3)], threads=threads,
                      name="ldgsts")
    assert run.outcome == "ok", run.detail
    want = [[words[(t + 1) % 32], words[32 + 4 * t], words[32 + 4 * t + 3]] for t in range(threads)]
    assert_rows(backend, rows_of(run.buffers[1], 3), want)


# ================================================================ FCHK
def test_division_through_fchk_is_correctly_rounded(backend):
    """nvcc's a / b (MUFU.RCP, FCHK, the fast path, and the full path's subroutine) gives the
    correctly rounded binary32 quotient for edge and random operands. Quotients that are NaN
    are left out (the full path makes its NaN with MUFU.RSQ), and so are denormal divisors
    (MUFU.RCP of a denormal is the float core's)."""
    from dataclasses import replace

    import numpy as np

    from warpboard.harness.case.model import load_case
    case = load_case("cases/realkernels/fdiv_checked.toml", "cases")
    edge = [0, 0x80000000, 1, 0x807FFFFF, 0x00800000, 0x7F7FFFFF, 0x7F800000, 0xFF800000,
            0x3F800000, 0x40400000, 0x5F000000, 0x1F000000, 0x7E800000, 0x00FFFFFF, 0xC0A00000]
    rng = random.Random(11)

    def finite_word():
        w = rng.getrandbits(32)
        return w if 0 < (w >> 23 & 0xFF) < 0xFF else 0x3FC00000
    a = [edge[t % len(edge)] if t < 45 else finite_word() for t in range(64)]
    normal = [w for w in edge if w & 0x7F800000]
    b = [normal[t // 3 % len(normal)] if t < 45 else finite_word() for t in range(64)]

    def quotients():
        with np.errstate(all="ignore"):
            return np.array(a, dtype=np.uint32).view(np.float32) / np.array(b, dtype=np.uint32).view(np.float32)
    b = [0x3F800000 if np.isnan(q) else w for w, q in zip(b, quotients())]
    bufs = (replace(case.buffers[0], init=tuple(a)), replace(case.buffers[1], init=tuple(b)), case.buffers[2])
    try:
        run = backend.run_case(replace(case, buffers=bufs))
    except UnsupportedInstruction as exc:        # the shader translates the NaN path too
        if "MUFU.RSQ" not in str(exc):
            raise
        pytest.skip(f"the full division path needs MUFU.RSQ: {exc}")
    assert run.outcome == "ok", run.detail
    want = [int(w) for w in quotients().view(np.uint32)]
    got = run.buffers[2]
    diffs = [f"{a[t]:#x} / {b[t]:#x}: expected {want[t]:#x}, got {got[t]:#x}" for t in range(64) if got[t] != want[t]]
    assert not diffs, f"{backend.name}:\n" + "\n".join(diffs)


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

"""The atomic forms beyond ATOMG/RED/ATOMS' integer operations (opcodes/test_mem.py), on
both back ends: float atomics on global memory, shared float adds through ATOMS.CAST.SPIN,
binary64 atomics and 64-bit compare-and-store, and async copies (LDGSTS)."""
from __future__ import annotations

import random
import struct

import pytest
from warpboard.translator.errors import UnsupportedInstruction

from support.listing_kit import (
    HEAD,
    SENTINEL,
    assert_rows,
    rows_of,
    store_outputs,
)


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

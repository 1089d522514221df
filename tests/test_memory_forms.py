"""Differential tests of the memory forms beyond global and shared memory: local memory
(LDL/STL), constant banks 1-4, sub-word constant loads, and the small ALU forms around them.

Each test is a hand-written listing run on both back ends (the CPU reference interpreter and
the SPIR-V translation on lavapipe, see the ``backend`` fixture); the expected words are
computed here in plain Python, never with the translator's helpers.
"""
from __future__ import annotations

import random

from harness.cases import Param

M32 = 0xFFFFFFFF
SENTINEL = 0xA5A5A5A5
HEAD = ["IMAD.MOV.U32 R1, RZ, RZ, c[0x0][0x28]", "S2R R0, SR_TID.X"]


def load_inputs(n_in: int) -> list[str]:
    """Thread t's n_in input words into R10.., and R6:R7 = its output row's address."""
    return [f"IMAD.WIDE.U32 R2, R0, {4 * n_in:#x}, c[0x0][0x160]",
            *(f"LDG.E R{10 + j}, [R2.64+{4 * j:#x}]" for j in range(n_in))]


def store_outputs(n_out: int, first: int = 20) -> list[str]:
    return [f"IMAD.WIDE.U32 R6, R0, {4 * n_out:#x}, c[0x0][0x168]",
            *(f"STG.E [R6.64+{4 * k:#x}], R{first + k}" for k in range(n_out)), "EXIT"]


def rows_of(words: list[int], n: int) -> list[list[int]]:
    return [words[t * n:(t + 1) * n] for t in range(len(words) // n)]


def sext(v: int, bits: int) -> int:
    v &= (1 << bits) - 1
    return (v - (1 << bits)) & M32 if v >> (bits - 1) else v


def assert_rows(backend, got: list[list[int]], want: list[list[int]]):
    diffs = [f"thread {t} out[{k}]: expected {w:#x}, got {h:#x}"
             for t, (wr, hr) in enumerate(zip(want, got)) for k, (w, h) in enumerate(zip(wr, hr)) if w != h]
    assert not diffs, f"{backend.name}: {len(diffs)} differences:\n" + "\n".join(diffs[:30])


# ================================================================ local memory
def test_local_memory_every_width(backend):
    """STL/LDL of bytes, halfwords, words, pairs and quads in a 0x40-byte frame, read back
    with sign and zero extension and through a per-thread index register."""
    threads, n_in = 64, 6
    rng = random.Random(15)
    words = [rng.getrandbits(32) for _ in range(threads * n_in)]
    for t in range(threads):
        words[t * n_in + 5] = t % 8               # the index word: which word to read back
    body = HEAD + ["IADD3 R1, R1, -0x40, RZ"] + load_inputs(n_in) + [
        "STL.128 [R1], R10", "STL.64 [R1+0x10], R14",
        "STL.U8 [R1+0x18], R10", "STL.U8 [R1+0x19], R11", "STL.U16 [R1+0x1a], R12",
        "STL [R1+0x1c], R13", "STL.64 [R1+0x20], R10", "STL.128 [R1+0x30], R12",
        "LDL.U8 R20, [R1+0x18]", "LDL.S8 R21, [R1+0x19]", "LDL.U16 R22, [R1+0x1a]",
        "LDL.S16 R23, [R1+0x1a]", "LDL.S8 R24, [R1+0x3]", "LDL.U16 R25, [R1+0x6]",
        "LDL.64 R26, [R1+0x8]", "LDL.128 R28, [R1+0x30]",
        "IMAD R8, R15, 0x4, R1", "LDL R32, [R8]",      # word R15 of the frame, by address
        "LDL R33, [R1+0x1c]",
    ] + store_outputs(14)
    run = backend.run(body, [words, [SENTINEL] * (threads * 14)], threads=threads, name="local_widths")
    assert run.outcome == "ok", run.detail

    def expect(r):
        a, b, c, d, e, idx = r
        frame = [a, b, c, d, e, idx, (a & 0xFF) | (b & 0xFF) << 8 | (c & 0xFFFF) << 16, d, a, b, 0, 0, c, d, e, idx]
        return [a & 0xFF, sext(b, 8), c & 0xFFFF, sext(c, 16), sext(a >> 24, 8), b >> 16,
                c, d, c, d, e, idx, frame[idx], d]
    assert_rows(backend, rows_of(run.buffers[1], 14), [expect(r) for r in rows_of(words, n_in)])


def test_local_memory_outside_the_frame_faults(backend):
    """An access beyond the frame the prologue took is a FAULT, as outside any buffer."""
    body = HEAD + ["IADD3 R1, R1, -0x10, RZ", "STL [R1+0x10], R0", "EXIT"]
    run = backend.run(body, [[0], [0]], threads=32, name="local_fault")
    assert run.outcome == "fault", (run.outcome, run.detail)
    assert run.detail


def test_local_memory_is_per_thread(backend):
    """Every thread writes the same local address; each reads back its own value."""
    body = HEAD + ["IADD3 R1, R1, -0x20, RZ", "STL [R1+0x8], R0", "IMAD R9, R0, 0x3, RZ",
                   "STL.U16 [R1+0xe], R9", "LDL R20, [R1+0x8]", "LDL R21, [R1+0xc]"] + store_outputs(2)
    run = backend.run(body, [[0], [SENTINEL] * 128], threads=64, name="local_own")
    assert run.outcome == "ok", run.detail
    assert_rows(backend, rows_of(run.buffers[1], 2), [[t, (3 * t & 0xFFFF) << 16] for t in range(64)])

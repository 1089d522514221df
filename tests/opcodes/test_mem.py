"""Memory opcodes on both back ends, against plain Python: LDG/STG/LDS/STS at every width,
shared memory across warps with a barrier, ATOMG/RED/ATOMS per thread and contended, and the
FAULT a stray access ends as (naming pc, thread and address). See opcodes/test_alu.py for how
these differential tests are built."""
from __future__ import annotations

import random
import struct

import pytest
from warpboard.translator import abi

from support.tables import (
    M32,
    OUT,
    SENTINEL,
    check,
    framed,
    inputs,
    s32,
    table_test,
    thread_table,
)


# ================================================================ global and shared memory
def words_of(data: bytes) -> list[int]:
    return list(struct.unpack(f"<{len(data) // 4}I", data))


def test_ldg_widths(backend):
    rng = random.Random(12)
    data = bytes(rng.getrandbits(8) for _ in range(512))
    data = b"\x80\x7f\xff\x00" + data[4:]                        # sign-boundary bytes first
    n_out = 13
    body = ["S2R R0, SR_TID.X", f"IMAD.WIDE.U32 R6, R0, {4 * n_out:#x}, c[0x0][0x168]",
            "IMAD.WIDE.U32 R2, R0, 0x1, c[0x0][0x160]",
            "LDG.E.U8 R20, [R2.64]", "LDG.E.S8 R21, [R2.64+0x3]",
            "IMAD.WIDE.U32 R4, R0, 0x2, c[0x0][0x160]",
            "LDG.E.U16 R22, [R4.64]", "LDG.E.S16 R23, [R4.64+0x2]",
            "IMAD.WIDE.U32 R8, R0, 0x8, c[0x0][0x160]", "LDG.E.64 R24, [R8.64]",
            "IMAD.WIDE.U32 R10, R0, 0x10, c[0x0][0x160]", "LDG.E.128 R26, [R10.64]",
            "LDG.E R30, [R10.64+0xc]", "LDG.E.S16 R31, [R10.64+0xe]",
            "LDG.E.SYS R32, [R10.64+0x4]",
            "IADD3 R12, P0, R10, 0x10, RZ", "IADD3.X R13, RZ, R11, RZ, P0, !PT",
            "LDG.E R33, [R12.64+-0xc]", "ULDC.64 UR4, c[0x0][0x118]", "LDG.E R34, desc[UR4][R10.64+0x8]",
            "LDG.E R35, [R10+0xc]", "LD.E R36, [R10.64]"]
    n_out = 17
    body[1] = f"IMAD.WIDE.U32 R6, R0, {4 * n_out:#x}, c[0x0][0x168]"
    body += [f"STG.E [R6.64+{4 * k:#x}], R{OUT + k}" for k in range(n_out)] + ["EXIT"]
    run = backend.run(body, [words_of(data), [SENTINEL] * (32 * n_out)], name="ldg")
    assert run.outcome == "ok", run.detail

    def expect(row, t):
        u8 = lambda o: data[o]                                       # noqa: E731
        s8 = lambda o: data[o] - 256 if data[o] & 0x80 else data[o]  # noqa: E731
        u16 = lambda o: int.from_bytes(data[o:o + 2], "little")      # noqa: E731
        s16 = lambda o: int.from_bytes(data[o:o + 2], "little", signed=True)  # noqa: E731
        w = lambda o: int.from_bytes(data[o:o + 4], "little")        # noqa: E731
        return [u8(t), s8(t + 3), u16(2 * t), s16(2 * t + 2), w(8 * t), w(8 * t + 4),
                w(16 * t), w(16 * t + 4), w(16 * t + 8), w(16 * t + 12), w(16 * t + 12), s16(16 * t + 14),
                w(16 * t + 4), w(16 * t + 4), w(16 * t + 8), w(16 * t + 12), w(16 * t)]
    got = [run.buffers[1][t * n_out:(t + 1) * n_out] for t in range(32)]
    check(backend, got, [[t] for t in range(32)], expect)


def test_stg_widths(backend):
    rows = inputs(32, 4, seed=13)
    body = framed([], 4, 0)[:-1]          # the loads only
    body += ["IMAD.WIDE.U32 R2, R0, 0x1, c[0x0][0x168]", "STG.E.U8 [R2.64], R10",
             "IMAD.WIDE.U32 R2, R0, 0x2, c[0x0][0x170]", "STG.E.U16 [R2.64], R11",
             "IMAD.WIDE.U32 R2, R0, 0x8, c[0x0][0x178]", "STG.E.64 [R2.64], R10",
             "IMAD.WIDE.U32 R2, R0, 0x10, c[0x0][0x180]", "STG.E.128 [R2.64], R10",
             "IMAD.WIDE.U32 R2, R0, 0x4, c[0x0][0x188]", "STG.E.S8 [R2.64+0x1], R12",
             "STG.E.S16 [R2.64+0x80], R13", "EXIT"]
    sizes = [8, 16, 64, 128, 64]                    # words: one byte, half, pair, quad, mixed per thread
    run = backend.run(body, [[w for r in rows for w in r]] + [[SENTINEL] * n for n in sizes], name="stg")
    assert run.outcome == "ok", run.detail
    mem = [bytearray(struct.pack(f"<{n}I", *([SENTINEL] * n))) for n in sizes]
    for t, (a, b_, c, d) in enumerate(rows):
        mem[0][t] = a & 0xFF
        mem[1][2 * t:2 * t + 2] = (b_ & 0xFFFF).to_bytes(2, "little")
        mem[2][8 * t:8 * t + 8] = struct.pack("<2I", a, b_)
        mem[3][16 * t:16 * t + 16] = struct.pack("<4I", a, b_, c, d)
        mem[4][4 * t + 1] = c & 0xFF
        mem[4][4 * t + 0x80:4 * t + 0x82] = (d & 0xFFFF).to_bytes(2, "little")
    for k, name in enumerate(["U8", "U16", "64", "128", "S8/S16"]):
        want, have = words_of(bytes(mem[k])), run.buffers[k + 1]
        bad = [f"word {i}: expected {w:#x}, got {h:#x}" for i, (w, h) in enumerate(zip(want, have)) if w != h]
        assert not bad, f"{backend.name}: STG.E.{name}:\n" + "\n".join(bad[:20])


def test_lds_sts_widths(backend):
    """Each thread stores then loads back its own shared words at every width (no barrier needed)."""
    rows = inputs(32, 4, seed=14)
    body = ["IMAD.SHL.U32 R8, R0, 0x2, RZ", "IMAD.SHL.U32 R9, R0, 0x8, RZ", "IMAD.SHL.U32 R5, R0, 0x10, RZ",
            "STS [R0.X4], R10", "STS.U8 [R0+0x80], R11", "STS.U16 [R8+0xc0], R12",
            "STS.64 [R9+0x100], R12", "STS.128 [R5+0x200], R10", "STS [R0.X4+0x400], R13",
            "LDS R20, [R0.X4]", "LDS.U8 R21, [R0+0x80]", "LDS.S8 R22, [R0+0x80]",
            "LDS.U16 R23, [R8+0xc0]", "LDS.S16 R24, [R8+0xc0]", "LDS.64 R25, [R9+0x100]",
            "LDS.128 R27, [R5+0x200]", "LDS R31, [R0.X4+0x400]", "LDS.U8 R32, [R8+0xc1]"]

    def expect(r, t):
        a, b_, c, d = r
        sx8 = (b_ & 0xFF) - 256 if b_ & 0x80 else b_ & 0xFF
        sx16 = (c & 0xFFFF) - 0x10000 if c & 0x8000 else c & 0xFFFF
        return [a, b_ & 0xFF, sx8, c & 0xFFFF, sx16, c, d, a, b_, c, d, d, c >> 8 & 0xFF]
    table_test(backend, body, rows, 13, expect, "lds_sts", shared=2048)


def test_shared_memory_across_warps_with_a_barrier(backend):
    rows = inputs(64, 1, seed=15)
    body = ["STS [R0.X4+0x100], R10", "BAR.SYNC.DEFER_BLOCKING 0x0",
            "IADD3 R8, R0, 0x21, RZ", "LOP3.LUT R8, R8, 0x3f, RZ, 0xc0, !PT",       # (t + 33) % 64
            "LDS R20, [R8.X4+0x100]", "IMAD.SHL.U32 R9, R8, 0x4, RZ", "LDS.U16 R21, [R9+0x102]"]
    run_rows = thread_table(backend, body, rows, 2, "bar_lds")
    check(backend, run_rows, rows, lambda r, t: [rows[(t + 33) % 64][0], rows[(t + 33) % 64][0] >> 16])


# ================================================================ atomics
ATOMIC_OPS = [  # (SASS operation, Python update of old by operand v, compare c)
    ("ADD", lambda o, v, c: o + v), ("MIN", lambda o, v, c: min(o, v)), ("MAX", lambda o, v, c: max(o, v)),
    ("MIN.S32", lambda o, v, c: o if s32(o) <= s32(v) else v),
    ("MAX.S32", lambda o, v, c: o if s32(o) >= s32(v) else v),
    ("AND", lambda o, v, c: o & v), ("OR", lambda o, v, c: o | v), ("XOR", lambda o, v, c: o ^ v),
    ("EXCH", lambda o, v, c: v),
]


def atomic_rows(seed: int) -> list[list[int]]:
    """[initial word, operand, a compare value that usually differs, CAS new value] per thread."""
    rows = inputs(32, 4, seed=seed)
    for t in range(0, 32, 4):
        rows[t][2] = rows[t][0]                     # some failing CAS compares are equal after all
    return rows


def final_words(r: list[int]) -> list[int]:
    a, v, c, new = r
    words = [f(a, v, c) & M32 for _, f in ATOMIC_OPS]
    return words + [new, new if c == a else a]


def test_atomg_and_red_per_thread(backend):
    rows = atomic_rows(16)
    n_ret = len(ATOMIC_OPS) + 3
    body = ["IMAD.WIDE.U32 R8, R0, 0x40, c[0x0][0x170]"]
    body += [f"ATOMG.E.{op}.STRONG.GPU PT, R{OUT + k}, [R8.64+{4 * k:#x}], R11" for k, (op, _) in enumerate(ATOMIC_OPS)]
    k = len(ATOMIC_OPS)
    body += [f"ATOMG.E.CAS.STRONG.GPU PT, R{OUT + k}, [R8.64+{4 * k:#x}], R10, R13",         # succeeds
             f"ATOMG.E.CAS.STRONG.GPU PT, R{OUT + k + 1}, [R8.64+{4 * k + 4:#x}], R12, R13",  # fails unless c == a
             f"ATOM.E.ADD.STRONG.GPU PT, R{OUT + k + 2}, [R8.64+{4 * k + 8:#x}], R11",
             f"RED.E.ADD.STRONG.GPU [R8.64+{4 * k + 12:#x}], R11",
             f"RED.E.MIN.S32.STRONG.GPU [R8.64+{4 * k + 16:#x}], R11",
             f"RED.E.XOR.STRONG.GPU [R8.64+{4 * k + 20:#x}], R11"]
    mem = [w for r in rows for w in [r[0]] * 16]
    run = backend.run(framed(body, 4, n_ret), [[w for r in rows for w in r], [SENTINEL] * (32 * n_ret), mem],
                      name="atomg")
    assert run.outcome == "ok", run.detail
    got = [run.buffers[1][t * n_ret:(t + 1) * n_ret] for t in range(32)]
    check(backend, got, rows, lambda r, t: [r[0]] * n_ret, [f"{op} returns" for op, _ in ATOMIC_OPS] +
          ["CAS returns", "failing CAS returns", "ATOM returns"])
    after = [run.buffers[2][t * 16:t * 16 + 15] for t in range(32)]

    def final(r, t):
        a, v = r[0], r[1]
        return final_words(r) + [a + v, a + v, a if s32(a) <= s32(v) else v, a ^ v]
    check(backend, after, rows, final, [f"{op} leaves" for op, _ in ATOMIC_OPS] +
          ["CAS leaves", "failing CAS leaves", "ATOM leaves", "RED.ADD leaves", "RED.MIN.S32 leaves",
           "RED.XOR leaves"])


def test_atoms_per_thread(backend):
    rows = atomic_rows(17)
    n = len(ATOMIC_OPS) + 2
    body = ["IMAD.SHL.U32 R8, R0, 0x40, RZ"]
    body += [f"STS [R8+{4 * k:#x}], R10" for k in range(n)]
    body += [f"ATOMS.{op} R{OUT + k}, [R8+{4 * k:#x}], R11" for k, (op, _) in enumerate(ATOMIC_OPS)]
    k = len(ATOMIC_OPS)
    body += [f"ATOMS.CAS R{OUT + k}, [R8+{4 * k:#x}], R10, R13",
             f"ATOMS.CAS R{OUT + k + 1}, [R8+{4 * k + 4:#x}], R12, R13"]
    body += [f"LDS R{OUT + n + j}, [R8+{4 * j:#x}]" for j in range(n)]
    labels = [f"{op} returns" for op, _ in ATOMIC_OPS] + ["CAS returns", "failing CAS returns"]
    labels += [label.replace("returns", "leaves") for label in labels]
    table_test(backend, body, rows, 2 * n, lambda r, t: [r[0]] * n + final_words(r), "atoms", labels,
               shared=2048)


def test_contended_atomics(backend):
    """64 threads on one word: the old values are a permutation; CAS has one winner."""
    body = ["S2R R0, SR_TID.X", "IMAD.WIDE.U32 R6, R0, 0x10, c[0x0][0x168]",
            "MOV R8, c[0x0][0x160]", "MOV R9, c[0x0][0x164]", "IADD3 R4, R0, 0x1, RZ", "MOV R5, 0x1",
            "ISETP.NE.AND P0, PT, R0, RZ, PT", "@!P0 STS [RZ], RZ", "BAR.SYNC.DEFER_BLOCKING 0x0",
            "ATOMG.E.ADD.STRONG.GPU PT, R20, [R8.64], R5",
            "RED.E.ADD.STRONG.GPU [R8.64+0x4], R0",
            "ATOMG.E.CAS.STRONG.GPU PT, R21, [R8.64+0x8], RZ, R4",
            "ATOMS.ADD R22, [RZ], R5", "BAR.SYNC.DEFER_BLOCKING 0x0", "LDS R23, [RZ]"]
    body += [f"STG.E [R6.64+{4 * k:#x}], R{OUT + k}" for k in range(4)] + ["EXIT"]
    run = backend.run(body, [[100, 1000, 0, 0], [SENTINEL] * 256], threads=64, name="contended")
    assert run.outcome == "ok", run.detail
    rows = [run.buffers[1][4 * t:4 * t + 4] for t in range(64)]
    assert sorted(r[0] for r in rows) == list(range(100, 164)), backend.name
    assert run.buffers[0][:2] == [164, 1000 + sum(range(64))], backend.name
    winners = [t for t, r in enumerate(rows) if r[1] == 0]
    assert len(winners) == 1, f"{backend.name}: CAS winners {winners}"
    assert all(r[1] == winners[0] + 1 for t, r in enumerate(rows) if t != winners[0]), backend.name
    assert run.buffers[0][2] == winners[0] + 1, backend.name
    assert sorted(r[2] for r in rows) == list(range(64)), backend.name
    assert {r[3] for r in rows} == {64}, backend.name


def test_atomic_inc_dec(backend):
    """INC/DEC wrap at the operand (CUDA atomicInc/atomicDec); the emitter loops on compare-and-swap."""
    rows = inputs(32, 2, seed=18, columns={0: [0, 1, 5, 6, 7, 0xFFFFFFFF, 0, 3] * 4, 1: [5, 5, 5, 5, 5, 5, 0, 0] * 4})
    body = ["IMAD.WIDE.U32 R8, R0, 0x8, c[0x0][0x170]",
            "ATOMG.E.INC.STRONG.GPU PT, R20, [R8.64], R11", "ATOMG.E.DEC.STRONG.GPU PT, R21, [R8.64+0x4], R11"]
    lines = framed(body, 2, 2)
    mem = [w for r in rows for w in (r[0], r[0])]
    run = backend.run(lines, [[w for r in rows for w in r], [SENTINEL] * 64, mem], name="inc_dec")
    assert run.outcome == "ok", run.detail
    got = [run.buffers[2][2 * t:2 * t + 2] for t in range(32)]

    def expect(r, t):
        old, v = r
        return [0 if old >= v else old + 1, v if old == 0 or old > v else old - 1]
    check(backend, got, rows, expect, ["INC leaves", "DEC leaves"])


# ================================================================ faults
def fault_listing(access: list[str]) -> list[str]:
    return ["S2R R0, SR_TID.X", "IMAD.WIDE.U32 R2, R0, 0x4, c[0x0][0x160]",
            "ISETP.NE.AND P0, PT, R0, 0x5, PT", *access, "STG.E [R2.64], R4", "EXIT"]


@pytest.mark.parametrize("kind, access, pc, address", [
    ("global load past the end", ["@!P0 IADD3 R2, R2, 0x100, RZ", "LDG.E R4, [R2.64]"], 0x40,
     abi.buffer_address(0) + 0x114),
    ("global store outside every buffer", ["@!P0 IADD3 R3, R3, 0x10, RZ", "MOV R4, 0x1", "STG.E [R2.64+0x8], R4"],
     0x50, abi.buffer_address(0) + (0x10 << 32) + 0x1C),
    ("shared load past the end", ["SEL R5, RZ, 0x400, P0", "LDS R4, [R5+0x4]"], 0x40, 0x404),
    ("shared store past the end", ["SEL R5, RZ, 0x3fe, P0", "STS.U16 [R5+0x2], R0"], 0x40, 0x400),
])
def test_fault_names_pc_and_thread(backend, kind, access, pc, address):
    """Only thread 5 strays; both back ends report FAULT with its pc, its thread and the address."""
    lines = fault_listing(access)
    run = backend.run(lines, [list(range(32))], shared=1024, name="fault")
    line = pc // 16 + 1                       # one line per instruction, no labels
    assert run.outcome == "fault", f"{backend.name}: {kind}: {run.outcome} {run.detail}"
    assert run.detail.startswith("thread 5 ("), run.detail
    assert "warp 0 lane 5" in run.detail, run.detail
    assert f"at pc {pc:#06x} (fault.sass:{line}" in run.detail, run.detail
    assert f"at {address:#x} outside every buffer" in run.detail, run.detail


def test_a_thread_that_strays_twice_in_a_block_reports_its_first_fault(backend):
    """The shader notes a fault where it happens and records it after the step: the first
    stray access of the thread is the one reported, not the last."""
    lines = fault_listing(["@!P0 IADD3 R2, R2, 0x100, RZ", "LDG.E R4, [R2.64]", "LDG.E R6, [R2.64+0x40]"])
    run = backend.run(lines, [list(range(32))], shared=1024, name="fault")
    assert run.outcome == "fault", run.detail
    assert run.detail.startswith("thread 5 ("), run.detail
    assert "at pc 0x0040 (fault.sass:5" in run.detail, run.detail
    assert f"at {abi.buffer_address(0) + 0x114:#x} outside every buffer" in run.detail, run.detail


def test_last_word_is_in_bounds(backend):
    lines = ["S2R R0, SR_TID.X", "MOV R2, c[0x0][0x160]", "MOV R3, c[0x0][0x164]", "LDG.E R4, [R2.64+0x7c]",
             "LDS R5, [0x3fc]", "LDG.E.U16 R6, [R2.64+0x7e]", "IADD3 R4, R4, R5, R6", "STG.E [R2.64], R4", "EXIT"]
    run = backend.run(lines, [list(range(32))], shared=1024, name="bounds")
    assert run.outcome == "ok", run.detail

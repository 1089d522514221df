"""Differential tests of the opcode table's semantics, one opcode group at a time.

Each test is a tiny hand-written listing: every thread loads its own inputs (edge values 0,
1, 0x7fffffff, 0x80000000, 0xffffffff and seeded random words), runs a few instructions and
stores its results. The expected words are computed here with plain Python arithmetic (never
with the interpreter's helpers), and the listing runs on both back ends: the CPU reference
interpreter and the SPIR-V translation on lavapipe. Both must equal the expectation.

The ``backend`` fixture (tests/conftest.py) gives both back ends; the lavapipe half skips when
there is no lavapipe Vulkan device, and one Device serves the module.
"""
from __future__ import annotations

import random
import struct

import pytest

from warpboard.harness.case.model import Param
from warpboard.translator import abi

M32, M64 = 0xFFFFFFFF, 0xFFFFFFFFFFFFFFFF
EDGE = [0, 1, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF]
MORE = [2, 0xFFFFFFFE, 0x80000001, 0x7FFFFFFE, 0x12345678, 0xDEADBEEF, 0x0000FFFF, 0xFFFF0000]
IN, OUT = 10, 20                 # inputs arrive in R10.., results leave from R20..
SENTINEL = 0xA5A5A5A5            # what an output word holds if nothing was stored there


# ---------------------------------------------------------------- plain-Python arithmetic
def s32(v: int) -> int:
    v &= M32
    return v - (1 << 32) if v & 0x80000000 else v


def s64(v: int) -> int:
    v &= M64
    return v - (1 << 64) if v >> 63 else v


def b(v) -> int:
    """A predicate as the word the kernels store for it (SEL Rd, 0x1, RZ, P)."""
    return 1 if v else 0


def inputs(threads: int, n: int, seed: int, columns: dict[int, list[int]] | None = None) -> list[list[int]]:
    """Per-thread input words: the first threads take every pair of edge values (for the first
    two inputs), later ones random words with edge and near-edge values mixed in. ``columns``
    fixes input j of the first threads to a given list."""
    rng = random.Random(seed)
    pool = EDGE + MORE
    rows = []
    for t in range(threads):
        row = []
        for j in range(n):
            if t < 25 and j < 2:
                row.append(EDGE[t % 5] if j == 0 else EDGE[t // 5])
            elif t < 25:
                row.append(EDGE[(t * (j + 2)) % 5])
            elif rng.random() < 0.3:
                row.append(rng.choice(pool))
            else:
                row.append(rng.getrandbits(32))
        rows.append(row)
    for j, col in (columns or {}).items():
        for t, v in enumerate(col[:threads]):
            rows[t][j] = v & M32
    return rows


# ---------------------------------------------------------------- kernels around a body
def framed(body: list[str], n_in: int, n_out: int, *, in_stride: int | None = None) -> list[str]:
    """The usual kernel: thread t loads n_in words of ``in`` into R10.. and after ``body``
    stores R20..R20+n_out-1 to its n_out words of ``out``."""
    stride = in_stride if in_stride is not None else 4 * n_in
    head = ["S2R R0, SR_TID.X", "S2R R1, SR_CTAID.X", "IMAD R0, R1, c[0x0][0x0], R0",
            f"IMAD.WIDE.U32 R2, R0, {stride:#x}, c[0x0][0x160]",
            f"IMAD.WIDE.U32 R6, R0, {4 * n_out:#x}, c[0x0][0x168]"]
    head += [f"LDG.E R{IN + j}, [R2.64+{4 * j:#x}]" for j in range(n_in)]
    tail = [f"STG.E [R6.64+{4 * k:#x}], R{OUT + k}" for k in range(n_out)]
    return head + body + tail + ["EXIT"]


def thread_table(backend, body: list[str], rows: list[list[int]], n_out: int, name: str, **kw) -> list[list[int]]:
    """Run ``framed(body)`` on one input row per thread; the output rows, per thread."""
    threads = len(rows)
    n_in = len(rows[0])
    run = backend.run(framed(body, n_in, n_out), [[w for r in rows for w in r], [SENTINEL] * (threads * n_out)],
                      threads=threads, name=name, **kw)
    assert run.outcome == "ok", f"{backend.name}: {run.outcome}: {run.detail}"
    out = run.buffers[1]
    return [out[t * n_out:(t + 1) * n_out] for t in range(threads)]


def check(backend, got: list[list[int]], rows: list[list[int]], expect, labels: list[str] | None = None):
    """Compare every thread's outputs with ``expect(row, t)``; list every difference."""
    diffs = []
    for t, (row, have) in enumerate(zip(rows, got)):
        want = [w & M32 for w in expect(row, t)]
        assert len(want) == len(have), f"the expectation gives {len(want)} words for {len(have)} outputs"
        for k, (w, h) in enumerate(zip(want, have)):
            if w != h:
                what = labels[k] if labels else f"out[{k}]"
                diffs.append(f"thread {t} {what} inputs ({', '.join(f'{v:#x}' for v in row)}): "
                             f"expected {w:#x}, got {h:#x}")
    assert not diffs, f"{backend.name}: {len(diffs)} differences:\n" + "\n".join(diffs[:40])


def table_test(backend, body, rows, n_out, expect, name, labels=None, **kw):
    got = thread_table(backend, body, rows, n_out, name, **kw)
    check(backend, got, rows, expect, labels)


def sel(p: str, k: int) -> str:
    """Store predicate ``p`` as 0/1 in output register k."""
    return f"SEL R{OUT + k}, 0x1, RZ, {p}"


# ================================================================ moves, constants, special registers
def test_moves_constants_special_registers(backend):
    """S2R/S2UR/CS2R/MOV/UMOV/R2UR/ULDC/LDC and constant bank 0, on two blocks of 8x2x2."""
    n_out = 24
    body = [
        "S2R R10, SR_TID.X", "S2R R11, SR_TID.Y", "S2R R12, SR_TID.Z", "S2R R13, SR_CTAID.X",
        # linear index = ctaid * 32 + (z * 2 + y) * 8 + x, from the special registers
        "IMAD R0, R12, c[0x0][0x4], R11", "IMAD R0, R0, c[0x0][0x0], R10", "IMAD R0, R13, 0x20, R0",
        f"IMAD.WIDE.U32 R6, R0, {4 * n_out:#x}, c[0x0][0x160]",
        "IMAD.MOV.U32 R20, RZ, RZ, R10", "MOV R21, R11", "MOV R22, R12", "MOV R23, R13",
        "S2R R24, SR_LANEID", "S2R R25, SR_EQMASK", "S2R R26, SR_LTMASK", "S2R R27, SR_LEMASK",
        "S2R R28, SR_GTMASK", "S2R R29, SR_GEMASK",
        "MOV R30, c[0x0][0x0]", "MOV R31, c[0x0][0x4]", "MOV R32, c[0x0][0x8]", "MOV R33, c[0x0][0xc]",
        "IMAD.MOV.U32 R34, RZ, RZ, c[0x0][0x28]",
        "MOV R35, 0x12345678", "MOV R36, 0x1", "MOV R37, 0x2", "CS2R R36, SRZ",          # R36, R37 = 0
        "ULDC UR4, c[0x0][0x168]", "ULDC.64 UR6, c[0x0][0x170]", "MOV R38, UR4", "IMAD.U32 R39, RZ, RZ, UR7",
        "UMOV UR8, 0xabcdef01", "UIADD3 UR9, UR8, 0x1, URZ", "MOV R40, UR9",
        "R2UR UR10, R24", "S2UR UR11, SR_CTAID.X", "UIADD3 UR12, UR10, UR11, URZ", "MOV R41, UR12",
        "LOP3.LUT R8, R24, 0x1, RZ, 0xc0, !PT", "IMAD.SHL.U32 R8, R8, 0x8, RZ",       # 0 or 8
        "LDC R42, c[0x0][R8+0x168]",                       # the u32 parameter or the u64's low word
        "IMAD.MOV R43, RZ, RZ, -R24",
    ]
    tail = [f"STG.E [R6.64+{4 * k:#x}], R{OUT + k}" for k in range(n_out)] + ["EXIT"]
    params = [Param("buffer", "in"), Param("u32", 0xCAFEF00D), Param("u64", 0x1122334455667788)]
    run = backend.run(body + tail, [[SENTINEL] * (64 * n_out)], grid=2, block=(8, 2, 2), params=params,
                      name="moves")
    assert run.outcome == "ok", run.detail
    rows = [[t] for t in range(64)]
    got = [run.buffers[0][t * n_out:(t + 1) * n_out] for t in range(64)]

    def expect(row, t):
        cta, local = divmod(t, 32)
        x, y, z = local % 8, local // 8 % 2, local // 16
        lane = local % 32
        return [x, y, z, cta, lane, 1 << lane, (1 << lane) - 1, (2 << lane) - 1,
                M32 & ~((2 << lane) - 1), M32 & ~((1 << lane) - 1), 8, 2, 2, 2, abi.STACK_TOP, 0x12345678,
                0, 0, 0xCAFEF00D, 0x11223344, 0xABCDEF02, lane + cta,
                0xCAFEF00D if lane % 2 == 0 else 0x55667788, -lane]
    check(backend, got, rows, expect)


# ================================================================ integer multiply-add
def test_imad_variants(backend):
    rows = inputs(64, 5, seed=1, columns={4: list(range(64))})
    body = [
        "LOP3.LUT P0, RZ, R14, 0x1, RZ, 0xc0, !PT",        # carry-in: bit 0 of the fifth input
        "IMAD R20, R10, R11, R12",
        "IMAD.MOV.U32 R21, RZ, RZ, R10",
        "IMAD.MOV R22, RZ, RZ, -R10",
        "IMAD.U32 R23, R10, R11, R12",
        "IMAD.WIDE R24, R10, R11, R12",                    # R24:R25 = s(a)*s(b) + (R13:R12)
        "IMAD.WIDE.U32 R26, R10, R11, R12",
        "IMAD.HI R28, R10, R11, R12",                      # hi32(s(a)*s(b) + (R13:R12))
        "IMAD.HI.U32 R29, R10, R11, R12",
        "IMAD.IADD R30, R10, 0x1, R11",
        "IMAD.SHL.U32 R31, R10, 0x10, RZ",
        "IMAD.X R32, R10, R11, R12, P0",
        "IMAD R33, R10, -0x3, R11",
        "IMAD R34, R10, 0x7, -R11",
        "IMAD.WIDE.U32 R35, P1, R10, R11, R12",            # R35:R36 and the carry out of bit 63
        "SEL R37, 0x1, RZ, P1",
        "IMAD.WIDE.U32.X R38, R10, R11, R12, P0",          # R38:R39 with a carry in
        "IMAD R40, R10, c[0x0][0x0], R11",
        "IMAD.WIDE R41, R10, 0x4, R12",                    # R41:R42: the index-to-pointer form
        "IMAD.X R43, RZ, RZ, R11, P0",
    ]
    labels = ["IMAD", "IMAD.MOV.U32", "IMAD.MOV -a", "IMAD.U32", "WIDE lo", "WIDE hi", "WIDE.U32 lo",
              "WIDE.U32 hi", "HI", "HI.U32", "IADD", "SHL", "X", "imm -3", "neg c", "WIDE.U32 P lo",
              "WIDE.U32 P hi", "carry out", "WIDE.U32.X lo", "WIDE.U32.X hi", "cbank", "WIDE imm lo",
              "WIDE imm hi", "X RZ"]

    def expect(r, t):
        a, b_, c, ch, d = r
        c64, p0 = c | ch << 32, d & 1
        wide = (s32(a) * s32(b_) + c64) & M64
        wideu = a * b_ + c64
        wide4 = (s32(a) * 4 + c64) & M64
        return [a * b_ + c, a, -a, a * b_ + c, wide, wide >> 32, wideu, wideu >> 32,
                ((s32(a) * s32(b_) + c64) & M64) >> 32, ((a * b_ + c64) & M64) >> 32,
                a + b_, a << 4, a * b_ + c + p0, a * -3 + b_, a * 7 - b_,
                wideu, wideu >> 32, b(wideu >> 64), wideu + p0, (wideu + p0) >> 32, a * len(rows) + b_,
                wide4, wide4 >> 32, b_ + p0]
    table_test(backend, body, rows, len(labels), expect, "imad", labels)


# ================================================================ three-input add
def test_iadd3_and_carries(backend):
    rows = inputs(64, 5, seed=2, columns={4: list(range(64))})
    body = [
        "LOP3.LUT P2, RZ, R14, 0x1, RZ, 0xc0, !PT", "LOP3.LUT P3, RZ, R14, 0x2, RZ, 0xc0, !PT",
        "IADD3 R20, R10, R11, R12",
        "IADD3 R21, P0, R10, R11, R12", sel("P0", 2),
        "IADD3 R23, P0, P1, R10, R11, R12", sel("P0", 4), sel("P1", 5),
        "IADD3 R26, P0, -R10, R11, RZ", sel("P0", 7),
        "IADD3 R28, P0, P1, R10, -R11, -R12", sel("P0", 9), sel("P1", 10),
        "IADD3.X R31, R10, R11, R12, P2, P3",
        "IADD3.X R32, P0, R10, ~R11, RZ, P2, !PT", sel("P0", 13),
        "IADD3 R34, P4, R10, R12, RZ", "IADD3.X R35, R11, R13, RZ, P4, !PT",        # 64-bit add
        "IADD3 R36, P5, R10, -R12, RZ", "IADD3.X R37, R11, ~R13, RZ, P5, !PT",      # 64-bit subtract
        "IADD3 R38, R10, -0x1, RZ", "IADD3 R39, R10, 0x27, R11",
        "IADD3 R40, -R10, -R11, -R12",
        "IADD3.X R41, P0, P1, R10, R11, R12, P2, P3", sel("P0", 22), sel("P1", 23),
        "IADD3 R44, P0, P1, -RZ, -RZ, R10", sel("P0", 25), sel("P1", 26),
    ]
    labels = ["a+b+c", "1 carry: sum", "1 carry: P0", "2 carries: sum", "P0", "P1", "-a+b", "-a+b P0",
              "a-b-c", "a-b-c P0", "a-b-c P1", "X with P2 P3", "X ~b", "X ~b P0", "add64 lo", "add64 hi",
              "sub64 lo", "sub64 hi", "a-1", "a+0x27+b", "-a-b-c", "X 2 carries", "X P0", "X P1",
              "-0-0+a", "-0-0+a P0", "-0-0+a P1"]

    def expect(r, t):
        a, b_, c, d, e = r
        p2, p3 = e & 1, e >> 1 & 1
        s1 = a + b_ + c
        neg_a = (~a & M32) + 1                 # two's complement with its carry: -0 is 2^32
        s_sub = a + ((~b_ & M32) + 1) + ((~c & M32) + 1)
        sx = a + b_ + c + p2 + p3
        sxn = a + (~b_ & M32) + p2
        add64 = ((b_ << 32 | a) + (d << 32 | c)) & M64
        sub64 = ((b_ << 32 | a) - (d << 32 | c)) & M64
        z = 2 * (1 << 32) + a
        return [s1, s1, b(s1 >= 1 << 32), s1, b(s1 >= 1 << 32), b(s1 >= 2 << 32),
                neg_a + b_, b(neg_a + b_ >= 1 << 32), s_sub, b(s_sub >= 1 << 32), b(s_sub >= 2 << 32),
                sx, sxn, b(sxn >= 1 << 32), add64, add64 >> 32, sub64, sub64 >> 32,
                a - 1, a + 0x27 + b_, -a - b_ - c, sx, b(sx >= 1 << 32), b(sx >= 2 << 32),
                z, b(z >= 1 << 32), b(z >= 2 << 32)]
    table_test(backend, body, rows, len(labels), expect, "iadd3", labels)


# ================================================================ shift-and-add
def test_lea(backend):
    rows = inputs(64, 4, seed=3)
    body = [
        "LEA R20, R10, R11, 0x2",
        "LEA R21, P0, R10, R11, 0x5", sel("P0", 2),
        "LEA R23, R10, R11, RZ",                             # a shift of 0 in RZ
        "LEA R24, R10, R11, 0x1f",
        "LEA.HI R25, R10, R11, R12, 0x3",                    # hi32((R12:R10) << 3) + R11
        "LEA.HI R26, R10, R11, RZ, 0xc",
        "LEA R27, P1, R10, R11, 0x2", "LEA.HI.X R28, R10, R13, R12, 0x2, P1",   # (R12:R10)*4 + (R13:R11)
        "LEA.HI.SX32 R29, R10, R11, 0x1a",                   # (s(a) >> 6) + b
        "LEA R30, P2, R10, R11, 0x3", "LEA.HI.X.SX32 R31, R10, R12, 0x3, P2",   # s(a)*8 + (R12:R11)
        "LEA R32, R10, -R11, 0x4",
        "LEA.HI.SX32 R33, R10, 0x20, 0x5",
    ]
    labels = ["a<<2+b", "a<<5+b", "carry", "a+b", "a<<31+b", "LEA.HI", "LEA.HI RZ", "ptr lo", "ptr hi",
              "HI.SX32", "sx ptr lo", "sx ptr hi", "a<<4-b", "HI.SX32 imm"]

    def expect(r, t):
        a, b_, c, d = r
        s5 = (a << 5 & M32) + b_
        ptr = (((c << 32 | a) << 2) + (d << 32 | b_)) & M64
        sptr = (s32(a) * 8 + (c << 32 | b_)) & M64
        return [(a << 2) + b_, s5, b(s5 >> 32), a + b_, (a << 31) + b_,
                (((c << 32 | a) << 3) >> 32) + b_, (a >> 20) + b_, ptr, ptr >> 32,
                (s32(a) >> 6) + b_, sptr, sptr >> 32, (a << 4) - b_, (s32(a) >> 27) + 0x20]
    table_test(backend, body, rows, len(labels), expect, "lea", labels)


# ================================================================ logic
def lut_eval(lut: int, a: int, b_: int, c: int) -> int:
    """Bitwise truth table: bit k of the result is lut[(a_k << 2) | (b_k << 1) | c_k]."""
    return sum(((lut >> ((a >> k & 1) << 2 | (b_ >> k & 1) << 1 | (c >> k & 1))) & 1) << k for k in range(32))


LUTS = [0x00, 0xFF, 0xC0, 0xFC, 0x3C, 0x96, 0xE8, 0x01, 0xFE, 0x80, 0x6A, 0x1E, 0xF8, 0xCA, 0x0F, 0x33,
        0x55, 0x5A, 0x66, 0xB4, 0x2D, 0x7F, 0x17, 0xA0, 0x88, 0xEE, 0xFA, 0xF0, 0xCC, 0xAA, 0x12]


def test_every_lut_by_shannon_expansion_is_its_table():
    """All 256 tables, bitwise on words and on predicates, with the interpreter's arithmetic;
    and none costs more than six operations (a sum of minterms costs up to 20)."""
    import random
    from warpboard.translator.interp.thread import ThreadCtx
    from warpboard.translator.isa.sem.alu import lut3

    class Counting(ThreadCtx):
        ops = 0

        def __getattribute__(self, name):
            if name in ("and_", "or_", "xor", "not_", "band", "bor", "bxor", "bnot"):
                type(self).ops += 1
            return object.__getattribute__(self, name)

    x = Counting.__new__(Counting)
    rng = random.Random(7)
    words = [(rng.getrandbits(32), rng.getrandbits(32), rng.getrandbits(32)) for _ in range(8)]
    for lut in range(256):
        for a, b_, c in words:
            assert lut3(x, lut, a, b_, c, boolean=False) == lut_eval(lut, a, b_, c), hex(lut)
        for m in range(8):
            bits = (bool(m & 4), bool(m & 2), bool(m & 1))
            assert lut3(x, lut, *bits, boolean=True) == bool(lut >> m & 1), (hex(lut), bits)
        Counting.ops = 0
        lut3(x, lut, *words[0], boolean=False)
        assert Counting.ops <= 6, f"lut {lut:#04x}: {Counting.ops} operations"


def test_lop3_luts(backend):
    rows = inputs(32, 3, seed=4)
    body = [f"LOP3.LUT R{OUT + k}, R10, R11, R12, {lut:#x}, !PT" for k, lut in enumerate(LUTS)]
    table_test(backend, body, rows, len(LUTS), lambda r, t: [lut_eval(lut, *r) for lut in LUTS], "lop3",
               [f"lut {lut:#04x}" for lut in LUTS])


def test_lop3_operand_forms_and_predicate_output(backend):
    rows = inputs(64, 3, seed=5)
    body = [
        "LOP3.LUT R20, ~R10, R11, RZ, 0xc0, !PT",
        "LOP3.LUT R21, R10, 0xff00ff, R12, 0xe2, !PT",
        "LOP3.LUT P0, R22, R10, R11, RZ, 0xc0, !PT", sel("P0", 3),           # P0 = (a & b) != 0
        "LOP3.LUT P1, RZ, R10, 0x1, RZ, 0xc0, !PT", sel("P1", 4),
        "LOP3.LUT P2, RZ, R10, R11, R12, 0x96, !PT", sel("P2", 5),
        "ULOP3.LUT UR4, URZ, 0xf0f0, URZ, 0x33, !UPT", "LOP3.LUT R26, R10, UR4, RZ, 0x3c, !PT",
    ]
    labels = ["~a&b", "mux", "a&b", "a&b != 0", "a&1 != 0", "xor3 != 0", "a ^ ~0xf0f0"]

    def expect(r, t):
        a, b_, c = r
        return [~a & b_, lut_eval(0xE2, a, 0xFF00FF, c), a & b_, b(a & b_), b(a & 1), b(a ^ b_ ^ c),
                a ^ (~0xF0F0 & M32)]
    table_test(backend, body, rows, len(labels), expect, "lop3_forms", labels)


PLOP_CASES = [(0x80, 0x00), (0xFE, 0x01), (0x96, 0x69), (0xE8, 0x17), (0xCA, 0xF0), (0x08, 0xAA)]


def test_plop3(backend):
    rows = [[t] for t in range(32)]
    body = ["LOP3.LUT P0, RZ, R10, 0x1, RZ, 0xc0, !PT", "LOP3.LUT P1, RZ, R10, 0x2, RZ, 0xc0, !PT",
            "LOP3.LUT P2, RZ, R10, 0x4, RZ, 0xc0, !PT"]
    k = 0
    for l0, l1 in PLOP_CASES:
        body += [f"PLOP3.LUT P3, P4, P0, P1, P2, {l0:#x}, {l1:#x}", sel("P3", k), sel("P4", k + 1)]
        k += 2
    body += ["PLOP3.LUT P5, PT, P0, !P1, PT, 0x80, 0x0", sel("P5", k),
             "PLOP3.LUT P6, PT, PT, PT, PT, 0x80, 0x0", sel("P6", k + 1),
             "PLOP3.LUT P6, PT, PT, PT, PT, 0x8, 0x0", sel("P6", k + 2)]

    def expect(r, t):
        p = [t & 1, t >> 1 & 1, t >> 2 & 1]
        idx = p[0] << 2 | p[1] << 1 | p[2]
        out = []
        for l0, l1 in PLOP_CASES:
            out += [l0 >> idx & 1, l1 >> idx & 1]
        return out + [p[0] & (1 - p[1]), 1, 0]
    table_test(backend, body, rows, 2 * len(PLOP_CASES) + 3, expect, "plop3")


# ================================================================ funnel shifts
SHIFTS = [0, 31, 32, 40, 64, 1, 33, 63, 65, 0xFFFFFFFF, 0x80000000, 16, 8, 4, 0x100, 20]


def shf(hi: int, lo: int, n: int, mods: set[str]) -> int:
    """SHF.{L,R}[.W].{U32,S32,U64,S64}[.HI] of the pair hi:lo by n, in plain Python."""
    bits = 64 if mods & {"U64", "S64"} else 32
    n = n & (bits - 1) if "W" in mods else min(n, bits)
    x = hi << 32 | lo
    if "R" in mods:
        v = (s64(x) >> n) if mods & {"S32", "S64"} else x >> n
    else:
        v = x << n
    v &= M64
    return v >> 32 if "HI" in mods else v & M32


SHF_FORMS = [f"SHF.{d}{w}.{t}{h}" for d in ("L", "R") for w in ("", ".W") for t in ("U32", "S32", "U64", "S64")
             for h in ("", ".HI")]


def test_shf_register_amounts(backend):
    rows = inputs(32, 3, seed=6, columns={2: SHIFTS + [s ^ 0x20 for s in SHIFTS]})
    body = [f"{form} R{OUT + k}, R10, R12, R11" for k, form in enumerate(SHF_FORMS)]

    def expect(r, t):
        lo, hi, n = r
        return [shf(hi, lo, n, set(form.split(".")[1:])) for form in SHF_FORMS]
    table_test(backend, body, rows, len(SHF_FORMS), expect, "shf_reg", SHF_FORMS)


SHF_IMM = [("SHF.R.U32.HI", 0x0), ("SHF.R.U32.HI", 0x1f), ("SHF.R.U32.HI", 0x20), ("SHF.R.S32.HI", 0x1f),
           ("SHF.R.S32.HI", 0x28), ("SHF.L.U64.HI", 0x28), ("SHF.L.U64.HI", 0x40), ("SHF.R.U64", 0x20),
           ("SHF.R.S64", 0x28), ("SHF.R.S64", 0x40), ("SHF.L.U32", 0x1f), ("SHF.L.U32", 0x20),
           ("SHF.L.W.U32.HI", 0x28), ("SHF.R.W.U32", 0x28), ("SHF.L.U32", 0x0), ("SHF.R.U64", 0x40),
           ("SHF.L.U32.HI", 0x5), ("SHF.R.U32", 0x7), ("SHF.R.S32", 0xc), ("SHF.L.W.U32", 0x24),
           ("SHF.L.U64.HI", 0x0), ("SHF.R.S64.HI", 0x3), ("SHF.R.U64", 0x1f), ("SHF.L.U64", 0x11)]


def test_shf_immediate_amounts(backend):
    rows = inputs(32, 2, seed=7)
    body = [f"{form} R{OUT + k}, R10, {n:#x}, R11" for k, (form, n) in enumerate(SHF_IMM)]
    k = OUT + len(SHF_IMM)
    body += [f"SHF.R.S32.HI R{k}, RZ, 0x1f, R10", f"SHF.L.U32 R{k + 1}, R10, 0x2, RZ"]    # sign, shift left

    def expect(r, t):
        lo, hi = r
        return [shf(hi, lo, n, set(form.split(".")[1:])) for form, n in SHF_IMM] + \
            [M32 if lo >> 31 else 0, lo << 2]
    table_test(backend, body, rows, len(SHF_IMM) + 2, expect, "shf_imm",
               [f"{f} {n:#x}" for f, n in SHF_IMM] + ["sign", "shl 2"])


# ================================================================ compares
CMPS = {"EQ": lambda x, y: x == y, "NE": lambda x, y: x != y, "LT": lambda x, y: x < y,
        "LE": lambda x, y: x <= y, "GT": lambda x, y: x > y, "GE": lambda x, y: x >= y}
COMBINE = {"AND": lambda x, y: x and y, "OR": lambda x, y: x or y, "XOR": lambda x, y: x != y}


def test_isetp_comparisons(backend):
    rows = inputs(64, 3, seed=8, columns={1: EDGE * 5 + [0x7FFFFFFF] * 3 + MORE * 3})
    for t in range(25, 40):
        rows[t][1] = rows[t][0]                  # equal operands
    body = ["LOP3.LUT P2, RZ, R12, 0x1, RZ, 0xc0, !PT"]
    labels, k = [], 0
    for cmp in CMPS:
        for u in ("", ".U32"):
            body += [f"ISETP.{cmp}{u}.AND P0, P1, R10, R11, PT", sel("P0", k), sel("P1", k + 1)]
            labels += [f"{cmp}{u}", f"{cmp}{u} second"]
            k += 2
    for comb in COMBINE:
        for cmp, u in (("LT", ""), ("GE", ".U32"), ("NE", "")):
            body += [f"ISETP.{cmp}{u}.{comb} P3, P4, R10, R11, P2", sel("P3", k), sel("P4", k + 1)]
            labels += [f"{cmp}{u}.{comb}", f"{cmp}{u}.{comb} second"]
            k += 2
    body += ["ISETP.GT.U32.OR P5, PT, R10, 0x7fffffff, !P2", sel("P5", k),
             "ISETP.GE.AND P5, PT, R10, -0x1, PT", sel("P5", k + 1),
             "ISETP.NE.AND P5, PT, R10, RZ, PT", sel("P5", k + 2)]
    labels += ["GT.U32 imm OR !acc", "GE -1", "NE RZ"]

    def expect(r, t):
        a, b_, c = r
        acc = bool(c & 1)
        out = []
        for cmp, f in CMPS.items():
            for signed in (True, False):
                v = f(s32(a), s32(b_)) if signed else f(a, b_)
                out += [b(v), b(not v)]
        for comb, g in COMBINE.items():
            for cmp, signed in (("LT", True), ("GE", False), ("NE", True)):
                v = CMPS[cmp](s32(a), s32(b_)) if signed else CMPS[cmp](a, b_)
                out += [b(g(v, acc)), b(g(not v, acc))]
        return out + [b(a > 0x7FFFFFFF or not acc), b(s32(a) >= -1), b(a != 0)]
    table_test(backend, body, rows, len(labels), expect, "isetp", labels)


def test_isetp_ex_64bit_compares(backend):
    rng = random.Random(9)
    rows = []
    for t in range(64):
        a = [rng.choice(EDGE + MORE) if rng.random() < 0.5 else rng.getrandbits(32) for _ in range(4)]
        if t % 3:
            a[3] = a[1]                          # equal high words: the low compare decides
        if t % 5 == 0:
            a[2] = a[0]
        rows.append(a)
    body, labels, k = [], [], 0
    for cmp in CMPS:
        for u in ("", ".U32"):
            body += [f"ISETP.{cmp}.U32.AND P0, PT, R10, R12, PT",
                     f"ISETP.{cmp}{u}.AND.EX P0, PT, R11, R13, PT, P0", sel("P0", k)]
            labels.append(f"{cmp}{u} 64-bit")
            k += 1
    body += ["LOP3.LUT P1, RZ, R10, 0x10, RZ, 0xc0, !PT",
             "ISETP.NE.U32.AND P0, PT, R10, R12, PT", "ISETP.NE.OR.EX P0, PT, R11, R13, P1, P0", sel("P0", k)]
    labels.append("NE.OR.EX with acc")

    def expect(r, t):
        lo_a, hi_a, lo_b, hi_b = r
        ua, ub = hi_a << 32 | lo_a, hi_b << 32 | lo_b
        out = []
        for f in CMPS.values():
            out += [b(f(s64(ua), s64(ub))), b(f(ua, ub))]
        return out + [b(ua != ub or lo_a & 0x10)]
    table_test(backend, body, rows, len(labels), expect, "isetp_ex", labels)


# ================================================================ select, permute, bits, min/max
PRMT_SELECTORS = [0x9910, 0x7710, 0x3210, 0x5140, 0x0123, 0x8880, 0x7654, 0xBA98, 0x4444, 0xFEDC]


def prmt(a: int, sel_: int, b_: int) -> int:
    data = (b_ << 32 | a).to_bytes(8, "little")
    out = 0
    for k in range(4):
        nib = sel_ >> 4 * k & 0xF
        byte = data[nib & 7]
        if nib & 8:
            byte = 0xFF if byte & 0x80 else 0
        out |= byte << 8 * k
    return out


def test_prmt(backend):
    rows = inputs(64, 3, seed=10)
    body = [f"PRMT R{OUT + k}, R10, {s:#x}, R11" for k, s in enumerate(PRMT_SELECTORS)]
    body += ["PRMT R30, R10, 0x9910, RZ", "PRMT R31, R10, R12, R11"]          # sign-extend; register selector
    table_test(backend, body, rows, len(PRMT_SELECTORS) + 2,
               lambda r, t: [prmt(r[0], s, r[1]) for s in PRMT_SELECTORS] + [prmt(r[0], 0x9910, 0),
                                                                          prmt(r[0], r[2], r[1])],
               "prmt", [f"{s:#06x}" for s in PRMT_SELECTORS] + ["0x9910 RZ", "register"])


def flo(v: int, signed: bool, sh: bool) -> int:
    if signed and v >> 31:
        v = ~v & M32
    if v == 0:
        return M32
    top = v.bit_length() - 1
    return 31 - top if sh else top


def test_sel_popc_flo_brev_minmax_abs(backend):
    rows = inputs(64, 3, seed=11, columns={2: list(range(64))})
    body = [
        "LOP3.LUT P0, RZ, R12, 0x1, RZ, 0xc0, !PT",
        "SEL R20, R10, R11, P0", "SEL R21, R10, 0x1234, !P0", "SEL R22, RZ, 0x1, !P0",
        "POPC R23, R10", "BREV R24, R10",
        "FLO.U32 R25, R10", "FLO.U32.SH R26, R10", "FLO.S32 R27, R10", "FLO.S32.SH R28, R10",
        "IMNMX R29, R10, R11, PT", "IMNMX R30, R10, R11, !PT",
        "IMNMX.U32 R31, R10, R11, PT", "IMNMX.U32 R32, R10, R11, !PT", "IMNMX R33, R10, R11, P0",
        "IABS R34, R10", "IADD3 R35, -R10, RZ, RZ", "POPC R36, ~R10",
        "UPOPC UR4, 0xf0f0", "UFLO.U32 UR5, 0x100", "UMOV UR6, UR5", "MOV R37, UR4", "MOV R38, UR6",
    ]
    labels = ["SEL", "SEL imm !P", "SEL 0/1", "POPC", "BREV", "FLO.U32", "FLO.U32.SH", "FLO.S32",
              "FLO.S32.SH", "IMNMX min", "IMNMX max", "IMNMX.U32 min", "IMNMX.U32 max", "IMNMX P0",
              "IABS", "-a", "POPC ~a", "UPOPC", "UFLO"]

    def expect(r, t):
        a, b_, c = r
        p0 = c & 1
        mn, mx = (a, b_) if s32(a) < s32(b_) else (b_, a)
        umn, umx = min(a, b_), max(a, b_)
        return [a if p0 else b_, a if not p0 else 0x1234, 0 if not p0 else 1,
                bin(a).count("1"), int(f"{a:032b}"[::-1], 2),
                flo(a, False, False), flo(a, False, True), flo(a, True, False), flo(a, True, True),
                mn, mx, umn, umx, mn if p0 else mx, abs(s32(a)), -a, 32 - bin(a).count("1"), 8, 8]
    table_test(backend, body, rows, len(labels), expect, "bits", labels)


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


def test_last_word_is_in_bounds(backend):
    lines = ["S2R R0, SR_TID.X", "MOV R2, c[0x0][0x160]", "MOV R3, c[0x0][0x164]", "LDG.E R4, [R2.64+0x7c]",
             "LDS R5, [0x3fc]", "LDG.E.U16 R6, [R2.64+0x7e]", "IADD3 R4, R4, R5, R6", "STG.E [R2.64], R4", "EXIT"]
    run = backend.run(lines, [list(range(32))], shared=1024, name="bounds")
    assert run.outcome == "ok", run.detail


# ================================================================ guards
def test_guards_mask_writes_memory_and_control(backend):
    rows = inputs(64, 3, seed=19, columns={2: list(range(64))})
    body = [
        "LOP3.LUT P0, RZ, R12, 0x1, RZ, 0xc0, !PT",                  # odd threads
        "ISETP.GE.U32.AND P2, PT, R12, 0x3c, PT",                    # threads 60..63
        "MOV R20, 0x1", "@P0 MOV R20, R10",
        "MOV R21, 0x7", "@!P0 IADD3 R21, R10, R11, RZ",
        "MOV R22, 0x3", "MOV R23, 0x4", "@P0 IMAD.WIDE.U32 R22, R10, R11, RZ",
        "MOV R24, 0x6", "@!PT MOV R24, 0x5", "@PT MOV R25, R10",
        "PLOP3.LUT P1, PT, PT, PT, PT, 0x0, 0x0", "@P0 ISETP.NE.AND P1, PT, RZ, 0x1, PT", sel("P1", 6),
        "UISETP.NE.U32.AND UP0, UPT, URZ, 0x1, UPT", "MOV R27, RZ", "@UP0 MOV R27, 0x9",
        "MOV R28, 0x8", "@!UP0 MOV R28, 0x9",
        "SEL R4, R2, RZ, P0", "SEL R5, R3, RZ, P0",                  # a good address for odd threads only
        "SEL R8, RZ, R2, P0", "SEL R9, RZ, R3, P0",                  # ... and for even threads only
        "MOV R29, 0xb", "@P0 LDG.E R29, [R4.64]", "@!P0 STG.E [R8.64+0x4], R10",
        "MOV R30, 0xc", "@P0 ATOMG.E.ADD.STRONG.GPU PT, R30, [R4.64+0x8], R11",
        "MOV R31, 0x22", "@P0 BRA `(.L_x_skip)", "MOV R31, 0x11",
        ".L_x_skip:",
        "@P2 EXIT",
    ]
    labels = ["@P0 MOV", "@!P0 IADD3", "@P0 WIDE lo", "@P0 WIDE hi", "@!PT", "@PT", "@P0 ISETP", "@UP0",
              "@!UP0", "@P0 LDG", "@P0 ATOMG", "@P0 BRA"]

    def expect(r, t):
        if t >= 60:
            return [SENTINEL] * len(labels)
        a, b_, c = r
        odd = t & 1
        wide = a * b_
        return [a if odd else 1, 7 if odd else a + b_, wide if odd else 3, wide >> 32 if odd else 4,
                6, a, odd, 9, 8, a if odd else 0xB, c if odd else 0xC, 0x22 if odd else 0x11]
    table_test(backend, body, rows, len(labels), expect, "guards", labels)


def test_constant_operands(backend):
    """Sources that are all immediates or RZ: the emitter folds them, the interpreter computes."""
    body = [
        "IADD3 R20, P0, P1, -RZ, -RZ, -RZ", sel("P0", 1), sel("P1", 2),
        "SHF.R.S64 R23, RZ, 0x40, 0x80000000", "SHF.L.U64.HI R24, 0x1, 0x3f, RZ",
        "SHF.R.U32.HI R25, RZ, 0x20, R11", "IMAD.MOV.U32 R26, RZ, RZ, -0x12000000",
        "LOP3.LUT R27, RZ, 0x5a, 0xff, 0x96, !PT", "PRMT R28, RZ, 0x7654, 0x80", "FLO.U32 R29, 0x100",
        "ISETP.LT.AND P2, P3, RZ, -0x1, PT", sel("P2", 10), sel("P3", 11),
        "ISETP.LT.U32.AND P2, PT, RZ, -0x1, PT", sel("P2", 12),
        "LEA.HI R33, RZ, 0x5, R11, 0x0", "IMNMX R34, RZ, -0x5, PT", "IABS R35, -0x80000000",
        "SHF.L.W.U32.HI R36, RZ, 0x21, R11",
    ]
    rows = inputs(32, 2, seed=20)

    def expect(r, t):
        hi = r[1]
        return [0, 1, 1, M32, 0x80000000, 0, -0x12000000, 0xA5, 0x80, 8, 0, 1, 1, hi + 5, -5, 0x80000000,
                (hi << 1 & M32) | 0]
    table_test(backend, body, rows, 17, expect, "constants")

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

from warpboard.harness.case.model import Param
from warpboard.translator import abi
from warpboard.translator.interp.thread import ThreadCtx
from warpboard.translator.isa.sem.alu import lut3

from support.tables import (
    M32,
    M64,
    OUT,
    SENTINEL,
    b,
    check,
    inputs,
    s32,
    sel,
    table_test,
)


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

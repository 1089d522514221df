"""Integer opcodes on both back ends, against plain Python: funnel shifts (SHF), compares
(ISETP, 64-bit with .EX), PRMT, SEL, POPC, FLO, BREV, IMNMX and IABS. See opcodes/test_alu.py for
how these differential tests are built."""
from __future__ import annotations

import random

from support.tables import (
    EDGE,
    M32,
    M64,
    MORE,
    OUT,
    b,
    inputs,
    s32,
    s64,
    sel,
    table_test,
)

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

"""Semantics of the packed binary16 / bfloat16 instructions: HADD2, HMUL2, HFMA2, HSETP2,
HSET2, HMNMX2, and F2FP (two binary32 to a packed pair).

A register holds two halves: H0 in bits 0-15, H1 in bits 16-31; each half is computed on its
own with the context's float words in format "f16" (or "bf16" with ``.BF16_V2``), rounded
to nearest. Operands as nvdisasm prints them:

- ``R2.H0_H0`` / ``R2.H1_H1``: one half in both lanes; ``R2.F32``: a binary32 register,
  rounded to the format, in both lanes; ``-R2`` / ``|R2|``: the sign bit of each half;
- a constant takes the same selects, sign and magnitude, on the word at its offset
  (``c[0x0] [0x170].H1_H1``: the half at 0x172 in both lanes; ``-|c[0x0] [0x170].H0_H0|``);
- an immediate is a pair of numbers, high half first (``HFMA2.MMA R2, -RZ, RZ, 1.875, 0``
  is ptxas's way to write 0x3f800000);
- ``HADD2.F32 Rd, -RZ, R0.H1_H1``: the low lanes' sum as a binary32 (nvcc's half to float).

Not confirmed on the chip (SM86), taken from the PTX ISA: a NaN result is the canonical
0x7fff; ``HSETP2`` sets Pd from H0 and Pq from H1, ``.H_AND`` both from H0 and H1 together;
``HMNMX2`` as FMNMX per half.
"""
from __future__ import annotations

import struct
from dataclasses import replace

from ...values.floatops import F64, FORMATS, f2f
from ..ctx import Ctx
from .alu import combine_predicate, unsupported
from .float import compare_test, fcompare, fread, is_nan, rounding

HALF_SIGN = 0x8000


def _fmt(i) -> str:
    return "bf16" if any(m.startswith("BF16") for m in i.mods) else "f16"


def _imm_half(o, fmt: str) -> int:
    """One immediate number as the bits of a half of ``fmt``."""
    if o.kind == "imm" and o.text.strip().lstrip("+-").lower().startswith("0x"):
        return o.value & 0xFFFF
    number = o.fvalue if o.kind == "fimm" else float(o.value)
    return f2f(struct.unpack("<Q", struct.pack("<d", number))[0], F64, FORMATS[fmt], "rn")


def sources(i) -> list[tuple]:
    """The source operands after the destination(s), an immediate pair grouped as one."""
    out, ops, k = [], i.ops, 0
    while k < len(ops):
        o = ops[k]
        if o.kind in ("imm", "fimm") and k + 1 < len(ops) and ops[k + 1].kind in ("imm", "fimm"):
            out.append((o, ops[k + 1]))
            k += 2
        else:
            out.append((o,))
            k += 1
    return out


SELECTS = ("H1_H0", "H0_H0", "H1_H1", "F32")
"""The selects of a register or constant source: each half in its lane (the default, which
nvdisasm does not print), the low or the high half in both, a binary32 rounded into both."""


def select(i, o) -> str:
    """The select of source ``o`` of ``i`` (:data:`SELECTS`); any other suffix is refused."""
    sel = [s for s in o.suffix if s in SELECTS]
    if len(sel) > 1 or len(sel) < len(o.suffix):
        raise unsupported(i, f"operand {o.text} (a half select is one of {', '.join(SELECTS)})")
    return sel[0] if sel else "H1_H0"


def lanes(x: Ctx, i, src: tuple, fmt: str):
    """A source of ``i`` as its (H0, H1) words of 16 bits, select, sign and magnitude applied:
    a register's word or a constant's word alike."""
    o = src[0]
    if len(src) == 2:
        return x.k32(_imm_half(src[1], fmt)), x.k32(_imm_half(o, fmt))
    if o.kind in ("imm", "fimm"):
        v = _imm_half(o, fmt)
        return x.k32(v), x.k32(v)
    sel = select(i, o)
    word = x.read(replace(o, neg=False, abs=False))
    if sel == "F32":
        lo = hi = x.f2f(word, "f32", fmt, "rn")
    else:
        lo, hi = x.and_(word, x.k32(0xFFFF)), x.shr(word, x.k32(16))
        if sel == "H0_H0":
            hi = lo
        elif sel == "H1_H1":
            lo = hi
    return tuple(_signed(x, h, o) for h in (lo, hi))


def _signed(x: Ctx, h, o):
    if o.abs:
        h = x.and_(h, x.k32(0x7FFF))
    if o.neg:
        h = x.xor(h, x.k32(HALF_SIGN))
    return h


def _pack(x: Ctx, lo, hi):
    return x.or_(x.and_(lo, x.k32(0xFFFF)), x.shl(hi, x.k32(16)))


def _flush(x: Ctx, h, fmt: str):
    """.FTZ on a half: a denormal becomes the zero of its sign."""
    exp = FORMATS[fmt].inf
    return x.sel(x.cmp("eq", x.and_(h, x.k32(exp)), x.k32(0), False), x.and_(h, x.k32(HALF_SIGN)), h)


def _saturate(x: Ctx, h, fmt: str):
    one = FORMATS[fmt].bias << FORMATS[fmt].mbits
    h = x.sel(x.cmp("gt", h, x.k32(FORMATS[fmt].inf), False), x.k32(0), h)      # NaN and negatives
    return x.sel(x.cmp("gt", h, x.k32(one), False), x.k32(one), h)


def _arith(x: Ctx, i, n: int, word):
    """HADD2 / HMUL2 / HFMA2: ``word(lane operands)`` per half, .FTZ/.SAT, .F32 (one binary32)."""
    fmt, srcs = _fmt(i), sources(i)[1:1 + n]
    per_lane = list(zip(*(lanes(x, i, s, fmt) for s in srcs)))
    if "FTZ" in i.mods:
        per_lane = [[_flush(x, h, fmt) for h in lane] for lane in per_lane]
    if "F32" in i.mods:
        wide = [x.f2f(h, fmt, "f32", "rn") for h in per_lane[0]]
        x.write(i.ops[0], word(wide, "f32"))
        return
    out = []
    for lane in per_lane:
        r = word(lane, fmt)
        r = _flush(x, r, fmt) if "FTZ" in i.mods else r
        out.append(_saturate(x, r, fmt) if "SAT" in i.mods else r)
    x.write(i.ops[0], _pack(x, *out))


def hadd2(x: Ctx, i):
    """HADD2[.F32][.BF16_V2][.FTZ][.SAT] Rd, Ra, Rb."""
    _arith(x, i, 2, lambda v, f: x.fadd(v[0], v[1], f, rounding(i)))


def hmul2(x: Ctx, i):
    """HMUL2[.BF16_V2][.FTZ][.SAT] Rd, Ra, Rb."""
    _arith(x, i, 2, lambda v, f: x.fmul(v[0], v[1], f, rounding(i)))


def hfma2(x: Ctx, i):
    """HFMA2[.MMA][.BF16_V2][.FTZ][.SAT] Rd, Ra, Rb, Rc: a * b + c per half, rounded once."""
    _arith(x, i, 3, lambda v, f: x.ffma(v[0], v[1], v[2], f, rounding(i)))


def _tests(x: Ctx, i, a_src, b_src):
    """The comparison of each lane (halves moved to the top of a word, as fcompare takes them)."""
    fmt = _fmt(i)
    inf = FORMATS[fmt].inf << 16
    a, b = lanes(x, i, a_src, fmt), lanes(x, i, b_src, fmt)
    if "FTZ" in i.mods:
        a, b = [_flush(x, h, fmt) for h in a], [_flush(x, h, fmt) for h in b]
    return [fcompare(x, compare_test(i), x.shl(p, x.k32(16)), x.shl(q, x.k32(16)), inf) for p, q in zip(a, b)]


def hsetp2(x: Ctx, i):
    """HSETP2.test[.H_AND][.BF16_V2].{AND,OR,XOR} Pd, Pq, Ra, Rb, Pc."""
    srcs = sources(i)
    pd, pq, pacc = srcs[0][0], srcs[1][0], srcs[4][0]
    r0, r1 = _tests(x, i, srcs[2], srcs[3])
    acc = x.readp(pacc)
    if "H_AND" in i.mods:
        both = x.band(r0, r1)
        r0, r1 = both, x.bnot(both)
    x.writep(pd, combine_predicate(x, i, r0, acc))
    x.writep(pq, combine_predicate(x, i, r1, acc))


def hset2(x: Ctx, i):
    """HSET2[.BF].test.{AND,OR,XOR} Rd, Ra, Rb, Pc: each half 0xffff (1.0 with .BF) where true."""
    srcs = sources(i)
    acc = x.readp(srcs[3][0])
    true = FORMATS[_fmt(i)].bias << FORMATS[_fmt(i)].mbits if "BF" in i.mods else 0xFFFF
    out = [x.sel(combine_predicate(x, i, r, acc), x.k32(true), x.k32(0)) for r in _tests(x, i, srcs[1], srcs[2])]
    x.write(srcs[0][0], _pack(x, *out))


def hmnmx2(x: Ctx, i):
    """HMNMX2[.BF16_V2][.FTZ] Rd, Ra, Rb, Pc: per half the minimum where Pc, else the maximum;
    a NaN gives the other operand, two NaNs the canonical NaN."""
    fmt = _fmt(i)
    srcs = sources(i)
    inf, nan = FORMATS[fmt].inf << 16, FORMATS[fmt].nan
    is_min = x.readp(srcs[3][0])
    out = []
    for p, q in zip(lanes(x, i, srcs[1], fmt), lanes(x, i, srcs[2], fmt)):
        if "FTZ" in i.mods:
            p, q = _flush(x, p, fmt), _flush(x, q, fmt)
        tp, tq = x.shl(p, x.k32(16)), x.shl(q, x.k32(16))
        kp, kq = (x.sel(x.cmp("ge", t, x.k32(0x80000000), False), x.not_(t), x.or_(t, x.k32(0x80000000)))
                  for t in (tp, tq))
        lt = x.cmp("lt", kp, kq, False)
        r = x.sel(is_min, x.sel(lt, p, q), x.sel(lt, q, p))
        nan_p, nan_q = is_nan(x, tp, inf), is_nan(x, tq, inf)
        out.append(x.sel(nan_p, x.sel(nan_q, x.k32(nan), q), x.sel(nan_q, p, r)))
    x.write(srcs[0][0], _pack(x, *out))


def f2fp(x: Ctx, i):
    """F2FP[.F16|.BF16].PACK_AB[.RN|.RZ...] Rd, Ra, Rb: Ra and Rb (binary32) rounded to the
    format, Ra's in the high half."""
    if "PACK_AB" not in i.mods:
        raise unsupported(i, "F2FP without .PACK_AB")
    fmt = "bf16" if "BF16" in i.mods else "f16"
    a, b = (x.f2f(fread(x, o), "f32", fmt, rounding(i)) for o in i.ops[1:3])
    x.write(i.ops[0], _pack(x, b, a))


MODS = {"F32", "BF16_V2", "FTZ", "SAT", "MMA", "H_AND", "AND", "OR", "XOR", "BF", "F16", "BF16", "PACK_AB",
        "RN", "RZ", "RM", "RP", "EQ", "NE", "LT", "LE", "GT", "GE", "EQU", "NEU", "LTU", "LEU", "GTU", "GEU",
        "NUM", "NAN"}

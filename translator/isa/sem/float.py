"""Semantics of the float instructions: arithmetic, comparisons, selects, conversions, MUFU.

Values stay words (IEEE bit patterns: a register for binary32, a register pair for binary64);
the arithmetic is the context's float words (:mod:`translator.values.floatops`), which round once as
told. What only looks at the sign and exponent fields is written here on the integer words,
once for both back ends: negation and absolute value of operands (the sign bit), .FTZ
(a denormal input or result becomes a zero of its sign), .SAT (clamp to [0, 1], NaN to +0),
comparisons (NaN unordered, -0 == +0), min/max.

Not confirmed on the chip (SM86), taken from the PTX ISA: .FTZ flushes a result after
rounding; .SAT gives +0 for -0; FMNMX orders -0 below +0.
"""
from __future__ import annotations

import struct
from dataclasses import replace

from ..ctx import Ctx
from ..regs import is_zero
from .alu import combine_predicate, unsupported

ROUNDING = {"RN": "rn", "RZ": "rz", "RM": "rm", "RP": "rp", "TRUNC": "rz", "FLOOR": "rm", "CEIL": "rp",
            "ROUND": "rn"}
INT_TYPES = {"U8": (8, False), "S8": (8, True), "U16": (16, False), "S16": (16, True), "U32": (32, False),
             "S32": (32, True), "U64": (64, False), "S64": (64, True)}
FLOAT_TYPES = {"F16": "f16", "BF16": "bf16", "F32": "f32", "F64": "f64"}
SIGN, ONE, INF = 0x80000000, 0x3F800000, 0x7F800000
FSETP_TESTS = ("EQ", "NE", "LT", "LE", "GT", "GE", "EQU", "NEU", "LTU", "LEU", "GTU", "GEU", "NUM", "NAN")
MODS = set(ROUNDING) | set(INT_TYPES) | set(FLOAT_TYPES) | {"FTZ", "SAT", "NTZ"}


def rounding(i, default: str = "rn") -> str:
    return next((ROUNDING[m] for m in i.mods if m in ROUNDING), default)


# ---------------------------------------------------------------- operands
def _imm_bits(o, fmt: str) -> int:
    """A float instruction's immediate: decimal numbers (``0.5``, ``-1``, ``16777216``) are
    floats; hexadecimal ones are the bits themselves."""
    if o.kind == "imm" and o.text.strip().lstrip("+-").lower().startswith("0x"):
        return o.value & (0xFFFFFFFF if fmt != "f64" else 0xFFFFFFFFFFFFFFFF)
    number = o.fvalue if o.kind == "fimm" else float(o.value)
    if fmt == "f64":
        return struct.unpack("<Q", struct.pack("<d", number))[0]
    if o.kind == "fimm":
        return o.value
    return struct.unpack("<I", struct.pack("<f", number))[0]


def fread(x: Ctx, o, fmt: str = "f32"):
    """A float operand as a word (a pair for f64), with its |abs| and -negation applied to
    the sign bit."""
    wide = fmt == "f64"
    if o.kind in ("fimm", "imm"):
        bits = _imm_bits(o, fmt)
        return x.k64(bits) if wide else x.k32(bits)
    plain = replace(o, neg=False, abs=False)
    v = x.read64(plain) if wide else x.read(plain)
    if fmt in ("f16", "bf16"):
        return _half_source(x, v, o)
    if not (o.abs or o.neg):
        return v
    top = x.hi(v) if wide else v
    if o.abs:
        top = x.and_(top, x.k32(~SIGN & 0xFFFFFFFF))
    if o.neg:
        top = x.xor(top, x.k32(SIGN))
    return x.join(x.lo(v), top) if wide else top


def _half_source(x: Ctx, v, o):
    """The binary16 source of a conversion from .F16 (F2I, F2F, FRND): the low half of the
    word, the high one with ``.H1`` (``F2I.F16.NTZ R0, R2.H1``), |abs| and -negation on its
    sign bit 15 (``F2I.F16.TRUNC.NTZ R7, |R2|``); a constant's word alike."""
    h = x.shr(v, x.k32(16)) if "H1" in o.suffix else x.and_(v, x.k32(0xFFFF))
    if o.abs:
        h = x.and_(h, x.k32(0x7FFF))
    if o.neg:
        h = x.xor(h, x.k32(0x8000))
    return h


def fwrite(x: Ctx, o, v, fmt: str = "f32") -> None:
    (x.write64 if fmt == "f64" else x.write)(o, v)


def flush(x: Ctx, v):
    """.FTZ on a binary32 word: a denormal becomes the zero of its sign."""
    denormal = x.cmp("eq", x.and_(v, x.k32(INF)), x.k32(0), False)
    return x.sel(denormal, x.and_(v, x.k32(SIGN)), v)


def saturate(x: Ctx, v):
    """.SAT: clamp to [+0, 1]; NaN and every negative (-0 too) give +0."""
    v = x.sel(x.cmp("gt", v, x.k32(INF), False), x.k32(0), v)        # NaN, and anything with its sign set
    return x.sel(x.cmp("gt", v, x.k32(ONE), False), x.k32(ONE), v)


def is_nan(x: Ctx, v, inf: int = INF):
    """Whether a word is a NaN; ``inf`` is the infinity of its format placed as the word
    holds it (a binary16 shifted to the top half: 0x7c000000)."""
    return x.cmp("gt", x.and_(v, x.k32(~SIGN & 0xFFFFFFFF)), x.k32(inf), False)


def _order_key(x: Ctx, v):
    """An unsigned word that orders binary32 numbers as their values (both zeros alike)."""
    v = x.sel(x.cmp("eq", x.and_(v, x.k32(~SIGN & 0xFFFFFFFF)), x.k32(0), False), x.k32(0), v)
    return x.sel(x.cmp("ge", v, x.k32(SIGN), False), x.not_(v), x.or_(v, x.k32(SIGN)))


def fcompare(x: Ctx, test: str, a, b, inf: int = INF):
    """FSETP's test on two binary32 words: ordered (false on NaN), unordered (...U: true on
    NaN), NUM (neither is NaN) or NAN (either is). A narrower format's words come shifted to
    the top of the word, with their ``inf`` so placed."""
    unordered = x.bor(is_nan(x, a, inf), is_nan(x, b, inf))
    return _decide(x, test, unordered, lambda op: x.cmp(op, _order_key(x, a), _order_key(x, b), False))


def _decide(x: Ctx, test: str, unordered, ordered_cmp):
    if test in ("NUM", "NAN"):
        return x.bnot(unordered) if test == "NUM" else unordered
    r = ordered_cmp(test[:2].lower())
    return x.bor(unordered, r) if test.endswith("U") else x.band(x.bnot(unordered), r)


def is_nan64(x: Ctx, v):
    """Whether a binary64 pair is a NaN."""
    mag_hi, lo = x.and_(x.hi(v), x.k32(~SIGN & 0xFFFFFFFF)), x.lo(v)
    return x.bor(x.cmp("gt", mag_hi, x.k32(0x7FF00000), False),
                 x.band(x.cmp("eq", mag_hi, x.k32(0x7FF00000), False), x.cmp("ne", lo, x.k32(0), False)))


def _order_key64(x: Ctx, v, zeros_alike: bool = True):
    """(high, low) unsigned words that order binary64 numbers as their values, compared high
    word first; -0 below +0 unless ``zeros_alike``."""
    hi, lo = x.hi(v), x.lo(v)
    if zeros_alike:
        zero = x.band(x.cmp("eq", x.and_(hi, x.k32(~SIGN & 0xFFFFFFFF)), x.k32(0), False),
                      x.cmp("eq", lo, x.k32(0), False))
        hi, lo = x.sel(zero, x.k32(0), hi), x.sel(zero, x.k32(0), lo)
    negative = x.cmp("ge", hi, x.k32(SIGN), False)
    return x.sel(negative, x.not_(hi), x.or_(hi, x.k32(SIGN))), x.sel(negative, x.not_(lo), lo)


def _compare64(x: Ctx, op: str, ka, kb):
    """An ordering test on two keys of :func:`_order_key64`."""
    (ha, la), (hb, lb) = ka, kb
    if op in ("eq", "ne"):
        same = x.band(x.cmp("eq", ha, hb, False), x.cmp("eq", la, lb, False))
        return same if op == "eq" else x.bnot(same)
    return x.bor(x.cmp(op[0] + "t", ha, hb, False), x.band(x.cmp("eq", ha, hb, False), x.cmp(op, la, lb, False)))


def dcompare(x: Ctx, test: str, a, b):
    """DSETP's test on two binary64 words (as fcompare)."""
    ka, kb = _order_key64(x, a), _order_key64(x, b)
    return _decide(x, test, x.bor(is_nan64(x, a), is_nan64(x, b)), lambda op: _compare64(x, op, ka, kb))


def _sources(x: Ctx, i, n: int):
    vals = [fread(x, o) for o in i.ops[1:1 + n]]
    return [flush(x, v) for v in vals] if "FTZ" in i.mods else vals


def _result(x: Ctx, i, v) -> None:
    if "FTZ" in i.mods:
        v = flush(x, v)
    if "SAT" in i.mods:
        v = saturate(x, v)
    x.write(i.ops[0], v)


# ---------------------------------------------------------------- binary32 arithmetic
def fadd(x: Ctx, i):
    """FADD[.FTZ][.SAT][.RN|.RZ|.RM|.RP] Rd, Ra, Rb."""
    a, b = _sources(x, i, 2)
    _result(x, i, x.fadd(a, b, "f32", rounding(i)))


# FMUL's scales: ptxas folds ``(a * b) * 0.5f`` and the like into one FMUL.D2 (.D4, .M2, ...)
FMUL_SCALES = {"D2": 0x3F000000, "D4": 0x3E800000, "M2": 0x40000000, "M4": 0x40800000, "M8": 0x41000000}


def fmul(x: Ctx, i):
    """FMUL[.FTZ][.SAT][.D2|.D4|.M2|.M4|.M8][.RN|.RZ|.RM|.RP] Rd, Ra, Rb. A scale is the
    source's second multiply, ``(a * b) * 0.5f``, which ptxas folds in: so the product is
    rounded, then scaled and rounded again (the scaling rounds only where the result is
    subnormal, and overflows to infinity past the largest float)."""
    a, b = _sources(x, i, 2)
    v = x.fmul(a, b, "f32", rounding(i))
    scales = [FMUL_SCALES[m] for m in i.mods if m in FMUL_SCALES]
    if len(scales) > 1:
        raise unsupported(i, "more than one scale")
    if scales:
        if "FTZ" in i.mods:
            v = flush(x, v)
        v = x.fmul(v, x.k32(scales[0]), "f32", rounding(i))
    _result(x, i, v)


def ffma(x: Ctx, i):
    """FFMA[.FTZ][.SAT][.RN|.RZ|.RM|.RP] Rd, Ra, Rb, Rc: a * b + c, rounded once."""
    a, b, c = _sources(x, i, 3)
    _result(x, i, x.ffma(a, b, c, "f32", rounding(i)))


# ---------------------------------------------------------------- binary64 arithmetic
def _dsources(x: Ctx, i, n: int):
    return [fread(x, o, "f64") for o in i.ops[1:1 + n]]


QUIET64 = 0x00080000      # the quiet bit of a binary64, in its high word


def keep_nan64(x: Ctx, i, n: int, r):
    """DADD/DMUL/DFMA's result ``r`` where a source is a NaN: that NaN, quieted, with its sign
    and payload as the register holds them (the operand's -/|..| not applied; the first of
    a, b, c that is a NaN). On the chip (H200): DADD.RZ Rd, Ra, -Rb with Rb = 0xfff8000000000001
    gives 0xfff8000000000001, an Rb of 0x7ff0000000000001 gives 0x7ff8000000000001. An
    invalid operation's NaN (inf - inf, 0 * inf) stays the canonical one of floatops."""
    hi, lo = x.hi(r), x.lo(r)
    for o in reversed(i.ops[1:1 + n]):
        v = fread(x, replace(o, neg=False, abs=False), "f64")
        nan = is_nan64(x, v)
        hi, lo = x.sel(nan, x.or_(x.hi(v), x.k32(QUIET64)), hi), x.sel(nan, x.lo(v), lo)
    return x.join(lo, hi)


def dadd(x: Ctx, i):
    """DADD[.RN|.RZ|.RM|.RP] Rd, Ra, Rb (register pairs); a NaN source is kept (keep_nan64)."""
    a, b = _dsources(x, i, 2)
    x.write64(i.ops[0], keep_nan64(x, i, 2, x.fadd(a, b, "f64", rounding(i))))


def dmul(x: Ctx, i):
    """DMUL[.RN|.RZ|.RM|.RP] Rd, Ra, Rb; a NaN source is kept (keep_nan64)."""
    a, b = _dsources(x, i, 2)
    x.write64(i.ops[0], keep_nan64(x, i, 2, x.fmul(a, b, "f64", rounding(i))))


def dfma(x: Ctx, i):
    """DFMA[.RN|.RZ|.RM|.RP] Rd, Ra, Rb, Rc: a * b + c, rounded once; a NaN source is kept
    (keep_nan64)."""
    a, b, c = _dsources(x, i, 3)
    x.write64(i.ops[0], keep_nan64(x, i, 3, x.ffma(a, b, c, "f64", rounding(i))))


def dsetp(x: Ctx, i):
    """DSETP.test.{AND,OR,XOR} Pd, Pq, Ra, Rb, Pc: as FSETP on binary64 pairs; DSETP.MIN/.MAX:
    :func:`dsetp_min_max`."""
    if "MIN" in i.mods or "MAX" in i.mods:
        return dsetp_min_max(x, i)
    pd, pq, a, b, pacc = i.ops[:5]
    r, acc = dcompare(x, compare_test(i), fread(x, a, "f64"), fread(x, b, "f64")), x.readp(pacc)
    x.writep(pd, combine_predicate(x, i, r, acc))
    x.writep(pq, combine_predicate(x, i, x.bnot(r), acc))


def dsetp_min_max(x: Ctx, i):
    """DSETP.{MIN,MAX}.{AND,OR,XOR} Pd, Pq, Ra, Rb, Pc, nvcc's fmin/fmax of doubles: Pd says
    that a is the result (a is a number, and b a NaN or a below b for MIN, above for MAX;
    -0 below +0), Pq that both are NaNs; each combined with Pc. nvcc selects a where Pd,
    else b, and quiets b where Pq. The H200: fmin/fmax of a number and a NaN, either way
    round, give the number. Not seen on the chip: two NaNs, and -0 against +0."""
    pd, pq, a, b, pacc = i.ops[:5]
    va, vb = fread(x, a, "f64"), fread(x, b, "f64")
    nan_a, nan_b = is_nan64(x, va), is_nan64(x, vb)
    wins = _compare64(x, "lt" if "MIN" in i.mods else "gt", _order_key64(x, va, False), _order_key64(x, vb, False))
    acc = x.readp(pacc)
    x.writep(pd, combine_predicate(x, i, x.band(x.bnot(nan_a), x.bor(nan_b, wins)), acc))
    x.writep(pq, combine_predicate(x, i, x.band(nan_a, nan_b), acc))


def compare_test(i) -> str:
    """The one float comparison (FSETP_TESTS) among a compare's modifiers."""
    found = [m for m in i.mods if m in FSETP_TESTS]
    if len(found) != 1:
        raise unsupported(i, "needs one comparison")
    return found[0]


def fsetp(x: Ctx, i):
    """FSETP.test[.FTZ].{AND,OR,XOR} Pd, Pq, Ra, Rb, Pc: Pd = test(a, b) op Pc, Pq = !test op Pc."""
    pd, pq, a, b, pacc = i.ops[:5]
    va, vb = (fread(x, o) for o in (a, b))
    if "FTZ" in i.mods:
        va, vb = flush(x, va), flush(x, vb)
    r, acc = fcompare(x, compare_test(i), va, vb), x.readp(pacc)
    x.writep(pd, combine_predicate(x, i, r, acc))
    x.writep(pq, combine_predicate(x, i, x.bnot(r), acc))


def fset(x: Ctx, i):
    """FSET[.BF].test[.FTZ].{AND,OR,XOR} Rd, Ra, Rb, Pc: 1.0 (.BF) or 0xffffffff where true, else 0."""
    d, a, b, pacc = i.ops[:4]
    va, vb = (fread(x, o) for o in (a, b))
    if "FTZ" in i.mods:
        va, vb = flush(x, va), flush(x, vb)
    r = combine_predicate(x, i, fcompare(x, compare_test(i), va, vb), x.readp(pacc))
    x.write(d, x.sel(r, x.k32(ONE if "BF" in i.mods else 0xFFFFFFFF), x.k32(0)))


def fsel(x: Ctx, i):
    """FSEL Rd, Ra, Rb, Pc: a where Pc, else b (words as they are, signs applied)."""
    d, a, b, p = i.ops[:4]
    x.write(d, x.sel(x.readp(p), fread(x, a), fread(x, b)))


def fmnmx(x: Ctx, i):
    """FMNMX[.FTZ][.NAN] Rd, Ra, Rb, Pc: the minimum where Pc, the maximum where !Pc. A NaN gives
    the other operand; two NaNs the canonical NaN. .NAN (PTX's min.NaN/max.NaN): any NaN gives
    the canonical NaN (the H200: 0x7fffffff for every NaN of either operand)."""
    d, a, b, p = i.ops[:4]
    va, vb = (fread(x, o) for o in (a, b))
    if "FTZ" in i.mods:
        va, vb = flush(x, va), flush(x, vb)
    ka, kb = (x.sel(x.cmp("ge", v, x.k32(SIGN), False), x.not_(v), x.or_(v, x.k32(SIGN))) for v in (va, vb))
    lt = x.cmp("lt", ka, kb, False)                  # -0 below +0
    r = x.sel(x.readp(p), x.sel(lt, va, vb), x.sel(lt, vb, va))
    nan_a, nan_b = is_nan(x, va), is_nan(x, vb)
    r = x.sel(nan_a, x.sel(nan_b, x.k32(0x7FFFFFFF), vb), x.sel(nan_b, va, r))
    if "NAN" in i.mods:
        r = x.sel(x.bor(nan_a, nan_b), x.k32(0x7FFFFFFF), r)
    x.write(d, r)


# ---------------------------------------------------------------- conversions
def i2f(x: Ctx, i):
    """I2F[.F16|.F32|.F64][.S8|.U8|.S16|.U16|.S32|.U32|.S64|.U64][.RN|.RZ|.RM|.RP] Rd, Ra:
    an integer (S32 unless told) to a float (F32 unless told); I2FP.F32.{S32,U32} the same."""
    fmt = _one(i, FLOAT_TYPES, "f32")
    width, signed = _one(i, INT_TYPES, (32, True))
    src = x.read64(i.ops[1]) if width == 64 else x.read(i.ops[1])
    fwrite(x, i.ops[0], x.i2f(src, width, signed, fmt, rounding(i)), fmt)


def f2i(x: Ctx, i):
    """F2I[.FTZ][.S32|.U32|.S64|.U64|...][.F16|.F32|.F64][.TRUNC|.FLOOR|.CEIL|.RN][.NTZ] Rd, Ra:
    a float to an integer, rounded as told (to nearest even by default), saturating at the
    integer's range. A NaN gives 0 with .NTZ (and to 8 or 16 bits: not seen on the chip), else
    the integer with only its top bit set, signed or not (the H200: F2I.S64, .S64.TRUNC, .U64.FLOOR of an F32 NaN give
    0x8000000000000000; F2I.F64, .F64.TRUNC, .F64.FLOOR, .U32.F64.CEIL of an F64 NaN
    0x80000000; the .NTZ forms of F32 to S32/U32 give 0)."""
    fmt = _one(i, FLOAT_TYPES, "f32")
    width, signed = _one(i, INT_TYPES, (32, True))
    a = fread(x, i.ops[1], fmt)
    if "FTZ" in i.mods and fmt == "f32":
        a = flush(x, a)
    r = x.f2i(a, fmt, width, signed, rounding(i))
    if "NTZ" not in i.mods and width >= 32:
        r = _nan_to_top_bit(x, _is_nan_of(x, a, fmt), r, width)
    (x.write64 if width == 64 else x.write)(i.ops[0], r)


F2IP_MODS = {"U8", "S8", "F32", "NTZ", "TRUNC"}


def f2ip(x: Ctx, i):
    """F2IP.{U8,S8}.F32[.TRUNC][.NTZ] Rd, Rb, Ra, Rc: Ra converted to an 8-bit integer as
    F2I.U8/.S8 does (to nearest even, or toward zero with .TRUNC; saturating at the byte's
    range; NaN gives 0), in bits 7:0 of Rd, the rest 0.

    F2IP is sm_86's "convert and pack". nvcc 13.0 emits it only for the PTX ``cvt.rni.u8.f32``
    and ``cvt.rzi.u8.f32`` (with or without .sat; inline PTX: casts, clamps and the
    ``__float2*_r*`` intrinsics compile to F2I), always as ``F2IP.U8.F32[.TRUNC].NTZ Rd, RZ,
    Ra, RZ``; every other float to 8 or 16 bits (S8, .FTZ, .rmi/.rpi, F16 and F64 sources) is
    F2I. nvdisasm
    decodes the encoding with Rb converted beside Ra and a half of Rc (``Rc.H1``), which
    suggests Rd = Rc's half << 16 | cvt(Rb) << 8 | cvt(Ra); with Rb = Rc = RZ that is the
    rule above. Not confirmed on the chip: what a non-zero Rb or Rc does (refused here as
    unsupported rather than guessed), the NaN rule without .NTZ (0, as F2I to 8 bits), S8's
    sign in bits 31:8 (0, as packing would leave it); nvcc never emits .S8."""
    d, b, a, c = i.ops[:4]
    if not (is_zero(b) and is_zero(c)) or c.suffix:
        raise unsupported(i, "only the form nvcc emits, F2IP Rd, RZ, Ra, RZ: what Rb and Rc add is unconfirmed")
    signed = "S8" in i.mods
    x.write(d, x.f2i(fread(x, a), "f32", 8, signed, rounding(i)))


def _is_nan_of(x: Ctx, v, fmt: str):
    """Whether a word (a pair for f64; a binary16 in the low half) of ``fmt`` is a NaN."""
    if fmt == "f64":
        return is_nan64(x, v)
    inf, magnitude = {"f16": (0x7C00, 0x7FFF), "bf16": (0x7F80, 0x7FFF)}.get(fmt, (INF, ~SIGN & 0xFFFFFFFF))
    return x.cmp("gt", x.and_(v, x.k32(magnitude)), x.k32(inf), False)


def _nan_to_top_bit(x: Ctx, nan, r, width: int):
    """F2I's result ``r``, or the integer 1 << (width - 1) where ``nan``."""
    if width == 64:
        return x.join(x.sel(nan, x.k32(0), x.lo(r)), x.sel(nan, x.k32(SIGN), x.hi(r)))
    return x.sel(nan, x.k32(1 << width - 1), r)


def f2f(x: Ctx, i):
    """F2F[.FTZ].dst.src[.RN|.RZ|.RM|.RP] Rd, Ra: between F16, F32 and F64 (the destination
    type first); the same type on both sides rounds to an integral value (as FRND). Between
    F32 and F64 a NaN keeps its payload (_converted_nan); others give the canonical NaN."""
    types = [FLOAT_TYPES[m] for m in i.mod_list if m in FLOAT_TYPES]
    if len(types) == 1:
        types *= 2
    if len(types) != 2:
        raise unsupported(i, "needs a destination and a source type")
    dst, src = types
    a = fread(x, i.ops[1], src)
    if "FTZ" in i.mods and src == "f32":
        a = flush(x, a)
    r = x.frnd(a, src, rounding(i)) if dst == src else x.f2f(a, src, dst, rounding(i))
    if "FTZ" in i.mods and dst == "f32":
        r = flush(x, r)
    if {src, dst} == {"f32", "f64"}:
        r = _converted_nan(x, fread(x, replace(i.ops[1], neg=False, abs=False), src), src, r)
    fwrite(x, i.ops[0], r, dst)


def _converted_nan(x: Ctx, v, src: str, r):
    """F2F between F32 and F64: a NaN keeps its sign and payload, quieted: the fraction's top
    bits carry over (F64 to F32 drops the low 29; F32 to F64 adds 29 zeros). On the chip
    (H200): F2F.F64.F32, DMUL, F2F.F32.F64 take 0x7f800001 to 0x7fc00001 and 0xffc00000 to
    0xffc00000. ``r`` where ``v`` is no NaN."""
    if src == "f32":
        hi = x.or_(x.or_(x.and_(v, x.k32(SIGN)), x.k32(0x7FF80000)), x.shr(x.and_(v, x.k32(0x7FFFFF)), x.k32(3)))
        nan = is_nan(x, v)
        return x.join(x.sel(nan, x.shl(v, x.k32(29)), x.lo(r)), x.sel(nan, hi, x.hi(r)))
    hi, lo = x.hi(v), x.lo(v)
    word = x.or_(x.or_(x.and_(hi, x.k32(SIGN)), x.k32(0x7FC00000)),
                 x.or_(x.shl(x.and_(hi, x.k32(0xFFFFF)), x.k32(3)), x.shr(lo, x.k32(29))))
    return x.sel(is_nan64(x, v), word, r)


def frnd(x: Ctx, i):
    """FRND[.F64][.FTZ][.TRUNC|.FLOOR|.CEIL|.RN...] Rd, Ra: to an integral value of the same format."""
    fmt = _one(i, FLOAT_TYPES, "f32")
    a = fread(x, i.ops[1], fmt)
    if "FTZ" in i.mods and fmt == "f32":
        a = flush(x, a)
    fwrite(x, i.ops[0], x.frnd(a, fmt, rounding(i)), fmt)


def _one(i, table, default):
    found = [table[m] for m in i.mods if m in table]
    if len(found) > 1:
        raise unsupported(i, "more than one type of that kind")
    return found[0] if found else default


MUFU_FUNCTIONS = {"RCP": "rcp", "RSQ": "rsq", "SQRT": "sqrt", "EX2": "ex2", "LG2": "lg2", "SIN": "sin", "COS": "cos",
                  "TANH": "tanh", "RCP64H": "rcp64h", "RSQ64H": "rsq64h"}


def mufu(x: Ctx, i):
    """MUFU.{RCP,RSQ,SQRT,EX2,LG2,SIN,COS,TANH,RCP64H,RSQ64H} Rd, Ra: the chip's approximations
    (translator.values.mufuops); SIN and COS take turns; the 64H forms the high word of a binary64."""
    found = [MUFU_FUNCTIONS[m] for m in i.mods if m in MUFU_FUNCTIONS]
    if len(found) != 1:
        raise unsupported(i, "needs one function")
    a = i.ops[1]
    if found[0] in ("rcp64h", "rsq64h") and a.kind in ("fimm", "imm"):
        # ``MUFU.RCP64H R3, 9``: the listing prints the binary64 whose high word is encoded
        # (a hexadecimal immediate is that word itself)
        hexadecimal = a.text.strip().lstrip("+-").lower().startswith("0x")
        arg = x.k32(a.value & 0xFFFFFFFF if hexadecimal else _imm_bits(a, "f64") >> 32)
    else:
        arg = fread(x, a)       # a register's high word: its sign is bit 31 too
    x.write(i.ops[0], x.mufu(arg, found[0]))

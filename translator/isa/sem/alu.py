"""Semantics of the integer core: one function per opcode, written against :class:`Ctx`.

Operand layouts follow what ``nvdisasm`` prints for sm_86 (see
../shared/design/sm86-semantics.md §7). Carry predicates sit right after the destination
(carry-out) or after the sources (carry-in), so :func:`split` separates them by kind.
"""
from __future__ import annotations

from dataclasses import replace

from ...errors import UnsupportedInstruction
from .. import regs
from ..ctx import Ctx
from ..sregs import CLOCK_LOW

PRED_KINDS = ("pred", "upred")


def unsupported(i, why: str):
    return UnsupportedInstruction(f"{i.where}: unsupported {i.opcode}: {why} in '{i.text}'", i.opcode)


def split(i):
    """(destinations, carry-out predicates, sources, trailing predicates) of an instruction."""
    ops = list(i.ops)
    dst = [ops.pop(0)]
    couts = []
    while ops and ops[0].kind in PRED_KINDS:
        couts.append(ops.pop(0))
    tail = []
    while ops and ops[-1].kind in PRED_KINDS:
        tail.insert(0, ops.pop())
    return dst, couts, ops, tail


def _wide(x: Ctx, o):
    if o.neg and o.kind != "imm":
        plain = replace(o, neg=False)
        v = x.read(plain)
        # 2^32 - v: the two's complement with its carry bit (v == 0 gives 2^32)
        return x.add64(x.zext(x.sub(x.k32(0), v)), x.join(x.k32(0), x.b2v(x.cmp("eq", v, x.k32(0), False))))
    return x.zext(x.read(o))


def carry(x: Ctx, w) -> object:
    return x.cmp("ne", x.hi(w), x.k32(0), False)


def cin(x: Ctx, preds, k: int):
    return x.zext(x.b2v(x.readp(preds[k]))) if len(preds) > k else x.k64(0)


# ---------------------------------------------------------------- moves and adds
def mov(x: Ctx, i):
    x.write(i.ops[0], x.read(i.ops[1]))


def iadd3(x: Ctx, i):
    dst, couts, srcs, cins = split(i)
    if len(srcs) != 3:
        raise unsupported(i, "expects three sources")
    if not couts and "X" not in i.mods:     # no carries: plain 32-bit arithmetic
        x.write(dst[0], x.add(x.add(x.read(srcs[0]), x.read(srcs[1])), x.read(srcs[2])))
        return
    a, b, c = (_wide(x, o) for o in srcs)
    total = x.add64(x.add64(a, b), c)
    if "X" in i.mods:
        total = x.add64(total, x.add64(cin(x, cins, 0), cin(x, cins, 1)))
    x.write(dst[0], x.lo(total))
    # The carry-outs count the carries out of bit 31: the first is set by one or more
    # (sum >= 2^32), the second by two or more (sum >= 2^33), as Mesa NAK's hardware-checked
    # folding has it; IADD3.X adds both back, so the count is kept.
    if couts:
        x.writep(couts[0], carry(x, total))
    if len(couts) > 1:
        x.writep(couts[1], x.cmp("gt", x.hi(total), x.k32(1), False))


def imad(x: Ctx, i):
    dst, couts, srcs, cins = split(i)
    if len(srcs) != 3:
        raise unsupported(i, "expects three sources")
    a, b = x.read(srcs[0]), x.read(srcs[1])
    signed = "U32" not in i.mods
    ext = x.sext if signed else x.zext
    if "WIDE" in i.mods:    # 64-bit a*b + c
        prod, c = x.mul64(ext(a), ext(b)), x.read64(srcs[2])
        if not couts:
            total = x.add64(prod, c)
            x.write64(dst[0], x.add64(total, cin(x, cins, 0)) if "X" in i.mods else total)
            return
        # in halves, so the carry out of bit 63 is kept
        low = x.add64(x.zext(x.lo(prod)), x.zext(x.lo(c)))
        if "X" in i.mods:
            low = x.add64(low, cin(x, cins, 0))
        high = x.add64(x.add64(x.zext(x.hi(prod)), x.zext(x.hi(c))), x.zext(x.hi(low)))
        x.write64(dst[0], x.join(x.lo(low), x.lo(high)))
        if couts:
            x.writep(couts[0], carry(x, high))
        return
    if not couts and not i.mods & {"X", "HI"}:   # no carries: plain 32-bit arithmetic
        x.write(dst[0], x.add(x.mul(a, b), x.read(srcs[2])))
        return
    carry_in = cin(x, cins, 0) if "X" in i.mods else x.k64(0)
    if "HI" in i.mods:
        total = _mul_hi_add(x, x.mul64(ext(a), ext(b)), x.read64(srcs[2]), carry_in)
    else:
        total = x.add64(x.add64(x.zext(x.mul(a, b)), _wide(x, srcs[2])), carry_in)
    x.write(dst[0], x.lo(total))
    if couts:
        x.writep(couts[0], carry(x, total))


def _mul_hi_add(x: Ctx, prod, c, carry_in):
    """IMAD.HI's sum: bits 32..63 of (the 64-bit product + the register pair c + carry_in), and
    above them the carry out of bit 63. The 64-bit sum is taken in halves so that carry is kept:
    the udiv64 and mul.hi.u64 sequences chain it into the next IADD3.X/IMAD.X (dropping it makes
    64-bit quotients one unit of 2^32 low). The carry-in (.X) enters at bit 0, where the
    mul.hi.u64 of a division by a constant puts the carry out of the middle partial products
    (``IADD3 RZ, P1, ...`` then ``IMAD.HI.U32.X``); added to the high word it is 2^32 too big."""
    low = x.add64(x.add64(x.zext(x.lo(prod)), x.zext(x.lo(c))), carry_in)
    return x.add64(x.add64(x.zext(x.hi(prod)), x.zext(x.hi(c))), x.zext(x.hi(low)))


def lea(x: Ctx, i):
    dst, couts, srcs, cins = split(i)
    if "HI" in i.mods:
        if "SX32" in i.mods:
            a, b, s = srcs
            ahi = x.sar(x.read(a), x.k32(31))
        else:
            a, b, h, s = srcs
            ahi = x.read(h)
        pair = x.join(x.read(a), ahi)
        shifted = x.zext(x.hi(x.shl64(pair, x.read(s))))
    else:
        a, b, s = srcs
        if not couts and "X" not in i.mods:
            x.write(dst[0], x.add(x.shl(x.read(a), x.read(s)), x.read(b)))
            return
        shifted = x.zext(x.shl(x.read(a), x.read(s)))
    total = x.add64(shifted, _wide(x, b))
    if "X" in i.mods:
        total = x.add64(total, cin(x, cins, 0))
    x.write(dst[0], x.lo(total))
    if couts:
        x.writep(couts[0], carry(x, total))


# ---------------------------------------------------------------- logic
def lut3(x: Ctx, lut: int, a, b, c, *, boolean: bool):
    """Evaluate a 3-input truth table (a=0xF0, b=0xCC, c=0xAA), bitwise or on predicates."""
    if boolean:
        ops = (x.band, x.bor, x.bxor, x.bnot, x.kb(False), x.kb(True))
    else:
        ops = (x.and_, x.or_, x.xor, x.not_, x.k32(0), x.k32(0xFFFFFFFF))
    return _table(ops, lut & 0xFF, (a, b, c))


def _table(ops, table: int, args: tuple):
    """A truth table over ``args`` (the first is the highest index bit), by Shannon expansion
    on the first input: f = a ? f1 : f0, with the cheap cases (f1 == f0, f1 == ~f0 is a XOR,
    a constant side is an AND or an OR) found first. No table of three inputs needs more than
    a handful of operations, where a sum of minterms needs up to 20."""
    and_, or_, xor, not_, zero, one = ops
    half = 1 << (len(args) - 1)         # entries per cofactor
    ones = (1 << half) - 1
    if table == 0:
        return zero
    if table == (1 << 2 * half) - 1:
        return one
    v, rest = args[0], args[1:]
    f1, f0 = table >> half, table & ones
    if f1 == f0:
        return _table(ops, f0, rest)
    if (f1, f0) == (ones, 0):
        return v
    if (f1, f0) == (0, ones):
        return not_(v)
    if f1 == f0 ^ ones:
        return xor(v, _table(ops, f0, rest))
    if f0 == 0:
        return and_(v, _table(ops, f1, rest))
    if f1 == 0:
        return and_(not_(v), _table(ops, f0, rest))
    if f1 == ones:
        return or_(v, _table(ops, f0, rest))
    if f0 == ones:
        return or_(not_(v), _table(ops, f1, rest))
    return or_(and_(v, _table(ops, f1, rest)), and_(not_(v), _table(ops, f0, rest)))


def lop3(x: Ctx, i):
    ops = list(i.ops)
    pdst = ops.pop(0) if ops[0].kind in PRED_KINDS else None
    d, a, b, c, lut = ops[:5]
    if len(ops) > 5 and not (regs.is_true(ops[5]) and ops[5].inv):
        raise unsupported(i, "a predicate input other than !PT")
    r = lut3(x, lut.value, x.read(a), x.read(b), x.read(c), boolean=False)
    x.write(d, r)
    if pdst is not None:
        x.writep(pdst, x.cmp("ne", r, x.k32(0), False))


def plop3(x: Ctx, i):
    p0, p1, a, b, c, l0, l1 = i.ops[:7]
    va, vb, vc = x.readp(a), x.readp(b), x.readp(c)
    x.writep(p0, lut3(x, l0.value, va, vb, vc, boolean=True))
    x.writep(p1, lut3(x, l1.value, va, vb, vc, boolean=True))


def shf(x: Ctx, i):
    d, lo, n, hi = i.ops[:4]
    bits = 64 if ("U64" in i.mods or "S64" in i.mods) else 32
    signed = "S64" in i.mods or "S32" in i.mods
    k = (n.value & (bits - 1) if "W" in i.mods else n.value) if n.kind == "imm" and not (n.neg or n.inv) else -1
    if 0 <= k < 32:     # a constant amount under 32: one word of the pair decides the result
        # (SHF.R.U32.HI Rd, RZ, k, Rb is the compiler's 32-bit right shift): no 64-bit shift
        if "L" in i.mods and "HI" not in i.mods:
            return x.write(d, x.shl(x.read(lo), x.k32(k)))
        if "L" not in i.mods and "HI" in i.mods:
            return x.write(d, (x.sar if signed else x.shr)(x.read(hi), x.k32(k)))
    amount = x.read(n)
    amount = x.and_(amount, x.k32(bits - 1)) if "W" in i.mods else amount
    amount = x.sel(x.cmp("gt", amount, x.k32(bits), False), x.k32(bits), amount)
    pair = x.join(x.read(lo), x.read(hi))
    if "L" in i.mods:
        r = x.shl64(pair, amount)
    elif signed:
        r = x.sar64(pair, amount)
    else:
        r = x.shr64(pair, amount)
    x.write(d, x.hi(r) if "HI" in i.mods else x.lo(r))


def _cmp_name(i):
    for op in ("EQ", "NE", "LT", "LE", "GT", "GE"):
        if op in i.mods:
            return op.lower()
    raise unsupported(i, "no comparison")


def combine_predicate(x: Ctx, i, a, b):
    """A setp's result ``a`` joined with its accumulating predicate ``b`` by the .AND / .OR / .XOR
    modifier (ISETP, FSETP, DSETP, HSETP2)."""
    if "AND" in i.mods:
        return x.band(a, b)
    if "OR" in i.mods:
        return x.bor(a, b)
    if "XOR" in i.mods:
        return x.bxor(a, b)
    raise unsupported(i, "no .AND/.OR/.XOR")


def isetp(x: Ctx, i):
    pd, pq, a, b, pacc = i.ops[:5]
    op, signed = _cmp_name(i), "U32" not in i.mods
    va, vb = x.read(a), x.read(b)
    r = x.cmp(op, va, vb, signed)
    if "EX" in i.mods:
        plow = x.readp(i.ops[5])
        eq = x.cmp("eq", va, vb, signed)
        if op == "eq":
            r = x.band(eq, plow)
        elif op == "ne":
            r = x.bor(x.bnot(eq), plow)
        else:
            strict = x.cmp({"lt": "lt", "le": "lt", "gt": "gt", "ge": "gt"}[op], va, vb, signed)
            r = x.bor(strict, x.band(eq, plow))
    acc = x.readp(pacc)
    x.writep(pd, combine_predicate(x, i, r, acc))
    x.writep(pq, combine_predicate(x, i, x.bnot(r), acc))


def sel(x: Ctx, i):
    d, a, b, p = i.ops[:4]
    x.write(d, x.sel(x.readp(p), x.read(a), x.read(b)))


def imnmx(x: Ctx, i):
    d, a, b, p = i.ops[:4]
    va, vb = x.read(a), x.read(b)
    lt = x.cmp("lt", va, vb, "U32" not in i.mods)
    mn, mx = x.sel(lt, va, vb), x.sel(lt, vb, va)
    x.write(d, x.sel(x.readp(p), mn, mx))


def iabs(x: Ctx, i):
    v = x.read(i.ops[1])
    x.write(i.ops[0], x.sel(x.cmp("lt", v, x.k32(0), True), x.sub(x.k32(0), v), v))


def cs2r(x: Ctx, i):
    """CS2R[.32] Rd, SRZ | SR_CLOCKLO | SR_GLOBALTIMERLO: zero, or the clock (a pair, or its low
    word with .32)."""
    src = i.ops[1]
    if regs.is_zero(src):
        value = x.k64(0)
    elif src.kind == "sreg" and src.name in CLOCK_LOW:
        value = x.join(x.read(src), x.read(replace(src, name=src.name[:-2] + "HI")))
    else:
        raise unsupported(i, f"special register {src.text}")
    if "32" in i.mods:
        x.write(i.ops[0], x.lo(value))
    else:
        x.write64(i.ops[0], value)


def fchk(x: Ctx, i):
    """FCHK Pd, Ra, Rb: whether the division Ra / Rb must leave nvcc's fast path (reciprocal
    and two refinements) for the full one (a call to ``__internal_..._div_rn_..._slowpath``).
    The chip's exact test (exponent ranges of Ra and Rb) is not documented; Pd = true here:
    the full path gives the correctly rounded quotient for every input, and the fast path gives
    the same quotient wherever the chip takes it, so the results are the chip's (only the
    clock, see sregs.reads_clock, counts more instructions)."""
    x.writep(i.ops[0], x.kb(True))


SUBWORDS = {"U8": (8, False), "S8": (8, True), "U16": (16, False), "S16": (16, True)}


def ldc(x: Ctx, i):
    """LDC/ULDC[.64|.U8|.S8|.U16|.S16]: a constant-bank word, pair, or byte/halfword (char,
    bool and short parameters) zero- or sign-extended."""
    d, src = i.ops[0], i.ops[1]
    sub = next((SUBWORDS[m] for m in i.mods if m in SUBWORDS), None)
    if "64" in i.mods:
        x.write64(d, x.read64(src))
    elif sub is None:
        x.write(d, x.read(src))
    else:
        bits, signed = sub
        if src.kind != "cbank":
            raise unsupported(i, f"a byte or halfword of {src.text}")
        off = x.k32(src.offset)                     # the byte's address: an indexed table read
        for base in (src.base, src.uniform_base):   # (``c[0x3][R7]``) knows it only at run time
            if base is not None and not regs.is_zero(base):
                off = x.add(off, x.read(base))
        # the halfword of an aligned table never crosses a word: shift its top to bit 31, then down
        high = x.sub(x.k32(32 - bits), x.shl(x.and_(off, x.k32(3)), x.k32(3)))
        v = x.shl(x.cbank_word(src.value, off), high)
        x.write(d, x.sar(v, x.k32(32 - bits)) if signed else x.shr(v, x.k32(32 - bits)))


def nop(x: Ctx, i):
    """Scheduling, caching and fence instructions: no effect on results here."""

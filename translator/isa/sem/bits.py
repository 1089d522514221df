"""Semantics of the integer core's byte and bit instructions, written against :class:`Ctx`:
byte sums of absolute differences (VABSDIFF, VABSDIFF4), byte permutes (PRMT), bit counts and
reversals (POPC, FLO, BREV), sign extension (SGXT), bit masks (BMSK), and the predicate
registers as bits of a register (P2R, R2P). The arithmetic and logic are in
:mod:`translator.isa.sem.alu`."""
from __future__ import annotations

from dataclasses import replace

from .. import regs
from ..ctx import Ctx
from .alu import unsupported


def vabsdiff(x: Ctx, i):
    """VABSDIFF[.U32|.S32] Rd, Ra, Rb, Rc: |Ra - Rb| + Rc (mod 2^32); signed unless .U32 (nvcc's
    __sad and __usad)."""
    d, a_op, b_op, c_op = i.ops[:4]
    a, b, c = x.read(a_op), x.read(b_op), x.read(c_op)
    signed = "U32" not in i.mods
    a_less = x.cmp("lt", a, b, signed)
    x.write(d, x.add(x.sel(a_less, x.sub(b, a), x.sub(a, b)), c))


def vabsdiff4(x: Ctx, i):
    """VABSDIFF4.U8 Rd, Ra, Rb, RZ: the four unsigned byte differences |a_k - b_k| packed (nvcc's
    __vabsdiffu4); .ACC: their sum plus Rc (__vsadu4). Other byte types, and Rc with the packed
    form, are refused: not seen in nvcc's output, their meaning not checked on a chip."""
    d, a_op, b_op, c_op = i.ops[:4]
    if "U8" not in i.mods:
        raise unsupported(i, "VABSDIFF4 on bytes other than .U8")
    if "ACC" not in i.mods and not regs.is_zero(c_op):
        raise unsupported(i, "VABSDIFF4 merging a third operand")
    a, b = x.read(a_op), x.read(b_op)
    parts = []
    for k in range(4):
        ak = x.and_(x.shr(a, x.k32(8 * k)), x.k32(0xFF))
        bk = x.and_(x.shr(b, x.k32(8 * k)), x.k32(0xFF))
        parts.append(x.sel(x.cmp("lt", ak, bk, False), x.sub(bk, ak), x.sub(ak, bk)))
    if "ACC" in i.mods:
        total = x.read(c_op)
        for part in parts:
            total = x.add(total, part)
        x.write(d, total)
        return
    packed = parts[0]
    for k in range(1, 4):
        packed = x.or_(packed, x.shl(parts[k], x.k32(8 * k)))
    x.write(d, packed)


def prmt(x: Ctx, i):
    d, a, s, b = i.ops[:4]
    if set(i.mods) - {"PRMT"}:
        raise unsupported(i, "byte-permute modes")
    pair, sel_ = x.join(x.read(a), x.read(b)), x.read(s)
    out = x.k32(0)
    for k in range(4):
        nib = x.shr(sel_, x.k32(4 * k))
        idx = x.and_(nib, x.k32(7))
        byte = x.and_(x.lo(x.shr64(pair, x.mul(idx, x.k32(8)))), x.k32(0xFF))
        sign = x.cmp("ne", x.and_(byte, x.k32(0x80)), x.k32(0), False)
        rep = x.cmp("ne", x.and_(nib, x.k32(8)), x.k32(0), False)
        byte = x.sel(rep, x.sel(sign, x.k32(0xFF), x.k32(0)), byte)
        out = x.or_(out, x.shl(byte, x.k32(8 * k)))
    x.write(d, out)


def popc(x: Ctx, i):
    x.write(i.ops[0], x.popc(x.read(i.ops[1])))


def brev(x: Ctx, i):
    x.write(i.ops[0], x.brev(x.read(i.ops[1])))


def flo(x: Ctx, i):
    r = x.msb(x.read(i.ops[-1]), "S32" in i.mods)
    if "SH" in i.mods:
        none = x.cmp("eq", r, x.k32(0xFFFFFFFF), False)
        r = x.sel(none, r, x.sub(x.k32(31), r))
    x.write(i.ops[0], r)


def sgxt(x: Ctx, i):
    """SGXT[.U32] Rd, Ra, Rb: the low Rb bits of Ra, sign-extended (zero-extended with .U32);
    a width of 0 gives 0, one of 32 or more (without .W) all of Ra (the H200 on realkernels/bmsk_bitfield:
    bfe.u32 with a length of 33-39 keeps every bit from the position up)."""
    d, a, n = i.ops[:3]
    va, vn = x.read(a), x.read(n)
    if "W" not in i.mods:
        vn = x.sel(x.cmp("gt", vn, x.k32(32), False), x.k32(32), vn)
    shift = x.sub(x.k32(32), vn)
    r = x.shr(x.shl(va, shift), shift) if "U32" in i.mods else x.sar(x.shl(va, shift), shift)
    x.write(d, x.sel(x.cmp("eq", vn, x.k32(0), False), x.k32(0), r))


NUM_PREDICATES = 7      # P0-P6 (PT is not stored)


def _byte_select(i, o) -> tuple[object, int]:
    """A register operand without its byte select (``R0.B1``) and the shift the select names."""
    sel = [s for s in o.suffix if s in ("B0", "B1", "B2", "B3")]
    if o.kind not in ("reg", "ureg") or len(sel) > 1:
        raise unsupported(i, f"expected a register with an optional byte select, got {o.text}")
    return replace(o, suffix=tuple(s for s in o.suffix if s not in sel)), 8 * int(sel[0][1]) if sel else 0


def _predicate(o, k: int):
    """Predicate register ``k`` of the file ``o`` (a register or uniform one) belongs to."""
    kind = "upred" if o.kind == "ureg" else "pred"
    name = ("UP" if kind == "upred" else "P") + str(k)
    return replace(o, kind=kind, value=k, name=name, text=name, suffix=(), inv=False, neg=False, abs=False)


def _pred_mask(i, o) -> int:
    if o.kind != "imm":
        raise unsupported(i, f"a predicate mask in a register ({o.text})")
    return o.value & ((1 << NUM_PREDICATES) - 1)


def p2r(x: Ctx, i):
    """P2R Rd, PR, Ra[.Bk], mask: Ra with the bits of ``mask << 8k`` replaced by P0-P6 (bit j
    of the mask takes Pj), as a spill of the predicates into one byte of a register."""
    d, pr, src, mask_op = i.ops[:4]
    base, shift = _byte_select(i, src)
    mask = _pred_mask(i, mask_op)
    bits = x.k32(0)
    for k in range(NUM_PREDICATES):
        if mask >> k & 1:
            bits = x.or_(bits, x.shl(x.b2v(x.readp(_predicate(d, k))), x.k32(k)))
    kept = x.and_(x.read(base), x.k32(~(mask << shift)))
    x.write(d, x.or_(kept, x.shl(bits, x.k32(shift))))


def r2p(x: Ctx, i):
    """R2P PR, Ra[.Bk], mask: Pj = bit 8k+j of Ra for every bit j of the mask; others kept."""
    pr, src, mask_op = i.ops[:3]
    base, shift = _byte_select(i, src)
    mask = _pred_mask(i, mask_op)
    value = x.read(base)
    for k in range(NUM_PREDICATES):
        if mask >> k & 1:
            bit = x.and_(x.shr(value, x.k32(shift + k)), x.k32(1))
            x.writep(_predicate(src, k), x.cmp("ne", bit, x.k32(0), False))


def bmsk(x: Ctx, i):
    """BMSK[.W] Rd, Ra, Rb: ``Rb`` ones from bit ``Ra`` up, as PTX's bmsk.clamp (.W: bmsk.wrap):
    position and width count modulo 32; without .W a position >= 32 gives 0 and a width >= 32
    every bit from the position up."""
    d, a_op, b_op = i.ops[:3]
    a, b = x.read(a_op), x.read(b_op)
    ones, k31 = x.k32(0xFFFFFFFF), x.k32(31)
    a1, b1 = x.and_(a, k31), x.and_(b, k31)
    low = x.shl(ones, a1)                               # bits from the position up
    high = x.shl(ones, x.add(a1, b1))                   # bits from position + width up (0 past 31)
    none = x.cmp("eq", b1, x.k32(0), False)
    if "W" not in i.mods:
        low = x.sel(x.cmp("gt", a, k31, False), x.k32(0), low)
        wide = x.cmp("gt", b, k31, False)
        none = x.band(none, x.bnot(wide))
        high = x.sel(wide, x.k32(0), high)
    high = x.sel(x.band(none, x.cmp("lt", x.add(a1, b1), x.k32(32), False)), ones, high)
    x.write(d, x.and_(low, x.not_(high)))

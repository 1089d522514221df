"""128-bit significands for the binary64 product and fused multiply-add of the soft float.

A binary64 product has 106 significant bits, more than one 64-bit word holds; DFMA must add
the addend to all of them before its one rounding (cancellation can bring the lowest to the
front). So the product is built from four 32x32-bit partial products into a pair of words
``(hi, lo)``, operands are aligned in 128 bits (a bit shifted out becomes a sticky bit in
bit 0), and the result is jammed into one word below 2^62 for
:meth:`translator.emit.float.soft.SoftFloat.round_pack`. Written on the same integer words as
the soft float, so it runs on SPIR-V values and on Python integers alike.
"""
from __future__ import annotations

M32 = 0xFFFFFFFF
LEAD = 124          # where alignment puts a significand's leading bit (room for a carry above)
JAM = 60            # where the jammed result's leading bit goes (as emit_float.TOP)


class Wide:
    """Pairs of 64-bit words as one 128-bit number, for the soft float ``s``."""

    def __init__(self, s):
        self.s, self.x = s, s.x

    def mul(self, a, b):
        """The 128-bit product of two words below 2^64 (binary64 significands: below 2^53)."""
        x, s = self.x, self.s
        a0, a1, b0, b1 = (x.zext(w) for w in (x.lo(a), x.hi(a), x.lo(b), x.hi(b)))
        p00, p01, p10, p11 = x.mul64(a0, b0), x.mul64(a0, b1), x.mul64(a1, b0), x.mul64(a1, b1)
        mid = x.add64(p01, p10)                                  # below 2^54 for binary64 significands
        mid_carry = s.bit64(s.cmp64("lt", mid, p01))
        lo = x.add64(p00, x.shl64(mid, x.k32(32)))
        carry = s.bit64(s.cmp64("lt", lo, p00))
        hi = x.add64(x.add64(p11, x.shr64(mid, x.k32(32))), x.add64(carry, x.shl64(mid_carry, x.k32(32))))
        return hi, lo

    def msb(self, h, l):
        """The index of the highest set bit (0xffffffff for zero)."""
        x, s = self.x, self.s
        return x.sel(s.cmp64("ne", h, x.k64(0)), x.add(s.msb64(h), x.k32(64)), s.msb64(l))

    def shl(self, h, l, n):
        """(h, l) << n for 0 <= n < 128."""
        x, s = self.x, self.s
        small = x.cmp("lt", n, x.k32(64), False)
        spill = x.shr64(l, x.sub(x.k32(64), n))                      # n == 0: a shift by 64 gives 0
        return (s.sel64(small, s.or64(x.shl64(h, n), spill), x.shl64(l, x.sub(n, x.k32(64)))),
                s.sel64(small, x.shl64(l, n), x.k64(0)))

    def shr_sticky(self, h, l, n):
        """(h, l) >> n (n >= 0, unsigned), every bit shifted out ORed into bit 0."""
        x, s = self.x, self.s
        small = x.cmp("lt", n, x.k32(64), False)
        huge = x.cmp("ge", n, x.k32(128), False)
        n_lo = x.sel(small, n, x.sub(n, x.k32(64)))               # the shift within one word
        low_mask = s.sub64(x.shl64(x.k64(1), n_lo), x.k64(1))     # n_lo past 63: all ones... guarded below
        low_mask = s.sel64(x.cmp("ge", n_lo, x.k32(64), False), x.k64((1 << 64) - 1), low_mask)
        # n < 64: l's low n bits are lost; 64 <= n < 128: all of l and h's low n-64 bits are
        lost_small = s.and64(l, low_mask)
        lost_big = s.or64(l, s.and64(h, low_mask))
        lost = s.sel64(huge, s.or64(h, l), s.sel64(small, lost_small, lost_big))
        new_l = s.sel64(small, s.or64(x.shr64(l, n), x.shl64(h, x.sub(x.k32(64), n))), x.shr64(h, n_lo))
        new_h = s.sel64(small, x.shr64(h, n), x.k64(0))
        new_l = s.sel64(huge, x.k64(0), new_l)
        return new_h, s.or64(new_l, s.bit64(s.cmp64("ne", lost, x.k64(0))))

    def add(self, h, l, h2, l2):
        x, s = self.x, self.s
        lo = x.add64(l, l2)
        return x.add64(x.add64(h, h2), s.bit64(s.cmp64("lt", lo, l))), lo

    def sub(self, h, l, h2, l2):
        s = self.s
        borrow = s.bit64(s.cmp64("lt", l, l2))
        return s.sub64(s.sub64(h, h2), borrow), s.sub64(l, l2)

    def ge(self, h, l, h2, l2):
        x, s = self.x, self.s
        return x.bor(s.cmp64("gt", h, h2), x.band(s.cmp64("eq", h, h2), s.cmp64("ge", l, l2)))

    def normalized(self, h, l, e):
        """The value with its leading bit at LEAD, and its exponent to match; zero gets an
        exponent far below any other, so alignment puts it last."""
        x = self.x
        top = self.msb(h, l)
        zero = x.cmp("eq", top, x.k32(M32), False)
        up = x.sel(zero, x.k32(0), x.sub(x.k32(LEAD), top))
        h, l = self.shl(h, l, up)
        return h, l, x.sel(zero, x.k32(-8192 & M32), x.sub(e, up))

    def jam(self, h, l, e):
        """One word below 2^62 (bits below its leading 61 jammed into bit 0) and its exponent."""
        x = self.x
        top = self.msb(h, l)
        drop = x.sel(x.cmp("gt", top, x.k32(JAM), True), x.sub(top, x.k32(JAM)), x.k32(0))
        drop = x.sel(x.cmp("eq", top, x.k32(M32), False), x.k32(0), drop)
        _, m = self.shr_sticky(h, l, drop)
        return m, x.add(e, drop)

    def sum(self, sa, ha, la, ea, sb, hb, lb, eb, rounding):
        """``(-1)^sa (ha, la) 2^ea + (-1)^sb (hb, lb) 2^eb`` as (sign, jammed m, e) for rounding
        (both below 2^120)."""
        x, s = self.x, self.s
        ha, la, ea = self.normalized(ha, la, ea)
        hb, lb, eb = self.normalized(hb, lb, eb)
        swap = x.cmp("lt", ea, eb, True)
        hx, lx, ex, sx = s.sel64(swap, hb, ha), s.sel64(swap, lb, la), x.sel(swap, eb, ea), x.selb(swap, sb, sa)
        hy, ly, ey, sy = s.sel64(swap, ha, hb), s.sel64(swap, la, lb), x.sel(swap, ea, eb), x.selb(swap, sa, sb)
        hy, ly = self.shr_sticky(hy, ly, x.sub(ex, ey))
        same = x.bnot(x.bxor(sx, sy))
        x_bigger = self.ge(hx, lx, hy, ly)
        plus, minus, rminus = self.add(hx, lx, hy, ly), self.sub(hx, lx, hy, ly), self.sub(hy, ly, hx, lx)
        h = s.sel64(same, plus[0], s.sel64(x_bigger, minus[0], rminus[0]))
        l = s.sel64(same, plus[1], s.sel64(x_bigger, minus[1], rminus[1]))
        sign = x.selb(same, sx, x.selb(x_bigger, sx, sy))
        zero = x.band(s.cmp64("eq", h, x.k64(0)), s.cmp64("eq", l, x.k64(0)))
        zero_sign = x.bor(sa, sb) if rounding == "rm" else x.band(sa, sb)
        m, e = self.jam(h, l, ex)
        return x.selb(zero, zero_sign, sign), m, e

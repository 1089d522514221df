"""64-bit values as pairs of 32-bit words, for devices without ``shaderInt64``.

:class:`PairCtx` is :class:`translator.emit.ctx.SpirvCtx` with every 64-bit word of the
context (``k64``, ``zext``, ``join``, ``add64``, ``shl64``...; the soft float's ``sub64``,
``cmp64``...) held as a :class:`Pair` of 32-bit SSA ids instead of one ``OpTypeInt 64``
value, so the module declares no ``Int64`` capability. Each operation is written on the
32-bit operations of the context, which fold constants and take shifts of any amount
(a shift by 32 or more gives 0, or the sign), so the pair forms need no branches:

- add/sub: the low words, then the high words with the carry (borrow) of the low ones;
- mul: ``OpUMulExtended`` of the low words (core SPIR-V), plus the two cross products in the
  high word;
- shifts by ``n``: each word from both words of the source, shifted by ``n``, ``32 - n`` and
  ``n - 32``; the amounts that fall outside 0-31 give 0 by themselves.

64-bit atomics need a 64-bit type in memory: without ``shaderInt64`` they are UNSUPPORTED.
"""
from __future__ import annotations

from typing import NamedTuple

from .ctx import SpirvCtx


class Pair(NamedTuple):
    """A 64-bit value: its low and high 32-bit words (SSA ids)."""
    lo: int
    hi: int


class PairCtx(SpirvCtx):
    """SpirvCtx whose 64-bit words are :class:`Pair`s of 32-bit words (see the module's docstring)."""
    __slots__ = ()

    def k64(self, v):
        return Pair(self.k32(v & 0xFFFFFFFF), self.k32(v >> 32 & 0xFFFFFFFF))

    def zext(self, a): return Pair(a, self.k32(0))
    def sext(self, a): return Pair(a, self.sar(a, self.k32(31)))
    def lo(self, a): return a.lo
    def hi(self, a): return a.hi
    def join(self, lo, hi): return Pair(lo, hi)

    def _carry(self, total, a):
        """1 where the 32-bit sum ``total`` of ``a`` and something wrapped around, else 0."""
        return self.b2v(self.cmp("lt", total, a, False)) if total != a else self.k32(0)

    def add64(self, a, b):
        lo = self.add(a.lo, b.lo)
        return Pair(lo, self.add(self.add(a.hi, b.hi), self._carry(lo, a.lo)))

    def sub64(self, a, b):
        borrow = self.b2v(self.cmp("lt", a.lo, b.lo, False)) if self._value(b.lo) != 0 else self.k32(0)
        return Pair(self.sub(a.lo, b.lo), self.sub(self.sub(a.hi, b.hi), borrow))

    def _mul_wide(self, a, b):
        """The 64-bit product of two words, as a pair."""
        va, vb = self._value(a), self._value(b)
        if va is not None and vb is not None:
            return self.k64(va * vb)
        if 0 in (va, vb):
            return self.k64(0)
        u32 = self.u32
        both = self.f.op("UMulExtended", self.m.struct(u32, u32), a, b)
        return Pair(self.f.op("CompositeExtract", u32, both, 0), self.f.op("CompositeExtract", u32, both, 1))

    def mul64(self, a, b):
        low = self._mul_wide(a.lo, b.lo)
        cross = self.add(self.mul(a.lo, b.hi), self.mul(a.hi, b.lo))
        return Pair(low.lo, self.add(low.hi, cross))

    def and64(self, a, b): return Pair(self.and_(a.lo, b.lo), self.and_(a.hi, b.hi))
    def or64(self, a, b): return Pair(self.or_(a.lo, b.lo), self.or_(a.hi, b.hi))

    def cmp64(self, op, a, b):
        if op in ("eq", "ne"):
            same = self.band(self.cmp("eq", a.lo, b.lo, False), self.cmp("eq", a.hi, b.hi, False))
            return same if op == "eq" else self.bnot(same)
        # the high words decide, or the low ones where the high ones are equal
        strict = {"le": "lt", "ge": "gt"}.get(op, op)
        return self.bor(self.cmp(strict, a.hi, b.hi, False),
                        self.band(self.cmp("eq", a.hi, b.hi, False), self.cmp(op, a.lo, b.lo, False)))

    def sel64(self, c, a, b):
        return Pair(self.sel(c, a.lo, b.lo), self.sel(c, a.hi, b.hi))

    def _less(self, n, k):
        return self.sub(self.k32(k), n)

    def shl64(self, a, n):
        k32 = self.k32
        spill = self.or_(self.shr(a.lo, self._less(n, 32)), self.shl(a.lo, self.sub(n, k32(32))))
        return Pair(self.shl(a.lo, n), self.or_(self.shl(a.hi, n), spill))

    def shr64(self, a, n):
        k32 = self.k32
        spill = self.or_(self.shl(a.hi, self._less(n, 32)), self.shr(a.hi, self.sub(n, k32(32))))
        return Pair(self.or_(self.shr(a.lo, n), spill), self.shr(a.hi, n))

    def sar64(self, a, n):
        k32 = self.k32
        below = self.or_(self.shr(a.lo, n), self.shl(a.hi, self._less(n, 32)))
        lo = self.sel(self.cmp("lt", n, k32(32), False), below, self.sar(a.hi, self.sub(n, k32(32))))
        return Pair(lo, self.sar(a.hi, n))

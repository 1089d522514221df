"""The Ctx's arithmetic on numpy arrays over the lanes of one instruction: every name in
:data:`translator.values.intops.OPERATIONS`, lane by lane the same value as intops gives.

A 32-bit word ``V`` and a 64-bit word ``W`` are uint64 arrays (a V below 2^32), a boolean ``B``
a bool array; uint64 arithmetic wraps modulo 2^64 as intops' ``& M64`` does. The float words
(floatops, mufuops) run the scalar functions lane by lane, see :class:`FloatWords`.
"""
from __future__ import annotations

import numpy as np

from ...values import floatops, mufuops

U64, I64 = np.uint64, np.int64
M32, M64 = 0xFFFFFFFF, 0xFFFFFFFFFFFFFFFF
_CMP = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
        "gt": np.greater, "ge": np.greater_equal}


def s32(a):
    """Words as signed 32-bit integers (int64)."""
    return ((a & M32).astype(I64) ^ 0x80000000) - 0x80000000


def add(a, b): return (a + b) & M32
def sub(a, b): return (a - b) & M32
def mul(a, b): return (a * b) & M32
def and_(a, b): return a & b
def or_(a, b): return a | b
def xor(a, b): return a ^ b
def not_(a): return ~a & M32
def shl(a, n): return np.where(n < 32, (a << (n & 31)) & M32, U64(0))
def shr(a, n): return np.where(n < 32, a >> (n & 31), U64(0))
def sar(a, n): return ((s32(a) >> np.minimum(n, 31).astype(I64)) & M32).astype(U64)
def popc(a): return np.bitwise_count(a).astype(U64)


def brev(a):
    v = a & M32
    for shift, mask in ((1, 0x55555555), (2, 0x33333333), (4, 0x0F0F0F0F), (8, 0x00FF00FF), (16, 0x0000FFFF)):
        v = ((v >> shift) & mask) | ((v & mask) << shift)
    return v & M32


def msb(a, signed):
    if signed:
        a = np.where(a >> 31 & 1, ~a & M32, a)
    top = (np.frexp(a.astype(np.float64))[1] - 1).astype(I64)
    return np.where(a == 0, U64(M32), (top & M32).astype(U64))


def cmp(op, a, b, signed):
    if signed:
        a, b = s32(a), s32(b)
    return _CMP[op](a, b)


def sel(c, a, b): return np.where(c, a, b)
def b2v(a): return a.astype(U64)
def band(a, b): return a & b
def bor(a, b): return a | b
def bxor(a, b): return a != b
def bnot(a): return ~a
def selb(c, a, b): return np.where(c, a, b)
def zext(a): return a
def sext(a): return np.where(a >> 31 & 1, a | 0xFFFFFFFF00000000, a)
def lo(a): return a & M32
def hi(a): return (a >> 32) & M32
def join(lo_, hi_): return lo_ | (hi_ << 32)
def add64(a, b): return a + b
def mul64(a, b): return a * b
def shl64(a, n): return np.where(n < 64, a << (n & 63), U64(0))
def shr64(a, n): return np.where(n < 64, a >> (n & 63), U64(0))
def sar64(a, n): return (a.astype(I64) >> np.minimum(n, 63).astype(I64)).astype(U64)


OPERATIONS = ("add", "sub", "mul", "and_", "or_", "xor", "not_", "shl", "shr", "sar", "popc", "brev", "msb",
              "cmp", "sel", "b2v", "band", "bor", "bxor", "bnot", "selb", "zext", "sext", "lo", "hi", "join",
              "add64", "mul64", "shl64", "shr64", "sar64")


def _each(f, arrays, extra, on):
    """f(*lane's words, *extra) for the lanes ``on`` (0 elsewhere: a value only disabled lanes
    would use is never seen), each distinct input once."""
    out = np.zeros(len(on), U64)
    idx = np.flatnonzero(on)
    if not len(idx):
        return out
    cache: dict = {}
    vals = []
    for key in zip(*(a[idx].tolist() for a in arrays)):
        r = cache.get(key)
        if r is None:
            r = cache[key] = f(*key, *extra)
        vals.append(r)
    out[idx] = vals
    return out


class FloatWords:
    """floatops' and mufuops' words on arrays: the scalar function per enabled lane."""
    def fadd(self, a, b, fmt, rounding): return _each(floatops.fadd, (a, b), (fmt, rounding), self.en)
    def fmul(self, a, b, fmt, rounding): return _each(floatops.fmul, (a, b), (fmt, rounding), self.en)
    def ffma(self, a, b, c, fmt, rounding): return _each(floatops.ffma, (a, b, c), (fmt, rounding), self.en)
    def i2f(self, a, width, signed, fmt, rounding): return _each(floatops.i2f, (a,), (width, signed, fmt, rounding), self.en)
    def f2i(self, a, fmt, width, signed, rounding): return _each(floatops.f2i, (a,), (fmt, width, signed, rounding), self.en)
    def f2f(self, a, src, dst, rounding): return _each(floatops.f2f, (a,), (src, dst, rounding), self.en)
    def frnd(self, a, fmt, rounding): return _each(floatops.frnd, (a,), (fmt, rounding), self.en)
    def mufu(self, a, func): return _each(mufuops.mufu, (a,), (func,), self.en)


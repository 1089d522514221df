"""Integer arithmetic on Python ints: the values of :class:`translator.isa.ctx.Ctx`'s operations.

One pure module, two users: the CPU reference interpreter runs these functions, and the SPIR-V
emitter folds operations on constants with them, so both back ends agree on what every
operation computes. Words are unsigned (``V`` below 2^32, ``W`` below 2^64); shifts by any
amount are defined (logical ones by >= the width give 0, arithmetic ones the sign).
"""
from __future__ import annotations

M32, M64 = 0xFFFFFFFF, 0xFFFFFFFFFFFFFFFF

_COMPARE = {"eq": lambda a, b: a == b, "ne": lambda a, b: a != b, "lt": lambda a, b: a < b,
            "le": lambda a, b: a <= b, "gt": lambda a, b: a > b, "ge": lambda a, b: a >= b}


def s32(v: int) -> int:
    """A word read as a signed 32-bit integer."""
    v &= M32
    return v - (1 << 32) if v >> 31 else v


def s64(v: int) -> int:
    """A 64-bit word read as a signed integer."""
    v &= M64
    return v - (1 << 64) if v >> 63 else v


# 32-bit words
def add(a, b): return (a + b) & M32
def sub(a, b): return (a - b) & M32
def mul(a, b): return (a * b) & M32
def and_(a, b): return a & b
def or_(a, b): return a | b
def xor(a, b): return a ^ b
def not_(a): return ~a & M32
def shl(a, n): return (a << n) & M32 if n < 32 else 0
def shr(a, n): return a >> n if n < 32 else 0
def sar(a, n): return (s32(a) >> min(n, 31)) & M32
def popc(a): return bin(a).count("1")
def brev(a): return int(f"{a:032b}"[::-1], 2)


def msb(a, signed):
    """The index of the highest bit that differs from the sign (signed) or is set; M32 if none."""
    if signed and a >> 31:
        a = ~a & M32
    return a.bit_length() - 1 & M32 if a else M32


def cmp(op, a, b, signed):
    """Compare two words as signed or unsigned integers; op is one of ctx.CMP_OPS."""
    if signed:
        a, b = s32(a), s32(b)
    return _COMPARE[op](a, b)


def sel(c, a, b): return a if c else b
def b2v(a): return 1 if a else 0


# booleans
def band(a, b): return a and b
def bor(a, b): return a or b
def bxor(a, b): return a != b
def bnot(a): return not a
def selb(c, a, b): return a if c else b


# 64-bit words
def zext(a): return a
def sext(a): return s32(a) & M64
def lo(a): return a & M32
def hi(a): return (a >> 32) & M32
def join(lo_, hi_): return lo_ | hi_ << 32
def add64(a, b): return (a + b) & M64
def mul64(a, b): return (a * b) & M64
def shl64(a, n): return (a << n) & M64 if n < 64 else 0
def shr64(a, n): return a >> n if n < 64 else 0
def sar64(a, n): return (s64(a) >> min(n, 63)) & M64


# 64-bit words the soft float adds (emitter contexts and PyWords give them; SASS needs none)
def sub64(a, b): return (a - b) & M64
def and64(a, b): return a & b
def or64(a, b): return a | b
def cmp64(op, a, b): return cmp(op, a, b, False)
def sel64(c, a, b): return a if c else b


WIDE_HELPERS = ("sub64", "and64", "or64", "cmp64", "sel64")


# the Ctx operations this module gives a value to (the interpreter takes them all)
OPERATIONS = ("add", "sub", "mul", "and_", "or_", "xor", "not_", "shl", "shr", "sar", "popc", "brev", "msb",
              "cmp", "sel", "b2v", "band", "bor", "bxor", "bnot", "selb", "zext", "sext", "lo", "hi", "join",
              "add64", "mul64", "shl64", "shr64", "sar64")

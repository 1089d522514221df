"""MUFU's values for the interpreter: the chip's approximations, modelled.

The chip's multi-function unit approximates (RSQ, EX2, LG2, SIN, COS within 1-2 ulp; its
exact bits are not published). We give the correctly rounded binary32 value of the function
(computed in binary64 and rounded once, which is the correctly rounded value except in cases
far rarer than the chip's own error), with what the chip does around it:

- denormal inputs count as zeros of their sign, denormal results become +-0 (the unit works
  flushed: ptxas scales a denormal argument by 2^24 before ``MUFU.RSQ`` and squares after
  ``MUFU.EX2`` to keep them);
- SIN and COS take their argument in turns (ptxas multiplies by 1/2pi first:
  ``FMUL.RZ R0, R0, 0.15915494 ; MUFU.SIN R0, R0``); the argument is reduced exactly to a
  quarter turn and an offset of at most 1/8 turn;
- special values as PTX documents them (``rsqrt(-0) = -inf``, ``ex2(-inf) = +0``,
  ``lg2(+-0) = -inf``, ``sin(inf) = NaN``...), a NaN result being the canonical NaN;
- RCP64H and RSQ64H take the high word of a binary64 and give the high word of an
  approximation of 1/x and 1/sqrt(x) that ptxas then refines with DFMA: 1/m and 1/sqrt(m) of
  the significand in binary32, truncated to the 20 bits the high word holds. The emitter
  computes the same steps (:mod:`translator.emit.float.mufu`).

Not confirmed on the chip (SM86): the sign of exact zeros of SIN/COS at multiples of a half
turn, and the bits of every approximation.
"""
from __future__ import annotations

import math
import struct

from .floatops import F32, F64, f2f

SIGN, INF, NAN = 0x80000000, 0x7F800000, 0x7FFFFFFF
FUNCTIONS = ("rcp", "rsq", "sqrt", "ex2", "lg2", "sin", "cos", "tanh", "rcp64h", "rsq64h")


def _f32_of(value: float) -> int:
    """A Python float rounded to nearest binary32 (overflow to inf), its word."""
    return f2f(struct.unpack("<Q", struct.pack("<d", value))[0], F64, F32, "rn")


def _value(word: int) -> float:
    return struct.unpack("<f", struct.pack("<I", word))[0]


def flushed(word: int) -> int:
    """A denormal binary32 word as the zero of its sign."""
    return word & SIGN if word & INF == 0 else word


def _special(func: str, word: int) -> int | None:
    """The result for a zero, infinity or NaN argument (already flushed); None otherwise."""
    sign, mag = word & SIGN, word & NAN
    if mag > INF:
        return NAN
    if mag == 0:
        return {"rcp": sign | INF, "rsq": sign | INF, "sqrt": sign, "ex2": 0x3F800000, "lg2": SIGN | INF,
                "sin": sign, "cos": 0x3F800000}[func]
    if mag == INF:
        return {"rcp": sign, "rsq": NAN if sign else 0, "sqrt": NAN if sign else INF, "ex2": 0 if sign else INF,
                "lg2": NAN if sign else INF, "sin": NAN, "cos": NAN}[func]
    if sign and func in ("rsq", "sqrt", "lg2"):
        return NAN
    return None


def turns(func: str, a: float) -> float:
    """sin or cos of ``a`` turns: ``a = n/4 + r`` exactly (|r| <= 1/8), then the quarter's identity."""
    n = round(4 * a)
    r = a - n / 4
    theta = 2 * math.pi * r
    s, c = math.sin(theta), math.cos(theta)
    quarter = (n + (func == "cos")) % 4          # cos(x) = sin(x + a quarter turn)
    return (s, c, -s, -c)[quarter]


def tanh32(word: int) -> int:
    """MUFU.TANH: PTX ``tanh.approx.f32`` keeps subnormals (tanh(x) = x there), tanh(+-0) = +-0,
    tanh(+-inf) = +-1; the chip's bits are an approximation (PTX: relative error 2^-11)."""
    if word & NAN > INF:
        return NAN
    return _f32_of(math.tanh(_value(word)))


def mufu32(func: str, word: int) -> int:
    """MUFU.func on a binary32 word."""
    if func == "tanh":
        return tanh32(word)
    word = flushed(word)
    special = _special(func, word)
    if special is not None:
        return special
    a = _value(word)
    if func == "ex2":
        r = 2.0 ** a if a < 129 else math.inf
    elif func in ("sin", "cos"):
        r = turns(func, a)
    else:
        r = {"rcp": lambda: 1 / a, "rsq": lambda: 1 / math.sqrt(a), "sqrt": lambda: math.sqrt(a),
             "lg2": lambda: math.log2(a)}[func]()
    return flushed(_f32_of(r))


# ---------------------------------------------------------------- RCP64H, RSQ64H
def wide_parts(hi: int) -> tuple[int, int, int]:
    """(sign bit, unbiased exponent, the 20 fraction bits) of a binary64's high word."""
    return hi & SIGN, (hi >> 20 & 0x7FF) - 1023, hi & 0xFFFFF


def wide_special(func: str, hi: int) -> int | None:
    """The high word for a zero (denormals too), infinite or NaN binary64; None otherwise."""
    sign, field = hi & SIGN, hi >> 20 & 0x7FF
    if field == 0x7FF:
        if hi & 0xFFFFF:
            return NAN
        return sign if func == "rcp64h" else (NAN if sign else 0)
    if field == 0:
        return sign | 0x7FF00000
    if func == "rsq64h" and sign:
        return NAN
    return None


def wide_pack(sign: int, exponent: int, y_word: int) -> int:
    """The high word of ``y * 2^exponent`` for a binary32 ``y`` in (0.5, 1] (signed zero when
    the result falls below the normals)."""
    field = (y_word >> 23) - 127 + exponent + 1023
    if field <= 0:
        return sign
    return sign | field << 20 | (y_word >> 3 & 0xFFFFF)


def mufu64h(func: str, hi: int) -> int:
    """MUFU.RCP64H / MUFU.RSQ64H on the high word of a binary64."""
    special = wide_special(func, hi)
    if special is not None:
        return special
    sign, e, frac = wide_parts(hi)
    m = 1 + frac / 2 ** 20
    if func == "rcp64h":
        return wide_pack(sign, -e, _f32_of(1 / m))
    odd = e & 1
    return wide_pack(0, -(e - odd) // 2, _f32_of(1 / math.sqrt(m * 2 ** odd)))


# the Ctx operations this module gives a value to (the interpreter takes them all)
OPERATIONS = ("mufu",)


def mufu(a: int, func: str) -> int:
    """The Ctx word: MUFU.func of a 32-bit word."""
    return mufu64h(func, a) if func.endswith("64h") else mufu32(func, a)

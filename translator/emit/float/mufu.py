"""MUFU in SPIR-V: the emitter's side of the ``mufu`` word (values: :mod:`translator.values.mufuops`).

An approximation on the chip, so an approximation here: the device's own binary32 functions
(GLSL.std.450 ``InverseSqrt``, ``Sqrt``; ``FDiv`` for the reciprocal) and, where a device's own
is too coarse (lavapipe's ``Exp2`` and ``Log2`` are 3 ulp off, SwiftShader's ``Sin`` and ``Cos``
some 150), an exact argument reduction and a series in binary32 arithmetic (EX2, LG2, SIN,
COS), with the chip's behaviour around them written on the words, as the interpreter has it:
denormal arguments and results flushed, special values as the chip gives them, the canonical
NaN, SIN/COS in turns reduced exactly to a quarter turn plus at most 1/8 turn (so the series
only sees |x| <= pi/4).
Results may differ from the interpreter's in the last bits; cases compare them within a
tolerance (``compare = "f32-ulp:N"``).
"""
from __future__ import annotations

import math
import struct

from ...spirv.builder import GLSL
from ...values import mufuops
from ...values.mufuops import INF, NAN, SIGN

ONE = 0x3F800000
TWO_PI = struct.unpack("<I", struct.pack("<f", 6.283185307179586))[0]
BIG_TURNS = 0x4B800000          # 2^24: from here on every binary32 is a whole number of turns
_NATIVE = {"rsq": "InverseSqrt", "sqrt": "Sqrt"}
SQRT2_FRACTION = 0x3504F3       # the fraction bits of sqrt(2)
# sin(t) = t + t (t^2 (s1 + s2 t^2 + ...)), cos(t) = 1 + t^2 (c1 + c2 t^2 + ...): for |t| <= pi/4 the
# first term left out is under 2^-27 of the value
SIN_SERIES = tuple((-1) ** k / math.factorial(2 * k + 1) for k in range(1, 5))
COS_SERIES = tuple((-1) ** k / math.factorial(2 * k) for k in range(1, 6))
# tanh(x) = x + x^3 (c1 + c2 x^2 + ...): the odd Taylor coefficients from x^3 to x^13
TANH_SERIES = (-1 / 3, 2 / 15, -17 / 315, 62 / 2835, -1382 / 155925, 21844 / 6081075)


def _f32_word(value: float) -> int:
    return struct.unpack("<I", struct.pack("<f", value))[0]
# ln(m) = 2s (1 + s^2/3 + s^4/5 + ...), s = (m-1)/(m+1); the coefficients, times 2/ln(2)
LOG2_SERIES = tuple(struct.unpack("<I", struct.pack("<f", 2 / (2 * k + 1) / 0.6931471805599453))[0]
                    for k in range(6))
# 2^f = sum (f ln 2)^k / k!: for |f| <= 1/2 the terms past k = 7 stay below 0.1 ulp
EXP2_SERIES = tuple(struct.unpack("<I", struct.pack("<f", math.log(2) ** k / math.factorial(k)))[0]
                    for k in range(8))
EXP2_RANGE = 0x43200000         # 160: beyond it 2^a overflows or flushes to zero either way


class Mufu:
    """MUFU.func for the SPIR-V context ``x``."""

    def __init__(self, x):
        self.x, self.t = x, x.m.f32()

    # ------------------------------------------------------------ native binary32 values
    def _f(self, word):
        return self.x.f.op("Bitcast", self.t, word)

    def _w(self, value):
        return self.x.f.op("Bitcast", self.x.u32, value)

    def _arith(self, opcode, a, b):
        """An exactly rounded operation the compiler must not fuse with another."""
        r = self.x.f.op(opcode, self.t, a, b)
        self.x.m.decorate(r, "NoContraction")
        return r

    def _glsl(self, name, a):
        return self.x.f.op("ExtInst", self.t, self.x.m.glsl(), GLSL[name], a)

    def _k(self, word):
        return self._f(self.x.k32(word))

    # ------------------------------------------------------------ words
    def flushed(self, w):
        x = self.x
        return x.sel(x.cmp("eq", x.and_(w, x.k32(INF)), x.k32(0), False), x.and_(w, x.k32(SIGN)), w)

    def _is_nan(self, w):
        x = self.x
        return x.cmp("gt", x.and_(w, x.k32(NAN)), x.k32(INF), False)

    def _specials(self, func, w, r):
        """``r`` with the results for zeros, infinities, NaNs and negative arguments (as
        :func:`translator.values.mufuops._special`)."""
        x = self.x
        sign = x.and_(w, x.k32(SIGN))
        mag = x.and_(w, x.k32(NAN))
        negative = x.cmp("ne", sign, x.k32(0), False)
        at_zero = {"rcp": x.or_(sign, x.k32(INF)), "rsq": x.or_(sign, x.k32(INF)), "sqrt": sign, "ex2": x.k32(ONE),
                   "lg2": x.k32(SIGN | INF), "sin": sign, "cos": x.k32(ONE)}[func]
        neg_nan = x.sel(negative, x.k32(NAN), x.k32(0))
        at_inf = {"rcp": sign, "rsq": neg_nan, "sqrt": x.sel(negative, x.k32(NAN), x.k32(INF)),
                  "ex2": x.sel(negative, x.k32(0), x.k32(INF)), "lg2": x.sel(negative, x.k32(NAN), x.k32(INF)),
                  "sin": x.k32(NAN), "cos": x.k32(NAN)}[func]
        if func in ("rsq", "sqrt", "lg2"):
            r = x.sel(negative, x.k32(NAN), r)
        r = x.sel(x.cmp("eq", mag, x.k32(INF), False), at_inf, r)
        r = x.sel(x.cmp("eq", mag, x.k32(0), False), at_zero, r)
        return x.sel(self._is_nan(w), x.k32(NAN), r)

    def _turns(self, func, w):
        """sin or cos of ``w`` turns: n = roundEven(4a), r = a - n/4 (both exact), then the
        quarter's identity on sin and cos of 2 pi r."""
        x = self.x
        whole = x.cmp("ge", x.and_(w, x.k32(NAN)), x.k32(BIG_TURNS), False)
        a = self._f(x.sel(whole, x.k32(0), w))
        n = self._glsl("RoundEven", self._arith("FMul", a, self._k(0x40800000)))
        r = self._arith("FSub", a, self._arith("FMul", n, self._k(0x3E800000)))
        theta = self._arith("FMul", r, self._k(TWO_PI))
        s, c = self._sin_cos(theta)
        quarter = x.f.op("ConvertFToS", x.u32, n)
        if func == "cos":
            quarter = x.add(quarter, x.k32(1))
        quarter = x.and_(quarter, x.k32(3))
        pick = [s, c, x.xor(s, x.k32(SIGN)), x.xor(c, x.k32(SIGN))]
        r = pick[3]
        for k in (2, 1, 0):
            r = x.sel(x.cmp("eq", quarter, x.k32(k), False), pick[k], r)
        return r

    def _sin_cos(self, theta):
        """The words of sin and cos of |theta| <= pi/4 by their Taylor series (SIN_SERIES,
        COS_SERIES) in Horner form: a device's own Sin and Cos need only be within 2^-11 of
        the value (Vulkan's precision; SwiftShader's are some 150 ulp off)."""
        t2 = self._arith("FMul", theta, theta)

        def horner(coefficients):
            p = self._k(_f32_word(coefficients[-1]))
            for c in reversed(coefficients[:-1]):
                p = self._arith("FAdd", self._arith("FMul", p, t2), self._k(_f32_word(c)))
            return self._arith("FMul", p, t2)
        sin = self._arith("FAdd", theta, self._arith("FMul", theta, horner(SIN_SERIES)))
        cos = self._arith("FAdd", self._k(ONE), horner(COS_SERIES))
        return self._w(sin), self._w(cos)

    def _log2(self, w):
        """log2 of a positive normal word: its exponent plus log2 of its significand taken to
        [sqrt(1/2), sqrt(2)) by a series in s = (m-1)/(m+1) (the device's Log2 loses most
        bits just below 1, where it splits the argument into [1, 2) and an exponent of -1)."""
        x = self.x
        frac = x.and_(w, x.k32(0x7FFFFF))
        high = x.cmp("ge", frac, x.k32(SQRT2_FRACTION), False)
        m = self._f(x.or_(frac, x.sel(high, x.k32(0x3F000000), x.k32(ONE))))
        e = x.sub(x.shr(w, x.k32(23)), x.sel(high, x.k32(126), x.k32(127)))
        s = x.f.op("FDiv", self.t, self._arith("FSub", m, self._k(ONE)), self._arith("FAdd", m, self._k(ONE)))
        s2 = self._arith("FMul", s, s)
        p = self._k(LOG2_SERIES[-1])
        for c in reversed(LOG2_SERIES[:-1]):
            p = self._arith("FAdd", self._arith("FMul", p, s2), self._k(c))
        p = self._arith("FMul", p, s)
        return self._w(self._arith("FAdd", x.f.op("ConvertSToF", self.t, e), p))

    def _exp2(self, w):
        """2^a for a finite word: a = n + f exactly (n = roundEven(a), |f| <= 1/2, a clamped to
        +-160 first), 2^f by EXP2_SERIES in Horner form, then times 2^n in two exact steps
        (so an n past the normal exponents still overflows or underflows as it should)."""
        x = self.x
        mag = x.and_(w, x.k32(NAN))
        edge = x.or_(x.and_(w, x.k32(SIGN)), x.k32(EXP2_RANGE))
        clamped = x.sel(x.cmp("gt", mag, x.k32(EXP2_RANGE), False), edge, w)
        a = self._f(clamped)
        n = self._glsl("RoundEven", a)
        f = self._arith("FSub", a, n)
        p = self._k(EXP2_SERIES[-1])
        for c in reversed(EXP2_SERIES[:-1]):
            p = self._arith("FAdd", self._arith("FMul", p, f), self._k(c))
        whole = x.f.op("ConvertFToS", x.u32, n)
        half = x.sar(whole, x.k32(1))
        r = p
        for part in (half, x.sub(whole, half)):
            r = self._arith("FMul", r, self._f(x.shl(x.add(part, x.k32(127)), x.k32(23))))
        return self._w(r)

    def tanh(self, a):
        """MUFU.TANH (mufuops.tanh32), without the device's Tanh (lavapipe's loses bits to
        cancellation below 1): x below 2^-12 (tanh(x) rounds to x there, subnormals kept); the
        odd Taylor series to x^13 below 0.55 (its first term left out is under 2^-22 of the
        value); 1 - 2 / (e^2|x| + 1) with x's sign up to 9; +-1 above; NaN canonical."""
        x = self.x
        mag = x.and_(a, x.k32(NAN))
        sign = x.and_(a, x.k32(SIGN))
        v = self._f(a)
        y = self._arith("FMul", v, v)
        p = self._k(_f32_word(TANH_SERIES[-1]))
        for c in reversed(TANH_SERIES[:-1]):
            p = self._arith("FAdd", self._arith("FMul", p, y), self._k(_f32_word(c)))
        series = self._w(self._arith("FAdd", v, self._arith("FMul", self._arith("FMul", v, y), p)))
        e = self._glsl("Exp", self._arith("FAdd", self._f(mag), self._f(mag)))
        far = self._arith("FSub", self._k(ONE), self._arith("FDiv", self._k(0x40000000), self._arith("FAdd", e, self._k(ONE))))
        far = x.or_(self._w(far), sign)
        r = x.sel(x.cmp("lt", mag, x.k32(0x3F0CCCCD), False), series, far)                  # 0.55
        r = x.sel(x.cmp("lt", mag, x.k32(0x39800000), False), a, r)                       # 2^-12
        r = x.sel(x.cmp("ge", mag, x.k32(0x41100000), False), x.or_(sign, x.k32(ONE)), r)  # 9
        return x.sel(self._is_nan(a), x.k32(NAN), r)

    def value32(self, func, a):
        """MUFU.func on a binary32 word."""
        x = self.x
        if func == "tanh":
            return self.tanh(a)
        w = self.flushed(a)
        if func in ("sin", "cos"):
            r = self._turns(func, w)
        elif func == "lg2":
            r = self._log2(w)
        elif func == "ex2":
            r = self._exp2(w)
        elif func == "rcp":
            r = self._w(self._arith("FDiv", self._k(ONE), self._f(w)))
        else:
            r = self._w(self._glsl(_NATIVE[func], self._f(w)))
        r = x.sel(self._is_nan(r), x.k32(NAN), self.flushed(r))
        return self._specials(func, w, r)

    # ------------------------------------------------------------ RCP64H, RSQ64H
    def value64h(self, func, hi):
        """The high word of 1/x or 1/sqrt(x) for the binary64 whose high word is ``hi``:
        1/m or 1/sqrt(m) of its significand in binary32, truncated to 20 bits."""
        x = self.x
        sign, field, frac = x.and_(hi, x.k32(SIGN)), x.and_(x.shr(hi, x.k32(20)), x.k32(0x7FF)), \
            x.and_(hi, x.k32(0xFFFFF))
        e = x.sub(field, x.k32(1023))
        m_frac = x.shl(frac, x.k32(3))
        if func == "rcp64h":
            y = self._arith("FDiv", self._k(ONE), self._f(x.or_(m_frac, x.k32(ONE))))
            exponent, out_sign = x.sub(x.k32(0), e), sign
        else:
            odd = x.and_(e, x.k32(1))
            m = x.or_(m_frac, x.shl(x.add(odd, x.k32(127)), x.k32(23)))
            y = self._glsl("InverseSqrt", self._f(m))
            exponent, out_sign = x.sub(x.k32(0), x.sar(x.sub(e, odd), x.k32(1))), x.k32(0)
        y = self._w(y)
        out = x.add(x.sub(x.shr(y, x.k32(23)), x.k32(127)), x.add(exponent, x.k32(1023)))
        packed = x.or_(out_sign, x.or_(x.shl(out, x.k32(20)), x.and_(x.shr(y, x.k32(3)), x.k32(0xFFFFF))))
        r = x.sel(x.cmp("le", out, x.k32(0), True), out_sign, packed)
        # zeros and denormals, infinities, NaN, negative square roots
        at_inf = sign if func == "rcp64h" else x.sel(x.cmp("ne", sign, x.k32(0), False), x.k32(NAN), x.k32(0))
        if func == "rsq64h":
            r = x.sel(x.cmp("ne", sign, x.k32(0), False), x.k32(NAN), r)
        r = x.sel(x.cmp("eq", field, x.k32(0x7FF), False),
                  x.sel(x.cmp("ne", frac, x.k32(0), False), x.k32(NAN), at_inf), r)
        return x.sel(x.cmp("eq", field, x.k32(0), False), x.or_(sign, x.k32(0x7FF00000)), r)

    def value(self, a, func):
        known = self.x.known.get(a)
        if known is not None:
            return self.x.k32(mufuops.mufu(known, func))
        return self.value64h(func, a) if func.endswith("64h") else self.value32(func, a)

"""Float arithmetic in integer SPIR-V: the emitter's side of the float words of :class:`translator.isa.ctx.Ctx`.

Vulkan does not promise what SM86 gives: ``Fma`` (GLSL.std.450) need not be fused, the
rounding mode of an addition cannot be chosen per instruction, denormals may be flushed
unless the device offers ``DenormPreserve``, and NaN payloads are unspecified. So every float
word is computed here on integer words (a soft float): bit for bit the same result on every
device, whatever its float controls. The algorithm is written once against the integer words
of a context (``add``, ``shl64``, ``cmp``, ``sel``...) plus a few 64-bit ones (``sub64``, ``cmp64``...:
``intops.WIDE_HELPERS``), on 64-bit values or on pairs of words (:mod:`translator.emit.pairs`), so it
runs on SPIR-V values (folding constants) and, in the tests, on Python integers
(:class:`PyWords`), where millions of inputs are cheap to check against :mod:`translator.values.floatops`.

The one rounding step (:meth:`SoftFloat.round_pack`) takes an exact or *jammed* significand:
``m * 2^e`` with ``m < 2^62``, where a bit shifted out of an operand during alignment is
ORed into bit 0 (the sticky bit), far enough below the last place kept that rounding sees
the same value as the exact one.
"""
from __future__ import annotations

from ...values import intops
from ...values.floatops import Fmt, fmt_of
from .wide import Wide

M64 = intops.M64
TOP = 60        # where alignment puts an operand's leading bit: 3 bits below it stay free for a carry


class _Decoded:
    """A float word taken apart: sign (bool), significand (64-bit), exponent (signed word) of
    its value ``m * 2^e``, and whether it is NaN, infinite or zero."""
    __slots__ = ("sign", "m", "e", "nan", "inf", "zero", "bits")


class SoftFloat:
    """The float words on the integer words of context ``x`` (see the module's docstring)."""

    def __init__(self, x):
        self.x = x

    # ------------------------------------------------------------ 64-bit words beyond the Ctx's
    # (intops.WIDE_HELPERS: the emitter's contexts give them, on 64-bit values or on pairs)
    def sub64(self, a, b): return self.x.sub64(a, b)
    def and64(self, a, b): return self.x.and64(a, b)
    def or64(self, a, b): return self.x.or64(a, b)
    def cmp64(self, op, a, b): return self.x.cmp64(op, a, b)
    def sel64(self, c, a, b): return self.x.sel64(c, a, b)

    def msb64(self, a):
        """The index of the highest set bit (0xffffffff for 0)."""
        x = self.x
        h = x.hi(a)
        return x.sel(x.cmp("ne", h, x.k32(0), False), x.add(x.msb(h, False), x.k32(32)), x.msb(x.lo(a), False))

    def bit64(self, flag):
        """A boolean as 0 or 1 in a 64-bit word."""
        x = self.x
        return x.zext(x.b2v(flag))

    # ------------------------------------------------------------ words in and out
    def widen(self, a, fmt: Fmt):
        return a if fmt.width == 64 else self.x.zext(a)

    def narrow(self, w, fmt: Fmt):
        return w if fmt.width == 64 else self.x.lo(w)

    def decode(self, bits, fmt: Fmt) -> _Decoded:
        x, d = self.x, _Decoded()
        d.bits = bits
        mag = self.and64(bits, x.k64(fmt.sign_bit - 1))
        d.sign = self.cmp64("ge", bits, x.k64(fmt.sign_bit))
        expf = x.and_(x.lo(x.shr64(bits, x.k32(fmt.mbits))), x.k32((1 << fmt.ebits) - 1))
        frac = self.and64(bits, x.k64((1 << fmt.mbits) - 1))
        denormal = x.cmp("eq", expf, x.k32(0), False)
        d.m = self.sel64(denormal, frac, self.or64(frac, x.k64(1 << fmt.mbits)))
        d.e = x.sub(x.sel(denormal, x.k32(1), expf), x.k32(fmt.bias + fmt.mbits))
        d.nan = self.cmp64("gt", mag, x.k64(fmt.inf))
        d.inf = self.cmp64("eq", mag, x.k64(fmt.inf))
        d.zero = self.cmp64("eq", mag, x.k64(0))
        return d

    def signed(self, sign, magnitude_bits, fmt: Fmt):
        """A magnitude's bits with the sign bit ``sign`` (a boolean)."""
        return self.or64(magnitude_bits, self.sel64(sign, self.x.k64(fmt.sign_bit), self.x.k64(0)))

    # ------------------------------------------------------------ rounding
    def _up(self, rounding, sign, q, rem, half):
        """Whether the kept part ``q`` goes one up, given what was dropped (``rem`` of ``2 * half``)."""
        x = self.x
        inexact = self.cmp64("ne", rem, x.k64(0))
        if rounding == "rz":
            return x.kb(False)
        if rounding == "rp":
            return x.band(inexact, x.bnot(sign))
        if rounding == "rm":
            return x.band(inexact, sign)
        tie = x.band(x.band(self.cmp64("eq", rem, half), inexact), self.cmp64("ne", self.and64(q, x.k64(1)), x.k64(0)))
        return x.bor(self.cmp64("gt", rem, half), tie)

    def shift_round(self, sign, m, drop, rounding):
        """``m >> drop`` (0 <= drop <= 64) rounded as told, for a value of sign ``sign``."""
        x = self.x
        q = x.shr64(m, drop)
        rem = self.sub64(m, x.shl64(q, drop))
        half = x.shl64(x.k64(1), x.sub(drop, x.k32(1)))      # drop 0: a shift past 63 gives 0
        return x.add64(q, self.bit64(self._up(rounding, sign, q, rem, half)))

    def round_pack(self, sign, m, e, fmt: Fmt, rounding: str):
        """The bits of ``(-1)^sign * m * 2^e`` in ``fmt``, rounded once (m == 0: a signed zero)."""
        x = self.x
        top = x.add(self.msb64(m), e)
        top = x.sel(x.cmp("lt", top, x.k32(fmt.emin & 0xFFFFFFFF), True), x.k32(fmt.emin & 0xFFFFFFFF), top)
        drop = x.sub(x.sub(top, x.k32(fmt.mbits)), e)
        left = x.cmp("lt", drop, x.k32(0), True)
        right = x.sel(left, x.k32(0), x.sel(x.cmp("gt", drop, x.k32(64), False), x.k32(64), drop))
        q = self.sel64(left, x.shl64(m, x.sub(x.k32(0), drop)), self.shift_round(sign, m, right, rounding))
        field = x.zext(x.sub(x.add(top, x.k32(fmt.bias)), x.k32(1)))
        bits = x.add64(x.shl64(field, x.k32(fmt.mbits)), q)
        biggest = {"rn": fmt.inf, "rz": fmt.inf - 1}.get(rounding)
        if biggest is None:     # toward +inf: +inf and -max; toward -inf: the other way round
            towards = (rounding == "rp")
            biggest = self.sel64(sign, x.k64(fmt.inf - towards), x.k64(fmt.inf - 1 + towards))
        else:
            biggest = x.k64(biggest)
        bits = self.sel64(self.cmp64("ge", bits, x.k64(fmt.inf)), biggest, bits)
        bits = self.sel64(self.cmp64("eq", m, x.k64(0)), x.k64(0), bits)
        return self.signed(sign, bits, fmt)

    # ------------------------------------------------------------ arithmetic
    def _normalized(self, m, e):
        """``m`` shifted so its leading bit is bit TOP, and the exponent to match; a zero ``m``
        gets an exponent far below any other, so alignment puts it last."""
        x = self.x
        up = x.sub(x.k32(TOP), self.msb64(m))
        zero = self.cmp64("eq", m, x.k64(0))
        return x.shl64(m, up), x.sel(zero, x.k32(-4096 & 0xFFFFFFFF), x.sub(e, up))

    def add_terms(self, sa, ma, ea, sb, mb, eb, fmt: Fmt, rounding: str):
        """``(-1)^sa ma 2^ea + (-1)^sb mb 2^eb`` (significands below 2^(TOP+1)) rounded once."""
        x = self.x
        ma, ea = self._normalized(ma, ea)
        mb, eb = self._normalized(mb, eb)
        swap = x.cmp("lt", ea, eb, True)
        mx, ex, sx = self.sel64(swap, mb, ma), x.sel(swap, eb, ea), x.selb(swap, sb, sa)
        my, ey, sy = self.sel64(swap, ma, mb), x.sel(swap, ea, eb), x.selb(swap, sa, sb)
        d = x.sub(ex, ey)
        lost = self.and64(my, self.sub64(x.shl64(x.k64(1), d), x.k64(1)))
        y = self.or64(x.shr64(my, d), self.bit64(self.cmp64("ne", lost, x.k64(0))))
        same = x.bnot(x.bxor(sx, sy))
        x_bigger = self.cmp64("ge", mx, y)
        m = self.sel64(same, x.add64(mx, y), self.sel64(x_bigger, self.sub64(mx, y), self.sub64(y, mx)))
        sign = x.selb(same, sx, x.selb(x_bigger, sx, sy))
        # an exact zero: -0 only from -0 + -0, or when rounding toward -inf
        zero_sign = x.bor(sa, sb) if rounding == "rm" else x.band(sa, sb)
        sign = x.selb(self.cmp64("eq", m, x.k64(0)), zero_sign, sign)
        return self.round_pack(sign, m, ex, fmt, rounding)

    def _special(self, result, fmt, nan, inf, inf_sign):
        x = self.x
        result = self.sel64(inf, self.signed(inf_sign, x.k64(fmt.inf), fmt), result)
        return self.sel64(nan, x.k64(fmt.nan), result)

    def fadd(self, a, b, fmt, rounding):
        fmt = fmt_of(fmt)
        x, (p, q) = self.x, (self.decode(self.widen(v, fmt), fmt) for v in (a, b))
        r = self.add_terms(p.sign, p.m, p.e, q.sign, q.m, q.e, fmt, rounding)
        nan = x.bor(x.bor(p.nan, q.nan), x.band(x.band(p.inf, q.inf), x.bxor(p.sign, q.sign)))
        return self.narrow(self._special(r, fmt, nan, x.bor(p.inf, q.inf), x.selb(p.inf, p.sign, q.sign)), fmt)

    def _product(self, p, q, fmt):
        """(sign, significand, exponent, invalid) of p * q; binary64 significands come jammed
        from their 106-bit product (:mod:`translator.emit.float.wide`)."""
        x = self.x
        invalid = x.bor(x.band(p.inf, q.zero), x.band(q.inf, p.zero))
        e = x.add(p.e, q.e)
        if fmt.width == 64:
            m, e = Wide(self).jam(*Wide(self).mul(p.m, q.m), e)
        else:
            m = x.mul64(p.m, q.m)
        return x.bxor(p.sign, q.sign), m, e, invalid

    def fmul(self, a, b, fmt, rounding):
        fmt = fmt_of(fmt)
        x, (p, q) = self.x, (self.decode(self.widen(v, fmt), fmt) for v in (a, b))
        sign, m, e, invalid = self._product(p, q, fmt)
        r = self.round_pack(sign, m, e, fmt, rounding)
        return self.narrow(self._special(r, fmt, x.bor(x.bor(p.nan, q.nan), invalid), x.bor(p.inf, q.inf), sign),
                           fmt)

    def ffma(self, a, b, c, fmt, rounding):
        fmt = fmt_of(fmt)
        x, (p, q, s) = self.x, (self.decode(self.widen(v, fmt), fmt) for v in (a, b, c))
        invalid = x.bor(x.band(p.inf, q.zero), x.band(q.inf, p.zero))
        sign = x.bxor(p.sign, q.sign)
        if fmt.width == 64:     # every bit of the 106-bit product takes part in the sum
            wide = Wide(self)
            h, l = wide.mul(p.m, q.m)
            rs, m, e = wide.sum(sign, h, l, x.add(p.e, q.e), s.sign, x.k64(0), s.m, s.e, rounding)
            r = self.round_pack(rs, m, e, fmt, rounding)
        else:
            r = self.add_terms(sign, x.mul64(p.m, q.m), x.add(p.e, q.e), s.sign, s.m, s.e, fmt, rounding)
        product_inf = x.bor(p.inf, q.inf)
        nan = x.bor(x.bor(x.bor(p.nan, q.nan), s.nan), invalid)
        nan = x.bor(nan, x.band(x.band(product_inf, s.inf), x.bxor(sign, s.sign)))
        return self.narrow(self._special(r, fmt, nan, x.bor(product_inf, s.inf), x.selb(product_inf, sign, s.sign)),
                           fmt)

    # ------------------------------------------------------------ conversions
    def i2f(self, a, width, signed, fmt, rounding):
        fmt, x = fmt_of(fmt), self.x
        v = a if width == 64 else self.and64(x.zext(a), x.k64((1 << width) - 1))
        negative = self.cmp64("ge", v, x.k64(1 << width - 1)) if signed else x.kb(False)
        extended = v if width == 64 else self.or64(v, x.k64(M64 ^ ((1 << width) - 1)))
        mag = self.sel64(negative, self.sub64(x.k64(0), extended), v)
        return self.narrow(self.round_pack(negative, mag, x.k32(0), fmt, rounding), fmt)

    def _to_int(self, d, rounding):
        """A number's integral value, rounded as told: (magnitude, whether infinite or >= 2^64)."""
        x = self.x
        left = x.cmp("ge", d.e, x.k32(0), True)
        right = x.sub(x.k32(0), d.e)
        right = x.sel(x.cmp("gt", right, x.k32(64), True), x.k32(64), right)
        q = self.sel64(left, x.shl64(d.m, x.sel(left, d.e, x.k32(0))),
                       self.shift_round(d.sign, d.m, x.sel(left, x.k32(0), right), rounding))
        huge = x.band(x.bnot(d.zero), x.cmp("gt", x.add(self.msb64(d.m), d.e), x.k32(63), True))
        return q, x.bor(huge, d.inf)

    def f2i(self, a, fmt, width, signed, rounding):
        fmt, x = fmt_of(fmt), self.x
        d = self.decode(self.widen(a, fmt), fmt)
        q, huge = self._to_int(d, rounding)
        q = self.sel64(huge, x.k64(M64), q)                  # infinities come here too
        if signed:
            limit = self.sel64(d.sign, x.k64(1 << width - 1), x.k64((1 << width - 1) - 1))
            q = self.sel64(self.cmp64("gt", q, limit), limit, q)
            v = self.sel64(d.sign, self.sub64(x.k64(0), q), q)
        else:
            limit = x.k64((1 << width) - 1)
            v = self.sel64(d.sign, x.k64(0), self.sel64(self.cmp64("gt", q, limit), limit, q))
        v = self.and64(self.sel64(d.nan, x.k64(0), v), x.k64((1 << width) - 1))
        return v if width == 64 else x.lo(v)

    def f2f(self, a, src, dst, rounding):
        src, dst = fmt_of(src), fmt_of(dst)
        d = self.decode(self.widen(a, src), src)
        r = self.round_pack(d.sign, d.m, d.e, dst, rounding)
        return self.narrow(self._special(r, dst, d.nan, d.inf, d.sign), dst)

    def frnd(self, a, fmt, rounding):
        fmt, x = fmt_of(fmt), self.x
        d = self.decode(self.widen(a, fmt), fmt)
        q, _ = self._to_int(d, rounding)
        r = self.round_pack(d.sign, q, x.k32(0), fmt, rounding)
        integral = x.bor(x.cmp("ge", d.e, x.k32(0), True), d.inf)
        r = self.sel64(d.nan, x.k64(fmt.nan), self.sel64(integral, d.bits, r))
        return self.narrow(r, fmt)


class _Identity:
    """Every Python integer is a known constant (the ``known`` map of :class:`PyWords`)."""
    def get(self, v, default=None): return v


class PyWords:
    """The integer words on Python integers, for running :class:`SoftFloat` off the GPU."""
    known = _Identity()
    inst = None

    def k32(self, v): return v & intops.M32
    def k64(self, v): return v & M64
    def kb(self, v): return bool(v)


for _name in intops.OPERATIONS + intops.WIDE_HELPERS:
    setattr(PyWords, _name, staticmethod(getattr(intops, _name)))
del _name

"""Float arithmetic on bit patterns, exact: the values of :class:`translator.isa.ctx.Ctx`'s float words.

The CPU reference interpreter runs these functions. Every finite float is a dyadic number
``m * 2^e``; sums and products of such numbers are computed exactly on Python integers and
rounded once, to the format and rounding mode asked (``"rn"`` to nearest even, ``"rz"``,
``"rm"`` toward -inf, ``"rp"`` toward +inf). So FFMA is fused by construction and every
result IEEE 754 defines is its bit pattern. The emitter computes the same values with integer
SPIR-V (:mod:`translator.emit.float.soft`), written independently; tests compare the two.

What the chip adds to IEEE 754 (SM86, see shared/design/sm86-semantics.md):
- a NaN result is the canonical quiet NaN of its format (``0x7fffffff`` for binary32), whatever
  the inputs' payloads;
- denormals are kept; flushing (.FTZ) is the semantics' business, on the words, since it
  only depends on the exponent field.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Fmt:
    """A binary interchange format: exponent and fraction widths."""
    name: str
    ebits: int
    mbits: int

    @property
    def width(self) -> int: return 1 + self.ebits + self.mbits
    @property
    def bias(self) -> int: return (1 << self.ebits - 1) - 1
    @property
    def emin(self) -> int: return 1 - self.bias              # exponent of the smallest normal
    @property
    def inf(self) -> int: return ((1 << self.ebits) - 1) << self.mbits
    @property
    def sign_bit(self) -> int: return 1 << self.width - 1
    @property
    def nan(self) -> int: return self.sign_bit - 1             # the chip's canonical NaN
    @property
    def mask(self) -> int: return (1 << self.width) - 1


F16, BF16, F32, F64 = Fmt("f16", 5, 10), Fmt("bf16", 8, 7), Fmt("f32", 8, 23), Fmt("f64", 11, 52)
FORMATS = {f.name: f for f in (F16, BF16, F32, F64)}
ROUNDINGS = ("rn", "rz", "rm", "rp")


class Num:
    """A decoded float: ``sign`` (0 or 1) and the kind ``"num"`` (value ``m * 2^e``, ``m`` >= 0),
    ``"inf"`` or ``"nan"``."""
    __slots__ = ("sign", "kind", "m", "e")

    def __init__(self, sign, kind, m=0, e=0):
        self.sign, self.kind, self.m, self.e = sign, kind, m, e

    @property
    def zero(self) -> bool:
        return self.kind == "num" and self.m == 0


def decode(bits: int, fmt: Fmt) -> Num:
    sign = bits >> fmt.width - 1 & 1
    exp = bits >> fmt.mbits & (1 << fmt.ebits) - 1
    frac = bits & (1 << fmt.mbits) - 1
    if exp == (1 << fmt.ebits) - 1:
        return Num(sign, "nan" if frac else "inf")
    if exp == 0:
        return Num(sign, "num", frac, fmt.emin - fmt.mbits)
    return Num(sign, "num", frac | 1 << fmt.mbits, exp - fmt.bias - fmt.mbits)


def round_bits(sign: int, m: int, e: int, fmt: Fmt, rounding: str) -> int:
    """The value ``(-1)^sign * m * 2^e`` (m >= 0) in ``fmt``, rounded once as told."""
    if m == 0:
        return sign << fmt.width - 1
    top = max(m.bit_length() - 1 + e, fmt.emin)       # the result's exponent (emin: denormal)
    drop = top - fmt.mbits - e                         # bits of m below the result's last place
    if drop <= 0:
        q = m << -drop
    else:
        q, rem = m >> drop, m & ((1 << drop) - 1)
        half = 1 << drop - 1
        q += _round_up(rounding, sign, rem != 0, rem > half or (rem == half and q & 1))
    bits = (top + fmt.bias - 1 << fmt.mbits) + q       # a carry out of q steps the exponent
    if bits >= fmt.inf:
        bits = fmt.inf if _round_up(rounding, sign, True, True) else fmt.inf - 1
    return sign << fmt.width - 1 | bits


def _round_up(rounding: str, sign: int, inexact: bool, nearest_up: bool) -> bool:
    """Whether the magnitude goes to the next value: to nearest, toward +-inf, or never (rz)."""
    if rounding == "rn":
        return nearest_up
    if rounding == "rz":
        return False
    return inexact and (sign == 1) == (rounding == "rm")


def to_int(n: Num, rounding: str) -> int:
    """A finite number rounded to an integer (signed), as told."""
    if n.e >= 0:
        v = n.m << n.e
    else:
        d = -n.e
        v, rem = n.m >> d, n.m & ((1 << d) - 1)
        half = 1 << d - 1
        v += _round_up(rounding, n.sign, rem != 0, rem > half or (rem == half and v & 1))
    return -v if n.sign else v


# ---------------------------------------------------------------- arithmetic
def _sum(sa, ma, ea, sb, mb, eb, fmt, rounding):
    e = min(ea, eb)
    total = (-1) ** sa * (ma << ea - e) + (-1) ** sb * (mb << eb - e)
    if total == 0:           # exact zero: IEEE's sign rule (-0 only from -0 + -0, or rm)
        sign = (sa | sb) if rounding == "rm" else (sa & sb)
        return sign << fmt.width - 1
    return round_bits(int(total < 0), abs(total), e, fmt, rounding)


def fmt_of(fmt: "Fmt | str") -> Fmt:
    """A format given by name (as the Ctx words take it) or as itself."""
    return FORMATS[fmt] if isinstance(fmt, str) else fmt


def fadd(a: int, b: int, fmt: Fmt = F32, rounding: str = "rn") -> int:
    fmt = fmt_of(fmt)
    x, y = decode(a, fmt), decode(b, fmt)
    if "nan" in (x.kind, y.kind) or (x.kind == y.kind == "inf" and x.sign != y.sign):
        return fmt.nan
    for n in (x, y):
        if n.kind == "inf":
            return n.sign << fmt.width - 1 | fmt.inf
    return _sum(x.sign, x.m, x.e, y.sign, y.m, y.e, fmt, rounding)


def fmul(a: int, b: int, fmt: Fmt = F32, rounding: str = "rn") -> int:
    fmt = fmt_of(fmt)
    x, y = decode(a, fmt), decode(b, fmt)
    sign = x.sign ^ y.sign
    if "nan" in (x.kind, y.kind) or (x.kind == "inf" and y.zero) or (y.kind == "inf" and x.zero):
        return fmt.nan
    if "inf" in (x.kind, y.kind):
        return sign << fmt.width - 1 | fmt.inf
    return round_bits(sign, x.m * y.m, x.e + y.e, fmt, rounding)


def ffma(a: int, b: int, c: int, fmt: Fmt = F32, rounding: str = "rn") -> int:
    """a * b + c with one rounding."""
    fmt = fmt_of(fmt)
    x, y, z = decode(a, fmt), decode(b, fmt), decode(c, fmt)
    sign = x.sign ^ y.sign
    if "nan" in (x.kind, y.kind, z.kind) or (x.kind == "inf" and y.zero) or (y.kind == "inf" and x.zero):
        return fmt.nan
    if "inf" in (x.kind, y.kind):
        return fmt.nan if z.kind == "inf" and z.sign != sign else sign << fmt.width - 1 | fmt.inf
    if z.kind == "inf":
        return c
    return _sum(sign, x.m * y.m, x.e + y.e, z.sign, z.m, z.e, fmt, rounding)


# ---------------------------------------------------------------- conversions
def i2f(a: int, width: int, signed: bool, fmt: Fmt = F32, rounding: str = "rn") -> int:
    """The low ``width`` bits of ``a`` as an integer, in ``fmt``."""
    fmt = fmt_of(fmt)
    v = a & (1 << width) - 1
    if signed and v >> width - 1:
        v -= 1 << width
    return round_bits(int(v < 0), abs(v), 0, fmt, rounding)


def f2i(a: int, fmt: Fmt, width: int, signed: bool, rounding: str = "rn") -> int:
    """A float to an integer of ``width`` bits, rounded as told and saturating; NaN gives 0."""
    n = decode(a, fmt_of(fmt))
    lo, hi = (-(1 << width - 1), (1 << width - 1) - 1) if signed else (0, (1 << width) - 1)
    if n.kind == "nan":
        return 0
    if n.kind == "inf":
        v = lo if n.sign else hi
    else:
        v = max(lo, min(hi, to_int(n, rounding)))
    return v & (1 << width) - 1


def f2f(a: int, src: Fmt, dst: Fmt, rounding: str = "rn") -> int:
    src, dst = fmt_of(src), fmt_of(dst)
    n = decode(a, src)
    if n.kind == "nan":
        return dst.nan
    if n.kind == "inf":
        return n.sign << dst.width - 1 | dst.inf
    return round_bits(n.sign, n.m, n.e, dst, rounding)


def frnd(a: int, fmt: Fmt, rounding: str = "rn") -> int:
    """A float rounded to an integral value of the same format (the sign of a zero is kept)."""
    fmt = fmt_of(fmt)
    n = decode(a, fmt)
    if n.kind == "nan":
        return fmt.nan
    if n.kind == "inf":
        return a
    v = to_int(n, rounding)
    return round_bits(n.sign, abs(v), 0, fmt, rounding)


# the Ctx operations this module gives a value to (the interpreter takes them all)
OPERATIONS = ("fadd", "fmul", "ffma", "i2f", "f2i", "f2f", "frnd")

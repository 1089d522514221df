"""The MUFU sweep: which functions, which inputs, and the CPU's best guess at the chip's words.

One sweep per MUFU function of sm_86 (and per PTX form that compiles to a different sequence
around it): a kernel of ``cases/float/mufu_sweep.cu`` that writes the raw result bits of one
input per thread, and a deterministic list of inputs (special values, powers of two and their
neighbours, the function's interesting points, then values spread over every exponent from a
fixed seed). ``cases/float/mufu_make_cases.py`` turns each sweep into a case file
(``cases/float/<name>.toml``); ``warpboard mufu-rates`` (:mod:`studies.mufu_rates`) measures
how many of a sweep's words each device gives bit for bit.

:func:`reference` is the CPU's best guess, independent of the translator: the function's
binary64 value rounded once to binary32 (RCP64H/RSQ64H: the exact value's high word,
truncated), with what PTX documents around it (denormal arguments and results flushed by the
``.ftz`` forms, the special values, sin/cos of the argument times 1/(2 pi) rounded toward
zero, as ptxas's ``FMUL.RZ`` gives it) and, for the forms without ``.ftz``, the scaling steps
ptxas puts around the MUFU. A NaN result is the canonical NaN 0x7fffffff.
"""
from __future__ import annotations

import math
import random
import struct
from dataclasses import dataclass
from fractions import Fraction

SIGN, EXP, MAG = 0x80000000, 0x7F800000, 0x7FFFFFFF
NAN = 0x7FFFFFFF                    # the NaN the chip's MUFU and FMUL give
INV_2PI = 0x3E22F983                # 0.15915494f: ptxas's FMUL.RZ before MUFU.SIN/COS
BLOCK = 256                         # threads per block of a sweep case
HI_EXP = 0x7FF00000                 # a binary64 high word's exponent field


@dataclass(frozen=True)
class Sweep:
    """One sweep case: the kernel, what it computes and how many inputs."""
    case: str           # the case's name: cases/float/<case>.toml
    kernel: str         # in cases/float/mufu_sweep.cu
    label: str          # what the rates table calls it (the SASS it runs)
    ptx: str            # the PTX instruction
    func: str           # rcp rsq sqrt ex2 lg2 sin cos tanh rcp64h rsq64h
    ftz: bool           # False: ptxas's scaling around the MUFU keeps denormals
    words: int          # inputs (threads)
    seed: int

    @property
    def fmt(self) -> str:
        """How to read a result word: ``f32`` or ``f64h`` (the high word of a binary64)."""
        return "f64h" if self.func.endswith("64h") else "f32"


SWEEPS = (
    Sweep("mufu_rcp_sweep", "mufu_rcp_ftz", "MUFU.RCP", "rcp.approx.ftz.f32", "rcp", True, 4096, 1501),
    Sweep("mufu_rsq_sweep", "mufu_rsq_ftz", "MUFU.RSQ", "rsqrt.approx.ftz.f32", "rsq", True, 4096, 1502),
    Sweep("mufu_sqrt_sweep", "mufu_sqrt_ftz", "MUFU.SQRT", "sqrt.approx.ftz.f32", "sqrt", True, 4096, 1503),
    Sweep("mufu_ex2_sweep", "mufu_ex2_ftz", "MUFU.EX2", "ex2.approx.ftz.f32", "ex2", True, 4096, 1504),
    Sweep("mufu_lg2_sweep", "mufu_lg2_ftz", "MUFU.LG2", "lg2.approx.ftz.f32", "lg2", True, 4096, 1505),
    Sweep("mufu_sin_sweep", "mufu_sin_ftz", "FMUL.RZ + MUFU.SIN", "sin.approx.ftz.f32", "sin", True, 4096, 1506),
    Sweep("mufu_cos_sweep", "mufu_cos_ftz", "FMUL.RZ + MUFU.COS", "cos.approx.ftz.f32", "cos", True, 4096, 1507),
    Sweep("mufu_tanh_sweep", "mufu_tanh", "MUFU.TANH", "tanh.approx.f32", "tanh", False, 4096, 1508),
    Sweep("mufu_rcp64h_sweep", "mufu_rcp64h", "MUFU.RCP64H", "rcp.approx.ftz.f64", "rcp64h", True, 4096, 1509),
    Sweep("mufu_rsq64h_sweep", "mufu_rsq64h", "MUFU.RSQ64H", "rsqrt.approx.ftz.f64", "rsq64h", True, 4096, 1510),
    Sweep("mufu_rcp_scaled_sweep", "mufu_rcp", "scaled MUFU.RCP", "rcp.approx.f32", "rcp", False, 1024, 1511),
    Sweep("mufu_rsq_scaled_sweep", "mufu_rsq", "scaled MUFU.RSQ", "rsqrt.approx.f32", "rsq", False, 1024, 1512),
    Sweep("mufu_sqrt_scaled_sweep", "mufu_sqrt", "scaled MUFU.SQRT", "sqrt.approx.f32", "sqrt", False, 1024, 1513),
    Sweep("mufu_ex2_scaled_sweep", "mufu_ex2", "scaled MUFU.EX2", "ex2.approx.f32", "ex2", False, 1024, 1514),
    Sweep("mufu_lg2_scaled_sweep", "mufu_lg2", "scaled MUFU.LG2", "lg2.approx.f32", "lg2", False, 1024, 1515),
)
BY_KERNEL = {s.kernel: s for s in SWEEPS}


def sweep_named(case: str) -> Sweep:
    """The sweep whose case is called ``case``."""
    for s in SWEEPS:
        if s.case == case:
            return s
    raise KeyError(f"no MUFU sweep case {case!r} (sweeps: {', '.join(s.case for s in SWEEPS)})")


# ---------------------------------------------------------------- binary32 words and values
def value(word: int) -> float:
    return struct.unpack("<f", struct.pack("<I", word))[0]


def word(x: float) -> int:
    """``x`` rounded to the nearest binary32 (overflowing to an infinity); NaN: 0x7fffffff."""
    if math.isnan(x):
        return NAN
    try:
        return struct.unpack("<I", struct.pack("<f", x))[0]
    except OverflowError:
        return SIGN * (x < 0) | EXP


def flushed(w: int) -> int:
    """A denormal word as the zero of its sign (what .ftz does)."""
    return w & SIGN if w & EXP == 0 else w


def is_nan(w: int) -> bool:
    return w & MAG > EXP


def power_of_two(e: int) -> int:
    """The word of 2^e, -149 <= e <= 127 (a denormal below -126)."""
    return (e + 127) << 23 if e >= -126 else 1 << (e + 149)


def mul_rz(a: int, b: int) -> int:
    """a * b rounded toward zero (FMUL.RZ, denormals kept): the product of two binary32
    values is exact in binary64, then truncated to 24 bits (to 2^-149 among the denormals)."""
    p = value(a) * value(b)
    if p == 0 or not math.isfinite(p):
        return word(p)
    if abs(p) < 2.0 ** -126:
        q = math.trunc(p * 2.0 ** 149) * 2.0 ** -149
    else:
        m, e = math.frexp(p)
        q = math.ldexp(math.trunc(m * 2 ** 24), e - 24)
    return min(word(q) & MAG, 0x7F7FFFFF) | (SIGN if p < 0 else 0)


# ---------------------------------------------------------------- the functions
def _turns(func: str, t: float) -> float:
    """sin or cos of ``t`` turns: t = n/4 + r exactly (|r| <= 1/8), then the quarter's identity."""
    n = round(4 * t)
    r = t - n / 4
    s, c = math.sin(2 * math.pi * r), math.cos(2 * math.pi * r)
    if func == "sin" and t == 0:
        return t                                  # sin(-0) = -0
    return (s, c, -s, -c)[(n + (func == "cos")) % 4]


def _exact(func: str, x: float) -> float:
    """The function at a binary32 value (binary64 arithmetic), special values as PTX has them."""
    if math.isnan(x):
        return math.nan
    if func == "rcp":
        return math.copysign(math.inf, x) if x == 0 else 1 / x
    if func in ("rsq", "sqrt", "lg2") and x < 0:
        return math.nan
    if func == "rsq":
        return math.copysign(math.inf, x) if x == 0 else (0.0 if math.isinf(x) else 1 / math.sqrt(x))
    if func == "sqrt":
        return x if x == 0 else math.sqrt(x)
    if func == "lg2":
        return -math.inf if x == 0 else math.log2(x)
    if func == "ex2":
        return math.inf if x >= 129 else (0.0 if x < -160 else 2.0 ** x)
    if func == "tanh":
        return math.tanh(x)
    if math.isinf(x):                             # sin, cos of a number of turns
        return math.nan
    return _turns(func, x)


def mufu_f32(func: str, w: int, ftz: bool = True) -> int:
    """The best guess at MUFU.func of a binary32 word (sin, cos: of a number of turns)."""
    if ftz:
        w = flushed(w)
    r = word(_exact(func, value(w)))
    return flushed(r) if ftz else r


def _mul(a: int, b: int) -> int:
    """FMUL (round to nearest, denormals kept): binary32 products are exact in binary64."""
    return word(value(a) * value(b))


def _scaled(func: str, w: int) -> int:
    """What ptxas emits for the PTX forms without .ftz: scale the argument out of the denormals
    (FSETP |x| >= 2^-126, FMUL by 2^24; RCP: by 1/4 above 2^126 too; EX2: halve below -126),
    the MUFU, and undo the scaling on the result (FMUL, FADD or a square)."""
    x = value(w)
    tiny = abs(x) < 2.0 ** -126                   # false for a NaN (FSETP.GEU is unordered-true)
    if func == "ex2":
        if not x < -126:
            return mufu_f32("ex2", w)
        half = mufu_f32("ex2", _mul(w, 0x3F000000))
        return _mul(half, half)
    if func == "rcp":
        scale = 0x3E800000 if abs(x) > 2.0 ** 126 else (0x4B800000 if tiny else 0x3F800000)
        return _mul(mufu_f32("rcp", _mul(w, scale)), scale)
    if not tiny:
        return mufu_f32(func, w)
    r = mufu_f32(func, _mul(w, 0x4B800000))
    if func == "lg2":
        return word(value(r) - 24)
    return _mul(r, {"rsq": 0x45800000, "sqrt": 0x39800000}[func])


def _high_word(r: Fraction, sign: int) -> int:
    """The high word of the positive rational ``r`` as a binary64, truncated (0 below the normals)."""
    if r < Fraction(2) ** -1022:
        return sign
    e = math.floor(math.log2(r))
    while Fraction(2) ** e > r:                   # the float log2 may be off by one
        e -= 1
    while Fraction(2) ** (e + 1) <= r:
        e += 1
    frac = math.floor((r / Fraction(2) ** e - 1) * 2 ** 20)
    return sign | (e + 1023) << 20 | frac


def mufu_f64h(func: str, hi: int) -> int:
    """The best guess at MUFU.RCP64H / RSQ64H: the high word of 1/x or 1/sqrt(x) for the
    binary64 x whose high word is ``hi`` (low word 0), truncated; zeros and denormals count as
    zeros (an infinity of their sign), NaN gives 0x7fffffff."""
    sign, field, frac = hi & SIGN, hi >> 20 & 0x7FF, hi & 0xFFFFF
    if field == 0x7FF:
        return NAN if frac or (sign and func == "rsq64h") else (sign if func == "rcp64h" else 0)
    if field == 0:
        return sign | HI_EXP
    if sign and func == "rsq64h":
        return NAN
    x = Fraction(struct.unpack("<d", struct.pack("<Q", (hi & MAG) << 32))[0])
    if func == "rcp64h":
        return _high_word(1 / x, sign)
    guess = _high_word(Fraction(1 / math.sqrt(float(x))), 0)
    while guess and _f64h(guess) ** 2 * x > 1:    # truncation of 1/sqrt(x), exactly
        guess -= 1
    while _f64h(guess + 1) ** 2 * x <= 1:
        guess += 1
    return guess


def _f64h(hi: int) -> Fraction:
    return Fraction(struct.unpack("<d", struct.pack("<Q", hi << 32))[0])


def reference(sweep: Sweep, w: int) -> int:
    """The CPU's best guess at the word ``sweep``'s kernel writes for input ``w``."""
    if sweep.fmt == "f64h":
        return mufu_f64h(sweep.func, w)
    if sweep.func in ("sin", "cos"):
        return mufu_f32(sweep.func, mul_rz(w, INV_2PI))
    if sweep.func == "tanh":
        return mufu_f32("tanh", w, ftz=False)
    return mufu_f32(sweep.func, w) if sweep.ftz else _scaled(sweep.func, w)


def derived_words(sweep: Sweep) -> list[int]:
    """:func:`reference` for every input of the sweep."""
    return [reference(sweep, w) for w in inputs(sweep)]


# ---------------------------------------------------------------- the inputs
F32_SPECIALS = (
    0x00000000, 0x80000000,                                   # zeros
    0x00000001, 0x80000001, 0x00000002, 0x00000003, 0x000003FF, 0x00012345, 0x00400000,
    0x80400000, 0x007FFFFE, 0x007FFFFF, 0x807FFFFF,           # denormals
    0x00800000, 0x80800000, 0x00800001, 0x80800001,           # FLT_MIN and its neighbour
    0x7F7FFFFF, 0xFF7FFFFF, 0x7F7FFFFE, 0x7F000000,           # FLT_MAX and near it
    0x7F800000, 0xFF800000,                                   # infinities
    0x7FC00000, 0xFFC00000, 0x7FFFFFFF, 0xFFFFFFFF, 0x7FC12345,   # quiet NaNs
    0x7F800001, 0xFF800001, 0x7FBFFFFF,                       # signalling NaNs
    0x3F800000, 0xBF800000, 0x3F7FFFFF, 0x3F800001, 0xBF7FFFFF, 0xBF800001,   # +-1 and neighbours
    0x3F000000, 0xBF000000, 0x40000000, 0xC0000000, 0x40490FDB, 0xC0490FDB,   # 1/2, 2, pi
)
# a binary64's high word: zeros, denormals, the extremes, infinities and NaNs, 1, 2, 1/2
F64H_SPECIALS = (
    0x00000000, 0x80000000, 0x00000001, 0x000FFFFF, 0x800FFFFF, 0x00080000, 0x00100000,
    0x80100000, 0x00100001, 0x7FEFFFFF, 0xFFEFFFFF, 0x7FE00000, 0x7FD00000, 0x7FF00000,
    0xFFF00000, 0x7FF80000, 0xFFF80000, 0x7FF00001, 0x7FFFFFFF, 0xFFFFFFFF, 0x3FF00000,
    0xBFF00000, 0x3FEFFFFF, 0x3FF00001, 0x3FE00000, 0x40000000, 0xC0000000, 0x400921FB,
)


def _neighbours(words, steps: int = 1) -> list[int]:
    """Each word and the words ``steps`` apart on either side (of the same sign)."""
    out = []
    for w in words:
        out += [w + d for d in range(-steps, steps + 1) if 0 <= (w & MAG) + d <= EXP]
    return out


def _signed(words, negative: bool = True) -> list[int]:
    return [w | s for w in words for s in ((0, SIGN) if negative else (0,))]


def powers_of_two(lo: int, hi: int, negative: bool = True) -> list[int]:
    """2^e for lo <= e <= hi and the words next to each, positive (and negative)."""
    return _signed(_neighbours([power_of_two(e) for e in range(lo, hi + 1)]), negative)


def _near(values, steps: int) -> list[int]:
    """The binary32 nearest each value and ``steps`` words on either side."""
    return _neighbours([word(v) for v in values], steps)


def _points(func: str) -> list[int]:
    """Inputs around where ``func`` is hard or changes behaviour."""
    if func == "rcp":
        return (_near([1, 1.5, 3, 0.75, 2.0 ** 126, 2.0 ** 127, 2.0 ** -126 * 1.5], 3)
                + _signed(_near([2.0 ** 126 * 1.9999, 2.0 ** -127, 2.0 ** -128], 2)))
    if func in ("rsq", "sqrt"):
        return _near([k * k for k in range(1, 101)] + [2, 8, 0.5, 2.0 ** 126, 2.0 ** -125], 1)
    if func == "ex2":
        edges = [126, 127, 128, 129, 149, 150, 125.5, 0.5, 1.5]
        return (_near([float(k) for k in range(-160, 161)], 0) + _near([k + 0.5 for k in range(-152, 129)], 0)
                + _near(edges + [-e for e in edges], 4) + _signed([power_of_two(e) for e in range(-40, -10)]))
    if func == "lg2":
        return (_near([1.0], 64) + _near([2.0, 0.5, math.sqrt(2), math.sqrt(0.5), 3, 10, 1e-30, 1e30], 4)
                + [word(1 + k * 2.0 ** -j) for j in range(10, 24) for k in (-3, -1, 1, 3)])
    if func in ("sin", "cos"):
        quarters = [k * math.pi / 2 for k in range(-64, 65)] + [k * math.pi / 4 for k in range(-33, 34, 2)]
        big = [2.0 ** e * math.pi for e in range(6, 60, 3)] + [2.0 ** e for e in range(10, 128, 4)]
        turns = [k / 4 / value(INV_2PI) for k in range(-40, 41)]
        return (_near(quarters, 2) + _signed(_near(big, 1)) + _near(turns, 1)
                + _signed([power_of_two(e) for e in range(-40, -10)]))
    if func == "tanh":
        return (_near([k / 8 for k in range(-80, 81)], 1) + _near([8.5, 9, 9.01, 9.1, 10, 15, 45, 1e4], 2)
                + _signed([power_of_two(e) for e in range(-60, -1, 2)]) + _near([-8.5, -9, -9.01, -10], 2))
    return []


def _f64h_points(func: str) -> list[int]:
    """High words of binary64 powers of two (every 8th exponent, neighbours too) and near 1."""
    powers = [(e + 1023) << 20 for e in range(-1022, 1024, 8)] + [0x7FE00000, 0x00100000, 0x7FD00000]
    near_one = [0x3FF00000 + d for d in range(-16, 17)] + [0x40000000 + d for d in range(-8, 9)]
    negative = func == "rcp64h"
    return _signed(_neighbours(powers) + near_one, negative)


def _random_f32(rng: random.Random, sweep: Sweep) -> int:
    """A value spread over every exponent (positive mostly, where negatives only give NaN),
    or one from the function's busy range (ex2 within +-160, sin/cos within 8 turns, tanh
    within +-10); the scaled forms draw denormals half the time."""
    positive = sweep.func in ("rsq", "sqrt", "lg2") and rng.random() < 0.9
    sign = 0 if positive else rng.getrandbits(1) << 31
    if not sweep.ftz and sweep.func != "tanh" and rng.random() < 0.5:
        return sign | rng.randrange(1, 1 << 23)
    busy = {"ex2": 160.0, "sin": 50.0, "cos": 50.0, "tanh": 10.0}.get(sweep.func)
    if busy and rng.random() < 0.6:
        return word(math.copysign(rng.uniform(0, busy), -1.0 if sign else 1.0))
    return sign | rng.randrange(0, 255) << 23 | rng.getrandbits(23)


def _random_f64h(rng: random.Random, sweep: Sweep) -> int:
    sign = rng.getrandbits(1) << 31 if sweep.func == "rcp64h" or rng.random() < 0.1 else 0
    return sign | rng.randrange(1, 0x7FF) << 20 | rng.getrandbits(20)


def _head(sweep: Sweep) -> list[int]:
    """The hand-picked inputs of a sweep, before the random ones."""
    if sweep.fmt == "f64h":
        return list(F64H_SPECIALS) + _f64h_points(sweep.func)
    positive_only = sweep.func in ("rsq", "sqrt", "lg2")
    if not sweep.ftz and sweep.func != "tanh":
        # the scaled forms differ from the bare MUFU on denormals (and RCP above 2^126, EX2 below -126)
        denormals = powers_of_two(-149, -126) + _signed(_neighbours([0x00000010, 0x00001000, 0x00100000]))
        extra = {"rcp": _signed(_near([2.0 ** 126, 2.0 ** 127, 3e38], 3)),
                 "ex2": _near([-126, -127, -128, -140, -149, -150, -151], 4)}.get(sweep.func, [])
        return list(F32_SPECIALS) + denormals + extra
    return list(F32_SPECIALS) + powers_of_two(-149, 127, not positive_only) + _points(sweep.func)


def inputs(sweep: Sweep) -> list[int]:
    """The sweep's ``words`` inputs: its hand-picked values once each (in order), then values
    from ``random.Random(seed)`` until there are enough."""
    chosen = list(dict.fromkeys(_head(sweep)))
    if len(chosen) > sweep.words:
        raise ValueError(f"{sweep.case}: {len(chosen)} hand-picked inputs, more than its {sweep.words} words")
    rng, seen = random.Random(sweep.seed), set(chosen)
    draw = _random_f64h if sweep.fmt == "f64h" else _random_f32
    while len(chosen) < sweep.words:
        w = draw(rng, sweep)
        if w not in seen:
            seen.add(w)
            chosen.append(w)
    return chosen

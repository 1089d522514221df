"""References for MUFU (Python's math within ulp limits), binary64 and packed binary16/bfloat16
opcode tests, and the pair-of-words kernels they run."""
from __future__ import annotations

import math
import random
import struct
from fractions import Fraction

import numpy as np
from warpboard.harness.case.model import load_case

from support.float32 import kernel

NAN32 = 0x7FFFFFFF


def f32(word: int) -> float:
    return struct.unpack("<f", struct.pack("<I", word))[0]


def word32(v: float) -> int:
    return struct.unpack("<I", struct.pack("<f", v))[0]


def ulp32(v: float) -> float:
    """The spacing of binary32 numbers at ``v`` (the smallest normal's below it)."""
    e = max(math.frexp(abs(v))[1] - 24, -149) if v else -149
    return math.ldexp(1.0, max(e, -149))


# ---------------------------------------------------------------- MUFU
def _turns(fn, a):
    return fn(2 * math.pi * a)


MUFU_REFS = {
    "RCP": lambda a: 1 / a, "RSQ": lambda a: 1 / math.sqrt(a), "SQRT": math.sqrt,
    "EX2": lambda a: 2.0 ** a, "LG2": math.log2,
    "SIN": lambda a: _turns(math.sin, a), "COS": lambda a: _turns(math.cos, a), "TANH": math.tanh,
}


MUFU_SPECIALS = {   # argument word -> result word, as PTX documents them
    "RCP": {0x0: 0x7F800000, 0x80000000: 0xFF800000, 0x7F800000: 0x0, 0xFF800000: 0x80000000, 0x1: 0x7F800000},
    "RSQ": {0x0: 0x7F800000, 0x80000000: 0xFF800000, 0x7F800000: 0x0, 0xBF800000: NAN32, 0xFF800000: NAN32},
    "SQRT": {0x0: 0x0, 0x80000000: 0x80000000, 0x7F800000: 0x7F800000, 0xBF800000: NAN32},
    "EX2": {0x0: 0x3F800000, 0x80000000: 0x3F800000, 0x7F800000: 0x7F800000, 0xFF800000: 0x0,
            0x43100000: 0x7F800000, 0xC3100000: 0x0, 0xC2FF0000: 0x0},
    "LG2": {0x0: 0xFF800000, 0x80000000: 0xFF800000, 0x7F800000: 0x7F800000, 0xBF800000: NAN32,
            0x3F800000: 0x0},
    "SIN": {0x0: 0x0, 0x80000000: 0x80000000, 0x7F800000: NAN32, 0x3E800000: 0x3F800000, 0x4B000001: 0x0},
    "COS": {0x0: 0x3F800000, 0x7F800000: NAN32, 0x3F000000: 0xBF800000, 0x4B000001: 0x3F800000},
    "TANH": {0x0: 0x0, 0x80000000: 0x80000000, 0x7F800000: 0x3F800000, 0xFF800000: 0xBF800000,
             0x00000123: 0x00000123, 0x80400000: 0x80400000, 0x7FC00000: NAN32, 0x41A00000: 0x3F800000},
}


def mufu_inputs(func: str, rng: random.Random) -> list[int]:
    """Arguments for MUFU.func: its specials, then values spread over its useful range."""
    if func in ("SIN", "COS"):
        vals = [rng.uniform(-4, 4) for _ in range(100)] + [k / 8 + rng.uniform(-1e-3, 1e-3) for k in range(-20, 20)]
        vals += [rng.uniform(-1e-3, 1e-3) for _ in range(20)] + [rng.uniform(-3e6, 3e6) for _ in range(10)]
    elif func == "TANH":
        vals = [rng.uniform(-10, 10) for _ in range(120)] + [rng.uniform(-1e-3, 1e-3) for _ in range(20)]
    elif func == "EX2":
        vals = [rng.uniform(-126, 128) for _ in range(120)] + [rng.uniform(-1e-3, 1e-3) for _ in range(20)]
    else:
        vals = [math.ldexp(rng.uniform(1, 2), rng.randrange(-126, 127)) for _ in range(140)]
        vals += [1 + rng.uniform(-1e-3, 1e-3) for _ in range(20)] if func == "LG2" else []
        vals += [-v for v in vals[:10]] if func == "RCP" else []
    return list(MUFU_SPECIALS[func]) + [word32(v) for v in vals]


def mufu_error(func: str, a: int, got: int) -> float | None:
    """How far ``got`` is from MUFU.func(a) (in ulp of the exact value; absolute / 2^-24 for
    SIN and COS, whose values near their zeros are approximated to an absolute bound on the
    chip as well); None where the word itself is prescribed."""
    if a in MUFU_SPECIALS[func]:
        return None
    exact = MUFU_REFS[func](f32(a))
    if abs(exact) < 2.0 ** -126:                 # the chip flushes results below the normals
        return 0.0 if got & 0x7FFFFFFF == 0 else math.inf
    if (got & 0x7F800000) == 0x7F800000:
        return 0.0 if abs(exact) >= 2.0 ** 128 and got == word32(math.copysign(math.inf, exact)) else math.inf
    diff = abs(f32(got) - exact)
    if func in ("SIN", "COS"):
        return min(diff / ulp32(exact), diff / 2.0 ** -24)
    return diff / ulp32(exact)


# the largest error each back end may show: the interpreter rounds the function's value
# once; lavapipe uses its own binary32 functions
MUFU_LIMITS = {"interp": 0.5001, "lavapipe": 4.0}


TANH_LIMITS = MUFU_LIMITS       # the shader's TANH is a series and an exponential, not the device's Tanh


def tolerant_case(tmp_path, compare_line: str):
    path = tmp_path / "tol.toml"
    path.write_text(f'''name = "tol"
summary = "a tolerance"
sass = """
        /*0000*/                   EXIT ;
"""
[provenance]
expected = "derived"
listing = "hand-written"
derivation = "by hand"
[launch]
grid = 1
block = 4
[[buffers]]
name = "out"
words = 4
init = 0
expected = [0x3f800000, 0x3f800000, 0x7fc00000, 0x7f800000]
{compare_line}
''')
    return load_case(path)


# ---------------------------------------------------------------- exact references
F64_NAN = 0x7FFFFFFFFFFFFFFF


F16_NAN = 0x7FFF


def f64(w: int) -> float:
    return struct.unpack("<d", struct.pack("<Q", w))[0]


def w64(v: float) -> int:
    return F64_NAN if math.isnan(v) else struct.unpack("<Q", struct.pack("<d", v))[0]


def nearest_word(x: Fraction, words, value) -> int:
    """Of the candidate ``words`` (a format's, increasing with their value), the one nearest
    to ``x``, ties to the even word."""
    return min(words, key=lambda w: (abs(Fraction(value(w)) - x), w & 1))


def fused(a: float, b: float, c: float, round_to) -> int | None:
    """a * b + c rounded once by ``round_to(Fraction, sign_of_zero)``; None when a special
    value takes part (then the unfused result is the answer)."""
    if not all(math.isfinite(v) for v in (a, b, c)):
        return None
    exact = Fraction(a) * Fraction(b) + Fraction(c)
    zero_sign = math.copysign(1, a) * math.copysign(1, b) < 0 and math.copysign(1, c) < 0
    return round_to(exact, zero_sign)


def round_f64(x: Fraction, zero_sign: bool) -> int:
    if x == 0:
        return int(zero_sign) << 63
    try:
        return w64(float(x))                         # Fraction -> float is correctly rounded
    except OverflowError:
        return w64(-math.inf if x < 0 else math.inf)


def ref_f64(op: str, a: int, b: int, c: int = 0) -> int:
    x, y, z = f64(a), f64(b), f64(c)
    if op == "fma":
        r = fused(x, y, z, round_f64)
        if r is not None:
            return r
    with np.errstate(all="ignore"):
        v = {"add": np.float64(x) + np.float64(y), "mul": np.float64(x) * np.float64(y),
             "fma": np.float64(x) * np.float64(y) + np.float64(z)}[op]
    return w64(float(v))


F64_EDGES = [0x0, 1 << 63, 0x1, 0x000FFFFFFFFFFFFF, 0x0010000000000000, 0x3FF0000000000000, 0xBFF0000000000000,
             0x3FF0000000000001, 0x3CA0000000000000, 0x7FEFFFFFFFFFFFFF, 0x7FF0000000000000, 0xFFF0000000000000,
             0x7FF8000000000000, 0x3FB999999999999A, 0x4330000000000001]


def f64_vectors():
    rng = random.Random(64)
    out = [(a, b, F64_EDGES[(i + 2 * j) % len(F64_EDGES)]) for i, a in enumerate(F64_EDGES)
           for j, b in enumerate(F64_EDGES)]
    for _ in range(60):
        a, b = (w64(rng.uniform(-4, 4) * 2.0 ** rng.randrange(-30, 30)) for _ in range(2))
        c = w64(-f64(a) * f64(b)) if rng.random() < 0.5 else w64(rng.uniform(-4, 4))   # cancellation
        out.append((a, b, c))
    out += [tuple(rng.getrandbits(64) for _ in range(3)) for _ in range(30)]
    return out


def run_pairs(backend, ops, inputs, name):
    """As support.float32.run_ops_pairs, for up to six input words: the fifth and sixth land in
    R8, R9 and move to R10, R11 (R8 is the output address, computed again)."""
    threads, n_in, n_out = -(-len(inputs) // 32) * 32, len(inputs[0]), 2 * len(ops)
    body = kernel(ops, n_in, n_out, ["MOV R10, R8", "MOV R11, R9",
                                     f"IMAD.WIDE.U32 R8, R0, {4 * n_out:#x}, c[0x0][0x168]"], pairs=True)
    flat = [w for v in inputs for w in v] + [0] * ((threads - len(inputs)) * n_in)
    run = backend.run(body, [flat, [0xA5A5A5A5] * (threads * n_out)], threads=threads, name=name)
    assert run.outcome == "ok", f"{backend.name}: {run.outcome}: {run.detail}"
    words = run.buffers[1]
    return [[(words[t * n_out + 2 * k], words[t * n_out + 2 * k + 1]) for k in range(len(ops))]
            for t in range(len(inputs))]


def split64(v):
    return [w for x in v for w in (x & 0xFFFFFFFF, x >> 32)]


def kept_nan(*sources: int) -> int | None:
    """The chip's NaN result of DADD/DMUL/DFMA (H200): the first NaN source as its register
    holds it (operand modifiers not applied), quieted; None when no source is a NaN."""
    return next((w | 1 << 51 for w in sources if math.isnan(f64(w))), None)


F64_OPS = [("DADD {d}, R4, R6", lambda a, b, c: kept_nan(a, b) or ref_f64("add", a, b)),
           ("DMUL {d}, R4, R6", lambda a, b, c: kept_nan(a, b) or ref_f64("mul", a, b)),
           ("DFMA {d}, R4, R6, R10", lambda a, b, c: kept_nan(a, b, c) or ref_f64("fma", a, b, c)),
           ("DFMA {d}, -R4, R6, -R10",
            lambda a, b, c: kept_nan(a, b, c) or ref_f64("fma", a ^ 1 << 63, b, c ^ 1 << 63)),
           ("DMUL {d}, |R4|, 0.5", lambda a, b, c: kept_nan(a) or ref_f64("mul", a & ~(1 << 63), w64(0.5)))]


def ref_test64(test: str, a: float, b: float) -> bool:
    unordered = math.isnan(a) or math.isnan(b)
    if test in ("NUM", "NAN"):
        return unordered == (test == "NAN")
    r = {"EQ": a == b, "NE": a != b, "LT": a < b, "LE": a <= b, "GT": a > b, "GE": a >= b}[test[:2]]
    return unordered or r if test.endswith("U") else not unordered and r


# ---------------------------------------------------------------- packed halves
def f16_of(w: int) -> float:
    return float(np.array([w], dtype=np.uint16).view(np.float16)[0])


def bf16_of(w: int) -> float:
    return f32(w << 16)


def round_half(x: Fraction, zero_sign: bool, fmt: str) -> int:
    """``x`` rounded to nearest even in binary16 or bfloat16, as a word."""
    value, top = (f16_of, 0x7BFF) if fmt == "f16" else (bf16_of, 0x7F7F)
    if x == 0:
        return int(zero_sign) << 15
    sign, mag = int(x < 0) << 15, abs(x)
    if mag >= Fraction(value(top)) + (Fraction(value(top)) - Fraction(value(top - 1))) / 2:
        return sign | (0x7C00 if fmt == "f16" else 0x7F80)
    lo, hi = 0, top
    while lo < hi:                                   # the largest word not above mag
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if Fraction(value(mid)) <= mag else (lo, mid - 1)
    return sign | nearest_word(mag, [w for w in (lo, lo + 1) if w <= top + 1], lambda w: value(min(w, top)) if w <= top else value(top) * 2)


def ref_half(op: str, fmt: str, a: int, b: int, c: int = 0) -> int:
    value = f16_of if fmt == "f16" else bf16_of
    x, y, z = value(a), value(b), value(c) if op == "fma" else 0.0
    if not all(math.isfinite(v) for v in (x, y, z)):
        with np.errstate(all="ignore"):
            v = {"add": x + y, "mul": x * y, "fma": x * y + z}[op]
        if math.isnan(v):
            return F16_NAN
        return (int(v < 0) << 15) | (0x7C00 if fmt == "f16" else 0x7F80) if math.isinf(v) else None
    exact = {"add": Fraction(x) + Fraction(y), "mul": Fraction(x) * Fraction(y),
             "fma": Fraction(x) * Fraction(y) + Fraction(z)}[op]
    sx, sy, sz = (math.copysign(1, v) < 0 for v in (x, y, z))
    zero_sign = {"add": sx and sy, "mul": sx != sy, "fma": (sx != sy) and sz}[op]
    return round_half(exact, zero_sign, fmt)


def _lanes(w):
    return w & 0xFFFF, w >> 16


def _packed(fn):
    """A per-half reference as one over the two packed words."""
    return lambda a, b, c: fn(*_lanes(a), *_lanes(b), *_lanes(c))


def _per_half(op, fmt, neg_b=False):
    def ref(a0, a1, b0, b1, c0, c1):
        if neg_b:
            b0, b1 = b0 ^ 0x8000, b1 ^ 0x8000
        return ref_half(op, fmt, a0, b0, c0) | ref_half(op, fmt, a1, b1, c1) << 16
    return _packed(ref)


def _f32_to_half(w: int, fmt: str) -> int:
    v = f32(w)
    if math.isnan(v):
        return F16_NAN
    if math.isinf(v):
        return (int(v < 0) << 15) | (0x7C00 if fmt == "f16" else 0x7F80)
    return round_half(Fraction(v), math.copysign(1, v) < 0, fmt)


HALF_OPS = [
    ("HADD2 {d}, R4, R5", _per_half("add", "f16")),
    ("HMUL2 {d}, R4, -R5", _per_half("mul", "f16", neg_b=True)),
    ("HFMA2 {d}, R4, R5, R6", _per_half("fma", "f16")),
    ("HFMA2.BF16_V2 {d}, R4, R5, R6", _per_half("fma", "bf16")),
    ("HADD2 {d}, R4.H1_H1, R5.H0_H0", _packed(lambda a0, a1, b0, b1, c0, c1: ref_half("add", "f16", a1, b0) * 0x10001)),
    ("HFMA2.MMA {d}, -RZ, RZ, 1.875, 0", lambda a, b, c: 0x3F800000),
    ("HADD2.F32 {d}, -RZ, R4.H1_H1", lambda a, b, c: word32(np.float32(f16_of(a >> 16))) if not math.isnan(f16_of(a >> 16)) else NAN32),
    ("F2FP.PACK_AB {d}, R4, R5", lambda a, b, c: _f32_to_half(a, "f16") << 16 | _f32_to_half(b, "f16")),
    ("F2FP.BF16.PACK_AB {d}, R4, R5", lambda a, b, c: _f32_to_half(a, "bf16") << 16 | _f32_to_half(b, "bf16")),
    ("HSETP2.GT.AND P0, P1, R4, R5, PT ;; SEL {d}, RZ, 0x1, !P0 ;; SEL R2, RZ, 0x2, !P1 ;; IADD3 {d}, {d}, R2, RZ",
     _packed(lambda a0, a1, b0, b1, c0, c1: (f16_of(a0) > f16_of(b0)) + 2 * (f16_of(a1) > f16_of(b1)))),
    ("HMNMX2 {d}, R4, R5, PT", _packed(lambda a0, a1, b0, b1, c0, c1: _min16(a0, b0) | _min16(a1, b1) << 16)),
]


def _min16(a: int, b: int) -> int:
    x, y = f16_of(a), f16_of(b)
    if math.isnan(x) or math.isnan(y):
        return F16_NAN if math.isnan(x) and math.isnan(y) else (b if math.isnan(x) else a)
    return min((a, b), key=lambda w: (f16_of(w), -(w >> 15)))


def half_vectors():
    rng = random.Random(16)
    edges16 = [0x0000, 0x8000, 0x0001, 0x03FF, 0x0400, 0x3C00, 0xBC00, 0x3C01, 0x7BFF, 0x7C00, 0xFC00, 0x7E00,
               0x1400, 0x6800]
    out = []
    for k in range(120):
        halves = [rng.choice(edges16) if rng.random() < 0.4 else rng.getrandbits(16) for _ in range(6)]
        out.append(tuple(halves[2 * j] | halves[2 * j + 1] << 16 for j in range(3)))
    out += [(word32(rng.uniform(-7e4, 7e4)), word32(rng.uniform(-1, 1) * 2.0 ** -20), 0) for _ in range(20)]
    return out

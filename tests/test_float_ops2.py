"""MUFU, binary64 and packed binary16/bfloat16 instructions, and the compare tolerance.

MUFU is an approximation on the chip: the interpreter and lavapipe are checked against
Python's math functions within a few ulp, special values exactly. Everything else is exact:
the interpreter and lavapipe, word for word, against values worked out here (numpy's
float16/float64 arithmetic, exact fractions for fused multiply-adds)."""
from __future__ import annotations

import math
import random
import shutil
import struct
import subprocess
from fractions import Fraction

import numpy as np
import pytest

from warpboard.harness.run import compare
from warpboard.harness.case.model import BufferSpec, CaseError, load_case
from warpboard.harness.run.dispatch import prepare, translate_case
from listing_kit import HEAD, SENTINEL, load_inputs, store_outputs
from test_float_ops import _case, kernel, run_ops

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


@pytest.mark.parametrize("func", list(MUFU_REFS))
def test_mufu_within_ulp_of_math(backend, func):
    """MUFU.func on each back end: special arguments give the prescribed words, others are
    within MUFU_LIMITS of Python's math (binary64), denormal results are flushed."""
    rng = random.Random(func)
    inputs = [(a,) for a in mufu_inputs(func, rng)]
    got = run_ops(backend, [(f"MUFU.{func} {{d}}, R4", None)], inputs, (), f"mufu_{func.lower()}")
    bad = []
    for (a,), (w,) in zip(inputs, got):
        want = MUFU_SPECIALS[func].get(a)
        err = mufu_error(func, a, w)
        limit = (TANH_LIMITS if func == "TANH" else MUFU_LIMITS)[backend.name]
        if (want is not None and w != want) or (err is not None and err > limit):
            bad.append(f"MUFU.{func} {f32(a)!r} ({a:#x}): got {f32(w)!r} ({w:#x}), error {err} ulp")
    assert not bad, f"{backend.name}: {len(bad)} of {len(inputs)}:\n" + "\n".join(bad[:20])


def test_mufu_sin_takes_turns_as_ptxas_scales():
    """``FMUL.RZ R0, R0, 1/2pi ; MUFU.SIN`` gives sin of the radians (nvcc's __sinf)."""
    from warpboard.translator.values import mufuops
    for x in (0.5, 1.0, -2.0, 3.0):
        turns = word32(float(np.float32(np.float32(x) * np.float32(0.15915494))))
        assert abs(f32(mufuops.mufu(turns, "sin")) - math.sin(x)) < 1e-6


@pytest.mark.parametrize("func", ["RCP64H", "RSQ64H"])
def test_mufu_64h_high_words(backend, func):
    """RCP64H / RSQ64H: the high word of 1/x or 1/sqrt(x) for the binary64 whose high word is
    given, to 2^-19 (what the DFMA refinement ptxas writes after it needs)."""
    rng = random.Random(func)
    his = [rng.getrandbits(31) | 0x100000 for _ in range(100)] + [0x3FF00000, 0x40000000, 0x7FEFFFFF, 0x00100000]
    specials = {0x0: 0x7FF00000, 0x80000000: 0xFFF00000, 0x7FF00000: 0x0, 0x7FF80000: NAN32, 0x00000123: 0x7FF00000}
    if func == "RCP64H":
        his += [h | 0x80000000 for h in his[:20]]
        specials[0xFFF00000] = 0x80000000
    else:
        specials[0xBFF00000] = NAN32
    inputs = [(h,) for h in list(specials) + his]
    got = run_ops(backend, [(f"MUFU.{func} {{d}}, R4", None)], inputs, (), func.lower())
    bad = []
    for (h,), (w,) in zip(inputs, got):
        if h in specials:
            ok = w == specials[h]
        else:
            x = struct.unpack("<d", struct.pack("<Q", h << 32))[0]
            exact = 1 / x if func == "RCP64H" else 1 / math.sqrt(x)
            approx = struct.unpack("<d", struct.pack("<Q", w << 32))[0]
            ok = abs(approx - exact) <= abs(exact) * 2.0 ** -19 if abs(exact) >= 2.0 ** -1022 else approx == 0
        if not ok:
            bad.append(f"{func} {h:#010x}: got {w:#010x}")
    assert not bad, f"{backend.name}: {len(bad)}:\n" + "\n".join(bad[:20])


# ---------------------------------------------------------------- the compare tolerance
def test_f32_ulp_distance_and_classes():
    assert compare.f32_ulps(0x3F800000, 0x3F800002) == 2
    assert compare.f32_ulps(0x80000000, 0x00000000) == 0
    assert compare.f32_ulps(0x80000001, 0x00000001) == 2            # across zero
    assert compare.f32_ulps(0x7F800000, 0x7F7FFFFF) is None          # an infinity is no finite neighbour
    assert compare.within(2, 0x3F800000, 0x3F7FFFFE)
    assert not compare.within(1, 0x3F800000, 0x3F7FFFFE)
    assert compare.within(0, 0x7FC00000, 0xFFFFFFFF)                 # NaN matches any NaN
    assert not compare.within(5, 0x7F800000, 0x7F7FFFFF)
    assert not compare.within(5, 0x7F800000, 0xFF800000)
    assert not compare.within(5, 0x3F800000, 0x7FC00000)


def _tolerant_case(tmp_path, compare_line: str):
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


def test_case_tolerance_passes_near_words_and_says_so(tmp_path):
    """A buffer with ``compare = "f32-ulp:2"`` passes words 2 ulp off and names them in the
    message; one 3 ulp off still differs; exact stays the default."""
    case = _tolerant_case(tmp_path, 'compare = "f32-ulp:2"')
    assert case.buffers[0].compare == "f32-ulp:2"
    near = struct.pack("<4I", 0x3F800002, 0x3F7FFFFF, 0xFFFFFFFF, 0x7F800000)
    found = compare.compare(case, [near])
    assert found.total == 0
    assert found.summary() == "out: 3 words within 2 ulp (at most 2 apart)"
    far = struct.pack("<4I", 0x3F800003, 0x3F800000, 0x7FC00000, 0x7F7FFFFF)
    found = compare.compare(case, [far])
    assert found.total == 2 and found.summary().startswith(
        "2 words differ: thread 0 (warp 0 lane 0) out[0]: expected 0x3f800000, got 0x3f800003")
    exact = _tolerant_case(tmp_path, "")
    assert exact.buffers[0].compare == "exact"
    assert compare.compare(exact, [near]).total == 3                  # two near words and the NaN


@pytest.mark.parametrize("bad", ['"f32-ulp"', '"f64-ulp:2"', '"f32-ulp:-1"', "2"])
def test_case_tolerance_rejects_other_forms(tmp_path, bad):
    with pytest.raises(CaseError, match=r"buffers\[0\]\.compare"):
        _tolerant_case(tmp_path, f"compare = {bad}")


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
    """As test_float_ops.run_ops_pairs, for up to six input words: the fifth and sixth land in
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


def _split(v):
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
for _t in ("LT", "GEU", "NE", "EQU", "NAN"):
    F64_OPS.append((f"DSETP.{_t}.AND P0, PT, R4, R6, PT ;; SEL {{d}}, RZ, 0x1, !P0",
                    (lambda t: lambda a, b, c: int(_ref_test(t, f64(a), f64(b))))(_t)))


def _ref_test(test: str, a: float, b: float) -> bool:
    unordered = math.isnan(a) or math.isnan(b)
    if test in ("NUM", "NAN"):
        return unordered == (test == "NAN")
    r = {"EQ": a == b, "NE": a != b, "LT": a < b, "LE": a <= b, "GT": a > b, "GE": a >= b}[test[:2]]
    return unordered or r if test.endswith("U") else not unordered and r


def test_binary64_arithmetic_and_comparisons(backend):
    """DADD, DMUL, DFMA (fused: cancellation against the rounded product included), DSETP:
    each pair of words as numpy's float64 or exact fractions give it."""
    vecs = f64_vectors()
    got = run_pairs(backend, F64_OPS, [_split(v) for v in vecs], "f64_ops")
    bad = []
    for v, row in zip(vecs, got):
        for (sass, ref), (lo, hi) in zip(F64_OPS, row):
            want = ref(*v)
            have = lo | hi << 32 if sass.startswith("D") and "SEL" not in sass else lo
            if have != want:
                bad.append(f"{sass} on {[hex(w) for w in v]}: expected {want:#x}, got {have:#x}")
    assert not bad, f"{backend.name}: {len(bad)}:\n" + "\n".join(bad[:20])


def test_ddiv_sequence_of_nvcc_is_correctly_rounded(backend):
    """nvcc's double division (MUFU.RCP64H, then DFMA refinement) gives a / b correctly
    rounded on both back ends for ordinary operands."""
    seq = ["MUFU.RCP64H R11, R7", "MOV R10, RZ", "DFMA R12, -R6, R10, 1", "DFMA R12, R12, R12, R12",
           "DFMA R12, R10, R12, R10", "DFMA R10, -R6, R12, 1", "DFMA R10, R12, R10, R12", "DMUL R12, R4, R10",
           "DFMA R14, -R6, R12, R4", "DFMA {d}, R10, R14, R12"]
    rng = random.Random(5)
    vecs = [(w64(rng.uniform(1, 2) * 2.0 ** rng.randrange(-20, 20)), w64(rng.uniform(-2, 2) * 2.0 ** rng.randrange(-20, 20)))
            for _ in range(64)]
    got = run_pairs(backend, [(" ;; ".join(seq), None)], [_split(v) for v in vecs], "ddiv")
    bad = [f"{f64(a)!r} / {f64(b)!r}: got {f64(lo | hi << 32)!r}" for (a, b), [(lo, hi)] in zip(vecs, got)
           if lo | hi << 32 != w64(f64(a) / f64(b))]
    assert not bad, f"{backend.name}: {len(bad)}:\n" + "\n".join(bad[:10])



@pytest.mark.parametrize("divisor", [9.0, 3.0, 10.0, -7.0, 1.5])
def test_ddiv_by_a_constant_reads_the_immediate_as_a_binary64(backend, divisor):
    """nvcc's ``x / 9.0``: ``MUFU.RCP64H R17, 9`` and ``DFMA R12, R10, -9, R4``. nvdisasm
    prints both immediates as the binary64 value whose high word the instruction holds
    (0x40220000 for 9), so MUFU.RCP64H must take that high word, not 9.0f's bits. With the
    wrong word the refinement still lands near x/9 but not on it (floor(9 / 9.0) gave 0)."""
    hi = w64(divisor) >> 32
    k = f"{divisor:g}"
    seq = [f"MUFU.RCP64H R17, {k}", "MOV R16, 0x1", "MOV R14, RZ", f"MOV R15, {hi:#x}",
           "DFMA R10, R16, -R14, 1", "DFMA R10, R10, R10, R10", "DFMA R10, R16, R10, R16",
           "DFMA R16, R10, -R14, 1", "DFMA R16, R10, R16, R10", "DMUL R10, R4, R16",
           f"DFMA R14, R10, {-divisor:g}, R4", "DFMA {d}, R16, R14, R10"]
    rng = random.Random(int(divisor * 8))
    vecs = [w64(float(n)) for n in range(0, 40)] + [w64(rng.uniform(-1, 1) * 2.0 ** rng.randrange(-20, 40))
                                                    for _ in range(88)]
    got = run_pairs(backend, [(" ;; ".join(seq), None)], [_split((v,)) for v in vecs], "ddivk")
    bad = [f"{f64(a)!r} / {divisor}: got {f64(lo | hi << 32)!r}" for a, [(lo, hi)] in zip(vecs, got)
           if lo | hi << 32 != w64(f64(a) / divisor)]
    assert not bad, f"{backend.name}: {len(bad)}:\n" + "\n".join(bad[:10])

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


def test_packed_half_arithmetic_comparisons_and_packs(backend):
    """HADD2, HMUL2, HFMA2 (binary16 and bfloat16), swizzles, immediate pairs, HADD2.F32,
    F2FP packs, HSETP2 and HMNMX2: each word as numpy's float16 or exact fractions give it."""
    vecs = half_vectors()
    got = run_ops(backend, HALF_OPS, vecs, (), "half_ops")
    bad = []
    for v, row in zip(vecs, got):
        for (sass, ref), have in zip(HALF_OPS, row):
            want = ref(*v)
            if want is not None and have != want:
                bad.append(f"{sass} on {[hex(w) for w in v]}: expected {want:#x}, got {have:#x}")
    assert not bad, f"{backend.name}: {len(bad)}:\n" + "\n".join(bad[:20])


@pytest.mark.skipif(shutil.which("spirv-val") is None, reason="no spirv-val on this machine")
def test_new_float_modules_are_valid_spirv():
    """MUFU, binary64 and packed-half listings pass spirv-val (vulkan1.1)."""
    ops = [(f"MUFU.{f} {{d}}, R4", None) for f in (*MUFU_REFS, "RCP64H", "RSQ64H")]
    ops += [(s, None) for s, _ in HALF_OPS] + [(s.replace("R10", "R4"), None) for s, _ in F64_OPS]
    prep = prepare(_case(kernel(ops, 4, len(ops))))
    shader = translate_case(prep, "free", use_cache=False)[0]
    proc = subprocess.run(["spirv-val", "--target-env", "vulkan1.1", "-"], input=shader.spirv,
                          capture_output=True, check=False)
    assert proc.returncode == 0, (proc.stderr or proc.stdout).decode()[:2000]


def test_an_absolute_bound_passes_words_near_a_zero_that_ulp_cannot():
    """sin.approx near a multiple of pi: 1e-9 against 3e-8 is millions of ulp but 2^-21 apart."""
    from warpboard.harness.run import compare
    tiny, small = word32(1e-9), word32(3e-8)
    assert not compare.within(2, tiny, small)
    assert compare.within(2, tiny, small, compare.abs_tolerance("f32-ulp:2,abs:2^-21"))
    assert not compare.within(2, word32(1.0), word32(1.001), compare.abs_tolerance("f32-ulp:2,abs:2^-21"))
    assert compare.tolerance("f32-ulp:2,abs:2^-21") == 2 and compare.abs_tolerance("f32-ulp:2") == 0.0
    assert not compare.within(2, 0x7F800000, 0x7F7FFFFF, 1.0)         # infinities stay exact


def test_fmul_scales_round_the_product_then_the_scaled_value(backend):
    """FMUL.D2 / .M8 (ptxas's fold of ``(a * b) * 0.5f``): the product rounds, then the scaled
    value rounds again, which shows where the halved product is subnormal (an odd last bit is
    rounded to even) and where the doubled product overflows. Expected words by numpy float32."""
    rng = np.random.default_rng(7)
    a = np.concatenate([rng.uniform(1e-20, 9e-19, 16), rng.uniform(1e18, 3e19, 16)]).astype(np.float32)
    b = np.concatenate([rng.uniform(1e-20, 9e-19, 16), rng.uniform(1e18, 3e19, 16)]).astype(np.float32)
    words = [int(w) for pair in zip(a.view(np.uint32), b.view(np.uint32)) for w in pair]
    body = HEAD + load_inputs(2) + ["FMUL.D2 R20, R10, R11", "FMUL.M8 R21, R10, R11",
                                    "FMUL.D4 R22, R10, R11", "FMUL.M2 R23, R10, R11"] + store_outputs(4)
    run = backend.run(body, [words, [SENTINEL] * 128], name="fmul_scales")
    assert run.outcome == "ok", run.detail
    with np.errstate(over="ignore", under="ignore"):
        p = a * b
        want = np.stack([p * np.float32(0.5), p * np.float32(8), p * np.float32(0.25), p * np.float32(2)], 1)
    got = np.array(run.buffers[1], dtype=np.uint32).reshape(32, 4)
    assert (got == want.astype(np.float32).view(np.uint32)).all(), (got, want.view(np.uint32))
    # the two roundings matter somewhere: one rounding of the exact a*b/2 differs for some lane
    once = (a.astype(np.float64) * b.astype(np.float64) * 0.5).astype(np.float32)
    assert (once.view(np.uint32) != want[:, 0].astype(np.float32).view(np.uint32)).any()

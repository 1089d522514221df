"""binary32 references for the float opcode tests: exact values rounded once (numpy where it
rounds right, exact fractions where it cannot: FFMA, directed rounding, conversions), the
kernels that run a list of operations per thread, and the differences they report."""
from __future__ import annotations

import math
import random
from fractions import Fraction
from pathlib import Path

import numpy as np
from warpboard.harness.case.model import BufferSpec, Case, Param
from warpboard.translator.values import floatops

SENTINEL = 0xA5A5A5A5


NAN32 = 0x7FFFFFFF


F32_EDGES = [0x00000000, 0x80000000, 0x00000001, 0x80000001, 0x007FFFFF, 0x00800000, 0x80800000, 0x3F800000,
             0xBF800000, 0x3F800001, 0x33800000, 0x3FC00000, 0x7F7FFFFF, 0xFF7FFFFF, 0x7F800000, 0xFF800000,
             0x7FC00000, 0xFF800001, 0x3DCCCCCD, 0x4B800001]


TIES = [(0x3F800000, 0x33800000, 0), (0x3F800001, 0x33800000, 0), (0x3F800000, 0xB3800000, 0),
        (0x4B800000, 0x3F800000, 0), (0x4B800001, 0x3F800000, 0), (0x00000001, 0x3F000000, 0),
        (0x00000003, 0x3F000000, 0), (0x7F7FFFFF, 0x73800000, 0), (0x7F7FFFFF, 0x73000000, 0),
        (0x3F800001, 0x3F800001, 0xBF800002), (0x3F800001, 0x3F7FFFFF, 0xBF800000), (0x5F800000, 0x5F800000, 0xFF800000)]


# ---------------------------------------------------------------- independent references
def f32(word: int) -> np.float32:
    return np.array([word], dtype=np.uint32).view(np.float32)[0]


def word(v) -> int:
    v = np.float32(v)
    return NAN32 if np.isnan(v) else int(np.array([v], dtype=np.float32).view(np.uint32)[0])


def is_nan(w: int) -> bool:
    return (w & 0x7FFFFFFF) > 0x7F800000


def exact(w: int) -> Fraction | None:
    """A finite binary32 word's value; None for infinities and NaN."""
    v = f32(w)
    return Fraction(float(v)) if np.isfinite(v) else None


def nearest(x: Fraction) -> int:
    """The binary32 word nearest to x, ties to even (candidates around numpy's double rounding)."""
    with np.errstate(over="ignore", invalid="ignore"):
        guess = np.float32(float(x)) if abs(x) < 2 ** 129 else np.float32(math.copysign(math.inf, x))
    cands = {guess, np.nextafter(guess, np.float32(np.inf)), np.nextafter(guess, np.float32(-np.inf))}
    finite = [c for c in cands if np.isfinite(c)]
    best = min(finite, key=lambda c: (abs(Fraction(float(c)) - x), word(c) & 1))
    half_ulp_past_max = Fraction(2) ** 128 - Fraction(2) ** 103
    if abs(x) >= half_ulp_past_max:
        return 0x7F800000 | (0x80000000 if x < 0 else 0)
    return word(best) | (0x80000000 if x < 0 and Fraction(float(best)) == 0 else 0)


def directed(x: Fraction, mode: str, zero_sign: int) -> int:
    """x rounded as told: the nearest word, then a step where it lies on the wrong side."""
    if x == 0:
        return zero_sign << 31
    with np.errstate(all="ignore"):
        return _step(x, mode, f32(nearest(x)))


def _step(x: Fraction, mode: str, v: np.float32) -> int:
    value = Fraction(float(v)) if np.isfinite(v) else math.copysign(math.inf, float(v))
    if mode == "rz" and abs(value) > abs(x):
        v = np.nextafter(v, np.float32(0))
    elif mode == "rp" and value < x:
        v = np.nextafter(v, np.float32(np.inf))
    elif mode == "rm" and value > x:
        v = np.nextafter(v, np.float32(-np.inf))
    return word(v)


def ref_arith(op: str, mode: str, a: int, b: int, c: int = 0) -> int:
    """FADD/FMUL/FFMA of binary32 words, rounded as told, NaN canonical."""
    with np.errstate(all="ignore"):
        if op == "add":
            fast = np.float32(f32(a) + f32(b))
        elif op == "mul":
            fast = np.float32(f32(a) * f32(b))
        else:
            fast = np.float32(np.float64(f32(a)) * np.float64(f32(b)) + np.float64(f32(c)))
    terms = [exact(w) for w in ((a, b) if op != "fma" else (a, b, c))]
    if np.isnan(fast) or None in terms:      # NaN, or an infinite operand: numpy's word is exact
        return word(fast)
    if op == "add":
        x, signs = terms[0] + terms[1], (a >> 31, b >> 31)
    elif op == "mul":
        x, signs = terms[0] * terms[1], ((a ^ b) >> 31,) * 2
    else:
        x, signs = terms[0] * terms[1] + terms[2], ((a ^ b) >> 31, c >> 31)
    zero_sign = (signs[0] | signs[1]) if mode == "rm" else (signs[0] & signs[1])
    if op == "mul":
        zero_sign = signs[0]
    return directed(x, mode, zero_sign)


def ftz(w: int) -> int:
    return w & 0x80000000 if w & 0x7F800000 == 0 else w


def sat(w: int) -> int:
    v = f32(w)
    if np.isnan(v) or v <= 0:
        return 0
    return 0x3F800000 if v >= 1 else w


TESTS = {"EQ": lambda a, b: a == b, "NE": lambda a, b: a < b or a > b, "LT": lambda a, b: a < b,
         "LE": lambda a, b: a <= b, "GT": lambda a, b: a > b, "GE": lambda a, b: a >= b,
         "NUM": lambda a, b: not (math.isnan(a) or math.isnan(b)), "NAN": lambda a, b: math.isnan(a) or math.isnan(b)}


def ref_test(test: str, a: int, b: int) -> bool:
    fa, fb = float(f32(a)), float(f32(b))
    if test in TESTS:
        return TESTS[test](fa, fb)
    return math.isnan(fa) or math.isnan(fb) or TESTS[test[:2]](fa, fb)


def ref_minmax(is_min: bool, a: int, b: int) -> int:
    if is_nan(a) and is_nan(b):
        return NAN32
    if is_nan(a) or is_nan(b):
        return b if is_nan(a) else a
    key = {w: (float(f32(w)), -(w >> 31)) for w in (a, b)}        # -0 below +0
    return (min if is_min else max)((a, b), key=lambda w: key[w])


# ---------------------------------------------------------------- what each thread runs
def _arith(op, mode, sass, fix=lambda a, b, c: (a, b, c), post=lambda w: w):
    return sass, lambda a, b, c: post(ref_arith(op, mode, *fix(a, b, c)))


OPS = [
    *(_arith("add", m, f"FADD{'.' + m.upper() if m != 'rn' else ''} {{d}}, R4, R5") for m in floatops.ROUNDINGS),
    *(_arith("mul", m, f"FMUL{'.' + m.upper() if m != 'rn' else ''} {{d}}, R4, R5") for m in floatops.ROUNDINGS),
    *(_arith("fma", m, f"FFMA{'.' + m.upper() if m != 'rn' else ''} {{d}}, R4, R5, R6") for m in floatops.ROUNDINGS),
    _arith("add", "rn", "FADD.FTZ {d}, R4, -R5", lambda a, b, c: (ftz(a), ftz(b) ^ 0x80000000, c), ftz),
    _arith("mul", "rn", "FMUL.FTZ.SAT {d}, |R4|, R5", lambda a, b, c: (ftz(a) & 0x7FFFFFFF, ftz(b), c),
           lambda w: sat(ftz(w))),
    _arith("fma", "rn", "FFMA {d}, -|R4|, R5, -R6", lambda a, b, c: (a | 0x80000000, b, c ^ 0x80000000)),
    _arith("fma", "rn", "FFMA.SAT {d}, R4, 0.5, -1", lambda a, b, c: (a, 0x3F000000, 0xBF800000), sat),
    _arith("mul", "rn", "FMUL {d}, R5, 16777216", lambda a, b, c: (b, 0x4B800000, c)),
    ("FMNMX {d}, R4, R5, PT", lambda a, b, c: ref_minmax(True, a, b)),
    ("FMNMX {d}, R4, R5, !PT", lambda a, b, c: ref_minmax(False, a, b)),
    ("FMNMX {d}, -R4, |R5|, !PT", lambda a, b, c: ref_minmax(False, a ^ 0x80000000, b & 0x7FFFFFFF)),
    ("FSET.BF.GTU.AND {d}, R4, R5, PT", lambda a, b, c: 0x3F800000 if ref_test("GTU", a, b) else 0),
    ("FSET.LE.AND {d}, R4, R6, PT", lambda a, b, c: 0xFFFFFFFF if ref_test("LE", a, c) else 0),
]


def vectors() -> list[tuple[int, int, int]]:
    rng = random.Random(15)
    pairs = [(a, b, F32_EDGES[(i * 7 + j) % len(F32_EDGES)]) for i, a in enumerate(F32_EDGES)
             for j, b in enumerate(F32_EDGES)]
    rand = [tuple(rng.getrandbits(32) for _ in range(3)) for _ in range(40)]
    near = [tuple(0x3F800000 + rng.randrange(-4, 4) ^ rng.getrandbits(1) << 31 for _ in range(3)) for _ in range(20)]
    return pairs + TIES + rand + near


def kernel(ops, n_in: int, n_out: int, loads=(), pairs: bool = False) -> list[str]:
    """The listing every thread runs: its ``n_in`` words into R4.., every op of ``ops`` into
    its own destination (a pair from R20 when ``pairs``, whose second word starts as 0x5eed),
    then its ``n_out`` result words stored."""
    body = ["S2R R0, SR_TID.X", f"IMAD.WIDE.U32 R2, R0, {4 * n_in:#x}, c[0x0][0x160]",
            f"IMAD.WIDE.U32 R8, R0, {4 * n_out:#x}, c[0x0][0x168]"]
    body += [f"LDG.E R{4 + k}, [R2.64+{4 * k:#x}]" for k in range(n_in)] + list(loads)
    if pairs:
        body += [f"MOV R{21 + 2 * k}, 0x5eed" for k in range(len(ops))]
    for k, (sass, _) in enumerate(ops):
        body += sass.format(d=f"R{20 + (2 if pairs else 1) * k}").split(" ;; ")
    return body + [f"STG.E [R8.64+{4 * k:#x}], R{20 + k}" for k in range(n_out)] + ["EXIT"]


def run_ops(backend, ops, inputs, loads, name):
    """Each thread t takes its words ``inputs[t]`` into R4.., runs every op of ``ops`` into
    its own register and stores them all; returns (results per thread, the listing's ops)."""
    threads = -(-len(inputs) // 32) * 32
    n_in, n_out = len(inputs[0]), len(ops)
    body = kernel(ops, n_in, n_out, loads)
    flat = [w for v in inputs for w in v] + [0] * ((threads - len(inputs)) * n_in)
    run = backend.run(body, [flat, [SENTINEL] * (threads * n_out)], threads=threads, name=name)
    assert run.outcome == "ok", f"{backend.name}: {run.outcome}: {run.detail}"
    return [run.buffers[1][t * n_out:(t + 1) * n_out] for t in range(len(inputs))]


def _hex(v) -> str:
    return str([hex(w) for w in v]) if isinstance(v, (tuple, list)) else hex(v)


def diffs_of(backend, ops, inputs, got, expect):
    out = []
    for t, v in enumerate(inputs):
        for k, (sass, _) in enumerate(ops):
            want = expect(t, k, v)
            if got[t][k] != want:
                out.append(f"{sass.format(d='Rd')} on {_hex(v)}: expected {_hex(want)}, got {_hex(got[t][k])}")
    return f"{backend.name}: {len(out)} differences:\n" + "\n".join(out[:30]) if out else ""


# ---------------------------------------------------------------- conversions
def ref_to_int(w: int, fmt: str, width: int, signed: bool, mode: str, ntz: bool = False) -> int:
    """F2I: a NaN gives 0 with .NTZ (and for 8 and 16 bits), else 1 << (width - 1), as the chip."""
    v = f32(w) if fmt == "f32" else np.array([w], dtype=np.uint64).view(np.float64)[0]
    if np.isnan(v):
        return 0 if ntz or width < 32 else 1 << width - 1
    lo, hi = (-(1 << width - 1), (1 << width - 1) - 1) if signed else (0, (1 << width) - 1)
    if np.isinf(v):
        n = hi if v > 0 else lo
    else:
        x = Fraction(float(v))
        n = {"rz": math.trunc, "rm": math.floor, "rp": math.ceil, "rn": round}[mode](x)
    return max(lo, min(hi, n)) & (1 << width) - 1


def as_int(lo: int, hi: int, width: int, signed: bool) -> int:
    n = (lo | hi << 32) & (1 << width) - 1
    return n - (1 << width) if signed and n >> width - 1 else n


def f64_of(lo: int, hi: int) -> np.float64:
    return np.array([lo | hi << 32], dtype=np.uint64).view(np.float64)[0]


def f64_word(v) -> int:
    return 0x7FFFFFFFFFFFFFFF if np.isnan(v) else int(np.array([v], dtype=np.float64).view(np.uint64)[0])


def ref_frnd(w: int, mode: str) -> int:
    v = f32(w)
    return NAN32 if np.isnan(v) else word({"rz": np.trunc, "rm": np.floor, "rp": np.ceil, "rn": np.rint}[mode](v))


def _pair(fn):
    """A 64-bit reference split into the (lo, hi) words a register pair holds."""
    return lambda *v: (fn(*v) & 0xFFFFFFFF, fn(*v) >> 32)


MODE_OF = {"rn": "", "rz": ".RZ", "rm": ".RM", "rp": ".RP"}


ROUND_OF = {"rn": "", "rz": ".TRUNC", "rm": ".FLOOR", "rp": ".CEIL"}


CONVERSIONS = [  # (instruction, reference on (lo, hi, f32 word, f16 word) -> word or (lo, hi))
    *((f"I2F.{t}{MODE_OF[m]} {{d}}, R4", (lambda t, m: lambda lo, hi, f, h: directed(
        Fraction(as_int(lo, 0, int(t[1:]), t[0] == "S")), m, 0))(t, m))
      for t in ("U8", "S8", "U16", "S16", "U32", "S32") for m in floatops.ROUNDINGS),
    *((f"I2F.{t}{MODE_OF[m]} {{d}}, R4", (lambda t, m: lambda lo, hi, f, h: directed(
        Fraction(as_int(lo, hi, 64, t == "S64")), m, 0))(t, m)) for t in ("S64", "U64") for m in ("rn", "rz")),
    ("I2FP.F32.S32 {d}, R4", lambda lo, hi, f, h: word(np.float32(as_int(lo, 0, 32, True)))),
    ("I2F.F64.S64 {d}, R4", _pair(lambda lo, hi, f, h: f64_word(float(as_int(lo, hi, 64, True))))),
    ("I2F.F64.U32 {d}, R4", _pair(lambda lo, hi, f, h: f64_word(float(lo)))),
    ("I2F.F16.S16 {d}, R4", lambda lo, hi, f, h: int(np.array([np.float16(as_int(lo, 0, 16, True))]).view(np.uint16)[0])),
    *((f"F2I.{t}{ROUND_OF[m]} {{d}}, R6", (lambda t, m: lambda lo, hi, f, h: ref_to_int(
        f, "f32", int(t[1:]), t[0] == "S", m))(t, m))
      for t in ("S32", "U32", "S16", "U8") for m in floatops.ROUNDINGS),
    ("F2I.FTZ.U32.TRUNC.NTZ {d}, R6", lambda lo, hi, f, h: ref_to_int(ftz(f), "f32", 32, False, "rz", ntz=True)),
    ("F2I.S64.TRUNC {d}, R6", _pair(lambda lo, hi, f, h: ref_to_int(f, "f32", 64, True, "rz"))),
    ("F2I.U64.F64.FLOOR {d}, R4", _pair(lambda lo, hi, f, h: ref_to_int(lo | hi << 32, "f64", 64, False, "rm"))),
    ("F2I.F64.CEIL {d}, R4", lambda lo, hi, f, h: ref_to_int(lo | hi << 32, "f64", 32, True, "rp")),
    ("F2F.F64.F32 {d}, R6", _pair(lambda lo, hi, f, h: (
        (f & 0x80000000) << 32 | 0x7FF8000000000000 | (f & 0x7FFFFF) << 29 if is_nan(f)
        else f64_word(np.float64(f32(f)))))),
    *((f"F2F.F32.F64{MODE_OF[m]} {{d}}, R4", (lambda m: lambda lo, hi, f, h: (
        (hi & 0x80000000 | 0x7FC00000 | (hi & 0xFFFFF) << 3 | lo >> 29) if np.isnan(f64_of(lo, hi))
        else word(f64_of(lo, hi)) if np.isinf(f64_of(lo, hi))
        else directed(Fraction(float(f64_of(lo, hi))), m, hi >> 31)))(m)) for m in floatops.ROUNDINGS),
    ("F2F.F16.F32 {d}, R6", lambda lo, hi, f, h: 0x7FFF if np.isnan(f32(f)) else
     int(np.array([np.float16(f32(f))]).view(np.uint16)[0])),
    ("F2F.F32.F16 {d}, R7", lambda lo, hi, f, h: word(np.array([h], dtype=np.uint16).view(np.float16)[0])),
    *((f"FRND{ROUND_OF[m]} {{d}}, R6", (lambda m: lambda lo, hi, f, h: ref_frnd(f, m))(m)) for m in floatops.ROUNDINGS),
]


INT_EDGES = [0, 1, 0xFFFFFFFF, 0x7FFFFFFF, 0x80000000, 0x01000001, 0x00FF80FF, 0x8001, 0x7F, 0x80, 0xFEFFFFFF,
             0x7FFF, 0x12345678]


F64_EDGES = [0x0, 0x8000000000000000, 0x1, 0x000FFFFFFFFFFFFF, 0x3FF0000000000000, 0x3FF0000010000000,
             0x3FF0000018000000, 0x3FF0000008000000, 0x47EFFFFFE0000000, 0x47EFFFFFF0000000, 0x7FF0000000000000,
             0xFFF0000000000000, 0x7FF8000000000001, 0x3690000000000000, 0x36A0000000000001, 0x41DFFFFFFFC00000,
             0xC1E0000000000000, 0x43E0000000000000, 0x4330000000000001, 0xC3E0000000000000, 0x7FFFFFFFFFFFFFFF]


F32_MORE = [0x40200000, 0xC0200000, 0x3F000000, 0xBF000000, 0x4F000000, 0xCF000000, 0x4F800000, 0x4F7FFFFF,
            0xDF000000, 0x5F000000, 0x47000000, 0xC7000080, 0x477FFFFF, 0x33000001]


F16_EDGES = [0x0000, 0x8000, 0x0001, 0x03FF, 0x0400, 0x3C00, 0x7BFF, 0x7C00, 0xFC00, 0x7E01, 0xC248]


def conversion_vectors() -> list[tuple[int, int, int, int]]:
    rng = random.Random(16)
    wide = F64_EDGES + [n | rng.getrandbits(32) << 32 for n in INT_EDGES] + [rng.getrandbits(64) for _ in range(10)]
    floats = F32_EDGES + F32_MORE
    out = [(w & 0xFFFFFFFF, w >> 32, floats[k % len(floats)], F16_EDGES[k % len(F16_EDGES)])
           for k, w in enumerate(wide)]
    out += [(n, 0, f, F16_EDGES[k % len(F16_EDGES)]) for k, (n, f) in enumerate(zip(INT_EDGES * 3, floats))]
    return out


CHUNK = 16       # instructions per kernel: lavapipe's compile time grows faster than the code


def expect_pair(r):
    """A reference's result as the pair the thread stored: a single word leaves the marker."""
    return r if isinstance(r, tuple) else (r, 0x5EED)


def run_ops_pairs(backend, ops, inputs, name):
    """As run_ops, with every destination a pair Rk, Rk+1 (Rk+1 preset to a marker that
    single-word results leave), and the result of each op as (lo, hi or None)."""
    threads, n_in, n_out = -(-len(inputs) // 32) * 32, len(inputs[0]), 2 * len(ops)
    body = kernel(ops, n_in, n_out, pairs=True)
    flat = [w for v in inputs for w in v] + [0] * ((threads - len(inputs)) * n_in)
    run = backend.run(body, [flat, [SENTINEL] * (threads * n_out)], threads=threads, name=name)
    assert run.outcome == "ok", f"{backend.name}: {run.outcome}: {run.detail}"
    words = run.buffers[1]
    return [[(words[t * n_out + 2 * k], words[t * n_out + 2 * k + 1]) for k in range(len(ops))]
            for t in range(len(inputs))]


# ---------------------------------------------------------------- the soft float off the GPU
def random_words(rng, fmt) -> list[int]:
    """Words of ``fmt`` biased toward the edges: specials, denormals, near 1, near ties."""
    f = floatops.FORMATS[fmt]
    edges = [0, f.sign_bit, 1, f.sign_bit | 1, (1 << f.mbits) - 1, 1 << f.mbits, f.inf - 1, f.inf,
             f.sign_bit | f.inf, f.inf | 1, f.bias << f.mbits, (f.bias << f.mbits) + 1]
    out = []
    for _ in range(400):
        kind = rng.random()
        if kind < 0.3:
            w = rng.choice(edges)
        elif kind < 0.5:
            w = rng.getrandbits(f.mbits + 1)                                # denormals, small normals
        elif kind < 0.7:
            w = (f.bias + rng.randrange(-3, 3) << f.mbits) + rng.randrange(-2, 3)   # near 1
        else:
            w = rng.getrandbits(f.width)
        out.append((w ^ rng.getrandbits(1) * f.sign_bit) & f.mask)
    return out


# ---------------------------------------------------------------- valid SPIR-V
def float_case(lines: list[str], threads: int = 64) -> Case:
    text = "".join(f"        /*{16 * k:04x}*/                   {line} ;\n" for k, line in enumerate(lines))
    specs = tuple(BufferSpec(n, 256 * threads, (0,) * 256 * threads, None) for n in ("in", "out"))
    return Case(id="semantics/float_valid", path=Path("float_valid.sass"), name="float_valid", summary="", tags=(),
                kernel=None, listing_text=text, listing_path=Path("float_valid.sass"), listing_line=1, source=None,
                grid=(1, 1, 1), block=(threads, 1, 1), shared_bytes=0, step_budget=None, buffers=specs,
                params=tuple(Param("buffer", s.name) for s in specs), provenance={})

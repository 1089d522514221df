"""Write the float cases of this directory from kernels.cu, with ``warpboard new-case``.

    .venv/bin/python cases/float/make_cases.py [KERNEL...]

Every case runs one block of 64 threads. Its inputs open with hand-picked bit patterns (signed
zeros, denormals, the extremes, infinities, quiet and signalling NaNs, rounding ties, the
limits of the integer conversions) and fill the rest with fixed pseudo-random values. Where the
result of a MUFU approximation reaches an output buffer, that buffer declares an ULP tolerance
(``compare = "f32-ulp:N"``); everything else compares exactly. The expected words are left
pending, for ``warpboard record-truth`` on an NVIDIA GPU.
"""
from __future__ import annotations

import functools
import math
import random
import re
import struct
import sys
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))

from warpboard.authoring import newcase  # noqa: E402
from warpboard.authoring.newcase import BufferArg, new_case  # noqa: E402

# one compile of kernels.cu serves every case
newcase.compile_listing = functools.lru_cache(newcase.compile_listing)

THREADS = 64

F32_EDGES = [
    0x00000000, 0x80000000, 0x00000001, 0x80000001, 0x007FFFFF, 0x807FFFFF, 0x00400000,
    0x00800000, 0x80800000, 0x7F7FFFFF, 0xFF7FFFFF, 0x7F800000, 0xFF800000, 0x7FC00000,
    0xFFC00000, 0x7F800001, 0x7FBFFFFF, 0x3F800000, 0xBF800000, 0x3F000000, 0xBF000000,
    0x3FC00000, 0x40200000, 0xC0200000, 0x40400000, 0x3EAAAAAB, 0x4B000001, 0x4B7FFFFF,
    0x4B800001, 0x4EFFFFFF, 0x4F000000, 0xCF000000, 0xCF000001, 0x4F800000, 0x5F000000,
    0xDF000000, 0x33800000, 0x3F7FFFFF, 0x3F800001, 0x42FE0000, 0x3B808081, 0x3EFFFFFF,
    0x3F400000, 0x40490FDB, 0x49742400,
]
# (a, b, c) triples: rounding ties of add and multiply, fused versus unfused, underflow to
# denormals, overflow, cancellation
F32_TRIPLES = [
    (0x3F800000, 0x33800000, 0x33800000),   # 1 + 2^-24: a tie, to even
    (0x3F800001, 0x33800000, 0xB3800000),   # (1 + ulp) + half an ulp: a tie, up to even
    (0x3F800001, 0x3F7FFFFF, 0xBF800000),   # fma(1+u, 1-u/2, -1) is not mul-then-add
    (0x7F7FFFFF, 0x7F7FFFFF, 0xFF7FFFFF),   # overflow
    (0x1F800000, 0x1F800000, 0x00000000),   # 2^-64 * 2^-64 = 2^-128, a denormal
    (0x00000003, 0x3F000000, 0x80000000),   # 1.5 denormal ulps: a tie
    (0x00800000, 0x80000001, 0x00000001),   # min normal - min denormal
    (0x3F800000, 0xBF800000, 0x80000000),   # x - x = +0, -0 + -0
    (0x4B800001, 0x3F800000, 0xCB800000),   # 2^24 + 2 + 1: a tie at ulp 2
    (0x0D800000, 0x2B800000, 0x3F800000),   # 2^-100 * 2^-40: below the denormals
    (0x3FFFFFFF, 0x3FFFFFFF, 0xC0800000),   # (2-u)^2 - 4
    (0x7F800000, 0x00000000, 0x3F800000),   # inf * 0
]
I32_EDGES = [
    0, 1, 0xFFFFFFFF, 0x7FFFFFFF, 0x80000000, 0x80000001, 0x01000000, 0x01000001, 0x01000002,
    0x01000003, 0xFEFFFFFF, 0x02000003, 0x7FFFFF80, 0x7FFFFFC0, 0x7FFFFFBF, 0xFFFFFF81,
    0x00BC614E, 0xFFFFFFFE, 0x40000001, 0xC0000001, 100, 255, 256, 0x00FFFFFF, 0x80000040,
]
I64_EDGES = [
    0, 1, 0xFFFFFFFFFFFFFFFF, 0x1000001, 0x20000000000001, 0x7FFFFFFFFFFFFFFF,
    0x8000000000000000, 0x4000004000000000, 0x4000004000000001, 0x4000008000000000,
    0x8000008000000000, 0xFFFFFFFF00000001, 0x00000B3A73CE2FF2, 0xFFFFF4C58C31D00E,
    0x0000000080000000, 0xFFFFFFFF7FFFFFFF,
]
F64_EDGES = [
    0x0000000000000000, 0x8000000000000000, 0x0000000000000001, 0x000FFFFFFFFFFFFF,
    0x0010000000000000, 0x7FEFFFFFFFFFFFFF, 0x7FF0000000000000, 0xFFF0000000000000,
    0x7FF8000000000000, 0xFFF8000000000001, 0x7FF0000000000001, 0x3FF0000000000000,
    0xBFF0000000000000, 0x3FE0000000000000, 0x3FF8000000000000, 0x4004000000000000,
    0xC004000000000000, 0x3FD5555555555555, 0x41DFFFFFFFE00000, 0x41E0000000000000,
    0xC1E0000000200000, 0xC1E0000000100000, 0x41EFFFFFFFF00000, 0x41F0000000000000,
    0x7E37E43C8800759C, 0x01A56E1FC2F8F359, 0x3FF0000000000001, 0x3FF0000010000000,
    0x3FF0000030000000, 0x47EFFFFFF0000000, 0x3690000000000000, 0x3690000000000001,
    0xBFB999999999999A, 0x419D6F3454A00000,
]
F16_EDGES = [
    0x0000, 0x8000, 0x0001, 0x8001, 0x03FF, 0x0400, 0x7BFF, 0xFBFF, 0x7C00, 0xFC00, 0x7E00,
    0xFE00, 0x7C01, 0x3C00, 0xBC00, 0x3800, 0x3E00, 0x4100, 0xC100, 0x3555, 0x3C01, 0x3BFF,
    0x1400, 0x6800, 0x6801, 0x5BFF, 0x0200,
]
# rounding ties and limits of F32 -> F16 and F32 -> BF16
F32_NARROWING = [
    0x3F801000, 0x3F803000, 0x477FF000, 0x477FEFFF, 0x33000000, 0x33000001, 0x33800000,
    0x387FC000, 0x3F808000, 0x3F818000, 0x3F80C000, 0x7F7F8000, 0x7F7FFFFF, 0x7F800001,
    0xFFC00001, 0x80008000, 0x00018000, 0xC77FF000,
]


def f32_bits(x: float) -> int:
    return struct.unpack("<I", struct.pack("<f", x))[0]


def random_f32(rng: random.Random, lo_exp: int = 100, hi_exp: int = 154) -> int:
    """A float of random sign and mantissa with a biased exponent in lo_exp..hi_exp."""
    return rng.getrandbits(1) << 31 | rng.randint(lo_exp, hi_exp) << 23 | rng.getrandbits(23)


def fill(head: list[int], n: int, make) -> list[int]:
    """``head`` then values from ``make()`` up to ``n`` words."""
    return (head + [make() for _ in range(n)])[:n]


def rotated(values: list[int], by: int) -> list[int]:
    return values[by:] + values[:by]


def f32_operand(k: int, seed: int) -> list[int]:
    """Operand k (0, 1, 2) of a float kernel: the ties, then the edges shifted by k (so that
    lane i pairs edge i with edge i + k), then random floats."""
    rng = random.Random(seed)
    head = [t[k] for t in F32_TRIPLES] + rotated(F32_EDGES, 5 * k)
    return fill(head, THREADS, lambda: random_f32(rng) if rng.random() < 0.8 else rng.getrandbits(32))


def i32_input(seed: int) -> list[int]:
    rng = random.Random(seed)
    return fill(I32_EDGES, THREADS, lambda: rng.getrandbits(32) >> rng.randint(0, 31))


def split64(values: list[int]) -> list[int]:
    return [w for v in values for w in (v & 0xFFFFFFFF, v >> 32)]


def i64_input(seed: int) -> list[int]:
    rng = random.Random(seed)
    return split64(fill(I64_EDGES, THREADS, lambda: rng.getrandbits(64) >> rng.randint(0, 63)))


def f64_input(k: int, seed: int) -> list[int]:
    rng = random.Random(seed)
    make = lambda: rng.getrandbits(1) << 63 | rng.randint(900, 1150) << 52 | rng.getrandbits(52)  # noqa: E731
    return split64(fill(rotated(F64_EDGES, 3 * k), THREADS, make))


def f16x2_input(k: int, seed: int) -> list[int]:
    rng = random.Random(seed)
    n = len(F16_EDGES)
    head = [F16_EDGES[(i + 2 * k) % n] | F16_EDGES[(i + 7 + k) % n] << 16 for i in range(n)]
    half = lambda: rng.getrandbits(1) << 15 | rng.randint(5, 25) << 10 | rng.getrandbits(10)  # noqa: E731
    return fill(head, THREADS, lambda: half() | half() << 16)


def narrowing_input(k: int, seed: int) -> list[int]:
    rng = random.Random(seed)
    return fill(rotated(F32_NARROWING, k) + rotated(F32_EDGES, 3 * k), THREADS, lambda: random_f32(rng))


def small_dyadic(seed: int) -> list[int]:
    """Multiples of 1/4 below 64 (sums exact in any order), two denormals and a -0."""
    rng = random.Random(seed)
    return fill([0x80000000, 0x00000001, 0x807FFFFF],
                THREADS, lambda: f32_bits(rng.randint(-255, 255) / 4))


def mufu_input(seed: int, keep) -> list[int]:
    """The float edges and random floats for which ``keep(x)`` holds (specials always kept)."""
    rng = random.Random(seed)
    def ok(bits: int) -> bool:
        x = struct.unpack("<f", struct.pack("<I", bits))[0]
        return not math.isfinite(x) or x == 0 or keep(x)
    head = [b for b in F32_EDGES if ok(b)]
    def make():
        while True:
            b = random_f32(rng, 110, 140)
            if ok(b):
                return b
    return fill(head, THREADS, make)


def softmax_input(seed: int) -> list[int]:
    """Finite floats below 80 in magnitude, with signed zeros, denormals and a -inf (which
    contributes exp(-inf) = 0) in the first warp; random ones in the second."""
    rng = random.Random(seed)
    head = [0x00000000, 0x80000000, 0x00000001, 0x807FFFFF, 0xFF800000, 0x3F800000, 0xBF800000,
            0x42A00000, 0xC2A00000, 0x3F800001, 0x3EAAAAAB, 0x40490FDB]
    return fill(head, THREADS, lambda: random_f32(rng, 110, 133))


def far_from_sin_cos_zeros(x: float) -> bool:
    """|sin x| and |cos x| at least 1/4: an absolute error of MUFU.SIN/COS stays a few ULPs."""
    return abs(x) < 1e4 and min(abs(math.sin(x)), abs(math.cos(x))) >= 0.25


def far_from_log_zero(x: float) -> bool:
    """Outside [1/2, 2]: log2 stays away from 0, where an absolute error is many ULPs."""
    return not 0.5 <= abs(x) <= 2


@dataclass
class Spec:
    kernel: str
    summary: str
    tags: list[str]
    inputs: list[tuple[str, list[int]]]
    out_words: int                  # words of the output buffer "out" (0: none, y is in/out)
    params: list[str] | None = None
    ulp: int | None = None          # MUFU tolerance of "out"


def F(k: int, seed: int) -> list[int]:
    return f32_operand(k, seed)


SPECS = [
    Spec("f32_saxpy", "saxpy y = a*x + y with a = 1/3: FMUL/FADD or FFMA (fused, one rounding).",
         ["float", "fma"], [("x", F(0, 1)), ("y", F(1, 2))], 0,
         ["u32:0x3eaaaaab", "buffer:x", "buffer:y"]),
    Spec("f32_add_sub_mul", "FADD, FADD with a negated operand and FMUL on edge pairs.",
         ["float"], [("a", F(0, 3)), ("b", F(1, 4))], 3 * THREADS),
    Spec("f32_fma", "fmaf: one rounding (fused), with overflow, underflow and cancellation.",
         ["float", "fma"], [("a", F(0, 5)), ("b", F(1, 6)), ("c", F(2, 7))], THREADS),
    Spec("f32_mul_then_add", "__fmul_rn then __fadd_rn: two roundings, not contracted to FFMA.",
         ["float"], [("a", F(0, 8)), ("b", F(1, 9)), ("c", F(2, 10))], THREADS),
    Spec("f32_horner", "A degree-5 polynomial by Horner's rule: a chain of FFMA.",
         ["float", "fma"], [("x", F(0, 11))], THREADS),
    Spec("f32_add_rounding", "__fadd_rn/_rz/_ru/_rd: FADD with each rounding mode.",
         ["float", "rounding"], [("a", F(0, 12)), ("b", F(1, 13))], 4 * THREADS),
    Spec("f32_mul_rounding", "__fmul_rn/_rz/_ru/_rd: FMUL with each rounding mode.",
         ["float", "rounding"], [("a", F(0, 14)), ("b", F(1, 15))], 4 * THREADS),
    Spec("f32_fma_rounding", "__fmaf_rn/_rz/_ru/_rd: FFMA with each rounding mode.",
         ["float", "fma", "rounding"], [("a", F(0, 16)), ("b", F(1, 17)), ("c", F(2, 18))], 4 * THREADS),
    Spec("f32_ftz", "add/mul/fma .ftz: denormal inputs and results flushed to signed zero.",
         ["float", "ftz"], [("a", F(0, 19)), ("b", F(1, 20))], 3 * THREADS),
    Spec("f32_saturate", "__saturatef, add.sat and fma.sat: results clamped to [0, 1], NaN to 0.",
         ["float", "saturate"], [("a", F(0, 21)), ("b", F(1, 22))], 3 * THREADS),
    Spec("f32_abs_neg", "Absolute-value and negated operands of FADD/FMUL, copysignf.",
         ["float"], [("a", F(0, 23)), ("b", F(1, 24))], 4 * THREADS),
    Spec("f32_lerp", "Linear interpolation a + t*(b - a) as FADD then FFMA.",
         ["float", "fma"], [("a", F(0, 25)), ("b", F(1, 26)), ("t", F(2, 27))], THREADS),
    Spec("f32_compare", "Ordered and unordered comparisons (FSETP) packed into bits, with NaNs.",
         ["float", "compare"], [("a", F(0, 28)), ("b", F(1, 29))], THREADS),
    Spec("f32_min_max", "fminf/fmaxf (FMNMX): a NaN operand gives the other, -0 against +0.",
         ["float", "min-max"], [("a", F(0, 30)), ("b", F(1, 31))], 2 * THREADS),
    Spec("f32_min_max_nan", "min.NaN/max.NaN (FMNMX.NAN): a NaN operand gives the canonical NaN.",
         ["float", "min-max"], [("a", F(0, 32)), ("b", F(1, 33))], 2 * THREADS),
    Spec("f32_clamp", "fminf(fmaxf(x, -1.5), 2.5): clamping with immediate bounds.",
         ["float", "min-max"], [("x", F(0, 34))], THREADS),
    Spec("f32_select", "x > b ? x : c: FSETP and FSEL, NaN compares false.",
         ["float", "compare"], [("a", F(0, 35)), ("b", F(1, 36)), ("c", F(2, 37))], THREADS),
    Spec("f32_classify", "isnan, isinf, isfinite, signbit and is-denormal packed into bits.",
         ["float", "compare"], [("a", F(0, 38))], THREADS),
    Spec("f32_to_int", "F2I to s32/u32: truncate, nearest-even, floor, ceil; NaN and out of range.",
         ["float", "conversion"], [("a", F(0, 39))], 6 * THREADS),
    Spec("int_to_f32", "I2F/I2FP from s32/u32 with each rounding mode; ties above 2^24.",
         ["float", "conversion"], [("a", i32_input(40))], 6 * THREADS),
    Spec("f32_to_i64", "F2I to s64/u64: truncate, nearest-even, floor; NaN and out of range.",
         ["float", "conversion"], [("a", F(0, 41))], 6 * THREADS),
    Spec("i64_to_f32", "I2F from s64/u64, nearest-even, toward zero, up; ties between floats.",
         ["float", "conversion"], [("a", i64_input(42))], 3 * THREADS),
    Spec("f32_round", "rintf, floorf, ceilf, truncf (FRND) and roundf (half away from zero).",
         ["float", "rounding"], [("a", F(0, 43))], 5 * THREADS),
    Spec("f32_to_unorm8", "__float2uint_rn(__saturatef(x) * 255): a float to an 8-bit channel.",
         ["float", "conversion", "saturate"], [("a", F(0, 44))], THREADS),
    Spec("f32_f64_round_trip", "F2F.F64.F32, DMUL, then F2F.F32.F64 nearest, toward zero and up.",
         ["float", "fp64", "conversion"], [("a", F(0, 45))], 3 * THREADS),
    Spec("f64_axpy", "daxpy y = a*x + y with a = 1/3 in double: DFMA.",
         ["fp64", "fma"], [("x", f64_input(0, 46)), ("y", f64_input(1, 47))], 0,
         ["u64:0x3fd5555555555555", "buffer:x", "buffer:y"]),
    Spec("f64_add_mul", "DADD, DMUL and __dadd_rz on double edges.",
         ["fp64"], [("a", f64_input(0, 48)), ("b", f64_input(1, 49))], 6 * THREADS),
    Spec("f64_compare_min_max", "fmin/fmax of doubles (DSETP.MIN/MAX) and a select on x < y.",
         ["fp64", "min-max", "compare"], [("a", f64_input(0, 50)), ("b", f64_input(2, 51))], 6 * THREADS),
    Spec("f64_to_int", "F2I.F64 to s32/u32: truncate, nearest-even, floor, ceil; out of range.",
         ["fp64", "conversion"], [("a", f64_input(0, 52))], 4 * THREADS),
    Spec("int_to_f64", "I2F.F64 from s32 and u32, then DMUL by 0.5.",
         ["fp64", "conversion"], [("a", i32_input(53))], 4 * THREADS),
    Spec("f64_horner", "A cubic in double by Horner's rule: a chain of DFMA.",
         ["fp64", "fma"], [("x", f64_input(0, 54))], 2 * THREADS),
    Spec("f64_div", "IEEE double division: MUFU.RCP64H, Newton steps in DFMA, the slow path.",
         ["fp64", "division"], [("a", f64_input(0, 55)), ("b", f64_input(1, 56))], 2 * THREADS),
    Spec("f32_div", "IEEE float division (correctly rounded): MUFU.RCP, FFMA steps, FCHK, the "
         "slow path for denormals and extremes.",
         ["float", "division"], [("a", F(0, 57)), ("b", F(1, 58))], THREADS),
    Spec("f32_sqrt", "IEEE sqrtf (correctly rounded): MUFU.RSQ, FFMA fix-up, the slow path.",
         ["float", "sqrt"], [("a", F(0, 59))], THREADS),
    Spec("f32_rcp_rn", "__frcp_rn (correctly rounded): MUFU.RCP, FFMA steps, the slow path.",
         ["float", "division"], [("a", F(0, 60))], THREADS),
    Spec("f32_fast_div", "__fdividef: MUFU.RCP then FMUL, an approximation.",
         ["float", "mufu", "division"], [("a", F(0, 61)), ("b", F(1, 62))], THREADS, ulp=2),
    Spec("f32_rsqrt", "rsqrtf: MUFU.RSQ, an approximation.",
         ["float", "mufu"], [("a", F(0, 63))], THREADS, ulp=2),
    Spec("f32_exp2_log2", "exp2f (MUFU.EX2 with denormal scaling) and __log2f (MUFU.LG2); "
         "inputs keep log2 away from 0.",
         ["float", "mufu"], [("a", mufu_input(64, far_from_log_zero))], 2 * THREADS, ulp=2),
    Spec("f32_fast_exp", "__expf: FMUL by log2(e) then MUFU.EX2.",
         ["float", "mufu"], [("a", F(0, 65))], THREADS, ulp=2),
    Spec("f32_fast_sin_cos", "__sinf/__cosf: FMUL.RZ by 1/(2 pi) then MUFU.SIN/COS; inputs keep "
         "|sin| and |cos| at least 1/4, where their absolute error is a few ULPs.",
         ["float", "mufu"], [("a", mufu_input(66, far_from_sin_cos_zeros))], 2 * THREADS, ulp=16),
    Spec("f32_expf", "expf: range reduction in FFMA.SAT/FFMA.RM, MUFU.EX2, scaling.",
         ["float", "mufu"], [("a", F(0, 67))], THREADS, ulp=2),
    Spec("f32_warp_dot", "Dot product: FMUL per lane, a butterfly sum of floats over SHFL.BFLY.",
         ["float", "shuffle"], [("a", F(0, 68)), ("b", F(1, 69))], THREADS),
    Spec("f32_warp_max", "fmaxf reduction over SHFL.DOWN (lanes past the end keep their value).",
         ["float", "shuffle", "min-max"], [("a", F(0, 70))], THREADS),
    Spec("f32_warp_scan", "Inclusive scan of floats over SHFL.UP (Hillis-Steele).",
         ["float", "shuffle"], [("a", F(0, 71))], THREADS),
    Spec("f32_block_reduce", "Tree sum of 64 floats in shared memory with barriers, times x.",
         ["float", "barrier", "shared-memory"], [("a", small_dyadic(72))], THREADS),
    Spec("f32_softmax_warp", "Softmax over each warp: max by SHFL.BFLY, __expf, a sum, "
         "__fdividef.",
         ["float", "shuffle", "mufu"], [("a", softmax_input(73))], THREADS, ulp=8),
    Spec("f32_atomic_add", "atomicAdd of floats into 4 words (RED.ADD.F32.FTZ.RN): exact sums "
         "whatever the order.",
         ["float", "atomic"], [("a", small_dyadic(74))], 4),
    Spec("f16x2_arith", "__hadd2, __hmul2, __hfma2 on packed halves (HADD2, HMUL2, HFMA2).",
         ["fp16"], [("a", f16x2_input(0, 75)), ("b", f16x2_input(1, 76))], 3 * THREADS),
    Spec("f16x2_compare_min_max", "__hmin2, __hmax2 (HMNMX2) and __hlt2 (HSET2) on packed halves.",
         ["fp16", "min-max", "compare"], [("a", f16x2_input(0, 77)), ("b", f16x2_input(2, 78))],
         3 * THREADS),
    Spec("f16_f32_convert", "F32 to packed F16 (F2FP.PACK_AB), back to F32 (HADD2.F32), and "
         "F2F.F16.F32.RZ: ties and overflow.",
         ["fp16", "conversion"], [("a", narrowing_input(0, 79))], 3 * THREADS),
    Spec("bf16_convert_fma", "F32 to packed BF16 (F2FP.BF16.PACK_AB) and HFMA2.BF16_V2.",
         ["bf16", "conversion", "fma"], [("a", narrowing_input(0, 80)), ("b", narrowing_input(5, 81))],
         2 * THREADS),
]


def write_case(spec: Spec) -> None:
    """Run new-case for one spec, then declare the MUFU tolerance of its output."""
    buffers = [BufferArg(name, len(words), words) for name, words in spec.inputs]
    if spec.out_words:
        buffers.append(BufferArg("out", spec.out_words, 0))
    params = None
    if spec.params:
        params = [tuple(p.split(":", 1)) for p in spec.params]
        params = [(k, v if k == "buffer" else int(v, 0)) for k, v in params]
    out = HERE / f"{spec.kernel}.toml"
    new_case(HERE / "kernels.cu", spec.kernel, out, grid=(1,), block=(THREADS,), buffers=buffers,
             params=params, tags=spec.tags, summary=spec.summary, force=True)
    if spec.ulp is not None:
        text = out.read_text(encoding="utf-8")
        text, n = re.subn(r'(\[\[buffers\]\]\nname = "out"\nwords = \d+\n)',
                          rf'\1compare = "f32-ulp:{spec.ulp}"\n', text)
        assert n == 1, f"{out}: no output buffer to declare the tolerance on"
        out.write_text(text, encoding="utf-8")
    print(f"wrote {out.relative_to(HERE.parent.parent)}")


def main(argv: list[str]) -> int:
    chosen = [s for s in SPECS if not argv or s.kernel in argv]
    for spec in chosen:
        write_case(spec)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

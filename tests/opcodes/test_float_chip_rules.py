"""The float rules taken from the words an NVIDIA H200 gave for cases/float and
cases/realkernels: NaNs of binary64 arithmetic and of F2F, F2I of a NaN, FMNMX.NAN,
DSETP.MIN/.MAX, SGXT of a width past 32. Each rule runs on both back ends against the
chip's own words (quoted from the cases) and against a rule written out here."""
from __future__ import annotations

import math
import random
import struct

from support.float32 import run_ops
from support.float_wide import f64, run_pairs, ulp32


def _split(v: int) -> list[int]:
    return [v & 0xFFFFFFFF, v >> 32]


def _join(lo: int, hi: int) -> int:
    return lo | hi << 32


# ---------------------------------------------------------------- binary64 NaNs
# (a, b) -> a + b, a * b, a - b (DADD.RZ with -Rb): cases/float/f64_add_mul, threads 5-10
CHIP_F64_ADD_MUL = {
    (0x7FEFFFFFFFFFFFFF, 0x7FF8000000000000): 0x7FF8000000000000,
    (0x7FF0000000000000, 0xFFF8000000000001): 0xFFF8000000000001,
    (0xFFF0000000000000, 0x7FF0000000000001): 0x7FF8000000000001,
    (0x7FF8000000000000, 0x3FF0000000000000): 0x7FF8000000000000,
    (0xFFF8000000000001, 0xBFF0000000000000): 0xFFF8000000000001,
    (0x7FF0000000000001, 0x3FE0000000000000): 0x7FF8000000000001,
}


def test_binary64_arithmetic_keeps_the_nan_source_as_the_chip(backend):
    """DADD, DMUL and DADD with a negated NaN operand give that NaN quieted, sign and payload
    as the register holds them; DFMA keeps c's NaN before an infinite product."""
    ops = [("DADD {d}, R4, R6", None), ("DMUL {d}, R4, R6", None), ("DADD.RZ {d}, R4, -R6", None),
           ("DFMA {d}, R4, 0.5, R6", None)]
    pairs = list(CHIP_F64_ADD_MUL)
    got = run_pairs(backend, ops, [_split(a) + _split(b) + [0, 0] for a, b in pairs], "f64_nan_kept")
    for (a, b), row in zip(pairs, got):
        words = [_join(*r) for r in row]
        assert words[:3] == [CHIP_F64_ADD_MUL[a, b]] * 3, (hex(a), hex(b), [hex(w) for w in words])
        first = a if math.isnan(f64(a)) else b
        assert words[3] == first | 1 << 51, (hex(a), hex(b), hex(words[3]))


def test_first_nan_source_wins_and_invalid_operations_stay_canonical(backend):
    """Two NaN sources: a's (not confirmed on the chip); inf - inf: the canonical NaN."""
    inputs = [_split(0x7FF0000000000002) + _split(0xFFF8000000000003) + [0, 0],
              _split(0x7FF0000000000000) + _split(0xFFF0000000000000) + [0, 0]]
    got = run_pairs(backend, [("DADD {d}, R4, R6", None), ("DMUL {d}, R6, R4", None)], inputs, "f64_two_nans")
    assert [_join(*r) for r in got[0]] == [0x7FF8000000000002, 0xFFF8000000000003]
    assert _join(*got[1][0]) == 0x7FFFFFFFFFFFFFFF


# ---------------------------------------------------------------- F2F between F32 and F64
# a -> F2F.F32.F64(DMUL(F2F.F64.F32(a), 3)): cases/float/f32_f64_round_trip, threads 25-28
CHIP_ROUND_TRIP = {0x7FC00000: 0x7FC00000, 0xFFC00000: 0xFFC00000, 0x7F800001: 0x7FC00001,
                   0x7FBFFFFF: 0x7FFFFFFF}


def test_f2f_keeps_nan_payloads_between_f32_and_f64(backend):
    """The chip's round trip of four NaNs, and each conversion alone: F32 to F64 moves the
    fraction up 29 bits, F64 to F32 keeps its top 23, both set the quiet bit."""
    words = list(CHIP_ROUND_TRIP)
    ops = [("F2F.F64.F32 R12, R4 ;; DMUL R12, R12, 3 ;; F2F.F32.F64 {d}, R12", None),
           ("F2F.F64.F32 {d}, R4", None), ("F2F.F32.F64 {d}, R6", None)]
    wide = [(w & 0x80000000) << 32 | 0x7FF8000000000000 | (w & 0x7FFFFF) << 29 for w in words]
    got = run_pairs(backend, ops, [[w, 0] + _split(v) for w, v in zip(words, wide)], "f2f_nan")
    for w, v, row in zip(words, wide, got):
        assert row[0][0] == CHIP_ROUND_TRIP[w], (hex(w), hex(row[0][0]))
        assert _join(*row[1]) == v, (hex(w), hex(_join(*row[1])))
        assert row[2][0] == w | 0x400000, (hex(v), hex(row[2][0]))
    odd = run_pairs(backend, [("F2F.F32.F64 {d}, R4", None)], [_split(0xFFF0000123456789) + [0, 0]], "f2f_low")
    assert odd[0][0][0] == 0xFFC00000 | 0x123456789 >> 29


# ---------------------------------------------------------------- F2I of a NaN
F32_NANS = (0x7FC00000, 0xFFC00000, 0x7F800001, 0x7FBFFFFF)     # cases/float/f32_to_int, f32_to_i64
F64_NANS = (0x7FF8000000000000, 0xFFF8000000000001, 0x7FF0000000000001)     # cases/float/f64_to_int


def test_f2i_of_a_nan_is_zero_with_ntz_else_the_top_bit(backend):
    """The chip: F2I.S64[.TRUNC] and F2I.U64.FLOOR of an F32 NaN give 0x8000000000000000,
    F2I.F64[.TRUNC|.FLOOR] and F2I.U32.F64.CEIL of an F64 NaN 0x80000000, the .NTZ forms 0."""
    wide = [("F2I.S64.TRUNC {d}, R4", None), ("F2I.S64 {d}, R4", None), ("F2I.U64.FLOOR {d}, R4", None)]
    for row in run_pairs(backend, wide, [[w, 0, 0, 0] for w in F32_NANS], "f2i_nan_64"):
        assert [_join(*r) for r in row] == [1 << 63] * 3
    narrow = [("F2I.F64.TRUNC {d}, R4", None), ("F2I.F64 {d}, R4", None), ("F2I.F64.FLOOR {d}, R4", None),
              ("F2I.U32.F64.CEIL {d}, R4", None)]
    for row in run_ops(backend, narrow, [_split(v) for v in F64_NANS], (), "f2i_nan_f64"):
        assert list(row) == [0x80000000] * 4
    ntz = [("F2I.TRUNC.NTZ {d}, R4", None), ("F2I.U32.NTZ {d}, R4", None), ("F2I.FLOOR.NTZ {d}, R4", None)]
    for row in run_ops(backend, ntz, [[w] for w in F32_NANS], (), "f2i_nan_ntz"):
        assert list(row) == [0, 0, 0]


# ---------------------------------------------------------------- FMNMX.NAN, DSETP.MIN/.MAX
# (a, b) -> min.NaN, max.NaN: cases/float/f32_min_max_nan, threads 0, 5, 20-28
CHIP_MIN_MAX_NAN = {
    (0x3F800000, 0x33800000): (0x33800000, 0x3F800000), (0x00000003, 0x3F000000): (0x00000003, 0x3F000000),
    (0x80800000, 0x7FC00000): (0x7FFFFFFF,) * 2, (0x7F7FFFFF, 0xFFC00000): (0x7FFFFFFF,) * 2,
    (0xFF7FFFFF, 0x7F800001): (0x7FFFFFFF,) * 2, (0x7F800000, 0x7FBFFFFF): (0x7FFFFFFF,) * 2,
    (0x7FC00000, 0xBF800000): (0x7FFFFFFF,) * 2, (0xFFC00000, 0x3F000000): (0x7FFFFFFF,) * 2,
    (0x7F800001, 0xBF000000): (0x7FFFFFFF,) * 2, (0x7FBFFFFF, 0x3FC00000): (0x7FFFFFFF,) * 2,
}


def test_fmnmx_nan_gives_the_canonical_nan_for_any_nan(backend):
    """FMNMX.NAN Rd, Ra, Rb, PT (min.NaN) and !PT (max.NaN), on the chip's words; plain FMNMX
    still gives the number."""
    ops = [("FMNMX.NAN {d}, R4, R5, PT", None), ("FMNMX.NAN {d}, R4, R5, !PT", None), ("FMNMX {d}, R4, R5, PT", None)]
    pairs = list(CHIP_MIN_MAX_NAN)
    got = run_ops(backend, ops, [list(p) for p in pairs], (), "fmnmx_nan")
    for (a, b), row in zip(pairs, got):
        assert tuple(row[:2]) == CHIP_MIN_MAX_NAN[a, b], (hex(a), hex(b), [hex(w) for w in row])
    assert got[2][2] == 0x80800000 and got[6][2] == 0xBF800000


# (a, b) -> fmin, fmax: cases/float/f64_compare_min_max, threads 0-2, 5-10
CHIP_F64_MIN_MAX = {
    (0x0000000000000000, 0x7FF0000000000000): (0x0000000000000000, 0x7FF0000000000000),
    (0x8000000000000000, 0xFFF0000000000000): (0xFFF0000000000000, 0x8000000000000000),
    (0x0000000000000001, 0x7FF8000000000000): (0x0000000000000001, 0x0000000000000001),
    (0x7FEFFFFFFFFFFFFF, 0x3FF0000000000000): (0x3FF0000000000000, 0x7FEFFFFFFFFFFFFF),
    (0x7FF0000000000000, 0xBFF0000000000000): (0xBFF0000000000000, 0x7FF0000000000000),
    (0xFFF0000000000000, 0x3FE0000000000000): (0xFFF0000000000000, 0x3FE0000000000000),
    (0x7FF8000000000000, 0x3FF8000000000000): (0x3FF8000000000000, 0x3FF8000000000000),
    (0xFFF8000000000001, 0x4004000000000000): (0x4004000000000000, 0x4004000000000000),
    (0x7FF0000000000001, 0xC004000000000000): (0xC004000000000000, 0xC004000000000000),
}


def _nvcc_fmin(a: int, b: int, take_a: int, both_nan: int) -> int:
    """What nvcc builds from DSETP.MIN/.MAX's predicates: a where Pd, else b; b quieted where Pq."""
    return a if take_a else b | (1 << 51 if both_nan else 0)


def test_dsetp_min_max_predicates_give_the_chips_fmin_fmax(backend):
    """DSETP.MIN/.MAX.AND P2, P3: nvcc's selection from them gives the chip's fmin/fmax; two
    NaNs: Pq (then nvcc's result is b, quieted); -0 below +0."""
    ops = [(f"DSETP.{m}.AND P2, P3, R4, R6, PT ;; SEL {{d}}, RZ, 0x1, !{p}", None)
           for m in ("MIN", "MAX") for p in ("P2", "P3")]
    pairs = list(CHIP_F64_MIN_MAX) + [(0xFFF0000000000005, 0x7FF0000000000007), (0, 1 << 63)]
    got = run_ops(backend, ops, [_split(a) + _split(b) for a, b in pairs], (), "dsetp_min_max")
    for (a, b), row in zip(pairs, got):
        lo, hi = _nvcc_fmin(a, b, *row[:2]), _nvcc_fmin(a, b, *row[2:])
        if (a, b) in CHIP_F64_MIN_MAX:
            assert (lo, hi) == CHIP_F64_MIN_MAX[a, b], (hex(a), hex(b), list(row))
    assert list(got[-2]) == [0, 1, 0, 1]
    assert list(got[-1]) == [0, 0, 1, 0]


# ---------------------------------------------------------------- SGXT past 32 bits
def test_sgxt_of_a_width_past_32_keeps_every_bit(backend):
    """SGXT[.U32] Ra, width: 0 gives 0, 32 and more give Ra itself (the chip's words of
    realkernels/bmsk_bitfield, threads 0, 26, 27: bfe.u32 with lengths 36, 35, 33)."""
    widths = [0, 4, 31, 32, 33, 36, 39, 255]
    ops = [("SGXT.U32 {d}, R4, R5", None), ("SGXT {d}, R4, R5", None)]
    got = run_ops(backend, ops, [[0x8765A66E, w] for w in widths], (), "sgxt_wide")
    want_u = [0, 0xE, 0x0765A66E] + [0x8765A66E] * 5
    want_s = [0, 0xFFFFFFFE, 0x0765A66E] + [0x8765A66E] * 5
    assert [row[0] for row in got] == want_u
    assert [row[1] for row in got] == want_s


# ---------------------------------------------------------------- MUFU.EX2 on every back end
def test_mufu_ex2_is_within_one_ulp_of_exact_everywhere(backend):
    """EX2 by exact reduction and a series (the emitter) or correctly rounded (the
    interpreter): within 1 ulp of 2^a, so within the cases' 2 ulp of the chip's words (the
    chip's 0x3e3504f2 and 0x3fb504f2 in float/f32_exp2_log2 are 1 ulp below 2^-2.5, 2^0.5)."""
    rng = random.Random(2)
    args = [rng.uniform(-125.9, 127.9) for _ in range(200)] + [rng.uniform(-1, 1) for _ in range(100)]
    args += [k / 2 for k in range(-20, 21)]
    words = [struct.unpack("<I", struct.pack("<f", a))[0] for a in args]
    got = run_ops(backend, [("MUFU.EX2 {d}, R4", None)], [[w] for w in words], (), "ex2_ulp")
    bad = []
    for w, (r,) in zip(words, got):
        a = struct.unpack("<f", struct.pack("<I", w))[0]
        exact, value = 2.0 ** a, struct.unpack("<f", struct.pack("<I", r))[0]
        if abs(value - exact) > ulp32(exact):
            bad.append(f"ex2({a!r}): {value!r}, exact {exact!r}")
    assert not bad, bad[:10]

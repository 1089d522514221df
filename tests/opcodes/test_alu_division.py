"""Integer division and remainder as nvcc compiles them, on both back ends.

The library cases ``basic/divmod32`` and ``basic/divmod64`` divide a table of dividends by a
table of divisors (1, 2, 3, 2^32-1, 2^32, 2^63, all ones, random), unsigned and signed. Their
sequences chain I2F.RP, MUFU.RCP, F2I.TRUNC and an IMAD.WIDE/IMAD.HI Newton iteration whose
carries (IMAD.HI's out of bit 63, IADD3.X, IMAD.X, ISETP.EX) decide the low and high words of the
quotient. The words expected here are Python's, computed from the case's own input table; the
case file's words (derived on the CPU from the CUDA source) must agree with them.
"""
from __future__ import annotations

import pytest
from warpboard.harness.case.model import load_case

from support.paths import CASES

M32, M64 = (1 << 32) - 1, (1 << 64) - 1
SENTINEL = 0xA5A5A5A5


def signed(v: int, bits: int) -> int:
    return v - (1 << bits) if v >> (bits - 1) else v


def c_divmod(a: int, d: int) -> tuple[int, int]:
    """C's division: the quotient truncated toward zero, the remainder with the dividend's sign."""
    q = abs(a) // abs(d) * (1 if (a < 0) == (d < 0) else -1)
    return q, a - q * d


def expected_words(bits: int, dividends: list[int], divisors: list[int]) -> list[int]:
    """Thread (x, y)'s words: unsigned q, r, then signed q, r of dividend x by divisor y, each
    split into 32-bit words; MIN / -1 is divided by 1 instead (as the kernels do)."""
    mask, words = (1 << bits) - 1, []
    for d in divisors:
        for a in dividends:
            sa, sd = signed(a, bits), signed(d, bits)
            if sa == -(1 << (bits - 1)) and sd == -1:
                sd = 1
            values = [a // d, a % d, *c_divmod(sa, sd)]
            for v in values:
                v &= mask
                words += [v & M32, v >> 32] if bits == 64 else [v]
    return words


def tables(case, bits: int) -> tuple[list[int], list[int]]:
    """The dividends (one per threadIdx.x) and divisors (one per threadIdx.y) of the input buffer."""
    init = list(next(b for b in case.buffers if b.name == "in").init)
    values = init if bits == 32 else [init[k] | init[k + 1] << 32 for k in range(0, len(init), 2)]
    nx = case.block[0]
    return values[:nx], values[nx:nx + case.block[1]]


@pytest.mark.parametrize("bits", [32, 64])
def test_division_and_remainder(backend, bits):
    case = load_case(CASES / "basic" / f"divmod{bits}.toml", CASES)
    dividends, divisors = tables(case, bits)
    assert {1, 2, 3, (1 << bits) - 1} <= set(divisors), "the edge divisors are in the table"
    if bits == 64:
        assert {(1 << 32) - 1, 1 << 32, 1 << 63} <= set(divisors)
    want = expected_words(bits, dividends, divisors)
    out = next(b for b in case.buffers if b.name == "out")
    assert list(out.expected) == want, "the case file's derived words are Python's"
    run = backend.run_case(case)
    assert run.outcome == "ok", run.detail
    got = run.buffers[0]
    per = 4 if bits == 32 else 8
    diffs = [f"thread {k // per} (a={dividends[k // per % len(dividends)]:#x}, "
             f"d={divisors[k // per // len(dividends)]:#x}) out[{k}]: expected {w:#x}, got {g:#x}"
             for k, (w, g) in enumerate(zip(want, got)) if w != g]
    assert not diffs, f"{backend.name}: {len(diffs)} wrong words:\n" + "\n".join(diffs[:20])


def divconst64_words(a: int) -> list[int]:
    """The eight results of ``divconst64`` for one dividend, as 32-bit words."""
    sa = signed(a, 64)
    values = [a // 0x207ADD501, a // 7, a // 1000000007, a % 0xFFFFFFFD, a // 0x8000000000000001,
              c_divmod(sa, -3)[0], c_divmod(sa, 1000003)[1], c_divmod(sa, 0x123456789AB)[0]]
    return [w for v in values for w in (v & M32, (v & M64) >> 32)]


def test_division_by_constants_64(backend):
    """Division by a constant is a 128-bit multiply-high; its last step, IMAD.HI.U32.X, takes
    the carry of the middle partial products into bit 0 of its 64-bit sum."""
    case = load_case(CASES / "basic" / "divconst64.toml", CASES)
    init = list(next(b for b in case.buffers if b.name == "in").init)
    dividends = [init[k] | init[k + 1] << 32 for k in range(0, len(init), 2)]
    assert {0, 1 << 63, M64, 0x207ADD501} <= set(dividends)
    want = [w for a in dividends for w in divconst64_words(a)]
    assert list(next(b for b in case.buffers if b.name == "out").expected) == want
    run = backend.run_case(case)
    assert run.outcome == "ok", run.detail
    diffs = [f"thread {k // 16} (a={dividends[k // 16]:#x}) out[{k}]: expected {w:#x}, got {g:#x}"
             for k, (w, g) in enumerate(zip(want, run.buffers[0])) if w != g]
    assert not diffs, f"{backend.name}: {len(diffs)} wrong words:\n" + "\n".join(diffs[:20])


def test_imad_hi_carry_out_of_bit_63(backend):
    """IMAD.HI.U32 d, P, a, b, c adds the pair (c+1:c) to the 64-bit product: d is bits 32..63
    of the sum and P its bit 64, which the mul.hi.u64 chain of udiv64 adds into the high word;
    with .X the carry in is added at bit 0 of that sum."""
    cases = [(0xFFFFFFFF, 0x6D4B9ADB, 0xEBCD1F5D817E7B7C),   # sum 0x1_5918ba38_1432e0a1: carry
             (0xFFFFFFFF, 0xFFFFFFFF, M64),                  # the largest sum: carry
             (0x12345678, 0x9ABCDEF0, 0x1),                  # no carry
             (0, 0, M64), (1, 1, M64),                       # 2^64 - 1 exactly; 2^64: carry
             (0, 0, 0xFFFFFFFF), (3, 5, 0x1FFFFFFF0)]        # the carry in reaches the high word
    rows = [[a, b, c & M32, c >> 32] for a, b, c in cases] * 8
    body = ["IMAD.MOV.U32 R1, RZ, RZ, c[0x0][0x28]", "S2R R0, SR_TID.X",
            "IMAD.WIDE.U32 R2, R0, 0x10, c[0x0][0x160]",
            "LDG.E R10, [R2.64]", "LDG.E R11, [R2.64+0x4]", "LDG.E R12, [R2.64+0x8]", "LDG.E R13, [R2.64+0xc]",
            "IMAD.HI.U32 R20, P0, R10, R11, R12",
            "SEL R21, 0x1, RZ, P0",
            "IMAD.X R22, RZ, RZ, RZ, P0",                    # the carry as the next IMAD.X sees it
            "LOP3.LUT P1, RZ, R0, 0x1, RZ, 0xc0, !PT",       # odd threads: a carry in
            "IMAD.HI.U32.X R23, P2, R10, R11, R12, P1",      # it enters at bit 0 of the sum
            "SEL R24, 0x1, RZ, P2",
            "IMAD.WIDE.U32 R6, R0, 0x14, c[0x0][0x168]",
            *(f"STG.E [R6.64+{4 * k:#x}], R{20 + k}" for k in range(5)), "EXIT"]
    run = backend.run(body, [sum(rows, []), [SENTINEL] * (5 * len(rows))], threads=len(rows), name="imad_hi_carry")
    assert run.outcome == "ok", run.detail
    for t, (a, b, c_lo, c_hi) in enumerate(rows):
        total = a * b + (c_hi << 32 | c_lo)
        with_cin = total + (t & 1)
        want = [total >> 32 & M32, total >> 64, total >> 64, with_cin >> 32 & M32, with_cin >> 64]
        assert run.buffers[1][5 * t:5 * t + 5] == want, (backend.name, t)

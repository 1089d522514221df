"""The compare tolerance of a case (compare = "f32-ulp:N", absolute bounds near zero): ulp
distances, what passes and what the cell then says, and the forms a case may not use."""
from __future__ import annotations

import struct

import pytest
from warpboard.harness.case.model import CaseError
from warpboard.harness.run import compare

from support.float_wide import (
    F64_OPS,
    f64,
    ref_test64,
    tolerant_case,
    word32,
)


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


def test_case_tolerance_passes_near_words_and_says_so(tmp_path):
    """A buffer with ``compare = "f32-ulp:2"`` passes words 2 ulp off and names them in the
    message; one 3 ulp off still differs; exact stays the default."""
    case = tolerant_case(tmp_path, 'compare = "f32-ulp:2"')
    assert case.buffers[0].compare == "f32-ulp:2"
    near = struct.pack("<4I", 0x3F800002, 0x3F7FFFFF, 0xFFFFFFFF, 0x7F800000)
    found = compare.compare(case, [near])
    assert found.total == 0
    assert found.summary() == "out: 3 words within 2 ulp (at most 2 apart)"
    far = struct.pack("<4I", 0x3F800003, 0x3F800000, 0x7FC00000, 0x7F7FFFFF)
    found = compare.compare(case, [far])
    assert found.total == 2 and found.summary().startswith(
        "2 words differ: thread 0 (warp 0 lane 0) out[0]: expected 0x3f800000, got 0x3f800003")
    exact = tolerant_case(tmp_path, "")
    assert exact.buffers[0].compare == "exact"
    assert compare.compare(exact, [near]).total == 3                  # two near words and the NaN


@pytest.mark.parametrize("bad", ['"f32-ulp"', '"f64-ulp:2"', '"f32-ulp:-1"', "2"])
def test_case_tolerance_rejects_other_forms(tmp_path, bad):
    with pytest.raises(CaseError, match=r"buffers\[0\]\.compare"):
        tolerant_case(tmp_path, f"compare = {bad}")


for _t in ("LT", "GEU", "NE", "EQU", "NAN"):
    F64_OPS.append((f"DSETP.{_t}.AND P0, PT, R4, R6, PT ;; SEL {{d}}, RZ, 0x1, !P0",
                    (lambda t: lambda a, b, c: int(ref_test64(t, f64(a), f64(b))))(_t)))



def test_an_absolute_bound_passes_words_near_a_zero_that_ulp_cannot():
    """sin.approx near a multiple of pi: 1e-9 against 3e-8 is millions of ulp but 2^-21 apart."""
    tiny, small = word32(1e-9), word32(3e-8)
    assert not compare.within(2, tiny, small)
    assert compare.within(2, tiny, small, compare.abs_tolerance("f32-ulp:2,abs:2^-21"))
    assert not compare.within(2, word32(1.0), word32(1.001), compare.abs_tolerance("f32-ulp:2,abs:2^-21"))
    assert compare.tolerance("f32-ulp:2,abs:2^-21") == 2 and compare.abs_tolerance("f32-ulp:2") == 0.0
    assert not compare.within(2, 0x7F800000, 0x7F7FFFFF, 1.0)         # infinities stay exact

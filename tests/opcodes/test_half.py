"""Packed binary16 and bfloat16 (HADD2, HMUL2, HFMA2, HSETP2, HSET2, HMNMX2, F2FP) on both
back ends, word for word against numpy's float16 and exact fractions."""
from __future__ import annotations

from support.float32 import run_ops
from support.float_wide import (
    HALF_OPS,
    half_vectors,
)


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

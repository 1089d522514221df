"""binary64 arithmetic and comparisons, nvcc's DDIV sequences, and FMUL's scaled forms, on
both back ends, word for word against values worked out here (numpy's float64, exact fractions
for fused multiply-adds); the float modules of the emitter pass spirv-val."""
from __future__ import annotations

import random
import shutil
import subprocess

import numpy as np
import pytest
from warpboard.harness.run.dispatch import prepare, translate_case

from support.float32 import float_case, kernel
from support.float_wide import (
    F64_OPS,
    HALF_OPS,
    MUFU_REFS,
    f64,
    f64_vectors,
    run_pairs,
    split64,
    w64,
)
from support.listing_kit import HEAD, SENTINEL, load_inputs, store_outputs


def test_binary64_arithmetic_and_comparisons(backend):
    """DADD, DMUL, DFMA (fused: cancellation against the rounded product included), DSETP:
    each pair of words as numpy's float64 or exact fractions give it."""
    vecs = f64_vectors()
    got = run_pairs(backend, F64_OPS, [split64(v) for v in vecs], "f64_ops")
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
    got = run_pairs(backend, [(" ;; ".join(seq), None)], [split64(v) for v in vecs], "ddiv")
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
    got = run_pairs(backend, [(" ;; ".join(seq), None)], [split64((v,)) for v in vecs], "ddivk")
    bad = [f"{f64(a)!r} / {divisor}: got {f64(lo | hi << 32)!r}" for a, [(lo, hi)] in zip(vecs, got)
           if lo | hi << 32 != w64(f64(a) / divisor)]
    assert not bad, f"{backend.name}: {len(bad)}:\n" + "\n".join(bad[:10])



@pytest.mark.skipif(shutil.which("spirv-val") is None, reason="no spirv-val on this machine")
def test_new_float_modules_are_valid_spirv():
    """MUFU, binary64 and packed-half listings pass spirv-val (vulkan1.1)."""
    ops = [(f"MUFU.{f} {{d}}, R4", None) for f in (*MUFU_REFS, "RCP64H", "RSQ64H")]
    ops += [(s, None) for s, _ in HALF_OPS] + [(s.replace("R10", "R4"), None) for s, _ in F64_OPS]
    prep = prepare(float_case(kernel(ops, 4, len(ops))))
    shader = translate_case(prep, "free", use_cache=False)[0]
    proc = subprocess.run(["spirv-val", "--target-env", "vulkan1.1", "-"], input=shader.spirv,
                          capture_output=True, check=False)
    assert proc.returncode == 0, (proc.stderr or proc.stdout).decode()[:2000]



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

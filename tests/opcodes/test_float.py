"""Float instructions, bit for bit: the interpreter and lavapipe against values worked out
here independently (numpy's binary32/16/64 arithmetic, exact fractions for what numpy cannot
round: FFMA, directed rounding, conversions), over edge values: signed zeros, denormals,
infinities, NaNs with payloads, rounding ties, the largest and smallest normals. The soft
float the emitter uses also runs on Python integers here, against translator.values.floatops, on
many more inputs than a shader could take."""
from __future__ import annotations

import itertools
import random
import shutil
import subprocess

import pytest
from warpboard.harness.run.dispatch import prepare, translate_case
from warpboard.translator.emit.float.soft import PyWords, SoftFloat
from warpboard.translator.values import floatops

from support.float32 import (
    CHUNK,
    CONVERSIONS,
    OPS,
    conversion_vectors,
    diffs_of,
    expect_pair,
    float_case,
    ftz,
    kernel,
    random_words,
    ref_test,
    run_ops,
    run_ops_pairs,
    vectors,
)

for _test in ("EQ", "NE", "LT", "LE", "GT", "GE", "EQU", "NEU", "LTU", "LEU", "GTU", "GEU", "NUM", "NAN"):
    OPS.append((f"FSETP.{_test}.AND P0, P1, R4, R5, PT ;; FSEL {{d}}, 1, RZ, P0",
                (lambda t: lambda a, b, c: 0x3F800000 if ref_test(t, a, b) else 0)(_test)))


OPS += [("FSETP.GEU.AND P0, P1, |R4|, 1.17549435e-38, PT ;; SEL {d}, RZ, 0x7, P1",
         lambda a, b, c: 7 if ref_test("GEU", a & 0x7FFFFFFF, 0x00800000) else 0),
        ("FSETP.LT.FTZ.OR P0, P1, R4, R6, P2 ;; SEL {d}, RZ, 0x3, !P0",
         lambda a, b, c: 3 if ref_test("LT", ftz(a), ftz(c)) or c != 0 else 0)]


def test_binary32_arithmetic_comparisons_and_min_max(backend):
    """FADD/FMUL/FFMA in every rounding, .FTZ, .SAT, |abs| and -neg, immediates, FSETP with
    every test, FSET, FSEL, FMNMX: each word as worked out independently."""
    inputs = vectors()
    got = run_ops(backend, OPS, inputs, ["ISETP.NE.U32.AND P2, PT, R6, RZ, PT"], "float_ops")
    ds = diffs_of(backend, OPS, inputs, got, lambda t, k, v: OPS[k][1](*v))
    assert not ds, ds


@pytest.mark.parametrize("part", range(-(-len(CONVERSIONS) // CHUNK)))
def test_conversions(backend, part):
    """I2F/I2FP from every integer width, F2I to several widths from F32 and F64, F2F
    between F16, F32 and F64, FRND: each in every rounding, against numpy and fractions."""
    inputs = conversion_vectors()
    ops = CONVERSIONS[part * CHUNK:(part + 1) * CHUNK]
    got = run_ops_pairs(backend, ops, inputs, f"float_conversions_{part}")
    ds = diffs_of(backend, ops, inputs, got, lambda t, k, v: expect_pair(ops[k][1](*v)))
    assert not ds, ds


@pytest.mark.parametrize("fmt", ["f16", "bf16", "f32"])
def test_soft_float_matches_floatops(fmt):
    """The emitter's soft float, run on Python integers, gives floatops' word for FADD, FMUL
    and FFMA in every rounding (cancellation in FFMA included: c = -(a*b) rounded)."""
    rng, soft, bad = random.Random(fmt), SoftFloat(PyWords()), []
    words = random_words(rng, fmt)
    for a, b, c, mode in zip(words, words[1:] + words[:1], words[7:] + words[:7], itertools.cycle(floatops.ROUNDINGS)):
        c = c if rng.random() < 0.7 else floatops.fmul(a, b, fmt) ^ floatops.FORMATS[fmt].sign_bit
        for name, args in (("fadd", (a, b)), ("fmul", (a, b)), ("ffma", (a, b, c))):
            want, got = getattr(floatops, name)(*args, fmt, mode), getattr(soft, name)(*args, fmt, mode)
            if want != got:
                bad.append(f"{name}.{mode} {[hex(v) for v in args]}: floatops {want:#x}, soft {got:#x}")
    assert not bad, f"{len(bad)} differences:\n" + "\n".join(bad[:20])


def test_soft_float_conversions_match_floatops():
    """I2F, F2I, F2F and FRND of the soft float against floatops, every width and format."""
    rng, soft, bad = random.Random(7), SoftFloat(PyWords()), []
    for fmt in ("f16", "f32", "f64"):
        for a, mode in zip(random_words(rng, fmt), itertools.cycle(floatops.ROUNDINGS)):
            checks = [("frnd", (a, fmt, mode))] + [("f2f", (a, fmt, dst, mode)) for dst in floatops.FORMATS]
            checks += [("f2i", (a, fmt, w, s, mode)) for w in (8, 16, 32, 64) for s in (False, True)]
            n = rng.getrandbits(64) >> rng.randrange(64)
            checks += [("i2f", (n if w == 64 else n & 0xFFFFFFFF, w, s, fmt, mode)) for w in (8, 16, 32, 64)
                       for s in (False, True)]
            for name, args in checks:
                want, got = getattr(floatops, name)(*args), getattr(soft, name)(*args)
                if want != got:
                    bad.append(f"{name}{args}: floatops {want:#x}, soft {got:#x}")
    assert not bad, f"{len(bad)} differences:\n" + "\n".join(bad[:20])


@pytest.mark.skipif(shutil.which("spirv-val") is None, reason="no spirv-val on this machine")
@pytest.mark.parametrize("which", ["arithmetic", "conversions"])
def test_float_modules_are_valid_spirv(which):
    """The modules of both float listings pass spirv-val (vulkan1.1), free and in turns."""
    lines = kernel(OPS, 3, len(OPS), ["ISETP.NE.U32.AND P2, PT, R6, RZ, PT"]) if which == "arithmetic" \
        else kernel(CONVERSIONS, 4, 2 * len(CONVERSIONS), pairs=True)
    prep = prepare(float_case(lines))
    for mode in ("free", "turns"):
        shader = translate_case(prep, mode, use_cache=False)[0]
        proc = subprocess.run(["spirv-val", "--target-env", "vulkan1.1", "-"], input=shader.spirv,
                              capture_output=True, check=False)
        assert proc.returncode == 0, f"{which} ({mode}): {(proc.stderr or proc.stdout).decode()[:2000]}"

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

from harness import compare
from harness.cases import BufferSpec, CaseError, load_case
from harness.dispatch import prepare, translate_case
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
    "SIN": lambda a: _turns(math.sin, a), "COS": lambda a: _turns(math.cos, a),
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
}


def mufu_inputs(func: str, rng: random.Random) -> list[int]:
    """Arguments for MUFU.func: its specials, then values spread over its useful range."""
    if func in ("SIN", "COS"):
        vals = [rng.uniform(-4, 4) for _ in range(100)] + [k / 8 + rng.uniform(-1e-3, 1e-3) for k in range(-20, 20)]
        vals += [rng.uniform(-1e-3, 1e-3) for _ in range(20)] + [rng.uniform(-3e6, 3e6) for _ in range(10)]
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
        if (want is not None and w != want) or (err is not None and err > MUFU_LIMITS[backend.name]):
            bad.append(f"MUFU.{func} {f32(a)!r} ({a:#x}): got {f32(w)!r} ({w:#x}), error {err} ulp")
    assert not bad, f"{backend.name}: {len(bad)} of {len(inputs)}:\n" + "\n".join(bad[:20])


def test_mufu_sin_takes_turns_as_ptxas_scales():
    """``FMUL.RZ R0, R0, 1/2pi ; MUFU.SIN`` gives sin of the radians (nvcc's __sinf)."""
    from translator import mufuops
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

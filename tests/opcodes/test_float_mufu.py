"""MUFU on both back ends: an approximation on the chip, so the interpreter and lavapipe are
checked against Python's math functions within a few ulp, special values exactly; RCP64H and
RSQ64H give the chip's high words."""
from __future__ import annotations

import math
import random
import struct

import numpy as np
import pytest
from warpboard.translator.values import mufuops

from support.float32 import run_ops
from support.float_wide import (
    MUFU_LIMITS,
    MUFU_REFS,
    MUFU_SPECIALS,
    NAN32,
    TANH_LIMITS,
    f32,
    mufu_error,
    mufu_inputs,
    word32,
)


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

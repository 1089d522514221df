"""FCHK and nvcc's division around it: the quotient is correctly rounded on both back ends."""
from __future__ import annotations

import random
from dataclasses import replace

import pytest
from warpboard.harness.case.model import load_case
from warpboard.translator.errors import UnsupportedInstruction


# ================================================================ FCHK
def test_division_through_fchk_is_correctly_rounded(backend):
    """nvcc's a / b (MUFU.RCP, FCHK, the fast path, and the full path's subroutine) gives the
    correctly rounded binary32 quotient for edge and random operands. Quotients that are NaN
    are left out (the full path makes its NaN with MUFU.RSQ), and so are denormal divisors
    (MUFU.RCP of a denormal is the float core's)."""

    import numpy as np
    case = load_case("cases/realkernels/fdiv_checked.toml", "cases")
    edge = [0, 0x80000000, 1, 0x807FFFFF, 0x00800000, 0x7F7FFFFF, 0x7F800000, 0xFF800000,
            0x3F800000, 0x40400000, 0x5F000000, 0x1F000000, 0x7E800000, 0x00FFFFFF, 0xC0A00000]
    rng = random.Random(11)

    def finite_word():
        w = rng.getrandbits(32)
        return w if 0 < (w >> 23 & 0xFF) < 0xFF else 0x3FC00000
    a = [edge[t % len(edge)] if t < 45 else finite_word() for t in range(64)]
    normal = [w for w in edge if w & 0x7F800000]
    b = [normal[t // 3 % len(normal)] if t < 45 else finite_word() for t in range(64)]

    def quotients():
        with np.errstate(all="ignore"):
            return np.array(a, dtype=np.uint32).view(np.float32) / np.array(b, dtype=np.uint32).view(np.float32)
    b = [0x3F800000 if np.isnan(q) else w for w, q in zip(b, quotients())]
    bufs = (replace(case.buffers[0], init=tuple(a)), replace(case.buffers[1], init=tuple(b)), case.buffers[2])
    try:
        run = backend.run_case(replace(case, buffers=bufs))
    except UnsupportedInstruction as exc:        # the shader translates the NaN path too
        if "MUFU.RSQ" not in str(exc):
            raise
        pytest.skip(f"the full division path needs MUFU.RSQ: {exc}")
    assert run.outcome == "ok", run.detail
    want = [int(w) for w in quotients().view(np.uint32)]
    got = run.buffers[2]
    diffs = [f"{a[t]:#x} / {b[t]:#x}: expected {want[t]:#x}, got {got[t]:#x}" for t in range(64) if got[t] != want[t]]
    assert not diffs, f"{backend.name}:\n" + "\n".join(diffs)

"""The float conversions around integer division, on the interpreter and lavapipe, against
values worked out by hand (binary32 bit patterns)."""
SENTINEL = 0xA5A5A5A5            # what an output word holds if nothing was stored there

CASES = [  # (instruction, input word, expected word)
    ("I2F.U32", 16777217, 0x4B800000),          # 2^24 + 1: ties to even -> 2^24
    ("I2F.U32.RP", 16777217, 0x4B800001),       # rounded up -> 2^24 + 2
    ("I2F.U32.RM", 16777217, 0x4B800000),
    ("I2F.U32.RZ", 0xFFFFFFFF, 0x4F7FFFFF),     # 2^32 - 1 toward zero -> 2^32 - 256
    ("I2F.U32.RP", 0xFFFFFFFF, 0x4F800000),     # -> 2^32
    ("I2F.U32.RP", 3, 0x40400000),              # exact
    ("I2F.S32", 0xFEFFFFFF, 0xCB800000),        # -(2^24 + 1) -> -2^24
    ("I2F.S32.RP", 0xFEFFFFFF, 0xCB800000),     # toward +inf -> -2^24
    ("I2F.S32.RM", 0xFEFFFFFF, 0xCB800001),     # toward -inf -> -(2^24 + 2)
    ("I2F.S32.RZ", 0xFEFFFFFF, 0xCB800000),
    ("F2I.FTZ.U32.TRUNC.NTZ", 0x40200000, 2),   # 2.5
    ("F2I.FTZ.U32.TRUNC.NTZ", 0xBFC00000, 0),   # -1.5 saturates at 0
    ("F2I.FTZ.U32.TRUNC.NTZ", 0x4F950000, 0xFFFFFFFF),  # 5.0e9 saturates
    ("F2I.FTZ.U32.TRUNC.NTZ", 0x7FC00000, 0),   # NaN
    ("F2I.S32.TRUNC", 0xBFC00000, 0xFFFFFFFF),  # -1.5 -> -1
    ("F2I.S32.FLOOR", 0xBFC00000, 0xFFFFFFFE),  # -> -2
    ("F2I.S32.CEIL", 0x40200000, 3),
    ("F2I.S32", 0x40200000, 2),                 # to nearest even
    ("F2I.S32.TRUNC", 0xDF000000, 0x80000000),  # -2^63 saturates at INT_MIN
    ("MUFU.RCP", 0x40800000, 0x3E800000),       # 1/4
    ("MUFU.RCP", 0x3F000000, 0x40000000),       # 1/0.5
]


def test_float_conversions(backend):
    """Every thread converts every word of CASES; each of its results is the one given."""
    threads, n_out = 32, len(CASES)
    body = ["S2R R0, SR_TID.X", f"IMAD.WIDE.U32 R6, R0, {4 * n_out:#x}, c[0x0][0x160]"]
    for k, (op, word, _) in enumerate(CASES):
        body += [f"MOV R11, {word:#x}", f"{op} R{20 + k}, R11"]
    body += [f"STG.E [R6.64+{4 * k:#x}], R{20 + k}" for k in range(n_out)] + ["EXIT"]
    run = backend.run(body, [[SENTINEL] * (threads * n_out)], threads=threads, name="float")
    assert run.outcome == "ok", f"{backend.name}: {run.outcome}: {run.detail}"
    diffs = [f"thread {t} {op} {word:#x}: expected {want:#x}, got {run.buffers[0][t * n_out + k]:#x}"
             for t in range(threads) for k, (op, word, want) in enumerate(CASES)
             if run.buffers[0][t * n_out + k] != want]
    assert not diffs, f"{backend.name}: {len(diffs)} differences:\n" + "\n".join(diffs[:40])

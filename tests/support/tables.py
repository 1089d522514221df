"""The differential opcode tests' frame (opcodes/test_alu.py and siblings): per-thread inputs
(edge values, then seeded random words), the kernel around a body (each thread loads its row
into R10.., stores R20..), and the comparison that lists every thread that differs. Expected
words are computed with plain Python arithmetic, never with the translator's helpers."""
from __future__ import annotations

import random

M32, M64 = 0xFFFFFFFF, 0xFFFFFFFFFFFFFFFF


EDGE = [0, 1, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF]


MORE = [2, 0xFFFFFFFE, 0x80000001, 0x7FFFFFFE, 0x12345678, 0xDEADBEEF, 0x0000FFFF, 0xFFFF0000]


IN, OUT = 10, 20                 # inputs arrive in R10.., results leave from R20..


SENTINEL = 0xA5A5A5A5            # what an output word holds if nothing was stored there


# ---------------------------------------------------------------- plain-Python arithmetic
def s32(v: int) -> int:
    v &= M32
    return v - (1 << 32) if v & 0x80000000 else v


def s64(v: int) -> int:
    v &= M64
    return v - (1 << 64) if v >> 63 else v


def b(v) -> int:
    """A predicate as the word the kernels store for it (SEL Rd, 0x1, RZ, P)."""
    return 1 if v else 0


def inputs(threads: int, n: int, seed: int, columns: dict[int, list[int]] | None = None) -> list[list[int]]:
    """Per-thread input words: the first threads take every pair of edge values (for the first
    two inputs), later ones random words with edge and near-edge values mixed in. ``columns``
    fixes input j of the first threads to a given list."""
    rng = random.Random(seed)
    pool = EDGE + MORE
    rows = []
    for t in range(threads):
        row = []
        for j in range(n):
            if t < 25 and j < 2:
                row.append(EDGE[t % 5] if j == 0 else EDGE[t // 5])
            elif t < 25:
                row.append(EDGE[(t * (j + 2)) % 5])
            elif rng.random() < 0.3:
                row.append(rng.choice(pool))
            else:
                row.append(rng.getrandbits(32))
        rows.append(row)
    for j, col in (columns or {}).items():
        for t, v in enumerate(col[:threads]):
            rows[t][j] = v & M32
    return rows


# ---------------------------------------------------------------- kernels around a body
def framed(body: list[str], n_in: int, n_out: int, *, in_stride: int | None = None) -> list[str]:
    """The usual kernel: thread t loads n_in words of ``in`` into R10.. and after ``body``
    stores R20..R20+n_out-1 to its n_out words of ``out``."""
    stride = in_stride if in_stride is not None else 4 * n_in
    head = ["S2R R0, SR_TID.X", "S2R R1, SR_CTAID.X", "IMAD R0, R1, c[0x0][0x0], R0",
            f"IMAD.WIDE.U32 R2, R0, {stride:#x}, c[0x0][0x160]",
            f"IMAD.WIDE.U32 R6, R0, {4 * n_out:#x}, c[0x0][0x168]"]
    head += [f"LDG.E R{IN + j}, [R2.64+{4 * j:#x}]" for j in range(n_in)]
    tail = [f"STG.E [R6.64+{4 * k:#x}], R{OUT + k}" for k in range(n_out)]
    return head + body + tail + ["EXIT"]


def thread_table(backend, body: list[str], rows: list[list[int]], n_out: int, name: str, **kw) -> list[list[int]]:
    """Run ``framed(body)`` on one input row per thread; the output rows, per thread."""
    threads = len(rows)
    n_in = len(rows[0])
    run = backend.run(framed(body, n_in, n_out), [[w for r in rows for w in r], [SENTINEL] * (threads * n_out)],
                      threads=threads, name=name, **kw)
    assert run.outcome == "ok", f"{backend.name}: {run.outcome}: {run.detail}"
    out = run.buffers[1]
    return [out[t * n_out:(t + 1) * n_out] for t in range(threads)]


def check(backend, got: list[list[int]], rows: list[list[int]], expect, labels: list[str] | None = None):
    """Compare every thread's outputs with ``expect(row, t)``; list every difference."""
    diffs = []
    for t, (row, have) in enumerate(zip(rows, got)):
        want = [w & M32 for w in expect(row, t)]
        assert len(want) == len(have), f"the expectation gives {len(want)} words for {len(have)} outputs"
        for k, (w, h) in enumerate(zip(want, have)):
            if w != h:
                what = labels[k] if labels else f"out[{k}]"
                diffs.append(f"thread {t} {what} inputs ({', '.join(f'{v:#x}' for v in row)}): "
                             f"expected {w:#x}, got {h:#x}")
    assert not diffs, f"{backend.name}: {len(diffs)} differences:\n" + "\n".join(diffs[:40])


def table_test(backend, body, rows, n_out, expect, name, labels=None, **kw):
    got = thread_table(backend, body, rows, n_out, name, **kw)
    check(backend, got, rows, expect, labels)


def sel(p: str, k: int) -> str:
    """Store predicate ``p`` as 0/1 in output register k."""
    return f"SEL R{OUT + k}, 0x1, RZ, {p}"

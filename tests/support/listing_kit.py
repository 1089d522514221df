"""Pieces of hand-written test listings shared by the differential opcode tests: the prologue,
loading a thread's input row, storing its output row, and cutting a buffer into rows."""
from __future__ import annotations

from pathlib import Path

from warpboard.harness.case.model import BufferSpec, Case, Param

M32 = 0xFFFFFFFF
SENTINEL = 0xA5A5A5A5
HEAD = ["IMAD.MOV.U32 R1, RZ, RZ, c[0x0][0x28]", "S2R R0, SR_TID.X"]


def load_inputs(n_in: int) -> list[str]:
    """Thread t's n_in input words (buffer at parameter 0) into R10.."""
    return [f"IMAD.WIDE.U32 R2, R0, {4 * n_in:#x}, c[0x0][0x160]",
            *(f"LDG.E R{10 + j}, [R2.64+{4 * j:#x}]" for j in range(n_in))]


def store_outputs(n_out: int, first: int = 20) -> list[str]:
    """Registers R<first>.. to thread t's row of the buffer at parameter 1, then EXIT."""
    return [f"IMAD.WIDE.U32 R6, R0, {4 * n_out:#x}, c[0x0][0x168]",
            *(f"STG.E [R6.64+{4 * k:#x}], R{first + k}" for k in range(n_out)), "EXIT"]


def rows_of(words: list[int], n: int) -> list[list[int]]:
    """A buffer's words as one row of ``n`` per thread."""
    return [words[t * n:(t + 1) * n] for t in range(len(words) // n)]


def listing(lines: list[str]) -> str:
    """Instruction lines (``.L_x:`` labels pass through) with ``/*pc*/`` address comments."""
    out, pc = [], 0
    for line in lines:
        line = line.strip()
        if line.endswith(":"):
            out.append(line)
            continue
        out.append(f"        /*{pc:04x}*/                   {line} ;")
        pc += 16
    return "\n".join(out) + "\n"


def assert_rows(backend, got: list[list[int]], want: list[list[int]]):
    """Every thread's output row equal to the one wanted; lists the differences."""
    diffs = [f"thread {t} out[{k}]: expected {w:#x}, got {h:#x}"
             for t, (wr, hr) in enumerate(zip(want, got)) for k, (w, h) in enumerate(zip(wr, hr)) if w != h]
    assert not diffs, f"{backend.name}: {len(diffs)} differences:\n" + "\n".join(diffs[:30])


def run_rows(backend, body, words, n_in, n_out, threads, name, **kw):
    """``body`` between the prologue with thread t's n_in inputs and the store of its n_out
    outputs, on ``backend``: the output rows."""
    run = backend.run(HEAD + load_inputs(n_in) + body + store_outputs(n_out),
                      [words, [SENTINEL] * (threads * n_out)], threads=threads, name=name, **kw)
    assert run.outcome == "ok", run.detail
    return rows_of(run.buffers[1], n_out)


def hand_case(name: str, lines: list[str], init: tuple[int, ...], expect: tuple[int, ...], budget: int = 500) -> Case:
    """A one-block case of a hand-written listing: one thread a word of ``out`` (parameter 0),
    ``budget`` steps a thread."""
    specs = (BufferSpec("out", len(init), init, expect),)
    return Case(id=f"semantics/{name}", path=Path(f"{name}.sass"), name=name, summary="", tags=(), kernel=None,
                listing_text=listing(lines), listing_path=Path(f"{name}.sass"), listing_line=1, source=None,
                grid=(1, 1, 1), block=(len(init), 1, 1), shared_bytes=0, step_budget=budget, buffers=specs,
                params=(Param("buffer", "out"),), provenance={}, constants=())

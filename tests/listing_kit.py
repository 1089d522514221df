"""Pieces of hand-written test listings shared by the differential opcode tests: the prologue,
loading a thread's input row, storing its output row, and cutting a buffer into rows."""
from __future__ import annotations

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

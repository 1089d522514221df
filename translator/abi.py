"""The kernel ABI shared by the emitter, the interpreter and the harness.

SM86 side: constant bank 0 holds blockDim (0x0), gridDim (0xc), the stack pointer (0x28) and
the parameters from 0x160. Global memory is addressed with 64-bit pointers; the harness gives
buffer *k* the address ``(BUFFER_HI + k) << 32 | BUFFER_LO``, so pointer arithmetic in the
listing works and an address outside every buffer is recognised (FAULT).

Vulkan side: two storage buffers. Binding 0, ``ctrl``: status words, counters, the buffer
table, the step budget and constant bank 0. Binding 1, ``heap``: every case buffer, one after
another, in 32-bit words.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass

PARAM_BASE = 0x160
STACK_POINTER = 0x28
CBANK_BYTES = 0x400
STACK_TOP = 0x00FFFFF0        # an SP value that no load in the supported subset dereferences

BUFFER_HI = 0x7F00
BUFFER_LO = 0x10000000
MAX_BUFFERS = 8

# ctrl buffer layout, in 32-bit words
STATUS, STATUS_PC, STATUS_THREAD, STATUS_ADDR_LO, STATUS_ADDR_HI, STATUS_BLOCK = 0, 1, 2, 3, 4, 5
TURNS, STEPS, BARRIERS, INSTRUCTIONS = 8, 9, 10, 11    # counters, summed over workgroups
BUDGET = 16
TABLE = 32                     # per buffer: heap word offset, size in bytes (whole words)
CBANK = 64
CTRL_WORDS = CBANK + CBANK_BYTES // 4

# status codes written by the shader (first writer wins); harness.results.Outcome names them
OK, FAULT, LIVELOCK, BAD_PC, NOT_WARPS = 0, 1, 2, 3, 4

DEFAULT_BUDGET = 60000         # steps per thread (free) or turns per workgroup (turns); lavapipe
                               # stops a loop after 65,535 iterations counted with those of the
                               # loops nested in it, so stay below


def buffer_address(k: int) -> int:
    return (BUFFER_HI + k) << 32 | BUFFER_LO


@dataclass(frozen=True)
class Launch:
    """Grid and block sizes of one dispatch."""
    grid: tuple[int, int, int]
    block: tuple[int, int, int]

    @property
    def threads_per_block(self) -> int:
        x, y, z = self.block
        return x * y * z

    @property
    def blocks(self) -> int:
        x, y, z = self.grid
        return x * y * z


def constant_bank(launch: Launch, params: list[tuple[str, int]]) -> bytes:
    """Constant bank 0 for a launch; params are ("u32"|"u64", value) in declaration order."""
    bank = bytearray(CBANK_BYTES)
    struct.pack_into("<6I", bank, 0, *launch.block, *launch.grid)
    struct.pack_into("<I", bank, STACK_POINTER, STACK_TOP)
    offset = PARAM_BASE
    for kind, value in params:
        size = 8 if kind == "u64" else 4
        offset = (offset + size - 1) // size * size
        struct.pack_into("<Q" if size == 8 else "<I", bank, offset, value)
        offset += size
    if offset > CBANK_BYTES:
        raise ValueError(f"parameters need {offset} bytes of constant bank 0, more than {CBANK_BYTES}")
    return bytes(bank)

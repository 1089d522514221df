"""The kernel ABI shared by the emitter, the interpreter and the harness.

SM86 side: constant bank 0 holds blockDim (0x0), gridDim (0xc), the generic windows of shared
and local memory (0x18, 0x20), the stack pointer (0x28) and the parameters from 0x160; banks
1-4 hold what the case gives them (nvcc puts ``__constant__`` data in bank 3, its own tables in
bank 2, printf's format strings in bank 4). Local memory (LDL/STL) is each thread's own window
of :func:`local_frame_bytes` bytes just below the stack pointer's start ``STACK_TOP``: the
kernel's prologue lowers R1 by its frame size and addresses its locals from there. Global memory is addressed with 64-bit pointers; the harness gives
buffer *k* the address ``(BUFFER_HI + k) << 32 | BUFFER_LO``, so pointer arithmetic in the
listing works and an address outside every buffer is recognised (FAULT).

A *generic* address (LD/ST/ATOM; a C++ pointer the compiler cannot place) may also name
shared memory or the thread's local memory, through two windows of 4 GiB whose bases bank 0
holds as 64-bit words, where ptxas reads them: ``c[0x0][0x18]`` (``SHARED_WINDOW``;
``cvta.shared`` adds it to a shared offset, ``cvta.to.shared`` subtracts it) and
``c[0x0][0x20]`` (``LOCAL_WINDOW``; ``cvta.local`` adds it to a local address such as R1's,
``cvta.to.local`` subtracts it). A window is the addresses whose high word is its own
(``SHARED_WINDOW_HI``, ``LOCAL_WINDOW_HI``), with a low word of 0 at its base, so a generic
address's low word is its shared offset or its local address; no buffer's high word
(``BUFFER_HI`` + k) and no function address is a window's, so a generic address names one
place (:func:`generic_target`).

The kernel's initialised global data (nvcc's ``.nv.global.init``: printf's format strings) is
buffer ``GLOBAL_DATA_SLOT``, and the functions outside the kernel that bank 4 points to have
addresses of their own (``FUNCTIONS``: vprintf).

Vulkan side: two storage buffers. Binding 0, ``ctrl``: status words, counters, the buffer
table, the step budget and constant bank 0. Binding 1, ``heap``: every case buffer, one after
another, in 32-bit words. A program that calls vprintf has a third, binding 2, ``printf``:
a count of records, the capacity, and the records (see :mod:`translator.values.vprintf`).
"""
from __future__ import annotations

import struct
from dataclasses import dataclass

PARAM_BASE = 0x160
STACK_POINTER = 0x28
CBANK_BYTES = 0x400
STACK_TOP = 0x00FFFFF0        # the stack pointer's start: local memory ends here
BANK_BYTES = 0x1000           # each of the constant banks 1-4
NUM_BANKS = 5
PARAM_BYTES = {"u8": 1, "u16": 2, "u32": 4, "u64": 8}

BUFFER_HI = 0x7F00
BUFFER_LO = 0x10000000
MAX_BUFFERS = 8
SHARED_WINDOW_BASE, LOCAL_WINDOW_BASE = 0x18, 0x20     # where bank 0 holds the windows' bases
SHARED_WINDOW_HI, LOCAL_WINDOW_HI = 0x7D00, 0x7C00     # the high word of a generic address there
SHARED_WINDOW, LOCAL_WINDOW = SHARED_WINDOW_HI << 32, LOCAL_WINDOW_HI << 32
GLOBAL_DATA_SLOT = MAX_BUFFERS - 1      # the buffer holding the kernel's .nv.global.init
FUNCTIONS = {"vprintf": 0x7E00_0000_0000_1000}   # where bank 4's function pointers point

# printf buffer layout (binding 2), in 32-bit words: see translator.values.vprintf
PRINTF_COUNT, PRINTF_CAPACITY = 0, 1     # records written (past the capacity: dropped), room for
PRINTF_HEADER = 4                        # words before the first record
PRINTF_ARG_WORDS = 64                    # argument bytes kept per call: 32 arguments of 8 bytes
PRINTF_RECORD_WORDS = 4 + PRINTF_ARG_WORDS   # thread, format lo, format hi, argument words kept
PRINTF_RECORDS = 4096                    # records a launch keeps

# ctrl buffer layout, in 32-bit words
STATUS, STATUS_PC, STATUS_THREAD, STATUS_ADDR_LO, STATUS_ADDR_HI, STATUS_BLOCK = 0, 1, 2, 3, 4, 5
STATUS_STEPS = STATUS_ADDR_LO  # LIVELOCK: the steps of the thread that wrote it (turns: or its turns, the more)
TURNS, STEPS, BARRIERS, INSTRUCTIONS = 8, 9, 10, 11    # counters, summed over workgroups
BUDGET = 16
SCRATCH = 17                   # heap word where the workgroups' scratch slices start (translator.emit.turns.storage)
TABLE = 32                     # per buffer: heap word offset, size in bytes (whole words)
CBANK = 64
CTRL_WORDS = CBANK + CBANK_BYTES // 4 + (NUM_BANKS - 1) * BANK_BYTES // 4

# status codes written by the shader (first writer wins); harness.run.results.Outcome names them
OK, FAULT, LIVELOCK, BAD_PC, NOT_WARPS = 0, 1, 2, 3, 4

DEFAULT_BUDGET = 60000         # steps per thread (free) or turns per workgroup (turns); lavapipe
                               # stops a shader's loops after 65,535 iterations of all of them
                               # together (one passed over, masked, counts as one), so stay below


def bank_bytes(bank: int) -> int:
    """The size of constant bank ``bank`` (0 to NUM_BANKS - 1)."""
    return CBANK_BYTES if bank == 0 else BANK_BYTES


def bank_start(bank: int) -> int:
    """Where bank ``bank`` starts, in bytes from the start of bank 0 (the constant area,
    ctrl word CBANK on)."""
    return 0 if bank == 0 else CBANK_BYTES + (bank - 1) * BANK_BYTES


def local_frame_bytes(insts) -> int:
    """The local memory a kernel's threads need: what its prologues take off the stack
    pointer (``IADD3 R1, R1, -0x80, RZ``; nested frames of called functions add up), in
    whole 16-byte units. Local addresses below ``STACK_TOP`` minus this are outside it."""
    total = 0
    for i in insts:
        ops = i.ops
        if (i.opcode.split(".")[0] in ("IADD3", "IADD", "VIADD") and len(ops) >= 3
                and all(o.kind == "reg" and o.value == 1 for o in ops[:2]) and ops[2].kind == "imm"):
            step = ops[2].value & 0xFFFFFFFF
            step = step - (1 << 32) if step >> 31 else step
            step = -step if ops[2].neg else step
            total += max(0, -step)
    return (total + 15) // 16 * 16


def buffer_address(k: int) -> int:
    return (BUFFER_HI + k) << 32 | BUFFER_LO


def generic_target(addr: int) -> tuple[str, int]:
    """Where a 64-bit generic address points: ("shared", byte offset), ("local", local
    address) inside a window, else ("global", addr)."""
    for space, window in (("shared", SHARED_WINDOW), ("local", LOCAL_WINDOW)):
        if addr >> 32 == window >> 32:
            return space, addr - window
    return "global", addr


def global_data_address(offset: int = 0) -> int:
    """The address of byte ``offset`` of the kernel's initialised global data."""
    return buffer_address(GLOBAL_DATA_SLOT) + offset


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


def constant_bank(launch: Launch, params: list[tuple[str, int]], data=()) -> bytes:
    """The constant area of a launch: bank 0 (params are ("u32"|"u64", value) in declaration
    order; "u8" and "u16" too), then banks 1-4 holding ``data``: (bank, byte offset, words) triples."""
    bank = bytearray(bank_start(NUM_BANKS))
    for k, offset, words in data:
        if not 0 < k < NUM_BANKS or offset % 4 or offset < 0 or offset + 4 * len(words) > bank_bytes(k):
            raise ValueError(f"constant data for bank {k} at {offset:#x} ({len(words)} words) "
                             f"outside banks 1-{NUM_BANKS - 1} of {BANK_BYTES:#x} bytes")
        struct.pack_into(f"<{len(words)}I", bank, bank_start(k) + offset, *words)
    struct.pack_into("<6I", bank, 0, *launch.block, *launch.grid)
    struct.pack_into("<I", bank, STACK_POINTER, STACK_TOP)
    struct.pack_into("<QQ", bank, SHARED_WINDOW_BASE, SHARED_WINDOW, LOCAL_WINDOW)
    offset = PARAM_BASE
    for kind, value in params:
        size = PARAM_BYTES[kind]
        offset = (offset + size - 1) // size * size
        struct.pack_into({1: "<B", 2: "<H", 4: "<I", 8: "<Q"}[size], bank, offset, value)
        offset += size
    if offset > CBANK_BYTES:
        raise ValueError(f"parameters need {offset} bytes of constant bank 0, more than {CBANK_BYTES}")
    return bytes(bank)

"""vprintf, the one function outside a kernel that warpboard models, as both back ends run it.

nvcc compiles ``printf(fmt, ...)`` for sm_86 into a call of vprintf: the arguments are
stored in a buffer on the thread's stack (each aligned to its size, floats promoted to
double), then ``R4:R5`` = the format string (a pointer that constant bank 4 holds),
``R6:R7`` = the argument buffer (0 when there are none), a register pair = vprintf's address
(``LDC.64 R8, c[0x4][R0]``: bank 4 again, relocated), ``LEPC`` and ``CALL.ABS.NOINC R8``; the
result comes back in R4.

Here the call appends a *record* to the launch's printf buffer: the thread's index in the
launch, the format string's address, and the words of its argument buffer (up to
``abi.PRINTF_ARG_WORDS``, as far as the thread's local memory goes); the host formats the
records after the launch (:mod:`harness.run.printf`), as the CUDA driver does with the chip's
buffer. A thread's records keep their order; the order between threads is the schedule's, as
on the chip. Past ``abi.PRINTF_RECORDS`` records a call is counted and dropped.

The value vprintf returns is, as the CUDA Programming Guide says, the number of arguments
its format string parses: :func:`count_arguments`, which both back ends compute by reading
the string from global memory; -1 for a null format string (and no record).
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Callable

from .. import abi

MAX_FORMAT_BYTES = 4096          # a format string is read up to its NUL or this many bytes
LENGTH_MODIFIERS = b"hlLqjzt"    # letters inside a conversion that do not end it
PERCENT, STAR = 0x25, 0x2A
TEXT, OPENED, SPEC = 0, 1, 2     # the scanner's states: plain text, just after '%', in a spec


def scan_step(state: int, byte: int) -> tuple[int, int]:
    """One byte of :func:`count_arguments`: (next state, arguments it parses: 0 or 1).

    In text, ``%`` opens a conversion; right after it, a second ``%`` is a literal percent
    sign. Inside a conversion, ``*`` (a width or precision from the arguments) parses one
    argument, and a letter other than a length modifier ends the conversion and parses one."""
    if state == TEXT:
        return (OPENED if byte == PERCENT else TEXT), 0
    if state == OPENED and byte == PERCENT:
        return TEXT, 0
    if byte == STAR:
        return SPEC, 1
    letter = 0x41 <= byte <= 0x5A or 0x61 <= byte <= 0x7A
    if letter and byte not in LENGTH_MODIFIERS:
        return TEXT, 1
    return SPEC, 0


def count_arguments(read_byte: Callable[[int], int], start: int) -> int:
    """The arguments the format string at address ``start`` parses (vprintf's result);
    ``read_byte(address)`` reads memory (and raises where there is none)."""
    state, count = TEXT, 0
    for k in range(MAX_FORMAT_BYTES):
        byte = read_byte(start + k)
        if byte == 0:
            break
        state, parsed = scan_step(state, byte)
        count += parsed
    return count


@dataclass(frozen=True)
class PrintfRecord:
    """One vprintf call: the thread (its index in the launch), the format string's address
    and the bytes of its argument buffer that were kept."""
    thread: int
    fmt: int
    args: bytes


@dataclass
class PrintfOutput:
    """A launch's printf records, in the order they were written, and how many calls found
    the buffer full (their records are lost)."""
    records: list[PrintfRecord] = field(default_factory=list)
    dropped: int = 0

    def add(self, record: PrintfRecord) -> None:
        """Keep a record, or count it as dropped when the buffer is full."""
        if len(self.records) < abi.PRINTF_RECORDS:
            self.records.append(record)
        else:
            self.dropped += 1


def buffer_words(capacity: int = abi.PRINTF_RECORDS) -> list[int]:
    """The printf buffer before a launch: no records, room for ``capacity``."""
    words = [0] * (abi.PRINTF_HEADER + capacity * abi.PRINTF_RECORD_WORDS)
    words[abi.PRINTF_CAPACITY] = capacity
    return words


def decode(data: bytes) -> PrintfOutput:
    """The records a shader left in its printf buffer (see :func:`buffer_words`)."""
    count, capacity = struct.unpack_from("<2I", data, 0)
    out = PrintfOutput(dropped=max(0, count - capacity))
    for k in range(min(count, capacity)):
        at = 4 * (abi.PRINTF_HEADER + k * abi.PRINTF_RECORD_WORDS)
        thread, lo, hi, kept = struct.unpack_from("<4I", data, at)
        kept = min(kept, abi.PRINTF_ARG_WORDS)
        out.records.append(PrintfRecord(thread, hi << 32 | lo, bytes(data[at + 16:at + 16 + 4 * kept])))
    return out

"""The constant banks a cubin gives a kernel, read from its ELF sections.

nvcc puts ``__constant__`` data in the section ``.nv.constant3`` (bank 3, shared by the
module's kernels) and tables of its own in ``.nv.constant2`` (bank 2), or with the kernel's
name appended (``.nv.constant2.NAME``) where they are the kernel's alone. Bank 0 (the launch
and the parameters, ``.nv.constant0.NAME``) is the harness's to fill. Only the little-endian
ELF64 that nvcc writes is read: section headers and the section-name table, nothing else.
"""
from __future__ import annotations

import re
import struct

CASE_BANKS = (2, 3)             # banks a case file carries (see cases/README.md, [[constants]])
_SECTION = re.compile(r"^\.nv\.constant(\d+)(?:\.(.+))?$")
_NOBITS = 8


class CubinError(ValueError):
    """Not an ELF64 little-endian file, or one whose section table does not fit it."""


def sections(data: bytes) -> list[tuple[str, int, bytes]]:
    """(name, type, contents) of every section; NOBITS sections give zero bytes of their size."""
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise CubinError("not a little-endian ELF64 file")
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    if shoff + shnum * shentsize > len(data) or shentsize < 0x40:
        raise CubinError("section header table outside the file")
    heads = [struct.unpack_from("<IIQQQQ", data, shoff + k * shentsize) for k in range(shnum)]
    names_at, names_size = heads[shstrndx][4], heads[shstrndx][5]
    out = []
    for name_off, kind, _, _, offset, size in heads:
        end = data.index(b"\0", names_at + name_off, names_at + names_size)
        name = data[names_at + name_off:end].decode("ascii", "replace")
        body = bytes(size) if kind == _NOBITS else data[offset:offset + size]
        if len(body) != size:
            raise CubinError(f"section {name} outside the file")
        out.append((name, kind, body))
    return out


def constant_banks(data: bytes, kernel: str) -> dict[int, bytes]:
    """The initial contents of banks 2 and 3 as the kernel sees them (absent: not used)."""
    banks: dict[int, bytes] = {}
    for name, _, body in sections(data):
        m = _SECTION.match(name)
        if not m or int(m.group(1)) not in CASE_BANKS or m.group(2) not in (None, kernel):
            continue
        banks[int(m.group(1))] = body
    return banks


def bank_words(body: bytes) -> list[tuple[int, tuple[int, ...]]]:
    """A bank's bytes as (byte offset, words) runs, leaving out all-zero stretches of 16
    words or more (a zeroed bank needs no data): the [[constants]] tables of a case."""
    body = body + bytes(-len(body) % 4)
    words = struct.unpack(f"<{len(body) // 4}I", body)
    runs, start, zeros = [], None, 0
    for k, w in enumerate(words + (0,) * 16):
        if w:
            start = k if start is None else start
            zeros = 0
        elif start is not None:
            zeros += 1
            if zeros == 16:
                runs.append((4 * start, words[start:k - 15]))
                start, zeros = None, 0
    return runs

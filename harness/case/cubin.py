"""The constant banks a cubin gives a kernel, read from its ELF sections.

nvcc puts ``__constant__`` data in the section ``.nv.constant3`` (bank 3, shared by the
module's kernels) and tables of its own in ``.nv.constant2`` (bank 2), or with the kernel's
name appended (``.nv.constant2.NAME``) where they are the kernel's alone. Bank 0 (the launch
and the parameters, ``.nv.constant0.NAME``) is the harness's to fill. Bank 4
(``.nv.constant4``) holds 64-bit pointers that the driver relocates: to printf's format
strings in ``.nv.global.init`` and to vprintf; :func:`bank4_and_strings` resolves them to the
addresses translator.abi gives those. The ELF is read with pyelftools (sections, the symbol
table, REL relocations); only the little-endian ELF64 that nvcc writes is taken.
"""
from __future__ import annotations

import io
import re
import struct
from dataclasses import dataclass

from elftools.common.exceptions import ELFError
from elftools.elf.elffile import ELFFile
from elftools.elf.relocation import RelocationSection
from elftools.elf.sections import SymbolTableSection
from warpboard.translator import abi

CASE_BANKS = (2, 3)             # banks a case file carries (see cases/README.md, [[constants]])
BANK_LIMIT = abi.BANK_BYTES      # bytes a case's bank can hold
_SECTION = re.compile(r"^\.nv\.constant(\d+)(?:\.(.+))?$")
R_CUDA_64 = 2                   # a 64-bit absolute address
GLOBAL_INIT = ".nv.global.init"


class CubinError(ValueError):
    """Not an ELF64 little-endian file, or one whose section table does not fit it."""


def _elf(data: bytes) -> ELFFile:
    try:
        elf = ELFFile(io.BytesIO(data))
    except (ELFError, ValueError, struct.error) as e:
        raise CubinError(f"not a readable ELF file: {e}") from None
    if elf.elfclass != 64 or not elf.little_endian:
        raise CubinError("not a little-endian ELF64 file")
    return elf


def _read(fn):
    """``fn(ELFFile)`` on the image, with a truncated or inconsistent one a CubinError."""
    def read(data: bytes, *args):
        try:
            return fn(_elf(data), *args)
        except (ELFError, ValueError, struct.error, EOFError) as e:
            if isinstance(e, CubinError):
                raise
            raise CubinError(f"the ELF file does not hold together: {e}") from None
    read.__doc__, read.__name__ = fn.__doc__, fn.__name__
    return read


@_read
def sections(elf: ELFFile) -> list[tuple[str, bytes]]:
    """(name, contents) of every section in header order; NOBITS sections give zero bytes of
    their size."""
    out = []
    for sec in elf.iter_sections():
        body = bytes(sec["sh_size"]) if sec["sh_type"] == "SHT_NOBITS" else sec.data()
        if len(body) != sec["sh_size"]:
            raise CubinError(f"section {sec.name} outside the file")
        out.append((sec.name, body))
    return out


def constant_banks(data: bytes, kernel: str) -> dict[int, bytes]:
    """The initial contents of banks 2 and 3 as the kernel sees them (absent: not used)."""
    banks: dict[int, bytes] = {}
    for name, body in sections(data):
        m = _SECTION.match(name)
        if not m or int(m.group(1)) not in CASE_BANKS or m.group(2) not in (None, kernel):
            continue
        banks[int(m.group(1))] = body
    return banks


def bank_words(body: bytes) -> list[tuple[int, tuple[int, ...]]]:
    """A bank's bytes as (byte offset, words) runs, leaving out all-zero stretches of 16
    words or more (a zeroed bank needs no data): the [[constants]] tables of a case. The
    first run starts at offset 0 unless such a stretch comes first: a kernel reads a 64-bit
    constant whose low word is 0 from there (``IMAD.HI.U32 R7, R13, R6, c[0x2][0x0]``)."""
    body = body + bytes(-len(body) % 4)
    words = struct.unpack(f"<{len(body) // 4}I", body)
    runs: list[list[int]] = []          # [first word, one past the last non-zero word]
    for k, w in enumerate(words):
        if not w:
            continue
        if runs and k - runs[-1][1] < 16:
            runs[-1][1] = k + 1
        else:
            runs.append([0 if not runs and k < 16 else k, k + 1])
    return [(4 * a, words[a:b]) for a, b in runs]


@dataclass(frozen=True)
class Symbol:
    name: str
    section: int        # index of the section it is in (0: undefined)
    value: int          # its offset in that section
    size: int


@_read
def symbols(elf: ELFFile) -> list[Symbol]:
    """The entries of the symbol table (.symtab), in order."""
    table = elf.get_section_by_name(".symtab")
    if not isinstance(table, SymbolTableSection):
        return []
    return [Symbol(sym.name, sym["st_shndx"] if isinstance(sym["st_shndx"], int) else 0, sym["st_value"],
                   sym["st_size"]) for sym in table.iter_symbols()]


@_read
def relocations(elf: ELFFile, target: str) -> list[tuple[int, int, int]]:
    """(offset, symbol index, type) of the REL relocations of section ``target``."""
    rel = elf.get_section_by_name(".rel" + target)
    if not isinstance(rel, RelocationSection):
        return []
    return [(r["r_offset"], r["r_info_sym"], r["r_info_type"]) for r in rel.iter_relocations()]


def bank4_and_strings(data: bytes) -> tuple[bytes, list[tuple[int, str]]]:
    """Bank 4 with its pointers resolved, and the strings of the global data they point to.

    A 64-bit relocation to a symbol of ``.nv.global.init`` becomes ``abi.global_data_address``
    of its offset, one to a function of ``abi.FUNCTIONS`` that function's address; others
    (``__device__`` variables, other functions) stay 0. The strings are the NUL-terminated
    UTF-8 objects of ``.nv.global.init`` (offset, text without the NUL)."""
    table = sections(data)
    names = [name for name, _ in table]
    bank = bytearray(next((body for name, body in table if name == ".nv.constant4"), b""))
    init = names.index(GLOBAL_INIT) if GLOBAL_INIT in names else -1
    syms = symbols(data)
    for offset, index, kind in relocations(data, ".nv.constant4"):
        sym = syms[index] if index < len(syms) else None
        if kind != R_CUDA_64 or sym is None or offset + 8 > len(bank):
            continue
        if sym.section == init:
            address = abi.global_data_address(sym.value)
        elif sym.section == 0 and sym.name in abi.FUNCTIONS:
            address = abi.FUNCTIONS[sym.name]
        else:
            continue
        addend, = struct.unpack_from("<Q", bank, offset)
        struct.pack_into("<Q", bank, offset, (address + addend) & (1 << 64) - 1)
    return bytes(bank), _strings(table[init][1] if init >= 0 else b"", syms, init)


def _strings(body: bytes, syms: list[Symbol], init: int) -> list[tuple[int, str]]:
    out = []
    for sym in sorted({s for s in syms if s.section == init and s.size}, key=lambda s: s.value):
        raw = body[sym.value:sym.value + sym.size]
        if len(raw) != sym.size or not raw.endswith(b"\0") or b"\0" in raw[:-1]:
            continue
        try:
            out.append((sym.value, raw[:-1].decode("utf-8")))
        except UnicodeDecodeError:
            continue
    return out


def kernel_constants(data: bytes, kernel: str) -> list[tuple[int, int, tuple[int, ...]]]:
    """The [[constants]] tables of a kernel, from its cubin: banks 2 and 3 (``__constant__``
    data, nvcc's own tables) and bank 4 (pointers to printf's strings and to vprintf,
    resolved), as (bank, byte offset, words). CubinError where the image cannot be read."""
    try:
        banks = constant_banks(data, kernel)
        bank4, _ = bank4_and_strings(data)
    except (ValueError, struct.error) as e:
        raise CubinError(str(e)) from None
    if any(bank4):
        banks[4] = bank4
    out = []
    for bank, body in sorted(banks.items()):
        if len(body) > BANK_LIMIT:
            raise CubinError(f"constant bank {bank} holds {len(body)} bytes; a case has room for {BANK_LIMIT}")
        out += [(bank, offset, words) for offset, words in bank_words(body)]
    return out

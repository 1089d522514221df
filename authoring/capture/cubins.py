"""The program's sm_86 cubins and what a captured case takes from them. :func:`load_cubins`
reads each cubin with its listing, kernels, symbols and section names; :func:`bank_tables`
gives constant banks 2-4 as a kernel saw them (bank 2 from the cubin, bank 3 with the captured
``__constant__`` variables laid over it, bank 4 with its relocations resolved to the case's
buffers); :func:`bank4_reads` and :func:`variable_used` tell which bank-4 words a kernel reads
and so which module variables are its own. This is the ELF side of a capture (sections,
symbols, relocations, through :mod:`warpboard.harness.case.cubin`); it knows nothing of how a
launch is judged or a case file written, which is :mod:`authoring.capture.cases`'s job, so it
is kept apart from it and imports nothing of it.
"""
from __future__ import annotations

import re
import struct
from dataclasses import dataclass, field
from pathlib import Path

from warpboard.translator import abi

from warpboard.harness.case import cubin as cubin_file
from .log import CaptureError, Launch

CONSTANT3, GLOBAL, GLOBAL_INIT = ".nv.constant3", ".nv.global", ".nv.global.init"


@dataclass
class Cubin:
    """One sm_86 cubin of the program: its bytes, listing, kernels and symbols."""
    stem: str
    data: bytes
    listing: str
    kernels: set[str]
    symbols: list[cubin_file.Symbol] = field(default_factory=list)
    section_names: list[str] = field(default_factory=list)

    def symbol(self, name: str) -> cubin_file.Symbol | None:
        return next((s for s in self.symbols if s.name == name and s.section), None)

    def section_of(self, sym: cubin_file.Symbol) -> str:
        return self.section_names[sym.section] if sym.section < len(self.section_names) else ""


def load_cubins(folder: Path) -> list[Cubin]:
    """The cubins of ``folder/cubins`` with their listings (``<stem>.sass`` beside them)."""
    out = []
    for path in sorted((folder / "cubins").glob("*.cubin")):
        data = path.read_bytes()
        listing = path.with_suffix(".sass")
        if not listing.is_file():
            raise CaptureError(f"{path}: no listing {listing.name} beside it")
        names = [name for name, _ in cubin_file.sections(data)]
        kernels = {n[len(".text."):] for n in names if n.startswith(".text.")}
        out.append(Cubin(path.stem, data, listing.read_text(), kernels, cubin_file.symbols(data), names))
    return out


def bank_tables(cubin: Cubin, kernel: str, listing: str, launch: Launch, data: dict[int, tuple[bytes, bytes]],
                buffers: dict[int, str], order: list[int]) -> tuple[list[tuple[int, int, tuple]], str | None]:
    """Banks 2-4 as the kernel saw them: bank 2 from the cubin, bank 3 from the cubin with
    the captured ``__constant__`` variables laid over it, bank 4 with its pointers to
    ``__device__`` variables resolved to their buffers (strings and vprintf as the cubin
    reader resolves them)."""
    banks = cubin_file.constant_banks(cubin.data, kernel)
    bank3 = bytearray(banks.get(3, b""))
    for k, r in enumerate(launch.regions):
        sym = cubin.symbol(r.name) if r.name else None
        if sym and cubin.section_of(sym) == CONSTANT3:
            if sym.value + r.size > len(bank3):
                bank3.extend(bytes(sym.value + r.size - len(bank3)))
            bank3[sym.value:sym.value + r.size] = data[k][0]
    if bank3:
        banks[3] = bytes(bank3)
    bank4, string_list = cubin_file.bank4_and_strings(cubin.data)
    bank4, strings = bytearray(bank4), {offset for offset, _ in string_list}
    if bank4_reads(listing) == set():
        bank4 = bytearray()                  # the kernel reads none of it
    for offset, index, kind in _read_relocations(cubin, listing):
        sym = cubin.symbols[index] if index < len(cubin.symbols) else None
        if sym is None or kind != cubin_file.R_CUDA_64:
            return [], "bank 4 holds a relocation the case writer does not know"
        section = cubin.section_of(sym)
        if sym.section == 0 and sym.name in abi.FUNCTIONS:
            continue
        k = next((k for k, r in enumerate(launch.regions) if r.name == sym.name), None)
        if k is None:
            if section == GLOBAL_INIT and sym.value in strings:
                continue                     # a printf string: resolved by the cubin reader
            return [], f"the kernels' bank 4 points to {sym.name} ({section or 'undefined'}), which was not captured"
        if section == CONSTANT3:
            return [], f"bank 4 points to __constant__ {sym.name}"
        addend, = struct.unpack_from("<Q", bank4, offset)
        struct.pack_into("<Q", bank4, offset, (abi.buffer_address(order.index(k)) + addend) & (1 << 64) - 1)
    if any(bank4):
        banks[4] = bytes(bank4)
    out = []
    for bank, body in sorted(banks.items()):
        if len(body) > abi.BANK_BYTES:
            return [], f"constant bank {bank} holds {len(body)} bytes; a case has room for {abi.BANK_BYTES}"
        out += [(bank, offset, words) for offset, words in cubin_file.bank_words(body)]
    return out, None


# nvdisasm's spellings: c[0x4][0x10], c[0x4] [0x10].H0_H0 (read as halves), c[0x4][-0x10] (0xfff0)
BANK4_READ = re.compile(r"c\[0x4\]\s*\[(-?0x[0-9a-f]+|R[0-9]+|UR[0-9]+)")


def bank4_reads(listing: str) -> set[int] | None:
    """The bank-4 byte offsets the kernel reads (None: it indexes the bank with a register)."""
    offsets = set()
    for m in BANK4_READ.finditer(listing):
        if not m.group(1).lstrip("-").startswith("0x"):
            return None
        offsets.add(int(m.group(1), 16) & 0xFFFF)
    return offsets


def _read_relocations(cubin: Cubin, listing: str) -> list[tuple[int, int, int]]:
    """The bank-4 relocations (offset, symbol index, type) whose words the kernel reads."""
    reads = bank4_reads(listing)
    return [r for r in cubin_file.relocations(cubin.data, ".nv.constant4")
            if reads is None or reads & {r[0], r[0] + 4}]


def variable_used(cubin: Cubin, listing: str, name: str) -> bool:
    """Whether a module variable is one the kernel reaches through bank 4 (else it is not
    the kernel's, and is left out)."""
    return any(cubin.symbols[i].name == name for _, i, _ in _read_relocations(cubin, listing) if i < len(cubin.symbols))


def has_strings(cubin: Cubin) -> bool:
    return bool(cubin_file.bank4_and_strings(cubin.data)[1])

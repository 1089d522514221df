"""SM86 instruction words: the 128-bit layout, the words a ``-hex`` listing shows, and nvdisasm
run on raw words.

An SM86 instruction is two little-endian 64-bit words; as one 128-bit integer the low word is
bits 0-63. Bits 105-127 are the scheduling control (stall, yield, write and read scoreboards,
the wait mask, the operand-reuse flags) and never change what an instruction does; bits 0-104
are the instruction itself. ``nvdisasm -c -hex`` prints the low word at the end of the
instruction's line and the high word alone on the next line; cuobjdump does the same.

``nvdisasm --binary SM86`` refuses a whole file when one word is not an instruction, naming each
such address on stderr; :func:`disassemble_words` puts a NOP in those places and runs it again,
so that a batch of probe words (most of them legal) costs one or two runs.
"""
from __future__ import annotations

import re
import struct
import subprocess
import tempfile
from pathlib import Path

from ..toolchain import ToolFailed, ToolMissing, find_nvdisasm

CONTROL_SHIFT = 105
OPERATION_MASK = (1 << CONTROL_SHIFT) - 1     # bits 0-104: what the instruction does
WORD_BYTES = 16
# NOP with stall 0: filler for the places nvdisasm calls illegal (checked by nvdisasm itself)
NOP_WORD = 0x000FC000_00000000_00000000_00007918

# control field -> (first bit above CONTROL_SHIFT, width)
CONTROL_FIELDS = {"stall": (0, 4), "yield": (4, 1), "write": (5, 3), "read": (8, 3), "wait": (11, 6),
                  "reuse": (17, 4)}


class DisassemblerError(RuntimeError):
    """nvdisasm could not disassemble a batch of words."""


def control_of(word: int) -> int:
    """The 23 control bits of a word."""
    return word >> CONTROL_SHIFT


def with_control(operation: int, control: int) -> int:
    """A word from its operation bits (0-104) and its control bits."""
    return (operation & OPERATION_MASK) | (control << CONTROL_SHIFT)


def control_bits(**fields: int) -> int:
    """Control bits from named fields (stall=15, wait=0x3f, ...)."""
    out = 0
    for name, value in fields.items():
        shift, width = CONTROL_FIELDS[name]
        if not 0 <= value < 1 << width:
            raise ValueError(f"control field {name}={value} does not fit {width} bits")
        out |= value << shift
    return out


def control_field(control: int, name: str) -> int:
    shift, width = CONTROL_FIELDS[name]
    return control >> shift & ((1 << width) - 1)


def to_bytes(words: list[int]) -> bytes:
    """Words as the GPU reads them: low 64 bits then high 64 bits, each little-endian."""
    return b"".join(struct.pack("<QQ", w & (2**64 - 1), w >> 64) for w in words)


def from_bytes(data: bytes) -> list[int]:
    if len(data) % WORD_BYTES:
        raise ValueError(f"{len(data)} bytes is not a whole number of 16-byte instructions")
    return [lo | hi << 64 for lo, hi in struct.iter_unpack("<QQ", data)]


_SECTION = re.compile(r"\.section\s+\.text\.([\w.$]+)|Function\s*:\s*([\w.$]+)|^\s*\.text\.([\w.$]+):")
_LOW = re.compile(r"/\*([0-9a-fA-F]{4,})\*/.*/\*\s*0x([0-9a-fA-F]{16})\s*\*/\s*$")
_HIGH = re.compile(r"^\s*/\*\s*0x([0-9a-fA-F]{16})\s*\*/\s*$")


def listing_words(text: str) -> dict[str, dict[int, int]]:
    """The 128-bit word of each instruction a ``-hex`` listing (or cuobjdump) shows, by kernel
    name and pc; kernels without encoding comments are absent. A bare listing's kernel is
    ``<anonymous>`` as in the project's parser."""
    out: dict[str, dict[int, int]] = {}
    kernel, pending = "<anonymous>", None
    for line in text.splitlines():
        m = _SECTION.search(line)
        if m:
            kernel = next(g for g in m.groups() if g)
            pending = None
            continue
        low = _LOW.search(line)
        if low:
            pending = (int(low.group(1), 16), int(low.group(2), 16))
            continue
        high = _HIGH.match(line)
        if high and pending is not None:
            pc, lo = pending
            out.setdefault(kernel, {})[pc] = lo | int(high.group(1), 16) << 64
        pending = None
    return out


_ERROR_AT = re.compile(r"at address 0x([0-9a-fA-F]+)")
_LINE = re.compile(r"^\s*/\*([0-9a-fA-F]{4,})\*/\s*(.*?)\s*;?\s*$")


def disassemble_words(words: list[int], nvdisasm: str | None = None,
                      timeout: float = 600) -> list[str | None]:
    """nvdisasm's text for each word (``@P0 BRA 0x170``, without address and ``;``), the word at
    index ``k`` disassembled at address ``16 * k``; None where nvdisasm calls it illegal."""
    nvdisasm = nvdisasm or find_nvdisasm()
    words = list(words)
    illegal: set[int] = set()
    with tempfile.TemporaryDirectory(prefix="wb-asm-") as tmp:
        path = Path(tmp) / "words.bin"
        for _ in range(4):
            path.write_bytes(to_bytes(words))
            cmd = [nvdisasm, "--binary", "SM86", "-ndf", str(path)]
            try:
                proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
            except OSError as e:
                raise ToolMissing(f"nvdisasm: cannot run {nvdisasm}: {e.strerror or e}") from None
            if proc.returncode == 0:
                return _texts(proc.stdout, len(words), illegal)
            bad = {int(a, 16) // WORD_BYTES for a in _ERROR_AT.findall(proc.stderr)}
            if not bad or bad <= illegal:
                raise ToolFailed("nvdisasm --binary", cmd, proc.returncode, proc.stderr)
            illegal |= bad
            for k in bad:
                words[k] = NOP_WORD
    raise DisassemblerError("nvdisasm kept finding illegal words after 4 runs")


def _texts(stdout: str, count: int, illegal: set[int]) -> list[str | None]:
    out: list[str | None] = [None] * count
    for line in stdout.splitlines():
        m = _LINE.match(line)
        if m:
            k = int(m.group(1), 16) // WORD_BYTES
            if k < count and k not in illegal:
                out[k] = m.group(2).rstrip(" ;")
    return out


__all__ = ["CONTROL_FIELDS", "CONTROL_SHIFT", "DisassemblerError", "NOP_WORD", "OPERATION_MASK",
           "WORD_BYTES", "control_bits", "control_field", "control_of", "disassemble_words",
           "from_bytes", "listing_words", "to_bytes", "with_control"]

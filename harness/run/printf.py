"""printf output on the host: a launch's vprintf records formatted as the CUDA driver formats
the chip's buffer (C printf conversions, glibc's spelling), the lines per thread, and their
comparison with the lines a case expects.

An argument buffer holds each argument aligned to its size: 4 bytes for ``%d %i %o %u %x %X
%c`` and ``*``, 8 with ``l``, ``ll``, ``j``, ``z``, ``t`` (LP64: long is 8 bytes), 8 for the
float conversions (a float is promoted to double) and for ``%s``, ``%p``. ``hh`` and ``h``
narrow the value as C's printf does. ``%s`` prints the NUL-terminated string at its address
in the memory the launch left. The chip's lines from different threads come in no defined
order, so lines compare as a multiset; a thread's own lines keep their order.
"""
from __future__ import annotations

import json
import math
import re
import struct
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Iterable

from warpboard.translator import PrintfOutput, PrintfRecord

CONVERSION = re.compile(rb"%(?P<flags>[-+ #0]*)(?P<width>\*|\d+)?(?:\.(?P<prec>\*|\d*))?"
                        rb"(?P<length>hh|h|ll|l|L|q|j|z|t)?(?P<conv>[diouxXeEfFgGaAcspn%])")
WIDE = {b"l", b"ll", b"L", b"q", b"j", b"z", b"t"}
MAX_LISTED = 5          # lines named in a comparison's message

StringAt = Callable[[int], "bytes | None"]    # address -> the NUL-terminated bytes there


class _Args:
    """The argument buffer, read in order, each value aligned to its size."""

    def __init__(self, data: bytes):
        self.data, self.at = data, 0

    def take(self, size: int) -> int | None:
        at = (self.at + size - 1) // size * size
        if at + size > len(self.data):
            self.at = len(self.data)
            return None
        self.at = at + size
        return int.from_bytes(self.data[at:at + size], "little")


def format_record(fmt: bytes, args: bytes, string_at: StringAt) -> str:
    """The text one vprintf call prints: ``fmt`` with its conversions filled from ``args``."""
    out, reader, pos = bytearray(), _Args(args), 0
    for m in CONVERSION.finditer(fmt):
        out += fmt[pos:m.start()]
        pos = m.end()
        out += _conversion(m, reader, string_at)
    out += fmt[pos:]
    return out.decode("utf-8", "backslashreplace")


def _conversion(m: re.Match, reader: _Args, string_at: StringAt) -> bytes:
    conv = m["conv"].decode()
    if conv == "%":
        return b"%"
    flags = m["flags"].decode()
    width = _star(reader) if m["width"] == b"*" else int(m["width"]) if m["width"] else None
    if width is not None and width < 0:
        flags, width = flags + "-", -width
    prec = _star(reader) if m["prec"] == b"*" else (int(m["prec"] or 0) if m["prec"] is not None else None)
    if prec is not None and prec < 0:
        prec = None
    length = m["length"] or b""
    size = 8 if conv in "eEfFgGaAspn" or length in WIDE else 4
    value = reader.take(size)
    if value is None:
        return b"(missing argument)"
    if conv == "n":
        return b""
    body, sign = _body(conv, flags, prec, length, size, value, string_at)
    return _pad(body, sign, flags, width, zero_ok=conv in "diouxXeEfFgGaA" and not
                (conv in "diouxX" and prec is not None) and body[-3:].lower() not in (b"inf", b"nan"))


def _star(reader: _Args) -> int | None:
    v = reader.take(4)
    return None if v is None else v - (1 << 32) if v >> 31 else v


def _body(conv, flags, prec, length, size, value, string_at) -> tuple[bytes, bytes]:
    """(the converted text without padding, its sign or prefix for zero padding)."""
    if conv in "di":
        v = _narrow(value, length, size, signed=True)
        return _digits(abs(v), "d", prec), b"-" if v < 0 else _plus(flags)
    if conv in "ouxX":
        v = _narrow(value, length, size, signed=False)
        digits = _digits(v, conv.replace("u", "d"), prec)
        if "#" in flags and conv == "o" and not digits.startswith(b"0"):
            digits = b"0" + digits
        prefix = b"0" + conv.encode() if "#" in flags and conv in "xX" and v else b""
        return digits, prefix
    if conv in "eEfFgGaA":
        return _float(conv, flags, prec, struct.unpack("<d", value.to_bytes(8, "little"))[0])
    if conv == "c":
        return bytes([value & 0xFF]), b""
    if conv == "p":
        return (b"0x%x" % value if value else b"(nil)"), b""
    text = b"(null)" if value == 0 else string_at(value)
    if text is None:
        text = b"(no string at 0x%x)" % value
    return (text if prec is None else text[:prec]), b""


def _narrow(value: int, length: bytes, size: int, signed: bool) -> int:
    bits = {b"hh": 8, b"h": 16}.get(length, 8 * size)
    value &= (1 << bits) - 1
    return value - (1 << bits) if signed and value >> (bits - 1) else value


def _digits(v: int, base: str, prec: int | None) -> bytes:
    if prec == 0 and v == 0:
        return b""
    text = format(v, base).encode()
    return text.rjust(prec, b"0") if prec else text


def _plus(flags: str) -> bytes:
    return b"+" if "+" in flags else b" " if " " in flags else b""


def _float(conv: str, flags: str, prec: int | None, v: float) -> tuple[bytes, bytes]:
    sign = b"-" if math.copysign(1.0, v) < 0 else _plus(flags)
    v = abs(v)
    if math.isinf(v) or math.isnan(v):
        word = "inf" if math.isinf(v) else "nan"
        return (word.upper() if conv.isupper() else word).encode(), sign
    if conv in "aA":
        return _hexfloat(v, conv), sign
    spec = "%" + ("#" if "#" in flags else "") + ("" if prec is None else f".{prec}") + conv
    return (spec % v).encode(), sign


def _hexfloat(v: float, conv: str) -> bytes:
    """glibc's ``%a``: the shortest exact hex significand (no precision)."""
    mantissa, _, exponent = v.hex().partition("p")
    mantissa = mantissa.rstrip("0").rstrip(".")
    text = f"{mantissa}p{exponent}"
    return (text.upper() if conv == "A" else text).encode()


def _pad(body: bytes, sign: bytes, flags: str, width: int | None, zero_ok: bool) -> bytes:
    room = (width or 0) - len(sign) - len(body)
    if room <= 0:
        return sign + body
    if "-" in flags:
        return sign + body + b" " * room
    if "0" in flags and zero_ok:
        return sign + b"0" * room + body
    return b" " * room + sign + body


def split_lines(text: str) -> list[str]:
    """The lines of a printed text (a final newline ends the last line; none: it is still one)."""
    lines = text.split("\n")
    return lines[:-1] if lines[-1] == "" else lines


# ---------------------------------------------------------------- a launch's output

@dataclass
class Printed:
    """What a launch printed: each thread's lines in the order it printed them, and how many
    calls found the printf buffer full."""
    threads: dict[int, list[str]] = field(default_factory=dict)
    dropped: int = 0

    def lines(self) -> list[tuple[int, str]]:
        """(thread, line) of every line, thread by thread."""
        return [(t, line) for t in sorted(self.threads) for line in self.threads[t]]

    def to_json(self) -> dict:
        return {"threads": [{"thread": t, "lines": self.threads[t]} for t in sorted(self.threads)],
                "dropped": self.dropped}

    @classmethod
    def from_json(cls, doc: dict) -> "Printed":
        return cls({int(e["thread"]): list(e["lines"]) for e in doc.get("threads", [])},
                   int(doc.get("dropped", 0)))


def printed(output: PrintfOutput, string_at: StringAt) -> Printed:
    """Format a launch's records; the format strings and %s strings come from ``string_at``."""
    out = Printed(dropped=output.dropped)
    for record in output.records:
        out.threads.setdefault(record.thread, []).extend(split_lines(_text(record, string_at)))
    return out


def _text(record: PrintfRecord, string_at: StringAt) -> str:
    fmt = string_at(record.fmt)
    if fmt is None:
        return f"(no format string at {record.fmt:#x})\n"
    return format_record(fmt, record.args, string_at)


# ---------------------------------------------------------------- comparison

@dataclass
class LineDiff:
    """Lines a case expects that were not printed, and printed lines it does not expect
    (with the thread that printed them); each as often as it is missing or extra."""
    missing: list[str] = field(default_factory=list)
    extra: list[tuple[int, str]] = field(default_factory=list)
    dropped: int = 0

    @property
    def count(self) -> int:
        return len(self.missing) + len(self.extra)

    def describe(self) -> str:
        """``printf: expected line "x=5" not printed; extra line "x=7" from thread 3``."""
        parts = [f"expected line {json.dumps(line)} not printed" for line in self.missing[:MAX_LISTED]]
        parts += [f"extra line {json.dumps(line)} from thread {t}" for t, line in self.extra[:MAX_LISTED]]
        more = self.count - len(parts)
        text = "printf: " + "; ".join(parts) + (f" (+{more} more)" if more > 0 else "")
        if self.dropped:
            text += f"; {self.dropped} calls found the printf buffer full"
        return text


def compare_lines(expected: Iterable[str], got: Printed) -> LineDiff:
    """The sorted multiset of the launch's lines against the expected ones."""
    want = Counter(expected)
    have = Counter(line for _, line in got.lines())
    missing = sorted((want - have).elements())
    extra_left = have - want
    extra = []
    for thread, line in got.lines():
        if extra_left[line] > 0:
            extra_left[line] -= 1
            extra.append((thread, line))
    return LineDiff(missing, extra, got.dropped)

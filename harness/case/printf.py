"""The printf tables of a case file: the strings of its global data and the lines it prints.

    [[strings]]                 # nvcc's .nv.global.init: printf's format strings, and strings
    offset = 0x4                # printed with %s; byte offset in the global data, whose address
    text = "lane %d says %x\\n"  # is translator.abi.global_data_address(0); stored NUL-terminated

    [printf]
    expected = ["lane 1 says 0x3", ...]   # every line the launch prints, in any order

``warpboard new-case`` writes the strings (and bank 4's pointers to them) from the cubin;
``warpboard record-truth`` writes the lines the chip printed. The loader in
:mod:`harness.case.model` calls these checks with its located :class:`harness.case.fields.Checker`.
"""
from __future__ import annotations

from warpboard.translator import abi

STRINGS_KEYS = ("offset", "text")
PRINTF_KEYS = ("expected",)
MAX_GLOBAL_DATA = 1 << 20           # bytes of strings a case may carry
MAX_LINES = 1 << 16                 # printf lines a case may expect
MAX_CASE_BUFFERS = abi.GLOBAL_DATA_SLOT   # with strings: the last buffer slot holds them


def check_string(c, index: int) -> tuple[int, str]:
    """One [[strings]] table: (offset, text)."""
    c.only(STRINGS_KEYS)
    offset = c.integer("offset", 0, MAX_GLOBAL_DATA - 1)
    text = c.string("text")
    if "\0" in text:
        raise c.err("text", f"strings[{index}].text: holds a NUL character (each string ends "
                            "at its first; give the pieces as strings of their own)")
    if offset + len(text.encode("utf-8")) + 1 > MAX_GLOBAL_DATA:
        raise c.err("text", f"strings[{index}].text: ends past the {MAX_GLOBAL_DATA} bytes "
                            "of global data a case may have")
    return offset, text


def check_strings(strings: list[tuple[int, str]], loc, buffers: int) -> tuple[tuple[int, str], ...]:
    """All [[strings]] tables: sorted by offset, not overlapping; the case has room for them."""
    ordered = sorted(enumerate(strings), key=lambda item: item[1][0])
    for (_, (a, text)), (j, (b, _)) in zip(ordered, ordered[1:]):
        if a + len(text.encode("utf-8")) + 1 > b:
            raise loc.error(f"strings[{j}].offset: {b:#x} is inside the string at {a:#x} "
                            "(with its NUL)", "offset", "strings", j)
    if strings and buffers > MAX_CASE_BUFFERS:
        raise loc.error(f"strings: a case with [[strings]] has at most {MAX_CASE_BUFFERS} buffers, "
                        f"this one {buffers} (buffer slot {abi.GLOBAL_DATA_SLOT} holds the strings)",
                        None, "strings", 0)
    return tuple(s for _, s in ordered)


def check_printf(c) -> tuple[str, ...]:
    """The [printf] table: the expected lines."""
    c.only(PRINTF_KEYS)
    lines = c.required("expected")
    if not isinstance(lines, list) or not all(isinstance(x, str) for x in lines):
        raise c.err("expected", "printf.expected: must be an array of strings (the lines printed)")
    if len(lines) > MAX_LINES:
        raise c.err("expected", f"printf.expected: {len(lines)} lines, at most {MAX_LINES}")
    for k, line in enumerate(lines):
        if "\n" in line:
            raise c.err("expected", f"printf.expected[{k}]: a line holds no newline: {line!r}")
    return tuple(lines)


def global_data(strings) -> bytes:
    """The global data image of a case's strings (NUL-terminated, whole words)."""
    end = max((offset + len(text.encode("utf-8")) + 1 for offset, text in strings), default=0)
    image = bytearray(end + -end % 4)
    for offset, text in strings:
        raw = text.encode("utf-8")
        image[offset:offset + len(raw)] = raw
    return bytes(image)

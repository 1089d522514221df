"""SASS operands as nvdisasm and cuobjdump print them -> :class:`Operand`.

Registers (``R3``, ``UR4``, ``P0``, ``UPT``, ``B1``, ``SB0``, ``SR_TID.X``, ``PR``), decorations
(``-``, ``~``, ``!``, ``|..|``, ``.reuse`` and other suffixes), integer and float immediates,
addresses (``[R2.64+UR4+0x10]``, ``desc[UR4][R2.64]``), constant banks (``c[0x3][R2+0x10]``; a
half select after it, ``c[0x0] [0x170].H1_H1``, where nvdisasm puts a space between bank and offset),
labels, texture dimensions (``2D``) and scoreboard lists (``{4,3}``). Parsing a token is a pure
function of its text, so it is cached: a long listing repeats the same operands many times.
"""
from __future__ import annotations

import math
import re
import struct
from dataclasses import dataclass
from functools import lru_cache

from ..isa import regs


@dataclass(frozen=True)
class Operand:
    """One operand as written: its kind, its base text and its decorations.

    ``value`` is the register number, the integer immediate, the constant bank (also as
    :attr:`bank`) or, for a float immediate (``fimm``), its bits as a 32-bit float (``fvalue``
    is the number itself, for wider or narrower instructions). An address (``mem``) has a
    ``base`` register, an ``index`` register added to it (``[R2+R3]``, ``[R2.64+UR4]``), an
    ``offset``, and a descriptor register (``desc[UR4]``) in ``uniform_base``."""
    kind: str            # reg ureg pred upred imm fimm cbank mem label sreg barrier pr sb texdim list
    text: str            # as written, for printing and messages
    name: str = ""       # R3, UR4, P0, SR_TID.X, B0, SB0, 2D, .L_x_3
    value: int = 0       # immediate value, register number, constant bank, ...
    neg: bool = False    # -R
    inv: bool = False    # ~R or !P
    abs: bool = False    # |R|
    suffix: tuple[str, ...] = ()    # .64 .X4 .B1 .H1 ... (.reuse dropped)
    base: "Operand | None" = None   # address register (mem/cbank)
    uniform_base: "Operand | None" = None   # desc[UR4] or c[0x3][UR4+..]
    offset: int = 0      # address offset (mem/cbank)
    index: "Operand | None" = None  # second address register: [R2+R3], [R2.64+UR4+0x10]
    fvalue: float = 0.0  # a float immediate's number

    @property
    def bank(self) -> int:
        """The constant bank of a ``c[bank][..]`` operand."""
        return self.value


class Malformed(ValueError):
    """A token that is not an operand; ``what`` says which kind it failed as."""

    def __init__(self, what: str, text: str, message: str | None = None):
        super().__init__(message or f"malformed {what} {text}")
        self.what, self.text = what, text


class OutOfRange(Malformed):
    """An operand of the right shape that no SM86 encoding holds: ``R300``, ``UR99``, ``B16``,
    an immediate wider than 32 bits, an address offset wider than its field."""

    def __init__(self, what: str, text: str, allowed: str):
        super().__init__(what, text, f"{what} {text} out of range ({allowed})")


# What each register file and field holds on SM86; a number beyond is an error where it is
# parsed, so that neither back end meets it (one would index past its file, the other read 0).
REGISTER_LIMITS = {"reg": (254, "R0-R254 or RZ"), "ureg": (62, "UR0-UR62 or URZ"),
                   "barrier": (15, "B0-B15"), "sb": (5, "SB0-SB5")}
IMMEDIATE_RANGE = (-(1 << 31), (1 << 32) - 1)      # a 32-bit field, written signed or unsigned
MEMORY_OFFSET_RANGE = (-(1 << 23), (1 << 23) - 1)  # the signed 24-bit offset of an address
CBANK_OFFSET_RANGE = (0, 0xFFFF)                   # a constant bank is 64 KiB
CBANK_SIGNED_LOW = -0x8000                         # its 16-bit offset as nvdisasm prints it, signed
CBANK_BANKS = 18                                   # c[0x0] .. c[0x11]


_REG = re.compile(r"(R\d+|RZ|UR\d+|URZ|P[0-6T]|UP[0-6T]|B\d+|SB\d+|SRZ|PR|SR_[\w.]+)((?:\.\w+)*)$")
_INT = re.compile(r"[+-]?(?:0x[0-9a-fA-F]+|\d+)$")
_FLOAT = re.compile(r"[+-]?(?:\d+\.\d*(?:e[+-]?\d+)?|\d+e[+-]?\d+|INF|QNAN|NAN)$", re.I)
_TEXDIM = re.compile(r"(?:ARRAY_)?(?:[123]D|CUBE)$")
_LIST = re.compile(r"\{\s*\d+(?:\s*,\s*\d+)*\s*\}$")
_TERM = re.compile(r"(\+-|[+-])?([^+-]+)")
_SPACED_TARGET = re.compile(r"(\S+)\s+(`\(.*\)|-?0x[0-9a-fA-F]+)$")
_BRACKETS = frozenset("[({`")
# first letters of a register name -> its kind
_REGISTER_KINDS = (("SRZ", "reg"), ("SR_", "sreg"), ("SB", "sb"), ("PR", "pr"), ("UR", "ureg"),
                   ("UP", "upred"), ("R", "reg"), ("P", "pred"), ("B", "barrier"))


@lru_cache(maxsize=16384)
def parse_operands(text: str) -> tuple[Operand, ...]:
    """Every operand of an instruction from the text after its opcode (Malformed if one is not)."""
    return tuple(parse_operand(t) for t in split_operands(text))


def clear_caches() -> None:
    """Forget every operand parsed so far (to time parsing from cold)."""
    parse_operands.cache_clear()
    parse_operand.cache_clear()


def split_operands(text: str) -> list[str]:
    """Split on commas outside brackets; a target after a register without a comma is its own
    operand (``RET.REL.NODEC R2 `(kernel)``, cuobjdump ``RET.REL.NODEC R4 0x0``)."""
    if not text:
        return []
    if _BRACKETS.isdisjoint(text):
        tokens = [t.strip() for t in text.split(",")]
    else:
        tokens, depth, start = [], 0, 0
        for k, ch in enumerate(text):
            if ch in "[({":
                depth += 1
            elif ch in "])}":
                depth -= 1
            elif ch == "," and depth == 0:
                tokens.append(text[start:k].strip())
                start = k + 1
        tokens.append(text[start:].strip())
    out: list[str] = []
    for tok in tokens:
        m = _SPACED_TARGET.match(tok) if " " in tok else None
        out.extend(m.groups() if m else [tok] if tok else [])
    return out


@lru_cache(maxsize=16384)
def parse_operand(tok: str) -> Operand:
    """One operand token; raises :class:`Malformed`."""
    t = tok.strip()
    if t.startswith("`(") and t.endswith(")"):
        return Operand("label", tok, name=t[2:-1])
    if _INT.match(t):
        return Operand("imm", tok, value=_immediate(tok, int(t, 0)))
    if _FLOAT.match(t):
        return float_immediate(tok, t)
    neg = t.startswith("-")
    t = t[1:] if neg else t
    inv = t[:1] in ("~", "!")
    t = t[1:] if inv else t
    ab = t.startswith("|")
    if ab:
        close = t.find("|", 1)
        if close < 0:
            raise Malformed("operand", repr(tok))
        t = t[1:close] + t[close + 1:]      # |R3|.reuse, |R3|.H1 -> R3.reuse, R3.H1
    deco = {"neg": neg, "inv": inv, "abs": ab}
    if t.startswith(("c[", "cx[")):
        return _cbank(tok, t, deco)
    if t.startswith(("[", "desc[")):
        return _mem(tok, t)
    m = _REG.match(t)
    if m:
        return register(tok, m.group(1), m.group(2), **deco)
    if _INT.match(t):
        return Operand("imm", tok, value=_immediate(tok, int(t, 0)), neg=neg, inv=inv)
    if not (neg or inv or ab):
        if _TEXDIM.match(t):
            return Operand("texdim", tok, name=t)
        if _LIST.match(t):
            items = [int(x) for x in t[1:-1].split(",")]
            return Operand("list", tok, name=t, value=sum(1 << x for x in set(items)))
    raise Malformed("operand", repr(tok))


def _immediate(tok: str, value: int) -> int:
    """An integer immediate's value, which must fit the 32-bit field of an instruction."""
    return _within("immediate", tok, value, IMMEDIATE_RANGE, "at most 32 bits")


def _within(what: str, tok: str, value: int, bounds: tuple[int, int], allowed: str) -> int:
    low, high = bounds
    if not low <= value <= high:
        raise OutOfRange(what, tok.strip(), allowed)
    return value


def float_immediate(tok: str, t: str) -> Operand:
    """``1.17549435e-38``, ``-0.5``, ``+INF``, ``-QNAN``: the number and its float32 bits
    (NaN as the GPU's canonical 0x7fffffff, with the sign written)."""
    word = t.lstrip("+-").upper()
    sign = t.startswith("-")
    if word in ("QNAN", "NAN"):
        return Operand("fimm", tok, name=t, value=0x7FFFFFFF | sign << 31, fvalue=math.nan)
    number = float(t)
    try:
        bits = struct.unpack("<I", struct.pack("<f", number))[0]
    except OverflowError:            # beyond float32: rounds to infinity
        bits = 0x7F800000 | sign << 31
    return Operand("fimm", tok, name=t, value=bits, fvalue=number)


def register(tok: str, name: str, suffix_text: str = "", neg=False, inv=False, abs=False) -> Operand:
    """A register operand from its name (``R3``, ``SR_TID.X``) and suffix text (``.64.reuse``)."""
    suffix = tuple(s for s in suffix_text.split(".") if s and s != "reuse")
    kind = next(k for prefix, k in _REGISTER_KINDS if name.startswith(prefix))
    if kind == "sreg":
        return Operand(kind, tok, name=name, neg=neg, inv=inv, abs=abs)
    if kind == "pr":
        return Operand(kind, tok, name=name)
    if name in ("RZ", "SRZ", "URZ"):
        value = regs.ZERO[kind]
    elif name in ("PT", "UPT"):
        value = regs.PT
    else:
        value = int(name.lstrip("URPSB"))
        if kind in REGISTER_LIMITS and value > REGISTER_LIMITS[kind][0]:
            raise OutOfRange("register", name, REGISTER_LIMITS[kind][1])
    return Operand(kind, tok, name=name, value=value, neg=neg, inv=inv, abs=abs, suffix=suffix)


def _address(inner: str) -> tuple[Operand | None, Operand | None, int]:
    """``R2.64+UR4+0x10``, ``R7.X4+R3``, ``R2.64+-0x40``, ``0x40``, ``RZ`` ->
    (base register, index register, offset); registers come before the offset."""
    text = inner.replace(" ", "")
    regs: list[Operand] = []
    offset, seen_offset, pos = 0, False, 0
    for m in _TERM.finditer(text):
        sign, term = m.groups()
        if m.start() != pos or (sign is None and pos > 0) or seen_offset:
            raise Malformed("address", f"[{inner}]")
        pos = m.end()
        if _INT.match(term):
            offset, seen_offset = int(term, 0) * (-1 if sign in ("-", "+-") else 1), True
            continue
        rm = _REG.match(term)
        if not rm or sign not in (None, "+") or len(regs) == 2:
            raise Malformed("address", f"[{inner}]")
        regs.append(register(term, rm.group(1), rm.group(2)))
    if pos != len(text) or any(r.kind not in ("reg", "ureg") for r in regs):
        raise Malformed("address", f"[{inner}]")
    regs += [None, None]
    return regs[0], regs[1], offset


def _mem(tok: str, t: str) -> Operand:
    desc = None
    if t.startswith("desc["):
        close = t.find("]")
        m = _REG.match(t[5:close])
        if not m or not t.startswith("[", close + 1):
            raise Malformed("address", repr(tok))
        desc, t = register(m.group(0), m.group(1), m.group(2)), t[close + 1:]
    if not t.endswith("]") or "[" in t[1:]:
        raise Malformed("address", repr(tok))
    base, index, offset = _address(t[1:-1])
    _within("address offset", hex(offset), offset, MEMORY_OFFSET_RANGE, "a signed 24-bit offset")
    suffix = base.suffix if base is not None else ()
    return Operand("mem", tok, base=base, index=index, offset=offset, suffix=suffix, uniform_base=desc)


_CBANK = re.compile(r"cx?\[(0x[0-9a-fA-F]+|\d+)\]\s*\[([^\]]*)\]((?:\.\w+)*)$")


def _cbank(tok: str, t: str, deco: dict) -> Operand:
    """``c[0x3][R2+0x10]``, ``c[0x0][UR4]``, and as nvdisasm prints an operand read as packed
    halves, with a space and a select: ``c[0x0] [0x170].H0_H0``, ``-|c[0x0] [0x170].H1_H1|``.
    An offset of 0x8000 or more is printed negative (``c[0x0][-0x6880]`` is byte 0x9780, a
    parameter of a kernel with more than 32 KiB of them); :attr:`Operand.offset` holds the
    16-bit field."""
    m = _CBANK.match(t)
    if not m:
        raise Malformed("constant", repr(tok))
    base, index, offset = _address(m.group(2))
    if index is not None:
        raise Malformed("constant", repr(tok))
    bank = _within("constant bank", m.group(1), int(m.group(1), 0), (0, CBANK_BANKS - 1),
                   f"banks 0x0-{CBANK_BANKS - 1:#x}")
    if CBANK_SIGNED_LOW <= offset < 0:       # nvdisasm prints 0x8000-0xffff signed: c[0x0][-0x6880]
        offset += CBANK_OFFSET_RANGE[1] + 1
    _within("constant bank offset", hex(offset), offset, CBANK_OFFSET_RANGE, "0x0-0xffff")
    suffix = tuple(s for s in m.group(3).split(".") if s)
    regular = base if base is not None and base.kind == "reg" else None
    uniform = base if base is not None and base.kind == "ureg" else None
    return Operand("cbank", tok, value=bank, base=regular, uniform_base=uniform,
                   offset=offset, suffix=suffix, **deco)


__all__ = ["Malformed", "Operand", "OutOfRange", "clear_caches", "float_immediate",
           "parse_operand", "parse_operands", "register", "split_operands"]

"""SM86 SASS text -> instructions with their file and line.

Reads what ``nvdisasm -c`` and ``cuobjdump -sass`` print: address comments, labels, guards,
modifiers, the encoding comments of cuobjdump, and several kernels in one file. The parser
knows syntax only; which opcodes exist is the opcode table's business (:mod:`translator.ops`).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from .errors import SassSyntaxError


@dataclass(frozen=True)
class Operand:
    """One operand as written: its kind, its base text and its decorations."""
    kind: str            # reg ureg pred upred imm fimm cbank mem label sreg barrier addr
    text: str            # as written, for printing and messages
    name: str = ""       # R3, UR4, P0, SR_TID.X, B0, .L_x_3
    value: int = 0       # immediate value, register number, constant bank, ...
    neg: bool = False    # -R
    inv: bool = False    # ~R or !P
    abs: bool = False    # |R|
    suffix: tuple[str, ...] = ()    # .64 .X4 .B1 .H1 ...
    base: "Operand | None" = None   # address register (mem/cbank)
    uniform_base: "Operand | None" = None   # desc[UR4] or c[0x3][UR4+..]
    offset: int = 0      # address offset (mem/cbank)


@dataclass(frozen=True)
class RawInstruction:
    """An instruction line: where it is and what it says, before decoding."""
    pc: int
    guard: str | None          # "P0", "!P0", "UP0", "!PT" or None
    opcode: str                # full mnemonic with modifiers: "ISETP.NE.U32.AND"
    operands: tuple[Operand, ...]
    text: str                  # the instruction text, without address and ';'
    file: str
    line: int


@dataclass
class Function:
    """One symbol of a listing: a kernel or a helper that follows it in its section."""
    name: str
    start: int
    file: str
    line: int


@dataclass
class Section:
    """A .text section: one kernel, its helper functions, their instructions and labels."""
    name: str
    instructions: list[RawInstruction] = field(default_factory=list)
    labels: dict[str, int] = field(default_factory=dict)
    functions: list[Function] = field(default_factory=list)


_ADDR = re.compile(r"^\s*/\*([0-9a-fA-F]{4,})\*/\s*(.*)$")
_LABEL = re.compile(r"^\s*([.$\w][\w.$@]*)\s*:\s*$")
_SECTION = re.compile(r"^\s*\.section\s+\.text\.([\w.$]+)")
_CUOBJ_FUNC = re.compile(r"^\s*Function\s*:\s*([\w.$]+)")
_ENCODING = re.compile(r"/\*\s*0x[0-9a-fA-F]+\s*\*/")
_GUARD = re.compile(r"^(@!?U?P[0-6T])\s+")
_REG = re.compile(r"^(R\d+|RZ|UR\d+|URZ|P[0-6T]|UP[0-6T]|B\d+|SRZ|PR|SR_[\w.]+)((?:\.\w+)*)$")
_INT = re.compile(r"^[+-]?(0x[0-9a-fA-F]+|\d+)$")
_FLOAT = re.compile(r"^[+-]?(\d+\.\d*(e[+-]?\d+)?|\d+e[+-]?\d+|INF|QNAN|NAN)$", re.I)


def parse_listing(text: str, file: str = "<listing>", first_line: int = 1) -> dict[str, Section]:
    """Parse a whole listing into its sections, keyed by kernel name.

    ``first_line`` is the line of ``text`` within ``file`` (for listings inline in a case).
    """
    sections: dict[str, Section] = {}
    current: Section | None = None
    for offset, raw in enumerate(text.splitlines()):
        line_no = first_line + offset
        line = raw.split("//", 1)[0] if not raw.lstrip().startswith("/*") else raw
        m = _SECTION.match(line) or _CUOBJ_FUNC.match(line)
        if m:
            current = sections.setdefault(m.group(1), Section(m.group(1)))
            continue
        m = _ADDR.match(line)
        if m:
            if current is None:
                current = sections.setdefault("<anonymous>", Section("<anonymous>"))
            current.instructions.append(_parse_instruction(int(m.group(1), 16), m.group(2), file, line_no))
            continue
        m = _LABEL.match(line)
        if m and m.group(1).startswith(".text.") and (current is None or current.name == "<anonymous>"):
            name = m.group(1)[len(".text."):]     # a listing without its .section line
            current = sections.setdefault(name, Section(name))
        if m and current is not None:
            name = m.group(1)
            next_pc = _next_pc(text.splitlines(), offset + 1)
            current.labels[name] = next_pc
            if not name.startswith(".L") and not name.startswith(".text."):
                current.functions.append(Function(name, next_pc, file, line_no))
    return sections


def _next_pc(lines: list[str], start: int) -> int:
    """The address of the first instruction at or after line index ``start`` (labels bind forward),
    -1 when the section ends first (a label at the end of a kernel binds to nothing)."""
    for line in lines[start:]:
        if _SECTION.match(line) or _CUOBJ_FUNC.match(line):
            break
        m = _ADDR.match(line)
        if m:
            return int(m.group(1), 16)
    return -1


def _parse_instruction(pc: int, body: str, file: str, line: int) -> RawInstruction:
    where = f"{file}:{line}"
    body = _ENCODING.sub("", body).strip()
    body = body.rstrip()
    if body.endswith(";"):
        body = body[:-1].rstrip()
    if not body:
        raise SassSyntaxError(f"{where}: empty instruction at /*{pc:04x}*/")
    guard = None
    m = _GUARD.match(body)
    if m:
        guard = m.group(1)[1:]
        body = body[m.end():]
    parts = body.split(None, 1)
    opcode = parts[0]
    if not re.fullmatch(r"[A-Z][A-Z0-9_]*(\.[A-Z0-9_]+)*", opcode):
        raise SassSyntaxError(f"{where}: malformed opcode {opcode!r} in {body!r}")
    operands = tuple(_parse_operand(t, where, body) for t in _split_operands(parts[1] if len(parts) > 1 else ""))
    text = (f"@{guard} " if guard else "") + body
    return RawInstruction(pc, guard, opcode, operands, text, file, line)


def _split_operands(text: str) -> list[str]:
    """Split on commas outside brackets; a trailing `(label) after a register is its own operand."""
    out, depth, cur = [], 0, ""
    for ch in text:
        if ch in "[(":
            depth += 1
        elif ch in "])":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur.strip())
    split: list[str] = []
    for tok in out:   # RET.REL.NODEC R2 `(kernel) / R2 0x0 (cuobjdump): a register then a target
        m = re.match(r"^(\S+)\s+(`\(.*\)|-?0x[0-9a-fA-F]+)$", tok)
        split.extend([m.group(1), m.group(2)] if m else [tok])
    return split


def _parse_operand(tok: str, where: str, body: str) -> Operand:
    t = tok.strip()
    if t.startswith("`(") and t.endswith(")"):
        return Operand("label", tok, name=t[2:-1])
    neg = inv = ab = False
    if t.startswith("-") and not _INT.match(t) and not _FLOAT.match(t):
        neg, t = True, t[1:]
    if t.startswith("~") or t.startswith("!"):
        inv, t = True, t[1:]
    if t.startswith("|") and t.endswith("|"):
        ab, t = True, t[1:-1]
    if t.startswith("c[") or t.startswith("cx["):
        return _parse_cbank(tok, t, neg, inv, where, body, ab)
    if t.startswith("[") or t.startswith("desc["):
        return _parse_mem(tok, t, where, body)
    m = _REG.match(t)
    if m:
        return _register(tok, m.group(1), tuple(s for s in m.group(2).split(".") if s), neg, inv, ab)
    if _INT.match(t):
        return Operand("imm", tok, value=int(t, 0), neg=neg, inv=inv)
    if _FLOAT.match(t):
        return Operand("fimm", tok, name=t)
    raise SassSyntaxError(f"{where}: malformed operand {tok!r} in {body!r}")


def _register(tok: str, name: str, suffix: tuple[str, ...], neg=False, inv=False, ab=False) -> Operand:
    if name.startswith("SR"):
        kind, value = ("sreg", 0) if name.startswith("SR_") else ("reg", 255)
        if name == "SRZ":
            kind = "reg"
        full = name + "".join("." + s for s in suffix)
        return Operand(kind, tok, name=full if kind == "sreg" else name, value=value, neg=neg, inv=inv, abs=ab)
    if name == "PR":
        return Operand("pr", tok, name=name)
    kind = {"R": "reg", "U": "ureg", "P": "pred", "B": "barrier"}[name[0]]
    if name.startswith("UP"):
        kind = "upred"
    digits = re.sub(r"^\D+", "", name)
    if name in ("RZ", "URZ"):
        value = 255 if name == "RZ" else 63
    elif name in ("PT", "UPT"):
        value = 7
    else:
        value = int(digits)
    return Operand(kind, tok, name=name, value=value, neg=neg, inv=inv, abs=ab,
                   suffix=tuple(s for s in suffix if s != "reuse"))


def _parse_address(inner: str, where: str, body: str) -> tuple[Operand | None, int, tuple[str, ...]]:
    """`R2.64+0x10`, `R2.64+-0x40`, `R7.X4+0x200`, `0x40`, `RZ`, `UR4+0x4` -> (base register, offset, suffix)."""
    inner = inner.replace(" ", "")
    m = re.fullmatch(r"(?:(-?\w+(?:\.\w+)*))?(?:(\+-|[+-])(0x[0-9a-fA-F]+|\d+))?", inner)
    if not m:
        raise SassSyntaxError(f"{where}: malformed address [{inner}] in {body!r}")
    head, sign, off = m.group(1), m.group(2), m.group(3)
    if head and _INT.match(head) and not sign:
        return None, int(head, 0), ()
    offset = int(off, 0) * (-1 if sign in ("-", "+-") else 1) if off else 0
    if not head:
        return None, offset, ()
    rm = _REG.match(head)
    if not rm:
        raise SassSyntaxError(f"{where}: malformed address [{inner}] in {body!r}")
    suffix = tuple(s for s in rm.group(2).split(".") if s and s != "reuse")
    return _register(head, rm.group(1), suffix), offset, suffix


def _parse_mem(tok: str, t: str, where: str, body: str) -> Operand:
    ubase = None
    m = re.fullmatch(r"desc\[(\w+)\]\[(.*)\]", t)
    if m:
        ubase = _register(m.group(1), m.group(1), ())
        t = "[" + m.group(2) + "]"
    m = re.fullmatch(r"\[(.*)\]", t)
    if not m:
        raise SassSyntaxError(f"{where}: malformed address {tok!r} in {body!r}")
    base, offset, suffix = _parse_address(m.group(1), where, body)
    return Operand("mem", tok, base=base, offset=offset, suffix=suffix, uniform_base=ubase)


def _parse_cbank(tok: str, t: str, neg: bool, inv: bool, where: str, body: str, ab: bool = False) -> Operand:
    m = re.fullmatch(r"cx?\[(0x[0-9a-fA-F]+|\d+)\]\[(.*)\]((?:\.\w+)*)", t)
    if not m:
        raise SassSyntaxError(f"{where}: malformed constant {tok!r} in {body!r}")
    base, offset, _ = _parse_address(m.group(2), where, body)
    if base is not None and base.kind not in ("reg", "ureg"):
        raise SassSyntaxError(f"{where}: malformed constant {tok!r} in {body!r}")
    suffix = tuple(s for s in m.group(3).split(".") if s)
    return Operand("cbank", tok, value=int(m.group(1), 0), base=base if base and base.kind == "reg" else None,
                   uniform_base=base if base and base.kind == "ureg" else None,
                   offset=offset, neg=neg, inv=inv, abs=ab, suffix=suffix)

"""Parsed SASS -> text, in nvdisasm's spelling.

:func:`format_instruction` rebuilds an instruction from its parsed fields (guard, opcode, each
operand's kind, value and decorations), never from the text it was parsed from, so that
parse-then-print reproducing the listing checks that the parser kept everything it read.
``.reuse`` flags are cache hints the parser drops; they are not printed.

nvdisasm's conventions followed here: integer immediates and offsets in lower-case hex
(negative ones as ``-0x1``, negative address offsets as ``[R2.64+-0x40]``); float immediates
in decimal (an integral one, ``FADD R0, R0, 1``, is parsed as an integer); ``!`` inverts a
predicate and ``~`` a value; a return or indirect-branch target follows its register after a
space, not a comma (``RET.REL.NODEC R2 `(kernel)``, cuobjdump ``RET.REL.NODEC R4 0x0``);
annotations follow the operands (``STL [R1+0x4], R4 (*"SpillRefill"*)``); a constant read as
binary16 halves (the packed-half instructions, and F2I, F2F, FRND from .F16) has a space
between bank and offset, its select and bars around both (``HADD2 R7, R2,
-|c[0x0] [0x170].H1_H1|``, ``F2I.U32.F16.TRUNC.NTZ R0, c[0x0] [0x168]``), where a register's
select follows its bars (``HADD2 R9, R5, -|R2|.H0_H0``); a constant offset of 0x8000 or more
is negative (``c[0x0][-0x6880]``: byte 0x9780).
"""
from __future__ import annotations

import dataclasses

from ..isa import ops
from .listing import BRANCH_TARGETS, Operand, RawInstruction, annotation_kind

PRED_KINDS = ("pred", "upred")
HALF_OPS = frozenset({"HADD2", "HMUL2", "HFMA2", "HSETP2", "HSET2", "HMNMX2"})
HALF_SOURCE_OPS = frozenset({"F2I", "F2F", "FRND"})   # their source type is the last float type
FLOAT_TYPES = ("F16", "BF16", "F32", "F64")
REGISTER_KINDS = ("reg", "ureg", "pred", "upred", "barrier", "sreg", "pr", "sb")


def hex_int(value: int) -> str:
    """``0x1f``, ``-0x1``: how nvdisasm writes an integer."""
    return f"-{-value:#x}" if value < 0 else f"{value:#x}"


def _register(o: Operand) -> str:
    return o.name + "".join("." + s for s in o.suffix)


def _address(base: Operand | None, offset: int, index: Operand | None = None) -> str:
    """The inside of ``[...]``: ``R2.64+0x10``, ``R2.64+-0x40``, ``0x40``, ``RZ``,
    ``R2.X4+R3``, ``R2.64+UR4+0x10``."""
    if base is None:
        return hex_int(offset)
    text = _register(base) + ("+" + _register(index) if index is not None else "")
    if offset:
        text += "+-" + hex_int(-offset) if offset < 0 else "+" + hex_int(offset)
    return text


def _mem(o: Operand) -> str:
    desc = f"desc[{_register(o.uniform_base)}]" if o.uniform_base is not None else ""
    return f"{desc}[{_address(o.base, o.offset, o.index)}]"


def half_constants(opcode: str) -> bool:
    """Whether nvdisasm prints a constant operand of ``opcode`` (the full mnemonic) as halves,
    ``c[0x0] [0x170]``: one of the packed-half instructions, or a conversion from .F16."""
    base, *mods = opcode.split(".")
    if base in HALF_OPS:
        return True
    types = [m for m in mods if m in FLOAT_TYPES]
    return base in HALF_SOURCE_OPS and types[-1:] == ["F16"]


def _cbank(o: Operand, halves: bool = False) -> str:
    base = o.base if o.base is not None else o.uniform_base
    gap = " " if halves else ""
    offset = o.offset - 0x10000 if o.offset >= 0x8000 else o.offset      # the 16-bit field, signed
    return f"c[{o.value:#x}]{gap}[{_address(base, offset)}]" + "".join("." + s for s in o.suffix)


def _decorate(o: Operand, body: str, suffix: str = "") -> str:
    """Bars, inversion and negation around ``body``; a register's suffix follows the bars
    (``-|R3|.H1``)."""
    if o.abs:
        body = f"|{body}|"
    body += suffix
    if o.inv:
        body = ("!" if o.kind in PRED_KINDS else "~") + body
    if o.neg:
        body = "-" + body
    return body


def format_operand(o: Operand, opcode: str = "") -> str:
    """One operand as nvdisasm prints it; ``opcode`` (the mnemonic, modifiers optional)
    decides the spelling of an immediate (hex, or decimal in a float instruction) and of a
    constant (:func:`half_constants`)."""
    kind = o.kind
    if kind == "label":
        return f"`({o.name})"
    if kind == "imm":
        spec = ops.spelling(opcode.split(".", 1)[0])
        body = str(o.value) if spec and spec.float_imm else hex_int(o.value)
    elif kind in ("fimm", "texdim", "list"):
        body = o.name
    elif kind == "mem":
        body = _mem(o)
    elif kind == "cbank":
        body = _cbank(o, half_constants(opcode))
    elif kind in REGISTER_KINDS:
        return _decorate(o, o.name, "".join("." + s for s in o.suffix))
    else:
        raise ValueError(f"cannot print an operand of kind {kind!r}")
    return _decorate(o, body)


def format_instruction(raw: RawInstruction) -> str:
    """``@!P0 IADD3 R2, -R10, 0x27, RZ``: the instruction without address, ``;`` or ``.reuse``,
    then its annotations (``BRX R2 -0x130 (*"BRANCH_TARGETS .L_x_1,.L_x_2"*)``)."""
    base = raw.opcode.split(".", 1)[0]
    spec = ops.spelling(base)
    text = (f"@{raw.guard} " if raw.guard else "") + raw.opcode
    parts: list[str] = []
    for k, o in enumerate(raw.operands):
        printed = format_operand(o, raw.opcode)
        if o.kind == "fimm" and o.name.lstrip("+-") in ("INF", "QNAN", "NAN") and k < len(raw.operands) - 1:
            printed += " "           # nvdisasm prints `|R0|, +INF , PT`, `R15, -QNAN , P5`
        spaced = (spec is not None and spec.spaced_target and k > 0 and o.kind in ("label", "imm")
                  and raw.operands[k - 1].kind in ("reg", "ureg"))
        if spaced:
            parts[-1] += " " + printed
        else:
            parts.append(printed)
    text += " " + ", ".join(parts) if parts else ""
    return "".join([text, *(f' (*"{_annotation(raw, a)}"*)' for a in raw.annotations)])


def _annotation(raw: RawInstruction, annotation: str) -> str:
    """An annotation's text; BRANCH_TARGETS rebuilt from the targets parsed out of it."""
    if annotation_kind(annotation) == BRANCH_TARGETS:
        return f"{BRANCH_TARGETS} " + ",".join(raw.branch_targets)
    return annotation


def spell_instructions(section, base: int = 0, end: int | None = None) -> list[tuple[int, str]]:
    """(pc, spelling) of the instructions of a parsed listing ``section`` from pc ``base`` up
    to ``end``, in the one form a listing and nvdisasm's disassembly of raw words share:
    labels as the addresses they stand for, and none of the annotations nvdisasm derives from
    a cubin's tables (a BRX's targets). pcs count from ``base``: in a raw disassembly of
    several kernels one after another nvdisasm prints pc-relative targets as addresses from
    the start of the file, so those come back relative to ``base`` too."""
    out = []
    for inst in section.instructions:
        if inst.pc < base or (end is not None and inst.pc >= end):
            continue
        relative = ops.spelling(inst.opcode.split(".", 1)[0]).target in ("pc", "offset") and ".ABS" not in inst.opcode
        operands = []
        for o in inst.operands:
            if o.kind == "label" and o.name in section.labels:
                at = section.labels[o.name]
                o = dataclasses.replace(o, kind="imm", text=f"{at:#x}", value=at)
            elif relative and o.kind == "imm" and base:
                o = dataclasses.replace(o, text=f"{o.value - base:#x}", value=o.value - base)
            operands.append(o)
        out.append((inst.pc - base, format_instruction(dataclasses.replace(inst, operands=tuple(operands), annotations=()))))
    return out


__all__ = ["format_instruction", "format_operand", "half_constants", "hex_int", "spell_instructions"]

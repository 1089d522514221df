"""An instruction's *form* and its field values: what the encoding tables are keyed by, and what
fills their fields.

The form is the opcode with its modifiers and the shape of each operand, with every number left
out: ``IADD3 R, R, I, R``, ``LDG.E R, [R.64+I]``, ``ISETP.NE.AND P, P, R, c[I][I], P``,
``@UP BRA L``. Register suffixes (``.64``, ``.H1``), special registers (``SR_TID.X``), texture
dimensions and the parts of an address are shape; register numbers, predicates, immediates,
constant banks and offsets, branch targets and the guard are fields, each a :class:`Number`.
An address always has an offset field (``[R2.64]`` is ``[R2.64+0x0]``), so an offset of zero is
no form of its own, and a lone RZ base is no register (``[RZ]`` is ``[0x0]``: nvdisasm prints
``[RZ]`` and ``[0x8]`` for the same base; a URZ base it prints, ``c[0x0][URZ+0x16c]``, is
another encoding than ``c[0x0][0x16c]``). Decorations (``-R``, ``|R|``, ``~R``, ``!P``) are
one-bit fields named ``<operand>.neg``, ``.abs``, ``.not``; the guard is fields ``g`` and
``g.not`` (no guard: PT). A global memory access also names, unprinted, the uniform registers
holding the memory descriptor: field ``~<operand>.desc``, inferred from the kernel's earlier
instructions (:class:`Context`).

A number can be read several ways, and which one an instruction's field holds is learned
(:mod:`.fit`): an integer immediate as itself or, in a float instruction that prints an
integral value (``FADD R0, R0, 1``), as the float32, the high half of a float64, or a float16
of it; a branch target as an offset from the next instruction or as an address.
"""
from __future__ import annotations

import math
import re
import struct
from dataclasses import dataclass, replace

from warpboard.translator import ANONYMOUS, SassSyntaxError, parse_listing

PT = 7
IMPLICIT = "~"                  # the first letter of a field nvdisasm does not print
DESCRIPTOR_OFFSET = 0x118       # c[0x0][0x118]: the global memory descriptor
RZ = 255
REGISTER_TOKENS = {"reg": "R", "ureg": "UR", "pred": "P", "upred": "UP", "barrier": "B", "sb": "SB"}
NUMBER_TRANSFORMS = ("int", "f32", "f64", "f16")
TARGET_TRANSFORMS = ("rel", "abs")


@dataclass(frozen=True)
class Number:
    """A field's value as written: an integer (``int``: registers, flags, offsets; ``imm``: an
    integer immediate), a float immediate (``fimm``: its float32 bits and its number) or a
    branch target (``target``: an address in the kernel)."""
    kind: str
    value: int
    fvalue: float = 0.0

    def transforms(self) -> tuple[str, ...]:
        if self.kind == "target":
            return TARGET_TRANSFORMS
        if self.kind == "int":
            return ("int",)
        return NUMBER_TRANSFORMS if self.kind == "imm" else NUMBER_TRANSFORMS[1:]

    def raw(self, transform: str, pc: int) -> int | None:
        """The integer a field holds under ``transform``; None where it does not apply."""
        kind = self.kind
        if transform == "int":
            return self.value if kind in ("int", "imm") else None
        if kind == "target":
            return self.value - pc - 16 if transform == "rel" else self.value if transform == "abs" else None
        if kind == "int" or transform in TARGET_TRANSFORMS:
            return None
        number = float(self.value) if kind == "imm" else self.fvalue
        if transform == "f32":
            return self.value if kind == "fimm" else _f32(number)
        return _f64_high(number, self.value) if transform == "f64" else _f16(number)


def _f32(x: float) -> int:
    try:
        return struct.unpack("<I", struct.pack("<f", x))[0]
    except OverflowError:
        return 0x7F800000 | (x < 0) << 31


def _f64_high(x: float, bits32: int) -> int:
    if math.isnan(x):
        return bits32                       # QNAN as printed: the sign and all-ones payload
    return struct.unpack("<Q", struct.pack("<d", x))[0] >> 32


def _f16(x: float) -> int:
    if math.isnan(x):
        return 0x7FFF | (math.copysign(1, x) < 0) << 15
    try:
        return struct.unpack("<H", struct.pack("<e", x))[0]
    except OverflowError:
        return 0x7C00 | (x < 0) << 15


@dataclass(frozen=True)
class Shape:
    """An instruction's form (the tables' key) and its fields by name."""
    key: str
    fields: dict[str, Number]


def _register(o, i: str, fields: dict) -> str:
    fields[i] = Number("int", o.value)
    return REGISTER_TOKENS[o.kind] + "".join("." + s for s in o.suffix)


def _flags(o, i: str, fields: dict) -> None:
    for flag, on in (("neg", o.neg), ("not", o.inv), ("abs", o.abs)):
        fields[f"{i}.{flag}"] = Number("int", int(on))


def _address(o, i: str, fields: dict, always_offset: bool) -> str:
    """``R.64+UR+I``: base and index register shapes, then the offset."""
    parts = []
    for role, reg in (("base", o.base), ("index", o.index)):
        if reg is not None and not (role == "base" and o.index is None and reg.kind == "reg" and reg.value == RZ):
            fields[f"{i}.{role}"] = Number("int", reg.value)
            parts.append(REGISTER_TOKENS[reg.kind] + "".join("." + s for s in reg.suffix))
    if always_offset or o.offset or not parts:
        fields[f"{i}.off"] = Number("int", o.offset)
        parts.append("I")
    return "+".join(parts)


def operand_token(o, i: str, fields: dict, targets, as_target: bool, context: dict) -> str:
    """One operand's shape; its numbers go into ``fields`` under names starting with ``i``."""
    kind = o.kind
    if kind in REGISTER_TOKENS:
        _flags(o, i, fields)
        return _register(o, i, fields)
    if kind == "imm" and as_target:
        fields[i] = Number("target", o.value)
        return "L"
    if kind in ("imm", "fimm"):
        _flags(o, i, fields)
        fields[i] = Number(kind, o.value, o.fvalue)
        return "I"
    if kind == "label":
        fields[i] = Number("target", targets(o.name))
        return "L"
    if kind == "mem":
        desc = ""
        if o.uniform_base is not None:
            fields[f"{i}.desc"] = Number("int", o.uniform_base.value)
            desc = "desc[UR]"
        elif context.get("desc") is not None:
            fields[f"{IMPLICIT}{i}.desc"] = Number("int", context["desc"])
        return f"{desc}[{_address(o, i, fields, True)}]"
    if kind == "cbank":
        _flags(o, i, fields)
        fields[f"{i}.bank"] = Number("int", o.value)
        base = o.base if o.base is not None else o.uniform_base
        inner = replace(o, base=base, index=None)
        return "c[I][" + _address(inner, i, fields, base is not None) + "]" + "".join("." + s for s in o.suffix)
    if kind == "list":
        fields[i] = Number("int", o.value)
        return "{}"
    if kind == "sreg":
        _flags(o, i, fields)
        return o.name
    return o.name or o.text            # PR, texture dimensions


def shape(raw, targets=None, label_slots: frozenset[int] = frozenset(), context: dict | None = None) -> Shape:
    """The form and fields of a parsed instruction (a RawInstruction). ``targets`` maps a label
    to its address (a callable; by default every label is 0); ``label_slots`` are operands that
    nvdisasm printed as addresses where the form has a label (``BRA 0x170`` from raw words);
    ``context`` holds what earlier instructions set that this one's word holds unprinted
    (:class:`Context`)."""
    context = context or {}
    targets = targets or (lambda name: 0)
    fields: dict[str, Number] = {}
    prefix = ""
    guard = raw.guard or "PT"
    negated = guard.startswith("!")
    name = guard.lstrip("!")
    if name.startswith("UP"):
        prefix = "@UP "
    fields["g"] = Number("int", PT if name in ("PT", "UPT") else int(name.lstrip("UP")))
    fields["g.not"] = Number("int", int(negated))
    tokens = [operand_token(o, str(k), fields, targets, k in label_slots, context)
              for k, o in enumerate(raw.operands)]
    key = prefix + raw.opcode + (" " + ", ".join(tokens) if tokens else "")
    return Shape(key, fields)


class Context(dict):
    """What a kernel's earlier instructions say about fields nvdisasm does not print. An
    address without ``desc[UR..]`` still names the uniform register pair holding the global
    memory descriptor: the one the kernel last loaded from ``c[0x0][0x118]``
    (``ULDC.64 UR4, c[0x0][0x118]``). Such a field is ``~<operand>.desc``; whether a form's word
    holds it, and where, is learned from the samples like any field nvdisasm does not move."""

    def follow(self, raw) -> None:
        """Take note of ``raw`` (the instructions are followed in address order)."""
        if raw.opcode == "ULDC.64" and len(raw.operands) == 2:
            dst, src = raw.operands
            if src.kind == "cbank" and src.value == 0 and src.offset == DESCRIPTOR_OFFSET and src.base is None \
                    and src.uniform_base is None:
                self["desc"] = dst.value


def key_tokens(key: str) -> tuple[str, str, list[str]]:
    """(guard prefix, opcode, operand tokens) of a form key."""
    prefix = "@UP " if key.startswith("@UP ") else ""
    rest = key[len(prefix):]
    opcode, _, operands = rest.partition(" ")
    return prefix, opcode, operands.split(", ") if operands else []


def label_slots(key: str) -> frozenset[int]:
    """The operands of a form that are branch targets."""
    return frozenset(k for k, t in enumerate(key_tokens(key)[2]) if t == "L")


_BIG = re.compile(r"(?<![\w.])-?0x[0-9a-fA-F]{9,}")
_SENTINEL = 0x7EAD0000


def parse_texts(texts: list[str | None], pcs: list[int] | None = None) -> list:
    """Each instruction text (``@P0 BRA 0x170``) parsed alone (a RawInstruction), None where it
    is absent or not SASS. Integers wider than 32 bits, which nvdisasm prints for branch
    offsets and the project's parser refuses, are kept."""
    lines, bigs = [], []
    for k, text in enumerate(texts):
        if text is None:
            continue
        found = _BIG.findall(text)
        if found:
            bigs.append((k, [int(f, 16) for f in found]))
            it = iter(range(len(found)))
            text = _BIG.sub(lambda m: hex(_SENTINEL + next(it)), text)
        pc = pcs[k] if pcs else 16 * k
        lines.append(f"\t.section\t.text.k{k},\"ax\",@progbits\n        /*{pc:04x}*/ {text} ;")
    listing = parse_listing("\n".join(lines), "<nvdisasm>")
    out: list = [None] * len(texts)
    for name in listing:
        if name == ANONYMOUS:
            continue
        try:
            section = listing[name]
        except SassSyntaxError:
            continue
        out[int(name[1:])] = section.instructions[0] if section.instructions else None
    for k, values in bigs:
        if out[k] is not None:
            ops = tuple(replace(o, value=values[o.value - _SENTINEL])
                        if o.kind == "imm" and 0 <= o.value - _SENTINEL < len(values) else o
                        for o in out[k].operands)
            out[k] = replace(out[k], operands=ops)
    return out


__all__ = ["Context", "IMPLICIT", "Number", "PT", "Shape", "key_tokens", "label_slots", "operand_token", "parse_texts", "shape"]

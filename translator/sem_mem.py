"""Semantics of loads, stores and atomics on global and shared memory."""
from __future__ import annotations

from dataclasses import replace

from . import regs
from .ctx import Ctx
from .sem_alu import PRED_KINDS, unsupported

WIDTHS = {"U8": (1, False), "S8": (1, True), "U16": (2, False), "S16": (2, True),
          "64": (8, False), "128": (16, False)}
ATOMIC_NAMES = {"ADD": "add", "MIN": "min", "MAX": "max", "AND": "and", "OR": "or", "XOR": "xor",
                "EXCH": "exch", "CAS": "cas", "INC": "inc", "DEC": "dec"}


def width(i) -> tuple[int, bool]:
    for mod in i.mods:
        if mod in WIDTHS:
            return WIDTHS[mod]
    return 4, False


def address(x: Ctx, i, o, space: str):
    """The address an operand like ``[R2.64+0x10]`` or ``[R7.X4+0x200]`` names."""
    if o.kind != "mem":
        raise unsupported(i, f"expected an address, got {o.text}")
    if o.index is not None and not regs.is_zero(o.index):
        raise unsupported(i, f"address with an index register {o.text}")
    base = o.base
    pair = space == "global" and (base is None or "64" in o.suffix or "E" in i.mods)
    if base is None and o.uniform_base is None:
        return x.k64(o.offset & (2**64 - 1)) if pair else x.k32(o.offset & 0xFFFFFFFF)
    reg = base if base is not None else o.uniform_base
    if pair:
        addr = x.read64(reg)
        return x.add64(addr, x.k64(o.offset & (2**64 - 1)))
    value = x.read(reg)
    if "X4" in o.suffix or "X8" in o.suffix or "X16" in o.suffix:
        scale = {"X4": 2, "X8": 3, "X16": 4}[next(s for s in o.suffix if s.startswith("X"))]
        value = x.shl(value, x.k32(scale))
    value = x.add(value, x.k32(o.offset & 0xFFFFFFFF))
    return x.zext(value) if space == "global" else value


def _write_words(x: Ctx, d, words):
    if len(words) == 1:
        x.write(d, words[0])
        return
    for k, w in enumerate(words):
        x.write(replace(d, value=regs.pair_word(d, k)), w)


def _read_words(x: Ctx, s, n):
    if n == 1:
        return [x.read(s)]
    return [x.read(replace(s, value=regs.pair_word(s, k))) for k in range(n)]


def load(space: str):
    def sem(x: Ctx, i):
        nbytes, signed = width(i)
        d, src = i.ops[0], i.ops[1]
        words = x.load(space, address(x, i, src, space), nbytes, signed)
        _write_words(x, d, words)
    sem.__name__ = f"load_{space}"
    return sem


def store(space: str):
    def sem(x: Ctx, i):
        nbytes, _ = width(i)
        dst, src = i.ops[0], i.ops[1]
        x.store(space, address(x, i, dst, space), nbytes, _read_words(x, src, max(1, nbytes // 4)))
    sem.__name__ = f"store_{space}"
    return sem


def _atomic_op(i) -> str:
    names = [ATOMIC_NAMES[m] for m in i.mods if m in ATOMIC_NAMES]
    if "POPC" in i.mods and "INC" in i.mods:
        raise unsupported(i, "POPC.INC")
    if len(names) != 1:
        raise unsupported(i, "no single atomic operation")
    return names[0]


def atomic(space: str, returns: bool):
    """ATOMS/ATOMG/ATOM (returning the old value) and RED (not returning)."""
    def sem(x: Ctx, i):
        ops = [o for o in i.ops if o.kind not in PRED_KINDS]
        op = _atomic_op(i)
        if "64" in i.mods or "U64" in i.mods or "F32" in i.mods or "F16x2" in i.mods:
            raise unsupported(i, "only 32-bit integer atomics")
        signed = "S32" in i.mods
        if returns:
            d, addr_op, *vals = ops
        else:
            d, (addr_op, *vals) = None, ops
        addr = address(x, i, addr_op, space)
        if op == "cas":
            old = x.atomic(space, op, addr, x.read(vals[1]), x.read(vals[0]), signed)
        else:
            old = x.atomic(space, op, addr, x.read(vals[0]), None, signed)
        if d is not None:
            x.write(d, old)
    sem.__name__ = f"atomic_{space}"
    return sem

"""The special registers that S2R, S2UR and CS2R read: each one's source as data, and the lane
masks written once, so the interpreter (Python integers) and the emitter (SPIR-V ids) compute
every register the same way. A name not here is UNSUPPORTED, naming it.

Sources:
- ``("tid", k)``, ``("ctaid", k)``: component k of the thread's index in its block, of the
  block's index in the grid;
- ``("lane", 0)``: the lane's index in its warp;
- ``("mask", rel)``: the lanes of the warp that stand ``rel`` to this one (``eq``, ``lt``, ``le``,
  ``gt``, ``ge``), see :func:`lane_mask`;
- ``("clock", 0)``: the thread's instruction counter (``clock()`` and ``%globaltimer`` read it:
  translator/README.md, "Clock reads"); ``("zero", 0)``: their high words, always 0.
"""
from __future__ import annotations

from typing import Callable

SPECIAL: dict[str, tuple[str, int | str]] = {
    "SR_TID.X": ("tid", 0), "SR_TID.Y": ("tid", 1), "SR_TID.Z": ("tid", 2),
    "SR_CTAID.X": ("ctaid", 0), "SR_CTAID.Y": ("ctaid", 1), "SR_CTAID.Z": ("ctaid", 2),
    "SR_LANEID": ("lane", 0),
    "SR_EQMASK": ("mask", "eq"), "SR_LTMASK": ("mask", "lt"), "SR_LEMASK": ("mask", "le"),
    "SR_GTMASK": ("mask", "gt"), "SR_GEMASK": ("mask", "ge"),
    "SR_CLOCKLO": ("clock", 0), "SR_GLOBALTIMERLO": ("clock", 0),
    "SR_CLOCKHI": ("zero", 0), "SR_GLOBALTIMERHI": ("zero", 0),
}

CLOCK_LOW = tuple(n for n, (src, _) in SPECIAL.items() if src == "clock")
CLOCK_REGISTERS = tuple(n for n, (src, _) in SPECIAL.items() if src in ("clock", "zero"))


def source(name: str) -> tuple[str, int | str] | None:
    """Where a special register's value comes from, or None for one the table lacks."""
    return SPECIAL.get(name)


def lane_mask(rel: str, bit, minus_one: Callable, bit_or: Callable, bit_not: Callable):
    """SR_<rel>MASK from ``bit`` (1 << lane), in the caller's words: ``minus_one(x)`` is
    x - 1, ``bit_or`` and ``bit_not`` are | and ~ on 32-bit words."""
    if rel == "eq":
        return bit
    if rel == "lt":
        return minus_one(bit)
    if rel == "le":
        return bit_or(bit, minus_one(bit))
    if rel == "gt":
        return bit_not(bit_or(bit, minus_one(bit)))
    assert rel == "ge", rel
    return bit_not(minus_one(bit))


def reads_clock(insts) -> bool:
    """Whether a program reads the clock. ``clock()`` is defined here as a per-thread counter,
    the same on both back ends: SR_CLOCKLO is the number of instructions the thread has run
    before this one (a waiting instruction, BSYNC/WARPSYNC/BAR, counts 0: how often a thread
    retries it depends on the schedule), modulo 2^32; SR_CLOCKHI is 0. The global timer
    (``%globaltimer``, nanoseconds on the chip) reads the same counter: a time that moves
    only as the thread runs, so a spin-wait with a timeout ends after as many instructions."""
    return any(o.kind == "sreg" and o.name in CLOCK_REGISTERS for i in insts for o in i.ops)

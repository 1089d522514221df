"""Compare the words a run left in its buffers with the expected ones, naming threads.

A buffer compares exactly unless its case declares a tolerance (``compare = "f32-ulp:N"``):
then two finite binary32 words N units in the last place apart or closer are equal (the two
zeros are 0 ulp apart), a NaN matches any NaN and an infinity only itself. ``"f32-ulp:N,abs:2^-K"``
also lets two finite words within 2^-K of each other pass: the bound PTX gives for
``sin.approx``, ``cos.approx`` and ``lg2.approx`` is absolute, and near their zeros a few
units of absolute error are millions of ulp. The cell's message says when a tolerance let a
word pass.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field

from ..case.model import Case
from .results import Mismatch

MAX_LISTED = 64
EXP_MASK, MAG_MASK = 0x7F800000, 0x7FFFFFFF


def tolerance(compare: str) -> int | None:
    """The ulp a buffer's ``compare`` allows; None for exact comparison."""
    return int(compare.split(":", 1)[1].split(",")[0]) if compare.startswith("f32-ulp:") else None


def abs_tolerance(compare: str) -> float:
    """The absolute difference a buffer's ``compare`` allows besides its ulp (0: none)."""
    _, _, bound = compare.partition(",abs:2^-")
    return 2.0 ** -int(bound) if bound else 0.0


def _value(w: int) -> float:
    return struct.unpack("<f", struct.pack("<I", w))[0]


def _ordered(w: int) -> int:
    """A binary32 word as an integer ordered like its value (both zeros give 0)."""
    return -(w & MAG_MASK) if w >> 31 else w


def f32_ulps(a: int, b: int) -> int | None:
    """How many binary32 steps apart two finite words are; None when either is not finite."""
    if (a & EXP_MASK) == EXP_MASK or (b & EXP_MASK) == EXP_MASK:
        return None
    return abs(_ordered(a) - _ordered(b))


def within(ulp: int, want: int, have: int, absolute: float = 0.0) -> bool:
    """Whether ``have`` passes for ``want`` under a tolerance of ``ulp`` (or, for finite words,
    an absolute difference of at most ``absolute``)."""
    apart = f32_ulps(want, have)
    if apart is not None:
        return apart <= ulp or abs(_value(want) - _value(have)) <= absolute
    is_nan = [(w & MAG_MASK) > EXP_MASK for w in (want, have)]
    return is_nan[0] and is_nan[1] or want == have


@dataclass
class Comparison:
    """What the buffers' comparison found: the first MAX_LISTED mismatches, their total, and
    per buffer the words that passed only by its tolerance (name -> (count, ulp allowed,
    largest ulp seen))."""
    listed: list[Mismatch] = field(default_factory=list)
    total: int = 0
    tolerated: dict[str, tuple[int, int, int]] = field(default_factory=dict)

    def summary(self) -> str:
        notes = [f"{name}: {count} word{'s' * (count != 1)} within {ulp} ulp (at most {worst} apart)"
                 for name, (count, ulp, worst) in self.tolerated.items()]
        if self.total:
            head = "; ".join(m.describe() for m in self.listed[:3])
            more = f" (+{self.total - 3} more)" if self.total > 3 else ""
            notes.insert(0, f"{self.total} words differ: {head}{more}")
        return "; ".join(notes)


def compare(case: Case, buffers: list[bytes]) -> Comparison:
    """Every checked buffer against its expected words. A buffer with one word per thread
    names the thread, its warp and lane for each word."""
    out = Comparison()
    per_block = case.threads_per_block
    for spec, data in zip(case.buffers, buffers):
        if spec.expected is None:
            continue
        got = struct.unpack(f"<{spec.words}I", data[:spec.words * 4])
        per_thread = spec.words == case.total_threads
        ulp, absolute = tolerance(spec.compare), abs_tolerance(spec.compare)
        passed, worst = 0, 0
        for index, (want, have) in enumerate(zip(spec.expected, got)):
            if want == have:
                continue
            if ulp is not None and within(ulp, want, have, absolute):
                passed, worst = passed + 1, max(worst, f32_ulps(want, have) or 0)
                continue
            out.total += 1
            if len(out.listed) < MAX_LISTED:
                m = Mismatch(spec.name, index, want, have)
                if per_thread:
                    block, local = divmod(index, per_block)
                    m.thread = index
                    m.warp = block * case.warps_per_block + local // 32
                    m.lane = local % 32
                out.listed.append(m)
        if passed:
            out.tolerated[spec.name] = (passed, ulp, worst)
    return out


def mismatches(case: Case, buffers: list[bytes]) -> tuple[list[Mismatch], int]:
    """(the first MAX_LISTED mismatches, the total count) over every checked buffer."""
    found = compare(case, buffers)
    return found.listed, found.total


def summary(listed: list[Mismatch], total: int) -> str:
    return Comparison(listed, total).summary()

"""The registers that hold a constant: RZ and URZ read 0, PT and UPT read true, and writes to
any of them vanish. Their numbers are named here once for the decoder and both back ends.
"""
from __future__ import annotations

RZ, URZ = 255, 63                 # zero registers (SRZ, the zero special register, decodes as RZ)
PT = 7                            # the true predicate, in both predicate files (PT, UPT)
ZERO = {"reg": RZ, "ureg": URZ}   # register kind -> its zero register
CONSTANT = {"RZ": ("reg", RZ), "SRZ": ("reg", RZ), "URZ": ("ureg", URZ), "PT": ("pred", PT), "UPT": ("upred", PT)}


def is_zero(o) -> bool:
    """Whether an operand is RZ or URZ."""
    return ZERO.get(o.kind) == o.value


def is_true(o) -> bool:
    """Whether an operand is the predicate PT or UPT (before its negation)."""
    return o.kind in ("pred", "upred") and o.value == PT


def writable(o) -> bool:
    """Whether an operand is a general or uniform register that keeps what is written (not RZ/URZ)."""
    return o.kind in ZERO and o.value != ZERO[o.kind]


def pair_word(o, k: int) -> int:
    """The register number of word ``k`` of the register group that ``o`` starts (RZ stays RZ)."""
    return o.value if is_zero(o) else o.value + k

"""What every strategy's SHFL computes the same way: the source lane and whether it is in range."""
from __future__ import annotations


def shfl_source(x, mode: str, lane, b, c):
    """(source lane, in range) of ``SHFL.mode`` for ``lane`` with lane operand ``b`` and
    clamp/segment word ``c`` (bits 12:8 the segment mask, 4:0 the clamp): out of range, the
    source is the lane itself and the value stays its own."""
    b = x.and_(b, x.k32(31))
    seg, clamp = x.and_(x.shr(c, x.k32(8)), x.k32(31)), x.and_(c, x.k32(31))
    max_lane = x.or_(x.and_(lane, seg), x.and_(clamp, x.not_(seg)))
    if mode == "up":
        j = x.sub(lane, b)
        ok = x.cmp("ge", j, max_lane, True)
    else:
        j = {"down": lambda: x.add(lane, b), "bfly": lambda: x.xor(lane, b),
             "idx": lambda: x.or_(x.and_(lane, seg), x.and_(b, x.not_(seg)))}[mode]()
        ok = x.cmp("le", j, max_lane, False)
    return x.sel(ok, x.and_(j, x.k32(31)), lane), ok

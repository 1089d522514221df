"""What the strategies' warps share: SHFL's source lane, MATCH.ALL from the equal lanes, and
the waits of a warp whose lanes never wait for each other."""
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


def match_all_of(x, equal, here):
    """MATCH.ALL from the lanes whose value equals this one and the lanes present: all of
    them (and true) when every present lane holds the same value, else 0 (and false)."""
    ok = x.cmp("eq", equal, here, False)
    return x.sel(ok, here, x.k32(0)), ok


class NoWaits:
    """The waits and regions of a warp whose lanes never wait for each other (free mode, or
    reconvergence left to the device): each does nothing."""

    def on_exit(self, cond): pass
    def segments_block(self, block): return False
    def yield_(self, x): pass
    def bssy(self, x, barrier): pass
    def bsync(self, x, barrier): pass
    def brk(self, x, barrier, cond=None): pass
    def warpsync(self, x, mask): pass

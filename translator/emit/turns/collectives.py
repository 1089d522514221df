"""Turns mode's warp collectives (VOTE, SHFL, MATCH, REDUX and the active mask): values go
through workgroup memory at the shader's one exchange site (:mod:`translator.emit.turns.exchange`,
one barrier each), or, where the device's subgroups are warps, through subgroup operations
inline with none. A mixin of :class:`translator.emit.turns.warp.TurnsWarp`.
"""
from __future__ import annotations

from ... import abi
from ...spirv.enums import GroupOperation, Scope
from ..lanes import match_all_of, shfl_source


class Collectives:
    """VOTE/ballot, SHFL, MATCH and REDUX for the threads of one turn."""

    def active(self, x):
        if x._active is None:
            if x.en == x.out.active:
                x._active = self.participants(x)
            elif self.e.warp_subgroups:
                x._active = self._sg_ballot(x.en)
            else:
                x._active = self._swap(x, x.en).act
        return x._active

    def ballot(self, x, p):
        known = self.e.const_value.get(p)
        if known is True:          # __activemask(): no values to swap
            return self.active(x)
        if known is False:
            return x.k32(0)
        if self.e.warp_subgroups:
            self.active(x)
            return self._sg_ballot(x.band(x.en, p))
        swap = self._swap(x, x.en, pred=p)
        x._active = swap.act
        return swap.bal

    # ---------------------------------------------------------------- subgroups that are warps
    def _check_warps(self) -> None:
        """The device's subgroup must be this warp: lane = index & 31, and the subgroup's
        invocations exactly the warp's lanes (32, or the block's fewer: a subgroup wider than
        the block's one warp holds just that warp). A thread of a subgroup that is not says
        so (NOT_WARPS) and leaves; nothing hangs."""
        e, f, m, u32, bool_ = self.e, self.f, self.m, self.m.u32(), self.m.bool()
        lane = f.load(u32, m.builtin("SubgroupLocalInvocationId", u32))
        same = f.op("GroupNonUniformAll", bool_, e.k(Scope.Subgroup), f.op("IEqual", bool_, lane, e.lane))
        present = f.op("GroupNonUniformBallot", self.v4, e.k(Scope.Subgroup), m.const_bool(True))
        want = f.op("CompositeConstruct", self.v4, self.lanes, e.k(0), e.k(0), e.k(0))
        whole = f.op("All", bool_, f.op("IEqual", m.vec(bool_, 4), present, want))
        bad = f.op("LogicalNot", bool_, f.op("LogicalAnd", bool_, whole, same))
        e.record_status(e.k(abi.NOT_WARPS), bad, e.k(0))
        f.store(e.exited, bad)

    def _sg_ballot(self, cond):
        """The lanes of this warp (= subgroup) where ``cond`` holds."""
        f, u32 = self.f, self.m.u32()
        votes = f.op("GroupNonUniformBallot", self.v4, self.e.k(Scope.Subgroup), cond)
        return f.op("CompositeExtract", u32, votes, 0)

    def _sg_lane_value(self, x, value, lane):
        """``value`` as lane ``lane`` (an id) of this warp holds it; 0 where no such lane exists."""
        got = self.f.op("GroupNonUniformShuffle", self.m.u32(), self.e.k(Scope.Subgroup), value, lane)
        exists = x.cmp("ne", x.and_(x.shr(self.lanes, lane), x.k32(1)), x.k32(0), False)
        return x.sel(exists, got, x.k32(0))

    def shfl(self, x, mode, value, b, c):
        """A source lane in range that is not at this SHFL gives 0, as on the chip."""
        e = self.e
        source, ok = shfl_source(x, mode, e.lane, b, c)
        if e.warp_subgroups:
            here, got = self._sg_ballot(x.en), self._sg_lane_value(x, value, source)
        else:
            swap = self._swap(x, x.en, value=value, src=source)
            here, got = swap.act, swap.got
        present = x.cmp("ne", x.and_(x.shr(here, source), x.k32(1)), x.k32(0), False)
        return x.sel(ok, x.sel(present, got, x.k32(0)), value), ok

    def _equal_lanes(self, x, value):
        """(lanes of this warp in the rendezvous whose value equals this thread's, those lanes)."""
        if self.e.warp_subgroups:
            act, equal = self._sg_ballot(x.en), x.k32(0)
            for lane in range(min(32, self.e.nthreads)):     # lanes past the subgroup's size are undefined
                theirs = self.f.op("GroupNonUniformBroadcast", self.m.u32(), self.e.k(Scope.Subgroup), value, x.k32(lane))
                equal = x.or_(equal, x.sel(x.cmp("eq", theirs, value, False), x.k32(1 << lane), x.k32(0)))
            return x.and_(equal, act), act
        swap = self._swap(x, x.en, value=value, match=True)
        return x.and_(swap.equal, swap.act), swap.act

    def match_any(self, x, value):
        return self._equal_lanes(x, value)[0]

    def match_all(self, x, value):
        return match_all_of(x, *self._equal_lanes(x, value))

    def redux(self, x, op, value, signed):
        """One shared atomic per lane. Every operation is mapped onto one whose neutral value
        is 0 (AND as NOT OR NOT, MIN as NOT MAX NOT, signed order by flipping the sign bit)."""
        flip = x.k32(0x80000000)
        into, out = {"sum": ("AtomicIAdd", None), "or": ("AtomicOr", None), "xor": ("AtomicXor", None),
                     "and": ("AtomicOr", "not"), "max": ("AtomicUMax", None), "min": ("AtomicUMax", "not")}[op]
        word = x.xor(value, flip) if signed and op in ("min", "max") else value
        word = x.not_(word) if out == "not" else word
        if self.e.warp_subgroups:
            group = {"AtomicIAdd": "GroupNonUniformIAdd", "AtomicOr": "GroupNonUniformBitwiseOr",
                     "AtomicXor": "GroupNonUniformBitwiseXor", "AtomicUMax": "GroupNonUniformUMax"}[into]
            red = self.f.op(group, self.m.u32(), self.e.k(Scope.Subgroup), GroupOperation.Reduce, x.sel(x.en, word, x.k32(0)))
        else:
            red = self._swap(x, x.en, reduce=(into, word)).red
        red = x.not_(red) if out == "not" else red
        return x.xor(red, flip) if signed and op in ("min", "max") else red

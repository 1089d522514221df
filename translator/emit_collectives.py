"""Turns mode's warp collectives (VOTE, SHFL, MATCH, REDUX and the active mask): values go
through workgroup memory with one barrier each, or, where the device's subgroups are warps,
through subgroup operations with none. A mixin of :class:`translator.emit_turns.TurnsWarp`,
whose bookkeeping (``ptr``, ``ld``, ``st``, ``atomic``, ``barrier``, ``mine``) it uses.
"""
from __future__ import annotations

from . import abi
from .emit_waits import lane_loop
from .spirv_enums import GroupOperation, Scope

WORDS = 3               # per warp and slot: lanes present, lanes whose predicate holds, reduction


class Collectives:
    """VOTE/ballot, SHFL, MATCH and REDUX for the threads of one turn."""

    # ---------------------------------------------------------------- through workgroup memory
    def _exchange(self, x, en, pred=None, value=None, reduce=None):
        """One rendezvous: (mask of lanes with en, mask of those with pred, value slot base,
        reduction). ``reduce`` is (atomic opcode, word): the word of every lane with en is
        combined by that atomic, whose neutral value is 0."""
        e, f, u32 = self.e, self.f, self.m.u32()
        coll = f.load(u32, self.coll)
        f.store(self.coll, x.add(coll, x.k32(1)))
        slot = f.op("UMod", u32, coll, e.k(3))
        mbase = x.add(x.mul(slot, x.k32(WORDS * self.warps)), self.mine["masks"])
        if e.const_value.get(en) is not False:
            with f.if_(en):
                self.atomic("AtomicOr", None, mbase, self.bit)
                if reduce is not None:
                    self.atomic(reduce[0], None, x.add(mbase, x.k32(2)), reduce[1])
        if pred is not None:
            with f.if_(x.band(en, pred)):
                self.atomic("AtomicOr", None, x.add(mbase, x.k32(1)), self.bit)
        vbase = x.mul(slot, x.k32(self.n))
        if value is not None:
            self.st(None, x.add(vbase, self.own_value), value)
        self.barrier()
        act = self.ld(None, mbase)
        bal = self.ld(None, x.add(mbase, x.k32(1))) if pred is not None else None
        red = self.ld(None, x.add(mbase, x.k32(2))) if reduce is not None else None
        old = x.add(x.mul(f.op("UMod", u32, x.add(coll, x.k32(2)), e.k(3)), x.k32(WORDS * self.warps)),
                    self.mine["masks"])
        with f.if_(x.cmp("eq", e.lane, x.k32(0), False)):
            for k in range(WORDS):
                self.st(None, x.add(old, x.k32(k)), x.k32(0))
        return act, bal, vbase, red

    def active(self, x):
        if x._active is None:
            if x.en == x.out.active:
                x._active = self.participants(x)
            elif self.e.warp_subgroups:
                x._active = self._sg_ballot(x.en)
            else:
                x._active = self._exchange(x, x.en)[0]
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
        act, bal, _, _ = self._exchange(x, x.en, pred=p)
        x._active = act
        return bal

    # ---------------------------------------------------------------- subgroups that are warps
    def _check_warps(self) -> None:
        """The device's subgroups must be this warp: 32 invocations, lane = index & 31. A
        thread of a subgroup that is not says so (NOT_WARPS) and leaves; nothing hangs."""
        e, f, m, u32, bool_ = self.e, self.f, self.m, self.m.u32(), self.m.bool()
        size = f.load(u32, m.builtin("SubgroupSize", u32))
        lane = f.load(u32, m.builtin("SubgroupLocalInvocationId", u32))
        same = f.op("GroupNonUniformAll", bool_, e.k(Scope.Subgroup), f.op("IEqual", bool_, lane, e.lane))
        bad = f.op("LogicalNot", bool_, f.op("LogicalAnd", bool_, f.op("IEqual", bool_, size, e.k(32)), same))
        e.record_status(abi.NOT_WARPS, bad, e.k(0))
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

    def _lane_value(self, x, vbase, lane):
        """The value lane ``lane`` (an id) of this warp offered; 0 past the block's end
        (those slots are never written after the fill)."""
        return self.ld(None, x.add(x.add(vbase, self.mine["vals"]), lane))

    def shfl(self, x, mode, value, b, c):
        e = self.e
        vbase = None if e.warp_subgroups else self._exchange(x, x.en, value=value)[2]
        lane = e.lane
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
        source = x.sel(ok, x.and_(j, x.k32(31)), lane)
        got = self._sg_lane_value(x, value, source) if e.warp_subgroups else self._lane_value(x, vbase, source)
        return x.sel(ok, got, value), ok

    def _equal_lanes(self, x, value):
        """(lanes of this warp in the rendezvous whose value equals this thread's, those lanes)."""
        if self.e.warp_subgroups:
            act, equal = self._sg_ballot(x.en), x.k32(0)
            for lane in range(32):
                theirs = self.f.op("GroupNonUniformBroadcast", self.m.u32(), self.e.k(Scope.Subgroup), value, x.k32(lane))
                equal = x.or_(equal, x.sel(x.cmp("eq", theirs, value, False), x.k32(1 << lane), x.k32(0)))
            return x.and_(equal, act), act
        act, _, vbase, _ = self._exchange(x, x.en, value=value)
        equal = self._lanes_offering(x, x.add(vbase, self.mine["vals"]), value)
        return x.and_(equal, act), act

    def _lanes_offering(self, x, first, value):
        """The lanes of this warp whose offered value (at ``first`` + lane) equals ``value``,
        in one :func:`translator.emit_waits.lane_loop` (a loop the driver keeps, not 32 reads)."""
        e, f, u32, bool_ = self.e, self.f, self.m.u32(), self.m.bool()
        found = f.local(u32, "scan_found")
        f.store(found, e.k(0))

        def each(lane):
            same = f.op("IEqual", bool_, self.ld(None, f.op("IAdd", u32, first, lane)), value)
            f.store(found, self._lane_bit_if(f, f.load(u32, found), lane, same))
        lane_loop(f, self.m, e.k, each)
        return f.load(u32, found)

    def match_any(self, x, value):
        return self._equal_lanes(x, value)[0]

    def match_all(self, x, value):
        mask, act = self._equal_lanes(x, value)
        ok = x.cmp("eq", mask, act, False)
        return x.sel(ok, act, x.k32(0)), ok

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
            red = self._exchange(x, x.en, reduce=(into, word))[3]
        red = x.not_(red) if out == "not" else red
        return x.xor(red, flip) if signed and op in ("min", "max") else red

"""Turns mode: the turn loop and the waiting instructions (BSSY/BSYNC, WARPSYNC, BAR), as
:mod:`translator.schedule` decides them; the collectives are in :mod:`translator.emit_collectives`.

A warp is 32 threads by local invocation index, whatever the subgroup width. Lanes swap
values through workgroup memory: each collective writes, passes one workgroup barrier, and
reads. Slots rotate over three so one barrier per collective suffices (a slot is cleared two
collectives after its use, when nobody can still read it and before anybody writes it).
Where the device's subgroups are warps, subgroup operations replace all of that.
"""
from __future__ import annotations

from . import abi
from .errors import UnsupportedInstruction
from .emit_collectives import WORDS, Collectives
from .spirv_enums import GroupOperation, Scope
from .spirv_enums import MemorySemantics as Sem
from .schedule import NONE_KEY, PC_MASK, WAIT_BIT, YIELD_BIT

EXITED = -1        # Emitter.emit_block: every thread that ran the block has exited

BAR_FIELDS = 5          # count, popc, generation, result popc, result count


def _state_uses(insts) -> set[str]:
    """Which turn bookkeeping the instructions need: "exchange" (a rendezvous with the other
    lanes), "mask" (the mask of lanes in this turn), "values" (lanes' values), "region"
    (convergence regions), "yielding", and the bookkeeping of each wait rule, by its name."""
    uses = set()
    for i in insts:
        s = i.spec
        uses |= {"exchange"} if i.exchanges else set()
        uses |= {"mask"} if (i.exchanges and s.lanes == "mask") or s.waits in ("bsync", "warpsync") else set()
        uses |= {"values"} if s.lanes == "values" else set()
        uses |= {"region"} if s.region else set()
        uses |= {"yielding"} if s.yields or (s.region and (s.lanes or s.waits)) else set()
        uses |= {s.waits} if s.waits else set()
    return uses


class FreeWarp:
    """Free mode: no collectives; convergence instructions have nothing to wait for."""

    def __init__(self, e):
        self.e = e

    def on_exit(self, cond): pass
    def yield_(self, x): pass
    def bssy(self, x, barrier): pass
    def bsync(self, x, barrier): pass
    def brk(self, x, barrier): pass
    def warpsync(self, x, mask): pass

    def _refuse(self, x, *args):
        raise UnsupportedInstruction(f"{x.inst.where}: {x.inst.opcode} needs turns mode", x.inst.opcode)

    active = ballot = shfl = match_any = match_all = redux = bar = _refuse


class TurnsWarp(Collectives):
    def __init__(self, e):
        self.e, self.m, self.f = e, e.m, e.f
        m, u32 = self.m, self.m.u32()
        self.warps = (e.nthreads + 31) // 32
        self.n = self.warps * 32
        self.wg_u32 = m.pointer("Workgroup", u32)
        # the bookkeeping arrays, one after another in one workgroup array so that a single
        # strided loop fills them: the vote slots start at NONE, the live count at the block
        # size, everything else at 0 (the fill relies on this order)
        # (arrays only the program's instructions need: a smaller fill)
        uses = _state_uses(e.program.insts)
        self.offsets, self.lengths, size = {}, {}, 0
        for name, length in (("vote", 3), ("live", 1), ("top", 3), ("exited", self.warps),
                             ("wsync", self.warps if "warpsync" in uses else 0),
                             ("released", self.warps if "warpsync" in uses else 0),
                             ("yielding", self.warps if "yielding" in uses else 0),
                             ("brk", self.warps * 16 if "region" in uses else 0),
                             ("masks", 3 * self.warps * WORDS if "exchange" in uses else 0),
                             ("vals", 3 * self.n if "values" in uses else 0),
                             ("bar", 16 * BAR_FIELDS if "bar" in uses else 0)):
            self.offsets[name], self.lengths[name], size = size, length, size + length
        self.state_words = size
        self.state = m.global_var(m.pointer("Workgroup", m.array(u32, size)), "Workgroup", "turn_state")
        # where each thread publishes its pc (NONE once exited) before the vote: two turn-parity
        # halves of uvec4, so a warp's 32 pcs are 8 vector loads
        self.v4 = m.vec(u32, 4)
        self.keys = m.global_var(m.pointer("Workgroup", m.array(self.v4, 2 * self.n // 4)), "Workgroup", "turn_pcs")
        f = self.f
        self.turn = f.local(u32, "turn", e.k(0))
        self.coll = f.local(u32, "collective", e.k(0))
        self.nbar = f.local(u32, "barriers", e.k(0))
        self.my_gen = f.local(u32, "bar_generation", e.k(0))
        self.bit = f.op("ShiftLeftLogical", u32, e.k(1), e.lane)
        remaining = f.op("ISub", u32, e.k(e.nthreads), f.op("ShiftLeftLogical", u32, e.warp_id, e.k(5)))
        partial = f.op("ISub", u32, f.op("ShiftLeftLogical", u32, e.k(1), f.op("BitwiseAnd", u32, remaining, e.k(31))), e.k(1))
        full = f.op("UGreaterThanEqual", m.bool(), remaining, e.k(32))
        self.lanes = f.op("Select", u32, full, e.k(0xFFFFFFFF), partial)   # lanes of this warp that exist
        # where this warp's words start in the per-warp arrays (absolute indices into turn_state),
        # and this thread's value word of slot 0
        self.mine = {name: f.op("IAdd", u32, f.op("IMul", u32, e.warp_id, e.k(per_warp)), e.k(self.offsets[name]))
                     for name, per_warp in (("exited", 1), ("wsync", 1), ("released", 1), ("yielding", 1),
                                            ("brk", 16), ("masks", WORDS), ("vals", 32))
                     if self.lengths[name]}
        self.own_value = f.op("IAdd", u32, e.tid, e.k(self.offsets["vals"])) if self.lengths["vals"] else None

    # ---------------------------------------------------------------- helpers
    def ptr(self, name, index):
        """Word ``index`` of bookkeeping array ``name``; with no name, of turn_state."""
        if name in self.mine and index == self.e.warp_id:
            name, index = None, self.mine[name]
        offset = self.offsets[name] if name else 0
        if offset:
            known = self.e.const_value.get(index)
            index = self.e.k(known + offset) if known is not None else \
                self.f.op("IAdd", self.m.u32(), index, self.e.k(offset))
        return self.f.op("AccessChain", self.wg_u32, self.state, index)

    def ld(self, name, index):
        return self.f.load(self.m.u32(), self.ptr(name, index), volatile=True)

    def st(self, name, index, value):
        self.f.store(self.ptr(name, index), value, volatile=True)

    def atomic(self, opcode, name, index, value):
        e = self.e
        return self.f.op(opcode, self.m.u32(), self.ptr(name, index), e.k(Scope.Workgroup), e.k(Sem.Relaxed), value)

    def barrier(self):
        f, u32 = self.f, self.m.u32()
        f.barrier()
        f.store(self.nbar, f.op("IAdd", u32, f.load(u32, self.nbar), self.e.k(1)))

    def _fill(self, publish: bool):
        """Every thread initialises a strided share of the bookkeeping, and of the published
        pcs when participant masks are needed (``publish``)."""
        e, f, u32, bool_ = self.e, self.f, self.m.u32(), self.m.bool()
        assert (self.offsets["vote"], self.offsets["live"]) == (0, 3)

        def fill(i):
            first = f.op("Select", u32, f.op("IEqual", bool_, i, e.k(3)), e.k(e.nthreads), e.k(0))
            f.store(f.op("AccessChain", self.wg_u32, self.state, i),
                    f.op("Select", u32, f.op("ULessThan", bool_, i, e.k(3)), e.k(NONE_KEY), first), True)
        e.emit_strided(self.state_words, fill)
        if publish:
            none4 = self.m.const_vec(self.v4, u32, (NONE_KEY,) * 4)
            wg_v4 = self.m.pointer("Workgroup", self.v4)
            e.emit_strided(2 * self.n // 4, lambda i: f.store(f.op("AccessChain", wg_v4, self.keys, i), none4))

    # ---------------------------------------------------------------- the turn loop
    def emit_main(self) -> None:
        """The turn loop. Each turn the threads vote the lowest key (one barrier) and the threads
        at that pc run their block. The vote also takes the highest key: when both are equal,
        every thread still running stands at one pc (a *uniform* turn), and when the block's
        code fixes where they all go next (no conditional branch, exit, wait or YIELD), the
        next turn needs no vote: its key is known, and its participants are this turn's."""
        e, f, u32, bool_ = self.e, self.f, self.m.u32(), self.m.bool()
        quiet = {pc: b for pc, b in e.reachable.items() if b.quiet}
        loud = {pc: b for pc, b in e.reachable.items() if pc not in quiet}
        needs_mask = "mask" in _state_uses(i for b in loud.values() for i in b.insts)
        self._fill(publish=needs_mask and not e.warp_subgroups)
        e.memory.init_shared(cooperative=True)
        self.barrier()
        chosen_var = f.local(u32, "chosen", e.k(NONE_KEY))
        uniform_var = f.local(bool_, "uniform", self.m.const_bool(False))
        # the first turn needs no vote either: every thread starts at the entry, none has exited
        skip_var = f.local(bool_, "skip_vote", self.m.const_bool(True))
        predicted_var = f.local(u32, "predicted", e.k(self.e.program.entry))
        votes = f.local(u32, "votes", e.k(0))
        parity_var = f.local(u32, "parity", e.k(0))
        known_var = f.local(bool_, "known_turn", self.m.const_bool(False))
        self.parts_var = f.local(u32, "participants", e.k(0))
        f.store(self.parts_var, self.lanes)
        if e.warp_subgroups:
            self._check_warps()

        def known_turn():
            f.store(chosen_var, f.load(u32, predicted_var))
            f.store(uniform_var, self.m.const_bool(True))
            f.store(known_var, self.m.const_bool(True))

        def vote():
            pc, exited, waiting = f.load(u32, e.pc), f.load(bool_, e.exited), f.load(bool_, e.waiting)
            yielded = f.load(bool_, e.yielded)
            rank = f.op("Select", u32, waiting, e.k(WAIT_BIT), f.op("Select", u32, yielded, e.k(YIELD_BIT), e.k(0)))
            mine = f.op("BitwiseOr", u32, pc, rank)
            n = f.load(u32, votes)
            slot = f.op("UMod", u32, n, e.k(3))
            if needs_mask and not e.warp_subgroups:     # where each thread stands, for participant masks
                parity = f.op("BitwiseAnd", u32, n, e.k(1))
                f.store(parity_var, parity)
                quad = f.op("IAdd", u32, f.op("IMul", u32, parity, e.k(self.n // 4)),
                            f.op("ShiftRightLogical", u32, e.tid, e.k(2)))
                here = f.op("AccessChain", self.wg_u32, self.keys, quad, f.op("BitwiseAnd", u32, e.tid, e.k(3)))
                f.store(here, f.op("Select", u32, exited, e.k(NONE_KEY), pc), True)
            f.store(known_var, self.m.const_bool(False))
            self._vote(slot, f.op("Select", u32, exited, e.k(NONE_KEY), mine), f.op("Select", u32, exited, e.k(0), mine))
            self.barrier()
            chosen = self.ld("vote", slot)
            f.store(chosen_var, chosen)
            f.store(uniform_var, f.op("IEqual", bool_, chosen, self.ld("top", slot)))
            with f.if_(f.op("IEqual", bool_, e.tid, e.k(0))):
                stale = f.op("UMod", u32, f.op("IAdd", u32, n, e.k(2)), e.k(3))
                self.st("vote", stale, e.k(NONE_KEY))
                self.st("top", stale, e.k(0))
            f.store(votes, f.op("IAdd", u32, n, e.k(1)))

        def check():
            f.if_else(f.load(bool_, skip_var), known_turn, vote)
            f.store(skip_var, self.m.const_bool(False))
            chosen = f.load(u32, chosen_var)
            round_over = f.op("INotEqual", bool_, f.op("BitwiseAnd", u32, chosen, e.k(YIELD_BIT)), e.k(0))
            f.store(e.yielded, f.op("LogicalAnd", bool_, f.load(bool_, e.yielded),
                                    f.op("LogicalNot", bool_, round_over)))
            return f.op("LogicalAnd", bool_, f.op("INotEqual", bool_, chosen, e.k(NONE_KEY)),
                        f.op("ULessThan", bool_, f.load(u32, self.turn), e.budget))

        def after(block, next_pc):
            """Every thread, at the end of the chosen block's case: whether the next turn is known."""
            if next_pc == EXITED:
                key = NONE_KEY
            elif next_pc is None or next_pc not in loud:
                return
            else:
                key = next_pc | (YIELD_BIT if next_pc <= block.pc else 0)
            f.store(skip_var, f.load(bool_, uniform_var))
            f.store(predicted_var, e.k(key))

        def body():
            cpc = f.op("BitwiseAnd", u32, f.load(u32, chosen_var), e.k(PC_MASK))
            if e.subgroup_vote:   # provably uniform: drivers may branch instead of masking every case
                cpc = f.op("GroupNonUniformBroadcastFirst", u32, e.k(Scope.Subgroup), cpc)
            self.cpc = cpc
            active = f.op("LogicalAnd", bool_, f.op("LogicalNot", bool_, f.load(bool_, e.exited)),
                          f.op("IEqual", bool_, f.load(u32, e.pc), cpc))
            if not needs_mask:
                self.turn_participants = None
            elif e.warp_subgroups:
                self.turn_participants = self._sg_ballot(active)
            else:
                self.turn_participants = self._participants(f.load(bool_, known_var), f.load(u32, parity_var))
            e.emit_switch(cpc, lambda _pc: active, blocks=loud, skip=list(quiet), after=after)
            self.free_run(quiet)
            f.store(self.turn, f.op("IAdd", u32, f.load(u32, self.turn), e.k(1)))

        e.emit_loop(check, body)
        pending = f.op("INotEqual", bool_, f.load(u32, chosen_var), e.k(NONE_KEY))
        stuck = f.op("LogicalAnd", bool_, pending, f.op("LogicalNot", bool_, f.load(bool_, e.exited)))
        e.record_status(abi.LIVELOCK, stuck, f.load(u32, e.pc))
        e.add_counters(turns=[(abi.TURNS, f.load(u32, self.turn)), (abi.BARRIERS, f.load(u32, self.nbar))])

    def _vote(self, slot, low, high) -> None:
        """atomicMin and atomicMax of the keys: reduced in the subgroup first, one atomic each
        per subgroup (exited threads offer NONE to the minimum and 0 to the maximum)."""
        e, f, m, u32 = self.e, self.f, self.m, self.m.u32()
        if not e.subgroup_vote:
            self.atomic("AtomicUMin", "vote", slot, low)
            self.atomic("AtomicUMax", "top", slot, high)
            return
        lowest = f.op("GroupNonUniformUMin", u32, e.k(Scope.Subgroup), GroupOperation.Reduce, low)
        highest = f.op("GroupNonUniformUMax", u32, e.k(Scope.Subgroup), GroupOperation.Reduce, high)
        with f.if_(f.op("GroupNonUniformElect", m.bool(), e.k(Scope.Subgroup))):
            self.atomic("AtomicUMin", "vote", slot, lowest)
            self.atomic("AtomicUMax", "top", slot, highest)

    def free_run(self, quiet) -> None:
        """Threads in quiet blocks run on alone until they reach one that is not (no barrier inside)."""
        e, f, m, u32, bool_ = self.e, self.f, self.m, self.m.u32(), self.m.bool()
        if not quiet:
            return
        stop = f.local(bool_, None, m.const_bool(False))
        f.store(stop, m.const_bool(False))

        def check():
            idle = f.op("LogicalOr", bool_, f.load(bool_, e.exited), f.load(bool_, e.waiting))
            go = f.op("LogicalNot", bool_, f.op("LogicalOr", bool_, idle, f.load(bool_, stop)))
            return f.op("LogicalAnd", bool_, go, f.op("ULessThan", bool_, f.load(u32, e.steps), e.budget))

        def body():
            e.emit_switch(f.load(u32, e.pc), lambda _pc: m.const_bool(True), blocks=quiet,
                          default=lambda: f.store(stop, m.const_bool(True)), free=True)
            f.store(e.steps, f.op("IAdd", u32, f.load(u32, e.steps), e.k(1)))

        e.emit_loop(check, body)

    def participants(self, x):
        """Lanes of this warp at the chosen pc (computed once per turn, before the switch)."""
        if self.turn_participants is None:
            raise AssertionError(f"{x.inst.where}: participant mask not computed for {x.inst.opcode}")
        return self.turn_participants

    def _participants(self, known, parity):
        """Lanes of this warp at the chosen pc, from the pcs every thread published before the
        vote (no barrier needed; lanes past the block's end never publish: their slots keep
        NONE from the fill). A turn known without a vote keeps the last turn's: the same
        threads, all of them, moved on together."""
        e, f, m, u32 = self.e, self.f, self.m, self.m.u32()
        with f.if_(f.op("LogicalNot", m.bool(), known)):
            bvec = m.vec(m.bool(), 4)
            wg_v4 = m.pointer("Workgroup", self.v4)
            base = f.op("IAdd", u32, f.op("IMul", u32, parity, e.k(self.n // 4)),
                        f.op("ShiftLeftLogical", u32, e.warp_id, e.k(3)))
            want = f.op("CompositeConstruct", self.v4, self.cpc, self.cpc, self.cpc, self.cpc)
            zero = m.const_vec(self.v4, u32, (0, 0, 0, 0))
            acc = zero
            for g in range(8):
                pcs = f.load(self.v4, f.op("AccessChain", wg_v4, self.keys, f.op("IAdd", u32, base, e.k(g))), volatile=True)
                bits = m.const_vec(self.v4, u32, tuple(1 << (4 * g + c) for c in range(4)))
                hit = f.op("Select", self.v4, f.op("IEqual", bvec, pcs, want), bits, zero)
                acc = hit if acc == zero else f.op("BitwiseOr", self.v4, acc, hit)
            words = [f.op("CompositeExtract", u32, acc, c) for c in range(4)]
            f.store(self.parts_var, f.op("BitwiseOr", u32, f.op("BitwiseOr", u32, words[0], words[1]),
                                         f.op("BitwiseOr", u32, words[2], words[3])))
        return f.load(u32, self.parts_var)

    def on_exit(self, cond) -> None:
        """One fewer live thread (BAR.SYNC counts them), and its bit in the warp's exited mask."""
        e, u32 = self.e, self.m.u32()
        if e.const_value.get(cond) is False:
            return

        def body(fn, cond, word, bit):
            with fn.if_(cond):
                for opcode, index, value in (("AtomicIAdd", e.k(self.offsets["live"]), e.k(0xFFFFFFFF)),
                                             ("AtomicOr", word, bit)):
                    ptr = fn.op("AccessChain", self.wg_u32, self.state, index)
                    fn.op(opcode, u32, ptr, e.k(Scope.Workgroup), e.k(Sem.Relaxed), value)

        fn = e.helper("leave_warp", (self.m.bool(), u32, u32), body)
        self.f.call(fn, cond, self.mine["exited"], self.bit)

    # ---------------------------------------------------------------- convergence and barriers
    def bssy(self, x, barrier):
        e, f, u32 = self.e, self.f, self.m.u32()
        act = self.active(x)
        var = e.barrier_reg(barrier)
        f.store(var, f.op("Select", u32, x.en, act, f.load(u32, var)))
        with f.if_(x.en):
            self.atomic("AtomicAnd", None, x.add(self.mine["brk"], x.k32(barrier)), x.not_(self.bit))
            self.atomic("AtomicAnd", None, self.mine["yielding"], x.not_(self.bit))

    def yield_(self, x):
        e, f = self.e, self.f
        e.block_yields = True
        with f.if_(x.en):
            self.atomic("AtomicOr", None, self.mine["yielding"], self.bit)

    def brk(self, x, barrier):
        f = self.f
        with f.if_(x.en):
            self.atomic("AtomicOr", None, x.add(self.mine["brk"], x.k32(barrier)), self.bit)

    def _settle(self, x, passed):
        """A waiting instruction's verdict: pass on, or stay at this pc and wait."""
        e, f, bool_ = self.e, self.f, self.m.bool()
        e.block_waits = True
        stay = x.band(e.block_active, x.bnot(passed))
        e.next_value = x.sel(stay, x.k32(x.inst.pc), e.next_value)
        f.store(e.waiting, f.op("Select", bool_, e.block_active, stay, f.load(bool_, e.waiting)))

    def bsync(self, x, barrier):
        e, f, u32 = self.e, self.f, self.m.u32()
        present = self.participants(x)
        slot = x.add(self.mine["brk"], x.k32(barrier))
        gone = x.or_(x.or_(self.ld(None, self.mine["exited"]), self.ld(None, slot)), self.ld(None, self.mine["yielding"]))
        missing = x.and_(x.and_(f.load(u32, e.barrier_reg(barrier)), self.lanes), x.not_(x.or_(present, gone)))
        ok = x.cmp("eq", missing, x.k32(0), False)
        # no barrier needed: a lane updates only its own bits, and its warp-mates in this turn
        # count it as present whatever its bits say
        with f.if_(x.band(x.en, ok)):
            self.atomic("AtomicOr", None, slot, self.bit)
            self.atomic("AtomicAnd", None, self.mine["yielding"], x.not_(self.bit))
        self._settle(x, x.bor(x.bnot(x.en), ok))

    def warpsync(self, x, mask):
        e, f = self.e, self.f
        present = self.participants(x)
        w = e.warp_id
        ws, rel = self.ld("wsync", w), self.ld("released", w)
        mine = x.cmp("ne", x.and_(rel, self.bit), x.k32(0), False)
        missing = x.and_(x.and_(mask, self.lanes), x.not_(x.or_(x.or_(present, self.ld("exited", w)), ws)))
        ok = x.cmp("eq", missing, x.k32(0), False)
        passed = x.bor(x.bnot(x.en), x.bor(mine, ok))
        with f.if_(x.band(x.en, mine)):
            self.atomic("AtomicAnd", "released", w, x.not_(self.bit))
        with f.if_(x.band(x.en, x.band(x.bnot(mine), ok))):
            self.atomic("AtomicOr", "released", w, x.and_(x.and_(mask, ws), x.not_(present)))
        with f.if_(x.band(x.en, x.bnot(passed))):
            self.atomic("AtomicOr", "wsync", w, self.bit)
        with f.if_(x.band(x.en, passed)):
            self.atomic("AtomicAnd", "wsync", w, x.not_(self.bit))
        self._settle(x, passed)

    def bar(self, x, kind, barrier, count, pred):
        e, f, u32, bool_ = self.e, self.f, self.m.u32(), self.m.bool()
        base = x.mul(x.and_(barrier, x.k32(15)), x.k32(BAR_FIELDS))
        field = lambda k: x.add(base, x.k32(k))  # noqa: E731
        arrive = x.band(x.en, x.bnot(f.load(bool_, e.waiting)))
        with f.if_(arrive):
            self.atomic("AtomicIAdd", "bar", field(0), x.k32(1))
            f.store(self.my_gen, self.ld("bar", field(2)))
        if pred is not None:
            with f.if_(x.band(arrive, pred)):
                self.atomic("AtomicIAdd", "bar", field(1), x.k32(1))
        self.barrier()
        arrived, gen = self.ld("bar", field(0)), self.ld("bar", field(2))
        required = count if count is not None else self.ld("live", x.k32(0))
        release = x.band(x.en, x.cmp("ge", arrived, required, False))
        self.barrier()
        with f.if_(release):
            old = f.op("AtomicCompareExchange", u32, self.ptr("bar", field(2)), e.k(Scope.Workgroup),
                       e.k(Sem.Relaxed), e.k(Sem.Relaxed),
                       x.add(gen, x.k32(1)), gen)
            with f.if_(x.cmp("eq", old, gen, False)):
                self.st("bar", field(3), self.ld("bar", field(1)))
                self.st("bar", field(4), arrived)
                self.st("bar", field(0), x.k32(0))
                self.st("bar", field(1), x.k32(0))
        self.barrier()
        moved = x.cmp("ne", self.ld("bar", field(2)), f.load(u32, self.my_gen), False)
        passed = x.bor(x.bnot(x.en), moved if kind != "arrive" else x.kb(True))
        popc, total = self.ld("bar", field(3)), self.ld("bar", field(4))
        result = {"popc": popc, "and": x.b2v(x.cmp("eq", popc, total, False)),
                  "or": x.b2v(x.cmp("ne", popc, x.k32(0), False))}.get(kind, x.k32(0))
        f.store(e.bar_result, x.sel(x.band(x.en, passed), result, f.load(u32, e.bar_result)))
        self._settle(x, passed)

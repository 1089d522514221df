"""Turns mode's warp: its bookkeeping in workgroup memory and the participant masks. The turn
loop is in :mod:`translator.emit.turns.loop`, the waiting instructions in
:mod:`translator.emit.turns.waits`, the collectives in :mod:`translator.emit.turns.collectives`.

A warp is 32 threads by local invocation index, whatever the subgroup width. Lanes swap
values through workgroup memory at one exchange site (:mod:`translator.emit.turns.exchange`): each
collective offers, passes one workgroup barrier, and reads. Where the device's subgroups are
warps, subgroup operations replace all of that.
"""
from __future__ import annotations

from ...errors import UnsupportedInstruction
from ...ir.turnkey import NONE_KEY
from ...spirv.enums import MemorySemantics as Sem
from ...spirv.enums import Scope
from ..lanes import NoWaits
from .collectives import Collectives
from .exchange import WORDS, SharedExchange
from .loop import TurnLoop
from .storage import Bookkeeping
from .waits import BAR_FIELDS, Waits
from .whole import WholeWarp


def state_uses(insts) -> set[str]:
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


def region_barriers(insts) -> int:
    """How many convergence barrier registers (B0..) the program's BSSY/BSYNC/BREAK name."""
    return max((o.value + 1 for i in insts if i.spec.region for o in i.ops if o.kind == "barrier"), default=0)


class FreeWarp(NoWaits):
    """Free mode: no collectives; convergence instructions have nothing to wait for."""

    region_masks_shared = False      # Bx masks live in each thread's own variable

    def __init__(self, e):
        self.e = e
        # where a warp is a subgroup its lanes converge at the lowest pc (translator.emit.free)
        self.converge = e.subgroups_are_warps

    def _refuse(self, x, *args):
        raise UnsupportedInstruction(f"{x.inst.where}: {x.inst.opcode} needs turns mode", x.inst.opcode)

    active = ballot = shfl = match_any = match_all = redux = bar = _refuse

    def order_point(self, inst, active):
        raise UnsupportedInstruction(f"{inst.where}: the lanes of a warp must see each other's memory "
                                     f"before '{inst.text}': that needs turns mode", inst.opcode)


class TurnsWarp(Collectives, SharedExchange, Waits, WholeWarp, TurnLoop, Bookkeeping):
    """Turns mode's warp operations and turn loop, over bookkeeping in workgroup memory."""
    state_uses = staticmethod(state_uses)

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
        uses = state_uses(e.program.insts)
        self.offsets, self.lengths, size = {}, {}, 0
        for name, length in (("vote", 3), ("live", 1), ("top", 3), ("exited", self.warps),
                             ("wsync", self.warps if "warpsync" in uses else 0),
                             ("released", self.warps if "warpsync" in uses else 0),
                             ("yielding", self.warps if "yielding" in uses else 0),
                             ("brk", self.warps * 16 if "region" in uses else 0),
                             ("bx", self.n * region_barriers(e.program.insts)),
                             ("masks", 3 * self.warps * WORDS if "exchange" in uses else 0),
                             ("bar", 16 * BAR_FIELDS if "bar" in uses else 0)):
            self.offsets[name], self.lengths[name], size = size, length, size + length
        self.state_words = size
        self.region_masks_shared = self.lengths["bx"] > 0   # Bx masks in workgroup memory (Waits._bx)
        # one word per thread that its warp-mates scan (the values offered to a collective, in
        # three rotating slots, and the published WARPSYNC masks), in an array of uvec4 of its
        # own: a scan over a warp's 32 words is 8 vector loads (Waits.lane_scan)
        lane_size = 0
        for name, length in (("vals", 3 * self.n if "values" in uses else 0),
                             ("wmask", self.n if "warpsync" in uses else 0)):
            self.offsets[name], self.lengths[name], lane_size = lane_size, length, lane_size + length
        self.lane_words = lane_size
        # and where each thread publishes its pc (NONE once exited) before the vote: two
        # turn-parity halves of uvec4, so a warp's 32 pcs are 8 vector loads; the three arrays
        # in workgroup memory, or in the heap where they would not fit (translator.emit.turns.storage)
        self._declare(size, lane_size)
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
        # where this warp's words start in the per-warp arrays (absolute indices into turn_state,
        # or into turn_lanes for "vals" and "wmask"), and this thread's value word of slot 0
        self.mine = {name: f.op("IAdd", u32, f.op("IMul", u32, e.warp_id, e.k(per_warp)), e.k(self.offsets[name]))
                     for name, per_warp in (("exited", 1), ("wsync", 1), ("released", 1), ("yielding", 1),
                                            ("brk", 16), ("masks", WORDS), ("vals", 32), ("wmask", 32))
                     if self.lengths[name]}
        self.own_value = f.op("IAdd", u32, e.tid, e.k(self.offsets["vals"])) if self.lengths["vals"] else None
        # where this thread publishes its WARPSYNC mask (turn_lanes)
        self.own_mask = f.op("IAdd", u32, e.tid, e.k(self.offsets["wmask"])) if self.lengths["wmask"] else None
        # collectives (unless subgroups are warps) and WARPSYNC's mask scans meet at one site of
        # the turn loop (emit_exchange)
        self.exchange_site = ("exchange" in uses and not e.warp_subgroups) or "warpsync" in uses
        if self.exchange_site:
            self._init_exchange()
        # each warp takes its own turns (translator/README.md, "Per-warp turns"): where its
        # lanes are one subgroup and no BAR makes the workgroup meet
        self.per_warp = e.warp_subgroups and "bar" not in uses

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
        return self.word_ptr(self.f, "state", index)

    def ld(self, name, index):
        return self.f.load(self.m.u32(), self.ptr(name, index), volatile=True)

    def st(self, name, index, value):
        self.f.store(self.ptr(name, index), value, volatile=True)

    def lane_ptr(self, index, f=None):
        """Word ``index`` (absolute) of turn_lanes."""
        return self.word_ptr(f or self.f, "lanes", index)

    def lane_ld(self, index, f=None):
        return (f or self.f).load(self.m.u32(), self.lane_ptr(index, f), volatile=True)

    def lane_st(self, index, value):
        self.f.store(self.lane_ptr(index), value, volatile=True)

    def lane_quad(self, quad, f=None):
        """Words 4 * ``quad`` to 4 * ``quad`` + 3 of turn_lanes, one vector load."""
        return self.quad_load(f or self.f, "lanes", quad)

    def atomic(self, opcode, name, index, value):
        e = self.e
        return self.f.op(opcode, self.m.u32(), self.ptr(name, index), e.k(Scope.Workgroup), e.k(Sem.Relaxed), value)

    def barrier(self, workgroup: bool = False):
        """The turn's rendezvous: the workgroup's, or the warp's own (a subgroup barrier) where
        each warp takes its own turns; ``workgroup`` for the one before the first turn."""
        f, u32, e = self.f, self.m.u32(), self.e
        if self.per_warp and not workgroup:
            sem = Sem.AcquireRelease | self.memory_semantics()
            f.op("ControlBarrier", None, e.k(Scope.Subgroup), e.k(Scope.Subgroup), e.k(sem))
            return
        f.barrier()
        f.store(self.nbar, f.op("IAdd", u32, f.load(u32, self.nbar), self.e.k(1)))

    def order_point(self, inst, active):
        """Everything the warp's lanes did to memory before ``inst`` is done and visible to
        each other (translator.ir.order): a subgroup barrier where a warp is one subgroup, a
        workgroup barrier otherwise. Either counts as a barrier."""
        e, f, u32 = self.e, self.f, self.m.u32()
        if not e.warp_subgroups:
            self.barrier()
            return
        sem = Sem.AcquireRelease | Sem.WorkgroupMemory | Sem.UniformMemory
        f.op("ControlBarrier", None, e.k(Scope.Subgroup), e.k(Scope.Subgroup), e.k(sem))
        f.store(self.nbar, f.op("IAdd", u32, f.load(u32, self.nbar), e.k(1)))

    def _fill(self, publish: bool):
        """Every thread initialises a strided share of the bookkeeping, and of the published
        pcs when participant masks are needed (``publish``)."""
        e, f, u32, bool_ = self.e, self.f, self.m.u32(), self.m.bool()
        assert (self.offsets["vote"], self.offsets["live"]) == (0, 3)

        def fill(i):
            first = f.op("Select", u32, f.op("IEqual", bool_, i, e.k(3)), e.k(e.nthreads), e.k(0))
            f.store(self.word_ptr(f, "state", i),
                    f.op("Select", u32, f.op("ULessThan", bool_, i, e.k(3)), e.k(NONE_KEY), first), True)
        e.emit_strided(self.state_words, fill)
        if self.lane_words:
            zero4 = self.m.const_vec(self.v4, u32, (0,) * 4)
            e.emit_strided(self.lane_words // 4, lambda i: self.quad_store(f, "lanes", i, zero4, (0,) * 4))
        if publish:
            none4 = self.m.const_vec(self.v4, u32, (NONE_KEY,) * 4)
            e.emit_strided(2 * self.n // 4, lambda i: self.quad_store(f, "keys", i, none4, (NONE_KEY,) * 4))

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
            base = f.op("IAdd", u32, f.op("IMul", u32, parity, e.k(self.n // 4)),
                        f.op("ShiftLeftLogical", u32, e.warp_id, e.k(3)))
            want = f.op("CompositeConstruct", self.v4, self.cpc, self.cpc, self.cpc, self.cpc)
            zero = m.const_vec(self.v4, u32, (0, 0, 0, 0))
            acc = zero
            for g in range(8):
                pcs = self.quad_load(f, "keys", f.op("IAdd", u32, base, e.k(g)))
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
                    ptr = self.word_ptr(fn, "state", index)
                    fn.op(opcode, u32, ptr, e.k(Scope.Workgroup), e.k(Sem.Relaxed), value)

        fn = e.helper("leave_warp", (self.m.bool(), u32, u32), body)
        self.f.call(fn, cond, self.mine["exited"], self.bit)

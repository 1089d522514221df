"""Turns mode's waiting instructions and convergence regions (BSSY/BREAK/BSYNC, WARPSYNC, BAR,
YIELD), as :mod:`translator.schedule` decides them for the interpreter: each waiting
instruction's verdict keeps the threads that do not pass at its pc (``Outcome.stay``). A mixin
of :class:`translator.emit_turns.TurnsWarp`, whose bookkeeping (``ld``, ``st``, ``atomic``,
``barrier``, ``mine``, ``participants``) it uses.
"""
from __future__ import annotations

from .spirv_enums import MemorySemantics as Sem
from .spirv_enums import Scope

BAR_FIELDS = 5          # count, popc, generation, result popc, result count


class Waits:
    """BSSY, BREAK, BSYNC, WARPSYNC, BAR and YIELD for the threads of one turn."""

    def bssy(self, x, barrier):
        e, f, u32 = self.e, self.f, self.m.u32()
        act = self.active(x)
        var = e.barrier_reg(barrier)
        f.store(var, f.op("Select", u32, x.en, act, f.load(u32, var)))
        with f.if_(x.en):
            self.atomic("AtomicAnd", None, x.add(self.mine["brk"], x.k32(barrier)), x.not_(self.bit))
            self.atomic("AtomicAnd", None, self.mine["yielding"], x.not_(self.bit))

    def yield_(self, x):
        f = self.f
        with f.if_(x.en):
            self.atomic("AtomicOr", None, self.mine["yielding"], self.bit)

    def brk(self, x, barrier):
        f = self.f
        with f.if_(x.en):
            self.atomic("AtomicOr", None, x.add(self.mine["brk"], x.k32(barrier)), self.bit)

    def _settle(self, x, passed):
        """A waiting instruction's verdict: pass on, or stay at this pc and wait."""
        e, f, bool_, active = self.e, self.f, self.m.bool(), x.out.active
        stay = x.band(active, x.bnot(passed))
        x.out.stay(x, stay)
        f.store(e.waiting, f.op("Select", bool_, active, stay, f.load(bool_, e.waiting)))

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

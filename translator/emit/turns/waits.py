"""Turns mode's waiting instructions and convergence regions (BSSY/BREAK/BSYNC, WARPSYNC, BAR,
YIELD), as :mod:`translator.interp.waits` decides them for the interpreter: each waiting
instruction's verdict keeps the threads that do not pass at its pc (``Outcome.stay``). A mixin
of :class:`translator.emit.turns.warp.TurnsWarp`, whose bookkeeping (``ld``, ``st``, ``atomic``,
``barrier``, ``mine``, ``participants``) it uses.
"""
from __future__ import annotations

from ...spirv.enums import LoopControl, Scope
from ...spirv.enums import MemorySemantics as Sem

BAR_FIELDS = 5          # count, popc, generation, result popc, result count


def counted_loop(fn, k, count: int, body) -> None:
    """``for (i = 0; i < count; ++i) body(i)`` in function ``fn``, marked DontUnroll: drivers
    inline helpers at every call site, and unrolled, each memory access of ``body`` becomes
    ``count``, while lavapipe (LLVM 15) spends time on each access that grows with the whole
    shader's size (translator/README.md, "What the driver pays"; ``warpboard bench`` reports
    ``driver_compile_s``). Each iteration draws on lavapipe's budget of loop iterations, so
    loops stay short (``lane_scan``: 8 iterations for 32 lanes)."""
    fn.count_loop(k, count, body, control=LoopControl.DONT_UNROLL)


def bits_loop(fn, m, k, mask, body) -> None:
    """``body(lane)`` for each set bit of ``mask``, lowest first: as many iterations as bits,
    in a loop marked DontUnroll (see :func:`counted_loop`)."""
    u32, bool_ = m.u32(), m.bool()
    rest = fn.local(u32)
    fn.store(rest, mask)
    header, block, cont, merge = (m.new_id() for _ in range(4))
    fn.op("Branch", None, header)
    fn.label(header)
    r = fn.load(u32, rest)
    go = fn.op("INotEqual", bool_, r, k(0))
    fn.op("LoopMerge", None, merge, cont, LoopControl.DONT_UNROLL)
    fn.op("BranchConditional", None, go, block, merge)
    fn.label(block)
    low = fn.op("BitwiseAnd", u32, r, fn.op("ISub", u32, k(0), r))
    body(fn.op("BitCount", u32, fn.op("ISub", u32, low, k(1))))
    fn.op("Branch", None, cont)
    fn.label(cont)
    fn.store(rest, fn.op("BitwiseXor", u32, r, low))
    fn.op("Branch", None, header)
    fn.label(merge)


class Waits:
    """BSSY, BREAK, BSYNC, WARPSYNC, BAR and YIELD for the threads of one turn."""

    def _bx(self, x, barrier, tid):
        """Where thread ``tid`` keeps its mask of convergence barrier ``barrier`` (in workgroup
        memory: a lane that leaves the region takes itself out of its warp-mates' masks)."""
        return x.add(x.k32(self.offsets["bx"] + barrier * self.n), tid)

    def bssy(self, x, barrier):
        f = self.f
        act = self.active(x)
        with f.if_(x.en):
            self.st(None, self._bx(x, barrier, self.e.tid), act)
            self.atomic("AtomicAnd", None, x.add(self.mine["brk"], x.k32(barrier)), x.not_(self.bit))
            self.atomic("AtomicAnd", None, self.mine["yielding"], x.not_(self.bit))

    def yield_(self, x):
        f = self.f
        with f.if_(x.en):
            self.atomic("AtomicOr", None, self.mine["yielding"], self.bit)

    def _leave_region(self, x, barrier, others):
        """This lane has left ``barrier``'s region: where some lanes of its mask (``others``)
        may still hold the region, it is taken out of every warp-mate's mask, so that a BSYNC
        of theirs no longer waits for it even after it enters a new region of that barrier.
        Noted here, done after the switch (:meth:`apply_leaves`): a loop in the turn loop
        once, not one at every BREAK and BSYNC (lavapipe runs every case of the switch, masked,
        and each loop it runs draws on its budget of loop iterations)."""
        f, u32 = self.f, self.m.u32()
        var = self._leaving(barrier)
        f.store(var, f.op("BitwiseOr", u32, f.load(u32, var), others))

    def _leaving(self, barrier):
        """The function variable of the lanes this thread must still leave in Bx's masks."""
        leaving = self.__dict__.setdefault("_leaving_vars", {})
        if barrier not in leaving:
            leaving[barrier] = self.e.f.local(self.m.u32(), f"leaving_b{barrier}", self.e.k(0))
        return leaving[barrier]

    def apply_leaves(self) -> None:
        """After the switch: the lanes each thread left a region of (``_leave_region``) lose
        its bit in their Bx masks."""
        e, f, u32 = self.e, self.f, self.m.u32()

        def body(fn, base, keep, lanes):
            def each(lane):
                ptr = self.word_ptr(fn, "state", fn.op("IAdd", u32, base, lane))
                fn.op("AtomicAnd", u32, ptr, e.k(Scope.Workgroup), e.k(Sem.Relaxed), keep)
            bits_loop(fn, self.m, e.k, lanes, each)

        fn = e.helper("leave_region", (u32, u32, u32), body)
        for barrier, var in sorted(self.__dict__.get("_leaving_vars", {}).items()):
            lanes = f.load(u32, var)
            with f.if_(f.op("INotEqual", self.m.bool(), lanes, e.k(0))):
                first = f.op("IAdd", u32, f.op("IMul", u32, e.warp_id, e.k(32)),
                             e.k(self.offsets["bx"] + barrier * self.n))
                f.call(fn, first, f.op("Not", u32, self.bit), lanes)
                f.store(var, e.k(0))

    def brk(self, x, barrier, cond=None):
        f = self.f
        with f.if_(x.en if cond is None else x.band(x.en, cond)):
            self.atomic("AtomicOr", None, x.add(self.mine["brk"], x.k32(barrier)), self.bit)
            own = self.ld(None, self._bx(x, barrier, self.e.tid))
            self._leave_region(x, barrier, x.and_(own, x.not_(self.bit)))

    def _settle(self, x, passed):
        """A waiting instruction's verdict: pass on, or stay at this pc and wait."""
        e, f, bool_, active = self.e, self.f, self.m.bool(), x.out.active
        stay = x.band(active, x.bnot(passed))
        x.out.stay(x, stay)
        f.store(e.waiting, f.op("Select", bool_, active, stay, f.load(bool_, e.waiting)))
        f.store(e.yielded, f.op("LogicalOr", bool_, f.load(bool_, e.yielded), stay))   # tried this round

    def bsync(self, x, barrier):
        f = self.f
        present = self.participants(x)
        waiting = self._waiting_for_me(x) if self.lengths["wmask"] else None    # first: it meets at the site
        slot = x.add(self.mine["brk"], x.k32(barrier))
        exited = self.ld(None, self.mine["exited"])
        gone = x.or_(x.or_(exited, self.ld(None, slot)), self.ld(None, self.mine["yielding"]))
        if waiting is not None:
            gone = x.or_(gone, waiting)
        own = x.and_(self.ld(None, self._bx(x, barrier, self.e.tid)), self.lanes)
        missing = x.and_(own, x.not_(x.or_(present, gone)))
        ok = x.cmp("eq", missing, x.k32(0), False)
        # no barrier needed: a lane updates only its own bits, and its warp-mates in this turn
        # count it as present whatever its bits say
        with f.if_(x.band(x.en, ok)):
            self.atomic("AtomicOr", None, slot, self.bit)
            self.atomic("AtomicAnd", None, self.mine["yielding"], x.not_(self.bit))
            self._leave_region(x, barrier, x.and_(own, x.not_(x.or_(present, exited))))
        self._settle(x, x.bor(x.bnot(x.en), ok))

    def lane_scan(self, fn, first, step, unrolled: bool):
        """``acc = step(fn, acc, lane, word)`` from 0 over the 32 words of turn_lanes from
        ``first`` (a warp's, so a multiple of 32), lane 0 first: 8 vector loads, unrolled
        where the scan is emitted once per shader, else in a loop of 8 (see counted_loop)."""
        e, u32 = self.e, self.m.u32()
        quad0 = fn.op("ShiftRightLogical", u32, first, e.k(2))

        def four(acc, quad, lane0):
            words = self.lane_quad(fn.op("IAdd", u32, quad0, quad), fn)
            for c in range(4):
                acc = step(fn, acc, fn.op("IAdd", u32, lane0, e.k(c)), fn.op("CompositeExtract", u32, words, c))
            return acc

        if unrolled:
            acc = e.k(0)
            for g in range(8):
                acc = four(acc, e.k(g), e.k(4 * g))
            return acc
        var = fn.local(u32)
        fn.store(var, e.k(0))
        counted_loop(fn, e.k, 8, lambda g: fn.store(var, four(fn.load(u32, var), g,
                                                                  fn.op("ShiftLeftLogical", u32, g, e.k(2)))))
        return fn.load(u32, var)

    def _lane_bit_if(self, fn, acc, lane, cond):
        """``acc`` with ``lane``'s bit set where ``cond`` holds."""
        u32, k = self.m.u32(), self.e.k
        return fn.op("BitwiseOr", u32, acc, fn.op("Select", u32, cond, fn.op("ShiftLeftLogical", u32, k(1), lane), k(0)))

    def _waiting_for_me(self, x):
        """The lanes of this warp waiting at a WARPSYNC whose mask names this lane
        (interp.waits._bsync_passes): their published mask has this lane's bit, and their bit is
        set in the warp's ``wsync`` word."""
        named = self._swap(x, x.kb(False), scan=("naming", self.bit)).scan
        return x.and_(named, self.ld("wsync", self.e.warp_id))

    def _same_mask(self, x, mask):
        """Lanes of this warp whose published WARPSYNC mask equals ``mask``: each lane of the
        turn publishes its own (0 when its guard is false), then all read after a barrier."""
        return self._swap(x, x.kb(False), publish=x.sel(x.en, mask, x.k32(0)), scan=("same", mask)).scan

    def warpsync(self, x, mask):
        e, f = self.e, self.f
        present = self.participants(x)
        same = self._same_mask(x, mask)         # first: it meets at the site
        w = e.warp_id
        ws, rel = self.ld("wsync", w), self.ld("released", w)
        mine = x.cmp("ne", x.and_(rel, self.bit), x.k32(0), False)
        joined = x.and_(same, x.or_(present, ws))
        missing = x.and_(x.and_(mask, self.lanes), x.not_(x.or_(self.ld("exited", w), joined)))
        ok = x.cmp("eq", missing, x.k32(0), False)
        if "EXCLUSIVE" in x.inst.mods:
            ok, mine = self._lowest_group(x, mask, ok, mine)
        passed = x.bor(x.bnot(x.en), x.bor(mine, ok))
        with f.if_(x.band(x.en, mine)):
            self.atomic("AtomicAnd", "released", w, x.not_(self.bit))
        with f.if_(x.band(x.en, x.band(x.bnot(mine), ok))):
            self.atomic("AtomicOr", "released", w, x.and_(joined, x.not_(present)))
        with f.if_(x.band(x.en, x.bnot(passed))):
            self.atomic("AtomicOr", "wsync", w, self.bit)
        with f.if_(x.band(x.en, passed)):
            self.atomic("AtomicAnd", "wsync", w, x.not_(self.bit))
        self._settle(x, passed)

    def _lowest_group(self, x, mask, ok, mine):
        """WARPSYNC.EXCLUSIVE (interp.waits._exclusive): only the group of the lowest lane of the
        warp that could pass goes on in this turn. Each lane publishes its mask if it could
        pass (0 if not), and keeps ``ok``/``mine`` only if the first published mask is its own;
        then each publishes its mask again."""
        could = x.band(x.en, x.bor(ok, mine))
        first = self._swap(x, x.kb(False), publish=x.sel(could, mask, x.k32(0)), scan=("first", x.k32(0)),
                           scratch=True).scan
        mine_group = x.cmp("eq", first, mask, False)
        self._swap(x, x.kb(False), publish=x.sel(x.en, mask, x.k32(0)))
        return x.band(ok, mine_group), x.band(mine, mine_group)

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

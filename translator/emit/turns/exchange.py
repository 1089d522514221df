"""Turns mode's one exchange site: every collective of the shader swaps its lanes' values, and
every WARPSYNC and BSYNC scans its warp-mates' published masks, at a single place in the turn
loop, after the switch over blocks, instead of where the instruction stands.

Why: lavapipe (Mesa 22.3, LLVM 15) compiles a shader at its first dispatch in time that grows
with the square of its workgroup-memory accesses, and it runs every case of the switch,
masked, each turn, so every loop anywhere in the shader draws at least one iteration per turn
from its budget of 65,535 loop iterations per shader run (translator/README.md, "What the
driver pays"). Inline, a rendezvous cost about seven accesses per collective and a scan one
loop per wait: a 2,700-instruction program took minutes to compile and ended as LIVELOCK
after 247 of its 658 turns. Here they are emitted once.

How: a block holding such an instruction runs in *segments*, one turn-loop iteration each.
The case of the block is ``p = phase; if (p == 0) {...} if (p == 1) {...} ...``. The
instruction is run in passes (:meth:`SharedExchange.run_passes`):

- pass k runs the instruction's semantics with the results of its exchanges 0..k-1 (kept in
  function variables); at exchange k it *offers* its operands (enable, predicate, value,
  reduction, source lane, MATCH scan, WARPSYNC mask to publish and scan) in function
  variables and ends the segment (``phase = j + 1``): the rest of the pass is not emitted;
- the turn loop, seeing ``phase != 0`` after the switch, runs the exchange site for the
  offer (one workgroup barrier, as the inline rendezvous had) and goes round again with the
  same chosen block and the same threads, without a vote and without counting a turn;
- the next segment keeps the site's results and runs pass k + 1, and so on until a pass
  makes no offer: it is the instruction, with every write.

Each pass runs the semantics from the start, reading registers that no pass has changed
(an instruction writes no register before its exchanges: checked), so no SSA value crosses
a segment; a wait asks for its scan before it reads anything else, so a pass repeats no
memory access (except ``WARPSYNC.EXCLUSIVE``: its lowest-group exchanges come after it has
read ``wsync`` and ``released``, which its later passes read again). Where the device's subgroups are warps, collectives use subgroup operations
inline; only the waits' scans come here.
"""
from __future__ import annotations

from dataclasses import dataclass

WORDS = 3               # per warp and slot: lanes present, lanes whose predicate holds, reduction
REDUCTIONS = ("AtomicIAdd", "AtomicOr", "AtomicXor", "AtomicUMax")      # o_rop 1..4; 0: none
SCANS = ("same", "naming", "first")     # scans of the published WARPSYNC masks: o_scan 1..3; 0: none


@dataclass(frozen=True)
class Swap:
    """What one exchange gives each lane (SSA ids): the lanes present (``act``), those whose
    predicate holds (``bal``), the reduction (``red``), the value of the lane it asked for
    (``got``), the lanes whose value equals its own (``equal``, MATCH), and the scan of the
    warp's published WARPSYNC masks (``scan``, Waits)."""
    act: int
    bal: int
    red: int
    got: int
    equal: int
    scan: int


FIELDS = ("act", "bal", "red", "got", "equal", "scan")


class _Offered(Exception):
    """Raised by ``_swap`` once a pass has made its offer: the rest of the pass is not emitted."""


class SharedExchange:
    """A mixin of :class:`translator.emit.turns.warp.TurnsWarp`: the offer, the segments and the
    single exchange site."""

    def _init_exchange(self) -> None:
        """The function variables of the offer and of the site's results."""
        e, f, m, u32, bool_ = self.e, self.f, self.m, self.m.u32(), self.m.bool()
        self.phase = f.local(u32, "phase", e.k(0))
        self.offer = {"en": f.local(bool_, "offer_en"), "pred": f.local(bool_, "offer_pred"),
                      "value": f.local(u32, "offer_value"), "rop": f.local(u32, "offer_reduce"),
                      "word": f.local(u32, "offer_word"), "src": f.local(u32, "offer_lane"),
                      "match": f.local(bool_, "offer_match"), "publish": f.local(bool_, "offer_publish"),
                      "mask": f.local(u32, "offer_mask"), "scan": f.local(u32, "offer_scan"),
                      "arg": f.local(u32, "offer_scan_arg")}
        # the mask this thread last published at a WARPSYNC of its own turn: a thread outside
        # the turn publishes it again, so lanes waiting at another WARPSYNC stay visible
        self.published = f.local(u32, "published_mask", e.k(0))
        self.result = {name: f.local(u32, "swap_" + name) for name in FIELDS}
        self._kept: list[dict[str, int]] = []       # per exchange of one instruction: its results
        self._pass = None                           # None: not inside run_passes
        self._calls = 0
        self._writes_at_start = 0
        self._segment = None                        # the open segment's selection construct
        self._segment_index = 0
        self._phase_now = None                      # the block's phase, loaded where its case starts
        self._bool = m.bool()

    # ---------------------------------------------------------------- one instruction in passes
    def uses_site(self, inst) -> bool:
        """Whether ``inst`` meets its warp-mates at the site: a collective (unless subgroups are
        warps), a WARPSYNC, a BSYNC where WARPSYNC masks are published (it scans them)."""
        if not self.exchange_site:
            return False
        if inst.exchanges and not self.e.warp_subgroups:
            return True
        return inst.spec.waits in ("warpsync", "bsync") and self.lengths["wmask"] > 0

    def segments_block(self, block) -> bool:
        """Whether ``block``'s case runs in segments (an instruction of it meets at the site)."""
        return any(self.uses_site(i) for i in block.insts)

    def open_segments(self) -> None:
        """At the start of the block's case: segment 0 opens."""
        f = self.f
        self._phase_now = f.load(self.m.u32(), self.phase)
        self._segment_index = 0
        self._open(0)

    def _open(self, j: int) -> None:
        f = self.f
        self._segment = f.if_(f.op("IEqual", self._bool, self._phase_now, self.e.k(j)))
        self._segment.__enter__()

    def close_segments(self) -> None:
        """At the end of the block's case (after its next pc): the block is done."""
        self.f.store(self.phase, self.e.k(0))
        self._segment.__exit__()
        self._segment = None

    def run_passes(self, run_pass) -> None:
        """Run one instruction: ``run_pass()`` emits its semantics once; a pass that offers an
        exchange ends the segment and the instruction runs again in the next one."""
        e, f = self.e, self.f
        self._pass = 0
        while True:
            self._calls, self._writes_at_start = 0, e.writes
            try:
                run_pass()
                break
            except _Offered:
                pass
            e.flush()
            self._segment_index += 1
            f.store(self.phase, e.k(self._segment_index))
            self._segment.__exit__()
            self._open(self._segment_index)
            if len(self._kept) <= self._pass:
                self._kept.append({name: f.local(self.m.u32(), f"kept{self._pass}_{name}") for name in FIELDS})
            for name in FIELDS:
                f.store(self._kept[self._pass][name], f.load(self.m.u32(), self.result[name]))
            e.segment_opened()
            self._pass += 1
        self._pass = None

    def _swap(self, x, en, pred=None, value=None, reduce=None, src=None, match=False,
              publish=None, scan=None, scratch=False) -> Swap:
        """One rendezvous of the lanes of the turn: ``en`` says who is present, ``pred``
        (ballot), ``value`` (what the others may read), ``reduce`` = (atomic opcode, word),
        ``src`` the lane whose value this lane wants, ``match``: compare values (MATCH);
        ``publish``: this lane's WARPSYNC mask to publish first, ``scan`` = (one of SCANS, arg):
        fold the warp's published masks after the barrier (Waits); ``scratch``: a publication
        for this scan alone (threads outside the turn publish 0, and none keeps it)."""
        if self._pass is None:
            raise AssertionError(f"{x.inst.where}: {x.inst.opcode} exchanges outside run_passes")
        c = self._calls
        self._calls += 1
        if c < self._pass:
            f, u32 = self.f, self.m.u32()
            return Swap(*(f.load(u32, self._kept[c][name]) for name in FIELDS))
        if c == self._pass:
            if self.e.writes != self._writes_at_start:
                raise AssertionError(f"{x.inst.where}: {x.inst.opcode} writes a register before its exchange")
            self._make_offer(x, en, pred, value, reduce, src, match, publish, scan, scratch)
            raise _Offered
        raise AssertionError(f"{x.inst.where}: {x.inst.opcode}: exchange {c} after the pass's offer")

    def _make_offer(self, x, en, pred, value, reduce, src, match, publish, scan, scratch=False) -> None:
        f, k = self.f, x.k32
        if publish is not None and not scratch:
            publish = x.sel(x.out.active, publish, f.load(self.m.u32(), self.published))
            f.store(self.published, publish)
        rop = 0 if reduce is None else REDUCTIONS.index(reduce[0]) + 1
        for name, v in (("en", en), ("pred", pred if pred is not None else x.kb(False)),
                        ("value", value if value is not None else k(0)), ("rop", k(rop)),
                        ("word", reduce[1] if reduce is not None else k(0)),
                        ("src", src if src is not None else k(0)), ("match", x.kb(match)),
                        ("publish", x.kb(publish is not None)), ("mask", publish if publish is not None else k(0)),
                        ("scan", k(0 if scan is None else SCANS.index(scan[0]) + 1)),
                        ("arg", k(0) if scan is None else scan[1])):
            f.store(self.offer[name], v)

    # ---------------------------------------------------------------- the site
    def emit_exchange_site(self) -> None:
        """The one rendezvous, for every thread, after the switch of a turn that ended a
        segment with an offer. Slots rotate over three, so one barrier suffices: a slot is
        cleared two exchanges after its use, when nobody can still read it."""
        e, f, u32, bool_ = self.e, self.f, self.m.u32(), self.m.bool()
        load = {name: f.load(self._bool if name in ("en", "pred", "match", "publish") else u32, var)
                for name, var in self.offer.items()}
        if self.lengths["wmask"]:
            with f.if_(load["publish"]):        # after every lane has read the masks it scanned last
                self.barrier()
                self.lane_st(self.own_mask, load["mask"])
        coll = f.load(u32, self.coll)
        f.store(self.coll, f.op("IAdd", u32, coll, e.k(1)))
        slot = f.op("UMod", u32, coll, e.k(3))
        per_slot = e.k(WORDS * self.warps)
        word = lambda base, k: f.op("IAdd", u32, base, e.k(k))     # noqa: E731
        masks = self.lengths["masks"] > 0           # a program with collectives, not WARPSYNC alone
        if masks:
            mbase = f.op("IAdd", u32, f.op("IMul", u32, slot, per_slot), self.mine["masks"])
            with f.if_(load["en"]):
                self.atomic("AtomicOr", None, mbase, self.bit)
                for n, opcode in enumerate(REDUCTIONS, 1):
                    with f.if_(f.op("IEqual", bool_, load["rop"], e.k(n))):
                        self.atomic(opcode, None, word(mbase, 2), load["word"])
                with f.if_(load["pred"]):
                    self.atomic("AtomicOr", None, word(mbase, 1), self.bit)
        vbase = f.op("IMul", u32, slot, e.k(self.n))
        if self.lengths["vals"]:
            self.lane_st(f.op("IAdd", u32, vbase, self.own_value), load["value"])
        self.barrier()
        results = {name: e.k(0) for name in FIELDS}
        if masks:
            results.update(act=self.ld(None, mbase), bal=self.ld(None, word(mbase, 1)), red=self.ld(None, word(mbase, 2)))
        if self.lengths["vals"]:
            first = f.op("IAdd", u32, vbase, self.mine["vals"])
            lane = f.op("BitwiseAnd", u32, load["src"], e.k(31))
            results["got"] = self.lane_ld(f.op("IAdd", u32, first, lane))
            f.store(self.result["equal"], e.k(0))
            with f.if_(load["match"]):
                f.store(self.result["equal"], self._lanes_offering(first, load["value"]))
            results["equal"] = f.load(u32, self.result["equal"])
        if self.lengths["wmask"]:
            f.store(self.result["scan"], e.k(0))
            with f.if_(f.op("INotEqual", bool_, load["scan"], e.k(0))):
                f.store(self.result["scan"], self._scan_masks(load["scan"], load["arg"]))
            results["scan"] = f.load(u32, self.result["scan"])
        for name, v in results.items():
            f.store(self.result[name], v)
        if masks:
            old = f.op("IAdd", u32, f.op("IMul", u32, f.op("UMod", u32, f.op("IAdd", u32, coll, e.k(2)), e.k(3)),
                                         per_slot), self.mine["masks"])
            with f.if_(f.op("IEqual", bool_, e.lane, e.k(0))):
                for k in range(WORDS):
                    self.st(None, word(old, k), e.k(0))

    def _scan_masks(self, kind, arg):
        """Fold the warp's published WARPSYNC masks, lane 0 first, by ``kind`` (SCANS): the
        lanes whose mask equals ``arg`` ("same"), whose mask has a bit of ``arg`` ("naming"), or
        the first mask that is not 0 ("first"). A loop of 8 (Waits.lane_scan)."""
        e, u32, bool_ = self.e, self.m.u32(), self.m.bool()

        def step(fn, acc, lane, word):
            is_ = lambda n: fn.op("IEqual", bool_, kind, e.k(n))    # noqa: E731
            hit = fn.op("LogicalOr", bool_,
                        fn.op("LogicalAnd", bool_, is_(1), fn.op("IEqual", bool_, word, arg)),
                        fn.op("LogicalAnd", bool_, is_(2),
                              fn.op("INotEqual", bool_, fn.op("BitwiseAnd", u32, word, arg), e.k(0))))
            first_word = fn.op("Select", u32, fn.op("INotEqual", bool_, acc, e.k(0)), acc, word)
            return fn.op("Select", u32, is_(3), first_word, self._lane_bit_if(fn, acc, lane, hit))
        return self.lane_scan(self.f, self.mine["wmask"], step, unrolled=False)

    def _lanes_offering(self, first, value):
        """The lanes of this warp whose offered value (turn_lanes from ``first``) equals
        ``value``: once per shader, so unrolled (8 vector loads, no loop iterations)."""
        bool_ = self.m.bool()

        def step(fn, acc, lane, word):
            return self._lane_bit_if(fn, acc, lane, fn.op("IEqual", bool_, word, value))
        return self.lane_scan(self.f, first, step, unrolled=True)


__all__ = ["SharedExchange", "Swap", "WORDS", "REDUCTIONS"]

"""Turns mode's main loop, step by step: each turn the threads vote the lowest key (one
barrier), the threads at that pc run their block, and the others run the quiet blocks they
stand in on their own. A mixin of :class:`translator.emit.turns.warp.TurnsWarp`, whose bookkeeping
(``ld``, ``st``, ``atomic``, ``barrier``, ``keys``) it uses; the rule is :mod:`translator.interp.waits`'s.

The vote also takes the highest key: when both are equal, every thread still running stands at
one pc (a *uniform* turn), and when the block's outcome fixes where they all go next (no
conditional branch, exit, wait or YIELD), the next turn needs no vote: its key is known, and
its participants are this turn's. Where each warp takes its own turns, such a next block that
lies ahead is run inline, in the same turn (a *chain*: ``_chain``), and a turn that runs on
from the last one is not counted (``_vote_next``).
"""
from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass

from ... import abi
from ...ir.turnkey import NONE_KEY, PC_MASK, WAIT_BIT, YIELD_BIT
from ...spirv.enums import GroupOperation, Scope
from ..outcome import EXITED, Outcome

SLOTS = 3           # vote slots rotate over three, so one barrier per vote suffices
MAX_CHAIN = 16      # blocks a turn runs inline after its own (TurnLoop._chain)
INLINE_SHARE = 0.1      # the copies of chained blocks, in SASS instructions, over the listing's (TurnLoop._copy)
INLINE_FLOOR = 256      # ... but this many at least


@dataclass
class TurnVars:
    """The turn loop's function variables (SPIR-V ids)."""
    chosen: int          # the key voted this turn
    uniform: int         # every running thread stands at the chosen pc
    skip_vote: int       # the next turn's key is known: no vote
    predicted: int       # ... and this is it
    votes: int           # votes so far (selects the slot)
    parity: int          # which half of the published pcs this vote used
    known: int           # this turn came without a vote


class TurnLoop:
    """emit_main and its steps."""

    def emit_main(self) -> None:
        """The whole turns-mode shader body: set-up, the turn loop, the LIVELOCK check."""
        e = self.e
        self.quiet = {pc: b for pc, b in e.reachable.items() if e.program.quiet(b)}
        self.loud = {pc: b for pc, b in e.reachable.items() if pc not in self.quiet}
        self.needs_mask = "mask" in self.state_uses(i for b in self.loud.values() for i in b.insts)
        self._fill(publish=self.needs_mask and not e.warp_subgroups)
        e.memory.init_shared(cooperative=True)
        self.barrier(workgroup=True)
        self.tv = self._turn_vars()
        if e.warp_subgroups:
            self._check_warps()
        e.emit_loop(self._next_turn, self._run_turn)
        self._finish()

    def _turn_vars(self) -> TurnVars:
        e, f, m, u32, bool_ = self.e, self.f, self.m, self.m.u32(), self.m.bool()
        tv = TurnVars(chosen=f.local(u32, "chosen", e.k(NONE_KEY)),
                      uniform=f.local(bool_, "uniform", m.const_bool(False)),
                      # the first turn needs no vote: every thread starts at the entry, none has exited
                      skip_vote=f.local(bool_, "skip_vote", m.const_bool(True)),
                      predicted=f.local(u32, "predicted", e.k(e.program.entry)),
                      votes=f.local(u32, "votes", e.k(0)), parity=f.local(u32, "parity", e.k(0)),
                      known=f.local(bool_, "known_turn", m.const_bool(False)))
        self.parts_var = f.local(u32, "participants", e.k(0))
        f.store(self.parts_var, self.lanes)
        # whether the chosen block may have sent threads into quiet blocks (_predict)
        self.free_after = f.local(bool_, "free_after", m.const_bool(True)) if self.quiet else None
        # whether a turn may run on into a later block inline (_chain)
        self.chaining = self.per_warp and any(self._inlinable(b) for b in self.loud.values())
        self.inline_left = max(INLINE_FLOOR, int(INLINE_SHARE * len(e.program.insts)))
        if self.per_warp:       # chains: this turn runs on from the last; the pc of its last block
            self.chained = f.local(bool_, "chained", m.const_bool(False))
            self.last_pc = f.local(u32, "last_pc", e.k(0))
            self.others = f.local(u32, "others", e.k(NONE_KEY))
            # the warp's next vote, taken where the last turn ended (_end_turn)
            self.next_key = f.local(u32, "next_key", e.k(NONE_KEY))
            self.next_uniform = f.local(bool_, "next_uniform", m.const_bool(False))
        return tv

    # ---------------------------------------------------------------- choosing the turn
    def _next_turn(self) -> int:
        """The loop's test: choose this turn's key (known or voted); whether one is left to run."""
        e, f, u32, bool_, tv = self.e, self.f, self.m.u32(), self.m.bool(), self.tv
        if self.exchange_site:        # a block stopped at an exchange goes on: same turn, no vote
            with f.if_(f.op("IEqual", bool_, f.load(u32, self.phase), e.k(0))):
                self._choose()
        else:
            self._choose()
        chosen = f.load(u32, tv.chosen)
        return f.op("LogicalAnd", bool_, f.op("INotEqual", bool_, chosen, e.k(NONE_KEY)),
                    f.op("ULessThan", bool_, f.load(u32, self.turn), e.budget))

    def _choose(self) -> None:
        """This turn's key, known or voted; a round of turns ends where the key has YIELD_BIT."""
        e, f, u32, bool_, tv = self.e, self.f, self.m.u32(), self.m.bool(), self.tv
        f.if_else(f.load(bool_, tv.skip_vote), self._known_turn, self._vote_turn)
        f.store(tv.skip_vote, self.m.const_bool(False))
        chosen = f.load(u32, tv.chosen)
        round_over = f.op("INotEqual", bool_, f.op("BitwiseAnd", u32, chosen, e.k(YIELD_BIT)), e.k(0))
        f.store(e.yielded, f.op("LogicalAnd", bool_, f.load(bool_, e.yielded), f.op("LogicalNot", bool_, round_over)))

    def _known_turn(self) -> None:
        f, tv, true = self.f, self.tv, self.m.const_bool(True)
        f.store(tv.chosen, f.load(self.m.u32(), tv.predicted))
        f.store(tv.uniform, true)
        f.store(tv.known, true)

    def _vote_turn(self) -> None:
        """Every thread offers its key; the lowest wins, the highest says whether it is uniform."""
        e, f, u32, bool_, tv = self.e, self.f, self.m.u32(), self.m.bool(), self.tv
        n = f.load(u32, tv.votes)
        f.store(tv.known, self.m.const_bool(False))
        f.store(tv.votes, f.op("IAdd", u32, n, e.k(1)))
        if self.per_warp:       # the warp's own vote, taken where its last turn ended
            f.store(tv.chosen, f.load(u32, self.next_key))
            f.store(tv.uniform, f.load(bool_, self.next_uniform))
            return
        pc, exited, waiting = f.load(u32, e.pc), f.load(bool_, e.exited), f.load(bool_, e.waiting)
        mine = self._key(pc, waiting)
        slot = f.op("UMod", u32, n, e.k(SLOTS))
        if self.needs_mask and not e.warp_subgroups:
            self._publish_pc(n, pc, exited)
        self._vote(slot, f.op("Select", u32, exited, e.k(NONE_KEY), mine), f.op("Select", u32, exited, e.k(0), mine))
        self.barrier()
        chosen = self.ld("vote", slot)
        f.store(tv.chosen, chosen)
        f.store(tv.uniform, f.op("IEqual", bool_, chosen, self.ld("top", slot)))
        with f.if_(f.op("IEqual", bool_, e.tid, e.k(0))):
            stale = f.op("UMod", u32, f.op("IAdd", u32, n, e.k(SLOTS - 1)), e.k(SLOTS))
            self.st("vote", stale, e.k(NONE_KEY))
            self.st("top", stale, e.k(0))

    def _key(self, pc, waiting):
        """This thread's key (ir.turnkey): its pc, WAIT_BIT if it waits, YIELD_BIT if it yielded."""
        e, f, u32 = self.e, self.f, self.m.u32()
        rank = f.op("BitwiseOr", u32, f.op("Select", u32, waiting, e.k(WAIT_BIT), e.k(0)),
                    f.op("Select", u32, f.load(self.m.bool(), e.yielded), e.k(YIELD_BIT), e.k(0)))
        return f.op("BitwiseOr", u32, pc, rank)

    def _publish_pc(self, n, pc, exited) -> None:
        """Where this thread stands (NONE once exited), for the participant masks of the turn."""
        e, f, u32 = self.e, self.f, self.m.u32()
        parity = f.op("BitwiseAnd", u32, n, e.k(1))
        f.store(self.tv.parity, parity)
        if self.spilled:
            here = self.word_ptr(f, "keys", f.op("IAdd", u32, f.op("IMul", u32, parity, e.k(self.n)), e.tid))
        else:
            quad = f.op("IAdd", u32, f.op("IMul", u32, parity, e.k(self.n // 4)), f.op("ShiftRightLogical", u32, e.tid, e.k(2)))
            here = f.op("AccessChain", self.wg_u32, self.keys, quad, f.op("BitwiseAnd", u32, e.tid, e.k(3)))
        f.store(here, f.op("Select", u32, exited, e.k(NONE_KEY), pc), True)

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

    # ---------------------------------------------------------------- running the turn
    def _run_turn(self) -> None:
        """The threads at the chosen pc run its block; then every thread runs its quiet blocks."""
        e, f, u32, bool_ = self.e, self.f, self.m.u32(), self.m.bool()
        cpc = f.op("BitwiseAnd", u32, f.load(u32, self.tv.chosen), e.k(PC_MASK))
        if e.subgroup_vote:   # provably uniform: drivers may branch instead of masking every case
            cpc = f.op("GroupNonUniformBroadcastFirst", u32, e.k(Scope.Subgroup), cpc)
        self.cpc = cpc
        active = f.op("LogicalAnd", bool_, f.op("LogicalNot", bool_, f.load(bool_, e.exited)),
                      f.op("IEqual", bool_, f.load(u32, e.pc), cpc))
        self.turn_participants = self._turn_participants(active)
        self.active_now = active
        if self.free_after is not None:
            f.store(self.free_after, self.m.const_bool(True))
        if self.per_warp:
            f.store(self.last_pc, cpc)
            if self.chaining:
                self._others(active)
        if self.per_warp:
            self._whole_or_masked(cpc, active)
        else:
            self._masked_switch(cpc, active)
        self.apply_leaves()
        if self.exchange_site:        # the block stopped at an exchange: swap, then it goes on
            f.if_else(f.op("INotEqual", bool_, f.load(u32, self.phase), e.k(0)), self.emit_exchange_site,
                      self._end_turn)
        else:
            self._end_turn()

    def _masked_switch(self, cpc, active) -> None:
        """The chosen block's case for the lanes ``active`` (every write masked), its chains after it."""
        self.e.emit_switch(cpc, lambda _pc: active, blocks=self.loud, skip=list(self.quiet), after=self._predict)

    def _end_turn(self) -> None:
        """Threads the block sent into quiet blocks run them; the turn is counted. At the start
        of a turn every thread still running stands at a loud block (the last turn's free run
        took it there), so only the chosen block's threads can be in a quiet one, and only
        where the block has a quiet successor: elsewhere the free run (a loop over a switch on
        each thread's own pc) is skipped. On lavapipe, which runs every case masked, it made no
        measurable difference; on a GPU it is a branch where the warp agrees."""
        f, u32 = self.f, self.m.u32()
        if self.free_after is not None:
            with f.if_(f.load(self.m.bool(), self.free_after)):
                self.free_run(self.quiet)
        step = self.e.k(1)
        if self.per_warp:       # a turn that runs on from the last one is not counted
            step = f.op("Select", u32, f.load(self.m.bool(), self.chained), self.e.k(0), step)
            f.store(self.chained, self._vote_next())
        f.store(self.turn, f.op("IAdd", u32, f.load(u32, self.turn), step))

    def _vote_next(self):
        """Where each warp takes its own turns, the warp's next vote, taken as this turn ends
        (nothing moves before the next one starts): the lowest key of its running lanes and
        whether the highest is the same (``next_key``, ``next_uniform``). Returns whether the
        next turn runs on in this one (the interpreter's ``chains``): this turn's lanes, those
        still running, all stand at one pc past the turn's last block (a loud one: the free
        run took them there), that pc is the lowest key, with no bit, and the running lanes
        at it are just this turn's."""
        e, f, u32, bool_ = self.e, self.f, self.m.u32(), self.m.bool()
        pc, live = f.load(u32, e.pc), f.op("LogicalNot", bool_, f.load(bool_, e.exited))
        mine = self._key(pc, f.load(bool_, e.waiting))
        low = f.op("GroupNonUniformUMin", u32, e.k(Scope.Subgroup), GroupOperation.Reduce,
                   f.op("Select", u32, live, mine, e.k(NONE_KEY)))
        high = f.op("GroupNonUniformUMax", u32, e.k(Scope.Subgroup), GroupOperation.Reduce,
                    f.op("Select", u32, live, mine, e.k(0)))
        f.store(self.next_key, low)
        f.store(self.next_uniform, f.op("IEqual", bool_, low, high))
        # the running lanes at the lowest pc are the turn's: each is there exactly if it moved
        same = f.op("LogicalEqual", bool_, f.op("IEqual", bool_, pc, low), self.active_now)
        self.m.capability("GroupNonUniformVote")
        just_movers = f.op("GroupNonUniformAll", bool_, e.k(Scope.Subgroup),
                           f.op("LogicalOr", bool_, f.op("LogicalNot", bool_, live), same))
        onward = f.op("LogicalAnd", bool_, f.op("UGreaterThan", bool_, low, f.load(u32, self.last_pc)),
                      f.op("ULessThan", bool_, low, e.k(YIELD_BIT)))
        return f.op("LogicalAnd", bool_, onward, just_movers)

    def _alone(self, pc: int):
        """Whether the next turn would take this turn's lanes, all standing at ``pc`` (past
        this turn's blocks), and them alone: every other running lane of the warp stands
        past it (so it offers a higher key and is not there). The other lanes do not move in
        a turn, so where they stand is reduced once, at its start (``_others``); a lane
        waiting behind the turn's pc lets it run on in ``_vote_next``, not inline. None (no test)
        where the whole warp runs the turn: there is no other lane."""
        f, bool_, u32 = self.f, self.m.bool(), self.m.u32()
        if self.e.const_value.get(self.active_now) is True:     # the whole warp runs the turn
            return None
        return f.op("ULessThan", bool_, self.e.k(pc), f.load(u32, self.others))

    def _others(self, active) -> None:
        """The lowest pc of the warp's running lanes outside this turn (NONE_KEY if none)."""
        e, f, u32, bool_ = self.e, self.f, self.m.u32(), self.m.bool()
        uniform = f.load(bool_, self.tv.uniform)
        f.store(self.others, e.k(NONE_KEY))
        with f.if_(f.op("LogicalNot", bool_, uniform)):     # a uniform turn has no other lane
            other = f.op("LogicalAnd", bool_, f.op("LogicalNot", bool_, f.load(bool_, e.exited)),
                         f.op("LogicalNot", bool_, active))
            f.store(self.others, f.op("GroupNonUniformUMin", u32, e.k(Scope.Subgroup), GroupOperation.Reduce,
                                      f.op("Select", u32, other, f.load(u32, e.pc), e.k(NONE_KEY))))

    def _turn_participants(self, active):
        """The lanes of this warp at the chosen pc, where an instruction needs them."""
        f, bool_ = self.f, self.m.bool()
        if not self.needs_mask:
            return None
        if self.e.warp_subgroups:
            return self._sg_ballot(active)
        return self._participants(f.load(bool_, self.tv.known), f.load(self.m.u32(), self.tv.parity))

    def _predict(self, block, outcome: Outcome, depth: int = 0) -> None:
        """Every thread, at the end of the chosen block's case: whether the next turn is known,
        and whether a free run may follow (a successor of the block is quiet). Where each warp
        takes its own turns, a uniform turn runs on into the next block inline (``_chain``)."""
        e, f, tv = self.e, self.f, self.tv
        next_pc = outcome.destination(e.const_value)
        if self.free_after is not None:     # where the block's threads may go: its one destination, or any successor
            ahead = (next_pc,) if next_pc is not None else e.program.successors(block)
            f.store(self.free_after, self.m.const_bool(any(pc in self.quiet for pc in ahead)))
        if next_pc is None:
            self._follow(block, depth)
            return
        if next_pc == EXITED:
            key = NONE_KEY
        elif next_pc in self.quiet:
            self._run_quiet(block, self.quiet[next_pc], depth)
            return
        elif next_pc not in self.loud:
            return
        else:
            key = next_pc | (YIELD_BIT if next_pc <= block.pc else 0)
        f.store(tv.skip_vote, f.load(self.m.bool(), tv.uniform))
        f.store(tv.predicted, e.k(key))
        if next_pc != EXITED:
            self._chain(block, next_pc, depth)

    def _follow(self, block, depth: int) -> None:
        """A turn whose block branches one way or the other, where all its lanes fell through
        to the block after it (the usual way: a loop's exit test that none of them passed),
        runs on there as it would after a block with that one destination."""
        ft = block.end_pc
        if not self.per_warp or depth >= MAX_CHAIN or not self._inlinable(block) or \
                ft not in self.e.program.successors(block) or not (ft in self.quiet or ft in self.loud):
            return
        e, f, m, bool_, tv = self.e, self.f, self.m, self.m.bool(), self.tv
        m.capability("GroupNonUniformVote")
        there = f.op("LogicalAnd", bool_, f.op("LogicalNot", bool_, f.load(bool_, e.exited)),
                     f.op("IEqual", bool_, f.load(m.u32(), e.pc), e.k(ft)))
        moved = f.op("LogicalOr", bool_, f.op("LogicalNot", bool_, self.active_now), there)
        with f.if_(f.op("GroupNonUniformAll", bool_, e.k(Scope.Subgroup), moved)):
            if ft in self.quiet:
                self._run_quiet(block, self.quiet[ft], depth)
                return
            if self.free_after is not None:     # the turn's lanes all stand at a loud block
                f.store(self.free_after, m.const_bool(False))
            f.store(tv.skip_vote, f.load(bool_, tv.uniform))
            f.store(tv.predicted, e.k(ft))
            self._chain(block, ft, depth)

    def _chain(self, block, next_pc: int, depth: int) -> None:
        """A turn whose block sends all its lanes to one later loud block runs that block
        next, in this turn, where the next turn would take just them there (``_alone``; then
        ``_vote_next`` holds), inline in the case: no trip round the turn loop, its switch and
        its free run. Up to MAX_CHAIN blocks; not through a block that waits, opens or leaves
        a region, yields, meets at the exchange site or has an ordering point."""
        if not self.per_warp or depth >= MAX_CHAIN or next_pc <= block.pc:
            return
        nxt = self.loud[next_pc]
        if not (self._inlinable(block) and self._inlinable(nxt)) or not self._copy(block, nxt):
            return
        e, f = self.e, self.f
        alone = self._alone(next_pc)
        with f.if_(alone) if alone is not None else nullcontext():
            f.store(self.last_pc, e.k(next_pc))
            f.store(self.tv.skip_vote, self.m.const_bool(False))
            self._predict(nxt, e.emit_block(nxt, self.active_now), depth + 1)

    def _run_quiet(self, block, quiet, depth: int) -> None:
        """Where each warp takes its own turns, a turn whose block sends all its lanes into
        one quiet block runs that block inline, for all of them, as their free run would (a
        quiet block is the same run together or alone; a free run yields nothing; the other
        lanes stand at loud blocks), and the free run follows only where that block leads
        into quiet ones again. Where it leads them to one loud block past ``block``, the turn
        runs on there (``_chain``)."""
        if not self.per_warp or not self._inlinable(block) or not self._copy(block, quiet):
            return
        e, f, bool_, tv = self.e, self.f, self.m.bool(), self.tv
        outcome = e.emit_block(quiet, self.active_now, free=True)
        after = outcome.destination(e.const_value)
        ahead = (after,) if after is not None else e.program.successors(quiet)
        f.store(self.free_after, self.m.const_bool(any(pc in self.quiet for pc in ahead)))
        if after in self.loud and after > block.pc and self._inlinable(quiet):
            f.store(tv.skip_vote, f.load(bool_, tv.uniform))
            f.store(tv.predicted, e.k(after))
            self._chain(block, after, depth + 1)

    def _copy(self, block, inline) -> bool:
        """Whether ``inline`` may be copied into the case of ``block``, and if so, its share of
        the shader's copies taken: both must lie on loops of the listing (Program.cyclic), where
        a chain runs once per pass (elsewhere it would save one trip round the turn loop, once),
        and the copies of all chains together hold at most ``INLINE_SHARE`` of the listing's
        instructions (``INLINE_FLOOR`` at least): a block copied into the case of each block
        that leads to it grows a large listing's shader with the square of its loops' length,
        and the driver's compile time with it. A chain not copied runs on by the turn loop."""
        cyclic = self.e.program.cyclic
        if block.pc not in cyclic or inline.pc not in cyclic or len(inline.insts) > self.inline_left:
            return False
        self.inline_left -= len(inline.insts)
        return True

    def _inlinable(self, block) -> bool:
        return not (self.segments_block(block) or self.e.program.order.points_in(block) or
                    any(i.waits or i.spec.region or i.spec.yields for i in block.insts))

    def free_run(self, quiet) -> None:
        """Threads in quiet blocks run on alone until they reach one that is not (no barrier inside)."""
        e, f, m, u32, bool_ = self.e, self.f, self.m, self.m.u32(), self.m.bool()
        if not quiet:
            return
        stop = f.local(bool_, None, m.const_bool(False))
        f.store(stop, m.const_bool(False))

        def running():
            idle = f.op("LogicalOr", bool_, f.load(bool_, e.exited), f.load(bool_, e.waiting))
            go = f.op("LogicalNot", bool_, f.op("LogicalOr", bool_, idle, f.load(bool_, stop)))
            return f.op("LogicalAnd", bool_, go, f.op("ULessThan", bool_, f.load(u32, e.steps), e.budget))

        def step():
            e.emit_switch(f.load(u32, e.pc), lambda _pc: m.const_bool(True), blocks=quiet,
                          default=lambda: f.store(stop, m.const_bool(True)), free=True, alone=True)
            f.store(e.steps, f.op("IAdd", u32, f.load(u32, e.steps), e.k(1)))

        e.emit_loop(running, step)

    def _finish(self) -> None:
        """After the loop: a thread still running when the budget is spent is LIVELOCK; counters."""
        e, f, u32, bool_ = self.e, self.f, self.m.u32(), self.m.bool()
        pending = f.op("INotEqual", bool_, f.load(u32, self.tv.chosen), e.k(NONE_KEY))
        stuck = f.op("LogicalAnd", bool_, pending, f.op("LogicalNot", bool_, f.load(bool_, e.exited)))
        turns, steps = f.load(u32, self.turn), f.load(u32, e.steps)    # the budget counts both
        spent = f.op("Select", u32, f.op("UGreaterThan", bool_, turns, steps), turns, steps)
        e.record_status(e.k(abi.LIVELOCK), stuck, f.load(u32, e.pc), spent)
        e.add_counters(turns=[(abi.TURNS, f.load(u32, self.turn)), (abi.BARRIERS, f.load(u32, self.nbar))],
                       per_warp=self.per_warp)

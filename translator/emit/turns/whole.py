"""Whole-warp turns (translator/README.md, "Whole-warp turns"): where each warp takes its own
turns and every lane of the warp runs the turn, the turn's block and its chain run for all of
them from a copy with no masks, and a loop that brings the whole warp back to the block it
started at goes round again inside that copy, with the turn loop's bookkeeping done in place
(``_again``) instead of a trip round the turn loop, its vote and its switch. GPUs only
(``tight_loops``): lavapipe runs both copies, masked, and a loop in a case counts against its
shader's one budget of loop iterations."""
from __future__ import annotations

from ...ir.turnkey import YIELD_BIT
from ...spirv.enums import Scope

WHOLE_SHARE = 0.1       # the blocks copied for whole-warp turns, in SASS instructions, over the listing's
WHOLE_FLOOR = 256       # ... but this many at least (WholeWarp._hot)


class WholeWarp:
    """Mixed into the turn loop (loop.TurnLoop), whose state it reads and keeps."""

    def _whole_or_masked(self, cpc, active) -> None:
        """The chosen block's case: when every lane of the warp runs the turn (the usual case
        in a loop all its lanes go round), from the whole-warp copy, with no mask on any write
        and no test of who else is there; otherwise from the masked one. The whole-warp copy
        holds the blocks of the innermost loops (``_hot``) and only where the driver branches
        round code no lane runs (``tight_loops``). Each copy has its own budget of chain
        copies (``_copy``), so the masked one chains as it would alone."""
        e, f, m, bool_ = self.e, self.f, self.m, self.m.bool()
        hot = self._hot() if e.tight_loops else {}
        if not hot:
            self._masked_switch(cpc, active)
            return
        m.capability("GroupNonUniformVote")
        whole = f.op("GroupNonUniformAll", bool_, e.k(Scope.Subgroup), active)
        masked = f.local(bool_, None, m.const_bool(True))
        f.store(masked, f.op("LogicalNot", bool_, whole))
        true, chain_budget = m.const_bool(True), self.inline_left
        with f.if_(whole):
            self.active_now = true
            e.emit_switch(cpc, lambda _pc: true, blocks=hot, case=self._whole_case,
                          default=lambda: f.store(masked, true))
        self.active_now, self.inline_left = active, chain_budget
        with f.if_(f.load(bool_, masked)):
            self._masked_switch(cpc, active)

    def _hot(self) -> dict:
        """The loud blocks that get a whole-warp copy: those on the listing's loops
        (``Program.cyclic``; elsewhere a block runs once or so and its copy would only grow
        the shader), innermost loops first (a loop is a backward branch's span of the listing,
        as nvcc lays loops out), up to ``WHOLE_SHARE`` of the listing's instructions
        (``WHOLE_FLOOR`` at least): the driver's compile time grows with the shader."""
        program = self.e.program
        spans = [(b.insts[-1].pc, s) for b in self.e.reachable.values() for s in program.successors(b) if s <= b.pc]
        span = {pc: min((end - head for end, head in spans if head <= pc <= end), default=None)
                for pc in self.loud if pc in program.cyclic}
        left = max(WHOLE_FLOOR, int(WHOLE_SHARE * len(program.insts)))
        hot = {}
        for pc in sorted((pc for pc in span if span[pc] is not None), key=lambda pc: (span[pc], pc)):
            if len(self.loud[pc].insts) <= left:
                left -= len(self.loud[pc].insts)
                hot[pc] = self.loud[pc]
        return hot

    def _whole_case(self, block) -> None:
        """A block's case in the whole-warp copy: the block and its chain; where a branch of
        the listing leads back to the block (a loop's head), in a loop that goes round while
        the whole warp comes back (``_again``)."""
        e, f, m, bool_ = self.e, self.f, self.m, self.m.bool()
        true = m.const_bool(True)
        heads_loop = any(block.pc in e.program.successors(b) and b.pc >= block.pc for b in e.reachable.values())
        if not (heads_loop and self._inlinable(block)):
            self._predict(block, e.emit_block(block, true))
            return
        go = f.local(bool_, None, true)
        f.store(go, true)

        def trip():
            self._predict(block, e.emit_block(block, true))
            f.store(go, self._again(block))
        e.emit_loop(lambda: f.load(bool_, go), trip)

    def _again(self, block):
        """Whether the warp's next turn is this block again, for the whole warp, as the turn
        loop would find it: every lane stands at it, none waits, and all offer the same key
        (all yielded, by a backward branch of a loud block, or none: the vote would pick that
        key for all of them). If so, what the turn loop would do between the two turns is
        done here: the turn counted (``_end_turn``), the vote counted with its outcome
        (``_vote_turn``, ``_choose``: a key with YIELD_BIT ends the round) and the turn
        started (``_run_turn``). Not past the step budget, and not while a block stands at
        the exchange site."""
        e, f, m, u32, bool_, tv = self.e, self.f, self.m, self.m.u32(), self.m.bool(), self.tv
        here = f.op("LogicalAnd", bool_, f.op("IEqual", bool_, f.load(u32, e.pc), e.k(block.pc)),
                    f.op("LogicalNot", bool_, f.op("LogicalOr", bool_, f.load(bool_, e.exited),
                                                   f.load(bool_, e.waiting))))
        yielded = f.load(bool_, e.yielded)

        def all_(x):
            return f.op("GroupNonUniformAll", bool_, e.k(Scope.Subgroup), x)
        same = f.op("LogicalOr", bool_, all_(f.op("LogicalAnd", bool_, here, yielded)),
                    all_(f.op("LogicalAnd", bool_, here, f.op("LogicalNot", bool_, yielded))))
        step = f.op("Select", u32, f.load(bool_, self.chained), e.k(0), e.k(1))
        turn = f.op("IAdd", u32, f.load(u32, self.turn), step)
        go = f.op("LogicalAnd", bool_, same, f.op("ULessThan", bool_, turn, e.budget))
        if self.exchange_site:
            go = f.op("LogicalAnd", bool_, go, f.op("IEqual", bool_, f.load(u32, self.phase), e.k(0)))
        false, true = m.const_bool(False), m.const_bool(True)
        with f.if_(go):
            f.store(self.turn, turn)
            f.store(self.chained, false)
            f.store(tv.votes, f.op("IAdd", u32, f.load(u32, tv.votes), e.k(1)))
            f.store(tv.known, false)
            f.store(tv.chosen, f.op("Select", u32, yielded, e.k(block.pc | YIELD_BIT), e.k(block.pc)))
            f.store(tv.uniform, true)
            f.store(tv.skip_vote, false)
            f.store(e.yielded, false)       # a round that ended, or none to end
            f.store(self.last_pc, e.k(block.pc))
        return go

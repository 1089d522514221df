"""Whole-warp turns (translator/README.md, "Whole-warp turns"): where each warp takes its own
turns and every lane of the warp runs the turn, the turn's block and its chain run for all of
them from a copy with no masks and no test of who else is there. GPUs only (``tight_loops``):
lavapipe runs every case of a switch, masked, so it would run both copies."""
from __future__ import annotations

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
            e.emit_switch(cpc, lambda _pc: true, blocks=hot, after=self._predict,
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

"""Tight loops: a block that branches to itself, run in a loop of its own while the thread stays
in it, with no dispatch between its passes (free mode's and turns mode's ``tight_loops``, and
every self-loop of structured code).

Each pass after the first is a step against the budget, as a trip through the switch is. The
step counter is the loop's only counter: the instructions are counted once, from the passes,
after the loop.

On a GPU (``Target.pass_runs``), structured code's self-loops (``alone``) whose block may run
where only some threads do (no collective, no wait, no ordering point: ``Emitter.quiet``) first
make their passes in runs: while the budget has room for a whole run, a trip of the loop is
:func:`run_length` copies of the block, and a thread that does not stay after a copy breaks out
of the loop there, so between two passes it tests only whether it stays, as the chip's own loop
does; the budget is tested once a run. Where the budget has no room left for a run, the passes go
on one a trip, each tested against the budget: the steps, and the pass at which a spent budget
stops a thread, are those of one pass a trip.
"""
from __future__ import annotations

from ..ir.program import Block
from ..spirv.enums import Control
from .outcome import Outcome


RUN = 16                  # passes in a run at most
RUN_INSTRUCTIONS = 512    # instructions of a run's copies at most


def run_length(block: Block) -> int:
    """How many copies of ``block`` a run of passes holds (1: no runs)."""
    return max(1, min(RUN, RUN_INSTRUCTIONS // max(1, len(block.insts))))


def emit_tight(e, block: Block, active: int, free: bool, alone: bool = False) -> Outcome:
    """``do { block; steps++ } while (the thread is still at the block && steps < budget)``
    for the threads ``active`` holds (an :class:`translator.emit.emitter.Emitter` ``e``). Not
    where a driver stops a shader's loops after so many iterations of all of them together
    (``tight_loops`` off: lavapipe). ``alone``: no trip of a switch counted the first pass, and
    the loop counts it too (structured code)."""
    f, u32 = e.f, e.m.u32()
    if alone and e.pass_runs and run_length(block) > 1 and e.quiet(block):
        yes = e.m.const_bool(True)
        with f.if_(active):
            first = f.load(u32, e.steps)
            left = _emit_runs(e, block, free, run_length(block))
            with f.if_(f.op("LogicalNot", e.m.bool(), left)):
                outcome = _emit_passes(e, block, yes, free)
            _count(e, block, first, yes)
        return outcome
    first = f.load(u32, e.steps)
    outcome = _emit_passes(e, block, active, free)
    if not alone:
        f.store(e.steps, f.op("ISub", u32, f.load(u32, e.steps), e.k(1)))
        first = f.op("ISub", u32, first, e.k(1))
    _count(e, block, first, active)
    return outcome


def _count(e, block: Block, first: int, active: int) -> None:
    """The block's instructions, once for each step since ``first``."""
    u32 = e.m.u32()
    passes = e.f.op("ISub", u32, e.f.load(u32, e.steps), first)
    e.count_executed(e.f.op("IMul", u32, passes, e.k(len(block.insts))), active)


def _stays(e, block: Block) -> int:
    f, bool_ = e.f, e.m.bool()
    return f.op("LogicalAnd", bool_, f.op("IEqual", bool_, f.load(e.m.u32(), e.pc), e.k(block.pc)),
                f.op("LogicalNot", bool_, f.load(bool_, e.exited)))


def _emit_passes(e, block: Block, active: int, free: bool) -> Outcome:
    """One pass a trip, each a step tested against the budget."""
    f, m, u32, bool_ = e.f, e.m, e.m.u32(), e.m.bool()
    again = f.local(bool_, None, m.const_bool(True))
    f.store(again, m.const_bool(True))
    outcome = None

    def trip():
        nonlocal outcome
        outcome = e.emit_block(block, active, free, counted=False)
        steps = f.op("IAdd", u32, f.load(u32, e.steps), e.k(1))
        more = f.op("LogicalAnd", bool_, f.op("LogicalAnd", bool_, _stays(e, block), active),
                    f.op("ULessThan", bool_, steps, e.budget))
        f.store(e.steps, steps)
        f.store(again, more)
    e.emit_loop(lambda: f.load(bool_, again), trip)
    return outcome


def _emit_runs(e, block: Block, free: bool, length: int) -> int:
    """Runs of ``length`` passes while the budget has room for one, for a thread that runs the
    block; returns whether the thread left the block (False: the budget had no room)."""
    f, m, u32, bool_ = e.f, e.m, e.m.u32(), e.m.bool()
    yes = m.const_bool(True)
    left = f.local(bool_, None, m.const_bool(False))
    head, cont, merge = f.open_loop()
    before = f.load(u32, e.steps)
    room = f.op("ULessThan", bool_, f.op("IAdd", u32, before, e.k(length)), e.budget)
    _break_unless(e, room, merge, lambda: None)
    stays = None
    for n in range(1, length + 1):
        e.emit_block(block, yes, free, counted=False)
        stays = _stays(e, block)
        if n < length:
            def leave(n=n):
                f.store(e.steps, f.op("IAdd", u32, before, e.k(n)))
                f.store(left, yes)
            _break_unless(e, stays, merge, leave)
    f.store(e.steps, f.op("IAdd", u32, before, e.k(length)))
    f.store(left, f.op("LogicalNot", bool_, stays))
    f.op("Branch", None, cont)
    f.label(cont)
    f.op("BranchConditional", None, stays, head, merge)
    f.label(merge)
    return f.load(bool_, left)


def _break_unless(e, cond: int, merge: int, before_break) -> None:
    """``if (!cond) { before_break(); break; }`` out of the loop whose merge block is ``merge``."""
    f, m = e.f, e.m
    stay, out = m.new_id(), m.new_id()
    f.op("SelectionMerge", None, stay, Control.NONE)
    f.op("BranchConditional", None, cond, stay, out)
    f.label(out)
    before_break()
    f.op("Branch", None, merge)
    f.label(stay)

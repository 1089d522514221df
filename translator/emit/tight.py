"""Tight loops: a block that branches to itself, run in a loop of its own while the thread stays
in it, with no dispatch between its passes (free mode's and turns mode's ``tight_loops``, and
every self-loop of structured code).

Each pass after the first is a step against the budget, as a trip through the switch is. The
step counter is the loop's only counter: the instructions are counted once, from the passes,
after the loop.
"""
from __future__ import annotations

from ..ir.program import Block
from .outcome import Outcome


def emit_tight(e, block: Block, active: int, free: bool, alone: bool = False) -> Outcome:
    """``do { block; steps++ } while (the thread is still at the block && steps < budget)``
    for the threads ``active`` holds (an :class:`translator.emit.emitter.Emitter` ``e``). Not
    where a driver stops a shader's loops after so many iterations of all of them together
    (``tight_loops`` off: lavapipe). ``alone``: no trip of a switch counted the first pass, and
    the loop counts it too (structured code)."""
    f, m, u32, bool_ = e.f, e.m, e.m.u32(), e.m.bool()
    again = f.local(bool_, None, m.const_bool(True))
    f.store(again, m.const_bool(True))
    first = f.load(u32, e.steps)
    outcome = None

    def trip():
        nonlocal outcome
        outcome = e.emit_block(block, active, free, counted=False)
        stay = f.op("IEqual", bool_, f.load(u32, e.pc), e.k(block.pc))
        steps = f.op("IAdd", u32, f.load(u32, e.steps), e.k(1))
        more = f.op("LogicalAnd", bool_, f.op("LogicalAnd", bool_, stay, active),
                    f.op("LogicalAnd", bool_, f.op("LogicalNot", bool_, f.load(bool_, e.exited)),
                         f.op("ULessThan", bool_, steps, e.budget)))
        f.store(e.steps, steps)
        f.store(again, more)
    e.emit_loop(lambda: f.load(bool_, again), trip)
    end = f.load(u32, e.steps)
    if not alone:
        f.store(e.steps, f.op("ISub", u32, end, e.k(1)))
    passes = f.op("ISub", u32, end, first)
    e.count_executed(f.op("IMul", u32, passes, e.k(len(block.insts))), active)
    return outcome

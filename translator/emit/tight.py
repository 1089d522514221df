"""Tight loops: a block that branches to itself, run in a loop of its own while the thread stays
in it, with no dispatch between its passes (free mode's and turns mode's ``tight_loops``, and
every self-loop of structured code). Each pass after the first is a step against the budget.

The passes are counted by the step counter (:func:`by_steps`), or, where the block steps a
register by a constant and its branch back tests that register against a bound
(:mod:`translator.ir.counters`), by that register: where the loop's own test ends it within
the budget, the loop has no other (:func:`counted_by`), and a pass costs what the block costs.
"""
from __future__ import annotations

from dataclasses import replace

from ..ir.counters import CountedExit, Counter, counted_exit, stepped_counter
from ..ir.program import Block
from ..sass.operands import Operand
from .outcome import Outcome

BOUND_REG = 256     # a register beyond SM86's file: the bound a counted loop's test reads


def emit_tight(e, block: Block, active: int, free: bool, alone: bool = False) -> Outcome:
    """A block that branches to itself, run in a loop of its own while the thread stays in it
    (a tight loop): each pass after the first is a step against the budget, as a trip through
    the switch is, with no dispatch. Not where a driver stops a shader's loops after so many
    iterations of all of them together (``tight_loops`` off: lavapipe). The instructions are
    counted once, from the passes, after the loop.
    ``alone``: no trip of a switch counted the first pass, and the loop counts it too
    (structured code).

    Where the block's branch back tests a counter of its own (:mod:`translator.ir.counters`),
    that register counts the passes (:func:`counted_by`); elsewhere the step counter does."""
    f, u32 = e.f, e.m.u32()
    first = f.load(u32, e.steps)
    counter = stepped_counter(block)
    exit_ = counter and counted_exit(block, counter)
    if exit_:
        outcome = counted_by(e, counter, exit_, block, active, free)
    else:
        outcome = by_steps(e, block, active, free)
    end = f.load(u32, e.steps)
    if not alone:
        f.store(e.steps, f.op("ISub", u32, end, e.k(1)))
    passes = f.op("ISub", u32, end, first)
    e._count_executed(f.op("IMul", u32, passes, e.k(len(block.insts))), active)
    return outcome


def stays(e, block: Block, active: int) -> int:
    """Whether a thread goes round the tight loop of ``block`` again, the budget aside."""
    f, bool_ = e.f, e.m.bool()
    stay = f.op("IEqual", bool_, f.load(e.m.u32(), e.pc), e.k(block.pc))
    return f.op("LogicalAnd", bool_, f.op("LogicalAnd", bool_, stay, active),
                f.op("LogicalNot", bool_, f.load(bool_, e.exited)))


def by_steps(e, block: Block, active: int, free: bool) -> Outcome:
    """``do { block; steps++ } while (stays && steps < budget)``."""
    f, m, u32, bool_ = e.f, e.m, e.m.u32(), e.m.bool()
    again = f.local(bool_, None, m.const_bool(True))
    f.store(again, m.const_bool(True))
    outcome = None

    def trip():
        nonlocal outcome
        outcome = e.emit_block(block, active, free, counted=False)
        steps = f.op("IAdd", u32, f.load(u32, e.steps), e.k(1))
        f.store(e.steps, steps)
        f.store(again, f.op("LogicalAnd", bool_, stays(e, block, active),
                            f.op("ULessThan", bool_, steps, e.budget)))
    e.emit_loop(lambda: f.load(bool_, again), trip)
    return outcome


def counted_by(e, counter: Counter, exit_: CountedExit, block: Block, active: int, free: bool) -> Outcome:
    """The tight loop of a block whose branch back tests its counter against a bound
    (:class:`translator.ir.counters.CountedExit`): on entry, the pass at which the test will
    end the loop is worked out from the counter and the bound. Where that pass lies within what
    the budget leaves, the loop runs with its own test alone; elsewhere the test's bound is the
    counter's value at the last pass the budget allows, and after the loop the thread is put
    back at the block, its predicate as the listing's test left it (it stays: it spent its
    budget). The steps add the passes, read back from the counter. The counter tells apart
    fewer passes than its period, so an outer loop takes the budget a period at a time (one
    round unless the budget is larger)."""
    f, m, u32, bool_ = e.f, e.m, e.m.u32(), e.m.bool()
    reg, most = e.reg("reg", counter.reg), counter.period - 1
    test = block.insts[exit_.test]
    ops = list(test.ops)
    ops[exit_.bound] = Operand("reg", f"R{BOUND_REG}", f"R{BOUND_REG}", BOUND_REG)
    insts = list(block.insts)
    insts[exit_.test] = replace(test, ops=tuple(ops))
    bounded = Block(block.pc, tuple(insts))
    guard = block.insts[-1].guard
    outer = f.local(bool_, None, m.const_bool(True))
    f.store(outer, m.const_bool(True))
    outcome = None

    def round_():
        nonlocal outcome
        base, start = f.load(u32, e.steps), f.load(u32, reg)
        under = f.op("ULessThan", bool_, base, e.budget)
        left = f.op("Select", u32, under, f.op("ISub", u32, e.budget, base), e.k(1))
        if most != 0xFFFFFFFF:
            left = f.op("Select", u32, f.op("ULessThan", bool_, left, e.k(most)), left, e.k(most))
        bound = e.Ctx(e, test, active, Outcome(active, e.k(block.end_pc))).read(test.ops[exit_.bound])
        e.flush()
        # the test ends pass 1 + q, where the counter it reads meets the bound
        gap = f.op("ISub", u32, bound, f.op("IAdd", u32, start, e.k(exit_.lag)))
        q = f.op("BitwiseAnd", u32, f.op("IMul", u32, f.op("ShiftRightLogical", u32, gap, e.k(counter.shift)),
                                         e.k(counter.inverse)), e.k(most))
        fits = f.op("ULessThan", bool_, q, left)
        if counter.shift:
            meets = f.op("IEqual", bool_, f.op("BitwiseAnd", u32, gap, e.k((1 << counter.shift) - 1)), e.k(0))
            fits = f.op("LogicalAnd", bool_, fits, meets)
        last = f.op("IAdd", u32, f.op("IAdd", u32, start, e.k(exit_.lag)),
                    f.op("IMul", u32, f.op("ISub", u32, left, e.k(1)), e.k(counter.step)))
        f.store(e.reg("reg", BOUND_REG), f.op("Select", u32, fits, bound, last))
        again = f.local(bool_, None, m.const_bool(True))
        f.store(again, m.const_bool(True))

        def trip():
            nonlocal outcome
            outcome = e.emit_block(bounded, active, free, counted=False)
            f.store(again, stays(e, block, active))
        e.emit_loop(lambda: f.load(bool_, again), trip)
        change = f.op("ISub", u32, f.load(u32, reg), start)
        passes = f.op("BitwiseAnd", u32, f.op("IMul", u32, f.op("ShiftRightLogical", u32, change,
                                                                  e.k(counter.shift)),
                                              e.k(counter.inverse)), e.k(most))
        spent = f.op("LogicalAnd", bool_, active, f.op("LogicalNot", bool_, fits))
        f.store(e.pc, f.op("Select", u32, spent, e.k(block.pc), f.load(u32, e.pc)))
        pred = e.pred("pred", guard.value)
        f.store(pred, f.op("Select", bool_, spent, m.const_bool(not guard.inv), f.load(bool_, pred)))
        # a thread the loop does not move makes one pass, as with the step counter
        steps = f.op("IAdd", u32, base, f.op("Select", u32, active, passes, e.k(1)))
        f.store(e.steps, steps)
        f.store(outer, f.op("LogicalAnd", bool_, stays(e, block, active),
                            f.op("ULessThan", bool_, steps, e.budget)))
    e.emit_loop(lambda: f.load(bool_, outer), round_)
    return outcome

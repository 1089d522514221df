"""A register that a block adds the same constant to each time it runs: a loop's counter,
found by running the block's semantics on a symbol for each register's value on entry
(:mod:`translator.ir.lane_values`).

After ``k`` passes through such a block the counter holds its entry value plus ``k`` times the
step, modulo 2^32. A loop of that one block (a tight loop) can therefore tell how many passes
it has made from the counter alone, and leave at the pass that spends the step budget by
comparing the counter with a value worked out on entry (:meth:`Emitter.emit_tight
<translator.emit.emitter.Emitter.emit_tight>`): the loop needs no pass counter of its own.

A step ``s = odd * 2^shift`` takes the counter through ``period = 2^(32 - shift)`` values before
they repeat, so the passes are known modulo the period: from the counter's change ``d``,
``k = (d >> shift) * inverse`` modulo the period, ``inverse`` being ``odd``'s inverse modulo it.
A loop longer than the period is counted a period at a time.

Where the block's branch back goes round while the counter differs from a value the block does
not change (``ISETP.NE.AND P0, PT, R3, -0x400, PT`` ... ``@P0 BRA`` back), the pass at which the
loop leaves is known on entry too (:class:`CountedExit`); where it lies within the budget, the
loop's own test is the only one it needs.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..isa import regs
from .lane_values import M32, LaneValuesCtx, Lin, run_instruction

ENTRY = "entry"         # the atom of a register's value on entry to the block


@dataclass(frozen=True)
class Counter:
    """General register ``reg``, which each pass through its block adds ``step`` to (modulo
    2^32, never 0)."""
    reg: int
    step: int

    @property
    def shift(self) -> int:
        """How many low bits of the step are zero."""
        return (self.step & -self.step).bit_length() - 1

    @property
    def period(self) -> int:
        """How many passes the counter takes to come back to a value it held."""
        return 1 << (32 - self.shift)

    @property
    def inverse(self) -> int:
        """The inverse of the step's odd part modulo the period."""
        return pow(self.step >> self.shift, -1, self.period)

    def passes(self, change: int) -> int:
        """The passes (modulo the period) that changed the counter by ``change`` (the word
        arithmetic the emitted code does, for tests and the interpreter's checks)."""
        return ((change & M32) >> self.shift) * self.inverse % self.period


def stepped_counter(block) -> Counter | None:
    """The general register that ``block`` steps by a constant on every pass, whatever the
    values it starts from: unguarded, however the block computes it. Where several are, the one
    with the longest period (then the lowest register). None where there is none."""
    state = {("reg", r): Lin(frozenset({((ENTRY, r), 1)}), 0) for r in range(regs.RZ)}
    for inst in block.insts:
        run_instruction(state, inst, lambda *access: None, None)
    found = []
    for r in range(regs.RZ):
        v = state.get(("reg", r))
        if v is not None and v.terms == frozenset({((ENTRY, r), 1)}) and v.const & M32:
            found.append(Counter(r, v.const & M32))
    return min(found, key=lambda c: (c.shift, c.reg), default=None)


@dataclass(frozen=True)
class CountedExit:
    """The test that ends a counted tight loop: instruction ``test`` of the block (an
    ``ISETP``) compares the counter, ``lag`` beyond its value at the start of the pass, with its
    operand ``bound``, which the block does not change; the branch back goes round while they
    differ. At pass ``k`` it compares ``start + lag + (k - 1) * step``."""
    test: int
    bound: int
    lag: int


def _entry(state: dict) -> dict:
    return {("reg", r): Lin(frozenset({((ENTRY, r), 1)}), 0) for r in range(regs.RZ)} | state


def counted_exit(block, counter: Counter) -> CountedExit | None:
    """How ``block``'s branch back tests its ``counter``, where it is a plain comparison for
    inequality with a bound the block does not change, and its predicate nothing else in the
    block names; None for any other test."""
    *body, branch = block.insts
    guard = branch.guard
    if branch.base != "BRA" or branch.target != block.pc or guard is None or guard.kind != "pred" or regs.is_true(guard):
        return None
    names = [k for k, i in enumerate(body) if any(o.kind == "pr" or (o.kind == "pred" and o.value == guard.value)
                                                   for o in i.ops)]
    if len(names) != 1:
        return None
    k = names[0]
    test = body[k]
    if (test.base != "ISETP" or test.guard is not None or "EX" in test.mods or "AND" not in test.mods
            or len(test.ops) != 5 or test.ops[0].kind != "pred" or test.ops[0].value != guard.value
            or not all(regs.is_true(o) and not o.inv for o in (test.ops[1], test.ops[4]))):
        return None
    if ("NE" in test.mods) == guard.inv or not ({"NE", "EQ"} & test.mods):
        return None                 # it goes round while the two are equal
    state = _entry({})
    for inst in body[:k]:
        run_instruction(state, inst, lambda *access: None, None)
    at_test = LaneValuesCtx(state, test, lambda *access: None, None)
    on_entry = LaneValuesCtx(_entry({}), test, lambda *access: None, None)
    for side in (2, 3):
        mine, other = test.ops[side], test.ops[5 - side]
        value = at_test.read(mine)
        if (mine.kind != "reg" or mine.value != counter.reg or mine.neg or mine.inv or mine.abs
                or value.terms != frozenset({((ENTRY, counter.reg), 1)})):
            continue
        bound = at_test.read(other)
        if not bound.unknown and bound == on_entry.read(other) and _unchanged(block, bound):
            return CountedExit(k, 5 - side, value.const & M32)
    return None


def _unchanged(block, value: Lin) -> bool:
    """Whether ``value`` (read at the test) is the same on every pass: the registers it names
    hold at the end of the block what they held on entry."""
    state = _entry({})
    for inst in block.insts:
        run_instruction(state, inst, lambda *access: None, None)
    return all(at[0] != ENTRY or state.get(("reg", at[1])) == Lin(frozenset({(at, 1)}), 0) for at, _ in value.terms)

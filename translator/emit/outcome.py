"""Where the threads that ran a block go next: a value the walk over the block's semantics
builds and returns (as miasm's ``IRDst``), rather than flags the emitter's parts set on each
other. Branches replace the next pc, a waiting instruction keeps some threads at its own pc,
exits and yields are noted; the turn loop reads the result to skip the next vote.
"""
from __future__ import annotations

from dataclasses import dataclass

EXITED = -1        # Outcome.destination: every thread that ran the block has exited


@dataclass
class Outcome:
    """The outcome of one block, for the threads in ``active`` (an SSA boolean)."""
    active: int
    next_pc: int                  # SSA u32: the pc each thread goes to next
    exits: bool = False           # an instruction may have ended some threads
    all_exit: bool = False        # an exit ended every thread of the block
    waits: bool = False           # a waiting instruction may keep threads at its pc
    yields: bool = False          # a YIELD may have run

    def jump(self, x, target, cond) -> None:
        """Threads where ``cond`` holds go to ``target`` (both SSA ids, ``x`` a SpirvCtx)."""
        known = x.known.get(cond)
        if known is True:
            self.next_pc = target
        elif known is not False:
            self.next_pc = x.f.op("Select", x.u32, cond, target, self.next_pc)

    def stay(self, x, cond) -> None:
        """Threads where ``cond`` holds wait at the instruction ``x`` runs."""
        self.waits = True
        self.next_pc = x.sel(cond, x.k32(x.inst.pc), self.next_pc)

    def exit(self, cond) -> None:
        """Threads where ``cond`` holds end here."""
        self.exits = True
        self.all_exit = self.all_exit or cond == self.active

    def destination(self, const_value: dict) -> int | None:
        """The pc every thread that ran the block goes to, when the code fixes it (no
        conditional branch, exit, wait or YIELD); EXITED when they all exit; else None."""
        if self.waits or self.yields:
            return None
        if self.all_exit:
            return EXITED
        if self.exits:
            return None
        return const_value.get(self.next_pc)

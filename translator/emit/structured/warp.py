"""The `structured` strategy's warp state: each thread on its own structured code, and the
shader body emitted by :class:`.main.StructuredBody` instead of a pc loop (``owns_main``).

A warp's lanes meet where the structure brings them together: collectives are subgroup
operations (:class:`translator.emit.subgroups.SubgroupWarp`) at the construct each thread
is in, with maximal reconvergence where the device offers it, so the lanes at a VOTE are
the ones that took the same way to it, as at the chip's BSYNC. BSSY/BSYNC, WARPSYNC and
YIELD do nothing: the merges of the structured constructs are where the warp rejoins. A
lane-order point (:mod:`translator.ir.order`) is a subgroup memory barrier: the lanes run in
step there only where a warp is a subgroup, so a program with one needs warps as a program
with collectives does. ``BAR.SYNC 0`` is a workgroup ``OpControlBarrier`` where the thread
meets it.
"""
from __future__ import annotations

from ...errors import UnsupportedInstruction
from ...spirv.enums import MemorySemantics as Sem
from ...spirv.enums import Scope
from ..subgroups import SubgroupWarp
from .main import StructuredBody


class StructuredWarp(SubgroupWarp):
    """Collectives at the structured constructs, on the device's subgroups."""

    owns_main = True                 # the emitter calls emit_main, whatever the mode

    def __init__(self, e):
        why = self.needs_warps(e.program)
        if why and not e.subgroups_are_warps:
            raise UnsupportedInstruction(
                f"structured: {e.program.name}: its {why} need a warp to be a subgroup (or a workgroup to fit "
                "in one), and this target's subgroups are not", "subgroups")
        super().__init__(e)
        self.body = StructuredBody(e)

    @staticmethod
    def needs_warps(program) -> str | None:
        found = [what for what, has in (("collectives", program.collectives),
                                        ("lane-order points", program.order.points)) if has]
        return " and ".join(found) or None

    def fits(self, size: int) -> int:
        """Whole warps in each subgroup, or the whole workgroup in one."""
        f, bool_, e = self.f, self.m.bool(), self.e
        return f.op("LogicalOr", bool_, super().fits(size), f.op("UGreaterThanEqual", bool_, size, e.k(e.nthreads)))

    def order_point(self, inst):
        """The warp's writes before ``inst`` reach its lanes (which run it in step)."""
        f, e = self.f, self.e
        f.op("MemoryBarrier", None, e.k(Scope.Subgroup), e.k(Sem.AcquireRelease | Sem.WorkgroupMemory | Sem.UniformMemory))

    def emit_main(self) -> None:
        self.body.emit()

"""The `structured` strategy's warp state: each thread on its own structured code, and the
shader body emitted by :class:`.main.StructuredBody` instead of a pc loop (``owns_main``).

A warp's lanes meet where the structure brings them together: collectives are subgroup
operations (:class:`translator.emit.subgroups.SubgroupWarp`) at the construct each thread
is in, with maximal reconvergence where the device offers it, so the lanes at a VOTE are
the ones that took the same way to it, as at the chip's BSYNC. BSSY/BSYNC, WARPSYNC and
YIELD do nothing (but WARPSYNC.EXCLUSIVE's groups, as in ``subgroups.py``): the merges of the
structured constructs are where the warp rejoins.
``BAR.SYNC 0`` is a workgroup ``OpControlBarrier`` where the thread meets it; where every
invocation passes that code once (the top scope, outside every selection and loop), the
threads that exited pass it too, so the barrier stays in uniform control flow, as Vulkan asks,
and they hold no one up, as on the chip.

A lane-order point (:mod:`translator.ir.order`) is a subgroup memory barrier where a warp is
a subgroup: its lanes run in step. Elsewhere it is a workgroup barrier, which is only right
where the threads reach it together: in the top scope (every invocation passes it once), in
a block that holds a ``BAR.SYNC`` or falls into one with no branch between, which the
program itself asks the whole block to reach, or in a scope that every invocation walks
(:mod:`.uniform`), as any other point is.
"""
from __future__ import annotations

from ...errors import UnsupportedInstruction
from ...spirv.enums import MemorySemantics as Sem
from ...spirv.enums import Scope
from ..subgroups import SubgroupWarp
from .barriers import Reductions
from .main import StructuredBody


class StructuredWarp(SubgroupWarp):
    """Collectives at the structured constructs, on the device's subgroups."""

    owns_main = True                 # the emitter calls emit_main, whatever the mode
    # a load a loop may wait on (Program.spin_reads) is an atomic add of 0: in a structured
    # loop that tests only its flag, NVIDIA's compiler reads a volatile or atomic load's word
    # once, and the spinner never sees it change (spin/inter_warp_shared_spinner_first,
    # spin/fence_handoff and spin/nanosleep_flag: LIVELOCK on an H100 with either load, PASS
    # with the add)
    spin_reads_write = True

    def __init__(self, e):
        if self.needs_warps(e.program) and not e.subgroups_are_warps:
            raise UnsupportedInstruction(
                f"structured: {e.program.name}: its collectives need a warp to be a subgroup (or a workgroup to "
                "fit in one), and this target's subgroups are not", "subgroups")
        self.covered = frozenset(_points_before_bar(e.program))
        super().__init__(e)
        self.body = StructuredBody(e, self.covered)
        self.reductions = Reductions(e)

    def fits(self, size: int) -> int:
        """Whole warps in each subgroup, or the whole workgroup in one."""
        f, bool_, e = self.f, self.m.bool(), self.e
        return f.op("LogicalOr", bool_, super().fits(size), f.op("UGreaterThanEqual", bool_, size, e.k(e.nthreads)))

    def order_point(self, inst, active):
        """The warp's accesses before ``inst`` done and seen by its lanes: a subgroup memory
        barrier where they run in step, a workgroup barrier for the block's threads otherwise."""
        f, e = self.f, self.e
        sem = e.k(Sem.AcquireRelease | Sem.WorkgroupMemory | Sem.UniformMemory)
        if e.subgroups_are_warps:
            f.op("MemoryBarrier", None, e.k(Scope.Subgroup), sem)
            return
        if self.body.everyone or inst.pc in self.body.points:    # every invocation is here (.uniform)
            f.barrier()
            return
        with f.if_(active):         # a covered point: the block's threads reach its barrier
            f.barrier()

    def bar(self, x, kind, barrier, count, pred):
        """In the top scope, or a block that every invocation walks (:mod:`.uniform`), an
        unpredicated ``BAR.SYNC 0`` is every invocation's barrier, and so are the forms Vulkan
        lacks where the program allows (:mod:`.barriers`): a reduction counts in workgroup
        memory."""
        if (self.body.everyone or self.body.walking) and x.inst.guard is None:
            if kind in ("popc", "and", "or"):
                self.reductions.reduce(x, kind, pred)
                return
            if not (kind == "sync" and count is None and x._value(barrier) == 0) and self.body.forms_why:
                raise UnsupportedInstruction(f"structured: {self.body.forms_why}", x.inst.opcode)
            self.f.barrier()
            return
        super().bar(x, kind, barrier, count, pred)

    def emit_main(self) -> None:
        self.body.emit()


def _points_before_bar(program) -> list[int]:
    """The lane-order points in a block that runs as a block barrier's does: its own, or one
    it falls into without a branch between (one way on, and the only way in)."""
    reach = program.reachable
    succ = {pc: [s for s in program.successors(b) if s in reach] for pc, b in reach.items()}
    preds: dict[int, int] = {}
    for nexts in succ.values():
        for s in nexts:
            preds[s] = preds.get(s, 0) + 1
    has_bar = lambda pc: any(i.spec.waits == "bar" for i in reach[pc].insts)   # noqa: E731

    def covered(pc: int) -> bool:
        seen = set()
        while pc not in seen:
            seen.add(pc)
            if has_bar(pc):
                return True
            if len(succ[pc]) != 1 or preds.get(succ[pc][0]) != 1:
                return False
            pc = succ[pc][0]
        return False
    return [pc for start, block in reach.items() if covered(start) for pc in program.order.points_in(block)]

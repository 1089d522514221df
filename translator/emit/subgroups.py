"""A warp on the device's subgroups: collectives as subgroup operations where each thread
meets them, convergence instructions left to the device. The `subgroup-native` strategy uses
it inside each thread's pc loop; the `structured` strategy in structured control flow.

A warp is 32 consecutive invocations of a subgroup: the whole subgroup where it is 32 wide,
each half (quarter...) of a wider one, as emulators split wave64; or, for a workgroup no
larger than one subgroup, the workgroup's lanes of it (:meth:`SubgroupWarp.fits`). The lane is
``SubgroupLocalInvocationId & 31`` (SR_LANEID and the lane masks follow it), not the local
index: where a device numbers its lanes otherwise, the program sees that. A subgroup whose
size is not a multiple of 32 cannot hold a warp: its threads say so (NOT_WARPS) and leave.

What the device decides, and turns would not leave to it: which lanes of a warp are at a
collective together (under a pc loop, the ones in the same iteration with the same pc; in
structured code, the ones at the same construct), under the device's reconvergence. BSSY/BSYNC,
WARPSYNC, YIELD and lane-order points do nothing, but for WARPSYNC.EXCLUSIVE: until the
region's BSYNC, a collective sees only the lanes of the thread's own mask. BAR.SYNC is a workgroup
barrier where the thread meets it (only barrier 0 for every thread: Vulkan has no other).
"""
from __future__ import annotations

from .. import abi
from ..errors import UnsupportedInstruction
from ..spirv.enums import ExecutionMode
from ..spirv.enums import MemorySemantics as Sem
from ..spirv.enums import Scope
from .lanes import NoWaits, match_all_of, shfl_source


class SubgroupWarp(NoWaits):
    """The collectives of :class:`translator.isa.ctx.Ctx` on the device's subgroups."""

    region_masks_shared = False      # Bx masks live in each thread's own variable
    execution_modes: tuple = ()      # MaximallyReconvergesKHR where the device offers it

    def __init__(self, e):
        self.e, self.m, self.f = e, e.m, e.f
        m, f, u32, bool_ = e.m, e.f, e.m.u32(), e.m.bool()
        self.v4 = m.vec(u32, 4)
        self.uses = self.needs_warps(e.program)
        self.group = None                # WARPSYNC.EXCLUSIVE's mask (below)
        self.subgroup_size = 32 if self.uses else None   # what the pipeline asks for where it can
        if not self.uses:
            return
        for cap in ("GroupNonUniform", "GroupNonUniformBallot", "GroupNonUniformShuffle"):
            m.capability(cap)
        if e.features is not None and "shaderMaximalReconvergence" in e.features:
            # the device's promise that lanes which branch alike reconverge where they could
            m.extension("SPV_KHR_maximal_reconvergence")
            self.execution_modes = (ExecutionMode.MaximallyReconvergesKHR,)
        size = f.load(u32, m.builtin("SubgroupSize", u32))
        self.sg_lane = f.load(u32, m.builtin("SubgroupLocalInvocationId", u32))
        e.lane = f.op("BitwiseAnd", u32, self.sg_lane, e.k(31))          # the warp lane
        self.base = f.op("BitwiseAnd", u32, self.sg_lane, e.k(0xFFFFFFE0))  # the warp's lane 0
        self.word = f.op("ShiftRightLogical", u32, self.sg_lane, e.k(5))  # its word of a ballot
        bad = f.op("LogicalNot", bool_, self.fits(size))
        e.record_status(e.k(abi.NOT_WARPS), bad, e.k(0))
        f.store(e.exited, bad)
        # WARPSYNC.EXCLUSIVE Rm: until the region's BSYNC, the lanes of this thread's mask Rm
        # meet apart from lanes with another (ptxas's slow path of __reduce_*_sync with a
        # register mask: REDUX sees one mask's lanes); all lanes elsewhere
        exclusive = any(i.spec.waits == "warpsync" and "EXCLUSIVE" in i.mods
                        for b in e.program.reachable.values() for i in b.insts)
        self.group = f.local(u32, "exclusive_group", e.k(0xFFFFFFFF)) if exclusive else None

    @staticmethod
    def needs_warps(program) -> str | None:
        """What in ``program`` needs its warps on subgroups (None: nothing)."""
        return "collectives" if program.collectives else None

    def fits(self, size: int) -> int:
        """Whether subgroups of ``size`` (an SSA value) hold whole warps: a multiple of 32."""
        return self.f.op("IEqual", self.m.bool(), self.f.op("BitwiseAnd", self.m.u32(), size, self.e.k(31)),
                         self.e.k(0))

    # ---------------------------------------------------------------- subgroup operations
    def _ballot(self, x, cond):
        """The lanes of this warp, among those here, where ``cond`` holds."""
        votes = self.f.op("GroupNonUniformBallot", self.v4, x.k32(Scope.Subgroup), cond)
        return self.f.op("VectorExtractDynamic", self.m.u32(), votes, self.word)

    def _lane_value(self, x, value, lane):
        """``value`` as lane ``lane`` (0-31) of this warp holds it (undefined where it is not here)."""
        return self.f.op("GroupNonUniformShuffle", self.m.u32(), x.k32(Scope.Subgroup), value,
                         x.or_(self.base, lane))

    def _in_group(self, x, lanes):
        return lanes if self.group is None else x.and_(lanes, self.f.load(self.m.u32(), self.group))

    def active(self, x):
        if x._active is None:
            x._active = self._in_group(x, self._ballot(x, x.en))
        return x._active

    def ballot(self, x, p):
        return self._in_group(x, self._ballot(x, x.band(x.en, p)))

    def warpsync(self, x, mask):
        if self.group is not None and "EXCLUSIVE" in x.inst.mods:
            self.f.store(self.group, x.sel(x.en, mask, self.f.load(self.m.u32(), self.group)))

    def bsync(self, x, barrier):
        if self.group is not None:
            self.f.store(self.group, x.sel(x.en, x.k32(0xFFFFFFFF), self.f.load(self.m.u32(), self.group)))

    def shfl(self, x, mode, value, b, c):
        """A source lane in range that is not at this SHFL gives 0, as on the chip."""
        source, ok = shfl_source(x, mode, self.e.lane, b, c)
        present = x.cmp("ne", x.and_(x.shr(self.active(x), source), x.k32(1)), x.k32(0), False)
        return x.sel(ok, x.sel(present, self._lane_value(x, value, source), x.k32(0)), value), ok

    def _each_lane(self, x, value, step, start):
        """``step(acc, theirs, bit)`` folded over the 32 lanes of the warp that are here."""
        here, acc = self.active(x), start
        for lane in range(32):
            theirs = self._lane_value(x, value, x.k32(lane))
            present = x.cmp("ne", x.and_(here, x.k32(1 << lane)), x.k32(0), False)
            acc = x.sel(present, step(acc, theirs, x.k32(1 << lane)), acc)
        return acc, here

    def _equal_lanes(self, x, value):
        same = lambda acc, theirs, bit: x.sel(x.cmp("eq", theirs, value, False), x.or_(acc, bit), acc)  # noqa: E731
        return self._each_lane(x, value, same, x.k32(0))

    def match_any(self, x, value):
        return self._equal_lanes(x, value)[0]

    def match_all(self, x, value):
        return match_all_of(x, *self._equal_lanes(x, value))

    def redux(self, x, op, value, signed):
        cmp = lambda a, b: x.cmp("lt", a, b, signed)  # noqa: E731
        step, start = {"sum": (lambda a, t, _: x.add(a, t), 0), "or": (lambda a, t, _: x.or_(a, t), 0),
                       "xor": (lambda a, t, _: x.xor(a, t), 0), "and": (lambda a, t, _: x.and_(a, t), 0xFFFFFFFF),
                       "min": (lambda a, t, _: x.sel(cmp(t, a), t, a), 0x7FFFFFFF if signed else 0xFFFFFFFF),
                       "max": (lambda a, t, _: x.sel(cmp(a, t), t, a), 0x80000000 if signed else 0)}[op]
        return self._each_lane(x, x.sel(x.en, value, x.k32(start)), step, x.k32(start))[0]

    # ---------------------------------------------------------------- waits and regions
    def order_point(self, inst, active): pass

    def bar(self, x, kind, barrier, count, pred):
        if kind != "sync" or count is not None or x._value(barrier) != 0:
            raise UnsupportedInstruction(
                f"{x.inst.where}: '{x.inst.text}' in {self.e.strategy.name} (a Vulkan workgroup barrier is "
                "BAR.SYNC 0 of every thread: no other barrier, count or reduction)", x.inst.opcode)
        f = self.f
        with f.if_(x.en):
            f.op("ControlBarrier", None, x.k32(Scope.Workgroup), x.k32(Scope.Workgroup),
                 x.k32(Sem.AcquireRelease | Sem.WorkgroupMemory))

"""The interpreter with each instruction run once per turn for all its threads (numpy arrays
over the lanes, :class:`.ctx.LaneCtx`), the turn rule and the waits unchanged.

:class:`VectorInterpreter` is :class:`translator.interp.machine.Interpreter` with its block's
registers in arrays (:mod:`.lanes`). A turn's block runs instruction by instruction for the
threads at its pc, as the scalar one does. A *free run* (each thread alone through quiet
blocks) runs the threads together instead, block by block, the lowest pc first; where that
could differ from the threads one after another (a failure, printf, threads sharing a word of
global memory out of thread order: :mod:`.journal`) the run is undone and done again by the
scalar interpreter, on the same state. Waiting instructions (BSYNC, WARPSYNC, BAR) run as
before, thread by thread (:func:`translator.interp.waits.sync_step`).
"""
from __future__ import annotations

import numpy as np

from .. import waits
from ..machine import Cta, Interpreter
from ...isa import regs, sregs
from .ctx import LaneCtx, Redo
from .journal import AccessLog
from .lanes import LaneFile, Lanes, LaneThread


def _views(buf):
    """A bytearray as bytes and as little-endian words (shared with it)."""
    u8 = np.frombuffer(buf, np.uint8) if len(buf) else np.zeros(0, np.uint8)
    u32 = np.frombuffer(buf, "<u4", count=len(buf) // 4) if len(buf) >= 4 else np.zeros(0, "<u4")
    return u8, u32


def _used_rows(program):
    """The register rows any instruction may touch (a group of up to 4 from each operand)."""
    r, ur = set(range(4, 8)), set()

    def walk(o):
        if o is None:
            return
        if o.kind == "reg" and not regs.is_zero(o):
            r.update(range(o.value, min(o.value + 4, 256)))
        elif o.kind == "ureg" and not regs.is_zero(o):
            ur.update(range(o.value, min(o.value + 4, 64)))
        for sub in (getattr(o, "base", None), getattr(o, "uniform_base", None), getattr(o, "index", None)):
            walk(sub)
    for inst in program.insts:
        for o in inst.ops:
            walk(o)
    return np.array(sorted(r), np.int64), np.array(sorted(ur), np.int64)


class VectorInterpreter(Interpreter):
    """Runs one launch as :class:`Interpreter` does, with the same results, turns and messages."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.scalar = False                 # inside a free run done again thread by thread
        self.views = [_views(b) for b in self.memory.buffers]
        self.buffer_sizes = np.array([len(b) for b in self.memory.buffers], np.int64)
        self.cbank8 = np.frombuffer(bytes(self.cbank) + bytes(16), np.uint8)
        self.quiet_set = {pc for pc, b in self.program.blocks.items() if self.program.quiet(b)}
        self.quiet_at = np.zeros(max(self.quiet_set, default=0) + 2, bool)     # by pc: a quiet block starts there
        self.quiet_at[list(self.quiet_set)] = True
        self.rows_r, self.rows_ur = _used_rows(self.program)
        self.reads_clock = sregs.reads_clock(self.program.insts)
        self.log: AccessLog | None = None
        self.redos: list[str] = []          # why free runs were done again (for tests)

    def new_cta(self, ctaid) -> Cta:
        bx, by, bz = self.launch.block
        n = bx * by * bz
        file = LaneFile(n, self.program.local_bytes, self.launch.block)
        entry = self.program.entry
        threads = [LaneThread(t, (t % bx, t // bx % by, t // (bx * by)), ctaid, entry, file) for t in range(n)]
        cta = Cta(threads, bytearray(self.shared_bytes))
        cta.file, cta.ctaid, cta.views = file, ctaid, _views(cta.shared)
        return cta

    # a turn's block
    def step(self, cta, block, parts, free: bool = False) -> None:
        if self.scalar:
            return super().step(cta, block, parts, free)
        n = len(parts)
        tids = np.array([t.tid for t in parts], np.int64)
        lanes = Lanes(cta, tids, np.zeros(n, bool), self._clocks(parts), free=False)     # turn(): running threads
        self.stats.steps += len(parts)
        for k, inst in enumerate(block.insts):
            self.stats.instructions += len(parts)
            if inst.waits:
                waits.sync_step(self, cta, inst, parts)
                return
            self.inst_index = k
            self.run_inst(cta, inst, lanes)
        size, end = len(block.insts), block.end_pc
        for t, pc in zip(parts, lanes.new_pc.tolist()):
            t.clock += size
            if not t.exited:
                t.pc = pc if pc >= 0 else end
            t.waiting = False
            if not free:
                waits.after_block(t, block)

    def _clocks(self, threads):
        """The threads' instruction counts, where the program reads the clock."""
        if not self.reads_clock:
            return np.zeros(len(threads), np.int64)
        return np.array([t.clock for t in threads], np.int64)

    def run_inst(self, cta, inst, lanes) -> None:
        x = LaneCtx(self, cta, lanes, inst)
        inst.spec.sem(x, inst)
        if x.pending is not None:
            raise x.pending

    # free runs
    def free_run(self, cta, threads) -> None:
        if self.scalar:
            return super().free_run(cta, threads)
        run = [t for t in threads if not t.exited and not t.waiting and t.pc in self.quiet_set]
        if not run:
            return
        tids = np.array([t.tid for t in run], np.int64)
        saved = self._save(cta, tids)
        self.log = AccessLog()
        try:
            state = self._lockstep(cta, run, tids)
            if not self.log.serial():
                raise Redo("threads share global memory words out of thread order")
        except Exception as exc:    # noqa: BLE001 - every error is the scalar run's to raise, in its order
            self.redos.append(f"{type(exc).__name__}: {exc}")
            self.log.rollback()
            self.log = None
            self._restore(cta, tids, saved)
            self.scalar = True
            try:
                super().free_run(cta, threads)
            finally:
                self.scalar = False
            return
        self.log = None
        for t, pc, steps, clock, exited in zip(run, *(a.tolist() for a in state)):
            t.pc, t.steps, t.clock, t.exited, t.waiting = pc, steps, clock, exited, False

    def _lockstep(self, cta, run, tids):
        n = len(run)
        pc = np.array([t.pc for t in run], np.int64)
        steps = np.array([t.steps for t in run], np.int64)
        clock = np.array([t.clock for t in run], np.int64)
        exited = np.zeros(n, bool)
        active = np.ones(n, bool)
        while True:
            live = np.flatnonzero(active)
            if not len(live):
                return pc, steps, clock, exited
            at = int(pc[live].min())
            grp = live[pc[live] == at]
            block = self.program.blocks[at]
            if (steps[grp] >= self.budget).any():
                raise Redo("the step budget")
            steps[grp] += 1
            lanes = Lanes(cta, tids[grp], np.zeros(len(grp), bool), clock[grp], free=True)
            self.stats.steps += len(grp)
            for k, inst in enumerate(block.insts):
                self.stats.instructions += len(grp)
                self.inst_index = k
                self.run_inst(cta, inst, lanes)
            clock[grp] += len(block.insts)
            gone = lanes.exited
            exited[grp] = gone
            new_pc = np.where(lanes.new_pc >= 0, lanes.new_pc, block.end_pc)
            pc[grp] = np.where(gone, at, new_pc)
            there = pc[grp]
            active[grp] = ~gone & self.quiet_at[np.where((there >= 0) & (there < len(self.quiet_at)), there, -1)]

    def _save(self, cta, tids):
        """What a free run may change in the state of threads ``tids``: registers, predicates,
        local memory, and the counts."""
        f, cols = cta.file, self._columns(tids)
        return (f.r[self.rows_r][:, cols], f.ur[self.rows_ur][:, cols], f.p[:, cols], f.up[:, cols],
                f.local[cols], self.stats.steps, self.stats.instructions)

    def _restore(self, cta, tids, saved):
        f, cols = cta.file, self._columns(tids)
        r, ur, p, up, local, self.stats.steps, self.stats.instructions = saved
        f.r[self.rows_r[:, None], np.arange(f.n)[cols][None, :]] = r
        f.ur[self.rows_ur[:, None], np.arange(f.n)[cols][None, :]] = ur
        f.p[:, cols], f.up[:, cols], f.local[cols] = p, up, local

    @staticmethod
    def _columns(tids):
        """``tids`` as a slice where they are a run of consecutive threads."""
        if len(tids) and int(tids[-1]) - int(tids[0]) == len(tids) - 1:
            return slice(int(tids[0]), int(tids[-1]) + 1)
        return tids

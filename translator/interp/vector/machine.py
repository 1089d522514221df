"""The interpreter with each instruction run once per turn for all its threads (numpy arrays
over the lanes, :class:`.ctx.LaneCtx`), the turn rule and the waits unchanged.

:class:`VectorInterpreter` is :class:`translator.interp.machine.Interpreter` with its block's
registers in arrays (:mod:`.lanes`). A turn's block runs instruction by instruction for the
threads at its pc, as the scalar one does. A *free run* (each thread alone through quiet
blocks) runs the threads together instead, block by block, the lowest pc first; where that
could differ from the threads one after another (a failure, printf, threads sharing a word of
global memory out of thread order: :mod:`.journal`) the run is undone and done again by the
scalar interpreter, on the same state. The turn rule reads the block's arrays (pc, flags), and
waiting instructions (BSYNC, WARPSYNC, BAR) ask all their lanes at once; what they decide is
:func:`translator.interp.waits.sync_step`'s, through this class's hooks (``warp_facts``,
``barrier_masks``, ``settle``, ``leave_region``).
"""
from __future__ import annotations

import numpy as np

from .. import waits
from ..machine import Cta, Interpreter
from ...errors import BadPc
from ...ir.turnkey import PC_MASK
from ...isa import regs, sregs
from .ctx import LaneCtx, Redo
from .journal import AccessLog
from .lanes import LaneFile, Lanes, LaneThread


_LANE_BITS = np.left_shift(1, np.arange(32, dtype=np.int64))


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
        file = LaneFile(n, self.program.local_bytes, self.launch.block, self.program.entry)
        threads = [LaneThread(t, (t % bx, t // bx % by, t // (bx * by)), ctaid, file) for t in range(n)]
        cta = Cta(threads, bytearray(self.shared_bytes))
        cta.file, cta.ctaid, cta.views = file, ctaid, _views(cta.shared)
        return cta

    # the turn rule on the block's arrays (waits.pick, and Interpreter.turn's choice of threads)
    def turn(self, cta, threads):
        if self.scalar:
            return super().turn(cta, threads)
        f = cta.file
        lo, hi = threads[0].tid, threads[-1].tid + 1
        live = np.flatnonzero(~f.exited[lo:hi]) + lo
        if not len(live):
            return None
        pcs = f.pc[live]
        chosen = int(waits.bid(pcs, f.waiting[live].astype(np.int64), f.yielded[live].astype(np.int64)).min())
        if waits.round_over(chosen):
            f.yielded[lo:hi] = False
        pc = chosen & PC_MASK
        tids = live[pcs == pc]
        block = self.program.blocks.get(pc)
        if not len(tids):                   # a pc too large for the key: no block either
            tids = live[(pcs & ~PC_MASK) != 0][:1]
            pc, block = int(f.pc[tids[0]]), None
        if block is None:
            raise BadPc(f"thread {int(tids[0])}: jump to {pc:#x}, which starts no instruction block")
        if not self.program.quiet(block):
            self.step_lanes(cta, block, tids)
        self.free_lanes(cta, tids)
        return pc, [cta.threads[t] for t in tids.tolist()] if self.per_warp else None

    # a turn's block
    def step(self, cta, block, parts, free: bool = False) -> None:
        if self.scalar:
            return super().step(cta, block, parts, free)
        self.step_lanes(cta, block, np.array([t.tid for t in parts], np.int64), free)

    def step_lanes(self, cta, block, tids, free: bool = False) -> None:
        """The threads ``tids`` (in thread order) through ``block``, one instruction at a time."""
        f, n = cta.file, len(tids)
        lanes = Lanes(cta, tids, np.zeros(n, bool), self._clocks(f, tids), free=False)     # turn(): running threads
        self.stats.steps += n
        for k, inst in enumerate(block.insts):
            self.stats.instructions += n
            if inst.waits:
                waits.sync_step(self, cta, inst, [cta.threads[t] for t in tids.tolist()])
                return
            self.inst_index = k
            self.run_inst(cta, inst, lanes)
        f.clock[tids] += len(block.insts)
        gone = f.exited[tids]
        moved = np.where(gone, f.pc[tids], np.where(lanes.new_pc >= 0, lanes.new_pc, block.end_pc))
        f.pc[tids] = moved
        f.waiting[tids] = False
        if not free:                        # waits.after_block: a thread that branched back yields
            f.yielded[tids] |= ~gone & waits.branched_back(moved, block)

    def warp_facts(self, cta, pc: int):
        f = cta.file
        warps = (f.n + 31) // 32
        here = np.zeros(warps * 32, bool)
        here[:f.n] = f.exited | (f.pc == pc)
        present = (here.reshape(warps, 32) * _LANE_BITS).sum(axis=1).tolist()
        facts = {w: (p, 0, {}) for w, p in enumerate(present)}
        if f.n % 32:
            facts[warps - 1] = (present[-1], 0xFFFFFFFF & ~((1 << f.n % 32) - 1), {})
        for t in np.flatnonzero(f.waiting & ~here[:f.n]).tolist():
            u = cta.threads[t]
            if u.sync_mask is not None and waits.is_warpsync(self.program.blocks, int(f.pc[t])):
                facts[t >> 5][2][t & 31] = u.sync_mask
        return facts

    def settle(self, inst, moved, stuck) -> None:
        if self.scalar or not (moved or stuck):
            return super().settle(inst, moved, stuck)
        f = (moved or stuck)[0].file
        go = np.array([t.tid for t in moved], np.int64)
        stay = np.array([t.tid for t in stuck], np.int64)
        f.pc[go], f.waiting[go] = inst.next_pc, False
        f.waiting[stay] = f.yielded[stay] = True

    def barrier_masks(self, cta, parts, barrier):
        return cta.file.b[barrier, [t.tid for t in parts]].tolist()

    def leave_region(self, cta, warp, barrier, lanes):
        cta.file.b[barrier, warp * 32:warp * 32 + 32] &= ~lanes

    def live_count(self, cta) -> int:
        return int((~cta.file.exited).sum())

    def wait_requests(self, cta, inst, parts):
        if self.scalar:
            return super().wait_requests(cta, inst, parts)
        tids = np.array([t.tid for t in parts], np.int64)
        x = LaneCtx(self, cta, Lanes(cta, tids, np.zeros(len(parts), bool), self._clocks(cta.file, tids), free=False), inst)
        inst.spec.sem(x, inst)
        kind, *args = x.request
        columns = [a.tolist() if isinstance(a, np.ndarray) else [a] * len(parts) for a in args]
        waiting = cta.file.waiting[tids].tolist()
        return [(t, en, (kind, *fields), w) for t, en, w, *fields in zip(parts, x.en.tolist(), waiting, *columns)]

    def _clocks(self, f, tids):
        """The threads' instruction counts, where the program reads the clock."""
        return f.clock[tids] if self.reads_clock else np.zeros(len(tids), np.int64)

    def run_inst(self, cta, inst, lanes) -> None:
        x = LaneCtx(self, cta, lanes, inst)
        inst.spec.sem(x, inst)
        if x.pending is not None:
            raise x.pending

    # free runs
    def free_run(self, cta, threads) -> None:
        if self.scalar:
            return super().free_run(cta, threads)
        self.free_lanes(cta, np.array([t.tid for t in threads], np.int64))

    def free_lanes(self, cta, tids) -> None:
        """The threads ``tids`` that stand at quiet blocks run on together (Interpreter.free_run)."""
        f = cta.file
        pcs = f.pc[tids]
        quiet = self.quiet_at[np.where((pcs >= 0) & (pcs < len(self.quiet_at)), pcs, -1)]
        run = tids[~f.exited[tids] & ~f.waiting[tids] & quiet]
        if not len(run):
            return
        saved = self._save(cta, run)
        self.log = AccessLog()
        try:
            state = self._lockstep(cta, run)
            if not self.log.serial():
                raise Redo("threads share global memory words out of thread order")
        except Exception as exc:    # noqa: BLE001 - every error is the scalar run's to raise, in its order
            self.redos.append(f"{type(exc).__name__}: {exc}")
            self.log.rollback()
            self.log = None
            self._restore(cta, run, saved)
            self.scalar = True
            try:
                super().free_run(cta, [cta.threads[t] for t in tids.tolist()])
            finally:
                self.scalar = False
            return
        self.log = None
        f.pc[run], f.steps[run], f.clock[run], f.exited[run] = state
        f.waiting[run] = False

    def _lockstep(self, cta, tids):
        n, f = len(tids), cta.file
        pc, steps, clock = f.pc[tids], f.steps[tids], f.clock[tids]
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

"""The CPU reference interpreter: the opcode table's semantics on Python integers, run turn by
turn with the same scheduling rule as the SPIR-V turns mode (see :mod:`translator.interp.waits`).

It is the second oracle of the test suite and derives expected values for hand-written
listings. It runs thread blocks one after another; within a block, every turn picks the
lowest key (pc, waiting threads after running ones), and the threads at that pc run their
basic block together, instruction by instruction.

With ``per_warp`` (the shader's rule where a device's subgroups are warps: translator/README.md,
"Per-warp turns") each warp of a block without BAR takes its own turns: the key is the
lowest of the warp's threads, the warps step in turn, one turn each, and the turn count
is the sum of the warps' turns, as the shader counts it; a turn that runs on from the last
(a *chain*: :meth:`Interpreter.chains`) is not counted.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .. import abi
from ..errors import BadPc, Livelock
from ..ir.program import Block, Inst, Program
from ..ir.turnkey import PC_MASK
from ..values.vprintf import PrintfOutput
from . import waits
from .thread import Thread, ThreadCtx, WarpOracle


@dataclass
class RunStats:
    turns: int = 0
    steps: int = 0
    instructions: int = 0
    printf: PrintfOutput = field(default_factory=PrintfOutput)    # the vprintf calls' records


@dataclass
class Memory:
    """Global memory: the case buffers at their ABI addresses."""
    buffers: list[bytearray]

    def locate(self, addr: int, nbytes: int) -> tuple[bytearray, int] | None:
        k = (addr >> 32) - abi.BUFFER_HI
        off = (addr & 0xFFFFFFFF) - abi.BUFFER_LO
        if 0 <= k < len(self.buffers) and 0 <= off and off + nbytes <= len(self.buffers[k]) and off % min(nbytes, 4) == 0:
            return self.buffers[k], off
        return None


@dataclass
class Cta:
    """One thread block: its threads, shared memory and barrier bookkeeping."""
    threads: list[Thread]
    shared: bytearray
    bar_count: list[int] = field(default_factory=lambda: [0] * 16)
    bar_popc: list[int] = field(default_factory=lambda: [0] * 16)
    bar_gen: list[int] = field(default_factory=lambda: [0] * 16)
    bar_result: list[tuple[int, int]] = field(default_factory=lambda: [(0, 0)] * 16)
    released: dict[int, int] = field(default_factory=dict)   # warp -> lanes released from WARPSYNC
    brk: dict[tuple[int, int], int] = field(default_factory=dict)   # (warp, Bx) -> lanes that left (BREAK, BSYNC)
    yielding: dict[int, int] = field(default_factory=dict)   # warp -> lanes that executed YIELD since BSSY/BSYNC


class Interpreter:
    """Runs one launch of a program over global memory and constant bank 0."""

    def __init__(self, program: Program, launch: abi.Launch, memory: Memory, cbank: bytes,
                 shared_bytes: int = 16384, budget: int = abi.DEFAULT_BUDGET, per_warp: bool = False):
        self.program, self.launch, self.memory = program.for_block(launch.block), launch, memory
        self.cbank, self.shared_bytes, self.budget = cbank, shared_bytes, budget
        # each warp its own turns, unless a BAR makes the block meet (as TurnsWarp.per_warp)
        self.per_warp = per_warp and not any(i.spec.waits == "bar" for i in self.program.insts)
        self.stats = RunStats()
        self.printf = self.stats.printf
        self.inst_index = 0             # where the running instruction sits in its block (the clock)

    def launch_index(self, t: Thread) -> int:
        """A thread's index in the launch: its block's linear index times the block size,
        plus its index in the block."""
        gx, gy, _ = self.launch.grid
        x, y, z = t.ctaid
        return (x + gx * (y + gy * z)) * self.launch.threads_per_block + t.tid

    def run(self) -> RunStats:
        gx, gy, gz = self.launch.grid
        for z in range(gz):
            for y in range(gy):
                for x in range(gx):
                    self.run_cta((x, y, z))
        return self.stats

    def new_cta(self, ctaid: tuple[int, int, int]) -> Cta:
        """A block's threads at the entry, and its shared memory."""
        bx, by, bz = self.launch.block
        threads = [Thread.make(t, (t % bx, t // bx % by, t // (bx * by)), ctaid, self.program.entry)
                   for t in range(bx * by * bz)]
        return Cta(threads, bytearray(self.shared_bytes))

    def run_cta(self, ctaid: tuple[int, int, int]) -> None:
        cta = self.new_cta(ctaid)
        threads = cta.threads
        groups = [threads[w:w + 32] for w in range(0, len(threads), 32)] if self.per_warp else [threads]
        turns = [0] * len(groups)
        chained = [False] * len(groups)
        running = list(range(len(groups)))
        while running:
            for g in list(running):
                ran = self.turn(cta, groups[g])
                if ran is None:
                    running.remove(g)
                    continue
                if not chained[g]:
                    turns[g] += 1
                    self.stats.turns += 1
                    if turns[g] > self.budget:
                        self._livelock(ctaid, groups[g])
                chained[g] = self.per_warp and self.chains(groups[g], *ran)

    def turn(self, cta: Cta, threads: list[Thread]) -> tuple[int, list[Thread]] | None:
        """One turn of ``threads`` (the block's, or one warp's): the lowest key's block for the
        threads at its pc, then each thread's quiet blocks. (the block's pc, the threads that
        ran it), or None when every thread has exited."""
        key = waits.pick(threads)
        if key is None:
            return None
        pc = key & PC_MASK
        parts = [t for t in threads if not t.exited and t.pc == pc]
        block = self.program.blocks.get(pc)
        if not parts:           # a pc too large for the key (beyond PC_MASK): no block either
            parts = [min((t for t in threads if not t.exited and t.pc & ~PC_MASK), key=lambda t: t.tid)]
            pc, block = parts[0].pc, None
        if block is None:
            raise BadPc(f"thread {parts[0].tid}: jump to {pc:#x}, which starts no instruction block")
        if not self.program.quiet(block):
            self.step(cta, block, parts)
        self.free_run(cta, parts)
        return pc, parts

    def chains(self, threads: list[Thread], pc: int, parts: list[Thread]) -> bool:
        """Whether a warp's next turn runs on in this one (a *chain*: it is not counted): this
        turn's threads, those still running, all stand at one loud block past this turn's,
        and the next turn takes just them there: its key is that pc, no waiting or yielded bit
        (so no round ends), and no other thread stands at it. The shader runs such a block
        inline where it can (translator/README.md, "Per-warp turns")."""
        movers = [t for t in parts if not t.exited]
        if not movers or len({t.pc for t in movers}) != 1:
            return False
        there = movers[0].pc
        block = self.program.blocks.get(there)
        if there <= pc or block is None or self.program.quiet(block):
            return False
        live = [t for t in threads if not t.exited]
        return min(waits.key(t) for t in live) == there and \
            sum(t.pc == there for t in live) == len(movers)

    def _livelock(self, ctaid, threads: list[Thread]):
        running = sorted({(t.pc, t.tid) for t in threads if not t.exited})
        pcs = sorted({p for p, _ in running})
        raise Livelock(f"step budget of {self.budget} turns spent in block {ctaid}: "
                       f"{len(running)} threads still running at pcs "
                       + ", ".join(f"{p:#06x}" for p in pcs[:8])
                       + f" (threads {', '.join(str(t) for _, t in running[:8])}"
                       + ("..." if len(running) > 8 else "") + ")")

    def step(self, cta: Cta, block: Block, parts: list[Thread], free: bool = False) -> None:
        """Run the threads at one block's pc through the block, together."""
        self.stats.steps += len(parts)
        for t in parts:
            t.new_pc = None
        for k, inst in enumerate(block.insts):
            self.stats.instructions += len(parts)
            if inst.waits:
                waits.sync_step(self, cta, inst, parts)
                return
            self.inst_index = k
            self.execute(cta, inst, parts)
        for t in parts:         # the clock (sregs.reads_clock): waiting instructions add nothing
            t.clock += len(block.insts)
        for t in parts:
            if not t.exited:
                t.pc = t.new_pc if t.new_pc is not None else block.end_pc
            t.waiting = False
            if not free:
                waits.after_block(t, block)

    def free_run(self, cta: Cta, threads: list[Thread]) -> None:
        """Each thread runs on alone while it is in quiet blocks (see Program.quiet)."""
        for t in threads:
            while not t.exited and not t.waiting:
                block = self.program.blocks.get(t.pc)
                if block is None or not self.program.quiet(block):
                    break
                if t.steps >= self.budget:
                    raise Livelock(f"step budget of {self.budget} spent by thread {t.tid} in quiet code at pc {t.pc:#06x}")
                t.steps += 1
                self.step(cta, block, [t], free=True)

    def execute(self, cta: Cta, inst: Inst, parts: list[Thread]) -> None:
        oracle = None
        if inst.exchanges:
            oracle = WarpOracle(cta.threads, parts)
            for t in cta.threads:   # first pass: what every lane offers (sources of SHFL too)
                inst.spec.sem(self.ctx(cta, t, inst, oracle, gather=True), inst)
            oracle.resolve()
        for t in parts:
            inst.spec.sem(self.ctx(cta, t, inst, oracle), inst)

    def warp_facts(self, cta: Cta, pc: int) -> dict[int, tuple[int, int, dict[int, int]]]:
        """What a waiting instruction at ``pc`` reads of each warp (:func:`waits.warp_facts`)."""
        return waits.warp_facts(self.program.blocks, cta, pc)

    def settle(self, inst: Inst, moved: list[Thread], stuck: list[Thread]) -> None:
        """After a waiting instruction: :func:`waits.settle`."""
        waits.settle(inst, moved, stuck)

    def barrier_masks(self, cta: Cta, parts: list[Thread], barrier: int) -> list[int]:
        """Each thread's mask of convergence barrier ``barrier``."""
        return [t.b[barrier] for t in parts]

    def leave_region(self, cta: Cta, warp: int, barrier: int, lanes: int) -> None:
        """:func:`waits.leave_region`."""
        waits.leave_region(cta, warp, barrier, lanes)

    def live_count(self, cta: Cta) -> int:
        """How many of the block's threads have not exited."""
        return sum(1 for u in cta.threads if not u.exited)

    def wait_requests(self, cta: Cta, inst: Inst, parts: list[Thread]) -> list[tuple]:
        """What a waiting instruction asks of each thread at it: (thread, enabled, request,
        whether it waits there already) (``ThreadCtx.bsync``, ``warpsync``, ``bar``)."""
        requests = []
        for t in parts:
            ctx = self.ctx(cta, t, inst, None)
            inst.spec.sem(ctx, inst)
            requests.append((t, ctx.en, ctx.request, t.waiting))
        return requests

    def ctx(self, cta: Cta, t: Thread, inst: Inst, oracle, gather: bool = False) -> ThreadCtx:
        return ThreadCtx(self, cta, t, inst, oracle, gather)


def run_program(program: Program, launch: abi.Launch, buffers: list[bytearray], cbank: bytes,
                shared_bytes: int = 16384, budget: int = abi.DEFAULT_BUDGET, per_warp: bool = False) -> RunStats:
    """Run a launch; buffers are changed in place. Raises Fault, Livelock or BadPc."""
    return Interpreter(program, launch, Memory(buffers), cbank, shared_bytes, budget, per_warp).run()


__all__ = ["Interpreter", "run_program", "Memory", "RunStats"]

"""SASS program -> SPIR-V compute shader.

Every thread keeps its own pc and loops over a ``switch (pc)`` whose cases are the program's
basic blocks (straight-line runs become straight-line code, not one case per instruction).

- free mode (no collective, no barrier): each thread loops on its own pc;
- turns mode: each turn the workgroup votes the lowest key (pc, waiting threads last), and
  switches on that *voted* pc, so control flow around the Vulkan barriers stays uniform; the
  threads at that pc are ``active`` and the others run the same code with writes masked.

The shader's bindings and memory layout are in :mod:`translator.abi`.
"""
from __future__ import annotations

from .. import abi
from ..errors import UnsupportedInstruction
from ..ir.program import Block, Program
from ..isa import sregs
from ..spirv.builder import Function, Module
from ..spirv.enums import AddressingModel, Control, ExecutionMode, ExecutionModel, MemoryModel, Scope
from ..spirv.enums import MemorySemantics as Sem
from ..target import Target
from . import free, native, structured, tight, turns
from .ctx import SpirvCtx
from .failures import Failures
from .mem import MemoryEmitter
from .outcome import Outcome
from .pairs import PairCtx
from .printf import VprintfEmitter
from .shader import Shader, warp_subgroups_used
from .strategy import STRATEGIES, register

for _strategy in (turns.STRATEGY, native.STRATEGY, structured.STRATEGY):   # the first is the default; see README
    register(_strategy)
DEFAULT_STRATEGY = next(iter(STRATEGIES))


class Emitter:
    """Builds the module for one program and one block shape."""

    def __init__(self, program: Program, block: tuple[int, int, int], shared_bytes: int, mode: str | None = None,
                 target: Target = Target(), strategy: str = DEFAULT_STRATEGY):
        if strategy not in STRATEGIES:
            raise ValueError(f"unknown translation strategy {strategy!r}; known: {', '.join(STRATEGIES)}")
        self.program, self.block, self.shared_bytes = program.for_block(block), block, shared_bytes
        subgroup_vote, warp_subgroups, features = target.subgroup_vote, target.warp_subgroups, target.features
        self.target, self.subgroup_vote = target, subgroup_vote
        self.strategy = STRATEGIES[strategy]
        self.mode = self.strategy.mode or mode or self.program.mode
        # collectives through subgroup operations: the device's subgroups are warps
        self.warp_subgroups = warp_subgroups_used(self.mode, subgroup_vote, warp_subgroups)
        self.subgroups_are_warps = warp_subgroups and subgroup_vote     # the device's, whatever the mode
        self.reachable = self.program.reachable
        self.nthreads = block[0] * block[1] * block[2]
        # the device features the shader may use (Vulkan feature names; None: all of them)
        self.features = features
        self.pass_runs = target.pass_runs              # a self-loop of structured code runs its passes in runs (emit_tight)
        self.tight_loops = target.tight_loops          # a block that loops on itself may loop in its case (emit_tight)
        self.workgroup_limit = target.workgroup_limit  # the device's maxComputeSharedMemorySize (None: no limit)
        self.int64 = features is None or "shaderInt64" in features
        self.int64_atomics = self.int64 and (features is None or "shaderBufferInt64Atomics" in features)
        self.Ctx = SpirvCtx if self.int64 else PairCtx      # 64-bit values: native, or pairs of words
        self.m = Module(int64=self.int64)
        self.f = Function(self.m)
        self.const_value = self.m.value_of
        self._k: dict[int, int] = {}
        self._regs: dict[tuple[str, int], int] = {}
        self._values: dict[tuple[str, int], int] = {}     # register -> SSA value within a block
        self._dirty: set[tuple[str, int]] = set()
        self.writes = 0                                     # register writes so far (emit_exchange checks)
        self._clock_base = None
        self.halves: dict[int, list] = {}                   # 64-bit SSA value -> [lo, hi] words
        self.joined: dict[tuple[int, int], int] = {}        # (lo, hi) words -> their 64-bit value
        self.negated: dict[int, int] = {}                   # ~a -> a
        self.masked: dict[int, tuple[int, int]] = {}        # select(en, new, old) -> (en, new)
        self.helpers: dict[str, Function] = {}      # functions main calls, by name
        self.failures = Failures(self)              # FAULT / BAD_PC noted where they happen, recorded per step
        self.memory = MemoryEmitter(self)
        self._setup()
        self.memory.zero_local()        # needs the thread's index, from _setup
        self.vprintf = VprintfEmitter(self) if self.program.calls_external else None
        self.warp = self.strategy.make(self)

    # ---------------------------------------------------------------- module set-up
    def _setup(self) -> None:
        m, f = self.m, self.f
        caps = ["Shader"] + (["Int64"] if self.int64 else []) + (["GroupNonUniform", "GroupNonUniformArithmetic", "GroupNonUniformBallot"]
                                       if self.subgroup_vote and self.mode == "turns" else []) + \
            (["GroupNonUniformVote", "GroupNonUniformShuffle"] if self.warp_subgroups else [])
        for cap in caps:
            m.capability(cap)
        m.emit("model", "MemoryModel", AddressingModel.Logical, MemoryModel.GLSL450)
        u32, bool_ = m.u32(), m.bool()
        self.ctrl = m.storage_buffer(0, "ctrl")
        self.heap = m.storage_buffer(1, "heap")
        self.sb_u32 = m.pointer("StorageBuffer", u32)
        v3 = m.vec(u32, 3)
        self._tid_var = m.builtin("LocalInvocationIndex", u32)
        self._tid3_var = m.builtin("LocalInvocationId", v3)
        self._cta3_var = m.builtin("WorkgroupId", v3)
        self._ngroups_var = m.builtin("NumWorkgroups", v3)
        self.tid = f.load(u32, self._tid_var)
        self.tid3 = f.load(v3, self._tid3_var)
        self.cta3 = f.load(v3, self._cta3_var)
        ng = f.load(v3, self._ngroups_var)
        gx, gy = (f.op("CompositeExtract", u32, ng, k) for k in (0, 1))
        cx, cy, cz = (f.op("CompositeExtract", u32, self.cta3, k) for k in range(3))
        c = self.k
        group = f.op("IAdd", u32, cx, f.op("IMul", u32, gx, f.op("IAdd", u32, cy, f.op("IMul", u32, gy, cz))))
        self.gtid = f.op("IAdd", u32, self.tid, f.op("IMul", u32, group, c(self.nthreads)))
        self.lane = f.op("BitwiseAnd", u32, self.tid, c(31))
        self.warp_id = f.op("ShiftRightLogical", u32, self.tid, c(5))
        self.pc = f.local(u32, "pc", c(self.program.entry))
        self.exited = f.local(bool_, "exited", m.const_bool(False))
        self.waiting = f.local(bool_, "waiting", m.const_bool(False))
        self.yielded = f.local(bool_, "yielded", m.const_bool(False))
        self.bar_result = f.local(u32, "bar_result", c(0))
        self.steps = f.local(u32, "steps", c(0))
        self.executed = f.local(u32, "executed", c(0))
        # the clock (SR_CLOCKLO): instructions this thread has run, as sregs.reads_clock says
        self.clock = f.local(u32, "clock", c(0)) if sregs.reads_clock(self.program.insts) else None
        self.clock_now = None
        self.budget = self.ctrl_load(c(abi.BUDGET))

    def k(self, v: int) -> int:
        """The id of a 32-bit constant."""
        v &= 0xFFFFFFFF
        cid = self._k.get(v)
        if cid is None:
            cid = self._k[v] = self.m.const(self.m.u32(), v)
        return cid


    # ---------------------------------------------------------------- state access
    def reg(self, kind: str, n: int) -> int:
        key = (kind, n)
        if key not in self._regs:
            name = ("R" if kind == "reg" else "UR") + str(n)
            self._regs[key] = self.f.local(self.m.u32(), name, self.k(0))
        return self._regs[key]

    def pred(self, kind: str, n: int) -> int:
        key = (kind, n)
        if key not in self._regs:
            name = ("P" if kind == "pred" else "UP") + str(n)
            self._regs[key] = self.f.local(self.m.bool(), name, self.m.const_bool(False))
        return self._regs[key]

    def get(self, kind: str, n: int) -> int:
        """A register's current value in this block (loaded from its variable once)."""
        key = (kind, n)
        if key not in self._values:
            var = self.pred(kind, n) if kind in ("pred", "upred") else self.reg(kind, n)
            t = self.m.bool() if kind in ("pred", "upred") else self.m.u32()
            self._values[key] = self.f.load(t, var)
        return self._values[key]

    def set(self, kind: str, n: int, value: int) -> None:
        self.writes += 1
        self._values[(kind, n)] = value
        self._dirty.add((kind, n))

    def flush(self) -> None:
        """Store the registers this block wrote back to their variables."""
        for kind, n in sorted(self._dirty):
            var = self.pred(kind, n) if kind in ("pred", "upred") else self.reg(kind, n)
            self.f.store(var, self._values[(kind, n)])
        self._values, self._dirty = {}, set()

    def barrier_reg(self, n: int) -> int:
        return self.reg("B", n)

    def ctrl_ptr(self, index: int, f: Function | None = None) -> int:
        return (f or self.f).op("AccessChain", self.sb_u32, self.ctrl, self.k(0), index)

    def helper(self, name: str, param_types: tuple[int, ...], body) -> Function:
        """A function of the module, made on first use by ``body(fn, *params)``: code that
        many sites need (recording a status, leaving a warp) is emitted once and called."""
        fn = self.helpers.get(name)
        if fn is None:
            fn = self.helpers[name] = Function(self.m, param_types)
            self.m.name(fn.fid, name)
            body(fn, *fn.params)
        return fn

    def ctrl_load(self, index: int) -> int:
        return self.f.load(self.m.u32(), self.ctrl_ptr(index))

    def special(self, name: str, inst) -> int:
        """A special register's value (the sources in :mod:`translator.isa.sregs`)."""
        f, u32 = self.f, self.m.u32()
        src, k = sregs.source(name) or (None, 0)
        if src in ("tid", "ctaid"):
            return f.op("CompositeExtract", u32, self.tid3 if src == "tid" else self.cta3, k)
        if src in ("clock", "zero"):
            return self.clock_now if src == "clock" else self.k(0)
        if src is None:
            raise UnsupportedInstruction(f"{inst.where}: special register {name} in '{inst.text}'", inst.opcode)
        lane, one = self.lane, self.k(1)
        bit = f.op("ShiftLeftLogical", u32, one, lane)
        if src == "lane":
            return lane
        return sregs.lane_mask(k, bit, lambda x: f.op("ISub", u32, x, one),
                               lambda a, b: f.op("BitwiseOr", u32, a, b), lambda x: f.op("Not", u32, x))

    def record_status(self, code: int, cond: int, pc: int, addr_lo=None, addr_hi=None) -> None:
        """First writer wins: status code (an id: a constant, or a value the thread holds),
        pc, thread and address into the ctrl buffer."""
        if self.const_value.get(cond) is False:
            return
        u32, bool_ = self.m.u32(), self.m.bool()

        def body(fn, cond, code, pc, thread, lo, hi):
            with fn.if_(cond):
                old = fn.op("AtomicCompareExchange", u32, self.ctrl_ptr(self.k(abi.STATUS), fn),
                            self.k(Scope.Device), self.k(Sem.Relaxed), self.k(Sem.Relaxed), code, self.k(abi.OK))
                with fn.if_(fn.op("IEqual", bool_, old, self.k(abi.OK))):
                    for index, value in ((abi.STATUS_PC, pc), (abi.STATUS_THREAD, thread),
                                         (abi.STATUS_ADDR_LO, lo), (abi.STATUS_ADDR_HI, hi)):
                        fn.store(self.ctrl_ptr(self.k(index), fn), value)

        fn = self.helper("record_status", (bool_,) + (u32,) * 5, body)
        self.f.call(fn, cond, code, pc, self.gtid, addr_lo or self.k(0), addr_hi or self.k(0))

    def exit_threads(self, cond: int) -> None:
        """Threads where ``cond`` holds end (a block's outcome notes it: see SpirvCtx.end)."""
        f, bool_ = self.f, self.m.bool()
        f.store(self.exited, f.op("LogicalOr", bool_, f.load(bool_, self.exited), cond))
        self.warp.on_exit(cond)

    # ---------------------------------------------------------------- blocks
    def emit_block(self, block: Block, active: int, free: bool = False, counted: bool = True) -> Outcome:
        """The code of one basic block; ``active`` says which threads it moves; a thread
        running quiet blocks on its own (``free``) does not yield when it loops back.

        A block with no collective, nothing that waits and no ordering point
        (:mod:`translator.ir.order`) needs no barrier, so it runs inside ``if (active)`` and
        writes registers without masks; the others run straight through for every thread
        (barriers stay in uniform control flow).
        ``counted``: the block adds its length to the thread's instruction counter (a tight loop
        counts its passes once it leaves).
        Returns where the block's threads go next."""
        if self.const_value.get(active) is True or not self.quiet(block):
            return self._emit_body(block, active, free, counted)
        with self.f.if_(active):
            return self._emit_body(block, self.m.const_bool(True), free, counted)

    def quiet(self, block: Block) -> bool:
        """No collective, nothing that waits and no ordering point: ``block`` may run where only
        some threads do (:meth:`emit_block` runs it inside ``if (active)``)."""
        return not (_needs_uniform_flow(block) or self.program.order.points_in(block))

    def _emit_body(self, block: Block, active: int, free: bool, counted: bool = True) -> Outcome:
        """The block's instructions, each ordering point's barrier before its instruction,
        then the thread's next pc. Where the block goes next is
        an SSA value that branches and waiting instructions replace; a block that neither
        branches back nor exits ends in a single store of a constant pc."""
        self._values, self._dirty = {}, set()
        out = Outcome(active, self.k(block.end_pc))
        warp = self.warp
        segmented = warp.segments_block(block)
        if segmented:
            warp.open_segments()
        if counted:
            self.count_executed(self.k(len(block.insts)), active)
        points = self.program.order.points_in(block)
        self._clock_base = self._advance_clock(block, active)
        if segmented and self._clock_base is not None:
            self._clock_var = self.f.local(self.m.u32(), "clock_base")
            self.f.store(self._clock_var, self._clock_base)
        for k, inst in enumerate(block.insts):
            if inst.pc in points:
                warp.order_point(inst, active)

            def run_pass(k=k, inst=inst):
                if self._clock_base is not None:
                    self.clock_now = self.f.op("IAdd", self.m.u32(), self._clock_base, self.k(k))
                en = active
                if inst.guard is not None:
                    probe = self.Ctx(self, inst, active, out)
                    en = probe.band(active, probe.readp(inst.guard))
                inst.spec.sem(self.Ctx(self, inst, en, out), inst)
            if segmented and warp.uses_site(inst):
                warp.run_passes(run_pass)
            else:
                run_pass()
        self.flush()
        self._store_next_pc(self.Ctx(self, block.insts[-1], active, out), block, free)
        if segmented:
            warp.close_segments()
        return out

    def segment_opened(self) -> None:
        """A new segment of the block (emit_exchange): values of the last one are gone."""
        if self._clock_base is not None:
            self._clock_base = self.f.load(self.m.u32(), self._clock_var)

    def _advance_clock(self, block: Block, active: int):
        """The clock before the block's first instruction, which the block then adds its length
        to for its ``active`` threads (a waiting instruction adds nothing: how often a thread
        retries it depends on the schedule); None where the program reads no clock."""
        if self.clock is None:
            return None
        f, u32 = self.f, self.m.u32()
        before = f.load(u32, self.clock)
        if not any(i.waits for i in block.insts):
            step = self.k(len(block.insts))
            if self.const_value.get(active) is not True:
                step = f.op("Select", u32, active, step, self.k(0))
            f.store(self.clock, f.op("IAdd", u32, before, step))
        return before

    def count_executed(self, count: int, active: int) -> None:
        """The ``active`` thread's instruction counter goes up by ``count`` (an SSA value)."""
        f, u32 = self.f, self.m.u32()
        if self.const_value.get(active) is not True:
            count = f.op("Select", u32, active, count, self.k(0))
        f.store(self.executed, f.op("IAdd", u32, f.load(u32, self.executed), count))

    def _store_next_pc(self, x: SpirvCtx, block: Block, free: bool) -> None:
        """The threads of the block that have not exited take the outcome's pc; in turns mode,
        one that went back (to this block or before) yields its priority."""
        f, u32, bool_, out = self.f, self.m.u32(), self.m.bool(), x.out
        keep = out.active
        if out.exits:
            keep = x.band(keep, f.op("LogicalNot", bool_, f.load(bool_, self.exited)))
        f.store(self.pc, out.next_pc if self.const_value.get(keep) is True
                else f.op("Select", u32, keep, out.next_pc, f.load(u32, self.pc)))
        if not free and self.mode == "turns":
            back = x.band(keep, x.cmp("le", out.next_pc, self.k(block.pc), False))
            if self.const_value.get(back) is not False:
                f.store(self.yielded, f.op("LogicalOr", bool_, f.load(bool_, self.yielded), back))

    def emit_switch(self, selector: int, active_for, blocks=None, skip=(), default=None, free=False,
                    after=None, alone=False, case=None) -> None:
        """``switch (selector)`` over ``blocks`` (default: all); pcs in ``skip`` do nothing;
        any other pc runs ``default``, by default: it starts no block, BAD_PC. ``after(block,
        outcome)`` emits code at the end of each block's case, for every thread. ``alone``: each
        thread steps on its own pc, so a block that branches to itself may loop in its case
        (:meth:`emit_tight`). ``case(block)``: emits each block's case instead."""
        f = self.f
        blocks = self.reachable if blocks is None else blocks
        labels = {pc: self.m.new_id() for pc in list(blocks) + list(skip)}
        other, merge = self.m.new_id(), self.m.new_id()
        f.op("SelectionMerge", None, merge, Control.NONE)
        f.op("Switch", None, selector, other, *[w for pc, lab in labels.items() for w in (pc, lab)])
        for pc, lab in labels.items():
            f.label(lab)
            if pc in blocks and case is not None:
                case(blocks[pc])
            elif pc in blocks:
                tight = alone and self.tight_loops and pc in self.program.successors(blocks[pc])
                outcome = (self.emit_tight if tight else self.emit_block)(blocks[pc], active_for(pc), free)
                if after is not None:
                    after(blocks[pc], outcome)
            f.op("Branch", None, merge)
        f.label(other)
        if default is not None:
            default()
        else:
            self.record_status(self.k(abi.BAD_PC), active_for(None), selector)
            self.exit_threads(active_for(None))
        f.op("Branch", None, merge)
        f.label(merge)
        self.failures.settle()

    def emit_tight(self, block: Block, active: int, free: bool, alone: bool = False) -> Outcome:
        """A block that branches to itself, run in a loop of its own while the thread stays in it
        (:mod:`translator.emit.tight`)."""
        return tight.emit_tight(self, block, active, free, alone)

    # ---------------------------------------------------------------- the whole shader
    def build(self) -> Shader:
        if self.mode == "turns" or getattr(self.warp, "owns_main", False):   # a strategy's own body
            self.warp.emit_main()
        else:
            free.emit_free_loop(self)
        self.f.finish()
        for fn in self.helpers.values():
            fn.finish()
        m = self.m
        entry_id = self.f.fid
        m.emit_mixed("entry", "EntryPoint", ExecutionModel.GLCompute, entry_id, "main", m.interface)
        m.emit("mode", "ExecutionMode", entry_id, ExecutionMode.LocalSize, *self.block)
        for mode in getattr(self.warp, "execution_modes", ()):     # a strategy's own (subgroup-native)
            m.emit("mode", "ExecutionMode", entry_id, mode)
        return Shader(m.assemble(), self.mode, self.block, self.shared_bytes, self.program.name,
                      len(self.program.insts), warp_subgroups=self.warp_subgroups,
                      subgroup_size=getattr(self.warp, "subgroup_size", None),
                      scratch_words=getattr(self.warp, "scratch_words", 0))

    def emit_strided(self, count: int, body) -> None:
        """``for (i = tid; i < count; i += threads) body(i)``: each thread a strided share."""
        self.f.count_loop(self.k, count, body, first=self.tid, step=self.nthreads)

    def emit_loop(self, check, body) -> None:
        """``while (check()) body();`` with ``check`` emitted in a block of its own.

        (lavapipe stops the loops of a shader after 65,535 iterations of all of them together,
        nested or not, without a word; it runs every case of a switch, masked, so a loop in any
        case counts each time: the step budget stays below that, loops stay out of the cases
        (translator.emit.turns.exchange), and what follows the loop finds the threads still running:
        see ``abi.DEFAULT_BUDGET``.)"""
        f, m = self.f, self.m
        head, test, block, cont, merge = (m.new_id() for _ in range(5))
        f.op("Branch", None, head)
        f.label(head)
        f.op("LoopMerge", None, merge, cont, Control.NONE)
        f.op("Branch", None, test)
        f.label(test)
        f.op("BranchConditional", None, check(), block, merge)
        f.label(block)
        body()
        f.op("Branch", None, cont)
        f.label(cont)
        f.op("Branch", None, head)
        f.label(merge)

    def add_counters(self, turns, per_warp: bool = False) -> None:
        """Add the thread's steps and instructions to the ctrl buffer's counters, and the
        turns and barriers: once per workgroup, or once per warp where each took its own."""
        f, u32 = self.f, self.m.u32()
        scope, sem = self.k(Scope.Device), self.k(Sem.Relaxed)
        for index, var in ((abi.STEPS, self.steps), (abi.INSTRUCTIONS, self.executed)):
            f.op("AtomicIAdd", u32, self.ctrl_ptr(self.k(index)), scope, sem, f.load(u32, var))
        if turns is not None:
            first = f.op("GroupNonUniformElect", self.m.bool(), self.k(Scope.Subgroup)) if per_warp else \
                f.op("IEqual", self.m.bool(), self.tid, self.k(0))
            with f.if_(first):
                for index, value in turns:
                    f.op("AtomicIAdd", u32, self.ctrl_ptr(self.k(index)), scope, sem, value)


def _needs_uniform_flow(block: Block) -> bool:
    """Whether the block holds an instruction that may pass a workgroup barrier."""
    return any(i.exchanges or i.waits for i in block.insts)


def translate(program: Program, block: tuple[int, int, int], shared_bytes: int = 16384,
              mode: str | None = None, target: Target = Target(), strategy: str = DEFAULT_STRATEGY) -> Shader:
    """Translate a program for one block shape and one device (:class:`Target`); ``mode``
    forces "free" or "turns"; ``strategy`` names one of :data:`STRATEGIES`."""
    program = program.for_block(block)
    if mode == "free" and program.turns:
        raise ValueError(f"{program.name} uses collectives or barriers, or its lanes share memory in "
                         "instruction order: it cannot run in free mode")
    return Emitter(program, block, shared_bytes, mode, target, strategy).build()


__all__ = ["translate", "Target", "Shader", "Emitter", "STRATEGIES", "DEFAULT_STRATEGY", "warp_subgroups_used"]

"""The `structured` strategy's shader body: each thread runs the program's blocks as nested
SPIR-V selection and loop constructs (:mod:`.shape` says which), no ``switch (pc)``.

- a block is the emitter's own (``Emitter.emit_block``: every opcode the other strategies
  translate), run where the thread is *running*: it has not exited (EXIT, a fault) and not
  stopped at a loop; a thread that exits or stops is inert from then on, whatever construct it
  passes through;
- a node's dispatch is an ``OpSelectionMerge`` construct over ``pc == successor`` (a jump stores
  the thread's pc, its guard variable); where every running thread goes one way, no test;
- a loop is an ``OpLoopMerge`` construct whose continue block counts the iteration against the
  step budget (``ctrl[abi.BUDGET]``) and goes round again only where the pc is the header and
  the budget is not spent (a block that loops on itself: the emitter's tight loop, which counts
  its passes the same way);
- a thread still running at a loop's header after the loop *stops* there: its budget is spent,
  or the driver ended the loop (lavapipe ends a shader's loops after 65,535 passes in all,
  without a word), and it never runs on as if the loop had ended. The budget is tested where
  the loop goes round and nowhere else: the steps change only there, so within a pass the
  running test is the same for every block (``exited`` and ``stopped``, which a driver's
  compiler can take out of a loop that changes neither, where a test of the steps would stay
  in every block of it: docs/measurements.md, "Where structured code's time goes");
- at the end, a thread that has not exited is LIVELOCK (stopped at a loop) or BAD_PC (it went
  to a pc that starts no block).
"""
from __future__ import annotations

from contextlib import contextmanager

from ... import abi
from ...ir.inline import name, pc_of
from .shape import Scope, shape
from .barriers import arrivals_first, named_waits, other_form
from .uniform import UniformWalk


class StructuredBody(UniformWalk):
    """Emits the structured body of emitter ``e`` (its blocks, its warp, its variables);
    ``covered``: the lane-order points that a block barrier's block holds (:mod:`.warp`)."""

    def __init__(self, e, covered: frozenset[int] = frozenset()):
        self.e, self.f, self.m = e, e.f, e.m
        self.shape = shape(e.program)
        self.emitted: set[int] = set()          # block pcs emitted (each once)
        self.depth = 0                          # selections and loops around the code being emitted
        # lane-order points whose barrier needs every invocation there (:mod:`.uniform`), and
        # the scopes that hold them, walked by every invocation
        points = frozenset() if e.subgroups_are_warps else frozenset(e.program.order.points) - covered
        self.points = self._walked(points)
        # barriers Vulkan lacks, where not every thread reaches them in the layout (.barriers)
        forms = frozenset(i.pc for b in e.program.reachable.values() for i in b.insts if other_form(i))
        self.waits = named_waits(e.program) if forms else frozenset()
        self.forms_why = arrivals_first(e.program, self.shape, self.waits) if forms else None
        walked = self.points | self._walked(forms) | self._branch_bars()
        self.uniform = self._find_uniform(walked) if walked else frozenset()
        self.copy = self._copies() if self.uniform else None      # the thread's inlined copy (.uniform)
        self._slots: dict[int, int] = {}        # each uniform loop's vote slots
        self.walking = False                    # code that every invocation runs (.uniform)
        # a thread stopped at a loop's header: its budget spent, or the driver ended the loop
        # (lavapipe: 65,535 passes of a shader's loops in all)
        self.stopped = self.f.local(self.m.bool(), "stopped", self.m.const_bool(False))

    def _branch_bars(self) -> frozenset[int]:
        """The ``BAR.SYNC 0`` outside every loop in a block that not every running thread
        reaches (a branch's): there a Vulkan barrier would be in non-uniform control flow, and
        the chip's waits only for the threads that have not exited, so the program is walked."""
        top, reach = self.shape.scopes[None], self.e.reachable
        return frozenset(i.pc for n in top.succ if n not in top.loops and not self._reached_by_all(n)
                         for i in reach[pc_of(n)].insts if i.spec.waits == "bar" and not other_form(i))

    @property
    def everyone(self) -> bool:
        """Whether the code being emitted is reached once by every invocation (running, exited
        or stopped): the program's top scope, outside every selection and loop."""
        return self.depth == 0

    @contextmanager
    def _nested(self):
        with self._depth(self.depth + 1):
            yield

    @contextmanager
    def _depth(self, depth: int):
        outer, self.depth = self.depth, depth
        try:
            yield
        finally:
            self.depth = outer

    # ---------------------------------------------------------------- small pieces
    def _running(self) -> int:
        """Neither exited nor stopped (the steps within the budget follow: see the module)."""
        e, f, bool_ = self.e, self.f, self.m.bool()
        idle = f.op("LogicalOr", bool_, f.load(bool_, e.exited), f.load(bool_, self.stopped))
        return f.op("LogicalNot", bool_, idle)

    def _at(self, node: int) -> int:
        e, f = self.e, self.f
        return f.op("IEqual", self.m.bool(), f.load(self.m.u32(), e.pc), e.k(pc_of(node)))

    # ---------------------------------------------------------------- nodes
    def emit(self) -> None:
        """The program: its top scope; then LIVELOCK or BAD_PC for a thread still running."""
        e, f, u32, bool_ = self.e, self.f, self.m.u32(), self.m.bool()
        if e.memory.smem is not None:       # shared memory starts zeroed, as in turns mode
            e.memory.init_shared(cooperative=True)
            f.barrier()                     # uniform control flow: before the first block
        if None in self.uniform:
            self.walk(self.shape.scopes[None], None)
        else:
            self.code(self.shape.scopes[None], self.shape.scopes[None].root)
        stuck = f.op("LogicalNot", bool_, f.load(bool_, e.exited))
        spent = f.op("LogicalOr", bool_, f.load(bool_, self.stopped),
                     f.op("UGreaterThanEqual", bool_, f.load(u32, e.steps), e.budget))
        status = f.op("Select", u32, spent, e.k(abi.LIVELOCK), e.k(abi.BAD_PC))
        e.record_status(status, stuck, f.load(u32, e.pc), f.load(u32, e.steps))
        e.add_counters(turns=None)

    def code(self, scope: Scope, x: int) -> None:
        """Node x of ``scope``, then what it dominates: its arms inside its selection, its merge
        nodes after it. A chain (one way on, nothing else) goes on in this loop, not deeper."""
        while x is not None:
            self.node(scope, x)
            arms, merges = scope.arms(x), scope.merges(x)
            others = len(arms) < len(scope.succ[x]) or x in scope.leaves
            tail = None
            if len(arms) == 1 and not others and not merges:
                tail = arms[0]
            elif arms:
                self.dispatch(scope, arms, others)
            for k, y in enumerate(merges):
                if scope.post_dominates(y, x) and k == len(merges) - 1:
                    tail = y        # every running thread is here at y: the branch's join
                elif scope.post_dominates(y, x):
                    self.code(scope, y)
                else:
                    with self.f.if_(self._at(y)), self._nested():
                        self.code(scope, y)
            x = tail

    def dispatch(self, scope: Scope, arms: list[int], others: bool) -> None:
        """``if (pc == a) code(a) else if ...``: the last arm untested where no other way is left."""
        if not arms:
            return
        a, rest = arms[0], arms[1:]
        if not rest and not others:
            self.code(scope, a)
        elif not rest:
            with self.f.if_(self._at(a)), self._nested():
                self.code(scope, a)
        else:
            with self._nested():
                self.f.if_else(self._at(a), lambda: self.code(scope, a), lambda: self.dispatch(scope, rest, others))

    def node(self, scope: Scope, x: int) -> None:
        if x in scope.loops:
            self.loop(x)
            return
        if x in self.emitted:       # the shape puts each block once; a second would be a bug here
            raise AssertionError(f"block {name(x)} emitted twice")
        self.emitted.add(x)
        e = self.e
        e.emit_block(e.reachable[pc_of(x)], self._running(), free=True)
        e.failures.settle()

    def loop(self, header: int) -> None:
        """``do { body } while (pc == header && running)``, each pass a step of the budget."""
        scope = self.shape.scopes[header]
        if len(scope.succ) == 1 and not scope.loops and not self.e.program.may_spin:
            self.tight(header)
            return
        e, f, u32, bool_ = self.e, self.f, self.m.u32(), self.m.bool()
        head, cont, merge = self.f.open_loop()
        with self._nested():
            self.code(self.shape.scopes[header], header)
        f.op("Branch", None, cont)
        f.label(cont)
        steps = f.op("IAdd", u32, f.load(u32, e.steps), e.k(1))
        f.store(e.steps, steps)
        again = f.op("LogicalAnd", bool_, self._at(header),
                     f.op("LogicalAnd", bool_, f.op("LogicalNot", bool_, f.load(bool_, e.exited)),
                          f.op("ULessThan", bool_, steps, e.budget)))
        f.op("BranchConditional", None, again, head, merge)
        f.label(merge)
        self._stopped_at(header)

    def tight(self, header: int) -> None:
        """A block that loops on itself: the emitter's tight loop (``Emitter.emit_tight``), whose
        passes run under the running test made once before it (a pass changes it only by
        spending the budget or exiting, which end the loop) and count the block's instructions
        once, after it, from the passes. Not in a program that may spin (``Program.may_spin``):
        NVIDIA's compiler keeps a spinner's shared-memory load out of such a loop, and the
        spinner never sees its flag (spin/fence_handoff, spin/nanosleep_flag and
        spin/inter_warp_shared_spinner_first ended LIVELOCK on the H100 with it)."""
        e = self.e
        self.emitted.add(header)
        with self._nested():
            e.emit_tight(e.reachable[pc_of(header)], self._running(), free=True, alone=True)
        e.failures.settle()
        self._stopped_at(header)

    def _stopped_at(self, header: int) -> None:
        """A thread still running at the header after the loop stops: its budget is spent, or the
        driver ended the loop; the program did not leave it."""
        f, bool_ = self.f, self.m.bool()
        cut = f.op("LogicalAnd", bool_, self._running(), self._at(header))
        f.store(self.stopped, f.op("LogicalOr", bool_, f.load(bool_, self.stopped), cut))

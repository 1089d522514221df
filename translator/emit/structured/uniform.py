"""Scopes walked by every invocation of the workgroup: where the lanes of a warp must see each
other's memory (a lane-order point, :mod:`translator.ir.order`) inside a branch or a loop, and
the device's subgroups cannot hold a warp, the point's workgroup barrier must be in uniform
control flow, which a branch or a loop that only some threads take is not.

Such a scope (the program, or a loop with such a point in it, at any depth; also one with a
block barrier Vulkan lacks, :mod:`.barriers`; also the program where a ``BAR.SYNC 0`` sits in
one of its branches, ``StructuredBody._branch_bars``) is a *uniform scope*. Every invocation walks its
nodes in an order where each comes after the nodes with an edge to it, the lowest pc first
(:func:`walk_order`), each node predicated on the thread being in the scope and at the node's
pc (the guard variable): a thread runs a node's block where ``pc == node``, and a jump to a
later node runs that node in the same pass, as a turn of the warp would. A block with a point
or a barrier runs straight through for every invocation, its writes masked, and its barrier
is everyone's; any other node keeps its own code inside ``if (at node)``: a loop without
points stays an ordinary loop. A uniform loop goes round while any invocation of the
workgroup is still in it (a vote through three workgroup words, one barrier a pass, each loop
its own words); each of its threads counts its passes against the step budget, and one whose
budget is spent stops at the header, as in an ordinary loop.

Where a walked scope holds two copies of one block (a helper inlined at two call sites), the
pc alone does not say which a thread is at: each thread then keeps its copy in a variable,
set where a walked node's thread goes into another (a call, a return, a loop's exit).
"""
from __future__ import annotations

from contextlib import contextmanager

from ...ir.inline import pc_of
from .shape import Scope

VOTE_SLOTS = 3      # a pass votes in slot k % 3 while thread 0 clears slot (k + 1) % 3, read two passes ago


class UniformWalk:
    """The uniform scopes of a :class:`.main.StructuredBody` (which mixes this in)."""

    def _walked(self, points: frozenset[int]) -> frozenset[int]:
        """``points`` (pcs of lane-order points or barriers) but those of the program's blocks
        that every running thread reaches (the root and what post-dominates it, outside every
        loop): their barriers need no walk."""
        top = self.shape.scopes[None]
        everyone = {pc_of(n) for n in top.succ if self._reached_by_all(n)}
        placed = {pc for block, pcs in self.e.program.order.by_block.items() if block in everyone for pc in pcs}
        return points - placed

    def _reached_by_all(self, node) -> bool:
        """Whether every running thread reaches ``node`` of the program's top scope: the root,
        or a block that post-dominates it, outside every loop."""
        top = self.shape.scopes[None]
        return node not in top.loops and (node == top.root or top.post_dominates(node, top.root))

    def _find_uniform(self, points: frozenset[int]) -> frozenset:
        """The scopes (loop headers; None: the program) holding a block with one of ``points``
        (pcs of lane-order points and barriers that need a walk), themselves or in a loop
        inside them."""
        holds: dict = {}

        def has(header) -> bool:
            if header not in holds:
                scope = self.shape.scopes[header]
                found = [has(n) if n in scope.loops else     # every child looked at: no short cut
                         any(i.pc in points for i in self.e.reachable[pc_of(n)].insts) for n in scope.succ]
                holds[header] = any(found)
            return holds[header]
        has(None)
        return frozenset(h for h, yes in holds.items() if yes)

    def _slot(self, header: int, index: int) -> int:
        """Vote slot ``index`` of the loop at ``header``: each loop its own, since a subgroup
        that leaves an inner loop may vote in the outer loop's slots before another subgroup
        has read the inner loop's last vote (lavapipe runs a workgroup's subgroups one after
        another between barriers)."""
        m = self.m
        if header not in self._slots:
            arr = m.array(m.u32(), VOTE_SLOTS)
            self._slots[header] = m.global_var(m.pointer("Workgroup", arr), "Workgroup", f"votes_{header:x}")
        return self.f.op("AccessChain", m.pointer("Workgroup", m.u32()), self._slots[header], index)

    def walk(self, scope: Scope, inside: int | None) -> None:
        """Every node of ``scope`` in :func:`walk_order`, for every invocation; ``inside``: the
        threads in the scope (a bool variable; None: the program's, every running thread)."""
        e, f, bool_ = self.e, self.f, self.m.bool()
        for n in walk_order(scope, self.waits):
            at = f.op("LogicalAnd", bool_, self._running() if inside is None else f.load(bool_, inside), self._at(n))
            if self.copy is not None:
                at = f.op("LogicalAnd", bool_, at, f.op("IEqual", bool_, f.load(self.m.u32(), self.copy),
                                                        e.k(n >> 32)))
            every = scope.header is None and (n == scope.root or scope.post_dominates(n, scope.root))
            if n in scope.loops and n in self.uniform:
                self.uniform_loop(n, at)
            elif n not in scope.loops and (every or _meets(e.reachable[pc_of(n)], self.points)):
                with self._depth(0 if every else self.depth + 1), self._walking():
                    self.emitted.add(n)
                    e.emit_block(e.reachable[pc_of(n)], at, free=True)      # straight through, masked
                    e.failures.settle()
            else:
                with f.if_(at), self._depth(0 if every else self.depth + 1):
                    self.node(scope, n)
            self._follow(n, at)

    def _copies(self) -> int | None:
        """The thread's inlined copy, a variable, where a walked scope holds one block twice
        (a helper inlined at two call sites): the pc alone does not say which node a thread
        is at. None where no walked scope does."""
        for header in self.uniform:
            pcs = [pc_of(n) for n in self.shape.scopes[header].succ]
            if len(pcs) != len(set(pcs)):
                return self.f.local(self.m.u32(), "copy", self.e.k(0))
        return None

    def _follow(self, node: int, at: int) -> None:
        """The copy of the threads that were ``at`` the node, where they went into another (a
        call, a return): the node's next one whose pc is theirs (no two with one pc)."""
        if self.copy is None:
            return
        f, u32, bool_ = self.f, self.m.u32(), self.m.bool()
        for target in self.shape.onward.get(node, ()):
            if target >> 32 != node >> 32:
                went = f.op("LogicalAnd", bool_, at, self._at(target))
                f.store(self.copy, f.op("Select", u32, went, self.e.k(target >> 32), f.load(u32, self.copy)))

    @contextmanager
    def _walking(self):
        """Code that every invocation of the workgroup runs: a barrier in it is everyone's."""
        outer, self.walking = self.walking, True
        try:
            yield
        finally:
            self.walking = outer

    def uniform_loop(self, header: int, at: int) -> None:
        """The loop at ``header``, gone round by every invocation while any is in it."""
        e, f, m, u32, bool_ = self.e, self.f, self.m, self.m.u32(), self.m.bool()
        inside = f.local(bool_, None, m.const_bool(False))
        f.store(inside, at)
        turn = f.local(u32, None, e.k(0))
        f.store(turn, e.k(0))
        first = f.op("IEqual", bool_, e.tid, e.k(0))
        with f.if_(first):
            for k in range(VOTE_SLOTS):
                f.store(self._slot(header, e.k(k)), e.k(0))
        f.barrier()
        head, cont, merge = self.f.open_loop()
        with self._depth(self.depth + 1):
            self.walk(self.shape.scopes[header], inside)
        f.op("Branch", None, cont)
        f.label(cont)
        was = f.load(bool_, inside)
        steps = f.op("IAdd", u32, f.load(u32, e.steps), f.op("Select", u32, was, e.k(1), e.k(0)))
        f.store(e.steps, steps)
        stays = f.op("LogicalAnd", bool_, f.op("LogicalAnd", bool_, was, self._running()),
                     f.op("LogicalAnd", bool_, self._at(header), f.op("ULessThan", bool_, steps, e.budget)))
        f.store(inside, stays)
        k = f.load(u32, turn)
        mine = f.op("UMod", u32, k, e.k(VOTE_SLOTS))
        with f.if_(stays):
            f.store(self._slot(header, mine), e.k(1))
        with f.if_(first):
            f.store(self._slot(header, f.op("UMod", u32, f.op("IAdd", u32, k, e.k(1)), e.k(VOTE_SLOTS))), e.k(0))
        f.barrier()
        f.store(turn, f.op("IAdd", u32, k, e.k(1)))
        again = f.op("INotEqual", bool_, f.load(u32, self._slot(header, mine)), e.k(0))
        f.op("BranchConditional", None, again, head, merge)
        f.label(merge)
        self._stopped_at(header)


def _meets(block, points: frozenset[int]) -> bool:
    """Whether the block holds one of ``points`` or a block barrier: every invocation runs it."""
    return any(i.pc in points or i.spec.waits == "bar" for i in block.insts)


def walk_order(scope: Scope, waits: frozenset[int] = frozenset()) -> list[int]:
    """The scope's nodes in the order a walk takes them: each after every node with an edge to
    it, and of the nodes ready, the lowest pc first (a turn of the lowest waiting pc, as on
    the chip), but a node of ``waits`` (blocks that wait on a named barrier, .barriers) only
    when no other is ready, so that the threads that arrive there come first."""
    waiting = {n: len(scope.pred[n]) for n in scope.succ}
    ready, order = [scope.root], []
    while ready:
        ready.sort(key=lambda n: (pc_of(n) in waits, pc_of(n), n))
        n = ready.pop(0)
        order.append(n)
        for s in scope.succ[n]:
            waiting[s] -= 1
            if waiting[s] == 0:
                ready.append(s)
    return order

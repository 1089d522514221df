"""The block barriers Vulkan lacks, where every invocation of the workgroup runs the code (the
program's top scope, or a scope it walks: :mod:`.uniform`): named barriers, thread counts,
arrivals that do not wait (``BAR.ARV``), and reductions (``BAR.RED.POPC/AND/OR``, read by
``B2R.RESULT``: ``__syncthreads_count``, ``_and``, ``_or``).

- ``BAR.SYNC n, count`` and ``BAR.ARV n, count`` are each a workgroup barrier: every
  invocation meets there, which is more than the chip asks (the threads of one barrier, no
  waiting on an arrival) and orders no less. It is right where the threads that arrive do so
  no later in the walk than the threads that wait: each arrival on a barrier before every
  wait on it, in the order of the program's nodes (:func:`arrivals_first`); a program that
  places a wait first, or a named barrier inside a loop, is UNSUPPORTED, named.
- ``BAR.RED`` is three workgroup barriers around two counters in workgroup memory: the
  threads here (with their predicate, for POPC) add to them, and read the sum back.
"""
from __future__ import annotations

from ...ir.inline import pc_of
from ...spirv.enums import MemorySemantics as Sem
from ...spirv.enums import Scope
from .uniform import walk_order


def other_form(inst) -> bool:
    """Whether a BAR is one that Vulkan lacks: not ``BAR.SYNC 0`` (an id other than 0, a
    thread count, an arrival, a reduction)."""
    if inst.spec.waits != "bar":
        return False
    plain = [o for o in inst.ops if o.kind not in ("pred", "upred")]
    return bool({"ARV", "RED"} & inst.mods) or len(plain) > 1 or (plain and not (plain[0].kind == "imm"
                                                                                    and plain[0].value == 0))


def named_waits(program) -> frozenset[int]:
    """The blocks that wait on a named barrier or a thread count (a walk takes them last)."""
    return frozenset(pc for pc, b in program.reachable.items()
                     if any(other_form(i) and not {"ARV", "RED"} & i.mods for i in b.insts))


def arrivals_first(program, shape, waiting: frozenset[int]) -> str | None:
    """Why the named barriers of ``program`` cannot be workgroup barriers in the walk of its
    top scope, which takes the blocks of ``waiting`` (:func:`named_waits`) last, or None where
    they can."""
    top = shape.scopes[None]
    position = {pc_of(n): k for k, n in enumerate(walk_order(top, waiting)) if n not in top.loops}
    forms = [(pc, i) for pc, b in program.reachable.items() for i in b.insts if other_form(i) and "RED" not in i.mods]
    waits: dict = {}
    for block, inst in forms:
        if block not in position:
            return f"{inst.where}: '{inst.text}' inside a loop: a named barrier there has no workgroup-barrier form"
        ident = inst.ops[0].value if inst.ops and inst.ops[0].kind == "imm" else None      # None: an id in a register
        waits.setdefault(ident, []).append((position[block], "ARV" in inst.mods, inst))
    for ident, uses in waits.items():
        related = uses if ident is not None else [u for us in waits.values() for u in us]
        first_wait = min((k for k, arrive, _ in related if not arrive), default=None)
        late = [i for k, arrive, i in related if arrive and first_wait is not None and k > first_wait]
        if late:
            return (f"{late[0].where}: '{late[0].text}' arrives after a wait on its barrier in the program's order: "
                    "a workgroup barrier there would read before the arrival wrote")
    return None


class Reductions:
    """BAR.RED's counters: two words of workgroup memory, made on first use."""

    def __init__(self, e):
        self.e, self.f, self.m = e, e.f, e.m
        self.words = None

    def _word(self, k: int) -> int:
        m = self.m
        if self.words is None:
            self.words = m.global_var(m.pointer("Workgroup", m.array(m.u32(), 2)), "Workgroup", "bar_red")
        return self.f.op("AccessChain", m.pointer("Workgroup", m.u32()), self.words, self.e.k(k))

    def reduce(self, x, kind: str, pred) -> None:
        """The threads here (``x.en``) add 1, and their predicate, to the counters; each reads
        the sum back as ``B2R.RESULT`` will: the count, all, or any."""
        e, f, u32 = self.e, self.f, self.m.u32()
        f.barrier()                             # the last reduction's reads are done
        with f.if_(f.op("IEqual", self.m.bool(), e.tid, e.k(0))):
            f.store(self._word(0), e.k(0))
            f.store(self._word(1), e.k(0))
        f.barrier()
        scope, sem = e.k(Scope.Workgroup), e.k(Sem.Relaxed)
        with f.if_(x.en):
            f.op("AtomicIAdd", u32, self._word(1), scope, sem, e.k(1))
            if pred is not None:
                with f.if_(pred):
                    f.op("AtomicIAdd", u32, self._word(0), scope, sem, e.k(1))
        f.barrier()
        popc, total = f.load(u32, self._word(0)), f.load(u32, self._word(1))
        if pred is None:
            popc = total
        result = {"popc": popc, "and": x.b2v(x.cmp("eq", popc, total, False)),
                  "or": x.b2v(x.cmp("ne", popc, x.k32(0), False))}[kind]
        f.store(e.bar_result, x.sel(x.en, result, f.load(u32, e.bar_result)))

"""Where the lanes of a warp must see each other's memory accesses in instruction order, and
where a translated program has to enforce it: *ordering points*. The interpreter, both modes of
the emitter and the IR's quiet rule all read this one analysis.

On the chip the lanes of a converged warp issue each instruction together: every lane's
access of one instruction is done and visible before any lane's access of the warp's next
instruction (so ptxas may turn ``__syncwarp()`` between an STS and an LDS of another lane's
slot into a NOP). A translated block runs per invocation, and a warp may span several
subgroups, so nothing orders one lane's store before another lane's load unless something
says so. An ordering point before instruction B means: every access that the lanes of B's
warp made before B must be complete and visible before any of them performs B. The
interpreter runs a turn's block instruction by instruction across its lanes (every
instruction is a point); the emitter puts a barrier at each point, and a program with a
point runs in turns (a barrier needs uniform control flow).

**Which pairs conflict.** An earlier access A and a later access B conflict when they touch
the same memory space (shared or global; local memory is each thread's own), at least one of them
writes (a store or an atomic; two reductions RED of the same operation commute), and the
analysis cannot prove that no lane's B touches a byte that *another* lane of the warp touched
with A. What it proves, from the values of :mod:`translator.ir.lane_values`:

1. *Lane strides.* Both addresses are ``k * lane + U + c`` with the same ``k`` and the same
   uniform part ``U`` (:mod:`translator.ir.lane_values`: built through IMAD/IADD3/LEA/SHF/LOP3/
   IMAD.WIDE with constant factors), where ``lane`` is SR_LANEID or, in a block whose warps do
   not line up with its rows, the linear thread index. Lanes i != j are ``k * (i - j)`` bytes
   apart, ``|i - j| <= 31``; every such difference is checked against the spans
   ``[c1, c1 + w1)`` and ``[c2, c2 + w2)``. A lane reading back exactly the bytes it wrote is the
   case ``c1 == c2``; a uniform address (no lane part) touches the same bytes in every lane, so
   it is cleared only when the two spans are disjoint.
2. *Distinct buffers.* Two global addresses based on different pointer parameters (the one
   parameter word of constant bank 0 in the address, with coefficient 1) never meet. This
   assumes, as CUDA does, that address arithmetic stays inside the buffer it starts from,
   and, as every case here does, that no two parameters point into the same buffer.

A *generic* access (LD/ST/ATOM) goes where its address shows (:func:`generic_target`): global
when it is based on a pointer parameter, shared memory or local memory when it is the base of
their window (``c[0x0][0x18]``, ``c[0x0][0x20]``) plus an offset (then that offset is its
address); otherwise it may touch either, and it conflicts as a shared access does with shared
accesses (their offsets and its address are not comparable, so nothing proves them apart) and
as a global one with global and generic accesses (its address is one if it is global, and
addresses in a window are 4 GiB from every buffer).

It proves nothing from "the same register as before": without a lane stride two lanes may
hold the same address, and one lane's store would reach another lane's load.

**Placement**, greedy along every path: the accesses since the last point are pending (a
forward dataflow over the control-flow graph carries them into successor blocks, since a
turn that needs no vote has no barrier between blocks); the first access that conflicts with
a pending one gets a point before it, and the pending set restarts with it. A block barrier
that waits (BAR.SYNC) empties it.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..abi import LOCAL_WINDOW_BASE, PARAM_BASE, SHARED_WINDOW_BASE
from .lane_values import LANE, Lin, const, run_instruction, s32

COMMUTING = frozenset({"add", "and", "or", "xor", "min", "max"})


@dataclass(frozen=True)
class Access:
    """One memory access of one instruction, as the analysis sees it."""
    index: int
    inst: object
    space: str
    kind: str                   # "load" | "store" | "atomic" | "reduce"
    addr: Lin | None
    nbytes: int
    op: tuple | None            # an atomic's (operation, signed)

    @property
    def writes(self) -> bool:
        return self.kind != "load"

    def __str__(self) -> str:
        return f"{self.inst.where}: {self.inst.text}"


class LaneOrder:
    """The ordering points of one program (for its block shape, :attr:`Program.block`)."""

    def __init__(self, program):
        self.block = program.block
        self._memo: dict[tuple[int, int], bool] = {}
        self.accesses = _accesses(program)
        # where each generic access goes, by pc: "global", "shared", "local", or "generic" (any)
        self.generic = {a.inst.pc: a.space for accs in self.accesses.values() for a in accs
                        if a.inst.spec.space == "generic"}
        self.by_block = self._place(program)
        self.points = frozenset(pc for pcs in self.by_block.values() for pc in pcs)

    def points_in(self, block) -> tuple[int, ...]:
        """The pcs of the block's instructions that need an ordering point before them."""
        return self.by_block.get(block.pc, ())

    # ---------------------------------------------------------------- pairs
    def conflict(self, a: Access, b: Access) -> bool:
        """Whether the lanes of a warp must finish ``a`` before any of them performs ``b``."""
        key = (a.index, b.index)
        if key not in self._memo:
            self._memo[key] = self._conflict(a, b)
        return self._memo[key]

    def _conflict(self, a: Access, b: Access) -> bool:
        spaces = {a.space, b.space}
        if "local" in spaces or not (a.writes or b.writes):
            return False            # local memory is each thread's own
        if len(spaces) > 1 and "generic" not in spaces:
            return False
        if a.kind == b.kind == "reduce" and a.op == b.op and a.op is not None and a.op[0] in COMMUTING:
            return False
        if spaces == {"generic", "shared"}:
            return True             # a generic address and a shared offset: nothing compares them
        return not self.disjoint(a, b)

    def disjoint(self, a: Access, b: Access) -> bool:
        """Whether no lane's ``b`` touches a byte that another lane of its warp touches with ``a``."""
        x, y = a.addr, b.addr
        if a.space == "global":
            bx, by = _buffer(x), _buffer(y)
            if bx is not None and by is not None and bx != by:
                return True
        if x.unknown or y.unknown:
            return False
        lanes = {at: k for at, k in x.terms if at[0] == "lane"}
        if lanes != {at: k for at, k in y.terms if at[0] == "lane"}:
            return False
        if {t for t in x.terms if t[0][0] != "lane"} != {t for t in y.terms if t[0][0] != "lane"}:
            return False
        key = self._lane_key(lanes)
        if key is None:
            return False
        k, spread = key
        return not _lanes_meet(abs(k), spread, s32(y.const - x.const), a.nbytes, b.nbytes)

    def _lane_key(self, lanes: dict) -> tuple[int, int] | None:
        """``(k, spread)`` when the lane-dependent part of an address is ``k`` times an index in
        which two lanes of a warp differ, by at most ``spread``: the lane index, or the linear
        thread index ``x + bx*y + bx*by*z`` (lane_values.lane_layout "linear")."""
        if not lanes:
            return 0, 0
        if set(lanes) == {LANE}:
            return lanes[LANE], 31
        if self.block is None or LANE in lanes:
            return None
        bx, by, bz = self.block
        strides = {("lane", f"SR_TID.{d}"): s for d, s, n in (("X", 1, bx), ("Y", bx, by), ("Z", bx * by, bz))
                   if n > 1}
        if set(lanes) != set(strides):
            return None
        unit = min(strides, key=strides.get)
        k = lanes[unit]
        if any(s32(k * s) != lanes[at] for at, s in strides.items()):
            return None
        return k, 31

    # ---------------------------------------------------------------- placement
    def _place(self, program) -> dict[int, tuple[int, ...]]:
        blocks = program.reachable
        entry: dict[int, frozenset] = {pc: frozenset() for pc in blocks}
        placed: dict[int, tuple[int, ...]] = {}
        todo = sorted(blocks, reverse=True)           # every block once, then what changes
        queued = set(todo)
        while todo:
            pc = todo.pop()
            queued.discard(pc)
            points = []
            pending = set() if _block_barrier(blocks[pc]) else set(entry[pc])
            for acc in self.accesses.get(pc, ()):
                if any(self.conflict(p, acc) for p in pending):
                    if not points or points[-1] != acc.inst.pc:
                        points.append(acc.inst.pc)
                    pending = set()
                pending.add(acc)
            placed[pc] = tuple(points)
            for succ in program.successors(blocks[pc]):
                if succ in blocks and not pending <= entry[succ]:
                    entry[succ] = entry[succ] | pending
                    if succ not in queued:
                        todo.append(succ)
                        queued.add(succ)
        return {pc: pts for pc, pts in placed.items() if pts}


def _block_barrier(block) -> bool:
    """Whether the block is a barrier that waits (BAR.SYNC, BAR.RED; not BAR.ARV): every thread
    passes it only after all have arrived, and both back ends order memory there."""
    first = block.insts[0]
    return first.spec.waits == "bar" and "ARV" not in first.mods


def _lanes_meet(k: int, spread: int, diff: int, w1: int, w2: int) -> bool:
    """Whether spans ``[k*i, k*i + w1)`` and ``[diff + k*j, diff + k*j + w2)`` meet for two
    lanes with ``0 < |i - j| <= spread``: whether ``k*(i - j)`` can lie strictly between
    ``diff - w1`` and ``diff + w2``. With ``k == 0`` every lane touches the same bytes."""
    low, high = diff - w1, diff + w2
    if k == 0:
        return low < 0 < high
    if k * spread >= 1 << 30 or abs(diff) >= 1 << 30:
        return True
    d_min, d_max = max(low // k + 1, -spread), min(-(-high // k) - 1, spread)
    return d_min <= d_max and (d_min, d_max) != (0, 0)


def _buffer(addr: Lin) -> int | None:
    """The pointer parameter an address is based on: the only parameter word in it, with
    coefficient 1."""
    params = [(at, k) for at, k in addr.terms if at[0] == "c" and at[1] == 0 and at[2] >= PARAM_BASE]
    return params[0][0][2] if len(params) == 1 and params[0][1] == 1 else None


def generic_target(addr: Lin) -> tuple[str, Lin]:
    """Where a generic access goes, as far as its address shows, and its address there: global
    where it is based on a pointer parameter (CUDA's pointers stay inside their buffer), shared
    or local memory where it is that window's base (a word of bank 0, coefficient 1) plus an
    offset, else ("generic", addr)."""
    if addr.unknown:
        return "generic", addr
    if _buffer(addr) is not None:
        return "global", addr
    terms = dict(addr.terms)
    windows = [(("c", 0, word), space) for word, space in ((SHARED_WINDOW_BASE, "shared"), (LOCAL_WINDOW_BASE, "local"))
               if ("c", 0, word) in terms]
    if len(windows) != 1 or terms[windows[0][0]] != 1:
        return "generic", addr
    (window, space), = windows
    del terms[window]
    return space, Lin(frozenset(terms.items()), addr.const) if terms else const(addr.const & 0xFFFFFFFF)


def _accesses(program) -> dict[int, list[Access]]:
    """The memory accesses of each reachable block with their abstract addresses, from the
    register values every path into the block agrees on (a fixpoint over the control flow)."""
    blocks = program.reachable
    entry_state: dict[int, dict] = {program.entry: {}}
    todo = [program.entry]
    while todo:
        pc = todo.pop()
        state = dict(entry_state[pc])
        for inst in blocks[pc].insts:
            run_instruction(state, inst, lambda *access: None, program.block)
        for succ in program.successors(blocks[pc]):
            if succ not in blocks:
                continue
            old = entry_state.get(succ)
            new = state if old is None else {k: v for k, v in old.items() if state.get(k) == v}
            if old is None or new != old:
                entry_state[succ] = new
                todo.append(succ)
    found: dict[int, list[Access]] = {}
    counter = [0]
    for pc, block in blocks.items():
        state = dict(entry_state.get(pc, {}))
        for inst in block.insts:
            def record(space, kind, addr, nbytes, op, inst=inst):
                if space == "generic":
                    space, addr = generic_target(addr)
                found.setdefault(pc, []).append(Access(counter[0], inst, space, kind, addr, nbytes, op))
                counter[0] += 1
            run_instruction(state, inst, record, program.block)
    return found

"""Control-flow analyses for a structured translation: the program's jumps rebuilt as nested
ifs and loops (as console-emulator shader recompilers do) instead of a ``switch (pc)`` loop.

A structured SPIR-V function needs, for every branch, the block where its paths meet again
(``OpSelectionMerge``), and for every loop its header, its back edges and its exits
(``OpLoopMerge``). This module finds them on a program's reachable blocks:

- **dominators and post-dominators** (Cooper, Harvey & Kennedy's iterative algorithm over a
  reverse postorder). A virtual exit, :data:`EXIT`, follows every block that ends the run (an
  EXIT, a conditional EXIT too, a block with no successor, and one block of each endless
  loop), so post-dominators are defined; a branch's paths meet at its immediate
  post-dominator where the listing says nothing better.
- **the listing's own merges**: each ``BSSY Bx`` paired with its ``BSYNC Bx`` (the
  instruction before the BSSY's target: nvdisasm labels the pc after the BSYNC; one at the
  target is taken too), and the body of the region between them. Where the BSYNC
  post-dominates its BSSY it is the merge the chip reconverges at, and the structured form
  merges there; where not, the region says which edges leave it (a ``BREAK Bx`` and a branch
  to an outer merge, an EXIT, a branch out), the breaks a structured form must take.
- **the loop forest** (:mod:`translator.ir.loops`): natural loops from back edges, each an
  ``OpLoopMerge`` construct.
- **reducibility**: a cycle entered other than at its header has no construct to become;
  such a program is UNSUPPORTED by a structured strategy, and the reason names the pcs.

Calls (``calls``): ``"through"`` is the program's own view (:meth:`Program.successors`): a
CALL goes to its callee and to its return point, and a RET goes back after *every* CALL.
Where a helper is called from two places, that makes paths (into one call, out of another)
that no thread takes, and cycles with two entries. ``"over"`` is the view of a translation
that makes helpers functions of their own: a CALL's block flows to its return point, each
callee is a root of its own, and a RET ends its function (it flows to EXIT).
"""
from __future__ import annotations

import weakref
from dataclasses import dataclass, replace
from typing import Mapping

from .loops import (LoopForest, depth_first, dominates, explain_irreducible, hexpc, immediate_dominators,
                    irreducible_edges, natural_loops)
from .program import Block, Program

EXIT = -1
"""The virtual exit node: every block that ends the run flows to it."""
_START = -2                     # the virtual start: an edge to every root
CALLS = ("through", "over")


@dataclass(frozen=True)
class Cfg:
    """The graph every analysis here shares: the reachable blocks by pc and their edges."""
    calls: str
    roots: tuple[int, ...]                 # the program's entry; with calls="over", then each callee's
    succ: Mapping[int, tuple[int, ...]]    # block -> the blocks it may go to (EXIT aside), in listing order
    pred: Mapping[int, tuple[int, ...]]
    exits: frozenset[int]                  # blocks with an edge to EXIT
    endless: frozenset[int]                # of those, the ones given it only so that every block reaches EXIT
    order: tuple[int, ...]                 # reverse postorder of a depth-first search from the roots
    retreating: tuple[tuple[int, int], ...]  # edges of that search to a block on its stack

    @property
    def entry(self) -> int:
        return self.roots[0]


def control_flow(program: Program, calls: str = "through") -> Cfg:
    """The graph of ``program``'s reachable blocks, calls seen as ``calls`` says."""
    if calls not in CALLS:
        raise ValueError(f"calls={calls!r}: one of {', '.join(CALLS)}")
    roots, succ, exits, todo = [program.entry], {}, set(), [program.entry]
    while todo:
        pc = todo.pop()
        if pc in succ:
            continue
        block = program.blocks[pc]
        nexts, ends = _edges(program, block, calls)
        succ[pc] = tuple(dict.fromkeys(s for s in nexts if s in program.blocks))
        if ends or not succ[pc]:
            exits.add(pc)
        last = block.insts[-1]
        if calls == "over" and last.spec.flow == "call" and last.target not in roots:
            roots.append(last.target)
            todo.append(last.target)
        todo.extend(reversed(succ[pc]))
    pred: dict[int, list[int]] = {pc: [] for pc in succ}
    for pc in sorted(succ):
        for s in succ[pc]:
            pred[s].append(pc)
    endless = _endless(succ, pred, exits)
    post, retreating = depth_first(roots, succ)
    return Cfg(calls, tuple(roots), succ, {pc: tuple(p) for pc, p in pred.items()}, frozenset(exits | endless),
               frozenset(endless), tuple(reversed(post)), tuple(retreating))


def _edges(program: Program, block: Block, calls: str) -> tuple[list[int], bool]:
    """Where control goes after ``block``, and whether it may end the run (or, calls="over",
    its function) there."""
    last = block.insts[-1]
    flow = last.spec.flow
    if calls == "over" and flow == "call":
        return [last.next_pc], False
    if calls == "over" and flow == "return":
        return ([last.next_pc] if last.guard is not None else []), True
    return program.successors(block), flow == "exit"


def _endless(succ: Mapping[int, tuple[int, ...]], pred: Mapping[int, list[int]], exits: set[int]) -> set[int]:
    """Blocks to give an edge to EXIT so that every block reaches it: in each part that never
    ends (an endless loop), its last block by pc."""
    reach, todo, added = set(), list(exits), set()
    while True:
        while todo:
            pc = todo.pop()
            if pc not in reach:
                reach.add(pc)
                todo.extend(pred[pc])
        stuck = [pc for pc in succ if pc not in reach]
        if not stuck:
            return added
        added.add(max(stuck))
        todo.append(max(stuck))


def _dominator_tree(cfg: Cfg) -> dict[int, int | None]:
    preds = {pc: cfg.pred[pc] + ((_START,) if pc in cfg.roots else ()) for pc in cfg.order}
    idom = immediate_dominators([_START, *cfg.order], preds)
    return {pc: (None if idom[pc] == _START else idom[pc]) for pc in sorted(cfg.order)}


def _post_dominator_tree(cfg: Cfg) -> dict[int, int]:
    back = {EXIT: tuple(sorted(cfg.exits, reverse=True)), **cfg.pred}
    post, _ = depth_first([EXIT], back)
    succ = {pc: cfg.succ[pc] + ((EXIT,) if pc in cfg.exits else ()) for pc in cfg.succ}
    ipdom = immediate_dominators(list(reversed(post)), succ)
    return {pc: ipdom[pc] for pc in sorted(cfg.succ)}


@dataclass(frozen=True)
class Region:
    """A BSSY and its BSYNC: where the listing says the lanes that entered together meet."""
    bssy_pc: int                   # the BSSY instruction
    barrier: int                   # x of Bx
    start: int                     # the block holding the BSSY
    sync_pc: int | None            # the BSYNC Bx's block; None where the BSSY's target has none
    blocks: frozenset[int]         # its body: reachable from the BSSY without passing the BSYNC, and
                                   # from which the BSYNC can still be reached (the BSSY's block included)
    leaves: tuple[tuple[int, int], ...]  # edges from the body that never come back to the BSYNC:
                                   # to a block outside, or (block, EXIT) where the run may end
    breaks: tuple[tuple[int, int], ...]  # of those, the ones from a block holding BREAK Bx
    post_dominated: bool           # the BSYNC's block post-dominates the BSSY's (no edge leaves)
    nested: bool = True            # with every other region: disjoint or one inside the other, never
                                   # one Bx inside another region of the same Bx
    problem: str | None = None     # why it is not a clean merge, pcs in hex; None where it is

    @property
    def span(self) -> frozenset[int]:
        """Its body and its BSYNC's block."""
        return self.blocks | ({self.sync_pc} if self.sync_pc is not None else set())


def _barrier(inst) -> int:
    return next(o.value for o in inst.ops if o.kind == "barrier")


def _regions(program: Program, cfg: Cfg, ipdom: Mapping[int, int], loops: LoopForest) -> tuple[Region, ...]:
    at = {i.pc: i for i in program.insts}
    found = []
    for pc in sorted(cfg.succ):
        for bssy in (i for i in program.blocks[pc].insts if i.spec.region and i.spec.target == "pc"):
            bar = _barrier(bssy)
            sync = next((i for i in (at.get(bssy.target - 16), at.get(bssy.target))
                         if i is not None and i.spec.waits == "bsync" and _barrier(i) == bar), None)
            around = frozenset(h for h, loop in loops.loops.items() if pc in loop.body)
            found.append(_region(program, cfg, ipdom, bssy, bar, pc, sync.pc if sync is not None else None, around))
    return _nesting(found)


def _region(program: Program, cfg: Cfg, ipdom, bssy, bar: int, start: int, sync_pc: int | None,
            around: frozenset[int]) -> Region:
    """The region of one BSSY; ``around``: the headers of the loops holding its block, whose
    back edges end an iteration, and so leave a region begun inside it."""
    ahead, todo = set(), [start]                # reachable without passing the BSYNC
    while todo:
        pc = todo.pop()
        if pc != sync_pc and pc not in ahead:
            ahead.add(pc)
            todo.extend(s for s in cfg.succ[pc] if s not in around)
    back, todo = set(), [sync_pc] if sync_pc in cfg.succ else []     # reaching the BSYNC
    while todo:
        pc = todo.pop()
        if pc not in back:
            back.add(pc)
            todo.extend(p for p in cfg.pred[pc] if p in ahead)
    body = (ahead & back) | {start}
    leaves = sorted({(pc, s) for pc in body for s in cfg.succ[pc] if s != sync_pc and (s not in body or s in around)}
                    | {(pc, EXIT) for pc in body & cfg.exits})
    breaks = [e for e in leaves if any(i.base == "BREAK" and _barrier(i) == bar for i in program.blocks[e[0]].insts)]
    post = sync_pc in cfg.succ and dominates(ipdom, sync_pc, start)
    if sync_pc is None:
        problems = [f"no BSYNC B{bar} before or at its target {hexpc(bssy.target)}"]
    elif sync_pc not in cfg.succ:
        problems = [f"its BSYNC at {hexpc(sync_pc)} is never reached"]
    else:
        problems = [] if post else [f"the BSYNC at {hexpc(sync_pc)} does not post-dominate it"]
        problems += [("control leaves the region along " if not k else "")
                     + f"{hexpc(a)} -> {'the exit' if b == EXIT else hexpc(b)}"
                     + (f" (BREAK B{bar})" if (a, b) in breaks else " (a back edge)" if b in around else "")
                     for k, (a, b) in enumerate(leaves)]
    problem = f"{hexpc(bssy.pc)}: BSSY B{bar}: " + ", ".join(problems) if problems else None
    return Region(bssy.pc, bar, start, sync_pc, frozenset(body), tuple(leaves), tuple(breaks), post, True, problem)


def _nesting(regions: list[Region]) -> tuple[Region, ...]:
    """Mark each region nested or not (Region.nested), with the first clash in its problem."""
    out = []
    for r in regions:
        clash = None
        for o in regions:
            if o is r:
                continue
            a, b = r.span, o.span
            if not (a.isdisjoint(b) or a <= b or b <= a):
                clash = f"overlaps the region of BSSY B{o.barrier} at {hexpc(o.bssy_pc)} without nesting"
            elif o.barrier == r.barrier and a != b and not a.isdisjoint(b):
                clash = f"nests with the region of BSSY B{o.barrier} at {hexpc(o.bssy_pc)}, same barrier"
            if clash:
                break
        if clash is None:
            out.append(r)
            continue
        problem = f"{r.problem}; it {clash}" if r.problem else f"{hexpc(r.bssy_pc)}: BSSY B{r.barrier} {clash}"
        out.append(replace(r, nested=False, problem=problem))
    return tuple(out)


@dataclass(frozen=True)
class Structure:
    """Every analysis of one program, for one view of its calls (see the module's doc)."""
    cfg: Cfg
    idom: Mapping[int, int | None]   # block -> its immediate dominator; None for a root
    ipdom: Mapping[int, int]         # block -> its immediate post-dominator, or EXIT
    loops: LoopForest
    reducible: bool
    reason: str                      # why not, pcs in hex ("reducible" where it is)
    regions: tuple[Region, ...]      # the BSSY/BSYNC pairs, by the BSSY's pc

    def dominates(self, a: int, b: int) -> bool:
        """Every path from the entry (its function's, calls="over") to block b passes block a."""
        return dominates(self.idom, a, b)

    def post_dominates(self, a: int, b: int) -> bool:
        """Every path from block b to the end of the run passes block a (or a is EXIT)."""
        return dominates(self.ipdom, a, b)


_CACHE: dict[tuple[int, str], tuple[weakref.ref, Structure]] = {}


def analyse(program: Program, calls: str = "through") -> Structure:
    """Every analysis of ``program``, made once per program object and view of calls."""
    key = (id(program), calls)
    hit = _CACHE.get(key)
    if hit is not None and hit[0]() is program:
        return hit[1]
    cfg = control_flow(program, calls)
    idom, ipdom = _dominator_tree(cfg), _post_dominator_tree(cfg)
    is_dom = lambda a, b: dominates(idom, a, b)         # noqa: E731
    back = [(t, h) for t, h in cfg.retreating if is_dom(h, t)]
    bad = irreducible_edges(cfg.retreating, is_dom)
    reason = "reducible"
    if bad:
        reason = explain_irreducible(bad[0], cfg.roots, cfg.succ) + _more(bad) + _call_hint(program, cfg)
    loops = natural_loops(cfg.succ, cfg.pred, back, cfg.exits)
    found = Structure(cfg, idom, ipdom, loops, not bad, reason, _regions(program, cfg, ipdom, loops))
    _CACHE[key] = (weakref.ref(program), found)
    weakref.finalize(program, _CACHE.pop, key, None)
    return found


def _more(bad: list[tuple[int, int]]) -> str:
    return f" (and {len(bad) - 1} more such edges)" if len(bad) > 1 else ""


def _call_hint(program: Program, cfg: Cfg) -> str:
    rets = [pc for pc in cfg.succ if program.blocks[pc].insts[-1].spec.flow == "return"]
    if cfg.calls != "through" or not rets:
        return ""
    return (f"; a RET ({', '.join(map(hexpc, rets))}) goes back after every CALL here, which makes cycles "
            f"no thread takes: see calls='over'")


def dominators(program: Program, calls: str = "through") -> Mapping[int, int | None]:
    """Block pc -> the pc of its immediate dominator (None for the entry, and for each callee's
    entry with calls="over")."""
    return analyse(program, calls).idom


def post_dominators(program: Program, calls: str = "through") -> Mapping[int, int]:
    """Block pc -> the pc of its immediate post-dominator, or EXIT."""
    return analyse(program, calls).ipdom


def loop_forest(program: Program, calls: str = "through") -> LoopForest:
    """The natural loops of the program, by header, nested as a forest."""
    return analyse(program, calls).loops


def reducible(program: Program, calls: str = "through") -> tuple[bool, str]:
    """(whether every cycle is entered only at its header, why not: pcs in hex)."""
    found = analyse(program, calls)
    return found.reducible, found.reason


def convergence_regions(program: Program, calls: str = "through") -> tuple[Region, ...]:
    """The listing's reconvergence points: each reachable BSSY with its BSYNC and region."""
    return analyse(program, calls).regions


__all__ = ["EXIT", "CALLS", "Cfg", "Region", "Structure", "analyse", "control_flow", "convergence_regions",
           "dominates", "dominators", "loop_forest", "post_dominators", "reducible"]

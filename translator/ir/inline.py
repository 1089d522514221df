"""A program's control flow with every call inlined: each call site gets its own copy of its
callee's blocks, so a RET goes back to the one place its copy was called from.

This is the graph a structured translation lays out when it puts a helper's code where it is
called (as a shader compiler inlines functions), not in a function of its own: a helper that
swaps values in its warp (nvcc's ``__cuda_sm70_votesync_ballot``, ``reduxsync``...) then runs
with the lanes that called it together, at the call's construct. A node is a block in one
*copy*: ``copy << 32 | pc`` (copy 0 is the kernel's own code, so a call-free program's nodes
are its pcs). Recursion, and programs whose copies pass :data:`MAX_NODES`, have no such graph.

The view's loops and reducibility are found as :mod:`translator.ir.structure` finds them for
the program's own views (calls "through" and "over"), with :mod:`translator.ir.loops`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from .loops import (LoopForest, depth_first, dominates, explain_irreducible, hexpc, immediate_dominators,
                    irreducible_edges, natural_loops)
from .program import Program

MAX_NODES = 4096
"""The most block copies an inlined program may have (a bound on code size)."""
_START = -2


def pc_of(node: int) -> int:
    """The block's pc of a node."""
    return node & 0xFFFFFFFF


def name(node: int) -> str:
    """A node as messages spell it: its pc, and its copy where it is not the kernel's own."""
    copy = node >> 32
    return hexpc(pc_of(node)) + (f" (inlined copy {copy})" if copy else "")


@dataclass(frozen=True)
class Inlined:
    """The inlined graph of a program, its loops, and whether it is reducible (and why not)."""
    entry: int
    succ: Mapping[int, tuple[int, ...]]     # node -> the nodes it may go to, in listing order
    pred: Mapping[int, tuple[int, ...]]
    exits: frozenset[int]                   # nodes that may end the run (an EXIT, a RET of the kernel)
    calls: Mapping[int, tuple[int, ...]]    # copy -> the pcs of the CALLs it sits inside, outermost first
    loops: LoopForest
    reducible: bool
    reason: str                             # "reducible", or why not


class NotInlinable(Exception):
    """The program has no inlined graph: recursion, or too many copies."""


def inline(program: Program) -> Inlined:
    """The inlined graph of ``program``'s reachable code; :class:`NotInlinable` where it has none."""
    copies: dict[tuple[int, ...], int] = {(): 0}
    succ: dict[int, tuple[int, ...]] = {}
    exits: set[int] = set()
    entry = program.entry
    todo = [entry]
    while todo:
        node = todo.pop()
        if node in succ:
            continue
        if len(succ) >= MAX_NODES:
            raise NotInlinable(f"{program.name}: more than {MAX_NODES} blocks with each call's helper copied")
        calls = next(c for c, k in copies.items() if k == node >> 32)
        nexts, ends = _edges(program, node, calls, copies)
        succ[node] = tuple(dict.fromkeys(nexts))
        if ends or not succ[node]:
            exits.add(node)
        todo.extend(reversed(succ[node]))
    pred: dict[int, list[int]] = {n: [] for n in succ}
    for n in sorted(succ):
        for s in succ[n]:
            pred[s].append(n)
    post, retreating = depth_first([entry], succ)
    order = list(reversed(post))
    preds = {n: tuple(pred[n]) + ((_START,) if n == entry else ()) for n in order}
    idom = immediate_dominators([_START, *order], preds)
    tree = {n: (None if idom[n] == _START else idom[n]) for n in order}
    is_dom = lambda a, b: dominates(tree, a, b)         # noqa: E731
    bad = irreducible_edges(retreating, is_dom)
    reason = "reducible" if not bad else explain_irreducible(bad[0], [entry], succ)
    back = [(t, h) for t, h in retreating if is_dom(h, t)]
    loops = natural_loops(succ, {n: tuple(p) for n, p in pred.items()}, back, exits)
    return Inlined(entry, succ, {n: tuple(p) for n, p in pred.items()}, frozenset(exits),
                   {k: c for c, k in copies.items()}, loops, not bad, reason)


def _edges(program: Program, node: int, calls: tuple[int, ...], copies: dict) -> tuple[list[int], bool]:
    """The nodes after ``node`` (a block in the copy called through ``calls``), and whether
    the run may end there."""
    copy, block = node >> 32, program.blocks[pc_of(node)]
    last = block.insts[-1]
    flow = last.spec.flow
    here = lambda pc: copy << 32 | pc           # noqa: E731
    falls = [here(last.next_pc)] if last.guard is not None else []
    if flow == "call" and not last.spec.external:
        if last.pc in calls:
            raise NotInlinable(f"{last.where}: '{last.text}' calls a helper it is inside of (recursion)")
        inner = calls + (last.pc,)
        if inner not in copies:
            copies[inner] = len(copies)
        return [copies[inner] << 32 | t for t in last.destinations] + falls, False
    if flow == "return":
        if not calls:                       # the kernel's own RET ends its run
            return falls, True
        outer = copies[calls[:-1]]
        back = next(i.next_pc for i in program.insts if i.pc == calls[-1])
        return [outer << 32 | back] + falls, False
    nexts = [here(pc) for pc in program.successors(block) if pc in program.blocks]
    return nexts, flow == "exit"


__all__ = ["Inlined", "NotInlinable", "inline", "pc_of", "name", "MAX_NODES"]

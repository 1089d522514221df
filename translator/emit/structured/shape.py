"""The structured shape of a program: its blocks as nested scopes (the whole program, and each
natural loop of :mod:`translator.ir.loops`), each scope an acyclic graph whose nodes are its
own blocks and its child loops, collapsed to one node each.

A scope's code is laid out over its dominator tree, as Ramsey's "Beyond Relooper" does for
WebAssembly: a node's code is its block (or its loop construct), then an ``OpSelectionMerge``
dispatch on the thread's pc over the successors that only this node reaches (its *arms*, put
inside the selection), then its other children in the dominator tree (the *merge* nodes, which
several paths reach), in reverse postorder. Every node is emitted once, no code is copied. A
merge node that post-dominates its dominator (the ordinary if/else join: the branch block's
immediate post-dominator) follows the selection's merge directly; one that some path can
avoid is guarded by ``if (pc == node)``, the thread's pc being the guard variable that a jump
crossing a construct sets.

An indirect branch (BRX) is a dispatch like any other: its successors are its jump table's
targets, each an arm or a merge.

Edges that leave a scope (a loop's back edge to its header: the next iteration; a break to a
block outside the loop, to any depth) are not edges of its graph: the jump sets the pc, the
rest of the iteration passes over (every guard and arm tests the pc), the loop's continue
block goes round again where the pc is the header and leaves otherwise, and the dispatch after
the loop's merge (the loop node's successors are its exit targets) picks where it went.

Calls are inlined (:mod:`translator.ir.inline`): a helper's blocks are laid out again at each
call site, so its collectives run with the lanes that called it. A node is a block of one copy
(``copy << 32 | pc``); the thread's pc, the guard variable, is the block's pc, which each copy
tests inside its own constructs only.

What cannot be shaped this way raises :class:`UnsupportedInstruction`, naming the construct
and its pc: an irreducible cycle, recursion.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ...errors import UnsupportedInstruction
from ...ir.inline import Inlined, NotInlinable, inline, name
from ...ir.loops import depth_first, dominates, immediate_dominators
from ...ir.program import Program

END = -3            # the virtual sink of a scope's graph (post-dominators)


@dataclass
class Scope:
    """One scope: the program (``header`` None) or a natural loop (its header)."""
    header: int | None
    root: int                                   # the node its code starts at
    loops: frozenset[int]                       # nodes that are child loops (their headers)
    succ: dict[int, tuple[int, ...]]            # node -> its successors in the scope, in pc order
    pred: dict[int, tuple[int, ...]]
    leaves: frozenset[int]                      # nodes with an edge out of the graph (a back edge, a break)
    order: tuple[int, ...]                      # reverse postorder from the root
    idom: dict[int, int] = field(default_factory=dict)
    ipdom: dict[int, int] = field(default_factory=dict)

    def arms(self, x: int) -> list[int]:
        """The successors of x that only x reaches: inside x's selection."""
        return [s for s in self.succ[x] if self.pred[s] == (x,)]

    def merges(self, x: int) -> list[int]:
        """x's other children in the dominator tree, in reverse postorder."""
        arms = set(self.arms(x))
        return [n for n in self.order if n != x and self.idom.get(n) == x and n not in arms]

    def post_dominates(self, y: int, x: int) -> bool:
        return dominates(self.ipdom, y, x)


@dataclass
class Shape:
    """Every scope of a program, by header (None: the program)."""
    scopes: dict[int | None, Scope]
    loop_headers: frozenset[int]
    # where a node goes next: a block's successors in the inlined graph, a loop's exit targets
    # (a thread that leaves it may be in another inlined copy: .uniform follows it)
    onward: dict[int, tuple[int, ...]] = field(default_factory=dict)


def unsupported_reason(program: Program) -> tuple[str, str] | None:
    """(why the program has no structured form, the construct) or None where it has one."""
    try:
        found = inline(program)
    except NotInlinable as e:
        return str(e), "CALL"
    if not found.reducible:
        return f"{program.name}: {found.reason}", "irreducible"
    return None


def shape(program: Program) -> Shape:
    """The scopes of ``program`` (which :func:`unsupported_reason` accepts)."""
    why = unsupported_reason(program)
    if why is not None:
        raise UnsupportedInstruction(f"structured: {why[0]}", why[1])
    found: Inlined = inline(program)
    forest = found.loops
    scopes: dict[int | None, Scope] = {}
    everything = frozenset(found.succ)
    scopes[None] = _scope(program, found.succ, None, found.entry, everything, forest.roots, forest)
    for h, loop in forest.loops.items():
        scopes[h] = _scope(program, found.succ, h, h, loop.body, loop.children, forest)
    onward = {**{n: tuple(s) for n, s in found.succ.items()}, **{h: loop.exit_targets for h, loop in forest.loops.items()}}
    return Shape(scopes, frozenset(forest.loops), onward)


def _scope(program: Program, succ, header, root, body, children, forest) -> Scope:
    inner = {}
    for c in children:
        for pc in forest.loops[c].body:
            inner[pc] = c
    node = lambda pc: inner.get(pc, pc)   # noqa: E731
    nodes = sorted({node(pc) for pc in body})
    out: dict[int, list[int]] = {n: [] for n in nodes}
    leaves = set()
    for n in nodes:
        if n in children:
            edges = [d for _, d in forest.loops[n].exits]
        else:
            edges = list(succ[n])
        for d in edges:
            if d == header or d not in body:
                leaves.add(n)
            elif node(d) not in out[n]:
                if node(d) != d:
                    raise UnsupportedInstruction(f"structured: {program.name}: the edge to {name(d)} enters the "
                                                 f"loop at {name(node(d))} elsewhere than its header",
                                                 "irreducible")
                out[n].append(d)
    for n in nodes:
        out[n].sort()
    pred: dict[int, list[int]] = {n: [] for n in nodes}
    for n in nodes:
        for d in out[n]:
            pred[d].append(n)
    graph = {n: tuple(v) for n, v in out.items()}
    post, back = depth_first([root], graph)
    if back or len(post) != len(nodes):
        raise UnsupportedInstruction(f"structured: {program.name}: the scope at {name(root)} is not an acyclic "
                                     "graph entered at its head", "irreducible")
    order = tuple(reversed(post))
    preds = {n: tuple(pred[n]) for n in nodes}
    idom = immediate_dominators(list(order), preds)
    # post-dominators: the graph reversed, from a sink after every node that leaves or ends
    ends = tuple(n for n in nodes if n in leaves or not graph[n])
    rev = {END: ends, **preds}
    rpost, _ = depth_first([END], rev)
    fwd = {END: (), **{n: graph[n] + ((END,) if n in ends else ()) for n in nodes}}
    ipdom = immediate_dominators(list(reversed(rpost)), fwd)
    return Scope(header, root, frozenset(n for n in nodes if n in children), graph, preds,
                 frozenset(leaves), order, {n: d for n, d in idom.items() if n != root},
                 {n: d for n, d in ipdom.items() if n != END})

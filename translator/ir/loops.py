"""Graph algorithms on a control-flow graph given as plain data (block pcs and their edges):
depth-first order, dominator trees (Cooper, Harvey & Kennedy), the natural loops and how they
nest, and why a graph is irreducible.

A structured back end turns each loop into one SPIR-V loop construct (``OpLoopMerge``): its
header is where the construct starts, its latches are the blocks that branch back (the
continue target gathers them), and its exits are the edges a ``break`` must take. That only
works where every cycle is entered at its header (the graph is *reducible*); a cycle with two
entries has no single header to put the construct on, and the program is UNSUPPORTED for that
strategy. :mod:`translator.ir.structure` builds the graph from a program and calls these.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Callable, Iterable, Mapping

Graph = Mapping[int, tuple[int, ...]]


def hexpc(pc: int) -> str:
    """A pc as the listings' messages spell it: 0x0150."""
    return f"{pc:#06x}"


def depth_first(roots: Iterable[int], succ: Graph) -> tuple[list[int], list[tuple[int, int]]]:
    """Postorder of a depth-first search from ``roots`` (successors in order), and its
    retreating edges (to a block still on the stack), without recursion."""
    seen, post, retreating = set(), [], []
    for root in roots:
        if root in seen:
            continue
        seen.add(root)
        stack, on_stack = [(root, iter(succ[root]))], {root}
        while stack:
            pc, nexts = stack[-1]
            for nxt in nexts:
                if nxt in on_stack:
                    retreating.append((pc, nxt))
                elif nxt not in seen:
                    seen.add(nxt)
                    on_stack.add(nxt)
                    stack.append((nxt, iter(succ[nxt])))
                    break
            else:
                stack.pop()
                on_stack.discard(pc)
                post.append(pc)
    return post, retreating


def immediate_dominators(order: list[int], preds: Graph) -> dict[int, int]:
    """Cooper, Harvey & Kennedy: the immediate dominator of every node of ``order``, a reverse
    postorder that starts at the start node (which is its own)."""
    index = {pc: k for k, pc in enumerate(order)}
    idom = {order[0]: order[0]}
    changed = True
    while changed:
        changed = False
        for pc in order[1:]:
            new = None
            for p in preds[pc]:
                if p not in idom:
                    continue
                if new is None:
                    new = p
                    continue
                a, b = p, new
                while a != b:
                    while index[a] > index[b]:
                        a = idom[a]
                    while index[b] > index[a]:
                        b = idom[b]
                new = a
            if idom.get(pc) != new:
                idom[pc] = new
                changed = True
    return idom


def dominates(tree: Mapping[int, int | None], a: int, b: int) -> bool:
    """Whether ``a`` is ``b`` or above it in ``tree`` (node -> its parent): with the
    dominators, every path from the entry to b passes a; with the post-dominators, every
    path from b to the exit passes a (EXIT post-dominates every block)."""
    while b != a:
        b = tree.get(b)
        if b is None:
            return False
    return True


@dataclass(frozen=True)
class Loop:
    """One natural loop: the blocks of every back edge to ``header``, merged."""
    header: int
    body: frozenset[int]                 # the header and every block that reaches a latch without passing it
    latches: tuple[int, ...]             # the sources of its back edges, in pc order
    exits: tuple[tuple[int, int], ...]   # edges (inside, outside) that leave the body, in pc order
    ends: tuple[int, ...]                # blocks of the body that end the run (EXIT): no exit edge, an OpReturn
    parent: int | None                   # the header of the innermost loop around it
    children: tuple[int, ...]            # the headers of the loops directly inside it
    depth: int                           # 1 for an outermost loop

    @property
    def exit_targets(self) -> tuple[int, ...]:
        """The blocks outside the body that its exit edges go to, in pc order."""
        return tuple(sorted({dst for _, dst in self.exits}))


@dataclass(frozen=True)
class LoopForest:
    """Every natural loop of a graph, by header, and how they nest."""
    loops: Mapping[int, Loop]            # by header, in pc order
    roots: tuple[int, ...]               # the headers of the outermost loops
    innermost: Mapping[int, int]         # block pc -> the header of the innermost loop holding it

    def loop_of(self, pc: int) -> Loop | None:
        """The innermost loop holding block ``pc``, or None outside every loop."""
        header = self.innermost.get(pc)
        return None if header is None else self.loops[header]

    def depth(self, pc: int) -> int:
        """How many loops hold block ``pc``."""
        loop = self.loop_of(pc)
        return 0 if loop is None else loop.depth

    def __len__(self) -> int:
        return len(self.loops)


def natural_loops(succ: Graph, pred: Graph, back_edges: Iterable[tuple[int, int]],
                  ends: Iterable[int] = ()) -> LoopForest:
    """The loop forest of a graph from its back edges (t -> h where h dominates t): each body
    is h and the blocks that reach t without passing h; bodies with one header are merged.
    Natural loops with different headers are disjoint or nested, so they form a forest; the
    parent of a loop is the smallest other loop whose body holds its header."""
    latches: dict[int, set[int]] = {}
    for tail, head in back_edges:
        latches.setdefault(head, set()).add(tail)
    bodies: dict[int, frozenset[int]] = {}
    for head, tails in latches.items():
        body, todo = {head}, [t for t in tails if t != head]
        while todo:
            pc = todo.pop()
            if pc not in body:
                body.add(pc)
                todo.extend(pred[pc])
        bodies[head] = frozenset(body)
    parents = {}
    for head in bodies:
        around = [h for h, b in bodies.items() if h != head and head in b]
        parents[head] = min(around, key=lambda h: (len(bodies[h]), h), default=None)
    depth = {}
    for head in sorted(bodies, key=lambda h: -len(bodies[h])):     # outer loops first
        depth[head] = 1 if parents[head] is None else depth[parents[head]] + 1
    ending = set(ends)
    loops = {}
    for head in sorted(bodies):
        body = bodies[head]
        loops[head] = Loop(head, body, tuple(sorted(latches[head])),
                           tuple(sorted((s, d) for s in body for d in succ[s] if d not in body)),
                           tuple(sorted(body & ending)), parents[head],
                           tuple(sorted(h for h, p in parents.items() if p == head)), depth[head])
    innermost: dict[int, int] = {}
    for head in sorted(loops, key=lambda h: depth[h]):                 # inner loops overwrite
        innermost.update(dict.fromkeys(bodies[head], head))
    return LoopForest(loops, tuple(h for h in loops if parents[h] is None), innermost)


def irreducible_edges(retreating: Iterable[tuple[int, int]],
                      dominates: Callable[[int, int], bool]) -> list[tuple[int, int]]:
    """The retreating edges of a depth-first search (to a block on its stack) whose target
    does not dominate their source: each closes a cycle entered somewhere else as well. A
    graph is reducible exactly when there is none, whatever the search's order."""
    return sorted(((t, h) for t, h in retreating if not dominates(h, t)), key=lambda e: (e[1], e[0]))


def second_entry(edge: tuple[int, int], roots: Iterable[int], succ: Graph) -> tuple[int | None, int]:
    """Where the cycle that an irreducible edge t -> h closes is entered without passing h:
    (the block outside it, or None for a root; the block of the cycle). Found on a shortest
    path from a root to t that avoids h: its first block that h reaches."""
    tail, head = edge
    from_head, todo = set(), [head]
    while todo:
        pc = todo.pop()
        if pc not in from_head:
            from_head.add(pc)
            todo.extend(succ[pc])
    came: dict[int, int | None] = {}
    queue = deque()
    for root in roots:
        if root != head and root not in came:
            came[root] = None
            queue.append(root)
    while queue and tail not in came:
        pc = queue.popleft()
        for nxt in succ[pc]:
            if nxt != head and nxt not in came:
                came[nxt] = pc
                queue.append(nxt)
    path = [tail]
    while came[path[-1]] is not None:
        path.append(came[path[-1]])
    path.reverse()
    k = next(k for k, pc in enumerate(path) if pc in from_head)
    return (path[k - 1] if k else None), path[k]


def explain_irreducible(edge: tuple[int, int], roots: Iterable[int], succ: Graph) -> str:
    """A sentence naming the edge, its target and the cycle's other entry, pcs in hex."""
    tail, head = edge
    outside, inside = second_entry(edge, roots, succ)
    way = (f"the edge {hexpc(outside)} -> {hexpc(inside)} enters it" if outside is not None
           else f"it is entered at the entry {hexpc(inside)}")
    return (f"irreducible: the edge {hexpc(tail)} -> {hexpc(head)} closes a cycle that {hexpc(head)} "
            f"does not dominate: {way} without passing {hexpc(head)}")

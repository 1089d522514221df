"""The turn rule, and what the instructions that wait (BSYNC, WARPSYNC, BAR) decide.

Every turn, each thread that has not exited offers a key: its pc, with WAIT_BIT set when its
last attempt to pass a waiting instruction failed, and YIELD_BIT set when it has yielded in
this round: taken a backward branch, executed YIELD, or tried a waiting instruction and
failed. The workgroup picks the lowest key; the threads at that pc (waiting, yielded or not)
run their block. So:

- convergent code without loops keeps the seed design's lowest-pc-first order;
- a thread blocked at a barrier lets every running thread move before it looks again;
- threads blocked at different barriers take turns to look again: one that has tried in this
  round ranks behind one that has not, so a waiter at a low pc that cannot pass does not
  keep a waiter at a higher pc that could from ever trying;
- a thread that loops back yields until every other running thread has looped back too,
  waits or exits; then the round ends and all priorities reset. Every thread that can run
  therefore runs in every round (a round ends only when all of them have moved), so a
  spinner placed before its producer no longer starves it: starvation-free within the step
  budget, which is what Volta's independent thread scheduling promises CUDA code.

If only waiting threads remain and none can pass, they try in turn forever: the step budget
ends it as LIVELOCK, naming the pcs.

The interpreter uses these functions directly; the SPIR-V emitter (:mod:`translator.emit.turns.warp`)
emits the same decisions.

- BSYNC Bx passes when every lane of the thread's Bx mask has exited, left the region (by
  BREAK Bx or by passing this BSYNC earlier), stands at this pc, waits at a WARPSYNC whose
  mask names the thread, or has executed YIELD since it entered the region (a spinning lane releases the barrier, as on Volta and later: the
  holder of a spin lock must get past BSYNC while its warp-mates still spin). A lane that
  leaves while lanes of its mask are elsewhere is taken out of their Bx masks: it stays gone
  for them even after it enters a new region of the same barrier (``leave_region``).
- WARPSYNC m passes when every lane of m has exited, or stands at a WARPSYNC with the same
  mask m: at this pc, or waiting at another (those are released too). Lanes at this pc with
  another mask are a different ``*_sync`` call in the same slow-path helper. WARPSYNC.EXCLUSIVE
  lets one complete group pass per turn (the lowest lane's), so that the maskless collective
  after it sees one group.
- BAR counts arrivals per barrier id; it completes when the count reaches the thread count
  given (or every thread of the block that has not exited), which bumps the barrier's
  generation and lets every thread that arrived in the previous generation pass.
"""
from __future__ import annotations

from ..ir.turnkey import WAIT_BIT, YIELD_BIT


def key(t) -> int:
    """A thread's bid for the next turn, lowest first: running, yielded, waiting, waiting and
    already tried in this round; then the lowest pc."""
    return bid(t.pc, t.waiting, t.yielded)


def bid(pc, waiting, yielded):
    """:func:`key` from its parts (ints and bools, or arrays of them: a key each)."""
    return pc | (waiting * WAIT_BIT) | (yielded * YIELD_BIT)


def round_over(chosen: int) -> bool:
    """Whether the turn's key ends the round: when the winner has yielded, every thread still
    running has yielded or waits (and, if it waits, has tried in this round), and every thread
    gets its priority back."""
    return bool(chosen & YIELD_BIT)


def pick(threads) -> int | None:
    """The lowest key among the threads still running, or None when all have exited; every
    thread's yielded flag is cleared where the round is over (:func:`round_over`)."""
    keys = [t.pc | (WAIT_BIT if t.waiting else 0) | (YIELD_BIT if t.yielded else 0)    # key(t), inline
            for t in threads if not t.exited]
    if not keys:
        return None
    chosen = min(keys)
    if round_over(chosen):
        for t in threads:
            t.yielded = False
    return chosen


def after_block(t, block) -> None:
    """A thread that branched back (to its block or before) yields its priority."""
    if not t.exited and branched_back(t.pc, block):
        t.yielded = True


def branched_back(pc, block):
    """Whether a thread that ran ``block`` and stands at ``pc`` now went back (an array of
    pcs: for each)."""
    return pc <= block.pc


def settle(inst, moved, stuck) -> None:
    """The threads ``moved`` pass the waiting instruction ``inst``; those ``stuck`` keep
    waiting at it, and yield."""
    for t in moved:
        t.pc, t.waiting = inst.next_pc, False
    for t in stuck:
        t.waiting = t.yielded = True


def _lanes(cta, warp: int, mask: int):
    """The threads of ``warp`` whose lanes ``mask`` names, in lane order (lanes past the
    block's last thread do not exist)."""
    threads, base = cta.threads, warp * 32
    while mask:
        low = mask & -mask
        tid = base + low.bit_length() - 1
        if tid >= len(threads):
            return
        yield threads[tid]
        mask ^= low


class _Facts:
    """What one waiting instruction's turn reads of each warp, taken once per warp before
    any thread's verdict (a verdict changes none of it): the lanes that have exited or stand
    at the instruction's pc (``present``), those that do not exist (``missing``), and the
    lanes that wait at a WARPSYNC, with its mask."""

    def __init__(self, m, cta, inst):
        self.m, self.blocks, self.cta, self.inst = m, m.program.blocks, cta, inst
        self._warps: dict[int, tuple[int, int, dict[int, int]]] = {}     # every warp's, when first asked
        self._groups: dict[tuple[int, int], bool] = {}
        self.released: set[tuple[int, int]] = set()      # (warp, mask) of the groups released

    def warp(self, warp: int) -> tuple[int, int, dict[int, int]]:
        """(present, missing, {lane: mask} of the lanes waiting at a WARPSYNC)."""
        if not self._warps:
            self._warps = self.m.warp_facts(self.cta, self.inst.pc)
        return self._warps[warp]

    def group_ready(self, warp: int, mask: int) -> bool:
        """Every lane of ``mask`` has exited or stands at a WARPSYNC with the same mask (here,
        or waiting at another)."""
        ready = self._groups.get((warp, mask))
        if ready is None:
            pc, blocks = self.inst.pc, self.blocks
            ready = self._groups[(warp, mask)] = all(
                u.exited or (u.sync_mask == mask and (u.pc == pc or (u.waiting and is_warpsync(blocks, u.pc))))
                for u in _lanes(self.cta, warp, mask))
        return ready


def sync_step(m, cta, inst, parts) -> None:
    """Run a waiting instruction for the threads at its pc: each passes or keeps waiting."""
    requests = m.wait_requests(cta, inst, parts)
    rule = inst.spec.waits
    if rule == "bar":
        m.settle(inst, *_bar(m.live_count(cta), cta, inst, requests))
    elif rule == "bsync":
        m.settle(inst, *_bsync(_Facts(m, cta, inst), requests))
    else:
        m.settle(inst, *_warpsync(_Facts(m, cta, inst), requests))


def _warpsync(facts, requests) -> tuple[list, list]:
    """WARPSYNC for the threads at it: (those that pass, those that keep waiting)."""
    for t, en, req, _ in requests:
        t.sync_mask = req[1] if en else None
    decide = _exclusive(facts, requests) if "EXCLUSIVE" in facts.inst.mods else _warpsync_passes
    verdicts = [(not en) or decide(facts, t, req) for t, en, req, _ in requests]
    return ([t for (t, *_), ok in zip(requests, verdicts) if ok],
            [t for (t, *_), ok in zip(requests, verdicts) if not ok])


def _bsync(facts, requests) -> tuple[list, list]:
    """BSYNC for the threads at it: (those that pass, those that keep waiting). A thread
    passes when every lane of its mask has exited, left the region, yielded, stands here, or
    waits at a WARPSYNC whose mask names it. It does not wait for the last: each would wait
    for the other forever (nvcc leaves a loop's region by ``break`` straight to the
    ``__syncthreads`` after it, whose ``WARPSYNC 0xffffffff`` names the lanes still in the
    loop). A thread that passes has left the region: nobody waits for it there any more."""
    cta = facts.cta
    blockers: dict[tuple[int, int], tuple[int, dict[int, int], int]] = {}
    left: dict[tuple[int, int], int] = {}          # (warp, Bx) -> lanes past their BSYNC
    leaving: dict[tuple[int, int], int] = {}       # ... while lanes of their region are elsewhere
    moved, stuck = [], []
    owns = facts.m.barrier_masks(facts.cta, [t for t, *_ in requests], requests[0][2][1]) if requests else []
    for (t, en, req, _), own in zip(requests, owns):
        if not en:
            moved.append(t)
            continue
        key = (t.tid >> 5, req[1])
        known = blockers.get(key)
        if known is None:
            present, missing, syncing = facts.warp(key[0])
            gone = cta.brk.get(key, 0) | cta.yielding.get(key[0], 0)
            known = blockers[key] = (0xFFFFFFFF & ~(gone | present | missing), syncing, present)
        lane = t.tid & 31
        rest = own & known[0]
        if rest and known[1]:                   # lanes waiting at a WARPSYNC that names this one
            rest = _not_waiting_for(rest, known[1], lane)
        if rest:
            stuck.append(t)
            continue
        moved.append(t)
        left[key] = left.get(key, 0) | 1 << lane
        if own & ~known[2]:
            leaving[key] = leaving.get(key, 0) | 1 << lane
    for (warp, barrier), lanes in left.items():
        cta.brk[(warp, barrier)] = cta.brk.get((warp, barrier), 0) | lanes
        cta.yielding[warp] = cta.yielding.get(warp, 0) & ~lanes
    for (warp, barrier), lanes in leaving.items():      # after the verdicts: the leavers stand
        facts.m.leave_region(cta, warp, barrier, lanes)     # here, so no verdict depends on it
    return moved, stuck


def _not_waiting_for(rest: int, syncing: dict[int, int], lane: int) -> int:
    """The lanes of ``rest`` that do not wait at a WARPSYNC whose mask names ``lane``."""
    keep = 0
    while rest:
        low = rest & -rest
        mask = syncing.get(low.bit_length() - 1)
        if mask is None or not mask >> lane & 1:
            keep |= low
        rest ^= low
    return keep


def leave_region(cta, warp: int, barrier: int, lanes: int) -> None:
    """The threads of ``warp`` at ``lanes`` have left barrier's region (BREAK, or past its
    BSYNC while lanes of its mask were elsewhere): they are taken out of every warp-mate's
    mask of that barrier, so that their BSYNC no longer waits for them, even after they enter
    a new region of the same barrier."""
    for u in _lanes(cta, warp, 0xFFFFFFFF):
        u.b[barrier] &= ~lanes


def warp_facts(blocks, cta, pc: int) -> dict[int, tuple[int, int, dict[int, int]]]:
    """:meth:`_Facts.warp` for every warp of the block, thread by thread: the lanes that have
    exited or stand at ``pc``, those that do not exist, and the lanes waiting at a WARPSYNC
    with its mask."""
    facts = {}
    for warp in range((len(cta.threads) + 31) // 32):
        present, exists, syncing = 0, 0, {}
        for u in cta.threads[warp * 32:warp * 32 + 32]:
            bit = 1 << (u.tid & 31)
            exists |= bit
            if u.exited or u.pc == pc:
                present |= bit
            elif u.waiting and u.sync_mask is not None and is_warpsync(blocks, u.pc):
                syncing[u.tid & 31] = u.sync_mask
        facts[warp] = (present, 0xFFFFFFFF & ~exists, syncing)
    return facts


def is_warpsync(blocks, pc) -> bool:
    block = blocks.get(pc)
    return block is not None and block.insts[0].spec.waits == "warpsync"


def _exclusive(facts, requests):
    """WARPSYNC.EXCLUSIVE: one group at a time. ptxas puts it before a collective without a
    mask operand (``REDUX``, in the slow path of ``__reduce_*_sync`` with a register mask),
    which must see only the lanes of one mask; so where several complete groups stand at it,
    only the group of the lowest such lane passes in this turn, the others in later turns."""
    cta = facts.cta
    chosen: dict[int, int] = {}
    for t, en, req, _ in requests:                      # in lane order
        if en and t.warp not in chosen and (cta.released.get(t.warp, 0) >> t.lane & 1
                                            or facts.group_ready(t.warp, req[1])):
            chosen[t.warp] = req[1]

    def decide(facts, t, request) -> bool:
        return chosen.get(t.warp) == request[1] and _warpsync_passes(facts, t, request)
    return decide


def _warpsync_passes(facts, t, request) -> bool:
    cta, warp = facts.cta, t.warp
    released = cta.released.get(warp, 0)
    if released >> t.lane & 1:
        cta.released[warp] = released & ~(1 << t.lane)
        return True
    mask = request[1]
    if not facts.group_ready(warp, mask):
        return False
    if (warp, mask) not in facts.released:         # the group's lanes waiting elsewhere pass too
        facts.released.add((warp, mask))
        pc = facts.inst.pc
        for u in _lanes(cta, warp, mask):
            if not u.exited and u.pc != pc:
                cta.released[warp] = cta.released.get(warp, 0) | 1 << u.lane
    return True


def _bar(live: int, cta, inst, requests) -> tuple[list, list]:
    """BAR for the threads at it: their arrivals, the barriers that complete, and (the
    threads that pass, those that keep waiting)."""
    required: dict[int, int | None] = {}      # barrier -> the first thread count given at it
    for t, en, req, waiting in requests:
        if not en:
            continue
        bid = req[2] & 15
        if not waiting:                         # an arrival
            cta.bar_count[bid] += 1
            cta.bar_popc[bid] += 1 if req[4] else 0
            t.bar_gen = cta.bar_gen[bid]
        if required.get(bid) is None:
            required[bid] = req[3]
    for bid, count in required.items():         # completion: every thread (not exited), or the count
        if cta.bar_count[bid] >= (live if count is None else count):
            cta.bar_result[bid] = (cta.bar_popc[bid], cta.bar_count[bid])
            cta.bar_gen[bid] += 1
            cta.bar_count[bid] = cta.bar_popc[bid] = 0
    moved, stuck = [], []
    for t, en, req, _ in requests:              # who passes
        if not en:
            moved.append(t)
            continue
        kind, bid = req[1], req[2] & 15
        if kind == "arrive" or cta.bar_gen[bid] != t.bar_gen:
            popc, count = cta.bar_result[bid]
            t.bar_result = (popc if kind == "popc" else int(popc == count) if kind == "and"
                            else int(popc != 0) if kind == "or" else 0)
            moved.append(t)
        else:
            stuck.append(t)
    return moved, stuck

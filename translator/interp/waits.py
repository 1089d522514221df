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
    return t.pc | (WAIT_BIT if t.waiting else 0) | (YIELD_BIT if t.yielded else 0)


def pick(threads) -> int | None:
    """The lowest key among the threads still running, or None when all have exited.

    When the winner has yielded, every thread still running has yielded or waits (and, if it
    waits, has tried in this round): the round is over, and every thread gets its priority back.
    """
    keys = [key(t) for t in threads if not t.exited]
    if not keys:
        return None
    chosen = min(keys)
    if chosen & YIELD_BIT:
        for t in threads:
            t.yielded = False
    return chosen


def after_block(t, block) -> None:
    """A thread that branched back (to its block or before) yields its priority."""
    if not t.exited and t.pc <= block.pc:
        t.yielded = True


def _advance(t, inst) -> None:
    t.pc, t.waiting = inst.next_pc, False


def _lanes(cta, warp: int, mask: int):
    for lane in range(32):
        tid = warp * 32 + lane
        if mask >> lane & 1 and tid < len(cta.threads):
            yield cta.threads[tid]


def sync_step(m, cta, inst, parts) -> None:
    """Run a waiting instruction for the threads at its pc: each passes or keeps waiting."""
    requests = []
    for t in parts:
        ctx = m.ctx(cta, t, inst, None)
        inst.spec.sem(ctx, inst)
        requests.append((t, ctx.en, ctx.request))
    rule = inst.spec.waits
    if rule == "bar":
        _bar(cta, inst, requests)
        return
    decide = _bsync_passes if rule == "bsync" else _warpsync_passes
    if rule == "warpsync":
        for t, en, req in requests:
            t.sync_mask = req[1] if en else None
    if rule == "warpsync" and "EXCLUSIVE" in inst.mods:
        decide = _exclusive(m.program.blocks, cta, inst, requests)
    verdicts = [(t, en, req, (not en) or decide(m.program.blocks, cta, inst, t, req)) for t, en, req in requests]
    present = {t.warp: _present(cta, t.warp, inst.pc) for t in parts}
    for t, en, req, passed in verdicts:
        if passed:
            if rule == "bsync" and en:       # it has left the region: nobody waits for it there
                key = (t.warp, req[1])
                cta.brk[key] = cta.brk.get(key, 0) | 1 << t.lane
                if t.b[req[1]] & ~present[t.warp]:     # lanes of its region are elsewhere
                    leave_region(cta, t, req[1])
                cta.yielding[t.warp] = cta.yielding.get(t.warp, 0) & ~(1 << t.lane)
            _advance(t, inst)
        else:
            t.waiting = t.yielded = True


def _present(cta, warp: int, pc: int) -> int:
    """The lanes of a warp at pc (this turn's participants), or exited."""
    return sum(1 << u.lane for u in _lanes(cta, warp, 0xFFFFFFFF) if u.exited or u.pc == pc)


def leave_region(cta, t, barrier) -> None:
    """Thread t has left barrier's region (BREAK, or past its BSYNC while lanes of its mask
    were elsewhere): it is taken out of every warp-mate's mask of that barrier, so that their
    BSYNC no longer waits for it, even after it enters a new region of the same barrier."""
    for u in _lanes(cta, t.warp, 0xFFFFFFFF):
        u.b[barrier] &= ~(1 << t.lane)


def _bsync_passes(blocks, cta, inst, t, request) -> bool:
    gone = cta.brk.get((t.warp, request[1]), 0) | cta.yielding.get(t.warp, 0)
    return all(u.exited or u.pc == inst.pc or _waits_for(blocks, u, t)
               for u in _lanes(cta, t.warp, t.b[request[1]] & ~gone))


def _waits_for(blocks, u, t) -> bool:
    """Lane u waits at a WARPSYNC whose mask names t: t's BSYNC does not wait for it (each
    would wait for the other forever; nvcc leaves a loop's region by ``break`` straight to
    the ``__syncthreads`` after it, whose ``WARPSYNC 0xffffffff`` names the lanes still in
    the loop)."""
    return bool(u.waiting and u.sync_mask is not None and u.sync_mask >> t.lane & 1 and _is_warpsync(blocks, u.pc))


def _is_warpsync(blocks, pc) -> bool:
    block = blocks.get(pc)
    return block is not None and block.insts[0].spec.waits == "warpsync"


def _group_ready(blocks, cta, inst, t, mask) -> bool:
    """Every lane of ``mask`` has exited or stands at a WARPSYNC with the same mask (here, or
    waiting at another)."""
    return all(u.exited or (u.sync_mask == mask and (u.pc == inst.pc or (u.waiting and _is_warpsync(blocks, u.pc))))
               for u in _lanes(cta, t.warp, mask))


def _exclusive(blocks, cta, inst, requests):
    """WARPSYNC.EXCLUSIVE: one group at a time. ptxas puts it before a collective without a
    mask operand (``REDUX``, in the slow path of ``__reduce_*_sync`` with a register mask),
    which must see only the lanes of one mask; so where several complete groups stand at it,
    only the group of the lowest such lane passes in this turn, the others in later turns."""
    chosen: dict[int, int] = {}
    for t, en, req in requests:                      # in lane order
        if en and t.warp not in chosen and (cta.released.get(t.warp, 0) >> t.lane & 1
                                            or _group_ready(blocks, cta, inst, t, req[1])):
            chosen[t.warp] = req[1]

    def decide(blocks, cta, inst, t, request) -> bool:
        return chosen.get(t.warp) == request[1] and _warpsync_passes(blocks, cta, inst, t, request)
    return decide


def _warpsync_passes(blocks, cta, inst, t, request) -> bool:
    released = cta.released.get(t.warp, 0)
    if released >> t.lane & 1:
        cta.released[t.warp] = released & ~(1 << t.lane)
        return True
    mask = request[1]
    if not _group_ready(blocks, cta, inst, t, mask):
        return False
    lanes = list(_lanes(cta, t.warp, mask))
    for u in lanes:
        if not u.exited and u.pc != inst.pc:
            cta.released[t.warp] = cta.released.get(t.warp, 0) | 1 << u.lane
    return True


def _bar(cta, inst, requests) -> None:
    live = sum(1 for u in cta.threads if not u.exited)
    for t, en, req in requests:                       # arrivals
        if en and not t.waiting:
            _, kind, bid, count, pred = req
            cta.bar_count[bid & 15] += 1
            cta.bar_popc[bid & 15] += 1 if pred else 0
            t.bar_gen = cta.bar_gen[bid & 15]
    for bid in {req[2] & 15 for t, en, req in requests if en}:     # completion
        counts = [req[3] for t, en, req in requests if en and req[2] & 15 == bid and req[3] is not None]
        required = counts[0] if counts else live
        if cta.bar_count[bid] >= required:
            cta.bar_result[bid] = (cta.bar_popc[bid], cta.bar_count[bid])
            cta.bar_gen[bid] += 1
            cta.bar_count[bid] = cta.bar_popc[bid] = 0
    for t, en, req in requests:                       # who passes
        if not en:
            _advance(t, inst)
            continue
        _, kind, bid, _, _ = req
        if kind == "arrive" or cta.bar_gen[bid & 15] != t.bar_gen:
            popc, count = cta.bar_result[bid & 15]
            t.bar_result = {"popc": popc, "and": int(popc == count), "or": int(popc != 0)}.get(kind, 0)
            _advance(t, inst)
        else:
            t.waiting = t.yielded = True

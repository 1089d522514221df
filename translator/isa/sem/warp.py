"""Semantics of warp collectives, control flow, convergence and block barriers.

What "the lanes that execute together" means is the back end's business (the turn
scheduler); these functions only say what each instruction computes from them.
"""
from __future__ import annotations

from dataclasses import replace

from ..ctx import Ctx
from .alu import PRED_KINDS, unsupported

REDUX_NAMES = {"SUM": "sum", "MIN": "min", "MAX": "max", "AND": "and", "OR": "or", "XOR": "xor"}
SHFL_NAMES = {"IDX": "idx", "UP": "up", "DOWN": "down", "BFLY": "bfly"}


def vote(x: Ctx, i):
    ops = list(i.ops)
    rd = ops.pop(0) if ops[0].kind not in PRED_KINDS else None
    pd, ps = ops[:2]
    ballot = x.ballot(x.readp(ps))
    active = x.active()
    if "ALL" in i.mods:
        result = x.cmp("eq", ballot, active, False)
    elif "ANY" in i.mods:
        result = x.cmp("ne", ballot, x.k32(0), False)
    elif "EQ" in i.mods:
        result = x.bor(x.cmp("eq", ballot, active, False), x.cmp("eq", ballot, x.k32(0), False))
    else:
        raise unsupported(i, "no .ALL/.ANY/.EQ")
    if rd is not None:
        x.write(rd, ballot)
    x.writep(pd, result)


def shfl(x: Ctx, i):
    """SHFL.mode: the source lane's Ra where it is in range (Pd true), else the lane's own.
    A source lane in range that is not at this SHFL (inactive or exited; guarded off, the same) gives 0:
    CUDA leaves it undefined, the H200 gives 0 (cases/captured/reduction/reduce7_float_2:
    the reduction sample's last warp shuffles down from lanes outside its mask)."""
    mode = next((SHFL_NAMES[m] for m in i.mods if m in SHFL_NAMES), None)
    if mode is None:
        raise unsupported(i, "no .IDX/.UP/.DOWN/.BFLY")
    pd, rd, ra, b, c = i.ops[:5]
    value, ok = x.shfl(mode, x.read(ra), x.read(b), x.read(c))
    x.write(rd, value)
    x.writep(pd, ok)


def match(x: Ctx, i):
    """MATCH.ANY/ALL; .U64 compares register pairs: lanes equal in both words."""
    wide = "U64" in i.mods
    if "ANY" in i.mods:
        rd, ra = i.ops[:2]
        if wide:
            pair = x.read64(ra)
            x.write(rd, x.and_(x.match_any(x.lo(pair)), x.match_any(x.hi(pair))))
        else:
            x.write(rd, x.match_any(x.read(ra)))
    elif "ALL" in i.mods:
        pd, rd, ra = i.ops[:3]
        if wide:
            pair = x.read64(ra)
            (mlo, oklo), (_, okhi) = x.match_all(x.lo(pair)), x.match_all(x.hi(pair))
            ok = x.band(oklo, okhi)
            mask = x.sel(ok, mlo, x.k32(0))
        else:
            mask, ok = x.match_all(x.read(ra))
        x.write(rd, mask)
        x.writep(pd, ok)
    else:
        raise unsupported(i, "no .ANY/.ALL")


def redux(x: Ctx, i):
    # nvdisasm leaves the default operation, AND, unwritten (`REDUX UR11, R4` is __reduce_and_sync)
    op = next((REDUX_NAMES[m] for m in i.mods if m in REDUX_NAMES), "and")
    rd, ra = i.ops[:2]
    x.write(rd, x.redux(op, x.read(ra), "S32" in i.mods))


# ---------------------------------------------------------------- control
def bra(x: Ctx, i):
    if i.mods & {"DIV", "CONV"}:
        _bra_convergence(x, i)
        return
    preds = [o for o in i.ops if o.kind in PRED_KINDS]
    x.jump(x.k32(i.target), x.readp(preds[0]) if preds else None)


def _bra_convergence(x: Ctx, i):
    """BRA.DIV / BRA.CONV URm: one decision for every lane of the turn. The lanes of URm are
    *converged* when each of them is here with its guard true; BRA.CONV is taken then,
    BRA.DIV otherwise. The guard is part of the test, not a per-lane enable: in
    ``R2UR P1, URZ, R0 ; @!P1 BRA.DIV UR4, slow`` (P1: the mask differs between lanes) the
    lanes holding different masks take the slow path together even when all are here
    (recorded on an H200: converged lanes calling __ballot_sync with two disjoint masks)."""
    mask = x.read_enabled(i.ops[0])
    missing = x.and_(mask, x.not_(x.active()))      # active(): lanes here with the guard true
    converged = x.cmp("eq", missing, x.k32(0), False)
    x.jump_unguarded(x.k32(i.target), converged if "CONV" in i.mods else x.bnot(converged))


def brx(x: Ctx, i):
    """``BRX Ra offset``: an indirect branch (nvcc's jump table for a dense ``switch``, the
    table in constant bank 2). The chip goes to ``next pc + offset + Ra`` with Ra a register
    pair (ptxas sign-extends the table word into Ra+1 before it): the table holds the targets'
    offsets from the function's start and the offset is minus the next pc, so on a listing
    whose pcs count from the function's start the target is the table word itself. Only the
    pcs the listing names (BRANCH_TARGETS, in ``i.targets``) may be reached; a thread whose
    address is another goes nowhere: FAULT."""
    ops = list(i.ops)
    offset = ops[1].value if len(ops) > 1 and ops[1].kind == "imm" else 0
    address = x.add64(x.read64(ops[0]), x.k64(i.next_pc + offset))
    x.jump_indirect(address, i.targets)


def r2ur_pred(x: Ctx, i):
    """``R2UR Pd, URd, Ra``: URd = Ra, and Pd = Ra is not the same on every lane executing
    it (ptxas's test before the fast path of a ``*_sync`` collective with a mask in a register)."""
    pd, ud, ra = i.ops[:3]
    value = x.read(ra)
    _, same = x.match_all(value)
    x.write(ud, value)
    x.writep(pd, x.bnot(same))


def call(x: Ctx, i):
    x.jump(x.k32(i.target))


def lepc(x: Ctx, i):
    """LEPC Rd: Rd:Rd+1 = this instruction's address (pcs are offsets in the kernel, as BRA
    and RET see them). ptxas adds the distance to the instruction after a CALL.ABS to it, a
    return address that only the called function would use."""
    x.write64(i.ops[0], x.k64(i.pc))


VPRINTF_FORMAT, VPRINTF_ARGS, VPRINTF_RESULT = 4, 6, 4    # registers of vprintf's ABI


def call_external(x: Ctx, i):
    """CALL.ABS.NOINC Ra: a call to the function whose address Ra:Ra+1 holds (loaded from
    bank 4, where the driver relocates it). vprintf (``abi.FUNCTIONS``) is modelled as a
    call that returns to the next instruction: its format string in R4:R5, its argument
    buffer in R6:R7, its result in R4 (see translator.values.vprintf); every register it might
    clobber keeps its value, which code compiled for the real ABI cannot tell apart. Any
    other address ends the thread with BAD_PC."""
    target = i.ops[0]
    fmt, args = (x.read64(_reg(target, n)) for n in (VPRINTF_FORMAT, VPRINTF_ARGS))
    result = x.call_external(x.read64(target), fmt, args)
    x.write(_reg(target, VPRINTF_RESULT), result)


def _reg(like, n: int):
    """General register Rn, as an operand of the kind of ``like``."""
    return replace(like, text=f"R{n}", name=f"R{n}", value=n, neg=False, inv=False, abs=False, suffix=())


def ret(x: Ctx, i):
    x.jump(x.add(x.read(i.ops[0]), x.k32(i.target)))


def exit_(x: Ctx, i):
    """``EXIT`` ends the thread; ``EXIT Pp`` only where Pp is true (ptxas folds a second
    condition in: ``@!P0 EXIT P1`` ends the threads where P0 is false and P1 true)."""
    preds = [o for o in i.ops if o.kind in PRED_KINDS]
    x.exit(x.readp(preds[0]) if preds else None)


def bpt(x: Ctx, i):
    """``BPT.TRAP n``: the thread traps (__trap(), assert, grid.sync() outside a cooperative
    launch); the chip ends the launch with an error, here the cell is a FAULT at this pc."""
    if "TRAP" not in i.mods:
        raise unsupported(i, "breakpoints other than BPT.TRAP")
    x.trap()


def yield_(x: Ctx, i):
    """YIELD and NANOSLEEP: a hint to let the other threads move (see translator.interp.waits)."""
    x.yield_()


def bssy(x: Ctx, i):
    x.bssy(_barrier(i))


def _barrier(i) -> int:
    return next(o.value for o in i.ops if o.kind == "barrier")


def brk(x: Ctx, i):
    """``BREAK Bx`` leaves Bx's region; ``BREAK Pp, Bx`` only where Pp is true as well (ptxas
    pairs it with ``BRA Pp, target``: the lanes that branch out of the region are the ones
    that leave it)."""
    preds = [o for o in i.ops if o.kind in PRED_KINDS]
    x.brk(_barrier(i), x.readp(preds[0]) if preds else None)


def bsync(x: Ctx, i):
    x.bsync(_barrier(i))


def warpsync(x: Ctx, i):
    x.warpsync(x.k32(0xFFFFFFFF) if "ALL" in i.mods or not i.ops else x.read(i.ops[0]))


def bar(x: Ctx, i):
    kind = "sync"
    if "ARV" in i.mods:
        kind = "arrive"
    for red in ("POPC", "AND", "OR"):
        if "RED" in i.mods and red in i.mods:
            kind = red.lower()
    ops = [o for o in i.ops if o.kind not in PRED_KINDS]
    preds = [o for o in i.ops if o.kind in PRED_KINDS]
    if "RED" in i.mods and kind == "sync":
        raise unsupported(i, "no reduction for BAR.RED")
    barrier = x.read(ops[0]) if ops else x.k32(0)
    count = x.read(ops[1]) if len(ops) > 1 else None
    if ops and ops[0].kind == "reg" and len(ops) > 1 and ops[1].kind == "reg" and ops[0].value == ops[1].value:
        packed = x.read(ops[0])     # BAR.SYNC R4, R4: id in bits 3:0, count in bits 27:16
        barrier, count = x.and_(packed, x.k32(0xF)), x.and_(x.shr(packed, x.k32(16)), x.k32(0xFFF))
    x.bar(kind, barrier, count, x.readp(preds[0]) if preds else None)


def bmov(x: Ctx, i):
    """BMOV.32[.CLEAR] Rd, Bx (read a convergence barrier's mask; .CLEAR empties it) and
    BMOV.32 Bx, Ra (set it): how ptxas saves and restores Bx around a call."""
    d, s = i.ops[:2]
    if d.kind == "barrier" and s.kind != "barrier":
        x.set_barrier_mask(d.value, x.read(s))
    elif s.kind == "barrier" and d.kind != "barrier":
        x.write(d, x.barrier_mask(s.value))
        if "CLEAR" in i.mods:
            x.set_barrier_mask(s.value, x.k32(0))
    else:
        raise unsupported(i, "expected a barrier register on one side")


def b2r(x: Ctx, i):
    if "RESULT" not in i.mods:
        raise unsupported(i, "B2R other than .RESULT")
    result = x.bar_result()
    ops = list(i.ops)
    x.write(ops[0], result)
    if len(ops) > 1 and ops[1].kind in PRED_KINDS:
        x.writep(ops[1], x.cmp("ne", result, x.k32(0), False))

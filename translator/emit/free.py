"""Free mode's main loop: no collective, no barrier, nothing one thread waits for in another,
so any order of the threads' steps is right (translator/README.md, "Free mode").

Each thread loops over a ``switch`` on its own pc. Where a warp is a subgroup, its lanes
also meet again where the listing rejoins them: a lane that reaches a block with a waiting
instruction (BSYNC, WARPSYNC: nothing to wait for here) stops there, and once every lane of
the subgroup has stopped or exited, the lanes at the lowest such pc run it together and go
on. So lanes that leave a loop early wait at its BSYNC instead of running the epilogue alone,
and between those meeting points a lane steps with no subgroup operation at all.

Where the driver runs every case of a switch its lanes take, masked (lavapipe: no
``tight_loops``), free mode's quiet blocks get a switch of their own: a thread runs them in an
inner loop and leaves it only for one of the others (``_split_step``), so the steps in quiet
blocks, nearly all of them, pay for the quiet cases alone. The subgroup-native strategy, which
runs on this loop too, keeps the one switch a straightforward port has.
"""
from __future__ import annotations

from .. import abi
from ..ir.turnkey import NONE_KEY
from ..spirv.enums import GroupOperation, Scope


def emit_free_loop(e) -> None:
    """The whole free-mode shader body of emitter ``e``: the loop, the LIVELOCK check, counters."""
    f, u32, bool_ = e.f, e.m.u32(), e.m.bool()

    def check():
        return f.op("LogicalAnd", bool_, f.op("LogicalNot", bool_, f.load(bool_, e.exited)),
                    f.op("ULessThan", bool_, f.load(u32, e.steps), e.budget))

    joins = {pc: b for pc, b in e.reachable.items() if any(i.waits for i in b.insts)}
    loud = {pc: b for pc, b in e.reachable.items() if not e.program.quiet(b)}
    if getattr(e.warp, "converge", False) and joins:
        e.emit_loop(check, lambda: _rejoining_step(e, joins))
    elif e.mode == "free" and not e.tight_loops and loud and len(loud) < len(e.reachable):
        e.emit_loop(check, lambda: _split_step(e, loud))
    else:
        e.emit_loop(check, lambda: _step(e))
    stuck = f.op("LogicalNot", bool_, f.load(bool_, e.exited))
    e.record_status(e.k(abi.LIVELOCK), stuck, f.load(u32, e.pc), f.load(u32, e.steps))
    e.add_counters(turns=None)


def _step(e) -> None:
    """One block of the thread's own pc."""
    f, u32 = e.f, e.m.u32()
    e.emit_switch(f.load(u32, e.pc), lambda pc: e.m.const_bool(True), alone=True)
    f.store(e.steps, f.op("IAdd", u32, f.load(u32, e.steps), e.k(1)))


def _run_within(e, blocks) -> None:
    """The thread runs the ``blocks`` it stands in, one step each, until it stands at a pc
    outside them (one that starts no block too: the caller's switch says BAD_PC), exits, or
    spends the budget."""
    f, m, u32, bool_ = e.f, e.m, e.m.u32(), e.m.bool()
    stop = f.local(bool_, None, m.const_bool(False))
    f.store(stop, m.const_bool(False))

    def running():
        go = f.op("LogicalNot", bool_, f.op("LogicalOr", bool_, f.load(bool_, e.exited), f.load(bool_, stop)))
        return f.op("LogicalAnd", bool_, go, f.op("ULessThan", bool_, f.load(u32, e.steps), e.budget))

    def step():
        e.emit_switch(f.load(u32, e.pc), lambda _pc: m.const_bool(True), blocks=blocks,
                      default=lambda: f.store(stop, m.const_bool(True)), free=True, alone=True)
        step = f.op("Select", u32, f.load(bool_, stop), e.k(0), e.k(1))
        f.store(e.steps, f.op("IAdd", u32, f.load(u32, e.steps), step))

    e.emit_loop(running, step)


def _split_step(e, loud) -> None:
    """The thread runs its quiet blocks in a loop of their own, then one other block."""
    f, m, u32, bool_ = e.f, e.m, e.m.u32(), e.m.bool()
    quiet = {pc: b for pc, b in e.reachable.items() if pc not in loud}
    _run_within(e, quiet)
    live = f.op("LogicalAnd", bool_, f.op("LogicalNot", bool_, f.load(bool_, e.exited)),
                f.op("ULessThan", bool_, f.load(u32, e.steps), e.budget))
    with f.if_(live):
        e.emit_switch(f.load(u32, e.pc), lambda _pc: m.const_bool(True), blocks=loud, skip=list(quiet), alone=True)
        f.store(e.steps, f.op("IAdd", u32, f.load(u32, e.steps), e.k(1)))


def _rejoining_step(e, joins) -> None:
    """Every lane runs on alone up to a meeting block (or its exit, or the budget); then the
    lanes at the lowest meeting pc of the subgroup run that block together."""
    f, m, u32, bool_ = e.f, e.m, e.m.u32(), e.m.bool()
    others = {pc: b for pc, b in e.reachable.items() if pc not in joins}
    if others:      # a meeting pc, or one that starts no block, stops the lane (see below)
        _run_within(e, others)
    for cap in ("GroupNonUniform", "GroupNonUniformArithmetic"):
        m.capability(cap)
    pc, exited = f.load(u32, e.pc), f.load(bool_, e.exited)
    low = f.op("GroupNonUniformUMin", u32, e.k(Scope.Subgroup), GroupOperation.Reduce,
               f.op("Select", u32, exited, e.k(NONE_KEY), pc))
    here = f.op("LogicalAnd", bool_, f.op("LogicalNot", bool_, exited), f.op("IEqual", bool_, pc, low))
    # a lane the budget stopped inside a block of its own waits here (LIVELOCK after the loop);
    # a pc that starts no block is BAD_PC (the switch's default)
    e.emit_switch(low, lambda _pc: here, blocks=joins, skip=list(others))
    f.store(e.steps, f.op("IAdd", u32, f.load(u32, e.steps), f.op("Select", u32, here, e.k(1), e.k(0))))

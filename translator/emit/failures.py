"""Threads that fail (FAULT: a memory access outside every buffer, a bad jump target;
BAD_PC: a call to no function) stop where it happens, and their status is recorded once per
step.

A failure is noted in the thread's own variables where it happens (a few selects) and the
thread counts as exited at once; recording the status in the control buffer and taking the
thread out of its warp's bookkeeping (an atomic each) wait for :meth:`Failures.settle`,
which the emitter runs after each step's switch over blocks. Every memory access is
bounds-checked, and drivers inline every call: a record at each access put hundreds of
atomics into a large shader, and lavapipe's compile time grows with the square of a
shader's memory accesses (``realkernels/bitonic_sort_shared`` is the case that showed it).
"""
from __future__ import annotations

from .outcome import Outcome


class Failures:
    """The emitter's noted failures: ``note`` where a thread fails, ``settle`` once per step."""

    def __init__(self, e):
        self.e = e
        self.vars: dict[str, int] | None = None     # the thread's first failure, made on first use
        self.noted = False                          # note was emitted since the last settle

    def note(self, out: Outcome, code: int, cond: int, pc: int, addr_lo=None, addr_hi=None) -> None:
        """Threads where ``cond`` holds stop here with status ``code`` at ``pc`` (and an address)."""
        e = self.e
        if e.const_value.get(cond) is False:
            return
        f, m, u32, bool_ = e.f, e.m, e.m.u32(), e.m.bool()
        if self.vars is None:
            self.vars = {"failed": f.local(bool_, "failed", m.const_bool(False))}
            for name in ("fail_code", "fail_pc", "fail_lo", "fail_hi"):
                self.vars[name] = f.local(u32, name, e.k(0))
        v = self.vars
        failed = f.load(bool_, v["failed"])
        first = f.op("LogicalAnd", bool_, cond, f.op("LogicalNot", bool_, failed))
        for name, value in (("fail_code", e.k(code)), ("fail_pc", pc), ("fail_lo", addr_lo or e.k(0)),
                            ("fail_hi", addr_hi or e.k(0))):
            f.store(v[name], f.op("Select", u32, first, value, f.load(u32, v[name])))
        f.store(v["failed"], f.op("LogicalOr", bool_, failed, cond))
        f.store(e.exited, f.op("LogicalOr", bool_, f.load(bool_, e.exited), cond))
        out.exit(cond)
        self.noted = True

    def settle(self) -> None:
        """Record the failures noted since the last settle (the first writer's status wins)
        and take the failed threads out of their warps."""
        if not self.noted:
            return
        self.noted = False
        e, v = self.e, self.vars
        f, u32, bool_ = e.f, e.m.u32(), e.m.bool()
        failed = f.load(bool_, v["failed"])
        e.record_status(f.load(u32, v["fail_code"]), failed, f.load(u32, v["fail_pc"]),
                        f.load(u32, v["fail_lo"]), f.load(u32, v["fail_hi"]))
        e.warp.on_exit(failed)
        f.store(v["failed"], e.m.const_bool(False))
        for name in ("fail_code", "fail_pc", "fail_lo", "fail_hi"):     # dead across steps: no registers held
            f.store(v[name], e.k(0))

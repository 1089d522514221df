"""The third implementation of :class:`translator.isa.ctx.Ctx`: one instruction for all the lanes
of a turn at once, values as numpy arrays over the lanes (see :mod:`.words`).

Lanes run in thread order, as the scalar interpreter runs its threads one after another; where
a lane fails (a fault, a trap, a bad indirect branch), the lanes before it have done their
part, the failing lane and those after it stop (``en`` turns off), and the scalar context
builds the error, which the instruction raises when it ends (:meth:`LaneCtx.fail`).
"""
from __future__ import annotations

import numpy as np

from ... import abi
from ...errors import UnsupportedInstruction
from ...isa import regs, sregs
from ..thread import ThreadCtx
from . import memory, warp, words
from .words import M32, M64, U64


class Redo(Exception):
    """A free run met what only the scalar order gives exactly (a failure, printf, lanes that
    share memory words): it is undone and run thread by thread."""


class LaneCtx(words.FloatWords):
    """Ctx for the lanes of one instruction (uint64 / bool arrays; writes masked by ``en``)."""

    def __init__(self, machine, cta, lanes, inst):
        self.m, self.cta, self.lanes, self.inst = machine, cta, lanes, inst
        self.file, self.tids, self.n = cta.file, lanes.tids, lanes.n
        self.pending = None
        self.en = ~lanes.exited
        if inst.guard is not None:
            self.en = self.en & self.readp(inst.guard)

    def fail(self, f: int, thunk) -> None:
        """Lane ``f`` fails: the scalar context of its thread raises the error, kept until the
        instruction ends; ``f`` and the lanes after it stop."""
        if self.lanes.free:
            raise Redo("a failing lane")
        c = ThreadCtx(self.m, self.cta, self.lanes.thread(f), self.inst, None, False)
        c.en = True
        try:
            thunk(c, f)
        except Exception as exc:    # noqa: BLE001 - the scalar path's own error, raised at the end
            self.pending = exc
        else:
            raise AssertionError(f"{self.inst.where}: lane {f} fails here but not in the scalar interpreter")
        self.en = self.en.copy()
        self.en[f:] = False

    # constants
    def k32(self, v): return self._constant(v & M32)
    def k64(self, v): return self._constant(v & M64)

    def _constant(self, v):
        """A word for every lane (shared by the turn's instructions: no word is changed in place)."""
        known = self.lanes.constants.get(v)
        if known is None:
            known = self.lanes.constants[v] = np.full(self.n, v, U64)
        return known
    def kb(self, v): return np.full(self.n, bool(v))

    # operands
    def _row(self, rows, k):
        if self.lanes.contiguous:
            t0 = int(self.tids[0])
            return rows[k, t0:t0 + self.n].copy()
        return rows[k].take(self.tids)

    def read_enabled(self, o):
        return self.read(o)

    def read(self, o):
        if o.kind == "reg":
            v = np.zeros(self.n, U64) if regs.is_zero(o) else self._row(self.file.r, o.value)
        elif o.kind == "ureg":
            v = np.zeros(self.n, U64) if regs.is_zero(o) else self._row(self.file.ur, o.value)
        elif o.kind == "imm":
            return self.k32(~o.value if o.inv else o.value)
        elif o.kind == "cbank":
            v = self._cbank(o, 4)
        elif o.kind == "sreg":
            v = self._sreg(o.name)
        else:
            raise UnsupportedInstruction(f"{self.inst.where}: operand {o.text} of {self.inst.opcode}",
                                         self.inst.opcode)
        if o.abs:
            v = np.where(v >> 31 & 1, (-v) & M32, v)
        if o.neg:
            v = (-v) & M32
        if o.inv:
            v = ~v & M32
        return v

    def read64(self, o):
        if o.kind in ("reg", "ureg"):
            if regs.is_zero(o):
                return np.zeros(self.n, U64)
            rows = self.file.r if o.kind == "reg" else self.file.ur
            return self._row(rows, o.value) | (self._row(rows, o.value + 1) << 32)
        if o.kind == "cbank":
            return self._cbank(o, 8)
        if o.kind == "imm":
            return self.k64(o.value)
        return self.read(o)

    def _bank(self, bank):
        if not 0 <= bank < abi.NUM_BANKS:
            raise UnsupportedInstruction(f"{self.inst.where}: constant bank {bank} in '{self.inst.text}' "
                                         f"(banks 0-{abi.NUM_BANKS - 1} exist)", self.inst.opcode)

    def _bank_bytes(self, bank, off, n):
        """n bytes of the bank at byte offsets ``off`` (int64); 0 where outside the bank."""
        ok = (off >= 0) & (off + n <= abi.bank_bytes(bank))
        start = np.where(ok, abi.bank_start(bank) + off, 0)
        cb = self.m.cbank8
        v = np.zeros(self.n, U64)
        for j in range(n):
            v |= cb[start + j].astype(U64) << (8 * j)
        return np.where(ok, v, U64(0))

    def cbank_word(self, bank, off):
        self._bank(bank)
        return self._bank_bytes(bank, (off & 0xFFFFFFFC).astype(np.int64), 4)

    def _cbank(self, o, n):
        self._bank(o.value)
        off = np.full(self.n, o.offset, np.int64)
        if o.base is not None:
            off = off + self.read(o.base).astype(np.int64)
        if o.uniform_base is not None:
            off = off + self.read(o.uniform_base).astype(np.int64)
        return self._bank_bytes(o.value, off, n)

    def _sreg(self, name):
        src, k = sregs.source(name) or (None, 0)
        if src is None:
            raise UnsupportedInstruction(f"{self.inst.where}: special register {name} in '{self.inst.text}'",
                                         self.inst.opcode)
        if src == "tid":
            v = self.file.tidxyz[k][self.tids].astype(U64)
        elif src == "ctaid":
            v = self.k32(self.cta.ctaid[k])
        elif src == "lane":
            v = (self.tids & 31).astype(U64)
        elif src == "clock":
            v = (self.lanes.clock + self.m.inst_index).astype(U64)
        elif src == "zero":
            v = np.zeros(self.n, U64)
        else:
            bit = np.left_shift(U64(1), (self.tids & 31).astype(U64))
            v = sregs.lane_mask(k, bit, lambda a: a - U64(1), lambda a, b: a | b, lambda a: ~a)
        return v & M32

    def readp(self, o):
        rows = self.file.up if o.kind == "upred" else self.file.p
        v = self._row(rows, o.value)
        return ~v if o.inv else v

    def _put(self, rows, k, v):
        en = self.en
        if en.all():
            if self.lanes.contiguous:
                t0 = int(self.tids[0])
                rows[k, t0:t0 + self.n] = v
            else:
                rows[k, self.tids] = v
        elif en.any():
            rows[k, self.tids[en]] = v[en]

    def write(self, o, v):
        if regs.writable(o):
            self._put(self.file.r if o.kind == "reg" else self.file.ur, o.value, v & M32)

    def write64(self, o, v):
        if regs.writable(o):
            rows = self.file.r if o.kind == "reg" else self.file.ur
            self._put(rows, o.value, v & M32)
            self._put(rows, o.value + 1, (v >> 32) & M32)

    def writep(self, o, v):
        if not regs.is_true(o):
            self._put(self.file.up if o.kind == "upred" else self.file.p, o.value, v)

    # memory
    def load(self, space, addr, nbytes, signed): return memory.load(self, space, addr, nbytes, signed)
    def store(self, space, addr, nbytes, values): memory.store(self, space, addr, nbytes, values)

    def atomic(self, space, op, addr, value, compare, signed):
        return memory.atomic(self, space, op, addr, value, compare, signed)

    def atomic_update(self, space, addr, nbytes, update):
        return memory.update(self, space, addr, nbytes, lambda old, on: update(self._only(on), old))

    def _only(self, on):
        """This context with only the lanes ``on`` enabled (an atomic's round)."""
        sub = object.__new__(LaneCtx)
        sub.__dict__.update(self.__dict__)
        sub.en = on
        return sub

    def call_external(self, target, fmt, args):
        if self.lanes.free:
            raise Redo("printf")
        out = np.zeros(self.n, U64)
        for i in np.flatnonzero(self.en).tolist():
            c = ThreadCtx(self.m, self.cta, self.lanes.thread(i), self.inst, None, False)
            c.en = True
            try:
                out[i] = c.call_external(int(target[i]), int(fmt[i]), int(args[i]))
            except Exception as exc:    # noqa: BLE001 - as fail(): raised when the instruction ends
                self.pending = exc
                self.en = self.en.copy()
                self.en[i:] = False
                break
        return out

    # the warp
    def active(self): return warp.active(self)
    def ballot(self, p): return warp.ballot(self, p)
    def shfl(self, mode, value, b, c): return warp.shfl(self, mode, value, b, c)
    def match_any(self, value): return warp.match_any(self, value)
    def match_all(self, value): return warp.match_all(self, value)
    def redux(self, op, value, signed): return warp.redux(self, op, value, signed)

    # control
    def jump(self, target, taken=None):
        on = self.en if taken is None else self.en & taken
        self.lanes.new_pc[on] = target[on].astype(np.int64)

    def jump_unguarded(self, target, taken):
        on = ~self.lanes.exited & taken
        self.lanes.new_pc[on] = target[on].astype(np.int64)

    def jump_indirect(self, address, targets):
        memory.fail_first(self, ~np.isin(address, np.array(targets, U64)),
                          lambda c, f: c.jump_indirect(int(address[f]), targets))
        on = self.en
        self.lanes.new_pc[on] = address[on].astype(np.int64)

    def trap(self):
        memory.fail_first(self, self.en, lambda c, f: c.trap())

    def exit(self, cond=None):
        on = self.en if cond is None else self.en & cond
        self.lanes.exited |= on
        if not self.lanes.free:
            self.file.exited[self.tids[on]] = True

    def _each_thread(self, on=None):
        if self.lanes.free:
            raise Redo("a convergence barrier in a free run")
        return [(i, self.lanes.thread(i)) for i in np.flatnonzero(self.en if on is None else on).tolist()]

    def bssy(self, barrier):
        """ThreadCtx.bssy for the enabled lanes: each its warp's active mask; a warp's lanes
        that enter the region are no longer gone from it or yielding."""
        if self.lanes.free:
            raise Redo("a convergence barrier in a free run")
        masks, on = self.active(), self.en
        self.file.b[barrier, self.tids[on]] = masks[on].astype(np.int64)
        inv = self.lanes.warps()[0]
        brk, yielding = self.cta.brk, self.cta.yielding
        for row in np.unique(inv[on]).tolist():
            i = int(np.flatnonzero(inv == row)[0])
            w, lanes = int(self.tids[i]) >> 5, int(masks[i])
            brk[(w, barrier)] = brk.get((w, barrier), 0) & ~lanes
            yielding[w] = yielding.get(w, 0) & ~lanes

    def brk(self, barrier, cond=None):
        for _, t in self._each_thread(self.en if cond is None else self.en & cond):
            ThreadCtx.brk(_One(self, t), barrier)

    def yield_(self):
        for _, t in self._each_thread():
            ThreadCtx.yield_(_One(self, t))

    # waiting instructions: what each lane asks (VectorInterpreter.wait_requests); waits.sync_step decides
    def bsync(self, barrier): self.request = ("bsync", barrier)
    def warpsync(self, mask): self.request = ("warpsync", mask)
    def bar(self, kind, barrier, count, pred): self.request = ("bar", kind, barrier, count, pred)

    def bar_result(self):
        return np.array([t.bar_result for t in map(self.lanes.thread, range(self.n))], U64)

    def barrier_mask(self, barrier):
        return self.file.b[barrier, self.tids].astype(U64)

    def set_barrier_mask(self, barrier, mask):
        for i, t in self._each_thread():
            ThreadCtx.set_barrier_mask(_One(self, t), barrier, int(mask[i]))


class _One:
    """One enabled thread, as ThreadCtx's bookkeeping methods see it."""
    def __init__(self, x, t):
        self.m, self.cta, self.t, self.en, self.gather = x.m, x.cta, t, True, False


for _name in words.OPERATIONS:
    setattr(LaneCtx, _name, staticmethod(getattr(words, _name)))
del _name

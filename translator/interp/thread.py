"""The interpreter's side of :class:`translator.isa.ctx.Ctx`: one thread's view, on Python ints.

Collectives run in two passes over the lanes (see :class:`WarpOracle`): the first gathers what
every lane offers, the second hands each lane its answer, so the semantics functions stay
written once, per thread.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field

from .. import abi
from ..errors import TRAP, BadPc, Fault, UnsupportedInstruction
from ..isa import regs, sregs
from ..values import floatops, intops, mufuops, vprintf
from ..values.intops import M32, M64, s32
from . import waits


@dataclass
class Thread:
    """The architectural state of one thread."""
    tid: int
    tidxyz: tuple[int, int, int]
    ctaid: tuple[int, int, int]
    pc: int
    r: list[int] = field(default_factory=lambda: [0] * 256)
    ur: list[int] = field(default_factory=lambda: [0] * 64)
    p: list[bool] = field(default_factory=lambda: [False] * 7 + [True])
    up: list[bool] = field(default_factory=lambda: [False] * 7 + [True])
    b: list[int] = field(default_factory=lambda: [0] * 16)
    exited: bool = False
    waiting: bool = False
    sync_mask: int | None = None        # the mask of the WARPSYNC it stands at
    yielded: bool = False
    steps: int = 0
    bar_gen: int = 0
    bar_result: int = 0
    new_pc: int | None = None
    clock: int = 0                      # instructions run before this block (sregs.reads_clock)
    local: bytearray | None = None      # local memory (LDL/STL), made on first use

    @property
    def warp(self) -> int:
        return self.tid // 32

    @property
    def lane(self) -> int:
        return self.tid % 32

    @classmethod
    def make(cls, tid, tidxyz, ctaid, entry) -> "Thread":
        return cls(tid, tidxyz, ctaid, entry)


class WarpOracle:
    """Answers the collectives of one instruction from what all lanes offered."""

    def __init__(self, threads: list[Thread], parts: list[Thread]):
        self.threads = threads
        self.parts = {t.tid for t in parts}
        self.offers: dict[int, list[tuple]] = {}
        self.answers: dict[int, list] = {}

    def offer(self, t: Thread, en: bool, kind: str, *args) -> int:
        calls = self.offers.setdefault(t.tid, [])
        calls.append((en and t.tid in self.parts and not t.exited, kind, args))
        return len(calls) - 1

    def answer(self, t: Thread, k: int):
        return self.answers[t.tid][k]

    def resolve(self) -> None:
        warps: dict[int, list[Thread]] = {}
        for t in self.threads:
            warps.setdefault(t.warp, []).append(t)
        for warp in warps.values():
            lanes = {t.lane: self.offers.get(t.tid, []) for t in warp}
            for t in warp:
                if t.tid in self.parts:
                    self.answers[t.tid] = [self._one(lanes, t.lane, k, call)
                                           for k, call in enumerate(lanes[t.lane])]

    def _one(self, lanes, me: int, k: int, call):
        _, kind, args = call
        on = {lane: calls[k] for lane, calls in lanes.items() if k < len(calls) and calls[k][0]}
        active = sum(1 << lane for lane in on)
        if kind == "active":
            return active
        if kind == "ballot":
            return sum(1 << lane for lane, c in on.items() if c[2][0])
        if kind == "match_any":
            return sum(1 << lane for lane, c in on.items() if c[2][0] == args[0])
        if kind == "match_all":
            same = all(c[2][0] == args[0] for c in on.values())
            return (active, True) if same else (0, False)
        if kind == "redux":
            return _redux(args[0], [c[2][1] for c in on.values()], args[2])
        if kind == "shfl":
            return _shfl(lanes, me, k, *args)
        raise AssertionError(kind)


def _redux(op: str, values: list[int], signed: bool) -> int:
    if not values:
        return 0
    if op == "sum":
        return sum(values) & M32
    if op in ("min", "max"):
        key = s32 if signed else (lambda v: v)
        return (min if op == "min" else max)(values, key=key) & M32
    acc = {"and": M32, "or": 0, "xor": 0}[op]
    for v in values:
        acc = acc & v if op == "and" else acc | v if op == "or" else acc ^ v
    return acc


def _shfl(lanes, me: int, k: int, mode: str, value: int, b: int, c: int):
    seg, clamp, b = (c >> 8) & 0x1F, c & 0x1F, b & 0x1F
    max_lane = (me & seg) | (clamp & ~seg & 0x1F)
    min_lane = me & seg
    j = {"up": me - b, "down": me + b, "bfly": me ^ b, "idx": min_lane | (b & ~seg & 0x1F)}[mode]
    ok = j >= max_lane if mode == "up" else j <= max_lane
    if not ok:
        return value, False
    calls = lanes.get(j)       # a source lane not at this SHFL gives 0, as on the chip
    return (calls[k][2][1] if calls and k < len(calls) and calls[k][0] else 0), True


class ThreadCtx:
    """Ctx for one thread executing one instruction (ints; writes masked by ``en``)."""

    def __init__(self, machine, cta, t: Thread, inst, oracle: WarpOracle | None, gather: bool):
        self.m, self.cta, self.t, self.inst = machine, cta, t, inst
        self.oracle, self.gather = oracle, gather
        self.en = (not t.exited) and self._guard()
        self.calls = 0
        self.request = None

    def _guard(self) -> bool:
        g = self.inst.guard
        return True if g is None else self.readp(g)

    # constants
    def k32(self, v): return v & M32
    def k64(self, v): return v & M64
    def kb(self, v): return bool(v)

    # operands
    def read_enabled(self, o) -> int:
        return self.read(o)

    def read(self, o) -> int:
        if o.kind == "reg":
            v = 0 if regs.is_zero(o) else self.t.r[o.value]
        elif o.kind == "ureg":
            v = 0 if regs.is_zero(o) else self.t.ur[o.value]
        elif o.kind == "imm":
            return (~o.value if o.inv else o.value) & M32
        elif o.kind == "cbank":
            v = self._cbank(o, 4)
        elif o.kind == "sreg":
            v = self._sreg(o.name)
        else:
            raise UnsupportedInstruction(f"{self.inst.where}: operand {o.text} of {self.inst.opcode}",
                                         self.inst.opcode)
        if o.abs:
            v = (-s32(v)) & M32 if v >> 31 else v
        if o.neg:
            v = -v & M32
        if o.inv:
            v = ~v & M32
        return v

    def read64(self, o) -> int:
        if o.kind == "reg":
            return 0 if regs.is_zero(o) else self.t.r[o.value] | self.t.r[o.value + 1] << 32
        if o.kind == "ureg":
            return 0 if regs.is_zero(o) else self.t.ur[o.value] | self.t.ur[o.value + 1] << 32
        if o.kind == "cbank":
            return self._cbank(o, 8)
        if o.kind == "imm":
            return o.value & M64
        return self.read(o)

    def cbank_word(self, bank: int, off: int) -> int:
        """The aligned word of constant bank ``bank`` that holds byte ``off``; 0 outside the bank."""
        if not 0 <= bank < abi.NUM_BANKS:
            raise UnsupportedInstruction(f"{self.inst.where}: constant bank {bank} in '{self.inst.text}' "
                                         f"(banks 0-{abi.NUM_BANKS - 1} exist)", self.inst.opcode)
        off &= ~3
        if off + 4 > abi.bank_bytes(bank):
            return 0
        start = abi.bank_start(bank) + off
        return int.from_bytes(self.m.cbank[start:start + 4], "little")

    def _cbank(self, o, n: int) -> int:
        """``n`` bytes of a constant bank; 0 outside the bank (as the emitter reads them)."""
        if not 0 <= o.value < abi.NUM_BANKS:
            raise UnsupportedInstruction(f"{self.inst.where}: constant bank {o.value} in '{self.inst.text}' "
                                         f"(banks 0-{abi.NUM_BANKS - 1} exist)", self.inst.opcode)
        off = o.offset
        if o.base is not None:
            off += self.read(o.base)
        if o.uniform_base is not None:
            off += self.read(o.uniform_base)
        if off < 0 or off + n > abi.bank_bytes(o.value):
            return 0
        start = abi.bank_start(o.value) + off
        return int.from_bytes(self.m.cbank[start:start + n], "little")

    def _sreg(self, name: str) -> int:
        """A special register's value (the sources in :mod:`translator.isa.sregs`)."""
        t = self.t
        src, k = sregs.source(name) or (None, 0)
        if src is None:
            raise UnsupportedInstruction(f"{self.inst.where}: special register {name} in '{self.inst.text}'",
                                         self.inst.opcode)
        value = {"tid": lambda: t.tidxyz[k], "ctaid": lambda: t.ctaid[k], "lane": lambda: t.lane,
                 "clock": lambda: t.clock + self.m.inst_index, "zero": lambda: 0,
                 "mask": lambda: sregs.lane_mask(k, 1 << t.lane, lambda x: x - 1, lambda a, b: a | b,
                                                 lambda x: ~x)}[src]()
        return value & M32

    def readp(self, o) -> bool:
        v = self.t.up[o.value] if o.kind == "upred" else self.t.p[o.value]
        return (not v) if o.inv else v

    def write(self, o, v) -> None:
        if self.en and not self.gather and regs.writable(o):
            (self.t.r if o.kind == "reg" else self.t.ur)[o.value] = v & M32

    def write64(self, o, v) -> None:
        if self.en and not self.gather and regs.writable(o):
            words = self.t.r if o.kind == "reg" else self.t.ur
            words[o.value], words[o.value + 1] = v & M32, (v >> 32) & M32

    def writep(self, o, v) -> None:
        if not self.en or self.gather or regs.is_true(o):
            return
        (self.t.up if o.kind == "upred" else self.t.p)[o.value] = bool(v)

    # memory
    def _thread_at(self) -> str:
        """"thread T (warp W lane L) of block B at pc P": who, and where, for an error."""
        t = self.t
        return f"thread {t.tid} (warp {t.warp} lane {t.lane}) of block {t.ctaid} at pc {self.inst.pc:#06x}"

    def _where(self, space, addr, nbytes, what):
        target = abi.generic_target(addr)[0] if space == "generic" else space
        outside = "outside its local memory" if target == "local" else "outside every buffer"
        return f"{self._thread_at()} ({self.inst.where}): {space} {what} of {nbytes} bytes at {addr:#x} {outside}"

    def _locate(self, space, addr, nbytes, what):
        """(bytes, offset) of an access; a generic address goes to the window it names."""
        if space == "generic":
            try:
                return self._locate(*abi.generic_target(addr), nbytes, what)
            except Fault:
                raise Fault(self._where(space, addr, nbytes, what)) from None
        if space == "global":
            hit = self.m.memory.locate(addr, nbytes)
        else:
            buf, off = self._shared_or_local(space, addr)
            hit = (buf, off) if 0 <= off and off + nbytes <= len(buf) and off % min(nbytes, 4) == 0 else None
        if hit is None:
            raise Fault(self._where(space, addr, nbytes, what))
        return hit

    def _shared_or_local(self, space, addr):
        """The bytes of the block's shared memory or the thread's local window, and the
        offset ``addr`` names in them (local addresses end at abi.STACK_TOP)."""
        if space == "shared":
            return self.cta.shared, addr
        size = self.m.program.local_bytes
        if self.t.local is None:
            self.t.local = bytearray(size)
        return self.t.local, addr - (abi.STACK_TOP - size)

    def load(self, space, addr, nbytes, signed):
        if not self.en:
            return [0] * max(1, nbytes // 4)
        buf, off = self._locate(space, addr, nbytes, "load")
        if nbytes < 4:
            v = int.from_bytes(buf[off:off + nbytes], "little", signed=signed)
            return [v & M32]
        return list(struct.unpack_from(f"<{nbytes // 4}I", buf, off))

    def store(self, space, addr, nbytes, values):
        if not self.en:
            return
        buf, off = self._locate(space, addr, nbytes, "store")
        if nbytes < 4:
            buf[off:off + nbytes] = (values[0] & ((1 << 8 * nbytes) - 1)).to_bytes(nbytes, "little")
        else:
            struct.pack_into(f"<{nbytes // 4}I", buf, off, *values)

    def atomic(self, space, op, addr, value, compare, signed):
        if not self.en:
            return 0
        buf, off = self._locate(space, addr, 4, "atomic")
        old = struct.unpack_from("<I", buf, off)[0]
        key = s32 if signed else (lambda v: v)
        new = {"add": lambda: old + value, "and": lambda: old & value, "or": lambda: old | value,
               "xor": lambda: old ^ value, "exch": lambda: value,
               "min": lambda: min(old, value, key=key), "max": lambda: max(old, value, key=key),
               "inc": lambda: 0 if old >= value else old + 1,
               "dec": lambda: value if old == 0 or old > value else old - 1,
               "cas": lambda: value if old == compare else old}[op]()
        struct.pack_into("<I", buf, off, new & M32)
        return old

    def atomic_update(self, space, addr, nbytes, update):
        if not self.en:
            return [0] * (nbytes // 4)
        if nbytes == 8 and addr % 8:         # 64-bit atomics need 8-byte alignment, as on the chip
            raise Fault(self._where(space, addr, nbytes, "misaligned 64-bit atomic"))
        buf, off = self._locate(space, addr, nbytes, "atomic")
        old = list(struct.unpack_from(f"<{nbytes // 4}I", buf, off))
        struct.pack_into(f"<{nbytes // 4}I", buf, off, *(w & M32 for w in update(self, old)))
        return old

    # functions outside the kernel
    def call_external(self, target, fmt, args):
        """vprintf(fmt, args): a record of the thread, the format's address and the words of
        its argument buffer (translator.values.vprintf); any other target is a bad pc."""
        if not self.en or self.gather:
            return 0
        if target != abi.FUNCTIONS["vprintf"]:
            raise BadPc(f"{self._thread_at()} ({self.inst.where}): CALL.ABS to {target:#x}, which is not vprintf (the only "
                        "function outside the kernel that warpboard models)")
        if fmt == 0:
            return M32
        count = vprintf.count_arguments(self._global_byte, fmt)
        self.m.printf.add(vprintf.PrintfRecord(self.m.launch_index(self.t), fmt, self._argument_bytes(args)))
        return count

    def _global_byte(self, addr: int) -> int:
        buf, off = self._locate("global", addr & M64, 1, "load (vprintf's format string)")
        return buf[off]

    def _argument_bytes(self, args: int) -> bytes:
        """The words of the argument buffer at generic address ``args`` that lie in the
        thread's local window, up to abi.PRINTF_ARG_WORDS (none for a null pointer)."""
        size = self.m.program.local_bytes
        space, local = abi.generic_target(args)
        off = local - (abi.STACK_TOP - size)
        if space != "local" or not 0 <= off < size or off % 4:
            return b""
        buf, _ = self._shared_or_local("local", abi.STACK_TOP - size)
        return bytes(buf[off:off + min(size - off, 4 * abi.PRINTF_ARG_WORDS)])

    # the warp
    def _collective(self, kind, *args, placeholder=0):
        if self.gather:
            self.oracle.offer(self.t, self.en, kind, *args)
            return placeholder
        k = self.calls
        self.calls += 1
        return self.oracle.answer(self.t, k)

    def active(self): return self._collective("active")
    def ballot(self, p): return self._collective("ballot", bool(p))
    def shfl(self, mode, value, b, c): return self._collective("shfl", mode, value, b, c, placeholder=(0, False))
    def match_any(self, value): return self._collective("match_any", value)
    def match_all(self, value): return self._collective("match_all", value, placeholder=(0, False))
    def redux(self, op, value, signed): return self._collective("redux", op, value, signed)

    # control
    def jump(self, target, taken=None):
        if self.en and not self.gather and (taken is None or taken):
            self.t.new_pc = target

    def jump_unguarded(self, target, taken):
        if not self.t.exited and not self.gather and taken:
            self.t.new_pc = target

    def jump_indirect(self, address, targets):
        if not self.en or self.gather:
            return
        if address not in targets:
            raise Fault(f"{self._thread_at()} ({self.inst.where}: {self.inst.text}): branch to {address:#x}, which is not one of "
                        f"its branch targets " + ", ".join(f"{p:#x}" for p in targets))
        self.t.new_pc = address

    def trap(self):
        if self.en and not self.gather:
            raise Fault(f"{self._thread_at()} ({self.inst.where}: {self.inst.text}): {TRAP}")

    def exit(self, cond=None):
        if self.en and not self.gather and (cond is None or cond):
            self.t.exited = True

    def bssy(self, barrier):
        mask = self._collective("active")
        if self.en and not self.gather:
            self.t.b[barrier] = mask
            key = (self.t.warp, barrier)
            self.cta.brk[key] = self.cta.brk.get(key, 0) & ~(1 << self.t.lane)
            self.cta.yielding[self.t.warp] = self.cta.yielding.get(self.t.warp, 0) & ~(1 << self.t.lane)

    def brk(self, barrier, cond=None):
        if self.en and not self.gather and (cond is None or cond):
            key = (self.t.warp, barrier)
            self.cta.brk[key] = self.cta.brk.get(key, 0) | 1 << self.t.lane
            if self.t.b[barrier] & ~(1 << self.t.lane):
                self.m.leave_region(self.cta, self.t.warp, barrier, 1 << self.t.lane)

    def yield_(self):
        if self.en and not self.gather:
            self.t.yielded = True
            self.cta.yielding[self.t.warp] = self.cta.yielding.get(self.t.warp, 0) | 1 << self.t.lane

    def bsync(self, barrier): self.request = ("bsync", barrier)
    def warpsync(self, mask): self.request = ("warpsync", mask)
    def bar(self, kind, barrier, count, pred): self.request = ("bar", kind, barrier, count, pred)
    def bar_result(self): return self.t.bar_result
    def barrier_mask(self, barrier): return self.t.b[barrier]

    def set_barrier_mask(self, barrier, mask):
        """Bx = mask (BMOV.32 Bx, R restores a region's mask around a call): the thread is in
        Bx's region again, so the region's BSYNC waits for it (see waits._bsync_passes)."""
        if self.en and not self.gather:
            self.t.b[barrier] = mask & M32
            key = (self.t.warp, barrier)
            self.cta.brk[key] = self.cta.brk.get(key, 0) & ~(1 << self.t.lane)


# the arithmetic is intops' and floatops' (the emitter folds constants with intops)
for _module in (intops, floatops, mufuops):
    for _name in _module.OPERATIONS:
        setattr(ThreadCtx, _name, staticmethod(getattr(_module, _name)))
del _name

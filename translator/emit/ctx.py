"""The emitter's side of :class:`translator.isa.ctx.Ctx`: each operation emits SPIR-V.

Register writes are predicated (``select(en, new, old)``), so a block's code runs straight
through for every thread of the workgroup and barriers stay in uniform control flow; only
memory accesses sit inside ``if (en)``. Operations on constants are folded with
:mod:`translator.values.intops`, the interpreter's arithmetic, so both back ends agree on what a
constant expression is.
"""
from __future__ import annotations

from .. import abi
from ..errors import UnsupportedInstruction
from ..isa import regs
from ..spirv.builder import GLSL
from ..values import intops
from .float.mufu import Mufu
from .float.soft import SoftFloat

_CMP = {("eq", False): "IEqual", ("ne", False): "INotEqual", ("lt", False): "ULessThan",
        ("le", False): "ULessThanEqual", ("gt", False): "UGreaterThan", ("ge", False): "UGreaterThanEqual",
        ("eq", True): "IEqual", ("ne", True): "INotEqual", ("lt", True): "SLessThan",
        ("le", True): "SLessThanEqual", ("gt", True): "SGreaterThan", ("ge", True): "SGreaterThanEqual"}


class SpirvCtx:
    """Ctx for one instruction of a block, for all threads at once (en = guard and turn)."""
    __slots__ = ("e", "f", "m", "inst", "en", "out", "u32", "u64", "bool", "_active", "known", "_k")

    def __init__(self, e, inst, en, out):
        m = e.m
        self.e, self.f, self.m, self.inst = e, e.f, m, inst
        self.en = en
        self.out = out          # the block's Outcome: where its threads go next
        self.u32, self.u64, self.bool = m._u32, m._u64, m._bool
        self._active = None
        self.known = e.const_value
        self._k = e._k

    # ---------------------------------------------------------------- constants and folding
    def k32(self, v):
        cid = self._k.get(v)
        return cid if cid is not None else self.e.k(v)
    def k64(self, v): return self.m.const(self.u64, v & 0xFFFFFFFFFFFFFFFF)
    def kb(self, v): return self.m.const_bool(bool(v))

    def _value(self, x):
        return self.known.get(x)

    def _op(self, opcode, t, *args, fold=None):
        if fold is not None:
            known = self.known
            for a in args:
                if a not in known:
                    break
            else:
                r = getattr(intops, fold)(*[known[a] for a in args])
                return self.kb(r) if t == self.bool else (self.k64(r) if t == self.u64 else self.k32(r))
        return self.f.op(opcode, t, *args)

    # ---------------------------------------------------------------- operands
    def read(self, o):
        e = self.e
        if o.kind in ("reg", "ureg"):
            v = self.k32(0) if regs.is_zero(o) else e.get(o.kind, o.value)
        elif o.kind == "imm":
            return self.k32(~o.value if o.inv else o.value)
        elif o.kind == "cbank":
            v = self._cbank(o, 0)
        elif o.kind == "sreg":
            v = e.special(o.name, self.inst)
        else:
            raise UnsupportedInstruction(f"{self.inst.where}: operand {o.text} of {self.inst.opcode}", self.inst.opcode)
        if o.abs:
            v = self.sel(self.cmp("lt", v, self.k32(0), True), self.sub(self.k32(0), v), v)
        if o.neg:
            v = self.sub(self.k32(0), v)
        if o.inv:
            v = self.not_(v)
        return v

    def _cbank(self, o, word):
        """Word ``word`` of a constant-bank operand; an indexed read outside its bank gives 0."""
        off = self.k32(o.offset + 4 * word)
        for base in (o.base, o.uniform_base):
            if base is not None:
                off = self.add(off, self.read(base))
        return self.cbank_word(o.value, off)

    def cbank_word(self, bank: int, off):
        """The aligned word of constant bank ``bank`` that holds byte ``off``; 0 outside the bank."""
        if not 0 <= bank < abi.NUM_BANKS:
            raise UnsupportedInstruction(f"{self.inst.where}: constant bank {bank} in '{self.inst.text}' "
                                         f"(banks 0-{abi.NUM_BANKS - 1} exist)", self.inst.opcode)
        start = abi.CBANK + abi.bank_start(bank) // 4
        off = self.and_(off, self.k32(0xFFFFFFFC))
        if self._value(off) is not None:
            inside = self._value(off) + 4 <= abi.bank_bytes(bank)
            return self.e.ctrl_load(self.k32(start + self._value(off) // 4)) if inside else self.k32(0)
        inside = self.cmp("le", off, self.k32(abi.bank_bytes(bank) - 4), False)
        value = self.e.ctrl_load(self.add(self.k32(start), self.shr(self.sel(inside, off, self.k32(0)), self.k32(2))))
        return self.sel(inside, value, self.k32(0))

    def read64(self, o):
        if regs.writable(o):
            return self.join(self.e.get(o.kind, o.value), self.e.get(o.kind, o.value + 1))
        if o.kind == "cbank":
            return self.join(self._cbank(o, 0), self._cbank(o, 1))
        if o.kind == "imm":
            return self.k64(o.value)
        return self.zext(self.read(o))

    def readp(self, o):
        v = self.kb(True) if regs.is_true(o) else self.e.get(o.kind, o.value)
        return self.bnot(v) if o.inv else v

    def _put(self, kind, n, t, v):
        """Masked write: the new value where ``en``, the old one elsewhere (kept in SSA)."""
        if self._value(self.en) is not True:
            if self._value(self.en) is False:
                return
            new = v
            v = self.f.op("Select", t, self.en, new, self.e.get(kind, n))
            self.e.masked[v] = (self.en, new)
        self.e.set(kind, n, v)

    def read_enabled(self, o):
        """A register as the threads with ``en`` see it: a value written under the same enable
        in this block is the new value itself, not select(en, new, old). Only for values that
        nothing but the enabled threads use (a branch's mask: the jump is masked by en)."""
        v = self.read(o)
        masked = self.e.masked.get(v)
        return masked[1] if masked is not None and masked[0] == self.en else v

    def write(self, o, v):
        if regs.writable(o):
            self._put(o.kind, o.value, self.u32, v)

    def write64(self, o, v):
        if regs.writable(o):
            self._put(o.kind, o.value, self.u32, self.lo(v))
            self._put(o.kind, o.value + 1, self.u32, self.hi(v))

    def writep(self, o, v):
        if not regs.is_true(o):
            self._put(o.kind, o.value, self.bool, v)

    # ---------------------------------------------------------------- arithmetic
    def _binary(self, opcode, t, a, b, fold, neutral=None, absorbing=None):
        """``a op b``: folded when both sides are constants; the other side when one is the
        operation's neutral constant; that constant when one is its absorbing one."""
        known = self.known
        va, vb = known.get(a), known.get(b)
        if va is not None and vb is not None:
            r = getattr(intops, fold)(va, vb)
            return self.kb(r) if t == self.bool else (self.k64(r) if t == self.u64 else self.k32(r))
        if absorbing is not None:
            if va is not None and va == absorbing:
                return a
            if vb is not None and vb == absorbing:
                return b
        if neutral is not None:
            if vb is not None and vb == neutral:
                return a
            if va is not None and va == neutral:
                return b
        return self.f.op(opcode, t, a, b)

    def add(self, a, b): return self._binary("IAdd", self.u32, a, b, "add", 0)
    def sub(self, a, b): return self._binary("ISub", self.u32, a, b, "sub")
    def mul(self, a, b): return self._binary("IMul", self.u32, a, b, "mul", 1, 0)

    def and_(self, a, b):
        negated = self.e.negated
        if negated.get(b) == a or negated.get(a) == b:      # a & ~a (BRA.DIV on __activemask())
            return self.k32(0)
        return self._binary("BitwiseAnd", self.u32, a, b, "and_", 0xFFFFFFFF, 0)

    def or_(self, a, b): return self._binary("BitwiseOr", self.u32, a, b, "or_", 0, 0xFFFFFFFF)
    def xor(self, a, b): return self._binary("BitwiseXor", self.u32, a, b, "xor", 0)
    def not_(self, a):
        v = self._op("Not", self.u32, a, fold="not_")
        self.e.negated.setdefault(v, a)
        return v
    def popc(self, a): return self._op("BitCount", self.u32, a, fold="popc")
    def brev(self, a): return self._op("BitReverse", self.u32, a, fold="brev")

    def _shift(self, opcode, fold, t, a, n, width, fill):
        vals = (self._value(a), self._value(n))
        if None not in vals:
            return self._op(opcode, t, a, n, fold=fold)
        if vals[1] is not None and vals[1] < width:     # a constant amount: the plain shift
            if vals[1] == 0:
                return a
            return self.f.op(opcode, t, a, n if t == self.u32 else self.k64(vals[1]))
        nn = n if t == self.u32 else self.zext(n)
        masked = self.f.op("BitwiseAnd", t, nn, self.k32(width - 1) if t == self.u32 else self.k64(width - 1))
        shifted = self.f.op(opcode, t, a, masked)
        if self._value(n) is not None and self._value(n) < width:
            return shifted
        big = self.cmp("ge", n, self.k32(width), False)
        return self.f.op("Select", t, big, fill(a), shifted)

    def shl(self, a, n): return self._shift("ShiftLeftLogical", "shl", self.u32, a, n, 32, lambda a: self.k32(0))
    def shr(self, a, n): return self._shift("ShiftRightLogical", "shr", self.u32, a, n, 32, lambda a: self.k32(0))

    def sar(self, a, n):
        return self._shift("ShiftRightArithmetic", "sar", self.u32, a, n, 32,
                           lambda a: self.f.op("ShiftRightArithmetic", self.u32, a, self.k32(31)))

    def msb(self, a, signed):
        if self._value(a) is not None:
            return self.k32(intops.msb(self._value(a), signed))
        return self.f.op("ExtInst", self.u32, self.m.glsl(), GLSL["FindSMsb" if signed else "FindUMsb"], a)

    def cmp(self, op, a, b, signed):
        return self._op(_CMP[(op, signed)], self.bool, a, b, fold=None) if None in (self._value(a), self._value(b)) \
            else self.kb(intops.cmp(op, self._value(a), self._value(b), signed))

    def sel(self, c, a, b):
        cv = self._value(c)
        if cv is not None:
            return a if cv else b
        return self.f.op("Select", self.u32, c, a, b)

    def band(self, a, b): return self._binary("LogicalAnd", self.bool, a, b, "band", True, False)
    def bor(self, a, b): return self._binary("LogicalOr", self.bool, a, b, "bor", False, True)
    def bxor(self, a, b): return self._op("LogicalNotEqual", self.bool, a, b, fold="bxor")
    def bnot(self, a): return self._op("LogicalNot", self.bool, a, fold="bnot")

    def selb(self, c, a, b):
        cv = self._value(c)
        return (a if cv else b) if cv is not None else self.f.op("Select", self.bool, c, a, b)

    def b2v(self, a): return self.sel(a, self.k32(1), self.k32(0))

    # ---------------------------------------------------------------- 64-bit
    # A 64-bit value remembers its two words once they are known (``Emitter.halves``), and a
    # pair of words the 64-bit value they came from (``Emitter.joined``): an address written to
    # a register pair and read back as a pair, then split for the bounds check, costs nothing.
    def zext(self, a):
        v = self._op("UConvert", self.u64, a, fold="zext")
        self.e.halves.setdefault(v, [a, self.k32(0)])
        return v

    def sext(self, a): return self._op("SConvert", self.u64, a, fold="sext")

    def _half(self, a, k):
        value = self._value(a)
        if value is not None:
            return self.k32(value >> 32 * k)
        known = self.e.halves.setdefault(a, [None, None])
        if known[k] is None:
            wide = a if k == 0 else self.f.op("ShiftRightLogical", self.u64, a, self.k64(32))
            known[k] = self.f.op("UConvert", self.u32, wide)
            if known[1 - k] is not None:
                self.e.joined.setdefault((known[0], known[1]), a)
        return known[k]

    def lo(self, a): return self._half(a, 0)
    def hi(self, a): return self._half(a, 1)

    def join(self, lo, hi):
        if None not in (self._value(lo), self._value(hi)):
            return self.k64(self._value(lo) | self._value(hi) << 32)
        v = self.e.joined.get((lo, hi))
        if v is not None:
            return v
        if self._value(hi) == 0:
            return self.zext(lo)
        v = self.f.op("BitwiseOr", self.u64, self.zext(lo),
                      self.f.op("ShiftLeftLogical", self.u64, self.zext(hi), self.k64(32)))
        self.e.halves[v] = [lo, hi]
        self.e.joined[(lo, hi)] = v
        return v

    def add64(self, a, b): return self._binary("IAdd", self.u64, a, b, "add64", 0)
    def sub64(self, a, b): return self._op("ISub", self.u64, a, b, fold="sub64")
    def and64(self, a, b): return self._op("BitwiseAnd", self.u64, a, b, fold="and64")
    def or64(self, a, b): return self._op("BitwiseOr", self.u64, a, b, fold="or64")

    def cmp64(self, op, a, b):
        """An unsigned comparison of two 64-bit words."""
        va, vb = self._value(a), self._value(b)
        if va is not None and vb is not None:
            return self.kb(intops.cmp(op, va, vb, False))
        return self.f.op(_CMP[(op, False)], self.bool, a, b)

    def sel64(self, c, a, b):
        cv = self._value(c)
        return (a if cv else b) if cv is not None else self.f.op("Select", self.u64, c, a, b)

    def mul64(self, a, b): return self._op("IMul", self.u64, a, b, fold="mul64")
    def shl64(self, a, n): return self._shift("ShiftLeftLogical", "shl64", self.u64, a, n, 64, lambda a: self.k64(0))
    def shr64(self, a, n): return self._shift("ShiftRightLogical", "shr64", self.u64, a, n, 64, lambda a: self.k64(0))

    def sar64(self, a, n):
        return self._shift("ShiftRightArithmetic", "sar64", self.u64, a, n, 64,
                           lambda a: self.f.op("ShiftRightArithmetic", self.u64, a, self.k64(63)))

    # ---------------------------------------------------------------- floats
    def _f32(self, bits: int):
        return self.m.const(self.m.f32(), bits)

    # the float words: a soft float on the integer words above (see emit_float)
    def fadd(self, a, b, fmt, rounding): return SoftFloat(self).fadd(a, b, fmt, rounding)
    def fmul(self, a, b, fmt, rounding): return SoftFloat(self).fmul(a, b, fmt, rounding)
    def ffma(self, a, b, c, fmt, rounding): return SoftFloat(self).ffma(a, b, c, fmt, rounding)
    def i2f(self, a, width, signed, fmt, rounding): return SoftFloat(self).i2f(a, width, signed, fmt, rounding)
    def f2i(self, a, fmt, width, signed, rounding): return SoftFloat(self).f2i(a, fmt, width, signed, rounding)
    def f2f(self, a, src, dst, rounding): return SoftFloat(self).f2f(a, src, dst, rounding)
    def frnd(self, a, fmt, rounding): return SoftFloat(self).frnd(a, fmt, rounding)

    def mufu(self, a, func): return Mufu(self).value(a, func)

    # ---------------------------------------------------------------- memory, warp, control
    def load(self, space, addr, nbytes, signed): return self.e.memory.load(self, space, addr, nbytes, signed)
    def store(self, space, addr, nbytes, values): self.e.memory.store(self, space, addr, nbytes, values)

    def atomic_update(self, space, addr, nbytes, update):
        return self.e.memory.atomic_update(self, space, addr, nbytes, update)

    def atomic(self, space, op, addr, value, compare, signed):
        return self.e.memory.atomic(self, space, op, addr, value, compare, signed)

    def call_external(self, target, fmt, args): return self.e.vprintf.call(self, target, fmt, args)

    def active(self): return self.e.warp.active(self)
    def ballot(self, p): return self.e.warp.ballot(self, p)
    def shfl(self, mode, value, b, c): return self.e.warp.shfl(self, mode, value, b, c)
    def match_any(self, value): return self.e.warp.match_any(self, value)
    def match_all(self, value): return self.e.warp.match_all(self, value)
    def redux(self, op, value, signed): return self.e.warp.redux(self, op, value, signed)

    def jump(self, target, taken=None):
        self.out.jump(self, target, self.en if taken is None else self.band(self.en, taken))

    def jump_unguarded(self, target, taken):
        self.out.jump(self, target, self.band(self.out.active, taken))

    def jump_indirect(self, address, targets):
        """Threads whose 64-bit address is one of ``targets`` go there; the others FAULT (the
        turn's dispatch switch over blocks is what reaches the target)."""
        lo, hi = self.lo(address), self.hi(address)
        named = self.kb(False)
        for pc in dict.fromkeys(targets):
            named = self.bor(named, self.cmp("eq", lo, self.k32(pc), False))
        ok = self.band(named, self.cmp("eq", hi, self.k32(0), False))
        fault = self.band(self.en, self.bnot(ok))
        if self._value(fault) is not False:
            self.e.failures.note(self.out, abi.FAULT, fault, self.k32(self.inst.pc), lo, hi)
        self.jump(lo, ok)

    def exit(self, cond=None): self.end(self.en if cond is None else self.band(self.en, cond))

    def trap(self):
        if self._value(self.en) is not False:
            self.e.failures.note(self.out, abi.FAULT, self.en, self.k32(self.inst.pc))

    def end(self, cond):
        """Threads where ``cond`` holds end here (EXIT, or a fault)."""
        self.out.exit(cond)
        self.e.exit_threads(cond)

    def yield_(self):
        f, bool_ = self.f, self.bool
        self.out.yields = True
        f.store(self.e.yielded, f.op("LogicalOr", bool_, f.load(bool_, self.e.yielded), self.en))
        self.e.warp.yield_(self)
    def bssy(self, barrier): self.e.warp.bssy(self, barrier)
    def bsync(self, barrier): self.e.warp.bsync(self, barrier)
    def brk(self, barrier, cond=None): self.e.warp.brk(self, barrier, cond)
    def warpsync(self, mask): self.e.warp.warpsync(self, mask)
    def bar(self, kind, barrier, count, pred): self.e.warp.bar(self, kind, barrier, count, pred)
    def bar_result(self): return self.f.load(self.u32, self.e.bar_result)
    def barrier_mask(self, barrier):
        """Bx's mask: in workgroup memory where the turns bookkeeping keeps it, else the thread's own."""
        warp = self.e.warp
        if warp.region_masks_shared:
            return warp.ld(None, warp._bx(self, barrier, self.e.tid))
        return self.f.load(self.u32, self.e.barrier_reg(barrier))

    def set_barrier_mask(self, barrier, mask):
        """Bx = mask where enabled, and the thread is in Bx's region again: its bit in the
        region's "left" word (turns bookkeeping, as BSSY clears it) is cleared."""
        f, e, warp = self.f, self.e, self.e.warp
        if warp.region_masks_shared:
            with f.if_(self.en):
                warp.st(None, warp._bx(self, barrier, e.tid), mask)
        else:
            var = e.barrier_reg(barrier)
            f.store(var, f.op("Select", self.u32, self.en, mask, f.load(self.u32, var)))
        if "brk" in getattr(warp, "mine", {}):
            with f.if_(self.en):
                warp.atomic("AtomicAnd", None, self.add(warp.mine["brk"], self.k32(barrier)), self.not_(warp.bit))

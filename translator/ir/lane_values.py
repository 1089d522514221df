"""What a register holds, as far as the lanes of one warp are concerned: the abstract values
the memory-order analysis (:mod:`translator.ir.order`) runs the opcode table's semantics on.

A value is a :class:`Lin`, a sum of integer multiples of *atoms* plus a constant. Atoms are

- ``LANE`` (``("lane", "SR_LANEID")``): the lane's index in its warp, 0 to 31;
- ``("lane", "SR_TID.X")`` (and ``.Y``, ``.Z``): the thread index, where warps do not line up with
  rows of the block (see :func:`lane_layout`); a lane atom differs between the lanes of a warp;
- ``WARP_X`` (``("sr", "warp_x")``): the warp's first SR_TID.X divided by 32, 0 to 31, where
  warps line up with rows (then SR_TID.X is ``32 * WARP_X + LANE``);
- ``("c", bank, offset)``: a word of a constant bank; ``("sr", name)``: SR_CTAID.X/Y/Z, and
  SR_TID.Y/Z where warps line up with rows;
- ``("op", name, args)``: an operation on values the same for every lane of a warp (opaque,
  but equal wherever it is computed from equal arguments);
- ``UNKNOWN`` (``("?",)``): anything else, different wherever it occurs (never cancels).

Atoms other than lane atoms and UNKNOWN are *uniform*: one value for the whole warp, the same
wherever in the program it is computed (functions of constants and of the thread's identity
only; nothing read from memory is ever an atom but UNKNOWN). ``TOP`` is ``UNKNOWN`` alone.

**Exactness.** A Lin without atoms is an exact constant (an unsigned word, 32 or 64 bits as
its operation made it). A Lin with atoms is known only modulo 2^32: its coefficients and its
constant are signed 32-bit numbers, ``sext``/``lo`` keep it, and ``hi``, ``shr64`` and ``sar64``
of it are TOP; a 64-bit value made of two words (``join``, ``zext``) is a :class:`Pair` of them. So two addresses whose Lins differ by a
small ``d`` truly differ by ``d`` plus a multiple of 2^32, which never brings two accesses of at
most 16 bytes together (the analysis relies on no more than this). AND, OR and right shifts
keep the structure only where the lane and warp atoms' ranges prove the bits apart.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import TranslatorError
from ..isa import regs
from ..values import floatops, intops

M32 = 0xFFFFFFFF
LANE = ("lane", "SR_LANEID")
WARP_X = ("sr", "warp_x")
BOUNDED = {LANE: 31, WARP_X: 31}        # atoms known to lie in [0, bound]


def s32(v: int) -> int:
    """``v`` modulo 2^32 as a signed 32-bit number."""
    v &= M32
    return v - (1 << 32) if v >> 31 else v


def _uniform_atom(at) -> bool:
    return at[0] not in ("lane", "?")


@dataclass(frozen=True)
class Lin:
    """``sum(k * atom) + const``: exact without atoms, modulo 2^32 with them."""
    terms: frozenset = frozenset()     # (atom, coefficient) pairs, coefficients non-zero
    const: int = 0

    @property
    def is_const(self) -> bool:
        return not self.terms

    @property
    def uniform(self) -> bool:
        """The same for every lane of a warp."""
        return all(_uniform_atom(at) for at, _ in self.terms)

    @property
    def unknown(self) -> bool:
        return any(at[0] == "?" for at, _ in self.terms)


def const(v: int) -> Lin:
    return Lin(frozenset(), v)


def atom(*a) -> Lin:
    return Lin(frozenset({(tuple(a), 1)}), 0)


TOP = atom("?")


@dataclass(frozen=True)
class Pair:
    """A 64-bit value as its two 32-bit words (what ``join`` and ``zext`` make), so that
    shifts across the halves (SHF) keep them apart; anywhere else it stands for its low word
    (modulo 2^32), or its exact value when both words are constants."""
    lo: Lin
    hi: Lin


def as_lin(v) -> Lin:
    """A 64-bit value as a Lin: exact from two constant words, else its low word modulo 2^32."""
    if not isinstance(v, Pair):
        return v
    if v.lo.is_const and v.hi.is_const:
        return const(v.lo.const | v.hi.const << 32)
    return v.lo if not v.lo.is_const else TOP


def _make(terms: dict, c: int) -> Lin:
    """A Lin modulo 2^32 from coefficients (UNKNOWN absorbs every multiple and the constant)."""
    terms = {at: s32(k) for at, k in terms.items() if s32(k)}
    if ("?",) in terms:
        terms[("?",)], c = 1, 0
    return Lin(frozenset(terms.items()), s32(c)) if terms else TOP


def combine(a: Lin, b: Lin, sign: int = 1) -> Lin:
    """``a + sign * b`` modulo 2^32 (at least one of them has atoms); TOP when the atoms
    cancel (the exact result is then unknown)."""
    terms = dict(a.terms)
    for at, k in b.terms:
        terms[at] = 1 if at == ("?",) else terms.get(at, 0) + sign * k
    return _make(terms, a.const + sign * b.const)


def scale(a: Lin, k: int) -> Lin:
    """``a * k`` modulo 2^32 (``a`` has atoms)."""
    return _make({at: c * k for at, c in a.terms}, a.const * k)


def _bits_apart(a: Lin, n: int):
    """``a`` as ``high + low`` with ``high`` a multiple of 2^n and ``0 <= low < 2^n`` (low built
    from the lane index and a constant), or None."""
    if a.unknown or not 0 < n < 32:
        return None
    unit = 1 << n
    low_terms = {at: k for at, k in a.terms if at == LANE}
    high_terms = {at: k for at, k in a.terms if at != LANE}
    if any(k % unit for k in high_terms.values()) or any(k < 0 for k in low_terms.values()):
        return None
    c = a.const % (1 << 32)
    c_low = c % unit
    if sum(k * BOUNDED[at] for at, k in low_terms.items()) + c_low >= unit:
        return None
    high = _make(high_terms, c - c_low) if high_terms else const(c - c_low)
    low = _make(low_terms, c_low) if low_terms else const(c_low)
    return high, low


def _zeros(a: Lin) -> int:
    """How many low bits of ``a`` are certainly zero."""
    if a.unknown:
        return 0
    return min([(k & -k).bit_length() - 1 for _, k in a.terms] + [((a.const & M32) & -(a.const & M32)).bit_length() - 1
                                                                  if a.const & M32 else 32])


def lane_layout(block):
    """How SR_TID.X/Y/Z look to the analysis for a block shape: "rows" when every warp lies in
    one row of x (1-D blocks, or x a multiple of 32: SR_TID.X is ``32 * WARP_X + LANE`` and
    .Y/.Z are uniform), "linear" otherwise (lane atoms, told apart through the linear thread
    index), None when the shape is unknown (they are TOP)."""
    if block is None:
        return None
    bx, by, bz = block
    return "rows" if by * bz == 1 or bx % 32 == 0 else "linear"


class LaneValuesCtx:
    """:class:`translator.isa.ctx.Ctx` on abstract values, for one instruction. Registers live in
    ``state`` (absent: TOP); memory accesses are handed to ``record(space, kind, addr,
    nbytes, op)``. Writes of a guarded instruction keep only what both outcomes agree on."""

    def __init__(self, state: dict, inst, record, block):
        self.state, self.inst, self.record, self.block = state, inst, record, block

    # constants
    def k32(self, v): return const(v & M32)
    def k64(self, v): return const(v & intops.M64)
    def kb(self, v): return const(int(bool(v)))

    # operands
    def read(self, o):
        if o.kind in ("reg", "ureg"):
            v = const(0) if regs.is_zero(o) else self.state.get((o.kind, o.value), TOP)
        elif o.kind == "imm":
            return self.k32(~o.value if o.inv else o.value)
        elif o.kind == "cbank":
            v = self._cbank(o)
        elif o.kind == "sreg":
            v = self._sreg(o.name)
        else:
            v = TOP
        if o.abs:
            v = self._apply("iabs", lambda a: a if not a >> 31 else -s32(a) & M32, v)
        if o.neg:
            v = self.sub(const(0), v)
        if o.inv:
            v = self.not_(v)
        return v

    read_enabled = read

    def read64(self, o):
        if o.kind in ("reg", "ureg"):
            if regs.is_zero(o):
                return const(0)
            return self.join(self.state.get((o.kind, o.value), TOP), self.state.get((o.kind, o.value + 1), TOP))
        if o.kind == "imm":
            return self.k64(o.value)
        if o.kind == "cbank" and o.base is None and o.uniform_base is None:
            return atom("c", o.value, o.offset)     # one atom for both widths: equal modulo 2^32
        return self.read(o)

    def cbank_word(self, bank: int, off):
        """The aligned word holding byte ``off``: an atom where ``off`` is a known constant."""
        if isinstance(off, Lin) and off.is_const:
            return atom("c", bank, off.const & ~3 & 0xFFFFFFFF)
        return TOP

    def _cbank(self, o):
        if o.base is not None or o.uniform_base is not None:
            return TOP
        if o.value == 0 and self.block is not None and o.offset in (0, 4, 8):
            return const(self.block[o.offset // 4])        # the block shape (abi.constant_bank)
        return atom("c", o.value, o.offset)

    def _sreg(self, name):
        if name == "SR_LANEID":
            return atom(*LANE)
        if name.startswith("SR_CTAID."):
            return atom("sr", name)
        layout = lane_layout(self.block)
        if not name.startswith("SR_TID.") or layout is None:
            return TOP
        dim = "XYZ".index(name[-1])
        if self.block[dim] == 1:
            return const(0)
        if layout == "linear":
            return atom("lane", name)
        return _make({WARP_X: 32, LANE: 1}, 0) if dim == 0 else atom("sr", name)

    def readp(self, o):
        v = const(1) if regs.is_true(o) else self.state.get((o.kind, o.value), TOP)
        return self.bnot(v) if o.inv else v

    def _put(self, key, v):
        if self.inst.guard is not None and self.state.get(key, TOP) != v:
            v = TOP
        if v == TOP:
            self.state.pop(key, None)
        else:
            self.state[key] = v

    def write(self, o, v):
        if regs.writable(o):
            self._put((o.kind, o.value), v)

    def write64(self, o, v):
        if regs.writable(o):
            self._put((o.kind, o.value), self.lo(v))
            self._put((o.kind, o.value + 1), self.hi(v))

    def writep(self, o, v):
        if o.kind in ("pred", "upred") and not regs.is_true(o):
            self._put((o.kind, o.value), v)

    # arithmetic
    def _apply(self, name, fold, *args):
        """A value no lane structure survives: folded on constants, an opaque uniform atom on
        uniform values, TOP otherwise."""
        args = tuple(as_lin(a) for a in args)
        values = [a for a in args if isinstance(a, Lin)]
        if all(a.is_const for a in values):
            r = fold(*[a.const if isinstance(a, Lin) else a for a in args])
            return const(int(r) if isinstance(r, bool) else r)
        if all(a.uniform for a in values):
            return atom("op", name, args)
        return TOP

    def add(self, a, b, sign=1, fold=intops.add):
        a, b = as_lin(a), as_lin(b)
        if a.is_const and b.is_const:
            return const(fold(a.const, b.const))
        return combine(a, b, sign)

    def add64(self, a, b): return self.add(a, b, 1, intops.add64)
    def sub(self, a, b): return self.add(a, b, -1, intops.sub)

    def mul(self, a, b, fold=intops.mul, name="mul"):
        a, b = as_lin(a), as_lin(b)
        if a.is_const != b.is_const:
            lin, k = (a, b.const) if b.is_const else (b, a.const)
            return const(0) if k == 0 or (name == "mul" and k & M32 == 0) else scale(lin, k)
        return self._apply(name, fold, a, b)

    def mul64(self, a, b): return self.mul(a, b, intops.mul64, "mul64")

    def shl(self, a, n, fold=intops.shl, name="shl"):
        a = as_lin(a)
        if not a.is_const and n.is_const:
            if n.const < 32:
                return scale(a, 1 << n.const)
            return const(0) if name == "shl" else TOP
        return self._apply(name, fold, a, n)

    def shl64(self, a, n):
        if isinstance(a, Pair) and n.is_const and 0 < n.const < 32:
            k = n.const
            return Pair(self.shl(a.lo, n), self.or_(self.shl(a.hi, n), self.shr(a.lo, const(32 - k))))
        return self.shl(a, n, intops.shl64, "shl64")

    def _shift_right(self, a, n, word, name):
        """shr64/sar64 of two words by a constant below 32: each word from both halves."""
        if isinstance(a, Pair) and n.is_const and 0 < n.const < 32:
            k = n.const
            return Pair(self.or_(self.shr(a.lo, n), self.shl(a.hi, const(32 - k))), word(a.hi, n))
        a = as_lin(a)
        return TOP if not a.is_const else self._apply(name, getattr(intops, name), a, n)

    def shr64(self, a, n): return self._shift_right(a, n, self.shr, "shr64")
    def sar64(self, a, n): return self._shift_right(a, n, self.sar, "sar64")

    def shr(self, a, n):
        """A shift that only drops the lane's bits: the warp's part, exactly."""
        if not a.is_const and n.is_const:
            split = _bits_apart(a, n.const)
            if split is not None and _small(split[0]):
                high = split[0]
                return _make({at: k >> n.const for at, k in high.terms}, high.const >> n.const) \
                    if high.terms else const(high.const >> n.const)
        return self._apply("shr", intops.shr, a, n)

    def and_(self, a, b):
        """AND with a mask of low bits keeps the lane's part, with its complement the rest."""
        lin, mask = (a, b.const) if b.is_const else (b, a.const) if a.is_const else (None, 0)
        if lin is not None and not lin.is_const:
            low_bits = (mask + 1) & mask == 0
            n = (mask & M32).bit_length() if low_bits else (~mask & M32).bit_length()
            split = _bits_apart(lin, n) if low_bits or (~mask & M32) + 1 == 1 << n else None
            if split is not None:
                return split[1] if low_bits else split[0]
        return self._apply("and_", intops.and_, a, b)

    def or_(self, a, b):
        """OR of bits that cannot overlap is their sum."""
        if a == const(0) or b == const(0):
            return b if a == const(0) else a
        for high, low in ((a, b), (b, a)):
            n = _zeros(high)
            split = _bits_apart(low, n) if 0 < n < 32 else None
            if split is not None and split[0] == const(0):
                return self.add(high, low)
        return self._apply("or_", intops.or_, a, b)

    def zext(self, a):
        return Pair(a, const(0)) if not a.is_const else self._apply("zext", intops.zext, a)

    def sext(self, a):
        return a if not a.is_const else self._apply("sext", intops.sext, a)

    def lo(self, a):
        if isinstance(a, Pair):
            return a.lo
        return a if not a.is_const else self._apply("lo", intops.lo, a)

    def hi(self, a):
        if isinstance(a, Pair):
            return a.hi
        return TOP if not a.is_const else self._apply("hi", intops.hi, a)

    def join(self, lo_, hi_):
        return Pair(lo_, hi_)

    def sel(self, c, a, b):
        if c.is_const:
            return a if c.const else b
        return a if a == b and not as_lin(a).unknown else self._apply("sel", intops.sel, c, a, b)

    def selb(self, c, a, b):
        return a if a == b and not a.unknown else self._apply("selb", intops.selb, c, a, b)

    # floats: opaque
    def mufu(self, a, func): return self._opaque("mufu", a)

    def _opaque(self, name, *args):
        return atom("op", name, args) if all(a.uniform for a in args if isinstance(a, Lin)) else TOP

    # memory
    def load(self, space, addr, nbytes, signed):
        self.record(space, "load", as_lin(addr), nbytes, None)
        return [TOP] * max(1, nbytes // 4)

    def store(self, space, addr, nbytes, values):
        self.record(space, "store", as_lin(addr), nbytes, None)

    def atomic(self, space, op, addr, value, compare, signed):
        self.record(space, self.inst.spec.access, as_lin(addr), 4, (op, bool(signed)))
        return TOP

    def atomic_update(self, space, addr, nbytes, update):
        self.record(space, self.inst.spec.access, as_lin(addr), nbytes, ("update", self.inst.pc))
        return [TOP] * (nbytes // 4)

    # the warp and control: nothing a lane can count on
    def active(self): return TOP
    def ballot(self, p): return TOP
    def shfl(self, mode, value, b, c): return TOP, TOP
    def match_any(self, value): return TOP
    def match_all(self, value): return TOP, TOP
    def redux(self, op, value, signed): return TOP
    def bar_result(self): return TOP
    def barrier_mask(self, barrier): return TOP
    def call_external(self, target, fmt, args): return TOP     # reads only read-only strings

    def jump(self, target, taken=None): pass
    def jump_unguarded(self, target, taken): pass
    def jump_indirect(self, address, targets): pass
    def exit(self, cond=None): pass
    def trap(self): pass
    def yield_(self): pass
    def bssy(self, barrier): pass
    def bsync(self, barrier): pass
    def brk(self, barrier, cond=None): pass
    def set_barrier_mask(self, barrier, mask): pass
    def warpsync(self, mask): pass
    def bar(self, kind, barrier, count, pred): pass


def _small(a: Lin) -> bool:
    """Whether ``a`` (a multiple of what a shift drops) lies in [0, 2^32) without wrapping, so
    that shifting its Lin right shifts its value: bounded atoms, non-negative."""
    if any(at not in BOUNDED or k < 0 for at, k in a.terms) or a.const < 0:
        return False
    return sum(k * BOUNDED[at] for at, k in a.terms) + a.const <= M32


_SPECIAL = {"add", "sub", "mul", "shl", "shr", "and_", "or_", "zext", "sext", "lo", "hi", "join", "add64",
            "mul64", "shl64", "shr64", "sar64", "sel", "selb"}
for _name in intops.OPERATIONS:
    if _name not in _SPECIAL:
        setattr(LaneValuesCtx, _name,
                (lambda n: lambda self, *args: self._apply(n, getattr(intops, n), *args))(_name))
for _name in floatops.OPERATIONS:
    setattr(LaneValuesCtx, _name, (lambda n: lambda self, *args: self._opaque(n, *args))(_name))
del _name


def run_instruction(state: dict, inst, record, block) -> None:
    """Run one instruction's semantics on ``state``. An instruction the table cannot run
    (the translator reports it later) leaves every register unknown and, if it touches
    memory, an access anywhere."""
    try:
        inst.spec.sem(LaneValuesCtx(state, inst, record, block), inst)
    except TranslatorError:
        state.clear()
        if inst.spec.space is not None:
            record(inst.spec.space, inst.spec.access, TOP, 16, None)

"""Semantics of loads, stores and atomics on global, shared, local and generic memory (a generic
address is 64 bits wide, as a global one is; each back end sends it to the window it names,
translator.abi.generic_target)."""
from __future__ import annotations

from dataclasses import replace

from .. import regs
from ..ctx import Ctx
from .alu import PRED_KINDS, unsupported
from .float import flush

WIDTHS = {"U8": (1, False), "S8": (1, True), "U16": (2, False), "S16": (2, True),
          "64": (8, False), "128": (16, False)}
ATOMIC_NAMES = {"ADD": "add", "MIN": "min", "MAX": "max", "AND": "and", "OR": "or", "XOR": "xor",
                "EXCH": "exch", "CAS": "cas", "INC": "inc", "DEC": "dec"}


def width(i) -> tuple[int, bool]:
    for mod in i.mods:
        if mod in WIDTHS:
            return WIDTHS[mod]
    return 4, False


def address(x: Ctx, i, o, space: str):
    """The address an operand like ``[R2.64+0x10]``, ``[R7.X4+0x200]`` or, in shared memory,
    ``[R7.X4+UR4+0x200]`` names: a uniform index register is added unscaled (nvcc keeps a
    uniform loop's offset there, ``LDS R3, [R7.X4+UR4]``)."""
    if o.kind != "mem":
        raise unsupported(i, f"expected an address, got {o.text}")
    index = o.index if o.index is not None and not regs.is_zero(o.index) else None
    if index is not None and (space != "shared" or index.kind != "ureg" or o.base is None):
        raise unsupported(i, f"address with an index register {o.text}")
    base = o.base
    wide = space in ("global", "generic")
    pair = wide and (base is None or "64" in o.suffix or "E" in i.mods)
    if base is None and o.uniform_base is None:
        return x.k64(o.offset & (2**64 - 1)) if pair else x.k32(o.offset & 0xFFFFFFFF)
    reg = base if base is not None else o.uniform_base
    if pair:
        addr = x.read64(reg)
        return x.add64(addr, x.k64(o.offset & (2**64 - 1)))
    value = x.read(reg)
    if "X4" in o.suffix or "X8" in o.suffix or "X16" in o.suffix:
        scale = {"X4": 2, "X8": 3, "X16": 4}[next(s for s in o.suffix if s.startswith("X"))]
        value = x.shl(value, x.k32(scale))
    if index is not None:
        value = x.add(value, x.read(index))
    value = x.add(value, x.k32(o.offset & 0xFFFFFFFF))
    return x.zext(value) if wide else value


def _write_words(x: Ctx, d, words):
    if len(words) == 1:
        x.write(d, words[0])
        return
    for k, w in enumerate(words):
        x.write(replace(d, value=regs.pair_word(d, k)), w)


def _read_words(x: Ctx, s, n):
    if n == 1:
        return [x.read(s)]
    return [x.read(replace(s, value=regs.pair_word(s, k))) for k in range(n)]


def load(space: str):
    def sem(x: Ctx, i):
        nbytes, signed = width(i)
        d, src = i.ops[0], i.ops[1]
        words = x.load(space, address(x, i, src, space), nbytes, signed)
        _write_words(x, d, words)
    sem.__name__ = f"load_{space}"
    return sem


def store(space: str):
    def sem(x: Ctx, i):
        nbytes, _ = width(i)
        dst, src = i.ops[0], i.ops[1]
        x.store(space, address(x, i, dst, space), nbytes, _read_words(x, src, max(1, nbytes // 4)))
    sem.__name__ = f"store_{space}"
    return sem


def _atomic_op(i) -> str:
    names = [ATOMIC_NAMES[m] for m in i.mods if m in ATOMIC_NAMES]
    if len(names) != 1:
        raise unsupported(i, "no single atomic operation")
    return names[0]


def atomic(space: str, returns: bool):
    """ATOMS/ATOMG/ATOM (returning the old value) and RED (not returning); the float adds,
    ATOMS.CAST.SPIN and ATOMS.POPC.INC are below."""
    def sem(x: Ctx, i):
        ops = [o for o in i.ops if o.kind not in PRED_KINDS]
        if returns:
            d, addr_op, *vals = ops
        else:
            d, (addr_op, *vals) = None, ops
        addr = address(x, i, addr_op, space)
        if i.mods & FLOAT_ATOMICS:
            old = _float_add(x, i, space, addr, vals)
        elif {"CAST", "SPIN"} <= i.mods:
            old = _compare_and_store(x, i, space, addr, vals)
        elif {"POPC", "INC"} <= i.mods:
            old = _popc_inc(x, i, space, addr, d)
        else:
            old = _integer(x, i, space, addr, vals)
        if d is not None:
            (x.write64 if i.mods & WIDE_ATOMICS else x.write)(d, old)
    sem.__name__ = f"atomic_{space}"
    return sem


FLOAT_ATOMICS = frozenset({"F32", "F64", "F16x2"})
WIDE_ATOMICS = frozenset({"64", "U64", "S64", "F64"})     # on a pair of words (8-byte aligned)


def _integer(x: Ctx, i, space, addr, vals):
    op = _atomic_op(i)
    if i.mods & WIDE_ATOMICS:
        return _integer64(x, i, space, addr, vals, op)
    signed = "S32" in i.mods
    if op == "cas":
        return x.atomic(space, op, addr, x.read(vals[1]), x.read(vals[0]), signed)
    return x.atomic(space, op, addr, x.read(vals[0]), None, signed)


def _integer64(x: Ctx, i, space, addr, vals, op):
    """ATOM/ATOMG/ATOMS/RED .64 (unsigned), .S64 (signed min and max): the read-modify-write of
    a 64-bit word, as a pair (low word first); CAS takes the compare pair, then the new pair."""
    if op in ("inc", "dec"):
        raise unsupported(i, "64-bit atomic INC/DEC")
    if op == "cas":
        compare, new = _read_words(x, vals[0], 2), _read_words(x, vals[1], 2)
        def update(y, w):
            same = _pair_equal(y, w, compare)
            return [y.sel(same, n, o) for n, o in zip(new, w)]
    else:
        value, signed = _read_words(x, vals[0], 2), "S64" in i.mods
        def update(y, w):
            return _op64(y, op, w, value, signed)
    return x.join(*x.atomic_update(space, addr, 8, update))


def _op64(x: Ctx, op: str, old, value, signed: bool):
    """``op`` of two 64-bit words given as [lo, hi] pairs; the result pair."""
    if op == "add":
        total = x.add64(x.join(*old), x.join(*value))
        return [x.lo(total), x.hi(total)]
    if op in ("and", "or", "xor"):
        f = {"and": x.and_, "or": x.or_, "xor": x.xor}[op]
        return [f(a, b) for a, b in zip(old, value)]
    if op == "exch":
        return list(value)
    # min, max: old < value, by the high words (signed for .S64), then the low ones (unsigned)
    below = x.bor(x.cmp("lt", old[1], value[1], signed),
                  x.band(x.cmp("eq", old[1], value[1], False), x.cmp("lt", old[0], value[0], False)))
    keep_old = below if op == "min" else x.bnot(below)      # equal pairs: either is the answer
    return [x.sel(keep_old, o, v) for o, v in zip(old, value)]


def _compare_and_store(x: Ctx, i, space, addr, vals):
    """ATOMS.CAST.SPIN[.64] Rd, [a], Rcmp, Rnew: store Rnew where the memory holds Rcmp; Rd = 1
    if it did, else 0 (the .64 form compares and stores pairs and writes the pair (1|0, 0)).
    ptxas builds shared-memory float atomics and atomicCAS loops from it."""
    cmp_op, new_op = vals[:2]
    if "64" not in i.mods:
        compare = x.read(cmp_op)
        old = x.atomic(space, "cas", addr, x.read(new_op), compare, False)
        return x.b2v(x.cmp("eq", old, compare, False))
    compare, new = _read_words(x, cmp_op, 2), _read_words(x, new_op, 2)
    old = x.atomic_update(space, addr, 8, lambda y, w: [y.sel(_pair_equal(y, w, compare), n, o)
                                                        for n, o in zip(new, w)])
    return x.zext(x.b2v(_pair_equal(x, old, compare)))


def _pair_equal(x: Ctx, a, b):
    """Whether two 64-bit words, given as [lo, hi] pairs, are equal."""
    return x.band(x.cmp("eq", a[0], b[0], False), x.cmp("eq", a[1], b[1], False))


def _popc_inc(x: Ctx, i, space, addr, d):
    """ATOMS.POPC.INC.32 RZ, [a]: the word grows by the number of lanes executing it (ptxas's
    warp-aggregated ``atomicAdd(p, 1)`` whose result is unused): one each."""
    if d is None or not regs.is_zero(d):
        raise unsupported(i, "POPC.INC returning a value (each lane's rank among the active lanes)")
    return x.atomic(space, "add", addr, x.k32(1), None, False)


def _float_add(x: Ctx, i, space, addr, vals):
    """RED/ATOM/ATOMG/ATOMS .ADD.F32.FTZ.RN and .ADD.F64.RN: a float add of the memory word
    (pair), rounded to nearest; .F32 flushes denormal inputs and results to zero (as PTX's
    atom.add.f32 does). The result depends on the order of the adds where they round, on the
    chip too; both back ends agree where it does not."""
    if _atomic_op(i) != "add" or "F16x2" in i.mods:
        raise unsupported(i, "float atomics other than ADD.F32 and ADD.F64")
    if "F64" in i.mods:
        value = x.read64(vals[0])
        old = x.atomic_update(space, addr, 8, lambda y, w: _words64(y, y.fadd(y.join(*w), value, "f64", "rn")))
        return x.join(*old)
    value = flush(x, x.read(vals[0]))
    return x.atomic_update(space, addr, 4, lambda y, w: [flush(y, y.fadd(flush(y, w[0]), value, "f32", "rn"))])[0]


def _words64(x: Ctx, v):
    return [x.lo(v), x.hi(v)]


def async_copy(space: str):
    """LDGSTS[.E][.BYPASS][.64|.128] [Rs], [Ra.64]: copy global memory to shared memory. The
    copy is done when the instruction issues: a kernel may read the data only after
    LDGDEPBAR + DEPBAR.LE SB0, n (or a barrier after them) say it has arrived, so finishing
    it early is one of the chip's possible timings."""
    def sem(x: Ctx, i):
        if len(i.ops) != 2:
            raise unsupported(i, "an async copy with a source size (zero fill)")
        nbytes, _ = width(i)
        dst, src = i.ops
        words = x.load("global", address(x, i, src, "global"), nbytes, False)
        x.store(space, address(x, i, dst, space), nbytes, words)
    sem.__name__ = f"async_copy_{space}"
    return sem

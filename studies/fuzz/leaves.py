"""The straight-line statements of a generated kernel: arithmetic, traces, warp and block
collectives, shared-memory exchanges and atomics (control flow is in :mod:`generate`).

Each ``emit_*`` takes the generator ``g`` (its random stream, names and output), the
context ``ctx`` (depth, whether the whole block is here) and ``mask``, the C text of the
set of lanes that execute the statement, and writes lines. The rules that keep a program
defined are kept here, statement by statement:

* every ``*_sync`` gets ``mask`` itself: exactly the lanes that execute it (or, with the knob
  ``split_masks``, exactly the lanes on the caller's side of a lane bit: two groups, each
  naming only its own lanes);
* a shuffle's result is used only when its source lane (PTX ``shfl.sync``'s rule, in
  ``wb_src`` of the prelude) is in the mask, else a fixed value replaces it;
* a shared-memory exchange writes the thread's own slot, synchronises (``__syncwarp(mask)``
  or ``__syncthreads``), reads slots of lanes in the mask only, and synchronises again
  before any slot is written again;
* atomics are commutative (add, or, and, xor, max, min) on counters whose final value is
  recorded; the old value they return is never used;
* arithmetic is unsigned (wrapping), shifts are masked to 0..31, every divisor is non-zero
  and signed division never divides by -1.
"""
from __future__ import annotations

VARS = ("a0", "a1", "a2", "a3")

BINARY = (
    "({a} + {b})", "({a} - {b})", "({a} * {b})", "({a} ^ {b})", "({a} & {b})", "({a} | {b})",
    "({a} << ({b} & 31u))", "({a} >> ({b} & 31u))", "(unsigned)((int){a} >> ({b} & 31u))",
    "min({a}, {b})", "max({a}, {b})", "(unsigned)max((int){a}, (int){b})", "__umulhi({a}, {b})",
    "({a} < {b} ? {a} : {b} + 1u)", "__funnelshift_l({a}, {b}, {k}u)",
    "__byte_perm({a}, {b}, 0x{sel:04x}u)",
)
DIVISION = {   # by knob: 32-bit, 16-bit (nvcc's float-based helper) and 64-bit (a subroutine)
    "div32": ("({a} / ({b} | 1u))", "({a} % (({b} & 0xffu) + 1u))", "({a} / {k}u)", "({a} % {k}u)",
              "(unsigned)((int){a} / -(int)(({b} % 7u) + 2u))",
              "(unsigned)((int){a} % (int)(({b} % 5u) + 1u))", "(unsigned)((int){a} / {k})"),
    "div16": ("(unsigned)((unsigned short){a} / (unsigned short)({b} | 1u))",
              "(unsigned)((unsigned short){a} % (unsigned short)(({b} & 0xfu) + 1u))"),
    "div64": ("(unsigned)((((unsigned long long){a} << 32) | {b}) / (((unsigned long long){b} << 5) | 7ull))",),
}
UNARY = (
    "(unsigned)__popc({a})", "__brev({a})", "(unsigned)__clz({a})", "(unsigned)__ffs({a})",
    "(~{a})", "(0u - {a})", "({a} * 0x9e3779b9u)",
)
SHFL = {"idx": ("__shfl_sync", 0), "up": ("__shfl_up_sync", 1), "down": ("__shfl_down_sync", 2),
        "xor": ("__shfl_xor_sync", 3)}
REDUCE = ("add", "min", "max", "and", "or", "xor")
# counters after the per-thread words: (atomic, slot); slots 2 and 5 start at 0xffffffff
ATOMICS = (("atomicAdd", 0), ("atomicOr", 1), ("atomicAnd", 2), ("atomicXor", 3),
           ("atomicMax", 4), ("atomicMin", 5), ("atomicAdd", 6))
COUNTER_INIT = (0, 0, 0xFFFFFFFF, 0, 0, 0xFFFFFFFF, 0, 0)
# the statements that take ``mask`` as a warp collective's member mask (knob split_masks)
WARP_COLLECTIVES = frozenset({"vote", "shfl", "match", "reduce", "syncwarp", "exchange_warp"})


# ---------------------------------------------------------------- values and conditions

def atom(g) -> str:
    """A variable, a loop index, the lane or a constant."""
    r = g.rng.random()
    if r < 0.6:
        return g.rng.choice(VARS)
    if r < 0.75 and g.indices:
        return g.rng.choice(g.indices)
    if r < 0.85:
        return g.rng.choice(("lane", "t", "gid"))
    return f"0x{g.rng.getrandbits(32):08x}u"


def expr(g, depth: int = 2) -> str:
    """An unsigned expression without undefined behaviour."""
    rng = g.rng
    if depth == 0 or rng.random() < 0.25:
        return atom(g)
    a, b = expr(g, depth - 1), expr(g, depth - 1)
    r = rng.random()
    kinds = [k for k in DIVISION if g.knobs.weight(k) > 0]
    if r < 0.2 and kinds:
        kind = rng.choices(kinds, [g.knobs.weight(k) for k in kinds])[0]
        g.features.add(kind)
        template = rng.choice(DIVISION[kind])
    elif r < 0.35:
        template = rng.choice(UNARY)
    else:
        template = rng.choice(BINARY)
    text = template.format(a=a, b=b, k=rng.randint(2, 31), sel=rng.getrandbits(15))
    return g.site("expression", text, {"left": a, "right": b})


def data_cond(g) -> str:
    """A per-lane condition on data (its lanes are known only at run time)."""
    rng, v = g.rng, g.rng.choice(VARS)
    return g.site("condition", rng.choice((
        f"({v} & {1 << rng.randrange(8)}u) != 0u", f"{v} % {rng.randint(2, 5)}u == 0u",
        f"{v} < {rng.choice(VARS)}", f"(int){v} < 0", f"{v} > 0x{rng.getrandbits(32):08x}u",
        f"(t >> 5) == {rng.randrange(4)}u", f"gid % 3u == {rng.randrange(3)}u",
        f"blockIdx.x == {rng.randrange(2)}u", f"(({v} ^ lane) & 3u) == 1u",
    )), {"true": "true", "false": "false"})


def lane_cond(g) -> tuple[str, int]:
    """A condition on the lane number alone, and the 32-bit set of lanes where it holds."""
    rng = g.rng
    kind = rng.randrange(6)
    if kind == 0:
        k = rng.choice((1, 2, 4, 8, 16, 3, 5, 12, 24, 17))
        return f"(lane & {k}u) != 0u", _lanes(lambda l: l & k)
    if kind == 1:
        k = rng.randint(1, 31)
        return f"lane < {k}u", _lanes(lambda l: l < k)
    if kind == 2:
        k = rng.randint(2, 5)
        r = rng.randrange(k)
        return f"lane % {k}u == {r}u", _lanes(lambda l: l % k == r)
    if kind == 3:
        lo = rng.randrange(31)
        n = rng.randint(1, 32 - lo)
        return f"lane - {lo}u < {n}u", _lanes(lambda l: lo <= l < lo + n)
    if kind == 4:
        k = rng.randrange(32)
        return f"lane == {k}u", _lanes(lambda l: l == k)
    s = rng.randrange(5)
    return f"((lane >> {s}) & 1u) == 0u", _lanes(lambda l: not (l >> s) & 1)


def _lanes(pred) -> int:
    return sum(1 << lane for lane in range(32) if pred(lane))


def low_entropy(g) -> str:
    """A value few lanes differ in (so that match and uni find equal values)."""
    v = g.rng.choice(VARS)
    return g.rng.choice((f"({v} & 1u)", f"({v} % 3u)", "(lane >> 3)", "(lane & 4u)", "7u",
                         f"(({v} >> 4) & 1u)"))


# ---------------------------------------------------------------- plain statements

def emit_assign(g, ctx, mask: str) -> None:
    rng = g.rng
    if rng.random() < 0.2:
        g.features.add("u64")
        a, b = expr(g, 1), expr(g, 1)
        g.emit(ctx.depth, rng.choice((
            f"w0 = w0 * 0x9e3779b97f4a7c15ull + {a};", f"w0 ^= w0 >> {rng.randint(1, 63)};",
            f"w0 = ((unsigned long long){a} << 32) | {b};",
            f"{rng.choice(VARS)} += (unsigned)(w0 >> 32) ^ (unsigned)w0;",
            f"w0 = w0 / (((unsigned long long){a} << 3) | 1ull);" if g.knobs.weight("div64") else
            f"w0 -= (unsigned long long){b} * 3ull;")))
        return
    op = rng.choice(("=", "+=", "^="))
    g.emit(ctx.depth, f"{rng.choice(VARS)} {op} {expr(g)};")


def emit_trace(g, ctx, mask: str) -> None:
    v = g.rng.choice(VARS)
    g.emit(ctx.depth, g.rng.choice((f"o[4] = o[4] * 31u + {v};", f"o[5] ^= {v} + {g.rng.randrange(1 << 16)}u;")))


def final_trace(g, depth: int) -> None:
    """The thread's last words: its variables (before it returns, or at the end); with the
    knob ``float``, its float variables too (as integers: they hold nothing else)."""
    floats = " ^ ((unsigned)(int)f0 << 12) ^ (unsigned)(int)f1" if g.knobs.weight("float") else ""
    g.emit(depth, f"o[0] = a0; o[1] = a1; o[2] = a2{floats}; o[3] = a3 ^ (unsigned)w0 ^ (unsigned)(w0 >> 32);")


def emit_atomic(g, ctx, mask: str) -> None:
    g.features.add("atomic")
    name, slot = g.rng.choice(ATOMICS)
    value = g.rng.choice(VARS) if slot != 6 else "1u"
    index = f"{slot}u" if slot != 6 else "6u + (lane & 1u)"
    g.emit(ctx.depth, f"{name}(&cnt[{index}], {value});")


# ---------------------------------------------------------------- warp collectives

def emit_vote(g, ctx, mask: str) -> None:
    rng, v, c = g.rng, g.rng.choice(VARS), data_cond(g)
    kind = rng.choice(("ballot", "any", "all", "uni"))
    g.features.add(f"vote-{kind}")
    g.emit(ctx.depth, {
        "ballot": f"{v} ^= __ballot_sync({mask}, {c});",
        "any": f"{v} += __any_sync({mask}, {c}) ? 0x11u : 0x7u;",
        "all": f"{v} = {v} * 5u + (unsigned)__all_sync({mask}, {c});",
        "uni": f"{v} += (unsigned)__uni_sync({mask}, {low_entropy(g)} != 0u) << 3;",
    }[kind])


def emit_shfl(g, ctx, mask: str) -> None:
    rng = g.rng
    mode = rng.choice(tuple(SHFL))
    func, code = SHFL[mode]
    width = rng.choice((32, 32, 32, 16, 8, 4, 2))
    wide = rng.random() < 0.3
    g.features.update({f"shfl-{mode}", f"shfl-width-{width}"} | ({"shfl-64"} if wide else set()))
    if mode == "idx":
        b = rng.choice((f"{rng.randrange(32)}u", f"(lane + {rng.randrange(1, 32)}u) & 31u",
                        f"{rng.choice(VARS)} & 31u", f"lane ^ {rng.randrange(1, 32)}u", "31u - lane"))
    else:
        b = f"{rng.randrange(1, width) if width > 1 else 0}u"
    bn, rn = g.fresh("b"), g.fresh("r")
    width_arg = "" if width == 32 and rng.random() < 0.5 else f", {width}"
    src = "w0" if wide else rng.choice(VARS)
    typ, fallback = ("unsigned long long", "0x5a5aull") if wide else ("unsigned", "0x5a5au")
    dst = "w0" if wide else rng.choice(VARS)
    g.emit(ctx.depth, f"const unsigned {bn} = {b};")
    g.emit(ctx.depth, f"const {typ} {rn} = {func}({mask}, {src}, {bn}{width_arg});")
    g.emit(ctx.depth, f"{dst} {rng.choice(('+=', '^='))} ((({mask}) >> wb_src({code}u, lane, {bn}, "
                      f"{width}u)) & 1u) ? {rn} : {fallback};")


def emit_match(g, ctx, mask: str) -> None:
    rng, v = g.rng, g.rng.choice(VARS)
    value = low_entropy(g)
    if rng.random() < 0.3:
        value = f"((unsigned long long){value} << 33 | 5ull)"
    if rng.random() < 0.5:
        g.features.add("match-any")
        g.emit(ctx.depth, f"{v} ^= __match_any_sync({mask}, {value});")
        return
    g.features.add("match-all")
    pn, rn = g.fresh("p"), g.fresh("r")
    g.emit(ctx.depth, f"int {pn};")
    g.emit(ctx.depth, f"const unsigned {rn} = __match_all_sync({mask}, {value}, &{pn});")
    g.emit(ctx.depth, f"{v} += {rn} ^ ((unsigned){pn} << 7);")


def emit_reduce(g, ctx, mask: str) -> None:
    rng, v, a = g.rng, g.rng.choice(VARS), g.rng.choice(VARS)
    op = rng.choice(REDUCE)
    signed = op in ("add", "min", "max") and rng.random() < 0.5
    g.features.add(f"reduce-{op}" + ("-signed" if signed else ""))
    arg = f"(int){a}" if signed else a
    g.emit(ctx.depth, f"{v} {rng.choice(('+=', '^='))} (unsigned)__reduce_{op}_sync({mask}, {arg});")


def emit_syncwarp(g, ctx, mask: str) -> None:
    g.features.add("syncwarp")
    g.emit(ctx.depth, f"__syncwarp({mask});")


def emit_exchange_warp(g, ctx, mask: str) -> None:
    rng, sn = g.rng, g.fresh("s")
    g.features.add("exchange-warp")
    src = rng.choice((f"(lane + {rng.randrange(1, 32)}u) & 31u", f"lane ^ {rng.randrange(1, 32)}u",
                      f"31u - (unsigned)__clz({mask})", f"(unsigned)__ffs({mask}) - 1u"))
    g.emit(ctx.depth, f"sh[t] = {rng.choice(VARS)};")
    g.emit(ctx.depth, f"__syncwarp({mask});")
    g.emit(ctx.depth, f"const unsigned {sn} = {src};")
    g.emit(ctx.depth, f"{rng.choice(VARS)} += ((({mask}) >> {sn}) & 1u) ? sh[(t & ~31u) + {sn}] : 0u;")
    g.emit(ctx.depth, f"__syncwarp({mask});")


# ---------------------------------------------------------------- block-uniform only

def emit_block_barrier(g, ctx, mask: str) -> None:
    rng, v, c = g.rng, g.rng.choice(VARS), data_cond(g)
    kind = rng.choice(("plain", "count", "and", "or"))
    g.features.add("syncthreads" if kind == "plain" else f"syncthreads-{kind}")
    g.emit(ctx.depth, {
        "plain": "__syncthreads();",
        "count": f"{v} += (unsigned)__syncthreads_count({c});",
        "and": f"{v} ^= __syncthreads_and({c}) ? 0x100u : 0x3u;",
        "or": f"{v} += (unsigned)__syncthreads_or({c}) << 2;",
    }[kind])


def emit_exchange_block(g, ctx, mask: str) -> None:
    rng = g.rng
    g.features.add("exchange-block")
    index = rng.choice((f"(t + {rng.randrange(1, 128)}u) % blockDim.x", "blockDim.x - 1u - t",
                        f"(t ^ {rng.randrange(1, 64)}u) % blockDim.x"))
    g.emit(ctx.depth, f"sh[t] = {rng.choice(VARS)};")
    g.emit(ctx.depth, "__syncthreads();")
    g.emit(ctx.depth, f"{rng.choice(VARS)} ^= sh[{index}];")
    g.emit(ctx.depth, "__syncthreads();")


LEAVES = {
    "assign": emit_assign, "trace": emit_trace, "atomic": emit_atomic, "vote": emit_vote,
    "shfl": emit_shfl, "match": emit_match, "reduce": emit_reduce, "syncwarp": emit_syncwarp,
    "exchange_warp": emit_exchange_warp, "block_barrier": emit_block_barrier,
    "exchange_block": emit_exchange_block,
}
BLOCK_UNIFORM = frozenset({"block_barrier", "exchange_block"})

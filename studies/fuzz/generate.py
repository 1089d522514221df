"""Random divergent CUDA kernels that are well-defined by construction.

``generate(seed, knobs)`` returns a :class:`Program`: the text of one ``extern "C"`` kernel
``fz<seed>(unsigned *out, const unsigned *in)``, its launch (1-D block of 1..1024 threads,
partial warps included, 1..8 blocks) and its buffers. The same seed and knobs give the same
text. The kernel mixes nested if/else and switch on lane bits and on data, loops with
per-lane trip counts, break / continue / early return, votes, shuffles, match, reduce,
``__syncwarp``, block barriers, shared-memory exchanges, atomics and integer arithmetic
(statements in :mod:`leaves`), with the knob ``float`` binary32/64 arithmetic on exact
values too (:mod:`float_leaves`), and each thread writes a trace of its values to its own
words of ``out`` (6 per thread, then 8 atomic counters).

How it stays defined (the CUDA rules; the CPU model in :mod:`cpu_model` checks them):

* The generator tracks the active mask symbolically: every block of code knows a C
  expression for exactly the set of lanes that execute it. Starting from ``m0`` (the lanes
  that exist in the warp, from ``blockDim``), a condition on lane bits gives ``mask & K``
  with K computed here; a data condition is evaluated once into a ``bool`` and turned into
  a mask by ``__ballot_sync(mask, cond)`` before the branch, executed by every lane of the
  mask; a switch on data does the same per case body (with fall-through: the union).
* A loop with a per-lane trip count keeps its live lanes in a variable: each iteration
  starts with ``__ballot_sync(live, go)`` by all live lanes, the lanes with ``!go`` leave.
* An exit (return, break, continue) takes the lanes of its block's mask out of every
  enclosing mask (``mask & ~exited``); so the exited set must be an expression the lanes
  left behind can evaluate: only variables declared at the level of the construct exited
  (the function for return, the loop body for break and continue). A break after a
  ``continue`` of the same iteration is not generated (the continued lanes could not learn
  of it); returns are not generated inside loops.
* ``__syncthreads*`` and block-wide exchanges only where every thread of the block is:
  the kernel's top level and loops with a constant trip count in it, and none after an
  early return.
* Everything else (shuffle sources, shared memory, atomics, arithmetic) is in :mod:`leaves`.
"""
from __future__ import annotations

import itertools
import random
import re
from dataclasses import dataclass, field, replace

from . import float_leaves, leaves
from .knobs import Knobs

WORDS_PER_THREAD = 6
# every straight-line statement kind and the function that writes it
LEAVES = {**leaves.LEAVES, "float": float_leaves.emit_float}
CONTROL = ("if_lane", "if_data", "switch_lane", "switch_data", "loop_lane", "loop_uniform")

PRELUDE = r"""#ifndef WB_FUZZ_PRELUDE
#define WB_FUZZ_PRELUDE
// The lane that a shuffle of `mode` (0 idx, 1 up, 2 down, 3 xor) reads for `lane`, as PTX
// shfl.sync defines it for CUDA's width argument (out of range: the lane itself).
static __device__ __forceinline__ unsigned wb_src(unsigned mode, unsigned lane, unsigned b, unsigned width) {
    unsigned seg = (32u - width) & 31u, hi = (lane & seg) | ((mode == 1u ? 0u : 31u) & ~seg);
    int j;
    bool ok;
    if (mode == 1u) { j = (int)lane - (int)b; ok = j >= (int)hi; }
    else if (mode == 2u) { j = (int)(lane + b); ok = j <= (int)hi; }
    else if (mode == 3u) { j = (int)(lane ^ (b & 31u)); ok = j <= (int)hi; }
    else { j = (int)((lane & seg) | (b & 31u & ~seg)); ok = j <= (int)hi; }
    return ok ? (unsigned)j : lane;
}
#endif
"""


@dataclass(frozen=True)
class Program:
    """One generated kernel and how to launch it."""
    seed: int
    name: str
    source: str                  # the kernel's CUDA text (needs PRELUDE before it)
    block: int
    grid: int
    in_words: tuple[int, ...]
    out_init: tuple[int, ...]
    features: tuple[str, ...]

    @property
    def threads(self) -> int:
        return self.block * self.grid


@dataclass(frozen=True)
class Mask:
    """A C expression for the lanes executing here, and the brace depth of its variables."""
    text: str
    depth: int

    def minus(self, other: "Mask") -> "Mask":
        return Mask(f"({self.text} & ~{other.text})", max(self.depth, other.depth))


@dataclass
class Loop:
    body_depth: int
    live: str                    # the variable holding the loop's live lanes
    continued: bool = False      # a continue was generated in this iteration's body


@dataclass(frozen=True)
class Ctx:
    depth: int                   # brace depth of the code being written (function body: 1)
    level: int = 0               # nesting of control constructs
    uniform: bool = True         # every thread of the block executes here
    loop: Loop | None = None
    loop_top: bool = False       # the top level of a loop body
    exits: frozenset = field(default_factory=frozenset)   # exits allowed: return/break/continue


@dataclass(frozen=True)
class Exit:
    kind: str
    mask: Mask

    def neutral(self) -> "Exit":
        """The same exit taking no lane (its statement was deleted): an empty-set text of the
        same length and shape, so that every later decision of the generator stays the same."""
        text = self.mask.text
        empty = "(0u" + " " * (len(text) - 4) + ")" if text.startswith("(") else "0u".ljust(len(text))
        return Exit(self.kind, Mask(empty, self.mask.depth))


@dataclass(frozen=True)
class Site:
    """A place a reducer may edit: a statement (delete it), a condition, a trip count, an
    expression, the launch; ``within`` are the statements around it (outermost first)."""
    id: int
    kind: str
    labels: tuple[str, ...]      # one per alternative
    within: tuple[int, ...]


# the names the kernel's first lines declare (see Generator.kernel)
PROLOGUE_NAMES = frozenset({"sh", "t", "lane", "n", "gid", "left", "m0", "o", "cnt", "a0", "a1", "a2", "a3", "w0"})


class Generator:
    """Writes one kernel; see the module docstring for the rules."""

    def __init__(self, seed: int, knobs: Knobs, edits: dict[int, int] | None = None):
        self.rng = random.Random(seed)
        self.knobs = knobs
        self.edits = edits or {}          # site id -> index of the alternative chosen there
        self.sites: list[Site] = []
        self.open: list[int] = []         # the statement sites being written, outermost first
        self.lines: list[str] = []
        self.counter = itertools.count()
        self.indices: list[str] = []      # loop indices in scope (read-only values)
        self.features: set[str] = set()
        self.returned = False             # an early return was generated (no block barriers after)
        self.block_threads = 0            # threads per block, chosen before the kernel is written

    def fresh(self, prefix: str) -> str:
        """A new local name; never one the kernel's prologue declares (``m0``)."""
        name = f"{prefix}{next(self.counter)}"
        return self.fresh(prefix) if name in PROLOGUE_NAMES else name

    def emit(self, depth: int, text: str) -> None:
        self.lines.append("    " * depth + text)

    def site(self, kind: str, value, alternatives: dict):
        """``value``, or the alternative the edits choose at this site (``alternatives``: label
        -> value). The random stream is drawn the same either way, so that site ids and every
        other choice stay stable under edits."""
        sid = len(self.sites)
        self.sites.append(Site(sid, kind, tuple(alternatives), tuple(self.open)))
        choice = self.edits.get(sid)
        return value if choice is None else list(alternatives.values())[choice]

    # ------------------------------------------------------------ blocks of statements
    def block(self, ctx: Ctx, mask: Mask, count: int) -> tuple[list[Exit], Mask]:
        """``count`` statements executed by ``mask``; the exits they take, the mask after."""
        exits: list[Exit] = []
        for _ in range(count):
            stmt_ctx = ctx
            if ctx.loop_top:
                allowed = {"continue"} if ctx.loop.continued else {self.rng.choice(("break", "continue"))}
                stmt_ctx = replace(ctx, exits=frozenset(allowed))
            kind = self.choose(stmt_ctx, mask)
            if kind == "exit":
                exits += self.deletable(kind, lambda: [self.exit(stmt_ctx, mask)])
                return exits, mask
            taken = self.deletable(kind, lambda: self.statement(kind, stmt_ctx, mask))
            if taken:
                exits += taken
                gone = _union([e.mask for e in taken])
                if ctx.loop_top and any(e.kind == "break" for e in taken):
                    self.emit(ctx.depth, f"{ctx.loop.live} &= ~{gone.text};")
                mask = mask.minus(gone)
                if len(mask.text) > 160:
                    name = self.fresh("m")
                    self.emit(ctx.depth, f"const unsigned {name} = {mask.text};")
                    mask = Mask(name, ctx.depth)
        return exits, mask

    def deletable(self, kind: str, write) -> list[Exit]:
        """``write()`` one statement as a site that an edit deletes: its lines and features
        are dropped and its exits take no lanes (the masks after it stay exact)."""
        start, features = len(self.lines), set(self.features)
        delete = self.site(f"statement:{kind}", False, {"delete": True})
        self.open.append(len(self.sites) - 1)
        taken = write()
        self.open.pop()
        if not delete:
            return taken
        del self.lines[start:]
        self.features = features
        return [e.neutral() for e in taken]

    def choose(self, ctx: Ctx, mask: Mask) -> str:
        kinds, weights = [], []
        for kind, weight in self.knobs.weights.items():
            if weight > 0 and self.allowed(kind, ctx, mask):
                kinds.append(kind)
                weights.append(weight)
        return self.rng.choices(kinds, weights)[0] if kinds else "assign"

    def allowed(self, kind: str, ctx: Ctx, mask: Mask) -> bool:
        if kind in CONTROL and kind != "loop_uniform":
            return ctx.level < self.knobs.max_depth
        if kind == "loop_uniform":
            return ctx.level < self.knobs.max_depth
        if kind == "exit":
            return bool(self.exit_kinds(ctx, mask))
        if kind in leaves.BLOCK_UNIFORM:
            return ctx.uniform and not self.returned
        return kind in LEAVES

    def exit_kinds(self, ctx: Ctx, mask: Mask) -> list[str]:
        """The exits that may end this block (never at the top of what they exit)."""
        out = []
        if "return" in ctx.exits and ctx.depth > 1 and mask.depth <= 1:
            out.append("return")
        if ctx.loop and not ctx.loop_top and mask.depth <= ctx.loop.body_depth:
            if "continue" in ctx.exits:
                out.append("continue")
            if "break" in ctx.exits and not ctx.loop.continued:
                out.append("break")
        return out

    def statement(self, kind: str, ctx: Ctx, mask: Mask) -> list[Exit]:
        self.features.add(kind.replace("_", "-"))
        if kind in LEAVES:
            LEAVES[kind](self, ctx, self.split(kind, mask.text))
            return []
        return getattr(self, kind)(ctx, mask)

    def split(self, kind: str, mask: str) -> str:
        """``mask``, or (knob ``split_masks``, for warp collectives) the part of it on this
        lane's side of a lane bit: the lanes there call the collective as two groups, each
        with exactly its own lanes as the mask (ptxas then takes the ``*_sync`` slow paths)."""
        if kind not in leaves.WARP_COLLECTIVES or not self.knobs.split_masks:
            return mask
        if self.rng.randrange(100) >= self.knobs.split_masks:
            return mask
        bit = self.rng.randrange(5)
        high = sum(1 << lane for lane in range(32) if lane >> bit & 1)
        self.features.add("split-mask")
        return f"(({mask}) & (((lane >> {bit}) & 1u) ? 0x{high:08x}u : 0x{high ^ 0xFFFFFFFF:08x}u))"

    def exit(self, ctx: Ctx, mask: Mask) -> Exit:
        kind = self.rng.choice(self.exit_kinds(ctx, mask))
        self.features.add(kind)
        if kind == "return":
            leaves.final_trace(self, ctx.depth)
            self.returned = True
        elif kind == "continue":
            ctx.loop.continued = True
        self.emit(ctx.depth, f"{kind};")
        return Exit(kind, mask)

    def nested(self, ctx: Ctx, mask: Mask, **changes) -> tuple[list[Exit], Mask]:
        """A nested block of statements, one level and one brace deeper."""
        inner = replace(ctx, depth=ctx.depth + 1, level=ctx.level + 1, uniform=False,
                        loop_top=False, **changes)
        lo, hi = self.knobs.block_statements
        return self.block(inner, mask, self.rng.randint(lo, hi))

    # ------------------------------------------------------------ control flow
    def if_lane(self, ctx: Ctx, mask: Mask) -> list[Exit]:
        cond, lanes = self.site("if_lane", leaves.lane_cond(self),
                                {"then": ("true", 0xFFFFFFFF), "else": ("false", 0)})
        self.emit(ctx.depth, f"if ({cond}) {{")
        taken, _ = self.nested(ctx, Mask(f"({mask.text} & 0x{lanes:08x}u)", mask.depth))
        if self.rng.random() < 0.5:
            self.emit(ctx.depth, "} else {")
            more, _ = self.nested(ctx, Mask(f"({mask.text} & 0x{~lanes & 0xFFFFFFFF:08x}u)", mask.depth))
            taken += more
        self.emit(ctx.depth, "}")
        return taken

    def if_data(self, ctx: Ctx, mask: Mask) -> list[Exit]:
        cn, mt = self.fresh("c"), self.fresh("mt")
        self.emit(ctx.depth, f"const bool {cn} = {leaves.data_cond(self)};")
        self.emit(ctx.depth, f"const unsigned {mt} = __ballot_sync({mask.text}, {cn});")
        self.emit(ctx.depth, f"if ({cn}) {{")
        taken, _ = self.nested(ctx, Mask(mt, ctx.depth))
        if self.rng.random() < 0.5:
            self.emit(ctx.depth, "} else {")
            more, _ = self.nested(ctx, Mask(f"({mask.text} & ~{mt})", max(mask.depth, ctx.depth)))
            taken += more
        self.emit(ctx.depth, "}")
        return taken

    def switch_lane(self, ctx: Ctx, mask: Mask) -> list[Exit]:
        rng = self.rng
        selector, value = rng.choice((("lane & 3u", lambda l: l & 3), ("lane % 5u", lambda l: l % 5),
                                      ("lane >> 3", lambda l: l >> 3), ("(lane * 7u) & 7u", lambda l: l * 7 & 7)))
        values = sorted({value(lane) for lane in range(32)})
        bodies = self.partition(values)

        def own(labels, default):     # default's labels: the values no case names
            hit = [lane for lane in range(32) if value(lane) in labels]
            return Mask(f"({mask.text} & 0x{sum(1 << lane for lane in hit):08x}u)", mask.depth)
        return self.switch(ctx, selector, bodies, own)

    def switch_data(self, ctx: Ctx, mask: Mask) -> list[Exit]:
        rng = self.rng
        sn = self.fresh("sel")
        n = rng.randint(3, 8)
        self.emit(ctx.depth, f"const unsigned {sn} = {leaves.expr(self, 1)} % {n}u;")
        bodies = self.partition(list(range(n)))

        def own(labels, default):
            cond = " || ".join(f"{sn} == {v}u" for v in labels) if labels else "false"
            name = self.fresh("ms")
            self.emit(ctx.depth, f"const unsigned {name} = __ballot_sync({mask.text}, {cond});")
            return Mask(name, ctx.depth)
        return self.switch(ctx, sn, bodies, own)

    def partition(self, values: list[int]) -> list[tuple[list[int], bool]]:
        """Case bodies: (labels, is-default); labels of a body are disjoint, in order."""
        rng = self.rng
        k = rng.randint(1, min(4, len(values)))
        groups: list[list[int]] = [[] for _ in range(k)]
        rest = []
        for v in values:
            (rest if rng.random() < 0.2 else groups[rng.randrange(k)]).append(v)
        bodies = [(g, False) for g in groups if g]
        if rest or rng.random() < 0.3:
            bodies.append((sorted(set(values) - {v for g, _ in bodies for v in g}), True))
        return bodies

    def switch(self, ctx: Ctx, selector: str, bodies, own) -> list[Exit]:
        """A switch whose case bodies get ``own(labels, is_default)`` (plus fall-through)."""
        owns = [own(labels, default) for labels, default in bodies]
        self.emit(ctx.depth, f"switch ({selector}) {{")
        taken: list[Exit] = []
        carried: Mask | None = None
        exits = ctx.exits - {"break"}         # a break here would end the switch
        for i, ((labels, default), body_own) in enumerate(zip(bodies, owns)):
            for v in labels if not default else []:
                self.emit(ctx.depth, f"case {v}u:")
            if default:
                self.emit(ctx.depth, "default:")
            body_mask = body_own if carried is None else Mask(
                f"({body_own.text} | {carried.text})", max(body_own.depth, carried.depth))
            self.emit(ctx.depth, "{")
            more, end = self.nested(ctx, body_mask, exits=exits)
            taken += more
            falls = i + 1 < len(bodies) and self.rng.random() < 0.25 and not more
            if not falls:
                self.emit(ctx.depth + 1, "break;")
            self.emit(ctx.depth, "}")
            carried = end if falls else None
            self.features.add("switch-fallthrough") if falls else None
        self.emit(ctx.depth, "}")
        return taken

    def loop_lane(self, ctx: Ctx, mask: Mask) -> list[Exit]:
        rng = self.rng
        live, trip, i, go, mg = (self.fresh(p) for p in ("ml", "trip", "i", "go", "mg"))
        v = rng.choice(leaves.VARS)
        self.emit(ctx.depth, "{")
        d = ctx.depth + 1
        self.emit(d, f"unsigned {live} = {mask.text};")
        count = rng.choice((f"({v} % 4u) + (lane & 1u);", "lane % 3u;", f"({v} >> 7) & 3u;", f"1u + ({v} & 1u);"))
        self.emit(d, f"const unsigned {trip} = " + self.site("trip", count, {"0": "0u;", "1": "1u;", "2": "2u;"}))
        self.emit(d, f"for (unsigned {i} = 0u; ; ++{i}) {{")
        extra = self.site("loop_extra", f" && {leaves.data_cond(self)}", {"drop": ""}) if rng.random() < 0.3 else ""
        self.emit(d + 1, f"const bool {go} = {i} < {trip}{extra};")
        self.emit(d + 1, f"const unsigned {mg} = __ballot_sync({live}, {go});")
        self.emit(d + 1, f"if (!{go}) break;")
        self.emit(d + 1, f"{live} = {mg};")
        self.indices.append(i)
        body = replace(ctx, depth=d + 1, level=ctx.level + 1, uniform=False, loop_top=True,
                       loop=Loop(d + 1, live))
        lo, hi = self.knobs.block_statements
        self.block(body, Mask(mg, d + 1), rng.randint(max(lo, 1), hi + 1))
        self.indices.pop()
        self.emit(d, "}")
        self.emit(ctx.depth, "}")
        return []

    def loop_uniform(self, ctx: Ctx, mask: Mask) -> list[Exit]:
        i = self.fresh("i")
        trips = self.site("uniform_trip", self.rng.randint(1, 3), {"1": 1})
        self.emit(ctx.depth, f"for (unsigned {i} = 0u; {i} < {trips}u; ++{i}) {{")
        self.indices.append(i)
        inner = replace(ctx, depth=ctx.depth + 1, level=ctx.level + 1, loop_top=False, loop=None,
                        exits=frozenset())
        lo, hi = self.knobs.block_statements
        self.block(inner, mask, self.rng.randint(max(lo, 1), hi))
        self.indices.pop()
        self.emit(ctx.depth, "}")
        return []

    # ------------------------------------------------------------ the kernel
    def kernel(self, name: str) -> str:
        self.emit(0, f'extern "C" __global__ void {name}(unsigned *out, const unsigned *in) {{')
        for line in (
                f"__shared__ unsigned sh[{max(128, self.block_threads)}];",
                "const unsigned t = threadIdx.x, lane = t & 31u;",
                "const unsigned n = gridDim.x * blockDim.x, gid = blockIdx.x * blockDim.x + t;",
                "const unsigned left = blockDim.x - (t & ~31u);",
                "const unsigned m0 = left >= 32u ? 0xffffffffu : (1u << left) - 1u;",
                f"unsigned *o = out + gid * {WORDS_PER_THREAD}u, *cnt = out + n * {WORDS_PER_THREAD}u;",
                "unsigned a0 = in[gid], a1 = in[(gid * 7u + 3u) % n], a2 = gid * 0x9e3779b9u;",
                "unsigned a3 = lane + 0x1000u * blockIdx.x;",
                "unsigned long long w0 = ((unsigned long long)a1 << 32) | a0;"):
            self.emit(1, line)
        if self.knobs.weight("float"):
            self.emit(1, float_leaves.DECLARATION)
        lo, hi = self.knobs.top_statements
        top = Ctx(depth=1, exits=frozenset({"return"}))
        self.block(top, Mask("m0", 1), self.rng.randint(lo, hi))
        leaves.final_trace(self, 1)
        self.emit(0, "}")
        return "\n".join(self.lines) + "\n"


def _union(masks: list[Mask]) -> Mask:
    if len(masks) == 1:
        return Mask(masks[0].text if masks[0].text.startswith("(") else f"({masks[0].text})", masks[0].depth)
    return Mask("(" + " | ".join(m.text for m in masks) + ")", max(m.depth for m in masks))


def generate(seed: int, knobs: Knobs) -> Program:
    """The program of ``seed`` under ``knobs`` (the same pair always gives the same program)."""
    return generate_edited(seed, knobs)[0]


def generate_edited(seed: int, knobs: Knobs, edits: dict[int, int] | None = None,
                    name: str | None = None) -> tuple[Program, list[Site]]:
    """The program of ``seed`` with ``edits`` (site id -> alternative index) applied, and the
    sites it has (the same for every ``edits``): what ``warpboard reduce`` shrinks."""
    gen = Generator(seed, knobs, edits)
    name = name or f"fz{seed}"
    block = gen.rng.choice(knobs.block_sizes)
    block = gen.site("block", block, {"32": 32} if block > 32 else {})
    grid = gen.site("grid", gen.rng.choice(knobs.grids), {"1": 1})
    gen.block_threads = block
    source = _tidy(gen.kernel(name)) if gen.edits else gen.kernel(name)
    threads = block * grid
    data = random.Random(seed ^ 0x5EED)
    in_words = tuple(data.getrandbits(32) for _ in range(threads))
    out_init = (0,) * (threads * WORDS_PER_THREAD) + leaves.COUNTER_INIT
    return Program(seed, name, source, block, grid, in_words, out_init, tuple(sorted(gen.features))), gen.sites


def _tidy(source: str) -> str:
    """The masks of deleted exits written plainly again: their padding out, ``(0u) | x`` as
    ``x`` and ``(x & ~(0u))`` as ``(x)``."""
    source = re.sub(r"0u {2,}", "0u ", source)
    source = re.sub(r"0u (?=[);])", "0u", source)
    rules = ((r"\(\(0u\)\)", "(0u)"), (r"\(0u\) \| ", ""), (r" \| \(0u\)", ""),
             (r" & ~(?:\(0u\)|0u)(?=\))", ""))
    while True:
        before = source
        for pattern, replacement in rules:
            source = re.sub(pattern, replacement, source)
        if source == before:
            return source

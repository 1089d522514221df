"""Where turns mode keeps its bookkeeping: in workgroup memory, or, where that would pass the
device's ``maxComputeSharedMemorySize``, in a scratch slice of the heap of each workgroup's own.

The bookkeeping is three arrays: ``turn_state`` (votes, counters, per-warp masks, each
thread's convergence-barrier masks), ``turn_lanes`` (one word per thread and slot that its
warp-mates scan: offered values, published WARPSYNC masks) and ``turn_pcs`` (each thread's pc,
in two turn-parity halves). They grow with the block: a block of 1024 threads of a program
with seven convergence barriers needs about 57 KiB of them besides the kernel's own shared
memory, and a shader whose workgroup variables pass the device's limit is invalid (NVIDIA's
driver loses the device running one). Such a shader keeps the three arrays in the heap
instead, after the case's buffers: ``ctrl[abi.SCRATCH]`` is the heap word where the slices
start and :attr:`Shader.scratch_words` the words of one workgroup's slice, which the harness
appends to the heap, zeroed. The turn loop's barriers already order buffer memory
(``UniformMemory``), the heap is ``Coherent``, and the bookkeeping's loads and stores are
volatile and its atomics of workgroup scope, so the rules read the same words either way.
"""
from __future__ import annotations

from ... import abi
from ...spirv.enums import MemorySemantics as Sem


def memory_bytes(e) -> int:
    """The workgroup memory the kernel's own memory takes in the shader: its shared memory,
    and the threads' local windows where they live there (translator.emit.mem)."""
    mem = e.memory
    taken = 4 * mem.shared_words if mem.smem is not None else 0
    if mem.local_shared:
        taken += 4 * max(1, mem.local_bytes // 4) * e.nthreads
    return taken


class Bookkeeping:
    """The three bookkeeping arrays, read and written through :meth:`word_ptr`,
    :meth:`quad_load` and :meth:`quad_store` whichever memory holds them."""

    def _declare(self, state_words: int, lane_words: int) -> None:
        """``state_words`` of turn_state, ``lane_words`` of turn_lanes and two words per thread
        of turn_pcs: in workgroup memory when they fit beside the kernel's own (the emitter's
        ``workgroup_limit``), else in a scratch slice of the heap."""
        e, m, u32 = self.e, self.m, self.m.u32()
        self.v4 = m.vec(u32, 4)
        key_words = 2 * self.n
        need = 4 * (state_words + max(lane_words, 4 if lane_words else 0) + key_words) + memory_bytes(e)
        self.spilled = e.workgroup_limit is not None and need > e.workgroup_limit
        self.state = self.lane_state = self.keys = None
        self.scratch_words = 0
        if not self.spilled:
            self.state = m.global_var(m.pointer("Workgroup", m.array(u32, state_words)), "Workgroup", "turn_state")
            if lane_words:
                self.lane_state = m.global_var(m.pointer("Workgroup", m.array(self.v4, max(lane_words, 4) // 4)),
                                               "Workgroup", "turn_lanes")
            self.keys = m.global_var(m.pointer("Workgroup", m.array(self.v4, key_words // 4)), "Workgroup", "turn_pcs")
            return
        # each array from a multiple of 4 words, so a quad is 4 aligned words as in workgroup memory
        lanes_at = -(-state_words // 4) * 4
        keys_at = lanes_at + -(-lane_words // 4) * 4
        self.scratch_words = keys_at + key_words
        self.region_at = {"state": 0, "lanes": lanes_at, "keys": keys_at}
        f = self.f
        group = f.op("UDiv", u32, f.op("ISub", u32, e.gtid, e.tid), e.k(e.nthreads))
        self.scratch_base = m.global_var(m.pointer("Private", u32), "Private", "turn_scratch")
        f.store(self.scratch_base, f.op("IAdd", u32, e.ctrl_load(e.k(abi.SCRATCH)),
                                         f.op("IMul", u32, group, e.k(self.scratch_words))))

    def word_ptr(self, f, region: str, index):
        """A pointer to word ``index`` of ``region`` ("state", "lanes" or "keys"), made in
        function ``f`` (main or a helper)."""
        e, u32 = self.e, self.m.u32()
        if self.spilled:
            at = f.op("IAdd", u32, f.load(u32, self.scratch_base), e.k(self.region_at[region]))
            return f.op("AccessChain", e.sb_u32, e.heap, e.k(0), f.op("IAdd", u32, at, index))
        if region == "state":
            return f.op("AccessChain", self.wg_u32, self.state, index)
        var = self.lane_state if region == "lanes" else self.keys
        quad = f.op("ShiftRightLogical", u32, index, e.k(2))
        return f.op("AccessChain", self.wg_u32, var, quad, f.op("BitwiseAnd", u32, index, e.k(3)))

    def quad_load(self, f, region: str, quad):
        """Words 4 * ``quad`` to 4 * ``quad`` + 3 of ``region`` as a uvec4 (one vector load
        in workgroup memory)."""
        u32 = self.m.u32()
        if self.spilled:
            first = f.op("ShiftLeftLogical", u32, quad, self.e.k(2))
            words = [f.load(u32, self.word_ptr(f, region, f.op("IAdd", u32, first, self.e.k(c))), volatile=True)
                     for c in range(4)]
            return f.op("CompositeConstruct", self.v4, *words)
        var = self.lane_state if region == "lanes" else self.keys
        return f.load(self.v4, f.op("AccessChain", self.m.pointer("Workgroup", self.v4), var, quad), volatile=True)

    def quad_store(self, f, region: str, quad, value, words: tuple[int, ...]) -> None:
        """Store the constant uvec4 ``value`` (whose words are ``words``) at quad ``quad``."""
        u32 = self.m.u32()
        if self.spilled:
            first = f.op("ShiftLeftLogical", u32, quad, self.e.k(2))
            for c, w in enumerate(words):
                f.store(self.word_ptr(f, region, f.op("IAdd", u32, first, self.e.k(c))), self.e.k(w), True)
            return
        var = self.lane_state if region == "lanes" else self.keys
        f.store(f.op("AccessChain", self.m.pointer("Workgroup", self.v4), var, quad), value, True)

    def memory_semantics(self) -> int:
        """The storage classes the bookkeeping lives in, as barrier memory semantics bits."""
        return Sem.WorkgroupMemory | (Sem.UniformMemory if self.spilled else 0)

"""Loads, stores and atomics in the emitted shader, each bounds-checked.

A global address is ``(BUFFER_HI + k) << 32 | BUFFER_LO + offset`` (see :mod:`translator.abi`);
the buffer table in ``ctrl`` gives buffer k's first heap word and size. An access outside
every buffer (or outside shared memory, or the thread's local window) records FAULT with its
pc, thread and address, and ends the thread; it never touches memory. Local memory is an
array in each invocation's Function storage (on lavapipe, a slice of workgroup memory of the
thread's own: :func:`local_in_workgroup`), zeroed at the start, covering the
``program.local_bytes`` below ``abi.STACK_TOP``.

A generic address (LD/ST/ATOM) takes one *route* per memory it may reach: shared memory where
its high word is the shared window's, the thread's local window where it is the local window's
(its low word is then the shared offset or the local address: ``abi.generic_target``), global
memory otherwise; each route is bounds-checked as its memory's own instructions are and runs
inside an ``if`` of its own (SPIR-V cannot select between pointers to different storage
classes), and a thread that no route takes FAULTs. Only the routes the program has memory for,
and that the address may take (``Program.generic_target``), are emitted. Atomics on the thread's
local memory are a plain read-modify-write: no other invocation reaches it, and SPIR-V has no
atomics on Function storage.

64-bit atomics on global memory (``atomicAdd`` on ``double`` or ``unsigned long long``, 64-bit
CAS, min, max, ...) are a compare-and-swap loop on a ``uint64_t`` view of the heap (each buffer
starts on an 8-byte boundary; the device needs ``shaderBufferInt64Atomics``); they must be
8-byte aligned (a FAULT otherwise, as on the chip). Shared memory is an array of 32-bit words,
which SPIR-V cannot view as 64-bit without VK_KHR_workgroup_memory_explicit_layout: 64-bit
atomics there are refused (UNSUPPORTED; the interpreter runs them), and so is a generic 64-bit
atomic whose address may lie in the shared window.
"""
from __future__ import annotations

from contextlib import contextmanager

from .. import abi
from ..errors import UnsupportedInstruction
from ..spirv.enums import Control, Scope
from ..spirv.enums import MemorySemantics as Sem

ATOMIC_OPCODES = {"add": "AtomicIAdd", "and": "AtomicAnd", "or": "AtomicOr", "xor": "AtomicXor",
                  "exch": "AtomicExchange", ("min", False): "AtomicUMin", ("min", True): "AtomicSMin",
                  ("max", False): "AtomicUMax", ("max", True): "AtomicSMax"}


LOCAL_IN_WORKGROUP_BYTES = 8192     # the most workgroup memory the threads' local windows take
VULKAN_MIN_SHARED_BYTES = 16384     # maxComputeSharedMemorySize every Vulkan device offers


def local_in_workgroup(e, words: int) -> bool:
    """Whether the threads' local windows (``words`` each) live in workgroup memory, thread t's
    word w at ``w * threads + t``, instead of an array in each invocation's Function storage:
    on a device without ``tight_loops`` (lavapipe), in free and turns mode, where all of them
    take at most LOCAL_IN_WORKGROUP_BYTES and, with the case's shared memory, at most the
    VULKAN_MIN_SHARED_BYTES every Vulkan device has. Mesa 22.3's lavapipe indexes a Function
    array by a computed word far more slowly (memory/local_divergent shows it; translator/README.md,
    "Local memory and constant banks"). No thread reads another's words."""
    total = 4 * words * e.nthreads
    shared = e.shared_bytes if e.program.uses_shared else 0
    return (not e.tight_loops and e.mode in ("free", "turns") and total <= LOCAL_IN_WORKGROUP_BYTES
            and total + shared <= VULKAN_MIN_SHARED_BYTES)


class MemoryEmitter:
    def __init__(self, e):
        self.e, self.m, self.f = e, e.m, e.f
        u32 = self.m.u32()
        self.shared_words = max(1, (e.shared_bytes + 3) // 4)
        self.smem = None
        if e.program.uses_shared:
            arr = self.m.array(u32, self.shared_words)
            self.smem = self.m.global_var(self.m.pointer("Workgroup", arr), "Workgroup", "shared_mem")
        self.heap64 = None          # the uint64_t view of the heap, made on first use
        self.wg_u32 = self.m.pointer("Workgroup", u32)
        self.local_bytes = e.program.local_bytes
        self.lmem = None
        self.local_shared = False       # the threads' local windows in workgroup memory (below)
        if e.program.uses_local:
            words = max(1, self.local_bytes // 4)
            if local_in_workgroup(e, words):
                self.local_shared = True
                arr = self.m.array(u32, words * e.nthreads)
                self.lmem = self.m.global_var(self.m.pointer("Workgroup", arr), "Workgroup", "local_mem")
            else:
                arr = self.m.array(u32, words)
                zero = self.m.new_id()
                self.m.emit("global", "ConstantNull", arr, zero)
                self.lmem = self.f.local(arr, "local_mem", zero)
        self.fn_u32 = self.m.pointer("Function", u32)

    def zero_local(self) -> None:
        """Zero the thread's own words of a local window in workgroup memory, in straight-line
        stores (lavapipe counts loop trips); a Function array is zeroed where it is declared."""
        if self.local_shared:
            for w in range(max(1, self.local_bytes // 4)):
                self.f.store(self.local_ptr(self.e.k(w)), self.e.k(0))

    def init_shared(self, cooperative: bool) -> None:
        """Zero shared memory, each thread a strided share (turns mode: before the first barrier)."""
        if not cooperative or self.smem is None:
            return
        e, f = self.e, self.f
        e.emit_strided(self.shared_words,
                       lambda i: f.store(f.op("AccessChain", self.wg_u32, self.smem, i), e.k(0)))

    # ---------------------------------------------------------------- addressing
    def _global(self, x, addr, nbytes):
        """(in-bounds?, heap word index, bit shift within the word, address lo, address hi)."""
        e = self.e
        hi, lo = x.hi(addr), x.lo(addr)
        k = x.sub(hi, x.k32(abi.BUFFER_HI))
        off = x.sub(lo, x.k32(abi.BUFFER_LO))
        in_table = x.cmp("lt", k, x.k32(abi.MAX_BUFFERS), False)
        entry = x.shl(x.sel(in_table, k, x.k32(0)), x.k32(1))
        base = e.ctrl_load(x.add(x.k32(abi.TABLE), entry))
        size = e.ctrl_load(x.add(x.k32(abi.TABLE + 1), entry))
        ok = x.band(in_table, self._fits(x, off, size, nbytes))
        return ok, x.add(base, x.shr(off, x.k32(2))), self._shift(x, off, nbytes), lo, hi

    def _fits(self, x, off, size, nbytes):
        """Whether ``nbytes`` at byte ``off`` lie inside ``size`` bytes (a multiple of 4), aligned."""
        if nbytes <= 4:     # aligned and starting inside: it ends inside the same word
            room = x.cmp("lt", off, size, False)
        else:
            room = x.band(x.cmp("ge", size, x.k32(nbytes), False), x.cmp("le", off, x.sub(size, x.k32(nbytes)), False))
        aligned = x.cmp("eq", x.and_(off, x.k32(min(nbytes, 4) - 1)), x.k32(0), False)
        return x.band(room, aligned)

    def _shift(self, x, off, nbytes):
        """Bit position of a byte or halfword in its word (words need none)."""
        return x.shl(x.and_(off, x.k32(3)), x.k32(3)) if nbytes < 4 else None

    def _shared(self, x, addr, nbytes):
        ok = self._fits(x, addr, x.k32(self.shared_words * 4), nbytes)
        return ok, x.shr(addr, x.k32(2)), self._shift(x, addr, nbytes), addr, None

    def _local(self, x, addr, nbytes):
        off = x.sub(addr, x.k32(abi.STACK_TOP - self.local_bytes))
        ok = self._fits(x, off, x.k32(self.local_bytes), nbytes)
        return ok, x.shr(off, x.k32(2)), self._shift(x, off, nbytes), addr, None

    def _where(self, x, space, addr, nbytes):
        where = {"global": self._global, "shared": self._shared, "local": self._local}[space]
        return where(x, addr, nbytes)

    def _routes(self, x, space, addr, nbytes):
        """(routes, bit shift within the word, address lo, address hi): each route a memory the
        access may reach, (space, whether the access lies there and inside it, word index)."""
        if space != "generic":
            ok, index, shift, lo, hi = self._where(x, space, addr, nbytes)
            return [(space, ok, index)], shift, lo, hi
        lo, hi = x.lo(addr), x.hi(addr)
        target = self.e.program.generic_target(x.inst)
        routes = []
        for where, window, memory in (("shared", abi.SHARED_WINDOW, self.smem), ("local", abi.LOCAL_WINDOW, self.lmem)):
            if memory is not None and target in (where, "generic"):
                ok, index, *_ = self._where(x, where, lo, nbytes)       # a window's base has a low word of 0
                routes.append((where, x.band(x.cmp("eq", hi, x.k32(window >> 32), False), ok), index))
        if target in ("global", "generic"):
            ok, index, *_ = self._global(x, addr, nbytes)
            routes.append(("global", ok, index))
        return routes, self._shift(x, lo, nbytes), lo, hi       # the bases are multiples of 4

    def _taken(self, x, routes, lo, hi, also=None):
        """[(space, condition, word index)] for the routes, after noting a FAULT for the enabled
        threads that take none (``also``: what every route needs besides, as alignment)."""
        ok = None
        for _, inside, _ in routes:
            ok = inside if ok is None else x.bor(ok, inside)
        ok = x.kb(False) if ok is None else ok
        cond = self._guarded(x, ok if also is None else x.band(ok, also), lo, hi)
        if len(routes) == 1:
            return [(routes[0][0], cond, routes[0][2])]
        return [(space, x.band(x.en, inside if also is None else x.band(inside, also)), index)
                for space, inside, index in routes]

    def _ptr(self, space, index):
        f = self.f
        if space == "global":
            return f.op("AccessChain", self.e.sb_u32, self.e.heap, self.e.k(0), index)
        if space == "local":
            return self.local_ptr(index)
        return f.op("AccessChain", self.wg_u32, self.smem, index)

    def local_ptr(self, index):
        """A pointer to word ``index`` of the thread's local window."""
        f = self.f
        if self.local_shared:       # word w of thread t: w * threads + t
            u32, e = self.m.u32(), self.e
            return f.op("AccessChain", self.wg_u32, self.lmem,
                        f.op("IAdd", u32, f.op("IMul", u32, index, e.k(e.nthreads)), e.tid))
        return f.op("AccessChain", self.fn_u32, self.lmem, index)

    def _guarded(self, x, ok, lo, hi):
        """(condition for the access, after recording a FAULT for the threads that miss)."""
        e = self.e
        fault = x.band(x.en, x.bnot(ok))
        if e.const_value.get(fault) is not False:
            e.failures.note(x.out, abi.FAULT, fault, e.k(x.inst.pc), lo, hi)
        return x.band(x.en, ok)

    # ---------------------------------------------------------------- operations
    def load(self, x, space, addr, nbytes, signed):
        f, u32 = self.f, self.m.u32()
        routes, shift, lo, hi = self._routes(x, space, addr, nbytes)
        words = max(1, nbytes // 4)
        tmps = [f.local(u32) for _ in range(words)]
        spins = getattr(self.e.warp, "spin_reads_write", False) and x.inst.pc in self.e.program.spin_reads
        for where, cond, index in self._taken(x, routes, lo, hi):
            with f.if_(cond):
                for w, tmp in enumerate(tmps):
                    ptr = self._ptr(where, x.add(index, x.k32(w)))
                    f.store(tmp, self._spin_read(where, ptr) if spins and where != "local" else
                            f.load(u32, ptr, volatile=True))
        values = [f.load(u32, t) for t in tmps]
        if nbytes >= 4:
            return values
        bits = 8 * nbytes
        v = x.and_(x.shr(values[0], shift), x.k32((1 << bits) - 1))
        if signed:
            v = x.sar(x.shl(v, x.k32(32 - bits)), x.k32(32 - bits))
        return [v]

    def _spin_read(self, space, ptr):
        """A word a loop may wait on, read by adding 0 to it (the warp model's
        ``spin_reads_write``): a read-modify-write goes to memory on every pass."""
        scope = self.e.k(Scope.Device if space == "global" else Scope.Workgroup)
        return self.f.op("AtomicIAdd", self.m.u32(), ptr, scope, self.e.k(Sem.Relaxed), self.e.k(0))

    def store(self, x, space, addr, nbytes, values):
        f, u32 = self.f, self.m.u32()
        routes, shift, lo, hi = self._routes(x, space, addr, nbytes)
        for where, cond, index in self._taken(x, routes, lo, hi):
            with f.if_(cond):
                self._store_words(x, where, index, shift, nbytes, values)

    def _store_words(self, x, space, index, shift, nbytes, values):
        f, u32 = self.f, self.m.u32()
        scope = x.k32(Scope.Device if space == "global" else Scope.Workgroup)
        if nbytes >= 4:
            for w, v in enumerate(values):
                f.store(self._ptr(space, x.add(index, x.k32(w))), v, volatile=True)
        elif space == "local":        # the thread's own: no other invocation touches it
            mask = x.k32((1 << 8 * nbytes) - 1)
            ptr = self._ptr(space, index)
            kept = x.and_(f.load(u32, ptr), x.not_(x.shl(mask, shift)))
            f.store(ptr, x.or_(kept, x.shl(x.and_(values[0], mask), shift)))
        else:
            mask = x.k32((1 << 8 * nbytes) - 1)
            ptr = self._ptr(space, index)
            f.op("AtomicAnd", u32, ptr, scope, x.k32(Sem.Relaxed), x.not_(x.shl(mask, shift)))
            f.op("AtomicOr", u32, ptr, scope, x.k32(Sem.Relaxed), x.shl(x.and_(values[0], mask), shift))

    def atomic(self, x, space, op, addr, value, compare, signed):
        f, u32 = self.f, self.m.u32()
        key = op if op in ATOMIC_OPCODES else (op, signed)
        if op not in ("cas", "inc", "dec") and key not in ATOMIC_OPCODES:
            raise UnsupportedInstruction(f"{x.inst.where}: atomic .{op.upper()} in '{x.inst.text}'", x.inst.opcode)

        def atomically(ptr, scope):
            if op == "cas":
                return f.op("AtomicCompareExchange", u32, ptr, scope, x.k32(Sem.Relaxed), x.k32(Sem.Relaxed), value, compare)
            if op in ("inc", "dec"):
                return self._cas_loop(x, ptr, scope, lambda old: _wrapping(x, op, old, value))
            return f.op(ATOMIC_OPCODES[key], u32, ptr, scope, x.k32(Sem.Relaxed), value)
        return self._word_update(x, space, addr, lambda old: _atomic_result(x, op, signed, old, value, compare),
                                 atomically)

    def atomic_update(self, x, space, addr, nbytes, update):
        """A word's read-modify-write as a compare-and-swap loop (the float adds, the 64-bit
        atomics); the old words."""
        if nbytes == 8:
            return self._atomic_update_pair(x, space, addr, update)

        def new(old):
            return update(x, [old])[0]
        return [self._word_update(x, space, addr, new, lambda ptr, scope: self._cas_loop(x, ptr, scope, new))]

    def _word_update(self, x, space, addr, new, atomically):
        """One word's read-modify-write wherever its address falls: in the thread's own local
        window a load and a store of ``new(old)``, in global or shared memory
        ``atomically(pointer, scope)``; the old word."""
        f, u32 = self.f, self.m.u32()
        routes, _, lo, hi = self._routes(x, space, addr, 4)
        tmp = f.local(u32)
        for where, cond, index in self._taken(x, routes, lo, hi):
            scope = x.k32(Scope.Device if where == "global" else Scope.Workgroup)
            with f.if_(cond), self._inner_values():
                ptr = self._ptr(where, index)
                if where == "local":
                    old = f.load(u32, ptr)
                    f.store(ptr, new(old))
                else:
                    old = atomically(ptr, scope)
                f.store(tmp, old)
        return f.load(u32, tmp)

    def _atomic_update_pair(self, x, space, addr, update):
        """``update`` of an 8-byte aligned pair of words in one atomic step; the old pair."""
        if space == "shared":
            raise UnsupportedInstruction(f"{x.inst.where}: a 64-bit atomic on {space} memory in '{x.inst.text}' "
                                         f"(the shader's {space} memory is 32-bit words; the interpreter runs it)",
                                         x.inst.opcode)
        routes, _, lo, hi = self._routes(x, space, addr, 8)
        spaces = {where for where, _, _ in routes}
        if "shared" in spaces:
            raise UnsupportedInstruction(f"{x.inst.where}: a 64-bit atomic through a generic address that may lie in "
                                         f"shared memory in '{x.inst.text}' (the shader's shared memory is 32-bit "
                                         "words; the interpreter runs it)", x.inst.opcode)
        if "global" in spaces and not self.e.int64_atomics:
            raise UnsupportedInstruction(
                f"{x.inst.where}: a 64-bit atomic in '{x.inst.text}' needs shaderInt64 and "
                "shaderBufferInt64Atomics, which the device does not have", x.inst.opcode)
        f, m, u32 = self.f, self.m, self.m.u32()
        aligned = x.cmp("eq", x.and_(lo, x.k32(7)), x.k32(0), False)
        tmps = [f.local(u32), f.local(u32)]
        for where, cond, index in self._taken(x, routes, lo, hi, also=aligned):
            with f.if_(cond), self._inner_values():
                if where == "local":        # the thread's own pair: a plain read-modify-write
                    ptrs = [self._ptr(where, x.add(index, x.k32(w))) for w in (0, 1)]
                    old = [f.load(u32, p) for p in ptrs]
                    for p, w in zip(ptrs, update(x, old)):
                        f.store(p, w)
                else:
                    pair = self._cas_loop(x, self._heap64_ptr(x, index), x.k32(Scope.Device),
                                          lambda old: x.join(*update(x, [x.lo(old), x.hi(old)])), m.u64())
                    old = [x.lo(pair), x.hi(pair)]
                for tmp, w in zip(tmps, old):
                    f.store(tmp, w)
        return [f.load(u32, t) for t in tmps]

    @contextmanager
    def _inner_values(self):
        """Forget, on leaving, the words and pairs (``Emitter.halves``, ``joined``) first worked
        out inside a loop or branch: their ids do not dominate the code after it."""
        e = self.e
        halves = {k: list(v) for k, v in e.halves.items()}
        joined = dict(e.joined)
        try:
            yield
        finally:
            e.halves, e.joined = halves, joined

    def _heap64_ptr(self, x, index):
        """A pointer into the ``uint64_t`` view of the heap at the (even) word ``index``."""
        m = self.m
        if self.heap64 is None:
            m.capability("Int64Atomics")
            self.heap64 = m.storage_buffer(1, "heap64", m.u64())
        return self.f.op("AccessChain", m.pointer("StorageBuffer", m.u64()), self.heap64, self.e.k(0),
                         x.shr(index, x.k32(1)))

    def _cas_loop(self, x, ptr, scope, new_of, word=None):
        """``*ptr = new_of(*ptr)`` as a compare-and-swap loop (on 32-bit words, or on the type ``word``);
        the old value."""
        f, m, bool_ = self.f, self.m, self.m.bool()
        word = word if word is not None else m.u32()
        seen = f.local(word)
        done = f.local(bool_, None, m.const_bool(False))
        f.store(done, m.const_bool(False))
        f.store(seen, f.op("AtomicLoad", word, ptr, scope, x.k32(Sem.Relaxed)))
        header, body, cont, merge = (m.new_id() for _ in range(4))
        f.op("Branch", None, header)
        f.label(header)
        go = f.op("LogicalNot", bool_, f.load(bool_, done))
        f.op("LoopMerge", None, merge, cont, Control.NONE)
        f.op("BranchConditional", None, go, body, merge)
        f.label(body)
        old = f.load(word, seen)
        new = new_of(old)
        prev = f.op("AtomicCompareExchange", word, ptr, scope, x.k32(Sem.Relaxed), x.k32(Sem.Relaxed), new, old)
        f.store(done, f.op("IEqual", bool_, prev, old))
        f.store(seen, f.op("Select", word, f.load(bool_, done), old, prev))
        f.op("Branch", None, cont)
        f.label(cont)
        f.op("Branch", None, header)
        f.label(merge)
        return f.load(word, seen)


def _atomic_result(x, op, signed, old, value, compare):
    """The word an atomic ``op`` leaves where the memory held ``old`` (on the thread's own local
    memory, which needs no atomic instruction)."""
    if op == "add":
        return x.add(old, value)
    if op in ("and", "or", "xor"):
        return {"and": x.and_, "or": x.or_, "xor": x.xor}[op](old, value)
    if op == "exch":
        return value
    if op in ("min", "max"):
        below = x.cmp("lt", old, value, signed)
        return x.sel(below, old, value) if op == "min" else x.sel(below, value, old)
    if op == "cas":
        return x.sel(x.cmp("eq", old, compare, False), value, old)
    return _wrapping(x, op, old, value)


def _wrapping(x, op, old, limit):
    """CUDA's wrapping atomicInc (0 past ``limit``) and atomicDec (``limit`` below 1 or past it)."""
    if op == "inc":
        return x.sel(x.cmp("ge", old, limit, False), x.k32(0), x.add(old, x.k32(1)))
    wrap = x.bor(x.cmp("eq", old, x.k32(0), False), x.cmp("gt", old, limit, False))
    return x.sel(wrap, limit, x.sub(old, x.k32(1)))

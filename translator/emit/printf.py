"""vprintf in the emitted shader (see :mod:`translator.values.vprintf` for what it does).

A call checks its target, reads the format string from the heap to count the arguments it
parses (vprintf's result: the loop mirrors ``vprintf.scan_step``, a word at a time), takes a
record in the printf buffer (binding 2) with one atomic add on its count, and copies the
argument buffer's words from the thread's local memory into it. A format string that runs off
its buffer before its NUL is a FAULT, a target other than vprintf a BAD_PC.

Inside the two loops only arithmetic that leaves no value behind in the emitter's caches is
used (no register reads, no 64-bit splits): what a loop computes does not dominate the code
after it, so it must not be remembered.
"""
from __future__ import annotations

from .. import abi
from ..spirv.enums import MemorySemantics as Sem
from ..spirv.enums import Scope
from ..values import vprintf

M32 = 0xFFFFFFFF


class VprintfEmitter:
    """The printf buffer of one shader and the code of its vprintf calls."""

    def __init__(self, e):
        self.e, self.m = e, e.m
        self.buffer = self.m.storage_buffer(2, "printf")

    def call(self, x, target, fmt, args):
        """CALL.ABS to ``target`` with vprintf's arguments; vprintf's result (a u32 id)."""
        e, f, m = self.e, self.e.f, self.m
        address = abi.FUNCTIONS["vprintf"]
        is_vprintf = x.band(x.cmp("eq", x.lo(target), x.k32(address & M32), False),
                            x.cmp("eq", x.hi(target), x.k32(address >> 32), False))
        bad = x.band(x.en, x.bnot(is_vprintf))
        if x.known.get(bad) is not False:
            e.failures.note(x.out, abi.BAD_PC, bad, x.lo(target))
        fmt_lo, fmt_hi, args_lo, args_hi = x.lo(fmt), x.hi(fmt), x.lo(args), x.hi(args)
        null = x.band(x.cmp("eq", fmt_lo, x.k32(0), False), x.cmp("eq", fmt_hi, x.k32(0), False))
        go = x.band(x.band(x.en, is_vprintf), x.bnot(null))
        kept, local_word = self._argument_words(x, args_lo, args_hi)
        result = f.local(m.u32(), None, x.k32(M32))
        fault = f.local(m.bool(), None, m.const_bool(False))
        fault_at = f.local(m.u32(), None, x.k32(0))
        f.store(result, x.sel(null, x.k32(M32), x.k32(0)))
        f.store(fault, m.const_bool(False))
        with f.if_(go):
            self._scan(x, fmt_lo, fmt_hi, result, fault, fault_at)
            with f.if_(f.op("LogicalNot", m.bool(), f.load(m.bool(), fault))):
                self._record(x, fmt_lo, fmt_hi, kept, local_word)
        faulted = f.load(m.bool(), fault)
        e.failures.note(x.out, abi.FAULT, faulted, x.k32(x.inst.pc), f.load(m.u32(), fault_at), fmt_hi)
        return f.load(m.u32(), result)

    # ---------------------------------------------------------------- the format string
    def _scan(self, x, lo, hi, result, fault, fault_at) -> None:
        """Count the arguments the string at hi:lo parses into ``result``, a word of the heap
        per iteration (lavapipe counts a nested loop's iterations against the shader loop's
        65,535); where it leaves every buffer first, set ``fault`` and ``fault_at`` (the low
        word of the first byte outside)."""
        e, f, m = self.e, self.e.f, self.m
        u32, bool_ = m.u32(), m.bool()
        k = x.sub(hi, x.k32(abi.BUFFER_HI))
        in_table = x.cmp("lt", k, x.k32(abi.MAX_BUFFERS), False)
        entry = x.shl(x.sel(in_table, k, x.k32(0)), x.k32(1))
        base = e.ctrl_load(x.add(x.k32(abi.TABLE), entry))
        size = e.ctrl_load(x.add(x.k32(abi.TABLE + 1), entry))
        off = x.sub(lo, x.k32(abi.BUFFER_LO))
        first = x.shr(off, x.k32(2))
        n, state, count = (f.local(u32, None, x.k32(0)) for _ in range(3))
        alive = f.local(bool_, None, m.const_bool(True))
        for var in (n, state, count):
            f.store(var, x.k32(0))
        f.store(alive, m.const_bool(True))

        def body():
            word_at = x.add(first, f.load(u32, n))
            start = x.shl(word_at, x.k32(2))
            readable = x.band(in_table, x.cmp("lt", start, size, False))
            index = x.sel(readable, x.add(base, word_at), x.k32(0))
            word = f.load(u32, f.op("AccessChain", e.sb_u32, e.heap, x.k32(0), index), volatile=True)
            live, now, parsed = x.band(f.load(bool_, alive), readable), f.load(u32, state), x.k32(0)
            for j in range(4):
                into = x.sub(x.add(start, x.k32(j)), off)       # bytes into the string
                byte = x.and_(x.shr(word, x.k32(8 * j)), x.k32(0xFF))
                mine = x.band(live, x.cmp("lt", into, x.k32(vprintf.MAX_FORMAT_BYTES), False))
                mine = x.band(mine, x.cmp("ge", x.add(start, x.k32(j)), off, False))
                ends = x.band(mine, x.cmp("eq", byte, x.k32(0), False))
                step = x.band(mine, x.bnot(ends))
                nxt, adds = self._step(x, now, byte)
                now = x.sel(step, nxt, now)
                parsed = x.add(parsed, x.sel(x.band(step, adds), x.k32(1), x.k32(0)))
                live = x.band(live, x.bnot(ends))
            over = x.cmp("ge", x.sub(x.add(start, x.k32(4)), off), x.k32(vprintf.MAX_FORMAT_BYTES), False)
            f.store(fault, x.band(f.load(bool_, alive), x.bnot(readable)))
            f.store(fault_at, x.sel(x.cmp("lt", start, off, False), lo, x.add(x.k32(abi.BUFFER_LO), start)))
            f.store(state, now)
            f.store(count, x.add(f.load(u32, count), parsed))
            f.store(alive, x.band(live, x.bnot(over)))
            f.store(n, x.add(f.load(u32, n), x.k32(1)))

        e.emit_loop(lambda: f.load(bool_, alive), body)
        f.store(result, f.load(u32, count))

    def _step(self, x, state, byte):
        """vprintf.scan_step on SPIR-V values: (next state, parses an argument)."""
        is_ = lambda v, c: x.cmp("eq", v, x.k32(c), False)
        percent, star = is_(byte, vprintf.PERCENT), is_(byte, vprintf.STAR)
        letter = x.cmp("lt", x.sub(x.or_(byte, x.k32(0x20)), x.k32(ord("a"))), x.k32(26), False)
        modifier = is_(byte, vprintf.LENGTH_MODIFIERS[0])
        for c in vprintf.LENGTH_MODIFIERS[1:]:
            modifier = x.bor(modifier, is_(byte, c))
        ends = x.band(letter, x.bnot(modifier))
        text = is_(state, vprintf.TEXT)
        literal = x.band(is_(state, vprintf.OPENED), percent)
        parsed = x.band(x.band(x.bnot(text), x.bnot(literal)), x.bor(star, ends))
        in_spec = x.sel(x.bor(literal, ends), x.k32(vprintf.TEXT), x.k32(vprintf.SPEC))
        return x.sel(text, x.sel(percent, x.k32(vprintf.OPENED), x.k32(vprintf.TEXT)), in_spec), parsed

    # ---------------------------------------------------------------- the record
    def _argument_words(self, x, lo, hi):
        """(words of the argument buffer to keep, its first word's index in local memory):
        the words from hi:lo to the end of the local window, at most abi.PRINTF_ARG_WORDS;
        none for a null pointer or one outside the window."""
        size = self.e.memory.local_bytes
        if self.e.memory.lmem is None or size == 0:
            return x.k32(0), x.k32(0)
        off = x.sub(lo, x.k32(abi.STACK_TOP - size))     # the local window's base has a low word of 0
        inside = x.band(x.cmp("eq", hi, x.k32(abi.LOCAL_WINDOW_HI), False), x.cmp("lt", off, x.k32(size), False))
        valid = x.band(inside, x.cmp("eq", x.and_(off, x.k32(3)), x.k32(0), False))
        room = x.shr(x.sub(x.k32(size), off), x.k32(2))
        most = x.k32(abi.PRINTF_ARG_WORDS)
        kept = x.sel(valid, x.sel(x.cmp("lt", room, most, False), room, most), x.k32(0))
        return kept, x.sel(valid, x.shr(off, x.k32(2)), x.k32(0))

    def _slot(self, index):
        return self.e.f.op("AccessChain", self.e.sb_u32, self.buffer, self.e.k(0), index)

    def _record(self, x, fmt_lo, fmt_hi, kept, local_word) -> None:
        """Take the next record (dropped past the capacity) and fill it."""
        e, f, m = self.e, self.e.f, self.m
        u32 = m.u32()
        taken = f.op("AtomicIAdd", u32, self._slot(x.k32(abi.PRINTF_COUNT)), x.k32(Scope.Device),
                     x.k32(Sem.Relaxed), x.k32(1))
        capacity = f.load(u32, self._slot(x.k32(abi.PRINTF_CAPACITY)))
        with f.if_(x.cmp("lt", taken, capacity, False)):
            at = x.add(x.k32(abi.PRINTF_HEADER), x.mul(taken, x.k32(abi.PRINTF_RECORD_WORDS)))
            for k, value in enumerate((e.gtid, fmt_lo, fmt_hi, kept)):
                f.store(self._slot(x.add(at, x.k32(k))), value)
            if e.memory.lmem is not None:
                self._copy(x, x.add(at, x.k32(4)), kept, local_word)

    def _copy(self, x, dst, count, src) -> None:
        """printf[dst + w] = local[src + w] for w < count."""
        e, f, m = self.e, self.e.f, self.m
        u32, bool_ = m.u32(), m.bool()
        w = f.local(u32, None, x.k32(0))
        f.store(w, x.k32(0))

        def body():
            at = f.load(u32, w)
            word = f.load(u32, e.memory.local_ptr(x.add(src, at)))
            f.store(self._slot(x.add(dst, at)), word)
            f.store(w, x.add(at, x.k32(1)))

        e.emit_loop(lambda: f.op("ULessThan", bool_, f.load(u32, w), count), body)

"""A block's architectural state as arrays over its threads, and the lanes one instruction runs on.

Registers are arrays ``[register, thread]`` (R: 256 rows, UR: 64, P and UP: 8, bool), local
memory ``[thread, byte]``, and what the turn rule reads of every thread each turn (pc, the
exited, waiting and yielded flags, the step and instruction counts) an array each, so that
picking a turn's block and moving its threads on are array operations. The waits
(:mod:`translator.interp.waits`) keep working on :class:`Thread` objects: a
:class:`LaneThread` sees its fields and registers through views of the arrays, and keeps the
convergence-barrier masks and what a waiting instruction left as the scalar thread does, so
the scalar :class:`ThreadCtx` (waiting instructions, a fallback) runs on the same state.
"""
from __future__ import annotations

import numpy as np

from ..thread import Thread

U64 = np.uint64


class LaneFile:
    """The registers and local memory of one block's ``n`` threads."""

    def __init__(self, n: int, local_bytes: int, block: tuple[int, int, int], entry: int = 0):
        self.n = n
        self.pc = np.full(n, entry, np.int64)
        self.steps = np.zeros(n, np.int64)
        self.clock = np.zeros(n, np.int64)
        self.exited = np.zeros(n, bool)
        self.waiting = np.zeros(n, bool)
        self.yielded = np.zeros(n, bool)
        self.b = np.zeros((16, n), np.int64)          # convergence-barrier masks B0..B15
        self.r = np.zeros((256, n), U64)
        self.ur = np.zeros((64, n), U64)
        self.p = np.zeros((8, n), bool)
        self.up = np.zeros((8, n), bool)
        self.p[7] = self.up[7] = True
        self.local = np.zeros((n, local_bytes), np.uint8)
        self.local32 = self.local.view("<u4") if local_bytes % 4 == 0 else None
        bx, by, _ = block
        t = np.arange(n, dtype=np.int64)
        self.tidxyz = (t % bx, t // bx % by, t // (bx * by))


class _Column:
    """One thread's column of a register array, read as Python ints (or bools)."""
    __slots__ = ("rows", "tid", "cast")

    def __init__(self, rows, tid, cast):
        self.rows, self.tid, self.cast = rows, tid, cast

    def __getitem__(self, k):
        return self.cast(self.rows[k, self.tid])

    def __setitem__(self, k, v):
        self.rows[k, self.tid] = v


def _field(name: str, cast):
    """A Thread field kept in the block's array ``name``, one element per thread."""
    def get(self):
        return cast(getattr(self.file, name)[self.tid])

    def put(self, value):
        getattr(self.file, name)[self.tid] = value
    return property(get, put)


class LaneThread(Thread):
    """A Thread whose registers and local memory live in its block's :class:`LaneFile`."""

    def __init__(self, tid, tidxyz, ctaid, file: LaneFile):     # noqa: the dataclass fields, set by hand
        self.tid, self.tidxyz, self.ctaid, self.file = tid, tidxyz, ctaid, file
        self.sync_mask = self.new_pc = None
        self.bar_gen = self.bar_result = 0

    pc = _field("pc", int)
    steps = _field("steps", int)
    clock = _field("clock", int)
    exited = _field("exited", bool)
    waiting = _field("waiting", bool)
    yielded = _field("yielded", bool)
    b = property(lambda self: _Column(self.file.b, self.tid, int))
    r = property(lambda self: _Column(self.file.r, self.tid, int))
    ur = property(lambda self: _Column(self.file.ur, self.tid, int))
    p = property(lambda self: _Column(self.file.p, self.tid, bool))
    up = property(lambda self: _Column(self.file.up, self.tid, bool))

    @property
    def local(self):
        return memoryview(self.file.local[self.tid])

    @local.setter
    def local(self, value):
        raise AssertionError("a LaneThread's local memory is its block's")


class Lanes:
    """The threads that run one block together (a turn's, or a group of a free run), in
    thread order: their indices, exits and branch targets as arrays. ``free``: a free run,
    whose thread objects are brought up to date only when it ends."""

    def __init__(self, cta, tids: np.ndarray, exited: np.ndarray, clock: np.ndarray, free: bool):
        self.cta, self.tids, self.exited, self.clock, self.free = cta, tids, exited, clock, free
        self.n = len(tids)
        self.new_pc = np.full(self.n, -1, np.int64)
        self.contiguous = self.n > 0 and int(tids[-1]) - int(tids[0]) == self.n - 1
        self._warps = None
        self.constants: dict[int, np.ndarray] = {}

    def thread(self, i: int) -> Thread:
        return self.cta.threads[int(self.tids[i])]

    def warps(self):
        """(the row of each lane's warp among the warps present, its lane, how many warps)."""
        if self._warps is None:
            warp = self.tids >> 5
            first = warp[0] if self.n else 0
            if self.n and int(warp[-1]) - int(first) < 4 * self.n:
                inv = warp - first
                count = int(inv[-1]) + 1
            else:
                uniq, inv = np.unique(warp, return_inverse=True)
                count = len(uniq)
            self._warps = (inv, self.tids & 31, count)
        return self._warps

"""What a free run did to global memory: the words each thread touched, in the order the lanes
touched them, and the words' old values, so the run can be undone.

A free run executes the threads of a turn together, block by block; the scalar interpreter
runs them one after another. The results are the same wherever every pair of accesses to one
word by two threads, one of them a write, comes in thread order (the run is then equivalent
to the threads one after another: conflict-serializable in that order). :meth:`AccessLog.serial`
checks it; where it fails the run is undone and done again thread by thread.
"""
from __future__ import annotations

import numpy as np


class AccessLog:
    def __init__(self):
        self.keys: list[np.ndarray] = []
        self.tids: list[np.ndarray] = []
        self.kinds: list[bool] = []
        self.undo: list[tuple] = []

    def note(self, code: int, idx, off, nbytes: int, tids, write: bool) -> None:
        """Lanes ``idx`` access ``nbytes`` at byte offsets ``off[idx]`` of global buffer ``code``."""
        count = max(1, (nbytes + 3) // 4)
        words = (off[idx] >> 2)[:, None] + np.arange(count)[None, :]
        self.keys.append(((code << 40) + words).ravel())
        self.tids.append(np.repeat(tids[idx], count))
        self.kinds.append(write)

    def journal(self, arr, at) -> None:
        self.undo.append((arr, at, arr[at].copy()))

    def rollback(self) -> None:
        for arr, at, old in reversed(self.undo):
            arr[at] = old

    def serial(self) -> bool:
        """Whether every conflicting pair of accesses (one word, two threads, a write) came in
        thread order."""
        if not any(self.kinds):
            return True
        keys = np.concatenate(self.keys)
        tids = np.concatenate(self.tids)
        wr = np.concatenate([np.full(len(k), w) for k, w in zip(self.keys, self.kinds)])
        seq = np.arange(len(keys))
        keep = np.isin(keys, np.unique(keys[wr]))
        keys, tids, wr, seq = keys[keep], tids[keep], wr[keep], seq[keep]
        order = np.lexsort((seq, keys))
        k, t, w = keys[order], tids[order], wr[order]
        start = np.r_[True, k[1:] != k[:-1]]
        base = (np.cumsum(start) - 1) * (int(t.max()) + 2)
        before_all = np.maximum.accumulate(base + t)
        before_w = np.maximum.accumulate(np.where(w, base + t, base - 1))
        prev_all = np.where(start, -1, np.r_[-1, before_all[:-1]] - base)
        prev_w = np.where(start, -1, np.r_[-1, before_w[:-1]] - base)
        return not bool(((w & (prev_all > t)) | (~w & (prev_w > t))).any())

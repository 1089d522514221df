"""Compare the words a run left in its buffers with the expected ones, naming threads."""
from __future__ import annotations

import struct

from .cases import Case
from .results import Mismatch

MAX_LISTED = 64


def mismatches(case: Case, buffers: list[bytes]) -> tuple[list[Mismatch], int]:
    """(the first MAX_LISTED mismatches, the total count) over every checked buffer.

    A buffer with one word per thread names the thread, its warp and lane for each word.
    """
    listed: list[Mismatch] = []
    total = 0
    per_block = case.threads_per_block
    for spec, data in zip(case.buffers, buffers):
        if spec.expected is None:
            continue
        got = struct.unpack(f"<{spec.words}I", data[:spec.words * 4])
        per_thread = spec.words == case.total_threads
        for index, (want, have) in enumerate(zip(spec.expected, got)):
            if want == have:
                continue
            total += 1
            if len(listed) < MAX_LISTED:
                m = Mismatch(spec.name, index, want, have)
                if per_thread:
                    block, local = divmod(index, per_block)
                    m.thread = index
                    m.warp = block * case.warps_per_block + local // 32
                    m.lane = local % 32
                listed.append(m)
    return listed, total


def summary(listed: list[Mismatch], total: int) -> str:
    if not total:
        return ""
    head = "; ".join(m.describe() for m in listed[:3])
    more = f" (+{total - 3} more)" if total > 3 else ""
    return f"{total} words differ: {head}{more}"

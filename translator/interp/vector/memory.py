"""Loads, stores and atomics over arrays of addresses, with the scalar interpreter's order:
lanes in thread order, the first lane that faults ends the instruction there (the lanes
before it have done their part; the Fault is the scalar one, built by :class:`ThreadCtx`).

A place is a region code per lane: 0-7 a global buffer, SHARED, LOCAL (the lane's own
window), -1 outside every one.
"""
from __future__ import annotations

import numpy as np

from ... import abi
from .words import M32, U64, s32

SHARED, LOCAL = 8, 9
I64 = np.int64


def locate(x, space: str, addr, nbytes: int):
    """(region, byte offset) of every lane's access (-1: outside every region)."""
    n = len(addr)
    region = np.full(n, -1, np.int64)
    if space == "generic":
        hi = (addr >> 32).astype(I64)
        low = (addr & M32).astype(I64)
        for code, high in ((SHARED, abi.SHARED_WINDOW_HI), (LOCAL, abi.LOCAL_WINDOW_HI)):
            on = hi == high
            if on.any():
                _place(x, code, low, nbytes, on, region)
        rest = (hi != abi.SHARED_WINDOW_HI) & (hi != abi.LOCAL_WINDOW_HI)
        off = np.where(rest, _global(x, addr, nbytes, rest, region), low)
        return region, off
    if space == "global":
        return region, _global(x, addr, nbytes, np.ones(n, bool), region)
    code = SHARED if space == "shared" else LOCAL
    off = (addr & M32).astype(I64)
    _place(x, code, off, nbytes, np.ones(n, bool), region)
    return region, np.where(code == LOCAL, off - (abi.STACK_TOP - x.m.program.local_bytes), off)


def _size(x, code):
    if code == SHARED:
        return len(x.cta.shared)
    return x.m.program.local_bytes


def _place(x, code, off, nbytes, on, region):
    size = _size(x, code)
    if code == LOCAL:
        off = off - (abi.STACK_TOP - size)
    ok = on & (off >= 0) & (off + nbytes <= size) & (off % min(nbytes, 4) == 0)
    region[ok] = code
    if code == LOCAL:
        return off
    return off


def _global(x, addr, nbytes, on, region):
    k = (addr >> 32).astype(I64) - abi.BUFFER_HI
    off = (addr & M32).astype(I64) - abi.BUFFER_LO
    sizes = x.m.buffer_sizes
    kk = np.clip(k, 0, max(len(sizes) - 1, 0))
    size = sizes[kk] if len(sizes) else np.zeros(len(k), I64)
    ok = on & (k >= 0) & (k < len(sizes)) & (off >= 0) & (off + nbytes <= size) & (off % min(nbytes, 4) == 0)
    region[ok] = k[ok]
    return off


def _offsets(x, space, region, off):
    """Byte offsets into each region (local: the lane's own window)."""
    if space == "generic":
        loc = region == LOCAL
        if loc.any():
            off = np.where(loc, off - (abi.STACK_TOP - x.m.program.local_bytes), off)
    return off


def _views(x, code):
    """(bytes, words) of a region; local ones are [thread, ...]."""
    if code == SHARED:
        return x.cta.views
    if code == LOCAL:
        f = x.cta.file
        return f.local, f.local32
    return x.m.views[code]


def _cells(x, code, idx, off, nbytes):
    """(array, index) that address the bytes (nbytes < 4) or words of the lanes ``idx``, lane
    by lane then word by word."""
    b8, b32 = _views(x, code)
    unit = 1 if nbytes < 4 else 4
    count = max(1, nbytes // 4) if unit == 4 else nbytes
    pos = (off[idx] // unit)[:, None] + np.arange(count)[None, :]
    arr = b8 if unit == 1 else b32
    if code == LOCAL:
        rows = np.repeat(x.lanes.tids[idx][:, None], count, axis=1)
        return arr, (rows.ravel(), pos.ravel())
    return arr, pos.ravel()


def _codes(region, en):
    """The regions the enabled lanes access (one, mostly)."""
    r = region[en]
    if not len(r):
        return []
    first = int(r[0])
    return [first] if bool((r == first).all()) else np.unique(r).tolist()


def fail_first(x, bad, thunk) -> bool:
    """The first enabled lane in ``bad`` faults: the scalar context raises it (see LaneCtx.fail)."""
    bad = bad & x.en
    if not bad.any():
        return False
    f = int(np.argmax(bad))
    x.fail(f, thunk)
    return True


def load(x, space, addr, nbytes, signed):
    nw = max(1, nbytes // 4)
    out = [np.zeros(x.n, U64) for _ in range(nw)]
    if not x.en.any():
        return out
    region, off = locate(x, space, addr, nbytes)
    off = _offsets(x, space, region, off)
    fail_first(x, region < 0, lambda c, f: c._locate(space, int(addr[f]), nbytes, "load"))
    en = x.en
    for code in _codes(region, en):
        idx = np.flatnonzero(en & (region == code))
        arr, at = _cells(x, code, idx, off, nbytes)
        vals = arr[at].astype(U64)
        if nbytes < 4:
            vals = vals.reshape(len(idx), nbytes)
            v = vals[:, 0] | (vals[:, 1] << 8) if nbytes == 2 else vals[:, 0]
            if signed:
                bits = 8 * nbytes
                v = ((v.astype(I64) ^ (1 << bits - 1)) - (1 << bits - 1)) & M32
            out[0][idx] = v
        else:
            vals = vals.reshape(len(idx), nw)
            for j in range(nw):
                out[j][idx] = vals[:, j]
        if x.m.log is not None and code < SHARED:
            x.m.log.note(code, idx, off, nbytes, x.lanes.tids, False)
    return out


def store(x, space, addr, nbytes, values):
    if not x.en.any():
        return
    region, off = locate(x, space, addr, nbytes)
    off = _offsets(x, space, region, off)
    fail_first(x, region < 0, lambda c, f: c._locate(space, int(addr[f]), nbytes, "store"))
    en = x.en
    for code in _codes(region, en):
        idx = np.flatnonzero(en & (region == code))
        arr, at = _cells(x, code, idx, off, nbytes)
        if nbytes < 4:
            v = values[0][idx]
            vals = np.stack([(v >> (8 * b)) & 0xFF for b in range(nbytes)], axis=1).ravel().astype(np.uint8)
        else:
            vals = np.stack([w[idx] for w in values], axis=1).ravel().astype(np.uint32)
        at, vals = _last_wins(at, vals)
        if x.m.log is not None and code < SHARED:
            x.m.log.note(code, idx, off, nbytes, x.lanes.tids, True)
            x.m.log.journal(arr, at)
        arr[at] = vals


def _last_wins(at, vals):
    """Where lanes write one place, the last lane's value (as lanes one after another do)."""
    flat = at if not isinstance(at, tuple) else at[0] * (1 << 32) + at[1]
    if len(flat) < 2 or bool((flat[1:] > flat[:-1]).all()):     # in order, no place twice
        return at, vals
    uniq, first_rev = np.unique(flat[::-1], return_index=True)
    if len(uniq) == len(flat):
        return at, vals
    keep = np.sort(len(flat) - 1 - first_rev)
    at = tuple(a[keep] for a in at) if isinstance(at, tuple) else at[keep]
    return at, vals[keep]


def _rounds(keys):
    """Each lane's rank among the earlier lanes with the same key (an atomic's turn)."""
    order = np.argsort(keys, kind="stable")
    ks = keys[order]
    pos = np.arange(len(ks))
    starts = np.r_[True, ks[1:] != ks[:-1]] if len(ks) else np.zeros(0, bool)
    occ_sorted = pos - np.maximum.accumulate(np.where(starts, pos, 0))
    occ = np.empty(len(keys), np.int64)
    occ[order] = occ_sorted
    return occ


_ATOMIC = {
    "add": lambda old, v, c, key: (old + v) & M32, "and": lambda old, v, c, key: old & v,
    "or": lambda old, v, c, key: old | v, "xor": lambda old, v, c, key: old ^ v,
    "exch": lambda old, v, c, key: v,
    "min": lambda old, v, c, key: np.where(key(v) < key(old), v, old),
    "max": lambda old, v, c, key: np.where(key(v) > key(old), v, old),
    "inc": lambda old, v, c, key: np.where(old >= v, U64(0), old + 1) & M32,
    "dec": lambda old, v, c, key: np.where((old == 0) | (old > v), v, old - 1) & M32,
    "cas": lambda old, v, c, key: np.where(old == c, v, old),
}


def update(x, space, addr, nbytes, new_words, what="atomic"):
    """Read-modify-write of every enabled lane, lane after lane where they share a place:
    ``new_words(old words, lanes)`` gives the new words; returns the old ones."""
    nw = nbytes // 4
    old_out = [np.zeros(x.n, U64) for _ in range(nw)]
    if not x.en.any():
        return old_out
    region, off = locate(x, space, addr, nbytes)
    off = _offsets(x, space, region, off)
    bad = region < 0
    if nbytes == 8:
        bad = bad | (addr % 8 != 0)
    fail_first(x, bad, lambda c, f: c.atomic_update(space, int(addr[f]), nbytes, None))
    en = x.en
    idx = np.flatnonzero(en)
    if not len(idx):
        return old_out
    keys = region[idx] * (1 << 40) + off[idx]
    if space == "generic" or region[idx].max() == LOCAL:
        keys = keys + np.where(region[idx] == LOCAL, x.lanes.tids[idx] << 44, 0)
    occ = _rounds(keys)
    for r in range(int(occ.max()) + 1):
        lanes = idx[occ == r]
        old = [np.zeros(x.n, U64) for _ in range(nw)]
        places = []
        for code in np.unique(region[lanes]).tolist():
            sub = lanes[region[lanes] == code]
            arr, at = _cells(x, code, sub, off, nbytes)
            vals = arr[at].astype(U64).reshape(len(sub), nw)
            for j in range(nw):
                old[j][sub] = vals[:, j]
            places.append((sub, arr, at))
        on = np.zeros(x.n, bool)
        on[lanes] = True
        new = new_words(old, on)
        for sub, arr, at in places:
            arr[at] = np.stack([(w[sub] & M32) for w in new], axis=1).ravel().astype(np.uint32)
        for j in range(nw):
            old_out[j][lanes] = old[j][lanes]
    return old_out


def atomic(x, space, op, addr, value, compare, signed):
    key = s32 if signed else (lambda v: v)
    f = _ATOMIC[op]
    return update(x, space, addr, 4, lambda old, on: [f(old[0], value, compare, key)])[0]

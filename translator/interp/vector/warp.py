"""Collectives as array operations per warp: what :class:`WarpOracle` answers lane by lane.

Each call gathers the lanes' offers into tables ``[warp, lane]`` (a lane offers when it runs
the instruction with its guard true) and answers every lane of the turn at once.
"""
from __future__ import annotations

import numpy as np

from .words import M32, U64, s32

_BITS = np.left_shift(U64(1), np.arange(32, dtype=U64))


def _tables(x, values=None):
    inv, lane, count = x.lanes.warps()
    on = np.zeros((count, 32), bool)
    on[inv, lane] = x.en
    if values is None:
        return inv, lane, on, None
    val = np.zeros((count, 32), U64)
    val[inv, lane] = values
    return inv, lane, on, val


def _mask(rows):
    return (rows * _BITS).sum(axis=-1, dtype=U64)


def active(x):
    inv, _, on, _ = _tables(x)
    return _mask(on)[inv]


def ballot(x, p):
    inv, _, on, _ = _tables(x)
    voted = np.zeros_like(on)
    voted[inv, x.lanes.warps()[1]] = p & x.en
    return _mask(voted)[inv]


def match_any(x, v):
    inv, _, on, val = _tables(x, v)
    same = (val[inv] == v[:, None]) & on[inv]
    return _mask(same)


def match_all(x, v):
    inv, _, on, val = _tables(x, v)
    rows_on = on[inv]
    same = ((val[inv] == v[:, None]) | ~rows_on).all(axis=1)
    return np.where(same, _mask(rows_on), U64(0)), same


def redux(x, op, v, signed):
    inv, _, on, val = _tables(x, v)
    any_on = on.any(axis=1)
    if op == "sum":
        r = np.where(on, val, U64(0)).sum(axis=1, dtype=U64) & M32
    elif op in ("min", "max"):
        key = s32(val) if signed else val.astype(np.int64)
        big = np.iinfo(np.int64).max if op == "min" else np.iinfo(np.int64).min
        k = np.where(on, key, big)
        r = ((k.min(axis=1) if op == "min" else k.max(axis=1)) & M32).astype(U64)
    elif op == "and":
        r = np.bitwise_and.reduce(np.where(on, val, U64(M32)), axis=1)
    elif op == "or":
        r = np.bitwise_or.reduce(np.where(on, val, U64(0)), axis=1)
    else:
        r = np.bitwise_xor.reduce(np.where(on, val, U64(0)), axis=1)
    return np.where(any_on, r, U64(0))[inv]


def shfl(x, mode, value, b, c):
    inv, me, on, val = _tables(x, value)
    me = me.astype(np.int64)
    seg, clamp, b = ((c >> 8) & 0x1F).astype(np.int64), (c & 0x1F).astype(np.int64), (b & 0x1F).astype(np.int64)
    max_lane = (me & seg) | (clamp & ~seg & 0x1F)
    min_lane = me & seg
    j = {"up": lambda: me - b, "down": lambda: me + b, "bfly": lambda: me ^ b,
         "idx": lambda: min_lane | (b & ~seg & 0x1F)}[mode]()
    ok = j >= max_lane if mode == "up" else j <= max_lane
    jj = np.clip(j, 0, 31)
    src = np.where(on[inv, jj], val[inv, jj], U64(0))
    return np.where(ok, src, value), ok

"""The key a thread offers for the next turn, lowest first (translator/README.md, "The turn
rule"): its pc, with WAIT_BIT set when its last attempt to pass a waiting instruction failed
and YIELD_BIT set when it has yielded in this round. The interpreter (:mod:`translator.interp.waits`)
and the turns strategy's shader (:mod:`translator.emit.turns.loop`) both build and compare keys
with these constants.
"""
from __future__ import annotations

WAIT_BIT = 1 << 30
YIELD_BIT = 1 << 29
PC_MASK = YIELD_BIT - 1
NONE_KEY = 0xFFFFFFFF
"""No thread left to offer a key: every one has exited."""

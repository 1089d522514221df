"""The interpreter lane-vectorized: each instruction once per turn for all its threads.

``translator.Interpreter`` is :class:`VectorInterpreter`; the scalar
:class:`translator.interp.machine.Interpreter` (``translator.ScalarInterpreter``) is its oracle:
tests/translator/interp/test_vector_interpreter.py runs the library on both and asks for the
same words, outcome, message, printf records and turn, step and instruction counts.

- ``lanes.py``: a block's registers as arrays ``[register, thread]`` (and local memory), seen by
  the scalar thread objects through column views, so the turn rule and the waits
  (``interp/waits.py``, which this package calls and never copies) run on the same state;
- ``ctx.py``, ``words.py``: the Ctx vocabulary on uint64/bool arrays over a turn's lanes (the
  float words call floatops lane by lane); ``memory.py``: loads, stores and atomics over arrays
  of addresses in thread order, the first faulting lane's scalar Fault; ``warp.py``: the
  collectives per warp as tables ``[warp, lane]``;
- ``machine.py``: a turn's block instruction by instruction; a free run (quiet blocks) for all
  its threads together, undone and done again thread by thread where the order could show
  (``journal.py``: a failure, printf, or threads sharing global words out of thread order).

Measured on one core shared with other jobs (CPU seconds, ``time.process_time``), before (the
scalar interpreter) and after: ``warpboard run repro/rp_4_12 --device none`` 6.6 s -> 2.9 s wall
(its interpreter run 5.0 s -> 0.74 s CPU); launches of 262,144 threads
(``bench/interp_big_launch.py``): sequence_gpu (free mode) 12.6 s (extrapolated from 64 blocks)
-> 0.65 s; reduce2 (BAR, shared memory) 83 s (from 16 blocks) -> 10 s; rp_4_12 on 256 blocks
(collectives, BSYNC, WARPSYNC) 320 s (from 4) -> 51 s, of which about 60 % is
``waits.sync_step`` thread by thread.
"""
from .machine import VectorInterpreter

__all__ = ["VectorInterpreter"]

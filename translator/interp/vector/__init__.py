"""The interpreter lane-vectorized: each instruction once per turn for all its threads.

``translator.Interpreter`` is :class:`VectorInterpreter`; the scalar
:class:`translator.interp.machine.Interpreter` (``translator.ScalarInterpreter``) is its oracle:
tests/translator/interp/test_vector_interpreter.py runs the library on both and asks for the
same words, outcome, message, printf records and turn, step and instruction counts.

- ``lanes.py``: a block's registers as arrays ``[register, thread]`` (and local memory), and
  what the turn rule reads (pc, flags, barrier masks), seen by the scalar thread objects through
  views, so the turn rule and the waits (``interp/waits.py``, which this package calls and never
  copies: its functions take arrays where the rule is one expression) run on the same state;
- ``ctx.py``, ``words.py``: the Ctx vocabulary on uint64/bool arrays over a turn's lanes (the
  float words call floatops lane by lane); ``memory.py``: loads, stores and atomics over arrays
  of addresses in thread order, the first faulting lane's scalar Fault; ``warp.py``: the
  collectives per warp as tables ``[warp, lane]``;
- ``machine.py``: a turn's block instruction by instruction; a free run (quiet blocks) for all
  its threads together, undone and done again thread by thread where the order could show
  (``journal.py``: a failure, printf, or threads sharing global words out of thread order).

How fast it judges big launches: ``warpboard bench --interpreter``, figures on
docs/measurements.md.
"""
from .machine import VectorInterpreter

__all__ = ["VectorInterpreter"]

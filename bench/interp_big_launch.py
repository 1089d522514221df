"""Time the CPU reference interpreter on a library case relaunched with a bigger grid.

    .venv/bin/python bench/interp_big_launch.py CASE GRID_X WORDS[,WORDS...] [U32|-] [vector] [scalar]

Every buffer of CASE gets WORDS words of random data (seed 1) and no expected values, every u32
parameter the value U32 (``-`` keeps the case's), the grid GRID_X blocks of the case's block.
``vector`` is the default interpreter (translator.Interpreter), ``scalar`` its oracle
(translator.ScalarInterpreter); with both, the two runs are compared (outcome, counts, words).
Examples (262,144 threads each; translator/interp/vector has the figures):

    bench/interp_big_launch.py captured/inlinePTX/sequence_gpu_0 1024 262144 262144
    bench/interp_big_launch.py captured/reduction/reduce2_int_2 1024 262144,1024 262144
    bench/interp_big_launch.py repro/rp_4_12 256 1835520,266240 -
"""
from __future__ import annotations

import dataclasses
import random
import sys
import time

from warpboard.harness.case.model import BufferSpec, Param, discover_cases
from warpboard.harness.run.dispatch import prepare
from warpboard.translator import Interpreter, Memory, ScalarInterpreter, TranslatorError


def main(argv: list[str]) -> None:
    case_id, grid_x, words = argv[0], int(argv[1]), [int(w) for w in argv[2].split(",")]
    u32 = int(argv[3]) if len(argv) > 3 and argv[3] != "-" else None
    which = argv[4:] or ["vector"]
    case = discover_cases("cases", [case_id])[0]
    rng = random.Random(1)
    buffers = tuple(BufferSpec(b.name, w, tuple(rng.randrange(1 << 16) for _ in range(w)), None)
                    for b, w in zip(case.buffers, words))
    params = tuple(Param("u32", u32) if p.kind == "u32" and u32 is not None else p for p in case.params)
    big = dataclasses.replace(case, grid=(grid_x, 1, 1), buffers=buffers, params=params)
    prep = prepare(big)
    print(f"{big.id}: grid {prep.launch.grid}, block {prep.launch.block}, "
          f"{prep.launch.threads_per_block * prep.launch.blocks} threads, {prep.program.mode} mode")
    results = {}
    for name in which:
        cls = Interpreter if name == "vector" else ScalarInterpreter
        memory = [bytearray(b) for b in prep.buffers]
        machine = cls(prep.program, prep.launch, Memory(memory), prep.cbank, big.shared_bytes, prep.budget)
        wall, cpu = time.perf_counter(), time.process_time()
        try:
            stats = machine.run()
            outcome = ("ok", stats.turns, stats.steps, stats.instructions)
        except TranslatorError as exc:
            outcome = (type(exc).__name__, str(exc))
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        results[name] = (outcome, [bytes(b) for b in memory])
        print(f"{name}: {wall:.2f} s wall, {cpu:.2f} s cpu; {outcome[0]}, turns/steps/instructions {outcome[1:]}")
    if len(results) == 2:
        print("identical:", results["vector"] == results["scalar"])


if __name__ == "__main__":
    main(sys.argv[1:])

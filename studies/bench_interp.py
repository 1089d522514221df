"""How fast the CPU reference interpreter judges a launch: the library's largest case as it
is, and library kernels relaunched with grids of 262,144 threads, the size of real programs'
launches (``warpboard bench --interpreter``). Each is held to :data:`LIMIT_S` seconds on one
core; the figures are on docs/measurements.md."""
from __future__ import annotations

import dataclasses
import random
import time

from warpboard.harness.case.model import BufferSpec, Case, Param, discover_cases
from warpboard.harness.run.dispatch import prepare
from warpboard.translator import Interpreter, Memory, ScalarInterpreter, TranslatorError

LIMIT_S = 10.0
# (case, blocks of its block, words of each buffer, the u32 parameters' value); None: as recorded
LAUNCHES = (
    ("repro/rp_4_12", None, None, None),                                    # the library's largest launch
    ("captured/inlinePTX/sequence_gpu_0", 1024, (262144,), 262144),         # free mode
    ("captured/reduction/reduce2_int_2", 1024, (262144, 1024), 262144),     # BAR and shared memory
    ("repro/rp_4_12", 256, (1835520, 266240), None),                        # collectives, regions, BAR
)


def relaunch(case: Case, grid_x: int | None, words: tuple[int, ...] | None, u32: int | None) -> Case:
    """``case`` on ``grid_x`` blocks of its block, each buffer ``words`` words of random data
    (seed 1) with no expected words, each u32 parameter ``u32`` (None keeps what is given)."""
    if grid_x is None:
        return case
    rng = random.Random(1)
    buffers = tuple(BufferSpec(b.name, w, tuple(rng.randrange(1 << 16) for _ in range(w)), None)
                    for b, w in zip(case.buffers, words))
    params = tuple(Param("u32", u32) if p.kind == "u32" and u32 is not None else p for p in case.params)
    return dataclasses.replace(case, grid=(grid_x, 1, 1), buffers=buffers, params=params)


def time_launch(case: Case, interpreter=Interpreter) -> dict:
    """One run of ``case`` on ``interpreter``: its size, how it ended, wall and CPU seconds,
    and the words it left."""
    prep = prepare(case)
    memory = [bytearray(b) for b in prep.buffers]
    machine = interpreter(prep.program, prep.launch, Memory(memory), prep.cbank, case.shared_bytes, prep.budget)
    wall, cpu = time.perf_counter(), time.process_time()
    try:
        stats = machine.run()
        outcome = ["ok", stats.turns, stats.steps, stats.instructions]
    except TranslatorError as exc:
        outcome = [type(exc).__name__, str(exc)]
    return {"case": case.id, "grid": list(prep.launch.grid), "block": list(prep.launch.block),
            "threads": prep.launch.threads_per_block * prep.launch.blocks, "mode": prep.program.mode,
            "outcome": outcome, "wall_s": time.perf_counter() - wall, "cpu_s": time.process_time() - cpu,
            "buffers": [bytes(b) for b in memory]}


def interpreter_speed(root: str = "cases", launches=LAUNCHES) -> list[dict]:
    """Each launch on the interpreter, with its limit and whether it is met (CPU seconds)."""
    rows = []
    for case_id, grid_x, words, u32 in launches:
        row = time_launch(relaunch(discover_cases(root, [case_id])[0], grid_x, words, u32))
        del row["buffers"]
        row.update(limit_s=LIMIT_S, met=row["cpu_s"] <= LIMIT_S)
        rows.append(row)
    return rows


__all__ = ["LIMIT_S", "LAUNCHES", "relaunch", "time_launch", "interpreter_speed", "ScalarInterpreter"]

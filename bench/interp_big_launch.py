"""Time the CPU reference interpreter on a library case relaunched with a bigger grid, and
compare it with its scalar oracle.

    .venv/bin/python bench/interp_big_launch.py CASE GRID_X WORDS[,WORDS...] [U32|-] [vector] [scalar]

Every buffer of CASE gets WORDS words of random data (seed 1) and no expected values, every u32
parameter the value U32 (``-`` keeps the case's), the grid GRID_X blocks of the case's block.
``vector`` is the default interpreter (translator.Interpreter), ``scalar`` its oracle
(translator.ScalarInterpreter); with both, the two runs are compared (outcome, counts, words).
``warpboard bench --interpreter`` times the launches studies/bench_interp.py names.
"""
from __future__ import annotations

import sys

from warpboard.harness.case.model import discover_cases
from warpboard.studies.bench_interp import relaunch, time_launch
from warpboard.translator import Interpreter, ScalarInterpreter


def main(argv: list[str]) -> None:
    case_id, grid_x, words = argv[0], int(argv[1]), tuple(int(w) for w in argv[2].split(","))
    u32 = int(argv[3]) if len(argv) > 3 and argv[3] != "-" else None
    big = relaunch(discover_cases("cases", [case_id])[0], grid_x, words, u32)
    results = {}
    for name in argv[4:] or ["vector"]:
        row = time_launch(big, Interpreter if name == "vector" else ScalarInterpreter)
        results[name] = (row["outcome"], row["buffers"])
        print(f"{row['case']}: {row['threads']} threads, {row['mode']} mode; {name}: {row['wall_s']:.2f} s wall, "
              f"{row['cpu_s']:.2f} s cpu; {row['outcome'][0]}, turns/steps/instructions {row['outcome'][1:]}")
    if len(results) == 2:
        print("identical:", results["vector"] == results["scalar"])


if __name__ == "__main__":
    main(sys.argv[1:])

"""Per-warp turns in the interpreter: each warp takes its own turns, as the shader does where a
device's subgroups are warps (translator/README.md, "Per-warp turns"). The words stay the
chip's, a program with BAR keeps the workgroup's turns, and the counts are the shader's: the
H200 counted exactly these turns for the bench kernels."""

import json

from support.paths import CASES, ROOT
from warpboard.harness.case.model import discover_cases
from warpboard.harness.run.compare import compare
from warpboard.harness.run.dispatch import prepare, run_interpreter
from warpboard.harness.tools.bench import bench_cases


def test_every_library_case_gives_the_recorded_words_with_per_warp_turns():
    """Every turns-mode case gives the recorded words when each warp takes its own turns;
    with one warp, or with BAR, it takes the workgroup's turns."""
    checked = split = 0
    for case in discover_cases(CASES):
        prep = prepare(case)
        if prep.program.mode != "turns" or case.id == "spin/never_ends":
            continue
        per_warp = run_interpreter(prep, per_warp=True)
        assert per_warp.outcome == "ok", f"{case.id}: {per_warp.outcome}: {per_warp.detail}"
        result = compare(case, per_warp.buffers)
        assert result.total == 0, f"{case.id}: {result.summary()}"
        one_warp = prep.launch.threads_per_block <= 32
        if one_warp or any(i.spec.waits == "bar" for i in prep.program.insts):
            assert per_warp.counters["turns"] == run_interpreter(prep).counters["turns"], case.id
        else:
            split += 1
        checked += 1
    assert checked >= 100 and split >= 20, (checked, split)


def test_per_warp_turns_are_the_h200s():
    """bench_warp_trips (warp 0 of each block loops 2048 times, the others 128) took
    6,045,696 turns over its 1024 identical blocks on the H200 with per-warp turns, and
    4,196,352 with the workgroup's: the interpreter counts the first for one block, times
    1024, and the per-warp warp-turns are at most a quarter of the workgroup's."""
    def recorded(name):
        rows = json.loads((ROOT / "runs" / name).read_text())["rows"]
        return next(r for r in rows if r["case"] == "bench/bench_warp_trips")
    per_warp, workgroup = recorded("bench-nvidia-h200-per-warp.json"), recorded("bench-nvidia-h200-workgroup-turns-shared.json")
    case = next(c for c in bench_cases(1) if c.id == "bench/bench_warp_trips")
    run = run_interpreter(prepare(case), per_warp=True)
    assert run.counters["turns"] * per_warp["blocks"] == per_warp["turns"]
    assert run.counters["turns"] <= 0.25 * workgroup["turns"] / workgroup["blocks"] * case.block[0] // 32

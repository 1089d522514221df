"""Per-warp turns in the interpreter: each warp takes its own turns, as the shader does where a
device's subgroups are warps (translator/README.md, "Per-warp turns"). The words stay the
chip's, a program with BAR keeps the workgroup's turns, and a uniform warp's straight run of
blocks is one turn (chains). The counts are the shader's: test_warp_subgroups.py compares
them with the per-warp shader on lavapipe-w16, and tests/studies/test_bench.py checks
that a uniform warp takes one turn per loop iteration (bench_warp_trips)."""

from support.paths import ROOT, library_cases
from warpboard.harness.run.expectations import load_expectations
from warpboard.harness.run.compare import compare
from warpboard.harness.run.dispatch import prepare, run_interpreter


def test_every_library_case_gives_the_recorded_words_with_per_warp_turns():
    """Every turns-mode case gives the recorded words when each warp takes its own turns;
    with BAR it takes the workgroup's turns, with one warp at most as many."""
    checked = split = 0
    listed = load_expectations(ROOT / "ci" / "expectations.txt")
    for case in library_cases():
        prep = prepare(case)
        if prep.program.mode != "turns" or case.id == "spin/never_ends":
            continue
        per_warp = run_interpreter(prep, per_warp=True)
        assert per_warp.outcome == "ok", f"{case.id}: {per_warp.outcome}: {per_warp.detail}"
        result = compare(case, per_warp.buffers)
        if listed.expected(case.id, "interp") is not None:      # ci/expectations.txt: it fails, and says why
            assert result.total > 0, f"{case.id} is listed as failing on the interpreter and passes"
            continue
        assert result.total == 0, f"{case.id}: {result.summary()}"
        if any(i.spec.waits == "bar" for i in prep.program.insts):
            assert per_warp.counters["turns"] == run_interpreter(prep).counters["turns"], case.id
        elif prep.launch.threads_per_block <= 32:     # the same schedule; chained turns are not counted
            assert per_warp.counters["turns"] <= run_interpreter(prep).counters["turns"], case.id
        else:
            split += 1
        checked += 1
    assert checked >= 100 and split >= 20, (checked, split)

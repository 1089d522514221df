"""The engine's decisions: repeats that differ are FLAKY; a listing error is one cell."""
import signal
from types import SimpleNamespace

import pytest

from warpboard.harness.case.model import load_case
from warpboard.harness.run import engine
from warpboard.harness.run.engine import _fold_repeats, run_case
from warpboard.harness.run.results import CaseResult, Mismatch, Status


def _cell(status, actual=None):
    mismatches = [Mismatch("out", 3, 5, actual)] if actual is not None else []
    return CaseResult("c", "d", status, message="m", mismatches=mismatches,
                      mismatch_count=len(mismatches), outcome="ok")


def test_repeats_that_agree_keep_their_status():
    assert _fold_repeats([_cell(Status.PASS), _cell(Status.PASS)]).status is Status.PASS
    assert _fold_repeats([_cell(Status.FAIL, 7), _cell(Status.FAIL, 7)]).status is Status.FAIL


def test_repeats_that_differ_are_flaky():
    folded = _fold_repeats([_cell(Status.PASS), _cell(Status.FAIL, 7), _cell(Status.PASS)])
    assert folded.status is Status.FLAKY
    assert folded.message.startswith("differs between 3 runs: FAIL, PASS")
    assert _fold_repeats([_cell(Status.FAIL, 7), _cell(Status.FAIL, 8)]).status is Status.FLAKY


def test_unknown_opcode_is_unsupported_and_names_it(tmp_path):
    text = (tmp_path / "x.toml")
    text.write_text('''name = "x"
summary = "uses an opcode the table lacks"
tags = ["unsupported"]
sass = """
.text.x:
        /*0000*/                   FROB.X R0, R1 ;
        /*0010*/                   EXIT ;
"""
[provenance]
expected = "derived"
derivation = "never runs"
listing = "hand-written"
[launch]
grid = 1
block = 32
[[buffers]]
name = "out"
words = 1
init = 0
expected = [0]
[[params]]
buffer = "out"
''')
    result = run_case(load_case(text), "interp")
    assert result.status is Status.UNSUPPORTED
    assert result.message.endswith("x.toml:6: unknown opcode FROB.X")


def test_a_column_is_dealt_out_to_every_job_and_results_keep_case_order():
    """``warpboard run --jobs N``: one device's cases run in N worker processes (a driver
    compiles on the CPU); the results document still lists each column in case order."""

    info = SimpleNamespace(name="fake", driver_name="fake", driver_info="", driver_version="", api_version="",
                           subgroup_size=32)
    configs = [SimpleNamespace(id=f"gpu-{k}", index=k, env={}, info=info) for k in "ab"]
    cases = [SimpleNamespace(id=f"c{i}", path=f"/nowhere/c{i}.toml", tags=(), summary="", provenance={},
                             total_threads=32) for i in range(7)]
    options = engine.Options(timeout_s=30, target="support.worker_targets:pid_cell")
    doc = engine.run_matrix(cases, configs, interp=False, options=options, jobs=3)
    for device in ("gpu-a", "gpu-b"):
        cells = [r for r in doc["results"] if r["device"] == device]
        assert [r["case"] for r in cells] == [f"c{i}" for i in range(7)]
        assert len({r["message"] for r in cells}) == 3


def test_ctrl_c_in_a_matrix_sets_the_stop_flag_instead_of_raising():
    """A KeyboardInterrupt raised in the main thread can land inside concurrent.futures.wait
    while it holds a future's lock, and the run then hangs; so inside a matrix SIGINT only
    sets the flag the columns check (and kills the workers)."""
    # raise_signal delivers to this (the main) thread and runs the Python handler before it
    # returns: os.kill may deliver to another thread of the process (a worker pool's), and the
    # handler then runs whenever the main thread next looks, which made this test flaky
    # Python's own handler first: whatever handler this worker process had (pytest-xdist's,
    # or one an earlier test left) is what the matrix must restore, and this test names it
    outer = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        stop = engine._Stop()
        with engine._sigint_stops(stop):
            signal.raise_signal(signal.SIGINT)
            assert stop.event.is_set()
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
        with pytest.raises(KeyboardInterrupt):      # outside a matrix, Ctrl-C is Ctrl-C again
            signal.raise_signal(signal.SIGINT)
    finally:
        signal.signal(signal.SIGINT, outer)

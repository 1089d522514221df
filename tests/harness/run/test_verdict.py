"""A run fails loud: a failing cell runs again and is FLAKY only when it then passes, known
flakes and skips come from their lists, expectations that no longer fail are listed as stale,
each case's watchdog comes from its recorded cost, and every report starts with the counts and
ends with the failed cells and the command that reproduces each."""
from types import SimpleNamespace

import pytest

from warpboard.harness.run.expectations import parse_expectations
from warpboard.harness.run import engine
from warpboard.harness.run.results import Status
from warpboard import run_cmd
from warpboard.args import UsageError
from warpboard.reports import render, verdict

TARGET = "support.worker_targets:scripted_cell"
INFO = SimpleNamespace(name="fake", driver_name="fake", driver_info="", driver_version="", api_version="",
                       subgroup_size=32)
GPU = SimpleNamespace(id="gpu", index=0, env={}, info=INFO)


def run(tmp_path, names, lists=None, retries=1, repeat=1):
    """``names`` are ``<case>.<script>`` (see worker_targets.scripted_cell), one cell each on gpu."""
    cases = [SimpleNamespace(id=n.split(".")[0], path=str(tmp_path / f"{n}.toml"), tags=(), summary="",
                             provenance={}, total_threads=32) for n in names]
    options = engine.Options(timeout_s=30, target=TARGET, retries=retries)
    doc = engine.run_matrix(cases, [GPU], interp=False, options=options, lists=lists, jobs=1, repeat=repeat,
                            root=str(tmp_path))
    return doc, {r["case"]: r for r in doc["results"]}


def test_a_cell_that_fails_then_passes_is_flaky_and_not_a_failure(tmp_path):
    doc, cells = run(tmp_path, ["a.fail-ok"])
    assert cells["a"]["status"] == "FLAKY" and not Status.FLAKY.is_failure
    assert cells["a"]["message"].startswith("failed, then passed on retry (FAIL -> PASS): call 1 failed")
    assert [r["case"] for r in verdict.flaky(doc)] == ["a"] and not verdict.failed(doc)


def test_a_cell_that_fails_again_stays_a_failure_with_its_first_message(tmp_path):
    doc, cells = run(tmp_path, ["b.fail-fail"])
    assert cells["b"]["status"] == "FAIL" and cells["b"]["message"] == "call 1 failed"
    assert (tmp_path / "b.fail-fail.gpu.calls").read_text() == "2"        # ran twice


def test_without_retries_a_failure_runs_once(tmp_path):
    _, cells = run(tmp_path, ["c.fail-ok"], retries=0)
    assert cells["c"]["status"] == "FAIL"
    assert (tmp_path / "c.fail-ok.gpu.calls").read_text() == "1"


def test_a_passing_cell_is_not_retried(tmp_path):
    run(tmp_path, ["d.ok"])
    assert (tmp_path / "d.ok.gpu.calls").read_text() == "1"


def test_flakes_and_skips_lists(tmp_path):
    lists = engine.Lists(flakes=parse_expectations("gpu e  # races on this driver\n", "flakes.txt", False),
                         skips=parse_expectations("gpu f  # takes an hour\n", "skips.txt", False))
    _, cells = run(tmp_path, ["e.fail", "f.ok"], lists)
    assert cells["e"]["status"] == "FLAKY"
    assert cells["e"]["message"].startswith("a known flake (flakes.txt:1: races on this driver): ")
    assert cells["f"]["status"] == "UNSUPPORTED" and cells["f"]["message"] == "skipped: skips.txt:1: takes an hour"
    assert not (tmp_path / "f.ok.gpu.calls").exists()


def test_an_expectation_whose_cells_pass_is_stale(tmp_path):
    lists = engine.Lists(expectations=parse_expectations("gpu g  # fixed since?\ngpu h\n", "ex.txt"))
    doc, cells = run(tmp_path, ["g.ok", "h.fail"], lists)
    assert (cells["g"]["status"], cells["h"]["status"]) == ("XPASS", "XFAIL")
    assert doc["stale_expectations"] == [{"where": "ex.txt:1", "rule": "gpu g", "cells": ["g on gpu"]}]
    assert (tmp_path / "g.ok.gpu.calls").read_text() == "1"                # an XPASS is not retried
    text = render.terminal(doc)
    assert "Stale expectations (1):\n  ex.txt:1: 'gpu g' no longer fails: g on gpu passed" in text


def test_reports_start_with_the_counts_and_end_with_failures_and_commands(tmp_path):
    doc, _ = run(tmp_path, ["i.fail", "j.ok", "k.fail-ok"])
    text = render.terminal(doc)
    assert text.startswith("3 cells on 1 device: 1 PASS, 1 FLAKY, 1 FAIL\n")
    command = f"warpboard run i --device gpu --root {tmp_path} -v"
    assert text.rstrip().endswith(f"Failed cells (1):\ni on gpu: FAIL\n    call 1 failed\n    $ {command}\n\n"
                                  f"Flaky cells (1):\nk on gpu: FLAKY\n"
                                  f"    failed, then passed on retry (FAIL -> PASS): call 1 failed\n"
                                  f"    $ warpboard run k --device gpu --root {tmp_path} -v")
    md = render.markdown(doc)
    assert md.index("**3 cells on 1 device") < md.index("### Failed cells (1)") < md.index("<details><summary>Scoreboard")
    assert f"  `{command}`" in md


def test_the_interpreter_column_reproduces_with_device_none():
    doc = {"run": {"root": "cases", "mode": "turns"}}
    assert verdict.repro_command(doc, {"case": "vote/x", "device": "interp"}) == \
        "warpboard run vote/x --device none --mode turns -v"


@pytest.mark.parametrize("cost, floor, watchdog", [(0.0, 60.0, 60.0), (10.0, 60.0, 60.0), (44.4, 60.0, 177.6)])
def test_a_case_watchdog_is_its_recorded_cost_times_four_with_a_floor(cost, floor, watchdog):
    options = engine.Options(timeout_s=floor, costs={"x": {"gpu": cost}})
    assert options.timeout_for("x", "gpu") == pytest.approx(watchdog)
    assert options.for_worker("x", "gpu")["timeout_s"] == pytest.approx(watchdog)
    assert options.timeout_for("unknown", "gpu") == floor


def test_costs_are_per_device_and_a_device_without_one_gets_the_slowest():
    options = engine.Options(timeout_s=60, costs={"x": {"lavapipe-w4": 10.0, "lavapipe-25.0.7-w8": 50.0}})
    assert options.timeout_for("x", "lavapipe-w4") == 60
    assert options.timeout_for("x", "lavapipe-25.0.7-w8") == 200
    assert options.timeout_for("x", "new-device") == 200


def test_the_costs_file_records_each_cell_and_a_timeout_as_at_least_its_time(tmp_path):
    doc = {"results": [{"case": "a", "device": "w4", "status": "PASS", "time_s": 1.234},
                       {"case": "a", "device": "w8", "status": "TIMEOUT", "time_s": 60.0},
                       {"case": "b", "device": "w4", "status": "CRASH", "time_s": 0.5}]}
    old = tmp_path / "costs.json"
    old.write_text('{"b": 3.0, "c": 2.0}')                  # the older form: one number a case
    before = run_cmd.load_costs(str(old))
    assert before == {"b": {"*": 3.0}, "c": {"*": 2.0}}
    assert run_cmd.costs_of(doc, before) == {"a": {"w4": 1.23, "w8": 60.0}, "b": {"*": 3.0}, "c": {"*": 2.0}}
    old.write_text('{"b": "slow"}')
    with pytest.raises(UsageError, match="case id -> seconds"):
        run_cmd.load_costs(str(old))

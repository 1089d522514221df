"""End to end on real parts: listing -> SPIR-V -> lavapipe -> comparison -> scoreboard.

Also: a crashed worker, a hang and a fault each cost one cell, and the run goes on.
"""
import json
import subprocess
import sys

import pytest
from warpboard.harness.case.model import discover_cases
from warpboard.harness.run import engine
from warpboard.harness.run.results import Status

from support.paths import ROOT

pytestmark = pytest.mark.xdist_group("lavapipe-w4")


@pytest.fixture
def lavapipe_w4(lavapipe_config):
    return lavapipe_config(4)


def test_warpboard_run_writes_a_scoreboard(tmp_path, lavapipe_w4):
    out = tmp_path / "r.json"
    cmd = [sys.executable, "-m", "warpboard", "run", "truth/uneven_branch_ballot", "truth/exit_in_loop",
           "basic/bit_ops", "--root", str(ROOT / "cases"), "--device", "lavapipe-w4", "-o", str(out),
           "--markdown", str(tmp_path / "r.md")]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text())
    cells = {(r["case"], r["device"]): r for r in doc["results"]}
    assert set(cells) == {(c, d) for c in ("truth/uneven_branch_ballot", "truth/exit_in_loop", "basic/bit_ops")
                          for d in ("lavapipe-w4", "interp")}
    assert all(r["status"] == "PASS" for r in cells.values()), cells
    assert cells[("truth/uneven_branch_ballot", "lavapipe-w4")]["mode"] == "turns"
    assert cells[("basic/bit_ops", "lavapipe-w4")]["mode"] == "free"
    assert cells[("truth/uneven_branch_ballot", "lavapipe-w4")]["subgroup_size"] == 4
    assert "| truth/exit\\_in\\_loop" in (tmp_path / "r.md").read_text()
    assert "truth/exit_in_loop" in proc.stdout and "PASS" in proc.stdout


FAULTING = """\
        /*0000*/                   S2R R0, SR_TID.X ;
        /*0010*/                   IMAD.MOV.U32 R3, RZ, RZ, 0x4 ;
        /*0020*/                   IMAD.WIDE.U32 R2, R0, R3, c[0x0][0x160] ;
        /*0030*/                   STG.E [R2.64+0x80], R0 ;
        /*0040*/                   EXIT ;
"""


def _faulting(make_case, name):
    """A case whose 32 threads each store one word past the end of its 32-word buffer."""
    make_case.write(f"iso/{name}", sass=FAULTING, tags=["fault"],
                    provenance={"expected": "derived", "listing": "hand-written",
                                "derivation": "thread 0..31 store at out[32+t], past the 32 words "
                                              "of out: every store faults"},
                    buffers=[{"name": "out", "words": 32, "init": 0, "expected": [0] * 32}])


def test_crash_hang_and_fault_each_cost_one_cell(make_case, lavapipe_w4):
    for name in ("crash_me", "hang_me", "faulting"):
        _faulting(make_case, name)
    for good in ("truth/shfl_xor_reduce", "truth/loop_ballot"):
        make_case.copy(good)
    cases = discover_cases(make_case.root)
    assert [c.id for c in cases] == ["iso/crash_me", "iso/faulting", "iso/hang_me",
                                     "truth/loop_ballot", "truth/shfl_xor_reduce"]
    # retries are tested on their own (tests/harness/run/test_verdict.py); here a failure runs once,
    # and the hung worker is killed 2 s past its cell's watchdog
    options = engine.Options(timeout_s=3.0, kill_after_s=2.0, target="support.worker_targets:misbehave", retries=0)
    doc = engine.run_matrix(cases, [lavapipe_w4], interp=True, options=options, root=str(make_case.root))
    cells = {(r["case"], r["device"]): r for r in doc["results"]}
    for device in ("lavapipe-w4", "interp"):
        assert cells[("iso/crash_me", device)]["status"] == "CRASH"
        assert cells[("iso/hang_me", device)]["status"] == "TIMEOUT"
        fault = cells[("iso/faulting", device)]
        assert fault["status"] == "FAULT"
        assert "pc 0x0030" in fault["message"] and "outside every buffer" in fault["message"]
        assert cells[("truth/shfl_xor_reduce", device)]["status"] == "PASS"
        assert cells[("truth/loop_ballot", device)]["status"] == "PASS"


def test_a_lost_device_costs_one_cell(make_case, lavapipe_w4):
    """The driver loses the device in one cell: that cell is DEVICE_LOST, saying so, and the
    worker's later cells run on a new device in a new process and pass."""
    make_case.copy("truth/shfl_xor_reduce", "iso/lose_me")
    later = ("truth/loop_ballot", "truth/shfl_xor_reduce", "vote/vote_uni")
    for good in later:
        make_case.copy(good)
    cases = discover_cases(make_case.root)
    assert cases[0].id == "iso/lose_me"
    options = engine.Options(timeout_s=30.0, target="support.worker_targets:lose_device", retries=0)
    doc = engine.run_matrix(cases, [lavapipe_w4], interp=False, options=options,
                            root=str(make_case.root), jobs=1)
    cells = {r["case"]: r for r in doc["results"]}
    lost = cells["iso/lose_me"]
    assert lost["status"] == "DEVICE_LOST", lost["message"] + (lost.get("traceback") or "")
    assert "VK_ERROR_DEVICE_LOST" in lost["message"] and "next cell runs on a new device" in lost["message"]
    pids = {lost["message"].rsplit("[pid ", 1)[1]}
    for case in later:
        assert cells[case]["status"] == "PASS", cells[case]["message"]
        pids.add(cells[case]["message"].rsplit("[pid ", 1)[1])
    assert len(pids) == 2       # the lost one, and one new worker for every later cell


def test_a_mismatch_names_thread_warp_and_lane(make_case):
    make_case.copy("truth/shfl_xor_reduce", "iso/wrong", edit=lambda text: text.replace("26416", "26417", 1))
    result = engine.run_case(make_case.load("iso/wrong"), "interp")
    assert result.status is Status.FAIL
    assert result.mismatch_count == 1
    assert result.message == "1 words differ: thread 0 (warp 0 lane 0) out[0]: expected 0x6731, got 0x6730"

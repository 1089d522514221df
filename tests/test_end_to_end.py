"""End to end on real parts: listing -> SPIR-V -> lavapipe -> comparison -> scoreboard.

Also: a crashed worker, a hang and a fault each cost one cell, and the run goes on.
"""
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from harness import devices, engine
from harness.cases import discover_cases, load_case
from harness.results import Status

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.xdist_group("lavapipe-w4")


@pytest.fixture(scope="module")
def lavapipe_w4():
    found = [c for c in devices.discover() if c.id == "lavapipe-w4"]
    if not found:
        pytest.skip("no lavapipe device (install mesa-vulkan-drivers)")
    return found[0]


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


FAULTING = '''
name = "{name}"
summary = "stores one word past the end of its buffer"
tags = ["fault"]
sass = """
        /*0000*/                   S2R R0, SR_TID.X ;
        /*0010*/                   IMAD.MOV.U32 R3, RZ, RZ, 0x4 ;
        /*0020*/                   IMAD.WIDE.U32 R2, R0, R3, c[0x0][0x160] ;
        /*0030*/                   STG.E [R2.64+0x80], R0 ;
        /*0040*/                   EXIT ;
"""
[provenance]
expected = "derived"
derivation = "thread 0..31 store at out[32+t], past the 32 words of out: every store faults"
listing = "hand-written"
[launch]
grid = [1, 1, 1]
block = [32, 1, 1]
[[buffers]]
name = "out"
words = 32
init = 0
expected = {expected}
[[params]]
buffer = "out"
'''


def _write(tmp_path, name):
    path = tmp_path / "cases" / "iso" / f"{name}.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(FAULTING.format(name=name, expected=[0] * 32))
    return path


def test_crash_hang_and_fault_each_cost_one_cell(tmp_path, lavapipe_w4):
    for name in ("crash_me", "hang_me", "faulting"):
        _write(tmp_path, name)
    good = tmp_path / "cases" / "truth"
    shutil.copytree(ROOT / "cases" / "truth", good)
    cases = discover_cases(tmp_path / "cases", ["iso/*", "truth/shfl_xor_reduce", "truth/loop_ballot"])
    options = engine.Options(timeout_s=3.0, target="isolation_targets:misbehave")
    doc = engine.run_matrix(cases, [lavapipe_w4], interp=True, options=options, root=str(tmp_path / "cases"))
    cells = {(r["case"], r["device"]): r for r in doc["results"]}
    for device in ("lavapipe-w4", "interp"):
        assert cells[("iso/crash_me", device)]["status"] == "CRASH"
        assert cells[("iso/hang_me", device)]["status"] == "TIMEOUT"
        fault = cells[("iso/faulting", device)]
        assert fault["status"] == "FAULT"
        assert "pc 0x0030" in fault["message"] and "outside every buffer" in fault["message"]
        assert cells[("truth/shfl_xor_reduce", device)]["status"] == "PASS"
        assert cells[("truth/loop_ballot", device)]["status"] == "PASS"


def test_a_mismatch_names_thread_warp_and_lane(tmp_path):
    path = tmp_path / "cases" / "iso" / "wrong.toml"
    path.parent.mkdir(parents=True)
    text = (ROOT / "cases" / "truth" / "shfl_xor_reduce.toml").read_text()
    text = text.replace('listing = "kernels.sm_86.sass"', f'listing = "{ROOT / "cases/truth/kernels.sm_86.sass"}"')
    text = text.replace('source = "kernels.cu"', "")
    text = text.replace("26416", "26417", 1)
    path.write_text(text)
    result = engine.run_case(load_case(path, tmp_path / "cases"), "interp")
    assert result.status is Status.FAIL
    assert result.mismatch_count == 1
    assert result.message == "1 words differ: thread 0 (warp 0 lane 0) out[0]: expected 0x6731, got 0x6730"

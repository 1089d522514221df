"""The pytest plugin: `pytest cases/` gives one item per case and device, with statuses as outcomes."""
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _pytest(*args, cwd=ROOT):
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rxXfs", *args]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, timeout=300)


def test_items_are_case_by_device_and_failures_name_the_thread(tmp_path):
    cases = tmp_path / "cases" / "truth"
    cases.mkdir(parents=True)
    for name in ("kernels.sm_86.sass", "kernels.cu", "shfl_xor_reduce.toml"):
        shutil.copy(ROOT / "cases" / "truth" / name, cases / name)
    wrong = (cases / "shfl_xor_reduce.toml").read_text().replace("26416", "26417", 1)
    (cases / "wrong.toml").write_text(wrong.replace('name = "shfl_xor_reduce"', 'name = "wrong"'))
    run = _pytest(str(tmp_path / "cases"), "--device", "none", "--collect-only", cwd=tmp_path)
    assert "shfl_xor_reduce.toml::interp" in run.stdout and "wrong.toml::interp" in run.stdout, run.stdout
    run = _pytest(str(tmp_path / "cases"), "--device", "none", cwd=tmp_path)
    assert "1 failed, 1 passed" in run.stdout, run.stdout
    assert "FAIL: truth/wrong on interp" in run.stdout
    assert "thread 0 (warp 0 lane 0) out[0]: expected 0x6731, got 0x6730" in run.stdout


def test_expected_livelock_is_xfail():
    run = _pytest(str(ROOT / "cases" / "spin" / "never_ends.toml"), "--device", "none")
    assert "1 xfailed" in run.stdout, run.stdout

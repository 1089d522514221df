"""The installed package, as a new user gets it: the wheel built from the repository installs
everything under the ``warpboard`` name, and ``warpboard --help`` and ``warpboard run`` work in a
fresh virtual environment, away from the source tree, on a case copied there."""
from __future__ import annotations

import json
import os
import shutil
import site
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest
from support.paths import CASES, ROOT

SOURCES = ("pyproject.toml", "README.md", "translator", "harness", "authoring", "studies", "reports", "warpboard")
CASE = "truth/loop_ballot"
# the tests share one wheel and one virtual environment (module fixtures): on one worker, built once
pytestmark = pytest.mark.xdist_group("wheel")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel, built from a copy of the sources (a build in place would write build/ and
    an egg-info into the checkout the other tests read)."""
    src, dist = tmp_path_factory.mktemp("src"), tmp_path_factory.mktemp("dist")
    for name in SOURCES:
        copy = shutil.copytree if (ROOT / name).is_dir() else shutil.copy2
        copy(ROOT / name, src / name, **({"ignore": shutil.ignore_patterns("__pycache__")}
                                         if (ROOT / name).is_dir() else {}))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q",
                    "-w", str(dist), str(src)], check=True, capture_output=True, timeout=300)
    found = list(dist.glob("warpboard-*.whl"))
    assert len(found) == 1, found
    return found[0]


@pytest.fixture(scope="module")
def installed(wheel, tmp_path_factory) -> Path:
    """A fresh venv with the wheel and nothing of the checkout; third-party packages come from
    the test's own environment through a .pth line (plain paths: its .pth files, the editable
    install's among them, are not run)."""
    env_dir = tmp_path_factory.mktemp("venv")
    venv.create(env_dir, with_pip=False)
    python = env_dir / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                             capture_output=True, text=True, check=True).stdout.strip()
    Path(purelib, "third_party.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps",
                    "--no-index", str(wheel)], check=True, capture_output=True, timeout=300)
    return env_dir


def test_the_wheel_holds_only_the_warpboard_package(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert tops == {"warpboard"}
    for module in ("warpboard/translator/emit/turns/loop.py", "warpboard/studies/fuzz/campaign.py",
                   "warpboard/studies/fuzz/small.toml", "warpboard/reports/render.py", "warpboard/cli.py"):
        assert module in names, module


def _run(installed: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return subprocess.run([str(installed / "bin" / "warpboard"), *args], capture_output=True, text=True,
                          cwd=cwd, env=env, timeout=300)


def test_help_runs_outside_the_checkout(installed, tmp_path):
    proc = _run(installed, "--help", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "run" in proc.stdout and "new-case" in proc.stdout
    where = subprocess.run([str(installed / "bin" / "python"), "-c",
                            "import warpboard.translator as t; print(t.__file__)"],
                           capture_output=True, text=True, cwd=tmp_path, check=True).stdout
    assert where.startswith(str(installed)), where


def test_devices_lists_the_vulkan_devices(installed, tmp_path):
    proc = _run(installed, "devices", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("id ")


def test_run_a_copied_case_on_the_interpreter(installed, tmp_path):
    case_dir = tmp_path / "cases" / Path(CASE).parent
    case_dir.mkdir(parents=True)
    for path in (CASES / Path(CASE).parent).glob("*"):
        if path.is_file():
            shutil.copy2(path, case_dir / path.name)
    shutil.copytree(CASES / Path(CASE).parent / "data", case_dir / "data")
    proc = _run(installed, "run", CASE, "--device", "none", "--strict", "-o", "r.json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    cells = json.loads((tmp_path / "r.json").read_text())["results"]
    assert [(c["case"], c["device"], c["status"]) for c in cells] == [(CASE, "interp", "PASS")]

"""The interposer's guards and kernel times (authoring/capture/interposer.c), without a GPU: ``fake_driver.c``
includes the interposer and fakes the driver calls it makes (device memory is host memory),
logs five allocations and makes five launches that store past the end of their allocation or
not; the test reads the record as ``warpboard capture`` does (authoring/capture/log.py) and the
reasons it gives (authoring/capture/check.py). It needs a C compiler and the CUDA toolkit's
headers (cuda.h, cupti.h), and is skipped where they are missing."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from warpboard.authoring.capture import record
from warpboard.authoring.capture.check import guard_reason
from warpboard.authoring.capture.log import read_run
from warpboard.authoring.toolchain import ToolMissing

HERE = Path(__file__).parent


def _include_dirs() -> list[Path]:
    try:
        home = record.cuda_home()
    except ToolMissing as e:
        pytest.skip(str(e))
    dirs = [d for d in (home / "include", home / "extras" / "CUPTI" / "include") if d.is_dir()]
    if not any((d / "cuda.h").is_file() for d in dirs):
        pytest.skip(f"no cuda.h under {home}")
    return dirs


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> Path:
    cc = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")
    if not cc:
        pytest.skip("no C compiler")
    folder = tmp_path_factory.mktemp("interposer")
    exe = folder / "fake_driver"
    subprocess.run([cc, "-O1", "-Wall", "-o", str(exe), str(HERE / "fake_driver.c"),
                    f"-I{record.SOURCE.parent}", *(f"-I{d}" for d in _include_dirs()), "-lpthread"],
                   check=True, capture_output=True, text=True, timeout=120)
    run = folder / "run1"
    run.mkdir()
    subprocess.run([str(exe)], check=True, env={**os.environ, "WARPBOARD_CAPTURE_DIR": str(run)}, timeout=60)
    return run


def test_each_launch_watches_the_allocation_after_its_own(recorded):
    _, launches = read_run(recorded)
    a, b, c, d = sorted(base for base, _ in launches[0].live)
    assert [len(l.live) for l in launches] == [4] * 5                   # the freed one is gone
    assert [(g.base, g.size, g.region) for g in launches[0].guards] == [(b, 4096, 0)]
    assert [(g.base, g.size, g.region) for g in launches[2].guards] == [(d, 512, 0)]
    assert launches[4].guards == []                                    # nothing live after d
    # the first byte that differs: 1025.0f is 0x44802000, its low byte 0 as before
    assert [[g.changed for g in l.guards] for l in launches] == [[-1], [1], [-1], [1], []]


def test_a_launch_that_changed_its_guard_writes_outside_its_allocations(recorded):
    _, launches = read_run(recorded)
    a, c = launches[0].regions[0].base, launches[2].regions[0].base
    reasons = [guard_reason(l) for l in launches]
    assert reasons[0] is reasons[2] is reasons[4] is None              # 2: in the padding, unseen
    assert reasons[1] == (f"writes outside its allocations: the chip changed the byte at 0x{a + 4097:x}, 1 byte "
                          f"past the end of region 0 (4096 bytes at 0x{a:x}), in an allocation the launch was not given")
    assert reasons[3] == (f"writes outside its allocations: the chip changed the byte at 0x{c + 4097:x}, 97 bytes "
                          f"past the end of region 0 (4000 bytes at 0x{c:x}), in an allocation the launch was not given")


def test_each_launch_carries_its_kernel_time_from_cupti(recorded):
    """Matched by correlation id: 10 ns per float stored; launch 4's record never came."""
    _, launches = read_run(recorded)
    assert [l.device_ns for l in launches] == [10240, 10300, 10100, 10400, None]

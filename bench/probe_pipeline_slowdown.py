"""Why a GPU runs the bench kernels slower after the library: its clock, not the VkDevice.

    python3 bench/probe_pipeline_slowdown.py nvidia      # a device id prefix from `warpboard devices`

(warpboard installed: `make setup`, or `pip install .`.)

(For GPUs: the full 1024-block grid is far too slow on lavapipe.)

Prints the plain loop's time on the device clock, with the SM clock nvidia-smi reads where it
is there: on a fresh VkDevice, after the first 40 library cases ran on it, on a second VkDevice
opened then, on the first again at once and 5 s later, and after `warpboard bench`'s warm-up
(studies.bench.warm_up).

What it showed on an H100 (figures and run files on docs/measurements.md): the loop several
times slower after the library, at the idle clock, on that VkDevice and on every other one of the
process alike, with the driver's shader cache cold or warm. nvidia-smi gives "Idle" as the
reason: the library's short dispatches and compiles leave the GPU idle most of the time, and it
lowers its clock. Creating a VkDevice raises the clock for a few seconds, which is why a new
VkDevice looked like the cure. Single dispatches with the host's work between them do not bring
the clock back; back-to-back dispatches do.
"""
import statistics
import subprocess
import sys
import time
from pathlib import Path

from warpboard.harness import vk
from warpboard.harness.case.model import discover_cases
from warpboard.harness.run import devices
from warpboard.harness.run.dispatch import prepare, run_vulkan, translate_case
from warpboard.studies.bench import bench_cases, warm_up


def sm_clock() -> str:
    """The SM clock as nvidia-smi reads it, or "" where there is no nvidia-smi."""
    try:
        return subprocess.run(["nvidia-smi", "--query-gpu=clocks.sm", "--format=csv,noheader"],
                              capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def main(prefix: str) -> None:
    config = next(d for d in devices.discover() if d.id.startswith(prefix))
    plain = prepare(next(c for c in bench_cases(None) if c.name == "bench_plain_loop"))
    shader, _ = translate_case(plain, "free", use_cache=False)
    library = [prepare(c) for c in discover_cases(Path(__file__).resolve().parents[1] / "cases")][:40]
    others = [(p, translate_case(p, None, use_cache=False)[0]) for p in library]

    def plain_ms(device, label):
        times = [run_vulkan(device, plain, shader).timings.get("gpu_s", 0.0) for _ in range(5)]
        print(f"{label:45s} {statistics.median(times[1:]) * 1000:8.4f} ms  {sm_clock()}", flush=True)

    with vk.Device(config.index) as device:
        plain_ms(device, "fresh VkDevice")
        for prep, other in others:
            run_vulkan(device, prep, other)
        plain_ms(device, f"  after {len(others)} library cases ran on it")
        with vk.Device(config.index) as second:
            plain_ms(second, "  a second VkDevice, opened now")
        plain_ms(device, "  the first again")
        time.sleep(5)
        plain_ms(device, "  the first, 5 s later")
        warm = warm_up(device, plain, shader)
        print(f"  warm-up: {warm}", flush=True)
        plain_ms(device, "  the first, after the warm-up")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "nvidia")

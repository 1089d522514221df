"""Does a device run the vote-loop benchmark slower after it has compiled and run other pipelines?

    python3 bench/probe_pipeline_slowdown.py nvidia      # a device id prefix from `warpboard devices`

(For GPUs: the full 1024-block grid takes about a minute per dispatch on lavapipe.)

Prints the vote loop's time on the device clock: on a fresh VkDevice, after the first 60 library
cases ran on it, on a new VkDevice in the same process, and after the same 60 ran on that one.
On NVIDIA 580.159.04 (H200): 6.0, 34.4, 6.0 and 6.0 ms.

What it depends on (H200, 2026-12-03, the vote loop with per-warp turns): 4.10 ms fresh and
23.5 ms after the 60 cases when the driver compiles them cold (its shader disk cache off,
`__GL_SHADER_DISK_CACHE=0`, or a new cache folder, `__GL_SHADER_DISK_CACHE_PATH`); 4.10 and
4.10 ms in a second process whose compiles the disk cache serves. Destroying the 60 pipelines
or idling 3 s does not bring it back; a new VkDevice does. So `warpboard bench` measures its
kernels on a VkDevice of their own ("alone") beside the library's ("after_library").
"""
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from warpboard.harness import vk  # noqa: E402
from warpboard.harness.case.model import discover_cases  # noqa: E402
from warpboard.harness.run import devices
from warpboard.harness.run.dispatch import prepare, run_vulkan, translate_case  # noqa: E402
from warpboard.harness.tools.bench import bench_cases  # noqa: E402


def main(prefix: str) -> None:
    config = next(d for d in devices.discover() if d.id.startswith(prefix))
    vote = prepare(next(c for c in bench_cases(None) if c.name == "bench_vote_loop"))
    shader, _ = translate_case(vote, None, use_cache=False)
    library = [prepare(c) for c in discover_cases(Path(__file__).resolve().parents[1] / "cases")][:60]
    others = [(p, translate_case(p, None, use_cache=False)[0]) for p in library]

    def vote_ms(device, label):
        times = [run_vulkan(device, vote, shader).timings.get("gpu_s", 0.0) for _ in range(5)]
        print(f"{label:45s} {statistics.median(times[1:]) * 1000:8.2f} ms", flush=True)

    for label in ("fresh VkDevice", "new VkDevice, same process"):
        with vk.Device(config.index) as device:
            vote_ms(device, label)
            for prep, other in others:
                run_vulkan(device, prep, other)
            vote_ms(device, f"  after {len(others)} library cases ran on it")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "nvidia")

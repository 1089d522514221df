"""Turns mode's bookkeeping in the heap where workgroup memory cannot hold it beside the
kernel's own (translator/emit/turns/storage.py): the module then stays within the device's
maxComputeSharedMemorySize, validates, and gives the words it gives in workgroup memory."""
import subprocess

import pytest
from warpboard.harness.run import dispatch
from warpboard.harness.run.engine import Options, run_case, shader_limit
from warpboard.harness.run.results import Status
from warpboard.translator import Target, workgroup_bytes

from support.paths import library_case

# collectives, BAR with shared memory, BSSY/BSYNC regions and WARPSYNC.EXCLUSIVE: every array
# of the bookkeeping, each read and written in the heap
SPILLED = ("truth/loop_ballot", "barrier/named_arrive_sync", "random/left_loop_then_reduce")


def _valid(spirv: bytes, tmp_path) -> None:
    path = tmp_path / "k.spv"
    path.write_bytes(spirv)
    done = subprocess.run(["spirv-val", "--target-env", "vulkan1.1", str(path)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("warp_subgroups", [False, True])
def test_a_block_of_1024_threads_fits_the_limit_with_its_bookkeeping_in_the_heap(warp_subgroups, tmp_path):
    prep = dispatch.prepare(library_case("repro/rp_4_12"))        # 1024 threads, 7 convergence barriers, BAR
    whole = dispatch.translate_case(prep, None, Target(warp_subgroups=warp_subgroups), use_cache=False)[0]
    assert whole.scratch_words == 0 and workgroup_bytes(whole.spirv) > 49152
    for limit in (32768, 49152):        # lavapipe's and NVIDIA's maxComputeSharedMemorySize
        spilled = dispatch.translate_case(prep, None, Target(warp_subgroups=warp_subgroups, workgroup_limit=limit),
                                          use_cache=False)[0]
        assert workgroup_bytes(spilled.spirv) <= limit
        assert spilled.scratch_words >= 1024 * 7        # one word per thread and convergence barrier at least
        _valid(spilled.spirv, tmp_path)


class _Limited:
    """An open device that reports less workgroup memory than it has."""

    def __init__(self, device, limit: int):
        import dataclasses
        self._device, self.info = device, dataclasses.replace(device.info, max_shared_memory=limit)

    def __getattr__(self, name):
        return getattr(self._device, name)


@pytest.mark.xdist_group("lavapipe-w8")
@pytest.mark.parametrize("case_id", SPILLED)
def test_bookkeeping_in_the_heap_gives_the_recorded_words(case_id, vulkan_device):
    case = library_case(case_id)
    prep = dispatch.prepare(case)
    shared = case.shared_bytes if prep.program.uses_shared else 0
    limit = shared + 256        # the kernel's shared memory fits, the bookkeeping does not
    limited = _Limited(vulkan_device, limit)
    shader = dispatch.translate_case(prep, None, Target(workgroup_limit=limit), use_cache=False)[0]
    assert shader.scratch_words > 0, "the bookkeeping should not fit"
    result = run_case(case, "vulkan", limited, Options())
    assert result.status is Status.PASS, result.message


def test_a_module_over_the_limit_is_named_not_dispatched():
    prep = dispatch.prepare(library_case("repro/rp_4_12"))
    spirv = dispatch.translate_case(prep, None, use_cache=False)[0].spirv

    class Info:
        max_shared_memory = 49152
    why = shader_limit(spirv, Info())
    assert why is not None and f"take {workgroup_bytes(spirv)} bytes" in why and "has 49152" in why
    Info.max_shared_memory = 1 << 20
    assert shader_limit(spirv, Info()) is None

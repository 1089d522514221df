"""Where a thread's local window lives: a slice of workgroup memory of its own on lavapipe
(no ``tight_loops``), within LOCAL_IN_WORKGROUP_BYTES for all threads together; an array in
Function storage elsewhere (translator/emit/mem.py, ``local_in_workgroup``)."""
import dataclasses
import struct

import pytest
from warpboard.harness.run import dispatch
from warpboard.harness.run.engine import Options, run_case
from warpboard.harness.run.results import Status
from warpboard.translator.emit.mem import LOCAL_IN_WORKGROUP_BYTES
from warpboard.translator.spirv.builder import OP, STORAGE
from warpboard.translator import Target

from support.paths import library_case

LOCAL_CASES = ("memory/local_divergent", "memory/local_array")


def _storage_of(spirv: bytes, name: str) -> set[int]:
    """The storage classes of the variables the module names ``name``."""
    words = struct.unpack(f"<{len(spirv) // 4}I", spirv)
    named, classes, at = set(), {}, 5
    while at < len(words):
        count, opcode = words[at] >> 16, words[at] & 0xFFFF
        if opcode == OP["Name"]:
            text = struct.pack(f"<{count - 2}I", *words[at + 2:at + count]).split(b"\0", 1)[0]
            if text == name.encode():
                named.add(words[at + 1])
        elif opcode == OP["Variable"]:
            classes[words[at + 2]] = words[at + 3]
        at += max(1, count)
    return {classes[v] for v in named if v in classes}


@pytest.mark.parametrize("case_id", LOCAL_CASES)
@pytest.mark.parametrize("mode", ["free", "turns"])
def test_lavapipe_keeps_the_local_windows_in_workgroup_memory_and_gpus_in_function_storage(case_id, mode):
    prep = dispatch.prepare(library_case(case_id))
    lavapipe = dispatch.translate_case(prep, mode, use_cache=False)[0].spirv
    gpu = dispatch.translate_case(prep, mode, Target(tight_loops=True), use_cache=False)[0].spirv
    assert _storage_of(lavapipe, "local_mem") == {STORAGE["Workgroup"]}
    assert _storage_of(gpu, "local_mem") == {STORAGE["Function"]}
    native = dispatch.translate_case(prep, None, use_cache=False, strategy="subgroup-native")[0].spirv
    assert _storage_of(native, "local_mem") == {STORAGE["Function"]}


def test_local_windows_too_large_for_workgroup_memory_stay_in_function_storage():
    case = library_case("memory/local_array")       # 128 bytes a thread
    threads = LOCAL_IN_WORKGROUP_BYTES // 128
    fits = dispatch.prepare(dataclasses.replace(case, block=(threads, 1, 1)))
    too_many = dispatch.prepare(dataclasses.replace(case, block=(2 * threads, 1, 1)))
    assert _storage_of(dispatch.translate_case(fits, "free", use_cache=False)[0].spirv, "local_mem") == {STORAGE["Workgroup"]}
    assert _storage_of(dispatch.translate_case(too_many, "free", use_cache=False)[0].spirv, "local_mem") == {STORAGE["Function"]}


@pytest.mark.xdist_group("lavapipe-w8")
@pytest.mark.parametrize("case_id", LOCAL_CASES)
def test_local_windows_in_workgroup_memory_give_the_recorded_words(case_id, vulkan_device):
    """Each thread zeroes its own words first and no thread reads another's: the chip's words,
    free and in turns."""
    for mode in ("free", "turns"):
        result = run_case(library_case(case_id), "vulkan", vulkan_device, Options(mode=mode))
        assert result.mode == mode and result.status is Status.PASS, f"{mode}: {result.message}"

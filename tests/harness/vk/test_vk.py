"""harness.vk on device 0: a hand-assembled compute shader, the pipeline cache,
SPIR-V rejection, timeouts (in a worker), and device descriptions."""
from __future__ import annotations

import json
import shutil
import struct
import subprocess

import pytest
from warpboard.harness import vk
from warpboard.harness.run.worker import Worker
from warpboard.harness.vk._base import _result_name

TARGET_ENV = "vulkan1.1"
N = 256  # invocations: 4 workgroups of 64

_HEADER = """
               OpCapability Shader
               OpMemoryModel Logical GLSL450
               OpEntryPoint GLCompute %main "main" %gid
               OpExecutionMode %main LocalSize {local} 1 1
               OpDecorate %gid BuiltIn GlobalInvocationId
               OpDecorate %arr ArrayStride 4
               OpMemberDecorate %block 0 Offset 0
               OpDecorate %block Block
               OpDecorate %in DescriptorSet 0
               OpDecorate %in Binding 0
               OpDecorate %out DescriptorSet 0
               OpDecorate %out Binding 1
       %void = OpTypeVoid
         %fn = OpTypeFunction %void
       %uint = OpTypeInt 32 0
     %v3uint = OpTypeVector %uint 3
    %pin_v3u = OpTypePointer Input %v3uint
        %gid = OpVariable %pin_v3u Input
        %arr = OpTypeRuntimeArray %uint
      %block = OpTypeStruct %arr
    %psb_blk = OpTypePointer StorageBuffer %block
      %psb_u = OpTypePointer StorageBuffer %uint
         %in = OpVariable %psb_blk StorageBuffer
        %out = OpVariable %psb_blk StorageBuffer
     %uint_0 = OpConstant %uint 0
     %uint_1 = OpConstant %uint 1
     %uint_3 = OpConstant %uint 3
       %main = OpFunction %void None %fn
      %entry = OpLabel
         %g3 = OpLoad %v3uint %gid
          %i = OpCompositeExtract %uint %g3 0
"""
_FOOTER = """
               OpReturn
               OpFunctionEnd
"""
# out[i] = in[i] * 3 + i
TRIPLE = _HEADER.format(local=64) + """
        %pin = OpAccessChain %psb_u %in %uint_0 %i
          %x = OpLoad %uint %pin
         %x3 = OpIMul %uint %x {three}
          %y = OpIAdd %uint %x3 %i
       %pout = OpAccessChain %psb_u %out %uint_0 %i
               OpStore %pout %y
""" + _FOOTER
# out[i] += in[i]: what several dispatches of one submission add up to
ACCUMULATE = _HEADER.format(local=64) + """
        %pin = OpAccessChain %psb_u %in %uint_0 %i
          %x = OpLoad %uint %pin
       %pout = OpAccessChain %psb_u %out %uint_0 %i
          %y = OpLoad %uint %pout
        %sum = OpIAdd %uint %x %y
               OpStore %pout %sum
""" + _FOOTER
# Spins on an atomic. Lavapipe silently ends any loop after 65535 iterations, so the
# hang comes from the size of the dispatch instead.
SPIN = _HEADER.format(local=64) + """
          %p = OpAccessChain %psb_u %in %uint_0 %uint_0
               OpBranch %head
       %head = OpLabel
               OpLoopMerge %merge %cont None
               OpBranch %body
       %body = OpLabel
        %old = OpAtomicIAdd %uint %p %uint_1 %uint_0 %uint_1
               OpBranch %cont
       %cont = OpLabel
               OpBranch %head
      %merge = OpLabel
""" + _FOOTER


def assemble(tmp_path, text: str, validate: bool = True) -> bytes:
    """spirv-as (and spirv-val unless told not to) the given assembly text."""
    if shutil.which("spirv-as") is None or shutil.which("spirv-val") is None:
        pytest.skip("SPIRV-Tools (spirv-as, spirv-val) not installed")
    src, out = tmp_path / "shader.spvasm", tmp_path / "shader.spv"
    src.write_text(text)
    subprocess.run(["spirv-as", "--target-env", TARGET_ENV, str(src), "-o", str(out)],
                   check=True, capture_output=True, text=True)
    if validate:
        subprocess.run(["spirv-val", "--target-env", TARGET_ENV, str(out)],
                       check=True, capture_output=True, text=True)
    return out.read_bytes()


@pytest.fixture
def triple(tmp_path):
    return assemble(tmp_path, TRIPLE.format(three="%uint_3"))


def _inputs():
    data = struct.pack(f"<{N}I", *(1000 + 7 * i for i in range(N)))
    return data, bytes(4 * N)


def test_triple_every_word_and_pipeline_cache(vulkan_device, triple):
    data, zeros = _inputs()
    for attempt in range(2):
        out = vulkan_device.run(triple, [data, zeros], groups=(N // 64, 1, 1))
        got = struct.unpack(f"<{N}I", out[1])
        for i, word in enumerate(got):
            assert word == (1000 + 7 * i) * 3 + i, f"out[{i}] on attempt {attempt}"
        assert out[0] == data
        assert set(vulkan_device.last_timings) - {"gpu_s"} == {"pipeline_s", "dispatch_s", "upload_s", "readback_s"}
        if "gpu_s" in vulkan_device.last_timings:     # the queue's own clock: inside the wall-clock time
            assert 0 < vulkan_device.last_timings["gpu_s"] <= vulkan_device.last_timings["dispatch_s"]
    assert vulkan_device.last_timings["pipeline_s"] == 0  # second run: cached pipeline


def test_dispatches_of_one_submission_each_see_the_previous_writes(vulkan_device, tmp_path):
    accumulate = assemble(tmp_path, ACCUMULATE)
    data, zeros = _inputs()
    out = vulkan_device.run(accumulate, [data, zeros], groups=(N // 64, 1, 1), dispatches=5)
    got = struct.unpack(f"<{N}I", out[1])
    for i, word in enumerate(got):
        assert word == 5 * (1000 + 7 * i), f"out[{i}] after 5 dispatches"
    with pytest.raises(ValueError, match="dispatches=0"):
        vulkan_device.run(accumulate, [data, zeros], groups=(N // 64, 1, 1), dispatches=0)


def test_odd_sizes_and_empty_dispatch(vulkan_device, triple):
    out = vulkan_device.run(triple, [b"", bytearray(b"abc")], groups=(0, 1, 1))
    assert out == [b"", b"abc"]


def test_bad_dispatch_rejected(vulkan_device, triple):
    with pytest.raises(ValueError, match="groups"):
        vulkan_device.run(triple, [b"", b""], groups=(1 << 31, 1, 1))


@pytest.mark.parametrize("blob, message", [
    (b"xyz", "whole 32-bit words"),
    (bytes(40), "bad SPIR-V magic"),
    (struct.pack("<5I", 0x07230203, 0x00010000, 0, 8, 0) + struct.pack("<I", 9 << 16),
     "word count"),
])
def test_malformed_spirv_is_rejected_before_the_driver(vulkan_device, blob, message):
    with pytest.raises(vk.SpirvError, match=message):
        vulkan_device.run(blob, [bytes(4)])


def test_missing_entry_point(vulkan_device, triple):
    with pytest.raises(vk.SpirvError, match="no GLCompute entry point 'nope'"):
        vulkan_device.run(triple, [bytes(4), bytes(4)], entry="nope")


def test_spirv_version_limit():
    header = struct.pack("<5I", 0x07230203, 0x00010600, 0, 8, 0)
    with pytest.raises(vk.SpirvError, match="SPIR-V 1.6"):
        vk.check_spirv(header, max_version=(1, 5))


def test_invalid_spirv_rejected_by_validation(vulkan_device, tmp_path):
    """validate=True keeps an invalid module (a type used as an operand) from the driver."""
    bad = assemble(tmp_path, TRIPLE.format(three="%v3uint"), validate=False)
    vulkan_device.validate = True
    try:
        with pytest.raises(vk.SpirvError, match="spirv-val .* rejected the module"):
            vulkan_device.run(bad, [bytes(1024)] * 2)
    finally:
        vulkan_device.validate = False


def test_invalid_spirv_given_to_the_driver(vulkan_infos, tmp_path, triple):
    """Unvalidated, the same module reaches the driver: lavapipe rejects it with
    VK_ERROR_UNKNOWN; NVIDIA's driver segfaults. In a worker either costs one call."""
    bad = assemble(tmp_path, TRIPLE.format(three="%v3uint"), validate=False)
    with Worker({}, "invalid-spirv") as worker:
        reply = worker.call("support.worker_targets:run_spirv", 0, bad, [bytes(1024)] * 2,
                            (1, 1, 1), 10.0, timeout_s=30)
        if vulkan_infos[0].driver_name == "llvmpipe":
            assert reply.kind == "error" and "VulkanError" in reply.error, reply
            assert "vkCreateComputePipelines" in reply.error
        else:
            assert reply.kind in ("error", "crash"), reply.describe()
        good = worker.call("support.worker_targets:run_spirv", 0, triple, [bytes(1024)] * 2,
                           (1, 1, 1), 10.0, timeout_s=30)
        assert good.ok, good.describe()


def test_dispatch_timeout_makes_device_unusable(vulkan_infos, tmp_path, triple):
    spin = assemble(tmp_path, SPIN)
    with Worker({}, "spin") as worker:
        reply = worker.call("support.worker_targets:run_spirv", 0, spin, [bytes(4), bytes(4)],
                            (65535, 1, 1), 0.3, timeout_s=30)
        assert reply.kind == "error" and reply.error.startswith("VkTimeout"), reply
        assert "the pipeline's first dispatch, which includes the shader's compile" in reply.error
        after = worker.call("support.worker_targets:run_spirv", 0, triple, [bytes(4)] * 2,
                            (1, 1, 1), 1.0, timeout_s=30)
        assert after.kind == "error" and "unusable" in after.error


def test_device_info(vulkan_infos, vulkan_device):
    info = vulkan_device.info
    assert info == vulkan_infos[0]
    assert info.subgroup_size > 0 and "compute" in info.subgroup_stages
    assert len(info.max_workgroup_size) == 3 and info.max_workgroup_invocations > 0
    assert info.max_shared_memory > 0
    assert isinstance(info.shader_int64, bool)
    assert info.api_version.count(".") == 2
    text = json.dumps(info.to_json())
    assert info.name in text


def test_vulkan_error_names_function_and_result():
    err = vk.VulkanError("vkFoo failed: VK_ERROR_UNKNOWN", function="vkFoo",
                         result="VK_ERROR_UNKNOWN")
    assert isinstance(err, RuntimeError)
    assert issubclass(vk.VkDeviceLost, vk.VulkanError)
    assert issubclass(vk.VkTimeout, vk.VulkanError)
    assert _result_name(type("VkErrorDeviceLost", (), {})) == "VK_ERROR_DEVICE_LOST"


def test_statistics_where_the_driver_has_none(vulkan_infos, triple):
    """Device(statistics=True) asks for VK_KHR_pipeline_executable_properties only where the
    driver offers it: lavapipe does not, so pipelines run as usual and carry no statistics."""
    with vk.Device(vulkan_infos[0].index, statistics=True) as device:
        assert (vk.statistics.EXECUTABLE_PROPERTIES in device.extensions) == device._statistics
        out = device.run(triple, list(_inputs()), groups=(N // 64, 1, 1))
        assert struct.unpack(f"<{N}I", out[1]) == tuple((1000 + 7 * i) * 3 + i for i in range(N))
        assert (device.last_statistics is None) == (not device._statistics)


@pytest.mark.parametrize("kind, field, value, expected", [
    ("BOOL32", "b32", 1, True), ("INT64", "i64", -5, -5), ("UINT64", "u64", 2 ** 40, 2 ** 40),
    ("FLOAT64", "f64", 0.5, 0.5)])
def test_a_driver_statistic_reads_in_its_format(kind, field, value, expected):
    stat = vk.statistics._v.VkPipelineExecutableStatisticKHR(
        format=getattr(vk.statistics._v, f"VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_{kind}_KHR"))
    setattr(stat.value, field, value)
    assert vk.statistics.statistic_value(stat) == expected


@pytest.mark.parametrize("names", [("main",), ("vertex", "fragment")])
def test_driver_statistics_are_read_per_executable(names):
    """read_statistics asks each function twice (count, then the elements with their sType
    set) and names each statistic, after its executable where there are several."""
    v, ffi = vk.statistics._v, vk.statistics._ffi
    seen = []

    def fill(count, array, items, stype):
        if array == ffi.NULL:
            count[0] = len(items)
            return v.VK_SUCCESS
        for element, item in zip(array[0:count[0]], items):
            seen.append(element.sType == stype)
            item(element)
        return v.VK_SUCCESS

    def name(text):
        def set_(element):
            ffi.memmove(element.name, text.encode() + b"\0", len(text) + 1)
        return set_

    def stat(text, value):
        def set_(element):
            name(text)(element)
            element.format, element.value.u64 = v.VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_UINT64_KHR, value
        return set_

    def properties(device, info, count, array):
        assert info.sType == v.VK_STRUCTURE_TYPE_PIPELINE_INFO_KHR
        return fill(count, array, [name(n) for n in names], v.VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_PROPERTIES_KHR)

    def statistics(device, info, count, array):
        regs = 40 + info.executableIndex
        return fill(count, array, [stat("Register Count", regs), stat("Local Memory", 0)],
                    v.VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_STATISTIC_KHR)

    got = vk.statistics.read_statistics(None, ffi.NULL, properties, statistics)
    prefix = (lambda n: "") if len(names) == 1 else (lambda n: f"{n}: ")
    assert got == {key: value for i, n in enumerate(names)
                   for key, value in ((prefix(n) + "Register Count", 40 + i), (prefix(n) + "Local Memory", 0))}
    assert seen and all(seen)

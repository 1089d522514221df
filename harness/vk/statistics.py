"""What a driver says of a pipeline's compiled code (VK_KHR_pipeline_executable_properties:
registers, spills, instruction counts...), for ``Device(statistics=True)``. NVIDIA's driver
offers the extension; lavapipe and SwiftShader do not."""
from __future__ import annotations

from ._base import VulkanError, _ffi, _text, _v

EXECUTABLE_PROPERTIES = "VK_KHR_pipeline_executable_properties"


def statistic_value(stat):
    """A VkPipelineExecutableStatisticKHR's value as a Python bool, int or float."""
    kind = stat.format
    if kind == _v.VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_BOOL32_KHR:
        return bool(stat.value.b32)
    if kind == _v.VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_INT64_KHR:
        return int(stat.value.i64)
    if kind == _v.VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_UINT64_KHR:
        return int(stat.value.u64)
    return float(stat.value.f64)


def _enumerate(fn, device, info, struct: str, stype: int):
    """The two-call enumeration of ``fn(device, info, count, array)`` into an array of
    ``struct`` whose elements carry their sType (the binding's own wrappers leave it 0):
    (the array, which owns the elements' memory: keep it while they are read; their count)."""
    count = _ffi.new("uint32_t *")
    if fn(device, info, count, _ffi.NULL) != _v.VK_SUCCESS:
        raise VulkanError(f"enumerating {struct} failed", function=struct)
    out = _ffi.new(f"{struct}[]", count[0])
    for item in out:
        item.sType = stype
    if count[0] and fn(device, info, count, out) not in (_v.VK_SUCCESS, _v.VK_INCOMPLETE):
        raise VulkanError(f"enumerating {struct} failed", function=struct)
    return out, count[0]


def read_statistics(device, pipeline, get_properties=None, get_statistics=None) -> dict:
    """The statistics of each executable of ``pipeline``, by name (one executable: its
    statistics; several: "executable: statistic"), through the extension's two functions
    (the device's own unless given)."""
    if get_properties is None:
        lib = _v._vulkan.lib
        get_properties, get_statistics = (
            _ffi.cast(f"PFN_{name}", lib.vkGetDeviceProcAddr(device, name.encode()))
            for name in ("vkGetPipelineExecutablePropertiesKHR", "vkGetPipelineExecutableStatisticsKHR"))
    pipeline_info = _ffi.new("VkPipelineInfoKHR *", {"sType": _v.VK_STRUCTURE_TYPE_PIPELINE_INFO_KHR,
                                                      "pipeline": pipeline})
    executables, n = _enumerate(get_properties, device, pipeline_info, "VkPipelineExecutablePropertiesKHR",
                                _v.VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_PROPERTIES_KHR)
    out = {}
    for index in range(n):
        exe = _ffi.new("VkPipelineExecutableInfoKHR *", {"sType": _v.VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INFO_KHR,
                                                          "pipeline": pipeline, "executableIndex": index})
        prefix = "" if n == 1 else f"{_text(executables[index].name)}: "
        stats, count = _enumerate(get_statistics, device, exe, "VkPipelineExecutableStatisticKHR",
                                  _v.VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_STATISTIC_KHR)
        for k in range(count):
            out[prefix + _text(stats[k].name)] = statistic_value(stats[k])
    return out

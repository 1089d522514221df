"""Compute pipelines: the objects a pipeline is built from, how they are built from SPIR-V and
destroyed, and the VkPipelineCache kept on disk between runs. :class:`~.device.Device` owns
its pipelines (it caches them per module and times their builds), but what a pipeline is and
how its Vulkan objects come and go depends on nothing else of the device, so it is kept apart
from the device's setup and its dispatches; each function takes the VkDevice handle it works
on, and, as everywhere in this package, each nested struct, array and string stays in a named
local until its call returns.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..files import write_atomic
from ._base import VulkanError, _call, _ffi, _v


@dataclass
class _Pipeline:
    """A compiled compute pipeline and the objects it was built from (cached per Device)."""
    module: object
    set_layout: object
    layout: object
    pipeline: object
    dispatched: bool = False    # a dispatch of it has finished (a driver may compile at the first)
    statistics: dict | None = None   # what the driver says of its code (Device(statistics=True))


def _open_pipeline_cache(device, pd, cache_dir) -> tuple[object, Path]:
    """A VkPipelineCache seeded from disk, keyed by the driver's pipelineCacheUUID, and the
    file it is kept in."""
    props = _v.vkGetPhysicalDeviceProperties(pd)
    uuid = bytes(props.pipelineCacheUUID).hex()
    cache_path = Path(cache_dir) / f"{props.vendorID:04x}-{props.deviceID:04x}-{uuid}.bin"
    try:
        data = cache_path.read_bytes() if cache_path.is_file() else b""
    except OSError:                  # an unreadable cache is no cache
        data = b""
    try:
        cache = _create_pipeline_cache(device, data)
    except VulkanError:              # data the driver refuses: start empty
        cache = _create_pipeline_cache(device, b"")
    return cache, cache_path


def _create_pipeline_cache(device, data: bytes):
    initial = _ffi.from_buffer(data) if data else None   # kept alive until the call returns
    info = _v.VkPipelineCacheCreateInfo(initialDataSize=len(data), pInitialData=initial)
    return _call("vkCreatePipelineCache", device, info, None)


def _save_pipeline_cache(device, cache, cache_path: Path) -> None:
    """Write the cache's data back (atomically); a failure only loses the cache."""
    lib = _v._vulkan.lib
    size = _ffi.new("size_t *")
    if lib.vkGetPipelineCacheData(device, cache, size, _ffi.NULL) != 0 or not size[0]:
        return
    buf = _ffi.new("char[]", size[0])
    if lib.vkGetPipelineCacheData(device, cache, size, buf) != 0:
        return
    try:
        write_atomic(cache_path, _ffi.buffer(buf, size[0])[:])
    except OSError:                  # read-only or full: the cache is lost, nothing else
        pass


def _destroy_pipeline(dev, p: _Pipeline) -> None:
    for fn, handle in (("vkDestroyPipeline", p.pipeline),
                       ("vkDestroyPipelineLayout", p.layout),
                       ("vkDestroyDescriptorSetLayout", p.set_layout),
                       ("vkDestroyShaderModule", p.module)):
        if handle is not None:
            getattr(_v, fn)(dev, handle, None)


def _build_pipeline(dev, cache, p: _Pipeline, spirv: bytes, n: int, entry: str, subgroups=None,
                    statistics: bool = False) -> None:
    """Fill ``p`` with a shader module, set and pipeline layouts for ``n`` storage buffers and
    the compute pipeline (through ``cache``); ``statistics``: capture the driver's statistics."""
    code = bytes(spirv)  # pCode points into this object: keep it alive
    module_info = _v.VkShaderModuleCreateInfo(codeSize=len(code), pCode=code)
    p.module = _call("vkCreateShaderModule", dev, module_info, None)
    bindings = [_v.VkDescriptorSetLayoutBinding(
        binding=i, descriptorType=_v.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, descriptorCount=1,
        stageFlags=_v.VK_SHADER_STAGE_COMPUTE_BIT) for i in range(n)]
    set_info = _v.VkDescriptorSetLayoutCreateInfo(
        bindingCount=n, pBindings=bindings if n else None)
    p.set_layout = _call("vkCreateDescriptorSetLayout", dev, set_info, None)
    set_layouts = [p.set_layout]
    layout_info = _v.VkPipelineLayoutCreateInfo(setLayoutCount=1, pSetLayouts=set_layouts)
    p.layout = _call("vkCreatePipelineLayout", dev, layout_info, None)
    name = _ffi.new("char[]", entry.encode())
    flags, size_info = 0, None
    if subgroups is not None:
        full, size = subgroups
        flags = _v.VK_PIPELINE_SHADER_STAGE_CREATE_REQUIRE_FULL_SUBGROUPS_BIT_EXT if full else 0
        if size is not None:
            size_info = _v.VkPipelineShaderStageRequiredSubgroupSizeCreateInfo(requiredSubgroupSize=size)
        else:
            flags |= _v.VK_PIPELINE_SHADER_STAGE_CREATE_ALLOW_VARYING_SUBGROUP_SIZE_BIT_EXT
    stage = _v.VkPipelineShaderStageCreateInfo(
        pNext=_ffi.addressof(size_info) if size_info is not None else _ffi.NULL, flags=flags,
        stage=_v.VK_SHADER_STAGE_COMPUTE_BIT, module=p.module, pName=name)
    capture = _v.VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR if statistics else 0
    create_info = _v.VkComputePipelineCreateInfo(flags=capture, stage=stage, layout=p.layout,
                                                 basePipelineIndex=-1)
    create_infos = [create_info]
    pipelines = _call("vkCreateComputePipelines", dev, cache, 1, create_infos, None)
    p.pipeline = pipelines[0]

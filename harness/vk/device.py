"""The logical device: one compute queue, cached pipelines, single timed dispatches."""
from __future__ import annotations

import hashlib
import time
from contextlib import ExitStack
from typing import Sequence

from ._base import (
    _SPIRV_MAX_BY_API,
    _WANTED_FEATURES,
    VkDeviceLost,
    VkTimeout,
    VulkanError,
    _api_tuple,
    _call,
    _ffi,
    _Instance,
    _v,
)
from .info import MAXIMAL_RECONVERGENCE, describe, device_extensions, feature_structs, maximal_reconvergence_struct
from .pipeline import _Pipeline, _build_pipeline, _destroy_pipeline, _open_pipeline_cache, _save_pipeline_cache
from .spirv_check import check_spirv, validate_spirv
from .statistics import EXECUTABLE_PROPERTIES, read_statistics


class Device:
    """One logical device with one compute queue; runs single dispatches, or batches of one back to back (not thread-safe).

    ``Device(index)`` opens the instance, the logical device (with every feature of
    ``_WANTED_FEATURES`` the device has) and a command pool. ``run`` caches shader
    modules and pipelines per (sha256, buffer count, entry) until ``close``. With
    ``validate=True`` every new module goes through spirv-val first (outside pipeline_s).
    With ``statistics=True``, where the driver offers VK_KHR_pipeline_executable_properties,
    each pipeline keeps what the driver says of its compiled code (registers, spills,
    instructions...: ``last_statistics`` after ``run``).
    """

    def __init__(self, index: int = 0, validate: bool = False, cache_dir=None, statistics: bool = False) -> None:
        self.validate = validate
        self._want_statistics = statistics
        self._statistics = False         # the extension is enabled (decided in _create_device)
        self.last_statistics: dict | None = None
        self._cache_dir = cache_dir      # where the VkPipelineCache is kept between runs
        self._cache = self._cache_path = None
        self._device = self._pool = None
        self._pipelines: dict[tuple, _Pipeline] = {}
        self._unusable: str | None = None
        self._leak = False
        self.last_timings: dict[str, float] = {}
        self._instance = _Instance()
        try:
            self._open(index)
        except BaseException:
            self.close()
            raise

    def _open(self, index: int) -> None:
        devices = self._instance.physical_devices()
        if not 0 <= index < len(devices):
            raise VulkanError(f"no Vulkan physical device {index}: {len(devices)} present")
        self._pd = devices[index]
        self.info = describe(index, self._pd, self._instance.api_version)
        api = _api_tuple(min(_v.vkGetPhysicalDeviceProperties(self._pd).apiVersion,
                             self._instance.api_version))
        self._spirv_max = _SPIRV_MAX_BY_API.get(api, (1, 6))
        major, minor = min(api, (1, 3))
        self._target_env = f"vulkan{major}.{minor}"  # for spirv-val
        self._family = self._compute_family()
        self._device = self._create_device(api)
        self._queue = _call("vkGetDeviceQueue", self._device, self._family, 0)
        pool_info = _v.VkCommandPoolCreateInfo(queueFamilyIndex=self._family)
        self._pool = _call("vkCreateCommandPool", self._device, pool_info, None)
        self._memory_type = self._host_memory_type()
        if self._cache_dir is not None:
            self._cache, self._cache_path = _open_pipeline_cache(self._device, self._pd, self._cache_dir)
        self._open_timestamps()

    def _open_timestamps(self) -> None:
        """A query pool of two timestamps around each dispatch, where the queue has them:
        ``gpu_s`` in last_timings is the device's own time for the dispatch."""
        self._queries = None
        family = _v.vkGetPhysicalDeviceQueueFamilyProperties(self._pd)[self._family]
        if family.timestampValidBits == 0:
            return
        self._tick_s = _v.vkGetPhysicalDeviceProperties(self._pd).limits.timestampPeriod * 1e-9
        self._tick_mask = (1 << family.timestampValidBits) - 1
        info = _v.VkQueryPoolCreateInfo(queryType=_v.VK_QUERY_TYPE_TIMESTAMP, queryCount=2)
        self._queries = _call("vkCreateQueryPool", self._device, info, None)

    def _compute_family(self) -> int:
        families = _v.vkGetPhysicalDeviceQueueFamilyProperties(self._pd)
        for i, family in enumerate(families):
            if family.queueFlags & _v.VK_QUEUE_COMPUTE_BIT:
                return i
        raise VulkanError(f"device {self.info.name!r} has no compute queue family")

    def _create_device(self, api: tuple[int, int]):
        """vkCreateDevice with the supported subset of _WANTED_FEATURES enabled."""
        structs = feature_structs(api)
        for key, struct in structs.items():
            target = struct.features if key == "core" else struct
            for name in _WANTED_FEATURES[key]:
                setattr(target, name, int(name in self.info.features))
        maximal = "shaderMaximalReconvergence" in self.info.features
        maximal_struct = maximal_reconvergence_struct(True) if maximal else None
        if maximal_struct is not None:
            list(structs.values())[-1].pNext = maximal_struct
        priorities = _ffi.new("float[]", [1.0])
        queue_info = _v.VkDeviceQueueCreateInfo(
            queueFamilyIndex=self._family, queueCount=1, pQueuePriorities=priorities)
        queue_infos = [queue_info]
        exts = [n for n in ("VK_KHR_portability_subset",) if n in device_extensions(self._pd)]
        exts += [MAXIMAL_RECONVERGENCE] if maximal else []
        executable = self._want_statistics and EXECUTABLE_PROPERTIES in device_extensions(self._pd)
        executable_struct = _v.VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR(
            pipelineExecutableInfo=1) if executable else None
        if executable_struct is not None:
            executable_struct.pNext = list(structs.values())[-1].pNext
            list(structs.values())[-1].pNext = _ffi.addressof(executable_struct)
            exts.append(EXECUTABLE_PROPERTIES)
        self._statistics = executable
        ext_names = [_ffi.new("char[]", n.encode()) for n in exts]
        ext_array = _ffi.new("char*[]", ext_names)
        info = _v.VkDeviceCreateInfo(
            pNext=_ffi.addressof(structs["core"]), queueCreateInfoCount=1,
            pQueueCreateInfos=queue_infos, enabledExtensionCount=len(exts),
            ppEnabledExtensionNames=ext_array if exts else None)
        return _call("vkCreateDevice", self._pd, info, None)

    def _host_memory_type(self) -> int:
        """Index of a HOST_VISIBLE | HOST_COHERENT memory type, DEVICE_LOCAL too where the
        device has one (a discrete GPU's BAR memory: the shader's accesses stay on the card,
        as a native kernel's do, instead of crossing the bus)."""
        want = _v.VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | _v.VK_MEMORY_PROPERTY_HOST_COHERENT_BIT
        props = _v.vkGetPhysicalDeviceMemoryProperties(self._pd)
        usable = [i for i in range(props.memoryTypeCount) if props.memoryTypes[i].propertyFlags & want == want]
        if not usable:
            raise VulkanError(f"device {self.info.name!r} has no host-visible coherent memory")
        local = [i for i in usable if props.memoryTypes[i].propertyFlags & _v.VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT]
        return (local or usable)[0]

    # ------------------------------------------------------------------ lifetime

    @property
    def unusable(self) -> str | None:
        """Why this device can run nothing more (timeout, device lost), or None."""
        return self._unusable

    def __enter__(self) -> "Device":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Destroy pipelines, pool, device and instance. Idempotent.

        After a timeout everything is leaked instead: work may still be in flight, and
        destroying its objects is undefined. The process is expected to end soon.
        """
        if self._leak:
            self._device = self._pool = None
            self._pipelines.clear()
            return
        if self._device is not None:
            for p in self._pipelines.values():
                _destroy_pipeline(self._device, p)
            self._pipelines.clear()
            if self._cache is not None:
                try:
                    if not self._unusable:      # a lost device's cache is not worth keeping
                        _save_pipeline_cache(self._device, self._cache, self._cache_path)
                except OSError:
                    pass
                _v.vkDestroyPipelineCache(self._device, self._cache, None)
                self._cache = None
            if self._pool is not None:
                _v.vkDestroyCommandPool(self._device, self._pool, None)
            if getattr(self, "_queries", None) is not None:
                _v.vkDestroyQueryPool(self._device, self._queries, None)
                self._queries = None
            _v.vkDestroyDevice(self._device, None)
            self._device = self._pool = None
        self._instance.close()

    # ------------------------------------------------------------------ pipelines

    @property
    def extensions(self) -> set[str]:
        """The device extensions the driver offers."""
        return device_extensions(self._pd)

    def full_subgroups(self, size: int | None = None) -> str | None:
        """Why this device cannot run a pipeline with full subgroups (of ``size``, where
        given), or None when it can: Vulkan 1.3's computeFullSubgroups and, for a size,
        subgroupSizeControl with the size within the device's range."""
        have = set(self.info.features)
        if "computeFullSubgroups" not in have:
            return "no computeFullSubgroups"
        if size is not None:
            lo, hi = self.info.min_subgroup_size, self.info.max_subgroup_size
            if "subgroupSizeControl" not in have or lo is None or not lo <= size <= hi:
                return f"no subgroup size control to {size} (range {lo}..{hi})"
        return None

    def _pipeline(self, spirv: bytes, n_buffers: int, entry: str, subgroups=None) -> _Pipeline:
        """The cached pipeline for this module, or a new one (timed in last_timings);
        ``subgroups``: None, or (full, size) asking for full subgroups of that size (None:
        any size)."""
        key = (hashlib.sha256(spirv).hexdigest(), n_buffers, entry, subgroups)
        if key in self._pipelines:
            self.last_timings["pipeline_s"] = 0.0
            self.last_statistics = self._pipelines[key].statistics
            return self._pipelines[key]
        check_spirv(spirv, entry, self._spirv_max)
        if self.validate:
            validate_spirv(spirv, self._target_env)
        start = time.perf_counter()
        p = _Pipeline(None, None, None, None)
        try:
            _build_pipeline(self._device, self._cache, p, spirv, n_buffers, entry, subgroups,
                            statistics=self._statistics)
        except VulkanError as exc:
            _destroy_pipeline(self._device, p)
            raise type(exc)(f"{exc} (module sha256 {key[0][:12]}, entry {entry!r}, "
                            f"{n_buffers} buffers)", function=exc.function,
                            result=exc.result) from exc
        self.last_timings["pipeline_s"] = time.perf_counter() - start
        if self._statistics:
            p.statistics = read_statistics(self._device, p.pipeline)
        self.last_statistics = p.statistics
        self._pipelines[key] = p
        return p

    # ------------------------------------------------------------------ running

    def run(self, spirv: bytes, buffers: Sequence[bytes | bytearray | memoryview],
            groups: tuple[int, int, int] = (1, 1, 1), entry: str = "main",
            timeout_s: float = 60.0, subgroups: tuple[bool, int | None] | None = None,
            dispatches: int = 1) -> list[bytes]:
        """Dispatch ``groups`` workgroups of ``entry`` with ``buffers`` bound as storage
        buffers (set 0, binding i) and return every buffer's contents afterwards.
        ``dispatches`` > 1 records that many dispatches back to back in one submission, each
        after the previous one's writes (a load that keeps a GPU at its working clock);
        ``last_timings["gpu_s"]`` is then the time per dispatch.

        Raises VkTimeout when the fence does not signal within ``timeout_s`` (the device
        is unusable afterwards), VkDeviceLost, SpirvError or VulkanError.
        """
        if self._unusable:
            raise VulkanError(f"device {self.info.name!r} is unusable: {self._unusable}")
        self._check_dispatch(buffers, groups)
        if dispatches < 1:
            raise ValueError(f"dispatches={dispatches}: at least one")
        self.last_timings = {"pipeline_s": 0.0, "upload_s": 0.0,
                             "dispatch_s": 0.0, "readback_s": 0.0}   # and gpu_s where the queue has timestamps
        pipe = None
        with ExitStack() as scratch:  # undoes this call's objects
            try:
                pipe = self._pipeline(bytes(spirv), len(buffers), entry, subgroups)
                out = self._run(scratch, pipe, buffers, groups, timeout_s, dispatches)
                pipe.dispatched = True
                return out
            except VkTimeout as exc:
                # The GPU may still use this call's objects and destroying in-use
                # objects is undefined: leak them (pop_all); the worker process ends.
                scratch.pop_all()
                self._unusable, self._leak = f"timed out after {timeout_s}s", True
                first = ("" if pipe is None or pipe.dispatched else
                         f"; it was the pipeline's first dispatch, which includes the shader's compile "
                         f"on drivers that compile then (lavapipe; {len(spirv) // 4} words of SPIR-V): "
                         f"a longer --timeout tells a slow compile from a hang")
                raise VkTimeout(f"dispatch of {tuple(groups)} groups did not finish within "
                                f"{timeout_s}s ({exc}); the device is now unusable{first}",
                                function=exc.function, result=exc.result) from exc
            except VkDeviceLost:
                self._unusable = "device lost"
                raise

    def _check_dispatch(self, buffers, groups) -> None:
        """Reject dispatches the device's limits forbid, before touching Vulkan."""
        limit = self.info.max_workgroup_count
        if len(groups) != 3 or any(not 0 <= g <= m for g, m in zip(groups, limit)):
            raise ValueError(f"groups {tuple(groups)} outside the device limit {limit}")
        for i, b in enumerate(buffers):
            if memoryview(b).nbytes > self.info.max_storage_buffer_range:
                raise ValueError(f"buffer {i} has {memoryview(b).nbytes} bytes; the device "
                                 f"allows {self.info.max_storage_buffer_range}")

    def _run(self, scratch: ExitStack, pipe: _Pipeline, buffers, groups, timeout_s, dispatches: int = 1):
        t = time.perf_counter()
        mapped = [self._upload(scratch, b) for b in buffers]
        dset = self._descriptor_set(scratch, pipe, [(m[0], m[3]) for m in mapped])
        t, self.last_timings["upload_s"] = time.perf_counter(), time.perf_counter() - t
        self._dispatch(scratch, pipe, dset, groups, timeout_s, dispatches)
        t, self.last_timings["dispatch_s"] = time.perf_counter(), time.perf_counter() - t
        if self._queries is not None:
            ticks = _ffi.new("uint64_t[2]")
            _call("vkGetQueryPoolResults", self._device, self._queries, 0, 2, 16, ticks, 8,
                  _v.VK_QUERY_RESULT_64_BIT | _v.VK_QUERY_RESULT_WAIT_BIT)
            self.last_timings["gpu_s"] = ((ticks[1] - ticks[0]) & self._tick_mask) * self._tick_s / dispatches
        out = [bytes(view[:nbytes]) for _, view, nbytes, _ in mapped]
        self.last_timings["readback_s"] = time.perf_counter() - t
        return out

    def _upload(self, scratch: ExitStack, data) -> tuple:
        """A mapped host-coherent storage buffer holding ``data`` (padded to whole words)."""
        dev, src = self._device, memoryview(data).cast("B")
        size = max(4, -(-src.nbytes // 4) * 4)
        info = _v.VkBufferCreateInfo(size=size, usage=_v.VK_BUFFER_USAGE_STORAGE_BUFFER_BIT,
                                     sharingMode=_v.VK_SHARING_MODE_EXCLUSIVE)
        buf = _call("vkCreateBuffer", dev, info, None)
        scratch.callback(lambda: _v.vkDestroyBuffer(dev, buf, None))
        req = _v.vkGetBufferMemoryRequirements(dev, buf)
        if not req.memoryTypeBits & (1 << self._memory_type):
            raise VulkanError(f"storage buffers cannot use memory type {self._memory_type}")
        alloc = _v.VkMemoryAllocateInfo(allocationSize=req.size,
                                        memoryTypeIndex=self._memory_type)
        mem = _call("vkAllocateMemory", dev, alloc, None)
        scratch.callback(lambda: _v.vkFreeMemory(dev, mem, None))
        _call("vkBindBufferMemory", dev, buf, mem, 0)
        view = memoryview(_call("vkMapMemory", dev, mem, 0, size, 0)).cast("B")
        view[:src.nbytes] = src
        view[src.nbytes:] = bytes(size - src.nbytes)
        return buf, view, src.nbytes, size

    def _descriptor_set(self, scratch: ExitStack, pipe: _Pipeline, bufs: list):
        """A descriptor set binding ``bufs`` ((buffer, size) pairs) at 0..n-1, or None."""
        if not bufs:
            return None
        dev = self._device
        sizes = [_v.VkDescriptorPoolSize(type=_v.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                         descriptorCount=len(bufs))]
        pool_info = _v.VkDescriptorPoolCreateInfo(maxSets=1, poolSizeCount=1, pPoolSizes=sizes)
        pool = _call("vkCreateDescriptorPool", dev, pool_info, None)
        scratch.callback(lambda: _v.vkDestroyDescriptorPool(dev, pool, None))
        set_layouts = [pipe.set_layout]
        alloc = _v.VkDescriptorSetAllocateInfo(descriptorPool=pool, descriptorSetCount=1,
                                               pSetLayouts=set_layouts)
        dset = _call("vkAllocateDescriptorSets", dev, alloc)[0]
        infos = [[_v.VkDescriptorBufferInfo(buffer=b, offset=0, range=size)]
                 for b, size in bufs]
        writes = [_v.VkWriteDescriptorSet(
            dstSet=dset, dstBinding=i, descriptorCount=1, pBufferInfo=info,
            descriptorType=_v.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER) for i, info in enumerate(infos)]
        _v.vkUpdateDescriptorSets(dev, len(writes), writes, 0, None)
        return dset

    def _dispatch(self, scratch: ExitStack, pipe: _Pipeline, dset, groups, timeout_s, dispatches: int = 1) -> None:
        """Record the commands, submit them and wait on a fence for ``timeout_s``."""
        dev = self._device
        alloc = _v.VkCommandBufferAllocateInfo(
            commandPool=self._pool, level=_v.VK_COMMAND_BUFFER_LEVEL_PRIMARY,
            commandBufferCount=1)
        cmds = _call("vkAllocateCommandBuffers", dev, alloc)
        scratch.callback(lambda: _v.vkFreeCommandBuffers(dev, self._pool, 1, cmds))
        self._record(cmds[0], pipe, dset, groups, self._queries, dispatches)
        fence_info = _v.VkFenceCreateInfo()
        fence = _call("vkCreateFence", dev, fence_info, None)
        scratch.callback(lambda: _v.vkDestroyFence(dev, fence, None))
        submit = _v.VkSubmitInfo(commandBufferCount=1, pCommandBuffers=cmds)
        submits = [submit]
        _call("vkQueueSubmit", self._queue, 1, submits, fence)
        fences = [fence]
        _call("vkWaitForFences", dev, 1, fences, _v.VK_TRUE, int(timeout_s * 1e9))

    @staticmethod
    def _record(cmd, pipe: _Pipeline, dset, groups, queries=None, dispatches: int = 1) -> None:
        """Bind, dispatch ``dispatches`` times, each after the previous one's writes (all
        between two timestamps when ``queries``), then a barrier making shader writes visible
        to host reads."""
        begin = _v.VkCommandBufferBeginInfo(flags=_v.VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT)
        _call("vkBeginCommandBuffer", cmd, begin)
        if queries is not None:
            _v.vkCmdResetQueryPool(cmd, queries, 0, 2)
            _v.vkCmdWriteTimestamp(cmd, _v.VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, queries, 0)
        _v.vkCmdBindPipeline(cmd, _v.VK_PIPELINE_BIND_POINT_COMPUTE, pipe.pipeline)
        sets = [dset]
        if dset is not None:
            _v.vkCmdBindDescriptorSets(cmd, _v.VK_PIPELINE_BIND_POINT_COMPUTE, pipe.layout,
                                       0, 1, sets, 0, None)
        between = [_v.VkMemoryBarrier(srcAccessMask=_v.VK_ACCESS_SHADER_WRITE_BIT,
                                      dstAccessMask=_v.VK_ACCESS_SHADER_READ_BIT | _v.VK_ACCESS_SHADER_WRITE_BIT)]
        for i in range(dispatches):
            if i:
                _v.vkCmdPipelineBarrier(cmd, _v.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                                        _v.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, between, 0, None, 0, None)
            _v.vkCmdDispatch(cmd, *groups)
        if queries is not None:
            _v.vkCmdWriteTimestamp(cmd, _v.VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, queries, 1)
        barriers = [_v.VkMemoryBarrier(srcAccessMask=_v.VK_ACCESS_SHADER_WRITE_BIT,
                                       dstAccessMask=_v.VK_ACCESS_HOST_READ_BIT)]
        _v.vkCmdPipelineBarrier(cmd, _v.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                                _v.VK_PIPELINE_STAGE_HOST_BIT, 0, 1, barriers, 0, None, 0, None)
        _call("vkEndCommandBuffer", cmd)

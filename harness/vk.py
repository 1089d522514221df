"""The one module that calls Vulkan: device descriptions and one-dispatch compute runs.

Everything else in warpboard sees only :class:`DeviceInfo`, :func:`list_devices` and
:class:`Device`. Every handle made here is destroyed deterministically (``close()`` /
``with``), and every Vulkan failure surfaces as :class:`VulkanError` naming the function
and the VkResult.

Binding note (``vulkan``, cffi): a struct built by ``VkFoo(...)`` keeps the memory of its
pointer fields alive only as long as the struct object itself lives. So every nested
struct, array and string passed to a call is held in a named local until the call
returns; inline temporaries led to flaky ``VK_ERROR_UNKNOWN`` from pipeline creation.
"""
from __future__ import annotations

from contextlib import ExitStack
import hashlib
import re
import shutil
import subprocess
import time
from dataclasses import asdict, dataclass
from typing import Sequence

try:  # Importing only dlopens the loader; drivers load at vkCreateInstance.
    import vulkan as _v
    from vulkan import ffi as _ffi
    _IMPORT_ERROR: Exception | None = None
except (OSError, ImportError) as _exc:  # no libvulkan: callers see VulkanError
    _v = _ffi = None
    _IMPORT_ERROR = _exc

_API_WANTED = (1 << 22) | (3 << 12)          # Vulkan 1.3: ask for it, settle for less
_SPIRV_MAGIC = 0x07230203
_SPIRV_MAX_BY_API = {(1, 0): (1, 0), (1, 1): (1, 3), (1, 2): (1, 5), (1, 3): (1, 6)}

# Features a translated shader may need; enabled when the device has them. Deliberately
# not "everything supported": robustBufferAccess would hide out-of-bounds faults.
_WANTED_FEATURES = {
    "core": ("shaderInt64", "shaderInt16", "shaderFloat64"),
    "11": ("storageBuffer16BitAccess", "uniformAndStorageBuffer16BitAccess",
           "variablePointersStorageBuffer", "variablePointers"),
    "12": ("storageBuffer8BitAccess", "uniformAndStorageBuffer8BitAccess", "shaderInt8",
           "shaderFloat16", "shaderBufferInt64Atomics", "shaderSharedInt64Atomics",
           "vulkanMemoryModel", "vulkanMemoryModelDeviceScope", "scalarBlockLayout",
           "shaderSubgroupExtendedTypes", "uniformBufferStandardLayout",
           "subgroupBroadcastDynamicId"),
    "13": ("subgroupSizeControl", "computeFullSubgroups", "maintenance4",
           "shaderIntegerDotProduct", "shaderZeroInitializeWorkgroupMemory"),
}


class VulkanError(RuntimeError):
    """A Vulkan call failed; ``function`` and ``result`` (e.g. VK_ERROR_UNKNOWN) say which."""

    def __init__(self, message: str, *, function: str | None = None,
                 result: str | None = None):
        super().__init__(message)
        self.function = function
        self.result = result


class VkDeviceLost(VulkanError):
    """VK_ERROR_DEVICE_LOST: the device is unusable; open a new one (new process)."""


class VkTimeout(VulkanError):
    """The dispatch did not finish within ``timeout_s``; the device is left unusable."""


class SpirvError(VulkanError):
    """The module was rejected before reaching the driver (which may crash on bad input)."""


@dataclass(frozen=True)
class DeviceInfo:
    """What one physical device is and can do, as seen by the process that asked."""
    index: int
    name: str
    vendor_id: int
    device_id: int
    device_type: str
    driver_name: str
    driver_info: str
    driver_version: str
    driver_version_raw: int
    api_version: str
    subgroup_size: int
    subgroup_stages: tuple[str, ...]
    subgroup_operations: tuple[str, ...]
    min_subgroup_size: int | None
    max_subgroup_size: int | None
    max_workgroup_size: tuple[int, int, int]
    max_workgroup_invocations: int
    max_workgroup_count: tuple[int, int, int]
    max_shared_memory: int
    max_storage_buffer_range: int
    shader_int64: bool
    features: tuple[str, ...]

    def to_json(self) -> dict:
        """A plain dict (lists, not tuples) for results files."""
        return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()}


# ---------------------------------------------------------------------------- helpers

def _result_name(exc_type: type) -> str:
    """VkErrorDeviceLost -> VK_ERROR_DEVICE_LOST (the binding raises bare classes)."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", exc_type.__name__).upper()


def _call(fn_name: str, *args):
    """Call ``vulkan.<fn_name>``, turning the binding's exceptions into VulkanError."""
    try:
        return getattr(_v, fn_name)(*args)
    except (_v.VkError, _v.VkException) as exc:
        result = _result_name(type(exc))
        cls = {"VK_ERROR_DEVICE_LOST": VkDeviceLost, "VK_TIMEOUT": VkTimeout}.get(
            result, VulkanError)
        raise cls(f"{fn_name} failed: {result}", function=fn_name, result=result) from exc


def version_str(v: int) -> str:
    """Decode a VK_MAKE_API_VERSION number to "major.minor.patch"."""
    return f"{v >> 22 & 0x7F}.{v >> 12 & 0x3FF}.{v & 0xFFF}"


def _driver_version_str(vendor_id: int, driver_id: int, v: int) -> str:
    """Decode driverVersion using the vendor's own packing where it differs."""
    if vendor_id == 0x10DE:  # NVIDIA: 10.8.8.6 bits
        return f"{v >> 22 & 0x3FF}.{v >> 14 & 0xFF}.{v >> 6 & 0xFF}.{v & 0x3F}"
    if vendor_id == 0x8086 and driver_id == 5:  # Intel proprietary Windows: 18.14
        return f"{v >> 14}.{v & 0x3FFF}"
    return version_str(v)


def _flag_names(prefix: str, value: int) -> tuple[str, ...]:
    """Names of the set bits of ``value`` among the constants ``VK_<prefix>*_BIT*``."""
    names = {}
    for const in dir(_v):
        if const.startswith(prefix) and "_BIT" in const and "MAX_ENUM" not in const:
            bit = getattr(_v, const)
            if not isinstance(bit, int):
                continue
            short = const[len(prefix):].replace("_BIT", "").lower()
            short = re.sub(r"_(khr|ext)$", "", short)
            if bit & value and bin(bit).count("1") == 1 and bit not in names:
                names[bit] = short
    return tuple(names[b] for b in sorted(names))


def _text(chars) -> str:
    """A C char array field as str."""
    return _ffi.string(chars).decode("utf-8", "replace")


def _link(structs: list) -> None:
    """Chain ``structs`` through pNext, in order (all must stay referenced by the caller)."""
    for a, b in zip(structs, structs[1:]):
        a.pNext = _ffi.addressof(b)


def _api_tuple(v: int) -> tuple[int, int]:
    return (v >> 22 & 0x7F, v >> 12 & 0x3FF)


# -------------------------------------------------------------------- physical devices

class _Instance:
    """A VkInstance at the highest API version (≤ 1.3) the loader offers."""

    def __init__(self) -> None:
        if _v is None:
            raise VulkanError(f"Vulkan loader (libvulkan) not available: {_IMPORT_ERROR}")
        self.handle = None
        loader = _call("vkEnumerateInstanceVersion")
        self.api_version = min(loader, _API_WANTED)
        if _api_tuple(self.api_version) < (1, 1):
            raise VulkanError(f"Vulkan loader {version_str(loader)} is older than 1.1")
        names = {e.extensionName for e in _call("vkEnumerateInstanceExtensionProperties", None)}
        exts = [n for n in ("VK_KHR_portability_enumeration",) if n in names]
        app_name = _ffi.new("char[]", b"warpboard")
        app = _v.VkApplicationInfo(pApplicationName=app_name, apiVersion=self.api_version)
        ext_names = [_ffi.new("char[]", n.encode()) for n in exts]
        ext_array = _ffi.new("char*[]", ext_names)
        info = _v.VkInstanceCreateInfo(
            flags=1 if exts else 0,  # VK_INSTANCE_CREATE_ENUMERATE_PORTABILITY_BIT_KHR
            pApplicationInfo=app, enabledExtensionCount=len(exts),
            ppEnabledExtensionNames=ext_array if exts else None)
        self.handle = _call("vkCreateInstance", info, None)

    def physical_devices(self) -> list:
        return list(_call("vkEnumeratePhysicalDevices", self.handle))

    def close(self) -> None:
        if self.handle is not None:
            _v.vkDestroyInstance(self.handle, None)
            self.handle = None


def _device_extensions(pd) -> set[str]:
    return {e.extensionName for e in _call("vkEnumerateDeviceExtensionProperties", pd, None)}


def _feature_structs(api: tuple[int, int]) -> dict:
    """Empty feature structs for the device's API version, keyed like _WANTED_FEATURES."""
    structs = {"core": _v.VkPhysicalDeviceFeatures2()}
    if api >= (1, 2):
        structs["11"] = _v.VkPhysicalDeviceVulkan11Features()
        structs["12"] = _v.VkPhysicalDeviceVulkan12Features()
    if api >= (1, 3):
        structs["13"] = _v.VkPhysicalDeviceVulkan13Features()
    _link(list(structs.values()))
    return structs


def _supported_features(pd, api: tuple[int, int]) -> tuple[str, ...]:
    """Which of _WANTED_FEATURES the device supports."""
    structs = _feature_structs(api)
    _v.vkGetPhysicalDeviceFeatures2(pd, _ffi.addressof(structs["core"]))
    found = []
    for key, struct in structs.items():
        source = struct.features if key == "core" else struct
        found += [n for n in _WANTED_FEATURES[key] if getattr(source, n)]
    return tuple(found)


def _properties(pd, api: tuple[int, int], exts: set[str]) -> dict:
    """Core, subgroup, driver and subgroup-size properties (the latter two if available)."""
    chain = {"core": _v.VkPhysicalDeviceProperties2(),
             "subgroup": _v.VkPhysicalDeviceSubgroupProperties()}
    if api >= (1, 2) or "VK_KHR_driver_properties" in exts:
        chain["driver"] = _v.VkPhysicalDeviceDriverProperties()
    if api >= (1, 3) or "VK_EXT_subgroup_size_control" in exts:
        chain["sizes"] = _v.VkPhysicalDeviceSubgroupSizeControlProperties()
    _link(list(chain.values()))
    _v.vkGetPhysicalDeviceProperties2(pd, _ffi.addressof(chain["core"]))
    return chain


def _describe(index: int, pd, instance_api: int) -> DeviceInfo:
    """Build the DeviceInfo of physical device ``pd``."""
    base = _v.vkGetPhysicalDeviceProperties(pd)
    api = _api_tuple(min(base.apiVersion, instance_api))
    chain = _properties(pd, api, _device_extensions(pd))
    p, limits, sub = chain["core"].properties, chain["core"].properties.limits, chain["subgroup"]
    driver, sizes = chain.get("driver"), chain.get("sizes")
    driver_id = driver.driverID if driver is not None else 0
    features = _supported_features(pd, api)
    types = {0: "other", 1: "integrated-gpu", 2: "discrete-gpu", 3: "virtual-gpu", 4: "cpu"}
    return DeviceInfo(
        index=index, name=_text(p.deviceName), vendor_id=p.vendorID, device_id=p.deviceID,
        device_type=types.get(p.deviceType, str(p.deviceType)),
        driver_name=_text(driver.driverName) if driver is not None else "",
        driver_info=_text(driver.driverInfo) if driver is not None else "",
        driver_version=_driver_version_str(p.vendorID, driver_id, p.driverVersion),
        driver_version_raw=p.driverVersion, api_version=version_str(p.apiVersion),
        subgroup_size=sub.subgroupSize,
        subgroup_stages=_flag_names("VK_SHADER_STAGE_", sub.supportedStages),
        subgroup_operations=_flag_names("VK_SUBGROUP_FEATURE_", sub.supportedOperations),
        min_subgroup_size=sizes.minSubgroupSize if sizes is not None else None,
        max_subgroup_size=sizes.maxSubgroupSize if sizes is not None else None,
        max_workgroup_size=tuple(limits.maxComputeWorkGroupSize),
        max_workgroup_invocations=limits.maxComputeWorkGroupInvocations,
        max_workgroup_count=tuple(limits.maxComputeWorkGroupCount),
        max_shared_memory=limits.maxComputeSharedMemorySize,
        max_storage_buffer_range=limits.maxStorageBufferRange,
        shader_int64="shaderInt64" in features, features=features)


def list_devices() -> list[DeviceInfo]:
    """Every physical device the loader lists; [] when there is no loader or no driver."""
    if _v is None:
        return []
    try:
        instance = _Instance()
    except VulkanError as exc:
        if exc.result == "VK_ERROR_INCOMPATIBLE_DRIVER":  # loader without any ICD
            return []
        raise
    try:
        return [_describe(i, pd, instance.api_version)
                for i, pd in enumerate(instance.physical_devices())]
    finally:
        instance.close()


# ------------------------------------------------------------------------------ SPIR-V

def check_spirv(code: bytes, entry: str = "main",
                max_version: tuple[int, int] = (1, 6)) -> tuple[int, int]:
    """Check framing, magic, version and the GLCompute entry point; return the version.

    Drivers are not required to validate SPIR-V and some abort on malformed modules,
    so the cheap structural checks happen here, where they raise :class:`SpirvError`.
    """
    if len(code) % 4 or len(code) < 20:
        raise SpirvError(f"SPIR-V must be whole 32-bit words with a 5-word header; "
                         f"got {len(code)} bytes")
    words = memoryview(bytes(code)).cast("I")
    if words[0] != _SPIRV_MAGIC:
        swapped = words[0] == 0x03022307
        raise SpirvError(f"bad SPIR-V magic {words[0]:#010x}"
                         + (" (byte-swapped module)" if swapped else ""))
    version = (words[1] >> 16 & 0xFF, words[1] >> 8 & 0xFF)
    if version > max_version:
        raise SpirvError(f"module is SPIR-V {version[0]}.{version[1]}; the device accepts "
                         f"up to {max_version[0]}.{max_version[1]}")
    entries = _entry_points(words)
    if entry not in entries:
        raise SpirvError(f"no GLCompute entry point {entry!r}; module has {entries}")
    return version


def _entry_points(words) -> list[str]:
    """Names of the GLCompute OpEntryPoints, checking every instruction's word count."""
    i, names = 5, []
    while i < len(words):
        count, opcode = words[i] >> 16, words[i] & 0xFFFF
        if count == 0 or i + count > len(words):
            raise SpirvError(f"instruction at word {i} (opcode {opcode}) has word count "
                             f"{count}; the module has {len(words)} words")
        if opcode == 15 and count >= 4 and words[i + 1] == 5:  # OpEntryPoint GLCompute
            raw = words[i + 3:i + count].tobytes()
            names.append(raw.split(b"\0", 1)[0].decode("utf-8", "replace"))
        i += count
    return names


def validate_spirv(code: bytes, target_env: str = "vulkan1.1") -> None:
    """Run ``spirv-val``; raise SpirvError with its message if the module is invalid.

    Drivers need not survive invalid SPIR-V (NVIDIA's segfaults in pipeline creation on
    a type used as an operand), so ``Device(validate=True)`` checks before creating.
    """
    tool = shutil.which("spirv-val")
    if tool is None:
        raise SpirvError("SPIR-V validation needs spirv-val (SPIRV-Tools) on PATH")
    proc = subprocess.run([tool, "--target-env", target_env, "-"], input=bytes(code),
                          capture_output=True, check=False)
    if proc.returncode:
        message = (proc.stderr or proc.stdout).decode("utf-8", "replace").strip()
        raise SpirvError(f"spirv-val --target-env {target_env} rejected the module: "
                         f"{message}")


# ------------------------------------------------------------------------ logical device

@dataclass
class _Pipeline:
    """A compiled compute pipeline and the objects it was built from (cached per Device)."""
    module: object
    set_layout: object
    layout: object
    pipeline: object


class Device:
    """One logical device with one compute queue; runs single dispatches (not thread-safe).

    ``Device(index)`` opens the instance, the logical device (with every feature of
    ``_WANTED_FEATURES`` the device has) and a command pool. ``run`` caches shader
    modules and pipelines per (sha256, buffer count, entry) until ``close``. With
    ``validate=True`` every new module goes through spirv-val first (outside pipeline_s).
    """

    def __init__(self, index: int = 0, validate: bool = False, cache_dir=None) -> None:
        self.validate = validate
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
        self.info = _describe(index, self._pd, self._instance.api_version)
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
        self._open_pipeline_cache()
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

    def _open_pipeline_cache(self) -> None:
        """A VkPipelineCache seeded from disk, keyed by the driver's pipelineCacheUUID."""
        from pathlib import Path
        if self._cache_dir is None:
            return
        props = _v.vkGetPhysicalDeviceProperties(self._pd)
        uuid = bytes(props.pipelineCacheUUID).hex()
        self._cache_path = Path(self._cache_dir) / f"{props.vendorID:04x}-{props.deviceID:04x}-{uuid}.bin"
        data = self._cache_path.read_bytes() if self._cache_path.is_file() else b""
        initial = _ffi.from_buffer(data) if data else None   # kept alive until the call returns
        info = _v.VkPipelineCacheCreateInfo(initialDataSize=len(data), pInitialData=initial)
        self._cache = _call("vkCreatePipelineCache", self._device, info, None)

    def _save_pipeline_cache(self) -> None:
        """Write the cache's data back (atomically); a failure only loses the cache."""
        lib = _v._vulkan.lib
        size = _ffi.new("size_t *")
        if lib.vkGetPipelineCacheData(self._device, self._cache, size, _ffi.NULL) != 0 or not size[0]:
            return
        buf = _ffi.new("char[]", size[0])
        if lib.vkGetPipelineCacheData(self._device, self._cache, size, buf) != 0:
            return
        self._cache_path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self._cache_path.with_suffix(f".{id(self)}.tmp")
        tmp.write_bytes(_ffi.buffer(buf, size[0])[:])
        tmp.replace(self._cache_path)

    def _compute_family(self) -> int:
        families = _v.vkGetPhysicalDeviceQueueFamilyProperties(self._pd)
        for i, family in enumerate(families):
            if family.queueFlags & _v.VK_QUEUE_COMPUTE_BIT:
                return i
        raise VulkanError(f"device {self.info.name!r} has no compute queue family")

    def _create_device(self, api: tuple[int, int]):
        """vkCreateDevice with the supported subset of _WANTED_FEATURES enabled."""
        structs = _feature_structs(api)
        for key, struct in structs.items():
            target = struct.features if key == "core" else struct
            for name in _WANTED_FEATURES[key]:
                setattr(target, name, int(name in self.info.features))
        priorities = _ffi.new("float[]", [1.0])
        queue_info = _v.VkDeviceQueueCreateInfo(
            queueFamilyIndex=self._family, queueCount=1, pQueuePriorities=priorities)
        queue_infos = [queue_info]
        exts = [n for n in ("VK_KHR_portability_subset",) if n in _device_extensions(self._pd)]
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
                self._destroy_pipeline(p)
            self._pipelines.clear()
            if self._cache is not None:
                try:
                    self._save_pipeline_cache()
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

    def _destroy_pipeline(self, p: _Pipeline) -> None:
        dev = self._device
        for fn, handle in (("vkDestroyPipeline", p.pipeline),
                           ("vkDestroyPipelineLayout", p.layout),
                           ("vkDestroyDescriptorSetLayout", p.set_layout),
                           ("vkDestroyShaderModule", p.module)):
            if handle is not None:
                getattr(_v, fn)(dev, handle, None)

    # ------------------------------------------------------------------ pipelines

    def _pipeline(self, spirv: bytes, n_buffers: int, entry: str) -> _Pipeline:
        """The cached pipeline for this module, or a new one (timed in last_timings)."""
        key = (hashlib.sha256(spirv).hexdigest(), n_buffers, entry)
        if key in self._pipelines:
            self.last_timings["pipeline_s"] = 0.0
            return self._pipelines[key]
        check_spirv(spirv, entry, self._spirv_max)
        if self.validate:
            validate_spirv(spirv, self._target_env)
        start = time.perf_counter()
        p = _Pipeline(None, None, None, None)
        try:
            self._build_pipeline(p, spirv, n_buffers, entry)
        except VulkanError as exc:
            self._destroy_pipeline(p)
            raise type(exc)(f"{exc} (module sha256 {key[0][:12]}, entry {entry!r}, "
                            f"{n_buffers} buffers)", function=exc.function,
                            result=exc.result) from exc
        self.last_timings["pipeline_s"] = time.perf_counter() - start
        self._pipelines[key] = p
        return p

    def _build_pipeline(self, p: _Pipeline, spirv: bytes, n: int, entry: str) -> None:
        dev = self._device
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
        stage = _v.VkPipelineShaderStageCreateInfo(
            stage=_v.VK_SHADER_STAGE_COMPUTE_BIT, module=p.module, pName=name)
        create_info = _v.VkComputePipelineCreateInfo(stage=stage, layout=p.layout,
                                                     basePipelineIndex=-1)
        create_infos = [create_info]
        pipelines = _call("vkCreateComputePipelines", dev, self._cache, 1, create_infos, None)
        p.pipeline = pipelines[0]

    # ------------------------------------------------------------------ running

    def run(self, spirv: bytes, buffers: Sequence[bytes | bytearray | memoryview],
            groups: tuple[int, int, int] = (1, 1, 1), entry: str = "main",
            timeout_s: float = 60.0) -> list[bytes]:
        """Dispatch ``groups`` workgroups of ``entry`` with ``buffers`` bound as storage
        buffers (set 0, binding i) and return every buffer's contents afterwards.

        Raises VkTimeout when the fence does not signal within ``timeout_s`` (the device
        is unusable afterwards), VkDeviceLost, SpirvError or VulkanError.
        """
        if self._unusable:
            raise VulkanError(f"device {self.info.name!r} is unusable: {self._unusable}")
        self._check_dispatch(buffers, groups)
        self.last_timings = {"pipeline_s": 0.0, "upload_s": 0.0,
                             "dispatch_s": 0.0, "readback_s": 0.0}   # and gpu_s where the queue has timestamps
        with ExitStack() as scratch:  # undoes this call's objects
            try:
                pipe = self._pipeline(bytes(spirv), len(buffers), entry)
                return self._run(scratch, pipe, buffers, groups, timeout_s)
            except VkTimeout as exc:
                # The GPU may still use this call's objects and destroying in-use
                # objects is undefined: leak them (pop_all); the worker process ends.
                scratch.pop_all()
                self._unusable, self._leak = f"timed out after {timeout_s}s", True
                raise VkTimeout(f"dispatch of {tuple(groups)} groups did not finish within "
                                f"{timeout_s}s ({exc}); the device is now unusable",
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

    def _run(self, scratch: ExitStack, pipe: _Pipeline, buffers, groups, timeout_s):
        t = time.perf_counter()
        mapped = [self._upload(scratch, b) for b in buffers]
        dset = self._descriptor_set(scratch, pipe, [(m[0], m[3]) for m in mapped])
        t, self.last_timings["upload_s"] = time.perf_counter(), time.perf_counter() - t
        self._dispatch(scratch, pipe, dset, groups, timeout_s)
        t, self.last_timings["dispatch_s"] = time.perf_counter(), time.perf_counter() - t
        if self._queries is not None:
            ticks = _ffi.new("uint64_t[2]")
            _call("vkGetQueryPoolResults", self._device, self._queries, 0, 2, 16, ticks, 8,
                  _v.VK_QUERY_RESULT_64_BIT | _v.VK_QUERY_RESULT_WAIT_BIT)
            self.last_timings["gpu_s"] = ((ticks[1] - ticks[0]) & self._tick_mask) * self._tick_s
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

    def _dispatch(self, scratch: ExitStack, pipe: _Pipeline, dset, groups, timeout_s) -> None:
        """Record the commands, submit them and wait on a fence for ``timeout_s``."""
        dev = self._device
        alloc = _v.VkCommandBufferAllocateInfo(
            commandPool=self._pool, level=_v.VK_COMMAND_BUFFER_LEVEL_PRIMARY,
            commandBufferCount=1)
        cmds = _call("vkAllocateCommandBuffers", dev, alloc)
        scratch.callback(lambda: _v.vkFreeCommandBuffers(dev, self._pool, 1, cmds))
        self._record(cmds[0], pipe, dset, groups, self._queries)
        fence_info = _v.VkFenceCreateInfo()
        fence = _call("vkCreateFence", dev, fence_info, None)
        scratch.callback(lambda: _v.vkDestroyFence(dev, fence, None))
        submit = _v.VkSubmitInfo(commandBufferCount=1, pCommandBuffers=cmds)
        submits = [submit]
        _call("vkQueueSubmit", self._queue, 1, submits, fence)
        fences = [fence]
        _call("vkWaitForFences", dev, 1, fences, _v.VK_TRUE, int(timeout_s * 1e9))

    @staticmethod
    def _record(cmd, pipe: _Pipeline, dset, groups, queries=None) -> None:
        """Bind, dispatch (between two timestamps when ``queries``), then a barrier making
        shader writes visible to host reads."""
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
        _v.vkCmdDispatch(cmd, *groups)
        if queries is not None:
            _v.vkCmdWriteTimestamp(cmd, _v.VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, queries, 1)
        barriers = [_v.VkMemoryBarrier(srcAccessMask=_v.VK_ACCESS_SHADER_WRITE_BIT,
                                       dstAccessMask=_v.VK_ACCESS_HOST_READ_BIT)]
        _v.vkCmdPipelineBarrier(cmd, _v.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                                _v.VK_PIPELINE_STAGE_HOST_BIT, 0, 1, barriers, 0, None, 0, None)
        _call("vkEndCommandBuffer", cmd)

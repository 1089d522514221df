"""Physical devices: what each is and can do (:class:`DeviceInfo`, :func:`list_devices`)."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

from ._base import (
    _WANTED_FEATURES,
    VulkanError,
    _api_tuple,
    _call,
    _driver_version_str,
    _ffi,
    _flag_names,
    _Instance,
    _link,
    _text,
    _v,
    version_str,
)


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
    device_uuid: str = ""           # VkPhysicalDeviceIDProperties: tells identical devices apart
    driver_uuid: str = ""           # ... and two builds of one driver
    probe: dict | None = field(default=None, compare=False)   # what a dispatch found (harness.vk.probe)

    @property
    def identity(self) -> tuple[str, str] | None:
        """(device UUID, driver UUID), the same in every process; None if not reported."""
        return (self.device_uuid, self.driver_uuid) if self.device_uuid else None

    def to_json(self) -> dict:
        """A plain dict (lists, not tuples) for results files."""
        return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()}


def device_extensions(pd) -> set[str]:
    return {e.extensionName for e in _call("vkEnumerateDeviceExtensionProperties", pd, None)}


def feature_structs(api: tuple[int, int]) -> dict:
    """Empty feature structs for the device's API version, keyed like _WANTED_FEATURES."""
    structs = {"core": _v.VkPhysicalDeviceFeatures2()}
    if api >= (1, 2):
        structs["11"] = _v.VkPhysicalDeviceVulkan11Features()
        structs["12"] = _v.VkPhysicalDeviceVulkan12Features()
    if api >= (1, 3):
        structs["13"] = _v.VkPhysicalDeviceVulkan13Features()
    _link(list(structs.values()))
    return structs


MAXIMAL_RECONVERGENCE = "VK_KHR_shader_maximal_reconvergence"
_MAXIMAL_RECONVERGENCE_STYPE = 1000434000


def maximal_reconvergence_struct(enable: bool = False):
    """VkPhysicalDeviceShaderMaximalReconvergenceFeaturesKHR, which the binding predates, as
    raw words: sType, (padding), pNext (8 bytes, NULL), shaderMaximalReconvergence, (padding)."""
    raw = _ffi.new("uint32_t[6]")
    raw[0], raw[4] = _MAXIMAL_RECONVERGENCE_STYPE, int(enable)
    return raw


def _supported_features(pd, api: tuple[int, int]) -> tuple[str, ...]:
    """Which of _WANTED_FEATURES the device supports, and shaderMaximalReconvergence where
    it offers VK_KHR_shader_maximal_reconvergence and the feature."""
    structs = feature_structs(api)
    maximal = maximal_reconvergence_struct() if MAXIMAL_RECONVERGENCE in device_extensions(pd) else None
    if maximal is not None:
        list(structs.values())[-1].pNext = maximal
    _v.vkGetPhysicalDeviceFeatures2(pd, _ffi.addressof(structs["core"]))
    found = []
    for key, struct in structs.items():
        source = struct.features if key == "core" else struct
        found += [n for n in _WANTED_FEATURES[key] if getattr(source, n)]
    if maximal is not None and maximal[4]:
        found.append("shaderMaximalReconvergence")
    return tuple(found)


def _properties(pd, api: tuple[int, int], exts: set[str]) -> dict:
    """Core, subgroup, driver and subgroup-size properties (the latter two if available)."""
    chain = {"core": _v.VkPhysicalDeviceProperties2(),
             "subgroup": _v.VkPhysicalDeviceSubgroupProperties(),
             "id": _v.VkPhysicalDeviceIDProperties()}
    if api >= (1, 2) or "VK_KHR_driver_properties" in exts:
        chain["driver"] = _v.VkPhysicalDeviceDriverProperties()
    if api >= (1, 3) or "VK_EXT_subgroup_size_control" in exts:
        chain["sizes"] = _v.VkPhysicalDeviceSubgroupSizeControlProperties()
    _link(list(chain.values()))
    _v.vkGetPhysicalDeviceProperties2(pd, _ffi.addressof(chain["core"]))
    return chain


def describe(index: int, pd, instance_api: int) -> DeviceInfo:
    """Build the DeviceInfo of physical device ``pd``."""
    base = _v.vkGetPhysicalDeviceProperties(pd)
    api = _api_tuple(min(base.apiVersion, instance_api))
    chain = _properties(pd, api, device_extensions(pd))
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
        shader_int64="shaderInt64" in features, features=features,
        device_uuid=bytes(chain["id"].deviceUUID).hex(), driver_uuid=bytes(chain["id"].driverUUID).hex())


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
        return [describe(i, pd, instance.api_version)
                for i, pd in enumerate(instance.physical_devices())]
    finally:
        instance.close()

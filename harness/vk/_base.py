"""What the other Vulkan modules share: the binding, the errors, and small helpers."""
from __future__ import annotations

import re

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

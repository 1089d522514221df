"""The one package that calls Vulkan: device descriptions and one-dispatch compute runs.

Everything else in warpboard sees only :class:`DeviceInfo`, :func:`list_devices` and
:class:`Device`. Every handle made here is destroyed deterministically (``close()`` /
``with``), and every Vulkan failure surfaces as :class:`VulkanError` naming the function
and the VkResult.

Binding note (``vulkan``, cffi): a struct built by ``VkFoo(...)`` keeps the memory of its
pointer fields alive only as long as the struct object itself lives. So every nested
struct, array and string passed to a call is held in a named local until the call
returns; inline temporaries led to flaky ``VK_ERROR_UNKNOWN`` from pipeline creation.

Modules: ``_base`` (binding, errors, helpers), ``info`` (physical devices), ``spirv_check``
(checks before the driver), ``device`` (the logical device and its dispatches), ``pipeline``
(its compute pipelines and their on-disk cache), ``probe`` (what its subgroups really are),
``statistics`` (what the driver says of compiled code).
"""
from __future__ import annotations

from ._base import SpirvError, VkDeviceLost, VkTimeout, VulkanError, version_str
from .device import Device
from .info import DeviceInfo, list_devices
from .probe import probed_devices, warps
from .spirv_check import check_spirv, validate_spirv
from . import statistics  # noqa: F401  (vk.statistics)

__all__ = ["Device", "DeviceInfo", "list_devices", "probed_devices", "warps", "check_spirv", "validate_spirv", "version_str",
           "VulkanError", "VkDeviceLost", "VkTimeout", "SpirvError"]

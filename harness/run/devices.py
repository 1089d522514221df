"""Which device configurations a run can use, each probed in the process it will run in.

A *configuration* is a physical device plus the environment its worker sets before the
driver loads. Lavapipe (Mesa's CPU driver) fixes its subgroup size from
``LP_NATIVE_VECTOR_WIDTH`` when it loads, so one lavapipe device yields three
configurations (subgroup size 4, 8 and 16), each probed in its own child process.

Devices are told apart by ``VkPhysicalDeviceIDProperties`` (device and driver UUIDs), not
by name or position: two lavapipe builds side by side (say Mesa 22.3.6 and 25.0) are two
sets of columns, each found again by its UUIDs in the width probes, and their ids say
which is which (``lavapipe-22.3.6-w8``, ``lavapipe-25.0.1-w8``); a lone device keeps the
short id (``lavapipe-w8``). Every configuration runs in its own worker process.
"""
from __future__ import annotations

import fnmatch
import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from ..vk import DeviceInfo
from .worker import Worker

LAVAPIPE_WIDTHS = (128, 256, 512)   # bits -> subgroup size 4, 8, 16 (32-bit lanes)
_LIST_DEVICES = "warpboard.harness.vk:list_devices"


class DiscoveryError(RuntimeError):
    """Enumerating devices failed in a child process (crash, hang or exception)."""


@dataclass(frozen=True)
class DeviceConfig:
    """One scoreboard column: a device as seen by a worker started with ``env``."""
    id: str                                   # stable slug, e.g. "lavapipe-w8"
    index: int                                # physical device index in that process
    env: dict[str, str] = field(hash=False)   # set in the worker before Vulkan loads
    info: DeviceInfo = field(hash=False)

    def to_json(self) -> dict:
        return {"id": self.id, "index": self.index, "env": dict(self.env),
                "info": self.info.to_json()}

    def worker(self) -> Worker:
        """A Worker for this configuration (its device index is ``self.index``)."""
        return Worker(self.env, self.id)


def is_lavapipe(info: DeviceInfo) -> bool:
    return info.driver_name == "llvmpipe" or info.name.startswith("llvmpipe")


def slug(name: str) -> str:
    """"NVIDIA H200" -> "nvidia-h200"; "llvmpipe (...)" -> "lavapipe-..."."""
    text = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
    return re.sub(r"^llvmpipe\b", "lavapipe", text) or "device"


def _probe(env: dict[str, str], timeout_s: float) -> list[DeviceInfo]:
    """list_devices() in a fresh child process started with ``env``."""
    with Worker(env, "probe-" + "-".join(f"{k}={v}" for k, v in env.items())) as worker:
        reply = worker.call(_LIST_DEVICES, timeout_s=timeout_s)
    if not reply.ok:
        raise DiscoveryError(
            f"listing Vulkan devices with env {env or '{}'} failed: {reply.describe()}\n"
            f"{reply.traceback or ''}{reply.stderr_tail}")
    return reply.value


def discover(timeout_s: float = 60.0) -> list[DeviceConfig]:
    """Every device configuration on this machine, in physical-device order.

    Non-lavapipe devices give one configuration each (no extra env); lavapipe gives one
    per LAVAPIPE_WIDTHS, named from the subgroup size its probe process reported.
    """
    plain = _probe({}, timeout_s)
    widths: list[tuple[dict, list[DeviceInfo]]] = []
    if any(is_lavapipe(d) for d in plain):
        envs = [{"LP_NATIVE_VECTOR_WIDTH": str(w)} for w in LAVAPIPE_WIDTHS]
        with ThreadPoolExecutor(len(envs)) as pool:
            widths = list(zip(envs, pool.map(lambda env: _probe(env, timeout_s), envs)))
    bases = _base_ids(plain)
    found: list[tuple[str, dict, DeviceInfo]] = []
    for info, base in zip(plain, bases):
        if is_lavapipe(info):
            found += [(f"{base}-w{i.subgroup_size}", env, i)
                      for env, infos in widths for i in [_same_device(info, infos, env)]]
        else:
            found.append((base, {}, info))
    return _unique(found)


def _same_device(info: DeviceInfo, infos: list[DeviceInfo], env: dict) -> DeviceInfo:
    """The device of another probe that is ``info``: same UUIDs (same index where the
    driver reports none)."""
    for other in infos:
        if (other.identity == info.identity) if info.identity else (other.index == info.index):
            return other
    raise DiscoveryError(f"{info.name} ({info.driver_info or info.driver_version}) vanished "
                         f"when probed with env {env}")


def _base_ids(infos: list[DeviceInfo]) -> list[str]:
    """Each device's id before any width suffix: its slug ("lavapipe" for lavapipe), with
    the driver version added where devices of one slug come from different drivers."""
    slugs = ["lavapipe" if is_lavapipe(i) else slug(i.name) for i in infos]
    out = []
    for info, base in zip(infos, slugs):
        drivers = {i.driver_uuid + _version(i) for i, b in zip(infos, slugs) if b == base}
        out.append(f"{base}-{_version(info)}" if len(drivers) > 1 else base)
    return out


def _version(info: DeviceInfo) -> str:
    """The driver's version for an id: Mesa's release ("22.3.6") or the driver version."""
    mesa = re.search(r"Mesa (\d+(?:\.\d+)+)", info.driver_info or "")
    return mesa.group(1) if mesa else slug(info.driver_version or "driver")


def _unique(found: list[tuple[str, dict, DeviceInfo]]) -> list[DeviceConfig]:
    """DeviceConfigs with colliding ids suffixed -2, -3, ... in order of appearance."""
    seen: dict[str, int] = {}
    configs = []
    for base, env, info in found:
        seen[base] = seen.get(base, 0) + 1
        cid = base if seen[base] == 1 else f"{base}-{seen[base]}"
        configs.append(DeviceConfig(cid, info.index, env, info))
    return configs


def select(configs: list[DeviceConfig], patterns: list[str] | None) -> list[DeviceConfig]:
    """The configurations whose id or device name matches any fnmatch pattern.

    Case-insensitive; None or [] selects all. A pattern that matches nothing raises
    ValueError listing the available ids, so a typo never silently drops a column.
    """
    if not patterns:
        return list(configs)
    chosen: set[str] = set()
    for pattern in patterns:
        pat = pattern.lower()
        hits = [c.id for c in configs
                if fnmatch.fnmatchcase(c.id.lower(), pat)
                or fnmatch.fnmatchcase(c.info.name.lower(), pat)]
        if not hits:
            available = ", ".join(c.id for c in configs) or "(no devices found)"
            raise ValueError(f"device pattern {pattern!r} matches no device; "
                             f"available: {available}")
        chosen.update(hits)
    return [c for c in configs if c.id in chosen]


def describe(configs: list[DeviceConfig]) -> list[dict]:
    """Rows for ``warpboard devices``: what each configuration is and its main limits."""
    return [{"id": c.id, "name": c.info.name, "driver": c.info.driver_name,
             "driver_info": c.info.driver_info, "api_version": c.info.api_version,
             "subgroup_size": c.info.subgroup_size,
             "max_workgroup_invocations": c.info.max_workgroup_invocations,
             "max_shared_memory": c.info.max_shared_memory} for c in configs]

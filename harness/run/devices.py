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
import json
import os
import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from ..vk import DeviceInfo
from .worker import Worker

LAVAPIPE_WIDTHS = (128, 256, 512)   # bits -> subgroup size 4, 8, 16 (32-bit lanes); 1024 and 2048
                                    # report 32 and 64 and run 16 (the probe shows it)
EXTRA_LAVAPIPE_WIDTHS = (128,)      # a lavapipe of an extra ICD: its cheapest width, to keep the default run short
SWIFTSHADER_ICD = "/usr/lib/chromium/vk_swiftshader_icd.json"     # Debian's chromium-common
PRIVATE_DRIVERS = Path(__file__).resolve().parents[2] / ".vk-drivers"   # made by ci/setup.sh
_LIST_DEVICES = "warpboard.harness.vk:probed_devices"


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
    """Every device with its subgroup probe (harness.vk.probe), in a fresh child process
    started with ``env``; Mesa's shader cache stays off there (the probe compiles one tiny
    shader, and a cache folder would be one more than the configurations)."""
    quiet = {**env, "MESA_SHADER_CACHE_DISABLE": "true"}
    with Worker(quiet, "probe-" + "-".join(f"{k}={v}" for k, v in env.items())) as worker:
        reply = worker.call(_LIST_DEVICES, timeout_s=timeout_s)
    if not reply.ok:
        raise DiscoveryError(
            f"listing Vulkan devices with env {env or '{}'} failed: {reply.describe()}\n"
            f"{reply.traceback or ''}{reply.stderr_tail}")
    return reply.value


def driver_envs(icds: list[str] | None = None, extra: tuple[str, ...] = ()) -> list[dict[str, str]]:
    """The environments discovery probes, one per Vulkan driver source: the loader's own ICDs
    (``{}``), then each extra ICD in its own (``VK_DRIVER_FILES``, plus the variables of a
    ``warpboard-env.json`` beside it: a private driver's ``LD_LIBRARY_PATH``). The extras are
    ``icds`` where given, else ``$WARPBOARD_ICDS`` (paths joined by ``:``; ``none``: no extra),
    else every one this machine has (:func:`default_icds`); ``extra`` are added to them
    (``--icd FILE``)."""
    if icds is None:
        named = os.environ.get("WARPBOARD_ICDS")
        icds = default_icds() if named is None else [] if named == "none" else [p for p in named.split(":") if p]
    envs: list[dict[str, str]] = [{}]
    for icd in [*icds, *extra]:
        path = Path(icd).resolve()
        if not path.is_file():
            raise DiscoveryError(f"{icd}: no such ICD file")
        extra = path.with_name("warpboard-env.json")
        env = json.loads(extra.read_text()) if extra.is_file() else {}
        envs.append({**env, "VK_DRIVER_FILES": str(path)})
    return envs


def default_icds() -> list[str]:
    """The ICDs beside the system's: SwiftShader where Chromium brings it, and the drivers
    ``ci/setup.sh`` unpacked under ``.vk-drivers/`` (lavapipe of another Mesa)."""
    found = [SWIFTSHADER_ICD] if Path(SWIFTSHADER_ICD).is_file() else []
    return found + sorted(str(p) for p in PRIVATE_DRIVERS.glob("*/icd.json"))


def discover(timeout_s: float = 60.0, icds: list[str] | None = None, extra: tuple[str, ...] = ()) -> list[DeviceConfig]:
    """Every device configuration of every driver source (:func:`driver_envs`), in order.

    Non-lavapipe devices give one configuration each; the system's lavapipe gives one per
    LAVAPIPE_WIDTHS and one of an extra ICD one per EXTRA_LAVAPIPE_WIDTHS (both
    ``$WARPBOARD_LAVAPIPE_WIDTHS`` where set: bits, comma-separated), named from the subgroup
    size its probe process reported. Every probe also dispatches the subgroup probe
    (harness.vk.probe).
    """
    sources = driver_envs(icds, extra)
    with ThreadPoolExecutor(len(sources)) as pool:
        plains = list(pool.map(lambda env: _probe(env, timeout_s), sources))
    entries = [(env, info, k == 0) for k, (env, infos) in enumerate(zip(sources, plains)) for info in infos]
    width_envs = [{**env, "LP_NATIVE_VECTOR_WIDTH": str(w)} for env, infos in zip(sources, plains)
                  if any(is_lavapipe(i) for i in infos) for w in lavapipe_widths(env)]
    with ThreadPoolExecutor(max(1, len(width_envs))) as pool:
        by_width = dict(zip(map(_key, width_envs), pool.map(lambda env: _probe(env, timeout_s), width_envs)))
    bases = _base_ids([info for _, info, _ in entries], [system for _, _, system in entries])
    found: list[tuple[str, dict, DeviceInfo]] = []
    for (env, info, _), base in zip(entries, bases):
        if is_lavapipe(info):
            for w in lavapipe_widths(env):
                wenv = {**env, "LP_NATIVE_VECTOR_WIDTH": str(w)}
                i = _same_device(info, by_width[_key(wenv)], wenv)
                found.append((f"{base}-w{i.subgroup_size}", wenv, i))
        else:
            found.append((base, env, info))
    return _unique(found)


def lavapipe_widths(env: dict[str, str]) -> tuple[int, ...]:
    """The vector widths (bits) lavapipe of a driver source runs at (see :func:`discover`)."""
    named = os.environ.get("WARPBOARD_LAVAPIPE_WIDTHS")
    if named:
        return tuple(int(w) for w in named.split(","))
    return EXTRA_LAVAPIPE_WIDTHS if "VK_DRIVER_FILES" in env else LAVAPIPE_WIDTHS


def _key(env: dict) -> tuple:
    return tuple(sorted(env.items()))


def _same_device(info: DeviceInfo, infos: list[DeviceInfo], env: dict) -> DeviceInfo:
    """The device of another probe that is ``info``: same UUIDs (same index where the
    driver reports none)."""
    for other in infos:
        if (other.identity == info.identity) if info.identity else (other.index == info.index):
            return other
    raise DiscoveryError(f"{info.name} ({info.driver_info or info.driver_version}) vanished "
                         f"when probed with env {env}")


def _base_ids(infos: list[DeviceInfo], system: list[bool] | None = None) -> list[str]:
    """Each device's id before any width suffix: its slug ("lavapipe" for lavapipe), with
    the driver version added where devices of one slug come from different drivers; a
    device of the loader's own ICDs (``system``) keeps the short id it has on every machine,
    so expectations and baselines stay valid where an extra driver joins."""
    system = system or [False] * len(infos)
    slugs = ["lavapipe" if is_lavapipe(i) else slug(i.name) for i in infos]
    out = []
    for info, base, own in zip(infos, slugs, system):
        drivers = {i.driver_uuid + _version(i) for i, b in zip(infos, slugs) if b == base}
        shared = len(drivers) > 1 and not (own and sum(o for b, o in zip(slugs, system) if b == base) == 1)
        out.append(f"{base}-{_version(info)}" if shared else base)
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


def probe_facts(info: DeviceInfo) -> dict:
    """The probe's facts in a few words each (``warpboard devices``, the reports' device table):
    reported and real subgroup size, lane order, full subgroups of 32, Int64/Int16, maximal
    reconvergence, and a finding where the real size contradicts the reported one."""
    p = getattr(info, "probe", None) or {}
    if not p:
        return {}
    full = p.get("full32")
    facts = {"real_subgroup": p.get("real", "?"),
             "lanes": "in order" if p.get("lanes_in_order") else "not in order" if "real" in p else "?",
             "full32": "n/a" if full is None else f"{full['real']} wide{'' if full.get('lanes_in_order') else ', out of order'}",
             "int64": "yes" if p.get("int64") else "no", "int16": "yes" if p.get("int16") else "no",
             "max_reconvergence": "yes" if p.get("maximal_reconvergence") else "no", "finding": ""}
    if p.get("error"):
        facts["finding"] = p["error"]
    elif p.get("real") not in (None, p.get("reported")):
        facts["finding"] = f"reports {p.get('reported')}, runs {p.get('real')} wide"
    elif full is not None and full.get("real") != 32:
        facts["finding"] = f"full subgroups of 32 asked for, {full.get('real')} given"
    return facts


def describe(configs: list[DeviceConfig]) -> list[dict]:
    """Rows for ``warpboard devices``: what each configuration is, its main limits, and what
    its subgroup probe found."""
    return [{"id": c.id, "name": c.info.name, "driver": c.info.driver_name,
             "driver_info": c.info.driver_info, "api_version": c.info.api_version,
             "subgroup_size": c.info.subgroup_size, **probe_facts(c.info),
             "max_workgroup_invocations": c.info.max_workgroup_invocations,
             "max_shared_memory": c.info.max_shared_memory} for c in configs]

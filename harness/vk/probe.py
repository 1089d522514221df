"""What a device's subgroups really are, measured by a dispatch, not read off its properties.

Vulkan promises little: ``subgroupSize`` is what the driver reports (llvmpipe at 1024 bits
reports 32 and runs 16), and ``SubgroupLocalInvocationId`` need not follow the local index
unless full subgroups are required. The probe dispatches one workgroup of PROBE_THREADS
invocations in which each writes the popcount of ``ballot(true)`` (the invocations of its
subgroup that are active: the real size), its ``SubgroupId``, its
``SubgroupLocalInvocationId`` and ``SubgroupSize``; the host reads off the real size, the
subgroup id's stride and whether lanes follow the local index. Where the device offers
full subgroups of 32 (``computeFullSubgroups`` and ``subgroupSizeControl``) the probe runs a
second time asking for them. The shader needs no 64-bit integers, so it runs on devices
without ``shaderInt64``.
"""
from __future__ import annotations

import struct
from dataclasses import replace

from warpboard.translator import spirv

from ._base import VulkanError
from .device import Device
from .info import DeviceInfo, device_extensions, list_devices

PROBE_THREADS = 128
WARP = 32
MAXIMAL_RECONVERGENCE = "VK_KHR_shader_maximal_reconvergence"


def probe_shader(threads: int = PROBE_THREADS) -> bytes:
    """The probe: out[4 t + k] = (popcount(ballot(true)), SubgroupId, SubgroupLocalInvocationId,
    SubgroupSize) of local invocation t."""
    e = spirv.enums
    m = spirv.Module(int64=False)
    for cap in ("Shader", "GroupNonUniform", "GroupNonUniformBallot"):
        m.capability(cap)
    m.emit("model", "MemoryModel", e.AddressingModel.Logical, e.MemoryModel.GLSL450)
    f = spirv.Function(m)
    u32, v4 = m.u32(), m.vec(m.u32(), 4)
    out = m.storage_buffer(0, "out")
    ptr = m.pointer("StorageBuffer", u32)
    k = lambda v: m.const(u32, v)   # noqa: E731
    tid = f.load(u32, m.builtin("LocalInvocationIndex", u32))
    ballot = f.op("GroupNonUniformBallot", v4, k(e.Scope.Subgroup), m.const_bool(True))
    counts = f.op("BitCount", v4, ballot)
    parts = [f.op("CompositeExtract", u32, counts, i) for i in range(4)]
    active = f.op("IAdd", u32, f.op("IAdd", u32, parts[0], parts[1]), f.op("IAdd", u32, parts[2], parts[3]))
    values = [active] + [f.load(u32, m.builtin(b, u32))
                         for b in ("SubgroupId", "SubgroupLocalInvocationId", "SubgroupSize")]
    base = f.op("IMul", u32, tid, k(4))
    for i, value in enumerate(values):
        f.store(f.op("AccessChain", ptr, out, k(0), f.op("IAdd", u32, base, k(i))), value)
    f.finish()
    m.emit_mixed("entry", "EntryPoint", e.ExecutionModel.GLCompute, f.fid, "main", m.interface)
    m.emit("mode", "ExecutionMode", f.fid, e.ExecutionMode.LocalSize, threads, 1, 1)
    return m.assemble()


def read_probe(words: list[int], threads: int = PROBE_THREADS) -> dict:
    """What one probe dispatch says: real size, reported size, SubgroupId stride, lane order."""
    rows = [words[4 * t:4 * t + 4] for t in range(threads)]
    real = max(r[0] for r in rows)
    ids = [r[1] for r in rows]
    stride = next((t for t in range(1, threads) if ids[t] != ids[0]), threads)
    in_order = all(r[2] == t % real and r[1] == t // real for t, r in enumerate(rows)) if real else False
    return {"real": real, "reported": rows[0][3], "id_stride": stride, "lanes_in_order": in_order}


def probe(device: Device) -> dict:
    """The probe's facts for an open device: as it comes, and with full subgroups of 32."""
    info = device.info
    facts = {"reported": info.subgroup_size, "int64": "shaderInt64" in info.features,
             "int16": "shaderInt16" in info.features, "operations": list(info.subgroup_operations),
             "maximal_reconvergence": MAXIMAL_RECONVERGENCE in device.extensions, "full32": None}
    if not {"ballot"} <= set(info.subgroup_operations) or "compute" not in info.subgroup_stages:
        facts["error"] = "no subgroup ballot in compute shaders"
        return facts
    code, buffers = probe_shader(), [bytes(16 * PROBE_THREADS)]
    try:
        facts.update(read_probe(list(struct.unpack(f"<{4 * PROBE_THREADS}I", device.run(code, buffers)[0]))))
        if device.full_subgroups(WARP) is None:
            full = device.run(code, buffers, subgroups=(True, WARP))[0]
            facts["full32"] = read_probe(list(struct.unpack(f"<{4 * PROBE_THREADS}I", full)))
    except VulkanError as exc:
        facts["error"] = f"{type(exc).__name__}: {exc}"
    return facts


def probed_devices() -> list[DeviceInfo]:
    """Every physical device with its probe's facts (``DeviceInfo.probe``); run in a worker
    process, as discovery does for each configuration."""
    out = []
    for info in list_devices():
        try:
            with Device(info.index) as device:
                facts = probe(device)
        except VulkanError as exc:
            facts = {"reported": info.subgroup_size, "error": f"{type(exc).__name__}: {exc}"}
        out.append(replace(info, probe=facts))
    return out


def warps(info: DeviceInfo) -> tuple[bool, tuple[bool, int] | None]:
    """Whether the device's subgroups can stand for warps, by its probe: 32 real lanes in
    local-index order, with full subgroups of 32 asked for where the device offers them
    (the second value: what to ask the pipeline for), as it comes otherwise."""
    facts = info.probe or {}
    full = facts.get("full32")
    if full and full.get("real") == WARP and full.get("lanes_in_order"):
        return True, (True, WARP)
    if facts.get("real") == WARP and facts.get("lanes_in_order"):
        return True, None
    return False, None


def real_subgroup(info: DeviceInfo) -> int | None:
    """How many lanes a subgroup really has, by the probe: with full subgroups of 32 asked for
    where the device offers them (as subgroup-native asks), as it comes otherwise; a device
    without a probe, its reported size."""
    facts = info.probe
    if facts is None:
        return info.subgroup_size
    full = facts.get("full32") or {}
    return full.get("real") or facts.get("real")


__all__ = ["probe", "probe_shader", "read_probe", "probed_devices", "warps", "real_subgroup", "PROBE_THREADS",
           "device_extensions"]

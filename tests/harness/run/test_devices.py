"""harness.run.devices: discovery (lavapipe at three widths), ids, selection, description."""
from __future__ import annotations

import json

import pytest
from warpboard.harness.run import devices
from warpboard.harness.run.devices import DeviceConfig
from warpboard.harness.vk import DeviceInfo


def fake_info(name: str, index: int = 0, subgroup: int = 32, driver: str = "") -> DeviceInfo:
    return DeviceInfo(
        index=index, name=name, vendor_id=0x10DE, device_id=1, device_type="discrete-gpu",
        driver_name=driver, driver_info="", driver_version="1.2.3.4",
        driver_version_raw=0, api_version="1.3.0", subgroup_size=subgroup,
        subgroup_stages=("compute",), subgroup_operations=("basic",),
        min_subgroup_size=subgroup, max_subgroup_size=subgroup,
        max_workgroup_size=(1024, 1024, 64), max_workgroup_invocations=1024,
        max_workgroup_count=(65535, 65535, 65535), max_shared_memory=49152,
        max_storage_buffer_range=1 << 31, shader_int64=True, features=("shaderInt64",))


CONFIGS = [
    DeviceConfig("lavapipe-w4", 0, {"LP_NATIVE_VECTOR_WIDTH": "128"},
                 fake_info("llvmpipe (LLVM 15.0.6, 128 bits)", subgroup=4)),
    DeviceConfig("lavapipe-w8", 0, {"LP_NATIVE_VECTOR_WIDTH": "256"},
                 fake_info("llvmpipe (LLVM 15.0.6, 256 bits)", subgroup=8)),
    DeviceConfig("nvidia-h200", 1, {}, fake_info("NVIDIA H200", index=1)),
]


@pytest.fixture(scope="module")
def discovered():
    configs = devices.discover(timeout_s=60)
    if not configs:
        pytest.skip("no Vulkan device (no loader, no ICD, or no physical device)")
    return configs


def test_discover_lavapipe_widths(discovered):
    lavapipe = [c for c in discovered if devices.is_lavapipe(c.info)]
    if not lavapipe:
        pytest.skip("lavapipe (Mesa llvmpipe Vulkan) not installed")
    got = {c.id: (c.info.subgroup_size, c.env["LP_NATIVE_VECTOR_WIDTH"]) for c in lavapipe}
    assert got == {"lavapipe-w4": (4, "128"), "lavapipe-w8": (8, "256"),
                   "lavapipe-w16": (16, "512")}


def test_discovered_configs_are_consistent(discovered):
    ids = [c.id for c in discovered]
    assert len(ids) == len(set(ids))
    for c in discovered:
        assert c.index == c.info.index
        json.dumps(c.to_json())


@pytest.mark.parametrize("name, expected", [
    ("NVIDIA H200", "nvidia-h200"),
    ("AMD Radeon RX 6800 (RADV NAVI21)", "amd-radeon-rx-6800-radv-navi21"),
    ("llvmpipe (LLVM 15.0.6, 256 bits)", "lavapipe-llvm-15-0-6-256-bits"),
    ("???", "device"),
])
def test_slug(name, expected):
    assert devices.slug(name) == expected


def test_colliding_ids_get_suffixes():
    same = fake_info("NVIDIA H200")
    configs = devices._unique([("nvidia-h200", {}, same)] * 3)
    assert [c.id for c in configs] == ["nvidia-h200", "nvidia-h200-2", "nvidia-h200-3"]


@pytest.mark.parametrize("patterns, expected", [
    (None, ["lavapipe-w4", "lavapipe-w8", "nvidia-h200"]),
    ([], ["lavapipe-w4", "lavapipe-w8", "nvidia-h200"]),
    (["lavapipe-*"], ["lavapipe-w4", "lavapipe-w8"]),
    (["NVIDIA*"], ["nvidia-h200"]),                      # by id, case-insensitive
    (["*h200"], ["nvidia-h200"]),
    (["llvmpipe*128 bits)"], ["lavapipe-w4"]),           # by device name
    (["nvidia-h200", "lavapipe-w4"], ["lavapipe-w4", "nvidia-h200"]),  # device order
])
def test_select(patterns, expected):
    assert [c.id for c in devices.select(CONFIGS, patterns)] == expected


def test_select_unknown_pattern_lists_ids():
    with pytest.raises(ValueError) as err:
        devices.select(CONFIGS, ["lavapipe-*", "radeon*"])
    text = str(err.value)
    assert "'radeon*'" in text
    assert "lavapipe-w4, lavapipe-w8, nvidia-h200" in text


def test_describe_rows():
    rows = devices.describe(CONFIGS)
    assert rows[2] == {"id": "nvidia-h200", "name": "NVIDIA H200", "driver": "",
                       "driver_info": "", "api_version": "1.3.0", "subgroup_size": 32,
                       "max_workgroup_invocations": 1024, "max_shared_memory": 49152}
    json.dumps(rows)

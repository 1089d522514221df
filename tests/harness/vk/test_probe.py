"""The subgroup probe (harness.vk.probe): what a dispatch says a device's subgroups are, how
the translator's path follows it, and the drivers beside the system's (SwiftShader) that it
finds at discovery."""
from pathlib import Path
from types import SimpleNamespace

import pytest

from warpboard.harness.run import devices, engine
from warpboard.harness.run.dispatch import subgroup_request, warps_are_subgroups
from warpboard.harness.run.results import Status
from warpboard.harness.vk import probe

OPS = ("basic", "vote", "arithmetic", "ballot", "shuffle")


def words(real: int, reported: int, threads: int = probe.PROBE_THREADS, order=lambda t, real: t % real):
    """What the probe shader writes where subgroups are ``real`` wide."""
    out = []
    for t in range(threads):
        out += [real, t // real, order(t, real), reported]
    return out


def test_the_probe_reads_the_real_size_the_id_stride_and_the_lane_order():
    assert probe.read_probe(words(16, 32)) == {"real": 16, "reported": 32, "id_stride": 16, "lanes_in_order": True}
    shuffled = probe.read_probe(words(32, 32, order=lambda t, real: (t * 5) % real))
    assert shuffled["real"] == 32 and not shuffled["lanes_in_order"]


def _info(real, full=None, reported=32):
    facts = {"reported": reported, "real": real, "lanes_in_order": True, "full32": full}
    return SimpleNamespace(subgroup_size=reported, subgroup_stages=("compute",), subgroup_operations=OPS, probe=facts)


def test_the_translator_takes_subgroups_for_warps_only_where_the_probe_saw_32_lanes():
    assert warps_are_subgroups(_info(32)) and subgroup_request(_info(32), (64, 1, 1)) is None
    assert not warps_are_subgroups(_info(16))                           # llvmpipe at 1024 bits: reports 32
    full = _info(None, full={"real": 32, "lanes_in_order": True})
    assert warps_are_subgroups(full)
    assert subgroup_request(full, (64, 1, 1)) == (True, 32)              # full subgroups of 32 asked for
    assert subgroup_request(full, (48, 1, 1)) == (False, 32)             # x not a multiple of 32: size only
    assert not warps_are_subgroups(_info(16, full={"real": 16, "lanes_in_order": True}))


def test_the_probe_on_lavapipe_matches_its_width(lavapipe_config):
    config = lavapipe_config(8)
    facts = config.info.probe
    assert (facts["reported"], facts["real"], facts["id_stride"], facts["lanes_in_order"]) == (8, 8, 8, True)
    assert facts["int64"] is True and "ballot" in facts["operations"]
    assert devices.probe_facts(config.info)["finding"] == ""


def test_a_reported_size_the_probe_contradicts_is_a_finding():
    info = SimpleNamespace(probe={"reported": 32, "real": 16, "lanes_in_order": True, "full32": None,
                                  "int64": True, "int16": True, "maximal_reconvergence": False})
    assert devices.probe_facts(info)["finding"] == "reports 32, runs 16 wide"


def test_an_extra_icd_gets_its_own_environment_and_its_private_variables(tmp_path):
    icd = tmp_path / "icd.json"
    icd.write_text("{}")
    (tmp_path / "warpboard-env.json").write_text('{"LD_LIBRARY_PATH": "/private/lib"}')
    assert devices.driver_envs([str(icd)]) == [{}, {"LD_LIBRARY_PATH": "/private/lib", "VK_DRIVER_FILES": str(icd)}]
    with pytest.raises(devices.DiscoveryError, match="no such ICD file"):
        devices.driver_envs([str(tmp_path / "missing.json")])


def test_the_system_driver_keeps_its_short_id_beside_another_build():
    mk = lambda info, uuid: SimpleNamespace(name="llvmpipe (LLVM 15.0.6, 256 bits)", driver_name="llvmpipe",  # noqa: E731
                                            driver_info=info, driver_uuid=uuid, driver_version="")
    infos = [mk("Mesa 22.3.6 (LLVM 15.0.6)", "a"), mk("Mesa 25.0.7 (LLVM 15.0.6)", "b")]
    assert devices._base_ids(infos, [True, False]) == ["lavapipe", "lavapipe-25.0.7"]
    assert devices._base_ids(infos, [False, False]) == ["lavapipe-22.3.6", "lavapipe-25.0.7"]


@pytest.mark.skipif(not Path(devices.SWIFTSHADER_ICD).is_file(), reason="no SwiftShader (Debian's chromium-common)")
def test_swiftshader_is_found_and_probed_without_int64(make_case):
    [config] = [c for c in devices.discover(icds=[devices.SWIFTSHADER_ICD]) if "swiftshader" in c.id]
    assert config.env["VK_DRIVER_FILES"] == devices.SWIFTSHADER_ICD
    assert config.info.probe["real"] == config.info.probe["reported"] and config.info.probe["int64"] is False
    case = make_case("basic/tiny")
    cell = engine.run_matrix([case], [config], interp=False, jobs=1)["results"][0]
    assert cell["status"] == Status.PASS.value, cell.get("message")

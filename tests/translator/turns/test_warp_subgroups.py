"""Collectives through subgroup operations: chosen only for devices whose subgroups can be
warps, and a shader translated that way either runs right or says it cannot."""
from types import SimpleNamespace

import pytest
from warpboard.harness.run import devices
from warpboard.harness.run.dispatch import warps_are_subgroups
from warpboard.harness.run.worker import Worker

FULL = ("basic", "vote", "arithmetic", "ballot", "shuffle", "shuffle_relative", "quad")


def _info(size, ops=FULL, stages=("compute",)):
    return SimpleNamespace(subgroup_size=size, subgroup_operations=ops, subgroup_stages=stages)


def test_only_32_wide_subgroups_with_the_operations_stand_for_warps(monkeypatch):
    monkeypatch.delenv("WARPBOARD_WARP_SUBGROUPS", raising=False)
    assert warps_are_subgroups(_info(32))
    assert not warps_are_subgroups(_info(16))
    assert not warps_are_subgroups(_info(64))
    assert not warps_are_subgroups(_info(32, ops=("basic", "vote", "ballot", "arithmetic")))   # no shuffle
    assert not warps_are_subgroups(_info(32, stages=("fragment",)))
    monkeypatch.setenv("WARPBOARD_WARP_SUBGROUPS", "off")
    assert not warps_are_subgroups(_info(32))


@pytest.mark.xdist_group("lavapipe-w32")
@pytest.mark.parametrize("case_id", ["truth/loop_ballot", "shuffle/shfl_xor_widths", "match_redux/redux_all_ops"])
def test_a_32_wide_subgroup_device_runs_right_or_says_why(case_id):
    """llvmpipe at 1024 bits reports 32-wide subgroups but runs them 16 wide (measured): the
    shader's own check must turn that into an ERROR naming it, never a wrong answer."""
    if not any(c.id.startswith("lavapipe") for c in devices.discover()):
        pytest.skip("no lavapipe device (install mesa-vulkan-drivers)")
    with Worker({"LP_NATIVE_VECTOR_WIDTH": "1024"}, "lavapipe-1024") as worker:
        reply = worker.call("support.worker_targets:run_case_here", case_id, timeout_s=120)
    assert reply.ok, reply.describe()
    cell = reply.value
    if cell["subgroup_size"] != 32:
        pytest.skip(f"this llvmpipe reports {cell['subgroup_size']}-wide subgroups at 1024 bits")
    assert cell["status"] == "PASS" or (cell["status"] == "ERROR" and "subgroups that are warps" in cell["message"]), cell

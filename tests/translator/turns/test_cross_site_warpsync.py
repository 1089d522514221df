"""Lanes waiting at one WARPSYNC while their warp-mates pass another (ptxas' votesync helpers
called from both sides of a branch, cases/repro/any_all_two_sites): a thread outside the turn
publishes again the mask it waits with, so the lanes of the turn see it waiting and release
it (translator/emit/turns/exchange.py, ``published``). Before, every thread outside the turn
published 0 and the lanes at the second WARPSYNC waited for ever (LIVELOCK)."""
import pytest
from warpboard.harness.run import dispatch

from support.paths import library_case

CASES = ("repro/any_all_two_sites", "random/two_masks_one_warpsync", "random/reduce_two_masks")


@pytest.mark.xdist_group("lavapipe-w8")
@pytest.mark.parametrize("case_id", CASES)
def test_the_shader_meets_the_interpreter_across_warpsync_sites(case_id, vulkan_device):
    prep = dispatch.prepare(library_case(case_id))
    reference = dispatch.run_interpreter(prep)
    shader = dispatch.translate_case(prep, "turns", use_cache=False)[0]
    run = dispatch.run_vulkan(vulkan_device, prep, shader)
    assert run.outcome == reference.outcome == "ok", run.detail
    assert run.buffers == reference.buffers
    assert run.counters["turns"] == reference.counters["turns"]

"""A cell's launch time (``run_s``, ``run_clock``): the device's timestamps where it has them,
taken from a second launch where the first was short (lavapipe compiles at the first
dispatch, inside the timestamps), and from the first where the second fails."""
from __future__ import annotations

import pytest
from warpboard.harness.run import engine

from support.paths import library_case


@pytest.mark.xdist_group("lavapipe-in-process")
@pytest.mark.parametrize("second_fails", [False, True])
def test_a_short_launch_is_timed_again(lavapipe, monkeypatch, second_fails):
    launches = []

    def counted(*args, **kwargs):
        if second_fails and launches:
            raise RuntimeError("the second launch failed")
        raw = real(*args, **kwargs)
        launches.append(raw.timings["gpu_s"])
        return raw
    real = engine.run_vulkan
    monkeypatch.setattr(engine, "run_vulkan", counted)
    result = engine.run_case(library_case("basic/bit_ops"), "lavapipe", lavapipe)
    assert result.status.value == "PASS" and result.run_clock == "device"
    assert len(launches) == (1 if second_fails else 2) and launches[0] < engine.RETIME_S
    assert result.run_s == launches[-1]

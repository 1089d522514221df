"""``warpboard bench``: the summary arithmetic on known rows, and one small run on lavapipe."""
import json
import subprocess
import sys

import pytest
from warpboard.harness.run import devices
from warpboard.studies import bench_targets
from warpboard.studies.bench import NATIVE_MODE, bench_cases, native_ratios, settle, summarise, translate_all
from warpboard.translator import Target

from support.paths import ROOT


def _row(case, mode, dispatch_ms, device="dev", **extra):
    row = {"device": device, "case": case, "mode": mode, "outcome": "ok", "blocks": 2, "sass_instructions": 10,
           "translate_s": {"median": 0.001}, "dispatch_s": {"median": dispatch_ms / 1000},
           "instructions_per_thread": 5.0, "turns": 0 if mode == "free" else 4, "barriers": 0 if mode == "free" else 6,
           "warp_instructions": 20.0}
    row.update(extra)
    return row


def test_summary_ratios_and_rates():
    rows = [_row("basic/a", "free", 2.0, driver_compile_s=0.1), _row("basic/a", "turns", 3.0, driver_compile_s=0.2),
            _row("vote/b", "turns", 5.0, driver_compile_s=0.4),
            _row("bench/bench_plain_loop", "free", 0.5, native_h200_ms=0.25),
            _row("bench/bench_plain_loop", "turns", 0.75, native_h200_ms=0.25)]
    s = summarise(rows, {"dev": 1.0})
    assert s["turns_over_free"]["dev"]["cases"] == {"basic/a": 1.5, "bench/bench_plain_loop": 1.5}
    # library turns rows: basic/a and vote/b, 6 barriers each over 2 blocks x 5 instructions
    assert s["barriers_per_instruction"] == pytest.approx(12 / 20)
    assert s["barriers_per_warp_instruction"] == pytest.approx(12 / 40)
    assert s["translate_instructions_per_s"] == pytest.approx(30 / 0.003)
    compile_s = s["driver_compile_s"]["dev"]
    assert compile_s["slowest"] == "vote/b" and compile_s["total"] == pytest.approx(0.7)
    assert compile_s["per_1000_sass_instructions"] == pytest.approx(1000 * 0.7 / 30)
    recorded = s["over_native"]["dev"]["bench_plain_loop (turns)"]
    assert recorded["ratio"] == pytest.approx(3.0) and "recorded" in recorded["native_source"]


def test_a_bench_kernel_whose_words_are_not_the_chips_is_named_in_the_summary():
    rows = [_row("bench/bench_vote_loop", "turns", 9.0, checksum=5, checksum_ok=True, checksum_expected=5),
            _row("bench/bench_vote_loop", "subgroup-native", 9.0, checksum=4, checksum_ok=False, checksum_expected=5),
            _row("bench/bench_plain_loop", "free", 1.0, device="cpu")]        # shrunk grid: no checksum to hold
    assert summarise(rows, {})["wrong_words"] == ["bench/bench_vote_loop (subgroup-native) on dev"]


def test_a_bench_kernel_timed_before_the_clock_settled_is_named_in_the_summary():
    warm = {"batches": 30, "seconds": 8.0, "first_ms": 0.9, "settled_ms": 0.3}
    rows = [_row("bench/bench_plain_loop", "free", 1.0, warm_up={**warm, "settled": False}),
            _row("bench/bench_plain_loop", "turns", 1.0, warm_up={**warm, "settled": True}),
            _row("bench/bench_vote_loop", "turns", 1.0)]
    assert summarise(rows, {})["unsettled_clock"] == ["bench/bench_plain_loop (free) on dev"]


def test_each_target_holds_its_figure_and_says_whether_it_is_met():
    rows = [_row("bench/bench_vote_loop", "turns", 0.6, native_h200_ms=0.2, warps=16, barriers=16),
            _row("bench/bench_plain_loop", "free", 0.33, native_h200_ms=0.25),
            _row("bench/bench_plain_loop", "turns", 0.3, native_h200_ms=0.25),
            _row("basic/a", "free", 1.0), _row("basic/a", "turns", 2.0),
            _row("bench/bench_plain_loop", "free", 0.33, after_library=True),
            _row("bench/bench_plain_loop", "turns", 0.45, after_library=True),
            _row("basic/a", "free", 1.0, device="cpu"), _row("basic/a", "turns", 0.9, device="cpu")]
    s = summarise(rows, {}, {"bench_vote_loop_ms": 0.2, "bench_plain_loop_ms": 0.25})
    s["interpreter_turns"] = {"bench/bench_warp_trips": {"per_warp_over_workgroup_warp_turns": 0.07}}
    dev, cpu = (bench_targets.checks(rows, s)[d] for d in ("dev", "cpu"))
    vote = dev["vote_loop_over_native"]
    assert vote["value"] == pytest.approx(3.0) and vote["met"] and vote["stretch_met"] is False
    plain = dev["plain_loop_over_native"]       # the slower mode: free, 0.33 ms over 0.25
    assert plain["value"] == pytest.approx(1.32) and plain["where"] == "bench_plain_loop (free)" and plain["met"]
    free = dev["free_over_turns"]               # the plain loop's free mode is the slower: not met
    assert free["value"] == pytest.approx(1.1) and free["where"] == "bench/bench_plain_loop" and free["met"] is False
    after = dev["after_library_over_alone"]
    assert after["value"] == pytest.approx(1.5) and after["met"] is False
    assert dev["vote_loop_barriers_per_warp"]["value"] == 1.0 and dev["vote_loop_barriers_per_warp"]["met"]
    assert dev["warp_trips_per_warp_over_workgroup_turns"]["met"]
    # a device with no bench kernel at its full grid: nothing to say of those targets
    assert cpu["vote_loop_over_native"]["met"] is None and cpu["after_library_over_alone"]["value"] is None
    assert cpu["free_over_turns"]["value"] == pytest.approx(1 / 0.9) and cpu["free_over_turns"]["met"] is False


def test_vote_loop_barriers_are_held_to_the_target_only_where_subgroups_are_warps():
    rows = [_row("bench/bench_vote_loop", "turns", 0.6, warps=16, barriers=16, warp_subgroups=True),
            _row("bench/bench_vote_loop", "turns", 0.6, warps=16, barriers=4000, warp_subgroups=False, device="cpu")]
    checks = bench_targets.checks(rows, summarise(rows, {}))
    assert checks["dev"]["vote_loop_barriers_per_warp"]["value"] == 1.0 and checks["dev"]["vote_loop_barriers_per_warp"]["met"]
    cpu = checks["cpu"]["vote_loop_barriers_per_warp"]
    assert cpu["value"] is None and cpu["met"] is None and "not warps" in cpu["where"]


def _timed(case, mode, low, median, high):
    return _row(case, mode, median, gpu_s={"median": median / 1000, "min": low / 1000, "max": high / 1000})


def test_structured_beside_free_counts_a_case_slower_only_beyond_its_spread():
    """a: slower by its medians, within the spread of its dispatches; b: faster; c: slower
    beyond it (its fastest dispatch is slower than free mode's slowest)."""
    rows = [_timed("basic/a", "free", 0.03, 0.04, 0.08), _timed("basic/a", "structured", 0.03, 0.07, 0.09),
            _timed("basic/b", "free", 1.0, 1.1, 1.2), _timed("basic/b", "structured", 0.5, 0.55, 0.6),
            _timed("basic/c", "free", 1.0, 1.0, 1.0)]
    s = summarise(rows + [_timed("basic/c", "structured", 1.2, 1.25, 1.3)], {})
    found = s["structured_over_free"]["dev"]
    assert found["cases"]["basic/a"] == pytest.approx(1.75) and found["slower"] == ["basic/c"]
    assert found["geomean"] == pytest.approx((1.75 * 0.5 * 1.25) ** (1 / 3))
    check = bench_targets.checks(rows, s)["dev"]["structured_over_free"]
    assert check["met"] is False and "basic/c" in check["where"]
    s = summarise(rows + [_timed("basic/c", "structured", 0.9, 1.05, 1.2)], {})
    check = bench_targets.checks(rows, s)["dev"]["structured_over_free"]
    assert s["structured_over_free"]["dev"]["slower"] == [] and check["met"] is (check["value"] <= 1.0)


def test_native_times_of_this_run_replace_the_recorded_ones():
    rows = [_row("bench/bench_vote_loop", "turns", 9.0, native_h200_ms=0.18),
            _row("bench/bench_vote_loop", "turns", 9.0, device="cpu")]     # shrunk grid: no native figure
    ratios = native_ratios(rows, {"bench_vote_loop_ms": 0.3})
    assert list(ratios) == ["dev"]
    assert ratios["dev"]["bench_vote_loop (turns)"]["ratio"] == pytest.approx(30.0)
    assert ratios["dev"]["bench_vote_loop (turns)"]["native_source"] == "this run"


def test_the_subgroup_native_bench_mode_is_that_strategy_beside_the_turns():
    vote = next(c for c in bench_cases(1) if c.id == "bench/bench_vote_loop")
    _, shaders, seconds = translate_all(vote, ["turns", NATIVE_MODE], 1, lambda strategy: Target(warp_subgroups=True))
    assert shaders["turns"].mode == "turns" and shaders[NATIVE_MODE].mode == "native"
    assert shaders["turns"].warp_subgroups and shaders[NATIVE_MODE].spirv != shaders["turns"].spirv
    assert len(seconds[NATIVE_MODE]) == 1


@pytest.mark.campaign          # a study's end-to-end run: make campaign
@pytest.mark.xdist_group("lavapipe-w8")
def test_bench_on_lavapipe_measures_both_modes(tmp_path):
    if not any(c.id == "lavapipe-w8" for c in devices.discover()):
        pytest.skip("no lavapipe device (install mesa-vulkan-drivers)")
    out = tmp_path / "bench.json"
    cmd = [sys.executable, "-m", "warpboard", "bench", "basic/bit_ops", "vote/vote_uni", "--root",
           str(ROOT / "cases"), "--device", "lavapipe-w8", "--repeat", "1", "--bench-blocks", "1", "--bench-threads", "32", "-o", str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text())
    rows = {(r["case"], r["mode"]): r for r in doc["rows"]}
    assert set(rows) == {("basic/bit_ops", "free"), ("basic/bit_ops", "turns"), ("vote/vote_uni", "turns"),
                         ("bench/bench_vote_loop", "turns"), ("bench/bench_plain_loop", "free"),
                         ("bench/bench_plain_loop", "turns"), ("bench/bench_warp_trips", "turns"),
                         # structured where it translates: not the collectives, on 8-wide subgroups
                         ("basic/bit_ops", "structured"), ("bench/bench_plain_loop", "structured")}
    assert all(r["outcome"] == "ok" for r in rows.values()), rows
    free, turns = rows[("basic/bit_ops", "free")], rows[("basic/bit_ops", "turns")]
    assert free["turns"] == 0 and free["barriers"] == 0 and turns["turns"] > 0 and turns["barriers"] > 0
    assert free["instructions_per_thread"] == turns["instructions_per_thread"] > 0
    for r in rows.values():     # lavapipe's queue has timestamps: the device's time is inside the wall time
        assert 0 < r["gpu_s"]["median"] <= r["dispatch_s"]["max"]
    assert rows[("vote/vote_uni", "turns")]["barriers_per_warp_instruction"] > 0
    structured = rows[("basic/bit_ops", "structured")]
    assert structured["turns"] == 0 and structured["instructions_per_thread"] == free["instructions_per_thread"]
    assert list(doc["summary"]["structured_over_free"]["lavapipe-w8"]["cases"]) == ["basic/bit_ops"]
    check = doc["summary"]["checks"]["lavapipe-w8"]["structured_over_free"]
    assert check["limit"] == 1.0 and check["where"].startswith("geometric mean of 1 cases")
    s = doc["summary"]
    assert "basic/bit_ops" in s["turns_over_free"]["lavapipe-w8"]["cases"]
    assert s["translate_instructions_per_s"] > 0 and s["over_native"] == {}     # one block: no native figure
    # the bench kernels twice: alone (a VkDevice of their own) and after the library (its device)
    assert sum(1 for r in doc["rows"] if r.get("after_library")) == 5
    after = s["after_library"]["lavapipe-w8"]
    assert set(after) == {"bench/bench_vote_loop (turns)", "bench/bench_plain_loop (free)",
                          "bench/bench_plain_loop (turns)", "bench/bench_warp_trips (turns)",
                          "bench/bench_plain_loop (structured)"}
    assert all(v["alone_ms"] > 0 and v["after_library_ms"] > 0 and v["ratio"] > 0 for v in after.values())
    # the interpreter's turns of the warp-trips kernel: warp 0 loops 2048 times, warp 1 128 times
    trips = s["interpreter_turns"]["bench/bench_warp_trips"]
    assert trips["per_warp_turns"] == 2048 // 4 + 128 // 4 and trips["same_words"]
    assert trips["per_warp_over_workgroup_warp_turns"] <= s["targets"]["per_warp_over_workgroup_warp_turns"]
    checks = s["checks"]["lavapipe-w8"]
    assert "lavapipe-w8    free_over_turns" in proc.stdout       # each target printed, with its verdict
    assert checks["free_over_turns"]["value"] == max(1 / r for r in s["turns_over_free"]["lavapipe-w8"]["cases"].values())
    # lavapipe-w8's subgroups are 8 lanes: the workgroup takes the turns, so no barrier target
    assert checks["vote_loop_barriers_per_warp"]["value"] is None and "not warps" in checks["vote_loop_barriers_per_warp"]["where"]
    assert not rows[("bench/bench_vote_loop", "turns")]["warp_subgroups"]


class RampingClock:
    """A GPU whose clock climbs a step for every 0.2 s of back-to-back work, from 345 to
    1980 MHz, as an H100's does from idle: a kernel of 1,000,000 cycles per dispatch."""
    def __init__(self):
        self.busy_s, self.counts = 0.0, []

    def mhz(self):
        return min(1980.0, 345.0 * 1.35 ** int(self.busy_s / 0.2))

    def __call__(self, count):
        self.counts.append(count)
        seconds = 1e6 / (self.mhz() * 1e6)
        if count > 1:           # a single dispatch, with the host's work around it, does not count
            self.busy_s += seconds * count
        return seconds


def test_the_warm_up_runs_until_the_clock_has_settled():
    clock = RampingClock()
    warm = settle(clock, batch_s=0.25, limit_s=60)
    assert warm["settled"] and clock.mhz() == 1980.0
    assert warm["first_ms"] == pytest.approx(1000 / 345, rel=1e-6)
    assert warm["settled_ms"] == pytest.approx(1000 / 1980, rel=1e-6)
    assert clock.counts[0] == 1 and all(c > 1 for c in clock.counts[1:])
    assert warm["batches"] == len(clock.counts) - 1 >= 3


def test_a_warm_up_that_does_not_settle_says_so_and_stops_at_its_limit():
    times = iter(range(1, 10**6))
    warm = settle(lambda count: 1e-3 * (1.5 if next(times) % 2 else 1.0), batch_s=1e-3, limit_s=0.05)
    assert not warm["settled"] and warm["batches"] >= 2 and warm["seconds"] >= 0.05


def test_no_warm_up_without_a_device_clock():
    assert settle(lambda count: None) is None


def test_alone_and_after_the_library_are_dispatched_in_turn(monkeypatch):
    """A slow spell of the machine hits both devices alike: round by round, every mode on the
    kernels' own device, then every mode on the library's."""
    from warpboard.harness.run.dispatch import RawRun
    from warpboard.studies import bench
    case = next(c for c in bench_cases(1, 32) if c.name == "bench_plain_loop")
    translated = translate_all(case, ["free", "turns"], 1)
    calls = []

    def fake_run(device, prep, shader, timeout_s=60.0, dispatches=1):
        calls.append((device, shader.mode))
        return RawRun([bytes(4 * 32)], counters={"turns": 0, "steps": 1, "barriers": 0, "instructions": 32},
                      timings={"run_s": 0.001, "dispatch_s": 0.001, "gpu_s": 0.0005 if device == "alone" else 0.002})
    monkeypatch.setattr(bench, "run_vulkan", fake_run)
    rows = bench.measure("alone", case, ["free", "turns"], 2, translated, after="library")
    assert calls == [("alone", "free"), ("alone", "turns"), ("library", "free"), ("library", "turns")] * 3
    assert [(r["mode"], bool(r.get("after_library"))) for r in rows] == \
        [("free", False), ("turns", False), ("free", True), ("turns", True)]
    assert [r["gpu_s"]["median"] for r in rows] == [0.0005, 0.0005, 0.002, 0.002]


def test_a_relaunched_case_runs_on_both_interpreters_alike():
    """warpboard bench --interpreter's launches: a library kernel on a bigger grid, random
    words, no expected ones; the vector interpreter leaves the words its scalar oracle does."""
    from warpboard.harness.case.model import discover_cases
    from warpboard.studies.bench_interp import LAUNCHES, relaunch, time_launch
    from warpboard.translator import ScalarInterpreter
    assert {c for c, *_ in LAUNCHES} >= {"repro/rp_4_12"} and max(g or 0 for _, g, _, _ in LAUNCHES) >= 256
    case = relaunch(discover_cases(ROOT / "cases", ["captured/reduction/reduce2_int_2"])[0], 6, (6 * 256, 6), 6 * 256)
    vector, scalar = time_launch(case), time_launch(case, ScalarInterpreter)
    assert vector["threads"] == 6 * 256 and vector["outcome"][0] == "ok"
    assert vector["outcome"] == scalar["outcome"] and vector["buffers"] == scalar["buffers"]

"""The pytest plugin (harness/plugin.py), run in-process with pytest's ``pytester`` on small
case folders: ``pytest cases/`` gives one item per case and device, and each status becomes
a pytest outcome (PASS passes, XFAIL xfails, UNSUPPORTED skips, the rest fail with the
engine's message). ``--device none`` keeps the runs to the CPU reference interpreter."""
from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

import pytest
from warpboard.harness.run import devices
from warpboard.harness.run.devices import DeviceConfig

from support.paths import ROOT

WRONG_WORD = ("1 words differ: thread 0 (warp 0 lane 0) out[0]: expected 0x6731, got 0x6730")


@pytest.fixture
def case_root(pytester) -> Path:
    """``make_case`` writes into the folder pytester runs pytest in."""
    return pytester.path / "cases"


def _wrong_copy(make_case) -> None:
    """truth/shfl_xor_reduce, and truth/wrong: the same with thread 0's word off by one."""
    make_case.copy("truth/shfl_xor_reduce")
    make_case.copy("truth/shfl_xor_reduce", "truth/wrong", edit=lambda text: text.replace(
        "26416", "26417", 1).replace('name = "shfl_xor_reduce"', 'name = "wrong"'))


def _calls(result) -> dict[str, object]:
    """The call-phase report of each item of an in-process run, by node id."""
    return {r.nodeid: r for r in result.reprec.getreports("pytest_runtest_logreport") if r.when == "call"}


def test_items_are_case_by_device_with_a_group_per_device(pytester, make_case, monkeypatch):
    _wrong_copy(make_case)
    fakes = [DeviceConfig(f"fake-w{w}", 0, {}, SimpleNamespace(name=f"Fake {w}-wide")) for w in (4, 8)]
    monkeypatch.setattr(devices, "discover", lambda: fakes)
    items, _ = pytester.inline_genitems("cases", "--wb-cases", "cases")
    assert [i.nodeid for i in items] == [f"cases/truth/{name}.toml::{device}"
                                         for name in ("shfl_xor_reduce", "wrong")
                                         for device in ("fake-w4", "fake-w8", "interp")]
    assert [i.get_closest_marker("xdist_group").args for i in items[:3]] == \
        [("fake-w4",), ("fake-w8",), ("interp",)]
    items, _ = pytester.inline_genitems("cases", "--wb-cases", "cases", "--wb-device", "*-w8", "--wb-no-interp")
    assert [i.nodeid for i in items] == ["cases/truth/shfl_xor_reduce.toml::fake-w8",
                                         "cases/truth/wrong.toml::fake-w8"]


def test_pass_and_fail_with_the_thread_that_differs(pytester, make_case):
    _wrong_copy(make_case)
    result = pytester.runpytest("cases", "--wb-cases", "cases", "--wb-device", "none")
    result.assert_outcomes(passed=1, failed=1)
    calls = _calls(result)
    assert calls["cases/truth/shfl_xor_reduce.toml::interp"].passed
    wrong = calls["cases/truth/wrong.toml::interp"]
    assert wrong.longreprtext == f"FAIL: truth/wrong on interp\n{WRONG_WORD}"
    assert wrong.user_properties == [("status", "FAIL")]


def test_expected_livelock_is_xfail_by_the_shipped_expectations(pytester, make_case):
    make_case.copy("spin/never_ends")
    result = pytester.runpytest("cases", "--wb-cases", "cases", "--wb-device", "none",
                                "--wb-expectations", str(ROOT / "ci" / "expectations.txt"))
    result.assert_outcomes(xfailed=1)
    [call] = _calls(result).values()
    assert call.user_properties == [("status", "XFAIL")]


def test_expectations_default_to_ci_under_the_rootdir(pytester, make_case):
    make_case.copy("spin/never_ends")
    pytester.makeini("[pytest]\n")                       # the rootdir: pytester's folder
    (pytester.path / "ci").mkdir()
    (pytester.path / "ci" / "expectations.txt").write_text("* spin/never_ends LIVELOCK\n")
    pytester.runpytest("cases", "--wb-cases", "cases", "--wb-device", "none").assert_outcomes(xfailed=1)
    (pytester.path / "ci" / "expectations.txt").write_text("* spin/never_ends FAIL\n")
    result = pytester.runpytest("cases", "--wb-cases", "cases", "--wb-device", "none")   # any other outcome stays as it is
    result.assert_outcomes(failed=1)
    [call] = _calls(result).values()
    assert call.longreprtext.startswith("LIVELOCK: spin/never_ends on interp\n")
    assert "step budget of 2000" in call.longreprtext


def test_unknown_opcode_is_a_skip_naming_it(pytester, make_case):
    make_case.write("odd/unknown", sass="        /*0000*/                   FOOBAR R0, R1 ;\n"
                                        "        /*0010*/                   EXIT ;\n")
    result = pytester.runpytest("cases", "--wb-cases", "cases", "--wb-device", "none", "-rs")
    result.assert_outcomes(skipped=1)
    [skip] = [r for r in result.reprec.getreports("pytest_runtest_logreport") if r.skipped]
    where = make_case.path("odd/unknown")
    assert skip.longrepr[2] == f"Skipped: UNSUPPORTED: {where}:5: unknown opcode FOOBAR"
    assert skip.longrepr[0] == str(where)           # reported at the case file, not in the plugin


def test_a_broken_case_file_is_a_collection_error_naming_its_line(pytester, make_case):
    make_case.copy("truth/loop_ballot")
    make_case.copy("truth/loop_ballot", "odd/broken",
                   edit=lambda text: text.replace("[launch]", "[launch]\nblocks = 3"))
    result = pytester.runpytest("cases", "--wb-cases", "cases", "--wb-device", "none", "--continue-on-collection-errors")
    result.assert_outcomes(passed=1, errors=1)
    [error] = [r for r in result.reprec.getreports("pytest_collectreport") if r.failed]
    line = make_case.path("odd/broken").read_text().splitlines().index("blocks = 3") + 1
    assert str(error.longrepr).strip() == (f"{make_case.path('odd/broken')}:{line}: unknown key "
                                           "'launch.blocks' (allowed: grid, block, shared_bytes)")


# ------------------------------------------------------------------ off unless asked for
UNRELATED_CONFTEST = """
def pytest_addoption(parser):
    parser.addoption("--device", default="cpu")           # an option of the project's own


def test_device(request):
    assert request.config.getoption("--device") == "gpu"
"""


def test_an_unrelated_project_collects_and_runs_unchanged(pytester):
    """A project with its own cases/*.toml (not warpboard's) and its own --device option."""
    (pytester.path / "cases").mkdir()
    (pytester.path / "cases" / "config.toml").write_text('title = "not a warpboard case"\n')
    pytester.makeconftest(UNRELATED_CONFTEST)
    pytester.makepyfile(test_unrelated="def test_one():\n    assert 1 + 1 == 2\n")
    result = pytester.runpytest("--device", "gpu", "conftest.py", "test_unrelated.py", "cases")
    result.assert_outcomes(passed=2)            # its own test_device saw its own --device
    assert result.ret == 0
    items, _ = pytester.inline_genitems("cases")
    assert items == []


def test_the_ini_key_turns_it_on_for_its_root_only(pytester, make_case):
    make_case.copy("truth/loop_ballot")
    (pytester.path / "other").mkdir()
    (pytester.path / "other" / "loop_ballot.toml").write_text((pytester.path / "cases" / "truth" /
                                                                "loop_ballot.toml").read_text())
    pytester.makeini("[pytest]\nwarpboard_cases = cases\n")
    items, _ = pytester.inline_genitems("cases", "other", "--wb-device", "none")
    assert [i.nodeid for i in items] == ["cases/truth/loop_ballot.toml::interp"]


def test_the_xdist_group_marker_is_registered(pytester):
    result = pytester.runpytest("--markers")
    result.stdout.fnmatch_lines(["@pytest.mark.xdist_group(name):*"])


def test_a_devices_items_stay_on_one_worker_under_xdist(pytester, make_case):
    """``-n 2 --dist loadgroup``: the items of a device are one group, so one worker runs them
    all (harness/xdist_groups.py; without it xdist hands them out to both workers)."""
    for k in range(8):
        make_case.copy("truth/loop_ballot", f"truth/copy{k}",
                       edit=lambda text, k=k: text.replace('name = "loop_ballot"', f'name = "copy{k}"'))
    result = pytester.runpytest_subprocess("cases", "--wb-cases", "cases", "--wb-device", "none", "-n", "2",
                                           "--dist", "loadgroup", "-v", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=8)
    ran = {item: worker for worker, item in re.findall(r"\[(gw\d+)\].*PASSED (\S+)", result.stdout.str())}
    assert len(ran) == 8, ran
    assert len(set(ran.values())) == 1, ran

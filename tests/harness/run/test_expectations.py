"""Expected-failure lists: parsing, matching, and the one function that applies them."""
import pytest
from warpboard.harness.run.expectations import driver_version, parse_expectations
from warpboard.harness.run.results import Status, apply_expectation

TEXT = """
# comment
lavapipe-* vote/* FAIL   # subgroup too narrow (example)
*          spin/never_ends LIVELOCK
interp     basic/x
"""


def test_rules_match_by_pattern_and_name_the_status():
    ex = parse_expectations(TEXT)
    assert ex.expected("vote/a", "lavapipe-w4") is Status.FAIL
    assert ex.expected("vote/a", "nvidia-h200") is None
    assert ex.expected("spin/never_ends", "nvidia-h200") is Status.LIVELOCK
    assert ex.expected("basic/x", "interp") is Status.FAIL
    assert ("basic/x", "interp") in ex and ("basic/y", "interp") not in ex


@pytest.mark.parametrize("status, expected, result", [
    (Status.LIVELOCK, Status.LIVELOCK, Status.XFAIL),
    (Status.PASS, Status.LIVELOCK, Status.XPASS),
    (Status.FAIL, Status.LIVELOCK, Status.FAIL),
    (Status.FAIL, Status.FAIL, Status.XFAIL),
    (Status.FAIL, None, Status.FAIL),
    (Status.PASS, None, Status.PASS),
])
def test_apply_expectation(status, expected, result):
    assert apply_expectation(status, expected) is result


def test_errors_name_the_line():
    with pytest.raises(ValueError, match=r"^ex.txt:2: unknown status 'STUCK'$"):
        parse_expectations("* a\n* b STUCK\n", "ex.txt")
    with pytest.raises(ValueError, match=r"^ex.txt:1: expected 'DEVICE-PATTERN CASE-PATTERN \[STATUS\] \[KEY=PATTERN...\]'"):
        parse_expectations("onlyone\n", "ex.txt")


def test_a_rule_can_name_a_translator_a_driver_and_its_version():
    rules = parse_expectations("lavapipe-* vote/* translator=subgroup-native version=22.3.*  # old Mesa\n"
                               "* spin/* LIVELOCK driver=llvmpipe\n", "ex.txt")
    assert rules.expected("vote/a", "lavapipe-w4", "subgroup-native", "llvmpipe", "22.3.6") is Status.FAIL
    assert rules.expected("vote/a", "lavapipe-w4", "turns", "llvmpipe", "22.3.6") is None
    assert rules.expected("vote/a", "lavapipe-w4", "subgroup-native", "llvmpipe", "25.0.7") is None
    assert rules.expected("spin/x", "nvidia", "turns", "NVIDIA", "580.159.04") is None
    assert rules.expected("spin/x", "lavapipe-w8", "turns", "llvmpipe", "25.0.7") is Status.LIVELOCK
    assert rules.rules[0].text == "lavapipe-* vote/* translator=subgroup-native version=22.3.*"
    with pytest.raises(ValueError, match=r"ex.txt:1: unknown key 'gpu'"):
        parse_expectations("* a gpu=h200\n", "ex.txt")
    assert driver_version("Mesa 25.0.7-2~bpo12+1 (LLVM 15.0.6)") == "25.0.7"

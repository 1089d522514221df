"""``--dist loadgroup`` keeps an ``xdist_group``'s items on one worker (harness/xdist_groups.py):
a run of two workers over items of two groups, in a pytest subprocess, and the worker each
item ran on. Without the group ids, xdist hands the items out one by one to both workers."""
from __future__ import annotations

import re
from collections import defaultdict

from warpboard.harness.xdist_groups import group_of

TESTS = """
import pytest

@pytest.mark.xdist_group("a")
@pytest.mark.parametrize("i", range(12))
def test_a(i):
    pass

@pytest.mark.xdist_group("b")
@pytest.mark.parametrize("i", range(12))
def test_b(i):
    pass
"""

CONFTEST = """
import pytest
from warpboard.harness.xdist_groups import keep_groups

@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    keep_groups(config, items)
"""


def _workers(result) -> dict[str, set[str]]:
    """{test function: the workers its items ran on}, from ``-v`` lines like
    ``[gw1] [ 50%] PASSED test_groups.py::test_a[3]@a``."""
    ran = defaultdict(set)
    for worker, name in re.findall(r"\[(gw\d+)\].*PASSED \S+::(test_\w+)\[", result.stdout.str()):
        ran[name].add(worker)
    return ran


def test_each_group_runs_on_one_worker(pytester):
    pytester.makepyfile(test_groups=TESTS)
    pytester.makeconftest(CONFTEST)
    result = pytester.runpytest_subprocess("-n", "2", "--dist", "loadgroup", "-v", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=24)
    ran = _workers(result)
    assert set(ran) == {"test_a", "test_b"}
    assert all(len(workers) == 1 for workers in ran.values()), dict(ran)
    result.stdout.fnmatch_lines(["*PASSED test_groups.py::test_a[[]0[]]@a*"])


def test_an_item_without_a_mark_has_no_group_and_marks_join_sorted(pytester):
    pytester.makepyfile(test_marks="""
import pytest

def test_plain():
    pass

@pytest.mark.xdist_group("z")
@pytest.mark.xdist_group(name="m")
def test_two():
    pass
""")
    items, _ = pytester.inline_genitems()
    assert [group_of(i) for i in items] == [None, "m_z"]

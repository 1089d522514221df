"""Loop counters (translator.ir.counters): the register a block steps by a constant, how its
branch back tests it, and the passes read back from the counter's change."""
from __future__ import annotations

import pytest
from warpboard.harness.run.dispatch import prepare
from warpboard.studies.bench import bench_cases
from warpboard.translator.ir.counters import Counter, CountedExit, counted_exit, stepped_counter
from warpboard.translator.ir.program import load_program

from support.listing_kit import listing

M32 = 0xFFFFFFFF


def _loop(*body: str, test="ISETP.NE.AND P0, PT, R2, R5, PT", branch="@P0 BRA `(.L_x_1)"):
    """The block of a one-block loop: ``body``, ``test``, then the branch back."""
    lines = ["S2R R0, SR_TID.X", ".L_x_1:", *body, *([test] if test else []), branch, "EXIT"]
    program = load_program("Function : k\n.text.k:\n" + listing(lines), block=(32, 1, 1))
    [block] = [b for pc, b in program.reachable.items() if pc in program.successors(b)]
    return block


def test_the_plain_loops_blocks_count_down_and_leave_at_a_constant():
    """nvcc's unrolled body steps R3 by -4 and leaves where it reaches -0x400; its tail steps
    R4 by -1 down to 0. Each test reads the counter after the step."""
    prep = prepare(next(c for c in bench_cases(1) if c.id == "bench/bench_plain_loop"))
    blocks = [b for pc, b in sorted(prep.program.reachable.items()) if pc in prep.program.successors(b)]
    found = [(stepped_counter(b), counted_exit(b, stepped_counter(b))) for b in blocks]
    assert found == [(Counter(3, -4 & M32), CountedExit(3, 3, -4 & M32)),
                     (Counter(4, M32), CountedExit(2, 3, M32))]


@pytest.mark.parametrize("body, counter", [
    (["IADD3 R2, R2, 0x10000000, RZ"], Counter(2, 0x10000000)),
    (["IMAD R2, R2, 0x1, -0x3"], Counter(2, -3 & M32)),
    (["IADD3 R7, R2, 0x5, RZ", "IADD3 R2, R7, 0x2, RZ"], Counter(2, 7)),     # through another register
    (["IADD3 R2, R2, 0x8, RZ", "IADD3 R3, R3, 0x1, RZ"], Counter(3, 1)),     # the longer period wins
])
def test_a_register_stepped_by_a_constant_is_the_counter(body, counter):
    assert stepped_counter(_loop(*body)) == counter


@pytest.mark.parametrize("body", [
    ["@P1 IADD3 R2, R2, 0x1, RZ"],                      # not on every pass
    ["IADD3 R2, R2, R5, RZ"],                           # by a register
    ["IMAD R2, R2, 0x2, 0x1"],                          # not an addition
    ["IADD3 R2, R2, 0x1, RZ", "IADD3 R2, R2, -0x1, RZ"],    # by nothing
    ["IADD3 R2, R2, 0x1, RZ", "LDG.E R2, [R6.64]"],     # from memory
])
def test_no_counter_where_the_step_is_not_a_constant_on_every_pass(body):
    assert stepped_counter(_loop(*body)) is None


def test_the_exit_test_reads_the_counter_before_or_after_its_step():
    after = _loop("IADD3 R2, R2, 0x1, RZ")
    before = _loop("ISETP.NE.AND P0, PT, R2, R5, PT", "IADD3 R2, R2, 0x1, RZ", test=None)
    assert counted_exit(after, stepped_counter(after)) == CountedExit(1, 3, 1)
    assert counted_exit(before, stepped_counter(before)) == CountedExit(0, 3, 0)
    swapped = _loop("IADD3 R2, R2, 0x1, RZ", test="ISETP.EQ.AND P0, PT, R5, R2, PT", branch="@!P0 BRA `(.L_x_1)")
    assert counted_exit(swapped, stepped_counter(swapped)) == CountedExit(1, 2, 1)


@pytest.mark.parametrize("body, test, branch", [
    (["IADD3 R2, R2, 0x1, RZ"], "ISETP.EQ.AND P0, PT, R2, R5, PT", "@P0 BRA `(.L_x_1)"),    # round while equal
    (["IADD3 R2, R2, 0x1, RZ"], "ISETP.GE.AND P0, PT, R2, R5, PT", "@!P0 BRA `(.L_x_1)"),   # an order
    (["IADD3 R2, R2, 0x1, RZ", "IADD3 R5, R5, 0x1, RZ"], "ISETP.NE.AND P0, PT, R2, R5, PT", "@P0 BRA `(.L_x_1)"),
    (["IADD3 R2, R2, 0x1, RZ"], "ISETP.NE.AND P0, PT, R2, R5, P1", "@P0 BRA `(.L_x_1)"),    # and another test
    (["IADD3 R2, R2, 0x1, RZ"], "ISETP.NE.AND P0, PT, -R2, R5, PT", "@P0 BRA `(.L_x_1)"),   # a decorated counter
    (["IADD3 R2, R2, 0x1, RZ", "ISETP.NE.AND P0, PT, R3, R5, PT"], "ISETP.NE.AND P0, PT, R2, R5, PT",
     "@P0 BRA `(.L_x_1)"),                              # its predicate written twice
    (["IADD3 R2, R2, 0x1, RZ"], "ISETP.NE.AND P0, PT, R2, R5, PT", "BRA `(.L_x_1)"),        # no test at all
])
def test_no_counted_exit_where_the_branch_back_is_not_a_plain_inequality(body, test, branch):
    block = _loop(*body, test=test, branch=branch)
    counter = stepped_counter(block)
    assert counter is not None and counted_exit(block, counter) is None


@pytest.mark.parametrize("step, passes", [(1, 7), (-4 & M32, 1000), (0x10000000, 15), (-3 & M32, 123456), (6, 99)])
def test_the_passes_come_back_from_the_counters_change(step, passes):
    counter = Counter(2, step)
    assert counter.passes(passes * step) == passes % counter.period
    assert counter.period == 1 << (32 - ((step & -step).bit_length() - 1))

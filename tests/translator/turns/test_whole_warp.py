"""Whole-warp copies (translator/emit/turns/whole.py): which blocks get one, within what budget,
and only on the shaders GPUs get (tight loops). That they run as the turn loop would, turn for
turn, is checked on lavapipe-w16 (test_warp_subgroups: the bench loops and the library)."""
import pytest

from warpboard.translator.emit.emitter import translate
from warpboard.translator.emit.turns import whole
from warpboard.translator.ir.program import load_program
from warpboard.translator import Target

from support.paths import ROOT

LISTING = (ROOT / "bench" / "divergent_loops.sm_86.sass").read_text()


def _whole_cases(monkeypatch, kernel, tight_loops, floor=whole.WHOLE_FLOOR):
    monkeypatch.setattr(whole, "WHOLE_FLOOR", floor)
    monkeypatch.setattr(whole, "WHOLE_SHARE", 0.0)
    cases = []
    real = whole.WholeWarp._whole_case

    def spy(self, block):
        cases.append(block)
        return real(self, block)
    monkeypatch.setattr(whole.WholeWarp, "_whole_case", spy)
    program = load_program(LISTING, kernel, "x")
    translate(program, (256, 1, 1), mode="turns", target=Target(warp_subgroups=True, tight_loops=tight_loops))
    return program, cases


def test_no_whole_warp_copy_without_tight_loops(monkeypatch):
    assert _whole_cases(monkeypatch, "bench_vote_loop", tight_loops=False)[1] == []


@pytest.mark.parametrize("kernel", ["bench_vote_loop", "bench_warp_trips"])
def test_the_loop_heads_get_whole_warp_copies_within_the_budget(monkeypatch, kernel):
    program, cases = _whole_cases(monkeypatch, kernel, tight_loops=True)
    pcs = {b.pc for b in cases}
    assert pcs and pcs <= program.cyclic
    assert sum(len(b.insts) for b in cases) <= whole.WHOLE_FLOOR
    vote = next(i.pc for i in program.insts if i.opcode.startswith("VOTE"))
    heads = {s for b in program.reachable.values() for s in program.successors(b) if s <= b.pc}
    assert max(h for h in heads if h <= vote) in pcs      # the loop around the first ballot


def test_a_smaller_budget_copies_fewer_blocks_innermost_loops_first(monkeypatch):
    _, full = _whole_cases(monkeypatch, "bench_vote_loop", tight_loops=True, floor=100_000)
    _, some = _whole_cases(monkeypatch, "bench_vote_loop", tight_loops=True, floor=12)
    assert 0 < sum(len(b.insts) for b in some) <= 12 < sum(len(b.insts) for b in full)
    assert {b.pc for b in some} < {b.pc for b in full}
